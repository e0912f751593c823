//! Non-blocking collectives, in rsmpi's naming: `immediate_broadcast_into`,
//! `immediate_all_reduce_into`, …, and [`Comm::immediate`] for any call. Each starts the
//! collective and returns a request at once ([`Request`] in a [`std::thread::scope`],
//! [`ScopedRequest`] in an [`immediate::scope`](scope)); its `wait` returns what the
//! blocking call would have returned ([`Ran`], or its error: a failed peer, a timeout),
//! and its `test` says whether it is done without waiting.
//! The variable-count calls have theirs: [`Comm::immediate_gatherv_into`],
//! [`Comm::immediate_scatterv_into`], [`Comm::immediate_all_gatherv_into`],
//! [`Comm::immediate_all_to_allv_into`] and [`Comm::immediate_reduce_scatter_into`].
//!
//! # How they progress
//!
//! Requests live in a scope, and there are two kinds ([`RequestScope`]).
//!
//! **A progress thread per request**, in a [`std::thread::scope`] (and, in a
//! [`scope`], for the calls that cannot run natively). A request runs on a *progress
//! thread* of its own, on a duplicate of the communicator made for it ([`Detach`]): its
//! messages never meet those of the communicator, of other requests or of
//! sub-communicators, so any number of requests may be in flight and be completed in
//! any order, while the rank goes on computing or calling other collectives. Progress
//! needs no call from the user between start and wait: the progress thread moves the
//! data (on MPI too: it sends and receives with MPI's non-blocking point-to-point calls
//! and polls them). On threads the duplicate costs nothing to agree on (every rank finds
//! its group under the same key). On MPI it is an `MPI_Comm_idup` of the communicator,
//! made on the rank's thread (in call order) by the first requests and then lent again
//! to later ones (`hypercomm-mpi`'s `PROGRESS_SLOTS`: request n takes duplicate n mod 4,
//! waiting at start for the request 4 earlier if it still runs), so no progress thread
//! ever makes a communicator; MPI must be initialized with `MPI_THREAD_MULTIPLE`
//! (`mpi::initialize_with_threading(Threading::Multiple)`), or the call returns
//! [`Error::Unsupported`]. A request's call chooses its algorithm by the cost model (it
//! never measures, as `Algo::Auto` under `Tuning::Measure` would on the communicator:
//! the measurement would run inside the first request of each kind). Starting a request
//! costs a thread start (tens of microseconds): worth it for calls that overlap long
//! computations, not for tiny ones (see [`crate::persistent`] for those).
//!
//! **The backend's own non-blocking collective, no thread**, in a [`scope`]: a
//! fixed-count call (broadcast, scatter, gather, all-gather, all-to-all, reduce,
//! all-reduce, scan, exclusive scan, reduce-scatter-block) whose algorithm is
//! [`NATIVE`], or `Algo::Auto` on a backend with collectives of its own whose reduction,
//! if any, it may know (a built-in operator on a primitive number) at a size where its
//! measured route is native (below), starts the
//! backend's non-blocking collective on the rank's thread
//! ([`Transport::native_start`]: on MPI
//! `MPI_Ibcast`, `MPI_Iscatter`, `MPI_Igather`, `MPI_Iallgather`, `MPI_Ialltoall`,
//! `MPI_Ireduce`, `MPI_Iallreduce`, `MPI_Iscan`, `MPI_Iexscan`,
//! `MPI_Ireduce_scatter_block`, the non-blocking collective operations of MPI-3.1
//! §5.12) on the communicator itself, after the blocking call's checks: a wrong buffer
//! length, or an element type or operator the backend cannot reduce, is an error of
//! the `immediate_*` call, with nothing started. Its [`ScopedRequest`] is completed by
//! `wait` (`MPI_Wait`), `test` (`MPI_Test`) or drop; `wait` returns the blocking call's
//! [`Ran`] (`algorithm` [`NATIVE`], `auto` when `Algo::Auto` chose it). Starting costs
//! what MPI's call costs, and MPI is called from the rank's thread only, so this path
//! needs no `MPI_THREAD_MULTIPLE`. As MPI-3.1 §5.12 says, such a collective progresses
//! as MPI progresses it: with most MPI libraries, inside MPI calls of the rank (its
//! `test` and `wait` among them), not while the rank computes between them, unlike a
//! progress thread. Its failure semantics are MPI's own blocking collective's (the
//! backend's `NativeWait::Blocking`): no deadline, no failure notice (`mpirun` ends a
//! job whose rank failed). The variable-count calls take the same path where the
//! blocking call's `Auto` takes the backend's own (`MPI_Igatherv`, `MPI_Iscatterv`,
//! `MPI_Iallgatherv`, `MPI_Ialltoallv`, `MPI_Ireduce_scatter`, their count and
//! displacement arrays kept with the request), and with `native`. The barrier,
//! [`Comm::immediate`] and named schedules take the progress-thread path in either
//! scope; so does every call on a backend without collectives of its own (threads),
//! where `Algo::Named("native")` is [`Error::Native`] at start.
//!
//! **`Algo::Auto` in a [`scope`] measures which of the two is faster**, where the
//! backend has collectives of its own and the communicator measures its picks
//! ([`crate::Tuning::Measure`], the MPI backend's default) and can start progress
//! threads (MPI: `MPI_THREAD_MULTIPLE`): the first such call of a collective (per
//! element size and operator commutativity) times, at every size from 8 B to 4 MiB, the
//! backend's non-blocking call against a progress thread running the blocking call's
//! measured pick (and the model's best schedule), and keeps the routes in the tuning
//! file beside the blocking picks. A thread route is taken where it measured at most
//! 0.95 of the native call's time: on 2 Open MPI ranks, from 1 MiB for an all-reduce
//! (`MPI_Iallreduce` of 1 MiB 238 µs, recursive doubling on a thread 160 µs); below,
//! the thread's start (about 40 µs) loses. The request then runs as a named schedule's
//! does, with `Ran::auto` set.
//!
//! Every rank must make the same decision for a call, which holds since it depends only
//! on the algorithm, the backend, the element type, the operator and the agreed
//! routes, as the call itself must be the same on every rank.
//!
//! Requests live in a scope, as rsmpi's do: `std::thread::scope(|s| …)` or
//! [`immediate::scope(|s| …)`](scope), and the buffers a request reads or writes are
//! borrowed for the whole scope, so none can be touched, moved or freed before the
//! scope ends, and every request has ended by then (`std::thread::scope` joins the
//! progress threads; [`scope`] also waits for the native requests still pending, one
//! forgotten with `std::mem::forget` among them).
//!
//! # Drop
//!
//! Dropping a request that has not completed **waits** for it (its result, error or
//! not, is lost): the buffers stay borrowed until then, so memory is never corrupted.
//! Prefer [`Request::wait`], which reports the error.
//!
//! Every rank must start the same requests in the same order on a communicator, as for
//! blocking calls; they may wait for them in any order.
//!
//! ```
//! use hypercomm_rt::{threads, Algo, Op};
//! let got = threads::run(4, |comm| {
//!     let r = comm.rank() as u64;
//!     let (x, mut sum, mut max) = ([r + 1], [0u64], [0u64]);
//!     let mut root_data = [r; 3];
//!     let (plus, most) = (Op::sum(), Op::max()); // borrowed by the requests: outside the scope
//!     std::thread::scope(|s| {
//!         let a = comm.immediate_all_reduce_into(s, &x, &mut sum, &plus, Algo::Auto)?;
//!         let b = comm.immediate_all_reduce_into(s, &x, &mut max, &most, Algo::Auto)?;
//!         let c = comm.immediate_broadcast_into(s, 2, &mut root_data, Algo::Auto)?;
//!         // … compute here while they run …
//!         c.wait()?; // in another order than started
//!         b.wait()?;
//!         a.wait()
//!     })?;
//!     Ok::<_, hypercomm_rt::Error>((sum[0], max[0], root_data))
//! }).unwrap();
//! assert_eq!(got, vec![(10, 4, [2; 3]); 4]);
//! ```

