//! `hypercomm bench`: latency and bandwidth over message sizes.
//!
//! **OSU micro-benchmark conventions.** The size is the bytes of one message as OSU
//! counts it: a rank's contribution for all-gather and gather, a block for scatter,
//! all-to-all and reduce-scatter, the whole vector otherwise. Sizes double from
//! `--min-size` to `--max-size` (1 B to 1 MiB by default). For every size each rank
//! runs `warmup` untimed calls, then `iters` timed calls, each followed by a barrier
//! (outside the timing; `--barrier`, [`hypercomm_rt::Barrier`]); a rank's latency is its mean; the table gives the average,
//! minimum and maximum of the ranks' latencies. Each algorithm's calls run in a block
//! of their own, as OSU's; with `--interleave` the algorithms of a size take turns call
//! by call (warm-up rounds first), so that two algorithms' ratio is measured side by
//! side under the same load. Default iterations are OSU's: 1000
//! (200 warm-up) up to 8 KiB, 100 (10) above. Elements are bytes (`u8`), reductions sum
//! them (wrapping).
//!
//! **nccl-tests columns.** `algbw = S / t` with `t` the average latency and `S` the
//! bytes nccl-tests counts: the whole buffer, `k · size` for all-gather, all-to-all,
//! reduce-scatter, gather and scatter, `size` for the others; `busbw = algbw · f` with
//! nccl-tests' factors: all-reduce `2(k−1)/k`; all-gather, reduce-scatter, all-to-all,
//! gather, scatter `(k−1)/k`; broadcast, reduce, p2p 1 (scans, which nccl-tests lacks,
//! 1).
//!
//! **Model and reference.** `predicted` is the cost simulator's time for the algorithm
//! that ran at that size under the calibration in use (β, τ per byte), plus its local
//! copies at τ per byte ([`predict`](super::predict)), and the ratio measured / predicted. `memcpy` is measured in the same run, right after each size,
//! by rank 0 alone while the others wait: one thread copying `S` bytes between two
//! buffers, the best of 5 trials; `busbw / memcpy` says how close the collective comes to moving
//! every byte once at memory speed.

use std::hint::black_box;
use std::time::{Duration, Instant};

use hypercomm::collective::{Collective, OpKind};
use hypercomm::schedule::Rank;
use hypercomm_rt::{Barrier, Comm, Transport};
use serde::Serialize;

use super::{
    buffer_lens, in_place_offset, invoke, invoke_in_place, predict_with, schedule_digest,
    try_buffer, AlgoChoice, CalibrationInfo, ReduceOp,
};

/// Sizes above this many bytes take OSU's "large" iteration counts.
pub const LARGE: usize = 8192;

/// A validated `bench`.
#[derive(Clone, Debug)]
pub struct BenchConfig {
    /// The collective with its root, source and destination.
    pub collective: Collective,
    /// Number of ranks.
    pub ranks: u32,
    /// The algorithms to time, side by side at each size.
    pub algos: Vec<AlgoChoice>,
    /// `--shape`: the ranks' layout for the algorithms that take one (`product`).
    pub shape: Option<hypercomm::algorithms::Shape>,
    /// Message sizes in bytes, ascending.
    pub sizes: Vec<usize>,
    /// Timed iterations per size (`None`: OSU's defaults).
    pub iters: Option<u64>,
    /// Warm-up iterations per size (`None`: OSU's defaults).
    pub warmup: Option<u64>,
    /// The operator of reductions.
    pub reduce: ReduceOp,
    /// Whether to time the in-place form ([`super::invoke_in_place`]).
    pub in_place: bool,
    /// Whether to time each algorithm's persistent form beside it ([`super::plan`]).
    pub persistent: bool,
    /// `--interleave`: the algorithms of a size take turns call by call, instead of
    /// each timing its calls in a block of their own.
    pub interleave: bool,
    /// The barrier between two timed calls.
    pub barrier: Barrier,
    /// `--skew` of a variable-count collective's counts ([`super::draw_counts`]).
    pub skew: f64,
}

impl BenchConfig {
    /// (timed, warm-up) iterations at `size` bytes.
    pub fn iterations(&self, size: usize) -> (u64, u64) {
        let (iters, warmup) = if size > LARGE { (100, 10) } else { (1000, 200) };
        (self.iters.unwrap_or(iters), self.warmup.unwrap_or(warmup))
    }

