//! Linear scatterv: the root sends every rank its c_r elements (from Σ_{i<r} c_i of its
//! `in`) in one step, every send posted at once.
//!
//! Reference: MPI-3.1, §5.6 (`MPI_Scatterv`); Open MPI's
//! `ompi_coll_base_scatterv_intra_basic_linear`; Thakur, Rabenseifner & Gropp 2005
//! (MPICH's scatterv is linear).
//!
//! Cost: one step (none when every count is 0). All ports: β + τ·max_{j≠root, c_j>0} c_j;
//! one port: Σ_{j≠root, c_j>0} (β + c_j τ). Volume Σ_{j≠root} c_j.
//!
//! Constraints: `complete:K`, any K ≥ 1, any root, any counts (zeros allowed).

crate::algorithms::vcount::direct_algorithm!(
    "linear",
    OpKind::Scatterv,
    Order::Linear,
    "MPI-3.1 §5.6; Open MPI basic_linear scatterv"
);
