//! Gather on a torus: the row-then-column scatter reversed (columns first, then the
//! root's row; Saad & Schultz 1986, seed 004, §3 and §3.4 (D)). Exact under all ports,
//! full or half-link duplex: ⌊A/2⌋(β + mτ) + ⌊B/2⌋(β + Amτ).
//!
//! Constraints: `torus:AxB`.

use crate::algorithms::scatter::{bus, row_column};
use crate::algorithms::{Formula, Params};
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
    bus::finish(problem, |_, root| row_column::moves(a, b, root))
}

/// As the scatter's.
pub fn formulas(problem: &Problem<'_>, params: &Params) -> Vec<Formula> {
    row_column::formulas(problem, params)
}
