//! Issue 21: every bad or edge input a new user tried, run as they ran it, gets exit 2
//! (or 1) with a message naming the problem, never a hang, a panic (101) or an abort
//! (134). One test per input; no timing assertions (the inputs that hung now fail at
//! validation, before any work).

use std::path::{Path, PathBuf};
use std::process::Command;

/// What one run of the binary produced.
struct Run {
    code: i32,
    out: String,
    err: String,
}

/// A fresh directory for one test's files.
fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("hardening")
        .join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn finish(args: &[&str], o: std::process::Output) -> Run {
    let run = Run {
        code: o.status.code().expect("exited, not killed by a signal"),
        out: String::from_utf8(o.stdout).unwrap(),
        err: String::from_utf8(o.stderr).unwrap(),
    };
    assert!(
        !run.err.contains("panicked"),
        "{args:?} panicked:\n{}",
        run.err
    );
    assert!(
        ![101, 134].contains(&run.code),
        "{args:?}: exit {}",
        run.code
    );
    run
}

/// Run the binary with `args`, no calibration from the user's environment.
fn hc(args: &[&str]) -> Run {
    let o = Command::new(env!("CARGO_BIN_EXE_hypercomm"))
        .args(args)
        .env("HYPERCOMM_CALIBRATION", "off")
        .env("XDG_CONFIG_HOME", scratch("xdg-empty"))
        .output()
        .expect("the binary starts");
    finish(args, o)
}

/// Run the binary under `ulimit -v` of `kib` KiB (RLIMIT_AS), as the issue's "within
/// 4 GB of address space".
fn hc_limited(kib: u64, args: &[&str]) -> Run {
    let o = Command::new("sh")
        .arg("-c")
        .arg(format!("ulimit -v {kib} && exec \"$0\" \"$@\""))
        .arg(env!("CARGO_BIN_EXE_hypercomm"))
        .args(args)
        .env("HYPERCOMM_CALIBRATION", "off")
        .env("XDG_CONFIG_HOME", scratch("xdg-empty"))
        .output()
        .expect("sh starts");
    finish(args, o)
}

/// Exit 2 with every needle in stderr.
fn refused(args: &[&str], needles: &[&str]) -> Run {
    let r = hc(args);
    check_refused(args, &r, needles);
    r
}

fn check_refused(args: &[&str], r: &Run, needles: &[&str]) {
    assert_eq!(
        r.code, 2,
        "{args:?}: exit {}:\n{}\n{}",
        r.code, r.out, r.err
    );
    for n in needles {
        assert!(r.err.contains(n), "{args:?}: no `{n}` in:\n{}", r.err);
    }
}

const BENCH: &[&str] = &["bench", "--ranks", "2", "--op", "allgather"];

