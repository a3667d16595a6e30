/* modules.c — the executable file mappings of the running process (see modules.h). */
#define _GNU_SOURCE
#include "modules.h"

#include <string.h>
#include <sys/mman.h>

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

const struct hl_module *hl_module_of(const struct hl_module *m, size_t n, uint64_t a) {
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (m[mid].lo <= a) lo = mid + 1;
        else hi = mid;
    }
    return lo && a < m[lo - 1].hi ? &m[lo - 1] : NULL;
}
