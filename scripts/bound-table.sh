#!/usr/bin/env bash
# best/bound under `--ports all --timing rounds` on hypercube:N for N = 2..10, bandwidth
# dominating, before and after the all-port algorithms of issue 22 (Johnsson & Ho 1989:
# broadcast/nesbt, scatter/nesbt, gather/nesbt, reduce/nesbt and the rotated-exchange
# all-gather, all-to-all, reduce-scatter and all-reduce). "before" is the best of the
# other registry algorithms, "after" the best of all; "bound" is `bounds::lower_bound`,
# the `lower_bound` column of `hypercomm sweep` (for all-reduce it is the one of this
# branch, 2(k − 1)mτ/(kn) + nβ, in both columns). β = 1, τ = 0.01, m = F·n·β/τ for
# each factor F (mτ/n = Fβ; 10⁴ is the issue's threshold). Schedules are timed, not
# verified (the test harness verifies every one of them up to hypercube:10). Each
# algorithm gets TIMEOUT seconds (default 30) per (op, n); one that needs more is
# left out of "before" and named in the last column.
# Prints a Markdown table (docs/bound-table.md was made by it).
# Usage: bash scripts/bound-table.sh [DIMS] [FACTORS] [OPS]
#   defaults: DIMS="2 3 4 5 6 7 8 9 10", FACTORS="10000,100000",
#   OPS="broadcast scatter gather allgather alltoall reduce reduce-scatter allreduce".
# HYPERCOMM=path/to/hypercomm uses that binary instead of building the release one.
set -euo pipefail
cd "$(dirname "$0")/.."
dims="${1:-2 3 4 5 6 7 8 9 10}"
factors="${2:-10000,100000}"
ops="${3:-broadcast scatter gather allgather alltoall reduce reduce-scatter allreduce}"
limit="${TIMEOUT:-30}"
if [ -z "${HYPERCOMM:-}" ]; then
  cargo build -q --release -p hypercomm-cli
  HYPERCOMM=target/release/hypercomm
fi
new="broadcast/nesbt scatter/nesbt gather/nesbt reduce/nesbt allgather/rotated-exchange alltoall/rotated-exchange reduce-scatter/rotated-exchange allreduce/rotated-exchange"
registry=$("$HYPERCOMM" algorithms --format json)
echo "| op | n | mτ/(nβ) | m | before: best | best/bound | after: best | best/bound | left out (> ${limit} s) |"
echo "|---|---|---|---|---|---|---|---|---|"
for op in $ops; do
  algos=$(OP="$op" python3 -c '
import json, os, sys
for a in json.load(sys.stdin):
    if a["op"] == os.environ["OP"] and a["topologies"] in ("hypercube", "any"):
        print(a["name"])' <<<"$registry")
  for n in $dims; do
    lens=$(python3 -c "print(','.join(str(int(f) * $n * 100) for f in '$factors'.split(',')))")
    rows=""; slow=""
    for a in $algos; do
      if out=$(timeout "$limit" "$HYPERCOMM" sweep --topology "hypercube:$n" --op "$op" \
                 --algo "$a" --len "$lens" --ports all --timing rounds --beta 1 --tau 0.01 \
                 --no-verify 2>/dev/null); then
        rows+=$(tail -n +2 <<<"$out")$'\n'
      else
        slow+="$a "
      fi
    done
    NEW="$new" OP="$op" N="$n" SLOW="$slow" python3 -c '
import csv, io, os, sys
head = "len,nodes,algo,time,rounds,messages,volume,formula,lower_bound,verified\n"
rows = [r for r in csv.DictReader(io.StringIO(head + sys.stdin.read())) if r["time"] not in ("", "error")]
new = set(os.environ["NEW"].split())
op, n = os.environ["OP"], int(os.environ["N"])
def best(rs):
    if not rs:
        return ("–", "–")
    r = min(rs, key=lambda r: float(r["time"]))
    return (r["algo"], "%.4f" % (float(r["time"]) / float(r["lower_bound"])))
for m in sorted({int(r["len"]) for r in rows}):
    at = [r for r in rows if int(r["len"]) == m]
    before = best([r for r in at if op + "/" + r["algo"] not in new])
    after = best(at)
    print("| %s | %d | %d | %d | %s | %s | %s | %s | %s |" % (op, n, m // (100 * n), m, before[0], before[1], after[0], after[1], os.environ["SLOW"].strip() or "–"))
' <<<"$rows"
  done
done
