#!/usr/bin/env bash
# best/bound under `--ports all --timing rounds` on hypercube:N for N = 2..10, bandwidth
# dominating, before and after the all-port algorithms of issue 22 (Johnsson & Ho 1989:
# broadcast/nesbt, scatter/nesbt, gather/nesbt, reduce/nesbt and the rotated-exchange
# all-gather, all-to-all, reduce-scatter and all-reduce). "before" is the best of the
# other registry algorithms, "after" the best of all; "bound" is `bounds::lower_bound`,
# the `lower_bound` column of `hypercomm sweep`. β = 1, τ = 0.01, m = F·n·β/τ for each
# factor F (mτ/n = Fβ; 10⁴ is the issue's threshold). Schedules are timed, not verified
# (the test harness verifies every one of them up to hypercube:10).
# Prints a Markdown table (docs/bound-table.md was made by it).
# Usage: bash scripts/bound-table.sh [DIMS] [FACTORS] [OPS]
#   defaults: DIMS="2 3 4 5 6 7 8 9 10", FACTORS="10000 100000",
#   OPS="broadcast scatter gather allgather alltoall reduce reduce-scatter allreduce".
# HYPERCOMM=path/to/hypercomm uses that binary instead of building the release one.
set -euo pipefail
cd "$(dirname "$0")/.."
dims="${1:-2 3 4 5 6 7 8 9 10}"
factors="${2:-10000 100000}"
ops="${3:-broadcast scatter gather allgather alltoall reduce reduce-scatter allreduce}"
if [ -z "${HYPERCOMM:-}" ]; then
  cargo build -q --release -p hypercomm-cli
  HYPERCOMM=target/release/hypercomm
fi
new="broadcast/nesbt scatter/nesbt gather/nesbt reduce/nesbt allgather/rotated-exchange alltoall/rotated-exchange reduce-scatter/rotated-exchange allreduce/rotated-exchange"
echo "| op | n | mτ/(nβ) | m | before: best | best/bound | after: best | best/bound |"
echo "|---|---|---|---|---|---|---|---|"
for op in $ops; do
  for n in $dims; do
    for f in $factors; do
      m=$(( f * n * 100 ))
      # Every algorithm that fits, one CSV row each; an algorithm that cannot run at
      # this point (e.g. too large to simulate in the time allowed) is left out.
      csv=$("$HYPERCOMM" sweep --topology "hypercube:$n" --op "$op" --len "$m" \
              --ports all --timing rounds --beta 1 --tau 0.01 --no-verify 2>/dev/null || true)
      NEW="$new" OP="$op" N="$n" F="$f" M="$m" python3 -c '
import csv, io, os, sys
rows = [r for r in csv.DictReader(io.StringIO(sys.stdin.read())) if r["time"] not in ("", "error")]
new = set(os.environ["NEW"].split())
op = os.environ["OP"]
def best(rs):
    rs = [r for r in rs if r["time"]]
    if not rs:
        return ("–", "–")
    r = min(rs, key=lambda r: float(r["time"]))
    return (r["algo"], "%.4f" % (float(r["time"]) / float(r["lower_bound"])))
before = best([r for r in rows if op + "/" + r["algo"] not in new])
after = best(rows)
print("| %s | %s | %s | %s | %s | %s | %s | %s |" % (op, os.environ["N"], os.environ["F"], os.environ["M"], before[0], before[1], after[0], after[1]))
' <<<"$csv"
    done
  done
done
