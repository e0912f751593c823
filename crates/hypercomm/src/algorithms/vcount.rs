//! What the variable-count algorithms share: the problem's block table
//! ([`Layout`], [`Blocks`]), the direct schedule of the linear and pairwise forms of
//! gatherv, scatterv, allgatherv and alltoallv ([`Direct`]: every block straight from
//! its sender to its receiver, all in one step or one peer distance a step), and their
//! exact closed forms over the actual counts.
//!
//! A block of zero elements is no message: both ends know every count (MPI requires the
//! same of `MPI_Alltoallv`'s matching counts), so neither posts it, and the simulator
//! charges it nothing.

use crate::algorithms::broadcast::binomial::complete_ranks;
use crate::algorithms::{Formula, Params};
use crate::collective::OpKind;
use crate::cost::model::{Duplex, Model, Ports};
use crate::counts::{prefix, Counts, Layout};
use crate::error::Error;
use crate::schedule::{Action, Buf, Op, Program, Rank, Region, Regions, Schedule};
use crate::verify::Problem;

/// The counts of `problem` (uniform `len` when it gives none), checked.
pub fn counts_of(problem: &Problem<'_>) -> Result<Counts, Error> {
    let k = problem.topology.nodes();
    match problem.counts {
        Some(c) => {
            c.check(problem.collective.kind(), k)?;
            Ok(c.clone())
        }
        None => Ok(Counts::uniform(problem.collective.kind(), k, problem.len)),
    }
}

/// The block table of a data-moving v-collective run by `algo` on `complete:K`.
pub fn layout(problem: &Problem<'_>, algo: &str, kind: OpKind) -> Result<Layout, Error> {
    let k = complete_ranks(problem, algo, kind)?;
    let root = problem.collective.root().unwrap_or(0);
    Layout::new(kind, root, k, &counts_of(problem)?).ok_or_else(|| Error::InvalidParameter {
        what: "--op",
        reason: format!("{algo} moves blocks; {kind} has none"),
    })
}

/// The blocks of a reduce-scatter: block b of every `in` is `len(b)` elements from
/// `off(b)`, and rank b's result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Blocks {
    prefix: Vec<u64>,
}

impl Blocks {
    /// k blocks of m elements.
    pub fn uniform(k: u32, m: u64) -> Self {
        Blocks {
            prefix: (0..=k as u64).map(|b| b * m).collect(),
        }
    }
    /// The blocks of a reduce-scatter or an allgatherv `problem` on `complete:K` run by
    /// `algo`: its counts, or k blocks of `len`.
    pub fn of(problem: &Problem<'_>, algo: &str, kind: OpKind) -> Result<(u32, Self), Error> {
        let k = complete_ranks(problem, algo, kind)?;
        Ok((k, Self::counted(problem)?))
    }
    /// The blocks of `problem` on any topology: its per-rank counts, or k blocks of
    /// `len`.
    pub fn counted(problem: &Problem<'_>) -> Result<Self, Error> {
        let k = problem.topology.nodes();
        Ok(match counts_of(problem)? {
            Counts::PerRank(c) if problem.collective.kind().is_varcount() => {
                Blocks { prefix: prefix(&c) }
            }
            _ => Blocks::uniform(k, problem.len),
        })
    }
    /// The elements of blocks `range` together, from `off(range.start)` on.
    pub fn span(&self, range: std::ops::Range<u32>) -> u64 {
        self.prefix[range.end as usize] - self.prefix[range.start as usize]
    }
    /// Offset of block b in `in`.
    pub fn off(&self, b: u32) -> u64 {
        self.prefix[b as usize]
    }
    /// Length of block b.
    pub fn len(&self, b: u32) -> u64 {
        self.prefix[b as usize + 1] - self.prefix[b as usize]
    }
    /// Block b of `in`.
    pub fn input(&self, b: u32) -> Region {
        Region::new(Buf::In, self.off(b), self.len(b))
    }
    /// The largest block.
    pub fn max(&self) -> u64 {
        (0..self.count()).map(|b| self.len(b)).max().unwrap_or(0)
    }
    /// The number of blocks.
    pub fn count(&self) -> u32 {
        self.prefix.len() as u32 - 1
    }
    /// Whether every block is empty.
    pub fn is_empty(&self) -> bool {
        self.prefix.last() == Some(&0)
    }
}

