/* group.c — the grouped allocator behind `heaplab run --groups` (libheaplab_group.so): a client
 * of the native layer in client-served mode (crates/trace/native/interpose.h, HL_CLIENT_SERVES).
 *
 * Owns: reading the runtime table the launcher writes (crates/group/src/run.rs defines it; its
 * numbers come from the generated heaplab_group_table.h), turning the selectors' call sites
 * (module basename, file offset) into addresses, identifying the group of each small allocation
 * from the return addresses on its stack, serving groups by bump allocation from their own
 * chunks, sending everything else to the fallback (the real allocator next in the chain), and
 * the report at the end of the image.
 *
 * Identification (HALO §4.3 without binary rewriting). HALO's BOLT pass sets a bit of a global
 * state vector while control is inside each selector call site; here the same bits are found
 * at allocation time: the stack is walked (native/unwind.c, cached CFI) for up to `walk_depth`
 * frames, each return address is looked up in a small open-addressing table of the selector
 * sites' addresses, and each site met re-checks only the conjunctions naming it; the first group
 * in order whose selector holds wins, so the walk stops as soon as the first group's does. A walk
 * that meets no selector site falls back. The allocation's call site, its first frame in the
 * program's modules (the return address itself, or the first program frame a walk from a
 * library's allocation call meets), may decide alone or bound the walk (the table's call sites,
 * from the profile), and an unprofiled one falls back; each thread keeps what it learnt per call site
 * (the call-site cache) and replays recent walks whose stack words still hold (the walk memo).
 *
 * Allocation (HALO §4.4). One virtual range is reserved at start (PROT_NONE, NORESERVE) and made
 * accessible a block at a time (HUGE_PAGE), so "is this pointer ours" is one range check. Chunks are
 * `chunk` bytes, aligned to their size; each group bumps through its current chunk. A chunk
 * starts with its header (live count, bump top, group: found by masking a pointer) and two
 * bitmaps, one bit per 8-byte granule: `bounds` (an object, or the alignment padding before
 * one, starts here) and `freed` (what starts here is no live object: a freed object, or
 * padding). An allocation sets one bit, its boundary, and a free one. An object runs from its start to
 * the next boundary or the chunk's top, so sizes are exact without per-object headers. A chunk
 * whose live count drops to 0 while it is not current is kept as a spare (up to
 * `spare_chunks`) or its pages are given back (MADV_DONTNEED) and its address space reused.
 * The current chunk holds one count of its own, so "empty and not current" is one decrement
 * reaching 0, whether a free or the switch to a new chunk gets there. Unlike HALO, freed
 * objects go on per-group free lists by size, taken before bumping (see "reuse of freed space").
 *
 * Alignment follows the object's size: 16 when its size rounds (to 8) to a multiple of 16, else 8
 * (HALO: 8 for all). An object that holds whole 16-aligned values (long double, __int128, SSE
 * vectors: sizes multiples of 16) gets their alignment; a 24-byte one packs densely, as HALO's
 * do. GCC assumes 8 on x86-64 (its MALLOC_ABI_ALIGNMENT), but glibc and jemalloc give 16 from
 * 16 bytes up and C17 asks for it, so `align16` (HEAPLAB_GROUP_ALIGN16=1) restores theirs.
 * Threads (HALO was single-threaded): a spin lock per group guards its chunks (bump, bitmaps,
 * live counts, free lists) for allocations and frees alike, one lock operation per call where
 * atomics on each counter and bitmap word would cost several, and none while the process has
 * one thread (group_take); sizes are read without it. Hot counters are per thread.
 * Nothing here calls the program's malloc: memory is mmap'd or static; the report is written
 * with raw calls (native/report.c).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stddef.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/single_threaded.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "heaplab_group_table.h"
#include "interpose.h"
#include "modules.h"
#include "report.h"
#include "unwind.h"

#define GRANULE 8u
#define HEADER 64u /* bytes of a chunk's header */
/* The bytes a request of `bytes` takes: a whole number of granules, at least one. */
static inline uint64_t rounded_size(uint64_t bytes) { return bytes ? (bytes + GRANULE - 1) & ~(uint64_t)(GRANULE - 1) : GRANULE; }
#define MAX_MODULES 8192
/* With HEAPLAB_GROUP_HUGEPAGES=1 the grouped heap asks for transparent huge pages beyond its
 * first HUGE_PAGE bytes (MADV_HUGEPAGE): a dense heap walked across then costs far fewer TLB
 * misses, but so would any allocator's given huge pages (see docs/group.md), and every huge
 * page touched is resident whole (up to a chunk more per group than the report's footprint,
 * which counts the pages bumped into). So that a huge page can back a block on its first touch,
 * the range is made accessible HUGE_PAGE bytes (or a chunk) at a time, never a part of one. */
#define HUGE_PAGE (2ull << 20)
#define RESOLVE_EVERY 0x3fffu /* while sites are unresolved, a thread looks again this often (allocations) */

/* ---- the table (copied out of the file into mmap'd arrays) ---- */
static struct {
    uint64_t walk_depth, max_object, chunk, spare;
    uint32_t nsites, nsel, ngroups, nconj, nterms; /* nsel: the selector sites, first among the sites */
} T;
static uint64_t *site_off, *site_hash; /* file offset and basename hash per site */
static uint32_t *site_decide, *site_depth; /* per site as an allocation call site: what it decides, how deep to walk (0: no call site) */
static uint32_t *site_other;               /* per call site that walks: the group when no selector holds (HLG_FALLBACK: none) */
/* A call site's `otherwise` (a group, or -1: the fallback) is kept as `otherwise` + 1 in the
 * bits of a word from `shift` up: beside the depth (at most HLG_MAX_WALK) in a call site's slot,
 * and beside a call-site cache entry's own fields. */
static inline uint64_t other_bits(int64_t other, int shift) { return (uint64_t)(other + 1) << shift; }
static inline int64_t other_at(uint64_t w, int shift) { return (int64_t)(w >> shift) - 1; }
#define CALL_DEPTH(d) ((int)((d) & 0xff))
#define CALL_OTHER(d) other_at((d), 8)
static uint32_t *group_conj;           /* per group: first conjunction, count (pairs) */
static uint32_t *conj_term;            /* per conjunction: first term, count (pairs) */
static uint32_t *terms;                /* site indices */
static uint32_t words;                 /* 64-bit words of a site bitset */
static uint32_t *site_conj_at, *site_conj; /* per site: the conjunctions naming it (from, to) */
static uint32_t *conj_group;           /* per conjunction: its group */
static uint64_t *conj_mask;            /* per conjunction: its sites as a bitset when all are below 64, else 0 */
static int narrow;                     /* at most 64 sites: sites and conjunctions are masks of one word */
static struct flat { uint64_t mask; uint32_t group; } *flat; /* with `narrow`: the conjunctions in group order */
static uint32_t nflat;
static uint32_t always;                /* the first group with an empty conjunction (ngroups: none) */

/* ---- address tables: return address -> site, open addressing, insert-only (under
 * resolve_lock), read lock-free; kept at most half full so that probes stay short ---- */
struct slot {
    _Atomic uint64_t addr; /* 0: empty */
    uint32_t site;         /* the site at addr (call_sites: what it decides, its site_decide) */
    uint32_t depth;        /* call_sites: how deep to walk from it and where what no selector picks goes (CALL_DEPTH, CALL_OTHER) */
};
struct addr_table {
    struct slot *slot;
    uint64_t mask, used;
    int shift;
};
/* The selector sites' addresses; the allocation call sites' (and below, the code mappings of the
 * program's modules, those holding any site of the table: the first frame of a stack in them is
 * the context's innermost call site, and one that is no call site is an allocation call the
 * profile never saw: MAX_PROG_RANGES at most; beyond, walks do not look for the first program
 * frame and go to their depth). prog_lo and prog_hi bound them all (where walks looking for the
 * first program frame pause). */
static struct addr_table sel_sites, call_sites;
#define MAX_PROG_RANGES 16
static struct { _Atomic uint64_t lo, hi; } prog_range[MAX_PROG_RANGES];
static _Atomic uint32_t nprog_ranges;
static _Atomic uint64_t prog_lo = UINT64_MAX, prog_hi;
static int prog_ranges_full;
static int have_calls; /* the table names call sites */
static _Atomic uint64_t addr_lo = UINT64_MAX, addr_hi;
static _Atomic uint64_t first_lo = UINT64_MAX, first_hi; /* the same for the first group's sites */
static unsigned char *site_first;      /* per site: named by the first group's selector */
static unsigned char *site_found;
static _Atomic uint32_t unresolved;
static _Atomic uint32_t site_gen;              /* bumped as site addresses are added (the walk memo's validity) */
static atomic_flag resolve_lock = ATOMIC_FLAG_INIT;
static struct hl_module *modules;
static __thread uint32_t tick __attribute__((tls_model("initial-exec")));
/* Per thread: whether its walks pause at first-group sites (identify()), judged over PACE_WALKS
 * walks by the frames that stopping early saved against the pauses it took, and looked at again
 * after PACE_OFF_WALKS walks without pausing. */
#define PACE_WALKS 4096u
#define PACE_OFF_WALKS 65536u
static __thread struct { uint32_t walks, pauses, saved, off; } pace __attribute__((tls_model("initial-exec")));

/* ---- chunks ---- */
struct chunk {
    int64_t refs;          /* live objects, + 1 while it is its group's current chunk */
    _Atomic uint64_t top;  /* bump offset */
    _Atomic uint32_t group;
    uint32_t zeroed;       /* never handed out since its pages were last zero */
    uint64_t high;         /* the highest top since it was taken, rounded up to a page: its pages up to there are resident */
};
static unsigned char *range;
static uint64_t range_len, chunks_max, bitmap_bytes;
static int chunk_shift;                 /* log2 of the chunk size */
static _Atomic uint64_t carved;         /* chunks handed out fresh so far */
static uint64_t accessible;             /* bytes of the range made accessible so far (under chunk_lock) */
static uint32_t *returned, *spares;     /* stacks of chunk indices (under chunk_lock) */
static uint64_t nreturned, nspare;
static atomic_flag chunk_lock = ATOMIC_FLAG_INIT;

/* A group: its lock guards its current chunk and every chunk it holds objects in (their refs,
 * bitmaps and tops), and its counters. */
struct group_state {
    atomic_flag lock;
    struct chunk *cur;
    uint64_t count, bytes; /* grouped allocations and their requested bytes */
    uint64_t frees, live;  /* frees, and the bytes of its live objects */
    uint64_t reused;       /* allocations served from its free lists */
} __attribute__((aligned(64)));
static struct group_state *groups;

/* ---- counters (the report) ---- */
enum why { W_SIZE, W_ALIGN, W_CONTEXT, W_EXHAUSTED, W_N };
static const char *const why_name[W_N] = {"too_big", "aligned", "ungrouped", "exhausted"};
/* Counters of the hot paths are per thread (a shared counter's cache line would bounce between
 * threads on every allocation): each thread takes a block of its own on first use; the report
 * sums them. Threads beyond MAX_THREAD_STATS share the last block, with atomic adds. Walks are
 * not counted: every identification ends in a group's allocation or a fallback counted as
 * ungrouped or exhausted, so the report derives them; `stepped` counts the frames walks read
 * beyond their first (the allocation's own return address), which most allocations never do. */
struct thread_stats { uint64_t stepped, replayed, fb_count[W_N], fb_bytes[W_N]; };
#define MAX_THREAD_STATS 4096
static struct thread_stats *thread_stats;
static _Atomic uint32_t thread_stats_used;
static __thread struct thread_stats *my_stats __attribute__((tls_model("initial-exec")));
static __thread struct thread_stats *my_own __attribute__((tls_model("initial-exec"))); /* my_stats when not shared, else NULL */
static _Atomic uint64_t stray_frees;
static uint64_t chunks_fresh, chunks_reused, chunks_returned; /* under chunk_lock */
/* What a group's bump pointer entering a new page reads and writes (footprint, grow, note_peak,
 * the chunk's end), on one cache line: that path runs once per page, long enough after its last
 * run for the program to have evicted what it touched, so every line it reads costs a miss a
 * page. `resident` is the grouped heap's footprint: the pages bumped into in chunks not yet
 * emptied (spares excluded); `peak` its highest, with the live bytes then. The constants are
 * copies set at start. */
