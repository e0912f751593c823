//! Raw command-line arguments, as clap parses them.
//!
//! Values the library knows how to parse (`--topology`, `--op`, `--packets`, `--ports`,
//! `--duplex`, `--timing`) stay strings here, so that the library's messages, which name
//! the valid choices, reach the user; [`crate::config`] validates them into a typed
//! configuration. Plain numbers are parsed by clap.

use std::path::PathBuf;
use std::sync::OnceLock;

use clap::{Args, Parser, Subcommand, ValueEnum};
use hypercomm::collective::OpKind;

use crate::runtime::ReduceOp;

pub use crate::runtime::calibrate::Pattern;

/// A whole number of a numeric flag: digits, or an integral scientific form such as
/// `1e6`; a negative number is named as such (clap alone would take `-5` for a flag).
/// Ranges are checked when the arguments are validated ([`crate::config`]).
pub fn whole(s: &str) -> Result<u64, String> {
    let t = s.trim();
    if let Ok(n) = t.parse::<u64>() {
        return Ok(n);
    }
    let too_large = || format!("{s} is above {}, the largest accepted", u64::MAX);
    if t.starts_with('-') {
        return Err(format!("{s} is negative; valid: a whole number ≥ 0"));
    }
    if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) {
        return Err(too_large());
    }
    match t.parse::<f64>() {
        Ok(x) if x.is_finite() && x.fract() == 0.0 && x < 18_446_744_073_709_551_616.0 => {
            Ok(x as u64)
        }
        Ok(x) if x.is_finite() && x.fract() == 0.0 => Err(too_large()),
        _ => Err(format!(
            "`{s}` is not a whole number; valid: 0, 1, 2, … or 1e6"
        )),
    }
}

/// `tables --nodes`: a whole number ([`whole`]), a bad one answered with the valid K.
pub fn tables_nodes(s: &str) -> Result<u64, String> {
    whole(s).map_err(|e| format!("{e}; valid for --nodes: 4, 16 or 64"))
}

/// The help of `--op`: every collective, named as the parser ([`OpKind`]'s `FromStr`)
/// takes them, from [`OpKind::ALL`].
pub fn op_help() -> &'static str {
    static HELP: OnceLock<String> = OnceLock::new();
    HELP.get_or_init(|| {
        let names = OpKind::ALL.map(OpKind::name).join(", ");
        format!("Collective: {names}")
    })
}

/// The help of `--reduce-op`: every operator [`ReduceOp`]'s `FromStr` takes, from
/// [`ReduceOp::ALL`].
pub fn reduce_op_help() -> &'static str {
    static HELP: OnceLock<String> = OnceLock::new();
    HELP.get_or_init(|| {
        let names = ReduceOp::ALL.map(ReduceOp::name).join(", ");
        format!("Reduction operator of reductions: {names} (integers wrap) [default: sum]")
    })
}

/// `hypercomm`: collective-communication schedules on hypercubes, generated, verified
/// and costed.
#[derive(Debug, Parser)]
#[command(name = "hypercomm", version, about, long_about = None)]
pub struct Cli {
    /// The command to run.
    #[command(subcommand)]
    pub command: Command,
}

/// The commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Build one algorithm's schedule, verify it, time it, and compare it with its
    /// closed forms and a lower bound.
    Simulate(SimulateArgs),
    /// Run every algorithm of a collective that fits the topology, side by side,
    /// fastest first.
    Compare(CompareArgs),
    /// List the registry of algorithms.
    Algorithms(AlgorithmsArgs),
    /// Evaluate every algorithm's closed forms for one problem and model.
    Formulas(FormulasArgs),
    /// Print one algorithm's schedule as JSON (the format `verify --schedule` reads).
    Schedule(ScheduleArgs),
    /// Verify and time a schedule read from a JSON file.
    Verify(VerifyArgs),
    /// Run algorithms over a range of lengths or hypercube dimensions; print CSV or
    /// JSON, optionally an SVG chart.
    Sweep(SweepArgs),
    /// Execute one collective on random data on a runtime backend, check it against a
    /// serial reference, and time it.
    Run(RtRunArgs),
    /// Benchmark collectives on a runtime backend over message sizes (OSU and
    /// nccl-tests conventions), beside the cost model and memcpy.
    Bench(BenchArgs),
    /// Measure the backend's start-up time β and time per byte τ between pairs of ranks
    /// (exchanging messages by default, or by ping-pong: --pattern) and save them for
    /// `Algo::Auto`, `run` and `bench`.
    Calibrate(CalibrateArgs),
    /// Regenerate seed 004's Tables 1 and 2 (Saad & Schultz, Data Communication in
    /// Parallel Architectures): printed, corrected, exact (simulated) and best time of
    /// each of the 30 cells.
    Tables(TablesArgs),
    /// Draw one algorithm's schedule on its machine, step by step and as a timeline
    /// under the model's timing (SVG or HTML); the same options as `simulate`, whose
    /// report it prints.
    Draw(DrawArgs),
}

