//! Exclusive prefix reduction by recursive doubling (Hillis & Steele), for any number of
//! ranks, in rank order.
//!
//! Reference: Hillis & Steele, "Data parallel algorithms", CACM 29(12), 1986 (the
//! log-step prefix); Thakur, Rabenseifner & Gropp, "Optimization of Collective
//! Communication Operations in MPICH", IJHPCA 19(1), 2005 (scan and exscan by recursive
//! doubling, lg p steps).
//!
//! The inclusive scan's pattern ([`crate::algorithms::scan::recursive_doubling`]) with
//! two values per rank: y, the combination of the ranks before r in its window, is
//! `out`; x = y ⊕ in_r, the window with r, is what r sends. After step s, y covers
//! [max(0, r − 2^{s+1} + 1), r − 1]. Step 0: r sends in_r to r + 1 and takes y = in_{r−1}
//! from r − 1. Step s ≥ 1: r sends x to r + 2^s and combines the x of r − 2^s, which
//! covers the 2^s ranks before y's window, into y on the left. After L = ⌈log₂k⌉ steps
//! y covers [0, r − 1]; rank 0's `out` stays undefined, as MPI_Exscan's. Every
//! combination keeps rank order: correct for non-commutative operators.
//!
//! Buffers: y is `out`, received into directly (combined on arrival from step 1 on); x
//! is `in` at rank 0 and `tmp` elsewhere, recomputed by two local ops (copy y, combine
//! `in` on the right) after each step that changes y, when r still sends in a later
//! step (r + 2^{s+1} < k).
//!
//! Cost: as the inclusive scan's: L steps (none when m = 0 or k = 1); each node sends at
//! most one message of m elements and receives at most one per step: L(β + mτ) under
//! full duplex, (2L − 1)(β + mτ) under half duplex (k ≥ 2), under either port rule.
//! Volume Σ_s (k − 2^s)m.
//!
//! Constraints: `complete:K`, any K ≥ 1; any associative operator.

use crate::algorithms::broadcast::binomial::{ceil_log2, complete_ranks};
use crate::algorithms::scan::recursive_doubling::hillis_steele_formula;
use crate::algorithms::{Formula, Params};
use crate::collective::OpKind;
use crate::error::Error;
use crate::schedule::{Action, Buf, Op, Program, Rank, Region, Schedule};
use crate::verify::Problem;

/// The recursive-doubling exclusive-scan schedule.
#[derive(Clone, Debug)]
pub struct RecursiveDoublingExscan {
    k: u32,
    m: u64,
}

/// Build the schedule.
pub fn build(problem: &Problem<'_>, _params: &Params) -> Result<Box<dyn Schedule>, Error> {
    let k = complete_ranks(problem, "recursive-doubling", OpKind::ExclusiveScan)?;
    Ok(Box::new(RecursiveDoublingExscan { k, m: problem.len }))
}

impl Schedule for RecursiveDoublingExscan {
    fn nodes(&self) -> u32 {
        self.k
    }
    fn steps(&self) -> usize {
        if self.m == 0 {
            0
        } else {
            ceil_log2(self.k) as usize
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
        let (r, k64) = (rank as u64, k as u64);
        let x = if rank == 0 { input } else { tmp };
        if rank > 0 && r + 2 < k64 {
            prog.tmp_len = m;
        }
        for s in 0..ceil_log2(k) {
            let (c, step) = (1u64 << s, s as usize);
            if r + c < k64 {
                prog.push(
                    step,
                    Op::send((r + c) as Rank, if s == 0 { input } else { x }),
                );
            }
            if r >= c {
                prog.push(
                    step,
                    Op::Recv {
                        from: (r - c) as Rank,
                        into: smallvec::smallvec![out],
                        action: if s == 0 {
                            Action::Place
                        } else {
                            Action::CombineLeft
                        },
                    },
                );
                // x = y ⊕ in_r, when r sends it in a later step.
                if r + 2 * c < k64 {
                    prog.push(step, Op::copy(out, tmp));
                    prog.push(
                        step,
                        Op::Local {
                            from: input,
                            into: tmp,
                            action: Action::CombineRight,
                        },
                    );
                }
            }
        }
        prog
    }
}

/// ⌈log₂k⌉(β + mτ) under full duplex, (2⌈log₂k⌉ − 1)(β + mτ) under half duplex.
pub fn formulas(problem: &Problem<'_>, params: &Params) -> Vec<Formula> {
    let Ok(k) = complete_ranks(problem, "recursive-doubling", OpKind::ExclusiveScan) else {
        return vec![];
    };
    vec![hillis_steele_formula(k, problem.len, params)]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::algorithms::broadcast::binomial::test_support::*;

    #[test]
    fn verifies_in_rank_order_for_every_rank_count() {
        check_all(
            OpKind::ExclusiveScan,
            "recursive-doubling",
            &[0, 1, 7],
            true,
        );
    }

    #[test]
    fn a_combine_on_the_wrong_side_is_caught() {
        use crate::collective::Collective;
        // Rank 6 of 7: y combines on arrival in steps 1 and 2.
        for nth in 0..2 {
            flipped_is_caught("recursive-doubling", Collective::ExclusiveScan, 7, 6, nth);
        }
        // Rank 2 of 7: x = y ⊕ in, sent on in step 2 to rank 6.
        flipped_is_caught("recursive-doubling", Collective::ExclusiveScan, 7, 2, 0);
    }

    #[test]
    fn refuses_a_hypercube() {
        refuses_hypercube(OpKind::ExclusiveScan, "recursive-doubling");
    }
}
