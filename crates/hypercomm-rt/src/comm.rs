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
use hypercomm::collective::Collective;
use hypercomm::schedule::Rank;
use hypercomm::topology::Topology;

use crate::error::{Error, Result};
use crate::exec::{self, Buffers, Plan, Scratch};
use crate::op::Op;
use crate::select::{Algo, Calibration, Call, Ran, Selector};
use crate::transport::{Part, PartMut, Tag, Transport};

/// The algorithm of a [`Comm::barrier_with`]. Which rank leaves a barrier first, and
/// how long before the others, shapes the latency a benchmark measures for the call
/// after it (each rank times its call from its own exit): BENCHMARKS.md compares both
/// with Open MPI's barrier of the same algorithm.
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
    transport: X,
    selector: Selector,
    epoch: u32,
    last: Option<Ran>,
    scratch: Scratch,
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

/// The root's buffer, which it must pass.
fn root_buffer<B>(buf: Option<B>, root: Rank, what: &str) -> Result<B> {
    buf.ok_or_else(|| Error::RootBuffer(format!("rank {root} is the root: it must pass {what}")))
}

impl<X: Transport> Comm<X> {
    /// A communicator over `transport` on `complete:size`, choosing with `calibration`.
    pub fn new(transport: X, calibration: Calibration) -> Self {
        let topology = Topology::Complete(transport.size());
        let selector = Selector::new(topology, transport.rank(), calibration);
        Comm {
            transport,
            selector,
            epoch: 0,
            last: None,
            scratch: Scratch::default(),
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
    pub fn topology(&self) -> Topology {
        Topology::Complete(self.size())
    }

    /// The calibration `Algo::Auto` uses.
    pub fn calibration(&self) -> Calibration {
        self.selector.calibration
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
    fn next_epoch(&mut self) -> u32 {
        let e = self.epoch;
        self.epoch = (self.epoch + 1) % Tag::P2P;
        e
    }

    /// Run a checked plan of one's own (e.g. a schedule read from JSON) as the next
    /// collective call; every rank must run its program of the same schedule.
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

    /// Choose, plan and execute one collective of `len` elements.
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
            auto: chosen.auto,
            steps: plan.program().steps.len(),
            in_place,
        };
        self.last = Some(ran);
        Ok(ran)
    }

    /// Broadcast: every rank's `buf` gets the root's `buf` (in place).
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

    /// Routed point-to-point: `src`'s `send` reaches `dst`'s `recv` along the schedule's
    /// paths (e.g. the hypercube's disjoint paths); every rank calls it, intermediate
    /// ranks forward. `len` is the message length, which every rank must know.
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
    /// ```
    /// use hypercomm_rt::threads;
    /// let done = threads::run(3, |comm| comm.barrier().map(|()| comm.rank())).unwrap();
    /// assert_eq!(done, [0, 1, 2]);
    /// ```
    pub fn barrier(&mut self) -> Result<()> {
        self.barrier_with(Barrier::default())
    }

    /// [`barrier`](Self::barrier) by the given algorithm. Every rank must pass the same.
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
    pub fn send<T: Pod>(&mut self, dst: Rank, data: &[T]) -> Result<()> {
        self.exchange(Some((dst, data)), None)
    }

    /// Receive from `src` into `buf`; the message must have exactly `buf.len()` elements.
    pub fn receive_into<T: Pod>(&mut self, src: Rank, buf: &mut [T]) -> Result<()> {
        self.exchange(None, Some((src, buf)))
    }

    /// Send to `dst` and receive from `src` at once (the pattern of a ring shift, which
    /// `send` then `receive_into` on every rank would deadlock).
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
