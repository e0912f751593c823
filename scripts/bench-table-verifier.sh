#!/usr/bin/env bash
# BENCHMARKS.md, "Verifier: scale": full verification (`verify::verify_with`, the steps
# generated and streamed as `hypercomm verify` does) of every registry algorithm that fits
# hypercube:N (default 12, 4,096 nodes; issue 3's target), block length LEN (default 7),
# on 1 thread and on THREADS threads (default: every CPU; `verify::Options::threads`),
# one process per run so that each peak RSS is its own (/usr/bin/time), the two thread
# counts interleaved, RUNS runs each (default 3). Per algorithm: the regions its programs
# hold, verify s median (min–max) on each thread count, the largest peak RSS, the verdict.
# (Replaces scripts/bench-verify.sh and scripts/bench-verify-threads.sh.)
#
# Usage: [RUNS=3] [THREADS=T] [LEN=7] [SMOKE=1: hypercube:6] scripts/bench-table-verifier.sh [N] [OP/ALGO ...]
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/bench-lib.sh
RUNS=${RUNS:-3}; LEN=${LEN:-7}; THREADS=${THREADS:-$(nproc)}
n=${1:-12}; [ "${SMOKE:-0}" = 1 ] && n=6
shift $(( $# > 0 ? 1 : 0 ))
cargo build -q --release -p hypercomm --example verify_time >&2
cargo build -q --release -p hypercomm-cli >&2
bin=target/release/examples/verify_time
if [ $# -gt 0 ]; then pairs=("$@"); else
    mapfile -t pairs < <(target/release/hypercomm algorithms --format json |
        python3 -c 'import json, sys; [print(a["op"] + "/" + a["name"]) for a in json.load(sys.stdin)]')
fi
out=$(mktemp); trap 'rm -f "$out"' EXIT
for p in "${pairs[@]}"; do
    op=${p%%/*}; algo=${p#*/}
    for _ in $(seq "$RUNS"); do for t in 1 "$THREADS"; do
        o=$( { /usr/bin/time -f "RSS %M" "$bin" "$op" "$algo" "$n" "$LEN" "$t"; } 2>&1 ) || true
        if grep -q "^skip:" <<<"$o"; then continue 3; fi   # fits no hypercube (complete:K)
        v=$(sed -n 's/^verify \([0-9.]*\)s.*/\1/p' <<<"$o")
        ok=$(grep -q "^verify .*None" <<<"$o" && echo yes || echo NO)
        regions=$(sed -n 's/.*s, \([0-9]*\) regions/\1/p' <<<"$o")
        rss=$(sed -n 's/^RSS \([0-9]*\)/\1/p' <<<"$o")
        echo "$op $algo $t ${v:-nan} ${rss:-0} ${regions:-0} $ok" >>"$out"
    done; done
done
bench_stamp "hypercube:$n, len $LEN, $RUNS runs per thread count, \`scripts/bench-table-verifier.sh\`"
bench_smoke_note
echo
echo "| op | algo | regions | verify s, 1 thread | verify s, $THREADS threads | peak RSS MiB, 1 / $THREADS threads | verified |"
echo "|---|---|---:|---:|---:|---:|---|"
python3 - "$out" "$THREADS" <<'PY'
import collections, statistics, sys
d = collections.OrderedDict()
for line in open(sys.argv[1]):
    op, algo, t, v, rss, regions, ok = line.split()
    e = d.setdefault((op, algo), {"regions": int(regions), "ok": set(), "t": {}, "rss": {}})
    e["t"].setdefault(t, []).append(float(v)); e["ok"].add(ok)
    e["rss"][t] = max(e["rss"].get(t, 0), int(rss) // 1024)
def spread(v):
    f = lambda x: f"{x:.2f}"
    return f"{f(statistics.median(v))} ({f(min(v))}–{f(max(v))})"
T = sys.argv[2]
for (op, algo), e in d.items():
    ok = "yes" if e["ok"] == {"yes"} else "NO"
    print(f"| {op} | {algo} | {e['regions']:,} | {spread(e['t']['1'])} | {spread(e['t'][T])} | "
          f"{e['rss']['1']} / {e['rss'][T]} | {ok} |")
PY
