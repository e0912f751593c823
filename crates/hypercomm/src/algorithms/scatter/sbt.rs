//! Scatter over the spanning binomial tree.
//!
//! Reference: Saad & Schultz 1985 (YALEU/DCS/RR-428), §5, Hypercube Scatter Algorithm
//! and Prop. 5.1, eq. (5.1): t = nβ + (2^n − 1)mτ.
//!
//! Step j (0-based) crosses dimension n − 1 − j: a node passes to its child the blocks
//! of the child's subtree, half of what it holds. The paper crosses dimensions in
//! ascending order (blocks "whose labels end with the bit one"); we cross them in
//! descending order, the same tree up to the bit-reversal automorphism and the same
//! cost, so that every subtree's blocks form one contiguous range of the root's buffer
//! (as MPICH's binomial scatter does) and each message is a single region.
//!
//! Cost: n steps; step j moves 2^{n−1−j} blocks; no node sends twice or sends and
//! receives in one step, so nβ + (2^n − 1)mτ holds under every port and duplex rule.
//! Volume n·2^{n−1}·m (each block crosses its Hamming distance to the root).
//!
//! Constraints: hypercube.

use crate::algorithms::fit::{self, Built};
use crate::algorithms::{Formula, Params};
use crate::collective::Collective;
use crate::error::Error;
use crate::schedule::{Buf, Op, Program, Rank, Region, Schedule};
use crate::topology::{DimOrder, Hypercube};
use crate::verify::Problem;

/// The tree both the scatter and the gather use.
pub(crate) const ORDER: DimOrder = DimOrder::Descending;

/// The SBT scatter schedule.
#[derive(Clone, Debug)]
pub struct SbtScatter {
    cube: Hypercube,
    root: Rank,
    m: u64,
}

/// First absolute block of `node`'s subtree and its size: the subtree's relative labels
/// are the aligned range [r, r + size), whose image under XOR with the root is the
/// aligned range [(node & !(size − 1)), + size) of absolute labels.
pub(crate) fn subtree(cube: &Hypercube, node: Rank, root: Rank) -> (u64, u64) {
    let size = cube.sbt_subtree_size(node, root, ORDER) as u64;
    ((node as u64) & !(size - 1), size)
}

fn params(problem: &Problem<'_>, cube: Hypercube) -> Result<(Hypercube, Rank), Error> {
    match problem.collective {
        Collective::Scatter { root } | Collective::Gather { root } => Ok((cube, root)),
        other => Err(Error::InvalidParameter {
            what: "--op",
            reason: format!("this sbt performs scatter or gather, not {other}"),
        }),
    }
}

/// Build the schedule.
pub fn build(problem: &Problem<'_>, _params: &Params, cube: &Hypercube) -> Built {
    let (cube, root) = params(problem, *cube)?;
    Ok(Box::new(SbtScatter {
        cube,
        root,
        m: problem.len,
    }))
}

/// Steps of both the scatter and the gather: n, at least 1 (the root's own block).
pub(crate) fn steps(cube: &Hypercube, m: u64) -> usize {
    if m == 0 {
        0
    } else {
        (cube.dim() as usize).max(1)
    }
}

impl Schedule for SbtScatter {
    fn nodes(&self) -> u32 {
        self.cube.nodes()
    }
    fn steps(&self) -> usize {
        steps(&self.cube, self.m)
    }
    fn program(&self, rank: Rank) -> Program {
        let mut prog = Program::new(rank, self.steps());
        self.fill(&mut prog);
        prog
    }
    fn program_into(&self, rank: Rank, out: &mut Program) {
        out.reset(rank, self.steps());
        self.fill(out);
    }
}

impl SbtScatter {
    /// Write the program of `prog.rank` into `prog`, an empty program of `steps()`
    /// steps.
    fn fill(&self, prog: &mut Program) {
        let rank = prog.rank;
        let (c, root, m) = (&self.cube, self.root, self.m);
        if m == 0 {
            return;
        }
        let (base, size) = subtree(c, rank, root);
        // Where this node keeps its subtree's blocks, in absolute order.
        let (held, first) = if rank == root {
            (Buf::In, 0)
        } else if size == 1 {
            (Buf::Out, base)
        } else {
            prog.tmp_len = size * m;
            (Buf::Tmp, base)
        };
        let at = |block: u64, blocks: u64| Region::new(held, (block - first) * m, blocks * m);
        if let Some(parent) = c.sbt_parent(rank, root, ORDER) {
            let step = c.sbt_step(rank, root, ORDER) as usize - 1;
            prog.push(step, Op::recv(parent, at(base, size)));
            if held == Buf::Tmp {
                prog.push(
                    step,
                    Op::copy(at(rank as u64, 1), Region::new(Buf::Out, 0, m)),
                );
            }
        } else {
            prog.push(0, Op::copy(at(rank as u64, 1), Region::new(Buf::Out, 0, m)));
        }
        for child in c.sbt_children_iter(rank, root, ORDER) {
            let (cb, cs) = subtree(c, child, root);
            prog.push(
                c.sbt_step(child, root, ORDER) as usize - 1,
                Op::send(child, at(cb, cs)),
            );
        }
    }
}

/// nβ + (2^n − 1)mτ (Prop. 5.1, eq. 5.1), under every port and duplex rule.
pub fn formulas(problem: &Problem<'_>, params_: &Params) -> Vec<Formula> {
    let Some(Ok((cube, _))) = fit::cube_of(problem).map(|c| params(problem, c)) else {
        return vec![];
    };
    vec![formula(&cube, problem.len, params_)]
}

pub(crate) fn formula(cube: &Hypercube, m: u64, params: &Params) -> Formula {
    let n = cube.dim() as u64;
    let (beta, tau) = (params.model.beta(), params.model.tau());
    let value = if m == 0 {
        0.0
    } else {
        n as f64 * beta + ((1u64 << n) - 1) as f64 * m as f64 * tau
    };
    Formula::exact(
        "nβ + (2^n − 1)mτ",
        "Saad & Schultz 1985, §5, Prop. 5.1, eq. (5.1)",
        value,
    )
}
