//! `bounds::lower_bound` is never above a schedule's simulated time: every registry
//! algorithm on hypercube:0..=6 (and complete:K for those that need it), roots 0 and
//! k − 1, lengths from 1 to 10⁵ (bandwidth dominating at the top: mτ/n ≥ 10⁴β for
//! n ≤ 2 there, and far from it at the bottom), every port and duplex rule, rounds
//! timing, with the algorithms' own packet count (`opt`) and one packet. The harness
//! checks the same at its lengths (0, 1, 7, 1000) after verifying each schedule; these
//! schedules are the same code at other lengths, so they are only timed here.

mod common;

use common::{collective, ALL_MODELS};
use hypercomm::algorithms::{self, Packets, Params};
use hypercomm::bounds::lower_bound;
use hypercomm::cost::model::{Model, Timing};
use hypercomm::cost::simulate;
use hypercomm::topology::Topology;
use hypercomm::verify::Problem;

#[test]
fn lower_bound_never_exceeds_a_registry_schedule() {
    let topos: Vec<Topology> = (0..=6)
        .map(|n| format!("hypercube:{n}"))
        .chain(["complete:5", "complete:8"].map(String::from))
        .map(|t| t.parse().unwrap())
        .collect();
    let mut checked = 0u64;
    for algo in algorithms::all() {
        for topo in topos.iter().filter(|t| algo.fits(t).is_ok()) {
            let k = topo.nodes();
            let mut instances = vec![collective(algo.op, k, 0, k - 1)];
            if k > 1 {
                instances.push(collective(algo.op, k, k - 1, 0));
            }
            for c in instances {
                for m in [1u64, 7, 1000, 60_001, 100_000] {
                    for (beta, tau) in [(1.0, 0.01), (1.0, 1.0)] {
                        for (ports, duplex) in ALL_MODELS {
                            let model = Model {
                                ports,
                                duplex,
                                timing: Timing::Rounds,
                                ..Model::new(beta, tau).unwrap()
                            };
                            let problem = Problem {
                                topology: topo,
                                collective: c,
                                len: m,
                                commutative: true,
                                counts: None,
                            };
                            for packets in [Packets::Opt, Packets::Count(1)] {
                                let params = Params { packets, model };
                                let s = algo.build(&problem, &params).unwrap_or_else(|e| {
                                    panic!("{algo:?} on {topo}, {c}, m = {m}: {e}")
                                });
                                let time = simulate(topo, s.as_ref(), &model).time;
                                let lb = lower_bound(topo, &c, m, &model).unwrap();
                                assert!(
                                    lb <= time * (1.0 + 1e-9),
                                    "{algo:?} on {topo}, {c}, m = {m}, β = {beta}, τ = {tau}, \
                                     {ports}/{duplex}, {packets:?}: bound {lb} > time {time}"
                                );
                                checked += 1;
                                if !algo.pipelined {
                                    break;
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    assert!(checked > 1000, "{checked}");
}