fn with<'a>(base: &[&'a str], more: &[&'a str]) -> Vec<&'a str> {
    base.iter().chain(more).copied().collect()
}

/// `bench --max-size 18446744073709551615` looped for ever (the doubling saturated at
/// u64::MAX); now the size is refused, as `--max-size`, not `--len`.
#[test]
fn bench_max_size_u64_max_is_refused_as_max_size() {
    let r = refused(
        &with(BENCH, &["--max-size", "18446744073709551615"]),
        &["--max-size", "18446744073709551615", "valid: 0..="],
    );
    assert!(!r.err.contains("--len"), "{}", r.err);
}

/// `bench --iters 1e12` and `--warmup 1e12` ran for ever; capped at 10,000 as `run`'s.
#[test]
fn bench_iters_and_warmup_are_capped() {
    for flag in ["--iters", "--warmup"] {
        for n in ["1e12", "1000000000000", "10001"] {
            refused(&with(BENCH, &[flag, n]), &[flag, "10000"]);
        }
    }
    refused(
        &with(BENCH, &["--iters", "0"]),
        &["--iters", "valid: 1..=10000"],
    );
}

/// `calibrate --reps 2^60` panicked on a rank thread ("capacity overflow"), 10^9
/// aborted out of memory: a stated range, checked before any rank starts.
#[test]
fn calibrate_reps_has_a_range() {
    for n in ["1152921504606846976", "1000000000", "0", "100001"] {
        refused(
            &["calibrate", "--reps", n],
            &["--reps", "valid: 1..=100000"],
        );
    }
}

/// `calibrate --output` into a missing directory created it silently; now refused, as
/// `sweep --svg` refuses, naming the directory, before measuring.
#[test]
fn calibrate_output_into_a_missing_directory_is_refused() {
    let dir = scratch("calibrate-missing");
    let missing = dir.join("no-such-dir");
    let file = missing.join("c.conf");
    refused(
        &["calibrate", "--output", file.to_str().unwrap()],
        &["--output", missing.to_str().unwrap(), "does not exist"],
    );
    assert!(!missing.exists(), "the directory was created");
}

/// A missing `HYPERCOMM_CALIBRATION` file suggests `hypercomm calibrate`.
#[test]
fn a_missing_calibration_file_suggests_calibrate() {
    let dir = scratch("calibration-missing");
    let file = dir.join("nothing.conf");
    let args = ["run", "--ranks", "2", "--op", "allreduce", "--len", "10"];
    let o = Command::new(env!("CARGO_BIN_EXE_hypercomm"))
        .args(args)
        .env("HYPERCOMM_CALIBRATION", &file)
        .output()
        .unwrap();
    let r = finish(&args, o);
    check_refused(
        &args,
        &r,
        &[
            file.to_str().unwrap(),
            "hypercomm calibrate",
            "HYPERCOMM_CALIBRATION",
        ],
    );
}

/// `--len -5` said "unexpected argument '-5' found"; every whole-number flag now names
/// a negative value as such.
#[test]
fn negative_numbers_are_named_negative() {
    let cases: &[&[&str]] = &[
        &[
            "simulate",
            "--topology",
            "hypercube:3",
            "--op",
            "broadcast",
            "--algo",
            "sbt",
            "--len",
            "-5",
        ],
        &["run", "--ranks", "2", "--op", "allreduce", "--len", "-5"],
        &["run", "--ranks", "-2", "--op", "allreduce", "--len", "5"],
        &[
            "bench",
            "--ranks",
            "2",
            "--op",
            "allgather",
            "--max-size",
            "-1",
        ],
        &["calibrate", "--reps", "-3"],
    ];
    for args in cases {
        let r = hc(args);
        assert_eq!(r.code, 2, "{args:?}: {}", r.err);
        assert!(r.err.contains("is negative"), "{args:?}: {}", r.err);
        assert!(
            !r.err.contains("unexpected argument"),
            "{args:?}: {}",
            r.err
        );
    }
}

/// `--beta 1e308 --tau 1e308` printed time `inf` and a NaN ratio with exit 0.
#[test]
fn an_infinite_time_is_refused() {
    let model = ["--len", "10", "--beta", "1e308", "--tau", "1e308"];
    let problem = ["--topology", "hypercube:3", "--op", "broadcast"];
    let simulate = [&["simulate", "--algo", "sbt"][..], &problem, &model].concat();
    refused(&simulate, &["--beta/--tau", "inf"]);
    let compare = [&["compare"][..], &problem, &model].concat();
    refused(&compare, &["--beta/--tau"]);
    // Large but finite stays fine.
    let fine = [
        &["simulate", "--algo", "sbt"][..],
        &problem,
        &["--len", "10", "--beta", "1e300"],
    ]
    .concat();
    assert_eq!(hc(&fine).code, 0);
}

/// `--len 0` printed `time -0`.
#[test]
fn a_zero_length_prints_time_0() {
    for algo in ["sbt", "esbt"] {
        let base = [
            "simulate",
            "--topology",
            "hypercube:3",
            "--op",
            "broadcast",
            "--algo",
            algo,
            "--len",
            "0",
        ];
        let r = hc(&base);
        assert_eq!(r.code, 0, "{}", r.err);
        assert!(!r.out.contains("-0"), "{}", r.out);
        let r = hc(&with(&base, &["--format", "json"]));
        let v: serde_json::Value = serde_json::from_str(&r.out).unwrap();
        for key in ["time", "lower_bound"] {
            let x = v[key].as_f64().unwrap();
            assert!(x == 0.0 && x.is_sign_positive(), "{key} {x}");
        }
    }
}

/// A schedule file of under 1 KB with a strided region of 2^40 segments hung the
/// verifier; two interleaved regions of 2^27 segments aborted it. Refused when read.
#[test]
fn verify_refuses_schedules_with_huge_segment_counts() {
    let dir = scratch("huge-segments");
    let region = |off: u64, count: u64| {
        format!(r#"{{"buf": "in", "off": {off}, "len": {count}, "stride": 2, "count": {count}}}"#)
    };
    for (name, from, len) in [
        ("one", region(0, 1 << 40), 1u64 << 41),
        (
            "two",
            format!("{}, {}", region(0, 1 << 27), region(1, 1 << 27)),
            1 << 28,
        ),
    ] {
        let text = format!(
            r#"{{"format": "hypercomm-schedule/1", "topology": "hypercube:1",
 "collective": {{"kind": "allgather"}}, "len": {len}, "steps": 1,
 "programs": [{{"rank": 0, "steps": [[{{"send": {{"to": [1], "from": [{from}]}}}}]]}},
              {{"rank": 1, "steps": [[{{"recv": {{"from": 0, "into": [{{"buf": "out", "off": 0, "len": {}}}]}}}}]]}}]}}"#,
            if name == "one" { 1u64 << 40 } else { 1 << 28 }
        );
        assert!(text.len() < 1024, "{}", text.len());
        let path = dir.join(format!("{name}.json"));
        std::fs::write(&path, text).unwrap();
        refused(
            &["verify", "--schedule", path.to_str().unwrap()],
            &["programs[0].steps[0][0].send.from[0]", "2^20"],
        );
    }
}

/// TEA1 verified on hypercube:13 ran out of memory (exit 134); within 4 GB of address
/// space, `simulate` refuses it (exit 2), naming the limit it met.
#[test]
fn tea_verification_beyond_the_memory_is_refused() {
    for algo in ["tea1", "tea2"] {
        let args = [
            "simulate",
            "--topology",
            "hypercube:13",
            "--op",
            "allgather",
            "--algo",
            algo,
            "--len",
            "1",
        ];
        let r = hc_limited(4 << 20, &args);
        check_refused(&args, &r, &["verifying", algo, "RLIMIT_AS", "--no-verify"]);
    }
}

