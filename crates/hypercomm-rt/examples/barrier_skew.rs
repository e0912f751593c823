//! Why the barrier before a timed call shapes the latency measured: per-rank medians (p10,
//! p90; mean, p99) of a short broadcast after each barrier, and the cost of one hand-off between threads.
//!
//! ```text
//! cargo run --release -p hypercomm-rt --example barrier_skew -- bcast [ranks] [algo] [bytes]
//! taskset -c 0 target/release/examples/barrier_skew handoff
//! target/release/examples/barrier_skew delay [algo] [bytes]
//! target/release/examples/barrier_skew switches [ranks] [algo] [bytes] [threads|fibers]
//! target/release/examples/barrier_skew transfer
//! target/release/examples/barrier_skew drain
//! ```
//!
//! `bcast` (default 4 ranks, `binomial`, 8 B): 3,000 calls after each barrier, the
//! first 500 untimed; each rank times its call from its own exit from the barrier, as
//! `hypercomm bench` and OSU do. Barriers: `allreduce-auto` (an all-reduce of one byte
//! by `Algo::Auto`, `hypercomm bench`'s barrier before `--barrier` existed),
//! `recursive-doubling` and `tree` (`hypercomm_rt::Barrier`).
//!
//! `handoff`: two threads pass a counter back and forth, each polling with
//! `yield_now` while it is the other's turn: with both pinned to one core, the time per
//! hand-off is that of one `sched_yield` context switch.
//!
//! `transfer` (Linux): what the small sizes are made of on this machine. Two threads
//! bound to CPUs 0 and 1 pass a counter back and forth through two atomics on lines of
//! their own, busy-polling: half the round trip is one cache line's transfer between
//! the cores. Then the cost of a pair of `Instant::now` calls (a timed call reads the
//! clock twice).
//!
//! `delay [algo] [bytes]` (default `linear`, 8 B): 2 ranks, a tree barrier, then the
//! root busy-waits `d` ns before it starts its clock and broadcasts, for d = 0, 25, 50,
//! 100, 200: each rank's mean. While the receiver's time does not grow with `d`, the
//! root's path between the two barriers is not what the receiver waits for (its
//! message is there before the receiver looks): the receiver's own path is.
//!
//! `drain` (Linux, x86-64): 2 ranks bound to CPUs, a tree barrier, then a broadcast
//! of 8 B by `binomial`; before it starts its clock the root does nothing, or `mfence`,
//! or a locked add, or `pause` 1 or 3 times: each rank's mean, three runs each. If the
//! root's call is faster after a fence, what it waited for inside the call was its own
//! earlier stores (the barrier's release message) leaving its store buffer.
//!
//! `switches` (default 4 ranks, `linear`, 2,048 B, threads; Linux): 3,000 rounds of a
//! recursive-doubling barrier then an all-to-all, then 3,000 barriers alone; per rank,
//! the mean time of the all-to-all and of a lone barrier, and the context switches of
//! its thread per round and per barrier (`getrusage(RUSAGE_THREAD)`: a `sched_yield`
//! that hands the core over counts as involuntary). With `fibers`
//! ([`threads::Config::fibers`]) the ranks sharing a CPU switch in user space.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use hypercomm_rt::{threads, Algo, Barrier, Error, Op};

fn bcast(k: u32, algo: &str, bytes: usize) -> Result<(), Box<dyn std::error::Error>> {
    println!(
        "broadcast of {bytes} B by {algo} on {k} ranks: per-rank median µs (p10, p90; mean, p99)"
    );
    for barrier in ["allreduce-auto", "recursive-doubling", "tree"] {
        let times = threads::run(k, |comm| -> Result<Vec<f64>, Error> {
            let mut buf = vec![0u8; bytes];
            let mut t = Vec::with_capacity(3000);
            for _ in 0..3000 {
                match barrier {
                    "allreduce-auto" => {
                        let mut o = [0u8];
                        comm.all_reduce_into(&[0u8], &mut o, &Op::bit_or(), Algo::Auto)?;
                    }
                    "recursive-doubling" => comm.barrier_with(Barrier::RecursiveDoubling)?,
                    _ => comm.barrier_with(Barrier::Tree)?,
                }
                let start = Instant::now();
                comm.broadcast_into(0, &mut buf, Algo::Named(algo))?;
                t.push(start.elapsed().as_secs_f64() * 1e6);
            }
            Ok(t)
        })?;
        let row: Vec<String> = times
            .iter()
            .map(|t| {
                let mut s = t[500..].to_vec();
                s.sort_by(f64::total_cmp);
                let q = |f: f64| s[((s.len() - 1) as f64 * f) as usize];
                let mean = s.iter().sum::<f64>() / s.len() as f64;
                format!(
                    "{:.2} ({:.2}, {:.2}; mean {mean:.2}, p99 {:.2})",
                    q(0.5),
                    q(0.1),
                    q(0.9),
                    q(0.99)
                )
            })
            .collect();
        println!("{barrier:>18}: {}", row.join(" | "));
    }
    Ok(())
}

