//! `Algo::Auto` in an `immediate::scope` measures its route (issue 20): MPI's own
//! non-blocking collective, or the blocking call on a progress thread
//! (`hypercomm_rt::tune`'s `immediate` module). MPI is initialized with
//! `MPI_THREAD_MULTIPLE` and the tuning file is the one argument (a path that should
//! not exist yet). Four checks, each a non-blocking all-reduce of `u64` sums compared
//! with MPI's blocking `MPI_Allreduce` on the same data:
//! 1. measured: the first call measures, the communicator's `tuned()` report names the
//!    key `immediate allreduce 8B commutative` with a route at each of the 20 sizes,
//!    and every rank ran the same algorithm at every length;
//! 2. the file holds those 20 routes, each `native`, `thread native` or `thread <name>`;
//! 3. read back: rank 0 rewrites every route to `thread ring`, and a new communicator's
//!    call reads the file (measuring nothing) and runs `ring` (`Ran::auto` set);
//! 4. rewritten to `native`: the call runs MPI's non-blocking collective (`native`).
//!
//! Prints `immediate_routes: measured, read back and followed (k ranks)` on rank 0;
//! exit 1 otherwise. `cargo test -p hypercomm-mpi` runs it on 2 and 3 ranks.
//!
//! ```text
//! cargo build --release -p hypercomm-mpi --examples
//! mpirun -n 2 target/release/examples/immediate_routes /tmp/routes.json
//! ```

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use hypercomm_mpi::{Config, HypercommExt, Mpi};
use hypercomm_rt::{immediate, Algo, Comm, Op, Ran, Tuning};
use mpi::collective::SystemOperation;
use mpi::topology::SimpleCommunicator;
use mpi::traits::*;

const KEY: &str = "immediate allreduce 8B commutative";

/// A communicator measuring into (or reading) `file`.
fn comm(world: &SimpleCommunicator, file: &Path) -> Result<Comm<Mpi>, String> {
    let config = Config {
        tuning: Tuning::Measure {
            file: Some(file.to_path_buf()),
        },
        ..Config::new()
    };
    world.hypercomm_with(&config).map_err(|e| e.to_string())
}

/// One `Auto` all-reduce of `m` elements in a scope, checked against MPI's; what ran.
fn reduce(comm: &mut Comm<Mpi>, world: &SimpleCommunicator, m: usize) -> Result<Ran, String> {
    let me = comm.rank() as u64;
    let x: Vec<u64> = (0..m as u64).map(|i| i * 7 + me * 1_000_003).collect();
    let mut ours = vec![0u64; m];
    let plus = Op::sum();
    let ran = immediate::scope(|s| {
        comm.immediate_all_reduce_into(s, &x, &mut ours, &plus, Algo::Auto)?
            .wait()
    })
    .map_err(|e| e.to_string())?;
    let mut theirs = vec![0u64; m];
    world.all_reduce_into(&x[..], &mut theirs[..], SystemOperation::sum());
    if ours != theirs {
        return Err(format!("{m} elements by {}: not MPI's sums", ran.algorithm));
    }
    Ok(ran)
}

/// Whether every rank passed the same `name`.
fn same_everywhere(world: &SimpleCommunicator, name: &str) -> bool {
    let h = name.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    });
    let (mut lo, mut hi) = (0u64, 0u64);
    world.all_reduce_into(&h, &mut lo, SystemOperation::min());
    world.all_reduce_into(&h, &mut hi, SystemOperation::max());
    lo == hi
}

/// `mine` if every rank's is `Ok`, else an error on every rank (so that all go on to
/// the same next call).
fn all_ok(world: &SimpleCommunicator, mine: Result<(), String>) -> Result<(), String> {
    let mut ok = 0u8;
    world.all_reduce_into(&u8::from(mine.is_ok()), &mut ok, SystemOperation::min());
    match (mine, ok) {
        (Err(e), _) => Err(e),
        (Ok(()), 0) => Err("another rank failed".into()),
        (Ok(()), _) => Ok(()),
    }
}

