//! What `hypercomm-mpi osu` measures, backend-generic: the OSU micro-benchmarks'
//! conventions for blocking collectives (`osu_alltoallv`, `osu_allgatherv`: a rank's
//! latency is its mean over the timed calls; the table gives the average, minimum and
//! maximum over ranks, [`over_ranks`]; calls timed by [`super::bench::time_calls`]) and
//! for non-blocking ones (`osu_iallreduce`: the overlap of communication and
//! computation, [`overlap_rank`]).
//!
//! **Overlap**, as `osu_iallreduce` computes it. Per size, each rank times
//! 1. `t_pure`: start the collective, wait for it, nothing between (mean over the timed
//!    calls);
//! 2. `t_ovrl`: start it, compute for `t_pure` (the target of OSU's `dummy_compute`),
//!    wait; and `t_cpu`, the time that computation actually took (≈ `t_pure`).
//!
//! Each is averaged over the ranks, and the overlap is
//! `max(0, 100 · (1 − (t_ovrl − t_cpu) / t_pure))` per cent ([`overlap_percent`]): 100
//! when the collective hides entirely behind the computation (`t_ovrl = t_cpu`), 0 when
//! none of it does (`t_ovrl ≥ t_cpu + t_pure`).

use std::hint::black_box;
use std::time::{Duration, Instant};

use bytemuck::Pod;
use hypercomm_rt::{Algo, Barrier, Comm, Detach, Op, Ran, Transport};

/// Average, minimum and maximum over the ranks of one per-rank figure.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Spread {
    /// Mean over ranks.
    pub avg: f64,
    /// Least rank's.
    pub min: f64,
    /// Greatest rank's.
    pub max: f64,
}

/// The [`Spread`] over `comm`'s ranks of each of this rank's figures `mine` (every rank
/// passes as many, in the same order; every rank gets the result).
pub fn over_ranks<X: Transport>(
    comm: &mut Comm<X>,
    mine: &[f64],
) -> hypercomm_rt::Result<Vec<Spread>> {
    let words: Vec<u64> = mine.iter().map(|x| x.to_bits()).collect();
    let mut all = vec![0u64; words.len() * comm.size() as usize];
    comm.all_gather_into(&words, &mut all, Algo::Auto)?;
    Ok((0..mine.len())
        .map(|i| {
            let of: Vec<f64> = all
                .chunks(mine.len())
                .map(|w| f64::from_bits(w[i]))
                .collect();
            Spread {
                avg: of.iter().sum::<f64>() / of.len() as f64,
                min: of.iter().copied().fold(f64::INFINITY, f64::min),
                max: of.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            }
        })
        .collect())
}

/// Whether every rank's `ok` holds (every rank gets the answer).
pub fn all_ranks<X: Transport>(comm: &mut Comm<X>, ok: bool) -> hypercomm_rt::Result<bool> {
    let mine = [u8::from(ok)];
    let mut all = vec![0u8; comm.size() as usize];
    comm.all_gather_into(&mine, &mut all, Algo::Auto)?;
    Ok(all.iter().all(|&b| b == 1))
}

/// Compute (arithmetic the optimiser cannot remove) for `target`; the time it took.
pub fn compute(target: Duration) -> Duration {
    let start = Instant::now();
    let mut x = 1u64;
    while start.elapsed() < target {
        for _ in 0..64 {
            x = black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
        }
    }
    black_box(x);
    start.elapsed()
}

/// `osu_iallreduce`'s overlap, per cent, from the rank-averaged times.
pub fn overlap_percent(pure: f64, cpu: f64, ovrl: f64) -> f64 {
    if pure <= 0.0 {
        return 0.0;
    }
    (100.0 * (1.0 - (ovrl - cpu) / pure)).max(0.0)
}

/// This rank's `[t_pure, t_cpu, t_ovrl]` (seconds, means over `iters` timed calls after
/// `warmup` untimed ones, `barrier` between calls, outside the timing) of a
/// non-blocking collective: `call(comm, work)` starts it, computes for `work` if given
/// ([`compute`]), waits for it, and returns the time computed.
pub fn overlap_rank<X: Transport>(
    comm: &mut Comm<X>,
    barrier: Barrier,
    warmup: u64,
    iters: u64,
    mut call: impl FnMut(&mut Comm<X>, Option<Duration>) -> hypercomm_rt::Result<Duration>,
) -> hypercomm_rt::Result<[f64; 3]> {
    let mut pure = Duration::ZERO;
    for i in 0..warmup + iters {
        let start = Instant::now();
        call(comm, None)?;
        if i >= warmup {
            pure += start.elapsed();
        }
        comm.barrier_with(barrier)?;
    }
    let target = pure / iters.max(1) as u32;
    let (mut cpu, mut ovrl) = (Duration::ZERO, Duration::ZERO);
    for i in 0..warmup + iters {
        let start = Instant::now();
        let worked = call(comm, Some(target))?;
        if i >= warmup {
            ovrl += start.elapsed();
            cpu += worked;
        }
        comm.barrier_with(barrier)?;
    }
    let n = iters.max(1) as f64;
    Ok([pure, cpu, ovrl].map(|d| d.as_secs_f64() / n))
}

