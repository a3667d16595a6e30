/* applied.c — a program for the `heaplab run` tests: it exercises every allocation call and
 * checks, before every free, that no byte of any of its live blocks was changed by anyone else
 * (a layout runtime that placed two live blocks over each other would be caught here). Its
 * output depends only on its arguments, so a run under a layout must print exactly what a plain
 * run prints.
 *
 *   applied mix N        malloc, calloc (zeroed on reuse), realloc in every direction,
 *                        reallocarray, the aligned family, malloc_usable_size; N rounds
 *   applied threads T N  T threads doing `mix`-like churn at once
 *   applied fork N       blocks shared with a fork child, which frees, reallocs and allocates
 *   applied exec N       allocates, then execs itself as `mix N`
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <execinfo.h>
#include <malloc.h>
#include <signal.h>
#include <ucontext.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

struct blk { unsigned char *p; size_t n; unsigned tag; };

static void fill(struct blk *b) {
    for (size_t i = 0; i < b->n; i++) b->p[i] = (unsigned char)(b->tag * 31 + i * 7);
}
static void check(const struct blk *b, const char *what) {
    for (size_t i = 0; i < b->n; i++)
        if (b->p[i] != (unsigned char)(b->tag * 31 + i * 7)) {
            printf("CORRUPTED %s block tag %u at byte %zu of %zu\n", what, b->tag, i, b->n);
            fflush(stdout);
            abort();
        }
}

static uint64_t rng_state;
static uint64_t rnd(void) {
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return rng_state >> 33;
}
/* The alignment every allocator owes a block of n bytes: 8, and 16 once n rounds (to 8) to a
 * multiple of 16 (a block that holds whole 16-aligned values); with APPLIED_ALIGN16=1 (a run
 * with --align-16), 16 for every block above 8 bytes, as glibc and jemalloc give. */
static void check_align(const void *p, size_t n) {
    static int align16 = -1;
    if (align16 < 0) align16 = getenv("APPLIED_ALIGN16") && !strcmp(getenv("APPLIED_ALIGN16"), "1");
    uintptr_t want = n <= 8 ? 8 : align16 || ((n + 7) & 8) == 0 ? 16 : 8;
    if ((uintptr_t)p % want) {
        printf("MISALIGNED block of %zu bytes (wanted %zu)\n", n, (size_t)want);
        abort();
    }
}

static size_t pick_size(uint64_t r) {
    static const size_t sizes[] = {1, 8, 16, 24, 40, 64, 100, 256, 1000, 4096, 5000, 70000};
    return sizes[r % (sizeof sizes / sizeof sizes[0])];
}

/* One round of everything; returns a checksum of what it saw. */
static uint64_t mix(int rounds, unsigned salt) {
    enum { K = 64 };
    struct blk live[K];
    memset(live, 0, sizeof live);
    uint64_t sum = 0;
    unsigned tag = salt * 1000003u;
    for (int r = 0; r < rounds; r++) {
        for (int step = 0; step < 200; step++) {
            int k = (int)(rnd() % K);
            struct blk *b = &live[k];
            if (b->p) {
                check(b, "live");
                uint64_t how = rnd() % 4;
                if (how == 0) { /* realloc: grow or shrink, the contents kept */
                    size_t n = pick_size(rnd());
                    unsigned char *q = realloc(b->p, n);
                    if (!q) abort();
                    check_align(q, n);
                    size_t keep = n < b->n ? n : b->n;
                    struct blk old = {q, keep, b->tag};
                    check(&old, "realloc'd");
                    b->p = q;
                    b->n = n;
                    fill(b);
                    continue;
                }
                if (how == 1) { /* the usable size is really usable */
                    size_t u = malloc_usable_size(b->p);
                    if (u < b->n) {
                        printf("usable size %zu < %zu\n", u, b->n);
                        abort();
                    }
                    /* Written to its end (the checksum keeps to requested sizes: usable
                     * sizes are the allocator's own). */
                    struct blk all = {b->p, u, b->tag};
                    fill(&all);
                    check(b, "usable");
                    continue;
                }
                sum += b->p[0] + b->n;
                free(b->p);
                b->p = NULL;
                continue;
            }
            size_t n = pick_size(rnd());
            b->tag = ++tag;
            b->n = n;
            switch (rnd() % 7) {
            case 0:
                b->p = malloc(n);
                break;
            case 1: { /* calloc after the same size was dirtied and freed: still zero */
                unsigned char *d = malloc(n);
                memset(d, 0xA5, n);
                free(d);
                b->p = calloc(1, n);
                for (size_t i = 0; i < n; i++)
                    if (b->p[i]) {
                        printf("calloc not zero at %zu of %zu\n", i, n);
                        abort();
                    }
                break;
            }
            case 2:
                if (posix_memalign((void **)&b->p, 64, n)) abort();
                if ((uintptr_t)b->p % 64) abort();
                break;
            case 3:
                b->p = aligned_alloc(256, (n + 255) / 256 * 256);
                b->n = (n + 255) / 256 * 256;
                if ((uintptr_t)b->p % 256) abort();
                break;
            case 4:
                b->p = memalign(32, n);
                if ((uintptr_t)b->p % 32) abort();
                break;
            case 5:
                b->p = reallocarray(NULL, n, 1);
                break;
            default:
                b->p = realloc(NULL, n);
                break;
            }
            if (!b->p) abort();
            check_align(b->p, b->n);
            fill(b);
        }
    }
    /* realloc to 0 frees; valloc and pvalloc are page-aligned */
    void *v = valloc(100), *pv = pvalloc(100);
    if (!v || !pv || (uintptr_t)v % 4096 || (uintptr_t)pv % 4096) abort();
    memset(pv, 1, 4096);
    free(v);
    free(pv);
    for (int k = 0; k < K; k++)
        if (live[k].p) {
            check(&live[k], "final");
            sum += live[k].n;
            if (k % 2) free(live[k].p);
            else if (realloc(live[k].p, 0)) abort();
        }
    return sum;
}

