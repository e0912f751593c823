//! All-gather by dimensions on a product network: a ring all-gather along each factor
//! in turn, last factor first, of every block gathered so far.
//!
//! Reference: the decomposition of Dimakopoulos & Dimopoulos (seed 002, §4: a
//! collective on G1 × … × Gd as collectives inside the copies of each factor) applied
//! to the all-gather (multinode broadcast), with the ring all-gather of Thakur,
//! Rabenseifner & Gropp 2005 inside each factor; beyond the paper. Gloo's
//! AllreduceBcube and the hierarchical all-gathers of clusters compose the same way.
//!
//! Crossing factor i (n_i nodes, S_i = Π_{j>i} n_j the blocks gathered per node so
//! far, one contiguous range of `out`: the ranks that agree with the node on factors
//! 1..=i), node x passes ranges around the ring of its line: in step s it sends the
//! range it received in step s − 1 (its own first) to coordinate c + 1 and receives
//! the one of coordinate c − s from c − 1, straight into its place in `out`. A cycle
//! and a complete graph both link c to c + 1 (mod n_i); a cube is its edges.
//!
//! Cost: Σ_i (n_i − 1)(β + S_i m τ) under full duplex, any port rule, twice that under
//! half duplex (every node sends and receives in every step); one copy step when
//! N = 1, none when m = 0. Volume N Σ_i (n_i − 1) S_i m = N(N − 1)m, the least.
//!
//! The shape on `complete:K`: the factors of two or more ≥ 2 whose closed form is least
//! under the model, as the all-to-all `product` ([`crate::algorithms::alltoall::product`]);
//! prime K is refused.
//!
//! Constraints: a product network of cycles, complete graphs and cubes (no path of 3
//! nodes or more: it has no ring), no host; `complete:K` for composite K.

use crate::algorithms::alltoall::product::{
    best_shape_by, shape_dims, shaped_dims, smallest_factor,
};
use crate::algorithms::fit::{self, Fit};
use crate::algorithms::{Formula, Params};
use crate::collective::OpKind;
use crate::cost::model::{Duplex, Model};
use crate::error::Error;
use crate::schedule::{Buf, Op, Program, Rank, Region, Schedule, Step, StepStream};
use crate::topology::{Factor, Topology};
use crate::verify::Problem;

/// (n_i, stride_i) of the dimensions crossed, first factor first.
fn topo_dims(topo: &Topology) -> Result<Vec<(u32, u32)>, String> {
    if topo.host().is_some() {
        return Err("it runs on the nodes of a product network, not with a host".into());
    }
    let Some(fs) = topo.factors() else {
        return Err("it needs a product network, not a shared medium".into());
    };
    factor_dims(fs)
}

/// (n_i, stride_i) of the dimensions of the product of `fs` (row-major, the last
/// factor fastest), first factor first, a cube as its edges, highest bit first.
fn factor_dims(fs: &[Factor]) -> Result<Vec<(u32, u32)>, String> {
    let mut dims = Vec::new();
    for (i, f) in fs.iter().enumerate() {
        let stride: u32 = fs[i + 1..].iter().map(|g| g.nodes()).product();
        match *f {
            Factor::Path(k) if k >= 3 => {
                return Err(format!(
                "path:{k} has no ring to pass blocks around (cycles, complete graphs and cubes do)"
            ))
            }
            Factor::Cube(h) => {
                for b in (0..h.dim()).rev() {
                    dims.push((2, stride << b));
                }
            }
            _ if f.nodes() >= 2 => dims.push((f.nodes(), stride)),
            _ => {}
        }
    }
    Ok(dims)
}

/// Whether it fits: a product of cycles, complete graphs and cubes; composite K on
/// `complete:K`.
pub fn fits(topo: &Topology) -> Result<Fit, String> {
    if let Some(k) = topo.as_complete() {
        return if k == 1 || smallest_factor(k) < k {
            Ok(fit::product(topo))
        } else {
            Err(format!(
                "complete:{k} has a prime number of ranks, so no shape of two factors ≥ 2 \
                 (a shape with a 1 is the ring: `--shape 1x{k}` on run and bench, \
                 Algorithm::build_shaped in the library)"
            ))
        };
    }
    topo_dims(topo).map(|_| fit::product(topo))
}

