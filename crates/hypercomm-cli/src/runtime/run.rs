//! `hypercomm run`: one collective on random data, checked and timed.
//!
//! Each rank makes the call once untimed (the warm-up: the runtime chooses and plans the
//! algorithm then, as a real application's first call does), then `iters` timed calls:
//! before each it poisons its output and meets the others at a barrier, and after each
//! it meets them again before checking (ranks that share a CPU would otherwise time
//! each other's checks). The output of every call, the warm-up's too, is checked
//! against the serial reference
//! ([`super::data`]). A call's time is the slowest rank's; the report gives the median
//! over the timed calls (one call alone swings severalfold from run to run) and the
//! fastest.

use std::time::Instant;

use hypercomm::algorithms::{Packets, Shape};
use hypercomm::collective::Collective;
use hypercomm::counts::Counts;
use hypercomm::schedule::Rank;
use hypercomm::verify::Problem;
use hypercomm_rt::exec::{Buffers, Plan};
use hypercomm_rt::{Comm, Ran, Transport};
use serde::Serialize;

use super::{
    buffer_lens, data, invoke, predict_with, try_buffer, AlgoChoice, CalibrationInfo, ReduceOp,
};

/// Size of a `run` element in bytes (`u64`).
pub const ELEM_BYTES: usize = 8;

/// A validated `run`: what every rank executes.
#[derive(Clone, Debug)]
pub struct RunConfig {
    /// The collective with its root, source and destination.
    pub collective: Collective,
    /// Number of ranks.
    pub ranks: u32,
    /// Elements per message (per block for blocked collectives).
    pub len: usize,
    /// The algorithm, or auto.
    pub algo: AlgoChoice,
    /// `--shape`: the ranks' layout for an algorithm that takes one (`product`).
    pub shape: Option<Shape>,
    /// `opt` goes through the collective API; a count (named algorithms only) builds
    /// that schedule and runs it with `Comm::execute`.
    pub packets: Packets,
    /// The operator of reductions.
    pub reduce: ReduceOp,
    /// Seed of the random input.
    pub seed: u64,
    /// Corrupt one element of one rank's result (of the last call) before the check.
    pub inject_error: bool,
    /// Timed calls, after the untimed warm-up (at least 1).
    pub iters: usize,
    /// The counts of a variable-count collective (drawn from the seed with `--skew`,
    /// [`super::draw_counts`]); `None` for the others.
    pub counts: Option<Counts>,
    /// `--skew` of those counts.
    pub skew: f64,
}

impl RunConfig {
    /// The same run with input and counts from `seed` (the MPI binary's ranks take
    /// rank 0's: counts drawn from different seeds would disagree between ranks).
    pub fn reseed(&mut self, seed: u64) {
        self.seed = seed;
        self.counts = super::draw_counts(self.collective, self.ranks, self.len, self.skew, seed);
    }
}

/// The first element of a rank's output that differs from the reference.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Mismatch {
    /// The rank.
    pub rank: Rank,
    /// The element's index in the rank's output buffer.
    pub index: usize,
    /// The reference's value.
    pub expected: u64,
    /// The value found.
    pub got: u64,
}

/// One rank's outcome of a run.
#[derive(Clone, Debug, PartialEq)]
pub struct RankResult {
    /// The rank.
    pub rank: Rank,
    /// Seconds of each timed call on this rank, in order.
    pub times: Vec<f64>,
    /// The algorithm that ran.
    pub algorithm: &'static str,
    /// Whether `auto` chose it.
    pub auto: bool,
    /// Elements compared with the reference.
    pub checked: usize,
    /// The first wrong element (of the first wrong call), if any.
    pub mismatch: Option<Mismatch>,
}

/// The rank whose result `--inject-error` corrupts: the last rank with a checked,
/// non-empty output (or none).
fn victim(cfg: &RunConfig) -> Option<Rank> {
    (0..cfg.ranks).rev().find(|&r| {
        let (_, out) = buffer_lens(cfg.collective, cfg.ranks, cfg.len, cfg.counts.as_ref(), r);
        out > 0 && !(r == 0 && cfg.collective == Collective::ExclusiveScan)
    })
}

