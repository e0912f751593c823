//! The single-copy core of the threads backend: the only code that hands one
//! thread's memory to another.
//!
//! A send is a rendezvous: the sender publishes an [`Envelope`] (a pointer to its list of
//! parts, which point into its own buffers) in the mailbox of the pair (sender,
//! receiver), and the receiver copies (or combines) straight from the sender's memory
//! into its own: one copy, no intermediate buffer, no allocation per message (a mailbox
//! is a `VecDeque` that keeps its capacity).
//!
//! Completion: each rank counts its sends not yet taken (`outstanding`). A receiver holds
//! a [`Claim`] while it reads the sender's memory; dropping the claim (also on unwinding)
//! decrements the count and wakes the sender when it reaches zero. The sender touches
//! the memory of its sends again only once the count is zero, either after `wait_all`
//! or after [`Shared::withdraw`] removed what no receiver took.
//!
//! Failure: a rank that panics, returns an error or leaves is marked ([`Shared::fail`],
//! [`Shared::leave`]) and every thread is woken, so waits end with `PeerFailed` at once;
//! otherwise waits end at the configured timeout.
//!
//! Memory ordering: the data a sender wrote before posting is published by the mailbox
//! mutex (released by the sender's push, acquired by the receiver's pop); the
//! receiver's reads happen before the sender's next writes through the `Release`
//! decrement of `outstanding` and the sender's `Acquire` load of it.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::thread::Thread;

use hypercomm::schedule::Rank;

use crate::transport::{total_len, Incoming, Part, Tag};

const NO_FAILURE: u32 = u32::MAX;

/// A posted send, as the receiver finds it.
#[derive(Clone, Copy)]
struct Envelope {
    tag: Tag,
    parts: *const Part,
    count: usize,
    len: usize,
}

// SAFETY: an envelope only describes memory; who may access it, and when, is the
// protocol of this module (the sender keeps it valid until its claim is dropped or the
// envelope withdrawn).
unsafe impl Send for Envelope {}

/// The queue of messages from one rank to another.
#[derive(Default)]
struct Mailbox {
    queue: Mutex<VecDeque<Envelope>>,
    /// Length of `queue`, readable without the lock (a hint for polling).
    queued: AtomicUsize,
}

impl Mailbox {
    fn lock(&self) -> MutexGuard<'_, VecDeque<Envelope>> {
        // The queue holds plain data: a panic while it was locked leaves it consistent.
        self.queue.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[derive(Default)]
struct RankState {
    thread: OnceLock<Thread>,
    /// Sends posted by this rank and not yet taken (claims alive count as not taken).
    outstanding: AtomicUsize,
    /// Whether the rank's closure has returned or unwound.
    gone: AtomicBool,
}

/// State shared by the ranks of one run.
pub(crate) struct Shared {
    k: u32,
    boxes: Box<[Mailbox]>,
    ranks: Box<[RankState]>,
    failed: AtomicU32,
}

impl Shared {
    pub(crate) fn new(k: u32) -> Self {
        let n = k as usize;
        Shared {
            k,
            boxes: (0..n * n).map(|_| Mailbox::default()).collect(),
            ranks: (0..n).map(|_| RankState::default()).collect(),
            failed: AtomicU32::new(NO_FAILURE),
        }
    }

    pub(crate) fn size(&self) -> u32 {
        self.k
    }

    fn mailbox(&self, src: Rank, dst: Rank) -> &Mailbox {
        &self.boxes[src as usize * self.k as usize + dst as usize]
    }

    /// Record the calling thread as `rank`'s, to be woken.
    pub(crate) fn register(&self, rank: Rank) {
        let _ = self.ranks[rank as usize].thread.set(std::thread::current());
    }

    fn wake(&self, rank: Rank) {
        if let Some(t) = self.ranks[rank as usize].thread.get() {
            t.unpark();
        }
    }

    fn wake_all(&self) {
        (0..self.k).for_each(|r| self.wake(r));
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

    pub(crate) fn is_gone(&self, rank: Rank) -> bool {
        self.ranks[rank as usize].gone.load(Ordering::SeqCst)
    }

    /// Sends of `rank` not yet taken.
    pub(crate) fn outstanding(&self, rank: Rank) -> usize {
        self.ranks[rank as usize]
            .outstanding
            .load(Ordering::Acquire)
    }

    /// Whether a message from `src` to `dst` waits.
    pub(crate) fn has_message(&self, src: Rank, dst: Rank) -> bool {
        self.mailbox(src, dst).queued.load(Ordering::Acquire) > 0
    }

    /// Publish a send from `src` to `dst` and wake `dst`.
    ///
    /// # Safety
    /// `parts` and the memory it names must stay valid and unmodified until `src` has
    /// seen `outstanding(src) == 0`, after a wait or after [`Shared::withdraw`].
    pub(crate) unsafe fn post(&self, src: Rank, dst: Rank, tag: Tag, parts: &[Part]) {
        self.ranks[src as usize]
            .outstanding
            .fetch_add(1, Ordering::Relaxed);
        let env = Envelope {
            tag,
            parts: parts.as_ptr(),
            count: parts.len(),
            len: total_len(parts),
        };
        let mailbox = self.mailbox(src, dst);
        let mut q = mailbox.lock();
        q.push_back(env);
        mailbox.queued.store(q.len(), Ordering::Release);
        drop(q);
        self.wake(dst);
    }

    /// Take the next message from `src` to `dst`, if any.
    pub(crate) fn take(&self, src: Rank, dst: Rank) -> Option<Claim<'_>> {
        let mailbox = self.mailbox(src, dst);
        let mut q = mailbox.lock();
        let env = q.pop_front()?;
        mailbox.queued.store(q.len(), Ordering::Release);
        Some(Claim {
            shared: self,
            src,
            env,
        })
    }

    /// Remove the messages from `src` to `dst` no one took; returns how many.
    pub(crate) fn withdraw(&self, src: Rank, dst: Rank) -> usize {
        let mailbox = self.mailbox(src, dst);
        let mut q = mailbox.lock();
        let n = q.len();
        q.clear();
        mailbox.queued.store(0, Ordering::Release);
        drop(q);
        self.ranks[src as usize]
            .outstanding
            .fetch_sub(n, Ordering::AcqRel);
        n
    }
}

/// A message taken by its receiver: the sender's memory stays valid and unmodified
/// while the claim lives.
pub(crate) struct Claim<'s> {
    shared: &'s Shared,
    src: Rank,
    env: Envelope,
}

impl Claim<'_> {
    pub(crate) fn tag(&self) -> Tag {
        self.env.tag
    }

    pub(crate) fn len(&self) -> usize {
        self.env.len
    }

    /// The message, borrowed from the sender for as long as the claim lives.
    pub(crate) fn incoming(&self) -> Incoming<'_> {
        // SAFETY: the sender posted `count` parts at `parts` (`Shared::post`) and keeps
        // them, and the memory they name, valid and unmodified until its outstanding
        // count drops to zero, which cannot happen before this claim is dropped.
        unsafe { Incoming::new(std::slice::from_raw_parts(self.env.parts, self.env.count)) }
    }
}

impl Drop for Claim<'_> {
    fn drop(&mut self) {
        let state = &self.shared.ranks[self.src as usize];
        if state.outstanding.fetch_sub(1, Ordering::Release) == 1 {
            self.shared.wake(self.src);
        }
    }
}
