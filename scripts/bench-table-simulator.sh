#!/usr/bin/env bash
# BENCHMARKS.md, "Simulator: messages per second": the timing-only simulation of the
# rounds model (`simulate`) on hypercube:20 (1,048,576 nodes), from the scale benchmark
# (crates/hypercomm/benches/scale.rs), run RUNS times (default 3). Per row: simulated
# messages per second on one thread and with the ranks split over every CPU
# (`RoundsPartial`, as `hypercomm simulate` does), median (min–max) over the runs, and the
# median of simulate / generate-only (the cost of the simulator on top of building the
# same rank programs, measured in the same run).
#
# Usage: [RUNS=3] [QUICK=1: hypercube:16] [SMOKE=1: hypercube:8] scripts/bench-table-simulator.sh
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/bench-lib.sh
RUNS=${RUNS:-3}
mode=""; n=20
[ "${QUICK:-0}" = 1 ] && { mode=quick; n=16; }
[ "${SMOKE:-0}" = 1 ] && { mode=smoke; n=8; }
cargo bench -q -p hypercomm --bench scale --no-run >&2
out=$(mktemp -d); trap 'rm -rf "$out"' EXIT
for r in $(seq "$RUNS"); do
    # shellcheck disable=SC2086
    cargo bench -q -p hypercomm --bench scale -- $mode >"$out/run.$r" 2>/dev/null
done
threads=$(sed -n 's/.*| \([0-9]*\) threads s |.*/\1/p' "$out/run.1" | head -1)
bench_stamp "hypercube:$n, $RUNS runs, \`scripts/bench-table-simulator.sh\`"
bench_smoke_note
echo
echo "| op | algo | ν | messages | 1 thread: messages/s | $threads threads: messages/s | simulate / generate-only |"
echo "|---|---|---:|---:|---:|---:|---:|"
python3 - "$out" "$RUNS" <<'PY'
import collections, statistics, sys
out, runs = sys.argv[1], int(sys.argv[2])
rows = collections.OrderedDict()
for r in range(1, runs + 1):
    for line in open(f"{out}/run.{r}"):
        if line.startswith("## Full verification"):
            break  # the verifier's part of the benchmark: scripts/bench-table-verifier.sh
        c = [x.strip() for x in line.strip().strip("|").split("|")]
        if len(c) == 10 and c[3].isdigit():
            rows.setdefault(tuple(c[:4]), []).append((float(c[5]), float(c[9]), float(c[7])))
def spread(v):
    m = lambda x: f"{x / 1e6:.3g} M"
    return f"{m(statistics.median(v))} ({m(min(v))}–{m(max(v))})"
for (op, algo, nu, msgs), v in rows.items():
    one, par, ratio = zip(*v)
    print(f"| {op} | {algo} | {nu} | {int(msgs):,} | {spread(one)} | {spread(par)} | {statistics.median(ratio):.2f} |")
PY
