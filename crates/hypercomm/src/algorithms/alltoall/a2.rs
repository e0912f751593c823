//! Algorithm A2: total exchange on any product network G1 × … × Gd, one factor at a
//! time, one block per message.
//!
//! Reference: Dimakopoulos & Dimopoulos, "Decomposition of Total Exchange for
//! Multidimensional Interconnects" (seed 002), §4, Fig. 3 (Algorithm A2), used
//! recursively for d factors; its time is §5, Theorem 2, T = n1·T_B + n2·T_A, and
//! Corollary 2, T = n Σ_i T_i/|V_i|; by Theorem 3 it meets the bound (1), T ≥ AS(G),
//! whenever every factor's exchange does.
//!
//! The paper's model (§1) is ours with `--ports one`, full duplex, β = 0, τ = 1 and one
//! element per block (`--len 1`): a step moves one message of one block per node each
//! way, in one time unit, and blocks are never combined. docs/product.md has the
//! table of A2 against the bound on rings, tori, generalized hypercubes, hypercubes and
//! meshes.
//!
//! Let G = A × B, B the last factor (rank = a·|V_B| + b, as the topology numbers
//! nodes). Phase 1 (Fig. 3 lines 1–3): for each node v_r of A in turn, a total
//! exchange inside every copy of B at once, node (v_i, u_j) sending the block for
//! (v_r, u_k) to (v_i, u_k). Phase 2 (lines 4–6): for each u_k in turn, a total
//! exchange inside every copy of A, node (v_i, u_j) sending the blocks that came from
//! (v_i, u_k). A is handled the same way, recursively, so the factors are crossed from
//! the last to the first; a cube counts as its n edges (K2), highest bit first.
//!
//! Bookkeeping: before crossing factor i, node x holds N blocks in a *holding* buffer,
//! the block at index y (read as a rank: coordinates y_1 … y_d) being the one whose
//! destination agrees with y on the factors not yet crossed (1..=i) and whose source
//! agrees with y on those crossed (i + 1..=d); it is `in` before the first factor and
//! `out` after the last. Crossing factor i moves every block at index y to the node
//! whose coordinate i is y_i, where it lands at y with coordinate i replaced by the
//! sender's: a total exchange along factor i whose "block for c" is the set
//! {y : y_i = c} of N/n_i blocks. A2 sends them one at a time: N/n_i rounds of the
//! factor's exchange ([`super::factor_exchange`]); the blocks a node keeps (y_i = x_i)
//! are copied across by one local op. Holding buffers alternate between two halves of
//! `tmp` (and `out` last); a block in flight waits in a relay slot of `tmp`.
//!
//! Cost: N Σ_i T_i/n_i steps (one local copy step when N = 1, none when m = 0), T_i the
//! factor's exchange (⌊n²/4⌋ on C_n, n − 1 on K_n, 1 on K2, the greedy table's length
//! on a path); every step every node sends at most one message of m elements and
//! receives at most one, some node both: N Σ_i T_i/n_i·(β + mτ) under full duplex, any
//! port rule; under half duplex a step in which a node both sends and receives costs
//! 2(β + mτ): N Σ_i (T_i + T2_i)/n_i·(β + mτ), T2_i the factor's steps with such a node
//! (all of them but on paths). Volume m·Σ_{u,v} dist(u, v): every block crosses its
//! distance, the least possible. Memory: `tmp` of min(d − 1, 2)·N·m elements plus the
//! relay slots (2 on a ring, 0 on a complete graph, a path's table's count), m each.
//!
//! Constraints: a product network (no host, no shared medium); paths of at most
//! [`MAX_PATH`](super::factor_exchange::MAX_PATH) nodes.

use super::factor_exchange::{FactorExchange, Move, Slot};
use crate::algorithms::fit::{self, Fit};
use crate::algorithms::{Formula, Params};
use crate::collective::OpKind;
use crate::cost::model::Duplex;
use crate::error::Error;
use crate::schedule::{Buf, Op, Program, Rank, Region, Schedule, Step, StepStream};
use crate::topology::{Factor, Topology};
use crate::verify::Problem;

/// One dimension crossed by the decomposition.
#[derive(Clone, Debug)]
pub(crate) struct Dim {
    /// Nodes of the factor (≥ 2).
    pub n: u32,
    /// Rank stride of its coordinate.
    pub stride: u32,
    /// Its single-port total exchange.
    pub ex: FactorExchange,
}

