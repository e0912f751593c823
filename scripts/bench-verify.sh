#!/usr/bin/env bash
# Full verification of every registry algorithm on hypercube:N (default 12), one process
# per algorithm so that each peak RSS is its own. Prints a Markdown table for BENCHMARKS.md.
# "build s" is the schedule's constructor; "verify s" includes generating every rank's
# steps, which the verifier streams (one step of every rank in memory).
# Usage: [THREADS=T] bash scripts/bench-verify.sh [N] [LEN] [OP/ALGO ...]
# THREADS (default 1): verify::Options::threads, the threads verifying each large step.
set -euo pipefail
cd "$(dirname "$0")/.."
threads="${THREADS:-1}"; n="${1:-12}"; len="${2:-7}"; shift $(( $# > 2 ? 2 : $# )) || true
cargo build -q --release -p hypercomm --example verify_time -p hypercomm-cli
bin=target/release/examples/verify_time
if [ $# -gt 0 ]; then pairs=("$@"); else
  mapfile -t pairs < <(target/release/hypercomm algorithms --format json | python3 -c 'import json,sys; [print(a["op"]+"/"+a["name"]) for a in json.load(sys.stdin)]')
fi
echo "| op | algo | n | len | threads | regions | build s | verify s | peak RSS MiB | verified |"
echo "|---|---|---|---|---|---|---|---|---|---|"
for p in "${pairs[@]}"; do
  op="${p%%/*}"; algo="${p#*/}"
  out=$( { /usr/bin/time -f "RSS %M" "$bin" "$op" "$algo" "$n" "$len" "$threads"; } 2>&1 ) || true
  grep -q "^skip:" <<<"$out" && continue   # fits no hypercube (complete:K algorithms)
  regions=$(sed -n 's/.*s, \([0-9]*\) regions/\1/p' <<<"$out")
  build=$(sed -n 's/^build \([0-9.]*\)s.*/\1/p' <<<"$out")
  verify=$(sed -n 's/verify \([0-9.]*\)s.*/\1/p' <<<"$out")
  ok=$(grep -q "verify .*None" <<<"$out" && echo yes || echo "NO")
  rss=$(sed -n 's/RSS \([0-9]*\)/\1/p' <<<"$out")
  echo "| $op | $algo | $n | $len | $threads | $regions | $build | $verify | $(( ${rss:-0} / 1024 )) | $ok |"
done
