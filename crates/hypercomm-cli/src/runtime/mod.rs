//! Running collectives on a runtime backend: the per-rank work of `hypercomm run`,
//! `hypercomm bench` and `hypercomm calibrate`, generic over the transport, and the
//! reports they print.
//!
//! # Reuse by another backend
//!
//! Nothing in this module runs threads (the prediction only borrows the threads
//! backend's placement of ranks on CPUs, `threads::block`). Each command is split in
//! three parts:
//!
//! 1. **per rank**, generic over [`hypercomm_rt::Transport`]: [`run_rank`],
//!    [`bench_rank`], [`calibrate_rank`] take a rank's `&mut Comm<X>` and the validated
//!    configuration ([`RunConfig`], [`BenchConfig`]) and return that rank's measurements
//!    ([`RankResult`], a `Vec<`[`RankPoint`]`>`, ping-pong points);
//! 2. **gathering**: a backend whose ranks share no memory calls [`gather_run`] or
//!    [`gather_bench`] (an all-gather over the same `Comm`) so that rank 0 holds every
//!    rank's measurements; the threads backend gets them straight from
//!    `hypercomm_rt::threads::run`;
//! 3. **reporting**, on one rank: [`RunReport::new`] and [`BenchReport::new`] combine the
//!    ranks' measurements (max time, avg/min/max latency, bandwidths, the cost model's
//!    prediction), and [`output`] renders them as text, JSON or CSV.
//!
//! An MPI binary therefore parses the same arguments ([`crate::args::RtRunArgs`],
//! [`crate::args::BenchArgs`]), validates them with [`crate::config::rt_run`] and
//! [`crate::config::rt_bench`] (passing its own backend name), and on every rank does
//!
//! ```ignore
//! let local = run_rank(&mut comm, &cfg)?;
//! let all = gather_run(&mut comm, local)?;
//! if comm.rank() == 0 {
//!     let report = RunReport::new(&cfg, "mpi", &calibration, &all, Execution::default());
//!     print!("{}", output::run(&report, format));
//! }
//! ```
//!
//! which prints exactly what `hypercomm run --backend threads` prints.
//!
//! # Conventions
//!
//! `run` moves `u64` elements of random data (a seed, printed, makes it reproducible)
//! and checks every rank's result against a serial reference computed here from the
//! same seed ([`data`]), independently of the library's post-conditions. `bench`
//! moves bytes (`u8`), as the OSU micro-benchmarks do: see [`bench`](mod@bench) for the
//! columns.

pub mod bench;
pub mod calibrate;
pub mod data;
pub mod osu;
pub mod output;
pub mod run;

use std::fmt;
use std::str::FromStr;

use bytemuck::Pod;
use hypercomm::algorithms::{self, Algorithm, Packets, Params, Shape};
use hypercomm::collective::{Collective, OpKind};
use hypercomm::cost;
use hypercomm::counts::Counts;
use hypercomm::error::Error;
use hypercomm::schedule::Rank;
use hypercomm::topology::Topology;
use hypercomm::verify::Problem;
use hypercomm_rt::op::{Arith, Bits};
use hypercomm_rt::threads::block;
use hypercomm_rt::{Algo, Calibration, Comm, Op, Persistent, Ran, Transport};
use serde::Serialize;

pub use bench::{bench_rank, gather_bench, BenchConfig, BenchReport, BenchRow, RankPoint};
pub use calibrate::{calibrate_rank, fit, CalibrationSource, PingPong};
pub use run::{gather_run, run_rank, RankResult, RunConfig, RunReport};

/// Which algorithm a call runs: a registry entry, or `auto`.
#[derive(Clone, Copy, Debug)]
pub enum AlgoChoice {
    /// The runtime's choice (`Algo::Auto`).
    Auto,
    /// This registry algorithm (checked to fit the ranks).
    Named(&'static Algorithm),
    /// The backend's own collective ([`hypercomm_rt::NATIVE`]: the MPI backend's
    /// `MPI_Allreduce`, …; the threads backend has none).
    Native,
}

impl PartialEq for AlgoChoice {
    fn eq(&self, other: &Self) -> bool {
        self.name() == other.name()
    }
}

impl AlgoChoice {
    /// The runtime's [`Algo`].
    pub fn algo(self) -> Algo<'static> {
        match self {
            AlgoChoice::Auto => Algo::Auto,
            AlgoChoice::Named(a) => Algo::Named(a.name),
            AlgoChoice::Native => Algo::Named(hypercomm_rt::NATIVE),
        }
    }
    /// The runtime's [`Algo`] with the ranks laid out as `shape` if the algorithm takes
    /// one ([`Algorithm::takes_shape`]); the others ignore it.
    pub fn algo_in(self, shape: Option<&Shape>) -> Algo<'_> {
        match (self, shape) {
            (AlgoChoice::Named(a), Some(shape)) if a.takes_shape() => Algo::Shaped {
                name: a.name,
                shape: shape.factors(),
            },
            _ => self.algo(),
        }
    }
    /// `auto` or the algorithm's name.
    pub fn name(self) -> &'static str {
        match self {
            AlgoChoice::Auto => "auto",
            AlgoChoice::Named(a) => a.name,
            AlgoChoice::Native => hypercomm_rt::NATIVE,
        }
    }
}

/// The reduction operator of `--reduce-op` (integers wrap).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ReduceOp {
    /// Wrapping sum.
    #[default]
    Sum,
    /// Wrapping product.
    Prod,
    /// Minimum.
    Min,
    /// Maximum.
    Max,
    /// Bitwise and.
    Band,
    /// Bitwise or.
    Bor,
    /// Bitwise exclusive or.
    Bxor,
}

