//! The all-port product total exchange: every block cut into d parts, part j crossing
//! the d factors in an order rotated by j, so that in every phase each factor carries
//! one part and a node uses the links of all its factors at once.
//!
//! Reference: the decomposition of Dimakopoulos & Dimopoulos (seed 002, §4, Fig. 3:
//! one factor at a time, any order) with each phase's blocks combined per peer
//! ([`super::product`]), run d times side by side on 1/d of the data in the d rotations
//! of the factor order, as Johnsson & Ho (1989) rotate the dimension orders of their
//! all-port hypercube exchanges ([`super::rotated_exchange`]); beyond the paper, whose
//! model is single port.
//!
//! Part j (elements [o_j, o_j + l_j) of every block, l_j = ⌊m/d⌋ or ⌈m/d⌉) crosses, in
//! phase q = 0..d − 1, dimension d − 1 − ((q + j) mod d): in each phase the d parts
//! cross d different factors. The bookkeeping is [`super::a2`]'s (it holds for any
//! order of the factors) on the part's slice of the holding buffers, which the parts
//! share; a part's message is its slice of the N/n_i blocks {y : y_i = c}, a
//! gather list of strided regions. A phase lasts max_j T_{i(j, q)} steps (the parts on
//! shorter factors idle at its end); every part has its own relay slots.
//!
//! Cost (β–τ model, all ports, full duplex, rounds): in step s of phase q a node sends
//! one message per part still active, on a different factor's link each, so the step
//! costs the longest: T = Σ_q Σ_{s < max_j T_{i(j,q)}} max_{j : s < T_{i(j,q)}}
//! (β + (N/n_{i(j,q)}) l_j τ). With d equal factors (tori k^d, hypercubes) that is
//! d·T_1·β + Σ_i T_i (N/n_i)(m/d) τ when d divides m: the τ term of `product` divided
//! by d, d times its start-ups. Volume: every element crosses the same links as in
//! `product`. No closed form is stated under other port rules, where the parts of a
//! step queue on one port. Memory: `tmp` of min(d − 1, 2)·N·m elements plus d relay
//! slots of the widest part's message per relay of a factor (rings, paths).
//!
//! Constraints: a product network without host (paths of at most 64 nodes);
//! `complete:K` for composite K, with the shape of `product` or a given one.

use super::a2::Dim;
use super::factor_exchange::{Move, Slot};
use super::product::{alltoall_dims, alltoall_shaped_dims};
use crate::algorithms::fit::Fit;
use crate::algorithms::{Formula, Params};
use crate::cost::model::{Duplex, Ports};
use crate::error::Error;
use crate::schedule::{Buf, Op, Program, Rank, Region, Regions, Schedule, Step, StepStream};
use crate::topology::Topology;
use crate::verify::Problem;

/// Whether it fits: as `product`.
pub fn fits(topo: &Topology) -> Result<Fit, String> {
    super::product::fits(topo)
}

/// The rotated, sliced total exchange.
#[derive(Clone, Debug)]
pub struct AllPortProduct {
    k: u32,
    m: u64,
    dims: Vec<Dim>,
    /// (offset, length) of each part within a block; parts of length 0 idle.
    parts: Vec<(u64, u64)>,
    /// First step of each phase, and the total.
    starts: Vec<u64>,
    holding: u64,
    relay_slots: u64,
    slot_len: u64,
}

impl AllPortProduct {
    fn new(k: u32, m: u64, dims: Vec<Dim>) -> Self {
        let d = dims.len() as u64;
        let parts: Vec<(u64, u64)> = (0..d)
            .map(|j| {
                let l = m / d + u64::from(j < m % d);
                (j * (m / d) + j.min(m % d), l)
            })
            .collect();
        let mut s = AllPortProduct {
            k,
            m,
            dims,
            parts,
            starts: vec![0],
            holding: d.saturating_sub(1).min(2),
            relay_slots: 0,
            slot_len: 0,
        };
        let mut t = 0;
        for q in 0..d as usize {
            t += (0..d as usize)
                .filter(|&j| s.parts[j].1 > 0)
                .map(|j| s.dim(j, q).ex.steps())
                .max()
                .unwrap_or(0);
            s.starts.push(t);
        }
        s.relay_slots = s
            .dims
            .iter()
            .map(|d| d.ex.relay_slots() as u64)
            .max()
            .unwrap_or(0);
        let widest = s.dims.iter().map(|d| k / d.n).max().unwrap_or(0) as u64;
        s.slot_len = widest * s.parts.first().map_or(0, |p| p.1);
        s
    }

