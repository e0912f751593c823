//! `run`, `bench` and `calibrate` on the threads backend: the ranks are threads of this
//! process ([`hypercomm_rt::threads`]); each runs the transport-generic per-rank work of
//! [`crate::runtime`], and the results come back in rank order for the report.
//!
//! Exit codes: 0 when the run is correct (or the benchmark and calibration complete),
//! 1 when a result is wrong, a rank failed (timeout, a failed peer) or the calibration's
//! fit is refused (nothing saved: [`calibrate::fit`]), 2 on bad input,
//! including what the runtime refuses before moving data.

use std::io::IsTerminal;

use hypercomm_rt::threads::{self, Failure, RunError};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::args::{
    BenchArgs, BenchFormat, CalibrateArgs, FibersArg, Format, PinArg, RtProblemArgs, RtRunArgs,
};
use crate::runtime::calibrate::{self, CalibrationSource, Lookup};
use crate::runtime::output::{self, CalibrationReport};
use crate::runtime::{self, BenchReport, CalibrationInfo, Execution, RunReport};
use crate::{config, CliError, Io, Outcome};

/// The name reports give this backend.
pub const BACKEND: &str = "threads";

/// The calibration in use ([`CalibrationSource`]'s order): `HYPERCOMM_CALIBRATION`'s
/// file (or the defaults for `off`), the default file if it exists, else this
/// machine's automatic calibration, measured now ([`auto_calibration`]) when there is
/// none yet, with a note on `err`.
pub fn calibration(err: &mut dyn std::io::Write) -> Result<CalibrationInfo, CliError> {
    let machine = machine_name();
    match CalibrationSource::for_backend(BACKEND, Some(&machine))
        .lookup()
        .map_err(CliError::Runtime)?
    {
        Lookup::Found(c) => Ok(c),
        Lookup::Measure { cache, unreadable } => Ok(auto_calibration(
            cache.as_deref(),
            unreadable.as_deref(),
            err,
        )?),
    }
}

/// This machine as the automatic calibration's file names it: the CPUs this process may
/// run on and the host (`threads-2cpus-myhost`).
pub fn machine_name() -> String {
    format!(
        "threads-{}cpus-{}",
        threads::cpu_count(),
        calibrate::host_name()
    )
}

/// Measure the threads backend as `calibrate --ranks 2` does, with fewer exchanges per
/// size ([`calibrate::auto_reps`]) and sizes up to [`calibrate::AUTO_MAX_SIZE`] (less
/// where memory is short), and keep the file at `cache`; a note on `err` says so.
/// What cannot be measured or fitted (a busy machine, three times) leaves the runtime's
/// defaults, said too: a command never fails for want of a calibration.
pub fn auto_calibration(
    cache: Option<&std::path::Path>,
    unreadable: Option<&str>,
    err: &mut dyn std::io::Write,
) -> Result<CalibrationInfo, CliError> {
    let start = std::time::Instant::now();
    let fiber_ranks = 2 * threads::cpu_count().max(1) as u32;
    // Buffers in at most a quarter of the memory available: 2 ranks, then the same-CPU
    // pairs' up to 4 MiB.
    let room = config::memory_limit().bytes / 4;
    let sizes = calibrate::auto_sizes(room, 2);
    let same_cpu_sizes: Vec<usize> = calibrate::auto_sizes(room, fiber_ranks)
        .into_iter()
        .filter(|&s| s as u64 <= calibrate::DEFAULT_MAX_SIZE)
        .collect();
    let timeout = std::time::Duration::from_secs(60);
    let pattern = calibrate::Pattern::Exchange;
    let mut why = String::from("too little memory to measure two sizes");
    for _ in 0..3 {
        if sizes.len() < 2 {
            break;
        }
        let reps = &calibrate::auto_reps;
        match measure(2, timeout, &sizes, &same_cpu_sizes, reps, reps, pattern) {
            Ok(m) => {
                let text = file_text(&m, 2, pattern);
                let secs = start.elapsed().as_secs_f64();
                let (info, note) =
                    calibrate::keep_measured(BACKEND, cache, &text, m.fitted, secs, unreadable);
                err.write_all(note.as_bytes())?;
                return Ok(info);
            }
            Err(Measure::Fit(e, _)) => why = e.to_string(),
            Err(Measure::Run(e)) => {
                why = format!("the ranks failed: {e}");
                break;
            }
        }
    }
    err.write_all(calibrate::defaults_note(BACKEND, &why).as_bytes())?;
    Ok(CalibrationInfo::new(
        hypercomm_rt::Calibration::default(),
        None,
    ))
}

