//! Decomposed all-to-all with combining: Algorithm A2's factor-by-factor order, each
//! factor's exchange carrying all the blocks bound for a peer in one message.
//!
//! Reference: Dimakopoulos & Dimopoulos, seed 002, §4, Fig. 3 (Algorithm A2), with
//! the N/n_i rounds of each phase merged into one: where A2 runs the factor's total
//! exchange N/n_i times, one block per message, this runs it once with messages of
//! N/n_i blocks (the set {y : y_i = c} of the holding buffer, one strided region; see
//! [`super::a2`] for the bookkeeping). Beyond the paper, which forbids combining; the
//! same decomposition is the "hierarchical" (2-D) all-to-all of large clusters, and on
//! a hypercube (its edges as factors) it is the dimension exchange.
//!
//! Cost (β–τ model, rounds): Σ_i T_i (β + (N/n_i) m τ) under full duplex, any port
//! rule; Σ_i (T_i + T2_i)(β + (N/n_i) m τ) under half duplex (T2_i as in A2). Against
//! A2's N Σ_i T_i/n_i (β + mτ): the same τ term, and Σ_i T_i start-ups instead of
//! N Σ_i T_i/n_i. On `complete:K` with a shape n_1 × … × n_d (virtual factors
//! K_{n_i}, T_i = n_i − 1): Σ_i (n_i − 1)(β + (K/n_i) m τ), against pairwise's
//! (K − 1)(β + mτ): fewer start-ups, more volume.
//!
//! The shape on `complete:K`: given ([`build_shaped`]; a shape may hold 1s, so a prime
//! K runs as `1xK`, which is pairwise) or the one of two or more factors ≥ 2 whose
//! closed form is least under the model ([`best_shape`]); a prime K has none, so
//! `product` does not fit `complete:K` for prime K unless a shape is given. On every
//! other product network the shape is the topology's own factors.
//!
//! Memory: `tmp` of min(d − 1, 2)·N·m elements plus relay slots of the widest
//! message (rings and paths).
//!
//! Constraints: a product network without host (paths of at most 64 nodes);
//! `complete:K` for composite K.

use super::a2::{factor_dims, product_dims, view_factors, Decomposed, Dim};
use super::factor_exchange::FactorExchange;
use crate::algorithms::fit::{self, Fit};
use crate::algorithms::{Formula, Params};
use crate::collective::OpKind;
use crate::cost::model::{Duplex, Model};
use crate::error::Error;
use crate::schedule::Schedule;
use crate::topology::Topology;
use crate::verify::Problem;

/// Largest K whose shapes [`best_shape`] enumerates.
const MAX_SHAPE_SEARCH: u32 = 1 << 24;

/// Whether `product` fits: a product network; on `complete:K`, K composite.
pub fn fits(topo: &Topology) -> Result<Fit, String> {
    if let Some(k) = topo.as_complete() {
        return if k == 1 || smallest_factor(k) < k {
            Ok(fit::product(topo))
        } else {
            Err(format!(
                "complete:{k} has a prime number of ranks, so no shape of two factors ≥ 2 \
                 (a shape with a 1 is pairwise: `--shape 1x{k}` on run and bench, \
                 Algorithm::build_shaped in the library)"
            ))
        };
    }
    product_dims(topo).map(|_| fit::product(topo))
}

pub(crate) fn smallest_factor(k: u32) -> u32 {
    (2..)
        .take_while(|d| d * d <= k)
        .find(|d| k % d == 0)
        .unwrap_or(k)
}

/// The virtual dimensions of `shape` on K ranks (factors of 1 dropped).
pub(crate) fn shape_dims(k: u32, shape: &[u32]) -> Result<Vec<Dim>, Error> {
    crate::algorithms::shape::check(shape, k)?;
    let mut dims = Vec::new();
    let mut stride = k;
    for &n in shape {
        stride /= n;
        if n > 1 {
            dims.push(Dim {
                n,
                stride,
                ex: FactorExchange::complete(n),
            });
        }
    }
    Ok(dims)
}

/// Σ_i (n_i − 1)(β + (K/n_i) m τ), doubled under half duplex: the time of `shape` on
/// `complete:K`.
pub fn shape_time(k: u32, shape: &[u32], m: u64, model: &Model) -> f64 {
    if m == 0 {
        return 0.0;
    }
    let twice = if model.duplex == Duplex::Half {
        2.0
    } else {
        1.0
    };
    shape
        .iter()
        .filter(|&&n| n > 1)
        .map(|&n| twice * (n - 1) as f64 * model.net.transfer((k / n) as u64 * m))
        .sum()
}