/// Unverified, TEA on hypercube:18 would still take hours to simulate (its work grows
/// with nodes², as its verifier's memory): refused beyond hypercube:14.
#[test]
fn tea_simulation_beyond_hypercube_14_is_refused() {
    let args = [
        "simulate",
        "--topology",
        "hypercube:18",
        "--op",
        "allgather",
        "--algo",
        "tea2",
        "--len",
        "1",
        "--no-verify",
    ];
    refused(&args, &["tea2", "2^28", "hypercube:14"]);
    let sweep = [
        "sweep",
        "--topology",
        "hypercube",
        "--op",
        "allgather",
        "--len",
        "1",
        "--dims",
        "15..16",
        "--algo",
        "tea2",
    ];
    refused(&sweep, &["tea2", "2^28"]);
}

/// `sweep --dims … --algo tea2` aborted once verifying ran out of memory; now the
/// points too large to verify are timed unverified, with a note (here under 512 MiB of
/// address space: TEA1 on hypercube:9 is estimated at 50 MB, on hypercube:11 at
/// 800 MB).
#[test]
fn sweep_skips_verifications_beyond_the_memory_with_a_note() {
    let args = [
        "sweep",
        "--topology",
        "hypercube",
        "--op",
        "allgather",
        "--len",
        "1",
        "--dims",
        "9,11",
        "--algo",
        "tea1",
    ];
    let r = hc_limited(1 << 19, &args);
    assert_eq!(r.code, 0, "{}", r.err);
    let lines: Vec<&str> = r.out.lines().collect();
    assert_eq!(lines.len(), 3, "{}", r.out);
    assert!(lines[1].ends_with(",true"), "{}", lines[1]);
    assert!(lines[2].ends_with(",skipped"), "{}", lines[2]);
    assert!(
        r.err.contains("note: `tea1` at dimension 11: not verified"),
        "{}",
        r.err
    );
    assert!(r.err.contains("RLIMIT_AS"), "{}", r.err);
}

/// `compare` skips the same way, with a note per algorithm skipped (recursive halving
/// on hypercube:12 is estimated at 2 GiB, over 1 GiB of address space).
#[test]
fn compare_skips_verifications_beyond_the_memory_with_a_note() {
    let args = [
        "compare",
        "--topology",
        "hypercube:12",
        "--op",
        "reduce-scatter",
        "--len",
        "1",
        "--format",
        "json",
    ];
    let r = hc_limited(1 << 20, &args);
    assert_eq!(r.code, 0, "{}", r.err);
    let rows: serde_json::Value = serde_json::from_str(&r.out).unwrap();
    let row = rows
        .as_array()
        .unwrap()
        .iter()
        .find(|row| row["algo"] == "recursive-halving")
        .expect("a recursive-halving row");
    assert!(row["verified"].is_null(), "{row}");
    assert!(row["time"].as_f64().is_some(), "{row}");
    assert!(
        r.err
            .contains("note: `recursive-halving` not verified: verifying"),
        "{}",
        r.err
    );
}

/// Run the binary under 4 GiB of address space, killed after `guard` (a hang guard, not
/// a timing assertion: the runs below once took hours).
fn hc_guarded(args: &[&str]) -> Run {
    let child = Command::new("sh")
        .arg("-c")
        .arg("ulimit -v 4194304 && exec \"$0\" \"$@\"")
        .arg(env!("CARGO_BIN_EXE_hypercomm"))
        .args(args)
        .env("HYPERCOMM_CALIBRATION", "off")
        .env("XDG_CONFIG_HOME", scratch("xdg-empty"))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("sh starts");
    let id = child.id();
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = done.clone();
    std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_secs(900));
        if !flag.load(std::sync::atomic::Ordering::SeqCst) {
            let _ = Command::new("kill").arg(id.to_string()).status();
        }
    });
    let o = child.wait_with_output().unwrap();
    done.store(true, std::sync::atomic::Ordering::SeqCst);
    finish(args, o)
}

/// `compare --topology hypercube:18 --op allgather` (and reduce-scatter) ran for
/// hours: the rotated-exchange all-gather's 2^n regions per node and step. Now every
/// run's work is estimated first and a run past the command's limit (2^22 units) is
/// refused in its row, naming the limit; the others are timed.
#[test]
fn compare_on_hypercube_18_refuses_the_runs_past_the_work_limit() {
    for op in ["allgather", "reduce-scatter"] {
        let args = [
            "compare",
            "--topology",
            "hypercube:18",
            "--op",
            op,
            "--len",
            "100",
            "--format",
            "json",
        ];
        let r = hc_guarded(&args);
        assert!([0, 2].contains(&r.code), "{op}: exit {}: {}", r.code, r.err);
        let text = format!("{}{}", r.out, r.err);
        assert!(
            text.contains("rotated-exchange") && text.contains("limit of 4194304 units (2^22"),
            "{op}: {text}"
        );
        if op == "allgather" {
            let rows: serde_json::Value = serde_json::from_str(&r.out).unwrap();
            let timed = rows
                .as_array()
                .unwrap()
                .iter()
                .filter(|r| r["time"].is_f64());
            assert!(timed.count() >= 1, "{rows}");
        }
    }
}

