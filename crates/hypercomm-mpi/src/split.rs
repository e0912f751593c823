//! Sub-communicators and progress communicators over MPI: every one a real MPI
//! communicator (`MPI_Comm_split`, `MPI_Comm_split_type`, `MPI_Comm_idup` of the data
//! communicator), so MPI's own context isolation keeps their messages apart, and each
//! an [`Mpi`] of its own (its notice communicator, its generation, its deadlines).

use std::ffi::c_int;
use std::sync::{Arc, Condvar, Mutex, Weak};
use std::time::Instant;

use hypercomm::schedule::Rank;
use hypercomm_rt::immediate::Detach;
use hypercomm_rt::split::Split;
use hypercomm_rt::{Error, Result};
use mpi::ffi;

use crate::{error_string, success, Mpi};

/// MPI's error `rc` of `call` as this crate reports a failed communicator call.
fn failed(call: &'static str, rc: c_int) -> Error {
    Error::Unsupported {
        call,
        reason: error_string(rc),
    }
}

/// MPI's thread level, if MPI is initialized.
fn thread_level() -> c_int {
    let mut level: c_int = 0;
    // SAFETY: MPI_Query_thread may be called from any thread once MPI is initialized.
    unsafe { ffi::MPI_Query_thread(&mut level) };
    level
}

impl Split for Mpi {
    fn split(&mut self, color: Option<u32>, key: i32, _members: &[Rank]) -> Result<Option<Self>> {
        // SAFETY: reading an extern constant of the MPI library.
        let undefined = unsafe { ffi::RSMPI_UNDEFINED };
        let color = color.map_or(undefined, |c| c as c_int);
        // The others may have given up on this rank already (a late rank whose
        // all-gather messages were all sent before they timed out): their notices say so.
        self.peers_still_here()?;
        let mut sub = unsafe { ffi::RSMPI_COMM_NULL };
        // SAFETY: `data` is our live communicator; `sub` is ours if not null.
        let rc = unsafe { ffi::MPI_Comm_split(self.data, color, key, &mut sub) };
        if rc != success() {
            return Err(failed("split", rc));
        }
        if sub == unsafe { ffi::RSMPI_COMM_NULL } {
            return Ok(None);
        }
        // SAFETY: `sub` is a live intra-communicator only this `Mpi` will use.
        unsafe { Mpi::adopt(sub, &self.config(), None) }.map(Some)
    }

    /// `MPI_Comm_split_type(MPI_COMM_TYPE_SHARED)`, which blocks with no deadline, once
    /// every rank has joined an `MPI_Ibarrier` waited for at most the timeout: a rank
    /// that never calls it makes the others fail with [`Error::SetupTimeout`], not hang.
    /// (`split` needs no barrier: `Comm::split` all-gathers the colours first, a
    /// schedule whose waits are bounded, so every rank has reached `MPI_Comm_split`.)
    /// The ranks on time never hang; the late rank itself goes on to the blocking call
    /// only if no failure notice or departure of a peer arrived (a peer that gave up
    /// just as it came is a race this cannot close: MPI cannot cancel the barrier).
    /// After a time-out the communicator is unusable: its barrier stays pending.
    fn split_shared(&mut self) -> Option<Result<Self>> {
        let data = self.data;
        // SAFETY: a barrier has no buffers; `data` is our live communicator.
        let joined = unsafe {
            crate::settled(Box::new(()), self.timeout, |_, req| {
                ffi::MPI_Ibarrier(data, req)
            })
        };
        if let Err(e) = joined {
            let call = "the barrier before MPI_Comm_split_type";
            return Some(Err(e.error(self.rank as c_int, call, self.timeout)));
        }
        if let Err(e) = self.peers_still_here() {
            return Some(Err(e));
        }
        let mut sub = unsafe { ffi::RSMPI_COMM_NULL };
        // SAFETY: as in `split`; MPI_COMM_TYPE_SHARED and MPI_INFO_NULL are constants.
        let rc = unsafe {
            ffi::MPI_Comm_split_type(
                self.data,
                ffi::RSMPI_COMM_TYPE_SHARED,
                self.rank as c_int,
                ffi::RSMPI_INFO_NULL,
                &mut sub,
            )
        };
        if rc != success() {
            return Some(Err(failed("split_shared", rc)));
        }
        // SAFETY: as in `split`.
        Some(unsafe { Mpi::adopt(sub, &self.config(), None) })
    }
}

/// How many progress duplicates a communicator keeps for its requests: request n (in
/// start order, the same on every rank) runs on duplicate n mod `PROGRESS_SLOTS`, made
/// by the first request that needs it and kept for the later ones. A start whose
/// duplicate is still lent to a request (`PROGRESS_SLOTS` earlier) waits for that
/// request to end, which needs no call of this rank (its progress thread runs it).
pub(crate) const PROGRESS_SLOTS: usize = 4;

/// A communicator's progress duplicates, and how many requests it started.
#[derive(Default)]
pub(crate) struct Progress {
    slots: Vec<Arc<Slot>>,
    started: u64,
}

/// One progress duplicate: idle (here), lent to a request's progress thread, or lost
/// (its request failed or panicked: its `Mpi` was dropped, after telling its peers).
pub(crate) struct Slot {
    state: Mutex<State>,
    returned: Condvar,
}

enum State {
    Idle(Lent),
    Lent,
    /// The rank whose failure the lost duplicate had heard of, if any.
    Lost(Option<Rank>),
}

/// An [`Mpi`] on its way to or from a progress thread.
pub struct Lent(Box<Mpi>);

