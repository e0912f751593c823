//! Bandwidth of the threads backend against `memcpy`, for a few collectives.
//!
//! ```text
//! cargo run --release -p hypercomm-rt --example bandwidth -- [ranks] [bytes] [algo]
//! ```
//!
//! Prints, per collective, the algorithm `Auto` (or the named one) ran, the mean time
//! per call, and the bytes each rank received per second, next to one thread's `memcpy`
//! bandwidth on the same size: a single-copy transport approaches it.

use std::time::{Duration, Instant};

use hypercomm_rt::{threads, Algo, Error, Op, Ran};

/// Mean time of `f` over `reps` calls after one warm-up call (every rank must make
/// the same number of calls, so the count cannot depend on a rank's own clock).
fn time(reps: u32, mut f: impl FnMut() -> Result<Ran, Error>) -> Result<(Ran, Duration), Error> {
    let ran = f()?;
    let start = Instant::now();
    for _ in 0..reps {
        f()?;
    }
    Ok((ran, start.elapsed() / reps))
}

fn memcpy_bandwidth(bytes: usize) -> f64 {
    let src = vec![1u8; bytes];
    let mut dst = vec![0u8; bytes];
    let start = Instant::now();
    let mut reps = 0u32;
    while start.elapsed() < Duration::from_millis(200) {
        dst.copy_from_slice(std::hint::black_box(&src));
        std::hint::black_box(&mut dst);
        reps += 1;
    }
    bytes as f64 * f64::from(reps) / start.elapsed().as_secs_f64()
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let ranks: u32 = args.first().map_or(Ok(4), |s| s.parse())?;
    let bytes: usize = args.get(1).map_or(Ok(8 << 20), |s| s.parse())?;
    let algo_name = args.get(2).cloned().unwrap_or_else(|| "auto".into());
    let n = bytes / 8;
    let reps = (1e9 / bytes.max(1) as f64).clamp(5.0, 2000.0) as u32;
    println!(
        "{ranks} ranks, {bytes} bytes, memcpy {:.2} GB/s",
        memcpy_bandwidth(bytes) / 1e9
    );
    let results = threads::run(ranks, |comm| {
        let algo = Algo::from(algo_name.as_str());
        let k = comm.size() as usize;
        let send = vec![1u64; n];
        let mut recv = vec![0u64; n];
        let mut big = vec![0u64; n - n % k];
        let big_send = vec![1u64; n - n % k];
        let mut rows = Vec::new();
        rows.push(time(reps, || comm.broadcast_into(0, &mut recv, algo))?);
        rows.push(time(reps, || {
            comm.all_reduce_into(&send, &mut recv, &Op::sum(), algo)
        })?);
        rows.push(time(reps, || {
            comm.all_gather_into(&send[..n / k], &mut big, algo)
        })?);
        rows.push(time(reps, || {
            comm.all_to_all_into(&big_send, &mut big, algo)
        })?);
        Ok::<_, Error>(rows)
    })?;
    for (ran, t) in &results[0] {
        let gbps = bytes as f64 / t.as_secs_f64() / 1e9;
        println!(
            "{:<16} {:<20} {:>10.1} µs  {:>6.2} GB/s per rank",
            ran.op.to_string(),
            ran.algorithm,
            t.as_secs_f64() * 1e6,
            gbps
        );
    }
    Ok(())
}