impl ReduceOp {
    /// Every operator, in the order of `--help`.
    pub const ALL: [ReduceOp; 7] = [
        ReduceOp::Sum,
        ReduceOp::Prod,
        ReduceOp::Min,
        ReduceOp::Max,
        ReduceOp::Band,
        ReduceOp::Bor,
        ReduceOp::Bxor,
    ];

    /// The name `--reduce-op` takes.
    pub fn name(self) -> &'static str {
        match self {
            ReduceOp::Sum => "sum",
            ReduceOp::Prod => "prod",
            ReduceOp::Min => "min",
            ReduceOp::Max => "max",
            ReduceOp::Band => "band",
            ReduceOp::Bor => "bor",
            ReduceOp::Bxor => "bxor",
        }
    }

    /// The runtime's operator.
    pub fn op<T: Arith + Bits>(self) -> Op<'static, T> {
        match self {
            ReduceOp::Sum => Op::sum(),
            ReduceOp::Prod => Op::product(),
            ReduceOp::Min => Op::min(),
            ReduceOp::Max => Op::max(),
            ReduceOp::Band => Op::bit_and(),
            ReduceOp::Bor => Op::bit_or(),
            ReduceOp::Bxor => Op::bit_xor(),
        }
    }

    /// `a ⊕ b`, computed here (the serial reference does not use the runtime's
    /// operators).
    pub fn apply(self, a: u64, b: u64) -> u64 {
        match self {
            ReduceOp::Sum => a.wrapping_add(b),
            ReduceOp::Prod => a.wrapping_mul(b),
            ReduceOp::Min => a.min(b),
            ReduceOp::Max => a.max(b),
            ReduceOp::Band => a & b,
            ReduceOp::Bor => a | b,
            ReduceOp::Bxor => a ^ b,
        }
    }
}

impl fmt::Display for ReduceOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for ReduceOp {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self, Error> {
        let t = s.trim().to_ascii_lowercase();
        let alias = match t.as_str() {
            "product" => "prod",
            "and" => "band",
            "or" => "bor",
            "xor" => "bxor",
            other => other,
        };
        ReduceOp::ALL
            .into_iter()
            .find(|o| o.name() == alias)
            .ok_or_else(|| Error::InvalidParameter {
                what: "--reduce-op",
                reason: format!(
                    "`{s}`; valid: {}",
                    ReduceOp::ALL.map(|o| o.name()).join(" ")
                ),
            })
    }
}

/// The calibration a run uses and where it came from.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CalibrationInfo {
    /// Start-up time β, seconds.
    pub beta: f64,
    /// Time per byte τ, seconds.
    pub tau: f64,
    /// The file it was read from; `None` for the runtime's defaults.
    pub source: Option<String>,
}

impl CalibrationInfo {
    /// The runtime's calibration.
    pub fn calibration(&self) -> Calibration {
        Calibration {
            beta: self.beta,
            tau: self.tau,
        }
    }
    /// From a calibration and its file.
    pub fn new(c: Calibration, source: Option<String>) -> Self {
        CalibrationInfo {
            beta: c.beta,
            tau: c.tau,
            source,
        }
    }
}

/// A buffer of `len` elements, `f(i)` at `i`, whose allocation failing is an error, not
/// an abort of the process: the buffers did not fit in memory after all (the
/// commands check an estimate first, [`crate::config::memory_limit`]). The error is bad
/// input naming `flag`, the option to lower, and `what` the buffer is.
pub fn try_buffer<T>(
    len: usize,
    flag: &'static str,
    what: &str,
    f: impl FnMut(usize) -> T,
) -> hypercomm_rt::Result<Vec<T>> {
    let mut v = Vec::new();
    v.try_reserve_exact(len).map_err(|e| {
        let bytes = (len as u128) * std::mem::size_of::<T>() as u128;
        hypercomm_rt::Error::Library(Error::InvalidParameter {
            what: flag,
            reason: format!("cannot allocate {bytes} bytes for {what}: {e}"),
        })
    })?;
    v.extend((0..len).map(f));
    Ok(v)
}

/// Lengths of rank `r`'s `in` and `out` buffers (elements), with the counts of a
/// variable-count collective.
pub fn buffer_lens(
    c: Collective,
    k: u32,
    m: usize,
    counts: Option<&Counts>,
    r: Rank,
) -> (usize, usize) {
    let m = m as u64;
    (
        c.in_len_with(k, m, counts, r) as usize,
        c.out_len_with(k, m, counts, r) as usize,
    )
}

/// The counts `run` and `bench` give a variable-count collective (`None` for the
/// others): each drawn from `seed`, uniform among the whole numbers in
/// [round((1 − skew)·len), round((1 + skew)·len)] (skew in [0, 1]: 0 makes every count
/// `len`, 1 draws from 0 to 2·len); k counts, or k × k for alltoallv.
pub fn draw_counts(c: Collective, k: u32, len: usize, skew: f64, seed: u64) -> Option<Counts> {
    let kind = c.kind();
    if !kind.is_varcount() {
        return None;
    }
    let (lo, hi) = (
        ((1.0 - skew) * len as f64).round() as u64,
        ((1.0 + skew) * len as f64).round() as u64,
    );
    let mut i = 0u64;
    let mut draw = || {
        i += 1;
        lo + data::element(seed ^ 0x5EED_C0DE, u32::MAX, i as usize) % (hi - lo + 1)
    };
    let n = k as usize;
    Some(if kind == OpKind::Alltoallv {
        Counts::Matrix((0..n).map(|_| (0..n).map(|_| draw()).collect()).collect())
    } else {
        Counts::PerRank((0..n).map(|_| draw()).collect())
    })
}

