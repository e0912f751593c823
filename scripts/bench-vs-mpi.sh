#!/usr/bin/env bash
# Threads backend against Open MPI's native collectives, same machine, same run.
#
#   scripts/bench-vs-mpi.sh [K] [MAX_BYTES] [OPS...]
#
# K ranks (default 4), sizes 8 B .. MAX_BYTES (default 1 MiB, powers of two), OPS among
# allgather alltoall broadcast allreduce (default: all four). For every repetition (REPS,
# default 3) and every op, runs back to back
#   - `hypercomm bench --backend threads --ranks K --op OP --algo ALGO` (ALGO default
#     `all`: every algorithm that fits; `ALGO=auto` for auto only), and
#   - `mpirun -n K hypercomm-mpi vs-native --ops OP` (native MPI_Allgather, MPI_Alltoall,
#     MPI_Bcast, MPI_Allreduce; root 0),
# alternating which of the two goes first from one repetition to the next. Then prints a
# Markdown table per op: size, threads µs (algorithm), native MPI µs, threads/native.
#
# Conventions, made to match:
#   - size = bytes per rank's block (OSU): a rank's contribution for allgather, one
#     (source, destination) block for alltoall, the whole message for broadcast and
#     allreduce. The threads bench counts u8 elements, vs-native u64 elements
#     (size / 8 of them): the same bytes, hence sizes from 8 B.
#   - time = mean µs per call, max over ranks (threads: the `max_us` column; vs-native
#     --stat mean, max over ranks), barrier between calls, outside the timed region.
#   - threads: per (algorithm, size), the median over the repetitions; then the fastest
#     algorithm per size (with ALGO=all this picks the best of ~10 noisy medians, which
#     favours threads a little). native: the median over repetitions per size.
#     ratio = threads / native of those medians; "ratio range" is min–max over the
#     repetitions of (fastest threads algorithm of that repetition) / (native of it).
#   - iterations: threads OSU's (1000 timed after 200 warm-up up to 8 KiB, 100 after 10
#     above); vs-native 200 timed after 20 warm-up (20 after 2 from 256 KiB).
#
#   - barrier: both sides run the same barrier algorithm between calls (BARRIER,
#     default recursive-doubling; or tree): `hypercomm bench --barrier B` and Open MPI's
#     `coll_tuned_barrier_algorithm` 3 or 6 (with coll_tuned_use_dynamic_rules, which
#     leaves every other collective to Open MPI's fixed rules). Each rank times a call
#     from its own exit from the barrier, so the barrier's exit order shapes what is
#     measured (a tree barrier lets rank 0 leave first: a broadcast from rank 0 then
#     looks faster). BARRIER=native leaves Open MPI's barrier to its own choice.
#
#   - binding: PIN=1 (the default) binds both sides' ranks to cores: `hypercomm bench
#     --pin on` (blocks: rank r of K on core r·n/K) and `mpirun --bind-to
#     core:overload-allowed` (round robin); PIN=0 binds neither (`--pin off`, `mpirun
#     --bind-to none`). Left to themselves, Open MPI binds when K <= cores and
#     hypercomm when K > cores.
#
# Environment: REPS (3), ALGO (all), BARRIER (recursive-doubling), PIN (1), FIBERS (1:
# `--fibers auto`, the CLI's default; 0: `--fibers off`, a thread per rank), MPIRUN_FLAGS (default
# as in crates/hypercomm-mpi/tests/mpirun.rs: --oversubscribe --mca mpi_yield_when_idle
# 1), KEEP=dir to keep the raw outputs, OUTPUT=tsv for one tab-separated line per (op,
# size) instead of the tables: op, size, algorithm, threads µs, native µs, threads /
# native, then the per-repetition ratio's min, median and max (what
# scripts/bench-table-threads-vs-mpi.sh reads). Builds the two binaries (release) first.
set -euo pipefail

K=${1:-4}
MAX=${2:-1048576}
shift $(( $# < 2 ? $# : 2 ))
OPS=("$@")
[ ${#OPS[@]} -eq 0 ] && OPS=(allgather alltoall broadcast allreduce)
REPS=${REPS:-3}
ALGO=${ALGO:-all}
MPIRUN_FLAGS=${MPIRUN_FLAGS:---oversubscribe --mca mpi_yield_when_idle 1}
BARRIER=${BARRIER:-recursive-doubling}
case $BARRIER in
    recursive-doubling) OURS=recursive-doubling; NATIVE_BARRIER="--mca coll_tuned_use_dynamic_rules 1 --mca coll_tuned_barrier_algorithm 3" ;;
    tree) OURS=tree; NATIVE_BARRIER="--mca coll_tuned_use_dynamic_rules 1 --mca coll_tuned_barrier_algorithm 6" ;;
    native) OURS=recursive-doubling; NATIVE_BARRIER="" ;;
    *) echo "BARRIER=$BARRIER: valid: recursive-doubling, tree, native" >&2; exit 2 ;;
