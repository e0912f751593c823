//! Pairwise-exchange reduce-scatter in rank order, for any number of ranks: k − 1 steps,
//! any associative operator.
//!
//! Reference: Thakur, Rabenseifner & Gropp, "Optimization of Collective Communication
//! Operations in MPICH", IJHPCA 19(1), 2005, the reduce-scatter section: the pairwise
//! exchange for long messages, (p − 1)α + ((p − 1)/p)nβ + ((p − 1)/p)nγ for n bytes
//! (MPICH's `MPIR_Reduce_scatter_block_intra_pairwise`, the pattern of the pairwise
//! all-to-all). MPICH asserts a commutative operator there: it combines each arrival
//! into one accumulator as it comes, x_{r−1} ⊕ x_r, then x_{r−2} ⊕ that, …, which
//! leaves rank order at the wrap past rank 0. For non-commutative operators MPICH takes
//! Träff's butterfly (EuroPVM/MPI 2005, `MPIR_Reduce_scatter_block_intra_noncommutative`,
//! 2^n ranks only) or recursive doubling (`…_intra_recursive_doubling`, any p), as Open
//! MPI does (`ompi_coll_base_reduce_scatter_block_intra_recursivedoubling`: "preserves
//! order of operations"), at lg p·α + (lg p − (p − 1)/p)nβ and 2n of scratch: each step
//! sends most of the vector. Open MPI's ring (`ompi_coll_base_reduce_scatter_intra_ring`)
//! is for commutative operators only, like `ring` here. This file keeps the pairwise
//! exchange's cost and makes it keep rank order on any number of ranks with a second
//! accumulator.
//!
//! `in` holds k blocks of m elements; rank j must end with block j of
//! x_0 ⊕ x_1 ⊕ … ⊕ x_{k−1}, x_i being block j of rank i's input. In step s (1-based,
//! s = 1..k − 1) rank j sends block (j + s) mod k of `in` to (j + s) mod k and receives
//! x_{(j − s) mod k} from (j − s) mod k. The blocks thus arrive in the order j − 1, j − 2,
//! …, 0, then k − 1, k − 2, …, j + 1: each arrival is the left neighbour of what arrived
//! before it from the same side, so it combines on the left of one of two accumulators:
//! - L = x_0 ⊕ … ⊕ x_j, in `out`: step 1 places x_{j−1} and combines the own x_j on its
//!   right (a local op: it runs after the step's receive), steps 2..j combine x_{j−s} on
//!   the left;
//! - R = x_{j+1} ⊕ … ⊕ x_{k−1}, in `tmp`: step j + 1 places x_{k−1}, steps j + 2..k − 1
//!   combine x_{j−s+k} on the left;
//!
//! and after the last receive a local op makes `out` = L ⊕ R. Two ends need no `tmp`:
//! rank 0 has no L besides its own block, so R is built in `out` and its own block
//! combined on the left at the end; rank k − 2's R is the one block x_{k−1}, arriving in
//! the last step, combined straight into `out` on the right. Rank k − 1 has no R. Every
//! combine joins two adjacent ranges of ranks, lower on the left: rank order holds for
//! any associative operator, and each rank combines k − 1 times, as MPICH's does.
//!
//! Cost: k − 1 steps (one step of the local copy when k = 1, none when m = 0); each node
//! sends one message of m elements and receives one per step: (k − 1)(β + mτ) under full
//! duplex, 2(k − 1)(β + mτ) under half duplex (a step's send and receive in turn), under
//! either port rule (one message out and one in per step). Volume k(k − 1)m, the least
//! possible. The local combines cost nothing in the model (the simulator prices
//! messages only); in time they are the (k − 1)mγ of MPICH's formula, no more than the
//! ring's. Memory: `tmp` of m elements on ranks 1..k − 3, none on the others (`ring`
//! needs 2m, recursive doubling 2km).
//!
//! Against the other reduce-scatters: the same time as `ring` under every model, so
//! `auto` (first in registry order on a tie) keeps `ring` for commutative operators and
//! takes this one for non-commutative operators on k ranks not a power of two, where
//! `ring` refuses and `recursive-halving` does not fit; on 2^n ranks
//! `recursive-halving`'s nβ + (k − 1)mτ is never more.
//!
//! Constraints: `complete:K`, any K ≥ 1; any associative operator.

