//! # hypercomm-mpi
//!
//! The MPI backend of [`hypercomm_rt`]: the library's verified schedules run over
//! non-blocking MPI point-to-point (`MPI_Isend`, `MPI_Irecv`, polled with `MPI_Test`),
//! one schedule step at a time, exactly as over the threads backend.
//!
//! An rsmpi program switches one call at a time:
//!
//! ```no_run
//! use hypercomm_mpi::HypercommExt;
//! use hypercomm_rt::{Algo, Op};
//! use mpi::traits::*;
//!
//! let universe = mpi::initialize().unwrap();
//! let world = universe.world();
//! let mut comm = world.hypercomm().unwrap(); // collective, like MPI_Comm_dup
//! let mut sum = [0u64];
//! comm.all_reduce_into(&[world.rank() as u64], &mut sum, &Op::sum(), Algo::Auto).unwrap();
//! world.barrier(); // rsmpi's own calls keep working on `world`
//! ```
//!
//! [`run`] wraps a rank's work so that a failure (an error or a panic) is announced to
//! every peer, whose waits then end with [`Error::PeerFailed`] naming the failed rank.
//! A rank that leaves (drops its communicator, e.g. returns from [`run`]) while a peer
//! still waits for one of its messages gives that peer the same error, at once.
//!
//! ## How messages map onto MPI
//!
//! - A hypercomm communicator owns two duplicates of the MPI communicator it was built
//!   from (`MPI_Comm_dup`, so building one is collective): one for data, one for
//!   failure notices. The user's own traffic on the original communicator never meets
//!   ours, in either direction.
//! - A [`Tag`] `{epoch, step}` becomes an MPI tag (the step in the low bits, the epoch
//!   above, below the highest power of two within `MPI_TAG_UB`, which marks departure
//!   notices). Sends are `MPI_Isend`s. A receive waits until the
//!   sender's next message is there (`MPI_Improbe` with `MPI_ANY_TAG`, so the sender's
//!   messages match the receives in order, as the [`Transport`] contract says), checks
//!   its tag and length, then receives it in place (`MPI_Imrecv`): a message of another
//!   call or step is [`Error::TagMismatch`], one of another length
//!   [`Error::LengthMismatch`], and neither ever lands in the caller's memory. (A
//!   pre-posted `MPI_Irecv` would save the probe, but Open MPI 4.1's shared-memory
//!   single-copy path writes past the receive buffer when a longer message truncates.)
//! - A send or receive of several parts (a gather or scatter list of regions) is one
//!   message described by an `MPI_Type_create_hindexed` datatype: no packing copy. A
//!   part of one region is sent as bytes directly.
//! - Combining receives ([`Transport::recv_with`]) land in a scratch buffer kept by the
//!   transport, which is then handed to the executor's sink.
//! - A persistent plan (`plan_*`, [`hypercomm_rt::persistent`]) whose messages are at
//!   most 4 KiB gets, once, a buffer and a fixed tag per message (above the tags of
//!   plain calls; `MPI_Send_init`/`MPI_Recv_init` requests under
//!   `HYPERCOMM_MPI_STAGED=init`); each run copies a step's data into the send buffers,
//!   posts the step's receives and sends, waits for them all at once with the failure
//!   notices and the deadline, and copies or combines the received data into place: no
//!   probe. The ranks agree on it when the plan is made, so on MPI `plan_*` is
//!   collective. `HYPERCOMM_MPI_STAGED=off` runs plans as plain calls.
//! - `Algo::Named(hypercomm_rt::NATIVE)` ([`Transport::native`]) runs no schedule: the
//!   MPI library's own blocking collective (`MPI_Allreduce`, …) on the data duplicate;
//!   reductions for primitive element types with the built-in operators only. It has
//!   no deadline and sees no failure notice (`mpirun` ends a job whose rank failed).
//! - Non-blocking calls (`immediate_*`, [`hypercomm_rt::immediate`]): in a
//!   `std::thread::scope` each runs on a progress thread of its own, over a duplicate
//!   of the data communicator (`MPI_Comm_idup`), which needs MPI initialized with
//!   `MPI_THREAD_MULTIPLE`. In an [`hypercomm_rt::immediate::scope`], a fixed-count
//!   call with `Algo::Auto` or `native` starts MPI's own non-blocking collective
//!   (`MPI_Ibcast`, … `MPI_Ireduce_scatter_block`: MPI-3.1 §5.12) on the data
//!   duplicate, from the rank's thread ([`Transport::native_start`]): no thread, any
//!   thread level; `wait` is `MPI_Wait` and `test` `MPI_Test`, with MPI's failure
//!   semantics (as native's blocking calls: no deadline, no failure notice). It
//!   progresses as the MPI library progresses it, mostly inside MPI calls of the rank.
//!
//! ## Faults
//!
//! Every wait polls with a deadline ([`Config::timeout`], 60 s by default as for the
//! threads backend) and checks a receive posted on the notice communicator. A rank that
//! fails calls [`Mpi::notify_failure`] (done by [`run`], and by `Drop` when unwinding):
//! it sends the failed rank's number to every peer. A peer that sees the notice returns
//! [`Error::PeerFailed`] from its current and every later wait; a rank failing because
//! of a peer forwards that peer's number, so every rank names the first failure it
//! heard of. A wait that outlives the deadline returns [`Error::Timeout`].
//!
//! A rank that leaves, failed or not (`Drop` of [`Mpi`]: its communicator is dropped,
//! or [`run`] returns), sends every peer a departure notice on the *data* communicator,
//! after all its data messages: MPI keeps one sender's messages in order on one
//! communicator, so a peer probing for the next message of that rank meets the notice
//! only once every message it sent is received. A receive from a rank that left,
//! with no message of it left to take, therefore fails at once with
//! [`Error::PeerFailed`] naming it (or, if it left because it failed, the rank it
//! blames). A peer that needs nothing more from it never looks at the notice and is not
//! disturbed. A send still pending to a rank that left (learned by probing for its
//! notice once a wait lasts 5 ms) fails after [`Config::cancel_grace`]: the rank left
//! with all its receives complete, so a send it took completes by then. A notice
//! carries the communicator's generation, a number the ranks agree on when building it
//! (above every earlier one of theirs), so that a notice sent to an earlier
//! communicator, which Open MPI may deliver to a later one reusing its context id, is
//! ignored; failure notices carry it too.
//!
//! An MPI error
//! on a request (the error handler of our duplicates is `MPI_ERRORS_RETURN`) is
//! reported as [`Error::PeerFailed`] naming the request's peer;
//! [`Mpi::last_mpi_error`] keeps MPI's message.
//!
//! [`Transport::cancel_all`] drops receives not yet matched (they hold no MPI request),
//! cancels matched ones (`MPI_Cancel`, then polls them to completion) and polls pending
//! sends; Open MPI cannot cancel a send (MPI 4 deprecates
//! it), so a send still pending after [`Config::cancel_grace`] (its receiver failed and
//! never matched it) is released with `MPI_Request_free`. See [`Mpi`]'s safety notes.

#![warn(missing_docs)]
#![warn(unsafe_op_in_unsafe_fn)]

pub mod agree;
mod leave;
mod native;
mod persist;
mod split;

use std::ffi::{c_int, c_void};
use std::mem::MaybeUninit;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Weak;
use std::time::{Duration, Instant};

use hypercomm::schedule::Rank;
use hypercomm_rt::transport::{Channel, Channels, Incoming, Part, PartMut, Tag};
use hypercomm_rt::{Calibration, Comm, Error, Result, Transport, Tuning};
use mpi::ffi;
use mpi::raw::AsRaw;
use mpi::traits::Communicator;

pub use hypercomm_rt;
pub use mpi;

/// The tag of failure notices (on the notice communicator, which carries nothing else).
const NOTICE_TAG: c_int = 7;
/// How long a wait yields the core between polls before it starts sleeping.
const YIELD_FOR: Duration = Duration::from_millis(5);
/// [`Config::new`]'s timeout, which calls without a [`Config`] wait for at most.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);
/// Largest block of a datatype (MPI counts are `int`).
const MAX_BLOCK: usize = 1 << 30;

/// The next generation this process may give a communicator: above every generation
/// of the communicators it was part of (see `Mpi::generation`).
static NEXT_GENERATION: AtomicU64 = AtomicU64::new(0);

/// How a hypercomm communicator over MPI behaves.
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    /// How long a wait may last before [`Error::Timeout`]: longer than any computation
    /// between two calls, since a peer still computing is not told apart from a stuck one.
    /// It bounds each collective of building a communicator too ([`Error::SetupTimeout`]).
    pub timeout: Duration,
    /// How long [`Transport::cancel_all`] and `Drop` poll requests that cannot be
    /// cancelled (sends) before releasing them; and how long a send to a rank that left
    /// may stay pending before it fails.
    pub cancel_grace: Duration,
    /// Polls of a wait before it starts yielding the core (then sleeping). Spinning pays
    /// when every rank of the node has a core, and costs dearly when they share cores.
    pub spin: u32,
    /// β and τ for `Algo::Auto`; `None` reads `HYPERCOMM_CALIBRATION` (or the defaults).
    pub calibration: Option<Calibration>,
    /// Whether `Algo::Auto` measures native MPI against the model's best schedules
    /// ([`hypercomm_rt::tune`]): by default it does, once per machine, keeping the
    /// picks in a file (`HYPERCOMM_TUNING` names another, or `off`).
    pub tuning: Tuning,
    /// How a native collective (`--algo native`, or `Auto`'s pick) waits.
    pub native_wait: NativeWait,
}

/// How a native MPI collective waits for its peers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum NativeWait {
    /// MPI's blocking collective (`MPI_Allreduce`, …), at the library's full speed and
    /// with MPI's failure semantics: a rank that fails ends the job (`mpirun` aborts
    /// it, this crate's [`run`] exits non-zero), and a stalled or departed peer is
    /// waited for without [`Config::timeout`]. The default (`HYPERCOMM_NATIVE=blocking`).
    #[default]
    Blocking,
    /// MPI's non-blocking collective (`MPI_Iallreduce`, …) waited for as this crate's
    /// schedules are: a failure notice or departure gives [`Error::PeerFailed`], a stall
    /// [`Error::Timeout`], never a hang (`HYPERCOMM_NATIVE=checked`). Slower for small
    /// messages: on 2 ranks, 8 B–4 KiB, Open MPI's non-blocking all-reduce took 1.9–3.0×
    /// the blocking one and its broadcast 1.1–1.4× (the README's MPI section gives the
    /// command).
    Checked,
}

impl NativeWait {
    /// `HYPERCOMM_NATIVE` (`blocking` or `checked`), else [`NativeWait::Blocking`].
    pub fn from_env() -> NativeWait {
        match std::env::var("HYPERCOMM_NATIVE") {
            Ok(v) if v.eq_ignore_ascii_case("checked") => NativeWait::Checked,
            _ => NativeWait::Blocking,
        }
    }
}

impl Default for Config {
    fn default() -> Self {
        Config::new()
    }
}

