//! The variable-count collectives on threads: every registry algorithm of gatherv,
//! scatterv, allgatherv, alltoallv and reduce-scatterv, and `Auto`, on 1, 2, 3, 5 and 8
//! ranks with random counts (about a third zero), against a serial reference computed
//! from every rank's input. Reduce-scatter runs with 2 × 2 matrix products (associative,
//! not commutative), so a wrong combine order shows.

use hypercomm::algorithms::fitting;
use hypercomm::collective::OpKind;
use hypercomm::topology::Topology;
use hypercomm_rt::{threads, Algo, Calibration, Op, Ran};

use crate::reference::{Mat2, Rng};

pub(crate) const RANKS: [u32; 5] = [1, 2, 3, 5, 8];

/// Random counts with zeros: k per rank (or k × k), each 0 with probability 3/8.
pub(crate) fn counts(rng: &mut Rng, n: usize) -> Vec<usize> {
    (0..n)
        .map(|_| match rng.next() % 8 {
            0..=2 => 0,
            x => x as usize,
        })
        .collect()
}

/// Element `i` of rank `r`'s input.
pub(crate) fn el(r: u32, i: usize) -> u64 {
    ((r as u64) << 32) | i as u64
}

/// The algorithms to run for `op` on k ranks: every registered one that fits
/// `complete:k` (the hypercube ones on 2^n ranks), and `auto`.
pub(crate) fn algos(op: OpKind, k: u32) -> Vec<&'static str> {
    let mut v: Vec<&'static str> = fitting(&Topology::complete(k), op)
        .into_iter()
        .map(|a| a.name)
        .collect();
    assert!(v.len() >= 2, "{op}: {v:?}");
    v.push("auto");
    v
}

pub(crate) fn prefix(c: &[usize]) -> Vec<usize> {
    let mut p = vec![0];
    for &x in c {
        p.push(p.last().unwrap() + x);
    }
    p
}

#[test]
fn gatherv_and_scatterv_match_the_reference() {
    let mut rng = Rng::new(24);
    for k in RANKS {
        for _ in 0..3 {
            let c = counts(&mut rng, k as usize);
            let p = prefix(&c);
            let root = (rng.next() % k as u64) as u32;
            for name in algos(OpKind::Gatherv, k) {
                let got = threads::run(k, |comm| {
                    let r = comm.rank();
                    let send: Vec<u64> = (0..c[r as usize]).map(|i| el(r, i)).collect();
                    let mut all = vec![0u64; p[k as usize]];
                    let recv = (r == root).then_some(&mut all[..]);
                    comm.gatherv_into(root, &send, recv, &c, Algo::from(name))?;
                    Ok::<_, hypercomm_rt::Error>(all)
                })
                .unwrap();
                let want: Vec<u64> = (0..k)
                    .flat_map(|r| (0..c[r as usize]).map(move |i| el(r, i)))
                    .collect();
                assert_eq!(
                    got[root as usize], want,
                    "gatherv/{name} k {k} counts {c:?} root {root}"
                );
            }
            for name in algos(OpKind::Scatterv, k) {
                let got = threads::run(k, |comm| {
                    let r = comm.rank();
                    let data: Vec<u64> = (0..p[k as usize]).map(|i| el(root, i)).collect();
                    let mut mine = vec![0u64; c[r as usize]];
                    let send = (r == root).then_some(&data[..]);
                    comm.scatterv_into(root, send, &mut mine, &c, Algo::from(name))?;
                    Ok::<_, hypercomm_rt::Error>(mine)
                })
                .unwrap();
                for r in 0..k as usize {
                    let want: Vec<u64> = (p[r]..p[r + 1]).map(|i| el(root, i)).collect();
                    assert_eq!(
                        got[r], want,
                        "scatterv/{name} k {k} counts {c:?} root {root} rank {r}"
                    );
                }
            }
        }
    }
}

