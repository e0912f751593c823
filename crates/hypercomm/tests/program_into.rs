//! The contract of `Schedule::program_into`: for every registry algorithm, on
//! hypercube:0 to hypercube:5, hypercube:3+host and complete:1 to complete:9, two roots,
//! several lengths and packet counts, writing rank r's program over whatever a reused
//! `Program` held (another rank's, another schedule's, with more or fewer steps) gives
//! exactly `program(r)`; and the rounds simulation, which reuses one program per caller
//! that way, reports exactly what the simulation of the programs built one by one does.
//! (A refill that left an op, a step or a `tmp_len` of the previous program behind would
//! time something other than the schedule.)

mod common;

use hypercomm::cost::model::{Duplex, Model, Ports};
use hypercomm::cost::{simulate, simulate_programs, RoundsPartial};
use hypercomm::schedule::{materialize, Program};

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
    common::for_each_small_schedule(&["hypercube:3+host"], |case, topo, s| {
        // Forward, then backward (the root's program is often the largest: refill
        // smaller programs after it).
        for r in (0..s.nodes()).chain((0..s.nodes()).rev()) {
            s.program_into(r, &mut reused);
            assert_eq!(reused, s.program(r), "{case}, rank {r}");
            let mut fresh = Program::default();
            s.program_into(r, &mut fresh);
            assert_eq!(fresh, reused, "{case}, rank {r}, fresh buffer");
            compared += 1;
        }
        // The old path: every program built by `program` and held.
        let held = materialize(s);
        for model in &models {
            let new = simulate(topo, s, model);
            let old = simulate(topo, &held, model);
            assert_eq!(new, old, "{case}, {model:?}");
            let progs = simulate_programs(topo, &held.programs, held.steps, model);
            assert_eq!(new, progs, "{case}, {model:?}: simulate_programs");
            // Split in two parts, each with its own reused program.
            let mid = s.nodes() / 2;
            let mut a = RoundsPartial::new(s.steps());
            a.add_ranks(topo, s, model, 0..mid);
            let mut b = RoundsPartial::new(s.steps());
            b.add_ranks(topo, s, model, mid..s.nodes());
            a.merge(&b);
            assert_eq!(a.finish(), new, "{case}, {model:?}: split");
            simulated += 1;
        }
    });
    assert!(compared > 10_000, "only {compared} programs compared");
    assert!(simulated > 1_000, "only {simulated} simulations compared");
}
