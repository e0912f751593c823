//! Multiscatter (all-to-all) on the bus: each processor broadcasts its data in turn
//! (Saad & Schultz 1986, seed 004, §3.5 (A): T_{5,B} = k(τ_B + N/(k b_B))).
//!
//! N = k²m (each processor holds N/k = km, m for each destination). Step j:
//! processor j multicasts its k − 1 blocks for the others in one transfer; each
//! keeps its own. Exact: k(β + (k − 1)mτ) for k ≥ 2, under every port and duplex
//! rule. The paper also sends each processor's block for itself; its
//! kτ_B + N/b_B is an upper bound.
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
            let others: Vec<u32> = (0..k).filter(|&r| r != j).collect();
            let items = others.iter().map(|&i| (j * k + i) as u64).collect();
            p.send(j as usize, j, others, items);
        }
    }
    Ok(plan::boxed(p.build(plan::block_layout(
        Collective::Alltoall,
        k,
        m,
    ))?))
}

/// k(β + (k − 1)mτ), exact; kτ_B + N/b_B, an upper bound.
pub fn formulas(problem: &Problem<'_>, params: &Params) -> Vec<Formula> {
    let k = problem.topology.nodes() as u64;
    let m = problem.len;
    if k <= 1 || m == 0 {
        return vec![Formula::exact("0", "nothing to move", 0.0)];
    }
    vec![
        Formula::exact(
            "k(β + (k − 1)mτ)",
            "Saad & Schultz 1986 (seed 004), §3.5 (A), the own block not sent",
            k as f64 * plan::bt(&params.model, (k - 1) * m),
        ),
        Formula::upper_bound(
            "kτ_B + N/b_B",
            "Saad & Schultz 1986 (seed 004), §3.5 (A)",
            k as f64 * plan::bt(&params.model, k * m),
        ),
    ]
}
