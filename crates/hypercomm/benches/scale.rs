//! Scale benchmark (issue 2): timing-only simulation of broadcast and scatter on
//! hypercube:20, and full verification of every algorithm on hypercube:14.
//!
//! Run: `cargo bench -p hypercomm --bench scale` (add `-- quick` for n = 16 / 12, `-- smoke`
//! for 8 / 6). `scripts/bench-table-simulator.sh` runs it several times for BENCHMARKS.md.
//! Every figure is printed beside a reference measured in the same run: generating the
//! same programs without timing them (simulation) or without executing them (verification),
//! so the ratio is the cost of the consumer itself.

use std::time::Instant;

use hypercomm::algorithms::{self, Packets, Params};
use hypercomm::cost::RoundsPartial;
use hypercomm::prelude::*;

fn secs<T>(f: impl FnOnce() -> T) -> (T, f64) {
    let t = Instant::now();
    let r = f();
    (r, t.elapsed().as_secs_f64())
}

fn build(topo: &Topology, op: OpKind, algo: &str, m: u64, packets: Packets) -> Box<dyn Schedule> {
    let k = topo.nodes();
    let c = Collective::new(op, k, Some(0), Some(0), Some((k - 1) as u64)).unwrap();
    let problem = Problem {
        topology: topo,
        collective: c,
        len: m,
        commutative: true,
        counts: None,
    };
    algorithms::find(op, algo)
        .unwrap()
        .build(
            &problem,
            &Params {
                packets,
                model: Model::default(),
            },
        )
        .unwrap()
}

/// The rounds simulation split over `threads` scoped threads (the library itself never
/// spawns threads; callers split the ranks with `RoundsPartial`).
fn simulate_threads(topo: &Topology, s: &dyn Schedule, model: &Model, threads: u32) -> Report {
    let k = s.nodes();
    let chunk = k.div_ceil(threads);
    let parts: Vec<RoundsPartial> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                scope.spawn(move || {
                    let mut p = RoundsPartial::new(s.steps());
                    p.add_ranks(topo, s, model, (t * chunk).min(k)..((t + 1) * chunk).min(k));
                    p
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let mut all = RoundsPartial::new(s.steps());
    for p in &parts {
        all.merge(p);
    }
    all.finish()
}

/// Generate every rank's program as the simulation does (`program_into` one reused
/// program), without timing it.
fn generate_only(s: &dyn Schedule) -> u64 {
    let mut prog = Program::default();
    (0..s.nodes())
        .map(|r| {
            s.program_into(r, &mut prog);
            prog.steps.iter().map(|st| st.ops.len() as u64).sum::<u64>()
        })
        .sum()
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --all-targets` runs this binary without it,
    // and then it is only a smoke test of the benchmark itself, on small cubes.
    let bench = std::env::args().any(|a| a == "--bench");
    let quick = std::env::args().any(|a| a == "quick");
    let smoke = std::env::args().any(|a| a == "smoke");
    let (sim_n, ver_n) = match (bench, quick, smoke) {
        (false, _, _) | (true, _, true) => (8, 6),
        (true, true, false) => (16, 12),
        (true, false, false) => (20, 14),
    };
    let topo: Topology = format!("hypercube:{sim_n}").parse().unwrap();
    println!(
        "## Timing-only simulation on {topo} ({} nodes), rounds model",
        topo.nodes()
    );
    let threads = std::thread::available_parallelism()
        .map(|n| n.get() as u32)
        .unwrap_or(1);
    println!("| op | algo | ν | messages | simulate s | messages/s | generate-only s | simulate/generate | {threads} threads s | messages/s |");
    println!("|---|---|---|---|---|---|---|---|---|---|");
    for (op, algo, m, packets) in [
        (OpKind::Broadcast, "sbt", 1000u64, Packets::Count(1)),
        (OpKind::Broadcast, "sbt", 1000, Packets::Count(8)),
        (OpKind::Broadcast, "esbt", 1000, Packets::Count(2 * sim_n)),
        (OpKind::Scatter, "sbt", 16, Packets::Count(1)),
    ] {
        let s = build(&topo, op, algo, m, packets);
        let (rep, t_sim) = secs(|| simulate(&topo, s.as_ref(), &Model::default()));
        let (_, t_gen) = secs(|| generate_only(s.as_ref()));
        let (rep_t, t_par) =
            secs(|| simulate_threads(&topo, s.as_ref(), &Model::default(), threads));
        assert_eq!(rep_t, rep, "the split simulation must equal the single one");
        let nu = match packets {
            Packets::Count(n) => n.to_string(),
            Packets::Opt => "opt".into(),
        };
        println!(
            "| {op} | {algo} | {nu} | {} | {t_sim:.2} | {:.2e} | {t_gen:.2} | {:.2} | {t_par:.2} | {:.2e} |",
            rep.messages,
            rep.messages as f64 / t_sim,
            t_sim / t_gen,
            rep.messages as f64 / t_par
        );
    }
    let topo: Topology = format!("hypercube:{ver_n}").parse().unwrap();
    println!();
    println!("## Full verification on {topo} ({} nodes)", topo.nodes());
    println!("| op | algo | len | ν | messages | verify s | materialise s | verify/materialise |");
    println!("|---|---|---|---|---|---|---|---|");
    // Issue 2's collectives; the all-gather, all-to-all and reduction algorithms are
    // measured one per process by `scripts/bench-table-verifier.sh` (with peak RSS).
    let issue2 = [
        OpKind::P2p,
        OpKind::Broadcast,
        OpKind::Scatter,
        OpKind::Gather,
    ];
    for a in algorithms::all()
        .iter()
        .filter(|a| issue2.contains(&a.op) && a.fits(&topo).is_ok())
    {
        let m = 100;
        let packets = if a.pipelined {
            Packets::Count(8)
        } else {
            Packets::Count(1)
        };
        let s = build(&topo, a.op, a.name, m, packets);
        let k = topo.nodes();
        let c = Collective::new(a.op, k, Some(0), Some(0), Some((k - 1) as u64)).unwrap();
        let problem = Problem {
            topology: &topo,
            collective: c,
            len: m,
            commutative: true,
            counts: None,
        };
        let (res, t_ver) = secs(|| verify(problem, s.as_ref(), Strictness::default()));
        res.unwrap();
        let (progs, t_mat) = secs(|| hypercomm::schedule::materialize(s.as_ref()));
        let msgs: usize = progs
            .programs
            .iter()
            .map(|p| p.steps.iter().map(|s| s.ops.len()).sum::<usize>())
            .sum();
        println!(
            "| {} | {} | {m} | {} | {msgs} ops | {t_ver:.2} | {t_mat:.2} | {:.1} |",
            a.op,
            a.name,
            if a.pipelined { 8 } else { 1 },
            t_ver / t_mat.max(1e-9)
        );
    }
}
