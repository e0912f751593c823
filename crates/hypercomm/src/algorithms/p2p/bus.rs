//! One-to-one on the broadcast bus: one transfer (Saad & Schultz 1986, seed 004,
//! §3.1 (A), eq. (3.1): T_{1,B} = N/b_B + τ_B).
//!
//! The source sends its N = m elements over the bus to the destination in one step.
//! Exact: β + mτ (0 when src = dst or m = 0), under every port and duplex rule (the
//! bus prices the transfer). (3.1) is exact.
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
    let Collective::P2p { src, dst } = c else {
        return Err(plan::unfit("bus", "a point-to-point problem"));
    };
    if m == 0 {
        return Ok(plan::boxed(plan::empty(k)));
    }
    let mut p = Plan::new(k);
    plan::own_copies(&mut p, c, k, m);
    if src != dst {
        p.send(0, src, vec![dst], vec![0]);
    }
    Ok(plan::boxed(p.build(plan::packet_layout(
        src,
        Some(dst),
        m,
        1,
    ))?))
}

/// β + mτ, exact; (3.1) N/b_B + τ_B is the same.
pub fn formulas(problem: &Problem<'_>, params: &Params) -> Vec<Formula> {
    let Collective::P2p { src, dst } = problem.collective else {
        return vec![];
    };
    let v = if src == dst || problem.len == 0 {
        0.0
    } else {
        plan::bt(&params.model, problem.len)
    };
    vec![Formula::exact(
        "β + mτ (one bus transfer)",
        "Saad & Schultz 1986 (seed 004), §3.1 (A), eq. (3.1)",
        v,
    )]
}
