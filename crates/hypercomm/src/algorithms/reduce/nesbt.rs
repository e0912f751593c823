//! Reduce over the n edge-disjoint spanning binomial trees at once (nESBT), each
//! combining 1/n of the data, pipelined in ν packets per tree: the
//! [`nesbt` broadcast](crate::algorithms::broadcast::nesbt) reversed in time and
//! direction.
//!
//! Reference: Johnsson & Ho, "Optimum broadcasting and personalized communication in
//! hypercubes", IEEE Trans. Computers 38(9), 1989, §4 (reduction is broadcasting
//! reversed, with combining).
//!
//! Schedule: the data is cut into n parts and part t into ν packets, as in the
//! broadcast. With S the broadcast's step count, a node at depth d of tree t receives
//! packet p of part t from its children of tree t in step S − 1 − (p + d) and sends its
//! partial result for it to its tree parent in step S − (p + d). Each child's message
//! lands in a slot of `tmp` kept for the link it came over (a directed link belongs to
//! one tree, so a link brings at most one message per step) and is combined into the
//! node's accumulator by a local op of the same step: several receives may not write
//! one region in one step. The accumulator is `out` at the root and the first m
//! elements of `tmp` elsewhere, both starting as a copy of `in`; a leaf of a tree sends
//! its input itself.
//!
//! Cost (rounds model, `--ports all`, full duplex): the broadcast's, with
//! L = ⌈m/n⌉, D = n + 1 (n for n ≤ 1), q = ⌊L/ν⌋, r = L mod ν:
//! T = (ν + D − 1)(β + qτ) + \[r > 0\](r + D − 1)τ, about (√(mτ/n) + √(nβ))² at the best
//! ν, against the lower bound nβ + mτ/n of [`crate::bounds`]. Volume (2^n − 1)m.
//! Memory: `tmp` of m + n⌈L/ν⌉ elements.
//!
//! Under `--duplex half-link` (seed 004's hypercube model E) no closed form is claimed:
//! the trees cross some links both ways in the same step, which a link of one
//! direction at a time serialises; the simulator charges it (and `sbt` keeps its form
//! there, its links carrying one direction).
//!
//! Constraints: hypercube; 1 ≤ ν ≤ max(⌈m/n⌉, 1); a commutative operator (each tree
//! combines its ranks in its own order).

use crate::algorithms::allreduce::ring::needs_commutative;
use crate::algorithms::broadcast::nesbt::{depth, largest_part, resolve};
use crate::algorithms::fit::{self, Built};
use crate::algorithms::pipeline;
use crate::algorithms::{Formula, Params};
use crate::collective::Collective;
use crate::cost::model::{Duplex, Ports};
use crate::error::Error;
use crate::schedule::{Action, Buf, Op, Program, Rank, Region, Schedule};
use crate::topology::Hypercube;
use crate::verify::Problem;
use smallvec::SmallVec;

/// The nESBT reduce schedule.
#[derive(Clone, Debug)]
pub struct NesbtReduce {
    cube: Hypercube,
    root: Rank,
    m: u64,
    nu: u64,
}

fn root_of(problem: &Problem<'_>, cube: Hypercube) -> Result<(Hypercube, Rank), Error> {
    match problem.collective {
        Collective::Reduce { root } => Ok((cube, root)),
        other => Err(Error::InvalidParameter {
            what: "--op",
            reason: format!("this nesbt performs reduce, not {other}"),
        }),
    }
}

/// Build the schedule.
pub fn build(problem: &Problem<'_>, params: &Params, cube: &Hypercube) -> Built {
    let (cube, root) = root_of(problem, *cube)?;
    needs_commutative(problem, "nesbt")?;
    let nu = resolve(params, cube.dim() as u64, problem.len)?;
    Ok(Box::new(NesbtReduce {
        cube,
        root,
        m: problem.len,
        nu,
    }))
}

