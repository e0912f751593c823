//! The transport: the only thing a backend implements (Gloo's rule: algorithms see a
//! context and peers, never sockets).
//!
//! A step of a schedule maps onto it as *post every send, post every receive, wait for
//! all*: [`Transport::post_send`] and [`Transport::post_recv`] return at once and
//! [`Transport::wait_all`] blocks until every posted operation completed, which is what a
//! non-blocking backend does with `MPI_Isend`/`MPI_Irecv` and `MPI_Waitall`. Combining
//! receives use [`Transport::recv_with`], which hands the message to a sink piece by piece:
//! the threads backend passes the sender's own memory (no intermediate copy), a network
//! backend its receive buffer.
//!
//! Messages from one rank to another are matched in order and carry a [`Tag`] (the call
//! and the step), so a receive that meets a message of another call or step is an error
//! ([`crate::Error::TagMismatch`]) instead of silent corruption.
//!
//! Posting is `unsafe`: the memory a [`Part`] names is read (or, for [`PartMut`],
//! written) by the transport, possibly from another thread, until `wait_all` or
//! `cancel_all` returns; the caller must keep it alive and untouched until then.

use std::any::Any;
use std::fmt;
use std::marker::PhantomData;
use std::ops::Range;

use hypercomm::collective::Collective;
use hypercomm::schedule::Rank;

use crate::error::Result;

/// What matches a message with its receive: the collective call and its step.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Tag {
    /// Sequence number of the collective call on this communicator ([`Tag::P2P`] for
    /// point-to-point messages).
    pub epoch: u32,
    /// Step of the schedule.
    pub step: u32,
}

impl Tag {
    /// The epoch of point-to-point messages, outside every collective.
    pub const P2P: u32 = u32::MAX;
    /// The tag of point-to-point messages.
    pub fn p2p() -> Self {
        Tag {
            epoch: Self::P2P,
            step: 0,
        }
    }
}

impl fmt::Display for Tag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.epoch == Self::P2P {
            f.write_str("a point-to-point send")
        } else {
            write!(f, "call {} step {}", self.epoch, self.step)
        }
    }
}

/// A region of memory a send reads: a pointer and a length in bytes, without lifetime
/// (the lifetime is the `unsafe` contract of [`Transport::post_send`]).
#[derive(Clone, Copy, Debug)]
pub struct Part {
    ptr: *const u8,
    len: usize,
}

impl Part {
    /// The bytes of `data`.
    pub fn new(data: &[u8]) -> Self {
        Part {
            ptr: data.as_ptr(),
            len: data.len(),
        }
    }
    /// `len` bytes from `ptr`.
    pub fn from_raw(ptr: *const u8, len: usize) -> Self {
        Part { ptr, len }
    }
    /// Start of the region.
    pub fn ptr(&self) -> *const u8 {
        self.ptr
    }
    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }
    /// Whether the region is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// A region of memory a receive writes (see [`Part`]).
#[derive(Clone, Copy, Debug)]
pub struct PartMut {
    ptr: *mut u8,
    len: usize,
}

impl PartMut {
    /// The bytes of `data`.
    pub fn new(data: &mut [u8]) -> Self {
        PartMut {
            ptr: data.as_mut_ptr(),
            len: data.len(),
        }
    }
    /// `len` bytes from `ptr`.
    pub fn from_raw(ptr: *mut u8, len: usize) -> Self {
        PartMut { ptr, len }
    }
    /// Start of the region.
    pub fn ptr(&self) -> *mut u8 {
        self.ptr
    }
    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }
    /// Whether the region is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// Total bytes of a list of parts.
pub fn total_len(parts: &[Part]) -> usize {
    parts.iter().map(Part::len).sum()
}

/// A message in transit, seen by the receiver: the sender's parts in order.
///
/// Holds the borrow of the sender's memory for `'a`, which the backend guarantees.
#[derive(Clone, Copy)]
pub struct Incoming<'a> {
    parts: &'a [Part],
    _data: PhantomData<&'a [u8]>,
}

