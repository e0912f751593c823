//! Multiscatter (matrix transposition) on a switch by the hypercube's exchanges, two
//! passes per dimension, as Saad & Schultz print it (1986, seed 004, §3.5 (F),
//! T_{5,S} = log₂k [N²/(k b_S) + 2τ_S]).
//!
//! The switch emulates the k = 2^n-cube: in dimension i (lowest first) every node X
//! exchanges with X ⊕ 2^i the blocks whose destination differs from X in bit i, the
//! exchange of seed 000's MTADEA and seed 001's dimension exchange. The paper's time
//! is the half-duplex hypercube's (§3.5 (E): "derived from the above time for the
//! hypercube"): the exchange done as two passes, first the nodes whose bit i is 0 send
//! their k/2 blocks, then those whose bit i is 1. A block (s, d) is held after
//! dimensions 0..i by (d mod 2^i) + (s − s mod 2^i), in `tmp` between its source and its
//! destination.
//!
//! Cost: 2n steps; in each every node sends one message of k/2 blocks or receives one,
//! never both, so under every port and duplex rule
//! n·2(β + (k/2)mτ) = log₂k (2β + kmτ), exact, the printed T_{5,S} with N² = k²m
//! (N the order of the matrix, m = N²/k² elements per block). The switch does an
//! exchange in one round (each node sends one message and receives one), so one
//! permutation per dimension, `dimension-exchange` (or `mtadea`), takes half:
//! log₂k (β + (k/2)mτ) (docs/errata.md, E54). Volume n·2^{2n−1}m.
//!
//! Constraints: `switch:K` with K = 2^n (n ≥ 0).

use crate::algorithms::plan::{self, Plan};
use crate::algorithms::{Formula, Params};
use crate::collective::Collective;
use crate::error::Error;
use crate::schedule::Schedule;
use crate::verify::Problem;

/// Build the schedule.
pub fn build(problem: &Problem<'_>, _params: &Params, n: u32) -> Result<Box<dyn Schedule>, Error> {
    let (m, c) = (problem.len, problem.collective);
    if c != Collective::Alltoall {
        return Err(plan::unfit("two-pass-exchange", "an all-to-all"));
    }
    let k = 1u32 << n;
    if m == 0 {
        return Ok(plan::boxed(plan::empty(k)));
    }
    let mut p = Plan::new(k);
    plan::own_copies(&mut p, c, k, m);
    let k64 = k as u64;
    for i in 0..n {
        let low = (1u64 << i) - 1;
        let bit = 1u64 << i;
        for pass in 0..2u64 {
            for x in (0..k64).filter(|x| (x & bit != 0) as u64 == pass) {
                // Blocks held by x before dimension i whose destination differs in bit i.
                let items: Vec<u64> = (0..k64)
                    .flat_map(|d| {
                        let s_high = x & !low;
                        (0..=low).map(move |s_low| (s_high | s_low, d))
                    })
                    .filter(|&(_, d)| d & low == x & low && (d ^ x) & bit != 0)
                    .map(|(s, d)| s * k64 + d)
                    .collect();
                p.send(
                    (2 * i as u64 + pass) as usize,
                    x as u32,
                    vec![(x ^ bit) as u32],
                    items,
                );
            }
        }
    }
    Ok(plan::boxed(p.build(plan::block_layout(c, k, m))?))
}

/// log₂k (2β + kmτ), exact under every port and duplex rule.
pub fn formulas(problem: &Problem<'_>, params: &Params) -> Vec<Formula> {
    let Ok(n) = crate::algorithms::fit::switch_cube(problem.topology) else {
        return vec![];
    };
    let m = problem.len;
    let k = 1u64 << n;
    let value = if m == 0 {
        0.0
    } else {
        n as f64 * (2.0 * params.model.beta() + (k * m) as f64 * params.model.tau())
    };
    vec![Formula::exact(
        "log₂k [N²/(k b_S) + 2τ_S] = log₂k (2β + kmτ), N² = k²m",
        "Saad & Schultz 1986 (seed 004), §3.5 (F), T_{5,S}",
        value,
    )]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::algorithms::find;
    use crate::collective::OpKind;
    use crate::cost::model::{Duplex, Model, Ports};
    use crate::cost::simulate;
    use crate::verify::{verify, Strictness};

    /// switch:1..=16: verified and exact under every port and duplex rule on 2^n
    /// nodes; refused, naming the reason, elsewhere.
    #[test]
    fn exact_on_power_of_two_switches() {
        let algo = find(OpKind::Alltoall, "two-pass-exchange").unwrap();
        for k in 1..=16u32 {
            let topo: crate::topology::Topology = format!("switch:{k}").parse().unwrap();
            let problem = Problem {
                topology: &topo,
                collective: Collective::Alltoall,
                len: 3,
                commutative: true,
                counts: None,
            };
            if !k.is_power_of_two() {
                let e = algo.fits(&topo).unwrap_err();
                assert!(e.contains("power of two"), "{e}");
                continue;
            }
            let s = algo.build(&problem, &Params::default()).unwrap();
            let strict = Strictness {
                ports: Some(Ports::One),
                duplex: Some(Duplex::Half),
                host_ports: None,
            };
            verify(problem, s.as_ref(), strict).unwrap_or_else(|v| panic!("k = {k}: {v}"));
            for duplex in [Duplex::Full, Duplex::Half, Duplex::HalfLink] {
                let model = Model {
                    duplex,
                    ..Model::new(1.0, 0.01).unwrap()
                };
                let t = simulate(&topo, s.as_ref(), &model).time;
                let params = Params {
                    model,
                    ..Params::default()
                };
                let f = &algo.formulas(&problem, &params)[0];
                assert!(f.is_exact() && f.holds_for(t), "k = {k}: {f:?} vs {t}");
            }
        }
    }
}
