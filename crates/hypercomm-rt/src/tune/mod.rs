//! Measured choices for [`Algo::Auto`] (issue 20): the backend's own collective
//! ([`NATIVE`]) against the schedules that fit, timed on the machine itself.
//!
//! The cost model ranks schedules well but prices neither a backend's per-call overhead
//! nor an MPI library's protocols (eager against rendezvous, shared memory against the
//! network), and it has no price at all for the library's own collective. So where a
//! backend has one, or where the user asks ([`Tuning::Measure`]), the first `Auto` call of
//! a collective (per element size and operator commutativity) times, at every power of
//! two from 8 B to 4 MiB, native (when the backend has it) and the schedules that fit,
//! as `hypercomm bench` and OSU do: a barrier, then one timed call, each schedule's
//! calls in blocks of back-to-back calls, the schedules taking turns block by block
//! (`call_order`); the mean over the iterations without the slowest
//! [`TRIM`] of them (what a loop of calls costs, short of the calls that lost a time
//! slice to another process: a schedule that is fast in most calls but stalls in many
//! loses to a steady one), the slowest rank's. It does so in two rounds: every fitting
//! schedule with few calls, then native and the [`FINALISTS`] fastest of them with many
//! (measuring only the model's three best, with 3 to 100 calls, picked 1.3–3.5× slower
//! than the fastest schedule at 9 of 23 sizes of a 4-rank thread broadcast: the model's
//! line is not the machine's, and a time slice lost in one of 16 calls decided between
//! schedules). Every rank takes the same picks from the agreed times (an all-reduce of
//! their maximum after each round), so every rank runs the same algorithm without
//! further talk. A schedule is picked over native only when it measured at most
//! [`MARGIN`] of native's time: noise then cannot make `Auto` slower than the library's
//! own collective by more than a few percent.
//!
//! A call takes the pick of the nearest measured size (in powers of two; sizes past
//! 4 MiB the 4 MiB pick). Sizes whose buffers would pass 256 MiB over the ranks take
//! the pick of the largest size measured; communicators of more than [`MAX_RANKS`]
//! ranks are left to the model, and so is one rank without a backend collective (its
//! schedules are all local copies; with one, as MPI's, measured: MPI's own copy wins
//! at small sizes and loses from 1 MiB). The picks are kept in a file per backend and machine
//! ([`Transport::machine_key`]), read by rank 0 and broadcast, so the measurement runs
//! once per machine: `HYPERCOMM_TUNING` names another file, or `off` for the model
//! alone. Measuring one collective takes well under a second on two ranks; on a slow
//! network its calls are planned within a budget ([`BUDGET`], [`BUDGET_ENV`]).
//!
//! **Invariant**: every rank of a communicator reaches the same decision (measure or
//! read) and the same picks, from rank 0's file and the agreed times; a rank's own
//! clock never decides alone.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use bytemuck::Pod;
use hypercomm::algorithms::Algorithm;
use hypercomm::collective::{Collective, OpKind};
use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};

use crate::comm::Comm;
use crate::error::{Error, Result};
use crate::op::Op;
use crate::select::{Algo, Call, NATIVE};
use crate::transport::Transport;

mod immediate;
#[doc(hidden)]
pub use immediate::Route;

/// A file of what hypercomm measured on this machine, `{kind}-{machine}.{ext}` in
/// `$XDG_CACHE_HOME/hypercomm/` (else `$HOME/.cache/hypercomm/`): the tuning's picks
/// ([`Tuning`]) and the CLI's automatic calibration. `machine` names the backend and
/// machine ([`Transport::machine_key`]); characters other than ASCII letters, digits
/// and `-` become `_`. `None` when neither variable is set.
///
/// ```
/// let f = hypercomm_rt::tune::cache_file("tuning", "threads-2ranks-2cpus", "json");
/// if let Some(f) = f {
///     assert!(f.ends_with("hypercomm/tuning-threads-2ranks-2cpus.json"));
/// }
/// ```
pub fn cache_file(kind: &str, machine: &str, ext: &str) -> Option<PathBuf> {
    let dir = std::env::var_os("XDG_CACHE_HOME")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .filter(|d| !d.is_empty())
                .map(|h| PathBuf::from(h).join(".cache"))
        })?;
    let safe: String = machine
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    Some(dir.join("hypercomm").join(format!("{kind}-{safe}.{ext}")))
}

/// Environment variable: the tuning file to use, or `off`.
pub const TUNING_ENV: &str = "HYPERCOMM_TUNING";

/// Environment variable: when set (to anything but `0`), rank 0 prints each measuring
/// round's agreed times to standard error, one line per size (as `NCCL_DEBUG=INFO`
/// prints NCCL's tuning): why `auto` picked what it did.
pub const TUNING_LOG_ENV: &str = "HYPERCOMM_TUNING_LOG";

/// Whether [`TUNING_LOG_ENV`] asks for the log.
fn logging() -> bool {
    std::env::var_os(TUNING_LOG_ENV).is_some_and(|v| v != "0")
}

/// One line of the tuning log: `round` of `key` at `bytes`, each slot's name and time.
fn log_line(key: &Key, round: &str, bytes: usize, slots: &[(&str, f64)]) -> String {
    let times: Vec<String> = slots
        .iter()
        .map(|(n, t)| {
            if t.is_finite() {
                format!("{n} {:.3}", t * 1e6)
            } else {
                format!("{n} -")
            }
        })
        .collect();
    format!(
        "hypercomm tuning: {} {round} {bytes} B (µs): {}",
        key.name(),
        times.join(", ")
    )
}

/// Print round 1's or 2's line of size bucket `b`: native, then `names`, timed `times`
/// in that order (native's slot first).
fn log_round<'n>(
    key: &Key,
    round: &str,
    b: usize,
    names: impl Iterator<Item = &'n str>,
    times: &[f64],
) {
    let slots: Vec<(&str, f64)> = std::iter::once(NATIVE)
        .chain(names)
        .zip(times.iter().copied())
        .collect();
    eprintln!("{}", log_line(key, round, bucket_bytes(b), &slots));
}

/// Smallest and largest measured sizes, as powers of two of bytes (8 B … 4 MiB).
const MIN_LOG: u32 = 3;
const MAX_LOG: u32 = 22;
const BUCKETS: usize = (MAX_LOG - MIN_LOG + 1) as usize;

/// The most schedules round 1 screens at each size, beside native (`candidates`):
/// every fitting one in practice (13 for an all-gather on 4 ranks).
pub const SCREENED: usize = 16;

/// The most schedules round 1 sends to round 2, beside native (2 to chooser 5: with
/// round 1's few calls, the fastest schedule was third there at times; `screen_calls`);
/// the third only if near the fastest (`NEAR`).
pub const FINALISTS: usize = 3;

/// A schedule is picked over native only at or below this fraction of native's time.
pub const MARGIN: f64 = 0.95;

/// The share of the slowest timed calls each measurement leaves out (rounded down):
/// 1 of 20 and more.
pub const TRIM: f64 = 0.05;

/// The mean of `xs` without its slowest [`TRIM`] share (sorts `xs`); infinity for none.
fn trimmed_mean(xs: &mut [f64]) -> f64 {
    xs.sort_by(f64::total_cmp);
    let keep = xs.len() - (xs.len() as f64 * TRIM) as usize;
    if keep == 0 {
        return f64::INFINITY;
    }
    xs[..keep].iter().sum::<f64>() / keep as f64
}

/// The median of `xs` (sorts `xs`); infinity for none.
fn median(xs: &mut [f64]) -> f64 {
    xs.sort_by(f64::total_cmp);
    match xs.len() {
        0 => f64::INFINITY,
        n if n % 2 == 1 => xs[n / 2],
        n => (xs[n / 2 - 1] + xs[n / 2]) / 2.0,
    }
}

/// One algorithm's timed calls summed up two ways (seconds per call; infinity for an
/// algorithm that refused the call).
#[derive(Clone, Copy, Debug, PartialEq)]
struct Summary {
    /// The mean without the slowest [`TRIM`] share: what rounds 1 and 2 rank by.
    trimmed: f64,
    /// The median, as `hypercomm-mpi vs-native` reports a side: round 3 wants both.
    median: f64,
}

impl Summary {
    const REFUSED: Summary = Summary {
        trimmed: f64::INFINITY,
        median: f64::INFINITY,
    };

    fn of(xs: &mut [f64]) -> Summary {
        Summary {
            trimmed: trimmed_mean(xs),
            median: median(xs),
        }
    }
}

/// The trimmed means of `times`.
fn trimmed(times: Vec<Summary>) -> Vec<f64> {
    times.into_iter().map(|t| t.trimmed).collect()
}

/// How `measure` chooses, as the tuning file records it: a file measured another
/// way is measured again (1: the model's three best beside native, to 2026-11-27; 2: two
/// rounds over every fitting schedule; 3: a schedule beside native must have won
/// both rounds, [`both_rounds`]; 4: each schedule timed in blocks of its own calls,
/// [`call_order`], and a barrier after the last, whose call had been slowed 10-80× on
/// ranks sharing CPUs, and a schedule over native confirmed call by call, [`confirmed`];
/// 5: that confirmation by the median too; 6: [`SIZE_WARMUP`] untimed calls at each
/// size before any is timed, round 1 with 2 timed calls at least, 3 finalists if near;
/// 7: a user operator's reductions under keys of their own, ` user`: a file of 6 may
/// hold a user operator's schedule picks under a built-in's key).
const CHOOSER: u32 = 7;

/// Pick codes broadcast by rank 0: an index into the registry's fitting algorithms, or
/// one of these.
const CODE_MODEL: u16 = u16::MAX - 2;
const CODE_NATIVE: u16 = u16::MAX - 1;
const CODE_NONE: u16 = u16::MAX;

/// A pick that leaves the choice to the cost model (nothing measured ran).
const MODEL: &str = "model";

/// Whether `Algo::Auto` measures.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Tuning {
    /// The cost model alone (the threads backend's default: deterministic, no
    /// measurement).
    #[default]
    Off,
    /// Measure once per machine and keep the picks in `file`, or in the default file
    /// of the backend and machine when `None` (`$XDG_CACHE_HOME/hypercomm/` or
    /// `~/.cache/hypercomm/`; without either, measure in every process).
    Measure {
        /// The tuning file.
        file: Option<PathBuf>,
    },
}

impl Tuning {
    /// `HYPERCOMM_TUNING` when set (`off`, or a file), else `default`.
    pub fn from_env_or(default: Tuning) -> Tuning {
        match std::env::var_os(TUNING_ENV) {
            Some(v) if v.eq_ignore_ascii_case("off") => Tuning::Off,
            Some(v) if !v.is_empty() => Tuning::Measure {
                file: Some(PathBuf::from(v)),
            },
            _ => default,
        }
    }

    /// Measure, in the default file.
    pub fn measure() -> Tuning {
        Tuning::Measure { file: None }
    }
}

/// What one measured pick runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Pick {
    Native,
    Named(&'static str),
    /// Nothing measured runs here: the cost model chooses.
    Model,
}

/// What decides an `Auto` call's pick, exactly: the pick's key and the length, hence its
/// size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Signature {
    collective: Collective,
    len: usize,
    elem_bytes: usize,
    commutative: bool,
    /// A user operator (or element type) the backend's own call cannot run
    /// ([`Op::backend_knows`]): never the same call as a built-in's that ran native.
    user_op: bool,
}

