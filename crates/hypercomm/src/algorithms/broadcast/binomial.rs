//! Broadcast over the binomial tree on ranks relative to the root, for any number of
//! ranks.
//!
//! Reference: Thakur, Rabenseifner & Gropp, "Optimization of Collective Communication
//! Operations in MPICH", IJHPCA 19(1), 2005, the broadcast section: the binomial tree
//! for short messages, lg p·(α + nβ) (MPICH's `MPIR_Bcast_intra_binomial`); Chan,
//! Heimlich, Purkayastha & van de Geijn, "Collective communication: theory, practice,
//! and experience", CCPE 19(13), 2007, the minimum-spanning-tree broadcast. It is also
//! the switch's recursive doubling of Saad & Schultz 1986 (seed 004), §3.2 (F), eq.
//! (3.23): "first send the data to one other node, then the two nodes send in parallel
//! to two other nodes, and so on", T²_{2,S} = log₂(k)(N/b_S + τ_S) with N = m; the
//! printed log₂k is ⌈log₂k⌉ when k is not a power of two (docs/errata.md, E51), so
//! (3.23) is exact for k = 2^n and a lower estimate otherwise.
//!
//! Rank r has the relative rank v = (r − root) mod k. With L = ⌈log₂k⌉, step s (0-based)
//! spans the distance c = 2^{L−1−s}: every relative rank v < c sends to v + c when
//! v + c < k. So v ≠ 0 receives in step L − 1 − j from v − 2^j, j the lowest set bit of
//! v, and forwards in the later steps to v + 2^i, i = j − 1, …, 0 (the `BinomialTree`
//! the scatter, gather and reduce of this family share).
//!
//! Cost: L steps (one step of the local copy when k = 1, none when m = 0). In each step
//! a node sends one message of m elements or receives one, never both, and the root
//! sends in every step (c < k): L(β + mτ) = ⌈log₂k⌉(β + mτ) under every port and
//! duplex rule. Volume (k − 1)m, the least possible.
//!
//! Constraints: `complete:K`, any K ≥ 1, any root.
//!
//! This file also holds what the algorithms for any number of ranks share: the
//! topology check (`complete_ranks`), ⌈log₂k⌉ (`ceil_log2`), the binomial tree and
//! the tests' support.

use crate::algorithms::{Formula, Params};
use crate::collective::{Collective, OpKind};
use crate::error::Error;
use crate::schedule::{Buf, Op, Program, Rank, Region, Schedule};

use crate::verify::Problem;

/// The number of ranks of a problem on `complete:K` whose collective must be of `kind`
/// (shared by the algorithms for any number of ranks); `algo` names the algorithm in
/// errors.
pub(crate) fn complete_ranks(
    problem: &Problem<'_>,
    algo: &str,
    kind: OpKind,
) -> Result<u32, Error> {
    if !problem.topology.is_single_hop() {
        return Err(Error::InvalidParameter {
            what: "--topology",
            reason: format!(
                "{algo} needs every pair of ranks linked (complete:K, bus:K, shm:K,S, switch:K)"
            ),
        });
    }
    let k = problem.topology.nodes();
    if problem.collective.kind() != kind {
        return Err(Error::InvalidParameter {
            what: "--op",
            reason: format!("{algo} performs {kind}, not {}", problem.collective),
        });
    }
    Ok(k)
}

/// ⌈log₂k⌉ (0 for k ≤ 1).
pub(crate) fn ceil_log2(k: u32) -> u32 {
    if k <= 1 {
        0
    } else {
        u32::BITS - (k - 1).leading_zeros()
    }
}

/// The binomial tree on the relative ranks 0..k of MPICH's binomial algorithms: v ≠ 0
/// hangs from v − 2^j, j the lowest set bit of v ([`level`](Self::level)); its children
/// are v + 2^i for i < j (every i < L = ⌈log₂k⌉ for the root) below k; its subtree is
/// the contiguous range [v, v + min(2^j, k − v)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct BinomialTree {
    k: u32,
    levels: u32,
}

