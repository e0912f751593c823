//! The threads backend's two paths: eager sends (at most `EAGER_LIMIT` bytes, copied and
//! complete at once; inline up to `EAGER_INLINE`, in a reused buffer above) and
//! rendezvous sends (above the limit, read from the sender's memory), at the sizes
//! around both limits; reductions combining from an eager copy; and failures with
//! eager messages in flight: an error or a report, never a hang, never data lost
//! silently. No test asserts a duration; sleeps only make a race's interesting order
//! likely, and every assertion holds whichever order happens.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Barrier;
use std::time::Duration;

use hypercomm_rt::threads::{
    self, Config, Failure, RunError, Threads, EAGER_INLINE, EAGER_LIMIT, EAGER_LIMIT_SPIN,
    EAGER_QUEUE, EAGER_RING, EAGER_RING_INLINE,
};
use hypercomm_rt::{Algo, Calibration, Comm, Error, Op};

const L: usize = EAGER_LIMIT;
const I: usize = EAGER_INLINE;

/// Eager up to `EAGER_LIMIT`, whatever the machine's cores (`Config::new` chooses).
fn config(k: u32) -> Config {
    Config::new(k)
        .timeout(Duration::from_secs(20))
        .calibration(Calibration::default())
        .eager(L)
}

/// The eager limits the size tests run under: none, inline only, and the full one.
const LIMITS: [usize; 3] = [0, I, L];

#[test]
fn the_default_eager_limit_depends_on_whether_every_rank_has_a_core() {
    // One rank always has a core; a hundred thousand never do.
    assert_eq!(Config::new(1).eager, EAGER_LIMIT_SPIN);
    assert_eq!(Config::new(100_000).eager, L);
    assert_eq!(Config::new(1).eager(7).eager, 7);
}

/// Message sizes in bytes: empty, tiny, around the inline size and the limit, and well
/// above it.
fn sizes() -> Vec<usize> {
    let mut s = vec![0, 1, I - 1, I, I + 1, L - 1, L, L + 1, 2 * L + 3, 16 * L];
    s.sort_unstable();
    s.dedup();
    s
}

/// Bytes that differ from one (seed, index) to the next.
fn pattern(seed: u64, n: usize) -> Vec<u8> {
    (0..n as u64)
        .map(|i| (seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ i.wrapping_mul(31)) as u8)
        .collect()
}

fn words(seed: u64, n: usize) -> Vec<u64> {
    (0..n as u64)
        .map(|i| {
            seed.wrapping_mul(0x9e37_79b9_7f4a_7c15)
                .wrapping_add(i * 7919)
        })
        .collect()
}

#[test]
fn point_to_point_messages_around_the_eager_limit_arrive_whole() {
    for (eager, n) in LIMITS
        .into_iter()
        .flat_map(|e| sizes().into_iter().map(move |n| (e, n)))
    {
        let got = threads::run_with(&config(3).eager(eager), |comm| {
            let (r, k) = (comm.rank(), comm.size());
            let mut from_root = vec![0u8; n];
            match r {
                0 => {
                    comm.send(1, &pattern(1, n))?;
                    comm.send(2, &pattern(2, n))?;
                }
                _ => comm.receive_into(0, &mut from_root)?,
            }
            // A ring shift: every rank sends and receives at once.
            let mut left = vec![0u8; n];
            comm.send_receive_into(
                (r + 1) % k,
                &pattern(10 + r as u64, n),
                (r + k - 1) % k,
                &mut left,
            )?;
            Ok::<_, Error>((from_root, left))
        })
        .unwrap();
        for (r, (from_root, left)) in got.iter().enumerate() {
            if r > 0 {
                assert!(
                    *from_root == pattern(r as u64, n),
                    "{n} B to rank {r}, eager {eager}"
                );
            }
            let src = (r + 2) % 3;
            assert!(
                *left == pattern(10 + src as u64, n),
                "{n} B ring, rank {r}, eager {eager}"
            );
        }
    }
}

