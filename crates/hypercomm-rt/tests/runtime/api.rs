//! The API around the collectives: point-to-point messages, errors on bad buffers and
//! names, what `Algo::Auto` chooses, in-place runs, custom programs, calibration files.

use std::time::Duration;

use hypercomm::algorithms::{self, Packets, Params};
use hypercomm::collective::{Collective, OpKind};
use hypercomm::schedule::{Action, Buf, Op as IrOp, Program, Region};
use hypercomm::topology::Topology;
use hypercomm::verify::Problem;
use hypercomm_rt::exec::{Buffers, Plan};
use hypercomm_rt::threads::{self, Config, RunError};
use hypercomm_rt::{Algo, Barrier, Calibration, Comm, Error, Op, Transport};

fn config(k: u32) -> Config {
    Config::new(k)
        .timeout(Duration::from_secs(10))
        .calibration(Calibration::default())
}

/// No rank leaves a barrier before every rank has entered it: rank r enters r × 3 ms
/// late and counts itself in first, so a rank that left early would see a count short
/// of k. `last()` still names the collective before the barrier.
#[test]
fn no_rank_leaves_a_barrier_before_every_rank_entered() {
    use std::sync::atomic::{AtomicU32, Ordering};
    // `None`: `barrier()`, the default.
    for how in [None, Some(Barrier::RecursiveDoubling), Some(Barrier::Tree)] {
        let barrier = |comm: &mut hypercomm_rt::Comm<threads::Threads<'_>>| match how {
            None => comm.barrier(),
            Some(how) => comm.barrier_with(how),
        };
        for k in [1, 2, 3, 5, 6, 8] {
            let entered = AtomicU32::new(0);
            let seen = threads::run_with(&config(k), |comm| {
                let mut out = [0u8; 1];
                comm.broadcast_into(0, &mut out, Algo::Named("linear"))?;
                let mut seen = Vec::new();
                for round in 1..=3 {
                    std::thread::sleep(Duration::from_millis(3 * comm.rank() as u64));
                    entered.fetch_add(1, Ordering::SeqCst);
                    barrier(comm)?;
                    seen.push((entered.load(Ordering::SeqCst), round * k));
                    // Nobody enters the next round before everyone has looked.
                    barrier(comm)?;
                }
                assert_eq!(comm.last_algorithm(), Some("linear"));
                Ok::<_, Error>(seen)
            })
            .unwrap();
            for (r, seen) in seen.iter().enumerate() {
                for &(count, want) in seen {
                    assert_eq!(count, want, "{how:?}, k = {k}: rank {r} left early");
                }
            }
        }
    }
}

#[test]
fn send_and_receive_move_the_data() {
    let got = threads::run_with(&config(3), |comm| {
        let r = comm.rank();
        let mut buf = [0u64; 1000];
        match r {
            0 => comm.send(2, &(0..1000).collect::<Vec<u64>>())?,
            2 => comm.receive_into(0, &mut buf)?,
            _ => {}
        }
        // A ring shift in both directions.
        let (k, mut left) = (comm.size(), [0u32; 2]);
        comm.send_receive_into((r + 1) % k, &[r, r * 10], (r + k - 1) % k, &mut left)?;
        Ok::<_, Error>((buf[999], left))
    })
    .unwrap();
    assert_eq!(got[2].0, 999);
    assert_eq!(got[0].1, [2, 20]);
    assert_eq!(got[1].1, [0, 0]);
}

#[test]
fn point_to_point_errors_are_typed() {
    let got = threads::run_with(&config(2), |comm| {
        let me = comm.rank();
        let own = comm.send(me, &[1u8]).unwrap_err();
        let out_of_range = comm.send(7, &[1u8]).unwrap_err();
        // Rank 0 sends 3 elements, rank 1 expects 4.
        let short = match me {
            0 => comm.send(1, &[1u16; 3]).err(),
            _ => comm.receive_into(0, &mut [0u16; 4]).err(),
        };
        Ok::<_, Error>((own, out_of_range, short))
    })
    .unwrap();
    assert!(matches!(got[0].0, Error::SelfMessage { rank: 0 }));
    assert!(matches!(got[1].1, Error::Library(_)));
    assert!(matches!(
        got[1].2,
        Some(Error::LengthMismatch {
            expected: 8,
            got: 6,
            ..
        })
    ));
}

#[test]
fn bad_buffers_are_refused_before_any_message() {
    let errors = threads::run_with(&config(4), |comm| {
        let (mut recv, short) = ([0u32; 2], [0u32; 7]);
        // Only the root can tell its buffer is missing or short; the others would
        // wait for it, so they do not call.
        let root_errors = (comm.rank() == 0).then(|| {
            let missing = comm.scatter_into(0, None, &mut recv, Algo::Auto).err();
            let short = comm
                .scatter_into(0, Some(&short), &mut recv, Algo::Auto)
                .err();
            [missing, short]
        });
        // Every rank refuses these alike.
        let bad_root = comm.broadcast_into(9, &mut recv, Algo::Auto).err();
        let indivisible = comm
            .all_to_all_into(&short, &mut [0u32; 7], Algo::Auto)
            .err();
        Ok::<_, Error>((root_errors, [bad_root, indivisible]))
    })
    .unwrap();
    let root = errors[0].0.as_ref().unwrap();
    assert!(matches!(root[0], Some(Error::RootBuffer(_))), "{root:?}");
    assert!(matches!(
        root[1],
        Some(Error::BufferLength {
            expected: 8,
            got: 7,
            ..
        })
    ));
    for (_, e) in &errors {
        assert!(matches!(e[0], Some(Error::Library(_))), "{e:?}");
        assert!(matches!(e[1], Some(Error::BufferLength { .. })), "{e:?}");
    }
}

