#!/usr/bin/env bash
# BENCHMARKS.md, "auto against the best algorithm" (issue 20): `bench --algo all,auto`
# (every algorithm that fits and `auto`, side by side in ONE run; on MPI `native` too,
# `--algo all,native,auto`) for each op of OPS (default broadcast, allgather, allreduce,
# alltoall), sizes 8 B to MAX_BYTES (default 4 MiB):
#   - threads backend, K in KS_THREADS (default "2 4"; ranks beyond the CPUs run as
#     fibers, the CLI's default);
#   - MPI backend (MPI=auto: when mpirun is found; MPI=0 skips it, MPI=1 requires it),
#     Open MPI `mpirun --oversubscribe -n K hypercomm-mpi bench`, K in KS_MPI (default
#     "2 4").
# Every run starts from an empty home (no calibration file, no tuning file, no
# HYPERCOMM_* variable), as a new user: the run measures its calibration and `auto` its
# picks in that run. RUNS runs
# (default 6) of each; ITERS timed calls per algorithm and size (default: bench's own,
# OSU's 1000 after 200 warm-up up to 8 KiB, 100 after 10 above; a number N: N after
# N/10). A time is bench's max_us (STAT=max, the default: the slowest rank's mean per
# call, the collective's completion time, which auto's tuning and vs-native measure) or
# avg_us (STAT=avg: the mean over ranks).
#
# A cell is held out (EVAL=held-out, the default): the odd runs name the best algorithm
# (the least median over them), the even runs measure it: the median over the even runs
# of each run's auto / that algorithm (side by side in one run: whole runs differ by 2x
# on a VM whose state changes, and a ratio of medians taken apart mixed the states).
# Naming the best and measuring it in the same runs (EVAL=same, all runs) is biased
# against auto: the least of a dozen noisy medians is lower than the true time of any of
# them (with a dozen algorithms tied within 10 %, it sits near 0.9 of their times, and
# auto, one of them, lands near 1.1 of it). Both counts are printed. FROM_ROWS=FILE
# analyses the rows an earlier run kept with ROWS=FILE instead of measuring.
#
# INTERLEAVE=1 passes `--interleave`: the algorithms of a size (auto among them) take
# turns call by call. INTERLEAVE=0 (the default) times each algorithm's calls in a block,
# OSU's way, as auto's tuning does. Interleaving a dozen algorithms made it worse on the
# AMD VM (91 of 320 cells above 1.1 held out, against 29 in blocks: a call after another
# algorithm's finds the caches, and 4 oversubscribed ranks the scheduler, in another
# state; docs/perf-log/2026-11-28-auto-calibration.md).
#
# Prints, per (backend, ranks, op): how many sizes have a median auto/best > 1.1 (and of
# them, at how many auto ran the schedule that was fastest, under its name or another
# with the same schedule (bench's `schedule` digest: recursive doubling and dimension
# exchange are one all-reduce on 2^n ranks): the run's noise), the worst
# median (size, what auto ran, what was fastest), and how long auto's tuning took:
# the wall time of `bench --algo auto` at one size from an empty home minus the same with
# HYPERCOMM_TUNING=off, median over the runs. With FULL=FILE, every (backend, ranks, op,
# size) row goes to FILE as well; with ROWS=FILE, the raw rows (both statistics).
#
# Usage: [RUNS=6] [ITERS=osu|N] [STAT=max|avg] [EVAL=held-out|same] [INTERLEAVE=0|1] [OPS="broadcast ..."]
#        [KS_THREADS="2 4"] [KS_MPI="2 4"] [MPI=auto|0|1] [FULL=file.md] [FROM_ROWS=rows]
#        [SMOKE=1: 8-64 B, 2 runs, 5 iterations, 2 ranks]
#        [BIN_DIR=dir: the binaries to run, built elsewhere; default target/release, built]
#        scripts/bench-table-auto.sh [MAX_BYTES]
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/bench-lib.sh
MAX=${1:-4194304}; RUNS=${RUNS:-6}; ITERS=${ITERS:-osu}
OPS=${OPS:-broadcast allgather allreduce alltoall}
KS_THREADS=${KS_THREADS:-2 4}; KS_MPI=${KS_MPI:-2 4}
if [ "${SMOKE:-0}" = 1 ]; then MAX=64; RUNS=2; ITERS=5; KS_THREADS=2; KS_MPI=2; fi
# At least one untimed call: auto measures its picks in its first call (bench's own
# counts warm up with 200 or 10).
if [ "$ITERS" = osu ]; then
    COUNTS=()
else
    COUNTS=(--iters "$ITERS" --warmup $(( ITERS / 10 > 0 ? ITERS / 10 : 1 )))
fi
EVAL=${EVAL:-held-out}
case "$EVAL" in held-out | same) ;; *) echo "EVAL must be held-out or same, not $EVAL" >&2; exit 2 ;; esac
if [ "$EVAL" = held-out ] && [ "$RUNS" -lt 2 ]; then
    echo "EVAL=held-out needs RUNS of at least 2 (odd runs name the best, even runs measure it), not $RUNS" >&2
    exit 2
