//! Choosing and building schedules: `Algo::Named` looks the algorithm up in the
//! registry, `Algo::Auto` times every fitting algorithm with the prediction
//! ([`crate::predict::predict_schedule`], the one `bench` prints) under a
//! [`Calibration`] and the backend's [`Execution`] and takes the fastest. Choices and checked plans are cached per
//! communicator, so a repeated call costs a hash lookup; the choice itself (and the
//! verifier's verdict on rank order) is computed once per process and shared by its
//! ranks (`shared_answer`).
//!
//! **Invariant**: the choice depends only on the collective, the rank count, the length,
//! the element size, the operator's commutativity, whether the call is in place, the
//! calibration and the backend's execution, never on the
//! rank, so every rank picks the same algorithm without talking to the others.

use std::sync::{Arc, Mutex, OnceLock};

use hypercomm::algorithms::{self, Algorithm, Packets, Params};
use hypercomm::collective::{Collective, OpKind};
use hypercomm::cost::model::Model;
use hypercomm::schedule::{Rank, Schedule};
use hypercomm::topology::Topology;
use hypercomm::verify::{self, Problem, Strictness};
use rustc_hash::FxHashMap;

use crate::error::{Error, Result};
use crate::exec::Plan;
use crate::predict::{self, Execution, Form};

/// Environment variable naming the calibration file, or [`CALIBRATION_OFF`].
pub const CALIBRATION_ENV: &str = "HYPERCOMM_CALIBRATION";

/// [`CALIBRATION_ENV`]'s value for the defaults ([`Calibration::default`]): no file read,
/// and none measured (the CLI measures one when it finds no file).
pub const CALIBRATION_OFF: &str = "off";

/// The machine's start-up time β (seconds) and time per byte τ (seconds), which
/// `Algo::Auto` gives the cost model (τ times the element size per element), and the
/// per-size corrections of that line ([`Band`]s) that the prediction prices each
/// message with ([`crate::predict`]).
///
/// The seeds price a message of m elements at β + mτ whatever m (Saad & Schultz 1985,
/// eq. (1.1); Dimakopoulos & Dimopoulos §1; seed 004's τ_X + m/b_X). A runtime is not one
/// line: caches, an MPI library's eager and rendezvous protocols, shared-memory and
/// network peers each give another (β, τ) over a range of sizes (`hypercomm calibrate
/// --ranks 2` on threads misfits its own points by up to 3.4× at 16–64 KiB with one
/// line). So a calibration may carry bands: from `from` bytes on, up to the next band's
/// `from`, a message costs `beta + bytes·tau` of that band. This goes beyond the seeds'
/// model. `beta` and `tau` stay the one line over all sizes: they price sizes below the
/// first band, and they are the parameters schedules are built with (packet counts).
/// Without bands (every file written before them) the calibration is that one line,
/// as the seeds have it.
///
/// Nor does a message cost the same whether or not its data was written since its
/// receiver last read it. A collective called again on the same input (what `bench`,
/// OSU's benchmarks and nccl-tests do, and `auto`'s measurements) sends that input to
/// receivers that read it at the previous call: their caches still hold it, and the copy
/// is fast (a 256 KiB exchange between two threads: 6.6 µs). A message of data its sender
/// wrote in this call (an all-reduce's partial sums, what a broadcast's inner node
/// received and forwards) must first leave the sender's cache: 20 µs at 256 KiB, 2.5–3×
/// from 16 KiB to 256 KiB on threads and on Open MPI alike
/// (`docs/perf-log/2026-11-27-fresh-and-reread.md`). `beta`, `tau` and the bands price
/// the first kind; `fresh`, when present, the second ([`Calibration::fresh_at`], which
/// [`crate::predict`] uses for a message whose data its sender wrote earlier in the
/// call).
///
/// Nor, when ranks share a CPU as fibers of one thread, does a message between two of
/// them cost what one between two CPUs does: it is a copy within that CPU's caches, with
/// a switch of stacks for a hand-off (a 1 KiB message 0.18 µs against 0.96 µs between
/// two cores, `docs/perf-log/2026-11-27-fibers-prediction.md`). `same-cpu`, when present,
/// prices it ([`Calibration::same_cpu_at`]), measured by `calibrate` on a pair of fibers
/// of one CPU, per message (an exchange there copies both messages, one after the other).
///
/// Nor, in an MPI job across hosts, does a message between two hosts cost what one
/// within a host does: the library copies the one through shared memory and sends the
/// other over the network (the issue's "shared-memory versus network peers").
/// `network`, when present, prices it ([`Calibration::network_at`]), measured by
/// `hypercomm-mpi` on rank 0 and the first rank of another host when the job spans
/// hosts; which ranks share a host is the backend's to say
/// ([`crate::predict::Execution::ranks_per_host`]).
///
/// Nor, where the system time-slices more ranks than a machine has CPUs (`mpirun
/// --oversubscribe`), does a step cost only its messages: each shared CPU switches to
/// every rank it runs in the step, and that rank polls for its messages in its turn
/// (2 µs a rank and step on 8 Open MPI ranks sharing 2 cores, where a message of 1 KiB
/// between a pair alone costs 1.4 µs). `switch`, when present, prices it: measured by
/// `hypercomm-mpi` as every rank's exchanges of 1 B in alternating pairs, against the
/// pair alone; which
/// ranks share CPUs is the backend's to say ([`crate::predict::Execution::cpus`]).
///
/// The file format is one `key = value` per line (`#` starts a comment), keys `beta`,
/// `tau`, any number of `band = FROM BETA TAU` (bytes, seconds, seconds per byte;
/// `from` strictly increasing, at most [`MAX_BANDS`]) and as many `fresh = FROM BETA
/// TAU`, the bands of fresh data (none: priced as the others), and as many `same-cpu =
/// FROM BETA TAU`, the bands of a message between two fibers of one CPU (none: priced as
/// the others), and as many `network = FROM BETA TAU`, the bands of a message between
/// two hosts (none: priced as the others), and `switch = SECONDS`, what a CPU that
/// ranks share by time slices spends per rank it runs in a step (none: 0), and
/// `shared-copy = SHARE` for every size or as many `shared-copy = BYTES SHARE`, a share at
/// each measured size ([`Calibration::shared_copy`], [`MIN_SHARED_COPY`]–1; none: ½); a JSON
/// object `{"beta": 1e-6,
/// "tau": 1e-9}` is read too (without bands). A file's β must be ≥ 0 and its τ > 0: a
/// time per byte of 0 would price bandwidth as free, and `Auto` would choose as if
/// messages had no length (what a fit of one size gives). A band's τ must be ≥ 0 and its
/// time at its `from` positive.
///
/// ```
/// use hypercomm_rt::Calibration;
/// let c = Calibration::parse("beta = 2e-6  # seconds\ntau = 5e-10").unwrap();
/// assert_eq!(c, Calibration::line(2e-6, 5e-10));
/// assert_eq!(Calibration::parse(r#"{"beta": 1e-6, "tau": 1e-9}"#).unwrap(), Calibration::default());
/// assert!(Calibration::parse("beta = 2e-6\ntau = 0").is_err());
/// let banded = Calibration::parse("beta = 2e-6\ntau = 5e-10\nband = 65536 8e-6 4e-10").unwrap();
/// assert_eq!(banded.at(1024), (2e-6, 5e-10));
/// assert_eq!(banded.at(1 << 20), (8e-6, 4e-10));
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Calibration {
    /// Start-up time of a message, seconds (the one line over all sizes).
    pub beta: f64,
    /// Time per byte, seconds (the one line over all sizes).
    pub tau: f64,
    /// Per-size corrections; none for the one line.
    pub bands: Bands,
    /// The bands of a message whose data its sender wrote since the receiver last read
    /// it; none: priced as any other ([`Calibration::fresh_at`]).
    pub fresh: Bands,
    /// The bands of a message between two ranks that run as fibers of one CPU's thread;
    /// none: priced as any other ([`Calibration::same_cpu_at`]).
    pub same_cpu: Bands,
    /// The bands of a message between two ranks on different hosts (an MPI job across
    /// nodes: the network, where the other bands measured two ranks of one host, whose
    /// MPI library copies through shared memory); none: priced as any other
    /// ([`Calibration::network_at`]).
    pub network: Bands,
    /// Seconds a CPU shared by ranks time-sliced by the system (an MPI job with more
    /// ranks than CPUs) spends per rank it runs in a step, beyond that rank's messages:
    /// the switch to it and its turn at polling; 0 (none measured, and always on
    /// threads, whose fibers' hand-offs the `same-cpu` bands price). The prediction adds
    /// it per active rank of each shared CPU and step
    /// ([`crate::predict::cpu_shared_time`]).
    pub switch: f64,
    /// The share of a message's length at which the bands price each end of a message
    /// the threads backend's idle sender helps its receiver copy (messages from
    /// [`crate::threads::SHARED_COPY_FROM`] bytes: [`crate::predict::shared_copy_programs`]
    /// prices each end at this share of the message), by size
    /// ([`Calibration::shared_copy_share`]): ½ if the two cores split the copy perfectly
    /// at the exchange's price; measured as a lone message's time against the exchange
    /// bands, on the Intel VM 0.44–0.71 from 256 KiB to 1 MiB (often under ½: a lone
    /// copy's two halves contend less than an exchange's two messages) and 0.54–0.64 at
    /// 2 MiB (where the exchange's buffers have left the cache and the lone message's
    /// not yet), over six calibrations. Empty: not measured,
    /// priced as ½.
    pub shared_copy: Shares,
}

/// The least [`Calibration::shared_copy`] share a file may give: a lone message priced
/// at a quarter of its length under the exchange bands.
pub const MIN_SHARED_COPY: f64 = 0.25;

