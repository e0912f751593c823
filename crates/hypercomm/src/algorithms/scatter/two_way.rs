//! Scatter on a ring, both ways, farthest first (Saad & Schultz 1986, seed 004,
//! §3.4 (C), eq. (3.38): T_{4,R} ≈ N/(2b_R) + ⌈k/2⌉τ_R).
//!
//! N = km. The root sends the blocks of the ⌊k/2⌋ clockwise nodes clockwise, the
//! farthest node's first, and those of the ⌊(k − 1)/2⌋ others counter-clockwise,
//! one a step each way; every block moves one hop a step, so all arrive in step
//! ⌊k/2⌋. Exact under seed 004's ring rule (`--ports 2,1`) or all ports, full or
//! half-link duplex: ⌊k/2⌋(β + mτ). (3.38) is an upper bound (⌊k/2⌋m ≤ N/2).
//!
//! Constraints: `ring:K`, any K ≥ 1 (odd rings too).

use crate::algorithms::plan::{self, Plan};
use crate::algorithms::scatter::bus;
use crate::algorithms::{Formula, Params};
use crate::error::Error;
use crate::schedule::{Rank, Schedule};
use crate::verify::Problem;

/// The moves of the two-way scatter from `root` on a ring of `k`.
pub(crate) fn moves(k: u32, root: Rank) -> Plan {
    let mut p = Plan::new(k);
    let ring: Vec<Rank> = (0..k).map(|i| (root + i) % k).collect();
    plan::ring_scatter(&mut p, 0, &ring, |pos| vec![ring[pos] as u64]);
    p
}

/// Build the schedule.
pub fn build(problem: &Problem<'_>, _params: &Params, _k: u32) -> Result<Box<dyn Schedule>, Error> {
    bus::finish(problem, moves)
}

/// ⌊k/2⌋(β + mτ), exact; N/(2b_R) + ⌈k/2⌉τ_R (3.38), an upper bound.
pub fn formulas(problem: &Problem<'_>, params: &Params) -> Vec<Formula> {
    let Some(k) = plan::ring_len(problem.topology) else {
        return vec![];
    };
    let model = &params.model;
    if !(plan::two_sends(model) && plan::overlaps(model, true)) {
        return vec![];
    }
    let m = problem.len;
    if m == 0 {
        return vec![Formula::exact("0", "nothing to move", 0.0)];
    }
    vec![
        Formula::exact(
            "⌊k/2⌋(β + mτ)",
            "Saad & Schultz 1986 (seed 004), §3.4 (C), farthest first both ways",
            (k / 2) as f64 * plan::bt(model, m),
        ),
        Formula::upper_bound(
            "N/(2b_R) + ⌈k/2⌉τ_R",
            "Saad & Schultz 1986 (seed 004), §3.4 (C), eq. (3.38)",
            (k as u64 * m) as f64 / 2.0 * model.tau() + k.div_ceil(2) as f64 * model.beta(),
        ),
    ]
}
