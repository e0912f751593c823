//! Sub-communicators, non-blocking and persistent collectives on the threads backend:
//! each result checked against a serial computation of the same groups, for 1, 2, 3, 5
//! and 8 ranks; concurrent collectives on overlapping groups (their messages must never
//! match each other's); failures on a sub-communicator end in an error, never a hang.

use std::time::Duration;

use hypercomm_rt::threads::{self, Config, Failure};
use hypercomm_rt::{Algo, Calibration, Error, Op};

const RANKS: [u32; 5] = [1, 2, 3, 5, 8];

fn config(k: u32) -> Config {
    Config::new(k)
        .timeout(Duration::from_secs(30))
        .calibration(Calibration::default())
}

/// A color (or none) and a key for rank `r` of `k` in round `i`, scattered.
fn color_key(r: u32, k: u32, i: u32) -> (Option<u32>, i32) {
    let h = (r + 1).wrapping_mul(2_654_435_761) ^ (i + 7).wrapping_mul(40_503) ^ k;
    let color = match h % 5 {
        0 => None,
        c => Some(c % 3 + 10 * (i % 2)),
    };
    (color, (h / 5 % 4) as i32 - 2)
}

/// MPI's order: the ranks of `r`'s color, by key then by rank.
fn reference_group(r: u32, k: u32, i: u32) -> Option<Vec<u32>> {
    let (color, _) = color_key(r, k, i);
    color?;
    let mut members: Vec<u32> = (0..k).filter(|&q| color_key(q, k, i).0 == color).collect();
    members.sort_by_key(|&q| (color_key(q, k, i).1, q));
    Some(members)
}

#[test]
fn split_orders_ranks_by_key_then_rank_and_leaves_out_ranks_without_a_color() {
    for k in RANKS {
        let got = threads::run_with(&config(k), |comm| {
            let r = comm.rank();
            let mut seen = Vec::new();
            for i in 0..4 {
                let (color, key) = color_key(r, k, i);
                let sub = comm.split(color, key)?;
                seen.push(match sub {
                    None => None,
                    Some(mut sub) => {
                        // The group, as its members see it: parent ranks in sub order.
                        let mut all = vec![0u32; sub.size() as usize];
                        sub.all_gather_into(&[r], &mut all, Algo::Auto)?;
                        Some((sub.rank(), all))
                    }
                });
            }
            Ok::<_, Error>(seen)
        })
        .unwrap();
        for r in 0..k {
            for i in 0..4 {
                let want = reference_group(r, k, i).map(|m| {
                    let at = m.iter().position(|&q| q == r).unwrap() as u32;
                    (at, m)
                });
                assert_eq!(
                    got[r as usize][i as usize], want,
                    "{k} ranks, rank {r}, round {i}"
                );
            }
        }
    }
}

#[test]
fn a_color_out_of_range_is_refused_on_every_rank() {
    let got = threads::run_each(&config(3), |comm| {
        let color = if comm.rank() == 1 { u32::MAX - 1 } else { 0 };
        comm.split(Some(color), 0).map(|s| s.is_some())
    })
    .unwrap();
    // Every rank fails; a rank still finishing the all-gather of the colors when a
    // faster one returned the refusal may report that peer's departure instead.
    let mut named = 0;
    for outcome in got {
        match outcome {
            Err(Failure::Returned(e)) if e.to_string().contains("rank 1 passed color") => {
                named += 1
            }
            Err(Failure::Returned(hypercomm_rt::Error::PeerFailed { .. })) => {}
            other => panic!("expected the color refused, got {other:?}"),
        }
    }
    assert!(named >= 1, "no rank named the color");
}

