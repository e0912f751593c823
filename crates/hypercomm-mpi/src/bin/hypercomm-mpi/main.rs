//! `hypercomm-mpi`: run under `mpirun`.
//!
//! - `run`, `bench`: the `hypercomm` CLI's commands of the same names, on MPI (same
//!   arguments, same output; `--ranks` defaults to the job's size; `--algo native` runs
//!   the MPI library's own collective, and `bench --algo all` includes it).
//! - `check`: every collective × every registry algorithm that fits the job's ranks (and
//!   `native`, the MPI library's own collective called by the runtime) × lengths ×
//!   roots, ours on random integers against the native MPI collective called by rsmpi
//!   (`MPI_Bcast`, `MPI_Scatter`, …, `MPI_Reduce_scatter_block`); one line per case from
//!   rank 0; exit 1 on any mismatch.
//! - `fault --rank R [--panic | --stall S | --stall-setup S | --stall-agree S | --stall-split S | --mismatch | --leave]`:
//!   every rank runs all-reduces (or splits the communicator); rank R fails on purpose
//!   and every other rank must report `PeerFailed` naming it (or time out, in its calls,
//!   in the set-up's agreement, in building the communicator or in a split, or detect
//!   the length mismatch). With `--leave`, rank R
//!   stops early *successfully* (drops its communicator, exits 0): the others, who still
//!   wait for its messages, must name it as promptly. With `--leave --harmless`, rank R
//!   leaves once it sent its last messages, which the others take after it left before
//!   going on among themselves: no one fails (exit 0).
//! - `vs-native`: OSU-style sizes, ours (auto or a named algorithm) against native MPI,
//!   per collective, with the ratio ours/native, the cost model's time of the algorithm
//!   that ran (`pred µs`, as `bench` predicts it) and ours/pred. The calibration is the
//!   one `bench` uses (`$HYPERCOMM_CALIBRATION`, else `calibration-mpi.conf` in the
//!   configuration directory, else the automatic one of this machine, measured by the
//!   first job that needs it: [`cli::agreed_calibration`]); the header says which. `HYPERCOMM_PER_RANK=1` also
//!   prints each rank's own mean to stderr (which rank is the slowest, on each side).
//! - `calibrate`: β and τ of the MPI backend, saved where `bench` and `vs-native` read.
//! - `osu alltoallv|allgatherv|iallreduce|ialltoallv|iallgatherv`: the OSU
//!   micro-benchmarks of those names (latency avg/min/max over ranks; the non-blocking
//!   ones' overlap %), ours (`auto` and the
//!   algorithms named) against native MPI in one run, with the ratio and whether each
//!   result equals native's (exit 1 if one does not).

mod cli;
mod osu;
mod validate;

use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::{Parser, Subcommand};
use hypercomm::algorithms;
use hypercomm::collective::OpKind;
use hypercomm::schedule::Rank;
use hypercomm::topology::Topology;
use hypercomm_cli::args::{BenchArgs, Pattern, RtRunArgs};
use hypercomm_mpi::{exit_watchdog, Config, Failure, Mpi};
use hypercomm_rt::{Algo, Comm, Error, Op, Persistent};
use mpi::collective::SystemOperation;
use mpi::topology::SimpleCommunicator;
use mpi::traits::*;

#[derive(Parser)]
#[command(
    name = "hypercomm-mpi",
    about = "hypercomm on MPI: run, bench, checks against native MPI, fault injection (under mpirun)"
)]
struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(clap::Args)]
struct Common {
    /// Seconds a wait may last before a timeout error.
    #[arg(long, default_value = "60", value_parser = seconds)]
    timeout: Duration,
}

/// `--timeout`'s value: a number of seconds > 0 (as `hypercomm`'s), else the error
/// naming what is valid (clap's exit 2), never a panic of `Duration::from_secs_f64`.
fn seconds(text: &str) -> Result<Duration, String> {
    let secs: f64 = text
        .trim()
        .parse()
        .map_err(|_| format!("{text}: valid: a number of seconds > 0"))?;
    hypercomm_cli::config::timeout(secs).map_err(|e| e.to_string())
}

/// `fault`'s pauses (`--stall`, `--stall-setup`, `--stall-agree`, `--stall-split`): a number of seconds
/// ≥ 0, else the error naming what is valid.
fn pause(text: &str) -> Result<Duration, String> {
    match text.trim().parse::<f64>() {
        Ok(secs) if (0.0..1e9).contains(&secs) => Ok(Duration::from_secs_f64(secs)),
        _ => Err(format!(
            "{text}; valid: a number of seconds ≥ 0 (and < 1e9)"
        )),
    }
}

