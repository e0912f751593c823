//! Point-to-point over the n node-disjoint paths, the message split evenly and each
//! share pipelined.
//!
//! Reference: Saad & Schultz 1985 (YALEU/DCS/RR-428), §3, Prop. 3.1 (H paths of length
//! H and n − H of length H + 2) and Prop. 3.2 (the time).
//!
//! Cost (rounds model, `--ports all`, full or half-link duplex, seed 004's model E: the
//! source drives n links at once, and the node-disjoint paths use each link one way):
//! ν + L − 1 steps of β + ⌈⌈m/n⌉/ν⌉τ, with L = H + 2 if H < n else L = n; volume
//! H·m + 2·(n − H)·m/n. Optimum (Prop. 3.2): (√((m/n)τ) + √((L − 1)β))², a lower
//! estimate; ⌊m/n⌋ replaces m/n when the long paths carry only ⌊m/n⌋ (docs/errata.md,
//! E6). Under `--ports one` the source's n sends serialise and the method loses its
//! point.
//!
//! Constraints: hypercube; ν packets per path, 1 ≤ ν ≤ max(⌈m/n⌉, 1) (each packet of
//! the largest share needs an element); with m < n some paths carry nothing.

use crate::algorithms::pipeline::{self, PathPipeline};
use crate::algorithms::{Formula, Packets, Params};
use crate::collective::Collective;
use crate::cost::model::{Duplex, Ports};
use crate::error::Error;
use crate::schedule::Schedule;
use crate::topology::Hypercube;
use crate::verify::Problem;

fn endpoints(problem: &Problem<'_>) -> Result<(Hypercube, u32, u32), Error> {
    let cube = problem
        .topology
        .cube()
        .ok_or_else(|| Error::InvalidParameter {
            what: "--topology",
            reason: "multipath needs a hypercube".into(),
        })?;
    match problem.collective {
        Collective::P2p { src, dst } => Ok((cube, src, dst)),
        other => Err(Error::InvalidParameter {
            what: "--op",
            reason: format!("multipath performs p2p, not {other}"),
        }),
    }
}

/// Longest path that carries data: L of Prop. 3.2 (H + 2 if H < n, else H), except
/// that with m ≤ H only the H short paths carry an element (0 when src = dst).
fn longest(cube: &Hypercube, src: u32, dst: u32, m: u64) -> u64 {
    let h = Hypercube::hamming(src, dst) as u64;
    if h == 0 {
        0
    } else if h < cube.dim() as u64 && m > h {
        h + 2
    } else {
        h
    }
}

/// The largest share of one path: ⌈m/n⌉.
fn share(cube: &Hypercube, m: u64) -> u64 {
    m.div_ceil(cube.dim().max(1) as u64)
}

/// Build the schedule.
pub fn build(problem: &Problem<'_>, params: &Params) -> Result<Box<dyn Schedule>, Error> {
    let (ref cube, src, dst) = endpoints(problem)?;
    let part = share(cube, problem.len);
    // ν counts the packets of each path, so its limit is the largest share, ⌈m/n⌉,
    // not m: say so rather than `resolve`'s "ν packets for ⌈m/n⌉ elements".
    let nu = match pipeline::resolve(params, part, longest(cube, src, dst, problem.len)) {
        Err(Error::InvalidParameter { what, .. }) => {
            let nu = match params.packets {
                Packets::Count(nu) => nu.to_string(),
                Packets::Opt => "opt".into(),
            };
            return Err(Error::InvalidParameter {
                what,
                reason: format!(
                    "{nu} packets per path, but the largest of the {} paths' shares is \
                     ⌈m/n⌉ = {part} of m = {} elements; valid: 1..={} (each packet needs \
                     an element) or `opt`",
                    cube.dim(),
                    problem.len,
                    part.max(1)
                ),
            });
        }
        other => other?,
    };
    Ok(Box::new(PathPipeline::new(
        cube.nodes(),
        src,
        dst,
        problem.len,
        nu,
        cube.disjoint_paths(src, dst),
    )))
}

/// (ν + L − 1)(β + ⌈⌈m/n⌉/ν⌉τ) exact under all ports, full or half-link duplex;
/// Prop. 3.2 with
/// `--packets opt`.
pub fn formulas(problem: &Problem<'_>, params: &Params) -> Vec<Formula> {
    let Ok((ref cube, src, dst)) = endpoints(problem) else {
        return vec![];
    };
    // Node-disjoint paths, each link one way: half-link duplex as full.
    if params.model.ports != Ports::All || params.model.duplex == Duplex::Half {
        return vec![];
    }
    let (l, part) = (
        longest(cube, src, dst, problem.len),
        share(cube, problem.len),
    );
    let (beta, tau) = (params.model.beta(), params.model.tau());
    let Ok(nu) = pipeline::resolve(params, part, l) else {
        return vec![];
    };
    // Exact when every packet of every path has the same size; otherwise the paths'
    // shares and packets differ by one element and ⌈·⌉ makes it an upper bound.
    let n = cube.dim().max(1) as u64;
    let even = problem.len % n == 0 && part % nu == 0;
    let expr = format!("(ν + L − 1)(β + ⌈⌈m/n⌉/ν⌉τ), L = {l}, ν = {nu}");
    let reference = "Saad & Schultz 1985, §3, Prop. 3.2 (discrete form)";
    let value = if l == 0 || part == 0 {
        0.0
    } else {
        (nu + l - 1) as f64 * (beta + part.div_ceil(nu) as f64 * tau)
    };
    let mut v = vec![if even {
        Formula::exact(expr, reference, value)
    } else {
        Formula::upper_bound(expr, reference, value)
    }];
    if params.packets == Packets::Opt {
        // Prop. 3.2 takes the per-path share as the real m/n. The longest path's own
        // pipeline bounds the time from below, so m/n is a lower estimate whenever
        // some path of length L carries at least m/n elements; when the long paths
        // carry only ⌊m/n⌋ (the m mod n extra elements all went to the H short
        // paths), the estimate takes ⌊m/n⌋ instead (docs/errata.md, E6).
        let h = Hypercube::hamming(src, dst) as u64;
        let floor_only = l == h + 2 && problem.len % n <= h;
        let (expr, s) = if floor_only {
            ("(√(⌊m/n⌋τ) + √((L − 1)β))²", (problem.len / n) as f64)
        } else {
            ("(√((m/n)τ) + √((L − 1)β))²", problem.len as f64 / n as f64)
        };
        let value = if l == 0 || problem.len == 0 {
            0.0
        } else {
            ((s * tau).sqrt() + ((l - 1) as f64 * beta).sqrt()).powi(2)
        };
        v.push(Formula::estimate(
            expr,
            "Saad & Schultz 1985, §3, Prop. 3.2",
            value,
        ));
    }
    v
}
