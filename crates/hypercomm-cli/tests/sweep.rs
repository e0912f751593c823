//! End-to-end tests of `hypercomm sweep` (rows, agreement with `simulate`, ranges, the
//! SVG chart, bad input) and of the host-link flags `--host-beta` / `--host-tau`.

use std::process::Command;

use hypercomm::algorithms;
use hypercomm::collective::{Collective, OpKind};
use hypercomm::schedule::json::Document;
use hypercomm::schedule::{Buf, Materialized, Op, Program, Region};
use hypercomm::topology::Topology;
use serde_json::Value;

/// What one run of the binary produced.
struct Run {
    code: i32,
    out: String,
    err: String,
}

/// Run the binary with `args`.
fn hc(args: &[&str]) -> Run {
    let o = Command::new(env!("CARGO_BIN_EXE_hypercomm"))
        .args(args)
        // The runtime's defaults: no calibration read or measured.
        .env("HYPERCOMM_CALIBRATION", "off")
        .output()
        .expect("the binary starts");
    let run = Run {
        code: o.status.code().expect("exited, not killed"),
        out: String::from_utf8(o.stdout).unwrap(),
        err: String::from_utf8(o.stderr).unwrap(),
    };
    assert!(!run.err.contains("panicked"), "{args:?}:\n{}", run.err);
    run
}

/// Run the binary, expect exit 0, return stdout.
fn ok(args: &[&str]) -> String {
    let r = hc(args);
    assert_eq!(
        r.code, 0,
        "{args:?}\nstdout:\n{}\nstderr:\n{}",
        r.out, r.err
    );
    r.out
}

/// Expect exit 2 and a stderr naming the problem.
fn bad(args: &[&str], needles: &[&str]) {
    let r = hc(args);
    assert_eq!(
        r.code, 2,
        "{args:?}\nstdout:\n{}\nstderr:\n{}",
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

/// `sweep` with `extra` arguments.
fn sweep(extra: &[&str]) -> Vec<String> {
    let mut v = vec!["sweep".to_string()];
    v.extend(extra.iter().map(|s| s.to_string()));
    v
}

fn strs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

const HEADER: &str = "len,nodes,algo,time,rounds,messages,volume,formula,lower_bound,verified";

/// The CSV rows as maps from column to cell, after checking the header.
fn csv(text: &str) -> Vec<Vec<(String, String)>> {
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some(HEADER), "{text}");
    let cols: Vec<&str> = HEADER.split(',').collect();
    lines
        .map(|l| {
            let cells: Vec<&str> = l.split(',').collect();
            assert_eq!(cells.len(), cols.len(), "{l}");
            cols.iter()
                .zip(cells)
                .map(|(c, v)| (c.to_string(), v.to_string()))
                .collect()
        })
        .collect()
}

fn get<'a>(row: &'a [(String, String)], col: &str) -> &'a str {
    &row.iter().find(|(c, _)| c == col).unwrap().1
}

fn num(row: &[(String, String)], col: &str) -> f64 {
    get(row, col)
        .parse()
        .unwrap_or_else(|_| panic!("{col} not a number: {row:?}"))
}

/// Whether `a` and `b` agree to 1e-12 (serde_json's float parsing is not always
/// correctly rounded, so exact values may differ in the last bit).
fn same(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-12 * a.abs().max(b.abs()).max(1.0)
}

/// The names of the algorithms of `op` that fit `topo`, in registry order.
fn fitting(topo: &str, op: OpKind) -> Vec<&'static str> {
    let topo: Topology = topo.parse().unwrap();
    algorithms::fitting(&topo, op)
        .iter()
        .map(|a| a.name)
        .collect()
}

// ---------------------------------------------------------------- rows

#[test]
fn csv_has_a_row_per_point_and_algorithm_in_order() {
    let algos = fitting("hypercube:3", OpKind::Broadcast);
    let out = ok(&[
        "sweep",
        "--topology",
        "hypercube:3",
        "--op",
        "broadcast",
        "--len",
        "100..1000:300",
    ]);
    let rows = csv(&out);
    assert_eq!(rows.len(), 4 * algos.len(), "{out}");
    for (i, row) in rows.iter().enumerate() {
        let len = [100, 400, 700, 1000][i / algos.len()];
        assert_eq!(get(row, "len"), len.to_string());
        assert_eq!(get(row, "algo"), algos[i % algos.len()]);
        assert_eq!(get(row, "nodes"), "8");
        assert_eq!(get(row, "verified"), "true");
        assert!(num(row, "lower_bound") <= num(row, "time"));
    }
}