#[derive(Subcommand)]
enum Command {
    /// `hypercomm run` on MPI: one collective on random data, checked, timed.
    Run(RtRunArgs),
    /// `hypercomm bench` on MPI: latency and bandwidth over message sizes.
    Bench(BenchArgs),
    /// Compare every fitting algorithm of every collective with native MPI.
    Check {
        #[command(flatten)]
        common: Common,
        /// Lengths (elements per block), comma-separated.
        #[arg(long, value_delimiter = ',', default_values_t = vec![0usize, 1, 7, 1000])]
        lengths: Vec<usize>,
        /// Seed of the random data.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Only these collectives (names as in `hypercomm algorithms`).
        #[arg(long, value_delimiter = ',')]
        ops: Vec<String>,
    },
    /// Inject a failure on one rank; the others must report it. `Auto` here is the
    /// model's choice (no measured picks) and native collectives wait checked
    /// (`NativeWait::Checked`), so that every failure is detected by this crate.
    Fault {
        #[command(flatten)]
        common: Common,
        /// Algorithm of the all-reduces (`auto`, a registry name, or `native`).
        #[arg(long, default_value = "auto")]
        algo: String,
        /// The rank that fails.
        #[arg(long, default_value_t = 1)]
        rank: Rank,
        /// Panic instead of returning an error.
        #[arg(long)]
        panic: bool,
        /// The iteration (all-reduce call) at which it fails.
        #[arg(long, default_value_t = 5)]
        at: u32,
        /// Instead of failing, stall this many seconds (then go on): the others time out.
        #[arg(long, value_parser = pause)]
        stall: Option<Duration>,
        /// Also sleep this many seconds before building the communicator: with more
        /// than `--timeout`, the others' set-up times out (and so, later, does this
        /// rank's).
        #[arg(long, value_parser = pause, conflicts_with_all = ["stall", "leave", "harmless", "panic"])]
        stall_setup: Option<Duration>,
        /// Also agree on the calibration first, as `run`, `bench`, `osu` and
        /// `vs-native` do before they build a communicator (`--timeout` bounds each of
        /// its collectives), rank R this many seconds late: with more than `--timeout`,
        /// the others' agreement times out (and so, later, does this rank's).
        #[arg(long, value_parser = pause, conflicts_with_all = ["stall", "leave", "harmless", "panic", "stall_setup"])]
        stall_agree: Option<Duration>,
        /// Instead of the all-reduces, split the communicator (`--split`), rank R this
        /// many seconds late: with more than `--timeout`, the others' split times out.
        #[arg(long, value_parser = pause, conflicts_with_all = ["stall", "leave", "harmless", "panic", "stall_setup", "mismatch", "immediate", "persistent"])]
        stall_split: Option<Duration>,
        /// With `--stall-split`: `shared` (`Comm::split_shared`, MPI's
        /// `MPI_Comm_split_type` behind a bounded barrier) or `color` (`Comm::split`,
        /// whose all-gather of the colours comes first).
        #[arg(long, value_enum, default_value_t = SplitKind::Shared, requires = "stall_split")]
        split: SplitKind,
        /// Instead of failing, call the all-reduce with one element less (a program error
        /// the receivers detect as a length mismatch).
        #[arg(long)]
        mismatch: bool,
        /// Instead of failing, stop there successfully (return, drop the communicator,
        /// exit 0) while the others go on.
        #[arg(long)]
        leave: bool,
        /// With `--leave`: rank R first sends each other rank a last message; they take
        /// it after R left and go on among themselves, needing nothing more from R, so
        /// nothing fails.
        #[arg(long, requires = "leave")]
        harmless: bool,
        /// Start each all-reduce as a request (`immediate_all_reduce_into`) and wait for
        /// it: the failure must surface at `wait`.
        #[arg(long)]
        immediate: bool,
        /// Plan one all-reduce of 64 elements (`plan_all_reduce`, on MPI's persistent
        /// requests) and run the plan each iteration: the failure must end its wait.
        #[arg(long, conflicts_with_all = ["immediate", "mismatch", "harmless"])]
        persistent: bool,
    },
    /// β and τ of the MPI backend, saved for `run`, `bench` and `vs-native`.
    ///
    /// Measured as `hypercomm calibrate` measures the threads backend (pairs (0, 1),
    /// (2, 3), … at once; rank 0 reports its pair). `run`, `bench` and `vs-native` read
    /// the file `$HYPERCOMM_CALIBRATION` names, else `calibration-mpi.conf` in the
    /// configuration directory, else the one they measure themselves (kept in the cache).
    Calibrate {
        #[command(flatten)]
        common: Common,
        /// `exchange` (both ranks send and receive at once) or `pingpong`.
        #[arg(long, value_enum, value_name = "P", default_value_t = Pattern::Exchange)]
        pattern: Pattern,
        /// Largest size in bytes (powers of 2 from 1 B; at least 2, as the fit of β and τ
        /// needs two sizes). A fit with τ ≤ 0 or β < 0 is not saved (exit 1).
        #[arg(long, value_name = "B", default_value_t = hypercomm_cli::runtime::calibrate::DEFAULT_MAX_SIZE)]
        max_size: u64,
        /// Repetitions per size [default: 5000 for small sizes down to 50].
        #[arg(long, value_name = "N")]
        reps: Option<u64>,
        /// Where to save [default: $HYPERCOMM_CALIBRATION, else
        /// ~/.config/hypercomm/calibration-mpi.conf].
        #[arg(long, value_name = "FILE")]
        output: Option<std::path::PathBuf>,
    },
    /// OSU micro-benchmarks (osu_alltoallv, osu_allgatherv, osu_iallreduce,
    /// osu_ialltoallv, osu_iallgatherv): ours against native MPI in one run.
    ///
    /// Rows per size: native, then each of ours (`--algo`), with latency avg/min/max
    /// over ranks (the non-blocking ones: pure, compute, overall µs and the overlap %), ours/native,
    /// and `ok`: the result equals native MPI's on every rank (exit 1 if not).
    Osu {
        #[command(flatten)]
        common: Common,
        /// The benchmark.
        #[arg(value_enum)]
        benchmark: osu::Benchmark,
        /// Ours, comma-separated: `auto` and registry names of the collective
        /// (alltoallv, allgatherv, allreduce).
        #[arg(long, value_name = "A,B,..", default_value = "auto")]
        algo: String,
        /// Smallest size in bytes [default: 1; iallreduce 4].
        #[arg(long, value_name = "B")]
        min_size: Option<u64>,
        /// Largest size in bytes; sizes double from --min-size.
        #[arg(long, value_name = "B", default_value_t = 1 << 20)]
        max_size: u64,
        /// Timed calls per size, 1 to 10,000 [default: OSU's, 1000 up to 8 KiB, 100
        /// above].
        #[arg(long, value_name = "N")]
        iters: Option<u64>,
        /// Warm-up calls per size, 0 to 10,000 [default: OSU's, 200 up to 8 KiB, 10
        /// above].
        #[arg(long, value_name = "N")]
        warmup: Option<u64>,
    },
    /// Time ours against native MPI over OSU-style sizes, and the model's prediction.
    ///
    /// Columns: native µs, ours µs, ratio (ours/native), pred µs (the cost model's time
    /// of the algorithm that ran, as `bench` predicts it, under the calibration `bench`
    /// uses, named in the header) and ours/pred.
    VsNative {
        #[command(flatten)]
        common: Common,
        /// Collectives, comma-separated.
        #[arg(long, value_delimiter = ',', default_values_t = vec!["broadcast".to_string(), "allgather".into(), "allreduce".into(), "alltoall".into()])]
        ops: Vec<String>,
        /// Algorithm (`auto` or a registry name).
        #[arg(long, default_value = "auto")]
        algo: String,
        /// Largest message in bytes (sizes are powers of two from 8); `--max-size`, as
        /// `bench` spells it, is the same option.
        #[arg(long, visible_alias = "max-size", default_value_t = 1 << 20)]
        max_bytes: usize,
        /// Timed turns per size [default: OSU's, 1000 up to 8 KiB, 100 above]; a
        /// number given here times that many up to 128 KiB and a tenth of it (at least
        /// 5) above.
        #[arg(long, value_name = "N")]
        iters: Option<u32>,
        /// Each side's time per call over its timed calls: `median` (robust to a time
        /// slice lost to another process), or `mean` (OSU's, as the threads `bench`
        /// reports it).
        #[arg(long, value_enum, default_value_t = Stat::Median)]
        stat: Stat,
    },
}

impl Command {
    /// How long the set-up's agreement (before the command's communicator) waits for
    /// every rank: the command's `--timeout` (`run` and `bench`: when valid, else 60 s;
    /// [`cli::set_up_timeout`]).
    fn set_up_timeout(&self) -> Duration {
        match self {
            Command::Run(a) => cli::set_up_timeout(a.problem.timeout),
            Command::Bench(a) => cli::set_up_timeout(a.problem.timeout),
            Command::Check { common, .. }
            | Command::Fault { common, .. }
            | Command::Calibrate { common, .. }
            | Command::Osu { common, .. }
            | Command::VsNative { common, .. } => common.timeout,
        }
    }
}

/// How `vs-native` sums up a side's timed calls.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum Stat {
    Median,
    Mean,
}

/// The arguments, with `--ranks <job size>` added to `run` and `bench` when absent.
fn arguments(size: i32) -> Vec<String> {
    let mut argv: Vec<String> = std::env::args().collect();
    let command = argv.get(1).map(String::as_str);
    let has_ranks = argv
        .iter()
        .any(|a| a == "--ranks" || a.starts_with("--ranks="));
    if matches!(command, Some("run" | "bench")) && !has_ranks {
        argv.push("--ranks".into());
        argv.push(size.to_string());
    }
    argv
}

