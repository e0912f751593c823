//! `Algo::Named("native")` on MPI: the MPI library's own collective for each of the
//! runtime's (`MPI_Bcast`, `MPI_Scatter`, `MPI_Gather`, `MPI_Allgather`, `MPI_Alltoall`,
//! `MPI_Reduce`, `MPI_Allreduce`, `MPI_Scan`, `MPI_Exscan`, `MPI_Reduce_scatter_block`,
//! and the variable-count `MPI_Gatherv`, `MPI_Scatterv`, `MPI_Allgatherv`,
//! `MPI_Alltoallv`, `MPI_Reduce_scatter`),
//! on the communicator's data duplicate (MPI keeps collective traffic apart from its
//! point-to-point messages, so the two never match).
//!
//! Data moves as bytes (`MPI_UINT8_T`), whatever the element type; reductions need MPI
//! to know the element type and the operator, so they run for the primitive types
//! ([`Elem`]) with the built-in operators ([`Builtin`]: `MPI_SUM`, …) and are refused
//! otherwise ([`Error::Native`]), as a bitwise operator on floats cannot arise (the
//! runtime offers none).
//!
//! An in-place form (`all_reduce_in_place`, `scan_in_place`, `exclusive_scan_in_place`,
//! `all_gather_in_place`) passes `MPI_IN_PLACE` as the send buffer, MPI reading the input
//! where the runtime's in-place forms keep it ([`mpi_in_place_offset`]): nothing is copied.
//! rsmpi does not export `MPI_IN_PLACE`, whose value each MPI library chooses; the
//! crate's build script compiles it from `mpi.h` (`csrc/in_place.c`).
//!
//! The calls block inside MPI: unlike the schedules' waits they have no deadline and
//! see no failure notice, so a peer that fails during one leaves this rank waiting until
//! `mpirun` ends the job (which it does when the failed rank exits non-zero). A peer
//! known to have failed before the call is reported at once.

use std::ffi::{c_int, c_void};

use hypercomm::collective::Collective;
use hypercomm_rt::transport::{Builtin, Elem, NativeCall, NativeRequest};
use hypercomm_rt::{Error, Result};
use mpi::ffi;

use crate::{bytes_type, error_string, mpi_finalized, request_null, success};

extern "C" {
    /// MPI's `MPI_IN_PLACE` (`csrc/in_place.c`, compiled with the MPI library's `mpi.h`).
    static HYPERCOMM_MPI_IN_PLACE: *mut c_void;
}

/// Where MPI's `MPI_IN_PLACE` reads rank `me`'s input of `c` in the receive buffer, in
/// bytes (blocks of `block` bytes), for the collectives whose in-place layout is the
/// runtime's in-place forms': the whole buffer of an all-reduce, scan and exclusive scan
/// (`MPI_Allreduce`, `MPI_Scan`, `MPI_Exscan`: recvbuf holds the input), block `me` of an
/// all-gather (`MPI_Allgather`). `None` for the others, which the runtime passes with
/// their input apart (MPI's in-place reduce, gather and scatter are the root's only, and
/// its reduce-scatter's and all-to-all's input fills the buffer that the output is a
/// block of or replaces: no runtime form has those layouts).
pub(crate) fn mpi_in_place_offset(c: Collective, me: u32, block: usize) -> Option<usize> {
    match c {
        Collective::Allreduce | Collective::Scan | Collective::ExclusiveScan => Some(0),
        Collective::Allgather => Some(me as usize * block),
        _ => None,
    }
}

fn datatype(elem: Elem) -> Option<ffi::MPI_Datatype> {
    // SAFETY: reading extern constants of the MPI library.
    unsafe {
        Some(match elem {
            Elem::U8 => ffi::RSMPI_UINT8_T,
            Elem::U16 => ffi::RSMPI_UINT16_T,
            Elem::U32 => ffi::RSMPI_UINT32_T,
            Elem::U64 => ffi::RSMPI_UINT64_T,
            Elem::I8 => ffi::RSMPI_INT8_T,
            Elem::I16 => ffi::RSMPI_INT16_T,
            Elem::I32 => ffi::RSMPI_INT32_T,
            Elem::I64 => ffi::RSMPI_INT64_T,
            Elem::F32 => ffi::RSMPI_FLOAT,
            Elem::F64 => ffi::RSMPI_DOUBLE,
            _ => return None,
        })
    }
}

