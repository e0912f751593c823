//! Reduction to one root over the binomial tree, for any number of ranks: the binomial
//! gather with every concatenation replaced by the operator.
//!
//! Reference: Thakur, Rabenseifner & Gropp, "Optimization of Collective Communication
//! Operations in MPICH", IJHPCA 19(1), 2005, the reduce section: the binomial tree for
//! short messages, lg p·(α + nβ + nγ) (MPICH's `MPIR_Reduce_intra_binomial`); Chan et
//! al., CCPE 19(13), 2007, the minimum-spanning-tree reduce.
//!
//! The tree is `BinomialTree`'s: in step i (0-based) every tree rank u whose lowest
//! set bit is i sends the combination of its subtree, the ranks [u, u + min(2^i, k −
//! u)), to u − 2^i, which holds the combination of [u − 2^i, u) and so combines what
//! arrives on the right. Like MPICH:
//! - with a commutative operator the tree is on ranks relative to the root, u = (r −
//!   root) mod k, and the root ends with the result;
//! - with a non-commutative one a relative range may wrap past rank k − 1, out of rank
//!   order, so the tree is on the ranks themselves (tree root 0) and, when the root is
//!   not 0, rank 0 sends the result to the root in one more step. Every combination is
//!   then in rank order.
//!
//! Buffers: the accumulator is `out` at the root when it is the tree's root, `tmp` at
//! other inner nodes; leaves send `in`. It is written first by a receive (step 0, from
//! u + 1, which every inner node has), then `in` is combined into it on the left.
//!
//! Cost: L = ⌈log₂k⌉ steps, plus one with a non-commutative operator and a root other
//! than 0 (one step of the local copy when k = 1, none when m = 0). In each step a node
//! receives one message of m elements or sends one, never both, and the tree's root
//! receives in every step: L(β + mτ), or (L + 1)(β + mτ), under every port and duplex
//! rule. Volume (k − 1)m, or km.
//!
//! Constraints: `complete:K`, any K ≥ 1, any root; any associative operator.

use crate::algorithms::broadcast::binomial::{ceil_log2, complete_ranks, BinomialTree};
use crate::algorithms::{Formula, Params};
use crate::collective::{Collective, OpKind};
use crate::error::Error;
use crate::schedule::{Action, Buf, Op, Program, Rank, Region, Schedule};
use crate::verify::Problem;

/// The binomial reduce schedule.
#[derive(Clone, Debug)]
pub struct BinomialReduce {
    k: u32,
    root: Rank,
    m: u64,
    /// The tree's root: `root` for a commutative operator, else 0.
    tree_root: Rank,
}

fn params(problem: &Problem<'_>) -> Result<(u32, Rank), Error> {
    let k = complete_ranks(problem, "binomial", OpKind::Reduce)?;
    match problem.collective {
        Collective::Reduce { root } => Ok((k, root)),
        _ => unreachable!("complete_ranks checked the kind"),
    }
}

/// Build the schedule.
pub fn build(problem: &Problem<'_>, _params: &Params) -> Result<Box<dyn Schedule>, Error> {
    let (k, root) = params(problem)?;
    Ok(Box::new(BinomialReduce {
        k,
        root,
        m: problem.len,
        tree_root: if problem.commutative { root } else { 0 },
    }))
}

impl BinomialReduce {
    /// Whether rank 0 sends the result to the root after the tree.
    fn forwards(&self) -> bool {
        self.tree_root != self.root
    }
}