/// The counts of `counts` as `usize`s: rank `r`'s send and receive counts for
/// alltoallv (row and column), the list otherwise (both).
fn usize_counts(counts: &Counts, r: Rank) -> (Vec<usize>, Vec<usize>) {
    match counts {
        Counts::PerRank(c) => {
            let v: Vec<usize> = c.iter().map(|&x| x as usize).collect();
            (v.clone(), v)
        }
        Counts::Matrix(m) => (
            m[r as usize].iter().map(|&x| x as usize).collect(),
            m.iter().map(|row| row[r as usize] as usize).collect(),
        ),
    }
}

/// Execute `c` through the collective API of `comm`: `input` and `output` are rank
/// `comm.rank()`'s `in` and `out` buffers (of [`buffer_lens`]); `m` is the length.
/// A broadcast runs in place in `output`, which on the root must hold the data.
#[allow(clippy::too_many_arguments)]
pub fn invoke<T: Pod, X: Transport>(
    comm: &mut Comm<X>,
    c: Collective,
    m: usize,
    counts: Option<&Counts>,
    input: &[T],
    output: &mut [T],
    op: &Op<'_, T>,
    algo: Algo<'_>,
) -> hypercomm_rt::Result<Ran> {
    let me = comm.rank();
    if let Some(counts) = counts.filter(|_| c.kind().is_varcount()) {
        let (send, recv) = usize_counts(counts, me);
        return match c {
            Collective::Gatherv { root } => {
                comm.gatherv_into(root, input, (me == root).then_some(output), &recv, algo)
            }
            Collective::Scatterv { root } => {
                comm.scatterv_into(root, (me == root).then_some(input), output, &send, algo)
            }
            Collective::Allgatherv => comm.all_gatherv_into(input, output, &recv, algo),
            Collective::Alltoallv => comm.all_to_allv_into(input, &send, output, &recv, algo),
            _ => comm.reduce_scatter_into(input, output, &recv, op, algo),
        };
    }
    match c {
        Collective::P2p { src, dst } => comm.p2p_into(
            src,
            dst,
            m,
            (me == src).then_some(input),
            (me == dst).then_some(output),
            algo,
        ),
        Collective::Broadcast { root } => comm.broadcast_into(root, output, algo),
        Collective::Scatter { root } => {
            comm.scatter_into(root, (me == root).then_some(input), output, algo)
        }
        Collective::Gather { root } => {
            comm.gather_into(root, input, (me == root).then_some(output), algo)
        }
        Collective::Allgather => comm.all_gather_into(input, output, algo),
        Collective::Alltoall => comm.all_to_all_into(input, output, algo),
        Collective::Reduce { root } => {
            comm.reduce_into(root, input, (me == root).then_some(output), op, algo)
        }
        Collective::Allreduce => comm.all_reduce_into(input, output, op, algo),
        Collective::Scan => comm.scan_into(input, output, op, algo),
        Collective::ExclusiveScan => comm.exclusive_scan_into(input, output, op, algo),
        Collective::ReduceScatter => comm.reduce_scatter_block_into(input, output, op, algo),
        // The host is the last rank; its `in` holds every PE's block.
        Collective::Download => {
            let host = me + 1 == comm.size();
            comm.download_into(host.then_some(input), output, algo)
        }
        // Without counts: every count m.
        Collective::Gatherv { .. }
        | Collective::Scatterv { .. }
        | Collective::Allgatherv
        | Collective::Alltoallv
        | Collective::ReduceScatterv => {
            let counts = Counts::uniform(c.kind(), comm.size(), m as u64);
            invoke(comm, c, m, Some(&counts), input, output, op, algo)
        }
        // Its algorithm runs on torus:QxQ, the runtime's on `complete:k`.
        Collective::Transpose => Err(hypercomm_rt::Error::NoAlgorithm {
            op: c.kind().to_string(),
            ranks: comm.size(),
            why: " (transpose runs on torus:QxQ; the runtime has no transposition yet)",
        }),
    }
}

/// Whether the runtime has a persistent form (`plan_*`, [`hypercomm_rt::persistent`])
/// of `kind`: every collective but p2p, download and transpose (a variable-count one
/// with its counts fixed when planned).
pub fn has_persistent(kind: OpKind) -> bool {
    !matches!(kind, OpKind::P2p | OpKind::Download | OpKind::Transpose)
}

/// Plan `c` with `m` elements per block, or for a variable-count collective with
/// `counts` (every count m without), once ([`has_persistent`]; `plan_*` of
/// [`hypercomm_rt::persistent`]), to run with [`run_planned`].
pub fn plan<'f, T: Pod, X: Transport>(
    comm: &mut Comm<X>,
    c: Collective,
    m: usize,
    counts: Option<&Counts>,
    op: Op<'f, T>,
    algo: Algo<'_>,
) -> hypercomm_rt::Result<Persistent<'f, T>> {
    if c.kind().is_varcount() {
        // Without counts: every count m, as `invoke`.
        let uniform = Counts::uniform(c.kind(), comm.size(), m as u64);
        let (send, recv) = usize_counts(counts.unwrap_or(&uniform), comm.rank());
        return match c {
            Collective::Gatherv { root } => comm.plan_gatherv(root, &recv, algo),
            Collective::Scatterv { root } => comm.plan_scatterv(root, &send, algo),
            Collective::Allgatherv => comm.plan_all_gatherv(&recv, algo),
            Collective::Alltoallv => comm.plan_all_to_allv(&send, &recv, algo),
            _ => comm.plan_reduce_scatter(&recv, op, algo),
        };
    }
    match c {
        Collective::Broadcast { root } => comm.plan_broadcast(root, m, algo),
        Collective::Scatter { root } => comm.plan_scatter(root, m, algo),
        Collective::Gather { root } => comm.plan_gather(root, m, algo),
        Collective::Allgather => comm.plan_all_gather(m, algo),
        Collective::Alltoall => comm.plan_all_to_all(m, algo),
        Collective::Reduce { root } => comm.plan_reduce(root, m, op, algo),
        Collective::Allreduce => comm.plan_all_reduce(m, op, algo),
        Collective::Scan => comm.plan_scan(m, op, algo),
        Collective::ExclusiveScan => comm.plan_exclusive_scan(m, op, algo),
        Collective::ReduceScatter => comm.plan_reduce_scatter_block(m, op, algo),
        other => Err(hypercomm_rt::Error::Library(Error::InvalidParameter {
            what: "--persistent",
            reason: format!("{} has no persistent form", other.kind()),
        })),
    }
}

