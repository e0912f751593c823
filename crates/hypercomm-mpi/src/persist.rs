//! Persistent plans on MPI: requests made for a plan once ([`Transport::persist`]).
//!
//! When a `plan_*` is made on this backend, every message of the plan's schedule gets a
//! channel: a staging buffer of its own, a peer and a fixed MPI tag, made once (with an
//! MPI persistent request, `MPI_Send_init` / `MPI_Recv_init`, under
//! `HYPERCOMM_MPI_STAGED=init`). Each run posts the step's sends, then its receives
//! (fresh `MPI_Isend`/`MPI_Irecv` with the fixed tags by default, from and into the
//! caller's memory where a message is one region and the channels' buffers otherwise,
//! the data copied in and out; `MPI_Start` of the persistent requests, on the buffers,
//! under `init`), waits for them all at once (`MPI_Testall`, polled with the failure notices and
//! the deadline, as every wait of the backend), and copies or combines the receive
//! buffers into place. A run thus skips the per-message protocol of a plain call: no
//! probe (`MPI_Improbe`/`MPI_Imrecv`), no tag decoding, no datatype, no list of pending
//! requests, one wait per step.
//!
//! What keeps a run as safe as a plain call:
//! - The tags are outside every plain call's (above the departure tag), one per step and
//!   per message between two ranks in that step: a plain call's probe never meets a
//!   persistent message of a plan run in the same order on every rank, and a persistent
//!   receive never matches a plain message.
//! - Only plans whose every message is at most [`MAX_STAGED`] bytes get requests (the
//!   small calls, where the protocol is the cost): below the eager limit of Open MPI's
//!   shared-memory transport, a message longer than its receive is reported truncated
//!   (never written past the buffer, which the single-copy path of long messages may do);
//!   a shorter one is [`Error::LengthMismatch`]. The ranks agree on it when the plan is
//!   made (an `MPI_Iallreduce`, waited for as a native collective is), so a plan is
//!   staged on every rank or on none: `plan_*` is collective on MPI, as
//!   `MPI_Allreduce_init` is.
//! - A failure notice, a departed peer (its departure notice, after a grace) or the
//!   timeout ends a wait with the same errors as a plain call's; the requests are then
//!   cancelled where MPI can, the plan never runs them again (its next runs go the plain
//!   way), and its buffers are leaked rather than freed under a request MPI may still
//!   complete.
//! - Dropping the plan frees its persistent requests (`MPI_Request_free`), unless MPI was
//!   finalized already (then nothing is freed).

use std::any::Any;
use std::ffi::c_int;
use std::ops::Range;
use std::time::{Duration, Instant};

use hypercomm_rt::transport::{Channel, Channels};
use hypercomm_rt::{Error, Result};
use mpi::ffi;

use crate::{bytes_type, mpi_finalized, request_null, success, Mpi, YIELD_FOR};

/// The largest message a persistent request carries (bytes): Open MPI's shared-memory
/// eager limit (`btl_vader_eager_limit`, 4 KiB by default).
pub const MAX_STAGED: usize = 4096;

/// How a plan's channels run: by default each run posts fresh non-blocking requests
/// (`MPI_Irecv`, then `MPI_Isend`) on the channels' fixed buffers and tags;
/// `HYPERCOMM_MPI_STAGED=init` starts persistent requests (`MPI_Send_init` /
/// `MPI_Recv_init`, made once) instead. On Open MPI 4.1 (ob1, shared memory) starting a
/// persistent request costs more than posting a fresh one, which takes the inline send
/// path: 0.59 against 0.37 µs per 8-byte exchange on 2 ranks
/// (docs/perf-log/2026-11-27-mpi-persistent-requests.md).
fn post_mode() -> bool {
    std::env::var("HYPERCOMM_MPI_STAGED").map_or(true, |v| v != "init")
}