/// Arguments of `hypercomm draw`: those of `simulate` and where to write.
#[derive(Debug, Args)]
pub struct DrawArgs {
    /// The run drawn, as `simulate` takes it.
    #[command(flatten)]
    pub run: SimulateArgs,
    /// Write the drawing as an SVG document into FILE.
    #[arg(long, value_name = "FILE", required_unless_present = "html")]
    pub svg: Option<PathBuf>,
    /// Write it as a self-contained HTML page into FILE.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
}

/// Arguments of `hypercomm tables`.
#[derive(Debug, Args)]
pub struct TablesArgs {
    /// K, the processors of every machine (a square for the grid, a power of two for
    /// the hypercube): 4, 16 or 64.
    #[arg(long, value_parser = tables_nodes, allow_negative_numbers = true, value_name = "K", default_value_t = 16)]
    pub nodes: u64,
    /// k* = S, simultaneous shared-memory accesses (1 ≤ S ≤ K).
    #[arg(long, value_parser = whole, allow_negative_numbers = true, value_name = "S", default_value_t = 4)]
    pub kstar: u64,
    /// The paper's N (the message; the total for all-to-all, scatter and the
    /// multiscatter; the matrix order for the hypercube's and switch's multiscatter):
    /// 1 to 2^26, and the packets of the longest pipeline at most 2^16 / max(K, 16).
    #[arg(long, value_parser = whole, allow_negative_numbers = true, value_name = "N", default_value_t = 4096)]
    pub data: u64,
    /// τ_X, the start-up (our β).
    #[arg(long, value_name = "B", default_value_t = 1.0)]
    pub beta: f64,
    /// 1/b_X, the time per word (our τ).
    #[arg(long, value_name = "T", default_value_t = 0.01)]
    pub tau: f64,
    /// Output format.
    #[arg(long, value_enum, default_value_t = ListFormat::Text)]
    pub format: ListFormat,
    /// Also draw the tables as an SVG bar chart into FILE: for each operation the six
    /// machines side by side (the exact time; a tick at the printed entry).
    #[arg(long, value_name = "FILE")]
    pub svg: Option<PathBuf>,
}

/// Output format of the reporting commands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// An aligned, human-readable block or table.
    Text,
    /// Pretty-printed JSON: one object (or an array of them for `compare`).
    Json,
}

/// Output format of `hypercomm algorithms`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ListFormat {
    /// An aligned table.
    Text,
    /// A JSON array.
    Json,
    /// A Markdown table (the content of docs/algorithms.md).
    Markdown,
}

