//! Persistent collectives (MPI-4's `MPI_Allreduce_init` and the rest): `plan_*` chooses
//! the algorithm, builds and checks its schedule, and keeps this rank's executor
//! [`Plan`] (steps, buffer layout, peer lists), the message its first step waits for,
//! and the operator, once; [`Persistent::run`] then executes it as many times as
//! needed, each run a collective call of its own on the communicator, with no choice,
//! no look-up and no schedule building: what is left per call is the executor's
//! (posting, waiting, copying, combining) and a check of the buffers' lengths.
//! [`Persistent::start`] runs it without blocking ([`crate::immediate`]).
//! The variable-count collectives have persistent forms too, with their counts fixed
//! when planned (MPI-4's `MPI_Alltoallv_init`): [`Comm::plan_gatherv`],
//! [`Comm::plan_scatterv`], [`Comm::plan_all_gatherv`], [`Comm::plan_all_to_allv`] and
//! [`Comm::plan_reduce_scatter`], each a [`Persistent`] as the others.
//!
//! A backend may also make requests for the plan's messages once
//! ([`Transport::persist`]; [`Persistent::staged`] tells): MPI does for fixed-count plans of small
//! messages (each message gets a buffer and a fixed tag, and a run posts a step's
//! requests and waits once, with no probe), so that on MPI `plan_*` is collective, like
//! `MPI_Allreduce_init`. Runs on that communicator use them; elsewhere (`start`'s
//! progress duplicate) a run posts as a plain call does. The threads backend makes none.
//!
//! `plan_*` with `Algo::Auto` under measured tuning (either backend) is collective too:
//! it takes the blocking call's measured pick where that is a schedule, measuring it
//! first (once per machine) if it was not yet. Every rank makes its plans in the same
//! order, with the same arguments.
//!
//! Buffers are passed as the library's `in` and `out` of this rank:
//! [`Persistent::lens`] says how long each must be. For the rooted collectives the
//! ranks without a buffer pass an empty slice (a broadcast's and a scatter's non-roots
//! their `send`, a gather's and a reduce's non-roots their `recv`); a broadcast's root
//! passes the data as `send` and gets a copy in `recv`.
//!
//! A plan belongs to a rank of a communicator of a given size; it may run on any
//! communicator where that rank has that size (its duplicates, a request's progress
//! communicator); elsewhere the run is refused ([`Error::InvalidProgram`]). Every rank
//! must run its plans in the same order, as blocking calls.
//!
//! ```
//! use hypercomm_rt::{threads, Algo, Op};
//! let got = threads::run(4, |comm| {
//!     let mut plan = comm.plan_all_reduce::<u64>(2, Op::sum(), Algo::Auto)?;
//!     let mut total = [0u64; 2];
//!     for i in 0..10 {
//!         let x = [comm.rank() as u64, i];
//!         let mut sum = [0u64; 2];
//!         plan.run(comm, &x, &mut sum)?; // no schedule built, no algorithm chosen
//!         total[0] += sum[0];
//!         total[1] += sum[1];
//!     }
//!     Ok::<_, hypercomm_rt::Error>(total)
//! }).unwrap();
//! assert_eq!(got, vec![[60, 180]; 4]); // 10 × (0+1+2+3), 4 × (0+…+9)
//! ```

use std::marker::PhantomData;
use std::mem::size_of;
use std::sync::Arc;
use std::thread::Scope;

use bytemuck::Pod;
use hypercomm::collective::Collective;
use hypercomm::schedule::Rank;

use crate::comm::Comm;
use crate::error::{Error, Result};
use crate::exec::{self, Buffers, Plan};
use crate::immediate::{Detach, Request};
use crate::op::Op;
use crate::select::{Algo, Call, Ran, NATIVE};
use crate::transport::Transport;
use crate::tune::Pick;

/// A collective planned once and run many times ([`crate::persistent`]).
pub struct Persistent<'f, T> {
    plan: Arc<Plan>,
    op: Option<Op<'f, T>>,
    ran: Ran,
    /// The message the first step waits for, as `(peer, bytes)`.
    expect: Option<(Rank, usize)>,
    /// The backend's persistent requests for the plan's messages, if it made them.
    staged: Option<exec::Staged>,
    _elem: PhantomData<fn() -> T>,
}