fn operator(op: Builtin) -> Option<ffi::MPI_Op> {
    // SAFETY: reading extern constants of the MPI library.
    unsafe {
        Some(match op {
            Builtin::Sum => ffi::RSMPI_SUM,
            Builtin::Product => ffi::RSMPI_PROD,
            Builtin::Min => ffi::RSMPI_MIN,
            Builtin::Max => ffi::RSMPI_MAX,
            Builtin::BitAnd => ffi::RSMPI_BAND,
            Builtin::BitOr => ffi::RSMPI_BOR,
            Builtin::BitXor => ffi::RSMPI_BXOR,
            _ => return None,
        })
    }
}

/// MPI's type of a reduction's elements, or why MPI cannot reduce them.
fn reduction_type(call: &NativeCall<'_>) -> std::result::Result<ffi::MPI_Datatype, String> {
    call.elem
        .and_then(datatype)
        .ok_or_else(|| "MPI reduces primitive numbers only (u8 … u64, i8 … i64, f32, f64)".into())
}

/// MPI's operator of a reduction, or why it has none.
fn reduction_op(call: &NativeCall<'_>) -> std::result::Result<ffi::MPI_Op, String> {
    call.op.and_then(operator).ok_or_else(|| {
        "MPI reduces with the built-in operators only (sum, product, min, max, bit_and, \
         bit_or, bit_xor), not a user operator"
            .into()
    })
}

/// A fixed-count native call made ready once: what `call` was (collective, count,
/// element type and operator, buffer lengths) and what MPI takes for it (datatype, count,
/// operator). A loop of the same call checks that its call is this one and calls MPI: it
/// skips the lengths, the datatype and operator look-ups and the count's conversion
/// (issue 20: hypercomm's dispatch in front of a sub-µs MPI call).
#[derive(Clone, Copy)]
pub(crate) struct Prepared {
    collective: Collective,
    len: usize,
    elem_bytes: usize,
    elem: Option<Elem>,
    op: Option<Builtin>,
    want_in: usize,
    want_out: usize,
    /// [`NativeCall::in_place`]: the input is in the output, MPI gets `MPI_IN_PLACE`.
    in_place: Option<usize>,
    dt: ffi::MPI_Datatype,
    count: c_int,
    mpi_op: ffi::MPI_Op,
}

impl Prepared {
    /// Whether `call` is the call this was made for, with buffers of its lengths.
    #[inline(always)]
    fn fits(&self, call: &NativeCall<'_>) -> bool {
        self.collective == call.collective
            && self.len == call.len
            && self.elem_bytes == call.elem_bytes
            && self.elem == call.elem
            && self.op == call.op
            && self.want_in == call.input.len()
            && self.want_out == call.output.len()
            && self.in_place == call.in_place
    }