/// The problem: topology, collective and length.
#[derive(Debug, Args)]
pub struct ProblemArgs {
    /// Interconnect, e.g. `hypercube:4`.
    #[arg(long, value_name = "T")]
    pub topology: String,
    /// Collective (every name `OpKind` parses: see [`op_help`]).
    #[arg(long, value_name = "OP", help = op_help())]
    pub op: String,
    /// Elements per message (per block for scatter and gather); not with --counts,
    /// which sets every count (the problem's length is then their mean).
    #[arg(long, value_parser = whole, allow_negative_numbers = true, value_name = "M", required_unless_present = "counts", conflicts_with = "counts")]
    pub len: Option<u64>,
    /// The counts of a variable-count collective (gatherv, scatterv, allgatherv,
    /// alltoallv, reduce-scatterv), a JSON file: a list of one count per rank, or for
    /// alltoallv a list of lists, row i the counts rank i sends each rank (`[[0, 3],
    /// [1, 0]]`); zeros allowed. Without it every count is --len.
    #[arg(long, value_name = "FILE")]
    pub counts: Option<PathBuf>,
    /// The root of a rooted collective [default: 0].
    #[arg(long, value_parser = whole, allow_negative_numbers = true, value_name = "R")]
    pub root: Option<u64>,
    /// Source rank of p2p.
    #[arg(long, value_parser = whole, allow_negative_numbers = true, value_name = "A")]
    pub src: Option<u64>,
    /// Destination rank of p2p.
    #[arg(long, value_parser = whole, allow_negative_numbers = true, value_name = "B")]
    pub dst: Option<u64>,
}

/// The machine model.
#[derive(Debug, Args)]
pub struct ModelArgs {
    /// Start-up time β of one transfer [default: 1].
    #[arg(long, value_name = "B", allow_negative_numbers = true)]
    pub beta: Option<f64>,
    /// Time τ per element [default: 0.01].
    #[arg(long, value_name = "T", allow_negative_numbers = true)]
    pub tau: Option<f64>,
    /// Start-up time β_h of a host link (`hypercube:N+host`) [default: --beta].
    #[arg(long, value_name = "B", allow_negative_numbers = true)]
    pub host_beta: Option<f64>,
    /// Time τ_h per element on a host link [default: --tau].
    #[arg(long, value_name = "T", allow_negative_numbers = true)]
    pub host_tau: Option<f64>,
    /// Links a node drives at once: all, one, or S,R (send and receive ports, e.g. 2,1
    /// for seed 004's ring rule: write to both neighbours, or read from one).
    #[arg(long, value_name = "P", default_value = "all")]
    pub ports: String,
    /// The host's port rule (`+host` topologies): one (seed 003), all, or S,R
    /// [default: one].
    #[arg(long, value_name = "P")]
    pub host_ports: Option<String>,
    /// Duplex: full; half (a node sends or receives in a step); half-link (a link
    /// carries one direction at a time, a node may send on one link and receive on
    /// another).
    #[arg(long, value_name = "D", default_value = "full")]
    pub duplex: String,
    /// How steps become time: rounds (lock-step) or async.
    #[arg(long, value_name = "T", default_value = "rounds")]
    pub timing: String,
}

/// How a schedule is checked.
#[derive(Debug, Args)]
pub struct CheckArgs {
    /// Make the port and duplex rules of the model verification rules, instead of
    /// costs the simulator serialises (not with --no-verify, which would ignore them).
    #[arg(long, conflicts_with = "no_verify")]
    pub strict: bool,
    /// Skip verification (no memory for every program is needed with rounds timing).
    #[arg(long)]
    pub no_verify: bool,
}

/// Arguments of `hypercomm simulate`.
#[derive(Debug, Args)]
pub struct SimulateArgs {
    /// The problem.
    #[command(flatten)]
    pub problem: ProblemArgs,
    /// Algorithm name (see `hypercomm algorithms`).
    #[arg(long, value_name = "NAME")]
    pub algo: String,
    /// Packets per message for pipelined algorithms: a count or `opt`.
    #[arg(long, value_name = "N|opt", default_value = "opt")]
    pub packets: String,
    /// The machine model.
    #[command(flatten)]
    pub model: ModelArgs,
    /// How the schedule is checked.
    #[command(flatten)]
    pub check: CheckArgs,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
}

/// Arguments of `hypercomm compare`.
#[derive(Debug, Args)]
pub struct CompareArgs {
    /// The problem.
    #[command(flatten)]
    pub problem: ProblemArgs,
    /// Packets per message for pipelined algorithms: a count or `opt`.
    #[arg(long, value_name = "N|opt", default_value = "opt")]
    pub packets: String,
    /// The machine model.
    #[command(flatten)]
    pub model: ModelArgs,
    /// How the schedule is checked.
    #[command(flatten)]
    pub check: CheckArgs,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    /// Also write a self-contained HTML report into FILE: the table, the times beside
    /// the lower bound, the fastest algorithm drawn, the model.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
}

