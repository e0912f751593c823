//! Persistent plans on the MPI backend, run on the requests made for them, against the
//! same plans run as plain calls: every fixed-count collective with `plan_*` (roots 0
//! and the last rank), `Algo::Auto` and named algorithms, 1, 3 and 40 elements of `u64`.
//! Each plan is run on the communicator that made it (its staged requests: the plan
//! must say [`Persistent::staged`] on 2 ranks or more) and through `start` (a request's
//! progress duplicate, where the plan runs as a plain call), three times with new data;
//! the outputs must be equal. An algorithm that does not apply (e.g. to the rank count)
//! is skipped on every rank alike. Prints `persistent_check: N plans matched, all staged
//! (k ranks)` on rank 0 (`none staged` on 1 rank); exit 1 on a mismatch.
//!
//! ```text
//! cargo build --release -p hypercomm-mpi --examples
//! mpirun -n 3 target/release/examples/persistent_check
//! ```

use std::process::ExitCode;

use hypercomm_mpi::{Config, HypercommExt, Mpi};
use hypercomm_rt::{Algo, Comm, Op, Persistent};

fn check(comm: &mut Comm<Mpi>, plan: &Persistent<'_, u64>, what: &str) -> Result<(), String> {
    let (me, k) = (comm.rank() as u64, comm.size());
    if k > 1 && !plan.staged() {
        return Err(format!("{what}: not staged on {k} ranks"));
    }
    let (i, o) = plan.lens();
    for round in 0..3u64 {
        let send: Vec<u64> = (0..i as u64).map(|j| me * 1000 + j * 7 + round).collect();
        let mut staged = vec![u64::MAX; o];
        plan.run(comm, &send, &mut staged)
            .map_err(|e| format!("{what}: {e}"))?;
        let mut plain = vec![u64::MAX; o];
        std::thread::scope(|s| plan.start(comm, s, &send, &mut plain)?.wait())
            .map_err(|e| format!("{what} (plain): {e}"))?;
        if staged != plain {
            return Err(format!(
                "{what}, round {round}: staged {staged:?}, plain {plain:?}"
            ));
        }
    }
    Ok(())
}

fn main() -> ExitCode {
    // `start` progresses on a thread of its own.
    let Some((universe, _)) = mpi::initialize_with_threading(mpi::Threading::Multiple) else {
        eprintln!("persistent_check: MPI was already initialized");
        return ExitCode::FAILURE;
    };
    let world = universe.world();
    let mut comm = match world.hypercomm_with(&Config::new()) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("persistent_check: {e}");
            return ExitCode::FAILURE;
        }
    };
    let k = comm.size();
    let names = [
        "auto",
        "linear",
        "binomial",
        "ring",
        "recursive-doubling",
        "dimension-exchange",
        "bruck",
        "pairwise",
        "esbt",
    ];
    let mut matched = 0;
    for len in [1usize, 3, 40] {
        for name in names {
            let algo = Algo::from(name);
            for root in [0, k - 1] {
                let plans = [
                    ("broadcast", comm.plan_broadcast::<u64>(root, len, algo)),
                    ("scatter", comm.plan_scatter::<u64>(root, len, algo)),
                    ("gather", comm.plan_gather::<u64>(root, len, algo)),
                    (
                        "reduce",
                        comm.plan_reduce(root, len, Op::<u64>::sum(), algo),
                    ),
                ];
                for (op, plan) in plans {
                    let Ok(plan) = plan else { continue };
                    let what = format!("{op} {name} root {root} len {len}");
                    if let Err(e) = check(&mut comm, &plan, &what) {
                        eprintln!("rank {}: {e}", comm.rank());
                        return ExitCode::FAILURE;
                    }
                    matched += 1;
                }
            }
            let plans = [
                ("allgather", comm.plan_all_gather::<u64>(len, algo)),
                ("alltoall", comm.plan_all_to_all::<u64>(len, algo)),
                (
                    "allreduce",
                    comm.plan_all_reduce(len, Op::<u64>::sum(), algo),
                ),
                ("scan", comm.plan_scan(len, Op::<u64>::sum(), algo)),
                (
                    "exscan",
                    comm.plan_exclusive_scan(len, Op::<u64>::sum(), algo),
                ),
                (
                    "reduce-scatter",
                    comm.plan_reduce_scatter_block(len, Op::<u64>::sum(), algo),
                ),
            ];
            for (op, plan) in plans {
                let Ok(plan) = plan else { continue };
                let what = format!("{op} {name} len {len}");
                if let Err(e) = check(&mut comm, &plan, &what) {
                    eprintln!("rank {}: {e}", comm.rank());
                    return ExitCode::FAILURE;
                }
                matched += 1;
            }
        }
    }
    if comm.rank() == 0 {
        let staged = if k > 1 { "all staged" } else { "none staged" };
        println!("persistent_check: {matched} plans matched, {staged} ({k} ranks)");
    }
    ExitCode::SUCCESS
}