// SAFETY: MPI handles are plain values; with `MPI_THREAD_MULTIPLE` (checked before a
// duplicate is lent) any thread may use them, and one thread at a time uses a `Lent`.
unsafe impl Send for Lent {}

impl Slot {
    fn set(&self, state: State) {
        *self.state.lock().unwrap_or_else(|e| e.into_inner()) = state;
        self.returned.notify_all();
    }
}

impl Mpi {
    /// Where a progress duplicate goes when its request ends: back to its slot if the
    /// request left it clean, else (dropped) its slot is marked lost.
    pub(crate) fn give_back(self: Box<Self>) {
        let Some(home) = self.home.as_ref().and_then(Weak::upgrade) else {
            return; // the communicator that lent it is gone: drop it
        };
        if self.failed.is_none() && self.pending.is_empty() && self.discards.is_empty() {
            home.set(State::Idle(Lent(self)));
        }
    }

    /// A dropped progress duplicate's slot is lost (see `Drop for Mpi`).
    pub(crate) fn mark_lost(&mut self) {
        if let Some(home) = self.home.take().and_then(|h| h.upgrade()) {
            home.set(State::Lost(self.failed));
        }
    }

    /// A new progress duplicate: `MPI_Comm_idup` of the data communicator, completed
    /// here, on the rank's thread and in call order, and polled as a checked native
    /// collective (a failed or departed peer or the timeout ends it with an error, never
    /// a hang); then adopted as an `Mpi` of its own.
    fn make_progress_duplicate(&mut self) -> Result<Box<Mpi>> {
        // On the heap, and leaked if the wait fails: a late completion writes it.
        let comm = Box::leak(Box::new(unsafe { ffi::RSMPI_COMM_NULL }));
        let mut request = unsafe { ffi::RSMPI_REQUEST_NULL };
        // SAFETY: `data` is live; the duplicate is owned by the new `Mpi` once complete.
        let rc = unsafe { ffi::MPI_Comm_idup(self.data, comm, &mut request) };
        if rc != success() {
            // SAFETY: not started: MPI holds no pointer to it.
            drop(unsafe { Box::from_raw(comm) });
            return Err(failed("immediate", rc));
        }
        self.wait_native(request)?;
        // SAFETY: the duplicate is complete, and `comm` written for the last time: the
        // box is ours again.
        let comm = *unsafe { Box::from_raw(comm) };
        // SAFETY: only the `Mpi` made here uses the duplicate.
        // Its hosts are this communicator's: the same group.
        let hosts = Some(self.placement);
        Ok(Box::new(unsafe {
            Mpi::adopt(comm, &self.config(), hosts)
        }?))
    }
}

impl Detach for Mpi {
    type Detached = Lent;

    /// The progress duplicate of the next request (see `PROGRESS_SLOTS`): made by
    /// `MPI_Comm_idup` on this rank's thread the first time, then reused. MPI must
    /// run with `MPI_THREAD_MULTIPLE`.
    ///
    /// Only this rank's thread makes communicators: a progress thread only sends and
    /// receives on the duplicate lent to it. (Open MPI 4.1 never completed two
    /// `MPI_Comm_idup`s waited for by two progress threads at once: the hang of the
    /// first MPI version of `examples/subcomm.rs`.)
    /// With `MPI_THREAD_MULTIPLE` only.
    fn detachable(&self) -> bool {
        // SAFETY: reading an extern constant of the MPI library.
        thread_level() >= unsafe { ffi::RSMPI_THREAD_MULTIPLE }
    }

    fn detach(&mut self) -> Result<Lent> {
        if !self.detachable() {
            return Err(Error::Unsupported {
                call: "immediate",
                reason: "a request progresses on a thread of its own, which needs MPI \
                         initialized with MPI_THREAD_MULTIPLE \
                         (mpi::initialize_with_threading(Threading::Multiple))"
                    .into(),
            });
        }
        if let Some(rank) = self.failed {
            return Err(Error::PeerFailed { rank });
        }
        let n = (self.progress.started % PROGRESS_SLOTS as u64) as usize;
        if n == self.progress.slots.len() {
            let mut mpi = self.make_progress_duplicate()?;
            let slot = Arc::new(Slot {
                state: Mutex::new(State::Lent),
                returned: Condvar::new(),
            });
            mpi.home = Some(Arc::downgrade(&slot));
            self.progress.slots.push(slot);
            self.progress.started += 1;
            return Ok(Lent(mpi));
        }
        let slot = Arc::clone(&self.progress.slots[n]);
        let deadline = Instant::now() + self.timeout;
        let mut state = slot.state.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            match std::mem::replace(&mut *state, State::Lent) {
                State::Idle(lent) => {
                    self.progress.started += 1;
                    return Ok(lent);
                }
                State::Lent => {
                    let left = deadline.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        return Err(Error::Timeout {
                            rank: self.rank,
                            peer: self.rank,
                            step: 0,
                        });
                    }
                    state = slot
                        .returned
                        .wait_timeout(state, left)
                        .unwrap_or_else(|e| e.into_inner())
                        .0;
                }
                State::Lost(blamed) => {
                    *state = State::Lost(blamed);
                    return Err(match blamed {
                        Some(rank) => Error::PeerFailed { rank },
                        None => Error::Unsupported {
                            call: "immediate",
                            reason: format!(
                                "request {} {PROGRESS_SLOTS} earlier on this communicator \
                                 failed, and its progress communicator with it",
                                self.progress.started
                            ),
                        },
                    });
                }
            }
        }
    }

    fn attach(lent: Lent) -> Result<Self> {
        Ok(*lent.0)
    }

    fn retire(self) {
        Box::new(self).give_back();
    }
}