/// Run `plan` once on rank `comm.rank()`'s `in` and `out` buffers (of [`buffer_lens`],
/// cut to [`Persistent::lens`]: a rooted collective's ranks without a buffer pass an
/// empty one).
pub fn run_planned<T: Pod, X: Transport>(
    comm: &mut Comm<X>,
    plan: &Persistent<'_, T>,
    input: &[T],
    output: &mut [T],
) -> hypercomm_rt::Result<Ran> {
    let (i, o) = plan.lens();
    plan.run(comm, &input[..i], &mut output[..o])
}

/// Whether the collective API has an in-place form of `kind` (broadcast is in place).
pub fn has_in_place(kind: OpKind) -> bool {
    matches!(
        kind,
        OpKind::Allgather
            | OpKind::Allreduce
            | OpKind::Scan
            | OpKind::ExclusiveScan
            | OpKind::Broadcast
    )
}

/// Where rank `r`'s data sits in `out` for the in-place form of `c` with `m` elements
/// per block: its own block for an all-gather, the start otherwise.
pub fn in_place_offset(c: Collective, r: Rank, m: usize) -> usize {
    match c {
        Collective::Allgather => r as usize * m,
        _ => 0,
    }
}

/// The in-place form of `c` ([`has_in_place`]) on `buf`, which holds the rank's data at
/// [`in_place_offset`] (a broadcast's root: the whole message).
pub fn invoke_in_place<T: Pod, X: Transport>(
    comm: &mut Comm<X>,
    c: Collective,
    buf: &mut [T],
    op: &Op<'_, T>,
    algo: Algo<'_>,
) -> hypercomm_rt::Result<Ran> {
    match c {
        Collective::Allgather => comm.all_gather_in_place(buf, algo),
        Collective::Allreduce => comm.all_reduce_in_place(buf, op, algo),
        Collective::Scan => comm.scan_in_place(buf, op, algo),
        Collective::ExclusiveScan => comm.exclusive_scan_in_place(buf, op, algo),
        Collective::Broadcast { root } => comm.broadcast_into(root, buf, algo),
        other => unreachable!("{other} has no in-place form (refused by config::rt_bench)"),
    }
}

/// The cost model's time (seconds) of `algo` for `c` on `k` ranks with `len` elements
/// of `elem_bytes` bytes, under `calibration` (as `Algo::Auto` prices it), plus the
/// schedule's local copies; `None` if the schedule does not build.
///
/// The papers' model, and so the simulator, prices messages only. On a runtime a local
/// copy (an all-gather's own block from `in` to `out`, MTADEA's final transpose) costs
/// what a received byte does (on the threads backend both are one `memcpy`), so the
/// prediction adds the local bytes of the rank with the most, at τ per byte: at 16 MiB
/// on 2 ranks the all-gather's own-block copy is as long as its one exchange.
///
/// With `in_place` (always for a broadcast, which the API runs in place) the form
/// timed is the in-place one: `in` lies in `out` at [`in_place_offset`], and a local
/// copy onto itself (the all-gather's own block, a broadcast root's) costs nothing, as
/// the runtime skips it.
///
/// `execution` says what else the backend does that the papers' model does not
/// ([`Execution`]): copies shared by two cores, ranks sharing CPUs.
#[allow(clippy::too_many_arguments)]
pub fn predict(
    c: Collective,
    k: u32,
    len: u64,
    elem_bytes: usize,
    algo: &Algorithm,
    packets: Packets,
    shape: Option<&Shape>,
    calibration: Calibration,
    in_place: bool,
    execution: Execution,
) -> Option<f64> {
    let call = (c, k, len, None);
    predict_with(
        call,
        elem_bytes,
        algo,
        packets,
        shape,
        calibration,
        in_place,
        execution,
    )
}

