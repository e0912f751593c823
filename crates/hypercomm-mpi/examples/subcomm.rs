//! Sub-communicators, persistent and non-blocking collectives on the MPI backend, each
//! result checked against native MPI (rsmpi's `split_by_color_with_key` and its
//! collectives) on the same groups: a split by scattered colors and keys (some ranks
//! in none), the rows and columns of the shape `A×B` (A the largest factor ≤ √k), a
//! duplicate, the node-local and across-node communicators, each ranked as MPI ranks
//! it; the parent's all-reduce between their calls and while row and column requests
//! are in flight, with a persistent all-reduce started on the parent and a request
//! dropped unfinished; the requests completed in another order than started (one
//! polled with `test`); a persistent all-reduce run ten times. Then the
//! variable-count calls (gatherv, scatterv, allgatherv, alltoallv, reduce-scatter with
//! counts), on the parent and on the rows, with random counts (zeros among them) and
//! each of their registry algorithms in turn: the five started as requests at once and
//! completed in another order than started, and the five planned once by each
//! algorithm (counts fixed) and run ten times with new data (every other time started
//! as requests), each result
//! against MPI's `MPI_Gatherv`, `MPI_Scatterv`, `MPI_Allgatherv`, `MPI_Alltoallv` and
//! `MPI_Reduce_scatter` on the same group and data. Prints
//! `subcomm: every rank matched native MPI (k ranks)` on rank 0; exit 1 on a mismatch.
//! `cargo test -p hypercomm-mpi` runs it on 1, 2, 3, 5 and 8 ranks.
//!
//! ```text
//! cargo build --release -p hypercomm-mpi --examples
//! mpirun -n 6 target/release/examples/subcomm
//! ```

use std::process::ExitCode;
use std::time::Duration;

use hypercomm::collective::OpKind;
use hypercomm::topology::Topology;
use hypercomm_mpi::{Config, HypercommExt};
use hypercomm_rt::{Algo, Comm, Detach, Op, Persistent, Transport};
use mpi::collective::SystemOperation;
use mpi::datatype::{Partition, PartitionMut};
use mpi::raw::AsRaw;
use mpi::topology::{Color, SimpleCommunicator};
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
    let world_case = VCase::new(1, k, r, 700); // blocks up to 44 KB
    let row_case = VCase::new(2, row.size(), row.rank(), 1);
    let world_plans = world_case.all_plans(&mut comm).map_err(err)?;
    let row_plans = row_case.all_plans(&mut row).map_err(err)?;
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
        let world_plans = (&world_case, &world_plans[..]);
        varcount("parent", &mut comm, world, world_plans, round)?;
        let row_plans = (&row_case, &row_plans[..]);
        varcount("row", &mut row, &native_row, row_plans, round)?;
    }
    Ok(())
}

/// The variable-count calls, in this order everywhere.
const VCALLS: [OpKind; 5] = [
    OpKind::Gatherv,
    OpKind::Scatterv,
    OpKind::Allgatherv,
    OpKind::Alltoallv,
    OpKind::ReduceScatterv,
];

/// The five calls' buffers (or results) on one rank, in `VCALLS`'s order.
type Bufs = [Vec<u64>; 5];

/// A variable-count problem on a communicator of k ranks, as rank `me` sees it: counts
/// `c` (one per rank), the k × k matrix `m` of alltoallv (row-major), a root; the same
/// on every rank of the communicator (drawn from `seed` alone), about a third zero,
/// the others 3 to 8 times `scale`.
struct VCase {
    k: usize,
    me: usize,
    root: u32,
    c: Vec<usize>,
    m: Vec<usize>,
}

