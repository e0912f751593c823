//! The single-copy core of the threads backend: the only code that hands one
//! thread's memory to another.
//!
//! A send of more than the eager limit (`Config::eager`) is a rendezvous: the sender
//! publishes an [`Envelope`] (a pointer to its list of parts, which point into its own
//! buffers) in the mailbox of the pair (sender, receiver), and the receiver copies (or
//! combines) straight from the sender's memory into its own: one copy, no intermediate
//! buffer, no allocation per message (a mailbox is a `VecDeque` that keeps its capacity).
//!
//! A send of at most the eager limit is eager: the sender copies it into the envelope,
//! so the send is complete once posted and the sender never waits for the receiver (two
//! copies of a few bytes cost little; the receiver's wake-up, which the rendezvous waits
//! for, can cost much more). Up to [`INLINE`] bytes the copy sits in the envelope
//! itself; above, in a buffer the envelope owns. The receiver keeps that buffer when it
//! is done with it and hands it back through the mailbox at its next take, where the
//! sender picks it up at its next post: each side touches the other's memory only under
//! the mailbox lock it takes anyway, and there is no allocation per message once a pair
//! has as many buffers as it has such messages in flight. Flow control: a small send
//! finding [`EAGER_QUEUE`] messages of the pair still queued is a rendezvous instead,
//! so a sender never runs more than that far ahead of its receiver and the copies in
//! flight stay bounded.
//!
//! Completion: each rank counts its rendezvous sends not yet taken (`outstanding`;
//! eager sends are never outstanding). A receiver holds a [`Claim`] while it reads the
//! sender's memory; dropping the claim (also on unwinding) decrements the count and
//! wakes the sender when it reaches zero. The sender touches the memory of its sends
//! again only once the count is zero, either after `wait_all` or after
//! [`Shared::withdraw`] removed what no receiver took.
//!
//! Failure: a rank that panics, returns an error or leaves is marked ([`Shared::fail`],
//! [`Shared::leave`]) and every thread is woken, so waits end with `PeerFailed` at once;
//! otherwise waits end at the configured timeout. An eager message stays in its mailbox
//! until taken or withdrawn, also after its sender has left: a receiver takes what was
//! sent to it before it sees that the sender is gone.
//!
//! Fast path: an eager message of at most [`RING_INLINE`] bytes goes, when the pair's
//! queue is empty, into the pair's ring of [`RING`] slots of nine cache lines each (a
//! fast box, as Open MPI's shared-memory transport has; 4.6 KiB, allocated by the pair's
//! first such message, so pairs that never carry one cost nothing): the sender fills
//! the slot and stamps it with the message's sequence number (`Release`); the receiver,
//! which knows the number it expects next, copies straight from the slot and, when its
//! claim is dropped, publishes how many messages it has released (on a cache line of
//! its own); neither side takes a lock. The sender reads that count only when its own
//! last look at it says the ring is full, so a message costs one transfer of the slot's
//! line to the receiver and one back to the sender for its next use of the slot, and no
//! flag goes back and forth (as Open MPI's fast boxes, which track the reader's
//! position lazily). A receiver that expects more than a line's worth asks the cache
//! for the slot's other lines each time it looks at the sequence number
//! ([`Shared::prefetch_next`]), so they cross alongside the line that says the message
//! is there rather than after it. A receiver holds at most one claim at a time (it drops each
//! before taking the next), so claims are released in order.
//! Order: a message goes to the ring only while the queue is empty, so every message in
//! the ring is older than every message in the queue, and the receiver takes from the
//! ring first (looking at it again once it holds the queue's lock, which publishes
//! every ring slot filled before the queue's message). A cancelled send in the ring
//! stays there, as a completed eager send does, while its receiver may still read it;
//! `withdraw` removes it only once the receiver has left.
//!
//! Shared copies: a receiver that takes a rendezvous message of at least
//! [`SHARE_FROM`] bytes (one piece, into one contiguous part) posts a [`CopyJob`] in
//! its sender's offer slot and wakes it; the sender, which only waits until its sends
//! are taken, looks at its slot each time it looks at its count ([`Shared::help`]) and
//! takes chunks of the copy as the receiver does, so two cores copy. The receiver
//! withdraws the offer when no chunk is left and, if the sender took it, waits until the
//! sender says it is done (it copies at most one more chunk): only then may the job,
//! on the receiver's stack, go away, and the claim be dropped. One slot per sender: a
//! receiver that finds it taken copies alone.
//!
//! Memory ordering: the data a sender wrote before posting (or copied into an eager
//! envelope) is published by the mailbox mutex (released by the sender's push, acquired
//! by the receiver's pop); the receiver's reads happen before the sender's next writes
//! through the `Release` decrement of `outstanding` and the sender's `Acquire` load of
//! it, and before an eager buffer's reuse through the same mailbox mutex (the buffer
//! goes back under it).

use std::cell::UnsafeCell;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::thread::Thread;
use std::time::Duration;

use hypercomm::schedule::Rank;

use crate::transport::{total_len, Incoming, Part, Tag};

const NO_FAILURE: u32 = u32::MAX;

/// Largest eager message (bytes) carried in the envelope itself, without a buffer.
pub(crate) const INLINE: usize = 40;

/// Largest eager message (bytes) carried in a slot of the pair's ring: a slot is nine
/// cache lines, [`SLOT_HEADER`] (20) bytes of header and this much data. 512 B messages
/// fit, the largest eager ones when every rank has a core ([`super::EAGER_LIMIT_SPIN`]):
/// with six-line slots (304 B), a 512 B message took the locked queue with a copied
/// buffer, and an all-gather, all-to-all or all-reduce of 512 B on 2 ranks was slower
/// than of 1 KiB (a rendezvous), 1.27–1.32 µs against 0.83–0.92 through the ring
/// (`docs/perf-log/2026-11-25-intel-xeon-ring-512b.md`).
pub(crate) const RING_INLINE: usize = 556;