use crate::algorithms::allgather::ring::{exchange_steps_formulas, ring_steps};
use crate::algorithms::vcount::Blocks;
use crate::algorithms::{Formula, Params};
use crate::collective::OpKind;
use crate::error::Error;
use crate::schedule::{Action, Buf, Op, Program, Rank, Region, Schedule, Step, StepStream};
use crate::verify::Problem;

/// The pairwise-exchange reduce-scatter schedule.
#[derive(Clone, Debug)]
pub struct PairwiseReduceScatter {
    k: u32,
    /// Block b of `in` (m elements each, or c_b for `reduce-scatterv`).
    blocks: Blocks,
}

/// Build the schedule.
pub fn build(problem: &Problem<'_>, _params: &Params) -> Result<Box<dyn Schedule>, Error> {
    let (k, blocks) = Blocks::of(problem, "pairwise", OpKind::ReduceScatter)?;
    Ok(Box::new(PairwiseReduceScatter { k, blocks }))
}

impl PairwiseReduceScatter {
    /// The schedule over the blocks given (`reduce_scatterv::pairwise`).
    pub fn with_blocks(k: u32, blocks: Blocks) -> Self {
        PairwiseReduceScatter { k, blocks }
    }
}

impl PairwiseReduceScatter {
    /// Whether rank j builds R in `tmp`: it has an L besides its own block (j ≥ 1) and
    /// an R of two blocks or more (j ≤ k − 3).
    fn uses_tmp(&self, j: Rank) -> bool {
        j >= 1 && j + 3 <= self.k
    }

    /// Step `s − 1` of rank j (s = 1..k − 1; for k = 1, the copy of the own block).
    fn step(&self, j: Rank, s: u32) -> Step {
        let (k, m) = (self.k, self.blocks.len(j));
        let input = |b: u32| self.blocks.input(b);
        let out = Region::new(Buf::Out, 0, m);
        let tmp = Region::new(Buf::Tmp, 0, m);
        let mut step = Step::default();
        if k == 1 {
            if m > 0 {
                step.ops.push(Op::copy(input(0), out));
            }
            return step;
        }
        let to = (j + s) % k;
        let from = (j + k - s) % k;
        if self.blocks.len(to) > 0 {
            step.ops.push(Op::send(to, input(to)));
        }
        if m == 0 {
            // Nothing to receive or combine for an empty block of its own.
            return step;
        }
        // The first arrival of an accumulator is placed, the later ones combine on its
        // left; rank k − 2's only R block combines on the right of L.
        let first = |f: bool| {
            if f {
                Action::Place
            } else {
                Action::CombineLeft
            }
        };
        let (into, action) = if s <= j || j == 0 {
            // L, or rank 0's R (in `out`); both begin at s = 1.
            (out, first(s == 1))
        } else if j + 2 == k {
            (out, Action::CombineRight)
        } else {
            (tmp, first(s == j + 1))
        };
        step.ops.push(Op::Recv {
            from,
            into: smallvec::smallvec![into],
            action,
        });
        if s == 1 && j >= 1 {
            // L = x_{j−1} ⊕ x_j.
            step.ops.push(Op::Local {
                from: input(j),
                into: out,
                action: Action::CombineRight,
            });
        }
        if s == k - 1 {
            if j == 0 {
                // out = x_0 ⊕ R.
                step.ops.push(Op::Local {
                    from: input(0),
                    into: out,
                    action: Action::CombineLeft,
                });
            } else if self.uses_tmp(j) {
                // out = L ⊕ R.
                step.ops.push(Op::Local {
                    from: tmp,
                    into: out,
                    action: Action::CombineRight,
                });
            }
        }
        step
    }
}

impl Schedule for PairwiseReduceScatter {
    fn nodes(&self) -> u32 {
        self.k
    }
    fn steps(&self) -> usize {
        ring_steps(self.k, u64::from(!self.blocks.is_empty()), 1)
    }
    fn program(&self, rank: Rank) -> Program {
        self.stream(rank).into_program()
    }
    fn stream(&self, rank: Rank) -> StepStream<'_> {
        let tmp_len = if self.uses_tmp(rank) {
            self.blocks.len(rank)
        } else {
            0
        };
        let steps = (0..self.steps()).map(move |t| self.step(rank, t as u32 + 1));
        StepStream::new(rank, tmp_len, steps)
    }
}

