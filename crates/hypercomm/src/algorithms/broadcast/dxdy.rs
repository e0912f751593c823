//! The D_x/D_y broadcast on a torus grid (Saad & Schultz 1986, seed 004, §3.2 (D),
//! eq. (3.19): T²_{2,G} = (√(N/(2b_G)) + √((i − 1)τ_G))², i = 2⌊√k/2⌋), with each
//! of the paper's two remedies for the nodes the two halves miss.
//!
//! The N = m elements are split in D_x (⌈m/2⌉) and D_y (⌊m/2⌋), each pipelined in ν
//! packets down its own tree, the two trees sharing no directed link. On `torus:AxB`
//! (rank r·B + c), root (r0, c0): D_x goes down the root's column (two ways), then
//! along every row but the root's; D_y along the root's row, then down every column
//! but the root's. So the root's row never gets D_x and its column never gets D_y.
//! Depth D = ⌊A/2⌋ + ⌊B/2⌋ (2⌊√k/2⌋ on the paper's grid).
//!
//! - `dxdy-neighbours` (the paper's "easy remedy"): the neighbour (r0 + 1, c) passes
//!   each D_x packet on to (r0, c) as it forwards it, and (r, c0 + 1) each D_y packet
//!   to (r, c0): the trees reach depth max(D, 2 + ⌊B/2⌋) and max(D, 2 + ⌊A/2⌋). Those
//!   hops run against the other half's on the same links: exact under all ports and
//!   full duplex only.
//! - `dxdy-axes` (the paper's "more attractive solution"): once the root has sent its
//!   last D_y packet along its row (step ν_y), it sends the D_x packets along the row
//!   too, and likewise the D_y packets down its column after the D_x ones. The paper
//!   says these restricted broadcasts "end at the same time as the rest"; they end
//!   in step 2ν + ⌊B/2⌋ − 1 against ν + D − 1, later as soon as ν > ⌊A/2⌋, which
//!   the optimal ν is when N/b_G ≫ τ_G (docs/errata.md, E43). Every link carries one
//!   direction: exact under all ports, full or half-link duplex.
//!
//! Both: Σ_t (β + s_t τ), s_t the largest packet in flight in step t (the two halves'
//! pipelines side by side, [`pipeline::streams_time`]); with `--packets opt` ν
//! minimises it. (3.19) is the continuous optimum of half the data over depth D, a
//! lower estimate (the D_x tree alone takes at least that).
//!
//! Constraints: `torus:AxB`; ν ≤ ⌈m/2⌉.

use crate::algorithms::plan::{self, toward, Item, Plan};
use crate::algorithms::{pipeline, Formula, Packets, Params};
use crate::collective::Collective;
use crate::cost::model::{Duplex, Model, Ports};
use crate::error::Error;
use crate::schedule::{Buf, Rank, Region, Schedule};
use crate::verify::Problem;

/// Which remedy.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Remedy {
    Neighbours,
    Axes,
}

impl Remedy {
    fn name(self) -> &'static str {
        match self {
            Remedy::Neighbours => "dxdy-neighbours",
            Remedy::Axes => "dxdy-axes",
        }
    }
}

/// The shape of one run: sides, root, halves and packets.
#[derive(Clone, Copy)]
struct Shape {
    a: u32,
    b: u32,
    root: Rank,
    mx: u64,
    my: u64,
    nu: u64,
}