/// What a threads calibration measured: the fit, its points, the same-CPU pairs', and
/// the lone messages' that its `shared-copy` comes from.
struct Measured {
    fitted: hypercomm_rt::Calibration,
    points: Vec<calibrate::PingPong>,
    same_cpu: Vec<calibrate::PingPong>,
    lone: Vec<calibrate::PingPong>,
}

/// Why a threads calibration has no fit.
enum Measure {
    /// A rank failed.
    Run(RunError<hypercomm_rt::Error>),
    /// The points do not fit ([`calibrate::fit`]).
    Fit(calibrate::FitError, Vec<calibrate::PingPong>),
}

/// Calibrate the threads backend: `k` ranks in pairs at `sizes`, then (when ranks
/// outnumbering the CPUs run as fibers) two ranks a CPU at `same_cpu_sizes`.
fn measure(
    k: u32,
    timeout: std::time::Duration,
    sizes: &[usize],
    same_cpu_sizes: &[usize],
    reps: &(dyn Fn(usize) -> u64 + Sync),
    same_cpu_reps: &(dyn Fn(usize) -> u64 + Sync),
    pattern: calibrate::Pattern,
) -> Result<Measured, Measure> {
    let tcfg = threads::Config::new(k)
        .timeout(timeout)
        .calibration(hypercomm_rt::Calibration::default());
    let per_rank = threads::run_with(&tcfg, |comm| {
        calibrate::calibrate_rank(comm, sizes, reps, pattern)
    })
    .map_err(Measure::Run)?;
    let points = calibrate::average(&per_rank);
    let mut fitted = calibrate::fit(&points).map_err(|e| Measure::Fit(e, points.clone()))?;
    // The same-CPU pairs: two ranks a CPU, as fibers (ranks 2j and 2j + 1 on CPU j).
    let fiber_ranks = 2 * threads::cpu_count().max(1) as u32;
    let fcfg = threads::Config::new(fiber_ranks)
        .timeout(timeout)
        .calibration(hypercomm_rt::Calibration::default())
        .fibers(true);
    let same_cpu = if fcfg.uses_fibers() && same_cpu_sizes.len() >= 2 {
        let r = threads::run_with(&fcfg, |comm| {
            calibrate::calibrate_rank_with(comm, same_cpu_sizes, same_cpu_reps, pattern, false)
        })
        .map_err(Measure::Run)?;
        calibrate::same_cpu_points(&calibrate::average(&r), pattern)
    } else {
        Vec::new()
    };
    fitted.same_cpu = calibrate::same_cpu_bands(&same_cpu);
    // Lone messages from the size whose copy an idle sender shares (up to 4 MiB), on
    // two ranks with a CPU each: their one-way times give `shared-copy`.
    let from = threads::SHARED_COPY_FROM;
    let lone_sizes: Vec<usize> = sizes
        .iter()
        .copied()
        .filter(|&s| s >= from && s as u64 <= calibrate::DEFAULT_MAX_SIZE)
        .collect();
    let lone = if threads::cpu_count() >= 2 && !lone_sizes.is_empty() {
        let lcfg = threads::Config::new(2)
            .timeout(timeout)
            .calibration(hypercomm_rt::Calibration::default());
        threads::run_with(&lcfg, |comm| {
            calibrate::lone_points(comm, &lone_sizes, reps)
        })
        .map_err(Measure::Run)?
        .concat()
    } else {
        Vec::new()
    };
    fitted.shared_copy = calibrate::shared_copy_shares(&fitted, &lone, from);
    Ok(Measured {
        fitted,
        points,
        same_cpu,
        lone,
    })
}

/// The calibration file's text of `m`, measured by `k` ranks.
fn file_text(m: &Measured, k: u32, pattern: calibrate::Pattern) -> String {
    let mut text = calibrate::file_text(m.fitted, BACKEND, k, pattern, &m.points);
    text.push_str(&calibrate::same_cpu_text(&m.fitted, &m.same_cpu));
    text.push_str(&calibrate::shared_copy_text(&m.fitted, &m.lone));
    text
}