impl Config {
    /// A 60 s timeout, a 1 s cancel grace, the calibration from the environment, and
    /// spinning only if the node has a core for each of its ranks (Open MPI's
    /// `OMPI_COMM_WORLD_LOCAL_SIZE` against the node's online CPUs; no spinning when
    /// unknown). `HYPERCOMM_MPI_SPIN` sets the polls instead.
    pub fn new() -> Self {
        // The node's cores, not this process's affinity: mpirun binds each rank to a
        // core of its own, where `available_parallelism` then says 1.
        let cores = online_cpus()
            .or_else(|| std::thread::available_parallelism().ok().map(|n| n.get()))
            .unwrap_or(1);
        let local = std::env::var("OMPI_COMM_WORLD_LOCAL_SIZE")
            .or_else(|_| std::env::var("MPI_LOCALNRANKS"))
            .ok()
            .and_then(|s| s.parse::<usize>().ok());
        Config {
            timeout: DEFAULT_TIMEOUT,
            cancel_grace: Duration::from_secs(1),
            spin: std::env::var("HYPERCOMM_MPI_SPIN")
                .ok()
                .and_then(|s| s.parse().ok())
                .unwrap_or(match local {
                    Some(n) if n <= cores => 2000,
                    _ => 0,
                }),
            calibration: None,
            tuning: Tuning::from_env_or(Tuning::measure()),
            native_wait: NativeWait::from_env(),
        }
    }
    /// The same with another timeout.
    pub fn timeout(self, timeout: Duration) -> Self {
        Config { timeout, ..self }
    }
    /// The same with another calibration.
    pub fn calibration(self, calibration: Calibration) -> Self {
        Config {
            calibration: Some(calibration),
            ..self
        }
    }
}

/// Build hypercomm communicators from rsmpi communicators.
///
/// Both methods are collective over the communicator (they duplicate it).
pub trait HypercommExt {
    /// A hypercomm communicator over the same processes, with [`Config::new`].
    fn hypercomm(&self) -> Result<Comm<Mpi>> {
        self.hypercomm_with(&Config::new())
    }
    /// A hypercomm communicator over the same processes, with `config`.
    fn hypercomm_with(&self, config: &Config) -> Result<Comm<Mpi>>;
}

impl<C> HypercommExt for C
where
    C: Communicator + AsRaw<Raw = ffi::MPI_Comm>,
{
    fn hypercomm_with(&self, config: &Config) -> Result<Comm<Mpi>> {
        let calibration = match config.calibration {
            Some(c) => c,
            None => Calibration::from_env()?,
        };
        let mut comm = Comm::new(Mpi::new(self, config)?, calibration);
        comm.set_tuning(config.tuning.clone());
        Ok(comm)
    }
}

/// The two-level layout of `comm`'s processes: nodes × processes per node, the nodes
/// being the hosts (processes of one host name and boot id, as NCCL tells hosts apart:
/// `host_id`), as the shape `[nodes, ppn]` for `Algo::Shaped { name: "product", .. }`,
/// so that `product` exchanges inside every node first (the last factor, the fastest)
/// and across nodes second, one large message per pair of nodes' peers.
///
/// Collective over `comm`: every process must call it, and every one gets the same
/// answer. The shape is a layout of ranks, so every node must hold the same number
/// of processes and their ranks must be consecutive (`mpirun`'s default placement,
/// `--map-by slot` or `core`); otherwise the error names what differs (and every
/// rank reports it), an [`hypercomm::error::Error::InvalidParameter`] for `--shape`.
/// On one machine the shape is `1 × size`. A rank that does not join within
/// [`Config::new`]'s timeout (60 s) fails it too ([`node_shape_within`] takes another).
///
/// ```no_run
/// use hypercomm_mpi::{node_shape, HypercommExt};
/// use hypercomm_rt::Algo;
/// use mpi::traits::*;
/// let universe = mpi::initialize().unwrap();
/// let world = universe.world();
/// let shape = node_shape(&world).unwrap();
/// let mut comm = world.hypercomm().unwrap();
/// let k = comm.size() as usize;
/// let send = vec![comm.rank() as u64; k];
/// let mut recv = vec![0u64; k];
/// let algo = Algo::Shaped { name: "product", shape: shape.factors() };
/// comm.all_to_all_into(&send, &mut recv, algo).unwrap();
/// ```
pub fn node_shape<C>(
    comm: &C,
) -> std::result::Result<hypercomm::algorithms::Shape, hypercomm::error::Error>
where
    C: Communicator + AsRaw<Raw = ffi::MPI_Comm>,
{
    node_shape_within(comm, DEFAULT_TIMEOUT)
}

/// [`node_shape`], waiting at most `timeout` for every rank to join (a
/// [`Config::timeout`], `--timeout`).
pub fn node_shape_within<C>(
    comm: &C,
    timeout: Duration,
) -> std::result::Result<hypercomm::algorithms::Shape, hypercomm::error::Error>
where
    C: Communicator + AsRaw<Raw = ffi::MPI_Comm>,
{
    let k = comm.size();
    let bad = |reason: String| hypercomm::error::Error::InvalidParameter {
        what: "--shape",
        reason,
    };
    // Each rank's node ([`host_ids`], as the prediction tells hosts): the first rank
    // of its node and the node's size.
    let raw = comm.as_raw();
    let ids: Vec<u64> = host_ids(raw, timeout)
        .map_err(|e| {
            let why = e.error(rank_of(raw), "the all-gather of the ranks' nodes", timeout);
            bad(format!(
                "node: MPI could not tell the ranks' nodes apart: {why}"
            ))
        })?
        .into_iter()
        .map(|[host, _, _]| host)
        .collect();
    let mut of_node: std::collections::HashMap<u64, (c_int, c_int)> = Default::default();
    for (r, &id) in ids.iter().enumerate() {
        of_node.entry(id).or_insert((r as c_int, 0)).1 += 1;
    }
    let nodes: Vec<(c_int, c_int)> = ids.iter().map(|id| of_node[id]).collect();
    let ppn = nodes[0].1;
    if let Some(&(at, n)) = nodes.iter().find(|&&(_, n)| n != ppn) {
        return Err(bad(format!(
            "node: the node of rank 0 has {ppn} processes, that of rank {at} {n}; a shape \
             needs as many on every node; valid: AxB… whose product is {k}"
        )));
    }
    if let Some(r) = (0..k).find(|&r| nodes[r as usize].0 != r - r % ppn) {
        return Err(bad(format!(
            "node: rank {r} shares a node with rank {}, so the ranks of a node are not \
             consecutive (launch with --map-by slot or core); valid: AxB… whose product is {k}",
            nodes[r as usize].0
        )));
    }
    hypercomm::algorithms::Shape::new(&[(k / ppn) as u32, ppn as u32])
}

/// A request in flight.
struct Pending {
    /// `MPI_REQUEST_NULL` while a receive waits for its message to be probed.
    req: ffi::MPI_Request,
    peer: Rank,
    tag: Tag,
    /// `Some` for receives.
    recv: Option<Recv>,
    /// Identifies the request of `recv_with`.
    id: u64,
}

/// A receive: its length, where it lands, whether its message was matched yet.
#[derive(Clone, Copy)]
struct Recv {
    len: usize,
    into: Dest,
    matched: bool,
}

/// Where a receive lands.
#[derive(Clone, Copy)]
enum Dest {
    /// The parts given to `post_recv` (valid until `wait_all` or `cancel_all`).
    Parts(*const PartMut, usize),
    /// The transport's scratch buffer (`recv_with`).
    Scratch,
}

/// One rank's end of the MPI backend: a [`Transport`] over two duplicates of an MPI
/// communicator.
///
/// # Safety notes
///
/// Every MPI call goes through `mpi::ffi`, since rsmpi's scoped requests tie buffers to
/// a Rust scope, while the [`Transport`] contract hands raw parts that stay valid until
/// `wait_all` or `cancel_all` returns. Requests are completed (or cancelled and
/// completed) by then, with one exception, documented on `cancel_all`: a send that Open
/// MPI cannot cancel and that its (failed) receiver never matched is released with
/// `MPI_Request_free` after [`Config::cancel_grace`]. MPI moves a rendezvous message's
/// data only once its receive matched, so unmatched, its memory is not read again; the
/// caller of `cancel_all` is failing in any case.
///
/// `Mpi` holds raw MPI handles: it is neither `Send` nor `Sync` (MPI is initialized with
/// one thread by rsmpi's `initialize`). It must be dropped before MPI is finalized
/// (before rsmpi's `Universe`); if MPI was finalized first, `Drop` frees nothing.
pub struct Mpi {
    data: ffi::MPI_Comm,
    notices: ffi::MPI_Comm,
    rank: Rank,
    size: u32,
    /// Bits of an MPI tag the step uses, and the mask of the tags of data messages.
    step_bits: u32,
    tag_mask: u32,
    /// The tag of departure notices on the data communicator (outside `tag_mask`).
    leave_tag: c_int,
    /// The same number on every rank, and above that of every earlier communicator of
    /// any two of its ranks, so that a notice meant for an earlier communicator (which
    /// MPI may deliver to a later one reusing its context id) is recognised and ignored.
    generation: u64,
    timeout: Duration,
    grace: Duration,
    spin: u32,
    native_wait: NativeWait,
    pending: Vec<Pending>,
    /// Peers whose next message was not there at this poll (reused by `progress`).
    blocked: Vec<Rank>,
    /// Messages of the wrong tag or length, received into buffers of their own so that
    /// nothing lands in the caller's memory; freed once complete.
    discards: Vec<(Vec<u8>, ffi::MPI_Request)>,
    next_id: u64,
    scratch: Vec<u64>,
    /// The posted receive of a failure notice, and where it lands (generation, rank).
    notice_req: ffi::MPI_Request,
    notice_in: Box<[u64; 2]>,
    /// Notices this rank sent.
    notice_out: Box<[u64; 2]>,
    notice_reqs: Vec<ffi::MPI_Request>,
    /// Per peer that left (its departure notice arrived): when this rank learned it, and
    /// the rank it blames (itself, or the rank whose failure made it fail).
    gone: Vec<Option<(Instant, Rank)>>,
    failed: Option<Rank>,
    last_error: Option<String>,
    blocks: Vec<c_int>,
    displs: Vec<ffi::MPI_Aint>,
    /// The duplicates this communicator lends to its requests' progress threads.
    progress: split::Progress,
    /// When this is a progress duplicate: the slot it returns to.
    home: Option<Weak<split::Slot>>,
    /// Whether no peer that left said it sent failure notices.
    peers_clean: bool,
    /// The last fixed-count native call, made ready for MPI: the next call that is the
    /// same goes to MPI without being checked and translated again.
    native_last: Option<native::Prepared>,
    /// The count arrays of the last variable-count native call, kept for the next.
    native_arrays: native::VarcountArrays,
    /// Ranks per host when this communicator's ranks span hosts ([`ranks_per_host`]),
    /// and the CPUs they share when more than them ([`Placement`]).
    placement: Placement,
}

/// The MPI library (a hash of `MPI_Get_library_version`'s text) and this process's
/// host (`MPI_Get_processor_name`), as the tuning's and the calibration's files name
/// the machine.
fn machine_parts() -> (String, String) {
    let library = mpi::environment::library_version().unwrap_or_default();
    let host = mpi::environment::processor_name().unwrap_or_default();
    (
        format!("{:08x}", stable_hash(&[library.as_bytes()]) as u32),
        host,
    )
}

