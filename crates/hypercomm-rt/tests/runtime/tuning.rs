//! Measured `Auto` ([`hypercomm_rt::tune`]) on the threads backend: every rank takes the
//! same pick (the results are right on 3 ranks, at sizes in different measured
//! buckets), the picks are kept in the file and read back unchanged, a corrupt file or
//! one measured elsewhere is measured again, and `Tuning::Off` measures nothing.

use std::path::PathBuf;

use hypercomm::collective::OpKind;
use hypercomm_rt::{threads, Algo, Op, Tuned, Tuning};

fn scratch(name: &str) -> PathBuf {
    let p = std::env::temp_dir().join(format!(
        "hypercomm-tuning-{}-{name}.json",
        std::process::id()
    ));
    let _ = std::fs::remove_file(&p);
    p
}

/// All-reduce, all-to-all and broadcast (root 1) with `Auto` at 1, 100 and 5000
/// elements, each checked; the tuning reports.
fn calls(k: u32, tuning: Tuning) -> Vec<Tuned> {
    let cfg = threads::Config::new(k).tuning(tuning);
    let out = threads::run_with(&cfg, |comm| {
        let (r, k) = (comm.rank() as u64, comm.size() as u64);
        for m in [1usize, 100, 5000] {
            let x: Vec<u64> = (0..m as u64).map(|i| (r + 1) * (i + 1)).collect();
            let mut sum = vec![0u64; m];
            let ran = comm.all_reduce_into(&x, &mut sum, &Op::sum(), Algo::Auto)?;
            assert!(ran.auto);
            let want: Vec<u64> = (0..m as u64).map(|i| k * (k + 1) / 2 * (i + 1)).collect();
            assert_eq!(sum, want, "all-reduce of {m} by {}", ran.algorithm);

            let send: Vec<u64> = (0..k * m as u64).map(|i| 1000 * r + i).collect();
            let mut recv = vec![0u64; send.len()];
            let ran = comm.all_to_all_into(&send, &mut recv, Algo::Auto)?;
            for q in 0..k {
                for i in 0..m as u64 {
                    let got = recv[(q * m as u64 + i) as usize];
                    assert_eq!(got, 1000 * q + r * m as u64 + i, "{}", ran.algorithm);
                }
            }

            let mut buf = if r == 1 { x.clone() } else { vec![0; m] };
            comm.broadcast_into(1, &mut buf, Algo::Auto)?;
            let want: Vec<u64> = (0..m as u64).map(|i| 2 * (i + 1)).collect();
            assert_eq!(buf, want);
        }
        Ok::<_, hypercomm_rt::Error>(comm.tuned().to_vec())
    })
    .unwrap();
    // Every rank saw the same picks.
    for other in &out[1..] {
        let names = |t: &[Tuned]| t.iter().map(|t| t.picks.clone()).collect::<Vec<_>>();
        assert_eq!(names(other), names(&out[0]));
    }
    out.into_iter().next().unwrap()
}

fn kind(key: &str) -> OpKind {
    let name = key.split(' ').next().unwrap();
    OpKind::ALL.into_iter().find(|o| o.name() == name).unwrap()
}

#[test]
fn measured_picks_are_alike_on_every_rank_kept_and_read_back() {
    for k in [3] {
        let file = scratch(&format!("keep{k}"));
        let tuning = Tuning::Measure {
            file: Some(file.clone()),
        };
        let first = calls(k, tuning.clone());
        assert_eq!(first.len(), 3, "one measurement per collective");
        for t in &first {
            assert!(t.measured_for > 0.0, "{} was not measured", t.key);
            assert_eq!(t.picks.len(), 20, "8 B to 4 MiB");
            assert_eq!(t.picks[0].0, 8);
            assert_eq!(t.picks[19].0, 4 << 20);
            for &(_, name) in &t.picks {
                // The threads backend has no native collective: a schedule of the
                // registry, or the model where a size was too large to measure.
                assert!(
                    name == "model" || hypercomm::algorithms::find(kind(&t.key), name).is_some(),
                    "{}: {name}",
                    t.key
                );
            }
        }
        let text = std::fs::read_to_string(&file).unwrap();
        assert!(text.contains("allreduce 8B commutative"), "{text}");
        assert!(text.contains(&format!("threads-{k}ranks")), "{text}");
        let again = calls(k, tuning);
        for (a, b) in first.iter().zip(&again) {
            assert_eq!(b.measured_for, 0.0, "{} measured again", b.key);
            assert_eq!(a.picks, b.picks);
        }
        let _ = std::fs::remove_file(&file);
    }
}

