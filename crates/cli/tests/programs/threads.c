/* Test program for `heaplab trace`: N threads each make a known number of heap calls of every
 * interposed kind, so the trace's counts can be checked exactly. Usage: threads N ROUNDS */
#define _GNU_SOURCE
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static int rounds;

/* Keeps the compiler from eliding malloc/free pairs whose memory is never used. */
static void *volatile sink;
static void *use(void *p) {
    sink = p;
    return p;
}

static void *work(void *arg) {
    (void)arg;
    for (int i = 0; i < rounds; i++) {
        void *a = use(malloc(16 + i % 200));
        void *b = use(calloc(4, 8 + i % 50));
        b = use(realloc(b, 300 + i % 100));
        void *c = NULL;
        if (posix_memalign(&c, 64, 100) != 0) abort();
        void *d = use(aligned_alloc(256, 512));
        void *e = use(memalign(32, 40));
        void *f = use(valloc(10));
        void *g = use(reallocarray(NULL, 3, 7));
        free(a);
        free(b);
        free(c);
        free(d);
        free(e);
        free(f);
        free(g);
    }
    return NULL;
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 4;
    rounds = argc > 2 ? atoi(argv[2]) : 1000;
    pthread_t t[64];
    for (int i = 0; i < n && i < 64; i++) pthread_create(&t[i], NULL, work, NULL);
    for (int i = 0; i < n && i < 64; i++) pthread_join(t[i], NULL);
    return 0;
}