/// Rank 0 sets every route of [`KEY`] in `file` to `route`; then every rank goes on.
fn rewrite(world: &SimpleCommunicator, file: &Path, route: &str) -> Result<(), String> {
    let mut done = Ok(());
    if world.rank() == 0 {
        done = (|| {
            let text = std::fs::read_to_string(file).map_err(|e| e.to_string())?;
            let mut json: serde_json::Value =
                serde_json::from_str(&text).map_err(|e| e.to_string())?;
            let routes = json["picks"][KEY]
                .as_array_mut()
                .ok_or(format!("no {KEY} in {}", file.display()))?;
            for r in routes.iter_mut() {
                *r = serde_json::Value::from(route);
            }
            std::fs::write(file, json.to_string()).map_err(|e| e.to_string())
        })();
    }
    all_ok(world, done)
}

/// The file's routes of [`KEY`] (rank 0).
fn saved_routes(file: &Path) -> Result<Vec<String>, String> {
    let text = std::fs::read_to_string(file).map_err(|e| e.to_string())?;
    let json: serde_json::Value = serde_json::from_str(&text).map_err(|e| e.to_string())?;
    let routes = json["picks"][KEY]
        .as_array()
        .ok_or(format!("no {KEY} in {}", file.display()))?;
    Ok(routes
        .iter()
        .map(|r| r.as_str().unwrap_or("").to_string())
        .collect())
}

fn check(world: &SimpleCommunicator, file: &Path) -> Result<(), String> {
    let lens = [1usize, 1000, 131_072];
    // 1. Measured.
    let mut c = comm(world, file)?;
    for m in lens {
        let ran = reduce(&mut c, world, m)?;
        if !same_everywhere(world, ran.algorithm) {
            return Err(format!("{m} elements: the ranks ran different algorithms"));
        }
        if !ran.auto {
            return Err(format!("{m} elements: Ran::auto not set"));
        }
    }
    let report = c
        .tuned()
        .iter()
        .find(|t| t.key == KEY)
        .ok_or(format!("no {KEY} in tuned()"))?;
    if report.picks.len() != 20 || report.measured_for <= 0.0 {
        return Err(format!("{KEY}: {report:?}"));
    }
    // 2. Saved.
    let mut saved = Ok(());
    if world.rank() == 0 {
        saved = saved_routes(file).and_then(|routes| {
            let well_formed = |r: &String| {
                r == "native" || r.strip_prefix("thread ").is_some_and(|n| !n.is_empty())
            };
            match routes.len() == 20 && routes.iter().all(well_formed) {
                true => Ok(()),
                false => Err(format!("the file's routes: {routes:?}")),
            }
        });
    }
    all_ok(world, saved)?;
    // 3. Read back: every size on a progress thread running ring.
    rewrite(world, file, "thread ring")?;
    let mut c = comm(world, file)?;
    let ran = reduce(&mut c, world, 1000)?;
    if ran.algorithm != "ring" || !ran.auto {
        return Err(format!("routed to thread ring, ran {ran:?}"));
    }
    let read = c.tuned().iter().find(|t| t.key == KEY);
    if read.map(|t| t.measured_for) != Some(0.0) {
        return Err(format!("{KEY} measured again: {read:?}"));
    }
    // 4. Read back: MPI's non-blocking collective.
    rewrite(world, file, "native")?;
    let mut c = comm(world, file)?;
    let ran = reduce(&mut c, world, 1000)?;
    if ran.algorithm != hypercomm_rt::NATIVE || !ran.auto {
        return Err(format!("routed to native, ran {ran:?}"));
    }
    Ok(())
}

fn main() -> ExitCode {
    let Some(file) = std::env::args().nth(1).map(PathBuf::from) else {
        eprintln!("usage: immediate_routes TUNING_FILE");
        return ExitCode::FAILURE;
    };
    let Some((universe, level)) = mpi::initialize_with_threading(mpi::Threading::Multiple) else {
        eprintln!("immediate_routes: MPI was already initialized");
        return ExitCode::FAILURE;
    };
    let world = universe.world();
    if level != mpi::Threading::Multiple {
        eprintln!("immediate_routes: MPI gave {level:?}, not MPI_THREAD_MULTIPLE");
        return ExitCode::FAILURE;
    }
    let outcome = check(&world, &file);
    if let Err(e) = &outcome {
        eprintln!("immediate_routes: rank {}: {e}", world.rank());
    }
    let mut ok = [u8::from(outcome.is_ok())];
    let mine = ok;
    world.all_reduce_into(&mine[..], &mut ok[..], SystemOperation::min());
    if ok[0] == 0 {
        return ExitCode::FAILURE;
    }
    if world.rank() == 0 {
        println!(
            "immediate_routes: measured, read back and followed ({} ranks)",
            world.size()
        );
    }
    ExitCode::SUCCESS
}
