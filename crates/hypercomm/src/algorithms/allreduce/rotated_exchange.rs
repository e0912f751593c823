//! All-reduce on every link at once: a reduce-scatter by recursive halving and an
//! all-gather by recursive doubling, each run as n exchanges of 1/n of the data whose
//! dimension orders are rotated, so that in every step the n exchanges use the n
//! different links.
//!
//! Reference: Johnsson & Ho, "Optimum broadcasting and personalized communication in
//! hypercubes", IEEE Trans. Computers 38(9), 1989 (reduction as the reverse of
//! broadcasting, with the data split over n rotated spanning binomial trees); the
//! composition reduce-scatter + all-gather is Rabenseifner's (Thakur, Rabenseifner &
//! Gropp 2005), here on all ports. The all-gather half is
//! [`crate::algorithms::allgather::rotated_exchange`].
//!
//! Schedule: the m elements are cut into k·n chunks ([`crate::algorithms::pipeline::packet`]`(m, kn, i)`,
//! the first m mod kn one element longer); part j is chunks jk .. (j + 1)k, and chunk
//! jk + P ends up reduced at the node X with rotr(X, j) = P (X's label rotated right by
//! j bits). Nothing requires chunk i to be reduced at rank i (the result is all of m
//! everywhere), so every range a node holds is a contiguous range of `out`. Step 0
//! copies `in` to `out`. Reduce-scatter step t (1 ≤ 1 + t ≤ n) of part j crosses
//! dimension (n − 1 − t + j) mod n, bit n − 1 − t of the rotated label: of the aligned
//! range of 2^{n−t} chunks the node still reduces, it sends the half not containing its
//! own chunk to the partner and combines the partner's partial of the other half into
//! its own. All-gather step t (n + 1 + t) crosses dimension (t + j) mod n: it sends the
//! aligned 2^t chunks it holds and receives the partner's, the adjacent ones.
//!
//! Cost (rounds model, `--ports all`, full duplex; m > 0, n ≥ 1; q = ⌊m/(kn)⌋,
//! r = m mod kn): the largest message of a step of c chunks is the part-0 range that
//! begins at chunk 0, cq + min(c, r) elements, and c takes each value 2^i twice:
//!
//! ```text
//! T = 2nβ + 2τ Σ_{i=0}^{n−1} (2^i q + min(2^i, r))
//! ```
//!
//! For kn | m: T = 2nβ + 2(k − 1)mτ/(kn), against the lower bound
//! nβ + 2(k − 1)mτ/(kn) of [`crate::bounds`] (one-way gossip: 2(k − 1) transmissions
//! per index): the ratio is below 1 + nβ/(2(k − 1)mτ/(kn)), 1.0001 once mτ/n ≥ 10⁴β.
//! Volume 2(k − 1)m over all nodes, the least any all-reduce moves. Memory: none.
//!
//! Constraints: hypercube; a commutative operator (the exchanges combine the ranks in a
//! rotated order, not in rank order).

use crate::algorithms::allreduce::dimension_exchange::reduction_cube;
use crate::algorithms::allreduce::ring::needs_commutative;
use crate::algorithms::fit::{self, Built};
use crate::algorithms::{Formula, Params};
use crate::collective::OpKind;
use crate::cost::model::{Duplex, Ports};
use crate::schedule::{Action, Buf, Op, Program, Rank, Region, Schedule};
use crate::topology::Hypercube;
use crate::verify::Problem;

use crate::algorithms::allgather::rotated_exchange::rotr;

/// The rotated all-port all-reduce.
#[derive(Clone, Debug)]
pub struct RotatedAllreduce {
    cube: Hypercube,
    m: u64,
}

/// Build the schedule.
pub fn build(problem: &Problem<'_>, _params: &Params, cube: &Hypercube) -> Built {
    let cube = reduction_cube(problem, *cube, "rotated-exchange", OpKind::Allreduce)?;
    needs_commutative(problem, "rotated-exchange")?;
    Ok(Box::new(RotatedAllreduce {
        cube,
        m: problem.len,
    }))
}

impl Schedule for RotatedAllreduce {
    fn nodes(&self) -> u32 {
        self.cube.nodes()
    }
    fn steps(&self) -> usize {
        match (self.m, self.cube.dim()) {
            (0, _) => 0,
            (_, 0) => 1,
            (_, n) => 2 * n as usize + 1,
        }
    }
    fn program(&self, rank: Rank) -> Program {
        let mut prog = Program::new(rank, self.steps());
        self.fill(&mut prog);
        prog
    }
    fn program_into(&self, rank: Rank, out: &mut Program) {
        out.reset(rank, self.steps());
        self.fill(out);
    }
}

