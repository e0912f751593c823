//! All-gather around a ring, for any number of ranks.
//!
//! Reference: Thakur, Rabenseifner & Gropp, "Optimization of Collective Communication
//! Operations in MPICH", IJHPCA 19(1), 2005, the allgather section: the ring algorithm,
//! (p − 1)α + ((p − 1)/p)nβ for a total of n bytes (MPICH's
//! `MPIR_Allgather_intra_ring`); Chan et al., CCPE 19(13), 2007, the bucket
//! (cyclic) all-gather.
//!
//! In step s (0-based) rank r sends block (r − s) mod k to r + 1 and receives block
//! (r − s − 1) mod k from r − 1, into its place in `out`; step 0 sends `in` and copies it
//! to block r. After k − 1 steps every block has gone around.
//!
//! Cost: k − 1 steps (one step of the local copy when k = 1, none when m = 0); each node
//! sends one message of m elements and receives one per step: (k − 1)(β + mτ) under full
//! duplex, 2(k − 1)(β + mτ) under half duplex, under either port rule. Volume
//! k(k − 1)m, the least possible.
//!
//! Constraints: `complete:K`, any K ≥ 1 (a ring is enough: only links r → r + 1 are
//! used).

use crate::algorithms::broadcast::binomial::complete_ranks;
use crate::algorithms::{Formula, Params};
use crate::collective::OpKind;
use crate::cost::model::{Duplex, Model};
use crate::error::Error;
use crate::schedule::{Buf, Op, Program, Rank, Region, Schedule, Step, StepStream};
use crate::verify::Problem;

/// The ring all-gather schedule.
#[derive(Clone, Debug)]
pub struct RingAllgather {
    k: u32,
    m: u64,
}

/// Build the schedule.
pub fn build(problem: &Problem<'_>, _params: &Params) -> Result<Box<dyn Schedule>, Error> {
    let k = complete_ranks(problem, "ring", OpKind::Allgather)?;
    Ok(Box::new(RingAllgather { k, m: problem.len }))
}

/// Steps of the ring algorithms of `rounds` passes of k − 1 steps: at least 1 (the local
/// copy when k = 1), none when m = 0.
pub(crate) fn ring_steps(k: u32, m: u64, rounds: usize) -> usize {
    if m == 0 {
        0
    } else {
        (rounds * (k as usize - 1)).max(1)
    }
}

impl Schedule for RingAllgather {
    fn nodes(&self) -> u32 {
        self.k
    }
    fn steps(&self) -> usize {
        ring_steps(self.k, self.m, 1)
    }
    fn program(&self, rank: Rank) -> Program {
        self.stream(rank).into_program()
    }
    fn stream(&self, rank: Rank) -> StepStream<'_> {
        let steps = (0..self.steps()).map(move |s| self.step(rank, s as u32));
        StepStream::new(rank, 0, steps)
    }
}

impl RingAllgather {
    /// Step `s` of `rank`: the copy of `in` (step 0), then pass on the block received
    /// in the previous step (step 0: the input) and take the one before it.
    fn step(&self, rank: Rank, s: u32) -> Step {
        let (k, m) = (self.k, self.m);
        let block = |b: u32| Region::new(Buf::Out, b as u64 * m, m);
        let input = Region::new(Buf::In, 0, m);
        let mut step = Step::default();
        if s == 0 {
            step.ops.push(Op::copy(input, block(rank)));
        }
        if s + 1 >= k {
            return step;
        }
        let (next, prev) = ((rank + 1) % k, (rank + k - 1) % k);
        let from = if s == 0 {
            input
        } else {
            block((rank + k - s) % k)
        };
        step.ops.push(Op::send(next, from));
        step.ops
            .push(Op::recv(prev, block((rank + 2 * k - s - 1) % k)));
        step
    }
}

/// Time of `steps` steps in which every node sends one message of `len` elements and
/// receives one: steps·(β + len·τ) under full duplex, twice that under half duplex.
pub(crate) fn exchange_steps_time(steps: u64, len: u64, model: &Model) -> f64 {
    let one = steps as f64 * (model.beta() + len as f64 * model.tau());
    match model.duplex {
        Duplex::Full => one,
        // Half-link: as half, the same peer both ways (callers pass the node-level
        // rule, `Duplex::with_peers`).
        Duplex::Half | Duplex::HalfLink => 2.0 * one,
    }
}

/// (k − 1)(β + mτ) under full duplex, 2(k − 1)(β + mτ) under half duplex; either port
/// rule.
pub fn formulas(problem: &Problem<'_>, params: &Params) -> Vec<Formula> {
    exchange_steps_formulas(
        problem,
        params,
        ("ring", OpKind::Allgather),
        [
            "Thakur, Rabenseifner & Gropp 2005, allgather: ring, (p − 1)α + ((p − 1)/p)nβ",
            "Thakur, Rabenseifner & Gropp 2005, allgather: ring, each step's send and receive in turn (half duplex)",
        ],
    )
}

/// The closed forms of the k − 1 steps of `complete:k` in which every rank sends one
/// message of m elements and receives one (the ring and pairwise algorithms of
/// all-gather, all-to-all and reduce-scatter): (k − 1)(β + mτ) under full duplex,
/// 2(k − 1)(β + mτ) under half duplex, either port rule; none where `algo` does not
/// fit. `references` are the sources of the full- and the half-duplex form.
pub(crate) fn exchange_steps_formulas(
    problem: &Problem<'_>,
    params: &Params,
    algo: (&'static str, OpKind),
    references: [&'static str; 2],
) -> Vec<Formula> {
    let Ok(k) = complete_ranks(problem, algo.0, algo.1) else {
        return vec![];
    };
    let m = problem.len;
    // The ring sends to r + 1 and receives from r − 1, distinct peers when k > 2;
    // pairwise's step s has one peer when 2s ≡ 0 (mod k) and two otherwise, so under
    // half-link duplex its steps differ and no form is stated.
    let duplex = match (algo.0, params.model.duplex) {
        ("ring", d) => d.with_peers(k > 2),
        (_, Duplex::HalfLink) => return vec![],
        (_, d) => d,
    };
    let model = Model {
        duplex,
        ..params.model
    };
    let value = if m == 0 {
        0.0
    } else {
        exchange_steps_time(k as u64 - 1, m, &model)
    };
    vec![match duplex {
        Duplex::Full => Formula::exact("(k − 1)(β + mτ)", references[0], value),
        Duplex::Half | Duplex::HalfLink => Formula::exact("2(k − 1)(β + mτ)", references[1], value),
    }]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::algorithms::broadcast::binomial::test_support::*;

    #[test]
    fn verifies_for_every_rank_count() {
        check_all(OpKind::Allgather, "ring", &[0, 1, 7], false);
    }

    #[test]
    fn refuses_a_hypercube() {
        refuses_hypercube(OpKind::Allgather, "ring");
    }

    #[test]
    fn takes_k_minus_1_steps() {
        for k in ranks() {
            let t = timed("ring", crate::collective::Collective::Allgather, k, 7);
            let one = (k - 1) as f64 * (0.7 + 7.0 * 0.13);
            assert!((t[0] - one).abs() < 1e-9 && (t[1] - 2.0 * one).abs() < 1e-9);
        }
    }
}
