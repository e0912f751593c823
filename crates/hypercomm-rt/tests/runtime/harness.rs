//! The harness: every registry algorithm that fits `complete:k` × k × length × root, on
//! the threads backend, against the serial reference; reductions with wrapping addition
//! and, for the algorithms that keep rank order, a non-commutative 2×2 matrix product;
//! the in-place forms too; and `Algo::Auto` once per collective, k and length. Every
//! root is run; point-to-point every (source, destination) pair up to k = 5 and a
//! spread of pairs above.

use std::time::Duration;

use hypercomm::algorithms::{self, Packets, Params};
use hypercomm::collective::{Collective, OpKind};
use hypercomm::schedule::Rank;
use hypercomm::topology::Topology;
use hypercomm::verify::{verify, Problem, Strictness};
use hypercomm_rt::threads::{self, Config, Threads};
use hypercomm_rt::{Algo, Calibration, Comm, Error, Op, Ran};

use crate::reference::{expected, random, Data, Mat2};

const RANKS: [u32; 7] = [1, 2, 3, 5, 8, 13, 16];
const LENS: [usize; 3] = [0, 1, 1000];

/// One call of the matrix.
#[derive(Clone, Debug)]
struct Case {
    collective: Collective,
    /// A registry name, or `None` for `Algo::Auto`.
    algo: Option<&'static str>,
    len: usize,
    /// The matrix product instead of wrapping addition (reductions only).
    matrices: bool,
    in_place: bool,
    /// `Some(error kind)` when every rank must refuse the call.
    refused: Option<&'static str>,
}

/// What a rank got from one case: the algorithm and its output as words, or the error.
type Got = Result<(Ran, Vec<u32>), Error>;

/// Every root: the runs are short (the whole harness takes seconds), so no root is
/// left out up to k = 16, the largest of [`RANKS`].
fn roots(k: u32) -> Vec<Rank> {
    (0..k).collect()
}

/// Point-to-point's (source, destination) pairs: every pair for k ≤ 5; above, every
/// source to the rank about half-way round, and from ranks 0, k/2 and k − 1 to
/// themselves and to their successor.
fn pairs(k: u32) -> Vec<(Rank, Rank)> {
    if k <= 5 {
        return (0..k).flat_map(|s| (0..k).map(move |d| (s, d))).collect();
    }
    let mut v: Vec<(Rank, Rank)> = (0..k).map(|s| (s, (s + 1 + k / 2) % k)).collect();
    for s in [0, k / 2, k - 1] {
        v.extend([(s, s), (s, (s + 1) % k)]);
    }
    v.sort_unstable();
    v.dedup();
    v
}

/// The instances of `kind` on k ranks: one per root, or per (source, destination) pair
/// of [`pairs`] for point-to-point.
fn instances(kind: OpKind, k: u32) -> Vec<Collective> {
    if kind == OpKind::P2p {
        return pairs(k)
            .into_iter()
            .map(|(src, dst)| Collective::P2p { src, dst })
            .collect();
    }
    if !kind.has_root() {
        return vec![Collective::new(kind, k, None, None, None).unwrap()];
    }
    roots(k)
        .into_iter()
        .map(|r| Collective::new(kind, k, Some(r.into()), None, None).unwrap())
        .collect()
}

fn params(elem_bytes: usize) -> Params {
    Params {
        packets: Packets::Opt,
        model: Calibration::default().model(elem_bytes),
    }
}

/// Whether the algorithm's schedule is correct for a non-commutative operator, as the
/// runtime decides (same parameters).
fn keeps_order(algo: &algorithms::Algorithm, topo: &Topology, c: Collective, m: usize) -> bool {
    let problem = Problem {
        topology: topo,
        collective: c,
        len: m as u64,
        commutative: false,
        counts: None,
    };
    // An algorithm may refuse non-commutative operators when it builds.
    algo.build(&problem, &params(16))
        .is_ok_and(|s| verify(problem, s.as_ref(), Strictness::default()).is_ok())
}

fn has_in_place(kind: OpKind) -> bool {
    matches!(
        kind,
        OpKind::Allreduce | OpKind::Scan | OpKind::ExclusiveScan | OpKind::Allgather
    )
}

