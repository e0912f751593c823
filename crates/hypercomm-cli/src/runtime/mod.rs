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
use hypercomm::algorithms::{self, Algorithm, Shape};
use hypercomm::collective::{Collective, OpKind};
use hypercomm::counts::Counts;
use hypercomm::error::Error;
use hypercomm::schedule::Rank;
use hypercomm_rt::op::{Arith, Bits};
use hypercomm_rt::{Algo, Calibration, Comm, Op, Persistent, Ran, Transport};
use serde::Serialize;

pub use bench::{bench_rank, gather_bench, BenchConfig, BenchReport, BenchRow, RankPoint};
pub use calibrate::{calibrate_rank, fit, CalibrationSource, PingPong};
/// The prediction lives in the runtime, which ranks `auto`'s candidates by it.
pub use hypercomm_rt::predict::{
    cpu_shared_time, in_place_offset, local_elements, local_elements_by_rank, predict,
    predict_with, schedule_digest, shared_copy_programs, Execution,
};
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
    /// The per-size bands of the calibration (none: one line).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub bands: Vec<hypercomm_rt::select::Band>,
    /// The whole calibration.
    #[serde(skip)]
    full: Calibration,
}

impl CalibrationInfo {
    /// The runtime's calibration.
    pub fn calibration(&self) -> Calibration {
        self.full
    }
    /// From a calibration and its file.
    pub fn new(c: Calibration, source: Option<String>) -> Self {
        CalibrationInfo {
            beta: c.beta,
            tau: c.tau,
            source,
            bands: c.bands.as_slice().to_vec(),
            full: c,
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
}
