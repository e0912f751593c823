//! Pairwise allgatherv: in step s (1..k − 1) rank i sends its c_i elements to i + s and
//! receives c_{i−s} from i − s (mod k).
//!
//! Reference: MPI-3.1, §5.7 (`MPI_Allgatherv`); Thakur, Rabenseifner & Gropp, IJHPCA
//! 19(1), 2005 (the pairwise exchange of their all-to-all; MPICH's allgatherv for long
//! messages is the ring, `ring` here, which sends the same blocks in the same number of
//! steps).
//!
//! Cost: k − 1 steps; full duplex, either port rule: (k − 1)(β + τ·max_r c_r) when some
//! count is positive (every block is in flight in every step); half duplex:
//! Σ_s max_i (t(c_i) + t(c_{i−s})), t(c) = β + cτ for c > 0, else 0. Volume
//! (k − 1)·Σ c_r.
//!
//! Constraints: `complete:K`, any K ≥ 1, any counts.

crate::algorithms::vcount::direct_algorithm!(
    "pairwise",
    OpKind::Allgatherv,
    Order::Pairwise,
    "MPI-3.1 §5.7; Thakur, Rabenseifner & Gropp 2005, pairwise exchange"
);
