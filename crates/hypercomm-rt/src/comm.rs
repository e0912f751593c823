//! The collective API, in rsmpi's naming grammar: `_into` methods write into a buffer
//! the caller supplies, `_in_place` methods read their input from the same buffer, and
//! the root's side of a rooted collective passes `Some(buffer)` where other ranks pass
//! `None`. Every collective takes an [`Algo`] and returns what [`Ran`].
//!
//! Every rank must make the same calls in the same order, with the same root, length,
//! algorithm and operator commutativity (as in MPI); a mismatch is detected as
//! [`Error::TagMismatch`] or [`Error::LengthMismatch`] where possible, or ends at the
//! timeout.

use std::mem::size_of;

use bytemuck::Pod;
use hypercomm::collective::{Collective, OpKind};
use hypercomm::schedule::Rank;
use hypercomm::topology::Topology;

use crate::error::{Error, Result};
use crate::exec::{self, Buffers, Plan, Scratch};
use crate::op::Op;
use crate::select::{Algo, Calibration, Call, Ran, Selector, NATIVE};
use crate::transport::{Elem, NativeCall, NativeRequest, Part, PartMut, Tag, Transport};
use crate::tune::{Pick, Signature, Tuner};

/// The algorithm of a [`Comm::barrier_with`]. Which rank leaves a barrier first, and
/// how long before the others, shapes the latency a benchmark measures for the call
/// after it (each rank times its call from its own exit): BENCHMARKS.md's comparison
/// with Open MPI runs both, against Open MPI's barrier of the same algorithm (why:
/// `docs/perf-log/2026-11-24-matched-barrier.md`).
#[non_exhaustive]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Barrier {
    /// An all-reduce of one byte by recursive doubling (the ranks beyond the largest
    /// power of two folded in before and served after): ⌈log₂k⌉ exchange rounds, every
    /// rank leaves after its last exchange. Open MPI's `recursive_doubling` barrier
    /// (`coll_tuned_barrier_algorithm` 3); Hensgen, Finkel & Manber 1988 for the
    /// pattern.
    #[default]
    RecursiveDoubling,
    /// Fan-in to rank 0 along the binomial tree (a reduce of one byte), then fan-out
    /// (a broadcast): 2⌈log₂k⌉ hops, rank 0 leaves first and the leaves last. Open
    /// MPI's `tree` barrier (`coll_tuned_barrier_algorithm` 6).
    Tree,
}

impl std::fmt::Display for Barrier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Barrier::RecursiveDoubling => "recursive-doubling",
            Barrier::Tree => "tree",
        })
    }
}

/// A rank's handle on the communicator: its transport, its caches, its call counter.
pub struct Comm<X: Transport> {
    pub(crate) transport: X,
    pub(crate) selector: Selector,
    pub(crate) tuner: Tuner,
    epoch: u32,
    pub(crate) last: Option<Ran>,
    pub(crate) scratch: Scratch,
    /// Whether a native call is to be *started* ([`Transport::native_start`]) rather than
    /// run: set by [`crate::immediate::scope`]'s requests around one call, whose
    /// buffers they keep borrowed until the request completes.
    pub(crate) starting: bool,
}

std::thread_local! {
    /// The request of the native call just started on this thread ([`Comm::starting`]),
    /// and what it must keep alive until it completes (an in-place input's copy); taken
    /// by the request that set `starting`, at once. A thread-local rather than a field,
    /// so that [`Comm`] stays `Send` where its transport is (a native request is not).
    pub(crate) static STARTED: std::cell::RefCell<Option<Started>> =
        const { std::cell::RefCell::new(None) };
}

/// A native call started ([`STARTED`]).
pub(crate) struct Started {
    /// The backend's request.
    pub(crate) request: Box<dyn NativeRequest>,
    /// Memory the request uses that the call made (a copy of an in-place input).
    pub(crate) keep: Option<Box<dyn std::any::Any>>,
}

/// How one call passes its buffers.
enum Io<'a, T> {
    Separate(&'a [T], &'a mut [T]),
    /// `in` is `buf[off..off + len]`.
    InPlace {
        buf: &'a mut [T],
        off: usize,
        len: usize,
    },
}

fn expect_len(what: &'static str, got: usize, expected: usize) -> Result<()> {
    if got == expected {
        Ok(())
    } else {
        Err(Error::BufferLength {
            what,
            expected,
            got,
        })
    }
}

/// Why a backend without collectives of its own runs no `native`.
#[cold]
fn no_native(kind: OpKind) -> Error {
    Error::Native {
        op: kind.to_string(),
        reason: "this backend has no collectives of its own (the MPI backend has)".into(),
    }
}

/// A fixed-count call of `len` elements for the backend's own collective
/// ([`Transport::native`], [`Transport::native_start`]).
#[inline(always)]
fn fixed_call<'a, T: Pod>(
    collective: Collective,
    len: usize,
    op: Option<&Op<'_, T>>,
    input: &'a [T],
    output: &'a mut [T],
    in_place: Option<usize>,
) -> NativeCall<'a> {
    NativeCall {
        collective,
        len,
        elem_bytes: size_of::<T>(),
        elem: Elem::of::<T>(),
        op: op.and_then(Op::builtin),
        input: bytemuck::cast_slice(input),
        output: bytemuck::cast_slice_mut(output),
        send_counts: &[],
        recv_counts: &[],
        in_place,
    }
}

/// The root's buffer, which it must pass.
fn root_buffer<B>(buf: Option<B>, root: Rank, what: &str) -> Result<B> {
    buf.ok_or_else(|| Error::RootBuffer(format!("rank {root} is the root: it must pass {what}")))
}

impl<X: Transport> Comm<X> {
    /// A communicator over `transport` on `complete:size`, choosing with `calibration`.
    pub fn new(transport: X, calibration: Calibration) -> Self {
        let topology = Topology::complete(transport.size());
        let execution = transport.execution();
        let selector = Selector::new(topology, transport.rank(), calibration, execution);
        Comm {
            transport,
            selector,
            tuner: Tuner::default(),
            epoch: 0,
            last: None,
            scratch: Scratch::default(),
            starting: false,
        }
    }

    /// This rank.
    pub fn rank(&self) -> Rank {
        self.transport.rank()
    }

    /// Number of ranks.
    pub fn size(&self) -> u32 {
        self.transport.size()
    }

    /// The topology schedules are built for: `complete:size` (every pair linked).
    /// A download's are built for `hypercube:n+host` ([`Comm::topology_for`]).
    pub fn topology(&self) -> Topology {
        Topology::complete(self.size())
    }

    /// The topology `kind`'s schedules are built for ([`crate::select::topology_for`]):
    /// `complete:size`, or for a download `hypercube:n+host` when size = 2^n + 1
    /// (`None` for any other size).
    pub fn topology_for(&self, kind: OpKind) -> Option<Topology> {
        crate::select::topology_for(kind, self.size())
    }

    /// The calibration `Algo::Auto` uses.
    pub fn calibration(&self) -> Calibration {
        self.selector.calibration
    }

    /// What the prediction knows of how the backend runs (ranks sharing CPUs, hosts:
    /// [`Transport::execution`]), as `Algo::Auto` ranks by it.
    pub fn execution(&self) -> crate::predict::Execution {
        self.selector.execution
    }

    /// What the last collective call ran.
    pub fn last(&self) -> Option<Ran> {
        self.last
    }

