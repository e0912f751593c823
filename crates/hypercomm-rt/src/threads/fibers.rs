//! Ranks as fibers ([`super::Config::fibers`]): the ranks bound to one CPU run as
//! stackful coroutines (`corosensei`) of one thread, which resumes them in turn. A
//! rank that waits for a message hands the CPU to the next rank of its thread by a
//! user-space stack switch (tens of nanoseconds) instead of a `sched_yield` context
//! switch of the kernel (1.3 µs on the machine of BENCHMARKS.md), as Adaptive MPI
//! (Charm++) and MPC run MPI ranks as user-level threads.
//!
//! The thread's loop ([`host`]) resumes every unfinished rank once per round. A round
//! in which every rank paused in a wait it has been in for longer than
//! [`super::Config::yield_for`] parks the thread ([`Shared::park_ranks`]: each of its
//! ranks is marked parked, then each looks once more at what it waits for), and a
//! message to any of them wakes it; other rounds give the kernel a `yield_now` now and
//! then. (A wait that ends runs its rank on to its next pause, which is then not idle,
//! or to its end: a round with progress never parks.)
//!
//! A rank gives the CPU up only in a wait: one that computes long between calls
//! delays the ranks of its thread as long, and one that blocks the thread (a sleep, a
//! lock or a `std::sync::Barrier` another rank of the same thread must release) stops
//! them; if what it blocks on needs a rank of its own thread, that is a hang no
//! timeout can end, since the waits that would time out never run.

use std::time::Duration;

use corosensei::stack::DefaultStack;
use corosensei::{Coroutine, CoroutineResult, Yielder};
use hypercomm::schedule::Rank;

use super::rendezvous::Shared;

/// What a rank's wait tells its thread as it hands the CPU on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Pause {
    /// Waiting, for less than the yield window so far.
    Waiting,
    /// Waiting for longer than the yield window: the thread may park.
    Idle,
}

/// A rank's view of the thread that runs it: how to hand the CPU on.
#[derive(Clone, Copy)]
pub(crate) struct Fiber<'a> {
    yielder: &'a Yielder<(), Pause>,
}

impl Fiber<'_> {
    /// Hand the CPU to the next rank of the thread; returns when resumed.
    pub(crate) fn pause(&self, how: Pause) {
        self.yielder.suspend(how);
    }
}

/// Rounds not all idle between two `yield_now` calls of a thread of fibers.
const ROUNDS_PER_YIELD: u32 = 64;

/// Smallest fiber stack: the runtime's own frames need more than a page or two (a
/// thread's stack is rounded up by the system; a fiber's is what it is asked for).
const MIN_STACK: usize = 64 << 10;

/// Largest fiber stack (bytes) asked of the system: beyond, the guard page's
/// arithmetic would overflow.
const MAX_STACK: usize = isize::MAX as usize / 2;

/// The stack of each fiber: `bytes` (at least [`MIN_STACK`]), else `RUST_MIN_STACK`, as
/// for a thread, else Rust's default thread stack (2 MiB).
pub(crate) fn stack(bytes: Option<usize>) -> std::io::Result<DefaultStack> {
    let bytes = bytes
        .or_else(|| std::env::var("RUST_MIN_STACK").ok()?.parse().ok())
        .unwrap_or(2 << 20);
    if bytes > MAX_STACK {
        return Err(std::io::Error::other(format!(
            "a stack of {bytes} bytes (at most {MAX_STACK})"
        )));
    }
    DefaultStack::new(bytes.max(MIN_STACK))
}

/// Run `ranks` (with their stacks) as fibers of the calling thread until every one has
/// returned; `body(rank, fiber)` is a rank's whole life. Returns the ranks' results in
/// the order of `ranks`.
pub(crate) fn host<R>(
    shared: &Shared,
    ranks: Vec<(Rank, DefaultStack)>,
    park_for: Duration,
    body: &dyn Fn(Rank, Fiber<'_>) -> R,
) -> Vec<R> {
    let ids: Vec<Rank> = ranks.iter().map(|&(r, _)| r).collect();
    let mut fibers: Vec<Option<Coroutine<(), Pause, R, DefaultStack>>> = ranks
        .into_iter()
        .map(|(rank, stack)| {
            let start = move |yielder: &Yielder<(), Pause>, ()| body(rank, Fiber { yielder });
            // SAFETY: the closure borrows `body`, which outlives every coroutine: each
            // is run to its end, or dropped (which unwinds it), before this function
            // returns.
            Some(unsafe { Coroutine::with_stack_unchecked(stack, start) })
        })
        .collect();
    let mut results: Vec<Option<R>> = fibers.iter().map(|_| None).collect();
    let mut live = fibers.len();
    let mut quiet = 0u32;
    // One round: resume every unfinished fiber once; whether all of them paused idle.
    let round = |fibers: &mut [Option<Coroutine<(), Pause, R, DefaultStack>>],
                 results: &mut [Option<R>],
                 live: &mut usize| {
        let mut all_idle = true;
        for (slot, result) in fibers.iter_mut().zip(results.iter_mut()) {
            let Some(fiber) = slot else { continue };
            match fiber.resume(()) {
                CoroutineResult::Yield(Pause::Idle) => {}
                CoroutineResult::Yield(Pause::Waiting) => all_idle = false,
                CoroutineResult::Return(r) => {
                    *result = Some(r);
                    *slot = None;
                    *live -= 1;
                    all_idle = false;
                }
            }
        }
        all_idle
    };
    while live > 0 {
        let all_idle = round(&mut fibers, &mut results, &mut live);
        if live == 0 {
            break;
        }
        if all_idle {
            // Every rank has waited past the yield window: park until a message
            // comes, once each has looked again after being marked parked.
            let waiting: Vec<Rank> = ids
                .iter()
                .zip(&fibers)
                .filter(|(_, f)| f.is_some())
                .map(|(&r, _)| r)
                .collect();
            shared.park_ranks(&waiting, park_for, || {
                !round(&mut fibers, &mut results, &mut live)
            });
            quiet = 0;
        } else {
            quiet += 1;
            if quiet % ROUNDS_PER_YIELD == 0 {
                std::thread::yield_now();
            }
        }
    }
    results
        .into_iter()
        .map(|r| r.expect("every fiber returned"))
        .collect()
}
