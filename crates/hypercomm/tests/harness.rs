//! The test matrix: every registry algorithm (`algorithms::all()`, never a list of
//! names) × hypercube:0..=10 (and complete:K, hypercube:N+host for the families the
//! registry now has) × every root × lengths 0, 1, 7, 1000 × packet counts 1, `opt`
//! and counts that do not divide the length (3 for 7; 7 and 13 for 1000) × ports
//! all/one × duplex full/half × rounds/async. Each case goes through
//! `common::check`: build (or the documented refusal), verify, simulate (both entry
//! points, both timings, against an independent rounds model and an async floor),
//! every closed form (exact, upper bound, estimate), the lower bound, and the JSON
//! document round trip. An algorithm is run on the topologies it `fits`; on the
//! others it must refuse with `AlgorithmDoesNotFit`.
//!
//! What is exhaustive and what is sampled:
//! - n ≤ 5 (and complete:1..=33, hypercube:0..=3+host): everything — every root,
//!   every (source, destination) pair, every length × packet count × model, two
//!   (β, τ) regimes, the JSON round trip of every case;
//! - n = 6, 7 (and complete:63, 100): every root (point-to-point: every source ×
//!   destinations at distance 0, 1, the farthest and 2 random ones) × every length ×
//!   packet count × model, up to a budget of schedule size per algorithm (all of it
//!   for the tree algorithms at n = 6, part of n = 7 and of the Θ(k²) all-gathers
//!   and all-to-alls); JSON for one instance in eight;
//! - n = 8, 9, 10 (and complete:255, 256): every root (point-to-point: every source ×
//!   that spread) with ONE length/packet combination (len 7, ν = 1) under the papers'
//!   model (all ports, full duplex), and at least one case of every algorithm on
//!   every topology it fits (so every algorithm is verified up to n = 10); every
//!   length × packet count × model only for roots 0, k − 1 and two random ones,
//!   within a small budget. Checking every combination and model for every root at
//!   n = 8..=10 takes many minutes on two cores: a tree case at n = 10 costs 3–9 ms
//!   (verification about half), an all-gather or all-to-all case 1–10 s.
//!
//! Measured on the 2-core machine (test profile, CPU time of each test; the tests
//! run two at a time, each on two threads): n ≤ 5 41 s, n = 6, 7 40 s, every root at
//! n = 8..10 72 s, sampled roots 34 s — about 95 s of wall time on an idle machine,
//! with the 36 algorithms registered when this was written. Schedules larger than
//! `common::SLIM_UNITS` are checked under the papers' model only, without JSON.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use common::{check, collective, cube, Case, Rng, Tally, ALL_MODELS};
use hypercomm::algorithms::{self, Algorithm, Packets, Params};
use hypercomm::collective::{Collective, OpKind};
use hypercomm::cost::model::{Duplex, Ports};
use hypercomm::error::Error;
use hypercomm::topology::Topology;
use hypercomm::verify::Problem;

const BETA: f64 = 1.0;
const TAU: f64 = 0.01;

/// Lengths with their packet counts: 1, opt, and counts that do not divide the length.
fn lengths() -> Vec<(u64, Vec<Packets>)> {
    use Packets::{Count, Opt};
    vec![
        (0, vec![Count(1), Opt]),
        (1, vec![Count(1), Opt]),
        (7, vec![Count(1), Opt, Count(3)]),
        (1000, vec![Count(1), Opt, Count(7), Count(13)]),
    ]
}

/// The instances of `op` on `topo`: every root; for point-to-point every pair when
/// `all_pairs`, else every source with destinations at distance 0, 1, the farthest
/// (the antipode on a hypercube) and 2 random ones.
fn instances(op: OpKind, topo: &Topology, all_pairs: bool, rng: &mut Rng) -> Vec<Collective> {
    let k = topo.nodes();
    if op == OpKind::P2p {
        let mut v = Vec::new();
        for src in 0..k {
            let dsts: Vec<u32> = if all_pairs {
                (0..k).collect()
            } else {
                let near = (0..k).find(|&d| topo.distance(src, d) == 1).unwrap_or(src);
                let far = (0..k).max_by_key(|&d| topo.distance(src, d)).unwrap_or(src);
                let far = match topo.as_hypercube() {
                    Some(h) if topo.host().is_none() => src ^ (h.nodes() - 1),
                    _ => far,
                };
                let mut d = vec![src, near, far];
                d.extend((0..2).map(|_| rng.below(k as u64) as u32));
                d
            };
            v.extend(dsts.into_iter().map(|dst| collective(op, k, src, dst)));
        }
        v
    } else if op.has_root() {
        (0..k).map(|root| collective(op, k, root, 0)).collect()
    } else {
        vec![collective(op, k, 0, 0)]
    }
}

/// Run the cases on two threads, the largest (by `size`) first so that no thread is
/// left alone with a big one at the end; the tally of each case's `slot`; panic with
/// the first failures.
fn run(cases: &[(usize, u64, Case<'_>)], slots: usize) -> Vec<Tally> {
    let mut order: Vec<usize> = (0..cases.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(cases[i].1));
    let next = AtomicUsize::new(0);
    let failures = Mutex::new(Vec::<String>::new());
    let totals = Mutex::new(vec![Tally::default(); slots]);
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| {
                let mut mine = vec![Tally::default(); slots];
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(&j) = order.get(i) else { break };
                    let (slot, _, case) = &cases[j];
                    match check(case) {
                        Ok(t) => mine[*slot] += t,
                        Err(e) => failures.lock().unwrap().push(e),
                    }
                }
                let mut totals = totals.lock().unwrap();
                for (a, b) in totals.iter_mut().zip(mine) {
                    *a += b;
                }
            });
        }
    });
    let failures = failures.into_inner().unwrap();
    assert!(
        failures.is_empty(),
        "{} of {} cases failed; the first:\n{}",
        failures.len(),
        cases.len(),
        failures
            .iter()
            .take(12)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
    totals.into_inner().unwrap()
}

