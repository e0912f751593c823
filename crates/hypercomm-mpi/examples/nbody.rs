//! An N-body simulation (an all-gather of positions and masses per step; seed
//! 004, Saad & Schultz §1), on the MPI backend: the kernel of the runtime's `nbody`
//! example (`hypercomm-rt/examples/apps/mod.rs`), run on every rank of `MPI_COMM_WORLD`
//! and checked against the serial computation on every rank; exit 1 if any rank does
//! not match or fails.
//!
//! ```text
//! cargo build --release -p hypercomm-mpi --examples
//! mpirun -n 4 target/release/examples/nbody [algorithm (auto)] [n (300)] [--timeout S] [--corrupt R]
//! ```

#[path = "../../hypercomm-rt/examples/apps/mod.rs"]
mod apps;
mod mpi_app;

fn main() -> std::process::ExitCode {
    mpi_app::main("nbody", 300, apps::nbody, apps::nbody)
}