impl VCase {
    fn new(seed: u64, k: u32, me: u32, scale: usize) -> VCase {
        let n = k as usize;
        let draw = |i: usize| {
            let h =
                (seed.wrapping_mul(1_000_003) + i as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
            match (h >> 40) % 9 {
                0..=2 => 0,
                x => x as usize * scale,
            }
        };
        VCase {
            k: n,
            me: me as usize,
            root: (seed % u64::from(k)) as u32,
            c: (0..n).map(draw).collect(),
            m: (n..n + n * n).map(draw).collect(),
        }
    }

    fn is_root(&self) -> bool {
        self.me == self.root as usize
    }

    /// This rank's row (what it sends each rank) and column of the matrix.
    fn row_col(&self) -> (Vec<usize>, Vec<usize>) {
        let (k, me) = (self.k, self.me);
        (
            self.m[me * k..][..k].to_vec(),
            (0..k).map(|i| self.m[i * k + me]).collect(),
        )
    }

    /// This rank's sends in run `run` (new data each run): gatherv's and allgatherv's
    /// its block, scatterv's the root's whole vector (empty elsewhere), alltoallv's its
    /// row's blocks, reduce-scatter's a whole vector.
    fn sends(&self, run: u64) -> Bufs {
        let x = |i: usize| ((self.me as u64) << 40) ^ (run << 20) ^ i as u64;
        let total: usize = self.c.iter().sum();
        let row: usize = self.row_col().0.iter().sum();
        let root_total = if self.is_root() { total } else { 0 };
        [self.c[self.me], root_total, self.c[self.me], row, total].map(|n| (0..n).map(x).collect())
    }

    /// This rank's receive buffers, zeroed.
    fn recvs(&self) -> Bufs {
        let total: usize = self.c.iter().sum();
        let col: usize = self.row_col().1.iter().sum();
        let root_total = if self.is_root() { total } else { 0 };
        let mine = self.c[self.me];
        [root_total, mine, total, col, mine].map(|n| vec![0; n])
    }

    /// Registry algorithm `i` (mod their number, `auto` among them) of each call.
    fn algos(&self, i: usize) -> [Algo<'static>; 5] {
        let topology = Topology::complete(self.k as u32);
        VCALLS.map(|op| {
            let names = hypercomm::algorithms::fitting(&topology, op);
            match names.get(i % (names.len() + 1)) {
                Some(a) => Algo::Named(a.name),
                None => Algo::Auto,
            }
        })
    }

    /// The five calls planned on `comm` by each of their algorithms (`i` from 0 until
    /// every call's have been used, `auto` among them).
    fn all_plans<X: Transport>(
        &self,
        comm: &mut Comm<X>,
    ) -> hypercomm_rt::Result<Vec<[Persistent<'static, u64>; 5]>> {
        let topology = Topology::complete(self.k as u32);
        let most = VCALLS
            .iter()
            .map(|&op| hypercomm::algorithms::fitting(&topology, op).len() + 1)
            .max()
            .unwrap_or(1);
        (0..most).map(|i| self.plans(comm, i)).collect()
    }

    /// The five calls planned on `comm`, each by its algorithm `i`.
    fn plans<X: Transport>(
        &self,
        comm: &mut Comm<X>,
        i: usize,
    ) -> hypercomm_rt::Result<[Persistent<'static, u64>; 5]> {
        let [g, s, a, t, rs] = self.algos(i);
        let (row, col) = self.row_col();
        Ok([
            comm.plan_gatherv(self.root, &self.c, g)?,
            comm.plan_scatterv(self.root, &self.c, s)?,
            comm.plan_all_gatherv(&self.c, a)?,
            comm.plan_all_to_allv(&row, &col, t)?,
            comm.plan_reduce_scatter(&self.c, Op::sum(), rs)?,
        ])
    }

    /// The five calls as requests, started in order, each by its algorithm `i`, and
    /// completed in `order`; the first polled with `test`.
    fn immediate<X: Detach>(
        &self,
        comm: &mut Comm<X>,
        sends: &Bufs,
        i: usize,
        order: [usize; 5],
    ) -> hypercomm_rt::Result<Bufs> {
        let [g, s, a, t, rs] = self.algos(i);
        let (row, col) = self.row_col();
        let mut recvs = self.recvs();
        let [gr, sr, ar, tr, rsr] = &mut recvs;
        let root = self.root;
        let sum = Op::sum();
        let c = &self.c;
        std::thread::scope(|scope| {
            let root_send = self.is_root().then_some(&sends[1][..]);
            let root_recv = self.is_root().then_some(&mut gr[..]);
            let mut reqs = [
                Some(comm.immediate_gatherv_into(scope, root, &sends[0], root_recv, c, g)?),
                Some(comm.immediate_scatterv_into(scope, root, root_send, sr, c, s)?),
                Some(comm.immediate_all_gatherv_into(scope, &sends[2], ar, c, a)?),
                Some(comm.immediate_all_to_allv_into(scope, &sends[3], &row, tr, &col, t)?),
                Some(comm.immediate_reduce_scatter_into(scope, &sends[4], rsr, c, &sum, rs)?),
            ];
            for (n, i) in order.into_iter().enumerate() {
                let mut req = reqs[i].take().expect("each completed once");
                while n == 0 && !req.is_complete() {
                    req = match req.test() {
                        Ok(done) => return done.map(drop),
                        Err(pending) => pending,
                    };
                    std::thread::yield_now();
                }
                req.wait()?;
            }
            Ok(())
        })?;
        Ok(recvs)
    }

    /// MPI's own calls (rsmpi's `*_varcount_into`, and `MPI_Reduce_scatter` directly)
    /// on `native`, with `sends`.
    fn native(&self, native: &SimpleCommunicator, sends: &Bufs) -> Bufs {
        let mut recvs = self.recvs();
        let [gr, sr, ar, tr, rsr] = &mut recvs;
        let part = |c: &[usize]| {
            let counts: Vec<mpi::Count> = c.iter().map(|&x| x as mpi::Count).collect();
            let displs = counts
                .iter()
                .scan(0, |at, &x| {
                    *at += x;
                    Some(*at - x)
                })
                .collect::<Vec<_>>();
            (counts, displs)
        };
        let root = native.process_at_rank(self.root as i32);
        let (c, d) = part(&self.c);
        if self.is_root() {
            root.gather_varcount_into_root(
                &sends[0][..],
                &mut PartitionMut::new(&mut gr[..], c.clone(), &d[..]),
            );
            root.scatter_varcount_into_root(
                &Partition::new(&sends[1][..], c.clone(), &d[..]),
                &mut sr[..],
            );
        } else {
            root.gather_varcount_into(&sends[0][..]);
            root.scatter_varcount_into(&mut sr[..]);
        }
        native.all_gather_varcount_into(
            &sends[2][..],
            &mut PartitionMut::new(&mut ar[..], c.clone(), &d[..]),
        );
        let (row, col) = self.row_col();
        let ((sc, sd), (rc, rd)) = (part(&row), part(&col));
        native.all_to_all_varcount_into(
            &Partition::new(&sends[3][..], sc, sd),
            &mut PartitionMut::new(&mut tr[..], rc, rd),
        );
        // SAFETY: `sends[4]` holds Σ counts elements, `rsr` this rank's count, `c` one
        // count per rank; the call blocks until done.
        unsafe {
            mpi::ffi::MPI_Reduce_scatter(
                sends[4].as_ptr() as *const std::ffi::c_void,
                rsr.as_mut_ptr() as *mut std::ffi::c_void,
                c.as_ptr(),
                mpi::ffi::RSMPI_UINT64_T,
                mpi::ffi::RSMPI_SUM,
                native.as_raw(),
            );
        }
        recvs
    }
}

/// Round `round` of the variable-count checks on `ours` (MPI's `native`, the same
/// group): the five calls of new counts as requests, completed in another order than
/// started, and the five `plans` of `planned` run (or started) with new data; each
/// against MPI's.
fn varcount<X: Detach>(
    what: &str,
    ours: &mut Comm<X>,
    native: &SimpleCommunicator,
    (planned, plan_sets): (&VCase, &[[Persistent<'static, u64>; 5]]),
    round: u64,
) -> Result<(), String> {
    let err = |e: hypercomm_rt::Error| format!("{what} round {round}: {e}");
    let i = round as usize;
    let scale = if round % 2 == 0 { 1 } else { 300 };
    let case = VCase::new(100 + round, ours.size(), ours.rank(), scale);
    let sends = case.sends(round);
    // Rotated and reversed: from the (round mod 5)-th call backwards.
    let order = [0, 1, 2, 3, 4].map(|n| (i + 5 - n) % 5);
    let started = case.immediate(ours, &sends, i, order).map_err(err)?;
    let theirs = case.native(native, &sends);
    for (n, op) in VCALLS.iter().enumerate() {
        if started[n] != theirs[n] {
            return Err(format!(
                "{what} round {round}: {op} counts {:?} matrix {:?}: immediate {}",
                case.c,
                case.m,
                differ(&started[n], &theirs[n])
            ));
        }
    }
    let sends = planned.sends(round);
    let planned_theirs = planned.native(native, &sends);
    for (i, plans) in plan_sets.iter().enumerate() {
        let mut ran = planned.recvs();
        if (round as usize + i) % 2 == 0 {
            for ((plan, send), recv) in plans.iter().zip(&sends).zip(&mut ran) {
                plan.run(ours, send, recv).map_err(err)?;
            }
        } else {
            std::thread::scope(|s| {
                let mut reqs = Vec::new();
                for ((plan, send), recv) in plans.iter().zip(&sends).zip(&mut ran) {
                    reqs.push(plan.start(ours, s, send, recv)?);
                }
                // The last started first.
                reqs.into_iter().rev().try_for_each(|r| r.wait().map(drop))
            })
            .map_err(err)?;
        }
        for (n, op) in VCALLS.iter().enumerate() {
            if ran[n] != planned_theirs[n] {
                return Err(format!(
                    "{what} round {round}: persistent {op} by {} counts {:?} matrix {:?}: {}",
                    plans[n].ran().algorithm,
                    planned.c,
                    planned.m,
                    differ(&ran[n], &planned_theirs[n])
                ));
            }
        }
    }
    Ok(())
}

/// How `ours` differs from MPI's `theirs`: lengths, or the first element that differs.
fn differ(ours: &[u64], theirs: &[u64]) -> String {
    match ours.iter().zip(theirs).position(|(a, b)| a != b) {
        Some(i) => format!("element {i} is {}, MPI's {}", ours[i], theirs[i]),
        None => format!("{} elements, MPI's {}", ours.len(), theirs.len()),
    }
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
