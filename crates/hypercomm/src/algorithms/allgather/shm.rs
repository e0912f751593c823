//! All-to-all broadcast through the shared memory (Saad & Schultz 1986, seed 004,
//! §3.3 (B), eq. (3.27): T_{3,M} = max(1, k/k*)(N(k + 1)/(k b_M) + 2τ_M)).
//!
//! N = km. A message lives one step and a step serves at most S = k* reads, one per
//! processor: each processor j in turn writes its block in ⌈(k − 1)/S⌉ steps, S other
//! processors reading it in each. Exact: 2k⌈(k − 1)/S⌉(β + mτ) for k ≥ 2. The paper
//! has each processor read all N words in one access, which no schedule of separate
//! messages can do; its start-up term (and Table 1's 2τ_M/k*, which also drops the
//! factor k) is not an upper bound of any schedule here (docs/errata.md).
//!
//! Constraints: `shm:K,S`.

use crate::algorithms::plan::{self, Plan};
use crate::algorithms::{Formula, Params};
use crate::collective::Collective;
use crate::error::Error;
use crate::schedule::Schedule;
use crate::topology::Medium;
use crate::verify::Problem;

pub(crate) fn s_of(problem: &Problem<'_>) -> u32 {
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
    if m == 0 {
        return Ok(plan::boxed(plan::empty(k)));
    }
    let s = s as usize;
    let mut p = Plan::new(k);
    plan::own_copies(&mut p, c, k, m);
    let mut t = 0;
    for j in 0..k {
        let others: Vec<u32> = (0..k).filter(|&r| r != j).collect();
        for chunk in others.chunks(s) {
            p.send(t, j, chunk.to_vec(), vec![j as u64]);
            t += 1;
        }
    }
    Ok(plan::boxed(p.build(plan::block_layout(
        Collective::Allgather,
        k,
        m,
    ))?))
}

/// 2k⌈(k − 1)/S⌉(β + mτ), exact.
pub fn formulas(problem: &Problem<'_>, params: &Params) -> Vec<Formula> {
    let k = problem.topology.nodes() as u64;
    let s = s_of(problem) as u64;
    let v = if k <= 1 || problem.len == 0 {
        0.0
    } else {
        2.0 * (k * (k - 1).div_ceil(s)) as f64 * plan::bt(&params.model, problem.len)
    };
    vec![Formula::exact(
        "2k⌈(k − 1)/S⌉(β + mτ)",
        "Saad & Schultz 1986 (seed 004), §3.3 (B), eq. (3.27), one write per step of readers",
        v,
    )]
}
