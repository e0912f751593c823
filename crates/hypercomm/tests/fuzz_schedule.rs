//! The fuzz target of the schedule reader and the verifier (issue 21): proptest
//! properties over arbitrary JSON trees and over structured mutations of real schedules
//! (every registry algorithm's, written out), including regions made strided with huge
//! segment counts *in bounds* (the document's length raised to fit them), which random
//! byte mutation never finds. The property: reading and verifying never panics, and
//! whatever is read stays within the limits the reader states
//! ([`MAX_SEGMENTS`], [`MAX_STEP_SEGMENTS`], [`MAX_DOCUMENT_SEGMENTS`]).
//!
//! It runs in the normal `cargo test` for a bounded number of cases (so CI runs it;
//! `PROPTEST_CASES=N` runs more). `tests/fuzz-corpus/*.json` holds regression inputs
//! (the two and the failures found so far), replayed by
//! [`the_corpus_reads_and_verifies_without_panicking`]; proptest's own failures are
//! kept in `fuzz_schedule.proptest-regressions`.

use hypercomm::algorithms::{self, Params};
use hypercomm::collective::{Collective, OpKind};
use hypercomm::schedule::json::{Document, MAX_DOCUMENT_SEGMENTS, MAX_STEP_SEGMENTS};
use hypercomm::schedule::{Op, MAX_SEGMENTS};
use hypercomm::topology::Topology;
use hypercomm::verify::{verify_programs, Problem, Strictness};
use proptest::prelude::*;
use serde_json::{json, Value};

/// Read `text` as a schedule and, if it reads, verify it: the reader and the verifier
/// must answer (an error, a violation or a verdict), never panic. What was read
/// respects the stated limits.
fn read_and_verify(text: &str) {
    let Ok(doc) = Document::parse(text) else {
        return;
    };
    let mut total = 0u64;
    for prog in &doc.programs {
        for step in &prog.steps {
            let mut named = 0u64;
            for op in &step.ops {
                let regions: Vec<_> = match op {
                    Op::Send { from, .. } => from.iter().collect(),
                    Op::Recv { into, .. } => into.iter().collect(),
                    Op::Local { from, into, .. } => vec![from, into],
                };
                for r in regions {
                    assert!(r.count <= MAX_SEGMENTS, "{r:?} read");
                    named += r.count.max(1);
                }
            }
            assert!(named <= MAX_STEP_SEGMENTS);
            total += named;
        }
    }
    assert!(total <= MAX_DOCUMENT_SEGMENTS);
    // The verifier's buffers are symbolic, but their lengths are nodes × len: keep to
    // what the CLI admits (it refuses a length whose volumes reach 2^53 elements).
    let k = u64::from(doc.topology.nodes());
    if k > 64 || doc.len > (1u64 << 53) / (k * k).max(1) || doc.programs.len() as u64 > k {
        return;
    }
    if doc.programs.iter().any(|p| p.tmp_len > 1 << 53) {
        return;
    }
    let problem = Problem {
        topology: &doc.topology,
        collective: doc.collective,
        len: doc.len,
        commutative: doc.commutative,
        counts: None,
    };
    let _ = verify_programs(problem, &doc.programs, doc.steps, Strictness::default());
}

/// Every registry algorithm's schedule on a small topology, as JSON: the seeds of the
/// structured mutations.
fn seeds() -> &'static [Value] {
    static SEEDS: std::sync::OnceLock<Vec<Value>> = std::sync::OnceLock::new();
    SEEDS.get_or_init(|| {
        let mut out = Vec::new();
        for topo in ["hypercube:2", "complete:3"] {
            let topology: Topology = topo.parse().unwrap();
            let k = topology.nodes();
            for algo in algorithms::all() {
                if algo.fits(&topology).is_err() {
                    continue;
                }
                let (src, dst) = match algo.op {
                    OpKind::P2p => (Some(0), Some(u64::from(k) - 1)),
                    _ => (None, None),
                };
                let collective = Collective::new(algo.op, k, Some(1), src, dst).unwrap();
                let problem = Problem {
                    topology: &topology,
                    collective,
                    len: 3,
                    commutative: true,
                    counts: None,
                };
                let Ok(s) = algo.build(&problem, &Params::default()) else {
                    continue;
                };
                let doc = Document::new(
                    topology.clone(),
                    collective,
                    3,
                    Some(algo.name),
                    true,
                    s.as_ref(),
                );
                out.push(serde_json::to_value(&doc).unwrap());
            }
        }
        assert!(out.len() > 30, "{} seeds", out.len());
        out
    })
}