    /// Number of (size, algorithm) points (the persistent call is part of its point).
    pub fn points(&self) -> usize {
        self.sizes.len() * self.algos.len()
    }
}

/// One rank's measurement of one (size, algorithm).
#[derive(Clone, Debug, PartialEq)]
pub struct RankPoint {
    /// Message size in bytes.
    pub size: usize,
    /// Index into [`BenchConfig::algos`].
    pub algo: usize,
    /// The algorithm that ran (auto's choice).
    pub algorithm: &'static str,
    /// Whether the call was the persistent one (planned once, run per call).
    pub persistent: bool,
    /// Timed iterations.
    pub iters: u64,
    /// This rank's mean latency, seconds.
    pub latency: f64,
    /// memcpy bandwidth in bytes/s at this size (rank 0, on the size's first point).
    pub memcpy: Option<f64>,
}

/// nccl-tests' (bytes counted by algbw, busbw factor) for `kind` at `size` bytes.
pub fn nccl(kind: OpKind, k: u32, size: usize) -> (usize, f64) {
    let kf = f64::from(k);
    let whole = size * k as usize;
    match kind {
        OpKind::Allreduce => (size, 2.0 * (kf - 1.0) / kf),
        OpKind::Allgather
        | OpKind::ReduceScatter
        | OpKind::Alltoall
        | OpKind::Gather
        | OpKind::Scatter
        | OpKind::Allgatherv
        | OpKind::ReduceScatterv
        | OpKind::Alltoallv
        | OpKind::Gatherv
        | OpKind::Scatterv => (whole, (kf - 1.0) / kf),
        // The host sends a block to each of the k − 1 others.
        OpKind::Download => (size * (k as usize).saturating_sub(1), 1.0),
        OpKind::Broadcast
        | OpKind::Reduce
        | OpKind::P2p
        | OpKind::Scan
        | OpKind::ExclusiveScan
        | OpKind::Transpose => (size, 1.0),
    }
}

/// Bytes per second of one thread copying `bytes` bytes: the best of 5 trials of at
/// least `budget / 5` each (the best, as STREAM reports, so that a trial interrupted by
/// another process does not lower the reference).
pub fn memcpy_bandwidth(bytes: usize, budget: Duration) -> Option<f64> {
    if bytes == 0 {
        return None;
    }
    // No reference rather than an abort if memory is short.
    let src = try_buffer(bytes, "--max-size", "memcpy's source", |_| 1u8).ok()?;
    let mut dst = try_buffer(bytes, "--max-size", "memcpy's destination", |_| 0u8).ok()?;
    dst.copy_from_slice(&src); // fault the pages in
    let batch = (1 << 16) / bytes + 1;
    let trial = budget / 5;
    let mut best: f64 = 0.0;
    for _ in 0..5 {
        let start = Instant::now();
        let mut copies = 0u64;
        while copies == 0 || start.elapsed() < trial {
            for _ in 0..batch {
                dst.copy_from_slice(black_box(&src));
                black_box(&mut dst);
            }
            copies += batch as u64;
        }
        best = best.max(bytes as f64 * copies as f64 / start.elapsed().as_secs_f64());
    }
    Some(best)
}