fn main() -> ExitCode {
    // Requests progress on threads of their own, which need MPI_THREAD_MULTIPLE
    // (`fault --immediate`, `osu iallreduce|ialltoallv|iallgatherv`); the other commands
    // keep the default level (no locking inside the MPI library).
    let argv: Vec<String> = std::env::args().collect();
    let requests = argv.iter().any(|a| a == "--immediate")
        || (argv.get(1).map(String::as_str) == Some("osu")
            && argv
                .iter()
                .any(|a| ["iallreduce", "ialltoallv", "iallgatherv"].contains(&a.as_str())));
    let universe = if requests {
        mpi::initialize_with_threading(mpi::Threading::Multiple).map(|(u, _)| u)
    } else {
        mpi::initialize()
    };
    let Some(universe) = universe else {
        eprintln!("hypercomm-mpi: MPI was already initialized");
        return ExitCode::from(2);
    };
    let world = universe.world();
    let me = world.rank();
    let args = match Args::try_parse_from(arguments(world.size())) {
        Ok(a) => a,
        Err(e) => {
            if me == 0 {
                e.print().ok();
            }
            let code = e.exit_code();
            drop(world);
            drop(universe);
            return ExitCode::from(code as u8);
        }
    };
    // Which ranks share a host, as every command prices and measures them: a bad
    // HYPERCOMM_MPI_RANKS_PER_HOST is bad input. Ranks on other hosts see it only with
    // `-x`, so they agree first; the lowest rank that has a bad one says why.
    let hosts = std::env::var_os(hypercomm_mpi::RANKS_PER_HOST_ENV);
    let bad = hypercomm_mpi::ranks_per_host_setting(hosts.as_deref()).err();
    let mine = if bad.is_some() { me } else { world.size() };
    let call = "the all-reduce of the ranks' HYPERCOMM_MPI_RANKS_PER_HOST verdicts";
    let first_bad = match hypercomm_mpi::agree::all_min_within(
        &world,
        mine as u64,
        args.command.set_up_timeout(),
        call,
    ) {
        Ok(r) => r as i32,
        Err(e) => {
            let code = cli::set_up_failed(me, &e);
            exit_watchdog(Duration::from_secs(15), code);
            drop(world);
            drop(universe);
            return ExitCode::from(code as u8);
        }
    };
    if first_bad < world.size() {
        if let (Some(e), true) = (bad, me == first_bad) {
            eprintln!("error: {e}");
        }
        drop(world);
        drop(universe);
        return ExitCode::from(hypercomm_cli::EXIT_BAD_INPUT);
    }
    let config = |c: &Common| Config::new().timeout(c.timeout);
    let code = match &args.command {
        Command::Run(a) => {
            ranks_match(&world, a.problem.ranks).unwrap_or_else(|| cli::run(&world, a))
        }
        Command::Bench(a) => {
            ranks_match(&world, a.problem.ranks).unwrap_or_else(|| cli::bench(&world, a))
        }
        Command::Check {
            common,
            lengths,
            seed,
            ops,
        } => 'check: {
            let limit = match cli::agreed_memory_limit(common.timeout) {
                Ok(l) => l,
                Err(e) => break 'check cli::set_up_failed(me, &e),
            };
            let checked: Vec<OpKind> = CHECKED.into_iter().chain(CHECKED_V).collect();
            let k = world.size() as u32;
            let only = match validate::ops(ops, &checked, "--ops")
                .and_then(|only| validate::check(lengths, k, limit).map(|()| only))
            {
                Ok(only) => only,
                Err(e) => break 'check refuse(me, e),
            };
            report(
                me,
                hypercomm_mpi::run(&world, &config(common), |comm| {
                    check(comm, &world, lengths, *seed, &only)
                }),
            )
        }
        Command::Fault {
            common,
            rank,
            panic,
            at,
            stall,
            mismatch,
            leave,
            harmless,
            immediate,
            persistent,
            stall_setup,
            stall_agree,
            stall_split,
            split,
            algo,
        } => 'fault: {
            if let Err(e) = validate::fault(*rank, algo, world.size() as u32) {
                break 'fault refuse(me, e);
            }
            if let Some(s) = stall_agree {
                if me as u32 == *rank {
                    cli::say(format!("rank {me}: stalling {s:?} before the agreement\n"));
                    std::thread::sleep(*s);
                }
                if let Err(code) = cli::prepare(&world, common.timeout, || Ok(())) {
                    break 'fault code;
                }
            }
            if let (Some(s), true) = (stall_setup, me as u32 == *rank) {
                cli::say(format!("rank {me}: stalling {s:?} before the set-up\n"));
                std::thread::sleep(*s);
            }
            let mut config = config(common);
            config.tuning = hypercomm_rt::Tuning::Off;
            config.native_wait = hypercomm_mpi::NativeWait::Checked;
            let algo = Algo::from(algo.as_str());
            report(
                me,
                hypercomm_mpi::run(&world, &config, |comm| {
                    if let Some(secs) = stall_split {
                        split_late(comm, *rank, *secs, *split)
                    } else if *harmless {
                        leave_harmlessly(comm, *rank)
                    } else {
                        let how = (*stall, *mismatch, *leave, *immediate, *persistent);
                        fault(comm, *rank, *panic, *at, how, algo)
                    }
                }),
            )
        }
        Command::Calibrate {
            common,
            pattern,
            max_size,
            reps,
            output,
        } => calibrate(
            &world,
            config(common),
            *pattern,
            *max_size,
            *reps,
            output.clone(),
        ),
        Command::Osu {
            common,
            benchmark,
            algo,
            min_size,
            max_size,
            iters,
            warmup,
        } => {
            let least = if *benchmark == osu::Benchmark::Iallreduce {
                4
            } else {
                1
            };
            let sizes = (min_size.unwrap_or(least), *max_size);
            let k = world.size() as u32;
            match cli::prepare(&world, common.timeout, || {
                osu::OsuConfig::new(*benchmark, k, algo, sizes, *iters, *warmup)
            }) {
                Ok((cfg, cal)) => report(
                    me,
                    hypercomm_mpi::run(
                        &world,
                        &config(common).calibration(cal.calibration()),
                        |comm| osu::osu(comm, &world, &cfg),
                    ),
                ),
                Err(code) => code,
            }
        }
        Command::VsNative {
            common,
            ops,
            algo,
            max_bytes,
            iters,
            stat,
        } => match cli::agreed_memory_limit(common.timeout)
            .map_err(|e| cli::set_up_failed(me, &e))
            .and_then(|limit| {
                let k = world.size() as u32;
                validate::vs_native(ops, &CHECKED, algo, *max_bytes, *iters, k, limit)
                    .map_err(|e| refuse(me, e))
            })
            .and_then(|ops| cli::prepare(&world, common.timeout, || Ok(ops)))
        {
            // The calibration `bench` uses, for `auto` and for the prediction alike.
            Ok((ops, cal)) => report(
                me,
                hypercomm_mpi::run(
                    &world,
                    &config(common).calibration(cal.calibration()),
                    |comm| vs_native(comm, &world, &cal, &ops, algo, *max_bytes, *iters, *stat),
                ),
            ),
            Err(code) => code,
        },
    };
    if code != 0 {
        // MPI_Finalize waits for every rank: bound it.
        exit_watchdog(Duration::from_secs(15), code);
    }
    drop(world);
    drop(universe);
    ExitCode::from(code as u8)
}

/// Bad input every rank found alike: rank 0 prints it; exit 2.
fn refuse(me: i32, e: String) -> i32 {
    if me == 0 {
        cli::say(format!("error: {e}\n"));
    }
    i32::from(hypercomm_cli::EXIT_BAD_INPUT)
}

/// Exit code 2 (from rank 0's message) when `--ranks` is not the job's size.
fn ranks_match(world: &SimpleCommunicator, ranks: u64) -> Option<i32> {
    if ranks == world.size() as u64 {
        return None;
    }
    if world.rank() == 0 {
        cli::say(format!(
            "error: invalid --ranks: {ranks}; the MPI job has {} ranks (mpirun -n); omit --ranks\n",
            world.size()
        ));
    }
    Some(i32::from(hypercomm_cli::EXIT_BAD_INPUT))
}