#[test]
fn an_algorithm_that_does_not_fit_names_those_that_fit() {
    // 3 ranks: the hypercube algorithms do not fit.
    let errors = threads::run_with(&config(3), |comm| {
        let mut buf = [0u8; 4];
        Ok::<_, Error>(
            comm.broadcast_into(0, &mut buf, Algo::Named("sbt"))
                .unwrap_err(),
        )
    })
    .unwrap();
    let fitting = algorithms::fitting(&Topology::complete(3), OpKind::Broadcast);
    let message = errors[0].to_string();
    assert!(message.contains("does not fit"), "{message}");
    assert!(message.contains(&algorithms::names(fitting)), "{message}");
    let unknown = threads::run_with(&config(2), |comm| {
        Ok::<_, Error>(
            comm.broadcast_into(0, &mut [0u8], "no-such".into())
                .unwrap_err(),
        )
    })
    .unwrap();
    assert!(unknown[0].to_string().contains("no algorithm `no-such`"));
}

/// The algorithm `Auto` must choose: least predicted time (`hypercomm_rt::predict`, as
/// `bench` prints it, with the threads backend's execution of k ranks), first on a tie.
fn fastest(k: u32, collective: Collective, m: u64, calibration: Calibration) -> &'static str {
    fastest_of(k, collective, m, calibration, 4, &|_| true)
}

/// [`fastest`] among the algorithms `keep` names, with elements of `elem_bytes` bytes.
fn fastest_of(
    k: u32,
    collective: Collective,
    m: u64,
    calibration: Calibration,
    elem_bytes: usize,
    keep: &dyn Fn(&str) -> bool,
) -> &'static str {
    let topo = Topology::complete(k);
    let execution = threads::execution(k);
    let mut best: Option<(&str, f64)> = None;
    for a in algorithms::fitting(&topo, collective.kind()) {
        if !keep(a.name) {
            continue;
        }
        let call = (collective, k, m, None);
        let time = hypercomm_rt::predict::predict_with(
            call,
            elem_bytes,
            a,
            Packets::Opt,
            None,
            calibration,
            false,
            execution,
        )
        .unwrap();
        if best.map_or(true, |(_, t)| time < t) {
            best = Some((a.name, time));
        }
    }
    best.unwrap().0
}

#[test]
fn auto_runs_the_fastest_algorithm_under_the_calibration() {
    for calibration in [
        Calibration::default(),
        Calibration::line(1.0, 0.0),
        Calibration::line(0.0, 1.0),
    ] {
        let ran = threads::run_with(&config(16).calibration(calibration), |comm| {
            let mut buf = vec![1u32; 4096];
            let first = comm.broadcast_into(5, &mut buf, Algo::Auto)?;
            let again = comm.broadcast_into(5, &mut buf, Algo::Auto)?;
            assert_eq!(comm.last_algorithm(), Some(again.algorithm));
            Ok::<_, Error>((first, again))
        })
        .unwrap();
        let want = fastest(16, Collective::Broadcast { root: 5 }, 4096, calibration);
        for (first, again) in ran {
            assert!(first.auto && first == again);
            assert_eq!(first.algorithm, want, "{calibration:?}");
        }
    }
}

/// `MPI_Reduce_scatter_block` with a non-commutative user operator on any number of
/// ranks: `Algo::Auto` finds an algorithm that combines in rank order (on 2^n ranks
/// the faster of `recursive-halving` and `pairwise` under the prediction, on the others
/// `pairwise`, the only one there), and every rank's
/// block equals the serial left-to-right reduction; with a commutative operator `Auto`
/// takes the fastest under the cost model, as always.
#[test]
fn a_non_commutative_reduce_scatter_runs_in_rank_order_on_any_number_of_ranks() {
    use crate::reference::{random, Mat2};
    // Decimal concatenation, each number held as [value, 10^digits].
    let concat = Op::associative(|a: &[u64; 2], b: &[u64; 2]| [a[0] * b[1] + b[0], a[1] * b[1]]);
    let matmul = Op::associative(Mat2::mul);
    let m = 3;
    for k in [1u32, 2, 3, 5, 13] {
        let ku = k as usize;
        // Rank r's block j, element e: the digit (r + j + e) mod 10, and a random matrix.
        let digits = |r: usize| -> Vec<[u64; 2]> {
            (0..ku * m)
                .map(|i| [((r + i / m + i % m) % 10) as u64, 10])
                .collect()
        };
        let matrices: Vec<Vec<Mat2>> = (0..ku).map(|r| random(1000 + r as u64, ku * m)).collect();
        let ran = threads::run_with(&config(k), |comm| {
            let r = comm.rank() as usize;
            let mut cat = vec![[0u64; 2]; m];
            let a = comm.reduce_scatter_block_into(&digits(r), &mut cat, &concat, Algo::Auto)?;
            let mut prod = vec![Mat2([0; 4]); m];
            let b = comm.reduce_scatter_block_into(&matrices[r], &mut prod, &matmul, Algo::Auto)?;
            let mut sum = vec![0u32; m];
            let send: Vec<u32> = (0..ku * m).map(|i| (r * 100 + i) as u32).collect();
            let c = comm.reduce_scatter_block_into(&send, &mut sum, &Op::sum(), Algo::Auto)?;
            Ok::<_, Error>(((a, cat), (b, prod), (c, sum)))
        })
        .unwrap_or_else(|e| panic!("k = {k}: {e}"));
        // The faster of the two that combine in rank order (recursive halving on 2^n
        // ranks, pairwise on any), for elements of 16 and 32 bytes.
        let keeps_order =
            |name: &str| name == "pairwise" || (name == "recursive-halving" && k.is_power_of_two());
        let rs = Collective::ReduceScatter;
        let default = Calibration::default();
        let ordered = (
            fastest_of(k, rs, m as u64, default, 16, &keeps_order),
            fastest_of(k, rs, m as u64, default, 32, &keeps_order),
        );
        let commutative = fastest(
            k,
            Collective::ReduceScatter,
            m as u64,
            Calibration::default(),
        );
        for (j, ((a, cat), (b, prod), (c, sum))) in ran.into_iter().enumerate() {
            assert!(a.auto && b.auto && c.auto);
            assert_eq!((a.algorithm, b.algorithm), ordered, "k = {k}");
            assert_eq!(c.algorithm, commutative, "k = {k}");
            for e in 0..m {
                let i = j * m + e;
                let want_cat = (0..ku).fold(0u64, |acc, r| acc * 10 + digits(r)[i][0]);
                assert_eq!(
                    cat[e],
                    [want_cat, 10u64.pow(k)],
                    "k = {k}, rank {j}, element {e}"
                );
                let want_prod = (1..ku).fold(matrices[0][i], |acc, r| acc.mul(&matrices[r][i]));
                assert_eq!(prod[e], want_prod, "k = {k}, rank {j}, element {e}");
                let want_sum: u32 = (0..ku).map(|r| (r * 100 + i) as u32).sum();
                assert_eq!(sum[e], want_sum, "k = {k}, rank {j}, element {e}");
            }
        }
    }
}

