/* apply.c — the layout runtime behind `heaplab run` (libheaplab_apply.so): a client of the
 * native layer in client-served mode (crates/trace/native/interpose.h, HL_CLIENT_SERVES).
 *
 * Owns: reading and checking the `.hllayout` file (the format is specified in
 * crates/apply/src/format.rs; its numbers come from the generated heaplab_layout.h), the region,
 * identifying each allocation (the identification rule of docs/apply.md: global ordinal, or
 * stable context key + ordinal within the context, and the exact size), serving planned blocks
 * at their offsets when their slot is free now, sending everything else to the fallback (the
 * real allocator next in the chain) and counting why, the report at the end of the image, and
 * what fork and exec mean for a layout.
 *
 * Design in one paragraph. The region is reserved once (MAP_NORESERVE, aligned to the layout's
 * region_align); the layout file is mapped read-only and its entry pages dropped from time to
 * time (they fault back from the page cache), so the layout costs little RSS. Identification is
 * lock-free: an atomic ordinal (per context with contexts; a context's key is computed from the
 * call site's frames and /proc/self/maps once per new site and cached by site id). A planned
 * slot is handed out only if it is free now, because the program's lifetimes may differ from
 * the profile's: two granule bitmaps under one spin lock say which granules are in live blocks
 * and where each begins. Nothing here calls the program's malloc: memory is mmap'd or
 * static; the report is written with raw syscalls.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "heaplab_layout.h"
#include "interpose.h"
#include "modules.h"
#include "report.h"
#include "sites.h"

#define NO_OFFSET UINT64_MAX
#define RESYNC 16      /* how far (in entries, either way) a resynchronisation looks */
#define RESYNC_EVIDENCE 3 /* consecutive mismatched requests that must match the shifted entries */
#define DROP_EVERY 0xffu /* entry pages are dropped after this many allocations of a context (one page of entries: peak RSS is measured) */

/* ---- the layout ---- */
struct ctx_rec { uint64_t key, first, count; };
struct entry_rec { uint64_t size, offset; };

static struct {
    unsigned char *map;            /* the file's mapping (up to the end of the entries) */
    size_t map_len;
    const struct ctx_rec *ctx;
    uint64_t nctx;
    const struct entry_rec *entries;
    uint64_t nentries;
    uint64_t region, align, max_live;
    uint32_t depth;
    int keyed;
    char strategy[72];
} L;

/* ---- the region and its bookkeeping (under `lock`) ----
 * Two bitmaps, one bit per granule: `busy` (in a live block) and `start` (a live block begins
 * here). A block runs from its start granule up to the next start or free granule, so the
 * bitmaps alone give every live block's slot: no table of blocks, 1/64 of the region in all. */
static unsigned char *region;
static uint64_t granules;
static uint64_t *busy, *start;
static uint64_t touched;           /* end of the region's part ever handed out (above: zero) */
static atomic_flag lock = ATOMIC_FLAG_INIT;

/* ---- identification ---- */
static _Atomic uint64_t *ordinals; /* next ordinal per context */
static _Atomic uint32_t *site_ctx; /* by site id: 0 unknown yet, 1 no context, else index + 2 */

/* ---- counters (the report) ---- */
enum why { W_UNPLANNED, W_SIZE, W_BEYOND, W_CONTEXT, W_BUSY, W_ALIGN, W_N };
static const char *const why_name[W_N] = {"unplanned", "size_mismatch", "beyond_layout", "unknown_context", "busy", "misaligned"};
static _Atomic uint64_t fb_count[W_N], fb_bytes[W_N];
static uint64_t planned, planned_bytes, frees_region; /* under lock */
static _Atomic uint64_t stray_frees;
static _Atomic uint64_t resyncs; /* times the global ordinal was shifted back into step */
static _Atomic uint64_t misses_in_row;           /* consecutive size mismatches (global ordinals) */
static _Atomic uint64_t recent[RESYNC_EVIDENCE]; /* their sizes, by ordinal modulo the count */
static atomic_int mismatch_taken;
static struct { uint64_t ordinal, context, expected, size; int why, has_expected; } first_mismatch;

/* ---- configuration ---- */
static int serving;                /* this image applies the layout (root image, valid layout) */
static char layout_path[4096], report_path[4096], error_text[512];

