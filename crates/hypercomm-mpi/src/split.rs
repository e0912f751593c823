//! Sub-communicators and progress communicators over MPI: every one a real MPI
//! communicator (`MPI_Comm_split`, `MPI_Comm_split_type`, `MPI_Comm_idup` of the data
//! communicator), so MPI's own context isolation keeps their messages apart, and each
//! an [`Mpi`] of its own (its notice communicator, its generation, its deadlines).

use std::ffi::c_int;

use hypercomm::schedule::Rank;
use hypercomm_rt::immediate::Detach;
use hypercomm_rt::split::Split;
use hypercomm_rt::{Error, Result};
use mpi::ffi;

use crate::{error_string, success, Config, Mpi};

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
        Ok(Some(unsafe { Mpi::adopt(sub, &self.config()) }))
    }

    fn split_shared(&mut self) -> Option<Result<Self>> {
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
        Some(Ok(unsafe { Mpi::adopt(sub, &self.config()) }))
    }
}

/// A duplicate of the data communicator on its way (`MPI_Comm_idup`), for a progress
/// thread.
pub struct Duplicate {
    comm: ffi::MPI_Comm,
    request: ffi::MPI_Request,
    config: Config,
}

// SAFETY: MPI handles are plain values; with `MPI_THREAD_MULTIPLE` (checked before one
// is made) any thread may use them, and only the progress thread uses these.
unsafe impl Send for Duplicate {}

impl Detach for Mpi {
    type Detached = Duplicate;

    /// `MPI_Comm_idup` of the data communicator: ordered with this rank's other calls
    /// on it, and not blocking. MPI must run with `MPI_THREAD_MULTIPLE`.
    fn detach(&mut self) -> Result<Duplicate> {
        let level = thread_level();
        // SAFETY: reading an extern constant of the MPI library.
        if level < unsafe { ffi::RSMPI_THREAD_MULTIPLE } {
            return Err(Error::Unsupported {
                call: "immediate",
                reason: "a request progresses on a thread of its own, which needs MPI \
                         initialized with MPI_THREAD_MULTIPLE \
                         (mpi::initialize_with_threading(Threading::Multiple))"
                    .into(),
            });
        }
        let mut comm = unsafe { ffi::RSMPI_COMM_NULL };
        let mut request = unsafe { ffi::RSMPI_REQUEST_NULL };
        // SAFETY: `data` is live; the duplicate and the request are completed and owned
        // by the progress thread (`attach`).
        let rc = unsafe { ffi::MPI_Comm_idup(self.data, &mut comm, &mut request) };
        if rc != success() {
            return Err(failed("immediate", rc));
        }
        Ok(Duplicate {
            comm,
            request,
            config: self.config(),
        })
    }

    fn attach(d: Duplicate) -> Result<Self> {
        let Duplicate {
            comm,
            mut request,
            config,
        } = d;
        // SAFETY: the request of `MPI_Comm_idup`, completed here once.
        let rc = unsafe { ffi::MPI_Wait(&mut request, ffi::RSMPI_STATUS_IGNORE) };
        if rc != success() {
            return Err(failed("immediate", rc));
        }
        // SAFETY: the duplicate is complete, and only this progress thread uses it.
        Ok(unsafe { Mpi::adopt(comm, &config) })
    }
}
