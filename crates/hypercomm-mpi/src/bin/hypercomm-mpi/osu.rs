//! `hypercomm-mpi osu alltoallv|allgatherv|iallreduce|ialltoallv|iallgatherv`: the OSU
//! micro-benchmarks of those names, ours (`auto` and the algorithms asked for) against the MPI library's
//! own collective, in one run.
//!
//! Conventions (OSU's, [`hypercomm_cli::runtime::osu`]): sizes in bytes double from
//! `--min-size` to `--max-size`; a size is what one rank sends to each other rank
//! (alltoallv, ialltoallv: every count is `size` bytes, as `osu_alltoallv` sets them)
//! or contributes (allgatherv, iallgatherv), or the whole vector (iallreduce, `u32` elements summed,
//! `size / 4` of them: sizes from 4 B). 1000 timed calls after 200 warm-up up to 8 KiB,
//! 100 after 10 above (`--iters`, `--warmup`). A rank's latency is its mean; rows give
//! the average, minimum and maximum over ranks. Unlike OSU, which runs one library per
//! process, the forms (native, then each of ours) take turns call by call, a barrier
//! between two calls, so a load that comes and goes weighs on all alike; `ours/native`
//! is the ratio of averages. `ok` says every rank's result equals native MPI's (the
//! last call's).
//!
//! The non-blocking ones (iallreduce, ialltoallv, iallgatherv) report OSU's overlap
//! columns: `pure` (start, wait), `compute` (the
//! computation between start and wait, targeted at `pure`), `overall` (start, compute,
//! wait) and `overlap` = max(0, 100 · (1 − (overall − compute) / pure)) %, and
//! `ours/native` of the pure times. Ours runs in an `immediate::scope`: `native` starts
//! MPI's non-blocking call (`MPI_Iallreduce`, `MPI_Ialltoallv`, `MPI_Iallgatherv`) on the
//! rank's thread, as native does, a named algorithm progresses on a thread of its own,
//! which needs MPI initialized with `MPI_THREAD_MULTIPLE` (this binary asks for it for
//! these three), and `auto` takes, for iallreduce, whichever of the two its measured
//! route says is faster at the size, for the variable-count ones MPI's call (the
//! `algorithm` column names what ran).

use std::time::Duration;

use clap::ValueEnum;
use hypercomm::collective::OpKind;
use hypercomm_cli::runtime::bench::{time_calls, LARGE};
use hypercomm_cli::runtime::osu::{
    all_ranks, compute, ours_iallreduce, over_ranks, overlap_percent, overlap_rank, Spread,
};
use hypercomm_cli::runtime::AlgoChoice;
use hypercomm_mpi::Mpi;
use hypercomm_rt::{Barrier, Comm, Op};
use mpi::collective::SystemOperation;
use mpi::datatype::{Partition, PartitionMut};
use mpi::topology::SimpleCommunicator;
use mpi::traits::*;

use crate::{partition, Stop};

/// The benchmark.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Benchmark {
    /// `osu_alltoallv`: every rank sends `size` bytes to every rank.
    Alltoallv,
    /// `osu_allgatherv`: every rank contributes `size` bytes.
    Allgatherv,
    /// `osu_iallreduce`: non-blocking all-reduce, overlap with computation.
    Iallreduce,
    /// `osu_ialltoallv`: non-blocking alltoallv (`size` bytes to every rank), overlap
    /// with computation.
    Ialltoallv,
    /// `osu_iallgatherv`: non-blocking allgatherv (`size` bytes from every rank),
    /// overlap with computation.
    Iallgatherv,
}

