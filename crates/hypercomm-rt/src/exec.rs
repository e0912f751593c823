//! The executor: runs one rank's [`Program`] on typed buffers over a [`Transport`].
//!
//! A [`Plan`] is a program checked once for what execution relies on (every region in
//! its buffer, `in` never written, peers valid, no receive overlapping a send or another
//! receive of its step, an operator wherever data is combined), so [`execute`] indexes
//! without checks. Each step, as the IR's semantics say:
//! 1. every send is posted (peers read our buffers as they are at the start of the step);
//! 2. receives are posted in order: placing ones land straight in their regions,
//!    combining ones are combined from the sender's data as it arrives;
//! 3. `wait_all`: every send was taken and every receive landed;
//! 4. local copies and combines run in order.
//!
//! `tmp` comes from a [`Scratch`] the communicator keeps (or is allocated once per
//! call). The only copies are the schedule's: one per
//! receive (by the transport) and one per local op.
//!
//! In-place calls (`in` inside `out`, e.g. a broadcast's root) run in place when the
//! plan proves it safe ([`Plan::alias_safe`]): no read of `in` after a write to the
//! same memory through `out`, and no race between the two names within a step.

use std::marker::PhantomData;
use std::mem::size_of;
use std::ops::Range;
use std::sync::Mutex;

use bytemuck::{Pod, Zeroable};
use hypercomm::schedule::{Action, Buf, Op as IrOp, Program, Rank, Region};

use crate::error::{Error, Result};
use crate::op::Op;
use crate::transport::{Channel, Channels, Incoming, Part, PartMut, Tag, Transport};

/// A program checked for execution.
#[derive(Clone, Debug)]
pub struct Plan {
    program: Program,
    ranks: u32,
    /// Elements of `in`, `out`, `tmp`.
    lens: [usize; 3],
    needs_op: bool,
    alias: Option<usize>,
    max_send_parts: usize,
    max_recv_parts: usize,
}

impl Plan {
    /// Check `program` for a communicator of `ranks` ranks with buffers of `in_len` and
    /// `out_len` elements.
    pub fn new(program: Program, ranks: u32, in_len: usize, out_len: usize) -> Result<Plan> {
        let tmp_len = usize::try_from(program.tmp_len).map_err(|_| Error::InvalidProgram {
            rank: program.rank,
            step: 0,
            reason: format!("tmp of {} elements does not fit in memory", program.tmp_len),
        })?;
        // Strided regions run as their segments (a gather list): checked first, since
        // a malformed one has no segments to expand into.
        // Bounds too: expanding an out-of-bounds region could overflow its offsets or
        // allocate without limit.
        let mut program = program;
        let lens = [in_len as u64, out_len as u64, program.tmp_len];
        let bad_region = |r: &Region| {
            r.check().err().or_else(|| {
                let cap = lens[r.buf.index()];
                (r.end() > cap).then(|| format!("outside {} ({cap})", r.buf.name()))
            })
        };
        for (s, step) in program.steps.iter().enumerate() {
            for op in &step.ops {
                let bad = match op {
                    IrOp::Send { from: rs, .. } | IrOp::Recv { into: rs, .. } => {
                        rs.iter().find_map(|r| bad_region(r).map(|e| (*r, e)))
                    }
                    IrOp::Local { from, into, .. } => [from, into]
                        .into_iter()
                        .find_map(|r| bad_region(r).map(|e| (*r, e)))
                        .or_else(|| {
                            // Its pieces run one after another: one could read what
                            // an earlier one wrote, where the op reads `from` whole.
                            ((from.is_strided() || into.is_strided())
                                && from != into
                                && from.overlaps(into))
                            .then(|| {
                                (
                                    *into,
                                    format!(
                                        "overlaps {from}, which the same strided local op reads"
                                    ),
                                )
                            })
                        }),
                };
                if let Some((r, e)) = bad {
                    return Err(Error::InvalidProgram {
                        rank: program.rank,
                        step: s,
                        reason: format!("region {r}: {e}"),
                    });
                }
            }
        }
        program.expand_strided();
        let mut plan = Plan {
            program,
            ranks,
            lens: [in_len, out_len, tmp_len],
            needs_op: false,
            alias: None,
            max_send_parts: 0,
            max_recv_parts: 0,
        };
        for s in 0..plan.program.steps.len() {
            plan.check_step(s)?;
        }
        Ok(plan)
    }