/// Bind the calling thread to `cpu` (Linux; elsewhere a no-op).
fn bind_to(cpu: usize) {
    #[cfg(target_os = "linux")]
    // SAFETY: `set` is a plain bit set, zeroed, then filled; the call reads it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
    #[cfg(not(target_os = "linux"))]
    let _ = cpu;
}

fn transfer() {
    #[repr(align(128))]
    struct Line(AtomicU64);
    let (ping, pong) = (Line(AtomicU64::new(0)), Line(AtomicU64::new(0)));
    let n = 2_000_000u64;
    for _ in 0..3 {
        let ns = std::thread::scope(|s| {
            s.spawn(|| {
                bind_to(1);
                for i in 1..=n {
                    while ping.0.load(Ordering::Acquire) != i {
                        std::hint::spin_loop();
                    }
                    pong.0.store(i, Ordering::Release);
                }
            });
            bind_to(0);
            let start = Instant::now();
            for i in 1..=n {
                ping.0.store(i, Ordering::Release);
                while pong.0.load(Ordering::Acquire) != i {
                    std::hint::spin_loop();
                }
            }
            start.elapsed().as_nanos() as f64 / n as f64 / 2.0
        });
        ping.0.store(0, Ordering::Relaxed);
        pong.0.store(0, Ordering::Relaxed);
        println!("one-way transfer of a line between CPUs 0 and 1: {ns:.1} ns");
    }
    let calls = 1_000_000;
    let start = Instant::now();
    let mut sum = 0u128;
    for _ in 0..calls {
        sum += std::hint::black_box(Instant::now()).elapsed().as_nanos();
    }
    let ns = start.elapsed().as_nanos() as f64 / calls as f64;
    println!("a pair of Instant::now calls: {ns:.1} ns (sum {sum})");
}

fn handoff() {
    let n = 200_000u64;
    let turn = AtomicU64::new(0);
    let start = Instant::now();
    std::thread::scope(|s| {
        for me in 0..2 {
            let turn = &turn;
            s.spawn(move || loop {
                let v = turn.load(Ordering::Acquire);
                if v >= n {
                    break;
                }
                if v % 2 == me {
                    turn.store(v + 1, Ordering::Release);
                } else {
                    std::thread::yield_now();
                }
            });
        }
    });
    let us = start.elapsed().as_secs_f64() * 1e6 / n as f64;
    println!("{us:.3} µs per hand-off between two threads polling with yield_now");
}

/// Busy-wait `ns` nanoseconds (a sleep would give the core away).
fn spin_for(ns: u64) {
    let start = Instant::now();
    while start.elapsed().as_nanos() < u128::from(ns) {
        std::hint::spin_loop();
    }
}

fn delay(algo: &str, bytes: usize) -> Result<(), Box<dyn std::error::Error>> {
    println!("broadcast of {bytes} B by {algo} on 2 ranks after a tree barrier, the root delayed: mean µs per rank");
    for d in [0u64, 25, 50, 100, 200] {
        let means = threads::run(2, |comm| -> Result<f64, Error> {
            let mut buf = vec![0u8; bytes];
            let (mut total, mut n) = (0.0, 0);
            for i in 0..20_000 {
                comm.barrier_with(Barrier::Tree)?;
                if comm.rank() == 0 && d > 0 {
                    spin_for(d);
                }
                let start = Instant::now();
                comm.broadcast_into(0, &mut buf, Algo::Named(algo))?;
                if i >= 5_000 {
                    total += start.elapsed().as_secs_f64() * 1e6;
                    n += 1;
                }
            }
            Ok(total / n as f64)
        })?;
        println!(
            "root delayed {d:>3} ns: root {:.3} | receiver {:.3}",
            means[0], means[1]
        );
    }
    Ok(())
}

/// What the root does between the barrier and its clock in `drain`.
#[derive(Clone, Copy, Debug)]
enum Before {
    Nothing,
    Mfence,
    LockedAdd,
    Pause(u32),
}