/// FNV-1a (64 bits) of `parts`, each ended by a 0xff byte (which UTF-8 never holds):
/// a hash every build and Rust release computes alike, for what processes of one job,
/// built apart, must agree on (their machines) and for names of files that outlive a
/// build. `std`'s `DefaultHasher` promises neither.
fn stable_hash(parts: &[&[u8]]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for part in parts {
        for &b in part.iter().chain(&[0xff]) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    h
}

/// This backend on this machine as the automatic calibration's file names it
/// (`mpi-{library hash}-{host}`, and `-oversubscribed` when `ranks_here`, the job's
/// ranks on this host, outnumber its online CPUs: a pair then shares the CPUs with
/// waiting ranks, and its messages cost several times more; the tuning's file names the
/// ranks instead). MPI must be initialized.
pub fn machine_name(ranks_here: usize) -> String {
    let (library, host) = machine_parts();
    let over = if ranks_here > online_cpus().unwrap_or(usize::MAX) {
        "-oversubscribed"
    } else {
        ""
    };
    format!("mpi-{library}-{host}{over}")
}

/// `-bound` when this process may run on fewer CPUs (`cpus`, its affinity) than its node
/// has online (`online`; mpirun's `--bind-to core`, Open MPI's default up to 2 ranks, or
/// a cpuset, `taskset`),
/// else nothing: bound and unbound jobs time apart (a rank the scheduler may move loses
/// its caches and its turn otherwise), so the tuning keeps their picks apart.
fn bound_suffix(cpus: usize, online: Option<usize>) -> &'static str {
    match online {
        Some(n) if cpus < n => "-bound",
        _ => "",
    }
}

/// CPUs online on this node (Linux: `/sys/devices/system/cpu/online`, e.g. `0-3,6`),
/// whatever this process's affinity.
fn online_cpus() -> Option<usize> {
    let list = std::fs::read_to_string("/sys/devices/system/cpu/online").ok()?;
    let mut n = 0;
    for range in list.trim().split(',') {
        let (a, b) = range.split_once('-').unwrap_or((range, range));
        let (a, b): (usize, usize) = (a.parse().ok()?, b.parse().ok()?);
        n += b.checked_sub(a)? + 1;
    }
    (n > 0).then_some(n)
}

/// Environment variable: treat every N consecutive ranks of `MPI_COMM_WORLD` as one
/// host ([`ranks_per_host`]), whatever hosts they run on: to try on one machine what
/// a job across hosts measures and predicts (the calibration's `network` bands). A
/// value that is not a whole number ≥ 1 is ignored (the `hypercomm-mpi` binary refuses
/// it).
pub const RANKS_PER_HOST_ENV: &str = "HYPERCOMM_MPI_RANKS_PER_HOST";

/// [`RANKS_PER_HOST_ENV`]'s value: `Ok(None)` unset or empty, `Ok(Some(n))` for a whole
/// number n ≥ 1, else the error naming what is valid.
pub fn ranks_per_host_setting(
    value: Option<&std::ffi::OsStr>,
) -> std::result::Result<Option<u32>, String> {
    let Some(v) = value.map(|v| v.to_string_lossy().trim().to_string()) else {
        return Ok(None);
    };
    if v.is_empty() {
        return Ok(None);
    }
    match v.parse::<u32>() {
        Ok(n) if n >= 1 => Ok(Some(n)),
        _ => Err(format!(
            "{RANKS_PER_HOST_ENV}={v}: valid: a whole number of ranks ≥ 1 (every that many \
             consecutive ranks count as one host), or unset"
        )),
    }
}

/// This process's host as [`ranks_per_host`] tells hosts apart: a hash of its name
/// (`MPI_Get_processor_name`) and of the running kernel's boot id
/// (`/proc/sys/kernel/random/boot_id`, so that two machines of one name differ; else
/// `/etc/machine-id`), as NCCL's host hash tells them; or under [`RANKS_PER_HOST_ENV`] its world rank's block
/// (a number past any hash's low half: `1 << 32` plus the block). Local: no message.
/// It took `MPI_Comm_split_type(MPI_COMM_TYPE_SHARED)` before, a collective that MPICH
/// ran in 0.2–0.27 s on 8 ranks sharing 2 cores, once for every communicator built.
/// `None` where MPI cannot name the host.
fn host_id() -> Option<u64> {
    if let Ok(Some(n)) = ranks_per_host_setting(std::env::var_os(RANKS_PER_HOST_ENV).as_deref()) {
        let mut rank: c_int = 0;
        // SAFETY: MPI is initialized (a communicator exists); one int out.
        unsafe { ffi::MPI_Comm_rank(ffi::RSMPI_COMM_WORLD, &mut rank) };
        return Some((1 << 32) + rank as u64 / u64::from(n));
    }
    machine_id()
}

/// This process's machine: [`host_id`] without [`RANKS_PER_HOST_ENV`]'s blocks (the
/// CPUs a job shares are a machine's whatever hosts it is told to count).
fn machine_id() -> Option<u64> {
    static HOST: std::sync::OnceLock<Option<u64>> = std::sync::OnceLock::new();
    *HOST.get_or_init(|| {
        let name = mpi::environment::processor_name().ok()?;
        // The running kernel's boot id; where /proc hides it, the installation's machine
        // id (systemd's, or D-Bus's), so that two machines of one name still differ.
        let boot = [
            "/proc/sys/kernel/random/boot_id",
            "/etc/machine-id",
            "/var/lib/dbus/machine-id",
        ]
        .iter()
        .find_map(|f| {
            std::fs::read_to_string(f)
                .ok()
                .filter(|t| !t.trim().is_empty())
        })
        .unwrap_or_default();
        // Never in the block numbers' range.
        Some(stable_hash(&[name.trim().as_bytes(), boot.trim().as_bytes()]) | (1 << 63))
    })
}

/// How many ranks share each host when `hosts` (each rank's host, in rank order) puts
/// them in consecutive blocks of one size n on more than one host; `None` on one host,
/// or for any other placement (then every rank is priced as on one machine).
fn host_blocks(hosts: &[u64]) -> Option<u32> {
    let k = hosts.len();
    let n = hosts.iter().take_while(|&&h| h == hosts[0]).count();
    if n == 0 || n >= k || k % n != 0 {
        return None;
    }
    let blocks: Vec<&[u64]> = hosts.chunks(n).collect();
    let uniform = blocks.iter().all(|b| b.iter().all(|&h| h == b[0]));
    // No host twice: a host's ranks are one block.
    let mut firsts: Vec<u64> = blocks.iter().map(|b| b[0]).collect();
    firsts.sort_unstable();
    firsts.dedup();
    (uniform && firsts.len() == blocks.len()).then_some(n as u32)
}

/// Every rank's host ([`host_id`]), machine ([`machine_id`]) and its machine's online
/// CPUs (0 where unknown) on `comm`, in rank order: one all-gather, waited for at most
/// `timeout`. Collective over `comm`.
fn host_ids(
    comm: ffi::MPI_Comm,
    timeout: Duration,
) -> std::result::Result<Vec<[u64; 3]>, Unsettled> {
    let mut size: c_int = 0;
    // SAFETY: `comm` is live (the callers'); one int out.
    unsafe { ffi::MPI_Comm_size(comm, &mut size) };
    // A rank whose host cannot be named takes part with one of its own (no block then).
    let own = u64::MAX - rank_of(comm) as u64;
    let mine = [
        host_id().unwrap_or(own),
        machine_id().unwrap_or(own),
        online_cpus().unwrap_or(0) as u64,
    ];
    let buffers = Box::new((mine, vec![0u64; 3 * size as usize]));
    // SAFETY: three u64 in, three per rank out, both in `buffers`, on a live
    // communicator.
    let done = unsafe {
        settled(buffers, timeout, |(mine, all), req| {
            ffi::MPI_Iallgather(
                mine.as_ptr().cast(),
                3,
                ffi::RSMPI_UINT64_T,
                all.as_mut_ptr().cast(),
                3,
                ffi::RSMPI_UINT64_T,
                comm,
                req,
            )
        })
    }?;
    Ok(done.1.chunks(3).map(|p| [p[0], p[1], p[2]]).collect())
}

/// Where a communicator's ranks run, as the prediction prices it
/// ([`hypercomm_rt::predict::Execution`]): the same in every rank (told from one
/// all-gather).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Placement {
    /// Ranks per host when the ranks span hosts in consecutive blocks of one size
    /// ([`ranks_per_host`]); `None` on one host or another placement.
    pub ranks_per_host: Option<u32>,
    /// The CPUs the ranks share, when a machine runs more ranks than it has CPUs online
    /// (`mpirun --oversubscribe`): every machine's CPUs (the fewest any has, times the
    /// machines), for [`Execution::cpus`](hypercomm_rt::predict::Execution::cpus), which
    /// then prices ranks that share a CPU running their steps one after another. `None`
    /// when no machine runs more ranks than CPUs, when one's CPUs are unknown, or when
    /// the ranks span machines other than in consecutive blocks of one size. Machines,
    /// not [`RANKS_PER_HOST_ENV`]'s hosts: 8 ranks on 2 CPUs told 2 per host still share
    /// 2 CPUs. Online CPUs, not this process's affinity: a job confined to fewer by a
    /// cpuset is not seen as sharing them (as the calibration's `-oversubscribed` file).
    pub cpus: Option<usize>,
}

/// [`Placement`] of each rank's [host, machine, online CPUs], in rank order.
fn placement_of(ranks: &[[u64; 3]]) -> Placement {
    let hosts: Vec<u64> = ranks.iter().map(|r| r[0]).collect();
    let machines: Vec<u64> = ranks.iter().map(|r| r[1]).collect();
    let k = ranks.len();
    // Each machine: its ranks and the fewest CPUs one of them saw.
    let mut per_machine: Vec<(u64, usize, u64)> = Vec::new();
    for &[_, m, c] in ranks {
        match per_machine.iter_mut().find(|e| e.0 == m) {
            Some(e) => {
                e.1 += 1;
                e.2 = e.2.min(c);
            }
            None => per_machine.push((m, 1, c)),
        }
    }
    let shared = per_machine.iter().any(|&(_, n, c)| n as u64 > c);
    let known = per_machine.iter().all(|&(_, _, c)| c > 0);
    let fewest = per_machine.iter().map(|&(_, _, c)| c).min().unwrap_or(0) as usize;
    let blocks = per_machine.len() == 1 || host_blocks(&machines).is_some();
    let cpus = (shared && known && blocks)
        .then_some(fewest * per_machine.len())
        .filter(|&n| n > 0 && n < k);
    let ranks_per_host = host_blocks(&hosts);
    Placement {
        ranks_per_host,
        cpus,
    }
}

/// [`placement_of`] of [`host_ids`] (the default placement where MPI fails; an error
/// when a rank does not join within `timeout`). Collective over `comm`.
fn placement_raw(
    comm: ffi::MPI_Comm,
    timeout: Duration,
) -> std::result::Result<Placement, Unsettled> {
    match host_ids(comm, timeout) {
        Ok(ids) => Ok(placement_of(&ids)),
        Err(Unsettled::Failed(_)) => Ok(Placement::default()),
        Err(Unsettled::TimedOut) => Err(Unsettled::TimedOut),
    }
}

/// How many ranks of `comm` share each host when the job spans hosts in consecutive
/// blocks of one size (ranks 0..n on the first host, n..2n on the next: `mpirun`'s
/// default mapping by slot, `--map-by node` is not), else `None` (one host, or another
/// placement). Hosts are the ranks of one host name and boot id (NCCL's host hash), or
/// [`RANKS_PER_HOST_ENV`]'s blocks. What the prediction prices messages between hosts and the
/// bytes a host holds by ([`hypercomm_rt::predict::Execution::ranks_per_host`]), and
/// whether the automatic calibration measures the network. Collective over `comm`;
/// `None` too if a rank does not join within [`Config::new`]'s timeout (60 s; see
/// [`ranks_per_host_within`]).
pub fn ranks_per_host<C>(comm: &C) -> Option<u32>
where
    C: Communicator + AsRaw<Raw = ffi::MPI_Comm>,
{
    ranks_per_host_within(comm, DEFAULT_TIMEOUT).ok().flatten()
}

