//! Seed 004's Tables 1 and 2 (Saad & Schultz 1986, *Data Communication in Parallel
//! Architectures*, §4), regenerated: for each of the 30 cells (five operations on six
//! machines), the printed entry evaluated, our corrected upper bound, the exact time
//! of the paper's algorithm for that cell (built, verified and simulated here), and the
//! best time of any registry algorithm on that machine.
//!
//! Parameters are the paper's: K processors, k* = S simultaneous memory accesses, the
//! data N, the start-up τ_X (our β) and the time per word 1/b_X (our τ). N means what
//! the paper means per operation, and `len` (elements per message or block) follows:
//! one-to-one and one-to-all, m = N; all-to-all and scatter, N is the total, m = N/K;
//! multiscatter, N is the total (m = N/K²) on the bus, the memory, the ring and the
//! grid, and the order of an N × N matrix (m = N²/K²) on the hypercube and the switch.
//! A length that does not divide is rounded down (at least 1); `len` says which ran.
//!
//! The machines and their models: `bus:K`, `shm:K,S` (the media price the
//! transfers), `ring:K` under the ring rule `--ports 2,1` (§2 (C)), `torus:QxQ`
//! (K = Q²) with all ports (§2 (D)), `hypercube:n` (K = 2^n) with all ports and
//! half-link duplex (§2 (E): a link carries one direction at a time), `switch:K`
//! (one port per node). Point-to-point goes from node 0 to the farthest node.

use serde::Serialize;

use crate::algorithms::alltoall::bruck::bit_sum;
use crate::algorithms::broadcast::binary_tree;
use crate::algorithms::{self, Packets, Params};
use crate::collective::{Collective, OpKind};
use crate::cost::model::{Duplex, Model, Ports};
use crate::cost::simulate;
use crate::error::Error;
use crate::topology::Topology;
use crate::verify::{verify, Problem, Strictness};

/// Seed 004's parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Params004 {
    /// K, processors.
    pub k: u32,
    /// k* = S, simultaneous shared-memory accesses.
    pub kstar: u32,
    /// The paper's N.
    pub n: u64,
    /// τ_X, start-up (our β).
    pub beta: f64,
    /// 1/b_X, time per word (our τ).
    pub tau: f64,
}

/// The six machines of §2, in the tables' order.
pub const ARCHITECTURES: [&str; 6] = [
    "bus",
    "shared memory",
    "ring",
    "grid",
    "hypercube",
    "switch",
];
/// The five operations, in the tables' order.
pub const OPERATIONS: [&str; 5] = [
    "one to one",
    "one to all",
    "all to all",
    "scatter",
    "multiscatter",
];

/// One cell.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Cell {
    /// 1 or 2.
    pub table: u8,
    /// One of [`ARCHITECTURES`].
    pub architecture: &'static str,
    /// One of [`OPERATIONS`].
    pub operation: &'static str,
    /// The topology that ran.
    pub topology: String,
    /// The printed entry, evaluated.
    pub printed: f64,
    /// Our corrected upper bound (docs/errata.md, seed 004).
    pub corrected: f64,
    /// The exact (simulated) time of the paper's algorithm for the cell.
    pub exact: f64,
    /// The registry name of that algorithm.
    pub algorithm: String,
    /// The best time of any registry algorithm on the machine.
    pub best: f64,
    /// Which algorithm that is.
    pub best_algorithm: String,
    /// Elements per message or block that ran.
    pub len: u64,
    /// Whether every schedule of the cell verified.
    pub verified: bool,
}

fn op_of(row: usize) -> OpKind {
    [
        OpKind::P2p,
        OpKind::Broadcast,
        OpKind::Allgather,
        OpKind::Scatter,
        OpKind::Alltoall,
    ][row]
}

/// The machine of architecture `a` with its model.
fn machine(a: usize, p: &Params004) -> Result<(Topology, Model), Error> {
    let k = p.k;
    let base = Model::new(p.beta, p.tau)?;
    let bad = |reason: String| Error::InvalidParameter {
        what: "--nodes",
        reason,
    };
    let (name, model) = match a {
        0 => (format!("bus:{k}"), base),
        1 => (format!("shm:{k},{}", p.kstar), base),
        2 => (
            format!("ring:{k}"),
            Model {
                ports: Ports::Split { send: 2, recv: 1 },
                ..base
            },
        ),
        3 => {
            let q = (k as f64).sqrt().round() as u32;
            if q * q != k || q < 2 {
                return Err(bad(format!(
                    "{k}: the grid needs K = Q² with Q ≥ 2 (e.g. 16, 64)"
                )));
            }
            (format!("torus:{q}x{q}"), base)
        }
        4 => {
            if !k.is_power_of_two() || k < 2 {
                return Err(bad(format!(
                    "{k}: the hypercube needs K = 2^n with n ≥ 1 (e.g. 16, 64)"
                )));
            }
            (
                format!("hypercube:{}", k.trailing_zeros()),
                Model {
                    duplex: Duplex::HalfLink,
                    ..base
                },
            )
        }
        _ => (format!("switch:{k}"), base),
    };
    Ok((name.parse()?, model))
}