/// The most seconds a calibration's start-up (`beta`) or switch may be: far beyond any
/// machine's (a start-up of 1000 s), below what the reports and the cost model's sums
/// print and add without overflowing (a `beta = 1e300` gave 300-digit predictions).
pub const MAX_SECONDS: f64 = 1000.0;

/// A [`Calibration`]'s shared-copy shares: (bytes, share) by increasing size, at most
/// [`MAX_BANDS`] (a fixed array, so that a calibration stays `Copy`). One point at 0
/// bytes is the one share of every size.
#[derive(Clone, Copy, Default, PartialEq)]
pub struct Shares {
    len: usize,
    at: [(u64, f64); MAX_BANDS],
}

impl std::fmt::Debug for Shares {
    /// The points in use only.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.as_slice()).finish()
    }
}

impl Shares {
    /// The points `(bytes, share)`, checked: sizes strictly increasing, shares from
    /// [`MIN_SHARED_COPY`] to 1, at most [`MAX_BANDS`]; a point at 0 bytes (the one
    /// share of every size) only alone.
    pub fn new(points: &[(u64, f64)]) -> Result<Self> {
        let bad = |m: String| Err(Error::Calibration(m));
        if points.len() > 1 && points.iter().any(|p| p.0 == 0) {
            return bad(
                "`shared-copy = SHARE` (every size) with other shared-copy lines; valid: \
                 one `shared-copy = SHARE`, or `shared-copy = BYTES SHARE` lines of sizes \
                 ≥ 1"
                .into(),
            );
        }
        if points.len() > MAX_BANDS {
            return bad(format!(
                "{} shared-copy shares; at most {MAX_BANDS}",
                points.len()
            ));
        }
        let mut out = Shares::default();
        for (i, &(bytes, share)) in points.iter().enumerate() {
            if i > 0 && bytes <= points[i - 1].0 {
                return bad(format!(
                    "shared-copy at {bytes} B follows the one at {} B; sizes must increase",
                    points[i - 1].0
                ));
            }
            if !(MIN_SHARED_COPY..=1.0).contains(&share) {
                return bad(format!(
                    "shared-copy = {share}: the share of a message each end copies, as the \
                     bands price it, is from {MIN_SHARED_COPY} to 1 (no help)"
                ));
            }
            out.at[i] = (bytes, share);
        }
        out.len = points.len();
        Ok(out)
    }

    /// The points, by increasing size.
    pub fn as_slice(&self) -> &[(u64, f64)] {
        &self.at[..self.len]
    }

    /// Whether there is none (not measured).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The share at `bytes`: the first point's below it, the last's above the last,
    /// between two points linear in the logarithm of the size; `None` without points.
    pub fn at(&self, bytes: u64) -> Option<f64> {
        let all = self.as_slice();
        let (first, last) = (all.first()?, all[all.len() - 1]);
        if bytes <= first.0 {
            return Some(first.1);
        }
        if bytes >= last.0 {
            return Some(last.1);
        }
        let i = all.iter().position(|p| p.0 > bytes)?;
        // Between two points: both sizes ≥ 1 (`Shares::new` keeps a point at 0 alone).
        let ((a, sa), (b, sb)) = (all[i - 1], all[i]);
        let (la, lb, l) = ((a as f64).ln(), (b as f64).ln(), (bytes as f64).ln());
        Some(sa + (sb - sa) * (l - la) / (lb - la))
    }
}

/// Most [`Band`]s a [`Calibration`] holds.
pub const MAX_BANDS: usize = 16;

/// One size band of a [`Calibration`]: from `from` bytes on (up to the next band), a
/// message of n bytes costs `beta + n·tau` seconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
pub struct Band {
    /// The smallest size of the band, bytes.
    pub from: u64,
    /// Start-up time, seconds (may be negative: the intercept of the band's line).
    pub beta: f64,
    /// Time per byte, seconds.
    pub tau: f64,
}

impl Band {
    /// The band as a line of the calibration file, `{key} = FROM BETA TAU` (`key`:
    /// `band`, `fresh` or `same-cpu`), which [`Calibration::parse`] reads back exactly.
    pub fn line(&self, key: &str) -> String {
        format!("{key} = {} {:e} {:e}\n", self.from, self.beta, self.tau)
    }
}

/// The bands of a [`Calibration`], by increasing `from` (a fixed array, so that a
/// calibration stays `Copy`).
#[derive(Clone, Copy, Default, PartialEq)]
pub struct Bands {
    len: usize,
    at: [Band; MAX_BANDS],
}

impl std::fmt::Debug for Bands {
    /// The bands in use only.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.as_slice()).finish()
    }
}

impl Bands {
    /// The bands `bands`, checked: `from` strictly increasing, τ ≥ 0 and finite, the
    /// time at `from` finite and positive, at most [`MAX_BANDS`].
    pub fn new(bands: &[Band]) -> Result<Self> {
        let bad = |m: String| Err(Error::Calibration(m));
        if bands.len() > MAX_BANDS {
            return bad(format!("{} bands; at most {MAX_BANDS}", bands.len()));
        }
        let mut out = Bands::default();
        for (i, b) in bands.iter().enumerate() {
            if i > 0 && b.from <= bands[i - 1].from {
                return bad(format!(
                    "band from {} B follows the band from {} B; sizes must increase",
                    b.from,
                    bands[i - 1].from
                ));
            }
            let at_from = b.beta + b.from as f64 * b.tau;
            if !(b.tau.is_finite() && b.tau >= 0.0 && at_from.is_finite() && at_from > 0.0) {
                return bad(format!(
                    "band from {} B: beta = {}, tau = {} must give a finite τ ≥ 0 and a \
                     positive time at {} B",
                    b.from, b.beta, b.tau, b.from
                ));
            }
            out.at[i] = *b;
        }
        out.len = bands.len();
        Ok(out)
    }

    /// The bands, by increasing size.
    pub fn as_slice(&self) -> &[Band] {
        &self.at[..self.len]
    }

    /// Whether there is none (the calibration is one line).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl Default for Calibration {
    /// β = 1 µs, τ = 1 ns per byte, no bands.
    fn default() -> Self {
        Calibration::line(1e-6, 1e-9)
    }
}

impl Calibration {
    /// The one line `beta + n·tau` at every size (the seeds' model), no bands.
    pub const fn line(beta: f64, tau: f64) -> Self {
        const NONE: Bands = Bands {
            len: 0,
            at: [Band {
                from: 0,
                beta: 0.0,
                tau: 0.0,
            }; MAX_BANDS],
        };
        Calibration {
            beta,
            tau,
            bands: NONE,
            fresh: NONE,
            same_cpu: NONE,
            network: NONE,
            switch: 0.0,
            shared_copy: Shares {
                len: 0,
                at: [(0, 0.0); MAX_BANDS],
            },
        }
    }

    /// The share of a shared copy of `bytes` bytes at which the bands price each of its
    /// two ends ([`Calibration::shared_copy`]; ½ when not measured).
    ///
    /// ```
    /// use hypercomm_rt::Calibration;
    /// let c = Calibration::parse("beta = 2e-7\ntau = 4e-11\nshared-copy = 262144 0.5\nshared-copy = 1048576 0.6").unwrap();
    /// assert_eq!(c.shared_copy_share(1 << 16), 0.5);
    /// assert!((c.shared_copy_share(1 << 19) - 0.55).abs() < 1e-12);
    /// assert_eq!(c.shared_copy_share(1 << 22), 0.6);
    /// assert_eq!(Calibration::line(2e-7, 4e-11).shared_copy_share(1 << 20), 0.5);
    /// ```
    pub fn shared_copy_share(&self, bytes: u64) -> f64 {
        self.shared_copy.at(bytes).unwrap_or(0.5)
    }

    /// (β, τ) of a message of `bytes` bytes: its band's, or the one line's below the
    /// first band.
    pub fn at(&self, bytes: u64) -> (f64, f64) {
        match self.bands.as_slice().iter().rev().find(|b| b.from <= bytes) {
            Some(b) => (b.beta, b.tau),
            None => (self.beta, self.tau),
        }
    }

    /// (β, τ) of a message of `bytes` bytes whose data its sender wrote since the
    /// receiver last read it: its `fresh` band's, or [`Calibration::at`] without one.
    ///
    /// ```
    /// use hypercomm_rt::Calibration;
    /// let c = Calibration::parse("beta = 2e-7\ntau = 4e-11\nfresh = 1 2e-7 8e-11").unwrap();
    /// assert_eq!(c.at(65536), (2e-7, 4e-11));
    /// assert_eq!(c.fresh_at(65536), (2e-7, 8e-11));
    /// assert_eq!(Calibration::line(2e-7, 4e-11).fresh_at(65536), (2e-7, 4e-11));
    /// ```
    pub fn fresh_at(&self, bytes: u64) -> (f64, f64) {
        match self.fresh.as_slice().iter().rev().find(|b| b.from <= bytes) {
            Some(b) => (b.beta, b.tau),
            None => self.at(bytes),
        }
    }

    /// (β, τ) of a message of `bytes` bytes between two ranks that run as fibers of one
    /// CPU's thread: its `same-cpu` band's, or `None` without one (then it is priced as
    /// any other message).
    ///
    /// ```
    /// use hypercomm_rt::Calibration;
    /// let c = Calibration::parse("beta = 2e-7\ntau = 4e-11\nsame-cpu = 1 1e-7 1e-11").unwrap();
    /// assert_eq!(c.same_cpu_at(65536), Some((1e-7, 1e-11)));
    /// assert_eq!(Calibration::line(2e-7, 4e-11).same_cpu_at(65536), None);
    /// ```
    pub fn same_cpu_at(&self, bytes: u64) -> Option<(f64, f64)> {
        own_band(&self.same_cpu, bytes)
    }