/// Arguments of `hypercomm algorithms`.
#[derive(Debug, Args)]
pub struct AlgorithmsArgs {
    /// Output format.
    #[arg(long, value_enum, default_value_t = ListFormat::Text)]
    pub format: ListFormat,
}

/// Arguments of `hypercomm formulas`.
#[derive(Debug, Args)]
pub struct FormulasArgs {
    /// Only this collective's algorithms.
    #[arg(long, value_name = "OP")]
    pub op: Option<String>,
    /// Interconnect.
    #[arg(long, value_name = "T", default_value = "hypercube:3")]
    pub topology: String,
    /// Elements per message.
    #[arg(long, value_parser = whole, allow_negative_numbers = true, value_name = "M", default_value_t = 1000)]
    pub len: u64,
    /// The root of rooted collectives [default: 0].
    #[arg(long, value_parser = whole, allow_negative_numbers = true, value_name = "R")]
    pub root: Option<u64>,
    /// Source rank of p2p [default: 0].
    #[arg(long, value_parser = whole, allow_negative_numbers = true, value_name = "A")]
    pub src: Option<u64>,
    /// Destination rank of p2p [default: the last node].
    #[arg(long, value_parser = whole, allow_negative_numbers = true, value_name = "B")]
    pub dst: Option<u64>,
    /// Packets per message for pipelined algorithms: a count or `opt`.
    #[arg(long, value_name = "N|opt", default_value = "opt")]
    pub packets: String,
    /// The machine model.
    #[command(flatten)]
    pub model: ModelArgs,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
}

/// Arguments of `hypercomm schedule`.
#[derive(Debug, Args)]
pub struct ScheduleArgs {
    /// The problem.
    #[command(flatten)]
    pub problem: ProblemArgs,
    /// Algorithm name (see `hypercomm algorithms`).
    #[arg(long, value_name = "NAME")]
    pub algo: String,
    /// Packets per message for pipelined algorithms: a count or `opt`.
    #[arg(long, value_name = "N|opt", default_value = "opt")]
    pub packets: String,
    /// The model `--packets opt` is resolved against.
    #[command(flatten)]
    pub model: ModelArgs,
}

/// Arguments of `hypercomm verify`.
#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// The schedule file (JSON, as `hypercomm schedule` writes it); `-` reads stdin.
    #[arg(long, value_name = "FILE")]
    pub schedule: PathBuf,
    /// The machine model.
    #[command(flatten)]
    pub model: ModelArgs,
    /// Make the port and duplex rules of the model verification rules.
    #[arg(long)]
    pub strict: bool,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
}

/// Output format of `hypercomm sweep`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum SweepFormat {
    /// Comma-separated values, one header line and one line per point and algorithm.
    Csv,
    /// A JSON array with one object per point and algorithm.
    Json,
}

