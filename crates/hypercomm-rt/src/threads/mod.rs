//! The threads backend: k ranks as scoped threads of one process, moving data with a
//! single copy from the sender's buffer to the receiver's (two for small messages).
//!
//! A send of more than [`Config::eager`] bytes is a rendezvous: the sender publishes a
//! description of its regions (pointer and length of each) in the queue of the pair
//! (sender, receiver) and goes on posting; the receiver copies, or combines, straight
//! from the sender's memory into its own, then decrements the sender's count of
//! outstanding sends; the sender's `wait_all` waits for that count to reach zero before
//! its memory may change. No intermediate buffer, no allocation per message. From
//! [`SHARED_COPY_FROM`] bytes the sender, idle in that wait, copies half of the message
//! into the receiver's memory while the receiver copies the other half.
//!
//! A send of at most [`Config::eager`] bytes is eager: the sender copies it into the
//! queued message (up to [`EAGER_INLINE`] bytes) or into a buffer the pair reuses from
//! one message to the next, and is done, so its `wait_all` never waits for a receiver
//! that may be asleep; the receiver copies or combines from that copy. Up to
//! [`EAGER_RING_INLINE`] bytes, while the pair's queue is empty, the message goes
//! instead into a slot of the pair's lock-free ring ([`EAGER_RING`] slots of nine cache
//! lines, allocated by the pair's first such message: a fast box), which neither side
//! locks. At most [`EAGER_RING`] + [`EAGER_QUEUE`] messages of a pair wait at once: a
//! small send beyond that is a rendezvous, so a sender cannot run unboundedly ahead of
//! its receiver. Every `unsafe`
//! line sits in the small `rendezvous` module (plus the receive side of [`Threads`]).
//!
//! [`run`] starts the ranks (1 to [`MAX_RANKS`]; a thread the system refuses is
//! [`Error::Spawn`], and the ranks already started are failed, not left waiting), gives
//! each a [`Comm`] and returns every rank's result in rank order; [`run_each`] returns
//! each rank's outcome, failures included. A rank that
//! panics or returns an error makes the other ranks' calls fail with
//! [`Error::PeerFailed`] at once (they are woken); a rank that leaves early does the same
//! to the ranks that wait for it; any other wait ends with [`Error::Timeout`] after
//! [`Config::timeout`]. Waiting spins briefly (when every rank has a core), then polls
//! between `yield_now` calls for up to [`Config::yield_for`] (as Open MPI's
//! `mpi_yield_when_idle`: a waiting rank hands its core to the rank it waits for, which
//! runs at once instead of after a futex wake-up), then parks the thread. With
//! [`Config::fibers`], the ranks that share a CPU run instead as fibers of one thread
//! per CPU, and a wait hands the CPU to the next of them in user space.
//!
//! An eager send completes before its receiver has taken it, so: a `wait_all` whose
//! eager message's receiver is already gone without taking it fails with
//! [`Error::PeerFailed`], as a rendezvous would; a receiver that fails after that is
//! the receiver's failure; and a rank that returns successfully while messages sent to
//! it are still untaken (a receive its program forgot) gets [`Failure::Unreceived`]
//! instead of its result, so that no message is lost silently.
//!
//! ```
//! use hypercomm_rt::{threads, Algo, Op};
//!
//! let sums = threads::run(4, |comm| {
//!     let mut out = [0u64];
//!     comm.all_reduce_into(&[comm.rank() as u64], &mut out, &Op::sum(), Algo::Auto)?;
//!     Ok::<_, hypercomm_rt::Error>(out[0])
//! })
//! .unwrap();
//! assert_eq!(sums, vec![6; 4]);
//! ```

mod fibers;
mod groups;
mod rendezvous;

use std::collections::VecDeque;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::time::{Duration, Instant};

use hypercomm::schedule::Rank;

use crate::comm::Comm;
use crate::error::{Error, Result};
use crate::select::Calibration;
use crate::transport::{Incoming, Part, PartMut, Tag, Transport};
use crate::tune::Tuning;
use groups::{Group, Registry};
use rendezvous::{Claim, Shared};

/// [`Config::eager`] when ranks share cores: messages up to this many bytes are copied
/// so that their send completes at once (Open MPI's shared-memory eager limit too).
pub const EAGER_LIMIT: usize = 4096;

/// [`Config::eager`] when every rank has a core (and spins): above this size, copying
/// cost more than waiting for an awake receiver (measured:
/// `docs/perf-log/2026-11-22-eager-sends.md`).
pub const EAGER_LIMIT_SPIN: usize = 512;

/// Rendezvous messages (larger than [`Config::eager`]) of at least this many bytes, one
/// piece received into one contiguous part, are copied by two cores: the receiver offers
/// its sender, which waits idle until the message is taken, to share the copy, and both
/// take chunks of 64 KiB until none is left (the receiver copies them all if its sender
/// is busy elsewhere). A 1 MiB broadcast on 2 ranks took one core's memcpy time before.
pub const SHARED_COPY_FROM: usize = rendezvous::SHARE_FROM;

/// Largest eager message (bytes) carried in the queued message itself, without a
/// separate buffer.
pub const EAGER_INLINE: usize = rendezvous::INLINE;

/// Messages from one rank to another that may wait, untaken, for a small send to still
/// be eager; beyond, it waits for its receiver as a large one does (flow control).
pub const EAGER_QUEUE: usize = rendezvous::EAGER_QUEUE;

/// Messages of at most [`EAGER_RING_INLINE`] bytes from one rank to another that may
/// wait in the pair's lock-free ring (the fast path, used while the pair's queue is
/// empty), on top of the [`EAGER_QUEUE`] the queue may hold.
pub const EAGER_RING: usize = rendezvous::RING;

/// Largest eager message (bytes) that travels through the pair's ring (when
/// [`Config::eager`] allows it eager at all).
pub const EAGER_RING_INLINE: usize = rendezvous::RING_INLINE;

/// Most ranks of one threads communicator. Every ordered pair of ranks has a mailbox
/// (128 bytes, on cache lines of its own) and two buffer slots, so memory grows with the
/// square of the count: 1,024 ranks take about 250 MB (`hypercomm run --ranks 1024`: 255 MB
/// resident), 4,096 would take 3.4 GB. A larger count is [`Error::RankCount`].
pub const MAX_RANKS: u32 = 1024;

/// Environment variable: whether [`Config::new`] binds ranks to CPUs ([`Config::pin`]):
/// `on` (or `1`, `true`, `yes`), `off` (`0`, `false`, `no`), or `auto` (or empty or
/// unset: the default, bound), in any case. For a process that runs beside another
/// that binds (two jobs on one machine would bind to the same CPUs), or a program that
/// cannot change its `Config`; [`Config::pin`] still overrides it. A launch fails with
/// [`Error::Environment`] on any other value, even one that `Config::pin` overrides:
/// a misspelt setting is reported, not ignored.
pub const PIN_ENV: &str = "HYPERCOMM_PIN";

/// The binding [`PIN_ENV`]'s `value` asks for: `Some(true)` for `on`, `Some(false)` for
/// `off`, `None` (the default) for `auto`, empty or unset (any case; synonyms there).
///
/// ```
/// use hypercomm_rt::threads::pin_setting;
/// use std::ffi::OsStr;
/// assert_eq!(pin_setting(Some(OsStr::new("OFF"))), Ok(Some(false)));
/// assert_eq!(pin_setting(Some(OsStr::new("1"))), Ok(Some(true)));
/// assert_eq!(pin_setting(Some(OsStr::new(""))), Ok(None));
/// assert_eq!(pin_setting(None), Ok(None));
/// assert!(pin_setting(Some(OsStr::new("sideways"))).unwrap_err().to_string().contains("on, off or auto"));
/// ```
pub fn pin_setting(value: Option<&std::ffi::OsStr>) -> Result<Option<bool>> {
    let Some(value) = value else { return Ok(None) };
    let v = value.to_string_lossy();
    match v.to_ascii_lowercase().as_str() {
        "on" | "1" | "true" | "yes" => Ok(Some(true)),
        "off" | "0" | "false" | "no" => Ok(Some(false)),
        "auto" | "" => Ok(None),
        _ => Err(Error::Environment {
            name: PIN_ENV,
            value: v.into_owned(),
            valid: "takes on, off or auto (or 1, 0, true, false, yes, no)",
        }),
    }
}

/// [`pin_setting`] of the environment's [`PIN_ENV`].
fn pin_from_env() -> Result<Option<bool>> {
    pin_setting(std::env::var_os(PIN_ENV).as_deref())
}

/// [`Config::yield_for`] by default: how long a waiting rank polls between
/// `yield_now` calls before it parks (measured on 4 ranks sharing 2 cores: a small
/// broadcast 1.7–5 µs instead of 3–39 µs with parking after 4 yields;
/// `docs/perf-log/2026-11-22-yield-before-parking.md`).
pub const YIELD_FOR: Duration = Duration::from_millis(1);

