//! Broadcast over the spanning binomial tree (SBT), unpipelined or pipelined.
//!
//! Reference: Saad & Schultz 1985 (YALEU/DCS/RR-428), §2: the Hypercube Broadcast
//! algorithm (step j: nodes 0^{n−j+1}a send to 0^{n−j}1a), Prop. 2.1 eq. (2.1), and the
//! pipelined broadcast of Prop. 2.2 eq. (2.2). Any root, by relabelling with XOR (§2).
//!
//! - ν = 1: the paper's algorithm, one dimension per step (ascending): n steps of
//!   β + mτ, time n(β + mτ) under every port and duplex rule (no node sends and receives
//!   in one step, nor sends twice). Volume (2^n − 1)m.
//! - ν > 1: the same tree, level by level: a node at depth d (= its Hamming distance to
//!   the root) receives packet p in step p + d − 1 and passes it to all its children at
//!   once in step p + d (seed 000's assumption 2: sending to any number of neighbours
//!   costs one transfer). ν + n − 1 steps of β + ⌈m/ν⌉τ under `--ports all`, full
//!   or half-link duplex (every tree link carries one direction, away from the root;
//!   seed 004's hypercube model E); optimum (2.2) ≈ (√(mτ) + √((n − 1)β))².
//!
//! Constraints: hypercube; 1 ≤ ν ≤ max(m, 1).

use crate::algorithms::fit::{self, Built};
use crate::algorithms::pipeline;
use crate::algorithms::{Formula, Packets, Params};
use crate::collective::Collective;
use crate::cost::model::{Duplex, Ports};
use crate::error::Error;
use crate::schedule::{Buf, Op, Program, Rank, Region, Schedule};
use crate::topology::{DimOrder, Hypercube};
use crate::verify::Problem;

/// The SBT broadcast schedule.
#[derive(Clone, Debug)]
pub struct SbtBroadcast {
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
            reason: format!("this sbt performs broadcast, not {other}"),
        }),
    }
}

/// Build the schedule.
pub fn build(problem: &Problem<'_>, params: &Params, cube: &Hypercube) -> Built {
    let (cube, root) = root_of(problem, *cube)?;
    let nu = pipeline::resolve(params, problem.len, cube.dim() as u64)?;
    Ok(Box::new(SbtBroadcast {
        cube,
        root,
        m: problem.len,
        nu,
    }))
}

impl SbtBroadcast {
    /// The broadcast of `m` elements from `root` in `nu` packets, for schedules made of
    /// several broadcasts (the all-gather's SBA).
    pub(crate) fn new(cube: Hypercube, root: Rank, m: u64, nu: u64) -> Self {
        SbtBroadcast { cube, root, m, nu }
    }
}

impl Schedule for SbtBroadcast {
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
            (self.nu as usize + self.cube.dim() as usize - 1).max(1)
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

impl SbtBroadcast {
    /// Write the program of `prog.rank` into `prog`, an empty program of `steps()`
    /// steps.
    fn fill(&self, prog: &mut Program) {
        let rank = prog.rank;
        if self.m == 0 {
            return;
        }
        let (c, root, m) = (&self.cube, self.root, self.m);
        let order = DimOrder::Ascending;
        let src = if rank == root { Buf::In } else { Buf::Out };
        if rank == root {
            prog.push(
                0,
                Op::copy(Region::new(Buf::In, 0, m), Region::new(Buf::Out, 0, m)),
            );
        }
        let children = c.sbt_children_iter(rank, root, order);
        if self.nu == 1 {
            // The paper's algorithm: the child across dimension d is served in step d.
            if let Some(parent) = c.sbt_parent(rank, root, order) {
                prog.push(
                    c.sbt_step(rank, root, order) as usize - 1,
                    Op::recv(parent, Region::new(Buf::Out, 0, m)),
                );
            }
            for child in children.clone() {
                prog.push(
                    c.sbt_step(child, root, order) as usize - 1,
                    Op::send(child, Region::new(src, 0, m)),
                );
            }
            return;
        }
        let depth = Hypercube::hamming(rank, root) as usize;
        let parent = c.sbt_parent(rank, root, order);
        for p in 0..self.nu {
            let (off, len) = pipeline::packet(m, self.nu, p);
            if let Some(parent) = parent {
                prog.push(
                    p as usize + depth - 1,
                    Op::recv(parent, Region::new(Buf::Out, off, len)),
                );
            }
            if children.len() > 0 {
                prog.push(
                    p as usize + depth,
                    Op::multicast(children.clone(), Region::new(src, off, len)),
                );
            }
        }
    }
}

/// n(β + mτ) (eq. 2.1) for ν = 1 under every model; (ν + n − 1)(β + ⌈m/ν⌉τ) for ν > 1
/// under all ports, full or half-link duplex, and eq. (2.2) with `--packets opt`.
pub fn formulas(problem: &Problem<'_>, params: &Params) -> Vec<Formula> {
    let Some(Ok((cube, _))) = fit::cube_of(problem).map(|c| root_of(problem, c)) else {
        return vec![];
    };
    let (n, m) = (cube.dim() as u64, problem.len);
    let (beta, tau) = (params.model.beta(), params.model.tau());
    let Ok(nu) = pipeline::resolve(params, m, n) else {
        return vec![];
    };
    // Tree links carry one direction (away from the root): half-link duplex costs
    // nothing, half duplex (per node) serialises a node's receive and sends.
    let all_full = params.model.ports == Ports::All && params.model.duplex != Duplex::Half;
    let mut v = Vec::new();
    if nu == 1 {
        v.push(Formula::exact(
            "n(β + mτ)",
            "Saad & Schultz 1985, §2, Prop. 2.1, eq. (2.1)",
            if m == 0 {
                0.0
            } else {
                n as f64 * (beta + m as f64 * tau)
            },
        ));
    } else if all_full {
        v.push(Formula::exact(
            format!("(ν + n − 1)(β + qτ) + [r > 0](r + n − 1)τ, q = ⌊m/ν⌋, r = m mod ν, ν = {nu}"),
            "Saad & Schultz 1985, §2, Prop. 2.2 (discrete form)",
            pipeline::time(m, n, nu, beta, tau),
        ));
    }
    if params.packets == Packets::Opt && all_full {
        v.push(Formula::estimate(
            "(√(mτ) + √((n − 1)β))²",
            "Saad & Schultz 1985, §2, Prop. 2.2, eq. (2.2)",
            pipeline::continuous_optimum(m, n, beta, tau),
        ));
    }
    v
}