#[test]
fn a_corrupt_file_or_one_measured_elsewhere_is_measured_again() {
    let file = scratch("foreign");
    std::fs::write(&file, "{ not json").unwrap();
    let tuning = Tuning::Measure {
        file: Some(file.clone()),
    };
    assert!(calls(3, tuning.clone())
        .iter()
        .all(|t| t.measured_for > 0.0));
    assert!(std::fs::read_to_string(&file)
        .unwrap()
        .contains("threads-3ranks"));
    // The same file under 2 ranks: measured on another machine (3 ranks).
    assert!(calls(2, tuning).iter().all(|t| t.measured_for > 0.0));
    assert!(std::fs::read_to_string(&file)
        .unwrap()
        .contains("threads-2ranks"));
    let _ = std::fs::remove_file(&file);
}

#[test]
fn tuning_off_measures_nothing() {
    assert!(calls(3, Tuning::Off).is_empty());
}

/// The variable-count calls whose counts every rank passes whole (gatherv, scatterv,
/// allgatherv, reduce-scatter) measure their picks as the fixed-count ones do, at the
/// counts' mean block: each measured once per key, picks alike on every rank, results
/// right with skewed counts (zeros among them) at sizes in different buckets, read
/// back from the file without measuring; all-to-allv is never measured (a rank knows
/// only its row and column), nor a call whose largest count is more than twice the
/// mean. `Tuning::Off` measures none of them.
#[test]
fn variable_count_picks_are_measured_alike_and_read_back() {
    let file = scratch("varcount");
    let run = |tuning: Tuning| -> Vec<Tuned> {
        let cfg = threads::Config::new(3).tuning(tuning);
        let out = threads::run_with(&cfg, |comm| {
            let (r, k) = (comm.rank() as usize, comm.size() as usize);
            // Skewed (all on rank 2: the largest count 3 × the mean): not measured.
            let skewed = [0, 0, 30];
            let mine = vec![7u32; skewed[r]];
            let mut all = vec![0u32; 30];
            comm.all_gatherv_into(&mine, &mut all, &skewed, Algo::Auto)?;
            assert_eq!(all, [7; 30]);
            assert!(comm.tuned().is_empty(), "a skewed call measured");
            for scale in [1usize, 300, 20_000] {
                let counts: Vec<usize> = (0..k).map(|q| q * scale).collect();
                let total: usize = counts.iter().sum();
                let mine: Vec<u32> = (0..counts[r]).map(|i| (r * 1_000_000 + i) as u32).collect();
                let want: Vec<u32> = (0..k)
                    .flat_map(|q| (0..counts[q]).map(move |i| (q * 1_000_000 + i) as u32))
                    .collect();
                let mut all = vec![0u32; total];
                let ran = comm.all_gatherv_into(&mine, &mut all, &counts, Algo::Auto)?;
                assert!(ran.auto);
                assert_eq!(all, want, "allgatherv by {}", ran.algorithm);

                let mut root_buf = vec![0u32; total];
                let out = (r == 2).then_some(&mut root_buf[..]);
                comm.gatherv_into(2, &mine, out, &counts, Algo::Auto)?;
                if r == 2 {
                    assert_eq!(root_buf, want);
                }

                let mut back = vec![0u32; counts[r]];
                let send = (r == 0).then_some(&want[..]);
                comm.scatterv_into(0, send, &mut back, &counts, Algo::Auto)?;
                assert_eq!(back, mine);

                let ones = vec![1u32; total];
                let mut sums = vec![0u32; counts[r]];
                comm.reduce_scatter_into(&ones, &mut sums, &counts, &Op::sum(), Algo::Auto)?;
                assert!(sums.iter().all(|&s| s == k as u32));

                let row = vec![r as u32; k * scale];
                let mut col = vec![0u32; k * scale];
                let each = vec![scale; k];
                comm.all_to_allv_into(&row, &each, &mut col, &each, Algo::Auto)?;
                let want: Vec<u32> = (0..k).flat_map(|q| vec![q as u32; scale]).collect();
                assert_eq!(col, want);
            }
            Ok::<_, hypercomm_rt::Error>(comm.tuned().to_vec())
        })
        .unwrap();
        let picks = |t: &[Tuned]| {
            t.iter()
                .map(|t| (t.key.clone(), t.picks.clone()))
                .collect::<Vec<_>>()
        };
        for other in &out[1..] {
            assert_eq!(picks(other), picks(&out[0]), "every rank's picks alike");
        }
        out.into_iter().next().unwrap()
    };
    let tuning = Tuning::Measure {
        file: Some(file.clone()),
    };
    let first = run(tuning.clone());
    // All-to-allv's `Auto` exchanges the count matrix (an all-gather of 8-byte
    // counts, itself measured): that, but no all-to-allv.
    let keys: Vec<&str> = first.iter().map(|t| t.key.as_str()).collect();
    assert_eq!(
        keys,
        [
            "allgatherv 4B",
            "gatherv 4B",
            "scatterv 4B",
            "reduce-scatterv 4B commutative",
            "allgather 8B"
        ]
    );
    for t in &first {
        assert!(t.measured_for > 0.0, "{} was not measured", t.key);
        for &(_, name) in &t.picks {
            assert!(
                name == "model" || hypercomm::algorithms::find(kind(&t.key), name).is_some(),
                "{}: {name}",
                t.key
            );
        }
    }
    let again = run(tuning);
    for (a, b) in first.iter().zip(&again) {
        assert_eq!(b.measured_for, 0.0, "{} measured again", b.key);
        assert_eq!(a.picks, b.picks);
    }
    let _ = std::fs::remove_file(&file);
    assert!(run(Tuning::Off).is_empty());
}

