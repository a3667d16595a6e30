/* Test program for `heaplab access`: four blocks of distinct sizes accessed a known number of
 * times, in a known order (the expected counts and edges are in tests/cli/access.rs).
 *   A (calloc 1000): 100 reads, then 20 reads interleaved with C's
 *   B (malloc 2000): 50 eight-byte writes of small integers
 *   C (calloc 3000): 20 reads, each right after one of A's
 *   D (malloc 4000): one eight-byte write of a pointer to B (a friend edge D -> B)
 * Usage: access [EXIT_STATUS | crash] */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
    volatile uint64_t *a = calloc(1000, 1);
    volatile uint64_t *b = malloc(2000);
    volatile uint64_t *c = calloc(3000, 1);
    void *volatile *d = malloc(4000);
    uint64_t sum = 0;
    for (int i = 0; i < 100; i++) sum += a[i % 10];
    for (int i = 0; i < 50; i++) b[i] = (uint64_t)i;
    for (int i = 0; i < 20; i++) {
        sum += a[0];
        sum += c[0];
    }
    d[0] = (void *)b;
    free((void *)a);
    free((void *)b);
    free((void *)c);
    free((void *)d);
    if (argc > 1 && !strcmp(argv[1], "crash")) {
        volatile int *bad = NULL;
        *bad = 1;
    }
    return argc > 1 ? atoi(argv[1]) + (int)sum : (int)sum;
}