/// `HYPERCOMM_MPI_STAGED=off`: no plan is staged; persistent runs post as plain calls do
/// (the path before staging, for comparison). Read on every rank alike (`mpirun -x`).
fn staging_off() -> bool {
    std::env::var("HYPERCOMM_MPI_STAGED").is_ok_and(|v| v == "off")
}

/// Messages between two ranks in one step of one plan with tags of their own.
const PER_STEP: u64 = 64;

/// One plan's persistent requests and their buffers.
pub(crate) struct MpiChannels {
    /// The data communicator and its generation: whose requests these are.
    comm: ffi::MPI_Comm,
    generation: u64,
    reqs: Vec<ffi::MPI_Request>,
    statuses: Vec<ffi::MPI_Status>,
    channels: Vec<Channel>,
    /// Where each channel's buffer starts in `mem` (at a multiple of 8 bytes).
    offs: Vec<usize>,
    mem: Vec<u8>,
    /// A run failed: requests may still be active; never start them again.
    broken: bool,
    /// Each channel's MPI tag.
    tags: Vec<c_int>,
    /// Per channel: the caller's memory its next run uses instead of its buffer
    /// ([`Channels::direct`], post mode only), null otherwise.
    direct: Vec<*mut u8>,
    /// Post fresh requests per run (`MPI_Irecv`/`MPI_Isend` on the channels' buffers and
    /// tags) instead of starting persistent ones.
    post: bool,
}

// SAFETY: the handles are plain values that MPI lets any thread use (MPI is used from
// one thread at a time: the plan's mutex holds these while a run uses them).
unsafe impl Send for MpiChannels {}

impl Channels for MpiChannels {
    fn buffer(&mut self, i: usize) -> &mut [u8] {
        let len = self.channels[i].len;
        &mut self.mem[self.offs[i]..self.offs[i] + len]
    }
    fn as_any(&mut self) -> &mut dyn Any {
        self
    }
    unsafe fn direct(&mut self, i: usize, ptr: *mut u8) -> bool {
        if self.post && !self.broken {
            self.direct[i] = ptr;
        }
        self.post && !self.broken
    }
}

impl Drop for MpiChannels {
    fn drop(&mut self) {
        if mpi_finalized() || self.broken {
            // After MPI_Finalize nothing may be freed; after a failed run a request may
            // still complete into its buffer.
            std::mem::forget(std::mem::take(&mut self.mem));
            if mpi_finalized() {
                return;
            }
        }
        for r in self.reqs.iter_mut().filter(|r| **r != request_null()) {
            // SAFETY: our persistent requests, inactive (or, when broken, released to
            // complete on their own, their buffers leaked above).
            unsafe { ffi::MPI_Request_free(r) };
        }
    }
}