use std::cell::RefCell;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::rc::Rc;
use std::thread::{Scope, ScopedJoinHandle};

use bytemuck::Pod;
use hypercomm::schedule::Rank;
use smallvec::SmallVec;

use crate::comm::{Barrier, Comm, Started, STARTED};
use crate::error::{Error, Result};
use crate::op::Op;
use crate::select::{Algo, Ran, NATIVE};
use crate::transport::Transport;
use crate::tune::Route;
use hypercomm::collective::Collective;

/// A backend whose communicators can be duplicated for a progress thread.
pub trait Detach: Transport + Sized {
    /// A duplicate made on the rank's thread, to be entered on the progress thread.
    type Detached: Send;

    /// Make a duplicate of this communicator, on this rank's thread (in call order: it
    /// is collective where the backend needs it to be, and never blocks for long).
    fn detach(&mut self) -> Result<Self::Detached>;

    /// Enter a duplicate, on the thread that will use it.
    fn attach(detached: Self::Detached) -> Result<Self>;

    /// Whether [`Detach::detach`] can make duplicates here at all (MPI: only when
    /// initialized with `MPI_THREAD_MULTIPLE`): where it cannot, `Algo::Auto` in a
    /// [`scope`] takes the backend's non-blocking collective without measuring the
    /// progress-thread route. The same on every rank of a job.
    fn detachable(&self) -> bool {
        true
    }

    /// Take back the transport of a request whose call returned, on its progress
    /// thread (not called when the call panicked: the transport is then dropped while
    /// unwinding). By default it is dropped; a backend whose duplicates are costly to
    /// make (MPI) keeps it for a later request.
    fn retire(self) {}

    /// What a rank's thread does between looks while it waits for a request, if
    /// blocking the thread would be wrong (a rank run as a fiber hands its CPU to the
    /// other ranks of its thread); `None`: block on the progress thread.
    fn pause<'a>(&self) -> Option<Box<dyn Fn() + 'a>>
    where
        Self: 'a,
    {
        None
    }
}

/// A collective in flight ([`crate::immediate`]). Dropping it unfinished waits for it.
#[must_use = "a request is completed by wait() (dropping it waits, and loses its error)"]
pub struct Request<'scope, R = Ran> {
    handle: Option<ScopedJoinHandle<'scope, Result<R>>>,
    pause: Option<Box<dyn Fn() + 'scope>>,
}

impl<'scope, R> Request<'scope, R> {
    /// Whether the call has completed (a later `wait` returns at once).
    pub fn is_complete(&self) -> bool {
        self.handle.as_ref().map_or(true, |h| h.is_finished())
    }

    /// Wait until the call completes; its result, as the blocking call's. A panic of
    /// the call (a user operator's) is raised here.
    pub fn wait(mut self) -> Result<R> {
        self.finish()
    }

    /// The result if the call has completed, else the request back (rsmpi's `test`).
    pub fn test(self) -> std::result::Result<Result<R>, Self> {
        match self.is_complete() {
            true => Ok(self.wait()),
            false => Err(self),
        }
    }

    fn finish(&mut self) -> Result<R> {
        let handle = self.handle.take().expect("a request is finished once");
        if let Some(pause) = &self.pause {
            while !handle.is_finished() {
                pause();
            }
        }
        match handle.join() {
            Ok(done) => done,
            Err(panic) => std::panic::resume_unwind(panic),
        }
    }
}

impl<R> Drop for Request<'_, R> {
    /// Waits for an unfinished call (its result is lost); never raises its panic.
    fn drop(&mut self) {
        if let Some(handle) = self.handle.take() {
            if let Some(pause) = &self.pause {
                while !handle.is_finished() {
                    pause();
                }
            }
            let _ = handle.join();
        }
    }
}

/// Run `f` with a scope for requests that may run *without a progress thread*: the
/// fixed-count calls (`immediate_broadcast_into` … `immediate_reduce_scatter_block_into`)
/// started in it whose algorithm is [`NATIVE`] (`Algo::Named("native")`), or
/// [`Algo::Auto`] on a backend with collectives of its own (MPI), start the backend's own
/// non-blocking collective on the rank's thread (`MPI_Iallreduce`, …:
/// [`crate::transport::Transport::native_start`]) and return a [`ScopedRequest`] that
/// `wait`, `test` and drop complete (`MPI_Wait`, `MPI_Test`), where `Auto`'s measured
/// route is native (the module's documentation; a variable-count call's `Auto` where
/// its blocking form would run the backend's own). Every other call started
/// in it (a named schedule, [`Comm::immediate`], any call on a
/// backend without collectives of its own, such as threads) runs on a progress thread
/// of the scope, exactly as with [`std::thread::scope`]. rsmpi's `mpi::request::scope`
/// is the model.
///
/// Before returning, the scope completes every request started in it that is still
/// pending: one that was forgotten (`std::mem::forget`) is waited for here (its
/// progress thread joined, its native request waited for), and so is every one when
/// `f` panics; so the buffers the requests borrow (for the scope's lifetime) are never
/// read or written after the scope, whatever the user did with the requests. A result
/// or error of a request completed that way is lost.
///
/// Requests of this scope, and the scope itself (`&NativeScope`), are neither `Send`
/// nor `Sync`: a native request is MPI's, made and completed on the rank's thread,
/// which is why this path does not need MPI initialized with `MPI_THREAD_MULTIPLE`
/// (the thread path still does).
///
/// ```
/// use hypercomm_rt::{immediate, threads, Algo, Op};
/// let got = threads::run(3, |comm| {
///     let x = [comm.rank() as u64 + 1];
///     let (mut sum, mut forgotten) = ([0u64], [0u64]);
///     let plus = Op::sum();
///     immediate::scope(|s| {
///         // Threads have no collectives of their own: these run on progress threads
///         // (on MPI, `Algo::Auto` here starts MPI_Iallreduce, no thread).
///         let a = comm.immediate_all_reduce_into(s, &x, &mut sum, &plus, Algo::Auto)?;
///         let b = comm.immediate_all_reduce_into(s, &x, &mut forgotten, &plus, Algo::Auto)?;
///         std::mem::forget(b); // still completed by the end of the scope
///         a.wait()
///     })?;
///     Ok::<_, hypercomm_rt::Error>((sum[0], forgotten[0]))
/// }).unwrap();
/// assert_eq!(got, vec![(6, 6); 3]);
/// ```
pub fn scope<'env, F, T>(f: F) -> T
where
    F: for<'a, 'scope> FnOnce(&'a NativeScope<'scope, 'env>) -> T,
{
    std::thread::scope(|threads| {
        let scope = NativeScope {
            threads,
            pending: Rc::default(),
        };
        // Completes the native requests still pending when `f` returns or unwinds,
        // before `std::thread::scope` joins the progress threads and returns.
        let _finish = Finish(Rc::clone(&scope.pending));
        f(&scope)
    })
}

/// The scope of [`scope`]: pass it (`s`, a `&NativeScope`) to the `immediate_*` calls
/// as a [`std::thread::Scope`] is passed. See [`scope`].
pub struct NativeScope<'scope, 'env: 'scope> {
    threads: &'scope Scope<'scope, 'env>,
    pending: Rc<Pending<'scope>>,
}