    /// `call` checked and translated for MPI, or why MPI cannot run it.
    fn new(me: u32, k: u32, call: &NativeCall<'_>) -> Result<Prepared> {
        let c = call.collective;
        let kind = c.kind();
        let refuse = |reason: String| Error::Native {
            op: kind.to_string(),
            reason,
        };
        // The buffer lengths the runtime checked, checked again: MPI reads and writes
        // exactly this many bytes.
        let block = call.len * call.elem_bytes;
        let (mut want_in, want_out) = lengths(c, me, k as usize, block);
        if let Some(off) = call.in_place {
            // In place: no input apart, and the input where MPI reads it.
            if mpi_in_place_offset(c, me, block) != Some(off) {
                return Err(refuse(format!(
                    "its input at byte {off} of the buffer is not where MPI_IN_PLACE \
                     reads it"
                )));
            }
            want_in = 0;
        }
        if call.input.len() != want_in || call.output.len() != want_out {
            return Err(refuse(format!(
                "buffers of {} and {} bytes, expected {want_in} and {want_out}",
                call.input.len(),
                call.output.len()
            )));
        }
        if !matches!(
            c,
            Collective::Broadcast { .. }
                | Collective::Scatter { .. }
                | Collective::Gather { .. }
                | Collective::Allgather
                | Collective::Alltoall
                | Collective::Reduce { .. }
                | Collective::Allreduce
                | Collective::Scan
                | Collective::ExclusiveScan
                | Collective::ReduceScatter
        ) {
            return Err(refuse(
                "MPI has no collective for it (point-to-point: use send and receive)".into(),
            ));
        }
        let (dt, count) = if kind.is_reduction() {
            (reduction_type(call).map_err(refuse)?, call.len)
        } else {
            (bytes_type(), block)
        };
        let count = c_int::try_from(count)
            .map_err(|_| refuse(format!("{count} elements exceed MPI's count (a C int)")))?;
        let mpi_op = if kind.is_reduction() {
            reduction_op(call).map_err(refuse)?
        } else {
            // Unused: the collectives that do not reduce take no operator.
            // SAFETY: reading an extern constant of the MPI library.
            unsafe { ffi::RSMPI_SUM }
        };
        Ok(Prepared {
            collective: c,
            len: call.len,
            elem_bytes: call.elem_bytes,
            elem: call.elem,
            op: call.op,
            want_in,
            want_out,
            in_place: call.in_place,
            dt,
            count,
            mpi_op,
        })
    }

    /// Call MPI's collective on `input` and `output`, which [`Prepared::fits`] checked
    /// (`blocking`, returning `MPI_REQUEST_NULL` once done, else MPI's non-blocking one,
    /// returning its request).
    #[inline(always)]
    fn call(
        &self,
        comm: ffi::MPI_Comm,
        input: &[u8],
        output: &mut [u8],
        blocking: bool,
    ) -> Result<ffi::MPI_Request> {
        let (count, dt, mpi_op) = (self.count, self.dt, self.mpi_op);
        let send = match self.in_place {
            // SAFETY: reading a constant of the shim.
            Some(_) => (unsafe { HYPERCOMM_MPI_IN_PLACE }) as *const c_void,
            None => input.as_ptr() as *const c_void,
        };
        let recv = output.as_mut_ptr() as *mut c_void;
        let root = |r: u32| r as c_int;
        let mut req = crate::request_null();
        // `$b` blocking, else `$i` with the request's address as its last argument.
        macro_rules! either {
            ($b:ident, $i:ident, $($a:expr),*) => {
                if blocking {
                    ffi::$b($($a),*)
                } else {
                    ffi::$i($($a),*, &mut req)
                }
            };
        }
        // SAFETY: every buffer holds exactly what the call reads or writes on this rank
        // (`fits`: the lengths `Prepared::new` checked, `count` elements of `dt`, `k`
        // blocks where the collective gathers or scatters; in place, the input inside
        // the output where MPI reads it), and stays borrowed for the blocking call's
        // duration (`Transport::native` waits for a request before returning;
        // `Transport::native_start`'s caller keeps the memory until it completes).
        let rc = unsafe {
            match self.collective {
                Collective::Broadcast { root: r } => {
                    either!(MPI_Bcast, MPI_Ibcast, recv, count, dt, root(r), comm)
                }
                Collective::Scatter { root: r } => either!(
                    MPI_Scatter,
                    MPI_Iscatter,
                    send,
                    count,
                    dt,
                    recv,
                    count,
                    dt,
                    root(r),
                    comm
                ),
                Collective::Gather { root: r } => either!(
                    MPI_Gather,
                    MPI_Igather,
                    send,
                    count,
                    dt,
                    recv,
                    count,
                    dt,
                    root(r),
                    comm
                ),
                Collective::Allgather => either!(
                    MPI_Allgather,
                    MPI_Iallgather,
                    send,
                    count,
                    dt,
                    recv,
                    count,
                    dt,
                    comm
                ),
                Collective::Alltoall => either!(
                    MPI_Alltoall,
                    MPI_Ialltoall,
                    send,
                    count,
                    dt,
                    recv,
                    count,
                    dt,
                    comm
                ),
                Collective::Reduce { root: r } => either!(
                    MPI_Reduce,
                    MPI_Ireduce,
                    send,
                    recv,
                    count,
                    dt,
                    mpi_op,
                    root(r),
                    comm
                ),
                Collective::Allreduce => either!(
                    MPI_Allreduce,
                    MPI_Iallreduce,
                    send,
                    recv,
                    count,
                    dt,
                    mpi_op,
                    comm
                ),
                Collective::Scan => {
                    either!(MPI_Scan, MPI_Iscan, send, recv, count, dt, mpi_op, comm)
                }
                Collective::ExclusiveScan => {
                    either!(MPI_Exscan, MPI_Iexscan, send, recv, count, dt, mpi_op, comm)
                }
                Collective::ReduceScatter => either!(
                    MPI_Reduce_scatter_block,
                    MPI_Ireduce_scatter_block,
                    send,
                    recv,
                    count,
                    dt,
                    mpi_op,
                    comm
                ),
                // `Prepared::new` refuses the others.
                _ => success(),
            }
        };
        if rc != success() {
            return Err(failed(self.collective, rc));
        }
        Ok(req)
    }
}