/// The value a rank's output holds before each call, so that a call that writes
/// nothing is caught.
const POISON: u64 = 0xDEAD_BEEF_DEAD_BEEF;

/// Rank `comm.rank()`'s part of `cfg`: run the collective once untimed and `cfg.iters`
/// times timed, checking every call's output.
pub fn run_rank<X: Transport>(
    comm: &mut Comm<X>,
    cfg: &RunConfig,
) -> hypercomm_rt::Result<RankResult> {
    let (k, r, m) = (comm.size(), comm.rank(), cfg.len);
    let c = cfg.collective;
    let (in_len, out_len) = buffer_lens(c, k, m, cfg.counts.as_ref(), r);
    let input = try_buffer(in_len, "--len", &format!("rank {r}'s input"), |i| {
        data::element(cfg.seed, r, i)
    })?;
    let mut output = try_buffer(out_len, "--len", &format!("rank {r}'s output"), |_| 0u64)?;
    let bcast_root = matches!(c, Collective::Broadcast { root } if root == r);
    if bcast_root {
        output.copy_from_slice(&input);
    }
    let op = cfg.reduce.op::<u64>();
    let plan = match (cfg.algo, cfg.packets) {
        (AlgoChoice::Named(algo), Packets::Count(_)) => Some(own_plan(cfg, algo, k, r)?),
        _ => None,
    };
    let call = |comm: &mut Comm<X>, output: &mut [u64]| -> hypercomm_rt::Result<Ran> {
        match &plan {
            Some((plan, ran)) => {
                let op = plan.needs_op().then_some(&op);
                comm.execute(plan, Buffers::new(&input, output), op)?;
                Ok(*ran)
            }
            None => invoke(
                comm,
                c,
                m,
                cfg.counts.as_ref(),
                &input,
                output,
                &op,
                cfg.algo.algo_in(cfg.shape.as_ref()),
            ),
        }
    };
    let want = data::expected(c, k, m, cfg.counts.as_ref(), r, cfg.seed, cfg.reduce);
    let check = |output: &[u64]| {
        let w = want.as_ref()?;
        data::first_mismatch(w, output).map(|(index, expected, got)| Mismatch {
            rank: r,
            index,
            expected,
            got,
        })
    };
    // The warm-up, untimed: the choice and the plan are made (and cached) here.
    let mut ran = call(comm, &mut output)?;
    let mut mismatch = check(&output);
    let iters = cfg.iters.max(1);
    let mut times = Vec::with_capacity(iters);
    for i in 0..iters {
        if !bcast_root {
            output.fill(POISON);
        }
        comm.barrier()?;
        let start = Instant::now();
        ran = call(comm, &mut output)?;
        times.push(start.elapsed().as_secs_f64());
        // No rank checks or poisons while another is still in the call: ranks that
        // share a CPU (fibers, or threads time-sliced) would otherwise count that work
        // in each other's times (with 8 fiber ranks on 2 CPUs, 6.4 MB each, the check
        // made the slowest rank's time 3-4x the call's).
        comm.barrier()?;
        if cfg.inject_error && i + 1 == iters && victim(cfg) == Some(r) {
            output[0] ^= 1;
        }
        if mismatch.is_none() {
            mismatch = check(&output);
        }
    }
    Ok(RankResult {
        rank: r,
        times,
        algorithm: ran.algorithm,
        auto: ran.auto,
        checked: want.map_or(0, |w| w.len()),
        mismatch,
    })
}

