//! Raw command-line arguments, as clap parses them.
//!
//! Values the library knows how to parse (`--topology`, `--op`, `--packets`, `--ports`,
//! `--duplex`, `--timing`) stay strings here, so that the library's messages, which name
//! the valid choices, reach the user; [`crate::config`] validates them into a typed
//! configuration. Plain numbers are parsed by clap.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

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
    /// Collective: p2p, broadcast, scatter, gather, ...
    #[arg(long, value_name = "OP")]
    pub op: String,
    /// Elements per message (per block for scatter and gather).
    #[arg(long, value_name = "M")]
    pub len: u64,
    /// The root of a rooted collective [default: 0].
    #[arg(long, value_name = "R")]
    pub root: Option<u64>,
    /// Source rank of p2p.
    #[arg(long, value_name = "A")]
    pub src: Option<u64>,
    /// Destination rank of p2p.
    #[arg(long, value_name = "B")]
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
    /// Links a node drives at once: all or one.
    #[arg(long, value_name = "P", default_value = "all")]
    pub ports: String,
    /// Whether a node sends and receives at once: full or half.
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
    /// costs the simulator serialises.
    #[arg(long)]
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
    #[arg(long, value_name = "M", default_value_t = 1000)]
    pub len: u64,
    /// The root of rooted collectives [default: 0].
    #[arg(long, value_name = "R")]
    pub root: Option<u64>,
    /// Source rank of p2p [default: 0].
    #[arg(long, value_name = "A")]
    pub src: Option<u64>,
    /// Destination rank of p2p [default: the last node].
    #[arg(long, value_name = "B")]
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
    /// Interconnect, e.g. `hypercube:4`; with `--dims`, only its family counts.
    #[arg(long, value_name = "T")]
    pub topology: String,
    /// Collective: p2p, broadcast, scatter, gather, ...
    #[arg(long, value_name = "OP")]
    pub op: String,
    /// Elements per message: `M`, a range `A..B` (step 1), `A..B:STEP`, a geometric range
    /// `A..BxF` (factor F > 1), or a list `A,B,C`. A single `M` with `--dims`.
    #[arg(long, value_name = "RANGE")]
    pub len: String,
    /// Sweep over hypercube dimensions instead (same syntax as `--len`), e.g. `1..12`.
    #[arg(long, value_name = "RANGE")]
    pub dims: Option<String>,
    /// Algorithms, comma-separated [default: every one that fits, in registry order].
    #[arg(long, value_name = "A,B,...")]
    pub algo: Option<String>,
    /// The root of a rooted collective [default: 0].
    #[arg(long, value_name = "R")]
    pub root: Option<u64>,
    /// Source rank of p2p.
    #[arg(long, value_name = "A")]
    pub src: Option<u64>,
    /// Destination rank of p2p.
    #[arg(long, value_name = "B")]
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
}