/// The paper's algorithms for each (architecture, operation), in order of preference
/// (the first that fits and builds is the cell's).
fn paper_algorithms(a: usize, row: usize) -> &'static [&'static str] {
    match (a, row) {
        (0, _) => &["bus"],
        (1, _) => &["shm"],
        (2, 0) | (5, 0) => &["direct"],
        (3, 0) => &["four-path"],
        (2, 1) => &["two-way"],
        (2, 2) => &["ring-daisy-chain"],
        (2, 3) => &["two-way"],
        (2, 4) => &["rotate-drop"],
        // Table 2's entry stands for (3.19), the D_x/D_y broadcast; the paper prefers
        // its second remedy.
        (3, 1) => &["dxdy-axes"],
        (3, 2) => &["alternating-direction"],
        (3, 3) | (3, 4) => &["row-column"],
        (4, 0) => &["multipath"],
        (4, 1) => &["sbt"],
        (4, 2) => &["tea2-grouped", "adea"],
        (4, 3) => &["sbt"],
        (4, 4) => &["mtadea"],
        // The switch: the cell takes the fastest of the paper's algorithms
        // ([`best_of_the_paper`]).
        (5, 1) => &["binary-tree", "binomial", "one-way"],
        (5, 2) => &["bruck"],
        (5, 3) => &["binomial", "sbt"],
        _ => &["dimension-exchange", "two-pass-exchange", "bruck"],
    }
}

/// Whether the cell of architecture `a` is the fastest of the paper's algorithms that
/// fit (the switch, for which §3 gives several: the ring, recursive doubling and the
/// binary tree for one to all; the two-pass and one-permutation exchanges for the
/// multiscatter), rather than the first that fits.
fn best_of_the_paper(a: usize) -> bool {
    a == 5
}

/// The `len` of row `row` on architecture `a`.
fn len_of(a: usize, row: usize, p: &Params004) -> u64 {
    let k = p.k as u64;
    let m = match row {
        0 | 1 => p.n,
        2 | 3 => p.n / k,
        _ if a >= 4 => p.n.saturating_mul(p.n) / (k * k),
        _ => p.n / (k * k),
    };
    m.max(1)
}

/// An upper bound of the best pipeline of `m` elements over `d` hops
/// (ν ∈ 1..=m, [`crate::algorithms::pipeline::time`]): the paper's
/// (√(mτ) + √((d − 1)β))² ≤ 2(mτ + (d − 1)β), plus what a whole ν = ⌈ν*⌉ and packets of
/// ⌈m/ν⌉ elements add, β + (ν* + d)τ, ν* = √((d − 1)mτ/β). Valid while ν* ≤ m, the
/// paper's own condition on (3.4).
pub fn pipeline_bound(m: f64, d: f64, beta: f64, tau: f64) -> f64 {
    if d <= 1.0 {
        return d * (beta + m * tau);
    }
    let star = if beta > 0.0 {
        ((d - 1.0) * m * tau / beta).sqrt()
    } else {
        m
    };
    2.0 * (m * tau + (d - 1.0) * beta) + beta + (star + d) * tau
}