    /// (β, τ) of a message of `bytes` bytes between two ranks on different hosts: its
    /// `network` band's, or `None` without one (then it is priced as any other
    /// message). `hypercomm-mpi` measures them on a job that spans hosts.
    ///
    /// ```
    /// use hypercomm_rt::Calibration;
    /// let c = Calibration::parse("beta = 2e-7\ntau = 4e-11\nnetwork = 1 2e-6 1e-10").unwrap();
    /// assert_eq!(c.network_at(65536), Some((2e-6, 1e-10)));
    /// assert_eq!(c.network_at(1), Some((2e-6, 1e-10)));
    /// assert_eq!(Calibration::line(2e-7, 4e-11).network_at(65536), None);
    /// ```
    pub fn network_at(&self, bytes: u64) -> Option<(f64, f64)> {
        own_band(&self.network, bytes)
    }

    /// The largest message (bytes, a power of 2 up to 2^40) up to which a message
    /// between two fibers of one CPU costs at most half as much again as one between two
    /// CPUs of the same data, at every power of 2 up to it: while a pair of fibers' data
    /// stays in their CPU's caches (here it costs 0.2–1× as much up to 256 KiB, then 2×
    /// at 512 KiB; the margin keeps a noisy small size from ending it). The `same-cpu` calibration's exchange copies two
    /// messages on one CPU, so its CPU touches 4 such messages' bytes (each read and
    /// written): beyond 4 × this, a CPU's data no longer stays in its caches. 0 without
    /// `same-cpu` bands.
    ///
    /// ```
    /// use hypercomm_rt::Calibration;
    /// let c = Calibration::parse(
    ///     "beta = 2e-7\ntau = 4e-11\nsame-cpu = 1 1e-7 1e-11\nsame-cpu = 524288 0 9e-11",
    /// )
    /// .unwrap();
    /// assert_eq!(c.same_cpu_warm_bytes(), 262144);
    /// assert_eq!(Calibration::line(2e-7, 4e-11).same_cpu_warm_bytes(), 0);
    /// ```
    pub fn same_cpu_warm_bytes(&self) -> u64 {
        let mut warm = 0;
        for bytes in (0..=40).map(|i| 1u64 << i) {
            let Some((beta, tau)) = self.same_cpu_at(bytes) else {
                return 0;
            };
            let (b, t) = self.at(bytes);
            if beta + tau * bytes as f64 > 1.5 * (b + t * bytes as f64) {
                break;
            }
            warm = bytes;
        }
        warm
    }

    /// The least time per byte (seconds) of a copy in a call whose ranks together hold
    /// `held` bytes (their `in`, `out` and scratch buffers, on one machine), from what
    /// the calibration's exchange took per byte while it held as much: its two ranks
    /// hold 4s bytes at size s (each a send and a receive buffer of s), so a call
    /// holding `held` bytes is read at s = `held`/4.
    ///
    /// 0 (no floor) up to the size p* at which the calibration moved a byte fastest
    /// (t(p)/p least over its powers of 2: the largest message that stays in the
    /// caches); beyond it, the slowest per-byte time measured from p* up to s, with s
    /// itself read between the two powers of 2 around it (geometrically). Beyond the
    /// power of 2 at or below twice the last band's start (its bands reach at least
    /// that far), s is taken there. With no bands (the seeds' one line) it is 0: the
    /// model is the papers' exactly. `held` is what one machine holds: every rank's bytes
    /// on the threads backend and MPI on one host; across hosts the prediction passes
    /// one host's share ([`crate::predict::Execution::ranks_per_host`]).
    ///
    /// Why (beyond the seeds, whose β + mτ holds at any size): once a call's data
    /// outgrow the last-level cache, every copy runs at memory speed, whatever its own
    /// size. 8 thread ranks' all-gather of 1 MiB holds 72 MiB and copied 3–4× slower per
    /// byte than its 1–3 MiB messages' bands
    /// (docs/perf-log/2026-11-28-working-set.md).
    ///
    /// ```
    /// use hypercomm_rt::Calibration;
    /// // β = 0.2 µs and 2.5e-11 s/B below 16 MiB (least per byte at 8 MiB, 32 MiB
    /// // held), 1e-10 s/B from 16 MiB (64 MiB held): a cache of 32 to 64 MiB.
    /// let c = Calibration::parse(
    ///     "beta = 2e-7\ntau = 2.5e-11\nband = 1 2e-7 2.5e-11\nband = 16777216 0 1e-10",
    /// )
    /// .unwrap();
    /// assert_eq!(c.copy_floor(32 << 20), 0.0); // 8 MiB exchanges: in the caches
    /// assert!((c.copy_floor(256 << 20) - 1e-10).abs() < 1e-15); // 64 MiB: memory
    /// let mid = c.copy_floor(40 << 20); // s = 10 MiB: between 8 and 16 MiB
    /// assert!(mid > 2.5e-11 && mid < 1e-10);
    /// assert_eq!(Calibration::line(2e-7, 2.5e-11).copy_floor(1 << 30), 0.0);
    /// ```
    pub fn copy_floor(&self, held: u64) -> f64 {
        let Some((fastest, top)) = self.fastest_size() else {
            return 0.0;
        };
        let per_byte = |p: u64| self.message_per_byte(p);
        let powers = || (0..=40).map(|i| 1u64 << i).take_while(|&p| p <= top);
        let s = (held / 4).min(top);
        if s <= fastest {
            return 0.0;
        }
        let below = 1u64 << (63 - s.leading_zeros());
        let slowest = powers()
            .filter(|&p| p >= fastest && p <= below)
            .map(per_byte)
            .fold(0.0, f64::max);
        let at_s = if below == s {
            per_byte(below)
        } else {
            let (lo, hi) = (per_byte(below), per_byte(below * 2));
            let x = (s as f64 / below as f64).log2();
            lo * (hi / lo).powf(x)
        };
        slowest.max(at_s)
    }

    /// Seconds per byte of a message of `bytes` (> 0) under the bands.
    fn message_per_byte(&self, bytes: u64) -> f64 {
        let (beta, tau) = self.at(bytes);
        (beta + tau * bytes as f64) / bytes as f64
    }

    /// p*, the power of 2 whose message takes the least time per byte under the bands,
    /// and the largest power of 2 the bands price (twice the last band's start): `None`
    /// without bands.
    pub(crate) fn fastest_size(&self) -> Option<(u64, u64)> {
        let last = self.bands.as_slice().last()?;
        let per_byte = |p: u64| self.message_per_byte(p);
        let twice = last.from.saturating_mul(2).max(1);
        let top = 1u64 << (63 - twice.leading_zeros());
        let fastest = (0..=40)
            .map(|i| 1u64 << i)
            .take_while(|&p| p <= top)
            .min_by(|&a, &b| per_byte(a).total_cmp(&per_byte(b)))?;
        Some((fastest, top))
    }

    /// The least time per byte of any message the bands price (at p*, a power of 2;
    /// the one line's τ without bands): how fast a copy moves bytes while its data stay
    /// in the caches, the price of a schedule's local copies there
    /// (`predict::Price::local`). A band's own slope is no such speed: fitted to
    /// messages' times over a few sizes, it reached 1.3e-9 s/B at 512 B–1 KiB (40× a
    /// memory copy) and 3e-12 at 1–16 KiB on the threads backend here.
    ///
    /// ```
    /// use hypercomm_rt::Calibration;
    /// let c = Calibration::parse(
    ///     "beta = 2e-7\ntau = 5e-11\nband = 1 2e-7 1e-9\nband = 4096 1e-6 2e-11",
    /// )
    /// .unwrap();
    /// // 8 KiB, the largest power the bands price: (1e-6 + 2e-11 · 8192) / 8192.
    /// let want = (1e-6 + 2e-11 * 8192.0) / 8192.0;
    /// assert!((c.least_per_byte() - want).abs() < 1e-20);
    /// assert_eq!(Calibration::line(2e-7, 2.5e-11).least_per_byte(), 2.5e-11);
    /// ```
    pub fn least_per_byte(&self) -> f64 {
        self.fastest_size()
            .map_or(self.tau, |(p, _)| self.message_per_byte(p))
    }

    /// The file named by `HYPERCOMM_CALIBRATION`, or the defaults when it is unset or
    /// `off`.
    pub fn from_env() -> Result<Self> {
        match std::env::var_os(CALIBRATION_ENV) {
            Some(v) if v.is_empty() || v == CALIBRATION_OFF => Ok(Self::default()),
            Some(path) => Self::load(std::path::Path::new(&path)),
            None => Ok(Self::default()),
        }
    }