/// The median of `xs` (the mean of the middle two for an even count; 0 for none).
pub fn median(xs: &[f64]) -> f64 {
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => 0.0,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// The plan of `algo` with an explicit packet count, and what it runs.
fn own_plan(
    cfg: &RunConfig,
    algo: &'static hypercomm::algorithms::Algorithm,
    k: u32,
    r: Rank,
) -> hypercomm_rt::Result<(Plan, Ran)> {
    let topology = crate::config::rt_topology(cfg.collective.kind(), k)?;
    let problem = Problem {
        topology: &topology,
        collective: cfg.collective,
        len: cfg.len as u64,
        commutative: true,
        counts: cfg.counts.as_ref(),
    };
    let params = hypercomm::algorithms::Params {
        packets: cfg.packets,
        model: comm_model(),
    };
    let schedule = match &cfg.shape {
        Some(shape) => algo.build_shaped(&problem, &params, shape)?,
        None => algo.build(&problem, &params)?,
    };
    hypercomm_rt::select::refuse_flawed(algo, problem, schedule.as_ref())?;
    let (in_len, out_len) = buffer_lens(cfg.collective, k, cfg.len, cfg.counts.as_ref(), r);
    let plan = Plan::new(schedule.program(r), k, in_len, out_len)?;
    let ran = Ran {
        op: cfg.collective.kind(),
        algorithm: algo.name,
        auto: false,
        steps: plan.program().steps.len(),
        in_place: false,
    };
    Ok((plan, ran))
}

/// The model an explicit packet count is built under (the count does not depend on it).
fn comm_model() -> hypercomm::cost::model::Model {
    hypercomm::cost::model::Model::default()
}

/// Every rank's [`RankResult`] on every rank, in rank order, by an all-gather over
/// `comm`: for backends whose ranks share no memory (the threads backend returns them
/// from `threads::run`).
pub fn gather_run<X: Transport>(
    comm: &mut Comm<X>,
    local: RankResult,
) -> hypercomm_rt::Result<Vec<RankResult>> {
    let k = comm.size() as usize;
    let m = local.mismatch;
    // Every rank times the same number of calls, so the records have one length.
    let mut words = vec![
        local.checked as u64,
        u64::from(m.is_some()),
        m.map_or(0, |m| m.index as u64),
        m.map_or(0, |m| m.expected),
        m.map_or(0, |m| m.got),
    ];
    words.extend(local.times.iter().map(|t| t.to_bits()));
    let mut all = vec![0u64; words.len() * k];
    comm.all_gather_into(&words, &mut all, hypercomm_rt::Algo::Auto)?;
    Ok(all
        .chunks(words.len())
        .enumerate()
        .map(|(rank, w)| RankResult {
            rank: rank as Rank,
            times: w[5..].iter().map(|&b| f64::from_bits(b)).collect(),
            algorithm: local.algorithm,
            auto: local.auto,
            checked: w[0] as usize,
            mismatch: (w[1] != 0).then_some(Mismatch {
                rank: rank as Rank,
                index: w[2] as usize,
                expected: w[3],
                got: w[4],
            }),
        })
        .collect())
}

/// What `hypercomm run` prints (the JSON object, field for field).
#[derive(Clone, Debug, Serialize)]
pub struct RunReport {
    /// The backend, e.g. `threads`.
    pub backend: String,
    /// The collective.
    pub op: String,
    /// The algorithm that ran (for auto: the one chosen).
    pub algo: String,
    /// The ranks' layout it ran with (`--shape`), if given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shape: Option<String>,
    /// Whether auto chose it.
    pub auto: bool,
    /// Number of ranks.
    pub ranks: u32,
    /// Elements per message.
    pub len: usize,
    /// Bytes per element.
    pub elem_bytes: usize,
    /// Bytes per message.
    pub bytes: usize,
    /// The root of a rooted collective.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub root: Option<Rank>,
    /// Source of p2p.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub src: Option<Rank>,
    /// Destination of p2p.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dst: Option<Rank>,
    /// The reduction operator (reductions only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reduce_op: Option<ReduceOp>,
    /// `opt` or the count asked for.
    pub packets: String,
    /// Seed of the random input.
    pub seed: u64,
    /// Timed calls (after one untimed warm-up).
    pub iters: usize,
    /// Whether every rank's output equals the reference after every call.
    pub correct: bool,
    /// Elements compared after each call, over all ranks.
    pub checked: usize,
    /// The first wrong element (of the lowest rank with one).
    pub mismatch: Option<Mismatch>,
    /// Seconds of a call, the slowest rank's: the median over the timed calls.
    pub time: f64,
    /// The fastest timed call (the slowest rank's time in it).
    pub min: f64,
    /// The fastest rank's time, median over the timed calls.
    pub time_min: f64,
    /// The cost model's time under the calibration, seconds.
    pub predicted: Option<f64>,
    /// `time / predicted` (the median call).
    pub measured_over_predicted: Option<f64>,
    /// The calibration used by auto and the prediction.
    pub calibration: CalibrationInfo,
}

impl RunReport {
    /// Combine every rank's result (`results` in any order, at least one);
    /// `execution` as for [`predict`](super::predict) (what the backend does beyond the papers' model).
    pub fn new(
        cfg: &RunConfig,
        backend: &str,
        calibration: &CalibrationInfo,
        results: &[RankResult],
        execution: super::Execution,
    ) -> Self {
        let c = cfg.collective;
        let kind = c.kind();
        let first = &results[0];
        // Per call: the slowest rank's time, and the fastest's.
        let calls = results.iter().map(|r| r.times.len()).min().unwrap_or(0);
        let per_call = |pick: fn(f64, f64) -> f64, start: f64| -> Vec<f64> {
            (0..calls)
                .map(|i| results.iter().map(|r| r.times[i]).fold(start, pick))
                .collect()
        };
        let slowest = per_call(f64::max, 0.0);
        let time = median(&slowest);
        let min = slowest.iter().copied().reduce(f64::min).unwrap_or(0.0);
        let time_min = median(&per_call(f64::min, f64::INFINITY));
        let mut mismatches: Vec<Mismatch> = results.iter().filter_map(|r| r.mismatch).collect();
        mismatches.sort_by_key(|m| m.rank);
        let predicted = super::registry_entry(kind, first.algorithm).and_then(|a| {
            predict_with(
                (c, cfg.ranks, cfg.len as u64, cfg.counts.as_ref()),
                ELEM_BYTES,
                a,
                cfg.packets,
                cfg.shape.as_ref().filter(|_| a.takes_shape()),
                calibration.calibration(),
                false,
                execution,
            )
        });
        let (root, src, dst) = match c {
            Collective::P2p { src, dst } => (None, Some(src), Some(dst)),
            _ => (c.root(), None, None),
        };
        RunReport {
            backend: backend.to_string(),
            op: kind.to_string(),
            algo: first.algorithm.to_string(),
            shape: cfg.shape.map(|s| s.to_string()),
            auto: first.auto,
            ranks: cfg.ranks,
            len: cfg.len,
            elem_bytes: ELEM_BYTES,
            bytes: cfg.len * ELEM_BYTES,
            root,
            src,
            dst,
            reduce_op: kind.is_reduction().then_some(cfg.reduce),
            packets: match cfg.packets {
                Packets::Opt => "opt".into(),
                Packets::Count(n) => n.to_string(),
            },
            seed: cfg.seed,
            iters: calls,
            correct: mismatches.is_empty(),
            checked: results.iter().map(|r| r.checked).sum(),
            mismatch: mismatches.first().copied(),
            time,
            min,
            time_min,
            predicted,
            measured_over_predicted: predicted.filter(|&p| p > 0.0).map(|p| time / p),
            calibration: calibration.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_odd_even_and_no_calls() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), 2.5);
        assert_eq!(median(&[]), 0.0);
    }

    /// `time` is the median call and `min` the fastest, each call timed by its slowest
    /// rank; `time_min` is the median over calls of each call's fastest rank.
    #[test]
    fn the_report_takes_the_median_call_of_the_slowest_rank() {
        let cfg = RunConfig {
            collective: Collective::Allreduce,
            ranks: 2,
            len: 4,
            algo: AlgoChoice::Auto,
            shape: None,
            packets: Packets::Opt,
            reduce: ReduceOp::Sum,
            seed: 1,
            inject_error: false,
            iters: 3,
            counts: None,
            skew: 0.0,
        };
        let result = |rank, times: [f64; 3]| RankResult {
            rank,
            times: times.to_vec(),
            algorithm: "ring",
            auto: true,
            checked: 4,
            mismatch: None,
        };
        let results = [result(0, [5.0, 1.0, 2.0]), result(1, [4.0, 3.0, 9.0])];
        let cal = CalibrationInfo::new(hypercomm_rt::Calibration::default(), None);
        let r = RunReport::new(
            &cfg,
            "test",
            &cal,
            &results,
            super::super::Execution::default(),
        );
        // Slowest per call: 5, 3, 9; fastest per call: 4, 1, 2.
        assert_eq!((r.time, r.min, r.time_min, r.iters), (5.0, 3.0, 2.0, 3));
    }
}