impl<'a> Incoming<'a> {
    /// A message made of `parts`.
    ///
    /// # Safety
    /// Every part must be readable for `'a` and not written by anyone during `'a`.
    pub unsafe fn new(parts: &'a [Part]) -> Self {
        Incoming {
            parts,
            _data: PhantomData,
        }
    }
    /// The pieces of the message, in order.
    pub fn pieces(&self) -> impl Iterator<Item = &'a [u8]> + 'a {
        // SAFETY: `Incoming::new`'s contract makes every part readable for 'a.
        self.parts
            .iter()
            .filter(|p| !p.is_empty())
            .map(|p| unsafe { std::slice::from_raw_parts(p.ptr, p.len) })
    }
    /// Length in bytes.
    pub fn len(&self) -> usize {
        total_len(self.parts)
    }
    /// Whether the message is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Copy the message into the concatenation of `into` (as much as fits: the
    /// backend checks that the lengths agree).
    ///
    /// # Safety
    /// Every part of `into` must be writable, and disjoint from the message.
    pub unsafe fn copy_to(&self, into: &[PartMut]) {
        let mut dst = into.iter().filter(|p| !p.is_empty());
        let mut cur: Option<(PartMut, usize)> = None;
        for piece in self.pieces() {
            let mut rest = piece;
            while !rest.is_empty() {
                let Some((part, off)) = cur.take().or_else(|| dst.next().map(|p| (*p, 0))) else {
                    return;
                };
                let n = (part.len - off).min(rest.len());
                // SAFETY: `part[off..off + n]` is writable and disjoint from the message
                // (this function's contract).
                unsafe { std::ptr::copy_nonoverlapping(rest.as_ptr(), part.ptr.add(off), n) };
                rest = &rest[n..];
                if off + n < part.len {
                    cur = Some((part, off + n));
                }
            }
        }
    }
}

/// A communication backend, as seen by one rank.
///
/// Contract for every implementation:
/// - messages from a rank to another are delivered in the order posted, each whole;
/// - a send completes when the transport no longer needs the sender's memory: either
///   the receiver has taken the data (a rendezvous) or the transport has copied it (an
///   eager send, as the threads backend does up to `threads::Config::eager` bytes and
///   MPI libraries below their eager limit); either way the memory may be reused after
///   `wait_all` returns (the threads backend reports an eager message its receiver
///   never took as a failure of that receiver);
/// - when a peer panics, returns an error or leaves, every wait of every other rank
///   ends within the configured timeout with [`crate::Error::PeerFailed`], never hangs;
/// - after an error (or on unwinding) the caller calls [`Transport::cancel_all`], after
///   which no one reads or writes the memory of posted operations any more.
pub trait Transport {
    /// This rank.
    fn rank(&self) -> Rank;
    /// Number of ranks.
    fn size(&self) -> u32;

    /// Post a send of the concatenation of `parts` to `to`; returns at once.
    ///
    /// # Safety
    /// `parts` (the slice itself) and the memory each part names must stay valid and
    /// unmodified until `wait_all` or `cancel_all` returns.
    unsafe fn post_send(&mut self, to: Rank, tag: Tag, parts: &[Part]) -> Result<()>;

    /// Post a receive of the next message from `from` into the concatenation of `parts`;
    /// it completes by the end of `wait_all`.
    ///
    /// # Safety
    /// `parts` and the memory each part names must stay valid, and be neither read nor
    /// written by anyone else, until `wait_all` or `cancel_all` returns.
    unsafe fn post_recv(&mut self, from: Rank, tag: Tag, parts: &[PartMut]) -> Result<()>;

