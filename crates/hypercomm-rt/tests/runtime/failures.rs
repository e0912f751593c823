//! A rank that panics, returns early, stalls or calls something else must make the
//! others fail with a typed error, never hang. No test asserts a duration: the short
//! timeout only bounds how long a broken runtime would take to fail the test.

use std::time::Duration;

use hypercomm_rt::threads::{self, Config, Failure};
use hypercomm_rt::{Algo, Calibration, Error, Op};

/// Failures are seen at once, without waiting for the timeout, which must outlast the
/// printing of a panic's backtrace.
fn config(k: u32) -> Config {
    Config::new(k)
        .timeout(Duration::from_secs(20))
        .calibration(Calibration::default())
}

/// An all-reduce in which every rank needs every other rank's data.
const ALL_REDUCE: Algo = Algo::Named("dimension-exchange");

fn all_reduce(
    comm: &mut hypercomm_rt::Comm<threads::Threads<'_>>,
    op: &Op<u64>,
) -> Result<u64, Error> {
    all_reduce_of(comm, op, 64)
}

/// [`all_reduce`] of `len` elements (at 8,192, 64 KiB, the messages are rendezvous
/// sends under any default eager limit, which a failing rank must withdraw or wait
/// for).
fn all_reduce_of(
    comm: &mut hypercomm_rt::Comm<threads::Threads<'_>>,
    op: &Op<u64>,
    len: usize,
) -> Result<u64, Error> {
    let mut out = vec![0u64; len];
    comm.all_reduce_into(&vec![comm.rank() as u64; len], &mut out, op, ALL_REDUCE)?;
    Ok(out[0])
}

/// Yield windows to wait with: parking at once, the default, and yielding for longer
/// than the timeout (a failure must then be seen while yielding).
const YIELD_WINDOWS: [Duration; 3] = [
    Duration::ZERO,
    threads::YIELD_FOR,
    Duration::from_secs(3600),
];

/// Ranks as threads, then as fibers (`Config::fibers`: ranks that share a CPU on one
/// thread, where the ranks outnumber the CPUs).
const FIBERS: [bool; 2] = [false, true];

