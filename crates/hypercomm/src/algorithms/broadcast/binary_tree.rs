//! Pipelined broadcast down a binary tree emulated by a switch (Saad & Schultz 1986,
//! seed 004, §3.2 (F), eqs. (3.24)–(3.25)).
//!
//! The k nodes, numbered relative to the root (v = (r − root) mod k), form the heap
//! tree: v's children are 2v + 1 (left) and 2v + 2 (right). The switch realises two
//! partial permutations, every parent to its left child and every parent to its right
//! child, so a parent passes each packet on in two steps, left then right: a node of
//! depth d sends packet p (of ν) to its left child in step 2(p + d) and to its right
//! child in step 2(p + d) + 1. A node never sends twice or receives twice in a step;
//! a left child receives packet p + 1 while it sends packet p (one message each way,
//! the switch's rule). On k = 2 the root has one child and sends a packet a step.
//!
//! Cost (rounds model, full duplex or half-link duplex; the switch's one port each
//! way): with D = ⌊log₂k⌋ the depth of node k − 1 and e = \[k ≠ 2^D\] (the last level
//! holds a right child, whose transfer comes one step after its left sibling's), the
//! last packet reaches the last node in step 2(ν − 1 + D − 1) + e, so for k ≥ 3 the
//! schedule takes S = 2ν + a steps, a = 2D − 3 + e, every one busy. With q = ⌊m/ν⌋ and
//! r = m mod ν, the packets 0..r are one element longer and are in flight in the first
//! 2r + a steps:
//!
//! ```text
//! T = (2ν + a)(β + qτ) + [r > 0](2r + a)τ,   a = 2⌊log₂k⌋ − 3 + [k ≠ 2^⌊log₂k⌋],
//! ```
//!
//! exact (k = 2: ν(β + qτ) + rτ; k = 1: 0). Since 2r + a ≥ (2ν + a)r/ν, T ≥
//! (2ν + a)(β + mτ/ν) ≥ (√(2mτ) + √(aβ))², the continuous optimum at
//! ν* = √(amτ/(2β)), a lower estimate for every ν. The paper's (3.25),
//! 2(√(N/b_S) + √((log₂k − 2)τ_S))² = (√(2Nτ) + √((2log₂k − 4)β))², takes the tree one
//! level too shallow (E34) and is below the exact time; E34's
//! 2(√(N/b_S) + √((log₂k − 1)τ_S))² counts a right transfer on the last level of a tree
//! on 2^n nodes, which has one node, a left child (docs/errata.md, E50). Volume (k − 1)m.
//!
//! Constraints: `switch:K`, any K ≥ 1, any root; 1 ≤ ν ≤ max(m, 1).

use crate::algorithms::plan::{self, Plan};
use crate::algorithms::{pipeline, Formula, Packets, Params};
use crate::collective::Collective;
use crate::error::Error;
use crate::schedule::Schedule;
use crate::verify::Problem;

/// a = 2⌊log₂k⌋ − 3 + \[k ≠ 2^⌊log₂k⌋\] for k ≥ 3: S = 2ν + a steps.
pub fn extra_steps(k: u32) -> u64 {
    let d = 31 - k.max(1).leading_zeros();
    (2 * d + u32::from(!k.is_power_of_two())).saturating_sub(3) as u64
}

/// The exact time of ν packets of a message of m elements on k nodes.
pub fn time(k: u32, m: u64, nu: u64, beta: f64, tau: f64) -> f64 {
    if m == 0 || k <= 1 {
        return 0.0;
    }
    if k == 2 {
        return pipeline::time(m, 1, nu, beta, tau);
    }
    let a = extra_steps(k);
    let (q, r) = (m / nu, m % nu);
    let bigger = if r > 0 { 2 * r + a } else { 0 };
    (2 * nu + a) as f64 * (beta + q as f64 * tau) + bigger as f64 * tau
}

