//! Scatter over the n edge-disjoint spanning binomial trees at once (nESBT), each
//! carrying 1/n of every block, farthest destination first.
//!
//! Reference: Johnsson & Ho, "Optimum broadcasting and personalized communication in
//! hypercubes", IEEE Trans. Computers 38(9), 1989, §5 (personalized communication: one
//! to all over n edge-disjoint trees, every link of the source busy). Johnsson & Ho
//! balance the source's links with the spanning balanced n-tree (SBnT); we balance
//! them exactly instead by cutting every block into n parts and sending part t of
//! every block down ESBT tree t ([`Hypercube::esbt_parent`]), which hangs from the
//! source's link 2^t and spans the other 2^n − 1 nodes.
//!
//! Schedule: in tree t, the destinations are ordered by depth, deepest first (ties by
//! relative label; tree t's order is tree 0's rotated by t bits). The part for the i-th
//! destination y (i from 0) leaves the source in step i and moves one hop per step:
//! the node at depth h on the path to y receives it in step i + h − 1 and passes it on
//! in step i + h. A node receives at most one part of a tree per step (its tree parent
//! sends at most one), so it sends at most one; trees share no directed link. The
//! deepest-first order makes the last arrival step i + d_y − 1 ≤ 2^n − 2: the i + 1
//! destinations up to y are all at depth ≥ d_y, and the d_y − 1 nodes on y's path
//! are not, so i + 1 ≤ 2^n − 1 − (d_y − 1). A forwarded part waits one step in one of
//! two `tmp` slots per tree (by step parity).
//!
//! Cost (rounds model, `--ports all`, full duplex; m > 0, n ≥ 1): in each of the
//! 2^n − 1 steps the source sends one part on every link, the largest ⌈m/n⌉:
//!
//! ```text
//! T = (2^n − 1)(β + ⌈m/n⌉τ)
//! ```
//!
//! against the lower bound nβ + (2^n − 1)mτ/n ([`crate::bounds`]): for n | m,
//! T/bound < 1 + (2^n − 1)β/((2^n − 1)mτ/n) = 1 + β/(mτ/n), below 1.0001 once
//! mτ/n ≥ 10⁴β. (Johnsson & Ho's SBnT, which sends whole blocks, has as many
//! start-ups but the bandwidth term of its largest subtree, at least ⌈(2^n − 1)/n⌉mτ.)
//! Volume: part t of y's block crosses y's depth in tree t (its Hamming distance to
//! the source, plus 2 when y does not differ from it in bit t).
//! Memory: `tmp` of 2n⌈m/n⌉ elements on the nodes that forward.
//!
//! Under `--duplex half-link` (seed 004's hypercube model E) no closed form is claimed:
//! the trees cross some links both ways in the same step, which a link of one
//! direction at a time serialises; the simulator charges it (and `sbt` keeps its form
//! there, its links carrying one direction).
//!
//! Constraints: hypercube.

use crate::algorithms::fit::{self, Built};
use crate::algorithms::pipeline;
use crate::algorithms::{Formula, Params};
use crate::collective::Collective;
use crate::cost::model::{Duplex, Ports};
use crate::error::Error;
use crate::schedule::{Buf, Op, Program, Rank, Region, Schedule};
use crate::topology::Hypercube;
use crate::verify::Problem;
use smallvec::SmallVec;

/// The scatter (or, reversed in time, the gather) over the n ESBT trees.
#[derive(Clone, Debug)]
pub struct NesbtPersonalized {
    cube: Hypercube,
    root: Rank,
    m: u64,
    /// Gather (every transfer reversed in time and direction) instead of scatter.
    gather: bool,
    /// Position of each relative label in tree 0's deepest-first order (0 unused).
    pos: Vec<u32>,
}

/// Depth of relative label `c ≠ 0` in ESBT tree 0: popcount, plus 2 when bit 0 is
/// clear ([`Hypercube::esbt_depth`]).
fn depth0(c: u32) -> u32 {
    c.count_ones() + if c & 1 == 1 { 0 } else { 2 }
}

/// Rotate the low `n` bits of `c` right by `j` (j < n).
fn rotr(c: u32, j: u32, n: u32) -> u32 {
    if j == 0 {
        return c;
    }
    let mask = (1u32 << n) - 1;
    ((c >> j) | (c << (n - j))) & mask
}

