//! Allgatherv by dimension exchange on a hypercube, lowest dimension first: n steps,
//! each node swapping everything it holds with its neighbour across one dimension.
//!
//! Reference: seed 001 (*Hypercube (communication pattern)*), "All-gather": for
//! 0 ≤ t < n exchange the accumulated data with i XOR 2^t; Saad & Schultz 1985 (seed
//! 000), §4.2 (the same exchange, ADEA); with per-rank counts, MPICH's recursive-doubling
//! `MPIR_Allgatherv_intra_recursive_doubling` (Thakur, Rabenseifner & Gropp, IJHPCA
//! 19(1), 2005, the allgather section).
//!
//! Before step t a node holds the blocks of its aligned t-subcube, ranks
//! [x & !(2^t − 1), + 2^t): with the blocks in rank order in `out`, one contiguous range,
//! so every message is one region of S_t(x) = Σ of those ranks' counts. Step 0 sends from
//! `in` and copies `in` to the node's place in `out`.
//!
//! Cost: n steps (none when every count is 0). The imbalance is priced: step t takes
//! the largest exchange, β + τ·max_x S_t(x) under full duplex (either port rule), so
//! Σ_{t<n} (β + τ·max over aligned 2^t-subcubes of their count sum) — n β + (2^n − 1)mτ
//! for even counts m, seed 001's form; under half duplex
//! Σ_t max_x (t(S_t(x)) + t(S_t(x XOR 2^t))), t(c) = β + cτ for c > 0, else 0. A skewed
//! vector pays its heaviest subcube in every step, where the ring pays its largest block
//! k − 1 times. Volume (2^n − 1)·Σ c.
//!
//! Constraints: hypercube (any labelling the topology's `cube()` finds: hypercube:N,
//! complete:2^N, …), any counts.

use crate::algorithms::fit::{self, Built};
use crate::algorithms::vcount::{stepped_formula, Blocks};
use crate::algorithms::{Formula, Params};
use crate::collective::OpKind;
use crate::error::Error;
use crate::schedule::{Buf, Op, Program, Rank, Region, Schedule};
use crate::topology::Hypercube;
use crate::verify::Problem;

/// The dimension-exchange allgatherv schedule.
#[derive(Clone, Debug)]
pub struct DimensionExchangeAllgatherv {
    cube: Hypercube,
    blocks: Blocks,
}

fn cube_and_blocks(problem: &Problem<'_>, cube: Hypercube) -> Result<(Hypercube, Blocks), Error> {
    if problem.collective.kind() != OpKind::Allgatherv {
        return Err(Error::InvalidParameter {
            what: "--op",
            reason: format!(
                "dimension-exchange performs allgatherv, not {}",
                problem.collective
            ),
        });
    }
    Ok((cube, Blocks::counted(problem)?))
}

/// Build the schedule.
pub fn build(problem: &Problem<'_>, _params: &Params, cube: &Hypercube) -> Built {
    let (cube, blocks) = cube_and_blocks(problem, *cube)?;
    Ok(Box::new(DimensionExchangeAllgatherv { cube, blocks }))
}

impl DimensionExchangeAllgatherv {
    /// The blocks node `x` holds before step `t`: its aligned 2^t-subcube's, in `out`.
    fn held(&self, x: Rank, t: u32) -> Region {
        let base = x & !((1u32 << t) - 1);
        let range = base..base + (1 << t);
        Region::new(Buf::Out, self.blocks.off(base), self.blocks.span(range))
    }
}

impl Schedule for DimensionExchangeAllgatherv {
    fn nodes(&self) -> u32 {
        self.cube.nodes()
    }
    fn steps(&self) -> usize {
        if self.blocks.is_empty() {
            0
        } else {
            (self.cube.dim() as usize).max(1)
        }
    }
    fn program(&self, rank: Rank) -> Program {
        let mut prog = Program::new(rank, self.steps());
        if self.steps() == 0 {
            return prog;
        }
        let own = Region::new(Buf::In, 0, self.blocks.len(rank));
        if own.len > 0 {
            prog.push(0, Op::copy(own, self.held(rank, 0)));
        }
        for t in 0..self.cube.dim() {
            let peer = self.cube.neighbor(rank, t);
            let mine = if t == 0 { own } else { self.held(rank, t) };
            if mine.len > 0 {
                prog.push(t as usize, Op::send(peer, mine));
            }
            let theirs = self.held(peer, t);
            if theirs.len > 0 {
                prog.push(t as usize, Op::recv(peer, theirs));
            }
        }
        prog
    }
}

/// Σ_t of step t's largest exchange (full duplex) or largest send plus receive (half
/// duplex): S_t(x) the count sum of x's aligned 2^t-subcube.
pub fn formulas(problem: &Problem<'_>, params: &Params) -> Vec<Formula> {
    let Some(Ok((cube, blocks))) = fit::cube_of(problem).map(|c| cube_and_blocks(problem, c))
    else {
        return vec![];
    };
    let sum = |x: Rank, t: u32| {
        let base = x & !((1u32 << t) - 1);
        blocks.span(base..base + (1 << t))
    };
    stepped_formula(
        params,
        (cube.nodes(), cube.dim()),
        [
            "Σ_t (β + τ·max_x S_t(x)), S_t(x) the counts of x's 2^t-subcube",
            "Σ_t max_x (t(S_t(x)) + t(S_t(x ⊕ 2^t))), S_t(x) the counts of x's 2^t-subcube",
        ],
        "seed 001, All-gather, with per-rank counts (MPICH recursive-doubling allgatherv)",
        |t, x| (sum(x, t), sum(x ^ (1 << t), t)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::algorithms::vcount::test_support::check_one;
    use crate::collective::Collective;
    use crate::counts::Counts;
    use crate::topology::Topology;

    /// One heavy rank costs every step its subcube: on hypercube:3 with counts
    /// [40, 0, …, 0] each of the 3 steps moves 40 elements (β + 40τ), not the 40/8 of
    /// even counts; verified and equal to the simulator.
    #[test]
    fn a_heavy_rank_is_priced_in_every_step() {
        let topo = Topology::hypercube(Hypercube::new(3).unwrap());
        let counts = Counts::PerRank(vec![40, 0, 0, 0, 0, 0, 0, 0]);
        check_one(&topo, "dimension-exchange", Collective::Allgatherv, &counts);
        let p = Problem {
            topology: &topo,
            collective: Collective::Allgatherv,
            len: 5,
            commutative: true,
            counts: Some(&counts),
        };
        let f = &formulas(&p, &Params::default())[0];
        let model = Params::default().model;
        let want = 3.0 * (model.beta() + 40.0 * model.tau());
        assert!((f.value - want).abs() < 1e-9, "{} vs {want}", f.value);
    }
}
