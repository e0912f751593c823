//! Linear gatherv: every rank sends its c_r elements to the root in one step, the root
//! posting all k − 1 receives at once.
//!
//! Reference: MPI-3.1, §5.5 (`MPI_Gatherv`, the semantics: "as if" each rank sent and
//! the root received k messages); Open MPI's `ompi_coll_base_gatherv_intra_basic_linear`
//! (the root posts a receive per rank; what Open MPI runs for gatherv at every size);
//! Thakur, Rabenseifner & Gropp, IJHPCA 19(1), 2005 (MPICH's gatherv is linear: the
//! counts differ, so no tree can be balanced in advance).
//!
//! Block r (c_r elements) lands at Σ_{i<r} c_i of the root's `out`; the root copies its
//! own. A block of zero elements is no message.
//!
//! Cost: one step (none when every count is 0). All ports: β + τ·max_{i≠root, c_i>0} c_i
//! (doubled terms under half duplex only at the root, which only receives); one port:
//! Σ_{i≠root, c_i>0} (β + c_i τ), the root's receives one after another. Volume
//! Σ_{i≠root} c_i, the least possible.
//!
//! Constraints: `complete:K`, any K ≥ 1, any root, any counts (zeros allowed).

crate::algorithms::vcount::direct_algorithm!(
    "linear",
    OpKind::Gatherv,
    Order::Linear,
    "MPI-3.1 §5.5; Open MPI basic_linear gatherv"
);
