//! `hypercomm calibrate`: β and τ of a backend from point-to-point transfers.
//!
//! Ranks pair up, (0, 1), (2, 3), …, and every pair measures at once at sizes 1 B,
//! 2 B, 4 B, … (powers of 2: a cache's edge, where the time per byte jumps, falls
//! between two sizes a factor 2 apart, not 4), in one of two [`Pattern`]s:
//! - `exchange` (the default): both ranks send and receive at once
//!   (`send_receive_into`, OSU's bidirectional pattern), and the one-way time is the
//!   median exchange. This is what a step of the collectives does (every rank sends and
//!   receives in the same step, all ranks at once), so τ includes the sharing of memory
//!   bandwidth between ranks that copy at the same time;
//! - `pingpong`: the even rank sends, the odd rank receives and sends the message back;
//!   the one-way time is half the median round trip (one rank copies at a time: the
//!   point-to-point latency and bandwidth of OSU's `osu_latency`).
//!
//! Each size is measured twice (issue 20: predictions within 30 % of `bench`): with
//! the same data every time, as a repeated call sends its input (`time`: the receiver
//! read these bytes at the last exchange, its cache holds them; OSU's and nccl-tests'
//! convention, and what `bench` times), and with data the sender wrote since (`fresh`:
//! the two buffers trade places after each exchange, so each message leaves its
//! sender's cache, as an all-reduce's partial sums or a forwarded broadcast do). From
//! 16 KiB to 256 KiB the second is 2.5–3× the first (both backends; `β, τ` and the bands
//! fit the first, the `fresh` bands the second: [`hypercomm_rt::Calibration::fresh_at`]).
//!
//! On the threads backend `calibrate` also measures pairs of ranks that share a CPU as
//! fibers of one thread ([`same_cpu_reps`], [`same_cpu_points`]): a message between them
//! is a copy within that CPU's caches (here 5× faster than one between two cores up to
//! 8 KiB, 1.7× at 64 KiB, alike at 256 KiB, and 2× slower from 512 KiB, where a pair's
//! four buffers outgrow the CPU's 2 MiB L2), and the `same-cpu` bands price it
//! ([`hypercomm_rt::Calibration::same_cpu_at`]).
//!
//! Medians, not means, so that a rank descheduled on a shared machine does not skew a
//! size; each size's time is averaged over the pairs. [`fit`] fits `t(n) = β + τ·n` by
//! least squares on the relative error (each point weighted by 1/t², so the small sizes,
//! which fix β, count as much as the large ones, which fix τ); where that line misfits
//! a point by more than [`BAND_TOLERANCE`], [`bands`] adds per-size corrections (caches,
//! eager and rendezvous protocols: beyond the seeds' one line). At least two sizes are
//! measured ([`checked_sizes`]), and a fit with τ ≤ 0 (bandwidth for free) or β < 0 is
//! not saved ([`fit`]); the runtime refuses such a file too.
//!
//! The file is the runtime's format ([`hypercomm_rt::Calibration::parse`]):
//! `beta = …` and `tau = …` lines with `#` comments. Where it goes and where `run` and
//! `bench` read it is [`CalibrationSource`].

use std::path::{Path, PathBuf};
use std::time::Instant;

use hypercomm::schedule::Rank;
use hypercomm_rt::select::{Shares, CALIBRATION_ENV, CALIBRATION_OFF, MAX_BANDS, MIN_SHARED_COPY};
use hypercomm_rt::{Calibration, Comm, Transport};
use serde::Serialize;

use super::CalibrationInfo;

/// One measured size: bytes and the one-way times, seconds.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct PingPong {
    /// Message size, bytes.
    pub bytes: usize,
    /// The one-way time of the same data each time (the receiver read it last time).
    pub time: f64,
    /// The one-way time of data the sender wrote since the receiver last read it
    /// (0: not measured).
    pub fresh: f64,
}

/// Calibration sizes: powers of 2 from 1 B up to `max` bytes.
pub fn sizes(max: usize) -> Vec<usize> {
    std::iter::successors(Some(1usize), |&s| s.checked_mul(2))
        .take_while(|&s| s <= max.max(1))
        .collect()
}

/// `calibrate --max-size` by default (bytes): 23 sizes, 1 B to 4 MiB.
pub const DEFAULT_MAX_SIZE: u64 = 4 << 20;

/// The sizes of `--max-size max` ([`sizes`]), refused when there are fewer than two:
/// one size cannot tell the start-up time β from the time per byte τ (a line through
/// one point), and its fit would save τ = 0, bandwidth for free.
pub fn checked_sizes(max: u64) -> Result<Vec<usize>, hypercomm::error::Error> {
    let s = sizes(usize::try_from(max).unwrap_or(usize::MAX));
    if s.len() < 2 {
        return Err(hypercomm::error::Error::InvalidParameter {
            what: "--max-size",
            reason: format!(
                "{max} gives one size (1 B), and fitting β and τ needs at least two \
                 distinct sizes; valid: 2 or more (sizes are powers of 2 from 1 B; the \
                 default, {DEFAULT_MAX_SIZE}, gives {})",
                sizes(DEFAULT_MAX_SIZE as usize).len()
            ),
        });
    }
    Ok(s)
}

/// Round trips at `bytes` when the user gave none: about 256 MiB moved, 50 to 5000.
pub fn default_reps(bytes: usize) -> u64 {
    ((256usize << 20) / bytes.max(1)).clamp(50, 5000) as u64
}

/// How a pair of ranks measures a transfer (`--pattern` of both `calibrate` commands).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum Pattern {
    /// Both ranks send and receive at once (bidirectional); one-way time = the exchange.
    Exchange,
    /// One way and back; one-way time = half the round trip.
    #[value(name = "pingpong")]
    PingPong,
}

impl Pattern {
    /// The name used on the command line and in the calibration file.
    pub fn name(self) -> &'static str {
        match self {
            Pattern::Exchange => "exchange",
            Pattern::PingPong => "ping-pong",
        }
    }
}

/// Rank `comm.rank()`'s part: `pattern` with its partner at every size, `reps(size)`
/// repetitions each after two untimed ones, each timed. The even rank of each pair
/// returns its one-way times; odd ranks, and the last rank of an odd count, return none.
pub fn calibrate_rank<X: Transport>(
    comm: &mut Comm<X>,
    sizes: &[usize],
    reps: &dyn Fn(usize) -> u64,
    pattern: Pattern,
) -> hypercomm_rt::Result<Vec<PingPong>> {
    calibrate_rank_with(comm, sizes, reps, pattern, true)
}

/// [`calibrate_rank`], measuring fresh data too only with `fresh` (else its times are
/// 0: not measured).
pub fn calibrate_rank_with<X: Transport>(
    comm: &mut Comm<X>,
    sizes: &[usize],
    reps: &dyn Fn(usize) -> u64,
    pattern: Pattern,
    fresh: bool,
) -> hypercomm_rt::Result<Vec<PingPong>> {
    calibrate_pairs(comm, sizes, reps, pattern, fresh, u32::MAX, false)
}

/// [`calibrate_rank_with`] by the first `pairs` pairs only, (0, 1), …; the other ranks
/// return no points. One pair measures alone what a job of any size, and any number of
/// ranks a CPU, would keep alike (the automatic calibration of the MPI binary).
///
/// `quick`: a lone pair (one pair, or 3 ranks) syncs with its partner only and the
/// other ranks wait for it in the closing barrier alone, one wait as long as the whole
/// measurement: for the automatic calibration, which takes well under a second (with
/// the idle ranks in two barriers a size, MPICH's on 8 ranks sharing 2 cores took
/// 1.8 s). Otherwise every rank joins each measurement's barrier, so that no wait lasts
/// longer than one size's measurement: for `calibrate`, whose sizes and repetitions the
/// user chooses, within the backend's timeout a wait.
pub fn calibrate_pairs<X: Transport>(
    comm: &mut Comm<X>,
    sizes: &[usize],
    reps: &dyn Fn(usize) -> u64,
    pattern: Pattern,
    fresh: bool,
    pairs: u32,
    quick: bool,
) -> hypercomm_rt::Result<Vec<PingPong>> {
    let (r, k) = (comm.rank(), comm.size());
    let partner = if r % 2 == 0 { r + 1 } else { r - 1 };
    let partner = (partner < k && r / 2 < pairs).then_some(partner);
    // Two ranks have no one to leave waiting.
    let alone = (quick && (pairs == 1 || k < 4)) || k <= 2;
    measure_pair(
        comm,
        partner,
        (alone, quick),
        r % 2 == 0,
        sizes,
        reps,
        pattern,
        fresh,
    )
}

/// [`calibrate_pairs`] by ranks `a` and `b` alone, which `a` reports (the others return
/// no points; `quick` as there): the MPI binary's pair across two hosts, rank 0 and the
/// first rank of the next host, for the calibration's `network` bands.
#[allow(clippy::too_many_arguments)]
pub fn calibrate_between<X: Transport>(
    comm: &mut Comm<X>,
    a: Rank,
    b: Rank,
    sizes: &[usize],
    reps: &dyn Fn(usize) -> u64,
    pattern: Pattern,
    fresh: bool,
    quick: bool,
) -> hypercomm_rt::Result<Vec<PingPong>> {
    let r = comm.rank();
    let partner = if a == b {
        None
    } else if r == a {
        Some(b)
    } else if r == b {
        Some(a)
    } else {
        None
    };
    let alone = quick || comm.size() <= 2;
    measure_pair(
        comm,
        partner,
        (alone, quick),
        r == a,
        sizes,
        reps,
        pattern,
        fresh,
    )
}