/// The exact time of a rotation over variable blocks: k − 1 steps, in step s
/// (0-based) rank r sends block `pair(s, r).0` and receives block `pair(s, r).1`, one
/// message each way: Σ_s max_r of max (full duplex) or sum (half duplex) of
/// t(send), t(receive), t(c) = β + cτ for c > 0, else 0; either port rule.
pub fn exchange_formulas(
    blocks: &Blocks,
    params: &Params,
    exprs: [&str; 2],
    reference: &'static str,
    pair: impl Fn(u32, u32) -> (u32, u32),
) -> Vec<Formula> {
    let k = blocks.count();
    stepped_formula(
        params,
        (k, k.saturating_sub(1)),
        exprs,
        reference,
        |s, r| {
            let (a, b) = pair(s, r);
            (blocks.len(a), blocks.len(b))
        },
    )
}

/// The exact time of `steps` steps on `k` ranks in which rank r sends one message of
/// `elems(s, r).0` elements and receives one of `elems(s, r).1` (0: no message): Σ_s
/// max_r of max (full duplex) or sum (half duplex) of t(sent), t(received), t(c) = β + cτ
/// for c > 0, else 0; either port rule. `exprs`: the full and half duplex forms.
pub fn stepped_formula(
    params: &Params,
    (k, steps): (u32, u32),
    exprs: [&str; 2],
    reference: &'static str,
    elems: impl Fn(u32, u32) -> (u64, u64),
) -> Vec<Formula> {
    let model = &params.model;
    if matches!(model.ports, Ports::Split { .. }) || model.duplex == Duplex::HalfLink {
        return vec![];
    }
    let t = |c: u64| match c {
        0 => 0.0,
        c => model.beta() + c as f64 * model.tau(),
    };
    let half = model.duplex == Duplex::Half;
    let step = |s: u32| {
        (0..k)
            .map(|r| {
                let (a, b) = elems(s, r);
                if half {
                    t(a) + t(b)
                } else {
                    t(a).max(t(b))
                }
            })
            .fold(0.0, f64::max)
    };
    let value = (0..steps).map(step).sum();
    vec![Formula::exact(exprs[usize::from(half)], reference, value)]
}

/// Append `r` to `regions` unless empty, merging it into the last one when contiguous:
/// the message of several variable blocks, zero-length blocks dropped (both ends know
/// every count, so both drop the same).
pub(crate) fn push_block(regions: &mut Regions, r: Region) {
    if r.len == 0 {
        return;
    }
    if let Some(last) = regions.last_mut() {
        if last.buf == r.buf && last.end() == r.off && !last.is_strided() && !r.is_strided() {
            last.len += r.len;
            return;
        }
    }
    regions.push(r);
}

/// Push one step's send of `from` to `to` and receive into `into` from `peer`, each
/// only when it carries an element.
pub(crate) fn push_exchange(
    prog: &mut Program,
    step: usize,
    (to, from): (Rank, Regions),
    (peer, into): (Rank, Regions),
) {
    if !from.is_empty() {
        prog.push(
            step,
            Op::Send {
                to: smallvec::smallvec![to],
                from,
            },
        );
    }
    if !into.is_empty() {
        prog.push(
            step,
            Op::Recv {
                from: peer,
                into,
                action: Action::Place,
            },
        );
    }
}

/// Whether the alltoallv algorithm `name`'s program on a rank reads only that rank's
/// row and column of the counts (the direct ones); the store-and-forward ones (`bruck`,
/// `dimension-exchange`, `mtadea`) carry other ranks' blocks and need the whole matrix.
pub fn alltoallv_reads_own_counts_only(name: &str) -> bool {
    matches!(name, "linear" | "pairwise")
}

/// How a [`Direct`] schedule orders its messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Order {
    /// Every message in one step (Open MPI's `basic_linear`: every receive and send
    /// posted at once, then a wait for all).
    Linear,
    /// Step s (1..k − 1): rank i sends to i + s and receives from i − s (mod k), the
    /// pairwise exchange of Thakur, Rabenseifner & Gropp 2005.
    Pairwise,
}

/// Every block straight from its sender to its receiver, in the [`Order`] given; the
/// own block is a local copy in the first step.
#[derive(Clone, Debug)]
pub struct Direct {
    layout: Layout,
    order: Order,
}