/// Rows and columns of a 2x3 (or AxB) grid, and a duplicate of the parent, used in turn
/// and at once (a row's and a column's requests in flight while the parent reduces):
/// sums equal the serial ones.
#[test]
fn rows_columns_and_parent_collectives_interleave_without_meeting() {
    for (a, b) in [(1, 1), (1, 2), (3, 1), (1, 5), (2, 4), (2, 3)] {
        let k = a * b;
        let shape = hypercomm::algorithms::Shape::new(&[a, b]).unwrap();
        let got = threads::run_with(&config(k), |comm| {
            let r = comm.rank();
            let (mut row, mut column) = comm.rows_and_columns(&shape)?;
            let mut dup = comm.dup()?;
            let mut out = Vec::new();
            for i in 0..6u64 {
                let x = [u64::from(r) + 100 * i, 1];
                let (mut rs, mut cs, mut ps, mut ds) = ([0u64; 2], [0u64; 2], [0u64; 2], [0u64; 2]);
                let sum = Op::sum();
                row.all_reduce_into(&x, &mut rs, &sum, Algo::Auto)?;
                comm.all_reduce_into(&x, &mut ps, &sum, Algo::Named("ring"))?;
                column.all_reduce_into(&x, &mut cs, &sum, Algo::Auto)?;
                dup.all_reduce_into(&x, &mut ds, &sum, Algo::Auto)?;
                out.push((rs, cs, ps, ds));
                // The same, in flight at once: a row's and a column's request while the
                // parent reduces, waited for in reverse order.
                let (mut rs2, mut cs2, mut ps2) = ([0u64; 2], [0u64; 2], [0u64; 2]);
                std::thread::scope(|s| {
                    let rq = row.immediate_all_reduce_into(s, &x, &mut rs2, &sum, Algo::Auto)?;
                    let cq = column.immediate_all_reduce_into(s, &x, &mut cs2, &sum, Algo::Auto)?;
                    comm.all_reduce_into(&x, &mut ps2, &sum, Algo::Auto)?;
                    cq.wait()?;
                    rq.wait()
                })?;
                assert_eq!((rs2, cs2, ps2), (rs, cs, ps));
            }
            Ok::<_, Error>((row.rank(), row.size(), column.rank(), column.size(), out))
        })
        .unwrap();
        for r in 0..k {
            let (row_at, row_k, col_at, col_k, out) = &got[r as usize];
            assert_eq!(
                (*row_at, *row_k, *col_at, *col_k),
                (r % b, b, r / b, a),
                "{a}x{b} rank {r}"
            );
            let row: Vec<u32> = (0..b).map(|j| r / b * b + j).collect();
            let col: Vec<u32> = (0..a).map(|i| i * b + r % b).collect();
            for (i, (rs, cs, ps, ds)) in out.iter().enumerate() {
                let sum = |g: &[u32]| {
                    [
                        g.iter().map(|&q| u64::from(q) + 100 * i as u64).sum(),
                        g.len() as u64,
                    ]
                };
                let all: Vec<u32> = (0..k).collect();
                assert_eq!(*rs, sum(&row), "{a}x{b} rank {r} row, round {i}");
                assert_eq!(*cs, sum(&col), "{a}x{b} rank {r} column, round {i}");
                assert_eq!(*ps, sum(&all));
                assert_eq!(*ds, sum(&all));
            }
        }
    }
}

/// Sub-communicators of sub-communicators, on fibers (more ranks than CPUs).
#[test]
fn nested_splits_work_on_fibers() {
    let k = threads::cpu_count() as u32 * 2 + 2;
    let got = threads::run_with(&config(k).fibers(true), |comm| {
        let r = comm.rank();
        let mut half = comm.split(Some(r % 2), 0)?.unwrap();
        let mut quarter = half.split(Some(half.rank() % 2), 0)?.unwrap();
        let mut sum = [0u32];
        quarter.all_reduce_into(&[r], &mut sum, &Op::sum(), Algo::Auto)?;
        let mut all = vec![0u32; half.size() as usize];
        half.all_gather_into(&[r], &mut all, Algo::Auto)?;
        Ok::<_, Error>((sum[0], all))
    })
    .unwrap();
    for r in 0..k {
        let quarter: u32 = (0..k).filter(|q| q % 4 == r % 4).sum();
        let half: Vec<u32> = (0..k).filter(|q| q % 2 == r % 2).collect();
        assert_eq!(got[r as usize], (quarter, half), "rank {r}");
    }
}