impl Shape {
    fn nux(&self) -> u64 {
        self.nu.min(self.mx)
    }
    fn nuy(&self) -> u64 {
        self.nu.min(self.my)
    }
    /// The D_x tree (x = true) or the D_y tree, with the neighbours' hops if asked.
    fn tree(&self, x: bool, remedy: Remedy) -> Vec<Option<Rank>> {
        let (a, b) = (self.a, self.b);
        let (r0, c0) = (self.root / b, self.root % b);
        (0..a * b)
            .map(|v| {
                let (r, c) = (v / b, v % b);
                // D_x: spine down the column, ribs along the rows; D_y the transpose.
                let (on_spine, on_other_axis) = if x {
                    (c == c0, r == r0)
                } else {
                    (r == r0, c == c0)
                };
                if on_spine {
                    if x {
                        toward(r, r0, a).map(|pr| pr * b + c)
                    } else {
                        toward(c, c0, b).map(|pc| r * b + pc)
                    }
                } else if on_other_axis {
                    match remedy {
                        Remedy::Neighbours if x => Some(((r0 + 1) % a) * b + c),
                        Remedy::Neighbours => Some(r * b + (c0 + 1) % b),
                        Remedy::Axes => None,
                    }
                } else if x {
                    toward(c, c0, b).map(|pc| r * b + pc)
                } else {
                    toward(r, r0, a).map(|pr| pr * b + c)
                }
            })
            .collect()
    }
    /// The restricted broadcast of remedy 2: the root's row (x = true, for D_x) or
    /// column.
    fn axis(&self, x: bool) -> Vec<Option<Rank>> {
        let (a, b) = (self.a, self.b);
        let (r0, c0) = (self.root / b, self.root % b);
        (0..a * b)
            .map(|v| {
                let (r, c) = (v / b, v % b);
                match (x, r == r0, c == c0) {
                    (true, true, _) => toward(c, c0, b).map(|pc| r * b + pc),
                    (false, _, true) => toward(r, r0, a).map(|pr| pr * b + c),
                    _ => None,
                }
            })
            .collect()
    }
    fn depth(parent: &[Option<Rank>]) -> u64 {
        plan::tree_depth(parent) as u64
    }
    /// The depths of the D_x and D_y trees and, with the axes' remedy, of the two
    /// restricted broadcasts: they do not depend on ν, so the search for ν walks the
    /// trees once (on torus:1024x1024 a walk per candidate took seconds).
    fn depths(&self, remedy: Remedy) -> Vec<u64> {
        let mut v = vec![
            Self::depth(&self.tree(true, remedy)),
            Self::depth(&self.tree(false, remedy)),
        ];
        if remedy == Remedy::Axes {
            v.push(Self::depth(&self.axis(true)));
            v.push(Self::depth(&self.axis(false)));
        }
        v
    }
    /// The pipelines, for the time, given the trees' `depths`.
    fn streams(&self, depths: &[u64]) -> Vec<pipeline::Stream> {
        let s = |t0, depth, len, nu| pipeline::Stream { t0, depth, len, nu };
        let mut v = vec![
            s(0, depths[0], self.mx, self.nux()),
            s(0, depths[1], self.my, self.nuy()),
        ];
        if let [_, _, ax, ay] = depths {
            v.push(s(self.nuy(), *ax, self.mx, self.nux()));
            v.push(s(self.nux(), *ay, self.my, self.nuy()));
        }
        v
    }
    fn time(&self, depths: &[u64], model: &Model) -> f64 {
        pipeline::streams_time(&self.streams(depths), model.beta(), model.tau())
    }
}

fn shape(
    problem: &Problem<'_>,
    params: &Params,
    remedy: Remedy,
    (a, b): (u32, u32),
) -> Result<Shape, Error> {
    let name = remedy.name();
    let Collective::Broadcast { root } = problem.collective else {
        return Err(plan::unfit(name, "a broadcast"));
    };
    let m = problem.len;
    let mut s = Shape {
        a,
        b,
        root,
        mx: m.div_ceil(2),
        my: m / 2,
        nu: 1,
    };
    s.nu = match params.packets {
        Packets::Count(_) => pipeline::resolve(params, s.mx, 1)?,
        Packets::Opt => {
            let depths = s.depths(remedy);
            let best = pipeline::best(
                s.mx,
                (a / 2 + b / 2) as u64,
                params.model.beta(),
                params.model.tau(),
            );
            let (lo, hi) = ((best / 2).max(1), (2 * best + 2).min(s.mx.max(1)));
            (lo..=hi.max(lo))
                .min_by(|&x, &y| {
                    let t = |nu| Shape { nu, ..s }.time(&depths, &params.model);
                    t(x).total_cmp(&t(y))
                })
                .unwrap_or(1)
        }
    };
    Ok(s)
}