    /// The dimension part `j` crosses in phase `q`.
    fn dim(&self, j: usize, q: usize) -> &Dim {
        let d = self.dims.len();
        &self.dims[d - 1 - (q + j) % d]
    }

    fn tmp_len(&self) -> u64 {
        if self.m == 0 {
            return 0;
        }
        let d = self.dims.len() as u64;
        self.holding * self.k as u64 * self.m + d * self.relay_slots * self.slot_len
    }

    /// The holding buffer before phase q, as (buffer, offset).
    fn holding(&self, q: usize) -> (Buf, u64) {
        if q == 0 {
            (Buf::In, 0)
        } else if q == self.dims.len() {
            (Buf::Out, 0)
        } else {
            (Buf::Tmp, ((q as u64 - 1) % 2) * self.k as u64 * self.m)
        }
    }

    fn relay(&self, j: usize, r: u32, len: u64) -> Region {
        let base = self.holding * self.k as u64 * self.m;
        let slot = j as u64 * self.relay_slots + r as u64;
        Region::new(Buf::Tmp, base + slot * self.slot_len, len)
    }

    /// Part `(o, l)` of the blocks {y : y_i = c} of a holding buffer, blocks in
    /// ascending order: one strided region when the column is one block per group,
    /// else a list over whichever of the groups or the blocks in a group is shorter
    /// (the same order on every node, so a sender's list and a receiver's match).
    fn column(&self, (buf, off): (Buf, u64), d: &Dim, c: u32, (o, l): (u64, u64)) -> Regions {
        let (n, s, m) = (d.n as u64, d.stride as u64, self.m);
        let groups = self.k as u64 / (n * s);
        let first = off + c as u64 * s * m + o;
        if l == m {
            return smallvec::smallvec![Region::strided(
                buf,
                off + c as u64 * s * m,
                s * m,
                n * s * m,
                groups
            )];
        }
        if s == 1 || groups == 1 {
            // One segment per block at a constant stride.
            let stride = if s == 1 { n * m } else { m };
            return smallvec::smallvec![Region::strided(buf, first, l, stride, groups * s)];
        }
        // Group by group, each group's s blocks as one strided region.
        (0..groups)
            .map(|a| Region::strided(buf, first + a * n * s * m, l, m, s))
            .collect()
    }

    fn step(&self, rank: Rank, t: u64) -> Step {
        let mut step = Step::default();
        if self.dims.is_empty() {
            let m = self.m;
            step.ops.push(Op::copy(
                Region::new(Buf::In, 0, m),
                Region::new(Buf::Out, 0, m),
            ));
            return step;
        }
        let q = self.starts.partition_point(|&s| s <= t) - 1;
        let local = t - self.starts[q];
        let (from_buf, to_buf) = (self.holding(q), self.holding(q + 1));
        for (j, &part) in self.parts.iter().enumerate() {
            if part.1 == 0 {
                continue;
            }
            let d = self.dim(j, q);
            let c = (rank / d.stride) % d.n;
            let at = |coord: u32| rank - c * d.stride + coord * d.stride;
            if local == 0 {
                let from = self.column(from_buf, d, c, part);
                let into = self.column(to_buf, d, c, part);
                for (f, i) in from.into_iter().zip(into) {
                    step.ops.push(Op::Local {
                        from: f,
                        into: i,
                        action: Default::default(),
                    });
                }
            }
            if local >= d.ex.steps() {
                continue;
            }
            let len = (self.k / d.n) as u64 * part.1;
            if let Some(Move {
                peer, dest, slot, ..
            }) = d.ex.send(local, c)
            {
                let from = match slot {
                    Slot::Holding => self.column(from_buf, d, dest, part),
                    Slot::Relay(r) => smallvec::smallvec![self.relay(j, r, len)],
                };
                step.ops.push(Op::Send {
                    to: smallvec::smallvec![at(peer)],
                    from,
                });
            }
            if let Some(Move {
                peer, origin, slot, ..
            }) = d.ex.recv(local, c)
            {
                let into = match slot {
                    Slot::Holding => self.column(to_buf, d, origin, part),
                    Slot::Relay(r) => smallvec::smallvec![self.relay(j, r, len)],
                };
                step.ops.push(Op::Recv {
                    from: at(peer),
                    into,
                    action: Default::default(),
                });
            }
        }
        step
    }