    /// The calibration as the file format's lines (`beta`, `tau`, then each `band`,
    /// `fresh`, `same-cpu` and `network` line, and `switch` when not 0), which [`Calibration::parse`] reads back exactly: to
    /// send one to other processes (the MPI CLI's rank 0 gives every rank its own).
    ///
    /// ```
    /// use hypercomm_rt::Calibration;
    /// let c = Calibration::parse("beta = 2e-6\ntau = 5e-10\nband = 65536 8e-6 4e-10\nfresh = 1 1e-7 3e-10\nnetwork = 1 3e-6 1e-9").unwrap();
    /// assert_eq!(Calibration::parse(&c.to_text()).unwrap(), c);
    /// assert!(c.to_text().contains("network = 1 3e-6 1e-9"));
    /// let shared = Calibration::parse("beta = 2e-6\ntau = 5e-10\nswitch = 2e-6").unwrap();
    /// assert_eq!(shared.switch, 2e-6);
    /// assert_eq!(Calibration::parse(&shared.to_text()).unwrap(), shared);
    /// assert!(Calibration::parse("beta = 2e-6\ntau = 5e-10\nswitch = -1").is_err());
    /// let helped = Calibration::parse("beta = 2e-7\ntau = 4e-11\nshared-copy = 0.6").unwrap();
    /// assert_eq!(helped.shared_copy_share(1 << 20), 0.6);
    /// assert_eq!(Calibration::parse(&helped.to_text()).unwrap(), helped);
    /// let sized = Calibration::parse("beta = 2e-7\ntau = 4e-11\nshared-copy = 262144 0.46\nshared-copy = 2097152 0.62").unwrap();
    /// assert_eq!(Calibration::parse(&sized.to_text()).unwrap(), sized);
    /// assert!(Calibration::parse("beta = 2e-7\ntau = 4e-11\nshared-copy = 0.2").is_err());
    /// assert!(Calibration::parse("beta = 2e-7\ntau = 4e-11\nshared-copy = 9 0.5\nshared-copy = 8 0.5").is_err());
    /// // One share for every size, or one per size: not both.
    /// assert!(Calibration::parse("beta = 2e-7\ntau = 4e-11\nshared-copy = 0.6\nshared-copy = 4194304 0.5").is_err());
    /// ```
    pub fn to_text(&self) -> String {
        let mut s = format!("beta = {:e}\ntau = {:e}\n", self.beta, self.tau);
        for (key, bands) in [
            ("band", &self.bands),
            ("fresh", &self.fresh),
            ("same-cpu", &self.same_cpu),
            ("network", &self.network),
        ] {
            for b in bands.as_slice() {
                s.push_str(&b.line(key));
            }
        }
        if self.switch > 0.0 {
            s.push_str(&format!("switch = {:e}\n", self.switch));
        }
        for &(bytes, share) in self.shared_copy.as_slice() {
            s.push_str(&format!("shared-copy = {bytes} {share}\n"));
        }
        s
    }

    /// Read a calibration file.
    pub fn load(path: &std::path::Path) -> Result<Self> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            let hint = if e.kind() == std::io::ErrorKind::NotFound {
                format!(
                    "; measure and write it with `hypercomm calibrate --output {}` \
                     (`hypercomm-mpi calibrate` for MPI), or unset {CALIBRATION_ENV} (or set it \
                     to `{CALIBRATION_OFF}` for the defaults)",
                    path.display()
                )
            } else {
                String::new()
            };
            Error::Calibration(format!("{}: {e}{hint}", path.display()))
        })?;
        Self::parse(&text).map_err(|e| match e {
            Error::Calibration(m) => Error::Calibration(format!("{}: {m}", path.display())),
            other => other,
        })
    }

    /// Parse the text of a calibration file: `beta` and `tau` each once (at most
    /// [`MAX_SECONDS`] and 1 s per byte), the others optional (defaults where omitted).
    pub fn parse(text: &str) -> Result<Self> {
        let mut c = Self::default();
        let (mut bands, mut fresh, mut same_cpu, mut network) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        let mut shares: Vec<(u64, f64)> = Vec::new();
        // The one-value keys seen: each is set once (a second would silently win).
        let mut seen: Vec<&str> = Vec::new();
        let bad = |m: String| Error::Calibration(m);
        let cleaned: String = text
            .lines()
            .map(|l| l.split('#').next().unwrap_or(""))
            .collect::<Vec<_>>()
            .join("\n")
            .replace(['{', '}', '"'], " ")
            .replace(',', "\n");
        let number = |value: &str| -> Result<f64> {
            value
                .parse()
                .map_err(|_| bad(format!("`{value}` is not a number")))
        };
        for line in cleaned.lines().map(str::trim).filter(|l| !l.is_empty()) {
            let (key, value) = line
                .split_once(['=', ':'])
                .ok_or_else(|| bad(format!("`{line}` is not `key = value`")))?;
            let (key, value) = (key.trim(), value.trim());
            if matches!(key, "band" | "fresh" | "same-cpu" | "network") {
                let parts: Vec<&str> = value.split_whitespace().collect();
                let [from, beta, tau] = parts[..] else {
                    return Err(bad(format!(
                        "{key} = `{value}`; valid: `{key} = FROM BETA TAU` (bytes, seconds, \
                         seconds per byte)"
                    )));
                };
                let from = from
                    .parse()
                    .map_err(|_| bad(format!("{key} from `{from}` is not a byte count")))?;
                let to = match key {
                    "band" => &mut bands,
                    "fresh" => &mut fresh,
                    "same-cpu" => &mut same_cpu,
                    _ => &mut network,
                };
                to.push(Band {
                    from,
                    beta: number(beta)?,
                    tau: number(tau)?,
                });
                continue;
            }
            if key == "shared-copy" {
                // `SHARE` (every size) or `BYTES SHARE`.
                let point = match value.split_whitespace().collect::<Vec<_>>()[..] {
                    [share] => (0, number(share)?),
                    [bytes, share] => (
                        bytes.parse().map_err(|_| {
                            bad(format!("shared-copy at `{bytes}` is not a byte count"))
                        })?,
                        number(share)?,
                    ),
                    _ => {
                        return Err(bad(format!(
                            "shared-copy = `{value}`; valid: `shared-copy = SHARE` or \
                             `shared-copy = BYTES SHARE`"
                        )))
                    }
                };
                shares.push(point);
                continue;
            }
            if !matches!(key, "beta" | "tau" | "switch") {
                return Err(bad(format!(
                    "unknown key `{key}`; valid: beta, tau, band, fresh, same-cpu, network, \
                     switch, shared-copy"
                )));
            }
            if seen.contains(&key) {
                return Err(bad(format!(
                    "`{key}` is set twice; valid: each of beta, tau and switch once"
                )));
            }
            seen.push(key);
            let v = number(value)?;
            match key {
                "switch" if !(v.is_finite() && (0.0..=MAX_SECONDS).contains(&v)) => {
                    return Err(bad(format!(
                        "switch = {v}; valid: 0 to {MAX_SECONDS} seconds"
                    )));
                }
                "switch" => c.switch = v,
                "beta" if !(v.is_finite() && (0.0..=MAX_SECONDS).contains(&v)) => {
                    return Err(bad(format!(
                        "beta = {v} must be finite, ≥ 0 and at most {MAX_SECONDS} seconds"
                    )));
                }
                "tau" if v > 1.0 => {
                    return Err(bad(format!(
                        "tau = {v}; valid: more than 0 and at most 1 second per byte"
                    )));
                }
                "tau" if !(v.is_finite() && v > 0.0) => {
                    return Err(bad(format!(
                        "tau = {v} must be finite and > 0: a time per byte of 0 prices \
                         bandwidth as free (a fit of one size, or of too noisy ones; \
                         calibrate again with larger sizes)"
                    )));
                }
                "beta" => c.beta = v,
                _ => c.tau = v,
            }
        }
        // The one line is the calibration: a file without it (empty, or cut short)
        // would price every message at the defaults while reports name the file.
        if let Some(key) = ["beta", "tau"].into_iter().find(|k| !seen.contains(k)) {
            return Err(bad(format!(
                "no `{key}` line; valid: a file with `beta = SECONDS` and `tau = SECONDS \
                 PER BYTE` (what `calibrate` writes), or HYPERCOMM_CALIBRATION=off for the \
                 defaults"
            )));
        }
        c.bands = Bands::new(&bands)?;
        let named = |what: &'static str| {
            move |e| match e {
                Error::Calibration(m) => Error::Calibration(format!("{what} bands: {m}")),
                other => other,
            }
        };
        c.fresh = Bands::new(&fresh).map_err(named("fresh"))?;
        c.same_cpu = Bands::new(&same_cpu).map_err(named("same-cpu"))?;
        c.network = Bands::new(&network).map_err(named("network"))?;
        c.shared_copy = Shares::new(&shares)?;
        Ok(c)
    }

    /// The cost model for elements of `elem_bytes` bytes, from the one line:
    /// single-port, full duplex (`ports = one`, Dimakopoulos & Dimopoulos's model). A rank
    /// is one thread, which copies its step's incoming messages one after the other, so
    /// the all-port model (a rank receiving from three peers at the price of one
    /// transfer) would favour algorithms that the runtime executes serially anyway.
    pub fn model(&self, elem_bytes: usize) -> Model {
        let m = Model::new(self.beta, self.tau * elem_bytes as f64).unwrap_or_default();
        Model {
            ports: hypercomm::cost::model::Ports::One,
            ..m
        }
    }

    /// A hash of every number of the calibration (its bits), to key answers by.
    pub(crate) fn fingerprint(&self) -> u64 {
        use std::hash::{Hash, Hasher};
        let mut h = rustc_hash::FxHasher::default();
        self.beta.to_bits().hash(&mut h);
        self.tau.to_bits().hash(&mut h);
        for b in self.bands.as_slice() {
            (b.from, b.beta.to_bits(), b.tau.to_bits()).hash(&mut h);
        }
        for b in self.fresh.as_slice() {
            (1u8, b.from, b.beta.to_bits(), b.tau.to_bits()).hash(&mut h);
        }
        for b in self.same_cpu.as_slice() {
            (2u8, b.from, b.beta.to_bits(), b.tau.to_bits()).hash(&mut h);
        }
        for b in self.network.as_slice() {
            (3u8, b.from, b.beta.to_bits(), b.tau.to_bits()).hash(&mut h);
        }
        if self.switch != 0.0 {
            (4u8, self.switch.to_bits()).hash(&mut h);
        }
        for &(bytes, share) in self.shared_copy.as_slice() {
            (5u8, bytes, share.to_bits()).hash(&mut h);
        }
        h.finish()
    }
}

/// (β, τ) of `bytes` bytes in `bands` of their own (`same-cpu`, `network`): the band's,
/// below the first band its line (as the one line prices below `band`s), `None` without
/// bands.
fn own_band(bands: &Bands, bytes: u64) -> Option<(f64, f64)> {
    let all = bands.as_slice();
    all.iter()
        .rev()
        .find(|b| b.from <= bytes)
        .or(all.first())
        .map(|b| (b.beta, b.tau))
}

