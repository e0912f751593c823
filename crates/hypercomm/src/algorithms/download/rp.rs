//! Ratioed Partitioning (RP): the host loads the PEs in turn, as SL does, with portions
//! sized so that every PE finishes its application program at the same time.
//!
//! Reference: Gichev 1992 (seed 003), §3.2, eq. (3.2): "The initial data array is
//! divided among the PEs so that all the PEs complete their own application programs
//! for one and the same time … T_d = kβ_h + Nτ_h, i.e. the same as in the previous
//! case"; its gain is T_l, the last PE's computing time, which is smaller.
//!
//! Neither Gichev nor the part of Prasad & Murthy (his \[3\]) he quotes gives the sizing rule. Ours
//! ([`portions`]): with the application computing c per element and PE j loaded j-th,
//! PE j finishes at L_j + s_j c, L_j = Σ_{i ≤ j}(β_h + s_i τ_h); equal finishing times
//! give L_{j+1} − L_j = (s_j − s_{j+1})c, so
//! s_{j+1} = (s_j c − β_h)/(c + τ_h), with s_0 fixed by Σ s_j = N. It is the only rule
//! under which no PE waits for another at the end (every finishing time equal), which
//! is what Prasad & Murthy ask for; when N is too small some s_j would be ≤ 0, and RP then uses
//! fewer PEs ("when N is sufficiently large, so that all the PEs … are used").
//!
//! The `download` collective fixes every PE's block at m elements (`--len`), so the
//! portions cannot be unequal there: the schedule is SL's (k pieces of dimension 0)
//! and its time is eq. (3.2), kβ_h + Nτ_h, exactly as the paper says. [`portions`]
//! gives the unequal split for a caller that owns the partition of its work (and the
//! docs' table of T_d + T_l).
//!
//! Constraints: `hypercube:N+host`.

use crate::algorithms::download::plan::{setup, Plan};
use crate::algorithms::download::sl;
use crate::algorithms::{Formula, Params};
use crate::cost::model::Timing;
use crate::error::Error;
use crate::schedule::Schedule;
use crate::verify::Problem;

/// RP's portions of an array of `total` elements over at most `k` PEs loaded in turn
/// over host links of start-up `beta_h` and `tau_h` per element, the application
/// computing `c` per element: s_{j+1} = (s_j c − β_h)/(c + τ_h), Σ s_j = total, as
/// many PEs as keep every portion positive. Real numbers (the rule's fixed point);
/// empty when `total` is 0 or `k` is 0.
pub fn portions(total: f64, k: usize, beta_h: f64, tau_h: f64, c: f64) -> Vec<f64> {
    if total <= 0.0 || k == 0 {
        return vec![];
    }
    // s_j = a_j s_0 − b_j: a_{j+1} = ρ a_j, b_{j+1} = ρ b_j + β_h/(c + τ_h), ρ = c/(c + τ_h).
    let (rho, step) = (c / (c + tau_h), beta_h / (c + tau_h));
    for used in (1..=k).rev() {
        let (mut a, mut b) = (1.0f64, 0.0f64);
        let (mut sa, mut sb) = (0.0, 0.0);
        let mut coef = Vec::with_capacity(used);
        for _ in 0..used {
            coef.push((a, b));
            sa += a;
            sb += b;
            (a, b) = (rho * a, rho * b + step);
        }
        let s0 = (total + sb) / sa;
        let s: Vec<f64> = coef.iter().map(|&(a, b)| a * s0 - b).collect();
        if s.iter().all(|&x| x > 0.0) {
            return s;
        }
    }
    vec![total]
}

/// Build the schedule: SL's (the collective's blocks are equal).
pub fn build(problem: &Problem<'_>, _params: &Params) -> Result<Box<dyn Schedule>, Error> {
    let n = setup(problem, "rp")?;
    Ok(Box::new(Plan::new(n, problem.len, sl::pieces(n))))
}

/// kβ_h + Nτ_h (eq. 3.2), exact with rounds timing.
pub fn formulas(problem: &Problem<'_>, params: &Params) -> Vec<Formula> {
    if setup(problem, "rp").is_err() {
        return vec![];
    }
    let mut v = sl::formulas(problem, params);
    if params.model.timing == Timing::Async {
        return v;
    }
    for f in &mut v {
        f.expr = "kβ_h + Nτ_h (equal blocks: RP's portions are the collective's)".into();
        f.reference = "Gichev 1992, §3.2, eq. (3.2)";
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The portions add up to N and every PE finishes at the same time.
    #[test]
    fn portions_finish_together() {
        for (total, k, bh, th, c) in [
            (65536.0 * 8.0, 8, 6500.0, 8.0, 100.0),
            (1000.0, 16, 10.0, 1.0, 5.0),
            (50.0, 32, 10.0, 1.0, 5.0),
            (1e6, 64, 6500.0, 8.0, 8.0),
        ] {
            let s = portions(total, k, bh, th, c);
            assert!(!s.is_empty() && s.len() <= k);
            let sum: f64 = s.iter().sum();
            assert!((sum - total).abs() <= 1e-6 * total, "{sum} ≠ {total}");
            let mut loaded = 0.0;
            let finish: Vec<f64> = s
                .iter()
                .map(|&x| {
                    loaded += bh + x * th;
                    loaded + x * c
                })
                .collect();
            for f in &finish {
                assert!((f - finish[0]).abs() <= 1e-6 * finish[0], "{finish:?}");
            }
            assert!(s.windows(2).all(|w| w[0] > w[1]), "{s:?}");
        }
        assert!(portions(0.0, 8, 1.0, 1.0, 1.0).is_empty());
    }
}