impl Direct {
    /// Build `algo` (`order`) for the data-moving v-collective `kind`.
    pub fn build(
        problem: &Problem<'_>,
        algo: &str,
        kind: OpKind,
        order: Order,
    ) -> Result<Box<dyn Schedule>, Error> {
        let layout = layout(problem, algo, kind)?;
        Ok(Box::new(Direct { layout, order }))
    }

    /// The step of the message at peer distance s ≥ 1.
    fn step_of(&self, s: u32) -> usize {
        match self.order {
            Order::Linear => 0,
            Order::Pairwise => s as usize - 1,
        }
    }
}

impl Schedule for Direct {
    fn nodes(&self) -> u32 {
        self.layout.nodes()
    }
    fn steps(&self) -> usize {
        let k = self.nodes() as usize;
        match (self.layout.is_empty(), self.order) {
            (true, _) => 0,
            (false, Order::Linear) => 1,
            (false, Order::Pairwise) => (k - 1).max(1),
        }
    }
    fn program(&self, rank: Rank) -> Program {
        let (l, k) = (&self.layout, self.nodes());
        let mut prog = Program::new(rank, self.steps());
        if self.steps() == 0 {
            return prog;
        }
        let send = |j: Rank| Region::new(Buf::In, l.src(rank, j), l.len(rank, j));
        let recv = |i: Rank| Region::new(Buf::Out, l.dst(i, rank), l.len(i, rank));
        if l.len(rank, rank) > 0 {
            prog.push(0, Op::copy(send(rank), recv(rank)));
        }
        for s in 1..k {
            let (to, from) = ((rank + s) % k, (rank + k - s) % k);
            if l.len(rank, to) > 0 {
                prog.push(self.step_of(s), Op::send(to, send(to)));
            }
            if l.len(from, rank) > 0 {
                prog.push(self.step_of(s), Op::recv(from, recv(from)));
            }
        }
        prog
    }
}

/// The registry's `build` and `formulas` of a [`Direct`] algorithm: `name`, the
/// collective, the [`Order`], the reference of its closed form.
macro_rules! direct_algorithm {
    ($name:literal, OpKind::$op:ident, Order::$order:ident, $reference:literal) => {
        use crate::algorithms::vcount::{direct_formulas, Direct, Order};
        use crate::algorithms::{Formula, Params};
        use crate::collective::OpKind;
        use crate::error::Error;
        use crate::schedule::Schedule;
        use crate::verify::Problem;

        /// Build the schedule (see [`Direct`]).
        pub fn build(problem: &Problem<'_>, _params: &Params) -> Result<Box<dyn Schedule>, Error> {
            Direct::build(problem, $name, OpKind::$op, Order::$order)
        }

        /// The exact time over the actual counts (see [`direct_formulas`]).
        pub fn formulas(problem: &Problem<'_>, params: &Params) -> Vec<Formula> {
            direct_formulas(
                problem,
                params,
                $name,
                OpKind::$op,
                Order::$order,
                $reference,
            )
        }
    };
}
pub(crate) use direct_algorithm;

/// One step's time for a node: its sends' and its receives' times (each the sum under
/// one port, the largest under all ports), joined by the duplex rule.
pub(crate) fn node_time(model: &Model, sends: &[u64], recvs: &[u64]) -> f64 {
    let t = |l: &u64| model.beta() + *l as f64 * model.tau();
    let side = |ls: &[u64]| -> f64 {
        let nz = ls.iter().filter(|&&l| l > 0);
        match model.ports {
            Ports::One => nz.map(t).sum(),
            _ => nz.map(t).fold(0.0, f64::max),
        }
    };
    match model.duplex {
        Duplex::Half => side(sends) + side(recvs),
        _ => side(sends).max(side(recvs)),
    }
}