    /// The program.
    pub fn program(&self) -> &Program {
        &self.program
    }

    /// Elements of `in` and `out` the plan runs on.
    pub fn lens(&self) -> (usize, usize) {
        (self.lens[0], self.lens[1])
    }

    /// Whether the program combines data (and so needs an operator).
    pub fn needs_op(&self) -> bool {
        self.needs_op
    }

    /// Allow running in place with `in` = `out[in_off..in_off + in_len]`, if that is
    /// safe; [`Plan::in_place`] tells whether it was.
    pub fn alias_safe(mut self, in_off: usize) -> Self {
        self.alias = crate::alias::safe(&self.program, self.lens, in_off).then_some(in_off);
        self
    }

    /// The peer and length (elements) of the first message of the program, if its first
    /// step only receives (no send, no local op): the message this rank waits for as the
    /// call begins.
    pub fn first_receive(&self) -> Option<(Rank, u64)> {
        let first = self.program.steps.first()?;
        let mut recvs = first.ops.iter().map(|op| match op {
            IrOp::Recv { from, .. } => Some((*from, op.message_len())),
            _ => None,
        });
        let (from, len) = recvs.next()??;
        recvs.all(|r| r.is_some()).then_some((from, len))
    }

    /// The offset of `in` in `out` this plan runs in place with, if any.
    pub fn in_place(&self) -> Option<usize> {
        self.alias
    }

    fn invalid(&self, step: usize, reason: String) -> Error {
        Error::InvalidProgram {
            rank: self.program.rank,
            step,
            reason,
        }
    }

    fn check_region(&self, s: usize, r: &Region, write: bool) -> Result<()> {
        if write && r.buf == Buf::In && r.len > 0 {
            return Err(self.invalid(s, format!("writes {r}, part of `in`")));
        }
        if r.end() > self.lens[r.buf.index()] as u64 {
            let len = self.lens[r.buf.index()];
            return Err(self.invalid(s, format!("{r} is outside {} ({len})", r.buf.name())));
        }
        Ok(())
    }

    fn check_peer(&self, s: usize, peer: Rank) -> Result<()> {
        if peer >= self.ranks || peer == self.program.rank {
            return Err(self.invalid(s, format!("peer {peer} is not another rank")));
        }
        Ok(())
    }

    fn check_step(&mut self, s: usize) -> Result<()> {
        let (mut sends, mut recvs) = (0, 0);
        for op in &self.program.steps[s].ops {
            match op {
                IrOp::Send { to, from } => {
                    to.iter().try_for_each(|&q| self.check_peer(s, q))?;
                    from.iter()
                        .try_for_each(|r| self.check_region(s, r, false))?;
                    sends += from.len();
                }
                IrOp::Recv { from, into, action } => {
                    self.check_peer(s, *from)?;
                    into.iter()
                        .try_for_each(|r| self.check_region(s, r, true))?;
                    self.needs_op |= *action != Action::Place;
                    recvs += into.len();
                }
                IrOp::Local { from, into, action } => {
                    self.check_region(s, from, false)?;
                    self.check_region(s, into, true)?;
                    if from.len != into.len {
                        return Err(self.invalid(s, format!("local op from {from} into {into}")));
                    }
                    self.needs_op |= *action != Action::Place;
                }
            }
        }
        self.max_send_parts = self.max_send_parts.max(sends);
        self.max_recv_parts = self.max_recv_parts.max(recvs);
        if let Some(why) = crate::alias::race(&self.program.steps[s], None) {
            return Err(self.invalid(s, why));
        }
        Ok(())
    }
}

/// The caller's buffers for one call: `in` and `out`, separate or `in` inside `out`.
pub struct Buffers<'a, T> {
    input: *const T,
    in_len: usize,
    output: *mut T,
    out_len: usize,
    alias: Option<usize>,
    _borrow: PhantomData<&'a mut [T]>,
}

impl<'a, T: Pod> Buffers<'a, T> {
    /// Separate `in` and `out`.
    pub fn new(input: &'a [T], output: &'a mut [T]) -> Self {
        Buffers {
            input: input.as_ptr(),
            in_len: input.len(),
            output: output.as_mut_ptr(),
            out_len: output.len(),
            alias: None,
            _borrow: PhantomData,
        }
    }