impl<'scope, 'env> NativeScope<'scope, 'env> {
    /// The thread scope the progress threads of this scope's thread-path requests run
    /// in (to spawn threads of one's own that end with the scope).
    pub fn threads(&self) -> &'scope Scope<'scope, 'env> {
        self.threads
    }
}

/// The requests of one [`NativeScope`] that may still be pending: a slot per native
/// request (its index held by its [`ScopedRequest`]), emptied when the request
/// completes, the slots freed reused; and each thread request, shared with its
/// [`ScopedRequest`], so that the scope's end joins a forgotten one (a forgotten
/// `ScopedJoinHandle` would keep `std::thread::scope` waiting forever).
#[derive(Default)]
struct Pending<'scope> {
    slots: RefCell<Slots>,
    threads: RefCell<Vec<Rc<dyn Complete + 'scope>>>,
}

/// A thread request that the end of its scope completes (if its own `ScopedRequest`
/// has not).
trait Complete {
    fn complete(&self);
    fn is_done(&self) -> bool;
}

/// A thread request of a [`NativeScope`], shared by its [`ScopedRequest`] and the scope.
type Shared<'scope, R> = Rc<RefCell<Option<Request<'scope, R>>>>;

impl<R> Complete for RefCell<Option<Request<'_, R>>> {
    fn complete(&self) {
        // Dropping the request waits for it and joins its thread.
        let request = self.borrow_mut().take();
        drop(request);
    }
    fn is_done(&self) -> bool {
        self.borrow().is_none()
    }
}

/// The native requests' slots: the first [`INLINE_SLOTS`] in the scope itself, so that a
/// scope of a few requests allocates none for them.
#[derive(Default)]
struct Slots {
    live: SmallVec<[Option<Started>; INLINE_SLOTS]>,
    free: SmallVec<[usize; INLINE_SLOTS]>,
}

/// Native requests a scope holds without allocating.
const INLINE_SLOTS: usize = 4;

impl<'scope> Pending<'scope> {
    /// Keep a thread request for the scope's end; forget those already completed.
    fn keep<R: 'scope>(&self, request: Request<'scope, R>) -> Shared<'scope, R> {
        let shared = Rc::new(RefCell::new(Some(request)));
        let mut threads = self.threads.borrow_mut();
        if threads.len() >= 64 && threads.len().is_power_of_two() {
            threads.retain(|t| !t.is_done());
        }
        threads.push(Rc::clone(&shared) as Rc<dyn Complete + 'scope>);
        shared
    }

    fn insert(&self, started: Started) -> usize {
        let mut s = self.slots.borrow_mut();
        match s.free.pop() {
            Some(i) => {
                s.live[i] = Some(started);
                i
            }
            None => {
                s.live.push(Some(started));
                s.live.len() - 1
            }
        }
    }

    /// The request of slot `i`, taken out (the borrow ends before it is waited for).
    fn take(&self, i: usize) -> Option<Started> {
        let mut s = self.slots.borrow_mut();
        let started = s.live.get_mut(i).and_then(Option::take);
        if started.is_some() {
            s.free.push(i);
        }
        started
    }

    /// Test slot `i`'s request (`MPI_Test`): `Some` once it completed (taken out).
    fn test(&self, i: usize) -> Option<Result<()>> {
        let done = {
            let mut s = self.slots.borrow_mut();
            // No request (any more): complete.
            let Some(started) = s.live.get_mut(i).and_then(Option::as_mut) else {
                return Some(Ok(()));
            };
            match started.request.test() {
                Ok(false) => return None,
                Ok(true) => Ok(()),
                Err(e) => Err(e),
            }
        };
        drop(self.take(i));
        Some(done)
    }
}

/// Completes every native request of a scope still pending, when the scope's closure
/// returned or unwinds.
struct Finish<'scope>(Rc<Pending<'scope>>);

impl Drop for Finish<'_> {
    fn drop(&mut self) {
        let n = self.0.slots.borrow().live.len();
        for i in 0..n {
            if let Some(mut started) = self.0.take(i) {
                // The request's error is lost: its request was forgotten, or `f` failed.
                let _ = started.request.wait();
            }
        }
        let threads = std::mem::take(&mut *self.0.threads.borrow_mut());
        for t in threads {
            t.complete();
        }
    }
}

/// A request of a [`scope`]: the backend's own non-blocking collective started on the
/// rank's thread (no thread), or a progress thread's [`Request`]. As a [`Request`]:
/// [`ScopedRequest::wait`] returns what the blocking call returns, and dropping one
/// unfinished waits for it (its result is lost).
///
/// A native request's failure semantics are the backend's own collective's (on MPI
/// those of `NativeWait::Blocking`: `MPI_Wait` has no deadline and sees no failure
/// notice; `mpirun` ends a job whose rank failed), and the call's checks (buffer
/// lengths, element type and operator) are made when it starts: a call that cannot run
/// is an error of the `immediate_*` call, and no request.
#[must_use = "a request is completed by wait() (dropping it waits, and loses its error)"]
pub struct ScopedRequest<'scope, R = Ran> {
    inner: Inner<'scope, R>,
}

enum Inner<'scope, R> {
    /// `None` once completed by `wait` or `test`.
    Thread(Shared<'scope, R>),
    /// `ran` is `Some` until the request is completed by `wait` or `test`.
    Native {
        pending: Rc<Pending<'scope>>,
        slot: usize,
        ran: Option<R>,
    },
}

impl<'scope, R> ScopedRequest<'scope, R> {
    /// Whether this request runs the backend's own non-blocking collective (no thread).
    pub fn is_native(&self) -> bool {
        matches!(self.inner, Inner::Native { .. })
    }

    /// Wait until the call completes; its result, as the blocking call's (a native
    /// one's `Ran::algorithm` is [`NATIVE`]). A panic of a thread-path call (a user
    /// operator's) is raised here.
    pub fn wait(mut self) -> Result<R> {
        match &mut self.inner {
            Inner::Thread(shared) => {
                let request = shared.borrow_mut().take();
                request.expect("a request is finished once").wait()
            }
            Inner::Native { pending, slot, ran } => {
                let ran = ran.take().expect("a request is finished once");
                match pending.take(*slot) {
                    Some(mut started) => started.request.wait().map(|()| ran),
                    None => Ok(ran),
                }
            }
        }
    }

    /// The result if the call has completed, else the request back (rsmpi's `test`;
    /// `MPI_Test` for a native request).
    pub fn test(mut self) -> std::result::Result<Result<R>, Self> {
        match &mut self.inner {
            Inner::Thread(shared) => {
                let done = shared.borrow().as_ref().map_or(true, Request::is_complete);
                if !done {
                    return Err(self);
                }
                let request = shared.borrow_mut().take();
                Ok(request.expect("a request is finished once").wait())
            }
            Inner::Native { pending, slot, ran } => match pending.test(*slot) {
                None => Err(self),
                Some(done) => {
                    let ran = ran.take().expect("a request is finished once");
                    Ok(done.map(|()| ran))
                }
            },
        }
    }
}

impl<R> Drop for ScopedRequest<'_, R> {
    /// Waits for an unfinished call (its result is lost); never raises its panic.
    fn drop(&mut self) {
        match &mut self.inner {
            // The request's own `Drop` waits for it and joins its thread.
            Inner::Thread(shared) => drop(shared.borrow_mut().take()),
            Inner::Native { pending, slot, ran } => {
                if ran.take().is_some() {
                    if let Some(mut started) = pending.take(*slot) {
                        let _ = started.request.wait();
                    }
                }
            }
        }
    }
}

