#!/usr/bin/env bash
# Verification on hypercube:N (default 12) on 1 and on 2 threads, interleaved (1, 2, 1, 2)
# so that both columns see the same machine; prints, per algorithm, the minimum of each
# column and the peak RSS (MiB) of the last run of each, as a Markdown table.
# Usage: bash scripts/bench-verify-threads.sh [N] [OP/ALGO ...]  (default: the algorithms
# of issue 3 that take more than a second)
set -euo pipefail
cd "$(dirname "$0")/.."
n="${1:-12}"; shift $(( $# > 0 ? 1 : 0 )) || true
cargo build -q --release -p hypercomm --example verify_time
bin=target/release/examples/verify_time
if [ $# -gt 0 ]; then pairs=("$@"); else
  pairs=(allgather/sba allgather/daisy-chain allgather/tea1 allgather/tea2 allgather/tea2-balanced
         allgather/tea2-grouped allgather/tea2-grouped-balanced alltoall/smg alltoall/mtadea
         alltoall/dimension-exchange reduce-scatter/recursive-halving)
fi
echo "| op | algo | 1 thread: s | 2 threads: s | 2 threads / 1 | 1 thread: MiB | 2 threads: MiB |"
echo "|---|---|---:|---:|---:|---:|---:|"
for p in "${pairs[@]}"; do
  op=${p%/*}; a=${p#*/}; best=(0 999 999); rss=(0 0 0)
  for round in 1 2; do for t in 1 2; do
    out=$( { /usr/bin/time -f "RSS %M" "$bin" "$op" "$a" "$n" 7 "$t"; } 2>&1 )
    grep -q "verify .*None" <<<"$out" || { echo "$op/$a on $t threads: not verified" >&2; exit 1; }
    v=$(sed -n 's/verify \([0-9.]*\)s.*/\1/p' <<<"$out")
    best[t]=$(python3 -c "print(min($v, ${best[t]}))")
    rss[t]=$(( $(sed -n 's/RSS \([0-9]*\)/\1/p' <<<"$out") / 1024 ))
  done; done
  echo "| $op | $a | ${best[1]} | ${best[2]} | $(python3 -c "print(f'{${best[2]}/${best[1]}:.2f}' if ${best[1]} else '–')") | ${rss[1]} | ${rss[2]} |"
done
