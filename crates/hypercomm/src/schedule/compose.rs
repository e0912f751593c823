//! Schedules that compose: one after another ([`Sequence`]), side by side
//! ([`SideBySide`]), and a factor's schedule run along one dimension of a product, in
//! every copy of the factor at once ([`Embed`]).
//!
//! Seed 002's decomposition (Dimakopoulos & Dimopoulos, §4, Algorithm A2) is the model:
//! a collective on G1 × G2 is a phase inside every copy of G2 at once, then a phase
//! inside every copy of G1. [`Embed`] is one such phase: rank r of the product, whose
//! coordinate in factor `i` is c, runs the factor schedule's program of rank c, its
//! peers c' becoming r + (c' − c)·stride(i) (the node of its copy of the factor), and
//! its regions moved by a map that may depend on the rank (where in the product's
//! buffers this copy keeps its data). The composed schedules are plain schedules: the
//! verifier proves them, the simulator prices them and the runtime runs them like any
//! other.

use super::{Buf, Op, Program, Rank, Region, Schedule, Step};
use crate::error::Error;
use crate::topology::{Hypercube, Topology};

/// Schedules run one after another: the steps of the first, then those of the second,
/// … (every part has the same nodes; `tmp` is shared, its length the largest part's).
pub struct Sequence {
    parts: Vec<Box<dyn Schedule>>,
}

impl Sequence {
    /// The parts in order; they must agree on the number of nodes.
    pub fn new(parts: Vec<Box<dyn Schedule>>) -> Result<Self, Error> {
        check_nodes(&parts)?;
        Ok(Sequence { parts })
    }
}

fn check_nodes(parts: &[Box<dyn Schedule>]) -> Result<(), Error> {
    if let Some(first) = parts.first() {
        if let Some(p) = parts.iter().find(|p| p.nodes() != first.nodes()) {
            return Err(Error::InvalidParameter {
                what: "schedule",
                reason: format!(
                    "composed schedules must have the same nodes: {} and {}",
                    first.nodes(),
                    p.nodes()
                ),
            });
        }
    }
    Ok(())
}

impl Schedule for Sequence {
    fn nodes(&self) -> u32 {
        self.parts.first().map_or(0, |p| p.nodes())
    }
    fn steps(&self) -> usize {
        self.parts.iter().map(|p| p.steps()).sum()
    }
    fn program(&self, rank: Rank) -> Program {
        let mut out = Program::new(rank, 0);
        for p in &self.parts {
            let prog = p.program(rank);
            out.tmp_len = out.tmp_len.max(prog.tmp_len);
            out.steps.extend(prog.steps);
        }
        out
    }
}

/// Schedules run at once, step i of each in step i (the shorter ones idle after their
/// last step); for parts that use different ranks, links or buffer regions.
pub struct SideBySide {
    parts: Vec<Box<dyn Schedule>>,
}

impl SideBySide {
    /// The parts; they must agree on the number of nodes.
    pub fn new(parts: Vec<Box<dyn Schedule>>) -> Result<Self, Error> {
        check_nodes(&parts)?;
        Ok(SideBySide { parts })
    }
}

impl Schedule for SideBySide {
    fn nodes(&self) -> u32 {
        self.parts.first().map_or(0, |p| p.nodes())
    }
    fn steps(&self) -> usize {
        self.parts.iter().map(|p| p.steps()).max().unwrap_or(0)
    }
    fn program(&self, rank: Rank) -> Program {
        let mut out = Program::new(rank, self.steps());
        for p in &self.parts {
            let prog = p.program(rank);
            out.tmp_len = out.tmp_len.max(prog.tmp_len);
            for (s, step) in prog.steps.into_iter().enumerate() {
                out.steps[s].ops.extend(step.ops);
            }
        }
        out
    }
}

/// A one-step schedule on the edge K2 (nodes 0 and 1): each side's ops, its peer
/// named by the other side's index. Embedded across a cube dimension
/// ([`Embed::cube_dimension`]) it is one "exchange with i XOR 2^k" step.
pub struct Pair {
    ops: [Vec<Op>; 2],
    tmp_len: u64,
}