/// Yields between two looks at the peers' failure flags while polling.
const YIELDS_PER_CHECK: u32 = 64;

/// How to start the ranks.
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    /// Number of ranks (threads), at least 1.
    pub ranks: u32,
    /// How long a rank waits for a peer in one wait before [`Error::Timeout`]: longer
    /// than any computation between two calls, since a peer still computing is not
    /// told apart from a stuck one.
    pub timeout: Duration,
    /// Polls of a busy wait before the thread yields a few times, then parks. Spinning
    /// pays when every rank has a core (a wake-up costs microseconds) and costs dearly
    /// when ranks share cores (the spinner holds the core its peer needs).
    pub spin: u32,
    /// How long a wait polls between `yield_now` calls, after spinning and before
    /// parking: a rank whose peer runs on the same core hands it the core and sees its
    /// message as soon as it is back, without a wake-up; beyond this, the rank parks and
    /// stops using the CPU (a peer still computing).
    pub yield_for: Duration,
    /// β and τ for `Algo::Auto`; `None` reads `HYPERCOMM_CALIBRATION` (or the defaults).
    pub calibration: Option<Calibration>,
    /// Largest message (bytes) sent eagerly: copied, so that the send completes without
    /// waiting for its receiver; larger ones are a single-copy rendezvous. The second
    /// copy pays when ranks share cores (a sender that waits for its receiver waits for
    /// a context switch); when every rank has a core its receiver is awake, and above
    /// [`EAGER_LIMIT_SPIN`] bytes the copy costs more than the wait it saves.
    pub eager: usize,
    /// Stack size (bytes) of each rank's thread; `None` leaves Rust's default (2 MiB,
    /// or `RUST_MIN_STACK`). A thread that cannot be started (this size refused, no
    /// memory left) is [`Error::Spawn`] where the system reports the refusal (glibc
    /// does; with some other C libraries std's spawn panics on an impossible size).
    pub stack_size: Option<usize>,
    /// Bind each rank's thread to one CPU of those the process may run on, as MPI
    /// launchers bind ranks to cores (`mpirun --bind-to core`): the allowed CPUs listed
    /// one hardware thread per core first (the first thread of every core, then the
    /// second …, from `/sys/devices/system/cpu/cpuN/topology`), rank r of k on the r-th
    /// when k ≤ n (a core each while there are cores), else in blocks (the `r·n/k`-th:
    /// consecutive ranks share a CPU), the list turned by the run's offset (below).
    /// Threads a rank starts (a request's progress thread, a pool of its own) may use
    /// every CPU the launch could.
    /// Binding keeps ranks that share a core from migrating between cores, which
    /// steadies and shortens small calls when ranks outnumber cores (4 ranks on 2
    /// cores: a small all-reduce 5.7–10.4 µs unbound, 6.6–7.1 bound;
    /// `docs/perf-log/2026-11-25-receiver-hint-and-pinning.md`), and keeps ranks with a
    /// core each on their own cores: unbound, a short run was at times slow throughout,
    /// presumably two ranks left on one core (2 ranks on 2 cores, an all-reduce of
    /// 256 KiB: 6–10 of 24 runs 2.6–14× slower unbound, none bound;
    /// `docs/perf-log/2026-11-28-binding-own-cores.md`). So [`Config::new`] binds.
    /// Runs of one process going at once take the CPUs where the fewest of their
    /// threads are bound; two processes that both bind share CPUs, as two `mpirun`
    /// jobs that bind do (`pin(false)`, or `HYPERCOMM_PIN=off` for [`Config::new`]:
    /// [`PIN_ENV`], leaves placement to the scheduler). Linux only
    /// (elsewhere it does nothing); a rank whose binding the system refuses runs
    /// unbound.
    pub pin: bool,
    /// Run the ranks that share a CPU as fibers of one thread per CPU (placed in blocks
    /// as by [`Config::pin`], which still decides whether the threads are bound): a
    /// rank that waits hands the CPU to the next rank of its thread by a switch of
    /// stacks in user space, tens of nanoseconds, instead of a `sched_yield` of the
    /// kernel (1.3–2.3 µs here), as Adaptive MPI and MPC run MPI ranks as user-level
    /// threads. Changes nothing when every rank has a CPU. Off by default, since code
    /// written for threads sees the difference:
    /// - the ranks of one thread share its thread-local variables and
    ///   `std::thread::current()`;
    /// - a rank gives its CPU up only inside a wait: one that computes long between
    ///   calls delays the other ranks of its thread (timings of single calls skew, the
    ///   total does not), and one that blocks the thread (a sleep, a blocking read)
    ///   stops them; blocking on something only a rank of the same thread can release
    ///   (a lock it holds, a `std::sync::Barrier` across ranks) hangs for good, beyond
    ///   the reach of [`Config::timeout`];
    /// - each rank has a stack of [`Config::stack_size`] (else `RUST_MIN_STACK`, else
    ///   2 MiB; at least 64 KiB) with a guard page; overflowing it aborts the process
    ///   with a message naming the rank and the stack's size (Linux; elsewhere a bare
    ///   `SIGSEGV`), as a thread's overflow does with Rust's message;
    /// - a rank whose unwinding (a panic) must wait for a receiver to finish copying
    ///   from its memory pauses meanwhile, and the other ranks of its thread then see
    ///   `std::thread::panicking()` (a lock guard they drop then is poisoned).
    ///
    /// ```
    /// use hypercomm_rt::threads::{self, Config};
    /// use hypercomm_rt::{Algo, Op};
    ///
    /// // More ranks than CPUs: the ranks of each CPU share one thread
    /// // (`config.uses_fibers()` says whether they will).
    /// let k = std::thread::available_parallelism().map_or(1, |n| n.get()) as u32 * 4;
    /// let config = Config::new(k).fibers(true);
    /// let sums = threads::run_with(&config, |comm| {
    ///     let mut out = [0u64];
    ///     comm.all_reduce_into(&[1u64], &mut out, &Op::sum(), Algo::Auto)?;
    ///     Ok::<_, hypercomm_rt::Error>(out[0])
    /// })
    /// .unwrap();
    /// assert_eq!(sums, vec![u64::from(k); k as usize]);
    /// ```
    pub fibers: bool,
    /// Whether `Algo::Auto` measures the model's best schedules on these threads and
    /// takes the fastest ([`crate::tune`]); off by default, so that a library call's
    /// choice is the model's, the same in every run. `hypercomm run` and `bench` turn
    /// it on (`HYPERCOMM_TUNING=off` turns it off).
    pub tuning: Tuning,
}

impl Config {
    /// `ranks` ranks, a 60 s timeout, the calibration from the environment, and, if
    /// the machine has a core per rank, spinning and eager sends up to
    /// [`EAGER_LIMIT_SPIN`] bytes, otherwise no spinning and eager sends up to
    /// [`EAGER_LIMIT`] bytes; ranks bound to CPUs ([`Config::pin`]) either way, unless
    /// [`PIN_ENV`] (`HYPERCOMM_PIN`) says `off`.
    pub fn new(ranks: u32) -> Self {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let own_core = ranks as usize <= cores;
        Config {
            ranks,
            timeout: Duration::from_secs(60),
            spin: if own_core { 2000 } else { 0 },
            yield_for: YIELD_FOR,
            calibration: None,
            eager: if own_core {
                EAGER_LIMIT_SPIN
            } else {
                EAGER_LIMIT
            },
            stack_size: None,
            // An invalid value fails the launch (`launch`), bound meanwhile.
            pin: pin_from_env().ok().flatten().unwrap_or(true),
            fibers: false,
            tuning: Tuning::Off,
        }
    }
    /// The same with another yield window ([`Config::yield_for`]; zero parks at once
    /// after spinning).
    pub fn yield_for(self, yield_for: Duration) -> Self {
        Config { yield_for, ..self }
    }
    /// The same with another timeout.
    pub fn timeout(self, timeout: Duration) -> Self {
        Config { timeout, ..self }
    }
    /// The same with another tuning policy.
    pub fn tuning(self, tuning: Tuning) -> Self {
        Config { tuning, ..self }
    }