/// (printed, corrected) for a cell, from the paper's N.
fn forms(a: usize, row: usize, p: &Params004) -> (f64, f64) {
    let (b, t) = (p.beta, p.tau);
    let pipe = |m: f64, d: f64| pipeline_bound(m, d, b, t);
    let k = p.k as f64;
    let s = p.kstar as f64;
    let n = p.n as f64;
    let lg = k.log2();
    let rk = k.sqrt();
    let ku = p.k as u64;
    let ceil = |x: u64, y: u64| x.div_ceil(y.max(1)) as f64;
    match (a, row) {
        // Bus: (3.1), §3.2 (A), (3.26), (3.36), §3.5 (A).
        (0, 0) | (0, 1) => (n * t + b, n * t + b),
        (0, 2) => (n * t + k * b, n * t + k * b),
        (0, 3) => (k * b + n * t, (k - 1.0) * (b + n * t / k)),
        (0, 4) => (n * t + k * b, k * b + (k - 1.0) * n * t / k),
        // Shared memory: one access per processor per round, a message one step.
        (1, 0) => (2.0 * n * t + b, 2.0 * (n * t + b)),
        (1, 1) => (
            (n * t + b) * (1.0 + k / s),
            2.0 * ceil(ku - 1, p.kstar as u64) * (n * t + b),
        ),
        (1, 2) => (
            n * (k + 1.0) * t / s + 2.0 * b / s,
            2.0 * k * ceil(ku - 1, p.kstar as u64) * (b + n * t / k),
        ),
        (1, 3) => (
            (n * t + b) * (k + 1.0) / s,
            2.0 * (k - 1.0) * (b + n * t / k),
        ),
        (1, 4) => (
            2.0 * (n * t + b) * (1.0 + k / s),
            2.0 * (k - 1.0) * ceil(ku, p.kstar as u64) * (b + n * t / (k * k)),
        ),
        // Ring (the ring rule): pipelines by (√a + √b)² ≤ 2(a + b) with i = ⌊k/2⌋.
        (2, 0) | (2, 1) => (2.0 * n * t + k * b, pipe(n, (ku / 2) as f64)),
        (2, 2) => (n * t + k * b, (k - 1.0) * (b + n * t / k)),
        (2, 3) => (n * t / 2.0 + k * b / 2.0, (ku / 2) as f64 * (b + n * t / k)),
        (2, 4) => (
            n * t / 2.0 + k * b,
            (k - 1.0) * b + (k - 1.0) * n * t / (2.0 * k),
        ),
        // Grid √k × √k. One to one, (3.11): four paths (two on 2 × 2) of at most
        // √k + 6 hops, ⌈N/4⌉ each (E42). One to all, (3.19): the D_x/D_y broadcast with
        // ν packets per half takes no longer than the spine tree with 2ν, whose best
        // pipeline over i = 2⌊√k/2⌋ hops is bounded as the ring's (E32, E43).
        (3, 0) => {
            let paths = if p.k == 4 { 2 } else { 4 };
            (
                n * t / 2.0 + (rk + 6.0) * b,
                pipe((p.n.div_ceil(paths)) as f64, rk + 6.0),
            )
        }
        (3, 1) => {
            let i = 2.0 * (rk / 2.0).floor();
            (n * t + rk * b, pipe(n, i))
        }
        (3, 2) => (
            n * t + 2.0 * rk * b,
            (rk - 1.0) * (n * t / rk * (1.0 + 1.0 / rk) + 2.0 * b),
        ),
        (3, 3) => (
            n * t + 2.0 * rk * b,
            (rk / 2.0).floor() * (2.0 * b + (rk + 1.0) * n * t / k),
        ),
        (3, 4) => (
            2.0 * (n * t + rk * b),
            2.0 * (rk - 1.0) * b + (rk - 1.0) * n * t / k,
        ),
        // Hypercube, half-link duplex.
        // Multipath from 0 to its antipode: n paths of n hops, ⌈N/n⌉ each.
        (4, 0) => (2.0 * n * t / lg + (2.0 + lg) * b, pipe((n / lg).ceil(), lg)),
        (4, 1) => (2.0 * (n * t + lg * b), pipe(n, lg)),
        // TEA2 with Eisenstat's grouping under half-link duplex, (4.5)'s bracket:
        // (n + 1)β + (2^{n+1}/n + 2n)mτ with m = N/k (docs/errata.md, E37).
        (4, 2) => (
            2.0 * n * t / lg + 2.0 * lg * b,
            (lg + 1.0) * b + (2.0 * n / lg + 2.0 * lg * n / k) * t,
        ),
        (4, 3) => (n * t + lg * b, lg * b + (k - 1.0) * n * t / k),
        (4, 4) => (
            lg * (n * n * t / k + 2.0 * b),
            lg * (n * n * t / k + 2.0 * b),
        ),
        // Switch, one port per node: (3.22)–(3.25), (3.35), (3.41), T_{5,S}; the
        // fastest of the paper's algorithms (docs/errata.md, E50–E55).
        (5, 0) => (n * t + b, n * t + b),
        (5, 1) => (
            4.0 * (n * t + lg * b),
            binary_tree::bound(p.k, p.n, b, t)
                .min(lg.ceil() * (b + n * t))
                .min(pipe(n, k - 1.0)),
        ),
        (5, 2) => (n * t + lg * b, lg.ceil() * b + (k - 1.0) * n * t / k),
        (5, 3) => (n * t + lg * b, lg.ceil() * b + (k - 1.0) * n * t / k),
        // One permutation per power-of-two shift (Bruck's index algorithm; the
        // dimension exchange on 2^n nodes): b(k) = Σ_{i<k} popcount(i) blocks of N²/k².
        _ => (
            lg * (n * n * t / k + 2.0 * b),
            lg.ceil() * b + bit_sum(p.k) as f64 * n * n * t / (k * k),
        ),
    }
}

