//! Gather over the binomial tree on ranks relative to the root, for any number of
//! ranks: the binomial scatter run backwards.
//!
//! Reference: Thakur, Rabenseifner & Gropp, "Optimization of Collective Communication
//! Operations in MPICH", IJHPCA 19(1), 2005: the binomial gather, lg p·α + ((p − 1)/p)·nβ
//! for a total of n bytes (MPICH's `MPIR_Gather_intra_binomial`); Chan et al., CCPE
//! 19(13), 2007, the minimum-spanning-tree gather.
//!
//! The tree is `BinomialTree`'s (relative rank v = (r − root) mod k). In step i
//! (0-based) every v whose lowest set bit is i sends the blocks of its subtree, the
//! relative ranks [v, v + min(2^i, k − v)), to v − 2^i. An inner node collects its
//! subtree in `tmp` in relative order (its own block first, copied from `in` in step
//! 0), so each message is one region; a leaf sends `in`; the root receives straight
//! into `out`, one region or two when the range wraps past rank k − 1 (MPICH gathers
//! into relative order and rotates at the end instead).
//!
//! Cost: L = ⌈log₂k⌉ steps (one step of the local copy when k = 1, none when m = 0). In
//! step i the largest message is the one the root receives, min(2^i, k − 2^i) blocks,
//! and these sum to k − 1; no node sends and receives in one step, so
//! Lβ + (k − 1)mτ under every port and duplex rule. Volume Σ_v (depth of v)·m.
//!
//! Constraints: `complete:K`, any K ≥ 1, any root.

use smallvec::smallvec;

use crate::algorithms::broadcast::binomial::{complete_ranks, tree_steps, BinomialTree};
use crate::algorithms::scatter::binomial::{tree_time, wrapped};
use crate::algorithms::{Formula, Params};
use crate::collective::{Collective, OpKind};
use crate::error::Error;
use crate::schedule::{Action, Buf, Op, Program, Rank, Region, Regions, Schedule};
use crate::verify::Problem;

/// The binomial gather schedule.
#[derive(Clone, Debug)]
pub struct BinomialGather {
    k: u32,
    root: Rank,
    m: u64,
}

fn params(problem: &Problem<'_>) -> Result<(u32, Rank), Error> {
    let k = complete_ranks(problem, "binomial", OpKind::Gather)?;
    match problem.collective {
        Collective::Gather { root } => Ok((k, root)),
        _ => unreachable!("complete_ranks checked the kind"),
    }
}

/// Build the schedule.
pub fn build(problem: &Problem<'_>, _params: &Params) -> Result<Box<dyn Schedule>, Error> {
    let (k, root) = params(problem)?;
    Ok(Box::new(BinomialGather {
        k,
        root,
        m: problem.len,
    }))
}

impl Schedule for BinomialGather {
    fn nodes(&self) -> u32 {
        self.k
    }
    fn steps(&self) -> usize {
        tree_steps(self.k, self.m)
    }
    fn program(&self, rank: Rank) -> Program {
        let (k, root, m) = (self.k, self.root, self.m);
        let mut prog = Program::new(rank, self.steps());
        if m == 0 {
            return prog;
        }
        let tree = BinomialTree::new(k);
        let v = (rank + k - root) % k;
        let abs = |u: u32| (u + root) % k;
        let input = Region::new(Buf::In, 0, m);
        let size = tree.subtree(v);
        // Where this node collects the blocks of relative ranks [v + d, v + d + n).
        let held = |d: u32, n: u32| -> Regions {
            if v == 0 {
                wrapped(Buf::Out, k, root, d, n, m)
            } else if size == 1 {
                smallvec![input]
            } else {
                smallvec![Region::new(Buf::Tmp, d as u64 * m, n as u64 * m)]
            }
        };
        if v == 0 || size > 1 {
            if v != 0 {
                prog.tmp_len = size as u64 * m;
            }
            prog.push(0, Op::copy(input, held(0, 1)[0]));
        }
        // Step i: the child across 2^i sends its subtree.
        for (i, c) in tree.children(v) {
            prog.push(
                i as usize,
                Op::Recv {
                    from: abs(c),
                    into: held(c - v, tree.subtree(c)),
                    action: Action::Place,
                },
            );
        }
        if let Some(p) = tree.parent(v) {
            prog.push(
                tree.level(v) as usize,
                Op::Send {
                    to: smallvec![abs(p)],
                    from: held(0, size),
                },
            );
        }
        prog
    }
}

/// ⌈log₂k⌉β + (k − 1)mτ, under every port and duplex rule.
pub fn formulas(problem: &Problem<'_>, params_: &Params) -> Vec<Formula> {
    let Ok((k, _)) = params(problem) else {
        return vec![];
    };
    vec![Formula::exact(
        "⌈log₂k⌉β + (k − 1)mτ",
        "Thakur, Rabenseifner & Gropp 2005, binomial gather: lg p α + ((p − 1)/p)nβ",
        tree_time(k, problem.len, params_),
    )]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::algorithms::broadcast::binomial::test_support::*;

    #[test]
    fn verifies_for_every_rank_count_and_root() {
        check_all(OpKind::Gather, "binomial", &[0, 1, 7], false);
    }

    #[test]
    fn refuses_a_hypercube() {
        refuses_hypercube(OpKind::Gather, "binomial");
    }

    #[test]
    fn messages_have_at_most_two_regions() {
        for k in ranks() {
            for root in 0..k {
                let s = BinomialGather { k, root, m: 3 };
                for r in 0..k {
                    for op in s.program(r).steps.into_iter().flat_map(|s| s.ops) {
                        if let Op::Recv { into, .. } = op {
                            assert!(into.len() <= 2, "k = {k}, root {root}, rank {r}");
                        }
                    }
                }
            }
        }
    }
}