/// Arguments of `hypercomm sweep`.
#[derive(Debug, Args)]
pub struct SweepArgs {
    /// Interconnect, e.g. `hypercube:4`; with `--dims` or `--nodes`, only its family
    /// counts (and a shared memory's S: `shm:K,S` keeps S, `shm` takes S = K): the family
    /// alone (`ring`, `shm`, `bus+host`) or a valid topology of it (`ring:4`, `bus:x` is
    /// refused).
    #[arg(long, value_name = "T")]
    pub topology: String,
    /// Collective (every name `OpKind` parses: see [`op_help`]).
    #[arg(long, value_name = "OP", help = op_help())]
    pub op: String,
    /// Elements per message: `M`, a range `A..B` (step 1), `A..B:STEP`, a geometric range
    /// `A..BxF` (factor F > 1), or a list `A,B,C`; each number as a single `--len`
    /// takes it (digits or a form such as `1e3`: `1e3..1e6x10`). A single `M` with
    /// `--dims` or `--nodes`.
    #[arg(long, value_name = "RANGE")]
    pub len: String,
    /// Sweep over hypercube dimensions instead (same syntax as `--len`), e.g. `1..12`.
    #[arg(long, value_name = "RANGE")]
    pub dims: Option<String>,
    /// Sweep over the machine size K instead (same syntax as `--len`), e.g. `2..64`:
    /// the topology's family with K processors (`ring:K`, `path:K`, `complete:K`,
    /// `bus:K`, `switch:K`, `shm:K,S`; `torus:QxQ`, `mesh:QxQ`, `ghc:QxQ` for the K that
    /// are squares Q²; `hypercube:n` for K = 2^n; `+host` kept).
    #[arg(long, value_name = "RANGE", conflicts_with = "dims")]
    pub nodes: Option<String>,
    /// Algorithms, comma-separated [default: every one that fits, in registry order].
    #[arg(long, value_name = "A,B,...")]
    pub algo: Option<String>,
    /// The root of a rooted collective [default: 0].
    #[arg(long, value_parser = whole, allow_negative_numbers = true, value_name = "R")]
    pub root: Option<u64>,
    /// Source rank of p2p.
    #[arg(long, value_parser = whole, allow_negative_numbers = true, value_name = "A")]
    pub src: Option<u64>,
    /// Destination rank of p2p.
    #[arg(long, value_parser = whole, allow_negative_numbers = true, value_name = "B")]
    pub dst: Option<u64>,
    /// Packets per message for pipelined algorithms: a count or `opt`.
    #[arg(long, value_name = "N|opt", default_value = "opt")]
    pub packets: String,
    /// The machine model.
    #[command(flatten)]
    pub model: ModelArgs,
    /// How the schedules are checked (points too large to verify are timed unverified).
    #[command(flatten)]
    pub check: CheckArgs,
    /// Output format.
    #[arg(long, value_enum, default_value_t = SweepFormat::Csv)]
    pub format: SweepFormat,
    /// Also draw the sweep as an SVG line chart into FILE.
    #[arg(long, value_name = "FILE")]
    pub svg: Option<PathBuf>,
    /// Also write a self-contained HTML report into FILE: the chart, every row, the
    /// fastest algorithm at the last point drawn.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
}

/// The runtime problem shared by `run` and `bench`: backend, ranks, collective.
#[derive(Debug, Args)]
pub struct RtProblemArgs {
    /// Runtime backend: `threads` for hypercomm, `mpi` for hypercomm-mpi; each binary
    /// runs its own and refuses the other's [default: the binary's].
    #[arg(long, value_name = "B")]
    pub backend: Option<String>,
    /// Number of ranks (a download: 2^n + 1, the processing elements of hypercube:n and the host, the last rank).
    #[arg(long, value_parser = whole, allow_negative_numbers = true, value_name = "K")]
    pub ranks: u64,
    /// Collective (every name `OpKind` parses: see [`op_help`]).
    #[arg(long, value_name = "OP", help = op_help())]
    pub op: String,
    /// The root of a rooted collective [default: 0].
    #[arg(long, value_parser = whole, allow_negative_numbers = true, value_name = "R")]
    pub root: Option<u64>,
    /// Source rank of p2p.
    #[arg(long, value_parser = whole, allow_negative_numbers = true, value_name = "A")]
    pub src: Option<u64>,
    /// Destination rank of p2p.
    #[arg(long, value_parser = whole, allow_negative_numbers = true, value_name = "B")]
    pub dst: Option<u64>,
    /// Reduction operator of reductions (see [`reduce_op_help`]) [default: sum].
    #[arg(long, value_name = "OP", help = reduce_op_help())]
    pub reduce_op: Option<String>,
    /// How uneven the counts of the variable-count collectives (gatherv, scatterv,
    /// allgatherv, alltoallv, reduce-scatterv) are: each count is drawn from the seed,
    /// uniform among the whole numbers in [round((1 − S)·len), round((1 + S)·len)],
    /// len the mean count (`run --len`; `bench`: the size); S in [0, 1], 0 makes every
    /// count len, 1 draws from 0 (zeros included) to 2·len [default: 0.5].
    #[arg(long, value_name = "S")]
    pub skew: Option<f64>,
    /// Seconds a rank waits for a peer before giving up.
    #[arg(long, value_name = "SECS", default_value_t = 60.0)]
    pub timeout: f64,
    /// Bind each rank's thread to one of the CPUs the process may use, a core each
    /// first (as `mpirun --bind-to core`; Linux only): auto is the runtime's default,
    /// which binds (unbound, two ranks may share a core for a whole short run) unless
    /// the environment has HYPERCOMM_PIN=off; off leaves the threads to the scheduler
    /// (two jobs at once on one machine bind to the same CPUs). A HYPERCOMM_PIN other
    /// than on, off, auto (1, 0, true, false, yes, no) fails the run whatever --pin says.
    #[arg(long, value_enum, value_name = "WHEN", default_value_t = PinArg::Auto)]
    pub pin: PinArg,
    /// How ranks that share a CPU run: auto (the default; a bare `--fibers` too) runs
    /// them as fibers of one thread per CPU, switching in user space instead of the
    /// kernel, when ranks outnumber CPUs; off gives every rank a thread of its own.
    #[arg(
        long,
        value_enum,
        value_name = "WHEN",
        default_value_t = FibersArg::Auto,
        num_args = 0..=1,
        default_missing_value = "auto"
    )]
    pub fibers: FibersArg,
}