impl Benchmark {
    fn op(self) -> OpKind {
        match self {
            Benchmark::Alltoallv => OpKind::Alltoallv,
            Benchmark::Allgatherv => OpKind::Allgatherv,
            Benchmark::Iallreduce => OpKind::Allreduce,
            Benchmark::Ialltoallv => OpKind::Alltoallv,
            Benchmark::Iallgatherv => OpKind::Allgatherv,
        }
    }
    fn name(self) -> &'static str {
        match self {
            Benchmark::Alltoallv => "osu_alltoallv",
            Benchmark::Allgatherv => "osu_allgatherv",
            Benchmark::Iallreduce => "osu_iallreduce",
            Benchmark::Ialltoallv => "osu_ialltoallv",
            Benchmark::Iallgatherv => "osu_iallgatherv",
        }
    }
    /// A non-blocking benchmark: OSU's overlap columns.
    fn overlapped(self) -> bool {
        matches!(
            self,
            Benchmark::Iallreduce | Benchmark::Ialltoallv | Benchmark::Iallgatherv
        )
    }
    /// The send and receive counts (bytes) of a variable-count benchmark on `k` ranks,
    /// and rank `me`'s send buffer.
    fn counts(self, size: usize, me: usize, k: usize) -> (Vec<usize>, Vec<usize>, Vec<u8>) {
        let (send_counts, recv_counts) = match self {
            Benchmark::Alltoallv | Benchmark::Ialltoallv => (vec![size; k], vec![size; k]),
            _ => (vec![size], vec![size; k]),
        };
        let send = (0..send_counts.iter().sum()).map(|i| byte(me, i)).collect();
        (send_counts, recv_counts, send)
    }
}

/// A validated `osu`.
pub struct OsuConfig {
    /// Which benchmark.
    pub benchmark: Benchmark,
    /// Ours: `auto` and registry algorithms.
    pub algos: Vec<AlgoChoice>,
    /// Sizes in bytes.
    pub sizes: Vec<usize>,
    /// Timed calls per size (`None`: OSU's).
    pub iters: Option<u64>,
    /// Warm-up calls per size (`None`: OSU's).
    pub warmup: Option<u64>,
}

impl OsuConfig {
    /// Validate: the algorithms fit `k` ranks (`native` is the reference, always run);
    /// sizes as `bench`'s (from 4 B for iallreduce's `u32`s).
    pub fn new(
        benchmark: Benchmark,
        k: u32,
        algo: &str,
        (min, max): (u64, u64),
        iters: Option<u64>,
        warmup: Option<u64>,
    ) -> Result<OsuConfig, hypercomm_cli::CliError> {
        let algos = algo
            .split(',')
            .map(|a| hypercomm_cli::config::rt_algo(k, benchmark.op(), a))
            .collect::<Result<Vec<_>, _>>()?;
        let invalid =
            |what, reason: String| hypercomm::error::Error::InvalidParameter { what, reason };
        if algos.contains(&AlgoChoice::Native) {
            return Err(invalid(
                "--algo",
                "native is the reference every row is compared with; valid: auto or \
                 registry names"
                    .into(),
            )
            .into());
        }
        for (what, n, lo) in [("--iters", iters, 1), ("--warmup", warmup, 0)] {
            if let Some(n) = n.filter(|n| !(lo..=10_000).contains(n)) {
                return Err(invalid(what, format!("{n}; valid: {lo}..=10000")).into());
            }
        }
        let least = if benchmark == Benchmark::Iallreduce {
            4
        } else {
            1
        };
        if min < least || max > 1 << 26 {
            return Err(invalid(
                if min < least {
                    "--min-size"
                } else {
                    "--max-size"
                },
                format!(
                    "sizes {min}..{max} B; valid: {least}..=67108864 for {}",
                    benchmark.name()
                ),
            )
            .into());
        }
        let sizes = hypercomm_cli::config::bench_sizes(min, max)?;
        Ok(OsuConfig {
            benchmark,
            algos,
            sizes,
            iters,
            warmup,
        })
    }

    fn iterations(&self, size: usize) -> (u64, u64) {
        let (iters, warmup) = if size > LARGE { (100, 10) } else { (1000, 200) };
        (self.iters.unwrap_or(iters), self.warmup.unwrap_or(warmup))
    }
}

/// One row: a size and a form (native or one of ours).
struct Row {
    size: usize,
    form: String,
    algorithm: &'static str,
    iters: u64,
    /// Latency, or iallreduce's [pure, compute, overall], µs.
    times: Vec<Spread>,
    ratio: Option<f64>,
    ok: bool,
}

