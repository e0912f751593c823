//! Scatter through the shared memory (Saad & Schultz 1986, seed 004, §3.4 (B),
//! eq. (3.37): T_{4,M} = (N/b_M + kτ_M)(max(1, k/k*) + 1)).
//!
//! N = km. The root makes one access per round, so it writes one block a step and its
//! reader reads it the same step. Exact: 2(k − 1)(β + mτ), under every port and duplex
//! rule, whatever S. The paper's prose (write N, then every processor reads its N/k:
//! N/b_M + τ_M + (N/(k b_M) + τ_M)max(1, k/k*)), its equation (3.37) and Table 1's
//! entry ((N/b_M + τ_M)(k + 1)/k*) are three different forms; (3.37) is an upper
//! bound of this schedule, Table 1's is not for S > 2 (docs/errata.md).
//!
//! Constraints: `shm:K,S`.

use crate::algorithms::plan;
use crate::algorithms::scatter::bus;
use crate::algorithms::{Formula, Params};
use crate::error::Error;
use crate::schedule::Schedule;
use crate::verify::Problem;

/// Build the schedule.
pub fn build(
    problem: &Problem<'_>,
    _params: &Params,
    _k: u32,
    _s: u32,
) -> Result<Box<dyn Schedule>, Error> {
    bus::finish(problem, bus::moves)
}

/// 2(k − 1)(β + mτ), exact.
pub fn formulas(problem: &Problem<'_>, params: &Params) -> Vec<Formula> {
    let k = problem.topology.nodes() as f64;
    let m = problem.len;
    let v = if m == 0 {
        0.0
    } else {
        2.0 * (k - 1.0) * plan::bt(&params.model, m)
    };
    vec![Formula::exact(
        "2(k − 1)(β + mτ) (a write and a read per block)",
        "Saad & Schultz 1986 (seed 004), §3.4 (B), one access per processor per round",
        v,
    )]
}
