/* Recursion through two call sites: a binary tree of depth D built by one recursive function
 * that calls itself for the left and for the right child (two return addresses in one
 * function), each node allocated at one call site before the recursive calls. A call stack
 * reduced as HALO reduces it (each return address kept at its innermost occurrence) tells the
 * nodes apart by the order their path took the two calls in (root; left only; right only;
 * left then right; right then left), although they are one kind of object. The tree is then
 * summed ROUNDS times (its nodes used together); a list of items allocated elsewhere is walked
 * once on its own.
 *
 * usage: recursion D [ROUNDS]
 * Prints a checksum that does not depend on where the nodes are. */
#include <stdio.h>
#include <stdlib.h>

struct node {
    struct node *left, *right;
    long value;
};

struct item {
    struct item *next;
    long value;
};

__attribute__((noinline)) static struct node *build(int d, long v) {
    struct node *n = malloc(sizeof *n);
    if (!n) {
        perror("malloc");
        exit(1);
    }
    n->value = v;
    n->left = d > 0 ? build(d - 1, 2 * v) : NULL;
    /* The stores after the calls keep them from being tail calls. */
    n->right = d > 0 ? build(d - 1, 2 * v + 1) : NULL;
    return n;
}

__attribute__((noinline)) static long sum(const struct node *n) { return n ? n->value + sum(n->left) + sum(n->right) : 0; }

__attribute__((noinline)) static void release(struct node *n) {
    if (!n) return;
    release(n->left);
    release(n->right);
    free(n);
}

__attribute__((noinline)) static struct item *new_item(long v, struct item *next) {
    struct item *i = malloc(sizeof *i);
    if (!i) {
        perror("malloc");
        exit(1);
    }
    i->value = v, i->next = next;
    return i;
}

int main(int argc, char **argv) {
    int depth = argc > 1 ? atoi(argv[1]) : 8;
    long rounds = argc > 2 ? atol(argv[2]) : 20;
    if (depth < 0 || depth > 24 || rounds < 1) {
        fprintf(stderr, "usage: recursion D [ROUNDS]\n");
        return 2;
    }
    struct item *items = NULL;
    for (long i = 0; i < 200; i++) items = new_item(i, items);
    struct node *tree = build(depth, 1);
    long s = 0;
    for (long r = 0; r < rounds; r++) s += sum(tree) * (r + 1);
    for (struct item *i = items, *next; i; i = next) next = i->next, s ^= i->value, free(i);
    release(tree);
    printf("recursion: depth %d, %ld rounds, checksum %ld\n", depth, rounds, s);
    return 0;
}
