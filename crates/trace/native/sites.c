/* sites.c — call-site ids (see sites.h): stack capture (native/unwind.c walks the stack),
 * hashing, and the id table. */
#define _GNU_SOURCE
#include "sites.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "interpose.h"
#include "unwind.h"

/* Small for a client built with HL_COMPACT_TABLES (see unwind.c): ids are 0 (unknown) when full. */
#ifdef HL_COMPACT_TABLES
#define SITE_SLOTS (1u << 15)
#else
#define SITE_SLOTS (1u << 18)
#endif

static int depth;
static struct site_slot { _Atomic uint64_t key; _Atomic uint32_t id; uint32_t pad; } *sites;
static atomic_uint site_ctr;

int hl_sites_init(int d) {
    depth = d > HL_MAX_DEPTH ? HL_MAX_DEPTH : d;
    void *m = sys_mmap(NULL, sizeof *sites * SITE_SLOTS, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    sites = m == MAP_FAILED ? NULL : m;
    if (depth > 1) {
        hl_unwind_init();
    }
    return sites ? 0 : -1;
}

void hl_sites_reset(void) {
    if (sites) {
        madvise(sites, sizeof *sites * SITE_SLOTS, MADV_DONTNEED); /* zeroes the private table */
        atomic_store(&site_ctr, 0);
    }
}

uint64_t hl_mix(uint64_t h, uint64_t v) {
    h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    h *= 0xff51afd7ed558ccdull;
    return h ^ (h >> 33);
}

/* Waits for the thread that claimed a slot to publish its id (a few instructions away). */
static uint32_t published_id(struct site_slot *slot) {
    uint32_t id;
    while ((id = atomic_load_explicit(&slot->id, memory_order_acquire)) == 0) {
    }
    return id;
}

uint32_t hl_site_of(void *ret, struct hl_site *s) {
    int n = 1;
    s->frames[0] = ret;
    s->is_new = 0;
    s->id = 0;
    /* The callers above `ret`, however many of the library's own frames come first (the
     * interposer's and the client's, down to here: inlining decides how many). */
    if (depth > 1) n += hl_unwind_after(ret, s->frames + 1, depth - 1);
    s->n = n;
    uint64_t h = 0x6a09e667f3bcc909ull;
    for (int i = 0; i < n; i++) h = hl_mix(h, (uint64_t)(uintptr_t)s->frames[i]);
    h |= 1; /* 0 marks an empty slot */
    s->hash = h;
    if (!sites) return 0;
    uint32_t slot = (uint32_t)(h >> 20) & (SITE_SLOTS - 1);
    for (int probe = 0; probe < 64; probe++, slot = (slot + 1) & (SITE_SLOTS - 1)) {
        uint64_t k = atomic_load_explicit(&sites[slot].key, memory_order_acquire);
        if (k == h) return s->id = published_id(&sites[slot]);
        if (k == 0) {
            uint64_t seen = 0;
            if (atomic_compare_exchange_strong(&sites[slot].key, &seen, h)) {
                uint32_t id = atomic_fetch_add(&site_ctr, 1) + 1;
                atomic_store_explicit(&sites[slot].id, id, memory_order_release);
                s->is_new = 1;
                return s->id = id;
            }
            if (seen == h) return s->id = published_id(&sites[slot]); /* another thread defined it just now */
        }
    }
    return 0;
}
