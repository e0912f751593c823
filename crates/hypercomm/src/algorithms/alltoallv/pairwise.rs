//! Pairwise alltoallv: in step s (1..k − 1) rank i sends C\[i\]\[i+s\] elements to i + s and
//! receives C\[i−s\]\[i\] from i − s (mod k), one message each way a step.
//!
//! Reference: MPI-3.1, §5.8 (`MPI_Alltoallv`); Thakur, Rabenseifner & Gropp, IJHPCA
//! 19(1), 2005, the pairwise exchange (MPICH's `MPIR_Alltoallv_intra_pairwise_sendrecv_replace`
//! and Open MPI's `ompi_coll_base_alltoallv_intra_pairwise` use this order).
//!
//! Cost: k − 1 steps; Σ_{s=1}^{k−1} max_i τ_s(i), τ_s(i) = max (full duplex) or sum (half)
//! of t(C\[i\]\[i+s\]) and t(C\[i−s\]\[i\]), t(c) = β + cτ for c > 0, else 0; the same under
//! either port rule. Each step waits for its largest block: a skewed matrix costs its
//! row maxima. Volume Σ_{i≠j} C\[i\]\[j\].
//!
//! Constraints: `complete:K`, any K ≥ 1, any k × k counts.

crate::algorithms::vcount::direct_algorithm!(
    "pairwise",
    OpKind::Alltoallv,
    Order::Pairwise,
    "MPI-3.1 §5.8; Thakur, Rabenseifner & Gropp 2005, pairwise exchange"
);
