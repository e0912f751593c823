#!/usr/bin/env bash
# Sourced by the scripts/bench-table-*.sh scripts, which write the tables of BENCHMARKS.md.
#   bench_stamp "WHAT"   prints the line every table carries: the commit (marked when the
#                        tree has uncommitted changes), lscpu's model name and core count,
#                        the time, the load average, the cross-core copy's state (below)
#                        and WHAT (runs per cell, settings).
#   bench_cross_core     scripts/cross-core.c's line, built with cc into target/ (nothing
#                        without a C compiler): a copy of data another CPU just wrote
#                        against a copy of its own; on a VM that moves between states it
#                        says which one the figures were measured in.
#   bench_smoke_note     prints a warning line when SMOKE=1: tiny sizes, not figures.
# Each script computes its own medians and ranges (min–max) over the runs.

bench_stamp() {
    local commit model cores cpus
    commit=$(git rev-parse --short HEAD)
    if [ -n "$(git status --porcelain --untracked-files=no 2>/dev/null)" ]; then
        commit="$commit + uncommitted changes"
    fi
    model=$(lscpu | sed -n 's/^Model name: *//p' | head -1)
    cores=$(lscpu | awk -F: '/^Core\(s\) per socket/ {c = $2} /^Socket\(s\)/ {s = $2} END {print c * s}')
    cpus=$(lscpu | sed -n 's/^CPU(s): *//p' | head -1)
    local cross
    cross=$(bench_cross_core)
    echo "Commit $commit · $model, $cores cores ($cpus CPUs) · $(date -u '+%Y-%m-%d %H:%M UTC') · load $(cut -d' ' -f1-3 /proc/loadavg)${cross:+ · $cross} · $1"
}

bench_cross_core() {
    local bin=target/cross-core
    if [ ! -x "$bin" ] || [ scripts/cross-core.c -nt "$bin" ]; then
        mkdir -p target
        cc -O2 -pthread scripts/cross-core.c -o "$bin" 2>/dev/null || return 0
    fi
    "$bin" 2>/dev/null || true
}

bench_smoke_note() {
    if [ "${SMOKE:-0}" = 1 ]; then
        echo
        echo "**SMOKE=1: tiny sizes to check that the script runs; these are not figures.**"
    fi
    return 0
}