/// The exact time of a [`Direct`] schedule on `complete:K` (rounds timing), from the
/// counts: linear, max_i of node i's time over its k − 1 sends and receives; pairwise,
/// Σ_{s=1}^{k−1} max_i of node i's time for its send to i + s and receive from i − s.
/// A node's time: β + lτ per non-empty message, summed under one port, the largest
/// under all ports; send and receive sides joined by max (full duplex) or + (half).
pub fn direct_formulas(
    problem: &Problem<'_>,
    params: &Params,
    algo: &str,
    kind: OpKind,
    order: Order,
    reference: &'static str,
) -> Vec<Formula> {
    let model = &params.model;
    if matches!(model.ports, Ports::Split { .. }) || model.duplex == Duplex::HalfLink {
        return vec![];
    }
    let Ok(l) = layout(problem, algo, kind) else {
        return vec![];
    };
    let k = l.nodes();
    let node = |i: Rank, dists: &[u32]| {
        let sends: Vec<u64> = dists.iter().map(|&s| l.len(i, (i + s) % k)).collect();
        let recvs: Vec<u64> = dists.iter().map(|&s| l.len((i + k - s) % k, i)).collect();
        node_time(model, &sends, &recvs)
    };
    let worst = |dists: &[u32]| (0..k).map(|i| node(i, dists)).fold(0.0, f64::max);
    let (expr, value) = match order {
        Order::Linear => {
            let all: Vec<u32> = (1..k).collect();
            (
                "max_i t_i(all k − 1 sends, all k − 1 receives); t: Σ or max of β + c τ by ports, sides by duplex",
                worst(&all),
            )
        }
        Order::Pairwise => (
            "Σ_{s=1}^{k−1} max_i t_i(send to i + s, receive from i − s); t: β + c τ, sides by duplex",
            (1..k).map(|s| worst(&[s])).sum(),
        ),
    };
    vec![Formula::exact(expr, reference, value)]
}

/// What the tests of the variable-count algorithms share.
#[cfg(test)]
pub(crate) mod test_support {
    use super::*;
    use crate::algorithms::{find, ALGORITHMS};
    use crate::collective::Collective;
    use crate::cost::simulate;
    use crate::topology::Topology;
    use crate::verify::{verify, Strictness};