/// The measurement of [`calibrate_pairs`] and [`calibrate_between`]: this rank with
/// `partner` (none: it takes part in the closing barrier only), its points returned when
/// `reports`. Pairs start each measurement together after a barrier of every rank, so
/// that they load the machine at once; a pair measuring `alone` waits for its partner
/// only, while the others wait in the closing barrier, where a wait soon sleeps (with
/// the idle ranks in two barriers a size, MPICH's automatic calibration on 8 ranks
/// sharing 2 cores took 1.8 s; with the pair alone, 1.5 s). `quick` (the automatic
/// calibration): a size's repetitions are cut to what [`AUTO_SIZE_BUDGET`] allows at the
/// last size's agreed time a repetition ([`quick_reps`]).
#[allow(clippy::too_many_arguments)]
fn measure_pair<X: Transport>(
    comm: &mut Comm<X>,
    partner: Option<Rank>,
    (alone, quick): (bool, bool),
    reports: bool,
    sizes: &[usize],
    reps: &dyn Fn(usize) -> u64,
    pattern: Pattern,
    fresh: bool,
) -> hypercomm_rt::Result<Vec<PingPong>> {
    let measure_fresh = fresh;
    let r = comm.rank();
    let active = partner.is_some();
    let partner = partner.unwrap_or(r);
    // The first of the pair sends first in a ping-pong.
    let first = r < partner;
    let mut points = Vec::new();
    // The pair's agreed seconds a repetition at the last size (quick only).
    let mut per_rep = 0.0f64;
    for &bytes in sizes {
        if alone && !active {
            break;
        }
        // A rank without a partner holds no buffers: it would take memory and, sharing
        // a CPU with the pair, their time.
        let held = if active { bytes } else { 0 };
        let mut buf = super::try_buffer(held, "--max-size", "a message", |_| (r % 251) as u8)?;
        let mut other = super::try_buffer(held, "--max-size", "a message", |_| 0u8)?;
        if quick && active && per_rep == 0.0 {
            // The first size: three exchanges tell the pair what one takes (the slower
            // one's time), before it commits to `reps`' count; after one untimed, which
            // may set up the connection.
            comm.send_receive_into(partner, &buf, partner, &mut other)?;
            let start = Instant::now();
            for _ in 0..3 {
                comm.send_receive_into(partner, &buf, partner, &mut other)?;
            }
            let mine = start.elapsed().as_secs_f64() / 3.0;
            per_rep = pair_max(comm, partner, mine)? / 2.0;
        }
        let n = if quick {
            quick_reps(reps(bytes), per_rep)
        } else {
            reps(bytes)
        };
        // The median one-way time of `n` timed repetitions after two untimed ones; with
        // `fresh`, each message is data its sender has just written (the buffers trade
        // places, and a ping-pong sends back what it received), otherwise the same
        // bytes each time (a ping-pong's reply from a buffer of its own).
        let mut measure = |fresh: bool| -> hypercomm_rt::Result<f64> {
            let mut trips = Vec::with_capacity(n as usize);
            if alone {
                let mut got = [0u8];
                comm.send_receive_into(partner, &[1u8], partner, &mut got)?;
            } else {
                comm.barrier()?;
            }
            if !active {
                return Ok(0.0);
            }
            for i in 0..n + 2 {
                let start = Instant::now();
                match pattern {
                    Pattern::Exchange => {
                        comm.send_receive_into(partner, &buf, partner, &mut other)?;
                        if fresh {
                            std::mem::swap(&mut buf, &mut other);
                        }
                    }
                    Pattern::PingPong if first => {
                        comm.send(partner, &buf)?;
                        let into = if fresh { &mut buf } else { &mut other };
                        comm.receive_into(partner, into)?;
                    }
                    Pattern::PingPong => {
                        let into = if fresh { &mut buf } else { &mut other };
                        comm.receive_into(partner, into)?;
                        comm.send(partner, &buf)?;
                    }
                }
                if i >= 2 {
                    trips.push(start.elapsed().as_secs_f64());
                }
            }
            trips.sort_by(f64::total_cmp);
            let median = trips[trips.len() / 2];
            Ok(match pattern {
                Pattern::Exchange => median,
                Pattern::PingPong => median / 2.0,
            })
        };
        // The first size once untimed before: its two untimed repetitions were not
        // enough (4 Open MPI ranks on 2 cores, the pair alone: 1 B in 3.0 µs, 2–64 B
        // in 0.8, after the idle ranks had gone to their barrier).
        if bytes == sizes[0] {
            measure(false)?;
        }
        let time = measure(false)?;
        let fresh = if measure_fresh { measure(true)? } else { 0.0 };
        if quick && active {
            // Both of the pair take the same count at the next size: the slower one's
            // time a repetition (a ping-pong's is its round trip).
            let trip = match pattern {
                Pattern::Exchange => time.max(fresh),
                Pattern::PingPong => 2.0 * time.max(fresh),
            };
            per_rep = pair_max(comm, partner, trip)?;
        }
        if active && reports {
            points.push(PingPong { bytes, time, fresh });
        }
    }
    comm.barrier()?;
    Ok(points)
}

/// The larger of this rank's `x` and its partner's: both of a pair get the same value.
fn pair_max<X: Transport>(comm: &mut Comm<X>, partner: Rank, x: f64) -> hypercomm_rt::Result<f64> {
    let mut theirs = [0u8; 8];
    comm.send_receive_into(partner, &x.to_le_bytes(), partner, &mut theirs)?;
    Ok(x.max(f64::from_le_bytes(theirs)))
}

/// The mean over pairs of each size's time (`per_rank` holds each rank's points).
pub fn average(per_rank: &[Vec<PingPong>]) -> Vec<PingPong> {
    let pairs: Vec<&Vec<PingPong>> = per_rank.iter().filter(|p| !p.is_empty()).collect();
    let Some(first) = pairs.first() else {
        return vec![];
    };
    (0..first.len())
        .map(|i| PingPong {
            bytes: first[i].bytes,
            time: pairs.iter().map(|p| p[i].time).sum::<f64>() / pairs.len() as f64,
            fresh: pairs.iter().map(|p| p[i].fresh).sum::<f64>() / pairs.len() as f64,
        })
        .collect()
}

/// β and τ of `t = β + τ·n` by weighted least squares (weights 1/t²: relative error),
/// unclamped; `None` without two distinct sizes of positive time.
fn least_squares(points: &[PingPong]) -> Option<(f64, f64)> {
    least_squares_by(points).map(|(beta, tau, _)| (beta, tau))
}

/// [`least_squares`] with the weighted sums' `Σw·y / Σw` (β when τ is held at 0).
fn least_squares_by(points: &[PingPong]) -> Option<(f64, f64, f64)> {
    let (mut sw, mut sx, mut sy, mut sxx, mut sxy) = (0.0, 0.0, 0.0, 0.0, 0.0);
    for p in points.iter().filter(|p| p.time > 0.0) {
        let (x, y) = (p.bytes as f64, p.time);
        let w = 1.0 / (y * y);
        sw += w;
        sx += w * x;
        sy += w * y;
        sxx += w * x * x;
        sxy += w * x * y;
    }
    let det = sw * sxx - sx * sx;
    if sw == 0.0 || det.abs() <= f64::EPSILON * sw * sxx {
        return None;
    }
    let tau = (sw * sxy - sx * sy) / det;
    Some(((sy - tau * sx) / sw, tau, sy / sw))
}

/// A band splits where one line misfits a measured point by more than this (relative).
pub const BAND_TOLERANCE: f64 = 0.10;

/// The largest relative misfit of `t = beta + tau·n` on `points`.
pub fn misfit(points: &[PingPong], (beta, tau): (f64, f64)) -> f64 {
    points
        .iter()
        .filter(|p| p.time > 0.0)
        .map(|p| ((beta + tau * p.bytes as f64) - p.time).abs() / p.time)
        .fold(0.0, f64::max)
}

/// The per-size correction of a fit (issue 20; beyond the seeds' one line β + mτ,
/// [`hypercomm_rt::Calibration`]): none when one line fits every point within
/// [`BAND_TOLERANCE`]; otherwise bands of consecutive points, each the longest run from
/// where the last ended whose own least-squares line (τ held at 0 if it came out
/// negative) fits all its points within the tolerance. Neighbouring bands share their
/// boundary point, which the later one prices, so every band holds at least two points
/// and a band reproduces its points within the tolerance (two points exactly, unless
/// their times fall). The first band starts at the smallest size. A wider tolerance is
/// tried (×1.5) while the bands are more than [`hypercomm_rt::select::MAX_BANDS`].
pub fn bands(points: &[PingPong], line: (f64, f64)) -> Vec<hypercomm_rt::select::Band> {
    use hypercomm_rt::select::Band;
    let mut pts: Vec<PingPong> = points.iter().copied().filter(|p| p.time > 0.0).collect();
    pts.sort_by_key(|p| p.bytes);
    pts.dedup_by_key(|p| p.bytes);
    let band_of = |run: &[PingPong]| -> Option<Band> {
        let (beta, tau, mean) = least_squares_by(run)?;
        let (beta, tau) = if tau < 0.0 { (mean, 0.0) } else { (beta, tau) };
        let from = run[0].bytes as u64;
        let valid = beta.is_finite() && tau.is_finite() && beta + tau * from as f64 > 0.0;
        valid.then_some(Band { from, beta, tau })
    };
    let fits =
        |run: &[PingPong], tol: f64| band_of(run).filter(|b| misfit(run, (b.beta, b.tau)) <= tol);
    let mut tol = BAND_TOLERANCE;
    if pts.len() < 3 || misfit(&pts, line) <= tol {
        return Vec::new();
    }
    loop {
        let mut out = Vec::new();
        let mut i = 0;
        while i + 1 < pts.len() {
            // The longest run from i that one line fits (two points always make a band).
            let mut j = i + 1;
            while j + 1 < pts.len() && fits(&pts[i..=j + 1], tol).is_some() {
                j += 1;
            }
            match band_of(&pts[i..=j]) {
                Some(b) => out.push(b),
                None => return Vec::new(),
            }
            i = j;
        }
        if out.len() <= MAX_BANDS {
            return out;
        }
        tol *= 1.5;
    }
}

