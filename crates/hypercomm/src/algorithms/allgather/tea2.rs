//! TEA2: the optimal Total Exchange Algorithm, its balanced variant and Eisenstat's
//! grouping of half steps.
//!
//! Reference: Saad & Schultz 1985 (YALEU/DCS/RR-428), §4.3, Algorithm TEA2, eq. (4.5),
//! and the grouped main loop suggested by S. Eisenstat (end of §4.3).
//!
//! ## Labels, shifts and dimensions
//! Bit d of a label (value 2^d) is dimension d. The paper's j-th bit, j = 1..n, counts
//! from the right ("a one as their last bit … node e_1 ≡ 0^{n−1}1"), so paper's j is our
//! d = j − 1 and e_j = S^{j−1}e_1 is 2^d. S is the left cyclic shift of n-bit words
//! (bit d moves to bit d + 1 mod n), so a word r with bit 0 set has bit d set in S^d r.
//! A *token* T is rank T's block: block T of `out` (offset T·m, length m).
//!
//! ## The rule, relative to the receiver
//! At step i every node B receives each token T at distance i, i.e. each *word*
//! w = T ⊕ B with i ones, from exactly one neighbour B ⊕ 2^d, with bit d of w set (that
//! neighbour holds T: T is at distance i − 1 from it). Which d forwards w is an
//! *assignment* of the words with i ones to one of their set bits; it depends only on
//! (n, i), so every node uses the same one and the schedule stays rank-local. The words
//! with i ones fall into cyclic-shift classes; a class of period p (p | n) has p words,
//! S^d r for d = 0..p − 1, and we describe an assignment by giving each class a *start*
//! c: dimension d carries the class's word S^d r iff (d − c) mod n < p. As p | n, the p
//! dimensions c, …, c + p − 1 hit each residue mod p once, so every word of the class is
//! carried exactly once, by a dimension where it has a one (bit d of S^d r is bit 0 of
//! r). The representative r of a class is its largest rotation with bit 0 set (the
//! paper's example: R(5, 3) = {10101, 11001}; any rotation with bit 0 set would do).
//!
//! - `tea2` (the paper's algorithm): every start is 0. The paper moves S^{j−1}R(n, i)
//!   across every dimension j = 1..n; for a class of period p < n (n composite, e.g.
//!   0101 for n = 4, i = 2) that literal rule sends each of its words n/p times to the
//!   same node, from n/p neighbours (in one step: a `Race`). The minimal fix is to send
//!   S^{j−1}r only across the first p dimensions, j ≤ p: each word then arrives once.
//!   Dimension 0 carries one word of every class, so the busiest link of step i carries
//!   N(n, i) tokens, the number of classes (binary necklaces with i ones,
//!   N(n, i) = (1/n)Σ_{e | gcd(n,i)} φ(e)C(n/e, i/e)) — the paper's claim of
//!   ⌈C(n, i)/n⌉ holds only when no class is periodic (e.g. N(8, 4) = 10 > 9).
//! - `tea2-balanced` (beyond the paper): the starts go round robin: a class's start is
//!   the number of words of the classes before it (levels 1..n in order, classes in a
//!   fixed order) mod n. A class of period n adds one word to every dimension whatever
//!   its start, and the periodic classes of a level fill consecutive positions of the
//!   cycle of dimensions, so every dimension carries A + ⌊P/n⌋ or A + ⌈P/n⌉ words of
//!   level i (A aperiodic classes, P words in periodic ones, nA + P = C(n, i)): the
//!   busiest link carries exactly ⌈C(n, i)/n⌉, the least possible. As the cursor runs
//!   on across levels, two consecutive levels together are balanced as well:
//!   ⌈(C(n, i) + C(n, i + 1))/n⌉ (used by the grouped variant).
//! - `tea2-grouped` / `tea2-grouped-balanced` (Eisenstat's grouping, for half-duplex
//!   links): in step s = 0..n (n + 1 steps) the nodes of parity s mod 2 (number of ones
//!   in the label) send and the others receive; the receivers get the tokens at
//!   distances s and s + 1 (levels 0 and n + 1 are empty). The paper's loop
//!   "for i = 0..⌊(n−1)/2⌋: (1) even → odd: R(n, 2i) ∪ R(n, 2i+1); (2) odd → even:
//!   R(n, 2i+1) ∪ R(n, 2i+2)" is steps 2i and 2i + 1 of this. Availability: a node
//!   receives at the steps of the other parity, levels s and s + 1, so when it sends at
//!   step s it holds every level ≤ s, and it sends the levels s − 1 and s relative to
//!   itself (s and s + 1 relative to its neighbour). For even n the paper's loop stops
//!   one half step early: the odd nodes never get the tokens at distance n (n = 2: node
//!   01 never gets 10); step n (even → odd, level n alone) completes it, so n + 1 steps
//!   for every n ≥ 1, not 2⌈n/2⌉.
//!
//! ## Cost (rounds; every node of a step does the same, by symmetry)
//! Let M_s be the busiest link's tokens in step s, D_s the number of links that carry a
//! message (n, except 1 when only level n moves: the single word 1^n), W_s the tokens a
//! node sends in the step (C(n, i), or C(n, s) + C(n, s + 1) grouped).
//! - Ungrouped (step s = i − 1 moves level i both ways on every link):
//!   `--ports all`: Σ_i (β + M_i mτ) under full duplex, twice that under half duplex;
//!   `--ports one`: Σ_i (D_i β + C(n, i)mτ) = (n² − n + 1)β + (2^n − 1)mτ, twice under half.
//!   `tea2`: M_i = N(n, i), Σ_i N(n, i) = N(n) − 1 (N(n) binary necklaces of length n):
//!   2nβ + 2(N(n) − 1)mτ under `--ports all --duplex half`.
//!   `tea2-balanced`: M_i = ⌈C(n, i)/n⌉: 2nβ + 2Σ_i⌈C(n, i)/n⌉mτ under all/half.
//! - Grouped (a node either sends or receives in a step, so duplex does not matter):
//!   `--ports all`: (n + 1)β + Σ_s M_s mτ; `--ports one`: (n² + 1)β + 2(2^n − 1)mτ.
//!   `tea2-grouped`: M_s = N(n, s) + N(n, s + 1): (n + 1)β + 2(N(n) − 1)mτ.
//!   `tea2-grouped-balanced`: M_s = ⌈(C(n, s) + C(n, s + 1))/n⌉ (C(n, 0) counted 0).
//!
//! The paper's bound (4.5), t ≤ 2nβ + (2^{n+1}/n + 2n)mτ under all ports, half duplex,
//! rests on M_i ≤ C(n, i)/n + 1. It always holds for `tea2-balanced` (Σ_i⌈C(n,i)/n⌉ ≤
//! (2^n − 1)/n + n − 1). For `tea2` it needs N(n) − 1 ≤ 2^n/n + n, which fails for
//! n = 16, 18, 20, 22, 24 (n = 16: 2(N(16) − 1) = 8230 > 8224); `formulas` returns it
//! only where it holds (n < 16 or n odd, checked for every n ≤ 24 by a test). The same
//! for the grouped bound (n + 1)β + (2^{n+1}/n + 2n)mτ.
//!
//! Volume: every node receives every other token exactly once: k(k − 1)m, optimal.
//!
//! Constraints: hypercube (no host). The class table has about 2^n/n entries and takes
//! O(n·2^n) to build, once per schedule; a program costs O(2^n log 2^n).

