/* unwind_check.c — the unwinder test program (tests/unwind.rs compiles it with native/unwind.c
 * under several flag sets): at every checkpoint it walks its stack with hl_unwind and with glibc's
 * backtrace() from one call instruction, so the two lists must be equal entry for entry. Deep,
 * recursive, inlined, alloca'd and huge frames, frames in a shared library and in libc (qsort's
 * comparator), threads, and a signal handler (whose frame makes hl_unwind fall back); and
 * hl_unwind_after and one step (hl_unwind_caller, hl_unwind_caller_inline) against the same walk. Prints a line of counts and exits 0, or prints both stacks of the first difference and exits 1. */
#define _GNU_SOURCE
#include <alloca.h>
#include <execinfo.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "unwind.h"

int lib_recurse(int n, void (*cb)(void *), void *arg);

#define MAXD 256
typedef int (*walker)(void **, int);
static volatile int two = 2; /* a trip count the compiler does not know */
static walker volatile walkers[2] = {hl_unwind, backtrace};
static int max_frames = 64;
static int checks, failed;
static pthread_mutex_t out = PTHREAD_MUTEX_INITIALIZER;

static __attribute__((noinline)) int walk(walker w, void **buf, int max) {
    int n = w(buf, max);
    __asm__ volatile("" ::: "memory"); /* no tail call: this frame is part of both stacks */
    return n;
}

static __attribute__((noinline)) void check(const char *where) {
    void *buf[2][MAXD];
    int n[2];
    /* One call instruction for both walks, so every entry must be equal. */
    for (int k = 0; k < two; k++) {
        int i = k;
        __asm__ volatile("" : "+r"(i)); /* hides which walk this is: no copy of the loop body per walk */
        n[i] = walk(walkers[i], buf[i], max_frames);
    }
    pthread_mutex_lock(&out);
    checks++;
    if (buf[0][1] != buf[1][1] && !failed++) printf("the test's two walks come from different call instructions\n");
    if (n[0] != n[1] || memcmp(buf[0], buf[1], sizeof(void *) * (size_t)n[0]) != 0) {
        if (!failed++) {
            printf("MISMATCH at %s: hl_unwind %d frames, backtrace %d\n", where, n[0], n[1]);
            for (int i = 0; i < MAXD && (i < n[0] || i < n[1]); i++)
                printf("  %2d %18p %18p%s\n", i, i < n[0] ? buf[0][i] : NULL, i < n[1] ? buf[1][i] : NULL,
                       i < n[0] && i < n[1] && buf[0][i] == buf[1][i] ? "" : "  <-");
        }
    }
    if (n[0] < 3 && !failed++) printf("SHORT at %s: %d frames\n", where, n[0]);
    /* The callers above the return address into check's caller: those after it in the walk. */
    void *above[MAXD];
    int m = n[0] > 3 ? hl_unwind_after(buf[0][2], above, max_frames) : 0;
    int cut = n[0] == max_frames; /* the walk stopped at max: hl_unwind_after goes further */
    if (n[0] > 3 && ((cut ? m < n[0] - 3 : m != n[0] - 3) || memcmp(above, buf[0] + 3, sizeof(void *) * (size_t)(n[0] - 3)) != 0) && !failed++)
        printf("hl_unwind_after at %s: %d frames, expected the %d after the third\n", where, m, n[0] - 3);
    /* One step from this frame (its rules cached by the walks above), out of line and inline:
     * the return address after the one into check's caller. */
    void *one[2] = {NULL, NULL};
    int k[2] = {hl_unwind_caller(__builtin_return_address(0), __builtin_frame_address(0), &one[0]),
                hl_unwind_caller_inline(__builtin_return_address(0), __builtin_frame_address(0), &one[1])};
    for (int i = 0; i < 2; i++)
        if (n[0] > 3 && (k[i] != 1 || one[i] != buf[0][3]) && !failed++)
            printf("hl_unwind_caller%s at %s: %d, %p; expected 1, %p\n", i ? "_inline" : "", where, k[i], one[i], buf[0][3]);
    pthread_mutex_unlock(&out);
}
static void check_cb(void *where) { check(where); }

