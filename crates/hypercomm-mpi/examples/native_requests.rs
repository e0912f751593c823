//! Non-blocking requests that run MPI's own non-blocking collectives (issue 20): in an
//! `immediate::scope`, every fixed-count call (broadcast, scatter, gather, all-gather,
//! all-to-all, reduce, all-reduce, scan, exclusive scan, reduce-scatter-block) with
//! `Algo::Auto` and with `Algo::Named("native")` starts `MPI_Ibcast` … on the rank's
//! thread (and the five variable-count calls `MPI_Igatherv`, `MPI_Iscatterv`,
//! `MPI_Iallgatherv`, `MPI_Ialltoallv`, `MPI_Ireduce_scatter`, on counts with zeros,
//! against the blocking calls, from 2 ranks); the ten are in flight at once, with a
//! blocking all-reduce of ours made
//! meanwhile, then completed in another order than started (one polled with `test`,
//! one forgotten with `std::mem::forget`, which the scope's end completes), for three
//! lengths; every result is compared with MPI's blocking collective (rsmpi's) on the
//! same data. Each request must say it ran natively (`Ran::algorithm == "native"`),
//! and starting them must start no thread (`Threads:` of `/proc/self/status`). MPI is
//! initialized with the default thread level, not `MPI_THREAD_MULTIPLE`: a named
//! schedule in the scope, which needs a progress thread, is then the start's
//! `Error::Unsupported`, and a wrong buffer length the start's `Error::BufferLength`.
//! Prints `native_requests: N requests matched MPI (k ranks)` on rank 0; exit 1 on a
//! mismatch. `cargo test -p hypercomm-mpi` runs it on 1, 2, 3 and 4 ranks.
//!
//! ```text
//! cargo build --release -p hypercomm-mpi --examples
//! mpirun -n 3 target/release/examples/native_requests
//! ```

use std::process::ExitCode;

use hypercomm_mpi::HypercommExt;
use hypercomm_rt::{immediate, Algo, Error, Op, Ran, NATIVE};
use mpi::collective::SystemOperation;
use mpi::topology::SimpleCommunicator;
use mpi::traits::*;

/// The ten fixed-count collectives, in the order they are started.
const CALLS: [&str; 10] = [
    "broadcast",
    "scatter",
    "gather",
    "all-gather",
    "all-to-all",
    "reduce",
    "all-reduce",
    "scan",
    "exclusive scan",
    "reduce-scatter-block",
];
/// The one forgotten (completed by the scope's end), and the one polled with `test`.
const FORGOTTEN: usize = 4;
const TESTED: usize = 0;

/// Threads of this process now (Linux).
fn threads_now() -> Option<u32> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("Threads:"))
        .and_then(|n| n.trim().parse().ok())
}

/// MPI's blocking results of the ten calls (rsmpi's) for this rank's data `v` (`k·m`
/// elements; the calls that take `m` use its first `m`), `root` the rooted calls' root.
fn theirs(world: &SimpleCommunicator, v: &[u64], m: usize, root: u32) -> Vec<Vec<u64>> {
    let (me, k) = (world.rank() as u32, world.size() as usize);
    let is_root = me == root;
    let proc_root = world.process_at_rank(root as i32);
    let sum = SystemOperation::sum();
    let mine = &v[..m];
    let mut out = Vec::new();
    let mut b = if is_root { mine.to_vec() } else { vec![0; m] };
    proc_root.broadcast_into(&mut b[..]);
    out.push(b);
    let mut o = vec![0u64; m];
    if is_root {
        proc_root.scatter_into_root(v, &mut o[..]);
    } else {
        proc_root.scatter_into(&mut o[..]);
    }
    out.push(o);
    let mut o = vec![0u64; k * m];
    if is_root {
        proc_root.gather_into_root(mine, &mut o[..]);
    } else {
        proc_root.gather_into(mine);
    }
    out.push(o);
    let mut o = vec![0u64; k * m];
    world.all_gather_into(mine, &mut o[..]);
    out.push(o);
    let mut o = vec![0u64; k * m];
    world.all_to_all_into(v, &mut o[..]);
    out.push(o);
    let mut o = vec![0u64; m];
    if is_root {
        proc_root.reduce_into_root(mine, &mut o[..], sum);
    } else {
        proc_root.reduce_into(mine, sum);
    }
    out.push(o);
    let mut o = vec![0u64; m];
    world.all_reduce_into(mine, &mut o[..], sum);
    out.push(o);
    let mut o = vec![0u64; m];
    world.scan_into(mine, &mut o[..], sum);
    out.push(o);
    let mut o = vec![0u64; m];
    world.exclusive_scan_into(mine, &mut o[..], sum);
    out.push(o);
    let mut o = vec![0u64; m];
    world.reduce_scatter_block_into(v, &mut o[..], sum);
    out.push(o);
    out
}