/// Bytes of a ring slot before its data (sequence number, length, tag).
const SLOT_HEADER: usize = std::mem::offset_of!(InlineSlot, bytes);

/// Largest message whose slot is one cache line.
const SLOT_FIRST_LINE: usize = 64 - SLOT_HEADER;

// The slot's layout as the documentation above states it: nine lines, a 20-byte header.
const _: () = assert!(std::mem::size_of::<InlineSlot>() == 9 * 64 && SLOT_HEADER == 20);

/// A hint to bring the line at `p` into this core's cache.
#[inline(always)]
fn prefetch(p: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `prefetcht0` reads nothing the program sees and cannot fault.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p.cast())
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// A hint to move the line at `p` out of this core's private caches into the shared
/// last-level cache (`cldemote`), where another core's read of it is served without
/// snooping this core. A processor without the instruction runs it as a no-op (it is
/// encoded in the hint space of `nop`).
#[inline(always)]
fn demote(p: *const u8) {
    // (Not under Miri, which runs no inline assembly.)
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    // SAFETY: `cldemote` reads and writes nothing the program sees and cannot fault.
    unsafe {
        std::arch::asm!("cldemote [{0}]", in(reg) p, options(nostack, preserves_flags, readonly))
    };
    #[cfg(not(all(target_arch = "x86_64", not(miri))))]
    let _ = p;
}

/// Slots of a pair's ring of inline messages (the lock-free fast path).
pub(crate) const RING: usize = 8;

/// Messages a pair's queue may already hold for a small send to still go eagerly;
/// beyond, it is a rendezvous, so a sender that runs ahead of its receiver (a root
/// broadcasting in a loop) waits for it, and the eager copies in flight stay bounded.
pub(crate) const EAGER_QUEUE: usize = 16;

/// What a posted send carries.
enum Body {
    /// A rendezvous: `count` parts at `parts`, in the sender's memory.
    Borrowed { parts: *const Part, count: usize },
    /// An eager send of at most [`INLINE`] bytes (the first `len` of the array).
    Inline([u8; INLINE]),
    /// A larger eager send: a copy of the message, owned by the envelope.
    Copied(Vec<u8>),
    /// An eager send, the `index`th message of the pair's ring, which the sender does
    /// not overwrite until the claim on it is dropped (and releases it).
    Ring { ring: *const Ring, index: usize },
}

/// A posted send, as the receiver finds it.
struct Envelope {
    tag: Tag,
    len: usize,
    body: Body,
}

impl Envelope {
    fn is_eager(&self) -> bool {
        !matches!(self.body, Body::Borrowed { .. })
    }
}

// SAFETY: a borrowed body only describes memory; who may access it, and when, is the
// protocol of this module (the sender keeps it valid until its claim is dropped or the
// envelope withdrawn). The other bodies own their bytes.
unsafe impl Send for Envelope {}

/// What the mailbox lock guards.
#[derive(Default)]
struct Queue {
    messages: VecDeque<Envelope>,
    /// An eager buffer the receiver is done with, on its way back to the sender.
    returned: Option<Vec<u8>>,
}

/// One slot of a pair's ring: a message of at most [`RING_INLINE`] bytes, on cache lines
/// of its own (nine). The sender writes `tag`, `len` and `bytes` only while the slot's
/// last message is released, then sets `seq` to the message's index + 1; the receiver
/// reads them only once `seq` says the message it expects is there, until it releases
/// it.
#[repr(C, align(64))]
struct InlineSlot {
    seq: AtomicUsize,
    len: UnsafeCell<u16>,
    tag: UnsafeCell<Tag>,
    bytes: UnsafeCell<[u8; RING_INLINE]>,
}

impl Default for InlineSlot {
    fn default() -> Self {
        InlineSlot {
            seq: AtomicUsize::new(0),
            len: UnsafeCell::new(0),
            tag: UnsafeCell::new(Tag { epoch: 0, step: 0 }),
            bytes: UnsafeCell::new([0; RING_INLINE]),
        }
    }
}

/// The sender's side of a ring, on a cache line of its own (written by the sender
/// only; others read `sent`).
#[derive(Default)]
#[repr(align(64))]
struct SenderSide {
    /// Messages put into the ring so far (the next one's index).
    sent: AtomicUsize,
    /// The receiver's `released` as the sender last read it.
    seen: AtomicUsize,
}

/// The receiver's side of a ring, on a cache line of its own (written by the receiver
/// only; the sender reads `released` when the ring looks full to it).
#[derive(Default)]
#[repr(align(64))]
struct ReceiverSide {
    /// Messages taken so far (the next one's index).
    taken: AtomicUsize,
    /// Messages whose claims were dropped: their slots may be reused.
    released: AtomicUsize,
}

/// The queue of messages from one rank to another, on cache lines of its own (the
/// mailboxes of (a, b) and (b, a) are written at once by both ranks).
#[derive(Default)]
#[repr(align(128))]
struct Mailbox {
    queue: Mutex<Queue>,
    /// Length of the queue, readable without the lock (a hint for polling).
    queued: AtomicUsize,
    /// The ring of inline messages (module documentation, "fast path"), allocated by
    /// the pair's first inline send: k² pairs, most of which never carry one, cost no
    /// ring.
    ring: OnceLock<Box<Ring>>,
    /// Whether sender and receiver run on one thread (fibers): the receiver then reads
    /// the message from this core's own caches, and its lines are not demoted.
    local: bool,
}

/// A pair's ring of inline slots, with each side's counters. Message `i` goes into slot
/// `i % RING`.
#[derive(Default)]
pub(crate) struct Ring {
    slots: [InlineSlot; RING],
    sender: SenderSide,
    receiver: ReceiverSide,
}

// SAFETY: the sender writes a slot's cells for message `i` only once it has seen
// `released ≥ i + 1 - RING` (Acquire; the receiver stores it with Release after its
// reads of message `i - RING`), and the receiver reads them only once it has seen
// `seq == i + 1` (Acquire; the sender stores it with Release after its writes).
unsafe impl Sync for Ring {}

