//! Linear alltoallv: every rank posts its k − 1 sends (C\[i\]\[j\] elements to j) and its
//! k − 1 receives at once, in one step.
//!
//! Reference: MPI-3.1, §5.8 (`MPI_Alltoallv`); Open MPI's
//! `ompi_coll_base_alltoallv_intra_basic_linear` (its default for alltoallv); Thakur,
//! Rabenseifner & Gropp, IJHPCA 19(1), 2005, the alltoall section (MPICH posts all
//! sends and receives at once for alltoallv).
//!
//! Block j of i's `in` lies at Σ_{j'<j} C\[i\]\[j'\], block i of j's `out` at
//! Σ_{i'<i} C\[i'\]\[j\] (MPI's displacements as the prefix sums).
//!
//! Cost: one step (none when every count is 0). All ports, full duplex:
//! β + τ·max_{i≠j, C\[i\]\[j\]>0} C\[i\]\[j\]; one port, full duplex: max_i max(Σ_{j≠i}
//! t(C\[i\]\[j\]), Σ_{j≠i} t(C\[j\]\[i\])), t(c) = β + cτ for c > 0, else 0; half duplex adds
//! the two sides. The imbalance is priced: the busiest row or column sets the time.
//! Volume Σ_{i≠j} C\[i\]\[j\].
//!
//! Constraints: `complete:K`, any K ≥ 1, any k × k counts (zeros allowed).

crate::algorithms::vcount::direct_algorithm!(
    "linear",
    OpKind::Alltoallv,
    Order::Linear,
    "MPI-3.1 §5.8; Open MPI basic_linear alltoallv"
);
