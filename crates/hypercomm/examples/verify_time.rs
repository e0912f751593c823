//! Times building and verifying one registry algorithm:
//! `cargo run --release -p hypercomm --example verify_time -- allgather tea2 12 7 [THREADS [PARALLEL_FROM]]`
//! (THREADS: 1 by default; `verify::Options::threads`), then optionally PARALLEL_FROM
//! (`verify::Options::parallel_from`).
//!
//! Verification streams every rank's program step by step (`verify::verify`), so the
//! generation of the steps is part of the verify time and the peak memory is that of
//! one step of every rank plus the symbolic state. The regions are counted afterwards
//! in a separate pass, one rank at a time.
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
        counts: None,
    };
    let t = Instant::now();
    // An algorithm that does not fit a hypercube (those of `complete:K`) is skipped.
    let s = match algorithms::find(op, name)
        .unwrap()
        .build(&problem, &Params::default())
    {
        Ok(s) => s,
        Err(e) => {
            println!("skip: {e}");
            return;
        }
    };
    println!("build {:.2}s", t.elapsed().as_secs_f64());
    let t = Instant::now();
    let threads = a.get(5).map_or(1, |t| t.parse().unwrap());
    let mut opts = hypercomm::verify::Options::default().threads(threads);
    if let Some(from) = a.get(6) {
        opts = opts.parallel_from(from.parse().unwrap());
    }
    let r = hypercomm::verify::verify_with(problem, s.as_ref(), Strictness::default(), opts);
    println!("verify {:.2}s: {:?}", t.elapsed().as_secs_f64(), r.err());
    let t = Instant::now();
    let regions: usize = (0..s.nodes())
        .flat_map(|r| s.stream(r))
        .flat_map(|s| s.ops)
        .map(|o| match o {
            Op::Send { from, .. } => from.len(),
            Op::Recv { into, .. } => into.len(),
            _ => 1,
        })
        .sum();
    println!(
        "count {:.2}s, {} regions",
        t.elapsed().as_secs_f64(),
        regions
    );
}