/// Every relative label's position in tree 0's deepest-first order (ties by label).
fn positions(n: u32) -> Vec<u32> {
    let k = 1u32 << n;
    let mut order: Vec<u32> = (1..k).collect();
    order.sort_by_key(|&c| (std::cmp::Reverse(depth0(c)), c));
    let mut pos = vec![0u32; k as usize];
    for (i, &c) in order.iter().enumerate() {
        pos[c as usize] = i as u32;
    }
    pos
}

/// The cube and root of a scatter (`gather = false`) or gather problem.
pub(crate) fn root_of(
    problem: &Problem<'_>,
    cube: Hypercube,
    gather: bool,
) -> Result<(Hypercube, Rank), Error> {
    match (problem.collective, gather) {
        (Collective::Scatter { root }, false) | (Collective::Gather { root }, true) => {
            Ok((cube, root))
        }
        (other, _) => Err(Error::InvalidParameter {
            what: "--op",
            reason: format!(
                "this nesbt performs {}, not {other}",
                if gather { "gather" } else { "scatter" }
            ),
        }),
    }
}

impl NesbtPersonalized {
    /// The scatter (`gather = false`) or gather from `root` of `m`-element blocks.
    pub(crate) fn new(cube: Hypercube, root: Rank, m: u64, gather: bool) -> Self {
        let pos = if m == 0 {
            Vec::new()
        } else {
            positions(cube.dim())
        };
        NesbtPersonalized {
            cube,
            root,
            m,
            gather,
            pos,
        }
    }

    /// Position of `node` in tree `t`'s order.
    fn index(&self, t: u32, node: Rank) -> u64 {
        let n = self.cube.dim();
        self.pos[rotr(node ^ self.root, t, n) as usize] as u64
    }
}

/// Build the schedule.
pub fn build(problem: &Problem<'_>, _params: &Params, cube: &Hypercube) -> Built {
    let (cube, root) = root_of(problem, *cube, false)?;
    Ok(Box::new(NesbtPersonalized::new(
        cube,
        root,
        problem.len,
        false,
    )))
}

/// Steps of both: 2^n − 1 (1 for n = 0), none when m = 0.
pub(crate) fn steps(cube: &Hypercube, m: u64) -> usize {
    if m == 0 {
        0
    } else {
        ((cube.nodes() - 1) as usize).max(1)
    }
}

