//! Pairwise-exchange all-to-all, for any number of ranks: k − 1 steps.
//!
//! Reference: Thakur, Rabenseifner & Gropp, "Optimization of Collective Communication
//! Operations in MPICH", IJHPCA 19(1), 2005, the alltoall section: the pairwise exchange
//! for long messages, (p − 1)α + nβ for n bytes per rank (MPICH's
//! `MPIR_Alltoall_intra_pairwise`).
//!
//! In step s (1-based, s = 1..k − 1) rank r sends block `to` of `in` to `to` and
//! receives from `from` into block `from` of `out`, where `to = from = r XOR s` when k
//! is a power of two (a true exchange) and `to = (r + s) mod k`, `from = (r − s) mod k`
//! otherwise, as MPICH does. Step 1 also copies the own block.
//!
//! Cost: k − 1 steps (one step of the local copy when k = 1, none when m = 0); each node
//! sends one message of m elements and receives one per step: (k − 1)(β + mτ) under full
//! duplex, 2(k − 1)(β + mτ) under half duplex, under either port rule. Volume
//! k(k − 1)m, the least possible.
//!
//! Constraints: `complete:K`, any K ≥ 1.

use crate::algorithms::allgather::ring::{exchange_steps_formulas, ring_steps};
use crate::algorithms::broadcast::binomial::complete_ranks;
use crate::algorithms::{Formula, Params};
use crate::collective::OpKind;
use crate::error::Error;
use crate::schedule::{Buf, Op, Program, Rank, Region, Schedule, Step, StepStream};
use crate::verify::Problem;

/// The pairwise-exchange all-to-all schedule.
#[derive(Clone, Debug)]
pub struct PairwiseAlltoall {
    k: u32,
    m: u64,
}

/// Build the schedule.
pub fn build(problem: &Problem<'_>, _params: &Params) -> Result<Box<dyn Schedule>, Error> {
    let k = complete_ranks(problem, "pairwise", OpKind::Alltoall)?;
    Ok(Box::new(PairwiseAlltoall { k, m: problem.len }))
}

impl Schedule for PairwiseAlltoall {
    fn nodes(&self) -> u32 {
        self.k
    }
    fn steps(&self) -> usize {
        ring_steps(self.k, self.m, 1)
    }
    fn program(&self, rank: Rank) -> Program {
        self.stream(rank).into_program()
    }
    fn stream(&self, rank: Rank) -> StepStream<'_> {
        let steps = (0..self.steps()).map(move |s| self.step(rank, s as u32 + 1));
        StepStream::new(rank, 0, steps)
    }
}

impl PairwiseAlltoall {
    /// Step `s − 1` of `rank` (s = 1..k): the copy of the own block (first step), then
    /// the block for r + s (r XOR s) out and the one from r − s in.
    fn step(&self, rank: Rank, s: u32) -> Step {
        let (k, m) = (self.k, self.m);
        let input = |b: u32| Region::new(Buf::In, b as u64 * m, m);
        let output = |b: u32| Region::new(Buf::Out, b as u64 * m, m);
        let mut step = Step::default();
        if s == 1 {
            step.ops.push(Op::copy(input(rank), output(rank)));
        }
        if s >= k {
            return step;
        }
        let (to, from) = if k.is_power_of_two() {
            (rank ^ s, rank ^ s)
        } else {
            ((rank + s) % k, (rank + k - s) % k)
        };
        step.ops.push(Op::send(to, input(to)));
        step.ops.push(Op::recv(from, output(from)));
        step
    }
}

/// (k − 1)(β + mτ) under full duplex, 2(k − 1)(β + mτ) under half duplex; either port
/// rule.
pub fn formulas(problem: &Problem<'_>, params: &Params) -> Vec<Formula> {
    exchange_steps_formulas(
        problem,
        params,
        ("pairwise", OpKind::Alltoall),
        [
            "Thakur, Rabenseifner & Gropp 2005, alltoall: pairwise exchange, (p − 1)α + nβ",
            "Thakur, Rabenseifner & Gropp 2005, alltoall: pairwise exchange, each step's send and receive in turn (half duplex)",
        ],
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::algorithms::broadcast::binomial::test_support::*;

    #[test]
    fn verifies_for_every_rank_count() {
        check_all(OpKind::Alltoall, "pairwise", &[0, 1, 7], false);
    }

    #[test]
    fn refuses_a_hypercube() {
        refuses_hypercube(OpKind::Alltoall, "pairwise");
    }

    #[test]
    fn exchanges_with_r_xor_s_for_a_power_of_two() {
        let s = PairwiseAlltoall { k: 8, m: 1 };
        let p = s.program(5);
        for (i, step) in p.steps.iter().enumerate() {
            let peers: Vec<Rank> = step
                .ops
                .iter()
                .filter_map(|op| match op {
                    Op::Send { to, .. } => Some(to[0]),
                    Op::Recv { from, .. } => Some(*from),
                    Op::Local { .. } => None,
                })
                .collect();
            assert_eq!(peers, [5 ^ (i as u32 + 1); 2]);
        }
    }
}
