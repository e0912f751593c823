//! Pairwise (sequential) scatterv: in step s (1..k − 1) the root sends rank root + s
//! (mod k) its c_r elements, one message a step.
//!
//! Reference: MPI-3.1, §5.6 (`MPI_Scatterv`); Thakur, Rabenseifner & Gropp 2005 (the
//! pairwise order, one sender).
//!
//! Cost: k − 1 steps; Σ_{j≠root, c_j>0} (β + c_j τ) under every port rule and duplex.
//! Volume Σ_{j≠root} c_j.
//!
//! Constraints: `complete:K`, any K ≥ 1, any root, any counts.

crate::algorithms::vcount::direct_algorithm!(
    "pairwise",
    OpKind::Scatterv,
    Order::Pairwise,
    "MPI-3.1 §5.6; Thakur, Rabenseifner & Gropp 2005, pairwise order"
);