#[test]
fn eager_and_rendezvous_messages_between_two_ranks_keep_their_order() {
    // Eager and rendezvous sends interleaved on one pair, the eager ones piling up
    // (their sends complete before anything is taken) while a rendezvous send waits.
    let lens: Vec<usize> = (0..48)
        .map(|i| [L, 1, L + 1, 0, I + 1, L - 1, 3 * L, I][i % 8])
        .collect();
    let lens = &lens;
    let got = threads::run_with(&config(2), |comm| {
        let mut got = Vec::new();
        if comm.rank() == 0 {
            for (i, &n) in lens.iter().enumerate() {
                comm.send(1, &pattern(i as u64, n))?;
            }
        } else {
            std::thread::sleep(Duration::from_millis(20));
            for &n in lens {
                let mut buf = vec![0u8; n];
                comm.receive_into(0, &mut buf)?;
                got.push(buf);
            }
        }
        Ok::<_, Error>(got)
    })
    .unwrap();
    for (i, (buf, &n)) in got[1].iter().zip(lens).enumerate() {
        assert!(*buf == pattern(i as u64, n), "message {i} of {n} B");
    }
}

/// Messages up to `EAGER_RING_INLINE` bytes go through the pair's lock-free ring while
/// its queue is empty and through the queue otherwise: piled up beyond the ring (the receiver late), and
/// streamed while the receiver takes them (the two paths alternating under races),
/// they arrive whole and in order, mixed with copied and rendezvous messages.
#[test]
fn inline_messages_through_the_ring_and_the_queue_keep_their_order() {
    const R: usize = EAGER_RING_INLINE;
    let piled: Vec<usize> = (0..3 * EAGER_QUEUE)
        .map(|i| match i % 11 {
            10 => L + 1,
            9 => R + 1,
            8 => R,
            _ => i % (I + 1),
        })
        .collect();
    let streamed: Vec<usize> = (0..20_000)
        .map(|i| [0, 1, I, I + 1, 8, R, R + 1, 3][i % 8])
        .collect();
    for (lens, late) in [(&piled, true), (&streamed, false)] {
        let got = threads::run_with(&config(2), |comm| {
            let mut bad = Vec::new();
            if comm.rank() == 0 {
                for (i, &n) in lens.iter().enumerate() {
                    comm.send(1, &pattern(i as u64, n))?;
                }
            } else {
                if late {
                    std::thread::sleep(Duration::from_millis(20));
                }
                for (i, &n) in lens.iter().enumerate() {
                    let mut buf = vec![0u8; n];
                    comm.receive_into(0, &mut buf)?;
                    if buf != pattern(i as u64, n) {
                        bad.push(i);
                    }
                }
            }
            Ok::<_, Error>(bad)
        })
        .unwrap();
        assert_eq!(got[1], Vec::<usize>::new(), "late receiver {late}");
    }
}

#[test]
fn many_eager_messages_in_flight_keep_their_own_buffers() {
    // Rounds of many eager messages queued at once: the buffers come back to the pair
    // and are reused, never while a queued message still owns them.
    let got = threads::run_with(&config(2), |comm| {
        let mut bad = Vec::new();
        for round in 0..5u64 {
            let count = 3 + 7 * round as usize;
            let len = |i: usize| (i * 389 + round as usize * 17) % (L + 1);
            if comm.rank() == 0 {
                for i in 0..count {
                    comm.send(1, &pattern(round * 1000 + i as u64, len(i)))?;
                }
            } else {
                std::thread::sleep(Duration::from_millis(5));
                for i in 0..count {
                    let mut buf = vec![0u8; len(i)];
                    comm.receive_into(0, &mut buf)?;
                    if buf != pattern(round * 1000 + i as u64, len(i)) {
                        bad.push((round, i));
                    }
                }
            }
            // Both sides agree the round is over before the next.
            let mut token = [0u8];
            let peer = 1 - comm.rank();
            comm.send_receive_into(peer, &[1u8], peer, &mut token)?;
        }
        Ok::<_, Error>(bad)
    })
    .unwrap();
    assert!(got[1].is_empty(), "corrupted messages: {:?}", got[1]);
}

