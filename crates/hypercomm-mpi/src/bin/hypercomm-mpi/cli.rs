//! `run` and `bench` as the `hypercomm` CLI has them, on the MPI backend: the same
//! arguments, the CLI's transport-generic per-rank work
//! ([`hypercomm_cli::runtime::run_rank`], [`hypercomm_cli::runtime::bench_rank`]),
//! gathered to every rank, reported by rank 0 with the CLI's renderers, so
//! `mpirun -n K hypercomm-mpi run …` prints what `hypercomm run --backend threads
//! --ranks K …` prints (the backend's name aside).
//!
//! `--ranks` defaults to the job's size (`mpirun -n`); a different value is refused.
//! `run`'s seed is rank 0's (its `--seed`, or its clock's), broadcast to every rank.
//! `--backend` may be `mpi` or absent (this binary is the MPI backend; `threads` is
//! refused). Exit codes as the CLI's: 0 correct, 1 a wrong result or a failed rank, 2
//! bad input (printed by rank 0).

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

/// Validate on every rank (all reach the same verdict), then agree on the calibration
/// `bench` and `auto` use ([`agreed_calibration`], each of its collectives waited for
/// at most `timeout`); rank 0 prints a bad input (exit 2), every rank a set-up that
/// timed out or failed (exit 1).
pub fn prepare<T>(
    world: &SimpleCommunicator,
    timeout: Duration,
    f: impl FnOnce() -> Result<T, CliError>,
) -> Result<(T, CalibrationInfo), i32> {
    let me = world.rank();
    let bad = |e: String| {
        if me == 0 {
            say(format!("error: {e}\n"));
        }
        i32::from(hypercomm_cli::EXIT_BAD_INPUT)
    };
    let t = f().map_err(|e| bad(e.to_string()))?;
    let cal = agreed_calibration(world, timeout).map_err(|e| match e {
        Agreement::Bad(e) => bad(e),
        Agreement::Unsettled(e) => set_up_failed(me, &e),
    })?;
    Ok((t, cal))
}

/// Why the ranks did not agree on a calibration.
#[derive(Debug)]
pub enum Agreement {
    /// Rank 0's file is unreadable or bad (its message): bad input.
    Bad(String),
    /// A collective of the agreement did not complete: a rank did not join in time, or
    /// MPI failed.
    Unsettled(hypercomm_rt::Error),
}

/// Report on this rank that its set-up's agreement did not complete; exit 1.
pub fn set_up_failed(me: i32, e: &hypercomm_rt::Error) -> i32 {
    say(format!("hypercomm-mpi: rank {me}: set-up: {e}\n"));
    i32::from(hypercomm_cli::EXIT_FAILED)
}

/// The timeout the set-up's agreement waits for: `--timeout` when valid (a bad one is
/// refused afterwards, as bad input, by the command's own validation), else 60 s.
pub fn set_up_timeout(secs: f64) -> Duration {
    config::timeout(secs).unwrap_or(Duration::from_secs(60))
}