/// Numbers that sit on an edge: limits, overflows, negatives, fractions.
fn edgy_number() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(json!(0)),
        Just(json!(1)),
        Just(json!(2)),
        Just(json!(3)),
        Just(json!(MAX_SEGMENTS)),
        Just(json!(MAX_SEGMENTS + 1)),
        Just(json!(1u64 << 27)),
        Just(json!(1u64 << 32)),
        Just(json!(1u64 << 40)),
        Just(json!(1u64 << 53)),
        Just(json!(u64::MAX)),
        Just(json!(-1)),
        Just(json!(1.5)),
        Just(json!(1e300)),
        any::<u64>().prop_map(|x| json!(x)),
        (0u64..16).prop_map(|x| json!(x)),
    ]
}

/// An arbitrary JSON tree, biased to the schedule format's keys so that some of them
/// get past the first few checks.
fn arbitrary_json() -> impl Strategy<Value = Value> {
    let key = prop_oneof![
        Just("format".to_string()),
        Just("topology".to_string()),
        Just("collective".to_string()),
        Just("kind".to_string()),
        Just("len".to_string()),
        Just("steps".to_string()),
        Just("programs".to_string()),
        Just("rank".to_string()),
        Just("send".to_string()),
        Just("recv".to_string()),
        Just("local".to_string()),
        Just("buf".to_string()),
        Just("off".to_string()),
        Just("count".to_string()),
        Just("stride".to_string()),
        "[a-z_]{1,8}",
    ];
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        edgy_number(),
        prop_oneof![
            Just(json!("hypercomm-schedule/1")),
            Just(json!("hypercube:1")),
            Just(json!("complete:2")),
            Just(json!("allgather")),
            Just(json!("out")),
            Just(json!("in")),
            Just(json!("tmp")),
            "[ -~]{0,12}".prop_map(Value::String),
        ],
    ];
    leaf.prop_recursive(5, 64, 6, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec((key.clone(), inner), 0..6)
                .prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
}