/// What `calibrate` prints when it saves nothing: the path, why, and the measured
/// one-way times (both binaries).
pub fn not_saved(path: &Path, e: &FitError, points: &[PingPong]) -> String {
    let measured: Vec<String> = points
        .iter()
        .map(|p| {
            format!(
                "{} {}",
                super::output::size(p.bytes),
                super::output::secs(p.time)
            )
        })
        .collect();
    format!(
        "error: calibration not saved to {}: {e}\nmeasured (one-way): {}\n",
        path.display(),
        measured.join(", ")
    )
}

/// Why a fit is not saved ([`fit`]).
#[derive(Clone, Debug, PartialEq)]
pub enum FitError {
    /// Fewer than two distinct sizes were timed: β and τ cannot be told apart.
    TooFewSizes {
        /// The distinct sizes with a positive time.
        sizes: usize,
    },
    /// The time per byte came out ≤ 0: the times did not grow with the size.
    Tau {
        /// The estimate, s/B.
        tau: f64,
        /// The largest size measured, bytes.
        max: usize,
    },
    /// The start-up time came out negative.
    Beta {
        /// The estimate, s.
        beta: f64,
    },
}

impl std::fmt::Display for FitError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FitError::TooFewSizes { sizes } => write!(
                f,
                "{sizes} distinct size(s) timed; fitting β and τ needs at least two: pass \
                 a --max-size of 2 or more"
            ),
            FitError::Tau { tau, max } => write!(
                f,
                "the fitted time per byte τ = {tau:e} s/B is not positive: the one-way \
                 time did not grow with the size up to {max} B (too few sizes, or too \
                 noisy ones: a busy machine); τ ≤ 0 would make `auto` treat bandwidth as \
                 free. Rerun with a larger --max-size (the default is \
                 {DEFAULT_MAX_SIZE}) or more --reps, on an idle machine"
            ),
            FitError::Beta { beta } => write!(
                f,
                "the fitted start-up time β = {beta:e} s is negative: the small sizes are \
                 too noisy (a busy machine). Rerun with more --reps, on an idle machine"
            ),
        }
    }
}

impl std::error::Error for FitError {}

/// β and τ of `t = β + τ·n` by weighted least squares (weights 1/t²: relative error),
/// refused when the line cannot be a machine's: fewer than two distinct sizes, τ ≤ 0
/// (bandwidth for free) or β < 0. `calibrate` saves only what this accepts.
pub fn fit(points: &[PingPong]) -> Result<Calibration, FitError> {
    let mut timed: Vec<usize> = points
        .iter()
        .filter(|p| p.time > 0.0)
        .map(|p| p.bytes)
        .collect();
    timed.sort_unstable();
    timed.dedup();
    let Some((beta, tau)) = least_squares(points).filter(|_| timed.len() >= 2) else {
        return Err(FitError::TooFewSizes { sizes: timed.len() });
    };
    if !(tau.is_finite() && tau > 0.0) {
        let max = timed.last().copied().unwrap_or(0);
        return Err(FitError::Tau { tau, max });
    }
    if !(beta.is_finite() && beta >= 0.0) {
        return Err(FitError::Beta { beta });
    }
    let mut c = Calibration::line(beta, tau);
    // `bands` returns only bands that `Bands::new` accepts; none if anything is off.
    c.bands = hypercomm_rt::select::Bands::new(&bands(points, (beta, tau))).unwrap_or_default();
    c.fresh = fresh_bands(points);
    Ok(c)
}

/// The `fresh` bands of a calibration: [`fit`] of the `fresh` times (its bands, or its
/// one line as one band from the smallest size); none when they were not measured or
/// do not fit (then fresh data is priced as any other).
pub fn fresh_bands(points: &[PingPong]) -> hypercomm_rt::select::Bands {
    bands_of(points, |p| p.fresh)
}

/// The `same-cpu` bands of a calibration from [`same_cpu_points`]: [`fit`] of their
/// (same data) times, as [`fresh_bands`] fits the fresh ones; none when they were not
/// measured or do not fit (then such a message is priced as any other).
pub fn same_cpu_bands(points: &[PingPong]) -> hypercomm_rt::select::Bands {
    bands_of(points, |p| p.time)
}

/// The bands of [`fit`] of the times `time` picks (its bands, or its one line as one
/// band from the smallest size); none when no point has one or they do not fit.
fn bands_of(points: &[PingPong], time: impl Fn(&PingPong) -> f64) -> hypercomm_rt::select::Bands {
    use hypercomm_rt::select::{Band, Bands};
    let timed: Vec<PingPong> = points
        .iter()
        .filter(|p| time(p) > 0.0)
        .map(|p| PingPong {
            time: time(p),
            fresh: 0.0,
            ..*p
        })
        .collect();
    let (Ok(c), Some(first)) = (fit(&timed), timed.iter().map(|p| p.bytes).min()) else {
        return Bands::default();
    };
    if !c.bands.is_empty() {
        return c.bands;
    }
    let line = Band {
        from: first as u64,
        beta: c.beta,
        tau: c.tau,
    };
    Bands::new(&[line]).unwrap_or_default()
}

/// Repetitions at `bytes` of the same-CPU pairs when the user gave none: a quarter of
/// [`default_reps`], at least 20 (their median is as steady: one CPU, no peer to
/// wake; and `calibrate` stays near a second).
pub fn same_cpu_reps(bytes: usize) -> u64 {
    (default_reps(bytes) / 4).max(20)
}

/// The one-way time of one message between two ranks of one CPU, from
/// [`calibrate_rank_with`]'s points of pairs that each share a CPU: a ping-pong's
/// one-way time is one message already; an exchange on one CPU copies both messages,
/// one after the other, so one is half of it.
pub fn same_cpu_points(points: &[PingPong], pattern: Pattern) -> Vec<PingPong> {
    let per = match pattern {
        Pattern::Exchange => 0.5,
        Pattern::PingPong => 1.0,
    };
    points
        .iter()
        .map(|p| PingPong {
            time: p.time * per,
            fresh: p.fresh * per,
            ..*p
        })
        .collect()
}

/// The lines a calibration file gets for the same-CPU pairs ([`same_cpu_points`]):
/// their times as comments and `same-cpu` bands (none without bands).
pub fn same_cpu_text(c: &Calibration, points: &[PingPong]) -> String {
    own_bands_text(
        "a message between two ranks run as fibers of one CPU",
        "same-cpu",
        &c.same_cpu,
        points,
    )
}

/// The lines a calibration file gets for the pair across two hosts
/// ([`calibrate_between`]): their times as comments and `network` bands (none without
/// bands).
pub fn network_text(c: &Calibration, points: &[PingPong]) -> String {
    own_bands_text("a message between two hosts", "network", &c.network, points)
}

/// The fewest timed messages of each size [`lone_points`] takes the median of: 4 MiB
/// took 0.14 ms, and with the automatic calibration's 4–16 the shares of three
/// calibrations in a row ranged 0.43–0.76 at one size.
pub const LONE_REPS: u64 = 64;

/// Lone messages as a one-way call sends them (a 2-rank broadcast: a barrier, then rank
/// 0 sends the same input each time and rank 1 receives it): rank 1's median time from
/// the barrier to its receive's end at each of `sizes`, after two untimed calls, `reps`
/// (at least [`LONE_REPS`]) timed; rank 1 reports them, rank 0 none. For [`shared_copy_shares`]: rank 0 waits idle
/// for its send to be taken, so on threads it helps copy from
/// [`hypercomm_rt::threads::SHARED_COPY_FROM`] bytes. Collective over `comm` (2 ranks).
pub fn lone_points<X: Transport>(
    comm: &mut Comm<X>,
    sizes: &[usize],
    reps: &dyn Fn(usize) -> u64,
) -> hypercomm_rt::Result<Vec<PingPong>> {
    let r = comm.rank();
    let largest = sizes.iter().copied().max().unwrap_or(0);
    let mut buf = super::try_buffer(largest, "--max-size", "a message", |i| (i % 251) as u8)?;
    let mut points = Vec::new();
    for &bytes in sizes {
        let n = reps(bytes).max(LONE_REPS);
        let mut times = Vec::with_capacity(n as usize);
        for i in 0..n + 2 {
            comm.barrier()?;
            let start = Instant::now();
            if r == 0 {
                comm.send(1, &buf[..bytes])?;
            } else {
                comm.receive_into(0, &mut buf[..bytes])?;
            }
            if i >= 2 {
                times.push(start.elapsed().as_secs_f64());
            }
        }
        times.sort_by(f64::total_cmp);
        if r == 1 {
            points.push(PingPong {
                bytes,
                time: times[times.len() / 2],
                fresh: 0.0,
            });
        }
    }
    comm.barrier()?;
    Ok(points)
}

/// A calibration's `shared-copy` shares ([`Calibration::shared_copy`]) from `lone`, the
/// one-way times of lone messages of at least `from` bytes between two ranks with a CPU
/// each ([`lone_points`]: each message's sender waits idle and helps its receiver copy
/// it), against `fitted`'s exchange bands: for each size, the share s of its length at
/// which the bands price a message in the time the lone one took (bisection over
/// [`MIN_SHARED_COPY`]..1, held to its ends). One share per size, not one for all: on
/// the Intel VM one calibration's went 0.46–0.48 from 256 KiB to 1 MiB and 0.62 at 2 MiB, where the
/// exchange's four buffers had left the cache and the lone message's two not yet, and
/// their median (0.5) priced the 2-thread broadcast of 2 MiB at 0.66 of its time
/// (`docs/perf-log/2026-11-29-shared-copy.md`). At most [`MAX_BANDS`] sizes, the
/// smallest (the calibration measures 5: 256 KiB to 4 MiB). Empty without such points.
pub fn shared_copy_shares(fitted: &Calibration, lone: &[PingPong], from: usize) -> Shares {
    let time = |bytes: f64| {
        let (beta, tau) = fitted.at(bytes as u64);
        beta + tau * bytes
    };
    let mut points: Vec<(u64, f64)> = lone
        .iter()
        .filter(|p| p.bytes >= from && p.time > 0.0)
        .map(|p| {
            let n = p.bytes as f64;
            let (mut lo, mut hi) = (MIN_SHARED_COPY, 1.0);
            if time(lo * n) >= p.time {
                return (p.bytes as u64, lo);
            }
            if time(hi * n) <= p.time {
                return (p.bytes as u64, hi);
            }
            for _ in 0..40 {
                let mid = (lo + hi) / 2.0;
                if time(mid * n) < p.time {
                    lo = mid;
                } else {
                    hi = mid;
                }
            }
            (p.bytes as u64, (lo + hi) / 2.0)
        })
        .collect();
    points.sort_by_key(|p| p.0);
    points.dedup_by_key(|p| p.0);
    points.truncate(MAX_BANDS);
    Shares::new(&points).unwrap_or_default()
}

