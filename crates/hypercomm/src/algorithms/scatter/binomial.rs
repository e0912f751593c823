//! Scatter over the binomial tree on ranks relative to the root, for any number of
//! ranks.
//!
//! Reference: Thakur, Rabenseifner & Gropp, "Optimization of Collective Communication
//! Operations in MPICH", IJHPCA 19(1), 2005: the binomial scatter, lg p·α + ((p − 1)/p)·nβ
//! for a total of n bytes (MPICH's `MPIR_Scatter_intra_binomial`); Chan et al., CCPE
//! 19(13), 2007, the minimum-spanning-tree scatter. Saad & Schultz's switch scatter
//! (1986, seed 004, §3.4 (F), eq. (3.41)) is the hypercube's (seed 000's SBT scatter,
//! `scatter/sbt`, which runs as published on `switch:2^n`) through the power-of-two
//! shifts 0^{n−j+1}a_j → 0^{n−j}1a_j: the same binomial tree with its dimensions taken
//! lowest first, where this file (MPICH's order) takes them highest first so that every
//! subtree is a contiguous range; both send k − 1 blocks from the root in ⌈log₂k⌉
//! messages and take the same time. (3.41) prints (log₂k)τ_S + N/b_S with N = km the
//! total: for k = 2^n an upper bound (Nτ for (k − 1)mτ); otherwise no bound when
//! (⌈log₂k⌉ − log₂k)β > mτ; and the shift is by 2^{j−1}, not 2^j (docs/errata.md,
//! E53, E55).
//!
//! The tree is the broadcast's (`BinomialTree`, relative rank v = (r − root) mod k):
//! in step s (0-based) every v < c = 2^{L−1−s} that holds data passes to v + c (when
//! below k) the blocks of v + c's subtree, the relative ranks [v + c, v + c + min(c,
//! k − v − c)). Every subtree is a contiguous range of relative ranks, as in MPICH: an
//! inner node keeps its subtree's blocks in `tmp` in relative order, so each of its
//! messages is one region; the root sends straight from `in`, where the range is one
//! region or two when it wraps past rank k − 1 (MPICH copies the root's buffer into
//! relative order first instead). Leaves receive into `out`.
//!
//! Cost: L = ⌈log₂k⌉ steps (one step of the local copy when k = 1, none when m = 0). In
//! step s the largest message is the root's, min(2^{L−1−s}, k − 2^{L−1−s}) blocks, and
//! these sum to k − 1; no node sends and receives in one step or sends twice, so
//! Lβ + (k − 1)mτ under every port and duplex rule. Volume Σ_v (depth of v)·m.
//!
//! Constraints: `complete:K`, any K ≥ 1, any root.

use smallvec::smallvec;

use crate::algorithms::broadcast::binomial::{ceil_log2, complete_ranks, tree_steps, BinomialTree};
use crate::algorithms::{Formula, Params};
use crate::collective::{Collective, OpKind};
use crate::error::Error;
use crate::schedule::{Action, Buf, Op, Program, Rank, Region, Regions, Schedule};
use crate::verify::Problem;

/// The binomial scatter schedule.
#[derive(Clone, Debug)]
pub struct BinomialScatter {
    k: u32,
    root: Rank,
    m: u64,
}

/// The regions of `buf` (k blocks of m elements in rank order) that hold the relative
/// ranks [v, v + n) of a tree rooted at `root`, in relative order: one region, or two
/// when the absolute ranks wrap past k − 1.
pub(crate) fn wrapped(buf: Buf, k: u32, root: Rank, v: u32, n: u32, m: u64) -> Regions {
    let start = (v + root) % k;
    let first = n.min(k - start);
    let mut regions: Regions = smallvec![Region::new(buf, start as u64 * m, first as u64 * m)];
    if first < n {
        regions.push(Region::new(buf, 0, (n - first) as u64 * m));
    }
    regions
}

fn params(problem: &Problem<'_>) -> Result<(u32, Rank), Error> {
    let k = complete_ranks(problem, "binomial", OpKind::Scatter)?;
    match problem.collective {
        Collective::Scatter { root } => Ok((k, root)),
        _ => unreachable!("complete_ranks checked the kind"),
    }
}