static struct {
    uint64_t page, chunk, data_start; /* hl_page_size, T.chunk, a chunk's first object's offset */
    _Atomic uint64_t resident, peak, live_at_peak;
    uint32_t ngroups; /* T.ngroups */
    atomic_flag peak_lock;
} __attribute__((aligned(64))) growth = {.peak_lock = ATOMIC_FLAG_INIT};
_Static_assert(sizeof growth == 64, "the page-entering path's state is one cache line");

/* ---- configuration ---- */
static int serving;
static char table_path[4096], report_path[4096], groups_path[4096], error_text[512];

static inline void spin_take(atomic_flag *l) {
    while (atomic_flag_test_and_set_explicit(l, memory_order_acquire)) sched_yield();
}
static inline void spin_drop(atomic_flag *l) { atomic_flag_clear_explicit(l, memory_order_release); }

/* A group's lock, taken only once the process may have more than one thread: glibc clears
 * __libc_single_threaded before it starts a second thread, and while it is set no other thread
 * can be inside a group's section (the one thread is in it, not creating threads). Saves the
 * two atomic exchanges of a malloc/free pair in single-threaded programs. Returns whether it
 * was taken, for group_drop. */
static inline int group_take(atomic_flag *l) {
    if (__libc_single_threaded) return 0;
    spin_take(l);
    return 1;
}
static inline void group_drop(atomic_flag *l, int took) {
    if (took) spin_drop(l);
}

static __attribute__((noinline)) struct thread_stats *stats_first(void) {
    uint32_t i = atomic_fetch_add(&thread_stats_used, 1);
    int shared = i >= MAX_THREAD_STATS - 1;
    my_stats = &thread_stats[shared ? MAX_THREAD_STATS - 1 : i];
    my_own = shared ? NULL : my_stats;
    return my_stats;
}
static inline __attribute__((always_inline)) struct thread_stats *stats(void) {
    struct thread_stats *st = my_stats;
    return HL_LIKELY(st) ? st : stats_first();
}
/* Adds v to the counter at byte `at` of the thread's block: one thread-local load and a plain
 * add once the thread has a block of its own; an atomic add in the shared last block. */
static __attribute__((noinline)) void count_slow(size_t at, uint64_t v) {
    uint64_t *c = (uint64_t *)((unsigned char *)stats() + at);
    if (my_own) *c += v;
    else atomic_fetch_add_explicit((_Atomic uint64_t *)c, v, memory_order_relaxed);
}
static inline __attribute__((always_inline)) void count(size_t at, uint64_t v) {
    struct thread_stats *o = my_own;
    if (HL_LIKELY(o)) *(uint64_t *)((unsigned char *)o + at) += v;
    else count_slow(at, v);
}

/* ---- resolving sites to addresses ---- */

static void *table_map(uint64_t bytes);

/* A table of at least `n` slots (a power of two); 0 when it cannot be mapped. */
static int table_init(struct addr_table *t, uint64_t n) {
    uint64_t size = 64;
    while (size < n) size <<= 1;
    t->slot = table_map(size * sizeof *t->slot);
    t->mask = size - 1;
    t->shift = 64 - __builtin_ctzll(size);
    return t->slot != NULL;
}

/* Adds a -> site; 1 when added, 0 when a is there already or the table is half full (the
 * site then stays unresolved there). */
static int table_insert(struct addr_table *t, uint64_t a, uint32_t site, uint32_t depth) {
    if (t->used * 2 >= t->mask + 1) return 0;
    for (uint64_t i = (a * 0x9E3779B97F4A7C15ull) >> t->shift;; i = (i + 1) & t->mask) {
        uint64_t k = atomic_load_explicit(&t->slot[i].addr, memory_order_relaxed);
        if (k == a) return 0;
        if (k == 0) {
            t->slot[i].site = site;
            t->slot[i].depth = depth;
            atomic_store_explicit(&t->slot[i].addr, a, memory_order_release);
            t->used++;
            return 1;
        }
    }
}

/* The slot of return address a, or NULL. */
static inline const struct slot *table_slot(const struct addr_table *t, uint64_t a) {
    for (uint64_t i = (a * 0x9E3779B97F4A7C15ull) >> t->shift;; i = (i + 1) & t->mask) {
        uint64_t k = atomic_load_explicit(&t->slot[i].addr, memory_order_acquire);
        if (k == a) return &t->slot[i];
        if (k == 0) return NULL;
    }
}
/* The site at return address a, or -1. */
static inline int64_t table_find(const struct addr_table *t, uint64_t a) {
    const struct slot *e = table_slot(t, a);
    return e ? (int64_t)e->site : -1;
}

static void insert_addr(uint64_t a, uint32_t site) {
    if (table_insert(&sel_sites, a, site, 0)) atomic_fetch_add_explicit(&site_gen, 1, memory_order_release); /* kept walks saw sites without it */
    if (a < atomic_load(&addr_lo)) atomic_store(&addr_lo, a);
    if (a > atomic_load(&addr_hi)) atomic_store(&addr_hi, a);
    if (site_first[site]) {
        if (a < atomic_load(&first_lo)) atomic_store(&first_lo, a);
        if (a > atomic_load(&first_hi)) atomic_store(&first_hi, a);
    }
}

/* Adds call site `site` at address a. Its slot holds what identify() needs of it. */
static void insert_call(uint64_t a, uint32_t site) {
    /* a call site can bound the walk depth, so kept walks made without it are stale too */
    int64_t other = site_other[site] == HLG_FALLBACK ? -1 : (int64_t)site_other[site];
    if (table_insert(&call_sites, a, site_decide[site], site_depth[site] | (uint32_t)other_bits(other, 8))) atomic_fetch_add_explicit(&site_gen, 1, memory_order_release);
}

/* Adds module mapping m, which holds a site, to the program's modules (once). Kept walks made
 * without it may have missed their first program frame: stale. */
static void add_program_module(const struct hl_module *m) {
    uint32_t n = atomic_load_explicit(&nprog_ranges, memory_order_relaxed);
    for (uint32_t r = 0; r < n; r++)
        if (prog_range[r].lo == m->lo) return;
    if (prog_ranges_full) return;
    if (n == MAX_PROG_RANGES) {
        prog_ranges_full = 1;
        atomic_store_explicit(&nprog_ranges, 0, memory_order_release); /* then walks go to their depth */
    } else {
        atomic_store_explicit(&prog_range[n].lo, m->lo, memory_order_relaxed);
        atomic_store_explicit(&prog_range[n].hi, m->hi, memory_order_relaxed);
        if (m->lo < atomic_load(&prog_lo)) atomic_store(&prog_lo, m->lo);
        if (m->hi > atomic_load(&prog_hi)) atomic_store(&prog_hi, m->hi);
        atomic_store_explicit(&nprog_ranges, n + 1, memory_order_release);
    }
    atomic_fetch_add_explicit(&site_gen, 1, memory_order_release);
}

/* Finds each site in the executable mappings now loaded (a site in a library loaded later is
 * found by a later call). At start-up (`loaded`) the dynamic loader's list and the main
 * thread's stack bounds serve, without reading /proc/self/maps (80 µs of every run); a later
 * call, made only while sites are missing, reads the maps, which also list files mapped
 * executable without the loader. Returns at once when another thread is doing it. */
static void resolve_sites(int loaded) {
    if (atomic_flag_test_and_set_explicit(&resolve_lock, memory_order_acquire)) return;
    uintptr_t sp = (uintptr_t)__builtin_frame_address(0), stack_lo = 0, stack_hi = 0;
    size_t n = loaded ? hl_load_modules_at_start(modules, MAX_MODULES, sp, &stack_lo, &stack_hi, site_hash, T.nsites) : hl_load_modules_at(modules, MAX_MODULES, sp, &stack_lo, &stack_hi);
    hl_unwind_set_stack(stack_lo, stack_hi); /* this thread's walks need not read the maps again */
    if (n != (size_t)-1) {
        uint32_t missing = 0;
        for (uint32_t s = 0; s < T.nsites; s++) {
            for (size_t m = 0; m < n; m++)
                if (modules[m].name_hash == site_hash[s] && site_off[s] >= modules[m].off && site_off[s] - modules[m].off < modules[m].hi - modules[m].lo) {
                    if (s < T.nsel) insert_addr(modules[m].lo + site_off[s] - modules[m].off, s);
                    if (site_depth[s]) insert_call(modules[m].lo + site_off[s] - modules[m].off, s);
                    if (have_calls) add_program_module(&modules[m]);
                    site_found[s] = 1;
                }
            missing += !site_found[s];
        }
        atomic_store(&unresolved, missing);
    }
    atomic_flag_clear_explicit(&resolve_lock, memory_order_release);
}

/* Whether a is in the code of one of the program's modules. */
static inline int in_program(uint64_t a) {
    uint32_t n = atomic_load_explicit(&nprog_ranges, memory_order_acquire);
    for (uint32_t r = 0; r < n; r++) {
        uint64_t lo = atomic_load_explicit(&prog_range[r].lo, memory_order_relaxed);
        if (a - lo < atomic_load_explicit(&prog_range[r].hi, memory_order_relaxed) - lo) return 1;
    }
    return 0;
}

/* What the first program frame `a` of a walk decides (table.rs call_sites): the group, -1 (the
 * fallback: its profiled contexts are in no group, or it is no call site of the profile, an
 * unknown context), or FIRST_WALKS, with *depth lowered to its bound and *other set to where an
 * allocation goes when no selector holds: the selectors decide. */
#define FIRST_WALKS (-5)
static inline int64_t first_frame_decides(uint64_t a, int *depth, int64_t *other) {
    const struct slot *c = table_slot(&call_sites, a);
    if (!c || c->site == HLG_FALLBACK) return -1;
    if (c->site != HLG_WALK) return c->site;
    if (CALL_DEPTH(c->depth) < *depth) *depth = CALL_DEPTH(c->depth);
    *other = CALL_OTHER(c->depth);
    return FIRST_WALKS;
}

/* For a walk looking for its first program frame (*seek): whether frame a is that frame and
 * decides (*decided, see first_frame_decides); meeting it ends the looking (*seek = 0) and may
 * lower *depth and set *other. */
static inline int meets_program(uint64_t a, int *seek, int *depth, int64_t *decided, int64_t *other) {
    if (!*seek || !in_program(a)) return 0;
    *seek = 0;
    *decided = first_frame_decides(a, depth, other);
    return *decided != FIRST_WALKS;
}

static inline __attribute__((always_inline)) int64_t site_at(uint64_t a) { return table_find(&sel_sites, a); }

/* ---- identification ---- */

/* Marks site s present and returns the first group (in the file's order) whose selector holds
 * on the sites marked so far, given `best`, the answer before it: only the conjunctions naming s
 * can have become true. A site met again (recursion) changes nothing. */
static inline uint32_t mark_site(uint32_t s, uint64_t *present, uint32_t best) {
    uint64_t bit = 1ull << (s & 63);
    if (present[s >> 6] & bit) return best;
    present[s >> 6] |= bit;
    for (uint32_t i = site_conj_at[s], e = site_conj_at[s + 1]; i < e; i++) {
        uint32_t c = site_conj[i];
        if (conj_group[c] >= best) continue;
        if (conj_mask[c]) { /* all its sites among the first 64: one test */
            if ((present[0] & conj_mask[c]) == conj_mask[c]) best = conj_group[c];
            continue;
        }
        uint32_t t = conj_term[2 * c], te = t + conj_term[2 * c + 1];
        while (t < te && (present[terms[t] >> 6] >> (terms[t] & 63) & 1)) t++;
        if (t == te) best = conj_group[c];
    }
    return best;
}

/* With at most 64 sites (`narrow`: every conjunction a mask), the first group whose selector
 * holds for `present` among groups [0, upto), else `upto`: a mask test per conjunction, cheaper
 * than re-checking conjunctions as each site is met. */
static inline uint32_t first_holding_scan(uint64_t present, uint32_t upto) {
    for (uint32_t i = 0; i < nflat && flat[i].group < upto; i++)
        if ((present & flat[i].mask) == flat[i].mask) return flat[i].group;
    return upto;
}
/* The same, one load: with `narrow` and at most ANSWER_SITES selector sites, `answer` holds
 * first_holding_scan(present, ngroups) for every set of sites present (what a few hot
 * allocation sites' walks ask twice each). */
#define ANSWER_SITES 10u
static uint32_t *answer;
static inline uint32_t first_holding(uint64_t present, uint32_t upto) {
    if (answer) {
        uint32_t a = answer[present];
        return a < upto ? a : upto;
    }
    return first_holding_scan(present, upto);
}