/// The dimensions of a product topology, first factor first (a cube as its edges,
/// highest bit first); `Err` says why the topology is not one.
pub(crate) fn product_dims(topo: &Topology) -> Result<Vec<Dim>, String> {
    if topo.host().is_some() {
        return Err("it runs on the nodes of a product network, not with a host".into());
    }
    let Some(fs) = topo.factors() else {
        return Err(
            "it needs a product network (ring, path, complete, hypercube, torus, mesh, ghc, or \
             products of these), not a shared medium"
                .into(),
        );
    };
    factor_dims(fs)
}

/// The dimensions of the product of `fs` (row-major, the last factor fastest), first
/// factor first, a cube as its edges, highest bit first.
pub(crate) fn factor_dims(fs: &[Factor]) -> Result<Vec<Dim>, String> {
    let mut dims = Vec::new();
    for (i, f) in fs.iter().enumerate() {
        let exs = FactorExchange::of(f)?;
        let count = exs.len() as u32;
        let stride: u32 = fs[i + 1..].iter().map(|g| g.nodes()).product();
        for (j, ex) in exs.into_iter().enumerate() {
            // A cube's edges: dimension j of the list is bit count − 1 − j.
            dims.push(Dim {
                n: ex.nodes(),
                stride: stride << (count - 1 - j as u32),
                ex,
            });
        }
    }
    Ok(dims)
}

/// The factors a decomposition's view names: a product's own, `complete:K` as its one
/// factor K_K.
pub(crate) fn view_factors(fit: &Fit) -> Result<Vec<Factor>, Error> {
    match fit {
        Fit::Product { factors } => Ok(factors.clone()),
        Fit::Ranks { k } => Ok(vec![Factor::Complete(*k)]),
        other => Err(Error::InvalidParameter {
            what: "--topology",
            reason: format!("a decomposition needs a product's factors, not {other:?}"),
        }),
    }
}

/// The topologies A2 fits: product networks without host, paths of at most 64 nodes.
pub fn fits(topo: &Topology) -> Result<Fit, String> {
    product_dims(topo).map(|_| fit::product(topo))
}

/// The decomposed total exchange: A2 (`combine = false`, one block per message) or
/// the combining variant of [`super::product`] (one message per peer and step).
#[derive(Clone, Debug)]
pub struct Decomposed {
    k: u32,
    m: u64,
    dims: Vec<Dim>,
    combine: bool,
    /// First step of each phase (phase p crosses dims[d − 1 − p]), and the total.
    starts: Vec<u64>,
    holding: u64,
    relay_slots: u64,
}

impl Decomposed {
    pub(crate) fn new(k: u32, m: u64, dims: Vec<Dim>, combine: bool) -> Decomposed {
        let mut starts = vec![0u64];
        let mut t = 0;
        for d in dims.iter().rev() {
            t += d.ex.steps() * if combine { 1 } else { (k / d.n) as u64 };
            starts.push(t);
        }
        let holding = (dims.len() as u64).saturating_sub(1).min(2);
        let relay_slots = dims
            .iter()
            .map(|d| d.ex.relay_slots() as u64)
            .max()
            .unwrap_or(0);
        Decomposed {
            k,
            m,
            dims,
            combine,
            starts,
            holding,
            relay_slots,
        }
    }

    /// Elements of one relay slot: a block, or all N/n blocks of the widest message.
    fn slot_len(&self) -> u64 {
        if self.combine {
            let widest = self.dims.iter().map(|d| self.k / d.n).max().unwrap_or(0);
            widest as u64 * self.m
        } else {
            self.m
        }
    }

    fn tmp_len(&self) -> u64 {
        if self.m == 0 {
            return 0;
        }
        self.holding * self.k as u64 * self.m + self.relay_slots * self.slot_len()
    }

    /// The holding buffer before phase p, as (buffer, offset).
    fn holding(&self, p: usize) -> (Buf, u64) {
        if p == 0 {
            (Buf::In, 0)
        } else if p == self.dims.len() {
            (Buf::Out, 0)
        } else {
            (Buf::Tmp, ((p as u64 - 1) % 2) * self.k as u64 * self.m)
        }
    }

    fn relay(&self, r: u32, len: u64) -> Region {
        let base = self.holding * self.k as u64 * self.m;
        Region::new(Buf::Tmp, base + r as u64 * self.slot_len(), len)
    }

