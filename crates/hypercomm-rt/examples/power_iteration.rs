//! Power iteration `v ← Av / ‖Av‖` with A's rows distributed in blocks: an all-gather
//! of v per iteration, an all-reduce of ‖Av‖². Checks the eigenpair against the serial
//! power method on every rank and exits 1 on a mismatch.
//!
//! From seed 004: Saad & Schultz, *Data Communication in Parallel Architectures*, §1
//! (the distributed matrix–vector product needs a multinode broadcast per step).
//!
//! ```text
//! cargo run --release -p hypercomm-rt --example power_iteration -- [ranks (4)] [all-gather algorithm (auto)] [n (200)]
//! ```

// The closures are not redundant: they make the generic kernel accept the threads
// transport of any lifetime.
#![allow(clippy::redundant_closure)]

mod apps;

fn main() -> std::process::ExitCode {
    apps::main(
        "power_iteration",
        |comm, n, algo| apps::power_iteration(comm, n, algo),
        200,
    )
}

#[test]
fn power_iteration_every_algorithm() {
    apps::test_kernel(
        |comm, n, algo| apps::power_iteration(comm, n, algo),
        hypercomm::collective::OpKind::Allgather,
        37,
    );
}
