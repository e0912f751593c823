//! `run` and `bench` as the `hypercomm` CLI has them, on the MPI backend: the same
//! arguments, the CLI's transport-generic per-rank work
//! ([`hypercomm_cli::runtime::run_rank`], [`hypercomm_cli::runtime::bench_rank`]),
//! gathered to every rank, reported by rank 0 with the CLI's renderers, so
//! `mpirun -n K hypercomm-mpi run …` prints what `hypercomm run --backend threads
//! --ranks K …` prints (the backend's name aside).
//!
//! `--ranks` defaults to the job's size (`mpirun -n`); a different value is refused.
//! `run`'s seed is rank 0's (its `--seed`, or its clock's), broadcast to every rank.
//! `--backend` is ignored (this binary is the MPI backend). Exit codes as the CLI's: 0
//! correct, 1 a wrong result or a failed rank, 2 bad input (printed by rank 0).

use std::io::Write;
use std::time::Duration;

use hypercomm::algorithms::Shape;
use hypercomm_cli::args::{BenchArgs, Format, RtRunArgs};
use hypercomm_cli::runtime::{self, output, BenchReport, CalibrationInfo, RunReport};
use hypercomm_cli::{config, CliError};
use hypercomm_mpi::{Config, Failure};
use mpi::topology::SimpleCommunicator;
use mpi::traits::*;

/// The name reports give this backend.
pub const BACKEND: &str = "mpi";

/// Print `text` to stderr in one write (ranks share the terminal).
pub fn say(text: String) {
    std::io::stderr().write_all(text.as_bytes()).ok();
}

/// Validate on every rank (all reach the same verdict) and load the calibration `bench`
/// uses ([`hypercomm_cli::threads::calibration`]); rank 0 prints the error (exit 2).
pub fn prepare<T>(
    me: i32,
    f: impl FnOnce() -> Result<T, CliError>,
) -> Result<(T, CalibrationInfo), i32> {
    let got = f().and_then(|t| Ok((t, hypercomm_cli::threads::calibration()?)));
    got.map_err(|e| {
        if me == 0 {
            say(format!("error: {e}\n"));
        }
        i32::from(hypercomm_cli::EXIT_BAD_INPUT)
    })
}

/// The nodes × processes per node of `world` when `--shape` is `node` (collective:
/// every rank asks, all get the same answer), else `None`; an uneven or interleaved
/// placement is bad input, named.
fn node_shape_if_asked(
    world: &SimpleCommunicator,
    shape: Option<&str>,
) -> Result<Option<Shape>, hypercomm::error::Error> {
    match shape {
        Some(s) if s.trim().eq_ignore_ascii_case("node") => {
            hypercomm_mpi::node_shape(world).map(Some)
        }
        _ => Ok(None),
    }
}

/// The memory each rank may take, the same on every rank: the least over the job of
/// each rank's [`config::memory_limit`] (its machine's `MemAvailable`, its rlimits, its
/// cgroup) divided by the ranks sharing its machine (`MPI_Comm_split_type(SHARED)`);
/// [`config::MemoryLimit::FIXED`] if some rank cannot tell (issue 21).
pub fn agreed_memory_limit(world: &SimpleCommunicator) -> config::MemoryLimit {
    use mpi::collective::SystemOperation;
    let me = world.rank();
    let local = config::memory_limit();
    let sharing = world.split_shared(me).size().max(1) as u64;
    let mine: u64 = if local.available {
        local.bytes / sharing
    } else {
        u64::MAX
    };
    let mut least = 0u64;
    world.all_reduce_into(&mine, &mut least, SystemOperation::min());
    if least == u64::MAX {
        config::MemoryLimit::FIXED
    } else {
        config::MemoryLimit {
            bytes: least,
            available: true,
            source: "available to each rank (the least over the job's ranks of their \
                     machine's MemAvailable, rlimits and cgroup room, divided by the ranks \
                     sharing the machine)",
        }
    }
}

