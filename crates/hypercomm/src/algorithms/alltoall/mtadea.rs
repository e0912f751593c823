//! Matrix Transposition by Alternate Direction Exchange (MTADEA).
//!
//! Reference: Saad & Schultz 1985 (YALEU/DCS/RR-428), §6, ALGORITHM MTADEA: for
//! i = 1, …, n, each node X with b_i(X) = 1 exchanges with X̄^i the off-diagonal blocks
//! of the 2 × 2 split along direction i, then each node transposes its blocks; each
//! step costs 2[(N²/4)/(k/2)·τ + β] and t_MTADEA = n[(N²/2^n)τ + 2β]. With m = N²/k²
//! elements per block this is n(2β + 2^n mτ).
//!
//! The paper's first step swaps the upper-right and lower-left quadrants of the whole
//! matrix, so direction 1 is the highest bit: we cross dimensions n − 1, n − 2, …, 0.
//! The schedule is [`super::dimension_exchange::DimensionExchange`] in that order (see
//! its bookkeeping): node X's `out` is row X of the block matrix; the step crossing
//! dimension d sends the 2^{n−1} columns whose bit d differs from X's (in 2^{n−1−d}
//! runs, one strided region) and fills them with the partner's (straight into `out` in
//! the first step, which sends from `in`; through `tmp` afterwards, as a receive may
//! not write what its step sends). Afterwards column C of node X holds A_{C,X}: block X of rank
//! C's `in`, exactly what the all-to-all wants. So the paper's final step, "transpose
//! the resulting A_{i,j} in each node", transposes the elements inside each
//! (N/k) × (N/k) block, which blocks of opaque elements do not need: at block
//! granularity it is the identity and the schedule has no final permutation.
//!
//! Two corrections to the statement (docs/errata.md): the blocks X̄^i sends are
//! A_{X̄^i,Y} with b_i(Y) = **1** (the paper writes 0: those are X̄^i's diagonal-quadrant
//! blocks, which stay), and A_{X,Y} lands in X̄^i's column Ȳ^i (the quadrant moves
//! whole, its inner blocks keep their places).
//!
//! Cost: n steps (one step of local copies when n = 0, none when m = 0); each node sends
//! one message of 2^{n−1} blocks and receives one per step. The paper's 2[β + 2^{n−1}mτ]
//! per step prices the send and the receive one after the other, i.e. half duplex:
//! n(2β + 2^n mτ) under `--duplex half`, and n(β + 2^{n−1}mτ) under full duplex, under
//! either port rule. Volume n·2^{2n−1}·m (every block crosses its Hamming distance).
//!
//! Constraints: hypercube.

use crate::algorithms::alltoall::dimension_exchange::{
    alltoall_cube, exchange_time, DimensionExchange,
};
use crate::algorithms::fit::{self, Built};
use crate::algorithms::{Formula, Params};
use crate::cost::model::Duplex;
use crate::topology::DimOrder;
use crate::topology::Hypercube;
use crate::verify::Problem;

/// Build the schedule.
pub fn build(problem: &Problem<'_>, _params: &Params, cube: &Hypercube) -> Built {
    let cube = alltoall_cube(problem, *cube, "mtadea")?;
    Ok(Box::new(DimensionExchange::new(
        cube,
        problem.len,
        DimOrder::Descending,
    )))
}

/// n(2β + 2^n mτ) under half duplex (§6, t_MTADEA), n(β + 2^{n−1}mτ) under full
/// duplex; both under either port rule.
pub fn formulas(problem: &Problem<'_>, params: &Params) -> Vec<Formula> {
    let Some(Ok(cube)) = fit::cube_of(problem).map(|c| alltoall_cube(problem, c, "mtadea")) else {
        return vec![];
    };
    let value = exchange_time(cube.dim(), problem.len, &params.model);
    vec![match params.model.duplex {
        Duplex::Half | Duplex::HalfLink => Formula::exact(
            "n(2β + 2^n mτ)",
            "Saad & Schultz 1985, §6, t_MTADEA = n[(N²/2^n)τ + 2β]",
            value,
        ),
        Duplex::Full => Formula::exact(
            "n(β + 2^{n−1}mτ)",
            "Saad & Schultz 1985, §6, MTADEA with each exchange's two transfers overlapped",
            value,
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
    use crate::algorithms::alltoall::dimension_exchange::test_support::{
        cube, has_exact, timed, verified,
    };
    use crate::collective::Collective;
    use crate::cost::model::Ports;
    use crate::schedule::{Buf, Op, Region};

    #[test]
    fn verifies_for_every_cube_up_to_7_and_every_length() {
        for n in 0..=7 {
            for m in [0, 1, 7] {
                let s = verified(build, Collective::Alltoall, n, m, false);
                assert_eq!(s.steps(), if m == 0 { 0 } else { n.max(1) as usize });
            }
        }
    }

    #[test]
    fn issue_form_holds_under_all_ports_half_duplex() {
        for n in 0..=7 {
            for m in [0, 1, 7] {
                for (ports, duplex, time, forms) in
                    timed(build, formulas, Collective::Alltoall, n, m)
                {
                    let want = match duplex {
                        Duplex::Half | Duplex::HalfLink => "n(2β + 2^n mτ)",
                        Duplex::Full => "n(β + 2^{n−1}mτ)",
                    };
                    assert!(has_exact(&forms, want), "{ports}/{duplex}: {forms:?}");
                    if ports == Ports::All && duplex == Duplex::Half {
                        let (k, m) = ((1u64 << n) as f64, m as f64);
                        let paper = if m == 0.0 {
                            0.0
                        } else {
                            n as f64 * (2.0 * 0.7 + k * m * 0.13)
                        };
                        assert!((time - paper).abs() < 1e-9, "{time} vs {paper}");
                    }
                }
            }
        }
    }

    #[test]
    fn first_step_swaps_the_off_diagonal_quadrants() {
        // n = 3, node 6 (b_{n−1} = 1): sends columns 0..4 (its lower-left quadrant) to 2.
        let topo = cube(3);
        let problem = Problem {
            topology: &topo,
            collective: Collective::Alltoall,
            len: 2,
            commutative: true,
            counts: None,
        };
        let p = build(&problem, &Params::default()).unwrap().program(6);
        let Op::Send { to, from } = &p.steps[0].ops[0] else {
            panic!("step 0 starts with a send")
        };
        assert_eq!(to[0], 2);
        assert_eq!(from.len(), 1);
        assert_eq!((from[0].off, from[0].len), (0, 8));
        // The last step crosses dimension 0 in four single-column runs: columns 1, 3,
        // 5, 7 (bit 0 unlike node 6's), one strided region.
        let Op::Send { to, from } = &p.steps[2].ops[0] else {
            panic!("step 2 starts with a send")
        };
        assert_eq!(to[0], 7);
        assert_eq!(from.as_slice(), &[Region::strided(Buf::Out, 2, 2, 4, 4)]);
    }

    #[test]
    fn verifies_at_n_10() {
        let start = std::time::Instant::now();
        verified(build, Collective::Alltoall, 10, 2, false);
        println!(
            "alltoall mtadea, hypercube:10, len 2: verified in {:?}",
            start.elapsed()
        );
    }
}
