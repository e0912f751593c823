//! Every collective once, on k ranks, with `Algo::Auto`: prints the algorithm each ran
//! and checks the result (rank r contributes the value r + 1).
//!
//! ```text
//! cargo run -p hypercomm-rt --example collectives -- [ranks]
//! ```

use hypercomm_rt::{threads, Algo, Error, Op, Ran};

const M: usize = 3;

/// Run every collective on one rank; returns what ran, or the first wrong result.
fn tour(comm: &mut hypercomm_rt::Comm<threads::Threads<'_>>) -> Result<Vec<Ran>, String> {
    let (k, r) = (comm.size() as u64, comm.rank() as u64);
    let (auto, sum) = (Algo::Auto, Op::<u64>::sum());
    let mine = [r + 1; M];
    let total = k * (k + 1) / 2;
    let mut ran = Vec::new();
    let mut check = |what: &str, got: Result<Ran, Error>, ok: bool| {
        let got = got.map_err(|e| format!("{what}: {e}"))?;
        ran.push(got);
        ok.then_some(())
            .ok_or(format!("{what}: wrong result on rank {r}"))
    };

    let mut buf = if r == 0 { [42; M] } else { [0; M] };
    let got = comm.broadcast_into(0, &mut buf, auto);
    check("broadcast", got, buf == [42; M])?;

    let mut all = vec![0u64; k as usize * M];
    let got = comm.all_gather_into(&mine, &mut all, auto);
    check(
        "all-gather",
        got,
        all.chunks(M).zip(1..).all(|(b, i)| b == [i; M]),
    )?;

    let mut out = [0u64; M];
    let got = comm.all_reduce_into(&mine, &mut out, &sum, auto);
    check("all-reduce", got, out == [total; M])?;

    let got = comm.scan_into(&mine, &mut out, &sum, auto);
    check("scan", got, out == [(r + 1) * (r + 2) / 2; M])?;

    let mut one = [0u64; M];
    let root_buf = (r == k - 1).then_some(&mut one[..]);
    let got = comm.reduce_into(k as u32 - 1, &mine, root_buf, &sum, auto);
    check("reduce", got, r != k - 1 || one == [total; M])?;

    let send: Vec<u64> = (0..k * M as u64).map(|i| 100 * r + i / M as u64).collect();
    let got = comm.all_to_all_into(&send, &mut all, auto);
    let want = |i: u64| 100 * i + r;
    check(
        "all-to-all",
        got,
        all.chunks(M).zip(0..).all(|(b, i)| b == [want(i); M]),
    )?;
    Ok(ran)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let ranks: u32 = std::env::args().nth(1).map_or(Ok(8), |s| s.parse())?;
    let ran = threads::run(ranks, tour)?;
    for r in &ran[0] {
        println!(
            "{:<12} {:<20} {} steps",
            r.op.to_string(),
            r.algorithm,
            r.steps
        );
    }
    println!("{ranks} ranks: every result checked");
    Ok(())
}