#[test]
fn a_sender_runs_at_most_eager_queue_messages_ahead_of_its_receiver() {
    // Until rank 1 starts receiving, rank 0's small sends complete only while fewer
    // than EAGER_QUEUE messages wait in the queue (after EAGER_RING in the ring); the
    // next one waits for rank 1 (and all arrive).
    let receiving = AtomicBool::new(false);
    let total = 3 * EAGER_QUEUE + 5;
    let got = threads::run_with(&config(2), |comm| {
        let mut ahead = 0;
        let mut bad = Vec::new();
        if comm.rank() == 0 {
            for i in 0..total {
                comm.send(1, &pattern(i as u64, 8))?;
                if !receiving.load(Ordering::SeqCst) {
                    ahead += 1;
                }
            }
        } else {
            std::thread::sleep(Duration::from_millis(50));
            receiving.store(true, Ordering::SeqCst);
            for i in 0..total {
                let mut buf = [0u8; 8];
                comm.receive_into(0, &mut buf)?;
                if buf[..] != pattern(i as u64, 8)[..] {
                    bad.push(i);
                }
            }
        }
        Ok::<_, Error>((ahead, bad))
    })
    .unwrap();
    assert!(
        got[0].0 <= EAGER_RING + EAGER_QUEUE,
        "{} sends ahead",
        got[0].0
    );
    assert!(got[1].1.is_empty(), "corrupted: {:?}", got[1].1);
}

/// Each collective, on k ranks with `n` elements a block, against the serial result.
fn check_collectives(k: u32, n: usize, eager: usize) {
    let got = threads::run_with(&config(k).eager(eager), |comm| {
        let (r, kk) = (comm.rank() as u64, comm.size() as usize);
        let mine = words(r + 1, n);
        let mut out = Vec::new();
        for algo in ["ring", "bruck"] {
            let mut recv = vec![0u64; kk * n];
            comm.all_gather_into(&mine, &mut recv, Algo::Named(algo))?;
            out.push(recv);
        }
        for algo in ["pairwise", "bruck"] {
            let send = words(100 + r, kk * n);
            let mut recv = vec![0u64; kk * n];
            comm.all_to_all_into(&send, &mut recv, Algo::Named(algo))?;
            out.push(recv);
        }
        let mut buf = if r == 1 { words(7, n) } else { vec![0; n] };
        comm.broadcast_into(1, &mut buf, Algo::Named("binomial"))?;
        out.push(buf);
        for algo in [
            Algo::Named("recursive-doubling"),
            Algo::Named("ring"),
            Algo::Auto,
        ] {
            let mut recv = vec![0u64; n];
            comm.all_reduce_into(&mine, &mut recv, &Op::sum(), algo)?;
            out.push(recv);
        }
        Ok::<_, Error>(out)
    })
    .unwrap();
    let k = k as usize;
    let input = |r: usize| words(r as u64 + 1, n);
    let gathered: Vec<u64> = (0..k).flat_map(input).collect();
    let sum: Vec<u64> = (0..n)
        .map(|i| (0..k).fold(0u64, |a, r| a.wrapping_add(input(r)[i])))
        .collect();
    for (r, out) in got.iter().enumerate() {
        let what = format!("k = {k}, {} B a block, eager {eager}, rank {r}", n * 8);
        assert!(
            out[0] == gathered && out[1] == gathered,
            "all-gather, {what}"
        );
        // Block s of rank r's all-to-all result is block r of rank s's input.
        let a2a: Vec<u64> = (0..k)
            .flat_map(|s| words(100 + s as u64, k * n)[r * n..(r + 1) * n].to_vec())
            .collect();
        assert!(out[2] == a2a && out[3] == a2a, "all-to-all, {what}");
        assert!(out[4] == words(7, n), "broadcast, {what}");
        for (i, o) in out[5..].iter().enumerate() {
            assert!(*o == sum, "all-reduce {i}, {what}");
        }
    }
}

#[test]
fn collectives_around_the_eager_limit_match_the_serial_result() {
    let (e, i) = (L / 8, I / 8);
    for k in [2, 3, 4, 5] {
        for n in [1, i, i + 1, e - 1, e, e + 1, 3 * e] {
            for eager in LIMITS {
                check_collectives(k, n, eager);
            }
        }
    }
}

/// The affine map x ↦ a·x + b as [a, b]; `compose(f, g)` = f ∘ g: associative, not
/// commutative.
fn compose(f: &[u64; 2], g: &[u64; 2]) -> [u64; 2] {
    [
        f[0].wrapping_mul(g[0]),
        f[0].wrapping_mul(g[1]).wrapping_add(f[1]),
    ]
}