impl Signature {
    #[inline]
    pub fn of<T: Pod>(collective: Collective, len: usize, op: Option<&Op<'_, T>>) -> Signature {
        Signature {
            collective,
            len,
            elem_bytes: size_of::<T>(),
            commutative: op.map_or(true, |o| o.is_commutative()),
            user_op: op.is_some_and(|o| !o.backend_knows()),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct Key {
    kind: OpKind,
    elem_bytes: usize,
    commutative: bool,
    /// A reduction whose operator or element type the backend's own call does not
    /// know ([`Op::backend_knows`]): measured and kept apart, so that a user
    /// operator's picks (schedules only, priced with its combine) never stand for a
    /// built-in's, nor the other way.
    user_op: bool,
}

impl Key {
    /// The key of `collective` on elements of `T`, reduced by `op` if any.
    fn of<T: Pod>(collective: Collective, op: Option<&Op<'_, T>>) -> Key {
        Key {
            kind: collective.kind(),
            elem_bytes: size_of::<T>(),
            commutative: op.map_or(true, |o| o.is_commutative()),
            user_op: op.is_some_and(|o| !o.backend_knows()),
        }
    }

    /// Elements per block at size bucket `b` (at least one).
    fn elems_at(&self, b: usize) -> usize {
        bucket_bytes(b).div_ceil(self.elem_bytes).max(1)
    }

    /// The call of `collective` measured with `m` elements per block.
    fn call(&self, collective: Collective, m: usize) -> Call {
        Call {
            collective,
            len: m as u64,
            elem_bytes: self.elem_bytes,
            commutative: self.commutative,
            alias: None,
        }
    }

    /// `allreduce 8B commutative`, `alltoall 8B`, `reduce 16B ordered user`.
    fn name(&self) -> String {
        let order = match (self.kind.is_reduction(), self.commutative) {
            (false, _) => "",
            (true, true) => " commutative",
            (true, false) => " ordered",
        };
        let user = if self.user_op { " user" } else { "" };
        format!("{} {}B{order}{user}", self.kind.name(), self.elem_bytes)
    }
}

/// How the picks of one collective came about, for reports.
#[derive(Clone, Debug, PartialEq)]
pub struct Tuned {
    /// The collective, element size and, for reductions, whether the operator
    /// commutes and whether it is a user operator (`allreduce 8B commutative`,
    /// `alltoall 8B`, `reduce 16B ordered user`).
    pub key: String,
    /// The pick at each measured size: (bytes, algorithm or `native`).
    pub picks: Vec<(usize, &'static str)>,
    /// Seconds the measurement took (0 when read from the file).
    pub measured_for: f64,
    /// The sizes (bytes) the measurement's budget left out ([`Comm::set_tuning_budget`]):
    /// they took the largest measured size's pick. Empty when read from the file.
    pub left_out: Vec<usize>,
    /// The file the picks were read from or written to, if any.
    pub file: Option<PathBuf>,
}

/// A communicator's measured picks.
#[derive(Default)]
pub(crate) struct Tuner {
    pub policy: Tuning,
    picks: FxHashMap<Key, [Pick; BUCKETS]>,
    /// The picks of the last key looked up: a loop of the same call skips the map.
    last: Option<(Key, [Pick; BUCKETS])>,
    /// The last `Auto` call whose pick was native: the same call again (the same
    /// collective and root, length, element size and operator commutativity, so the
    /// same key and size) runs native without the look-up ([`Comm::pick`] is skipped).
    /// The picks of a key never change once made, and a new [`Tuning`] starts a new
    /// `Tuner`, so this never holds a pick that is no longer the call's.
    pub native_at: Option<Signature>,
    /// The measured routes of `Auto` calls in an `immediate::scope`, by key.
    routes: FxHashMap<Key, [Route; BUCKETS]>,
    pub reports: Vec<Tuned>,
    /// [`Comm::set_tuning_budget`]'s seconds; `None`: [`BUDGET_ENV`] or [`BUDGET`].
    pub budget: Option<f64>,
    /// Tests: this rank's [`BUDGET_ENV`] in place of the process's (`Some(None)`: unset).
    #[cfg(test)]
    pub budget_env: Option<Option<String>>,
}

/// The tuning file's contents: picks by collective key, one name per size.
#[derive(Serialize, Deserialize, Default)]
struct File {
    /// The backend and machine it was measured on.
    machine: String,
    /// How the picks were measured ([`CHOOSER`]; 0 in files written before it).
    #[serde(default)]
    chooser: u32,
    /// Sizes in bytes, one per pick.
    sizes: Vec<usize>,
    picks: BTreeMap<String, Vec<String>>,
}

fn bucket(bytes: usize) -> usize {
    let log = if bytes <= 1 {
        0
    } else {
        // Nearest power of two: round log2 half up.
        let l = usize::BITS - 1 - bytes.leading_zeros();
        if bytes - (1usize << l) >= (1usize << l) / 2 {
            l + 1
        } else {
            l
        }
    };
    (log.clamp(MIN_LOG, MAX_LOG) - MIN_LOG) as usize
}

/// This rank's input and output lengths of `collective` on `k` ranks, `m` per block.
fn buffer_lens(collective: Collective, k: u32, me: u32, m: usize) -> (u64, u64) {
    (
        collective.in_len(k, m as u64, me),
        collective.out_len(k, m as u64, me),
    )
}

/// The timed calls per schedule at a size of `bytes`: fewer for larger messages, about
/// 256 KiB moved per schedule, at least 3 and at most 100 (their trimmed mean), after
/// a fifth as many untimed: sub-µs calls need many to rise above a preempted one (with
/// at most 30, 2-rank all-reduce of 128 B picked recursive doubling in some runs and
/// native in others). Round 1 ([`screen_calls`]) takes a quarter of them, round 2
/// ([`final_calls`]) twice as many.
fn timed_calls(bytes: usize) -> u32 {
    (262_144 / bytes).clamp(3, 100) as u32
}

/// Round 1's timed calls per schedule: a quarter of [`timed_calls`], at least 2 (after
/// one untimed). Enough to tell a schedule 1.5× slower than the best from it; not enough
/// to choose between close ones, which round 2 does. From 32 KiB that is 2 calls of each
/// of up to 13 schedules. With 1 (to chooser 5), a 4-rank thread all-gather of 1–4 MiB
/// (fibers on 2 CPUs) measured ADEA, the model's best and timed first, at 1.2–2.7× of
/// `bench`'s time and never sent it to round 2; `bench` then found the TEA2 picks
/// 1.25–1.3× slower than ADEA (`docs/perf-log/2026-11-27-tuning-size-warmup.md`). With
/// 2 calls and 3 finalists it reached round 2 at 1–2 MiB in 2 of 3 runs, and a one-size
/// `bench` of a 4-rank MPI all-gather from an empty home took 6.3–6.6 s instead of
/// 4.8–5.1 (a third finalist only when near the fastest, `NEAR`, took back 8–16 %).
fn screen_calls(bytes: usize) -> u32 {
    (timed_calls(bytes) / 4).max(2)
}

/// Round 2's timed calls per finalist: twice [`timed_calls`], at least 12 beside a
/// native collective (with 3 calls from 128 KiB, schedules measured at most 0.95 of
/// native ran at 1.06–1.10 of it: 2-rank MPI broadcast of 128 KiB, all-to-all of 64 and
/// 128 KiB; 12 calls is what confirmed them before round 2 existed), 6 without.
fn final_calls(bytes: usize, native: bool) -> u32 {
    (2 * timed_calls(bytes)).max(if native { 12 } else { 6 })
}

/// The schedules round 1 screens for `call`: every fitting one that builds (and keeps
/// rank order if it must), in the model's order, at most [`SCREENED`]. Not the model's
/// few best only: with its default β and τ the model ranks by a line that is not the
/// machine's (`Calibration`), and a schedule it ranks last can be the fastest (4-rank
/// thread broadcast: `linear`, last of 5 at 16 KiB).
fn candidates(selector: &crate::select::Selector, call: Call) -> Vec<&'static Algorithm> {
    candidates_timed(selector, call).0
}

/// [`candidates`], and the mean of the model's seconds per call over those it prices
/// (0 when it prices none): what [`Budget`] plans with.
fn candidates_timed(
    selector: &crate::select::Selector,
    call: Call,
) -> (Vec<&'static Algorithm>, f64) {
    let kind = call.collective.kind();
    let timed = selector.ranked_timed(call, SCREENED);
    let mean = |t: &[(&'static Algorithm, f64)]| {
        let finite: Vec<f64> = t.iter().map(|x| x.1).filter(|x| x.is_finite()).collect();
        if finite.is_empty() {
            0.0
        } else {
            finite.iter().sum::<f64>() / finite.len() as f64
        }
    };
    if kind.is_varcount() {
        // The model ranks a variable-count schedule by its counts; measured with equal
        // counts, every fitting one is timed (3 to 5 of them).
        let all = selector.fitting(kind).into_iter().take(SCREENED).collect();
        return (all, mean(&timed));
    }
    let t = mean(&timed);
    (timed.into_iter().map(|(a, _)| a).collect(), t)
}

/// Environment variable: the seconds `auto`'s measurement of one collective may take
/// ([`Comm::set_tuning_budget`]); [`BUDGET`] when unset.
pub const BUDGET_ENV: &str = "HYPERCOMM_TUNING_BUDGET";

/// The seconds the measurement of one collective plans to take at most, by the cost
/// model's time of its calls, unless [`BUDGET_ENV`] says otherwise: a bound against
/// minutes, not a target. On this project's 2-core VMs the plan does not reach it (8
/// MPI ranks on 2 cores plan 1.4–12 s a collective, 1.4–2.8× what they take, 1.2–8.4
/// s; a budget of 5 or 10 s cut their all-gather's and all-to-all's calls); on a slow
/// network it does: two hosts of one machine whose ranks shared a core (1.7
/// ms a message over TCP) took 4 minutes to measure what takes 0.2–0.6 s at 5 µs a
/// message, and on a 1 Gb/s Ethernet (50 µs, 8 ns a byte) the plan of one collective on
/// 2 ranks is 13 s (set the variable lower to take less).
pub const BUDGET: f64 = 20.0;

/// `seconds` as a budget, refused unless a positive number (`text`: how it was given).
fn checked_budget(seconds: f64, text: &str) -> Result<f64> {
    if seconds.is_finite() && seconds > 0.0 {
        return Ok(seconds);
    }
    Err(Error::Environment {
        name: BUDGET_ENV,
        value: text.to_string(),
        valid: "seconds, a positive number (the measurement of one collective plans to \
                take at most that; default 20)",
    })
}

/// [`BUDGET_ENV`]'s value as a budget ([`checked_budget`]).
fn budget_from(value: &str) -> Result<f64> {
    let text = value.trim();
    checked_budget(text.parse().unwrap_or(f64::NAN), text)
}

/// What a report of [`Tuned`] adds when the budget left sizes out (`left_out`): from
/// which size on and how many, or nothing.
pub fn left_out_note(left_out: &[usize]) -> String {
    match left_out.first() {
        None => String::new(),
        Some(&from) => format!(
            " (from {from} B on, the budget ({BUDGET_ENV}) left {} sizes out: they take \
             the largest measured size's pick)",
            left_out.len()
        ),
    }
}

/// The least timed calls a finalist takes in rounds 2 and 3 when the budget cuts them.
const MIN_FINAL: u32 = 4;

/// How many calls rounds 2 and 3 time at each size, and which sizes are measured at
/// all, so that the measurement's planned time (the cost model's seconds per call,
/// times the calls of [`Comm::time_calls`], its barriers included) stays within a
/// budget. Under it, nothing changes ([`final_calls`]). Over it, rounds 2 and 3 take
/// fewer calls at every size, alike, down to [`MIN_FINAL`]; then the largest sizes are
/// left out, largest first (a size left out takes the largest measured size's pick, as
/// one too large to hold does). The smallest size is always measured. Every rank
/// plans from the same agreed times, so every rank makes the same calls.
#[derive(Clone, Debug, PartialEq)]
struct Budget {
    /// Round 2's and 3's timed calls per slot at each size.
    finals: [u32; BUCKETS],
    /// Whether each size is measured.
    measured: [bool; BUCKETS],
    /// The planned seconds.
    planned: f64,
}

/// Calls [`Comm::time_calls`] makes of each slot timing `iters` calls in blocks
/// ([`call_order`]): the timed ones, a fifth as many untimed first, one untimed to start
/// each further block.
fn calls_per_slot(iters: u32) -> f64 {
    let blocks = BLOCKS.min(iters).max(1);
    f64::from(iters + (iters / 5).max(1) + blocks - 1)
}

impl Budget {
    /// The plan for sizes whose slots of round 1 number `slots[b]` (native included; 0:
    /// not measured here) at a planned `per_call[b]` seconds each (a call and its
    /// barrier), with native beside the schedules when `native`.
    fn plan(
        slots: &[usize; BUCKETS],
        per_call: &[f64; BUCKETS],
        native: bool,
        budget: f64,
    ) -> Budget {
        let finals_default: [u32; BUCKETS] =
            std::array::from_fn(|b| final_calls(bucket_bytes(b), native));
        let warm = f64::from(SIZE_WARMUP);
        let round1 = |b: usize| {
            per_call[b] * (slots[b] as f64 * calls_per_slot(screen_calls(bucket_bytes(b))) + warm)
        };
        // Rounds 2 and 3 at `iters`: native and the finalists in blocks, then one
        // schedule against native call by call.
        let later = |b: usize, iters: u32| {
            let finalists = slots[b].min(FINALISTS + 1) as f64;
            let turns = 2.0 * f64::from(iters + (iters / 5).max(1));
            per_call[b] * (finalists * calls_per_slot(iters) + warm + turns)
        };
        let active = |b: usize| slots[b] > 0;
        let total = |finals: &[u32; BUCKETS], measured: &[bool; BUCKETS]| -> f64 {
            (0..BUCKETS)
                .filter(|&b| active(b) && measured[b])
                .map(|b| round1(b) + later(b, finals[b]))
                .sum()
        };
        let mut measured = [true; BUCKETS];
        let mut finals = finals_default;
        let planned = total(&finals, &measured);
        if planned <= budget {
            return Budget {
                finals,
                measured,
                planned,
            };
        }
        // Fewer calls in rounds 2 and 3, alike at every size.
        let first: f64 = (0..BUCKETS).filter(|&b| active(b)).map(round1).sum();
        let rest: f64 = (0..BUCKETS)
            .filter(|&b| active(b))
            .map(|b| later(b, finals_default[b]))
            .sum();
        let share = ((budget - first) / rest).clamp(0.0, 1.0);
        for (f, d) in finals.iter_mut().zip(finals_default) {
            *f = ((f64::from(d) * share) as u32).clamp(MIN_FINAL.min(d), d);
        }
        // Then the largest sizes out, down to the smallest measured one.
        let mut planned = total(&finals, &measured);
        let smallest = (0..BUCKETS).find(|&b| active(b)).unwrap_or(0);
        for b in (smallest + 1..BUCKETS).rev() {
            if planned <= budget {
                break;
            }
            if active(b) {
                measured[b] = false;
                planned = total(&finals, &measured);
            }
        }
        Budget {
            finals,
            measured,
            planned,
        }
    }
}

/// The indices of the `n` least finite `times` (fastest first; the earlier index, the
/// model's better rank, on a tie), past the second only those within [`NEAR`] of the
/// fastest. A schedule that refused the call (infinite) is none.
fn finalists(times: &[f64], n: usize) -> Vec<usize> {
    let mut order: Vec<usize> = (0..times.len()).filter(|&i| times[i].is_finite()).collect();
    order.sort_by(|&a, &b| times[a].total_cmp(&times[b]));
    let near = order.first().map_or(0.0, |&i| NEAR * times[i]);
    order
        .into_iter()
        .take(n)
        .enumerate()
        .filter(|&(place, i)| place < 2 || times[i] <= near)
        .map(|(_, i)| i)
        .collect()
}

/// A third finalist goes to round 2 only if round 1 timed it within this factor of the
/// fastest: round 1's one or two calls had timed ADEA, which `bench` then found the
/// fastest, at 1.24–1.37 × the fastest at 1–4 MiB (4 thread ranks on 2 CPUs), while
/// re-timing a clearly slower third costs round 2 a third more calls (12 per finalist
/// beside native: most of a 4-rank MPI tuning's time at 1–4 MiB).
const NEAR: f64 = 1.5;

/// The pick from round 2's times: the fastest of `ours` (time, name), over native only
/// at or below [`MARGIN`] of native's time (or where native refused the call: infinite);
/// native where it ran and ours did not win; the model where nothing ran.
fn decide(native: f64, ours: &[(f64, &'static str)]) -> Pick {
    let best = ours
        .iter()
        .filter(|(t, _)| t.is_finite())
        .min_by(|a, b| a.0.total_cmp(&b.0));
    match best {
        Some(&(t, name)) if !native.is_finite() || t <= MARGIN * native => Pick::Named(name),
        _ if native.is_finite() => Pick::Native,
        _ => Pick::Model,
    }
}

/// A finalist's round-2 time `second` as [`decide`] weighs it: beside a native
/// collective that ran in round 1 (`native`), only if the finalist's round-1 time
/// `first` was also at most [`MARGIN`] of native's there, otherwise infinite (it does not
/// take native's place). One round can be won by noise: on 8 ranks sharing 2 cores,
/// a `linear` broadcast of 8–64 B won round 2 against `MPI_Bcast` and then ran at
/// 1.6–2.2× of it (`docs/perf-log/2026-11-27-auto-vs-best.md`); a schedule truly faster
/// wins both.
fn both_rounds(native: f64, first: f64, second: f64) -> f64 {
    if !native.is_finite() || first <= MARGIN * native {
        second
    } else {
        f64::INFINITY
    }
}

fn bucket_bytes(b: usize) -> usize {
    1usize << (MIN_LOG as usize + b)
}

impl Tuner {
    pub fn new(policy: Tuning) -> Self {
        Tuner {
            policy,
            ..Tuner::default()
        }
    }

    fn file(&self, machine: Option<&str>) -> Option<PathBuf> {
        match &self.policy {
            Tuning::Off => None,
            Tuning::Measure { file: Some(f) } => Some(f.clone()),
            Tuning::Measure { file: None } => cache_file("tuning", machine?, "json"),
        }
    }
}

fn read(path: &Path) -> Option<File> {
    let text = std::fs::read_to_string(path).ok()?;
    serde_json::from_str(&text).ok()
}

/// Write atomically (a temporary file renamed), so concurrent jobs never read half a
/// file; under the file's [`Lock`], its directory made by the caller. Failures are
/// ignored: the picks then live in this process only.
fn write(path: &Path, file: &File) {
    let Ok(text) = serde_json::to_string_pretty(file) else {
        return;
    };
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    if std::fs::write(&tmp, text).is_ok() && std::fs::rename(&tmp, path).is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
}

/// A tuning file's lock: `<file>.lock`, made with `O_EXCL` and removed when dropped.
/// A writer waits for it up to [`Lock::PATIENCE`]; a lock still there then was left by
/// a job that died while writing, and is taken over. No lock (a directory that cannot
/// be written) is a save without one: the picks are only a cache.
struct Lock(Option<PathBuf>);

impl Lock {
    const PATIENCE: std::time::Duration = std::time::Duration::from_secs(2);

    fn take(path: &Path) -> Lock {
        let lock = path.with_extension("lock");
        let start = Instant::now();
        loop {
            match std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&lock)
            {
                Ok(_) => return Lock(Some(lock)),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    if start.elapsed() > Self::PATIENCE {
                        // Left by a writer that died: taken over (ours is removed at
                        // the end like any other).
                        return Lock(Some(lock));
                    }
                    std::thread::sleep(std::time::Duration::from_millis(1));
                }
                Err(_) => return Lock(None),
            }
        }
    }
}

impl Drop for Lock {
    fn drop(&mut self) {
        if let Some(lock) = &self.0 {
            let _ = std::fs::remove_file(lock);
        }
    }
}

/// What [`Comm::saved_codes`] found: the codes, and where to save new picks.
struct Saved {
    codes: [u16; BUCKETS],
    path: Option<PathBuf>,
    machine: Option<String>,
    rank0: bool,
}

impl Saved {
    /// Rank 0 writes `names` under `key` into its file (made if it had none), as the
    /// file is now: picks that another job or communicator saved while this one
    /// measured are kept. The read and the write are made under a lock file
    /// ([`Lock`]), so that two writers at once (jobs, or one-rank communicators of a
    /// split) never lose each other's picks.
    fn save(self, key: String, names: impl Iterator<Item = String>) {
        let (Some(path), true) = (&self.path, self.rank0) else {
            return;
        };
        let machine = self.machine;
        if let Some(dir) = path.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        let _lock = Lock::take(path);
        let now = read(path).filter(|f| fits(f, &machine));
        let mut f = now.unwrap_or_else(|| File {
            machine: machine.unwrap_or_default(),
            chooser: CHOOSER,
            sizes: sizes(),
            picks: BTreeMap::new(),
        });
        f.picks.insert(key, names.collect());
        write(path, &f);
    }
}

/// The code of the fitting algorithm named `n` (its index), [`CODE_NONE`] if none.
fn code_of(n: &str, fitting: &[&'static Algorithm]) -> u16 {
    fitting
        .iter()
        .position(|a| a.name == n)
        .map_or(CODE_NONE, |i| i as u16)
}

impl<X: Transport> Comm<X> {
    /// Measure every `Auto` choice from now on (the MPI backend's default), or not.
    pub fn set_tuning(&mut self, tuning: Tuning) {
        let budget = self.tuner.budget;
        self.tuner = Tuner::new(tuning);
        self.tuner.budget = budget;
    }

    /// The seconds `auto`'s measurement of one collective plans to take at most, by the
    /// cost model's time of its calls ([`BUDGET`] by default, or [`BUDGET_ENV`]): over
    /// it, fewer calls per schedule at every size, then the largest sizes left out (they
    /// take the largest measured size's pick). The ranks plan with the largest budget
    /// any of them was given (here or by the variable; none: [`BUDGET`]), and a bad
    /// variable on any rank fails every rank. The picks of sizes left out go to the
    /// tuning file with the others, so later jobs read them: remove the file (or name
    /// another, [`TUNING_ENV`]) to measure them under a larger budget.
    ///
    /// # Errors
    /// [`Error::Environment`] when `seconds` is not a positive number.
    pub fn set_tuning_budget(&mut self, seconds: f64) -> Result<()> {
        self.tuner.budget = Some(checked_budget(seconds, &seconds.to_string())?);
        Ok(())
    }

    /// How the measured picks so far came about (empty without [`Tuning::Measure`]).
    pub fn tuned(&self) -> &[Tuned] {
        &self.tuner.reports
    }

    /// The measured pick for an `Auto` call, measuring (collectively) if this
    /// collective has not been measured yet; `None` without tuning. Inlined where the
    /// key is the last one looked up (a loop of calls): no result through memory.
    #[inline(always)]
    pub(crate) fn pick<T: Pod>(
        &mut self,
        collective: Collective,
        len: usize,
        op: Option<&Op<'_, T>>,
    ) -> Result<Option<Pick>> {
        // `last` is set only past the checks below, and `set_tuning` clears it.
        if let Some((last, picks)) = &self.tuner.last {
            if *last == Key::of(collective, op) {
                return Ok(Some(picks[bucket(len.saturating_mul(last.elem_bytes))]));
            }
        }
        self.pick_looked_up(collective, len, op)
    }

    /// [`Comm::pick`] of another key than the last.
    #[inline(never)]
    fn pick_looked_up<T: Pod>(
        &mut self,
        collective: Collective,
        len: usize,
        op: Option<&Op<'_, T>>,
    ) -> Result<Option<Pick>> {
        // One rank sends nothing: its schedules and the backend's own call are local
        // copies (or nothing), which only differ where the backend has a call of its
        // own (MPI's: 2–2.7× faster than a schedule's plan at 8 B–1 MiB on 1 Open MPI
        // rank, 1.4–1.6× slower from 1 MiB, its copy not `memcpy`): measured then.
        let alone = self.size() == 1 && !self.transport.has_native();
        if self.tuner.policy == Tuning::Off || alone || self.size() > MAX_RANKS {
            return Ok(None);
        }
        let key = Key::of(collective, op);
        // The collectives that MPI has too, the variable-count ones measured with every
        // count `len` (all but all-to-allv: [`Comm::v_auto_with`]); the others are the
        // model's.
        if !matches!(
            key.kind,
            OpKind::Broadcast
                | OpKind::Scatter
                | OpKind::Gather
                | OpKind::Allgather
                | OpKind::Alltoall
                | OpKind::Reduce
                | OpKind::Allreduce
                | OpKind::Scan
                | OpKind::ExclusiveScan
                | OpKind::ReduceScatter
                | OpKind::Gatherv
                | OpKind::Scatterv
                | OpKind::Allgatherv
                | OpKind::ReduceScatterv
        ) {
            return Ok(None);
        }
        let b = bucket(len.saturating_mul(key.elem_bytes));
        let picks = match self.tuner.picks.get(&key) {
            Some(picks) => *picks,
            None => {
                let picks = self.tune(collective, key, op)?;
                self.tuner.picks.insert(key, picks);
                picks
            }
        };
        self.tuner.last = Some((key, picks));
        Ok(Some(picks[b]))
    }

    /// The picks of `key`: rank 0's file's if it has them all, else measured.
    fn tune<T: Pod>(
        &mut self,
        collective: Collective,
        key: Key,
        op: Option<&Op<'_, T>>,
    ) -> Result<[Pick; BUCKETS]> {
        let start = Instant::now();
        let fitting = self.selector.fitting(key.kind);
        let saved = self.saved_codes(&key.name(), |n| {
            if n == NATIVE {
                CODE_NATIVE
            } else if n == MODEL {
                CODE_MODEL
            } else {
                code_of(n, &fitting)
            }
        })?;
        let path = saved.path.clone();
        let (picks, measured_for, left_out) = if saved.codes.iter().all(|&c| c != CODE_NONE) {
            (saved.codes.map(|c| decode(c, &fitting)), 0.0, Vec::new())
        } else {
            let (picks, left_out) = self.measure(collective, key, op)?;
            saved.save(key.name(), picks.iter().map(|p| name_of(*p).to_string()));
            (picks, start.elapsed().as_secs_f64(), left_out)
        };
        self.tuner.reports.push(Tuned {
            key: key.name(),
            picks: picks
                .iter()
                .enumerate()
                .map(|(b, p)| (bucket_bytes(b), name_of(*p)))
                .collect(),
            measured_for,
            left_out,
            file: path,
        });
        Ok(picks)
    }

    /// Rank 0's tuning file's picks under `name`, one code per size by `encode`
    /// ([`CODE_NONE`] where it has none), broadcast: the same codes on every rank.
    fn saved_codes(&mut self, name: &str, encode: impl Fn(&str) -> u16) -> Result<Saved> {
        let machine = self.transport.machine_key();
        let path = self.tuner.file(machine.as_deref());
        let mut codes = [CODE_NONE; BUCKETS];
        if self.rank() == 0 {
            let file = path.as_deref().and_then(read).filter(|f| fits(f, &machine));
            if let Some(names) = file.as_ref().and_then(|f| f.picks.get(name)) {
                for (c, n) in codes.iter_mut().zip(names) {
                    *c = encode(n);
                }
            }
        }
        self.broadcast_into(0, &mut codes, Algo::Named("binomial"))?;
        Ok(Saved {
            codes,
            path,
            machine,
            rank0: self.rank() == 0,
        })
    }

    /// Time native and every schedule that fits at every size, in two rounds; the
    /// agreed picks.
    ///
    /// Round 1 screens native and every fitting schedule ([`candidates`]) with few calls
    /// ([`screen_calls`]); round 2 times native and the [`FINALISTS`] fastest of round 1
    /// again, with more calls ([`final_calls`]), and picks from round 2 alone
    /// ([`decide`]). Each round ends with an all-reduce of its times (their maximum over
    /// the ranks), so every rank takes the same finalists and the same picks.
    fn measure<T: Pod>(
        &mut self,
        collective: Collective,
        key: Key,
        op: Option<&Op<'_, T>>,
    ) -> Result<([Pick; BUCKETS], Vec<usize>)> {
        let k = self.size();
        // The candidates at every size, and the plan of the calls within the budget
        // ([`Budget`]), from the model's times agreed over the ranks (their maximum;
        // the budget's too), so that every rank makes the same calls.
        let mut cands: Vec<Vec<&'static Algorithm>> = Vec::with_capacity(BUCKETS);
        // The model's seconds a call at each size, then the budget and a bad value's flag.
        let mut times = vec![0.0f64; BUCKETS + 2];
        for (b, time) in times[..BUCKETS].iter_mut().enumerate() {
            let m = key.elems_at(b);
            if !measurable(collective, k, m, key.elem_bytes) {
                cands.push(Vec::new());
                continue;
            }
            let (all, t) = candidates_timed(&self.selector, key.call(collective, m));
            *time = t;
            cands.push(all);
        }
        // The budget: this rank's (-1 unset), and whether its variable is bad, agreed
        // before anyone returns, so that a bad value on one host (not exported with
        // `-x`) fails every rank instead of leaving the others in the agreement.
        let env = std::env::var(BUDGET_ENV).ok();
        #[cfg(test)]
        let env = self.tuner.budget_env.clone().unwrap_or(env);
        let mine = match (self.tuner.budget, env) {
            (Some(b), _) => Ok(b),
            (None, Some(v)) => budget_from(&v),
            (None, None) => Ok(-1.0),
        };
        times[BUCKETS] = *mine.as_ref().unwrap_or(&-1.0);
        times[BUCKETS + 1] = if mine.is_err() { 1.0 } else { 0.0 };
        let times = self.agree(&times)?;
        if times[BUCKETS + 1] > 0.0 {
            return Err(mine.err().unwrap_or(Error::Environment {
                name: BUDGET_ENV,
                value: "(another rank's)".into(),
                valid: "seconds, a positive number, on every rank (export it to every \
                        host, mpirun -x)",
            }));
        }
        // The largest any rank was given; none: the default.
        let given = if times[BUCKETS] > 0.0 {
            times[BUCKETS]
        } else {
            BUDGET
        };
        // A call's barrier costs about the smallest size's call.
        let barrier = times[..BUCKETS]
            .iter()
            .copied()
            .find(|&t| t > 0.0)
            .unwrap_or(0.0);
        let per_call: [f64; BUCKETS] = std::array::from_fn(|b| times[b] + barrier);
        let slots: [usize; BUCKETS] = std::array::from_fn(|b| {
            if cands[b].is_empty() {
                0
            } else {
                cands[b].len() + 1
            }
        });
        let budget = Budget::plan(&slots, &per_call, self.transport.has_native(), given);
        if logging() && self.rank() == 0 {
            let out: Vec<String> = (0..BUCKETS)
                .filter(|&b| slots[b] > 0 && !budget.measured[b])
                .map(|b| bucket_bytes(b).to_string())
                .collect();
            eprintln!(
                "hypercomm tuning: {} planned {:.3} s (budget {} s, {BUDGET_ENV}); finalists' \
                 calls {:?}; sizes left out: {}",
                key.name(),
                budget.planned,
                given,
                budget.finals,
                if out.is_empty() {
                    "none".to_string()
                } else {
                    out.join(" ")
                }
            );
        }
        for (b, all) in cands.iter_mut().enumerate() {
            if !budget.measured[b] {
                all.clear();
            }
        }
        // Round 1: native and every candidate, slot 0 native.
        const WIDE: usize = SCREENED + 1;
        let mut screened = vec![f64::INFINITY; BUCKETS * WIDE];
        for (b, all) in cands.iter().enumerate() {
            if all.is_empty() {
                continue;
            }
            let (bytes, m) = (bucket_bytes(b), key.elems_at(b));
            let slots: Vec<Algo<'_>> = std::iter::once(Algo::Named(NATIVE))
                .chain(all.iter().map(|a| Algo::Named(a.name)))
                .collect();
            let calls = screen_calls(bytes);
            let got = trimmed(self.time_sized(collective, m, op, &slots, calls, Order::Blocks)?);
            screened[b * WIDE..b * WIDE + got.len()].copy_from_slice(&got);
        }
        let screened = self.agree(&screened)?;
        let log = logging() && self.rank() == 0;
        if log {
            for (b, all) in cands.iter().enumerate().filter(|(_, a)| !a.is_empty()) {
                let names = all.iter().map(|a| a.name);
                log_round(&key, "round 1", b, names, &screened[b * WIDE..]);
            }
        }
        // Round 2: native and the finalists, slot 0 native.
        const NARROW: usize = FINALISTS + 1;
        // Each size's finalists, as indices into its candidates.
        let mut finals: Vec<Vec<usize>> = Vec::with_capacity(BUCKETS);
        let mut timed = vec![f64::INFINITY; BUCKETS * NARROW];
        for (b, all) in cands.iter().enumerate() {
            let row = &screened[b * WIDE + 1..b * WIDE + 1 + all.len()];
            let picked = finalists(row, FINALISTS);
            if !all.is_empty() {
                let (bytes, m) = (bucket_bytes(b), key.elems_at(b));
                let slots: Vec<Algo<'_>> = std::iter::once(Algo::Named(NATIVE))
                    .chain(picked.iter().map(|&i| Algo::Named(all[i].name)))
                    .collect();
                let native = screened[b * WIDE].is_finite();
                let calls = final_calls(bytes, native).min(budget.finals[b]);
                let got =
                    trimmed(self.time_sized(collective, m, op, &slots, calls, Order::Blocks)?);
                timed[b * NARROW..b * NARROW + got.len()].copy_from_slice(&got);
            }
            finals.push(picked);
        }
        let timed = self.agree(&timed)?;
        if log {
            for (b, picked) in finals.iter().enumerate().filter(|(_, p)| !p.is_empty()) {
                let names = picked.iter().map(|&i| cands[b][i].name);
                log_round(&key, "round 2", b, names, &timed[b * NARROW..]);
            }
        }
        let mut picks: [Pick; BUCKETS] = std::array::from_fn(|b| {
            let t = &timed[b * NARROW..(b + 1) * NARROW];
            let round1 = &screened[b * WIDE..(b + 1) * WIDE];
            let ours: Vec<(f64, &'static str)> = finals[b]
                .iter()
                .zip(&t[1..])
                .map(|(&i, &x)| (both_rounds(round1[0], round1[1 + i], x), cands[b][i].name))
                .collect();
            decide(t[0], &ours)
        });
        // Round 3: a schedule that takes native's place, against native call by call,
        // by both statistics: [native trimmed, ours trimmed, native median, ours median].
        let mut checked = vec![f64::INFINITY; BUCKETS * 4];
        for (b, pick) in picks.iter().enumerate() {
            if let (Pick::Named(name), true) = (*pick, screened[b * WIDE].is_finite()) {
                let (bytes, m) = (bucket_bytes(b), key.elems_at(b));
                let slots = [Algo::Named(NATIVE), Algo::Named(name)];
                let calls = final_calls(bytes, true).min(budget.finals[b]);
                let got = self.time_sized(collective, m, op, &slots, calls, Order::Turns)?;
                checked[b * 4..b * 4 + 4].copy_from_slice(&[
                    got[0].trimmed,
                    got[1].trimmed,
                    got[0].median,
                    got[1].median,
                ]);
            }
        }
        let checked = self.agree(&checked)?;
        for (b, pick) in picks.iter_mut().enumerate() {
            if let (Pick::Named(name), true) = (*pick, screened[b * WIDE].is_finite()) {
                let c = &checked[b * 4..b * 4 + 4];
                if log {
                    let (t, m) = (format!("{name} trimmed"), format!("{name} median"));
                    let slots = [
                        ("native trimmed", c[0]),
                        (t.as_str(), c[1]),
                        ("native median", c[2]),
                        (m.as_str(), c[3]),
                    ];
                    eprintln!("{}", log_line(&key, "round 3", bucket_bytes(b), &slots));
                }
                let native = Summary {
                    trimmed: c[0],
                    median: c[2],
                };
                let ours = Summary {
                    trimmed: c[1],
                    median: c[3],
                };
                *pick = confirmed(*pick, native, ours);
            }
        }
        // A size too large to measure here takes the pick of the largest measured one
        // below it (the model alone picked 5× slower than native for an 8-rank
        // all-gather of 4 MiB, past the buffer cap).
        for b in 1..BUCKETS {
            if cands[b].is_empty() && picks[b] == Pick::Model {
                picks[b] = picks[b - 1];
            }
        }
        if log {
            let all: Vec<String> = picks
                .iter()
                .enumerate()
                .map(|(b, p)| format!("{} {}", bucket_bytes(b), name_of(*p)))
                .collect();
            eprintln!("hypercomm tuning: {} picks: {}", key.name(), all.join(", "));
        }
        let left_out = (0..BUCKETS)
            .filter(|&b| slots[b] > 0 && !budget.measured[b])
            .map(bucket_bytes)
            .collect();
        Ok((picks, left_out))
    }

    /// Every rank's `times`, their maximum over the ranks (the slowest rank's time of
    /// each call), the same on every rank.
    fn agree(&mut self, times: &[f64]) -> Result<Vec<f64>> {
        let mut agreed = vec![0.0f64; times.len()];
        self.all_reduce_into(
            times,
            &mut agreed,
            &Op::max(),
            Algo::Named("recursive-doubling"),
        )?;
        Ok(agreed)
    }

    /// [`Comm::time_calls`] of `algos` on buffers of `m` elements per block.
    fn time_sized<T: Pod>(
        &mut self,
        collective: Collective,
        m: usize,
        op: Option<&Op<'_, T>>,
        algos: &[Algo<'_>],
        iters: u32,
        order: Order,
    ) -> Result<Vec<Summary>> {
        self.time_on_buffers(collective, m, algos.len(), iters, order, |comm, a, i, o| {
            comm.call_once(collective, i, o, op, algos[a])
        })
    }

    /// [`Comm::time_calls`] of `n` slots, `call(comm, slot, input, output)` on this
    /// rank's buffers of `collective` with `m` elements per block (the input's pages
    /// written: [`back_with_memory`]).
    fn time_on_buffers<T: Pod>(
        &mut self,
        collective: Collective,
        m: usize,
        n: usize,
        iters: u32,
        order: Order,
        mut call: impl FnMut(&mut Self, usize, &[T], &mut [T]) -> Result<()>,
    ) -> Result<Vec<Summary>> {
        let (in_len, out_len) = buffer_lens(collective, self.size(), self.rank(), m);
        let mut input = vec![T::zeroed(); in_len as usize];
        let mut output = vec![T::zeroed(); out_len as usize];
        back_with_memory(bytemuck::cast_slice_mut(&mut input));
        self.time_calls(n, iters, order, |comm, a| {
            call(comm, a, &input, &mut output)
        })
    }

    /// This rank's time of one call of each of `n` slots (algorithms, or ways to run
    /// one), in order: the mean over `iters` timed calls with the slowest [`TRIM`] of
    /// them left out, and their median ([`Summary`]), or infinity for a slot that
    /// refuses the call here ([`Error::Native`]: native without a native collective, or
    /// for this type or operator; the same refusal happens on every rank). The calls go in
    /// the order of [`call_order`]: each algorithm's in a few blocks of back-to-back
    /// calls, the algorithms taking turns block by block, so a change of load during the
    /// measurement weighs on all of them alike, while each is timed in a run of its own
    /// calls as an application's loop (and `bench`) runs it. A barrier goes before each
    /// call and after the last. Leaving out the slowest few calls drops the ones that
    /// lost a time slice to another process, while a schedule that stalls often still
    /// pays for it. `call(comm, slot)` makes one call ([`Comm::call_once`] on the
    /// size's buffers).
    fn time_calls(
        &mut self,
        n: usize,
        iters: u32,
        order: Order,
        mut call: impl FnMut(&mut Self, usize) -> Result<()>,
    ) -> Result<Vec<Summary>> {
        let mut calls: Vec<Vec<f64>> = vec![Vec::with_capacity(iters as usize); n];
        let mut refused = vec![false; n];
        // A size's first calls are slow whatever runs them: [`SIZE_WARMUP`] untimed
        // calls of the first algorithm that runs here, before any is timed.
        'warm: for (a, no) in refused.iter_mut().enumerate() {
            for _ in 0..SIZE_WARMUP {
                self.barrier()?;
                match call(self, a) {
                    Ok(()) => {}
                    // Refused before anything is sent, alike on every rank: native
                    // without a collective for this call, or a schedule that would
                    // reorder a non-commuting operator's operands (a variable-count
                    // candidate is every fitting schedule, `ring` among them).
                    Err(Error::Native { .. } | Error::NotOrderPreserving { .. }) => {
                        *no = true;
                        continue 'warm;
                    }
                    Err(e) => return Err(e),
                }
            }
            break;
        }
        for (a, timed) in call_order(n, iters, order) {
            if refused[a] {
                continue;
            }
            self.barrier()?;
            let t = Instant::now();
            match call(self, a) {
                Ok(()) => {}
                Err(Error::Native { .. } | Error::NotOrderPreserving { .. }) => {
                    refused[a] = true;
                    continue;
                }
                Err(e) => return Err(e),
            }
            if timed {
                calls[a].push(t.elapsed().as_secs_f64());
            }
        }
        // No rank leaves before the last call has ended everywhere: a rank that goes on
        // (to free these buffers, allocate the next size's) while its peers are still in
        // the last call slows that call 10-80× (4 ranks on 2 CPUs, a linear broadcast of
        // 128 KiB: 89-674 µs instead of 8), and with 1 or 2 timed calls per schedule
        // from 128 KiB that call was most of a schedule's time: the one timed last lost.
        self.barrier()?;
        Ok(calls
            .iter_mut()
            .zip(&refused)
            .map(|(xs, &no)| {
                if no {
                    Summary::REFUSED
                } else {
                    Summary::of(xs)
                }
            })
            .collect())
    }

    /// One call of `collective` through the public entry points (root and operator as
    /// given; non-reductions ignore `op`).
    fn call_once<T: Pod>(
        &mut self,
        collective: Collective,
        input: &[T],
        output: &mut [T],
        op: Option<&Op<'_, T>>,
        algo: Algo<'_>,
    ) -> Result<()> {
        let me = self.rank();
        let need_op = || {
            op.ok_or_else(|| Error::Native {
                op: collective.kind().to_string(),
                reason: "no operator to measure with".into(),
            })
        };
        match collective {
            // The root's output holds its input already: both are zeroes
            // ([`Comm::time_sized`]), and a broadcast leaves the root's buffer as it was.
            Collective::Broadcast { root } => self.broadcast_into(root, output, algo)?,
            Collective::Scatter { root } => {
                self.scatter_into(root, (me == root).then_some(input), output, algo)?
            }
            Collective::Gather { root } => {
                self.gather_into(root, input, (me == root).then_some(output), algo)?
            }
            Collective::Allgather => self.all_gather_into(input, output, algo)?,
            Collective::Alltoall => self.all_to_all_into(input, output, algo)?,
            Collective::Reduce { root } => {
                let op = need_op()?;
                self.reduce_into(root, input, (me == root).then_some(output), op, algo)?
            }
            Collective::Allreduce => self.all_reduce_into(input, output, need_op()?, algo)?,
            Collective::Scan => self.scan_into(input, output, need_op()?, algo)?,
            Collective::ExclusiveScan => {
                self.exclusive_scan_into(input, output, need_op()?, algo)?
            }
            Collective::ReduceScatter => {
                self.reduce_scatter_block_into(input, output, need_op()?, algo)?
            }
            // The variable-count forms with every count the block of `input` (or of
            // `output`, for the forms whose input is the whole): as their fixed-count
            // forms' buffers ([`buffer_lens`]).
            Collective::Gatherv { root } => {
                let counts = equal_counts(self.size(), input.len());
                let out = (me == root).then_some(output);
                self.gatherv_into(root, input, out, &counts, algo)?
            }
            Collective::Scatterv { root } => {
                let counts = equal_counts(self.size(), output.len());
                let send = (me == root).then_some(input);
                self.scatterv_into(root, send, output, &counts, algo)?
            }
            Collective::Allgatherv => {
                let counts = equal_counts(self.size(), input.len());
                self.all_gatherv_into(input, output, &counts, algo)?
            }
            Collective::ReduceScatterv => {
                let counts = equal_counts(self.size(), output.len());
                self.reduce_scatter_into(input, output, &counts, need_op()?, algo)?
            }
            _ => {
                return Err(Error::Native {
                    op: collective.kind().to_string(),
                    reason: "not measured".into(),
                })
            }
        };
        Ok(())
    }
}

/// `k` counts of `m` each, on the stack up to [`MAX_RANKS`] (a measured call allocates
/// nothing more than the call it measures).
fn equal_counts(k: u32, m: usize) -> smallvec::SmallVec<[usize; MAX_RANKS as usize]> {
    smallvec::smallvec![m; k as usize]
}

/// Write every page of `buf` (zeroes, as it holds): a large zeroed allocation is pages
/// the kernel maps on first touch, and until written every one of them reads as the
/// same shared page of zeroes, which stays in the cache. A schedule that reads much of
/// its input then ran 2-3× faster than on real data: a 2-rank all-reduce of 1 MiB by
/// dimension exchange measured 35 µs in round 1 (its buffers new) and 80-107 µs in
/// round 2 and in `bench` (whose input is written), so ring (96 µs in `bench`, 65 in
/// round 1) was never a finalist.
fn back_with_memory(buf: &mut [u8]) {
    for i in (0..buf.len()).step_by(4096) {
        // SAFETY: `i` is in bounds; a volatile write is not elided, though it writes the
        // zero the allocation already holds.
        unsafe { std::ptr::write_volatile(buf.as_mut_ptr().add(i), 0) };
    }
}

/// The blocks of calls per algorithm in [`Comm::time_calls`].
const BLOCKS: u32 = 4;

/// Untimed calls at a size before [`Comm::time_calls`] times any: the first calls
/// on new buffers are slow whatever algorithm makes them. On 4 thread ranks on 2 CPUs
/// (fibers), `bench --iters 1 --warmup 1` timed a 1 MiB all-gather that went first at
/// 393–737 µs (ADEA) and 436–691 µs (TEA2), the one that went second at 279–498 µs;
/// after 3 untimed calls the first took 303–450 µs (not page faults: their count does
/// not change with the warm-up calls; not the allocator's `mmap` threshold). Round 1
/// times the model's best first (`docs/perf-log/2026-11-27-tuning-size-warmup.md`).
const SIZE_WARMUP: u32 = 3;

/// How [`Comm::time_calls`] orders its calls ([`call_order`]).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Order {
    /// Each algorithm's calls in blocks of back-to-back calls (a loop of one call).
    Blocks,
    /// The algorithms taking turns call by call (calls of several kinds mixed).
    Turns,
}

/// Round 3's verdict on `pick`, a schedule that took native's place in rounds 1 and 2
/// (timed in blocks): it keeps it only if, timed against native call by call, it took
/// at most [`MARGIN`] of native's time (`native`, `ours`) by the trimmed mean and by
/// the median alike, else native. By the median too, because `vs-native` reports
/// medians, and where native's calls have a heavier tail than the schedule's the two
/// disagree: on 2 MPICH ranks the tuning picked linear, bruck or pairwise all-to-alls
/// and recursive doubling all-reduces of 8–16 B by the trimmed mean, which `vs-native`
/// then measured at 1.06–1.11 × `MPI_Alltoall` and `MPI_Allreduce` by the median
/// (`docs/perf-log/2026-11-27-cross-core-states.md`). A loop of one
/// call and calls of several kinds mixed favour different schedules where ranks share
/// CPUs: on 8 MPI ranks on 2 cores, `linear` broadcasts of 8–32 B won both rounds in
/// blocks, then ran at 1.4–1.6× `MPI_Bcast` in `vs-native`'s turns
/// (`docs/perf-log/2026-11-27-tuning-last-call.md`). Native is the safe default: a
/// schedule replaces it only where it is faster both ways.
fn confirmed(pick: Pick, native: Summary, ours: Summary) -> Pick {
    if beats(native, ours) {
        pick
    } else {
        Pick::Native
    }
}

/// Whether `ours` took at most [`MARGIN`] of `native`'s time by the trimmed mean and by
/// the median alike (or native refused the call).
fn beats(native: Summary, ours: Summary) -> bool {
    let wins = |native: f64, ours: f64| !native.is_finite() || ours <= MARGIN * native;
    wins(native.trimmed, ours.trimmed) && wins(native.median, ours.median)
}

/// The calls [`Comm::time_calls`] makes, in order: (algorithm index, timed), `iters`
/// timed calls of each of `n` algorithms. Each algorithm's calls come in [`BLOCKS`]
/// blocks (fewer when `iters` is smaller) of back-to-back calls, the algorithms taking
/// turns block by block, who goes first rotating from block to block, so no algorithm
/// always follows the same one. Each block starts with untimed calls: iters / 5 (at
/// least 1) in an algorithm's first block, one in its others.
///
/// Untimed calls first: a library's first calls between two peers are slower (Open
/// MPI's shared-memory transport gives a pair its fast path after 16 messages): with one
/// untimed call, a 2-rank all-reduce of 8 B measured recursive doubling at most 0.95 of
/// native in 2 of 6 runs, and then ran at 2×. Blocks, not turns call by call: on 4
/// ranks sharing 2 CPUs, turns call by call ranked a binomial broadcast of 8–512 B first
/// where `bench`'s loop of each algorithm's calls measured NESBT 1.1–1.5× faster, and
/// blocks ranked them as `bench` did.
///
/// [`Order::Turns`] instead: the algorithms take turns call by call after iters / 5
/// untimed rounds, as `hypercomm-mpi vs-native` times native against ours.
fn call_order(n: usize, iters: u32, order: Order) -> Vec<(usize, bool)> {
    if order == Order::Turns {
        let warm = (iters / 5).max(1);
        return (0..warm + iters)
            .flat_map(|i| (0..n).map(move |j| ((j + i as usize) % n, i >= warm)))
            .collect();
    }
    let blocks = BLOCKS.min(iters).max(1);
    let warm = (iters / 5).max(1);
    let mut order = Vec::new();
    for b in 0..blocks {
        // This block's timed calls: iters split as evenly as can be.
        let timed = iters / blocks + u32::from(b < iters % blocks);
        let untimed = if b == 0 { warm } else { 1 };
        for j in 0..n {
            let a = (j + b as usize) % n;
            order.extend((0..untimed).map(|_| (a, false)));
            order.extend((0..timed).map(|_| (a, true)));
        }
    }
    order
}

/// The most bytes of buffers (`in` and `out`) a rank allocates to measure one size:
/// 256 MiB over the ranks (they may share one machine's memory), at least 1 MiB. Larger
/// sizes take the largest measured size's pick.
fn buffer_cap(k: u32) -> u64 {
    ((256u64 << 20) / u64::from(k.max(1))).max(1 << 20)
}

/// Whether a size of `m` elements per block is measured on `k` ranks: its buffers within
/// [`buffer_cap`] on every rank (every rank decides alike, by the largest any rank holds).
fn measurable(collective: Collective, k: u32, m: usize, elem_bytes: usize) -> bool {
    let most = (0..k)
        .map(|r| collective.in_len(k, m as u64, r) + collective.out_len(k, m as u64, r))
        .max()
        .unwrap_or(0);
    most.saturating_mul(elem_bytes as u64) <= buffer_cap(k)
}

/// Communicators of more ranks than this are left to the model (measuring them would
/// take longer than the measurement should).
pub const MAX_RANKS: u32 = 64;

/// Whether `f` was measured here and so: the same sizes, backend and machine (a file
/// named by `HYPERCOMM_TUNING` may come from elsewhere; its picks are then measured
/// again), by this [`CHOOSER`].
fn fits(f: &File, machine: &Option<String>) -> bool {
    f.sizes == sizes() && f.machine == machine.clone().unwrap_or_default() && f.chooser == CHOOSER
}

fn sizes() -> Vec<usize> {
    (0..BUCKETS).map(bucket_bytes).collect()
}

fn decode(code: u16, fitting: &[&'static Algorithm]) -> Pick {
    match code {
        CODE_NATIVE => Pick::Native,
        CODE_MODEL => Pick::Model,
        c => fitting
            .get(c as usize)
            .map_or(Pick::Model, |a| Pick::Named(a.name)),
    }
}

fn name_of(p: Pick) -> &'static str {
    match p {
        Pick::Native => NATIVE,
        Pick::Named(n) => n,
        Pick::Model => MODEL,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::comm::tests::NativeOnly;
    use crate::select::Calibration;

    /// What an `Auto` call ran: native, or a schedule (whose first send fails here).
    fn ran(got: Result<crate::Ran>) -> &'static str {
        match got {
            Ok(ran) => {
                assert!(ran.auto);
                ran.algorithm
            }
            Err(Error::PeerFailed { rank: 1 }) => "schedule",
            Err(e) => panic!("{e}"),
        }
    }

    #[test]
    fn the_native_fast_path_never_returns_a_stale_pick() {
        let mut comm = Comm::new(NativeOnly::new(|_| {}), Calibration::default());
        comm.set_tuning(Tuning::measure());
        let key = |kind| Key {
            kind,
            elem_bytes: 8,
            commutative: true,
            user_op: false,
        };
        // All-reduce: native at 8 B (bucket 0), a schedule at 16 B (bucket 1) and
        // from 32 B the model's; all-gather: a schedule at 8 B, native at 16 B.
        let mut reduce = [Pick::Model; BUCKETS];
        reduce[0] = Pick::Native;
        reduce[1] = Pick::Named("recursive-doubling");
        let mut gather = [Pick::Model; BUCKETS];
        gather[0] = Pick::Named("dimension-exchange");
        gather[1] = Pick::Native;
        comm.tuner.picks.insert(key(OpKind::Allreduce), reduce);
        comm.tuner.picks.insert(key(OpKind::Allgather), gather);
        let sum = Op::<u64>::sum();
        let (one, two) = ([1u64], [1u64, 2]);
        for round in 0..3 {
            // Two sizes alternating, the native one twice in a row (the fast path).
            for _ in 0..2 {
                let got = comm.all_reduce_into(&one, &mut [0], &sum, Algo::Auto);
                assert_eq!(ran(got), NATIVE, "round {round}: all-reduce of 8 B");
            }
            let got = comm.all_reduce_into(&two, &mut [0; 2], &sum, Algo::Auto);
            assert_eq!(ran(got), "schedule", "round {round}: all-reduce of 16 B");
            // Another collective between: its own pick at each size.
            let got = comm.all_gather_into(&one, &mut [0; 2], Algo::Auto);
            assert_eq!(ran(got), "schedule", "round {round}: all-gather of 8 B");
            let got = comm.all_reduce_into(&one, &mut [0], &sum, Algo::Auto);
            assert_eq!(ran(got), NATIVE, "round {round}: all-reduce of 8 B again");
            let got = comm.all_gather_into(&two, &mut [0; 4], Algo::Auto);
            assert_eq!(ran(got), NATIVE, "round {round}: all-gather of 16 B");
            let got = comm.all_gather_into(&one, &mut [0; 2], Algo::Auto);
            assert_eq!(
                ran(got),
                "schedule",
                "round {round}: all-gather of 8 B again"
            );
            // The same size with another root, or a non-commutative operator: not the
            // last native call's signature, so looked up (all-reduce's key differs
            // by commutativity and has no picks then: measuring would send).
            let ordered = Op::<u64>::associative(|a, b| a + b);
            let got = comm.all_reduce_into(&one, &mut [0], &ordered, Algo::Auto);
            assert_eq!(ran(got), "schedule", "round {round}: ordered all-reduce");
            // Right after a native all-reduce of 8 B, a commutative user operator of
            // the same shape: the backend cannot run it, so not the fast path's call
            // (its key has no picks: measured, the first send fails).
            let got = comm.all_reduce_into(&one, &mut [0], &sum, Algo::Auto);
            assert_eq!(ran(got), NATIVE, "round {round}: all-reduce of 8 B, third");
            let user = Op::<u64>::commutative(|a, b| a + b);
            let got = comm.all_reduce_into(&one, &mut [0], &user, Algo::Auto);
            assert_eq!(ran(got), "schedule", "round {round}: a user operator");
        }
        // Native ran exactly where picked: 3 rounds of 4 all-reduces of 1 element and
        // one all-gather of 2.
        let natives = &comm.transport().calls;
        let reduce_8 = (Collective::Allreduce, 1);
        let gather_16 = (Collective::Allgather, 2);
        assert_eq!(natives.len(), 15);
        assert!(natives.iter().all(|c| *c == reduce_8 || *c == gather_16));
        assert_eq!(natives.iter().filter(|c| **c == gather_16).count(), 3);
        // A wrong length is still the typed error, on the fast path too.
        let got = comm.all_reduce_into(&one, &mut [0, 0], &sum, Algo::Auto);
        assert!(matches!(got, Err(Error::BufferLength { .. })), "{got:?}");
        // A new tuning forgets the fast path: the same call is looked up again (and
        // measures: its first send fails here).
        comm.set_tuning(Tuning::measure());
        let got = comm.all_reduce_into(&one, &mut [0], &sum, Algo::Auto);
        assert_eq!(ran(got), "schedule");
    }

    /// One rank sends nothing, but a backend's own call may still beat a schedule's
    /// plan there (MPI's does at 8 B–1 MiB and loses from 1 MiB): where the backend has
    /// collectives, `Auto` measures on one rank too, native among the timed; without,
    /// the model alone, nothing timed.
    #[test]
    fn one_rank_is_measured_only_where_the_backend_has_collectives() {
        for has_native in [true, false] {
            let file = std::env::temp_dir().join(format!(
                "hc-tune-one-rank-{}-{has_native}.json",
                std::process::id()
            ));
            let mut t = NativeOnly::new(|_| {});
            t.size = 1;
            t.has_native = has_native;
            let mut comm = Comm::new(t, Calibration::default());
            comm.set_tuning(Tuning::Measure {
                file: Some(file.clone()),
            });
            let sum = Op::<u64>::sum();
            let ran = comm
                .all_reduce_into(&[1u64], &mut [0], &sum, Algo::Auto)
                .unwrap();
            assert!(ran.auto);
            let _ = std::fs::remove_file(&file);
            assert_eq!(comm.tuned().len(), usize::from(has_native), "{has_native}");
            let natives = comm.transport().calls.len();
            assert_eq!(natives > 0, has_native, "{natives} native calls");
        }
    }

    #[test]
    fn sizes_fall_in_the_nearest_power_of_two() {
        assert_eq!(bucket(0), 0);
        assert_eq!(bucket(8), 0);
        assert_eq!(bucket(11), 0);
        assert_eq!(bucket(12), 1);
        assert_eq!(bucket(16), 1);
        assert_eq!(bucket(4 << 20), BUCKETS - 1);
        assert_eq!(bucket(1 << 30), BUCKETS - 1);
        for b in 0..BUCKETS {
            assert_eq!(bucket(bucket_bytes(b)), b);
        }
    }

    /// Issue 20: with the model's three best only, a 4-rank thread broadcast never
    /// measured `linear` (last of 5 under the default calibration at 16 KiB), and an
    /// all-gather measured 3 of 13. Every fitting schedule is screened, whatever the
    /// model's rank of it.
    #[test]
    fn every_fitting_schedule_is_a_candidate_not_only_the_models_best() {
        use crate::predict::Execution;
        use crate::select::Selector;
        use crate::Calibration;
        use hypercomm::topology::Topology;
        for k in [2, 4] {
            for execution in [Execution::default(), crate::threads::execution(k)] {
                let sel =
                    Selector::new(Topology::complete(k), 0, Calibration::default(), execution);
                for collective in [
                    Collective::Broadcast { root: 0 },
                    Collective::Allgather,
                    Collective::Allreduce,
                    Collective::Alltoall,
                ] {
                    for bytes in [8, 16 << 10, 4 << 20] {
                        let call = Call {
                            collective,
                            len: bytes as u64,
                            elem_bytes: 1,
                            commutative: true,
                            alias: None,
                        };
                        let got: Vec<&str> =
                            candidates(&sel, call).iter().map(|a| a.name).collect();
                        let fitting = sel.fitting(collective.kind());
                        assert!(fitting.len() <= SCREENED);
                        // Each fitting schedule, once: an algorithm is a candidate, or
                        // one that builds its very schedule is.
                        let digest = |name: &str| {
                            let a = fitting.iter().find(|a| a.name == name).unwrap();
                            let call = (collective, k, bytes as u64, None);
                            let c = Calibration::default();
                            let opt = hypercomm::algorithms::Packets::Opt;
                            crate::predict::schedule_digest(call, 1, a, opt, None, c)
                        };
                        let screened: Vec<_> = got.iter().map(|&g| digest(g)).collect();
                        for (i, d) in screened.iter().enumerate() {
                            assert!(!screened[..i].contains(d), "{} twice in {got:?}", got[i]);
                        }
                        for a in &fitting {
                            assert!(
                                got.contains(&a.name) || screened.contains(&digest(a.name)),
                                "{collective:?} on {k} ranks, {bytes} B: {} not among {got:?}",
                                a.name
                            );
                        }
                        assert!(
                            !got.is_empty() && (k == 2 || got.len() > 2),
                            "{collective:?}: {got:?}"
                        );
                        // And one schedule is screened once: on 2^n ranks recursive
                        // doubling and dimension exchange all-reduce alike.
                        if collective == Collective::Allreduce {
                            let both = ["recursive-doubling", "dimension-exchange"];
                            assert!(
                                !both.iter().all(|n| got.contains(n)),
                                "{k} ranks, {bytes} B: both of {both:?} in {got:?}"
                            );
                        }
                    }
                }
            }
        }
        // On 4 ranks the model ranks `linear` below its three best broadcasts at 16 KiB
        // (why it was never measured before), and it is a candidate now.
        let sel = Selector::new(
            Topology::complete(4),
            0,
            Calibration::default(),
            Execution::default(),
        );
        let call = Call {
            collective: Collective::Broadcast { root: 0 },
            len: 16 << 10,
            elem_bytes: 1,
            commutative: true,
            alias: None,
        };
        let best3: Vec<&str> = sel.ranked(call, 3).iter().map(|a| a.name).collect();
        assert!(!best3.contains(&"linear"), "{best3:?}");
        assert!(candidates(&sel, call).iter().any(|a| a.name == "linear"));
    }

    /// A fake timing: round 1 times where the schedule the model ranks last is clearly
    /// the fastest; it goes to round 2, and round 2's times decide.
    #[test]
    fn the_clearly_fastest_schedule_is_a_finalist_and_is_picked() {
        // Model order a, b, c, d, e; e refused the call (infinite).
        let names = ["a", "b", "c", "d", "e"];
        let screen = [5.0, 3.2, 4.0, 1.0, f64::INFINITY];
        let fin = finalists(&screen, FINALISTS);
        assert_eq!(
            fin,
            vec![3, 1],
            "the fastest first, then the next; c, 4×, is not near"
        );
        let near = [1.4, 1.2, 1.0, 2.0];
        assert_eq!(
            finalists(&near, FINALISTS),
            vec![2, 1, 0],
            "a third within NEAR"
        );
        // Round 2 without native (threads): the fastest of round 2, not of round 1.
        let ours: Vec<(f64, &str)> = fin.iter().map(|&i| (screen[i], names[i])).collect();
        assert_eq!(decide(f64::INFINITY, &ours), Pick::Named("d"));
        let again = [(2.0, "d"), (1.5, "b")];
        assert_eq!(decide(f64::INFINITY, &again), Pick::Named("b"));
        // Ties go to the model's better rank (the earlier index).
        assert_eq!(finalists(&[2.0, 1.0, 1.0], 1), vec![1]);
        // Nothing ran: no finalist, the model decides.
        assert!(finalists(&[f64::INFINITY; 3], FINALISTS).is_empty());
        assert_eq!(decide(f64::INFINITY, &[]), Pick::Model);
        // Beside native: ours only at or below MARGIN of native.
        assert_eq!(decide(1.0, &[(0.96, "d")]), Pick::Native);
        assert_eq!(decide(1.0, &[(MARGIN, "d")]), Pick::Named("d"));
        assert_eq!(decide(1.0, &[(f64::INFINITY, "d")]), Pick::Native);
    }

    /// Beside native a schedule must win both rounds: one that won round 2 only keeps
    /// native; without native (threads) round 2 alone decides.
    #[test]
    fn beside_native_a_schedule_must_win_both_rounds() {
        let won2 = both_rounds(1.0, 1.2, 0.8);
        assert_eq!(decide(1.0, &[(won2, "linear")]), Pick::Native);
        let both = both_rounds(1.0, 0.9, 0.8);
        assert_eq!(decide(1.0, &[(both, "linear")]), Pick::Named("linear"));
        assert_eq!(both_rounds(f64::INFINITY, 5.0, 0.8), 0.8);
        // The faster of two finalists that won round 2, if only it also won round 1.
        let ours = [
            (both_rounds(1.0, 1.1, 0.5), "a"),
            (both_rounds(1.0, 0.9, 0.7), "b"),
        ];
        assert_eq!(decide(1.0, &ours), Pick::Named("b"));
    }

    /// No rank leaves the measurement while a peer is still in its last call: a rank
    /// that went on (freeing the buffers, allocating the next size's) slowed its peers'
    /// last call 10-80× on 4 ranks sharing 2 CPUs. Here rank 1's last call sleeps: every
    /// rank must still see every rank's every call ended when its `time_calls` returns.
    #[test]
    fn no_rank_leaves_the_measurement_before_every_call_has_ended() {
        use std::sync::atomic::{AtomicU32, Ordering::SeqCst};
        let (k, iters) = (3u32, 3u32);
        // Each rank's calls: the size's warm-up, then the untimed and timed ones.
        let per_rank = SIZE_WARMUP + call_order(1, iters, Order::Blocks).len() as u32;
        let ended = AtomicU32::new(0);
        let seen = crate::threads::run(k, |comm| {
            let mut made = 0;
            let times = comm.time_calls(1, iters, Order::Blocks, |c, _| {
                made += 1;
                if c.rank() == 1 && made == per_rank {
                    std::thread::sleep(std::time::Duration::from_millis(30));
                }
                ended.fetch_add(1, SeqCst);
                Ok(())
            })?;
            assert!(times[0].trimmed.is_finite() && times[0].median.is_finite());
            Ok::<_, Error>(ended.load(SeqCst))
        })
        .unwrap();
        assert_eq!(seen, vec![k * per_rank; k as usize]);
    }

    /// Every algorithm gets exactly `iters` timed calls, in at most [`BLOCKS`] blocks of
    /// back-to-back calls each led by an untimed one (iters / 5 before its first), the
    /// algorithms taking turns block by block with the first rotating.
    #[test]
    fn each_algorithm_is_timed_in_blocks_of_its_own_calls() {
        for n in 1..5usize {
            for iters in [1u32, 2, 3, 6, 7, 25, 100, 200] {
                let order = call_order(n, iters, Order::Blocks);
                let blocks = BLOCKS.min(iters) as usize;
                // Runs of one algorithm's calls.
                let mut runs: Vec<(usize, Vec<bool>)> = Vec::new();
                for &(a, timed) in &order {
                    match runs.last_mut() {
                        // A new block starts with an untimed call after a timed one.
                        Some((b, calls)) if *b == a && (timed || !*calls.last().unwrap()) => {
                            calls.push(timed)
                        }
                        _ => runs.push((a, vec![timed])),
                    }
                }
                assert_eq!(runs.len(), n * blocks, "n {n} iters {iters}: {runs:?}");
                for a in 0..n {
                    let mine: Vec<&Vec<bool>> = runs
                        .iter()
                        .filter(|(b, _)| *b == a)
                        .map(|(_, c)| c)
                        .collect();
                    let timed: usize = mine.iter().map(|c| c.iter().filter(|&&t| t).count()).sum();
                    assert_eq!(timed, iters as usize, "n {n} iters {iters} algorithm {a}");
                    for (i, c) in mine.iter().enumerate() {
                        let untimed = c.iter().take_while(|&&t| !t).count();
                        let want = if i == 0 {
                            (iters / 5).max(1) as usize
                        } else {
                            1
                        };
                        assert_eq!(untimed, want, "n {n} iters {iters} algorithm {a} block {i}");
                        assert!(c[untimed..].iter().all(|&t| t) && c.len() > untimed);
                    }
                }
                // Who goes first rotates.
                let firsts: Vec<usize> = (0..blocks).map(|b| runs[b * n].0).collect();
                let want: Vec<usize> = (0..blocks).map(|b| b % n).collect();
                assert_eq!(firsts, want, "n {n} iters {iters}");
            }
        }
    }

    /// In turns, every algorithm's calls alternate one by one (the first rotating), each
    /// with `iters` timed after iters / 5 untimed rounds.
    #[test]
    fn in_turns_the_algorithms_alternate_call_by_call() {
        for (n, iters) in [(2usize, 12u32), (3, 1), (1, 5)] {
            let order = call_order(n, iters, Order::Turns);
            let warm = (iters / 5).max(1) as usize;
            assert_eq!(order.len(), n * (warm + iters as usize));
            for (i, round) in order.chunks(n).enumerate() {
                let mut who: Vec<usize> = round.iter().map(|c| c.0).collect();
                assert_eq!(who[0], i % n, "round {i} starts with the next algorithm");
                who.sort();
                assert_eq!(who, (0..n).collect::<Vec<_>>());
                assert!(round.iter().all(|c| c.1 == (i >= warm)), "round {i}");
            }
        }
    }

    /// Round 3 keeps a schedule over native only at or below the margin of native's
    /// time call by call, by the trimmed mean and by the median; native's refusal
    /// keeps it too.
    #[test]
    fn a_schedule_over_native_must_also_win_call_by_call() {
        let pick = Pick::Named("linear");
        let both = |t: f64| Summary {
            trimmed: t,
            median: t,
        };
        assert_eq!(confirmed(pick, both(10.0), both(9.0)), pick);
        assert_eq!(confirmed(pick, both(10.0), both(9.6)), Pick::Native);
        assert_eq!(confirmed(pick, both(10.0), both(15.0)), Pick::Native);
        assert_eq!(confirmed(pick, Summary::REFUSED, both(15.0)), pick);
    }

    /// Native's calls with a heavier tail (a mean above their median) than the
    /// schedule's: faster by the trimmed mean is not enough if slower by the median,
    /// as `vs-native` reports it, nor the other way round.
    #[test]
    fn a_schedule_over_native_must_win_by_the_median_and_by_the_mean() {
        let pick = Pick::Named("pairwise");
        let native = Summary {
            trimmed: 0.80,
            median: 0.66,
        };
        let ours = Summary {
            trimmed: 0.75,
            median: 0.75,
        };
        assert_eq!(confirmed(pick, native, ours), Pick::Native);
        let ours = Summary {
            trimmed: 0.85,
            median: 0.60,
        };
        assert_eq!(confirmed(pick, native, ours), Pick::Native);
        let ours = Summary {
            trimmed: 0.70,
            median: 0.60,
        };
        assert_eq!(confirmed(pick, native, ours), pick);
    }

    /// Both statistics of a measurement: the median, and the mean without the slowest
    /// twentieth; infinity for none.
    #[test]
    fn a_summary_is_the_median_and_the_trimmed_mean() {
        let mut xs: Vec<f64> = (1..=20).map(f64::from).collect();
        xs.reverse();
        let s = Summary::of(&mut xs);
        assert_eq!(s.median, 10.5);
        assert_eq!(s.trimmed, (1..=19).sum::<i32>() as f64 / 19.0);
        let mut odd = [3.0, 1.0, 2.0];
        assert_eq!(median(&mut odd), 2.0);
        assert_eq!(Summary::of(&mut []), Summary::REFUSED);
    }

    /// The measured input is backed by memory of its own, page by page (still zeroes):
    /// the process's resident set grows by about its size.
    #[cfg(target_os = "linux")]
    #[test]
    fn the_measured_input_is_real_memory_not_the_shared_zero_page() {
        let resident = || {
            let statm = std::fs::read_to_string("/proc/self/statm").unwrap();
            let pages: u64 = statm.split_whitespace().nth(1).unwrap().parse().unwrap();
            pages * 4096
        };
        let size = 128usize << 20;
        let mut buf = vec![0u8; size];
        let before = resident();
        back_with_memory(&mut buf);
        let grown = resident().saturating_sub(before);
        assert!(
            grown >= size as u64 * 9 / 10,
            "resident set grew by {grown} B only"
        );
        assert!(buf.iter().all(|&b| b == 0));
    }

    /// `HYPERCOMM_TUNING_LOG`'s line: each slot's time in µs, a refusal as `-`.
    #[test]
    fn a_log_line_names_each_slot_and_its_time() {
        let key = Key {
            kind: OpKind::Allreduce,
            elem_bytes: 8,
            commutative: true,
            user_op: false,
        };
        let line = log_line(
            &key,
            "round 2",
            1024,
            &[(NATIVE, f64::INFINITY), ("ring", 2.5e-6)],
        );
        assert_eq!(
            line,
            "hypercomm tuning: allreduce 8B commutative round 2 1024 B (µs): native -, ring 2.500"
        );
    }

    /// The budget's plan: under it the default counts at every size; over it fewer
    /// calls in rounds 2 and 3 (not under [`MIN_FINAL`]), then the largest sizes out, a
    /// prefix of the sizes kept and the smallest always; the plan within the budget
    /// whenever more than the smallest size is measured.
    #[test]
    fn the_budget_cuts_calls_then_the_largest_sizes() {
        let slots = [14usize; BUCKETS];
        let line = |beta: f64, tau: f64| -> [f64; BUCKETS] {
            std::array::from_fn(|b| 2.0 * beta + tau * bucket_bytes(b) as f64)
        };
        let defaults: [u32; BUCKETS] = std::array::from_fn(|b| final_calls(bucket_bytes(b), true));
        // This VM's shared memory: 1 µs and 0.1 ns a byte.
        let fast = Budget::plan(&slots, &line(1e-6, 1e-10), true, BUDGET);
        assert_eq!(fast.finals, defaults);
        assert!(fast.measured.iter().all(|&m| m));
        assert!(fast.planned < BUDGET, "{fast:?}");
        // 1 Gb/s Ethernet: 50 µs and 8 ns a byte; its default plan is 12.8 s.
        let ethernet = line(50e-6, 8e-9);
        let open = Budget::plan(&slots, &ethernet, true, f64::INFINITY);
        assert!(open.planned > 10.0, "{open:?}");
        for budget in [10.0, 1.0, 0.05, 1e-9] {
            let plan = Budget::plan(&slots, &ethernet, true, budget);
            assert!(plan.measured[0]);
            let kept = plan.measured.iter().take_while(|&&m| m).count();
            assert!(plan.measured[kept..].iter().all(|&m| !m), "{plan:?}");
            assert!(kept == 1 || plan.planned <= budget, "{budget}: {plan:?}");
            assert!(plan.finals.iter().all(|&f| f >= MIN_FINAL), "{plan:?}");
            assert!(plan.finals.iter().zip(defaults).all(|(&f, d)| f <= d));
            assert!(plan.finals != defaults, "{budget}: calls not cut");
        }
        // Sizes not measured here (slots 0) cost nothing and are never "left out".
        let mut few = [0usize; BUCKETS];
        few[..3].copy_from_slice(&[14, 14, 14]);
        let plan = Budget::plan(&few, &ethernet, true, 1e-9);
        assert_eq!(plan.measured.iter().filter(|&&m| !m).count(), 2, "{plan:?}");
    }

    /// A bad budget on one rank (a variable not exported to its host) fails every rank,
    /// each with an error naming the variable, instead of leaving the others waiting
    /// in the agreement.
    #[test]
    fn a_bad_budget_on_one_rank_fails_every_rank() {
        let file = std::env::temp_dir().join(format!("hc-bad-budget-{}.json", std::process::id()));
        let cfg = crate::threads::Config::new(2).tuning(Tuning::Measure {
            file: Some(file.clone()),
        });
        let said = crate::threads::run_with(&cfg, |comm| {
            if comm.rank() == 1 {
                comm.tuner.budget_env = Some(Some("abc".into()));
            }
            let got = comm.all_reduce_into(&[1u64], &mut [0], &Op::sum(), Algo::Auto);
            Ok::<_, Error>(got.err().map(|e| e.to_string()))
        })
        .unwrap();
        for (r, e) in said.iter().enumerate() {
            let e = e.as_deref().unwrap_or_else(|| panic!("rank {r} went on"));
            assert!(e.contains(BUDGET_ENV), "rank {r}: {e}");
        }
        assert!(said[1].as_deref().unwrap().contains("abc"));
        let _ = std::fs::remove_file(&file);
    }

    #[test]
    fn round_two_times_more_calls_than_round_one() {
        for b in 0..BUCKETS {
            let bytes = bucket_bytes(b);
            // Two at least: one timed call per schedule left the model's best, timed
            // first, out of round 2 at 1-4 MiB.
            assert!(screen_calls(bytes) >= 2);
            for native in [false, true] {
                assert!(final_calls(bytes, native) >= 3 * screen_calls(bytes));
            }
            assert!(final_calls(bytes, true) >= 12);
        }
    }

    #[test]
    fn a_file_measured_by_another_chooser_is_measured_again() {
        let machine = Some("threads-2ranks".to_string());
        let here = File {
            machine: "threads-2ranks".into(),
            chooser: CHOOSER,
            sizes: sizes(),
            picks: BTreeMap::new(),
        };
        assert!(fits(&here, &machine));
        let old: File = serde_json::from_str(
            &serde_json::json!({"machine": "threads-2ranks", "sizes": sizes(), "picks": {}})
                .to_string(),
        )
        .unwrap();
        assert_eq!(old.chooser, 0);
        assert!(!fits(&old, &machine));
    }

    #[test]
    fn the_trimmed_mean_leaves_out_the_slowest_twentieth() {
        // 19 calls of 1 and one preempted call of 1000: the preempted one is left out.
        let mut xs: Vec<f64> = std::iter::repeat_n(1.0, 19).chain([1000.0]).collect();
        assert_eq!(trimmed_mean(&mut xs), 1.0);
        // Fewer than 20 calls: none left out, the plain mean.
        let mut few = vec![3.0, 1.0, 2.0];
        assert_eq!(trimmed_mean(&mut few), 2.0);
        // A schedule that stalls in 1 call of 4 still pays for 4 of its 5 stalls.
        let mut stalls: Vec<f64> = (0..20)
            .map(|i| if i % 4 == 0 { 9.0 } else { 1.0 })
            .collect();
        assert_eq!(trimmed_mean(&mut stalls), (15.0 + 4.0 * 9.0) / 19.0);
        assert_eq!(trimmed_mean(&mut []), f64::INFINITY);
    }
}