/// The algorithm was built and compared with at least one closed form (an exact one
/// when `exact`) and with the lower bound: no check of the plan was vacuous.
fn assert_covered(t: &Tally, what: &str, exact: bool) {
    assert!(t.built > 0, "{what}: nothing built: {t:?}");
    assert!(
        t.exact + t.upper_bounds + t.lower_estimates > 0,
        "{what}: no formula checked: {t:?}"
    );
    assert!(
        !exact || t.exact > 0,
        "{what}: no exact formula checked: {t:?}"
    );
    assert!(t.lower_bounds > 0, "{what}: no lower bound checked: {t:?}");
}

/// Which roots (sources) of each cube a plan covers.
#[derive(Clone, Copy)]
enum Roots {
    /// Every root; point-to-point: every pair (`true`) or every source with a spread
    /// of destinations (`false`).
    Every { all_pairs: bool },
    /// Root 0, root k − 1 and `count − 2` random ones (point-to-point: those sources,
    /// each with the spread of destinations).
    Sample { count: usize },
}

/// Which lengths × packet counts a plan covers.
#[derive(Clone, Copy)]
enum Combos {
    /// Every length of [`lengths`] with each of its packet counts.
    Every,
    /// One: len 7, ν = 1 (the cheapest that moves data; pipelining is covered by
    /// every root at n ≤ 7 and by the sampled roots at n ≥ 8).
    One,
}

struct Plan {
    /// Topologies, e.g. `hypercube:4` or `hypercube:2+host`.
    topos: Vec<Topology>,
    roots: Roots,
    combos: Combos,
    /// (β, τ, longest length run with them).
    costs: &'static [(f64, f64, u64)],
    /// JSON round trip for one instance in `json_every` (by index).
    json_every: usize,
    /// Whether every algorithm must meet an exact formula in this plan.
    exact_per_algorithm: bool,
    /// Work allowed per algorithm, in `common::units` (schedule size) summed over its
    /// cases; `None` for no limit. Cases are taken cube by cube, smallest first, each
    /// (length, packets) group whole while it fits, then a prefix of it (root 0 first).
    budget: Option<u64>,
    /// Whether every group gets at least one case, budget or not.
    at_least_one: bool,
    /// Port and duplex rules (each under rounds and async).
    models: &'static [(Ports, Duplex)],
    /// See `Case::both_entries`.
    both_entries: bool,
}

/// Largest case (in `common::units`) run past the budget to give a group one case.
const ONE_CASE_CAP: u64 = 5_000_000;

fn cubes(dims: std::ops::RangeInclusive<u32>) -> Vec<Topology> {
    dims.map(cube).collect()
}

fn parse(t: &str) -> Topology {
    t.parse().unwrap_or_else(|e| panic!("{t}: {e}"))
}

/// `complete:k` for each k: the family of the algorithms that need every pair linked.
fn completes(ks: &[u32]) -> Vec<Topology> {
    ks.iter().map(|k| parse(&format!("complete:{k}"))).collect()
}

/// The cases of `algo` under `plan`, grouped by (topology, length, packets, β, τ):
/// every instance of a group has the same size (roots are related by automorphisms).
fn groups<'a>(algo: &'static Algorithm, plan: &'a Plan, rng: &mut Rng) -> Vec<Vec<Case<'a>>> {
    let mut out = Vec::new();
    for topo in &plan.topos {
        let k = topo.nodes();
        if algo.fits(topo).is_err() {
            // One case: it must be refused (`check` asserts the error).
            let c = collective(algo.op, k, 0, k - 1);
            out.push(vec![Case {
                algo,
                topo,
                collective: c,
                len: 7,
                packets: Packets::Count(1),
                beta: BETA,
                tau: TAU,
                models: plan.models,
                json: false,
                both_entries: plan.both_entries,
            }]);
            continue;
        }
        let all = match plan.roots {
            Roots::Every { all_pairs } => instances(algo.op, topo, all_pairs, rng),
            Roots::Sample { count } => {
                let mut roots = vec![0, k - 1];
                roots.extend((2..count).map(|_| rng.below(k as u64) as u32));
                instances(algo.op, topo, false, rng)
                    .into_iter()
                    .filter(|c| c.root().is_none() || roots.contains(&c.root().unwrap_or(0)))
                    .collect()
            }
        };
        let combos: Vec<(u64, Vec<Packets>)> = match plan.combos {
            Combos::Every => lengths(),
            Combos::One => vec![(7, vec![Packets::Count(1)])],
        };
        for (len, packets) in &combos {
            for &p in packets {
                for &(beta, tau, _) in plan.costs.iter().filter(|c| *len <= c.2) {
                    let group = all
                        .iter()
                        .enumerate()
                        .map(|(i, &c)| Case {
                            algo,
                            topo,
                            collective: c,
                            len: *len,
                            packets: p,
                            beta,
                            tau,
                            models: plan.models,
                            json: i % plan.json_every == 0,
                            both_entries: plan.both_entries,
                        })
                        .collect();
                    out.push(group);
                }
            }
        }
    }
    out
}

/// Run `plan` for every registry algorithm (within its budget); each algorithm must
/// have built cases and compared formulas and a lower bound with the simulator.
fn matrix(plan: &Plan) -> Tally {
    let all: Vec<&'static Algorithm> = algorithms::all().iter().collect();
    matrix_of(plan, &all)
}