/// [`predict`] of a call `(collective, ranks, len, counts)` with the counts of a
/// variable-count collective.
#[allow(clippy::too_many_arguments)]
pub fn predict_with(
    (c, k, len, counts): (Collective, u32, u64, Option<&Counts>),
    elem_bytes: usize,
    algo: &Algorithm,
    packets: Packets,
    shape: Option<&Shape>,
    calibration: Calibration,
    in_place: bool,
    execution: Execution,
) -> Option<f64> {
    let topology = hypercomm_rt::topology_for(c.kind(), k)?;
    let problem = Problem {
        topology: &topology,
        collective: c,
        len,
        commutative: true,
        counts,
    };
    let model = calibration.model(elem_bytes);
    let params = Params { packets, model };
    let schedule = match shape {
        Some(shape) => algo.build_shaped(&problem, &params, shape),
        None => algo.build(&problem, &params),
    }
    .ok()?;
    // A broadcast always runs in place (`broadcast_into` takes one buffer).
    let in_place = in_place || matches!(c, Collective::Broadcast { .. });
    let alias = |r: Rank| in_place.then(|| in_place_offset(c, r, len as usize) as u64);
    let local = local_elements_by_rank(schedule.as_ref(), alias);
    let per_byte = elem_bytes as f64 * calibration.tau;
    let t = match (execution.shared_copy_from, execution.cpus) {
        (_, Some(n)) if n > 0 && (n as u64) < u64::from(k) => {
            let messages = cpu_shared_time(&topology, &model, schedule.as_ref(), n);
            let mut per_cpu = vec![0u64; n];
            for (r, l) in local.iter().enumerate() {
                per_cpu[block(r as Rank, n, k)] += l;
            }
            messages + per_cpu.into_iter().max().unwrap_or(0) as f64 * per_byte
        }
        (shared, _) => {
            let messages = match shared {
                Some(from) => {
                    let programs = shared_copy_programs(schedule.as_ref(), elem_bytes, from);
                    cost::simulate_programs(&topology, &programs, schedule.steps(), &model).time
                }
                None => cost::simulate(&topology, schedule.as_ref(), &model).time,
            };
            messages + local.iter().copied().max().unwrap_or(0) as f64 * per_byte
        }
    };
    Some(if t == 0.0 { 0.0 } else { t })
}

/// What a backend does that the papers' model does not price, for [`predict`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Execution {
    /// Messages of at least this many bytes that the receiver and its idle sender copy
    /// together ([`shared_copy_programs`]): the threads backend, with a CPU per rank
    /// (`hypercomm_rt::threads::SHARED_COPY_FROM`).
    pub shared_copy_from: Option<u64>,
    /// The CPUs the ranks run on, when fewer than the ranks: rank r on CPU ⌊r·n/k⌋ (the
    /// threads backend's blocks), and ranks that share a CPU run their steps one after
    /// another ([`cpu_shared_time`]).
    pub cpus: Option<usize>,
}

/// The rounds timing of `schedule` when its k ranks share `n` < k CPUs in blocks
/// (`hypercomm_rt::threads::block`: rank r on CPU ⌊r·n/k⌋). A CPU runs its ranks one after another (one thread runs them as
/// fibers, or the scheduler time-slices their threads), and the work of a message is
/// its receiver's copy (the threads backend's receiver copies straight from the
/// sender's memory while the sender waits, handing its CPU on): so a round costs the
/// largest, over the CPUs, of the sum of its ranks' receive-side times
/// ([`cost::step_time`] of the step's receives), where the papers' rounds take the
/// largest over the ranks of max(send side, receive side). The two agree when every
/// rank sends what it receives in each step (rings, exchanges). Not counted: an eager
/// message's copy by its sender (small messages), and the half of a large message that
/// a sender on another CPU copies when idle. Ranks are generated one at a time
/// ([`Schedule::program_into`](hypercomm::schedule::Schedule::program_into)), so
/// memory is steps × n, not the whole schedule.
pub fn cpu_shared_time(
    topology: &Topology,
    model: &cost::model::Model,
    schedule: &dyn hypercomm::schedule::Schedule,
    n: usize,
) -> f64 {
    use hypercomm::schedule::{Op as IrOp, Program, Step};
    let (k, n) = (schedule.nodes(), n.max(1));
    let mut work = vec![0.0f64; schedule.steps() * n];
    let mut program = Program::default();
    let mut receives = Step::default();
    for r in 0..k {
        schedule.program_into(r, &mut program);
        let cpu = block(r, n, k);
        for (s, step) in program.steps.iter().enumerate() {
            receives.ops.clear();
            let recvs = step.ops.iter().filter(|op| matches!(op, IrOp::Recv { .. }));
            receives.ops.extend(recvs.cloned());
            if !receives.ops.is_empty() {
                work[s * n + cpu] += cost::step_time(topology, model, r, &receives);
            }
        }
    }
    work.chunks(n)
        .map(|cpus| cpus.iter().copied().fold(0.0, f64::max))
        .sum()
}

