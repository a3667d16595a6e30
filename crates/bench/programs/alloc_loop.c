/* alloc_loop.c — the workload of heaplab-bench-apply-runtime: N malloc/free pairs of a few
 * sizes (one byte written into each block), timed inside the program, so the figure is the
 * allocator's cost per pair plus whatever a preloaded library adds to it. Prints ns per pair.
 * A warm-up of N/10 pairs comes first (and is a run's first allocations, as the layout sees
 * them). Usage: alloc_loop N */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 1000000;
    static const size_t sizes[] = {16, 24, 32, 48, 64, 100, 128, 256};
    volatile unsigned sink = 0;
    for (long i = 0; i < n / 10; i++) {
        unsigned char *p = malloc(sizes[i & 7]);
        p[0] = (unsigned char)i;
        sink += p[0];
        free(p);
    }
    double t0 = now();
    for (long i = 0; i < n; i++) {
        unsigned char *p = malloc(sizes[i & 7]);
        p[0] = (unsigned char)i;
        sink += p[0];
        free(p);
    }
    double t1 = now();
    printf("%.2f\n", (t1 - t0) / (double)n);
    return sink == 12345 ? 1 : 0;
}
