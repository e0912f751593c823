//! Where each node of a machine sits in a picture, and which links are drawn.
//!
//! - A product network (hypercubes, tori, meshes, generalized hypercubes, any
//!   product): each factor is one axis or more (a cube factor one axis per dimension),
//!   the fastest first; axes alternate between x and y, and an axis that is not the
//!   first in its direction places copies of the block inside it side by side with a
//!   gap, so `hypercube:4` is a square of squares and `torus:4x4x2` two 4 × 4 grids.
//!   A product of one cycle or one complete graph is a circle.
//! - A bus or a shared memory: the processors in a row above the medium, one tap each;
//!   a switch: the processors above a crossbar.
//! - A host: above the machine, linked to its processing elements.
//!
//! Links come from the topology (`neighbors`); a link whose straight line would pass
//! through another node (a ring's wrap link, a complete graph's chords along a row) is
//! drawn as a curve.

use hypercomm::schedule::Rank;
use hypercomm::topology::{Factor, Medium, Topology};

/// Most nodes drawn as a machine; larger ones get the timeline and a summary.
pub const MAX_DRAWN: u32 = 64;

/// Distance between neighbouring nodes.
pub const UNIT: f64 = 44.0;
/// Radius of a node.
pub const RADIUS: f64 = 10.0;

/// A shared medium under the processors.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MediumShape {
    /// Which medium.
    pub kind: Medium,
    /// Its top edge (y).
    pub y: f64,
    /// Its left and right ends (x).
    pub x: (f64, f64),
}

/// A machine laid out.
#[derive(Clone, Debug, PartialEq)]
pub struct Layout {
    /// Every node's centre, by rank (the host last).
    pub pos: Vec<(f64, f64)>,
    /// The links drawn, each once (a < b); none for a medium.
    pub links: Vec<(Rank, Rank)>,
    /// The medium, if any.
    pub medium: Option<MediumShape>,
    /// The host's rank, if any.
    pub host: Option<Rank>,
    /// The extent across: every node lies within 0..width (margins included).
    pub width: f64,
    /// The extent down, likewise.
    pub height: f64,
}

/// The layout of `topo`, or `None` when it has more than [`MAX_DRAWN`] nodes.
pub fn layout(topo: &Topology) -> Option<Layout> {
    if topo.nodes() > MAX_DRAWN {
        return None;
    }
    let pes = topo.pes();
    let (mut pos, medium) = match (topo.medium_kind(), topo.factors()) {
        (Some(kind), _) => medium_row(kind, pes),
        (None, Some(factors)) => (product(topo, factors), None),
        (None, None) => return None,
    };
    let host = topo.host();
    // Shift everything into the margin (and below the host).
    let top = if host.is_some() { 2.0 * UNIT } else { UNIT };
    for p in &mut pos {
        p.0 += UNIT;
        p.1 += top;
    }
    let medium = medium.map(|m| MediumShape {
        y: m.y + top,
        x: (m.x.0 + UNIT, m.x.1 + UNIT),
        ..m
    });
    let right = pos.iter().map(|p| p.0).fold(0.0, f64::max) + UNIT;
    let mut bottom = pos.iter().map(|p| p.1).fold(0.0, f64::max) + UNIT;
    if let Some(m) = &medium {
        bottom = bottom.max(m.y + UNIT);
    }
    if host.is_some() {
        pos.push((right / 2.0, UNIT * 0.75));
    }
    let links = if medium.is_some() {
        // The medium is the link between processors; only the host's are drawn.
        host.map_or_else(Vec::new, |h| {
            topo.neighbors(h).into_iter().map(|p| (p, h)).collect()
        })
    } else {
        (0..topo.nodes())
            .flat_map(|a| {
                topo.neighbors(a)
                    .into_iter()
                    .filter(move |&b| b > a)
                    .map(move |b| (a, b))
            })
            .collect()
    };
    Some(Layout {
        pos,
        links,
        medium,
        host,
        width: right,
        height: bottom,
    })
}

/// A medium's processors in a row, the medium under them.
fn medium_row(kind: Medium, pes: u32) -> (Vec<(f64, f64)>, Option<MediumShape>) {
    let pos = (0..pes).map(|i| (i as f64 * UNIT, 0.0)).collect();
    let depth = match kind {
        Medium::Switch => 1.0,
        _ => 1.4,
    };
    let shape = MediumShape {
        kind,
        y: depth * UNIT,
        x: (-UNIT * 0.4, (pes.max(1) - 1) as f64 * UNIT + UNIT * 0.4),
    };
    (pos, Some(shape))
}