/// The lines a calibration file gets for its `shared-copy`: the lone messages' times as
/// comments, then `shared-copy = BYTES SHARE` per size (nothing when not measured).
pub fn shared_copy_text(c: &Calibration, lone: &[PingPong]) -> String {
    if c.shared_copy.is_empty() {
        return String::new();
    }
    let mut s = String::from(
        "# a lone message, copied by its idle sender and its receiver together (one-way \
         time after a barrier), and the share of its length at which the bands above price \
         it at each size (shared-copy = BYTES SHARE):\n",
    );
    for p in lone {
        s.push_str(&format!("#   {:>10} B  {:.4e} s\n", p.bytes, p.time));
    }
    for &(bytes, share) in c.shared_copy.as_slice() {
        s.push_str(&format!("shared-copy = {bytes} {share}\n"));
    }
    s
}

/// Steps of the exchanges of 1 B that measure a calibration's `switch`
/// ([`switch_points`]).
pub const SWITCH_REPS: u64 = 1000;

/// Where the ranks share CPUs (`cpus` of them, the backend's
/// [`Execution::cpus`](hypercomm_rt::predict::Execution::cpus)): every rank exchanges
/// 1 B with a neighbour, step after step, the pairs alternating between (0, 1), (2, 3),
/// … and (1, 2), (3, 4), …, (k − 1, 0), so that every step waits for every rank as a
/// collective's exchanges do; the median time of a step and the ranks a CPU runs (rank
/// 0's; `None` on the others, and without `cpus`), for [`set_switch`]. Two patterns that do not couple the
/// ranks so measured otherwise (8 Open MPI ranks sharing 2 cores, where a 1 KiB
/// all-reduce's steps took 14 µs): every pair exchanging on its own, the pairs drifting
/// apart, 23 µs a step; a ring shift, which the ranks pipeline, less than the pair alone
/// 4 times. Collective: every rank calls it with the same `cpus`.
pub fn switch_points<X: Transport>(
    comm: &mut Comm<X>,
    cpus: Option<usize>,
) -> hypercomm_rt::Result<Option<(f64, f64)>> {
    let Some(cpus) = cpus else {
        return Ok(None);
    };
    let (r, k) = (comm.rank(), comm.size());
    let mut got = [0u8];
    let mut steps = Vec::with_capacity(SWITCH_REPS as usize);
    comm.barrier()?;
    for i in 0..SWITCH_REPS + 10 {
        // Even steps: (0, 1), (2, 3), …; odd ones: (1, 2), …, and (k − 1, 0) when k is
        // even (when it is odd, rank k − 1 waits out the even steps and rank 0 the odd).
        let partner = if i % 2 == 0 {
            Some(r ^ 1).filter(|&p| p < k)
        } else if r % 2 == 1 {
            Some((r + 1) % k).filter(|&p| p != 0 || k % 2 == 0)
        } else {
            Some((r + k - 1) % k).filter(|_| r != 0 || k % 2 == 0)
        };
        let Some(partner) = partner else { continue };
        let start = Instant::now();
        comm.send_receive_into(partner, &[r as u8], partner, &mut got)?;
        if i >= 10 {
            steps.push(start.elapsed().as_secs_f64());
        }
    }
    comm.barrier()?;
    steps.sort_by(f64::total_cmp);
    let per_cpu = k as f64 / cpus.max(1) as f64;
    Ok((r == 0 && !steps.is_empty()).then(|| (steps[steps.len() / 2], per_cpu)))
}

/// Set `c`'s `switch` from [`switch_points`]'s `shared` (a step's time, ranks a CPU)
/// and the pair-alone `points`, and return the calibration file's lines for it (none
/// without sharing, or where the step took no more than its messages).
pub fn set_switch(c: &mut Calibration, shared: Option<(f64, f64)>, points: &[PingPong]) -> String {
    let Some((step, q)) = shared else {
        return String::new();
    };
    c.switch = switch_of(step, q, small_message_time(points));
    switch_text(c, step, q)
}

/// The pair-alone time of a small message, for [`switch_of`]: the least of the points'
/// up to 64 B, where a message costs its start-up only (one point of an oversubscribed
/// job's pair can take a time slice: 4 ranks on 2 cores measured 1 B in 3.0 µs, 2–64 B
/// in 0.8), else the first point's; 0 for none.
fn small_message_time(points: &[PingPong]) -> f64 {
    let small = points
        .iter()
        .filter(|p| p.bytes <= 64 && p.time > 0.0)
        .map(|p| p.time)
        .fold(f64::INFINITY, f64::min);
    if small.is_finite() {
        small
    } else {
        points.first().map_or(0.0, |p| p.time)
    }
}

/// A calibration's `switch` ([`hypercomm_rt::Calibration::switch`]): with `q` ranks a
/// CPU, a step of every rank's message of 1 B took `together` seconds
/// ([`switch_points`]), which the prediction prices as q of the pair-alone message
/// (`alone`) plus q switches: (together / q − alone), never below 0.
fn switch_of(together: f64, q: f64, alone: f64) -> f64 {
    if !(q > 1.0 && together.is_finite() && alone.is_finite()) {
        return 0.0;
    }
    (together / q - alone).max(0.0)
}

/// The lines of a calibration's `switch`: the measurement as a comment, then `switch =
/// SECONDS` (nothing when it is 0).
fn switch_text(c: &Calibration, together: f64, q: f64) -> String {
    if c.switch <= 0.0 {
        return String::new();
    }
    format!(
        "# ranks sharing CPUs ({q:.2} a CPU): exchanges of 1 B by every rank took \
         {together:.4e} s a step; per rank a shared CPU runs in a step (switch = SECONDS):\n\
         switch = {:e}\n",
        c.switch
    )
}

/// `# {what} ({key} = FROM_BYTES BETA TAU), measured:`, the points' times as comments,
/// and `bands` as `key` lines; nothing without bands.
fn own_bands_text(
    what: &str,
    key: &str,
    bands: &hypercomm_rt::select::Bands,
    points: &[PingPong],
) -> String {
    if bands.is_empty() {
        return String::new();
    }
    let mut s = format!("# {what} ({key} = FROM_BYTES BETA TAU), measured:\n");
    for p in points {
        s.push_str(&format!("#   {:>10} B  {:.4e} s\n", p.bytes, p.time));
    }
    for b in bands.as_slice() {
        s.push_str(&b.line(key));
    }
    s
}

/// The `network` bands of a calibration from [`calibrate_between`]'s points across two
/// hosts: [`fit`] of their (same data) times, as [`same_cpu_bands`]; none when they
/// were not measured or do not fit.
pub fn network_bands(points: &[PingPong]) -> hypercomm_rt::select::Bands {
    bands_of(points, |p| p.time)
}

/// Most repetitions per size of `calibrate --reps`: each rank keeps every repetition's
/// time (8 bytes each), and at the default largest size 100,000 exchanges move 400 GiB.
pub const MAX_REPS: u64 = 100_000;

/// Where `calibrate` of `backend` saves, after checking `--reps` (1 to [`MAX_REPS`]):
/// `output`, which must not be a directory and whose directory must exist (as `sweep --svg`'s), else the default
/// ([`CalibrationSource::for_backend`]: `HYPERCOMM_CALIBRATION`'s file, else the
/// backend's in the configuration directory, which [`save`] creates); an error when
/// neither names a path.
pub fn output_path(
    output: Option<PathBuf>,
    reps: Option<u64>,
    backend: &str,
) -> Result<PathBuf, hypercomm::error::Error> {
    use hypercomm::error::Error;
    if let Some(n) = reps.filter(|n| !(1..=MAX_REPS).contains(n)) {
        return Err(Error::InvalidParameter {
            what: "--reps",
            reason: format!("{n}; valid: 1..={MAX_REPS}"),
        });
    }
    if let Some(out) = &output {
        if out.is_dir() {
            return Err(Error::InvalidParameter {
                what: "--output",
                reason: format!(
                    "{} is a directory; valid: a file to write (e.g. {}/calibration.conf)",
                    out.display(),
                    out.display()
                ),
            });
        }
        let dir = out.parent().filter(|d| !d.as_os_str().is_empty());
        if let Some(dir) = dir.filter(|d| !d.is_dir()) {
            return Err(Error::InvalidParameter {
                what: "--output",
                reason: format!(
                    "the directory {} does not exist; create it first, or name a file \
                     in an existing directory",
                    dir.display()
                ),
            });
        }
    }
    output
        .or(CalibrationSource::for_backend(backend, None).path)
        .ok_or_else(|| {
            Error::MissingParameter(
                "no default calibration path (neither HYPERCOMM_CALIBRATION, XDG_CONFIG_HOME \
             nor HOME is set): pass --output FILE"
                    .into(),
            )
        })
}

/// Write `text` to `path`, creating its directory (that of the default path; an
/// explicit `--output`'s must exist: [`output_path`]). The text goes to a file of this
/// process beside it first, then takes `path`'s name at once: a command reading `path`
/// meanwhile (another job measuring the same machine) reads the old file or the new,
/// never half of one.
pub fn save(path: &Path, text: &str) -> std::io::Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    let mut part = path.as_os_str().to_owned();
    part.push(format!(".{}.part", std::process::id()));
    let part = PathBuf::from(part);
    std::fs::write(&part, text)?;
    std::fs::rename(&part, path).inspect_err(|_| {
        let _ = std::fs::remove_file(&part);
    })
}