/// Every case of `kind` on k ranks.
fn cases(kind: OpKind, k: u32) -> Vec<Case> {
    let topo = Topology::complete(k);
    let fitting = algorithms::fitting(&topo, kind);
    let mut out = Vec::new();
    for collective in instances(kind, k) {
        for len in LENS {
            let names = fitting.iter().map(|a| Some(a.name)).chain([None]);
            for algo in names {
                for matrices in [false, true] {
                    if matrices && !kind.is_reduction() {
                        continue;
                    }
                    let refused = refusal(&topo, collective, len, algo, matrices);
                    for in_place in [false, true] {
                        if in_place && !has_in_place(kind) {
                            continue;
                        }
                        out.push(Case {
                            collective,
                            algo,
                            len,
                            matrices,
                            in_place,
                            refused,
                        });
                    }
                }
            }
        }
    }
    out
}

/// Which error every rank must return, if any.
fn refusal(
    topo: &Topology,
    c: Collective,
    m: usize,
    algo: Option<&str>,
    matrices: bool,
) -> Option<&'static str> {
    let ordered = |a: &&&algorithms::Algorithm| !matrices || keeps_order(a, topo, c, m);
    match algo {
        // `Algo::Auto` always runs, whatever the operator: every collective has an
        // algorithm for every k on complete:k, and one that keeps rank order (for
        // reduce-scatter on k ≠ 2^n, `pairwise`), so a refusal is a failure.
        None => None,
        // A named algorithm (each one fits complete:k here) is refused only for a
        // non-commutative operator whose rank order it does not keep.
        Some(name) if !ordered(&&algorithms::find(c.kind(), name).unwrap()) => {
            Some("NotOrderPreserving")
        }
        Some(_) => None,
    }
}

fn seed(k: u32, case: usize, rank: Rank) -> u64 {
    (u64::from(k) << 40) ^ ((case as u64) << 16) ^ u64::from(rank)
}

/// Every rank's input of one case.
fn inputs<T: Data>(k: u32, i: usize, case: &Case) -> Vec<Vec<T>> {
    (0..k)
        .map(|r| {
            let n = case.collective.in_len(k, case.len as u64, r) as usize;
            random(seed(k, i, r), n)
        })
        .collect()
}

/// Run one case on one rank.
fn run_case<T: Data>(
    comm: &mut Comm<Threads<'_>>,
    case: &Case,
    input: &[T],
    op: &Op<'_, T>,
) -> Result<(Ran, Vec<T>), Error> {
    let (k, r, m) = (comm.size(), comm.rank(), case.len);
    let algo = case.algo.map_or(Algo::Auto, Algo::Named);
    let out_len = case.collective.out_len(k, m as u64, r) as usize;
    // Garbage in the output, so an element never written shows.
    let mut out: Vec<T> = random(!seed(k, 0, r), out_len);
    let c = case.collective;
    let is = |x: Rank| r == x;
    let ran = match c {
        Collective::P2p { src, dst } => {
            let recv = is(dst).then_some(&mut out[..]);
            comm.p2p_into(src, dst, m, is(src).then_some(input), recv, algo)?
        }
        Collective::Broadcast { root } => {
            if is(root) {
                out.copy_from_slice(input);
            }
            comm.broadcast_into(root, &mut out, algo)?
        }
        Collective::Scatter { root } => {
            comm.scatter_into(root, is(root).then_some(input), &mut out, algo)?
        }
        Collective::Gather { root } => {
            comm.gather_into(root, input, is(root).then_some(&mut out[..]), algo)?
        }
        Collective::Allgather if case.in_place => {
            out[r as usize * m..][..m].copy_from_slice(input);
            comm.all_gather_in_place(&mut out, algo)?
        }
        Collective::Allgather => comm.all_gather_into(input, &mut out, algo)?,
        Collective::Alltoall => comm.all_to_all_into(input, &mut out, algo)?,
        Collective::Reduce { root } => {
            comm.reduce_into(root, input, is(root).then_some(&mut out[..]), op, algo)?
        }
        // The variable-count calls with every count m (uneven counts: `vcount.rs`).
        Collective::Gatherv { root } => {
            let recv = is(root).then_some(&mut out[..]);
            comm.gatherv_into(root, input, recv, &vec![m; k as usize], algo)?
        }
        Collective::Scatterv { root } => {
            let send = is(root).then_some(input);
            comm.scatterv_into(root, send, &mut out, &vec![m; k as usize], algo)?
        }
        Collective::Allgatherv => {
            comm.all_gatherv_into(input, &mut out, &vec![m; k as usize], algo)?
        }
        Collective::Alltoallv => {
            let even = vec![m; k as usize];
            comm.all_to_allv_into(input, &even, &mut out, &even, algo)?
        }
        _ => return reduction(comm, case, input, op, out),
    };
    Ok((ran, out))
}