/// `hypercomm-mpi calibrate`: exit 0 with the file written by rank 0, 2 on bad input,
/// 1 if a rank failed.
fn calibrate(
    world: &SimpleCommunicator,
    config: Config,
    pattern: Pattern,
    max_size: u64,
    reps: Option<u64>,
    output: Option<std::path::PathBuf>,
) -> i32 {
    use hypercomm_cli::runtime::calibrate as cal;
    let me = world.rank();
    let bad = |what: String| {
        if me == 0 {
            cli::say(format!("error: {what}\n"));
        }
        i32::from(hypercomm_cli::EXIT_BAD_INPUT)
    };
    if world.size() < 2 {
        return bad("calibrate needs a pair of ranks: run it under mpirun -n 2 or more".into());
    }
    // Only rank 0 writes the file: its verdict on the path is everyone's (on another
    // host `HOME` or the directory may differ), agreed before any other collective.
    let path = cal::output_path(output, reps, cli::BACKEND);
    let call = "the broadcast of rank 0's verdict on --output";
    let mine = vec![u8::from(path.is_ok())];
    let path = match hypercomm_mpi::agree::broadcast_within(world, 0, mine, config.timeout, call) {
        Ok(v) if v == [1] => path.unwrap_or_default(),
        // Rank 0, the one that prints, has the error.
        Ok(_) => return bad(path.err().map(|e| e.to_string()).unwrap_or_default()),
        Err(e) => return cli::set_up_failed(me, &e),
    };
    let sizes = match cal::checked_sizes(max_size) {
        Ok(s) => s,
        Err(e) => return bad(e.to_string()),
    };
    let largest = sizes.last().copied().unwrap_or(0) as u64;
    let limit = match cli::agreed_memory_limit(config.timeout) {
        Ok(l) => l,
        Err(e) => return cli::set_up_failed(me, &e),
    };
    if let Err(e) = hypercomm_cli::config::check_rt_bytes(
        largest.saturating_mul(2),
        "a rank's two buffers at the largest size",
        limit,
        "--max-size",
    ) {
        return bad(e.to_string());
    }
    let reps = |bytes: usize| reps.unwrap_or_else(|| cal::default_reps(bytes));
    // A job across hosts: the network too, rank 0 with the first rank of the next host.
    let per_host = match hypercomm_mpi::ranks_per_host_within(world, config.timeout) {
        Ok(n) => n,
        Err(e) => {
            cli::say(format!("hypercomm-mpi: rank {}: {e}\n", world.rank()));
            return 1;
        }
    };
    let outcome = hypercomm_mpi::run(world, &config, |comm| {
        // Ranks that outnumber their machine's CPUs: one pair measures, alone, as the
        // automatic calibration does; the prediction adds what sharing the CPUs costs
        // (`Execution::cpus`). Every pair at once would count that sharing twice.
        let cpus = comm.execution().cpus;
        let pairs = if cpus.is_some() { 1 } else { u32::MAX };
        let points = cal::calibrate_pairs(comm, &sizes, &reps, pattern, true, pairs, false)?;
        let network = cli::network_points(comm, per_host, &sizes, &reps, pattern, false)?;
        // And every rank at once, for the calibration's `switch`.
        let shared = cal::switch_points(comm, cpus)?;
        Ok::<_, hypercomm_rt::Error>((points, network, shared))
    });
    let (points, network, shared) = match outcome {
        Ok(p) => p,
        Err(f) => {
            cli::say(format!("hypercomm-mpi: rank {me}: {f}\n"));
            return 1;
        }
    };
    if me != 0 {
        return 0;
    }
    // The threads backend's checks: no fit is saved that prices bandwidth as free
    // (τ ≤ 0) or has a negative start-up time.
    let mut fitted = match cal::fit(&points) {
        Ok(c) => c,
        Err(e) => {
            cli::say(cal::not_saved(&path, &e, &points));
            return 1;
        }
    };
    fitted.network = cal::network_bands(&network);
    let switch = cal::set_switch(&mut fitted, shared, &points);
    let mut text = cal::file_text(fitted, "mpi", world.size() as u32, pattern, &points);
    text.push_str(&cal::network_text(&fitted, &network));
    text.push_str(&switch);
    if let Err(e) = cal::save(&path, &text) {
        cli::say(format!("error: cannot write {}: {e}\n", path.display()));
        return 1;
    }
    println!("      size  same data  fresh data (written by the sender since)");
    for p in &points {
        println!(
            "{:>10} B  {:.3} µs  {:.3} µs",
            p.bytes,
            p.time * 1e6,
            p.fresh * 1e6
        );
    }
    if !network.is_empty() {
        println!(
            "      size  between hosts (rank 0 and rank {})",
            per_host.unwrap_or(0)
        );
        for p in &network {
            println!("{:>10} B  {:.3} µs", p.bytes, p.time * 1e6);
        }
    }
    println!(
        "beta   {:e} s\ntau    {:e} s/B\nsaved  {}",
        fitted.beta,
        fitted.tau,
        path.display()
    );
    0
}

/// A rank's failure, printed; the exit code.
fn report<E: std::fmt::Display>(me: i32, outcome: Result<(), Failure<E>>) -> i32 {
    match outcome {
        Ok(()) => 0,
        Err(f) => {
            // One write, so that lines of ranks sharing the terminal do not interleave.
            cli::say(format!("hypercomm-mpi: rank {me}: {f}\n"));
            1
        }
    }
}

/// Why a rank stops.
#[derive(Debug)]
enum Stop {
    /// A transport or runtime error.
    Hc(Error),
    /// Rank 0 found mismatches.
    Mismatches(u32),
    /// Injected.
    Injected,
    Usage(String),
}

impl std::fmt::Display for Stop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Stop::Hc(e) => write!(f, "{e}"),
            Stop::Mismatches(n) => write!(f, "{n} case(s) differ from native MPI"),
            Stop::Injected => write!(f, "injected failure"),
            Stop::Usage(m) => write!(f, "{m}"),
        }
    }
}

impl From<Error> for Stop {
    fn from(e: Error) -> Self {
        Stop::Hc(e)
    }
}

/// splitmix64.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Self {
        Rng(seed)
    }
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// `n` values below 2^32 (sums over ranks cannot overflow).
    fn vec(&mut self, n: usize) -> Vec<u64> {
        (0..n).map(|_| self.next() >> 32).collect()
    }
}

const CHECKED: [OpKind; 10] = [
    OpKind::Broadcast,
    OpKind::Scatter,
    OpKind::Gather,
    OpKind::Allgather,
    OpKind::Alltoall,
    OpKind::Reduce,
    OpKind::Allreduce,
    OpKind::Scan,
    OpKind::ExclusiveScan,
    OpKind::ReduceScatter,
];

/// The variable-count collectives `check` compares with MPI's `MPI_Gatherv`, …, with
/// random counts (zeros among them) of mean m: the blocking calls and their persistent
/// forms (`plan_gatherv`, …).
const CHECKED_V: [OpKind; 5] = [
    OpKind::Gatherv,
    OpKind::Scatterv,
    OpKind::Allgatherv,
    OpKind::Alltoallv,
    OpKind::ReduceScatterv,
];

fn rooted(op: OpKind) -> bool {
    op.has_root()
}

/// Outcome of one case on one rank, ordered so that the maximum over ranks is the case's.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Verdict {
    Ok = 0,
    Skipped = 1,
    Mismatch = 2,
}

/// Whether an error is the registry refusing the problem (the same on every rank), not
/// a communication failure.
fn refused(e: &Error) -> bool {
    matches!(
        e,
        Error::Library(_) | Error::NoAlgorithm { .. } | Error::NotOrderPreserving { .. }
    )
}