/// `sweep --dims 1..18` went on for hours (SBA, the daisy chain and SMG do nodes²
/// work); now the command's work limit stops verifying, then simulating, the points
/// past it, each with a message naming the limit, and the sweep finishes.
#[test]
fn sweep_to_hypercube_18_stops_at_the_work_limit() {
    let args = [
        "sweep",
        "--topology",
        "hypercube",
        "--op",
        "allgather",
        "--len",
        "100",
        "--dims",
        "1..18",
        "--algo",
        "sba,daisy-chain,adea",
    ];
    let r = hc_guarded(&args);
    assert_eq!(r.code, 0, "{}", r.err);
    assert_eq!(r.out.lines().count(), 1 + 3 * 18, "{}", r.out);
    assert!(r
        .out
        .lines()
        .any(|l| l.contains(",sba,") && l.ends_with(",true")));
    assert!(r.err.contains("`sba` at dimension 18"), "{}", r.err);
    assert!(r.err.contains("limit of 4194304 units (2^22"), "{}", r.err);
}

/// The nesbt scatter verified on hypercube:14 took 6.4 GB and aborted under 4 GB
/// (exit 134): each of the 16,384 programs held its 16,383 steps, nearly all idle,
/// while the verifier walked them. The verifier now holds the busy steps only.
#[test]
fn nesbt_scatter_on_hypercube_14_verifies_within_4_gb() {
    for op in ["scatter", "gather"] {
        let args = [
            "simulate",
            "--topology",
            "hypercube:14",
            "--op",
            op,
            "--algo",
            "nesbt",
            "--len",
            "1",
        ];
        let r = hc_limited(4 << 20, &args);
        assert_eq!(r.code, 0, "{op}: {}", r.err);
        assert!(
            r.out.lines().any(|l| l == "verified       yes"),
            "{op}: {}",
            r.out
        );
    }
}

/// The all-port product all-to-all verified on hypercube:14 with one element aborted
/// under 4 GB (its verifier's state grows with nodes²): now refused, naming the limit.
#[test]
fn product_allport_verification_beyond_the_memory_is_refused() {
    let args = [
        "simulate",
        "--topology",
        "hypercube:14",
        "--op",
        "alltoall",
        "--algo",
        "product-allport",
        "--len",
        "1",
    ];
    let r = hc_limited(4 << 20, &args);
    check_refused(&args, &r, &["verifying", "product-allport", "RLIMIT_AS"]);
}

/// Unverified and rounds-timed, the dimension-exchange all-reduce on hypercube:20
/// (188 M units of work, about 2 s) was refused by a limit priced at async timing's
/// cost per unit; it is timed now, while async timing (about 35 s) is still refused.
#[test]
fn simulation_work_limit_follows_the_timing() {
    let base = [
        "simulate",
        "--topology",
        "hypercube:20",
        "--op",
        "allreduce",
        "--algo",
        "dimension-exchange",
        "--len",
        "1",
        "--no-verify",
        "--timing",
    ];
    let r = hc_guarded(&with(&base, &["rounds"]));
    assert_eq!(r.code, 0, "{}", r.err);
    assert!(r.out.contains("time / bound"), "{}", r.out);
    refused(
        &with(&base, &["async"]),
        &["simulating dimension-exchange", "limit of 4194304 units"],
    );
}

/// Seed 004's planned schedules hold every item of every move: the row-column
/// all-to-all on torus:64x64 (537 M items) and the grid daisy chain and
/// sequential-broadcast all-gathers aborted past 4 GB, even unverified. Now the plan
/// stops at its memory limit and the run is refused, naming it.
#[test]
fn planned_schedules_past_their_memory_are_refused() {
    for (op, algo) in [
        ("alltoall", "row-column"),
        ("allgather", "grid-daisy-chain"),
        ("allgather", "sequential-broadcast"),
    ] {
        let args = [
            "simulate",
            "--topology",
            "torus:64x64",
            "--op",
            op,
            "--algo",
            algo,
            "--len",
            "1",
            "--no-verify",
            "--timing",
            "rounds",
        ];
        let r = hc_limited(4 << 20, &args);
        check_refused(
            &args,
            &r,
            &["4096 nodes", "1024 MiB", "planned item by item"],
        );
    }
    // The bus all-to-all on bus:2048 places 8.6 G items (2,048 moves of 2,048 items to
    // 2,047 receivers) and took 15 s to build before its memory passed the limit.
    let args = [
        "simulate",
        "--topology",
        "bus:2048",
        "--op",
        "alltoall",
        "--algo",
        "bus",
        "--len",
        "1",
        "--no-verify",
        "--timing",
        "rounds",
    ];
    let r = hc_guarded(&args);
    check_refused(&args, &r, &["2048 nodes", "planned item by item"]);
}

/// `tables` had no upper limit: `--nodes 65536` and `--data 18446744073709551615`
/// aborted in the allocator, `--nodes 1024` and `--data 4294967296000` (or `--beta 0`,
/// whose pipelines take a packet per element) ran for minutes, `--nodes 1e30` gave the
/// parser's text, and `--beta 1e308` exited 1 with nothing said. Now each is refused
/// before any cell runs, naming the option and its valid values.
#[test]
fn tables_refuse_sizes_past_their_limits() {
    let valid_nodes = "valid: 4, 16 or 64";
    for (args, needles) in [
        (vec!["--nodes", "65536"], vec!["--nodes", valid_nodes]),
        (vec!["--nodes", "256"], vec!["--nodes", valid_nodes]),
        (vec!["--nodes", "16777216"], vec!["--nodes", valid_nodes]),
        (
            vec!["--nodes", "18446744073709551615"],
            vec!["--nodes", valid_nodes],
        ),
        (vec!["--nodes", "1e30"], vec!["--nodes", "4, 16 or 64"]),
        (vec!["--nodes", "nan"], vec!["--nodes", "4, 16 or 64"]),
        (
            vec!["--data", "18446744073709551615"],
            vec!["--data", "valid: 1..=67108864"],
        ),
        (
            vec!["--data", "4294967296000"],
            vec!["--data", "valid: 1..=67108864"],
        ),
        (
            vec!["--data", "1048576", "--beta", "0"],
            vec!["--data", "1048576 packets", "valid: 1..=4096"],
        ),
        (
            vec!["--beta", "1e308"],
            vec!["--beta", "infinite", "valid:"],
        ),
    ] {
        refused(&with(&["tables"], &args), &needles);
    }
}

