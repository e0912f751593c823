//! What hypercomm's dispatch costs in front of the MPI library's own collective (issue
//! 20): the same small collective, `calls` times back to back, each layer timed on its
//! own, the layers in turn per repetition (each repetition starting one layer further,
//! so that every layer takes every place in the turn alike):
//!
//! 1. `mpi`: the MPI library's call on `world` (rsmpi), what `vs-native` calls native;
//! 2. `mpi-dup`: the same call on a duplicate of `world` (`MPI_Comm_dup`), as the
//!    backend's own data communicator is one;
//! 3. `named`: hypercomm's call with `Algo::Named("native")` (checks, the call built,
//!    the transport's native collective);
//! 4. `auto`: hypercomm's call with `Algo::Auto`, which runs native where the tuning
//!    picked it (every size here on Open MPI): the tuning's look-up added. On 1 rank
//!    `Auto` is the cost model's (no tuning), so this layer is left out there;
//! 5. `in-place`: the in-place form by name (`all_reduce_in_place`,
//!    `all_gather_in_place`; a broadcast is in place anyway), which MPI runs with
//!    `MPI_IN_PLACE`, nothing copied (not on 1 rank either);
//! 6. `imm-mpi`: the MPI library's non-blocking call, waited for at once, in an rsmpi
//!    request scope (`MPI_Iallreduce` + `MPI_Wait`), what `osu iallreduce` calls native;
//! 7. `imm-auto`: hypercomm's `immediate_*` call with `Algo::Auto` in an
//!    `immediate::scope`, waited for at once: at the default thread level its route is
//!    MPI's non-blocking call, so this is the scope's and the request's own cost;
//! 8. `imm-dup`: `imm-mpi` on the duplicate of `world`;
//! 9. `imm-named`: `imm-auto` with `Algo::Named("native")`: no route looked up;
//! 10. `imm-scope1`: `imm-named` with every call of a repetition in one
//!     `immediate::scope`: what a scope of its own per call costs.
//!
//! ```text
//! mpirun -n 2 target/release/examples/native_dispatch [op] [bytes] [calls] [reps] [layer,…]
//! ```
//! `op` is `broadcast`, `allreduce` or `allgather` (u64 elements, sum), or `alltoallv`
//! or `allgatherv` (`bytes` to or from every rank; MPI's call with its count and
//! displacement arrays made once, outside the clock, as `osu` does; the blocking layers
//! 1–4 only; `auto` runs MPI's call or the measured pick).
//! Prints rank 0's
//! median ns per call over the repetitions, with the quartiles, and each layer's excess
//! over `mpi` (medians). `DISPATCH_BARRIER=1`: a barrier on `world` before each call,
//! outside the clock, as `vs-native` times calls (the caches and the branch predictor
//! then as cold as there); `DISPATCH_BARRIER=ours`: hypercomm's barrier instead (a
//! schedule, recursive doubling), as `osu` times calls; `DISPATCH_RANKS=1`: every rank prints its figures (rank 0
//! only by default; with MPICH, `-outfile-pattern f.%r` keeps them apart). Under load,
//! take short blocks and many repetitions (e.g.
//! `allreduce 8 200 301`). `HYPERCOMM_TUNING` as for the binary (a file keeps the picks
//! between runs).

use std::time::Instant;

use hypercomm_mpi::HypercommExt;
use hypercomm_rt::{Algo, Op};
use mpi::collective::SystemOperation;
use mpi::datatype::{Partition, PartitionMut};
use mpi::topology::SimpleCommunicator;
use mpi::traits::*;

fn call(world: &SimpleCommunicator, op: &str, send: &[u64], recv: &mut [u64]) {
    match op {
        "broadcast" => world.process_at_rank(0).broadcast_into(recv),
        "allgather" => world.all_gather_into(send, recv),
        _ => world.all_reduce_into(send, recv, SystemOperation::sum()),
    }
}

/// The MPI library's non-blocking call, waited for at once.
fn call_immediate(world: &SimpleCommunicator, op: &str, send: &[u64], recv: &mut [u64]) {
    mpi::request::scope(|scope| {
        match op {
            "broadcast" => world
                .process_at_rank(0)
                .immediate_broadcast_into(scope, recv)
                .wait(),
            "allgather" => world.immediate_all_gather_into(scope, send, recv).wait(),
            _ => world
                .immediate_all_reduce_into(scope, send, recv, SystemOperation::sum())
                .wait(),
        };
    });
}

