#!/usr/bin/env bash
# Seed 003's numbers regenerated (docs/download.md): the download times of SL, DS,
# Gichev's algorithm and `optimal` on hypercube:n+host, n = 3, 4, 5, for blocks of
# 1 to 65536 elements per PE, under the model of seed 003 (host and PEs one-port,
# lock-step rounds), as a Markdown table per n, times in µs.
#
#   scripts/download-table.sh [extra sweep options]
#
# With no options: the paper's constants (2.3), β = β_h = 6500 µs, τ = τ_h = 8 µs per
# element. Extra options are passed to `hypercomm sweep`, e.g.
#   scripts/download-table.sh --host-beta 65000 --host-tau 80     # a host 10× slower
# The columns are the simulator's times; every row is verified, and each time equals
# the algorithm's exact closed form (the sweep's `formula` column).
set -euo pipefail
bin=${HYPERCOMM:-target/release/hypercomm}
[ -x "$bin" ] || cargo build --release -q -p hypercomm-cli
for n in 3 4 5; do
  echo
  echo "n = $n (k = $((1 << n)) PEs)"
  echo
  echo "| m (block) | N = km | SL | DS | Gichev | optimal | Gichev / optimal | DS < SL |"
  echo "|---:|---:|---:|---:|---:|---:|---:|:--|"
  "$bin" sweep --topology "hypercube:$n+host" --op download --algo sl,ds,gichev,optimal \
    --len 1..65536x4 --beta 6500 --tau 8 --ports one "$@" |
    awk -F, -v k=$((1 << n)) 'NR > 1 {
        if ($10 != "true" || $4 - $8 > 1e-9 * $4 || $8 - $4 > 1e-9 * $4) { print "unverified or off its formula: " $0 > "/dev/stderr"; exit 1 }
        t[$1, $3] = $4; if (!($1 in seen)) { seen[$1] = 1; order[++c] = $1 } }
      END { for (i = 1; i <= c; i++) { m = order[i]
        printf "| %d | %d | %.0f | %.0f | %.0f | %.0f | %.3f | %s |\n", m, k * m, t[m, "sl"], t[m, "ds"],
          t[m, "gichev"], t[m, "optimal"], t[m, "gichev"] / t[m, "optimal"],
          (t[m, "ds"] < t[m, "sl"]) ? "yes" : "**no**" } }'
done