/// A rank's failure as the command's exit code.
fn failed(me: i32, f: Failure<hypercomm_rt::Error>) -> i32 {
    match f {
        Failure::Returned(e) | Failure::Setup(e) if runtime::is_input_error(&e) => {
            if me == 0 {
                say(format!("error: {e}\n"));
            }
            i32::from(hypercomm_cli::EXIT_BAD_INPUT)
        }
        f => {
            say(format!("error: rank {me} {f}\n"));
            i32::from(hypercomm_cli::EXIT_FAILED)
        }
    }
}

fn mpi_config(timeout: Duration, cal: &CalibrationInfo) -> Config {
    Config::new()
        .timeout(timeout)
        .calibration(cal.calibration())
}

/// `hypercomm-mpi run`.
pub fn run(world: &SimpleCommunicator, args: &RtRunArgs) -> i32 {
    let me = world.rank();
    let node = node_shape_if_asked(world, args.shape.as_deref());
    let limit = agreed_memory_limit(world);
    let ((mut cfg, timeout), cal) = match prepare(me, || {
        Ok((
            config::rt_run_in(args, config::Placement::OnePerProcess(limit), node?)?,
            config::timeout(args.problem.timeout)?,
        ))
    }) {
        Ok(p) => p,
        Err(code) => return code,
    };
    // Every rank builds its input and its reference from one seed: without `--seed`
    // each process took its own from its clock, so the ranks disagreed (issue 20).
    // Rank 0's seed, explicit or from its clock, is everyone's (and so are the counts
    // of a variable-count collective, drawn from it).
    let mut seed = cfg.seed;
    world.process_at_rank(0).broadcast_into(&mut seed);
    cfg.reseed(seed);
    let outcome = hypercomm_mpi::run(world, &mpi_config(timeout, &cal), |comm| {
        let local = runtime::run_rank(comm, &cfg)?;
        runtime::gather_run(comm, local)
    });
    let all = match outcome {
        Ok(all) => all,
        Err(f) => return failed(me, f),
    };
    // Every rank holds every result: all reach the same exit code.
    let report = RunReport::new(&cfg, BACKEND, &cal, &all, hypercomm_mpi::EXECUTION);
    if me == 0 {
        let mut out = std::io::stdout().lock();
        out.write_all(output::run(&report, args.format == Format::Json).as_bytes())
            .ok();
        out.flush().ok();
    }
    match &report.mismatch {
        Some(m) => {
            if me == 0 {
                say(format!(
                    "error: wrong result: rank {} element {} is {}, expected {}\n",
                    m.rank, m.index, m.got, m.expected
                ));
            }
            i32::from(hypercomm_cli::EXIT_FAILED)
        }
        None => 0,
    }
}

/// `hypercomm-mpi bench`.
pub fn bench(world: &SimpleCommunicator, args: &BenchArgs) -> i32 {
    let me = world.rank();
    let node = node_shape_if_asked(world, args.shape.as_deref());
    let limit = agreed_memory_limit(world);
    let ((mut cfg, timeout), cal) = match prepare(me, || {
        Ok((
            config::rt_bench_in(args, config::Placement::OnePerProcess(limit), node?)?,
            config::timeout(args.problem.timeout)?,
        ))
    }) {
        Ok(p) => p,
        Err(code) => return code,
    };
    // `--algo all`: every fitting schedule, and the MPI library's own collective.
    if args.algo.trim().eq_ignore_ascii_case("all") {
        cfg.algos.push(runtime::AlgoChoice::Native);
    }
    let outcome = hypercomm_mpi::run(world, &mpi_config(timeout, &cal), |comm| {
        let local = runtime::bench_rank(comm, &cfg, &|| {})?;
        runtime::gather_bench(comm, local)
    });
    let all = match outcome {
        Ok(all) => all,
        Err(f) => return failed(me, f),
    };
    if me == 0 {
        let report = BenchReport::new(&cfg, BACKEND, &cal, &all, hypercomm_mpi::EXECUTION);
        let mut out = std::io::stdout().lock();
        out.write_all(output::bench(&report, args.format).as_bytes())
            .ok();
        out.flush().ok();
    }
    0
}
