//! Broadcast through the shared memory (Saad & Schultz 1986, seed 004, §3.2 (B),
//! eq. (3.15): T_{2,M} = (N/b_S + τ_M)(1 + max(1, k/k*))).
//!
//! A message lives one step (a write phase, then a read phase), and at most S = k*
//! processors read in a step: in each of ⌈(k − 1)/S⌉ steps the root writes the
//! N = m elements and the next S processors read them. Exact:
//! 2⌈(k − 1)/S⌉(β + mτ), under every port and duplex rule. The paper writes once and
//! lets every reader read that copy later, (1 + ⌈(k − 1)/S⌉)(β + mτ); our schedules
//! cannot keep a message past its step, so each group of readers costs a write too.
//! (3.15) also writes b_S for b_M, and max(1, k/k*) is not an upper bound of the
//! ⌈(k − 1)/k*⌉ read rounds when k* does not divide k − 1 (docs/errata.md).
//!
//! Constraints: `shm:K,S`.

use crate::algorithms::plan::{self, Plan};
use crate::algorithms::{Formula, Params};
use crate::collective::Collective;
use crate::error::Error;
use crate::schedule::Schedule;
use crate::topology::Medium;
use crate::verify::Problem;

fn s_of(problem: &Problem<'_>) -> u32 {
    match problem.topology.medium_kind() {
        Some(Medium::Shm { accesses }) => accesses.max(1),
        _ => 1,
    }
}

/// Build the schedule.
pub fn build(
    problem: &Problem<'_>,
    _params: &Params,
    k: u32,
    s: u32,
) -> Result<Box<dyn Schedule>, Error> {
    let (m, c) = (problem.len, problem.collective);
    let Collective::Broadcast { root } = c else {
        return Err(plan::unfit("shm", "a broadcast"));
    };
    if m == 0 {
        return Ok(plan::boxed(plan::empty(k)));
    }
    let s = s as usize;
    let mut p = Plan::new(k);
    plan::own_copies(&mut p, c, k, m);
    let readers: Vec<u32> = (0..k).filter(|&r| r != root).collect();
    for (t, chunk) in readers.chunks(s).enumerate() {
        p.send(t, root, chunk.to_vec(), vec![0]);
    }
    Ok(plan::boxed(p.build(plan::packet_layout(root, None, m, 1))?))
}

/// 2⌈(k − 1)/S⌉(β + mτ), exact.
pub fn formulas(problem: &Problem<'_>, params: &Params) -> Vec<Formula> {
    let k = problem.topology.nodes() as u64;
    let s = s_of(problem) as u64;
    let v = if k <= 1 || problem.len == 0 {
        0.0
    } else {
        2.0 * (k - 1).div_ceil(s) as f64 * plan::bt(&params.model, problem.len)
    };
    vec![Formula::exact(
        "2⌈(k − 1)/S⌉(β + mτ) (a write and S reads per step)",
        "Saad & Schultz 1986 (seed 004), §3.2 (B), eq. (3.15), one write per step of readers",
        v,
    )]
}
