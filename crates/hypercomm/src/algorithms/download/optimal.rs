//! The optimal download among the schedules in which the host sends, one message a
//! step, the blocks of aligned subcubes obtained by recursive halving, each scattered
//! by Data Scattering from its lowest PE (every PE receives one message of whole
//! blocks): a recursion over subcube sizes finds the best for any β_h, τ_h, β, τ.
//!
//! Reference: beyond Gichev 1992 (seed 003), whose algorithm (§5) is one member of the
//! class, as are SL (§3.1), DS (§3.3) and `ssa-repaired`; issue 19.
//!
//! **The class.** A schedule is a sequence of pieces Q_1, …, Q_s (aligned subcubes of
//! dimensions d_1, …, d_s tiling the cube) produced by the recursion: a d-cube is sent
//! whole, or split into its two (d − 1)-halves, the first treated (recursively) before
//! the second. The host sends Q_j's 2^{d_j} blocks to its lowest PE in step j; that PE
//! runs DS over Q_j in steps j + 1 .. j + d_j. Every PE receives exactly one message,
//! of whole blocks, over a link of the topology: the host is linked to every PE, and
//! DS's messages cross one dimension of Q_j (`plan.rs`; the tests verify the schedules
//! of every tiling of the 3-cube and the chosen ones of hypercube:0..6+host).
//!
//! **The recursion.** Step j costs max(β_h + 2^{d_j}mτ_h, β + 2^{F_j}mτ), the second
//! term only while some piece still scatters, where F_j, the largest message any
//! earlier piece sends in step j, obeys F_{j+1} = max(F_j − 1, d_j − 1) (every piece
//! halves its message each step; F = −1: none). So the cost of treating a d-cube
//! depends on the past only through F when it starts, and determines the future only
//! through F when it ends: G(d, F → F') = the least cost of its steps, with
//! G(d, F → max(F − 1, d − 1)) ≤ max(β_h + 2^d mτ_h, β + 2^F mτ) (whole) and
//! G(d, F → F'') ≤ G(d − 1, F → F') + G(d − 1, F' → F'') (split). After the host's last
//! piece the cube still scatters for F + 1 steps of β + 2^l mτ, l = F, …, 0:
//! T = min_{F'} G(n, −1 → F') + Σ_{l=0}^{F'} (β + 2^l mτ). O(n⁴) time.
//!
//! **Equal parameters: T = (n + 1)β + Nτ, Gichev's time.** Gichev's pieces
//! (n − 1, n − 2, …, 0, 0) are in the class. No member does better: piece j ends
//! its scattering in step j + d_j, and if every piece ended by step S then
//! 2^n = Σ_j 2^{d_j} ≤ Σ_{j=1}^{s} 2^{S−j} < 2^S, so S ≥ n + 1 steps, each costing at
//! least β; the host's steps carry its N elements, each step costing at least
//! β + (its host message)τ: T ≥ Sβ + Nτ ≥ (n + 1)β + Nτ.
//!
//! **Never worse than SL, DS, Gichev (and `ssa-repaired`)**: their piece sequences
//! are in the class (SL: all dimensions 0; DS: one piece; Gichev's; x then zeros),
//! and the recursion is exhaustive over it. The tests also compare with an exhaustive
//! search over every order of every multiset of subcube sizes (any multiset of powers
//! of two summing to 2^n tiles the cube) on hypercube:0..5+host.
//!
//! Cost: the recursion's value, exact with rounds timing under every port and duplex
//! rule (one transfer per node and step).
//!
//! **A host with several send ports** (`--host-ports`). The class above is the one-port
//! host's (seed 003's model; `--host-ports one`, or `S,R` with S = 1). With
//! `--host-ports all` the host sends every PE its block at once, each over its own
//! host link, in one step: T = β_h + mτ_h, which is the lower bound of every schedule
//! under a multi-port host (`bounds::download`: one of the k host links carries at
//! least m elements), so this is optimal among all schedules; exact under rounds and
//! async timing. With S send ports, 1 < S < k, neither the recursion nor the bound is
//! known to be tight, and `optimal` refuses (naming the valid choices) rather than
//! claim what it cannot prove; SL, DS, Gichev and the others still run, one host
//! message a step, with their forms exact under any host port rule.
//!
//! Constraints: `hypercube:N+host` (the host linked to every PE); `--host-ports` one,
//! `1,R` or all.