/// A reduce-scatter with an operator that does not commute, under measured tuning: the
/// schedules that would reorder its operands (`ring`) are refused in the measurement,
/// not an error of the call; the picks keep rank order and the result is right.
#[test]
fn an_ordered_reduce_scatter_is_measured_without_the_reordering_schedules() {
    let file = scratch("ordered");
    let cfg = threads::Config::new(3).tuning(Tuning::Measure {
        file: Some(file.clone()),
    });
    let out = threads::run_with(&cfg, |comm| {
        let (r, k) = (comm.rank() as u64, comm.size() as usize);
        // Affine maps x ↦ a·x + b composed in rank order: not commutative.
        let compose = Op::<[u64; 2]>::associative(|f, g| {
            [
                f[0].wrapping_mul(g[0]),
                f[1].wrapping_mul(g[0]).wrapping_add(g[1]),
            ]
        });
        let counts = vec![2usize; k];
        let send: Vec<[u64; 2]> = (0..2 * k as u64).map(|i| [r + 2, i + r]).collect();
        let mut got = vec![[0u64; 2]; 2];
        let ran = comm.reduce_scatter_into(&send, &mut got, &counts, &compose, Algo::Auto)?;
        assert_ne!(ran.algorithm, "ring");
        // The serial reference: every rank's block, composed in rank order.
        let me = comm.rank() as u64;
        let want: Vec<[u64; 2]> = (0..2u64)
            .map(|i| {
                let at = 2 * me + i;
                (0..k as u64)
                    .map(|q| [q + 2, at + q])
                    .reduce(|f, g| {
                        [
                            f[0].wrapping_mul(g[0]),
                            f[1].wrapping_mul(g[0]).wrapping_add(g[1]),
                        ]
                    })
                    .unwrap()
            })
            .collect();
        assert_eq!(got, want, "by {}", ran.algorithm);
        Ok::<_, hypercomm_rt::Error>(
            comm.tuned()
                .iter()
                .map(|t| t.key.clone())
                .collect::<Vec<_>>(),
        )
    })
    .unwrap();
    let _ = std::fs::remove_file(&file);
    assert!(
        out[0].contains(&"reduce-scatterv 16B ordered user".to_string()),
        "{:?}",
        out[0]
    );
}