/// Σ_i (n_i − 1)(β + S_i m τ) of `shape` on K ranks, doubled under half duplex.
fn shape_time(shape: &[u32], m: u64, model: &Model) -> f64 {
    if m == 0 {
        return 0.0;
    }
    let twice = if model.duplex == Duplex::Half {
        2.0
    } else {
        1.0
    };
    let mut after = 1u64;
    let mut t = 0.0;
    for &n in shape.iter().rev() {
        t += twice * (n - 1) as f64 * model.net.transfer(after * m);
        after *= n as u64;
    }
    t
}

/// The all-gather by dimensions.
#[derive(Clone, Debug)]
pub struct ProductAllgather {
    k: u32,
    m: u64,
    /// (n_i, stride_i), first factor first; crossed last first.
    dims: Vec<(u32, u32)>,
    starts: Vec<u64>,
}

fn dims_of(problem: &Problem<'_>, params: &Params, fit: &Fit) -> Result<Vec<(u32, u32)>, Error> {
    if problem.collective.kind() != OpKind::Allgather {
        return Err(Error::InvalidParameter {
            what: "--op",
            reason: format!("product performs allgather, not {}", problem.collective),
        });
    }
    let fs = match fit {
        Fit::Ranks { k } => {
            let (k, m, model) = (*k, problem.len, params.model);
            let shape =
                best_shape_by(k, &|s: &[u32]| shape_time(s, m, &model)).unwrap_or_else(|| vec![k]);
            return Ok(shape_dims(k, &shape)?
                .iter()
                .map(|d| (d.n, d.stride))
                .collect());
        }
        Fit::Product { factors } => factors,
        other => {
            return Err(Error::InvalidParameter {
                what: "--topology",
                reason: format!("product needs a product's factors, not {other:?}"),
            })
        }
    };
    factor_dims(fs).map_err(|reason| Error::InvalidParameter {
        what: "--topology",
        reason,
    })
}

impl ProductAllgather {
    fn new(k: u32, m: u64, dims: Vec<(u32, u32)>) -> Self {
        let mut starts = vec![0];
        for &(n, _) in dims.iter().rev() {
            starts.push(starts.last().copied().unwrap_or(0) + n as u64 - 1);
        }
        ProductAllgather { k, m, dims, starts }
    }

    fn step(&self, rank: Rank, t: u64) -> Step {
        let m = self.m;
        let mut step = Step::default();
        if t == 0 {
            step.ops.push(Op::copy(
                Region::new(Buf::In, 0, m),
                Region::new(Buf::Out, rank as u64 * m, m),
            ));
        }
        if self.dims.is_empty() {
            return step;
        }
        let p = self.starts.partition_point(|&s| s <= t) - 1;
        let (n, stride) = self.dims[self.dims.len() - 1 - p];
        let s = t - self.starts[p] + 1; // 1..n − 1
        let c = (rank / stride) % n;
        let at = |coord: u32| rank - c * stride + coord * stride;
        // The range of the node at coordinate `coord` of the line: S_i = stride blocks.
        let range = |coord: u32| {
            let first = (at(coord) / stride) * stride;
            Region::new(Buf::Out, first as u64 * m, stride as u64 * m)
        };
        let send = (c + n - (s as u32 - 1)) % n;
        let recv = (c + n - s as u32) % n;
        // Step 0 sends the own block (the last factor's stride is 1) from `in`: the
        // copy into `out` runs after the step's sends.
        let from = if t == 0 {
            Region::new(Buf::In, 0, m)
        } else {
            range(send)
        };
        step.ops.push(Op::send(at((c + 1) % n), from));
        step.ops.push(Op::recv(at((c + n - 1) % n), range(recv)));
        step
    }
}

impl Schedule for ProductAllgather {
    fn nodes(&self) -> u32 {
        self.k
    }
    fn steps(&self) -> usize {
        if self.m == 0 {
            0
        } else {
            (*self.starts.last().unwrap_or(&0)).max(1) as usize
        }
    }
    fn program(&self, rank: Rank) -> Program {
        self.stream(rank).into_program()
    }
    fn stream(&self, rank: Rank) -> StepStream<'_> {
        let steps = (0..self.steps() as u64).map(move |t| self.step(rank, t));
        StepStream::new(rank, 0, steps)
    }
}

/// Build (on `complete:K`, the best shape).
pub fn build(
    problem: &Problem<'_>,
    params: &Params,
    fit: &Fit,
) -> Result<Box<dyn Schedule>, Error> {
    let dims = dims_of(problem, params, fit)?;
    Ok(Box::new(ProductAllgather::new(
        problem.topology.nodes(),
        problem.len,
        dims,
    )))
}

