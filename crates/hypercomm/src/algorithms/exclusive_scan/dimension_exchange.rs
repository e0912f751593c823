//! Exclusive prefix reduction by dimension exchange, lowest dimension first.
//!
//! Reference: seed 001 (Wikipedia, *Hypercube (communication pattern)*), "Prefix sum",
//! with the prefix kept exclusive: the same exchanges of σ with i XOR 2^k, but x starts
//! empty instead of m_i, so rank r ends with in_0 ⊕ … ⊕ in_{r−1} (rank 0 with nothing:
//! its `out` is left undefined, as MPI_Exscan's is). n(β + mτ) under full duplex.
//!
//! Before step k, σ is the combination of the aligned range of 2^k ranks through the
//! node and x that of the part of it below the node (empty while the node's bits below
//! k are all clear). The partner's σ covers the adjacent range; when the partner's ranks
//! are lower (bit k set) it becomes x if x is still empty — at the node's lowest set bit
//! — and combines into x on the left otherwise; it combines into σ on its side.
//!
//! Buffers: x is `out`; σ is `tmp[0..m]`. Step 0 sends `in` (σ is still the input) and
//! receives into σ; later steps send σ, so they receive into `tmp[m..2m]` and combine
//! from there with local ops. The last step's σ is not computed.
//!
//! Cost: n steps (none when m = 0 or n = 0: the 0-cube's only rank gets nothing); each
//! node sends and receives one message of m elements per step: n(β + mτ) under full
//! duplex, 2n(β + mτ) under half duplex, under either port rule. Volume n·2^n·m.
//!
//! Constraints: hypercube; any associative operator.

use crate::algorithms::allreduce::dimension_exchange::{
    exchange_formula, own_side, reduction_cube, side,
};
use crate::algorithms::fit::{self, Built};
use crate::algorithms::{Formula, Params};
use crate::collective::OpKind;
use crate::schedule::{Action, Buf, Op, Program, Rank, Region, Schedule};
use crate::topology::Hypercube;
use crate::verify::Problem;

/// The dimension-exchange exclusive-scan schedule.
#[derive(Clone, Debug)]
pub struct DimensionExchange {
    cube: Hypercube,
    m: u64,
}

/// Build the schedule.
pub fn build(problem: &Problem<'_>, _params: &Params, cube: &Hypercube) -> Built {
    let cube = reduction_cube(problem, *cube, "dimension-exchange", OpKind::ExclusiveScan)?;
    Ok(Box::new(DimensionExchange {
        cube,
        m: problem.len,
    }))
}

impl Schedule for DimensionExchange {
    fn nodes(&self) -> u32 {
        self.cube.nodes()
    }
    fn steps(&self) -> usize {
        if self.m == 0 {
            0
        } else {
            self.cube.dim() as usize
        }
    }
    fn program(&self, rank: Rank) -> Program {
        let (n, m) = (self.cube.dim(), self.m);
        let mut prog = Program::new(rank, self.steps());
        if m == 0 || n == 0 {
            return prog;
        }
        let input = Region::new(Buf::In, 0, m);
        let x = Region::new(Buf::Out, 0, m);
        let sigma = Region::new(Buf::Tmp, 0, m);
        let got = Region::new(Buf::Tmp, m, m);
        prog.tmp_len = if n > 1 { 2 * m } else { m };
        let local = |from, into, action| Op::Local { from, into, action };
        // x is empty until the step of the lowest set bit (never, for rank 0).
        let first = rank.trailing_zeros();
        for k in 0..n {
            let s = k as usize;
            let peer = self.cube.neighbor(rank, k);
            let last = k == n - 1;
            let (sent, into) = if k == 0 { (input, sigma) } else { (sigma, got) };
            prog.push(s, Op::send(peer, sent));
            prog.push(s, Op::recv(peer, into));
            if peer < rank {
                prog.push(
                    s,
                    if k == first {
                        Op::copy(into, x)
                    } else {
                        local(into, x, Action::CombineLeft)
                    },
                );
            }
            if !last {
                prog.push(
                    s,
                    if k == 0 {
                        // σ holds the partner's input: combine this node's on its side.
                        local(input, sigma, own_side(rank, peer))
                    } else {
                        local(got, sigma, side(rank, peer))
                    },
                );
            }
        }
        prog
    }
}

/// n(β + mτ) under full duplex (seed 001's prefix sum), 2n(β + mτ) under half duplex;
/// both under either port rule.
pub fn formulas(problem: &Problem<'_>, params: &Params) -> Vec<Formula> {
    let Some(Ok(cube)) = fit::cube_of(problem)
        .map(|c| reduction_cube(problem, c, "dimension-exchange", OpKind::ExclusiveScan))
    else {
        return vec![];
    };
    vec![exchange_formula(
        cube.dim(),
        problem.len,
        &params.model,
        "seed 001, Prefix sum (exclusive): (T_start + m·T_byte) log p",
        "seed 001, Prefix sum (exclusive), each exchange as two transfers (half duplex)",
    )]
}

#[cfg(test)]
mod tests {
    use super::*;
    /// `build` with the cube found first, as the registry hands it.
    fn build(problem: &Problem<'_>, params: &Params) -> crate::algorithms::fit::Built {
        crate::algorithms::fit::on_cube(super::build, problem, params)
    }
    use crate::algorithms::allreduce::dimension_exchange::test_support::*;
    use crate::collective::Collective;
    use crate::cost::model::Duplex;

    #[test]
    fn verifies_in_rank_order_for_every_cube_up_to_7() {
        verify_all(build, |_| vec![Collective::ExclusiveScan]);
    }

    #[test]
    fn a_combine_on_the_wrong_side_is_caught() {
        // Rank 3: σ = in_2 ⊕ in_3, which reaches rank 7's x in step 2.
        flipped_is_caught(build, Collective::ExclusiveScan, 3, (3, 0));
        // Rank 4: σ = in_4 ⊕ in_5, which rank 6's x receives in step 1.
        flipped_is_caught(build, Collective::ExclusiveScan, 3, (4, 0));
        // Rank 7: x = in_6, then σ of 4..5 and of 0..3 on the left (combines 1 and 3;
        // 0 and 2 are its σ's, which reach no x).
        for nth in [1, 3] {
            flipped_is_caught(build, Collective::ExclusiveScan, 3, (7, nth));
        }
    }

    #[test]
    fn forms_hold_under_every_model() {
        for n in 0..=7 {
            for m in [0, 1, 7] {
                for (ports, duplex, _, forms) in
                    timed(build, formulas, Collective::ExclusiveScan, n, m)
                {
                    let want = match duplex {
                        Duplex::Full => "n(β + mτ)",
                        Duplex::Half => "2n(β + mτ)",
                        Duplex::HalfLink => continue,
                    };
                    assert!(has_exact(&forms, want), "{ports}/{duplex}: {forms:?}");
                }
            }
        }
    }
}