/// Run `cfg` on every rank; rank 0 prints the table.
pub fn osu(comm: &mut Comm<Mpi>, world: &SimpleCommunicator, cfg: &OsuConfig) -> Result<(), Stop> {
    let k = comm.size();
    let mut rows = Vec::new();
    for &size in &cfg.sizes {
        let (iters, warmup) = cfg.iterations(size);
        let got = match cfg.benchmark {
            Benchmark::Alltoallv | Benchmark::Allgatherv => {
                latency_rows(comm, world, cfg, size, iters, warmup)?
            }
            Benchmark::Iallreduce => overlap_rows(comm, world, cfg, size, iters, warmup)?,
            Benchmark::Ialltoallv | Benchmark::Iallgatherv => {
                overlap_v_rows(comm, world, cfg, size, iters, warmup)?
            }
        };
        rows.extend(got);
    }
    if comm.rank() == 0 {
        print!("{}", table(cfg, k, &rows));
    }
    // Every rank knows every row's verdict (agreed over the ranks).
    match rows.iter().filter(|r| !r.ok).count() {
        0 => Ok(()),
        n => Err(Stop::Mismatches(n as u32)),
    }
}

/// Rank `r`'s byte `i`: its rank and position, so that a misplaced block shows.
fn byte(r: usize, i: usize) -> u8 {
    (r * 31 + i * 7 + 1) as u8
}

fn latency_rows(
    comm: &mut Comm<Mpi>,
    world: &SimpleCommunicator,
    cfg: &OsuConfig,
    size: usize,
    iters: u64,
    warmup: u64,
) -> Result<Vec<Row>, Stop> {
    let (me, k) = (comm.rank() as usize, comm.size() as usize);
    let forms = 1 + cfg.algos.len();
    let (send_counts, recv_counts, send) = cfg.benchmark.counts(size, me, k);
    let out_len: usize = recv_counts.iter().sum();
    let mut outputs = vec![vec![0u8; out_len]; forms];
    let (sc, sd) = partition(&send_counts);
    let (rc, rd) = partition(&recv_counts);
    let timed = time_calls(
        comm,
        Barrier::RecursiveDoubling,
        warmup,
        iters,
        forms,
        |comm, form| {
            let out = &mut outputs[form][..];
            if form == 0 {
                let mut into = PartitionMut::new(out, &rc[..], &rd[..]);
                match cfg.benchmark {
                    Benchmark::Alltoallv => world.all_to_all_varcount_into(
                        &Partition::new(&send[..], &sc[..], &sd[..]),
                        &mut into,
                    ),
                    _ => world.all_gather_varcount_into(&send[..], &mut into),
                }
                return Ok(());
            }
            let algo = cfg.algos[form - 1].algo();
            match cfg.benchmark {
                Benchmark::Alltoallv => {
                    comm.all_to_allv_into(&send, &send_counts, out, &recv_counts, algo)?;
                }
                _ => {
                    comm.all_gatherv_into(&send, out, &recv_counts, algo)?;
                }
            }
            Ok(())
        },
        // Form 0 is MPI's own call, on `world`.
        |comm, form| {
            if form == 0 {
                Some(hypercomm_rt::NATIVE)
            } else {
                comm.last_algorithm()
            }
        },
    )?;
    let latencies: Vec<f64> = timed.iter().map(|t| t.0 * 1e6).collect();
    let spreads = over_ranks(comm, &latencies)?;
    let mut rows = Vec::with_capacity(forms);
    for (form, (spread, (_, algorithm))) in spreads.iter().zip(&timed).enumerate() {
        let ok = all_ranks(comm, outputs[form] == outputs[0])?;
        rows.push(row(
            cfg,
            size,
            form,
            algorithm.unwrap_or("-"),
            iters,
            vec![*spread],
            spreads[0].avg,
            ok,
        ));
    }
    Ok(rows)
}

