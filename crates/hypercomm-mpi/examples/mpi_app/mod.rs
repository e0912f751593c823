//! The MPI side of the application examples: each `examples/<name>.rs` includes the
//! runtime's kernels (`hypercomm-rt/examples/apps/mod.rs`, generic over the transport,
//! the same code the threads examples run) and hands one to [`main`], which runs it on
//! every rank of `MPI_COMM_WORLD` with [`hypercomm_mpi::run`]. Each rank checks its part
//! against the serial computation; the ranks then agree (`MPI_Allreduce`) on whether
//! every one passed, rank 0 prints its summary and the verdict, and every rank exits 1
//! if any failed (a mismatch or an error), so `mpirun` exits non-zero.
//!
//! ```text
//! mpirun -n 4 target/release/examples/<name> [algorithm (auto)] [n] [--timeout S] [--corrupt R]
//! ```
//!
//! `--corrupt R` is the test of the check itself: rank R's transport flips one exponent
//! bit of every 8-byte word of each message it sends of more than two words (the data
//! of the kernels' collectives, not the scalars that steer them: norms, pivot choices),
//! and the run must end with a mismatch, not with "matched".

use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

use hypercomm::schedule::Rank;
use hypercomm_mpi::{exit_watchdog, mpi, Config, Mpi};
use hypercomm_rt::transport::{Incoming, Part, PartMut, Tag};
use hypercomm_rt::{Algo, Calibration, Comm, Result as RtResult, Transport};
use mpi::collective::SystemOperation;
use mpi::traits::*;

use crate::apps::Summary;

/// A kernel on a communicator over MPI.
pub type Kernel<X> = fn(&mut Comm<X>, usize, Algo) -> Result<Summary, String>;

/// The parsed command line.
struct Args {
    algo: String,
    n: usize,
    timeout: Duration,
    corrupt: Option<Rank>,
}

fn parse(default_n: usize) -> Result<Args, String> {
    let mut args = Args {
        algo: "auto".into(),
        n: default_n,
        timeout: Duration::from_secs(60),
        corrupt: None,
    };
    let mut positional = 0;
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let mut value = |what: &str| it.next().ok_or(format!("{what} needs a value"));
        match a.as_str() {
            "--timeout" => {
                let v = value("--timeout")?;
                let secs: f64 = v.parse().map_err(|_| format!("bad --timeout {v}"))?;
                args.timeout =
                    Duration::try_from_secs_f64(secs).map_err(|_| format!("bad --timeout {v}"))?;
            }
            "--corrupt" => {
                let v = value("--corrupt")?;
                args.corrupt = Some(v.parse().map_err(|_| format!("bad --corrupt {v}"))?);
            }
            _ if a.starts_with("--") => return Err(format!("unknown option {a}")),
            _ => {
                match positional {
                    0 => args.algo = a,
                    1 => match a.parse() {
                        Ok(n) if n > 0 => args.n = n,
                        _ => return Err(format!("bad n {a}")),
                    },
                    _ => return Err(format!("unexpected argument {a}")),
                }
                positional += 1;
            }
        }
    }
    Ok(args)
}

