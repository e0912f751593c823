#!/usr/bin/env bash
# Runs every test of the workspace: the README's test command, and what .ci/run calls.
# Needs only the Rust toolchain today; later crates (MPI) install what they need here.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"
cargo fmt --all -- --check
cargo test --workspace --all-targets --locked
cargo test --workspace --doc --locked