/// The continuous optimum (√(2mτ) + √(aβ))², a lower estimate of [`time`] for every ν.
pub fn continuous_optimum(k: u32, m: u64, beta: f64, tau: f64) -> f64 {
    if m == 0 || k <= 1 {
        return 0.0;
    }
    if k == 2 {
        return m as f64 * tau + beta;
    }
    ((2.0 * m as f64 * tau).sqrt() + (extra_steps(k) as f64 * beta).sqrt()).powi(2)
}

/// An upper bound of [`time`] at [`best`]'s ν: 2(2mτ + aβ) + 2β + (2ν* + 2 + a)τ, the
/// continuous optimum by (√x + √y)² ≤ 2(x + y), plus what ν = ⌈ν*⌉ and packets of
/// ⌈m/ν⌉ elements add (β + mτ on k ≤ 2).
pub fn bound(k: u32, m: u64, beta: f64, tau: f64) -> f64 {
    if k <= 2 || m == 0 {
        return if k <= 1 || m == 0 {
            0.0
        } else {
            beta + m as f64 * tau
        };
    }
    let a = extra_steps(k) as f64;
    let mf = m as f64;
    let star = if beta > 0.0 {
        (a * mf * tau / (2.0 * beta)).sqrt()
    } else {
        mf
    };
    2.0 * (2.0 * mf * tau + a * beta) + 2.0 * beta + (2.0 * star + 2.0 + a) * tau
}

/// The ν ∈ 1..=m minimising [`time`], searched around ν* = √(amτ/(2β)).
pub fn best(k: u32, m: u64, beta: f64, tau: f64) -> u64 {
    if m <= 1 || k <= 2 {
        return 1;
    }
    if beta == 0.0 {
        return m;
    }
    let star = (extra_steps(k) as f64 * m as f64 * (tau / beta) / 2.0).sqrt();
    let lo = ((star / 2.0).floor() as u64).clamp(1, m);
    let hi = ((star * 2.0).ceil() as u64).saturating_add(2).clamp(1, m);
    (lo..=hi)
        .min_by(|&x, &y| time(k, m, x, beta, tau).total_cmp(&time(k, m, y, beta, tau)))
        .unwrap_or(1)
}

fn packets(params: &Params, k: u32, m: u64) -> Result<u64, Error> {
    match params.packets {
        Packets::Opt => Ok(best(k, m, params.model.beta(), params.model.tau())),
        Packets::Count(_) => pipeline::resolve(params, m, 2),
    }
}

/// Build the schedule.
pub fn build(problem: &Problem<'_>, params: &Params, k: u32) -> Result<Box<dyn Schedule>, Error> {
    let (m, c) = (problem.len, problem.collective);
    let Collective::Broadcast { root } = c else {
        return Err(plan::unfit("binary-tree", "a broadcast"));
    };
    let nu = packets(params, k, m)?;
    if m == 0 {
        return Ok(plan::boxed(plan::empty(k)));
    }
    let mut p = Plan::new(k);
    plan::own_copies(&mut p, c, k, m);
    let abs = |v: u64| ((v + root as u64) % k as u64) as u32;
    let (k64, mut depth) = (k as u64, 0u64);
    for v in 0..k64 {
        if v + 1 >= 1 << (depth + 1) {
            depth += 1;
        }
        for (side, child) in [(0, 2 * v + 1), (1, 2 * v + 2)] {
            if child >= k64 {
                continue;
            }
            for pk in 0..nu {
                let step = if k == 2 { pk } else { 2 * (pk + depth) + side };
                p.send(step as usize, abs(v), vec![abs(child)], vec![pk]);
            }
        }
    }
    Ok(plan::boxed(
        p.build(plan::packet_layout(root, None, m, nu))?,
    ))
}

