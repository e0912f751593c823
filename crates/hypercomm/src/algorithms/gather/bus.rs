//! Gather on the bus: the bus scatter reversed (Saad & Schultz 1986, seed 004, §3:
//! "an algorithm for scatter can be derived from an algorithm for gathering simply
//! reversing the data paths"; §3.4 (A), eq. (3.36)).
//!
//! Exact: (k − 1)(β + mτ), under every port and duplex rule; kτ_B + N/b_B (3.36) is
//! an upper bound.
//!
//! Constraints: `bus:K`.

use crate::algorithms::scatter::bus as scatter;
use crate::algorithms::{Formula, Params};
use crate::error::Error;
use crate::schedule::Schedule;
use crate::verify::Problem;

/// Build the schedule.
pub fn build(problem: &Problem<'_>, _params: &Params, _k: u32) -> Result<Box<dyn Schedule>, Error> {
    scatter::finish(problem, scatter::moves)
}

/// As the scatter's.
pub fn formulas(problem: &Problem<'_>, params: &Params) -> Vec<Formula> {
    scatter::formulas(problem, params)
}