impl Schedule for NesbtPersonalized {
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

impl NesbtPersonalized {
    /// Write the program of `prog.rank` into `prog`, an empty program of `steps()`
    /// steps.
    fn fill(&self, prog: &mut Program) {
        let rank = prog.rank;
        let (c, root, m) = (&self.cube, self.root, self.m);
        if m == 0 {
            return;
        }
        let n = c.dim();
        let last = self.steps() as u64 - 1;
        // Step of a transfer in the scatter's time, reversed for the gather.
        let at = |s: u64| (if self.gather { last - s } else { s }) as usize;
        if rank == root {
            let block = Region::new(Buf::In, root as u64 * m, m);
            let (from, into) = if self.gather {
                (
                    Region::new(Buf::In, 0, m),
                    Region::new(Buf::Out, root as u64 * m, m),
                )
            } else {
                (block, Region::new(Buf::Out, 0, m))
            };
            // The gather's copy runs last, the scatter's first; either is free.
            prog.push(at(0), Op::copy(from, into));
        }
        let big = m.div_ceil(n.max(1) as u64);
        let mut kids: SmallVec<[Rank; 32]> = SmallVec::new();
        let mut stack: Vec<Rank> = Vec::new();
        for t in 0..n {
            let (off, len) = pipeline::packet(m, n as u64, t as u64);
            if len == 0 {
                continue;
            }
            let h = c.esbt_depth(t, rank, root) as u64;
            let parent = c.esbt_parent(t, rank, root);
            // The slot for a part that arrives in (scatter) step s.
            let slot = |s: u64| Region::new(Buf::Tmp, (2 * t as u64 + s % 2) * big, len);
            if rank != root {
                // This node's own part: the last hop of its path.
                let i = self.index(t, rank);
                let mine = Region::new(if self.gather { Buf::In } else { Buf::Out }, off, len);
                let p = parent.expect("a node other than the root has a parent");
                if self.gather {
                    prog.push(at(i + h - 1), Op::send(p, mine));
                } else {
                    prog.push(at(i + h - 1), Op::recv(p, mine));
                }
            }
            // The parts for the rest of the subtree, child by child.
            if rank == root {
                kids.clear();
                kids.push(root ^ (1 << t));
            } else {
                c.esbt_children_in(t, rank, root, &mut kids);
            }
            for &kid in &kids {
                stack.clear();
                stack.push(kid);
                while let Some(y) = stack.pop() {
                    let i = self.index(t, y);
                    let s = i + h; // the step this node passes y's part to `kid`
                    if rank == root {
                        let block = Region::new(
                            if self.gather { Buf::Out } else { Buf::In },
                            y as u64 * m + off,
                            len,
                        );
                        if self.gather {
                            prog.push(at(s), Op::recv(kid, block));
                        } else {
                            prog.push(at(s), Op::send(kid, block));
                        }
                    } else {
                        prog.tmp_len = prog.tmp_len.max(2 * n as u64 * big);
                        let p = parent.expect("a node other than the root has a parent");
                        if self.gather {
                            prog.push(at(s), Op::recv(kid, slot(s)));
                            prog.push(at(s - 1), Op::send(p, slot(s)));
                        } else {
                            prog.push(at(s - 1), Op::recv(p, slot(s - 1)));
                            prog.push(at(s), Op::send(kid, slot(s - 1)));
                        }
                    }
                    let mut below: SmallVec<[Rank; 32]> = SmallVec::new();
                    c.esbt_children_in(t, y, root, &mut below);
                    stack.extend(below);
                }
            }
        }
    }
}

/// (2^n − 1)(β + ⌈m/n⌉τ) under all ports, full duplex (m > 0, n ≥ 1).
pub fn formulas(problem: &Problem<'_>, params: &Params) -> Vec<Formula> {
    let Some(Ok((cube, _))) = fit::cube_of(problem).map(|c| root_of(problem, c, false)) else {
        return vec![];
    };
    formula(&cube, problem.len, params).into_iter().collect()
}

pub(crate) fn formula(cube: &Hypercube, m: u64, params: &Params) -> Option<Formula> {
    if params.model.ports != Ports::All || params.model.duplex != Duplex::Full {
        return None;
    }
    let n = cube.dim() as u64;
    let (beta, tau) = (params.model.beta(), params.model.tau());
    let value = if m == 0 || n == 0 {
        0.0
    } else {
        ((1u64 << n) - 1) as f64 * (beta + m.div_ceil(n) as f64 * tau)
    };
    Some(Formula::exact(
        "(2^n − 1)(β + ⌈m/n⌉τ)",
        "Johnsson & Ho 1989, §5, one-to-all personalized communication over n ESBTs (exact form: ours)",
        value,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cost::model::Model;
    use crate::cost::simulate;
    use crate::topology::Topology;
    use crate::verify::{verify, Strictness};

    fn check(gather: bool) {
        let model = Model::new(1.0, 0.01).unwrap();
        let params = Params {
            model,
            ..Params::default()
        };
        for n in 0..=6 {
            let topo: Topology = format!("hypercube:{n}").parse().unwrap();
            for m in [0, 1, 5, 7, 64, 1001] {
                for root in [0, (1u32 << n) - 1, (1u32 << n) / 3] {
                    let collective = if gather {
                        Collective::Gather { root }
                    } else {
                        Collective::Scatter { root }
                    };
                    let problem = Problem {
                        topology: &topo,
                        collective,
                        len: m,
                        commutative: true,
                        counts: None,
                    };
                    let s: Box<dyn Schedule> = Box::new(NesbtPersonalized::new(
                        topo.cube().unwrap(),
                        root,
                        m,
                        gather,
                    ));
                    let strict = Strictness {
                        ports: Some(Ports::All),
                        duplex: None,
                        host_ports: None,
                    };
                    verify(problem, s.as_ref(), strict)
                        .unwrap_or_else(|v| panic!("n={n} m={m} root={root}: {v}"));
                    let t = simulate(&topo, s.as_ref(), &model).time;
                    let f = formula(&topo.cube().unwrap(), m, &params).unwrap();
                    assert!(f.holds_for(t), "n={n} m={m} root={root}: {t} vs {f:?}");
                }
            }
        }
    }

    #[test]
    fn scatter_verifies_and_matches_the_exact_form() {
        check(false);
    }

    #[test]
    fn gather_verifies_and_matches_the_exact_form() {
        check(true);
    }

    /// Deepest first, every destination's part arrives by step 2^n − 2.
    #[test]
    fn every_part_arrives_in_time() {
        for n in 1..=10u32 {
            let pos = positions(n);
            for c in 1..(1u32 << n) {
                assert!(pos[c as usize] + depth0(c) < 1 << n, "n={n} c={c}");
            }
        }
    }
}