    /// The blocks {y : y_i = c} of a holding buffer, as one region.
    fn column(&self, (buf, off): (Buf, u64), d: &Dim, c: u32) -> Region {
        let (n, s, m) = (d.n as u64, d.stride as u64, self.m);
        Region::strided(
            buf,
            off + c as u64 * s * m,
            s * m,
            n * s * m,
            self.k as u64 / (n * s),
        )
    }

    /// Step `t` of `rank`.
    fn step(&self, rank: Rank, t: u64) -> Step {
        let mut step = Step::default();
        let m = self.m;
        if self.dims.is_empty() {
            step.ops.push(Op::copy(
                Region::new(Buf::In, 0, m),
                Region::new(Buf::Out, 0, m),
            ));
            return step;
        }
        let p = self.starts.partition_point(|&s| s <= t) - 1;
        let d = &self.dims[self.dims.len() - 1 - p];
        let local = t - self.starts[p];
        let (from_buf, to_buf) = (self.holding(p), self.holding(p + 1));
        let c = (rank / d.stride) % d.n;
        let at = |coord: u32| rank - c * d.stride + coord * d.stride;
        let (round, s) = if self.combine {
            (0, local)
        } else {
            (local / d.ex.steps(), local % d.ex.steps())
        };
        if local == 0 {
            step.ops.push(Op::Local {
                from: self.column(from_buf, d, c),
                into: self.column(to_buf, d, c),
                action: Default::default(),
            });
        }
        // Round q of A2: the blocks whose holding index, but for coordinate i, is q.
        let (n, st) = (d.n as u64, d.stride as u64);
        let base = (round / st) * n * st + round % st;
        let block = |(buf, off): (Buf, u64), coord: u32| {
            Region::new(buf, off + (base + coord as u64 * st) * m, m)
        };
        let len = if self.combine {
            (self.k / d.n) as u64 * m
        } else {
            m
        };
        if let Some(Move {
            peer, dest, slot, ..
        }) = d.ex.send(s, c)
        {
            let from = match (slot, self.combine) {
                (Slot::Holding, false) => block(from_buf, dest),
                (Slot::Holding, true) => self.column(from_buf, d, dest),
                (Slot::Relay(r), _) => self.relay(r, len),
            };
            step.ops.push(Op::send(at(peer), from));
        }
        if let Some(Move {
            peer, origin, slot, ..
        }) = d.ex.recv(s, c)
        {
            let into = match (slot, self.combine) {
                (Slot::Holding, false) => block(to_buf, origin),
                (Slot::Holding, true) => self.column(to_buf, d, origin),
                (Slot::Relay(r), _) => self.relay(r, len),
            };
            step.ops.push(Op::recv(at(peer), into));
        }
        step
    }

    /// Σ over phases of (steps, steps in which a node both sends and receives, the
    /// elements of one message).
    pub(crate) fn phases(&self) -> impl Iterator<Item = (u64, u64, u64)> + '_ {
        self.dims.iter().map(move |d| {
            let rounds = if self.combine {
                1
            } else {
                (self.k / d.n) as u64
            };
            let len = if self.combine {
                (self.k / d.n) as u64 * self.m
            } else {
                self.m
            };
            (rounds * d.ex.steps(), rounds * d.ex.double_steps(), len)
        })
    }

    /// The exact time under `params.model` (rounds timing).
    pub(crate) fn time(&self, params: &Params) -> f64 {
        if self.m == 0 {
            return 0.0;
        }
        let link = params.model.net;
        self.phases()
            .map(|(steps, double, len)| {
                let n = match params.model.duplex {
                    Duplex::Full => steps,
                    Duplex::Half | Duplex::HalfLink => steps + double,
                };
                n as f64 * link.transfer(len)
            })
            .sum()
    }
}