/// Rank `comm.rank()`'s part of `cfg`; `progress` is called after each point.
pub fn bench_rank<X: Transport>(
    comm: &mut Comm<X>,
    cfg: &BenchConfig,
    progress: &dyn Fn(),
) -> hypercomm_rt::Result<Vec<RankPoint>> {
    let (k, r, c) = (comm.size(), comm.rank(), cfg.collective);
    let op = cfg.reduce.op::<u8>();
    let mut points = Vec::with_capacity(cfg.points() * (1 + usize::from(cfg.persistent)));
    for &size in &cfg.sizes {
        // A variable-count collective's counts at this size: `size` elements (bytes)
        // on average, skewed by --skew, drawn from the size.
        let counts = super::draw_counts(c, k, size, cfg.skew, size as u64);
        let (in_len, out_len) = buffer_lens(c, k, size, counts.as_ref(), r);
        let fill = (r % 251) as u8 + 1;
        let input = try_buffer(in_len, "--max-size", &format!("rank {r}'s input"), |_| fill)?;
        let mut output = try_buffer(out_len, "--max-size", &format!("rank {r}'s output"), |_| 0)?;
        if matches!(c, Collective::Broadcast { root } if root == r) {
            output.copy_from_slice(&input);
        }
        if cfg.in_place {
            // The rank's data where the in-place form expects it.
            let at = in_place_offset(c, r, size);
            output[at..at + input.len()].copy_from_slice(&input);
        }
        let (iters, warmup) = cfg.iterations(size);
        let first = points.len();
        let groups = timed_together(cfg.algos.len(), cfg.interleave);
        let plain = |comm: &mut Comm<X>, output: &mut [u8], algo| {
            if cfg.in_place {
                invoke_in_place(comm, c, output, &op, algo)
            } else {
                invoke(comm, c, size, counts.as_ref(), &input, output, &op, algo)
            }
        };
        for group in groups {
            // Each algorithm's forms: its plain call, and with --persistent the
            // persistent form of what the plain call runs (auto's choice, so both run
            // the same schedule), planned once; auto's measured pick may be the
            // backend's own collective, which has no plan: then the model's choice.
            let mut forms = Vec::with_capacity(2 * group.len());
            for &index in &group {
                let choice = &cfg.algos[index];
                let algo = choice.algo_in(cfg.shape.as_ref());
                forms.push((index, algo, None));
                if cfg.persistent && *choice != AlgoChoice::Native {
                    let ran = plain(comm, &mut output, algo)?;
                    let planned = match choice {
                        AlgoChoice::Auto if ran.algorithm != hypercomm_rt::NATIVE => {
                            hypercomm_rt::Algo::Named(ran.algorithm)
                        }
                        _ => algo,
                    };
                    comm.barrier_with(cfg.barrier)?;
                    let (counts, op) = (counts.as_ref(), cfg.reduce.op::<u8>());
                    let plan = super::plan(comm, c, size, counts, op, planned)?;
                    forms.push((index, algo, Some(plan)));
                }
            }
            // The forms take turns call by call, so that a load that comes and goes
            // weighs on all alike.
            let timed = time_calls(
                comm,
                cfg.barrier,
                warmup,
                iters,
                forms.len(),
                |comm, form| {
                    match &forms[form] {
                        (_, _, Some(plan)) => {
                            super::run_planned(comm, plan, &input, &mut output)?;
                        }
                        (_, algo, None) => {
                            plain(comm, &mut output, *algo)?;
                        }
                    }
                    Ok(())
                },
                |comm, _| comm.last_algorithm(),
            )?;
            for ((index, _, plan), (latency, algorithm)) in forms.iter().zip(timed) {
                points.push(RankPoint {
                    size,
                    algo: *index,
                    algorithm: algorithm.unwrap_or(cfg.algos[*index].name()),
                    persistent: plan.is_some(),
                    iters,
                    latency,
                    memcpy: None,
                });
                if plan.is_none() {
                    progress();
                }
            }
        }
        // The reference, measured while the other ranks wait.
        if r == 0 {
            let (bytes, _) = nccl(c.kind(), k, size);
            points[first].memcpy = memcpy_bandwidth(bytes, Duration::from_millis(10));
        }
        comm.barrier_with(cfg.barrier)?;
    }
    Ok(points)
}

/// The indices of `n` algorithms as `bench` times them, one group per [`time_calls`]:
/// all together with `interleave` (their calls in turns), else each alone in a block of
/// its own calls, OSU's way.
pub fn timed_together(n: usize, interleave: bool) -> Vec<Vec<usize>> {
    if interleave {
        vec![(0..n).collect()]
    } else {
        (0..n).map(|i| vec![i]).collect()
    }
}