/// The name that runs a collective with the backend's own implementation, not a
/// schedule: `Algo::Named(NATIVE)` (`MPI_Allreduce`, … on the MPI backend; the threads
/// backend has none and reports [`crate::Error::Native`]). No registry algorithm has
/// this name; `Algo::Auto` chooses it only where it measured fastest
/// ([`crate::tune`]), never under the cost model alone.
pub const NATIVE: &str = "native";

/// Which algorithm a collective runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Algo<'a> {
    /// The registry's algorithm of this name (an error lists those that fit), or
    /// [`NATIVE`]: the backend's own collective.
    Named(&'a str),
    /// The registry's algorithm `name` with the ranks laid out as `shape` (row-major,
    /// the last factor fastest; factors of 1 allowed, their product the number of
    /// ranks): the decompositions of seed 002 (`product`, for all-to-all and
    /// all-gather) exchange along one dimension of the shape at a time. An algorithm
    /// that takes no shape, or a shape that does not multiply to the ranks, is an
    /// error ([`crate::Error::Library`]).
    ///
    /// ```
    /// use hypercomm_rt::{threads, Algo};
    /// let out = threads::run(6, |comm| {
    ///     let r = comm.rank() as u64;
    ///     let send: Vec<u64> = (0..6).map(|d| 10 * r + d).collect();
    ///     let mut recv = vec![0u64; 6];
    ///     let shape = Algo::Shaped { name: "product", shape: &[2, 3] };
    ///     comm.all_to_all_into(&send, &mut recv, shape)?;
    ///     Ok::<_, hypercomm_rt::Error>(recv)
    /// })
    /// .unwrap();
    /// assert_eq!(out[4], vec![4, 14, 24, 34, 44, 54]);
    /// ```
    Shaped {
        /// The registry name (`product`).
        name: &'a str,
        /// n_1 × … × n_d.
        shape: &'a [u32],
    },
    /// The fastest fitting algorithm under the cost model and the calibration.
    #[default]
    Auto,
}

impl<'a> From<&'a str> for Algo<'a> {
    /// `"auto"` is [`Algo::Auto`], anything else a name.
    fn from(name: &'a str) -> Self {
        if name.eq_ignore_ascii_case("auto") {
            Algo::Auto
        } else {
            Algo::Named(name)
        }
    }
}

/// What one collective call ran.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ran {
    /// The collective.
    pub op: OpKind,
    /// The registry name of the algorithm, or [`NATIVE`].
    pub algorithm: &'static str,
    /// Whether `Algo::Auto` chose it.
    pub auto: bool,
    /// Steps of the schedule.
    pub steps: usize,
    /// Whether it ran in place (`in` inside `out`) without a copy of the input.
    pub in_place: bool,
}

/// One collective call, as the cache sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Call {
    pub collective: Collective,
    pub len: u64,
    pub elem_bytes: usize,
    pub commutative: bool,
    /// `in` at this offset of `out` (in-place calls).
    pub alias: Option<usize>,
}

impl Call {
    fn problem<'t>(&self, topology: &'t Topology) -> Problem<'t> {
        Problem {
            topology,
            collective: self.collective,
            len: self.len,
            commutative: self.commutative,
            counts: None,
        }
    }
    /// The same call with a commutative operator.
    fn commutative(self) -> Self {
        Call {
            commutative: true,
            ..self
        }
    }
    fn needs_order(&self) -> bool {
        self.collective.kind().is_reduction() && !self.commutative
    }
}

/// What `Algo::Auto`'s choice depends on: the whole collective (its root, its peers,
/// in case a cost ever depends on them), never the rank.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
struct ChoiceKey {
    collective: Collective,
    len: u64,
    elem_bytes: usize,
    commutative: bool,
    /// In place: the prediction skips a copy onto itself.
    in_place: bool,
}

/// A question whose answer does not depend on the rank, as every communicator of the
/// process sees it: the same topology, question and calibration (its bits) give the
/// same answer on every rank.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
struct SharedKey {
    /// The topology's nodes and a hash of its string (the runtime's is `complete:K`,
    /// but any topology keeps its answers apart).
    nodes: u32,
    topology: u64,
    question: Question,
    /// [`Calibration::fingerprint`] with the execution: what the prediction prices by.
    model: u64,
}

#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum Question {
    /// Which algorithm `Algo::Auto` runs (answer: it, or `None` when none fits).
    Fastest(ChoiceKey),
    /// Whether the algorithm (its address in the registry) combines in rank order for
    /// this call (answer: the algorithm if it does, `None` if not).
    KeepsOrder(Call, usize),
}

/// Choices kept process-wide at most; past that the table starts afresh (a program
/// calling with ever new lengths would otherwise grow it without end).
const SHARED_CHOICES: usize = 4096;

/// An answer, or the message of the panic that computing it raised.
type Answer = Result<Option<&'static Algorithm>, Arc<str>>;

/// The process-wide choices: one cell per question, filled by the first rank to ask.
type SharedChoices = FxHashMap<SharedKey, Arc<OnceLock<Answer>>>;

/// The answer to `key`, computed by `answer` by the first rank of the process to ask,
/// while ranks asking meanwhile wait for it: with k ranks as threads of one process,
/// `Algo::Auto` then simulates each candidate once, not k times (a simulation of
/// all-to-all on k ranks costs O(k²): 1024 ranks took minutes before the answer was
/// shared), and a non-commutative reduction verifies its schedule once.
///
/// A rank waiting here blocks its thread (with fibers, every rank of that thread) on a
/// computation that waits on no rank, so it cannot deadlock: `answer` must never
/// pause (reach a wait of the transport), or a fiber blocked here could be the one
/// to resume the fiber computing. If `answer` panics, the panic goes on in the rank
/// that computed, and the cell keeps its message: every rank asking later panics with
/// it at once, instead of computing (and panicking) again one after the other.
fn shared_answer(
    key: SharedKey,
    answer: impl FnOnce() -> Option<&'static Algorithm>,
) -> Option<&'static Algorithm> {
    static CHOICES: OnceLock<Mutex<SharedChoices>> = OnceLock::new();
    let cell = {
        let mut table = CHOICES
            .get_or_init(Default::default)
            .lock()
            // The table holds plain data: a panic elsewhere leaves it consistent.
            .unwrap_or_else(|e| e.into_inner());
        if table.len() >= SHARED_CHOICES && !table.contains_key(&key) {
            table.clear();
        }
        table.entry(key).or_default().clone()
    };
    let mut panicked = None;
    let got = cell.get_or_init(|| {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(answer)).map_err(|payload| {
            let message = Arc::from(crate::panic_message(&*payload));
            panicked = Some(payload);
            message
        })
    });
    if let Some(payload) = panicked {
        std::panic::resume_unwind(payload);
    }
    match got {
        Ok(answer) => *answer,
        Err(message) => panic!("choosing an algorithm panicked on another rank: {message}"),
    }
}

/// A checked plan and what it came from.
#[derive(Clone)]
pub(crate) struct Chosen {
    pub plan: Arc<Plan>,
    pub algorithm: &'static str,
    pub auto: bool,
}

/// Names of [`Selector::named`] kept at most (a program names a few algorithms).
const NAMED: usize = 32;

/// Calls of [`Selector::recent`] kept at most: a loop of a few calls (a benchmark's
/// barrier and timed call, an iterative solver's) finds each of them there.
const RECENT: usize = 8;

/// A recent call, as it was made, and its plan.
struct Recent {
    call: Call,
    /// `None` for `Algo::Auto`, else the name exactly as given.
    name: Option<Box<str>>,
    /// The shape of `Algo::Shaped` (empty otherwise).
    shape: Box<[u32]>,
    chosen: Chosen,
    /// The peer and bytes of the message the plan waits for first, if its first step
    /// only receives (see [`Selector::expected`]).
    expect: Option<(Rank, usize)>,
    /// Where in `recent` the call that followed this one last time is.
    succ: Option<usize>,
}

impl Recent {
    #[inline]
    fn matches(&self, call: &Call, algo: Algo<'_>) -> bool {
        self.call == *call
            && match (&self.name, algo) {
                (None, Algo::Auto) => true,
                (Some(a), Algo::Named(b)) => {
                    self.shape.is_empty() && same_name(a.as_bytes(), b.as_bytes())
                }
                (Some(a), Algo::Shaped { name, shape }) => {
                    !self.shape.is_empty()
                        && same_name(a.as_bytes(), name.as_bytes())
                        && *self.shape == *shape
                }
                _ => false,
            }
    }
}

/// `a == b` for the short strings that algorithm names are, compared in line: `==` on
/// slices calls `memcmp`, whose call and dispatch cost more than the comparison of a
/// name of a few bytes (measured with `examples/call_overhead`:
/// `docs/perf-log/2026-11-24-per-call-path.md`).
#[inline]
fn same_name(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// A plan's call, algorithm (its address in the registry) and shape (empty but for
/// `Algo::Shaped`).
type PlanKey = (Call, usize, Box<[u32]>);

/// The shape of `Algo::Shaped`, empty for the others.
fn shape_of<'a>(algo: Algo<'a>) -> &'a [u32] {
    match algo {
        Algo::Shaped { shape, .. } => shape,
        Algo::Named(_) | Algo::Auto => &[],
    }
}

/// A hash of the topology's string, which names it exactly.
fn topology_id(t: &Topology) -> u64 {
    use std::hash::{BuildHasher, Hash, Hasher};
    let mut h = rustc_hash::FxBuildHasher.build_hasher();
    t.to_string().hash(&mut h);
    h.finish()
}

