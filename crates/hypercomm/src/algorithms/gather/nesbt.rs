//! Gather over the n edge-disjoint spanning binomial trees at once (nESBT): the
//! [`nesbt` scatter](crate::algorithms::scatter::nesbt) reversed in time and direction.
//!
//! Reference: Johnsson & Ho, "Optimum broadcasting and personalized communication in
//! hypercubes", IEEE Trans. Computers 38(9), 1989, §5 (all-to-one personalized
//! communication is one-to-all reversed).
//!
//! Schedule: every node's block is cut into n parts; part t climbs ESBT tree t to the
//! root. Step s of the gather is step 2^n − 2 − s of the scatter with every transfer
//! turned around: nearest sources first, the deepest last, and the root receives one
//! part on each of its n links in every step. A part waits one step at each node on its
//! way in one of two `tmp` slots per tree.
//!
//! Cost (rounds model, `--ports all`, full duplex; m > 0, n ≥ 1): the scatter's,
//! T = (2^n − 1)(β + ⌈m/n⌉τ), against the lower bound nβ + (2^n − 1)mτ/n (for n | m
//! the ratio is below 1 + β/(mτ/n)). Volume as the scatter's.
//!
//! Under `--duplex half-link` (seed 004's hypercube model E) no closed form is claimed:
//! the trees cross some links both ways in the same step, which a link of one
//! direction at a time serialises; the simulator charges it (and `sbt` keeps its form
//! there, its links carrying one direction).
//!
//! Constraints: hypercube.

use crate::algorithms::fit::{self, Built};
use crate::algorithms::scatter::nesbt::{formula, root_of, NesbtPersonalized};
use crate::algorithms::{Formula, Params};
use crate::topology::Hypercube;
use crate::verify::Problem;

/// Build the schedule.
pub fn build(problem: &Problem<'_>, _params: &Params, cube: &Hypercube) -> Built {
    let (cube, root) = root_of(problem, *cube, true)?;
    Ok(Box::new(NesbtPersonalized::new(
        cube,
        root,
        problem.len,
        true,
    )))
}

/// (2^n − 1)(β + ⌈m/n⌉τ) under all ports, full duplex (m > 0, n ≥ 1).
pub fn formulas(problem: &Problem<'_>, params: &Params) -> Vec<Formula> {
    let Some(Ok((cube, _))) = fit::cube_of(problem).map(|c| root_of(problem, c, true)) else {
        return vec![];
    };
    formula(&cube, problem.len, params).into_iter().collect()
}