/// The text of a calibration file.
pub fn file_text(
    c: Calibration,
    backend: &str,
    ranks: u32,
    pattern: Pattern,
    points: &[PingPong],
) -> String {
    let mut s = format!(
        "# hypercomm calibration of the {backend} backend: {ranks} ranks, {} at {} sizes\n\
         # one-way time t(n) = beta + tau * n (seconds, n in bytes), least squares on the relative error\n",
        pattern.name(),
        points.len()
    );
    s.push_str("#        size  same data   fresh data (written by the sender since)\n");
    for p in points {
        s.push_str(&format!(
            "#   {:>10} B  {:.4e} s  {:.4e} s\n",
            p.bytes, p.time, p.fresh
        ));
    }
    s.push_str(&format!("beta = {:e}\ntau = {:e}\n", c.beta, c.tau));
    if !c.bands.is_empty() {
        s.push_str(&format!(
            "# one line misfits these points by up to {:.0}%: per-size bands (band = FROM_BYTES \
             BETA TAU), each fitting its points within {:.0}%\n",
            100.0 * misfit(points, (c.beta, c.tau)),
            100.0 * BAND_TOLERANCE
        ));
    }
    for b in c.bands.as_slice() {
        s.push_str(&b.line("band"));
    }
    if !c.fresh.is_empty() {
        s.push_str(
            "# data its sender wrote since the receiver last read it (fresh = FROM_BYTES BETA TAU)\n",
        );
    }
    for b in c.fresh.as_slice() {
        s.push_str(&b.line("fresh"));
    }
    s
}

/// The file name of `backend`'s calibration in the configuration directory:
/// `calibration.conf` for the threads backend (the name it always had),
/// `calibration-{backend}.conf` for the others (`calibration-mpi.conf`): one backend's
/// calibration never prices another's messages.
pub fn default_file_name(backend: &str) -> String {
    if backend == "threads" {
        "calibration.conf".into()
    } else {
        format!("calibration-{backend}.conf")
    }
}

/// Where a backend's calibration comes from, in this order (issue 20: a calibration
/// that needs no user action):
/// 1. the file `HYPERCOMM_CALIBRATION` names (it must exist), or the runtime's defaults
///    when it is `off` ([`hypercomm_rt::select::CALIBRATION_OFF`]);
/// 2. the backend's file in the configuration directory, which `calibrate` writes:
///    `$XDG_CONFIG_HOME/hypercomm/` (else `$HOME/.config/hypercomm/`) with
///    [`default_file_name`];
/// 3. the calibration measured automatically on this machine, kept in the cache
///    (`$XDG_CACHE_HOME/hypercomm/calibration-{machine}.conf`,
///    [`hypercomm_rt::tune::cache_file`]);
/// 4. none yet: [`Lookup::Measure`], and the command measures one
///    ([`AUTO_MAX_SIZE`], [`auto_reps`]: well under a second) and keeps it there.
#[derive(Clone, Debug, PartialEq)]
pub struct CalibrationSource {
    /// The file of 1 or 2, if one can be named.
    pub path: Option<PathBuf>,
    /// Whether it came from `HYPERCOMM_CALIBRATION` (then it must exist).
    pub from_env: bool,
    /// `HYPERCOMM_CALIBRATION=off`: the defaults, nothing read or measured.
    pub off: bool,
    /// The automatic calibration's file (3), if the machine has a name and a cache
    /// directory can be named.
    pub cache: Option<PathBuf>,
}

/// What [`CalibrationSource::lookup`] found.
#[derive(Clone, Debug, PartialEq)]
pub enum Lookup {
    /// A calibration to use, with where it came from.
    Found(CalibrationInfo),
    /// No file: measure one, and keep it in `cache` when there is one.
    Measure {
        /// Where to keep what is measured.
        cache: Option<PathBuf>,
        /// Why the automatic calibration's file there could not be used (unreadable, or
        /// refused by [`Calibration::parse`], as a file of another version may be):
        /// measured again and replaced, not an error (the user never wrote it).
        unreadable: Option<String>,
    },
}

impl CalibrationSource {
    /// `backend`'s source on the machine named `machine` (for the cache's file name;
    /// `None`: no automatic calibration is kept), from the environment.
    pub fn for_backend(backend: &str, machine: Option<&str>) -> Self {
        let var = |name: &str| std::env::var_os(name).filter(|p| !p.is_empty());
        let config = var("XDG_CONFIG_HOME")
            .map(PathBuf::from)
            .or_else(|| var("HOME").map(|h| Path::new(&h).join(".config")));
        Self::new(
            var(CALIBRATION_ENV),
            config.as_deref(),
            backend,
            machine.and_then(|m| hypercomm_rt::tune::cache_file("calibration", m, "conf")),
        )
    }

    /// The source of `backend` from `HYPERCOMM_CALIBRATION`'s value `named`, the
    /// configuration directory `config` (its `hypercomm/` holds the backend's file) and
    /// the automatic calibration's file `cache`.
    pub fn new(
        named: Option<std::ffi::OsString>,
        config: Option<&Path>,
        backend: &str,
        cache: Option<PathBuf>,
    ) -> Self {
        let named = named.filter(|p| !p.is_empty());
        let off = named.as_deref() == Some(std::ffi::OsStr::new(CALIBRATION_OFF));
        let from_env = named.is_some() && !off;
        let path = if from_env {
            named.map(PathBuf::from)
        } else {
            config.map(|d| d.join("hypercomm").join(default_file_name(backend)))
        };
        CalibrationSource {
            path,
            from_env,
            off,
            cache,
        }
    }

    /// The calibration to use, or that one must be measured ([`CalibrationSource`]'s
    /// order); an error for a file that cannot be read or parsed, or a missing file
    /// that `HYPERCOMM_CALIBRATION` names.
    pub fn lookup(&self) -> hypercomm_rt::Result<Lookup> {
        let read = |p: &PathBuf| -> hypercomm_rt::Result<Lookup> {
            Ok(Lookup::Found(CalibrationInfo::new(
                Calibration::load(p)?,
                Some(p.display().to_string()),
            )))
        };
        if self.off {
            return Ok(Lookup::Found(CalibrationInfo::new(
                Calibration::default(),
                None,
            )));
        }
        match &self.path {
            Some(p) if self.from_env || p.exists() => return read(p),
            _ => {}
        }
        let unreadable = match &self.cache {
            Some(c) if c.exists() => match read(c) {
                Ok(found) => return Ok(found),
                Err(e) => Some(e.to_string()),
            },
            _ => None,
        };
        Ok(Lookup::Measure {
            cache: self.cache.clone(),
            unreadable,
        })
    }
}

/// This host's name (Linux's `/proc/sys/kernel/hostname`; `host` where it cannot be
/// read), for the automatic calibration's file name: a home directory shared by several
/// machines keeps one per machine.
pub fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "host".into())
}

/// The largest size of an automatic calibration: 64 MiB, past this machine's 32 MiB
/// L3, so that [`hypercomm_rt::Calibration::copy_floor`] knows what a call that
/// outgrows the caches copies at (a calibration to 4 MiB predicted the README's main
/// command, 8 ranks holding 58 MB, 1.9× too fast; to 64 MiB, 0.95).
pub const AUTO_MAX_SIZE: usize = 64 << 20;

/// Exchanges per size of an automatic calibration: about 16 MiB moved, 4 to 1000 (a
/// sixteenth of [`default_reps`]: the whole measurement, 27 sizes with fresh data and
/// the same-CPU pairs, takes 0.5–0.7 s on 2 cores).
pub fn auto_reps(bytes: usize) -> u64 {
    ((16usize << 20) / bytes.max(1)).clamp(4, 1000) as u64
}

/// Seconds the automatic calibration plans to spend on one size and kind of data
/// (same or fresh): on this project's VMs never reached (its largest size, 64 MiB, takes
/// 17 ms an exchange, [`auto_reps`] 4 of them); on a slow link it cuts the repetitions:
/// two hosts of one machine whose ranks shared a core exchanged 1 B in 3 ms, and the
/// automatic calibration took 65 s with [`auto_reps`]' 1000 a size.
pub const AUTO_SIZE_BUDGET: f64 = 0.02;

/// The automatic calibration's repetitions at a size whose one repetition took
/// `per_rep` seconds at the size before (twice the bytes may take twice as long): at
/// most `reps`, at most what [`AUTO_SIZE_BUDGET`] allows, and at least 4 (a median of
/// fewer is one noisy call). `per_rep` 0 (the first size): `reps`.
pub fn quick_reps(reps: u64, per_rep: f64) -> u64 {
    if per_rep <= 0.0 || !per_rep.is_finite() {
        return reps;
    }
    let allowed = (AUTO_SIZE_BUDGET / (2.0 * per_rep)) as u64;
    reps.min(allowed.max(4))
}

/// The sizes of an automatic calibration ([`sizes`] up to [`AUTO_MAX_SIZE`]) whose
/// buffers, two a rank on `ranks` ranks, take at most `room` bytes.
pub fn auto_sizes(room: u64, ranks: u32) -> Vec<usize> {
    sizes(AUTO_MAX_SIZE)
        .into_iter()
        .filter(|&s| 2 * s as u64 * u64::from(ranks) <= room)
        .collect()
}

/// [`CalibrationInfo`]'s source of a calibration measured by the command and not kept.
pub const NOT_KEPT: &str = "measured by this command, not kept";

