//! Conjugate gradient on the 1-D Laplacian tridiag(−1, 2, −1), an SPD matrix, with rows
//! distributed in blocks: an all-gather of the direction p per iteration (for Ap) and
//! all-reduces of the inner products pᵀAp and rᵀr. Checks the solution against the
//! serial direct (tridiagonal) solve, within the bound the condition number gives, and
//! exits 1 on a mismatch.
//!
//! From seed 004: Saad & Schultz, *Data Communication in Parallel Architectures*, §1
//! (iterative solvers: distributed matrix–vector products and inner products).
//!
//! ```text
//! cargo run --release -p hypercomm-rt --example conjugate_gradient -- [ranks (4)] [all-gather algorithm (auto)] [n (200)]
//! ```

// The closures are not redundant: they make the generic kernel accept the threads
// transport of any lifetime.
#![allow(clippy::redundant_closure)]

mod apps;

fn main() -> std::process::ExitCode {
    apps::main(
        "conjugate_gradient",
        |comm, n, algo| apps::conjugate_gradient(comm, n, algo),
        200,
    )
}

#[test]
fn conjugate_gradient_every_algorithm() {
    apps::test_kernel(
        |comm, n, algo| apps::conjugate_gradient(comm, n, algo),
        hypercomm::collective::OpKind::Allgather,
        29,
    );
}