#[test]
fn in_place_calls_skip_the_input_copy_when_the_schedule_allows() {
    let ran = threads::run_with(&config(8), |comm| {
        let mut buf = [comm.rank(); 100];
        let bcast = comm.broadcast_into(0, &mut buf, Algo::Auto)?;
        let sum = comm.all_reduce_in_place(&mut buf, &Op::sum(), Algo::Auto)?;
        assert_eq!(buf, [0; 100]);
        Ok::<_, Error>((bcast, sum))
    })
    .unwrap();
    // The broadcast's root reads its input where it writes its output.
    assert!(ran[0].0.in_place, "{:?}", ran[0].0);
    assert!(ran.iter().skip(1).all(|(b, _)| !b.in_place));
    let _ = ran[0].1.in_place; // whichever the schedule allows; the harness checks results
}

/// The plan cache (the last few calls, each looked for first where the previous call's
/// successor sits) returns the plan of the call made, whatever the order of calls:
/// twelve distinct calls (more than it keeps) in turn, in reverse, and interleaved with
/// a call that repeats; each runs the algorithm named, and its result is the serial one.
#[test]
fn repeated_calls_in_any_order_run_the_algorithm_named() {
    let calls: Vec<(&str, &str, usize)> = ["linear", "binomial", "sbt", "esbt"]
        .iter()
        .flat_map(|&a| [1, 7].map(|m| ("broadcast", a, m)))
        .chain(
            ["ring", "bruck"]
                .iter()
                .flat_map(|&a| [1, 7].map(|m| ("allgather", a, m))),
        )
        .collect();
    assert_eq!(calls.len(), 12);
    let mut order: Vec<usize> = (0..12).chain((0..12).rev()).collect();
    order.extend((0..12).flat_map(|i| [i, 5]));
    order.extend((0..30).map(|i| (i * 7) % 12));
    let k = 4;
    let got = threads::run_with(&config(k), |comm| {
        let r = comm.rank();
        let mut mismatches = Vec::new();
        for (n, &i) in order.iter().enumerate() {
            let (op, algo, m) = calls[i];
            let salt = n as u32 * 10;
            let ran = if op == "broadcast" {
                let mut buf = vec![if r == 1 { salt + 1 } else { 0 }; m];
                let ran = comm.broadcast_into(1, &mut buf, Algo::Named(algo))?;
                if buf != vec![salt + 1; m] {
                    mismatches.push(format!("call {n}: {op} by {algo}: {buf:?}"));
                }
                ran
            } else {
                let input = vec![salt + r; m];
                let mut out = vec![0; m * k as usize];
                let ran = comm.all_gather_into(&input, &mut out, Algo::Named(algo))?;
                let want: Vec<u32> = (0..k).flat_map(|q| vec![salt + q; m]).collect();
                if out != want {
                    mismatches.push(format!("call {n}: {op} by {algo}: {out:?}"));
                }
                ran
            };
            if ran.algorithm != algo {
                mismatches.push(format!("call {n}: asked {algo}, ran {}", ran.algorithm));
            }
        }
        Ok::<_, Error>(mismatches)
    })
    .unwrap();
    for (r, m) in got.iter().enumerate() {
        assert!(m.is_empty(), "rank {r}: {m:?}");
    }
}

/// Rank 0's and rank 1's programs of a swap through `tmp`: each sends `in`, receives
/// into `tmp`, then combines `tmp` into `out` after copying `in` there.
fn swap_program(rank: u32) -> Program {
    let peer = 1 - rank;
    let mut p = Program::new(rank, 2);
    p.tmp_len = 4;
    p.push(0, IrOp::send(peer, Region::new(Buf::In, 0, 4)));
    p.push(0, IrOp::recv(peer, Region::new(Buf::Tmp, 0, 4)));
    p.push(
        0,
        IrOp::copy(Region::new(Buf::In, 0, 4), Region::new(Buf::Out, 0, 4)),
    );
    let action = if rank == 0 {
        Action::CombineRight
    } else {
        Action::CombineLeft
    };
    p.push(
        1,
        IrOp::Local {
            from: Region::new(Buf::Tmp, 0, 4),
            into: Region::new(Buf::Out, 0, 4),
            action,
        },
    );
    p
}