/// This rank's mean latency (seconds) over `iters` timed calls of each of `forms`
/// forms of a call (`call(comm, form)`, the forms in turn, so that a load that comes
/// and goes weighs on all alike), after `warmup` untimed rounds, each call followed by
/// `barrier` (outside the timing), as the OSU micro-benchmarks time a call; per form,
/// with the algorithm its last call ran (`ran(comm, form)`, asked after the clock has
/// stopped; `None` without calls).
///
/// `call` returns nothing but its error: a caller that copied the call's
/// [`Ran`](hypercomm_rt::Ran) inside the clock waited there for the call's last stores
/// to reach the cache (the copy's wide loads cannot be forwarded from the callee's
/// narrow stores, and on x86 they wait for every older store, a transport's into the
/// peer's queue among them): 75–200 ns at an MPI broadcast's root, which MPI's own
/// call, returning nothing, never paid (`docs/perf-log/2026-11-27-native-dispatch.md`).
pub fn time_calls<X: Transport>(
    comm: &mut Comm<X>,
    barrier: Barrier,
    warmup: u64,
    iters: u64,
    forms: usize,
    mut call: impl FnMut(&mut Comm<X>, usize) -> hypercomm_rt::Result<()>,
    ran: impl Fn(&Comm<X>, usize) -> Option<&'static str>,
) -> hypercomm_rt::Result<Vec<(f64, Option<&'static str>)>> {
    let mut total = vec![Duration::ZERO; forms];
    let mut algorithm = vec![None; forms];
    for i in 0..warmup + iters {
        for form in 0..forms {
            let start = Instant::now();
            let done = call(comm, form);
            let t = start.elapsed();
            done?;
            if i >= warmup {
                total[form] += t;
            }
            algorithm[form] = ran(comm, form);
            comm.barrier_with(barrier)?;
        }
    }
    Ok(total
        .into_iter()
        .zip(algorithm)
        .map(|(t, a)| (t.as_secs_f64() / iters.max(1) as f64, a))
        .collect())
}

/// Every rank's points on every rank, in rank order, by an all-gather over `comm` (for
/// backends whose ranks share no memory). Each rank must pass the points of the same
/// `cfg`; rank 0's memcpy figures are kept.
pub fn gather_bench<X: Transport>(
    comm: &mut Comm<X>,
    local: Vec<RankPoint>,
) -> hypercomm_rt::Result<Vec<Vec<RankPoint>>> {
    let k = comm.size() as usize;
    let words: Vec<u64> = local
        .iter()
        .flat_map(|p| [p.latency.to_bits(), p.memcpy.unwrap_or(f64::NAN).to_bits()])
        .collect();
    let mut all = vec![0u64; words.len() * k];
    comm.all_gather_into(&words, &mut all, hypercomm_rt::Algo::Auto)?;
    Ok((0..k)
        .map(|rank| {
            let w = &all[rank * words.len()..(rank + 1) * words.len()];
            local
                .iter()
                .zip(w.chunks(2))
                .map(|(p, w)| RankPoint {
                    latency: f64::from_bits(w[0]),
                    memcpy: Some(f64::from_bits(w[1])).filter(|x| !x.is_nan()),
                    ..p.clone()
                })
                .collect()
        })
        .collect())
}

/// One row of the table.
#[derive(Clone, Debug, Serialize)]
pub struct BenchRow {
    /// The algorithm that ran.
    pub algo: String,
    /// Whether auto chose it.
    pub auto: bool,
    /// Message size in bytes (OSU's).
    pub size: usize,
    /// Bytes algbw counts (nccl-tests' S).
    pub bytes: usize,
    /// The persistent call (`bench --persistent`): planned once, run per call.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub persistent: bool,
    /// Timed iterations.
    pub iters: u64,
    /// Average over ranks of the mean latency, µs.
    pub avg_us: f64,
    /// Minimum over ranks, µs.
    pub min_us: f64,
    /// Maximum over ranks, µs.
    pub max_us: f64,
    /// S / avg, GB/s (10^9 B/s).
    pub algbw_gbps: f64,
    /// algbw × nccl-tests' factor, GB/s.
    pub busbw_gbps: f64,
    /// The cost model's time, µs.
    pub predicted_us: Option<f64>,
    /// avg / predicted.
    pub measured_over_predicted: Option<f64>,
    /// memcpy of S bytes on one thread, GB/s.
    pub memcpy_gbps: Option<f64>,
    /// A digest of the schedule that ran, 16 hex digits ([`schedule_digest`]): rows of
    /// one size with one digest ran one schedule under two names (`recursive-doubling`
    /// and `dimension-exchange` on 2^n ranks); `None` for native.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub schedule: Option<String>,
    /// busbw / memcpy.
    pub busbw_over_memcpy: Option<f64>,
    /// A persistent row's avg / the avg of the plain call of the same algorithm and
    /// size, measured just before it in the same run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub persistent_over_plain: Option<f64>,
}

