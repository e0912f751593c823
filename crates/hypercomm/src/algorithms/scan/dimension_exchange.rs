//! Inclusive prefix reduction (scan) by dimension exchange, lowest dimension first.
//!
//! Reference: seed 001 (Wikipedia, *Hypercube (communication pattern)*), "Prefix sum":
//! x := m_i, σ := m_i; for 0 ≤ k ≤ d − 1: send σ to y = i XOR 2^k, receive m,
//! σ := σ ⊕ m, and if bit k of i is set, x := x ⊕ m; T = (T_start + m·T_byte) log p,
//! in our notation n(β + mτ).
//!
//! Before step k, σ is the combination of the aligned range of 2^k ranks through the
//! node and x that of the part of it up to the node. The partner's σ covers the
//! adjacent range: it combines into σ on the left when the partner's ranks are lower
//! (bit k of the node set) and on the right otherwise, and into x — on the left — only
//! in the first case. The seed's "σ ⊕ m" and "x ⊕ m" put m on the right, which is only
//! correct for a commutative operator (docs/errata.md); we keep rank order.
//!
//! Buffers: x is `out`; σ is `tmp[0..m]`. Step 0 sends `in` (both x and σ are still
//! the input) and receives into σ; later steps send σ, so they receive into
//! `tmp[m..2m]` (a receive may not write what its step sends) and combine from there
//! with local ops. The last step's σ is not needed and not computed; the seed's
//! exchange is kept, so nodes with bit n − 1 clear receive a value they do not use.
//!
//! Built by composition: step t is a two-node step on the edge K2 embedded across cube
//! dimension t (`schedule::compose::Embed::cube_dimension`), the n steps in sequence.
//!
//! Cost: n steps (one step of local copies when n = 0, none when m = 0); each node sends
//! and receives one message of m elements per step: n(β + mτ) under full duplex,
//! 2n(β + mτ) under half duplex, under either port rule. Volume n·2^n·m.
//!
//! Constraints: hypercube; any associative operator.

use crate::algorithms::allreduce::dimension_exchange::{
    exchange, exchange_formula, own_side, reduction_cube, side,
};
use crate::algorithms::fit::{self, Built};
use crate::algorithms::{Formula, Params};
use crate::collective::OpKind;
use crate::schedule::{Action, Buf, Op, Region};
use crate::topology::Hypercube;
use crate::verify::Problem;

/// Build the schedule: n exchange steps, each a two-node step embedded across one
/// cube dimension (`allreduce::dimension_exchange::exchange`).
pub fn build(problem: &Problem<'_>, _params: &Params, cube: &Hypercube) -> Built {
    let cube = reduction_cube(problem, *cube, "dimension-exchange", OpKind::Scan)?;
    let (n, m) = (cube.dim(), problem.len);
    let input = Region::new(Buf::In, 0, m);
    let x = Region::new(Buf::Out, 0, m);
    let sigma = Region::new(Buf::Tmp, 0, m);
    let got = Region::new(Buf::Tmp, m, m);
    let tmp_len = if n > 1 { 2 * m } else { m };
    let local = |from, into, action| Op::Local { from, into, action };
    exchange(&cube, m, input, x, tmp_len, |k, c| {
        let peer = 1 - c;
        let lower = c == 1;
        let last = k == n - 1;
        let mut ops = Vec::new();
        if k == 0 {
            // σ = x = in: send the input, receive the partner's into σ.
            ops.push(Op::send(peer, input));
            ops.push(Op::recv(peer, sigma));
            if lower {
                ops.push(Op::copy(sigma, x));
                ops.push(local(input, x, Action::CombineRight));
            } else {
                ops.push(Op::copy(input, x));
            }
            if !last {
                ops.push(local(input, sigma, own_side(c, peer)));
            }
        } else {
            ops.push(Op::send(peer, sigma));
            ops.push(Op::recv(peer, got));
            if lower {
                ops.push(local(got, x, Action::CombineLeft));
            }
            if !last {
                ops.push(local(got, sigma, side(c, peer)));
            }
        }
        ops
    })
}

/// n(β + mτ) under full duplex (seed 001), 2n(β + mτ) under half duplex; both under
/// either port rule.
pub fn formulas(problem: &Problem<'_>, params: &Params) -> Vec<Formula> {
    let Some(Ok(cube)) = fit::cube_of(problem)
        .map(|c| reduction_cube(problem, c, "dimension-exchange", OpKind::Scan))
    else {
        return vec![];
    };
    vec![exchange_formula(
        cube.dim(),
        problem.len,
        &params.model,
        "seed 001, Prefix sum: (T_start + m·T_byte) log p",
        "seed 001, Prefix sum, each exchange as two transfers (half duplex)",
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
        verify_all(build, |_| vec![Collective::Scan]);
    }

    #[test]
    fn a_combine_on_the_wrong_side_is_caught() {
        // Rank 1: x = in_0 ⊕ in_1 is built by combining in_1 on the right.
        flipped_is_caught(build, Collective::Scan, 3, (1, 0));
        // Rank 7: x = in_6 ⊕ in_7 in step 0, then σ of 4..5 and of 0..3 on the left
        // (combines 0, 2, 4; its σ's, 1 and 3, reach no x: ranks 5 and 3 have the
        // partner's bit clear).
        for nth in [0, 2, 4] {
            flipped_is_caught(build, Collective::Scan, 3, (7, nth));
        }
        // Rank 4: its first combine makes σ = in_4 ⊕ in_5, which rank 6's x receives
        // in step 1.
        flipped_is_caught(build, Collective::Scan, 3, (4, 0));
    }

    #[test]
    fn issue_form_holds_under_full_duplex() {
        for n in 0..=7 {
            for m in [0, 1, 7] {
                for (ports, duplex, _, forms) in timed(build, formulas, Collective::Scan, n, m) {
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
