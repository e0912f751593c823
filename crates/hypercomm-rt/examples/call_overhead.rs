//! The per-call software path of a small collective, without the barrier around it:
//! rank 0 broadcasts `calls` messages back to back to rank 1, whose receives find
//! them waiting (the ring lets the root run up to eight messages ahead). Each rank's
//! time per call is then its own path: posting and completing one send (the root),
//! finding and copying one message (the receiver), plus the choice of algorithm and
//! plan that every call makes.
//!
//! ```text
//! cargo run --release -p hypercomm-rt --example call_overhead -- [algo] [bytes] [calls] [reps] [ranks] [plain|persistent]
//! ```
//!
//! With `persistent` each call is the `run` of a broadcast planned once
//! (`plan_broadcast`): no choice of algorithm, no plan look-up.
//!
//! Defaults: `linear`, 8 B, 1,000,000 calls, 5 repetitions, 2 ranks; prints each
//! repetition's ns per call on the root and on the receiver, then the medians. With
//! `ranks` 1 the call moves nothing: what is left is the fixed cost of a call (checks,
//! plan look-up, executor), the part of the path no message can hide.

use std::time::Instant;

use hypercomm_rt::{threads, Algo, Error};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let a: Vec<String> = std::env::args().skip(1).collect();
    let algo = a.first().map_or("linear", String::as_str).to_string();
    let bytes: usize = a.get(1).map_or(Ok(8), |s| s.parse())?;
    let calls: u32 = a.get(2).map_or(Ok(1_000_000), |s| s.parse())?;
    let reps: usize = a.get(3).map_or(Ok(5), |s| s.parse())?;
    let ranks: u32 = a.get(4).map_or(Ok(2), |s| s.parse())?;
    let persistent = match a.get(5).map_or("plain", String::as_str) {
        "plain" => false,
        "persistent" => true,
        other => return Err(format!("`{other}`: valid: plain, persistent").into()),
    };
    if !(1..=2).contains(&ranks) {
        return Err(format!("ranks must be 1 or 2, not {ranks}").into());
    }
    let form = if persistent { "persistent" } else { "plain" };
    println!(
        "{form} broadcast of {bytes} B by {algo} on {ranks} ranks, {calls} calls back to back: ns per call"
    );
    let (mut root, mut leaf) = (Vec::new(), Vec::new());
    for rep in 0..reps {
        let ns = threads::run(ranks, |comm| -> Result<f64, Error> {
            let mut buf = vec![1u8; bytes];
            let algo = Algo::Named(&algo);
            let plan = comm.plan_broadcast::<u8>(0, bytes, algo)?;
            // The root sends `data` (and gets a copy in `buf`); the others only receive.
            let data = if comm.rank() == 0 {
                vec![1u8; bytes]
            } else {
                Vec::new()
            };
            let mut call = |comm: &mut hypercomm_rt::Comm<_>| {
                if persistent {
                    plan.run(comm, &data, &mut buf)
                } else {
                    comm.broadcast_into(0, &mut buf, algo)
                }
            };
            for _ in 0..1000 {
                call(comm)?;
            }
            comm.barrier()?;
            let start = Instant::now();
            for _ in 0..calls {
                call(comm)?;
            }
            Ok(start.elapsed().as_secs_f64() * 1e9 / calls as f64)
        })?;
        let receiver = ns.get(1).copied().unwrap_or(f64::NAN);
        println!("rep {rep}: root {:.1}  receiver {receiver:.1}", ns[0]);
        root.push(ns[0]);
        leaf.push(receiver);
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    println!(
        "median: root {:.1}  receiver {:.1}",
        median(&mut root),
        median(&mut leaf)
    );
    Ok(())
}