use std::sync::Arc;

use smallvec::smallvec;

use crate::algorithms::allgather::dimension_exchange::allgather_cube;
use crate::algorithms::allgather::tea1::{binomial, token_regions};
use crate::algorithms::fit::{self, Built};
use crate::algorithms::{Formula, Params};
use crate::cost::model::{Duplex, Model, Ports};
use crate::error::Error;
use crate::schedule::{Action, Buf, Op, Program, Rank, Region, Schedule, Step, StepStream};
use crate::topology::Hypercube;
use crate::verify::Problem;

/// One cyclic-shift class of n-bit words and the dimensions that carry its words.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Class {
    /// Its representative r: the largest rotation with bit 0 set.
    rep: u32,
    /// Its period p (p | n): the class is {S^d r : 0 ≤ d < p}.
    period: u32,
    /// Dimension d carries S^d r iff (d − start) mod n < p.
    start: u32,
}

/// Which dimension forwards each word, for every level: the classes of each level.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Plan {
    n: u32,
    /// `levels[i]`: the classes of the words with i ones, for i = 0..=n (level 0 is
    /// empty: nothing is sent at distance 0).
    levels: Vec<Vec<Class>>,
}

/// S^d w, the left cyclic shift by d of an n-bit word.
fn rotate(w: u32, d: u32, n: u32) -> u32 {
    if n == 0 {
        return w;
    }
    let d = d % n;
    if d == 0 {
        return w;
    }
    let mask = (1u32 << n) - 1;
    ((w << d) | (w >> (n - d))) & mask
}