/// What `hypercomm bench` prints.
#[derive(Clone, Debug, Serialize)]
pub struct BenchReport {
    /// The backend.
    pub backend: String,
    /// The collective.
    pub op: String,
    /// The root of a rooted collective.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub root: Option<Rank>,
    /// Number of ranks.
    pub ranks: u32,
    /// The ranks' layout of the algorithms that take one (`--shape`), if given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shape: Option<String>,
    /// The reduction operator (reductions only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reduce_op: Option<ReduceOp>,
    /// nccl-tests' bus-bandwidth factor.
    pub busbw_factor: f64,
    /// The calibration the predictions (and auto) use.
    pub calibration: CalibrationInfo,
    /// The barrier between two timed calls (`recursive-doubling` or `tree`).
    pub barrier: String,
    /// Whether each plain row is followed by its persistent one (`--persistent`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub persistent: bool,
    /// Whether the algorithms of a size took turns call by call (`--interleave`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub interleave: bool,
    /// One row per size and algorithm, sizes ascending.
    pub rows: Vec<BenchRow>,
}

impl BenchReport {
    /// Combine every rank's points (`ranks[r]` is rank r's); `execution` as for
    /// [`super::predict`].
    pub fn new(
        cfg: &BenchConfig,
        backend: &str,
        calibration: &CalibrationInfo,
        ranks: &[Vec<RankPoint>],
        execution: super::Execution,
    ) -> Self {
        let (c, k) = (cfg.collective, cfg.ranks);
        let kind = c.kind();
        let mut memcpy = None;
        let avg_of =
            |i: usize| ranks.iter().map(|pts| pts[i].latency).sum::<f64>() / ranks.len() as f64;
        let rows = ranks[0]
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let lat: Vec<f64> = ranks.iter().map(|pts| pts[i].latency).collect();
                let avg = avg_of(i);
                // The plain call of a persistent one is the point before it.
                let persistent_over_plain = (p.persistent && i > 0)
                    .then(|| avg_of(i - 1))
                    .filter(|&plain| plain > 0.0)
                    .map(|plain| avg / plain);
                let min = lat.iter().copied().fold(f64::INFINITY, f64::min);
                let max = lat.iter().copied().fold(0.0, f64::max);
                let (bytes, factor) = nccl(kind, k, p.size);
                let algbw = if avg > 0.0 {
                    bytes as f64 / avg / 1e9
                } else {
                    0.0
                };
                let busbw = algbw * factor;
                if p.algo == 0 && !p.persistent {
                    memcpy = p.memcpy.map(|b| b / 1e9);
                }
                let entry = super::registry_entry(kind, p.algorithm);
                let counts =
                    entry.and_then(|_| super::draw_counts(c, k, p.size, cfg.skew, p.size as u64));
                let call = (c, k, p.size as u64, counts.as_ref());
                let shape = |a: &hypercomm::algorithms::Algorithm| {
                    cfg.shape.as_ref().filter(|_| a.takes_shape())
                };
                let opt = hypercomm::algorithms::Packets::Opt;
                let model = calibration.calibration();
                let predicted = entry.and_then(|a| {
                    predict_with(call, 1, a, opt, shape(a), model, cfg.in_place, execution)
                });
                let schedule = entry
                    .and_then(|a| schedule_digest(call, 1, a, opt, shape(a), model))
                    .map(|d| format!("{d:016x}"));
                BenchRow {
                    algo: p.algorithm.to_string(),
                    auto: cfg.algos[p.algo] == AlgoChoice::Auto,
                    size: p.size,
                    bytes,
                    persistent: p.persistent,
                    iters: p.iters,
                    avg_us: avg * 1e6,
                    min_us: min * 1e6,
                    max_us: max * 1e6,
                    algbw_gbps: algbw,
                    busbw_gbps: busbw,
                    predicted_us: predicted.map(|t| t * 1e6),
                    measured_over_predicted: predicted.filter(|&t| t > 0.0).map(|t| avg / t),
                    memcpy_gbps: memcpy,
                    busbw_over_memcpy: memcpy.filter(|&m| m > 0.0).map(|m| busbw / m),
                    persistent_over_plain,
                    schedule,
                }
            })
            .collect();
        BenchReport {
            backend: backend.to_string(),
            op: kind.to_string(),
            root: c.root().filter(|_| kind.has_root()),
            ranks: k,
            shape: cfg.shape.map(|s| s.to_string()),
            reduce_op: kind.is_reduction().then_some(cfg.reduce),
            busbw_factor: nccl(kind, k, 1).1,
            calibration: calibration.clone(),
            barrier: cfg.barrier.to_string(),
            persistent: cfg.persistent,
            interleave: cfg.interleave,
            rows,
        }
    }
}