    /// The exact time under all ports and full duplex (rounds timing).
    fn time(&self, params: &Params) -> f64 {
        if self.m == 0 {
            return 0.0;
        }
        let link = params.model.net;
        (0..self.dims.len())
            .map(|q| {
                let len = self.starts[q + 1] - self.starts[q];
                (0..len)
                    .map(|s| {
                        self.parts
                            .iter()
                            .enumerate()
                            .filter(|&(j, p)| p.1 > 0 && s < self.dim(j, q).ex.steps())
                            .map(|(j, p)| link.transfer((self.k / self.dim(j, q).n) as u64 * p.1))
                            .fold(0.0, f64::max)
                    })
                    .sum::<f64>()
            })
            .sum()
    }
}

impl Schedule for AllPortProduct {
    fn nodes(&self) -> u32 {
        self.k
    }
    fn steps(&self) -> usize {
        if self.m == 0 {
            0
        } else if self.dims.is_empty() {
            1
        } else {
            *self.starts.last().expect("one start at least") as usize
        }
    }
    fn program(&self, rank: Rank) -> Program {
        self.stream(rank).into_program()
    }
    fn stream(&self, rank: Rank) -> StepStream<'_> {
        let steps = (0..self.steps() as u64).map(move |t| self.step(rank, t));
        StepStream::new(rank, self.tmp_len(), steps)
    }
}

fn dims_of(problem: &Problem<'_>, params: &Params, fit: &Fit) -> Result<Vec<Dim>, Error> {
    alltoall_dims("product-allport", problem, params, fit)
}

/// Build with the topology's factors (on `complete:K`, `product`'s shape).
pub fn build(
    problem: &Problem<'_>,
    params: &Params,
    fit: &Fit,
) -> Result<Box<dyn Schedule>, Error> {
    let dims = dims_of(problem, params, fit)?;
    Ok(Box::new(AllPortProduct::new(
        problem.topology.nodes(),
        problem.len,
        dims,
    )))
}

/// Build on a single-hop topology with the ranks laid out as `shape` (`--shape`).
pub fn build_shaped(
    problem: &Problem<'_>,
    _params: &Params,
    shape: &[u32],
) -> Result<Box<dyn Schedule>, Error> {
    let dims = alltoall_shaped_dims("product-allport", problem, shape)?;
    Ok(Box::new(AllPortProduct::new(
        problem.topology.nodes(),
        problem.len,
        dims,
    )))
}