/// When `run` and `bench` run ranks as fibers (`hypercomm_rt::threads::Config::fibers`).
/// The library leaves fibers off by default, because a rank that blocks its thread
/// outside the library (a sleep, a lock held by another rank of its CPU) would stop the
/// other ranks of that thread; the CLI's ranks never do, so it turns them on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum FibersArg {
    /// Fibers when ranks outnumber the CPUs.
    Auto,
    /// A thread per rank, always.
    Off,
}

/// When `run` and `bench` bind ranks to CPUs (`hypercomm_rt::threads::Config::pin`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum PinArg {
    /// The runtime's default (`threads::Config::new`): `HYPERCOMM_PIN` (on, off, auto)
    /// when set, else bound, as `on`.
    Auto,
    /// Always.
    On,
    /// Never.
    Off,
}

/// Arguments of `hypercomm run`.
#[derive(Debug, Args)]
pub struct RtRunArgs {
    /// Backend, ranks, collective.
    #[command(flatten)]
    pub problem: RtProblemArgs,
    /// Algorithm name, `auto` (the fastest under the cost model and the calibration), or
    /// `native` (hypercomm-mpi only: the MPI library's own collective).
    #[arg(long, value_name = "NAME|auto", default_value = "auto")]
    pub algo: String,
    /// Lay the ranks out as a product shape `AxB…` (row-major, the last factor
    /// fastest; factors ≥ 1 whose product is --ranks) for the algorithms that take one
    /// (`product`, all-to-all and all-gather: one dimension at a time); `node`
    /// (hypercomm-mpi only) is nodes × processes per node, from
    /// `MPI_Comm_split_type(MPI_COMM_TYPE_SHARED)` [default: the cost model's shape].
    #[arg(long, value_name = "AxB..|node")]
    pub shape: Option<String>,
    /// Elements (u64) per message (per block for scatter, gather, all-gather,
    /// all-to-all and reduce-scatter).
    #[arg(long, value_parser = whole, allow_negative_numbers = true, value_name = "M")]
    pub len: u64,
    /// Packets per message for pipelined algorithms: a count (named algorithms only) or
    /// `opt`.
    #[arg(long, value_name = "N|opt", default_value = "opt")]
    pub packets: String,
    /// Seed of the random input [default: from the clock; the report prints it].
    #[arg(long, value_parser = whole, allow_negative_numbers = true, value_name = "S")]
    pub seed: Option<u64>,
    /// Timed calls, after one untimed warm-up call. Each call's time is the slowest
    /// rank's; the report's `time` is their median and `min` the fastest. Every call's
    /// result is checked.
    #[arg(long, value_parser = whole, allow_negative_numbers = true, value_name = "N", default_value_t = DEFAULT_RUN_ITERS)]
    pub iters: u64,
    /// Corrupt one element of the result before the check (tests the checker).
    #[arg(long, hide = true)]
    pub inject_error: bool,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
}

