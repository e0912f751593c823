//! Parallel bucket sort (one alltoallv of the keys, with uneven counts) on the MPI
//! backend: the kernel of the runtime's `bucket_sort` example
//! (`hypercomm-rt/examples/apps/mod.rs`), run on every rank of `MPI_COMM_WORLD` and
//! checked against the serial sort on every rank; exit 1 if any rank does not match or
//! fails.
//!
//! ```text
//! cargo build --release -p hypercomm-mpi --examples
//! mpirun -n 4 target/release/examples/bucket_sort [algorithm (auto)] [n (10000)] [--timeout S] [--corrupt R]
//! ```

#[path = "../../hypercomm-rt/examples/apps/mod.rs"]
mod apps;
mod mpi_app;

fn main() -> std::process::ExitCode {
    mpi_app::main("bucket_sort", 10_000, apps::bucket_sort, apps::bucket_sort)
}