/// A rank that fails while its sub-communicator's peers wait for it: they end with
/// `PeerFailed` (not a timeout, not a hang), whether it fails inside the group's call
/// or before it ever calls.
#[test]
fn a_failure_on_a_sub_communicator_is_an_error_for_its_peers() {
    for fail_in_call in [false, true] {
        let cfg = config(6).timeout(Duration::from_secs(120));
        let got = threads::run_each(&cfg, |comm| {
            let r = comm.rank();
            let mut sub = comm.split(Some(r % 2), 0)?.unwrap();
            // Rank 3 fails only once the even ranks are past the split (its all-gather
            // on the run's communicator, which any failure ends at once): each tells it
            // so, eagerly, before its group's call.
            if r % 2 == 0 {
                comm.send(3, &[r])?;
            }
            if r == 3 {
                for q in [0, 2, 4] {
                    let mut past = [0u32];
                    comm.receive_into(q, &mut past)?;
                }
                if fail_in_call {
                    let mut buf = [0u8; 64];
                    // Rank 3 (sub-rank 1 of the odd ranks) reduces to a root that does
                    // not exist: its own error, while its peers wait in the call.
                    sub.reduce_into(7, &[1u8; 64], Some(&mut buf), &Op::sum(), Algo::Auto)?;
                }
                return Err(Error::SelfMessage { rank: 3 });
            }
            let mut sum = [0u32; 1000];
            sub.all_reduce_into(&[r; 1000], &mut sum, &Op::sum(), Algo::Auto)?;
            Ok(sum[0])
        })
        .unwrap();
        for (r, outcome) in got.iter().enumerate() {
            match (r % 2, outcome) {
                (0, Ok(sum)) => assert_eq!(*sum, 6),
                (1, Err(Failure::Returned(Error::PeerFailed { .. }))) if r != 3 => {}
                (1, Err(Failure::Returned(_))) if r == 3 => {}
                _ => panic!("rank {r}: {outcome:?} (fail in call: {fail_in_call})"),
            }
        }
    }
}

#[test]
fn a_shape_that_does_not_fit_names_the_valid_ones() {
    let got = threads::run(4, |comm| {
        let shape = hypercomm::algorithms::Shape::new(&[3, 2]).unwrap();
        let e = comm
            .split_dim(&shape, 0)
            .map(|_| ())
            .unwrap_err()
            .to_string();
        let shape = hypercomm::algorithms::Shape::new(&[2, 2]).unwrap();
        let d = comm
            .split_dim(&shape, 2)
            .map(|_| ())
            .unwrap_err()
            .to_string();
        Ok::<_, Error>((e, d))
    })
    .unwrap();
    assert!(got[0].0.contains("not the 4 ranks"), "{}", got[0].0);
    assert!(got[0].1.contains("valid: 0..2"), "{}", got[0].1);
}

/// What every collective gives on rank `r` of `k`, by the blocking calls: the reference
/// for the persistent and the non-blocking forms.
type Outputs = Vec<Vec<i64>>;

fn input(r: u32, len: usize, salt: i64) -> Vec<i64> {
    (0..len as i64)
        .map(|i| (r as i64 + 1) * 1000 + i * 7 + salt)
        .collect()
}