    /// The same with another calibration.
    pub fn calibration(self, calibration: Calibration) -> Self {
        Config {
            calibration: Some(calibration),
            ..self
        }
    }
    /// The same with another stack size for the ranks' threads ([`Config::stack_size`]).
    pub fn stack_size(self, bytes: usize) -> Self {
        Config {
            stack_size: Some(bytes),
            ..self
        }
    }
    /// The same with the ranks' threads bound to CPUs, or not ([`Config::pin`]).
    pub fn pin(self, pin: bool) -> Self {
        Config { pin, ..self }
    }
    /// The same with the ranks that share a CPU run as fibers, or not
    /// ([`Config::fibers`]), and the eager limit that goes with it: on fibers a sender
    /// that waits for its receiver waits for a switch in user space, as when every rank
    /// has a core, so [`EAGER_LIMIT_SPIN`] (4 ranks on 2 cores: an all-to-all of 512 B
    /// 2.38 → 1.29 µs, of 4 KiB 6.16 → 3.44, against [`EAGER_LIMIT`];
    /// `docs/perf-log/2026-11-25-fibers.md`);
    /// without, [`Config::new`]'s, also when fibers are asked for but do not run (no
    /// more ranks than CPUs, [`Config::uses_fibers`]). Call [`Config::eager`] after it
    /// to choose another.
    pub fn fibers(self, fibers: bool) -> Self {
        let config = Config { fibers, ..self };
        let eager = if config.uses_fibers() {
            EAGER_LIMIT_SPIN
        } else {
            Config::new(self.ranks).eager
        };
        Config { eager, ..config }
    }
    /// Whether [`run_with`] runs these ranks as fibers: [`Config::fibers`] asked, and
    /// more ranks than the CPUs the calling thread may use.
    pub fn uses_fibers(&self) -> bool {
        self.fibers && self.ranks as usize > affinity::cpu_count()
    }
    /// Whether every rank has a CPU of its own, counted as [`Config::new`] counts them
    /// (`available_parallelism`: the CPUs the process may use, within its cgroup's
    /// quota). Then a sender waiting for a large send to be taken is running, and helps
    /// copy it ([`SHARED_COPY_FROM`]).
    pub fn ranks_have_cpus(&self) -> bool {
        self.ranks as usize <= std::thread::available_parallelism().map_or(1, |n| n.get())
    }
    /// The same with another eager limit (bytes; 0: every non-empty send is a
    /// rendezvous).
    pub fn eager(self, eager: usize) -> Self {
        Config { eager, ..self }
    }
}

/// Why a rank did not produce its result.
#[derive(Debug, Clone, PartialEq)]
pub enum Failure<E> {
    /// The rank's closure returned this error.
    Returned(E),
    /// The rank's closure panicked with this message.
    Panicked(String),
    /// The rank's closure returned `Ok`, but messages sent to it were never received
    /// (their eager sends had completed, so no sender could be told): `messages` from
    /// rank `from`, the first such sender.
    Unreceived {
        /// The sender.
        from: Rank,
        /// How many of its messages were left.
        messages: usize,
    },
}

impl<E: std::fmt::Display> std::fmt::Display for Failure<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Returned(e) => write!(f, "returned an error: {e}"),
            Failure::Panicked(m) => write!(f, "panicked: {m}"),
            Failure::Unreceived { from, messages } => write!(
                f,
                "returned without receiving {messages} message(s) from rank {from}"
            ),
        }
    }
}

/// Why [`run`] failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RunError<E: std::fmt::Debug + std::fmt::Display> {
    /// The ranks could not be started (a rank count out of range, a bad calibration
    /// file, a thread the system refused).
    #[error("cannot start the ranks: {0}")]
    Setup(Error),
    /// A rank failed: the first to fail, whose failure made the others fail.
    #[error("rank {rank} {failure}")]
    Rank {
        /// The rank.
        rank: Rank,
        /// How it failed.
        failure: Failure<E>,
    },
}