impl Pair {
    /// Side c's ops `ops[c]`, with `tmp_len` elements of `tmp` on each side.
    pub fn new(ops: [Vec<Op>; 2], tmp_len: u64) -> Self {
        Pair { ops, tmp_len }
    }
}

impl Schedule for Pair {
    fn nodes(&self) -> u32 {
        2
    }
    fn steps(&self) -> usize {
        1
    }
    fn program(&self, rank: Rank) -> Program {
        Program {
            rank,
            tmp_len: self.tmp_len,
            steps: vec![Step {
                ops: self.ops[rank as usize].clone(),
            }],
        }
    }
}

/// Where the product's rank keeps a factor schedule's region: `(rank of the product,
/// region of the factor schedule) → region of the product's program`.
pub type RegionMap = Box<dyn Fn(Rank, Region) -> Region + Send + Sync>;

/// A factor's schedule run along factor `dim` of a product, in every copy of the
/// factor at once.
///
/// The axis is a factor of a product ([`Embed::new`]) or one dimension of a binary
/// cube, the edge K2 between the ranks that differ in bit k ([`Embed::cube_dimension`]):
/// the hypercube algorithms' "exchange with i XOR 2^k" steps are this embedding of a
/// two-node schedule.
pub struct Embed {
    inner: Box<dyn Schedule>,
    nodes: u32,
    /// Nodes of the axis (the factor's, or 2 for a cube dimension).
    axis: u32,
    /// What moving one step along the axis adds to a rank.
    stride: u32,
    map: RegionMap,
}

/// A composition that does not fit its topology.
fn bad(reason: String) -> Error {
    Error::InvalidParameter {
        what: "schedule",
        reason,
    }
}

impl Embed {
    /// Run `inner` (a schedule on the nodes of factor `dim`) in every copy of factor
    /// `dim` of `topology`, regions unchanged.
    pub fn new(inner: Box<dyn Schedule>, topology: &Topology, dim: usize) -> Result<Self, Error> {
        Self::with_regions(inner, topology, dim, Box::new(|_, r| r))
    }

    /// [`Embed::new`] with the factor schedule's regions moved by `map`.
    pub fn with_regions(
        inner: Box<dyn Schedule>,
        topology: &Topology,
        dim: usize,
        map: RegionMap,
    ) -> Result<Self, Error> {
        let factors = topology
            .factors()
            .filter(|_| topology.host().is_none())
            .ok_or_else(|| bad(format!("{topology} is not a product of factors")))?;
        let factor = factors.get(dim).ok_or_else(|| {
            bad(format!(
                "{topology} has {} factors; no factor {dim}",
                factors.len()
            ))
        })?;
        if inner.nodes() != factor.nodes() {
            return Err(bad(format!(
                "factor {dim} of {topology} ({factor}) has {} nodes, the schedule {}",
                factor.nodes(),
                inner.nodes()
            )));
        }
        Ok(Embed {
            inner,
            nodes: topology.nodes(),
            axis: factor.nodes(),
            stride: topology.stride(dim),
            map,
        })
    }

    /// Run `inner` (a schedule on two nodes) across dimension `k` of `cube` (the
    /// binary cube among a topology's links, [`Topology::cube`], as the registry's
    /// view hands it to a hypercube algorithm): the copy of K2 at rank r joins r and
    /// r XOR 2^k, and r runs `inner`'s program of its bit k.
    pub fn cube_dimension(
        inner: Box<dyn Schedule>,
        cube: &Hypercube,
        k: u32,
        map: RegionMap,
    ) -> Result<Self, Error> {
        if k >= cube.dim() {
            return Err(bad(format!("the {}-cube has no dimension {k}", cube.dim())));
        }
        if inner.nodes() != 2 {
            return Err(bad(format!(
                "a cube dimension has 2 nodes, the schedule {}",
                inner.nodes()
            )));
        }
        Ok(Embed {
            inner,
            nodes: cube.nodes(),
            axis: 2,
            stride: 1 << k,
            map,
        })
    }
}

