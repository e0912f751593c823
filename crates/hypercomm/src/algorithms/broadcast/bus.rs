//! Broadcast on the bus: one multicast (Saad & Schultz 1986, seed 004, §3.2 (A):
//! T_{2,B} = N/b_B + τ_B).
//!
//! The root sends its N = m elements once; every processor hears it. Exact: β + mτ
//! (0 for k = 1 or m = 0), under every port and duplex rule. The paper's form is exact.
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
    let Collective::Broadcast { root } = c else {
        return Err(plan::unfit("bus", "a broadcast"));
    };
    if m == 0 {
        return Ok(plan::boxed(plan::empty(k)));
    }
    let mut p = Plan::new(k);
    plan::own_copies(&mut p, c, k, m);
    p.send(0, root, (0..k).filter(|&r| r != root).collect(), vec![0]);
    Ok(plan::boxed(p.build(plan::packet_layout(root, None, m, 1))?))
}

/// β + mτ, exact.
pub fn formulas(problem: &Problem<'_>, params: &Params) -> Vec<Formula> {
    let k = problem.topology.nodes();
    let v = if k <= 1 || problem.len == 0 {
        0.0
    } else {
        plan::bt(&params.model, problem.len)
    };
    vec![Formula::exact(
        "β + mτ (one multicast on the bus)",
        "Saad & Schultz 1986 (seed 004), §3.2 (A)",
        v,
    )]
}
