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
//! With k' PEs used, RP's download takes T_d = k'β_h + Nτ_h ([`download_time`]): (3.2)'s
//! kβ_h + Nτ_h once N is large enough for every PE, less below. Every PE finishes at
//! F = β_h + s_0(τ_h + c) ([`finish_time`]), against SL's kβ_h + Nτ_h + (N/k)c: the
//! gain is in T_l, as the paper says (docs/errata.md, E58, with numbers).
//!
//! **The registry's `rp`** takes the portions as the download's counts (`--counts`, one
//! per rank: the PEs' s_j, then the host's 0; [`integer_portions`] computes them for an
//! application of c per element): the host sends PE j its s_j elements, one PE a step in
//! rank order, skipping the PEs with none, and the verifier proves that PE j's `out`
//! holds its s_j elements from offset Σ_{i<j} s_i of the host's `in`. Its time is then
//! Σ_{s_j > 0}(β_h + s_jτ_h) = k'β_h + Nτ_h exactly, rounds or async (the host sends one
//! message at a time, back to back; no PE does anything else), k' the PEs with a
//! portion. Without counts the portions are equal, SL's schedule, and (3.2) reads
//! kβ_h + Nτ_h, its time exactly.
//!
//! Constraints: `hypercube:N+host`.

use crate::algorithms::download::plan::{is_download, setup, Plan};
use crate::algorithms::download::sl;
use crate::algorithms::{Formula, Params};
use crate::cost::model::Timing;
use crate::counts::{prefix, Counts};
use crate::error::Error;
use crate::schedule::Schedule;
use crate::schedule::{Buf, Op, Program, Rank, Region};
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

/// [`portions`] in whole elements summing to `total`, by rounding the running sums:
/// s'_j = round(S_j) − round(S_{j−1}), S_j = s_0 + … + s_j, so every running sum is
/// within half an element of the real one and every portion within one element.
/// Finishing times then differ from the common one by less than τ_h/2 + c, so from
/// each other by less than τ_h + 2c. PEs left with 0 elements at the end are dropped.
pub fn integer_portions(total: u64, k: usize, beta_h: f64, tau_h: f64, c: f64) -> Vec<u64> {
    let real = portions(total as f64, k, beta_h, tau_h, c);
    let (mut sum, mut done) = (0.0, 0u64);
    let mut whole: Vec<u64> = real
        .iter()
        .map(|&s| {
            sum += s;
            let upto = (sum.round() as u64).min(total);
            let s = upto.saturating_sub(done);
            done = upto.max(done);
            s
        })
        .collect();
    if let Some(last) = whole.last_mut() {
        *last += total - done; // the real sum's rounding error, if any
    }
    while whole.last() == Some(&0) {
        whole.pop();
    }
    whole
}

/// RP's download time with `portions` loaded in turn: k'β_h + Nτ_h, k' the PEs used.
pub fn download_time(portions: &[f64], beta_h: f64, tau_h: f64) -> f64 {
    portions.iter().map(|&s| beta_h + s * tau_h).sum()
}

/// When each PE loaded with `portions` (in turn) finishes computing, c per element:
/// PE j at Σ_{i ≤ j}(β_h + s_iτ_h) + s_j c.
pub fn finish_times(portions: &[f64], beta_h: f64, tau_h: f64, c: f64) -> Vec<f64> {
    let mut loaded = 0.0;
    portions
        .iter()
        .map(|&s| {
            loaded += beta_h + s * tau_h;
            loaded + s * c
        })
        .collect()
}

/// When the last PE loaded with `portions` finishes ([`finish_times`]' largest); with
/// [`portions`]' rule every PE finishes then, at β_h + s_0(τ_h + c).
pub fn finish_time(portions: &[f64], beta_h: f64, tau_h: f64, c: f64) -> f64 {
    finish_times(portions, beta_h, tau_h, c)
        .into_iter()
        .fold(0.0, f64::max)
}

/// The host's loads in turn with unequal portions: PE j gets `counts[j]` elements from
/// offset Σ_{i<j} counts\[i\] of the host's `in`, in the step of its rank among the
/// PEs with a portion.
#[derive(Clone, Debug)]
pub struct Portions {
    /// One count per PE (the host's 0 left off).
    counts: Vec<u64>,
}