fn drain() -> Result<(), Box<dyn std::error::Error>> {
    println!(
        "broadcast of 8 B by binomial on 2 bound ranks after a tree barrier: mean µs per rank"
    );
    let modes = [
        Before::Nothing,
        Before::Mfence,
        Before::LockedAdd,
        Before::Pause(1),
        Before::Pause(3),
    ];
    for before in modes {
        for _ in 0..3 {
            let config = threads::Config::new(2).pin(true);
            let means = threads::run_with(&config, |comm| -> Result<f64, Error> {
                let mut buf = [0u8; 8];
                let counter = std::sync::atomic::AtomicU64::new(0);
                let (mut total, mut n) = (0.0, 0);
                for i in 0..30_000 {
                    comm.barrier_with(Barrier::Tree)?;
                    if comm.rank() == 0 {
                        match before {
                            Before::Nothing => {}
                            // SAFETY: `mfence` has no operands and cannot fault.
                            #[cfg(target_arch = "x86_64")]
                            Before::Mfence => unsafe { std::arch::x86_64::_mm_mfence() },
                            #[cfg(not(target_arch = "x86_64"))]
                            Before::Mfence => std::sync::atomic::fence(Ordering::SeqCst),
                            Before::LockedAdd => {
                                counter.fetch_add(1, Ordering::SeqCst);
                            }
                            Before::Pause(p) => (0..p).for_each(|_| std::hint::spin_loop()),
                        }
                    }
                    let start = Instant::now();
                    comm.broadcast_into(0, &mut buf, Algo::Named("binomial"))?;
                    if i >= 5_000 {
                        total += start.elapsed().as_secs_f64() * 1e6;
                        n += 1;
                    }
                }
                Ok(total / f64::from(n))
            })?;
            println!(
                "{:>12}: root {:.3} | receiver {:.3}",
                format!("{before:?}"),
                means[0],
                means[1]
            );
        }
    }
    Ok(())
}

/// Context switches of the calling thread so far (voluntary + involuntary).
#[cfg(target_os = "linux")]
fn switches_so_far() -> i64 {
    // SAFETY: `u` is a plain struct, zeroed, filled by the call.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut u) };
    u.ru_nvcsw + u.ru_nivcsw
}

#[cfg(not(target_os = "linux"))]
fn switches_so_far() -> i64 {
    0
}

fn switches(
    k: u32,
    algo: &str,
    bytes: usize,
    fibers: bool,
) -> Result<(), Box<dyn std::error::Error>> {
    println!(
        "{k} ranks ({}), all-to-all of {bytes} B by {algo} after a recursive-doubling barrier",
        if fibers { "fibers" } else { "threads" }
    );
    let rounds = 3000;
    let config = threads::Config::new(k).fibers(fibers);
    let per_rank = threads::run_with(&config, |comm| -> Result<[f64; 4], Error> {
        let n = comm.size() as usize;
        let send = vec![comm.rank() as u8; bytes * n];
        let mut recv = vec![0u8; bytes * n];
        let barrier = Barrier::RecursiveDoubling;
        for _ in 0..300 {
            comm.barrier_with(barrier)?;
            comm.all_to_all_into(&send, &mut recv, Algo::Named(algo))?;
        }
        let s0 = switches_so_far();
        let mut call = 0.0;
        for _ in 0..rounds {
            comm.barrier_with(barrier)?;
            let start = Instant::now();
            comm.all_to_all_into(&send, &mut recv, Algo::Named(algo))?;
            call += start.elapsed().as_secs_f64();
        }
        let s1 = switches_so_far();
        let start = Instant::now();
        for _ in 0..rounds {
            comm.barrier_with(barrier)?;
        }
        let lone = start.elapsed().as_secs_f64();
        let s2 = switches_so_far();
        let per = |x: f64| x / f64::from(rounds);
        Ok([
            per(call) * 1e6,
            per((s1 - s0) as f64),
            per(lone) * 1e6,
            per((s2 - s1) as f64),
        ])
    })?;
    for (r, [call, sw, lone, sw_lone]) in per_rank.iter().enumerate() {
        println!("rank {r}: all-to-all {call:.2} µs, {sw:.2} switches per round | barrier alone {lone:.2} µs, {sw_lone:.2} switches per barrier");
    }
    Ok(())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let a: Vec<String> = std::env::args().skip(1).collect();
    match a.first().map(String::as_str) {
        Some("handoff") => handoff(),
        Some("transfer") => transfer(),
        Some("drain") => drain()?,
        Some("bcast") | None => bcast(
            a.get(1).map_or(Ok(4), |s| s.parse())?,
            a.get(2).map_or("binomial", String::as_str),
            a.get(3).map_or(Ok(8), |s| s.parse())?,
        )?,
        Some("delay") => delay(
            a.get(1).map_or("linear", String::as_str),
            a.get(2).map_or(Ok(8), |s| s.parse())?,
        )?,
        Some("switches") => switches(
            a.get(1).map_or(Ok(4), |s| s.parse())?,
            a.get(2).map_or("linear", String::as_str),
            a.get(3).map_or(Ok(2048), |s| s.parse())?,
            match a.get(4).map(String::as_str) {
                None | Some("threads") => false,
                Some("fibers") => true,
                Some(other) => return Err(format!("{other}: valid: threads, fibers").into()),
            },
        )?,
        Some(other) => {
            return Err(format!(
                "unknown mode {other}; valid: bcast, handoff, transfer, delay, drain, switches"
            )
            .into())
        }
    }
    Ok(())
}
