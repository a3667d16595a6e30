/* Test library for `heaplab trace`: preloaded after the tracer, its constructor allocates
 * before the program starts and possibly before the tracer's own constructor has run, which
 * exercises the tracer's initialisation on first use. */
#include <stdlib.h>

static void *volatile sink;

__attribute__((constructor)) static void early(void) {
    for (int i = 0; i < 10; i++) {
        void *a = malloc(24 + i);
        void *b = calloc(2, 16 + i);
        sink = a;
        sink = b;
        free(a);
        free(b);
    }
}
