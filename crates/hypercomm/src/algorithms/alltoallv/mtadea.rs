//! Alltoallv by MTADEA (Matrix Transposition by Alternate Direction Exchange): the
//! dimension exchange of variable blocks crossing the dimensions from the highest down.
//!
//! Reference: Saad & Schultz 1985 (YALEU/DCS/RR-428), §6, ALGORITHM MTADEA (its first
//! step swaps the quadrants of the whole matrix: direction 1 is the highest bit, see
//! [`crate::algorithms::alltoall::mtadea`] and its errata); with a k × k count matrix
//! (`MPI_Alltoallv`, MPI-3.1 §5.8), beyond the paper.
//!
//! The schedule is [`super::dimension_exchange`]'s with the order reversed: step t
//! crosses dimension d = n − 1 − t, and with S the dimensions crossed before it, column
//! C of node X holds C\[a\]\[b\], a = (X & !S) | (C & S), b = (C & !S) | (X & S); rows at
//! the prefix sums of their blocks, `in`, two banks of `tmp`, `out`.
//!
//! Cost: n steps (one step of a local copy when n = 0, none when every count is 0).
//! The same volume as the ascending exchange (each block crosses its Hamming
//! distance), but not the same steps: V_{X,t} now gathers the blocks bound across the
//! high dimension first, so which step waits for which block differs. Under full
//! duplex, either port rule, Σ_t max_X t(max(V_{X,t}, V_{X⊕2^d,t})), t(c) = β + cτ for
//! c > 0, else 0; under half duplex Σ_t max_X (t(V_{X,t}) + t(V_{X⊕2^d,t})). With equal
//! counts m: n(β + 2^{n−1}mτ), and n(2β + 2^n mτ) under half duplex (§6, t_MTADEA).
//!
//! Constraints: hypercube, any k × k counts (zeros allowed).

use crate::algorithms::alltoallv::dimension_exchange::{build_in, formulas_in};
use crate::algorithms::fit::Built;
use crate::algorithms::{Formula, Params};
use crate::topology::{DimOrder, Hypercube};
use crate::verify::Problem;

/// Build the schedule.
pub fn build(problem: &Problem<'_>, _params: &Params, cube: &Hypercube) -> Built {
    build_in(problem, ("mtadea", DimOrder::Descending), *cube)
}

/// Σ_t of step t's largest exchange, step t crossing dimension n − 1 − t.
pub fn formulas(problem: &Problem<'_>, params: &Params) -> Vec<Formula> {
    formulas_in(
        problem,
        params,
        ("mtadea", DimOrder::Descending),
        "Saad & Schultz 1985, §6, MTADEA, with a count matrix (MPI-3.1 §5.8)",
    )
}

#[cfg(test)]
mod tests {
    use crate::algorithms::vcount::test_support::{check_one, random_counts, same_as_fixed, Rng};
    use crate::algorithms::{find, Params};
    use crate::collective::{Collective, OpKind};
    use crate::counts::Counts;
    use crate::topology::{Hypercube, Topology};
    use crate::verify::Problem;

    /// On hypercube:0..4, random matrices with zeros: verified and equal to its form
    /// under every rule; with equal counts, the fixed-count MTADEA's time.
    #[test]
    fn verifies_meets_its_form_and_the_fixed_count_time() {
        let mut rng = Rng(0x3ad_ea62);
        for n in 0..=4 {
            let topo = Topology::hypercube(Hypercube::new(n).unwrap());
            for _ in 0..6 {
                let counts = random_counts(OpKind::Alltoallv, 1 << n, &mut rng);
                check_one(&topo, "mtadea", Collective::Alltoallv, &counts);
            }
            for m in [0, 1, 5] {
                same_as_fixed(&topo, "mtadea", Collective::Alltoallv, m);
            }
        }
    }

    /// The order is priced: on hypercube:2 with 9 elements from 0 to 3 and 5 from 2
    /// to 3, ascending sends 9 (0 → 1, with 2 → 3's 5 alongside) then 9 (1 → 3):
    /// 2β + 18τ; descending sends 9 (0 → 2) then 9 + 5 together (2 → 3): 2β + 23τ.
    /// Both verified and equal to the simulator (`check_one`).
    #[test]
    fn the_order_changes_the_steps() {
        let topo = Topology::hypercube(Hypercube::new(2).unwrap());
        let mut c = vec![vec![0u64; 4]; 4];
        (c[0][3], c[2][3]) = (9, 5);
        let counts = Counts::Matrix(c);
        let p = Problem {
            topology: &topo,
            collective: Collective::Alltoallv,
            len: counts.mean(),
            commutative: true,
            counts: Some(&counts),
        };
        let params = Params::default();
        let (beta, tau) = (params.model.beta(), params.model.tau());
        for (name, elems) in [("dimension-exchange", 18.0), ("mtadea", 23.0)] {
            check_one(&topo, name, Collective::Alltoallv, &counts);
            let f = find(OpKind::Alltoallv, name).unwrap().formulas(&p, &params)[0].value;
            let want = 2.0 * beta + elems * tau;
            assert!((f - want).abs() < 1e-9, "{name}: {f} vs {want}");
        }
    }
}