impl Plan {
    /// The classes of every level; starts 0 (`balanced = false`, the paper's rule) or
    /// round robin (`balanced = true`).
    fn new(n: u32, balanced: bool) -> Plan {
        let mut levels: Vec<Vec<Class>> = vec![Vec::new(); n as usize + 1];
        if n > 0 {
            for w in 1u32..1 << n {
                // Keep w only if it is its class's least rotation; find its period.
                let mut period = n;
                let mut least = true;
                for p in 1..n {
                    let r = rotate(w, p, n);
                    if r < w {
                        least = false;
                        break;
                    }
                    if r == w {
                        period = p;
                        break;
                    }
                }
                if !least {
                    continue;
                }
                let rep = (0..period)
                    .map(|p| rotate(w, p, n))
                    .filter(|r| r & 1 == 1)
                    .max()
                    .expect("a non-zero word has a rotation ending in a one");
                levels[w.count_ones() as usize].push(Class {
                    rep,
                    period,
                    start: 0,
                });
            }
        }
        if balanced {
            // Round robin over the cycle of dimensions, across levels.
            let mut cursor = 0u32;
            for class in levels.iter_mut().flatten() {
                class.start = cursor;
                cursor = (cursor + class.period) % n;
            }
        }
        Plan { n, levels }
    }

    /// The words (relative to the receiver) of `level` that dimension `d` carries;
    /// none for levels 0 and above n.
    fn words(&self, level: u32, d: u32) -> impl Iterator<Item = u32> + '_ {
        let n = self.n;
        self.levels
            .get(level as usize)
            .into_iter()
            .flatten()
            .filter(move |c| (d + n - c.start) % n < c.period)
            .map(move |c| rotate(c.rep, d, n))
    }
}

/// The TEA2 schedule (all four variants).
#[derive(Clone, Debug)]
pub struct Tea2 {
    cube: Hypercube,
    m: u64,
    /// Eisenstat's grouping: n + 1 half steps, senders by parity.
    grouped: bool,
    plan: Arc<Plan>,
}

fn build_variant(
    problem: &Problem<'_>,
    cube: &Hypercube,
    name: &str,
    balanced: bool,
    grouped: bool,
) -> Result<Box<dyn Schedule>, Error> {
    let cube = allgather_cube(problem, *cube, name)?;
    Ok(Box::new(Tea2 {
        cube,
        m: problem.len,
        grouped,
        plan: Arc::new(Plan::new(cube.dim(), balanced)),
    }))
}

/// Build `tea2`, the paper's algorithm (each periodic class sent once).
pub fn build(problem: &Problem<'_>, _params: &Params, cube: &Hypercube) -> Built {
    build_variant(problem, cube, "tea2", false, false)
}

/// Build `tea2-balanced`: at most ⌈C(n, i)/n⌉ tokens per link in step i.
pub fn build_balanced(problem: &Problem<'_>, _params: &Params, cube: &Hypercube) -> Built {
    build_variant(problem, cube, "tea2-balanced", true, false)
}

/// Build `tea2-grouped`: Eisenstat's n + 1 half steps with the paper's classes.
pub fn build_grouped(problem: &Problem<'_>, _params: &Params, cube: &Hypercube) -> Built {
    build_variant(problem, cube, "tea2-grouped", false, true)
}

/// Build `tea2-grouped-balanced`: Eisenstat's n + 1 half steps with balanced classes.
pub fn build_grouped_balanced(problem: &Problem<'_>, _params: &Params, cube: &Hypercube) -> Built {
    build_variant(problem, cube, "tea2-grouped-balanced", true, true)
}

impl Schedule for Tea2 {
    fn nodes(&self) -> u32 {
        self.cube.nodes()
    }
    fn steps(&self) -> usize {
        let n = self.cube.dim() as usize;
        match (self.m, n, self.grouped) {
            (0, _, _) => 0,
            (_, 0, _) => 1,
            (_, _, false) => n,
            (_, _, true) => n + 1,
        }
    }
    fn program(&self, rank: Rank) -> Program {
        self.stream(rank).into_program()
    }
    fn stream(&self, rank: Rank) -> StepStream<'_> {
        let steps = (0..self.steps()).map(move |s| self.step(rank, s as u32));
        StepStream::new(rank, 0, steps)
    }
}