static inline void lock_take(void) {
    while (atomic_flag_test_and_set_explicit(&lock, memory_order_acquire)) sched_yield();
}
static inline void lock_drop(void) { atomic_flag_clear_explicit(&lock, memory_order_release); }

static inline uint64_t slot_of(uint64_t size) { return size < HLL_GRANULE ? HLL_GRANULE : (size + HLL_GRANULE - 1) & ~(uint64_t)(HLL_GRANULE - 1); }

static void say2(const char *a, const char *b) {
    hl_say("heaplab run: ");
    hl_say(a);
    hl_say(b);
    hl_say("\n");
}

/* ---- the bitmaps ---- */
static inline uint64_t range_mask(uint64_t b, uint64_t k) { return (k == 64 ? ~0ull : ((1ull << k) - 1)) << b; }

static int bits_any(const uint64_t *m, uint64_t g, uint64_t n) {
    while (n) {
        uint64_t b = g & 63, k = 64 - b < n ? 64 - b : n;
        if (m[g >> 6] & range_mask(b, k)) return 1;
        g += k;
        n -= k;
    }
    return 0;
}
static void bits_set(uint64_t *m, uint64_t g, uint64_t n, int on) {
    while (n) {
        uint64_t b = g & 63, k = 64 - b < n ? 64 - b : n;
        if (on) m[g >> 6] |= range_mask(b, k);
        else m[g >> 6] &= ~range_mask(b, k);
        g += k;
        n -= k;
    }
}
static inline int bit(const uint64_t *m, uint64_t g) { return (int)(m[g >> 6] >> (g & 63)) & 1; }

/* Granules of the live block starting at granule g (0 when none starts there). */
static uint64_t run_of(uint64_t g) {
    if (g >= granules || !bit(start, g) || !bit(busy, g)) return 0;
    uint64_t i = g + 1;
    while (i < granules) {
        uint64_t b = i & 63, stop = (~busy[i >> 6] | start[i >> 6]) >> b;
        if (stop) {
            i += (uint64_t)__builtin_ctzll(stop);
            break;
        }
        i += 64 - b;
    }
    return (i < granules ? i : granules) - g;
}

/* Claims the slot of a `size`-byte block at `off` if it is free now. Returns 1 and sets
 * *fresh when no block was ever handed out there (the memory is still zero). */
static int claim(uint64_t off, uint64_t size, int *fresh) {
    uint64_t g = off / HLL_GRANULE, n = slot_of(size) / HLL_GRANULE;
    lock_take();
    if (bits_any(busy, g, n)) {
        lock_drop();
        return 0;
    }
    bits_set(busy, g, n, 1);
    bits_set(start, g, 1, 1);
    *fresh = off >= touched;
    if (off + n * HLL_GRANULE > touched) touched = off + n * HLL_GRANULE;
    planned++;
    planned_bytes += size;
    lock_drop();
    return 1;
}

/* Releases the region block at `off`; returns its slot in bytes, or 0 when no live block
 * starts there (a stray free: counted and ignored). */
static uint64_t release(uint64_t off) {
    uint64_t g = off / HLL_GRANULE;
    lock_take();
    uint64_t n = off % HLL_GRANULE ? 0 : run_of(g);
    if (n) {
        bits_set(busy, g, n, 0);
        bits_set(start, g, 1, 0);
        frees_region++;
    }
    lock_drop();
    if (!n) atomic_fetch_add_explicit(&stray_frees, 1, memory_order_relaxed);
    return n * HLL_GRANULE;
}

/* The slot in bytes of the live region block at `off` (0: none starts there). */
static uint64_t slot_at(uint64_t off) {
    if (off % HLL_GRANULE) return 0;
    lock_take();
    uint64_t n = run_of(off / HLL_GRANULE);
    lock_drop();
    return n * HLL_GRANULE;
}

/* ---- stable context keys (crates/trace/src/context.rs has the rule; the tests compare) ---- */

/* The executable file mappings (native/modules.c), read again when a frame lies outside them. */
#define MAX_MODULES 8192
static struct hl_module *modules;
static size_t nmodules;
static atomic_flag maps_lock = ATOMIC_FLAG_INIT;