esac

# FIBERS=1 (the default, as the CLI's `--fibers auto`): ours runs the ranks that share a
# core as fibers of one thread per core; FIBERS=0 (`--fibers off`): a thread per rank.
case ${FIBERS:-1} in
    0) FIB_OURS="--fibers off" ;;
    1) FIB_OURS="--fibers auto" ;;
    *) echo "FIBERS=$FIBERS: valid: 0, 1" >&2; exit 2 ;;
esac

case ${PIN:-1} in
    0) PIN_OURS="--pin off"; PIN_NATIVE="--bind-to none" ;;
    1) PIN_OURS="--pin on"; PIN_NATIVE="--bind-to core:overload-allowed" ;;
    *) echo "PIN=$PIN: valid: 0, 1" >&2; exit 2 ;;
esac

cd "$(dirname "$0")/.."
cargo build --release -q -p hypercomm-cli -p hypercomm-mpi >&2
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

if [ -n "${KEEP:-}" ]; then OUT=$KEEP; mkdir -p "$OUT"; else
    OUT=$(mktemp -d); trap 'rm -rf "$OUT"' EXIT; fi

threads() { # op rep
    # shellcheck disable=SC2086
    target/release/hypercomm bench --backend threads --ranks "$K" --op "$1" \
        --algo "$ALGO" --barrier "$OURS" $PIN_OURS $FIB_OURS --min-size 8 --max-size "$MAX" --format csv >"$OUT/threads.$1.$2.csv"
}
native() { # op rep
    # shellcheck disable=SC2086
    mpirun $MPIRUN_FLAGS $NATIVE_BARRIER $PIN_NATIVE -n "$K" target/release/hypercomm-mpi vs-native \
        --ops "$1" --max-bytes "$MAX" --stat mean >"$OUT/native.$1.$2.txt"
}

echo "# $(date -u +%FT%TZ), K=$K, sizes 8..$MAX B, ALGO=$ALGO, BARRIER=$BARRIER, PIN=${PIN:-1}, FIBERS=${FIBERS:-1}, REPS=$REPS, load: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
for rep in $(seq 1 "$REPS"); do
    for op in "${OPS[@]}"; do
        echo "# rep $rep: $op" >&2
        if [ $((rep % 2)) -eq 1 ]; then threads "$op" "$rep"; native "$op" "$rep"
        else native "$op" "$rep"; threads "$op" "$rep"; fi
    done
done

python3 - "$OUT" "$K" "$REPS" "$ALGO" "${OUTPUT:-markdown}" "${OPS[@]}" <<'EOF'
import csv, statistics, sys
out, k, reps, algo, output, ops = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5], sys.argv[6:]
tsv = output == "tsv"

def size_name(b):
    for unit, n in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if b >= n and b % n == 0:
            return f"{b // n} {unit}"
    return f"{b} B"

def fmt(x):
    return f"{x:.3g}" if x < 100 else f"{x:.0f}"

def threads(op, rep):  # {size: {algo: max_us}}
    t = {}
    with open(f"{out}/threads.{op}.{rep}.csv") as f:
        for row in csv.DictReader(f):
            t.setdefault(int(row["size"]), {})[row["algo"]] = float(row["max_us"])
    return t

def native(op, rep):  # {size: native µs}
    n = {}
    with open(f"{out}/native.{op}.{rep}.txt") as f:
        for line in f:
            w = line.split()
            if len(w) >= 3 and w[0].lower() == op.lower() and w[1].isdigit():
                n[int(w[1])] = float(w[2])
    return n

for op in ops:
    T = [threads(op, r) for r in range(1, reps + 1)]
    N = [native(op, r) for r in range(1, reps + 1)]
    if not tsv:
        print(f"\n#### {op}, {k} ranks (threads: {'best of --algo all' if algo == 'all' else algo}; median of {reps} runs)\n")
        print("| size | threads µs (algorithm) | native MPI µs | threads / native | ratio range |")
        print("|---|---|---:|---:|---:|")
    for s in sorted(set(T[0]) & set(N[0])):
        algos = set.intersection(*(set(t.get(s, {})) for t in T))
        med = {a: statistics.median(t[s][a] for t in T) for a in algos}
        best = min(med, key=med.get)
        nat = statistics.median(n[s] for n in N if s in n)
        per_rep = [min(t[s].values()) / n[s] for t, n in zip(T, N) if s in n]
        if tsv:
            print(op, s, best, med[best], nat, med[best] / nat, min(per_rep),
                  statistics.median(per_rep), max(per_rep), sep="\t")
            continue
        print(f"| {size_name(s)} | {fmt(med[best])} ({best}) | {fmt(nat)} | "
              f"{med[best] / nat:.2f} | {min(per_rep):.2f}–{max(per_rep):.2f} |")
EOF
