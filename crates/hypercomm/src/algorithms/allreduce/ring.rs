//! Ring all-reduce: a ring reduce-scatter, then a ring all-gather, for any number of
//! ranks. Commutative operators only.
//!
//! Reference: Patarasuk & Yuan, "Bandwidth optimal all-reduce algorithms for clusters of
//! workstations", JPDC 69(2), 2009 (the ring all-reduce, 2(p − 1)α + 2((p − 1)/p)nβ);
//! Open MPI's `ompi_coll_base_allreduce_intra_ring`, which splits a vector that p does
//! not divide into n mod p early blocks of ⌈n/p⌉ and p − (n mod p) late ones of ⌊n/p⌋,
//! as here (MPICH's `MPIR_Allreduce_intra_ring` instead gives every block ⌈n/p⌉ until
//! the vector runs out, which can leave the last blocks short or empty).
//!
//! The vector is split into k blocks, block b of ⌈m/k⌉ elements when b < m mod k and
//! ⌊m/k⌋ otherwise. Reduce-scatter, steps s = 0..k − 1: rank r sends its partial of
//! block (r − s) mod k to r + 1 (step 0: from `in`) and receives the partial of block
//! (r − s − 1) mod k from r − 1 into `out`, then combines its own input into it. After
//! them rank r holds block (r + 1) mod k in full. All-gather, steps k − 1 + t, t = 0..k −
//! 1: rank r sends block (r + 1 − t) mod k and receives block (r − t) mod k in place.
//! Empty blocks (m < k) are not sent.
//!
//! Order: block b is combined along the ring b, b + 1, …, k − 1, 0, …, b − 1, so it
//! is in rank order only for b = 0: like Open MPI's ("does not preserve order of
//! operations so it can be used only for commutative operations"), `build` refuses a
//! non-commutative operator.
//!
//! Cost: 2(k − 1) steps (one step of the local copy when k = 1, none when m = 0); in
//! every step every block moves once, each node sending one and receiving one, so with
//! t(0) = 0 and t(x) = β + xτ: 2(k − 1)·t(⌈m/k⌉) under full duplex, and under half
//! duplex 2(k − 1)·(t(⌈m/k⌉) + t(⌈(m − 1)/k⌉)) (the two largest adjacent blocks), under
//! either port rule; 2(k − 1)(β + (m/k)τ) and 4(k − 1)(β + (m/k)τ) when k divides m.
//! Volume 2(k − 1)m.
//!
//! Constraints: `complete:K`, any K ≥ 1 (a ring is enough); a commutative operator.

use crate::algorithms::allgather::ring::ring_steps;
use crate::algorithms::broadcast::binomial::complete_ranks;
use crate::algorithms::{Formula, Params};
use crate::collective::OpKind;
use crate::cost::model::{Duplex, Model};
use crate::error::Error;
use crate::schedule::{Action, Buf, Op, Program, Rank, Region, Schedule};
use crate::verify::Problem;

/// The ring all-reduce schedule.
#[derive(Clone, Debug)]
pub struct RingAllreduce {
    k: u32,
    m: u64,
}

/// Check that the operator is commutative, for the ring reductions.
pub(crate) fn needs_commutative(problem: &Problem<'_>, algo: &str) -> Result<(), Error> {
    if problem.commutative {
        Ok(())
    } else {
        Err(Error::InvalidParameter {
            what: "--op",
            reason: format!(
                "{algo} combines each block in a rotated rank order, so it needs a commutative operator"
            ),
        })
    }
}

/// Build the schedule.
pub fn build(problem: &Problem<'_>, _params: &Params) -> Result<Box<dyn Schedule>, Error> {
    let k = complete_ranks(problem, "ring", OpKind::Allreduce)?;
    needs_commutative(problem, "ring")?;
    Ok(Box::new(RingAllreduce { k, m: problem.len }))
}

impl RingAllreduce {
    /// Block `b` of the vector.
    fn block(&self, buf: Buf, b: u32) -> Region {
        let (k, m, b) = (self.k as u64, self.m, b as u64);
        let (q, f) = (m % k, m / k);
        let off = b * f + b.min(q);
        Region::new(buf, off, f + u64::from(b < q))
    }
}