/* At start-up (`loaded`) from the dynamic loader's list, with the main thread's stack bounds
 * for the walker, without reading /proc/self/maps; later from the maps, which also list files
 * mapped executable by other means. */
static void load_modules(int loaded) {
    if (!modules) {
        void *m = sys_mmap(NULL, sizeof *modules * MAX_MODULES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m == MAP_FAILED) return;
        modules = m;
    }
    uintptr_t lo = 0, hi = 0;
    size_t k = loaded ? hl_load_modules_at_start(modules, MAX_MODULES, (uintptr_t)__builtin_frame_address(0), &lo, &hi, NULL, 0) : hl_load_modules(modules, MAX_MODULES);
    hl_unwind_set_stack(lo, hi); /* ignores empty bounds */
    if (k != (size_t)-1) nmodules = k;
}

/* The stable key of a call site's frames (innermost first); never 0. */
static uint64_t context_key(void *const *frames, int n) {
    while (atomic_flag_test_and_set_explicit(&maps_lock, memory_order_acquire)) sched_yield();
    int reloaded = 0;
    uint64_t h = 0x6a09e667f3bcc909ull;
    for (int i = 0; i < n; i++) {
        uint64_t a = (uint64_t)(uintptr_t)frames[i];
        const struct hl_module *m = hl_module_of(modules, nmodules, a);
        if (!m && !reloaded) { /* a library loaded since: read the maps again, once */
            load_modules(0);
            reloaded = 1;
            m = hl_module_of(modules, nmodules, a);
        }
        h = hl_mix(h, m ? m->name_hash ^ ((a - m->lo + m->off) * 0x9E3779B97F4A7C15ull) : a);
    }
    atomic_flag_clear_explicit(&maps_lock, memory_order_release);
    return h | 1;
}

/* The context index of the call that returns to `ret`, or -1 when the layout has none (then
 * *key is its key, computed once per site). */
static int64_t context_of(void *ret, uint64_t *key_out) {
    struct hl_site s;
    uint32_t id = hl_site_of(ret, &s);
    uint32_t c = id ? atomic_load_explicit(&site_ctx[id], memory_order_relaxed) : 0;
    *key_out = 0;
    if (c) return (int64_t)c - 2;
    uint64_t key = context_key(s.frames, s.n);
    *key_out = key;
    int64_t found = -1;
    uint64_t lo = 0, hi = L.nctx;
    while (lo < hi) {
        uint64_t mid = (lo + hi) / 2;
        if (L.ctx[mid].key < key) lo = mid + 1;
        else hi = mid;
    }
    if (lo < L.nctx && L.ctx[lo].key == key) found = (int64_t)lo;
    if (id) atomic_store_explicit(&site_ctx[id], (uint32_t)(found + 2), memory_order_relaxed);
    return found;
}

/* ---- identification and serving ---- */

static void note_mismatch(int why, uint64_t ordinal, uint64_t context, uint64_t expected, int has_expected, uint64_t size) {
    if (atomic_load_explicit(&mismatch_taken, memory_order_relaxed) || atomic_exchange(&mismatch_taken, 1)) return;
    first_mismatch.why = why;
    first_mismatch.ordinal = ordinal;
    first_mismatch.context = context;
    first_mismatch.expected = expected;
    first_mismatch.has_expected = has_expected;
    first_mismatch.size = size;
}

static void drop_entry_pages(void) {
    uintptr_t from = (uintptr_t)L.entries & ~(uintptr_t)(hl_page_size - 1);
    uintptr_t to = (uintptr_t)L.map + L.map_len;
    if (to > from) madvise((void *)from, to - from, MADV_DONTNEED);
}

/* After RESYNC_EVIDENCE size mismatches in a row at global ordinals k-2..k, looks for the shift
 * (at most RESYNC entries either way, the smallest first) at which those requests' sizes match
 * the layout's in order, and moves the ordinal there: one allocation more or fewer than in the
 * profile (a library's start-up allocation under another fallback allocator, a path taken once
 * more) then costs a few matches instead of every later one. Evidence from several requests is
 * needed because common sizes repeat: a shift chosen on one request would mostly be wrong. Only
 * matches depend on this; every slot is still claimed through the bitmaps. */