fn make(
    problem: &Problem<'_>,
    params: &Params,
    remedy: Remedy,
    ab: (u32, u32),
) -> Result<Box<dyn Schedule>, Error> {
    let s = shape(problem, params, remedy, ab)?;
    let k = s.a * s.b;
    let (m, c) = (problem.len, problem.collective);
    if m == 0 {
        return Ok(plan::boxed(plan::empty(k)));
    }
    let (nux, nuy) = (s.nux(), s.nuy());
    let dx: Vec<Item> = (0..nux).collect();
    let dy: Vec<Item> = (nux..nux + nuy).collect();
    let mut p = Plan::new(k);
    plan::own_copies(&mut p, c, k, m);
    plan::tree_pipeline_at(&mut p, 0, &s.tree(true, remedy), &dx);
    plan::tree_pipeline_at(&mut p, 0, &s.tree(false, remedy), &dy);
    if remedy == Remedy::Axes {
        plan::tree_pipeline_at(&mut p, nuy as usize, &s.axis(true), &dx);
        plan::tree_pipeline_at(&mut p, nux as usize, &s.axis(false), &dy);
    }
    let (root, mx, my) = (s.root, s.mx, s.my);
    let layout = move |i: Item, r: Rank| {
        let (off, len) = if i < nux {
            pipeline::packet(mx, nux, i)
        } else {
            let (o, l) = pipeline::packet(my, nuy, i - nux);
            (mx + o, l)
        };
        Region::new(if r == root { Buf::In } else { Buf::Out }, off, len)
    };
    Ok(plan::boxed(p.build(layout)?))
}

/// Build the schedule with the neighbours' remedy.
pub fn build_neighbours(
    problem: &Problem<'_>,
    params: &Params,
    a: u32,
    b: u32,
) -> Result<Box<dyn Schedule>, Error> {
    make(problem, params, Remedy::Neighbours, (a, b))
}

/// Build the schedule with the axes' restricted broadcasts.
pub fn build_axes(
    problem: &Problem<'_>,
    params: &Params,
    a: u32,
    b: u32,
) -> Result<Box<dyn Schedule>, Error> {
    make(problem, params, Remedy::Axes, (a, b))
}

fn forms(problem: &Problem<'_>, params: &Params, remedy: Remedy) -> Vec<Formula> {
    let model = &params.model;
    let duplex_ok = match remedy {
        Remedy::Neighbours => model.duplex == Duplex::Full,
        Remedy::Axes => plan::overlaps(model, true),
    };
    if model.ports != Ports::All || !duplex_ok {
        return vec![];
    }
    let Ok(ab) = crate::algorithms::fit::torus(problem.topology) else {
        return vec![];
    };
    let Ok(s) = shape(problem, params, remedy, ab) else {
        return vec![];
    };
    let eq = "Saad & Schultz 1986 (seed 004), §3.2 (D), eq. (3.19)";
    let what = match remedy {
        Remedy::Neighbours => "the neighbours pass on the missing halves",
        Remedy::Axes => "then D_x along the root's row and D_y down its column",
    };
    let mut v = vec![Formula::exact(
        format!(
            "Σ_t (β + s_t τ), halves ⌈m/2⌉ and ⌊m/2⌋ in ν = {} packets, {what}",
            s.nu
        ),
        eq,
        s.time(&s.depths(remedy), model),
    )];
    if params.packets == Packets::Opt {
        let d = (s.a / 2 + s.b / 2) as u64;
        v.push(Formula::estimate(
            "(√(⌈m/2⌉τ) + √((D − 1)β))², D = ⌊A/2⌋ + ⌊B/2⌋",
            eq,
            pipeline::continuous_optimum(s.mx, d, model.beta(), model.tau()),
        ));
    }
    v
}

/// The exact time with the neighbours' remedy (all ports, full duplex).
pub fn formulas_neighbours(problem: &Problem<'_>, params: &Params) -> Vec<Formula> {
    forms(problem, params, Remedy::Neighbours)
}

/// The exact time with the axes' broadcasts (all ports, full or half-link duplex).
pub fn formulas_axes(problem: &Problem<'_>, params: &Params) -> Vec<Formula> {
    forms(problem, params, Remedy::Axes)
}