/// `threads::run_each`, launched from a thread restricted to two CPUs when
/// `cfg.fibers`, so that the ranks run as fibers on any machine (checked).
fn run_each<T: Send, E: Send, F>(cfg: &Config, f: F) -> Result<Vec<Result<T, Failure<E>>>, Error>
where
    F: Fn(&mut hypercomm_rt::Comm<threads::Threads<'_>>) -> Result<T, E> + Sync + Send,
{
    if !cfg.fibers {
        return threads::run_each(cfg, f);
    }
    crate::on_two_cpus(|| {
        assert!(cfg.uses_fibers(), "{} ranks on two CPUs", cfg.ranks);
        threads::run_each(cfg, f)
    })
}

#[test]
fn a_rank_that_panics_mid_collective_fails_the_others() {
    for (window, fibers) in YIELD_WINDOWS
        .into_iter()
        .flat_map(|w| FIBERS.map(|f| (w, f)))
    {
        for len in [64, 8192] {
            panics_mid_collective(config(4).yield_for(window).fibers(fibers), len);
        }
    }
}

fn panics_mid_collective(cfg: Config, len: usize) {
    let outcomes = run_each(&cfg, |comm| {
        let me = comm.rank();
        // Rank 1 panics inside the collective, in its first combine. Ranks that no
        // longer need it finish the call, and fail in the next one.
        let op = Op::associative(move |a: &u64, b: &u64| {
            assert!(me != 1, "injected failure");
            a + b
        });
        all_reduce_of(comm, &op, len)?;
        all_reduce_of(comm, &op, len)
    })
    .unwrap();
    for (r, outcome) in outcomes.iter().enumerate() {
        match (r, outcome) {
            (1, Err(Failure::Panicked(m))) => assert!(m.contains("injected"), "{m}"),
            (1, other) => panic!("rank 1 should have panicked: {other:?}"),
            (_, Err(Failure::Returned(Error::PeerFailed { rank: 1 }))) => {}
            (_, other) => panic!("rank {r} should have seen rank 1 fail: {other:?}"),
        }
    }
}

#[test]
fn a_rank_that_returns_early_fails_the_others() {
    for (early_error, window, fibers) in [false, true].into_iter().flat_map(|e| {
        YIELD_WINDOWS
            .into_iter()
            .flat_map(move |w| FIBERS.map(|f| (e, w, f)))
    }) {
        let cfg = config(4).yield_for(window).fibers(fibers);
        let outcomes = run_each(&cfg, |comm| {
            if comm.rank() == 2 {
                return match early_error {
                    true => Err(Error::ZeroSized),
                    false => Ok(0),
                };
            }
            all_reduce(comm, &Op::sum())
        })
        .unwrap();
        for (r, outcome) in outcomes.iter().enumerate() {
            match (r, outcome) {
                (2, Ok(0)) if !early_error => {}
                (2, Err(Failure::Returned(Error::ZeroSized))) if early_error => {}
                (_, Err(Failure::Returned(Error::PeerFailed { rank: 2 }))) if r != 2 => {}
                (_, other) => {
                    panic!("early error {early_error}, yield {window:?}, fibers {fibers}, rank {r}: {other:?}")
                }
            }
        }
    }
}

/// A rank that sends (eagerly: the send completes at once) and leaves has done its part:
/// the receiver must get the message, not `PeerFailed` (the message stays in the
/// mailbox after its sender left), however its wait interleaves with the departure.
/// Repeated, since the interleaving is up to the scheduler; pairs (0, 1) and (2, 3).
/// The interleaving that once failed in CI (the sender marked gone between the
/// receiver's last look at its mailbox and its check of the sender) is too narrow to
/// hit here on purpose: the unit test
/// `a_failure_seen_after_the_awaited_message_arrived_does_not_fail_the_wait` forces it.
#[test]
fn a_message_sent_just_before_its_sender_leaves_is_received() {
    for (window, fibers) in YIELD_WINDOWS
        .into_iter()
        .flat_map(|w| FIBERS.map(|f| (w, f)))
    {
        let cfg = config(4).yield_for(window).fibers(fibers);
        for _ in 0..200 {
            let got = run_each(&cfg, |comm| {
                let r = comm.rank();
                let mut x = [0u64; 4];
                match r % 2 {
                    0 => comm.send(r + 1, &[u64::from(r) + 7; 4])?,
                    _ => comm.receive_into(r - 1, &mut x)?,
                }
                Ok::<_, Error>(x)
            })
            .unwrap();
            for (r, outcome) in got.iter().enumerate() {
                let want = match r % 2 {
                    0 => [0; 4],
                    _ => [r as u64 - 1 + 7; 4],
                };
                match outcome {
                    Ok(x) if *x == want => {}
                    other => panic!("yield {window:?}, fibers {fibers}, rank {r}: {other:?}"),
                }
            }
        }
    }
}

#[test]
fn a_rank_that_fails_before_a_barrier_fails_the_others_in_it() {
    for (how, fibers) in [
        hypercomm_rt::Barrier::RecursiveDoubling,
        hypercomm_rt::Barrier::Tree,
    ]
    .into_iter()
    .flat_map(|h| FIBERS.map(|f| (h, f)))
    {
        let outcomes = run_each(&config(5).fibers(fibers), |comm| {
            if comm.rank() == 3 {
                return Err(Error::ZeroSized);
            }
            comm.barrier_with(how)
        })
        .unwrap();
        for (r, outcome) in outcomes.iter().enumerate() {
            match (r, outcome) {
                (3, Err(Failure::Returned(Error::ZeroSized))) => {}
                (_, Err(Failure::Returned(Error::PeerFailed { rank: 3 }))) if r != 3 => {}
                (_, other) => panic!("{how}, fibers {fibers}, rank {r}: {other:?}"),
            }
        }
    }
}

#[test]
fn a_stalled_rank_makes_the_others_time_out() {
    for fibers in FIBERS {
        stalled_rank(fibers);
    }
}

/// Rank 3 sleeps past the timeout (as fibers it stops rank 2, of its thread, as long).
fn stalled_rank(fibers: bool) {
    let short = config(4).timeout(Duration::from_millis(300)).fibers(fibers);
    let outcomes = run_each(&short, |comm| {
        if comm.rank() == 3 {
            std::thread::sleep(Duration::from_millis(1500));
        }
        all_reduce(comm, &Op::sum())
    })
    .unwrap();
    let errors: Vec<&Error> = outcomes
        .iter()
        .map(|o| match o {
            Err(Failure::Returned(e)) => e,
            other => panic!("every rank must fail: {other:?}"),
        })
        .collect();
    assert!(
        errors.iter().any(|e| matches!(e, Error::Timeout { .. })),
        "{errors:?}"
    );
    for e in &errors {
        assert!(
            matches!(e, Error::Timeout { .. } | Error::PeerFailed { .. }),
            "{e}"
        );
    }
    // The stalled rank arrives after the others failed and is told so.
    assert!(
        matches!(errors[3], Error::PeerFailed { .. }),
        "{}",
        errors[3]
    );
}

#[test]
fn ranks_that_call_different_collectives_get_an_error() {
    let outcomes = threads::run_each(&config(2), |comm| {
        let mut buf = [1u32; 4];
        match comm.rank() {
            0 => comm.send(1, &buf),
            _ => comm.broadcast_into(0, &mut buf, Algo::Auto).map(|_| ()),
        }
    })
    .unwrap();
    match &outcomes[1] {
        Err(Failure::Returned(Error::TagMismatch {
            rank: 1, peer: 0, ..
        })) => {}
        other => panic!("{other:?}"),
    }
}

#[test]
fn ranks_that_disagree_on_the_length_get_an_error() {
    let outcomes = threads::run_each(&config(4), |comm| {
        let mut buf = vec![0u32; if comm.rank() == 0 { 10 } else { 20 }];
        comm.broadcast_into(0, &mut buf, Algo::Named("sbt"))
    })
    .unwrap();
    // Rank 1 receives 10 elements where it expects 20 (the root's sends complete: they
    // were taken).
    match &outcomes[1] {
        Err(Failure::Returned(Error::LengthMismatch {
            rank: 1,
            peer: 0,
            expected: 80,
            got: 40,
            ..
        })) => {}
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_rank_that_goes_on_after_a_local_error_meets_a_tag_mismatch() {
    let outcomes = threads::run_each(&config(2), |comm| {
        let mut recv = [0u32; 2];
        // The root forgets its data: its call fails before any message...
        let first = comm.scatter_into(0, None, &mut recv, Algo::Auto);
        if comm.rank() == 0 {
            assert!(matches!(first, Err(Error::RootBuffer(_))));
            // ...and it goes on with the next call, whose messages rank 1 must not
            // take for the scatter's.
            return comm.broadcast_into(0, &mut recv, Algo::Auto).map(|_| ());
        }
        first.map(|_| ())
    })
    .unwrap();
    match &outcomes[1] {
        Err(Failure::Returned(Error::TagMismatch { expected, got, .. })) => {
            assert_eq!((expected.epoch, got.epoch), (0, 1))
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_rank_count_out_of_range_is_refused_before_anything_starts() {
    let max = threads::MAX_RANKS;
    for k in [0, max + 1, u32::MAX] {
        let got = threads::run(k, |_| Ok::<(), Error>(()));
        match got {
            Err(threads::RunError::Setup(Error::RankCount { ranks, max: m })) => {
                assert_eq!((ranks, m), (k, max));
            }
            other => panic!("{k} ranks: {other:?}"),
        }
        let shown = Error::RankCount { ranks: k, max }.to_string();
        assert!(
            shown.contains(&format!("1..={max}")) && shown.contains(&k.to_string()),
            "{shown}"
        );
    }
    // The largest count is allowed (a cheap closure: no communication).
    let ranks = threads::run(max, |comm| Ok::<u32, Error>(comm.rank())).unwrap();
    assert_eq!(ranks, (0..max).collect::<Vec<_>>());
}

// Glibc refuses such a stack with an error; some other C libraries fail an assertion in
// std's spawn instead (a panic, not an `Err`). Started ranks that meet a later refusal
// are tested in `threads`' unit tests (an injected refusal).
#[cfg(target_env = "gnu")]
#[test]
fn a_thread_the_system_refuses_is_an_error_and_a_stack_size_is_applied() {
    // A stack no system gives: the first spawn fails. The run returns `Spawn` naming
    // rank 0, at once.
    let cfg = config(3).stack_size(usize::MAX / 2);
    let got = threads::run_with(&cfg, |comm| comm.barrier());
    match got {
        Err(threads::RunError::Setup(Error::Spawn { rank: 0, reason })) => {
            assert!(!reason.is_empty());
        }
        other => panic!("{other:?}"),
    }
    // A stack size that works still runs (the option is applied, not only refused).
    let cfg = config(3).stack_size(4 << 20);
    let sum = threads::run_with(&cfg, |comm| {
        let mut out = [0u32];
        comm.all_reduce_into(&[comm.rank() + 1], &mut out, &Op::sum(), Algo::Auto)?;
        Ok::<u32, Error>(out[0])
    })
    .unwrap();
    assert_eq!(sum, [6, 6, 6]);
}

/// Set in the child processes of the stack-overflow test: which overflow to cause.
#[cfg(target_os = "linux")]
const OVERFLOW_CHILD: &str = "HYPERCOMM_TEST_OVERFLOW_CHILD";

/// Recursion without end (but for a depth never reached), a frame of 512 B each.
#[cfg(target_os = "linux")]
fn recurse(depth: u64) -> u64 {
    let frame = std::hint::black_box([depth; 64]);
    if depth == u64::MAX {
        return frame[1];
    }
    recurse(depth + 1).wrapping_add(frame[3])
}

/// A rank whose fiber overflows its stack aborts the process with a message naming the
/// rank and the stack's size (not a bare `SIGSEGV`), and a thread's overflow, once the
/// fibers' handler is installed, still gets Rust's own message. Each case runs in a
/// child process (an overflow aborts it): this test binary, run again on this test
/// alone, with `OVERFLOW_CHILD` saying which case.
#[cfg(target_os = "linux")]
#[test]
fn a_rank_that_overflows_its_fiber_stack_is_named_as_the_process_aborts() {
    use std::os::unix::process::ExitStatusExt;
    match std::env::var(OVERFLOW_CHILD).as_deref() {
        Ok("fiber") => {
            // Rank 2 of 4, on two CPUs: it shares its thread with rank 3.
            let cfg = config(4).fibers(true).stack_size(128 << 10);
            let _ = run_each(&cfg, |comm| {
                if comm.rank() == 2 {
                    std::hint::black_box(recurse(0));
                }
                comm.barrier()
            });
            panic!("the overflow did not abort the process");
        }
        Ok("thread") => {
            // The fibers' handler installed first, then a thread overflows.
            run_each(&config(4).fibers(true), |comm| comm.barrier()).unwrap();
            let t = std::thread::Builder::new()
                .name("small".into())
                .stack_size(128 << 10)
                .spawn(|| recurse(0))
                .unwrap();
            let _ = t.join();
            panic!("the overflow did not abort the process");
        }
        Ok("ignored") => {
            // A process that ignores SIGSEGV (inherited through exec: std then leaves
            // it alone) and faults outside any guard page dies of it, as without the
            // fibers' handler, instead of faulting forever.
            // SAFETY: plain libc calls; the write faults on purpose.
            unsafe { libc::signal(libc::SIGSEGV, libc::SIG_IGN) };
            run_each(&config(4).fibers(true), |comm| comm.barrier()).unwrap();
            unsafe { std::ptr::write_volatile(std::hint::black_box(16usize) as *mut u64, 1) };
            panic!("the fault did not kill the process");
        }
        _ => {}
    }
    for (case, signal, expected) in [
        (
            "fiber",
            libc::SIGABRT,
            &["rank 2 has overflowed its fiber's stack of 131072 bytes"][..],
        ),
        // Rust's message (recent versions put the thread's id after its name).
        (
            "thread",
            libc::SIGABRT,
            &["thread 'small'", "has overflowed its stack"][..],
        ),
        ("ignored", libc::SIGSEGV, &[][..]),
    ] {
        let mut child = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "failures::a_rank_that_overflows_its_fiber_stack_is_named_as_the_process_aborts",
                "--nocapture",
            ])
            .env(OVERFLOW_CHILD, case)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // A broken handler may fault forever: a child still running after a minute
        // is killed, and the test fails.
        let start = std::time::Instant::now();
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status;
            }
            if start.elapsed() > Duration::from_secs(60) {
                child.kill().unwrap();
                panic!("{case}: the child still runs after a minute");
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        let mut stderr = String::new();
        std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
        assert_eq!(status.signal(), Some(signal), "{case}: {stderr}");
        for part in expected {
            assert!(stderr.contains(part), "{case}: {stderr}");
        }
    }
}