/// Every planned collective, run three times with new data each time, equals the
/// blocking call of the same data; so does its non-blocking start.
#[test]
fn persistent_collectives_equal_the_blocking_calls() {
    for k in RANKS {
        let root = k / 2;
        let m = 3usize;
        let km = k as usize * m;
        let got = threads::run_with(&config(k), |comm| {
            let r = comm.rank();
            let me = root == r;
            let bcast = comm.plan_broadcast::<i64>(root, m, Algo::Auto)?;
            let scatter = comm.plan_scatter::<i64>(root, m, Algo::Auto)?;
            let gather = comm.plan_gather::<i64>(root, m, Algo::Auto)?;
            let allgather = comm.plan_all_gather::<i64>(m, Algo::Auto)?;
            let alltoall = comm.plan_all_to_all::<i64>(m, Algo::Auto)?;
            let reduce = comm.plan_reduce(root, m, Op::<i64>::sum(), Algo::Auto)?;
            let allreduce = comm.plan_all_reduce(m, Op::<i64>::max(), Algo::Auto)?;
            let scan = comm.plan_scan(m, Op::<i64>::sum(), Algo::Auto)?;
            let exscan = comm.plan_exclusive_scan(m, Op::<i64>::sum(), Algo::Auto)?;
            let rs = comm.plan_reduce_scatter_block(m, Op::<i64>::sum(), Algo::Auto)?;
            assert_eq!(allgather.lens(), (m, km));
            let mut rounds = Vec::new();
            for salt in 0..3 {
                let x = input(r, m, salt);
                let xk = input(r, km, salt);
                let root_len = |n: usize| if me { n } else { 0 };
                let mut planned: Outputs = Vec::new();
                let mut blocking: Outputs = Vec::new();
                // Broadcast.
                let mut out = vec![0; m];
                bcast.run(comm, if me { &x } else { &[] }, &mut out)?;
                planned.push(out);
                let mut out = if me { x.clone() } else { vec![0; m] };
                comm.broadcast_into(root, &mut out, Algo::Auto)?;
                blocking.push(out);
                // Scatter.
                let mut out = vec![0; m];
                scatter.run(comm, if me { &xk } else { &[] }, &mut out)?;
                planned.push(out);
                let mut out = vec![0; m];
                comm.scatter_into(root, me.then_some(&xk[..]), &mut out, Algo::Auto)?;
                blocking.push(out);
                // Gather and reduce.
                let mut out = vec![0; root_len(km)];
                gather.run(comm, &x, &mut out)?;
                planned.push(out);
                let mut out = vec![0; root_len(km)];
                comm.gather_into(root, &x, me.then_some(&mut out[..]), Algo::Auto)?;
                blocking.push(out);
                let mut out = vec![0; root_len(m)];
                reduce.run(comm, &x, &mut out)?;
                planned.push(out);
                let mut out = vec![0; root_len(m)];
                comm.reduce_into(root, &x, me.then_some(&mut out[..]), &Op::sum(), Algo::Auto)?;
                blocking.push(out);
                // The unrooted ones.
                let mut out = vec![0; km];
                allgather.run(comm, &x, &mut out)?;
                planned.push(out);
                let mut out = vec![0; km];
                comm.all_gather_into(&x, &mut out, Algo::Auto)?;
                blocking.push(out);
                let mut out = vec![0; km];
                alltoall.run(comm, &xk, &mut out)?;
                planned.push(out);
                let mut out = vec![0; km];
                comm.all_to_all_into(&xk, &mut out, Algo::Auto)?;
                blocking.push(out);
                for (plan, blocking_op) in [(&allreduce, 0), (&scan, 1), (&exscan, 2)] {
                    let mut out = vec![0; m];
                    plan.run(comm, &x, &mut out)?;
                    if blocking_op == 2 && r == 0 {
                        out = vec![0; m]; // rank 0's exclusive scan is unspecified
                    }
                    planned.push(out);
                    let mut out = vec![0; m];
                    match blocking_op {
                        0 => comm.all_reduce_into(&x, &mut out, &Op::max(), Algo::Auto)?,
                        1 => comm.scan_into(&x, &mut out, &Op::sum(), Algo::Auto)?,
                        _ => comm.exclusive_scan_into(&x, &mut out, &Op::sum(), Algo::Auto)?,
                    };
                    if blocking_op == 2 && r == 0 {
                        out = vec![0; m];
                    }
                    blocking.push(out);
                }
                let mut out = vec![0; m];
                rs.run(comm, &xk, &mut out)?;
                planned.push(out);
                let mut out = vec![0; m];
                comm.reduce_scatter_block_into(&xk, &mut out, &Op::sum(), Algo::Auto)?;
                blocking.push(out);
                // Started, not run: two plans in flight, waited for in reverse order.
                let (mut a, mut b) = (vec![0; m], vec![0; km]);
                std::thread::scope(|s| {
                    let ra = allreduce.start(comm, s, &x, &mut a)?;
                    let rb = allgather.start(comm, s, &x, &mut b)?;
                    rb.wait()?;
                    ra.wait()
                })?;
                assert_eq!((&a, &b), (&blocking[6], &blocking[4]));
                rounds.push((planned, blocking));
            }
            Ok::<_, Error>(rounds)
        })
        .unwrap();
        for (r, rounds) in got.iter().enumerate() {
            for (planned, blocking) in rounds {
                assert_eq!(planned, blocking, "{k} ranks, rank {r}");
            }
        }
        // And the blocking calls are right: the all-reduce's maximum, the scan's sums.
        let last = &got[k as usize - 1][2].1;
        assert_eq!(last[6], input(k - 1, m, 2));
        let want: Vec<i64> = (0..m)
            .map(|i| (0..k).map(|q| input(q, m, 2)[i]).sum())
            .collect();
        assert_eq!(last[7], want);
    }
}

