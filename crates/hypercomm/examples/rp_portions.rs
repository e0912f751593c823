//! RP's portions (Gichev 1992, §3.2; the sizing rule of `download::rp::portions`) as a
//! `--counts` file for `hypercomm simulate --op download --algo rp`:
//!
//! `cargo run -q -p hypercomm --example rp_portions -- N n BETA_H TAU_H C > rp.json`
//!
//! prints the whole portions of N elements over the 2^n PEs of `hypercube:n+host` for
//! an application computing C per element, then the host's 0, as a JSON list.
use hypercomm::algorithms::download::rp::integer_portions;

fn main() {
    let a: Vec<String> = std::env::args().skip(1).collect();
    let parsed: Option<(u64, u32, f64, f64, f64)> = (|| {
        Some((
            a.first()?.parse().ok()?,
            a.get(1)?.parse().ok().filter(|&n: &u32| n <= 20)?,
            a.get(2)?.parse().ok()?,
            a.get(3)?.parse().ok()?,
            a.get(4)?.parse().ok()?,
        ))
    })();
    let Some((total, n, beta_h, tau_h, c)) = parsed else {
        eprintln!("usage: rp_portions N n BETA_H TAU_H C (N elements, n ≤ 20, times ≥ 0)");
        std::process::exit(2);
    };
    let k = 1usize << n;
    let mut counts = integer_portions(total, k, beta_h, tau_h, c);
    counts.resize(k + 1, 0);
    println!(
        "{}",
        serde_json::to_string(&counts).expect("a list of numbers")
    );
}