/// A large `--packets` (or `opt` with β = 0, a packet per element) built a pipeline's
/// whole program to estimate its work, before the work check: `--packets 30000000` on
/// hypercube:3 aborted in the allocator. Now the packet count is checked first, every
/// packet being at least a unit of work, and the refusal names the valid --packets.
#[test]
fn pipelines_past_the_work_limit_are_refused_before_building() {
    let big = ["--len", "30000000", "--packets", "30000000"];
    let sbt = ["--topology", "hypercube:3", "--op", "broadcast"];
    for (base, algo) in [
        (&sbt[..], "sbt"),
        (&sbt[..], "esbt"),
        (
            &[
                "--topology",
                "hypercube:1",
                "--op",
                "p2p",
                "--src",
                "0",
                "--dst",
                "1",
            ][..],
            "ecube",
        ),
        (
            &[
                "--topology",
                "ring:4",
                "--op",
                "p2p",
                "--src",
                "0",
                "--dst",
                "2",
            ][..],
            "direct",
        ),
    ] {
        let args = with(&with(&with(&["simulate"], base), &["--algo", algo]), &big);
        let r = hc_limited(4 << 20, &args);
        check_refused(&args, &r, &["schedule too large", "valid: --packets 1..="]);
    }
    let opt = with(
        &with(&["simulate"], &sbt),
        &["--algo", "nesbt", "--len", "100000000", "--beta", "0"],
    );
    let r = hc_limited(4 << 20, &opt);
    check_refused(&opt, &r, &["schedule too large", "valid: --packets 1..="]);
    let draw = with(
        &with(
            &with(&["draw", "--svg", "/dev/null"], &sbt),
            &["--algo", "sbt"],
        ),
        &big,
    );
    let r = hc_limited(4 << 20, &draw);
    check_refused(&draw, &r, &["schedule too large", "valid: --packets 1..="]);
}

/// `run --algo product --shape 4x4 --packets 3` ran unpipelined and reported
/// "packets 3"; a count above 1 for an algorithm that is not pipelined is refused with
/// a shape as without one.
#[test]
fn a_packet_count_is_refused_for_an_unpipelined_shaped_algorithm() {
    let base = [
        "run",
        "--ranks",
        "16",
        "--op",
        "allgather",
        "--algo",
        "product",
        "--len",
        "100",
    ];
    for shaped in [&["--shape", "4x4"][..], &[]] {
        let args = with(&with(&base, shaped), &["--packets", "3"]);
        refused(&args, &["--packets", "`product` is not pipelined"]);
    }
    let ok = hc(&with(&base, &["--shape", "4x4", "--packets", "1"]));
    assert_eq!(ok.code, 0, "{}", ok.err);
}

/// `draw --svg F --html F` (and `sweep`'s) wrote the page over the drawing and exited
/// 0; now refused before anything runs, also when the two paths spell one file
/// differently, and nothing is written.
#[test]
fn svg_and_html_into_one_file_are_refused() {
    let dir = scratch("one-file");
    let f = dir.join("out");
    let same = dir.join(".").join("out");
    let (f, same) = (f.to_str().unwrap(), same.to_str().unwrap());
    let draw = [
        "draw",
        "--topology",
        "hypercube:2",
        "--op",
        "broadcast",
        "--algo",
        "sbt",
        "--len",
        "3",
    ];
    let sweep = [
        "sweep",
        "--topology",
        "hypercube:2",
        "--op",
        "broadcast",
        "--algo",
        "sbt",
        "--len",
        "1..4",
    ];
    for base in [&draw[..], &sweep[..]] {
        refused(
            &with(base, &["--svg", f, "--html", same]),
            &["--html", "also --svg's file"],
        );
        assert!(!Path::new(f).exists(), "{base:?} wrote {f}");
        let other = dir.join("page.html");
        let r = hc(&with(
            base,
            &["--svg", f, "--html", other.to_str().unwrap()],
        ));
        assert_eq!(r.code, 0, "{base:?}: {}", r.err);
        assert!(std::fs::read_to_string(f).unwrap().contains("<svg"));
        assert!(std::fs::read_to_string(&other).unwrap().contains("<html"));
        std::fs::remove_file(f).unwrap();
    }
}

