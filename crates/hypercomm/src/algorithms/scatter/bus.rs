//! Scatter on the bus: the root sends the blocks one after another (Saad & Schultz
//! 1986, seed 004, §3.4 (A), eq. (3.36): T_{4,B} = k(N/(k b_B) + τ_B)).
//!
//! N = km (k blocks of N/k = m). Step t sends one block; the root keeps its own.
//! Exact: (k − 1)(β + mτ), under every port and duplex rule; (3.36) counts the root's
//! own block too and is an upper bound, kτ_B + N/b_B.
//!
//! Constraints: `bus:K`.

use crate::algorithms::plan::{self, Plan};
use crate::algorithms::{Formula, Params};
use crate::collective::Collective;
use crate::error::Error;
use crate::schedule::{Rank, Schedule};
use crate::verify::Problem;

/// The moves: block v from the root to v, one a step, in rank order.
pub(crate) fn moves(k: u32, root: Rank) -> Plan {
    let mut p = Plan::new(k);
    for (t, v) in (0..k).filter(|&v| v != root).enumerate() {
        p.send(t, root, vec![v], vec![v as u64]);
    }
    p
}

/// The root of a scatter or gather.
pub(crate) fn root_of(c: Collective) -> Result<Rank, Error> {
    match c {
        Collective::Scatter { root } | Collective::Gather { root } => Ok(root),
        _ => Err(plan::unfit("this algorithm", "a scatter or a gather")),
    }
}

/// Finish a scatter (or, `reversed`, a gather) from its moves.
pub(crate) fn finish(
    problem: &Problem<'_>,
    moves: impl FnOnce(u32, Rank) -> Plan,
) -> Result<Box<dyn Schedule>, Error> {
    let k = problem.topology.nodes();
    let (m, c) = (problem.len, problem.collective);
    let root = root_of(c)?;
    if m == 0 {
        return Ok(plan::boxed(plan::empty(k)));
    }
    let mut p = moves(k, root);
    if matches!(c, Collective::Gather { .. }) {
        p = p.reversed();
    }
    plan::own_copies(&mut p, c, k, m);
    Ok(plan::boxed(p.build(plan::block_layout(c, k, m))?))
}

/// Build the schedule.
pub fn build(problem: &Problem<'_>, _params: &Params, _k: u32) -> Result<Box<dyn Schedule>, Error> {
    finish(problem, moves)
}

/// (k − 1)(β + mτ), exact; kτ_B + N/b_B (3.36), an upper bound.
pub fn formulas(problem: &Problem<'_>, params: &Params) -> Vec<Formula> {
    let k = problem.topology.nodes() as f64;
    let m = problem.len;
    if m == 0 {
        return vec![Formula::exact("0", "nothing to move", 0.0)];
    }
    vec![
        Formula::exact(
            "(k − 1)(β + mτ)",
            "Saad & Schultz 1986 (seed 004), §3.4 (A), the root's own block not sent",
            (k - 1.0) * plan::bt(&params.model, m),
        ),
        Formula::upper_bound(
            "kτ_B + N/b_B",
            "Saad & Schultz 1986 (seed 004), §3.4 (A), eq. (3.36)",
            k * plan::bt(&params.model, m),
        ),
    ]
}