impl<'f, T: Pod> Persistent<'f, T> {
    /// The persistent call of this rank's `plan`, which runs as `ran` says (a
    /// fixed-count `plan_*` or a variable-count one, `plan_gatherv`, …), on the
    /// backend's requests made for it when `staged`.
    pub(crate) fn new(
        plan: Arc<Plan>,
        op: Option<Op<'f, T>>,
        ran: Ran,
        staged: Option<exec::Staged>,
    ) -> Self {
        let expect = plan
            .first_receive()
            .map(|(from, elems)| (from, elems as usize * size_of::<T>()));
        Persistent {
            plan,
            op,
            ran,
            expect,
            staged,
            _elem: PhantomData,
        }
    }

    /// Elements of this rank's `send` and `recv`.
    pub fn lens(&self) -> (usize, usize) {
        let (i, o) = self.plan.lens();
        (i, o)
    }

    /// Whether the backend made requests for this plan's messages, which its runs on
    /// the communicator that planned it use ([`crate::Transport::persist`]: MPI's, for
    /// plans whose messages are small); otherwise each run posts as a plain call does.
    pub fn staged(&self) -> bool {
        self.staged.is_some()
    }

    /// What each run runs (the algorithm, whether `Algo::Auto` chose it, its steps).
    pub fn ran(&self) -> Ran {
        self.ran
    }

    /// Run the planned collective on `comm`, as its next collective call: `send` and
    /// `recv` of [`Persistent::lens`] elements.
    pub fn run<X: Transport>(&self, comm: &mut Comm<X>, send: &[T], recv: &mut [T]) -> Result<Ran> {
        let epoch = comm.next_epoch();
        if let Some((from, bytes)) = self.expect {
            comm.transport.expect(from, bytes);
        }
        let (t, scratch) = (&mut comm.transport, &mut comm.scratch);
        let op = self.op.as_ref();
        let staged = match &self.staged {
            Some(st) => {
                exec::execute_staged(t, &self.plan, st, Buffers::new(send, recv), op, scratch)?
            }
            None => false,
        };
        if !staged {
            exec::execute_with(t, &self.plan, epoch, Buffers::new(send, recv), op, scratch)?;
        }
        comm.last = Some(self.ran);
        Ok(self.ran)
    }

    /// [`Persistent::run`] without blocking: on a progress thread of `scope`, on a
    /// duplicate of `comm` ([`Comm::immediate`]).
    pub fn start<'scope, 'env, X>(
        &'scope self,
        comm: &mut Comm<X>,
        scope: &'scope Scope<'scope, 'env>,
        send: &'scope [T],
        recv: &'scope mut [T],
    ) -> Result<Request<'scope>>
    where
        T: Send + Sync,
        X: Detach + 'scope,
        X::Detached: 'scope,
    {
        comm.immediate(scope, move |c| self.run(c, send, recv))
    }
}

/// A persistent call runs a schedule of the registry: `native` is refused.
pub(crate) fn refuse_native(collective: Collective, algo: Algo<'_>) -> Result<()> {
    if matches!(algo, Algo::Named(name) if name.eq_ignore_ascii_case(NATIVE)) {
        return Err(Error::Native {
            op: collective.kind().to_string(),
            reason: "a persistent call runs a schedule of the registry; the backend's \
                     own collective runs through the blocking call"
                .into(),
        });
    }
    Ok(())
}

