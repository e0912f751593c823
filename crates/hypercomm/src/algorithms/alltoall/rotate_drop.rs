//! Multiscatter (all-to-all) on a ring by rotating the data and dropping a piece at
//! each step (Saad & Schultz 1986, seed 004, §3.5 (C), eq. (3.43):
//! T_{5,R} = Σ_{i=1}^{k} (τ_R + (k − i + 1)N/(b_R k²)) = N/(2b_R) + kτ_R).
//!
//! N = k²m. In step s = 1..k − 1 every node passes clockwise the blocks of the node
//! s − 1 behind it that are bound farther than s − 1 hops: k − s blocks. Exact under
//! full duplex (half-link when k ≥ 3), any port rule:
//! Σ_{s=1}^{k−1}(β + (k − s)mτ) = (k − 1)β + k(k − 1)mτ/2. The paper's sum has k
//! terms and equals kτ_R + (k + 1)N/(2k b_R), not N/(2b_R) + kτ_R; both are upper
//! bounds here (docs/errata.md).
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
    plan::ring_rotate(&mut p, 0, &ring, |o, t| {
        vec![(o as u64) * k as u64 + t as u64]
    });
    Ok(plan::boxed(p.build(plan::block_layout(
        Collective::Alltoall,
        k,
        m,
    ))?))
}

/// (k − 1)β + k(k − 1)mτ/2, exact; N/(2b_R) + kτ_R, an upper bound.
pub fn formulas(problem: &Problem<'_>, params: &Params) -> Vec<Formula> {
    let Some(k) = plan::ring_len(problem.topology) else {
        return vec![];
    };
    let model = &params.model;
    if !plan::overlaps(model, k >= 3) {
        return vec![];
    }
    let (k, m) = (k as u64, problem.len);
    if k <= 1 || m == 0 {
        return vec![Formula::exact("0", "nothing to move", 0.0)];
    }
    vec![
        Formula::exact(
            "(k − 1)β + k(k − 1)mτ/2",
            "Saad & Schultz 1986 (seed 004), §3.5 (C), eq. (3.43) summed over the k − 1 steps",
            (k - 1) as f64 * model.beta() + (k * (k - 1) / 2 * m) as f64 * model.tau(),
        ),
        Formula::upper_bound(
            "N/(2b_R) + kτ_R",
            "Saad & Schultz 1986 (seed 004), §3.5 (C), eq. (3.43), Table 1",
            (k * k * m) as f64 / 2.0 * model.tau() + k as f64 * model.beta(),
        ),
    ]
}
