//! The MPI backend's native calls when consecutive calls differ (issue 20: the backend
//! keeps the last fixed-count native call made ready, and runs the next one that is the
//! same without checking and translating it again): calls that alternate between two
//! lengths, two element types of one size (`u64`, `f64`: MPI's datatype differs), two
//! operators, two roots and two collectives, each twice in a row, with
//! `Algo::Named("native")` and `Algo::Auto`, and the in-place forms (all-reduce of two
//! lengths, all-gather, scan, exclusive scan), which native runs with `MPI_IN_PLACE`
//! (`Ran::in_place`: no copy), and the variable-count all-gatherv and all-to-allv with
//! two sets of counts in turn (native keeps the last call's MPI count arrays); every
//! result is checked against the value
//! computed here, and a call with a wrong buffer length must give the typed error after
//! a call of the right one (separate buffers, and an all-gather in place). Prints `native_check: N calls matched (k ranks)` on rank 0;
//! exit 1 on a mismatch.
//!
//! ```text
//! cargo build --release -p hypercomm-mpi --examples
//! mpirun -n 3 target/release/examples/native_check
//! ```

use std::process::ExitCode;

use hypercomm_mpi::HypercommExt;
use hypercomm_rt::{Algo, Comm, Error, Op};

fn run<X: hypercomm_rt::Transport>(comm: &mut Comm<X>) -> Result<usize, String> {
    let (me, k) = (comm.rank() as u64, comm.size() as u64);
    let ranks_sum = k * (k - 1) / 2;
    let mut calls = 0;
    for round in 0..4u64 {
        for algo in [Algo::Named("native"), Algo::Auto] {
            for _twice in 0..2 {
                // All-reduce of u64, 1 then 3 elements, sum.
                let mut one = [0u64];
                comm.all_reduce_into(&[me + round], &mut one, &Op::sum(), algo)
                    .map_err(|e| e.to_string())?;
                let want = ranks_sum + k * round;
                if one != [want] {
                    return Err(format!("u64 sum of 1: {one:?}, want {want}"));
                }
                let mut three = [0u64; 3];
                comm.all_reduce_into(&[me, 1, round], &mut three, &Op::sum(), algo)
                    .map_err(|e| e.to_string())?;
                if three != [ranks_sum, k, k * round] {
                    return Err(format!("u64 sum of 3: {three:?}"));
                }
                // The same length and element size, another type, then another operator.
                let mut f = [0f64];
                comm.all_reduce_into(&[0.5 + me as f64], &mut f, &Op::sum(), algo)
                    .map_err(|e| e.to_string())?;
                if f != [0.5 * k as f64 + ranks_sum as f64] {
                    return Err(format!("f64 sum of 1: {f:?}"));
                }
                comm.all_reduce_into(&[me + round], &mut one, &Op::max(), algo)
                    .map_err(|e| e.to_string())?;
                if one != [k - 1 + round] {
                    return Err(format!("u64 max of 1: {one:?}"));
                }
                // Broadcasts from two roots, then an all-gather.
                for root in [0, k - 1] {
                    let mut b = if me == root { [root + 10 * round] } else { [0] };
                    comm.broadcast_into(root as u32, &mut b, algo)
                        .map_err(|e| e.to_string())?;
                    if b != [root + 10 * round] {
                        return Err(format!("broadcast from {root}: {b:?}"));
                    }
                }
                let mut all = vec![0u64; k as usize];
                comm.all_gather_into(&[me * 3 + round], &mut all, algo)
                    .map_err(|e| e.to_string())?;
                let want: Vec<u64> = (0..k).map(|r| r * 3 + round).collect();
                if all != want {
                    return Err(format!("all-gather: {all:?}, want {want:?}"));
                }
                // In place (MPI_IN_PLACE when native runs): all-reduce of 3 then 1,
                // an all-gather, a scan, an exclusive scan.
                let mut ran = Vec::new();
                let mut three = [me, 1, round];
                ran.push(comm.all_reduce_in_place(&mut three, &Op::sum(), algo));
                let mut one = [me + round];
                ran.push(comm.all_reduce_in_place(&mut one, &Op::max(), algo));
                if three != [ranks_sum, k, k * round] || one != [k - 1 + round] {
                    return Err(format!("all-reduce in place: {three:?}, {one:?}"));
                }
                let mut all = vec![u64::MAX; k as usize];
                all[me as usize] = me * 5 + round;
                ran.push(comm.all_gather_in_place(&mut all, algo));
                let want: Vec<u64> = (0..k).map(|r| r * 5 + round).collect();
                let mut prefix = [me + 1, round];
                ran.push(comm.scan_in_place(&mut prefix, &Op::sum(), algo));
                if all != want || prefix != [(me + 1) * (me + 2) / 2, (me + 1) * round] {
                    return Err(format!("in place: all-gather {all:?}, scan {prefix:?}"));
                }
                // Rank 0's result is unspecified (MPI's too).
                let mut before = [me + 1, round];
                ran.push(comm.exclusive_scan_in_place(&mut before, &Op::sum(), algo));
                if me > 0 && before != [me * (me + 1) / 2, me * round] {
                    return Err(format!("exclusive scan in place: {before:?}"));
                }
                for r in ran {
                    let r = r.map_err(|e| e.to_string())?;
                    if r.algorithm == "native" && !r.in_place {
                        return Err(format!("native {} in place ran on a copy", r.op));
                    }
                }
                // Variable counts, which native runs with the count arrays kept from
                // the last call when the counts are the same: an all-gatherv and an
                // all-to-allv with one set of counts, then another.
                for shape in [0u64, 1] {
                    let counts: Vec<usize> = (0..k)
                        .map(|r| if shape == 0 { r + 1 } else { k - r + round } as usize)
                        .collect();
                    let mine = vec![me + 100 * shape; counts[me as usize]];
                    let mut got = vec![0u64; counts.iter().sum()];
                    comm.all_gatherv_into(&mine, &mut got, &counts, algo)
                        .map_err(|e| e.to_string())?;
                    let want: Vec<u64> = (0..k)
                        .flat_map(|r| std::iter::repeat_n(r + 100 * shape, counts[r as usize]))
                        .collect();
                    if got != want {
                        return Err(format!("all-gatherv {counts:?}: {got:?}, want {want:?}"));
                    }
                    // Rank i sends j + 1 + shape elements i·1000 + j to rank j.
                    let send_counts: Vec<usize> =
                        (0..k).map(|j| (j + 1 + shape) as usize).collect();
                    let recv_counts = vec![(me + 1 + shape) as usize; k as usize];
                    let send: Vec<u64> = (0..k)
                        .flat_map(|j| std::iter::repeat_n(me * 1000 + j, send_counts[j as usize]))
                        .collect();
                    let mut got = vec![0u64; recv_counts.iter().sum()];
                    comm.all_to_allv_into(&send, &send_counts, &mut got, &recv_counts, algo)
                        .map_err(|e| e.to_string())?;
                    let want: Vec<u64> = (0..k)
                        .flat_map(|i| std::iter::repeat_n(i * 1000 + me, recv_counts[i as usize]))
                        .collect();
                    if got != want {
                        return Err(format!(
                            "all-to-allv (shape {shape}): {got:?}, want {want:?}"
                        ));
                    }
                }
                calls += 16;
            }
            // A wrong length right after a right one: the typed error, on every rank.
            let mut two = [0u64; 2];
            match comm.all_reduce_into(&[me], &mut two, &Op::sum(), algo) {
                Err(Error::BufferLength { .. }) => {}
                other => return Err(format!("a wrong length gave {other:?}")),
            }
            // In place, after in-place calls of the right length.
            if k > 1 {
                let mut odd = vec![0u64; k as usize + 1];
                match comm.all_gather_in_place(&mut odd, algo) {
                    Err(Error::BufferLength { .. }) => {}
                    other => return Err(format!("a wrong in-place length gave {other:?}")),
                }
            }
        }
    }
    Ok(calls)
}

fn main() -> ExitCode {
    let Some(universe) = mpi::initialize() else {
        eprintln!("native_check: MPI was already initialized");
        return ExitCode::FAILURE;
    };
    let world = universe.world();
    let mut comm = match world.hypercomm() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("native_check: {e}");
            return ExitCode::FAILURE;
        }
    };
    match run(&mut comm) {
        Ok(calls) => {
            if comm.rank() == 0 {
                println!(
                    "native_check: {calls} calls matched ({} ranks)",
                    comm.size()
                );
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("native_check: rank {}: {e}", comm.rank());
            ExitCode::FAILURE
        }
    }
}