/// The collective of `op` on `topo`: root 0, point-to-point from 0 to the farthest node.
fn collective(op: OpKind, topo: &Topology) -> Result<Collective, Error> {
    let k = topo.nodes();
    let far = (0..k)
        .max_by_key(|&d| (topo.distance(0, d), d))
        .unwrap_or(0);
    Collective::new(op, k, Some(0), Some(0), Some(far as u64))
}

/// The problem and the parameters of a cell's run of `algo` (`opt` packets when it
/// is pipelined).
fn setup<'a>(
    algo: &algorithms::Algorithm,
    topo: &'a Topology,
    c: Collective,
    m: u64,
    model: &Model,
) -> (Problem<'a>, Params) {
    let problem = Problem {
        topology: topo,
        collective: c,
        len: m,
        commutative: true,
        counts: None,
    };
    let params = Params {
        packets: if algo.pipelined {
            Packets::Opt
        } else {
            Packets::Count(1)
        },
        model: *model,
    };
    (problem, params)
}

/// Build, verify and time `name` for `op`; `None` if it does not fit or build.
fn run(
    name: &str,
    op: OpKind,
    topo: &Topology,
    c: Collective,
    m: u64,
    model: &Model,
) -> Option<(f64, bool)> {
    let algo = algorithms::find(op, name)?;
    algo.fits(topo).ok()?;
    let (problem, params) = setup(algo, topo, c, m, model);
    let sched = algo.build(&problem, &params).ok()?;
    let ok = verify(problem, sched.as_ref(), Strictness::default()).is_ok();
    Some((simulate(topo, sched.as_ref(), model).time, ok))
}

/// The exact closed form of `name` for `op` under `model` (the packet count `run`
/// uses), if it states one.
pub fn closed_form(
    name: &str,
    op: OpKind,
    topo: &Topology,
    c: Collective,
    m: u64,
    model: &Model,
) -> Option<f64> {
    let algo = algorithms::find(op, name)?;
    let (problem, params) = setup(algo, topo, c, m, model);
    algo.formulas(&problem, &params)
        .into_iter()
        .find(|f| f.is_exact())
        .map(|f| f.value)
}

/// The largest K: every cell builds, verifies and simulates every registry algorithm
/// of its machine, K = 64 in about a second, K = 256 (the next K that is both a square
/// and a power of two) in 20 s.
pub const MAX_NODES: u32 = 64;

/// The largest N, 2^26: the hypercube's and the switch's multiscatter move N² elements
/// in all, which stays below 2^53 (every count exact as `f64`).
pub const MAX_DATA: u64 = 1 << 26;

/// The most max(K, 16) × ν, ν the packets of the longest pipeline
/// ([`pipeline_packets`]): a cell's pipelined algorithms build about ν steps on each of
/// K nodes, and the 30 cells took 2 to 3 s at 2^16 (β = 0, so ν = N: K = 16 and
/// N = 4096, K = 64 and N = 1024), 9 s at 2^18 (K = 64, N = 4096) and 7 s at K = 4,
/// N = 16,384 (below 16 nodes the cost no longer falls with K).
pub const MAX_PIPELINE: u64 = 1 << 16;

/// The packets (ν* = √((K − 1)Nτ/β), at most N; N when β = 0) of a pipeline of N
/// elements over K − 1 hops, the longest a cell runs: within a factor 2 of the count
/// `--packets opt` picks ([`crate::algorithms::pipeline::best`]), computed without its
/// search.
pub fn pipeline_packets(p: &Params004) -> f64 {
    let n = p.n as f64;
    if p.beta > 0.0 {
        ((f64::from(p.k) - 1.0) * n * (p.tau / p.beta))
            .sqrt()
            .min(n)
    } else {
        n
    }
}