#[test]
fn allgatherv_matches_the_reference() {
    let mut rng = Rng::new(240);
    for k in RANKS {
        for _ in 0..3 {
            let c = counts(&mut rng, k as usize);
            let total = c.iter().sum();
            for name in algos(OpKind::Allgatherv, k) {
                let got = threads::run(k, |comm| {
                    let r = comm.rank();
                    let send: Vec<u64> = (0..c[r as usize]).map(|i| el(r, i)).collect();
                    let mut all = vec![0u64; total];
                    comm.all_gatherv_into(&send, &mut all, &c, Algo::from(name))?;
                    Ok::<_, hypercomm_rt::Error>(all)
                })
                .unwrap();
                let want: Vec<u64> = (0..k)
                    .flat_map(|r| (0..c[r as usize]).map(move |i| el(r, i)))
                    .collect();
                assert_eq!(
                    got,
                    vec![want; k as usize],
                    "allgatherv/{name} k {k} counts {c:?}"
                );
            }
        }
    }
}

/// Run alltoallv with the k × k counts `m` (row-major, C\[i\]\[j\] elements i sends j)
/// by `algo` under `calibration`, check every rank's output against the reference, and
/// return what each rank ran.
fn alltoallv(m: &[usize], algo: Algo<'_>, calibration: Calibration) -> Vec<Ran> {
    let n = (m.len() as f64).sqrt() as usize;
    let row = |i: usize| m[i * n..][..n].to_vec();
    let col = |j: usize| (0..n).map(|i| m[i * n + j]).collect::<Vec<_>>();
    let config = threads::Config::new(n as u32).calibration(calibration);
    let got = threads::run_with(&config, |comm| {
        let i = comm.rank() as usize;
        let (sc, rc) = (row(i), col(i));
        // Block j: element e of the block i sends j is el(i, 1000j + e).
        let send: Vec<u64> = (0..n)
            .flat_map(|j| (0..sc[j]).map(move |e| el(i as u32, 1000 * j + e)))
            .collect();
        let mut recv = vec![0u64; rc.iter().sum()];
        let ran = comm.all_to_allv_into(&send, &sc, &mut recv, &rc, algo)?;
        Ok::<_, hypercomm_rt::Error>((ran, recv))
    })
    .unwrap();
    for (j, (_, recv)) in got.iter().enumerate() {
        let want: Vec<u64> = (0..n)
            .flat_map(|i| (0..m[i * n + j]).map(move |e| el(i as u32, 1000 * j + e)))
            .collect();
        assert_eq!(recv, &want, "alltoallv/{algo:?} counts {m:?} rank {j}");
    }
    got.into_iter().map(|(ran, _)| ran).collect()
}

#[test]
fn alltoallv_matches_the_reference() {
    let mut rng = Rng::new(2400);
    for k in RANKS {
        let n = k as usize;
        for _ in 0..3 {
            let m = counts(&mut rng, n * n);
            for name in algos(OpKind::Alltoallv, k) {
                alltoallv(&m, Algo::from(name), Calibration::default());
            }
        }
    }
}

/// `Auto` picks the store-and-forward alltoallvs where they are fastest (β only, one
/// port): on 5 ranks with every count 1, Bruck's 3 steps beat the 4 messages of linear
/// and pairwise; on 8 ranks where each rank sends only within its aligned 4-subcube
/// (to i ⊕ 1, i ⊕ 2, i ⊕ 3), the dimension exchange's 2 non-empty steps beat linear's 3
/// messages, Bruck's 3 steps (rank 1's block for 0 is position 7) and pairwise's 6.
#[test]
fn auto_picks_bruck_and_dimension_exchange_where_fastest() {
    let beta_only = Calibration::line(1.0, 0.0);
    let subcube: Vec<usize> = (0..64)
        .map(|x| usize::from(matches!((x / 8) ^ (x % 8), 1..=3)))
        .collect();
    for (m, want) in [(vec![1; 25], "bruck"), (subcube, "dimension-exchange")] {
        for ran in alltoallv(&m, Algo::Auto, beta_only) {
            assert!(ran.auto, "{ran:?}");
            assert_eq!(ran.algorithm, want, "counts {m:?}");
        }
    }
}