impl Portions {
    /// The portions `counts` (one per PE) on the 2^n PEs of `hypercube:N+host`.
    pub fn new(counts: Vec<u64>) -> Self {
        Portions { counts }
    }
    /// The step in which PE `pe` is loaded, if it has a portion.
    fn step_of(&self, pe: usize) -> Option<usize> {
        (self.counts[pe] > 0).then(|| self.counts[..pe].iter().filter(|&&c| c > 0).count())
    }
}

impl Schedule for Portions {
    fn nodes(&self) -> u32 {
        self.counts.len() as u32 + 1
    }
    fn steps(&self) -> usize {
        self.counts.iter().filter(|&&c| c > 0).count()
    }
    fn program(&self, rank: Rank) -> Program {
        let host = self.counts.len() as Rank;
        let mut prog = Program::new(rank, self.steps());
        if rank == host {
            let at = prefix(&self.counts);
            for (pe, &c) in self.counts.iter().enumerate() {
                if let Some(s) = self.step_of(pe) {
                    prog.push(s, Op::send(pe as Rank, Region::new(Buf::In, at[pe], c)));
                }
            }
        } else if let Some(s) = self.step_of(rank as usize) {
            let c = self.counts[rank as usize];
            prog.push(s, Op::recv(host, Region::new(Buf::Out, 0, c)));
        }
        prog
    }
}

/// The PEs' portions of `problem`'s counts (the host's 0 left off), if it has any.
fn portions_of(problem: &Problem<'_>) -> Option<Vec<u64>> {
    match problem.counts {
        Some(Counts::PerRank(c)) => Some(c[..c.len().saturating_sub(1)].to_vec()),
        _ => None,
    }
}

/// Build the schedule: the host loads the PEs in turn with the portions of
/// `--counts` ([`Portions`]), or with equal blocks, SL's schedule, without.
pub fn build(problem: &Problem<'_>, _params: &Params, n: u32) -> Result<Box<dyn Schedule>, Error> {
    is_download(problem, "rp")?;
    match portions_of(problem) {
        Some(c) => Ok(Box::new(Portions::new(c))),
        None => Ok(Box::new(Plan::new(n, problem.len, sl::pieces(n)))),
    }
}

