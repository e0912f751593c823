//! Prefix sums (inclusive and exclusive) of an array distributed in blocks: an exclusive
//! scan of the block sums gives each rank its offset, an inclusive scan must agree with
//! it; then both scans element-wise on one vector per rank. Integers, checked exactly
//! against the serial prefix sums; exits 1 on a mismatch.
//!
//! From seed 001 (prefix sums, the scan collective).
//!
//! ```text
//! cargo run --release -p hypercomm-rt --example prefix_sums -- [ranks (4)] [scan algorithm (auto)] [n (1000)]
//! ```

// The closures are not redundant: they make the generic kernel accept the threads
// transport of any lifetime.
#![allow(clippy::redundant_closure)]

mod apps;

fn main() -> std::process::ExitCode {
    apps::main(
        "prefix_sums",
        |comm, n, algo| apps::prefix_sums(comm, n, algo),
        1000,
    )
}

#[test]
fn prefix_sums_every_algorithm() {
    apps::test_kernel(
        |comm, n, algo| apps::prefix_sums(comm, n, algo),
        hypercomm::collective::OpKind::ExclusiveScan,
        41,
    );
}