impl Ring {
    /// Messages in the ring not yet released (any thread). `released` is read first:
    /// it never exceeds `sent`, and both only grow (but in `withdraw`, once the
    /// receiver is gone), so the difference cannot underflow.
    fn count(&self) -> usize {
        let released = self.receiver.released.load(Ordering::Acquire);
        let sent = self.sender.sent.load(Ordering::Acquire);
        sent.wrapping_sub(released)
    }
}

impl Mailbox {
    fn lock(&self) -> MutexGuard<'_, Queue> {
        // The queue holds plain data: a panic while it was locked leaves it consistent.
        self.queue.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Put an inline message into the ring if the queue is empty and a slot is free;
    /// called by the sender only. Returns whether it did.
    fn try_ring<'a>(&self, tag: Tag, pieces: impl Iterator<Item = &'a [u8]>) -> bool {
        // Only the sender pushes to the queue: its length can only have dropped since.
        if self.queued.load(Ordering::Relaxed) != 0 {
            return false;
        }
        let ring = self.ring.get_or_init(Box::default);
        let me = &ring.sender;
        let i = me.sent.load(Ordering::Relaxed);
        if i.wrapping_sub(me.seen.load(Ordering::Relaxed)) >= RING {
            // Full as far as we know: look at what the receiver has released since.
            let released = ring.receiver.released.load(Ordering::Acquire);
            me.seen.store(released, Ordering::Relaxed);
            if i.wrapping_sub(released) >= RING {
                return false;
            }
        }
        let slot = &ring.slots[i % RING];
        // SAFETY: the slot's previous message, `i - RING`, is released, so the receiver
        // no longer reads it (its reads happened before the Release store we acquired),
        // and does not read it again before `seq` says `i + 1`; only this sender writes
        // slots.
        let len = unsafe {
            let bytes = &mut *slot.bytes.get();
            let mut len = 0;
            for piece in pieces {
                bytes[len..len + piece.len()].copy_from_slice(piece);
                len += piece.len();
            }
            *slot.tag.get() = tag;
            *slot.len.get() = len as u16;
            len
        };
        debug_assert!(len <= RING_INLINE);
        slot.seq.store(i.wrapping_add(1), Ordering::Release);
        me.sent.store(i.wrapping_add(1), Ordering::Release);
        // Push the message's lines towards the receiver, which reads them next: its
        // read is then served by the shared cache, not by a snoop of this core (a
        // producer's use of `cldemote`). A 2-rank broadcast after a tree barrier, 16–256
        // B: 4–10 % faster; 8 B and exchanges unchanged; 4 ranks as fibers, 512 B about
        // 10 % slower (`docs/perf-log/2026-11-25-cldemote.md`). Not for a receiver
        // on this thread, which reads them from this core's caches.
        if !self.local {
            let at = (slot as *const InlineSlot).cast::<u8>();
            for line in 0..(SLOT_HEADER + len).div_ceil(64) {
                // SAFETY: within the slot (`len` ≤ RING_INLINE); a hint, no access.
                demote(unsafe { at.add(64 * line) });
            }
        }
        true
    }

    /// Whether the receiver's next ring message is there; called by the receiver.
    fn ring_ready(&self) -> bool {
        self.ring.get().is_some_and(|ring| {
            let i = ring.receiver.taken.load(Ordering::Relaxed);
            ring.slots[i % RING].seq.load(Ordering::Acquire) == i.wrapping_add(1)
        })
    }

    /// Whether the ring holds a message not yet released (any thread).
    fn ring_nonempty(&self) -> bool {
        self.ring_count() > 0
    }

    /// Messages in the ring not yet released (any thread).
    fn ring_count(&self) -> usize {
        self.ring.get().map_or(0, |ring| ring.count())
    }

    /// Take the receiver's next ring message, if any; called by the receiver.
    fn take_ring(&self) -> Option<Envelope> {
        let ring = self.ring.get()?;
        let i = ring.receiver.taken.load(Ordering::Relaxed);
        let slot = &ring.slots[i % RING];
        if slot.seq.load(Ordering::Acquire) != i.wrapping_add(1) {
            return None;
        }
        // SAFETY: message `i` is in the slot (the sender's writes happened before its
        // Release store of `seq`), and the sender does not write the slot again until
        // the claim releases the message.
        let env = unsafe {
            Envelope {
                tag: *slot.tag.get(),
                len: *slot.len.get() as usize,
                body: Body::Ring {
                    ring: &**ring,
                    index: i,
                },
            }
        };
        ring.receiver
            .taken
            .store(i.wrapping_add(1), Ordering::Relaxed);
        Some(env)
    }
}

/// An eager buffer kept by one side of a pair for its next use. Only that side's
/// thread touches it, so its lock is never contended and its memory stays in that
/// side's cache; a rank's slots are contiguous.
#[derive(Default)]
struct Slot(Mutex<Option<Vec<u8>>>);

impl Slot {
    fn take(&self) -> Option<Vec<u8>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).take()
    }
    /// Keep `buf` if the slot is empty (otherwise it is freed).
    fn keep(&self, buf: Vec<u8>) {
        let mut slot = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if slot.is_none() {
            *slot = Some(buf);
        }
    }
}

/// Bytes from which a rendezvous message's receiver offers its sender to share the copy
/// ([`Shared::copy_shared`]).
pub(crate) const SHARE_FROM: usize = 256 * 1024;

/// Bytes of one chunk of a shared copy.
const SHARE_CHUNK: usize = 64 * 1024;

/// A copy that a receiver offers its sender to share: chunk `c` is bytes
/// `c · SHARE_CHUNK ..` of `src`, copied to the same offsets of `dst`; whoever takes a
/// chunk (`next`) copies it.
struct CopyJob {
    src: *const u8,
    dst: *mut u8,
    len: usize,
    next: AtomicUsize,
}

