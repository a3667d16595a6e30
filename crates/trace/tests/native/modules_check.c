/* modules_check.c — the dynamic loader's module list (hl_load_modules_loaded), the main
 * thread's stack bounds (hl_main_stack) and what hl_load_modules_at_start makes of them, against
 * /proc/self/maps (hl_load_modules_at), in a program that loads a library through a symbolic
 * link, is itself started through one, and dlopens a second library. Prints "ok N" (N modules
 * compared) or the first difference and exits 1. Built by tests/modules.rs with
 * native/modules.c. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "modules.h"

/* The runtime's own definitions live in interpose.c, which would interpose malloc here. */
long hl_page_size = 4096;
size_t hl_read_file(const char *path, char *buf, size_t cap) {
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    size_t n = fread(buf, 1, cap, f);
    fclose(f);
    return n;
}

int modcheck_lib(int); /* in the library linked through a symbolic link */

static struct hl_module maps[4096], loaded[4096];

static int same(const struct hl_module *a, const struct hl_module *b) { return a->lo == b->lo && a->hi == b->hi && a->off == b->off && a->name_hash == b->name_hash; }

static int compare(const char *when) {
    uintptr_t sp = (uintptr_t)__builtin_frame_address(0), lo = 0, hi = 0, mlo = 0, mhi = 0;
    size_t nm = hl_load_modules_at(maps, 4096, sp, &lo, &hi), nl = hl_load_modules_loaded(loaded, 4096, NULL, 0);
    if (nm == (size_t)-1 || nl == (size_t)-1) return printf("%s: no modules (%zu from the maps, %zu loaded)\n", when, nm, nl), 1;
    uint64_t vdso = hl_fnv1a("[vdso]", 6), vsyscall = hl_fnv1a("[vsyscall]", 10);
    size_t files = 0;
    for (size_t i = 0; i < nm; i++) {
        if (maps[i].name_hash == vdso || maps[i].name_hash == vsyscall) continue;
        files++;
        size_t j = 0;
        while (j < nl && !same(&maps[i], &loaded[j])) j++;
        if (j == nl) return printf("%s: mapping %lx-%lx at %lx (name %016lx) is not in the loaded list\n", when, (unsigned long)maps[i].lo, (unsigned long)maps[i].hi, (unsigned long)maps[i].off, (unsigned long)maps[i].name_hash), 1;
    }
    if (files != nl) return printf("%s: %zu file mappings, %zu loaded segments\n", when, files, nl), 1;
    for (size_t j = 1; j < nl; j++)
        if (loaded[j - 1].lo > loaded[j].lo) return printf("%s: the loaded list is not in address order\n", when), 1;
    if (!hl_main_stack(sp, &mlo, &mhi)) return printf("%s: no main stack bounds on the main thread\n", when), 1;
    if (mhi != hi || mlo > sp || sp >= mhi) return printf("%s: main stack [%lx, %lx) against the maps' [%lx, %lx) at sp %lx\n", when, (unsigned long)mlo, (unsigned long)mhi, (unsigned long)lo, (unsigned long)hi, (unsigned long)sp), 1;
    /* What the runtimes call at start: the loaded list and the main stack. */
    uintptr_t slo = 0, shi = 0;
    size_t ns = hl_load_modules_at_start(maps, 4096, sp, &slo, &shi, NULL, 0);
    if (ns != nl || slo != mlo || shi != mhi) return printf("%s: at start %zu modules, stack [%lx, %lx)\n", when, ns, (unsigned long)slo, (unsigned long)shi), 1;
    for (size_t j = 0; j < nl; j++)
        if (!same(&maps[j], &loaded[j])) return printf("%s: at start, module %zu differs from the loaded list\n", when, j), 1;
    /* Looking for some modules only (names as loaded first): each one looked for is found as
     * with links followed, whether loaded under its own name or through a link (the library
     * above, the program), alone or with all the others. */
    static uint64_t every[4096];
    for (size_t i = 0; i < nl; i++) every[i] = loaded[i].name_hash;
    for (size_t j = 0; j <= nl; j++) {
        const uint64_t *wanted = j < nl ? &every[j] : every;
        size_t nw = j < nl ? 1 : nl, ng = hl_load_modules_loaded(maps, 4096, wanted, nw);
        if (ng == (size_t)-1) return printf("%s: no modules when looking for some\n", when), 1;
        for (size_t i = 0; i < nl; i++) {
            size_t w = 0;
            while (w < nw && wanted[w] != loaded[i].name_hash) w++;
            if (w == nw) continue;
            size_t k = 0;
            while (k < ng && !same(&maps[k], &loaded[i])) k++;
            if (k == ng) return printf("%s: module %zu (name %016lx) not found when looked for\n", when, i, (unsigned long)loaded[i].name_hash), 1;
        }
    }
    return printf("%s: ok %zu\n", when, nl), 0;
}

static void *on_thread(void *arg) {
    uintptr_t lo, hi;
    *(int *)arg = hl_main_stack((uintptr_t)__builtin_frame_address(0), &lo, &hi);
    return NULL;
}

int main(int argc, char **argv) {
    if (modcheck_lib(1) != 2) return 1;
    if (compare("at start")) return 1;
    if (argc > 1) {
        void *h = dlopen(argv[1], RTLD_NOW);
        if (!h) return printf("dlopen %s: %s\n", argv[1], dlerror()), 1;
        if (compare("after dlopen")) return 1;
    }
    int on_other = -1;
    pthread_t t;
    pthread_create(&t, NULL, on_thread, &on_other);
    pthread_join(t, NULL);
    if (on_other != 0) return printf("main stack bounds given on another thread\n"), 1;
    return 0;
}
