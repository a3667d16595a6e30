/* modules.c — the executable file mappings of the running process (see modules.h). */
#define _GNU_SOURCE
#include "modules.h"

#include <elf.h>
#include <link.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "interpose.h"

uint64_t hl_fnv1a(const char *s, size_t n) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 0x100000001b3ull;
    return h;
}

size_t hl_load_modules(struct hl_module *m, size_t cap) { return hl_load_modules_at(m, cap, 0, NULL, NULL); }

size_t hl_load_modules_at(struct hl_module *m, size_t cap, uintptr_t sp, uintptr_t *sp_lo, uintptr_t *sp_hi) {
    size_t bufcap = 4u << 20;
    char *buf = sys_mmap(NULL, bufcap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (buf == MAP_FAILED) return (size_t)-1;
    size_t n = hl_read_file("/proc/self/maps", buf, bufcap);
    if (n == 0) {
        sys_munmap(buf, bufcap);
        return (size_t)-1;
    }
    size_t k = 0;
    for (const char *line = buf, *end = buf + n; line < end && k < cap;) {
        const char *eol = memchr(line, '\n', (size_t)(end - line));
        if (!eol) eol = end;
        struct hl_maps_line l = hl_parse_maps_line(line, eol);
        if (sp_lo && l.lo <= sp && sp < l.hi) *sp_lo = l.lo, *sp_hi = l.hi;
        if (l.exec && l.path < eol && l.hi > l.lo) {
            const char *base = l.path;
            for (const char *c = l.path; c < eol; c++)
                if (*c == '/') base = c + 1;
            m[k++] = (struct hl_module){l.lo, l.hi, l.off, hl_fnv1a(base, (size_t)(eol - base))};
        }
        line = eol + 1;
    }
    sys_munmap(buf, bufcap);
    return k; /* /proc lists mappings in address order */
}

/* The page size (the interposer's, set at its start; 4096 before). */
static uint64_t page_size(void) { return (uint64_t)(hl_page_size > 0 ? hl_page_size : 4096); }

/* The FNV-1a hash of the basename /proc/self/maps shows for the file `path` names: the kernel
 * shows the file itself, so symbolic links in the last component are followed (libstdc++.so.6
 * names libstdc++.so.6.0.30); links in the directories above do not change the basename. */
static uint64_t file_name_hash(const char *path) {
    char cur[4096], link[4096];
    size_t len = strlen(path);
    if (len < sizeof cur) {
        memcpy(cur, path, len + 1);
        for (int hop = 0; hop < 16; hop++) {
            long n = syscall(SYS_readlink, cur, link, sizeof link - 1);
            if (n <= 0) break;
            link[n] = 0;
            if (link[0] == '/') {
                memcpy(cur, link, (size_t)n + 1);
                continue;
            }
            char *slash = strrchr(cur, '/');
            size_t dir = slash ? (size_t)(slash - cur) + 1 : 0;
            if (dir + (size_t)n + 1 > sizeof cur) break;
            memcpy(cur + dir, link, (size_t)n + 1);
        }
        path = cur;
    }
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    return hl_fnv1a(base, strlen(base));
}

struct phdr_walk {
    struct hl_module *m;
    size_t cap, n;
    int as_loaded; /* name objects by the path they were loaded by, links not followed */
};

/* The FNV-1a hash of the basename of `path`. */
static uint64_t base_hash(const char *path) {
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    return hl_fnv1a(base, strlen(base));
}

/* One loaded object: its executable segments, as /proc/self/maps lists their mappings. */
static int add_object(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    struct phdr_walk *w = data;
    const char *name = info->dlpi_name;
    /* The program itself comes first with no name; the vDSO has no file. */
    int program = !name || !*name;
    if (!program && name[0] != '/') return 0;
    uint64_t page = page_size(), hash = 0;
    int hashed = 0;
    for (int k = 0; k < info->dlpi_phnum && w->n < w->cap; k++) {
        const ElfW(Phdr) *p = &info->dlpi_phdr[k];
        if (p->p_type != PT_LOAD || !(p->p_flags & PF_X) || p->p_memsz == 0) continue;
        if (!hashed) {
            const char *as_loaded = program ? (const char *)getauxval(AT_EXECFN) : name;
            hash = w->as_loaded && as_loaded ? base_hash(as_loaded) : file_name_hash(program ? "/proc/self/exe" : name);
            hashed = 1;
        }
        uint64_t at = (uint64_t)info->dlpi_addr + p->p_vaddr;
        w->m[w->n++] = (struct hl_module){at & ~(page - 1), (at + p->p_memsz + page - 1) & ~(page - 1), (uint64_t)p->p_offset & ~(page - 1), hash};
    }
    return w->n == w->cap; /* full: stop */
}

/* Whether every hash of `wanted` names one of m[0..n). */
static int all_found(const struct hl_module *m, size_t n, const uint64_t *wanted, size_t nwanted) {
    for (size_t k = 0; k < nwanted; k++) {
        size_t i = 0;
        while (i < n && m[i].name_hash != wanted[k]) i++;
        if (i == n) return 0;
    }
    return 1;
}

size_t hl_load_modules_loaded(struct hl_module *m, size_t cap, const uint64_t *wanted, size_t nwanted) {
    struct phdr_walk w = {m, cap, 0, wanted != NULL};
    dl_iterate_phdr(add_object, &w);
    if (w.as_loaded && !all_found(m, w.n, wanted, nwanted)) {
        w.n = 0, w.as_loaded = 0;
        dl_iterate_phdr(add_object, &w);
    }
    if (w.n == 0) return (size_t)-1;
    for (size_t i = 1; i < w.n; i++) /* address order; a program has a few dozen at most */
        for (size_t j = i; j > 0 && m[j - 1].lo > m[j].lo; j--) {
            struct hl_module t = m[j];
            m[j] = m[j - 1];
            m[j - 1] = t;
        }
    return w.n;
}

int hl_main_stack(uintptr_t sp, uintptr_t *lo, uintptr_t *hi) {
    if (syscall(SYS_gettid) != syscall(SYS_getpid)) return 0;
    uintptr_t fn = (uintptr_t)getauxval(AT_EXECFN), page = (uintptr_t)page_size();
    if (!fn || fn < sp) return 0;
    *hi = (fn + strlen((const char *)fn) + 1 + page - 1) & ~(page - 1);
    *lo = (sp & ~(page - 1)) - HL_MAIN_STACK_BELOW;
    return 1;
}

size_t hl_load_modules_at_start(struct hl_module *m, size_t cap, uintptr_t sp, uintptr_t *sp_lo, uintptr_t *sp_hi, const uint64_t *wanted, size_t nwanted) {
    if (hl_main_stack(sp, sp_lo, sp_hi)) {
        size_t n = hl_load_modules_loaded(m, cap, wanted, nwanted);
        if (n != (size_t)-1) return n;
    }
    return hl_load_modules_at(m, cap, sp, sp_lo, sp_hi);
}

const struct hl_module *hl_module_of(const struct hl_module *m, size_t n, uint64_t a) {
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (m[mid].lo <= a) lo = mid + 1;
        else hi = mid;
    }
    return lo && a < m[lo - 1].hi ? &m[lo - 1] : NULL;
}
