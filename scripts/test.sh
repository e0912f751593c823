#!/usr/bin/env bash
# Runs every test of the workspace: the README's test command, and what .ci/run calls.
# The default members need only the Rust toolchain; the MPI backend (crates/hypercomm-mpi,
# not a default member) needs Open MPI and libclang, installed below when missing.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"
cargo fmt --all -- --check
# The API docs build without a warning (no broken or private intra-doc links). No MPI:
# the MPI backend is not documented here.
RUSTDOCFLAGS="-D warnings" cargo doc --no-deps --locked -p hypercomm -p hypercomm-rt -p hypercomm-cli
# The browser test (crates/hypercomm-cli/tests/browser.rs) renders an HTML report in
# headless Chromium: installed here when missing, and required (not skipped) in this run.
if [ ! -x /usr/bin/chromium ]; then
    if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null; then
        echo "scripts/test.sh: installing chromium for the browser test" >&2
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
    elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
        sudo apt-get update -qq
        sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
    fi
fi
export HYPERCOMM_REQUIRE_BROWSER=1
# No --workspace: the default members (core, CLI, runtime), without MPI.
cargo test --all-targets --locked
cargo test --doc --locked

# --- MPI backend -------------------------------------------------------------------
mpi_start=$(date +%s)
have_libclang() {
    [ -n "${LIBCLANG_PATH:-}" ] && return 0
    compgen -G "/usr/lib/llvm-*/lib/libclang*.so*" >/dev/null ||
        compgen -G "/usr/lib/*/libclang*.so*" >/dev/null ||
        compgen -G "/usr/lib64/libclang*.so*" >/dev/null
}
if ! command -v mpicc >/dev/null || ! command -v mpirun >/dev/null || ! have_libclang; then
    packages=(libopenmpi-dev openmpi-bin libclang-dev)
    if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null; then
        echo "scripts/test.sh: installing ${packages[*]} for the MPI backend" >&2
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${packages[@]}" >/dev/null
    elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
        sudo apt-get update -qq
        sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${packages[@]}" >/dev/null
    else
        echo "scripts/test.sh: the MPI backend needs Open MPI and libclang;" \
            "install them (as root: apt-get install ${packages[*]}) and rerun" >&2
        exit 1
    fi
fi
# mpirun refuses root unless told; its tests run K = 1, 2, 3, 4, 5, 8 ranks one job at
# a time, oversubscribed, with mpi_yield_when_idle (see crates/hypercomm-mpi/tests).
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
cargo test -p hypercomm-mpi --all-targets --locked
cargo test -p hypercomm-mpi --doc --locked
# Layering (issue 20): without its binary's `cli` feature, the MPI library builds (and
# passes its unit tests) and depends on neither the CLI crate nor clap (a user of
# HypercommExt gets the runtime and MPI only).
cargo test -p hypercomm-mpi --no-default-features --lib --locked
if cargo tree -p hypercomm-mpi --no-default-features -e normal --prefix none --locked |
    grep -E '^(clap|hypercomm-cli) '; then
    echo "scripts/test.sh: hypercomm-mpi's library depends on the CLI (above)" >&2
    exit 1
fi
echo "scripts/test.sh: MPI backend built and tested in $(($(date +%s) - mpi_start)) s" >&2

# --- The same backend on MPICH ------------------------------------------------------
# Debian installs MPICH beside Open MPI (`mpicc.mpich`, `mpirun.mpich`; the unsuffixed
# names stay Open MPI's). rsmpi finds the library through MPICC; a separate target
# directory keeps the two builds apart. Every algorithm against MPICH's own collectives
# on 1, 2, 3, 5 and 8 ranks (the variable-count ones, gatherv … reduce-scatterv, against
# MPICH's MPI_*v on random counts with zeros, included), the native calls' check
# (examples/native_check: in place with MPICH's MPI_IN_PLACE), the sub-communicator,
# request and persistent example against MPICH's own on the same ranks, MPICH's
# non-blocking collectives as requests (examples/native_requests), `auto`'s measured
# route in an immediate::scope (examples/immediate_routes, 2 ranks), and a failing rank
# must make mpirun exit non-zero.
mpich_start=$(date +%s)
if ! command -v mpicc.mpich >/dev/null || ! command -v mpirun.mpich >/dev/null; then
    if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null; then
        echo "scripts/test.sh: installing libmpich-dev mpich for the MPICH check" >&2
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libmpich-dev mpich >/dev/null
    fi
