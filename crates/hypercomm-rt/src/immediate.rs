//! Non-blocking collectives, in rsmpi's naming: `immediate_broadcast_into`,
//! `immediate_all_reduce_into`, …, and [`Comm::immediate`] for any call. Each starts the
//! collective and returns a [`Request`] at once; [`Request::wait`] returns what the
//! blocking call would have returned ([`Ran`], or its error: a failed peer, a timeout),
//! and [`Request::test`] says whether it is done without waiting.
//! The variable-count calls have theirs: [`Comm::immediate_gatherv_into`],
//! [`Comm::immediate_scatterv_into`], [`Comm::immediate_all_gatherv_into`],
//! [`Comm::immediate_all_to_allv_into`] and [`Comm::immediate_reduce_scatter_into`].
//!
//! # How they progress
//!
//! A request runs on a *progress thread* of its own, on a duplicate of the communicator
//! made for it ([`Detach`]): its messages never meet those of the communicator, of
//! other requests or of sub-communicators, so any number of requests may be in flight
//! and be completed in any order, while the rank goes on computing or calling other
//! collectives. Progress needs no call from the user between start and wait: the
//! progress thread moves the data (on MPI too: it sends and receives with MPI's
//! non-blocking point-to-point calls and polls them; MPI's own non-blocking collectives
//! are not used). On threads the duplicate costs nothing to agree on
//! (every rank finds its group under the same key). On MPI it is an `MPI_Comm_idup` of
//! the communicator, made on the rank's thread (in call order) by the first requests and
//! then lent again to later ones (`hypercomm-mpi`'s `PROGRESS_SLOTS`: request n takes
//! duplicate n mod 4, waiting at start for the request 4 earlier if it still runs), so
//! no progress thread ever makes a communicator; MPI must be initialized with
//! `MPI_THREAD_MULTIPLE` (`mpi::initialize_with_threading(Threading::Multiple)`), or the
//! call returns [`Error::Unsupported`]. A request's call chooses its algorithm by the
//! cost model (it never measures, as `Algo::Auto` under `Tuning::Measure` would on the
//! communicator: the measurement would run inside the first request of each kind).
//! Starting a request costs a thread start (tens of microseconds): worth it for calls
//! that overlap long computations, not for tiny ones (see [`crate::persistent`] for
//! those).
//!
//! Requests live in a scope, as rsmpi's do: `std::thread::scope(|s| …)`, and the buffers
//! a request reads or writes are borrowed for the whole scope, so none can be touched,
//! moved or freed before the scope ends, and every request has ended by then.
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

use std::thread::{Scope, ScopedJoinHandle};

use bytemuck::Pod;
use hypercomm::schedule::Rank;

use crate::comm::{Barrier, Comm};
use crate::error::{Error, Result};
use crate::op::Op;
use crate::select::{Algo, Ran};
use crate::transport::Transport;

/// A backend whose communicators can be duplicated for a progress thread.
pub trait Detach: Transport + Sized {
    /// A duplicate made on the rank's thread, to be entered on the progress thread.
    type Detached: Send;

    /// Make a duplicate of this communicator, on this rank's thread (in call order: it
    /// is collective where the backend needs it to be, and never blocks for long).
    fn detach(&mut self) -> Result<Self::Detached>;