fn check(
    comm: &mut Comm<Mpi>,
    world: &SimpleCommunicator,
    lengths: &[usize],
    seed: u64,
    only: &[OpKind],
) -> Result<(), Stop> {
    let (me, k) = (comm.rank(), comm.size());
    let topology = Topology::complete(k);
    let (mut cases, mut bad, mut skipped) = (0u32, 0u32, 0u32);
    for op in CHECKED.into_iter().chain(CHECKED_V) {
        if !only.is_empty() && !only.contains(&op) {
            continue;
        }
        let roots: Vec<Rank> = if rooted(op) && k > 1 {
            vec![0, k - 1]
        } else {
            vec![0]
        };
        // Every fitting schedule, and the MPI library's own collective (`native`),
        // whose buffers and arguments this checks against rsmpi's call of it.
        let names = algorithms::fitting(&topology, op)
            .into_iter()
            .map(|a| a.name)
            .chain([hypercomm_rt::NATIVE]);
        for name in names {
            for &m in lengths {
                for &root in &roots {
                    let case_seed = seed
                        .wrapping_mul(1_000_003)
                        .wrapping_add(cases as u64)
                        .wrapping_mul(0x100)
                        .wrapping_add(me as u64);
                    let mut rng = Rng::new(case_seed);
                    // The same counts on every rank: drawn without the rank.
                    let mut counts_rng = Rng::new(case_seed ^ me as u64);
                    let outcome = if op.is_varcount() {
                        one_case_v(comm, world, op, name, m, root, &mut counts_rng, &mut rng)
                    } else {
                        one_case(comm, world, op, name, m, root, &mut rng)
                    };
                    let verdict = match outcome {
                        Ok(true) => Verdict::Ok,
                        Ok(false) => Verdict::Mismatch,
                        Err(e) if refused(&e) => Verdict::Skipped,
                        Err(e) => return Err(e.into()),
                    };
                    let mut worst = 0u32;
                    world.all_reduce_into(&(verdict as u32), &mut worst, SystemOperation::max());
                    cases += 1;
                    let what = match worst {
                        0 => "ok",
                        1 => {
                            skipped += 1;
                            "skipped (the algorithm refuses this problem)"
                        }
                        _ => {
                            bad += 1;
                            "MISMATCH"
                        }
                    };
                    if me == 0 {
                        let r = if rooted(op) {
                            format!(" root={root}")
                        } else {
                            String::new()
                        };
                        println!("{op} {name} k={k} m={m}{r}: {what}");
                    }
                }
            }
        }
    }
    if me == 0 {
        println!(
            "checked {cases} cases on {k} ranks: {} ok, {skipped} skipped, {bad} mismatched",
            cases - skipped - bad
        );
    }
    if bad > 0 {
        return Err(Stop::Mismatches(bad));
    }
    Ok(())
}

/// Run one case, ours then native; whether this rank's results agree.
fn one_case(
    comm: &mut Comm<Mpi>,
    world: &SimpleCommunicator,
    op: OpKind,
    name: &str,
    m: usize,
    root: Rank,
    rng: &mut Rng,
) -> Result<bool, Error> {
    let (me, k) = (comm.rank(), comm.size() as usize);
    let algo = Algo::Named(name);
    let is_root = me == root;
    let proc_root = world.process_at_rank(root as i32);
    let sum = Op::<u64>::sum();
    let native = SystemOperation::sum();
    Ok(match op {
        OpKind::Broadcast => {
            let data = rng.vec(m);
            let mut ours = if is_root { data.clone() } else { vec![0; m] };
            comm.broadcast_into(root, &mut ours, algo)?;
            let mut theirs = if is_root { data } else { vec![0; m] };
            proc_root.broadcast_into(&mut theirs[..]);
            ours == theirs
        }
        OpKind::Scatter => {
            let data = rng.vec(k * m);
            let mut ours = vec![0; m];
            comm.scatter_into(root, is_root.then_some(&data[..]), &mut ours, algo)?;
            let mut theirs = vec![0u64; m];
            if is_root {
                proc_root.scatter_into_root(&data[..], &mut theirs[..]);
            } else {
                proc_root.scatter_into(&mut theirs[..]);
            }
            ours == theirs
        }
        OpKind::Gather => {
            let data = rng.vec(m);
            let mut ours = vec![0; k * m];
            comm.gather_into(root, &data, is_root.then_some(&mut ours[..]), algo)?;
            let mut theirs = vec![0u64; k * m];
            if is_root {
                proc_root.gather_into_root(&data[..], &mut theirs[..]);
            } else {
                proc_root.gather_into(&data[..]);
            }
            !is_root || ours == theirs
        }
        OpKind::Allgather => {
            let data = rng.vec(m);
            let mut ours = vec![0; k * m];
            comm.all_gather_into(&data, &mut ours, algo)?;
            let mut theirs = vec![0u64; k * m];
            world.all_gather_into(&data[..], &mut theirs[..]);
            ours == theirs
        }
        OpKind::Alltoall => {
            let data = rng.vec(k * m);
            let mut ours = vec![0; k * m];
            comm.all_to_all_into(&data, &mut ours, algo)?;
            let mut theirs = vec![0u64; k * m];
            world.all_to_all_into(&data[..], &mut theirs[..]);
            ours == theirs
        }
        OpKind::Reduce => {
            let data = rng.vec(m);
            let mut ours = vec![0; m];
            comm.reduce_into(root, &data, is_root.then_some(&mut ours[..]), &sum, algo)?;
            let mut theirs = vec![0u64; m];
            if is_root {
                proc_root.reduce_into_root(&data[..], &mut theirs[..], native);
            } else {
                proc_root.reduce_into(&data[..], native);
            }
            !is_root || ours == theirs
        }
        OpKind::Allreduce => {
            let data = rng.vec(m);
            let mut ours = vec![0; m];
            comm.all_reduce_into(&data, &mut ours, &sum, algo)?;
            let mut theirs = vec![0u64; m];
            world.all_reduce_into(&data[..], &mut theirs[..], native);
            ours == theirs
        }
        OpKind::Scan => {
            let data = rng.vec(m);
            let mut ours = vec![0; m];
            comm.scan_into(&data, &mut ours, &sum, algo)?;
            let mut theirs = vec![0u64; m];
            world.scan_into(&data[..], &mut theirs[..], native);
            ours == theirs
        }
        OpKind::ExclusiveScan => {
            let data = rng.vec(m);
            let mut ours = vec![0; m];
            comm.exclusive_scan_into(&data, &mut ours, &sum, algo)?;
            let mut theirs = vec![0u64; m];
            world.exclusive_scan_into(&data[..], &mut theirs[..], native);
            // Rank 0's result is unspecified (MPI_Exscan and ours alike).
            me == 0 || ours == theirs
        }
        OpKind::ReduceScatter => {
            let data = rng.vec(k * m);
            let mut ours = vec![0; m];
            comm.reduce_scatter_block_into(&data, &mut ours, &sum, algo)?;
            let mut theirs = vec![0u64; m];
            world.reduce_scatter_block_into(&data[..], &mut theirs[..], native);
            ours == theirs
        }
        // In CHECKED_V: `one_case_v`.
        OpKind::Gatherv
        | OpKind::Scatterv
        | OpKind::Allgatherv
        | OpKind::Alltoallv
        | OpKind::ReduceScatterv => true,
        // Not in CHECKED. Download has no MPI collective of its own (the host, the
        // last rank, keeps no block: MPI_Scatterv with a zero count); `run --op
        // download` checks it against the serial reference instead (tests/mpirun.rs).
        // The transposition needs a square torus, which the runtime does not run yet.
        OpKind::P2p | OpKind::Download | OpKind::Transpose => true,
    })
}

/// Counts of mean about m, one in four zero.
fn random_counts(rng: &mut Rng, n: usize, m: usize) -> Vec<usize> {
    (0..n)
        .map(|_| match rng.next() % 4 {
            0 => 0,
            _ => (rng.next() % (2 * m as u64 + 1)) as usize,
        })
        .collect()
}

/// MPI's counts and displacements (their prefix sums).
fn partition(c: &[usize]) -> (Vec<mpi::Count>, Vec<mpi::Count>) {
    let displs = c
        .iter()
        .scan(0, |at, &x| {
            let d = *at;
            *at += x as mpi::Count;
            Some(d)
        })
        .collect();
    (c.iter().map(|&x| x as mpi::Count).collect(), displs)
}