static void resync(uint64_t k, uint64_t size) {
    atomic_store_explicit(&recent[k % RESYNC_EVIDENCE], size, memory_order_relaxed);
    uint64_t run = atomic_fetch_add_explicit(&misses_in_row, 1, memory_order_relaxed) + 1;
    if (run < RESYNC_EVIDENCE || k + 1 < RESYNC_EVIDENCE) return;
    uint64_t want[RESYNC_EVIDENCE];
    for (uint64_t j = 0; j < RESYNC_EVIDENCE; j++)
        want[j] = atomic_load_explicit(&recent[(k + 1 - RESYNC_EVIDENCE + j) % RESYNC_EVIDENCE], memory_order_relaxed);
    for (int64_t m = 1; m <= RESYNC; m++)
        for (int sign = -1; sign <= 1; sign += 2) {
            int64_t shift = sign * m;
            int64_t lo = (int64_t)k + 1 - RESYNC_EVIDENCE + shift;
            if (lo < 0 || (uint64_t)(lo + RESYNC_EVIDENCE) > L.nentries) continue;
            uint64_t j = 0;
            while (j < RESYNC_EVIDENCE && L.entries[lo + (int64_t)j].size == want[j]) j++;
            if (j < RESYNC_EVIDENCE) continue;
            uint64_t expect = k + 1;
            if (atomic_compare_exchange_strong(&ordinals[0], &expect, (uint64_t)((int64_t)k + 1 + shift))) {
                atomic_fetch_add_explicit(&resyncs, 1, memory_order_relaxed);
                atomic_store_explicit(&misses_in_row, 0, memory_order_relaxed);
            }
            return;
        }
}

/* Identifies an allocation of `size` bytes (alignment `align`, 0 for none) made from `ret`:
 * returns the offset of its planned slot (not claimed yet), or NO_OFFSET with *why saying why
 * it falls back. Takes the allocation's ordinal either way. */
static uint64_t identify(uint64_t size, uint64_t align, void *ret, int *why) {
    uint64_t context = 0, k, index, first, count;
    _Atomic uint64_t *ctr;
    if (L.keyed) {
        uint64_t key;
        int64_t c = context_of(ret, &key);
        if (c < 0) {
            *why = W_CONTEXT;
            if (key) note_mismatch(W_CONTEXT, 0, key, 0, 0, size);
            return NO_OFFSET;
        }
        context = L.ctx[c].key;
        ctr = &ordinals[c];
        first = L.ctx[c].first;
        count = L.ctx[c].count;
    } else {
        ctr = &ordinals[0];
        first = 0;
        count = L.nentries;
    }
    k = atomic_fetch_add_explicit(ctr, 1, memory_order_relaxed);
    if (k >= count) {
        *why = W_BEYOND;
        note_mismatch(W_BEYOND, k, context, 0, 0, size);
        return NO_OFFSET;
    }
    index = first + k;
    if ((k & DROP_EVERY) == DROP_EVERY) drop_entry_pages();
    struct entry_rec e = L.entries[index];
    if (e.size != size) {
        *why = W_SIZE;
        note_mismatch(W_SIZE, k, context, e.size, 1, size);
        if (!L.keyed) resync(k, size);
        return NO_OFFSET;
    }
    /* Read first: a store on every allocation would bounce the line between threads. */
    if (!L.keyed && atomic_load_explicit(&misses_in_row, memory_order_relaxed)) atomic_store_explicit(&misses_in_row, 0, memory_order_relaxed);
    if (e.offset == NO_OFFSET || !region) {
        *why = W_UNPLANNED;
        return NO_OFFSET;
    }
    if (align > 1 && ((uintptr_t)region + e.offset) % align != 0) {
        *why = W_ALIGN;
        return NO_OFFSET;
    }
    return e.offset;
}

static inline void count_fallback(int why, uint64_t size) {
    atomic_fetch_add_explicit(&fb_count[why], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&fb_bytes[why], size, memory_order_relaxed);
}