/// Keep an automatic calibration `c` of `backend`, whose file is `text`, at `cache`
/// ([`save`]), measured in `secs`: the calibration to use (its source the file, or
/// [`NOT_KEPT`]) and the note a command prints on stderr; `unreadable` is why the one
/// kept before could not be used ([`Lookup::Measure`]).
pub fn keep_measured(
    backend: &str,
    cache: Option<&Path>,
    text: &str,
    c: Calibration,
    secs: f64,
    unreadable: Option<&str>,
) -> (CalibrationInfo, String) {
    let kept = match cache {
        Some(path) => save(path, text)
            .map(|()| path)
            .map_err(|e| format!("cannot write {}: {e}", path.display())),
        None => Err("no cache directory: neither XDG_CACHE_HOME nor HOME is set".into()),
    };
    let (source, kept) = match kept {
        Ok(p) => (
            p.display().to_string(),
            format!("kept in {} for the next runs", p.display()),
        ),
        Err(why) => (NOT_KEPT.into(), format!("not kept ({why})")),
    };
    let why = match unreadable {
        Some(e) => format!("the one kept could not be used ({e})"),
        None => "none on this machine".into(),
    };
    let note = format!(
        "hypercomm: no calibration of the {backend} backend ({why}): measured one in \
         {secs:.1} s (β = {:.3} µs, τ = {:.3e} s/B), {kept}; `calibrate` measures a longer \
         one, {CALIBRATION_ENV}={CALIBRATION_OFF} keeps the defaults\n",
        c.beta * 1e6,
        c.tau
    );
    (CalibrationInfo::new(c, Some(source)), note)
}