impl BinomialTree {
    /// The tree on `k ≥ 1` ranks.
    pub(crate) fn new(k: u32) -> Self {
        BinomialTree {
            k,
            levels: ceil_log2(k),
        }
    }
    /// L = ⌈log₂k⌉: the tree's height and the number of steps of its algorithms.
    pub(crate) fn levels(&self) -> u32 {
        self.levels
    }
    /// j: the lowest set bit of v, L for the root. v's edge to its parent spans 2^j.
    pub(crate) fn level(&self, v: u32) -> u32 {
        if v == 0 {
            self.levels
        } else {
            v.trailing_zeros()
        }
    }
    /// The parent of `v`, none for the root.
    pub(crate) fn parent(&self, v: u32) -> Option<u32> {
        (v != 0).then(|| v - (1 << v.trailing_zeros()))
    }
    /// (i, v + 2^i) for the children of `v`, nearest first.
    pub(crate) fn children(&self, v: u32) -> impl Iterator<Item = (u32, u32)> {
        let k = self.k as u64;
        (0..self.level(v))
            .map(move |i| (i, v as u64 + (1u64 << i)))
            .take_while(move |&(_, c)| c < k)
            .map(|(i, c)| (i, c as u32))
    }
    /// The number of ranks in `v`'s subtree: min(2^j, k − v).
    pub(crate) fn subtree(&self, v: u32) -> u32 {
        (1u64 << self.level(v)).min((self.k - v) as u64) as u32
    }
}

/// The binomial broadcast schedule.
#[derive(Clone, Debug)]
pub struct BinomialBroadcast {
    k: u32,
    root: Rank,
    m: u64,
}

fn params(problem: &Problem<'_>) -> Result<(u32, Rank), Error> {
    broadcast_ranks(problem, "binomial")
}

/// The number of ranks and the root of a broadcast on `complete:K` (shared by the
/// broadcasts for any number of ranks); `algo` names the algorithm in errors.
pub(crate) fn broadcast_ranks(problem: &Problem<'_>, algo: &str) -> Result<(u32, Rank), Error> {
    let k = complete_ranks(problem, algo, OpKind::Broadcast)?;
    match problem.collective {
        Collective::Broadcast { root } => Ok((k, root)),
        _ => unreachable!("complete_ranks checked the kind"),
    }
}

/// Build the schedule.
pub fn build(problem: &Problem<'_>, _params: &Params) -> Result<Box<dyn Schedule>, Error> {
    let (k, root) = params(problem)?;
    Ok(Box::new(BinomialBroadcast {
        k,
        root,
        m: problem.len,
    }))
}

/// Steps of the binomial algorithms: L, at least 1 (the root's local copy), none when
/// m = 0.
pub(crate) fn tree_steps(k: u32, m: u64) -> usize {
    if m == 0 {
        0
    } else {
        (ceil_log2(k) as usize).max(1)
    }
}

impl Schedule for BinomialBroadcast {
    fn nodes(&self) -> u32 {
        self.k
    }
    fn steps(&self) -> usize {
        tree_steps(self.k, self.m)
    }
    fn program(&self, rank: Rank) -> Program {
        let (k, m) = (self.k, self.m);
        let mut prog = Program::new(rank, self.steps());
        if m == 0 {
            return prog;
        }
        let tree = BinomialTree::new(k);
        let levels = tree.levels();
        let v = (rank + k - self.root) % k;
        let abs = |u: u32| (u + self.root) % k;
        let out = Region::new(Buf::Out, 0, m);
        // The root sends its input and copies it; the others receive into `out` and
        // forward from there.
        let held = match tree.parent(v) {
            None => {
                let input = Region::new(Buf::In, 0, m);
                prog.push(0, Op::copy(input, out));
                input
            }
            Some(p) => {
                // Step L − 1 − j: the parent's edge spans 2^j.
                prog.push((levels - 1 - tree.level(v)) as usize, Op::recv(abs(p), out));
                out
            }
        };
        for (i, c) in tree.children(v) {
            prog.push((levels - 1 - i) as usize, Op::send(abs(c), held));
        }
        prog
    }
}