impl Tea2 {
    /// Step `s` of `rank`: the copy of `in` in step 0, then on every link the tokens
    /// of the step's levels that the link's dimension forwards.
    fn step(&self, rank: Rank, s: u32) -> Step {
        let (n, m) = (self.cube.dim(), self.m);
        let mut step = Step::default();
        if s == 0 {
            step.ops.push(Op::copy(
                Region::new(Buf::In, 0, m),
                Region::new(Buf::Out, rank as u64 * m, m),
            ));
        }
        if n == 0 {
            return step;
        }
        let parity = rank.count_ones() % 2;
        // Levels moved (relative to the receiver) and this node's role.
        let (levels, sends, recvs) = if self.grouped {
            let sender = parity == s % 2;
            ([s, s + 1], sender, !sender)
        } else {
            ([s + 1, 0], true, true)
        };
        for d in 0..n {
            let peer = rank ^ (1 << d);
            let words: Vec<u32> = levels.iter().flat_map(|&l| self.plan.words(l, d)).collect();
            if words.is_empty() {
                continue;
            }
            // The tokens at these distances from the peer that d forwards …
            if sends {
                let mut tokens: Vec<Rank> = words.iter().map(|&w| peer ^ w).collect();
                step.ops.push(Op::Send {
                    to: smallvec![peer],
                    from: token_regions(&mut tokens, m, Some(rank)),
                });
            }
            // … and those at these distances from this node, from the peer.
            if recvs {
                let mut tokens: Vec<Rank> = words.iter().map(|&w| rank ^ w).collect();
                step.ops.push(Op::Recv {
                    from: peer,
                    into: token_regions(&mut tokens, m, None),
                    action: Action::Place,
                });
            }
        }
        step
    }
}

/// Euler's totient.
fn totient(x: u32) -> u64 {
    (1..=x).filter(|&y| gcd(x, y) == 1).count() as u64
}

fn gcd(a: u32, b: u32) -> u32 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// N(n, i): the number of cyclic-shift classes of n-bit words with i ones (binary
/// necklaces), (1/n)Σ_{e | gcd(n, i)} φ(e)C(n/e, i/e); 0 for i = 0 and i > n (nothing
/// is sent at those levels).
fn necklaces(n: u32, i: u32) -> u64 {
    if i == 0 || i > n {
        return 0;
    }
    let g = gcd(n, i);
    // e | g, written without `%` (clippy's is_multiple_of needs Rust 1.87, MSRV 1.80).
    (1..=g)
        .filter(|&e| gcd(g, e) == e)
        .map(|e| totient(e) * binomial(n / e, i / e))
        .sum::<u64>()
        / n as u64
}

/// Tokens at level i that a node sends in one step (0 at levels 0 and above n).
fn level_words(n: u32, i: u32) -> u64 {
    if i == 0 {
        0
    } else {
        binomial(n, i)
    }
}

/// Links that carry a message at level i: n, except 1 for level n (the single word
/// 1^n) and 0 for the empty levels.
fn level_links(n: u32, i: u32) -> u64 {
    match i {
        0 => 0,
        i if i < n => n as u64,
        i if i == n => 1,
        _ => 0,
    }
}

/// One step's load: (busiest link's tokens, links used, tokens sent).
type Load = (u64, u64, u64);

/// The load of every step of a variant, from the closed forms of the module doc.
fn loads(n: u32, balanced: bool, grouped: bool) -> Vec<Load> {
    let busiest = |levels: &[u32]| -> u64 {
        if balanced {
            levels
                .iter()
                .map(|&i| level_words(n, i))
                .sum::<u64>()
                .div_ceil(n as u64)
        } else {
            levels.iter().map(|&i| necklaces(n, i)).sum()
        }
    };
    let step = |levels: &[u32]| -> Load {
        (
            busiest(levels),
            levels.iter().map(|&i| level_links(n, i)).max().unwrap_or(0),
            levels.iter().map(|&i| level_words(n, i)).sum(),
        )
    };
    if n == 0 {
        vec![]
    } else if grouped {
        (0..=n).map(|s| step(&[s, s + 1])).collect()
    } else {
        (1..=n).map(|i| step(&[i])).collect()
    }
}

/// The simulated time of a variant under `model` (rounds timing).
fn time(n: u32, m: u64, balanced: bool, grouped: bool, model: &Model) -> f64 {
    if m == 0 {
        return 0.0;
    }
    let (beta, tau, mf) = (model.beta(), model.tau(), m as f64);
    let one_side: f64 = loads(n, balanced, grouped)
        .into_iter()
        .map(|(busiest, links, words)| match model.ports {
            Ports::All => beta + busiest as f64 * mf * tau,
            Ports::One | Ports::Split { .. } => links as f64 * beta + words as f64 * mf * tau,
        })
        .sum();
    // Ungrouped, every node sends and receives in every step.
    if !grouped && model.duplex == Duplex::Half {
        2.0 * one_side
    } else {
        one_side
    }
}