fi
INTERLEAVE=${INTERLEAVE:-0}
case "$INTERLEAVE" in 1) TURNS=(--interleave) ;; 0) TURNS=() ;; *) echo "INTERLEAVE must be 1 or 0, not $INTERLEAVE" >&2; exit 2 ;; esac
STAT=${STAT:-max}
case "$STAT" in max | avg) ;; *) echo "STAT must be max or avg, not $STAT" >&2; exit 2 ;; esac
MPI=${MPI:-auto}
if [ "$MPI" = auto ]; then command -v mpirun >/dev/null && MPI=1 || MPI=0; fi
if [ -z "${BIN_DIR:-}" ]; then
    BIN_DIR=target/release
    cargo build --release -q -p hypercomm-cli >&2
    [ "$MPI" = 1 ] && cargo build --release -q -p hypercomm-mpi >&2
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
out=$(mktemp -d); trap 'rm -rf "$out"' EXIT

# `fresh HOME CMD...`: CMD as a new user whose home is HOME (created empty).
fresh() {
    local home=$1; shift
    rm -rf "$home"; mkdir -p "$home"
    env -u HYPERCOMM_CALIBRATION -u HYPERCOMM_TUNING -u XDG_CACHE_HOME \
        XDG_CONFIG_HOME="$home/.config" HOME="$home" "$@"
}
# `seconds CMD...`: CMD's wall time in seconds, its output dropped.
seconds() {
    local t0 t1
    t0=$(date +%s.%N); "$@" >/dev/null; t1=$(date +%s.%N)
    echo "$t1 - $t0" | bc -l
}

# `one BACKEND K OP RUN LAUNCH...`: one run of bench, rows to $out/rows as
# "backend k op run size algo auto avg_us max_us schedule" (the schedule's digest, `-`
# for native), and the tuning time to $out/tuning.
one() {
    local backend=$1 k=$2 op=$3 run=$4; shift 4
    local algos=all,auto
    [ "$backend" = mpi ] && algos=all,native,auto
    fresh "$out/home" "$@" bench --ranks "$k" --op "$op" --algo "$algos" --min-size 8 \
        --max-size "$MAX" "${COUNTS[@]}" ${TURNS[@]+"${TURNS[@]}"} --format csv |
        awk -F, -v b="$backend" -v k="$k" -v op="$op" -v r="$run" \
            'NR > 1 {print b, k, op, r, $3, $1, $2, $6, $8, ($NF == "" ? "-" : $NF)}' >>"$out/rows"
    local one_size=(bench --ranks "$k" --op "$op" --algo auto --min-size 8 --max-size 8 --iters 1 --warmup 0)
    local tuned off
    # Both without a calibration (HYPERCOMM_CALIBRATION=off): an empty home's first
    # command measures one, 0.5-1 s that is not the tuning's.
    tuned=$(seconds fresh "$out/home" env HYPERCOMM_CALIBRATION=off "$@" "${one_size[@]}")
    off=$(seconds fresh "$out/home" env HYPERCOMM_CALIBRATION=off HYPERCOMM_TUNING=off "$@" "${one_size[@]}")
    echo "$backend $k $op $tuned $off" >>"$out/tuning"
}

if [ -n "${FROM_ROWS:-}" ]; then
    # Only the analysis, of rows kept by an earlier run's ROWS=FILE (no tuning times).
    cp "$FROM_ROWS" "$out/rows"; : >"$out/tuning"; OPS=""
fi
for op in $OPS; do
    for k in $KS_THREADS; do
        for r in $(seq "$RUNS"); do one threads "$k" "$op" "$r" "$BIN_DIR/hypercomm"; done
    done
    if [ "$MPI" = 1 ]; then
        for k in $KS_MPI; do
            for r in $(seq "$RUNS"); do
                one mpi "$k" "$op" "$r" mpirun --oversubscribe -n "$k" \
                    "$BIN_DIR/hypercomm-mpi"
            done
        done
    fi
done

