//! Reduce-scatter by recursive halving, lowest dimension first.
//!
//! Reference: no seed states it; it is the recursive-halving reduce-scatter of R. Thakur,
//! R. Rabenseifner and W. Gropp, *Optimization of Collective Communication Operations
//! in MPICH*, IJHPCA 19(1), 2005 (the first half of Rabenseifner's all-reduce), on the
//! dimension-exchange pattern of seed 001: in step t each node exchanges with i XOR 2^t half of the blocks
//! it still reduces and combines the half it keeps. Rank r ends with block r of
//! in_0 ⊕ … ⊕ in_{k−1}.
//!
//! Rank order: before step t a node's partial blocks combine the inputs of the aligned
//! range of 2^t ranks through it, and the partner's those of the adjacent range, so the
//! received half combines on the left when the partner's ranks are lower (bit t set) and
//! on the right otherwise. Crossing the dimensions from the lowest is what makes these
//! ranges contiguous; from the highest, a node would combine ranks r and r + k/2 first,
//! which no order of later combines can repair for a non-commutative operator.
//!
//! Layout (bit-reversed, as in MPICH's reduce-scatter for non-commutative operators): after step 0 a node keeps the
//! 2^{n−1} blocks b with bit 0 of b equal to its own, at position rev_{n−1}(b >> 1) of
//! `tmp` (bit-reversed). Step t keeps the blocks whose bit t is the node's: with the
//! bit-reversed positions they are one half of the contiguous range it holds, so every
//! message of steps ≥ 1 is one region and the received half combines in place. Step 0
//! reads `in` directly: it sends the partner's 2^{n−1} blocks in the partner's position
//! order (one region each), receives into `tmp`, and combines its own input blocks into
//! them locally. The last step copies the one block left to `out`.
//!
//! Built by composition: step t is a two-node step embedded across cube dimension t
//! (`schedule::compose::Embed::cube_dimension`), its `tmp` regions moved by a map of
//! the rank's bits below t (the held range's start), the n steps in sequence.
//!
//! Cost: n steps (one step of local copies when n = 0, none when m = 0); step t sends and
//! receives one message of 2^{n−1−t} blocks: nβ + (2^n − 1)mτ under full duplex,
//! 2nβ + 2(2^n − 1)mτ under half duplex, under either port rule. Each node sends
//! (k − 1)m elements in all. Memory: `tmp` of 2^{n−1}m elements.
//!
//! Constraints: hypercube; any associative operator.

use smallvec::smallvec;

use crate::algorithms::allreduce::dimension_exchange::{
    exchange_mapped, own_side, reduction_cube, side,
};
use crate::algorithms::fit::{self, Built};
use crate::algorithms::{Formula, Params};
use crate::collective::OpKind;
use crate::cost::model::Duplex;
use crate::schedule::compose::{Pair, RegionMap};
use crate::schedule::{Buf, Op, Rank, Region, Regions};
use crate::topology::Hypercube;
use crate::verify::Problem;

/// Build the schedule: n exchange steps, each a two-node step embedded across one cube
/// dimension, step t's `tmp` placed by the rank's bits below t
/// (`allreduce::dimension_exchange::exchange_mapped`).
pub fn build(problem: &Problem<'_>, _params: &Params, cube: &Hypercube) -> Built {
    let cube = reduction_cube(problem, *cube, "recursive-halving", OpKind::ReduceScatter)?;
    let (n, m) = (cube.dim(), problem.len);
    let out = Region::new(Buf::Out, 0, m);
    let half = 1u64 << n.saturating_sub(1);
    let blocks = move |buf: Buf, first: u64, count: u64| Region::new(buf, first * m, count * m);
    // Block b (bit 0 of b = `bit`) of the position p of `tmp`.
    let block_at = move |p: u64, bit: u64| (rev(p, n - 1) << 1) | bit;
    exchange_mapped(&cube, m, Region::new(Buf::In, 0, m), out, |t| {
        let last = t + 1 == n;
        if t == 0 {
            // Step 0: the partner's blocks straight from `in`, in its position order.
            let side_ops = |c: Rank| {
                let (peer, x) = (1 - c, c as u64);
                let from: Regions = (0..half)
                    .map(|p| blocks(Buf::In, block_at(p, 1 - x), 1))
                    .collect();
                let mut ops = vec![
                    Op::Send {
                        to: smallvec![peer],
                        from,
                    },
                    Op::recv(peer, blocks(Buf::Tmp, 0, half)),
                ];
                ops.extend((0..half).map(|p| Op::Local {
                    from: blocks(Buf::In, block_at(p, x), 1),
                    into: blocks(Buf::Tmp, p, 1),
                    action: own_side(c, peer),
                }));
                if last {
                    ops.push(Op::copy(blocks(Buf::Tmp, 0, half), out));
                }
                ops
            };
            let pair = Pair::new([side_ops(0), side_ops(1)], half * m);
            return (pair, Box::new(|_, r| r) as RegionMap);
        }
        // Steps 1.. : halve the held range [lo, lo + size) of positions, lo from the
        // rank's bits 1..t (the map), the halves from bit t (the side).
        let size = 1u64 << (n - t);
        let side_ops = |c: Rank| {
            let (peer, mine) = (1 - c, c as u64);
            let kept = blocks(Buf::Tmp, mine * size / 2, size / 2);
            let other = blocks(Buf::Tmp, (1 - mine) * size / 2, size / 2);
            let mut ops = vec![
                Op::send(peer, other),
                Op::Recv {
                    from: peer,
                    into: smallvec![kept],
                    action: side(c, peer),
                },
            ];
            if last {
                ops.push(Op::copy(kept, out));
            }
            ops
        };
        let map: RegionMap = Box::new(move |rank, r| {
            let x = rank as u64;
            let lo = rev((x >> 1) & ((1 << (t - 1)) - 1), n - 1);
            match r.buf {
                Buf::Tmp => Region::new(Buf::Tmp, r.off + lo * m, r.len),
                _ => r,
            }
        });
        (Pair::new([side_ops(0), side_ops(1)], 0), map)
    })
}

