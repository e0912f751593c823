//! Broadcast over n edge-disjoint spanning binomial trees (ESBT), pipelined.
//!
//! Reference: Johnsson & Ho, "Optimum broadcasting and personalized communication in
//! hypercubes", IEEE TC 38(9), 1989; seed 001, "ESBT-broadcast". The source splits the
//! message into ν chunks and sends chunk c to the root s ⊕ e_{c mod n} of tree c mod n
//! in step c; each tree forwards its chunks level by level. The trees are
//! [`Hypercube::esbt_parent`]'s: pairwise disjoint as directed edges, so every link
//! carries at most one chunk per step.
//!
//! Cost (rounds model, `--ports all`, full duplex): the deepest node is n + 1 hops from
//! the source (n ≥ 2), so ν + n steps of β + ⌈m/ν⌉τ: T = (ν + n)(β + ⌈m/ν⌉τ), as seed
//! 001's T(n, p, k) = (n/k·T_byte + T_start)(k + d). Optimum at ν* = √(nmτ/β):
//! T* = (√(mτ) + √(nβ))² = mτ + nβ + 2√(nmβτ); seed 001 drops the 2 (docs/errata.md).
//! Volume: every chunk reaches every node once, (2^n − 1)m.
//!
//! Under `--duplex half-link` (seed 004's hypercube model E) no closed form is claimed:
//! the trees cross some links both ways in the same step, which a link of one
//! direction at a time serialises; the simulator charges it (and `sbt` keeps its form
//! there, its links carrying one direction).
//!
//! Constraints: hypercube; 1 ≤ ν ≤ max(m, 1); for n = 1 it is a plain pipeline.

use crate::algorithms::fit::{self, Built};
use crate::algorithms::pipeline;
use crate::algorithms::{Formula, Packets, Params};
use crate::collective::Collective;
use crate::cost::model::{Duplex, Ports};
use crate::error::Error;
use crate::schedule::{Buf, Op, Program, Rank, Region, Schedule};
use crate::topology::Hypercube;
use crate::verify::Problem;
use smallvec::SmallVec;

/// The ESBT broadcast schedule.
#[derive(Clone, Debug)]
pub struct EsbtBroadcast {
    cube: Hypercube,
    root: Rank,
    m: u64,
    nu: u64,
}

fn root_of(problem: &Problem<'_>, cube: Hypercube) -> Result<(Hypercube, Rank), Error> {
    match problem.collective {
        Collective::Broadcast { root } => Ok((cube, root)),
        other => Err(Error::InvalidParameter {
            what: "--op",
            reason: format!("esbt performs broadcast, not {other}"),
        }),
    }
}

/// Hops from the source to the deepest node: n + 1 for n ≥ 2, n otherwise.
fn depth(n: u64) -> u64 {
    if n >= 2 {
        n + 1
    } else {
        n
    }
}

/// Build the schedule.
pub fn build(problem: &Problem<'_>, params: &Params, cube: &Hypercube) -> Built {
    let (cube, root) = root_of(problem, *cube)?;
    let nu = pipeline::resolve(params, problem.len, depth(cube.dim() as u64))?;
    Ok(Box::new(EsbtBroadcast {
        cube,
        root,
        m: problem.len,
        nu,
    }))
}

impl Schedule for EsbtBroadcast {
    fn packets(&self) -> Option<u64> {
        Some(self.nu)
    }
    fn nodes(&self) -> u32 {
        self.cube.nodes()
    }
    fn steps(&self) -> usize {
        if self.m == 0 {
            0
        } else {
            (self.nu + depth(self.cube.dim() as u64))
                .saturating_sub(1)
                .max(1) as usize
        }
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

impl EsbtBroadcast {
    /// Write the program of `prog.rank` into `prog`, an empty program of `steps()`
    /// steps.
    fn fill(&self, prog: &mut Program) {
        let rank = prog.rank;
        if self.m == 0 {
            return;
        }
        let (c, root, m) = (&self.cube, self.root, self.m);
        let n = c.dim() as u64;
        if rank == root {
            prog.push(
                0,
                Op::copy(Region::new(Buf::In, 0, m), Region::new(Buf::Out, 0, m)),
            );
        }
        if n == 0 {
            return;
        }
        let src = if rank == root { Buf::In } else { Buf::Out };
        // This rank's children in the chunk's tree, recomputed per chunk into one list
        // on the stack (n ≤ 32): no allocation per rank.
        let mut children: SmallVec<[Rank; 32]> = SmallVec::new();
        for chunk in 0..self.nu {
            let (off, len) = pipeline::packet(m, self.nu, chunk);
            let t = (chunk % n) as u32;
            let parent = c.esbt_parent(t, rank, root);
            let d = c.esbt_depth(t, rank, root) as u64;
            let to: &[Rank] = if rank == root {
                children.clear();
                children.push(root ^ (1 << t));
                &children
            } else {
                c.esbt_children_in(t, rank, root, &mut children);
                &children
            };
            if let Some(p) = parent {
                prog.push(
                    (chunk + d - 1) as usize,
                    Op::recv(p, Region::new(Buf::Out, off, len)),
                );
            }
            if !to.is_empty() {
                prog.push(
                    (chunk + d) as usize,
                    Op::multicast(to.iter().copied(), Region::new(src, off, len)),
                );
            }
        }
    }
}

/// (ν + n)(β + ⌈m/ν⌉τ) under all ports, full duplex (seed 001, "Runtime"), and the
/// corrected optimum (√(mτ) + √(nβ))² with `--packets opt`.
pub fn formulas(problem: &Problem<'_>, params: &Params) -> Vec<Formula> {
    let Some(Ok((cube, _))) = fit::cube_of(problem).map(|c| root_of(problem, c)) else {
        return vec![];
    };
    if params.model.ports != Ports::All || params.model.duplex != Duplex::Full {
        return vec![];
    }
    let (n, m) = (cube.dim() as u64, problem.len);
    let (beta, tau) = (params.model.beta(), params.model.tau());
    let Ok(nu) = pipeline::resolve(params, m, depth(n)) else {
        return vec![];
    };
    let mut v = vec![Formula::exact(format!("(ν + n)(β + qτ) + [r > 0](r + n)τ, q = ⌊m/ν⌋, r = m mod ν (n − 1 for n + 1 when n = 1), ν = {nu}"), "seed 001, ESBT-broadcast, Runtime: T(n, p, k) = (n/k·T_byte + T_start)(k + d)", pipeline::time(m, depth(n), nu, beta, tau))];
    if params.packets == Packets::Opt {
        v.push(Formula::estimate(
            "(√(mτ) + √(nβ))² (seed 001's T* without its missing factor 2)",
            "seed 001, ESBT-broadcast, T*(n, p); docs/errata.md",
            pipeline::continuous_optimum(m, depth(n), beta, tau),
        ));
    }
    v
}
