//! Gather through the shared memory: the shared-memory scatter reversed (Saad &
//! Schultz 1986, seed 004, §3 and §3.4 (B)). The root reads one block a round.
//! Exact: 2(k − 1)(β + mτ).
//!
//! Constraints: `shm:K,S`.

use crate::algorithms::scatter::{bus, shm};
use crate::algorithms::{Formula, Params};
use crate::error::Error;
use crate::schedule::Schedule;
use crate::verify::Problem;

/// Build the schedule.
pub fn build(
    problem: &Problem<'_>,
    _params: &Params,
    _k: u32,
    _s: u32,
) -> Result<Box<dyn Schedule>, Error> {
    bus::finish(problem, bus::moves)
}

/// As the scatter's.
pub fn formulas(problem: &Problem<'_>, params: &Params) -> Vec<Formula> {
    shm::formulas(problem, params)
}
