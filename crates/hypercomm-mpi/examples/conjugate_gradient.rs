//! Conjugate gradient on the 1-D Laplacian (an all-gather of p and all-reduces
//! of inner products per iteration; seed 004, Saad & Schultz §1), on the MPI backend: the kernel of the runtime's `conjugate_gradient`
//! example (`hypercomm-rt/examples/apps/mod.rs`), run on every rank of `MPI_COMM_WORLD`
//! and checked against the serial computation on every rank; exit 1 if any rank does
//! not match or fails.
//!
//! ```text
//! cargo build --release -p hypercomm-mpi --examples
//! mpirun -n 4 target/release/examples/conjugate_gradient [algorithm (auto)] [n (200)] [--timeout S] [--corrupt R]
//! ```

#[path = "../../hypercomm-rt/examples/apps/mod.rs"]
mod apps;
mod mpi_app;

fn main() -> std::process::ExitCode {
    mpi_app::main(
        "conjugate_gradient",
        200,
        apps::conjugate_gradient,
        apps::conjugate_gradient,
    )
}