impl CopyJob {
    /// Copy chunks until none is left to take.
    ///
    /// # Safety
    /// `src` is readable and `dst` writable for `len` bytes, they do not overlap, and no
    /// one else accesses `dst` but through this job meanwhile.
    unsafe fn work(&self) {
        let chunks = self.len.div_ceil(SHARE_CHUNK);
        loop {
            let c = self.next.fetch_add(1, Ordering::Relaxed);
            if c >= chunks {
                return;
            }
            let at = c * SHARE_CHUNK;
            let n = SHARE_CHUNK.min(self.len - at);
            // SAFETY: within both regions (`at + n <= len`); each chunk is taken once.
            unsafe { std::ptr::copy_nonoverlapping(self.src.add(at), self.dst.add(at), n) };
        }
    }
}

/// A rank's offer slot: a receiver of one of its rendezvous messages posts a
/// [`CopyJob`] here, and the rank, waiting for its sends to be taken, helps with it.
/// `state` goes `OFFER_IDLE` → `OFFER_FILLING` (the receiver owns the slot) →
/// `OFFER_POSTED` → either back to `OFFER_IDLE` (withdrawn, no helper came) or
/// `OFFER_TAKEN` (the sender copies) → `OFFER_DONE` (it no longer touches the job) →
/// `OFFER_IDLE` (set by the receiver, which may then drop the job).
#[derive(Default)]
#[repr(align(64))]
struct Offer {
    state: AtomicU8,
    job: AtomicPtr<CopyJob>,
}

const OFFER_IDLE: u8 = 0;
const OFFER_FILLING: u8 = 1;
const OFFER_POSTED: u8 = 2;
const OFFER_TAKEN: u8 = 3;
const OFFER_DONE: u8 = 4;

/// One rank's state, on cache lines of its own (its peers write `outstanding`).
#[derive(Default)]
#[repr(align(128))]
struct RankState {
    thread: OnceLock<Thread>,
    /// Rendezvous sends posted by this rank and not yet taken (claims alive count as
    /// not taken).
    outstanding: AtomicUsize,
    /// Whether the rank's closure has returned or unwound.
    gone: AtomicBool,
    /// Whether the rank is (about to be) parked in [`Shared::park`]: only then does a
    /// sender unpark it, sparing every message a write to the receiver's parker.
    parked: AtomicBool,
    /// Unparks so far ([`Shared::unparks`]).
    #[cfg(test)]
    unparks: AtomicU32,
}

/// State shared by the ranks of one run.
pub(crate) struct Shared {
    k: u32,
    /// Largest message (bytes) sent eagerly.
    eager: usize,
    /// Mailbox of (src, dst) at `src · k + dst`.
    boxes: Box<[Mailbox]>,
    /// The sender's buffer slot of (src, dst) at `src · k + dst`.
    sending: Box<[Slot]>,
    /// The receiver's buffer slot of (src, dst) at `dst · k + src`.
    receiving: Box<[Slot]>,
    ranks: Box<[RankState]>,
    /// Each rank's offer slot, for the copies its receivers share with it.
    offers: Box<[Offer]>,
    failed: AtomicU32,
}

impl Shared {
    pub(crate) fn new(k: u32, eager: usize) -> Self {
        fences::init();
        let n = k as usize;
        Shared {
            k,
            eager,
            boxes: (0..n * n).map(|_| Mailbox::default()).collect(),
            sending: (0..n * n).map(|_| Slot::default()).collect(),
            receiving: (0..n * n).map(|_| Slot::default()).collect(),
            ranks: (0..n).map(|_| RankState::default()).collect(),
            offers: (0..n).map(|_| Offer::default()).collect(),
            failed: AtomicU32::new(NO_FAILURE),
        }
    }

    /// Note which ranks share a thread (ranks as fibers): `thread_of(rank)`.
    pub(crate) fn share_threads(&mut self, thread_of: impl Fn(Rank) -> usize) {
        let k = self.k;
        for (i, mailbox) in self.boxes.iter_mut().enumerate() {
            let (src, dst) = (i as Rank / k, i as Rank % k);
            mailbox.local = thread_of(src) == thread_of(dst);
        }
    }

    pub(crate) fn size(&self) -> u32 {
        self.k
    }

    /// Mark every rank parked for good, so that every message and departure wakes its
    /// receiver's thread: for a sub-communicator's ranks that run as fibers, whose
    /// thread parks on the run's `Shared`, not on this one ([`super::groups`]).
    pub(crate) fn wake_always(&self) {
        for rank in self.ranks.iter() {
            rank.parked.store(true, Ordering::Relaxed);
        }
    }

    /// Copy `len` bytes of a rendezvous message of `from` from `src` to `dst`, sharing
    /// the copy with `from` if it is waiting for its sends (it takes chunks as this rank
    /// does, so two cores copy): `from`, idle until its message is taken, moves half of
    /// it. Without a helper (the slot is taken by another receiver, or `from` is busy
    /// elsewhere or never looks) this rank copies every chunk itself.
    ///
    /// # Safety
    /// `src` is readable (a message of `from`, which keeps it unchanged until its claim
    /// is dropped, after this call) and `dst` writable for `len` bytes, they do not
    /// overlap, and no one else accesses `dst` during the call.
    pub(crate) unsafe fn copy_shared(&self, from: Rank, src: *const u8, dst: *mut u8, len: usize) {
        let job = CopyJob {
            src,
            dst,
            len,
            next: AtomicUsize::new(0),
        };
        let offer = &self.offers[from as usize];
        let posted = offer
            .state
            .compare_exchange(
                OFFER_IDLE,
                OFFER_FILLING,
                Ordering::Acquire,
                Ordering::Relaxed,
            )
            .is_ok();
        if posted {
            offer
                .job
                .store(std::ptr::from_ref(&job).cast_mut(), Ordering::Relaxed);
            offer.state.store(OFFER_POSTED, Ordering::Release);
            self.wake(from);
        }
        // SAFETY: the caller's contract; the helper copies other chunks.
        unsafe { job.work() };
        if posted
            && offer
                .state
                .compare_exchange(
                    OFFER_POSTED,
                    OFFER_IDLE,
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                )
                .is_err()
        {
            // Taken: `job` must live until the helper has copied its last chunk (no
            // more than one: none is left to take), and its copies must be visible.
            // No timeout and no failure check: the helper is inside `help_with`, which
            // neither waits nor pauses (a fiber of this thread cannot have taken the
            // offer), so this lasts one chunk's copy once its thread runs; and this rank
            // may not leave while the helper may still write its buffer.
            let mut spins = 0u32;
            while offer.state.load(Ordering::Acquire) != OFFER_DONE {
                spins = spins.wrapping_add(1);
                match spins % 1024 {
                    0 => std::thread::yield_now(),
                    _ => std::hint::spin_loop(),
                }
            }
            offer.state.store(OFFER_IDLE, Ordering::Release);
        }
    }

