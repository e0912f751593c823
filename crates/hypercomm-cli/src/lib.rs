//! # hypercomm-cli
//!
//! The `hypercomm` command-line tool over the [`hypercomm`] library. Raw arguments are
//! parsed by clap ([`args`]), validated into a typed configuration ([`config`]), and run
//! by one module per command ([`simulate`], [`compare`], [`algorithms`], [`formulas`],
//! [`schedule`], [`verify`], [`sweep`], [`tables`]); [`report`] holds the facts of one run,
//! [`output`] renders them and [`plot`] draws a sweep as an SVG chart; [`draw`] draws a
//! schedule on its machine and writes the HTML reports.
//!
//! `run`, `bench` and `calibrate` execute collectives on the runtime
//! ([`hypercomm_rt`]): [`runtime`] holds their per-rank work, generic over the
//! transport (so another backend, e.g. MPI, reuses it and prints identical reports),
//! and [`threads`] drives it on the threads backend.
//!
//! Exit codes: 0 when everything verified (or verification was skipped) or a run was
//! correct, 1 when a schedule failed verification or a run gave a wrong result (or a
//! rank failed), 2 on bad input (the message on stderr names the problem and the
//! valid choices).
//!
//! ```
//! let mut out = Vec::new();
//! let mut err = Vec::new();
//! let code = hypercomm_cli::run(
//!     ["hypercomm", "simulate", "--topology", "hypercube:3", "--op", "broadcast",
//!      "--algo", "sbt", "--len", "100", "--format", "json"],
//!     &mut out,
//!     &mut err,
//! );
//! assert_eq!(code, 0);
//! let report: serde_json::Value = serde_json::from_slice(&out).unwrap();
//! assert_eq!(report["verified"], true);
//! ```

#![warn(missing_docs)]

pub mod algorithms;
pub mod args;
pub mod compare;
pub mod config;
pub mod draw;
pub mod formulas;
pub mod output;
pub mod parallel;
pub mod plot;
pub mod report;
pub mod runtime;
pub mod schedule;
pub mod simulate;
pub mod sweep;
pub mod tables;
pub mod threads;
pub mod verify;

use std::ffi::OsString;
use std::fmt;
use std::io::{self, Write};
use std::path::PathBuf;

use clap::Parser;

pub use runtime::{
    bench_rank, calibrate_rank, gather_bench, gather_run, run_rank, BenchConfig, BenchReport,
    RankResult, RunConfig as RtRunConfig, RunReport as RtRunReport,
};

use args::{Cli, Command};

/// Exit code: everything verified.
pub const EXIT_OK: u8 = 0;
/// Exit code: a schedule failed verification.
pub const EXIT_FAILED: u8 = 1;
/// Exit code: bad input.
pub const EXIT_BAD_INPUT: u8 = 2;

/// Why a command could not run.
#[derive(Debug)]
pub enum CliError {
    /// The library rejected the input.
    Input(hypercomm::error::Error),
    /// A file could not be read.
    Read {
        /// The file (`-` for stdin).
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// Writing the output failed.
    Write(io::Error),
    /// A file could not be written.
    WriteFile {
        /// The file.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// `compare`: no algorithm could run; (algorithm, why) for each.
    NothingRan(Vec<(String, String)>),
    /// The runtime refused the input (an algorithm, a buffer, the calibration file).
    Runtime(hypercomm_rt::Error),
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CliError::Input(e) => e.fmt(f),
            CliError::Read { path, source } => {
                write!(f, "cannot read `{}`: {source}", path.display())
            }
            CliError::Write(e) => write!(f, "cannot write the output: {e}"),
            CliError::WriteFile { path, source } => {
                write!(f, "cannot write `{}`: {source}", path.display())
            }
            CliError::Runtime(e) => e.fmt(f),
            CliError::NothingRan(rows) => {
                f.write_str("no algorithm could run")?;
                for (algo, why) in rows {
                    write!(f, "\n  `{algo}`: {why}")?;
                }
                Ok(())
            }
        }
    }
}

impl std::error::Error for CliError {}

impl From<hypercomm::error::Error> for CliError {
    fn from(e: hypercomm::error::Error) -> Self {
        CliError::Input(e)
    }
}

impl From<io::Error> for CliError {
    fn from(e: io::Error) -> Self {
        CliError::Write(e)
    }
}

/// What a command established.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Everything verified, or nothing needed verifying.
    Ok,
    /// A schedule failed verification (the report was written).
    Failed,
}

/// Where a command writes: its report and its diagnostics.
pub struct Io<'a> {
    /// The report (stdout).
    pub out: &'a mut dyn Write,
    /// Diagnostics (stderr).
    pub err: &'a mut dyn Write,
}

/// Run the command line `args` (the program name first), writing to `out` and `err`;
/// returns the exit code.
pub fn run<I, T>(args: I, out: &mut dyn Write, err: &mut dyn Write) -> u8
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) => return clap_error(&e, out, err),
    };
    let mut io = Io { out, err };
    let result = dispatch(cli.command, &mut io);
    finish(result, io.err)
}

/// Print a clap error (or help / version) where clap would, with clap's exit code.
fn clap_error(e: &clap::Error, out: &mut dyn Write, err: &mut dyn Write) -> u8 {
    let text = e.render().to_string();
    let _ = if e.use_stderr() {
        err.write_all(text.as_bytes())
    } else {
        out.write_all(text.as_bytes())
    };
    u8::try_from(e.exit_code()).unwrap_or(EXIT_BAD_INPUT)
}

fn dispatch(command: Command, io: &mut Io<'_>) -> Result<Outcome, CliError> {
    match command {
        Command::Simulate(a) => simulate::run(&a, io),
        Command::Compare(a) => compare::run(&a, io),
        Command::Algorithms(a) => algorithms::run(&a, io),
        Command::Formulas(a) => formulas::run(&a, io),
        Command::Schedule(a) => schedule::run(&a, io),
        Command::Verify(a) => verify::run(&a, io),
        Command::Sweep(a) => sweep::run(&a, io),
        Command::Run(a) => threads::run(&a, io),
        Command::Bench(a) => threads::bench(&a, io),
        Command::Calibrate(a) => threads::calibrate(&a, io),
        Command::Tables(a) => tables::run(&a, io),
        Command::Draw(a) => draw::run(&a, io),
    }
}

/// The exit code of a command's result, reporting errors on `err`. A closed stdout
/// (`hypercomm schedule … | head`) is not an error.
fn finish(result: Result<Outcome, CliError>, err: &mut dyn Write) -> u8 {
    match result {
        Ok(Outcome::Ok) => EXIT_OK,
        Ok(Outcome::Failed) => EXIT_FAILED,
        Err(CliError::Write(e)) if e.kind() == io::ErrorKind::BrokenPipe => EXIT_OK,
        Err(e) => {
            let _ = writeln!(err, "error: {e}");
            EXIT_BAD_INPUT
        }
    }
}