/// Refuse parameters whose 30 cells would take more than a few seconds or more memory
/// than there is ([`MAX_NODES`], [`MAX_DATA`], [`MAX_PIPELINE`]), before any run.
pub fn check_size(p: &Params004) -> Result<(), Error> {
    if !(2..=MAX_NODES).contains(&p.k) {
        return Err(Error::InvalidParameter {
            what: "--nodes",
            reason: format!(
                "{}; valid: 4, 16 or 64 (a square and a power of two, at most {MAX_NODES})",
                p.k
            ),
        });
    }
    if p.n > MAX_DATA {
        return Err(Error::InvalidParameter {
            what: "--data",
            reason: format!("{}; valid: 1..={MAX_DATA} (2^26)", p.n),
        });
    }
    let most = MAX_PIPELINE / u64::from(p.k.max(16));
    let fits = |n: u64| pipeline_packets(&Params004 { n, ..*p }) <= most as f64;
    if !fits(p.n) {
        // The largest N that fits: ν grows with N.
        let (mut lo, mut hi) = (1u64, p.n);
        while lo + 1 < hi {
            let mid = lo + (hi - lo) / 2;
            if fits(mid) {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        return Err(Error::InvalidParameter {
            what: "--data",
            reason: format!(
                "{}: with K = {}, β = {} and τ = {} the longest pipeline takes about {:.0} \
                 packets, more than {most} (2^16 / max(K, 16)), the limit for the \
                 tables; valid: 1..={lo} for these K, β and τ (a larger β or a smaller τ \
                 takes fewer packets)",
                p.n,
                p.k,
                p.beta,
                p.tau,
                pipeline_packets(p)
            ),
        });
    }
    Ok(())
}

/// The 30 cells for `p`, table 1 (bus, shared memory, ring) then table 2 (grid,
/// hypercube, switch), row by row.
pub fn cells(p: &Params004) -> Result<Vec<Cell>, Error> {
    check_size(p)?;
    if !(1..=p.k).contains(&p.kstar) {
        return Err(Error::InvalidParameter {
            what: "--kstar",
            reason: format!("{}; valid: 1..={} (1 ≤ k* ≤ K)", p.kstar, p.k),
        });
    }
    if p.n == 0 {
        return Err(Error::InvalidParameter {
            what: "--data",
            reason: "0; valid: 1 or more".into(),
        });
    }
    let machines: Vec<(Topology, Model)> =
        (0..6).map(|a| machine(a, p)).collect::<Result<_, _>>()?;
    let mut out = Vec::new();
    for (table, archs) in [(1u8, [0usize, 1, 2]), (2, [3, 4, 5])] {
        for row in 0..5 {
            for &a in &archs {
                let (topo, model) = &machines[a];
                let op = op_of(row);
                let m = len_of(a, row, p);
                let c = collective(op, topo)?;
                let (printed, corrected) = forms(a, row, p);
                let mut verified = true;
                let (mut exact, mut algorithm) = (f64::NAN, String::from("none"));
                for name in paper_algorithms(a, row) {
                    if let Some((t, ok)) = run(name, op, topo, c, m, model) {
                        verified &= ok;
                        // The grid's and the hypercube's algorithms state an exact
                        // closed form under the cell's model: it must be the
                        // simulated time.
                        if a == 3 || a == 4 {
                            verified &= closed_form(name, op, topo, c, m, model)
                                .is_none_or(|f| (f - t).abs() <= 1e-9 * f.abs().max(1.0));
                        }
                        if !(t >= exact) {
                            exact = t;
                            algorithm = name.to_string();
                        }
                        if !best_of_the_paper(a) {
                            break;
                        }
                    }
                }
                let (mut best, mut best_algorithm) = (f64::INFINITY, String::from("none"));
                for algo in algorithms::fitting(topo, op) {
                    if let Some((t, ok)) = run(algo.name, op, topo, c, m, model) {
                        if ok && t < best {
                            best = t;
                            best_algorithm = algo.name.to_string();
                        }
                    }
                }
                out.push(Cell {
                    table,
                    architecture: ARCHITECTURES[a],
                    operation: OPERATIONS[row],
                    topology: topo.to_string(),
                    printed,
                    corrected,
                    exact,
                    algorithm,
                    best,
                    best_algorithm,
                    len: m,
                    verified,
                });
            }
        }
    }
    Ok(out)
}