/// The MPI backend's calibration, the same on every rank: rank 0 finds it
/// ([`CalibrationSource::for_backend`]: `HYPERCOMM_CALIBRATION`, `calibration-mpi.conf`,
/// the automatic one of this library and host, oversubscribed or not:
/// [`hypercomm_mpi::machine_name`]) and sends it to all, so that ranks on
/// other hosts, whose files may differ or be missing, price alike. Where there is none,
/// every rank takes part in measuring one (pairs of ranks, as `calibrate`, with
/// [`calibrate::auto_reps`] up to [`calibrate::AUTO_MAX_SIZE`]), which rank 0 keeps in
/// the cache and reports on stderr. An unreadable or bad file is rank 0's error, given to
/// every rank. Each collective waits at most `timeout` ([`hypercomm_mpi::agree`]): a rank
/// that does not join is [`Agreement::Unsettled`] on every rank that waited, and on the
/// late rank itself, never a hang.
pub fn agreed_calibration(
    world: &SimpleCommunicator,
    timeout: Duration,
) -> Result<CalibrationInfo, Agreement> {
    use hypercomm_cli::runtime::calibrate::{CalibrationSource, Lookup};
    use hypercomm_mpi::agree;
    let me = world.rank();
    let unsettled = Agreement::Unsettled;
    // Rank 0's verdict: 0 found, 1 measure, 2 error; with the text of the calibration
    // or of the error, and the source.
    let (mut verdict, mut text, mut source) = (0u8, String::new(), String::new());
    let (mut cache, mut unreadable) = (None, None);
    // Collective: every rank, before rank 0 alone looks.
    let (here, per_host) = agree::machine_and_hosts_within(world, timeout).map_err(unsettled)?;
    if me == 0 {
        // A job across hosts keeps a file of its own, with the network's bands.
        let machine = match per_host {
            Some(n) => format!("{}-{n}perhost", hypercomm_mpi::machine_name(here)),
            None => hypercomm_mpi::machine_name(here),
        };
        match CalibrationSource::for_backend(BACKEND, Some(&machine)).lookup() {
            Ok(Lookup::Found(c)) => {
                text = c.calibration().to_text();
                // A file without them (the defaults, HYPERCOMM_CALIBRATION=off, have no
                // source and no bands by choice: nothing to say, "the calibration ()").
                let no_network = c.calibration().network.is_empty() && c.source.is_some();
                source = c.source.unwrap_or_default();
                if let (Some(n), true) = (per_host, no_network) {
                    say(format!(
                        "hypercomm: the calibration ({source}) has no network bands: on \
                         hosts of {n} ranks a message between hosts is priced as one \
                         within a host; `mpirun … hypercomm-mpi calibrate` across the \
                         hosts measures them\n"
                    ));
                }
            }
            Ok(Lookup::Measure {
                cache: c,
                unreadable: u,
            }) => {
                verdict = 1;
                (cache, unreadable) = (c, u);
            }
            Err(e) => {
                verdict = 2;
                text = e.to_string();
            }
        }
    }
    let call = "the broadcast of rank 0's calibration";
    let send = |bytes: Vec<u8>| agree::broadcast_within(world, 0, bytes, timeout, call);
    verdict = send(vec![verdict])
        .map_err(unsettled)?
        .first()
        .copied()
        .unwrap_or(2);
    if verdict == 1 {
        (text, source) = measure_calibration(
            world,
            per_host,
            cache.as_deref(),
            unreadable.as_deref(),
            timeout,
        )
        .map_err(unsettled)?;
    }
    let text = String::from_utf8_lossy(&send(text.into_bytes()).map_err(unsettled)?).into_owned();
    let source =
        String::from_utf8_lossy(&send(source.into_bytes()).map_err(unsettled)?).into_owned();
    if verdict == 2 {
        return Err(Agreement::Bad(text));
    }
    let c = hypercomm_rt::Calibration::parse(&text).map_err(|e| Agreement::Bad(e.to_string()))?;
    Ok(CalibrationInfo::new(
        c,
        (!source.is_empty()).then_some(source),
    ))
}

/// Measure the MPI backend's calibration with ranks 0 and 1 of `world` (the others
/// wait: what is kept does not depend on the job's size, nor on how many ranks share a
/// CPU), and, when the job spans hosts of `per_host` ranks, with rank 0 and the first
/// rank of the next host for its `network` bands ([`network_points`]; up to 4 MiB), and,
/// when its ranks share CPUs, every rank at once for its `switch`
/// ([`calibrate::switch_points`]), keep
/// it at `cache`; rank 0's (calibration text, source) for
/// [`agreed_calibration`]: the runtime's defaults on 1 rank (no pair: silently), and on
/// a refused fit (with a note); an error when a rank failed or did not join within
/// `timeout` (the agreement on the memory each rank may take, or the measurement: the
/// ranks then stop, as a rank may have left a set-up collective pending on `world`).
fn measure_calibration(
    world: &SimpleCommunicator,
    per_host: Option<u32>,
    cache: Option<&std::path::Path>,
    unreadable: Option<&str>,
    timeout: Duration,
) -> Result<(String, String), hypercomm_rt::Error> {
    use hypercomm_cli::runtime::calibrate;
    let me = world.rank();
    let defaults = |why: Option<String>| {
        if let Some(why) = why.filter(|_| me == 0) {
            say(calibrate::defaults_note(BACKEND, &why));
        }
        Ok((
            hypercomm_rt::Calibration::default().to_text(),
            String::new(),
        ))
    };
    if world.size() < 2 {
        return defaults(None);
    }
    let start = std::time::Instant::now();
    // The pair's two buffers each in at most a quarter of what each rank may take.
    let sizes = calibrate::auto_sizes(agreed_memory_limit(timeout)?.bytes / 4, 1);
    if sizes.len() < 2 {
        return defaults(Some("too little memory to measure two sizes".into()));
    }
    let config = Config::new().timeout(timeout);
    let pattern = calibrate::Pattern::Exchange;
    let outcome = hypercomm_mpi::run(world, &config, |comm| {
        let points = calibrate::calibrate_pairs(
            comm,
            &sizes,
            &calibrate::auto_reps,
            pattern,
            true,
            1,
            true,
        )?;
        let reps = &calibrate::auto_reps;
        let network = network_points(comm, per_host, &sizes, reps, pattern, true)?;
        let shared = calibrate::switch_points(comm, comm.execution().cpus)?;
        Ok::<_, hypercomm_rt::Error>((points, network, shared))
    });
    let (points, network, shared) = match outcome {
        Ok(p) => p,
        Err(f) => {
            return Err(hypercomm_rt::Error::Unsupported {
                call: "the automatic calibration",
                reason: f.to_string(),
            })
        }
    };
    if me != 0 {
        return Ok((String::new(), String::new()));
    }
    let mut fitted = match calibrate::fit(&points) {
        Ok(c) => c,
        Err(e) => return defaults(Some(e.to_string())),
    };
    fitted.network = calibrate::network_bands(&network);
    let switch = calibrate::set_switch(&mut fitted, shared, &points);
    let mut file = calibrate::file_text(fitted, BACKEND, 2, pattern, &points);
    file.push_str(&calibrate::network_text(&fitted, &network));
    file.push_str(&switch);
    let secs = start.elapsed().as_secs_f64();
    let (info, note) = calibrate::keep_measured(BACKEND, cache, &file, fitted, secs, unreadable);
    say(note);
    Ok((fitted.to_text(), info.source.unwrap_or_default()))
}