use crate::algorithms::download::plan::{
    async_formula, dims_of, is_download, rounds_time, setup, Piece, Plan,
};
use crate::algorithms::{Formula, Params};
use crate::cost::model::{Model, Timing};
use crate::error::Error;
use crate::schedule::Schedule;
use crate::verify::Problem;

#[derive(Clone, Copy, Debug)]
enum Choice {
    Whole,
    /// Split; the front F' between the halves.
    Split(usize),
}

/// The recursion's tables: `g[d][f][f2]` = (least cost, choice), fronts as index F + 1.
struct Tables {
    n: u32,
    g: Vec<Vec<Vec<(f64, Option<Choice>)>>>,
    tail: Vec<f64>,
}

fn tables(n: u32, m: u64, model: &Model) -> Tables {
    let w = n as usize + 1; // fronts −1..=n − 1
    let host = |d: u32| model.host.transfer((1u64 << d) * m);
    let cube = |f: usize| {
        if f == 0 {
            0.0
        } else {
            model.net.transfer((1u64 << (f - 1)) * m)
        }
    };
    let mut g = vec![vec![vec![(f64::INFINITY, None); w]; w]; w];
    for d in 0..=n as usize {
        for f in 0..w {
            // Whole: F' = max(F − 1, d − 1), as indices max(f − 1, d) (f ≥ 1), d (f = 0).
            let f2 = f.saturating_sub(1).max(d);
            if f2 < w {
                g[d][f][f2] = (host(d as u32).max(cube(f)), Some(Choice::Whole));
            }
            if d == 0 {
                continue;
            }
            for f1 in 0..w {
                let a = g[d - 1][f][f1].0;
                if !a.is_finite() {
                    continue;
                }
                for f2 in 0..w {
                    let c = a + g[d - 1][f1][f2].0;
                    if c < g[d][f][f2].0 {
                        g[d][f][f2] = (c, Some(Choice::Split(f1)));
                    }
                }
            }
        }
    }
    let mut tail = vec![0.0; w];
    for f in 1..w {
        tail[f] = tail[f - 1] + cube(f);
    }
    Tables { n, g, tail }
}

impl Tables {
    /// (T, the final front F' + 1).
    fn best(&self) -> (f64, usize) {
        let n = self.n as usize;
        (0..self.tail.len())
            .map(|f2| (self.g[n][0][f2].0 + self.tail[f2], f2))
            .fold((f64::INFINITY, 0), |b, c| if c.0 < b.0 { c } else { b })
    }
    fn emit(&self, d: usize, base: u32, f: usize, f2: usize, out: &mut Vec<Piece>) {
        match self.g[d][f][f2].1.expect("a finite entry has a choice") {
            Choice::Whole => out.push(Piece {
                base,
                dim: d as u32,
            }),
            Choice::Split(f1) => {
                self.emit(d - 1, base, f, f1, out);
                self.emit(d - 1, base + (1 << (d - 1)), f1, f2, out);
            }
        }
    }
}

/// The best pieces and their time.
pub fn solve(n: u32, m: u64, model: &Model) -> (Vec<Piece>, f64) {
    if m == 0 {
        return (vec![Piece { base: 0, dim: n }], 0.0);
    }
    let t = tables(n, m, model);
    let (time, f2) = t.best();
    let mut pieces = Vec::new();
    t.emit(n as usize, 0, 0, f2, &mut pieces);
    (pieces, time)
}

/// Which class the host's send ports make `optimal` search: one message a step
/// (`false`), or every block at once (`true`); an error for S send ports, 1 < S < k.
fn all_at_once(n: u32, model: &Model) -> Result<bool, Error> {
    match model.host_ports.send() {
        Some(1) => Ok(false),
        None => Ok(true),
        Some(s) if u64::from(s) >= 1u64 << n => Ok(true),
        Some(s) => Err(Error::InvalidParameter {
            what: "--host-ports",
            reason: format!(
                "optimal knows the best download for a host that sends one message at a \
                 time or one to every PE at once, not with {s} send ports for {} PEs; \
                 valid: one, 1,R, all (or S,R with S ≥ {}); the other download \
                 algorithms run under any host ports",
                1u64 << n,
                1u64 << n
            ),
        }),
    }
}

