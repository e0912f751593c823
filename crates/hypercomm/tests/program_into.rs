//! The contract of `Schedule::program_into`: for every registry algorithm, on
//! hypercube:0 to hypercube:5, hypercube:3+host and complete:1 to complete:9, two roots,
//! several lengths and packet counts, writing rank r's program over whatever a reused
//! `Program` held (another rank's, another schedule's, with more or fewer steps) gives
//! exactly `program(r)`; and the rounds simulation, which reuses one program per caller
//! that way, reports exactly what the simulation of the programs built one by one does.
//! (A refill that left an op, a step or a `tmp_len` of the previous program behind would
//! time something other than the schedule.)

use hypercomm::algorithms::{self, Packets, Params};
use hypercomm::collective::Collective;
use hypercomm::cost::model::{Duplex, Model, Ports};
use hypercomm::cost::{simulate, simulate_programs, RoundsPartial};
use hypercomm::schedule::{materialize, Program};
use hypercomm::topology::Topology;
use hypercomm::verify::Problem;

#[test]
fn program_into_equals_program_and_the_simulation_is_unchanged() {
    let models: Vec<Model> = [Ports::All, Ports::One]
        .into_iter()
        .flat_map(|ports| {
            [Duplex::Full, Duplex::Half]
                .into_iter()
                .map(move |duplex| Model {
                    ports,
                    duplex,
                    ..Model::default()
                })
        })
        .collect();
    // One buffer for the whole test: every refill starts from the previous case's
    // last program.
    let mut reused = Program::default();
    let (mut compared, mut simulated) = (0u64, 0u64);
    for algo in algorithms::all() {
        let topologies = (0..=5u32)
            .map(|n| format!("hypercube:{n}"))
            .chain(["hypercube:3+host".to_string()])
            .chain((1..=9u32).map(|k| format!("complete:{k}")));
        for name in topologies {
            let topo: Topology = name.parse().unwrap();
            if algo.fits(&topo).is_err() {
                continue;
            }
            let k = topo.nodes();
            for root in [0, k - 1] {
                let Ok(c) = Collective::new(
                    algo.op,
                    k,
                    Some(root as u64),
                    Some(root as u64),
                    Some((k - 1 - root) as u64),
                ) else {
                    continue;
                };
                for len in [0u64, 1, 7, 100] {
                    let problem = Problem {
                        topology: &topo,
                        collective: c,
                        len,
                        commutative: true,
                    };
                    let counts: &[Packets] = if algo.pipelined {
                        &[Packets::Count(1), Packets::Count(3), Packets::Opt]
                    } else {
                        &[Packets::Count(1)]
                    };
                    for &packets in counts {
                        let params = Params {
                            packets,
                            ..Params::default()
                        };
                        let Ok(s) = algo.build(&problem, &params) else {
                            continue;
                        };
                        let case = format!("{algo:?}, {name}, root {root}, len {len}, {packets:?}");
                        // Forward, then backward (the root's program is often the
                        // largest: refill smaller programs after it).
                        for r in (0..s.nodes()).chain((0..s.nodes()).rev()) {
                            s.program_into(r, &mut reused);
                            assert_eq!(reused, s.program(r), "{case}, rank {r}");
                            let mut fresh = Program::default();
                            s.program_into(r, &mut fresh);
                            assert_eq!(fresh, reused, "{case}, rank {r}, fresh buffer");
                            compared += 1;
                        }
                        // The old path: every program built by `program` and held.
                        let held = materialize(s.as_ref());
                        for model in &models {
                            let new = simulate(&topo, s.as_ref(), model);
                            let old = simulate(&topo, &held, model);
                            assert_eq!(new, old, "{case}, {model:?}");
                            let progs = simulate_programs(&topo, &held.programs, held.steps, model);
                            assert_eq!(new, progs, "{case}, {model:?}: simulate_programs");
                            // Split in two parts, each with its own reused program.
                            let mid = s.nodes() / 2;
                            let mut a = RoundsPartial::new(s.steps());
                            a.add_ranks(&topo, s.as_ref(), model, 0..mid);
                            let mut b = RoundsPartial::new(s.steps());
                            b.add_ranks(&topo, s.as_ref(), model, mid..s.nodes());
                            a.merge(&b);
                            assert_eq!(a.finish(), new, "{case}, {model:?}: split");
                            simulated += 1;
                        }
                    }
                }
            }
        }
    }
    assert!(compared > 10_000, "only {compared} programs compared");
    assert!(simulated > 1_000, "only {simulated} simulations compared");
}