/// One call of ours for [`overlap_rank`]: start the non-blocking all-reduce of `send`
/// into `recv` ([`Comm::immediate_all_reduce_into`]) in an
/// [`immediate::scope`](hypercomm_rt::immediate::scope), compute for `work` meanwhile,
/// wait; the time computed, and what the request ran. On a backend with collectives of its own (MPI), `native`
/// starts its non-blocking collective (`MPI_Iallreduce`) on this thread, as
/// `osu_iallreduce` does, and it progresses as MPI progresses it (with most libraries,
/// in the wait: little overlap, as MPI's own), and so does `auto` where its measured
/// route is native (`hypercomm_rt::immediate`); a named schedule, `auto` where the
/// thread measured faster, and every call on threads, run on a progress thread of their
/// own, which moves the data while this thread computes.
pub fn ours_iallreduce<X, T>(
    comm: &mut Comm<X>,
    send: &[T],
    recv: &mut [T],
    op: &Op<'_, T>,
    algo: Algo<'_>,
    work: Option<Duration>,
) -> hypercomm_rt::Result<(Duration, Ran)>
where
    X: Detach,
    T: Pod + Send + Sync,
{
    hypercomm_rt::immediate::scope(|s| {
        let request = comm.immediate_all_reduce_into(s, send, recv, op, algo)?;
        let worked = work.map_or(Duration::ZERO, compute);
        let ran = request.wait()?;
        Ok((worked, ran))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use hypercomm_rt::threads;

    #[test]
    fn overlap_is_osus_formula_clipped_at_zero() {
        // Hidden entirely, half hidden, not at all, worse than not at all.
        assert_eq!(overlap_percent(10.0, 10.0, 10.0), 100.0);
        assert_eq!(overlap_percent(10.0, 10.0, 15.0), 50.0);
        assert_eq!(overlap_percent(10.0, 10.0, 20.0), 0.0);
        assert_eq!(overlap_percent(10.0, 10.0, 30.0), 0.0);
        assert_eq!(overlap_percent(4.0, 2.0, 3.0), 75.0);
        assert_eq!(overlap_percent(0.0, 1.0, 1.0), 0.0);
    }

    /// On threads (whose non-blocking calls progress on their own thread), the overlap
    /// measurement runs ours: every call's result is the sum, and the times are those
    /// of the calls made (a compute phase computes).
    #[test]
    fn overlap_rank_runs_ours_on_threads_and_every_result_is_right() {
        let k = 3u32;
        let got = threads::run(k, |comm| {
            let r = comm.rank() as u64;
            let send = [r + 1, 10 * r];
            let mut recv = [0u64; 2];
            let mut results = Vec::new();
            let op = Op::sum();
            let times = overlap_rank(comm, Barrier::RecursiveDoubling, 1, 3, |comm, work| {
                recv = [0; 2];
                let (worked, ran) = ours_iallreduce(comm, &send, &mut recv, &op, Algo::Auto, work)?;
                // Threads have no collectives of their own: a schedule, on a thread.
                assert_ne!(ran.algorithm, hypercomm_rt::NATIVE);
                results.push(recv);
                Ok(worked)
            })?;
            let spread = over_ranks(comm, &times)?;
            let ok = all_ranks(comm, results.iter().all(|&x| x == [6, 30]))?;
            Ok::<_, hypercomm_rt::Error>((times, spread, results.len(), ok))
        })
        .unwrap();
        for (times, spread, calls, ok) in &got {
            assert_eq!(*calls, 8, "(1 + 3) pure calls and as many overlapped");
            assert!(ok);
            let [pure, cpu, ovrl] = *times;
            assert!(pure > 0.0 && cpu > 0.0, "{times:?}");
            // The overlapped call waits for its computation: it cannot take less.
            assert!(ovrl >= cpu, "{times:?}");
            for (s, t) in spread.iter().zip(times) {
                assert!(s.min <= *t && *t <= s.max, "{s:?} {t}");
                assert!(s.min <= s.avg && s.avg <= s.max, "{s:?}");
            }
        }
        // Every rank got the same spreads.
        assert!(got.windows(2).all(|w| w[0].1 == w[1].1));
    }

    #[test]
    fn all_ranks_is_false_when_one_rank_says_no() {
        let got = threads::run(4, |comm| {
            let r = comm.rank();
            all_ranks(comm, r != 2)
        })
        .unwrap();
        assert_eq!(got, vec![false; 4]);
        let got = threads::run(4, |comm| all_ranks(comm, true)).unwrap();
        assert_eq!(got, vec![true; 4]);
    }
}