/// Every PE's block at once, one host message each (a host of k send ports or more).
fn at_once(n: u32, m: u64) -> Plan {
    let k = 1usize << n;
    Plan::with_host_sends(n, m, crate::algorithms::download::sl::pieces(n), k)
}

/// Build the schedule.
pub fn build(problem: &Problem<'_>, params: &Params, n: u32) -> Result<Box<dyn Schedule>, Error> {
    is_download(problem, "optimal")?;
    if all_at_once(n, &params.model)? {
        return Ok(Box::new(at_once(n, problem.len)));
    }
    let (pieces, _) = solve(n, problem.len, &params.model);
    Ok(Box::new(Plan::new(n, problem.len, pieces)))
}

/// The recursion's value, exact with rounds timing; β_h + mτ_h with a host that
/// sends to every PE at once.
pub fn formulas(problem: &Problem<'_>, params: &Params) -> Vec<Formula> {
    let Ok(n) = setup(problem, "optimal") else {
        return vec![];
    };
    match all_at_once(n, &params.model) {
        Err(_) => return vec![],
        Ok(true) => {
            let m = problem.len;
            let value = if m == 0 {
                0.0
            } else {
                params.model.host.transfer(m)
            };
            return vec![Formula::exact(
                "β_h + mτ_h (every PE's block at once over its own host link: the lower bound)",
                "beyond Gichev 1992: a host with a send port per PE (issue 19)",
                value,
            )];
        }
        Ok(false) => {}
    }
    let (pieces, value) = solve(n, problem.len, &params.model);
    if params.model.timing == Timing::Async {
        let dims = dims_of(&pieces);
        let reference = "beyond Gichev 1992: the rounds-optimal pieces, timed async";
        return vec![async_formula(&dims, problem.len, &params.model, reference)];
    }
    let dims: Vec<String> = pieces.iter().map(|p| p.dim.to_string()).collect();
    debug_assert!(
        (value
            - rounds_time(
                &Plan::new(n, problem.len, pieces).dims(),
                problem.len,
                &params.model
            ))
        .abs()
            < 1e-6 * value.max(1.0)
    );
    vec![Formula::exact(
        format!(
            "min over recursive halvings of Σ_j max(β_h + 2^{{d_j}}mτ_h, β + 2^{{F_j}}mτ) + Σ_{{l ≤ F}} (β + 2^l mτ); pieces d = ({})",
            dims.join(", ")
        ),
        "beyond Gichev 1992 (§5): recursion over subcube sizes (issue 19)",
        value,
    )]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::algorithms::download::plan::tests::{check_plan, models};
    use crate::algorithms::download::{ds, gichev, sl, ssa_repaired};
    use std::collections::HashMap;

    /// Every order of every multiset of subcube sizes: f(R, F) over the blocks R left
    /// to send and the front F, by memoised search.
    fn exhaustive(n: u32, m: u64, model: &Model) -> f64 {
        fn go(
            r: u64,
            f: i32,
            n: u32,
            m: u64,
            model: &Model,
            memo: &mut HashMap<(u64, i32), f64>,
        ) -> f64 {
            let cube = |f: i32| {
                if f < 0 {
                    0.0
                } else {
                    model.net.transfer((1u64 << f) * m)
                }
            };
            if r == 0 {
                return (0..=f).map(cube).sum();
            }
            if let Some(&v) = memo.get(&(r, f)) {
                return v;
            }
            let mut best = f64::INFINITY;
            for d in 0..=n {
                if 1u64 << d > r {
                    break;
                }
                let step = model.host.transfer((1u64 << d) * m).max(cube(f));
                let next = (f - 1).max(d as i32 - 1);
                best = best.min(step + go(r - (1 << d), next, n, m, model, memo));
            }
            memo.insert((r, f), best);
            best
        }
        go(1 << n, -1, n, m, model, &mut HashMap::new())
    }

    fn dims(p: &[Piece]) -> Vec<u32> {
        p.iter().map(|p| p.dim).collect()
    }

    /// With `--host-ports all` (or at least k send ports) `optimal` sends every block
    /// at once: it verifies, its form β_h + mτ_h equals the simulator under rounds and
    /// async timing and the lower bound of every schedule; with 1 < S < k send ports it
    /// refuses, naming the valid choices.
    #[test]
    fn a_host_with_a_port_per_pe_sends_every_block_at_once() {
        use crate::algorithms::download::plan::tests::hosted;
        use crate::collective::Collective;
        use crate::cost::model::Ports;
        use crate::cost::simulate;
        use crate::verify::{verify, Strictness};
        for n in 0..=5 {
            let topology = hosted(n);
            for m in [0u64, 1, 9] {
                let problem = Problem {
                    topology: &topology,
                    collective: Collective::Download,
                    len: m,
                    commutative: true,
                    counts: None,
                };
                let k = 1u32 << n;
                for model in models() {
                    for host_ports in [Ports::All, Ports::Split { send: k, recv: 1 }] {
                        for timing in [Timing::Rounds, Timing::Async] {
                            let model = Model {
                                host_ports,
                                timing,
                                ports: Ports::One,
                                ..model
                            };
                            let params = Params {
                                model,
                                ..Params::default()
                            };
                            let s = build(&problem, &params, n).unwrap();
                            // One message per link a step: the host sends to every
                            // PE at once, each PE receives once.
                            let strict = Strictness {
                                ports: Some(Ports::All),
                                ..Strictness::default()
                            };
                            verify(problem, s.as_ref(), strict).unwrap_or_else(|v| {
                                panic!("n = {n} m = {m}: {v}");
                            });
                            let t = simulate(&topology, s.as_ref(), &model).time;
                            let f = formulas(&problem, &params);
                            assert_eq!(f.len(), 1);
                            let want = f[0].value;
                            assert!((t - want).abs() <= 1e-9 * want.max(1.0), "{t} vs {want}");
                            let bound = crate::bounds::lower_bound(
                                &topology,
                                &problem.collective,
                                m,
                                &model,
                            )
                            .unwrap();
                            assert!(
                                (t - bound).abs() <= 1e-9 * t.max(1.0),
                                "n = {n} m = {m}: {t} vs bound {bound}"
                            );
                        }
                    }
                }
                if k > 2 {
                    let params = Params {
                        model: Model {
                            host_ports: Ports::Split { send: 2, recv: 1 },
                            ..Model::default()
                        },
                        ..Params::default()
                    };
                    let e = build(&problem, &params, n).err().unwrap().to_string();
                    assert!(
                        e.contains("--host-ports") && e.contains("valid: one"),
                        "{e}"
                    );
                    assert!(formulas(&problem, &params).is_empty());
                }
            }
        }
    }

    #[test]
    fn verifies_matches_the_recursion_and_beats_every_other_download() {
        let mut extra = models();
        for (hb, ht, b, t) in [
            (100.0, 1.0, 1.0, 0.01),
            (1.0, 0.01, 100.0, 1.0),
            (10.0, 0.5, 1.0, 0.01),
        ] {
            let mut md = Model::new(b, t).unwrap();
            md.host = crate::cost::model::LinkCost { beta: hb, tau: ht };
            extra.push(md);
        }
        for n in 0..=6 {
            for model in &extra {
                for m in [0u64, 1, 7, 100, 1000] {
                    let (pieces, value) = solve(n, m, model);
                    let t = check_plan(n, m, pieces.clone(), model);
                    let close =
                        |a: f64, b: f64| (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0);
                    assert!(
                        close(t, value),
                        "n = {n} m = {m}: simulated {t}, recursion {value}"
                    );
                    let others = [
                        ("sl", rounds_time(&dims(&sl::pieces(n)), m, model)),
                        ("ds", ds::time(n, m, model)),
                        ("gichev", gichev::time(n, m, model)),
                        (
                            "ssa-repaired",
                            ssa_repaired::time_with(n, ssa_repaired::best_x(n, m, model), m, model),
                        ),
                    ];
                    for (name, other) in others {
                        assert!(
                            t <= other + 1e-9 * other.max(1.0),
                            "n = {n} m = {m} {model:?}: optimal {t} > {name} {other}"
                        );
                    }
                    if model.host == model.net && m > 0 {
                        let k = (1u64 << n) as f64;
                        let gichev = (n + 1) as f64 * model.beta() + k * m as f64 * model.tau();
                        assert!(
                            close(t, gichev),
                            "n = {n} m = {m}: {t} ≠ (n + 1)β + Nτ = {gichev}"
                        );
                    }
                    if n <= 5 && m > 0 {
                        let all = exhaustive(n, m, model);
                        assert!(
                            close(t, all),
                            "n = {n} m = {m} {model:?}: recursion {t}, every order {all}"
                        );
                    }
                }
            }
        }
    }
}