/// The nodes × processes per node of `world` when `--shape` is `node` (collective:
/// every rank asks, all get the same answer, waiting at most `--timeout`), else `None`;
/// an uneven or interleaved placement is bad input, named, and so is a bad `--timeout`.
fn node_shape_if_asked(
    world: &SimpleCommunicator,
    shape: Option<&str>,
    timeout: f64,
) -> Result<Option<Shape>, hypercomm::error::Error> {
    match shape {
        Some(s) if s.trim().eq_ignore_ascii_case("node") => {
            hypercomm_mpi::node_shape_within(world, config::timeout(timeout)?).map(Some)
        }
        _ => Ok(None),
    }
}

/// The memory each rank may take, the same on every rank: the least over the job of
/// each rank's [`config::memory_limit`] (its machine's `MemAvailable`, its rlimits, its
/// cgroup) divided by the ranks sharing its machine (one all-gather of the ranks'
/// machines, [`hypercomm_mpi::agree::ranks_on_machine_within`]);
/// [`config::MemoryLimit::FIXED`] if some rank cannot tell (issue 21).
///
/// Collective over `MPI_COMM_WORLD` (the job's ranks, whatever communicator a command
/// runs on) on its first call; later calls return that answer without a word to the
/// peers (every rank calls it first at the same point of a command): a command
/// asks before it parses and again when it measures a calibration, and on 8 MPICH
/// ranks sharing 2 cores the second agreement took 0.3 s of the calibration's 1.5 s.
/// Each of its collectives waits at most `timeout` ([`hypercomm_mpi::agree`]): a rank
/// that does not join is an error on every rank that waits for it, never a hang.
pub fn agreed_memory_limit(timeout: Duration) -> hypercomm_rt::Result<config::MemoryLimit> {
    static AGREED: std::sync::OnceLock<config::MemoryLimit> = std::sync::OnceLock::new();
    if let Some(limit) = AGREED.get() {
        return Ok(*limit);
    }
    let limit = agree_memory_limit(&SimpleCommunicator::world(), timeout)?;
    Ok(*AGREED.get_or_init(|| limit))
}