static void *thread_main(void *arg) {
    uintptr_t id = (uintptr_t)arg;
    enum { K = 32 };
    struct blk live[K];
    memset(live, 0, sizeof live);
    uint64_t s = id * 0x9E3779B97F4A7C15ull + 1;
    uint64_t *sum = malloc(sizeof *sum);
    *sum = 0;
    for (int i = 0; i < 20000; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        struct blk *b = &live[(s >> 33) % K];
        if (b->p) {
            check(b, "thread");
            *sum += b->n;
            if ((s >> 40) % 3 == 0) {
                size_t n = pick_size(s >> 20);
                b->p = realloc(b->p, n);
                size_t keep = n < b->n ? n : b->n;
                struct blk old = {b->p, keep, b->tag};
                check(&old, "thread realloc'd");
                b->n = n;
                fill(b);
            } else {
                free(b->p);
                b->p = NULL;
            }
        } else {
            b->n = pick_size(s >> 24);
            b->tag = (unsigned)(id * 100000 + (unsigned)i);
            b->p = (s >> 50) % 2 ? malloc(b->n) : calloc(b->n, 1);
            if (!b->p) abort();
            check_align(b->p, b->n);
            fill(b);
        }
    }
    for (int k = 0; k < K; k++)
        if (live[k].p) {
            check(&live[k], "thread final");
            free(live[k].p);
        }
    return sum;
}

/* A crash says where, for the test's failure message. */
static void on_crash(int sig, siginfo_t *si, void *uc) {
    char msg[160];
    greg_t *r = ((ucontext_t *)uc)->uc_mcontext.gregs;
    int n = snprintf(msg, sizeof msg, "applied: signal %d at address %p (pc %llx)\n", sig, si->si_addr, (unsigned long long)r[REG_RIP]);
    write(2, msg, (size_t)n);
    Dl_info di;
    if (dladdr((void *)r[REG_RIP], &di) && di.dli_fname) {
        n = snprintf(msg, sizeof msg, "  in %s +%#lx (%s)\n", di.dli_fname, (unsigned long)((char *)r[REG_RIP] - (char *)di.dli_fbase), di.dli_sname ? di.dli_sname : "?");
        write(2, msg, (size_t)n);
    }
    void *frames[32];
    backtrace_symbols_fd(frames, backtrace(frames, 32), 2);
    _exit(128 + sig);
}

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IONBF, 0);
    struct sigaction sa = {.sa_sigaction = on_crash, .sa_flags = SA_SIGINFO};
    sigaction(SIGSEGV, &sa, NULL);
    sigaction(SIGBUS, &sa, NULL);
    const char *mode = argc > 1 ? argv[1] : "mix";
    int n = argc > 2 ? atoi(argv[2]) : 10;
    rng_state = (uint64_t)n * 2654435761u + 7;
    if (!strcmp(mode, "mix")) {
        printf("mix %d: %llu\n", n, (unsigned long long)mix(n, 1));
    } else if (!strcmp(mode, "threads")) {
        int t = n, rounds = argc > 3 ? atoi(argv[3]) : 1;
        uint64_t total = 0;
        for (int r = 0; r < rounds; r++) {
            pthread_t th[64];
            for (int i = 0; i < t && i < 64; i++) pthread_create(&th[i], NULL, thread_main, (void *)(uintptr_t)(i + 1));
            for (int i = 0; i < t && i < 64; i++) {
                void *s;
                pthread_join(th[i], &s);
                total += *(uint64_t *)s;
                free(s);
            }
        }
        printf("threads %d: %llu\n", t, (unsigned long long)total);
    } else if (!strcmp(mode, "fork")) {
        enum { K = 40 };
        struct blk b[K];
        for (int i = 0; i < K; i++) {
            b[i].n = pick_size(rnd());
            b[i].tag = (unsigned)i + 1;
            b[i].p = malloc(b[i].n);
            fill(&b[i]);
        }
        pid_t c = fork();
        if (c == 0) {
            /* The child frees half of the parent's blocks, reallocs the rest and allocates its own. */
            for (int i = 0; i < K; i++) {
                check(&b[i], "child inherited");
                if (i % 2) free(b[i].p);
                else {
                    b[i].p = realloc(b[i].p, b[i].n + 100);
                    struct blk old = {b[i].p, b[i].n, b[i].tag};
                    check(&old, "child realloc'd");
                }
            }
            uint64_t s = mix(n, 2);
            printf("child: %llu\n", (unsigned long long)s);
            _exit(0);
        }
        int st;
        waitpid(c, &st, 0);
        for (int i = 0; i < K; i++) check(&b[i], "parent after fork");
        uint64_t s = mix(n, 3);
        for (int i = 0; i < K; i++) free(b[i].p);
        printf("parent: child %s, %llu\n", WIFEXITED(st) && WEXITSTATUS(st) == 0 ? "ok" : "FAILED", (unsigned long long)s);
    } else if (!strcmp(mode, "exec")) {
        uint64_t s = mix(n, 4);
        printf("before exec: %llu\n", (unsigned long long)s);
        char num[16];
        snprintf(num, sizeof num, "%d", n + 1);
        execl("/proc/self/exe", argv[0], "mix", num, (char *)NULL);
        return 3;
    } else {
        fprintf(stderr, "unknown mode %s\n", mode);
        return 2;
    }
    return 0;
}