/// One round: the ten requests of `algo` on `k·m` elements, checked against MPI's
/// blocking calls; how many requests ran.
fn round(
    comm: &mut hypercomm_rt::Comm<hypercomm_mpi::Mpi>,
    world: &SimpleCommunicator,
    algo: Algo<'_>,
    m: usize,
    seed: u64,
) -> Result<usize, String> {
    let (me, k) = (comm.rank(), comm.size() as usize);
    let root = comm.size() - 1 - (seed % u64::from(comm.size())) as u32;
    let v: Vec<u64> = (0..k * m)
        .map(|i| u64::from(me) * 1_000_003 + i as u64 * 7 + seed)
        .collect();
    let want = theirs(world, &v, m, root);
    let mut got: Vec<Vec<u64>> = want.iter().map(|w| vec![0; w.len()]).collect();
    if me == root {
        got[0].copy_from_slice(&v[..m]);
    }
    let is_root = me == root;
    let plus = Op::<u64>::sum();
    let mine = &v[..m];
    let (mut during, mut check) = (vec![0u64; m], vec![0u64; m]);
    let [b, sc, ga, ag, aa, re, ar, sn, ex, rs] = &mut got[..] else {
        unreachable!("ten calls")
    };
    let before = threads_now();
    let (after, rans): (Option<u32>, Vec<(usize, Ran)>) = immediate::scope(|s| {
        let reqs = vec![
            comm.immediate_broadcast_into(s, root, b, algo)?,
            comm.immediate_scatter_into(s, root, is_root.then_some(&v[..]), sc, algo)?,
            comm.immediate_gather_into(s, root, mine, is_root.then_some(&mut ga[..]), algo)?,
            comm.immediate_all_gather_into(s, mine, ag, algo)?,
            comm.immediate_all_to_all_into(s, &v, aa, algo)?,
            comm.immediate_reduce_into(s, root, mine, is_root.then_some(&mut re[..]), &plus, algo)?,
            comm.immediate_all_reduce_into(s, mine, ar, &plus, algo)?,
            comm.immediate_scan_into(s, mine, sn, &plus, algo)?,
            comm.immediate_exclusive_scan_into(s, mine, ex, &plus, algo)?,
            comm.immediate_reduce_scatter_block_into(s, &v, rs, &plus, algo)?,
        ];
        let after = threads_now();
        if let Some(i) = reqs.iter().position(|q| !q.is_native()) {
            return Err(Error::Native {
                op: CALLS[i].into(),
                reason: "the request is not native".into(),
            });
        }
        // A blocking call of ours while the ten are in flight.
        comm.all_reduce_into(mine, &mut during, &plus, Algo::Auto)?;
        let mut reqs: Vec<_> = reqs.into_iter().enumerate().collect();
        let (_, forgotten) = reqs.remove(FORGOTTEN);
        std::mem::forget(forgotten);
        let (_, mut tested) = reqs.remove(TESTED);
        let mut rans = Vec::new();
        // The others in another order than started: the odd ones, then the even ones
        // from the last.
        let (odd, even): (Vec<_>, Vec<_>) = reqs.into_iter().partition(|(i, _)| i % 2 == 1);
        for (i, q) in odd.into_iter().chain(even.into_iter().rev()) {
            rans.push((i, q.wait()?));
        }
        loop {
            match tested.test() {
                Ok(done) => {
                    rans.push((TESTED, done?));
                    break;
                }
                Err(again) => tested = again,
            }
        }
        Ok((after, rans))
    })
    .map_err(|e: Error| format!("{algo:?} m = {m}: {e}"))?;
    world.all_reduce_into(mine, &mut check[..], SystemOperation::sum());
    if during != check {
        return Err(format!(
            "the blocking all-reduce among the requests: {during:?}"
        ));
    }
    if before.is_none() || before != after {
        return Err(format!(
            "{algo:?} m = {m}: {before:?} threads before starting the requests, {after:?} after"
        ));
    }
    let auto = matches!(algo, Algo::Auto);
    for (i, ran) in &rans {
        if ran.algorithm != NATIVE || ran.auto != auto {
            return Err(format!("{algo:?} {}: ran {ran:?}", CALLS[*i]));
        }
    }
    for (i, name) in CALLS.iter().enumerate() {
        // Where MPI specifies nothing: the gather's and reduce's non-roots, rank 0's
        // exclusive scan.
        let unspecified = match i {
            2 | 5 => !is_root,
            8 => me == 0,
            _ => false,
        };
        if !unspecified && got[i] != want[i] {
            let what = if i == FORGOTTEN { " (forgotten)" } else { "" };
            return Err(format!(
                "{algo:?} m = {m} {name}{what}: ours {:?}, MPI's {:?}",
                &got[i][..got[i].len().min(8)],
                &want[i][..want[i].len().min(8)]
            ));
        }
    }
    Ok(CALLS.len())
}

