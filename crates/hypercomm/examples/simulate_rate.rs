//! Measures what one unit of simulation work ([`hypercomm::schedule::work`]) costs, for
//! every registry algorithm that fits the topology, under rounds timing (streamed) and
//! async timing: the figures behind the CLI's simulation limit
//! (`hypercomm-cli`'s `config::UNITS_PER_SIMULATED_ROUNDS` and `Algorithm::simulate_weight`).
//!
//! `cargo run --release -p hypercomm --example simulate_rate -- hypercube:14 [LEN [WORK]]`
//! prints, per algorithm, its work (estimated as the CLI does), the seconds of each
//! timing and the nanoseconds per unit. Algorithms whose work passes WORK (default
//! 2^26) are skipped, so that one run stays within minutes.
use std::time::Instant;

use hypercomm::algorithms::{self, Params};
use hypercomm::cost::model::Timing;
use hypercomm::prelude::*;

fn main() {
    let a: Vec<String> = std::env::args().collect();
    let topo: Topology = a.get(1).map_or("hypercube:12", |s| s).parse().unwrap();
    let len: u64 = a.get(2).map_or(1, |s| s.parse().unwrap());
    let cap: u64 = a.get(3).map_or(1 << 26, |s| s.parse().unwrap());
    let k = topo.nodes();
    println!("# {topo} len {len}: algorithm, work units, rounds s, ns/unit, async s, ns/unit");
    for algo in algorithms::all() {
        if algo.fits(&topo).is_err() || algo.op.is_varcount() {
            continue;
        }
        let Ok(c) = Collective::new(algo.op, k, Some(0), Some(0), Some(u64::from(k) - 1)) else {
            continue;
        };
        let problem = Problem {
            topology: &topo,
            collective: c,
            len,
            commutative: true,
            counts: None,
        };
        let params = Params::default();
        let Ok(s) = algo.build(&problem, &params) else {
            continue;
        };
        let named: Vec<u32> = c.root().into_iter().collect();
        let work = hypercomm::schedule::work::estimate(s.as_ref(), &named, cap);
        if work > cap {
            println!(
                "{:>10} {:<24} work > {cap}: skipped",
                algo.op.name(),
                algo.name
            );
            continue;
        }
        let mut row = format!("{:>10} {:<24} {work:>11}", algo.op.name(), algo.name);
        for timing in [Timing::Rounds, Timing::Async] {
            let mut model = params.model;
            model.timing = timing;
            let t = Instant::now();
            let _ = hypercomm::cost::simulate(&topo, s.as_ref(), &model);
            let secs = t.elapsed().as_secs_f64();
            row += &format!(" {secs:>8.3} {:>7.1}", secs * 1e9 / work.max(1) as f64);
        }
        println!("{row}");
    }
}