#[allow(clippy::too_many_arguments)]
fn row(
    cfg: &OsuConfig,
    size: usize,
    form: usize,
    algorithm: &'static str,
    iters: u64,
    times: Vec<Spread>,
    native: f64,
    ok: bool,
) -> Row {
    Row {
        size,
        form: match form {
            0 => hypercomm_rt::NATIVE.to_string(),
            f => cfg.algos[f - 1].name().to_string(),
        },
        algorithm,
        iters,
        ratio: (form > 0 && native > 0.0).then(|| times[0].avg / native),
        times,
        ok,
    }
}

fn overlap_rows(
    comm: &mut Comm<Mpi>,
    world: &SimpleCommunicator,
    cfg: &OsuConfig,
    size: usize,
    iters: u64,
    warmup: u64,
) -> Result<Vec<Row>, Stop> {
    let me = comm.rank() as usize;
    let m = size / 4;
    let send: Vec<u32> = (0..m).map(|i| (me * 1000 + i) as u32).collect();
    let sum = Op::<u32>::sum();
    overlap_forms(
        comm,
        cfg,
        (size, iters, warmup),
        m,
        |out, work| {
            mpi::request::scope(|scope| {
                let req = world.immediate_all_reduce_into(
                    scope,
                    &send[..],
                    &mut out[..],
                    SystemOperation::sum(),
                );
                let worked = work.map_or(Duration::ZERO, compute);
                req.wait();
                worked
            })
        },
        |comm, out, algo, work| ours_iallreduce(comm, &send, out, &sum, algo, work),
    )
}

/// `osu_ialltoallv` and `osu_iallgatherv`: MPI's `MPI_Ialltoallv` / `MPI_Iallgatherv`
/// (rsmpi's) against ours in an `immediate::scope` (`auto` there starts the same MPI
/// call on the rank's thread; a named schedule runs on a progress thread).
fn overlap_v_rows(
    comm: &mut Comm<Mpi>,
    world: &SimpleCommunicator,
    cfg: &OsuConfig,
    size: usize,
    iters: u64,
    warmup: u64,
) -> Result<Vec<Row>, Stop> {
    let (me, k) = (comm.rank() as usize, comm.size() as usize);
    let alltoallv = cfg.benchmark == Benchmark::Ialltoallv;
    let (send_counts, recv_counts, send) = cfg.benchmark.counts(size, me, k);
    let (sc, sd) = partition(&send_counts);
    let (rc, rd) = partition(&recv_counts);
    let parts = Partition::new(&send[..], &sc[..], &sd[..]);
    overlap_forms(
        comm,
        cfg,
        (size, iters, warmup),
        recv_counts.iter().sum(),
        |out, work| {
            let mut into = PartitionMut::new(out, &rc[..], &rd[..]);
            mpi::request::scope(|scope| {
                let req = if alltoallv {
                    world.immediate_all_to_all_varcount_into(scope, &parts, &mut into)
                } else {
                    world.immediate_all_gather_varcount_into(scope, &send[..], &mut into)
                };
                let worked = work.map_or(Duration::ZERO, compute);
                req.wait();
                worked
            })
        },
        |comm, out, algo, work| {
            hypercomm_rt::immediate::scope(|s| {
                let req = if alltoallv {
                    comm.immediate_all_to_allv_into(
                        s,
                        &send,
                        &send_counts,
                        out,
                        &recv_counts,
                        algo,
                    )?
                } else {
                    comm.immediate_all_gatherv_into(s, &send, out, &recv_counts, algo)?
                };
                let worked = work.map_or(Duration::ZERO, compute);
                Ok((worked, req.wait()?))
            })
        },
    )
}