/// One variable-count case, ours (the blocking call, then its persistent form planned
/// with the same counts and algorithm) then MPI's through rsmpi's `*_varcount` calls
/// (and `MPI_Reduce_scatter` directly: rsmpi has no varcount reduce-scatter); whether
/// this rank's results agree. `counts_rng` is the same on every rank.
#[allow(clippy::too_many_arguments)]
fn one_case_v(
    comm: &mut Comm<Mpi>,
    world: &SimpleCommunicator,
    op: OpKind,
    name: &str,
    m: usize,
    root: Rank,
    counts_rng: &mut Rng,
    rng: &mut Rng,
) -> Result<bool, Error> {
    use mpi::datatype::{Partition, PartitionMut};
    use mpi::raw::AsRaw;
    let (me, k) = (comm.rank(), comm.size() as usize);
    let algo = Algo::Named(name);
    let is_root = me == root;
    let proc_root = world.process_at_rank(root as i32);
    let counts = random_counts(
        counts_rng,
        if op == OpKind::Alltoallv { k * k } else { k },
        m,
    );
    let total: usize = counts.iter().sum();
    let mine = |c: &[usize]| c[me as usize];
    Ok(match op {
        OpKind::Gatherv => {
            let data = rng.vec(mine(&counts));
            let mut ours = vec![0; total];
            comm.gatherv_into(root, &data, is_root.then_some(&mut ours[..]), &counts, algo)?;
            let at_root = if is_root { total } else { 0 };
            let plan = |c: &mut Comm<Mpi>, a| c.plan_gatherv(root, &counts, a);
            let planned = planned(comm, name, plan, &data, at_root)?;
            let mut theirs = vec![0u64; total];
            let (c, d) = partition(&counts);
            if is_root {
                let mut p = PartitionMut::new(&mut theirs[..], c, d);
                proc_root.gather_varcount_into_root(&data[..], &mut p);
            } else {
                proc_root.gather_varcount_into(&data[..]);
            }
            !is_root || (ours == theirs && planned.map_or(true, |p| p == theirs))
        }
        OpKind::Scatterv => {
            let data = rng.vec(total);
            let mut ours = vec![0; mine(&counts)];
            comm.scatterv_into(root, is_root.then_some(&data[..]), &mut ours, &counts, algo)?;
            let root_data = if is_root { &data[..] } else { &[] };
            let plan = |c: &mut Comm<Mpi>, a| c.plan_scatterv(root, &counts, a);
            let planned = planned(comm, name, plan, root_data, ours.len())?;
            let mut theirs = vec![0u64; mine(&counts)];
            let (c, d) = partition(&counts);
            if is_root {
                let p = Partition::new(&data[..], c, d);
                proc_root.scatter_varcount_into_root(&p, &mut theirs[..]);
            } else {
                proc_root.scatter_varcount_into(&mut theirs[..]);
            }
            ours == theirs && planned.map_or(true, |p| p == theirs)
        }
        OpKind::Allgatherv => {
            let data = rng.vec(mine(&counts));
            let mut ours = vec![0; total];
            comm.all_gatherv_into(&data, &mut ours, &counts, algo)?;
            let plan = |c: &mut Comm<Mpi>, a| c.plan_all_gatherv(&counts, a);
            let planned = planned(comm, name, plan, &data, total)?;
            let mut theirs = vec![0u64; total];
            let (c, d) = partition(&counts);
            world
                .all_gather_varcount_into(&data[..], &mut PartitionMut::new(&mut theirs[..], c, d));
            ours == theirs && planned.map_or(true, |p| p == theirs)
        }
        OpKind::Alltoallv => {
            let i = me as usize;
            let row: Vec<usize> = counts[i * k..][..k].to_vec();
            let col: Vec<usize> = (0..k).map(|j| counts[j * k + i]).collect();
            let data = rng.vec(row.iter().sum());
            let mut ours = vec![0; col.iter().sum()];
            comm.all_to_allv_into(&data, &row, &mut ours, &col, algo)?;
            let plan = |c: &mut Comm<Mpi>, a| c.plan_all_to_allv(&row, &col, a);
            let planned = planned(comm, name, plan, &data, ours.len())?;
            let mut theirs = vec![0u64; ours.len()];
            let ((sc, sd), (rc, rd)) = (partition(&row), partition(&col));
            world.all_to_all_varcount_into(
                &Partition::new(&data[..], sc, sd),
                &mut PartitionMut::new(&mut theirs[..], rc, rd),
            );
            ours == theirs && planned.map_or(true, |p| p == theirs)
        }
        OpKind::ReduceScatterv => {
            let data = rng.vec(total);
            let mut ours = vec![0; mine(&counts)];
            comm.reduce_scatter_into(&data, &mut ours, &counts, &Op::<u64>::sum(), algo)?;
            let plan = |c: &mut Comm<Mpi>, a| c.plan_reduce_scatter(&counts, Op::sum(), a);
            let planned = planned(comm, name, plan, &data, ours.len())?;
            let mut theirs = vec![0u64; mine(&counts)];
            let (c, _) = partition(&counts);
            // SAFETY: `data` holds Σ counts elements, `theirs` this rank's count, `c`
            // has one count per rank; the call blocks until done.
            unsafe {
                mpi::ffi::MPI_Reduce_scatter(
                    data.as_ptr() as *const std::ffi::c_void,
                    theirs.as_mut_ptr() as *mut std::ffi::c_void,
                    c.as_ptr(),
                    mpi::ffi::RSMPI_UINT64_T,
                    mpi::ffi::RSMPI_SUM,
                    world.as_raw(),
                );
            }
            ours == theirs && planned.map_or(true, |p| p == theirs)
        }
        _ => true,
    })
}

/// The persistent form of a variable-count case (planned by `plan` with the case's
/// counts and algorithm, run once on `send` into `out_len` elements), or `None` for
/// `native`, which has none.
fn planned<'a>(
    comm: &mut Comm<Mpi>,
    name: &'a str,
    plan: impl FnOnce(&mut Comm<Mpi>, Algo<'a>) -> Result<Persistent<'static, u64>, Error>,
    send: &[u64],
    out_len: usize,
) -> Result<Option<Vec<u64>>, Error> {
    if name.eq_ignore_ascii_case(hypercomm_rt::NATIVE) {
        return Ok(None);
    }
    let plan = plan(comm, Algo::Named(name))?;
    let mut out = vec![0; out_len];
    plan.run(comm, send, &mut out)?;
    Ok(Some(out))
}

fn fault(
    comm: &mut Comm<Mpi>,
    culprit: Rank,
    panic: bool,
    at: u32,
    (stall, mismatch, leave, immediate, persistent): (Option<Duration>, bool, bool, bool, bool),
    algo: Algo,
) -> Result<(), Stop> {
    let (me, k) = (comm.rank(), comm.size());
    if culprit >= k {
        return Err(Stop::Usage(format!(
            "--rank {culprit}: the job has {k} ranks"
        )));
    }
    let data = vec![me as u64; 1000];
    let mut out = vec![0u64; 1000];
    let plan = if persistent {
        Some(comm.plan_all_reduce::<u64>(64, Op::sum(), algo)?)
    } else {
        None
    };
    for i in 0..1000 {
        if me == culprit && i == at {
            if let Some(pause) = stall {
                std::thread::sleep(pause);
            } else if mismatch {
                let mut short = vec![0u64; 999];
                comm.all_reduce_into(&data[..999], &mut short, &Op::sum(), algo)?;
                continue;
            } else if leave {
                println!("rank {me}: leaving after {i} all-reduces");
                return Ok(());
            } else if panic {
                panic!("injected panic on rank {me}");
            } else {
                return Err(Stop::Injected);
            }
        }
        if let Some(plan) = &plan {
            plan.run(comm, &data[..64], &mut out[..64])?;
        } else if immediate {
            let sum = Op::sum();
            std::thread::scope(|scope| {
                let request = comm.immediate_all_reduce_into(scope, &data, &mut out, &sum, algo)?;
                request.wait()
            })?;
        } else {
            comm.all_reduce_into(&data, &mut out, &Op::sum(), algo)?;
        }
    }
    Ok(())
}

/// How `fault --stall-split` splits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum SplitKind {
    /// `Comm::split_shared`.
    Shared,
    /// `Comm::split(Some(0), rank)`.
    Color,
}