impl Schedule for RingAllreduce {
    fn nodes(&self) -> u32 {
        self.k
    }
    fn steps(&self) -> usize {
        ring_steps(self.k, self.m, 2)
    }
    fn program(&self, rank: Rank) -> Program {
        let (k, m) = (self.k, self.m);
        let mut prog = Program::new(rank, self.steps());
        if m == 0 {
            return prog;
        }
        if k == 1 {
            prog.push(
                0,
                Op::copy(Region::new(Buf::In, 0, m), Region::new(Buf::Out, 0, m)),
            );
            return prog;
        }
        let (next, prev) = ((rank + 1) % k, (rank + k - 1) % k);
        let at = |b: u32| b % k;
        // Reduce-scatter.
        for s in 0..k - 1 {
            let step = s as usize;
            let send = at(rank + k - s);
            let from = self.block(if s == 0 { Buf::In } else { Buf::Out }, send);
            if from.len > 0 {
                prog.push(step, Op::send(next, from));
            }
            let recv = at(rank + 2 * k - s - 1);
            let into = self.block(Buf::Out, recv);
            if into.len > 0 {
                prog.push(step, Op::recv(prev, into));
                prog.push(
                    step,
                    Op::Local {
                        from: self.block(Buf::In, recv),
                        into,
                        action: Action::CombineRight,
                    },
                );
            }
        }
        // All-gather of the reduced blocks.
        for t in 0..k - 1 {
            let step = (k - 1 + t) as usize;
            let from = self.block(Buf::Out, at(rank + 1 + k - t));
            if from.len > 0 {
                prog.push(step, Op::send(next, from));
            }
            let into = self.block(Buf::Out, at(rank + k - t));
            if into.len > 0 {
                prog.push(step, Op::recv(prev, into));
            }
        }
        prog
    }
}

/// t(x): one transfer of x elements, nothing when x = 0.
fn transfer(x: u64, model: &Model) -> f64 {
    if x == 0 {
        0.0
    } else {
        model.beta() + x as f64 * model.tau()
    }
}

/// 2(k − 1)·t(⌈m/k⌉) under full duplex, 2(k − 1)·(t(⌈m/k⌉) + t(⌈(m − 1)/k⌉)) under
/// half duplex; either port rule.
pub fn formulas(problem: &Problem<'_>, params: &Params) -> Vec<Formula> {
    let Ok(k) = complete_ranks(problem, "ring", OpKind::Allreduce) else {
        return vec![];
    };
    let (k64, m, model) = (k as u64, problem.len, &params.model);
    let steps = 2.0 * (k64 - 1) as f64;
    let big = m.div_ceil(k64);
    let next = m.saturating_sub(1).div_ceil(k64);
    // r sends to r + 1 and receives from r − 1: distinct peers when k > 2.
    vec![match model.duplex.with_peers(k > 2) {
        Duplex::Full => Formula::exact(
            "2(k − 1)(β + ⌈m/k⌉τ)",
            "Patarasuk & Yuan 2009, ring all-reduce: 2(p − 1)α + 2((p − 1)/p)nβ",
            steps * transfer(big, model),
        ),
        Duplex::Half | Duplex::HalfLink => Formula::exact(
            "2(k − 1)(t(⌈m/k⌉) + t(⌈(m − 1)/k⌉)), t(x) = [x > 0](β + xτ)",
            "Patarasuk & Yuan 2009, ring all-reduce, each step's send and receive in turn (half duplex)",
            steps * (transfer(big, model) + transfer(next, model)),
        ),
    }]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::algorithms::broadcast::binomial::test_support::*;
    use crate::collective::Collective;

    #[test]
    fn verifies_for_every_rank_count_and_uneven_blocks() {
        check_all(OpKind::Allreduce, "ring", &[0, 1, 5, 7, 40], false);
    }

    #[test]
    fn refuses_a_hypercube() {
        refuses_hypercube(OpKind::Allreduce, "ring");
    }

    #[test]
    fn refuses_a_non_commutative_operator() {
        refuses_non_commutative(OpKind::Allreduce, "ring");
    }

    #[test]
    fn costs_2_k_minus_1_steps_of_m_over_k() {
        for k in [2, 4, 5, 8] {
            let t = timed("ring", Collective::Allreduce, k, 40);
            let want = 2.0 * (k - 1) as f64 * (0.7 + (40 / k) as f64 * 0.13);
            assert!((t[0] - want).abs() < 1e-9, "k = {k}: {} ≠ {want}", t[0]);
            assert!(
                (t[1] - 2.0 * want).abs() < 1e-9,
                "k = {k}: {} ≠ {want}",
                t[1]
            );
        }
    }

    #[test]
    fn blocks_split_the_vector() {
        let s = RingAllreduce { k: 5, m: 7 };
        let blocks: Vec<(u64, u64)> = (0..5)
            .map(|b| {
                let r = s.block(Buf::Out, b);
                (r.off, r.len)
            })
            .collect();
        assert_eq!(blocks, [(0, 2), (2, 2), (4, 1), (5, 1), (6, 1)]);
    }
}
