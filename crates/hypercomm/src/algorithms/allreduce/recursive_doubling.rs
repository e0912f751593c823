//! Recursive-doubling all-reduce, for any number of ranks, in rank order.
//!
//! Reference: Thakur, Rabenseifner & Gropp, "Optimization of Collective Communication
//! Operations in MPICH", IJHPCA 19(1), 2005, the allreduce section: recursive doubling,
//! lg p·(α + nβ + nγ), with their fold for p not a power of two (MPICH's
//! `MPIR_Allreduce_intra_recursive_doubling`).
//!
//! With p' = 2^⌊log₂k⌋ and rem = k − p':
//! 1. (when rem > 0) the first 2·rem ranks pair up: even rank 2i sends its input to
//!    2i + 1, which combines it on the left and stands for both as new rank i; ranks
//!    r ≥ 2·rem are new rank r − rem;
//! 2. log₂p' steps of recursive doubling among the p' new ranks: in step t new rank x
//!    exchanges its value with new rank x XOR 2^t;
//! 3. (when rem > 0) each odd rank 2i + 1 < 2·rem sends the result to 2i.
//!
//! New rank x stands for a contiguous range of ranks, and new ranks keep the ranks'
//! order, so before step t of phase 2 a rank holds the combination, in rank order, of
//! the ranks behind an aligned range of 2^t new ranks; its partner's range is adjacent,
//! and what arrives combines on the left when the partner's rank is lower and on the
//! right otherwise: correct for non-commutative operators (MPICH's rule too).
//!
//! Buffers: `out` is the accumulator. Without a fold, step 0 sends `in`, receives into
//! `out` and combines `in` into it; the other exchanges send `out`, so they receive into
//! `tmp` (a receive may not write what its step sends) and combine from there.
//!
//! Cost: log₂p' exchange steps plus 2 single-message steps when rem > 0 (one step of the
//! local copy when k = 1, none when m = 0); every message has m elements: with
//! d = ⌊log₂k⌋ and e = [k not a power of two], (d + 2e)(β + mτ) under full duplex and
//! 2(d + e)(β + mτ) under half duplex, under either port rule. Volume (p'·d + 2·rem)m.
//!
//! Constraints: `complete:K`, any K ≥ 1; any associative operator.

use crate::algorithms::broadcast::binomial::complete_ranks;
use crate::algorithms::{Formula, Params};
use crate::collective::OpKind;
use crate::cost::model::Duplex;
use crate::error::Error;
use crate::schedule::{Action, Buf, Op, Program, Rank, Region, Schedule};
use crate::verify::Problem;

/// The recursive-doubling all-reduce schedule.
#[derive(Clone, Debug)]
pub struct RecursiveDoubling {
    k: u32,
    m: u64,
}

/// Build the schedule.
pub fn build(problem: &Problem<'_>, _params: &Params) -> Result<Box<dyn Schedule>, Error> {
    let k = complete_ranks(problem, "recursive-doubling", OpKind::Allreduce)?;
    Ok(Box::new(RecursiveDoubling { k, m: problem.len }))
}

/// (d, rem): p' = 2^d = 2^⌊log₂k⌋ and rem = k − p'.
fn fold(k: u32) -> (u32, u32) {
    let d = k.ilog2();
    (d, k - (1 << d))
}

/// How a value from rank `peer` combines into rank `rank`'s: on the left when the peer's
/// ranks are lower.
fn side(rank: Rank, peer: Rank) -> Action {
    if peer < rank {
        Action::CombineLeft
    } else {
        Action::CombineRight
    }
}

