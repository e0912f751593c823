//! Sub-communicators, persistent and non-blocking collectives on the MPI backend, each
//! result checked against native MPI (rsmpi's `split_by_color_with_key` and its
//! collectives) on the same groups: a split by scattered colors and keys (some ranks
//! in none), the rows and columns of the shape `A×B` (A the largest factor ≤ √k), a
//! duplicate, the node-local and across-node communicators, each ranked as MPI ranks
//! it; the parent's all-reduce between their calls and while row and column requests
//! are in flight, with a persistent all-reduce started on the parent and a request
//! dropped unfinished; the requests completed in another order than started (one
//! polled with `test`); a persistent all-reduce run ten times. Prints
//! `subcomm: every rank matched native MPI (k ranks)` on rank 0; exit 1 on a mismatch.
//! `cargo test -p hypercomm-mpi` runs it on 1, 2, 3, 5 and 8 ranks.
//!
//! ```text
//! cargo build --release -p hypercomm-mpi --examples
//! mpirun -n 6 target/release/examples/subcomm
//! ```

use std::process::ExitCode;
use std::time::Duration;

use hypercomm_mpi::{Config, HypercommExt};
use hypercomm_rt::{Algo, Comm, Op, Transport};
use mpi::collective::SystemOperation;
use mpi::topology::Color;
use mpi::traits::*;

/// Rank r's color (or none) and key in round i: scattered, as the threads test's.
fn color_key(r: u32, k: u32, i: u32) -> (Option<u32>, i32) {
    let h = (r + 1).wrapping_mul(2_654_435_761) ^ (i + 7).wrapping_mul(40_503) ^ k;
    let color = match h % 5 {
        0 => None,
        c => Some(c % 3 + 10 * (i % 2)),
    };
    (color, (h / 5 % 4) as i32 - 2)
}

/// Native MPI's sum and rank on `native`, against ours on `ours` (same group).
fn same<X: Transport, C: Communicator>(
    what: &str,
    ours: &mut Comm<X>,
    native: &C,
    x: u64,
) -> Result<(), String> {
    let mut mine = [0u64; 2];
    ours.all_reduce_into(&[x, 1], &mut mine, &Op::sum(), Algo::Auto)
        .map_err(|e| format!("{what}: {e}"))?;
    let mut theirs = [0u64; 2];
    native.all_reduce_into(&[x, 1][..], &mut theirs[..], SystemOperation::sum());
    let ranks = (ours.rank() as i32, ours.size() as i32);
    if mine != theirs || ranks != (native.rank(), native.size()) {
        return Err(format!(
            "{what}: ours {mine:?} as rank {ranks:?}, MPI's {theirs:?} as rank ({}, {})",
            native.rank(),
            native.size()
        ));
    }
    Ok(())
}

