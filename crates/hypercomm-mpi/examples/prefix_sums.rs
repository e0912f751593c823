//! Prefix sums of a distributed array (inclusive and exclusive scans; seed 001), on the MPI backend: the kernel of the runtime's `prefix_sums`
//! example (`hypercomm-rt/examples/apps/mod.rs`), run on every rank of `MPI_COMM_WORLD`
//! and checked against the serial computation on every rank; exit 1 if any rank does
//! not match or fails.
//!
//! ```text
//! cargo build --release -p hypercomm-mpi --examples
//! mpirun -n 4 target/release/examples/prefix_sums [algorithm (auto)] [n (1000)] [--timeout S] [--corrupt R]
//! ```

#[path = "../../hypercomm-rt/examples/apps/mod.rs"]
mod apps;
mod mpi_app;

fn main() -> std::process::ExitCode {
    mpi_app::main("prefix_sums", 1000, apps::prefix_sums, apps::prefix_sums)
}