/// `formulas --packets N` past the elements printed "no closed form for this model"
/// on every pipelined row and exited 0; refused as `simulate` refuses it.
#[test]
fn formulas_refuse_more_packets_than_elements() {
    let base = ["formulas", "--topology", "hypercube:3", "--op", "broadcast"];
    for (len, n, valid) in [
        ("100", "18446744073709551615", "valid: 1..=100"),
        ("100", "101", "valid: 1..=100"),
        ("0", "2", "valid: 1..=1"),
    ] {
        refused(
            &with(&base, &["--len", len, "--packets", n]),
            &["--packets", valid],
        );
    }
    let r = hc(&with(&base, &["--len", "100", "--packets", "100"]));
    assert_eq!(r.code, 0, "{}", r.err);
    assert!(r.out.contains("ν = 100"), "{}", r.out);
    // No scatter algorithm is pipelined: the count was printed beside rows ignoring it.
    refused(
        &[
            "formulas",
            "--topology",
            "hypercube:3",
            "--op",
            "scatter",
            "--len",
            "10",
            "--packets",
            "5",
        ],
        &[
            "--packets",
            "no algorithm of scatter that fits hypercube:3 is pipelined",
        ],
    );
}

/// The --len bound names the product it bounds: a broadcast's limit of 32 on
/// complete:16777216 was put as "volumes must stay below 2^53", its volume being K·len.
#[test]
fn the_len_limit_names_what_it_bounds() {
    let base = [
        "simulate",
        "--op",
        "broadcast",
        "--algo",
        "binomial",
        "--len",
    ];
    refused(
        &with(&base, &["33", "--topology", "complete:16777216"]),
        &["--len", "valid: 0..=32", "K × (links per node + 1)", "2^53"],
    );
    let all = ["simulate", "--op", "allgather", "--algo", "ring", "--len"];
    refused(
        &with(&all, &["1000000000", "--topology", "ring:1048576"]),
        &["--len", "K² × (links per node + 1)"],
    );
}

/// `compare --counts F --html F` and `draw --counts F --svg F` (or `--html F`) wrote
/// the report over the counts they had read and exited 0, the input lost; now refused
/// before anything is written, also when the paths spell one file differently.
#[test]
fn an_output_file_that_is_the_counts_file_is_refused() {
    let dir = scratch("counts-output");
    let counts = dir.join("counts.json");
    let same = dir.join(".").join("counts.json");
    let (f, same) = (counts.to_str().unwrap(), same.to_str().unwrap());
    std::fs::write(&counts, "[1, 2, 3, 4]").unwrap();
    let compare = [
        "compare",
        "--topology",
        "complete:4",
        "--op",
        "allgatherv",
        "--counts",
        f,
    ];
    let draw = [
        "draw",
        "--topology",
        "complete:4",
        "--op",
        "allgatherv",
        "--algo",
        "ring",
        "--counts",
        f,
    ];
    refused(
        &with(&compare, &["--html", same]),
        &["--html", "also the --counts file"],
    );
    for flag in ["--svg", "--html"] {
        refused(
            &with(&draw, &[flag, same]),
            &[flag, "also the --counts file"],
        );
    }
    assert_eq!(std::fs::read_to_string(&counts).unwrap(), "[1, 2, 3, 4]");
    let page = dir.join("page.html");
    let r = hc(&with(&compare, &["--html", page.to_str().unwrap()]));
    assert_eq!(r.code, 0, "{}", r.err);
    assert!(std::fs::read_to_string(&page).unwrap().contains("<html"));
}

/// `--strict --no-verify` printed `strict yes` and `verified skipped` and exited 0:
/// `--strict` only makes rules of the verifier, which did not run; the two are
/// refused together in every command that takes both.
#[test]
fn strict_with_no_verify_is_refused() {
    let problem = [
        "--topology",
        "hypercube:3",
        "--op",
        "broadcast",
        "--strict",
        "--no-verify",
    ];
    let dir = scratch("strict-no-verify");
    let svg = dir.join("d.svg");
    for (cmd, more) in [
        ("simulate", &["--algo", "sbt", "--len", "10"][..]),
        ("compare", &["--len", "10"][..]),
        ("sweep", &["--len", "1..3"][..]),
        (
            "draw",
            &[
                "--algo",
                "sbt",
                "--len",
                "10",
                "--svg",
                svg.to_str().unwrap(),
            ][..],
        ),
    ] {
        let args = with(&with(&[cmd], &problem), more);
        refused(&args, &["--strict", "--no-verify"]);
    }
    assert!(!svg.exists());
}

/// `sweep --nodes` and `--dims` keep the family of `--topology` only: a product
/// (`ring:3*complete:4 --nodes` swept rings) and `+host@A,B` (dropped by `--nodes`,
/// widened to `+host` by `--dims`) changed the machine without a word and exited 0;
/// `ring --dims` was refused as `ring:0` having no node. Each is now named.
#[test]
fn sweep_families_it_cannot_keep_are_refused() {
    let sweep = ["sweep", "--len", "10", "--topology"];
    refused(
        &with(
            &sweep,
            &["ring:3*complete:4", "--op", "allgather", "--nodes", "2..4"],
        ),
        &["--nodes", "product", "valid:"],
    );
    let p2p = ["--op", "p2p", "--src", "0", "--dst", "1"];
    refused(
        &with(
            &with(&sweep, &["ring:3+host@0"]),
            &with(&p2p, &["--nodes", "2..4"]),
        ),
        &["--nodes", "+host@", "valid:"],
    );
    refused(
        &with(
            &with(&sweep, &["hypercube:2+host@0"]),
            &with(&p2p, &["--dims", "1..2"]),
        ),
        &["--dims", "+host@", "valid:"],
    );
    let r = refused(
        &with(&sweep, &["ring", "--op", "allgather", "--dims", "2..4"]),
        &["--dims", "hypercube family", "--nodes"],
    );
    assert!(!r.err.contains("ring:0"), "{}", r.err);
    let ok = hc(&with(
        &sweep,
        &[
            "hypercube:2+host",
            "--op",
            "download",
            "--algo",
            "sl",
            "--dims",
            "1..2",
        ],
    ));
    assert_eq!(ok.code, 0, "{}", ok.err);
}