/// ⌈log₂k⌉(β + mτ), under every port and duplex rule.
pub fn formulas(problem: &Problem<'_>, params_: &Params) -> Vec<Formula> {
    let Ok((k, _)) = params(problem) else {
        return vec![];
    };
    let (beta, tau) = (params_.model.beta(), params_.model.tau());
    let value = ceil_log2(k) as f64 * (beta + problem.len as f64 * tau);
    let mut v = vec![Formula::exact(
        "⌈log₂k⌉(β + mτ)",
        "Thakur, Rabenseifner & Gropp 2005, broadcast: binomial tree, lg p(α + nβ)",
        if problem.len == 0 { 0.0 } else { value },
    )];
    if k >= 2 && problem.len > 0 {
        let printed = (k as f64).log2() * (beta + problem.len as f64 * tau);
        let (expr, eq) = (
            "log₂(k)(N/b_S + τ_S) as printed (3.23)",
            "Saad & Schultz 1986 (seed 004), §3.2 (F), eq. (3.23)",
        );
        v.push(if k.is_power_of_two() {
            Formula::exact(expr, eq, printed)
        } else {
            Formula::estimate(expr, eq, printed)
        });
    }
    v
}

/// What the tests of the algorithms for any number of ranks share: build through the
/// registry on `complete:k`, verify, time under every port and duplex rule and check
/// every closed form returned.
#[cfg(test)]
pub(crate) mod test_support {
    use crate::algorithms::{find, FormulaKind, Params};
    use crate::collective::{Collective, OpKind};
    use crate::cost::model::{Duplex, Model, Ports};
    use crate::cost::simulate;
    use crate::error::Error;
    use crate::schedule::Schedule;
    use crate::topology::Topology;
    use crate::verify::{verify, Problem, Strictness};

    /// The rank counts every algorithm is tested with: 1 to 17 and 32.
    pub fn ranks() -> impl Iterator<Item = u32> {
        (1..=17).chain([32])
    }

    /// The four port × duplex rules.
    pub const MODELS: [(Ports, Duplex); 4] = [
        (Ports::All, Duplex::Full),
        (Ports::All, Duplex::Half),
        (Ports::One, Duplex::Full),
        (Ports::One, Duplex::Half),
    ];

    /// `complete:k`.
    pub fn complete(k: u32) -> Topology {
        Topology::complete(k)
    }

    /// The collectives of `op` on k ranks: one per root.
    pub fn instances(op: OpKind, k: u32) -> Vec<Collective> {
        let roots = if op.has_root() { k } else { 1 };
        (0..roots)
            .map(|r| Collective::new(op, k, Some(r as u64), None, None).unwrap())
            .collect()
    }

