//! Inclusive prefix reduction by recursive doubling (Hillis & Steele), for any number of
//! ranks, in rank order.
//!
//! Reference: Hillis & Steele, "Data parallel algorithms", CACM 29(12), 1986 (the
//! log-step prefix sum: at step s element r adds in element r − 2^s); Thakur,
//! Rabenseifner & Gropp, "Optimization of Collective Communication Operations in
//! MPICH", IJHPCA 19(1), 2005 (scan by recursive doubling, lg p steps).
//!
//! Before step s (0-based) rank r holds the combination, in rank order, of the inputs
//! of ranks [max(0, r − 2^s + 1), r]. In step s it sends that to r + 2^s (when below k)
//! and receives from r − 2^s (when at least 0) the combination of the 2^s ranks before
//! its own range, which it combines on the left. After L = ⌈log₂k⌉ steps the range is
//! [0, r]. Every combination keeps rank order: correct for non-commutative operators.
//!
//! MPICH's `MPIR_Scan_intra_recursive_doubling` pairs r with r XOR 2^s instead and
//! exchanges both ways (each partner keeps two values); here data only flows up, so
//! the last step has no node that sends and receives, which half duplex rewards.
//!
//! Buffers: `out` is the accumulator. Step 0 sends `in`, receives into `out` and
//! combines `in` into it on the right (rank 0 copies); later steps send `out`, so they
//! receive into `tmp` and combine from there.
//!
//! Cost: L steps (one step of the local copy when k = 1, none when m = 0); each node
//! sends at most one message of m elements and receives at most one per step, and
//! some node does both exactly in the steps s with 2^{s+1} < k, all but the last:
//! L(β + mτ) under full duplex, (2L − 1)(β + mτ) under half duplex (k ≥ 2), under
//! either port rule. Volume Σ_s (k − 2^s)m.
//!
//! Constraints: `complete:K`, any K ≥ 1; any associative operator.

use crate::algorithms::broadcast::binomial::{ceil_log2, complete_ranks};
use crate::algorithms::{Formula, Params};
use crate::collective::OpKind;
use crate::cost::model::Duplex;
use crate::error::Error;
use crate::schedule::{Action, Buf, Op, Program, Rank, Region, Schedule};
use crate::verify::Problem;

/// The recursive-doubling scan schedule.
#[derive(Clone, Debug)]
pub struct RecursiveDoublingScan {
    k: u32,
    m: u64,
}

/// Build the schedule.
pub fn build(problem: &Problem<'_>, _params: &Params) -> Result<Box<dyn Schedule>, Error> {
    let k = complete_ranks(problem, "recursive-doubling", OpKind::Scan)?;
    Ok(Box::new(RecursiveDoublingScan { k, m: problem.len }))
}

impl Schedule for RecursiveDoublingScan {
    fn nodes(&self) -> u32 {
        self.k
    }
    fn steps(&self) -> usize {
        if self.m == 0 {
            0
        } else {
            (ceil_log2(self.k) as usize).max(1)
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
        if rank == 0 {
            prog.push(0, Op::copy(input, out));
        }
        for s in 0..ceil_log2(k) {
            let (c, step) = (1u64 << s, s as usize);
            if r + c < k64 {
                let from = if s == 0 { input } else { out };
                prog.push(step, Op::send((r + c) as Rank, from));
            }
            if r >= c {
                let from = (r - c) as Rank;
                if s == 0 {
                    // out = (in_{r−1}, in_r).
                    prog.push(step, Op::recv(from, out));
                    prog.push(
                        step,
                        Op::Local {
                            from: input,
                            into: out,
                            action: Action::CombineRight,
                        },
                    );
                } else {
                    prog.tmp_len = m;
                    prog.push(step, Op::recv(from, tmp));
                    prog.push(
                        step,
                        Op::Local {
                            from: tmp,
                            into: out,
                            action: Action::CombineLeft,
                        },
                    );
                }
            }
        }
        prog
    }
}

/// The Hillis–Steele scans' form: L(β + mτ) under full duplex, (2L − 1)(β + mτ) under
/// half duplex; either port rule.
pub(crate) fn hillis_steele_formula(k: u32, m: u64, params: &Params) -> Formula {
    let l = ceil_log2(k) as f64;
    let one = params.model.beta() + m as f64 * params.model.tau();
    let value = |steps: f64| if m == 0 || k == 1 { 0.0 } else { steps * one };
    match params.model.duplex {
        Duplex::Full | Duplex::HalfLink => Formula::exact(
            "⌈log₂k⌉(β + mτ)",
            "Hillis & Steele 1986, log-step prefix: one message of m each way per step",
            value(l),
        ),
        Duplex::Half => Formula::exact(
            "(2⌈log₂k⌉ − 1)(β + mτ)",
            "Hillis & Steele 1986, log-step prefix: send then receive, except in the last step (half duplex)",
            value(2.0 * l - 1.0),
        ),
    }
}

/// ⌈log₂k⌉(β + mτ) under full duplex, (2⌈log₂k⌉ − 1)(β + mτ) under half duplex.
pub fn formulas(problem: &Problem<'_>, params: &Params) -> Vec<Formula> {
    let Ok(k) = complete_ranks(problem, "recursive-doubling", OpKind::Scan) else {
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
        check_all(OpKind::Scan, "recursive-doubling", &[0, 1, 7], true);
    }

    #[test]
    fn a_combine_on_the_wrong_side_is_caught() {
        for nth in 0..3 {
            flipped_is_caught(
                "recursive-doubling",
                crate::collective::Collective::Scan,
                7,
                6,
                nth,
            );
        }
    }

    #[test]
    fn refuses_a_hypercube() {
        refuses_hypercube(OpKind::Scan, "recursive-doubling");
    }
}