/* Looks up the site at return address a (when a is within [lo, lo + span], the sites' range)
 * and marks it present: with `narrow` its bit alone (the answer is computed from the bits when
 * needed), otherwise through mark_site, which keeps `best`. Returns the site, or -1. */
static inline __attribute__((always_inline)) int64_t see_frame(uint64_t a, uint64_t lo, uint64_t span, uint64_t *present, uint32_t *best, int *any) {
    int64_t s = a - lo <= span ? site_at(a) : -1;
    if (s >= 0) {
        *any = 1;
        if (narrow) present[0] |= 1ull << s;
        else *best = mark_site((uint32_t)s, present, *best);
    }
    return s;
}

/* ---- the walk memo ----
 * A walk is a function of where it starts (return address, stack pointer, rbp) and of the stack
 * words it reads that decide its frames (unwind.h, hl_walk_more_traced; see BP_CHECKED): each
 * thread keeps its last walks, MEMO_SLOTS of them hashed by their start, with those words, its
 * sites and the answer. A walk that starts where a kept one did reads those words again (a load
 * and a compare per frame instead of a rule look-up and a step): when all are unchanged the
 * frames, and so the answer, are the kept ones; otherwise it resumes stepping from the last frame
 * that still holds. The answer is a fresh walk's either way; site addresses found later (a
 * library loaded) make every kept walk stale (`site_gen`). Keeping walks costs stores at every
 * frame and cache lines (a set's headers, from the way replayed last, and the kept words), which
 * pays only where stacks repeat (a loop allocating from one place): a thread that replayed whole
 * fewer than one walk in MEMO_PAYS over MEMO_JUDGE walks stops keeping them for PACE_OFF_WALKS
 * walks. HEAPLAB_GROUP_MEMO=0 turns it off (for comparing). */
#define MEMO_SLOTS 256u
#define MEMO_WAYS 4u
#define MEMO_SETS (MEMO_SLOTS / MEMO_WAYS)
_Static_assert((MEMO_SETS & (MEMO_SETS - 1)) == 0, "memo sets are picked by the hash's top bits");
#define MEMO_PAYS 2u /* at least one walk in MEMO_PAYS replayed whole */
#define MEMO_JUDGE 1024u /* walks kept while judging */
struct memo {
    uintptr_t ret, sp, bp; /* the start; ret 0: empty */
    uintptr_t zero_at;     /* the walk ended on a zero return address read there (else 0) */
    uintptr_t top;         /* above the highest stack word read */
    uint32_t n, gen;       /* frames (pc[0] = ret); site generation */
    uint32_t by_bp;        /* a step used the start's rbp (so it is part of the key) */
    int32_t group;         /* the answer */
    uint32_t next;         /* in a set's first way: whose turn it is to be replaced among equals */
    uint32_t last;         /* in a set's first way: the way replayed last, looked at first */
};
static uint64_t memo_stride;     /* bytes per kept walk: the header, then check, pc, tr, seen and site arrays of walk_depth each */
static unsigned char *memo_area; /* MEMO_SLOTS walks per thread, by thread stats block */
static int memo_on;
static __thread struct memo *my_memo __attribute__((tls_model("initial-exec")));
static __thread struct { uint32_t walks, hits, off; } memo_pace __attribute__((tls_model("initial-exec")));
/* What a replay reads of each frame, next to the header: where its return address lies (| 1 when
 * its restored rbp is checked too, see BP_CHECKED) and the return address. */
struct memo_check { uintptr_t at, pc; };
static inline struct memo_check *memo_chk(struct memo *e) { return (struct memo_check *)(e + 1); }
static inline void **memo_pc(struct memo *e) { return (void **)(memo_chk(e) + T.walk_depth); }
static inline struct hl_walk_trace *memo_tr(struct memo *e) { return (struct hl_walk_trace *)(memo_pc(e) + T.walk_depth); }
static inline uint64_t *memo_seen(struct memo *e) { return (uint64_t *)(memo_tr(e) + T.walk_depth); }
static inline int32_t *memo_site(struct memo *e) { return (int32_t *)(memo_seen(e) + T.walk_depth); }

/* In a kept walk's trace, with from_bp: the rbp this step restored is used by a later step
 * (from_bp), so its saved word is part of the key; rbp restored and never used (rbp a plain
 * register in code without frame pointers: its saved value changes from call to call) is not. */
#define BP_CHECKED 2

/* How many of kept walk e's frames still hold for a walk starting at (ret, sp, bp) with the
 * stack's top at `hi`: 0 when it started elsewhere; e->n + 1 when all do and it ended where e
 * did, so that e's answer is this walk's. */
static inline __attribute__((always_inline)) int memo_holds(struct memo *e, void *ret, uintptr_t sp, uintptr_t bp, uint32_t gen, uintptr_t hi) {
    if (e->ret != (uintptr_t)ret || e->sp != sp || (e->by_bp && e->bp != bp) || e->gen != gen || e->top > hi) return 0;
    const struct memo_check *chk = memo_chk(e);
    int k = 1, n = (int)e->n;
    for (; k < n; k++) {
        uintptr_t at = chk[k].at;
        if (*(const uintptr_t *)(at & ~(uintptr_t)1) != chk[k].pc) break;
        if (HL_UNLIKELY(at & 1) && *(const uintptr_t *)memo_tr(e)[k].bp_at != memo_tr(e)[k].bp) break;
    }
    return k == n && (!e->zero_at || !*(const uintptr_t *)e->zero_at) ? n + 1 : k;
}

/* The group of an allocation made from `ret` (-1: no selector holds, or the walk met no
 * selector site). With `keep` (a constant: two copies are made), `e` is the thread's memo slot
 * for this start: replayed when it still holds, rewritten otherwise. The selectors are evaluated
 * as the walk meets their sites, and the walk stops as soon as the first group's selector
 * holds: no later frame can change that answer (the first group in the file's order wins), so
 * allocations of the most accessed group cost only the frames up to their deciding sites.
 * Otherwise it goes on to the walk depth. */
/* A walk of `depth` frames from `ret` by the fallback unwinder, its sites seen (see_frame) and,
 * with `seek`, its first program frame's decision put in *decided (meets_program); returns the
 * frames that count. Out of line: its array of frames stays off the stack
 * of other walks. */
static __attribute__((noinline)) int walk_unwound(void *ret, int depth, int seek, int64_t *decided, int64_t *other, uint64_t lo, uint64_t span, uint64_t *present, uint32_t *best, int *any) {
    void *pcs[HLG_MAX_WALK];
    pcs[0] = ret;
    int n = 1 + hl_unwind_above(ret, hl_self.frame, pcs + 1, depth - 1), i = 0;
    for (; i < n && i < depth; i++) {
        uint64_t a = (uint64_t)(uintptr_t)pcs[i];
        if (meets_program(a, &seek, &depth, decided, other)) return i + 1;
        see_frame(a, lo, span, present, best, any); /* the first program frame's too, beyond the depth it set */
    }
    return i;
}

static inline __attribute__((always_inline)) int64_t identify_in(void *ret, struct memo *e, const int keep, int depth, int seek, int64_t other) {
    void *own[2]; /* without the memo: the return address and its caller's */
    void **pcs = keep ? memo_pc(e) : own;
    struct hl_walk_trace *tr = keep ? memo_tr(e) : NULL;
    int32_t *site = keep ? memo_site(e) : NULL;
    uint64_t present[HLG_MAX_SITES / 64];
    if (narrow) present[0] = 0;
    else
        for (uint32_t w = 0; w < words; w++) present[w] = 0;
    uint64_t lo = atomic_load_explicit(&addr_lo, memory_order_relaxed), span = atomic_load_explicit(&addr_hi, memory_order_relaxed) - lo;
    int n = 1, known = 0, any = 0;
    uint32_t best = always, gen = keep ? atomic_load_explicit(&site_gen, memory_order_relaxed) : 0;
    /* With `seek` (the allocator called from a library), the walk first looks for its first
     * program frame, pausing at every frame in the program's range: that frame is the context's
     * innermost call site, which decides alone where its profiled contexts agree (decided), and
     * otherwise bounds the walk's depth. */
    int64_t decided = FIRST_WALKS;
    const int depth0 = depth, seek0 = seek; /* before the first program frame is met: a walk started over starts from them */
    const int64_t other0 = other;           /* likewise (a walk that seeks learns it from that frame) */
    uint64_t plo = atomic_load_explicit(&prog_lo, memory_order_relaxed), pspan = atomic_load_explicit(&prog_hi, memory_order_relaxed) - 1 - plo;
    struct hl_walk w;
    /* One frame to step and no memo: one call for it (a walk in steps costs two, and its state in
     * memory); pausing could not end it sooner. */
    const int one = !keep && depth == 2 && !seek;
    int stepwise = depth > 1 && !one && hl_walk_start(&w, ret, hl_self.frame) == 0;
    uintptr_t sp0 = stepwise ? w.sp : 0, bp0 = stepwise ? w.bp : 0, top = 0;
    if (keep) {
        /* e is a set of MEMO_WAYS ways: a hit in any answers; otherwise the way that holds the
         * fewest frames (an empty one holds none; among equals, the next in turn) is rewritten,
         * resuming from what it still holds. */
        struct memo *set = e;
        int kv = -1, way = 0;
        for (uint32_t j = 0; j < MEMO_WAYS; j++) {
            uint32_t i = (set->last + j) % MEMO_WAYS;
            struct memo *x = (struct memo *)((unsigned char *)set + i * memo_stride);
            int k = stepwise ? memo_holds(x, ret, sp0, bp0, gen, w.hi) : 0;
            if (k > (int)x->n) {
                set->last = i;
                memo_pace.walks++;
                memo_pace.hits++;
                count(offsetof(struct thread_stats, stepped), x->n - 1);
                count(offsetof(struct thread_stats, replayed), 1);
                return x->group;
            }
            if (k < kv || kv < 0 || (k == kv && i == set->next)) kv = k, way = (int)i;
        }
        set->next = (set->next + 1) % MEMO_WAYS;
        e = (struct memo *)((unsigned char *)set + (uint64_t)way * memo_stride);
        int k0 = kv;
        pcs = memo_pc(e), tr = memo_tr(e), site = memo_site(e);
        known = k0;
        if (known > 1) { /* resume from the last frame that holds, with rbp as it is now unless a frame restored it */
            int restored = 0;
            for (int i = 1; i < known; i++)
                if (tr[i].bp_at) restored = i;
            w.a = (uint64_t)(uintptr_t)pcs[known - 1] - 1;
            w.sp = tr[known - 1].ret_at + 8;
            w.bp = restored ? *(const uintptr_t *)tr[restored].bp_at : bp0; /* read again: it may not have been checked */
            top = e->top - 8; /* at least as high as what the frames kept read */
        }
        e->ret = 0; /* rewritten below */
        if (++memo_pace.walks >= MEMO_JUDGE) {
            if (memo_pace.hits * MEMO_PAYS < MEMO_JUDGE) memo_pace.off = PACE_OFF_WALKS;
            memo_pace.walks = memo_pace.hits = 0;
        }
    }
    pcs[0] = ret;
    for (int i = 1; seek && i < known; i++) {
        int decides = meets_program((uint64_t)(uintptr_t)pcs[i], &seek, &depth, &decided, &other);
        if (!seek) { /* the first program frame is among those kept: what still counts is up to
                      * it, and to the depth it set when it decides nothing */
            int keep_to = decides || depth < i + 1 ? i + 1 : depth;
            if (known > keep_to) known = keep_to;
        }
    }
    if (known) {
        n = known;
        if (narrow) present[0] = memo_seen(e)[known - 1], any = present[0] != 0; /* every site has a bit */
        for (int i = 0; !narrow && i < known; i++)
            if (site[i] >= 0) any = 1, best = mark_site((uint32_t)site[i], present, best);
        if (narrow && any) best = first_holding(present[0], 1) == 0 ? 0 : always;
    } else {
        int64_t s = see_frame((uint64_t)(uintptr_t)ret, lo, span, present, &best, &any);
        if (narrow && s >= 0) best = first_holding(present[0], 1) == 0 ? 0 : always;
        if (keep) site[0] = (int32_t)s, memo_seen(e)[0] = present[0];
    }
    if (one && best != 0 && hl_unwind_caller_inline(ret, hl_self.frame, pcs + 1) == 1) {
        n = 2;
        see_frame((uint64_t)(uintptr_t)pcs[1], lo, span, present, &best, &any);
    }
    if (decided != FIRST_WALKS) {
    } else if (!keep && best != 0 && stepwise) {
        /* Without a memo only the frames in the sites' range matter: the walk stops at each, and
         * for good once the first group's selector holds (no later frame changes that answer). */
        while (n < depth) {
            void *hit = NULL;
            int k = hl_walk_to(&w, depth - n, seek ? plo : lo, seek ? pspan : span, &hit);
            if (k < 0) stepwise = 0;
            if (k <= 0) break;
            n += k;
            if (!hit) break; /* the stack ended, or the depth was reached */
            if (meets_program((uint64_t)(uintptr_t)hit, &seek, &depth, &decided, &other)) break;
            see_frame((uint64_t)(uintptr_t)hit, lo, span, present, &best, &any);
            if (narrow && any && first_holding(present[0], 1) == 0) best = 0;
            if (best == 0) break;
        }
    } else if (best != 0 && stepwise) {
        /* The walk pauses only at frames that may be first-group sites: only they can end it.
         * Pausing costs a call per pause; a thread whose pauses seldom end its walks stops
         * pausing for a while (the answer is the same either way, only the frames walked differ). */
        uint64_t flo = atomic_load_explicit(&first_lo, memory_order_relaxed), fspan = atomic_load_explicit(&first_hi, memory_order_relaxed) - flo;
        if (pace.off) flo = 1, fspan = 0; /* no return address is 1 */
        while (n < depth) {
            /* looking for the first program frame, the walk pauses at each frame in their range */
            const int seeking = seek;
            uint64_t wlo = seeking ? plo : flo, wspan = seeking ? pspan : fspan;
            int k = keep ? hl_walk_more_traced(&w, pcs + n, tr + n, depth - n, wlo, wspan) : hl_walk_more(&w, pcs + n, depth - n, wlo, wspan);
            if (k < 0) stepwise = 0;
            if (k <= 0) break;
            for (int i = n; i < n + k; i++) {
                if (meets_program((uint64_t)(uintptr_t)pcs[i], &seek, &depth, &decided, &other)) k = i + 1 - n;
                int64_t s = see_frame((uint64_t)(uintptr_t)pcs[i], lo, span, present, &best, &any);
                if (keep) {
                    site[i] = (int32_t)s, memo_seen(e)[i] = present[0];
                    top = tr[i].ret_at > top ? tr[i].ret_at : top, top = tr[i].bp_at > top ? tr[i].bp_at : top;
                }
            }
            n += k; /* with the first program frame, even beyond the depth it lowered: a replay checks it */
            if (decided != FIRST_WALKS) break;
            if (narrow && any && first_holding(present[0], 1) == 0) best = 0;
            if (!seeking) pace.pauses++;
            if (best == 0) {
                if (!seeking && depth > n) pace.saved += (uint32_t)(depth - n);
                break;
            }
        }
        if (++pace.walks == (pace.off ? PACE_OFF_WALKS : PACE_WALKS)) {
            pace.off = !pace.off && pace.saved * 2 < pace.pauses; /* a pause costs about half a frame's step */
            pace.walks = pace.pauses = pace.saved = 0;
        }
    }
    if (depth0 > 1 && !stepwise && !one) { /* the walk needs the fallback unwinder: all of it at once, not kept */
        for (uint32_t w = 0; w < words; w++) present[w] = 0;
        any = 0, best = always, decided = FIRST_WALKS, other = other0;
        n = walk_unwound(ret, depth0, seek0, &decided, &other, lo, span, present, &best, &any);
    }
    if (narrow && any && best != 0) best = first_holding(present[0], T.ngroups);
    int64_t g = decided != FIRST_WALKS ? decided : any && best < T.ngroups ? (int64_t)best : other;
    if (keep && stepwise) {
        e->sp = sp0, e->bp = bp0, e->gen = gen, e->n = (uint32_t)n, e->group = g;
        int ended = w.ended && decided == FIRST_WALKS; /* a walk its first program frame ended paused there */
        e->zero_at = ended ? w.zero_at : 0;
        /* Steps 1..n-1, and the one that ended the walk, backwards: which restored rbp does a
         * later step use (BP_CHECKED), and does one use the start's (by_bp)? */
        int last = n < depth && ended ? n : n - 1, need = 0;
        uintptr_t odd = 0; /* a return address read off a word boundary (bad CFI): not kept, its bit 0 being the flag */
        struct memo_check *chk = memo_chk(e);
        for (int i = last; i >= 1; i--) {
            int from_bp = tr[i].from_bp & 1;
            tr[i].from_bp = from_bp | (tr[i].bp_at && need ? BP_CHECKED : 0);
            need = from_bp || (need && !tr[i].bp_at);
            if (i < n) chk[i] = (struct memo_check){tr[i].ret_at | (tr[i].from_bp & BP_CHECKED ? 1 : 0), (uintptr_t)pcs[i]}, odd |= tr[i].ret_at & 7;
        }
        e->by_bp = (uint32_t)need;
        if (e->zero_at > top) top = e->zero_at;
        e->top = top + 8;
        e->ret = odd ? 0 : (uintptr_t)ret;
    }
    count(offsetof(struct thread_stats, stepped), (uint64_t)n - 1);
    return g;
}