#[test]
fn a_custom_program_runs_through_execute() {
    let got = threads::run_with(&config(2), |comm| {
        let plan = Plan::new(swap_program(comm.rank()), 2, 4, 4)?;
        let input = [comm.rank() as u64 + 1; 4];
        let mut out = [0u64; 4];
        // in_0 ⊕ in_1 with ⊕ = "10·a + b": 12 on both ranks only if the sides are right.
        let op = Op::associative(|a: &u64, b: &u64| 10 * a + b);
        comm.execute(&plan, Buffers::new(&input, &mut out), Some(&op))?;
        Ok::<_, Error>(out)
    })
    .unwrap();
    assert_eq!(got, vec![[12; 4]; 2]);
}

/// Strided regions (`Region::strided`) run as their segments: each rank sends the even
/// elements of `in`, receives the peer's into the odd elements of `out`, and copies its
/// own odd elements into the even ones, all in one step.
#[test]
fn strided_regions_run_segment_by_segment() {
    let got = threads::run_with(&config(2), |comm| {
        let (r, q) = (comm.rank(), 1 - comm.rank());
        let mut p = Program::new(r, 1);
        let every_other = |buf, first| Region::strided(buf, first, 1, 2, 4);
        p.push(0, IrOp::send(q, every_other(Buf::In, 0)));
        p.push(0, IrOp::recv(q, every_other(Buf::Out, 1)));
        p.push(
            0,
            IrOp::copy(every_other(Buf::In, 1), every_other(Buf::Out, 0)),
        );
        let plan = Plan::new(p, 2, 8, 8)?;
        let input: Vec<u64> = (0..8).map(|i| 10 * r as u64 + i).collect();
        let mut out = [0u64; 8];
        comm.execute(&plan, Buffers::new(&input, &mut out), None)?;
        Ok::<_, Error>(out)
    })
    .unwrap();
    for (r, out) in got.iter().enumerate() {
        let q = 1 - r as u64;
        let want: Vec<u64> = (0..8u64)
            .map(|i| {
                if i % 2 == 0 {
                    10 * r as u64 + i + 1
                } else {
                    10 * q + i - 1
                }
            })
            .collect();
        assert_eq!(out.to_vec(), want, "rank {r}");
    }
    // A strided region whose segments would overlap is refused, naming it.
    let mut bad = Program::new(0, 1);
    bad.push(
        0,
        IrOp::send(
            1,
            Region {
                stride: 1,
                ..Region::strided(Buf::In, 0, 2, 3, 2)
            },
        ),
    );
    let e = Plan::new(bad, 2, 8, 8).unwrap_err();
    assert!(e.to_string().contains("overlap"), "{e}");
    // Out of bounds with offsets past u64::MAX: refused before it is expanded.
    let mut far = Program::new(0, 1);
    far.push(
        0,
        IrOp::send(
            1,
            Region {
                buf: Buf::In,
                off: 1,
                len: 2,
                stride: u64::MAX,
                count: 2,
            },
        ),
    );
    let e = Plan::new(far, 2, 4, 4).unwrap_err();
    assert!(e.to_string().contains("outside"), "{e}");
    // A strided local op whose `from` and `into` overlap: its pieces would run one
    // after another, so one could read what another wrote; refused.
    let mut p = Program::new(0, 1);
    p.tmp_len = 4;
    p.push(
        0,
        IrOp::copy(
            Region::strided(Buf::Tmp, 0, 1, 2, 2),
            Region::new(Buf::Tmp, 2, 2),
        ),
    );
    let e = Plan::new(p, 2, 1, 2).unwrap_err();
    assert!(e.to_string().contains("overlaps"), "{e}");
}

#[test]
fn programs_that_cannot_run_safely_are_refused() {
    let refuse = |p: Program, why: &str| {
        let e = Plan::new(p, 2, 4, 4).unwrap_err();
        assert!(e.to_string().contains(why), "{e}");
    };
    // A receive into the region the same step sends.
    let mut race = Program::new(0, 1);
    race.push(0, IrOp::send(1, Region::new(Buf::Out, 0, 4)));
    race.push(0, IrOp::recv(1, Region::new(Buf::Out, 2, 2)));
    refuse(race, "overlaps");
    let mut writes_in = Program::new(0, 1);
    writes_in.push(0, IrOp::recv(1, Region::new(Buf::In, 0, 1)));
    refuse(writes_in, "`in`");
    let mut outside = Program::new(0, 1);
    outside.push(0, IrOp::send(1, Region::new(Buf::Out, 3, 2)));
    refuse(outside, "outside");
    let mut to_self = Program::new(0, 1);
    to_self.push(0, IrOp::send(0, Region::new(Buf::Out, 0, 1)));
    refuse(to_self, "not another rank");
    // A combining program without an operator.
    let e = threads::run_with(&config(2), |comm| {
        let plan = Plan::new(swap_program(comm.rank()), 2, 4, 4)?;
        comm.execute::<u8>(&plan, Buffers::new(&[0; 4], &mut [0; 4]), None)
    })
    .unwrap_err();
    assert!(e.to_string().contains("no operator"), "{e}");
}