/// `formulas --op broadcast --src 1` and `--op p2p --root 1` ignored the flag and
/// exited 0 (`simulate` refuses both); without `--op`, `--root 8` on hypercube:3 printed
/// "does not fit: root 8 is out of range" on every rooted row and exited 0. Each is
/// refused, naming the flag and what is valid.
#[test]
fn formulas_refuse_rank_flags_no_row_uses() {
    let f = ["formulas", "--topology", "hypercube:3"];
    refused(
        &with(&f, &["--op", "broadcast", "--src", "1"]),
        &["--src/--dst", "p2p only"],
    );
    refused(
        &with(&f, &["--op", "p2p", "--root", "1"]),
        &["--root", "p2p has no root", "--src and --dst"],
    );
    refused(&with(&f, &["--root", "8"]), &["root 8", "valid: 0..=7"]);
    refused(
        &with(&f, &["--dst", "9"]),
        &["destination 9", "valid: 0..=7"],
    );
    for ok in [
        &["--root", "7"][..],
        &["--src", "1", "--dst", "6"][..],
        &["--op", "broadcast", "--root", "3"][..],
        &["--op", "p2p", "--src", "2"][..],
    ] {
        let r = hc(&with(&f, ok));
        assert_eq!(r.code, 0, "{ok:?}: {}", r.err);
    }
}

/// The host options on a machine without a host were accepted, and the model line
/// printed a host link hypercube:3 does not have; now refused, naming the option. On
/// a `+host` machine (and a `sweep` of one) they still apply.
#[test]
fn host_options_need_a_host() {
    let plain = [
        "simulate",
        "--topology",
        "hypercube:3",
        "--op",
        "broadcast",
        "--algo",
        "sbt",
        "--len",
        "10",
    ];
    for (flag, v) in [
        ("--host-beta", "2"),
        ("--host-tau", "5"),
        ("--host-ports", "all"),
    ] {
        refused(&with(&plain, &[flag, v]), &[flag, "has no host", "+host"]);
    }
    let sweep = [
        "sweep",
        "--topology",
        "ring",
        "--op",
        "broadcast",
        "--len",
        "10",
    ];
    refused(
        &with(&sweep, &["--nodes", "2..4", "--host-tau", "5"]),
        &["--host-tau", "has no host"],
    );
    let hosted = [
        "simulate",
        "--topology",
        "hypercube:2+host",
        "--op",
        "download",
        "--algo",
        "sl",
        "--len",
        "10",
        "--host-tau",
        "5",
        "--host-ports",
        "all",
    ];
    let r = hc(&hosted);
    assert_eq!(r.code, 0, "{}", r.err);
    assert!(r.out.contains("host β = 1, τ = 5"), "{}", r.out);
    let r = hc(&[
        "sweep",
        "--topology",
        "hypercube:2+host",
        "--op",
        "download",
        "--algo",
        "sl",
        "--len",
        "10",
        "--dims",
        "1..2",
        "--host-tau",
        "5",
    ]);
    assert_eq!(r.code, 0, "{}", r.err);
}

/// `sweep` reads a topology spelt as the parser takes it (any case, blanks): the host
/// options apply to `hypercube:3 + HOST` (refused as "no host" when the check matched
/// `+host` literally), and `ring:4+HOST@0`, a host on some nodes only, is no family of
/// sizes (swept as plain rings, the host dropped).
#[test]
fn sweep_reads_host_topologies_in_any_spelling() {
    let r = hc(&[
        "sweep",
        "--topology",
        "hypercube:3 + HOST",
        "--op",
        "download",
        "--algo",
        "sl",
        "--len",
        "8,16",
        "--host-beta",
        "5",
    ]);
    assert_eq!(r.code, 0, "{}", r.err);
    refused(
        &[
            "sweep",
            "--topology",
            "ring:4+HOST@0",
            "--op",
            "broadcast",
            "--nodes",
            "4,8",
            "--len",
            "8",
        ],
        &["--nodes", "+host@"],
    );
    refused(
        &[
            "sweep",
            "--topology",
            "hypercube:3+Host@0",
            "--op",
            "broadcast",
            "--dims",
            "1..2",
            "--len",
            "8",
        ],
        &["--dims", "+host@"],
    );
}

/// `formulas` without `--op` and a length no collective can take printed that error on
/// every row and exited 0; a length some can take still gives the table, the others'
/// rows saying why (a transposition needs a square number of ranks).
#[test]
fn formulas_fail_when_no_collective_can_be_posed() {
    refused(
        &["formulas", "--len", "18446744073709551615"],
        &["--len", "is too large", "valid: 0..="],
    );
    let r = hc(&["formulas", "--topology", "hypercube:3", "--len", "10"]);
    assert_eq!(r.code, 0, "{}", r.err);
    assert!(r.out.contains("transpose"), "{}", r.out);
}