    /// The algorithm the last collective call ran.
    pub fn last_algorithm(&self) -> Option<&'static str> {
        self.last.map(|r| r.algorithm)
    }

    /// The transport, for point-to-point traffic of one's own.
    pub fn transport(&mut self) -> &mut X {
        &mut self.transport
    }

    /// The tag epoch of the next collective call. Every call takes one first, even one
    /// that fails its local checks, so ranks stay in step and a rank that goes on
    /// after such a failure meets a tag mismatch, not another call's data.
    pub(crate) fn next_epoch(&mut self) -> u32 {
        let e = self.epoch;
        self.epoch = (self.epoch + 1) % Tag::P2P;
        e
    }

    /// Run a checked plan of one's own (e.g. a schedule read from JSON) as the next
    /// collective call; every rank must run its program of the same schedule.
    ///
    /// # Examples
    ///
    /// ```
    /// use hypercomm::algorithms::{find, Params};
    /// use hypercomm::{collective::{Collective, OpKind}, verify::Problem};
    /// use hypercomm_rt::{exec::{Buffers, Plan}, threads, Op};
    /// let got = threads::run(4, |comm| {
    ///     // This rank's program of the registry's ring all-reduce of 2 elements.
    ///     let topology = comm.topology();
    ///     let problem = Problem { topology: &topology, collective: Collective::Allreduce, len: 2, commutative: true, counts: None };
    ///     let schedule = find(OpKind::Allreduce, "ring").unwrap().build(&problem, &Params::default())?;
    ///     let plan = Plan::new(schedule.program(comm.rank()), comm.size(), 2, 2)?;
    ///     let (x, mut sum) = ([comm.rank() as i64, 1], [0i64; 2]);
    ///     comm.execute(&plan, Buffers::new(&x, &mut sum), Some(&Op::sum()))?;
    ///     Ok::<_, hypercomm_rt::Error>(sum)
    /// }).unwrap();
    /// assert_eq!(got, vec![[6, 4]; 4]); // 0 + 1 + 2 + 3, and one 1 per rank
    /// ```
    pub fn execute<T: Pod>(
        &mut self,
        plan: &Plan,
        bufs: Buffers<'_, T>,
        op: Option<&Op<'_, T>>,
    ) -> Result<()> {
        let epoch = self.next_epoch();
        exec::execute_with(
            &mut self.transport,
            plan,
            epoch,
            bufs,
            op,
            &mut self.scratch,
        )
    }

    fn check_rank(&self, what: &'static str, rank: Rank) -> Result<()> {
        if rank < self.size() {
            return Ok(());
        }
        Err(hypercomm::error::Error::RankOutOfRange {
            what,
            rank: rank as u64,
            nodes: self.size(),
        }
        .into())
    }

    /// Choose, plan and execute one collective of `len` elements. Inlined: the calls
    /// that run the backend's own collective (`native` named, or the same `Auto` call as
    /// the last one that ran native) go to the transport from here, with no call that
    /// returns a [`Ran`] through memory on the way (each such return cost a few ns:
    /// the caller reads the result with wider loads than the callee's stores).
    #[inline(always)]
    fn collective<T: Pod>(
        &mut self,
        epoch: u32,
        collective: Collective,
        len: usize,
        io: Io<'_, T>,
        op: Option<&Op<'_, T>>,
        algo: Algo<'_>,
    ) -> Result<Ran> {
        if size_of::<T>() == 0 {
            return Err(Error::ZeroSized);
        }
        // The fast path: the same `Auto` call as the last one that ran native (a loop of
        // calls) runs native again, without the tuning's look-up.
        let native = match algo {
            Algo::Auto => self.tuner.native_at == Some(Signature::of(collective, len, op)),
            Algo::Named(name) => name.eq_ignore_ascii_case(NATIVE),
            _ => false,
        };
        if native {
            return self.native(collective, len, io, op, matches!(algo, Algo::Auto));
        }
        self.collective_chosen(epoch, collective, len, io, op, algo)
    }

    /// [`Comm::collective`] past its fast path: the tuning's pick or the model's.
    #[inline(never)]
    fn collective_chosen<T: Pod>(
        &mut self,
        epoch: u32,
        collective: Collective,
        len: usize,
        io: Io<'_, T>,
        op: Option<&Op<'_, T>>,
        algo: Algo<'_>,
    ) -> Result<Ran> {
        // `Auto` under measured tuning: native or the schedule that measured fastest.
        let (algo, tuned) = match algo {
            Algo::Auto => match self.pick(collective, len, op)? {
                Some(Pick::Native) => {
                    let ran = self.native(collective, len, io, op, true)?;
                    self.tuner.native_at = Some(Signature::of(collective, len, op));
                    return Ok(ran);
                }
                Some(Pick::Named(name)) => (Algo::Named(name), true),
                Some(Pick::Model) | None => (algo, false),
            },
            _ => (algo, false),
        };
        let call = Call {
            collective,
            len: len as u64,
            elem_bytes: size_of::<T>(),
            commutative: op.map_or(true, |o| o.is_commutative()),
            alias: match io {
                Io::InPlace { off, .. } => Some(off),
                Io::Separate(..) => None,
            },
        };
        // Before the look-up: the call is most likely the one the selector predicts (the
        // next of a loop of calls); if that one starts by waiting for a message, the
        // message may be here already, and can cross to this core meanwhile.
        if let Some((from, bytes)) = self.selector.expected() {
            self.transport.expect(from, bytes);
        }
        let chosen = self.selector.plan(call, algo)?;
        let plan = &*chosen.plan;
        let (t, scratch) = (&mut self.transport, &mut self.scratch);
        let in_place = match io {
            Io::Separate(input, output) => {
                let bufs = Buffers::new(input, output);
                exec::execute_with(t, plan, epoch, bufs, op, scratch)?;
                false
            }
            Io::InPlace { buf, off, len } if plan.in_place() == Some(off) => {
                let bufs = Buffers::in_place(buf, off, len);
                exec::execute_with(t, plan, epoch, bufs, op, scratch)?;
                true
            }
            Io::InPlace { buf, off, len } => {
                // The schedule would overwrite its input before reading it: copy it.
                let input = buf[off..off + len].to_vec();
                exec::execute_with(t, plan, epoch, Buffers::new(&input, buf), op, scratch)?;
                false
            }
        };
        let ran = Ran {
            op: collective.kind(),
            algorithm: chosen.algorithm,
            auto: chosen.auto || tuned,
            steps: plan.program().steps.len(),
            in_place,
        };
        self.last = Some(ran);
        Ok(ran)
    }

    /// `ran`, marked as `Auto`'s choice (also as the last call).
    pub(crate) fn auto_ran(&mut self, ran: Ran) -> Ran {
        let ran = Ran { auto: true, ..ran };
        self.last = Some(ran);
        ran
    }

    /// One collective with the backend's own implementation ([`Transport::native`]);
    /// `auto` when `Algo::Auto` chose it.
    #[inline(always)]
    fn native<T: Pod>(
        &mut self,
        collective: Collective,
        len: usize,
        io: Io<'_, T>,
        op: Option<&Op<'_, T>>,
        auto: bool,
    ) -> Result<Ran> {
        let copy: Vec<T>;
        // The input's byte offset in the output, for a backend that reads it there.
        let mut at = None;
        let (input, output, in_place): (&[T], &mut [T], bool) = match io {
            Io::Separate(input, output) => (input, output, false),
            // The root's broadcast buffer: the data, and where every rank gets it.
            Io::InPlace { buf, .. } if matches!(collective, Collective::Broadcast { .. }) => {
                (&[], buf, true)
            }
            // The backend reads the input where it is (MPI's `MPI_IN_PLACE`, whose
            // layout the in-place forms share: see `NativeCall::in_place`).
            Io::InPlace { buf, off, .. } if self.transport.native_in_place(collective) => {
                at = Some(off * size_of::<T>());
                (&[], buf, true)
            }
            Io::InPlace { buf, off, len } if self.starting => {
                return self.start_on_copy(collective, len, buf, off, op, auto);
            }
            Io::InPlace { buf, off, len } => {
                copy = buf[off..off + len].to_vec();
                (&copy, buf, false)
            }
        };
        let call = fixed_call(collective, len, op, input, output, at);
        self.run_native(call, in_place, auto)
    }

    /// Run `call` with the backend's own collective ([`Transport::native`]), or
    /// [`Error::Native`] when it has none; the call is then the last one (`auto` when
    /// `Algo::Auto` chose it).
    #[inline(always)]
    pub(crate) fn run_native(
        &mut self,
        call: NativeCall<'_>,
        in_place: bool,
        auto: bool,
    ) -> Result<Ran> {
        let kind = call.collective.kind();
        if self.starting {
            return self.start_native(call, in_place, auto);
        }
        match self.transport.native(call) {
            Some(done) => done?,
            None => return Err(no_native(kind)),
        }
        Ok(self.ran_native(kind, in_place, auto))
    }

    /// What a native call ran (run or started), kept as the last call.
    #[inline(always)]
    fn ran_native(&mut self, op: OpKind, in_place: bool, auto: bool) -> Ran {
        let ran = Ran {
            op,
            algorithm: NATIVE,
            auto,
            steps: 0,
            in_place,
        };
        self.last = Some(ran);
        ran
    }

    /// [`Comm::native`] of an in-place form whose input the backend takes apart, when
    /// the call is started ([`Comm::starting`]): the input's copy is kept with the
    /// request until it completes.
    #[cold]
    #[inline(never)]
    fn start_on_copy<T: Pod>(
        &mut self,
        collective: Collective,
        len: usize,
        buf: &mut [T],
        off: usize,
        op: Option<&Op<'_, T>>,
        auto: bool,
    ) -> Result<Ran> {
        let copy: Vec<T> = buf[off..off + len].to_vec();
        let call = fixed_call(collective, len, op, &copy, buf, None);
        let ran = self.start_native(call, false, auto)?;
        // Moving the vector keeps its heap buffer, which the request reads, in place.
        STARTED.with_borrow_mut(|s| {
            if let Some(s) = s.as_mut() {
                s.keep = Some(Box::new(copy));
            }
        });
        Ok(ran)
    }

    /// [`Comm::run_native`] when the call is started ([`Comm::starting`]): the
    /// backend's non-blocking collective ([`Transport::native_start`]), its request left
    /// in [`STARTED`] for the caller; the [`Ran`] its wait will return.
    #[cold]
    #[inline(never)]
    fn start_native(&mut self, call: NativeCall<'_>, in_place: bool, auto: bool) -> Result<Ran> {
        let kind = call.collective.kind();
        // SAFETY: `starting` is set only by `immediate::scope`'s requests, around one
        // call whose buffers they borrow for the scope's lifetime `'scope`; the request
        // made of what is left in `STARTED` completes before the scope ends (at its
        // wait, test, drop, or the scope's end if it was forgotten), so the memory stays
        // valid and untouched by anyone else until then. A copy made for the call is
        // kept with the request (`Started::keep`).
        let request = match unsafe { self.transport.native_start(call) } {
            Some(started) => started?,
            None => return Err(no_native(kind)),
        };
        STARTED.with_borrow_mut(|s| {
            *s = Some(Started {
                request,
                keep: None,
            })
        });
        Ok(self.ran_native(kind, in_place, auto))
    }

    /// Broadcast: every rank's `buf` gets the root's `buf` (in place).
    ///
    /// # Examples
    ///
    /// ```
    /// use hypercomm_rt::{threads, Algo};
    /// let got = threads::run(3, |comm| {
    ///     let mut buf = if comm.rank() == 1 { [4u32, 5, 6] } else { [0; 3] };
    ///     let ran = comm.broadcast_into(1, &mut buf, Algo::Named("binomial"))?;
    ///     assert_eq!(ran.algorithm, "binomial");
    ///     Ok::<_, hypercomm_rt::Error>(buf)
    /// }).unwrap();
    /// assert_eq!(got, vec![[4, 5, 6]; 3]);
    /// ```
    #[inline]
    pub fn broadcast_into<T: Pod>(&mut self, root: Rank, buf: &mut [T], algo: Algo) -> Result<Ran> {
        let epoch = self.next_epoch();
        self.check_rank("root", root)?;
        let m = buf.len();
        let io = if self.rank() == root {
            Io::InPlace {
                buf,
                off: 0,
                len: m,
            }
        } else {
            Io::Separate(&[], buf)
        };
        self.collective(epoch, Collective::Broadcast { root }, m, io, None, algo)
    }

    /// Scatter: rank r's `recv` gets block r of the root's `send` (`size · recv.len()`
    /// elements, passed by the root only).
    ///
    /// # Examples
    ///
    /// ```
    /// use hypercomm_rt::{threads, Algo};
    /// let got = threads::run(4, |comm| {
    ///     let data: Vec<i64> = (0..8).map(|i| -i).collect(); // block r: [-2r, -2r - 1]
    ///     let send = (comm.rank() == 3).then_some(&data[..]);
    ///     let mut mine = [0i64; 2];
    ///     comm.scatter_into(3, send, &mut mine, Algo::Auto)?;
    ///     Ok::<_, hypercomm_rt::Error>(mine)
    /// }).unwrap();
    /// let want: Vec<[i64; 2]> = (0..4).map(|r| [-2 * r, -2 * r - 1]).collect();
    /// assert_eq!(got, want);
    /// ```
    #[inline]
    pub fn scatter_into<T: Pod>(
        &mut self,
        root: Rank,
        send: Option<&[T]>,
        recv: &mut [T],
        algo: Algo,
    ) -> Result<Ran> {
        let epoch = self.next_epoch();
        self.check_rank("root", root)?;
        let m = recv.len();
        let send = if self.rank() == root {
            let send = root_buffer(send, root, "the data to scatter")?;
            expect_len(
                "scatter's send buffer",
                send.len(),
                self.size() as usize * m,
            )?;
            send
        } else {
            &[]
        };
        let io = Io::Separate(send, recv);
        self.collective(epoch, Collective::Scatter { root }, m, io, None, algo)
    }

    /// Gather: block r of the root's `recv` (`size · send.len()` elements, passed by the
    /// root only) gets rank r's `send`.
    ///
    /// # Examples
    ///
    /// ```
    /// use hypercomm_rt::{threads, Algo};
    /// let got = threads::run(3, |comm| {
    ///     let r = comm.rank() as u16;
    ///     let mut all = [0u16; 6];
    ///     let recv = (comm.rank() == 0).then_some(&mut all[..]);
    ///     comm.gather_into(0, &[r, r * r], recv, Algo::Auto)?;
    ///     Ok::<_, hypercomm_rt::Error>(all)
    /// }).unwrap();
    /// let want: Vec<u16> = (0..3).flat_map(|r| [r, r * r]).collect();
    /// assert_eq!(got[0].to_vec(), want);
    /// assert_eq!(got[1], [0; 6]); // only the root receives
    /// ```
    #[inline]
    pub fn gather_into<T: Pod>(
        &mut self,
        root: Rank,
        send: &[T],
        recv: Option<&mut [T]>,
        algo: Algo,
    ) -> Result<Ran> {
        let epoch = self.next_epoch();
        self.check_rank("root", root)?;
        let m = send.len();
        let mut none: [T; 0] = [];
        let recv = if self.rank() == root {
            let recv = root_buffer(recv, root, "the receive buffer")?;
            expect_len(
                "gather's receive buffer",
                recv.len(),
                self.size() as usize * m,
            )?;
            recv
        } else {
            &mut none
        };
        let io = Io::Separate(send, recv);
        self.collective(epoch, Collective::Gather { root }, m, io, None, algo)
    }

    /// All-gather: block r of every rank's `recv` (`size · send.len()`) gets rank r's
    /// `send`.
    ///
    /// # Examples
    ///
    /// ```
    /// use hypercomm_rt::{threads, Algo};
    /// let got = threads::run(3, |comm| {
    ///     let x = [comm.rank() as f64 * 0.5, -1.0];
    ///     let mut all = [0.0; 6];
    ///     comm.all_gather_into(&x, &mut all, Algo::Auto)?;
    ///     Ok::<_, hypercomm_rt::Error>(all)
    /// }).unwrap();
    /// let want: Vec<f64> = (0..3).flat_map(|r| [r as f64 * 0.5, -1.0]).collect();
    /// for all in &got {
    ///     assert_eq!(all.to_vec(), want);
    /// }
    /// ```
    #[inline]
    pub fn all_gather_into<T: Pod>(
        &mut self,
        send: &[T],
        recv: &mut [T],
        algo: Algo,
    ) -> Result<Ran> {
        let epoch = self.next_epoch();
        let m = send.len();
        expect_len(
            "all-gather's receive buffer",
            recv.len(),
            self.size() as usize * m,
        )?;
        self.collective(
            epoch,
            Collective::Allgather,
            m,
            Io::Separate(send, recv),
            None,
            algo,
        )
    }

    /// All-gather in place: rank r's block r of `buf` is its contribution.
    ///
    /// # Examples
    ///
    /// ```
    /// use hypercomm_rt::{threads, Algo};
    /// let got = threads::run(4, |comm| {
    ///     let r = comm.rank();
    ///     let mut buf = [0u32; 8];
    ///     buf[2 * r as usize..][..2].copy_from_slice(&[r, 10 * r]); // block r is rank r's
    ///     comm.all_gather_in_place(&mut buf, Algo::Auto)?;
    ///     Ok::<_, hypercomm_rt::Error>(buf)
    /// }).unwrap();
    /// let want: Vec<u32> = (0..4).flat_map(|r| [r, 10 * r]).collect();
    /// for buf in &got {
    ///     assert_eq!(buf.to_vec(), want);
    /// }
    /// ```
    #[inline]
    pub fn all_gather_in_place<T: Pod>(&mut self, buf: &mut [T], algo: Algo) -> Result<Ran> {
        let epoch = self.next_epoch();
        let m = self.block_len("all-gather's buffer", buf.len())?;
        let off = self.rank() as usize * m;
        let io = Io::InPlace { buf, off, len: m };
        self.collective(epoch, Collective::Allgather, m, io, None, algo)
    }

    /// `len / size`, if `size` divides `len`.
    fn block_len(&self, what: &'static str, len: usize) -> Result<usize> {
        let k = self.size() as usize;
        expect_len(what, len, len / k * k)?;
        Ok(len / k)
    }

    /// All-to-all: block i of rank j's `recv` gets block j of rank i's `send` (both of
    /// `size` blocks).
    ///
    /// # Examples
    ///
    /// ```
    /// use hypercomm_rt::{threads, Algo};
    /// let got = threads::run(3, |comm| {
    ///     let r = comm.rank() as i64;
    ///     let send: Vec<i64> = (0..3).map(|j| 10 * r + j).collect(); // block j goes to rank j
    ///     let mut recv = [0i64; 3];
    ///     comm.all_to_all_into(&send, &mut recv, Algo::Named("bruck"))?;
    ///     Ok::<_, hypercomm_rt::Error>(recv)
    /// }).unwrap();
    /// for (j, recv) in got.iter().enumerate() {
    ///     let want: Vec<i64> = (0..3).map(|i| 10 * i + j as i64).collect(); // from rank i
    ///     assert_eq!(recv.to_vec(), want);
    /// }
    /// ```
    #[inline]
    pub fn all_to_all_into<T: Pod>(
        &mut self,
        send: &[T],
        recv: &mut [T],
        algo: Algo,
    ) -> Result<Ran> {
        let epoch = self.next_epoch();
        let m = self.block_len("all-to-all's send buffer", send.len())?;
        expect_len("all-to-all's receive buffer", recv.len(), send.len())?;
        self.collective(
            epoch,
            Collective::Alltoall,
            m,
            Io::Separate(send, recv),
            None,
            algo,
        )
    }

    /// Reduce: the root's `recv` gets send_0 ⊕ send_1 ⊕ … (in rank order).
    ///
    /// # Examples
    ///
    /// ```
    /// use hypercomm_rt::{threads, Algo, Op};
    /// let k = 4;
    /// let got = threads::run(k, |comm| {
    ///     let x = [comm.rank() + 1, 1];
    ///     let mut total = [0u32; 2];
    ///     let recv = (comm.rank() == 2).then_some(&mut total[..]);
    ///     comm.reduce_into(2, &x, recv, &Op::sum(), Algo::Auto)?;
    ///     Ok::<_, hypercomm_rt::Error>(total)
    /// }).unwrap();
    /// assert_eq!(got[2], [k * (k + 1) / 2, k]); // 1 + 2 + 3 + 4, and one 1 per rank
    /// assert_eq!(got[0], [0, 0]); // only the root receives
    /// ```
    #[inline]
    pub fn reduce_into<T: Pod>(
        &mut self,
        root: Rank,
        send: &[T],
        recv: Option<&mut [T]>,
        op: &Op<'_, T>,
        algo: Algo,
    ) -> Result<Ran> {
        let epoch = self.next_epoch();
        self.check_rank("root", root)?;
        let m = send.len();
        let mut none: [T; 0] = [];
        let recv = if self.rank() == root {
            let recv = root_buffer(recv, root, "the receive buffer")?;
            expect_len("reduce's receive buffer", recv.len(), m)?;
            recv
        } else {
            &mut none
        };
        let io = Io::Separate(send, recv);
        self.collective(epoch, Collective::Reduce { root }, m, io, Some(op), algo)
    }

    /// All-reduce: every rank's `recv` gets send_0 ⊕ send_1 ⊕ ….
    ///
    /// # Examples
    ///
    /// ```
    /// use hypercomm_rt::{threads, Algo, Op};
    /// let got = threads::run(4, |comm| {
    ///     let r = comm.rank() as i64;
    ///     let mut total = [0i64; 2];
    ///     comm.all_reduce_into(&[r, -r * r], &mut total, &Op::sum(), Algo::Auto)?;
    ///     Ok::<_, hypercomm_rt::Error>(total)
    /// }).unwrap();
    /// let k = 4i64; // Σ r = k(k − 1)/2, Σ r² = (k − 1)k(2k − 1)/6
    /// assert_eq!(got, vec![[k * (k - 1) / 2, -(k - 1) * k * (2 * k - 1) / 6]; 4]);
    /// ```
    #[inline]
    pub fn all_reduce_into<T: Pod>(
        &mut self,
        send: &[T],
        recv: &mut [T],
        op: &Op<'_, T>,
        algo: Algo,
    ) -> Result<Ran> {
        let epoch = self.next_epoch();
        let m = send.len();
        expect_len("all-reduce's receive buffer", recv.len(), m)?;
        self.collective(
            epoch,
            Collective::Allreduce,
            m,
            Io::Separate(send, recv),
            Some(op),
            algo,
        )
    }

    /// All-reduce in place: `buf` is the input and gets the result.
    ///
    /// # Examples
    ///
    /// ```
    /// use hypercomm_rt::{threads, Algo, Op};
    /// let got = threads::run(3, |comm| {
    ///     let r = comm.rank() as f64;
    ///     let mut buf = [r - 1.0, -2.0 * r];
    ///     comm.all_reduce_in_place(&mut buf, &Op::max(), Algo::Auto)?;
    ///     Ok::<_, hypercomm_rt::Error>(buf)
    /// }).unwrap();
    /// assert_eq!(got, vec![[1.0, 0.0]; 3]); // maxima over r = 0, 1, 2
    /// ```
    #[inline]
    pub fn all_reduce_in_place<T: Pod>(
        &mut self,
        buf: &mut [T],
        op: &Op<'_, T>,
        algo: Algo,
    ) -> Result<Ran> {
        let epoch = self.next_epoch();
        let len = buf.len();
        let io = Io::InPlace { buf, off: 0, len };
        self.collective(epoch, Collective::Allreduce, len, io, Some(op), algo)
    }

    /// Inclusive scan: rank r's `recv` gets send_0 ⊕ … ⊕ send_r.
    ///
    /// # Examples
    ///
    /// ```
    /// use hypercomm_rt::{threads, Algo, Op};
    /// let got = threads::run(4, |comm| {
    ///     let x = [comm.rank() as u16 + 1];
    ///     let mut prefix = [0u16];
    ///     comm.scan_into(&x, &mut prefix, &Op::sum(), Algo::Auto)?;
    ///     Ok::<_, hypercomm_rt::Error>(prefix[0])
    /// }).unwrap();
    /// let want: Vec<u16> = (1..=4).map(|n| n * (n + 1) / 2).collect(); // 1, 1+2, 1+2+3, …
    /// assert_eq!(got, want);
    /// ```
    #[inline]
    pub fn scan_into<T: Pod>(
        &mut self,
        send: &[T],
        recv: &mut [T],
        op: &Op<'_, T>,
        algo: Algo,
    ) -> Result<Ran> {
        let epoch = self.next_epoch();
        let m = send.len();
        expect_len("scan's receive buffer", recv.len(), m)?;
        self.collective(
            epoch,
            Collective::Scan,
            m,
            Io::Separate(send, recv),
            Some(op),
            algo,
        )
    }

    /// Inclusive scan in place.
    ///
    /// # Examples
    ///
    /// ```
    /// use hypercomm_rt::{threads, Algo, Op};
    /// // A non-commutative operator: concatenation of decimal numbers, each held as
    /// // [value, 10^digits].
    /// let concat = Op::associative(|a: &[u64; 2], b: &[u64; 2]| [a[0] * b[1] + b[0], a[1] * b[1]]);
    /// let got = threads::run(4, |comm| {
    ///     let mut buf = [[comm.rank() as u64 + 1, 10]];
    ///     comm.scan_in_place(&mut buf, &concat, Algo::Auto)?;
    ///     Ok::<_, hypercomm_rt::Error>(buf[0][0])
    /// }).unwrap();
    /// let want: Vec<u64> = (1..=4).map(|n| (1..=n).fold(0, |acc, d| 10 * acc + d)).collect();
    /// assert_eq!(got, want); // 1, 12, 123, 1234: in rank order
    /// ```
    #[inline]
    pub fn scan_in_place<T: Pod>(
        &mut self,
        buf: &mut [T],
        op: &Op<'_, T>,
        algo: Algo,
    ) -> Result<Ran> {
        let epoch = self.next_epoch();
        let len = buf.len();
        let io = Io::InPlace { buf, off: 0, len };
        self.collective(epoch, Collective::Scan, len, io, Some(op), algo)
    }

    /// Exclusive scan: rank r's `recv` gets send_0 ⊕ … ⊕ send_{r−1}; rank 0's `recv`
    /// is unspecified.
    ///
    /// # Examples
    ///
    /// ```
    /// use hypercomm_rt::{threads, Algo, Op};
    /// let got = threads::run(4, |comm| {
    ///     let x = [comm.rank() as i64 + 1];
    ///     let mut before = [0i64];
    ///     comm.exclusive_scan_into(&x, &mut before, &Op::product(), Algo::Auto)?;
    ///     Ok::<_, hypercomm_rt::Error>(before[0])
    /// }).unwrap();
    /// // Rank r gets 1 · 2 · … · r (rank 0's is unspecified).
    /// let want: Vec<i64> = (1..4).map(|r| (1..=r).product()).collect();
    /// assert_eq!(got[1..], want[..]);
    /// ```
    #[inline]
    pub fn exclusive_scan_into<T: Pod>(
        &mut self,
        send: &[T],
        recv: &mut [T],
        op: &Op<'_, T>,
        algo: Algo,
    ) -> Result<Ran> {
        let epoch = self.next_epoch();
        let m = send.len();
        expect_len("exclusive scan's receive buffer", recv.len(), m)?;
        let io = Io::Separate(send, recv);
        self.collective(epoch, Collective::ExclusiveScan, m, io, Some(op), algo)
    }

    /// Exclusive scan in place (rank 0's `buf` is unspecified afterwards).
    ///
    /// # Examples
    ///
    /// ```
    /// use hypercomm_rt::{threads, Algo, Op};
    /// let got = threads::run(3, |comm| {
    ///     let r = comm.rank();
    ///     let mut buf = [r + 1, 2 * r];
    ///     comm.exclusive_scan_in_place(&mut buf, &Op::sum(), Algo::Auto)?;
    ///     Ok::<_, hypercomm_rt::Error>(buf)
    /// }).unwrap();
    /// // Rank r gets the sums over ranks 0..r (rank 0's is unspecified).
    /// for r in 1..3u32 {
    ///     assert_eq!(got[r as usize], [r * (r + 1) / 2, r * (r - 1)]);
    /// }
    /// ```
    #[inline]
    pub fn exclusive_scan_in_place<T: Pod>(
        &mut self,
        buf: &mut [T],
        op: &Op<'_, T>,
        algo: Algo,
    ) -> Result<Ran> {
        let epoch = self.next_epoch();
        let len = buf.len();
        let io = Io::InPlace { buf, off: 0, len };
        self.collective(epoch, Collective::ExclusiveScan, len, io, Some(op), algo)
    }

    /// Reduce-scatter with equal blocks: rank r's `recv` gets block r of
    /// send_0 ⊕ send_1 ⊕ … (`send` has `size · recv.len()` elements).
    ///
    /// # Examples
    ///
    /// ```
    /// use hypercomm_rt::{threads, Algo, Op};
    /// let got = threads::run(4, |comm| {
    ///     let r = comm.rank() as f64;
    ///     let send: Vec<f64> = (0..4).map(|j| 10.0 * r + j as f64).collect(); // block j: rank j's
    ///     let mut recv = [0.0];
    ///     comm.reduce_scatter_block_into(&send, &mut recv, &Op::sum(), Algo::Auto)?;
    ///     Ok::<_, hypercomm_rt::Error>(recv[0])
    /// }).unwrap();
    /// // Rank j gets Σ_r (10r + j) = 10 · (0 + 1 + 2 + 3) + 4j.
    /// let want: Vec<f64> = (0..4).map(|j| 60.0 + 4.0 * j as f64).collect();
    /// assert_eq!(got, want);
    /// ```
    #[inline]
    pub fn reduce_scatter_block_into<T: Pod>(
        &mut self,
        send: &[T],
        recv: &mut [T],
        op: &Op<'_, T>,
        algo: Algo,
    ) -> Result<Ran> {
        let epoch = self.next_epoch();
        let m = recv.len();
        expect_len(
            "reduce-scatter's send buffer",
            send.len(),
            self.size() as usize * m,
        )?;
        let io = Io::Separate(send, recv);
        self.collective(epoch, Collective::ReduceScatter, m, io, Some(op), algo)
    }

    /// Download (Gichev 1992, seed 003): the host, the last rank (size − 1), passes
    /// `Some(blocks)`, one block of m elements for each other rank in rank order
    /// ((size − 1)·m elements), and an empty `recv`; every other rank (a processing
    /// element) passes `None` and gets its block in `recv` (m elements). The schedules
    /// are the registry's download algorithms (`sl`, `ds`, `gichev`, `optimal`, …),
    /// built for `hypercube:n+host`, so the communicator must have 2^n + 1 ranks; `ssa`,
    /// kept as published, runs only where it verifies (n ≤ 2) and is refused with the
    /// verifier's message elsewhere ([`Error::Flawed`]).
    ///
    /// # Examples
    ///
    /// ```
    /// use hypercomm_rt::{threads, Algo};
    /// // hypercube:2+host: 4 PEs and the host, rank 4.
    /// let got = threads::run(5, |comm| {
    ///     let blocks: Vec<u32> = (0..8).collect(); // block r: [2r, 2r + 1]
    ///     let host = comm.rank() == 4;
    ///     let mut mine = vec![0u32; if host { 0 } else { 2 }];
    ///     let ran = comm.download_into(host.then_some(&blocks[..]), &mut mine, Algo::Named("gichev"))?;
    ///     assert_eq!(ran.algorithm, "gichev");
    ///     Ok::<_, hypercomm_rt::Error>(mine)
    /// }).unwrap();
    /// let want: Vec<Vec<u32>> = (0..4).map(|r| vec![2 * r, 2 * r + 1]).chain([vec![]]).collect();
    /// assert_eq!(got, want);
    /// ```
    pub fn download_into<T: Pod>(
        &mut self,
        blocks: Option<&[T]>,
        recv: &mut [T],
        algo: Algo,
    ) -> Result<Ran> {
        let epoch = self.next_epoch();
        let host = self.size() - 1;
        let pes = host as usize;
        let (send, m): (&[T], usize) = if self.rank() == host {
            let blocks = root_buffer(blocks, host, "the blocks to download")?;
            expect_len("the host's receive buffer", recv.len(), 0)?;
            let m = blocks.len() / pes.max(1);
            expect_len("download's blocks", blocks.len(), pes * m)?;
            (blocks, m)
        } else {
            (&[], recv.len())
        };
        let io = Io::Separate(send, recv);
        self.collective(epoch, Collective::Download, m, io, None, algo)
    }

    /// Routed point-to-point: `src`'s `send` reaches `dst`'s `recv` along the schedule's
    /// paths; every rank calls it, intermediate ranks forward. `len` is the message
    /// length, which every rank must know. Any k and any `src`, `dst` (`src == dst`
    /// copies locally): `direct` sends one message over the link (on `complete:k` every
    /// pair is linked); for k = 2^n the hypercube's `ecube` (one e-cube path) and
    /// `multipath` (the n disjoint paths) fit too, and `Algo::Auto` takes the fastest
    /// under the cost model. For a plain message between two ranks, without every rank
    /// calling, see [`send`](Comm::send) and [`receive_into`](Comm::receive_into).
    ///
    /// # Examples
    ///
    /// ```
    /// use hypercomm_rt::{threads, Algo};
    /// // 3 ranks: any number does.
    /// let got = threads::run(3, |comm| {
    ///     let r = comm.rank();
    ///     let send: Vec<u16> = (0..5).map(|i| 100 + i).collect();
    ///     let mut recv = [0u16; 5];
    ///     // Every rank calls it; only rank 1 sends and only rank 2 receives.
    ///     let (s, d) = ((r == 1).then_some(&send[..]), (r == 2).then_some(&mut recv[..]));
    ///     let ran = comm.p2p_into(1, 2, 5, s, d, Algo::Auto)?;
    ///     // One hop: `direct`, or `multipath` on its shortest path alone (a tie under
    ///     // the cost model, the same single message).
    ///     assert!(["direct", "multipath"].contains(&ran.algorithm));
    ///     Ok::<_, hypercomm_rt::Error>(recv)
    /// }).unwrap();
    /// assert_eq!(got[2].to_vec(), (100..105).collect::<Vec<u16>>());
    /// assert_eq!(got[0], [0; 5]);
    /// ```
    pub fn p2p_into<T: Pod>(
        &mut self,
        src: Rank,
        dst: Rank,
        len: usize,
        send: Option<&[T]>,
        recv: Option<&mut [T]>,
        algo: Algo,
    ) -> Result<Ran> {
        let epoch = self.next_epoch();
        self.check_rank("source", src)?;
        self.check_rank("destination", dst)?;
        let me = self.rank();
        let send = match (me == src, send) {
            (true, s) => root_buffer(s, src, "the data to send")?,
            (false, _) => &[],
        };
        let mut none: [T; 0] = [];
        let recv = match (me == dst, recv) {
            (true, r) => root_buffer(r, dst, "the receive buffer")?,
            (false, _) => &mut none,
        };
        if me == src {
            expect_len("p2p's send buffer", send.len(), len)?;
        }
        if me == dst {
            expect_len("p2p's receive buffer", recv.len(), len)?;
        }
        let io = Io::Separate(send, recv);
        self.collective(epoch, Collective::P2p { src, dst }, len, io, None, algo)
    }

    /// Block until every rank has entered the barrier ([`Barrier::default`]: recursive
    /// doubling). `last()` still reports the collective before it.
    ///
    /// # Examples
    ///
    /// ```
    /// use hypercomm_rt::threads;
    /// let done = threads::run(3, |comm| comm.barrier().map(|()| comm.rank())).unwrap();
    /// assert_eq!(done, [0, 1, 2]);
    /// ```
    pub fn barrier(&mut self) -> Result<()> {
        self.barrier_with(Barrier::default())
    }

    /// [`barrier`](Self::barrier) by the given algorithm. Every rank must pass the same.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::atomic::{AtomicU32, Ordering::SeqCst};
    /// use hypercomm_rt::{threads, Barrier};
    /// let arrived = AtomicU32::new(0);
    /// let seen = threads::run(4, |comm| {
    ///     arrived.fetch_add(1, SeqCst);
    ///     comm.barrier_with(Barrier::Tree)?;
    ///     // No rank leaves before every rank has arrived.
    ///     Ok::<_, hypercomm_rt::Error>(arrived.load(SeqCst))
    /// }).unwrap();
    /// assert_eq!(seen, [4; 4]);
    /// ```
    pub fn barrier_with(&mut self, how: Barrier) -> Result<()> {
        let last = self.last;
        let (bit, mut out) = ([0u8], [0u8]);
        let or = Op::bit_or();
        let done = match how {
            Barrier::RecursiveDoubling => self
                .all_reduce_into(&bit, &mut out, &or, Algo::Named("recursive-doubling"))
                .map(drop),
            Barrier::Tree => self
                .reduce_into(0, &bit, Some(&mut out), &or, Algo::Named("binomial"))
                .and_then(|_| self.broadcast_into(0, &mut out, Algo::Named("binomial")))
                .map(drop),
        };
        self.last = last;
        done
    }

    /// Send `data` to `dst` directly, returning once `dst` has received it (a
    /// synchronous send: the receiver copies straight from `data`).
    ///
    /// # Examples
    ///
    /// ```
    /// use hypercomm_rt::threads;
    /// let k = 4;
    /// let got = threads::run(k, |comm| {
    ///     let r = comm.rank();
    ///     let mut from = vec![[0i64; 2]; k as usize];
    ///     if r == 0 {
    ///         for q in 1..k {
    ///             comm.receive_into(q, &mut from[q as usize])?;
    ///         }
    ///     } else {
    ///         comm.send(0, &[r as i64, -(r as i64)])?;
    ///     }
    ///     Ok::<_, hypercomm_rt::Error>(from)
    /// }).unwrap();
    /// assert_eq!(got[0], (0..k as i64).map(|q| [q, -q]).collect::<Vec<_>>());
    /// ```
    pub fn send<T: Pod>(&mut self, dst: Rank, data: &[T]) -> Result<()> {
        self.exchange(Some((dst, data)), None)
    }

    /// Receive from `src` into `buf`; the message must have exactly `buf.len()` elements.
    ///
    /// # Examples
    ///
    /// ```
    /// use hypercomm_rt::threads;
    /// let k = 4;
    /// let got = threads::run(k, |comm| {
    ///     // A running sum passed down the chain 0 → 1 → … → k − 1.
    ///     let r = comm.rank();
    ///     let mut sum = [0u32];
    ///     if r > 0 {
    ///         comm.receive_into(r - 1, &mut sum)?;
    ///     }
    ///     sum[0] += r + 1;
    ///     if r + 1 < k {
    ///         comm.send(r + 1, &sum)?;
    ///     }
    ///     Ok::<_, hypercomm_rt::Error>(sum[0])
    /// }).unwrap();
    /// assert_eq!(got, (1..=k).map(|n| n * (n + 1) / 2).collect::<Vec<_>>());
    /// ```
    pub fn receive_into<T: Pod>(&mut self, src: Rank, buf: &mut [T]) -> Result<()> {
        self.exchange(None, Some((src, buf)))
    }

    /// Send to `dst` and receive from `src` at once (the pattern of a ring shift, which
    /// `send` then `receive_into` on every rank would deadlock).
    ///
    /// # Examples
    ///
    /// ```
    /// use hypercomm_rt::threads;
    /// let k = 3;
    /// let got = threads::run(k, |comm| {
    ///     let r = comm.rank();
    ///     let mut left = [0.0f64];
    ///     // A ring shift: send right, receive from the left.
    ///     comm.send_receive_into((r + 1) % k, &[r as f64 * 1.5], (r + k - 1) % k, &mut left)?;
    ///     Ok::<_, hypercomm_rt::Error>(left[0])
    /// }).unwrap();
    /// let want: Vec<f64> = (0..k).map(|r| ((r + k - 1) % k) as f64 * 1.5).collect();
    /// assert_eq!(got, want);
    /// ```
    pub fn send_receive_into<T: Pod>(
        &mut self,
        dst: Rank,
        data: &[T],
        src: Rank,
        buf: &mut [T],
    ) -> Result<()> {
        self.exchange(Some((dst, data)), Some((src, buf)))
    }

    fn exchange<T: Pod>(
        &mut self,
        send: Option<(Rank, &[T])>,
        recv: Option<(Rank, &mut [T])>,
    ) -> Result<()> {
        if size_of::<T>() == 0 {
            return Err(Error::ZeroSized);
        }
        let sends: Option<(Rank, [Part; 1])> =
            send.map(|(q, d)| (q, [Part::new(bytemuck::cast_slice(d))]));
        let recvs: Option<(Rank, [PartMut; 1])> =
            recv.map(|(q, b)| (q, [PartMut::new(bytemuck::cast_slice_mut(b))]));
        let mut guard = exec::Posted::new(&mut self.transport);
        if let Some((q, parts)) = &sends {
            // SAFETY: `data` is borrowed for this call and `parts` lives on this frame;
            // the guard cancels (waiting for readers) before either goes away.
            unsafe { guard.transport.post_send(*q, Tag::p2p(), parts)? };
        }
        if let Some((q, parts)) = &recvs {
            // SAFETY: `buf` is borrowed mutably for this call, so no one else names it.
            unsafe { guard.transport.post_recv(*q, Tag::p2p(), parts)? };
        }
        guard.transport.wait_all()?;
        guard.disarm();
        Ok(())
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::transport::{Incoming, NativeCall, Part, PartMut, Tag};

    /// Rank `rank` (0 unless set) of `size` (2 unless set) whose native collectives
    /// record their collective and length, and how the buffers came ([`Passed`]), and
    /// run `write` on the call; no point-to-point (a schedule's first message fails with a timeout naming the
    /// other rank). It takes calls in place ([`Transport::native_in_place`]) if
    /// `in_place`.
    pub(crate) struct NativeOnly {
        pub calls: Vec<(Collective, usize)>,
        pub passed: Vec<Passed>,
        pub write: fn(NativeCall<'_>),
        pub rank: u32,
        pub size: u32,
        pub in_place: bool,
        /// What [`Transport::has_native`] says (false unless set, as before it was).
        pub has_native: bool,
    }

    /// How a native call's buffers came: the input's address and length, the output's
    /// address, and [`NativeCall::in_place`].
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub(crate) struct Passed {
        pub input: (usize, usize),
        pub output: usize,
        pub in_place: Option<usize>,
    }

    impl NativeOnly {
        pub fn new(write: fn(NativeCall<'_>)) -> Self {
            NativeOnly {
                calls: Vec::new(),
                passed: Vec::new(),
                write,
                rank: 0,
                size: 2,
                in_place: false,
                has_native: false,
            }
        }
    }
    impl Transport for NativeOnly {
        fn rank(&self) -> u32 {
            self.rank
        }
        fn size(&self) -> u32 {
            self.size
        }
        fn has_native(&self) -> bool {
            self.has_native
        }
        unsafe fn post_send(&mut self, _: u32, _: Tag, _: &[Part]) -> Result<()> {
            Err(Error::PeerFailed {
                rank: 1 - self.rank,
            })
        }
        unsafe fn post_recv(&mut self, _: u32, _: Tag, _: &[PartMut]) -> Result<()> {
            Err(Error::PeerFailed {
                rank: 1 - self.rank,
            })
        }
        fn recv_with(
            &mut self,
            _: u32,
            _: Tag,
            _: usize,
            _: &mut dyn FnMut(Incoming<'_>),
        ) -> Result<()> {
            Err(Error::PeerFailed {
                rank: 1 - self.rank,
            })
        }
        fn wait_all(&mut self) -> Result<()> {
            Ok(())
        }
        fn cancel_all(&mut self) {}
        fn native(&mut self, call: NativeCall<'_>) -> Option<Result<()>> {
            self.calls.push((call.collective, call.len));
            self.passed.push(Passed {
                input: (call.input.as_ptr() as usize, call.input.len()),
                output: call.output.as_ptr() as usize,
                in_place: call.in_place,
            });
            (self.write)(call);
            Some(Ok(()))
        }
        fn native_in_place(&self, _: Collective) -> bool {
            self.in_place
        }
    }

    /// Writes, where rank 0's input would go, its input with every byte plus one (and
    /// 0xAA elsewhere).
    fn plus_one(call: NativeCall<'_>) {
        call.output.fill(0xAA);
        for (o, i) in call.output.iter_mut().zip(call.input) {
            *o = i.wrapping_add(1);
        }
    }

    /// An in-place call run natively passes the buffer's input as it was before the
    /// call, at every call (growing, shrinking, another element type), and gets the
    /// backend's output in the buffer.
    #[test]
    fn in_place_native_calls_pass_each_calls_own_input() {
        let mut comm = Comm::new(NativeOnly::new(plus_one), Calibration::default());
        let plus1 = |xs: &[u8]| xs.iter().map(|x| x.wrapping_add(1)).collect::<Vec<_>>();
        for (round, n) in [3usize, 1, 7, 2, 300_000, 4].into_iter().enumerate() {
            let mut buf: Vec<u32> = (0..n as u32).map(|i| i * 7 + round as u32).collect();
            let want = plus1(bytemuck::cast_slice(&buf));
            let ran = comm.all_reduce_in_place(&mut buf, &Op::sum(), Algo::Named(NATIVE));
            assert!(ran.unwrap().algorithm == NATIVE);
            assert_eq!(
                bytemuck::cast_slice::<u32, u8>(&buf),
                &want[..],
                "all-reduce of {n}"
            );
            // An all-gather in place: rank 0's block is the input.
            let mut buf: Vec<u16> = (0..2 * n).map(|i| i as u16 ^ round as u16).collect();
            let mine = plus1(bytemuck::cast_slice(&buf[..n]));
            comm.all_gather_in_place(&mut buf, Algo::Named(NATIVE))
                .unwrap();
            let bytes = bytemuck::cast_slice::<u16, u8>(&buf);
            assert_eq!(
                &bytes[..2 * n],
                &mine[..],
                "all-gather of {n}: rank 0's block"
            );
            assert!(bytes[2 * n..].iter().all(|&b| b == 0xAA));
        }
    }

    /// Writes, in an in-place call, the input where it is plus one byte-wise (and 0xAA
    /// elsewhere); a call not in place writes only 0xAA.
    fn plus_one_where_it_is(call: NativeCall<'_>) {
        let n = call.len * call.elem_bytes;
        let mine: Option<Vec<u8>> = call.in_place.map(|off| {
            let input = &call.output[off..off + n];
            input.iter().map(|x| x.wrapping_add(1)).collect()
        });
        call.output.fill(0xAA);
        if let (Some(off), Some(mine)) = (call.in_place, mine) {
            call.output[off..off + n].copy_from_slice(&mine);
        }
    }

    /// One in-place call run natively: the buffer before and after, what it ran, how
    /// the transport got it, and where in the buffer the input was (elements).
    struct InPlaceCall {
        before: Vec<u32>,
        after: Vec<u32>,
        ran: Ran,
        passed: Passed,
        off: usize,
    }

    impl InPlaceCall {
        /// The input's bytes, each plus one (what both writers put in the output).
        fn input_plus_one(&self, n: usize) -> Vec<u8> {
            let bytes: &[u8] = bytemuck::cast_slice(&self.before[self.off..self.off + n]);
            bytes.iter().map(|x| x.wrapping_add(1)).collect()
        }
    }

    /// The four in-place forms run natively on `comm` (all-reduce, scan, exclusive
    /// scan of `n` elements, all-gather of blocks of `n`), each with what its transport
    /// was passed.
    fn in_place_calls(comm: &mut Comm<NativeOnly>, n: usize) -> Vec<InPlaceCall> {
        let native = Algo::Named(NATIVE);
        let mut out = Vec::new();
        for form in 0..4 {
            let len = if form == 3 { 2 * n } else { n };
            let mut buf: Vec<u32> = (0..len as u32).map(|i| i * 7 + form).collect();
            let before = buf.clone();
            let ran = match form {
                0 => comm.all_reduce_in_place(&mut buf, &Op::sum(), native),
                1 => comm.scan_in_place(&mut buf, &Op::sum(), native),
                2 => comm.exclusive_scan_in_place(&mut buf, &Op::sum(), native),
                _ => comm.all_gather_in_place(&mut buf, native),
            };
            let passed = comm.transport().passed.pop().expect("a native call");
            let off = if form == 3 {
                comm.rank() as usize * n
            } else {
                0
            };
            let ran = ran.unwrap();
            out.push(InPlaceCall {
                before,
                after: buf,
                ran,
                passed,
                off,
            });
        }
        out
    }

    /// A transport that takes in-place calls gets each one without a copy: no input,
    /// the output is the caller's buffer itself, the input's offset in it is MPI's (0,
    /// or this rank's block of an all-gather), and what the backend wrote where the
    /// input was is the result; the call ran in place.
    #[test]
    fn in_place_native_calls_reach_a_transport_that_takes_them_without_a_copy() {
        for rank in [0, 1] {
            let mut t = NativeOnly::new(plus_one_where_it_is);
            (t.rank, t.in_place) = (rank, true);
            let mut comm = Comm::new(t, Calibration::default());
            for n in [1usize, 5, 70_000] {
                for c in in_place_calls(&mut comm, n) {
                    let (p, ran, off) = (c.passed, c.ran, c.off);
                    assert_eq!(p.in_place, Some(off * 4), "rank {rank}, {ran:?}");
                    assert_eq!(p.input.1, 0, "no input passed: {ran:?}");
                    assert_eq!(p.output, c.after.as_ptr() as usize, "the buffer itself");
                    assert!(ran.in_place && ran.algorithm == NATIVE, "{ran:?}");
                    let got: &[u8] = bytemuck::cast_slice(&c.after);
                    assert_eq!(got[off * 4..(off + n) * 4], c.input_plus_one(n), "{ran:?}");
                }
            }
        }
    }

    /// A transport that does not take in-place calls (the default) gets each one's
    /// input as a copy, apart from the buffer, and no in-place offset; the call did not
    /// run in place.
    #[test]
    fn in_place_native_calls_copy_for_a_transport_that_does_not_take_them() {
        let mut t = NativeOnly::new(plus_one);
        t.rank = 1;
        let mut comm = Comm::new(t, Calibration::default());
        for n in [1usize, 5, 70_000] {
            for c in in_place_calls(&mut comm, n) {
                let (p, ran) = (c.passed, c.ran);
                assert_eq!(p.in_place, None, "{ran:?}");
                assert_eq!(p.input.1, n * 4, "the input passed: {ran:?}");
                let at = c.after.as_ptr() as usize;
                let buf = at..at + c.after.len() * 4;
                assert!(!buf.contains(&p.input.0), "a copy, not the buffer: {ran:?}");
                assert!(!ran.in_place, "{ran:?}");
                // The copy held the input as it was (rank 1's block of an all-gather),
                // which `plus_one` writes at the output's start.
                let got: &[u8] = bytemuck::cast_slice(&c.after);
                assert_eq!(got[..n * 4], c.input_plus_one(n), "{ran:?}");
            }
        }
    }
}