impl Schedule for RecursiveDoubling {
    fn nodes(&self) -> u32 {
        self.k
    }
    fn steps(&self) -> usize {
        let (d, rem) = fold(self.k);
        if self.m == 0 {
            0
        } else {
            (d as usize + 2 * usize::from(rem > 0)).max(1)
        }
    }
    fn program(&self, rank: Rank) -> Program {
        let (k, m) = (self.k, self.m);
        let mut prog = Program::new(rank, self.steps());
        if m == 0 {
            return prog;
        }
        let (input, out, tmp) = (
            Region::new(Buf::In, 0, m),
            Region::new(Buf::Out, 0, m),
            Region::new(Buf::Tmp, 0, m),
        );
        let (d, rem) = fold(k);
        if d == 0 {
            prog.push(0, Op::copy(input, out));
            return prog;
        }
        // Phase 1: the fold.
        let first = usize::from(rem > 0);
        let new_rank = if rank < 2 * rem {
            if rank & 1 == 0 {
                prog.push(0, Op::send(rank + 1, input));
                // Phase 3: the result comes back.
                prog.push(d as usize + 1, Op::recv(rank + 1, out));
                return prog;
            }
            prog.push(0, Op::recv(rank - 1, out));
            prog.push(
                0,
                Op::Local {
                    from: input,
                    into: out,
                    action: Action::CombineRight,
                },
            );
            rank / 2
        } else {
            if rem > 0 {
                prog.push(0, Op::copy(input, out));
            }
            rank - rem
        };
        // Phase 2: recursive doubling among the new ranks.
        let old = |x: u32| if x < rem { 2 * x + 1 } else { x + rem };
        for t in 0..d {
            let s = first + t as usize;
            let peer = old(new_rank ^ (1 << t));
            if s == 0 {
                // No fold: exchange the inputs; out = (received, in) in rank order.
                prog.push(s, Op::send(peer, input));
                prog.push(s, Op::recv(peer, out));
                prog.push(
                    s,
                    Op::Local {
                        from: input,
                        into: out,
                        action: side(peer, rank),
                    },
                );
            } else {
                prog.tmp_len = m;
                prog.push(s, Op::send(peer, out));
                prog.push(s, Op::recv(peer, tmp));
                prog.push(
                    s,
                    Op::Local {
                        from: tmp,
                        into: out,
                        action: side(rank, peer),
                    },
                );
            }
        }
        // Phase 3.
        if rank < 2 * rem {
            prog.push(d as usize + 1, Op::send(rank - 1, out));
        }
        prog
    }
}

/// (⌊log₂k⌋ + 2e)(β + mτ) under full duplex, 2(⌊log₂k⌋ + e)(β + mτ) under half
/// duplex (e = 1 when k is not a power of two); either port rule.
pub fn formulas(problem: &Problem<'_>, params: &Params) -> Vec<Formula> {
    let Ok(k) = complete_ranks(problem, "recursive-doubling", OpKind::Allreduce) else {
        return vec![];
    };
    let (d, rem) = fold(k);
    let e = u32::from(rem > 0);
    let m = problem.len;
    let one = params.model.beta() + m as f64 * params.model.tau();
    let value = |steps: u32| if m == 0 { 0.0 } else { steps as f64 * one };
    vec![match params.model.duplex {
        Duplex::Full => Formula::exact(
            "(⌊log₂k⌋ + 2e)(β + mτ), e = [k ≠ 2^⌊log₂k⌋]",
            "Thakur, Rabenseifner & Gropp 2005, allreduce: recursive doubling, lg p(α + nβ), plus the fold's two steps",
            value(d + 2 * e),
        ),
        Duplex::Half | Duplex::HalfLink => Formula::exact(
            "2(⌊log₂k⌋ + e)(β + mτ), e = [k ≠ 2^⌊log₂k⌋]",
            "Thakur, Rabenseifner & Gropp 2005, allreduce: recursive doubling, each exchange as two transfers (half duplex)",
            value(2 * (d + e)),
        ),
    }]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::algorithms::broadcast::binomial::test_support::*;
    use crate::collective::Collective;

    #[test]
    fn verifies_in_rank_order_for_every_rank_count() {
        check_all(OpKind::Allreduce, "recursive-doubling", &[0, 1, 7], true);
    }

    #[test]
    fn a_combine_on_the_wrong_side_is_caught() {
        // Folded (rank 1 of 6: the fold, then two exchanges) and not folded (rank 5 of 8).
        for nth in 0..3 {
            flipped_is_caught("recursive-doubling", Collective::Allreduce, 6, 1, nth);
            flipped_is_caught("recursive-doubling", Collective::Allreduce, 8, 5, nth);
        }
    }

    #[test]
    fn refuses_a_hypercube() {
        refuses_hypercube(OpKind::Allreduce, "recursive-doubling");
    }

    #[test]
    fn a_fold_costs_two_steps() {
        for (k, steps) in [
            (1, 0),
            (2, 1),
            (3, 3),
            (4, 2),
            (6, 4),
            (8, 3),
            (13, 5),
            (16, 4),
        ] {
            let t = timed("recursive-doubling", Collective::Allreduce, k, 7);
            assert!(
                (t[0] - steps as f64 * (0.7 + 7.0 * 0.13)).abs() < 1e-9,
                "k = {k}"
            );
        }
    }
}