impl Schedule for BinomialReduce {
    fn nodes(&self) -> u32 {
        self.k
    }
    fn steps(&self) -> usize {
        if self.m == 0 {
            0
        } else {
            (ceil_log2(self.k) as usize + usize::from(self.forwards())).max(1)
        }
    }
    fn program(&self, rank: Rank) -> Program {
        let (k, m) = (self.k, self.m);
        let mut prog = Program::new(rank, self.steps());
        if m == 0 {
            return prog;
        }
        let tree = BinomialTree::new(k);
        let u = (rank + k - self.tree_root) % k;
        let abs = |w: u32| (w + self.tree_root) % k;
        let input = Region::new(Buf::In, 0, m);
        let out = Region::new(Buf::Out, 0, m);
        let mut children = tree.children(u).peekable();
        let acc = match (tree.parent(u), children.peek().is_some()) {
            (None, false) => {
                // The only rank.
                prog.push(0, Op::copy(input, out));
                return prog;
            }
            (None, true) if rank == self.root => out,
            (_, true) => {
                prog.tmp_len = m;
                Region::new(Buf::Tmp, 0, m)
            }
            (Some(_), false) => input,
        };
        for (i, c) in children {
            // Step i: the child across 2^i sends the combination of its subtree.
            if i == 0 {
                prog.push(0, Op::recv(abs(c), acc));
                prog.push(
                    0,
                    Op::Local {
                        from: input,
                        into: acc,
                        action: Action::CombineLeft,
                    },
                );
            } else {
                prog.push(
                    i as usize,
                    Op::Recv {
                        from: abs(c),
                        into: smallvec::smallvec![acc],
                        action: Action::CombineRight,
                    },
                );
            }
        }
        match tree.parent(u) {
            Some(p) => prog.push(tree.level(u) as usize, Op::send(abs(p), acc)),
            None if self.forwards() => {
                prog.push(tree.levels() as usize, Op::send(self.root, acc));
            }
            None => {}
        }
        if self.forwards() && rank == self.root {
            prog.push(tree.levels() as usize, Op::recv(self.tree_root, out));
        }
        prog
    }
}

/// ⌈log₂k⌉(β + mτ) with a commutative operator or root 0, (⌈log₂k⌉ + 1)(β + mτ)
/// otherwise; under every port and duplex rule.
pub fn formulas(problem: &Problem<'_>, params_: &Params) -> Vec<Formula> {
    let Ok((k, root)) = params(problem) else {
        return vec![];
    };
    let (beta, tau) = (params_.model.beta(), params_.model.tau());
    let one = beta + problem.len as f64 * tau;
    let l = ceil_log2(k) as f64;
    let value = |steps: f64| if problem.len == 0 { 0.0 } else { steps * one };
    vec![if problem.commutative || root == 0 {
        Formula::exact(
            "⌈log₂k⌉(β + mτ)",
            "Thakur, Rabenseifner & Gropp 2005, reduce: binomial tree, lg p(α + nβ)",
            value(l),
        )
    } else {
        Formula::exact(
            "(⌈log₂k⌉ + 1)(β + mτ)",
            "MPICH MPIR_Reduce_intra_binomial, non-commutative: tree on rank 0, then to the root",
            value(l + 1.0),
        )
    }]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::algorithms::broadcast::binomial::test_support::*;
    use crate::algorithms::find;
    use crate::cost::{model::Model, simulate};
    use crate::topology::Topology;
    use crate::verify::{verify, Strictness};

    #[test]
    fn verifies_in_rank_order_for_every_rank_count_and_root() {
        check_all(OpKind::Reduce, "binomial", &[0, 1, 7], true);
    }

    #[test]
    fn a_combine_on_the_wrong_side_is_caught() {
        // Root 0 of 6 ranks: its input left of rank 1's, then ranks 2..3 and 4..5 right.
        for nth in 0..3 {
            flipped_is_caught("binomial", Collective::Reduce { root: 0 }, 6, 0, nth);
        }
        // An inner node, rank 8 of 12 with root 3 (the tree is on rank 0): its input
        // left of rank 9's, then ranks 10..11 right.
        for nth in 0..2 {
            flipped_is_caught("binomial", Collective::Reduce { root: 3 }, 12, 8, nth);
        }
    }

    #[test]
    fn refuses_a_hypercube() {
        refuses_hypercube(OpKind::Reduce, "binomial");
    }

    #[test]
    fn non_commutative_forms_hold_and_cost_one_more_step_off_rank_0() {
        let algo = find(OpKind::Reduce, "binomial").unwrap();
        for k in ranks() {
            let topo = Topology::complete(k);
            for root in 0..k {
                let problem = Problem {
                    topology: &topo,
                    collective: Collective::Reduce { root },
                    len: 7,
                    commutative: false,
                    counts: None,
                };
                let s = algo.build(&problem, &Params::default()).unwrap();
                verify(problem, s.as_ref(), Strictness::default()).unwrap();
                let model = Model::new(0.7, 0.13).unwrap();
                let time = simulate(&topo, s.as_ref(), &model).time;
                let steps = ceil_log2(k) + u32::from(root != 0 && k > 1);
                assert!((time - steps as f64 * (0.7 + 7.0 * 0.13)).abs() < 1e-9);
                for f in algo.formulas(
                    &problem,
                    &Params {
                        model,
                        ..Params::default()
                    },
                ) {
                    assert!(f.holds_for(time), "k = {k}, root {root}: {}", f.expr);
                }
            }
        }
    }
}
