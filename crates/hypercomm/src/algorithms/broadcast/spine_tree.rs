//! Pipelined broadcast on a torus grid along a spanning tree (Saad & Schultz 1986,
//! seed 004, §3.2 (D), eq. (3.18): T_{2,G} = (√(N/b_G) + √((i − 1)τ_G))²,
//! i = 2⌊√k/2⌋).
//!
//! The tree: the root's column (two ways round it) is the spine, and every node of the
//! spine feeds its row two ways. Packets (ν of them) are pipelined down the tree, each
//! node multicasting a packet to its children (up to three) the step after it arrives.
//! Depth D = ⌊A/2⌋ + ⌊B/2⌋ on `torus:AxB` (2⌊√k/2⌋ on the paper's √k × √k grid).
//! This is the paper's "second method of the ring" on the grid: its pipelined time
//! equals (3.18), not the two sequential pipelines of (3.20) the paper derives for it.
//! Exact under all ports (the grid model, §2 (D)), full or half-link duplex:
//! (ν + D − 1)(β + qτ) + \[r > 0\](r + D − 1)τ, q = ⌊m/ν⌋, r = m mod ν; (3.18) is
//! its continuous optimum, a lower estimate with `--packets opt`.
//!
//! Constraints: `torus:AxB`.

use crate::algorithms::plan::{self, Plan};
use crate::algorithms::{pipeline, Formula, Packets, Params};
use crate::collective::Collective;
use crate::cost::model::Ports;
use crate::error::Error;
use crate::schedule::{Rank, Schedule};
use crate::verify::Problem;

/// The spine tree on `torus:AxB` rooted at `root`: each node's parent (the root's
/// column is the spine, every row is fed two ways from it).
pub(crate) fn parents(a: u32, b: u32, root: Rank) -> Vec<Option<Rank>> {
    use plan::toward;
    let (r0, c0) = (root / b, root % b);
    (0..a * b)
        .map(|x| {
            let (r, col) = (x / b, x % b);
            match toward(col, c0, b) {
                Some(pc) => Some(r * b + pc),
                None => toward(r, r0, a).map(|pr| pr * b + col),
            }
        })
        .collect()
}

/// Build the schedule.
pub fn build(
    problem: &Problem<'_>,
    params: &Params,
    a: u32,
    b: u32,
) -> Result<Box<dyn Schedule>, Error> {
    let k = a * b;
    let (m, c) = (problem.len, problem.collective);
    let Collective::Broadcast { root } = c else {
        return Err(plan::unfit("spine-tree", "a broadcast"));
    };
    let nu = pipeline::resolve(params, m, (a / 2 + b / 2) as u64)?;
    if m == 0 {
        return Ok(plan::boxed(plan::empty(k)));
    }
    let parent = parents(a, b, root);
    let mut p = Plan::new(k);
    plan::own_copies(&mut p, c, k, m);
    plan::tree_pipeline(&mut p, &parent, nu);
    Ok(plan::boxed(
        p.build(plan::packet_layout(root, None, m, nu))?,
    ))
}

/// The exact pipeline time, and (3.18) as a lower estimate.
pub fn formulas(problem: &Problem<'_>, params: &Params) -> Vec<Formula> {
    let Some((a, b)) = plan::torus_dims(problem.topology) else {
        return vec![];
    };
    let model = &params.model;
    let (m, d) = (problem.len, (a / 2 + b / 2) as u64);
    let Ok(nu) = pipeline::resolve(params, m, d) else {
        return vec![];
    };
    if model.ports != Ports::All || !plan::overlaps(model, true) {
        return vec![];
    }
    let eq = "Saad & Schultz 1986 (seed 004), §3.2 (D), eq. (3.18)";
    let mut v = vec![Formula::exact(
        format!("(ν + D − 1)(β + qτ) + [r > 0](r + D − 1)τ, D = ⌊A/2⌋ + ⌊B/2⌋ = {d}, ν = {nu}"),
        eq,
        pipeline::time(m, d, nu, model.beta(), model.tau()),
    )];
    if params.packets == Packets::Opt {
        v.push(Formula::estimate(
            "(√(mτ) + √((D − 1)β))²",
            eq,
            pipeline::continuous_optimum(m, d, model.beta(), model.tau()),
        ));
    }
    v
}
