//! Gather on a torus: the row-then-column scatter reversed (columns first, then the
//! root's row; Saad & Schultz 1986, seed 004, §3 and §3.4 (D)). Exact under all ports,
//! full or half-link duplex: ⌊A/2⌋(β + mτ) + ⌊B/2⌋(β + Amτ).
//!
//! Constraints: `torus:AxB`.

use crate::algorithms::plan;
use crate::algorithms::scatter::{bus, row_column};
use crate::algorithms::{Formula, Params};
use crate::error::Error;
use crate::schedule::Schedule;
use crate::verify::Problem;

/// Build the schedule.
pub fn build(problem: &Problem<'_>, _params: &Params) -> Result<Box<dyn Schedule>, Error> {
    let (a, b) =
        plan::torus_dims(problem.topology).ok_or_else(|| plan::unfit("row-column", "torus:AxB"))?;
    bus::finish(problem, |_, root| row_column::moves(a, b, root))
}

/// As the scatter's.
pub fn formulas(problem: &Problem<'_>, params: &Params) -> Vec<Formula> {
    row_column::formulas(problem, params)
}