/// The reductions without a root, separate or in place.
fn reduction<T: Data>(
    comm: &mut Comm<Threads<'_>>,
    case: &Case,
    input: &[T],
    op: &Op<'_, T>,
    mut out: Vec<T>,
) -> Result<(Ran, Vec<T>), Error> {
    let algo = case.algo.map_or(Algo::Auto, Algo::Named);
    if case.in_place {
        out.copy_from_slice(input);
    }
    let ran = match (case.collective, case.in_place) {
        (Collective::Allreduce, false) => comm.all_reduce_into(input, &mut out, op, algo)?,
        (Collective::Allreduce, true) => comm.all_reduce_in_place(&mut out, op, algo)?,
        (Collective::Scan, false) => comm.scan_into(input, &mut out, op, algo)?,
        (Collective::Scan, true) => comm.scan_in_place(&mut out, op, algo)?,
        (Collective::ExclusiveScan, false) => {
            comm.exclusive_scan_into(input, &mut out, op, algo)?
        }
        (Collective::ExclusiveScan, true) => comm.exclusive_scan_in_place(&mut out, op, algo)?,
        (Collective::ReduceScatter, _) => {
            comm.reduce_scatter_block_into(input, &mut out, op, algo)?
        }
        (Collective::ReduceScatterv, _) => {
            let even = vec![case.len; comm.size() as usize];
            comm.reduce_scatter_into(input, &mut out, &even, op, algo)?
        }
        (c, _) => panic!("no call for {c}"),
    };
    Ok((ran, out))
}

/// One rank's part of every case; an unexpected error stops the rank.
fn rank_main(comm: &mut Comm<Threads<'_>>, cases: &[Case]) -> Result<Vec<Got>, String> {
    let (k, r) = (comm.size(), comm.rank());
    let sum = Op::<u32>::sum();
    let matmul = Op::associative(Mat2::mul);
    let mut all = Vec::with_capacity(cases.len());
    for (i, case) in cases.iter().enumerate() {
        let got = if case.matrices {
            let input = &inputs::<Mat2>(k, i, case)[r as usize];
            run_case(comm, case, input, &matmul)
                .map(|(ran, out)| (ran, bytemuck::cast_slice(&out).to_vec()))
        } else {
            run_case(comm, case, &inputs::<u32>(k, i, case)[r as usize], &sum)
        };
        match (&got, case.refused) {
            (Err(Error::NotOrderPreserving { .. }), Some("NotOrderPreserving")) => {}
            (Err(Error::NoAlgorithm { .. }), Some("NoAlgorithm")) => {}
            (Err(e), _) => return Err(format!("rank {r}, {case:?}: {e}")),
            _ => {}
        }
        all.push(got);
    }
    Ok(all)
}

/// The reference outputs of one case, as words.
fn reference(k: u32, i: usize, case: &Case) -> Vec<Option<Vec<u32>>> {
    let (c, m) = (case.collective, case.len);
    if case.matrices {
        let words = |v: Vec<Mat2>| bytemuck::cast_slice::<Mat2, u32>(&v).to_vec();
        let want = expected(c, m, &inputs::<Mat2>(k, i, case), &Mat2::mul);
        want.into_iter().map(|o| o.map(words)).collect()
    } else {
        expected(c, m, &inputs::<u32>(k, i, case), &|a: &u32, b: &u32| {
            a.wrapping_add(*b)
        })
    }
}

