//! Times building and verifying one registry algorithm:
//! `cargo run --release -p hypercomm --example verify_time -- allgather tea2 12 7`.
use std::time::Instant;

use hypercomm::algorithms::{self, Params};
use hypercomm::prelude::*;

fn main() {
    let a: Vec<String> = std::env::args().collect();
    let (op, name, n, m): (OpKind, &str, u32, u64) = (
        a[1].parse().unwrap(),
        &a[2],
        a[3].parse().unwrap(),
        a[4].parse().unwrap(),
    );
    let topo: Topology = format!("hypercube:{n}").parse().unwrap();
    let c = Collective::new(
        op,
        topo.nodes(),
        Some(0),
        Some(0),
        Some(topo.nodes() as u64 - 1),
    )
    .unwrap();
    let problem = Problem {
        topology: &topo,
        collective: c,
        len: m,
        commutative: true,
    };
    let t = Instant::now();
    let s = algorithms::find(op, name)
        .unwrap()
        .build(&problem, &Params::default())
        .unwrap();
    let progs = hypercomm::schedule::materialize(s.as_ref());
    let regions: usize = progs
        .programs
        .iter()
        .flat_map(|p| &p.steps)
        .flat_map(|s| &s.ops)
        .map(|o| match o {
            Op::Send { from, .. } => from.len(),
            Op::Recv { into, .. } => into.len(),
            _ => 1,
        })
        .sum();
    println!(
        "build+materialise {:.2}s, {} regions",
        t.elapsed().as_secs_f64(),
        regions
    );
    let t = Instant::now();
    let r = hypercomm::verify::verify_programs(
        problem,
        &progs.programs,
        progs.steps,
        Strictness::default(),
    );
    println!("verify {:.2}s: {:?}", t.elapsed().as_secs_f64(), r.err());
}