fn check(world: &SimpleCommunicator) -> Result<usize, String> {
    let mut comm = world.hypercomm().map_err(|e| e.to_string())?;
    let (me, m) = (comm.rank(), 4usize);
    // A first request, so that whatever MPI starts once for its non-blocking
    // collectives is there before threads are counted.
    let (one, mut first, plus) = ([1u64], [0u64], Op::sum());
    immediate::scope(|s| {
        comm.immediate_all_reduce_into(s, &one, &mut first, &plus, Algo::Auto)?
            .wait()
    })
    .map_err(|e| e.to_string())?;
    let mut n = 0;
    for (seed, m) in [(0u64, 1usize), (1, 3), (2, 1000)] {
        for algo in [Algo::Auto, Algo::Named(NATIVE)] {
            n += round(&mut comm, world, algo, m, seed)?;
            if comm.size() > 1 {
                n += vround(&mut comm, algo, seed)?;
            }
        }
    }
    // A start that cannot run is the start's typed error, with nothing started.
    let (x, mut short, mut out) = (vec![u64::from(me); m], vec![0u64; m - 1], vec![0u64; m]);
    immediate::scope(|s| {
        match comm.immediate_all_reduce_into(s, &x, &mut short, &plus, Algo::Auto) {
            Err(Error::BufferLength { .. }) => {}
            other => return Err(format!("a short buffer: {:?}", other.map(drop))),
        }
        // A named schedule takes a progress thread: MPI_THREAD_MULTIPLE is needed.
        let named = Algo::Named("ring");
        match comm.immediate_all_reduce_into(s, &x, &mut out, &plus, named) {
            Err(Error::Unsupported { .. }) => Ok(()),
            other => Err(format!("a named schedule: {:?}", other.map(drop))),
        }
    })?;
    // The ranks are still in step.
    let mut sum = [0u64];
    comm.all_reduce_into(&[u64::from(me)], &mut sum, &plus, Algo::Auto)
        .map_err(|e| e.to_string())?;
    let k = u64::from(comm.size());
    if sum != [k * (k - 1) / 2] {
        return Err(format!("after the errors: {sum:?}"));
    }
    Ok(n)
}

/// The five variable-count calls, in the order [`vround`] starts them.
const VCALLS: [&str; 5] = [
    "gatherv",
    "scatterv",
    "all-gatherv",
    "all-to-allv",
    "reduce-scatter",
];