impl RotatedAllreduce {
    /// Write the program of `prog.rank` into `prog`, an empty program of `steps()`
    /// steps.
    fn fill(&self, prog: &mut Program) {
        let rank = prog.rank;
        let (n, m) = (self.cube.dim(), self.m);
        if m == 0 {
            return;
        }
        prog.push(
            0,
            Op::copy(Region::new(Buf::In, 0, m), Region::new(Buf::Out, 0, m)),
        );
        if n == 0 {
            return;
        }
        let k = self.cube.nodes() as u64;
        let chunks = k * n as u64;
        let (q, r) = (m / chunks, m % chunks);
        let at = |i: u64| i * q + i.min(r);
        // Chunks [first, first + count) of `out`; `None` when they are all empty.
        let range = |first: u64, count: u64| {
            let (a, b) = (at(first), at(first + count));
            (b > a).then(|| Region::new(Buf::Out, a, b - a))
        };
        for j in 0..n {
            let me = rotr(rank as u64, j, n);
            let part = j as u64 * k;
            for t in 0..n {
                // Reduce-scatter: halve the aligned range of 2^{n−t} chunks.
                let c = 1u64 << (n - 1 - t);
                let peer = rank ^ (1 << ((n - 1 - t + j) % n));
                let kept = me & !(c - 1);
                let s = 1 + t as usize;
                if let Some(away) = range(part + (kept ^ c), c) {
                    prog.push(s, Op::send(peer, away));
                }
                if let Some(into) = range(part + kept, c) {
                    prog.push(
                        s,
                        Op::Recv {
                            from: peer,
                            into: smallvec::smallvec![into],
                            action: Action::CombineRight,
                        },
                    );
                }
                // All-gather: double the aligned range of 2^t chunks.
                let c = 1u64 << t;
                let peer = rank ^ (1 << ((t + j) % n));
                let held = me & !(c - 1);
                let s = 1 + (n + t) as usize;
                if let Some(from) = range(part + held, c) {
                    prog.push(s, Op::send(peer, from));
                }
                if let Some(into) = range(part + (held ^ c), c) {
                    prog.push(s, Op::recv(peer, into));
                }
            }
        }
    }
}

/// The exact time under all ports, full duplex (see the module doc).
pub(crate) fn time(n: u32, m: u64, beta: f64, tau: f64) -> f64 {
    if m == 0 || n == 0 {
        return 0.0;
    }
    let chunks = (1u64 << n) * n as u64;
    let (q, r) = (m / chunks, m % chunks);
    let elems: u64 = (0..n).map(|i| (1u64 << i) * q + (1u64 << i).min(r)).sum();
    2.0 * n as f64 * beta + 2.0 * elems as f64 * tau
}

/// The exact time under all ports, full duplex.
pub fn formulas(problem: &Problem<'_>, params: &Params) -> Vec<Formula> {
    let Some(Ok(cube)) = fit::cube_of(problem)
        .map(|c| reduction_cube(problem, c, "rotated-exchange", OpKind::Allreduce))
    else {
        return vec![];
    };
    if params.model.ports != Ports::All || params.model.duplex != Duplex::Full {
        return vec![];
    }
    vec![Formula::exact(
        "2nβ + 2τ Σ_{i<n} (2^i q + min(2^i, r)), q = ⌊m/(kn)⌋, r = m mod kn",
        "Johnsson & Ho 1989 (reduction as reversed broadcasting) with Rabenseifner's composition, on all ports (exact form: ours)",
        time(cube.dim(), problem.len, params.model.beta(), params.model.tau()),
    )]
}

#[cfg(test)]
mod tests {
    use super::*;
    /// `build` with the cube found first, as the registry hands it.
    fn build(problem: &Problem<'_>, params: &Params) -> crate::algorithms::fit::Built {
        crate::algorithms::fit::on_cube(super::build, problem, params)
    }
    use crate::collective::Collective;
    use crate::cost::model::Model;
    use crate::cost::simulate;
    use crate::topology::Topology;
    use crate::verify::{verify, Strictness};

    #[test]
    fn verifies_and_matches_the_exact_form() {
        let model = Model::new(1.0, 0.01).unwrap();
        let params = Params {
            model,
            ..Params::default()
        };
        for n in 0..=6 {
            let topo: Topology = format!("hypercube:{n}").parse().unwrap();
            for m in [0, 1, 5, 7, 64, 1001, 2 * 64 * 6] {
                let problem = Problem {
                    topology: &topo,
                    collective: Collective::Allreduce,
                    len: m,
                    commutative: true,
                    counts: None,
                };
                let s = build(&problem, &params).unwrap();
                let strict = Strictness {
                    ports: Some(Ports::All),
                    duplex: None,
                    host_ports: None,
                };
                verify(problem, s.as_ref(), strict).unwrap_or_else(|v| panic!("n={n} m={m}: {v}"));
                let t = simulate(&topo, s.as_ref(), &model).time;
                let f = &formulas(&problem, &params)[0];
                assert!(f.holds_for(t), "n={n} m={m}: {t} vs {f:?}");
            }
        }
    }

    #[test]
    fn refuses_a_non_commutative_operator() {
        let topo: Topology = "hypercube:2".parse().unwrap();
        let problem = Problem {
            topology: &topo,
            collective: Collective::Allreduce,
            len: 8,
            commutative: false,
            counts: None,
        };
        assert!(matches!(
            build(&problem, &Params::default()),
            Err(crate::error::Error::InvalidParameter { what: "--op", .. })
        ));
    }
}