/// The note of a command that found no calibration of `backend` and could not measure
/// one (`why`): it runs with the runtime's defaults.
pub fn defaults_note(backend: &str, why: &str) -> String {
    format!(
        "hypercomm: no calibration of the {backend} backend on this machine, and none could \
         be measured ({why}): the runtime's defaults (`calibrate` measures one)\n"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A step of q ranks a CPU prices q pair-alone messages and q switches: the switch
    /// is what the step took beyond them, never negative, and none without sharing; the
    /// pair-alone time is the least small message's (one slow point left out); the
    /// every-rank exchanges run on any number of thread ranks, rank 0 alone reporting.
    #[test]
    fn the_switch_is_a_shared_step_beyond_its_messages() {
        assert!((switch_of(16e-6, 4.0, 1e-6) - 3e-6).abs() < 1e-15);
        assert_eq!(switch_of(3e-6, 4.0, 1e-6), 0.0);
        assert_eq!(switch_of(16e-6, 1.0, 1e-6), 0.0);
        let point = |bytes, time| PingPong {
            bytes,
            time,
            fresh: 0.0,
        };
        let points = [
            point(1, 3e-6),
            point(2, 0.8e-6),
            point(64, 0.9e-6),
            point(128, 0.1e-6),
        ];
        assert_eq!(small_message_time(&points), 0.8e-6);
        assert_eq!(small_message_time(&[point(1024, 2e-6)]), 2e-6);
        assert_eq!(small_message_time(&[]), 0.0);
        let c = Calibration {
            switch: 2e-6,
            ..Calibration::default()
        };
        let text = switch_text(&c, 12e-6, 4.0);
        assert!(text.ends_with("switch = 2e-6\n"), "{text}");
        assert_eq!(
            Calibration::parse(&format!("beta = 1e-6\ntau = 1e-9\n{text}"))
                .unwrap()
                .switch,
            2e-6
        );
        assert!(switch_text(&Calibration::default(), 12e-6, 4.0).is_empty());
        // From the measurement: set, and its lines; none without sharing.
        let mut c = Calibration::default();
        let text = set_switch(&mut c, Some((16e-6, 4.0)), &points);
        assert!((c.switch - 3.2e-6).abs() < 1e-15, "{}", c.switch);
        assert_eq!(
            Calibration::parse(&format!("beta = 1e-6\ntau = 1e-9\n{text}"))
                .unwrap()
                .switch,
            c.switch
        );
        let mut c = Calibration::default();
        assert!(set_switch(&mut c, None, &points).is_empty());
        assert_eq!(c.switch, 0.0);
        for k in [1u32, 2, 3, 4, 5] {
            let cfg = hypercomm_rt::threads::Config::new(k).calibration(Calibration::default());
            let got =
                hypercomm_rt::threads::run_with(&cfg, |comm| switch_points(comm, Some(1))).unwrap();
            let q = f64::from(k);
            assert!(
                got[0].is_some_and(|(t, per)| t > 0.0 && per == q) || k == 1,
                "{k}: {got:?}"
            );
            assert!(got[1..].iter().all(Option::is_none), "{k}: {got:?}");
            let none =
                hypercomm_rt::threads::run_with(&cfg, |comm| switch_points(comm, None)).unwrap();
            assert!(none.iter().all(Option::is_none));
        }
    }

    /// [`calibrate_between`] measures ranks `a` and `b` alone, in either pattern and
    /// with `a` after `b`: only `a` reports, a point per size; a pair of one rank
    /// measures nothing and returns (no rank waits for a partner it does not have).
    #[test]
    fn a_pair_of_any_two_ranks_measures_alone() {
        use hypercomm_rt::threads;
        let sizes = [1usize, 1024];
        let reps = |_: usize| 3u64;
        for pattern in [Pattern::PingPong, Pattern::Exchange] {
            for (a, b) in [(0, 2), (2, 0), (1, 1)] {
                let cfg = threads::Config::new(3)
                    .calibration(Calibration::default())
                    .timeout(std::time::Duration::from_secs(20));
                let got = threads::run_with(&cfg, |comm| {
                    calibrate_between(comm, a, b, &sizes, &reps, pattern, false, true)
                })
                .unwrap();
                for (r, points) in got.iter().enumerate() {
                    if r as Rank == a && a != b {
                        let bytes: Vec<usize> = points.iter().map(|p| p.bytes).collect();
                        assert_eq!(bytes, sizes, "{pattern:?} ({a}, {b}) rank {r}");
                        assert!(points.iter().all(|p| p.time > 0.0 && p.fresh == 0.0));
                    } else {
                        assert!(points.is_empty(), "{pattern:?} ({a}, {b}) rank {r}");
                    }
                }
            }
        }
    }

    /// The `shared-copy` shares invert the bands: a lone message that took what the
    /// bands give at 0.6 of its length has share 0.6; one per size, by size; held to
    /// ¼..1; sizes under `from` ignored.
    #[test]
    fn the_shared_copy_share_is_where_the_bands_price_the_lone_time() {
        let c = Calibration::line(1e-6, 1e-10);
        let lone = |bytes: usize, share: f64| PingPong {
            bytes,
            time: 1e-6 + 1e-10 * share * bytes as f64,
            fresh: 0.0,
        };
        let close = |got: &Shares, want: &[(u64, f64)]| {
            let got = got.as_slice();
            got.len() == want.len()
                && got
                    .iter()
                    .zip(want)
                    .all(|(g, w)| g.0 == w.0 && (g.1 - w.1).abs() < 1e-6)
        };
        let got = shared_copy_shares(&c, &[lone(1 << 20, 0.6)], 1 << 18);
        assert!(close(&got, &[(1 << 20, 0.6)]), "{got:?}");
        let three = [lone(1 << 20, 0.62), lone(1 << 18, 0.46), lone(1 << 19, 0.7)];
        let got = shared_copy_shares(&c, &three, 1 << 18);
        let want = [(1 << 18, 0.46), (1 << 19, 0.7), (1 << 20, 0.62)];
        assert!(close(&got, &want), "by size: {got:?}");
        let low = shared_copy_shares(&c, &[lone(1 << 20, 0.1)], 0);
        assert_eq!(low.as_slice(), [(1 << 20, MIN_SHARED_COPY)]);
        let high = shared_copy_shares(&c, &[lone(1 << 20, 1.4)], 0);
        assert_eq!(high.as_slice(), [(1 << 20, 1.0)]);
        assert!(shared_copy_shares(&c, &[lone(1 << 17, 0.6)], 1 << 18).is_empty());
        let mut with = c;
        with.shared_copy = Shares::new(&[(1 << 18, 0.46), (1 << 20, 0.6)]).unwrap();
        let text = shared_copy_text(&with, &[lone(1 << 20, 0.6)]);
        assert!(
            text.ends_with("shared-copy = 262144 0.46\nshared-copy = 1048576 0.6\n"),
            "{text}"
        );
        assert_eq!(
            Calibration::parse(&format!("beta = 1e-6\ntau = 1e-9\n{text}"))
                .unwrap()
                .shared_copy,
            with.shared_copy
        );
        assert!(shared_copy_text(&c, &[]).is_empty());
    }

    /// One pair measuring alone needs no other rank until the closing barrier: the
    /// others join only once the pair has started its last size, so every size before it
    /// was measured without them (they waited in two barriers a size before, beside the
    /// pair, which then stalled at its first size). `reps` is the only hook: it is asked
    /// as a size starts, so the last size itself is not shown to need no one.
    #[test]
    fn a_lone_pair_reaches_its_last_size_before_the_others_join() {
        use hypercomm_rt::threads;
        use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
        let sizes = [1usize, 1024, 4096];
        let asked = AtomicUsize::new(0);
        // Each rank of the pair asks once a size.
        let reps = |_: usize| {
            asked.fetch_add(1, SeqCst);
            3u64
        };
        let all = 2 * sizes.len();
        let cfg = threads::Config::new(4)
            .calibration(Calibration::default())
            .timeout(std::time::Duration::from_secs(20));
        let got = threads::run_with(&cfg, |comm| {
            let mut waited_for_all = true;
            if comm.rank() >= 2 {
                let start = std::time::Instant::now();
                while asked.load(SeqCst) < all {
                    if start.elapsed() > std::time::Duration::from_secs(5) {
                        waited_for_all = false;
                        break;
                    }
                    std::thread::yield_now();
                }
            }
            let points = calibrate_pairs(comm, &sizes, &reps, Pattern::Exchange, true, 1, true)?;
            Ok::<_, hypercomm_rt::Error>((waited_for_all, points))
        })
        .unwrap();
        for (r, (waited_for_all, points)) in got.iter().enumerate() {
            assert!(
                waited_for_all,
                "rank {r} was needed before the pair had measured"
            );
            assert_eq!(
                points.len(),
                if r == 0 { sizes.len() } else { 0 },
                "rank {r}"
            );
        }
        assert!(got[0].1.iter().all(|p| p.time > 0.0 && p.fresh > 0.0));
    }

    /// Not `quick` (the `calibrate` commands), the ranks left out join every size's
    /// barrier, so no wait lasts the whole measurement: 3 ranks with a timeout of 1 s,
    /// 4 sizes of 0.6 s each, measure where the quick form's waiting rank times out.
    #[test]
    fn a_long_calibration_keeps_every_wait_within_the_timeout() {
        use hypercomm_rt::threads;
        let sizes = [1usize, 2, 4, 8];
        let reps = |_: usize| {
            std::thread::sleep(std::time::Duration::from_millis(600));
            2u64
        };
        let cfg = threads::Config::new(3)
            .calibration(Calibration::default())
            .timeout(std::time::Duration::from_secs(1));
        for between in [false, true] {
            let measure = |quick: bool| {
                threads::run_with(&cfg, |comm| {
                    if between {
                        calibrate_between(
                            comm,
                            0,
                            1,
                            &sizes,
                            &reps,
                            Pattern::Exchange,
                            false,
                            quick,
                        )
                    } else {
                        calibrate_pairs(comm, &sizes, &reps, Pattern::Exchange, false, 1, quick)
                    }
                })
            };
            let got = measure(false).unwrap();
            assert_eq!(got[0].len(), sizes.len(), "between {between}");
            assert!(
                measure(true).is_err(),
                "between {between}: the quick form's wait"
            );
        }
    }

    /// A calibration file's text with start-up time `beta`.
    fn file_with(beta: f64) -> String {
        format!("beta = {beta:e}\ntau = 2e-11\n")
    }

    /// The order of [`CalibrationSource`]: `HYPERCOMM_CALIBRATION` (or `off`), then the
    /// backend's own file in the configuration directory (the threads backend's and
    /// MPI's apart), then the automatic one in the cache, else measure (into the cache).
    #[test]
    fn the_calibration_comes_from_the_env_the_backends_file_the_cache_or_a_measurement() {
        let dir = std::env::temp_dir().join(format!("hc-cal-source-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let config = dir.join("config");
        std::fs::create_dir_all(config.join("hypercomm")).unwrap();
        let cache = dir.join("cache").join("calibration-threads-2cpus-h.conf");
        let beta = |l: Lookup| match l {
            Lookup::Found(c) => Some(c.beta),
            Lookup::Measure { .. } => None,
        };
        let source = |named: Option<&str>, backend: &str| {
            CalibrationSource::new(
                named.map(Into::into),
                Some(&config),
                backend,
                Some(cache.clone()),
            )
        };
        // Nothing anywhere: measure, into the cache.
        assert_eq!(
            source(None, "threads").lookup().unwrap(),
            Lookup::Measure {
                cache: Some(cache.clone()),
                unreadable: None
            }
        );
        // A kept file that does not parse (another version's) is measured again.
        std::fs::create_dir_all(cache.parent().unwrap()).unwrap();
        std::fs::write(&cache, "beta = 1e-7\nwhat = 3\n").unwrap();
        match source(None, "threads").lookup().unwrap() {
            Lookup::Measure {
                unreadable: Some(e),
                ..
            } => assert!(e.contains("what"), "{e}"),
            other => panic!("{other:?}"),
        }
        // What was measured is read back.
        std::fs::write(&cache, file_with(3e-7)).unwrap();
        assert_eq!(beta(source(None, "threads").lookup().unwrap()), Some(3e-7));
        // The backend's own file comes first; the threads one is not MPI's.
        std::fs::write(
            config.join("hypercomm").join("calibration.conf"),
            file_with(4e-7),
        )
        .unwrap();
        assert_eq!(beta(source(None, "threads").lookup().unwrap()), Some(4e-7));
        assert_eq!(beta(source(None, "mpi").lookup().unwrap()), Some(3e-7));
        std::fs::write(
            config.join("hypercomm").join("calibration-mpi.conf"),
            file_with(5e-7),
        )
        .unwrap();
        assert_eq!(beta(source(None, "mpi").lookup().unwrap()), Some(5e-7));
        // The environment's file before all, which must exist; `off` the defaults.
        let named = dir.join("named.conf");
        std::fs::write(&named, file_with(6e-7)).unwrap();
        let named_str = named.to_str().unwrap();
        assert_eq!(
            beta(source(Some(named_str), "mpi").lookup().unwrap()),
            Some(6e-7)
        );
        assert!(source(Some("/nonexistent/c.conf"), "threads")
            .lookup()
            .is_err());
        let off = source(Some("off"), "threads").lookup().unwrap();
        assert_eq!(
            off,
            Lookup::Found(CalibrationInfo::new(Calibration::default(), None))
        );
        // `calibrate` writes the backend's own file.
        assert_eq!(
            source(None, "mpi").path,
            Some(config.join("hypercomm").join("calibration-mpi.conf"))
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// The automatic calibration's repetitions on a slow link: what the size budget
    /// allows at twice the last size's time, never fewer than 4 nor more than asked; on
    /// this project's VMs (0.4 µs at 1 B, 17 ms at 64 MiB) no cut below `auto_reps`' own
    /// count but at the largest sizes, where it is 4 already.
    #[test]
    fn a_slow_link_cuts_the_automatic_calibrations_repetitions() {
        assert_eq!(quick_reps(1000, 0.0), 1000);
        assert_eq!(quick_reps(1000, 3e-3), 4);
        assert_eq!(quick_reps(1000, 1e-4), 100);
        assert_eq!(quick_reps(50, 1e-4), 50);
        assert_eq!(quick_reps(1000, f64::NAN), 1000);
        for s in sizes(AUTO_MAX_SIZE) {
            // This VM: 0.45 µs up to 256 B, then about 0.26 ns a byte.
            let fast = 4.5e-7 + 2.6e-10 * (s / 2) as f64;
            let r = auto_reps(s);
            assert!(quick_reps(r, fast) == r || r == 4 || s >= 8 << 20, "{s}");
        }
    }

    /// An automatic calibration moves less than `calibrate`'s at every size and reaches
    /// past the caches.
    #[test]
    fn the_automatic_calibration_is_short_and_reaches_past_the_caches() {
        for s in sizes(AUTO_MAX_SIZE) {
            assert!(auto_reps(s) <= default_reps(s) && auto_reps(s) >= 4, "{s}");
        }
        assert!(AUTO_MAX_SIZE as u64 > DEFAULT_MAX_SIZE);
        // Sizes up to what fits in the room: 2 ranks × 2 buffers of 16 MiB in 64 MiB.
        assert_eq!(auto_sizes(64 << 20, 2).last(), Some(&(16 << 20)));
        assert_eq!(auto_sizes(u64::MAX, 2).last(), Some(&AUTO_MAX_SIZE));
        assert!(auto_sizes(3, 2).is_empty());
    }

    /// Points on the line `beta + tau·n` at the sizes up to `max`, fresh unmeasured.
    fn on_line(max: usize, beta: f64, tau: f64) -> Vec<PingPong> {
        sizes(max)
            .into_iter()
            .map(|b| PingPong {
                bytes: b,
                time: beta + tau * b as f64,
                fresh: 0.0,
            })
            .collect()
    }

    #[test]
    fn fit_recovers_a_line() {
        let pts = on_line(1 << 20, 2e-6, 5e-10);
        let c = fit(&pts).unwrap();
        // One line fits every point: no bands, and the file is the one line.
        assert!(c.bands.is_empty(), "{c:?}");
        assert!(!file_text(c, "threads", 2, Pattern::Exchange, &pts).contains("band"));
        assert!((c.beta - 2e-6).abs() < 1e-12, "{c:?}");
        assert!((c.tau - 5e-10).abs() < 1e-16, "{c:?}");
    }

    #[test]
    fn file_text_parses_back() {
        let c = Calibration::line(1.5e-6, 2.5e-10);
        let pts = [PingPong {
            bytes: 4,
            time: 1e-6,
            fresh: 0.0,
        }];
        assert_eq!(
            Calibration::parse(&file_text(c, "threads", 2, Pattern::Exchange, &pts)).unwrap(),
            c
        );
    }

    #[test]
    fn sizes_are_powers_of_two() {
        assert_eq!(sizes(100), vec![1, 2, 4, 8, 16, 32, 64]);
        assert_eq!(sizes(0), vec![1]);
        assert_eq!(sizes(DEFAULT_MAX_SIZE as usize).len(), 23);
    }

    /// `--max-size` below 2 gives one size: refused, naming the valid choice.
    #[test]
    fn fewer_than_two_sizes_are_refused() {
        for max in [0, 1] {
            let e = checked_sizes(max).unwrap_err().to_string();
            assert!(e.contains("--max-size") && e.contains("2 or more"), "{e}");
        }
        assert_eq!(checked_sizes(3).unwrap(), vec![1, 2]);
    }

    fn points(times: &[(usize, f64)]) -> Vec<PingPong> {
        times
            .iter()
            .map(|&(bytes, time)| PingPong {
                bytes,
                time,
                fresh: 0.0,
            })
            .collect()
    }

    /// One size, times that fall with the size, a negative intercept: none is saved
    /// (each would be β or τ clamped to 0); a line is.
    #[test]
    fn a_fit_without_a_positive_tau_and_beta_is_refused() {
        let one = points(&[(1, 2e-6)]);
        assert_eq!(fit(&one), Err(FitError::TooFewSizes { sizes: 1 }));
        let twice = points(&[(4, 2e-6), (4, 2.1e-6)]);
        assert_eq!(fit(&twice), Err(FitError::TooFewSizes { sizes: 1 }));
        let falling = points(&[(1, 3e-6), (4, 2.9e-6), (16, 2.8e-6)]);
        let e = fit(&falling).unwrap_err();
        assert!(
            matches!(e, FitError::Tau { tau, max: 16 } if tau < 0.0),
            "{e:?}"
        );
        assert!(e.to_string().contains("--max-size"), "{e}");
        // Through two points exactly: β = 1e-3 − 2^20 · 4e-3 / (3 · 2^20) < 0.
        let below = points(&[(1 << 20, 1e-3), (1 << 22, 5e-3)]);
        let e = fit(&below).unwrap_err();
        assert!(matches!(e, FitError::Beta { beta } if beta < 0.0), "{e:?}");
        let line = points(&[(1, 2e-6), (1 << 10, 2.5e-6), (1 << 20, 5e-4)]);
        let c = fit(&line).unwrap();
        assert!(c.beta > 0.0 && c.tau > 0.0, "{c:?}");
    }

    /// Synthetic one-way times with what one line cannot fit: a cache step (faster per
    /// byte up to 32 KiB), then a protocol switch at 64 KiB (eager to rendezvous: a
    /// handshake more, a copy less). The one line misfits them by far more than 30%
    /// from 1 KiB; the fit's bands reproduce every point from 1 KiB within 30% (within
    /// the band tolerance, in fact), and the file written and read back prices alike.
    #[test]
    fn the_bands_fit_their_own_points_across_a_protocol_switch() {
        let t = |n: f64| {
            if n < 32768.0 {
                2.5e-7 + n * 5e-11
            } else if n < 65536.0 {
                3.0e-7 + n * 1.2e-10
            } else {
                6.0e-6 + n * 8e-11
            }
        };
        let pts: Vec<PingPong> = sizes(4 << 20)
            .into_iter()
            .chain([2048, 8192, 32768, 131072, 524288])
            .map(|b| PingPong {
                bytes: b,
                time: t(b as f64),
                fresh: 0.0,
            })
            .collect();
        let c = fit(&pts).unwrap();
        let from_1k: Vec<PingPong> = pts.iter().copied().filter(|p| p.bytes >= 1024).collect();
        assert!(misfit(&from_1k, (c.beta, c.tau)) > 0.3, "{c:?}");
        assert!(!c.bands.is_empty());
        let text = file_text(c, "threads", 2, Pattern::Exchange, &pts);
        let back = Calibration::parse(&text).unwrap();
        assert_eq!(back, c, "{text}");
        for p in &from_1k {
            let (beta, tau) = back.at(p.bytes as u64);
            let err = ((beta + tau * p.bytes as f64) - p.time).abs() / p.time;
            assert!(
                err <= BAND_TOLERANCE + 1e-9,
                "{} B: {err} ({text})",
                p.bytes
            );
        }
    }

    /// The times of fresh data (written by the sender since the receiver last read it)
    /// get bands of their own: synthetic times where the same data follows one line and
    /// fresh data costs 3× per byte from 16 KiB. The fit's one line prices the same
    /// data, its `fresh` bands every fresh point within the band tolerance, and the
    /// file read back is the same calibration. Without fresh times there are none.
    #[test]
    fn fresh_times_get_bands_of_their_own() {
        let same = |n: f64| 2.5e-7 + 4e-11 * n;
        let fresh = |n: f64| {
            if n < 16384.0 {
                same(n)
            } else {
                3e-7 + 1.2e-10 * n
            }
        };
        let pts: Vec<PingPong> = sizes(4 << 20)
            .into_iter()
            .map(|b| PingPong {
                bytes: b,
                time: same(b as f64),
                fresh: fresh(b as f64),
            })
            .collect();
        let c = fit(&pts).unwrap();
        assert!(c.bands.is_empty() && !c.fresh.is_empty(), "{c:?}");
        for p in &pts {
            let (beta, tau) = c.fresh_at(p.bytes as u64);
            let err = ((beta + tau * p.bytes as f64) - p.fresh).abs() / p.fresh;
            assert!(err <= BAND_TOLERANCE + 1e-9, "{} B: {err} ({c:?})", p.bytes);
            assert_eq!(c.at(p.bytes as u64), (c.beta, c.tau));
        }
        let text = file_text(c, "threads", 2, Pattern::Exchange, &pts);
        assert_eq!(Calibration::parse(&text).unwrap(), c, "{text}");
        let unmeasured: Vec<PingPong> = pts.iter().map(|p| PingPong { fresh: 0.0, ..*p }).collect();
        assert!(fit(&unmeasured).unwrap().fresh.is_empty());
        // One line fits the fresh times too: one fresh band from the smallest size.
        let alike: Vec<PingPong> = pts
            .iter()
            .map(|p| PingPong {
                fresh: 2.0 * p.time,
                ..*p
            })
            .collect();
        let one = fit(&alike).unwrap().fresh;
        assert_eq!(one.as_slice().len(), 1);
        assert_eq!(one.as_slice()[0].from, 1);
    }

    /// The same-CPU pairs' points give bands of their own: an exchange on one CPU
    /// copies both messages, so one message is half its time (a ping-pong's one-way
    /// time is one message already); their fit prices every point within the band
    /// tolerance, the file's `same-cpu` lines read back to the same bands, and nothing
    /// else of the calibration changes. Unmeasured (no pairs of fibers): no lines.
    #[test]
    fn same_cpu_pairs_get_bands_of_their_own_per_message() {
        let pts = on_line(4 << 20, 2.5e-7, 4e-11);
        // Measured exchanges of one CPU: 0.4 µs to 8 KiB, then 60 ps/B.
        let exchange = |n: f64| if n <= 8192.0 { 4e-7 } else { 6e-11 * n };
        let measured: Vec<PingPong> = pts
            .iter()
            .map(|p| PingPong {
                time: exchange(p.bytes as f64),
                ..*p
            })
            .collect();
        let one = same_cpu_points(&measured, Pattern::Exchange);
        for (m, o) in measured.iter().zip(&one) {
            assert_eq!((o.bytes, o.time), (m.bytes, m.time / 2.0));
        }
        assert_eq!(same_cpu_points(&measured, Pattern::PingPong), measured);
        let mut c = fit(&pts).unwrap();
        let alone = c;
        c.same_cpu = same_cpu_bands(&one);
        assert!(!c.same_cpu.is_empty());
        for p in &one {
            let (beta, tau) = c.same_cpu_at(p.bytes as u64).unwrap();
            let err = ((beta + tau * p.bytes as f64) - p.time).abs() / p.time;
            assert!(err <= BAND_TOLERANCE + 1e-9, "{} B: {err} ({c:?})", p.bytes);
        }
        let mut text = file_text(c, "threads", 2, Pattern::Exchange, &pts);
        text.push_str(&same_cpu_text(&c, &one));
        let back = Calibration::parse(&text).unwrap();
        assert_eq!(back, c, "{text}");
        assert_eq!(
            Calibration {
                same_cpu: alone.same_cpu,
                ..back
            },
            alone
        );
        assert!(same_cpu_bands(&[]).is_empty());
        assert_eq!(same_cpu_text(&alone, &[]), "");
        // The default repetitions: a quarter, at least 20.
        assert_eq!(same_cpu_reps(1), 1250);
        assert_eq!(same_cpu_reps(4 << 20), 20);
    }

    /// A file written before bands (the one line) parses as one line: no bands, and
    /// every size priced at its β and τ. Bands out of order, or of a negative τ, are
    /// refused with what is wrong.
    #[test]
    fn old_calibration_files_parse_as_one_band() {
        let old = "# hypercomm calibration of the threads backend: 2 ranks, exchange at 12 sizes\n\
                   # one-way time t(n) = beta + tau * n (seconds, n in bytes), least squares on the relative error\n\
                   #            1 B  2.6010e-7 s\n\
                   beta = 2.75e-7\ntau = 8.79e-11\n";
        let c = Calibration::parse(old).unwrap();
        assert_eq!(c, Calibration::line(2.75e-7, 8.79e-11));
        assert!(c.bands.is_empty() && c.same_cpu.is_empty());
        assert_eq!(c.same_cpu_at(1 << 20), None);
        assert_eq!(c.at(1 << 20), (2.75e-7, 8.79e-11));
        let json = Calibration::parse(r#"{"beta": 2.75e-7, "tau": 8.79e-11}"#).unwrap();
        assert_eq!(json, c);
        for (bad, says) in [
            (
                "beta = 1e-6\ntau = 1e-9\nband = 100 1e-6 1e-9\nband = 50 1e-6 1e-9",
                "increase",
            ),
            ("beta = 1e-6\ntau = 1e-9\nband = 100 1e-6 -1e-9", "τ ≥ 0"),
            ("beta = 1e-6\ntau = 1e-9\nband = 100 1e-6", "FROM BETA TAU"),
            (
                "beta = 1e-6\ntau = 1e-9\nfresh = 100 1e-6 -1e-9",
                "fresh bands",
            ),
            (
                "beta = 1e-6\ntau = 1e-9\nfresh = 100",
                "fresh = FROM BETA TAU",
            ),
            (
                "beta = 1e-6\ntau = 1e-9\nsame-cpu = 100 1e-6 1e-9\nsame-cpu = 10 1e-6 1e-9",
                "same-cpu bands: band from 10 B follows the band from 100 B",
            ),
            (
                "beta = 1e-6\ntau = 1e-9\nsame-cpu = 1 -1e-6 1e-9",
                "same-cpu bands",
            ),
            (
                "beta = 1e-6\ntau = 1e-9\nsame-cpu = 1 x 1e-9",
                "`x` is not a number",
            ),
            (
                "beta = 1e-6\ntau = 1e-9\nsame-cpu = 1 1e-6",
                "same-cpu = FROM BETA TAU",
            ),
            (
                "beta = 1e-6\ntau = 1e-9\nsame_cpu = 1 1e-6 1e-9",
                "same-cpu",
            ),
        ] {
            let e = Calibration::parse(bad).unwrap_err().to_string();
            assert!(e.contains(says), "{bad}: {e}");
        }
    }
}