/// Run `f` on `ranks` ranks and return their results in rank order, or the failure of
/// the rank that failed first.
pub fn run<T, E, F>(ranks: u32, f: F) -> Result<Vec<T>, RunError<E>>
where
    F: Fn(&mut Comm<Threads<'_>>) -> Result<T, E> + Sync,
    T: Send,
    E: Send + std::fmt::Debug + std::fmt::Display,
{
    run_with(&Config::new(ranks), f)
}

/// [`run`] with a [`Config`].
pub fn run_with<T, E, F>(config: &Config, f: F) -> Result<Vec<T>, RunError<E>>
where
    F: Fn(&mut Comm<Threads<'_>>) -> Result<T, E> + Sync,
    T: Send,
    E: Send + std::fmt::Debug + std::fmt::Display,
{
    let (outcomes, first) = launch(config, f).map_err(RunError::Setup)?;
    let culprit = first
        .filter(|&r| outcomes[r as usize].is_err())
        .or_else(|| outcomes.iter().position(|o| o.is_err()).map(|r| r as Rank));
    let Some(rank) = culprit else {
        return Ok(outcomes.into_iter().filter_map(|o| o.ok()).collect());
    };
    let failure = outcomes
        .into_iter()
        .nth(rank as usize)
        .and_then(|o| o.err())
        .expect("the culprit failed");
    Err(RunError::Rank { rank, failure })
}

/// Run `f` on the ranks of `config` and return every rank's outcome in rank order.
pub fn run_each<T, E, F>(config: &Config, f: F) -> Result<Vec<Result<T, Failure<E>>>>
where
    F: Fn(&mut Comm<Threads<'_>>) -> Result<T, E> + Sync,
    T: Send,
    E: Send,
{
    launch(config, f).map(|(outcomes, _)| outcomes)
}

type Outcomes<T, E> = (Vec<Result<T, Failure<E>>>, Option<Rank>);

fn launch<T, E, F>(config: &Config, f: F) -> Result<Outcomes<T, E>>
where
    F: Fn(&mut Comm<Threads<'_>>) -> Result<T, E> + Sync,
    T: Send,
    E: Send,
{
    if !(1..=MAX_RANKS).contains(&config.ranks) {
        return Err(Error::RankCount {
            ranks: config.ranks,
            max: MAX_RANKS,
        });
    }
    pin_from_env()?;
    let calibration = match config.calibration {
        Some(c) => c,
        None => Calibration::from_env()?,
    };
    let mut shared = Shared::new(config.ranks, config.eager);
    // One count for both: the fibers' threads and the pairs that share one.
    let fiber_threads = affinity::cpu_count();
    if config.uses_fibers() {
        shared.share_threads(|rank| block(rank, fiber_threads, config.ranks));
    }
    let shared = shared;
    // The CPUs the launching thread may run on, if binding: for the ranks, and for the
    // threads a bound rank starts.
    let allowed = if config.pin {
        affinity::allowed()
    } else {
        Vec::new()
    };
    let registry = Registry::new(
        config,
        config.uses_fibers().then_some(fiber_threads),
        allowed.clone(),
    );
    // The allowed CPUs (a core each first), turned so that this run starts where runs
    // of this process still going have bound the fewest threads (none if not binding);
    // the claim lasts until it returns.
    let threads = if config.uses_fibers() {
        fiber_threads as u32
    } else {
        config.ranks
    };
    let (cpus, _claim) = affinity::place(affinity::by_core(allowed), threads);
    // Rank r's CPU, if binding ([`slot`]).
    let cpu_of =
        |rank: Rank| (!cpus.is_empty()).then(|| cpus[slot(rank, cpus.len(), config.ranks)]);
    let started = if config.uses_fibers() {
        launch_fibers(
            config,
            &shared,
            &registry,
            calibration,
            &f,
            &cpus,
            fiber_threads,
        )?
    } else {
        launch_threads(config, &shared, &registry, calibration, &f, cpu_of)
    };
    let (mut outcomes, unstarted) = started;
    if let Some((rank, reason)) = unstarted {
        return Err(Error::Spawn { rank, reason });
    }
    // Every rank has left: a message still queued was never taken. A rendezvous one
    // cannot be (its sender waited, or withdrew it); an eager one was sent by a send
    // that completed, to a receiver that returned without it. A receiver that failed
    // has its failure already.
    let mut first = shared.failed();
    for (rank, outcome) in (0..).zip(outcomes.iter_mut()) {
        if let (Ok(_), Some((from, messages))) = (&outcome, shared.untaken(rank)) {
            *outcome = Err(Failure::Unreceived { from, messages });
            first = first.or(Some(rank));
        }
    }
    Ok((outcomes, first))
}

/// The block of `rank` when k ranks are spread over n CPUs in blocks of consecutive
/// ranks: `r·n/k` ([`Config::fibers`]; [`Config::pin`] when k > n): which ranks share
/// a CPU, for models of its CPU ([`cpu_count`]).
pub fn block(rank: Rank, n: usize, k: u32) -> usize {
    rank as usize * n / k as usize
}

/// The position, in the run's list of n CPUs, of the CPU `rank` of k is bound to
/// ([`Config::pin`]): the r-th when every rank has one (k ≤ n: the list has a core
/// each first), else its [`block`].
fn slot(rank: Rank, n: usize, k: u32) -> usize {
    if k as usize <= n {
        rank as usize
    } else {
        block(rank, n, k)
    }
}

/// What the prediction knows of how this backend runs `ranks` ranks: with a CPU per
/// rank ([`Config::ranks_have_cpus`]), a message of at least [`SHARED_COPY_FROM`] bytes
/// is copied by two cores (the sender that helps is running); with fewer CPUs than
/// ranks (those the backend places ranks on, within the process's quota), the ranks of
/// a CPU take turns.
///
/// Call it on the thread that launches the ranks: a rank's own thread may be bound to
/// one CPU (the ranks' transports use the count their launch took).
pub fn execution(ranks: u32) -> crate::predict::Execution {
    execution_on(ranks, cpus(), false)
}

/// [`execution`] of the ranks `config` launches, knowing whether they run as fibers
/// ([`Config::uses_fibers`]: then a message between two ranks of one CPU is priced at
/// the calibration's `same-cpu` bands, [`crate::predict::Execution::fibers`], and a
/// large one between two CPUs is copied by both when the sender's CPU has nothing to
/// receive, [`crate::predict::cpu_shared_time`]).
pub fn execution_of(config: &Config) -> crate::predict::Execution {
    execution_on(config.ranks, cpus(), config.uses_fibers())
}

/// The CPUs the backend places ranks on (fibers, bound threads, [`cpu_count`]) and the
/// CPUs the process may use within its quota (`available_parallelism`), as the calling
/// thread counts them.
fn cpus() -> (usize, usize) {
    let placed = cpu_count();
    let quota = std::thread::available_parallelism().map_or(placed, |n| n.get());
    (placed, quota)
}

/// [`execution`] with the counts of [`cpus`], and whether the ranks run as fibers.
fn execution_on(
    ranks: u32,
    (placed, quota): (usize, usize),
    fibers: bool,
) -> crate::predict::Execution {
    let cpus = placed.min(quota);
    let shared = ranks as usize > cpus;
    // Fibers are placed by `cpu_count` (`placed`): blocks agree only when it is the
    // count the prediction uses.
    let fibers = fibers && shared && cpus == placed;
    crate::predict::Execution {
        // A CPU per rank (`Config::ranks_have_cpus`), or fibers: a waiting sender's
        // thread comes round to it when its other fibers wait too.
        shared_copy_from: (ranks as usize <= quota || fibers).then_some(SHARED_COPY_FROM as u64),
        cpus: shared.then_some(cpus),
        combine_pass: false,
        fibers,
        ranks_per_host: None,
    }
}

/// The ranks' outcomes, in rank order, and the first rank whose thread could not be
/// started, if any, with why.
type Started<T, E> = (Vec<Result<T, Failure<E>>>, Option<(Rank, String)>);

/// A thread per rank, bound to `cpu_of(rank)` if any.
fn launch_threads<T, E, F>(
    config: &Config,
    shared: &Shared,
    registry: &Registry,
    calibration: Calibration,
    f: &F,
    cpu_of: impl Fn(Rank) -> Option<usize>,
) -> Started<T, E>
where
    F: Fn(&mut Comm<Threads<'_>>) -> Result<T, E> + Sync,
    T: Send,
    E: Send,
{
    std::thread::scope(|scope| {
        let mut handles = Vec::with_capacity(config.ranks as usize);
        let mut unstarted = None;
        for rank in 0..config.ranks {
            let (shared, f) = (&shared, &f);
            let mut builder = std::thread::Builder::new().name(format!("hypercomm-rank-{rank}"));
            if let Some(bytes) = config.stack_size {
                builder = builder.stack_size(bytes);
            }
            #[cfg(test)]
            if tests::FAIL_SPAWN_AT.get() == Some(rank) {
                unstarted = Some((rank, "injected by a test".to_string()));
                break;
            }
            let cpu = cpu_of(rank);
            match builder.spawn_scoped(scope, move || {
                if let Some(cpu) = cpu {
                    affinity::bind_any(&[cpu]);
                }
                rank_main(shared, registry, config, calibration, rank, None, f)
            }) {
                Ok(h) => handles.push(h),
                Err(e) => {
                    unstarted = Some((rank, e.to_string()));
                    break;
                }
            }
        }
        if let Some((first, _)) = &unstarted {
            // The ranks that started would wait for the ones that never will: mark
            // those failed, which ends every wait on them at once.
            (*first..config.ranks).for_each(|r| {
                shared.fail(r);
                registry.leave(r, true);
            });
        }
        let outcomes = handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|p| Err(Failure::Panicked(crate::panic_message(&*p))))
            })
            .collect::<Vec<Result<T, Failure<E>>>>();
        (outcomes, unstarted)
    })
}

/// [`Config::fibers`]: one thread per CPU (`n` of them, the j-th bound to `cpus[j]` if
/// any), running its block of ranks as fibers. A fiber's stack that cannot be had is
/// [`Error::Spawn`] before anything starts.
fn launch_fibers<T, E, F>(
    config: &Config,
    shared: &Shared,
    registry: &Registry,
    calibration: Calibration,
    f: &F,
    cpus: &[usize],
    n: usize,
) -> Result<Started<T, E>>
where
    F: Fn(&mut Comm<Threads<'_>>) -> Result<T, E> + Sync,
    T: Send,
    E: Send,
{
    let k = config.ranks as usize;
    // Every thread gets a block (n < k), in rank order.
    let mut blocks: Vec<Vec<_>> = (0..n).map(|_| Vec::new()).collect();
    for rank in 0..config.ranks {
        let stack = fibers::stack(config.stack_size).map_err(|e| Error::Spawn {
            rank,
            reason: format!("no stack for its fiber: {e}"),
        })?;
        blocks[block(rank, n, config.ranks)].push((rank, stack));
    }
    let park_for = (config.timeout / 8).clamp(Duration::from_millis(1), Duration::from_millis(100));
    Ok(std::thread::scope(|scope| {
        let mut handles = Vec::with_capacity(n);
        let mut unstarted = None;
        for (j, block) in blocks.into_iter().enumerate() {
            let ranks = block.len();
            let first = block[0].0;
            let cpu = cpus.get(j).copied();
            let builder = std::thread::Builder::new().name(format!("hypercomm-cpu-{j}"));
            match builder.spawn_scoped(scope, move || {
                if let Some(cpu) = cpu {
                    affinity::bind_any(&[cpu]);
                }
                fibers::host(shared, block, park_for, &|rank, fiber| {
                    rank_main(shared, registry, config, calibration, rank, Some(fiber), f)
                })
            }) {
                Ok(h) => handles.push((ranks, h)),
                Err(e) => {
                    unstarted = Some((first, e.to_string()));
                    break;
                }
            }
        }
        if let Some((first, _)) = &unstarted {
            (*first..config.ranks).for_each(|r| {
                shared.fail(r);
                registry.leave(r, true);
            });
        }
        let mut outcomes = Vec::with_capacity(k);
        for (ranks, h) in handles {
            match h.join() {
                Ok(block) => outcomes.extend(block),
                Err(p) => {
                    let m = crate::panic_message(&*p);
                    outcomes.extend((0..ranks).map(|_| Err(Failure::Panicked(m.clone()))));
                }
            }
        }
        (outcomes, unstarted)
    }))
}

/// One rank's thread: run `f`, then tell the others how it ended.
fn rank_main<T, E, F>(
    shared: &Shared,
    registry: &Registry,
    config: &Config,
    calibration: Calibration,
    rank: Rank,
    fiber: Option<fibers::Fiber<'_>>,
    f: &F,
) -> Result<T, Failure<E>>
where
    F: Fn(&mut Comm<Threads<'_>>) -> Result<T, E>,
{
    shared.register(rank);
    let endpoint = Threads::new(shared, rank, config, fiber).in_run(registry);
    let mut comm = Comm::new(endpoint, calibration);
    comm.set_tuning(config.tuning.clone());
    let outcome = match catch_unwind(AssertUnwindSafe(|| f(&mut comm))) {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(Failure::Returned(e)),
        Err(p) => Err(Failure::Panicked(crate::panic_message(&*p))),
    };
    drop(comm);
    match outcome {
        Ok(_) => shared.leave(rank),
        Err(_) => shared.fail(rank),
    }
    registry.leave(rank, outcome.is_err());
    outcome
}

/// The CPUs the calling thread may run on (`sched_getaffinity` on Linux; elsewhere the
/// system's count): the CPUs the backend places ranks on when it runs them as fibers
/// (in blocks, [`block`]) or binds their threads ([`Config::pin`]).
pub fn cpu_count() -> usize {
    affinity::cpu_count()
}

/// Binding threads to CPUs ([`Config::pin`]).
mod affinity {
    /// How many CPUs the calling thread may run on (the system's count where the
    /// set is unknown).
    pub(super) fn cpu_count() -> usize {
        match allowed().len() {
            0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
            n => n,
        }
    }

    /// The CPUs this process may run on, in increasing order (empty if unknown).
    #[cfg(target_os = "linux")]
    pub(super) fn allowed() -> Vec<usize> {
        // SAFETY: `set` is a plain bit set, zeroed, and its size is passed along.
        let set = unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
                return Vec::new();
            }
            set
        };
        (0..libc::CPU_SETSIZE as usize)
            // SAFETY: `cpu` is below CPU_SETSIZE, the set's capacity.
            .filter(|&cpu| unsafe { libc::CPU_ISSET(cpu, &set) })
            .collect()
    }

    /// Threads bound by the runs of this process still going, per CPU number.
    static BOUND: std::sync::Mutex<Vec<u32>> = std::sync::Mutex::new(Vec::new());

    /// The CPUs a run binds its threads to, counted in [`BOUND`] until dropped.
    #[derive(Default)]
    pub(crate) struct Claim(Vec<usize>);

    impl Drop for Claim {
        fn drop(&mut self) {
            let mut bound = BOUND.lock().unwrap_or_else(|p| p.into_inner());
            for &cpu in &self.0 {
                bound[cpu] = bound[cpu].saturating_sub(1);
            }
        }
    }

    /// `allowed` (n CPUs) turned by the offset at which `threads` threads placed by
    /// [`super::slot`] (the j-th on that position of the turned list) land on the
    /// CPUs where runs of this process still going have bound the fewest threads (the
    /// least sum, then the least most; the first such offset, 0 when none is bound), and
    /// the claim of those CPUs. Concurrent runs (tests, several communicators of one
    /// program) then take CPUs apart while there are enough, where each would otherwise
    /// bind its rank 0 to the first CPU.
    pub(crate) fn place(mut allowed: Vec<usize>, threads: u32) -> (Vec<usize>, Claim) {
        let n = allowed.len();
        if n == 0 || threads == 0 {
            return (allowed, Claim::default());
        }
        let mut bound = BOUND.lock().unwrap_or_else(|p| p.into_inner());
        let top = allowed.iter().copied().max().unwrap_or(0);
        if bound.len() <= top {
            bound.resize(top + 1, 0);
        }
        let off = offset(&bound, &allowed, threads);
        allowed.rotate_left(off);
        let claimed: Vec<usize> = (0..threads)
            .map(|j| allowed[super::slot(j, n, threads)])
            .collect();
        for &cpu in &claimed {
            bound[cpu] += 1;
        }
        (allowed, Claim(claimed))
    }

    /// [`place`]'s offset, given `bound[cpu]` threads bound on each CPU number.
    pub(super) fn offset(bound: &[u32], allowed: &[usize], threads: u32) -> usize {
        let n = allowed.len();
        let load = |off: usize, j: u32| {
            let cpu = allowed[(super::slot(j, n, threads) + off) % n];
            u64::from(bound.get(cpu).copied().unwrap_or(0))
        };
        let cost = |off: usize| {
            let loads = (0..threads).map(|j| load(off, j));
            (loads.clone().sum::<u64>(), loads.max().unwrap_or(0))
        };
        (0..n).min_by_key(|&off| (cost(off), off)).unwrap_or(0)
    }

    /// `cpus` with one hardware thread of every core first, then the second of every
    /// core …, each round in the order given (a CPU's core: its `physical_package_id`
    /// and `core_id` in `/sys/devices/system/cpu/cpuN/topology`; a CPU whose core
    /// cannot be read is a core of its own). `mpirun --bind-to core` likewise gives
    /// ranks whole cores before it gives any two hardware threads of one.
    pub(crate) fn by_core(cpus: Vec<usize>) -> Vec<usize> {
        // Read once per CPU and process: a run's launch would read 2 files a CPU.
        type Core = Option<(i64, i64)>;
        // Per CPU number: `None` not read yet, `Some(core)` read.
        static CORES: std::sync::Mutex<Vec<Option<Core>>> = std::sync::Mutex::new(Vec::new());
        let mut known = CORES.lock().unwrap_or_else(|p| p.into_inner());
        let top = cpus.iter().copied().max().map_or(0, |c| c + 1);
        if known.len() < top {
            known.resize(top, None);
        }
        let cores: Vec<Core> = cpus
            .iter()
            .map(|&cpu| *known[cpu].get_or_insert_with(|| core_of(cpu)))
            .collect();
        drop(known);
        by_core_of(cpus, &cores)
    }

    /// `cpu`'s (`physical_package_id`, `core_id`), if the system says.
    fn core_of(cpu: usize) -> Option<(i64, i64)> {
        let read = |f: &str| {
            std::fs::read_to_string(format!("/sys/devices/system/cpu/cpu{cpu}/topology/{f}"))
                .ok()
                .and_then(|s| s.trim().parse::<i64>().ok())
        };
        read("physical_package_id").zip(read("core_id"))
    }

    /// [`by_core`] given each CPU's core (`None`: a core of its own).
    pub(super) fn by_core_of<C: PartialEq>(cpus: Vec<usize>, cores: &[Option<C>]) -> Vec<usize> {
        // The how-many-th thread of its core each CPU is, in the order given.
        let nth: Vec<usize> = (0..cpus.len())
            .map(|i| match &cores[i] {
                Some(c) => cores[..i].iter().filter(|d| d.as_ref() == Some(c)).count(),
                None => 0,
            })
            .collect();
        let mut order: Vec<usize> = (0..cpus.len()).collect();
        order.sort_by_key(|&i| (nth[i], i));
        order.into_iter().map(|i| cpus[i]).collect()
    }

    /// Bind the calling thread to any of `cpus` (a rank's one CPU; or the launch's
    /// allowed CPUs, for a thread a bound rank starts, which inherits the rank's one);
    /// nothing when `cpus` is empty, and if the system refuses, it stays as it was.
    #[cfg(target_os = "linux")]
    pub(crate) fn bind_any(cpus: &[usize]) {
        if cpus.is_empty() {
            return;
        }
        // SAFETY: `set` is a plain bit set, zeroed, and its size is passed along; every
        // CPU came from `allowed`, so is below CPU_SETSIZE.
        unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            for &cpu in cpus {
                libc::CPU_SET(cpu, &mut set);
            }
            // Pid 0: the calling thread. A refusal leaves the thread as it was.
            libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
        }
    }

    #[cfg(not(target_os = "linux"))]
    pub(crate) fn bind_any(_cpus: &[usize]) {}

    #[cfg(not(target_os = "linux"))]
    pub(super) fn allowed() -> Vec<usize> {
        Vec::new()
    }
}

/// A receive posted and not yet completed.
struct PendingRecv {
    from: Rank,
    tag: Tag,
    parts: *const PartMut,
    count: usize,
}

/// One rank's end of the threads backend.
pub struct Threads<'s> {
    shared: &'s Shared,
    rank: Rank,
    timeout: Duration,
    spin: u32,
    yield_for: Duration,
    /// Peers (and steps) with sends posted since the last `wait_all`.
    sent_to: Vec<(Rank, u32)>,
    recvs: VecDeque<PendingRecv>,
    /// The thread that runs this rank as a fiber ([`Config::fibers`]), if it does.
    fiber: Option<fibers::Fiber<'s>>,
    /// The run's groups, for sub-communicators (`None` for endpoints made by tests).
    registry: Option<&'s Registry>,
    /// This communicator's group, unless it is the run's: it owns `shared`.
    group: Option<Arc<Group>>,
    /// Splits (and duplications) of this communicator so far.
    splits: u32,
}