/// The shape of two or more factors ≥ 2 (ascending) least in [`shape_time`] under
/// `model`; ties go to fewer factors. `None` for a prime K (or K past 2^24).
pub fn best_shape(k: u32, m: u64, model: &Model) -> Option<Vec<u32>> {
    best_shape_by(k, &|s: &[u32]| shape_time(k, s, m, model))
}

/// The shape of two or more factors ≥ 2 (ascending) of least `score`, fewer factors
/// on a tie; `None` for a prime K (or K past 2^24).
pub(crate) fn best_shape_by(k: u32, score: &dyn Fn(&[u32]) -> f64) -> Option<Vec<u32>> {
    if k > MAX_SHAPE_SEARCH {
        return None;
    }
    let divisors: Vec<u32> = (2..=k)
        .take_while(|d| d * d <= k)
        .filter(|d| k % d == 0)
        .collect();
    let mut divisors: Vec<u32> = divisors
        .iter()
        .flat_map(|&d| [d, k / d])
        .chain((k > 1).then_some(k))
        .collect();
    divisors.sort_unstable();
    divisors.dedup();
    let mut best: Option<(f64, Vec<u32>)> = None;
    // Every ascending factorization of `left` into divisors from index `from` on.
    fn walk(
        left: u32,
        from: usize,
        divisors: &[u32],
        shape: &mut Vec<u32>,
        score: &dyn Fn(&[u32]) -> f64,
        best: &mut Option<(f64, Vec<u32>)>,
    ) {
        if left == 1 {
            if shape.len() >= 2 {
                let t = score(shape);
                let better = best.as_ref().is_none_or(|(bt, bs)| {
                    t < *bt - 1e-12 || (t <= *bt + 1e-12 && shape.len() < bs.len())
                });
                if better {
                    *best = Some((t, shape.clone()));
                }
            }
            return;
        }
        for (i, &d) in divisors.iter().enumerate().skip(from) {
            if d > left {
                break;
            }
            if left % d == 0 {
                shape.push(d);
                walk(left / d, i, divisors, shape, score, best);
                shape.pop();
            }
        }
    }
    walk(k, 0, &divisors, &mut Vec::new(), score, &mut best);
    best.map(|(_, s)| s)
}

fn dims_of(problem: &Problem<'_>, params: &Params, fit: &Fit) -> Result<Vec<Dim>, Error> {
    alltoall_dims("product", problem, params, fit)
}

/// `Err` naming `name` unless `problem` is an all-to-all.
fn check_alltoall(name: &str, problem: &Problem<'_>) -> Result<(), Error> {
    if problem.collective.kind() != OpKind::Alltoall {
        return Err(Error::InvalidParameter {
            what: "--op",
            reason: format!("{name} performs alltoall, not {}", problem.collective),
        });
    }
    Ok(())
}

/// The dimensions the all-to-all `name` crosses on the view `fit`: a product's
/// factors, or on `complete:K` (K ranks) the shape [`best_shape`] prices least.
pub(crate) fn alltoall_dims(
    name: &str,
    problem: &Problem<'_>,
    params: &Params,
    fit: &Fit,
) -> Result<Vec<Dim>, Error> {
    check_alltoall(name, problem)?;
    if let Fit::Ranks { k } = *fit {
        let shape = best_shape(k, problem.len, &params.model).unwrap_or_else(|| vec![k]);
        return shape_dims(k, &shape);
    }
    factor_dims(&view_factors(fit)?).map_err(|reason| Error::InvalidParameter {
        what: "--topology",
        reason,
    })
}

/// Build with the topology's factors (on `complete:K`, the best shape).
pub fn build(
    problem: &Problem<'_>,
    params: &Params,
    fit: &Fit,
) -> Result<Box<dyn Schedule>, Error> {
    let dims = dims_of(problem, params, fit)?;
    Ok(Box::new(Decomposed::new(
        problem.topology.nodes(),
        problem.len,
        dims,
        true,
    )))
}

/// Build on a single-hop topology (`complete:K`, a bus, shared memory, a switch) with
/// the ranks laid out as `shape` (row-major, the last factor fastest; factors of 1
/// allowed): the library's form of `--shape AxB`.
pub fn build_shaped(
    problem: &Problem<'_>,
    _params: &Params,
    shape: &[u32],
) -> Result<Box<dyn Schedule>, Error> {
    let dims = alltoall_shaped_dims("product", problem, shape)?;
    Ok(Box::new(Decomposed::new(
        problem.topology.nodes(),
        problem.len,
        dims,
        true,
    )))
}

/// [`shaped_dims`] for the all-to-all `name`.
pub(crate) fn alltoall_shaped_dims(
    name: &str,
    problem: &Problem<'_>,
    shape: &[u32],
) -> Result<Vec<Dim>, Error> {
    check_alltoall(name, problem)?;
    shaped_dims(problem, shape)
}

