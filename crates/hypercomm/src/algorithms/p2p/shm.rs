//! One-to-one through the shared memory: write, then read (Saad & Schultz 1986,
//! seed 004, §3.1 (B), eq. (3.2): T_{1,M} = 2(N/b_M + τ_M)).
//!
//! One step: the source writes the N = m elements (one access), the destination reads
//! them (one access). Exact: 2(β + mτ) (0 when src = dst or m = 0), under every port
//! and duplex rule; (3.2) is exact. Table 1 prints 2N/b_M + τ_M, one start-up short
//! (docs/errata.md).
//!
//! Constraints: `shm:K,S`, any S.

use crate::algorithms::plan;
use crate::algorithms::{Formula, Params};
use crate::collective::Collective;
use crate::error::Error;
use crate::schedule::Schedule;
use crate::verify::Problem;

/// Build the schedule.
pub fn build(
    problem: &Problem<'_>,
    params: &Params,
    _k: u32,
    _s: u32,
) -> Result<Box<dyn Schedule>, Error> {
    super::bus::build(problem, params, _k)
}

/// 2(β + mτ), exact; (3.2) is the same.
pub fn formulas(problem: &Problem<'_>, params: &Params) -> Vec<Formula> {
    let Collective::P2p { src, dst } = problem.collective else {
        return vec![];
    };
    let v = if src == dst || problem.len == 0 {
        0.0
    } else {
        2.0 * plan::bt(&params.model, problem.len)
    };
    vec![Formula::exact(
        "2(β + mτ) (a write, then a read)",
        "Saad & Schultz 1986 (seed 004), §3.1 (B), eq. (3.2)",
        v,
    )]
}
