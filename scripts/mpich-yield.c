/*
 * LD_PRELOAD shim for MPICH 4.0 (ch4:ucx) on more ranks than cores: after
 * MPICH_YIELD_AFTER consecutive calls to ucp_worker_progress that progressed
 * nothing (default 1), each further idle call yields the core (sched_yield).
 *
 * Why: MPICH 4.0's progress engine polls without ever yielding (Debian's
 * libmpich.so.12 does not even import sched_yield; MPIR_CVAR_POLLS_BEFORE_YIELD
 * is ch3's and MPIR_CVAR_DEFAULT_THREAD_LEVEL=MPI_THREAD_MULTIPLE reaches a
 * yield that this build compiles away). A rank waiting for a descheduled peer
 * then holds its core until the next timer tick, so every dependent step of a
 * collective costs a time slice. MPICH 5.0 added the same remedy as
 * MPIR_CVAR_CH4_PROGRESS_THROTTLE=1 with ..._NO_PROGRESS_COUNT; MPICH 4.0's
 * ch4 progress calls ucp_worker_progress through the PLT on every poll, so
 * interposing that call gives 4.0 the 5.0 behaviour. Open MPI does the same
 * by itself under --oversubscribe (mpi_yield_when_idle).
 *
 * Used by scripts/bench-table-mpi-vs-native.sh for MPI=mpich when K exceeds the
 * CPUs; measured in docs/perf-log/2026-11-27-mpich-oversubscribed.md.
 * Build: cc -O2 -shared -fPIC scripts/mpich-yield.c -o mpich-yield.so -ldl
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <sched.h>
#include <stdlib.h>

typedef unsigned (*progress_fn)(void *worker);

static progress_fn real_progress;
static unsigned yield_after = 1;
static __thread unsigned idle; /* per thread: MPI_THREAD_MULTIPLE polls from several */

/* At load, after the libraries the program links (libucp among them). */
__attribute__((constructor)) static void init(void)
{
    const char *after = getenv("MPICH_YIELD_AFTER");
    real_progress = (progress_fn) dlsym(RTLD_NEXT, "ucp_worker_progress");
    if (after)
        yield_after = (unsigned) strtoul(after, NULL, 10);
}

unsigned ucp_worker_progress(void *worker)
{
    if (!real_progress)
        abort(); /* no libucp behind this one: cannot happen in a UCX process */
    unsigned events = real_progress(worker);
    if (events) {
        idle = 0;
    } else if (idle >= yield_after) {
        sched_yield();
    } else {
        idle++;
    }
    return events;
}