/// Whether the paper's transfer term (2^{n+1}/n + 2n)mτ bounds a variant's: always for
/// the balanced ones, for the paper's classes iff 2(N(n) − 1) ≤ 2^{n+1}/n + 2n.
fn paper_bound_holds(n: u32, balanced: bool) -> bool {
    if n == 0 {
        return false;
    }
    let per_m: u64 = loads(n, balanced, false).iter().map(|l| l.0).sum();
    let bound = (1u64 << (n + 1)) as f64 / n as f64 + 2.0 * n as f64;
    2.0 * per_m as f64 <= bound
}

const REF_TEA2: &str = "Saad & Schultz 1985, §4.3, Algorithm TEA2";
const REF_45: &str = "Saad & Schultz 1985, §4.3, eq. (4.5)";
const REF_GROUPED: &str = "Saad & Schultz 1985, §4.3, TEA2 with Eisenstat's grouping";

fn variant_formulas(
    problem: &Problem<'_>,
    params: &Params,
    name: &str,
    balanced: bool,
    grouped: bool,
) -> Vec<Formula> {
    let Some(Ok(cube)) = fit::cube_of(problem).map(|c| allgather_cube(problem, c, name)) else {
        return vec![];
    };
    let (n, m) = (cube.dim(), problem.len);
    // Every link a step uses carries the same load both ways.
    let Some(model) = params.model.for_symmetric_links() else {
        return vec![];
    };
    let model = &model;
    let value = time(n, m, balanced, grouped, model);
    let mut v = Vec::new();
    let expr = match (grouped, model.ports, model.duplex, balanced) {
        (_, Ports::Split { .. }, _, _) | (_, _, Duplex::HalfLink, _) => return vec![],
        (false, Ports::All, Duplex::Full, false) => {
            "Σᵢ(β + N(n,i)mτ) = nβ + (N(n) − 1)mτ, N(n,i) classes of words with i ones"
        }
        (false, Ports::All, Duplex::Half, false) => {
            "2Σᵢ(β + N(n,i)mτ) = 2nβ + 2(N(n) − 1)mτ, N(n,i) classes of words with i ones"
        }
        (false, Ports::All, Duplex::Full, true) => "nβ + Σᵢ⌈C(n,i)/n⌉mτ",
        (false, Ports::All, Duplex::Half, true) => "2nβ + 2Σᵢ⌈C(n,i)/n⌉mτ",
        (false, Ports::One, Duplex::Full, _) => "(n² − n + 1)β + (2^n − 1)mτ (n ≥ 1)",
        (false, Ports::One, Duplex::Half, _) => "2(n² − n + 1)β + 2(2^n − 1)mτ (n ≥ 1)",
        (true, Ports::All, _, false) => {
            "(n + 1)β + 2(N(n) − 1)mτ, N(n) binary necklaces of length n (n ≥ 1)"
        }
        (true, Ports::All, _, true) => {
            "(n + 1)β + Σ_{s=0..n}⌈(C(n,s) + C(n,s+1))/n⌉mτ, C(n,0) := 0 (n ≥ 1)"
        }
        (true, Ports::One, _, _) => "(n² + 1)β + 2(2^n − 1)mτ (n ≥ 1)",
    };
    let reference = if grouped { REF_GROUPED } else { REF_TEA2 };
    v.push(Formula::exact(expr, reference, value));
    if model.ports == Ports::All && model.duplex == Duplex::Half && paper_bound_holds(n, balanced) {
        let (nf, beta, tau) = (n as f64, model.beta(), model.tau());
        let transfer = ((1u64 << (n + 1)) as f64 / nf + 2.0 * nf) * m as f64 * tau;
        v.push(if grouped {
            Formula::upper_bound(
                "(n + 1)β + [2^{n+1}/n + 2n]mτ",
                "Saad & Schultz 1985, §4.3, eq. (4.5) with (n + 1)β after grouping",
                (nf + 1.0) * beta + transfer,
            )
        } else {
            Formula::upper_bound(
                "2nβ + [2^{n+1}/n + 2n]mτ",
                REF_45,
                2.0 * nf * beta + transfer,
            )
        });
    }
    v
}

/// `tea2`'s exact time under each rule, and (4.5) under all ports, half duplex where
/// it holds (see the module doc).
pub fn formulas(problem: &Problem<'_>, params: &Params) -> Vec<Formula> {
    variant_formulas(problem, params, "tea2", false, false)
}

/// `tea2-balanced`'s exact time under each rule, and (4.5) under all ports, half duplex.
pub fn formulas_balanced(problem: &Problem<'_>, params: &Params) -> Vec<Formula> {
    variant_formulas(problem, params, "tea2-balanced", true, false)
}