/// Turn a failed launch into the command's result: input errors exit 2, a rank that
/// failed while running exits 1 with its failure on stderr.
fn failed<E>(e: RunError<hypercomm_rt::Error>, io: &mut Io<'_>) -> Result<E, CliError>
where
    E: From<Outcome>,
{
    match e {
        RunError::Setup(e) => Err(CliError::Runtime(e)),
        RunError::Rank {
            failure: Failure::Returned(e),
            ..
        } if runtime::is_input_error(&e) => Err(CliError::Runtime(e)),
        RunError::Rank { rank, failure } => {
            writeln!(io.err, "error: rank {rank} {failure}")?;
            Ok(E::from(Outcome::Failed))
        }
    }
}

fn config_of(
    k: u32,
    timeout: std::time::Duration,
    c: &CalibrationInfo,
    problem: &RtProblemArgs,
) -> threads::Config {
    let cfg = threads::Config::new(k)
        .timeout(timeout)
        .calibration(c.calibration())
        .fibers(problem.fibers == FibersArg::Auto)
        .tuning(hypercomm_rt::Tuning::from_env_or(
            hypercomm_rt::Tuning::measure(),
        ));
    match problem.pin {
        PinArg::Auto => cfg,
        PinArg::On => cfg.pin(true),
        PinArg::Off => cfg.pin(false),
    }
}

/// The backend as reports name it: `threads`, or `threads (fibers)` when the ranks
/// run as fibers (`--fibers auto`, the default, and more ranks than CPUs).
fn backend_name(config: &threads::Config) -> &'static str {
    if config.uses_fibers() {
        "threads (fibers)"
    } else {
        BACKEND
    }
}

/// What the prediction knows of how the threads backend runs `config`
/// ([`threads::execution_of`], what its `auto` ranks by too).
fn execution(config: &threads::Config) -> Execution {
    threads::execution_of(config)
}

/// `hypercomm run`.
pub fn run(args: &RtRunArgs, io: &mut Io<'_>) -> Result<Outcome, CliError> {
    config::backend(args.problem.backend.as_deref().unwrap_or("threads"))?;
    let cfg = config::rt_run(args)?;
    let timeout = config::timeout(args.problem.timeout)?;
    let cal = calibration(io.err)?;
    let config = config_of(cfg.ranks, timeout, &cal, &args.problem);
    let results = match threads::run_with(&config, |comm| runtime::run_rank(comm, &cfg)) {
        Ok(r) => r,
        Err(e) => return failed(e, io),
    };
    let report = RunReport::new(
        &cfg,
        backend_name(&config),
        &cal,
        &results,
        execution(&config),
    );
    io.out
        .write_all(output::run(&report, args.format == Format::Json).as_bytes())?;
    io.out.flush()?;
    if let Some(m) = &report.mismatch {
        writeln!(
            io.err,
            "error: wrong result: rank {} element {} is {}, expected {}",
            m.rank, m.index, m.got, m.expected
        )?;
        return Ok(Outcome::Failed);
    }
    Ok(Outcome::Ok)
}

/// A progress bar on stderr, hidden when stderr is no terminal or `hidden`. Rank 0's
/// thread draws it, so the caller must not hold the process's stderr lock meanwhile
/// (`main` passes an unlocked `Stderr`).
fn progress_bar(len: usize, hidden: bool) -> ProgressBar {
    if hidden || !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::with_draw_target(Some(len as u64), ProgressDrawTarget::stderr());
    if let Ok(style) = ProgressStyle::with_template("{bar:40} {pos}/{len} points, {elapsed}") {
        bar.set_style(style);
    }
    bar
}