/// A plan runs only where it was made for: another rank count is refused.
#[test]
fn a_plan_runs_only_on_a_communicator_of_its_size() {
    let got = threads::run(4, |comm| {
        let plan = comm.plan_all_reduce(1, Op::<u32>::sum(), Algo::Auto)?;
        let mut half = comm.split(Some(comm.rank() % 2), 0)?.unwrap();
        let mut out = [0u32];
        let e = plan.run(&mut half, &[1], &mut out).unwrap_err();
        Ok::<_, Error>(e.to_string())
    })
    .unwrap();
    assert!(got[0].contains("the plan is for rank 0 of 4"), "{}", got[0]);
}

/// Every `immediate_*` call, all of them in flight at once, waited for in reverse
/// order (and some tested first), equals the blocking calls.
#[test]
fn immediate_collectives_in_flight_together_complete_in_any_order() {
    for k in RANKS {
        let root = (k - 1) / 2;
        let m = 2usize;
        let km = k as usize * m;
        let got = threads::run_with(&config(k), |comm| {
            let r = comm.rank();
            let me = r == root;
            let (x, xk) = (input(r, m, 5), input(r, km, 5));
            let (sum, max) = (Op::<i64>::sum(), Op::<i64>::max());
            let mut bc = if me { x.clone() } else { vec![0; m] };
            let mut sc = vec![0; m];
            let mut ga = vec![0; if me { km } else { 0 }];
            let mut ag = vec![0; km];
            let mut aa = vec![0; km];
            let mut re = vec![0; if me { m } else { 0 }];
            let mut ar = vec![0; m];
            let mut scn = vec![0; m];
            let mut ex = vec![0; m];
            let mut rsb = vec![0; m];
            std::thread::scope(|s| {
                let a = Algo::Auto;
                let reqs = vec![
                    comm.immediate_broadcast_into(s, root, &mut bc, a)?,
                    comm.immediate_scatter_into(s, root, me.then_some(&xk[..]), &mut sc, a)?,
                    comm.immediate_gather_into(s, root, &x, me.then_some(&mut ga[..]), a)?,
                    comm.immediate_all_gather_into(s, &x, &mut ag, a)?,
                    comm.immediate_all_to_all_into(s, &xk, &mut aa, a)?,
                    comm.immediate_reduce_into(s, root, &x, me.then_some(&mut re[..]), &sum, a)?,
                    comm.immediate_all_reduce_into(s, &x, &mut ar, &max, a)?,
                    comm.immediate_scan_into(s, &x, &mut scn, &sum, a)?,
                    comm.immediate_exclusive_scan_into(s, &x, &mut ex, &sum, a)?,
                    comm.immediate_reduce_scatter_block_into(s, &xk, &mut rsb, &sum, a)?,
                ];
                let barrier = comm.immediate_barrier(s)?;
                // A blocking call on the communicator itself meanwhile.
                let mut mid = [0i64];
                comm.all_reduce_into(&[1], &mut mid, &sum, Algo::Auto)?;
                assert_eq!(mid, [k as i64]);
                barrier.wait()?;
                let mut pending: Vec<_> = reqs.into_iter().rev().collect();
                while !pending.is_empty() {
                    // Take the first complete one, if any, else wait for the last.
                    let mut left = Vec::new();
                    for req in pending {
                        match req.test() {
                            Ok(done) => {
                                done?;
                            }
                            Err(req) => left.push(req),
                        }
                    }
                    if let Some(req) = left.pop() {
                        req.wait()?;
                    }
                    pending = left;
                }
                Ok::<_, Error>(())
            })?;
            if r == 0 {
                ex = vec![0; m];
            }
            let mut want: Outputs = Vec::new();
            let mut out = if me { x.clone() } else { vec![0; m] };
            comm.broadcast_into(root, &mut out, Algo::Auto)?;
            want.push(out);
            let mut out = vec![0; m];
            comm.scatter_into(root, me.then_some(&xk[..]), &mut out, Algo::Auto)?;
            want.push(out);
            let mut out = vec![0; if me { km } else { 0 }];
            comm.gather_into(root, &x, me.then_some(&mut out[..]), Algo::Auto)?;
            want.push(out);
            let mut out = vec![0; km];
            comm.all_gather_into(&x, &mut out, Algo::Auto)?;
            want.push(out);
            let mut out = vec![0; km];
            comm.all_to_all_into(&xk, &mut out, Algo::Auto)?;
            want.push(out);
            let mut out = vec![0; if me { m } else { 0 }];
            comm.reduce_into(root, &x, me.then_some(&mut out[..]), &sum, Algo::Auto)?;
            want.push(out);
            let mut out = vec![0; m];
            comm.all_reduce_into(&x, &mut out, &max, Algo::Auto)?;
            want.push(out);
            let mut out = vec![0; m];
            comm.scan_into(&x, &mut out, &sum, Algo::Auto)?;
            want.push(out);
            let mut out = vec![0; m];
            comm.exclusive_scan_into(&x, &mut out, &sum, Algo::Auto)?;
            want.push(if r == 0 { vec![0; m] } else { out });
            let mut out = vec![0; m];
            comm.reduce_scatter_block_into(&xk, &mut out, &sum, Algo::Auto)?;
            want.push(out);
            let got = vec![bc, sc, ga, ag, aa, re, ar, scn, ex, rsb];
            Ok::<_, Error>((got, want))
        })
        .unwrap();
        for (r, (got, want)) in got.iter().enumerate() {
            assert_eq!(got, want, "{k} ranks, rank {r}");
        }
    }
}