    /// `in` is `buf[in_off..in_off + in_len]`, `out` is `buf` (`in_off + in_len` must not
    /// exceed `buf.len()`).
    pub fn in_place(buf: &'a mut [T], in_off: usize, in_len: usize) -> Self {
        assert!(in_off + in_len <= buf.len(), "in must lie inside out");
        let output = buf.as_mut_ptr();
        Buffers {
            // SAFETY: in bounds, asserted above.
            input: unsafe { output.add(in_off) },
            in_len,
            output,
            out_len: buf.len(),
            alias: Some(in_off),
            _borrow: PhantomData,
        }
    }
}

/// Cancels everything posted when dropped armed: on an error or while unwinding, so no
/// peer touches our buffers once `execute` has left.
pub(crate) struct Posted<'t, X: Transport + ?Sized> {
    pub(crate) transport: &'t mut X,
    armed: bool,
}

impl<'t, X: Transport + ?Sized> Posted<'t, X> {
    pub(crate) fn new(transport: &'t mut X) -> Self {
        Posted {
            transport,
            armed: true,
        }
    }
    /// Everything posted completed: nothing to cancel.
    pub(crate) fn disarm(&mut self) {
        self.armed = false;
    }
}

impl<X: Transport + ?Sized> Drop for Posted<'_, X> {
    fn drop(&mut self) {
        if self.armed {
            self.transport.cancel_all();
        }
    }
}

/// Where the buffers are, as bytes.
struct Bases<T> {
    ptr: [*mut T; 3],
}

impl<T: Pod> Bases<T> {
    fn elem(&self, r: &Region) -> *mut T {
        // SAFETY: `Plan::new` checked that the region lies in its buffer, whose length
        // `execute` checked against the buffer's.
        unsafe { self.ptr[r.buf.index()].add(r.off as usize) }
    }
    fn part(&self, r: &Region) -> Part {
        Part::from_raw(self.elem(r) as *const u8, r.len as usize * size_of::<T>())
    }
    fn part_mut(&self, r: &Region) -> PartMut {
        PartMut::from_raw(self.elem(r) as *mut u8, r.len as usize * size_of::<T>())
    }
}

/// Run `plan` for call `epoch` on `bufs`, combining with `op` where the program says;
/// `tmp` is allocated for the call.
pub fn execute<T: Pod, X: Transport + ?Sized>(
    transport: &mut X,
    plan: &Plan,
    epoch: u32,
    bufs: Buffers<'_, T>,
    op: Option<&Op<'_, T>>,
) -> Result<()> {
    execute_with(transport, plan, epoch, bufs, op, &mut Scratch::default())
}

/// [`execute`] with `tmp` taken from `scratch`, which keeps its memory for the next
/// call (no allocation, no page faults once warm).
pub fn execute_with<T: Pod, X: Transport + ?Sized>(
    transport: &mut X,
    plan: &Plan,
    epoch: u32,
    bufs: Buffers<'_, T>,
    op: Option<&Op<'_, T>>,
    scratch: &mut Scratch,
) -> Result<()> {
    check_call(transport, plan, &bufs, op)?;
    let mut own = Vec::new();
    let tmp = tmp_of(plan, &mut scratch.lines, &mut own);
    let bases = Bases {
        ptr: [bufs.input as *mut T, bufs.output, tmp.as_mut_ptr()],
    };
    let (sends, recvs) = (&mut scratch.sends.0, &mut scratch.recvs.0);
    sends.reserve(plan.max_send_parts);
    recvs.reserve(plan.max_recv_parts);
    // Declared after the buffers, so dropped (and cancelling) before they are freed.
    let mut guard = Posted::new(transport);
    for (s, step) in plan.program.steps.iter().enumerate() {
        let tag = Tag {
            epoch,
            step: s as u32,
        };
        let ctx = StepCtx {
            bases: &bases,
            tag,
            op,
        };
        ctx.run(guard.transport, &step.ops, sends, recvs)?;
    }
    guard.disarm();
    sends.clear();
    recvs.clear();
    Ok(())
}

