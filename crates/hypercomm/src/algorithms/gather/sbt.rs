//! Gather over the spanning binomial tree: the scatter with every data path reversed.
//!
//! Reference: Saad & Schultz 1985 (YALEU/DCS/RR-428), §5, Hypercube Gather Algorithm:
//! t_HG = Σ_{j=1}^{n} (β + 2^{j−1}mτ) = nβ + (2^n − 1)mτ, eq. (5.1). (The paper's
//! statement of the gather writes nodes "0^{n−j}a_j" with a (j − 1)-bit a_j, one bit
//! short; docs/errata.md.)
//!
//! Step j (0-based) crosses dimension j: every node whose subtree is complete sends it,
//! 2^j blocks, to its parent. Subtrees are those of [`super::super::scatter::sbt`], so each
//! message is one contiguous range and the root assembles `out` in rank order.
//!
//! Cost: n steps, nβ + (2^n − 1)mτ under every port and duplex rule. Volume n·2^{n−1}·m.
//!
//! Constraints: hypercube.

use crate::algorithms::fit::{self, Built};
use crate::algorithms::scatter::sbt::{formula, steps, subtree, ORDER};
use crate::algorithms::{Formula, Params};
use crate::collective::Collective;
use crate::error::Error;
use crate::schedule::{Buf, Op, Program, Rank, Region, Schedule};
use crate::topology::Hypercube;
use crate::verify::Problem;

/// The SBT gather schedule.
#[derive(Clone, Debug)]
pub struct SbtGather {
    cube: Hypercube,
    root: Rank,
    m: u64,
}

fn params(problem: &Problem<'_>, cube: Hypercube) -> Result<(Hypercube, Rank), Error> {
    match problem.collective {
        Collective::Gather { root } => Ok((cube, root)),
        other => Err(Error::InvalidParameter {
            what: "--op",
            reason: format!("this sbt performs gather, not {other}"),
        }),
    }
}

/// Build the schedule.
pub fn build(problem: &Problem<'_>, _params: &Params, cube: &Hypercube) -> Built {
    let (cube, root) = params(problem, *cube)?;
    Ok(Box::new(SbtGather {
        cube,
        root,
        m: problem.len,
    }))
}

impl Schedule for SbtGather {
    fn nodes(&self) -> u32 {
        self.cube.nodes()
    }
    fn steps(&self) -> usize {
        steps(&self.cube, self.m)
    }
    fn program(&self, rank: Rank) -> Program {
        let mut prog = Program::new(rank, self.steps());
        prog.tmp_len = push_gather(&mut prog, &self.cube, self.root, self.m, 0, 0);
        prog
    }
    fn program_into(&self, rank: Rank, out: &mut Program) {
        out.reset(rank, self.steps());
        out.tmp_len = push_gather(out, &self.cube, self.root, self.m, 0, 0);
    }
}

/// Append to `prog` (of rank `prog.rank`) its part of the SBT gather to `root` of the
/// `m` elements at `in[input..input + m]` of every rank, in the `steps(cube, m)` steps
/// from `first`: the root assembles the blocks in rank order in `out[0..2^n·m]`, inner
/// nodes collect their subtree's in `tmp` from 0. Returns the `tmp` length it needs.
/// (Sequential multi-gather, `alltoall/smg.rs`, runs one such gather per root.)
pub(crate) fn push_gather(
    prog: &mut Program,
    c: &Hypercube,
    root: Rank,
    m: u64,
    first: usize,
    input: u64,
) -> u64 {
    let rank = prog.rank;
    let total = steps(c, m);
    if m == 0 {
        return 0;
    }
    // Gather step of a scatter step s: the paths are reversed in time.
    let mirror = |scatter_step: u32| first + total - scatter_step as usize;
    let (base, size) = subtree(c, rank, root);
    let (held, origin) = if rank == root {
        (Buf::Out, 0)
    } else if size == 1 {
        (Buf::In, base)
    } else {
        (Buf::Tmp, base)
    };
    // A leaf holds only its own block, at `input` in `in`.
    let at = |block: u64, blocks: u64| match held {
        Buf::In => Region::new(Buf::In, input, m),
        _ => Region::new(held, (block - origin) * m, blocks * m),
    };
    if held != Buf::In {
        prog.push(
            first,
            Op::copy(Region::new(Buf::In, input, m), at(rank as u64, 1)),
        );
    }
    for child in c.sbt_children_iter(rank, root, ORDER) {
        let (cb, cs) = subtree(c, child, root);
        prog.push(
            mirror(c.sbt_step(child, root, ORDER)),
            Op::recv(child, at(cb, cs)),
        );
    }
    if let Some(parent) = c.sbt_parent(rank, root, ORDER) {
        prog.push(
            mirror(c.sbt_step(rank, root, ORDER)),
            Op::send(parent, at(base, size)),
        );
    }
    tmp_len(c, rank, root, m)
}

/// The `tmp` length [`push_gather`] needs at `rank` for a gather to `root`: an inner
/// node other than the root collects its subtree's blocks there.
pub(crate) fn tmp_len(c: &Hypercube, rank: Rank, root: Rank, m: u64) -> u64 {
    let (_, size) = subtree(c, rank, root);
    if m == 0 || rank == root || size == 1 {
        0
    } else {
        size * m
    }
}

/// nβ + (2^n − 1)mτ (§5, eq. 5.1), under every port and duplex rule.
pub fn formulas(problem: &Problem<'_>, params_: &Params) -> Vec<Formula> {
    let Some(Ok((cube, _))) = fit::cube_of(problem).map(|c| params(problem, c)) else {
        return vec![];
    };
    let mut f = formula(&cube, problem.len, params_);
    f.reference = "Saad & Schultz 1985, §5, Hypercube Gather (t_HG), eq. (5.1)";
    vec![f]
}