/// The scopes requests live in: a [`std::thread::Scope`] (`&Scope`: every request on a
/// progress thread, [`Request`]) or a [`scope`]'s (`&NativeScope`: native calls started
/// on the rank's thread, the rest on progress threads, [`ScopedRequest`]). Every
/// `immediate_*` call takes either. Sealed: its methods are the calls' machinery.
pub trait RequestScope<'scope>: Copy + sealed::Sealed {
    /// The request this scope's calls return.
    type Request<R>
    where
        R: 'scope;

    /// Run `call` on a progress thread of this scope ([`Comm::immediate`]).
    #[doc(hidden)]
    fn spawn<X, R, F>(self, comm: &mut Comm<X>, call: F) -> Result<Self::Request<R>>
    where
        X: Detach + 'scope,
        X::Detached: 'scope,
        F: FnOnce(&mut Comm<X>) -> Result<R> + Send + 'scope,
        R: Send + 'scope;

    /// Start the fixed-count collective `call(comm, algo)`: natively where this scope
    /// and the call allow it (`known`: a backend may know its element type and
    /// operator, see `Op::backend_knows`; for `Auto`, where `route` measured the
    /// backend's non-blocking call faster), else on a progress thread.
    #[doc(hidden)]
    fn start<X, P, F>(
        self,
        comm: &mut Comm<X>,
        algo: Algo<'scope>,
        route: (bool, P),
        call: F,
    ) -> Result<Self::Request<Ran>>
    where
        X: Detach + 'scope,
        X::Detached: 'scope,
        P: FnOnce(&mut Comm<X>) -> Result<Route>,
        F: FnOnce(&mut Comm<X>, Algo<'scope>) -> Result<Ran> + Send + 'scope;
}

mod sealed {
    pub trait Sealed {}
    impl<'scope, 'env> Sealed for &'scope std::thread::Scope<'scope, 'env> {}
    impl<'a, 'scope, 'env> Sealed for &'a super::NativeScope<'scope, 'env> {}
}

impl<'scope, 'env> RequestScope<'scope> for &'scope Scope<'scope, 'env> {
    type Request<R>
        = Request<'scope, R>
    where
        R: 'scope;

    fn spawn<X, R, F>(self, comm: &mut Comm<X>, call: F) -> Result<Request<'scope, R>>
    where
        X: Detach + 'scope,
        X::Detached: 'scope,
        F: FnOnce(&mut Comm<X>) -> Result<R> + Send + 'scope,
        R: Send + 'scope,
    {
        comm.spawn_request(self, call)
    }

    fn start<X, P, F>(
        self,
        comm: &mut Comm<X>,
        algo: Algo<'scope>,
        _: (bool, P),
        call: F,
    ) -> Result<Request<'scope, Ran>>
    where
        X: Detach + 'scope,
        X::Detached: 'scope,
        P: FnOnce(&mut Comm<X>) -> Result<Route>,
        F: FnOnce(&mut Comm<X>, Algo<'scope>) -> Result<Ran> + Send + 'scope,
    {
        comm.spawn_request(self, move |c| call(c, algo))
    }
}

impl<'a, 'scope, 'env> RequestScope<'scope> for &'a NativeScope<'scope, 'env> {
    type Request<R>
        = ScopedRequest<'scope, R>
    where
        R: 'scope;

    fn spawn<X, R, F>(self, comm: &mut Comm<X>, call: F) -> Result<ScopedRequest<'scope, R>>
    where
        X: Detach + 'scope,
        X::Detached: 'scope,
        F: FnOnce(&mut Comm<X>) -> Result<R> + Send + 'scope,
        R: Send + 'scope,
    {
        let request = comm.spawn_request(self.threads, call)?;
        Ok(ScopedRequest {
            inner: Inner::Thread(self.pending.keep(request)),
        })
    }

    fn start<X, P, F>(
        self,
        comm: &mut Comm<X>,
        algo: Algo<'scope>,
        (known, route): (bool, P),
        call: F,
    ) -> Result<ScopedRequest<'scope, Ran>>
    where
        X: Detach + 'scope,
        X::Detached: 'scope,
        P: FnOnce(&mut Comm<X>) -> Result<Route>,
        F: FnOnce(&mut Comm<X>, Algo<'scope>) -> Result<Ran> + Send + 'scope,
    {
        let native = match algo {
            Algo::Named(name) => name.eq_ignore_ascii_case(NATIVE),
            Algo::Auto if known && comm.transport.has_native() => match route(comm)? {
                Route::Native => true,
                // Measured faster on a progress thread: the blocking call there.
                Route::Thread(name) => {
                    return self.spawn(comm, move |c| {
                        let ran = call(c, Algo::Named(name))?;
                        Ok(Ran { auto: true, ..ran })
                    });
                }
            },
            _ => false,
        };
        if !native {
            return self.spawn(comm, move |c| call(c, algo));
        }
        // The blocking call's checks and epoch, then `Comm::run_native` starts the
        // backend's collective instead of running it, and leaves its request in STARTED.
        comm.starting = true;
        let done = catch_unwind(AssertUnwindSafe(|| call(comm, Algo::Named(NATIVE))));
        comm.starting = false;
        let started = STARTED.with_borrow_mut(Option::take);
        let ran = match done {
            Ok(Ok(ran)) => ran,
            // Nothing was started (a start that fails leaves nothing behind); were
            // anything, dropping it waits for it.
            Ok(Err(e)) => {
                drop(started);
                return Err(e);
            }
            Err(panic) => {
                drop(started);
                resume_unwind(panic)
            }
        };
        let ran = Ran {
            auto: matches!(algo, Algo::Auto),
            ..ran
        };
        comm.last = Some(ran);
        // No request when the call completed without starting one.
        let slot = started.map_or(usize::MAX, |s| self.pending.insert(s));
        Ok(ScopedRequest {
            inner: Inner::Native {
                pending: Rc::clone(&self.pending),
                slot,
                ran: Some(ran),
            },
        })
    }
}

/// What [`RequestScope::start`] needs to route an `Auto` call: whether the backend may
/// know its element type and operator (`known`), and how to find its measured route
/// ([`Comm::immediate_route`], for `collective` with `len` elements per block), asked
/// only by a [`scope`]'s start of an `Auto` call that the backend could run natively.
fn routed<'o, X: Detach, T: Pod + Send + Sync>(
    known: bool,
    collective: Collective,
    len: usize,
    op: Option<&'o Op<'o, T>>,
) -> (bool, impl FnOnce(&mut Comm<X>) -> Result<Route> + 'o) {
    (known, move |c: &mut Comm<X>| {
        c.immediate_route(collective, len, op)
    })
}

/// [`routed`] for a variable-count call: `Auto` takes the backend's non-blocking call
/// wherever its blocking form would take the backend's own (`known`,
/// [`Comm::v_auto_native`]), unmeasured, as the blocking `Auto` does.
fn v_routed<X: Detach>(known: bool) -> (bool, impl FnOnce(&mut Comm<X>) -> Result<Route>) {
    (known, |_: &mut Comm<X>| Ok(Route::Native))
}