    /// Receive the next message from `from`, of `len` bytes, and hand it to `sink`
    /// before returning (for combining receives). Receives posted earlier from the same
    /// peer are completed first.
    fn recv_with(
        &mut self,
        from: Rank,
        tag: Tag,
        len: usize,
        sink: &mut dyn FnMut(Incoming<'_>),
    ) -> Result<()>;

    /// Wait until every posted send and receive has completed.
    fn wait_all(&mut self) -> Result<()>;

    /// A hint, with no effect on what any call does: a message of `len` bytes from
    /// `from` will be received soon ([`crate::Comm`] names the one a call most likely
    /// waits for first, as the call begins). A backend may start fetching it; a peer
    /// out of range is ignored. The default does nothing.
    #[inline]
    fn expect(&self, from: Rank, len: usize) {
        let _ = (from, len);
    }

    /// Withdraw everything posted and not completed, and wait until no one accesses
    /// its memory any more. Called on errors and on unwinding; never fails.
    fn cancel_all(&mut self);

    /// Run `call` with the backend's own implementation of the collective (for
    /// [`crate::Algo::Named`]`(`[`crate::NATIVE`]`)`: MPI's `MPI_Allreduce`, …), or
    /// `None` when the backend has none (the default: [`crate::Comm`] then reports
    /// [`crate::Error::Native`]). Called between collective calls, with nothing posted.
    /// A backend that cannot run this call (an element type or operator it does not
    /// know) returns `Some(Err(`[`crate::Error::Native`]`))`.
    fn native(&mut self, call: NativeCall<'_>) -> Option<Result<()>> {
        let _ = call;
        None
    }

    /// Whether [`Transport::native`] runs collectives (the default: no).
    fn has_native(&self) -> bool {
        false
    }

    /// Start `call` with the backend's own *non-blocking* collective (MPI's
    /// `MPI_Iallreduce`, …: MPI-3.1 §5.12) and return at once with an object that
    /// completes it ([`NativeRequest`]), or `None` when the backend has none (the
    /// default). Used by the requests of [`crate::immediate::scope`]: a fixed-count call
    /// (never a variable-count one) that would run [`Transport::native`] is started
    /// here instead, on the rank's thread, with no progress thread. A call the backend
    /// cannot run (an element type or operator it does not know, a buffer of the wrong
    /// length) returns `Some(Err(`[`crate::Error::Native`]`))` and starts nothing.
    /// Called between collective calls, with nothing posted; calls started here may
    /// still be in flight when later calls (blocking or started) are made: the backend
    /// keeps them apart from its messages, as MPI keeps collectives apart from
    /// point-to-point traffic, and runs them in call order on every rank.
    ///
    /// # Safety
    /// The memory of `call.input` and `call.output` must stay valid, and be neither
    /// written (input) nor read or written (output) by anyone else, until the returned
    /// request completes: its [`NativeRequest::test`] returned `Ok(true)`, its
    /// [`NativeRequest::wait`] returned, or it was dropped (dropping an unfinished one
    /// waits for it). The request outlives the borrow of `call`, which is why this is
    /// `unsafe`.
    unsafe fn native_start(
        &mut self,
        call: NativeCall<'_>,
    ) -> Option<Result<Box<dyn NativeRequest>>> {
        let _ = call;
        None
    }

    /// Whether [`Transport::native`] takes `collective` in place
    /// ([`NativeCall::in_place`]: the input read from the output buffer, as MPI's
    /// `MPI_IN_PLACE`). The default, no: [`crate::Comm`] then passes an in-place form's
    /// input as a copy of it. Asked for the in-place forms whose layout is MPI's
    /// (all-reduce, scan and exclusive scan: the whole buffer; all-gather: this rank's
    /// block), on every call that runs native, so it should be a constant per
    /// collective.
    #[inline]
    fn native_in_place(&self, collective: Collective) -> bool {
        let _ = collective;
        false
    }

    /// Make persistent requests for the messages of a persistent plan
    /// ([`crate::persistent`]), `channels` listing them step by step (a step's sends,
    /// then its receives, each in the program's order). `Some(Ok(_))` when the backend
    /// made them: each run of the plan then stages its messages through the channels'
    /// buffers ([`Channels::buffer`]) and runs a step's with [`Transport::run_channels`].
    /// `None` (the default) runs the plan as a plain call. Called once per plan,
    /// collectively: every rank of the communicator makes its plans in the same order,
    /// and the backend answers the same on every rank.
    fn persist(&mut self, channels: &[Channel]) -> Option<Result<Box<dyn Channels>>> {
        let _ = channels;
        None
    }

    /// Whether `channels` were made by [`Transport::persist`] of this transport (a plan
    /// run on another communicator, e.g. a request's progress duplicate, runs as a
    /// plain call). The default: never.
    fn owns_channels(&self, channels: &mut dyn Channels) -> bool {
        let _ = channels;
        false
    }

    /// Start the channels `range` of `channels` (one step's, of channels this transport
    /// owns, their send buffers filled) and wait until all completed, with the
    /// guarantees of [`Transport::wait_all`]: a failed or departed peer, or the
    /// timeout, ends the wait with an error, after which the channels are not run
    /// again. The default (never called: [`Transport::owns_channels`] is false) fails.
    fn run_channels(&mut self, channels: &mut dyn Channels, range: Range<usize>) -> Result<()> {
        let _ = (channels, range);
        Err(crate::Error::InvalidProgram {
            rank: self.rank(),
            step: 0,
            reason: "this backend has no persistent requests".into(),
        })
    }

    /// A name for the backend and the machine it runs on (as rank 0 sees them), under
    /// which [`crate::Tuning::Measure`] keeps its measured picks; `None` keeps them in
    /// the process only (the default).
    fn machine_key(&self) -> Option<String> {
        None
    }

    /// What the backend does that the papers' model does not price, for the prediction
    /// that `Algo::Auto` ranks by ([`crate::predict`]); nothing by default.
    fn execution(&self) -> crate::predict::Execution {
        crate::predict::Execution::default()
    }
}

/// A backend's non-blocking collective in flight ([`Transport::native_start`]): MPI's
/// `MPI_Request` of an `MPI_Iallreduce`, …. It is used from the thread that started it
/// (it need not be `Send`: MPI then needs no `MPI_THREAD_MULTIPLE`). Dropping one that
/// has not completed waits for it (its error is lost), so that the memory it uses is
/// never touched after the drop.
pub trait NativeRequest {
    /// Whether the collective has completed (MPI's `MPI_Test`); once it returned
    /// `Ok(true)` or an error, the request is complete and `wait` returns at once.
    fn test(&mut self) -> Result<bool>;
    /// Wait until the collective completes (MPI's `MPI_Wait`): its result, with the
    /// failure semantics of the backend's own blocking collective.
    fn wait(&mut self) -> Result<()>;
}

/// One message of a persistent plan, for [`Transport::persist`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Channel {
    /// The schedule's step.
    pub step: u32,
    /// The peer it goes to or comes from.
    pub peer: Rank,
    /// A send (else a receive).
    pub send: bool,
    /// Bytes of the message.
    pub len: usize,
}