/// [`ranks_per_host`], waiting at most `timeout` for every rank to join (a
/// [`Config::timeout`], `--timeout`): [`Error::SetupTimeout`] when one does not, so
/// that a late rank is told from one host (a rank that timed out and went on as if on
/// one host would disagree with the others).
pub fn ranks_per_host_within<C>(comm: &C, timeout: Duration) -> Result<Option<u32>>
where
    C: Communicator + AsRaw<Raw = ffi::MPI_Comm>,
{
    let raw = comm.as_raw();
    placement_raw(raw, timeout)
        .map(|p| p.ranks_per_host)
        .map_err(|e| e.error(rank_of(raw), "the all-gather of the ranks' hosts", timeout))
}

/// Why a collective of a communicator's set-up ([`settled`]) did not complete.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Unsettled {
    /// MPI returned this error code (starting or testing it).
    Failed(c_int),
    /// A rank did not join it within the timeout.
    TimedOut,
}

impl Unsettled {
    /// The error a set-up reports: MPI's message for a failure, the time-out named.
    fn error(self, rank: c_int, call: &'static str, timeout: Duration) -> Error {
        match self {
            Unsettled::Failed(rc) => Error::Unsupported {
                call,
                reason: error_string(rc),
            },
            Unsettled::TimedOut => Error::SetupTimeout {
                rank: rank as Rank,
                call,
                timeout,
            },
        }
    }
}

/// Start a collective of the communicator's set-up with `start` (its nonblocking form,
/// given `buffers` and where to put its request) and wait for it, yielding the core
/// between polls (after [`YIELD_FOR`], sleeping in short naps): MPI's blocking forms
/// spin, and 8 MPICH ranks sharing 2 cores took 0.35 s to build one communicator so
/// (its duplicates, the hosts and the generation agreed; 0.27 s with these, the rest
/// the hosts' split, which is local now: `host_id`). Returns `buffers` once it
/// completes.
///
/// A rank that never joins (it stalled, failed before building its communicator, or
/// calls something else) ends the wait after `timeout` with [`Unsettled::TimedOut`],
/// never a hang. MPI can neither cancel nor free a collective's request, so the
/// operation is abandoned, and `buffers` with it: leaked, so that a late completion
/// (the missing rank joins after all) writes into memory nothing else owns; so are they
/// when testing the request fails (it may still be pending).
///
/// # Safety
/// `start` starts one nonblocking MPI operation whose buffers are in `buffers` (or
/// outlive the operation) and writes its request to the pointer it is given.
unsafe fn settled<B>(
    buffers: Box<B>,
    timeout: Duration,
    start: impl FnOnce(&mut B, *mut ffi::MPI_Request) -> c_int,
) -> std::result::Result<Box<B>, Unsettled> {
    // MPI holds pointers into the buffers from `start` on: they are ours again (the box
    // remade) only once the operation completed, or never started.
    let buffers = Box::into_raw(buffers);
    let mut req = request_null();
    // SAFETY: `buffers` came from a box just now; nothing else refers to it.
    let rc = start(unsafe { &mut *buffers }, &mut req);
    if rc != success() {
        // SAFETY: not started: MPI holds no pointer into it.
        drop(unsafe { Box::from_raw(buffers) });
        return Err(Unsettled::Failed(rc));
    }
    let begun = Instant::now();
    let mut nap = Duration::from_micros(20);
    loop {
        let mut flag: c_int = 0;
        // SAFETY: a live request (or null, which tests complete); MPI sets it to
        // MPI_REQUEST_NULL on completion.
        let rc = unsafe { ffi::MPI_Test(&mut req, &mut flag, ffi::RSMPI_STATUS_IGNORE) };
        if rc != success() {
            // Whether the operation is still pending after an error is the library's
            // to say: leaked, as on a time-out.
            return Err(Unsettled::Failed(rc));
        }
        if flag != 0 {
            // SAFETY: complete: MPI writes it no more.
            return Ok(unsafe { Box::from_raw(buffers) });
        }
        let waited = begun.elapsed();
        if waited >= timeout {
            return Err(Unsettled::TimedOut); // `buffers` leaked
        }
        if waited < YIELD_FOR {
            std::thread::yield_now();
        } else {
            std::thread::sleep(nap.min(timeout - waited));
            nap = (nap * 2).min(Duration::from_micros(500));
        }
    }
}

fn success() -> c_int {
    ffi::MPI_SUCCESS as c_int
}

/// This process's rank in `comm` (live).
fn rank_of(comm: ffi::MPI_Comm) -> c_int {
    let mut rank: c_int = 0;
    // SAFETY: `comm` is live (the callers'); one int out.
    unsafe { ffi::MPI_Comm_rank(comm, &mut rank) };
    rank
}

/// MPI's message for an error code.
fn error_string(code: c_int) -> String {
    let mut buf = vec![0u8; ffi::MPI_MAX_ERROR_STRING as usize + 1];
    let mut len: c_int = 0;
    // SAFETY: `buf` holds MPI_MAX_ERROR_STRING bytes, as MPI_Error_string requires.
    let rc = unsafe { ffi::MPI_Error_string(code, buf.as_mut_ptr().cast(), &mut len) };
    if rc != success() {
        return format!("MPI error {code}");
    }
    buf.truncate(len.max(0) as usize);
    String::from_utf8_lossy(&buf).into_owned()
}

fn mpi_finalized() -> bool {
    let mut flag: c_int = 0;
    // SAFETY: MPI_Finalized may be called at any time.
    unsafe { ffi::MPI_Finalized(&mut flag) };
    flag != 0
}

fn request_null() -> ffi::MPI_Request {
    // SAFETY: reading an extern constant of the MPI library.
    unsafe { ffi::RSMPI_REQUEST_NULL }
}

fn bytes_type() -> ffi::MPI_Datatype {
    // SAFETY: reading an extern constant of the MPI library.
    unsafe { ffi::RSMPI_UINT8_T }
}

/// Bits of an MPI tag usable under `tag_ub` (every value below `2^bits` is ≤ `tag_ub`).
fn tag_bits(tag_ub: u32) -> u32 {
    63 - (tag_ub as u64 + 1).leading_zeros()
}

/// How tags under `tag_ub` are used: `(step_bits, tag_mask, leave_tag)`. Data messages
/// take the tags below `2^b` (`tag_mask = 2^b − 1`, the step in the low `step_bits`
/// bits, the epoch above), `b` one bit less than `tag_ub` allows; `leave_tag = 2^b`,
/// outside every data tag, marks a departure.
fn tag_layout(tag_ub: u32) -> (u32, u32, c_int) {
    // tag_ub ≤ i32::MAX, so b ≤ 30.
    let b = tag_bits(tag_ub) - 1;
    ((b / 2).min(16), (1u32 << b) - 1, (1u32 << b) as c_int)
}

/// The MPI tag of `tag`: the step's low `step_bits` bits, the epoch above, masked.
fn encode_tag(tag: Tag, step_bits: u32, tag_mask: u32) -> c_int {
    let step_mask = (1u32 << step_bits) - 1;
    let t = (tag.epoch << step_bits) | (tag.step & step_mask);
    (t & tag_mask) as c_int
}

/// The tag `mpi_tag` stands for, the bits it lost taken from `expected`.
fn decode_tag(mpi_tag: c_int, expected: Tag, step_bits: u32, tag_mask: u32) -> Tag {
    let t = mpi_tag as u32;
    let step_mask = (1u32 << step_bits) - 1;
    let epoch_mask = tag_mask >> step_bits;
    Tag {
        epoch: (expected.epoch & !epoch_mask) | ((t >> step_bits) & epoch_mask),
        step: (expected.step & !step_mask) | (t & step_mask),
    }
}

/// One message as MPI sees it: a base address, a count, a datatype (to free after
/// posting when `derived`).
struct Described {
    base: *mut c_void,
    count: c_int,
    datatype: ffi::MPI_Datatype,
    derived: bool,
}

impl Mpi {
    /// Duplicate `comm` (twice: data and failure notices) and post the notice receive.
    /// Collective over `comm`. Each collective of the set-up (the duplicates, the
    /// ranks' [`Placement`], their generation) waits at most [`Config::timeout`] for
    /// every rank to join: a rank that never builds its communicator makes the others
    /// fail with [`Error::SetupTimeout`], never hang (MPI cannot cancel a collective:
    /// the operation is abandoned, and its buffers leaked). An MPI error is [`Error::Unsupported`] with MPI's message.
    pub fn new<C>(comm: &C, config: &Config) -> Result<Mpi>
    where
        C: Communicator + AsRaw<Raw = ffi::MPI_Comm>,
    {
        let raw = comm.as_raw();
        let dup = Box::new(unsafe { ffi::RSMPI_COMM_NULL });
        // SAFETY: `raw` is a live communicator (rsmpi's); the duplicate, in `dup`, is
        // ours, owned by the `Mpi` from here on.
        let data = unsafe {
            settled(dup, config.timeout, |data, req| {
                ffi::MPI_Comm_idup(raw, data, req)
            })
        }
        .map_err(|e| e.error(rank_of(raw), "MPI_Comm_idup", config.timeout))?;
        // SAFETY: `data` is a live communicator of our own, used by nothing else.
        unsafe { Mpi::adopt(*data, config, None) }
    }

    /// An `Mpi` over `data`, which it owns from now on (and frees in `Drop`): a
    /// duplicate of it carries the failure notices. Collective over `data`, each of its
    /// collectives waited for at most [`Config::timeout`] (see [`Mpi::new`]). `hosts`:
    /// its [`Placement`] when known (a duplicate's is its parent's), else found. On an
    /// error `data` is left to MPI's finalization: a collective on it may still be
    /// pending.
    ///
    /// # Safety
    /// `data` is a live intra-communicator that nothing else uses or frees.
    pub(crate) unsafe fn adopt(
        data: ffi::MPI_Comm,
        config: &Config,
        hosts: Option<Placement>,
    ) -> Result<Mpi> {
        // Free the dropped communicators that can be by now; and have `MPI_Finalize`
        // receive the departure notices still on their way then.
        leave::sweep();
        leave::settle_at_finalize();
        let (mut rank, mut size): (c_int, c_int) = (0, 0);
        let timeout = config.timeout;
        // SAFETY: `data` is live (this function's contract); the duplicate is ours and
        // freed in `Drop`.
        let notices = unsafe {
            ffi::MPI_Comm_rank(data, &mut rank);
            ffi::MPI_Comm_size(data, &mut size);
            settled(Box::new(ffi::RSMPI_COMM_NULL), timeout, |notices, req| {
                ffi::MPI_Comm_idup(data, notices, req)
            })
        }
        .map_err(|e| e.error(rank, "MPI_Comm_idup", timeout))?;
        let notices = *notices;
        // SAFETY: both communicators are live and ours.
        unsafe {
            ffi::MPI_Comm_set_errhandler(data, ffi::RSMPI_ERRORS_RETURN);
            ffi::MPI_Comm_set_errhandler(notices, ffi::RSMPI_ERRORS_RETURN);
        }
        let (step_bits, tag_mask, leave_tag) = tag_layout(Self::tag_ub(data));
        let size = size as u32;
        let placement = match hosts {
            Some(p) => p,
            None => placement_raw(data, timeout)
                .map_err(|e| e.error(rank, "the all-gather of the ranks' hosts", timeout))?,
        };
        let mut mpi = Mpi {
            data,
            notices,
            rank: rank as Rank,
            size,
            step_bits,
            tag_mask,
            leave_tag,
            generation: Self::agree_generation(data, timeout)
                .map_err(|e| e.error(rank, "the all-reduce of the generation", timeout))?,
            timeout: config.timeout,
            grace: config.cancel_grace,
            spin: config.spin,
            native_wait: config.native_wait,
            pending: Vec::new(),
            blocked: Vec::new(),
            discards: Vec::new(),
            next_id: 0,
            scratch: Vec::new(),
            notice_req: request_null(),
            notice_in: Box::new([0; 2]),
            notice_out: Box::new([0; 2]),
            notice_reqs: Vec::new(),
            gone: vec![None; size as usize],
            failed: None,
            last_error: None,
            blocks: Vec::new(),
            displs: Vec::new(),
            progress: split::Progress::default(),
            home: None,
            peers_clean: true,
            native_last: None,
            native_arrays: native::VarcountArrays::default(),
            placement,
        };
        mpi.post_notice_recv();
        Ok(mpi)
    }