/// The low `bits` bits of `x` in reverse order.
fn rev(x: u64, bits: u32) -> u64 {
    if bits == 0 {
        0
    } else {
        x.reverse_bits() >> (64 - bits)
    }
}

/// nβ + (2^n − 1)mτ under full duplex, twice that under half duplex; both under either
/// port rule.
pub fn formulas(problem: &Problem<'_>, params: &Params) -> Vec<Formula> {
    let Some(Ok(cube)) = fit::cube_of(problem)
        .map(|c| reduction_cube(problem, c, "recursive-halving", OpKind::ReduceScatter))
    else {
        return vec![];
    };
    let (n, m) = (cube.dim() as f64, problem.len as f64);
    let k = cube.nodes() as f64;
    let (beta, tau) = (params.model.beta(), params.model.tau());
    let one_way = if problem.len == 0 {
        0.0
    } else {
        n * beta + (k - 1.0) * m * tau
    };
    vec![match params.model.duplex {
        Duplex::Full => Formula::exact(
            "nβ + (2^n − 1)mτ",
            "Thakur, Rabenseifner & Gropp 2005, recursive halving",
            one_way,
        ),
        Duplex::Half | Duplex::HalfLink => Formula::exact(
            "2nβ + 2(2^n − 1)mτ",
            "Thakur, Rabenseifner & Gropp 2005, recursive halving, each exchange as two transfers (half duplex)",
            2.0 * one_way,
        ),
    }]
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

    #[test]
    fn verifies_in_rank_order_for_every_cube_up_to_7() {
        verify_all(build, |_| vec![Collective::ReduceScatter]);
    }

    #[test]
    fn a_combine_on_the_wrong_side_is_caught() {
        // Rank 0 combines its own blocks on the left of rank 1's in step 0 …
        flipped_is_caught(build, Collective::ReduceScatter, 3, (0, 0));
        // … and rank 5 its own on the right of rank 4's (four local combines), then
        // ranks 6..7's half on the right (step 1), ranks 0..3's on the left (step 2).
        for nth in [0, 3, 4, 5] {
            flipped_is_caught(build, Collective::ReduceScatter, 3, (5, nth));
        }
    }

    #[test]
    fn forms_hold_under_every_model() {
        for n in 0..=7 {
            for m in [0, 1, 7] {
                for (ports, duplex, _, forms) in
                    timed(build, formulas, Collective::ReduceScatter, n, m)
                {
                    let want = match duplex {
                        Duplex::Full => "nβ + (2^n − 1)mτ",
                        Duplex::Half | Duplex::HalfLink => "2nβ + 2(2^n − 1)mτ",
                    };
                    assert!(has_exact(&forms, want), "{ports}/{duplex}: {forms:?}");
                }
            }
        }
    }

    #[test]
    fn each_node_sends_k_minus_one_blocks() {
        let topo = cube(5);
        let problem = Problem {
            topology: &topo,
            collective: Collective::ReduceScatter,
            len: 3,
            commutative: false,
            counts: None,
        };
        let s = build(&problem, &Params::default()).unwrap();
        for r in 0..32 {
            let sent: u64 = s
                .program(r)
                .steps
                .iter()
                .flat_map(|st| &st.ops)
                .filter(|op| matches!(op, Op::Send { .. }))
                .map(Op::message_len)
                .sum();
            assert_eq!(sent, 31 * 3);
        }
    }
}