/// `simulate --format json` for one row's point and algorithm, with `model` flags.
fn simulate(topo: &str, op: &str, row: &[(String, String)], model: &[&str]) -> Value {
    let mut args = vec![
        "simulate",
        "--topology",
        topo,
        "--op",
        op,
        "--algo",
        get(row, "algo"),
        "--len",
        get(row, "len"),
        "--format",
        "json",
    ];
    args.extend(model);
    serde_json::from_str(&ok(&args)).unwrap()
}

/// Each row's figures equal `simulate`'s for the same point.
fn check_against_simulate(topo: &str, op: &str, model: &[&str], len: &str) {
    let mut args = vec!["sweep", "--topology", topo, "--op", op, "--len", len];
    args.extend(model);
    let rows = csv(&ok(&args));
    assert!(!rows.is_empty());
    for row in rows.iter().step_by(3) {
        let v = simulate(topo, op, row, model);
        for col in ["time", "rounds", "messages", "volume", "lower_bound"] {
            assert!(
                same(num(row, col), v[col].as_f64().unwrap()),
                "{col} {row:?}"
            );
        }
        match v["formula"]["value"].as_f64() {
            Some(f) => assert!(same(num(row, "formula"), f), "{row:?}"),
            None => assert_eq!(get(row, "formula"), "", "{row:?}"),
        }
    }
}

#[test]
fn rows_equal_simulate() {
    check_against_simulate("hypercube:4", "broadcast", &[], "1..100000x10");
    check_against_simulate("hypercube:3", "scatter", &["--root", "5"], "1,7,1000");
    let model = ["--ports", "one", "--timing", "async", "--beta", "3"];
    check_against_simulate("hypercube:3", "broadcast", &model, "10..1000:330");
}

#[test]
fn json_has_the_csv_fields() {
    let out = ok(&[
        "sweep",
        "--topology",
        "hypercube:2",
        "--op",
        "gather",
        "--len",
        "5,50",
        "--format",
        "json",
    ]);
    let v: Value = serde_json::from_str(&out).unwrap();
    let rows = v.as_array().unwrap();
    assert_eq!(rows.len(), 2 * fitting("hypercube:2", OpKind::Gather).len());
    for r in rows {
        let mut keys: Vec<&str> = r.as_object().unwrap().keys().map(String::as_str).collect();
        let mut want: Vec<&str> = HEADER.split(',').collect();
        keys.sort_unstable();
        want.sort_unstable();
        assert_eq!(keys, want);
        assert_eq!(r["verified"], true);
        assert_eq!(r["nodes"], 4);
    }
    assert_eq!(rows[0]["len"], 5);
}

#[test]
fn dims_sweep_has_2_pow_d_nodes() {
    let out = ok(&[
        "sweep",
        "--topology",
        "hypercube",
        "--op",
        "broadcast",
        "--algo",
        "sbt",
        "--len",
        "64",
        "--dims",
        "1..6",
    ]);
    let rows = csv(&out);
    assert_eq!(rows.len(), 6);
    for (d, row) in (1..=6).zip(&rows) {
        assert_eq!(num(row, "nodes"), f64::from(1u32 << d));
        assert_eq!(get(row, "len"), "64");
        let topo = format!("hypercube:{d}");
        let v = simulate(&topo, "broadcast", row, &[]);
        assert!(
            same(num(row, "time"), v["time"].as_f64().unwrap()),
            "{row:?}"
        );
    }
    // The topology's own dimension does not matter, only its family.
    let again = ok(&[
        "sweep",
        "--topology",
        "hypercube:9",
        "--op",
        "broadcast",
        "--algo",
        "sbt",
        "--len",
        "64",
        "--dims",
        "1..6",
    ]);
    assert_eq!(out, again);
}

