#!/usr/bin/env bash
# BENCHMARKS.md, "MPI backend against native MPI": `mpirun -n K hypercomm-mpi vs-native`
# (the same collective through our schedules on the MPI backend and through Open MPI's own
# MPI_Bcast, MPI_Allreduce, MPI_Allgather, MPI_Alltoall, in the same run; mean µs per
# call, max over ranks, a barrier before each call), run RUNS times (default 5), K ranks
# (default 2), `--algo auto` under the runtime's default calibration (no calibration file:
# the choice does not depend on one saved earlier), sizes 8 B to MAX_BYTES (default 1 MiB).
# Per (collective, size) in SIZES (default 8 B, 1 KiB, 64 KiB, 1 MiB): native and ours,
# median µs over the runs, and ours / native per run: median (min–max).
#
# Usage: [RUNS=5] [K=2] [SIZES="8 1024 65536 1048576"] [ITERS=200] [MPIRUN_FLAGS=...]
#        [SMOKE=1: 8-64 B, 3 runs, 20 iterations] scripts/bench-table-mpi-vs-native.sh [MAX_BYTES]
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/bench-lib.sh
MAX=${1:-1048576}; RUNS=${RUNS:-5}; K=${K:-2}; ITERS=${ITERS:-200}
SIZES=${SIZES:-8 1024 65536 1048576}
if [ "${SMOKE:-0}" = 1 ]; then MAX=64; RUNS=3; ITERS=20; SIZES="8 64"; fi
command -v mpirun >/dev/null || { echo "needs Open MPI (mpirun): apt-get install openmpi-bin libopenmpi-dev libclang-dev" >&2; exit 1; }
cargo build --release -q -p hypercomm-mpi >&2
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
out=$(mktemp -d); trap 'rm -rf "$out"' EXIT
# No calibration file: an empty config directory and no HYPERCOMM_CALIBRATION.
for r in $(seq "$RUNS"); do
    # shellcheck disable=SC2086
    env -u HYPERCOMM_CALIBRATION XDG_CONFIG_HOME="$out" HOME="$out" \
        mpirun ${MPIRUN_FLAGS:-} -n "$K" target/release/hypercomm-mpi vs-native \
        --max-bytes "$MAX" --iters "$ITERS" >"$out/run.$r"
done
bench_stamp "$K ranks, $RUNS runs, $(mpirun --version | head -1), \`scripts/bench-table-mpi-vs-native.sh\`"
bench_smoke_note
echo
echo "| collective (algorithm) | bytes | native µs | ours µs | ours / native |"
echo "|---|---:|---:|---:|---:|"
python3 - "$out" "$RUNS" "$SIZES" <<'PY'
import collections, statistics, sys
out, runs, sizes = sys.argv[1], int(sys.argv[2]), [int(s) for s in sys.argv[3].split()]
d = collections.OrderedDict()
for r in range(1, runs + 1):
    for line in open(f"{out}/run.{r}"):
        w = line.split()
        if len(w) >= 8 and w[1].isdigit() and int(w[1]) in sizes:
            e = d.setdefault((w[0], int(w[1])), {"n": [], "o": [], "a": set()})
            e["n"].append(float(w[2])); e["o"].append(float(w[3])); e["a"].add(w[7])
g = lambda x: f"{x:.3g}"
for (op, b), e in d.items():
    ratio = [o / n for o, n in zip(e["o"], e["n"])]
    print(f"| {op} ({', '.join(sorted(e['a']))}) | {b} | {g(statistics.median(e['n']))} | "
          f"{g(statistics.median(e['o']))} | {statistics.median(ratio):.2f} "
          f"({min(ratio):.2f}–{max(ratio):.2f}) |")
PY