/// `check()`'s verdict on a wait, `Ok(true)` if what the wait is for is there after all.
/// A failure it reports stands only if `ready()` is still false once it is seen: a
/// sender that sends eagerly and leaves (its program is over) is marked gone after its
/// message is visible (the `SeqCst` store of [`Shared::leave`] follows the send), so a
/// receiver whose last look came just before the message, and whose check comes just
/// after the departure, must look once more, or it would fail a receive that can
/// complete (seen once in CI, in the point-to-point example of the crate's docs: rank
/// 3 failed with `PeerFailed { rank: 1 }` while rank 1's message waited for it).
#[inline]
fn check_unless_ready(
    ready: &mut impl FnMut() -> bool,
    check: &mut impl FnMut() -> Result<()>,
) -> Result<bool> {
    match check() {
        Ok(()) => Ok(false),
        Err(_) if ready() => Ok(true),
        Err(e) => Err(e),
    }
}

impl<'s> Threads<'s> {
    /// The CPUs where the run was launched ([`cpus`]): this rank's thread may be bound
    /// to one, and the tuning's key and the prediction both count the launch's.
    fn launch_cpus(&self) -> (usize, usize) {
        self.registry.map_or_else(cpus, |r| r.cpus())
    }

    /// Whether the run binds its ranks to CPUs ([`Config::pin`], and the launching
    /// thread's CPUs were known); endpoints made without a run (tests) count as bound.
    fn bound(&self) -> bool {
        self.registry.map_or(true, |r| r.bound())
    }

    fn new(
        shared: &'s Shared,
        rank: Rank,
        config: &Config,
        fiber: Option<fibers::Fiber<'s>>,
    ) -> Self {
        Threads {
            shared,
            rank,
            timeout: config.timeout,
            spin: config.spin,
            yield_for: config.yield_for,
            sent_to: Vec::new(),
            recvs: VecDeque::new(),
            fiber,
            registry: None,
            group: None,
            splits: 0,
        }
    }