/// The dimensions of `shape` on `problem`'s single-hop topology (`--shape` refused
/// elsewhere: a multi-hop network has its own factors).
pub(crate) fn shaped_dims(problem: &Problem<'_>, shape: &[u32]) -> Result<Vec<Dim>, Error> {
    if !problem.topology.is_single_hop() {
        return Err(Error::InvalidParameter {
            what: "--shape",
            reason: format!(
                "a shape applies where every pair of ranks is linked (complete:K), not on {}; \
                 valid: no --shape (the network's own factors)",
                problem.topology
            ),
        });
    }
    shape_dims(problem.topology.nodes(), shape)
}

/// Σ_i T_i (β + (N/n_i) m τ), and its half-duplex form.
pub fn formulas(problem: &Problem<'_>, params: &Params) -> Vec<Formula> {
    let Some(Ok(dims)) = fits(problem.topology)
        .ok()
        .map(|f| dims_of(problem, params, &f))
    else {
        return vec![];
    };
    let s = Decomposed::new(problem.topology.nodes(), problem.len, dims, true);
    let value = s.time(params);
    vec![match params.model.duplex {
        Duplex::HalfLink => return vec![],
        Duplex::Full => Formula::exact(
            "Σ_i T_i (β + (n/|V_i|) m τ)",
            "Dimakopoulos & Dimopoulos, §4 Fig. 3 with each phase's blocks combined per peer (beyond the paper)",
            value,
        ),
        Duplex::Half => Formula::exact(
            "Σ_i (T_i + T2_i)(β + (n/|V_i|) m τ)",
            "Dimakopoulos & Dimopoulos, §4 Fig. 3 combined per peer, half duplex (beyond the paper)",
            value,
        ),
    }]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collective::Collective;
    use crate::cost::model::Ports;
    use crate::cost::simulate;
    use crate::verify::{verify, Strictness};

    fn check(t: &str, shape: Option<&[u32]>, m: u64, model: &Model) -> f64 {
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
        let s = match shape {
            Some(sh) => build_shaped(&problem, &params, sh).unwrap(),
            None => build(&problem, &params, &fits(problem.topology).unwrap()).unwrap(),
        };
        verify(problem, s.as_ref(), Strictness::default()).unwrap_or_else(|v| panic!("{t}: {v}"));
        simulate(&topo, s.as_ref(), model).time
    }

    #[test]
    fn verifies_and_meets_its_formula() {
        let model = Model::new(1.0, 0.01).unwrap();
        for t in [
            "torus:3x4",
            "mesh:3x3",
            "ghc:3x4",
            "hypercube:3",
            "complete:12",
            "complete:8",
        ] {
            for m in [0, 1, 5] {
                let time = check(t, None, m, &model);
                let topo: Topology = t.parse().unwrap();
                let problem = Problem {
                    topology: &topo,
                    collective: Collective::Alltoall,
                    len: m,
                    commutative: true,
                    counts: None,
                };
                let f = formulas(
                    &problem,
                    &Params {
                        model,
                        ..Params::default()
                    },
                );
                assert!(
                    (f[0].value - time).abs() < 1e-9,
                    "{t} m {m}: {} vs {time}",
                    f[0].value
                );
            }
        }
    }

    #[test]
    fn shapes_with_ones_run_primes() {
        let model = Model::new(1.0, 0.01).unwrap();
        let t = check("complete:5", Some(&[1, 5]), 3, &model);
        assert!((t - 4.0 * (1.0 + 0.03)).abs() < 1e-9);
        let t = check("complete:6", Some(&[3, 2]), 3, &model);
        assert!((t - shape_time(6, &[3, 2], 3, &model)).abs() < 1e-9);
        assert!(fits(&"complete:7".parse().unwrap()).is_err());
        assert!(fits(&"complete:9".parse().unwrap()).is_ok());
        let topo: Topology = "complete:6".parse().unwrap();
        let problem = Problem {
            topology: &topo,
            collective: Collective::Alltoall,
            len: 1,
            commutative: true,
            counts: None,
        };
        assert!(build_shaped(&problem, &Params::default(), &[4, 2]).is_err());
    }

    #[test]
    fn best_shape_is_least() {
        let model = Model {
            ports: Ports::One,
            ..Model::new(1.0, 0.01).unwrap()
        };
        assert_eq!(best_shape(7, 1, &model), None);
        assert_eq!(best_shape(64, 1, &model), Some(vec![2, 2, 2, 2, 2, 2]));
        assert_eq!(
            best_shape(12, 1, &model).unwrap().iter().product::<u32>(),
            12
        );
        // Long messages: fewest extra volume, two factors.
        assert_eq!(best_shape(12, 100_000, &model).unwrap().len(), 2);
    }
}