void *hl_serve_alloc(int op, size_t size, size_t extra, void *ret, int *err) {
    uint64_t bytes = size;
    if (!serving || (op == HL_CALLOC && __builtin_mul_overflow(extra, size, &bytes)) || !hl_valid_align(op, extra))
        return hl_real_alloc(op, size, extra, err);
    int why = W_UNPLANNED, fresh = 0;
    uint64_t align = op == HL_CALLOC || op == HL_MALLOC ? 0 : op == HL_VALLOC || op == HL_PVALLOC ? (uint64_t)hl_page_size : extra;
    uint64_t off = identify(bytes, align, ret, &why);
    /* pvalloc's block is its size rounded up to pages, more than the slot: it falls back, but
     * it takes its ordinal all the same. */
    if (off != NO_OFFSET && op == HL_PVALLOC) why = W_UNPLANNED, off = NO_OFFSET;
    if (off != NO_OFFSET) {
        if (claim(off, bytes, &fresh)) {
            void *p = region + off;
            if (op == HL_CALLOC && !fresh) memset(p, 0, bytes);
            return p;
        }
        why = W_BUSY;
    }
    count_fallback(why, bytes);
    return hl_real_alloc(op, size, extra, err);
}

/* Slots at least this big give their whole pages back to the kernel when freed, as general
 * allocators do with big blocks: the plan reuses every byte of the region, so without this a page
 * once touched would stay resident however little of it later blocks use. */
#define RELEASE_MIN (64u << 10)

void hl_serve_free(void *p) {
    uint64_t off = (uint64_t)((unsigned char *)p - region);
    if (off % HLL_GRANULE) {
        atomic_fetch_add_explicit(&stray_frees, 1, memory_order_relaxed);
        return;
    }
    /* The pages are given back while the block is still marked live, so no other thread can be
     * handed them (and lose its data) in between. */
    uint64_t n = slot_at(off);
    if (n >= RELEASE_MIN) {
        uint64_t pg = (uint64_t)hl_page_size;
        uint64_t from = (off + pg - 1) & ~(pg - 1), to = (off + n) & ~(pg - 1);
        if (to > from) madvise(region + from, to - from, MADV_DONTNEED);
    }
    release(off);
}

/* A region block's usable size is its whole slot: nothing else is ever placed there while it
 * lives. */
size_t hl_serve_usable(void *p) { return slot_at((uint64_t)((unsigned char *)p - region)); }

/* Moves the region block at `old_off` (slot `old_slot` bytes) to the slot at `new_off` for
 * `size` bytes, when every granule of the new slot is free or the old block's own (a plan may
 * put the new block where the old one was: their lifetimes only touch). The old granules stay
 * taken until the copy is done, so no other thread can be handed them while they are read. */
static void *move_within(uint64_t old_off, uint64_t old_slot, uint64_t new_off, uint64_t size) {
    uint64_t og = old_off / HLL_GRANULE, on = old_slot / HLL_GRANULE;
    uint64_t ng = new_off / HLL_GRANULE, nn = slot_of(size) / HLL_GRANULE;
    lock_take();
    bits_set(busy, og, on, 0);
    int ok = !bits_any(busy, ng, nn);
    bits_set(busy, og, on, 1);
    if (!ok) {
        lock_drop();
        return NULL;
    }
    /* While both are held, the old block keeps its start bit and the new one gets its own
     * only if it starts elsewhere (one start bit per live block). */
    bits_set(busy, ng, nn, 1);
    if (new_off != old_off) bits_set(start, ng, 1, 1);
    if (new_off + nn * HLL_GRANULE > touched) touched = new_off + nn * HLL_GRANULE;
    planned++;
    planned_bytes += size;
    lock_drop();
    uint64_t keep = old_slot < size ? old_slot : size;
    if (new_off != old_off) memmove(region + new_off, region + old_off, keep);
    lock_take();
    bits_set(busy, og, on, 0);
    bits_set(start, og, 1, 0);
    bits_set(busy, ng, nn, 1);
    bits_set(start, ng, 1, 1);
    frees_region++;
    lock_drop();
    return region + new_off;
}