    /// The configuration this communicator was built with (its calibration aside,
    /// which its [`Comm`] keeps).
    pub fn config(&self) -> Config {
        Config {
            timeout: self.timeout,
            cancel_grace: self.grace,
            spin: self.spin,
            calibration: None,
            // Not read for the communicators made from this one: `Comm::split` gives a
            // sub-communicator its parent's policy, and a request's progress duplicate
            // chooses by the model (`hypercomm_rt::immediate`).
            tuning: Tuning::Off,
            native_wait: self.native_wait,
        }
    }

    /// Agree on this communicator's generation: the largest `NEXT_GENERATION` of its
    /// ranks, after which each rank's is above it (this rank's own where MPI fails).
    /// Collective over `comm`, waited for at most `timeout`.
    fn agree_generation(
        comm: ffi::MPI_Comm,
        timeout: Duration,
    ) -> std::result::Result<u64, Unsettled> {
        let mine = NEXT_GENERATION.load(Ordering::Relaxed);
        // SAFETY: one u64 in, one out, both in the box; `comm` is our live duplicate.
        let agreed = match unsafe {
            settled(Box::new([mine, mine]), timeout, |[mine, agreed], req| {
                ffi::MPI_Iallreduce(
                    (mine as *const u64).cast(),
                    (agreed as *mut u64).cast(),
                    1,
                    ffi::RSMPI_UINT64_T,
                    ffi::RSMPI_MAX,
                    comm,
                    req,
                )
            })
        } {
            Ok(both) => both[1],
            Err(Unsettled::Failed(_)) => mine,
            Err(Unsettled::TimedOut) => return Err(Unsettled::TimedOut),
        };
        NEXT_GENERATION.fetch_max(agreed + 1, Ordering::Relaxed);
        Ok(agreed)
    }

    /// Post the receive of the next failure notice (from any peer).
    fn post_notice_recv(&mut self) {
        if self.size <= 1 {
            return;
        }
        // SAFETY: `notice_in` is boxed, so it does not move; the receive is completed
        // or cancelled in `Drop` before the box is freed.
        unsafe {
            ffi::MPI_Irecv(
                self.notice_in.as_mut_ptr().cast(),
                2,
                ffi::RSMPI_UINT64_T,
                ffi::RSMPI_ANY_SOURCE,
                NOTICE_TAG,
                self.notices,
                &mut self.notice_req,
            )
        };
    }

    /// `MPI_TAG_UB` (at least 32767 by the standard).
    fn tag_ub(comm: ffi::MPI_Comm) -> u32 {
        let mut value: *mut c_int = std::ptr::null_mut();
        let mut flag: c_int = 0;
        // SAFETY: MPI_TAG_UB's attribute value is a pointer to an int owned by MPI.
        unsafe {
            ffi::MPI_Comm_get_attr(
                comm,
                ffi::MPI_TAG_UB as c_int,
                (&mut value as *mut *mut c_int).cast(),
                &mut flag,
            );
            if flag != 0 && !value.is_null() && *value >= 32767 {
                *value as u32
            } else {
                32767
            }
        }
    }

    /// The rank whose failure this rank heard of (or caused), if any.
    pub fn failed_peer(&self) -> Option<Rank> {
        self.failed
    }

    /// MPI's message for the last MPI error a request reported.
    pub fn last_mpi_error(&self) -> Option<&str> {
        self.last_error.as_deref()
    }

    /// Tell every peer that this rank fails: the notice names the rank whose failure
    /// caused ours if we heard of one, else this rank. Sent once; never blocks.
    pub fn notify_failure(&mut self) {
        if !self.notice_reqs.is_empty() || self.size <= 1 || mpi_finalized() {
            return;
        }
        let culprit = self.failed.unwrap_or(self.rank);
        self.failed.get_or_insert(self.rank);
        *self.notice_out = [self.generation, culprit as u64];
        for q in (0..self.size).filter(|&q| q != self.rank) {
            let mut req = request_null();
            // SAFETY: `notice_out` is boxed and outlives the request (see `Drop`).
            let rc = unsafe {
                ffi::MPI_Isend(
                    self.notice_out.as_ptr().cast(),
                    2,
                    ffi::RSMPI_UINT64_T,
                    q as c_int,
                    NOTICE_TAG,
                    self.notices,
                    &mut req,
                )
            };
            if rc == success() {
                self.notice_reqs.push(req);
            }
        }
    }

    /// The MPI tag of `tag`: the step in the low bits, the epoch above.
    fn mpi_tag(&self, tag: Tag) -> c_int {
        encode_tag(tag, self.step_bits, self.tag_mask)
    }

    /// The tag a received MPI tag stands for, as close to `expected` as its bits say.
    fn decode_tag(&self, mpi_tag: c_int, expected: Tag) -> Tag {
        decode_tag(mpi_tag, expected, self.step_bits, self.tag_mask)
    }

    fn check_rank(&self, peer: Rank) -> Result<()> {
        if peer == self.rank {
            return Err(Error::SelfMessage { rank: peer });
        }
        if peer >= self.size {
            let e = hypercomm::error::Error::RankOutOfRange {
                what: "peer",
                rank: peer.into(),
                nodes: self.size,
            };
            return Err(e.into());
        }
        if let Some(rank) = self.failed {
            return Err(Error::PeerFailed { rank });
        }
        Ok(())
    }

    /// Describe the concatenation of `parts` (pointer, length) for MPI.
    ///
    /// # Safety
    /// The parts must be valid memory (the transport's posting contract).
    unsafe fn describe(&mut self, parts: impl Iterator<Item = (*mut u8, usize)>) -> Described {
        self.blocks.clear();
        self.displs.clear();
        let mut base: Option<*mut u8> = None;
        let mut single: Option<(*mut u8, usize)> = None;
        let mut count = 0;
        for (ptr, len) in parts.filter(|&(_, len)| len > 0) {
            count += 1;
            single = Some((ptr, len));
            let b = *base.get_or_insert(ptr);
            let mut off = 0;
            while off < len {
                let n = (len - off).min(MAX_BLOCK);
                self.blocks.push(n as c_int);
                self.displs.push(
                    ((ptr as isize).wrapping_sub(b as isize) + off as isize) as ffi::MPI_Aint,
                );
                off += n;
            }
        }
        match (count, single) {
            (0, _) => Described {
                base: std::ptr::NonNull::<u64>::dangling().as_ptr().cast(),
                count: 0,
                datatype: bytes_type(),
                derived: false,
            },
            (1, Some((ptr, len))) if len <= MAX_BLOCK => Described {
                base: ptr.cast(),
                count: len as c_int,
                datatype: bytes_type(),
                derived: false,
            },
            _ => {
                let mut datatype = MaybeUninit::<ffi::MPI_Datatype>::uninit();
                // SAFETY: the arrays hold `blocks.len()` entries each.
                unsafe {
                    ffi::MPI_Type_create_hindexed(
                        self.blocks.len() as c_int,
                        self.blocks.as_ptr(),
                        self.displs.as_ptr(),
                        bytes_type(),
                        datatype.as_mut_ptr(),
                    );
                    let mut datatype = datatype.assume_init();
                    ffi::MPI_Type_commit(&mut datatype);
                    Described {
                        base: base.unwrap_or(std::ptr::null_mut()).cast(),
                        count: 1,
                        datatype,
                        derived: true,
                    }
                }
            }
        }
    }

    fn release(d: Described) {
        if d.derived {
            let mut t = d.datatype;
            // SAFETY: freeing a datatype in use by pending requests is allowed: MPI frees
            // it when they complete.
            unsafe { ffi::MPI_Type_free(&mut t) };
        }
    }

    /// The error an MPI call on a request with `peer` reported.
    fn mpi_error(&mut self, peer: Rank, code: c_int) -> Error {
        self.last_error = Some(error_string(code));
        Error::PeerFailed { rank: peer }
    }

    /// Queue a receive of `len` bytes into `into`; returns its id. It is matched by
    /// `progress`, which probes the sender's next message first (see `match_recv`).
    fn queue_recv(&mut self, from: Rank, tag: Tag, len: usize, into: Dest) -> Result<u64> {
        self.check_rank(from)?;
        let id = self.next_id;
        self.next_id += 1;
        self.pending.push(Pending {
            req: request_null(),
            peer: from,
            tag,
            recv: Some(Recv {
                len,
                into,
                matched: false,
            }),
            id,
        });
        Ok(id)
    }

    /// Post a send of `parts`; returns the request's id.
    ///
    /// # Safety
    /// The transport's posting contract for `parts`.
    unsafe fn post_send_parts(
        &mut self,
        peer: Rank,
        tag: Tag,
        parts: impl Iterator<Item = (*mut u8, usize)>,
    ) -> Result<u64> {
        self.check_rank(peer)?;
        if self.gone[peer as usize].is_some() {
            // It left: nothing will ever take this message.
            return Err(self.departed(peer));
        }
        // SAFETY: forwarded.
        let d = unsafe { self.describe(parts) };
        let mut req = request_null();
        // SAFETY: `d` describes memory valid until `wait_all`/`cancel_all` (the caller's
        // contract); the request is tracked in `pending` until complete.
        let rc = unsafe {
            ffi::MPI_Isend(
                d.base,
                d.count,
                d.datatype,
                peer as c_int,
                self.mpi_tag(tag),
                self.data,
                &mut req,
            )
        };
        Self::release(d);
        if rc != success() {
            return Err(self.mpi_error(peer, rc));
        }
        let id = self.next_id;
        self.next_id += 1;
        self.pending.push(Pending {
            req,
            peer,
            tag,
            recv: None,
            id,
        });
        Ok(id)
    }