/* The thread's memo slot for a walk starting at `ret` above the interposer's frame; NULL when
 * this thread keeps no walks (off, pausing, or a thread beyond the memo's blocks). */
static inline struct memo *memo_for(void *ret) {
    if (HL_UNLIKELY(!my_memo)) {
        struct thread_stats *st = stats();
        if (!memo_on || !my_own) return NULL; /* a thread in the shared block keeps none */
        my_memo = (struct memo *)(memo_area + (uint64_t)(st - thread_stats) * MEMO_SLOTS * memo_stride);
    }
    if (HL_UNLIKELY(memo_pace.off)) {
        memo_pace.off--;
        return NULL;
    }
    uint64_t h = ((uint64_t)(uintptr_t)ret ^ (uint64_t)(uintptr_t)hl_self.frame >> 4) * 0x9E3779B97F4A7C15ull;
    return (struct memo *)((unsigned char *)my_memo + (h >> (64 - __builtin_ctz(MEMO_SETS))) * MEMO_WAYS * memo_stride);
}

/* identify_in's answer for a walk of at most two frames with `narrow` (sites are bits of one
 * word): the return address's site, then, unless the first group's selector already holds,
 * its caller's (one step, no memo: a step costs less than a replay); `other` when no selector
 * holds. Inline: the common case. */
static inline __attribute__((always_inline)) int64_t identify_near(void *ret, int depth, int64_t other) {
    uint64_t lo = atomic_load_explicit(&addr_lo, memory_order_relaxed), span = atomic_load_explicit(&addr_hi, memory_order_relaxed) - lo;
    uint64_t a = (uint64_t)(uintptr_t)ret, present = 0;
    int64_t s = a - lo <= span ? site_at(a) : -1;
    if (s >= 0) {
        present = 1ull << s;
        if (first_holding(present, 1) == 0) return 0;
    }
    void *pc;
    if (depth == 2 && hl_unwind_caller_inline(ret, hl_self.frame, &pc) == 1) {
        count(offsetof(struct thread_stats, stepped), 1);
        a = (uint64_t)(uintptr_t)pc;
        s = a - lo <= span ? site_at(a) : -1;
        if (s >= 0) present |= 1ull << s;
    }
    if (!present) return other; /* no selector site met */
    uint32_t g = first_holding(present, T.ngroups);
    return g < T.ngroups ? (int64_t)g : other;
}

/* identify_in for other walks, out of line: the memo's and the stepwise
 * walk's state stay out of the allocation's fast path. */
static __attribute__((noinline)) int64_t identify_walk(void *ret, int depth, int seek, int64_t other) {
    /* A walk of one step keeps none: the step costs less than a replay. */
    struct memo *e = depth > 2 && memo_on ? memo_for(ret) : NULL;
    return e ? identify_in(ret, e, 1, depth, seek, other) : identify_in(ret, NULL, 0, depth, seek, other);
}

/* identify_near out of line, for the call-site cache's rare cases. */
static __attribute__((noinline)) int64_t identify_near_out(void *ret, int depth, int64_t other) { return identify_near(ret, depth, other); }

/* The walk of `depth` frames from `ret`, for what the call-site cache does not answer alone;
 * with `seek`, one that looks for its first program frame (identify_fill); `other` when no
 * selector holds (a walk that seeks learns it from its first program frame). */
static int64_t identify_slow(void *ret, int depth, int seek, int64_t other) {
    return depth <= 2 && narrow && !seek ? identify_near_out(ret, depth, other) : identify_walk(ret, depth, seek, other);
}

/* ---- the call-site cache ----
 * What identify() learns from the return address alone is the same at every allocation made
 * from there until sites are resolved anew (site_gen): its call site's decision (one the profile
 * saw decides alone when every context allocating there had one answer, and otherwise bounds the
 * walk; a return address in the program's modules that is no call site of the profile is an
 * unknown context, sent to the fallback), else the walk depth (and whether the walk looks for
 * the first program frame, the return address lying outside the program), the return address's
 * own selector site, and for a walk of one step the unwind rule there. Each thread keeps it per return address
 * (direct-mapped), so that a hit costs a few loads where the look-ups cost two or three hashed
 * probes and calls. Per thread: no atomics and no line shared between threads. */
#define NEAR_BITS 8
enum { NEAR_STEP = -2, NEAR_WALK = -3 };
#define NEAR_SEEKS (1ull << 32) /* in a NEAR_WALK entry's `present`: the walk looks for its first program frame */
/* The call site's `otherwise` sits in bits 40 and up (other_bits) of a NEAR_WALK entry's
 * `present` and a NEAR_STEP entry's `rule`. A rule keeps rbp's offset in bits 40-55, which one
 * step does not read (hl_unwind_step_with): a NEAR_STEP entry keeps only the bits below
 * (near_step_word), or a frame that saved rbp would turn `otherwise` into a group that does not
 * exist. */
#define NEAR_OTHER 40
#define NEAR_LOW ((1ull << NEAR_OTHER) - 1)
static inline uint64_t near_other_bits(int64_t other) { return other_bits(other, NEAR_OTHER); }
static inline int64_t near_other(uint64_t w) { return other_at(w, NEAR_OTHER); }
static inline uint64_t near_step_word(uint64_t rule, int64_t other) { return (rule & NEAR_LOW) | near_other_bits(other); }
struct near {
    uint64_t ret;     /* the return address */
    uint32_t gen;     /* site_gen + 1 when it was filled (0: empty) */
    int32_t what;     /* a group, -1 (the fallback), NEAR_STEP or NEAR_WALK */
    uint64_t present; /* NEAR_STEP: the return address's own site bit; NEAR_WALK: the depth, | NEAR_SEEKS, | the otherwise bits */
    uint64_t rule;    /* NEAR_STEP: the unwind rule at the return address (a plain step), | the otherwise bits */
};
static __thread struct near near_cache[1u << NEAR_BITS] __attribute__((tls_model("initial-exec")));

/* identify_fast's answer when the rest of identify() is needed. */
#define IDENT_REST (-4)

/* A one-step walk from the cache: the caller's site joins the return address's own (`present`)
 * and the selectors decide, as identify_near does (the call site's `otherwise`, kept in `rule`,
 * when none holds); IDENT_REST when the step cannot be made inline. */
static inline __attribute__((always_inline)) int64_t identify_step(void *ret, uint64_t present, uint64_t rule) {
    void *pc;
    int k = hl_unwind_step_with(rule & NEAR_LOW, ret, hl_self.frame, &pc);
    if (HL_UNLIKELY(k < 0)) return IDENT_REST;
    if (k > 0) {
        count(offsetof(struct thread_stats, stepped), 1);
        uint64_t lo = atomic_load_explicit(&addr_lo, memory_order_relaxed), span = atomic_load_explicit(&addr_hi, memory_order_relaxed) - lo;
        uint64_t a = (uint64_t)(uintptr_t)pc;
        int64_t s = a - lo <= span ? site_at(a) : -1;
        if (s >= 0) present |= 1ull << s;
    }
    if (!present) return near_other(rule); /* no selector site met */
    uint32_t g = first_holding(present, T.ngroups);
    return g < T.ngroups ? (int64_t)g : near_other(rule);
}