impl Mpi {
    /// [`Transport::persist`]: persistent requests for `channels`, if every rank's
    /// plan qualifies (see the module's notes).
    pub(crate) fn persist_channels(
        &mut self,
        channels: &[Channel],
    ) -> Option<Result<Box<dyn Channels>>> {
        if self.size <= 1 || staging_off() {
            return None;
        }
        let mut k = vec![0u64; channels.len()];
        let mut fits = true;
        for (i, c) in channels.iter().enumerate() {
            let same = channels[..i]
                .iter()
                .filter(|d| d.step == c.step && d.peer == c.peer && d.send == c.send)
                .count() as u64;
            k[i] = same;
            fits &= c.len <= MAX_STAGED && same < PER_STEP && c.peer < self.size;
            fits &= c.peer != self.rank;
        }
        match self.agree_all(fits) {
            Ok(true) => {}
            Ok(false) => return None,
            Err(e) => return Some(Err(e)),
        }
        let mut offs = Vec::with_capacity(channels.len());
        let mut words = 0;
        for c in channels {
            offs.push(words * 8);
            words += c.len.div_ceil(8).max(1);
        }
        let mut made = MpiChannels {
            comm: self.data,
            generation: self.generation,
            reqs: vec![request_null(); channels.len()],
            // SAFETY: MPI_Status is plain data.
            statuses: vec![unsafe { std::mem::zeroed() }; channels.len()],
            channels: channels.to_vec(),
            offs,
            mem: vec![0; words * 8],
            broken: false,
            tags: Vec::with_capacity(channels.len()),
            direct: vec![std::ptr::null_mut(); channels.len()],
            post: post_mode(),
        };
        // Tags above the departure tag (`leave_tag = 2^b`, every tag below `2^(b+1)` is
        // within MPI_TAG_UB).
        let span = self.leave_tag as u64 - 1;
        for (i, c) in channels.iter().enumerate() {
            let tag =
                (self.leave_tag as u64 + 1 + (c.step as u64 * PER_STEP + k[i]) % span) as c_int;
            made.tags.push(tag);
            if made.post {
                continue;
            }
            let ptr = made.buffer(i).as_mut_ptr().cast();
            let req = &mut made.reqs[i];
            // SAFETY: the buffer lives in `made.mem`, whose heap memory never moves
            // and outlives the request (freed in `Drop`, or leaked).
            let rc = unsafe {
                if c.send {
                    ffi::MPI_Send_init(
                        ptr,
                        c.len as c_int,
                        bytes_type(),
                        c.peer as c_int,
                        tag,
                        self.data,
                        req,
                    )
                } else {
                    ffi::MPI_Recv_init(
                        ptr,
                        c.len as c_int,
                        bytes_type(),
                        c.peer as c_int,
                        tag,
                        self.data,
                        req,
                    )
                }
            };
            if rc != success() {
                return Some(Err(self.mpi_error(c.peer, rc)));
            }
        }
        Some(Ok(Box::new(made)))
    }

    /// Whether every rank says `yes` (a logical and over the communicator, waited for
    /// with the failure notices and the deadline).
    fn agree_all(&mut self, yes: bool) -> Result<bool> {
        let mine: u64 = u64::from(!yes);
        let mut any_no = Box::new([0u64]);
        let send = Box::new([mine]);
        let mut req = request_null();
        // SAFETY: both boxes outlive the request: it completes in `wait_native`, or is
        // abandoned on an error, after which the boxes are leaked.
        let rc = unsafe {
            ffi::MPI_Iallreduce(
                send.as_ptr().cast(),
                any_no.as_mut_ptr().cast(),
                1,
                ffi::RSMPI_UINT64_T,
                ffi::RSMPI_MAX,
                self.data,
                &mut req,
            )
        };
        if rc != success() {
            return Err(self.mpi_error(self.rank, rc));
        }
        if let Err(e) = self.wait_native(req) {
            std::mem::forget(send);
            std::mem::forget(any_no);
            return Err(e);
        }
        Ok(any_no[0] == 0)
    }

    /// Whether `channels` are this communicator's.
    pub(crate) fn owns(&self, channels: &mut dyn Channels) -> bool {
        channels
            .as_any()
            .downcast_mut::<MpiChannels>()
            .is_some_and(|c| c.comm == self.data && c.generation == self.generation && !c.broken)
    }

    /// [`Transport::run_channels`]: start `range` and wait for it.
    pub(crate) fn run_staged(
        &mut self,
        channels: &mut dyn Channels,
        range: Range<usize>,
    ) -> Result<()> {
        let Some(ch) = channels.as_any().downcast_mut::<MpiChannels>() else {
            return Err(Error::InvalidProgram {
                rank: self.rank,
                step: 0,
                reason: "persistent requests of another backend".into(),
            });
        };
        if let Some(rank) = self.failed {
            return Err(Error::PeerFailed { rank });
        }
        let result = self.start_and_wait(ch, range.clone());
        if result.is_err() {
            ch.broken = true;
            for i in range.clone().filter(|&i| !ch.channels[i].send) {
                if ch.reqs[i] != request_null() {
                    // SAFETY: cancelling our own receive (a no-op when it completed).
                    unsafe { ffi::MPI_Cancel(&mut ch.reqs[i]) };
                }
            }
            if ch.post {
                // Fresh requests may name the caller's memory: complete (or, after the
                // grace, release) them before returning, as `cancel_all` does.
                Self::drain(&mut ch.reqs[range.clone()], self.grace);
            }
        }
        for d in &mut ch.direct[range] {
            *d = std::ptr::null_mut();
        }
        result
    }

