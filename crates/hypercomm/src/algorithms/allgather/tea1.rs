//! TEA1: the non-optimal Total Exchange Algorithm (every link busy at every step).
//!
//! Reference: Saad & Schultz 1985 (YALEU/DCS/RR-428), §4.3, Algorithm TEA1 and eq. (4.4):
//! "For i = 1, …, n, along every edge (A, B) in parallel: send from A to B all tokens T
//! such that H(T, B) = i" (and from B to A likewise). A *token* T is rank T's block,
//! block T of `out` (offset T·m, length m).
//!
//! Step i (0-based step i − 1) along the edge (A, B) of dimension d: A holds every token
//! within distance i − 1 (induction), and the tokens T with H(T, B) = i that it holds
//! are T = A ⊕ u with |u| = i − 1 and bit d of u clear: C(n−1, i−1) tokens, sent as ONE
//! message (a gather list, tokens in increasing order, consecutive blocks merged). In
//! step 0 the node's own token is read from `in` (the copy into `out` is a Local op of
//! the same step, which runs after the sends).
//!
//! Duplicates: a token at distance i from B arrives at B in step i once from each of
//! the i neighbours of B on a shortest path to it (the paper: "each token … will be
//! read i times in this node"). The IR forbids two receives into one region in a step
//! (verifier rule `Race`), so B places the copy coming across the LOWEST dimension in
//! which T and B differ into `out` and receives the i − 1 others into `tmp`, scratch
//! space that is never read (slots allocated in order within a step and reused from
//! step to step: `tmp` holds m·max_i (i − 1)·C(n, i) elements). The duplicates are the
//! algorithm's waste, and they are paid for in full by the cost model.
//!
//! Cost: every node sends and receives one message of C(n−1, i−1)·m elements on each of
//! its n links in step i, and Σ_i C(n−1, i−1) = 2^{n−1}:
//! - `--ports all --duplex full`: Σ_i (β + C(n−1,i−1)mτ) = nβ + 2^{n−1}mτ (derived here;
//!   the paper prices the exchange as two transfers);
//! - `--ports all --duplex half`: 2nβ + 2^n mτ, the paper's eq. (4.4), exactly;
//! - `--ports one`: the n messages of a step serialise: n²β + n·2^{n−1}mτ (full duplex),
//!   twice that under half duplex.
//!
//! Volume: k·Σ_i n·C(n−1,i−1)·m = k·n·2^{n−1}·m, n/2 times the k(k − 1)m an all-gather
//! must move (roughly).
//!
//! Constraints: hypercube (no host).

use smallvec::smallvec;

use crate::algorithms::allgather::dimension_exchange::allgather_cube;
use crate::algorithms::fit::{self, Built};
use crate::algorithms::{Formula, Params};
use crate::cost::model::{Duplex, Model, Ports};
use crate::schedule::{
    Action, Buf, Op, Program, Rank, Region, Regions, Schedule, Step, StepStream,
};
use crate::topology::Hypercube;
use crate::verify::Problem;

/// The TEA1 schedule.
#[derive(Clone, Debug)]
pub struct Tea1 {
    cube: Hypercube,
    m: u64,
}

/// Build the schedule.
pub fn build(problem: &Problem<'_>, _params: &Params, cube: &Hypercube) -> Built {
    let cube = allgather_cube(problem, *cube, "tea1")?;
    Ok(Box::new(Tea1 {
        cube,
        m: problem.len,
    }))
}

/// C(n, k) (0 when k > n).
pub(crate) fn binomial(n: u32, k: u32) -> u64 {
    if k > n {
        return 0;
    }
    let k = k.min(n - k) as u64;
    (0..k).fold(1u64, |c, j| c * (n as u64 - j) / (j + 1))
}

/// Append `r` to a gather list, merging it into the last region when they touch.
pub(crate) fn push_merged(list: &mut Regions, r: Region) {
    if let Some(last) = list.last_mut() {
        if last.buf == r.buf && last.end() == r.off {
            last.len += r.len;
            return;
        }
    }
    list.push(r);
}

/// The gather list of `tokens` (sorted here, at once if they are already), `m` elements each: block T of `out`, or
/// `in` for `own`, the node's own token (its `out` block may not be written yet).
pub(crate) fn token_regions(tokens: &mut [Rank], m: u64, own: Option<Rank>) -> Regions {
    tokens.sort_unstable();
    let mut list = Regions::new();
    for &t in tokens.iter() {
        let r = if Some(t) == own {
            Region::new(Buf::In, 0, m)
        } else {
            Region::new(Buf::Out, t as u64 * m, m)
        };
        push_merged(&mut list, r);
    }
    list
}