/// The machine the runtime builds `kind`'s schedules for on `k` ranks: `complete:k`
/// (every two ranks talk directly, as on the threads and MPI backends), except for a
/// download (seed 003), whose host is the last rank and whose algorithms need
/// `hypercube:n+host`: that machine when k = 2^n + 1 (its links are some of
/// `complete:k`'s, so its schedules run unchanged), `None` for any other k.
pub fn topology_for(kind: OpKind, k: u32) -> Option<Topology> {
    if kind != OpKind::Download {
        return Some(Topology::complete(k));
    }
    let pes = k.checked_sub(1).filter(|p| p.is_power_of_two())?;
    let cube = hypercomm::topology::Hypercube::new(pes.trailing_zeros()).ok()?;
    Topology::hypercube(cube)
        .with_host(hypercomm::topology::HostLinks::All)
        .ok()
}

/// An algorithm kept as published with a known flaw (`Algorithm::published_flaw`: seed
/// 003's SSA) runs only where its schedule verifies; elsewhere [`Error::Flawed`] carries
/// the verifier's message (for SSA, the PEs left without data). Other algorithms pass
/// unverified. Each rank verifies for itself (a download verifies in O(k log k)).
pub fn refuse_flawed(
    algorithm: &Algorithm,
    problem: Problem<'_>,
    schedule: &dyn Schedule,
) -> Result<()> {
    let Some(flaw) = algorithm.published_flaw() else {
        return Ok(());
    };
    match verify::verify(problem, schedule, Strictness::default()) {
        Ok(_) => Ok(()),
        Err(v) => Err(Error::Flawed {
            algo: algorithm.name,
            topology: problem.topology.to_string(),
            flaw,
            violation: v.to_string(),
        }),
    }
}

/// Why [`topology_for`] has no machine: a download on k ranks, k not 2^n + 1.
pub fn no_download_machine(k: u32) -> hypercomm::error::Error {
    hypercomm::error::Error::InvalidParameter {
        what: "--ranks",
        reason: format!(
            "{k}: download runs on hypercube:n+host, 2^n processing elements and the host \
             (the last rank); valid: 2^n + 1 ranks (2, 3, 5, 9, 17, …)"
        ),
    }
}

/// Per-communicator caches of choices and plans. A call made among the last few costs
/// a comparison with each of them (no hash, no reference count); any other repeated
/// call, a look-up of its name among the few recently named (exact match) and a hash
/// of its `Call`.
pub(crate) struct Selector {
    pub calibration: Calibration,
    /// What the backend does beyond the papers' model ([`Transport::execution`](crate::Transport::execution)).
    pub execution: Execution,
    /// Hash of the calibration and the execution, for [`SharedKey`].
    model_id: u64,
    topology: Topology,
    /// [`topology_id`] of `topology`, computed once.
    topology_id: u64,
    /// Download's machine ([`topology_for`]) and its id, if the rank count has one.
    hosted: Option<(Topology, u64)>,
    rank: Rank,
    choices: FxHashMap<ChoiceKey, &'static Algorithm>,
    /// Names already looked up, exactly as given, with their algorithm.
    named: Vec<(OpKind, Box<str>, &'static Algorithm)>,
    /// Plans by call, algorithm (its address in the registry's static table) and shape
    /// (empty but for `Algo::Shaped`).
    plans: FxHashMap<PlanKey, Arc<Plan>>,
    /// The last calls, newest last.
    recent: Vec<Recent>,
    /// Where in `recent` the last call is: the next one is looked for first where the
    /// call that followed it last time is, so that a loop of calls (a benchmark's timed
    /// call and barrier, an iteration's few collectives) finds each with one comparison.
    last: Option<usize>,
    /// The plans of the last variable-count calls ([`crate::vcount`]).
    pub vplans: crate::vcount::VPlans,
}

impl Selector {
    pub fn new(
        topology: Topology,
        rank: Rank,
        calibration: Calibration,
        execution: Execution,
    ) -> Self {
        let hosted = topology_for(OpKind::Download, topology.nodes()).map(|t| {
            let id = topology_id(&t);
            (t, id)
        });
        let model_id = {
            use std::hash::{Hash, Hasher};
            let mut h = rustc_hash::FxHasher::default();
            (calibration.fingerprint(), execution).hash(&mut h);
            h.finish()
        };
        Selector {
            calibration,
            execution,
            model_id,
            topology_id: topology_id(&topology),
            topology,
            hosted,
            rank,
            choices: FxHashMap::default(),
            named: Vec::new(),
            plans: FxHashMap::default(),
            recent: Vec::with_capacity(RECENT),
            last: None,
            vplans: Default::default(),
        }
    }

    /// The plan of `call` with `algo`, built or cached. The look-up among the recent
    /// calls is all a repeated call runs: kept apart from the rest (`#[cold]`), whose
    /// large frame it would otherwise set up on every call.
    #[inline]
    pub fn plan(&mut self, call: Call, algo: Algo<'_>) -> Result<&Chosen> {
        // Looked up by index, then borrowed: the borrow checker does not let a
        // reference returned from the loop coexist with the slow path's mutation.
        let guess = self.predicted();
        let at = match guess {
            Some(g) if self.recent[g].matches(&call, algo) => g,
            _ => match self.recent.iter().rposition(|r| r.matches(&call, algo)) {
                Some(at) => at,
                None => self.remember(call, algo)?,
            },
        };
        if let Some(last) = self.last {
            self.recent[last].succ = Some(at);
        }
        self.last = Some(at);
        Ok(&self.recent[at].chosen)
    }

    /// Where in `recent` the next call most likely is: the call that followed the last
    /// one, last time.
    #[inline]
    fn predicted(&self) -> Option<usize> {
        self.last.and_then(|l| self.recent[l].succ)
    }

    /// If the call the next one most likely is ([`Selector::plan`]'s first guess)
    /// begins by waiting for a message, whose and how many bytes: for
    /// [`crate::Transport::expect`]. Plans whose first step sends too are left out:
    /// their peer is most likely writing its message at that moment, which an early
    /// read would only slow (measured: `docs/perf-log/2026-11-25-receiver-hint-and-pinning.md`).
    #[inline]
    pub fn expected(&self) -> Option<(Rank, usize)> {
        self.predicted().and_then(|p| self.recent[p].expect)
    }

    /// Choose and plan a call not among the recent ones, and keep it there; returns its
    /// index in `recent`.
    #[cold]
    #[inline(never)]
    fn remember(&mut self, call: Call, algo: Algo<'_>) -> Result<usize> {
        let chosen = self.choose(call, algo)?;
        if self.recent.len() == RECENT {
            // Indices past the first move down by one; links to the first are lost.
            self.recent.remove(0);
            let down = |i: Option<usize>| i.and_then(|i| i.checked_sub(1));
            self.recent.iter_mut().for_each(|r| r.succ = down(r.succ));
            self.last = down(self.last);
        }
        let expect = chosen
            .plan
            .first_receive()
            .map(|(from, elems)| (from, elems as usize * call.elem_bytes));
        self.recent.push(Recent {
            expect,
            succ: None,
            call,
            name: match algo {
                Algo::Named(n) | Algo::Shaped { name: n, .. } => Some(n.into()),
                Algo::Auto => None,
            },
            shape: shape_of(algo).into(),
            chosen,
        });
        Ok(self.recent.len() - 1)
    }

    /// The plan of `call` with `algo`, from the caches below `recent` or built.
    fn choose(&mut self, call: Call, algo: Algo<'_>) -> Result<Chosen> {
        let kind = call.collective.kind();
        if kind == OpKind::Download && self.hosted.is_none() {
            return Err(no_download_machine(self.topology.nodes()).into());
        }
        let (algorithm, auto) = match algo {
            Algo::Named(name) | Algo::Shaped { name, .. } => (self.named(kind, name)?, false),
            Algo::Auto => (self.auto(call)?, true),
        };
        let shape = shape_of(algo);
        if let Algo::Shaped { shape: [], .. } = algo {
            // An empty shape is no layout: refused as the library refuses it.
            hypercomm::algorithms::shape::check(shape, self.topology.nodes())?;
        }
        let key = (call, algorithm as *const Algorithm as usize, shape.into());
        if let Some(plan) = self.plans.get(&key) {
            return Ok(Chosen {
                plan: plan.clone(),
                algorithm: algorithm.name,
                auto,
            });
        }
        let unordered = || Error::NotOrderPreserving {
            algo: algorithm.name,
            op: kind.to_string(),
        };
        let schedule = match self.build(algorithm, call, shape) {
            Ok(s) => s,
            // The algorithm refuses non-commutative operators itself.
            Err(_)
                if call.needs_order()
                    && self.build(algorithm, call.commutative(), shape).is_ok() =>
            {
                return Err(unordered())
            }
            Err(e) => return Err(e),
        };
        self.check_flaw(algorithm, call, schedule.as_ref())?;
        // `auto` only chooses among algorithms that keep rank order when they must.
        if !auto && call.needs_order() {
            let question = Question::KeepsOrder(call, key.1);
            let kept = shared_answer(self.shared(question), || {
                self.keeps_order(call, schedule.as_ref())
                    .then_some(algorithm)
            });
            if kept.is_none() {
                return Err(unordered());
            }
        }
        let plan = Arc::new(self.check(call, schedule.as_ref())?);
        self.plans.insert(key, plan.clone());
        Ok(Chosen {
            plan,
            algorithm: algorithm.name,
            auto,
        })
    }

    /// The registry's algorithm of `kind` named `name` (case-insensitive, trimmed).
    fn named(&mut self, kind: OpKind, name: &str) -> Result<&'static Algorithm> {
        if let Some(&(_, _, a)) = self
            .named
            .iter()
            .find(|(k, n, _)| *k == kind && **n == *name)
        {
            return Ok(a);
        }
        let a = algorithms::lookup(self.machine(kind).0, kind, name)?;
        if self.named.len() == NAMED {
            self.named.remove(0);
        }
        self.named.push((kind, name.into(), a));
        Ok(a)
    }