static __attribute__((noinline)) int rec(int n, const char *where) {
    if (n == 0) {
        check(where);
        return 0;
    }
    int r = rec(n - 1, where) + 1;
    __asm__ volatile("" ::: "memory");
    return r;
}

/* Mutual recursion with alternating frame shapes. */
static int odd(int n);
static __attribute__((noinline)) int even(int n) {
    if (n == 0) {
        check("mutual recursion");
        return 0;
    }
    volatile char pad[200];
    pad[n % 200] = (char)n;
    return odd(n - 1) + pad[n % 200];
}
static __attribute__((noinline)) int odd(int n) {
    int r = even(n - 1 < 0 ? 0 : n - 1) + 1;
    __asm__ volatile("" ::: "memory");
    return r;
}

static inline __attribute__((always_inline)) void inl3(void) { check("inlined chain"); }
static inline __attribute__((always_inline)) void inl2(void) { inl3(); __asm__ volatile("" ::: "memory"); }
static inline __attribute__((always_inline)) void inl1(void) { inl2(); __asm__ volatile("" ::: "memory"); }
static __attribute__((noinline)) void inlined_outer(void) { inl1(); __asm__ volatile("" ::: "memory"); }

static __attribute__((noinline)) void alloca_frame(int n) {
    char *p = alloca((size_t)n);
    memset(p, 1, (size_t)n);
    check("alloca frame");
    __asm__ volatile("" : : "r"(p) : "memory");
}

static __attribute__((noinline)) void huge_frame(void) {
    volatile char big[200000];
    big[0] = 1;
    big[199999] = big[0];
    check("200 KB frame");
}

static int cmp(const void *a, const void *b) {
    static int once;
    if (!once++) check("qsort comparator (frames in libc)");
    return *(const int *)a - *(const int *)b;
}

static void *thread_main(void *arg) {
    (void)arg;
    rec(7, "thread");
    lib_recurse(5, check_cb, "thread, shared library");
    struct hl_unwind_counts c;
    hl_unwind_counts(&c);
    if (c.fallbacks) {
        pthread_mutex_lock(&out);
        if (!failed++) printf("FALLBACK in a thread: %llu of %llu walks\n", (unsigned long long)c.fallbacks, (unsigned long long)c.walks);
        pthread_mutex_unlock(&out);
    }
    return NULL;
}

static void on_signal(int sig) {
    (void)sig;
    check("signal handler");
}

int main(int argc, char **argv) {
    (void)argv;
    if (argc > 1) max_frames = MAXD; /* the whole stack, however deep */
    void *warm[4];
    backtrace(warm, 4);
    for (int d = 0; d < 100; d += 7) rec(d, "recursion");
    rec(300, "deep recursion");
    even(41);
    inlined_outer();
    alloca_frame(100);
    alloca_frame(5000);
    huge_frame();
    lib_recurse(0, check_cb, "shared library");
    lib_recurse(30, check_cb, "recursion in a shared library");
    int v[64];
    for (int i = 0; i < 64; i++) v[i] = (i * 37) % 64;
    qsort(v, 64, sizeof v[0], cmp);
    pthread_t t[4];
    for (int i = 0; i < 4; i++) pthread_create(&t[i], NULL, thread_main, NULL);
    for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
    struct hl_unwind_counts c;
    hl_unwind_counts(&c);
    unsigned long long fast_fallbacks = c.fallbacks;
    signal(SIGUSR1, on_signal);
    raise(SIGUSR1);
    hl_unwind_counts(&c);
    printf("checks %d failed %d walks %llu fallbacks %llu (before the signal: %llu) decoded %llu\n", checks, failed,
           (unsigned long long)c.walks, (unsigned long long)c.fallbacks, fast_fallbacks, (unsigned long long)c.decoded);
    if (fast_fallbacks && !failed++) printf("FALLBACK without a signal frame\n");
    return failed ? 1 : 0;
}
