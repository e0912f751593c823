//! Pairwise (sequential) gatherv: in step s (1..k − 1) rank root − s (mod k) sends its
//! c_r elements to the root: one message a step, so the root's single port is never
//! oversubscribed.
//!
//! Reference: MPI-3.1, §5.5 (`MPI_Gatherv`); Thakur, Rabenseifner & Gropp, IJHPCA 19(1),
//! 2005 (the pairwise order of their all-to-all, here with one receiver); Open MPI's
//! `ompi_coll_base_gather_intra_linear_sync` orders the senders the same way.
//!
//! Cost: k − 1 steps (one for the local copy when k = 1, none when every count is 0);
//! under every port rule and duplex Σ_{i≠root, c_i>0} (β + c_i τ): the step of a zero
//! block costs nothing. Volume Σ_{i≠root} c_i.
//!
//! Constraints: `complete:K`, any K ≥ 1, any root, any counts.

crate::algorithms::vcount::direct_algorithm!(
    "pairwise",
    OpKind::Gatherv,
    Order::Pairwise,
    "MPI-3.1 §5.5; Thakur, Rabenseifner & Gropp 2005, pairwise order"
);