    /// Probe the next message from the receive's peer (`MPI_Improbe`, any tag: the
    /// sender's messages are probed in order); when there, check its tag and length
    /// and receive it (`MPI_Imrecv`) into the receive's memory. Whether it was matched.
    ///
    /// Probing first means a message of the wrong length never lands in the caller's
    /// memory (Open MPI 4.1's shared-memory single-copy path writes past a receive
    /// buffer on truncation), and a message of another step is reported, not received.
    fn match_recv(&mut self, i: usize) -> Result<bool> {
        let (peer, tag) = (self.pending[i].peer, self.pending[i].tag);
        let Some(recv) = self.pending[i].recv else {
            return Ok(true);
        };
        let mut flag: c_int = 0;
        // SAFETY: reading an extern constant; MPI_Status is plain data.
        let mut message = unsafe { ffi::RSMPI_MESSAGE_NULL };
        let mut status: ffi::MPI_Status = unsafe { std::mem::zeroed() };
        loop {
            // SAFETY: plain probe on our data communicator.
            let rc = unsafe {
                ffi::MPI_Improbe(
                    peer as c_int,
                    ffi::RSMPI_ANY_TAG,
                    self.data,
                    &mut flag,
                    &mut message,
                    &mut status,
                )
            };
            if rc != success() {
                self.pending.remove(i);
                return Err(self.mpi_error(peer, rc));
            }
            if flag == 0 || status.MPI_TAG != self.leave_tag {
                break;
            }
            // The peer's last message: it left (unless the notice is stale: probe on).
            self.take_departure(peer, message);
        }
        if flag == 0 {
            if self.gone[peer as usize].is_some() {
                // No message of the peer is left, and it will send none.
                self.pending.remove(i);
                return Err(self.departed(peer));
            }
            return Ok(false);
        }
        let mut count: ffi::MPI_Count = 0;
        // SAFETY: `status` describes the probed message (MPI_Get_elements_x: messages
        // of 2 GiB and more, which MPI_Get_count cannot count in an int).
        unsafe { ffi::MPI_Get_elements_x(&status, bytes_type(), &mut count) };
        let count = count.max(0) as usize;
        let wrong = if status.MPI_TAG != self.mpi_tag(tag) {
            Some(Error::TagMismatch {
                rank: self.rank,
                peer,
                expected: tag,
                got: self.decode_tag(status.MPI_TAG, tag),
            })
        } else if count != recv.len {
            Some(Error::LengthMismatch {
                rank: self.rank,
                peer,
                step: tag.step,
                expected: recv.len,
                got: count,
            })
        } else {
            None
        };
        if let Some(e) = wrong {
            self.pending.remove(i);
            self.discard(message, count);
            return Err(e);
        }
        let d = match recv.into {
            Dest::Scratch => {
                let ptr = self.scratch.as_mut_ptr().cast::<u8>();
                // SAFETY: the scratch buffer holds at least `len` bytes (`recv_with`).
                unsafe { self.describe(std::iter::once((ptr, recv.len))) }
            }
            Dest::Parts(ptr, n) => {
                // SAFETY: `post_recv`'s contract keeps the parts list valid until
                // `wait_all` or `cancel_all`.
                let parts = unsafe { std::slice::from_raw_parts(ptr, n) };
                // SAFETY: and the memory they name.
                unsafe { self.describe(parts.iter().map(|p| (p.ptr(), p.len()))) }
            }
        };
        let mut req = request_null();
        // SAFETY: the message fits `d` exactly (checked); the memory stays valid until
        // the request completes (the contract of `post_recv`, or our scratch buffer).
        let rc = unsafe { ffi::MPI_Imrecv(d.base, d.count, d.datatype, &mut message, &mut req) };
        Self::release(d);
        if rc != success() {
            self.pending.remove(i);
            return Err(self.mpi_error(peer, rc));
        }
        let p = &mut self.pending[i];
        p.req = req;
        if let Some(r) = p.recv.as_mut() {
            r.matched = true;
        }
        Ok(true)
    }

    /// Receive a matched message of `count` bytes into a buffer of its own.
    fn discard(&mut self, mut message: ffi::MPI_Message, count: usize) {
        let mut buf = vec![0u8; count.max(1)];
        // SAFETY: `buf` holds `count` bytes.
        let d = unsafe { self.describe(std::iter::once((buf.as_mut_ptr(), count))) };
        let mut req = request_null();
        // SAFETY: `buf` holds the whole message and lives in `discards` until the
        // request completes (or is leaked, see `drain_discards`); moving the Vec does
        // not move its heap memory.
        let rc = unsafe { ffi::MPI_Imrecv(d.base, d.count, d.datatype, &mut message, &mut req) };
        Self::release(d);
        if rc == success() {
            self.discards.push((buf, req));
        }
    }

    /// Complete the discarded messages' receives (for the grace period at most); a
    /// buffer whose receive did not complete is leaked rather than freed under MPI.
    fn drain_discards(&mut self) {
        if self.discards.is_empty() {
            return;
        }
        let mut reqs: Vec<_> = self.discards.iter().map(|d| d.1).collect();
        if Self::drain(&mut reqs, self.grace) {
            self.discards.clear();
        } else {
            std::mem::forget(std::mem::take(&mut self.discards));
        }
    }

    /// Match what can be matched and test every pending request once, in posting
    /// order; drop the completed ones.
    fn progress(&mut self) -> Result<()> {
        self.blocked.clear();
        let mut i = 0;
        while i < self.pending.len() {
            if let Some(r) = self.pending[i].recv {
                let peer = self.pending[i].peer;
                if !r.matched && (self.blocked.contains(&peer) || !self.match_recv(i)?) {
                    // Later receives from this peer wait for this one's message.
                    self.blocked.push(peer);
                    i += 1;
                    continue;
                }
            }
            let mut flag: c_int = 0;
            // SAFETY: the request is live (not yet completed).
            let rc = unsafe {
                ffi::MPI_Test(
                    &mut self.pending[i].req,
                    &mut flag,
                    ffi::RSMPI_STATUS_IGNORE,
                )
            };
            if rc != success() {
                let p = self.pending.remove(i);
                return Err(self.mpi_error(p.peer, rc));
            }
            if flag == 0 {
                i += 1;
                continue;
            }
            self.pending.remove(i);
        }
        Ok(())
    }

    /// `PeerFailed` if a peer's failure notice or departure arrived (now or before):
    /// checked before a blocking MPI call that every rank must join (a split).
    pub(crate) fn peers_still_here(&mut self) -> Result<()> {
        self.check_notices()?;
        self.drain_departures();
        match self.gone.iter().position(Option::is_some) {
            Some(peer) => Err(Error::PeerFailed {
                rank: self.gone[peer].map_or(peer as Rank, |g| g.1),
            }),
            None => Ok(()),
        }
    }

    /// `PeerFailed` if a failure notice arrived (now or before).
    fn check_notices(&mut self) -> Result<()> {
        if let Some(rank) = self.failed {
            return Err(Error::PeerFailed { rank });
        }
        if self.size <= 1 {
            return Ok(());
        }
        loop {
            let mut flag: c_int = 0;
            // SAFETY: the notice receive is live until it completes (then it is reposted
            // only for a stale notice).
            let rc =
                unsafe { ffi::MPI_Test(&mut self.notice_req, &mut flag, ffi::RSMPI_STATUS_IGNORE) };
            if rc != success() || flag == 0 {
                return Ok(());
            }
            let [generation, rank] = *self.notice_in;
            if generation == self.generation {
                let rank = rank.min(self.size as u64 - 1) as Rank;
                self.failed = Some(rank);
                return Err(Error::PeerFailed { rank });
            }
            // A notice meant for an earlier communicator that had our context id.
            self.post_notice_recv();
        }
    }

    /// Receive the departure notice `message` (probed: a [`leave::Departure`]); if it
    /// is this communicator's, note that `peer` left.
    fn take_departure(&mut self, peer: Rank, mut message: ffi::MPI_Message) {
        let mut notice: leave::Departure = [u64::MAX; 3];
        // SAFETY: a probed message of three u64 (if longer, not ours: MPI_Mrecv reports
        // truncation, ignored, and the generation does not match), received at once.
        unsafe {
            ffi::MPI_Mrecv(
                notice.as_mut_ptr().cast(),
                3,
                ffi::RSMPI_UINT64_T,
                &mut message,
                ffi::RSMPI_STATUS_IGNORE,
            )
        };
        let [generation, blamed, sent_notices] = notice;
        if generation == self.generation && self.gone[peer as usize].is_none() {
            self.peers_clean &= sent_notices == 0;
            let blamed = blamed.min(self.size as u64 - 1) as Rank;
            self.gone[peer as usize] = Some((Instant::now(), blamed));
        }
    }

    /// The error of a wait that needs `peer`, which left: it names the rank `peer`
    /// blamed (itself if it left successfully), unless this rank heard of a failure
    /// first; this rank's failure notice will name the same.
    fn departed(&mut self, peer: Rank) -> Error {
        let blamed = self.gone[peer as usize].map_or(peer, |g| g.1);
        let rank = *self.failed.get_or_insert(blamed);
        Error::PeerFailed { rank }
    }

    /// For waits that last: learn whether the receivers of pending sends left (their
    /// departure notice, probed by tag), and fail a send to a peer that left and did
    /// not take it within the grace period. (A peer leaves once its receives completed,
    /// so a send it took completes here too, at most a message later.)
    fn check_departed_receivers(&mut self) -> Result<()> {
        let mut i = 0;
        while i < self.pending.len() {
            let peer = self.pending[i].peer;
            i += 1;
            if self.pending[i - 1].recv.is_some() {
                continue;
            }
            self.check_departed(peer)?;
        }
        Ok(())
    }

    /// [`Error::PeerFailed`] if `peer` left (its departure notice, probed now if not
    /// seen yet) at least the grace period ago.
    fn check_departed(&mut self, peer: Rank) -> Result<()> {
        while self.gone[peer as usize].is_none() {
            let Some((_, message)) = self.probe_departure(peer as c_int) else {
                break;
            };
            self.take_departure(peer, message);
        }
        if let Some((when, _)) = self.gone[peer as usize] {
            if when.elapsed() >= self.grace {
                return Err(self.departed(peer));
            }
        }
        Ok(())
    }

    /// Tell every peer that this rank leaves: one departure notice each, the last
    /// message on the data communicator, so a peer probing for this rank's next
    /// message finds it only when no data message of ours is left. Never blocks.
    fn announce_departure(&mut self, notice: &leave::Departure) -> Vec<ffi::MPI_Request> {
        let mut reqs = Vec::new();
        for q in (0..self.size).filter(|&q| q != self.rank) {
            let mut req = request_null();
            // SAFETY: the caller keeps `notice` alive until the requests complete.
            let rc = unsafe {
                ffi::MPI_Isend(
                    notice.as_ptr().cast(),
                    3,
                    ffi::RSMPI_UINT64_T,
                    q as c_int,
                    self.leave_tag,
                    self.data,
                    &mut req,
                )
            };
            if rc == success() {
                reqs.push(req);
            }
        }
        reqs
    }

    /// Receive the departure notices already here (of peers that left before us), so
    /// that they do not outlive the communicator.
    fn drain_departures(&mut self) {
        // SAFETY: reading an extern constant.
        let any = unsafe { ffi::RSMPI_ANY_SOURCE };
        while let Some((status, message)) = self.probe_departure(any) {
            let peer = (status.MPI_SOURCE.max(0) as Rank).min(self.size - 1);
            self.take_departure(peer, message);
        }
    }

    /// A departure notice from `source` (a rank or `MPI_ANY_SOURCE`) already here,
    /// matched (`MPI_Improbe`) but not received yet.
    fn probe_departure(&self, source: c_int) -> Option<(ffi::MPI_Status, ffi::MPI_Message)> {
        let mut flag: c_int = 0;
        // SAFETY: reading an extern constant; MPI_Status is plain data.
        let mut message = unsafe { ffi::RSMPI_MESSAGE_NULL };
        let mut status: ffi::MPI_Status = unsafe { std::mem::zeroed() };
        // SAFETY: plain probe on our data communicator.
        let rc = unsafe {
            ffi::MPI_Improbe(
                source,
                self.leave_tag,
                self.data,
                &mut flag,
                &mut message,
                &mut status,
            )
        };
        (rc == success() && flag != 0).then_some((status, message))
    }