/// The plan's `tmp`, from `lines` (or from `own`, for types aligned beyond a line).
fn tmp_of<'a, T: Pod>(plan: &Plan, lines: &'a mut Vec<Line>, own: &'a mut Vec<T>) -> &'a mut [T] {
    let tmp_len = plan.lens[Buf::Tmp.index()];
    match Scratch::get::<T>(lines, tmp_len) {
        Some(tmp) => tmp,
        None => {
            own.resize(tmp_len, T::zeroed());
            &mut own[..]
        }
    }
}

/// A cache line of scratch memory: aligned for any element type of alignment ≤ 64.
#[derive(Clone, Copy, Pod, Zeroable)]
#[repr(C, align(64))]
struct Line([u8; 64]);

/// Memory kept across calls: `tmp`, and the lists of a step's parts, so that a call
/// allocates nothing once warm.
#[derive(Default)]
pub struct Scratch {
    lines: Vec<Line>,
    sends: Parts<Part>,
    recvs: Parts<PartMut>,
}

/// A list of parts whose capacity is kept from one call to the next; empty between
/// calls (cleared at the end of each, and before each step fills it).
struct Parts<P>(Vec<P>);

impl<P> Default for Parts<P> {
    fn default() -> Self {
        Parts(Vec::new())
    }
}

// SAFETY: the raw pointers of the parts are dereferenced only by the transport, during
// the call that filled the list and under that call's borrows; between calls the list
// is empty (or, after an error, holds stale addresses that are never read again: each
// step clears it before filling it), so moving it to another thread moves no access.
unsafe impl<P> Send for Parts<P> {}
// SAFETY: as for `Send`; a shared reference gives no access to the list's contents
// outside this module.
unsafe impl<P> Sync for Parts<P> {}

impl Scratch {
    /// `n` elements of scratch (contents unspecified: schedules write `tmp` before
    /// reading it), or `None` for types aligned beyond a cache line.
    fn get<T: Pod>(lines: &mut Vec<Line>, n: usize) -> Option<&mut [T]> {
        if std::mem::align_of::<T>() > std::mem::align_of::<Line>() {
            return None;
        }
        let bytes = n * size_of::<T>();
        let want = bytes.div_ceil(size_of::<Line>());
        if lines.len() < want {
            lines.resize(want, Line([0; 64]));
        }
        let raw = &mut bytemuck::cast_slice_mut::<Line, u8>(lines)[..bytes];
        bytemuck::try_cast_slice_mut(raw).ok()
    }
}

fn check_call<T: Pod, X: Transport + ?Sized>(
    transport: &X,
    plan: &Plan,
    bufs: &Buffers<'_, T>,
    op: Option<&Op<'_, T>>,
) -> Result<()> {
    if size_of::<T>() == 0 {
        return Err(Error::ZeroSized);
    }
    let invalid = |reason: String| Error::InvalidProgram {
        rank: transport.rank(),
        step: 0,
        reason,
    };
    if plan.program.rank != transport.rank() || plan.ranks != transport.size() {
        return Err(invalid(format!(
            "the plan is for rank {} of {}",
            plan.program.rank, plan.ranks
        )));
    }
    for (what, got, expected) in [
        ("in", bufs.in_len, plan.lens[0]),
        ("out", bufs.out_len, plan.lens[1]),
    ] {
        if got != expected {
            return Err(Error::BufferLength {
                what,
                expected,
                got,
            });
        }
    }
    if bufs.alias.is_some() && bufs.alias != plan.alias {
        return Err(invalid("the plan is not safe to run in place".into()));
    }
    if plan.needs_op && op.is_none() {
        return Err(invalid(
            "the program combines data, and no operator was given".into(),
        ));
    }
    Ok(())
}

/// What one step needs besides the transport.
struct StepCtx<'a, 'o, T> {
    bases: &'a Bases<T>,
    tag: Tag,
    op: Option<&'a Op<'o, T>>,
}

