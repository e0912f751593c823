//! Scatter on a torus, along the root's row, then down every column (Saad & Schultz
//! 1986, seed 004, §3.4 (D), eq. (3.39):
//! T_{4,G} ≈ N/(2b_G)(1 + k^{−1/2}) + 2√⌈k/2⌉τ_G).
//!
//! N = km. On `torus:AxB` (rank r·B + c), root (r0, c0): phase 1 scatters round the
//! root's row, two ways farthest first, to each (r0, c) the A blocks of column c
//! (⌊B/2⌋ steps of Am); phase 2 scatters round every column the same way (⌊A/2⌋ steps
//! of m). Exact under all ports (§2 (D)), full or half-link duplex:
//! ⌊B/2⌋(β + Amτ) + ⌊A/2⌋(β + mτ). (3.39) writes b_R for b_G and 2√⌈k/2⌉ start-ups
//! where the phases take ⌊√k/2⌋ each; Table 2's N/b_G + 2√kτ_G is an upper bound
//! (docs/errata.md).
//!
//! Constraints: `torus:AxB`.

use crate::algorithms::plan::{self, Plan};
use crate::algorithms::scatter::bus;
use crate::algorithms::{Formula, Params};
use crate::cost::model::Ports;
use crate::error::Error;
use crate::schedule::{Rank, Schedule};
use crate::verify::Problem;

/// The moves on `torus:AxB` from `root`.
pub(crate) fn moves(a: u32, b: u32, root: Rank) -> Plan {
    let mut p = Plan::new(a * b);
    let (r0, c0) = (root / b, root % b);
    let row: Vec<Rank> = (0..b).map(|i| r0 * b + (c0 + i) % b).collect();
    let t = plan::ring_scatter(&mut p, 0, &row, |pos| {
        let c = (c0 + pos as u32) % b;
        (0..a).map(|r| (r * b + c) as u64).collect()
    });
    for c in 0..b {
        let col: Vec<Rank> = (0..a).map(|i| ((r0 + i) % a) * b + c).collect();
        plan::ring_scatter(&mut p, t, &col, |pos| vec![col[pos] as u64]);
    }
    p
}

/// Build the schedule.
pub fn build(
    problem: &Problem<'_>,
    _params: &Params,
    a: u32,
    b: u32,
) -> Result<Box<dyn Schedule>, Error> {
    bus::finish(problem, |_, root| moves(a, b, root))
}

/// ⌊B/2⌋(β + Amτ) + ⌊A/2⌋(β + mτ), exact; Table 2's N/b_G + 2√kτ_G, an upper bound.
pub fn formulas(problem: &Problem<'_>, params: &Params) -> Vec<Formula> {
    let Some((a, b)) = plan::torus_dims(problem.topology) else {
        return vec![];
    };
    let model = &params.model;
    if model.ports != Ports::All || !plan::overlaps(model, true) {
        return vec![];
    }
    let m = problem.len;
    if m == 0 {
        return vec![Formula::exact("0", "nothing to move", 0.0)];
    }
    let k = (a * b) as f64;
    vec![
        Formula::exact(
            "⌊B/2⌋(β + Amτ) + ⌊A/2⌋(β + mτ)",
            "Saad & Schultz 1986 (seed 004), §3.4 (D), row then columns",
            (b / 2) as f64 * plan::bt(model, a as u64 * m) + (a / 2) as f64 * plan::bt(model, m),
        ),
        Formula::upper_bound(
            "N/b_G + 2√k τ_G",
            "Saad & Schultz 1986 (seed 004), Table 2, grid scatter",
            k * m as f64 * model.tau() + 2.0 * k.sqrt() * model.beta(),
        ),
    ]
}