    fn params(&self, call: Call) -> Params {
        Params {
            packets: Packets::Opt,
            model: self.calibration.model(call.elem_bytes),
        }
    }

    /// The machine `kind`'s schedules are built for ([`topology_for`]) and its id;
    /// `complete:k` for a download without one, which [`Selector::choose`] refuses.
    fn machine(&self, kind: OpKind) -> (&Topology, u64) {
        match (kind, &self.hosted) {
            (OpKind::Download, Some((t, id))) => (t, *id),
            _ => (&self.topology, self.topology_id),
        }
    }

    /// `algorithm`'s schedule of `call` on its machine, with the ranks laid out as
    /// `shape` unless it is empty.
    fn build(&self, algorithm: &Algorithm, call: Call, shape: &[u32]) -> Result<Box<dyn Schedule>> {
        let problem = call.problem(self.machine(call.collective.kind()).0);
        Ok(if shape.is_empty() {
            algorithm.build(&problem, &self.params(call))?
        } else {
            algorithm.build_shaped(&problem, &self.params(call), shape)?
        })
    }

    /// Whether `schedule` is correct for a non-commutative operator (the verifier
    /// tracks the order of every combine).
    fn keeps_order(&self, call: Call, schedule: &dyn Schedule) -> bool {
        let problem = call.problem(self.machine(call.collective.kind()).0);
        verify::verify(problem, schedule, Strictness::default()).is_ok()
    }

    fn check_flaw(&self, algorithm: &Algorithm, call: Call, schedule: &dyn Schedule) -> Result<()> {
        let topology = self.machine(call.collective.kind()).0;
        refuse_flawed(algorithm, call.problem(topology), schedule)
    }

