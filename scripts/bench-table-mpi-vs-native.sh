#!/usr/bin/env bash
# BENCHMARKS.md, "MPI backend against native MPI": `mpirun -n K hypercomm-mpi vs-native`
# (the same collective through hypercomm's `auto` on the MPI backend and through the MPI
# library's own MPI_Bcast, MPI_Allgather, MPI_Allreduce, MPI_Alltoall, in the same run;
# per call, max over ranks, a barrier before each call, native and ours taking turns call
# by call; STAT=median (default: robust to a time slice lost to another process) or mean,
# OSU's), run RUNS times (default
# 3) for each K in KS (default "2 4 8"; more ranks than cores run oversubscribed), sizes
# 8 B to MAX_BYTES (default 4 MiB). Each run starts from an empty home: no calibration
# file and no tuning file, so the run measures its calibration (ranks 0 and 1, before
# the table) and `auto` its picks, as on a new machine (the time the picks took is in
# the run's `# auto:` lines, kept in the full table's file).
#
# Prints, per K and collective: the largest median ours/native over the sizes (and
# where), how many sizes exceed 1.05, and the smallest median ratio with the algorithm
# that ran. With FULL=FILE, every (K, collective, size) row goes to FILE as well.
#
# MPICH (4.0, ch4:ucx) on more ranks than CPUs: its progress engine polls without ever
# yielding, so a rank waiting for a descheduled peer keeps its core until the next timer
# tick and each dependent step costs a time slice (one 4-rank run to 64 KiB: over 4
# minutes, not finished; 8 ranks: 60 ms per all-gather of 8 B). For those K the script
# preloads scripts/mpich-yield.c (built into target/mpich/), which yields the core after
# an idle UCX progress poll as MPICH 5.0's MPIR_CVAR_CH4_PROGRESS_THROTTLE does; the same
# run took 131 s (docs/perf-log/2026-11-27-mpich-oversubscribed.md). MPICH_YIELD=0 never
# preloads it, MPICH_YIELD=1 always; UCX_LOG_LEVEL defaults to error.
#
# HOSTS=2 (Open MPI, root): each job on two hosts of K/2 ranks as a cluster runs one,
# both on this machine: mpirun's launcher is scripts/fake-ssh (the second host's ranks in
# a UTS namespace of another host name), so Open MPI uses TCP between the hosts and
# hypercomm tells them apart by name (its calibration measures the network, its files
# are `-{K/2}perhost`); `--bind-to none`, the hosts sharing this machine's cores, and
# `mpi_yield_when_idle` when K passes the CPUs.
#
# Usage: [MPI=openmpi|mpich] [HOSTS=1|2] [STAT=median|mean] [RUNS=3] [KS="2 4 8"] [ITERS=N: vs-native --iters; default OSU's] [FULL=file.md] [MPIRUN_FLAGS=...]
#        [MPICH_YIELD=auto|0|1] [SMOKE=1: 8-64 B, 2 runs, 20 iterations, K=2]
#        scripts/bench-table-mpi-vs-native.sh [MAX_BYTES]
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/bench-lib.sh
MAX=${1:-4194304}; RUNS=${RUNS:-3}; KS=${KS:-2 4 8}; ITERS=${ITERS:-}
if [ "${SMOKE:-0}" = 1 ]; then MAX=64; RUNS=2; ITERS=20; KS=2; fi
MPI=${MPI:-openmpi}; STAT=${STAT:-median}
case ${MPICH_YIELD:=auto} in auto | 0 | 1) ;; *) echo "MPICH_YIELD=$MPICH_YIELD: valid values are auto, 0 and 1" >&2; exit 2 ;; esac
# Checked before anything builds or runs.
case ${HOSTS:=1} in
1) ;;
2) [ "$MPI" = openmpi ] || { echo "HOSTS=2 runs Open MPI's launcher: MPI=openmpi" >&2; exit 2; }
   unshare --uts true 2>/dev/null || { echo "HOSTS=2 needs root and unshare (util-linux)" >&2; exit 1; }
   for k in $KS; do
       [ $((k % 2)) = 0 ] || { echo "HOSTS=2: K=$k is not even (K/2 ranks a host); valid: even K" >&2; exit 2; }
   done ;;
*) echo "HOSTS=$HOSTS: valid values are 1 and 2" >&2; exit 2 ;;
esac
case $MPI in
openmpi)
    command -v mpirun >/dev/null || { echo "needs Open MPI (mpirun): apt-get install openmpi-bin libopenmpi-dev libclang-dev" >&2; exit 1; }
    cargo build --release -q -p hypercomm-mpi >&2
    MPIRUN=(mpirun --oversubscribe); BIN=target/release/hypercomm-mpi; VERSION=$(mpirun --version | head -1) ;;