/// [`matrix`] for the algorithms `algos` only.
fn matrix_of(plan: &Plan, algos: &[&'static Algorithm]) -> Tally {
    let mut rng = Rng(0x5eed_0000 + plan.topos.len() as u64);
    let mut cases = Vec::new();
    let mut notes = Vec::new();
    for (slot, &algo) in algos.iter().enumerate() {
        let groups = groups(algo, plan, &mut rng);
        let all: usize = groups.iter().map(Vec::len).sum();
        let before = cases.len();
        let mut left = plan.budget.unwrap_or(u64::MAX);
        let mut smaller = 0;
        for g in groups {
            let Some(&first) = g.first() else { continue };
            if plan.budget.is_none() {
                // Size only orders the work: the first case's steps × nodes.
                let each = (first.topo.nodes() as u64) * (first.len + 1);
                cases.extend(g.into_iter().map(|c| (slot, each, c)));
                continue;
            }
            let each = common::probe(&first, left.max(ONE_CASE_CAP)).max(1);
            let fit = if each > left {
                0
            } else {
                ((left / each) as usize).min(g.len())
            };
            left -= fit as u64 * each;
            cases.extend(g.into_iter().take(fit).map(|c| (slot, each, c)));
            if fit == 0 && plan.at_least_one {
                // Past the budget: one case all the same, at len 1 if even that one
                // is too large.
                if each <= ONE_CASE_CAP {
                    cases.push((slot, each, first));
                } else {
                    smaller += 1;
                    let one = Case {
                        len: 1,
                        packets: Packets::Count(1),
                        ..first
                    };
                    cases.push((slot, each, one));
                }
            }
        }
        notes.push((cases.len() - before, all, smaller));
    }
    let tallies = run(&cases, algos.len());
    let mut total = Tally::default();
    for ((algo, t), (ran, all, smaller)) in algos.iter().zip(tallies).zip(notes) {
        eprintln!("{algo:?}: {ran} of {all} cases ({smaller} at len 1 for size): {t:?}");
        // An algorithm that fits none of the plan's topologies (seed 004's ring, torus,
        // bus and memory algorithms on cubes, download without a host) was only checked
        // to refuse them.
        if !plan.topos.iter().any(|t| algo.fits(t).is_ok()) {
            assert_eq!(t.built, 0, "{algo:?}");
            continue;
        }
        assert_covered(&t, &format!("{algo:?}"), plan.exact_per_algorithm);
        total += t;
    }
    total
}

/// β ≫ τ as the papers assume, and τ ≫ β, where `opt` means as many packets as
/// elements (up to len 7 here: with len 1000 that is 1000-step schedules; the property
/// tests draw β, τ and lengths up to 300 at random).
const COSTS: &[(f64, f64, u64)] = &[(BETA, TAU, u64::MAX), (0.5, 2.0, 7)];
const DEFAULT_COSTS: &[(f64, f64, u64)] = &[(BETA, TAU, u64::MAX)];

#[test]
fn matrix_n0_to_n5_exhaustive() {
    let mut topos = cubes(0..=5);
    topos.extend((0..=3).map(|n| parse(&format!("hypercube:{n}+host"))));
    topos.extend(completes(&[
        1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 16, 17, 31, 32, 33,
    ]));
    let t = matrix(&Plan {
        topos,
        roots: Roots::Every { all_pairs: true },
        combos: Combos::Every,
        costs: COSTS,
        json_every: 1,
        exact_per_algorithm: true,
        budget: None,
        at_least_one: true,
        models: &ALL_MODELS,
        both_entries: true,
    });
    assert_eq!(t.json, t.built, "{t:?}");
    assert!(
        t.upper_bounds > 0 && t.lower_estimates > 0 && t.rejected > 0,
        "{t:?}"
    );
}

/// Every root (point-to-point: every source × destinations at distance 0, 1, the
/// farthest and 2 random), every length × packet count × model, within a budget per
/// algorithm: all of n = 6 and most of n = 7 for the tree algorithms, fewer cases for
/// the Θ(k²) ones (all-gather, all-to-all)..
#[test]
fn matrix_n6_to_n7_every_root() {
    let t = matrix(&Plan {
        topos: [cubes(6..=7), completes(&[63, 100])].concat(),
        roots: Roots::Every { all_pairs: false },
        combos: Combos::Every,
        costs: DEFAULT_COSTS,
        json_every: 8,
        exact_per_algorithm: false,
        budget: Some(1_500_000),
        at_least_one: true,
        models: &ALL_MODELS,
        both_entries: true,
    });
    assert!(t.json > 0, "{t:?}");
}

/// Every root of n = 8, 9, 10 (and of complete:255, 256) with one length/packet
/// combination (len 7, ν = 1) under the papers' model (all ports, full duplex): the
/// other combinations and models are for sampled roots, below. Every algorithm gets
/// at least one case on every topology it fits, whatever its size.
#[test]
fn matrix_n8_to_n10_every_root_one_combination() {
    let t = matrix(&Plan {
        topos: [cubes(8..=10), completes(&[255, 256])].concat(),
        roots: Roots::Every { all_pairs: false },
        combos: Combos::One,
        costs: DEFAULT_COSTS,
        json_every: 256,
        // multipath's form is an upper bound when ν does not divide the shares.
        exact_per_algorithm: false,
        budget: Some(12_000_000),
        at_least_one: true,
        models: &ALL_MODELS[..1],
        // Both entry points are compared in the other plans.
        both_entries: false,
    });
    assert!(t.json > 0, "{t:?}");
}

/// Roots 0, k − 1 and 2 random ones (point-to-point: those sources × the spread of
/// destinations) × every length × packet count × model at n = 8, 9, 10 and on
/// complete:257, within a small budget per algorithm (smallest cube first).
#[test]
fn matrix_n8_to_n10_sampled_roots_every_combination() {
    let t = matrix(&Plan {
        topos: [cubes(8..=10), completes(&[257])].concat(),
        roots: Roots::Sample { count: 4 },
        combos: Combos::Every,
        costs: DEFAULT_COSTS,
        json_every: 3,
        exact_per_algorithm: false,
        budget: Some(500_000),
        at_least_one: false,
        models: &ALL_MODELS,
        both_entries: true,
    });
    assert!(t.json > 0, "{t:?}");
}

/// Every download algorithm (seed 003) on hypercube:0+host to hypercube:6+host, every
/// length × model, both (β, τ) regimes (the host's links priced as the cube's: the
/// algorithms' own tests cover unequal β_h, τ_h), and on the plain cubes and
/// complete:K, where they must refuse. SSA as published must be caught by the
/// verifier (from n = 3 on) and correct at n = 2.
#[test]
fn matrix_download_on_hypercube_0_to_6_with_a_host() {
    let mut topos: Vec<Topology> = (0..=6)
        .map(|n| parse(&format!("hypercube:{n}+host")))
        .collect();
    topos.extend([cube(3), parse("complete:5")]);
    let algos: Vec<&'static Algorithm> = algorithms::for_op(OpKind::Download).collect();
    assert!(algos.len() >= 7, "{algos:?}");
    let t = matrix_of(
        &Plan {
            topos,
            roots: Roots::Every { all_pairs: false },
            combos: Combos::Every,
            costs: COSTS,
            json_every: 1,
            exact_per_algorithm: true,
            budget: None,
            at_least_one: true,
            models: &ALL_MODELS,
            both_entries: true,
        },
        &algos,
    );
    // SSA on n = 3..6, every length but 0 (nothing to deliver), both regimes for
    // lengths up to 7, every port and duplex rule counted once per case.
    assert!(t.caught > 0 && t.unfit > 0, "{t:?}");
}

/// Product networks (seed 002): rings of both parities, paths, tori, meshes, a
/// generalized hypercube and mixed products, beside hypercube:3 and complete:6 so that
/// every registry algorithm fits one topology of the plan. Every root, lengths 0, 1,
/// 7 and 1000 with their packet counts, both (β, τ) regimes, every port and duplex
/// rule: the algorithms that fit a product (`a2`, `product`, `direct`, and the
/// hypercube algorithms on products that are cubes) verify and meet their exact
/// closed forms, and the others refuse.
#[test]
fn matrix_products() {
    let topos = [
        "ring:3",
        "ring:4",
        "ring:5",
        "ring:6",
        "ring:7",
        "path:2",
        "path:3",
        "path:4",
        "torus:3x4",
        "torus:2x2x2",
        "mesh:3x3",
        "mesh:2x3",
        "ghc:3x4",
        "ring:5*path:3",
        "hypercube:2*ring:3",
        "complete:4*ring:3",
        "hypercube:3",
        "complete:6",
    ]
    .map(parse)
    .to_vec();
    let t = matrix(&Plan {
        topos,
        roots: Roots::Every { all_pairs: false },
        combos: Combos::Every,
        costs: COSTS,
        json_every: 4,
        exact_per_algorithm: true,
        budget: Some(3_000_000),
        at_least_one: true,
        models: &ALL_MODELS,
        both_entries: true,
    });
    assert!(t.json > 0 && t.unfit > 0, "{t:?}");
}

/// Registry: each (collective, name) once, found by `find` and `lookup`, described.
#[test]
fn registry_entries_are_unique_and_findable() {
    let all = algorithms::all();
    assert!(!all.is_empty());
    let topos: Vec<Topology> = sample_topologies();
    for (i, a) in all.iter().enumerate() {
        for b in &all[i + 1..] {
            assert!(
                !(a.op == b.op && a.name.eq_ignore_ascii_case(b.name)),
                "{a:?} is registered twice"
            );
        }
        let found = algorithms::find(a.op, &a.name.to_ascii_uppercase()).expect("find by name");
        assert!(
            std::ptr::eq(found, a),
            "find({}, {}) gave {found:?}",
            a.op,
            a.name
        );
        assert!(algorithms::for_op(a.op).any(|b| std::ptr::eq(b, a)));
        assert!(!a.summary.is_empty() && !a.reference.is_empty() && !a.topologies.is_empty());
        let fits: Vec<&Topology> = topos.iter().filter(|t| a.fits(t).is_ok()).collect();
        assert!(!fits.is_empty(), "{a:?} fits none of {topos:?}");
        for t in fits {
            assert!(std::ptr::eq(
                algorithms::lookup(t, a.op, a.name).unwrap(),
                a
            ));
        }
    }
    for topo in &topos {
        for op in OpKind::ALL {
            match algorithms::lookup(topo, op, "no-such-algorithm") {
                Err(Error::UnknownAlgorithm { valid, .. }) => {
                    assert_eq!(
                        valid,
                        algorithms::names(algorithms::fitting(topo, op)),
                        "{op}"
                    );
                    for a in algorithms::for_op(op).filter(|a| a.fits(topo).is_ok()) {
                        assert!(
                            valid.split(' ').any(|v| v == a.name),
                            "{op} on {topo}: {valid} misses {a:?}"
                        );
                    }
                }
                other => panic!("{op}: lookup of an unknown name gave {other:?}"),
            }
        }
    }
}

/// One topology of each family, for the registry tests.
fn sample_topologies() -> Vec<Topology> {
    [
        "hypercube:3",
        "hypercube:2+host",
        "complete:8",
        "complete:5",
        "ring:5",
        "torus:3x3",
        "bus:5",
        "shm:5,2",
        "switch:8",
    ]
    .iter()
    .filter_map(|t| t.parse().ok())
    .collect()
}

/// `build` refuses a collective of another kind, and ranks out of range, with the
/// documented errors.
#[test]
fn build_rejects_other_collectives_and_ranks_out_of_range() {
    let topos = sample_topologies();
    for a in algorithms::all() {
        let topo = topos
            .iter()
            .find(|t| a.fits(t).is_ok())
            .expect("fits one")
            .clone();
        let k = topo.nodes();
        for op in OpKind::ALL.into_iter().filter(|&op| op != a.op) {
            let problem = Problem {
                topology: &topo,
                collective: collective(op, k, 1, 2),
                len: 4,
                commutative: true,
                counts: None,
            };
            match a.build(&problem, &Params::default()) {
                Err(Error::InvalidParameter { what: "--op", .. }) => {}
                Err(e) => panic!("{a:?} given {op}: wrong error {e}"),
                Ok(_) => panic!("{a:?} built a schedule for {op}"),
            }
        }
        // A root (or source, or destination) that is not a node.
        let bad = match collective(a.op, k, 1, 2) {
            Collective::P2p { src, .. } => Collective::P2p { src, dst: k },
            Collective::Broadcast { .. } => Collective::Broadcast { root: k },
            Collective::Scatter { .. } => Collective::Scatter { root: k },
            Collective::Gather { .. } => Collective::Gather { root: k },
            Collective::Reduce { .. } => Collective::Reduce { root: k + 5 },
            _ => continue,
        };
        let problem = Problem {
            topology: &topo,
            collective: bad,
            len: 4,
            commutative: true,
            counts: None,
        };
        match a.build(&problem, &Params::default()) {
            Err(Error::RankOutOfRange { nodes, .. }) => assert_eq!(nodes, k),
            Err(e) => panic!("{a:?} given {bad}: wrong error {e}"),
            Ok(_) => panic!("{a:?} built a schedule for {bad} on {topo}"),
        }
    }
}

/// Multipath's continuous optimum (Prop. 3.2) must stay a lower estimate when n does
/// not divide m. It used ⌈m/n⌉ for the paper's m/n: hypercube:3, p2p 0 → 3, m = 100,
/// `opt` (ν = 1), β = 1, τ = 0.01: shares 34, 33, 33 over paths of 2, 2 and 4 hops,
/// simulated 4β + 134τ = 5.34, estimate (√0.34 + √3)² = 5.3599. The real m/n is not
/// a lower estimate either when the long paths carry only ⌊m/n⌋ (the m mod n extra
/// elements all on short paths): m = 101 gives shares 34, 34, 33, simulated 5.34, but
/// (√(101/3 · 0.01) + √3)² = 5.3466; hypercube:2, 0 → 1, m = 7, β = 0.5, τ = 2
/// (shares 4 and 3 over 1 and 3 hops, ν = 4) simulates 12.5, with m/n 13.29. The
/// estimate takes m/n when a path of length L carries at least m/n elements (the
/// longest path's own pipeline then bounds the time), ⌊m/n⌋ otherwise
/// (docs/errata.md, E6).
#[test]
fn multipath_continuous_optimum_is_a_lower_estimate() {
    use hypercomm::algorithms::FormulaKind;
    use hypercomm::cost::{model::Model, simulate};
    let algo = algorithms::find(OpKind::P2p, "multipath").unwrap();
    // (n, src, dst, m, β, τ, the share the estimate uses, L)
    for (n, src, dst, m, beta, tau, share, l) in [
        (3, 0, 3, 100, 1.0, 0.01, 33.0, 4.0),
        (9, 1, 96, 1000, 1.0, 0.01, 111.0, 5.0),
        (3, 0, 3, 101, 1.0, 0.01, 33.0, 4.0),
        // H = 1 < m mod n = 2: a long path carries ⌈m/n⌉, so the paper's m/n holds.
        (3, 0, 1, 101, 1.0, 0.01, 101.0 / 3.0, 3.0),
        (3, 0, 1, 100, 1.0, 0.01, 33.0, 3.0),
        // n | m, and m ≤ H (only short paths carry data, L = H): m/n.
        (3, 0, 3, 99, 1.0, 0.01, 33.0, 4.0),
        (3, 0, 7, 2, 1.0, 0.01, 2.0 / 3.0, 3.0),
        (2, 0, 1, 7, 0.5, 2.0, 3.0, 3.0),
    ] {
        let topo = cube(n);
        let problem = Problem {
            topology: &topo,
            collective: collective(OpKind::P2p, topo.nodes(), src, dst),
            len: m,
            commutative: true,
            counts: None,
        };
        let params = Params {
            packets: Packets::Opt,
            model: Model::new(beta, tau).unwrap(),
        };
        let time = simulate(
            &topo,
            algo.build(&problem, &params).unwrap().as_ref(),
            &params.model,
        )
        .time;
        let want = ((share * tau).sqrt() + ((l - 1.0) * beta).sqrt()).powi(2);
        let mut seen = false;
        for f in algo.formulas(&problem, &params) {
            if f.kind == FormulaKind::Estimate {
                seen = true;
                assert!(
                    (f.value - want).abs() <= 1e-9 * want,
                    "hypercube:{n} {src}→{dst} m = {m}: estimate {} = {}, want {want}",
                    f.expr,
                    f.value
                );
                assert!(
                    f.value <= time + 1e-9,
                    "hypercube:{n} {src}→{dst} m = {m}: estimate {} = {} > simulated {time}",
                    f.expr,
                    f.value
                );
            }
        }
        assert!(seen, "hypercube:{n} {src}→{dst} m = {m}: no estimate");
    }
}

/// Seed 004's small machines: every root and pair, every length × packet count, every
/// model of `models`, within a budget per algorithm.
fn seed004_plan(topos: Vec<Topology>, models: &'static [(Ports, Duplex)]) -> Plan {
    Plan {
        topos,
        roots: Roots::Every { all_pairs: true },
        combos: Combos::Every,
        costs: COSTS,
        json_every: 5,
        exact_per_algorithm: false,
        budget: Some(3_000_000),
        at_least_one: true,
        models,
        both_entries: true,
    }
}

/// Whether `a` is written for one of seed 004's machines (its `topologies` names a
/// ring, a torus, a bus, a shared memory or a switch).
fn seed004(a: &Algorithm) -> bool {
    a.topologies
        .split(", ")
        .any(|t| matches!(t, "ring" | "torus" | "bus" | "shm" | "switch"))
}

/// Every algorithm that fits a crossbar switch (seed 004's model F: one message each
/// way per node and step, any permutation), on switch:1..=16 (odd, prime and powers of
/// two): the switch's own (the binary tree, the ring embedded one way, the two-pass
/// exchange), those for any number of ranks (binomial = (3.23), Bruck = (3.35), the
/// binomial scatter = (3.41), …) and the hypercube's one-port ones on switch:2^n
/// (the one-permutation multiscatter, the scatter as published). Every root and
/// every pair, every length × packet count, every port × duplex rule (the switch
/// keeps one port each way whatever `--ports` says) and half-link duplex.
#[test]
fn matrix_switch() {
    let topos: Vec<Topology> = (1..=16).map(|k| parse(&format!("switch:{k}"))).collect();
    const MODELS: [(Ports, Duplex); 5] = [
        (Ports::All, Duplex::Full),
        (Ports::All, Duplex::Half),
        (Ports::One, Duplex::Full),
        (Ports::One, Duplex::Half),
        (Ports::One, Duplex::HalfLink),
    ];
    // The hypercube's algorithms that send on one link at a time: the switch's
    // multiscatter by one permutation per dimension (§3.5 (F)) and the scatter (3.41)
    // as published. The others (SBA, the edge-disjoint trees, …) send on several
    // links at once, which the switch serialises: priced, but outside its rule.
    let one_port_cube = [
        (OpKind::Alltoall, "dimension-exchange"),
        (OpKind::Alltoall, "mtadea"),
        (OpKind::Scatter, "sbt"),
    ];
    let fitting: Vec<&'static Algorithm> = algorithms::all()
        .iter()
        .filter(|a| {
            // Open MPI's linear all-to-all posts every send at once: many ports; so do
            // the variable-count collectives' linear forms.
            !((a.op == OpKind::Alltoall || a.op.is_varcount()) && a.name == "linear")
                && (a.topologies.contains("switch")
                    || a.topologies.starts_with("complete")
                    || one_port_cube.contains(&(a.op, a.name)))
        })
        .collect();
    for name in [
        "binary-tree",
        "one-way",
        "two-pass-exchange",
        "binomial",
        "bruck",
    ] {
        assert!(fitting.iter().any(|a| a.name == name), "{name}");
    }
    let t = matrix_of(&seed004_plan(topos, &MODELS), &fitting);
    assert!(
        t.exact > 0 && t.upper_bounds > 0 && t.lower_estimates > 0,
        "{t:?}"
    );
}

/// Seed 004's algorithms for the ring, the torus grid, the bus and the shared memory on
/// their machines: rings of 1..=9 nodes (odd and even), tori 2×2 to 6×6 (and two
/// oblong ones), buses of 1..=9, shared memories of 1..=8 processors with every
/// S = 1..=K. Every root, every length × packet count, the four port × duplex
/// rules plus seed 004's ring rule (`--ports 2,1`) and half-link duplex; every fitting
/// algorithm must meet an exact closed form.
#[test]
fn matrix_seed004_machines() {
    let mut names: Vec<String> = (1..=9).map(|k| format!("ring:{k}")).collect();
    for a in 2..=6 {
        names.push(format!("torus:{a}x{a}"));
    }
    names.extend(["torus:2x3".to_string(), "torus:4x3".to_string()]);
    names.extend((1..=9).map(|k| format!("bus:{k}")));
    for k in 1..=8 {
        names.extend((1..=k).map(|s| format!("shm:{k},{s}")));
    }
    let topos: Vec<Topology> = names.iter().map(|t| parse(t)).collect();
    const MODELS: [(Ports, Duplex); 7] = [
        (Ports::All, Duplex::Full),
        (Ports::All, Duplex::Half),
        (Ports::One, Duplex::Full),
        (Ports::One, Duplex::Half),
        (Ports::Split { send: 2, recv: 1 }, Duplex::Full),
        (Ports::All, Duplex::HalfLink),
        (Ports::Split { send: 2, recv: 1 }, Duplex::HalfLink),
    ];
    let seed004: Vec<&'static Algorithm> =
        algorithms::all().iter().filter(|a| seed004(a)).collect();
    let t = matrix_of(&seed004_plan(topos, &MODELS), &seed004);
    assert!(t.exact > 0 && t.upper_bounds > 0, "{t:?}");
}

/// Every seed 004 algorithm (those written for a ring, a torus, a bus, a shared
/// memory or a switch) meets an exact closed form on every size it fits, under the paper's model
/// of that machine, for every root, lengths 1, 7 and 1000, ν = 1 and `opt`.
#[test]
fn seed004_exact_forms_on_every_size() {
    use hypercomm::algorithms::FormulaKind;
    use hypercomm::cost::{model::Model, simulate};
    use hypercomm::verify::{verify, Strictness};
    let mut names: Vec<(String, Ports)> = (1..=9)
        .map(|k| (format!("ring:{k}"), Ports::Split { send: 2, recv: 1 }))
        .collect();
    for a in 2..=6 {
        for b in [a, a + 1] {
            names.push((format!("torus:{a}x{b}"), Ports::All));
        }
    }
    names.extend((1..=9).map(|k| (format!("bus:{k}"), Ports::All)));
    names.extend((1..=16).map(|k| (format!("switch:{k}"), Ports::One)));
    for k in 1..=9 {
        names.extend((1..=k).map(|s| (format!("shm:{k},{s}"), Ports::All)));
    }
    let mut checked = 0;
    for (name, ports) in &names {
        let topo = parse(name);
        let k = topo.nodes();
        for algo in algorithms::all()
            .iter()
            .filter(|a| seed004(a) && a.fits(&topo).is_ok())
        {
            for len in [1u64, 7, 1000] {
                for packets in [Packets::Count(1), Packets::Opt] {
                    let roots: Vec<u32> = if algo.op.has_root() || algo.op == OpKind::P2p {
                        (0..k).collect()
                    } else {
                        vec![0]
                    };
                    for root in roots {
                        let c = collective(algo.op, k, root, (root + k / 2) % k);
                        let problem = Problem {
                            topology: &topo,
                            collective: c,
                            len,
                            commutative: true,
                            counts: None,
                        };
                        // The reversed two-way scatter has the root hear both neighbours
                        // at once: all ports, not the ring rule (so has the two-path
                        // one-to-one's destination).
                        let ports = if algo.op == OpKind::Gather || algo.name == "two-path" {
                            &Ports::All
                        } else {
                            ports
                        };
                        let model = Model {
                            ports: *ports,
                            ..Model::new(1.0, 0.01).unwrap()
                        };
                        let params = Params { packets, model };
                        let sched = algo
                            .build(&problem, &params)
                            .unwrap_or_else(|e| panic!("{algo:?} on {name}: {e}"));
                        let strict = Strictness {
                            ports: Some(*ports),
                            duplex: None,
                            host_ports: None,
                        };
                        verify(problem, sched.as_ref(), strict)
                            .unwrap_or_else(|v| panic!("{algo:?} on {name}, {c}, len {len}: {v}"));
                        let time = simulate(&topo, sched.as_ref(), &model).time;
                        let forms = algo.formulas(&problem, &params);
                        let exact: Vec<_> = forms
                            .iter()
                            .filter(|f| f.kind == FormulaKind::Exact)
                            .collect();
                        assert!(!exact.is_empty(), "{algo:?} on {name}: no exact form");
                        for f in &forms {
                            assert!(f.holds_for(time), "{algo:?} on {name}, {c}, len {len}, {packets:?}: {} = {} vs simulated {time}", f.expr, f.value);
                        }
                        checked += 1;
                    }
                }
            }
        }
    }
    assert!(checked > 1000, "{checked}");
}

/// Seed 004's hypercube (model E: all ports, a link one direction at a time) is
/// `--duplex half-link`: every hypercube algorithm on hypercube:0..=5, roots 0, k − 1
/// and two random ones, every length × packet count, under half-link duplex with all
/// ports and one port; every closed form an algorithm states there must hold. The
/// algorithms `hypercomm tables` runs for the hypercube column state an exact one.
#[test]
fn matrix_hypercube_half_link() {
    const HALF_LINK: [(Ports, Duplex); 2] = [
        (Ports::All, Duplex::HalfLink),
        (Ports::One, Duplex::HalfLink),
    ];
    use hypercomm::algorithms::FormulaKind;
    use hypercomm::cost::model::Model;
    let half_link = |ports, packets| Params {
        packets,
        model: Model {
            ports,
            duplex: Duplex::HalfLink,
            ..Model::new(BETA, TAU).unwrap()
        },
    };
    // The algorithms that state a form under half-link duplex (the others say in their
    // documentation why they have none: the edge-disjoint trees cross links both ways).
    let c3 = cube(3);
    let states_one = |a: &&'static Algorithm| {
        let problem = Problem {
            topology: &c3,
            collective: collective(a.op, 8, 0, 7),
            len: 7,
            commutative: true,
            counts: None,
        };
        [Packets::Count(1), Packets::Opt]
            .into_iter()
            .any(|p| !a.formulas(&problem, &half_link(Ports::All, p)).is_empty())
    };
    let cube_algos: Vec<&'static Algorithm> = algorithms::all()
        .iter()
        .filter(|a| a.fits(&c3).is_ok() && a.op != OpKind::Download)
        .filter(states_one)
        .collect();
    let t = matrix_of(
        &Plan {
            topos: cubes(0..=5),
            roots: Roots::Sample { count: 4 },
            combos: Combos::Every,
            costs: DEFAULT_COSTS,
            json_every: 16,
            exact_per_algorithm: false,
            budget: Some(300_000),
            at_least_one: true,
            models: &HALF_LINK,
            both_entries: false,
        },
        &cube_algos,
    );
    assert!(t.exact > 0, "{t:?}");
    for (op, name) in [
        (OpKind::P2p, "multipath"),
        (OpKind::P2p, "ecube"),
        (OpKind::P2p, "direct"),
        (OpKind::Broadcast, "sbt"),
        (OpKind::Allgather, "tea2-grouped"),
        (OpKind::Allgather, "adea"),
        (OpKind::Allgather, "sba"),
        (OpKind::Scatter, "sbt"),
        (OpKind::Gather, "sbt"),
        (OpKind::Alltoall, "mtadea"),
    ] {
        let algo = algorithms::find(op, name).unwrap();
        for n in 1..=5 {
            let topo = cube(n);
            let k = topo.nodes();
            for len in [7u64, 1000] {
                // multipath's form is exact when the shares divide, else an upper bound.
                let c = collective(op, k, 0, k - 1);
                let problem = Problem {
                    topology: &topo,
                    collective: c,
                    len,
                    commutative: true,
                    counts: None,
                };
                let forms = algo.formulas(&problem, &half_link(Ports::All, Packets::Opt));
                assert!(
                    forms.iter().any(|f| f.kind != FormulaKind::Estimate),
                    "{algo:?} on {topo}, len {len}: no closed form under half-link duplex"
                );
            }
        }
    }
}