    fn auto(&mut self, call: Call) -> Result<&'static Algorithm> {
        let key = ChoiceKey {
            collective: call.collective,
            len: call.len,
            elem_bytes: call.elem_bytes,
            commutative: call.commutative,
            in_place: call.alias.is_some(),
        };
        if let Some(a) = self.choices.get(&key) {
            return Ok(a);
        }
        // Every rank of the process asks the same question (the choice does not depend
        // on the rank): the first to ask simulates, the others wait for its answer.
        let question = Question::Fastest(key);
        let best = shared_answer(self.shared(question), || self.fastest(call).ok())
            .ok_or_else(|| self.no_algorithm(call))?;
        self.choices.insert(key, best);
        Ok(best)
    }

    /// The fitting algorithm of least predicted time (the first in registry order on a
    /// tie), among those whose schedule builds (and keeps rank order if it must).
    fn fastest(&self, call: Call) -> Result<&'static Algorithm> {
        self.ranked(call, 1)
            .first()
            .copied()
            .ok_or_else(|| self.no_algorithm(call))
    }

    /// The algorithms `Auto` may choose for `kind`, in registry order: those that fit
    /// the machine, never one kept with its published flaw (it may skip work).
    pub(crate) fn fitting(&self, kind: OpKind) -> Vec<&'static Algorithm> {
        algorithms::fitting(self.machine(kind).0, kind)
            .into_iter()
            .filter(|a| a.published_flaw().is_none())
            .collect()
    }

    /// The `n` fitting algorithms of least predicted time
    /// ([`predict::predict_schedule`], what `bench` prints), fastest first (registry
    /// order on a tie), among those whose schedule builds (and keeps rank order if it
    /// must); of algorithms that build one schedule ([`predict::digest`]: on 2^n ranks
    /// `recursive-doubling` and `dimension-exchange` all-reduces, on 2 ranks most
    /// all-to-alls), the first in the registry only, so that tuning does not time one
    /// schedule twice (and pick between its names by noise).
    pub(crate) fn ranked(&self, call: Call, n: usize) -> Vec<&'static Algorithm> {
        self.ranked_timed(call, n)
            .into_iter()
            .map(|(a, _)| a)
            .collect()
    }

    /// [`Selector::ranked`] with each algorithm's predicted seconds per call.
    pub(crate) fn ranked_timed(&self, call: Call, n: usize) -> Vec<(&'static Algorithm, f64)> {
        let topology = self.machine(call.collective.kind()).0;
        let form = Form {
            collective: call.collective,
            len: call.len,
            elem_bytes: call.elem_bytes,
            in_place: call.alias.is_some(),
        };
        let problem = call.problem(topology);
        let mut timed: Vec<(&'static Algorithm, f64)> = Vec::new();
        let mut seen: Vec<u64> = Vec::new();
        for algorithm in self.fitting(call.collective.kind()) {
            let Ok(schedule) = algorithm.build(&problem, &self.params(call)) else {
                continue;
            };
            if call.needs_order() && !self.keeps_order(call, schedule.as_ref()) {
                continue;
            }
            // One digest a schedule; the first alone answers for `n == 1`.
            if n > 1 {
                let d = predict::digest(schedule.as_ref());
                if seen.contains(&d) {
                    continue;
                }
                seen.push(d);
            }
            let time = predict::predict_schedule(
                schedule.as_ref(),
                form,
                self.calibration,
                self.execution,
            );
            timed.push((algorithm, time));
        }
        // Stable: registry order on a tie.
        timed.sort_by(|a, b| a.1.total_cmp(&b.1));
        timed.truncate(n);
        timed
    }

    fn shared(&self, question: Question) -> SharedKey {
        let kind = match question {
            Question::Fastest(key) => key.collective.kind(),
            Question::KeepsOrder(call, _) => call.collective.kind(),
        };
        let (topology, id) = self.machine(kind);
        SharedKey {
            nodes: topology.nodes(),
            topology: id,
            question,
            model: self.model_id,
        }
    }

    fn no_algorithm(&self, call: Call) -> Error {
        Error::NoAlgorithm {
            op: call.collective.kind().to_string(),
            ranks: self.topology.nodes(),
            why: if call.needs_order() {
                " that combines in rank order"
            } else {
                ""
            },
        }
    }

    /// This rank's program of `schedule`, checked for `call`'s buffers.
    fn check(&self, call: Call, schedule: &dyn Schedule) -> Result<Plan> {
        let (k, m, r) = (self.topology.nodes(), call.len, self.rank);
        // Lengths fit in usize: the caller's buffers were checked against them.
        let in_len = call.collective.in_len(k, m, r) as usize;
        let out_len = call.collective.out_len(k, m, r) as usize;
        let plan = Plan::new(schedule.program(r), k, in_len, out_len)?;
        Ok(match call.alias {
            Some(off) => plan.alias_safe(off),
            None => plan,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::{
        same_name, shared_answer, Algo, Algorithm, Calibration, Call, ChoiceKey, Execution,
        Question, Selector, SharedKey, RECENT,
    };
    use hypercomm::collective::Collective;
    use hypercomm::topology::Topology;
    use proptest::prelude::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// The same-CPU pairs stay warm while a message within a CPU costs at most 1.5× one
    /// across: a small size 1.2× dearer (noise on a busy machine) does not end it, the
    /// first size 1.6× dearer does, and a file without `same-cpu` lines has none.
    #[test]
    fn same_cpu_pairs_are_warm_until_clearly_dearer_than_across() {
        let text = |small: f64| {
            format!(
                "beta = 1e-6\ntau = 1e-10\nsame-cpu = 1 {small:e} 0\n\
                 same-cpu = 65536 0 {:e}",
                1.6 * 1e-6 / 65536.0 + 1.6e-10
            )
        };
        let c = Calibration::parse(&text(1.2e-6)).unwrap();
        assert_eq!(c.same_cpu_warm_bytes(), 32768);
        assert_eq!(c.same_cpu_at(2), Some((1.2e-6, 0.0)));
        let c = Calibration::parse(&text(1.6e-6)).unwrap();
        assert_eq!(c.same_cpu_warm_bytes(), 0);
        let old = Calibration::parse("beta = 1e-6\ntau = 1e-10").unwrap();
        assert_eq!((old.same_cpu_warm_bytes(), old.same_cpu_at(1)), (0, None));
    }

    /// A call of `len` bytes (elements of one byte, not in place).
    fn call(collective: Collective, len: u64) -> Call {
        Call {
            collective,
            len,
            elem_bytes: 1,
            commutative: true,
            alias: None,
        }
    }

    fn bcast(len: u64) -> Call {
        call(Collective::Broadcast { root: 0 }, len)
    }

    /// Rank 1 of 2: a broadcast from 0 begins by receiving from 0; an all-reduce by
    /// recursive doubling begins by sending too.
    fn selector() -> Selector {
        Selector::new(
            Topology::complete(2),
            1,
            Calibration::default(),
            Execution::default(),
        )
    }

    const LINEAR: Algo<'static> = Algo::Named("linear");
    const RD: Algo<'static> = Algo::Named("recursive-doubling");

    #[test]
    fn a_loop_of_calls_is_predicted_call_by_call_with_the_message_each_waits_for_first() {
        let mut sel = selector();
        let calls = [
            (bcast(8), LINEAR, Some((0, 8))),
            (call(Collective::Allreduce, 1), RD, None),
            (bcast(16), LINEAR, Some((0, 16))),
        ];
        // The first round links each call to the next, the second the last to the
        // first; from the third on, each call is where the prediction says, and
        // `expected` names its first message.
        for round in 0..4 {
            for (i, &(c, algo, expect)) in calls.iter().enumerate() {
                let predicted = sel.predicted();
                sel.plan(c, algo).unwrap();
                if round >= 2 {
                    assert_eq!(predicted, sel.last, "round {round}, call {i}");
                    assert_eq!(sel.recent[predicted.unwrap()].expect, expect);
                    let next = &calls[(i + 1) % calls.len()];
                    assert_eq!(sel.expected(), next.2, "after call {i}");
                }
            }
        }
    }

    #[test]
    fn predictions_survive_the_eviction_of_older_calls() {
        let mut sel = selector();
        let (x, y) = (bcast(8), bcast(24));
        // Two fillers, then x and y twice (linking x → y → x), then new calls until
        // the first filler is evicted: every index moves down by one.
        sel.plan(bcast(1), LINEAR).unwrap();
        sel.plan(bcast(2), LINEAR).unwrap();
        for _ in 0..2 {
            sel.plan(x, LINEAR).unwrap();
            sel.plan(y, LINEAR).unwrap();
        }
        for len in 100..100 + (RECENT as u64 - 4) + 1 {
            sel.plan(bcast(len), LINEAR).unwrap();
        }
        assert_eq!(sel.recent.len(), RECENT);
        assert_eq!(sel.recent[0].call, bcast(2), "the first filler is gone");
        // The call before the one that evicted it links to that one.
        assert_eq!(sel.recent[RECENT - 2].succ, Some(RECENT - 1));
        sel.plan(x, LINEAR).unwrap();
        assert_eq!(sel.expected(), Some((0, 24)), "y follows x");
        let p = sel.predicted().unwrap();
        assert_eq!(sel.recent[p].call, y);
        sel.plan(y, LINEAR).unwrap();
        // The last time, y was followed by the first of the new calls.
        assert_eq!(sel.expected(), Some((0, 100)), "bcast(100) follows y");
    }

    #[test]
    fn the_root_of_a_broadcast_expects_nothing() {
        let mut sel = Selector::new(
            Topology::complete(2),
            0,
            Calibration::default(),
            Execution::default(),
        );
        for round in 0..3 {
            sel.plan(bcast(8), LINEAR).unwrap();
            assert_eq!(sel.expected(), None);
            // The call follows itself from the second round on.
            assert_eq!(sel.predicted(), (round > 0).then_some(0));
        }
    }

    proptest! {
        /// The in-line comparison of names is `==`, on equal strings, on strings that
        /// differ in one byte (anywhere), and on prefixes.
        #[test]
        fn same_name_is_equality(a in "[a-z0-9-]{0,24}", b in "[a-z0-9-]{0,24}", at in any::<usize>()) {
            prop_assert_eq!(same_name(a.as_bytes(), b.as_bytes()), a == b);
            prop_assert!(same_name(a.as_bytes(), a.clone().as_bytes()));
            if !a.is_empty() {
                let mut c = a.clone().into_bytes();
                let i = at % c.len();
                c[i] ^= 1;
                prop_assert!(!same_name(a.as_bytes(), &c));
                prop_assert!(!same_name(a.as_bytes(), &a.as_bytes()[..i]));
            }
        }
    }

    /// A key no other test uses (the table is process-wide): `len` tells them apart.
    fn key(len: u64) -> SharedKey {
        SharedKey {
            nodes: 7,
            topology: super::topology_id(&Topology::complete(7)),
            question: Question::Fastest(ChoiceKey {
                collective: Collective::Broadcast { root: 0 },
                len: 1_000_000 + len,
                elem_bytes: 3,
                commutative: true,
                in_place: false,
            }),
            model: 12,
        }
    }

    #[test]
    fn ranks_asking_the_same_question_at_once_compute_its_answer_once() {
        let first = &hypercomm::algorithms::all()[0];
        let computed = AtomicUsize::new(0);
        let start = std::sync::Barrier::new(8);
        let answers: Vec<_> = std::thread::scope(|s| {
            let ask = || {
                start.wait();
                shared_answer(key(1), || {
                    computed.fetch_add(1, Ordering::Relaxed);
                    // Long enough that the others ask while it computes.
                    std::thread::sleep(std::time::Duration::from_millis(50));
                    Some(first)
                })
            };
            let asks: Vec<_> = (0..8).map(|_| s.spawn(ask)).collect();
            asks.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert_eq!(computed.load(Ordering::Relaxed), 1);
        assert!(answers
            .iter()
            .all(|a| a.is_some_and(|a| std::ptr::eq(a, first))));
        // A different question is computed afresh, and its `None` is kept too.
        assert_eq!(shared_answer(key(2), || None).map(|a| a.name), None);
        assert_eq!(shared_answer(key(2), || Some(first)).map(|a| a.name), None);
    }

    #[test]
    fn a_panic_while_answering_is_remembered_and_raised_in_every_rank_that_asks() {
        let first = &hypercomm::algorithms::all()[0];
        let ask = |answer: fn() -> Option<&'static hypercomm::algorithms::Algorithm>| {
            std::panic::catch_unwind(|| shared_answer(key(3), answer))
                .map_err(|p| crate::panic_message(&*p))
        };
        // The rank that computes sees its own panic; a later one, the same message,
        // without computing again.
        assert_eq!(ask(|| panic!("boom")).unwrap_err(), "boom");
        let again = ask(|| unreachable!("computed twice")).unwrap_err();
        assert_eq!(
            again,
            "choosing an algorithm panicked on another rank: boom"
        );
        // Another question is not affected.
        assert!(shared_answer(key(4), || Some(first)).is_some());
    }

    #[test]
    fn auto_chooses_alike_on_every_rank_whether_the_answer_is_shared_or_not() {
        // Rank 0 computes and shares; rank 5's answer comes from the table; a
        // calibration of other bits asks afresh (its own simulation).
        let calibration = Calibration::line(3.25e-6, 7.5e-10);
        let call = Call {
            collective: Collective::Alltoall,
            len: 977,
            elem_bytes: 8,
            commutative: true,
            alias: None,
        };
        let topo = Topology::complete(11);
        let a = Selector::new(topo.clone(), 0, calibration, Execution::default())
            .auto(call)
            .unwrap();
        let b = Selector::new(topo.clone(), 5, calibration, Execution::default())
            .auto(call)
            .unwrap();
        let fresh = Selector::new(topo.clone(), 5, calibration, Execution::default())
            .fastest(call)
            .unwrap();
        assert!(
            std::ptr::eq(a, b) && std::ptr::eq(a, fresh),
            "{} {} {}",
            a.name,
            b.name,
            fresh.name
        );
    }

    /// `Auto`'s choice is the fitting algorithm of least time under the very function
    /// `bench` and `vs-native` print as `pred µs` (`predict::predict`, elements of one
    /// byte, `Packets::Opt`), whatever the calibration (one line, or bands) and the
    /// backend's execution (a CPU per rank with shared copies, ranks sharing CPUs). The
    /// cases include some where the simulator alone (what `Auto` ranked by before)
    /// picks another algorithm, so the test fails if `Auto` ranks by anything else.
    #[test]
    fn auto_picks_the_least_time_that_bench_predicts() {
        use crate::predict;
        use crate::select::{Band, Bands};
        use hypercomm::algorithms::Packets;
        let line = Calibration::line(2.75e-7, 8.79e-11);
        let mut banded = line;
        banded.bands = Bands::new(&[
            Band {
                from: 1,
                beta: 2.5e-7,
                tau: 5e-11,
            },
            Band {
                from: 16384,
                beta: 3e-6,
                tau: 1.5e-10,
            },
            Band {
                from: 262144,
                beta: -2e-5,
                tau: 9e-11,
            },
        ])
        .unwrap();
        let executions = [
            Execution::default(),
            Execution {
                shared_copy_from: Some(262144),
                ..Execution::default()
            },
            Execution {
                cpus: Some(2),
                ..Execution::default()
            },
        ];
        let (mut cases, mut differ) = (0, 0);
        for calibration in [line, banded] {
            for execution in executions {
                for c in [
                    Collective::Broadcast { root: 0 },
                    Collective::Allgather,
                    Collective::Allreduce,
                    Collective::Alltoall,
                ] {
                    for k in [4u32, 5, 8] {
                        for len in [1024u64, 16384, 65536, 1 << 20] {
                            let call = Call {
                                collective: c,
                                len,
                                elem_bytes: 1,
                                commutative: true,
                                alias: None,
                            };
                            let sel =
                                Selector::new(Topology::complete(k), 0, calibration, execution);
                            let auto = sel.fastest(call).unwrap();
                            let pred = |a: &Algorithm| {
                                predict::predict(
                                    c,
                                    k,
                                    len,
                                    1,
                                    a,
                                    Packets::Opt,
                                    None,
                                    calibration,
                                    false,
                                    execution,
                                )
                            };
                            let fitting = sel.fitting(c.kind());
                            let best = fitting
                                .iter()
                                .filter_map(|a| pred(a).map(|t| (*a, t)))
                                .fold(None, |b: Option<(&Algorithm, f64)>, (a, t)| match b {
                                    Some((_, bt)) if bt <= t => b,
                                    _ => Some((a, t)),
                                })
                                .unwrap();
                            assert_eq!(
                                pred(auto),
                                Some(best.1),
                                "{c} k={k} len={len} {execution:?}: auto {} vs {}",
                                auto.name,
                                best.0.name
                            );
                            cases += 1;
                            // What the simulator alone would have picked.
                            let model = calibration.model(1);
                            let simulated = fitting
                                .iter()
                                .filter_map(|a| {
                                    let s = sel.build(a, call, &[]).ok()?;
                                    let topology = sel.machine(c.kind()).0;
                                    Some((
                                        *a,
                                        hypercomm::cost::simulate(topology, s.as_ref(), &model)
                                            .time,
                                    ))
                                })
                                .fold(None, |b: Option<(&Algorithm, f64)>, (a, t)| match b {
                                    Some((_, bt)) if bt <= t => b,
                                    _ => Some((a, t)),
                                })
                                .unwrap();
                            if pred(simulated.0) > Some(best.1 * 1.05) {
                                differ += 1;
                            }
                        }
                    }
                }
            }
        }
        assert!(
            cases >= 288 && differ >= 10,
            "{cases} cases, {differ} differ"
        );
    }
}
