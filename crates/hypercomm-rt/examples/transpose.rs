//! Distributed transpose of an n×n matrix held in block rows: one all-to-all of b×b
//! blocks (each transposed before it is sent). Checks each rank's block row of the
//! transpose against the serial transpose (exactly) and exits 1 on a mismatch.
//!
//! From seed 004: Saad & Schultz, *Data Communication in Parallel Architectures*, §1
//! (matrix transposition is a total exchange).
//!
//! ```text
//! cargo run --release -p hypercomm-rt --example transpose -- [ranks (4)] [all-to-all algorithm (auto)] [n (96)]
//! ```

// The closures are not redundant: they make the generic kernel accept the threads
// transport of any lifetime.
#![allow(clippy::redundant_closure)]

mod apps;

fn main() -> std::process::ExitCode {
    apps::main(
        "transpose",
        |comm, n, algo| apps::transpose(comm, n, algo),
        96,
    )
}

#[test]
fn transpose_every_algorithm() {
    apps::test_kernel(
        |comm, n, algo| apps::transpose(comm, n, algo),
        hypercomm::collective::OpKind::Alltoall,
        13,
    );
}