impl<T: Pod> StepCtx<'_, '_, T> {
    fn run<X: Transport + ?Sized>(
        &self,
        transport: &mut X,
        ops: &[IrOp],
        sends: &mut Vec<Part>,
        recvs: &mut Vec<PartMut>,
    ) -> Result<()> {
        // Fill both part lists before posting anything: they must not move while posted.
        sends.clear();
        recvs.clear();
        let mut posts = false;
        for op in ops {
            match op {
                IrOp::Send { from, .. } => {
                    posts = true;
                    sends.extend(from.iter().map(|r| self.bases.part(r)))
                }
                IrOp::Recv { into, action, .. } if *action == Action::Place => {
                    posts = true;
                    recvs.extend(into.iter().map(|r| self.bases.part_mut(r)))
                }
                _ => {}
            }
        }
        self.post_sends(transport, ops, sends)?;
        self.receive(transport, ops, recvs)?;
        // Wait for every send to be taken and every receive to land (a step that posted
        // nothing has nothing to wait for: its combining receives completed in place).
        if posts {
            transport.wait_all()?;
        }
        for op in ops {
            if let IrOp::Local { from, into, action } = op {
                self.local(from, into, *action);
            }
        }
        Ok(())
    }

    fn post_sends<X: Transport + ?Sized>(
        &self,
        transport: &mut X,
        ops: &[IrOp],
        parts: &[Part],
    ) -> Result<()> {
        let mut at = 0;
        for op in ops {
            if let IrOp::Send { to, from } = op {
                let msg = &parts[at..at + from.len()];
                at += from.len();
                for &q in to {
                    // SAFETY: `parts` is not touched until the step's `wait_all` (or the
                    // guard's `cancel_all`), and the regions are not written before it:
                    // the plan has no receive overlapping a send of the step, and local
                    // ops run after `wait_all`.
                    unsafe { transport.post_send(q, self.tag, msg)? };
                }
            }
        }
        Ok(())
    }

    fn receive<X: Transport + ?Sized>(
        &self,
        transport: &mut X,
        ops: &[IrOp],
        parts: &[PartMut],
    ) -> Result<()> {
        let mut at = 0;
        for op in ops {
            let IrOp::Recv { from, into, action } = op else {
                continue;
            };
            if *action == Action::Place {
                let msg = &parts[at..at + into.len()];
                at += into.len();
                // SAFETY: as for sends; no other receive or send of the step overlaps
                // these regions (checked by the plan), and no one else names them.
                unsafe { transport.post_recv(*from, self.tag, msg)? };
            } else {
                let left = *action == Action::CombineLeft;
                let bytes = op.message_len() as usize * size_of::<T>();
                transport.recv_with(*from, self.tag, bytes, &mut |msg| {
                    self.combine_message(msg, into, left)
                })?;
            }
        }
        Ok(())
    }

    fn op(&self) -> &Op<'_, T> {
        self.op
            .expect("checked: combining programs have an operator")
    }

    /// Combine a received message into the concatenation of `into`.
    fn combine_message(&self, msg: Incoming<'_>, into: &[Region], left: bool) {
        let mut regions = into.iter().filter(|r| r.len > 0);
        let mut cur: Option<(*mut T, usize)> = None;
        for piece in msg.pieces() {
            let mut elems = PieceElems::new(piece);
            while !elems.is_empty() {
                let (dst, room) = match cur.take() {
                    Some(c) => c,
                    None => match regions.next() {
                        Some(r) => (self.bases.elem(r), r.len as usize),
                        None => return,
                    },
                };
                let n = room.min(elems.len());
                // SAFETY: `dst..dst + n` lies in a receive region of this rank's buffers
                // (plan-checked), which no one else reads or writes during the step.
                let dst_slice = unsafe { std::slice::from_raw_parts_mut(dst, n) };
                elems.combine_into(dst_slice, self.op(), left);
                if n < room {
                    // SAFETY: still inside the same region.
                    cur = Some((unsafe { dst.add(n) }, room - n));
                }
            }
        }
    }

    /// A local copy or combine, `from` read as a whole before `into` is written.
    fn local(&self, from: &Region, into: &Region, action: Action) {
        let (src, dst, n) = (
            self.bases.elem(from),
            self.bases.elem(into),
            from.len as usize,
        );
        if n == 0 {
            return;
        }
        match action {
            Action::Place if std::ptr::eq(src, dst) => {}
            // SAFETY: both regions are in bounds (plan-checked); `copy` allows overlap.
            Action::Place => unsafe { std::ptr::copy(src, dst, n) },
            _ => self.local_combine(src, dst, n, action == Action::CombineLeft),
        }
    }

    fn local_combine(&self, src: *mut T, dst: *mut T, n: usize, left: bool) {
        let (s, d) = (src as usize, dst as usize);
        let bytes = n * size_of::<T>();
        let op = self.op();
        if s + bytes <= d || d + bytes <= s {
            // SAFETY: disjoint, in bounds, and no one else touches them after wait_all.
            let (from, into) = unsafe {
                (
                    std::slice::from_raw_parts(src as *const T, n),
                    std::slice::from_raw_parts_mut(dst, n),
                )
            };
            op.combine(into, from, left);
            return;
        }
        // Overlapping: go in the direction that reads each element of `from` before
        // it is overwritten.
        let step = |i: usize| {
            // SAFETY: in bounds; plain reads and writes of Pod values.
            unsafe {
                let x = src.add(i).read();
                let mut y = dst.add(i).read();
                op.combine_one(&mut y, &x, left);
                dst.add(i).write(y);
            }
        };
        if d > s {
            (0..n).rev().for_each(step);
        } else {
            (0..n).for_each(step);
        }
    }
}

