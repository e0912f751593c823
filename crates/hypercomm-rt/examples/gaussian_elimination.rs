//! Gaussian elimination with partial pivoting on a dense random system, rows distributed
//! cyclically: at each step a max-loc all-reduce picks the pivot row and its owner
//! broadcasts it; back substitution broadcasts each x_s from its owner. Checks x against
//! the serial elimination (bitwise: the same operations in the same order) and the
//! backward error against the bound of partial pivoting, and exits 1 on a mismatch.
//!
//! From seed 004: Saad & Schultz, *Data Communication in Parallel Architectures*, §1
//! (the pivot row is broadcast from the processor that holds it).
//!
//! ```text
//! cargo run --release -p hypercomm-rt --example gaussian_elimination -- [ranks (4)] [broadcast algorithm (auto)] [n (120)]
//! ```

// The closures are not redundant: they make the generic kernel accept the threads
// transport of any lifetime.
#![allow(clippy::redundant_closure)]

mod apps;

fn main() -> std::process::ExitCode {
    apps::main(
        "gaussian_elimination",
        |comm, n, algo| apps::gaussian_elimination(comm, n, algo),
        120,
    )
}

#[test]
fn gaussian_elimination_every_algorithm() {
    apps::test_kernel(
        |comm, n, algo| apps::gaussian_elimination(comm, n, algo),
        hypercomm::collective::OpKind::Broadcast,
        23,
    );
}