/// Build the schedule.
pub fn build(problem: &Problem<'_>, _params: &Params) -> Result<Box<dyn Schedule>, Error> {
    let (k, root) = params(problem)?;
    Ok(Box::new(BinomialScatter {
        k,
        root,
        m: problem.len,
    }))
}

impl Schedule for BinomialScatter {
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
        let levels = tree.levels();
        let v = (rank + k - root) % k;
        let abs = |u: u32| (u + root) % k;
        let out = Region::new(Buf::Out, 0, m);
        let size = tree.subtree(v);
        // Where this node keeps the blocks of relative ranks [v + d, v + d + n).
        let held = |d: u32, n: u32| -> Regions {
            if v == 0 {
                wrapped(Buf::In, k, root, d, n, m)
            } else if size == 1 {
                smallvec![out]
            } else {
                smallvec![Region::new(Buf::Tmp, d as u64 * m, n as u64 * m)]
            }
        };
        match tree.parent(v) {
            None => prog.push(0, Op::copy(held(0, 1)[0], out)),
            Some(p) => {
                // Step L − 1 − j: the parent's edge spans 2^j.
                let step = (levels - 1 - tree.level(v)) as usize;
                prog.push(
                    step,
                    Op::Recv {
                        from: abs(p),
                        into: held(0, size),
                        action: Action::Place,
                    },
                );
                if size > 1 {
                    prog.tmp_len = size as u64 * m;
                    prog.push(step, Op::copy(held(0, 1)[0], out));
                }
            }
        }
        for (i, c) in tree.children(v) {
            prog.push(
                (levels - 1 - i) as usize,
                Op::Send {
                    to: smallvec![abs(c)],
                    from: held(c - v, tree.subtree(c)),
                },
            );
        }
        prog
    }
}

/// The binomial scatter's and gather's time: ⌈log₂k⌉β + (k − 1)mτ.
pub(crate) fn tree_time(k: u32, m: u64, params: &Params) -> f64 {
    if m == 0 {
        return 0.0;
    }
    let (beta, tau) = (params.model.beta(), params.model.tau());
    ceil_log2(k) as f64 * beta + (k - 1) as f64 * m as f64 * tau
}

/// ⌈log₂k⌉β + (k − 1)mτ, under every port and duplex rule.
pub fn formulas(problem: &Problem<'_>, params_: &Params) -> Vec<Formula> {
    let Ok((k, _)) = params(problem) else {
        return vec![];
    };
    let mut v = vec![Formula::exact(
        "⌈log₂k⌉β + (k − 1)mτ",
        "Thakur, Rabenseifner & Gropp 2005, binomial scatter: lg p α + ((p − 1)/p)nβ; Saad & Schultz 1986 (seed 004), (3.41)",
        tree_time(k, problem.len, params_),
    )];
    if k >= 2 && k.is_power_of_two() && problem.len > 0 {
        let (beta, tau) = (params_.model.beta(), params_.model.tau());
        v.push(Formula::upper_bound(
            "(log₂k)τ_S + N/b_S as printed (3.41), N = km",
            "Saad & Schultz 1986 (seed 004), §3.4 (F), eq. (3.41)",
            (k as f64).log2() * beta + (k as u64 * problem.len) as f64 * tau,
        ));
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::algorithms::broadcast::binomial::test_support::*;

    #[test]
    fn verifies_for_every_rank_count_and_root() {
        check_all(OpKind::Scatter, "binomial", &[0, 1, 7], false);
    }

    #[test]
    fn refuses_a_hypercube() {
        refuses_hypercube(OpKind::Scatter, "binomial");
    }

    #[test]
    fn messages_have_at_most_two_regions() {
        for k in ranks() {
            for root in 0..k {
                let s = BinomialScatter { k, root, m: 3 };
                for r in 0..k {
                    for op in s.program(r).steps.into_iter().flat_map(|s| s.ops) {
                        if let Op::Send { from, .. } = op {
                            assert!(from.len() <= 2, "k = {k}, root {root}, rank {r}");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn wrapped_ranges_split_at_the_last_rank() {
        assert_eq!(
            wrapped(Buf::In, 5, 3, 1, 3, 2).to_vec(),
            [Region::new(Buf::In, 8, 2), Region::new(Buf::In, 0, 4)]
        );
        assert_eq!(
            wrapped(Buf::In, 5, 3, 2, 3, 2).to_vec(),
            [Region::new(Buf::In, 0, 6)]
        );
    }
}