/// Dropping an unfinished request waits for it: the buffer holds the result after.
#[test]
fn dropping_an_unfinished_request_waits_for_it() {
    let got = threads::run_with(&config(3), |comm| {
        let r = comm.rank();
        let (x, op, mut sum) = ([r; 4], Op::sum(), [0u32; 4]);
        std::thread::scope(|s| {
            let req = comm.immediate_all_reduce_into(s, &x, &mut sum, &op, Algo::Auto)?;
            if r == 0 {
                std::thread::sleep(Duration::from_millis(50));
            }
            drop(req);
            Ok::<_, Error>(())
        })?;
        Ok::<_, Error>(sum)
    })
    .unwrap();
    assert_eq!(got, vec![[3; 4]; 3]);
}

/// A rank that fails before starting its request: the others' `wait` returns
/// `PeerFailed` naming it (not a timeout, not a hang).
#[test]
fn a_failed_peer_surfaces_at_wait() {
    let cfg = config(4).timeout(Duration::from_secs(120));
    let got = threads::run_each(&cfg, |comm| {
        let r = comm.rank();
        if r == 2 {
            std::thread::sleep(Duration::from_millis(30));
            return Err(Error::SelfMessage { rank: 2 });
        }
        let (x, op, mut out) = ([1u64; 100], Op::sum(), [0u64; 100]);
        std::thread::scope(|s| {
            let req = comm.immediate_all_reduce_into(s, &x, &mut out, &op, Algo::Auto)?;
            req.wait()
        })
    })
    .unwrap();
    for (r, outcome) in got.iter().enumerate() {
        match outcome {
            Err(Failure::Returned(Error::PeerFailed { rank: 2 })) if r != 2 => {}
            Err(Failure::Returned(Error::SelfMessage { .. })) if r == 2 => {}
            other => panic!("rank {r}: {other:?}"),
        }
    }
}