fn agree_memory_limit(
    world: &SimpleCommunicator,
    timeout: Duration,
) -> hypercomm_rt::Result<config::MemoryLimit> {
    use hypercomm_mpi::agree;
    let local = config::memory_limit();
    let sharing = agree::ranks_on_machine_within(world, timeout)? as u64;
    let mine: u64 = if local.available {
        local.bytes / sharing
    } else {
        u64::MAX
    };
    let least = agree::all_min_within(world, mine, timeout, "the all-reduce of the memory limit")?;
    Ok(if least == u64::MAX {
        config::MemoryLimit::FIXED
    } else {
        config::MemoryLimit {
            bytes: least,
            available: true,
            source: "available to each rank (the least over the job's ranks of their \
                     machine's MemAvailable, rlimits and cgroup room, divided by the ranks \
                     sharing the machine)",
        }
    })
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

/// With the ranks on hosts of `per_host` ([`hypercomm_mpi::ranks_per_host`]): rank 0's
/// one-way times with rank `per_host`, the first of the next host, at `sizes` up to
/// [`calibrate::DEFAULT_MAX_SIZE`] (same data; for the calibration's `network` bands);
/// no points on one host, on hosts of one rank (the pair (0, 1) measured the network
/// already), or on other ranks. Every rank of `comm` calls it; `quick` as
/// [`calibrate::calibrate_pairs`](hypercomm_cli::runtime::calibrate::calibrate_pairs)'s
/// (the automatic calibration's; not `calibrate`'s).
pub fn network_points<X: hypercomm_rt::Transport>(
    comm: &mut hypercomm_rt::Comm<X>,
    per_host: Option<u32>,
    sizes: &[usize],
    reps: &dyn Fn(usize) -> u64,
    pattern: hypercomm_cli::runtime::calibrate::Pattern,
    quick: bool,
) -> hypercomm_rt::Result<Vec<hypercomm_cli::runtime::calibrate::PingPong>> {
    use hypercomm_cli::runtime::calibrate;
    // One rank a host: the pair (0, 1) crossed hosts already, so the calibration's
    // own line and bands are the network's (local copies priced so too).
    let Some(n) = per_host.filter(|&n| n > 1 && n < comm.size()) else {
        return Ok(Vec::new());
    };
    let sizes: Vec<usize> = sizes
        .iter()
        .copied()
        .filter(|&s| s as u64 <= calibrate::DEFAULT_MAX_SIZE)
        .collect();
    calibrate::calibrate_between(comm, 0, n, &sizes, reps, pattern, false, quick)
}

fn mpi_config(timeout: Duration, cal: &CalibrationInfo) -> Config {
    Config::new()
        .timeout(timeout)
        .calibration(cal.calibration())
}

/// `hypercomm-mpi run`.
pub fn run(world: &SimpleCommunicator, args: &RtRunArgs) -> i32 {
    let me = world.rank();
    let node = node_shape_if_asked(world, args.shape.as_deref(), args.problem.timeout);
    let agree_for = set_up_timeout(args.problem.timeout);
    let limit = match agreed_memory_limit(agree_for) {
        Ok(l) => l,
        Err(e) => return set_up_failed(me, &e),
    };
    let ((mut cfg, timeout), cal) = match prepare(world, agree_for, || {
        config::mpi_backend(args.problem.backend.as_deref())?;
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
    let call = "the broadcast of rank 0's seed";
    let seed = hypercomm_mpi::agree::broadcast_within(
        world,
        0,
        cfg.seed.to_le_bytes().to_vec(),
        timeout,
        call,
    )
    .and_then(|b| {
        <[u8; 8]>::try_from(b.as_slice())
            .map(u64::from_le_bytes)
            .map_err(|_| hypercomm_rt::Error::Unsupported {
                call,
                reason: format!("{} bytes came, not 8", b.len()),
            })
    });
    match seed {
        Ok(seed) => cfg.reseed(seed),
        Err(e) => return set_up_failed(me, &e),
    }
    let outcome = hypercomm_mpi::run(world, &mpi_config(timeout, &cal), |comm| {
        let local = runtime::run_rank(comm, &cfg)?;
        Ok::<_, hypercomm_rt::Error>((runtime::gather_run(comm, local)?, comm.execution()))
    });
    let (all, execution) = match outcome {
        Ok(all) => all,
        Err(f) => return failed(me, f),
    };
    // Every rank holds every result: all reach the same exit code.
    let report = RunReport::new(&cfg, BACKEND, &cal, &all, execution);
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
    let node = node_shape_if_asked(world, args.shape.as_deref(), args.problem.timeout);
    let agree_for = set_up_timeout(args.problem.timeout);
    let limit = match agreed_memory_limit(agree_for) {
        Ok(l) => l,
        Err(e) => return set_up_failed(me, &e),
    };
    let ((mut cfg, timeout), cal) = match prepare(world, agree_for, || {
        config::mpi_backend(args.problem.backend.as_deref())?;
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
        Ok::<_, hypercomm_rt::Error>((runtime::gather_bench(comm, local)?, comm.execution()))
    });
    let (all, execution) = match outcome {
        Ok(all) => all,
        Err(f) => return failed(me, f),
    };
    if me == 0 {
        let report = BenchReport::new(&cfg, BACKEND, &cal, &all, execution);
        let mut out = std::io::stdout().lock();
        out.write_all(output::bench(&report, args.format).as_bytes())
            .ok();
        out.flush().ok();
    }
    0
}
