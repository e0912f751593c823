//! Linear allgatherv: every rank sends its c_r elements to each of the k − 1 others in
//! one step, every send and receive posted at once.
//!
//! Reference: MPI-3.1, §5.7 (`MPI_Allgatherv`); Open MPI's
//! `ompi_coll_basic_allgatherv_intra` (every rank's block to every rank, posted at once).
//!
//! Cost: one step (none when every count is 0). All ports, full duplex:
//! β + τ·max_r c_r (k ≥ 2); one port, full duplex: max_i max((k − 1)(β + c_i τ),
//! Σ_{j≠i, c_j>0} (β + c_j τ)) with zero blocks free; under half duplex each node's two
//! sides add. Volume (k − 1)·Σ c_r, the least without multicast.
//!
//! Constraints: `complete:K`, any K ≥ 1, any counts (zeros allowed).

crate::algorithms::vcount::direct_algorithm!(
    "linear",
    OpKind::Allgatherv,
    Order::Linear,
    "MPI-3.1 §5.7; Open MPI basic allgatherv"
);
