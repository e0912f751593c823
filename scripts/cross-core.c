/* Sourced by scripts/bench-lib.sh (bench_stamp): how fast one CPU copies data that
 * another CPU has just written, against a copy of its own data, for 0.3 s.
 *
 * A 2-vCPU virtual machine moves between states the guest cannot see: on one machine
 * (AMD EPYC, 2026-11-27) this copy of 256 KiB took 5.8 us for seconds, then 14-15 us
 * for seconds, while the own-data copy stayed at 4.9-5.2 us; every schedule whose
 * messages cross CPUs slowed with it (docs/perf-log/2026-11-27-cross-core-states.md).
 * Prints "cross-core copy X us / own copy Y us" (means over the trials), or nothing
 * where the two threads cannot be placed on two CPUs. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define N (256 * 1024)
static char *src, *dst, *own;
static atomic_int turn, stop;
static int cpu[2];

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static int pin(int c) {
    cpu_set_t s;
    CPU_ZERO(&s);
    CPU_SET(c, &s);
    return pthread_setaffinity_np(pthread_self(), sizeof s, &s);
}

static void *writer(void *arg) {
    (void)arg;
    pin(cpu[0]);
    for (int i = 0; !atomic_load(&stop); i++) {
        while (atomic_load(&turn) != 0)
            if (atomic_load(&stop)) return 0;
        memset(src, i, N);
        atomic_store(&turn, 1);
    }
    return 0;
}

int main(void) {
    cpu_set_t s;
    if (sched_getaffinity(0, sizeof s, &s) != 0) return 0;
    int found = 0;
    for (int c = 0; c < CPU_SETSIZE && found < 2; c++)
        if (CPU_ISSET(c, &s)) cpu[found++] = c;
    if (found < 2) return 0;
    src = aligned_alloc(4096, N), dst = aligned_alloc(4096, N), own = aligned_alloc(4096, N);
    if (!src || !dst || !own) return 0;
    memset(src, 0, N), memset(dst, 0, N), memset(own, 1, N);
    pthread_t t;
    if (pthread_create(&t, 0, writer, 0) != 0) return 0;
    pin(cpu[1]);
    double start = now(), cross = 0, local = 0;
    long n = 0;
    while (now() - start < 0.3) {
        while (atomic_load(&turn) != 1) {}
        double t0 = now();
        memcpy(dst, src, N);
        double t1 = now();
        memcpy(dst, own, N);
        double t2 = now();
        cross += t1 - t0, local += t2 - t1, n++;
        atomic_store(&turn, 0);
    }
    atomic_store(&stop, 1);
    atomic_store(&turn, 0);
    pthread_join(t, 0);
    printf("cross-core copy of 256 KiB %.1f us / own %.1f us\n", cross / n * 1e6, local / n * 1e6);
    return 0;
}