/// An all-reduce of `u64` by `op` with `Auto` on 2 thread ranks under `file`, checked
/// against the serial sum; the tuning's reports.
fn sum_by(op: impl Fn() -> Op<'static, u64> + Sync, file: &std::path::Path) -> Vec<Tuned> {
    let cfg = threads::Config::new(2).tuning(Tuning::Measure {
        file: Some(file.to_path_buf()),
    });
    let out = threads::run_with(&cfg, |comm| {
        let r = comm.rank() as u64;
        let mut x: Vec<u64> = (0..100).map(|i| i * 10 + r).collect();
        comm.all_reduce_in_place(&mut x, &op(), Algo::Auto)?;
        let want: Vec<u64> = (0..100).map(|i| 2 * i * 10 + 1).collect();
        assert_eq!(x, want);
        Ok::<_, hypercomm_rt::Error>(comm.tuned().to_vec())
    })
    .unwrap();
    out.into_iter().next().unwrap()
}

/// A user operator's picks (a backend's own call cannot run it; its combine is its
/// own cost) are measured and kept apart from a built-in's of the same collective,
/// element size and commutativity: the built-in is measured, not read from the user
/// operator's picks, and the other way. Two jobs measuring at once into one file keep
/// each other's picks.
#[test]
fn a_user_operators_picks_are_kept_apart_from_a_builtins() {
    let file = scratch("user-op");
    let user = || Op::<u64>::commutative(|a, b| a.wrapping_add(*b));
    let first = sum_by(user, &file);
    assert_eq!(first.len(), 1);
    assert_eq!(first[0].key, "allreduce 8B commutative user");
    assert!(first[0].measured_for > 0.0);
    let builtin = sum_by(Op::sum, &file);
    assert_eq!(builtin[0].key, "allreduce 8B commutative");
    assert!(
        builtin[0].measured_for > 0.0,
        "read from the user operator's picks"
    );
    // Both read back, neither measured again.
    for (op, key) in [
        (sum_by(user, &file), "allreduce 8B commutative user"),
        (sum_by(Op::sum, &file), "allreduce 8B commutative"),
    ] {
        assert_eq!((op[0].key.as_str(), op[0].measured_for), (key, 0.0));
    }
    let _ = std::fs::remove_file(&file);

    // Two jobs at once, each measuring its own key into one new file: both kept.
    let both = scratch("two-jobs");
    std::thread::scope(|s| {
        s.spawn(|| sum_by(user, &both));
        s.spawn(|| sum_by(Op::sum, &both));
    });
    let text = std::fs::read_to_string(&both).unwrap();
    assert!(text.contains("\"allreduce 8B commutative user\""), "{text}");
    assert!(text.contains("\"allreduce 8B commutative\""), "{text}");
    let _ = std::fs::remove_file(&both);
}