impl Schedule for Decomposed {
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

fn dims_of(problem: &Problem<'_>, fit: &Fit) -> Result<Vec<Dim>, Error> {
    if problem.collective.kind() != OpKind::Alltoall {
        return Err(Error::InvalidParameter {
            what: "--op",
            reason: format!("a2 performs alltoall, not {}", problem.collective),
        });
    }
    factor_dims(&view_factors(fit)?).map_err(|reason| Error::InvalidParameter {
        what: "--topology",
        reason,
    })
}

/// Build A2 on the product's factors.
pub fn build(
    problem: &Problem<'_>,
    _params: &Params,
    fit: &Fit,
) -> Result<Box<dyn Schedule>, Error> {
    let dims = dims_of(problem, fit)?;
    Ok(Box::new(Decomposed::new(
        problem.topology.nodes(),
        problem.len,
        dims,
        false,
    )))
}

/// N Σ_i T_i/n_i·(β + mτ) (Corollary 2), and its half-duplex form.
pub fn formulas(problem: &Problem<'_>, params: &Params) -> Vec<Formula> {
    let Some(Ok(dims)) = fits(problem.topology).ok().map(|f| dims_of(problem, &f)) else {
        return vec![];
    };
    let s = Decomposed::new(problem.topology.nodes(), problem.len, dims, false);
    let value = s.time(params);
    vec![match params.model.duplex {
        Duplex::HalfLink => return vec![],
        Duplex::Full => Formula::exact(
            "n Σ_i T_i/|V_i| (β + mτ)",
            "Dimakopoulos & Dimopoulos, §5, Theorem 2 and Corollary 2",
            value,
        ),
        Duplex::Half => Formula::exact(
            "n Σ_i (T_i + T2_i)/|V_i| (β + mτ), T2_i the factor's steps in which a node sends and receives",
            "Dimakopoulos & Dimopoulos, §5, Corollary 2, each two-way step twice (half duplex)",
            value,
        ),
    }]
}

/// The steps of A2 on `topo` in the paper's model (one block per message), from the
/// factors: N Σ_i T_i/n_i. `None` where A2 does not fit.
pub fn steps(topo: &Topology) -> Option<u64> {
    let dims = product_dims(topo).ok()?;
    let k = topo.nodes() as u64;
    Some(dims.iter().map(|d| k / d.n as u64 * d.ex.steps()).sum())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bounds::lower_bound;
    use crate::collective::Collective;
    use crate::cost::model::{Model, Ports};
    use crate::cost::simulate;
    use crate::verify::{verify, Strictness};

    fn run(t: &str, m: u64, model: &Model) -> (f64, f64, f64) {
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
        let s = build(&problem, &params, &fits(problem.topology).unwrap()).unwrap();
        verify(problem, s.as_ref(), Strictness::default()).unwrap_or_else(|v| panic!("{t}: {v}"));
        let time = simulate(&topo, s.as_ref(), model).time;
        let f = formulas(&problem, &params)[0].value;
        let lb = lower_bound(&topo, &Collective::Alltoall, m, model).unwrap();
        (time, f, lb)
    }

    fn paper() -> Model {
        Model {
            ports: Ports::One,
            ..Model::new(0.0, 1.0).unwrap()
        }
    }

    /// Theorem 3: on products of Cayley factors A2 takes exactly ⌈AS(G)⌉ unit steps.
    #[test]
    fn meets_the_average_status_on_cayley_products() {
        for t in [
            "ring:3",
            "ring:4",
            "ring:7",
            "ring:8",
            "torus:3x4",
            "torus:3x5",
            "torus:4x4x2",
            "ghc:3x4",
            "hypercube:3",
            "ring:5*complete:3",
            "torus:3x3x3",
            "complete:5",
        ] {
            let (time, f, lb) = run(t, 1, &paper());
            assert_eq!(time, f, "{t}");
            assert_eq!(time, lb, "{t}: A2 {time}, bound {lb}");
            let topo: Topology = t.parse().unwrap();
            assert_eq!(steps(&topo), Some(time as u64));
        }
    }

    /// Meshes: A2 is above the bound, by the paths' own gap.
    #[test]
    fn misses_the_bound_on_meshes() {
        for (t, want, bound) in [("path:3", 4.0, 3.0), ("mesh:3x3", 24.0, 16.0)] {
            let (time, f, lb) = run(t, 1, &paper());
            assert_eq!((time, f, lb), (want, want, bound), "{t}");
        }
    }

    #[test]
    fn formula_is_exact_under_every_model() {
        for t in [
            "torus:3x4",
            "mesh:3x4",
            "ring:5*path:3",
            "hypercube:2*ring:3",
        ] {
            for (ports, duplex) in [
                (Ports::All, Duplex::Full),
                (Ports::One, Duplex::Half),
                (Ports::One, Duplex::Full),
            ] {
                let model = Model {
                    ports,
                    duplex,
                    ..Model::new(0.7, 0.13).unwrap()
                };
                for m in [0, 1, 3] {
                    let (time, f, lb) = run(t, m, &model);
                    assert!(
                        (time - f).abs() < 1e-9,
                        "{t} m {m} {ports} {duplex}: {time} vs {f}"
                    );
                    assert!(lb <= time + 1e-9, "{t}: bound {lb} > {time}");
                }
            }
        }
    }
}