/// hypercomm's `immediate_*` call of `op` in scope `s`, waited for at once.
fn immediate<'s>(
    s: &hypercomm_rt::immediate::NativeScope<'s, '_>,
    comm: &mut hypercomm_rt::Comm<hypercomm_mpi::Mpi>,
    (op, send, sum): (&str, &'s [u64], &'s Op<'static, u64>),
    recv: &'s mut [u64],
    algo: Algo<'s>,
) -> hypercomm_rt::Result<hypercomm_rt::Ran> {
    match op {
        "broadcast" => comm.immediate_broadcast_into(s, 0, recv, algo),
        "allgather" => comm.immediate_all_gather_into(s, send, recv, algo),
        _ => comm.immediate_all_reduce_into(s, send, recv, sum, algo),
    }?
    .wait()
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let a: Vec<String> = std::env::args().skip(1).collect();
    let op = a.first().map_or("allreduce", String::as_str).to_owned();
    let ops = [
        "broadcast",
        "allreduce",
        "allgather",
        "alltoallv",
        "allgatherv",
    ];
    if !ops.contains(&op.as_str()) {
        return Err(format!("`{op}`: valid ops are {}", ops.join(", ")).into());
    }
    let varcount = op.ends_with('v');
    let bytes: usize = a.get(1).map_or(Ok(8), |s| s.parse())?;
    let calls: u32 = a.get(2).map_or(Ok(20_000), |s| s.parse())?;
    let reps: usize = a.get(3).map_or(Ok(5), |s| s.parse())?;
    // Optional: the layers to run, by name, comma-separated (all by default).
    let only: Option<Vec<String>> = a.get(4).map(|s| s.split(',').map(str::to_owned).collect());
    let universe = mpi::initialize().ok_or("MPI was already initialized")?;
    let world = universe.world();
    let (me, k) = (world.rank(), world.size() as usize);
    let m = (bytes / 8).max(1);
    let send = vec![me as u64 + 1; m];
    let out_len = match op.as_str() {
        "allgather" | "allgatherv" => k * m,
        "alltoallv" => k * m,
        _ => m,
    };
    let send = if op == "alltoallv" {
        vec![me as u64 + 1; k * m]
    } else {
        send
    };
    // The variable-count calls' counts (every one `m`) and MPI's arrays, made once.
    let counts = vec![m; k];
    let mpi_counts = vec![m as mpi::Count; k];
    let displs: Vec<mpi::Count> = (0..k).map(|i| (i * m) as mpi::Count).collect();
    // Written, not zeroed: a broadcast's root sends from it (unwritten pages read as
    // the kernel's shared zero page).
    let mut recv = vec![me as u64 + 1; out_len];
    let dup = world.duplicate();
    let mut comm = world.hypercomm()?;
    let sum = Op::<u64>::sum();
    let names = [
        "mpi",
        "mpi-dup",
        "named",
        "auto",
        "in-place",
        "imm-mpi",
        "imm-auto",
        "imm-dup",
        "imm-named",
        "imm-scope1",
    ];
    // `DISPATCH_BARRIER=1`: a barrier on `world` before each call, outside the clock,
    // as `vs-native` times its calls; `ours`: hypercomm's, as `osu` does.
    let barrier = std::env::var("DISPATCH_BARRIER").unwrap_or_default();
    let each_barrier = barrier == "1" || barrier == "ours";
    let our_barrier = barrier == "ours";
    let layers = names.len();
    // On 1 rank `Auto` is the cost model's (no tuning) and the in-place forms have
    // nothing to do: those layers are left out.
    let skipped = |layer: usize| (k == 1 && [3, 4, 6].contains(&layer)) || (varcount && layer > 3);
    let mut ran = [""; 10];
    let mut ns: Vec<Vec<f64>> = vec![Vec::new(); layers];
    let ours = |comm: &mut hypercomm_rt::Comm<_>, recv: &mut [u64], algo| match op.as_str() {
        "broadcast" => comm.broadcast_into(0, recv, algo),
        "allgather" => comm.all_gather_into(&send, recv, algo),
        "alltoallv" => comm.all_to_allv_into(&send, &counts, recv, &counts, algo),
        "allgatherv" => comm.all_gatherv_into(&send, recv, &counts, algo),
        _ => comm.all_reduce_into(&send, recv, &sum, algo),
    };
    let call = |world: &SimpleCommunicator, op: &str, send: &[u64], recv: &mut [u64]| match op {
        "alltoallv" => world.all_to_all_varcount_into(
            &Partition::new(send, &mpi_counts[..], &displs[..]),
            &mut PartitionMut::new(recv, &mpi_counts[..], &displs[..]),
        ),
        "allgatherv" => world.all_gather_varcount_into(
            send,
            &mut PartitionMut::new(recv, &mpi_counts[..], &displs[..]),
        ),
        _ => call(world, op, send, recv),
    };
    // Untimed first calls: `Auto` measures (or reads) its picks in its first.
    for algo in [Algo::Named("native"), Algo::Auto] {
        ours(&mut comm, &mut recv, algo)?;
    }
    for rep in 0..reps {
        // The layers in turn, starting one further each repetition: a layer's place in
        // the turn (after which communicator, which call) weighs on every layer alike.
        for turn in 0..layers {
            let layer = (rep + turn) % layers;
            let out = &mut ns[layer];
            if skipped(layer)
                || only
                    .as_ref()
                    .is_some_and(|o| !o.iter().any(|n| n == names[layer]))
            {
                continue;
            }
            world.barrier();
            let mut start = Instant::now();
            let mut took = std::time::Duration::ZERO;
            if layer == 9 {
                // A call's buffer stays borrowed until its scope ends: one each.
                let mut bufs = vec![recv.clone(); calls as usize];
                world.barrier();
                start = Instant::now();
                hypercomm_rt::immediate::scope(|s| {
                    let args = (op.as_str(), &send[..], &sum);
                    bufs.iter_mut().try_for_each(|b| {
                        immediate(s, &mut comm, args, b, Algo::Named("native")).map(drop)
                    })
                })?;
                out.push(start.elapsed().as_secs_f64() * 1e9 / calls as f64);
                ran[layer] = comm.last_algorithm().unwrap_or("-");
                continue;
            }
            for _ in 0..calls {
                if our_barrier {
                    comm.barrier_with(hypercomm_rt::Barrier::RecursiveDoubling)?;
                    start = Instant::now();
                } else if each_barrier {
                    world.barrier();
                    start = Instant::now();
                }
                match layer {
                    0 => call(&world, &op, &send, &mut recv),
                    1 => call(&dup, &op, &send, &mut recv),
                    // Ours return the `Ran`, read after the clock (`comm.last()`):
                    // copying it in the loop waits for MPI's stores to drain (up to
                    // 120 ns after a barrier), which MPI's own call never pays.
                    2 => {
                        ours(&mut comm, &mut recv, Algo::Named("native"))?;
                    }
                    3 => {
                        ours(&mut comm, &mut recv, Algo::Auto)?;
                    }
                    5 => call_immediate(&world, &op, &send, &mut recv),
                    7 => call_immediate(&dup, &op, &send, &mut recv),
                    6 => {
                        hypercomm_rt::immediate::scope(|s| {
                            immediate(s, &mut comm, (&op, &send, &sum), &mut recv, Algo::Auto)
                        })?;
                    }
                    8 => {
                        hypercomm_rt::immediate::scope(|s| {
                            immediate(
                                s,
                                &mut comm,
                                (&op, &send, &sum),
                                &mut recv,
                                Algo::Named("native"),
                            )
                        })?;
                    }
                    // The in-place form by name (`MPI_IN_PLACE`): all-reduce and
                    // all-gather; broadcast is always in place.
                    _ => {
                        let native = Algo::Named("native");
                        match op.as_str() {
                            "allreduce" => comm.all_reduce_in_place(&mut recv, &sum, native)?,
                            "allgather" => comm.all_gather_in_place(&mut recv, native)?,
                            _ => comm.broadcast_into(0, &mut recv, native)?,
                        };
                    }
                }
                if each_barrier {
                    took += start.elapsed();
                }
            }
            if !each_barrier {
                took = start.elapsed();
            }
            out.push(took.as_secs_f64() * 1e9 / calls as f64);
            if (2..5).contains(&layer) || layer == 6 || layer == 8 {
                ran[layer] = comm.last_algorithm().unwrap_or("-");
            }
        }
    }
    if me == 0 && std::env::var_os("DISPATCH_BLOCKS").is_some() {
        for (layer, v) in ns.iter().enumerate() {
            let v: Vec<String> = v.iter().map(|x| format!("{x:.0}")).collect();
            println!("# {}: {}", names[layer], v.join(" "));
        }
    }
    // `DISPATCH_RANKS=1`: every rank prints its own (rank 0 only by default).
    let every_rank = std::env::var_os("DISPATCH_RANKS").is_some_and(|v| v == "1");
    if me == 0 || every_rank {
        if every_rank {
            print!("rank {me}: ");
        }
        println!(
            "{k} ranks, {op} {bytes} B, {calls} calls back to back, median of {reps}: ns per call"
        );
        let mut base = 0.0;
        for (layer, v) in ns.iter_mut().enumerate() {
            if v.is_empty() {
                continue;
            }
            v.sort_by(f64::total_cmp);
            let q = |f: f64| v[((v.len() - 1) as f64 * f).round() as usize];
            if layer == 0 {
                base = q(0.5);
            }
            println!(
                "{:<8} {:>9.1}   (quartiles {:.1}–{:.1})  {:+.1} over mpi  {}",
                names[layer],
                q(0.5),
                q(0.25),
                q(0.75),
                q(0.5) - base,
                ran[layer]
            );
        }
    }
    drop(comm);
    Ok(())
}