/// `--timeout 1e308` was echoed as 309 digits.
#[test]
fn a_huge_timeout_is_echoed_short() {
    let r = refused(
        &[
            "run",
            "--ranks",
            "2",
            "--op",
            "allreduce",
            "--len",
            "4",
            "--timeout",
            "1e308",
        ],
        &["--timeout", "1e308", "below 1e9"],
    );
    assert!(r.err.len() < 200, "{}", r.err);
}

/// `sweep --nodes` keeps the family of `--topology` only, and read no further: `bus:x`
/// was swept as buses and `hypercube:3+hostx` as hosted cubes, exit 0, though
/// `--topology bus:x` is refused everywhere else. A spec with parameters must now be a
/// topology (the parser's message names it and the valid form); the family alone, or a
/// valid topology of it, is still swept.
#[test]
fn sweep_nodes_refuses_a_topology_that_does_not_parse() {
    let sweep = [
        "sweep",
        "--op",
        "broadcast",
        "--len",
        "10",
        "--nodes",
        "2..4",
    ];
    refused(
        &with(&sweep, &["--topology", "bus:x"]),
        &["bus:x", "`x` is not a processor count", "valid:"],
    );
    refused(
        &with(&sweep, &["--topology", "hypercube:3+hostx"]),
        &["hypercube:3+hostx", "valid topologies", "+host"],
    );
    for ok in ["bus", "bus:9", "path:9", "shm:16,3"] {
        let r = hc(&with(&sweep, &["--topology", ok]));
        assert_eq!(r.code, 0, "{ok}: {}", r.err);
    }
    let download = ["sweep", "--op", "download", "--algo", "sl", "--len", "10"];
    for ok in ["hypercube+host", "hypercube:5+host"] {
        let r = hc(&with(&download, &["--nodes", "2..4", "--topology", ok]));
        assert_eq!(r.code, 0, "{ok}: {}", r.err);
    }
}

/// `sweep --len 1e3..1e4x10` (and `--len 1e3`) was refused as "not a whole number",
/// though a single `--len 1e3` is accepted by the other commands: a range's numbers
/// are now spelt as `--len` takes them, `xF` still the geometric factor.
#[test]
fn sweep_ranges_take_numbers_as_len_does() {
    let sweep = [
        "sweep",
        "--topology",
        "hypercube:3",
        "--op",
        "broadcast",
        "--algo",
        "sbt",
        "--len",
    ];
    let lens = |spec: &str| -> Vec<String> {
        let r = hc(&with(&sweep, &[spec]));
        assert_eq!(r.code, 0, "{spec}: {}", r.err);
        let rows = r.out.lines().skip(1);
        rows.map(|l| l.split(',').next().unwrap().to_string())
            .collect()
    };
    assert_eq!(lens("1e3..1e4x10"), ["1000", "10000"]);
    assert_eq!(lens("1e3"), ["1000"]);
    assert_eq!(lens("1e3..3e3:1e3"), ["1000", "2000", "3000"]);
    refused(
        &with(&sweep, &["1.5e0..9"]),
        &["--len", "`1.5e0`", "not a whole number", "A..BxF"],
    );
    refused(&with(&sweep, &["1..-5"]), &["--len", "-5 is negative"]);
}

/// `--ports 4294967296,1`, a count past u32, was answered "each ≥ 1", as if no number
/// had been given; now it is named out of range, with the range (and so for
/// `--host-ports`, which reads the same form).
#[test]
fn ports_past_u32_are_named_out_of_range() {
    let sim = [
        "simulate",
        "--topology",
        "hypercube:2+host",
        "--op",
        "download",
        "--algo",
        "sl",
        "--len",
        "10",
    ];
    for ports in ["4294967296,1", "1,99999999999999999999999"] {
        refused(
            &with(&sim, &["--ports", ports]),
            &["--ports", ports, "out of range", "1..=4294967295"],
        );
        refused(
            &with(&sim, &["--host-ports", ports]),
            &["--host-ports", "out of range", "1..=4294967295"],
        );
    }
    refused(&with(&sim, &["--ports", "0,1"]), &["--ports", "each ≥ 1"]);
    let r = hc(&with(&sim, &["--ports", "4294967295,1"]));
    assert_eq!(r.code, 0, "{}", r.err);
}

/// `calibrate --ranks 3` was accepted, though ranks measure in pairs (0, 1), (2, 3), …
/// and the last of an odd count sat idle (the file saying it had measured on 3 ranks):
/// an odd count is refused, naming the even counts, before any rank starts; the help
/// says so.
#[test]
fn calibrate_refuses_an_odd_rank_count() {
    let dir = scratch("calibrate-odd");
    let file = dir.join("cal.conf");
    for k in ["3", "1023"] {
        refused(
            &[
                "calibrate",
                "--ranks",
                k,
                "--max-size",
                "4",
                "--reps",
                "5",
                "--output",
                file.to_str().unwrap(),
            ],
            &[
                "--ranks",
                k,
                "without a partner",
                "valid: 2..=1024, an even count",
            ],
        );
        assert!(!file.exists(), "--ranks {k} saved a calibration");
    }
    refused(
        &["calibrate", "--ranks", "1025"],
        &["--ranks", "valid: 2..=1024, an even count"],
    );
    let help = hc(&["calibrate", "--help"]);
    assert!(help.out.contains("an even count"), "{}", help.out);
}