    /// The problem of `collective` on `complete:k`.
    fn problem(topo: &Topology, collective: Collective, m: u64, commutative: bool) -> Problem<'_> {
        Problem {
            topology: topo,
            collective,
            len: m,
            commutative,
            counts: None,
        }
    }

    /// Build `name` for `collective` through the registry on `complete:k` and verify it
    /// (single port: at most one message sent and one received per node and step).
    pub fn verified(
        name: &str,
        collective: Collective,
        k: u32,
        m: u64,
        commutative: bool,
    ) -> Box<dyn Schedule> {
        let algo = find(collective.kind(), name).expect("registered");
        let topo = complete(k);
        let p = problem(&topo, collective, m, commutative);
        let sched = algo
            .build(&p, &Params::default())
            .unwrap_or_else(|e| panic!("{collective} on complete:{k}, len {m}: {e}"));
        assert_eq!(sched.nodes(), k);
        let strict = Strictness {
            ports: Some(Ports::One),
            duplex: None,
            host_ports: None,
        };
        if let Err(v) = verify(p, sched.as_ref(), strict) {
            panic!(
                "{}/{name}, {collective} on complete:{k}, len {m}, commutative {commutative}: {v}",
                collective.kind()
            );
        }
        sched
    }

    /// Time the schedule under every model (β = 0.7, τ = 0.13) and check that every form
    /// returned holds and that one of them is exact; the simulated times, in
    /// [`MODELS`] order.
    pub fn timed(name: &str, collective: Collective, k: u32, m: u64) -> Vec<f64> {
        let sched = verified(name, collective, k, m, true);
        let algo = find(collective.kind(), name).unwrap();
        let topo = complete(k);
        let p = problem(&topo, collective, m, true);
        let mut times = Vec::new();
        for (ports, duplex) in MODELS {
            let model = Model {
                ports,
                duplex,
                ..Model::new(0.7, 0.13).unwrap()
            };
            let time = simulate(&topo, sched.as_ref(), &model).time;
            let forms = algo.formulas(
                &p,
                &Params {
                    model,
                    ..Params::default()
                },
            );
            assert!(
                forms.iter().any(|f| f.kind == FormulaKind::Exact),
                "{collective} on complete:{k}, len {m}, {ports}/{duplex}: no exact form"
            );
            for f in &forms {
                assert!(
                    f.holds_for(time),
                    "{collective} on complete:{k}, len {m}, {ports}/{duplex}: {} ({:?}) = {} \
                     but simulated {time}",
                    f.expr,
                    f.kind,
                    f.value
                );
            }
            times.push(time);
        }
        times
    }

    /// For every rank count, every root and every length of `lens`: verify with a
    /// commutative operator, and with a non-commutative one when `ordered`; check the
    /// forms.
    pub fn check_all(op: OpKind, name: &str, lens: &[u64], ordered: bool) {
        for k in ranks() {
            for c in instances(op, k) {
                for &m in lens {
                    timed(name, c, k, m);
                    if ordered {
                        verified(name, c, k, m, false);
                    }
                }
            }
        }
    }

    /// `name` does not fit `hypercube:3`: the registry's build says so.
    pub fn refuses_hypercube(op: OpKind, name: &str) {
        let algo = find(op, name).expect("registered");
        let topo: Topology = "hypercube:3".parse().unwrap();
        assert!(algo.fits(&topo).is_err());
        let c = instances(op, 8)[0];
        match algo.build(&problem(&topo, c, 3, true), &Params::default()) {
            Err(Error::AlgorithmDoesNotFit { reason, .. }) => {
                assert!(reason.contains("complete:K"), "{reason}")
            }
            Err(e) => panic!("{op}/{name} on {topo}: wrong error {e}"),
            Ok(_) => panic!("{op}/{name} built a schedule on {topo}"),
        }
    }

    /// Build `name` for `collective` on `complete:k` (length 3) with a non-commutative
    /// operator, flip the side of the `nth` combine (received or local) of `rank`'s
    /// program and assert that the verifier catches it, and that the same programs pass
    /// with a commutative operator.
    pub fn flipped_is_caught(name: &str, collective: Collective, k: u32, rank: u32, nth: usize) {
        use crate::schedule::{materialize, Action, Op};
        use crate::verify::{verify_programs, ViolationKind};
        let algo = find(collective.kind(), name).expect("registered");
        let topo = complete(k);
        let p = problem(&topo, collective, 3, false);
        let mut s = materialize(algo.build(&p, &Params::default()).unwrap().as_ref());
        let action = s.programs[rank as usize]
            .steps
            .iter_mut()
            .flat_map(|st| st.ops.iter_mut())
            .filter_map(|op| match op {
                Op::Recv { action, .. } | Op::Local { action, .. } if *action != Action::Place => {
                    Some(action)
                }
                _ => None,
            })
            .nth(nth)
            .expect("the program has that combine");
        *action = match *action {
            Action::CombineLeft => Action::CombineRight,
            _ => Action::CombineLeft,
        };
        let v = verify_programs(p, &s.programs, s.steps, Strictness::default())
            .expect_err("a combine on the wrong side must be caught");
        assert_eq!(v.kind, ViolationKind::PostCondition, "{v}");
        let p = problem(&topo, collective, 3, true);
        verify_programs(p, &s.programs, s.steps, Strictness::default())
            .unwrap_or_else(|v| panic!("{collective}, k = {k}, rank {rank}: {v}"));
    }

    /// `name` refuses a non-commutative operator with the documented error.
    pub fn refuses_non_commutative(op: OpKind, name: &str) {
        let algo = find(op, name).expect("registered");
        for k in [1, 2, 5] {
            let topo = complete(k);
            let c = instances(op, k)[0];
            match algo.build(&problem(&topo, c, 3, false), &Params::default()) {
                Err(Error::InvalidParameter {
                    what: "--op",
                    reason,
                }) => {
                    assert!(reason.contains("commutative"), "{reason}")
                }
                Err(e) => panic!("{op}/{name}: wrong error {e}"),
                Ok(_) => panic!("{op}/{name} built a schedule for a non-commutative operator"),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::test_support::*;
    use super::*;
    use crate::algorithms::fitting;

    #[test]
    fn verifies_for_every_rank_count_and_root() {
        check_all(OpKind::Broadcast, "binomial", &[0, 1, 7], false);
    }

    #[test]
    fn takes_ceil_log2_k_steps_of_one_message() {
        for k in ranks() {
            let times = timed("binomial", Collective::Broadcast { root: k / 2 }, k, 7);
            let want = ceil_log2(k) as f64 * (0.7 + 7.0 * 0.13);
            for t in times {
                assert!((t - want).abs() < 1e-9, "k = {k}: {t} ≠ {want}");
            }
        }
    }

    #[test]
    fn refuses_a_hypercube() {
        refuses_hypercube(OpKind::Broadcast, "binomial");
    }

    #[test]
    fn the_tree_is_mpichs() {
        assert_eq!(
            (0..=9).map(ceil_log2).collect::<Vec<_>>(),
            [0, 0, 1, 2, 2, 3, 3, 3, 3, 4]
        );
        let t = BinomialTree::new(6);
        assert_eq!(t.children(0).collect::<Vec<_>>(), [(0, 1), (1, 2), (2, 4)]);
        assert_eq!(t.children(4).collect::<Vec<_>>(), [(0, 5)]);
        assert_eq!(t.children(2).collect::<Vec<_>>(), [(0, 3)]);
        assert_eq!(
            (0..6).map(|v| t.subtree(v)).collect::<Vec<_>>(),
            [6, 1, 2, 1, 2, 1]
        );
        assert_eq!(
            (0..6).map(|v| t.parent(v)).collect::<Vec<_>>(),
            [None, Some(0), Some(0), Some(2), Some(0), Some(4)]
        );
    }

    /// The runtime on k threads always finds an algorithm for every collective (but
    /// download, which needs a host: `hypercube:N+host`, and the transposition, which
    /// needs a square torus).
    #[test]
    fn every_collective_has_an_algorithm_for_any_number_of_ranks() {
        for k in [1, 2, 3, 5, 6, 7, 12, 13] {
            let topo = complete(k);
            let ops = OpKind::ALL.into_iter();
            let elsewhere = [OpKind::P2p, OpKind::Download, OpKind::Transpose];
            for op in ops.filter(|op| !elsewhere.contains(op)) {
                assert!(
                    !fitting(&topo, op).is_empty(),
                    "no algorithm for {op} on {topo}"
                );
            }
        }
    }
}
