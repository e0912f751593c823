//! Linear broadcast: the root sends the message to every other rank in turn, for any
//! number of ranks.
//!
//! Reference: Open MPI's `ompi_coll_base_bcast_intra_basic_linear` (and MPICH's flat
//! tree), the "flat tree" of Chan, Heimlich, Purkayastha & van de Geijn, "Collective
//! communication: theory, practice, and experience", CCPE 19(13), 2007: the root is the
//! parent of every rank.
//!
//! Rank r has the relative rank v = (r − root) mod k. In step v − 1 (v = 1..k − 1) the
//! root sends its input to v, which receives it into `out`; step 0 also copies the
//! root's input to its `out`.
//!
//! Cost: k − 1 steps (one step of the local copy when k = 1, none when m = 0): the root
//! sends one message of m elements per step and every other rank receives one, in its
//! own step: (k − 1)(β + mτ) under every port and duplex rule, against ⌈log₂k⌉(β + mτ)
//! for the binomial tree. Volume (k − 1)m, the least possible. Why then: every rank
//! depends on the root alone (tree depth 1, against ⌈log₂k⌉). Where messages are eager
//! (the sender copies and goes on, the threads backend up to `Config::eager`) the
//! root's k − 1 sends cost it k − 1 short copies, and no rank waits for an
//! intermediate rank to be scheduled, which, with more ranks than cores, is the cost
//! that dominates a short broadcast (measured against Open MPI:
//! `docs/perf-log/2026-11-24-matched-barrier.md`).
//!
//! Constraints: `complete:K`, any K ≥ 1, any root.

use crate::algorithms::broadcast::binomial::broadcast_ranks;
use crate::algorithms::{Formula, Params};
use crate::error::Error;
use crate::schedule::{Buf, Op, Program, Rank, Region, Schedule};
use crate::verify::Problem;

/// The linear broadcast schedule.
#[derive(Clone, Debug)]
pub struct LinearBroadcast {
    k: u32,
    root: Rank,
    m: u64,
}

fn params(problem: &Problem<'_>) -> Result<(u32, Rank), Error> {
    broadcast_ranks(problem, "linear")
}

/// Build the schedule.
pub fn build(problem: &Problem<'_>, _params: &Params) -> Result<Box<dyn Schedule>, Error> {
    let (k, root) = params(problem)?;
    Ok(Box::new(LinearBroadcast {
        k,
        root,
        m: problem.len,
    }))
}

impl Schedule for LinearBroadcast {
    fn nodes(&self) -> u32 {
        self.k
    }
    fn steps(&self) -> usize {
        if self.m == 0 {
            0
        } else {
            (self.k as usize - 1).max(1)
        }
    }
    fn program(&self, rank: Rank) -> Program {
        let (k, m) = (self.k, self.m);
        let mut prog = Program::new(rank, self.steps());
        if m == 0 {
            return prog;
        }
        let out = Region::new(Buf::Out, 0, m);
        let v = (rank + k - self.root) % k;
        if v != 0 {
            prog.push(v as usize - 1, Op::recv(self.root, out));
            return prog;
        }
        let input = Region::new(Buf::In, 0, m);
        prog.push(0, Op::copy(input, out));
        for v in 1..k {
            prog.push(v as usize - 1, Op::send((v + self.root) % k, input));
        }
        prog
    }
}

/// (k − 1)(β + mτ), under every port and duplex rule.
pub fn formulas(problem: &Problem<'_>, params_: &Params) -> Vec<Formula> {
    let Ok((k, _)) = params(problem) else {
        return vec![];
    };
    let (beta, tau) = (params_.model.beta(), params_.model.tau());
    let value = (k - 1) as f64 * (beta + problem.len as f64 * tau);
    vec![Formula::exact(
        "(k − 1)(β + mτ)",
        "Open MPI basic_linear broadcast (flat tree): the root sends to each rank in turn",
        if problem.len == 0 { 0.0 } else { value },
    )]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::algorithms::broadcast::binomial::test_support::*;
    use crate::collective::{Collective, OpKind};

    #[test]
    fn verifies_for_every_rank_count_and_root() {
        check_all(OpKind::Broadcast, "linear", &[0, 1, 7], false);
    }

    #[test]
    fn takes_k_minus_1_steps_of_one_message() {
        for k in ranks() {
            let times = timed("linear", Collective::Broadcast { root: k / 2 }, k, 7);
            let want = (k - 1) as f64 * (0.7 + 7.0 * 0.13);
            for t in times {
                assert!((t - want).abs() < 1e-9, "k = {k}: {t} ≠ {want}");
            }
        }
    }

    #[test]
    fn every_rank_hears_from_the_root() {
        let s = LinearBroadcast {
            k: 5,
            root: 3,
            m: 2,
        };
        for r in (0..5).filter(|&r| r != 3) {
            let senders: Vec<Rank> = s
                .program(r)
                .steps
                .iter()
                .flat_map(|st| &st.ops)
                .filter_map(|op| match op {
                    Op::Recv { from, .. } => Some(*from),
                    _ => None,
                })
                .collect();
            assert_eq!(senders, [3], "rank {r}");
        }
    }

    #[test]
    fn refuses_a_hypercube() {
        refuses_hypercube(OpKind::Broadcast, "linear");
    }
}