impl Schedule for NesbtReduce {
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

impl NesbtReduce {
    /// Write the program of `prog.rank` into `prog`, an empty program of `steps()`
    /// steps.
    fn fill(&self, prog: &mut Program) {
        let rank = prog.rank;
        let (c, root, m) = (&self.cube, self.root, self.m);
        if m == 0 {
            return;
        }
        let n = c.dim() as u64;
        let last = self.steps() as u64 - 1;
        let acc_buf = if rank == root { Buf::Out } else { Buf::Tmp };
        prog.push(
            0,
            Op::copy(Region::new(Buf::In, 0, m), Region::new(acc_buf, 0, m)),
        );
        if n == 0 {
            return;
        }
        let slot_len = largest_part(n, m).div_ceil(self.nu);
        prog.tmp_len = m + n * slot_len;
        let mut children: SmallVec<[Rank; 32]> = SmallVec::new();
        for t in 0..n {
            let (part_off, part_len) = pipeline::packet(m, n, t);
            if part_len == 0 {
                continue;
            }
            let tree = t as u32;
            if rank == root {
                children.clear();
                children.push(root ^ (1 << tree));
            } else {
                c.esbt_children_in(tree, rank, root, &mut children);
            }
            let parent = c.esbt_parent(tree, rank, root);
            let d = c.esbt_depth(tree, rank, root) as u64;
            for p in 0..self.nu {
                let (off, len) = pipeline::packet(part_len, self.nu, p);
                if len == 0 {
                    continue;
                }
                let acc = Region::new(acc_buf, part_off + off, len);
                if let Some(to) = parent {
                    // A leaf's partial is its input; it may send in step 0, before
                    // the copy to the accumulator (sends read the step's start).
                    let from = if children.is_empty() {
                        Region::new(Buf::In, part_off + off, len)
                    } else {
                        acc
                    };
                    prog.push((last + 1 - (p + d)) as usize, Op::send(to, from));
                }
                // Children are one level deeper, so p + d ≤ last whenever there are any.
                let s = last.saturating_sub(p + d) as usize;
                for &kid in &children {
                    let link = (kid ^ rank).trailing_zeros() as u64;
                    let slot = Region::new(Buf::Tmp, m + link * slot_len, len);
                    prog.push(s, Op::recv(kid, slot));
                    prog.push(
                        s,
                        Op::Local {
                            from: slot,
                            into: acc,
                            action: Action::CombineRight,
                        },
                    );
                }
            }
        }
    }
}

/// The broadcast's exact time under all ports, full duplex.
pub fn formulas(problem: &Problem<'_>, params: &Params) -> Vec<Formula> {
    let Some(Ok((cube, _))) = fit::cube_of(problem).map(|c| root_of(problem, c)) else {
        return vec![];
    };
    if params.model.ports != Ports::All || params.model.duplex != Duplex::Full {
        return vec![];
    }
    let (n, m) = (cube.dim() as u64, problem.len);
    let Ok(nu) = resolve(params, n, m) else {
        return vec![];
    };
    let l = largest_part(n, m);
    vec![Formula::exact(
        format!(
            "(ν + D − 1)(β + qτ) + [r > 0](r + D − 1)τ, L = ⌈m/n⌉ = {l}, q = ⌊L/ν⌋, r = L mod ν, D = n + 1 (n for n ≤ 1), ν = {nu}"
        ),
        "Johnsson & Ho 1989, §4, MSBT broadcast reversed (exact form: ours)",
        pipeline::time(l, depth(n), nu, params.model.beta(), params.model.tau()),
    )]
}

#[cfg(test)]
mod tests {
    use super::*;
    /// `build` with the cube found first, as the registry hands it.
    fn build(problem: &Problem<'_>, params: &Params) -> crate::algorithms::fit::Built {
        crate::algorithms::fit::on_cube(super::build, problem, params)
    }
    use crate::algorithms::Packets;
    use crate::cost::model::Model;
    use crate::cost::simulate;
    use crate::topology::Topology;
    use crate::verify::{verify, Strictness};

    #[test]
    fn verifies_and_matches_the_exact_form() {
        let model = Model::new(1.0, 0.01).unwrap();
        for n in 0..=6u32 {
            let topo: Topology = format!("hypercube:{n}").parse().unwrap();
            for m in [0, 1, 5, 7, 64, 1001] {
                for packets in [Packets::Count(1), Packets::Count(2), Packets::Opt] {
                    if matches!(packets, Packets::Count(c) if c > largest_part(n as u64, m).max(1))
                    {
                        continue;
                    }
                    let root = (1u32 << n) / 3;
                    let problem = Problem {
                        topology: &topo,
                        collective: Collective::Reduce { root },
                        len: m,
                        commutative: true,
                        counts: None,
                    };
                    let params = Params { packets, model };
                    let s = build(&problem, &params).unwrap();
                    let strict = Strictness {
                        ports: Some(Ports::All),
                        duplex: None,
                        host_ports: None,
                    };
                    verify(problem, s.as_ref(), strict)
                        .unwrap_or_else(|v| panic!("n={n} m={m} {packets:?}: {v}"));
                    let t = simulate(&topo, s.as_ref(), &model).time;
                    let f = &formulas(&problem, &params)[0];
                    assert!(f.holds_for(t), "n={n} m={m} {packets:?}: {t} vs {f:?}");
                }
            }
        }
    }
}