#[test]
fn reduce_scatter_with_counts_keeps_rank_order() {
    let mut rng = Rng::new(24000);
    let mat = |r: u32, i: usize| Mat2([r + 1, i as u32 + 2, 3 * r + i as u32, 1]);
    for k in RANKS {
        for _ in 0..3 {
            let c = counts(&mut rng, k as usize);
            let p = prefix(&c);
            let total = p[k as usize];
            for name in algos(OpKind::ReduceScatterv, k) {
                for commutative in [false, true] {
                    let res = threads::run(k, |comm| {
                        let r = comm.rank();
                        let send: Vec<Mat2> = (0..total).map(|i| mat(r, i)).collect();
                        let mut mine = vec![Mat2([0; 4]); c[r as usize]];
                        // A commutative operator (entrywise sum) lets `ring` run too.
                        let op = if commutative {
                            Op::commutative(|a: &Mat2, b: &Mat2| {
                                Mat2(std::array::from_fn(|x| a.0[x].wrapping_add(b.0[x])))
                            })
                        } else {
                            Op::associative(Mat2::mul)
                        };
                        comm.reduce_scatter_into(&send, &mut mine, &c, &op, Algo::from(name))?;
                        Ok::<_, hypercomm_rt::Error>(mine)
                    });
                    let got = match res {
                        Ok(got) => got,
                        // `ring` refuses a non-commutative operator, with the reason.
                        Err(e) if name == "ring" && !commutative => {
                            assert!(e.to_string().contains("commutative"), "{e}");
                            continue;
                        }
                        Err(e) => panic!("reduce-scatterv/{name} k {k} {c:?}: {e}"),
                    };
                    for r in 0..k as usize {
                        let want: Vec<Mat2> = (p[r]..p[r + 1])
                            .map(|i| {
                                (1..k).fold(mat(0, i), |acc, j| {
                                    if commutative {
                                        let b = mat(j, i);
                                        Mat2(std::array::from_fn(|x| acc.0[x].wrapping_add(b.0[x])))
                                    } else {
                                        acc.mul(&mat(j, i))
                                    }
                                })
                            })
                            .collect();
                        assert_eq!(
                            got[r], want,
                            "reduce-scatterv/{name} k {k} {c:?} rank {r} commutative {commutative}"
                        );
                    }
                }
            }
        }
    }
}

/// Wrong counts and buffers are typed errors naming the problem, never a hang: an
/// alltoallv whose send and receive counts disagree fails on every rank.
#[test]
fn bad_counts_are_errors_on_every_rank() {
    let res = threads::run(3, |comm| {
        let r = comm.rank() as usize;
        // Rank 0 thinks it sends 2 to rank 1; rank 1 expects 1 from rank 0.
        let sc = if r == 0 { vec![0, 2, 0] } else { vec![0, 0, 0] };
        let rc = if r == 1 { vec![1, 0, 0] } else { vec![0, 0, 0] };
        let send = vec![0u8; sc.iter().sum()];
        let mut recv = vec![0u8; rc.iter().sum()];
        let e = comm
            .all_to_allv_into(&send, &sc, &mut recv, &rc, Algo::Auto)
            .unwrap_err();
        Ok::<_, hypercomm_rt::Error>(e.to_string())
    })
    .unwrap();
    for e in &res {
        assert!(
            e.contains("rank 0 sends rank 1 2 elements, but rank 1 expects 1"),
            "{e}"
        );
    }
    let e = threads::run(2, |comm| {
        let mut all = [0u8; 3];
        comm.all_gatherv_into(&[1u8], &mut all, &[1, 1, 1], Algo::Auto)
    })
    .unwrap_err();
    assert!(
        e.to_string().contains("one count per rank, 2, got 3"),
        "{e}"
    );
    let e = threads::run(2, |comm| {
        let mut all = [0u8; 3];
        comm.all_gatherv_into(&[1u8, 2], &mut all, &[1, 2], Algo::Auto)
    })
    .unwrap_err();
    assert!(e.to_string().contains("send buffer"), "{e}");
}

