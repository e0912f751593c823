//! Parallel bucket sort: the keys go to their buckets by one alltoallv with uneven
//! counts (skewed keys: the low buckets get most, some ranks send nothing to some
//! others). Checks each rank's sorted bucket against the serial sort (exactly) and
//! exits 1 on a mismatch.
//!
//! ```text
//! cargo run --release -p hypercomm-rt --example bucket_sort -- [ranks (4)] [alltoallv algorithm (auto)] [n (10000)]
//! ```

// The closures are not redundant: they make the generic kernel accept the threads
// transport of any lifetime.
#![allow(clippy::redundant_closure)]

mod apps;

fn main() -> std::process::ExitCode {
    apps::main(
        "bucket_sort",
        |comm, n, algo| apps::bucket_sort(comm, n, algo),
        10_000,
    )
}

#[test]
fn bucket_sort_every_algorithm() {
    apps::test_kernel(
        |comm, n, algo| apps::bucket_sort(comm, n, algo),
        hypercomm::collective::OpKind::Alltoallv,
        1000,
    );
}