fn maps(r: u64, n: usize) -> Vec<[u64; 2]> {
    (0..n as u64)
        .map(|i| [2 * (r * 31 + i) + 1, r * 1000 + i])
        .collect()
}

#[test]
fn non_commutative_reductions_combine_from_eager_copies_in_rank_order() {
    // 16 B elements: messages of e − 1, e, e + 1 elements straddle the limit.
    let (e, i) = (L / 16, I / 16);
    for k in [2, 3, 4, 6] {
        for (n, eager) in [1, i, i + 1, e - 1, e, e + 1, 2 * e + 1]
            .into_iter()
            .flat_map(|n| [I, L].map(|eager| (n, eager)))
        {
            let got = threads::run_with(&config(k).eager(eager), |comm| {
                let r = comm.rank() as u64;
                let op = Op::associative(compose);
                let mine = maps(r, n);
                let mut all = vec![[0u64; 2]; n];
                comm.all_reduce_into(&mine, &mut all, &op, Algo::Named("recursive-doubling"))?;
                let mut prefix = vec![[0u64; 2]; n];
                comm.scan_into(&mine, &mut prefix, &op, Algo::Named("recursive-doubling"))?;
                let mut root = vec![[0u64; 2]; n];
                let recv = (r == 2 % k as u64).then_some(&mut root[..]);
                comm.reduce_into(2 % comm.size(), &mine, recv, &op, Algo::Named("binomial"))?;
                Ok::<_, Error>((all, prefix, root))
            })
            .unwrap();
            let fold = |upto: usize| -> Vec<[u64; 2]> {
                (0..n)
                    .map(|i| {
                        (1..=upto)
                            .fold(maps(0, n)[i], |acc, r| compose(&acc, &maps(r as u64, n)[i]))
                    })
                    .collect()
            };
            let total = fold(k as usize - 1);
            for (r, (all, prefix, root)) in got.iter().enumerate() {
                let what = format!("k = {k}, {} B, eager {eager}, rank {r}", n * 16);
                assert!(*all == total, "all-reduce, {what}");
                assert!(*prefix == fold(r), "scan, {what}");
                if r == 2 % k as usize {
                    assert!(*root == total, "reduce, {what}");
                }
            }
        }
    }
}

#[test]
fn an_eager_send_to_a_rank_that_failed_is_an_error() {
    for n in [8, I + 1, L, L + 1] {
        let outcomes = threads::run_each(&config(2), |comm| {
            if comm.rank() == 1 {
                return Err(Error::ZeroSized);
            }
            // Once this receive has seen rank 1 gone, a send to it must fail, eager or
            // not, rather than complete into a mailbox no one will read.
            let recv = comm.receive_into(1, &mut [0u8; 8]).unwrap_err();
            let send = comm.send(1, &vec![5u8; n]).unwrap_err();
            let again = comm.send(1, &vec![6u8; n]).unwrap_err();
            Ok((recv, send, again))
        })
        .unwrap();
        match &outcomes[0] {
            Ok((
                Error::PeerFailed { rank: 1 },
                Error::PeerFailed { rank: 1 },
                Error::PeerFailed { rank: 1 },
            )) => {}
            other => panic!("{n} B: {other:?}"),
        }
        assert!(matches!(
            outcomes[1],
            Err(Failure::Returned(Error::ZeroSized))
        ));
    }
}