/// One structured change to a schedule document.
#[derive(Clone, Debug)]
enum Mutation {
    /// Replace the i-th number leaf (mod their count) with `v`.
    Number(usize, Value),
    /// Make the i-th region (mod their count) strided with `count` segments of `seg`
    /// elements at `stride = seg + gap`, raising the document's `len` so that it is in
    /// bounds of every buffer.
    Strided {
        i: usize,
        count: u64,
        seg: u64,
        gap: u64,
    },
    /// Remove the i-th object key (mod their count).
    DropKey(usize),
    /// Duplicate the i-th array element (mod the arrays' elements).
    Duplicate(usize),
    /// Swap the i-th array's first and last elements.
    Swap(usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let count = prop_oneof![
        2u64..8,
        Just(MAX_SEGMENTS / 4),
        Just(MAX_SEGMENTS),
        Just(MAX_SEGMENTS + 1),
        Just(1u64 << 27),
        Just(1u64 << 40),
    ];
    prop_oneof![
        3 => (any::<usize>(), edgy_number()).prop_map(|(i, v)| Mutation::Number(i, v)),
        3 => (any::<usize>(), count, 1u64..3, 0u64..3)
            .prop_map(|(i, count, seg, gap)| Mutation::Strided { i, count, seg, gap }),
        1 => any::<usize>().prop_map(Mutation::DropKey),
        1 => any::<usize>().prop_map(Mutation::Duplicate),
        1 => any::<usize>().prop_map(Mutation::Swap),
    ]
}

/// Every node of `v`, depth first, with a mutable visitor.
fn visit(v: &mut Value, f: &mut dyn FnMut(&mut Value)) {
    f(v);
    match v {
        Value::Array(a) => a.iter_mut().for_each(|x| visit(x, f)),
        Value::Object(o) => o.values_mut().for_each(|x| visit(x, f)),
        _ => {}
    }
}

fn is_region(v: &Value) -> bool {
    v.get("buf").is_some() && v.get("off").is_some() && v.get("len").is_some()
}

fn apply(doc: &mut Value, m: &Mutation) {
    let count_of = |doc: &mut Value, pred: &dyn Fn(&Value) -> bool| {
        let mut n = 0usize;
        visit(doc, &mut |v| n += usize::from(pred(v)));
        n
    };
    let nth = |doc: &mut Value,
               pred: &dyn Fn(&Value) -> bool,
               i: usize,
               f: &mut dyn FnMut(&mut Value)| {
        let mut seen = 0usize;
        visit(doc, &mut |v| {
            if pred(v) {
                if seen == i {
                    f(v);
                }
                seen += 1;
            }
        });
    };
    match m {
        Mutation::Number(i, x) => {
            let n = count_of(doc, &Value::is_number);
            if n > 0 {
                nth(doc, &Value::is_number, i % n, &mut |v| *v = x.clone());
            }
        }
        Mutation::Strided { i, count, seg, gap } => {
            let n = count_of(doc, &is_region);
            if n == 0 {
                return;
            }
            let stride = seg + gap;
            let span = (count - 1).saturating_mul(stride).saturating_add(*seg);
            nth(doc, &is_region, i % n, &mut |v| {
                v["off"] = json!(0);
                v["len"] = json!(count.saturating_mul(*seg));
                v["stride"] = json!(stride);
                v["count"] = json!(count);
            });
            // Every buffer holds at least `len` elements (the `in` of the ranks that
            // have one, every `out` of the all-to-all collectives): raise it to the span.
            let len = doc["len"].as_u64().unwrap_or(0).max(span);
            doc["len"] = json!(len);
        }
        Mutation::DropKey(i) => {
            let n = count_of(doc, &|v| v.as_object().is_some_and(|o| !o.is_empty()));
            if n > 0 {
                nth(
                    doc,
                    &|v| v.as_object().is_some_and(|o| !o.is_empty()),
                    i % n,
                    &mut |v| {
                        let o = v.as_object_mut().unwrap();
                        let key = o.keys().nth(i % o.len()).unwrap().clone();
                        o.remove(&key);
                    },
                );
            }
        }
        Mutation::Duplicate(i) | Mutation::Swap(i) => {
            let pred = |v: &Value| v.as_array().is_some_and(|a| !a.is_empty());
            let n = count_of(doc, &pred);
            if n > 0 {
                nth(doc, &pred, i % n, &mut |v| {
                    let a = v.as_array_mut().unwrap();
                    if matches!(m, Mutation::Duplicate(_)) {
                        let x = a[i % a.len()].clone();
                        a.push(x);
                    } else {
                        let last = a.len() - 1;
                        a.swap(0, last);
                    }
                });
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 256,
        failure_persistence: Some(Box::new(
            proptest::test_runner::FileFailurePersistence::WithSource("proptest-regressions"),
        )),
        ..ProptestConfig::default()
    })]

    /// Arbitrary JSON never panics the reader (nor the verifier, should it read).
    #[test]
    fn arbitrary_json_never_panics(v in arbitrary_json()) {
        read_and_verify(&v.to_string());
    }

    /// Real schedules, changed in one to four places, never panic the reader or the
    /// verifier, and what they read stays within the limits.
    #[test]
    fn mutated_schedules_never_panic(
        seed in any::<prop::sample::Index>(),
        muts in prop::collection::vec(mutation(), 1..5),
    ) {
        let seeds = seeds();
        let mut doc = seeds[seed.index(seeds.len())].clone();
        for m in &muts {
            apply(&mut doc, m);
        }
        read_and_verify(&doc.to_string());
    }
}

/// Unchanged, every seed reads and verifies (the mutations start from valid input).
#[test]
fn the_seeds_verify() {
    for seed in seeds() {
        let doc = Document::parse(&seed.to_string()).expect("a registry schedule reads");
        let problem = Problem {
            topology: &doc.topology,
            collective: doc.collective,
            len: doc.len,
            commutative: doc.commutative,
            counts: None,
        };
        verify_programs(problem, &doc.programs, doc.steps, Strictness::default())
            .unwrap_or_else(|v| panic!("{:?}: {v}", doc.algo));
    }
}

/// The regression inputs of `tests/fuzz-corpus`: each reads and verifies (or is
/// refused) without panicking; the files named `refused-*` must be refused by the
/// reader.
#[test]
fn the_corpus_reads_and_verifies_without_panicking() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fuzz-corpus");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    assert!(files.len() >= 2, "{}", dir.display());
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        read_and_verify(&text);
        let name = f.file_name().unwrap().to_str().unwrap();
        if name.starts_with("refused-") {
            assert!(Document::parse(&text).is_err(), "{name} was read");
        }
    }
}