    fn start_and_wait(&mut self, ch: &mut MpiChannels, range: Range<usize>) -> Result<()> {
        let n = range.len() as c_int;
        // Sends first, then receives, as a plain call posts (receives first measured
        // 20 ns slower at 8 B on 2 ranks).
        for pass_send in [true, false] {
            for i in range.clone().filter(|&i| ch.channels[i].send == pass_send) {
                let c = ch.channels[i];
                let ptr = ch.offs[i];
                let rc = if ch.post {
                    let buf = match ch.direct[i] {
                        d if d.is_null() => ch.mem[ptr..].as_mut_ptr().cast(),
                        d => d.cast(),
                    };
                    let (len, peer, tag) = (c.len as c_int, c.peer as c_int, ch.tags[i]);
                    // SAFETY: the channel's buffer outlives the request (see `Drop`).
                    unsafe {
                        if c.send {
                            ffi::MPI_Isend(
                                buf,
                                len,
                                bytes_type(),
                                peer,
                                tag,
                                ch.comm,
                                &mut ch.reqs[i],
                            )
                        } else {
                            ffi::MPI_Irecv(
                                buf,
                                len,
                                bytes_type(),
                                peer,
                                tag,
                                ch.comm,
                                &mut ch.reqs[i],
                            )
                        }
                    }
                } else {
                    // SAFETY: an inactive persistent request of ours, its buffer filled.
                    unsafe { ffi::MPI_Start(&mut ch.reqs[i]) }
                };
                if rc != success() {
                    return Err(self.mpi_error(c.peer, rc));
                }
            }
        }
        let reqs = ch.reqs[range.clone()].as_mut_ptr();
        let start = Instant::now();
        let mut polls: u32 = 0;
        let mut nap = Duration::from_micros(20);
        loop {
            let mut flag: c_int = 0;
            let statuses = ch.statuses[range.clone()].as_mut_ptr();
            // SAFETY: the step's started requests (persistent: they stay allocated).
            let rc = unsafe { ffi::MPI_Testall(n, reqs, &mut flag, statuses) };
            if rc != success() {
                let peer = ch.channels[range.start].peer;
                return Err(self.mpi_error(peer, rc));
            }
            if flag != 0 {
                return self.check_lengths(ch, range);
            }
            self.check_notices()?;
            polls = polls.saturating_add(1);
            if polls <= self.spin {
                std::hint::spin_loop();
                continue;
            }
            if start.elapsed() >= self.timeout {
                let c = ch.channels[range.start];
                return Err(Error::Timeout {
                    rank: self.rank,
                    peer: c.peer,
                    step: c.step,
                });
            }
            if start.elapsed() < YIELD_FOR {
                std::thread::yield_now();
                continue;
            }
            // A peer of the step that left: an error once it has been gone for the grace
            // period (it leaves after its own sends and receives completed, so one that
            // it took completes by then).
            for c in range.clone() {
                self.check_departed(ch.channels[c].peer)?;
            }
            std::thread::sleep(nap);
            nap = (nap * 2).min(Duration::from_micros(500));
        }
    }

    /// Every receive of the step got a message of its length.
    fn check_lengths(&mut self, ch: &MpiChannels, range: Range<usize>) -> Result<()> {
        for i in range {
            let c = ch.channels[i];
            if c.send {
                continue;
            }
            let mut count: c_int = 0;
            // SAFETY: the status of a completed receive.
            unsafe { ffi::MPI_Get_count(&ch.statuses[i], bytes_type(), &mut count) };
            if count as usize != c.len {
                return Err(Error::LengthMismatch {
                    rank: self.rank,
                    peer: c.peer,
                    step: c.step,
                    expected: c.len,
                    got: count.max(0) as usize,
                });
            }
        }
        Ok(())
    }
}