fi
if command -v mpicc.mpich >/dev/null && command -v mpirun.mpich >/dev/null; then
    MPICC=mpicc.mpich CARGO_TARGET_DIR=target/mpich \
        cargo build --release --locked -p hypercomm-mpi --bin hypercomm-mpi --example subcomm \
        --example native_check --example native_requests --example immediate_routes
    bin=target/mpich/release/hypercomm-mpi
    export UCX_LOG_LEVEL=error # MPICH's UCX warns of notices a finished rank never read
    # On more ranks than CPUs, MPICH 4.0's ranks poll without yielding: preload the shim
    # that yields when idle (docs/perf-log/2026-11-27-mpich-oversubscribed.md; 8 ranks'
    # check took 27 s without it, 5 s with it), which the checks also test.
    cc -O2 -shared -fPIC scripts/mpich-yield.c -o target/mpich/mpich-yield.so -ldl
    for k in 1 2 3 5 8; do
        preload=()
        if [ "$k" -gt "$(getconf _NPROCESSORS_ONLN)" ]; then
            preload=(-genv LD_PRELOAD "$PWD/target/mpich/mpich-yield.so")
        fi
        out=$(timeout 600 mpirun.mpich "${preload[@]}" -n "$k" "$bin" check)
        grep -q "^checked .* 0 mismatched" <<<"$out" || {
            echo "scripts/test.sh: MPICH check on $k ranks failed:" >&2
            echo "$out" | tail -5 >&2
            exit 1
        }
        for op in gatherv scatterv allgatherv alltoallv reduce-scatterv; do
            grep -q "^$op native .*: ok" <<<"$out" || {
                echo "scripts/test.sh: MPICH check on $k ranks ran no native $op" >&2
                exit 1
            }
        done
        # Native calls made ready once, and the in-place ones with MPICH's MPI_IN_PLACE.
        out=$(timeout 300 mpirun.mpich "${preload[@]}" -n "$k" target/mpich/release/examples/native_check 2>&1)
        grep -q "^native_check: [0-9]* calls matched ($k ranks)" <<<"$out" || {
            echo "scripts/test.sh: MPICH native_check on $k ranks failed:" >&2
            echo "$out" | tail -5 >&2
            exit 1
        }
        out=$(timeout 300 mpirun.mpich "${preload[@]}" -n "$k" target/mpich/release/examples/subcomm 2>&1)
        grep -q "^subcomm: every rank matched native MPI ($k ranks)" <<<"$out" || {
            echo "scripts/test.sh: MPICH subcomm on $k ranks failed:" >&2
            echo "$out" | tail -5 >&2
            exit 1
        }
        # MPICH's non-blocking collectives (MPI_Ibcast … MPI_Ialltoallv) as requests.
        out=$(timeout 300 mpirun.mpich "${preload[@]}" -n "$k" target/mpich/release/examples/native_requests 2>&1)
        grep -q "^native_requests: [0-9]* requests matched MPI ($k ranks)" <<<"$out" || {
            echo "scripts/test.sh: MPICH native_requests on $k ranks failed:" >&2
            echo "$out" | tail -5 >&2
            exit 1
        }
    done
    # auto's measured route in an immediate::scope (MPI_THREAD_MULTIPLE), on 2 ranks.
    routes=$(mktemp -u /tmp/hc-mpich-routes.XXXXXX)
    out=$(timeout 300 mpirun.mpich -n 2 target/mpich/release/examples/immediate_routes "$routes" 2>&1)
    rm -f "$routes"
    grep -q "^immediate_routes: measured, read back and followed (2 ranks)" <<<"$out" || {
        echo "scripts/test.sh: MPICH immediate_routes failed:" >&2
        echo "$out" | tail -5 >&2
        exit 1
    }
    # Every message received before MPI_Finalize (MPI-3.1 §8.7): the departure notices
    # of the last communicator dropped are taken at MPI_Finalize (src/leave.rs); UCX
    # warned of them in 6 of 10 such runs before.
    for run in 1 2 3; do
        out=$(timeout 300 mpirun.mpich -n 2 "$bin" osu allgatherv --algo ring --max-size 1024 --iters 3 --warmup 1 2>&1)
        if grep -q "was not matched" <<<"$out"; then
            echo "scripts/test.sh: MPICH finalized with a message unreceived:" >&2
            grep "was not matched" <<<"$out" | head -3 >&2
            exit 1
        fi
    done
    if timeout 300 mpirun.mpich -n 3 "$bin" fault --rank 1 >/dev/null 2>&1; then
        echo "scripts/test.sh: on MPICH a failing rank did not fail the job" >&2
        exit 1
    fi
    echo "scripts/test.sh: MPICH build and checks in $(($(date +%s) - mpich_start)) s" >&2
else
    echo "scripts/test.sh: MPICH not installed (apt-get install libmpich-dev mpich):" \
        "its check is skipped" >&2
fi