    /// Poll until `done(self)`, checking notices and the deadline.
    fn wait_until(&mut self, done: impl Fn(&Self) -> bool) -> Result<()> {
        let start = Instant::now();
        let mut polls: u32 = 0;
        let mut nap = Duration::from_micros(20);
        loop {
            self.progress()?;
            if done(self) {
                return Ok(());
            }
            self.check_notices()?;
            polls = polls.saturating_add(1);
            if polls <= self.spin {
                std::hint::spin_loop();
                continue;
            }
            if start.elapsed() >= self.timeout {
                let (peer, step) = self
                    .pending
                    .first()
                    .map_or((self.rank, 0), |p| (p.peer, p.tag.step));
                return Err(Error::Timeout {
                    rank: self.rank,
                    peer,
                    step,
                });
            }
            // Yield for the first few milliseconds (the peer is likely about to send
            // and may need this core), then sleep in short, growing naps.
            if start.elapsed() < YIELD_FOR {
                std::thread::yield_now();
            } else {
                self.check_departed_receivers()?;
                std::thread::sleep(nap);
                nap = (nap * 2).min(Duration::from_micros(500));
            }
        }
    }

    /// Wait for a native collective's request as `wait_until` waits for messages: a
    /// failure notice, a peer's departure or the timeout ends it with an error. MPI
    /// cannot cancel (nor let one free) a collective's request, so an abandoned one is
    /// forgotten: after a departure or a failure it cannot complete (the peer never
    /// joins it), after a timeout it could, if the stalled peer resumes; the caller then
    /// fails the job ([`run`] notifies every peer), as after any error.
    fn wait_native(&mut self, mut req: ffi::MPI_Request) -> Result<()> {
        let start = Instant::now();
        let mut polls: u32 = 0;
        let mut nap = Duration::from_micros(20);
        loop {
            let mut flag: c_int = 0;
            // SAFETY: a live request; MPI sets it to MPI_REQUEST_NULL on completion.
            let rc = unsafe { ffi::MPI_Test(&mut req, &mut flag, ffi::RSMPI_STATUS_IGNORE) };
            if rc != success() {
                return Err(self.mpi_error(self.rank, rc));
            }
            if flag != 0 {
                return Ok(());
            }
            self.check_notices()?;
            polls = polls.saturating_add(1);
            if polls <= self.spin {
                std::hint::spin_loop();
                continue;
            }
            if start.elapsed() >= self.timeout {
                return Err(Error::Timeout {
                    rank: self.rank,
                    peer: self.rank,
                    step: 0,
                });
            }
            if start.elapsed() < YIELD_FOR {
                std::thread::yield_now();
                continue;
            }
            // A peer that left may have done its part already (a broadcast's root):
            // it fails the wait only if the collective is still pending a grace later.
            let (me, k) = (self.rank, self.size);
            for peer in (0..k).filter(|&p| p != me) {
                self.check_departed(peer)?;
            }
            std::thread::sleep(nap);
            nap = (nap * 2).min(Duration::from_micros(500));
        }
    }

    /// Poll `reqs` to completion for at most the grace period; release the rest with
    /// `MPI_Request_free`. Returns whether all completed.
    fn drain(reqs: &mut [ffi::MPI_Request], grace: Duration) -> bool {
        let start = Instant::now();
        loop {
            let mut left = 0;
            for r in reqs.iter_mut() {
                if *r == request_null() {
                    continue;
                }
                let mut flag: c_int = 0;
                // SAFETY: a live request; MPI sets it to MPI_REQUEST_NULL on completion.
                let rc = unsafe { ffi::MPI_Test(r, &mut flag, ffi::RSMPI_STATUS_IGNORE) };
                if rc != success() || flag != 0 {
                    *r = request_null();
                } else {
                    left += 1;
                }
            }
            if left == 0 {
                return true;
            }
            if start.elapsed() >= grace {
                for r in reqs.iter_mut().filter(|r| **r != request_null()) {
                    // SAFETY: releasing a live request; see `Mpi`'s safety notes.
                    unsafe { ffi::MPI_Request_free(r) };
                }
                return false;
            }
            std::thread::sleep(Duration::from_micros(50));
        }
    }
}

/// What the MPI backend does beyond the papers' model, for the prediction
/// ([`hypercomm_rt::predict`]): a combining receive lands in the transport's scratch
/// buffer and is combined into place after, one more pass over its bytes. It knows no
/// hosts (every rank as on one machine, a CPU each): a communicator's own, with the
/// hosts its ranks span and the CPUs they share ([`Placement`]), is its
/// `Comm::execution`.
pub const EXECUTION: hypercomm_rt::predict::Execution = hypercomm_rt::predict::Execution {
    shared_copy_from: None,
    cpus: None,
    combine_pass: true,
    fibers: false,
    ranks_per_host: None,
};

impl Transport for Mpi {
    fn rank(&self) -> Rank {
        self.rank
    }

    fn persist(&mut self, channels: &[Channel]) -> Option<Result<Box<dyn Channels>>> {
        self.persist_channels(channels)
    }

    fn owns_channels(&self, channels: &mut dyn Channels) -> bool {
        self.owns(channels)
    }

    fn run_channels(
        &mut self,
        channels: &mut dyn Channels,
        range: std::ops::Range<usize>,
    ) -> Result<()> {
        self.run_staged(channels, range)
    }

    fn size(&self) -> u32 {
        self.size
    }

    unsafe fn post_send(&mut self, to: Rank, tag: Tag, parts: &[Part]) -> Result<()> {
        let parts = parts.iter().map(|p| (p.ptr() as *mut u8, p.len()));
        // SAFETY: forwarded from this function's contract; MPI only reads a send's
        // memory, whatever the pointer's mutability.
        unsafe { self.post_send_parts(to, tag, parts) }.map(drop)
    }

    unsafe fn post_recv(&mut self, from: Rank, tag: Tag, parts: &[PartMut]) -> Result<()> {
        let len = parts.iter().map(PartMut::len).sum();
        // The parts list stays valid until `wait_all` or `cancel_all` (the contract).
        let into = Dest::Parts(parts.as_ptr(), parts.len());
        self.queue_recv(from, tag, len, into).map(drop)
    }

    fn recv_with(
        &mut self,
        from: Rank,
        tag: Tag,
        len: usize,
        sink: &mut dyn FnMut(Incoming<'_>),
    ) -> Result<()> {
        // Receives from `from` posted earlier match earlier messages (MPI's order).
        let words = len.div_ceil(8);
        if self.scratch.len() < words {
            // No receive into the scratch buffer is pending: `recv_with` completes its
            // own before returning, and `cancel_all` the others.
            self.scratch.resize(words, 0);
        }
        let id = self.queue_recv(from, tag, len, Dest::Scratch)?;
        self.wait_until(|me| me.pending.iter().all(|p| p.id != id))?;
        let part = [Part::from_raw(self.scratch.as_ptr().cast(), len)];
        // SAFETY: the receive completed into `scratch`, which nothing writes until the
        // next `recv_with`; `part` lives for the sink's call.
        sink(unsafe { Incoming::new(&part) });
        Ok(())
    }

    fn wait_all(&mut self) -> Result<()> {
        self.wait_until(|me| me.pending.is_empty())
    }

    fn execution(&self) -> hypercomm_rt::predict::Execution {
        hypercomm_rt::predict::Execution {
            ranks_per_host: self.placement.ranks_per_host,
            cpus: self.placement.cpus,
            ..EXECUTION
        }
    }

    fn has_native(&self) -> bool {
        true
    }

    /// `MPI_IN_PLACE` where MPI's layout is the in-place form's (`native::mpi_in_place_offset`).
    #[inline]
    fn native_in_place(&self, collective: hypercomm::collective::Collective) -> bool {
        native::mpi_in_place_offset(collective, 0, 0).is_some()
    }

    #[inline(always)]
    fn native(&mut self, call: hypercomm_rt::transport::NativeCall<'_>) -> Option<Result<()>> {
        if let Some(rank) = self.failed {
            return Some(Err(Error::PeerFailed { rank }));
        }
        let blocking = self.native_wait == NativeWait::Blocking;
        Some(
            native::start(
                self.data,
                self.rank,
                self.size,
                call,
                blocking,
                &mut self.native_last,
                &mut self.native_arrays,
            )
            .and_then(|req| {
                if blocking {
                    Ok(())
                } else {
                    self.wait_native(req)
                }
            }),
        )
    }

    /// MPI's non-blocking collective (`MPI_Ibcast`, … `MPI_Ireduce_scatter_block`, and
    /// the variable-count `MPI_Igatherv`, `MPI_Iscatterv`, `MPI_Iallgatherv`,
    /// `MPI_Ialltoallv`, `MPI_Ireduce_scatter`: MPI-3.1 §5.12) on the data duplicate,
    /// started on this rank's thread; its request is completed with `MPI_Test` /
    /// `MPI_Wait` whatever [`Config::native_wait`] says (MPI's failure semantics, as
    /// [`NativeWait::Blocking`]'s). A variable-count call's count and displacement arrays
    /// are made for it and kept with its request until it completes.
    unsafe fn native_start(
        &mut self,
        call: hypercomm_rt::transport::NativeCall<'_>,
    ) -> Option<Result<Box<dyn hypercomm_rt::transport::NativeRequest>>> {
        if let Some(rank) = self.failed {
            return Some(Err(Error::PeerFailed { rank }));
        }
        let collective = call.collective;
        if collective.kind().is_varcount() {
            let mut arrays = Box::default();
            let (data, me, k) = (self.data, self.rank, self.size);
            // As below; the arrays live in the request.
            let started = native::start_varcount(data, me, k, call, &mut arrays, false);
            return Some(started.map(|req| {
                Box::new(native::Started::keeping(req, collective, arrays))
                    as Box<dyn hypercomm_rt::transport::NativeRequest>
            }));
        }
        // The caller keeps the buffers until the request completes (this function's
        // contract), as `native::start`'s non-blocking form needs.
        let started = native::start(
            self.data,
            self.rank,
            self.size,
            call,
            false,
            &mut self.native_last,
            &mut self.native_arrays,
        );
        Some(started.map(|req| {
            Box::new(native::Started::new(req, collective))
                as Box<dyn hypercomm_rt::transport::NativeRequest>
        }))
    }

    /// `mpi-<library>-<ranks>ranks-<host>[-<n>perhost][-bound]`: the MPI library (a
    /// hash of its version string), the number of ranks, this process's host, the ranks
    /// per host of a job across hosts ([`ranks_per_host`]) and whether this process may
    /// run on fewer CPUs than its node has (mpirun's binding, a cpuset, `taskset`), so
    /// that picks measured under one library, rank count, machine, spread or binding are
    /// never read under another.
    fn machine_key(&self) -> Option<String> {
        let (library, host) = machine_parts();
        // A job across hosts times its picks apart from one on a host.
        let hosts = self
            .placement
            .ranks_per_host
            .map_or(String::new(), |n| format!("-{n}perhost"));
        Some(format!(
            "mpi-{library}-{}ranks-{host}{hosts}{}",
            self.size,
            bound_suffix(hypercomm_rt::threads::cpu_count(), online_cpus())
        ))
    }

    fn cancel_all(&mut self) {
        if mpi_finalized() {
            self.pending.clear();
            return;
        }
        self.drain_discards();
        // Receives not matched yet hold no MPI request: forgetting them withdraws them.
        let mut reqs: Vec<ffi::MPI_Request> = Vec::with_capacity(self.pending.len());
        let mut scratch = false;
        for p in self.pending.drain(..) {
            if p.req == request_null() {
                continue;
            }
            let mut req = p.req;
            if let Some(r) = p.recv {
                scratch |= matches!(r.into, Dest::Scratch);
                // SAFETY: cancelling a live receive; it completes (cancelled or not).
                unsafe { ffi::MPI_Cancel(&mut req) };
            }
            reqs.push(req);
        }
        if !Self::drain(&mut reqs, self.grace) && scratch {
            // MPI may still write the scratch buffer: never free it.
            std::mem::forget(std::mem::take(&mut self.scratch));
        }
    }
}

impl Drop for Mpi {
    fn drop(&mut self) {
        // A progress duplicate dropped, not given back: its request failed.
        self.mark_lost();
        if std::thread::panicking() {
            self.notify_failure();
        }
        if mpi_finalized() {
            // Too late to free anything; keep the boxes MPI may still name.
            std::mem::forget(std::mem::take(&mut self.notice_reqs));
            std::mem::forget(std::mem::replace(&mut self.notice_in, Box::new([0; 2])));
            std::mem::forget(std::mem::replace(&mut self.notice_out, Box::new([0; 2])));
            return;
        }
        self.cancel_all();
        let mut own = vec![self.notice_req];
        if self.notice_req != request_null() {
            // SAFETY: cancelling our live notice receive.
            unsafe { ffi::MPI_Cancel(&mut own[0]) };
        }
        if !Self::drain(&mut own, self.grace) {
            std::mem::forget(std::mem::replace(&mut self.notice_in, Box::new([0; 2])));
        }
        let sent_notices = !self.notice_reqs.is_empty();
        let mut sent = std::mem::take(&mut self.notice_reqs);
        if !Self::drain(&mut sent, self.grace) {
            std::mem::forget(std::mem::replace(&mut self.notice_out, Box::new([0; 2])));
        }
        // Leave: peers that wait for a message of ours learn it will not come.
        self.drain_departures();
        let blamed = self.failed.unwrap_or(self.rank);
        let notice = Box::new([self.generation, blamed as u64, u64::from(sent_notices)]);
        let mut left = self.announce_departure(&notice);
        if !Self::drain(&mut left, self.grace) {
            std::mem::forget(notice);
        }
        // Freed once every peer's departure is in (`leave.rs`), not before.
        let mut departed: Vec<bool> = self.gone.iter().map(Option::is_some).collect();
        departed[self.rank as usize] = true;
        leave::bury(leave::Dead {
            data: self.data,
            notices: self.notices,
            leave_tag: self.leave_tag,
            generation: self.generation,
            departed,
            clean: self.peers_clean && !sent_notices,
        });
    }
}

/// Why [`run`] failed on this rank.
#[derive(Debug)]
pub enum Failure<E> {
    /// The communicator could not be built: a bad calibration file, an MPI error, or
    /// a rank that did not join its set-up within the timeout ([`Error::SetupTimeout`]).
    Setup(Error),
    /// The closure returned this error.
    Returned(E),
    /// The closure panicked with this message.
    Panicked(String),
}

impl<E: std::fmt::Display> std::fmt::Display for Failure<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Setup(e) => write!(f, "cannot build the communicator: {e}"),
            Failure::Returned(e) => write!(f, "{e}"),
            Failure::Panicked(m) => write!(f, "panicked: {m}"),
        }
    }
}

