#!/usr/bin/env bash
# BENCHMARKS.md, "Threads backend against Open MPI": scripts/bench-vs-mpi.sh (the threads
# backend's `bench --algo all` and Open MPI's native collectives through `hypercomm-mpi
# vs-native`, run back to back, both sides bound to cores, the same barrier algorithm on
# both sides; see its header for the conventions) for every K in KS (default "2 4"; ranks
# beyond the CPUs run as fibers, the CLI's default) and both barriers (tree, recursive
# doubling), sizes 8 B to MAX_BYTES (default 4 MiB), REPS repetitions (default 5).
# A cell is threads / native: the fastest algorithm's median time over the repetitions
# against native's median, then (min–max) of that ratio over the repetitions; the last
# column is the largest such ratio over every size of the run, and where.
#
# Usage: [REPS=5] [KS="2 4"] [SMOKE=1: 8-16 B, 3 repetitions, K = 2] scripts/bench-table-threads-vs-mpi.sh [MAX_BYTES]
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/bench-lib.sh
MAX=${1:-4194304}; REPS=${REPS:-5}; KS=${KS:-2 4}
if [ "${SMOKE:-0}" = 1 ]; then MAX=16; REPS=3; KS=2; fi
command -v mpirun >/dev/null || { echo "needs Open MPI (mpirun): apt-get install openmpi-bin libopenmpi-dev libclang-dev" >&2; exit 1; }
out=$(mktemp); trap 'rm -f "$out"' EXIT
for k in $KS; do for b in tree recursive-doubling; do
    REPS=$REPS BARRIER=$b PIN=1 FIBERS=1 OUTPUT=tsv scripts/bench-vs-mpi.sh "$k" "$MAX" |
        sed "s/^/$k\t$b\t/" >>"$out"
done; done
bench_stamp "$REPS repetitions, 8 B–$MAX B, $(mpirun --version | head -1), \`scripts/bench-table-threads-vs-mpi.sh\`"
bench_smoke_note
python3 - "$out" "$MAX" "$(nproc)" <<'PY'
import collections, sys
rows = collections.OrderedDict()
for line in open(sys.argv[1]):
    k, barrier, op, size, algo, t, n, ratio, lo, med, hi = line.rstrip("\n").split("\t")
    rows.setdefault((int(k), barrier, op), {})[int(size)] = (algo, float(ratio), float(lo), float(hi))
max_bytes, cpus = int(sys.argv[2]), int(sys.argv[3])
def name(b):
    for unit, n in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if b >= n and b % n == 0:
            return f"{b // n} {unit}"
    return f"{b} B"
cols = [s for s in (8, 512, 8192, 131072, 1 << 20, 4 << 20) if s <= max_bytes]
print()
print("| ranks, barrier | op | " + " | ".join(name(s) for s in cols) + " | largest ratio, where |")
print("|---|---|" + "---:|" * len(cols) + "---|")
for (k, barrier, op), d in rows.items():
    who = f"{k}{' as fibers' if k > cpus else ''}, {barrier}"
    cell = lambda v: f"{v[1]:.2f} ({v[2]:.2f}–{v[3]:.2f})"
    worst = max(d, key=lambda s: d[s][1])
    print(f"| {who} | {op} | " + " | ".join(cell(d[s]) if s in d else "–" for s in cols)
          + f" | {d[worst][1]:.2f} at {name(worst)} ({d[worst][2]:.2f}–{d[worst][3]:.2f}) |")
PY