/// `--nodes A..B` sweeps the machine size on every family: for each K of the range the
/// family's machine of K processors (tori, meshes and generalized hypercubes only at
/// squares Q² ≥ 4, hypercubes at powers of two, `shm:K,S` keeping S and skipping K < S,
/// `shm` with S = K), every algorithm that fits it, in registry order, each row equal
/// to `simulate`'s on that machine.
#[test]
fn nodes_sweep_covers_every_family() {
    let families: [(&str, fn(u64) -> Option<String>); 10] = [
        ("ring", |k| Some(format!("ring:{k}"))),
        ("path:9", |k| Some(format!("path:{k}"))),
        ("complete", |k| Some(format!("complete:{k}"))),
        ("bus", |k| Some(format!("bus:{k}"))),
        ("switch", |k| Some(format!("switch:{k}"))),
        ("shm", |k| Some(format!("shm:{k},{k}"))),
        ("shm:16,3", |k| (k >= 3).then(|| format!("shm:{k},3"))),
        ("torus:5x5", |k| {
            let q = (k as f64).sqrt() as u64;
            (q * q == k && q >= 2).then(|| format!("torus:{q}x{q}"))
        }),
        ("ghc", |k| {
            let q = (k as f64).sqrt() as u64;
            (q * q == k && q >= 2).then(|| format!("ghc:{q}x{q}"))
        }),
        ("hypercube", |k| {
            k.is_power_of_two()
                .then(|| format!("hypercube:{}", k.trailing_zeros()))
        }),
    ];
    for (family, machine) in families {
        let out = ok(&[
            "sweep",
            "--topology",
            family,
            "--op",
            "broadcast",
            "--len",
            "50",
            "--nodes",
            "1..17",
        ]);
        let rows = csv(&out);
        let mut want: Vec<(String, &str)> = Vec::new();
        for k in 1..=17u64 {
            if let Some(t) = machine(k) {
                want.extend(
                    fitting(&t, OpKind::Broadcast)
                        .into_iter()
                        .map(|a| (t.clone(), a)),
                );
            }
        }
        let got: Vec<&str> = rows.iter().map(|r| get(r, "algo")).collect();
        let names: Vec<&str> = want.iter().map(|w| w.1).collect();
        assert_eq!(got, names, "{family}");
        for (row, (topo, _)) in rows.iter().zip(&want).step_by(5) {
            let t: Topology = topo.parse().unwrap();
            assert_eq!(num(row, "nodes"), f64::from(t.nodes()), "{family} {topo}");
            assert_eq!(get(row, "verified"), "true", "{family} {topo}");
            let v = simulate(topo, "broadcast", row, &[]);
            assert!(
                same(num(row, "time"), v["time"].as_f64().unwrap()),
                "{topo} {row:?}"
            );
        }
    }
    // The switch's own algorithms appear on switch:K (the binary tree on every K, the
    // ring embedded one way), and the JSON has the same rows.
    let out = ok(&[
        "sweep",
        "--topology",
        "switch",
        "--op",
        "broadcast",
        "--len",
        "7",
        "--nodes",
        "3,5,7",
        "--format",
        "json",
    ]);
    let v: Value = serde_json::from_str(&out).unwrap();
    let rows = v.as_array().unwrap();
    for k in [3, 5, 7] {
        for algo in ["binary-tree", "one-way", "binomial"] {
            assert!(
                rows.iter().any(|r| r["nodes"] == k && r["algo"] == algo),
                "switch:{k} {algo}"
            );
        }
    }
}