impl<X: Transport> Comm<X> {
    /// Plan one collective of `len` elements ([`crate::persistent`]).
    fn plan_call<'f, T: Pod>(
        &mut self,
        collective: Collective,
        len: usize,
        op: Option<Op<'f, T>>,
        algo: Algo<'_>,
    ) -> Result<Persistent<'f, T>> {
        if size_of::<T>() == 0 {
            return Err(Error::ZeroSized);
        }
        refuse_native(collective, algo)?;
        if let Collective::Broadcast { root }
        | Collective::Scatter { root }
        | Collective::Gather { root }
        | Collective::Reduce { root } = collective
        {
            if root >= self.size() {
                return Err(hypercomm::error::Error::RankOutOfRange {
                    what: "root",
                    rank: root.into(),
                    nodes: self.size(),
                }
                .into());
            }
        }
        // `Auto` under measured tuning (MPI's default) takes the blocking call's measured
        // pick where it is a schedule, so that a plan runs what the same blocking call
        // would; where that is the backend's own call (which has no persistent form
        // here) or nothing was measured, the cost model chooses among the schedules.
        let (algo, tuned) = match algo {
            Algo::Auto => match self.pick(collective, len, op.as_ref())? {
                Some(Pick::Named(name)) => (Algo::Named(name), true),
                _ => (algo, false),
            },
            _ => (algo, false),
        };
        let call = Call {
            collective,
            len: len as u64,
            elem_bytes: size_of::<T>(),
            commutative: op.as_ref().map_or(true, Op::is_commutative),
            alias: None,
        };
        let chosen = self.selector.plan(call, algo)?;
        let plan = Arc::clone(&chosen.plan);
        let ran = Ran {
            op: collective.kind(),
            algorithm: chosen.algorithm,
            auto: chosen.auto || tuned,
            steps: plan.program().steps.len(),
            in_place: false,
        };
        let staged = exec::stage(&mut self.transport, &plan, size_of::<T>())?;
        Ok(Persistent::new(plan, op, ran, staged))
    }

    /// A persistent [`Comm::broadcast_into`] of `len` elements from `root`.
    pub fn plan_broadcast<T: Pod>(
        &mut self,
        root: Rank,
        len: usize,
        algo: Algo,
    ) -> Result<Persistent<'static, T>> {
        self.plan_call(Collective::Broadcast { root }, len, None, algo)
    }

    /// A persistent [`Comm::scatter_into`] of blocks of `len` elements from `root`.
    pub fn plan_scatter<T: Pod>(
        &mut self,
        root: Rank,
        len: usize,
        algo: Algo,
    ) -> Result<Persistent<'static, T>> {
        self.plan_call(Collective::Scatter { root }, len, None, algo)
    }

    /// A persistent [`Comm::gather_into`] of blocks of `len` elements to `root`.
    pub fn plan_gather<T: Pod>(
        &mut self,
        root: Rank,
        len: usize,
        algo: Algo,
    ) -> Result<Persistent<'static, T>> {
        self.plan_call(Collective::Gather { root }, len, None, algo)
    }

    /// A persistent [`Comm::all_gather_into`] of blocks of `len` elements.
    pub fn plan_all_gather<T: Pod>(
        &mut self,
        len: usize,
        algo: Algo,
    ) -> Result<Persistent<'static, T>> {
        self.plan_call(Collective::Allgather, len, None, algo)
    }

    /// A persistent [`Comm::all_to_all_into`] of blocks of `len` elements.
    pub fn plan_all_to_all<T: Pod>(
        &mut self,
        len: usize,
        algo: Algo,
    ) -> Result<Persistent<'static, T>> {
        self.plan_call(Collective::Alltoall, len, None, algo)
    }

    /// A persistent [`Comm::reduce_into`] of `len` elements to `root`, with `op`.
    pub fn plan_reduce<'f, T: Pod>(
        &mut self,
        root: Rank,
        len: usize,
        op: Op<'f, T>,
        algo: Algo,
    ) -> Result<Persistent<'f, T>> {
        self.plan_call(Collective::Reduce { root }, len, Some(op), algo)
    }

    /// A persistent [`Comm::all_reduce_into`] of `len` elements, with `op`.
    pub fn plan_all_reduce<'f, T: Pod>(
        &mut self,
        len: usize,
        op: Op<'f, T>,
        algo: Algo,
    ) -> Result<Persistent<'f, T>> {
        self.plan_call(Collective::Allreduce, len, Some(op), algo)
    }

    /// A persistent [`Comm::scan_into`] of `len` elements, with `op`.
    pub fn plan_scan<'f, T: Pod>(
        &mut self,
        len: usize,
        op: Op<'f, T>,
        algo: Algo,
    ) -> Result<Persistent<'f, T>> {
        self.plan_call(Collective::Scan, len, Some(op), algo)
    }

    /// A persistent [`Comm::exclusive_scan_into`] of `len` elements, with `op`.
    pub fn plan_exclusive_scan<'f, T: Pod>(
        &mut self,
        len: usize,
        op: Op<'f, T>,
        algo: Algo,
    ) -> Result<Persistent<'f, T>> {
        self.plan_call(Collective::ExclusiveScan, len, Some(op), algo)
    }

    /// A persistent [`Comm::reduce_scatter_block_into`] of blocks of `len` elements,
    /// with `op`.
    pub fn plan_reduce_scatter_block<'f, T: Pod>(
        &mut self,
        len: usize,
        op: Op<'f, T>,
        algo: Algo,
    ) -> Result<Persistent<'f, T>> {
        self.plan_call(Collective::ReduceScatter, len, Some(op), algo)
    }
}