/* Fills e for `ret` (site generation `gen`, read before the tables) and answers. */
static __attribute__((noinline)) int64_t identify_fill(void *ret, struct near *e, uint32_t gen) {
    int depth = (int)T.walk_depth;
    int32_t what = NEAR_WALK;
    int seek = 0;
    uint64_t a = (uint64_t)(uintptr_t)ret, present = 0, rule = 0;
    int64_t other = -1; /* where the walk sends what no selector picks (a seeking walk learns it) */
    if (have_calls) {
        /* A return address in the program is the context's innermost call site; one elsewhere
         * (a library's allocation call) starts a walk that looks for it. */
        const struct slot *c = table_slot(&call_sites, a);
        int in = !c && in_program(a);
        seek = !c && !in && atomic_load_explicit(&nprog_ranges, memory_order_acquire) != 0; /* the program's modules known */
        uint32_t d = c ? c->site : in ? HLG_FALLBACK : HLG_WALK;
        if (d < HLG_MODULE || d == HLG_FALLBACK) what = d == HLG_FALLBACK ? -1 : (int32_t)d;
        else if (c) depth = CALL_DEPTH(c->depth), other = CALL_OTHER(c->depth);
    }
    if (what == NEAR_WALK && depth <= 2 && narrow && !seek) {
        uint64_t lo = atomic_load_explicit(&addr_lo, memory_order_relaxed), span = atomic_load_explicit(&addr_hi, memory_order_relaxed) - lo;
        int64_t s = a - lo <= span ? site_at(a) : -1;
        present = s >= 0 ? 1ull << s : 0;
        uint32_t g = present ? first_holding(present, T.ngroups) : T.ngroups;
        if (g == 0 || depth < 2) what = g < T.ngroups ? (int32_t)g : (int32_t)other;
        else if (hl_rule_kind(rule = hl_unwind_rule(ret)) == HL_R_STEP) what = NEAR_STEP;
    }
    e->ret = a, e->gen = gen + 1, e->what = what;
    e->present = what == NEAR_WALK ? (uint64_t)depth | (seek ? NEAR_SEEKS : 0) | near_other_bits(other) : present;
    e->rule = what == NEAR_STEP ? near_step_word(rule, other) : rule;
    if (what >= -1) return what;
    return what == NEAR_STEP ? identify_near_out(ret, 2, other) : identify_slow(ret, depth, seek, other);
}

static inline __attribute__((always_inline)) struct near *near_of(uint64_t a) { return &near_cache[(a * 0x9E3779B97F4A7C15ull) >> (64 - NEAR_BITS)]; }

/* identify()'s common case, inline: a hit in the call-site cache that decides, or its one step
 * made inline; IDENT_REST otherwise (sites to resolve, a miss, a longer walk). */
static inline __attribute__((always_inline)) int64_t identify_fast(void *ret) {
    uint64_t a = (uint64_t)(uintptr_t)ret;
    struct near *e = near_of(a);
    uint32_t gen = atomic_load_explicit(&site_gen, memory_order_acquire);
    if (HL_UNLIKELY(atomic_load_explicit(&unresolved, memory_order_relaxed) || e->ret != a || e->gen != gen + 1)) return IDENT_REST;
    if (HL_LIKELY(e->what >= -1)) return e->what;
    return e->what == NEAR_STEP ? identify_step(ret, e->present, e->rule) : IDENT_REST;
}

/* The rest of identify(): sites resolved now and then while some are missing, the cache filled
 * on a miss, the step made out of line, the longer walks. */
static __attribute__((noinline)) int64_t identify_rest(void *ret) {
    if (HL_UNLIKELY(atomic_load_explicit(&unresolved, memory_order_relaxed)) && (++tick & RESOLVE_EVERY) == 0) resolve_sites(0);
    uint64_t a = (uint64_t)(uintptr_t)ret;
    struct near *e = near_of(a);
    uint32_t gen = atomic_load_explicit(&site_gen, memory_order_acquire);
    if (e->ret != a || e->gen != gen + 1) return identify_fill(ret, e, gen);
    if (e->what >= -1) return e->what;
    return e->what == NEAR_STEP ? identify_near_out(ret, 2, near_other(e->rule)) : identify_slow(ret, (int)(uint32_t)e->present, (e->present & NEAR_SEEKS) != 0, near_other(e->present));
}

/* The group of an allocation made from `ret` (-1: none): the call-site cache, then the walk it
 * says. Inlined (as is grouped()) into the serving functions. */
static inline __attribute__((always_inline)) int64_t identify(void *ret) {
    int64_t g = identify_fast(ret);
    return HL_LIKELY(g != IDENT_REST) ? g : identify_rest(ret);
}

/* ---- chunks ---- */

static inline struct chunk *chunk_of(const void *p) { return (struct chunk *)((uintptr_t)p & ~(uintptr_t)(T.chunk - 1)); }
static inline _Atomic uint64_t *bounds_of(struct chunk *c) { return (_Atomic uint64_t *)((unsigned char *)c + HEADER); }
static inline _Atomic uint64_t *freed_of(struct chunk *c) { return (_Atomic uint64_t *)((unsigned char *)c + HEADER + bitmap_bytes); }
/* Bits change only under the chunk's group's lock, so no read-modify-write is needed; readers
 * outside it (sizes) load words whole. */
static inline void bit_set(_Atomic uint64_t *m, uint64_t g, int on) {
    uint64_t w = atomic_load_explicit(&m[g >> 6], memory_order_relaxed), b = 1ull << (g & 63);
    atomic_store_explicit(&m[g >> 6], on ? w | b : w & ~b, memory_order_relaxed);
}
static inline int bit_get(_Atomic uint64_t *m, uint64_t g) { return (int)(atomic_load_explicit(&m[g >> 6], memory_order_relaxed) >> (g & 63) & 1); }
/* Clears both bitmaps below bump top `top`: bits are only ever set from the first object's
 * granule to the top, so that is all a chunk bumped through again needs (word stores: in a
 * chunk that empties after each object, one word each). */
static void clear_bitmaps(struct chunk *c, uint64_t top) {
    _Atomic uint64_t *b = bounds_of(c), *f = freed_of(c);
    for (uint64_t w = growth.data_start / GRANULE / 64, end = (top / GRANULE + 63) / 64; w < end; w++) {
        atomic_store_explicit(&b[w], 0, memory_order_relaxed);
        atomic_store_explicit(&f[w], 0, memory_order_relaxed);
    }
}
/* A chunk's footprint for bump top `top`: the pages from its first object's to the top's. */
static inline uint64_t footprint(uint64_t top) {
    uint64_t pg = growth.page;
    return top > growth.data_start ? ((top + pg - 1) & ~(pg - 1)) - (growth.data_start & ~(pg - 1)) : 0;
}

/* Bytes from the object at `off` to the next boundary or the top. */
static inline uint64_t extent(struct chunk *c, uint64_t off) {
    uint64_t top = atomic_load_explicit(&c->top, memory_order_acquire);
    _Atomic uint64_t *bounds = bounds_of(c);
    uint64_t g = off / GRANULE + 1, end = top / GRANULE;
    while (g < end) {
        uint64_t w = atomic_load_explicit(&bounds[g >> 6], memory_order_relaxed) >> (g & 63);
        if (w) {
            g += (uint64_t)__builtin_ctzll(w);
            break;
        }
        g = (g | 63) + 1;
    }
    return (g < end ? g : end) * GRANULE - off;
}

/* ---- reuse of freed space (free lists) ----
 * With `reuse` (HEAPLAB_GROUP_REUSE=1; off by default, see docs/group.md), a freed object goes on its
 * group's LIFO list for its size, and an allocation takes the newest freed object of its size
 * before bumping: a few long-lived objects no longer pin a chunk full of dead ones while the
 * group bumps on into fresh memory. Requests above 8 bytes then take multiples of 16
 * (REUSE_UNIT), so padding (8 bytes, after an object of 8) only ever follows objects too small
 * to be listed: a listed object's extent never changes, and every start below the top whose
 * freed bit is set and whose extent is above 8 is a listed object (padding and dead 8-byte
 * objects, extent 8, are not listed: freed, they stay dead until their chunk empties, as without
 * the lists). The lists are doubly linked through the freed objects, so a
 * chunk that empties (released, or bumped through again) unlinks its own objects in one pass
 * over its bitmaps. Guarded by the group's lock, as everything else of the group. */
#define REUSE_UNIT 16u
struct free_node { struct free_node *next, *prev; };
static int reuse;
static int align16; /* every object above 8 bytes 16-aligned, as glibc and jemalloc (see the top) */
static const char *huge_pages = "off"; /* asked for and granted ("on"), refused by the kernel, or not asked for */
static int odd8;    /* neither: an object whose size rounds to an odd multiple of 8 is 8-aligned */
static uint64_t nclass;            /* list heads per group: extents 0, 16, ... max_object rounded up */
static struct free_node **free_heads; /* per group, nclass heads */

static inline struct free_node **heads_of(uint32_t g) { return free_heads + (uint64_t)g * nclass; }

static inline void list_push(uint32_t g, void *p, uint64_t ext) {
    struct free_node **h = heads_of(g) + ext / REUSE_UNIT, *n = p;
    n->prev = NULL;
    n->next = *h;
    if (*h) (*h)->prev = n;
    *h = n;
}

static inline void list_unlink(uint32_t g, struct free_node *n, uint64_t ext) {
    if (n->prev) n->prev->next = n->next;
    else heads_of(g)[ext / REUSE_UNIT] = n->next;
    if (n->next) n->next->prev = n->prev;
}

/* Unlinks chunk c's listed objects (every start of more than 8 bytes below the top whose freed
 * bit is set, but the one at `skip`, being freed and never listed) from group g's lists. */
static void unlist_chunk(uint32_t g, struct chunk *c, uint64_t skip) {
    _Atomic uint64_t *b = bounds_of(c), *f = freed_of(c);
    uint64_t top = atomic_load_explicit(&c->top, memory_order_relaxed);
    for (uint64_t w = growth.data_start / GRANULE / 64, end = (top / GRANULE + 63) / 64; w < end; w++) {
        uint64_t dead = atomic_load_explicit(&b[w], memory_order_relaxed) & atomic_load_explicit(&f[w], memory_order_relaxed);
        while (dead) {
            uint64_t off = (w * 64 + (uint64_t)__builtin_ctzll(dead)) * GRANULE;
            dead &= dead - 1;
            uint64_t ext = off != skip ? extent(c, off) : 0;
            if (ext > GRANULE) list_unlink(g, (struct free_node *)((unsigned char *)c + off), ext);
        }
    }
}

/* A chunk to bump through: a spare, a returned one, or a new one. NULL when the range is full. */
static struct chunk *get_chunk(uint32_t g) {
    struct chunk *c = NULL;
    spin_take(&chunk_lock);
    if (nspare) {
        c = (struct chunk *)(range + ((uint64_t)spares[--nspare] << chunk_shift));
        clear_bitmaps(c, atomic_load_explicit(&c->top, memory_order_relaxed));
        c->zeroed = 0;
        chunks_reused++;
    } else if (nreturned) {
        c = (struct chunk *)(range + ((uint64_t)returned[--nreturned] << chunk_shift));
        c->zeroed = 1;
        chunks_reused++;
    } else {
        /* The range is made accessible a block at a time (see HUGE_PAGE), ahead of the chunks. */
        uint64_t k = atomic_load_explicit(&carved, memory_order_relaxed), end = (k + 1) << chunk_shift, block = T.chunk > HUGE_PAGE ? T.chunk : HUGE_PAGE;
        if (k < chunks_max && end > accessible) {
            if (block > range_len - accessible) block = range_len - accessible;
            if (syscall(SYS_mprotect, range + accessible, block, PROT_READ | PROT_WRITE) == 0) accessible += block;
        }
        if (k < chunks_max && end <= accessible) {
            c = (struct chunk *)(range + (k << chunk_shift));
            c->zeroed = 1;
            atomic_store_explicit(&carved, k + 1, memory_order_release);
            chunks_fresh++;
        }
    }
    spin_drop(&chunk_lock);
    if (c) {
        atomic_store_explicit(&c->group, g, memory_order_relaxed);
        c->refs = 1;
        c->high = growth.data_start;
        atomic_store_explicit(&c->top, growth.data_start, memory_order_release);
    }
    return c;
}

/* An empty chunk of group g that is no group's current one: its listed objects unlinked
 * (but `skip`'s, see unlist_chunk), then kept as a spare or its pages given back. Called
 * under its group's lock. */
static void put_chunk(uint32_t g, struct chunk *c, uint64_t skip) {
    if (reuse) unlist_chunk(g, c, skip);
    uint32_t idx = (uint32_t)(((unsigned char *)c - range) >> chunk_shift);
    atomic_store_explicit(&c->group, UINT32_MAX, memory_order_relaxed);
    atomic_fetch_sub_explicit(&growth.resident, footprint(c->high), memory_order_relaxed);
    spin_take(&chunk_lock);
    if (nspare < T.spare) {
        spares[nspare++] = idx;
    } else {
        madvise(c, T.chunk, MADV_DONTNEED); /* zeroes the header and bitmaps too */
        returned[nreturned++] = idx;
        chunks_returned++;
    }
    spin_drop(&chunk_lock);
}

