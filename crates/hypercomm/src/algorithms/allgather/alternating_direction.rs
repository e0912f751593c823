//! All-to-all broadcast on a torus by daisy chains in one direction, then the other
//! (Saad & Schultz 1986, seed 004, §3.3 (D), eq. (3.31):
//! T^{AD}_{3,G} = (√k − 1)(N/(√k b_G)(1 + 1/√k) + 2τ_G)).
//!
//! N = km. On `torus:AxB` (rank r·B + c): first a daisy chain round every column
//! (A − 1 steps of m), then round every row, each node passing the A blocks of one
//! column (B − 1 steps of Am). Exact under full duplex (half-link when A, B ≥ 3), any
//! port rule: (A − 1)(β + mτ) + (B − 1)(β + Amτ); on √k × √k, (3.31) exactly.
//!
//! Constraints: `torus:AxB`.

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
    a: u32,
    b: u32,
) -> Result<Box<dyn Schedule>, Error> {
    let k = a * b;
    let (m, c) = (problem.len, problem.collective);
    if m == 0 {
        return Ok(plan::boxed(plan::empty(k)));
    }
    let mut p = Plan::new(k);
    plan::own_copies(&mut p, c, k, m);
    let mut t = 0;
    for col in 0..b {
        let ring: Vec<u32> = (0..a).map(|r| r * b + col).collect();
        t = plan::ring_daisy(&mut p, 0, &ring, |o| vec![(o as u32 * b + col) as u64]);
    }
    for row in 0..a {
        let ring: Vec<u32> = (0..b).map(|cc| row * b + cc).collect();
        plan::ring_daisy(&mut p, t, &ring, |o| {
            (0..a).map(|r| (r * b + o as u32) as u64).collect()
        });
    }
    Ok(plan::boxed(p.build(plan::block_layout(
        Collective::Allgather,
        k,
        m,
    ))?))
}

/// (A − 1)(β + mτ) + (B − 1)(β + Amτ), exact.
pub fn formulas(problem: &Problem<'_>, params: &Params) -> Vec<Formula> {
    let Some((a, b)) = plan::torus_dims(problem.topology) else {
        return vec![];
    };
    if !plan::overlaps(&params.model, a >= 3 && b >= 3) {
        return vec![];
    }
    let m = problem.len;
    let v = if m == 0 {
        0.0
    } else {
        (a - 1) as f64 * plan::bt(&params.model, m)
            + (b - 1) as f64 * plan::bt(&params.model, a as u64 * m)
    };
    vec![Formula::exact(
        "(A − 1)(β + mτ) + (B − 1)(β + Amτ)",
        "Saad & Schultz 1986 (seed 004), §3.3 (D), eq. (3.31)",
        v,
    )]
}
