#!/usr/bin/env bash
# BENCHMARKS.md, "Product all-to-all (issue 18)": the decomposed all-to-all `product`
# (ranks laid out as a shape AxB, one dimension at a time) against `pairwise`, `bruck`
# and, on MPI, Open MPI's own MPI_Alltoall (`native`), all in the same run, on K = 4, 6,
# 8 and 12 ranks. `hypercomm-mpi bench` under mpirun and `hypercomm bench --backend
# threads`, OSU's conventions: per-block message size in bytes, avg µs per call over the
# ranks (each rank times its calls from its own exit from a barrier), ITERS timed calls
# after WARMUP untimed ones; every algorithm of a size in one job, one after the other.
# Each (K, size) is run RUNS times (default 3). Per cell: the median over the runs of
# the algorithm's time / native's (MPI) or / pairwise's (threads, which has no native),
# and the min–max of that ratio over the runs; native's (pairwise's) own median µs.
# The shape of K is SHAPE_K (default 4: 2x2, 6: 2x3, 8: 2x4, 12: 3x4), given with
# --shape; the runtime's default calibration (HYPERCOMM_CALIBRATION=off), which no
# algorithm here depends on.
#
# Usage: [RUNS=3] [KS="4 6 8 12"] [SIZES="8 1024 65536"] [ITERS=100] [WARMUP=10]
#        [BACKENDS="mpi threads"] [MPIRUN_FLAGS=--oversubscribe]
#        [SMOKE=1: 8 B, 2 runs, 5 iterations] scripts/bench-table-product.sh
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/bench-lib.sh
RUNS=${RUNS:-3}; KS=${KS:-4 6 8 12}; SIZES=${SIZES:-8 1024 65536}
ITERS=${ITERS:-100}; WARMUP=${WARMUP:-10}; BACKENDS=${BACKENDS:-mpi threads}
MPIRUN_FLAGS=${MPIRUN_FLAGS:---oversubscribe}
if [ "${SMOKE:-0}" = 1 ]; then RUNS=2; SIZES=8; ITERS=5; WARMUP=1; fi
shape() { case $1 in 4) echo 2x2 ;; 6) echo 2x3 ;; 8) echo 2x4 ;; 12) echo 3x4 ;; *)
    echo "no default shape for $1 ranks: set KS to some of 4 6 8 12" >&2; exit 2 ;; esac; }
for k in $KS; do shape "$k" >/dev/null; done
case " $BACKENDS " in *" mpi "*)
    command -v mpirun >/dev/null || { echo "needs Open MPI (mpirun): apt-get install openmpi-bin libopenmpi-dev libclang-dev" >&2; exit 1; }
    cargo build --release -q -p hypercomm-mpi >&2 ;;
esac
cargo build --release -q -p hypercomm-cli >&2
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
out=$(mktemp -d); trap 'rm -rf "$out"' EXIT
cpus=$(nproc)
for backend in $BACKENDS; do
    for k in $KS; do
        for size in $SIZES; do
            for r in $(seq "$RUNS"); do
                common=(bench --op alltoall --shape "$(shape "$k")" --min-size "$size"
                        --max-size "$size" --iters "$ITERS" --warmup "$WARMUP" --format csv)
                f="$out/$backend.$k.$size.$r"
                if [ "$backend" = mpi ]; then
                    # shellcheck disable=SC2086
                    env HYPERCOMM_CALIBRATION=off XDG_CONFIG_HOME="$out" HOME="$out" \
                        mpirun $MPIRUN_FLAGS -n "$k" target/release/hypercomm-mpi "${common[@]}" \
                        --algo product,pairwise,bruck,native >"$f"
                else
                    env HYPERCOMM_CALIBRATION=off XDG_CONFIG_HOME="$out" HOME="$out" \
                        target/release/hypercomm "${common[@]}" --backend threads --ranks "$k" \
                        --algo product,pairwise,bruck >"$f"
                fi
            done
        done
    done
done
over=""; [ "$(echo "$KS" | tr ' ' '\n' | sort -n | tail -1)" -gt "$cpus" ] && over=", oversubscribed (up to $(echo "$KS" | tr ' ' '\n' | sort -n | tail -1) ranks on $cpus CPUs)"
bench_stamp "$RUNS runs per cell, $ITERS iterations after $WARMUP warm-up$over, $(mpirun --version 2>/dev/null | head -1 || echo 'no MPI'), \`scripts/bench-table-product.sh\`"
bench_smoke_note
python3 - "$out" "$RUNS" "$KS" "$SIZES" "$BACKENDS" <<'PY'
import csv, statistics, sys
out, runs = sys.argv[1], int(sys.argv[2])
ks, sizes, backends = (s.split() for s in sys.argv[3:6])
shapes = {"4": "2x2", "6": "2x3", "8": "2x4", "12": "3x4"}
def size(b):
    b = int(b)
    return f"{b >> 10} KiB" if b >= 1024 and b % 1024 == 0 else f"{b} B"
for backend in backends:
    ref = "native" if backend == "mpi" else "pairwise"
    algos = ["product", "pairwise", "bruck"] if backend == "mpi" else ["product", "bruck"]
    print()
    name = "MPI backend" if backend == "mpi" else "threads backend"
    print(f"**{name}**: time / {ref}'s (median over the runs, min–max), and {ref}'s median µs")
    print()
    print(f"| ranks (shape) | bytes per block | {ref} µs | " + " | ".join(f"{a} / {ref}" for a in algos) + " |")
    print("|---|---:|---:|" + "---:|" * len(algos))
    for k in ks:
        for s in sizes:
            t = {a: [] for a in algos + [ref]}
            for r in range(1, runs + 1):
                rows = {row["algo"]: float(row["avg_us"]) for row in csv.DictReader(open(f"{out}/{backend}.{k}.{s}.{r}"))}
                for a in t:
                    t[a].append(rows[a])
            cells = []
            for a in algos:
                ratio = [x / y for x, y in zip(t[a], t[ref])]
                cells.append(f"{statistics.median(ratio):.2f} ({min(ratio):.2f}–{max(ratio):.2f})")
            print(f"| {k} ({shapes[k]}) | {size(s)} | {statistics.median(t[ref]):.3g} | " + " | ".join(cells) + " |")
PY