/// Seed 004's torus algorithms on the larger grids, 7 × 7, 8 × 8 and 7 × 8 (the
/// seed 004 matrices above stop at 6 × 7): every root (point-to-point: from node 0,
/// by the torus's symmetry, to every node), lengths 0, 1 and 7, ν = 1 and `opt`, under
/// all ports with full and half-link duplex; every schedule verifies under `--strict`
/// and every closed form holds, an exact one under full duplex.
#[test]
fn seed004_torus_7x7_to_8x8() {
    use hypercomm::algorithms::FormulaKind;
    use hypercomm::cost::{model::Model, simulate};
    use hypercomm::verify::{verify, Strictness};
    let mut checked = 0;
    for name in ["torus:7x7", "torus:8x8", "torus:7x8"] {
        let topo = parse(name);
        let k = topo.nodes();
        for algo in algorithms::all()
            .iter()
            .filter(|a| a.topologies == "torus" && a.fits(&topo).is_ok())
        {
            let instances: Vec<Collective> = if algo.op == OpKind::P2p {
                (0..k).map(|d| collective(algo.op, k, 0, d)).collect()
            } else if algo.op.has_root() {
                (0..k).map(|r| collective(algo.op, k, r, 0)).collect()
            } else {
                vec![collective(algo.op, k, 0, 0)]
            };
            for c in instances {
                for len in [0u64, 1, 7] {
                    for packets in [Packets::Count(1), Packets::Opt] {
                        for duplex in [Duplex::Full, Duplex::HalfLink] {
                            let problem = Problem {
                                topology: &topo,
                                collective: c,
                                len,
                                commutative: true,
                                counts: None,
                            };
                            let model = Model {
                                duplex,
                                ..Model::new(BETA, TAU).unwrap()
                            };
                            let params = Params { packets, model };
                            let sched = algo
                                .build(&problem, &params)
                                .unwrap_or_else(|e| panic!("{algo:?} on {name}: {e}"));
                            if duplex == Duplex::Full {
                                verify(problem, sched.as_ref(), Strictness::default())
                                    .unwrap_or_else(|v| {
                                        panic!("{algo:?} on {name}, {c}, len {len}: {v}")
                                    });
                            }
                            let time = simulate(&topo, sched.as_ref(), &model).time;
                            let forms = algo.formulas(&problem, &params);
                            assert!(
                                duplex != Duplex::Full
                                    || forms.iter().any(|f| f.kind == FormulaKind::Exact),
                                "{algo:?} on {name}: no exact form"
                            );
                            for f in &forms {
                                assert!(
                                    f.holds_for(time),
                                    "{algo:?} on {name}, {c}, len {len}, {packets:?}, {duplex:?}: {} = {} vs simulated {time}",
                                    f.expr,
                                    f.value
                                );
                            }
                            checked += 1;
                        }
                    }
                }
            }
        }
    }
    assert!(checked > 5000, "{checked}");
}

