//! Data Scattering (DS): the host sends all N elements to PE 0, which scatters them
//! over the cube, halving what it holds at each step.
//!
//! Reference: Gichev 1992 (seed 003), §3.3, eqs. (3.3)–(3.4): T_t = β_h + Nτ_h to PE
//! 0^n; "at the i-th step, i = 1, 2, …, n, all the PEs whose binary labels are of form
//! 0^{n−i+1}a … split the data, received at the previous step, into two halves and
//! then send one of these halves to their neighbours with binary labels 0^{n−i}1a";
//! T_d = T_t + T_s = β_h + Nτ_h + nβ_n + (N/k)(k − 1)τ_n.
//!
//! The [`Plan`] of one piece, the whole cube: step 0 the host's message, step i
//! (i = 1..n) crosses dimension n − i (the paper's 0^{n−i}1a), N/2^i elements a
//! message.
//!
//! Cost: n + 1 steps; T = β_h + Nτ_h + nβ + (k − 1)mτ exactly (N = km), under every port
//! and duplex rule with rounds timing: no node makes two transfers in one step.
//! Volume N over the host link plus n·2^{n−1}·m over the cube.
//!
//! Constraints: `hypercube:N+host`.

use crate::algorithms::download::plan::{
    async_formula, is_download, rounds_time, setup, Piece, Plan,
};
use crate::algorithms::{Formula, Params};
use crate::cost::model::Timing;
use crate::error::Error;
use crate::schedule::Schedule;
use crate::verify::Problem;

/// The one piece: the whole n-cube.
pub fn pieces(n: u32) -> Vec<Piece> {
    vec![Piece { base: 0, dim: n }]
}

/// Build the schedule.
pub fn build(problem: &Problem<'_>, _params: &Params, n: u32) -> Result<Box<dyn Schedule>, Error> {
    is_download(problem, "ds")?;
    Ok(Box::new(Plan::new(n, problem.len, pieces(n))))
}

/// The value of eq. (3.4) with host links β_h, τ_h and cube links β, τ.
pub fn time(n: u32, m: u64, model: &crate::cost::model::Model) -> f64 {
    if m == 0 {
        return 0.0;
    }
    let k = 1u64 << n;
    let (h, c) = (model.host, model.net);
    h.beta + (k * m) as f64 * h.tau + n as f64 * c.beta + ((k - 1) * m) as f64 * c.tau
}

/// β_h + Nτ_h + nβ + (k − 1)mτ (eq. 3.4), exact with rounds timing.
pub fn formulas(problem: &Problem<'_>, params: &Params) -> Vec<Formula> {
    let Ok(n) = setup(problem, "ds") else {
        return vec![];
    };
    if params.model.timing == Timing::Async {
        return vec![async_formula(
            &[n],
            problem.len,
            &params.model,
            "Gichev 1992, §3.3",
        )];
    }
    let value = time(n, problem.len, &params.model);
    debug_assert!((value - rounds_time(&[n], problem.len, &params.model)).abs() < 1e-6);
    vec![Formula::exact(
        "β_h + Nτ_h + nβ + (N/k)(k − 1)τ",
        "Gichev 1992, §3.3, eq. (3.4)",
        value,
    )]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::algorithms::download::plan::tests::{check_plan, models};

    #[test]
    fn matches_eq_3_4_on_hypercube_0_to_6() {
        for n in 0..=6 {
            for model in models() {
                for m in [0u64, 1, 7, 100] {
                    let t = check_plan(n, m, pieces(n), &model);
                    let want = time(n, m, &model);
                    assert!(
                        (t - want).abs() <= 1e-9 * want.max(1.0),
                        "n = {n}: {t} ≠ {want}"
                    );
                }
            }
        }
    }

    /// The paper's conclusion (§6) that DS beats SL holds only for blocks below
    /// (k − 1 − n)β/((k − 1)τ) elements (docs/errata.md, E21).
    #[test]
    fn ds_beats_sl_only_below_the_crossover() {
        let model = crate::cost::model::Model::new(6500.0, 8.0).unwrap();
        for n in 1..=8u32 {
            let k = 1u64 << n;
            let sl = |m: u64| k as f64 * (6500.0 + m as f64 * 8.0);
            let cross = (k - 1 - n as u64) as f64 * 6500.0 / ((k - 1) as f64 * 8.0);
            for m in 1..=2000u64 {
                let ds_faster = time(n, m, &model) < sl(m);
                assert_eq!(ds_faster, (m as f64) < cross, "n = {n}, m = {m}");
            }
        }
        let cross = |n: u64| ((1 << n) - 1 - n) as f64 * 812.5 / ((1 << n) - 1) as f64;
        assert_eq!(
            [cross(3), cross(4), cross(5)].map(|c| c.floor()),
            [464.0, 595.0, 681.0]
        );
    }
}