fn check(world: &mpi::topology::SimpleCommunicator) -> Result<(), String> {
    let config = Config::new().timeout(Duration::from_secs(60));
    let mut comm = world.hypercomm_with(&config).map_err(|e| e.to_string())?;
    let (r, k) = (comm.rank(), comm.size());
    let x = u64::from(r) * 7 + 3;
    let err = |e: hypercomm_rt::Error| e.to_string();
    for i in 0..3 {
        let (color, key) = color_key(r, k, i);
        let ours = comm.split(color, key).map_err(err)?;
        let native_color = color.map_or(Color::undefined(), |c| Color::with_value(c as i32));
        let native = world.split_by_color_with_key(native_color, key);
        match (ours, native) {
            (None, None) => {}
            (Some(mut ours), Some(native)) => same("split", &mut ours, &native, x)?,
            (o, n) => {
                return Err(format!(
                    "split round {i}: ours {}, MPI's {}",
                    o.is_some(),
                    n.is_some()
                ))
            }
        }
    }
    let a = (1..=k)
        .filter(|a| k % a == 0 && a * a <= k)
        .max()
        .unwrap_or(1);
    let b = k / a;
    let shape = hypercomm::algorithms::Shape::new(&[a, b]).map_err(|e| e.to_string())?;
    let (mut row, mut column) = comm.rows_and_columns(&shape).map_err(err)?;
    let native_row = world
        .split_by_color_with_key(Color::with_value((r / b) as i32), (r % b) as i32)
        .expect("a color");
    let native_column = world
        .split_by_color_with_key(Color::with_value((r % b) as i32), (r / b) as i32)
        .expect("a color");
    let mut dup = comm.dup().map_err(err)?;
    let (mut node, mut across) = comm.node_comms().map_err(err)?;
    let native_node = world.split_shared(r as i32);
    let native_across = world
        .split_by_color_with_key(Color::with_value(native_node.rank()), r as i32)
        .expect("a color");
    let sum = Op::sum();
    let plan = comm
        .plan_all_reduce(2, Op::<u64>::sum(), Algo::Auto)
        .map_err(err)?;
    for round in 0..10u64 {
        let y = x + 1000 * round;
        same("row", &mut row, &native_row, y)?;
        same("parent", &mut comm, world, y)?;
        same("column", &mut column, &native_column, y)?;
        same("dup", &mut dup, world, y)?;
        same("node", &mut node, &native_node, y)?;
        same("across", &mut across, &native_across, y)?;
        let mut want = [0u64; 2];
        world.all_reduce_into(&[y, 1][..], &mut want[..], SystemOperation::sum());
        let mut planned = [0u64; 2];
        plan.run(&mut comm, &[y, 1], &mut planned).map_err(err)?;
        let (mut rs, mut cs, mut ps) = ([0u64; 2], [0u64; 2], [0u64; 2]);
        let (mut started, mut dropped) = ([0u64; 2], [0u64; 2]);
        let send = [y, 1];
        std::thread::scope(|s| {
            let rq = row.immediate_all_reduce_into(s, &send, &mut rs, &sum, Algo::Auto)?;
            let cq = column.immediate_all_reduce_into(s, &send, &mut cs, &sum, Algo::Auto)?;
            let pq = plan.start(&mut comm, s, &send, &mut started)?;
            // Dropped unfinished: the drop waits for it.
            drop(comm.immediate_all_reduce_into(s, &send, &mut dropped, &sum, Algo::Auto)?);
            comm.all_reduce_into(&send, &mut ps, &sum, Algo::Auto)?;
            // Completed in another order than started: column, parent's plan, row
            // (polled with test).
            cq.wait()?;
            pq.wait()?;
            let mut rq = rq;
            loop {
                match rq.test() {
                    Ok(done) => return done,
                    Err(pending) => rq = pending,
                }
                std::thread::yield_now();
            }
        })
        .map_err(err)?;
        if (started, dropped) != (want, want) {
            return Err(format!(
                "round {round}: started plan {started:?}, dropped request {dropped:?}; MPI's \
                 {want:?}"
            ));
        }
        let mut native_rs = [0u64; 2];
        native_row.all_reduce_into(&send[..], &mut native_rs[..], SystemOperation::sum());
        let mut native_cs = [0u64; 2];
        native_column.all_reduce_into(&send[..], &mut native_cs[..], SystemOperation::sum());
        if (planned, ps, rs, cs) != (want, want, native_rs, native_cs) {
            return Err(format!(
                "round {round}: persistent {planned:?}, parent {ps:?}, row {rs:?}, column \
                 {cs:?}; MPI's {want:?}, {native_rs:?}, {native_cs:?}"
            ));
        }
    }
    Ok(())
}

fn main() -> ExitCode {
    let Some((universe, level)) = mpi::initialize_with_threading(mpi::Threading::Multiple) else {
        eprintln!("subcomm: MPI was already initialized");
        return ExitCode::FAILURE;
    };
    let world = universe.world();
    if level != mpi::Threading::Multiple {
        eprintln!("subcomm: MPI gave thread level {level:?}, not Multiple");
        return ExitCode::FAILURE;
    }
    let outcome = check(&world);
    if let Err(e) = &outcome {
        eprintln!("subcomm: rank {}: {e}", world.rank());
    }
    let mut ok = [u8::from(outcome.is_ok())];
    let mine = ok;
    world.all_reduce_into(&mine[..], &mut ok[..], SystemOperation::min());
    if ok[0] == 0 {
        return ExitCode::FAILURE;
    }
    if world.rank() == 0 {
        println!(
            "subcomm: every rank matched native MPI ({} ranks)",
            world.size()
        );
    }
    ExitCode::SUCCESS
}
