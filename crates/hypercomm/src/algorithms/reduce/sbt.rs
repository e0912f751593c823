//! Reduction to one root over the spanning binomial tree: the gather of §5 with every
//! concatenation replaced by the operator.
//!
//! Reference: Saad & Schultz 1985 (YALEU/DCS/RR-428), §5. The section's motivating
//! example is a sum of partial inner products, done there by gathering the k values to
//! one node and adding them in it: nβ + (k − 1)mτ (eq. 5.1). Combining on the way
//! instead — the Hypercube Gather's data paths with the operator in place of
//! concatenation — moves one vector of m elements per step: t = n(β + mτ) (plus the
//! arithmetic, which the model leaves out).
//!
//! The tree is [`crate::algorithms::gather::sbt`]'s (descending: a node's parent clears
//! the lowest set bit of its label relative to the root, and step j crosses dimension j).
//! Before step j a node whose relative label has no set bit below j holds
//! the combination, in rank order, of the aligned range of 2^j ranks through it; its
//! child across dimension j holds the adjacent range. So the child's value combines on
//! the left when the node's bit j is set (the child's ranks are lower) and on the right
//! otherwise, and the root ends with in_0 ⊕ … ⊕ in_{k−1} in rank order whatever the
//! root: correct for non-commutative operators.
//!
//! Buffers: the root accumulates in `out`, other inner nodes in `tmp`; leaves send `in`.
//! The accumulator is written first by a receive (step 0, from the child across
//! dimension 0, which every inner node has), then `in` is combined into it locally.
//!
//! Cost: n steps (one step of local copies when n = 0, none when m = 0); in each step a
//! node sends one message of m elements or receives one, never both: n(β + mτ) under
//! every port and duplex rule. Volume (2^n − 1)m, one message per non-root node.
//!
//! Constraints: hypercube; any associative operator.

use crate::algorithms::allreduce::dimension_exchange::{own_side, reduction_cube, side};
use crate::algorithms::fit::{self, Built};
use crate::algorithms::scatter::sbt::{steps, ORDER};
use crate::algorithms::{Formula, Params};
use crate::collective::{Collective, OpKind};
use crate::error::Error;
use crate::schedule::{Buf, Op, Program, Rank, Region, Schedule};
use crate::topology::Hypercube;
use crate::verify::Problem;

/// The SBT reduce schedule.
#[derive(Clone, Debug)]
pub struct SbtReduce {
    cube: Hypercube,
    root: Rank,
    m: u64,
}

fn params(problem: &Problem<'_>, cube: Hypercube) -> Result<(Hypercube, Rank), Error> {
    let cube = reduction_cube(problem, cube, "sbt", OpKind::Reduce)?;
    match problem.collective {
        Collective::Reduce { root } => Ok((cube, root)),
        _ => unreachable!("reduction_cube checked the kind"),
    }
}

/// Build the schedule.
pub fn build(problem: &Problem<'_>, _params: &Params, cube: &Hypercube) -> Built {
    let (cube, root) = params(problem, *cube)?;
    Ok(Box::new(SbtReduce {
        cube,
        root,
        m: problem.len,
    }))
}

impl Schedule for SbtReduce {
    fn nodes(&self) -> u32 {
        self.cube.nodes()
    }
    fn steps(&self) -> usize {
        steps(&self.cube, self.m)
    }
    fn program(&self, rank: Rank) -> Program {
        let (c, root, m) = (&self.cube, self.root, self.m);
        let mut prog = Program::new(rank, self.steps());
        if m == 0 {
            return prog;
        }
        let input = Region::new(Buf::In, 0, m);
        let parent = c.sbt_parent(rank, root, ORDER);
        // Children across dimensions 0, 1, … (sbt_children lists them descending).
        let mut children = c.sbt_children(rank, root, ORDER);
        children.reverse();
        let acc = match (parent, children.is_empty()) {
            (None, true) => {
                // The root of the 0-cube.
                prog.push(0, Op::copy(input, Region::new(Buf::Out, 0, m)));
                return prog;
            }
            (None, false) => Region::new(Buf::Out, 0, m),
            (Some(_), false) => {
                prog.tmp_len = m;
                Region::new(Buf::Tmp, 0, m)
            }
            (Some(_), true) => input,
        };
        for (j, &child) in children.iter().enumerate() {
            // Step j: the child across dimension j sends its subtree's combination.
            if j == 0 {
                prog.push(j, Op::recv(child, acc));
                prog.push(
                    j,
                    Op::Local {
                        from: input,
                        into: acc,
                        action: own_side(rank, child),
                    },
                );
            } else {
                prog.push(
                    j,
                    Op::Recv {
                        from: child,
                        into: smallvec::smallvec![acc],
                        action: side(rank, child),
                    },
                );
            }
        }
        if let Some(parent) = parent {
            // The step crossing the dimension of the lowest set bit of the relative label.
            prog.push(children.len(), Op::send(parent, acc));
        }
        prog
    }
}

/// n(β + mτ), under every port and duplex rule.
pub fn formulas(problem: &Problem<'_>, params_: &Params) -> Vec<Formula> {
    let Some(Ok((cube, _))) = fit::cube_of(problem).map(|c| params(problem, c)) else {
        return vec![];
    };
    let (n, m) = (cube.dim() as f64, problem.len as f64);
    let value = if problem.len == 0 {
        0.0
    } else {
        n * (params_.model.beta() + m * params_.model.tau())
    };
    vec![Formula::exact(
        "n(β + mτ)",
        "Saad & Schultz 1985, §5, Hypercube Gather with combining (one vector per step)",
        value,
    )]
}

#[cfg(test)]
mod tests {
    use super::*;
    /// `build` with the cube found first, as the registry hands it.
    fn build(problem: &Problem<'_>, params: &Params) -> crate::algorithms::fit::Built {
        crate::algorithms::fit::on_cube(super::build, problem, params)
    }
    use crate::algorithms::allreduce::dimension_exchange::test_support::*;

    fn roots(n: u32) -> Vec<Collective> {
        (0..1 << n)
            .map(|root| Collective::Reduce { root })
            .collect()
    }

    #[test]
    fn verifies_in_rank_order_for_every_cube_up_to_7_and_every_root() {
        verify_all(build, roots);
    }

    #[test]
    fn a_combine_on_the_wrong_side_is_caught() {
        // Root 5 of the 3-cube: its own input after rank 4's, then ranks 6..7 on the
        // right, then ranks 0..3 on the left.
        for nth in 0..3 {
            flipped_is_caught(build, Collective::Reduce { root: 5 }, 3, (5, nth));
        }
        // An inner node (relative label 4): rank 0 below it, then ranks 2..3 above it.
        for nth in 0..2 {
            flipped_is_caught(build, Collective::Reduce { root: 5 }, 3, (1, nth));
        }
        // Root 0: rank 1's value combines on the right.
        flipped_is_caught(build, Collective::Reduce { root: 0 }, 3, (0, 0));
    }

    #[test]
    fn forms_hold_under_every_model() {
        for n in 0..=6 {
            for c in roots(n) {
                for m in [0, 1, 7] {
                    for (ports, duplex, _, forms) in timed(build, formulas, c, n, m) {
                        assert!(has_exact(&forms, "n(β + mτ)"), "{ports}/{duplex}");
                    }
                }
            }
        }
    }
}