#[test]
fn calibration_files_are_read_and_checked() {
    let dir = std::env::temp_dir().join(format!("hypercomm-rt-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("calibration");
    std::fs::write(&path, "# measured\nbeta = 3e-6\ntau = 2.5e-10\n").unwrap();
    let c = Calibration::load(&path).unwrap();
    assert_eq!(c, Calibration::line(3e-6, 2.5e-10));
    assert_eq!(c.model(8).tau(), 2e-9);
    std::fs::write(&path, "beta = fast").unwrap();
    let e = Calibration::load(&path).unwrap_err().to_string();
    assert!(
        e.contains("not a number") && e.contains("calibration"),
        "{e}"
    );
    assert!(Calibration::parse("gamma = 1").is_err());
    assert!(Calibration::parse("tau = -1").is_err());
    // The one line is required, once each, within range: an empty file, a file cut
    // short, a key set twice and a start-up of 1e300 s are refused, naming why.
    for (text, says) in [
        ("", "no `beta` line"),
        ("# nothing\n", "no `beta` line"),
        ("beta = 1e-6\n", "no `tau` line"),
        (
            "beta = 1e-6\ntau = 1e-9\nbeta = 2e-6\n",
            "`beta` is set twice",
        ),
        ("beta = 1e300\ntau = 1e-9\n", "at most 1000 seconds"),
        ("beta = 1e-6\ntau = 2\n", "at most 1 second per byte"),
    ] {
        let e = Calibration::parse(text).unwrap_err().to_string();
        assert!(e.contains(says), "{text:?}: {e}");
    }
    assert!(Calibration::load(&dir.join("missing")).is_err());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn zero_ranks_is_a_setup_error() {
    let e = threads::run_with(&config(0), |_| Ok::<_, Error>(())).unwrap_err();
    assert!(matches!(e, RunError::Setup(_)), "{e}");
}

/// `Plan::first_receive` names the message a program waits for first only when its first
/// step does nothing but receive: a step that also sends or copies does not begin by
/// waiting.
#[test]
fn first_receive_names_the_first_message_of_a_receive_only_first_step() {
    let r = |buf, len| Region::new(buf, 0, len);
    let plan = |ops: Vec<IrOp>| {
        let mut p = Program::new(1, 2);
        ops.into_iter().for_each(|op| p.push(0, op));
        p.push(1, IrOp::send(0, r(Buf::Out, 4)));
        Plan::new(p, 3, 4, 8).unwrap()
    };
    let two = plan(vec![
        IrOp::recv(2, r(Buf::Out, 3)),
        IrOp::recv(0, Region::new(Buf::Out, 4, 4)),
    ]);
    assert_eq!(two.first_receive(), Some((2, 3)));
    let then_send = plan(vec![
        IrOp::recv(0, r(Buf::Out, 4)),
        IrOp::send(2, r(Buf::In, 4)),
    ]);
    assert_eq!(then_send.first_receive(), None);
    let send_first = plan(vec![
        IrOp::send(2, r(Buf::In, 4)),
        IrOp::recv(0, r(Buf::Out, 4)),
    ]);
    assert_eq!(send_first.first_receive(), None);
    let then_copy = plan(vec![
        IrOp::recv(0, r(Buf::Out, 4)),
        IrOp::copy(r(Buf::In, 4), Region::new(Buf::Out, 4, 4)),
    ]);
    assert_eq!(then_copy.first_receive(), None);
    assert_eq!(
        Plan::new(Program::new(1, 0), 3, 4, 8)
            .unwrap()
            .first_receive(),
        None
    );
}

/// `Transport::expect` is a hint: any peer (out of range, this rank itself) and any
/// length (beyond the ring, `usize::MAX`) are accepted, before and after the pair's ring
/// exists, and calls around it give the same results.
#[test]
fn expect_is_only_a_hint_whatever_its_arguments() {
    let got = threads::run_with(&config(3), |comm| {
        let hint = |comm: &mut Comm<threads::Threads<'_>>| {
            for from in [0, 1, 2, 3, u32::MAX] {
                let ring = threads::EAGER_RING_INLINE;
                for len in [0, 1, 8, 64, ring, ring + 1, 4096, usize::MAX] {
                    comm.transport().expect(from, len);
                }
            }
        };
        hint(comm);
        let mut buf = [comm.rank() as u64 * 7 + 1; 5];
        comm.broadcast_into(2, &mut buf, Algo::Named("linear"))?;
        hint(comm);
        comm.broadcast_into(1, &mut buf, Algo::Named("binomial"))?;
        hint(comm);
        Ok::<_, Error>(buf)
    })
    .unwrap();
    // Rank 2's value (15) went everywhere, then rank 1's copy of it.
    assert_eq!(got, vec![[15u64; 5]; 3]);
}

/// The CPUs the calling thread may run on, from `/proc/thread-self/status`
/// (`Cpus_allowed_list: 0-3,8`).
#[cfg(target_os = "linux")]
fn cpus_allowed() -> Vec<usize> {
    let status = std::fs::read_to_string("/proc/thread-self/status").unwrap();
    let list = status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .unwrap()
        .trim();
    list.split(',')
        .flat_map(|range| {
            let (a, b) = range.split_once('-').unwrap_or((range, range));
            a.parse::<usize>().unwrap()..=b.parse::<usize>().unwrap()
        })
        .collect()
}

/// `HYPERCOMM_PIN` decides `Config::new`'s binding (`off`: unbound, `on` and unset:
/// bound), `Config::pin` overrides it, and a launch with another value fails naming
/// it. Each case runs in a child process (the environment is the process's): this
/// test binary again, on this test alone, with the variable set.
#[test]
fn the_pin_environment_variable_sets_the_default_binding() {
    const CHILD: &str = "HYPERCOMM_TEST_PIN_CHILD";
    if let Ok(case) = std::env::var(CHILD) {
        let launched = threads::run_with(&Config::new(2), |comm| comm.barrier());
        match case.as_str() {
            "off" => {
                assert!(!Config::new(2).pin);
                assert!(Config::new(2).pin(true).pin);
                launched.unwrap();
            }
            "on" | "unset" => {
                assert!(Config::new(2).pin);
                launched.unwrap();
            }
            _ => match launched {
                Err(RunError::Setup(Error::Environment { name, value, .. })) => {
                    assert_eq!((name, value.as_str()), ("HYPERCOMM_PIN", "sometimes"));
                }
                other => panic!("{other:?}"),
            },
        }
        return;
    }
    for (case, value) in [
        ("off", Some("off")),
        ("on", Some("ON")),
        ("unset", None),
        ("bad", Some("sometimes")),
    ] {
        let mut cmd = std::process::Command::new(std::env::current_exe().unwrap());
        cmd.args([
            "--exact",
            "api::the_pin_environment_variable_sets_the_default_binding",
        ])
        .env(CHILD, case)
        .env_remove("HYPERCOMM_PIN");
        if let Some(v) = value {
            cmd.env("HYPERCOMM_PIN", v);
        }
        let out = cmd.output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{case}: {text}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            text.contains("1 passed"),
            "{case}: the child ran no test: {text}"
        );
    }
}

/// `Config::pin` binds each rank to one of the CPUs the process may use: a CPU each
/// while there are enough (the list a core each first, turned where concurrent runs of
/// the process have bound the fewest), consecutive ranks sharing one when k > n, every
/// CPU used; without it every rank may use them all. `Config::new` binds, with a core
/// per rank or not. A progress thread a bound rank starts may use every CPU.
#[cfg(target_os = "linux")]
#[test]
fn pinned_ranks_run_each_on_the_cpu_of_its_block() {
    let cpus = cpus_allowed();
    let n = cpus.len();
    for k in [1, 2, 3, 5] {
        let pinned =
            threads::run_with(&config(k).pin(true), |_| Ok::<_, Error>(cpus_allowed())).unwrap();
        assert!(
            pinned
                .iter()
                .all(|got| got.len() == 1 && cpus.contains(&got[0])),
            "{pinned:?}"
        );
        let mut seen: Vec<usize> = pinned.iter().map(|got| got[0]).collect();
        if k as usize <= n {
            seen.sort();
            seen.dedup();
            assert_eq!(seen.len(), k as usize, "{k} ranks on {cpus:?}: {pinned:?}");
        } else {
            // Blocks: a rank shares its CPU only with its neighbours, and all are used.
            seen.dedup();
            let mut distinct = seen.clone();
            distinct.sort();
            distinct.dedup();
            assert_eq!(
                (seen.len(), distinct.len()),
                (n, n),
                "{k} ranks: {pinned:?}"
            );
        }
        let free =
            threads::run_with(&config(k).pin(false), |_| Ok::<_, Error>(cpus_allowed())).unwrap();
        assert!(free.iter().all(|got| *got == cpus), "{free:?}");
    }
    let cores = std::thread::available_parallelism().unwrap().get() as u32;
    assert!(Config::new(cores).pin);
    assert!(Config::new(cores + 1).pin);
    // A progress thread of a bound rank: the launch's CPUs, not the rank's one.
    let progress = threads::run_with(&config(1).pin(true), |comm| {
        std::thread::scope(|s| comm.immediate(s, |_| Ok(cpus_allowed()))?.wait())
    })
    .unwrap();
    assert_eq!(progress[0], cpus);
}

/// `Config::fibers` runs rank r of k on thread r·n/k of n (one per CPU) when the ranks
/// outnumber the CPUs, each rank on its own stack, and the results are those of
/// threads; with a CPU per rank every rank keeps a thread of its own. A fiber stack the
/// system refuses, or too large to ask for, is `Spawn`, before any rank starts.
#[test]
fn fibers_share_one_thread_per_cpu_among_the_ranks_of_its_block() {
    // The CPUs this thread may use, as the runtime counts them (a CPU quota can make
    // `available_parallelism` smaller).
    #[cfg(target_os = "linux")]
    let n = cpus_allowed().len();
    #[cfg(not(target_os = "linux"))]
    let n = std::thread::available_parallelism().unwrap().get();
    for k in [n as u32 + 1, 2 * n as u32 + 1, 1] {
        let got = threads::run_with(&config(k).fibers(true), |comm| {
            let mut sum = [0u64];
            let mine = [comm.rank() as u64 + 1];
            comm.all_reduce_into(&mine, &mut sum, &Op::sum(), Algo::Auto)?;
            let local = 0u8;
            Ok::<_, Error>((
                std::thread::current().id(),
                sum[0],
                &local as *const u8 as usize,
            ))
        })
        .unwrap();
        let k = k as usize;
        let fibers = k > n;
        for (r, (thread, sum, _)) in got.iter().enumerate() {
            assert_eq!(*sum as usize, k * (k + 1) / 2);
            for (q, (other, _, _)) in got.iter().enumerate() {
                let same_block = fibers && r * n / k == q * n / k;
                assert_eq!(
                    thread == other,
                    r == q || same_block,
                    "ranks {r}, {q} of {k}"
                );
            }
        }
        // Every rank's locals live on a stack of its own.
        let mut stacks: Vec<usize> = got.iter().map(|g| g.2).collect();
        stacks.sort_unstable();
        stacks.dedup();
        assert_eq!(stacks.len(), k);
    }
    for huge in [usize::MAX / 2, usize::MAX] {
        let e = threads::run_with(&config(n as u32 + 1).fibers(true).stack_size(huge), |_| {
            Ok::<_, Error>(())
        })
        .unwrap_err();
        assert!(
            matches!(e, RunError::Setup(Error::Spawn { rank: 0, .. })),
            "{e}"
        );
    }
    // A stack too small for the runtime's frames is raised to the least that fits.
    let sums = threads::run_with(
        &config(n as u32 + 1).fibers(true).stack_size(4096),
        |comm| {
            let mut sum = [0u32];
            comm.all_reduce_into(&[1], &mut sum, &Op::sum(), Algo::Auto)?;
            Ok::<_, Error>(sum[0])
        },
    )
    .unwrap();
    assert_eq!(sums, vec![n as u32 + 1; n + 1]);
}

/// Large rendezvous messages, whose copy the receiver shares with its waiting sender
/// (`threads::SHARED_COPY_FROM`), arrive whole: lengths around the threshold and not a
/// whole number of 64 KiB chunks; a broadcast whose receivers contend for the root's
/// one offer slot, an all-to-all where every rank both sends and receives, and a
/// point-to-point pair; as threads and as fibers (ranks sharing a thread, whose waits
/// never help a rank of their own thread).
#[test]
fn large_messages_copied_by_two_cores_arrive_whole() {
    let from = threads::SHARED_COPY_FROM / 4;
    for fibers in [false, true] {
        for k in [2u32, 3, 4] {
            for n in [from - 1, from, from + 12_345, 3 * from + 7] {
                let cfg = config(k).fibers(fibers);
                let body = || {
                    threads::run_with(&cfg, |comm| {
                        let (r, kk) = (comm.rank(), comm.size());
                        let word = |src: u32, i: usize| src.wrapping_mul(0x9E37_79B9) ^ i as u32;
                        let mut buf: Vec<u32> = (0..n).map(|i| word(r, i)).collect();
                        comm.broadcast_into(1 % kk, &mut buf, Algo::Named("linear"))?;
                        let bcast_ok = buf.iter().enumerate().all(|(i, &x)| x == word(1 % kk, i));
                        let m = n / kk as usize;
                        let send: Vec<u32> = (0..m * kk as usize).map(|i| word(r, i)).collect();
                        let mut recv = vec![0u32; send.len()];
                        comm.all_to_all_into(&send, &mut recv, Algo::Named("pairwise"))?;
                        let a2a_ok = (0..kk as usize).all(|s| {
                            (0..m).all(|j| recv[s * m + j] == word(s as u32, r as usize * m + j))
                        });
                        let mut got = vec![0u32; n];
                        match r {
                            0 => comm.send(kk - 1, &buf)?,
                            _ if r == kk - 1 => comm.receive_into(0, &mut got)?,
                            _ => {}
                        }
                        let p2p_ok = r != kk - 1 || got == buf;
                        Ok::<_, Error>((bcast_ok, a2a_ok, p2p_ok))
                    })
                };
                let got = match fibers {
                    false => body(),
                    true => crate::on_two_cpus(|| {
                        assert!(k <= 2 || cfg.uses_fibers());
                        body()
                    }),
                }
                .unwrap();
                for (r, ok) in got.iter().enumerate() {
                    assert_eq!(
                        *ok,
                        (true, true, true),
                        "fibers {fibers}, k {k}, {n} words, rank {r}"
                    );
                }
            }
        }
    }
}

/// `Algo::Named(NATIVE)` hands the call to the transport's own collective: the threads
/// backend has none (a typed error, every rank alike), and a transport that has one
/// gets this rank's buffers as the collective's `in` and `out`, the element type and
/// the built-in operator (none for a user operator), and the call reports `native`.
#[test]
fn native_goes_to_the_transport_or_is_refused() {
    use hypercomm_rt::transport::{Builtin, Elem, Incoming, NativeCall, Part, PartMut, Tag};
    use hypercomm_rt::NATIVE;

    let errors = threads::run_with(&config(3), |comm| {
        let mut sum = [0u64; 2];
        Ok::<_, Error>(
            comm.all_reduce_into(&[1, 2], &mut sum, &Op::sum(), Algo::Named(NATIVE))
                .err(),
        )
    })
    .unwrap();
    for e in errors {
        assert!(
            matches!(&e, Some(Error::Native { op, .. }) if op == "allreduce"),
            "{e:?}"
        );
    }

    /// Rank 1 of 3, whose native collectives record what they were given and write
    /// 7 into every output byte.
    #[derive(Default)]
    struct Recorder(Vec<Record>);
    /// What a native call was given: collective, len, element bytes, element type,
    /// operator, input bytes, output length.
    type Record = (
        Collective,
        usize,
        usize,
        Option<Elem>,
        Option<Builtin>,
        Vec<u8>,
        usize,
    );
    impl Transport for Recorder {
        fn rank(&self) -> u32 {
            1
        }
        fn size(&self) -> u32 {
            3
        }
        unsafe fn post_send(&mut self, _: u32, _: Tag, _: &[Part]) -> hypercomm_rt::Result<()> {
            unreachable!("native posts nothing")
        }
        unsafe fn post_recv(&mut self, _: u32, _: Tag, _: &[PartMut]) -> hypercomm_rt::Result<()> {
            unreachable!("native posts nothing")
        }
        fn recv_with(
            &mut self,
            _: u32,
            _: Tag,
            _: usize,
            _: &mut dyn FnMut(Incoming<'_>),
        ) -> hypercomm_rt::Result<()> {
            unreachable!("native posts nothing")
        }
        fn wait_all(&mut self) -> hypercomm_rt::Result<()> {
            Ok(())
        }
        fn cancel_all(&mut self) {}
        fn native(&mut self, call: NativeCall<'_>) -> Option<hypercomm_rt::Result<()>> {
            let rec = (
                call.collective,
                call.len,
                call.elem_bytes,
                call.elem,
                call.op,
                call.input.to_vec(),
                call.output.len(),
            );
            self.0.push(rec);
            call.output.fill(7);
            Some(Ok(()))
        }
    }
    let mut comm = Comm::new(Recorder::default(), Calibration::default());
    let native = Algo::Named(NATIVE);
    let mut out = [0u64; 6];
    let ran = comm.all_gather_into(&[5u64, 6], &mut out, native).unwrap();
    assert_eq!(
        (ran.algorithm, ran.auto, ran.in_place),
        (NATIVE, false, false)
    );
    assert!(out.iter().all(|&x| x == u64::from_ne_bytes([7; 8])));
    let mut buf = [1.5f64, 2.5];
    comm.all_reduce_in_place(&mut buf, &Op::max(), native)
        .unwrap();
    let mut small = [0i32; 1];
    comm.reduce_into(0, &[3i32], None, &Op::commutative(|a, b| a + b), native)
        .unwrap();
    comm.broadcast_into(2, &mut small, native).unwrap();
    let mut block = [0u8; 2];
    comm.scatter_into(0, None, &mut block, Algo::Named("Native"))
        .unwrap();
    let got = &comm.transport().0;
    let bytes = |x: &[u64]| x.iter().flat_map(|v| v.to_ne_bytes()).collect::<Vec<u8>>();
    assert_eq!(
        got[0],
        (
            Collective::Allgather,
            2,
            8,
            Some(Elem::U64),
            None,
            bytes(&[5, 6]),
            48
        )
    );
    let max_in: Vec<u8> = [1.5f64, 2.5].iter().flat_map(|v| v.to_ne_bytes()).collect();
    assert_eq!(
        got[1],
        (
            Collective::Allreduce,
            2,
            8,
            Some(Elem::F64),
            Some(Builtin::Max),
            max_in,
            16
        )
    );
    // A user operator is no built-in; the non-root of a reduce has no output.
    assert_eq!(
        got[2],
        (
            Collective::Reduce { root: 0 },
            1,
            4,
            Some(Elem::I32),
            None,
            3i32.to_ne_bytes().to_vec(),
            0
        )
    );
    // A broadcast's data is in its output on every rank.
    assert_eq!(
        got[3],
        (
            Collective::Broadcast { root: 2 },
            1,
            4,
            Some(Elem::I32),
            None,
            vec![],
            4
        )
    );
    assert_eq!(
        got[4],
        (
            Collective::Scatter { root: 0 },
            2,
            1,
            Some(Elem::U8),
            None,
            vec![],
            2
        )
    );
    assert_eq!(comm.last_algorithm(), Some(NATIVE));
}

/// Every factorization of k (in order, 1s among them), as the shapes `Algo::Shaped`
/// takes.
fn shapes(k: u32) -> Vec<Vec<u32>> {
    fn walk(left: u32, shape: &mut Vec<u32>, out: &mut Vec<Vec<u32>>) {
        if left == 1 {
            out.push(shape.clone());
            return;
        }
        for d in 2..=left {
            if left % d == 0 {
                shape.push(d);
                walk(left / d, shape, out);
                shape.pop();
            }
        }
    }
    if k == 1 {
        return vec![vec![1], vec![1, 1]];
    }
    let mut out = Vec::new();
    walk(k, &mut Vec::new(), &mut out);
    out.push(vec![1, k]);
    out.push(vec![k, 1, 1]);
    out
}

/// `product` with every shape of 1 to 12 ranks (primes as 1xK), all-to-all and
/// all-gather, against the serial reference; the shape reaches the schedule (a 2x3
/// and a 3x2 all-to-all take their first step with different peers).
#[test]
fn product_runs_every_shape_against_the_reference() {
    use super::reference::{expected, random};
    for k in 1..=12u32 {
        for shape in shapes(k) {
            for c in [Collective::Alltoall, Collective::Allgather] {
                let m = 3;
                let in_len = c.in_len(k, m, 0) as usize;
                let inputs: Vec<Vec<u32>> = (0..k)
                    .map(|r| random(u64::from(r) * 7 + 1, in_len))
                    .collect();
                let want = expected(c, m as usize, &inputs, &|a, _| *a);
                let got = threads::run_with(&config(k), |comm| {
                    let r = comm.rank() as usize;
                    let mut out = vec![0u32; c.out_len(k, m, r as u32) as usize];
                    let algo = Algo::Shaped {
                        name: "product",
                        shape: &shape,
                    };
                    let ran = match c {
                        Collective::Alltoall => comm.all_to_all_into(&inputs[r], &mut out, algo)?,
                        _ => comm.all_gather_into(&inputs[r], &mut out, algo)?,
                    };
                    assert_eq!(ran.algorithm, "product");
                    Ok::<_, Error>(out)
                })
                .unwrap();
                for (r, out) in got.iter().enumerate() {
                    assert_eq!(
                        Some(out),
                        want[r].as_ref(),
                        "{c} k {k} shape {shape:?} rank {r}"
                    );
                }
            }
        }
    }
    // The shape is the layout: 2x3 crosses its 3s first, messages of 2 blocks; 3x2
    // its 2s, messages of 3 blocks.
    let first_message = |shape: &[u32]| {
        let topo = Topology::complete(6);
        let problem = Problem {
            topology: &topo,
            collective: Collective::Alltoall,
            len: 1,
            commutative: true,
            counts: None,
        };
        let a = algorithms::find(OpKind::Alltoall, "product").unwrap();
        let s = a.build_shaped(&problem, &Params::default(), shape).unwrap();
        s.program(0).steps[0]
            .ops
            .iter()
            .find_map(|op| match op {
                IrOp::Send { from, .. } => Some(from.iter().map(|r| r.len).sum::<u64>()),
                _ => None,
            })
            .unwrap()
    };
    assert_eq!((first_message(&[2, 3]), first_message(&[3, 2])), (2, 3));
}

/// A shape that does not multiply to the ranks, an empty one, one with a 0, or one
/// given to an algorithm that takes none: an error naming the problem, on every rank.
#[test]
fn bad_shapes_are_errors_naming_the_problem() {
    for (name, shape, says) in [
        (
            "product",
            &[2u32, 2][..],
            "multiplies to 4, not the 6 ranks",
        ),
        ("product", &[], "at least one"),
        ("product", &[0, 6], "factors must be ≥ 1"),
        ("pairwise", &[2, 3], "`pairwise` (alltoall) takes no shape"),
    ] {
        let errs = threads::run_with(&config(6), |comm| {
            let send = vec![0u8; 6];
            let mut recv = vec![0u8; 6];
            let e = comm
                .all_to_all_into(&send, &mut recv, Algo::Shaped { name, shape })
                .unwrap_err();
            Ok::<_, Error>(e.to_string())
        })
        .unwrap();
        for e in errs {
            assert!(e.contains(says), "{name} {shape:?}: {e}");
        }
    }
}