/// The exact form under all ports and full duplex.
pub fn formulas(problem: &Problem<'_>, params: &Params) -> Vec<Formula> {
    if params.model.ports != Ports::All || params.model.duplex != Duplex::Full {
        return vec![];
    }
    let Some(Ok(dims)) = fits(problem.topology)
        .ok()
        .map(|f| dims_of(problem, params, &f))
    else {
        return vec![];
    };
    let s = AllPortProduct::new(problem.topology.nodes(), problem.len, dims);
    vec![Formula::exact(
        "Σ_q Σ_s max_j active (β + (n/|V_i|) l_j τ), part j (l_j = ⌊m/d⌋ or ⌈m/d⌉) on factor i = d − 1 − ((q + j) mod d)",
        "Dimakopoulos & Dimopoulos §4 combined per peer, with Johnsson & Ho's rotated dimension orders (beyond the paper)",
        s.time(params),
    )]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bounds::lower_bound;
    use crate::collective::Collective;
    use crate::cost::model::Model;
    use crate::cost::simulate;
    use crate::verify::{verify, Strictness};

    fn all_port() -> Model {
        Model {
            ports: Ports::All,
            duplex: Duplex::Full,
            ..Model::new(1.0, 0.01).unwrap()
        }
    }

    /// (simulated time, the form (NaN where none is stated), the lower bound, `product`'s
    /// time), verified.
    fn run(t: &str, shape: Option<&[u32]>, m: u64, model: &Model) -> (f64, f64, f64, f64) {
        let topo: Topology = t.parse().unwrap();
        let problem = Problem {
            topology: &topo,
            collective: Collective::Alltoall,
            len: m,
            commutative: true,
            counts: None,
        };
        let params = Params {
            model: *model,
            ..Params::default()
        };
        let (s, p) = match shape {
            Some(sh) => (
                build_shaped(&problem, &params, sh).unwrap(),
                super::super::product::build_shaped(&problem, &params, sh).unwrap(),
            ),
            None => (
                build(&problem, &params, &fits(problem.topology).unwrap()).unwrap(),
                super::super::product::build(&problem, &params, &fits(problem.topology).unwrap())
                    .unwrap(),
            ),
        };
        verify(problem, s.as_ref(), Strictness::default())
            .unwrap_or_else(|v| panic!("{t} {shape:?} m {m}: {v}"));
        let time = simulate(&topo, s.as_ref(), model).time;
        let form = match shape {
            Some(sh) => {
                let dims = super::super::product::shaped_dims(&problem, sh).unwrap();
                AllPortProduct::new(topo.nodes(), m, dims).time(&params)
            }
            None => formulas(&problem, &params)
                .first()
                .map_or(f64::NAN, |f| f.value),
        };
        let lb = lower_bound(&topo, &Collective::Alltoall, m, model).unwrap();
        (time, form, lb, simulate(&topo, p.as_ref(), model).time)
    }

    #[test]
    fn verifies_meets_its_form_and_stays_above_the_bound() {
        for t in [
            "torus:3x4",
            "torus:4x4",
            "ghc:3x4",
            "hypercube:3",
            "mesh:3x3",
            "ring:5*path:3",
            "torus:3x3x3",
            "complete:12",
            "ring:6",
        ] {
            for m in [0, 1, 2, 5, 7] {
                let (time, form, lb, _) = run(t, None, m, &all_port());
                assert!((time - form).abs() < 1e-9, "{t} m {m}: {time} vs {form}");
                assert!(lb <= time + 1e-9, "{t} m {m}: bound {lb} > {time}");
            }
        }
        // A given shape, 1s allowed.
        for (k, shape) in [(6, &[2, 3][..]), (12, &[3, 2, 2]), (5, &[1, 5])] {
            let t = format!("complete:{k}");
            let (time, form, lb, _) = run(&t, Some(shape), 5, &all_port());
            assert!((time - form).abs() < 1e-9 && lb <= time, "{t} {shape:?}");
        }
    }

    /// One factor: the same schedule as `product`. Equal factors, bandwidth-bound:
    /// the τ term falls by d, so it beats `product` under all ports; on one port it
    /// queues and does not.
    #[test]
    fn all_ports_divide_the_volume_term() {
        let (time, _, _, product) = run("ring:7", None, 6, &all_port());
        assert_eq!(time, product);
        let bw = Model {
            ports: Ports::All,
            duplex: Duplex::Full,
            ..Model::new(1.0, 1.0).unwrap()
        };
        for (t, d) in [
            ("torus:4x4", 2.0),
            ("hypercube:4", 4.0),
            ("torus:3x3x3", 3.0),
        ] {
            let m = 1200;
            let (time, _, lb, product) = run(t, None, m, &bw);
            // β (start-ups) aside, exactly 1/d of product's τ term.
            let topo: Topology = t.parse().unwrap();
            let problem = Problem {
                topology: &topo,
                collective: Collective::Alltoall,
                len: m,
                commutative: true,
                counts: None,
            };
            let steps = build(
                &problem,
                &Params::default(),
                &fits(problem.topology).unwrap(),
            )
            .unwrap()
            .steps() as f64;
            let psteps = super::super::product::build(
                &problem,
                &Params::default(),
                &fits(problem.topology).unwrap(),
            )
            .unwrap()
            .steps() as f64;
            let (tau, ptau) = (time - steps, product - psteps);
            assert!((tau - ptau / d).abs() < 1e-6, "{t}: {tau} vs {ptau}/{d}");
            assert!(
                time < product && lb <= time,
                "{t}: {time} vs {product}, bound {lb}"
            );
        }
        let one = Model {
            ports: Ports::One,
            ..Model::new(1.0, 1.0).unwrap()
        };
        let (time, _, _, product) = run("torus:4x4", None, 1200, &one);
        assert!(time >= product, "{time} vs {product}");
        let topo: Topology = "torus:4x4".parse().unwrap();
        let problem = Problem {
            topology: &topo,
            collective: Collective::Alltoall,
            len: 4,
            commutative: true,
            counts: None,
        };
        let p = Params {
            model: one,
            ..Params::default()
        };
        assert!(formulas(&problem, &p).is_empty(), "no form under one port");
    }
}
