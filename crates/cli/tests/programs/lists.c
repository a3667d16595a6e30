/* Grouping's known pattern (HALO's figure 2, in miniature): three kinds of node are allocated
 * interleaved, A B C A B C ..., all through one wrapper (so only the full call stack tells them
 * apart). A and B nodes are then walked together, in lockstep, many times; C nodes are walked
 * on their own, once. A grouping must put A and B together and keep C out of their group.
 *
 * usage: lists N [ROUNDS] [THREADS]   (THREADS > 1: each thread builds and walks its own lists)
 * Prints a checksum that does not depend on where the nodes are. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct node {
    struct node *next;
    long value;
    char pad[40];
};

static long n_nodes = 1000, rounds = 50;

__attribute__((noinline)) static void *xmalloc(size_t n) {
    void *p = malloc(n);
    if (!p) {
        perror("malloc");
        exit(1);
    }
    return p;
}

__attribute__((noinline)) static struct node *new_node(long v) {
    struct node *n = xmalloc(sizeof *n);
    memset(n, 0, sizeof *n);
    n->value = v;
    return n;
}

__attribute__((noinline)) static struct node *make_a(long i) { return new_node(i); }
__attribute__((noinline)) static struct node *make_b(long i) { return new_node(2 * i + 1); }
__attribute__((noinline)) static struct node *make_c(long i) { return new_node(3 * i + 2); }

static void *work(void *arg) {
    long *sum = arg;
    struct node *a = NULL, *b = NULL, *c = NULL;
    for (long i = 0; i < n_nodes; i++) {
        struct node *x = make_a(i), *y = make_b(i), *z = make_c(i);
        x->next = a, a = x;
        y->next = b, b = y;
        z->next = c, c = z;
    }
    long s = 0;
    for (long r = 0; r < rounds; r++)
        for (struct node *x = a, *y = b; x && y; x = x->next, y = y->next) s += x->value * (r + 1) + y->value;
    for (struct node *z = c; z; z = z->next) s ^= z->value;
    for (struct node *p[3] = {a, b, c}, **q = p; q < p + 3; q++)
        for (struct node *x = *q, *nx; x; x = nx) nx = x->next, free(x);
    *sum = s;
    return NULL;
}

int main(int argc, char **argv) {
    if (argc > 1) n_nodes = atol(argv[1]);
    if (argc > 2) rounds = atol(argv[2]);
    int threads = argc > 3 ? atoi(argv[3]) : 1;
    if (n_nodes < 1 || rounds < 1 || threads < 1 || threads > 64) {
        fprintf(stderr, "usage: lists N [ROUNDS] [THREADS]\n");
        return 2;
    }
    pthread_t t[64];
    long sums[64];
    if (threads == 1) work(&sums[0]);
    else {
        for (int i = 0; i < threads; i++) pthread_create(&t[i], NULL, work, &sums[i]);
        for (int i = 0; i < threads; i++) pthread_join(t[i], NULL);
    }
    long total = 0;
    for (int i = 0; i < threads; i++) total += sums[i];
    printf("lists: %ld nodes x 3, %ld rounds, %d threads, checksum %ld\n", n_nodes, rounds, threads, total);
    return 0;
}