    /// If a receiver of `rank`'s messages offers to share its copy, take part in it;
    /// called by `rank` while it waits for its sends to be taken.
    #[inline]
    pub(crate) fn help(&self, rank: Rank) {
        let offer = &self.offers[rank as usize];
        if offer.state.load(Ordering::Relaxed) == OFFER_POSTED {
            self.help_with(offer);
        }
    }

    #[cold]
    #[inline(never)]
    fn help_with(&self, offer: &Offer) {
        if offer
            .state
            .compare_exchange(
                OFFER_POSTED,
                OFFER_TAKEN,
                Ordering::Acquire,
                Ordering::Relaxed,
            )
            .is_ok()
        {
            // SAFETY: the receiver keeps the job alive, and its regions valid, until it
            // sees `OFFER_DONE`; the regions are a message of this rank (unchanged while
            // it waits) and the receiver's buffer, which only the job's chunks write.
            unsafe { (*offer.job.load(Ordering::Relaxed)).work() };
            offer.state.store(OFFER_DONE, Ordering::Release);
        }
    }

    fn mailbox(&self, src: Rank, dst: Rank) -> &Mailbox {
        &self.boxes[src as usize * self.k as usize + dst as usize]
    }

    fn sending(&self, src: Rank, dst: Rank) -> &Slot {
        &self.sending[src as usize * self.k as usize + dst as usize]
    }

    fn receiving(&self, src: Rank, dst: Rank) -> &Slot {
        &self.receiving[dst as usize * self.k as usize + src as usize]
    }

    /// Record the calling thread as `rank`'s, to be woken.
    pub(crate) fn register(&self, rank: Rank) {
        let _ = self.ranks[rank as usize].thread.set(std::thread::current());
    }

    /// Unpark `rank`, unconditionally.
    fn unpark(&self, rank: Rank) {
        #[cfg(test)]
        self.ranks[rank as usize]
            .unparks
            .fetch_add(1, Ordering::Relaxed);
        if let Some(t) = self.ranks[rank as usize].thread.get() {
            t.unpark();
        }
    }

    /// How many times `rank`'s thread was unparked (tests of the parking protocol).
    #[cfg(test)]
    pub(crate) fn unparks(&self, rank: Rank) -> u32 {
        self.ranks[rank as usize].unparks.load(Ordering::Relaxed)
    }

    /// Wake `rank` after publishing what it may wait for (a message, a taken claim),
    /// if it is parked. The fence pairs with the one in [`Shared::park`]: either this
    /// side sees `parked` set, or the parking side sees what was published and does
    /// not park (the store-fence-load pattern on both sides). This side's is the light
    /// one of an asymmetric pair ([`fences`]): every message passes here, few waits
    /// park.
    fn wake(&self, rank: Rank) {
        fences::light();
        if self.ranks[rank as usize].parked.load(Ordering::Relaxed) {
            self.unpark(rank);
        }
    }

    /// Park the calling thread, `rank`'s, for at most `timeout` unless `ready()` holds
    /// once it is marked parked; [`Shared::wake`] then unparks it. Spurious returns
    /// are possible: the caller checks again.
    pub(crate) fn park(&self, rank: Rank, timeout: Duration, ready: impl FnOnce() -> bool) {
        self.park_ranks(std::slice::from_ref(&rank), timeout, ready);
    }

    /// [`Shared::park`] for the thread that runs `ranks` as fibers: every one of them
    /// is marked parked, then, unless `ready()` (the fibers' look at what each waits
    /// for, after the fence) holds, the thread parks for at most `timeout`; a wake of
    /// any of them unparks it.
    pub(crate) fn park_ranks(
        &self,
        ranks: &[Rank],
        timeout: Duration,
        ready: impl FnOnce() -> bool,
    ) {
        let flags = || ranks.iter().map(|&r| &self.ranks[r as usize].parked);
        flags().for_each(|p| p.store(true, Ordering::Relaxed));
        fences::heavy();
        if !ready() {
            std::thread::park_timeout(timeout);
        }
        flags().for_each(|p| p.store(false, Ordering::Relaxed));
    }

    /// Every rank woken, parked or not (a failure or a departure: waits end at once).
    fn wake_all(&self) {
        (0..self.k).for_each(|r| self.unpark(r));
    }

    /// The first rank that failed, if any.
    pub(crate) fn failed(&self) -> Option<Rank> {
        let r = self.failed.load(Ordering::SeqCst);
        (r != NO_FAILURE).then_some(r)
    }

    /// Blame `rank` unless another rank failed first; returns the rank blamed.
    pub(crate) fn blame(&self, rank: Rank) -> Rank {
        match self
            .failed
            .compare_exchange(NO_FAILURE, rank, Ordering::SeqCst, Ordering::SeqCst)
        {
            Ok(_) => rank,
            Err(first) => first,
        }
    }