    /// A small deterministic generator (xorshift), so the counts are random but the
    /// test repeatable.
    pub struct Rng(pub u64);
    impl Rng {
        pub fn next(&mut self, n: u64) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0 % n
        }
    }

    /// Random counts for `op` on k ranks, about a third of them zero.
    pub fn random_counts(op: OpKind, k: u32, rng: &mut Rng) -> Counts {
        let mut c = || {
            let x = rng.next(9);
            if x < 3 {
                0
            } else {
                x
            }
        };
        if op == OpKind::Alltoallv {
            Counts::Matrix((0..k).map(|_| (0..k).map(|_| c()).collect()).collect())
        } else {
            Counts::PerRank((0..k).map(|_| c()).collect())
        }
    }

    /// Every registered algorithm of the variable-count collective `op`, on 1 to 9
    /// ranks, every root, random counts with zeros (and all zero, and uniform): verified
    /// (one port), and every closed form it states checked against the simulator under
    /// all four port × duplex rules.
    pub fn check_op(op: OpKind) {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        let algos: Vec<_> = ALGORITHMS.iter().filter(|a| a.op == op).collect();
        assert!(!algos.is_empty(), "no algorithm for {op}");
        let complete = (1..=9u32).map(Topology::complete);
        let cubes =
            (0..=4u32).map(|n| Topology::hypercube(crate::topology::Hypercube::new(n).unwrap()));
        for topo in complete.chain(cubes) {
            let k = topo.nodes();
            let roots = if op.has_root() { k } else { 1 };
            for root in 0..roots {
                let collective = Collective::new(op, k, Some(root as u64), None, None).unwrap();
                for trial in 0..4 {
                    let counts = match trial {
                        0 => Counts::uniform(op, k, 0),
                        1 => Counts::uniform(op, k, 3),
                        _ => random_counts(op, k, &mut rng),
                    };
                    for algo in algos.iter().filter(|a| a.fits(&topo).is_ok()) {
                        check_one(&topo, algo.name, collective, &counts);
                    }
                }
            }
        }
    }

    /// With every count `m`, the v-algorithm `name` of `collective` takes the time of
    /// the fixed-count algorithm of the same name, by the simulator and by its closed
    /// form, under all four port × duplex rules.
    pub fn same_as_fixed(topo: &Topology, name: &str, collective: Collective, m: u64) {
        let (op, k) = (collective.kind(), topo.nodes());
        let counts = Counts::uniform(op, k, m);
        let p = Problem {
            topology: topo,
            collective,
            len: m,
            commutative: true,
            counts: Some(&counts),
        };
        let fixed = Problem {
            collective: collective.fixed(),
            counts: None,
            ..p
        };
        let (v, f) = (
            find(op, name).unwrap(),
            find(collective.fixed().kind(), name).unwrap(),
        );
        for (ports, duplex) in crate::algorithms::broadcast::binomial::test_support::MODELS {
            let params = Params {
                model: Model {
                    ports,
                    duplex,
                    ..Model::new(0.7, 0.13).unwrap()
                },
                ..Params::default()
            };
            let time = |a: &crate::algorithms::Algorithm, p: &Problem<'_>| {
                simulate(topo, a.build(p, &params).unwrap().as_ref(), &params.model).time
            };
            let (got, want) = (time(v, &p), time(f, &fixed));
            let form = v.formulas(&p, &params)[0].value;
            assert!(
                (got - want).abs() < 1e-9 && (form - want).abs() < 1e-9,
                "{op}/{name} on {k} nodes, m {m}, {ports}/{duplex}: simulated {got}, form {form}, fixed-count {want}"
            );
        }
    }

    /// Verify `name` on one problem and check its forms against the simulator.
    pub fn check_one(topo: &Topology, name: &str, collective: Collective, counts: &Counts) {
        let op = collective.kind();
        let algo = find(op, name).unwrap();
        let p = Problem {
            topology: topo,
            collective,
            len: counts.mean(),
            commutative: true,
            counts: Some(counts),
        };
        let s = algo.build(&p, &Params::default()).unwrap();
        let strict = Strictness {
            ports: Some(Ports::All),
            ..Strictness::default()
        };
        verify(p, s.as_ref(), strict)
            .unwrap_or_else(|v| panic!("{op}/{name} {collective} {counts:?}: {v}"));
        // What builds for a non-commutative operator keeps rank order.
        let ordered = Problem {
            commutative: false,
            ..p
        };
        if let Ok(s) = algo.build(&ordered, &Params::default()) {
            verify(ordered, s.as_ref(), strict)
                .unwrap_or_else(|v| panic!("{op}/{name} non-commutative {counts:?}: {v}"));
        }
        for (ports, duplex) in crate::algorithms::broadcast::binomial::test_support::MODELS {
            let model = Model {
                ports,
                duplex,
                ..Model::new(0.7, 0.13).unwrap()
            };
            let t = simulate(topo, s.as_ref(), &model).time;
            let params = Params {
                model,
                ..Params::default()
            };
            for f in algo.formulas(&p, &params) {
                assert!(
                    f.holds_for(t),
                    "{op}/{name} {counts:?}, {ports}/{duplex}: {} = {} but simulated {t}",
                    f.expr,
                    f.value
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::test_support::*;
    use super::*;
    use crate::algorithms::find;
    use crate::collective::Collective;
    use crate::topology::Topology;
    use crate::verify::{verify, Strictness, ViolationKind};

    #[test]
    fn every_variable_count_algorithm_verifies_and_meets_its_forms() {
        for op in OpKind::ALL.into_iter().filter(|o| o.is_varcount()) {
            check_op(op);
        }
    }

    /// The verifier proves the counts, not just the shape: a schedule built for other
    /// counts of the same total fails the post-condition (or a bound).
    #[test]
    fn a_schedule_for_other_counts_is_refused() {
        let topo = Topology::complete(3);
        let (a, b) = (
            Counts::PerRank(vec![2, 1, 3]),
            Counts::PerRank(vec![1, 2, 3]),
        );
        let mk = |c| Problem {
            topology: &topo,
            collective: Collective::Allgatherv,
            len: 2,
            commutative: true,
            counts: Some(c),
        };
        let s = find(OpKind::Allgatherv, "linear")
            .unwrap()
            .build(&mk(&a), &Params::default())
            .unwrap();
        let v = verify(mk(&b), s.as_ref(), Strictness::default()).unwrap_err();
        assert!(
            matches!(
                v.kind,
                ViolationKind::PostCondition | ViolationKind::OutOfBounds
            ),
            "{v}"
        );
        assert_eq!(s.nodes(), 3);
    }

    /// Counts that do not fit are a typed error from the registry's `build`.
    #[test]
    fn bad_counts_are_a_typed_error() {
        let topo = Topology::complete(4);
        let c = Counts::PerRank(vec![1, 2, 3]);
        let p = Problem {
            topology: &topo,
            collective: Collective::Gatherv { root: 0 },
            len: 2,
            commutative: true,
            counts: Some(&c),
        };
        let e = find(OpKind::Gatherv, "linear")
            .unwrap()
            .build(&p, &Params::default())
            .err()
            .unwrap();
        assert!(matches!(e, Error::BadCounts(_)), "{e}");
        assert!(
            e.to_string().contains("one count per rank, 4, got 3"),
            "{e}"
        );
    }
}