[ -n "${FROM_ROWS:-}" ] && echo "Rows of $FROM_ROWS (measured earlier), analysed at:"
bench_stamp "$RUNS runs ($EVAL), $ITERS iterations, $([ "$INTERLEAVE" = 1 ] && echo interleaved || echo in blocks), 8 B to $MAX B, $STAT over ranks, \`RUNS=$RUNS ITERS=$ITERS STAT=$STAT EVAL=$EVAL INTERLEAVE=$INTERLEAVE scripts/bench-table-auto.sh $MAX\`"
bench_smoke_note
echo
[ -n "${ROWS:-}" ] && cp "$out/rows" "$ROWS"
python3 - "$out/rows" "$out/tuning" "$(nproc)" "${FULL:-}" "$STAT" "$EVAL" <<'PY'
import collections, statistics, sys
rows_file, tuning_file, cpus, full, stat, how = sys.argv[1:7]
cpus = int(cpus)
# (backend, k, op) -> size -> run -> {"auto": (algo, us), "all": [(algo, us)]}
d = collections.OrderedDict()
for line in open(rows_file):
    # Rows kept before the schedule's digest (FROM_ROWS) have 9 fields.
    b, k, op, run, size, algo, auto, avg, most, *digest = line.split()
    us = most if stat == "max" else avg
    e = d.setdefault((b, int(k), op), collections.OrderedDict()).setdefault(int(size), {})
    r = e.setdefault(int(run), {"auto": None, "all": [], "digest": {}})
    digest = digest[0] if digest and digest[0] != "-" else None
    if auto == "true":
        r["auto"] = (algo, float(us), digest)
    else:
        r["all"].append((algo, float(us)))
        r["digest"][algo] = digest
tuning = collections.defaultdict(list)
for line in open(tuning_file):
    b, k, op, on, off = line.split()
    tuning[(b, int(k), op)].append(max(float(on) - float(off), 0.0))
def name(s):
    for unit, n in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if s >= n and s % n == 0:
            return f"{s // n} {unit}"
    return f"{s} B"
def medians(runs):
    """Each algorithm's median over those of `runs` where auto ran too."""
    times = collections.defaultdict(list)
    for r in runs:
        if r["auto"] is None or not r["all"]:
            continue
        for algo, us in r["all"]:
            times[algo].append(us)
    return {a: statistics.median(t) for a, t in times.items()}
def cell(runs, select, measure):
    """(auto / best, its min and max over the runs, what auto ran, the best) with the
    best named by the runs `select` (the least median over them) and auto / best the
    median over the runs `measure` of each run's ratio: auto and the best side by side
    in one run, so that a run measured in a slower state of the machine (whole runs
    differ by 2x on the AMD VM) weighs on both alike; None without data."""
    named = medians([runs[r] for r in select if r in runs])
    if not named:
        return None
    best = min(named, key=lambda a: (named[a], a))
    ratios, ran, same = [], collections.Counter(), True
    for r in measure:
        x = runs.get(r)
        if x is None or x["auto"] is None:
            continue
        t = dict(x["all"]).get(best)
        if t:
            ratios.append(x["auto"][1] / t); ran[x["auto"][0]] += 1
            # The best's schedule: the same name, or another name of one schedule
            # (the same digest: recursive doubling and dimension exchange on 2^n ranks).
            mine, theirs = x["auto"][2], x["digest"].get(best)
            same &= x["auto"][0] == best or (mine is not None and mine == theirs)
    if not ratios:
        return None
    a = ", ".join(x for x, _ in ran.most_common())
    return statistics.median(ratios), min(ratios), max(ratios), a, best, same
held = how == "held-out"
summary = ["| backend, ranks | op | sizes auto > 1.1× best, " + ("held out" if held else "same runs") +
           " (of them, auto ran the best's schedule: noise) | same runs, biased | worst median auto/best (size: auto ran → best) | tuning s |",
           "|---|---|---:|---:|---|---:|"]
rows = ["| backend, ranks | op | size | auto/best, median over runs (min–max) | auto ran | best | same runs |",
        "|---|---|---:|---:|---|---|---:|"]
for (b, k, op), sizes in d.items():
    cells, same_over = [], 0
    for size, runs in sizes.items():
        every = sorted(runs)
        # Held out: odd runs name the best, even runs measure it.
        sel = [r for r in every if r % 2 == 1] if held else every
        ev = [r for r in every if r % 2 == 0] if held else every
        c, s = cell(runs, sel, ev), cell(runs, every, every)
        if c is None or s is None:
            continue
        same_over += s[0] > 1.1
        med, lo, hi, a, best, same = c
        cells.append((med, size, a, best, same))
        mark = " (its schedule)" if same and a != best else ""
        rows.append(f"| {b}, {k} | {op} | {name(size)} | {med:.2f} ({lo:.2f}–{hi:.2f}) | {a}{mark} | {best} | {s[0]:.2f} |")
    if not cells:
        continue
    worst = max(cells)
    over = sum(1 for c in cells if c[0] > 1.1)
    # Noise: auto ran the best's schedule (its name, or one digest) in every measuring run.
    noise = sum(1 for c in cells if c[0] > 1.1 and c[4])
    who = f"{b}, {k}{' as fibers' if b == 'threads' and k > cpus else ''}"
    t = tuning.get((b, k, op))
    ts = f"{statistics.median(t):.2f}" if t else "–"
    summary.append(f"| {who} | {op} | {over} of {len(cells)} ({noise}) | {same_over} | {worst[0]:.2f} ({name(worst[1])}: {worst[2]} → {worst[3]}) | {ts} |")
print("\n".join(summary))
if full:
    with open(full, "w") as f:
        f.write("\n".join(rows) + "\n")
PY