/// `run --iters` by default: enough calls for a median that does not swing with one
/// descheduled rank, few enough that a run of a large message stays short.
pub const DEFAULT_RUN_ITERS: u64 = 10;

/// Output format of `hypercomm bench`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum BenchFormat {
    /// An aligned table, one row per algorithm and size.
    Text,
    /// A JSON object with the run's parameters and its rows.
    Json,
    /// Comma-separated values, one header line and one line per algorithm and size.
    Csv,
}

/// Arguments of `hypercomm bench`.
#[derive(Debug, Args)]
pub struct BenchArgs {
    /// Backend, ranks, collective.
    #[command(flatten)]
    pub problem: RtProblemArgs,
    /// Algorithms, comma-separated: registry names, `auto`, `all` (every one that fits
    /// except those kept with a published flaw, seed 003's `ssa`) or a mix (`all,auto`
    /// times auto beside every one; a name given twice runs once); `native`
    /// (hypercomm-mpi only) is the MPI library's own collective.
    #[arg(long, value_name = "A,B,..|all|auto", default_value = "auto")]
    pub algo: String,
    /// Lay the ranks out as a product shape `AxB…` (row-major, the last factor
    /// fastest; factors ≥ 1 whose product is --ranks) for the algorithms listed that take one (the others run as always)
    /// (`product`, all-to-all and all-gather: one dimension at a time); `node`
    /// (hypercomm-mpi only) is nodes × processes per node, from
    /// `MPI_Comm_split_type(MPI_COMM_TYPE_SHARED)` [default: the cost model's shape].
    #[arg(long, value_name = "AxB..|node")]
    pub shape: Option<String>,
    /// Smallest message size in bytes (per rank, per block; OSU's convention).
    #[arg(long, value_parser = whole, allow_negative_numbers = true, value_name = "B", default_value_t = 1)]
    pub min_size: u64,
    /// Largest message size in bytes; sizes double from --min-size.
    #[arg(long, value_parser = whole, allow_negative_numbers = true, value_name = "B", default_value_t = 1 << 20)]
    pub max_size: u64,
    /// Timed iterations per size, 1 to 10,000 [default: OSU's, 1000 up to 8 KiB, 100
    /// above].
    #[arg(long, value_name = "N", value_parser = whole, allow_negative_numbers = true)]
    pub iters: Option<u64>,
    /// Untimed warm-up iterations per size, 0 to 10,000 [default: OSU's, 200 up to 8
    /// KiB, 10 above].
    #[arg(long, value_name = "N", value_parser = whole, allow_negative_numbers = true)]
    pub warmup: Option<u64>,
    /// Time the in-place form (`MPI_IN_PLACE`, nccl-tests' in-place columns): the
    /// rank's data already in `out` (all-gather: its own block), no separate `in`.
    /// allgather, allreduce, scan, exclusive-scan; broadcast is always in place.
    #[arg(long)]
    pub in_place: bool,
    /// Also time the persistent form of each algorithm (`plan_*` once, then its
    /// `run` per call: MPI-4's `MPI_Allreduce_init` and `MPI_Start`), in the same run
    /// beside the plain call, with the ratio persistent / plain. Every collective but
    /// p2p and download (the variable-count ones with the counts drawn for each size,
    /// fixed when planned); not with --in-place or `native`.
    #[arg(long)]
    pub persistent: bool,
    /// The algorithms of a size take turns call by call (each call after the barrier)
    /// instead of timing each algorithm's calls in a block of its own (OSU's way): a
    /// load or clock that comes and goes then weighs on all alike, so the ratio of two
    /// algorithms is measured side by side.
    #[arg(long)]
    pub interleave: bool,
    /// The barrier between two timed calls (each rank times its call from its own exit
    /// from the barrier, so which ranks leave it first shapes the latency measured):
    /// recursive-doubling or tree, as Open MPI's `coll_tuned_barrier_algorithm` 3 and 6.
    #[arg(long, value_enum, default_value_t = BarrierArg::RecursiveDoubling)]
    pub barrier: BarrierArg,
    /// Output format.
    #[arg(long, value_enum, default_value_t = BenchFormat::Text)]
    pub format: BenchFormat,
}