/// `x` with a zero bit inserted at position `d` (bits from `d` up move one place up).
fn spread(x: u32, d: u32) -> u32 {
    let low = (1u32 << d) - 1;
    (x & low) | ((x & !low) << 1)
}

/// The words T of `n` bits with bit `d` equal to `center`'s that differ from `center`
/// in exactly `w` bits, appended to `out` in increasing order: the tokens
/// `center ⊕ spread(x, d)` over the words x of n − 1 bits with w ones (Gosper's hack),
/// put in order through a bitmap of the 2^n words when n ≤ 12 (a few words scanned
/// per token), else sorted.
fn at_distance_sorted(center: u32, n: u32, d: u32, w: u32, out: &mut Vec<u32>) {
    let start = out.len();
    if w < n {
        let limit = 1u64 << (n - 1);
        let mut x = (1u64 << w) - 1;
        while x < limit {
            out.push(center ^ spread(x as u32, d));
            if x == 0 {
                break;
            }
            // Gosper's hack: the next word with as many ones.
            let c = x & x.wrapping_neg();
            let r = x + c;
            x = (((r ^ x) >> 2) / c) | r;
        }
    }
    if n <= 12 {
        let mut bits = [0u64; 64];
        for &t in &out[start..] {
            bits[(t >> 6) as usize] |= 1 << (t & 63);
        }
        out.truncate(start);
        for (i, &word) in bits.iter().enumerate().take((1usize << n).div_ceil(64)) {
            let mut word = word;
            while word != 0 {
                out.push((i as u32) << 6 | word.trailing_zeros());
                word &= word - 1;
            }
        }
    } else {
        out[start..].sort_unstable();
    }
}

impl Tea1 {
    /// Scratch blocks one step needs: the i − 1 duplicate copies of each of the C(n, i)
    /// tokens at distance i, maximised over i.
    fn tmp_blocks(&self) -> u64 {
        let n = self.cube.dim();
        (1..=n)
            .map(|i| (i as u64 - 1) * binomial(n, i))
            .max()
            .unwrap_or(0)
    }
}

impl Schedule for Tea1 {
    fn nodes(&self) -> u32 {
        self.cube.nodes()
    }
    fn steps(&self) -> usize {
        if self.m == 0 {
            0
        } else {
            (self.cube.dim() as usize).max(1)
        }
    }
    fn program(&self, rank: Rank) -> Program {
        self.stream(rank).into_program()
    }
    fn stream(&self, rank: Rank) -> StepStream<'_> {
        let steps = (0..self.steps()).map(move |s| self.step(rank, s as u32 + 1));
        StepStream::new(rank, self.tmp_blocks() * self.m, steps)
    }
}

impl Tea1 {
    /// Step i − 1 of `rank` (i = 1..=max(n, 1)): the exchange of the tokens at
    /// distance i on every link, after the copy of `in` in the first step.
    fn step(&self, rank: Rank, i: u32) -> Step {
        let (n, m) = (self.cube.dim(), self.m);
        let mut step = Step::default();
        if i == 1 {
            step.ops.push(Op::copy(
                Region::new(Buf::In, 0, m),
                Region::new(Buf::Out, rank as u64 * m, m),
            ));
        }
        if i > n {
            return step;
        }
        // Next free scratch block of this step.
        let mut slot = 0u64;
        let (mut mine, mut theirs) = (Vec::new(), Vec::new());
        for d in 0..n {
            let peer = rank ^ (1 << d);
            // Tokens rank ⊕ u, u with i − 1 ones and bit d clear, in increasing order.
            // Send to the peer every held token at distance i from it …
            mine.clear();
            at_distance_sorted(rank, n, d, i - 1, &mut mine);
            step.ops.push(Op::Send {
                to: smallvec![peer],
                from: token_regions(&mut mine, m, Some(rank)),
            });
            // … and receive the peer's, in the same (increasing token) order: into
            // `out` when d is the lowest dimension in which the token differs from
            // this node, else into a scratch block.
            theirs.clear();
            at_distance_sorted(peer, n, d, i - 1, &mut theirs);
            let below_d = (1u32 << d) - 1;
            let mut into = Regions::new();
            for &t in &theirs {
                let u = t ^ peer;
                let r = if u & below_d == 0 {
                    Region::new(Buf::Out, t as u64 * m, m)
                } else {
                    slot += 1;
                    Region::new(Buf::Tmp, (slot - 1) * m, m)
                };
                push_merged(&mut into, r);
            }
            step.ops.push(Op::Recv {
                from: peer,
                into,
                action: Action::Place,
            });
        }
        step
    }
}