#[test]
fn a_rank_that_returns_without_receiving_an_eager_message_is_reported() {
    // The send completes before the receiver can leave (it waits at the barrier), so
    // no sender can be told: the receiver's outcome reports the message.
    let barrier = Barrier::new(2);
    let outcomes = threads::run_each(&config(2), |comm| {
        if comm.rank() == 0 {
            comm.send(1, &[1u64, 2, 3])?;
            comm.send(1, &[4u64])?;
        }
        barrier.wait();
        Ok::<_, Error>(comm.rank())
    })
    .unwrap();
    assert!(matches!(outcomes[0], Ok(0)), "{:?}", outcomes[0]);
    match &outcomes[1] {
        Err(Failure::Unreceived {
            from: 0,
            messages: 2,
        }) => {}
        other => panic!("{other:?}"),
    }
    // `run` fails, naming the receiver.
    let run = threads::run_with(&config(2), |comm| {
        if comm.rank() == 0 {
            comm.send(1, &[1u8])?;
        }
        barrier.wait();
        Ok::<_, Error>(())
    });
    match run {
        Err(
            e @ RunError::Rank {
                rank: 1,
                failure: Failure::Unreceived { .. },
            },
        ) => assert!(e.to_string().contains("from rank 0"), "{e}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_rank_that_leaves_before_an_eager_message_comes_fails_the_run_either_way() {
    // Whether the receiver left before the sender's check (the sender gets
    // `PeerFailed`) or after it (the receiver is reported), the run fails.
    for n in [8, L, L + 1] {
        let outcomes = threads::run_each(&config(2), |comm| {
            if comm.rank() == 0 {
                std::thread::sleep(Duration::from_millis(2));
                comm.send(1, &vec![1u8; n])?;
            }
            Ok::<_, Error>(())
        })
        .unwrap();
        match (&outcomes[0], &outcomes[1]) {
            (Err(Failure::Returned(Error::PeerFailed { rank: 1 })), Ok(())) => {}
            (
                Ok(()),
                Err(Failure::Unreceived {
                    from: 0,
                    messages: 1,
                }),
            ) if n <= L => {}
            other => panic!("{n} B: {other:?}"),
        }
    }
}

#[test]
fn a_message_sent_eagerly_arrives_after_its_sender_failed() {
    let outcomes = threads::run_each(&config(2), |comm| {
        if comm.rank() == 0 {
            comm.send(1, &pattern(3, 64))?;
            panic!("injected failure after an eager send");
        }
        std::thread::sleep(Duration::from_millis(20));
        let mut buf = vec![0u8; 64];
        comm.receive_into(0, &mut buf)?;
        let next = comm.receive_into(0, &mut buf).unwrap_err();
        Ok::<_, Error>((buf, next))
    })
    .unwrap();
    assert!(matches!(&outcomes[0], Err(Failure::Panicked(m)) if m.contains("injected")));
    match &outcomes[1] {
        Ok((buf, Error::PeerFailed { rank: 0 })) => assert!(*buf == pattern(3, 64)),
        other => panic!("{other:?}"),
    }
}

#[test]
fn cancelling_withdraws_only_the_failed_step_s_eager_messages() {
    // Rank 0's first send to rank 1 completed; its second is cancelled when rank 2
    // fails in the same exchange. The first must still reach rank 1.
    let outcomes = threads::run_each(&config(3), |comm| match comm.rank() {
        0 => {
            comm.send(1, &pattern(1, 100))?;
            let mut from_two = [0u8; 100];
            let e = comm
                .send_receive_into(1, &pattern(2, 100), 2, &mut from_two)
                .unwrap_err();
            Ok((Some(e), None, None))
        }
        1 => {
            std::thread::sleep(Duration::from_millis(50));
            let mut first = vec![0u8; 100];
            comm.receive_into(0, &mut first)?;
            let mut second = vec![0u8; 100];
            let second = comm.receive_into(0, &mut second).map(|()| second);
            Ok((None, Some(first), Some(second)))
        }
        _ => Err(Error::ZeroSized),
    })
    .unwrap();
    assert!(matches!(
        outcomes[0],
        Ok((Some(Error::PeerFailed { rank: 2 }), None, None))
    ));
    match &outcomes[1] {
        Ok((None, Some(first), Some(second))) => {
            assert!(*first == pattern(1, 100));
            // The cancelled message was taken before it was withdrawn, or is gone.
            match second {
                Ok(buf) => assert!(*buf == pattern(2, 100)),
                Err(e) => assert!(matches!(e, Error::PeerFailed { rank: 2 }), "{e}"),
            }
        }
        other => panic!("{other:?}"),
    }
}

fn all_reduce(comm: &mut Comm<Threads<'_>>, n: usize, op: &Op<u64>) -> Result<u64, Error> {
    let mut out = vec![0u64; n];
    comm.all_reduce_into(
        &vec![comm.rank() as u64; n],
        &mut out,
        op,
        Algo::Named("recursive-doubling"),
    )?;
    Ok(out[0])
}

#[test]
fn a_rank_that_panics_mid_collective_fails_the_others_on_both_paths() {
    for n in [1, L / 8, L / 8 + 1, 4 * L / 8] {
        let outcomes = threads::run_each(&config(4), |comm| {
            let me = comm.rank();
            let op = Op::associative(move |a: &u64, b: &u64| {
                assert!(me != 1, "injected failure");
                a + b
            });
            all_reduce(comm, n, &op)?;
            all_reduce(comm, n, &op)
        })
        .unwrap();
        for (r, outcome) in outcomes.iter().enumerate() {
            match (r, outcome) {
                (1, Err(Failure::Panicked(m))) => assert!(m.contains("injected"), "{m}"),
                (_, Err(Failure::Returned(Error::PeerFailed { rank: 1 }))) if r != 1 => {}
                (_, other) => panic!("{n} elements, rank {r}: {other:?}"),
            }
        }
    }
}

#[test]
fn a_broadcast_whose_child_fails_after_the_root_sent_eagerly_does_not_hang() {
    // Binomial from 0 on 4 ranks: 0 → 2, then 0 → 1 and 2 → 3. Rank 2 fails before
    // receiving. The root's sends may complete before rank 2 is gone (then the root
    // succeeds: a receiver failing after the send completed is the receiver's failure)
    // or be told (PeerFailed); rank 3, which needs rank 2, fails.
    for n in [8, L + 8] {
        let outcomes = threads::run_each(&config(4), |comm| {
            if comm.rank() == 2 {
                std::thread::sleep(Duration::from_millis(5));
                panic!("injected failure before the broadcast");
            }
            let mut buf = if comm.rank() == 0 {
                pattern(9, n)
            } else {
                vec![0; n]
            };
            comm.broadcast_into(0, &mut buf, Algo::Named("binomial"))?;
            Ok::<_, Error>(buf)
        })
        .unwrap();
        assert!(matches!(&outcomes[2], Err(Failure::Panicked(_))));
        assert!(
            matches!(
                &outcomes[3],
                Err(Failure::Returned(Error::PeerFailed { rank: 2 }))
            ),
            "{:?}",
            outcomes[3]
        );
        for r in [0, 1] {
            match &outcomes[r] {
                Ok(buf) => assert!(*buf == pattern(9, n), "{n} B, rank {r}"),
                Err(Failure::Returned(Error::PeerFailed { rank: 2 })) => {}
                other => panic!("{n} B, rank {r}: {other:?}"),
            }
        }
    }
}

/// A receiver that parks at once (no spinning, no yielding) is woken by each message
/// and each taken rendezvous wakes its parked sender: the asymmetric fence pair of
/// `wake` and `park` (light on the sending side, `membarrier` before parking). A lost
/// wake-up is not an error (a receive whose message arrived while it slept succeeds
/// when the park times out), so the ranks' timeout is long (10 min) and a watchdog
/// fails the test if the 120 messages, about 0.1 s of sleeps, are not through in
/// 2 min: with `wake` made a no-op, the first receive sleeps its whole timeout.
#[test]
fn parked_ranks_are_woken_by_every_message_and_every_taken_send() {
    let (done, finished) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut config = config(2)
            .timeout(Duration::from_secs(600))
            .yield_for(Duration::ZERO);
        config.spin = 0;
        for n in [8, EAGER_RING_INLINE + 1, 2 * L] {
            let got = threads::run_with(&config, |comm| {
                let mut bad = Vec::new();
                for i in 0..40u64 {
                    if comm.rank() == 0 {
                        // The receiver is parked by the time each message goes.
                        std::thread::sleep(Duration::from_millis(1));
                        comm.send(1, &pattern(i, n))?;
                    } else {
                        let mut buf = vec![0u8; n];
                        comm.receive_into(0, &mut buf)?;
                        if buf != pattern(i, n) {
                            bad.push(i);
                        }
                    }
                }
                Ok::<_, Error>(bad)
            });
            let verdict = match got {
                Ok(got) if got[1].is_empty() => Ok(()),
                Ok(got) => Err(format!("{n} B: corrupted messages {:?}", got[1])),
                Err(e) => Err(format!("{n} B: {e}")),
            };
            if done.send(verdict).is_err() {
                return;
            }
        }
    });
    for _ in 0..3 {
        match finished.recv_timeout(Duration::from_secs(120)) {
            Ok(verdict) => verdict.unwrap_or_else(|e| panic!("{e}")),
            Err(_) => panic!("a parked rank was not woken: 40 messages not through in 2 min"),
        }
    }
}
