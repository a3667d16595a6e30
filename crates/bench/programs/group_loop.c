/* group_loop.c — the workload of heaplab-bench-group-runtime: N malloc/free pairs of a few sizes,
 * made DEPTH frames below main (a noinline recursion), alternately from two call sites A and B,
 * timed inside the program, so the figure is the allocator's cost per pair plus what a preloaded
 * library adds (the grouped allocator walks those frames). Prints ns per pair. A warm-up of N/10
 * pairs comes first. Usage: group_loop N DEPTH */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static const size_t sizes[] = {16, 24, 32, 48, 64, 100, 128, 256};
static volatile unsigned sink;

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}

__attribute__((noinline)) static void pair(long i) {
    unsigned char *p = malloc(sizes[i & 7]);
    p[0] = (unsigned char)i;
    sink += p[0];
    free(p);
}

/* `d` more frames, then the pair. */
__attribute__((noinline)) static void down(int d, long i) {
    if (d > 0) down(d - 1, i);
    else pair(i);
    __asm__ volatile("" ::: "memory"); /* no tail call: every level stays a frame */
}

__attribute__((noinline)) static void site_a(int d, long i) {
    down(d, i);
    __asm__ volatile("" ::: "memory");
}
__attribute__((noinline)) static void site_b(int d, long i) {
    down(d, i);
    __asm__ volatile("" ::: "memory");
}

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 1000000;
    int depth = argc > 2 ? atoi(argv[2]) : 4;
    for (long i = 0; i < n / 10; i++) (i & 1 ? site_b : site_a)(depth, i);
    double t0 = now();
    for (long i = 0; i < n; i++) (i & 1 ? site_b : site_a)(depth, i);
    double t1 = now();
    printf("%.2f\n", (t1 - t0) / (double)n);
    return sink == 12345 ? 1 : 0;
}
