/* report_loop.c — the workload of heaplab-bench-report: N heap calls (N/2 mallocs, N/2 frees)
 * from 64 call sites (8 functions reached through 8 paths), a live set that grows to a few
 * hundred thousand blocks and falls back, so the report has many sites, a real peak and a long
 * timeline. Usage: report_loop N */
#include <stdlib.h>

#define RING 200000
static void *ring[RING];
static long head;

#define LEAF(k) \
    __attribute__((noinline)) static void *leaf##k(long i) { return malloc(16 + ((i * (k + 3)) & 1023)); }
LEAF(0) LEAF(1) LEAF(2) LEAF(3) LEAF(4) LEAF(5) LEAF(6) LEAF(7)
static void *(*const leaves[8])(long) = {leaf0, leaf1, leaf2, leaf3, leaf4, leaf5, leaf6, leaf7};

#define PATH(k) \
    __attribute__((noinline)) static void *path##k(long i) { void *p = leaves[(i >> 3) & 7](i); __asm__ volatile("" ::: "memory"); return p; }
PATH(0) PATH(1) PATH(2) PATH(3) PATH(4) PATH(5) PATH(6) PATH(7)
static void *(*const paths[8])(long) = {path0, path1, path2, path3, path4, path5, path6, path7};

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 10000000;
    long pairs = n / 2, live = 0;
    for (long i = 0; i < pairs; i++) {
        /* The live set follows a triangle: it grows to RING blocks, then the ring recycles. */
        ring[head] = paths[i & 7](i);
        head = (head + 1) % RING;
        if (live < RING - 1 && (i / RING) % 2 == 0) {
            live++;
        } else {
            free(ring[head]);
            ring[head] = NULL;
        }
    }
    for (long i = 0; i < RING; i++)
        free(ring[i]);
    return 0;
}