/// A backend's persistent requests for one plan ([`Transport::persist`]): one per
/// [`Channel`], each on a buffer of the channel's length that the backend keeps (the
/// caller fills a send's before running its step, and reads a receive's after). The
/// backend frees them when this is dropped.
pub trait Channels: Send {
    /// The buffer of channel `i`, of its length.
    fn buffer(&mut self, i: usize) -> &mut [u8];
    /// For the backend that made them, to find its own type.
    fn as_any(&mut self) -> &mut dyn Any;
    /// Let channel `i`'s next run read (a send) or write (a receive) `len` bytes at
    /// `ptr` instead of its buffer, if the backend can (the default: it cannot). The
    /// memory stays valid, and untouched by anyone else, until that run returns.
    ///
    /// # Safety
    /// As for [`Transport::post_send`] and [`Transport::post_recv`], until the run of
    /// the channel's step returns.
    unsafe fn direct(&mut self, i: usize, ptr: *mut u8) -> bool {
        let _ = (i, ptr);
        false
    }
}

/// One collective call for a backend's own implementation ([`Transport::native`]):
/// the buffers as the library's `in` and `out` of this rank, in bytes.
#[non_exhaustive]
#[derive(Debug)]
pub struct NativeCall<'a> {
    /// The collective, with its root.
    pub collective: Collective,
    /// Elements per message, or per block of the blocked collectives (the library's
    /// `len`).
    pub len: usize,
    /// Bytes per element.
    pub elem_bytes: usize,
    /// The element type, when it is a primitive a backend's reductions may know.
    pub elem: Option<Elem>,
    /// A reduction's operator when it is a built-in ([`crate::Op::sum`], …); `None`
    /// for a user operator, and for collectives that do not reduce.
    pub op: Option<Builtin>,
    /// This rank's input; empty where the rank has none (a scatter's non-root, and a
    /// broadcast, whose data is in `output`) and in an in-place call (`in_place`).
    pub input: &'a [u8],
    /// This rank's output; empty where the rank has none (a gather's and a reduce's
    /// non-root). A broadcast's buffer on every rank, holding the data on the root.
    pub output: &'a mut [u8],
    /// A variable-count collective's send counts in elements, as MPI takes them
    /// (`MPI_Scatterv`'s and `MPI_Alltoallv`'s `sendcounts`; this rank's one count for
    /// gatherv and allgatherv), displacements their prefix sums; empty otherwise.
    pub send_counts: &'a [usize],
    /// A variable-count collective's receive counts (`recvcounts` of `MPI_Gatherv`,
    /// `MPI_Allgatherv`, `MPI_Alltoallv`, `MPI_Reduce_scatter`; this rank's one count
    /// for scatterv); empty otherwise.
    pub recv_counts: &'a [usize],
    /// `Some(off)` for an in-place call (only to a transport whose
    /// [`Transport::native_in_place`] took the collective): this rank's input is the
    /// `len · elem_bytes` bytes of `output` from byte `off`, where MPI's `MPI_IN_PLACE`
    /// reads it (0 for an all-reduce, scan or exclusive scan, `rank · len · elem_bytes`
    /// for an all-gather), and `input` is empty. `None` otherwise.
    pub in_place: Option<usize>,
}