/// `hypercomm bench`.
pub fn bench(args: &BenchArgs, io: &mut Io<'_>) -> Result<Outcome, CliError> {
    config::backend(args.problem.backend.as_deref().unwrap_or("threads"))?;
    let cfg = config::rt_bench(args)?;
    let timeout = config::timeout(args.problem.timeout)?;
    let cal = calibration(io.err)?;
    let bar = progress_bar(cfg.points(), args.format != BenchFormat::Text);
    let config = config_of(cfg.ranks, timeout, &cal, &args.problem);
    let results = threads::run_with(&config, |comm| {
        let leader = comm.rank() == 0;
        let tick = || {
            if leader {
                bar.inc(1);
            }
        };
        runtime::bench_rank(comm, &cfg, &tick)
    });
    bar.finish_and_clear();
    let results = match results {
        Ok(r) => r,
        Err(e) => return failed(e, io),
    };
    let report = BenchReport::new(
        &cfg,
        backend_name(&config),
        &cal,
        &results,
        execution(&config),
    );
    io.out
        .write_all(output::bench(&report, args.format).as_bytes())?;
    io.out.flush()?;
    Ok(Outcome::Ok)
}

/// `hypercomm calibrate`.
pub fn calibrate(args: &CalibrateArgs, io: &mut Io<'_>) -> Result<Outcome, CliError> {
    config::backend(&args.backend)?;
    // Checked here whole: `--ranks 0` named 1..=1024 as valid, and 1 was then refused.
    // An odd count was accepted, its last rank without a partner idle in the barriers
    // (and the file said it had measured on that many ranks).
    let odd = args.ranks % 2 == 1;
    if !(2..=config::MAX_RANKS).contains(&args.ranks) || odd {
        return Err(hypercomm::error::Error::InvalidParameter {
            what: "--ranks",
            reason: format!(
                "{}{}; valid: 2..={}, an even count",
                args.ranks,
                if args.ranks < 2 {
                    "; the measurement needs a pair"
                } else if odd && args.ranks <= config::MAX_RANKS {
                    "; ranks measure in pairs (0, 1), (2, 3), …, and an odd count would \
                     leave the last rank without a partner"
                } else {
                    ""
                },
                config::MAX_RANKS
            ),
        }
        .into());
    }
    let k = config::ranks(args.ranks)?;
    let path = calibrate::output_path(args.output.clone(), args.reps, BACKEND)?;
    let timeout = config::timeout(args.timeout)?;
    let sizes = calibrate::checked_sizes(args.max_size)?;
    let largest = sizes.last().copied().unwrap_or(0) as u64;
    // The same-CPU pairs: two ranks a CPU, as fibers (ranks 2j and 2j + 1 on CPU j).
    let fiber_ranks = 2 * threads::cpu_count().max(1) as u32;
    config::check_rt_bytes(
        largest.saturating_mul(2 * u64::from(k.max(fiber_ranks))),
        "the ranks' two buffers at the largest size",
        config::Placement::Together.limit(),
        "--max-size",
    )?;
    let reps = |bytes: usize| args.reps.unwrap_or_else(|| calibrate::default_reps(bytes));
    let same_reps = |b: usize| args.reps.unwrap_or_else(|| calibrate::same_cpu_reps(b));
    let pattern = args.pattern;
    let m = match measure(k, timeout, &sizes, &sizes, &reps, &same_reps, pattern) {
        Ok(m) => m,
        Err(Measure::Run(e)) => return failed(e, io),
        Err(Measure::Fit(e, points)) => {
            write!(io.err, "{}", calibrate::not_saved(&path, &e, &points))?;
            return Ok(Outcome::Failed);
        }
    };
    let text = file_text(&m, k, pattern);
    calibrate::save(&path, &text).map_err(|source| CliError::WriteFile {
        path: path.clone(),
        source,
    })?;
    let Measured {
        fitted,
        points,
        same_cpu,
        lone: _,
    } = m;
    let report = CalibrationReport {
        backend: BACKEND.into(),
        ranks: k,
        pattern,
        points,
        beta: fitted.beta,
        tau: fitted.tau,
        bands: fitted.bands.as_slice().to_vec(),
        fresh: fitted.fresh.as_slice().to_vec(),
        same_cpu: same_cpu.iter().map(|p| (p.bytes, p.time)).collect(),
        same_cpu_bands: fitted.same_cpu.as_slice().to_vec(),
        shared_copy: fitted.shared_copy.as_slice().to_vec(),
        saved: path.display().to_string(),
    };
    let out = match args.format {
        Format::Json => crate::output::json(&report),
        Format::Text => output::calibration_text(&report),
    };
    io.out.write_all(out.as_bytes())?;
    io.out.flush()?;
    Ok(Outcome::Ok)
}
