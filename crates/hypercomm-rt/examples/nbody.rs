//! An N-body simulation (softened gravity, leapfrog steps) with bodies distributed in
//! blocks: each step all-gathers every body's position and mass, and each rank computes
//! the forces on its own bodies. Checks positions and velocities against the serial
//! simulation (bitwise: the same sums in the same order) and exits 1 on a mismatch.
//!
//! From seed 004: Saad & Schultz, *Data Communication in Parallel Architectures*, §1
//! (every processor needs every body's position: a multinode broadcast per step).
//!
//! ```text
//! cargo run --release -p hypercomm-rt --example nbody -- [ranks (4)] [all-gather algorithm (auto)] [n (300)]
//! ```

// The closures are not redundant: they make the generic kernel accept the threads
// transport of any lifetime.
#![allow(clippy::redundant_closure)]

mod apps;

fn main() -> std::process::ExitCode {
    apps::main("nbody", |comm, n, algo| apps::nbody(comm, n, algo), 300)
}

#[test]
fn nbody_every_algorithm() {
    apps::test_kernel(
        |comm, n, algo| apps::nbody(comm, n, algo),
        hypercomm::collective::OpKind::Allgather,
        31,
    );
}