    /// The same, an endpoint of the run that `registry` serves.
    fn in_run(mut self, registry: &'s Registry) -> Self {
        self.registry = Some(registry);
        self
    }

    /// Block until `ready()`; `check()` reports failures (it runs once the spinning is
    /// over, so the fast path never looks at other ranks' flags).
    fn wait(
        &self,
        peer: Rank,
        step: u32,
        mut ready: impl FnMut() -> bool,
        mut check: impl FnMut() -> Result<()>,
    ) -> Result<()> {
        // Most waits are over before they start (an eager send, a message already
        // there): no clock read for them, spinning or not.
        if ready() {
            return Ok(());
        }
        if let Some(fiber) = self.fiber {
            return self.wait_as_fiber(fiber, peer, step, ready, check);
        }
        for _ in 0..self.spin {
            std::hint::spin_loop();
            if ready() {
                return Ok(());
            }
        }
        let start = Instant::now();
        let deadline = start + self.timeout;
        let yield_until = start + self.yield_for.min(self.timeout);
        let mut yields = 0u32;
        while !self.yield_for.is_zero() {
            if ready() {
                return Ok(());
            }
            yields = yields.wrapping_add(1);
            if yields % YIELDS_PER_CHECK == 0 {
                if check_unless_ready(&mut ready, &mut check)? {
                    return Ok(());
                }
                if Instant::now() >= yield_until {
                    break;
                }
            }
            std::thread::yield_now();
        }
        loop {
            if ready() || check_unless_ready(&mut ready, &mut check)? {
                return Ok(());
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(self.timed_out(peer, step));
            }
            self.shared.park(self.rank, deadline - now, &mut ready);
        }
    }

    /// [`Threads::wait`] on a fiber: hand the CPU to the next rank of the thread
    /// between looks, saying once the wait is past the yield window (the thread may
    /// then park); the timeout as on a thread. Out of line, so that the threads' wait
    /// stays as small as it was (before it was, a 2-rank broadcast after a tree barrier
    /// measured 3–8 ns slower than before fibers in four A/B runs; after, within the
    /// noise).
    #[cold]
    #[inline(never)]
    fn wait_as_fiber(
        &self,
        fiber: fibers::Fiber<'_>,
        peer: Rank,
        step: u32,
        mut ready: impl FnMut() -> bool,
        mut check: impl FnMut() -> Result<()>,
    ) -> Result<()> {
        let start = Instant::now();
        let deadline = start + self.timeout;
        let idle_after = start + self.yield_for.min(self.timeout);
        let (mut polls, mut idle) = (0u32, false);
        loop {
            fiber.pause(if idle {
                fibers::Pause::Idle
            } else {
                fibers::Pause::Waiting
            });
            if ready() {
                return Ok(());
            }
            polls = polls.wrapping_add(1);
            if idle || polls % YIELDS_PER_CHECK == 0 {
                if check_unless_ready(&mut ready, &mut check)? {
                    return Ok(());
                }
                let now = Instant::now();
                if now >= deadline {
                    return Err(self.timed_out(peer, step));
                }
                idle = now >= idle_after;
            }
        }
    }

    /// This rank's wait for `peer` in `step` outlasted the timeout.
    fn timed_out(&self, peer: Rank, step: u32) -> Error {
        Error::Timeout {
            rank: self.rank,
            peer,
            step,
        }
    }

    /// `PeerFailed` if any rank failed, or if `peer` left while we need it. Blames no
    /// one for the latter: the wait may still find what `peer` sent before it left
    /// ([`check_unless_ready`]), and a rank that sent and left has done nothing wrong;
    /// [`Threads::take`] blames it once the failure stands.
    fn check_peer(&self, peer: Rank) -> Result<()> {
        if let Some(rank) = self.shared.failed() {
            return Err(Error::PeerFailed { rank });
        }
        if self.shared.is_gone(peer) {
            return Err(Error::PeerFailed { rank: peer });
        }
        Ok(())
    }

    /// Wait for the next message from `from` and check it is the one expected.
    fn take(&self, from: Rank, tag: Tag, len: usize) -> Result<Claim<'s>> {
        let (shared, me) = (self.shared, self.rank);
        self.wait(
            from,
            tag.step,
            || {
                shared.prefetch_next(from, me, len);
                shared.has_message_for_me(from, me)
            },
            || self.check_peer(from),
        )
        .map_err(|e| match e {
            // `from` left while we need it: it is the run's failure, unless a rank
            // failed first (then that one is named, as the other waits do).
            Error::PeerFailed { rank } if rank == from && shared.is_gone(from) => {
                Error::PeerFailed {
                    rank: shared.blame(from),
                }
            }
            e => e,
        })?;
        let claim = match shared.take(from, me) {
            Some(c) => c,
            // Withdrawn since the hint: `from` cancelled its sends, after an error that
            // is usually another rank's failure (name the first failed rank, as the
            // other waits do).
            None => {
                let rank = shared.failed().unwrap_or(from);
                return Err(Error::PeerFailed { rank });
            }
        };
        if claim.tag() != tag {
            return Err(Error::TagMismatch {
                rank: me,
                peer: from,
                expected: tag,
                got: claim.tag(),
            });
        }
        if claim.len() != len {
            return Err(Error::LengthMismatch {
                rank: me,
                peer: from,
                step: tag.step,
                expected: len,
                got: claim.len(),
            });
        }
        Ok(claim)
    }

    /// Complete the posted receives, in order.
    fn finish_recvs(&mut self) -> Result<()> {
        while let Some(r) = self.recvs.front() {
            // SAFETY: `post_recv`'s contract keeps the parts list valid until `wait_all`.
            let parts = unsafe { std::slice::from_raw_parts(r.parts, r.count) };
            let len = parts.iter().map(PartMut::len).sum();
            let mut claim = self.take(r.from, r.tag, len)?;
            let large = len >= rendezvous::SHARE_FROM && claim.is_lent();
            let incoming = claim.incoming();
            // A large rendezvous, one piece into one part: the sender, waiting for it to
            // be taken, copies half (small messages skip the look at the pieces).
            let shared = large.then(|| {
                let mut pieces = incoming.pieces();
                match (pieces.next(), pieces.next(), parts) {
                    (Some(src), None, [dst]) => Some((src.as_ptr(), dst.ptr())),
                    _ => None,
                }
            });
            match shared.flatten() {
                // SAFETY: as below; `src` is the whole message, `dst` the whole part.
                Some((src, dst)) => unsafe { self.shared.copy_shared(r.from, src, dst, len) },
                // SAFETY: the claim keeps the sender's memory readable; `post_recv`'s
                // contract makes `parts` writable and used by no one else, so disjoint.
                None => unsafe { incoming.copy_to(parts) },
            }
            self.recvs.pop_front();
        }
        Ok(())
    }

    /// `PeerFailed` if a peer we sent to since the last wait has left without taking
    /// a message of ours.
    fn check_receivers(&self) -> Result<()> {
        let (shared, me) = (self.shared, self.rank);
        for &(q, _) in &self.sent_to {
            // `is_gone` first: once it is seen, `has_message` no longer shows what `q`
            // took before leaving.
            if shared.is_gone(q) && shared.has_message(me, q) {
                return Err(Error::PeerFailed {
                    rank: shared.blame(q),
                });
            }
        }
        Ok(())
    }

    /// Wait until every rendezvous send posted since the last wait was taken, and
    /// check that no receiver of an eager one left without it.
    fn finish_sends(&mut self) -> Result<()> {
        let (shared, me) = (self.shared, self.rank);
        let (peer, step) = self.sent_to.first().copied().unwrap_or((me, 0));
        let waited = self.wait(
            peer,
            step,
            || {
                shared.help(me);
                shared.outstanding(me) == 0
            },
            || {
                if let Some(rank) = shared.failed() {
                    return Err(Error::PeerFailed { rank });
                }
                self.check_receivers()
            },
        );
        // Eager sends are complete, but one whose receiver is gone without taking it
        // failed, as an untaken rendezvous would have (a receiver that leaves after
        // this check is told by `launch`, or fails on its own account).
        let waited = waited.and_then(|()| self.check_receivers());
        match waited {
            // A timeout names a peer that has not taken its message, if one is left
            // (looked up only then: it reads every peer's mailbox).
            Err(Error::Timeout { rank, peer, step }) => {
                let pending = self
                    .sent_to
                    .iter()
                    .find(|&&(q, _)| shared.has_message(me, q));
                let (peer, step) = pending.map_or((peer, step), |&(q, s)| (q, s));
                Err(Error::Timeout { rank, peer, step })
            }
            Err(e) => Err(e),
            Ok(()) => {
                self.sent_to.clear();
                Ok(())
            }
        }
    }

    fn check_rank(&self, peer: Rank) -> Result<()> {
        let nodes = self.shared.size();
        if peer == self.rank {
            return Err(Error::SelfMessage { rank: peer });
        }
        if peer >= nodes {
            let e = hypercomm::error::Error::RankOutOfRange {
                what: "peer",
                rank: peer.into(),
                nodes,
            };
            return Err(e.into());
        }
        Ok(())
    }
}