    /// Enter a duplicate, on the thread that will use it.
    fn attach(detached: Self::Detached) -> Result<Self>;

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
    pub fn immediate<'scope, 'env, R, F>(
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
    pub fn immediate_broadcast_into<'scope, 'env, T>(
        &mut self,
        scope: &'scope Scope<'scope, 'env>,
        root: Rank,
        buf: &'scope mut [T],
        algo: Algo<'scope>,
    ) -> Result<Request<'scope>>
    where
        T: Pod + Send + Sync,
        X: 'scope,
        X::Detached: 'scope,
    {
        self.immediate(scope, move |c| c.broadcast_into(root, buf, algo))
    }

    /// Non-blocking [`Comm::scatter_into`].
    pub fn immediate_scatter_into<'scope, 'env, T>(
        &mut self,
        scope: &'scope Scope<'scope, 'env>,
        root: Rank,
        send: Option<&'scope [T]>,
        recv: &'scope mut [T],
        algo: Algo<'scope>,
    ) -> Result<Request<'scope>>
    where
        T: Pod + Send + Sync,
        X: 'scope,
        X::Detached: 'scope,
    {
        self.immediate(scope, move |c| c.scatter_into(root, send, recv, algo))
    }

    /// Non-blocking [`Comm::gather_into`].
    pub fn immediate_gather_into<'scope, 'env, T>(
        &mut self,
        scope: &'scope Scope<'scope, 'env>,
        root: Rank,
        send: &'scope [T],
        recv: Option<&'scope mut [T]>,
        algo: Algo<'scope>,
    ) -> Result<Request<'scope>>
    where
        T: Pod + Send + Sync,
        X: 'scope,
        X::Detached: 'scope,
    {
        self.immediate(scope, move |c| c.gather_into(root, send, recv, algo))
    }

    /// Non-blocking [`Comm::all_gather_into`].
    pub fn immediate_all_gather_into<'scope, 'env, T>(
        &mut self,
        scope: &'scope Scope<'scope, 'env>,
        send: &'scope [T],
        recv: &'scope mut [T],
        algo: Algo<'scope>,
    ) -> Result<Request<'scope>>
    where
        T: Pod + Send + Sync,
        X: 'scope,
        X::Detached: 'scope,
    {
        self.immediate(scope, move |c| c.all_gather_into(send, recv, algo))
    }

    /// Non-blocking [`Comm::all_to_all_into`].
    pub fn immediate_all_to_all_into<'scope, 'env, T>(
        &mut self,
        scope: &'scope Scope<'scope, 'env>,
        send: &'scope [T],
        recv: &'scope mut [T],
        algo: Algo<'scope>,
    ) -> Result<Request<'scope>>
    where
        T: Pod + Send + Sync,
        X: 'scope,
        X::Detached: 'scope,
    {
        self.immediate(scope, move |c| c.all_to_all_into(send, recv, algo))
    }

    /// Non-blocking [`Comm::reduce_into`].
    pub fn immediate_reduce_into<'scope, 'env, T>(
        &mut self,
        scope: &'scope Scope<'scope, 'env>,
        root: Rank,
        send: &'scope [T],
        recv: Option<&'scope mut [T]>,
        op: &'scope Op<'scope, T>,
        algo: Algo<'scope>,
    ) -> Result<Request<'scope>>
    where
        T: Pod + Send + Sync,
        X: 'scope,
        X::Detached: 'scope,
    {
        self.immediate(scope, move |c| c.reduce_into(root, send, recv, op, algo))
    }

    /// Non-blocking [`Comm::all_reduce_into`].
    pub fn immediate_all_reduce_into<'scope, 'env, T>(
        &mut self,
        scope: &'scope Scope<'scope, 'env>,
        send: &'scope [T],
        recv: &'scope mut [T],
        op: &'scope Op<'scope, T>,
        algo: Algo<'scope>,
    ) -> Result<Request<'scope>>
    where
        T: Pod + Send + Sync,
        X: 'scope,
        X::Detached: 'scope,
    {
        self.immediate(scope, move |c| c.all_reduce_into(send, recv, op, algo))
    }

    /// Non-blocking [`Comm::scan_into`].
    pub fn immediate_scan_into<'scope, 'env, T>(
        &mut self,
        scope: &'scope Scope<'scope, 'env>,
        send: &'scope [T],
        recv: &'scope mut [T],
        op: &'scope Op<'scope, T>,
        algo: Algo<'scope>,
    ) -> Result<Request<'scope>>
    where
        T: Pod + Send + Sync,
        X: 'scope,
        X::Detached: 'scope,
    {
        self.immediate(scope, move |c| c.scan_into(send, recv, op, algo))
    }

    /// Non-blocking [`Comm::exclusive_scan_into`].
    pub fn immediate_exclusive_scan_into<'scope, 'env, T>(
        &mut self,
        scope: &'scope Scope<'scope, 'env>,
        send: &'scope [T],
        recv: &'scope mut [T],
        op: &'scope Op<'scope, T>,
        algo: Algo<'scope>,
    ) -> Result<Request<'scope>>
    where
        T: Pod + Send + Sync,
        X: 'scope,
        X::Detached: 'scope,
    {
        self.immediate(scope, move |c| c.exclusive_scan_into(send, recv, op, algo))
    }

    /// Non-blocking [`Comm::reduce_scatter_block_into`].
    pub fn immediate_reduce_scatter_block_into<'scope, 'env, T>(
        &mut self,
        scope: &'scope Scope<'scope, 'env>,
        send: &'scope [T],
        recv: &'scope mut [T],
        op: &'scope Op<'scope, T>,
        algo: Algo<'scope>,
    ) -> Result<Request<'scope>>
    where
        T: Pod + Send + Sync,
        X: 'scope,
        X::Detached: 'scope,
    {
        self.immediate(scope, move |c| {
            c.reduce_scatter_block_into(send, recv, op, algo)
        })
    }

    /// Non-blocking [`Comm::barrier`] (MPI's `MPI_Ibarrier`): the request completes
    /// once every rank has started its own.
    pub fn immediate_barrier<'scope, 'env>(
        &mut self,
        scope: &'scope Scope<'scope, 'env>,
    ) -> Result<Request<'scope, ()>>
    where
        X: 'scope,
        X::Detached: 'scope,
    {
        self.immediate(scope, |c| c.barrier_with(Barrier::default()))
    }
}

/// The variable-count collectives ([`Comm::gatherv_into`] and the rest), non-blocking: the same arguments, every buffer and count list borrowed until the
/// scope ends. A wrong count or buffer is reported at `wait`, as the blocking call
/// reports it.
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
    pub fn immediate_gatherv_into<'scope, 'env, T>(
        &mut self,
        scope: &'scope Scope<'scope, 'env>,
        root: Rank,
        send: &'scope [T],
        recv: Option<&'scope mut [T]>,
        counts: &'scope [usize],
        algo: Algo<'scope>,
    ) -> Result<Request<'scope>>
    where
        T: Pod + Send + Sync,
        X: 'scope,
        X::Detached: 'scope,
    {
        self.immediate(scope, move |c| {
            c.gatherv_into(root, send, recv, counts, algo)
        })
    }

