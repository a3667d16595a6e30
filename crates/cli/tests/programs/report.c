/* The heap report's test program: a known peak, top site, leaks and temporaries.
 *
 *   report [N]   (N = 1 unless given)
 *
 * - make_table: one block of 1,000,000 bytes, live from start to the peak (freed last-but-one);
 * - make_nodes: 100 blocks of 1000 * N bytes, all live at the peak, then freed;
 * - scratch: 50 blocks of 64 bytes, each freed right after it is allocated (temporaries);
 * - leak_some: 3 blocks of 4096 bytes, never freed (12,288 bytes leaked).
 * The peak is 1,000,000 + 100 * 1000 * N + the leaks (allocated first) bytes, reached when the
 * last node is allocated. Functions are not inlined so each is its own call site. */
#include <stdlib.h>
#include <string.h>

static void *keep[1000];

__attribute__((noinline)) static void *leak_some(void) {
    void *p = malloc(4096);
    memset(p, 1, 4096);
    return p;
}

__attribute__((noinline)) static void *make_table(void) {
    void *p = malloc(1000000);
    memset(p, 0, 1000000);
    return p;
}

__attribute__((noinline)) static void make_nodes(int n) {
    for (int i = 0; i < 100; i++) {
        keep[i] = malloc((size_t)1000 * n);
        memset(keep[i], 2, (size_t)1000 * n);
    }
}

__attribute__((noinline)) static void scratch(void) {
    for (int i = 0; i < 50; i++) {
        char *volatile p = malloc(64);
        p[0] = 1;
        free(p);
    }
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 1;
    static void *leaks[3];
    for (int i = 0; i < 3; i++)
        leaks[i] = leak_some();
    void *table = make_table();
    make_nodes(n);
    for (int i = 0; i < 100; i++)
        free(keep[i]);
    free(table);
    scratch();
    return leaks[0] == NULL;
}