/// Run this rank's part with a hypercomm communicator over `comm` (collective): if `f`
/// returns an error or panics, every peer is notified before `run` returns, so their
/// waits end with [`Error::PeerFailed`] naming this rank (or the rank whose failure
/// caused this one). The caller then exits non-zero. When `f` returns `Ok`, the
/// communicator is dropped, which announces the departure: a peer still waiting for a
/// message of this rank gets [`Error::PeerFailed`] naming it, the others nothing.
pub fn run<C, T, E, F>(comm: &C, config: &Config, f: F) -> std::result::Result<T, Failure<E>>
where
    C: Communicator + AsRaw<Raw = ffi::MPI_Comm>,
    F: FnOnce(&mut Comm<Mpi>) -> std::result::Result<T, E>,
{
    let mut hc = comm.hypercomm_with(config).map_err(Failure::Setup)?;
    let outcome = match catch_unwind(AssertUnwindSafe(|| f(&mut hc))) {
        Ok(Ok(v)) => return Ok(v),
        Ok(Err(e)) => Failure::Returned(e),
        Err(p) => Failure::Panicked(
            p.downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| p.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "(no message)".into()),
        ),
    };
    hc.transport().notify_failure();
    Err(outcome)
}

/// After a failure, end the process with `code` if it is still alive `after` from now
/// (e.g. blocked in `MPI_Finalize`, which waits for every rank, behind a peer that never
/// reaches it). `mpirun` then ends the job with a non-zero status.
pub fn exit_watchdog(after: Duration, code: i32) {
    std::thread::spawn(move || {
        std::thread::sleep(after);
        std::process::exit(code);
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The machine hash is FNV-1a as published (its test vectors), its parts kept apart.
    #[test]
    fn the_stable_hash_is_fnv_1a_with_parts_kept_apart() {
        // FNV-1a 64 of "" and of "a" (Fowler, Noll, Vo), each part ended by 0xff here.
        let fnv = |bytes: &[u8]| {
            bytes.iter().fold(0xcbf2_9ce4_8422_2325_u64, |h, &b| {
                (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
            })
        };
        assert_eq!(fnv(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(stable_hash(&[b"a"]), fnv(b"a\xff"));
        assert_ne!(stable_hash(&[b"ab", b"c"]), stable_hash(&[b"a", b"bc"]));
        assert_ne!(stable_hash(&[b"host", b""]), stable_hash(&[b"host"]));
    }

    /// Ranks in consecutive blocks of one size on several hosts are that many per host;
    /// one host, blocks of unequal size, a host's ranks split, or interleaved
    /// placement are not.
    #[test]
    fn hosts_in_consecutive_blocks_are_told_by_their_size() {
        assert_eq!(host_blocks(&[7, 7, 9, 9]), Some(2));
        assert_eq!(host_blocks(&[7, 9]), Some(1));
        assert_eq!(host_blocks(&[1, 1, 1, 2, 2, 2, 3, 3, 3]), Some(3));
        assert_eq!(host_blocks(&[7, 7, 7, 7]), None);
        assert_eq!(host_blocks(&[7]), None);
        assert_eq!(host_blocks(&[]), None);
        assert_eq!(host_blocks(&[7, 7, 9, 9, 9, 9]), None);
        assert_eq!(host_blocks(&[7, 9, 7, 9]), None);
        assert_eq!(host_blocks(&[7, 7, 9, 9, 7, 7]), None);
        assert_eq!(host_blocks(&[7, 7, 9]), None);
    }

    /// The CPUs ranks share: a machine's online CPUs when it runs more ranks than them
    /// (times the machines, in blocks), else none; hosts told by the environment's
    /// blocks share their machine's CPUs.
    #[test]
    fn ranks_share_the_cpus_of_an_oversubscribed_machine() {
        // [host, machine, online CPUs] per rank.
        let one = |k: usize, cpus: u64| vec![[5, 5, cpus]; k];
        let p = placement_of(&one(4, 2));
        assert_eq!((p.ranks_per_host, p.cpus), (None, Some(2)));
        assert_eq!(placement_of(&one(8, 2)).cpus, Some(2));
        assert_eq!(placement_of(&one(2, 2)).cpus, None, "a CPU per rank");
        assert_eq!(placement_of(&one(4, 8)).cpus, None, "more CPUs than ranks");
        assert_eq!(placement_of(&one(4, 0)).cpus, None, "CPUs unknown");
        // Two machines of 4 ranks and 2 CPUs each, in blocks: 4 CPUs, 4 per host.
        let two: Vec<[u64; 3]> = (0..8).map(|r| [r / 4, r / 4, 2]).collect();
        let p = placement_of(&two);
        assert_eq!((p.ranks_per_host, p.cpus), (Some(4), Some(4)));
        // One with fewer CPUs: the fewest counts.
        let mut uneven = two.clone();
        uneven[5][2] = 1;
        assert_eq!(placement_of(&uneven).cpus, Some(2));
        // Not oversubscribed anywhere: none.
        let roomy: Vec<[u64; 3]> = (0..8).map(|r| [r / 4, r / 4, 4]).collect();
        assert_eq!(placement_of(&roomy).cpus, None);
        // Machines interleaved (rank r on machine r % 2): no blocks, no CPUs told.
        let mixed: Vec<[u64; 3]> = (0..8).map(|r| [r % 2, r % 2, 2]).collect();
        assert_eq!(placement_of(&mixed), Placement::default());
        // HYPERCOMM_MPI_RANKS_PER_HOST=2 on one machine of 2 CPUs: 4 hosts, 2 CPUs.
        let told: Vec<[u64; 3]> = (0..8).map(|r| [(1 << 32) + r / 2, 5, 2]).collect();
        let p = placement_of(&told);
        assert_eq!((p.ranks_per_host, p.cpus), (Some(2), Some(2)));
    }

    #[test]
    fn the_ranks_per_host_setting_is_a_whole_number_or_unset() {
        use std::ffi::OsStr;
        assert_eq!(ranks_per_host_setting(None), Ok(None));
        assert_eq!(ranks_per_host_setting(Some(OsStr::new(" "))), Ok(None));
        assert_eq!(ranks_per_host_setting(Some(OsStr::new("2"))), Ok(Some(2)));
        for bad in ["0", "-1", "two", "1.5"] {
            let e = ranks_per_host_setting(Some(OsStr::new(bad))).unwrap_err();
            assert!(e.contains(RANKS_PER_HOST_ENV) && e.contains("valid"), "{e}");
        }
    }

    /// A job bound to fewer CPUs than the node has keeps its tuning apart; one that may
    /// use them all, or whose node's count is unknown, does not.
    #[test]
    fn a_bound_job_has_a_tuning_key_of_its_own() {
        assert_eq!(bound_suffix(1, Some(2)), "-bound");
        assert_eq!(bound_suffix(2, Some(4)), "-bound");
        assert_eq!(bound_suffix(2, Some(2)), "");
        assert_eq!(bound_suffix(2, None), "");
    }

    #[test]
    fn tag_bits_fit_under_the_bound() {
        for ub in [
            32767u32,
            65535,
            (1 << 21) - 1,
            (1 << 28) - 2,
            i32::MAX as u32,
        ] {
            let bits = tag_bits(ub);
            assert!(bits >= 15, "{ub}: {bits}");
            assert!((1u64 << bits) - 1 <= ub as u64, "{ub}: {bits}");
            assert!(
                (1u64 << (bits + 1)) - 1 > ub as u64,
                "{ub}: {bits} is not the most"
            );
        }
    }

    #[test]
    fn tags_round_trip_and_mismatches_decode_near_the_expected_tag() {
        for ub in [32767u32, 65535, i32::MAX as u32] {
            let (sb, mask, leave) = tag_layout(ub);
            assert!(sb >= 7 && mask >> sb >= 127, "{ub}: {sb} {mask}");
            assert!(leave > 0 && leave as u32 <= ub && leave as u32 & mask == 0);
            for (epoch, step) in [(0, 0), (5, 3), (1000, 70), (u32::MAX, 0), (123_456, 9)] {
                let tag = Tag { epoch, step };
                let t = encode_tag(tag, sb, mask);
                assert!(t >= 0 && t as u32 <= ub);
                assert_ne!(t, leave, "a data tag is never the departure tag");
                assert_eq!(decode_tag(t, tag, sb, mask), tag);
                // The next step, and the next call, differ in their MPI tags.
                let next = Tag {
                    epoch,
                    step: step + 1,
                };
                assert_ne!(encode_tag(next, sb, mask), t);
                let later = Tag {
                    epoch: epoch.wrapping_add(1),
                    step,
                };
                assert_ne!(encode_tag(later, sb, mask), t);
                assert_eq!(decode_tag(encode_tag(next, sb, mask), tag, sb, mask), next);
            }
        }
    }
}