    /// `rank` failed (panicked or returned an error): it is gone, every wait ends.
    pub(crate) fn fail(&self, rank: Rank) {
        self.blame(rank);
        self.leave(rank);
    }

    /// `rank` left: waits on it end; everyone is woken to notice.
    pub(crate) fn leave(&self, rank: Rank) {
        self.ranks[rank as usize].gone.store(true, Ordering::SeqCst);
        self.wake_all();
    }

    /// Whether `rank` has left (or failed). Once this is seen true, `has_message` on
    /// its mailboxes shows every message it took before leaving as taken (the pop
    /// happens before the `SeqCst` store of `leave`).
    pub(crate) fn is_gone(&self, rank: Rank) -> bool {
        self.ranks[rank as usize].gone.load(Ordering::SeqCst)
    }

    /// Rendezvous sends of `rank` not yet taken.
    pub(crate) fn outstanding(&self, rank: Rank) -> usize {
        self.ranks[rank as usize]
            .outstanding
            .load(Ordering::Acquire)
    }

    /// Whether a message from `src` to `dst` waits.
    pub(crate) fn has_message(&self, src: Rank, dst: Rank) -> bool {
        let mailbox = self.mailbox(src, dst);
        mailbox.queued.load(Ordering::Acquire) > 0 || mailbox.ring_nonempty()
    }

    /// Whether a message from `src` waits for the calling receiver, `dst` (its poll:
    /// the ring's next slot, then the queue).
    pub(crate) fn has_message_for_me(&self, src: Rank, dst: Rank) -> bool {
        let mailbox = self.mailbox(src, dst);
        mailbox.ring_ready() || mailbox.queued.load(Ordering::Acquire) > 0
    }

    /// Ask the cache for the lines past the first of the ring slot where the next
    /// message from `src` to `dst` (the caller) will be, if a message of `len` bytes
    /// spans them: the receiver's look at the slot's sequence number then fetches them
    /// alongside, instead of after it (one transfer between cores, not two). Only a
    /// hint: a prefetch reads nothing the program sees.
    #[inline]
    pub(crate) fn prefetch_next(&self, src: Rank, dst: Rank, len: usize) {
        if len > SLOT_FIRST_LINE {
            self.prefetch_lines(src, dst, len, 1);
        }
    }

    /// Ask the cache for every line of the ring slot where the next message from `src`
    /// to `dst` (the caller) will be, if a message of `len` bytes fits the ring. Called
    /// as a call begins ([`crate::Transport::expect`]): a sender that got there first has
    /// written the slot already, and its lines then cross between cores while the
    /// receiver checks and plans the call, instead of once it polls. Only a hint.
    #[inline]
    pub(crate) fn prefetch_slot(&self, src: Rank, dst: Rank, len: usize) {
        self.prefetch_lines(src, dst, len, 0);
    }

    /// Prefetch the lines from `first` on of the next ring slot from `src` to `dst` that
    /// a message of `len` bytes occupies (none if it does not fit the ring).
    #[inline]
    fn prefetch_lines(&self, src: Rank, dst: Rank, len: usize, first: usize) {
        if len > RING_INLINE {
            return;
        }
        let Some(ring) = self.mailbox(src, dst).ring.get() else {
            return;
        };
        let i = ring.receiver.taken.load(Ordering::Relaxed);
        let slot = (&ring.slots[i % RING] as *const InlineSlot).cast::<u8>();
        let lines = (SLOT_HEADER + len).div_ceil(64);
        debug_assert!(64 * lines <= std::mem::size_of::<InlineSlot>());
        for line in first..lines {
            // SAFETY: within the slot (`lines` ≤ 9, the slot's size); a prefetch does
            // not access memory as the language defines it.
            prefetch(unsafe { slot.add(64 * line) });
        }
    }

    /// Messages to `dst` still waiting in its mailboxes, as (sender, count) for the
    /// first sender that has any: only meaningful once every rank has left.
    pub(crate) fn untaken(&self, dst: Rank) -> Option<(Rank, usize)> {
        (0..self.k).find_map(|src| {
            let mailbox = self.mailbox(src, dst);
            let n = mailbox.lock().messages.len() + mailbox.ring_count();
            (n > 0).then_some((src, n))
        })
    }

    /// Publish a send from `src` to `dst` and wake `dst`. A message of at most
    /// `self.eager` bytes is copied (eager: complete once this returns, nothing
    /// outstanding) unless [`EAGER_QUEUE`] messages of the pair wait already; any other
    /// is lent (rendezvous).
    ///
    /// # Safety
    /// `parts` and the memory it names must be valid and unmodified during this call,
    /// and, unless the send was eager, until `src` has seen `outstanding(src) == 0`,
    /// after a wait or after [`Shared::withdraw`].
    pub(crate) unsafe fn post(&self, src: Rank, dst: Rank, tag: Tag, parts: &[Part]) {
        let len = total_len(parts);
        let mailbox = self.mailbox(src, dst);
        // Only `src` pushes to this queue: its length can only have dropped since.
        let eager = len <= self.eager && mailbox.queued.load(Ordering::Relaxed) < EAGER_QUEUE;
        // SAFETY: the caller keeps the parts readable and unmodified during this call.
        let pieces = || unsafe { Incoming::new(parts) }.pieces();
        if eager && len <= RING_INLINE && mailbox.try_ring(tag, pieces()) {
            self.wake(dst);
            return;
        }
        let body = if !eager {
            self.ranks[src as usize]
                .outstanding
                .fetch_add(1, Ordering::Relaxed);
            Body::Borrowed {
                parts: parts.as_ptr(),
                count: parts.len(),
            }
        } else if len <= INLINE {
            let mut bytes = [0u8; INLINE];
            let mut at = 0;
            for piece in pieces() {
                bytes[at..at + piece.len()].copy_from_slice(piece);
                at += piece.len();
            }
            Body::Inline(bytes)
        } else {
            let mut buf = self.sending(src, dst).take().unwrap_or_default();
            buf.clear();
            buf.reserve(len);
            pieces().for_each(|piece| buf.extend_from_slice(piece));
            Body::Copied(buf)
        };
        let copied = matches!(body, Body::Copied(_));
        let env = Envelope { tag, len, body };
        let mut q = mailbox.lock();
        q.messages.push_back(env);
        mailbox.queued.store(q.messages.len(), Ordering::Release);
        // The sender's slot is empty after a copied send: refill it from the buffer
        // the receiver handed back, if any.
        let back = if copied { q.returned.take() } else { None };
        drop(q);
        self.wake(dst);
        if let Some(buf) = back {
            self.sending(src, dst).keep(buf);
        }
    }