/// The exact time, the continuous optimum, and the paper's (3.25) (both lower
/// estimates), under full or half-link duplex.
pub fn formulas(problem: &Problem<'_>, params: &Params) -> Vec<Formula> {
    let Ok(k) = crate::algorithms::fit::switch(problem.topology) else {
        return vec![];
    };
    let model = &params.model;
    let m = problem.len;
    let Ok(nu) = packets(params, k, m) else {
        return vec![];
    };
    if !plan::overlaps(model, true) {
        return vec![];
    }
    let (b, t) = (model.beta(), model.tau());
    const EQ: &str =
        "Saad & Schultz 1986 (seed 004), §3.2 (F), eqs. (3.24)–(3.25); docs/errata.md E34, E50";
    let a = extra_steps(k);
    let mut v = vec![Formula::exact(
        format!(
            "(2ν + a)(β + qτ) + [r > 0](2r + a)τ, a = 2⌊log₂k⌋ − 3 + [k ≠ 2^⌊log₂k⌋] = {a}, ν = {nu} (k = 2: one hop)"
        ),
        EQ,
        time(k, m, nu, b, t),
    )];
    if params.packets == Packets::Opt && m > 0 && k >= 3 {
        v.push(Formula::estimate(
            "(√(2mτ) + √(aβ))²",
            EQ,
            continuous_optimum(k, m, b, t),
        ));
        if k >= 4 {
            let lg = (k as f64).log2();
            v.push(Formula::estimate(
                "2(√(N/b_S) + √((log₂k − 2)τ_S))² as printed (3.25)",
                "Saad & Schultz 1986 (seed 004), §3.2 (F), eq. (3.25)",
                2.0 * ((m as f64 * t).sqrt() + ((lg - 2.0) * b).sqrt()).powi(2),
            ));
        }
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::algorithms::find;
    use crate::collective::OpKind;
    use crate::cost::{model::Model, simulate};
    use crate::topology::Topology;
    use crate::verify::{verify, Strictness};

    #[test]
    fn extra_steps_follow_the_last_level() {
        // k = 4: 0 → 1, 2; 1 → 3 (a left child): 2ν + 1 steps.
        assert_eq!(
            (3..=9).map(extra_steps).collect::<Vec<_>>(),
            [0, 1, 2, 2, 2, 3, 4]
        );
    }

    /// Every k, root, length and ν: verified under the switch's strict rule, and the
    /// simulated time is the exact form; `opt` is the best count.
    #[test]
    fn exact_on_every_switch() {
        let algo = find(OpKind::Broadcast, "binary-tree").unwrap();
        let model = Model::new(1.0, 0.01).unwrap();
        let strict = Strictness {
            ports: Some(crate::cost::model::Ports::One),
            duplex: None,
            host_ports: None,
        };
        for k in 1..=17u32 {
            let topo: Topology = format!("switch:{k}").parse().unwrap();
            for root in 0..k {
                for (m, counts) in [(1u64, vec![1]), (7, vec![1, 3, 7]), (1000, vec![1, 13])] {
                    for nu in counts.into_iter().map(Packets::Count).chain([Packets::Opt]) {
                        let problem = Problem {
                            topology: &topo,
                            collective: Collective::Broadcast { root },
                            len: m,
                            commutative: true,
                            counts: None,
                        };
                        let params = Params { packets: nu, model };
                        let s = algo.build(&problem, &params).unwrap();
                        verify(problem, s.as_ref(), strict)
                            .unwrap_or_else(|v| panic!("k = {k}, root {root}: {v}"));
                        let t = simulate(&topo, s.as_ref(), &model).time;
                        let forms = algo.formulas(&problem, &params);
                        assert!(forms[0].is_exact());
                        for f in &forms {
                            assert!(f.holds_for(t), "k = {k} m = {m} {nu:?}: {f:?} vs {t}");
                        }
                        if k >= 3 && nu == Packets::Opt {
                            assert!(t <= bound(k, m, 1.0, 0.01) + 1e-9, "k = {k} m = {m}");
                        }
                    }
                }
            }
        }
    }
}