/* realloc between the region and the fallback, in every direction. */
void *hl_serve_realloc(void *old, size_t bytes, void *ret, int identify_it) {
    int mine = old && hl_owns(old);
    uint64_t old_off = 0, old_slot = 0;
    if (mine) {
        old_off = (uint64_t)((unsigned char *)old - region);
        old_slot = slot_at(old_off);
        if (!old_slot) { /* not a live block of ours: a program error, left alone */
            atomic_fetch_add_explicit(&stray_frees, 1, memory_order_relaxed);
            errno = ENOMEM;
            return NULL;
        }
    }
    int identified = identify_it && serving;
    if (old && bytes == 0) { /* realloc(p, 0) frees p (glibc's answer, kept for our blocks) */
        if (mine) {
            release(old_off);
            return NULL;
        }
        void *q = hl_real.realloc(old, 0);
        if (q && identified) { /* an allocator that answers with a block: an allocation */
            int why = W_UNPLANNED;
            (void)identify(0, 0, ret, &why);
            count_fallback(why, 0);
        }
        return q;
    }
    uint64_t off = NO_OFFSET;
    int why = W_UNPLANNED, fresh = 0;
    if (identified) off = identify(bytes, 0, ret, &why);
    if (off != NO_OFFSET) {
        void *p = NULL;
        if (mine) {
            p = move_within(old_off, old_slot, off, bytes);
        } else if (claim(off, bytes, &fresh)) {
            p = region + off;
            if (old) {
                size_t have = hl_real.usable(old);
                memcpy(p, old, have < bytes ? have : bytes);
                hl_real.free(old);
            }
        }
        if (p) return p;
        why = W_BUSY;
    }
    if (identified) count_fallback(why, bytes);
    if (!mine) return hl_real.realloc(old, bytes);
    void *q = hl_real.malloc(bytes);
    if (!q) return NULL; /* the old block stays as it was */
    memcpy(q, old, old_slot < bytes ? old_slot : bytes);
    release(old_off);
    return q;
}

/* ---- loading the layout ---- */