/// The programs of `schedule`, with every message that the threads backend copies on
/// two cores halved in length, so that the papers' model prices it at `β + (m/2)τ`.
///
/// The threads backend (`hypercomm_rt::threads`, its module documentation) lets a
/// receiver hand half of a rendezvous of at least `from` bytes, one contiguous piece into
/// one contiguous part, to its sender, which copies it while it waits for its send to be
/// taken. The sender only helps if it is idle, so a message is halved here when, in its
/// step, its sender receives nothing and sends nothing else, both ends are one
/// contiguous region (`count == 1`), and the receive places the data (a combining
/// receive, `CombineLeft`/`CombineRight`, runs on the receiver alone); and only if every
/// rank has a CPU, which the caller decides (`None` for `from` in [`predict`]). Steps in
/// which every rank also receives (a ring's, Bruck's, a dimension exchange's) are priced
/// as before; one-way steps (a broadcast's, SBA's) are halved.
pub fn shared_copy_programs(
    schedule: &dyn hypercomm::schedule::Schedule,
    elem_bytes: usize,
    from: u64,
) -> Vec<hypercomm::schedule::Program> {
    use hypercomm::schedule::{Action, Op as IrOp, Regions};
    use std::collections::HashSet;
    let mut programs: Vec<_> = (0..schedule.nodes()).map(|r| schedule.program(r)).collect();
    let one_piece = |regions: &Regions| regions.len() == 1 && regions[0].count == 1;
    let large = |elems: u64| elems.saturating_mul(elem_bytes as u64) >= from;
    // (step, sender, receiver) of the messages whose sender is idle but for them.
    let mut idle: HashSet<(usize, Rank, Rank)> = HashSet::new();
    for p in &programs {
        for (s, step) in p.steps.iter().enumerate() {
            let receives = step.ops.iter().any(|op| matches!(op, IrOp::Recv { .. }));
            let sends: Vec<_> = step
                .ops
                .iter()
                .filter_map(|op| match op {
                    IrOp::Send { to, from } => Some((to, from)),
                    _ => None,
                })
                .collect();
            if let [(to, regions)] = sends[..] {
                if !receives && to.len() == 1 && one_piece(regions) && large(regions[0].len) {
                    idle.insert((s, p.rank, to[0]));
                }
            }
        }
    }
    // The receivers that take such a message as one piece: halve both ends.
    let mut shared: HashSet<(usize, Rank, Rank)> = HashSet::new();
    for p in &mut programs {
        for (s, step) in p.steps.iter_mut().enumerate() {
            for op in &mut step.ops {
                if let IrOp::Recv { from, into, action } = op {
                    let placed = *action == Action::Place;
                    if placed && one_piece(into) && idle.contains(&(s, *from, p.rank)) {
                        into[0].len = into[0].len.div_ceil(2);
                        shared.insert((s, *from, p.rank));
                    }
                }
            }
        }
    }
    for p in &mut programs {
        for (s, step) in p.steps.iter_mut().enumerate() {
            for op in &mut step.ops {
                if let IrOp::Send { to, from } = op {
                    if to.len() == 1 && shared.contains(&(s, p.rank, to[0])) {
                        from[0].len = from[0].len.div_ceil(2);
                    }
                }
            }
        }
    }
    programs
}

/// The elements the schedule copies locally on the rank that copies the most; with
/// `alias(r) = Some(off)` rank r's `in` lies in its `out` at `off`, and a copy onto
/// itself is no copy.
pub fn local_elements(
    schedule: &dyn hypercomm::schedule::Schedule,
    alias: impl Fn(Rank) -> Option<u64>,
) -> u64 {
    local_elements_by_rank(schedule, alias)
        .into_iter()
        .max()
        .unwrap_or(0)
}

/// The elements each rank copies locally ([`local_elements`]), in rank order.
pub fn local_elements_by_rank(
    schedule: &dyn hypercomm::schedule::Schedule,
    alias: impl Fn(Rank) -> Option<u64>,
) -> Vec<u64> {
    use hypercomm::schedule::{Action, Buf, Op as IrOp};
    (0..schedule.nodes())
        .map(|r| {
            let at = |reg: &hypercomm::schedule::Region| match (reg.buf, alias(r)) {
                (Buf::In, Some(off)) => (Buf::Out, reg.off + off),
                _ => (reg.buf, reg.off),
            };
            schedule
                .stream(r)
                .flat_map(|step| step.ops)
                .map(|op| match op {
                    IrOp::Local { from, into, action }
                        if !(action == Action::Place && at(&from) == at(&into)) =>
                    {
                        from.len
                    }
                    _ => 0,
                })
                .sum::<u64>()
        })
        .collect()
}

/// The registry entry of a name the runtime reported.
pub fn registry_entry(kind: OpKind, name: &str) -> Option<&'static Algorithm> {
    algorithms::find(kind, name)
}