    /// Take the next message from `src` to `dst`, if any; called by `dst` only.
    pub(crate) fn take(&self, src: Rank, dst: Rank) -> Option<Claim<'_>> {
        let mailbox = self.mailbox(src, dst);
        let claim = |env| Claim {
            shared: self,
            src,
            dst,
            env,
            part: [Part::from_raw(std::ptr::null(), 0)],
        };
        if let Some(env) = mailbox.take_ring() {
            return Some(claim(env));
        }
        let mut q = mailbox.lock();
        if q.messages.is_empty() {
            return None;
        }
        // The lock publishes every ring slot filled before the queue's first message,
        // which is newer than all of them: take those first.
        if let Some(env) = mailbox.take_ring() {
            return Some(claim(env));
        }
        let env = q.messages.pop_front()?;
        mailbox.queued.store(q.messages.len(), Ordering::Release);
        // With a copied message, hand back the buffer of the previous one (if the
        // sender has none waiting already): the sender needs one for its next.
        if matches!(env.body, Body::Copied(_)) && q.returned.is_none() {
            q.returned = self.receiving(src, dst).take();
        }
        drop(q);
        Some(claim(env))
    }

    /// Remove the newest `n` messages from `src` to `dst`, those of the sends being
    /// cancelled, as far as no one took them (messages are taken oldest first, so the
    /// ones left of the `n` are the newest). Older eager messages stay: their sends
    /// completed, and their receiver may still take them. Messages in the ring (older
    /// than the queue's) are removed only once the receiver has left: a live receiver
    /// may be reading them. Returns how many messages were removed.
    pub(crate) fn withdraw(&self, src: Rank, dst: Rank, n: usize) -> usize {
        let mailbox = self.mailbox(src, dst);
        let mut q = mailbox.lock();
        let keep = q.messages.len().saturating_sub(n);
        let removed: Vec<Envelope> = q.messages.drain(keep..).collect();
        mailbox.queued.store(q.messages.len(), Ordering::Release);
        drop(q);
        let lent = removed.iter().filter(|e| !e.is_eager()).count();
        self.ranks[src as usize]
            .outstanding
            .fetch_sub(lent, Ordering::AcqRel);
        let mut left = n - removed.len();
        if let Some(ring) = mailbox.ring.get().filter(|_| left > 0 && self.is_gone(dst)) {
            // The newest messages not released, by moving the sender's count back (the
            // receiver is gone: it reads no slot again).
            let drop = left.min(ring.count());
            let sent = ring.sender.sent.load(Ordering::Relaxed);
            ring.sender
                .sent
                .store(sent.wrapping_sub(drop), Ordering::Release);
            left -= drop;
        }
        n - left
    }
}

/// A message taken by its receiver: the sender's memory (or the eager copy) stays
/// valid and unmodified while the claim lives.
pub(crate) struct Claim<'s> {
    shared: &'s Shared,
    src: Rank,
    dst: Rank,
    env: Envelope,
    /// For an eager message, the one part naming its copy, set by `incoming`.
    part: [Part; 1],
}

impl Claim<'_> {
    pub(crate) fn tag(&self) -> Tag {
        self.env.tag
    }

    pub(crate) fn len(&self) -> usize {
        self.env.len
    }

    /// Whether the message is lent (a rendezvous): its sender waits until it is taken.
    pub(crate) fn is_lent(&self) -> bool {
        !self.env.is_eager()
    }

    /// The message, borrowed from the sender (or the eager copy) for as long as the
    /// claim is borrowed (mutably: an inline copy lives in the claim, which must not
    /// move meanwhile).
    pub(crate) fn incoming(&mut self) -> Incoming<'_> {
        let copy = match &self.env.body {
            Body::Borrowed { parts, count } => {
                // SAFETY: the sender posted `count` parts at `parts` (`Shared::post`)
                // and keeps them, and the memory they name, valid and unmodified until
                // its outstanding count drops to zero, which cannot happen before this
                // claim is dropped.
                return unsafe { Incoming::new(std::slice::from_raw_parts(*parts, *count)) };
            }
            Body::Inline(bytes) => &bytes[..self.env.len],
            Body::Ring { ring, index } => {
                // SAFETY: the message stays unreleased, so its slot unwritten by the
                // sender, and the ring allocated, until this claim is dropped.
                let slot = unsafe { &(**ring).slots[index % RING] };
                let bytes: &[u8; RING_INLINE] = unsafe { &*slot.bytes.get() };
                &bytes[..self.env.len]
            }
            Body::Copied(buf) => &buf[..],
        };
        self.part = [Part::new(copy)];
        // SAFETY: `part` names bytes owned by `self.env`, which no one writes, frees or
        // moves while `self` is borrowed (only `drop` takes a copied buffer).
        unsafe { Incoming::new(&self.part) }
    }
}

