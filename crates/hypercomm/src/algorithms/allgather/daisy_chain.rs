//! All-gather by daisy-chaining around the Gray-code ring embedded in the cube.
//!
//! Reference: Saad & Schultz 1985 (YALEU/DCS/RR-428), §4.1, Daisy-Chaining Algorithm
//! and eq. (4.2): t_DC = (2^n − 1)(β + mτ). The ring is the binary reflected Gray code
//! ([`Hypercube::ring_next`]); for n = 1 it is the one edge, used both ways.
//!
//! Step s (0-based, s < 2^n − 1): every node sends to its ring successor the block it
//! received in step s − 1 (its own, from `in`, in step 0) and receives from its
//! predecessor the block of the node s + 1 places before it on the ring. Every node
//! copies its `in` to its block of `out` in step 0.
//!
//! Cost: 2^n − 1 steps (1 when n = 0: the copy); each node sends one block and receives
//! one per step. Full duplex: (2^n − 1)(β + mτ), eq. (4.2), under either port rule;
//! half duplex: 2(2^n − 1)(β + mτ) (our derivation: the send and the receive of a step
//! follow each other). Volume 2^n(2^n − 1)m.
//!
//! Constraints: hypercube.

use crate::algorithms::allgather::dimension_exchange::allgather_cube;
use crate::algorithms::fit::{self, Built};
use crate::algorithms::{Formula, Params};
use crate::cost::model::Duplex;
use crate::schedule::{Buf, Op, Program, Rank, Region, Schedule, Step, StepStream};
use crate::topology::Hypercube;
use crate::verify::Problem;

/// The daisy-chain schedule.
#[derive(Clone, Debug)]
pub struct DaisyChain {
    cube: Hypercube,
    m: u64,
}

/// Build the schedule.
pub fn build(problem: &Problem<'_>, _params: &Params, cube: &Hypercube) -> Built {
    let cube = allgather_cube(problem, *cube, "daisy-chain")?;
    Ok(Box::new(DaisyChain {
        cube,
        m: problem.len,
    }))
}

impl Schedule for DaisyChain {
    fn nodes(&self) -> u32 {
        self.cube.nodes()
    }
    fn steps(&self) -> usize {
        if self.m == 0 {
            0
        } else {
            (self.cube.nodes() as usize - 1).max(1)
        }
    }
    fn program(&self, rank: Rank) -> Program {
        self.stream(rank).into_program()
    }
    fn stream(&self, rank: Rank) -> StepStream<'_> {
        let steps = (0..self.steps()).map(move |s| self.step(rank, s as u32));
        StepStream::new(rank, 0, steps)
    }
}

impl DaisyChain {
    /// Step `s` of `rank`: the copy of `in` (step 0), the send of the block received in
    /// step s − 1 and the receive of the block s + 1 places back on the ring.
    fn step(&self, rank: Rank, s: u32) -> Step {
        let (c, m) = (&self.cube, self.m);
        let block = |node: Rank| Region::new(Buf::Out, node as u64 * m, m);
        let mut step = Step::default();
        if s == 0 {
            step.ops
                .push(Op::copy(Region::new(Buf::In, 0, m), block(rank)));
        }
        let k = c.nodes();
        if k < 2 {
            return step;
        }
        let (next, prev) = (c.ring_next(rank), c.ring_prev(rank));
        let pos = Hypercube::gray_rank(rank);
        // The node `back` places before this one on the ring.
        let before = |back: u32| Hypercube::gray(pos.wrapping_sub(back) & (k - 1));
        let from = if s == 0 {
            Region::new(Buf::In, 0, m)
        } else {
            block(before(s))
        };
        step.ops.push(Op::send(next, from));
        step.ops.push(Op::recv(prev, block(before(s + 1))));
        step
    }
}

/// (2^n − 1)(β + mτ) (eq. 4.2) under full duplex, 2(2^n − 1)(β + mτ) under half duplex;
/// both under either port rule.
pub fn formulas(problem: &Problem<'_>, params: &Params) -> Vec<Formula> {
    let Some(Ok(cube)) = fit::cube_of(problem).map(|c| allgather_cube(problem, c, "daisy-chain"))
    else {
        return vec![];
    };
    let m = problem.len;
    let (beta, tau) = (params.model.beta(), params.model.tau());
    let one_way = if m == 0 {
        0.0
    } else {
        (cube.nodes() - 1) as f64 * (beta + m as f64 * tau)
    };
    // The Gray-code ring: a node sends to its successor and receives from its
    // predecessor, distinct peers from n = 2 on.
    vec![match params.model.duplex.with_peers(cube.dim() >= 2) {
        Duplex::Full => Formula::exact(
            "(2^n − 1)(β + mτ)",
            "Saad & Schultz 1985, §4.1, eq. (4.2)",
            one_way,
        ),
        Duplex::Half | Duplex::HalfLink => Formula::exact(
            "2(2^n − 1)(β + mτ)",
            "Saad & Schultz 1985, §4.1, eq. (4.2) with each step's send and receive in turn (half duplex)",
            2.0 * one_way,
        ),
    }]
}

#[cfg(test)]
mod tests {
    use super::*;
    /// `build` with the cube found first, as the registry hands it.
    fn build(problem: &Problem<'_>, params: &Params) -> crate::algorithms::fit::Built {
        crate::algorithms::fit::on_cube(super::build, problem, params)
    }
    use crate::algorithms::allgather::dimension_exchange::test_support::{check, exact};
    use crate::algorithms::Packets;

    #[test]
    fn verifies_and_matches_eq_4_2() {
        for n in 0..=7u32 {
            for m in [0u64, 1, 7] {
                let timed = check(build, formulas, n, m, Packets::Count(1)).unwrap();
                let k = (1u64 << n) as f64;
                let step = if m == 0 { 0.0 } else { 1.0 + m as f64 * 0.01 };
                for t in &timed {
                    let (expr, want) = match t.duplex {
                        Duplex::Full => ("(2^n − 1)(β + mτ)", (k - 1.0) * step),
                        Duplex::Half => ("2(2^n − 1)(β + mτ)", 2.0 * (k - 1.0) * step),
                        Duplex::HalfLink => continue,
                    };
                    assert!(exact(t, expr).holds_for(t.time));
                    assert!(
                        Formula::exact(expr, "", want).holds_for(t.time),
                        "n = {n}, m = {m}, ports {}, duplex {}: {} ≠ {want}",
                        t.ports,
                        t.duplex,
                        t.time
                    );
                }
            }
        }
    }

    /// Every transfer follows the ring, so every message crosses one cube edge in the
    /// ring's direction (the verifier checks the links; this checks the direction).
    #[test]
    fn sends_go_to_the_ring_successor() {
        let c = Hypercube::new(4).unwrap();
        let s = DaisyChain { cube: c, m: 1 };
        assert_eq!(s.steps(), 15);
        for r in 0..c.nodes() {
            for step in s.program(r).steps {
                for op in step.ops {
                    match op {
                        Op::Send { to, .. } => assert_eq!(to.as_slice(), &[c.ring_next(r)]),
                        Op::Recv { from, .. } => assert_eq!(from, c.ring_prev(r)),
                        Op::Local { .. } => {}
                    }
                }
            }
        }
    }
}
