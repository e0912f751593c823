//! The daisy chain on a ring (Saad & Schultz 1986, seed 004, §3.3 (C), eq. (3.28):
//! T_{3,R} = (k − 1)(N/(k b_R) + τ_R)).
//!
//! N = km. In each of k − 1 steps every node passes clockwise the block it received
//! the step before (its own first). Exact: (k − 1)(β + mτ) under full duplex, or
//! half-link duplex when k ≥ 3 (a node sends to one neighbour and hears the other),
//! any port rule; (3.28) is exact.
//!
//! Constraints: `ring:K`, any K ≥ 1 (odd rings too).

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
    let ring: Vec<u32> = (0..k).collect();
    plan::ring_daisy(&mut p, 0, &ring, |o| vec![o as u64]);
    Ok(plan::boxed(p.build(plan::block_layout(
        Collective::Allgather,
        k,
        m,
    ))?))
}

/// (k − 1)(β + mτ), exact.
pub fn formulas(problem: &Problem<'_>, params: &Params) -> Vec<Formula> {
    let Some(k) = plan::ring_len(problem.topology) else {
        return vec![];
    };
    if !plan::overlaps(&params.model, k >= 3) {
        return vec![];
    }
    let v = if k <= 1 || problem.len == 0 {
        0.0
    } else {
        (k - 1) as f64 * plan::bt(&params.model, problem.len)
    };
    vec![Formula::exact(
        "(k − 1)(β + mτ)",
        "Saad & Schultz 1986 (seed 004), §3.3 (C), eq. (3.28)",
        v,
    )]
}