/// The example's `main`: runs `kernel` on every rank (`corrupting` is the same kernel
/// on the corrupting transport, for `--corrupt`); see the module's documentation.
pub fn main(
    name: &str,
    default_n: usize,
    kernel: Kernel<Mpi>,
    corrupting: Kernel<Corrupt>,
) -> ExitCode {
    let Some(universe) = mpi::initialize() else {
        eprintln!("{name}: MPI was already initialized");
        return ExitCode::from(2);
    };
    let world = universe.world();
    let (me, k) = (world.rank(), world.size());
    let args = match parse(default_n) {
        Ok(a) => a,
        Err(e) => {
            if me == 0 {
                eprintln!("{name}: {e}");
                eprintln!("usage: mpirun -n K {name} [algorithm (auto)] [n ({default_n})] [--timeout S] [--corrupt R]");
            }
            return ExitCode::from(2);
        }
    };
    let (n, algo) = (args.n, Algo::from(args.algo.as_str()));
    let config = Config::new().timeout(args.timeout);
    let outcome: Result<Summary, String> = match args.corrupt {
        None => hypercomm_mpi::run(&world, &config, |comm| kernel(comm, n, algo))
            .map_err(|f| f.to_string()),
        Some(bad) => run_corrupting(&world, &config, bad, |comm| corrupting(comm, n, algo)),
    };
    let failed = outcome.is_err();
    if let Err(e) = &outcome {
        // One write: ranks share the terminal.
        let line = format!("{name}: FAILED on rank {me}: {e}\n");
        std::io::stderr().write_all(line.as_bytes()).ok();
        // MPI_Finalize (and the agreement below) wait for every rank: bound them.
        exit_watchdog(Duration::from_secs(15), 1);
    }
    // Every rank ends its run (a failure is announced, waits are bounded): agree.
    let mut any_failed = 0u32;
    world.all_reduce_into(&u32::from(failed), &mut any_failed, SystemOperation::max());
    if me == 0 {
        if let Ok(summary) = &outcome {
            print!("{summary}");
        }
        if any_failed == 0 {
            println!("{name}: every rank matched the serial computation ({k} ranks, MPI)");
        } else {
            println!(
                "{name}: FAILED: not every rank matched the serial computation ({k} ranks, MPI)"
            );
        }
    }
    drop(world);
    drop(universe);
    if any_failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// [`hypercomm_mpi::run`] on the corrupting transport (rank `bad` corrupts its sends).
fn run_corrupting<F>(
    world: &mpi::topology::SimpleCommunicator,
    config: &Config,
    bad: Rank,
    f: F,
) -> Result<Summary, String>
where
    F: FnOnce(&mut Comm<Corrupt>) -> Result<Summary, String>,
{
    let calibration = Calibration::from_env().map_err(|e| e.to_string())?;
    let on = world.rank() as Rank == bad;
    let transport = Corrupt {
        inner: Mpi::new(world, config).map_err(|e| e.to_string())?,
        on,
        copies: Vec::new(),
    };
    let mut comm = Comm::new(transport, calibration);
    let got = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(&mut comm)));
    let outcome = got.unwrap_or_else(|p| {
        let message = p
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| p.downcast_ref::<String>().cloned());
        Err(format!("panicked: {}", message.unwrap_or_default()))
    });
    if outcome.is_err() {
        comm.transport().inner.notify_failure();
    }
    outcome
}

/// The MPI transport, except that when `on` it flips bit 52 of every 8-byte word (the
/// lowest exponent bit of an `f64`: the value doubles or halves) of each message it
/// sends of more than 16 bytes. It sends a corrupted copy; the caller's memory is not
/// touched.
pub struct Corrupt {
    inner: Mpi,
    on: bool,
    /// The copies sent, and the part lists naming them, until `wait_all`/`cancel_all`.
    copies: Vec<(Vec<u8>, Box<[Part; 1]>)>,
}

impl Transport for Corrupt {
    fn rank(&self) -> Rank {
        self.inner.rank()
    }

    fn size(&self) -> u32 {
        self.inner.size()
    }

    unsafe fn post_send(&mut self, to: Rank, tag: Tag, parts: &[Part]) -> RtResult<()> {
        let len: usize = parts.iter().map(Part::len).sum();
        if !self.on || len <= 16 {
            // SAFETY: forwarded from this function's contract.
            return unsafe { self.inner.post_send(to, tag, parts) };
        }
        let mut copy = Vec::with_capacity(len);
        for p in parts.iter().filter(|p| !p.is_empty()) {
            // SAFETY: the contract makes every part readable now.
            copy.extend_from_slice(unsafe { std::slice::from_raw_parts(p.ptr(), p.len()) });
        }
        for word in copy.chunks_exact_mut(8) {
            word[6] ^= 0x10;
        }
        let part = Box::new([Part::new(&copy)]);
        // SAFETY: the copy and its part list live in `copies` (their heap memory does
        // not move) until `wait_all` or `cancel_all` returns.
        let posted = unsafe { self.inner.post_send(to, tag, &part[..]) };
        self.copies.push((copy, part));
        posted
    }

    unsafe fn post_recv(&mut self, from: Rank, tag: Tag, parts: &[PartMut]) -> RtResult<()> {
        // SAFETY: forwarded from this function's contract.
        unsafe { self.inner.post_recv(from, tag, parts) }
    }

    fn recv_with(
        &mut self,
        from: Rank,
        tag: Tag,
        len: usize,
        sink: &mut dyn FnMut(Incoming<'_>),
    ) -> RtResult<()> {
        self.inner.recv_with(from, tag, len, sink)
    }

    fn wait_all(&mut self) -> RtResult<()> {
        let done = self.inner.wait_all();
        if done.is_ok() {
            self.copies.clear();
        }
        done
    }

    fn cancel_all(&mut self) {
        self.inner.cancel_all();
        self.copies.clear();
    }
}
