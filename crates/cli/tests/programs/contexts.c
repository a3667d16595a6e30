/* Test program for `heaplab access --contexts` (the expected profile is computed in
 * tests/cli/access_contexts.rs, by HALO's rules, from the same sequences).
 *
 * contexts: ten blocks from three allocation sites p, q, r, allocated in the order
 *   p q p r q p P r q p   (P: a 5000-byte block from p, above the maximum grouped size)
 * each of its own size (48 + 8 * i bytes; P 5000), then 300 eight-byte reads of block
 * (x >> 16) % 10, x stepping x = x * 1103515245 + 12345 (32 bits) from 1.
 *
 * contexts recurse D: a list of D nodes built by a recursive function, each node allocated
 * before the call that builds the rest (D full-context depths, one context for all but the
 * first node).
 *
 * contexts library N: N rounds of three strings copied by strdup (the C library calls malloc)
 * from three call sites of the program, d1, d2 and d3, each called from its own call site in
 * copy_rounds; nothing is printed.
 *
 * contexts shared N: the same, but the three strings are copied at one call site of strdup
 * (in copy_shared), reached from three call sites of the program, e1, e2 and e3. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static volatile uint64_t *objs[10];

__attribute__((noinline)) static volatile uint64_t *site_p(size_t n) { return calloc(1, n); }
__attribute__((noinline)) static volatile uint64_t *site_q(size_t n) { return calloc(1, n); }
__attribute__((noinline)) static volatile uint64_t *site_r(size_t n) { return calloc(1, n); }

struct node {
    struct node *next;
    long depth;
};

__attribute__((noinline)) static struct node *build(long d) {
    if (d == 0) return NULL;
    struct node *n = malloc(sizeof *n);
    n->depth = d;
    n->next = build(d - 1); /* not a tail call: the store comes after */
    return n;
}

/* Not tail calls (the barrier after them): each keeps its frame, so its call site is on the
 * stack; and not one function (each skips its own number of characters). */
#define COPY(s, k) char *r = strdup(s + k); __asm__ volatile("" ::: "memory"); return r
__attribute__((noinline)) static char *site_d1(const char *s) { COPY(s, 0); }
__attribute__((noinline)) static char *site_d2(const char *s) { COPY(s, 1); }
__attribute__((noinline)) static char *site_d3(const char *s) { COPY(s, 2); }

__attribute__((noinline)) static char *copy_shared(const char *s) {
    char *r = strdup(s);
    __asm__ volatile("" ::: "memory");
    return r;
}
#define VIA(s, k) char *r = copy_shared(s + k); __asm__ volatile("" ::: "memory"); return r
__attribute__((noinline)) static char *site_e1(const char *s) { VIA(s, 0); }
__attribute__((noinline)) static char *site_e2(const char *s) { VIA(s, 1); }
__attribute__((noinline)) static char *site_e3(const char *s) { VIA(s, 2); }

/* `rounds` rounds of three strings copied by `copy` (three functions, each called at its own
 * call site here) and freed; the exit status. */
typedef char *(*copier)(const char *);
__attribute__((noinline)) static int copy_rounds(long rounds, const copier copy[3]) {
    size_t sum = 0;
    for (long i = rounds; i > 0; i--) {
        char *a = copy[0]("first"), *b = copy[1]("second string"), *c = copy[2]("the third string");
        sum += strlen(a) + strlen(b) + strlen(c);
        free(a), free(b), free(c);
    }
    return sum == 0;
}

int main(int argc, char **argv) {
    static const copier via_library[3] = {site_d1, site_d2, site_d3}, via_shared[3] = {site_e1, site_e2, site_e3};
    if (argc > 2 && !strcmp(argv[1], "shared")) return copy_rounds(atol(argv[2]), via_shared);
    if (argc > 2 && !strcmp(argv[1], "library")) return copy_rounds(atol(argv[2]), via_library);
    if (argc > 2 && !strcmp(argv[1], "recurse")) {
        long sum = 0;
        for (struct node *n = build(atol(argv[2])), *next; n; n = next) next = n->next, sum += n->depth, free(n);
        return sum == 0;
    }
    const char *order = "pqprqpPrqp";
    for (int i = 0; i < 10; i++) {
        size_t n = order[i] == 'P' ? 5000 : 48 + 8 * (size_t)i;
        objs[i] = order[i] == 'q' ? site_q(n) : order[i] == 'r' ? site_r(n) : site_p(n);
    }
    uint32_t x = 1;
    uint64_t sum = 0;
    for (int k = 0; k < 300; k++) {
        x = x * 1103515245u + 12345u;
        sum += objs[(x >> 16) % 10][0];
    }
    for (int i = 0; i < 10; i++) free((void *)objs[i]);
    return (int)sum;
}