/// Check every rank's result of case `i`.
fn check(k: u32, i: usize, case: &Case, got: &[&Got]) -> Result<(), String> {
    let want = reference(k, i, case);
    for (r, (got, want)) in got.iter().zip(want).enumerate() {
        let fail = |what: String| Err(format!("k = {k}, rank {r}, {case:?}: {what}"));
        let (ran, out) = match (got, case.refused) {
            (Err(_), Some(_)) => continue,
            (Ok(_), Some(why)) => return fail(format!("ran, but {why} was expected")),
            (Err(e), None) => return fail(e.to_string()),
            (Ok(x), None) => x,
        };
        if let Some(name) = case.algo {
            if ran.algorithm != name || ran.auto {
                return fail(format!("ran {ran:?}"));
            }
        } else if !ran.auto {
            return fail(format!("Algo::Auto ran {ran:?}"));
        }
        if let Some(want) = want {
            if *out != want {
                let at = out.iter().zip(&want).position(|(a, b)| a != b);
                return fail(format!(
                    "wrong output (first difference at word {at:?}), {ran:?}"
                ));
            }
        }
    }
    Ok(())
}

/// Run every case of `kind` on k ranks (as fibers if `fibers`); returns how many calls
/// ran.
fn run_kind(kind: OpKind, k: u32, fibers: bool) -> usize {
    let cases = cases(kind, k);
    if cases.is_empty() {
        return 0;
    }
    let config = Config::new(k)
        .timeout(Duration::from_secs(30))
        .calibration(Calibration::default())
        .fibers(fibers);
    let per_rank = threads::run_with(&config, |comm| rank_main(comm, &cases))
        .unwrap_or_else(|e| panic!("{kind} on {k} ranks: {e}"));
    for (i, case) in cases.iter().enumerate() {
        let got: Vec<&Got> = per_rank.iter().map(|all| &all[i]).collect();
        if let Err(e) = check(k, i, case, &got) {
            panic!("{e}");
        }
    }
    cases.len()
}

/// The collectives the runtime runs on `complete:k`: all but download, whose
/// algorithms need a host (`hypercube:N+host`, seed 003), and the transposition, whose
/// algorithm needs a square torus (seed 004).
fn on_threads() -> impl Iterator<Item = OpKind> {
    OpKind::ALL
        .into_iter()
        .filter(|&k| k != OpKind::Download && k != OpKind::Transpose)
}

#[test]
fn every_algorithm_matches_the_serial_reference() {
    let mut report = Vec::new();
    for kind in on_threads() {
        let runs: Vec<usize> = RANKS.iter().map(|&k| run_kind(kind, k, false)).collect();
        report.push(format!("{kind}: {runs:?}"));
    }
    eprintln!("calls per k in {RANKS:?}:\n{}", report.join("\n"));
    // Every collective has an algorithm at every k, so the matrix can never silently
    // shrink to nothing (and `Algo::Auto` is never refused, see `refusal`).
    for kind in on_threads() {
        for k in RANKS {
            assert!(
                !algorithms::fitting(&Topology::complete(k), kind).is_empty(),
                "no algorithm for {kind} on {k} ranks"
            );
        }
    }
}

/// The same matrix with the ranks that share a CPU run as fibers of one thread per CPU
/// (`Config::fibers`), launched from a thread restricted to two CPUs so that every
/// rank count from 3 on runs as fibers on any machine.
#[test]
fn every_algorithm_matches_the_serial_reference_on_fibers() {
    crate::on_two_cpus(|| {
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get()) as u32;
        let ks: Vec<u32> = RANKS.iter().copied().filter(|&k| k > cpus).collect();
        assert!(!ks.is_empty(), "{cpus} CPUs: no rank count runs as fibers");
        for kind in on_threads() {
            let runs: Vec<usize> = ks.iter().map(|&k| run_kind(kind, k, true)).collect();
            assert!(runs.iter().sum::<usize>() > 0, "{kind}: no case ran");
        }
    });
}
