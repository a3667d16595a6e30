/* unwind_lib.c — the shared library of the unwinder test (tests/unwind.rs): frames of another
 * module, built with and without frame pointers, that call back into the program. */
#include <alloca.h>
#include <string.h>

/* Recurses `n` times in this library, then calls `cb` with `arg`. */
__attribute__((noinline)) int lib_recurse(int n, void (*cb)(void *), void *arg) {
    if (n <= 0) {
        cb(arg);
        return 1;
    }
    /* A variable-sized frame: the CFA is then rbp-based even without frame pointers. */
    char *scratch = alloca((size_t)(n * 16 + 1));
    memset(scratch, n, (size_t)(n * 16 + 1));
    int r = lib_recurse(n - 1, cb, arg) + scratch[n];
    __asm__ volatile("" ::: "memory");
    return r;
}