/// One axis of a product: its size and whether it is a cycle or a complete graph (a
/// circle when it is the only axis).
#[derive(Clone, Copy, Debug)]
struct Axis {
    size: u32,
    round: bool,
}

/// The positions of a product's processing elements.
fn product(topo: &Topology, factors: &[Factor]) -> Vec<(f64, f64)> {
    // Axes per factor, in factor order; within a cube the lowest bit last (fastest).
    let per_factor: Vec<Vec<Axis>> = factors
        .iter()
        .map(|f| match f {
            Factor::Cube(h) => (0..h.dim())
                .map(|_| Axis {
                    size: 2,
                    round: false,
                })
                .collect(),
            Factor::Cycle(k) | Factor::Complete(k) => vec![Axis {
                size: *k,
                round: *k >= 3,
            }],
            Factor::Path(k) => vec![Axis {
                size: *k,
                round: false,
            }],
        })
        .collect();
    let axes: Vec<Axis> = per_factor.iter().flatten().copied().collect();
    let drawn: Vec<&Axis> = axes.iter().filter(|a| a.size > 1).collect();
    let pes = topo.pes();
    if drawn.len() == 1 && drawn[0].round {
        let k = pes as f64;
        let r = (UNIT * k / std::f64::consts::TAU).max(UNIT);
        return (0..pes)
            .map(|i| {
                let a = std::f64::consts::TAU * i as f64 / k - std::f64::consts::FRAC_PI_2;
                (r + r * a.cos(), r + r * a.sin())
            })
            .collect();
    }
    // Pitches: the fastest axis (the last) first, alternating x and y.
    let n = axes.len();
    let mut pitch = vec![(0.0, 0.0); n];
    let mut extent = [0.0f64; 2];
    let mut dir = 0;
    for j in (0..n).rev() {
        if axes[j].size <= 1 {
            continue;
        }
        let step = if extent[dir] == 0.0 {
            UNIT
        } else {
            extent[dir] + 1.5 * UNIT
        };
        pitch[j] = if dir == 0 { (step, 0.0) } else { (0.0, step) };
        extent[dir] += step * (axes[j].size - 1) as f64;
        dir = 1 - dir;
    }
    (0..pes)
        .map(|r| {
            let coords = topo.coords(r);
            let mut digits = Vec::with_capacity(n);
            for (f, c) in factors.iter().zip(&coords) {
                match f {
                    Factor::Cube(h) => digits.extend((0..h.dim()).rev().map(|b| (c >> b) & 1)),
                    _ => digits.push(*c),
                }
            }
            digits.iter().zip(&pitch).fold((0.0, 0.0), |p, (&d, q)| {
                (p.0 + d as f64 * q.0, p.1 + d as f64 * q.1)
            })
        })
        .collect()
}

/// The control point of a quadratic curve from `a` to `b` bulging to the left of the
/// direction of travel by `bend` times its length, more when the straight line would
/// pass through a node of `others`.
pub fn control(a: (f64, f64), b: (f64, f64), bend: f64, others: &[(f64, f64)]) -> (f64, f64) {
    let (dx, dy) = (b.0 - a.0, b.1 - a.1);
    let len = (dx * dx + dy * dy).sqrt().max(1e-9);
    let blocked = others.iter().any(|&p| {
        if p == a || p == b {
            return false;
        }
        let t = ((p.0 - a.0) * dx + (p.1 - a.1) * dy) / (len * len);
        if t <= 0.0 || t >= 1.0 {
            return false;
        }
        let (qx, qy) = (a.0 + t * dx - p.0, a.1 + t * dy - p.1);
        (qx * qx + qy * qy).sqrt() < RADIUS * 1.2
    });
    let k = if blocked { bend.max(0.0) + 0.25 } else { bend };
    // The left normal in screen coordinates (y down).
    let (nx, ny) = (dy / len, -dx / len);
    let off = (k * len).min(UNIT * 2.5);
    ((a.0 + b.0) / 2.0 + nx * off, (a.1 + b.1) / 2.0 + ny * off)
}