    /// Non-blocking [`Comm::scatterv_into`] (rsmpi's `immediate_scatter_varcount_into`).
    #[allow(clippy::too_many_arguments)]
    pub fn immediate_scatterv_into<'scope, 'env, T>(
        &mut self,
        scope: &'scope Scope<'scope, 'env>,
        root: Rank,
        send: Option<&'scope [T]>,
        recv: &'scope mut [T],
        counts: &'scope [usize],
        algo: Algo<'scope>,
    ) -> Result<Request<'scope>>
    where
        T: Pod + Send + Sync,
        X: 'scope,
        X::Detached: 'scope,
    {
        self.immediate(scope, move |c| {
            c.scatterv_into(root, send, recv, counts, algo)
        })
    }

    /// Non-blocking [`Comm::all_gatherv_into`] (rsmpi's
    /// `immediate_all_gather_varcount_into`).
    pub fn immediate_all_gatherv_into<'scope, 'env, T>(
        &mut self,
        scope: &'scope Scope<'scope, 'env>,
        send: &'scope [T],
        recv: &'scope mut [T],
        counts: &'scope [usize],
        algo: Algo<'scope>,
    ) -> Result<Request<'scope>>
    where
        T: Pod + Send + Sync,
        X: 'scope,
        X::Detached: 'scope,
    {
        self.immediate(scope, move |c| c.all_gatherv_into(send, recv, counts, algo))
    }

    /// Non-blocking [`Comm::all_to_allv_into`] (rsmpi's
    /// `immediate_all_to_all_varcount_into`): the count matrix, when the algorithm needs
    /// it, is exchanged on the request's own communicator too.
    #[allow(clippy::too_many_arguments)]
    pub fn immediate_all_to_allv_into<'scope, 'env, T>(
        &mut self,
        scope: &'scope Scope<'scope, 'env>,
        send: &'scope [T],
        send_counts: &'scope [usize],
        recv: &'scope mut [T],
        recv_counts: &'scope [usize],
        algo: Algo<'scope>,
    ) -> Result<Request<'scope>>
    where
        T: Pod + Send + Sync,
        X: 'scope,
        X::Detached: 'scope,
    {
        self.immediate(scope, move |c| {
            c.all_to_allv_into(send, send_counts, recv, recv_counts, algo)
        })
    }

    /// Non-blocking [`Comm::reduce_scatter_into`] (MPI's `MPI_Ireduce_scatter`).
    #[allow(clippy::too_many_arguments)]
    pub fn immediate_reduce_scatter_into<'scope, 'env, T>(
        &mut self,
        scope: &'scope Scope<'scope, 'env>,
        send: &'scope [T],
        recv: &'scope mut [T],
        counts: &'scope [usize],
        op: &'scope Op<'scope, T>,
        algo: Algo<'scope>,
    ) -> Result<Request<'scope>>
    where
        T: Pod + Send + Sync,
        X: 'scope,
        X::Detached: 'scope,
    {
        self.immediate(scope, move |c| {
            c.reduce_scatter_into(send, recv, counts, op, algo)
        })
    }
}