/// (k − 1)(β + mτ) under full duplex, 2(k − 1)(β + mτ) under half duplex; either port
/// rule.
pub fn formulas(problem: &Problem<'_>, params: &Params) -> Vec<Formula> {
    exchange_steps_formulas(
        problem,
        params,
        ("pairwise", OpKind::ReduceScatter),
        [
            "Thakur, Rabenseifner & Gropp 2005, reduce-scatter: pairwise exchange, (p − 1)α + ((p − 1)/p)nβ",
            "Thakur, Rabenseifner & Gropp 2005, reduce-scatter: pairwise exchange, each step's send and receive in turn (half duplex)",
        ],
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::algorithms::broadcast::binomial::test_support::*;
    use crate::algorithms::fitting;
    use crate::collective::Collective;
    use crate::verify::{verify, Strictness};

    #[test]
    fn verifies_in_rank_order_for_every_rank_count() {
        check_all(OpKind::ReduceScatter, "pairwise", &[0, 1, 7], true);
    }

    #[test]
    fn refuses_a_hypercube() {
        refuses_hypercube(OpKind::ReduceScatter, "pairwise");
    }

    #[test]
    fn a_combine_on_the_wrong_side_is_caught() {
        let c = Collective::ReduceScatter;
        // k = 6: rank 0 builds R in `out` (four arrivals on the left, then its own
        // block on the left); rank 2 has L (own block on the right, one arrival on the
        // left), R in `tmp` (two arrivals on the left) and the final L ⊕ R; rank 4
        // (k − 2) takes x_5 on the right of L; rank 5 has L only.
        for (rank, combines) in [(0, 5), (2, 5), (4, 5), (5, 5)] {
            for nth in 0..combines {
                flipped_is_caught("pairwise", c, 6, rank, nth);
            }
        }
    }

    /// Rank j hears from j − 1, …, 0, then k − 1, …, j + 1, one message a step, and
    /// sends block r + s to r + s; only ranks 1..k − 3 use `tmp`.
    #[test]
    fn arrivals_come_in_the_documented_order() {
        for k in [2, 3, 5, 13] {
            let s = PairwiseReduceScatter::with_blocks(k, Blocks::uniform(k, 4));
            for j in 0..k {
                let p = s.program(j);
                let mut heard = Vec::new();
                for (t, step) in p.steps.iter().enumerate() {
                    let sends: Vec<_> = step
                        .ops
                        .iter()
                        .filter_map(|op| match op {
                            Op::Send { to, from } => Some((to[0], from[0])),
                            _ => None,
                        })
                        .collect();
                    let to = (j + t as u32 + 1) % k;
                    assert_eq!(
                        sends,
                        [(to, Region::new(Buf::In, to as u64 * 4, 4))],
                        "k = {k}, rank {j}, step {t}"
                    );
                    heard.extend(step.ops.iter().filter_map(|op| match op {
                        Op::Recv { from, .. } => Some(*from),
                        _ => None,
                    }));
                }
                let want: Vec<u32> = (0..j).rev().chain((j + 1..k).rev()).collect();
                assert_eq!(heard, want, "k = {k}, rank {j}");
                let tmp = if (1..=k.saturating_sub(3)).contains(&j) {
                    4
                } else {
                    0
                };
                assert_eq!(p.tmp_len, tmp, "k = {k}, rank {j}");
            }
        }
    }

    /// The same simulated time as `ring`, so `auto` keeps `ring` (registered first) for
    /// commutative operators.
    #[test]
    fn times_tie_with_the_ring() {
        for k in ranks() {
            for m in [0, 1, 7] {
                let c = Collective::ReduceScatter;
                assert_eq!(
                    timed("pairwise", c, k, m),
                    timed("ring", c, k, m),
                    "k = {k}"
                );
            }
        }
    }

    /// With it, a non-commutative reduce-scatter has an algorithm that keeps rank order
    /// on any number of ranks (before, only on 2^n ranks).
    #[test]
    fn every_rank_count_has_an_order_keeping_reduce_scatter() {
        for k in ranks() {
            let topo = complete(k);
            let p = Problem {
                topology: &topo,
                collective: Collective::ReduceScatter,
                len: 3,
                commutative: false,
                counts: None,
            };
            let ordered: Vec<&str> = fitting(&topo, OpKind::ReduceScatter)
                .into_iter()
                .filter(|a| {
                    a.build(&p, &Params::default())
                        .is_ok_and(|s| verify(p, s.as_ref(), Strictness::default()).is_ok())
                })
                .map(|a| a.name)
                .collect();
            assert!(ordered.contains(&"pairwise"), "k = {k}: {ordered:?}");
            if !k.is_power_of_two() {
                assert_eq!(ordered, ["pairwise"], "k = {k}");
            }
        }
    }
}