impl<X: Detach> Comm<X> {
    /// Start `call` on a duplicate of this communicator, run by a progress thread of
    /// `scope`, and return its request: the general form of every `immediate_*` call
    /// (`call` may make several collectives, run in order on the duplicate).
    /// Collective: every rank starts the same calls in the same order.
    ///
    /// # Examples
    ///
    /// ```
    /// use hypercomm_rt::{threads, Algo, Op};
    /// let got = threads::run(3, |comm| {
    ///     let r = comm.rank() as f64;
    ///     let mut norm = [0.0];
    ///     std::thread::scope(|s| {
    ///         let req = comm.immediate(s, |c| {
    ///             c.all_reduce_into(&[r * r], &mut norm, &Op::sum(), Algo::Auto)?;
    ///             Ok(norm[0].sqrt())
    ///         })?;
    ///         req.wait()
    ///     })
    /// }).unwrap();
    /// assert_eq!(got, vec![5f64.sqrt(); 3]);
    /// ```
    pub fn immediate<'scope, S, R, F>(&mut self, scope: S, call: F) -> Result<S::Request<R>>
    where
        S: RequestScope<'scope>,
        F: FnOnce(&mut Comm<X>) -> Result<R> + Send + 'scope,
        R: Send + 'scope,
        X: 'scope,
        X::Detached: 'scope,
    {
        scope.spawn(self, call)
    }

    /// [`Comm::immediate`] on a progress thread of `scope` (the thread path).
    pub(crate) fn spawn_request<'scope, 'env, R, F>(
        &mut self,
        scope: &'scope Scope<'scope, 'env>,
        call: F,
    ) -> Result<Request<'scope, R>>
    where
        F: FnOnce(&mut Comm<X>) -> Result<R> + Send + 'scope,
        R: Send + 'scope,
        X: 'scope,
        X::Detached: 'scope,
    {
        let detached = self.transport.detach()?;
        let calibration = self.calibration();
        let rank: Rank = self.rank();
        let pause = self.transport.pause();
        let handle = std::thread::Builder::new()
            .name(format!("hypercomm-progress-{rank}"))
            .spawn_scoped(scope, move || {
                let mut comm = Comm::new(X::attach(detached)?, calibration);
                let done = call(&mut comm);
                let Comm { transport, .. } = comm;
                transport.retire();
                done
            })
            .map_err(|e| Error::Spawn {
                rank,
                reason: format!("its progress thread: {e}"),
            })?;
        Ok(Request {
            handle: Some(handle),
            pause,
        })
    }

    /// Non-blocking [`Comm::broadcast_into`].
    pub fn immediate_broadcast_into<'scope, S, T>(
        &mut self,
        scope: S,
        root: Rank,
        buf: &'scope mut [T],
        algo: Algo<'scope>,
    ) -> Result<S::Request<Ran>>
    where
        S: RequestScope<'scope>,
        T: Pod + Send + Sync,
        X: 'scope,
        X::Detached: 'scope,
    {
        let route = routed(
            true,
            Collective::Broadcast { root },
            buf.len(),
            None::<&Op<T>>,
        );
        scope.start(self, algo, route, move |c, a| {
            c.broadcast_into(root, buf, a)
        })
    }

    /// Non-blocking [`Comm::scatter_into`].
    pub fn immediate_scatter_into<'scope, S, T>(
        &mut self,
        scope: S,
        root: Rank,
        send: Option<&'scope [T]>,
        recv: &'scope mut [T],
        algo: Algo<'scope>,
    ) -> Result<S::Request<Ran>>
    where
        S: RequestScope<'scope>,
        T: Pod + Send + Sync,
        X: 'scope,
        X::Detached: 'scope,
    {
        let route = routed(
            true,
            Collective::Scatter { root },
            recv.len(),
            None::<&Op<T>>,
        );
        scope.start(self, algo, route, move |c, a| {
            c.scatter_into(root, send, recv, a)
        })
    }

    /// Non-blocking [`Comm::gather_into`].
    pub fn immediate_gather_into<'scope, S, T>(
        &mut self,
        scope: S,
        root: Rank,
        send: &'scope [T],
        recv: Option<&'scope mut [T]>,
        algo: Algo<'scope>,
    ) -> Result<S::Request<Ran>>
    where
        S: RequestScope<'scope>,
        T: Pod + Send + Sync,
        X: 'scope,
        X::Detached: 'scope,
    {
        let route = routed(
            true,
            Collective::Gather { root },
            send.len(),
            None::<&Op<T>>,
        );
        scope.start(self, algo, route, move |c, a| {
            c.gather_into(root, send, recv, a)
        })
    }

    /// Non-blocking [`Comm::all_gather_into`].
    pub fn immediate_all_gather_into<'scope, S, T>(
        &mut self,
        scope: S,
        send: &'scope [T],
        recv: &'scope mut [T],
        algo: Algo<'scope>,
    ) -> Result<S::Request<Ran>>
    where
        S: RequestScope<'scope>,
        T: Pod + Send + Sync,
        X: 'scope,
        X::Detached: 'scope,
    {
        let route = routed(true, Collective::Allgather, send.len(), None::<&Op<T>>);
        scope.start(self, algo, route, move |c, a| {
            c.all_gather_into(send, recv, a)
        })
    }

    /// Non-blocking [`Comm::all_to_all_into`].
    pub fn immediate_all_to_all_into<'scope, S, T>(
        &mut self,
        scope: S,
        send: &'scope [T],
        recv: &'scope mut [T],
        algo: Algo<'scope>,
    ) -> Result<S::Request<Ran>>
    where
        S: RequestScope<'scope>,
        T: Pod + Send + Sync,
        X: 'scope,
        X::Detached: 'scope,
    {
        let m = send.len() / self.size().max(1) as usize;
        let route = routed(true, Collective::Alltoall, m, None::<&Op<T>>);
        scope.start(self, algo, route, move |c, a| {
            c.all_to_all_into(send, recv, a)
        })
    }

    /// Non-blocking [`Comm::reduce_into`].
    pub fn immediate_reduce_into<'scope, S, T>(
        &mut self,
        scope: S,
        root: Rank,
        send: &'scope [T],
        recv: Option<&'scope mut [T]>,
        op: &'scope Op<'scope, T>,
        algo: Algo<'scope>,
    ) -> Result<S::Request<Ran>>
    where
        S: RequestScope<'scope>,
        T: Pod + Send + Sync,
        X: 'scope,
        X::Detached: 'scope,
    {
        let route = routed(
            op.backend_knows(),
            Collective::Reduce { root },
            send.len(),
            Some(op),
        );
        scope.start(self, algo, route, move |c, a| {
            c.reduce_into(root, send, recv, op, a)
        })
    }

    /// Non-blocking [`Comm::all_reduce_into`].
    pub fn immediate_all_reduce_into<'scope, S, T>(
        &mut self,
        scope: S,
        send: &'scope [T],
        recv: &'scope mut [T],
        op: &'scope Op<'scope, T>,
        algo: Algo<'scope>,
    ) -> Result<S::Request<Ran>>
    where
        S: RequestScope<'scope>,
        T: Pod + Send + Sync,
        X: 'scope,
        X::Detached: 'scope,
    {
        let route = routed(
            op.backend_knows(),
            Collective::Allreduce,
            send.len(),
            Some(op),
        );
        scope.start(self, algo, route, move |c, a| {
            c.all_reduce_into(send, recv, op, a)
        })
    }

    /// Non-blocking [`Comm::scan_into`].
    pub fn immediate_scan_into<'scope, S, T>(
        &mut self,
        scope: S,
        send: &'scope [T],
        recv: &'scope mut [T],
        op: &'scope Op<'scope, T>,
        algo: Algo<'scope>,
    ) -> Result<S::Request<Ran>>
    where
        S: RequestScope<'scope>,
        T: Pod + Send + Sync,
        X: 'scope,
        X::Detached: 'scope,
    {
        let route = routed(op.backend_knows(), Collective::Scan, send.len(), Some(op));
        scope.start(self, algo, route, move |c, a| {
            c.scan_into(send, recv, op, a)
        })
    }

    /// Non-blocking [`Comm::exclusive_scan_into`].
    pub fn immediate_exclusive_scan_into<'scope, S, T>(
        &mut self,
        scope: S,
        send: &'scope [T],
        recv: &'scope mut [T],
        op: &'scope Op<'scope, T>,
        algo: Algo<'scope>,
    ) -> Result<S::Request<Ran>>
    where
        S: RequestScope<'scope>,
        T: Pod + Send + Sync,
        X: 'scope,
        X::Detached: 'scope,
    {
        let route = routed(
            op.backend_knows(),
            Collective::ExclusiveScan,
            send.len(),
            Some(op),
        );
        scope.start(self, algo, route, move |c, a| {
            c.exclusive_scan_into(send, recv, op, a)
        })
    }

    /// Non-blocking [`Comm::reduce_scatter_block_into`].
    pub fn immediate_reduce_scatter_block_into<'scope, S, T>(
        &mut self,
        scope: S,
        send: &'scope [T],
        recv: &'scope mut [T],
        op: &'scope Op<'scope, T>,
        algo: Algo<'scope>,
    ) -> Result<S::Request<Ran>>
    where
        S: RequestScope<'scope>,
        T: Pod + Send + Sync,
        X: 'scope,
        X::Detached: 'scope,
    {
        let route = routed(
            op.backend_knows(),
            Collective::ReduceScatter,
            recv.len(),
            Some(op),
        );
        scope.start(self, algo, route, move |c, a| {
            c.reduce_scatter_block_into(send, recv, op, a)
        })
    }

    /// Non-blocking [`Comm::barrier`] (MPI's `MPI_Ibarrier`): the request completes
    /// once every rank has started its own.
    pub fn immediate_barrier<'scope, S>(&mut self, scope: S) -> Result<S::Request<()>>
    where
        S: RequestScope<'scope>,
        X: 'scope,
        X::Detached: 'scope,
    {
        self.immediate(scope, |c| c.barrier_with(Barrier::default()))
    }
}