/// The element types a backend's own reductions may know ([`NativeCall::elem`]).
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Elem {
    /// `u8`.
    U8,
    /// `u16`.
    U16,
    /// `u32`.
    U32,
    /// `u64` (and `usize` on 64-bit targets).
    U64,
    /// `i8`.
    I8,
    /// `i16`.
    I16,
    /// `i32`.
    I32,
    /// `i64` (and `isize` on 64-bit targets).
    I64,
    /// `f32`.
    F32,
    /// `f64`.
    F64,
}

impl Elem {
    /// `T`'s element type, if it is one of these.
    pub fn of<T: 'static>() -> Option<Elem> {
        use std::any::TypeId;
        let t = TypeId::of::<T>();
        let pointer = if cfg!(target_pointer_width = "64") {
            [
                (TypeId::of::<usize>(), Elem::U64),
                (TypeId::of::<isize>(), Elem::I64),
            ]
        } else {
            [
                (TypeId::of::<usize>(), Elem::U32),
                (TypeId::of::<isize>(), Elem::I32),
            ]
        };
        [
            (TypeId::of::<u8>(), Elem::U8),
            (TypeId::of::<u16>(), Elem::U16),
            (TypeId::of::<u32>(), Elem::U32),
            (TypeId::of::<u64>(), Elem::U64),
            (TypeId::of::<i8>(), Elem::I8),
            (TypeId::of::<i16>(), Elem::I16),
            (TypeId::of::<i32>(), Elem::I32),
            (TypeId::of::<i64>(), Elem::I64),
            (TypeId::of::<f32>(), Elem::F32),
            (TypeId::of::<f64>(), Elem::F64),
        ]
        .into_iter()
        .chain(pointer)
        .find(|(id, _)| *id == t)
        .map(|(_, e)| e)
    }
}

/// The built-in reduction operators ([`NativeCall::op`]).
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Builtin {
    /// [`crate::Op::sum`].
    Sum,
    /// [`crate::Op::product`].
    Product,
    /// [`crate::Op::min`].
    Min,
    /// [`crate::Op::max`].
    Max,
    /// [`crate::Op::bit_and`].
    BitAnd,
    /// [`crate::Op::bit_or`].
    BitOr,
    /// [`crate::Op::bit_xor`].
    BitXor,
}