impl Drop for Claim<'_> {
    fn drop(&mut self) {
        match &mut self.env.body {
            Body::Borrowed { .. } => {
                let state = &self.shared.ranks[self.src as usize];
                if state.outstanding.fetch_sub(1, Ordering::Release) == 1 {
                    self.shared.wake(self.src);
                }
            }
            Body::Inline(_) => {}
            Body::Ring { ring, index } => {
                // SAFETY: the ring lives as long as the mailbox, which outlives the claim.
                let released = &unsafe { &**ring }.receiver.released;
                // Claims are dropped in order: the receiver holds one at a time.
                debug_assert_eq!(released.load(Ordering::Relaxed), *index);
                released.store(index.wrapping_add(1), Ordering::Release);
            }
            // Kept for the next take, which hands it back to the sender.
            Body::Copied(buf) => self
                .shared
                .receiving(self.src, self.dst)
                .keep(std::mem::take(buf)),
        }
    }
}

/// The asymmetric fence pair of [`Shared::wake`] (light, on every message) and
/// [`Shared::park`] (heavy, before a thread sleeps): on Linux, the heavy side is
/// `membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED)`, which makes every running thread of
/// the process execute a full memory barrier (threads not running have passed through
/// one in the context switch), so the light side needs only to keep the compiler from
/// reordering: the sender no longer stalls, after filling a slot, until the slot's
/// cache line is its own. The technique of Folly's `asymmetricLightBarrier` /
/// `asymmetricHeavyBarrier` and of the Linux `membarrier(2)` manual page (its example
/// is this fast path / slow path split). Where the system call is refused (another
/// kernel, a sandbox) both sides are a `SeqCst` fence, decided once per process before
/// any rank starts.
mod fences {
    use std::sync::atomic::{compiler_fence, fence, Ordering};
    use std::sync::OnceLock;

    /// Whether the heavy side is `membarrier` (registered for this process).
    static ASYMMETRIC: OnceLock<bool> = OnceLock::new();

    #[cfg(target_os = "linux")]
    mod sys {
        /// From `<linux/membarrier.h>`.
        const PRIVATE_EXPEDITED: libc::c_int = 1 << 3;
        const REGISTER_PRIVATE_EXPEDITED: libc::c_int = 1 << 4;

        fn membarrier(cmd: libc::c_int) -> bool {
            // SAFETY: the system call reads no memory of ours: flags 0, cpu 0.
            unsafe {
                libc::syscall(
                    libc::SYS_membarrier,
                    cmd,
                    0 as libc::c_uint,
                    0 as libc::c_int,
                ) == 0
            }
        }

        /// Register the process, then check that the barrier works.
        pub(super) fn register() -> bool {
            membarrier(REGISTER_PRIVATE_EXPEDITED) && membarrier(PRIVATE_EXPEDITED)
        }

        pub(super) fn heavy() -> bool {
            membarrier(PRIVATE_EXPEDITED)
        }
    }

    #[cfg(not(target_os = "linux"))]
    mod sys {
        pub(super) fn register() -> bool {
            false
        }
        pub(super) fn heavy() -> bool {
            false
        }
    }

    /// Decide, once per process, which pair is in use; called before any rank starts
    /// (every thread that calls [`light`] or [`heavy`] starts after it).
    pub(super) fn init() {
        ASYMMETRIC.get_or_init(sys::register);
    }

    fn asymmetric() -> bool {
        ASYMMETRIC.get().copied().unwrap_or(false)
    }

    /// The fast side: a compiler fence where the heavy side is `membarrier`, else a
    /// `SeqCst` fence.
    #[inline]
    pub(super) fn light() {
        if asymmetric() {
            compiler_fence(Ordering::SeqCst);
        } else {
            fence(Ordering::SeqCst);
        }
    }

    /// The slow side.
    pub(super) fn heavy() {
        if asymmetric() {
            // Registered, so it cannot fail (membarrier(2): EINVAL and EPERM are the
            // only errors, for an unknown command or a process not registered).
            let done = sys::heavy();
            debug_assert!(done, "membarrier failed after registration");
            if done {
                return;
            }
        }
        fence(Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `share_threads` marks exactly the pairs whose ranks share a thread, in both
    /// directions (the mailbox of (src, dst) is at src·k + dst).
    #[test]
    fn pairs_on_one_thread_are_marked_local() {
        let mut shared = Shared::new(5, 512);
        // Threads of ranks {0, 1}, {2, 3, 4}.
        let thread_of = |r: Rank| usize::from(r >= 2);
        shared.share_threads(thread_of);
        for src in 0..5 {
            for dst in 0..5 {
                let local = thread_of(src) == thread_of(dst);
                assert_eq!(shared.mailbox(src, dst).local, local, "{src} -> {dst}");
            }
        }
    }

    /// A shared copy arrives whole, whether a helper takes part (a thread calling
    /// `help` for the sender all along), the slot is taken by another receiver's offer
    /// (the copy is then this receiver's alone), or no one helps; the slot is idle
    /// after each.
    #[test]
    fn a_shared_copy_arrives_whole_with_or_without_a_helper() {
        let shared = Shared::new(2, 512);
        let len = 40 * SHARE_CHUNK + 12_345;
        let src: Vec<u8> = (0..len).map(|i| (i * 7 % 251) as u8).collect();
        for case in ["helper", "slot taken", "alone"] {
            let mut dst = vec![0u8; len];
            let stop = AtomicBool::new(false);
            if case == "slot taken" {
                shared.offers[0]
                    .state
                    .store(OFFER_FILLING, Ordering::Relaxed);
            }
            std::thread::scope(|s| {
                if case == "helper" {
                    s.spawn(|| {
                        while !stop.load(Ordering::Relaxed) {
                            shared.help(0);
                        }
                    });
                }
                // SAFETY: both vectors live through the call, distinct, `len` long.
                unsafe { shared.copy_shared(0, src.as_ptr(), dst.as_mut_ptr(), len) };
                stop.store(true, Ordering::Relaxed);
            });
            assert!(dst == src, "{case}");
            let want = if case == "slot taken" {
                OFFER_FILLING
            } else {
                OFFER_IDLE
            };
            assert_eq!(
                shared.offers[0].state.load(Ordering::Relaxed),
                want,
                "{case}"
            );
            shared.offers[0].state.store(OFFER_IDLE, Ordering::Relaxed);
        }
    }
}