/// `--nodes` refuses what it cannot sweep, naming it: a range with no machine of the
/// family, a family it does not know, several lengths, `--dims` beside it.
#[test]
fn nodes_sweep_refuses_naming_the_problem() {
    let base = ["sweep", "--op", "broadcast"];
    let cases: &[(&[&str], &[&str])] = &[
        (
            &["--topology", "torus", "--len", "5", "--nodes", "5..8"],
            &["--nodes", "5..8", "Q²"],
        ),
        (
            &["--topology", "hypercube", "--len", "5", "--nodes", "5..7"],
            &["--nodes", "2^n"],
        ),
        (
            &["--topology", "ring*ring", "--len", "5", "--nodes", "4"],
            &["--nodes", "ring*ring", "switch"],
        ),
        (
            &["--topology", "ring", "--len", "5..9", "--nodes", "4..8"],
            &["--len", "--nodes", "one length"],
        ),
        (
            &["--topology", "shm:8,x", "--len", "5", "--nodes", "4..8"],
            &["shm:8,x", "whole number"],
        ),
        (
            &[
                "--topology",
                "ring",
                "--len",
                "5",
                "--nodes",
                "4..8",
                "--dims",
                "1..3",
            ],
            &["--nodes", "--dims"],
        ),
    ];
    for (extra, needles) in cases {
        let mut args = base.to_vec();
        args.extend(*extra);
        bad(&args, needles);
    }
}

fn lens(spec: &str) -> Vec<u64> {
    let out = ok(&[
        "sweep",
        "--topology",
        "hypercube:2",
        "--op",
        "scatter",
        "--algo",
        "sbt",
        "--len",
        spec,
        "--no-verify",
    ]);
    csv(&out)
        .iter()
        .map(|r| get(r, "len").parse().unwrap())
        .collect()
}

#[test]
fn ranges_give_the_right_points() {
    let doubling: Vec<u64> = (0..=20).map(|k| 1 << k).collect();
    assert_eq!(lens("1..1048576x2"), doubling);
    assert_eq!(lens("3..100x3"), [3, 9, 27, 81]);
    assert_eq!(
        lens("100..1000:100"),
        (1..=10).map(|k| 100 * k).collect::<Vec<_>>()
    );
    assert_eq!(lens("1000,1,7"), [1, 7, 1000]);
    assert_eq!(lens("42"), [42]);
}

#[test]
fn no_verify_leaves_verification_out() {
    let out = ok(&[
        "sweep",
        "--topology",
        "hypercube:3",
        "--op",
        "broadcast",
        "--len",
        "10,20",
        "--no-verify",
        "--format",
        "json",
    ]);
    let v: Value = serde_json::from_str(&out).unwrap();
    assert!(v
        .as_array()
        .unwrap()
        .iter()
        .all(|r| r["verified"].is_null()));
}

#[test]
fn a_point_too_large_to_verify_is_timed_unverified() {
    let r = hc(&[
        "sweep",
        "--topology",
        "hypercube",
        "--op",
        "broadcast",
        "--algo",
        "sbt",
        "--len",
        "10",
        "--packets",
        "1",
        "--dims",
        "2,18",
    ]);
    assert_eq!(r.code, 0, "{}", r.err);
    let rows = csv(&r.out);
    assert_eq!(get(&rows[0], "verified"), "true");
    assert_eq!(get(&rows[1], "verified"), "skipped");
    assert!(same(num(&rows[1], "time"), num(&rows[1], "formula")));
}

#[test]
fn an_impossible_row_says_error_and_the_sweep_goes_on() {
    let r = hc(&[
        "sweep",
        "--topology",
        "hypercube:3",
        "--op",
        "broadcast",
        "--len",
        "2,100",
        "--packets",
        "4",
    ]);
    assert_eq!(r.code, 0, "{}", r.err);
    let rows = csv(&r.out);
    let n = fitting("hypercube:3", OpKind::Broadcast).len();
    assert_eq!(rows.len(), 2 * n);
    for row in &rows[..n] {
        assert_eq!(get(row, "verified"), "error");
        assert_eq!(get(row, "time"), "");
    }
    for row in &rows[n..] {
        assert_eq!(get(row, "verified"), "true");
    }
    assert!(
        r.err.contains("at len 2") && r.err.contains("--packets"),
        "{}",
        r.err
    );
    let json = hc(&[
        "sweep",
        "--topology",
        "hypercube:3",
        "--op",
        "broadcast",
        "--len",
        "2,100",
        "--packets",
        "4",
        "--format",
        "json",
    ]);
    let v: Value = serde_json::from_str(&json.out).unwrap();
    assert_eq!(v[0]["verified"], "error");
    assert!(v[0]["error"].as_str().unwrap().contains("--packets"));
}