/// The time of TEA1 under `model` (rounds timing): Σ_i of one step's cost, where a
/// node sends and receives C(n−1, i−1) tokens on each of its n links.
fn time(n: u32, m: u64, model: &Model) -> f64 {
    if m == 0 {
        return 0.0;
    }
    let (beta, tau) = (model.beta(), model.tau());
    let side: f64 = (1..=n)
        .map(|i| {
            let tokens = binomial(n - 1, i - 1) as f64 * m as f64;
            match model.ports {
                Ports::All => beta + tokens * tau,
                Ports::One | Ports::Split { .. } => n as f64 * (beta + tokens * tau),
            }
        })
        .sum();
    match model.duplex {
        Duplex::Full => side,
        Duplex::Half | Duplex::HalfLink => 2.0 * side,
    }
}

/// The exact time under each port and duplex rule; under `--ports all --duplex half` it
/// is the paper's eq. (4.4), 2nβ + 2^n mτ.
pub fn formulas(problem: &Problem<'_>, params: &Params) -> Vec<Formula> {
    let Some(Ok(cube)) = fit::cube_of(problem).map(|c| allgather_cube(problem, c, "tea1")) else {
        return vec![];
    };
    // Every link a step uses carries the same load both ways.
    let Some(model) = params.model.for_symmetric_links() else {
        return vec![];
    };
    let model = &model;
    let value = time(cube.dim(), problem.len, model);
    let (expr, reference) = match (model.ports, model.duplex) {
        (Ports::Split { .. }, _) | (_, Duplex::HalfLink) => return vec![],
        (Ports::All, Duplex::Half) => (
            "2nβ + 2^n mτ",
            "Saad & Schultz 1985, §4.3, eq. (4.4)",
        ),
        (Ports::All, Duplex::Full) => (
            "Σᵢ(β + C(n−1,i−1)mτ) = nβ + 2^{n−1}mτ (n ≥ 1)",
            "Saad & Schultz 1985, §4.3, eq. (4.4) with each exchange as one transfer (full duplex)",
        ),
        (Ports::One, Duplex::Full) => (
            "Σᵢ n(β + C(n−1,i−1)mτ) = n²β + n·2^{n−1}mτ (n ≥ 1)",
            "Saad & Schultz 1985, §4.3, TEA1 with the n links of a step serialised (one port)",
        ),
        (Ports::One, Duplex::Half) => (
            "2n²β + n·2^n mτ",
            "Saad & Schultz 1985, §4.3, TEA1 with the n links of a step serialised (one port, half duplex)",
        ),
    };
    vec![Formula::exact(expr, reference, value)]
}

#[cfg(test)]
mod tests {
    use super::*;
    /// `build` with the cube found first, as the registry hands it.
    fn build(problem: &Problem<'_>, params: &Params) -> crate::algorithms::fit::Built {
        crate::algorithms::fit::on_cube(super::build, problem, params)
    }
    use crate::algorithms::{FormulaKind, Params};
    use crate::collective::Collective;
    use crate::cost::model::Model;
    use crate::cost::simulate;
    use crate::topology::Topology;
    use crate::verify::{verify, Strictness};

    const MODELS: [(Ports, Duplex); 4] = [
        (Ports::All, Duplex::Full),
        (Ports::All, Duplex::Half),
        (Ports::One, Duplex::Full),
        (Ports::One, Duplex::Half),
    ];

    fn cube(n: u32) -> Topology {
        format!("hypercube:{n}").parse().unwrap()
    }

