//! End-to-end tests of `hypercomm run`, `bench` and `calibrate` on the threads backend:
//! correctness on every collective and several rank counts, the JSON contract, exit
//! codes, bench's columns and the calibration file's round trip. No timing assertions.

use std::path::{Path, PathBuf};
use std::process::Command;

use hypercomm::algorithms;
use hypercomm::collective::OpKind;
use hypercomm::topology::Topology;
use hypercomm_rt::Calibration;
use serde_json::Value;

/// What one run of the binary produced.
struct Run {
    code: i32,
    out: String,
    err: String,
}

impl Run {
    fn json(&self) -> Value {
        serde_json::from_str(&self.out)
            .unwrap_or_else(|e| panic!("stdout is not JSON ({e}):\n{}\n{}", self.out, self.err))
    }
}

/// A fresh directory for one test's files.
fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("run-tests")
        .join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Run the binary with `args` and extra environment; no calibration leaks in from the
/// user's environment (`XDG_CONFIG_HOME` points to an empty directory under the target
/// directory and `XDG_CACHE_HOME` to one beside it, unless `env` sets them)
/// and none is measured (`HYPERCOMM_CALIBRATION=off`, the runtime's defaults, unless
/// `env` names a file or a configuration directory).
fn hc_env(args: &[&str], env: &[(&str, &Path)]) -> Run {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_hypercomm"));
    cmd.args(args)
        .env("HYPERCOMM_CALIBRATION", "off")
        .env("XDG_CONFIG_HOME", scratch_empty())
        .env("XDG_CACHE_HOME", scratch_empty().join("cache"));
    if env
        .iter()
        .any(|(k, _)| ["HYPERCOMM_CALIBRATION", "XDG_CONFIG_HOME", "XDG_CACHE_HOME"].contains(k))
    {
        cmd.env_remove("HYPERCOMM_CALIBRATION");
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    let o = cmd.output().expect("the binary starts");
    let run = Run {
        code: o.status.code().expect("exited, not killed"),
        out: String::from_utf8(o.stdout).unwrap(),
        err: String::from_utf8(o.stderr).unwrap(),
    };
    assert!(
        !run.err.contains("panicked"),
        "{args:?} panicked:\n{}",
        run.err
    );
    run
}

/// An empty configuration directory shared by the tests that set none.
fn scratch_empty() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("run-tests")
        .join("no-config");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// `calibrate` with `args` and `env`, measured again (up to 3 times in all) while the
/// fit is refused as a busy machine's: with this file's other tests running beside it on
/// 2 cores, a pair's exchanges can wait ~80 µs for a CPU at every size, so that the time
/// does not grow with the size and τ comes out ≤ 0 (refusing that fit is
/// `calibrate`'s job, tested on its own in its unit tests). The last run is returned.
fn calibrate_env(args: &[&str], env: &[(&str, &Path)]) -> Run {
    let mut r = hc_env(args, env);
    for _ in 1..3 {
        if !(r.code == 1 && r.err.contains("calibration not saved")) {
            break;
        }
        r = hc_env(args, env);
    }
    r
}

fn hc(args: &[&str]) -> Run {
    hc_env(args, &[])
}

/// `run … --format json`, expecting exit 0.
fn run_json(args: &[&str]) -> Value {
    let mut a = vec!["run", "--backend", "threads"];
    a.extend(args);
    a.extend(["--format", "json"]);
    let r = hc(&a);
    assert_eq!(r.code, 0, "{a:?}\nstdout:\n{}\nstderr:\n{}", r.out, r.err);
    r.json()
}

/// `HYPERCOMM_PIN` is read at launch: `off` (any case) and `auto` run, any other value
/// exits 2 naming the variable, its value and the values it takes.
#[test]
fn the_pin_environment_variable_is_checked() {
    let args = [
        "run",
        "--ranks",
        "3",
        "--op",
        "allreduce",
        "--len",
        "10",
        "--iters",
        "1",
    ];
    for ok in ["off", "OFF", "auto", "on"] {
        let r = hc_env(&args, &[("HYPERCOMM_PIN", Path::new(ok))]);
        assert_eq!(r.code, 0, "HYPERCOMM_PIN={ok}: {}", r.err);
        assert!(r.out.contains("correct      yes"), "{}", r.out);
    }
    let r = hc_env(&args, &[("HYPERCOMM_PIN", Path::new("sideways"))]);
    assert_eq!(r.code, 2, "{}\n{}", r.out, r.err);
    for needle in ["HYPERCOMM_PIN", "sideways", "on, off or auto"] {
        assert!(
            r.err.contains(needle),
            "stderr lacks `{needle}`:\n{}",
            r.err
        );
    }
}

/// Expect exit 2 with every needle on stderr.
fn bad(args: &[&str], needles: &[&str]) {
    let r = hc(args);
    assert_eq!(
        r.code, 2,
        "{args:?} should exit 2\nstdout:\n{}\nstderr:\n{}",
        r.out, r.err
    );
    for n in needles {
        assert!(
            r.err.contains(n),
            "{args:?}: stderr lacks `{n}`:\n{}",
            r.err
        );
    }
}

/// Elements every rank's output holds together (exclusive scan: rank 0's is not
/// checked).
fn checked_elements(op: OpKind, k: u64, m: u64) -> u64 {
    match op {
        OpKind::Allgather | OpKind::Alltoall => k * k * m,
        OpKind::Gather => k * m,
        OpKind::Reduce | OpKind::P2p => m,
        OpKind::ExclusiveScan => (k - 1) * m,
        _ => k * m,
    }
}

const OPS: [&str; 11] = [
    "p2p",
    "broadcast",
    "scatter",
    "gather",
    "allgather",
    "alltoall",
    "reduce",
    "allreduce",
    "scan",
    "exclusive-scan",
    "reduce-scatter",
];

/// `--src 0 --dst k − 1` for point-to-point (which needs both), nothing otherwise.
fn ends(op: &str, k: u64) -> Vec<String> {
    match op {
        "p2p" => ["--src", "0", "--dst", &(k - 1).to_string()]
            .map(String::from)
            .to_vec(),
        _ => Vec::new(),
    }
}

#[test]
fn every_collective_on_1_3_4_5_ranks_is_correct_with_the_contract_fields() {
    for op in OPS {
        let kind: OpKind = op.parse().unwrap();
        for k in [1u64, 3, 4, 5] {
            let ks = k.to_string();
            let mut args = vec!["--ranks", &ks, "--op", op, "--len", "13"];
            let ends = ends(op, k);
            args.extend(ends.iter().map(String::as_str));
            let j = run_json(&args);
            for field in ["op", "algo", "ranks", "len", "correct", "time", "backend"] {
                assert!(j.get(field).is_some(), "{op} k={k}: no `{field}` in {j}");
            }
            assert_eq!(j["op"], op);
            // Ranks that outnumber the CPUs run as fibers (`--fibers auto`, the default).
            let fibers = hypercomm_rt::threads::Config::new(k as u32)
                .fibers(true)
                .uses_fibers();
            let backend = if fibers {
                "threads (fibers)"
            } else {
                "threads"
            };
            assert_eq!(j["backend"], backend, "{op} k={k}");
            assert_eq!(j["ranks"], k);
            assert_eq!(j["len"], 13);
            assert_eq!(j["correct"], true, "{op} k={k}: {j}");
            assert_eq!(j["mismatch"], Value::Null);
            assert_eq!(j["checked"], checked_elements(kind, k, 13), "{op} k={k}");
            assert!(j["time"].as_f64().unwrap() > 0.0);
            assert!(j["time"].as_f64() >= j["time_min"].as_f64());
            assert!(j["time"].as_f64() >= j["min"].as_f64());
            assert_eq!(
                j["iters"],
                hypercomm_cli::args::DEFAULT_RUN_ITERS,
                "the default"
            );
            let fitting = algorithms::fitting(&Topology::complete(k as u32), kind);
            let algo = j["algo"].as_str().unwrap();
            assert!(fitting.iter().any(|a| a.name == algo), "{op} k={k}: {algo}");
        }
    }
}

/// `--iters N` times N calls after a warm-up: `time` is their median and `min` the
/// fastest (each the slowest rank's), both in the text; 0 calls is bad input.
#[test]
fn run_times_iters_calls_and_reports_the_median_and_the_fastest() {
    for n in ["1", "4"] {
        let j = run_json(&[
            "--ranks",
            "3",
            "--op",
            "allgather",
            "--len",
            "100",
            "--iters",
            n,
        ]);
        assert_eq!(j["iters"].to_string(), n);
        assert_eq!(j["correct"], true);
        let (time, min) = (j["time"].as_f64().unwrap(), j["min"].as_f64().unwrap());
        assert!(min > 0.0 && min <= time, "{j}");
        if n == "1" {
            assert_eq!(min, time, "one call is its own median");
        }
    }
    let allreduce = |iters| {
        [
            "run",
            "--ranks",
            "2",
            "--op",
            "allreduce",
            "--len",
            "8",
            "--iters",
            iters,
        ]
    };
    let r = hc(&allreduce("5"));
    assert_eq!(r.code, 0, "{}", r.err);
    assert!(r.out.contains("median of 5 calls"), "{}", r.out);
    assert!(r.out.contains("fastest call"), "{}", r.out);
    bad(&allreduce("0"), &["--iters", "1..="]);
}

#[test]
fn every_fitting_algorithm_runs_correctly_by_name() {
    for op in OPS {
        let kind: OpKind = op.parse().unwrap();
        for k in [4u32, 5] {
            for a in algorithms::fitting(&Topology::complete(k), kind) {
                let ks = k.to_string();
                let mut args = vec!["--ranks", &ks, "--op", op, "--algo", a.name, "--len", "9"];
                let ends = ends(op, k.into());
                args.extend(ends.iter().map(String::as_str));
                let j = run_json(&args);
                assert_eq!(j["algo"], a.name);
                assert_eq!(j["auto"], false);
                assert_eq!(j["correct"], true, "{op} {} k={k}: {j}", a.name);
            }
        }
    }
}

#[test]
fn rooted_collectives_honour_the_root_and_p2p_its_ends() {
    for op in ["broadcast", "scatter", "gather", "reduce"] {
        let j = run_json(&["--ranks", "5", "--op", op, "--root", "3", "--len", "7"]);
        assert_eq!(j["root"], 3);
        assert_eq!(j["correct"], true, "{op}: {j}");
    }
    let j = run_json(&[
        "--ranks", "4", "--op", "p2p", "--src", "1", "--dst", "2", "--len", "7",
    ]);
    assert_eq!((j["src"].as_u64(), j["dst"].as_u64()), (Some(1), Some(2)));
    assert_eq!(j["correct"], true);
    assert_eq!(j["checked"], 7);
}

#[test]
fn every_reduction_operator_is_correct() {
    for o in ["sum", "prod", "min", "max", "band", "bor", "bxor"] {
        for op in ["allreduce", "reduce-scatter", "scan"] {
            let j = run_json(&["--ranks", "5", "--op", op, "--len", "11", "--reduce-op", o]);
            assert_eq!(j["reduce_op"], o);
            assert_eq!(j["correct"], true, "{op} {o}: {j}");
        }
    }
}

#[test]
fn explicit_packets_run_the_pipelined_schedule() {
    let pipelined = algorithms::fitting(&Topology::complete(4), OpKind::Broadcast)
        .into_iter()
        .find(|a| a.pipelined)
        .expect("a pipelined broadcast fits 4 ranks");
    let j = run_json(&[
        "--ranks",
        "4",
        "--op",
        "broadcast",
        "--algo",
        pipelined.name,
        "--len",
        "100",
        "--packets",
        "7",
    ]);
    assert_eq!(j["packets"], "7");
    assert_eq!(j["correct"], true, "{j}");
    bad(
        &[
            "run",
            "--ranks",
            "4",
            "--op",
            "broadcast",
            "--len",
            "10",
            "--packets",
            "3",
        ],
        &["--packets", "opt"],
    );
}

#[test]
fn auto_reports_the_algorithm_it_chose() {
    let j = run_json(&[
        "--ranks",
        "4",
        "--op",
        "allgather",
        "--len",
        "100",
        "--algo",
        "auto",
    ]);
    assert_eq!(j["auto"], true);
    let algo = j["algo"].as_str().unwrap();
    assert_ne!(algo, "auto");
    let fitting = algorithms::fitting(&Topology::complete(4), OpKind::Allgather);
    assert!(fitting.iter().any(|a| a.name == algo), "{algo}");
    let r = hc(&["run", "--ranks", "4", "--op", "allgather", "--len", "100"]);
    assert_eq!(r.code, 0, "{}", r.err);
    assert!(
        r.out.contains(&format!("{algo} (chosen by auto)")),
        "{}",
        r.out
    );
    assert!(
        r.out.contains("correct") && r.out.contains("yes"),
        "{}",
        r.out
    );
}

#[test]
fn the_same_seed_gives_the_same_data_and_a_wrong_result_exits_1() {
    let args = [
        "--ranks", "3", "--op", "alltoall", "--len", "5", "--seed", "42",
    ];
    assert_eq!(run_json(&args)["seed"], 42);
    let r = hc(&[
        "run",
        "--ranks",
        "3",
        "--op",
        "alltoall",
        "--len",
        "5",
        "--seed",
        "42",
        "--format",
        "json",
        "--inject-error",
    ]);
    assert_eq!(r.code, 1, "{}\n{}", r.out, r.err);
    let j = r.json();
    assert_eq!(j["correct"], false);
    assert_eq!(j["mismatch"]["rank"], 2);
    assert_eq!(j["mismatch"]["index"], 0);
    let (want, got) = (
        j["mismatch"]["expected"].as_u64().unwrap(),
        j["mismatch"]["got"].as_u64().unwrap(),
    );
    assert_eq!(want ^ got, 1);
    assert!(r.err.contains("wrong result"), "{}", r.err);
}

/// Issue 20: `native` is the MPI library's own collective, which the threads backend
/// does not have: bad input (exit 2) naming the valid choices, for `run` and `bench`.
#[test]
fn native_is_refused_on_threads() {
    let needles = [
        "--algo",
        "native",
        "threads backend",
        "valid: auto or a registry name",
    ];
    bad(
        &[
            "run",
            "--ranks",
            "3",
            "--op",
            "allreduce",
            "--algo",
            "native",
            "--len",
            "4",
        ],
        &needles,
    );
    bad(
        &[
            "bench",
            "--ranks",
            "3",
            "--op",
            "allreduce",
            "--algo",
            "ring,native",
        ],
        &needles,
    );
}

#[test]
fn bad_input_exits_2_naming_the_valid_choices() {
    // An algorithm that does not fit 3 ranks: the message names those that do.
    let fitting = algorithms::fitting(&Topology::complete(3), OpKind::Broadcast);
    let names: Vec<&str> = fitting.iter().map(|a| a.name).collect();
    assert!(!names.contains(&"esbt"));
    let mut needles = vec!["esbt", "complete:3"];
    needles.extend(&names);
    bad(
        &[
            "run",
            "--ranks",
            "3",
            "--op",
            "broadcast",
            "--algo",
            "esbt",
            "--len",
            "4",
        ],
        &needles,
    );
    let mut needles = vec!["no-such"];
    needles.extend(&names);
    bad(
        &[
            "run",
            "--ranks",
            "3",
            "--op",
            "broadcast",
            "--algo",
            "no-such",
            "--len",
            "4",
        ],
        &needles,
    );
    bad(
        &["run", "--ranks", "0", "--op", "broadcast", "--len", "4"],
        &["--ranks", "1..="],
    );
    // The runtime's own limit (memory grows with the square of the ranks), named.
    let over = (hypercomm_rt::threads::MAX_RANKS + 1).to_string();
    let valid = format!("1..={}", hypercomm_rt::threads::MAX_RANKS);
    bad(
        &["run", "--ranks", &over, "--op", "broadcast", "--len", "4"],
        &["--ranks", &over, &valid],
    );
    bad(
        &[
            "run",
            "--ranks",
            "4",
            "--op",
            "broadcast",
            "--root",
            "4",
            "--len",
            "4",
        ],
        &["root 4", "0..=3"],
    );
    bad(
        &["run", "--ranks", "4", "--op", "frobnicate", "--len", "4"],
        &["frobnicate", "allgather"],
    );
    bad(
        &[
            "run",
            "--backend",
            "tcp",
            "--ranks",
            "4",
            "--op",
            "allgather",
            "--len",
            "4",
        ],
        &["tcp", "threads"],
    );
    bad(
        &[
            "run",
            "--ranks",
            "4",
            "--op",
            "allreduce",
            "--len",
            "4",
            "--reduce-op",
            "avg",
        ],
        &["avg", "bxor"],
    );
    bad(
        &[
            "run",
            "--ranks",
            "4",
            "--op",
            "allgather",
            "--len",
            "4",
            "--reduce-op",
            "sum",
        ],
        &["not a reduction"],
    );
    bad(
        &[
            "run",
            "--ranks",
            "4",
            "--op",
            "allgather",
            "--len",
            "4",
            "--timeout",
            "0",
        ],
        &["--timeout"],
    );
    bad(
        &["run", "--ranks", "4", "--op", "p2p", "--len", "4"],
        &["--src"],
    );
    bad(
        &["bench", "--ranks", "0", "--op", "allgather"],
        &["--ranks"],
    );
    bad(
        &[
            "bench",
            "--ranks",
            "3",
            "--op",
            "broadcast",
            "--algo",
            "binomial,esbt",
        ],
        &["esbt", "binomial"],
    );
    bad(
        &[
            "bench",
            "--ranks",
            "3",
            "--op",
            "broadcast",
            "--min-size",
            "8",
            "--max-size",
            "4",
        ],
        &["--min-size"],
    );
    bad(
        &["bench", "--ranks", "3", "--op", "broadcast", "--iters", "0"],
        &["--iters"],
    );
    bad(&["calibrate", "--ranks", "1"], &["--ranks", "2..="]);
    // 0 named 1..=1024 as valid, and 1 was then refused.
    bad(
        &["calibrate", "--ranks", "0"],
        &["--ranks", "needs a pair", "2..="],
    );
    bad(
        &["calibrate", "--ranks", "1025"],
        &["--ranks", "valid: 2..=1024"],
    );
    bad(
        &["bench", "--ranks", "3", "--op", "alltoall", "--in-place"],
        &["--in-place", "allgather, allreduce, scan, exclusive-scan"],
    );
    bad(
        &["calibrate", "--pattern", "bibw"],
        &["--pattern", "exchange", "pingpong"],
    );
    bad(
        &[
            "bench",
            "--ranks",
            "3",
            "--op",
            "broadcast",
            "--barrier",
            "ring",
        ],
        &["--barrier", "recursive-doubling", "tree"],
    );
}

/// `bench --barrier` runs the barrier asked for between calls and says which, in the
/// text header and the JSON (recursive doubling by default).
#[test]
fn bench_names_its_barrier() {
    let base = [
        "--ranks",
        "3",
        "--op",
        "broadcast",
        "--min-size",
        "8",
        "--max-size",
        "8",
        "--iters",
        "2",
        "--warmup",
        "0",
    ];
    for (flag, name) in [(None, "recursive-doubling"), (Some("tree"), "tree")] {
        let mut a = base.to_vec();
        if let Some(f) = flag {
            a.extend(["--barrier", f]);
        }
        let text = bench(&a);
        assert!(
            text.contains(&format!("a {name} barrier between calls")),
            "{text}"
        );
        a.extend(["--format", "json"]);
        let json: Value = serde_json::from_str(&bench(&a)).unwrap();
        assert_eq!(json["barrier"], name);
    }
}

/// Both patterns of `calibrate` write a file that says which one measured it, with a
/// positive β and τ, and the text output names the pattern.
#[test]
fn calibrate_measures_by_exchange_or_ping_pong() {
    let dir = scratch("calibrate-pattern");
    for (flag, name) in [(None, "exchange"), (Some("pingpong"), "ping-pong")] {
        let file = dir.join(format!("{name}.conf"));
        let fs = file.display().to_string();
        let mut args = vec![
            "calibrate",
            "--max-size",
            "4194304",
            "--reps",
            "20",
            "--output",
            &fs,
        ];
        if let Some(f) = flag {
            args.extend(["--pattern", f]);
        }
        let r = calibrate_env(&args, &[]);
        assert_eq!(r.code, 0, "{}\n{}", r.out, r.err);
        assert!(
            r.out
                .starts_with(&format!("# {name} on the threads backend")),
            "{}",
            r.out
        );
        let text = std::fs::read_to_string(&file).unwrap();
        assert!(
            text.contains(&format!("2 ranks, {name} at 23 sizes")),
            "{text}"
        );
        let c = read_calibration(&file);
        assert!(c.beta >= 0.0 && c.tau > 0.0, "{name}: {c:?}");
    }
}

const CSV_HEADER: &str = "algo,auto,size,bytes,iters,avg_us,min_us,max_us,algbw_gbps,busbw_gbps,\
predicted_us,measured_over_predicted,memcpy_gbps,busbw_over_memcpy";

fn bench(args: &[&str]) -> String {
    let mut a = vec!["bench", "--backend", "threads"];
    a.extend(args);
    let r = hc(&a);
    assert_eq!(r.code, 0, "{a:?}\nstdout:\n{}\nstderr:\n{}", r.out, r.err);
    assert!(
        r.err.is_empty(),
        "no progress bar off a terminal:\n{}",
        r.err
    );
    r.out
}

/// `bench` gives each row the digest of the schedule that ran: on 4 ranks recursive
/// doubling and dimension exchange all-reduce by one schedule (one digest at every
/// size), ring by another; a size's digest differs from another size's.
#[test]
fn bench_rows_name_the_schedule_that_ran() {
    let out = bench(&[
        "--ranks",
        "4",
        "--op",
        "allreduce",
        "--algo",
        "recursive-doubling,dimension-exchange,ring",
        "--min-size",
        "64",
        "--max-size",
        "128",
        "--iters",
        "2",
        "--warmup",
        "1",
        "--format",
        "json",
    ]);
    let v: Value = serde_json::from_str(&out).unwrap();
    let rows = v["rows"].as_array().unwrap();
    let digest = |algo: &str, size: u64| -> String {
        let row = rows
            .iter()
            .find(|r| r["algo"] == algo && r["size"] == size)
            .unwrap_or_else(|| panic!("no {algo} {size}:\n{out}"));
        row["schedule"].as_str().unwrap().to_string()
    };
    for size in [64, 128] {
        let rd = digest("recursive-doubling", size);
        assert_eq!(rd.len(), 16, "{rd}");
        assert_eq!(rd, digest("dimension-exchange", size));
        assert_ne!(rd, digest("ring", size));
    }
    assert_ne!(digest("ring", 64), digest("ring", 128));
}

/// `bench --in-place` times the in-place forms: the same algorithm runs, and the
/// all-gather's prediction drops by the own-block copy it no longer makes (τ·size),
/// while the all-reduce's (no local copy to begin with) stays.
#[test]
fn bench_in_place_runs_the_in_place_forms_and_prices_no_own_block_copy() {
    let calib = scratch("bench-in-place").join("c.conf");
    std::fs::write(&calib, "beta = 1e-6\ntau = 1e-9\n").unwrap();
    let env = [("HYPERCOMM_CALIBRATION", calib.as_path())];
    let row = |op: &str, algo: &str, in_place: bool| -> Value {
        let mut a = vec![
            "bench",
            "--ranks",
            "3",
            "--op",
            op,
            "--algo",
            algo,
            "--min-size",
            "4096",
            "--max-size",
            "4096",
            "--iters",
            "3",
            "--warmup",
            "1",
            "--format",
            "json",
        ];
        if in_place {
            a.push("--in-place");
        }
        let r = hc_env(&a, &env);
        assert_eq!(r.code, 0, "{a:?}: {}", r.err);
        r.json()["rows"][0].clone()
    };
    // With fewer CPUs than the 3 ranks, ranks sharing a CPU take turns and their own
    // blocks add up: the saving is the busiest CPU's (`runtime::Execution::cpus`).
    let placed = hypercomm_rt::threads::cpu_count();
    let n = placed.min(std::thread::available_parallelism().map_or(placed, |n| n.get()));
    // Rank r on CPU ⌊r·n/3⌋ (`threads::block`): the busiest CPU holds ⌈3/n⌉ ranks.
    let per_cpu = 3usize.div_ceil(n);
    for (op, algo, saved) in [
        ("allgather", "ring", per_cpu as f64 * 4096.0 * 1e-9),
        ("allreduce", "ring", 0.0),
    ] {
        let (out, inp) = (row(op, algo, false), row(op, algo, true));
        assert_eq!(out["algo"], algo);
        assert_eq!(inp["algo"], algo);
        let (po, pi) = (
            out["predicted_us"].as_f64().unwrap(),
            inp["predicted_us"].as_f64().unwrap(),
        );
        assert!((po - pi - saved * 1e6).abs() < 1e-6, "{op}: {po} vs {pi}");
    }
}

#[test]
fn bench_csv_has_every_column_and_nccl_bandwidths() {
    for (op, k, factor, whole) in [
        ("allgather", 4u32, 0.75, true),
        ("alltoall", 3, 2.0 / 3.0, true),
        ("allreduce", 5, 1.6, false),
        ("broadcast", 3, 1.0, false),
    ] {
        let ks = k.to_string();
        let out = bench(&[
            "--ranks",
            &ks,
            "--op",
            op,
            "--min-size",
            "1",
            "--max-size",
            "4",
            "--iters",
            "2",
            "--warmup",
            "1",
            "--format",
            "csv",
        ]);
        let mut lines = out.lines();
        assert_eq!(lines.next(), Some(&*format!("{CSV_HEADER},schedule")));
        let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
        assert_eq!(rows.len(), 3, "{op}: sizes 1, 2, 4:\n{out}");
        for (row, size) in rows.iter().zip([1u64, 2, 4]) {
            assert_eq!(row.len(), 15, "{op}: {row:?}");
            // The schedule's digest: 16 hex digits (auto ran a registry schedule).
            assert!(
                row[14].len() == 16 && row[14].chars().all(|c| c.is_ascii_hexdigit()),
                "{op}: {row:?}"
            );
            assert_eq!(row[1], "true");
            assert_eq!(row[2], size.to_string());
            let bytes = if whole { size * u64::from(k) } else { size };
            assert_eq!(row[3], bytes.to_string(), "{op}");
            assert_eq!(row[4], "2");
            let f = |i: usize| -> f64 {
                row[i]
                    .parse()
                    .unwrap_or_else(|_| panic!("{op} column {i}: {row:?}"))
            };
            let (avg, min, max) = (f(5), f(6), f(7));
            assert!(min <= avg && avg <= max && min > 0.0, "{row:?}");
            let algbw = f(8);
            assert!((algbw - bytes as f64 / (avg * 1e-6) / 1e9).abs() <= 1e-9 * algbw.max(1.0));
            assert!(
                (f(9) - algbw * factor).abs() <= 1e-9 * algbw.max(1.0),
                "{op}: busbw factor"
            );
            assert!(f(10) > 0.0, "predicted");
            assert!(
                (f(11) - avg / f(10)).abs() <= 1e-9 * f(11),
                "measured/predicted"
            );
            assert!(f(12) > 0.0, "memcpy");
            assert!(
                (f(13) - f(9) / f(12)).abs() <= 1e-9 * f(13).max(1.0),
                "busbw/memcpy"
            );
        }
    }
}

/// Issue 20: `all` mixes with names and `auto` (`all,auto`: auto beside every
/// algorithm, in one run); a name given twice runs once; a bad name among them is
/// refused, naming the valid ones.
#[test]
fn bench_all_with_auto_times_auto_beside_every_algorithm() {
    let fitting = algorithms::fitting(&Topology::complete(4), OpKind::Broadcast);
    let rows = |algo: &str| -> Vec<(String, bool)> {
        let out = bench(&[
            "--ranks",
            "4",
            "--op",
            "broadcast",
            "--algo",
            algo,
            "--min-size",
            "8",
            "--max-size",
            "8",
            "--iters",
            "1",
            "--warmup",
            "1",
            "--format",
            "json",
        ]);
        let j: Value = serde_json::from_str(&out).unwrap();
        j["rows"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| (r["algo"].as_str().unwrap().to_string(), r["auto"] == true))
            .collect()
    };
    let got = rows("all,auto");
    assert_eq!(got.len(), fitting.len() + 1, "{got:?}");
    for (row, a) in got.iter().zip(&fitting) {
        assert_eq!(*row, (a.name.to_string(), false));
    }
    let last = got.last().unwrap();
    assert!(last.1, "auto's row last: {got:?}");
    assert!(
        fitting.iter().any(|a| a.name == last.0),
        "auto ran {}",
        last.0
    );
    // `binomial` first, then the others once each.
    let got = rows("binomial,all");
    assert_eq!(got.len(), fitting.len(), "{got:?}");
    assert_eq!(got[0].0, "binomial");
    bad(
        &[
            "bench",
            "--ranks",
            "4",
            "--op",
            "broadcast",
            "--algo",
            "all,nope",
            "--max-size",
            "8",
        ],
        &["nope", "binomial"],
    );
}

#[test]
fn bench_all_algorithms_and_the_json_and_text_forms() {
    let fitting = algorithms::fitting(&Topology::complete(4), OpKind::Alltoall);
    let out = bench(&[
        "--ranks",
        "4",
        "--op",
        "alltoall",
        "--algo",
        "all",
        "--min-size",
        "8",
        "--max-size",
        "16",
        "--iters",
        "1",
        "--warmup",
        "0",
        "--format",
        "json",
    ]);
    let j: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(j["ranks"], 4);
    assert_eq!(j["busbw_factor"], 0.75);
    let rows = j["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 2 * fitting.len());
    for (row, (size, a)) in rows.iter().zip(
        [8, 16]
            .iter()
            .flat_map(|s| fitting.iter().map(move |a| (*s, a))),
    ) {
        assert_eq!(row["size"], size);
        assert_eq!(row["algo"], a.name);
        assert_eq!(row["auto"], false);
        for field in [
            "avg_us",
            "min_us",
            "max_us",
            "algbw_gbps",
            "busbw_gbps",
            "predicted_us",
            "memcpy_gbps",
        ] {
            assert!(row[field].as_f64().is_some(), "{field} in {row}");
        }
    }
    let text = bench(&[
        "--ranks",
        "3",
        "--op",
        "reduce",
        "--algo",
        "binomial,auto",
        "--max-size",
        "2",
        "--iters",
        "1",
    ]);
    for col in [
        "size",
        "algo",
        "avg_us",
        "min_us",
        "max_us",
        "algbw",
        "busbw",
        "pred_us",
        "meas/pred",
        "memcpy",
        "busbw/memcpy",
    ] {
        assert!(text.contains(col), "no `{col}`:\n{text}");
    }
    assert_eq!(
        text.lines().filter(|l| l.contains("(auto)")).count(),
        2,
        "{text}"
    );
    assert_eq!(
        text.lines()
            .filter(|l| l.starts_with("1 B") || l.starts_with("2 B"))
            .count(),
        4,
        "{text}"
    );
}

/// The β and τ of a calibration file.
fn read_calibration(path: &Path) -> Calibration {
    Calibration::load(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn calibrate_writes_a_file_that_run_then_loads() {
    let dir = scratch("calibrate-env");
    let file = dir.join("cal.conf");
    let env = [("HYPERCOMM_CALIBRATION", file.as_path())];
    let r = calibrate_env(
        &[
            "calibrate",
            "--ranks",
            "2",
            "--max-size",
            "4194304",
            "--reps",
            "20",
            "--format",
            "json",
        ],
        &env,
    );
    assert_eq!(r.code, 0, "{}\n{}", r.out, r.err);
    let j = r.json();
    assert_eq!(j["saved"], file.display().to_string());
    assert_eq!(
        j["points"].as_array().unwrap().len(),
        23,
        "1 B to 4 MiB by powers of 2"
    );
    let c = read_calibration(&file);
    assert_eq!(
        (j["beta"].as_f64().unwrap(), j["tau"].as_f64().unwrap()),
        (c.beta, c.tau)
    );
    assert!(c.beta >= 0.0 && c.tau > 0.0, "{c:?}");
    // The same-CPU pairs (two fibers a CPU): their points, and the file's bands are
    // the report's.
    assert_eq!(j["same_cpu"].as_array().map(Vec::len), Some(23), "{j}");
    let bands: Vec<(u64, f64, f64)> = j["same_cpu_bands"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| {
            let f = |k: &str| b[k].as_f64().unwrap();
            (b["from"].as_u64().unwrap(), f("beta"), f("tau"))
        })
        .collect();
    let saved: Vec<(u64, f64, f64)> = c
        .same_cpu
        .as_slice()
        .iter()
        .map(|b| (b.from, b.beta, b.tau))
        .collect();
    assert!(!saved.is_empty());
    assert_eq!(bands, saved);
    // Two ranks with a CPU each (CI's 2 cores) measured lone messages of 256 KiB to
    // 4 MiB: the share each core is priced at, one per size, in ¼..1, in the report and
    // the file alike.
    if hypercomm_rt::threads::cpu_count() >= 2 {
        let shares: Vec<(u64, f64)> = j["shared_copy"]
            .as_array()
            .unwrap_or_else(|| panic!("{j}"))
            .iter()
            .map(|p| (p[0].as_u64().unwrap(), p[1].as_f64().unwrap()))
            .collect();
        let sizes: Vec<u64> = shares.iter().map(|p| p.0).collect();
        assert_eq!(sizes, [1 << 18, 1 << 19, 1 << 20, 1 << 21, 1 << 22], "{j}");
        assert!(
            shares.iter().all(|p| (0.25..=1.0).contains(&p.1)),
            "{shares:?}"
        );
        assert_eq!(c.shared_copy.as_slice(), shares);
        let text = std::fs::read_to_string(&file).unwrap();
        assert_eq!(text.matches("#       262144 B").count(), 3, "{text}");
    }
    // run and bench load it.
    let r = hc_env(
        &[
            "run",
            "--ranks",
            "3",
            "--op",
            "allgather",
            "--len",
            "8",
            "--format",
            "json",
        ],
        &env,
    );
    assert_eq!(r.code, 0, "{}", r.err);
    let j = r.json();
    assert_eq!(j["calibration"]["source"], file.display().to_string());
    assert_eq!(j["calibration"]["beta"].as_f64(), Some(c.beta));
    assert_eq!(j["calibration"]["tau"].as_f64(), Some(c.tau));
    let r = hc_env(
        &[
            "bench",
            "--ranks",
            "2",
            "--op",
            "broadcast",
            "--max-size",
            "1",
            "--iters",
            "1",
            "--format",
            "json",
        ],
        &env,
    );
    assert_eq!(r.code, 0, "{}", r.err);
    assert_eq!(r.json()["calibration"]["beta"].as_f64(), Some(c.beta));
    // A file the runtime cannot read is bad input.
    std::fs::write(&file, "beta = fast\n").unwrap();
    let r = hc_env(
        &["run", "--ranks", "2", "--op", "allgather", "--len", "8"],
        &env,
    );
    assert_eq!(r.code, 2, "{}", r.err);
    assert!(r.err.contains("fast"), "{}", r.err);
}

/// `MemAvailable` of `/proc/meminfo`, bytes.
#[cfg(target_os = "linux")]
fn mem_available() -> u64 {
    let text = std::fs::read_to_string("/proc/meminfo").unwrap();
    hypercomm_cli::config::mem_available(&text).expect("MemAvailable in /proc/meminfo")
}

/// A run whose buffers would take more than the machine's available memory is refused
/// before allocating anything (exit 2, the bytes needed and available named), however
/// far below the fixed 64 GiB it is. The lengths are computed from `MemAvailable` now:
/// their buffers would take three times it (twice for `in` and `out` alone), so a
/// machine that frees memory meanwhile still refuses them.
#[cfg(target_os = "linux")]
#[test]
fn buffers_beyond_the_available_memory_are_refused() {
    let available = mem_available();
    // 2 ranks of all-reduce: each holds in, out and the reference, m elements of 8 B.
    let m = available / 16 + 1;
    let need = 2 * 3 * m * 8;
    let ms = m.to_string();
    let r = hc(&["run", "--ranks", "2", "--op", "allreduce", "--len", &ms]);
    assert_eq!(r.code, 2, "--len {ms}:\n{}\n{}", r.out, r.err);
    for needle in [
        "--len",
        &format!("{need} bytes"),
        "available",
        "MemAvailable",
    ] {
        assert!(r.err.contains(needle), "no `{needle}`:\n{}", r.err);
    }
    // bench at one size S: in and out of 2 ranks, and memcpy's two buffers: 6·S bytes.
    let size = (available / 2 + 1).to_string();
    let r = hc(&[
        "bench",
        "--ranks",
        "2",
        "--op",
        "allreduce",
        "--min-size",
        &size,
        "--max-size",
        &size,
    ]);
    assert_eq!(r.code, 2, "--max-size {size}:\n{}\n{}", r.out, r.err);
    for needle in ["--max-size", "available", "MemAvailable"] {
        assert!(r.err.contains(needle), "no `{needle}`:\n{}", r.err);
    }
}

/// `--max-size` below 4 measures one size, which cannot tell β from τ, and one beyond
/// the memory cannot be allocated: both refused before measuring, naming the valid
/// choice, nothing saved.
#[test]
fn calibrate_refuses_fewer_than_two_sizes() {
    let dir = scratch("calibrate-one-size");
    let file = dir.join("cal.conf");
    let fs = file.display().to_string();
    for max in ["0", "1"] {
        let r = hc(&[
            "calibrate",
            "--max-size",
            max,
            "--reps",
            "5",
            "--output",
            &fs,
        ]);
        assert_eq!(r.code, 2, "--max-size {max}:\n{}\n{}", r.out, r.err);
        for needle in ["--max-size", "two", "2 or more"] {
            assert!(r.err.contains(needle), "no `{needle}`:\n{}", r.err);
        }
        assert!(!file.exists(), "--max-size {max} saved a file");
    }
    // Sizes whose buffers the machine cannot hold: refused before allocating (1 TiB, or
    // 2^62 bytes where the memory available is unknown and the cap is 64 GiB).
    for max in ["1099511627776", "4611686018427387904"] {
        let r = hc(&["calibrate", "--max-size", max, "--output", &fs]);
        assert_eq!(r.code, 2, "--max-size {max}:\n{}\n{}", r.out, r.err);
        assert!(r.err.contains("--max-size"), "{}", r.err);
        assert!(!file.exists(), "--max-size {max} saved a file");
    }
}

/// Without a calibration file, `run` and `bench` measure one (a note on stderr says
/// so), keep it in the cache directory under the machine's name, and read it back
/// the next time without measuring; the backend's own file in the configuration
/// directory comes first, and `HYPERCOMM_CALIBRATION=off` keeps the defaults.
#[test]
fn a_run_without_a_calibration_measures_one_and_keeps_it() {
    let dir = scratch("calibration-auto");
    let (config, cache) = (dir.join("config"), dir.join("cache"));
    std::fs::create_dir_all(&config).unwrap();
    let env = [
        ("XDG_CONFIG_HOME", config.as_path()),
        ("XDG_CACHE_HOME", cache.as_path()),
    ];
    let run = [
        "run",
        "--ranks",
        "2",
        "--op",
        "allreduce",
        "--len",
        "8",
        "--format",
        "json",
    ];
    // A busy machine's fit can be refused (three tries a run): then the defaults, said.
    let mut first = hc_env(&run, &env);
    for _ in 0..2 {
        if !first.err.contains("none could be measured") {
            break;
        }
        first = hc_env(&run, &env);
    }
    assert_eq!(first.code, 0, "{}", first.err);
    assert!(first.err.contains("measured one in"), "{}", first.err);
    let kept: Vec<PathBuf> = std::fs::read_dir(cache.join("hypercomm"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_str()
                .unwrap()
                .starts_with("calibration-")
        })
        .collect();
    assert_eq!(kept.len(), 1, "{kept:?}");
    let name = kept[0].file_name().unwrap().to_str().unwrap().to_string();
    assert!(
        name.starts_with("calibration-threads-") && name.ends_with(".conf"),
        "{name}"
    );
    assert!(
        first.err.contains(&kept[0].display().to_string()),
        "{}",
        first.err
    );
    let j = first.json();
    let cal = &j["calibration"];
    assert_eq!(cal["source"], kept[0].display().to_string(), "{j}");
    let measured = read_calibration(&kept[0]);
    assert_eq!(cal["beta"].as_f64().unwrap(), measured.beta);
    assert!(measured.beta > 0.0 && measured.tau > 0.0);
    assert_ne!((measured.beta, measured.tau), (1e-6, 1e-9), "the defaults");
    // Its sizes pass `calibrate`'s default 4 MiB (up to 64 MiB where memory allows):
    // the copy floor's memory speed is in it.
    let text = std::fs::read_to_string(&kept[0]).unwrap();
    assert!(text.contains("8388608 B"), "{text}");
    // Read back, not measured again; bench too.
    let again = hc_env(&run, &env);
    assert_eq!(again.code, 0, "{}", again.err);
    assert!(!again.err.contains("measured"), "{}", again.err);
    assert_eq!(again.json()["calibration"], j["calibration"]);
    let b = hc_env(
        &[
            "bench",
            "--ranks",
            "2",
            "--op",
            "allreduce",
            "--max-size",
            "8",
            "--format",
            "json",
        ],
        &env,
    );
    assert_eq!(b.code, 0, "{}", b.err);
    assert!(!b.err.contains("measured"), "{}", b.err);
    let bj: Value = serde_json::from_str(&b.out).unwrap();
    assert_eq!(bj["calibration"]["source"], cal["source"]);
    // The backend's own file first.
    std::fs::create_dir_all(config.join("hypercomm")).unwrap();
    let own = config.join("hypercomm").join("calibration.conf");
    std::fs::write(&own, "beta = 3e-7\ntau = 2e-11\n").unwrap();
    let r = hc_env(&run, &env);
    assert_eq!(r.json()["calibration"]["source"], own.display().to_string());
    std::fs::remove_file(&own).unwrap();
    // `off`: the defaults, nothing read.
    let off = hc_env(
        &run,
        &[env[0], env[1], ("HYPERCOMM_CALIBRATION", Path::new("off"))],
    );
    assert_eq!(off.code, 0, "{}", off.err);
    let oc = &off.json()["calibration"];
    assert!(oc["source"].is_null(), "{oc}");
    assert_eq!(oc["beta"].as_f64(), Some(1e-6));
}

/// A calibration file with τ ≤ 0 (bandwidth for free) or β < 0 is bad input to `run`
/// and `bench`, whether named by `HYPERCOMM_CALIBRATION` or found at the default path.
#[test]
fn a_calibration_with_tau_0_or_a_negative_beta_is_refused() {
    let dir = scratch("calibration-zero-tau");
    let named = dir.join("named.conf");
    let default = dir.join("hypercomm").join("calibration.conf");
    std::fs::create_dir_all(default.parent().unwrap()).unwrap();
    let run = ["run", "--ranks", "2", "--op", "allreduce", "--len", "8"];
    let bench = [
        "bench",
        "--ranks",
        "2",
        "--op",
        "allreduce",
        "--max-size",
        "8",
    ];
    for (text, needle) in [
        ("beta = 2e-6\ntau = 0\n", "tau = 0 must be finite and > 0"),
        ("beta = 2e-6\ntau = -1e-10\n", "tau = -0.0000000001 must be"),
        ("beta = -2e-6\ntau = 1e-10\n", "beta = -0.000002 must be"),
    ] {
        std::fs::write(&named, text).unwrap();
        std::fs::write(&default, text).unwrap();
        let envs: [&[(&str, &Path)]; 2] = [
            &[("HYPERCOMM_CALIBRATION", named.as_path())],
            &[("XDG_CONFIG_HOME", dir.as_path())],
        ];
        for env in envs {
            for args in [&run[..], &bench[..]] {
                let r = hc_env(args, env);
                assert_eq!(r.code, 2, "{text:?} {args:?}:\n{}\n{}", r.out, r.err);
                assert!(r.err.contains(needle), "{text:?}: {}", r.err);
            }
        }
    }
}

#[test]
fn calibrate_saves_to_the_default_path_and_output_flag() {
    let dir = scratch("calibrate-default");
    let env = [("XDG_CONFIG_HOME", dir.as_path())];
    // Sizes up to 4 MiB, so that τ shows above the noise of a busy machine (a fit of
    // τ ≤ 0 is not saved).
    let r = calibrate_env(
        &["calibrate", "--max-size", "4194304", "--reps", "10"],
        &env,
    );
    assert_eq!(r.code, 0, "{}\n{}", r.out, r.err);
    let file = dir.join("hypercomm").join("calibration.conf");
    assert!(
        r.out.contains(&file.display().to_string()),
        "prints where it saved:\n{}",
        r.out
    );
    let c = read_calibration(&file);
    let r = hc_env(
        &[
            "run",
            "--ranks",
            "2",
            "--op",
            "allreduce",
            "--len",
            "8",
            "--format",
            "json",
        ],
        &env,
    );
    assert_eq!(r.code, 0, "{}", r.err);
    let j = r.json();
    assert_eq!(j["calibration"]["source"], file.display().to_string());
    assert_eq!(j["calibration"]["beta"].as_f64(), Some(c.beta));
    // Without a file: the defaults, said so.
    let j = run_json(&["--ranks", "2", "--op", "allreduce", "--len", "8"]);
    assert_eq!(j["calibration"]["source"], Value::Null);
    assert_eq!(
        j["calibration"]["beta"].as_f64(),
        Some(Calibration::default().beta)
    );
    // --output wins (into a directory that exists: a missing one is refused, as
    // `sweep --svg` refuses it; tests/hardening.rs).
    let out = dir.join("elsewhere").join("c.conf");
    std::fs::create_dir_all(out.parent().unwrap()).unwrap();
    let outs = out.display().to_string();
    let r = hc_env(
        &[
            "calibrate",
            "--ranks",
            "4",
            "--max-size",
            "4194304",
            "--reps",
            "5",
            "--output",
            &outs,
        ],
        &env,
    );
    assert_eq!(r.code, 0, "{}", r.err);
    read_calibration(&out);
}

/// The path another backend takes: per-rank work, then the all-gathers over the same
/// communicator; every rank must end with every rank's measurements, as the threads
/// backend gets them from `threads::run`.
#[test]
fn gather_run_and_gather_bench_bring_every_rank_result_to_every_rank() {
    use hypercomm::collective::Collective;
    use hypercomm_cli::runtime::{self, AlgoChoice, BenchConfig, ReduceOp, RunConfig};
    use hypercomm_rt::threads;

    let cfg = RunConfig {
        collective: Collective::Allgather,
        ranks: 3,
        len: 5,
        algo: AlgoChoice::Auto,
        shape: None,
        packets: algorithms::Packets::Opt,
        reduce: ReduceOp::Sum,
        seed: 9,
        inject_error: true,
        iters: 3,
        counts: None,
        skew: 0.0,
    };
    let per_rank = threads::run(3, |comm| {
        let local = runtime::run_rank(comm, &cfg)?;
        let all = runtime::gather_run(comm, local.clone())?;
        Ok::<_, hypercomm_rt::Error>((local, all))
    })
    .unwrap();
    let locals: Vec<_> = per_rank.iter().map(|(l, _)| l.clone()).collect();
    for (_, all) in &per_rank {
        assert_eq!(all, &locals);
    }
    assert!(locals[2].mismatch.is_some() && locals[0].mismatch.is_none());
    assert!(locals.iter().all(|l| l.times.len() == 3), "{locals:?}");
    let cal = runtime::CalibrationInfo::new(Calibration::default(), None);
    let report = runtime::RunReport::new(
        &cfg,
        "test",
        &cal,
        &per_rank[1].1,
        runtime::Execution::default(),
    );
    assert!(!report.correct);
    assert_eq!(report.checked, 3 * 15);

    let bcfg = BenchConfig {
        collective: Collective::Alltoall,
        ranks: 3,
        algos: vec![AlgoChoice::Auto],
        shape: None,
        sizes: vec![1, 2],
        iters: Some(2),
        warmup: Some(0),
        reduce: ReduceOp::Sum,
        in_place: false,
        persistent: false,
        interleave: false,
        barrier: hypercomm_rt::Barrier::Tree,
        skew: 0.0,
    };
    let per_rank = threads::run(3, |comm| {
        let local = runtime::bench_rank(comm, &bcfg, &|| {})?;
        let all = runtime::gather_bench(comm, local.clone())?;
        Ok::<_, hypercomm_rt::Error>((local, all))
    })
    .unwrap();
    let locals: Vec<_> = per_rank.iter().map(|(l, _)| l.clone()).collect();
    for (_, all) in &per_rank {
        assert_eq!(all.len(), 3);
        for (got, want) in all.iter().zip(&locals) {
            let lat = |v: &Vec<runtime::RankPoint>| v.iter().map(|p| p.latency).collect::<Vec<_>>();
            assert_eq!(lat(got), lat(want));
        }
        assert!(all[0][0].memcpy.is_some() && all[1][0].memcpy.is_none());
    }
    let report = runtime::BenchReport::new(
        &bcfg,
        "test",
        &cal,
        &per_rank[2].1,
        runtime::Execution::default(),
    );
    assert_eq!(report.rows.len(), 2);
    assert!(report.rows.iter().all(|r| r.memcpy_gbps.is_some()));
}

/// `--pin on|off|auto` (threads bound to CPUs or not) changes where ranks run, not what
/// they compute: `run` and `bench` accept each, and the result is checked correct; any
/// other value is refused, naming the valid ones.
#[test]
fn pinned_or_not_ranks_compute_the_same() {
    for (k, pin) in [("2", "on"), ("5", "on"), ("5", "off"), ("3", "auto")] {
        let j = run_json(&[
            "--ranks",
            k,
            "--op",
            "allreduce",
            "--len",
            "33",
            "--seed",
            "7",
            "--pin",
            pin,
        ]);
        assert_eq!(j["correct"], true, "{j}");
    }
    let r = hc(&[
        "bench",
        "--ranks",
        "3",
        "--op",
        "alltoall",
        "--min-size",
        "8",
        "--max-size",
        "16",
        "--iters",
        "3",
        "--warmup",
        "1",
        "--pin",
        "on",
        "--format",
        "csv",
    ]);
    assert_eq!(r.code, 0, "{}", r.err);
    assert_eq!(r.out.lines().count(), 3, "{}", r.out);
    let args: Vec<&str> = "run --ranks 2 --op allreduce --len 1 --pin yes"
        .split(' ')
        .collect();
    bad(&args, &["yes", "auto", "on", "off"]);
}

/// `--fibers` (ranks that share a CPU as fibers of one thread; the default) computes
/// what threads compute, in `run` and `bench`, and the report says when the ranks ran as
/// fibers: when they outnumber the CPUs, unless `--fibers off`.
#[test]
fn ranks_as_fibers_compute_the_same() {
    // The fewest ranks that outnumber this process's CPUs, as the runtime counts them.
    let uses_fibers = |k| {
        hypercomm_rt::threads::Config::new(k)
            .fibers(true)
            .uses_fibers()
    };
    let n = (1..=4096)
        .find(|&k| uses_fibers(k))
        .expect("from some rank count on, ranks outnumber the CPUs")
        - 1;
    let (over, over2) = ((n + 1).to_string(), (2 * n + 1).to_string());
    for (k, op, backend) in [
        (over.as_str(), "allreduce", "threads (fibers)"),
        (over2.as_str(), "alltoall", "threads (fibers)"),
        ("1", "broadcast", "threads"),
    ] {
        let j = run_json(&[
            "--ranks", k, "--op", op, "--len", "33", "--seed", "3", "--fibers",
        ]);
        assert_eq!(j["correct"], true, "{j}");
        assert_eq!(j["backend"], backend, "{j}");
    }
    // Fibers are the CLI's default (`--fibers auto`); `--fibers off` gives every rank a
    // thread.
    let j = run_json(&["--ranks", &over, "--op", "allgather", "--len", "3"]);
    assert_eq!(j["backend"], "threads (fibers)", "no --fibers: {j}");
    let j = run_json(&[
        "--ranks",
        &over,
        "--op",
        "allgather",
        "--len",
        "3",
        "--fibers",
        "off",
    ]);
    assert_eq!(j["correct"], true, "{j}");
    assert_eq!(j["backend"], "threads", "--fibers off: {j}");
    let r = hc(&[
        "bench",
        "--ranks",
        &over,
        "--op",
        "allgather",
        "--min-size",
        "8",
        "--max-size",
        "64",
        "--iters",
        "3",
        "--warmup",
        "1",
        "--fibers",
        "--format",
        "json",
    ]);
    assert_eq!(r.code, 0, "{}", r.err);
    let j: serde_json::Value = serde_json::from_str(&r.out).unwrap();
    assert_eq!(j["backend"], "threads (fibers)", "{j}");
}

// ---------------------------------------------------------------- download (seed 003)

/// Download on hypercube:n+host, n = 0..4 (2^n + 1 ranks, the host last): every
/// registry algorithm runs by name, with the collective API (`--packets opt`) and with
/// its own plan (`--packets 1`), each PE's block checked against the serial reference,
/// the model's time beside the measured one. SSA as published is refused (exit 2) with
/// the verifier's message naming the PEs it leaves without data where it is flawed
/// (n ≥ 3), runs correctly where it is not (n = 2), and does not fit below.
#[test]
fn download_runs_every_algorithm_on_hypercube_0_to_4_plus_host() {
    for n in 0..=4u32 {
        let k = (1u64 << n) + 1;
        let ks = k.to_string();
        let topology: Topology = format!("hypercube:{n}+host").parse().unwrap();
        let all = algorithms::for_op(OpKind::Download).collect::<Vec<_>>();
        assert!(all.len() >= 7, "sl rp ds ssa ssa-repaired gichev optimal");
        for a in all {
            for packets in ["opt", "1"] {
                let args = [
                    "--ranks",
                    &ks,
                    "--op",
                    "download",
                    "--algo",
                    a.name,
                    "--len",
                    "7",
                    "--packets",
                    packets,
                    "--iters",
                    "2",
                ];
                if a.fits(&topology).is_err() {
                    let mut run = vec!["run"];
                    run.extend(args);
                    bad(&run, &["does not fit", &topology.to_string()]);
                    continue;
                }
                if a.published_flaw().is_some() && n >= 3 {
                    let mut run = vec!["run"];
                    run.extend(args);
                    // x = ⌊n/2⌋: the x-subcube of the lowest 2^x PEs and the
                    // (n − x)-subcube of the highest 2^{n − x}; those between get nothing.
                    let x = n / 2;
                    let missing: Vec<String> = ((1u64 << x)..(1u64 << n) - (1u64 << (n - x)))
                        .map(|r| r.to_string())
                        .collect();
                    let list = format!("nodes left without their data: {}", missing.join(", "));
                    bad(&run, &["is refused", "verification failed", &list]);
                    continue;
                }
                let j = run_json(&args);
                let what = format!("n = {n} {} packets {packets}: {j}", a.name);
                assert_eq!(j["algo"], a.name, "{what}");
                assert_eq!(j["op"], "download", "{what}");
                assert_eq!(j["correct"], true, "{what}");
                // Every PE's block: 2^n blocks of 7 (the host's output is empty).
                assert_eq!(j["checked"], (k - 1) * 7, "{what}");
                let predicted = j["predicted"].as_f64().unwrap_or(0.0);
                assert!(predicted > 0.0, "the model's time: {what}");
            }
        }
        // Auto chooses among the algorithms that perform download (never SSA).
        let j = run_json(&["--ranks", &ks, "--op", "download", "--len", "5"]);
        assert_eq!(j["auto"], true);
        assert_eq!(j["correct"], true, "{j}");
        assert_ne!(j["algo"], "ssa");
    }
}

/// A download on a rank count that is not 2^n + 1 is bad input naming the valid
/// counts; a wrong result exits 1; `bench --algo all` leaves SSA out (it does not
/// perform download) and times the others on real buffers.
#[test]
fn download_needs_2_to_the_n_plus_1_ranks_and_benches_without_ssa() {
    for k in ["4", "10"] {
        bad(
            &["run", "--ranks", k, "--op", "download", "--len", "3"],
            &["--ranks", "hypercube:n+host", "2^n + 1"],
        );
    }
    let r = hc(&[
        "run",
        "--ranks",
        "9",
        "--op",
        "download",
        "--algo",
        "gichev",
        "--len",
        "3",
        "--inject-error",
    ]);
    assert_eq!(r.code, 1, "{}{}", r.out, r.err);
    assert!(r.err.contains("rank 7"), "the last PE: {}", r.err);
    let out = bench(&[
        "--ranks",
        "9",
        "--op",
        "download",
        "--algo",
        "all",
        "--max-size",
        "2",
        "--iters",
        "1",
        "--format",
        "json",
    ]);
    let j: Value = serde_json::from_str(&out).unwrap();
    let topology: Topology = "hypercube:3+host".parse().unwrap();
    let performing: Vec<&str> = algorithms::fitting(&topology, OpKind::Download)
        .into_iter()
        .filter(|a| a.published_flaw().is_none())
        .map(|a| a.name)
        .collect();
    let rows = j["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 2 * performing.len(), "sizes 1 and 2: {j}");
    for row in rows {
        assert!(performing.contains(&row["algo"].as_str().unwrap()), "{row}");
        assert!(row["predicted_us"].as_f64().is_some(), "{row}");
    }
}

/// `--shape`: `product` laid out as every given shape on 4, 6, 8 and 12 ranks (and a
/// prime as 1xK), all-to-all and all-gather, checked against the serial reference;
/// the report names the shape; bench takes it for the algorithms that take one.
#[test]
fn product_runs_with_every_shape_given() {
    for (k, shapes) in [
        (4, &["2x2", "4x1", "1x4"][..]),
        (6, &["2x3", "3x2"]),
        (8, &["2x4", "4x2", "2x2x2"]),
        (12, &["3x4", "2x6", "2x3x2"]),
        (7, &["1x7"]),
    ] {
        for shape in shapes {
            for op in ["alltoall", "allgather"] {
                let ks = k.to_string();
                let v = run_json(&[
                    "--ranks", &ks, "--op", op, "--algo", "product", "--shape", shape, "--len",
                    "3", "--iters", "2",
                ]);
                assert_eq!(v["correct"], true, "{op} {shape}");
                assert_eq!(v["algo"], "product");
                assert_eq!(v["shape"], *shape);
                let want = checked_elements(op.parse().unwrap(), k, 3);
                assert_eq!(v["checked"], want, "{op} {shape}: every rank checked");
            }
        }
    }
    let r = hc(&[
        "bench",
        "--ranks",
        "6",
        "--op",
        "alltoall",
        "--algo",
        "product,pairwise",
        "--shape",
        "3x2",
        "--max-size",
        "8",
        "--iters",
        "2",
        "--warmup",
        "1",
        "--format",
        "json",
    ]);
    assert_eq!(r.code, 0, "{}", r.err);
    let v = r.json();
    assert_eq!(v["shape"], "3x2");
    let algos: Vec<&str> = v["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| row["algo"].as_str().unwrap())
        .collect();
    assert!(
        algos.contains(&"product") && algos.contains(&"pairwise"),
        "{algos:?}"
    );
}

/// Bad shapes exit 2 naming the problem: a product other than the ranks, a factor of
/// 0, a non-number, `node` on threads, a shape for an algorithm that takes none, and
/// `product` on a prime without a shape.
#[test]
fn bad_shapes_exit_2_naming_the_problem() {
    let base = ["run", "--ranks", "6", "--op", "alltoall", "--len", "2"];
    let with = |extra: &[&'static str]| {
        let mut a = base.to_vec();
        a.extend(extra);
        a
    };
    for (extra, needles) in [
        (
            &["--algo", "product", "--shape", "2x2"][..],
            &["--shape", "multiplies to 4, not the 6 ranks"][..],
        ),
        (
            &["--algo", "product", "--shape", "0x6"],
            &["--shape", "a factor of 0"],
        ),
        (
            &["--algo", "product", "--shape", "2xb"],
            &["`b` is not a whole number"],
        ),
        (
            &["--algo", "product", "--shape", "node"],
            &["node", "hypercomm-mpi"],
        ),
        (
            &["--algo", "pairwise", "--shape", "2x3"],
            &["pairwise takes no shape", "valid: --algo product"],
        ),
        (&["--shape", "2x3"], &["auto takes no shape"]),
    ] {
        bad(&with(extra), needles);
    }
    bad(
        &[
            "run", "--ranks", "7", "--op", "alltoall", "--algo", "product", "--len", "2",
        ],
        &["prime", "--shape 1x7"],
    );
    bad(
        &[
            "bench",
            "--ranks",
            "6",
            "--op",
            "alltoall",
            "--algo",
            "pairwise,bruck",
            "--shape",
            "2x3",
        ],
        &["pairwise,bruck takes no shape"],
    );
}

/// The variable-count collectives on 1, 3, 4 and 5 ranks with every algorithm and
/// `auto`, counts drawn from the seed with `--skew 1` (zeros among them): correct, and
/// the elements checked are the drawn counts' (what their outputs hold together).
#[test]
fn run_variable_count_collectives_with_skewed_counts() {
    use hypercomm_cli::runtime::draw_counts;
    for op in [
        "gatherv",
        "scatterv",
        "allgatherv",
        "alltoallv",
        "reduce-scatterv",
    ] {
        let kind: OpKind = op.parse().unwrap();
        for k in [1u64, 3, 5] {
            let ks = k.to_string();
            let c =
                hypercomm::collective::Collective::new(kind, k as u32, None, None, None).unwrap();
            let counts = draw_counts(c, k as u32, 9, 1.0, 7).unwrap();
            let want: u64 = (0..k as u32)
                .map(|r| c.out_len_with(k as u32, 9, Some(&counts), r))
                .sum();
            let fitting = algorithms::fitting(&Topology::complete(k as u32), kind);
            let names = fitting.iter().map(|a| a.name).chain(["auto"]);
            for algo in names {
                let args = [
                    "--ranks", &ks, "--op", op, "--len", "9", "--skew", "1", "--seed", "7",
                    "--iters", "2", "--algo", algo,
                ];
                let j = run_json(&args);
                assert_eq!(j["correct"], true, "{op}/{algo} k={k}: {j}");
                assert_eq!(j["checked"], want, "{op}/{algo} k={k}");
            }
        }
    }
    bad(
        &[
            "run", "--ranks", "3", "--op", "alltoall", "--len", "4", "--skew", "0.5",
        ],
        &["--skew", "alltoall has one count per block"],
    );
    bad(
        &[
            "run",
            "--ranks",
            "3",
            "--op",
            "alltoallv",
            "--len",
            "4",
            "--skew",
            "2",
        ],
        &["--skew", "valid: a number from 0"],
    );
}

/// `--skew 0` gives every count `len`; `--skew 1` spans 0 to 2·len and draws zeros;
/// the same seed draws the same counts.
#[test]
fn skew_bounds_the_drawn_counts() {
    use hypercomm::collective::Collective;
    use hypercomm::counts::Counts;
    use hypercomm_cli::runtime::draw_counts;
    let flat = |c: Counts| match c {
        Counts::PerRank(v) => v,
        Counts::Matrix(m) => m.concat(),
    };
    let even = flat(draw_counts(Collective::Alltoallv, 4, 10, 0.0, 1).unwrap());
    assert!(even.iter().all(|&c| c == 10), "{even:?}");
    let wide = flat(draw_counts(Collective::Alltoallv, 16, 10, 1.0, 1).unwrap());
    assert!(
        wide.iter().all(|&c| c <= 20) && wide.contains(&0),
        "{wide:?}"
    );
    assert!(wide.iter().any(|&c| c > 15), "{wide:?}");
    let half = flat(draw_counts(Collective::Allgatherv, 64, 10, 0.5, 3).unwrap());
    assert!(half.iter().all(|&c| (5..=15).contains(&c)), "{half:?}");
    assert_eq!(
        draw_counts(Collective::Allgatherv, 64, 10, 0.5, 3).map(flat),
        Some(half)
    );
    assert_eq!(draw_counts(Collective::Allgather, 4, 10, 0.5, 3), None);
}

/// `bench --persistent` times each algorithm's persistent form right after its plain
/// call at every size: rows alternate plain, persistent, the same algorithm (auto's
/// choice planned once), and the persistent row's ratio is its avg over the plain
/// row's; the text table and the CSV carry the two extra columns.
#[test]
fn bench_persistent_puts_the_planned_call_beside_the_plain_one() {
    let base = [
        "--ranks",
        "3",
        "--min-size",
        "8",
        "--max-size",
        "32",
        "--iters",
        "3",
        "--warmup",
        "1",
        "--persistent",
    ];
    for (op, algos) in [
        ("allreduce", "auto,ring"),
        ("broadcast", "binomial,auto"),
        ("gather", "auto"),
        ("reduce-scatter", "auto"),
        // Counts drawn from the size, fixed when planned.
        ("alltoallv", "auto,pairwise"),
        ("gatherv", "auto"),
    ] {
        let mut a = base.to_vec();
        a.extend(["--op", op, "--algo", algos, "--format", "json"]);
        let j: Value = serde_json::from_str(&bench(&a)).unwrap();
        assert_eq!(j["persistent"], true, "{op}");
        let rows = j["rows"].as_array().unwrap();
        let n_algos = algos.split(',').count();
        assert_eq!(rows.len(), 3 * n_algos * 2, "{op}: {rows:?}");
        for pair in rows.chunks(2) {
            let (plain, pers) = (&pair[0], &pair[1]);
            assert!(plain.get("persistent").is_none(), "{plain}");
            assert!(plain.get("persistent_over_plain").is_none(), "{plain}");
            assert_eq!(pers["persistent"], true, "{pers}");
            assert_eq!(pers["algo"], plain["algo"], "{op}");
            assert_eq!(pers["size"], plain["size"], "{op}");
            assert_eq!(pers["auto"], plain["auto"], "{op}");
            let ratio = pers["persistent_over_plain"].as_f64().unwrap();
            let want = pers["avg_us"].as_f64().unwrap() / plain["avg_us"].as_f64().unwrap();
            assert!((ratio - want).abs() <= 1e-9 * want, "{ratio} vs {want}");
        }
    }
    let mut a = base.to_vec();
    a.extend(["--op", "allreduce", "--algo", "ring"]);
    let text = bench(&a);
    let header = text.lines().find(|l| l.starts_with("size")).unwrap();
    let cols: Vec<&str> = header.split_whitespace().collect();
    assert_eq!(cols[..3], ["size", "algo", "call"], "{header}");
    assert_eq!(cols.last(), Some(&"pers/plain"), "{header}");
    let calls: Vec<&str> = text
        .lines()
        .filter(|l| l.contains(" B "))
        .filter_map(|l| l.split_whitespace().nth(3))
        .collect();
    assert_eq!(calls, ["plain", "persistent"].repeat(3), "{text}");
    a.extend(["--format", "csv"]);
    let csv = bench(&a);
    let mut lines = csv.lines();
    assert_eq!(
        lines.next(),
        Some(&*format!(
            "{CSV_HEADER},persistent,persistent_over_plain,schedule"
        ))
    );
    for (i, line) in lines.enumerate() {
        let cells: Vec<&str> = line.split(',').collect();
        assert_eq!(cells.len(), 17, "{line}");
        assert_eq!(
            cells[14],
            if i % 2 == 1 { "true" } else { "false" },
            "{line}"
        );
        assert_eq!(cells[15].is_empty(), i % 2 == 0, "{line}");
    }
    // Without the flag nothing changes: no extra column, field or row.
    let plain = bench(&[
        "--ranks",
        "2",
        "--op",
        "allreduce",
        "--max-size",
        "8",
        "--iters",
        "1",
    ]);
    assert!(!plain.contains("pers/plain"), "{plain}");
}

/// `time_calls` runs its forms in turns, call by call: after the warm-up rounds, each
/// round calls every form once in order, and a form's time is its own calls' only.
#[test]
fn time_calls_takes_the_forms_in_turns() {
    use hypercomm_cli::runtime;
    use hypercomm_rt::threads;
    let seen = threads::run(1, |comm| {
        let mut order = Vec::new();
        let timed = runtime::bench::time_calls(
            comm,
            hypercomm_rt::Barrier::Tree,
            2,
            3,
            3,
            |_, form| {
                order.push(form);
                // Form 2 is slow: its time must not leak into the others'.
                if form == 2 {
                    std::thread::sleep(std::time::Duration::from_millis(5));
                }
                Ok(())
            },
            |_, form| Some(["a", "b", "c"][form]),
        )?;
        Ok::<_, hypercomm_rt::Error>((order, timed))
    })
    .unwrap();
    let (order, timed) = &seen[0];
    assert_eq!(order, &[0, 1, 2].repeat(5));
    let names: Vec<_> = timed.iter().map(|t| t.1).collect();
    assert_eq!(names, [Some("a"), Some("b"), Some("c")]);
    assert!(timed[2].0 >= 5e-3, "{timed:?}");
    assert!(
        timed[0].0 < timed[2].0 && timed[1].0 < timed[2].0,
        "{timed:?}"
    );
}

/// `bench` times algorithms in one group (their calls in turns) with `--interleave`,
/// else one group each.
#[test]
fn interleaved_algorithms_are_timed_together() {
    use hypercomm_cli::runtime::bench::timed_together;
    assert_eq!(timed_together(3, true), vec![vec![0, 1, 2]]);
    assert_eq!(timed_together(3, false), vec![vec![0], vec![1], vec![2]]);
    assert!(timed_together(0, false).is_empty());
}

/// `bench --interleave` (the algorithms of a size in turns, call by call) reports the
/// same rows as the blocked default: one per size and algorithm, in the same order, the
/// persistent form beside its plain call; the JSON says it was interleaved.
#[test]
fn bench_interleave_gives_the_rows_of_the_blocked_run() {
    let base = [
        "--ranks",
        "3",
        "--min-size",
        "8",
        "--max-size",
        "64",
        "--iters",
        "3",
        "--warmup",
        "1",
        "--format",
        "json",
    ];
    for (op, algos, extra) in [
        ("allreduce", "ring,auto,recursive-doubling", &[][..]),
        ("broadcast", "binomial,auto", &["--persistent"][..]),
        ("alltoallv", "auto,pairwise", &[][..]),
    ] {
        let mut a = base.to_vec();
        a.extend(["--op", op, "--algo", algos]);
        a.extend(extra);
        let blocked: Value = serde_json::from_str(&bench(&a)).unwrap();
        assert!(blocked.get("interleave").is_none(), "{blocked}");
        a.push("--interleave");
        let turns: Value = serde_json::from_str(&bench(&a)).unwrap();
        assert_eq!(turns["interleave"], true, "{turns}");
        let key = |j: &Value| -> Vec<(Value, Value, Value)> {
            j["rows"]
                .as_array()
                .unwrap()
                .iter()
                .map(|r| {
                    (
                        r["size"].clone(),
                        r["algo"].clone(),
                        r["persistent"].clone(),
                    )
                })
                .collect()
        };
        let want = key(&blocked);
        assert_eq!(key(&turns), want, "{op}");
        let per_size = algos.split(',').count() * (1 + extra.len());
        assert_eq!(want.len(), 4 * per_size, "{op}: {want:?}");
        let rows = turns["rows"].as_array().unwrap();
        assert!(
            rows.iter().all(|r| r["avg_us"].as_f64().unwrap() > 0.0),
            "{turns}"
        );
        let autos = rows.iter().filter(|r| r["auto"] == true).count();
        assert_eq!(autos, 4 * (1 + extra.len()), "{op}: {turns}");
    }
}

/// `bench --persistent` refuses, exit 2 naming the problem, what has no persistent
/// form: a collective without `plan_*`, the in-place form, the native collective.
#[test]
fn bench_persistent_refuses_what_has_no_plan() {
    let base = ["bench", "--ranks", "3", "--max-size", "8", "--persistent"];
    let with = |extra: &[&'static str]| {
        let mut a = base.to_vec();
        a.extend(extra);
        a
    };
    // The valid ones listed, the variable-count ones among them.
    bad(
        &with(&["--op", "p2p", "--src", "0", "--dst", "2"]),
        &[
            "--persistent",
            "p2p has no persistent form",
            "allreduce",
            "alltoallv",
            "broadcast",
        ],
    );
    bad(
        &with(&["--op", "allreduce", "--in-place"]),
        &["--persistent", "--in-place"],
    );
    bad(
        &with(&["--op", "allreduce", "--algo", "native"]),
        &["--persistent", "native"],
    );
}

/// Issue 20: `auto` ranks by the prediction `bench` prints. Under a calibration with
/// per-size bands, on 4 ranks, at every size, the algorithm `auto` ran has the least
/// `predicted_us` among every algorithm `--algo all` prints (ties within rounding). The
/// tuning is off, so `auto` is the model's pick.
#[test]
fn auto_runs_the_algorithm_bench_predicts_fastest() {
    let calib = scratch("auto-is-bench-argmin").join("c.conf");
    std::fs::write(
        &calib,
        "beta = 2.75e-7\ntau = 8.79e-11\nband = 1 2.5e-7 5e-11\n\
         band = 16384 3e-6 1.5e-10\nband = 262144 -2e-5 9e-11\n",
    )
    .unwrap();
    let tuning_off = Path::new("off");
    let env = [
        ("HYPERCOMM_CALIBRATION", calib.as_path()),
        ("HYPERCOMM_TUNING", tuning_off),
    ];
    for op in ["broadcast", "allgather", "alltoall"] {
        let rows = |algo: &str| -> Vec<Value> {
            let a = [
                "bench",
                "--ranks",
                "4",
                "--op",
                op,
                "--algo",
                algo,
                "--min-size",
                "1024",
                "--max-size",
                "1048576",
                "--iters",
                "1",
                "--warmup",
                "0",
                "--format",
                "json",
            ];
            let r = hc_env(&a, &env);
            assert_eq!(r.code, 0, "{a:?}: {}", r.err);
            r.json()["rows"].as_array().unwrap().clone()
        };
        let (auto, all) = (rows("auto"), rows("all"));
        for a in &auto {
            let size = a["size"].as_u64().unwrap();
            let pred = a["predicted_us"].as_f64().unwrap();
            let best = all
                .iter()
                .filter(|r| r["size"].as_u64() == Some(size))
                .filter_map(|r| Some((r["predicted_us"].as_f64()?, r["algo"].clone())))
                .fold(
                    (f64::INFINITY, Value::Null),
                    |b, r| if r.0 < b.0 { r } else { b },
                );
            assert!(
                pred <= best.0 * (1.0 + 1e-9),
                "{op} {size} B: auto ran {} at {pred} µs predicted, {} predicts {} µs",
                a["algo"],
                best.1,
                best.0
            );
        }
    }
}
