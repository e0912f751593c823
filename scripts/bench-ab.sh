#!/usr/bin/env bash
# A/B of `hypercomm bench` binaries on one machine: runs each binary in turn, N rounds,
# and prints per binary the median over rounds of the max-over-ranks latency (µs) per
# size. Build the "before" binary in a worktree, e.g.
#   git worktree add /tmp/before REV && (cd /tmp/before && cargo build --release -p hypercomm-cli)
#   scripts/bench-ab.sh 6 "--ranks 2 --op broadcast --algo binomial --min-size 8 --max-size 64 --barrier tree --iters 3000" \
#       /tmp/before/target/release/hypercomm target/release/hypercomm
# Usage: scripts/bench-ab.sh N "BENCH ARGS" BINARY...
set -euo pipefail
N=$1; ARGS=$2; shift 2
for _ in $(seq "$N"); do for b in "$@"; do
  # shellcheck disable=SC2086
  "$b" bench $ARGS --format csv | awk -F, -v b="$b" 'NR>1 {print b, $3, $8}'
done; done | python3 -c '
import sys, statistics, collections
d = collections.defaultdict(list)
for line in sys.stdin:
    b, s, v = line.split(); d[(b, int(s))].append(float(v))
for b in dict.fromkeys(k[0] for k in d):
    print(b, " ".join(f"{s}:{statistics.median(v):.3f}" for (bb, s), v in sorted(d.items()) if bb == b))
'