/// OSU's overlap rows of one size: native (`native(out, work)`: MPI's non-blocking call,
/// the computation, the wait; the time computed), then each of ours (`ours(comm, out,
/// algo, work)`, also what the request ran), each form's output of `out_len` elements
/// checked equal to native's on every rank.
fn overlap_forms<T: Copy + Default + PartialEq>(
    comm: &mut Comm<Mpi>,
    cfg: &OsuConfig,
    (size, iters, warmup): (usize, u64, u64),
    out_len: usize,
    mut native: impl FnMut(&mut [T], Option<Duration>) -> Duration,
    mut ours: impl FnMut(
        &mut Comm<Mpi>,
        &mut [T],
        hypercomm_rt::Algo<'_>,
        Option<Duration>,
    ) -> hypercomm_rt::Result<(Duration, hypercomm_rt::Ran)>,
) -> Result<Vec<Row>, Stop> {
    let mut native_out = vec![T::default(); out_len];
    let mut rows = Vec::new();
    let mut native_pure = 0.0;
    for form in 0..=cfg.algos.len() {
        let mut out = vec![T::default(); out_len];
        let mut algorithm = hypercomm_rt::NATIVE;
        let times = if form == 0 {
            let b = Barrier::RecursiveDoubling;
            overlap_rank(comm, b, warmup, iters, |_, work| {
                Ok(native(&mut native_out, work))
            })?
        } else {
            let algo = cfg.algos[form - 1].algo();
            let t = overlap_rank(
                comm,
                Barrier::RecursiveDoubling,
                warmup,
                iters,
                |comm, work| {
                    let (worked, ran) = ours(comm, &mut out, algo, work)?;
                    algorithm = ran.algorithm;
                    Ok(worked)
                },
            )?;
            t
        };
        let us = times.map(|t| t * 1e6);
        let spreads = over_ranks(comm, &us)?;
        if form == 0 {
            native_pure = spreads[0].avg;
            out.clone_from(&native_out);
        }
        let ok = all_ranks(comm, out == native_out)?;
        rows.push(row(
            cfg,
            size,
            form,
            algorithm,
            iters,
            spreads,
            native_pure,
            ok,
        ));
    }
    Ok(rows)
}

fn table(cfg: &OsuConfig, k: u32, rows: &[Row]) -> String {
    use hypercomm_cli::output::table as render;
    use hypercomm_cli::runtime::output::{sig, size as show};
    let mut s = format!(
        "# {} conventions, {k} ranks, mpi backend: ours against native MPI in one run\n",
        cfg.benchmark.name()
    );
    let iallreduce = cfg.benchmark.overlapped();
    if iallreduce {
        let size = if cfg.benchmark == Benchmark::Iallreduce {
            "the vector (u32 sum)"
        } else {
            "bytes per rank (pair)"
        };
        s.push_str(&format!(
            "# size: {size}; µs, avg over ranks; overlap = max(0, 100·(1 − \
             (overall − compute)/pure)) %; ours/native: pure times; ok: result = native's\n",
        ));
    } else {
        s.push_str(
            "# size: bytes per rank (pair); latency µs over ranks of each rank's mean, the \
             forms in turn call by call; ours/native: avg; ok: result = native's\n",
        );
    }
    let header: Vec<&str> = if iallreduce {
        vec![
            "size",
            "impl",
            "algorithm",
            "iters",
            "pure_us",
            "compute_us",
            "overall_us",
            "overlap_%",
            "ours/native",
            "ok",
        ]
    } else {
        vec![
            "size",
            "impl",
            "algorithm",
            "iters",
            "avg_us",
            "min_us",
            "max_us",
            "ours/native",
            "ok",
        ]
    };
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            let mut c = vec![
                show(r.size),
                r.form.clone(),
                r.algorithm.to_string(),
                r.iters.to_string(),
            ];
            if iallreduce {
                let [pure, cpu, ovrl] = [r.times[0].avg, r.times[1].avg, r.times[2].avg];
                c.extend([sig(Some(pure), 4), sig(Some(cpu), 4), sig(Some(ovrl), 4)]);
                c.push(format!("{:.1}", overlap_percent(pure, cpu, ovrl)));
            } else {
                let t = r.times[0];
                c.extend([
                    sig(Some(t.avg), 4),
                    sig(Some(t.min), 4),
                    sig(Some(t.max), 4),
                ]);
            }
            c.push(sig(r.ratio, 3));
            c.push(if r.ok { "yes" } else { "NO" }.into());
            c
        })
        .collect();
    s.push_str(&render(&header, &cells));
    s
}