/// The barrier of `bench` (`hypercomm_rt::Barrier`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum BarrierArg {
    /// An all-reduce of one byte by recursive doubling: every rank leaves after its
    /// last exchange.
    RecursiveDoubling,
    /// Fan-in to rank 0 and fan-out along the binomial tree: rank 0 leaves first.
    Tree,
}

impl From<BarrierArg> for hypercomm_rt::Barrier {
    fn from(b: BarrierArg) -> Self {
        match b {
            BarrierArg::RecursiveDoubling => hypercomm_rt::Barrier::RecursiveDoubling,
            BarrierArg::Tree => hypercomm_rt::Barrier::Tree,
        }
    }
}

/// Arguments of `hypercomm calibrate`.
#[derive(Debug, Args)]
pub struct CalibrateArgs {
    /// Runtime backend: threads.
    #[arg(long, value_name = "B", default_value = "threads")]
    pub backend: String,
    /// Ranks, an even count from 2 to 1024: pairs (0, 1), (2, 3), … measure at once (an
    /// odd count, which would leave a rank without a partner, is refused). Then two
    /// ranks a CPU, run as fibers of one thread, measure a message within a CPU (the
    /// `same-cpu` bands, which price such messages when more ranks than CPUs run as
    /// fibers).
    #[arg(long, value_parser = whole, allow_negative_numbers = true, value_name = "K", default_value_t = 2)]
    pub ranks: u64,
    /// How a pair measures: `exchange` (both ranks send and receive at once, as in every
    /// step of a collective) or `pingpong` (one way and back, one rank copying at a
    /// time).
    #[arg(long, value_enum, value_name = "P", default_value_t = Pattern::Exchange)]
    pub pattern: Pattern,
    /// Where to save [default: $HYPERCOMM_CALIBRATION, else
    /// $XDG_CONFIG_HOME/hypercomm/calibration.conf, else
    /// ~/.config/hypercomm/calibration.conf].
    #[arg(long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Largest size in bytes (sizes are powers of 2 from 1 B; at least 2, as the fit of
    /// β and τ needs two sizes). A fit with τ ≤ 0 or β < 0 is not saved (exit 1).
    #[arg(long, value_parser = whole, allow_negative_numbers = true, value_name = "B", default_value_t = crate::runtime::calibrate::DEFAULT_MAX_SIZE)]
    pub max_size: u64,
    /// Repetitions per size, 1 to 100,000 [default: 5000 for small sizes down to 50 for
    /// the largest; a quarter of that, at least 20, within a CPU].
    #[arg(long, value_name = "N", value_parser = whole, allow_negative_numbers = true)]
    pub reps: Option<u64>,
    /// Seconds a rank waits for a peer before giving up.
    #[arg(long, value_name = "SECS", default_value_t = 60.0)]
    pub timeout: f64,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
}

#[cfg(test)]
mod tests {
    use super::whole;

    /// Whole numbers: digits or integral scientific forms; negatives, fractions and
    /// words are refused, each saying why.
    #[test]
    fn whole_numbers() {
        assert_eq!(whole("0"), Ok(0));
        assert_eq!(whole("18446744073709551615"), Ok(u64::MAX));
        assert_eq!(whole("1e12"), Ok(1_000_000_000_000));
        assert_eq!(whole(" 42 "), Ok(42));
        assert!(whole("-5").unwrap_err().contains("negative"));
        assert!(whole("-0").unwrap_err().contains("negative"));
        assert!(whole("18446744073709551616").unwrap_err().contains("above"));
        assert!(whole("1e20").unwrap_err().contains("above"));
        for bad in ["1.5", "ten", "", "inf", "NaN", "1e-3"] {
            assert!(
                whole(bad).unwrap_err().contains("not a whole number"),
                "{bad}"
            );
        }
    }
}
