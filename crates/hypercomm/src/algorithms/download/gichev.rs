//! Gichev's download: step i sends N/2^i elements to the root of an
//! (n − i)-dimensional subcube while the subcubes loaded before run Data Scattering;
//! the last PE gets its block in step n + 1. The host is never idle.
//!
//! Reference: Gichev 1992 (seed 003), §5, eqs. (5.1)–(5.8). Step 1 sends N/2 to a PE of
//! the first (n − 1)-subcube, T_1 = β_h + (N/2)τ_h (5.1); in step 2 the first subcube
//! runs DS's first step, T'_2 = β_n + (N/4)τ_n (5.2), while the host sends N/4 to the
//! first (n − 2)-subcube of the second half, T''_2 = β_h + (N/4)τ_h (5.3); "the
//! consecutive steps, up to the n-th one, are performed analog", and in step n + 1 the
//! host sends the last N/2^n to the last PE. With β_h = β_n = β, τ_h = τ_n = τ (2.3),
//! T_i = β + (N/2^i)τ (5.6), T_{n+1} = T_n (5.7), T_d = (n + 1)β + Nτ (5.8).
//!
//! The [`Plan`]: piece i (i = 1..n) is the subcube of PEs k − 2^{n−i+1} .. k − 2^{n−i}
//! (labels 1^{i−1}0a), sent in step i; piece n + 1 is PE k − 1. In step i every
//! earlier piece sends messages of 2^{n−i} blocks, as large as the host's.
//!
//! Cost (rounds, unequal parameters: the paper assumes (2.3) and says that only then
//! T'_2 = T''_2 "can be done simultaneously"; with unequal ones a lock-step round
//! lasts as long as its slower part):
//!
//! T = β_h + 2^{n−1}mτ_h + Σ_{i=2}^{n} max(β_h + 2^{n−i}mτ_h, β + 2^{n−i}mτ) + β_h + mτ_h
//!
//! for n ≥ 1 (β_h + mτ_h for n = 0), exact under every port and duplex rule (one
//! transfer per node and step); with equal parameters it is (n + 1)β + Nτ, eq. (5.8).
//!
//! Constraints: `hypercube:N+host`.

use crate::algorithms::download::plan::{
    async_formula, dims_of, equal_links, is_download, rounds_time, setup, Piece, Plan,
};
use crate::algorithms::{Formula, Params};
use crate::cost::model::{Model, Timing};
use crate::error::Error;
use crate::schedule::Schedule;
use crate::verify::Problem;

/// The pieces: the (n − i)-subcubes 1^{i−1}0a for i = 1..n, then PE k − 1.
pub fn pieces(n: u32) -> Vec<Piece> {
    let k = 1u32 << n;
    let mut v: Vec<Piece> = (1..=n)
        .map(|i| Piece {
            base: k - (1 << (n - i + 1)),
            dim: n - i,
        })
        .collect();
    v.push(Piece {
        base: k - 1,
        dim: 0,
    });
    v
}

/// Build the schedule.
pub fn build(problem: &Problem<'_>, _params: &Params, n: u32) -> Result<Box<dyn Schedule>, Error> {
    is_download(problem, "gichev")?;
    Ok(Box::new(Plan::new(n, problem.len, pieces(n))))
}

/// The closed form above.
pub fn time(n: u32, m: u64, model: &Model) -> f64 {
    if m == 0 {
        return 0.0;
    }
    let (h, c) = (model.host, model.net);
    let b = |i: u32| ((1u64 << (n - i)) * m) as f64;
    let last = h.transfer(m);
    if n == 0 {
        return last;
    }
    let first = h.beta + b(1) * h.tau;
    let middle: f64 = (2..=n)
        .map(|i| (h.beta + b(i) * h.tau).max(c.beta + b(i) * c.tau))
        .sum();
    first + middle + last
}

/// The closed form, exact with rounds timing; (n + 1)β + Nτ (5.8) as well when the
/// host's links cost what the cube's do.
pub fn formulas(problem: &Problem<'_>, params: &Params) -> Vec<Formula> {
    let Ok(n) = setup(problem, "gichev") else {
        return vec![];
    };
    let model = &params.model;
    let m = problem.len;
    if model.timing == Timing::Async {
        let dims = dims_of(&pieces(n));
        return vec![async_formula(&dims, m, model, "Gichev 1992, §5")];
    }
    let value = time(n, m, model);
    debug_assert!((value - rounds_time(&Plan::new(n, m, pieces(n)).dims(), m, model)).abs() < 1e-6);
    let mut v = vec![Formula::exact(
        "β_h + (N/2)τ_h + Σ_{i=2}^{n} max(β_h + (N/2^i)τ_h, β + (N/2^i)τ) + β_h + (N/2^n)τ_h",
        "Gichev 1992, §5, eqs. (5.1)–(5.7), one lock-step round per step",
        value,
    )];
    if equal_links(model) {
        let k = 1u64 << n;
        let paper = if m == 0 {
            0.0
        } else {
            (n + 1) as f64 * model.beta() + (k * m) as f64 * model.tau()
        };
        v.push(Formula::exact(
            "(n + 1)β + Nτ (β_h = β, τ_h = τ)",
            "Gichev 1992, §5, eq. (5.8)",
            paper,
        ));
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::algorithms::download::plan::tests::{check_plan, models};

    #[test]
    fn matches_the_closed_form_and_eq_5_8_on_hypercube_0_to_6() {
        for n in 0..=6 {
            for model in models() {
                for m in [0u64, 1, 7, 100] {
                    let t = check_plan(n, m, pieces(n), &model);
                    let want = time(n, m, &model);
                    assert!(
                        (t - want).abs() <= 1e-9 * want.max(1.0),
                        "n = {n}: {t} ≠ {want}"
                    );
                    if model.host == model.net && m > 0 {
                        let k = (1u64 << n) as f64;
                        let paper = (n + 1) as f64 * model.beta() + k * m as f64 * model.tau();
                        assert!((t - paper).abs() <= 1e-9 * paper, "n = {n}: {t} ≠ {paper}");
                    }
                }
            }
        }
    }

    /// The host sends N/2^i in step i and is busy in every step but none after n + 1.
    #[test]
    fn the_host_sends_halves() {
        let dims: Vec<u32> = pieces(4).iter().map(|p| p.dim).collect();
        assert_eq!(dims, [3, 2, 1, 0, 0]);
        let bases: Vec<u32> = pieces(4).iter().map(|p| p.base).collect();
        assert_eq!(bases, [0, 8, 12, 14, 15]);
    }
}
