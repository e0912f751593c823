//! All-to-all broadcast on the bus: each processor broadcasts its block in turn (Saad
//! & Schultz 1986, seed 004, §3.3 (A), eq. (3.26): T_{3,B} = k(N/(k b_B) + τ_B)).
//!
//! N = km (each processor holds N/k = m). Step j: processor j multicasts its block.
//! Exact: k(β + mτ) for k ≥ 2, under every port and duplex rule; (3.26) is exact.
//!
//! Constraints: `bus:K`.

use crate::algorithms::plan::{self, Plan};
use crate::algorithms::{Formula, Params};
use crate::collective::Collective;
use crate::error::Error;
use crate::schedule::Schedule;
use crate::verify::Problem;

/// Build the schedule.
pub fn build(problem: &Problem<'_>, _params: &Params, k: u32) -> Result<Box<dyn Schedule>, Error> {
    let (m, c) = (problem.len, problem.collective);
    if m == 0 {
        return Ok(plan::boxed(plan::empty(k)));
    }
    let mut p = Plan::new(k);
    plan::own_copies(&mut p, c, k, m);
    if k > 1 {
        for j in 0..k {
            p.send(
                j as usize,
                j,
                (0..k).filter(|&r| r != j).collect(),
                vec![j as u64],
            );
        }
    }
    Ok(plan::boxed(p.build(plan::block_layout(
        Collective::Allgather,
        k,
        m,
    ))?))
}

/// k(β + mτ), exact.
pub fn formulas(problem: &Problem<'_>, params: &Params) -> Vec<Formula> {
    let k = problem.topology.nodes();
    let v = if k <= 1 || problem.len == 0 {
        0.0
    } else {
        k as f64 * plan::bt(&params.model, problem.len)
    };
    vec![Formula::exact(
        "k(β + mτ) = kτ_B + N/b_B",
        "Saad & Schultz 1986 (seed 004), §3.3 (A), eq. (3.26)",
        v,
    )]
}
