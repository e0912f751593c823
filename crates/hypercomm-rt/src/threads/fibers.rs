//! Ranks as fibers ([`super::Config::fibers`]): the ranks bound to one CPU run as
//! stackful coroutines (`corosensei`) of one thread, which resumes them in turn. A
//! rank that waits for a message hands the CPU to the next rank of its thread by a
//! user-space stack switch (tens of nanoseconds) instead of a `sched_yield` context
//! switch of the kernel (1.3 µs on the AMD VM of
//! `docs/perf-log/2026-11-25-receiver-hint-and-pinning.md`), as Adaptive MPI
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
//!
//! A rank that overflows its fiber's stack hits the stack's guard page; on Linux the
//! handler of [`overflow`] recognises the page and aborts with a message naming the
//! rank and its stack size, as Rust does for a thread ("has overflowed its stack"),
//! instead of a bare segmentation fault.

use std::time::Duration;

use corosensei::stack::{DefaultStack, Stack};
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
    let guards: Vec<overflow::Guard> = ranks
        .iter()
        .map(|(r, stack)| overflow::Guard::of(*r, stack))
        .collect();
    let _overflow = overflow::watch();
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
        for ((slot, result), guard) in fibers.iter_mut().zip(results.iter_mut()).zip(&guards) {
            let Some(fiber) = slot else { continue };
            let resumed = {
                let _running = overflow::Running::enter(*guard);
                fiber.resume(())
            };
            match resumed {
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

/// Telling a fiber's stack overflow from any other fault (Linux; elsewhere the guard
/// page's fault stays a bare `SIGSEGV`). Each thread of fibers notes the guard page of
/// the fiber it resumes ([`running`]); a handler of `SIGSEGV` and `SIGBUS`, installed
/// once, on the thread's alternate signal stack, checks the faulting address against
/// it: inside, it writes which rank overflowed and aborts, as Rust's own handler does
/// for a thread's guard page; elsewhere it hands the signal to the handler it replaced
/// (Rust's, which reports a thread's overflow, or the default action).
mod overflow {
    use super::{DefaultStack, Rank, Stack};

    /// A fiber's guard page, `[lo, hi)`, its rank and its usable stack size.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub(super) struct Guard {
        lo: usize,
        hi: usize,
        rank: Rank,
        bytes: usize,
    }

    impl Guard {
        /// No fiber running.
        pub(super) const NONE: Guard = Guard {
            lo: 0,
            hi: 0,
            rank: 0,
            bytes: 0,
        };

        /// The guard page of `stack` (corosensei maps one page below the usable
        /// stack, `limit` being the start of that mapping).
        pub(super) fn of(rank: Rank, stack: &DefaultStack) -> Guard {
            let (base, limit) = (stack.base().get(), stack.limit().get());
            let page = page_size();
            Guard {
                lo: limit,
                hi: limit + page,
                rank,
                bytes: base - limit - page,
            }
        }
    }

    #[cfg(target_os = "linux")]
    fn page_size() -> usize {
        // SAFETY: sysconf has no preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
        usize::try_from(page).unwrap_or(4096)
    }

    #[cfg(not(target_os = "linux"))]
    fn page_size() -> usize {
        4096
    }

    pub(super) use imp::{watch, Running};

    #[cfg(target_os = "linux")]
    mod imp {
        use super::Guard;
        use std::cell::Cell;
        use std::sync::{Once, OnceLock};

        thread_local! {
            /// The guard page of the fiber this thread runs (`Guard::NONE` between
            /// fibers). Const-initialised, without destructor: readable from a signal
            /// handler (no lazy initialisation, no allocation).
            static RUNNING: Cell<Guard> = const { Cell::new(Guard::NONE) };
        }

        /// The actions of `SIGSEGV` and `SIGBUS` before ours, read before ours is
        /// installed (a fault meanwhile finds them).
        static PREVIOUS: OnceLock<[libc::sigaction; 2]> = OnceLock::new();

        /// The fiber a thread runs while this lives; then what it ran before (a nested
        /// run of fibers inside a rank, a resume that unwinds).
        pub(in super::super) struct Running(Guard);

        impl Running {
            #[inline]
            pub(in super::super) fn enter(guard: Guard) -> Running {
                Running(RUNNING.with(|r| r.replace(guard)))
            }
        }

        impl Drop for Running {
            #[inline]
            fn drop(&mut self) {
                RUNNING.with(|r| r.set(self.0));
            }
        }

        /// Install the handler (once per process) and make sure this thread has an
        /// alternate signal stack for it (the fiber's own is exhausted when it runs);
        /// the returned value removes an alternate stack it added when dropped.
        pub(in super::super) fn watch() -> AltStack {
            static INSTALL: Once = Once::new();
            INSTALL.call_once(|| {
                // SAFETY: sigaction reads the current actions into zeroed structs,
                // kept for `on_fault` to hand other faults to; then it installs ours,
                // a zeroed action filled in.
                unsafe {
                    PREVIOUS.get_or_init(|| {
                        let mut previous: [libc::sigaction; 2] = std::mem::zeroed();
                        for (sig, prev) in SIGNALS.into_iter().zip(&mut previous) {
                            libc::sigaction(sig, std::ptr::null(), prev);
                        }
                        previous
                    });
                    let mut ours: libc::sigaction = std::mem::zeroed();
                    ours.sa_sigaction = on_fault as *const () as usize;
                    ours.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
                    libc::sigemptyset(&mut ours.sa_mask);
                    for sig in SIGNALS {
                        libc::sigaction(sig, &ours, std::ptr::null_mut());
                    }
                }
            });
            AltStack::ensure()
        }

        /// The signals a guard page's fault raises; `PREVIOUS` in this order.
        const SIGNALS: [libc::c_int; 2] = [libc::SIGSEGV, libc::SIGBUS];

        /// An alternate signal stack this thread lacked, installed for the time the
        /// thread runs fibers (std gives its threads one already, so usually none):
        /// `(mapping, length)`, its lowest page a guard, as std's.
        pub(in super::super) struct AltStack(Option<(*mut libc::c_void, usize)>);

        impl AltStack {
            fn ensure() -> AltStack {
                // SAFETY: sigaltstack reads the current stack into `current`; the new
                // stack is a fresh mapping, which lives until `drop` disables the stack
                // and unmaps it.
                unsafe {
                    let mut current: libc::stack_t = std::mem::zeroed();
                    if libc::sigaltstack(std::ptr::null(), &mut current) != 0
                        || current.ss_flags & libc::SS_DISABLE == 0
                    {
                        return AltStack(None);
                    }
                    let page = super::page_size();
                    let size = libc::SIGSTKSZ.max(64 << 10).next_multiple_of(page);
                    let len = size + page;
                    let map = libc::mmap(
                        std::ptr::null_mut(),
                        len,
                        libc::PROT_READ | libc::PROT_WRITE,
                        libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                        -1,
                        0,
                    );
                    if map == libc::MAP_FAILED {
                        return AltStack(None);
                    }
                    let stack = libc::stack_t {
                        ss_sp: map.cast::<u8>().add(page).cast(),
                        ss_flags: 0,
                        ss_size: size,
                    };
                    if libc::mprotect(map, page, libc::PROT_NONE) != 0
                        || libc::sigaltstack(&stack, std::ptr::null_mut()) != 0
                    {
                        libc::munmap(map, len);
                        return AltStack(None);
                    }
                    AltStack(Some((map, len)))
                }
            }
        }

        impl Drop for AltStack {
            fn drop(&mut self) {
                if let Some((map, len)) = self.0 {
                    // SAFETY: disables the stack installed by `ensure` before its
                    // memory is unmapped.
                    unsafe {
                        let mut off: libc::stack_t = std::mem::zeroed();
                        off.ss_flags = libc::SS_DISABLE;
                        libc::sigaltstack(&off, std::ptr::null_mut());
                        libc::munmap(map, len);
                    }
                }
            }
        }

        /// The handler: a fault in the running fiber's guard page is its overflow;
        /// any other goes to the previous action. Only async-signal-safe calls.
        unsafe extern "C" fn on_fault(
            sig: libc::c_int,
            info: *mut libc::siginfo_t,
            context: *mut libc::c_void,
        ) {
            // SAFETY: the kernel passes a valid `siginfo_t`; what follows calls only
            // async-signal-safe functions (write, abort, sigaction) or the handler we
            // replaced, with the arguments it was installed for.
            unsafe {
                let addr = (*info).si_addr() as usize;
                let guard = RUNNING.try_with(Cell::get).unwrap_or(Guard::NONE);
                if guard.lo <= addr && addr < guard.hi {
                    let mut text = Text::default();
                    text.push(b"\nrank ");
                    text.number(guard.rank as usize);
                    text.push(b" has overflowed its fiber's stack of ");
                    text.number(guard.bytes);
                    text.push(
                        b" bytes (hypercomm threads::Config::stack_size, or RUST_MIN_STACK, \
                          sets it)\nfatal runtime error: stack overflow, aborting\n",
                    );
                    libc::write(2, text.buf.as_ptr().cast(), text.len);
                    libc::abort();
                }
                let previous = PREVIOUS.get().map(|p| p[usize::from(sig != libc::SIGSEGV)]);
                // An ignored fault is a default one: the kernel kills a process whose
                // synchronous fault is ignored, and returning would fault forever.
                let handled = |p: &libc::sigaction| {
                    p.sa_sigaction != libc::SIG_DFL && p.sa_sigaction != libc::SIG_IGN
                };
                // (The previous action's mask and flags other than SA_SIGINFO are not
                // applied: std's handler, the usual one, needs none of them.)
                match previous {
                    Some(p) if handled(&p) && p.sa_flags & libc::SA_SIGINFO != 0 => {
                        let handler: unsafe extern "C" fn(
                            libc::c_int,
                            *mut libc::siginfo_t,
                            *mut libc::c_void,
                        ) = std::mem::transmute(p.sa_sigaction);
                        handler(sig, info, context);
                    }
                    Some(p) if handled(&p) => {
                        let handler: unsafe extern "C" fn(libc::c_int) =
                            std::mem::transmute(p.sa_sigaction);
                        handler(sig);
                    }
                    // The default action (or an ignored fault): restore it; returning
                    // re-runs the faulting instruction, which then takes it.
                    _ => {
                        let mut default: libc::sigaction = std::mem::zeroed();
                        default.sa_sigaction = libc::SIG_DFL;
                        libc::sigaction(sig, &default, std::ptr::null_mut());
                    }
                }
            }
        }

        /// A message built without allocating (inside a signal handler).
        struct Text {
            buf: [u8; 256],
            len: usize,
        }

        impl Default for Text {
            fn default() -> Self {
                Text {
                    buf: [0; 256],
                    len: 0,
                }
            }
        }

        impl Text {
            fn push(&mut self, bytes: &[u8]) {
                let n = bytes.len().min(self.buf.len() - self.len);
                self.buf[self.len..self.len + n].copy_from_slice(&bytes[..n]);
                self.len += n;
            }

            fn number(&mut self, mut n: usize) {
                let mut digits = [0u8; 20];
                let mut i = digits.len();
                loop {
                    i -= 1;
                    digits[i] = b'0' + (n % 10) as u8;
                    n /= 10;
                    if n == 0 {
                        break;
                    }
                }
                self.push(&digits[i..]);
            }
        }
    }

    #[cfg(not(target_os = "linux"))]
    mod imp {
        use super::Guard;

        pub(in super::super) struct Running;

        impl Running {
            #[inline]
            pub(in super::super) fn enter(_: Guard) -> Running {
                Running
            }
        }

        pub(in super::super) fn watch() {}
    }
}