/// A non-blocking collective started by `Transport::native_start` (`MPI_Iallreduce`,
/// …: MPI-3.1 §5.12): MPI's request, completed with `MPI_Test` and `MPI_Wait` on the
/// thread that started it (not `Send`: a raw MPI handle). MPI's own failure semantics,
/// as `NativeWait::Blocking`'s: `MPI_Wait` has no deadline and sees no failure notice.
pub(crate) struct Started {
    /// `MPI_REQUEST_NULL` once complete (MPI sets it so).
    req: ffi::MPI_Request,
    collective: Collective,
    /// A variable-count call's counts and displacements, which MPI reads until the
    /// request completes (dropped after [`Started`]'s drop has waited for it).
    _arrays: Option<Box<VarcountArrays>>,
}

impl Started {
    pub(crate) fn new(req: ffi::MPI_Request, collective: Collective) -> Started {
        Started {
            req,
            collective,
            _arrays: None,
        }
    }

    /// A started variable-count call ([`start_varcount`]), keeping the arrays MPI
    /// reads until it completes.
    pub(crate) fn keeping(
        req: ffi::MPI_Request,
        collective: Collective,
        arrays: Box<VarcountArrays>,
    ) -> Started {
        Started {
            req,
            collective,
            _arrays: Some(arrays),
        }
    }

    fn done(&self) -> bool {
        self.req == request_null()
    }
}

impl NativeRequest for Started {
    fn test(&mut self) -> Result<bool> {
        if self.done() {
            return Ok(true);
        }
        let mut flag: c_int = 0;
        // SAFETY: a live request of this process; MPI sets it to MPI_REQUEST_NULL once
        // complete.
        let rc = unsafe { ffi::MPI_Test(&mut self.req, &mut flag, ffi::RSMPI_STATUS_IGNORE) };
        if rc != success() {
            // An error completes the request as far as we are concerned: not again.
            self.req = request_null();
            return Err(failed(self.collective, rc));
        }
        Ok(flag != 0)
    }

    fn wait(&mut self) -> Result<()> {
        if self.done() {
            return Ok(());
        }
        // SAFETY: as in `test`.
        let rc = unsafe { ffi::MPI_Wait(&mut self.req, ffi::RSMPI_STATUS_IGNORE) };
        if rc != success() {
            self.req = request_null();
            return Err(failed(self.collective, rc));
        }
        Ok(())
    }
}

impl Drop for Started {
    /// Waits for an unfinished collective (its error is lost): MPI may write the
    /// buffers until then. After `MPI_Finalize` nothing can be waited for.
    fn drop(&mut self) {
        if !self.done() && !mpi_finalized() {
            let _ = self.wait();
        }
    }
}

/// MPI's error `rc` in a call of `c`.
#[cold]
fn failed(c: Collective, rc: c_int) -> Error {
    Error::Native {
        op: c.kind().to_string(),
        reason: error_string(rc),
    }
}

