//! Property tests: random topologies, roots, lengths, packet counts, β and τ, through the
//! same `common::check` as the matrix; and the pipelining arithmetic against brute
//! force.

mod common;

use common::{check, collective, cube, probe, Case, ALL_MODELS};
use hypercomm::algorithms::{self, pipeline, Packets};
use hypercomm::cost::model::{Duplex, Ports};
use hypercomm::topology::Topology;
use proptest::prelude::*;

/// β ∈ (0, 10].
fn beta() -> impl Strategy<Value = f64> {
    (0.0f64..=10.0).prop_filter("β > 0", |b| *b > 0.0)
}

/// τ ∈ (0, 1].
fn tau() -> impl Strategy<Value = f64> {
    (0.0f64..=1.0).prop_filter("τ > 0", |t| *t > 0.0)
}

/// `None` for `opt`, else a count drawn in 1..=300 and folded into 1..=max(len, 1).
fn packets() -> impl Strategy<Value = Option<u64>> {
    prop_oneof![1 => Just(None), 3 => (1u64..=300).prop_map(Some)]
}

/// A random topology: hypercube:0..=7 or complete:1..=70 (whose powers of two also
/// carry the hypercube algorithms).
fn topology() -> impl Strategy<Value = Topology> {
    prop_oneof![
        3 => (0u32..=7).prop_map(cube),
        1 => (1u32..=70).prop_map(|k| format!("complete:{k}").parse().unwrap()),
    ]
}

/// Cases larger than this (in `common::units`) are left to the matrix: a random
/// all-gather with 300 packets on 128 nodes has millions of ops.
const MAX_UNITS: u64 = 150_000;

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    /// Every registry algorithm that fits the topology verifies, meets its exact
    /// formulas (and its bounds and estimates), async ≤ rounds, under a random model;
    /// one that does not fit says so.
    #[test]
    fn every_algorithm_on_random_problems(
        topo in topology(),
        a in any::<u32>(),
        b in any::<u32>(),
        len in 0u64..=300,
        p in packets(),
        beta in beta(),
        tau in tau(),
        model in 0usize..4,
    ) {
        let k = topo.nodes();
        let packets = match p {
            None => Packets::Opt,
            Some(c) => Packets::Count(1 + (c - 1) % len.max(1)),
        };
        // The drawn port/duplex rule first, then the others on small topologies.
        let models: Vec<(Ports, Duplex)> = if k <= 16 {
            let mut m = ALL_MODELS.to_vec();
            m.rotate_left(model);
            m
        } else {
            vec![ALL_MODELS[model]]
        };
        for algo in algorithms::all() {
            let case = Case {
                algo,
                topo: &topo,
                collective: collective(algo.op, k, a % k, b % k),
                len,
                packets: if algo.pipelined { packets } else { Packets::Count(1) },
                beta,
                tau,
                models: &models,
                json: k <= 8,
                both_entries: true,
            };
            if probe(&case, MAX_UNITS) > MAX_UNITS {
                continue;
            }
            if let Err(e) = check(&case) {
                return Err(TestCaseError::fail(e));
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    /// `pipeline::time` is the sum over the ν + depth − 1 rounds of β plus τ times the
    /// largest packet in flight (packet p crosses hop h in round p + h).
    #[test]
    fn pipeline_time_is_the_sum_of_its_rounds(
        m in 0u64..=300,
        depth in 0u64..=20,
        nu in 1u64..=300,
        beta in beta(),
        tau in tau(),
    ) {
        let nu = 1 + (nu - 1) % m.max(1);
        let mut brute = 0.0;
        if m > 0 && depth > 0 {
            for round in 0..nu + depth - 1 {
                let largest = (0..nu)
                    .filter(|&p| p <= round && round < p + depth)
                    .map(|p| pipeline::packet(m, nu, p).1)
                    .max()
                    .unwrap();
                brute += beta + largest as f64 * tau;
            }
        }
        let t = pipeline::time(m, depth, nu, beta, tau);
        prop_assert!((t - brute).abs() <= 1e-9 * brute.max(1.0), "time {t} vs rounds {brute}");
    }

    /// `pipeline::best` is never beaten by any ν in 1..=m (exhaustive), and the
    /// continuous optimum is below its time.
    #[test]
    fn pipeline_best_is_the_discrete_optimum(
        m in 1u64..=400,
        depth in 0u64..=40,
        beta in beta(),
        tau in tau(),
    ) {
        let best = pipeline::best(m, depth, beta, tau);
        prop_assert!((1..=m).contains(&best), "best = {best} for m = {m}");
        let tb = pipeline::time(m, depth, best, beta, tau);
        for nu in 1..=m {
            let t = pipeline::time(m, depth, nu, beta, tau);
            prop_assert!(tb <= t + 1e-9 * t.max(1.0), "ν = {nu} takes {t} < {tb} of best ν = {best}");
        }
        let opt = pipeline::continuous_optimum(m, depth, beta, tau);
        prop_assert!(opt <= tb + 1e-9 * tb.max(1.0), "continuous optimum {opt} > {tb}");
    }
}