/// A persistent plan with `Auto` under measured tuning runs what the blocking call
/// would: the measured pick (the threads backend has no collective of its own, so a
/// schedule or the model's), measured when the plan is made if it was not yet, and
/// marked `auto`. Fixed-count (all-reduce) and variable-count (all-gatherv) alike.
#[test]
fn a_persistent_plan_takes_the_measured_pick() {
    let file = scratch("persistent");
    let cfg = threads::Config::new(3).tuning(Tuning::Measure {
        file: Some(file.clone()),
    });
    let out = threads::run_with(&cfg, |comm| {
        let k = comm.size() as usize;
        let sum = Op::<u64>::sum();
        let mut plans = Vec::new();
        for len in [1usize, 700, 40_000] {
            let plan = comm.plan_all_reduce::<u64>(len, Op::sum(), Algo::Auto)?;
            // Measured by the plan: the blocking call finds the picks made.
            let measured = comm.tuned().len();
            let send = vec![comm.rank() as u64 + 1; len];
            let mut got = vec![0u64; len];
            let blocking = comm.all_reduce_into(&send, &mut got, &sum, Algo::Auto)?;
            assert_eq!(
                comm.tuned().len(),
                measured,
                "the blocking call measured again"
            );
            let mut again = vec![0u64; len];
            plan.run(comm, &send, &mut again)?;
            assert_eq!(again, vec![6u64; len]);
            plans.push((plan.ran(), blocking));

            let counts = vec![len; k];
            let vplan = comm.plan_all_gatherv::<u64>(&counts, Algo::Auto)?;
            let measured = comm.tuned().len();
            let mut all = vec![0u64; k * len];
            let vblocking = comm.all_gatherv_into(&send, &mut all, &counts, Algo::Auto)?;
            assert_eq!(
                comm.tuned().len(),
                measured,
                "the blocking call measured again"
            );
            let mut vall = vec![0u64; k * len];
            vplan.run(comm, &send, &mut vall)?;
            assert_eq!(vall, all);
            plans.push((vplan.ran(), vblocking));
        }
        Ok::<_, hypercomm_rt::Error>((plans, comm.tuned().to_vec()))
    })
    .unwrap();
    let _ = std::fs::remove_file(&file);
    for (plans, tuned) in out {
        let keys: Vec<&str> = tuned.iter().map(|t| t.key.as_str()).collect();
        assert_eq!(keys, ["allreduce 8B commutative", "allgatherv 8B"]);
        for (plan, blocking) in plans {
            // Where the pick is the model's (a size too large to time) the blocking
            // call's choice is the model's too, the same schedule.
            assert_eq!(
                plan.algorithm, blocking.algorithm,
                "{plan:?} / {blocking:?}"
            );
        }
    }
}

/// A measurement planned past its budget (`set_tuning_budget`, here 1 ns: nothing fits)
/// measures the smallest size only; every other size takes its pick and the report
/// names them; results stay right. Under the default budget, nothing is left out on 2
/// thread ranks; the ranks plan with the largest budget any was given (1 ns on one
/// rank and none on the other: 1 ns; 1 ns and 100 s: 100 s), the same calls on both.
#[test]
fn a_tuning_budget_leaves_out_the_sizes_past_it() {
    // The budget each rank is given (none: the default), and the sizes left out.
    let cases = [
        ([Some(1e-9), Some(1e-9)], 19usize),
        ([None, Some(1e-9)], 19),
        ([Some(1e-9), Some(100.0)], 0),
        ([None, None], 0),
    ];
    for (i, (given, want_left)) in cases.into_iter().enumerate() {
        let file = scratch(&format!("budget-{i}"));
        let cfg = threads::Config::new(2).tuning(Tuning::Measure {
            file: Some(file.clone()),
        });
        let out = threads::run_with(&cfg, |comm| {
            if let Some(b) = given[comm.rank() as usize] {
                comm.set_tuning_budget(b)?;
            }
            let x = vec![comm.rank() as u64 + 1; 1000];
            let mut sum = vec![0u64; 1000];
            comm.all_reduce_into(&x, &mut sum, &Op::sum(), Algo::Auto)?;
            assert!(sum.iter().all(|&s| s == 3));
            Ok::<_, hypercomm_rt::Error>(comm.tuned().to_vec())
        })
        .unwrap();
        let t = &out[0][0];
        assert_eq!(
            (&t.picks, &t.left_out),
            (&out[1][0].picks, &out[1][0].left_out)
        );
        assert!(t.measured_for > 0.0);
        assert_eq!(t.left_out.len(), want_left, "{t:?}");
        if want_left > 0 {
            assert_eq!(t.left_out[0], 16, "{t:?}");
            assert!(t.picks.iter().all(|p| p.1 == t.picks[0].1), "{t:?}");
        }
        let _ = std::fs::remove_file(&file);
    }
}

/// A budget that is not a positive number is refused, naming the variable.
#[test]
fn a_bad_tuning_budget_is_refused() {
    threads::run(1, |comm| {
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            let e = comm.set_tuning_budget(bad).unwrap_err();
            assert!(e.to_string().contains("HYPERCOMM_TUNING_BUDGET"), "{e}");
        }
        comm.set_tuning_budget(0.5)
    })
    .unwrap();
}