/// Run `call` on `comm` (this rank `me` of `k`) with MPI's blocking collective
/// (`MPI_Bcast`, … `MPI_Reduce_scatter_block`; `blocking`, returning `MPI_REQUEST_NULL`
/// once done), or start it as MPI's non-blocking one (`MPI_Ibcast`, …) and return its
/// request, which the caller waits for with the transport's failure checks and timeout.
/// `last` is the fixed-count call made ready last time: a call that [fits](Prepared::fits)
/// it goes to MPI at once; any other is checked and made ready, and kept in `last`.
#[inline(always)]
pub(crate) fn start(
    comm: ffi::MPI_Comm,
    me: u32,
    k: u32,
    call: NativeCall<'_>,
    blocking: bool,
    last: &mut Option<Prepared>,
    arrays: &mut VarcountArrays,
) -> Result<ffi::MPI_Request> {
    match last {
        Some(p) if p.fits(&call) => p.call(comm, call.input, call.output, blocking),
        // Inlined too: a result returned through memory costs up to 70 ns after a
        // barrier (MPI's stores still draining), as `Comm::collective` notes.
        // Non-blocking (`NativeWait::Checked`) on the kept arrays: the caller waits
        // for it before the next call. A started one (`Mpi::native_start`) has its own.
        _ if call.collective.kind().is_varcount() => {
            *last = None;
            start_varcount(comm, me, k, call, arrays, blocking)
        }
        _ => start_new(comm, me, k, call, blocking, last),
    }
}

/// [`start`] for a fixed-count call that is not the last one's (the variable-count
/// ones go to [`start_varcount`] from [`start`]).
#[inline(never)]
fn start_new(
    comm: ffi::MPI_Comm,
    me: u32,
    k: u32,
    call: NativeCall<'_>,
    blocking: bool,
    last: &mut Option<Prepared>,
) -> Result<ffi::MPI_Request> {
    *last = None;
    let p = Prepared::new(me, k, &call)?;
    *last = Some(p);
    p.call(comm, call.input, call.output, blocking)
}

/// The count and displacement arrays that MPI's variable-count calls take (C ints of
/// bytes; `MPI_Reduce_scatter`'s counts in elements), kept from the last variable-count
/// call with the counts and element size they were made for: a loop of calls with the
/// same counts converts them once instead of allocating five arrays per call (at 8 B on
/// 2 ranks those allocations were most of the 75 ns that `auto` (native) spent over
/// `MPI_Alltoallv` and `MPI_Allgatherv`: BENCHMARKS.md section 6).
#[derive(Debug, Default)]
pub(crate) struct VarcountArrays {
    /// Element size, send counts and receive counts the arrays are of.
    key: Option<(usize, Vec<usize>, Vec<usize>)>,
    scount: Vec<c_int>,
    sdispl: Vec<c_int>,
    rcount: Vec<c_int>,
    rdispl: Vec<c_int>,
    /// The receive counts in elements.
    relems: Vec<c_int>,
}

impl VarcountArrays {
    /// The arrays of `sc` and `rc` with elements of `eb` bytes: the kept ones if they
    /// are of the same, else made (and kept), or the reason a count or a total does not
    /// fit a C int (nothing kept).
    ///
    /// Inlined, the arrays made out of line: no result through memory on the path of a
    /// loop of calls (each such result cost up to tens of ns after a barrier).
    #[inline(always)]
    fn of(&mut self, sc: &[usize], rc: &[usize], eb: usize) -> std::result::Result<&Self, String> {
        let same = matches!(&self.key, Some((e, s, r)) if *e == eb && s[..] == *sc && r[..] == *rc);
        if !same {
            self.make(sc, rc, eb)?;
        }
        Ok(self)
    }

    #[inline(never)]
    fn make(&mut self, sc: &[usize], rc: &[usize], eb: usize) -> std::result::Result<(), String> {
        self.key = None;
        (self.scount, self.sdispl) = counts_and_displs(sc, eb)?;
        (self.rcount, self.rdispl) = counts_and_displs(rc, eb)?;
        self.relems = counts_and_displs(rc, 1)?.0;
        self.key = Some((eb, sc.to_vec(), rc.to_vec()));
        Ok(())
    }
}