/// `fault --stall-split`: every rank splits `comm`, `late` only after `pause`;
/// each prints its new rank.
fn split_late(
    comm: &mut Comm<Mpi>,
    late: Rank,
    pause: Duration,
    kind: SplitKind,
) -> Result<(), Stop> {
    let me = comm.rank();
    if late >= comm.size() {
        return Err(Stop::Usage(format!(
            "--rank {late}: the job has {} ranks",
            comm.size()
        )));
    }
    if me == late {
        std::thread::sleep(pause);
    }
    let sub = match kind {
        SplitKind::Shared => comm.split_shared()?,
        SplitKind::Color => comm
            .split(Some(0), me as i32)?
            .expect("every rank has a color"),
    };
    println!(
        "rank {me}: split ({kind:?}): rank {} of {}",
        sub.rank(),
        sub.size()
    );
    Ok(())
}

/// Every rank runs a few all-reduces; then `leaver` sends each other rank one last
/// message and leaves. The others take that message after it left (it was queued before
/// its departure notice), then shift large messages around a ring of themselves, one of
/// them late, so that waits last: none of this needs `leaver`, so none of it fails.
fn leave_harmlessly(comm: &mut Comm<Mpi>, leaver: Rank) -> Result<(), Stop> {
    let (me, k) = (comm.rank(), comm.size());
    if leaver >= k {
        return Err(Stop::Usage(format!(
            "--rank {leaver}: the job has {k} ranks"
        )));
    }
    let mut out = [0u64];
    for _ in 0..3 {
        comm.all_reduce_into(&[me as u64], &mut out, &Op::sum(), Algo::Auto)?;
    }
    if me == leaver {
        for q in (0..k).filter(|&q| q != me) {
            comm.send(q, &[1000 + me as u64])?;
        }
        println!("rank {me}: leaving; the others need nothing more from it");
        return Ok(());
    }
    // Long enough for the departure notice to be here before its last message is taken.
    std::thread::sleep(Duration::from_millis(500));
    let mut last = [0u64];
    comm.receive_into(leaver, &mut last)?;
    if last[0] != 1000 + leaver as u64 {
        return Err(Stop::Usage(format!(
            "rank {me}: rank {leaver}'s last message is {}",
            last[0]
        )));
    }
    let others: Vec<Rank> = (0..k).filter(|&q| q != leaver).collect();
    let n = others.len();
    let at = others.iter().position(|&q| q == me).unwrap_or(0);
    if n >= 2 {
        let (next, prev) = (others[(at + 1) % n], others[(at + n - 1) % n]);
        let data = vec![me as u64; 8192];
        let mut got = vec![0u64; 8192];
        for round in 0..3 {
            if round == 1 && at == 0 {
                std::thread::sleep(Duration::from_millis(200));
            }
            comm.send_receive_into(next, &data, prev, &mut got)?;
            if got.iter().any(|&x| x != prev as u64) {
                return Err(Stop::Usage(format!(
                    "rank {me}: wrong data from rank {prev}"
                )));
            }
        }
    }
    if at == 0 {
        println!("the others went on without rank {leaver}: ok");
    }
    Ok(())
}

/// OSU-style: sizes in bytes, powers of two from 8 to `max_bytes`.
fn sizes(max_bytes: usize) -> Vec<usize> {
    let mut s = Vec::new();
    let mut b = 8;
    while b <= max_bytes {
        s.push(b);
        b *= 2;
    }
    s
}

#[allow(clippy::too_many_arguments)]
fn vs_native(
    comm: &mut Comm<Mpi>,
    world: &SimpleCommunicator,
    calibration: &hypercomm_cli::runtime::CalibrationInfo,
    ops: &[OpKind],
    algo: &str,
    max_bytes: usize,
    iters: Option<u32>,
    stat: Stat,
) -> Result<(), Stop> {
    let (me, k) = (comm.rank(), comm.size() as usize);
    // Each rank's own mean on stderr too (which rank is the slowest, for each side).
    let per_rank = std::env::var_os("HYPERCOMM_PER_RANK").is_some_and(|v| v == "1");
    if me == 0 {
        println!("# hypercomm over MPI vs native MPI, {k} ranks, u64 elements, algo {algo}");
        println!(
            "# times: {} µs per call over the timed calls (max over ranks); native and ours \
             take turns call by call",
            if stat == Stat::Median {
                "median"
            } else {
                "mean"
            }
        );
        println!(
            "# predicted: cost model of the algorithm that ran, {}, plus its local copies \
             at τ per byte; ours/pred = ours µs / pred µs",
            hypercomm_cli::runtime::output::calibration_line(calibration)
        );
        println!(
            "{:<14}{:>10}{:>14}{:>12}{:>8}{:>12}{:>11}  algorithm",
            "collective", "bytes", "native µs", "ours µs", "ratio", "pred µs", "ours/pred"
        );
    }
    for &op in ops {
        for bytes in sizes(max_bytes) {
            let m = (bytes / 8).max(1);
            // OSU's counts by default (osu_util.h: 1000 timed and 200 untimed up to its
            // large-message size of 8 KiB, 100 and 10 above). With 200 timed turns, a
            // side's median of sub-microsecond calls moved by a few per cent between
            // runs: where `auto` ran native, the two columns timing one call, the
            // ratios spread 0.75–1.32 (4 runs of 2 Open MPI ranks, 8 B–1 KiB, 128
            // cells); with 1000, 0.77–1.06, quartiles 0.97–1.01.
            let n = match iters {
                None if bytes <= 8192 => 1000,
                None => 100,
                Some(iters) if bytes >= 1 << 18 => (iters / 10).max(5),
                Some(iters) => iters,
            };
            // Untimed turns first: OSU's 200 up to 8 KiB (10 above, or n / 10 of a
            // given `--iters`). With n / 10 (20) the first size of a run measured ours 1.14–1.26 ×
            // native on 2 MPICH ranks (pairwise and linear all-to-alls of 8 B, named),
            // and the same size measured again later in the run 0.96–1.08: the first
            // few dozen calls of a schedule are slower.
            let warm = if bytes <= 8192 { 200 } else { (n / 10).max(2) };
            let mut rng = Rng::new(me as u64 + 1);
            // Buffers: `m` elements per rank or per block, as in OSU (per-rank message).
            let (in_len, out_len) = match op {
                OpKind::Scatter | OpKind::Alltoall | OpKind::ReduceScatter => (
                    k * m,
                    if op == OpKind::ReduceScatter {
                        m
                    } else if op == OpKind::Alltoall {
                        k * m
                    } else {
                        m
                    },
                ),
                OpKind::Gather | OpKind::Allgather => (m, k * m),
                _ => (m, m),
            };
            let input = rng.vec(in_len);
            // Written, not zeroed: a broadcast's root sends from `output`, and a buffer
            // never written reads as the kernel's shared zero page, one cached 4 KiB
            // page for every page of the message (2 Open MPI ranks, 1 MiB: 59 µs from
            // it against 79 µs from real data, MPI's own call alike).
            let mut output = rng.vec(out_len);
            let hc_algo = Algo::from(algo);
            // Native and ours take turns call by call (which goes first alternates), each
            // after a barrier, so a change of load or clock between them weighs on both
            // sides alike: where `auto` runs native itself, the two columns are then the
            // same call timed in the same way. The first call of ours (where `auto`
            // measures its picks, or a refusal shows) is not timed.
            let max_over_ranks = |mine: f64, side: &str| -> f64 {
                if per_rank {
                    eprintln!("# rank {me}: {} {bytes} B {side} {mine:.3} µs", op.name());
                }
                let mut worst = 0.0f64;
                world.all_reduce_into(&mine, &mut worst, SystemOperation::max());
                worst
            };
            let first = {
                world.barrier();
                run_ours(comm, op, &input, &mut output, hc_algo).map(|ran| name_of(comm, ran))
            };
            if let Err(e) = first {
                if !refused(&e) {
                    return Err(e.into());
                }
                let mut total = Duration::ZERO;
                for i in 0..warm + n {
                    world.barrier();
                    let t = Instant::now();
                    run_native(world, op, &input, &mut output);
                    if i >= warm {
                        total += t.elapsed();
                    }
                }
                let native = max_over_ranks(total.as_secs_f64() * 1e6 / n as f64, "native");
                if me == 0 {
                    println!(
                        "{:<14}{:>10}{:>14.3}{:>12}{:>8}  ({e})",
                        op.name(),
                        bytes,
                        native,
                        "-",
                        "-"
                    );
                }
                continue;
            }
            let mut ran = first.unwrap_or_default();
            // By default the median over calls, not the mean: one time slice lost to
            // another process (ranks oversubscribed, or a shared machine) weighs on a mean
            // of a few hundred sub-microsecond calls more than the calls themselves.
            let (mut t_native, mut t_ours) = (Vec::new(), Vec::new());
            for i in 0..warm + n {
                for native_now in [i % 2 == 0, i % 2 == 1] {
                    world.barrier();
                    let t = Instant::now();
                    // The clock stops when the call returns, before what it ran is read
                    // (reading the returned `Ran` at once waits for its stores: a few
                    // ns that a caller who only checks for an error never pays).
                    let took = if native_now {
                        run_native(world, op, &input, &mut output);
                        t.elapsed()
                    } else {
                        let done = run_ours(comm, op, &input, &mut output, hc_algo);
                        let took = t.elapsed();
                        ran = name_of(comm, done?);
                        took
                    };
                    let took = took.as_secs_f64() * 1e6;
                    if i >= warm {
                        (if native_now {
                            &mut t_native
                        } else {
                            &mut t_ours
                        })
                        .push(took);
                    }
                }
            }
            let summary = |xs: &mut Vec<f64>| match stat {
                Stat::Median => median(xs),
                Stat::Mean => xs.iter().sum::<f64>() / xs.len().max(1) as f64,
            };
            let native = max_over_ranks(summary(&mut t_native), "native");
            let ours = max_over_ranks(summary(&mut t_ours), "ours");
            if me == 0 {
                let pred = predicted(op, k as u32, m, ran, comm.calibration(), comm.execution());
                let (pred_us, over) = match pred {
                    Some(p) if p > 0.0 => (
                        format!("{:.3}", p * 1e6),
                        format!("{:.2}", ours / (p * 1e6)),
                    ),
                    _ => ("-".into(), "-".into()),
                };
                println!(
                    "{:<14}{:>10}{:>14.3}{:>12.3}{:>8.2}{:>12}{:>11}  {ran}",
                    op.name(),
                    bytes,
                    native,
                    ours,
                    ours / native,
                    pred_us,
                    over
                );
            }
        }
    }
    if me == 0 {
        for t in comm.tuned() {
            let file = t
                .file
                .as_ref()
                .map_or("this process only".into(), |f| f.display().to_string());
            if t.measured_for > 0.0 {
                println!(
                    "# auto: {} measured in {:.2} s{}, picks kept in {file}",
                    t.key,
                    t.measured_for,
                    hypercomm_rt::tune::left_out_note(&t.left_out)
                );
            } else {
                println!("# auto: {} picks read from {file}", t.key);
            }
        }
    }
    Ok(())
}