impl Schedule for Embed {
    fn nodes(&self) -> u32 {
        self.nodes
    }
    fn steps(&self) -> usize {
        self.inner.steps()
    }
    fn program(&self, rank: Rank) -> Program {
        let stride = self.stride;
        let c = (rank / stride) % self.axis;
        let base = rank - c * stride;
        let peer = |q: Rank| base + q * stride;
        let map = |r: Region| (self.map)(rank, r);
        // The factor's program, its peers and regions moved in place.
        let mut prog = self.inner.program(c);
        for op in prog.steps.iter_mut().flat_map(|step| step.ops.iter_mut()) {
            match op {
                Op::Send { to, from } => {
                    to.iter_mut().for_each(|q| *q = peer(*q));
                    from.iter_mut().for_each(|r| *r = map(*r));
                }
                Op::Recv { from, into, .. } => {
                    *from = peer(*from);
                    into.iter_mut().for_each(|r| *r = map(*r));
                }
                Op::Local { from, into, .. } => {
                    *from = map(*from);
                    *into = map(*into);
                }
            }
        }
        // Where the factor's `tmp` lands, if it stays in `tmp`.
        let moved = map(Region::new(Buf::Tmp, 0, prog.tmp_len));
        let tmp_len = if prog.tmp_len > 0 && moved.buf == Buf::Tmp {
            moved.end().max(prog.tmp_len)
        } else {
            prog.tmp_len
        };
        Program {
            rank,
            tmp_len,
            steps: prog.steps,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::algorithms::{self, Params};
    use crate::collective::{Collective, OpKind};
    use crate::cost::{model::Model, simulate};
    use crate::verify::{verify, Problem, Strictness};

    /// The all-gather of a product G1 × G2 by seed 002's decomposition, from the
    /// registry's ring all-gather on each factor: first every row (a copy of G2)
    /// gathers its m-blocks into its place in `out`, then every column (a copy of G1)
    /// gathers the rows' |G2|·m-blocks. On tori the ring's r → r + 1 is a cycle link,
    /// so the schedule verifies on the torus itself (no other links) and costs
    /// (|G2| − 1)(β + mτ) + (|G1| − 1)(β + |G2|mτ).
    #[test]
    fn allgather_on_a_product_from_the_factors_rings() {
        for (a, b) in [(3u32, 4u32), (4, 4), (2, 5), (5, 3)] {
            let t: Topology = format!("torus:{a}x{b}").parse().unwrap();
            for m in [0u64, 1, 3] {
                let ring = |k: u32, len: u64| {
                    let topo = Topology::complete(k);
                    let p = Problem {
                        topology: &topo,
                        collective: Collective::Allgather,
                        len,
                        commutative: true,
                        counts: None,
                    };
                    algorithms::find(OpKind::Allgather, "ring")
                        .unwrap()
                        .build(&p, &Params::packets(1))
                        .unwrap()
                };
                let (bm, tb) = (b as u64 * m, t.clone());
                // Phase 1, along factor 1 (the rows): out[x·b·m + y'·m] ← block (x, y').
                let rows = Embed::with_regions(
                    ring(b, m),
                    &t,
                    1,
                    Box::new(move |r, reg| match reg.buf {
                        Buf::Out => {
                            Region::new(Buf::Out, tb.coords(r)[0] as u64 * bm + reg.off, reg.len)
                        }
                        _ => reg,
                    }),
                )
                .unwrap();
                // Phase 2, along factor 0: the row's block (the ring's `in`) is already
                // in `out`, where the ring's `out` index puts it.
                let tc = t.clone();
                let cols = Embed::with_regions(
                    ring(a, bm),
                    &t,
                    0,
                    Box::new(move |r, reg| match reg.buf {
                        Buf::In => {
                            Region::new(Buf::Out, tc.coords(r)[0] as u64 * bm + reg.off, reg.len)
                        }
                        _ => reg,
                    }),
                )
                .unwrap();
                let s = Sequence::new(vec![Box::new(rows), Box::new(cols)]).unwrap();
                let p = Problem {
                    topology: &t,
                    collective: Collective::Allgather,
                    len: m,
                    commutative: true,
                    counts: None,
                };
                verify(p, &s, Strictness::default()).unwrap_or_else(|v| panic!("{t} m={m}: {v}"));
                let model = Model::new(1.0, 0.5).unwrap();
                let want = if m == 0 {
                    0.0
                } else {
                    (b - 1) as f64 * model.net.transfer(m) + (a - 1) as f64 * model.net.transfer(bm)
                };
                assert_eq!(simulate(&t, &s, &model).time, want, "{t} m={m}");
            }
        }
    }

    /// A pair's step across cube dimension k joins r and r XOR 2^k, side = bit k; the
    /// embedding refuses a dimension past the cube and a schedule that is not on two
    /// nodes.
    #[test]
    fn cube_dimension_pairs_the_ranks_of_one_bit() {
        let t = Hypercube::new(3).unwrap();
        let r = Region::new(Buf::In, 0, 1);
        let pair = || Box::new(Pair::new([vec![Op::send(1, r)], vec![Op::send(0, r)]], 0));
        for k in 0..3 {
            let e = Embed::cube_dimension(pair(), &t, k, Box::new(|_, r| r)).unwrap();
            for rank in 0..8 {
                let p = e.program(rank);
                assert_eq!(p.steps.len(), 1);
                match &p.steps[0].ops[..] {
                    [Op::Send { to, .. }] => assert_eq!(to[..], [rank ^ (1 << k)]),
                    other => panic!("{other:?}"),
                }
            }
        }
        let id = || Box::new(|_, r| r) as RegionMap;
        assert!(Embed::cube_dimension(pair(), &t, 3, id()).is_err());
        let three = crate::algorithms::plan::empty(3);
        assert!(Embed::cube_dimension(Box::new(three), &t, 0, id()).is_err());
    }

    /// Side by side: two broadcasts from different roots into disjoint halves of `out`
    /// on complete:4 run in the steps of the longer one.
    #[test]
    fn side_by_side_overlays_steps() {
        let t = Topology::complete(4);
        let bcast = |root: u32| {
            let p = Problem {
                topology: &t,
                collective: Collective::Broadcast { root },
                len: 2,
                commutative: true,
                counts: None,
            };
            algorithms::find(OpKind::Broadcast, "linear")
                .unwrap()
                .build(&p, &Params::packets(1))
                .unwrap()
        };
        let s = SideBySide::new(vec![bcast(0), bcast(1)]).unwrap();
        assert_eq!(s.steps(), 3);
        let p0 = s.program(0);
        assert!(p0.steps.iter().all(|st| !st.ops.is_empty()));
        let seq = Sequence::new(vec![bcast(0), bcast(1)]).unwrap();
        assert_eq!(seq.steps(), 6);
        assert!(Sequence::new(vec![bcast(0), {
            let t5 = Topology::complete(5);
            let p = Problem {
                topology: &t5,
                collective: Collective::Broadcast { root: 0 },
                len: 2,
                commutative: true,
                counts: None,
            };
            algorithms::find(OpKind::Broadcast, "linear")
                .unwrap()
                .build(&p, &Params::packets(1))
                .unwrap()
        }])
        .is_err());
    }

    #[test]
    fn embed_checks_the_factor() {
        let t: Topology = "torus:3x4".parse().unwrap();
        let k4 = Topology::complete(4);
        let p = Problem {
            topology: &k4,
            collective: Collective::Allgather,
            len: 1,
            commutative: true,
            counts: None,
        };
        let ring = || {
            algorithms::find(OpKind::Allgather, "ring")
                .unwrap()
                .build(&p, &Params::packets(1))
                .unwrap()
        };
        assert!(Embed::new(ring(), &t, 1).is_ok());
        let e = Embed::new(ring(), &t, 0).err().unwrap();
        assert!(e.to_string().contains("3 nodes"), "{e}");
        assert!(Embed::new(ring(), &t, 2).is_err());
        assert!(Embed::new(ring(), &"bus:4".parse().unwrap(), 0).is_err());
    }
}
