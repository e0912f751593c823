#!/usr/bin/env bash
# BENCHMARKS.md, "Prediction against measurement": measured / predicted, where predicted
# is the cost model's time of the algorithm `auto` ran under a calibration measured first
# by the same script (what `bench` and `vs-native` print as meas/pred and ours/pred).
#   - threads backend: `hypercomm calibrate --ranks 2 --max-size CALIB_MAX` (exchange, the
#     default pattern; CALIB_MAX default 64 MiB, as the figures of BENCHMARKS.md), then
#     `hypercomm bench --ranks K --op OP` (measured = avg over ranks; ranks beyond the CPUs
#     run as fibers, the CLI's default) for each "K OP" of CONFIGS (default: 2 and 4 ranks,
#     allgather, alltoall, broadcast, allreduce), sizes MIN_BYTES to MAX_BYTES (default 1 to
#     8 MiB);
#   - MPI backend (MPI=auto: when mpirun is found; MPI=0 skips it, MPI=1 requires it):
#     `mpirun -n 2 hypercomm-mpi calibrate`, then `vs-native` (measured = ours, max over
#     ranks), broadcast, allgather, allreduce, alltoall, the same sizes, with
#     HYPERCOMM_TUNING=off: `auto` is the model's pick at every size (with tuning it runs
#     MPI's own call at most sizes, which the model does not price).
# RUNS runs of each (default 3); a cell is measured / predicted, median (min–max).
# CALIB=auto instead takes the calibration a new user's first command measures by itself
# (run once from an empty home, `~/.cache/hypercomm/calibration-*.conf`: 1 B to 64 MiB,
# fewer exchanges per size) for each backend, in place of `calibrate`.
#
# Usage: [RUNS=3] [CALIB=calibrate|auto] [CONFIGS="2 allgather 2 alltoall ..."] [MPI=auto|0|1] [CALIB_MAX=67108864]
#        [SMOKE=1: 1-4 KiB, 3 runs, few iterations] scripts/bench-table-prediction.sh [MIN_BYTES [MAX_BYTES]]
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/bench-lib.sh
MIN=${1:-1048576}; MAX=${2:-8388608}; RUNS=${RUNS:-3}; CALIB_MAX=${CALIB_MAX:-67108864}
CONFIGS=${CONFIGS:-2 allgather 2 alltoall 2 broadcast 2 allreduce 4 allgather 4 alltoall 4 broadcast 4 allreduce}
ITERS=(); MPI_ITERS=()
if [ "${SMOKE:-0}" = 1 ]; then
    MIN=1024; MAX=4096; RUNS=3; CALIB_MAX=1048576
    ITERS=(--iters 20 --warmup 2); MPI_ITERS=(--iters 20)
fi
MPI=${MPI:-auto}
if [ "$MPI" = auto ]; then command -v mpirun >/dev/null && MPI=1 || MPI=0; fi
cargo build --release -q -p hypercomm-cli >&2
[ "$MPI" = 1 ] && cargo build --release -q -p hypercomm-mpi >&2
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
out=$(mktemp -d); trap 'rm -rf "$out"' EXIT

CALIB=${CALIB:-calibrate}
case "$CALIB" in calibrate | auto) ;; *) echo "CALIB=$CALIB: valid values are calibrate and auto" >&2; exit 2 ;; esac
# `auto_calibration BACKEND CMD...`: CMD run once from an empty home, which measures the
# backend's calibration itself; the file it kept becomes $out/BACKEND.conf.
auto_calibration() {
    local backend=$1; shift
    rm -rf "$out/home"; mkdir -p "$out/home"
    env -u HYPERCOMM_CALIBRATION -u XDG_CONFIG_HOME -u XDG_CACHE_HOME HOME="$out/home" "$@" >/dev/null
    cp "$out"/home/.cache/hypercomm/calibration-"$backend"-*.conf "$out/$backend.conf"
}
if [ "$CALIB" = auto ]; then
    auto_calibration threads target/release/hypercomm run --ranks 2 --op allreduce --len 8
    CALIB_MAX="the automatic calibration's 67108864"
else
    target/release/hypercomm calibrate --ranks 2 --max-size "$CALIB_MAX" --output "$out/threads.conf" >&2
fi
# shellcheck disable=SC2086 # CONFIGS is a list of "K OP" pairs
set -- $CONFIGS
while [ $# -ge 2 ]; do
    k=$1; op=$2; shift 2
    for _ in $(seq "$RUNS"); do
        HYPERCOMM_CALIBRATION="$out/threads.conf" target/release/hypercomm bench --ranks "$k" \
            --op "$op" --min-size "$MIN" --max-size "$MAX" "${ITERS[@]}" --format csv |
            awk -F, -v k="$k" -v op="$op" 'NR > 1 {print "threads", k, op, $1, $3, $12}' >>"$out/rows"
    done
done
if [ "$MPI" = 1 ]; then
    if [ "$CALIB" = auto ]; then
        auto_calibration mpi mpirun -x HOME -n 2 target/release/hypercomm-mpi run --op allreduce --len 8
    else
        mpirun -n 2 target/release/hypercomm-mpi calibrate --max-size "$CALIB_MAX" --output "$out/mpi.conf" >&2
    fi
    for _ in $(seq "$RUNS"); do
        HYPERCOMM_CALIBRATION="$out/mpi.conf" HYPERCOMM_TUNING=off mpirun -x HYPERCOMM_CALIBRATION \
            -x HYPERCOMM_TUNING -n 2 \
            target/release/hypercomm-mpi vs-native --max-bytes "$MAX" --stat mean "${MPI_ITERS[@]}" |
            awk -v min="$MIN" 'NF >= 8 && $2 ~ /^[0-9]+$/ && $2 >= min && $7 != "-" {print "mpi", 2, $1, $8, $2, $7}' >>"$out/rows"
    done
fi
fit() { sed -n "s/^$2 = //p" "$out/$1.conf" | xargs printf '%.3g'; }
cal="threads β = $(fit threads beta) s, τ = $(fit threads tau) s/B"
[ "$MPI" = 1 ] && cal="$cal; MPI β = $(fit mpi beta) s, τ = $(fit mpi tau) s/B"
bench_stamp "$RUNS runs, calibrated up to $CALIB_MAX B ($cal), \`CALIB=$CALIB scripts/bench-table-prediction.sh\`"
bench_smoke_note
python3 - "$out/rows" "$(nproc)" <<'PY'
import collections, statistics, sys
rows = collections.OrderedDict()
for line in open(sys.argv[1]):
    backend, k, op, algo, size, ratio = line.split()
    e = rows.setdefault((backend, int(k), op), {"a": set(), "s": collections.OrderedDict()})
    e["a"].add(algo); e["s"].setdefault(int(size), []).append(float(ratio))
cpus = int(sys.argv[2])
def name(b):
    for unit, n in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if b >= n and b % n == 0:
            return f"{b // n} {unit}"
    return f"{b} B"
sizes = sorted({s for e in rows.values() for s in e["s"]})
print()
print("| backend, ranks | op (algorithm) | " + " | ".join(name(s) for s in sizes) + " |")
print("|---|---|" + "---:|" * len(sizes))
for (backend, k, op), e in rows.items():
    who = f"{backend}, {k}{' as fibers' if backend == 'threads' and k > cpus else ''}"
    cells = []
    for s in sizes:
        v = e["s"].get(s)
        cells.append(f"{statistics.median(v):.2f} ({min(v):.2f}–{max(v):.2f})" if v else "–")
    print(f"| {who} | {op} ({', '.join(sorted(e['a']))}) | " + " | ".join(cells) + " |")
PY