/// The elements of one received piece, aligned (cast in place) or not (read one by one).
struct PieceElems<'a, T> {
    aligned: Option<&'a [T]>,
    bytes: &'a [u8],
}

impl<'a, T: Pod> PieceElems<'a, T> {
    fn new(bytes: &'a [u8]) -> Self {
        PieceElems {
            aligned: bytemuck::try_cast_slice(bytes).ok(),
            bytes,
        }
    }
    fn len(&self) -> usize {
        self.bytes.len() / size_of::<T>()
    }
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Combine the first `dst.len()` elements into `dst` and drop them from the piece.
    fn combine_into(&mut self, dst: &mut [T], op: &Op<'_, T>, left: bool) {
        let n = dst.len();
        match self.aligned {
            Some(src) => {
                op.combine(dst, &src[..n], left);
                self.aligned = Some(&src[n..]);
            }
            None => {
                for (i, d) in dst.iter_mut().enumerate() {
                    let at = i * size_of::<T>();
                    let x: T = bytemuck::pod_read_unaligned(&self.bytes[at..at + size_of::<T>()]);
                    op.combine_one(d, &x, left);
                }
            }
        }
        self.bytes = &self.bytes[std::mem::size_of_val(dst)..];
    }
}

/// A persistent plan's messages on a backend's persistent requests
/// ([`Transport::persist`]): the channels, and the range of each step's.
pub struct Staged {
    channels: Mutex<Box<dyn Channels>>,
    steps: Vec<Range<usize>>,
}

impl Plan {
    /// This rank's messages, step by step (a step's sends, then its receives, in the
    /// program's order; a send to several peers is a channel per peer), for elements
    /// of `elem_bytes` bytes; and the range of each step's.
    pub fn channels(&self, elem_bytes: usize) -> (Vec<Channel>, Vec<Range<usize>>) {
        let mut channels = Vec::new();
        let mut steps = Vec::with_capacity(self.program.steps.len());
        for (s, step) in self.program.steps.iter().enumerate() {
            let start = channels.len();
            let step_no = s as u32;
            for op in &step.ops {
                if let IrOp::Send { to, .. } = op {
                    let len = op.message_len() as usize * elem_bytes;
                    channels.extend(to.iter().map(|&peer| Channel {
                        step: step_no,
                        peer,
                        send: true,
                        len,
                    }));
                }
            }
            for op in &step.ops {
                if let IrOp::Recv { from, .. } = op {
                    channels.push(Channel {
                        step: step_no,
                        peer: *from,
                        send: false,
                        len: op.message_len() as usize * elem_bytes,
                    });
                }
            }
            steps.push(start..channels.len());
        }
        (channels, steps)
    }
}

/// Ask `transport` for persistent requests of `plan`'s messages (collective: see
/// [`Transport::persist`]); `None` when the backend has none.
pub fn stage<X: Transport + ?Sized>(
    transport: &mut X,
    plan: &Plan,
    elem_bytes: usize,
) -> Result<Option<Staged>> {
    let (list, steps) = plan.channels(elem_bytes);
    match transport.persist(&list) {
        None => Ok(None),
        Some(made) => Ok(Some(Staged {
            channels: Mutex::new(made?),
            steps,
        })),
    }
}