/// C ints of `counts` times `scale`, and their prefix sums (MPI's `displs`), or the
/// reason they do not fit a C int.
fn counts_and_displs(
    counts: &[usize],
    scale: usize,
) -> std::result::Result<(Vec<c_int>, Vec<c_int>), String> {
    let mut displs = Vec::with_capacity(counts.len());
    let mut at = 0usize;
    let mut ints = Vec::with_capacity(counts.len());
    for &c in counts {
        let fit =
            |x: usize| c_int::try_from(x).map_err(|_| format!("{x} exceeds MPI's count (a C int)"));
        displs.push(fit(at)?);
        ints.push(fit(c * scale)?);
        at += c * scale;
    }
    fit_total(at)?;
    Ok((ints, displs))
}

#[inline(always)]
fn fit_total(x: usize) -> std::result::Result<c_int, String> {
    c_int::try_from(x).map_err(|_| too_large(x))
}

#[cold]
#[inline(never)]
fn too_large(x: usize) -> String {
    format!("{x} exceeds MPI's count (a C int)")
}

/// The variable-count collectives: `MPI_Gatherv`, `MPI_Scatterv`, `MPI_Allgatherv`,
/// `MPI_Alltoallv` (bytes, displacements the prefix sums of the counts) and
/// `MPI_Reduce_scatter` (elements of the primitive type, a built-in operator), blocking;
/// or (`blocking` false) MPI's non-blocking forms (`MPI_Igatherv`, `MPI_Iscatterv`,
/// `MPI_Iallgatherv`, `MPI_Ialltoallv`, `MPI_Ireduce_scatter`: MPI-3.1 §5.12) with
/// their request returned: then `arrays` (the counts and displacements MPI reads) and
/// the buffers must stay untouched until it completes (MPI-3.1 §5.12: they are the
/// call's arguments until then), which the caller ensures by waiting before the next
/// call or by keeping `arrays` with the request ([`Started::keeping`]).
#[inline(always)]
pub(crate) fn start_varcount(
    comm: ffi::MPI_Comm,
    me: u32,
    k: u32,
    call: NativeCall<'_>,
    arrays: &mut VarcountArrays,
    blocking: bool,
) -> Result<ffi::MPI_Request> {
    let c = call.collective;
    let kind = c.kind();
    let refuse = |reason: String| Error::Native {
        op: kind.to_string(),
        reason,
    };
    let (sc, rc) = (call.send_counts, call.recv_counts);
    let root = c.root().unwrap_or(0);
    let is_root = me == root;
    let eb = call.elem_bytes;
    let sum = |v: &[usize]| v.iter().sum::<usize>();
    // The lengths of this rank's buffers in bytes that MPI reads and writes.
    let one = |v: &[usize]| v.len() == 1;
    let (shape_ok, want_in, want_out) = match c {
        Collective::Gatherv { .. } => (
            one(sc) && rc.len() == k as usize,
            sum(sc),
            if is_root { sum(rc) } else { 0 },
        ),
        Collective::Scatterv { .. } => (
            sc.len() == k as usize && one(rc),
            if is_root { sum(sc) } else { 0 },
            sum(rc),
        ),
        Collective::Allgatherv => (one(sc) && rc.len() == k as usize, sum(sc), sum(rc)),
        Collective::Alltoallv => (
            sc.len() == k as usize && rc.len() == k as usize,
            sum(sc),
            sum(rc),
        ),
        _ => (
            rc.len() == k as usize,
            sum(rc),
            rc.get(me as usize).copied().unwrap_or(0),
        ),
    };
    if !shape_ok || call.input.len() != want_in * eb || call.output.len() != want_out * eb {
        return Err(refuse(format!(
            "counts {sc:?} / {rc:?} with buffers of {} and {} bytes do not agree",
            call.input.len(),
            call.output.len()
        )));
    }
    let send = call.input.as_ptr() as *const c_void;
    let recv = call.output.as_mut_ptr() as *mut c_void;
    let bytes = bytes_type();
    let a = arrays.of(sc, rc, eb).map_err(refuse)?;
    let (scount, sdispl, rcount, rdispl) = (&a.scount, &a.sdispl, &a.rcount, &a.rdispl);
    let own_send = fit_total(want_in * eb).map_err(refuse)?;
    let own_recv = fit_total(want_out * eb).map_err(refuse)?;
    let r = root as c_int;
    let mut req = crate::request_null();
    // SAFETY: every buffer holds exactly the bytes its counts name on this rank (checked
    // above), the count and displacement arrays have k entries where MPI reads k, and
    // all stay borrowed for the blocking call's duration, or (non-blocking) until the
    // request completes (this function's contract).
    let rc_ = unsafe {
        match (c, blocking) {
            (Collective::Gatherv { .. }, true) => ffi::MPI_Gatherv(
                send,
                own_send,
                bytes,
                recv,
                rcount.as_ptr(),
                rdispl.as_ptr(),
                bytes,
                r,
                comm,
            ),
            (Collective::Gatherv { .. }, false) => ffi::MPI_Igatherv(
                send,
                own_send,
                bytes,
                recv,
                rcount.as_ptr(),
                rdispl.as_ptr(),
                bytes,
                r,
                comm,
                &mut req,
            ),
            (Collective::Scatterv { .. }, true) => ffi::MPI_Scatterv(
                send,
                scount.as_ptr(),
                sdispl.as_ptr(),
                bytes,
                recv,
                own_recv,
                bytes,
                r,
                comm,
            ),
            (Collective::Scatterv { .. }, false) => ffi::MPI_Iscatterv(
                send,
                scount.as_ptr(),
                sdispl.as_ptr(),
                bytes,
                recv,
                own_recv,
                bytes,
                r,
                comm,
                &mut req,
            ),
            (Collective::Allgatherv, true) => ffi::MPI_Allgatherv(
                send,
                own_send,
                bytes,
                recv,
                rcount.as_ptr(),
                rdispl.as_ptr(),
                bytes,
                comm,
            ),
            (Collective::Allgatherv, false) => ffi::MPI_Iallgatherv(
                send,
                own_send,
                bytes,
                recv,
                rcount.as_ptr(),
                rdispl.as_ptr(),
                bytes,
                comm,
                &mut req,
            ),
            (Collective::Alltoallv, true) => ffi::MPI_Alltoallv(
                send,
                scount.as_ptr(),
                sdispl.as_ptr(),
                bytes,
                recv,
                rcount.as_ptr(),
                rdispl.as_ptr(),
                bytes,
                comm,
            ),
            (Collective::Alltoallv, false) => ffi::MPI_Ialltoallv(
                send,
                scount.as_ptr(),
                sdispl.as_ptr(),
                bytes,
                recv,
                rcount.as_ptr(),
                rdispl.as_ptr(),
                bytes,
                comm,
                &mut req,
            ),
            (_, blocking) => {
                let dt = reduction_type(&call).map_err(refuse)?;
                let op = reduction_op(&call).map_err(refuse)?;
                // MPI_Reduce_scatter's counts are in elements.
                let counts = a.relems.as_ptr();
                if blocking {
                    ffi::MPI_Reduce_scatter(send, recv, counts, dt, op, comm)
                } else {
                    ffi::MPI_Ireduce_scatter(send, recv, counts, dt, op, comm, &mut req)
                }
            }
        }
    };
    if rc_ != success() {
        return Err(refuse(error_string(rc_)));
    }
    Ok(req)
}

/// Bytes of rank `me`'s input and output for `c` on `k` ranks with blocks of `block`
/// bytes, as the runtime passes them ([`NativeCall`]).
fn lengths(c: Collective, me: u32, k: usize, block: usize) -> (usize, usize) {
    let all = k * block;
    match c {
        Collective::Broadcast { .. } => (0, block),
        Collective::Scatter { root } => (if me == root { all } else { 0 }, block),
        Collective::Gather { root } => (block, if me == root { all } else { 0 }),
        Collective::Allgather => (block, all),
        Collective::Alltoall => (all, all),
        Collective::Reduce { root } => (block, if me == root { block } else { 0 }),
        Collective::ReduceScatter => (all, block),
        _ => (block, block),
    }
}