/// Whether a runtime error means bad input (exit 2) rather than a failed run (exit 1):
/// the algorithm, the buffers or the calibration were refused before any data moved.
pub fn is_input_error(e: &hypercomm_rt::Error) -> bool {
    use hypercomm_rt::Error as E;
    matches!(
        e,
        E::Library(_)
            | E::NoAlgorithm { .. }
            | E::NotOrderPreserving { .. }
            | E::BufferLength { .. }
            | E::RootBuffer(_)
            | E::Flawed { .. }
            | E::Calibration(_)
            | E::ZeroSized
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An allocation that cannot succeed is an error naming the option, not an abort.
    #[test]
    fn a_buffer_too_large_is_an_error() {
        let e = try_buffer(usize::MAX / 8, "--len", "rank 0's input", |_| 0u64).unwrap_err();
        assert!(is_input_error(&e), "{e}");
        let e = e.to_string();
        assert!(e.contains("--len") && e.contains("rank 0's input"), "{e}");
        assert_eq!(try_buffer(3, "--len", "x", |i| i * 2).unwrap(), [0, 2, 4]);
    }

    /// The prediction is the simulator's time plus the busiest rank's local copies at τ
    /// per byte: for an all-gather, every rank's own block.
    #[test]
    fn the_prediction_adds_the_local_copies_at_tau_per_byte() {
        let calibration = Calibration {
            beta: 1e-6,
            tau: 1e-9,
        };
        for (k, len) in [(2u32, 1000u64), (3, 7), (4, 1 << 16)] {
            let topology = Topology::complete(k);
            let problem = Problem {
                topology: &topology,
                collective: Collective::Allgather,
                len,
                commutative: true,
                counts: None,
            };
            let algo = algorithms::find(OpKind::Allgather, "ring").unwrap();
            let model = calibration.model(8);
            let params = Params {
                packets: Packets::Count(1),
                model,
            };
            let schedule = algo.build(&problem, &params).unwrap();
            assert_eq!(local_elements(schedule.as_ref(), |_| None), len, "k {k}");
            // In place, the own block is already there: nothing to copy.
            let own = |r: Rank| Some(r as u64 * len);
            assert_eq!(local_elements(schedule.as_ref(), own), 0, "k {k}");
            let messages = cost::simulate(&topology, schedule.as_ref(), &model).time;
            let [got, in_place] = [false, true].map(|in_place| {
                let at = Packets::Count(1);
                predict(
                    Collective::Allgather,
                    k,
                    len,
                    8,
                    algo,
                    at,
                    None,
                    calibration,
                    in_place,
                    Execution::default(),
                )
                .unwrap()
            });
            assert!((in_place - messages).abs() <= 1e-12 * messages, "k {k}");
            // A broadcast runs in place: its root's copy onto itself is not priced.
            let bcast = Collective::Broadcast { root: 0 };
            let sbt = algorithms::find(OpKind::Broadcast, "binomial").unwrap();
            let problem = Problem {
                collective: bcast,
                ..problem
            };
            let s = sbt.build(&problem, &params).unwrap();
            assert_eq!(local_elements(s.as_ref(), |_| None), len, "the root's copy");
            let alone = cost::simulate(&topology, s.as_ref(), &model).time;
            let p = predict(
                bcast,
                k,
                len,
                8,
                sbt,
                Packets::Count(1),
                None,
                calibration,
                false,
                Execution::default(),
            );
            let p = p.unwrap();
            assert!((p - alone).abs() <= 1e-12 * alone, "k {k}: {p} vs {alone}");
            let want = messages + len as f64 * 8.0 * 1e-9;
            assert!((got - want).abs() <= 1e-12 * want, "k {k}: {got} vs {want}");
        }
    }

    /// A message its sender waits on alone is priced at half its length once large
    /// enough: a broadcast of 2L elements (its root and inner nodes only send in their
    /// steps) costs what one of L costs unshared; an all-gather, whose every rank also
    /// receives in each step, and a message below the threshold, cost as before.
    #[test]
    fn the_prediction_halves_the_messages_an_idle_sender_helps_copy() {
        let calibration = Calibration {
            beta: 1e-6,
            tau: 1e-9,
        };
        let p = |c: Collective, name: &str, k: u32, len: u64, from: Option<u64>| {
            let algo = algorithms::find(c.kind(), name).unwrap();
            predict(
                c,
                k,
                len,
                8,
                algo,
                Packets::Count(1),
                None,
                calibration,
                false,
                Execution {
                    shared_copy_from: from,
                    cpus: None,
                },
            )
            .unwrap()
        };
        let bcast = Collective::Broadcast { root: 0 };
        // (The linear broadcast sends to one rank a step: its root is idle in each.)
        for (name, k) in [
            ("linear", 2),
            ("linear", 3),
            ("binomial", 2),
            ("binomial", 4),
            ("binomial", 8),
        ] {
            let len = 1 << 15; // 256 KiB of u64
            let shared = p(bcast, name, k, 2 * len, Some(256 << 10));
            let half = p(bcast, name, k, len, None);
            assert!(
                (shared - half).abs() <= 1e-12 * half,
                "{name} k {k}: {shared} vs {half}"
            );
            // Below the threshold (and without one) the whole length is priced.
            let whole = p(bcast, name, k, 2 * len, None);
            assert!(whole > shared * 1.5, "{name} k {k}");
            assert_eq!(
                p(bcast, name, k, 2 * len, Some(1 << 30)),
                whole,
                "{name} k {k}"
            );
        }
        // A binomial reduce places its first step's messages (combined locally after)
        // and combines the others as they arrive, which the runtime does alone: one step
        // of log₂k is halved, m/2 elements of τ saved.
        for k in [2, 4, 8] {
            let m = 1u64 << 16;
            let reduce = |from| p(Collective::Reduce { root: 0 }, "binomial", k, m, from);
            let saved = reduce(None) - reduce(Some(0));
            let half = (m / 2) as f64 * 8.0 * 1e-9;
            assert!(
                (saved - half).abs() <= 1e-9 * half,
                "reduce k {k}: {saved} vs {half}"
            );
        }
        for (name, k) in [
            ("ring", 2),
            ("ring", 5),
            ("bruck", 5),
            ("dimension-exchange", 4),
        ] {
            let ag = |from| p(Collective::Allgather, name, k, 1 << 16, from);
            assert_eq!(ag(Some(0)), ag(None), "{name} k {k}");
        }
    }

    /// Each condition of [`shared_copy_programs`], on a step built by hand: rank 0
    /// sends `len` elements to rank 1, which receives them; one change at a time makes
    /// the message one the runtime copies alone.
    #[test]
    fn a_message_is_halved_only_when_the_runtime_shares_its_copy() {
        use hypercomm::schedule::{Action, Buf, Materialized, Op as IrOp, Program, Region, Step};
        let len = 1000u64;
        let whole = Region::new(Buf::In, 0, len);
        let into = Region::new(Buf::Out, 0, len);
        // Rank 0's and rank 1's step, and the threshold, give the first message's
        // length at each end after `shared_copy_programs`.
        let lens = |send: Vec<IrOp>, recv: Vec<IrOp>, from: u64| {
            let program = |rank, ops| Program {
                rank,
                tmp_len: 0,
                steps: vec![Step { ops }],
            };
            let schedule = Materialized {
                nodes: 3,
                steps: 1,
                programs: vec![program(0, send), program(1, recv), program(2, vec![])],
            };
            let p = shared_copy_programs(&schedule, 8, from);
            let first = |r: usize| p[r].steps[0].ops.first().map_or(0, IrOp::message_len);
            (first(0), first(1))
        };
        let (send, recv) = (IrOp::send(1, whole), IrOp::recv(0, into));
        let bytes = len * 8;
        // Shared: halved at both ends, from exactly the threshold on.
        assert_eq!(
            lens(vec![send.clone()], vec![recv.clone()], bytes),
            (500, 500)
        );
        assert_eq!(
            lens(vec![send.clone()], vec![recv.clone()], bytes + 1),
            (len, len)
        );
        // The sender also receives in the step: it is busy, not helping.
        let busy = vec![send.clone(), IrOp::recv(2, Region::new(Buf::Out, 0, 1))];
        assert_eq!(lens(busy, vec![recv.clone()], 0), (len, len));
        // The sender sends another message in the step.
        let two = vec![send.clone(), IrOp::send(2, whole)];
        assert_eq!(lens(two, vec![recv.clone()], 0), (len, len));
        // A multicast: the receivers race for one helper; priced whole.
        let multicast = vec![IrOp::multicast([1, 2], whole)];
        assert_eq!(lens(multicast, vec![recv.clone()], 0), (len, len));
        // The send is two pieces, or strided.
        let halves = [Region::new(Buf::In, 0, 500), Region::new(Buf::In, 500, 500)];
        let pieces = IrOp::Send {
            to: [1].into_iter().collect(),
            from: halves.into_iter().collect(),
        };
        assert_eq!(lens(vec![pieces], vec![recv.clone()], 0), (len, len));
        let strided = IrOp::send(1, Region::strided(Buf::In, 0, 500, 600, 2));
        assert_eq!(lens(vec![strided], vec![recv.clone()], 0), (len, len));
        // The receive is two parts, or combines.
        let halves = [
            Region::new(Buf::Out, 0, 500),
            Region::new(Buf::Out, 500, 500),
        ];
        let parts = IrOp::Recv {
            from: 0,
            into: halves.into_iter().collect(),
            action: Action::Place,
        };
        assert_eq!(lens(vec![send.clone()], vec![parts], 0), (len, len));
        for action in [Action::CombineLeft, Action::CombineRight] {
            let combine = IrOp::Recv {
                from: 0,
                into: [into].into_iter().collect(),
                action,
            };
            let got = lens(vec![send.clone()], vec![combine], 0);
            assert_eq!(got, (len, len), "{action:?}");
        }
    }

    /// Ranks sharing CPUs take turns, each CPU copying its ranks' receives one after
    /// another: with a CPU per rank, exchanges (every rank receiving what it sends)
    /// time as in the simulator; with 4 ranks on 2 CPUs a ring all-gather takes twice
    /// as long (and its own-block copies add up per CPU); a binomial broadcast still
    /// takes two transfers (its second step has one receiver on each CPU); 5 ranks on 2
    /// CPUs in blocks, {0, 1, 2} and {3, 4}, take three transfers a ring step.
    #[test]
    fn ranks_that_share_a_cpu_take_turns() {
        let calibration = Calibration {
            beta: 1e-6,
            tau: 1e-9,
        };
        let model = calibration.model(8);
        let m = 1000u64;
        let build = |c: Collective, name: &str, k: u32| {
            let topology = Topology::complete(k);
            let problem = Problem {
                topology: &topology,
                collective: c,
                len: m,
                commutative: true,
                counts: None,
            };
            let params = Params {
                packets: Packets::Count(1),
                model,
            };
            let algo = algorithms::find(c.kind(), name).unwrap();
            let schedule = algo.build(&problem, &params).unwrap();
            let rounds = cost::simulate(&topology, schedule.as_ref(), &model).time;
            (algo, rounds, schedule)
        };
        let transfer = 1e-6 + m as f64 * 8.0 * 1e-9;
        let close = |a: f64, b: f64| (a - b).abs() <= 1e-12 * b.max(1e-300);
        let ag = Collective::Allgather;
        for (c, name) in [
            (ag, "ring"),
            (ag, "bruck"),
            (Collective::Alltoall, "pairwise"),
        ] {
            let (_, rounds, schedule) = build(c, name, 4);
            let own = cpu_shared_time(&Topology::complete(4), &model, schedule.as_ref(), 4);
            assert!(close(own, rounds), "{name}: {own} vs {rounds}");
        }
        let topology = Topology::complete(4);
        let (ring, rounds, schedule) = build(ag, "ring", 4);
        assert!(close(rounds, 3.0 * transfer));
        let shared = cpu_shared_time(&topology, &model, schedule.as_ref(), 2);
        assert!(close(shared, 2.0 * rounds), "{shared} vs 2 × {rounds}");
        let execution = Execution {
            shared_copy_from: None,
            cpus: Some(2),
        };
        let predicted = predict(
            ag,
            4,
            m,
            8,
            ring,
            Packets::Count(1),
            None,
            calibration,
            false,
            execution,
        );
        // Two ranks' own blocks per CPU, copied at τ per byte.
        let want = shared + 2.0 * m as f64 * 8.0 * 1e-9;
        let predicted = predicted.unwrap();
        assert!(close(predicted, want), "{predicted} vs {want}");
        let (_, rounds, schedule) = build(Collective::Broadcast { root: 0 }, "binomial", 4);
        assert!(close(rounds, 2.0 * transfer));
        let shared = cpu_shared_time(&topology, &model, schedule.as_ref(), 2);
        assert!(close(shared, 2.0 * transfer), "{shared}");
        // Blocks of unequal size: the larger decides each round.
        let (_, _, schedule) = build(ag, "ring", 5);
        let shared = cpu_shared_time(&Topology::complete(5), &model, schedule.as_ref(), 2);
        assert!(close(shared, 4.0 * 3.0 * transfer), "{shared}");
        assert_eq!(
            (0..5).map(|r| block(r, 2, 5)).collect::<Vec<_>>(),
            [0, 0, 0, 1, 1]
        );
    }
}