/// [`execute_with`] through `staged`'s persistent requests: per step, the sends'
/// regions are copied into their channels' buffers, the step's channels started and
/// waited for ([`Transport::run_channels`]), then the receives' buffers placed or
/// combined into their regions, then the local ops. `Ok(false)`, having done nothing,
/// when the channels cannot serve this call (not `transport`'s, or in use by another
/// run); the caller then runs the plain path.
pub fn execute_staged<T: Pod, X: Transport + ?Sized>(
    transport: &mut X,
    plan: &Plan,
    staged: &Staged,
    bufs: Buffers<'_, T>,
    op: Option<&Op<'_, T>>,
    scratch: &mut Scratch,
) -> Result<bool> {
    let Ok(mut channels) = staged.channels.try_lock() else {
        return Ok(false);
    };
    if !transport.owns_channels(channels.as_mut()) {
        return Ok(false);
    }
    check_call(transport, plan, &bufs, op)?;
    let mut own = Vec::new();
    let tmp = tmp_of(plan, &mut scratch.lines, &mut own);
    let bases = Bases {
        ptr: [bufs.input as *mut T, bufs.output, tmp.as_mut_ptr()],
    };
    for (s, (step, range)) in plan.program.steps.iter().zip(&staged.steps).enumerate() {
        let ctx = StepCtx {
            bases: &bases,
            tag: Tag {
                epoch: 0,
                step: s as u32,
            },
            op,
        };
        let mut at = range.start;
        for op in &step.ops {
            if let IrOp::Send { to, from } = op {
                for _ in to {
                    if let [r] = from.as_slice() {
                        // SAFETY: the region is not written during the step (the plan
                        // has no receive overlapping a send of the step, and local ops
                        // run after the wait).
                        if unsafe { channels.direct(at, bases.part(r).ptr() as *mut u8) } {
                            at += 1;
                            continue;
                        }
                    }
                    let buf = channels.buffer(at);
                    let mut off = 0;
                    for r in from {
                        let p = bases.part(r);
                        // SAFETY: the region is in bounds (plan-checked) and not written
                        // during this copy; the channel's buffer holds the message.
                        let src = unsafe { std::slice::from_raw_parts(p.ptr(), p.len()) };
                        buf[off..off + p.len()].copy_from_slice(src);
                        off += p.len();
                    }
                    at += 1;
                }
            }
        }
        // Receives landing in one region land there directly if the backend can.
        let mut landed = 0u64;
        for (j, op) in step
            .ops
            .iter()
            .filter(|op| matches!(op, IrOp::Recv { .. }))
            .enumerate()
        {
            if let (
                IrOp::Recv {
                    into,
                    action: Action::Place,
                    ..
                },
                true,
            ) = (op, j < 64)
            {
                if let [r] = into.as_slice() {
                    // SAFETY: no other receive or send of the step overlaps the region
                    // (plan-checked), and no one else names it during the step.
                    if unsafe { channels.direct(at + j, bases.part_mut(r).ptr()) } {
                        landed |= 1 << j;
                    }
                }
            }
        }
        if !range.is_empty() {
            transport.run_channels(channels.as_mut(), range.clone())?;
        }
        let recvs = step.ops.iter().filter(|op| matches!(op, IrOp::Recv { .. }));
        for (j, op) in recvs.enumerate() {
            let IrOp::Recv { into, action, .. } = op else {
                continue;
            };
            let buf = channels.buffer(at);
            at += 1;
            if j < 64 && landed & (1 << j) != 0 {
                continue;
            }
            if *action == Action::Place {
                let mut off = 0;
                for r in into {
                    let p = bases.part_mut(r);
                    // SAFETY: the region is in bounds (plan-checked), disjoint from the
                    // channel's buffer, and no one else touches it during the step.
                    let dst = unsafe { std::slice::from_raw_parts_mut(p.ptr(), p.len()) };
                    dst.copy_from_slice(&buf[off..off + p.len()]);
                    off += p.len();
                }
            } else {
                let part = [Part::new(buf)];
                // SAFETY: the channel's buffer is ours and not written until its next run.
                let msg = unsafe { Incoming::new(&part) };
                ctx.combine_message(msg, into, *action == Action::CombineLeft);
            }
        }
        for op in &step.ops {
            if let IrOp::Local { from, into, action } = op {
                ctx.local(from, into, *action);
            }
        }
    }
    Ok(true)
}
