//! Broadcast over the n edge-disjoint spanning binomial trees at once (nESBT, also
//! called MSBT), each carrying 1/n of the message, pipelined in ν packets per tree.
//!
//! Reference: Johnsson & Ho, "Optimum broadcasting and personalized communication in
//! hypercubes", IEEE Trans. Computers 38(9), 1989, §4 (the MSBT broadcast). The trees
//! are [`Hypercube::esbt_parent`]'s: tree t hangs from the source's neighbour s ⊕ 2^t,
//! spans every node and is, as a set of directed edges, disjoint from the other n − 1.
//!
//! Schedule: the message is cut into n parts (part t = [`pipeline::packet`]`(m, n, t)`,
//! ⌈m/n⌉ or ⌊m/n⌋ elements) and part t into ν packets. Packet p of tree t leaves the
//! source in step p; a node at depth d of tree t receives it in step p + d − 1 and sends
//! it to all its children of tree t in step p + d (one multicast). All n trees run at
//! once, so in every step the source sends on all n of its links. It differs from
//! [`super::esbt`], where the source feeds one tree per step (chunk c to tree c mod n)
//! and so sends mτ in all: here it sends only mτ/n per link.
//!
//! Cost (rounds model, `--ports all`, full duplex): a directed link belongs to one tree
//! and carries one packet of it per step, so a step costs β plus its largest packet;
//! the deepest node is D = n + 1 hops from the source (D = n for n ≤ 1), so with
//! L = ⌈m/n⌉ (the largest part), q = ⌊L/ν⌋ and r = L mod ν:
//!
//! ```text
//! T = (ν + D − 1)(β + qτ) + [r > 0](r + D − 1)τ        (pipeline::time(L, D, ν))
//! ```
//!
//! (tree 0 carries the largest part and its packets are the largest of every step). For
//! n | m and ν | m/n (n ≥ 2): T = (ν + n)(β + mτ/(nν)), optimal at ν* = √(mτ/β), with
//! T* = (√(mτ/n) + √(nβ))², against the lower bound (2n − 1)β + mτ/n of
//! [`crate::bounds`]: T*/bound ≈ 1 + 2√(mβτ)/(mτ/n), under 5 % once
//! mτ/n ≥ 1600·nβ (n = 6: 9600β; n = 8: 12800β). `--packets opt` takes the ν ∈ 1..=L
//! minimising T exactly. Volume: tree t sends part t over its 2^n − 1 edges, so
//! (2^n − 1)m in all, each element reaching each node once.
//!
//! Under `--duplex half-link` (seed 004's hypercube model E) no closed form is claimed:
//! the trees cross some links both ways in the same step, which a link of one
//! direction at a time serialises; the simulator charges it (and `sbt` keeps its form
//! there, its links carrying one direction).
//!
//! Constraints: hypercube; 1 ≤ ν ≤ max(⌈m/n⌉, 1) (every packet of the largest part
//! non-empty).

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

/// The nESBT broadcast schedule.
#[derive(Clone, Debug)]
pub struct NesbtBroadcast {
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
            reason: format!("nesbt performs broadcast, not {other}"),
        }),
    }
}

/// Hops from the source to the deepest node of an ESBT tree: n + 1 for n ≥ 2, n
/// otherwise.
pub(crate) fn depth(n: u64) -> u64 {
    if n >= 2 {
        n + 1
    } else {
        n
    }
}

/// The largest part, ⌈m/n⌉ (m when n = 0).
pub(crate) fn largest_part(n: u64, m: u64) -> u64 {
    m.div_ceil(n.max(1))
}

/// ν for the problem: `opt` minimises the exact time; a count must be in
/// 1..=max(⌈m/n⌉, 1).
pub(crate) fn resolve(params: &Params, n: u64, m: u64) -> Result<u64, Error> {
    let l = largest_part(n, m);
    match params.packets {
        Packets::Count(c) if c > l.max(1) => Err(Error::InvalidParameter {
            what: "--packets",
            reason: format!(
                "{c} packets for parts of at most {l} elements; valid: 1..={} or `opt`",
                l.max(1)
            ),
        }),
        _ => pipeline::resolve(params, l, depth(n)),
    }
}

/// Build the schedule.
pub fn build(problem: &Problem<'_>, params: &Params, cube: &Hypercube) -> Built {
    let (cube, root) = root_of(problem, *cube)?;
    let nu = resolve(params, cube.dim() as u64, problem.len)?;
    Ok(Box::new(NesbtBroadcast {
        cube,
        root,
        m: problem.len,
        nu,
    }))
}

impl Schedule for NesbtBroadcast {
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

impl NesbtBroadcast {
    /// Write the program of `prog.rank` into `prog`, an empty program of `steps()`
    /// steps.
    fn fill(&self, prog: &mut Program) {
        let rank = prog.rank;
        let (c, root, m) = (&self.cube, self.root, self.m);
        if m == 0 {
            return;
        }
        let n = c.dim() as u64;
        if rank == root {
            prog.push(
                0,
                Op::copy(Region::new(Buf::In, 0, m), Region::new(Buf::Out, 0, m)),
            );
        }
        let src = if rank == root { Buf::In } else { Buf::Out };
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
                let region = |buf| Region::new(buf, part_off + off, len);
                if let Some(from) = parent {
                    prog.push((p + d - 1) as usize, Op::recv(from, region(Buf::Out)));
                }
                if !children.is_empty() {
                    prog.push(
                        (p + d) as usize,
                        Op::multicast(children.iter().copied(), region(src)),
                    );
                }
            }
        }
    }
}