#[test]
fn a_failed_verification_exits_1() {
    let r = hc(&[
        "sweep",
        "--topology",
        "hypercube:3",
        "--op",
        "broadcast",
        "--algo",
        "sbt",
        "--len",
        "100,200",
        "--packets",
        "4",
        "--ports",
        "one",
        "--strict",
    ]);
    assert_eq!(r.code, 1, "{}", r.err);
    let rows = csv(&r.out);
    assert!(rows.iter().all(|row| get(row, "verified") == "false"));
    assert!(r.err.contains("failed verification"), "{}", r.err);
}

// ---------------------------------------------------------------- svg

#[test]
fn svg_is_a_chart_with_a_line_per_series_and_a_legend() {
    let path = std::env::temp_dir().join(format!("hypercomm-sweep-{}.svg", std::process::id()));
    let file = path.to_str().unwrap();
    let algos = fitting("hypercube:4", OpKind::Broadcast);
    let out = ok(&[
        "sweep",
        "--topology",
        "hypercube:4",
        "--op",
        "broadcast",
        "--len",
        "1..65536x4",
        "--svg",
        file,
    ]);
    assert_eq!(
        csv(&out).len(),
        9 * algos.len(),
        "the CSV is printed as usual"
    );
    let svg = std::fs::read_to_string(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
    assert!(svg.starts_with("<svg") || svg.starts_with("<?xml"));
    let doc = roxmltree::Document::parse(&svg).expect("well-formed XML");
    assert_eq!(doc.root_element().tag_name().name(), "svg");
    let lines: Vec<_> = doc
        .descendants()
        .filter(|n| n.has_tag_name("polyline") || n.has_tag_name("path"))
        .collect();
    assert_eq!(
        lines.len(),
        algos.len() + 1,
        "one per algorithm and the bound"
    );
    assert_eq!(
        lines
            .iter()
            .filter(|n| n.attribute("stroke-dasharray").is_some())
            .count(),
        1,
        "the lower bound is dashed"
    );
    let legend = doc
        .descendants()
        .find(|n| n.attribute("class") == Some("legend"))
        .expect("a legend");
    let names: Vec<&str> = legend
        .descendants()
        .filter(|n| n.has_tag_name("text"))
        .filter_map(|n| n.text())
        .collect();
    for a in &algos {
        assert!(names.contains(a), "{a} not in legend {names:?}");
    }
    assert!(names.contains(&"lower bound"));
    assert!(svg.contains("β = 1, τ = 0.01"));
}

// ---------------------------------------------------------------- bad input

#[test]
fn bad_ranges_exit_2_naming_the_problem() {
    let base = ["--topology", "hypercube:3", "--op", "broadcast"];
    let cases: &[(&[&str], &[&str])] = &[
        (&["--len", "10..1"], &["--len", "10..1", "empty"]),
        (&["--len", "x"], &["--len", "`x`", "A..B"]),
        (&["--len", "1..10:0"], &["--len", "step must be ≥ 1"]),
        (&["--len", "1..10x1"], &["--len", "factor must be > 1"]),
        (&["--len", "1..10x0.5"], &["factor must be > 1"]),
        (&["--len", "0..20000"], &["--len", "20001 points", "10000"]),
        (&["--len", "5", "--dims", "3..1"], &["--dims", "empty"]),
        (
            &["--len", "1..9", "--dims", "1..3"],
            &["--len", "one length"],
        ),
        (
            &["--len", "5", "--dims", "1..30"],
            &["hypercube:25", "0..=24"],
        ),
        (
            &["--len", "5", "--algo", "sbt,nope"],
            &["`nope`", "sbt", "esbt"],
        ),
        (&["--len", "5", "--format", "xml"], &["csv", "json"]),
        (&["--len", "5", "--host-tau", "-1"], &["--host-tau"]),
        (
            &["--len", "5", "--svg", "/nonexistent/dir/x.svg"],
            &["/nonexistent/dir/x.svg"],
        ),
    ];
    for (extra, needles) in cases {
        let mut args = vec!["sweep"];
        args.extend(base);
        args.extend(*extra);
        bad(&args, needles);
    }
    bad(
        &strs(&sweep(&[
            "--topology",
            "hypercube:3+host",
            "--op",
            "broadcast",
            "--len",
            "5",
        ])),
        &["host"],
    );
}

// ---------------------------------------------------------------- host links

/// Gichev §3.1, sequential loading on `hypercube:2+host`: the host (rank 4) sends
/// every PE its block, one PE a step, and keeps its own.
fn sequential_loading(m: u64) -> String {
    let topo: Topology = "hypercube:2+host".parse().unwrap();
    let host = topo.host().unwrap();
    let mut programs: Vec<Program> = (0..=host).map(|r| Program::new(r, 4)).collect();
    for pe in 0..host {
        let block = Region::new(Buf::In, u64::from(pe) * m, m);
        programs[host as usize].push(pe as usize, Op::send(pe, block));
        let out = Region::new(Buf::Out, 0, m);
        programs[pe as usize].push(pe as usize, Op::recv(host, out));
    }
    let own = Region::new(Buf::In, u64::from(host) * m, m);
    programs[host as usize].push(0, Op::copy(own, Region::new(Buf::Out, 0, m)));
    let s = Materialized {
        nodes: host + 1,
        steps: 4,
        programs,
    };
    let collective = Collective::Scatter { root: host };
    Document::new(topo, collective, m, Some("sequential-loading"), true, &s).to_json()
}

#[test]
fn host_links_are_priced_with_host_beta_and_tau() {
    let m = 10u64;
    let path = std::env::temp_dir().join(format!("hypercomm-host-{}.json", std::process::id()));
    std::fs::write(&path, sequential_loading(m)).unwrap();
    let file = path.to_str().unwrap();
    let run = |extra: &[&str]| -> Value {
        let mut args = vec![
            "verify",
            "--schedule",
            file,
            "--ports",
            "one",
            "--format",
            "json",
        ];
        args.extend(extra);
        serde_json::from_str(&ok(&args)).unwrap()
    };
    let v = run(&["--host-beta", "6.5", "--host-tau", "0.008"]);
    assert_eq!(v["verified"], true);
    let want = 4.0 * (6.5 + m as f64 * 0.008);
    assert!((v["time"].as_f64().unwrap() - want).abs() < 1e-9, "{v:#}");
    assert_eq!(v["model"]["host_beta"], 6.5);
    assert_eq!(v["model"]["host_tau"], 0.008);
    // By default host links cost what the others do.
    let v = run(&[]);
    let want = 4.0 * (1.0 + m as f64 * 0.01);
    assert!((v["time"].as_f64().unwrap() - want).abs() < 1e-9, "{v:#}");
    let text = ok(&["verify", "--schedule", file, "--host-beta", "6.5"]);
    assert!(text.contains("host β = 6.5, τ = 0.01"), "{text}");
    std::fs::remove_file(&path).unwrap();
}

/// The host flags apply on a machine with a host, in every model command (a p2p from
/// a node to the host, 8, of hypercube:3+host); on one without, they are refused
/// (`hardening.rs`), and a bad value on a hosted machine is named by its range.
#[test]
fn host_flags_are_accepted_by_every_model_command() {
    let p = [
        "--topology",
        "hypercube:3+host",
        "--op",
        "p2p",
        "--src",
        "0",
        "--dst",
        "8",
        "--len",
        "10",
    ];
    let host = ["--host-beta", "2", "--host-tau", "0.5"];
    for cmd in [
        &["simulate", "--algo", "direct"][..],
        &["compare"],
        &["sweep"],
    ] {
        let mut args = cmd.to_vec();
        args.extend(p);
        args.extend(host);
        ok(&args);
    }
    let f = ok(&[
        "formulas",
        "--topology",
        "hypercube:3+host",
        "--op",
        "download",
        "--host-beta",
        "2",
        "--host-tau",
        "0.5",
    ]);
    assert!(f.contains("host β = 2, τ = 0.5"), "{f}");
    bad(
        &[
            "formulas",
            "--topology",
            "hypercube:3+host",
            "--host-beta",
            "-2",
        ],
        &["--host-beta", "≥ 0"],
    );
}
