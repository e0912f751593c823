//! SSA repaired: Data Scattering in one x-dimensional subcube and Sequential Loading of
//! every other PE (not of a second subcube, which cannot hold them all), with the x
//! that minimises the time.
//!
//! Reference: Gichev 1992 (seed 003), §4 (the flaw of Prasad & Murthy's SSA: an n-cube
//! is no union of an x- and an (n − x)-subcube); the repair is ours (docs/errata.md).
//! It keeps SSA's idea, the host loading PEs while a subcube scatters: step 0 sends the
//! 2^x blocks of PEs 0 .. 2^x to PE 0, which runs DS over them in steps 1..x, while
//! steps 1..k − 2^x load PEs 2^x .. k one by one. x = 0 is SL and x = n is DS, so with
//! x chosen to minimise T(x) it is never slower than either.
//!
//! Cost (rounds, exact under every port and duplex rule; L = k − 2^x):
//! T(x) = β_h + 2^x mτ_h + Σ_{s=1}^{max(x, L)} max([s ≤ L](β_h + mτ_h), [s ≤ x](β + 2^{x−s}mτ)),
//! T = min_{0 ≤ x ≤ n} T(x), the smallest such x on ties.
//!
//! Constraints: `hypercube:N+host`.

use crate::algorithms::download::plan::{
    async_formula, dims_of, is_download, rounds_time, setup, Piece, Plan,
};
use crate::algorithms::{Formula, Params};
use crate::cost::model::{Model, Timing};
use crate::error::Error;
use crate::schedule::Schedule;
use crate::verify::Problem;

/// The pieces for a given x.
pub fn pieces_with(n: u32, x: u32) -> Vec<Piece> {
    let mut v = vec![Piece { base: 0, dim: x }];
    v.extend((1u32 << x..1 << n).map(|base| Piece { base, dim: 0 }));
    v
}

/// T(x), the closed form above.
pub fn time_with(n: u32, x: u32, m: u64, model: &Model) -> f64 {
    if m == 0 {
        return 0.0;
    }
    let (h, c) = (model.host, model.net);
    let rest = (1u64 << n) - (1u64 << x);
    let steps = rest.max(x as u64);
    let tail: f64 = (1..=steps)
        .map(|s| {
            let host = if s <= rest { h.transfer(m) } else { 0.0 };
            let cube = if s <= x as u64 {
                c.transfer((1u64 << (x as u64 - s)) * m)
            } else {
                0.0
            };
            host.max(cube)
        })
        .sum();
    h.transfer((1u64 << x) * m) + tail
}

/// The x that minimises T(x) (the smallest on ties).
pub fn best_x(n: u32, m: u64, model: &Model) -> u32 {
    (0..=n)
        .map(|x| (x, time_with(n, x, m, model)))
        .fold((0, f64::INFINITY), |b, c| if c.1 < b.1 { c } else { b })
        .0
}

/// Build the schedule.
pub fn build(problem: &Problem<'_>, params: &Params, n: u32) -> Result<Box<dyn Schedule>, Error> {
    is_download(problem, "ssa-repaired")?;
    let x = best_x(n, problem.len, &params.model);
    Ok(Box::new(Plan::new(n, problem.len, pieces_with(n, x))))
}

/// min_x T(x), exact with rounds timing.
pub fn formulas(problem: &Problem<'_>, params: &Params) -> Vec<Formula> {
    let Ok(n) = setup(problem, "ssa-repaired") else {
        return vec![];
    };
    let (m, model) = (problem.len, &params.model);
    let x = best_x(n, m, model);
    if model.timing == Timing::Async {
        let dims = dims_of(&pieces_with(n, x));
        return vec![async_formula(
            &dims,
            m,
            model,
            "Gichev 1992, §4; repair ours",
        )];
    }
    let value = time_with(n, x, m, model);
    debug_assert!(
        (value - rounds_time(&Plan::new(n, m, pieces_with(n, x)).dims(), m, model)).abs() < 1e-6
    );
    vec![Formula::exact(
        format!(
            "min_x [β_h + 2^x mτ_h + Σ_{{s=1}}^{{max(x, k − 2^x)}} max([s ≤ k − 2^x](β_h + mτ_h), [s ≤ x](β + 2^{{x−s}}mτ))], x = {x}"
        ),
        "Gichev 1992, §4 (SSA's flaw); the repair is ours (docs/errata.md)",
        value,
    )]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::algorithms::download::plan::tests::{check_plan, models};
    use crate::algorithms::download::{ds, sl};

    #[test]
    fn every_x_verifies_and_matches_and_the_best_beats_sl_and_ds() {
        for n in 0..=6 {
            for model in models() {
                for m in [0u64, 1, 7, 100] {
                    for x in 0..=n {
                        let t = check_plan(n, m, pieces_with(n, x), &model);
                        let want = time_with(n, x, m, &model);
                        assert!(
                            (t - want).abs() <= 1e-9 * want.max(1.0),
                            "n = {n} x = {x}: {t} ≠ {want}"
                        );
                    }
                    let best = time_with(n, best_x(n, m, &model), m, &model);
                    let sl = rounds_time(
                        &sl::pieces(n).iter().map(|p| p.dim).collect::<Vec<_>>(),
                        m,
                        &model,
                    );
                    assert!(best <= sl + 1e-9 && best <= ds::time(n, m, &model) + 1e-9);
                }
            }
        }
    }
}