/// kβ_h + Nτ_h (eq. 3.2), exact with rounds timing; with portions, k'β_h + Nτ_h over
/// the k' PEs that get one, exact with either timing.
pub fn formulas(problem: &Problem<'_>, params: &Params) -> Vec<Formula> {
    if setup(problem, "rp").is_err() {
        return vec![];
    }
    if let Some(c) = portions_of(problem) {
        let host = params.model.host;
        let value: f64 = c
            .iter()
            .filter(|&&s| s > 0)
            .map(|&s| host.beta + s as f64 * host.tau)
            .sum();
        return vec![Formula::exact(
            "k'β_h + Nτ_h = Σ_{s_j > 0}(β_h + s_jτ_h), N = Σ s_j",
            "Gichev 1992, §3.2, eq. (3.2) with RP's portions s_j",
            value,
        )];
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
            let finish = finish_times(&s, bh, th, c);
            for f in &finish {
                assert!((f - finish[0]).abs() <= 1e-6 * finish[0], "{finish:?}");
            }
            assert!(s.windows(2).all(|w| w[0] > w[1]), "{s:?}");
        }
        assert!(portions(0.0, 8, 1.0, 1.0, 1.0).is_empty());
    }

    /// RP's download takes (3.2)'s kβ_h + Nτ_h when N uses every PE and less when it
    /// does not; everyone finishes at β_h + s_0(τ_h + c), before SL's last PE; whole
    /// portions sum to N and finish within τ_h + 2c of each other.
    #[test]
    fn rp_downloads_as_3_2_and_finishes_before_sl() {
        let (k, bh, th, c) = (8usize, 6500.0, 8.0, 100.0);
        for (total, used) in [(8192.0, 8), (800.0, 5), (200.0, 2)] {
            let s = portions(total, k, bh, th, c);
            assert_eq!(s.len(), used, "N = {total}: {s:?}");
            let td = download_time(&s, bh, th);
            assert!((td - (used as f64 * bh + total * th)).abs() <= 1e-6 * td);
            let finish = finish_time(&s, bh, th, c);
            assert!((finish - (bh + s[0] * (th + c))).abs() <= 1e-6 * finish);
            let sl = k as f64 * bh + total * th + total / k as f64 * c;
            assert!(finish < sl, "N = {total}: RP {finish}, SL {sl}");
            let whole = integer_portions(total as u64, k, bh, th, c);
            assert_eq!(whole.iter().sum::<u64>(), total as u64);
            let w: Vec<f64> = whole.iter().map(|&x| x as f64).collect();
            let ends = finish_times(&w, bh, th, c);
            let spread = ends.iter().copied().fold(f64::MIN, f64::max)
                - ends.iter().copied().fold(f64::MAX, f64::min);
            assert!(spread < th + 2.0 * c, "N = {total}: {ends:?}");
        }
        // With (2.3)'s numbers and no computation (c = 0) the rule gives s_{j+1} < 0
        // at once: one PE takes everything.
        assert_eq!(integer_portions(100, 8, 6500.0, 8.0, 0.0), [100]);
    }

    /// RP with its portions as the download's counts (zeros included: small N leaves
    /// PEs out) verifies strictly, and its time is k'β_h + Nτ_h, the formula, under
    /// both timings and every port rule; the other download algorithms refuse counts,
    /// and counts that give the host a portion or miss a rank are refused.
    #[test]
    fn rp_with_portions_verifies_and_takes_k_prime_beta_h_plus_n_tau_h() {
        use crate::algorithms::download::plan::tests::{hosted, models};
        use crate::algorithms::{find, Params};
        use crate::collective::{Collective, OpKind};
        use crate::cost::model::{Duplex, Ports};
        use crate::verify::{verify, Strictness};
        let rp = find(OpKind::Download, "rp").unwrap();
        for n in 0..=4u32 {
            let topo = hosted(n);
            let k = 1usize << n;
            for (total, c) in [
                (0u64, 1.0),
                (5, 100.0),
                (1000, 5.0),
                (65536, 100.0),
                (7, 0.0),
            ] {
                for model in models() {
                    let (bh, th) = (model.host.beta, model.host.tau);
                    let mut counts = integer_portions(total, k, bh, th, c);
                    counts.resize(k + 1, 0);
                    let counts = Counts::PerRank(counts);
                    let problem = Problem {
                        topology: &topo,
                        collective: Collective::Download,
                        len: counts.mean(),
                        commutative: true,
                        counts: Some(&counts),
                    };
                    let params = Params {
                        model,
                        ..Params::default()
                    };
                    let s = rp.build(&problem, &params).unwrap();
                    let strict = Strictness {
                        ports: Some(Ports::One),
                        duplex: Some(Duplex::Half),
                        host_ports: Some(Ports::One),
                    };
                    verify(problem, s.as_ref(), strict)
                        .unwrap_or_else(|v| panic!("n = {n}, N = {total}: {v}"));
                    let Counts::PerRank(cs) = &counts else {
                        unreachable!()
                    };
                    let used = cs.iter().filter(|&&x| x > 0).count() as f64;
                    let want = used * bh + total as f64 * th;
                    let f = rp.formulas(&problem, &params);
                    assert_eq!(f.len(), 1);
                    assert!((f[0].value - want).abs() <= 1e-9 * want.max(1.0));
                    for timing in [Timing::Rounds, Timing::Async] {
                        for ports in [Ports::One, Ports::All] {
                            let md = crate::cost::model::Model {
                                timing,
                                ports,
                                ..model
                            };
                            let t = crate::cost::simulate(&topo, s.as_ref(), &md).time;
                            assert!(
                                (t - want).abs() <= 1e-9 * want.max(1.0),
                                "n = {n}, N = {total}, {timing:?}/{ports}: {t} ≠ {want}"
                            );
                        }
                    }
                    // Everyone else downloads equal blocks only.
                    for other in ["sl", "ds", "gichev", "optimal", "ssa-repaired"] {
                        let e = find(OpKind::Download, other)
                            .unwrap()
                            .build(&problem, &params)
                            .err()
                            .unwrap_or_else(|| panic!("{other} took counts"));
                        assert!(e.to_string().contains("rp"), "{other}: {e}");
                    }
                }
            }
            let bad = [vec![1u64; k + 1], vec![1u64; k]];
            for b in bad {
                let e = Counts::PerRank(b.clone())
                    .check(OpKind::Download, k as u32 + 1)
                    .unwrap_err()
                    .to_string();
                assert!(
                    e.contains("host") || e.contains("one count per rank"),
                    "{b:?}: {e}"
                );
            }
        }
    }
}
