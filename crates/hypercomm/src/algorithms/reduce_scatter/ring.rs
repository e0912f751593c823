//! Ring reduce-scatter, for any number of ranks: k − 1 steps. Commutative operators
//! only.
//!
//! Reference: Patarasuk & Yuan, "Bandwidth optimal all-reduce algorithms for clusters of
//! workstations", JPDC 69(2), 2009 (the reduce-scatter half of the ring all-reduce);
//! Open MPI's `ompi_coll_base_reduce_scatter_intra_ring`; Chan et al., CCPE 19(13),
//! 2007, the bucket (cyclic) reduce-scatter, (p − 1)α + ((p − 1)/p)nβ for n bytes.
//!
//! `in` holds k blocks of m elements; rank r must end with block r of the reduction. In
//! step s (0-based) rank r sends its partial of block (r − s − 1) mod k to r + 1 (step
//! 0: straight from `in`) and receives the partial of block (r − s − 2) mod k from
//! r − 1, then combines its own block of `in` into it. The block received in the last
//! step, k − 2, is block r, complete: it goes into `out`; earlier ones alternate
//! between two slots of `tmp` (a receive may not write what its step sends).
//!
//! Order: block b is combined along the ring b + 1, …, k − 1, 0, …, b, in rank order
//! only for b = k − 1: like Open MPI's ("does not preserve order of operations so it can
//! be used only for commutative operations"), `build` refuses a non-commutative
//! operator.
//!
//! Cost: k − 1 steps (one step of the local copy when k = 1, none when m = 0); each node
//! sends one message of m elements and receives one per step: (k − 1)(β + mτ) under full
//! duplex, 2(k − 1)(β + mτ) under half duplex, under either port rule. Volume k(k − 1)m.
//!
//! Constraints: `complete:K`, any K ≥ 1 (a ring is enough); a commutative operator.

use crate::algorithms::allgather::ring::{exchange_steps_formulas, ring_steps};
use crate::algorithms::allreduce::ring::needs_commutative;
use crate::algorithms::vcount::Blocks;
use crate::algorithms::{Formula, Params};
use crate::collective::OpKind;
use crate::error::Error;
use crate::schedule::{Action, Buf, Op, Program, Rank, Region, Schedule};
use crate::verify::Problem;

/// The ring reduce-scatter schedule.
#[derive(Clone, Debug)]
pub struct RingReduceScatter {
    k: u32,
    /// Block b of `in` (m elements each, or c_b for `reduce-scatterv`).
    blocks: Blocks,
}

/// Build the schedule.
pub fn build(problem: &Problem<'_>, _params: &Params) -> Result<Box<dyn Schedule>, Error> {
    let (k, blocks) = Blocks::of(problem, "ring", OpKind::ReduceScatter)?;
    needs_commutative(problem, "ring")?;
    Ok(Box::new(RingReduceScatter { k, blocks }))
}

impl RingReduceScatter {
    /// The schedule over the blocks given (`reduce_scatterv::ring`).
    pub fn with_blocks(k: u32, blocks: Blocks) -> Self {
        RingReduceScatter { k, blocks }
    }
}

impl Schedule for RingReduceScatter {
    fn nodes(&self) -> u32 {
        self.k
    }
    fn steps(&self) -> usize {
        ring_steps(self.k, u64::from(!self.blocks.is_empty()), 1)
    }
    fn program(&self, rank: Rank) -> Program {
        let (k, b) = (self.k, &self.blocks);
        let mut prog = Program::new(rank, self.steps());
        if self.steps() == 0 {
            return prog;
        }
        let input = |x: u32| b.input(x % k);
        let out = Region::new(Buf::Out, 0, b.len(rank));
        if k == 1 {
            prog.push(0, Op::copy(input(0), out));
            return prog;
        }
        // The partial of block x received in step s, sent on in step s + 1 (two slots
        // of the largest block, alternating).
        let m = b.max();
        let slot = |s: u32, x: u32| {
            if s == k - 2 {
                out
            } else {
                Region::new(Buf::Tmp, (s % 2) as u64 * m, b.len(x % k))
            }
        };
        prog.tmp_len = (k as u64 - 2).min(2) * m;
        let (next, prev) = ((rank + 1) % k, (rank + k - 1) % k);
        for s in 0..k - 1 {
            let step = s as usize;
            // Block (r − s − 1) goes out, block (r − s − 2) comes in.
            let (sent, got) = (rank + 2 * k - s - 1, rank + 2 * k - s - 2);
            if b.len(sent % k) > 0 {
                let from = if s == 0 {
                    input(sent)
                } else {
                    slot(s - 1, sent)
                };
                prog.push(step, Op::send(next, from));
            }
            if b.len(got % k) > 0 {
                let into = slot(s, got);
                prog.push(step, Op::recv(prev, into));
                prog.push(
                    step,
                    Op::Local {
                        from: input(got),
                        into,
                        action: Action::CombineRight,
                    },
                );
            }
        }
        prog
    }
}

/// (k − 1)(β + mτ) under full duplex, 2(k − 1)(β + mτ) under half duplex; either port
/// rule.
pub fn formulas(problem: &Problem<'_>, params: &Params) -> Vec<Formula> {
    exchange_steps_formulas(
        problem,
        params,
        ("ring", OpKind::ReduceScatter),
        [
            "Chan et al. 2007, bucket reduce-scatter: (p − 1)α + ((p − 1)/p)nβ",
            "Chan et al. 2007, bucket reduce-scatter, each step's send and receive in turn (half duplex)",
        ],
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::algorithms::broadcast::binomial::test_support::*;

    #[test]
    fn verifies_for_every_rank_count() {
        check_all(OpKind::ReduceScatter, "ring", &[0, 1, 7], false);
    }

    #[test]
    fn refuses_a_hypercube() {
        refuses_hypercube(OpKind::ReduceScatter, "ring");
    }

    #[test]
    fn refuses_a_non_commutative_operator() {
        refuses_non_commutative(OpKind::ReduceScatter, "ring");
    }
}