/// `Auto` chooses by the actual counts: on 8 ranks, even counts tie Bruck and the
/// dimension exchange (the first registered, Bruck, runs), but two heavy blocks at
/// ranks 0 and 7, the same mean, cost Bruck a window holding both in two of its three
/// steps, and the exchange never (its subcubes are aligned): it runs instead.
#[test]
fn auto_chooses_by_the_actual_counts() {
    let run = |c: Vec<usize>| {
        let total = c.iter().sum();
        threads::run(8, |comm| {
            let r = comm.rank() as usize;
            let send = vec![r as u64; c[r]];
            let mut all = vec![0u64; total];
            let ran = comm.all_gatherv_into(&send, &mut all, &c, Algo::Auto)?;
            let want: Vec<u64> = (0..8).flat_map(|i| vec![i as u64; c[i]]).collect();
            assert_eq!(all, want);
            Ok::<_, hypercomm_rt::Error>((ran.algorithm, ran.auto))
        })
        .unwrap()[0]
    };
    assert_eq!(run(vec![250; 8]), ("bruck", true));
    assert_eq!(
        run(vec![1000, 0, 0, 0, 0, 0, 0, 1000]),
        ("dimension-exchange", true)
    );
}

/// A repeated variable-count call runs the plan cached for its counts: calls that cycle
/// through more sets of counts than the cache keeps (so plans are evicted and rebuilt),
/// with each algorithm and `auto`, every result against the serial reference; and the
/// same counts with another algorithm or element type never take another's plan.
#[test]
fn cached_plans_follow_the_counts_algorithm_and_type() {
    let k = 3u32;
    let n = k as usize;
    let mut rng = Rng::new(24);
    // 11 matrices: more than the cache's 8, run in turn twice.
    let sets: Vec<Vec<usize>> = (0..11).map(|_| counts(&mut rng, n * n)).collect();
    let got = threads::run(k, |comm| {
        let r = comm.rank() as usize;
        let mut bad = Vec::new();
        for round in 0..2 {
            for (s, m) in sets.iter().enumerate() {
                let row: Vec<usize> = m[r * n..][..n].to_vec();
                let col: Vec<usize> = (0..n).map(|j| m[j * n + r]).collect();
                let send: Vec<u64> = (0..row.iter().sum()).map(|i| el(r as u32, i)).collect();
                // What rank j sends rank r: its block r, at the sum of its row before r.
                let want: Vec<u64> = (0..n)
                    .flat_map(|j| {
                        let off: usize = m[j * n..j * n + r].iter().sum();
                        (off..off + m[j * n + r]).map(move |i| el(j as u32, i))
                    })
                    .collect();
                for algo in ["pairwise", "linear", "auto"] {
                    let mut recv = vec![0u64; col.iter().sum()];
                    comm.all_to_allv_into(&send, &row, &mut recv, &col, Algo::from(algo))?;
                    if recv != want {
                        bad.push((round, s, algo));
                    }
                    // The same counts in u32: a plan of other element lengths.
                    let send32: Vec<u32> = send.iter().map(|&x| x as u32).collect();
                    let mut recv32 = vec![0u32; recv.len()];
                    comm.all_to_allv_into(&send32, &row, &mut recv32, &col, Algo::from(algo))?;
                    if recv32.iter().zip(&want).any(|(&a, &b)| a != b as u32) {
                        bad.push((round, s, "u32"));
                    }
                }
            }
        }
        Ok::<_, hypercomm_rt::Error>(bad)
    })
    .unwrap();
    assert!(got.iter().all(Vec::is_empty), "{got:?}");
}