mpich)
    command -v mpirun.mpich >/dev/null || { echo "needs MPICH (mpirun.mpich): apt-get install mpich libmpich-dev libclang-dev" >&2; exit 1; }
    MPICC=mpicc.mpich CARGO_TARGET_DIR=target/mpich cargo build --release -q -p hypercomm-mpi >&2
    MPIRUN=(mpirun.mpich); BIN=target/mpich/release/hypercomm-mpi; VERSION="MPICH $(mpichversion 2>/dev/null | sed -n 's/MPICH Version:[[:space:]]*//p')"
    SHIM=target/mpich/mpich-yield.so
    cc -O2 -shared -fPIC scripts/mpich-yield.c -o "$SHIM" -ldl
    export UCX_LOG_LEVEL=${UCX_LOG_LEVEL:-error} ;;
*) echo "MPI=$MPI: valid values are openmpi and mpich" >&2; exit 2 ;;
esac
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
out=$(mktemp -d); trap 'rm -rf "$out"' EXIT
cpus=$(getconf _NPROCESSORS_ONLN); yielded=""
for k in $KS; do
    preload=()
    if [ "$HOSTS" = 2 ]; then
        printf 'localhost slots=%s\nhc-other-host slots=%s\n' $((k / 2)) $((k / 2)) >"$out/hosts.$k"
        # Each host's slots are its ranks, so Open MPI does not know they share the
        # machine's cores: told to yield when idle, as it does when oversubscribed (a
        # 4-rank broadcast of 256 KiB took 8 ms, busy polls taking turns by time slices).
        preload=(--mca plm_rsh_agent "$PWD/scripts/fake-ssh" --hostfile "$out/hosts.$k" --bind-to none
            --mca mpi_yield_when_idle "$((k > cpus ? 1 : 0))")
    fi
    if [ "$MPI" = mpich ] && { [ "$MPICH_YIELD" = 1 ] || { [ "$MPICH_YIELD" = auto ] && [ "$k" -gt "$cpus" ]; }; }; then
        preload=(-genv LD_PRELOAD "$PWD/$SHIM"); yielded="$yielded $k"
    fi
    for r in $(seq "$RUNS"); do
        home="$out/home.$k.$r"; mkdir -p "$home"
        # shellcheck disable=SC2086
        env -u HYPERCOMM_CALIBRATION -u HYPERCOMM_TUNING -u XDG_CACHE_HOME \
            XDG_CONFIG_HOME="$home" HOME="$home" \
            "${MPIRUN[@]}" "${preload[@]}" ${MPIRUN_FLAGS:-} -n "$k" "$BIN" \
            vs-native --max-bytes "$MAX" ${ITERS:+--iters "$ITERS"} --stat "$STAT" >"$out/run.$k.$r"
    done
done
yield_note=""; [ -n "$yielded" ] && yield_note=" (K =$yielded with scripts/mpich-yield.c preloaded)"
hosts_note=""; [ "$HOSTS" = 2 ] && hosts_note=", on 2 hosts of K/2 ranks (scripts/fake-ssh, TCP between them)"
bench_stamp "K = $KS ranks$hosts_note, $RUNS runs each, ${ITERS:-OSU} timed turns per size, $STAT per call, $VERSION$yield_note, \`MPI=$MPI STAT=$STAT HOSTS=$HOSTS scripts/bench-table-mpi-vs-native.sh $MAX\`"
bench_smoke_note
echo
python3 - "$out" "$RUNS" "$KS" "${FULL:-}" <<'PY'
import collections, statistics, sys
out, runs, ks, full = sys.argv[1], int(sys.argv[2]), sys.argv[3].split(), sys.argv[4]
g = lambda x: f"{x:.3g}"
summary = ["| K | collective | worst median ours/native (size) | sizes > 1.05 | best median ours/native (size, algorithm) |",
           "|---:|---|---:|---:|---:|"]
rows = ["| K | collective | bytes | native µs | ours µs | ours/native median (min–max) | algorithm |",
        "|---:|---|---:|---:|---:|---:|---|"]
for k in ks:
    d = collections.OrderedDict()
    for r in range(1, runs + 1):
        for line in open(f"{out}/run.{k}.{r}"):
            w = line.split()
            if len(w) >= 8 and w[1].isdigit():
                e = d.setdefault((w[0], int(w[1])), {"n": [], "o": [], "a": collections.Counter()})
                e["n"].append(float(w[2])); e["o"].append(float(w[3])); e["a"][w[7]] += 1
    by_op = collections.OrderedDict()
    for (op, b), e in d.items():
        ratio = [o / n for o, n in zip(e["o"], e["n"])]
        med = statistics.median(ratio)
        algo = ", ".join(a for a, _ in e["a"].most_common())
        by_op.setdefault(op, []).append((med, b, algo))
        rows.append(f"| {k} | {op} | {b} | {g(statistics.median(e['n']))} | {g(statistics.median(e['o']))} | "
                    f"{med:.2f} ({min(ratio):.2f}–{max(ratio):.2f}) | {algo} |")
    for op, cells in by_op.items():
        worst = max(cells); best = min(cells)
        over = sum(1 for c in cells if c[0] > 1.05)
        summary.append(f"| {k} | {op} | {worst[0]:.2f} ({worst[1]} B) | {over} of {len(cells)} | "
                       f"{best[0]:.2f} ({best[1]} B, {best[2]}) |")
print("\n".join(summary))
if full:
    with open(full, "w") as f:
        f.write("\n".join(rows) + "\n")
PY