/// One round of the five variable-count requests of `algo` (counts with zeros, from
/// `seed`), all in flight at once and waited for from the last, each checked against
/// the blocking call with `native` (`MPI_Gatherv` …); how many requests ran.
fn vround(
    comm: &mut hypercomm_rt::Comm<hypercomm_mpi::Mpi>,
    algo: Algo<'_>,
    seed: u64,
) -> Result<usize, String> {
    let (me, k) = (comm.rank() as usize, comm.size() as usize);
    let root = (seed as usize % k) as u32;
    let is_root = me == root as usize;
    let counts: Vec<usize> = (0..k).map(|r| (r * 3 + seed as usize) % 4).collect();
    let total: usize = counts.iter().sum();
    // Rank i sends (i + 2j + seed) % 3 elements to rank j.
    let a2a = |i: usize, j: usize| (i + 2 * j + seed as usize) % 3;
    let (sc, rc): (Vec<usize>, Vec<usize>) = (0..k).map(|j| (a2a(me, j), a2a(j, me))).unzip();
    let val = |i: usize| (me * 1_000_003 + i * 7) as u64 + seed;
    let mine: Vec<u64> = (0..counts[me]).map(val).collect();
    let all: Vec<u64> = (0..total).map(val).collect();
    let send: Vec<u64> = (0..sc.iter().sum::<usize>()).map(val).collect();
    let plus = Op::<u64>::sum();
    let native = Algo::Named(NATIVE);
    // Ours, blocking, by MPI's own calls.
    let mut want = vec![
        vec![0u64; if is_root { total } else { 0 }],
        vec![0u64; counts[me]],
        vec![0u64; total],
        vec![0u64; rc.iter().sum()],
        vec![0u64; counts[me]],
    ];
    let mut got = want.clone();
    let blocking = |comm: &mut hypercomm_rt::Comm<_>, out: &mut [Vec<u64>]| {
        let [ga, sv, ag, aa, rs] = out else {
            unreachable!("five calls")
        };
        let root_all = is_root.then_some(&all[..]);
        comm.gatherv_into(root, &mine, is_root.then_some(&mut ga[..]), &counts, native)?;
        comm.scatterv_into(root, root_all, sv, &counts, native)?;
        comm.all_gatherv_into(&mine, ag, &counts, native)?;
        comm.all_to_allv_into(&send, &sc, aa, &rc, native)?;
        comm.reduce_scatter_into(&all, rs, &counts, &plus, native)?;
        Ok::<_, Error>(())
    };
    blocking(comm, &mut want).map_err(|e| format!("blocking v-calls: {e}"))?;
    let before = threads_now();
    let [ga, sv, ag, aa, rs] = &mut got[..] else {
        unreachable!("five calls")
    };
    let (after, rans) = immediate::scope(|s| {
        let root_all = is_root.then_some(&all[..]);
        let reqs = vec![
            comm.immediate_gatherv_into(
                s,
                root,
                &mine,
                is_root.then_some(&mut ga[..]),
                &counts,
                algo,
            )?,
            comm.immediate_scatterv_into(s, root, root_all, sv, &counts, algo)?,
            comm.immediate_all_gatherv_into(s, &mine, ag, &counts, algo)?,
            comm.immediate_all_to_allv_into(s, &send, &sc, aa, &rc, algo)?,
            comm.immediate_reduce_scatter_into(s, &all, rs, &counts, &plus, algo)?,
        ];
        let after = threads_now();
        if let Some(i) = reqs.iter().position(|q| !q.is_native()) {
            return Err(Error::Native {
                op: VCALLS[i].into(),
                reason: "the request is not native".into(),
            });
        }
        let mut rans = Vec::new();
        for q in reqs.into_iter().rev() {
            rans.push(q.wait()?);
        }
        Ok((after, rans))
    })
    .map_err(|e: Error| format!("{algo:?} v-calls: {e}"))?;
    if before.is_none() || before != after {
        return Err(format!(
            "{algo:?} v-calls: {before:?} threads before starting, {after:?} after"
        ));
    }
    let auto = matches!(algo, Algo::Auto);
    if let Some(ran) = rans
        .iter()
        .find(|r| r.algorithm != NATIVE || r.auto != auto)
    {
        return Err(format!("{algo:?} v-call ran {ran:?}"));
    }
    for (i, name) in VCALLS.iter().enumerate() {
        if got[i] != want[i] {
            return Err(format!(
                "{algo:?} {name}: started {:?}, blocking {:?}",
                got[i], want[i]
            ));
        }
    }
    Ok(VCALLS.len())
}

fn main() -> ExitCode {
    // The default thread level: the native path calls MPI from this thread only.
    let Some(universe) = mpi::initialize() else {
        eprintln!("native_requests: MPI was already initialized");
        return ExitCode::FAILURE;
    };
    let world = universe.world();
    let outcome = check(&world);
    if let Err(e) = &outcome {
        eprintln!("native_requests: rank {}: {e}", world.rank());
    }
    let mut ok = [u8::from(outcome.is_ok())];
    let mine = ok;
    world.all_reduce_into(&mine[..], &mut ok[..], SystemOperation::min());
    if ok[0] == 0 {
        return ExitCode::FAILURE;
    }
    if world.rank() == 0 {
        println!(
            "native_requests: {} requests matched MPI ({} ranks)",
            outcome.unwrap_or(0),
            world.size()
        );
    }
    ExitCode::SUCCESS
}
