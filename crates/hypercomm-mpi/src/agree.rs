//! Bounded agreement for a job's set-up: the few collectives a program runs on a plain
//! MPI communicator before it builds a hypercomm one (what memory each rank may take,
//! which calibration every rank prices with, how many ranks share a machine), each
//! waited for at most a timeout.
//!
//! MPI's blocking forms (`MPI_Bcast`, `MPI_Allreduce`, `MPI_Comm_split_type`) wait for
//! every rank forever: one rank that stalls before it joins hangs the rest. These start
//! the nonblocking form (`MPI_Ibcast`, `MPI_Iallreduce`, `MPI_Iallgather`) and poll it
//! (with a deadline, yielding the core between polls), so a rank that waits on one that
//! does not join within the timeout gets an [`Error::SetupTimeout`] naming the call, and
//! the late rank itself times out when it arrives (the others left), never a hang. A
//! rank that need not wait for the late one (a broadcast's root, an all-gather's ranks
//! once its data reached them) may complete the call and fail in a later one. MPI cannot cancel
//! a collective: the abandoned one's buffers are leaked, and the program should end (as
//! `hypercomm-mpi` does, exit 1, with [`exit_watchdog`](super::exit_watchdog) bounding
//! `MPI_Finalize`).

use std::time::Duration;

use hypercomm::schedule::Rank;
use hypercomm_rt::{Error, Result};
use mpi::ffi;
use mpi::raw::AsRaw;
use mpi::traits::Communicator;

use super::{host_ids, placement_of, rank_of, settled, Unsettled};

/// The least of every rank's `value` on `comm` (`MPI_Iallreduce` with `MPI_MIN`),
/// waited for at most `timeout`; `call` names it in the error. Collective over `comm`.
pub fn all_min_within<C>(comm: &C, value: u64, timeout: Duration, call: &'static str) -> Result<u64>
where
    C: Communicator + AsRaw<Raw = ffi::MPI_Comm>,
{
    let raw = comm.as_raw();
    let buffers = Box::new((value, 0u64));
    // SAFETY: one u64 in, one out, both in `buffers`, on a live communicator.
    let done = unsafe {
        settled(buffers, timeout, |(mine, least), req| {
            ffi::MPI_Iallreduce(
                (mine as *const u64).cast(),
                (least as *mut u64).cast(),
                1,
                ffi::RSMPI_UINT64_T,
                ffi::RSMPI_MIN,
                raw,
                req,
            )
        })
    }
    .map_err(|e| e.error(rank_of(raw), call, timeout))?;
    Ok(done.1)
}

/// `root`'s `bytes` on every rank of `comm` (the others' `bytes` are ignored): its length
/// and then its bytes (`MPI_Ibcast`, skipped when empty), each waited for at most
/// `timeout`; `call` names it in the error. Collective over `comm`. An out-of-range
/// `root` is a [`RankOutOfRange`](hypercomm::error::Error::RankOutOfRange) on every
/// rank, before any message.
pub fn broadcast_within<C>(
    comm: &C,
    root: Rank,
    bytes: Vec<u8>,
    timeout: Duration,
    call: &'static str,
) -> Result<Vec<u8>>
where
    C: Communicator + AsRaw<Raw = ffi::MPI_Comm>,
{
    let size = comm.size() as Rank;
    if root >= size {
        return Err(Error::Library(hypercomm::error::Error::RankOutOfRange {
            what: "root",
            rank: u64::from(root),
            nodes: size,
        }));
    }
    let raw = comm.as_raw();
    let me = rank_of(raw);
    let root_c = root as std::ffi::c_int;
    let fail = |e: Unsettled| e.error(me, call, timeout);
    let len = Box::new(if me == root_c { bytes.len() as u64 } else { 0 });
    // SAFETY: one u64 in `len`, on a live communicator.
    let len = unsafe {
        settled(len, timeout, |len, req| {
            ffi::MPI_Ibcast(
                (len as *mut u64).cast(),
                1,
                ffi::RSMPI_UINT64_T,
                root_c,
                raw,
                req,
            )
        })
    }
    .map_err(fail)?;
    let len = usize::try_from(*len).map_err(|_| Error::Unsupported {
        call,
        reason: format!("{len} bytes do not fit this rank's memory"),
    })?;
    // Not an empty buffer: Open MPI refuses its dangling address (MPI_ERR_ARG).
    if len == 0 {
        return Ok(Vec::new());
    }
    // Refused on every rank alike (all have the root's length), before a buffer.
    let count = std::ffi::c_int::try_from(len).map_err(|_| Error::Unsupported {
        call,
        reason: format!("{len} bytes are more than one MPI count"),
    })?;
    let mut data = if me == root_c { bytes } else { Vec::new() };
    data.resize(len, 0);
    // SAFETY: `len` bytes in the vector the box holds (its heap buffer does not move),
    // on a live communicator.
    let data = unsafe {
        settled(Box::new(data), timeout, |data, req| {
            ffi::MPI_Ibcast(
                data.as_mut_ptr().cast(),
                count,
                ffi::RSMPI_UINT8_T,
                root_c,
                raw,
                req,
            )
        })
    }
    .map_err(fail)?;
    Ok(*data)
}

/// How many ranks of `comm` run on this rank's machine (this rank included): what
/// `MPI_Comm_split_type(MPI_COMM_TYPE_SHARED)`'s communicator counts, told from one
/// all-gather of the ranks' machines (the host names and boot ids that
/// [`ranks_per_host`](super::ranks_per_host) tells hosts by) waited for at most
/// `timeout`, not from that blocking split. Collective over `comm`.
pub fn ranks_on_machine_within<C>(comm: &C, timeout: Duration) -> Result<usize>
where
    C: Communicator + AsRaw<Raw = ffi::MPI_Comm>,
{
    Ok(machine_and_hosts_within(comm, timeout)?.0)
}

/// [`ranks_on_machine_within`] and [`ranks_per_host`](super::ranks_per_host) from one
/// all-gather, waited for at most `timeout` (an MPI failure is an error here, where
/// `ranks_per_host` takes one host). Collective over `comm`.
pub fn machine_and_hosts_within<C>(comm: &C, timeout: Duration) -> Result<(usize, Option<u32>)>
where
    C: Communicator + AsRaw<Raw = ffi::MPI_Comm>,
{
    let raw = comm.as_raw();
    let me = rank_of(raw);
    let ids = host_ids(raw, timeout)
        .map_err(|e| e.error(me, "the all-gather of the ranks' machines", timeout))?;
    let mine = ids.get(me as usize).map(|r| r[1]);
    let here = ids.iter().filter(|r| Some(r[1]) == mine).count().max(1);
    Ok((here, placement_of(&ids).ranks_per_host))
}