impl Transport for Threads<'_> {
    fn rank(&self) -> Rank {
        self.rank
    }

    /// `threads-<ranks>ranks-<cpus>cpus[-fibers][-unbound]`: picks measured with one
    /// count of ranks and CPUs, or with the ranks bound to CPUs ([`Config::pin`], the
    /// default), are not read under another. The CPUs are those of the launch,
    /// as for [`Transport::execution`]: this rank's thread may be bound to one (it
    /// said `1cpus` for 4 ranks as fibers of 2 CPUs before).
    fn machine_key(&self) -> Option<String> {
        let fibers = if self.fiber.is_some() { "-fibers" } else { "" };
        // Bound and unbound ranks time apart (a rank the scheduler may move loses its
        // caches and its core's turn differently), so their picks are kept apart.
        let unbound = if self.bound() { "" } else { "-unbound" };
        let (placed, quota) = self.launch_cpus();
        Some(format!(
            "threads-{}ranks-{}cpus{fibers}{unbound}",
            self.size(),
            placed.min(quota)
        ))
    }

    fn size(&self) -> u32 {
        self.shared.size()
    }

    fn execution(&self) -> crate::predict::Execution {
        execution_on(self.size(), self.launch_cpus(), self.fiber.is_some())
    }

    unsafe fn post_send(&mut self, to: Rank, tag: Tag, parts: &[Part]) -> Result<()> {
        self.check_rank(to)?;
        // SAFETY: forwarded from this function's contract: the memory stays valid until
        // `wait_all` or `cancel_all`, which both wait for `outstanding == 0` (an eager
        // send is copied during the call and never outstanding).
        unsafe { self.shared.post(self.rank, to, tag, parts) };
        self.sent_to.push((to, tag.step));
        Ok(())
    }

    unsafe fn post_recv(&mut self, from: Rank, tag: Tag, parts: &[PartMut]) -> Result<()> {
        self.check_rank(from)?;
        self.recvs.push_back(PendingRecv {
            from,
            tag,
            parts: parts.as_ptr(),
            count: parts.len(),
        });
        Ok(())
    }

    fn recv_with(
        &mut self,
        from: Rank,
        tag: Tag,
        len: usize,
        sink: &mut dyn FnMut(Incoming<'_>),
    ) -> Result<()> {
        self.check_rank(from)?;
        self.finish_recvs()?;
        let mut claim = self.take(from, tag, len)?;
        sink(claim.incoming());
        Ok(())
    }

    fn wait_all(&mut self) -> Result<()> {
        self.finish_recvs()?;
        self.finish_sends()
    }

    #[inline]
    fn expect(&self, from: Rank, len: usize) {
        if from < self.shared.size() && from != self.rank {
            self.shared.prefetch_slot(from, self.rank, len);
        }
    }

    fn cancel_all(&mut self) {
        self.recvs.clear();
        // Withdraw what is left of the sends since the last wait, peer by peer; eager
        // messages of earlier, completed waits stay for their receivers.
        self.sent_to.sort_unstable_by_key(|&(q, _)| q);
        for run in self.sent_to.chunk_by(|a, b| a.0 == b.0) {
            self.shared.withdraw(self.rank, run[0].0, run.len());
        }
        self.sent_to.clear();
        // Receivers still copying hold claims; wait for them (no timeout: returning
        // while they read our memory would be unsound, and a copy always ends).
        let (shared, me) = (self.shared, self.rank);
        while shared.outstanding(me) != 0 {
            match self.fiber {
                // The receiver may be a rank of this thread.
                Some(fiber) => fiber.pause(fibers::Pause::Waiting),
                None => shared.park(me, Duration::from_millis(1), || shared.outstanding(me) == 0),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;
    use std::time::Duration;

    use super::*;

    thread_local! {
        /// A rank whose thread `launch` fails to start, as the system would (the
        /// launching thread's own setting, so concurrent tests are not affected).
        pub(super) static FAIL_SPAWN_AT: Cell<Option<Rank>> = const { Cell::new(None) };
    }

    /// Asking for fibers changes the eager limit only when fibers run: with no more
    /// ranks than CPUs the ranks are threads, with `Config::new`'s limit.
    #[test]
    fn fibers_that_do_not_run_keep_the_eager_limit_of_threads() {
        let cpus = affinity::cpu_count() as u32;
        for k in [1, cpus] {
            let asked = Config::new(k).fibers(true);
            assert!(!asked.uses_fibers());
            assert_eq!(asked.eager, Config::new(k).eager, "{k} ranks");
        }
        let over = Config::new(cpus + 1).fibers(true);
        assert!(over.uses_fibers());
        assert_eq!(over.eager, EAGER_LIMIT_SPIN);
    }

    /// Runs bound at once take the CPUs where the fewest threads of this process are
    /// bound: none bound, from the first CPU; else the turn of the list whose CPUs (the
    /// first k with k threads on n ≥ k CPUs) hold the fewest (sum, then most), the
    /// first of equals.
    #[test]
    fn a_run_binds_where_the_fewest_threads_are_bound() {
        let allowed = [0, 1, 2, 3];
        assert_eq!(affinity::offset(&[], &allowed, 2), 0);
        assert_eq!(affinity::offset(&[0; 4], &allowed, 4), 0);
        // 2 threads on CPUs 0 and 1: the next pair goes to 2 and 3.
        assert_eq!(affinity::offset(&[1, 1, 0, 0], &allowed, 2), 2);
        // One thread: the first unloaded CPU.
        assert_eq!(affinity::offset(&[1, 1, 0, 0], &allowed, 1), 2);
        // Everything loaded alike: the first offset.
        assert_eq!(affinity::offset(&[2, 2, 2, 2], &allowed, 3), 0);
        // Equal sums: the lower most, {1, 1} at 2 over {0, 2} at 0 and {2, 0} at 4.
        assert_eq!(affinity::offset(&[0, 2, 1, 1, 2], &[0, 1, 2, 3, 4], 2), 2);
        // CPU numbers, not positions, index the counts (allowed CPUs 4 and 6 only).
        assert_eq!(affinity::offset(&[0, 0, 0, 0, 5, 0, 0], &[4, 6], 1), 1);
    }

    /// The CPUs are listed a core each first: on numbering where CPU i and i + n/2 are
    /// one core's two threads, as given; where 2i and 2i + 1 are, the even ones first; a
    /// CPU of unknown core counts as a core of its own. A rank with a CPU each takes the
    /// r-th (so 2 ranks of 4 cores × 2 threads get two cores), more ranks than CPUs
    /// take blocks.
    #[test]
    fn ranks_bind_to_whole_cores_before_hardware_threads() {
        let cpus: Vec<usize> = (0..8).collect();
        let halves: Vec<_> = (0..8).map(|c| Some((0, c % 4))).collect();
        assert_eq!(affinity::by_core_of(cpus.clone(), &halves), cpus);
        let pairs: Vec<_> = (0..8).map(|c| Some((0, c / 2))).collect();
        assert_eq!(
            affinity::by_core_of(cpus.clone(), &pairs),
            [0, 2, 4, 6, 1, 3, 5, 7]
        );
        let some = [Some(1), None, Some(1), None];
        assert_eq!(affinity::by_core_of(vec![4, 5, 6, 7], &some), [4, 5, 7, 6]);
        assert_eq!((0..2).map(|r| slot(r, 8, 2)).collect::<Vec<_>>(), [0, 1]);
        assert_eq!(
            (0..4).map(|r| slot(r, 2, 4)).collect::<Vec<_>>(),
            [0, 0, 1, 1]
        );
    }

    /// A claim counts its CPUs while it lives and gives them back when dropped, and
    /// the next run meanwhile lands elsewhere (CPU numbers this process is unlikely to
    /// have, so that concurrent tests' runs do not count on them).
    #[test]
    fn a_claim_holds_its_cpus_until_dropped() {
        let allowed = vec![1000, 1001, 1002, 1003];
        let (first, claim) = affinity::place(allowed.clone(), 2);
        assert_eq!(first, allowed);
        let (second, other) = affinity::place(allowed.clone(), 2);
        assert_eq!(second, vec![1002, 1003, 1000, 1001]);
        drop((claim, other));
        let (again, _claim) = affinity::place(allowed.clone(), 2);
        assert_eq!(again, allowed);
    }

    /// What the prediction is told: a CPU per rank shares large copies with an idle
    /// sender; ranks sharing CPUs take turns, and as fibers (placed on the CPUs the
    /// prediction counts) they share them too; time-sliced threads do not.
    #[test]
    fn the_execution_says_who_shares_a_copy() {
        let from = Some(SHARED_COPY_FROM as u64);
        let own = execution_on(2, (2, 2), false);
        assert_eq!(
            (own.shared_copy_from, own.cpus, own.fibers),
            (from, None, false)
        );
        let fibers = execution_on(4, (2, 2), true);
        assert_eq!(
            (fibers.shared_copy_from, fibers.cpus, fibers.fibers),
            (from, Some(2), true)
        );
        let sliced = execution_on(4, (2, 2), false);
        assert_eq!(
            (sliced.shared_copy_from, sliced.cpus, sliced.fibers),
            (None, Some(2), false)
        );
        // Fibers placed on 4 CPUs, the quota 2: blocks disagree, priced as threads.
        let quota = execution_on(4, (4, 2), true);
        assert_eq!((quota.shared_copy_from, quota.fibers), (None, false));
    }

    /// The tuning file's key names the CPUs the ranks were launched on, not the one
    /// CPU a pinned rank's thread may run on: ranks bound one to a CPU, as fibers of
    /// the CPUs or as threads, all see the launch's count.
    #[test]
    fn the_machine_key_counts_the_launch_cpus_not_a_pinned_rank_thread() {
        let cpus = affinity::cpu_count();
        for fibers in [true, false] {
            let cfg = Config::new(cpus as u32 + 1)
                .pin(true)
                .fibers(fibers)
                .calibration(Calibration::default());
            let keys = run_with(&cfg, |comm| {
                Ok::<_, Error>(comm.transport.machine_key().unwrap_or_default())
            })
            .unwrap();
            let suffix = if fibers { "-fibers" } else { "" };
            let want = format!("threads-{}ranks-{cpus}cpus{suffix}", cpus + 1);
            assert!(keys.iter().all(|k| *k == want), "{keys:?}, want {want}");
        }
    }

    /// Unbound ranks keep their picks apart from bound ones: the same ranks, CPUs and
    /// fibers, `pin(false)`, have a key of their own.
    #[test]
    fn the_machine_key_keeps_unbound_runs_apart() {
        let cpus = affinity::cpu_count();
        let key = |pin: bool| {
            let cfg = Config::new(2).pin(pin).calibration(Calibration::default());
            run_with(&cfg, |comm| {
                Ok::<_, Error>(comm.transport.machine_key().unwrap_or_default())
            })
            .unwrap()
        };
        let bound = format!("threads-2ranks-{cpus}cpus");
        // Binding needs the launching thread's CPUs: known on Linux.
        if !affinity::allowed().is_empty() {
            assert!(key(true).iter().all(|k| *k == bound), "{:?}", key(true));
        }
        let unbound = format!("{bound}-unbound");
        assert!(key(false).iter().all(|k| *k == unbound), "{:?}", key(false));
    }

    #[test]
    fn ranks_started_before_one_that_cannot_be_are_failed_not_left_waiting() {
        // Ranks 0 and 1 start and enter a barrier with rank 2, which never starts: they
        // must end with `PeerFailed { rank: 2 }` (without the marking, nobody fails and
        // their waits end in `Timeout` instead), and the run must report the spawn.
        FAIL_SPAWN_AT.set(Some(2));
        let cfg = Config::new(4)
            .timeout(Duration::from_secs(20))
            .calibration(Calibration::default());
        let seen = std::sync::Mutex::new(Vec::new());
        let got = run_each(&cfg, |comm| {
            let r = comm.barrier();
            seen.lock().unwrap().push((comm.rank(), r.clone()));
            r
        });
        FAIL_SPAWN_AT.set(None);
        assert!(matches!(got, Err(Error::Spawn { rank: 2, .. })), "{got:?}");
        let mut seen = seen.into_inner().unwrap();
        seen.sort_by_key(|s| s.0);
        assert_eq!(
            seen,
            [
                (0, Err(Error::PeerFailed { rank: 2 })),
                (1, Err(Error::PeerFailed { rank: 2 }))
            ]
        );
    }

    /// A wait whose check reports a failure (its peer has just left) after what it waits
    /// for has arrived (the peer's last message, sent before it left) must complete:
    /// here the check itself makes the awaited thing arrive, as a sender that sends and
    /// leaves between the waiter's last look and its check does. Without the second look
    /// the wait fails with the check's error. A failure with nothing arrived stands.
    #[test]
    fn a_failure_seen_after_the_awaited_message_arrived_does_not_fail_the_wait() {
        for window in [Duration::ZERO, Duration::from_secs(3600)] {
            let shared = Shared::new(2, 512);
            let config = Config::new(2)
                .timeout(Duration::from_secs(3600))
                .yield_for(window);
            let threads = Threads::new(&shared, 0, &config, None);
            let arrived = Cell::new(false);
            let got = threads.wait(
                1,
                0,
                || arrived.get(),
                || {
                    arrived.set(true);
                    Err(Error::PeerFailed { rank: 1 })
                },
            );
            assert_eq!(got, Ok(()), "yield window {window:?}");
            let got = threads.wait(1, 0, || false, || Err(Error::PeerFailed { rank: 1 }));
            assert_eq!(
                got,
                Err(Error::PeerFailed { rank: 1 }),
                "yield window {window:?}"
            );
        }
    }

    /// Rank 1 waits for rank 0, which sends eagerly and leaves between rank 1's last
    /// look and its check (done here inside the check). The wait is rescued, and must
    /// leave no blame behind: before, the check blamed rank 0 on the way, so that every
    /// later wait of any rank failed with `PeerFailed { rank: 0 }` (found in review).
    #[test]
    fn a_rescued_wait_leaves_no_blame_behind() {
        use crate::transport::{Part, Tag};
        let shared = Shared::new(3, 512);
        let config = Config::new(3)
            .timeout(Duration::from_secs(3600))
            .yield_for(Duration::ZERO);
        let r1 = Threads::new(&shared, 1, &config, None);
        let data = [7u8; 8];
        let parts = [Part::new(&data)];
        let sent = Cell::new(false);
        let got = r1.wait(
            0,
            0,
            || shared.has_message_for_me(0, 1),
            || {
                if !sent.replace(true) {
                    // Rank 0: an eager send, then its closure returns Ok.
                    // SAFETY: eager (8 B), so complete once posted; `data` outlives it.
                    unsafe { shared.post(0, 1, Tag::p2p(), &parts) };
                    shared.leave(0);
                }
                r1.check_peer(0)
            },
        );
        assert_eq!(got, Ok(()));
        assert!(shared.take(0, 1).is_some());
        assert_eq!(
            shared.failed(),
            None,
            "rank 0 left after sending: no one failed"
        );
        let r2 = Threads::new(&shared, 2, &config, None);
        assert_eq!(r2.check_peer(1), Ok(()));
        // A wait that finds nothing blames the rank that left.
        let mut r1 = r1;
        let mut buf = [0u8; 8];
        let recv = [crate::transport::PartMut::new(&mut buf)];
        // SAFETY: `buf` and `recv` outlive the wait; the receive fails before writing.
        unsafe { crate::Transport::post_recv(&mut r1, 0, Tag::p2p(), &recv).unwrap() };
        assert_eq!(
            crate::Transport::wait_all(&mut r1),
            Err(Error::PeerFailed { rank: 0 })
        );
        assert_eq!(shared.failed(), Some(0));
    }

    /// Ranks 0 and 1, fibers of one thread, wait for rank 2 (the other thread), which
    /// sleeps first: the first thread goes idle and parks (each of its ranks marked
    /// parked), and rank 2's message must unpark it. Without the marks, the send would
    /// not unpark it (the thread would sleep out its park, 100 ms with a timeout this
    /// long), and the count each rank reads as its broadcast returns (before anyone
    /// leaves, which unparks everyone) would be 0.
    #[test]
    fn a_thread_of_idle_fibers_parks_and_a_message_wakes_it() {
        let shared = Shared::new(3, 512);
        let config = Config::new(3)
            .timeout(Duration::from_secs(3600))
            .yield_for(Duration::ZERO)
            .fibers(true);
        let f = |comm: &mut Comm<Threads<'_>>| {
            let mut buf = [0u32; 4];
            if comm.rank() == 2 {
                std::thread::sleep(Duration::from_millis(300));
                buf = [7; 4];
            }
            comm.broadcast_into(2, &mut buf, crate::Algo::Named("linear"))?;
            let unparked = shared.unparks(0) + shared.unparks(1);
            comm.barrier()?;
            Ok::<_, Error>((buf, unparked))
        };
        let (outcomes, unstarted) = launch_fibers(
            &config,
            &shared,
            &Registry::new(&config, Some(2), Vec::new()),
            Calibration::default(),
            &f,
            &[],
            2,
        )
        .unwrap();
        assert!(unstarted.is_none());
        assert_eq!(outcomes.len(), 3);
        for (r, o) in outcomes.iter().enumerate() {
            let (buf, unparked) = o.as_ref().unwrap();
            assert_eq!(buf, &[7; 4]);
            if r < 2 {
                assert!(*unparked >= 1, "rank {r}'s thread was never unparked");
            }
        }
    }
}