/// The variable-count collectives ([`Comm::gatherv_into`] and the rest), non-blocking:
/// the same arguments, every buffer and count list borrowed until the scope ends. On a
/// progress thread a wrong count or buffer is reported at `wait`, as the blocking call
/// reports it; in an [`immediate::scope`](scope) on a backend with collectives of its
/// own (MPI), `Auto` (where the blocking call's `Auto` takes the backend's own) and
/// `native` start the backend's non-blocking call on the rank's thread (`MPI_Igatherv`,
/// `MPI_Iscatterv`, `MPI_Iallgatherv`, `MPI_Ialltoallv`, `MPI_Ireduce_scatter`), and a
/// wrong count or buffer is the start's error.
///
/// ```
/// use hypercomm_rt::{threads, Algo, Op};
/// let counts = [2, 0, 1]; // rank 1 contributes nothing
/// let got = threads::run(3, |comm| {
///     let r = comm.rank() as usize;
///     let mine = vec![r as u32 + 1; counts[r]];
///     let (mut all, mut sums) = (vec![0u32; 3], vec![0u32; counts[r]]);
///     let ones = vec![1u32; 3];
///     let plus = Op::sum();
///     std::thread::scope(|s| {
///         let a = comm.immediate_all_gatherv_into(s, &mine, &mut all, &counts, Algo::Auto)?;
///         let b = comm.immediate_reduce_scatter_into(s, &ones, &mut sums, &counts, &plus, Algo::Auto)?;
///         b.wait()?; // in another order than started
///         a.wait()
///     })?;
///     Ok::<_, hypercomm_rt::Error>((all, sums))
/// }).unwrap();
/// assert_eq!(got[0], (vec![1, 1, 3], vec![3, 3]));
/// assert_eq!(got[2], (vec![1, 1, 3], vec![3]));
/// ```
impl<X: Detach> Comm<X> {
    /// Non-blocking [`Comm::gatherv_into`] (rsmpi's `immediate_gather_varcount_into`).
    #[allow(clippy::too_many_arguments)]
    pub fn immediate_gatherv_into<'scope, S, T>(
        &mut self,
        scope: S,
        root: Rank,
        send: &'scope [T],
        recv: Option<&'scope mut [T]>,
        counts: &'scope [usize],
        algo: Algo<'scope>,
    ) -> Result<S::Request<Ran>>
    where
        S: RequestScope<'scope>,
        T: Pod + Send + Sync,
        X: 'scope,
        X::Detached: 'scope,
    {
        let route = v_routed(self.v_auto_native::<T>(None));
        scope.start(self, algo, route, move |c, a| {
            c.gatherv_into(root, send, recv, counts, a)
        })
    }

    /// Non-blocking [`Comm::scatterv_into`] (rsmpi's `immediate_scatter_varcount_into`).
    #[allow(clippy::too_many_arguments)]
    pub fn immediate_scatterv_into<'scope, S, T>(
        &mut self,
        scope: S,
        root: Rank,
        send: Option<&'scope [T]>,
        recv: &'scope mut [T],
        counts: &'scope [usize],
        algo: Algo<'scope>,
    ) -> Result<S::Request<Ran>>
    where
        S: RequestScope<'scope>,
        T: Pod + Send + Sync,
        X: 'scope,
        X::Detached: 'scope,
    {
        let route = v_routed(self.v_auto_native::<T>(None));
        scope.start(self, algo, route, move |c, a| {
            c.scatterv_into(root, send, recv, counts, a)
        })
    }

    /// Non-blocking [`Comm::all_gatherv_into`] (rsmpi's
    /// `immediate_all_gather_varcount_into`).
    pub fn immediate_all_gatherv_into<'scope, S, T>(
        &mut self,
        scope: S,
        send: &'scope [T],
        recv: &'scope mut [T],
        counts: &'scope [usize],
        algo: Algo<'scope>,
    ) -> Result<S::Request<Ran>>
    where
        S: RequestScope<'scope>,
        T: Pod + Send + Sync,
        X: 'scope,
        X::Detached: 'scope,
    {
        let route = v_routed(self.v_auto_native::<T>(None));
        scope.start(self, algo, route, move |c, a| {
            c.all_gatherv_into(send, recv, counts, a)
        })
    }

    /// Non-blocking [`Comm::all_to_allv_into`] (rsmpi's
    /// `immediate_all_to_all_varcount_into`): the count matrix, when the algorithm needs
    /// it, is exchanged on the request's own communicator too.
    #[allow(clippy::too_many_arguments)]
    pub fn immediate_all_to_allv_into<'scope, S, T>(
        &mut self,
        scope: S,
        send: &'scope [T],
        send_counts: &'scope [usize],
        recv: &'scope mut [T],
        recv_counts: &'scope [usize],
        algo: Algo<'scope>,
    ) -> Result<S::Request<Ran>>
    where
        S: RequestScope<'scope>,
        T: Pod + Send + Sync,
        X: 'scope,
        X::Detached: 'scope,
    {
        let route = v_routed(self.v_auto_native::<T>(None));
        scope.start(self, algo, route, move |c, a| {
            c.all_to_allv_into(send, send_counts, recv, recv_counts, a)
        })
    }

    /// Non-blocking [`Comm::reduce_scatter_into`] (MPI's `MPI_Ireduce_scatter`).
    #[allow(clippy::too_many_arguments)]
    pub fn immediate_reduce_scatter_into<'scope, S, T>(
        &mut self,
        scope: S,
        send: &'scope [T],
        recv: &'scope mut [T],
        counts: &'scope [usize],
        op: &'scope Op<'scope, T>,
        algo: Algo<'scope>,
    ) -> Result<S::Request<Ran>>
    where
        S: RequestScope<'scope>,
        T: Pod + Send + Sync,
        X: 'scope,
        X::Detached: 'scope,
    {
        let route = v_routed(self.v_auto_native(Some(op)));
        scope.start(self, algo, route, move |c, a| {
            c.reduce_scatter_into(send, recv, counts, op, a)
        })
    }
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use super::*;
    use crate::select::Calibration;
    use crate::threads;
    use crate::transport::{Incoming, NativeCall, NativeRequest, Part, PartMut, Tag};

    /// A one-rank backend with non-blocking collectives of its own whose data moves
    /// only when a request completes (as MPI's may: nothing between start and wait),
    /// so that a test sees whether a request was completed: a one-rank collective's
    /// output is its input (a broadcast's buffer is left as it is). It counts the
    /// requests it completed and the duplicates asked of it (never made: the native
    /// path needs none).
    struct Deferred {
        completed: Rc<Cell<usize>>,
        detached: Rc<Cell<usize>>,
    }

    /// A request of [`Deferred`]: the call's buffers, copied at completion.
    struct Later {
        input: *const u8,
        output: *mut u8,
        len: usize,
        done: bool,
        completed: Rc<Cell<usize>>,
    }

    impl NativeRequest for Later {
        fn test(&mut self) -> Result<bool> {
            self.wait().map(|()| true)
        }
        fn wait(&mut self) -> Result<()> {
            if !self.done {
                self.done = true;
                self.completed.set(self.completed.get() + 1);
                // SAFETY: `native_start`'s contract keeps both buffers valid until the
                // request completes, which is now; they are distinct slices.
                unsafe { std::ptr::copy_nonoverlapping(self.input, self.output, self.len) };
            }
            Ok(())
        }
    }

    impl Drop for Later {
        fn drop(&mut self) {
            let _ = self.wait();
        }
    }

    impl Transport for Deferred {
        fn rank(&self) -> Rank {
            0
        }
        fn size(&self) -> u32 {
            1
        }
        unsafe fn post_send(&mut self, _: Rank, _: Tag, _: &[Part]) -> Result<()> {
            unreachable!("one rank sends nothing")
        }
        unsafe fn post_recv(&mut self, _: Rank, _: Tag, _: &[PartMut]) -> Result<()> {
            unreachable!("one rank receives nothing")
        }
        fn recv_with(
            &mut self,
            _: Rank,
            _: Tag,
            _: usize,
            _: &mut dyn FnMut(Incoming<'_>),
        ) -> Result<()> {
            unreachable!("one rank receives nothing")
        }
        fn wait_all(&mut self) -> Result<()> {
            Ok(())
        }
        fn cancel_all(&mut self) {}
        fn has_native(&self) -> bool {
            true
        }
        fn native(&mut self, call: NativeCall<'_>) -> Option<Result<()>> {
            let n = call.input.len().min(call.output.len());
            call.output[..n].copy_from_slice(&call.input[..n]);
            Some(Ok(()))
        }
        unsafe fn native_start(
            &mut self,
            call: NativeCall<'_>,
        ) -> Option<Result<Box<dyn NativeRequest>>> {
            if call.op.is_none() && call.collective.kind().is_reduction() {
                return Some(Err(Error::Native {
                    op: call.collective.kind().to_string(),
                    reason: "a user operator".into(),
                }));
            }
            let len = call.input.len().min(call.output.len());
            Some(Ok(Box::new(Later {
                input: call.input.as_ptr(),
                output: call.output.as_mut_ptr(),
                len,
                done: false,
                completed: Rc::clone(&self.completed),
            })))
        }
    }

    impl Detach for Deferred {
        type Detached = ();
        fn detach(&mut self) -> Result<()> {
            self.detached.set(self.detached.get() + 1);
            Err(Error::Unsupported {
                call: "immediate",
                reason: "the test backend makes no duplicates".into(),
            })
        }
        fn attach((): ()) -> Result<Self> {
            unreachable!("never detached")
        }
    }

    fn deferred() -> (Comm<Deferred>, Rc<Cell<usize>>, Rc<Cell<usize>>) {
        let (completed, detached) = (Rc::default(), Rc::default());
        let t = Deferred {
            completed: Rc::clone(&completed),
            detached: Rc::clone(&detached),
        };
        (Comm::new(t, Calibration::default()), completed, detached)
    }

    /// On a backend with collectives of its own, `Auto` and `native` start them on the
    /// rank's thread: the request is native, makes no duplicate (no progress thread),
    /// leaves the output alone until it is waited for, and returns the blocking call's
    /// `Ran` (native, `auto` as chosen).
    #[test]
    fn native_requests_run_on_the_ranks_thread_and_complete_at_wait() {
        let (mut comm, completed, detached) = deferred();
        let (x, y) = ([3u64, 4], [5i32]);
        let (mut a, mut b) = ([0u64; 2], [0i32]);
        let (plus, most) = (Op::sum(), Op::max());
        let done: Result<()> = scope(|s| {
            let ra = comm.immediate_all_reduce_into(s, &x, &mut a, &plus, Algo::Auto)?;
            let rb = comm.immediate_scan_into(s, &y, &mut b, &most, Algo::Named(NATIVE))?;
            assert!(ra.is_native() && rb.is_native());
            assert_eq!(completed.get(), 0, "nothing moves before a wait");
            let got_b = rb.wait()?; // in another order than started
            let got_a = ra.wait()?;
            assert_eq!((got_a.algorithm, got_a.auto), (NATIVE, true));
            assert_eq!((got_b.algorithm, got_b.auto), (NATIVE, false));
            Ok(())
        });
        done.expect("the requests run");
        assert_eq!((a, b), ([3, 4], [5]));
        assert_eq!((completed.get(), detached.get()), (2, 0));
    }

    /// A request forgotten with `std::mem::forget` is completed by the end of its scope
    /// (never after it: the buffer holds the result once the scope returned); one
    /// dropped is completed by its drop; one tested is completed by its test.
    #[test]
    fn a_forgotten_request_is_completed_by_the_end_of_its_scope() {
        let (mut comm, completed, _) = deferred();
        let x = [7u32, 8, 9];
        let (mut forgotten, mut dropped, mut tested) = ([0u32; 3], [0u32; 3], [0u32; 3]);
        let plus = Op::sum();
        let inside: Result<usize> = scope(|s| {
            let f = comm.immediate_all_reduce_into(s, &x, &mut forgotten, &plus, Algo::Auto)?;
            std::mem::forget(f);
            let d = comm.immediate_all_reduce_into(s, &x, &mut dropped, &plus, Algo::Auto)?;
            drop(d);
            assert_eq!(
                completed.get(),
                1,
                "a dropped request is completed by its drop"
            );
            let t = comm.immediate_all_gather_into(s, &x, &mut tested, Algo::Auto)?;
            let ran = match t.test() {
                Ok(done) => done?,
                Err(_) => panic!("the test backend completes a request when tested"),
            };
            assert_eq!(ran.algorithm, NATIVE);
            Ok(completed.get())
        });
        assert_eq!(
            inside.unwrap(),
            2,
            "the forgotten one is still pending in the scope"
        );
        assert_eq!(completed.get(), 3);
        assert_eq!([forgotten, dropped, tested], [[7, 8, 9]; 3]);
    }

    /// When the scope's closure panics, its pending native requests are completed
    /// before the panic leaves the scope (their buffers are never written after it).
    #[test]
    fn a_panic_in_the_scope_completes_its_requests_first() {
        let (mut comm, completed, _) = deferred();
        let x = [1.5f64];
        let mut out = [0.0];
        let plus = Op::sum();
        let panicked = std::panic::catch_unwind(AssertUnwindSafe(|| {
            scope(|s| {
                let r = comm.immediate_all_reduce_into(s, &x, &mut out, &plus, Algo::Auto);
                std::mem::forget(r);
                panic!("the rank fails");
            })
        }));
        assert!(panicked.is_err());
        assert_eq!((completed.get(), out), (1, [1.5]));
    }

    /// A call that cannot start is the start's typed error, with nothing started:
    /// a wrong buffer length, native with an operator the backend cannot reduce with;
    /// `Auto` with that operator takes the thread path (here: no duplicate, an error).
    #[test]
    fn a_native_start_that_cannot_run_is_a_typed_error_of_the_start() {
        let (mut comm, completed, detached) = deferred();
        let x = [1u64, 2];
        let mut short = [0u64; 1];
        let (mut out, mut out2) = ([0u64; 2], [0u64; 2]);
        let plus = Op::sum();
        let own = Op::associative(|a: &u64, b: &u64| a + b);
        scope(|s| {
            let e = comm.immediate_all_reduce_into(s, &x, &mut short, &plus, Algo::Auto);
            assert!(
                matches!(e, Err(Error::BufferLength { .. })),
                "{:?}",
                e.err()
            );
            let e = comm.immediate_all_reduce_into(s, &x, &mut out, &own, Algo::Named(NATIVE));
            assert!(matches!(e, Err(Error::Native { .. })), "{:?}", e.err());
            assert_eq!(detached.get(), 0);
            let e = comm.immediate_all_reduce_into(s, &x, &mut out2, &own, Algo::Auto);
            assert!(matches!(e, Err(Error::Unsupported { .. })), "{:?}", e.err());
            assert_eq!(
                detached.get(),
                1,
                "Auto with a user operator: the thread path"
            );
        });
        assert_eq!((completed.get(), out, out2), (0, [0; 2], [0; 2]));
    }

    /// On threads (no collectives of their own) a request scope runs every call on a
    /// progress thread: each fixed-count collective gives the blocking call's result,
    /// waited in another order than started, one forgotten (and complete after the
    /// scope), one tested; `native` is the start's typed error.
    #[test]
    fn a_request_scope_on_threads_runs_every_collective_on_progress_threads() {
        for k in [1u32, 2, 3, 4] {
            let got = threads::run(k, |comm| {
                let (r, ku) = (comm.rank(), k as usize);
                let v: Vec<u64> = (0..2 * ku as u64)
                    .map(|i| 100 * u64::from(r) + i + 1)
                    .collect();
                let root = k - 1;
                let plus = Op::sum();
                // Blocking references first.
                let mut want = Vec::new();
                let mut b = if r == root {
                    v[..2].to_vec()
                } else {
                    vec![0; 2]
                };
                comm.broadcast_into(root, &mut b, Algo::Auto)?;
                want.push(b);
                let mut o = vec![0; 2];
                let send = (r == root).then_some(&v[..]);
                comm.scatter_into(root, send, &mut o, Algo::Auto)?;
                want.push(o);
                let mut o = vec![0; 2 * ku];
                comm.gather_into(root, &v[..2], (r == root).then_some(&mut o[..]), Algo::Auto)?;
                want.push(o);
                let mut o = vec![0; 2 * ku];
                comm.all_gather_into(&v[..2], &mut o, Algo::Auto)?;
                want.push(o);
                let mut o = vec![0; 2 * ku];
                comm.all_to_all_into(&v, &mut o, Algo::Auto)?;
                want.push(o);
                let mut o = vec![0; 2];
                comm.reduce_into(
                    root,
                    &v[..2],
                    (r == root).then_some(&mut o[..]),
                    &plus,
                    Algo::Auto,
                )?;
                want.push(o);
                let mut o = vec![0; 2];
                comm.all_reduce_into(&v[..2], &mut o, &plus, Algo::Auto)?;
                want.push(o);
                let mut o = vec![0; 2];
                comm.scan_into(&v[..2], &mut o, &plus, Algo::Auto)?;
                want.push(o);
                let mut o = vec![0; 2];
                comm.exclusive_scan_into(&v[..2], &mut o, &plus, Algo::Auto)?;
                want.push(o);
                let mut o = vec![0; 2];
                comm.reduce_scatter_block_into(&v, &mut o, &plus, Algo::Auto)?;
                want.push(o);
                // The same as requests.
                let mut got: Vec<Vec<u64>> = want.iter().map(|w| vec![0; w.len()]).collect();
                if r == root {
                    got[0].copy_from_slice(&v[..2]);
                }
                let [b, sc, ga, ag, aa, re, ar, sn, ex, rs] = &mut got[..] else {
                    unreachable!()
                };
                let forgotten_ok = scope(|s| {
                    let mut reqs = vec![
                        comm.immediate_broadcast_into(s, root, b, Algo::Auto)?,
                        comm.immediate_scatter_into(
                            s,
                            root,
                            (r == root).then_some(&v[..]),
                            sc,
                            Algo::Auto,
                        )?,
                        comm.immediate_gather_into(
                            s,
                            root,
                            &v[..2],
                            (r == root).then_some(&mut ga[..]),
                            Algo::Auto,
                        )?,
                        comm.immediate_all_gather_into(s, &v[..2], ag, Algo::Auto)?,
                        comm.immediate_all_to_all_into(s, &v, aa, Algo::Auto)?,
                        comm.immediate_reduce_into(
                            s,
                            root,
                            &v[..2],
                            (r == root).then_some(&mut re[..]),
                            &plus,
                            Algo::Auto,
                        )?,
                        comm.immediate_all_reduce_into(s, &v[..2], ar, &plus, Algo::Auto)?,
                        comm.immediate_scan_into(s, &v[..2], sn, &plus, Algo::Auto)?,
                        comm.immediate_exclusive_scan_into(s, &v[..2], ex, &plus, Algo::Auto)?,
                    ];
                    let last =
                        comm.immediate_reduce_scatter_block_into(s, &v, rs, &plus, Algo::Auto)?;
                    assert!(reqs.iter().all(|q| !q.is_native()));
                    std::mem::forget(last);
                    let mut tested = reqs.remove(0);
                    while let Some(q) = reqs.pop() {
                        assert_ne!(q.wait()?.algorithm, NATIVE);
                    }
                    loop {
                        match tested.test() {
                            Ok(done) => break done.map(|_| true),
                            Err(again) => tested = again,
                        }
                    }
                })?;
                assert!(forgotten_ok);
                // Rank 0's exclusive scan is unspecified.
                if r == 0 {
                    got[8].clone_from(&want[8]);
                }
                // `native` on threads: the start's typed error.
                let mut o = [0u64; 2];
                let e = scope(|s| {
                    comm.immediate_all_reduce_into(s, &v[..2], &mut o, &plus, Algo::Named(NATIVE))
                        .map(|_| ())
                });
                assert!(matches!(e, Err(Error::Native { .. })), "{e:?}");
                Ok::<_, Error>((got, want))
            })
            .unwrap();
            for (r, (got, want)) in got.iter().enumerate() {
                // A gather's and a reduce's non-root buffers stay as they were.
                assert_eq!(got, want, "rank {r} of {k}");
            }
        }
    }
}