/* The group's current chunk when its last object was freed: bumping starts again at its first
 * object, so that short-lived objects reuse the lines and pages just freed instead of moving on
 * into cold memory (what bump allocation alone does to a context whose objects die young). The
 * pages stay resident (`high` keeps them counted). Called under the group's lock; no live
 * object is left in the chunk for anyone to be reading. */
static void restart(uint32_t g, struct chunk *c, uint64_t skip) {
    if (reuse) unlist_chunk(g, c, skip);
    clear_bitmaps(c, atomic_load_explicit(&c->top, memory_order_relaxed));
    c->zeroed = 0;
    atomic_store_explicit(&c->top, growth.data_start, memory_order_release);
}

/* Records the grouped heap's footprint after it grew to `resident`, with the live bytes then
 * (the groups' counters read without their locks: a moment's view, off by the objects other
 * threads allocate or free meanwhile). Runs once per page the bump pointers enter. */
static void note_peak(uint64_t resident) {
    if (resident <= atomic_load_explicit(&growth.peak, memory_order_relaxed) || atomic_flag_test_and_set_explicit(&growth.peak_lock, memory_order_acquire)) return;
    if (resident > atomic_load_explicit(&growth.peak, memory_order_relaxed)) {
        uint64_t live = 0;
        for (uint32_t g = 0; g < growth.ngroups; g++) live += __atomic_load_n(&groups[g].live, __ATOMIC_RELAXED);
        atomic_store_explicit(&growth.peak, resident, memory_order_relaxed);
        atomic_store_explicit(&growth.live_at_peak, live, memory_order_relaxed);
    }
    atomic_flag_clear_explicit(&growth.peak_lock, memory_order_release);
}

/* Group g's next chunk, when its current one cannot hold the next object (under its lock):
 * the old one put back if that leaves it empty. NULL when no chunk can be had. */
static __attribute__((noinline)) struct chunk *next_chunk(uint32_t g, struct group_state *G) {
    struct chunk *n = get_chunk(g), *c = G->cur;
    if (!n) return NULL;
    if (c && --c->refs == 0) put_chunk(g, c, UINT64_MAX);
    G->cur = n;
    return n;
}

/* Chunk c was bumped past its high-water mark to `end` (under its group's lock): its footprint
 * and maybe the peak grow. Once per page entered. */
static __attribute__((noinline)) void grow(struct chunk *c, uint64_t end) {
    uint64_t more = footprint(end) - footprint(c->high);
    c->high = (end + growth.page - 1) & ~(growth.page - 1); /* bumps within the page then skip grow() */
    if (more) note_peak(atomic_fetch_add_explicit(&growth.resident, more, memory_order_relaxed) + more);
}

/* Bumps chunk c's top from `top` to an object at `off` of `sz` bytes (under its group's lock). */
static inline __attribute__((always_inline)) void bump_to(struct chunk *c, uint64_t top, uint64_t off, uint64_t sz) {
    _Atomic uint64_t *bounds = bounds_of(c);
    if (off != top) { /* the padding is nobody's: the previous object ends there */
        bit_set(bounds, top / GRANULE, 1);
        bit_set(freed_of(c), top / GRANULE, 1);
    }
    bit_set(bounds, off / GRANULE, 1); /* its freed bit is clear: bits are cleared below the top */
    /* Boundaries first, then the top (release): a reader that sees the new top sees them. */
    atomic_store_explicit(&c->top, off + sz, memory_order_release);
}
/* Counts a new object of `size` bytes requested, `used` taken, in chunk c of group G. */
static inline __attribute__((always_inline)) void count_object(struct group_state *G, struct chunk *c, uint64_t size, uint64_t used) {
    c->refs++;
    G->count++;
    G->bytes += size;
    __atomic_store_n(&G->live, G->live + used, __ATOMIC_RELAXED);
}

/* Allocates `size` bytes aligned to `align` (8 or 16; 16 with `listed`) in group g: with
 * `listed` (a constant, `reuse`), the newest freed object of its size, else bumped; *zero says
 * whether the memory is still zero. NULL when no chunk can be had. Inlined into the serving
 * functions without the lists; the rare steps are calls. */
static inline __attribute__((always_inline)) void *group_alloc_in(uint32_t g, uint64_t size, uint64_t align, int *zero, const int listed) {
    uint64_t used = rounded_size(size);
    uint64_t sz = listed && used > GRANULE ? (used + REUSE_UNIT - 1) & ~(uint64_t)(REUSE_UNIT - 1) : used;
    struct group_state *G = &groups[g];
    int took = group_take(&G->lock);
    struct chunk *c;
    uint64_t off;
    struct free_node **h = listed && sz > GRANULE ? heads_of(g) + sz / REUSE_UNIT : NULL, *n = h ? *h : NULL;
    if (n) {
        *h = n->next;
        if (n->next) n->next->prev = NULL;
        c = chunk_of(n);
        off = (uint64_t)((unsigned char *)n - (unsigned char *)c);
        bit_set(freed_of(c), off / GRANULE, 0);
        G->reused++;
        *zero = 0;
    } else {
        c = G->cur;
        uint64_t top = c ? atomic_load_explicit(&c->top, memory_order_relaxed) : 0;
        off = (top + align - 1) & ~(align - 1);
        if (HL_UNLIKELY(!c || off + sz > growth.chunk)) {
            if (!(c = next_chunk(g, G))) {
                group_drop(&G->lock, took);
                return NULL;
            }
            top = off = growth.data_start; /* a multiple of 64 */
        }
        bump_to(c, top, off, sz);
        *zero = (int)c->zeroed;
    }
    if (sz != used) bit_set(freed_of(c), off / GRANULE + 1, 1); /* padded: see group_free */
    count_object(G, c, size, used);
    if (HL_UNLIKELY(off + sz > c->high)) grow(c, off + sz); /* after the live bytes: the peak counts this object */
    group_drop(&G->lock, took);
    return (unsigned char *)c + off;
}
static __attribute__((noinline)) void *group_alloc_listed(uint32_t g, uint64_t size, uint64_t align, int *zero) { return group_alloc_in(g, size, align, zero, 1); }
static inline __attribute__((always_inline)) void *group_alloc(uint32_t g, uint64_t size, uint64_t align, int *zero) {
    return HL_UNLIKELY(reuse) ? group_alloc_listed(g, size, align, zero) : group_alloc_in(g, size, align, zero, 0);
}

/* The chunk and offset of one of our live objects at p; NULL when p is no live object's start
 * (a stray pointer: never in a chunk not yet handed out). */
static inline struct chunk *live_chunk(const void *p, uint64_t *off_out) {
    uint64_t idx = ((uintptr_t)p - (uintptr_t)range) >> chunk_shift;
    if (idx >= atomic_load_explicit(&carved, memory_order_acquire)) return NULL;
    struct chunk *c = chunk_of(p);
    uint64_t off = (uint64_t)((const unsigned char *)p - (unsigned char *)c);
    if (off < growth.data_start || off % GRANULE || off >= atomic_load_explicit(&c->top, memory_order_acquire)) return NULL;
    if (bit_get(freed_of(c), off / GRANULE) || !bit_get(bounds_of(c), off / GRANULE)) return NULL;
    *off_out = off;
    return c;
}

/* Frees one of our objects under its chunk's group's lock (one lock instead of an atomic per
 * counter and bitmap word). A pointer that is no live object is counted and left alone. */
static void group_free(void *p) {
    uint64_t off;
    struct chunk *c = live_chunk(p, &off);
    while (c) {
        uint32_t g = atomic_load_explicit(&c->group, memory_order_relaxed);
        if (g >= T.ngroups) break;
        struct group_state *G = &groups[g];
        int took = group_take(&G->lock);
        /* With other threads about, what live_chunk saw may have changed before the lock. */
        if (took && atomic_load_explicit(&c->group, memory_order_relaxed) != g) { /* recycled meanwhile: a stray pointer */
            group_drop(&G->lock, took);
            continue;
        }
        if (took && (off >= atomic_load_explicit(&c->top, memory_order_relaxed) || bit_get(freed_of(c), off / GRANULE))) {
            group_drop(&G->lock, took);
            break;
        }
        bit_set(freed_of(c), off / GRANULE, 1);
        uint64_t ext = extent(c, off), pad = 0;
        /* With `reuse`, a freed bit on an object's second granule (never an object start there:
         * objects are at least 16 bytes) says its last 8 bytes are padding, which the live
         * bytes do not count, as they do not count the padding granules bumping leaves. */
        if (reuse && ext > GRANULE && bit_get(freed_of(c), off / GRANULE + 1)) bit_set(freed_of(c), off / GRANULE + 1, 0), pad = GRANULE;
        __atomic_store_n(&G->live, G->live - (ext - pad), __ATOMIC_RELAXED);
        G->frees++;
        if (--c->refs == 0) put_chunk(g, c, off);
        else if (c->refs == 1 && G->cur == c) {
            if (off == growth.data_start && off + ext == atomic_load_explicit(&c->top, memory_order_relaxed)) {
                /* The only object since the chunk was last started (an allocation freed before
                 * the next, as in a loop): its boundary and freed bit are all that is left of it. */
                bit_set(bounds_of(c), off / GRANULE, 0);
                bit_set(freed_of(c), off / GRANULE, 0);
                c->zeroed = 0;
                atomic_store_explicit(&c->top, growth.data_start, memory_order_release);
            } else {
                restart(g, c, off);
            }
        } else if (reuse && ext > GRANULE) list_push(g, p, ext);
        group_drop(&G->lock, took);
        return;
    }
    atomic_fetch_add_explicit(&stray_frees, 1, memory_order_relaxed); /* a program error, left alone */
}

/* ---- serving ---- */

static inline void count_fallback(int why, uint64_t size) {
    count(offsetof(struct thread_stats, fb_count) + (size_t)why * sizeof(uint64_t), 1);
    count(offsetof(struct thread_stats, fb_bytes) + (size_t)why * sizeof(uint64_t), size);
}

/* The alignment a block of `bytes` gets: 8 when its size rounds (to 8) to an odd multiple of 8
 * (see the top), else 16; with the free lists (whose classes are multiples of 16) or
 * `align16`, 16 above 8 bytes. */
static inline uint64_t natural_align(uint64_t bytes) {
    uint64_t used = rounded_size(bytes);
    return odd8 ? 16 - (used & GRANULE) : !reuse && used == GRANULE ? 8 : 16;
}

/* With `odd8`, where an object taking `used` bytes goes when the bump top (a multiple of 8) is
 * at `top`: natural_align's rule in two operations (an odd number of granules at the top, an
 * even number at the next multiple of 16, which is 8 further exactly when the top is not one). */
static inline uint64_t odd8_offset(uint64_t top, uint64_t used) { return top + (top & ~used & GRANULE); }

/* Serves an identified request of `bytes` (alignment `align`, 0 for none) from its group, or
 * returns NULL with the reason counted. */
static inline __attribute__((always_inline)) void *grouped(uint64_t bytes, uint64_t align, void *ret, int *zero) {
    int why;
    if (bytes > T.max_object) why = W_SIZE;
    else if (align > 16) why = W_ALIGN;
    else {
        int64_t g = T.ngroups ? identify(ret) : -1;
        if (g < 0) why = W_CONTEXT;
        else {
            uint64_t natural = natural_align(bytes);
            void *p = group_alloc((uint32_t)g, bytes, align > natural ? align : natural, zero);
            if (p) return p;
            why = W_EXHAUSTED;
        }
    }
    count_fallback(why, bytes);
    return NULL;
}

/* hl_serve_alloc's work, inlined into it and into hl_serve_malloc (`op` a constant there). */
static inline __attribute__((always_inline)) void *serve(int op, size_t size, size_t extra, void *ret, int *err) {
    uint64_t bytes = size;
    if (!serving || (op == HL_CALLOC && __builtin_mul_overflow(extra, size, &bytes)) || !hl_valid_align(op, extra))
        return hl_real_alloc(op, size, extra, err);
    /* valloc and pvalloc want pages (pvalloc whole pages): never grouped. */
    uint64_t align = op == HL_CALLOC || op == HL_MALLOC ? 0 : op == HL_VALLOC || op == HL_PVALLOC ? (uint64_t)hl_page_size : extra;
    int zero = 0;
    void *p = grouped(bytes, align, ret, &zero);
    if (!p) return op == HL_MALLOC ? hl_real.malloc(size) : hl_real_alloc(op, size, extra, err); /* malloc sets no *err */
    if (op == HL_CALLOC && !zero) memset(p, 0, bytes);
    return p;
}
void *hl_serve_alloc(int op, size_t size, size_t extra, void *ret, int *err) { return serve(op, size, extra, ret, err); }