static uint64_t get64(const unsigned char *p) {
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}
static uint32_t get32(const unsigned char *p) {
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

static int fail(const char *why) {
    size_t n = 0;
    const char *parts[] = {layout_path, ": ", why};
    for (size_t i = 0; i < 3; i++)
        for (const char *c = parts[i]; *c && n + 1 < sizeof error_text; c++) error_text[n++] = *c;
    error_text[n] = 0;
    say2(error_text, "; running the program without the layout");
    return -1;
}

/* Maps and checks the layout (header, checksum, contexts, entries inside the region), then
 * reserves the region and the bookkeeping. */
static int load_layout(void) {
    int f = open(layout_path, O_RDONLY | O_CLOEXEC);
    if (f < 0) return fail("cannot open the layout");
    struct stat st;
    if (fstat(f, &st) != 0 || st.st_size < HLL_HEADER_SIZE + 8) {
        close(f);
        return fail("not a layout (too short)");
    }
    /* The checksum over the whole file, read in chunks (the info records are not mapped). */
    uint64_t h = 0xcbf29ce484222325ull, stored = 0, total = (uint64_t)st.st_size;
    unsigned char buf[1 << 16], head[HLL_HEADER_SIZE];
    for (uint64_t at = 0; at < total;) {
        ssize_t r = read(f, buf, sizeof buf);
        if (r <= 0) {
            close(f);
            return fail("cannot read the layout");
        }
        for (ssize_t i = 0; i < r; i++, at++) {
            if (at < HLL_HEADER_SIZE) head[at] = buf[i];
            if (at < total - 8) h = (h ^ buf[i]) * 0x100000001b3ull;
            else stored |= (uint64_t)buf[i] << (8 * (at - (total - 8)));
        }
    }
    if (memcmp(head, HLL_MAGIC, 8) != 0) return close(f), fail("not a heaplab layout (bad magic)");
    if (get32(head + 8) != HLL_VERSION) return close(f), fail("unsupported layout version");
    if (h != stored) return close(f), fail("checksum mismatch (damaged layout)");
    uint32_t flags = get32(head + 12), slen = get32(head + 20);
    L.depth = get32(head + 16);
    L.region = get64(head + 24);
    L.nctx = get64(head + 32);
    L.nentries = get64(head + 40);
    L.align = get64(head + 48);
    L.max_live = get64(head + 56);
    L.keyed = flags & HLL_FLAG_CONTEXTS;
    uint64_t spad = ((uint64_t)slen + 7) & ~7ull;
    uint64_t ctx_at = HLL_HEADER_SIZE + spad, ent_at = ctx_at + L.nctx * HLL_CONTEXT_RECORD;
    uint64_t end = ent_at + L.nentries * HLL_ENTRY_RECORD;
    if (slen == 0 || slen > 64 || L.nctx > total || L.nentries > total || L.align < 4096 || (L.align & (L.align - 1)) ||
        L.depth > HL_MAX_DEPTH || (L.keyed && L.depth == 0) ||
        end + L.nentries * HLL_INFO_RECORD + 8 != total)
        return close(f), fail("inconsistent header");
    L.map = mmap(NULL, end, PROT_READ, MAP_PRIVATE, f, 0);
    close(f);
    if (L.map == MAP_FAILED) {
        L.map = NULL;
        return fail("cannot map the layout");
    }
    L.map_len = end;
    memcpy(L.strategy, L.map + HLL_HEADER_SIZE, slen);
    L.ctx = (const struct ctx_rec *)(L.map + ctx_at);
    L.entries = (const struct entry_rec *)(L.map + ent_at);
    uint64_t next = 0;
    for (uint64_t c = 0; c < L.nctx; c++) {
        if (L.ctx[c].first != next || L.ctx[c].count > L.nentries - next || (c && L.ctx[c].key <= L.ctx[c - 1].key))
            return fail("bad context records");
        next += L.ctx[c].count;
    }
    if (next != L.nentries || (!L.keyed && L.nctx > 1)) return fail("bad context records");
    /* The scan drops what it has read as it goes: peak RSS is measured, and a whole table read at
     * once would set the high-water mark before the program has allocated anything. */
    for (uint64_t i = 0; i < L.nentries; i++) {
        struct entry_rec e = L.entries[i];
        if (e.offset != NO_OFFSET && (e.offset % HLL_GRANULE || e.offset > L.region || slot_of(e.size) > L.region - e.offset))
            return fail("an entry lies outside the region");
        if ((i & 4095) == 4095) drop_entry_pages();
    }
    drop_entry_pages();
    /* The region: reserved with room to align its base, the excess given back. */
    if (L.region) {
        size_t len = L.region + L.align;
        unsigned char *m = sys_mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (m == MAP_FAILED) return fail("cannot reserve the region");
        uintptr_t base = ((uintptr_t)m + L.align - 1) & ~(uintptr_t)(L.align - 1);
        if (base > (uintptr_t)m) sys_munmap(m, base - (uintptr_t)m);
        uintptr_t tail = base + ((L.region + (uint64_t)hl_page_size - 1) & ~(uint64_t)(hl_page_size - 1));
        if ((uintptr_t)m + len > tail) sys_munmap((void *)tail, (uintptr_t)m + len - tail);
        region = (unsigned char *)base;
        granules = (L.region + HLL_GRANULE - 1) / HLL_GRANULE;
        size_t words = (granules + 63) / 64 * 8;
        void *b = sys_mmap(NULL, 2 * words, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (b == MAP_FAILED) return fail("cannot map the runtime's tables");
        busy = b;
        start = (uint64_t *)((unsigned char *)b + words);
    }
    void *o = sys_mmap(NULL, (L.nctx ? L.nctx : 1) * sizeof *ordinals, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (o == MAP_FAILED) return fail("cannot map the runtime's tables");
    ordinals = o;
    if (L.keyed) {
        void *s = sys_mmap(NULL, sizeof *site_ctx << 18, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (s == MAP_FAILED || hl_sites_init((int)L.depth) != 0) return fail("cannot map the call-site tables");
        site_ctx = s;
        load_modules(1);
    }
    return 0;
}

/* ---- the report ---- */

/* The report, written once when the image that claimed the run ends (native/report.c calls
 * it; `end`: how the image ended). Async-signal-safe: counters are
 * read without the lock. */
void hl_write_report(const char *end) {
    if (!*report_path) return;
    static struct hl_out o;
    o.n = 0;
    uint64_t fb = 0, fbb = 0;
    for (int w = 0; w < W_N; w++) fb += atomic_load(&fb_count[w]), fbb += atomic_load(&fb_bytes[w]);
    uint64_t allocations = planned + fb;
    hl_put(&o, "{\n  \"strategy\": ");
    hl_put_str(&o, L.strategy);
    hl_put(&o, ",\n  \"layout\": ");
    hl_put_str(&o, layout_path);
    hl_put(&o, ",\n  \"error\": ");
    if (*error_text) hl_put_str(&o, error_text);
    else hl_put(&o, "null");
    hl_put(&o, ",\n  ");
    hl_key_u(&o, "region_bytes", L.region);
    hl_put(&o, ",\n  ");
    hl_key_u(&o, "region_align", L.align);
    hl_put(&o, ",\n  ");
    hl_key_u(&o, "stack_depth", L.depth);
    hl_put(&o, ",\n  ");
    hl_key_u(&o, "contexts", L.nctx);
    hl_put(&o, ",\n  ");
    hl_key_u(&o, "entries", L.nentries);
    hl_put(&o, ",\n  ");
    hl_key_u(&o, "allocations", allocations);
    hl_put(&o, ",\n  ");
    hl_key_u(&o, "planned", planned);
    hl_put(&o, ",\n  ");
    hl_key_u(&o, "planned_bytes", planned_bytes);
    hl_put(&o, ",\n  ");
    uint64_t why[W_N];
    for (int w = 0; w < W_N; w++) why[w] = atomic_load(&fb_count[w]);
    hl_put_fallback(&o, fb, fbb, why_name, why, W_N);
    hl_put(&o, ",\n  \"fallback_bytes\": {");
    for (int w = 0; w < W_N; w++) {
        if (w) hl_put(&o, ", ");
        hl_key_u(&o, why_name[w], atomic_load(&fb_bytes[w]));
    }
    hl_put(&o, "},\n  \"first_mismatch\": ");
    if (atomic_load(&mismatch_taken)) {
        hl_put(&o, "{\"reason\": ");
        hl_put_str(&o, why_name[first_mismatch.why]);
        hl_put(&o, ", ");
        hl_key_u(&o, "ordinal", first_mismatch.ordinal);
        hl_put(&o, ", ");
        hl_key_u(&o, "context", first_mismatch.context);
        hl_put(&o, ", \"expected_size\": ");
        if (first_mismatch.has_expected) hl_put_u(&o, first_mismatch.expected);
        else hl_put(&o, "null");
        hl_put(&o, ", ");
        hl_key_u(&o, "size", first_mismatch.size);
        hl_put(&o, "}");
    } else {
        hl_put(&o, "null");
    }
    hl_put(&o, ",\n  \"match_rate\": ");
    hl_put_ratio(&o, planned, allocations);
    hl_put(&o, ",\n  ");
    hl_key_u(&o, "frees_region", frees_region);
    hl_put(&o, ",\n  ");
    hl_key_u(&o, "stray_frees", atomic_load(&stray_frees));
    hl_put(&o, ", ");
    hl_key_u(&o, "resyncs", atomic_load(&resyncs));
    hl_put_report_end(&o, end, report_path);
}

/* ---- the layer's hooks ---- */

/* Reads HEAPLAB_APPLY (lines of key=value: layout, report, claim). Only the image that
 * removes the claim file applies the layout: the one the launcher started. Images started later
 * by exec inherit the variable, find no claim, and run with the fallback alone. */
void hl_on_init(void) {
    const char *conf = getenv("HEAPLAB_APPLY");
    static char claim_path[4096];
    if (!conf) return;
    const struct hl_conf_key keys[] = {
        {"layout=", layout_path, sizeof layout_path}, {"report=", report_path, sizeof report_path}, {"claim=", claim_path, sizeof claim_path}};
    hl_read_conf(conf, keys, sizeof keys / sizeof keys[0]);
    if (!*layout_path || !hl_claim_run(claim_path)) return;
    hl_watch_fork();
    if (load_layout() != 0) return;
    hl_own_base = (uintptr_t)region;
    hl_own_len = region ? L.region : 0;
    serving = 1;
    atomic_store(&hl_active, 1);
}

/* A fork child keeps its copy of the region and of every block in it (frees, reallocs and
 * sizes of those still work), but serves nothing new: the layout describes the parent. */
void hl_on_fork_prepare(void) { lock_take(); }
void hl_on_fork_parent(void) { lock_drop(); }
void hl_on_fork_child(void) {
    lock_drop();
    serving = 0;
}
