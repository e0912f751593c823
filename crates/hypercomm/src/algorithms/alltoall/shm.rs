//! Multiscatter (all-to-all) through the shared memory (Saad & Schultz 1986, seed 004,
//! §3.5 (B), eq. (3.42): T_{5,M} = 2(N/(b_M k) + τ_M)max(1, k/k*)).
//!
//! N = k²m. Every block is a write and a read; a step holds at most S = k* of each and
//! one of each per processor: for each shift s = 1..k − 1, processor r sends its block
//! for r + s, the k transfers of the shift in ⌈k/S⌉ steps of S. Exact:
//! 2(k − 1)⌈k/S⌉(β + mτ), under every port and duplex rule. The paper lets each
//! processor write (and read) its N/k words in one access; with one access per block
//! the start-up term is (k − 1)⌈k/S⌉, not k/k* (docs/errata.md).
//!
//! Constraints: `shm:K,S`.

use crate::algorithms::allgather::shm::s_of;
use crate::algorithms::plan::{self, Plan};
use crate::algorithms::{Formula, Params};
use crate::collective::Collective;
use crate::error::Error;
use crate::schedule::Schedule;
use crate::verify::Problem;

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
    let ranks: Vec<u32> = (0..k).collect();
    for shift in 1..k {
        for chunk in ranks.chunks(s) {
            for &r in chunk {
                let d = (r + shift) % k;
                p.send(t, r, vec![d], vec![(r * k + d) as u64]);
            }
            t += 1;
        }
    }
    Ok(plan::boxed(p.build(plan::block_layout(
        Collective::Alltoall,
        k,
        m,
    ))?))
}

/// 2(k − 1)⌈k/S⌉(β + mτ), exact.
pub fn formulas(problem: &Problem<'_>, params: &Params) -> Vec<Formula> {
    let k = problem.topology.nodes() as u64;
    let s = s_of(problem) as u64;
    let v = if k <= 1 || problem.len == 0 {
        0.0
    } else {
        2.0 * ((k - 1) * k.div_ceil(s)) as f64 * plan::bt(&params.model, problem.len)
    };
    vec![Formula::exact(
        "2(k − 1)⌈k/S⌉(β + mτ)",
        "Saad & Schultz 1986 (seed 004), §3.5 (B), one access per block",
        v,
    )]
}