/// The exact time under all ports, full duplex, and with `--packets opt` the
/// continuous optimum (√(Lτ) + √(nβ))² as a lower estimate.
pub fn formulas(problem: &Problem<'_>, params: &Params) -> Vec<Formula> {
    let Some(Ok((cube, _))) = fit::cube_of(problem).map(|c| root_of(problem, c)) else {
        return vec![];
    };
    if params.model.ports != Ports::All || params.model.duplex != Duplex::Full {
        return vec![];
    }
    let (n, m) = (cube.dim() as u64, problem.len);
    let (beta, tau) = (params.model.beta(), params.model.tau());
    let Ok(nu) = resolve(params, n, m) else {
        return vec![];
    };
    let l = largest_part(n, m);
    let mut v = vec![Formula::exact(
        format!(
            "(ν + D − 1)(β + qτ) + [r > 0](r + D − 1)τ, L = ⌈m/n⌉ = {l}, q = ⌊L/ν⌋, r = L mod ν, D = n + 1 (n for n ≤ 1), ν = {nu}"
        ),
        "Johnsson & Ho 1989, §4, MSBT broadcast (exact form: ours)",
        pipeline::time(l, depth(n), nu, beta, tau),
    )];
    if params.packets == Packets::Opt {
        v.push(Formula::estimate(
            "(√(⌈m/n⌉τ) + √(nβ))² ≈ (√(mτ/n) + √(nβ))²",
            "Johnsson & Ho 1989, §4, MSBT broadcast, optimum over ν",
            pipeline::continuous_optimum(l, depth(n), beta, tau),
        ));
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    /// `build` with the cube found first, as the registry hands it.
    fn build(problem: &Problem<'_>, params: &Params) -> crate::algorithms::fit::Built {
        crate::algorithms::fit::on_cube(super::build, problem, params)
    }
    use crate::cost::model::Model;
    use crate::cost::simulate;
    use crate::topology::Topology;
    use crate::verify::{verify, Strictness};

    fn run(n: u32, root: Rank, m: u64, packets: Packets, model: Model) -> (f64, Vec<Formula>) {
        let topo: Topology = format!("hypercube:{n}").parse().unwrap();
        let problem = Problem {
            topology: &topo,
            collective: Collective::Broadcast { root },
            len: m,
            commutative: true,
            counts: None,
        };
        let params = Params { packets, model };
        let s = build(&problem, &params).unwrap();
        verify(problem, s.as_ref(), Strictness::default()).unwrap();
        (
            simulate(&topo, s.as_ref(), &model).time,
            formulas(&problem, &params),
        )
    }

    #[test]
    fn verifies_and_matches_the_exact_form() {
        let model = Model::new(1.0, 0.01).unwrap();
        for n in 0..=6 {
            for m in [0, 1, 5, 7, 64, 1001] {
                for p in [Packets::Count(1), Packets::Count(2), Packets::Opt] {
                    if matches!(p, Packets::Count(c) if c > largest_part(n as u64, m).max(1)) {
                        continue;
                    }
                    let root = (1u32 << n) / 3;
                    let (t, f) = run(n, root, m, p, model);
                    assert!(f[0].holds_for(t), "n={n} m={m} {p:?}: {t} vs {:?}", f[0]);
                }
            }
        }
    }

    /// The point of the algorithm: with bandwidth dominating it comes within a few
    /// per cent of the all-port lower bound, where `esbt` stays near n times it.
    #[test]
    fn reaches_the_all_port_bound_when_bandwidth_dominates() {
        let model = Model::new(1.0, 0.01).unwrap();
        let n = 6;
        let m = 6 * 100_000 * 100; // mτ/n = 10⁵ β
        let topo: Topology = format!("hypercube:{n}").parse().unwrap();
        let (t, _) = run(n, 5, m, Packets::Opt, model);
        let lb = crate::bounds::lower_bound(&topo, &Collective::Broadcast { root: 5 }, m, &model)
            .unwrap();
        assert!(t >= lb && t / lb < 1.02, "time {t}, bound {lb}");
    }

    #[test]
    fn refuses_more_packets_than_the_largest_part() {
        let topo: Topology = "hypercube:3".parse().unwrap();
        let problem = Problem {
            topology: &topo,
            collective: Collective::Broadcast { root: 0 },
            len: 7,
            commutative: true,
            counts: None,
        };
        assert!(matches!(
            build(&problem, &Params::packets(4)),
            Err(Error::InvalidParameter {
                what: "--packets",
                ..
            })
        ));
        assert!(build(&problem, &Params::packets(3)).is_ok());
    }
}
