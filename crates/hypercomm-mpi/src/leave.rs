//! Freeing a communicator only once nothing can arrive on it any more.
//!
//! A rank that drops an [`Mpi`](crate::Mpi) sends every peer a departure notice, its last
//! message on the data communicator. A peer that has dropped the same communicator
//! before never receives it, and a message nobody receives must not outlive its
//! communicator: Open MPI keeps a message for a freed communicator and delivers it to
//! the next communicator that gets the same context id, where it breaks the per-sender
//! sequence of that communicator's messages (its collectives and ours then never match:
//! the hang of the first MPI version of `examples/subcomm.rs`, whose sub-communicators
//! were freed with their peers' departure notices still on their way).
//!
//! So a dropped communicator is *buried*: its handles wait here until every peer's
//! departure notice (and every message before it) has been received and discarded;
//! only then is it freed. [`sweep`] looks at the buried ones without blocking, when a
//! communicator is dropped or made. The notice communicator is freed only if no rank
//! sent a failure notice on it (each departure says whether its rank did); otherwise,
//! like a communicator whose peers never leave (they failed or were killed), it is
//! left to `MPI_Finalize`.
//!
//! At `MPI_Finalize` the departure notices still on their way are received
//! ([`settle_at_finalize`]): MPI-3.1 §8.7 asks a process to "execute matching calls
//! needed to complete MPI communications initiated by other processes" before it
//! finalizes, and MPICH over UCX printed `UCX WARN unexpected tag-receive descriptor …
//! was not matched` at the end of runs whose last communicator was dropped while a
//! peer's notice was still in flight.

use std::ffi::{c_int, c_void};
use std::sync::{Mutex, Once};
use std::time::{Duration, Instant};

use hypercomm::schedule::Rank;
use mpi::ffi;

use crate::{mpi_finalized, success};

/// A departure notice: the communicator's generation, the rank its sender blames (itself
/// when it left normally), and whether its sender sent failure notices (1) or not (0).
pub(crate) type Departure = [u64; 3];

/// A dropped communicator whose peers may still send to it.
pub(crate) struct Dead {
    pub data: ffi::MPI_Comm,
    pub notices: ffi::MPI_Comm,
    pub leave_tag: c_int,
    pub generation: u64,
    /// Per peer: whether its departure notice was received.
    pub departed: Vec<bool>,
    /// Whether no rank (this one included, so far) sent a failure notice.
    pub clean: bool,
}

// SAFETY: MPI handles are plain values; they are used under the graveyard's lock only,
// and only by one thread at a time.
unsafe impl Send for Dead {}

static GRAVEYARD: Mutex<Vec<Dead>> = Mutex::new(Vec::new());

/// Keep `dead` until it can be freed (at once if it can).
pub(crate) fn bury(dead: Dead) {
    GRAVEYARD
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(dead);
    sweep();
}

/// Receive what arrived on the buried communicators; free those whose every peer left.
/// Never blocks.
pub(crate) fn sweep() {
    if mpi_finalized() {
        return;
    }
    let mut buried = GRAVEYARD.lock().unwrap_or_else(|e| e.into_inner());
    buried.retain_mut(|d| {
        for peer in 0..d.departed.len() {
            take_all(d, peer as Rank);
        }
        if d.departed.iter().any(|&gone| !gone) {
            return true;
        }
        // SAFETY: our duplicates; every message sent on the data communicator was
        // received, and on the notice communicator none was sent when `clean`.
        unsafe {
            ffi::MPI_Comm_free(&mut d.data);
            if d.clean {
                ffi::MPI_Comm_free(&mut d.notices);
            }
        }
        false
    });
}

/// Receive (and drop) every message of `peer` already here, up to its departure notice.
fn take_all(d: &mut Dead, peer: Rank) {
    let me_in_group = d.departed.len();
    if peer as usize >= me_in_group {
        return;
    }
    loop {
        let mut flag: c_int = 0;
        // SAFETY: reading an extern constant; MPI_Status is plain data.
        let mut message = unsafe { ffi::RSMPI_MESSAGE_NULL };
        let mut status: ffi::MPI_Status = unsafe { std::mem::zeroed() };
        // SAFETY: a probe on our own live data communicator.
        let rc = unsafe {
            ffi::MPI_Improbe(
                peer as c_int,
                ffi::RSMPI_ANY_TAG,
                d.data,
                &mut flag,
                &mut message,
                &mut status,
            )
        };
        if rc != success() || flag == 0 {
            return;
        }
        let mut count: ffi::MPI_Count = 0;
        // SAFETY: `status` describes the probed message.
        unsafe { ffi::MPI_Get_elements_x(&status, ffi::RSMPI_UINT8_T, &mut count) };
        let mut buf = vec![0u64; (count.max(0) as usize).div_ceil(8).max(3)];
        // SAFETY: `buf` holds the whole message; received at once (it is here).
        unsafe {
            ffi::MPI_Mrecv(
                buf.as_mut_ptr().cast(),
                count.max(0) as c_int,
                ffi::RSMPI_UINT8_T,
                &mut message,
                ffi::RSMPI_STATUS_IGNORE,
            )
        };
        if status.MPI_TAG == d.leave_tag && buf[0] == d.generation {
            d.departed[peer as usize] = true;
            d.clean &= buf[2] == 0;
        }
    }
}

/// How long `MPI_Finalize` waits for the departure notices of the buried communicators
/// whose peers all left normally (those of a failed peer never come: not waited for).
const FINALIZE_WAIT: Duration = Duration::from_secs(1);

/// Have `MPI_Finalize` receive the departure notices still on their way (once per
/// process): an attribute of `MPI_COMM_SELF` whose delete callback MPI calls first
/// thing in `MPI_Finalize` (MPI-3.1 §8.7.1), MPI still fully working, runs [`drain`].
pub(crate) fn settle_at_finalize() {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let mut keyval: c_int = 0;
        // SAFETY: plain MPI calls on MPI_COMM_SELF with callbacks of the right C
        // signatures; the attribute's value is unused (null).
        unsafe {
            let rc = ffi::MPI_Comm_create_keyval(
                Some(no_copy),
                Some(at_finalize),
                &mut keyval,
                std::ptr::null_mut(),
            );
            if rc == success() {
                ffi::MPI_Comm_set_attr(ffi::RSMPI_COMM_SELF, keyval, std::ptr::null_mut());
            }
        }
    });
}

/// `MPI_COMM_NULL_COPY_FN`: a duplicate of `MPI_COMM_SELF` does not get the attribute.
unsafe extern "C" fn no_copy(
    _: ffi::MPI_Comm,
    _: c_int,
    _: *mut c_void,
    _: *mut c_void,
    _: *mut c_void,
    flag: *mut c_int,
) -> c_int {
    // SAFETY: MPI passes a valid flag pointer.
    unsafe { *flag = 0 };
    success()
}

/// The attribute's delete callback: `MPI_Finalize` has begun.
unsafe extern "C" fn at_finalize(
    _: ffi::MPI_Comm,
    _: c_int,
    _: *mut c_void,
    _: *mut c_void,
) -> c_int {
    drain(FINALIZE_WAIT);
    success()
}

/// [`sweep`] until no buried communicator whose peers left normally waits for a
/// departure notice, or `limit` has passed.
fn drain(limit: Duration) {
    let start = Instant::now();
    loop {
        sweep();
        let waiting = GRAVEYARD
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .any(|d| d.clean);
        if !waiting || start.elapsed() >= limit {
            return;
        }
        std::thread::sleep(Duration::from_micros(100));
    }
}