/* ---- malloc's common case ----
 * A small request whose call site the thread's cache answers (alone or with its one step),
 * bumped in its group's current chunk within the pages it has entered, while the process has
 * one thread: inline, and every rarer case a call that finishes the allocation, so that no value
 * lives across a call and the path saves no registers. */
/* Requests below this take the path (0: none, while not serving, with no groups, or without
 * `odd8`, whose bump offset the path computes). */
static uint64_t fast_below;
static __attribute__((noinline)) void *serve_malloc_rest(size_t size, void *ret) { return serve(HL_MALLOC, size, 0, ret, NULL); }
static __attribute__((noinline)) void *fallback_malloc(size_t size, int why) {
    count_fallback(why, size);
    return hl_real.malloc(size);
}
static __attribute__((noinline)) void *group_malloc_rest(uint32_t g, size_t size) {
    int zero;
    void *p = group_alloc(g, size, natural_align(size), &zero);
    return p ? p : fallback_malloc(size, W_EXHAUSTED);
}
/* A request the path takes whose group the rest of identify() finds. */
static __attribute__((noinline)) void *serve_malloc_walked(size_t size, void *ret) {
    int64_t g = identify_rest(ret);
    return g < 0 ? fallback_malloc(size, W_CONTEXT) : group_malloc_rest((uint32_t)g, size);
}
void *hl_serve_malloc(size_t size, void *ret) {
    if (HL_UNLIKELY(size >= fast_below)) return serve_malloc_rest(size, ret);
    int64_t g = identify_fast(ret);
    if (HL_UNLIKELY(g == IDENT_REST)) return serve_malloc_walked(size, ret);
    if (g < 0) return fallback_malloc(size, W_CONTEXT);
    if (HL_UNLIKELY(!__libc_single_threaded)) return group_malloc_rest((uint32_t)g, size);
    uint64_t used = rounded_size(size);
    struct group_state *G = &groups[g];
    struct chunk *c = G->cur;
    uint64_t top = c ? atomic_load_explicit(&c->top, memory_order_relaxed) : 0, off = odd8_offset(top, used);
    /* Beyond the pages entered (never beyond the chunk): a new page or chunk to account for. */
    if (HL_UNLIKELY(!c || off + used > c->high)) return group_malloc_rest((uint32_t)g, size);
    bump_to(c, top, off, used);
    count_object(G, c, size, used);
    return (unsigned char *)c + off;
}

void hl_serve_free(void *p) { group_free(p); }

size_t hl_serve_usable(void *p) {
    uint64_t off;
    struct chunk *c = live_chunk(p, &off);
    return c ? extent(c, off) : 0;
}

/* realloc between the groups and the fallback, in every direction. A grouped block that still
 * holds the new size stays where it is; otherwise the new block is an allocation like any other
 * (identified when `identify_it`). */
void *hl_serve_realloc(void *old, size_t bytes, void *ret, int identify_it) {
    uint64_t old_off = 0, have = 0;
    struct chunk *oc = NULL;
    int mine = old && hl_owns(old);
    if (mine) {
        oc = live_chunk(old, &old_off);
        if (!oc) { /* not a live block of ours: a program error, left alone */
            atomic_fetch_add_explicit(&stray_frees, 1, memory_order_relaxed);
            errno = ENOMEM;
            return NULL;
        }
        have = extent(oc, old_off);
    }
    if (old && bytes == 0) { /* realloc(p, 0) frees p (glibc's answer, kept for our blocks) */
        if (mine) {
            group_free(old);
            return NULL;
        }
        return hl_real.realloc(old, 0);
    }
    /* In place while it fits and sits at the alignment its new size gets (a 24-byte object
     * 8 bytes off a 16 boundary does not stay for 16 bytes). */
    if (mine && bytes <= have && ((uintptr_t)old & (natural_align(bytes) - 1)) == 0) return old;
    void *p = NULL;
    int zero = 0;
    if (identify_it && serving) p = grouped(bytes, 0, ret, &zero);
    if (p) {
        if (mine) {
            memcpy(p, old, have < bytes ? have : bytes);
            group_free(old);
        } else if (old) {
            size_t n = hl_real.usable(old);
            memcpy(p, old, n < bytes ? n : bytes);
            hl_real.free(old);
        }
        return p;
    }
    if (!mine) return hl_real.realloc(old, bytes);
    void *q = hl_real.malloc(bytes);
    if (!q) return NULL; /* the old block stays as it was */
    memcpy(q, old, have < bytes ? have : bytes);
    group_free(old);
    return q;
}

/* ---- loading the table ---- */

static void say2(const char *a, const char *b) {
    hl_say("heaplab run: ");
    hl_say(a);
    hl_say(b);
    hl_say("\n");
}

static int fail(const char *why) {
    size_t n = 0;
    const char *parts[] = {table_path, ": ", why};
    for (size_t i = 0; i < 3; i++)
        for (const char *c = parts[i]; *c && n + 1 < sizeof error_text; c++) error_text[n++] = *c;
    error_text[n] = 0;
    say2(error_text, "; running the program without groups");
    return -1;
}

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

/* Zeroed memory for the runtime's tables, carved in turn (64-byte aligned) from one reservation
 * that only the pages used make resident: a few dozen small tables share a few pages, where a
 * mapping each cost a system call and a page fault apiece at every start. */