/// Past [`algorithms::PACKET_SEARCH_NODES`] `--packets opt` is the algorithm's own
/// choice, resolved in the constructor and in the formulas without building a schedule
/// first (building one only to read its ν took seconds on torus:1024x1024): the exact
/// forms under `opt` must then be those under the count the built schedule carries.
#[test]
fn past_the_packet_search_opt_forms_are_those_of_the_built_count() {
    let mut checked = 0;
    for t in [
        "torus:40x40",
        "hypercube:11",
        "ring:1500",
        "mesh:40x40",
        "switch:1500",
    ] {
        let topo = parse(t);
        let k = topo.nodes();
        assert!(k > algorithms::PACKET_SEARCH_NODES, "{t}");
        for algo in algorithms::all().iter().filter(|a| a.pipelined) {
            if algo.fits(&topo).is_err() {
                continue;
            }
            let problem = Problem {
                topology: &topo,
                collective: collective(algo.op, k, 1, k - 1),
                len: 1000,
                commutative: true,
                counts: None,
            };
            let opt = Params {
                packets: Packets::Opt,
                model: hypercomm::cost::model::Model::new(BETA, TAU).unwrap(),
            };
            let Ok(s) = algo.build(&problem, &opt) else {
                continue;
            };
            let Some(nu) = s.packets() else { continue };
            // The forms at the built ν (every kind: exact, upper bounds); under `opt`
            // the continuous optimum's estimates come besides.
            let forms = |p: &Params| -> Vec<(String, f64)> {
                algo.formulas(&problem, p)
                    .into_iter()
                    .filter(|f| f.kind != algorithms::FormulaKind::Estimate)
                    .map(|f| (f.expr, f.value))
                    .collect()
            };
            let counted = Params {
                packets: Packets::Count(nu),
                ..opt
            };
            let at_nu = forms(&counted);
            assert_eq!(forms(&opt), at_nu, "{} on {t}, ν = {nu}", algo.name);
            checked += usize::from(!at_nu.is_empty());
        }
    }
    assert!(checked >= 6, "only {checked} algorithms with forms checked");
}
