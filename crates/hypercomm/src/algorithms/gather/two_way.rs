//! Gather on a ring: the two-way farthest-first scatter reversed (Saad & Schultz 1986,
//! seed 004, §3 and §3.4 (C), eq. (3.38)): the nearest blocks leave first and every
//! block arrives at the root in its own step from its side. Exact: ⌊k/2⌋(β + mτ)
//! under the ring rule (`--ports 2,1` reversed is one send and two receives: the root
//! receives from both neighbours, so exact under all ports).
//!
//! Constraints: `ring:K`.

use crate::algorithms::scatter::{bus, two_way};
use crate::algorithms::{Formula, Params};
use crate::cost::model::Ports;
use crate::error::Error;
use crate::schedule::Schedule;
use crate::verify::Problem;

/// Build the schedule.
pub fn build(problem: &Problem<'_>, _params: &Params, _k: u32) -> Result<Box<dyn Schedule>, Error> {
    bus::finish(problem, two_way::moves)
}

/// ⌊k/2⌋(β + mτ) under all ports, full or half-link duplex.
pub fn formulas(problem: &Problem<'_>, params: &Params) -> Vec<Formula> {
    if params.model.ports != Ports::All {
        return vec![];
    }
    two_way::formulas(problem, params)
}