/// `tea2-grouped`'s exact time under each rule, and the paper's (n + 1)β form under
/// all ports, half duplex where it holds.
pub fn formulas_grouped(problem: &Problem<'_>, params: &Params) -> Vec<Formula> {
    variant_formulas(problem, params, "tea2-grouped", false, true)
}

/// `tea2-grouped-balanced`'s exact time under each rule, and the paper's (n + 1)β form
/// under all ports, half duplex.
pub fn formulas_grouped_balanced(problem: &Problem<'_>, params: &Params) -> Vec<Formula> {
    variant_formulas(problem, params, "tea2-grouped-balanced", true, true)
}

#[cfg(test)]
mod tests {
    use super::*;
    /// `build` with the cube found first, as the registry hands it.
    fn build(problem: &Problem<'_>, params: &Params) -> crate::algorithms::fit::Built {
        crate::algorithms::fit::on_cube(super::build, problem, params)
    }
    /// `build_balanced` with the cube found first, as the registry hands it.
    fn build_balanced(problem: &Problem<'_>, params: &Params) -> crate::algorithms::fit::Built {
        crate::algorithms::fit::on_cube(super::build_balanced, problem, params)
    }
    /// `build_grouped` with the cube found first, as the registry hands it.
    fn build_grouped(problem: &Problem<'_>, params: &Params) -> crate::algorithms::fit::Built {
        crate::algorithms::fit::on_cube(super::build_grouped, problem, params)
    }
    /// `build_grouped_balanced` with the cube found first, as the registry hands it.
    fn build_grouped_balanced(
        problem: &Problem<'_>,
        params: &Params,
    ) -> Result<Box<dyn Schedule>, Error> {
        crate::algorithms::fit::on_cube(super::build_grouped_balanced, problem, params)
    }
    use crate::algorithms::{BuildFn, FormulaFn, FormulaKind};
    use crate::collective::Collective;
    use crate::cost::simulate;
    use crate::topology::Topology;
    use crate::verify::{verify, Strictness};

    const MODELS: [(Ports, Duplex); 4] = [
        (Ports::All, Duplex::Full),
        (Ports::All, Duplex::Half),
        (Ports::One, Duplex::Full),
        (Ports::One, Duplex::Half),
    ];

    type Variant = (&'static str, BuildFn, FormulaFn, bool, bool);
    const VARIANTS: [Variant; 4] = [
        ("tea2", build, formulas, false, false),
        (
            "tea2-balanced",
            build_balanced,
            formulas_balanced,
            true,
            false,
        ),
        ("tea2-grouped", build_grouped, formulas_grouped, false, true),
        (
            "tea2-grouped-balanced",
            build_grouped_balanced,
            formulas_grouped_balanced,
            true,
            true,
        ),
    ];

    fn cube(n: u32) -> Topology {
        format!("hypercube:{n}").parse().unwrap()
    }

    fn problem(topo: &Topology, m: u64) -> Problem<'_> {
        Problem {
            topology: topo,
            collective: Collective::Allgather,
            len: m,
            commutative: true,
            counts: None,
        }
    }

    fn model(ports: Ports, duplex: Duplex) -> Model {
        Model {
            ports,
            duplex,
            ..Model::new(1.0, 0.01).unwrap()
        }
    }

    /// Per step, the most tokens one message of `rank`'s program carries.
    fn busiest_per_step(prog: &Program, m: u64) -> Vec<u64> {
        prog.steps
            .iter()
            .map(|s| {
                s.ops
                    .iter()
                    .filter(|o| matches!(o, Op::Send { .. }))
                    .map(|o| o.message_len() / m)
                    .max()
                    .unwrap_or(0)
            })
            .collect()
    }