    #[test]
    fn tokens_at_a_distance_come_every_one_once_in_order() {
        for n in 1..=8u32 {
            for d in 0..n {
                for w in 0..=n {
                    for center in 0..1u32 << n {
                        let mut got = Vec::new();
                        at_distance_sorted(center, n, d, w, &mut got);
                        let want: Vec<u32> = (0..1u32 << n)
                            .filter(|t| {
                                (t ^ center).count_ones() == w && (t ^ center) >> d & 1 == 0
                            })
                            .collect();
                        assert_eq!(got, want, "n {n}, d {d}, w {w}, center {center}");
                    }
                }
            }
        }
        // Past 12 bits the tokens are sorted, not put through the bitmap.
        for (d, w, center) in [(0, 0, 0), (12, 1, 5), (5, 3, 8191), (7, 12, 4660)] {
            let mut got = vec![7];
            at_distance_sorted(center, 13, d, w, &mut got);
            let want: Vec<u32> = std::iter::once(7)
                .chain(
                    (0..1u32 << 13)
                        .filter(|t| (t ^ center).count_ones() == w && (t ^ center) >> d & 1 == 0),
                )
                .collect();
            assert_eq!(got, want, "n 13, d {d}, w {w}, center {center}");
        }
    }

    #[test]
    fn verifies_and_every_form_holds() {
        for n in 0..=8u32 {
            let topo = cube(n);
            for m in [0u64, 1, 7] {
                let problem = Problem {
                    topology: &topo,
                    collective: Collective::Allgather,
                    len: m,
                    commutative: true,
                    counts: None,
                };
                let base = Model::new(1.0, 0.01).unwrap();
                let sched = build(&problem, &Params::default()).unwrap();
                let strict = Strictness {
                    ports: Some(Ports::All),
                    duplex: None,
                    host_ports: None,
                };
                verify(problem, sched.as_ref(), strict)
                    .unwrap_or_else(|v| panic!("n {n}, m {m}: {v}"));
                for (ports, duplex) in MODELS {
                    let model = Model {
                        ports,
                        duplex,
                        ..base
                    };
                    let t = simulate(&topo, sched.as_ref(), &model).time;
                    let params = Params {
                        model,
                        ..Params::default()
                    };
                    let forms = formulas(&problem, &params);
                    assert_eq!(forms.len(), 1);
                    if (ports, duplex) == (Ports::All, Duplex::Half) {
                        assert_eq!(forms[0].expr, "2nβ + 2^n mτ");
                    }
                    for f in &forms {
                        assert_eq!(f.kind, FormulaKind::Exact);
                        assert!(
                            f.holds_for(t),
                            "n {n}, m {m}, {ports}/{duplex}: {} = {} but simulated {t}",
                            f.expr,
                            f.value
                        );
                    }
                    // The closed forms, evaluated directly.
                    let (nf, mf, k) = (n as f64, m as f64, (1u64 << n) as f64);
                    let closed = if m == 0 || n == 0 {
                        0.0
                    } else {
                        match (ports, duplex) {
                            (Ports::All, Duplex::Full) => nf + k / 2.0 * mf * 0.01,
                            (Ports::All, Duplex::Half) => 2.0 * nf + k * mf * 0.01,
                            (Ports::One, Duplex::Full) => nf * nf + nf * k / 2.0 * mf * 0.01,
                            (Ports::One, Duplex::Half) => 2.0 * nf * nf + nf * k * mf * 0.01,
                            _ => continue,
                        }
                    };
                    assert!((closed - t).abs() < 1e-9 * closed.max(1.0), "{n} {m} {t}");
                }
            }
        }
    }

    #[test]
    fn paper_example_node_000_reads_each_distance_2_token_twice() {
        // §4.3: in the 3-cube, node 000 receives {101, 011} from 001, {110, 011} from
        // 010 and {110, 101} from 100 in the second step.
        let topo = cube(3);
        let problem = Problem {
            topology: &topo,
            collective: Collective::Allgather,
            len: 1,
            commutative: true,
            counts: None,
        };
        let prog = build(&problem, &Params::default()).unwrap().program(0);
        let mut got: Vec<(Rank, Vec<(Buf, u64)>)> = prog.steps[1]
            .ops
            .iter()
            .filter_map(|op| match op {
                Op::Recv { from, into, .. } => Some((
                    *from,
                    into.iter()
                        .flat_map(|r| (r.off..r.end()).map(move |o| (r.buf, o)))
                        .collect(),
                )),
                _ => None,
            })
            .collect();
        got.sort();
        // The first copy (lowest differing dimension) goes to `out`, the other to `tmp`.
        assert_eq!(
            got,
            vec![
                (0b001, vec![(Buf::Out, 0b011), (Buf::Out, 0b101)]),
                (0b010, vec![(Buf::Tmp, 0), (Buf::Out, 0b110)]),
                (0b100, vec![(Buf::Tmp, 1), (Buf::Tmp, 2)]),
            ]
        );
    }
}