/// The median of `xs` (sorted in place); 0 for none.
fn median(xs: &mut [f64]) -> f64 {
    xs.sort_by(f64::total_cmp);
    match xs.len() {
        0 => 0.0,
        n if n % 2 == 1 => xs[n / 2],
        n => (xs[n / 2 - 1] + xs[n / 2]) / 2.0,
    }
}

/// The cost model's time (seconds) of the registry algorithm `ran` for `op` (root 0) on
/// `k` ranks with `m` u64 elements per block, as `hypercomm bench` predicts it
/// ([`hypercomm_cli::runtime::predict`]); `None` for a name the registry does not know.
fn predicted(
    op: OpKind,
    k: u32,
    m: usize,
    ran: &str,
    calibration: hypercomm_rt::Calibration,
    execution: hypercomm_rt::predict::Execution,
) -> Option<f64> {
    let c = hypercomm::collective::Collective::new(op, k, Some(0), None, None).ok()?;
    let algo = algorithms::find(op, ran)?;
    hypercomm_cli::runtime::predict(
        c,
        k,
        m as u64,
        8,
        algo,
        hypercomm::algorithms::Packets::Opt,
        None,
        calibration,
        false,
        execution,
    )
}

fn run_native(world: &SimpleCommunicator, op: OpKind, input: &[u64], output: &mut [u64]) {
    let root = world.process_at_rank(0);
    let is_root = world.rank() == 0;
    let sum = SystemOperation::sum();
    match op {
        OpKind::Broadcast => root.broadcast_into(output),
        OpKind::Scatter if is_root => root.scatter_into_root(input, output),
        OpKind::Scatter => root.scatter_into(output),
        OpKind::Gather if is_root => root.gather_into_root(input, output),
        OpKind::Gather => root.gather_into(input),
        OpKind::Allgather => world.all_gather_into(input, output),
        OpKind::Alltoall => world.all_to_all_into(input, output),
        OpKind::Reduce if is_root => root.reduce_into_root(input, output, sum),
        OpKind::Reduce => root.reduce_into(input, sum),
        OpKind::Allreduce => world.all_reduce_into(input, output, sum),
        OpKind::Scan => world.scan_into(input, output, sum),
        OpKind::ExclusiveScan => world.exclusive_scan_into(input, output, sum),
        OpKind::ReduceScatter => world.reduce_scatter_block_into(input, output, sum),
        // Not in CHECKED: vs-native refuses them.
        _ => {}
    }
}

/// The algorithm the last call of ours ran (`comm.last()`), `-` for none.
fn name_of(comm: &Comm<Mpi>, ran: bool) -> &'static str {
    if ran {
        comm.last_algorithm().unwrap_or("-")
    } else {
        "-"
    }
}

/// Ours: `op` on `comm` (root 0, sum); `false` for a collective `vs-native` does not
/// time. What ran is read afterwards, outside the clock ([`name_of`]): copying the
/// returned [`Ran`](hypercomm_rt::Ran) here, inside it, cost 75–200 ns at a
/// broadcast's root (Open MPI, 2 ranks, 8–256 B; `perf`): its 16-byte loads could not
/// be forwarded from the callee's 8-byte stores, so they waited until every older store
/// had reached the cache, MPI's stores into the peer's shared-memory queue among them,
/// a wait that the native side, which returns nothing, never timed. A caller that only
/// checks for an error (`comm.broadcast_into(…)?;`) does not pay it either.
fn run_ours(
    comm: &mut Comm<Mpi>,
    op: OpKind,
    input: &[u64],
    output: &mut [u64],
    algo: Algo,
) -> Result<bool, Error> {
    let is_root = comm.rank() == 0;
    let sum = Op::<u64>::sum();
    match op {
        OpKind::Broadcast => {
            comm.broadcast_into(0, output, algo)?;
        }
        OpKind::Scatter => {
            comm.scatter_into(0, is_root.then_some(input), output, algo)?;
        }
        OpKind::Gather => {
            comm.gather_into(0, input, is_root.then_some(output), algo)?;
        }
        OpKind::Allgather => {
            comm.all_gather_into(input, output, algo)?;
        }
        OpKind::Alltoall => {
            comm.all_to_all_into(input, output, algo)?;
        }
        OpKind::Reduce => {
            comm.reduce_into(0, input, is_root.then_some(output), &sum, algo)?;
        }
        OpKind::Allreduce => {
            comm.all_reduce_into(input, output, &sum, algo)?;
        }
        OpKind::Scan => {
            comm.scan_into(input, output, &sum, algo)?;
        }
        OpKind::ExclusiveScan => {
            comm.exclusive_scan_into(input, output, &sum, algo)?;
        }
        OpKind::ReduceScatter => {
            comm.reduce_scatter_block_into(input, output, &sum, algo)?;
        }
        _ => return Ok(false),
    }
    Ok(true)
}