/// Build on a single-hop topology (`complete:K`, …) with the ranks laid out as `shape`
/// (row-major, the last factor fastest; factors of 1 allowed): `--shape AxB`.
pub fn build_shaped(
    problem: &Problem<'_>,
    _params: &Params,
    shape: &[u32],
) -> Result<Box<dyn Schedule>, Error> {
    if problem.collective.kind() != OpKind::Allgather {
        return Err(Error::InvalidParameter {
            what: "--op",
            reason: format!("product performs allgather, not {}", problem.collective),
        });
    }
    let dims = shaped_dims(problem, shape)?
        .iter()
        .map(|d| (d.n, d.stride))
        .collect();
    Ok(Box::new(ProductAllgather::new(
        problem.topology.nodes(),
        problem.len,
        dims,
    )))
}

/// Σ_i (n_i − 1)(β + S_i m τ), twice under half duplex.
pub fn formulas(problem: &Problem<'_>, params: &Params) -> Vec<Formula> {
    let Some(Ok(dims)) = fits(problem.topology)
        .ok()
        .map(|f| dims_of(problem, params, &f))
    else {
        return vec![];
    };
    let shape: Vec<u32> = dims.iter().map(|d| d.0).collect();
    let value = shape_time(&shape, problem.len, &params.model);
    vec![match params.model.duplex {
        Duplex::HalfLink => return vec![],
        Duplex::Full => Formula::exact(
            "Σ_i (|V_i| − 1)(β + Π_{j>i}|V_j| m τ)",
            "Dimakopoulos & Dimopoulos §4 decomposition with ring all-gathers (beyond the paper)",
            value,
        ),
        Duplex::Half => Formula::exact(
            "2 Σ_i (|V_i| − 1)(β + Π_{j>i}|V_j| m τ)",
            "Dimakopoulos & Dimopoulos §4 decomposition with ring all-gathers, half duplex (beyond the paper)",
            value,
        ),
    }]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collective::Collective;
    use crate::cost::simulate;
    use crate::verify::{verify, Strictness};

    #[test]
    fn verifies_and_meets_its_formula() {
        for t in [
            "torus:3x4",
            "ghc:3x4",
            "hypercube:3",
            "complete:12",
            "complete:4*ring:3",
            "ring:5",
            "complete:1",
        ] {
            let topo: Topology = t.parse().unwrap();
            for m in [0, 1, 5] {
                for duplex in [Duplex::Full, Duplex::Half] {
                    let model = Model {
                        duplex,
                        ..Model::new(1.0, 0.01).unwrap()
                    };
                    let problem = Problem {
                        topology: &topo,
                        collective: Collective::Allgather,
                        len: m,
                        commutative: true,
                        counts: None,
                    };
                    let params = Params {
                        model,
                        ..Params::default()
                    };
                    let s = build(&problem, &params, &fits(problem.topology).unwrap()).unwrap();
                    verify(problem, s.as_ref(), Strictness::default())
                        .unwrap_or_else(|v| panic!("{t}: {v}"));
                    let time = simulate(&topo, s.as_ref(), &model).time;
                    let f = formulas(&problem, &params)[0].value;
                    assert!((f - time).abs() < 1e-9, "{t} m {m}: {f} vs {time}");
                }
            }
        }
        assert!(fits(&"mesh:3x3".parse().unwrap()).is_err());
        // A given shape, 1s allowed (a prime K), checked against the ranks.
        let model = Model::new(1.0, 0.01).unwrap();
        for (k, shape) in [
            (6, &[2, 3][..]),
            (6, &[3, 2]),
            (7, &[1, 7]),
            (12, &[2, 3, 2]),
        ] {
            let topo = Topology::complete(k);
            let problem = Problem {
                topology: &topo,
                collective: Collective::Allgather,
                len: 3,
                commutative: true,
                counts: None,
            };
            let s = build_shaped(&problem, &Params::default(), shape).unwrap();
            verify(problem, s.as_ref(), Strictness::default())
                .unwrap_or_else(|v| panic!("{k} {shape:?}: {v}"));
            let time = simulate(&topo, s.as_ref(), &model).time;
            assert!(
                (time - shape_time(shape, 3, &model)).abs() < 1e-9,
                "{k} {shape:?}"
            );
            assert!(build_shaped(&problem, &Params::default(), &[5, 5]).is_err());
        }
        assert!(fits(&"complete:7".parse().unwrap()).is_err());
    }
}
