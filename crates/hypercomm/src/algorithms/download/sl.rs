//! Sequential Loading (SL): the host sends each PE its block, one PE a step.
//!
//! Reference: Gichev 1992 (seed 003), §3.1, eq. (3.1): "The host processor sends its
//! own portion of N/k elements to any of PEs", T_d = k[β_h + (N/k)τ_h] = kβ_h + Nτ_h,
//! with k = 2^n PEs and N = km elements in all (m = `--len`, the block of one PE).
//!
//! Step j (j = 0..k − 1) sends block j to PE j over its host link: the [`Plan`] of k
//! pieces of dimension 0. The cube's links are never used.
//!
//! Cost: k steps of β_h + mτ_h, T = kβ_h + Nτ_h exactly, under every port and duplex
//! rule with rounds timing (one transfer per node and step). Volume N.
//!
//! Constraints: `hypercube:N+host`.

use crate::algorithms::download::plan::{
    async_formula, dims_of, is_download, rounds_time, setup, Piece, Plan,
};
use crate::algorithms::{Formula, Params};
use crate::cost::model::Timing;
use crate::error::Error;
use crate::schedule::Schedule;
use crate::verify::Problem;

/// The pieces: PE j alone in step j.
pub fn pieces(n: u32) -> Vec<Piece> {
    (0..1u32 << n).map(|base| Piece { base, dim: 0 }).collect()
}

/// Build the schedule.
pub fn build(problem: &Problem<'_>, _params: &Params, n: u32) -> Result<Box<dyn Schedule>, Error> {
    is_download(problem, "sl")?;
    Ok(Box::new(Plan::new(n, problem.len, pieces(n))))
}

/// kβ_h + Nτ_h (eq. 3.1), exact with rounds timing under every port and duplex rule.
pub fn formulas(problem: &Problem<'_>, params: &Params) -> Vec<Formula> {
    let Ok(n) = setup(problem, "sl") else {
        return vec![];
    };
    if params.model.timing == Timing::Async {
        let dims = dims_of(&pieces(n));
        return vec![async_formula(
            &dims,
            problem.len,
            &params.model,
            "Gichev 1992, §3.1",
        )];
    }
    let (m, host) = (problem.len, params.model.host);
    let k = 1u64 << n;
    let value = if m == 0 {
        0.0
    } else {
        k as f64 * host.beta + (k * m) as f64 * host.tau
    };
    debug_assert!((value - rounds_time(&vec![0; k as usize], m, &params.model)).abs() < 1e-6);
    vec![Formula::exact(
        "kβ_h + Nτ_h, k = 2^n, N = km",
        "Gichev 1992, §3.1, eq. (3.1)",
        value,
    )]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::algorithms::download::plan::tests::{check_plan, models};

    #[test]
    fn matches_eq_3_1_on_hypercube_0_to_6() {
        for n in 0..=6 {
            for model in models() {
                for m in [0u64, 1, 7, 100] {
                    let t = check_plan(n, m, pieces(n), &model);
                    let k = (1u64 << n) as f64;
                    let want = if m == 0 {
                        0.0
                    } else {
                        k * model.host.beta + k * m as f64 * model.host.tau
                    };
                    assert!(
                        (t - want).abs() <= 1e-9 * want.max(1.0),
                        "n = {n}: {t} ≠ {want}"
                    );
                }
            }
        }
    }
}
