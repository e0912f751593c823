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
use crate::algorithms::broadcast::binomial::complete_ranks;
use crate::algorithms::{Formula, Params};
use crate::collective::OpKind;
use crate::error::Error;
use crate::schedule::{Action, Buf, Op, Program, Rank, Region, Schedule};
use crate::verify::Problem;

/// The ring reduce-scatter schedule.
#[derive(Clone, Debug)]
pub struct RingReduceScatter {
    k: u32,
    m: u64,
}

/// Build the schedule.
pub fn build(problem: &Problem<'_>, _params: &Params) -> Result<Box<dyn Schedule>, Error> {
    let k = complete_ranks(problem, "ring", OpKind::ReduceScatter)?;
    needs_commutative(problem, "ring")?;
    Ok(Box::new(RingReduceScatter { k, m: problem.len }))
}

impl Schedule for RingReduceScatter {
    fn nodes(&self) -> u32 {
        self.k
    }
    fn steps(&self) -> usize {
        ring_steps(self.k, self.m, 1)
    }
    fn program(&self, rank: Rank) -> Program {
        let (k, m) = (self.k, self.m);
        let mut prog = Program::new(rank, self.steps());
        if m == 0 {
            return prog;
        }
        let input = |b: u32| Region::new(Buf::In, (b % k) as u64 * m, m);
        let out = Region::new(Buf::Out, 0, m);
        if k == 1 {
            prog.push(0, Op::copy(input(0), out));
            return prog;
        }
        // The partial received in step s, sent on in step s + 1.
        let slot = |s: u32| {
            if s == k - 2 {
                out
            } else {
                Region::new(Buf::Tmp, (s % 2) as u64 * m, m)
            }
        };
        prog.tmp_len = (k as u64 - 2).min(2) * m;
        let (next, prev) = ((rank + 1) % k, (rank + k - 1) % k);
        for s in 0..k - 1 {
            let step = s as usize;
            let from = if s == 0 {
                input(rank + k - 1)
            } else {
                slot(s - 1)
            };
            prog.push(step, Op::send(next, from));
            let into = slot(s);
            prog.push(step, Op::recv(prev, into));
            prog.push(
                step,
                Op::Local {
                    from: input(rank + 2 * k - s - 2),
                    into,
                    action: Action::CombineRight,
                },
            );
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