#define TABLE_ARENA (64ull << 20)
static void *table_map(uint64_t bytes) {
    static unsigned char *arena;
    static uint64_t used;
    bytes = bytes ? (bytes + 63) & ~(uint64_t)63 : 64;
    if (!arena) {
        arena = sys_mmap(NULL, TABLE_ARENA, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (arena == MAP_FAILED) arena = NULL;
    }
    if (arena && bytes <= TABLE_ARENA - used) {
        used += bytes;
        return arena + used - bytes;
    }
    void *m = sys_mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return m == MAP_FAILED ? NULL : m;
}

/* Reads and checks the table, copies it into the runtime's arrays, reserves the range. */
static int load_table(void) {
    int f = open(table_path, O_RDONLY | O_CLOEXEC);
    if (f < 0) return fail("cannot open the runtime table");
    struct stat st;
    if (fstat(f, &st) != 0 || st.st_size < HLG_HEADER) return close(f), fail("runtime table too short");
    uint64_t total = (uint64_t)st.st_size;
    const unsigned char *m = mmap(NULL, total, PROT_READ, MAP_PRIVATE, f, 0);
    close(f);
    if (m == MAP_FAILED) return fail("cannot map the runtime table");
    int rc = -1;
    if (memcmp(m, HLG_MAGIC, 8) != 0 || get64(m + 8) != HLG_VERSION) {
        fail("not a runtime table of this version");
        goto out;
    }
    T.walk_depth = get64(m + 16);
    T.max_object = get64(m + 24);
    T.chunk = get64(m + 32);
    T.spare = get64(m + 40);
    uint64_t ns = get64(m + 48), ng = get64(m + 56), nc = get64(m + 64), nt = get64(m + 72), names = get64(m + 80), nsel = get64(m + 96);
    uint64_t at_sites = HLG_HEADER, at_groups = at_sites + ns * HLG_SITE_RECORD, at_conj = at_groups + ng * HLG_PAIR_RECORD;
    uint64_t at_terms = at_conj + nc * HLG_PAIR_RECORD, at_names = at_terms + nt * 4;
    if (ns > HLG_MAX_TABLE_SITES || nsel > HLG_MAX_SITES || nsel > ns || ng > nc || ng > HLG_MAX_GROUPS || nc > total || nt > total || names > total || at_names + names != total || get64(m + 88) != total ||
        T.walk_depth > HLG_MAX_WALK || T.chunk < 4096 || (T.chunk & (T.chunk - 1)) || T.max_object > T.chunk / 2 || T.spare > HLG_MAX_SPARE) {
        fail("inconsistent runtime table");
        goto out;
    }
    T.nsites = (uint32_t)ns, T.nsel = (uint32_t)nsel, T.ngroups = (uint32_t)ng, T.nconj = (uint32_t)nc, T.nterms = (uint32_t)nt;
    site_off = table_map(ns * 16);
    site_hash = site_off ? site_off + ns : NULL;
    group_conj = table_map(ng * 8);
    conj_term = table_map(nc * 8);
    terms = table_map(nt * 4);
    site_found = table_map(ns);
    site_decide = table_map(ns * 12);
    site_depth = site_decide ? site_decide + ns : NULL;
    site_other = site_decide ? site_decide + 2 * ns : NULL;
    modules = table_map(sizeof *modules * MAX_MODULES);
    if (!site_off || !group_conj || !conj_term || !terms || !site_found || !site_decide || !modules) {
        fail("cannot map the runtime's tables");
        goto out;
    }
    for (uint64_t s = 0; s < ns; s++) {
        const unsigned char *r = m + at_sites + s * HLG_SITE_RECORD;
        uint64_t name_at = get32(r + 8), name_len = get32(r + 12);
        if (name_at > names || name_len > names - name_at) {
            fail("a site's module name lies outside the table");
            goto out;
        }
        site_off[s] = get64(r);
        site_hash[s] = hl_fnv1a((const char *)m + at_names + name_at, name_len);
        site_decide[s] = get32(r + 16);
        site_depth[s] = get32(r + 20);
        site_other[s] = get32(r + 24);
        have_calls |= site_depth[s] != 0;
        if ((site_decide[s] < HLG_MODULE && site_decide[s] >= ng) || (site_other[s] != HLG_FALLBACK && (site_other[s] >= ng || site_decide[s] != HLG_WALK)) || site_depth[s] > T.walk_depth || (site_depth[s] == 0 && site_decide[s] != HLG_WALK && site_decide[s] != HLG_MODULE) || (site_decide[s] == HLG_MODULE && site_depth[s] != 0)) {
            fail("a call site's decision lies outside the table");
            goto out;
        }
    }
    for (uint64_t i = 0; i < 2 * ng; i++) group_conj[i] = get32(m + at_groups + 4 * i);
    for (uint64_t i = 0; i < 2 * nc; i++) conj_term[i] = get32(m + at_conj + 4 * i);
    for (uint64_t i = 0; i < nt; i++) terms[i] = get32(m + at_terms + 4 * i);
    for (uint64_t g = 0; g < ng; g++)
        if (group_conj[2 * g] > nc || group_conj[2 * g + 1] > nc - group_conj[2 * g]) {
            fail("a group's conjunctions lie outside the table");
            goto out;
        }
    for (uint64_t c = 0; c < nc; c++)
        if (conj_term[2 * c] > nt || conj_term[2 * c + 1] > nt - conj_term[2 * c]) {
            fail("a conjunction's sites lie outside the table");
            goto out;
        }
    for (uint64_t t = 0; t < nt; t++)
        if (terms[t] >= nsel) {
            fail("a selector names a site the table lacks");
            goto out;
        }
    words = (uint32_t)((nsel + 63) / 64);
    /* Each site's conjunctions (counting sort by site), and each conjunction's group. */
    site_first = table_map(ns);
    for (uint32_t c = ng ? group_conj[0] : 0, ce = ng ? c + group_conj[1] : 0; site_first && c < ce; c++)
        for (uint32_t t = conj_term[2 * c], te = t + conj_term[2 * c + 1]; t < te; t++) site_first[terms[t]] = 1;
    site_conj_at = table_map((ns + 1) * 4);
    site_conj = table_map(nt * 4);
    conj_group = table_map(nc * 4);
    conj_mask = table_map(nc * 8);
    if (!site_first || !site_conj_at || !site_conj || !conj_group || !conj_mask) {
        fail("cannot map the runtime's tables");
        goto out;
    }
    always = (uint32_t)ng;
    for (uint64_t c = 0; c < nc; c++) conj_group[c] = UINT32_MAX; /* a conjunction of no group never decides */
    for (uint64_t g = ng; g-- > 0;)
        for (uint32_t c = group_conj[2 * g], ce = c + group_conj[2 * g + 1]; c < ce; c++) {
            conj_group[c] = (uint32_t)g;
            if (conj_term[2 * c + 1] == 0) always = (uint32_t)g;
        }
    for (uint64_t c = 0; c < nc; c++) {
        uint64_t mask = 0;
        int wide = 0;
        for (uint32_t t = conj_term[2 * c], te = t + conj_term[2 * c + 1]; t < te; t++) {
            if (terms[t] < 64) mask |= 1ull << terms[t];
            else wide = 1;
        }
        conj_mask[c] = wide ? 0 : mask; /* 0 for an empty one too: it holds for any mask */
    }
    narrow = nsel <= 64;
    flat = table_map(nc * sizeof *flat);
    if (!flat) {
        fail("cannot map the runtime's tables");
        goto out;
    }
    for (uint32_t g = 0; g < ng; g++)
        for (uint32_t c = group_conj[2 * g], ce = c + group_conj[2 * g + 1]; c < ce; c++) flat[nflat++] = (struct flat){conj_mask[c], g};
    if (narrow && nsel <= ANSWER_SITES && (answer = table_map((1ull << nsel) * sizeof *answer)))
        for (uint64_t p = 0; p < 1ull << nsel; p++) answer[p] = first_holding_scan(p, (uint32_t)ng);
    for (uint64_t t = 0; t < nt; t++) site_conj_at[terms[t] + 1]++;
    for (uint64_t i = 0; i < ns; i++) site_conj_at[i + 1] += site_conj_at[i];
    for (uint64_t c = 0; c < nc; c++)
        for (uint32_t t = conj_term[2 * c], te = t + conj_term[2 * c + 1]; t < te; t++) site_conj[site_conj_at[terms[t]]++] = (uint32_t)c;
    for (uint64_t i = ns; i > 0; i--) site_conj_at[i] = site_conj_at[i - 1]; /* back to each run's start */
    site_conj_at[0] = 0;
    /* Site addresses: a few slots per site (a basename may be mapped more than once). */
    int tables = table_init(&sel_sites, nsel * 8);
    /* Call sites: those in selectors too, a few slots each. */
    tables &= table_init(&call_sites, (ns - nsel) * 8 + 8 > ns * 4 ? (ns - nsel) * 8 + 8 : ns * 4);
    groups = table_map((ng ? ng : 1) * sizeof *groups);
    thread_stats = sys_mmap(NULL, sizeof *thread_stats * MAX_THREAD_STATS, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (thread_stats == MAP_FAILED) thread_stats = NULL;
    if (!tables || !groups || !thread_stats) {
        fail("cannot map the runtime's tables");
        goto out;
    }
    /* The range: as large as the system lets us reserve, aligned to the chunk size and to huge
     * pages. */
    bitmap_bytes = T.chunk / GRANULE / 8;
    growth.data_start = HEADER + 2 * bitmap_bytes;
    growth.page = (uint64_t)hl_page_size;
    growth.chunk = T.chunk;
    growth.ngroups = T.ngroups;
    uint64_t align = T.chunk > HUGE_PAGE ? T.chunk : HUGE_PAGE;
    /* Without groups nothing is served or identified: no range, no unwinding, no sites to
     * resolve (reading /proc/self/maps), only the counts of the report (0.2 ms less at start). */
    for (uint64_t len = ng ? 64ull << 30 : 0; len >= T.chunk * 16 && !range; len >>= 1) {
        unsigned char *r = sys_mmap(NULL, len + align, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (r == MAP_FAILED) continue;
        uintptr_t base = ((uintptr_t)r + align - 1) & ~(uintptr_t)(align - 1);
        if (base > (uintptr_t)r) sys_munmap(r, base - (uintptr_t)r);
        if ((uintptr_t)r + align > base) sys_munmap((void *)(base + len), (uintptr_t)r + align - base);
        range = (unsigned char *)base;
        range_len = len;
    }
    const char *huge_env = getenv("HEAPLAB_GROUP_HUGEPAGES");
    if (range && range_len > HUGE_PAGE && huge_env && strcmp(huge_env, "1") == 0)
        huge_pages = madvise(range + HUGE_PAGE, range_len - HUGE_PAGE, MADV_HUGEPAGE) == 0 ? "on" : "refused";
    chunk_shift = __builtin_ctzll(T.chunk);
    chunks_max = range_len >> chunk_shift;
    returned = table_map(chunks_max * 4);
    spares = table_map((T.spare ? T.spare : 1) * 4);
    const char *reuse_env = getenv("HEAPLAB_GROUP_REUSE");
    reuse = reuse_env && strcmp(reuse_env, "1") == 0;
    const char *align_env = getenv("HEAPLAB_GROUP_ALIGN16");
    align16 = align_env && strcmp(align_env, "1") == 0;
    nclass = (T.max_object + REUSE_UNIT - 1) / REUSE_UNIT + 1;
    if (reuse && !(free_heads = table_map((ng ? ng : 1) * nclass * sizeof *free_heads))) reuse = 0;
    odd8 = !reuse && !align16;
    if ((ng && !range) || !returned || !spares) {
        fail("cannot reserve the grouped heap");
        goto out;
    }
    /* The sites first: their look-up gives the walker this thread's stack too. */
    if (ng) resolve_sites(1);
    if (ng && T.walk_depth > 1) {
        hl_unwind_init();
        memo_stride = (sizeof(struct memo) + T.walk_depth * (sizeof(struct memo_check) + sizeof(void *) + sizeof(struct hl_walk_trace) + sizeof(uint64_t) + sizeof(int32_t)) + 63) & ~(uint64_t)63;
        const char *m = getenv("HEAPLAB_GROUP_MEMO");
        if (!m || strcmp(m, "0") != 0) {
            memo_area = sys_mmap(NULL, (MAX_THREAD_STATS - 1) * MEMO_SLOTS * memo_stride, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
            memo_on = memo_area != MAP_FAILED;
        }
    }
    rc = 0;
out:
    munmap((void *)m, total);
    return rc;
}

/* ---- the report ---- */

/* The report, written once when the image that claimed the run ends (native/report.c calls
 * it; `end`: how the image ended). Async-signal-safe: counters are
 * read without the locks. */
void hl_write_report(const char *end) {
    if (!*report_path) return;
    static struct hl_out o;
    o.n = 0;
    uint64_t fb = 0, fbb = 0, gc = 0, gb = 0, frees = 0, reused = 0, stepped = 0, replayed = 0, why[W_N] = {0};
    uint32_t used = atomic_load(&thread_stats_used);
    for (uint32_t t = 0; thread_stats && t < used && t < MAX_THREAD_STATS; t++) {
        stepped += thread_stats[t].stepped, replayed += thread_stats[t].replayed;
        for (int w = 0; w < W_N; w++) why[w] += thread_stats[t].fb_count[w], fb += thread_stats[t].fb_count[w], fbb += thread_stats[t].fb_bytes[w];
    }
    for (uint32_t g = 0; groups && g < T.ngroups; g++) gc += groups[g].count, gb += groups[g].bytes, frees += groups[g].frees, reused += groups[g].reused;
    uint64_t walks = T.ngroups ? gc + why[W_CONTEXT] + why[W_EXHAUSTED] : 0; /* see struct thread_stats */
    hl_put(&o, "{\n  \"groups_file\": ");
    hl_put_str(&o, groups_path);
    hl_put(&o, ",\n  \"error\": ");
    if (*error_text) hl_put_str(&o, error_text);
    else hl_put(&o, "null");
    hl_put(&o, ",\n  ");
    hl_key_u(&o, "walk_depth", T.walk_depth);
    hl_put(&o, ", ");
    hl_key_u(&o, "max_object_size", T.max_object);
    hl_put(&o, ", ");
    hl_key_u(&o, "chunk_size", T.chunk);
    hl_put(&o, ", ");
    hl_key_u(&o, "spare_chunks", T.spare);
    hl_put(&o, ",\n  ");
    hl_key_u(&o, "selector_sites", T.nsel);
    hl_put(&o, ", ");
    hl_key_u(&o, "sites_unresolved", atomic_load(&unresolved));
    hl_put(&o, ",\n  \"settings\": {\"alignment\": ");
    hl_put_str(&o, odd8 ? "size" : "16");
    hl_put(&o, ", ");
    hl_key_u(&o, "free_lists", (uint64_t)reuse);
    hl_put(&o, ", \"huge_pages\": ");
    hl_put_str(&o, huge_pages);
    hl_put(&o, "},\n  ");
    hl_key_u(&o, "allocations", gc + fb);
    hl_put(&o, ",\n  \"grouped\": {");
    hl_key_u(&o, "count", gc);
    hl_put(&o, ", ");
    hl_key_u(&o, "bytes", gb);
    hl_put(&o, "},\n  \"groups\": [");
    for (uint32_t g = 0; groups && g < T.ngroups; g++) {
        hl_put(&o, g ? ", {" : "{");
        hl_key_u(&o, "count", groups[g].count);
        hl_put(&o, ", ");
        hl_key_u(&o, "bytes", groups[g].bytes);
        hl_put(&o, "}");
    }
    hl_put(&o, "],\n  ");
    hl_put_fallback(&o, fb, fbb, why_name, why, W_N);
    hl_put(&o, ",\n  \"identification\": {");
    hl_key_u(&o, "walks", walks);
    hl_put(&o, ", ");
    hl_key_u(&o, "frames", walks + stepped);
    hl_put(&o, ", ");
    hl_key_u(&o, "replayed", replayed);
    hl_put(&o, "},\n  \"chunks\": {");
    hl_key_u(&o, "fresh", chunks_fresh);
    hl_put(&o, ", ");
    hl_key_u(&o, "reused", chunks_reused);
    hl_put(&o, ", ");
    hl_key_u(&o, "returned", chunks_returned);
    hl_put(&o, "},\n  \"fragmentation\": {");
    uint64_t pr = atomic_load(&growth.peak), pl = atomic_load(&growth.live_at_peak);
    hl_key_u(&o, "peak_resident_bytes", pr);
    hl_put(&o, ", ");
    hl_key_u(&o, "live_bytes", pl);
    hl_put(&o, ", ");
    hl_key_u(&o, "bytes", pr - pl);
    hl_put(&o, ", \"ratio\": ");
    hl_put_ratio(&o, pr - pl, pr);
    hl_put(&o, "},\n  ");
    hl_key_u(&o, "frees_grouped", frees);
    hl_put(&o, ", ");
    hl_key_u(&o, "reused_objects", reused);
    hl_put(&o, ", ");
    hl_key_u(&o, "stray_frees", atomic_load(&stray_frees));
    hl_put_report_end(&o, end, report_path);
}

/* ---- the layer's hooks ---- */

/* Reads HEAPLAB_GROUP (lines of key=value: table, report, claim, groups). Only the image that
 * removes the claim file groups: the one the launcher started. Images started later by exec
 * inherit the variable, find no claim, and run with the fallback alone (the groups name call
 * sites of the launched program; another program's would not match them). */
void hl_on_init(void) {
    const char *conf = getenv("HEAPLAB_GROUP");
    static char claim_path[4096];
    if (!conf) return;
    const struct hl_conf_key keys[] = {{"table=", table_path, sizeof table_path},
                                       {"report=", report_path, sizeof report_path},
                                       {"claim=", claim_path, sizeof claim_path},
                                       {"groups=", groups_path, sizeof groups_path}};
    hl_read_conf(conf, keys, sizeof keys / sizeof keys[0]);
    if (!*table_path || !hl_claim_run(claim_path)) return;
    hl_watch_fork();
    if (load_table() != 0) return;
    hl_own_base = (uintptr_t)range;
    hl_own_len = range_len;
    serving = 1;
    fast_below = T.ngroups && odd8 ? T.max_object + 1 : 0;
    atomic_store(&hl_active, 1);
}

/* A fork child goes on grouping (the selectors name code, which it shares) in its copy of the
 * heap; only the root image reports. Every lock is held across fork so the child's copies are
 * consistent. */
void hl_on_fork_prepare(void) {
    spin_take(&resolve_lock);
    for (uint32_t g = 0; groups && g < T.ngroups; g++) spin_take(&groups[g].lock);
    spin_take(&chunk_lock);
    spin_take(&growth.peak_lock);
}
static void fork_release(void) {
    spin_drop(&growth.peak_lock);
    spin_drop(&chunk_lock);
    for (uint32_t g = 0; groups && g < T.ngroups; g++) spin_drop(&groups[g].lock);
    spin_drop(&resolve_lock);
}
void hl_on_fork_parent(void) { fork_release(); }
void hl_on_fork_child(void) { fork_release(); }