    #[test]
    fn every_variant_verifies_and_every_form_holds() {
        for (name, b, f, _, grouped) in VARIANTS {
            for n in 0..=8u32 {
                let topo = cube(n);
                for m in [0u64, 1, 7] {
                    let p = problem(&topo, m);
                    let sched = b(&p, &Params::default()).unwrap();
                    // At most one message per directed link per step; grouped: no node
                    // sends and receives in one step.
                    let strict = Strictness {
                        ports: Some(Ports::All),
                        duplex: grouped.then_some(Duplex::Half),
                        host_ports: None,
                    };
                    verify(p, sched.as_ref(), strict)
                        .unwrap_or_else(|v| panic!("{name}, n {n}, m {m}: {v}"));
                    for (ports, duplex) in MODELS {
                        let model = model(ports, duplex);
                        let t = simulate(&topo, sched.as_ref(), &model).time;
                        let params = Params {
                            model,
                            ..Params::default()
                        };
                        let forms = f(&p, &params);
                        assert_eq!(
                            forms
                                .iter()
                                .filter(|f| f.kind == FormulaKind::Exact)
                                .count(),
                            1,
                            "{name}"
                        );
                        for form in &forms {
                            assert!(
                                form.holds_for(t),
                                "{name}, n {n}, m {m}, {ports}/{duplex}: {} = {} but simulated {t}",
                                form.expr,
                                form.value
                            );
                        }
                        // Under all ports, half duplex, the paper's bound is returned
                        // (n ≤ 8 < 16: it holds for every variant).
                        if ports == Ports::All && duplex == Duplex::Half && n >= 1 {
                            assert!(
                                forms.iter().any(|f| f.kind == FormulaKind::UpperBound),
                                "{name}, n {n}: no (4.5)"
                            );
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn the_closed_forms_of_the_doc_hold() {
        // 2nβ + 2(N(n) − 1)mτ (tea2, all/half), (n + 1)β + 2(N(n) − 1)mτ (grouped), the
        // one-port forms, against the simulator.
        let binary_necklaces = [1u64, 2, 3, 4, 6, 8, 14, 20, 36];
        for n in 1..=8u32 {
            let topo = cube(n);
            let p = problem(&topo, 7);
            let (nf, mt) = (n as f64, 7.0 * 0.01);
            let k1 = ((1u64 << n) - 1) as f64;
            let nn = binary_necklaces[n as usize] as f64 - 1.0;
            let sim = |b: BuildFn, ports, duplex| {
                let s = b(&p, &Params::default()).unwrap();
                simulate(&topo, s.as_ref(), &model(ports, duplex)).time
            };
            let close = |a: f64, b: f64| (a - b).abs() < 1e-9 * a.max(1.0);
            assert!(close(
                sim(build, Ports::All, Duplex::Half),
                2.0 * nf + 2.0 * nn * mt
            ));
            assert!(close(sim(build, Ports::All, Duplex::Full), nf + nn * mt));
            assert!(close(
                sim(build_grouped, Ports::All, Duplex::Half),
                nf + 1.0 + 2.0 * nn * mt
            ));
            for b in [build, build_balanced] {
                assert!(close(
                    sim(b, Ports::One, Duplex::Full),
                    nf * nf - nf + 1.0 + k1 * mt
                ));
            }
            for b in [build_grouped, build_grouped_balanced] {
                for duplex in [Duplex::Full, Duplex::Half] {
                    assert!(close(
                        sim(b, Ports::One, duplex),
                        nf * nf + 1.0 + 2.0 * k1 * mt
                    ));
                }
            }
        }
    }

    #[test]
    fn class_tables_match_the_closed_forms() {
        for n in 1..=12u32 {
            for balanced in [false, true] {
                let plan = Plan::new(n, balanced);
                let mut seen = vec![0u32; 1 << n];
                for i in 1..=n {
                    assert_eq!(plan.levels[i as usize].len() as u64, necklaces(n, i));
                    let mut busiest = 0u64;
                    for d in 0..n {
                        let words: Vec<u32> = plan.words(i, d).collect();
                        for &w in &words {
                            assert_eq!(w.count_ones(), i);
                            assert_eq!(w >> d & 1, 1, "word {w:b} across dimension {d}");
                            seen[w as usize] += 1;
                        }
                        busiest = busiest.max(words.len() as u64);
                    }
                    let want = if balanced {
                        binomial(n, i).div_ceil(n as u64)
                    } else {
                        necklaces(n, i)
                    };
                    assert_eq!(busiest, want, "n {n}, i {i}, balanced {balanced}");
                }
                // Every non-zero word is forwarded by exactly one dimension.
                assert!(seen[1..].iter().all(|&c| c == 1), "n {n}");
                // Grouped pairs of levels.
                for s in 0..=n {
                    let busiest = (0..n)
                        .map(|d| plan.words(s, d).count() + plan.words(s + 1, d).count())
                        .max()
                        .unwrap() as u64;
                    assert_eq!(busiest, loads(n, balanced, true)[s as usize].0);
                }
            }
        }
    }

    #[test]
    fn paper_example_n5_i3() {
        // §4.3: "From Node 00001: {10101; 11001}, from 00010: {01011; 10011}, from
        // 00100: {10110; 00111}, from 01000: {01101; 01110}, from 10000: {11010; 11100}".
        let plan = Plan::new(5, false);
        let want = [
            [0b10101, 0b11001],
            [0b01011, 0b10011],
            [0b10110, 0b00111],
            [0b01101, 0b01110],
            [0b11010, 0b11100],
        ];
        for (d, w) in want.iter().enumerate() {
            let mut got: Vec<u32> = plan.words(3, d as u32).collect();
            got.sort_unstable();
            let mut w = w.to_vec();
            w.sort_unstable();
            assert_eq!(got, w, "dimension {d}");
        }
    }

    #[test]
    fn literal_rule_delivers_periodic_classes_n_over_p_times() {
        // The paper's rule moves S^{j−1}R(n, i) across every j = 1..n. For n = 4, i = 2,
        // R = {1001, 0101}: 0101 (period 2) would reach node 0000 twice, from 0001 and
        // 0100 (dimensions 0 and 2) — and the busiest link carries N(8, 4) = 10 > 9.
        let (n, i) = (4u32, 2u32);
        let plan = Plan::new(n, false);
        let mut count = vec![0u32; 1 << n];
        for c in &plan.levels[i as usize] {
            for d in 0..n {
                count[rotate(c.rep, d, n) as usize] += 1;
            }
        }
        assert_eq!(count[0b0101], 2);
        assert_eq!(count[0b1010], 2);
        assert_eq!(count[0b0011], 1);
        assert_eq!((necklaces(8, 4), binomial(8, 4).div_ceil(8)), (10, 9));
    }

    #[test]
    fn balancing_gains_at_n8() {
        let topo = cube(8);
        let p = problem(&topo, 7);
        let paper = build(&p, &Params::default()).unwrap();
        let bal = build_balanced(&p, &Params::default()).unwrap();
        for rank in [0, 37, 255] {
            let a = busiest_per_step(&paper.program(rank), 7);
            let b = busiest_per_step(&bal.program(rank), 7);
            assert_eq!(a, vec![1, 4, 7, 10, 7, 4, 1, 1]);
            assert_eq!(b, vec![1, 4, 7, 9, 7, 4, 1, 1]);
        }
        for (ports, duplex) in [(Ports::All, Duplex::Full), (Ports::All, Duplex::Half)] {
            let m = model(ports, duplex);
            let (ta, tb) = (
                simulate(&topo, paper.as_ref(), &m).time,
                simulate(&topo, bal.as_ref(), &m).time,
            );
            let gain = if duplex == Duplex::Half { 2.0 } else { 1.0 } * 7.0 * 0.01;
            assert!(tb < ta, "{ports}/{duplex}: {tb} vs {ta}");
            assert!((ta - tb - gain).abs() < 1e-9);
        }
    }

    #[test]
    fn the_paper_bound_fails_for_tea2_only_at_even_n_from_16() {
        for n in 1..=Hypercube::MAX_DIM {
            assert_eq!(paper_bound_holds(n, false), n < 16 || n % 2 == 1, "n = {n}");
            assert!(paper_bound_holds(n, true), "n = {n}");
        }
        // n = 16: 2(N(16) − 1) = 8230 > 2^17/16 + 32 = 8224.
        let total: u64 = (1..=16).map(|i| necklaces(16, i)).sum();
        assert_eq!(2 * total, 8230);
    }

    #[test]
    fn paper_loop_misses_level_n_for_even_n() {
        // The paper's grouped loop runs i = 0..⌊(n−1)/2⌋, half steps 0..=2⌊(n−1)/2⌋+1.
        // Its last half step for even n is odd → even; odd nodes would end with every
        // level ≤ n − 1 only. Our schedule's extra step n is even → odd, level n alone.
        for n in [2u32, 4, 6] {
            let paper_half_steps = 2 * ((n - 1) / 2 + 1);
            assert_eq!(paper_half_steps, n);
            let topo = cube(n);
            let p = problem(&topo, 1);
            let s = build_grouped(&p, &Params::default()).unwrap();
            assert_eq!(s.steps(), n as usize + 1);
            // Node 0 (even) sends only the level-n token in the last step.
            let last = &s.program(0).steps[n as usize];
            let sent: u64 = last.ops.iter().map(|o| o.message_len()).sum();
            assert_eq!(sent, 1);
        }
    }

    #[test]
    fn verify_n12_tea2() {
        let topo = cube(12);
        let p = problem(&topo, 1);
        let start = std::time::Instant::now();
        let sched = build(&p, &Params::default()).unwrap();
        let strict = Strictness {
            ports: Some(Ports::All),
            duplex: None,
            host_ports: None,
        };
        verify(p, sched.as_ref(), strict).unwrap();
        println!(
            "tea2 at n = 12: built and verified in {:?}",
            start.elapsed()
        );
    }
}
