/* hl_main.c — the `heaplab` valgrind tool behind `heaplab access`.
 *
 * It replaces the client's allocator (VG_(needs_malloc_replacement), as DHAT and massif do) so
 * it sees every heap block: allocation order, requested size, allocation context, lifetime on a
 * heap-event clock. Every load and store (plain, guarded, dirty helpers' memory, CAS, LL/SC) is
 * instrumented and attributed to the live block holding its address (a last-block cache, then
 * an AVL interval tree), counting reads and writes per block. Heap accesses feed HALO's
 * affinity queue, which builds the co-access graph between blocks and/or HALO's affinity graph
 * between full contexts (§4.1-4.2: the allocation's whole call stack reduced to the frames of
 * the program's own modules) in memory; 8-byte stores of a pointer into another live block add
 * friend edges. At exit it writes the .hlaccess file (format: the module doc of
 * crates/access/src/format.rs) and nothing else: the profile is not a trace.
 *
 * Options (passed by `heaplab access`): --hl-out=FILE, --hl-depth=N (frames per context),
 * --hl-affinity=A (affinity distance in bytes), --hl-max-edges=N (memory bound of each graph),
 * --hl-module=NAME (repeatable: a context module's file name, the executable's first; any
 * turns full contexts on), --hl-graph=blocks|contexts|both|none, --hl-max-grouped=BYTES.
 */
#include "pub_tool_basics.h"
#include "pub_tool_tooliface.h"
#include "pub_tool_libcassert.h"
#include "pub_tool_libcbase.h"
#include "pub_tool_libcfile.h"
#include "pub_tool_libcprint.h"
#include "pub_tool_libcproc.h"
#include "pub_tool_mallocfree.h"
#include "pub_tool_replacemalloc.h"
#include "pub_tool_options.h"
#include "pub_tool_oset.h"
#include "pub_tool_stacktrace.h"
#include "pub_tool_aspacemgr.h"
#include "pub_tool_debuginfo.h"
#include "pub_tool_clientstate.h"
#include "pub_tool_xarray.h"
#include "pub_tool_machine.h"

#include "hl_format.h"

#define HL_MAX_DEPTH 64

/* ---- options ---------------------------------------------------------------------------- */

static const HChar *clo_out = NULL;
static Long clo_depth = 1;
static Long clo_affinity = 128; /* HALO's evaluated affinity distance */
static Long clo_max_edges = 1 << 22;
#define HL_MAX_MODULES 32
static const HChar *clo_modules[HL_MAX_MODULES];
static UInt n_modules = 0;
static ULong module_hash[HL_MAX_MODULES]; /* fnv1a of each name, for the stable keys */
static Bool block_graph = True, ctx_graph = False, any_graph = True;
static Long clo_max_grouped = 4096; /* HALO's maximum grouped object size */

/* ---- blocks ----------------------------------------------------------------------------- */

typedef struct {
    Addr addr;
    SizeT size;
    ULong alloc_at, free_at;
    ULong reads, writes;
    UInt ctx;
    UInt fctx;        /* its full context (when recorded) */
    ULong prev1;      /* 1 + the id of the previous block of the same full context; 0 = none */
    ULong next;       /* the id of the next block of the same full context; ~0 = none yet */
    UInt seen;        /* the affinity traversal that last counted it in the block graph */
    UInt cseen;       /* ... in the context graph (apart: an initialising entry counts in one only) */
    struct Adj *adj; /* its incoming co-access edges, or NULL */
} Block;

static Block *blocks = NULL;
static ULong n_blocks = 0, cap_blocks = 0;
static ULong heap_clock = 0;

/* The live-block interval tree: nodes keyed by payload address; lookups compare an address
 * against [addr, addr + max(size, 1)). */
typedef struct {
    Addr addr;
    SizeT size;
    ULong id;
} Live;

static OSet *live = NULL;

static Word live_cmp(const void *key, const void *elem) {
    Addr a = *(const Addr *)key;
    const Live *l = elem;
    SizeT span = l->size ? l->size : 1;
    if (a < l->addr) return -1;
    if (a >= l->addr + span) return 1;
    return 0;
}

/* Every heap block ever handed out lies in [heap_lo, heap_hi): a cheap first filter. */
static Addr heap_lo = ~(Addr)0, heap_hi = 0;

/* The last block hit (by accesses) and the last block a stored pointer pointed into. */
static Addr c_lo = 1, c_span = 0;
static ULong c_id = 0;
static Addr v_lo = 1, v_span = 0;
static ULong v_id = 0;

/* A direct-mapped cache of lookups by 32-byte granule: an entry holds the block found for an
 * address of that granule and is checked against the address itself, so aliasing is harmless;
 * a freed block's entries are cleared (they can only sit at the granules it covers). */
#define AC_BITS 12
#define AC_SHIFT 5
typedef struct {
    Addr lo;
    SizeT span;
    ULong id;
} CacheEntry;
static CacheEntry acache[1 << AC_BITS];

static inline Bool find_block(Addr a, ULong *id) {
    if (a - heap_lo >= heap_hi - heap_lo) return False;
    CacheEntry *e = &acache[(a >> AC_SHIFT) & ((1 << AC_BITS) - 1)];
    if (a - e->lo < e->span) {
        *id = e->id;
        return True;
    }
    Live *l = VG_(OSetGen_Lookup)(live, &a);
    if (!l || l->size == 0) return False;
    e->lo = l->addr;
    e->span = l->size;
    e->id = l->id;
    *id = l->id;
    return True;
}

static void acache_forget(Addr lo, SizeT size, ULong id) {
    ULong first = lo >> AC_SHIFT, last = (lo + (size ? size : 1) - 1) >> AC_SHIFT;
    if (last - first >= (1 << AC_BITS)) {
        for (UInt i = 0; i < (1 << AC_BITS); i++)
            if (acache[i].id == id) acache[i].span = 0;
        return;
    }
    for (ULong g = first; g <= last; g++) {
        CacheEntry *e = &acache[g & ((1 << AC_BITS) - 1)];
        if (e->id == id) e->span = 0;
    }
}

/* ---- contexts --------------------------------------------------------------------------- */

typedef struct {
    ULong key;
    UInt n;
    Addr ips[HL_MAX_DEPTH];
    ULong offs[HL_MAX_DEPTH];
    const HChar *files[HL_MAX_DEPTH]; /* full path of the mapped file, or NULL */
} Context;

/* A full context (HALO's reduced context): the frames in context modules, recursion collapsed;
 * `depths` the deepest raw stack position each frame was seen at; `last` the id of its latest
 * block (~0 = none), whose `next` the next allocation from it fills in. */
typedef struct {
    Context c;
    UInt depths[HL_MAX_DEPTH];
    ULong last;
} FullContext;

/* Interning by stable key: open addressing, index + 1 in each slot, 0 = empty. */
typedef struct {
    ULong *keys;
    UInt *slots;
    UInt cap;
} KeyIndex;

/* The index of `key` in `t` (which holds `n` keys), or `n` after inserting it as the new one. */
static UInt key_index(KeyIndex *t, ULong key, UInt n) {
    if ((n + 1) * 2 > t->cap) {
        UInt cap = t->cap ? t->cap * 2 : 1024;
        UInt *slots = VG_(calloc)("hl.ctxslots", cap, sizeof(UInt));
        ULong *keys = VG_(calloc)("hl.ctxslots", cap, sizeof(ULong));
        for (UInt i = 0; i < t->cap; i++) {
            if (!t->slots[i]) continue;
            UInt j = (UInt)(t->keys[i] ^ (t->keys[i] >> 29)) & (cap - 1);
            while (slots[j]) j = (j + 1) & (cap - 1);
            slots[j] = t->slots[i];
            keys[j] = t->keys[i];
        }
        if (t->slots) VG_(free)(t->slots), VG_(free)(t->keys);
        t->slots = slots;
        t->keys = keys;
        t->cap = cap;
    }
    UInt j = (UInt)(key ^ (key >> 29)) & (t->cap - 1);
    while (t->slots[j]) {
        if (t->keys[j] == key) return t->slots[j] - 1;
        j = (j + 1) & (t->cap - 1);
    }
    t->slots[j] = n + 1;
    t->keys[j] = key;
    return n;
}

static Context *ctxs = NULL;
static UInt n_ctxs = 0, cap_ctxs = 0;
static KeyIndex ctx_index;
static FullContext *fctxs = NULL;
static UInt n_fctxs = 0, cap_fctxs = 0;
static KeyIndex fctx_index;

static inline ULong mix(ULong h, ULong v) {
    h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
    h *= 0xff51afd7ed558ccdULL;
    return h ^ (h >> 33);
}

static ULong fnv1a(const HChar *s) {
    ULong h = 0xcbf29ce484222325ULL;
    for (; *s; s++) h = (h ^ (UChar)*s) * 0x100000001b3ULL;
    return h;
}

static const HChar *base_name(const HChar *p) {
    const HChar *b = p;
    for (; *p; p++)
        if (*p == '/') b = p + 1;
    return b;
}

/* The file mapping holding `a`: its name and `a`'s offset in the file (False when none). */
static Bool frame_file(Addr a, const HChar **file, ULong *off) {
    NSegment const *seg = VG_(am_find_nsegment)(a);
    if (!seg || seg->kind != SkFileC) return False;
    const HChar *f = VG_(am_get_filename)(seg);
    if (!f) return False;
    *file = f;
    *off = (ULong)(a - seg->start) + (ULong)seg->offset;
    return True;
}

/* The key of a frame at `off` in a file whose basename hashes (fnv1a) to `base_hash`: the rule
 * of crates/trace/src/context.rs. */
static inline ULong stable_key(ULong base_hash, ULong off) { return base_hash ^ (off * 0x9E3779B97F4A7C15ULL); }

/* The key of one frame (its address itself when no file is mapped there). */
static ULong frame_key(Addr a, const HChar **file, ULong *off) {
    if (!frame_file(a, file, off)) {
        *file = NULL;
        *off = 0;
        return a;
    }
    return stable_key(fnv1a(base_name(*file)), *off);
}

static Bool is_preload(Addr a) {
    const HChar *f;
    ULong off;
    return frame_file(a, &f, &off) && VG_(strncmp)(base_name(f), "vgpreload_", 10) == 0;
}

/* The call stack of the allocation being made by `tid`, at most `max` frames from the return
 * address into the program (the replacement functions' own frames are skipped). Valgrind
 * reports caller frames as return address - 1 (inside the call); stable keys are made of
 * return addresses, as the preload libraries and the runtime's stack walker see them. */
static UInt alloc_stack(ThreadId tid, Addr *ips, UInt max) {
    Addr raw[HL_MAX_DEPTH + 4];
    UInt got = VG_(get_StackTrace)(tid, raw, max + 3, NULL, NULL, 0);
    UInt n = 0, i = 0;
    while (i < got && is_preload(i == 0 ? raw[i] : raw[i] + 1)) i++;
    for (; i < got && n < max; i++) ips[n++] = i == 0 ? raw[i] : raw[i] + 1;
    return n;
}

/* The context of `n` frames `ips` (innermost first). */
static UInt context_of(const Addr *ips, UInt n) {
    const HChar *files[HL_MAX_DEPTH];
    ULong offs[HL_MAX_DEPTH];
    ULong h = 0x6a09e667f3bcc909ULL;
    for (UInt k = 0; k < n; k++) h = mix(h, frame_key(ips[k], &files[k], &offs[k]));
    h |= 1;
    UInt id = key_index(&ctx_index, h, n_ctxs);
    if (id < n_ctxs) return id;
    if (n_ctxs == cap_ctxs) {
        cap_ctxs = cap_ctxs ? cap_ctxs * 2 : 256;
        ctxs = VG_(realloc)("hl.ctxs", ctxs, cap_ctxs * sizeof(Context));
    }
    Context *c = &ctxs[n_ctxs];
    c->key = h;
    c->n = n;
    for (UInt k = 0; k < n; k++) {
        c->ips[k] = ips[k];
        c->offs[k] = offs[k];
        c->files[k] = files[k] ? VG_(strdup)("hl.file", files[k]) : NULL;
    }
    return n_ctxs++;
}

/* Which context module `file` is (its basename compared), or -1. */
static Int context_module(const HChar *file) {
    const HChar *b = base_name(file);
    for (UInt m = 0; m < n_modules; m++)
        if (VG_(strcmp)(b, clo_modules[m]) == 0) return (Int)m;
    return -1;
}

/* The full context of the raw stack `ips` (`n` frames, innermost first): the frames in context
 * modules, each return address kept at its innermost occurrence only (HALO keeps the most
 * recent (function, call site) pair; a return address is one call site of one function). */
static UInt full_context_of(const Addr *ips, UInt n) {
    Addr kept[HL_MAX_DEPTH];
    UInt depth[HL_MAX_DEPTH];
    ULong offs[HL_MAX_DEPTH];
    const HChar *files[HL_MAX_DEPTH];
    UInt m = 0;
    ULong h = 0x6a09e667f3bcc909ULL;
    for (UInt i = 0; i < n; i++) {
        const HChar *f;
        ULong off;
        if (!frame_file(ips[i], &f, &off)) continue;
        Int mod = context_module(f);
        if (mod < 0) continue;
        UInt k = 0;
        while (k < m && kept[k] != ips[i]) k++;
        if (k < m) continue; /* recursion: kept already, further in */
        kept[m] = ips[i];
        depth[m] = i;
        offs[m] = off;
        files[m] = f;
        m++;
        h = mix(h, stable_key(module_hash[mod], off));
    }
    h |= 1;
    UInt id = key_index(&fctx_index, h, n_fctxs);
    if (id < n_fctxs) {
        FullContext *x = &fctxs[id];
        for (UInt k = 0; k < m && k < x->c.n; k++)
            if (depth[k] > x->depths[k]) x->depths[k] = depth[k];
        return id;
    }
    if (n_fctxs == cap_fctxs) {
        cap_fctxs = cap_fctxs ? cap_fctxs * 2 : 64;
        fctxs = VG_(realloc)("hl.fctxs", fctxs, cap_fctxs * sizeof(FullContext));
    }
    FullContext *x = &fctxs[n_fctxs];
    x->c.key = h;
    x->c.n = m;
    x->last = ~0ULL;
    for (UInt k = 0; k < m; k++) {
        x->c.ips[k] = kept[k];
        x->c.offs[k] = offs[k];
        x->c.files[k] = VG_(strdup)("hl.file", files[k]);
        x->depths[k] = depth[k];
    }
    return n_fctxs++;
}

/* ---- weighted edge tables (co-access, friends) -------------------------------------------- */

/* Friends: open addressing on the packed pair (from << 32 | to); weight 0 = empty slot.
 * Co-access: the edges into each block in a small array of its own (struct Adj, below): a
 * traversal of the affinity queue updates only the table of the block just accessed.
 * Both graphs are bounded: at most `max` edges each; when full, every edge of weight <= floor
 * is dropped (its weight counted in `dropped`) and floor doubles, so heavy edges survive and
 * memory stays fixed. */
typedef struct {
    ULong key, weight;
} Slot;

typedef struct {
    Slot *slots;
    ULong cap, used, max, floor, dropped;
} Edges;

static Edges coacc, friends; /* coacc: only used, max, floor and dropped */
/* The context affinity graph: undirected, keyed by (lower context << 32 | higher). Contexts are
 * few, so this table stays small and cache-resident; it is bounded all the same. */
static Edges cedges;

/* The edges into one block, in the order they first occurred: a program that repeats an
 * access pattern repeats the order of a traversal's sources, so the slot after the last match
 * (`hint`) is usually the next one wanted. Otherwise small tables are scanned; from ADJ_INDEXED
 * slots on, an open-addressed index of positions (2 per slot, after the pairs) finds the
 * source, so a block with many sources costs no more per update. Weights saturate at 2^32 - 1. */
#define ADJ_INDEXED 16
typedef struct {
    UInt from, weight;
} Pair;

struct Adj {
    UInt n, cap, hint;
    Pair p[];
};

static inline ULong mix64(ULong k) {
    k ^= k >> 31;
    k *= 0x7fb5d329728ea185ULL;
    return k ^ (k >> 27);
}

static void edges_init(Edges *e, ULong max) {
    e->cap = 1024;
    e->slots = VG_(calloc)("hl.edges", e->cap, sizeof(Slot));
    e->used = 0;
    e->max = max;
    e->floor = 1;
    e->dropped = 0;
}

static void edges_rehash(Edges *e, ULong cap, ULong keep_above) {
    Slot *slots = VG_(calloc)("hl.edges", cap, sizeof(Slot));
    ULong used = 0;
    for (ULong i = 0; i < e->cap; i++) {
        Slot *s = &e->slots[i];
        if (!s->weight) continue;
        if (s->weight <= keep_above) {
            e->dropped += s->weight;
            continue;
        }
        ULong j = mix64(s->key) & (cap - 1);
        while (slots[j].weight) j = (j + 1) & (cap - 1);
        slots[j] = *s;
        used++;
    }
    VG_(free)(e->slots);
    e->slots = slots;
    e->cap = cap;
    e->used = used;
}

static void edges_add(Edges *e, ULong from, ULong to) {
    ULong k = from << 32 | to;
    ULong mask = e->cap - 1;
    ULong j = mix64(k) & mask;
    while (e->slots[j].weight) {
        if (e->slots[j].key == k) {
            e->slots[j].weight++;
            return;
        }
        j = (j + 1) & mask;
    }
    if (e->used >= e->max) {
        /* Full: the new edge would have weight 1, below any floor, so it is dropped too. */
        while (e->used >= e->max) {
            edges_rehash(e, e->cap, e->floor);
            e->floor *= 2;
        }
        e->dropped++;
        return;
    }
    if ((e->used + 1) * 2 > e->cap) {
        edges_rehash(e, e->cap * 2, 0);
        mask = e->cap - 1;
        j = mix64(k) & mask;
        while (e->slots[j].weight) j = (j + 1) & mask;
    }
    e->slots[j].key = k;
    e->slots[j].weight = 1;
    e->used++;
}

/* A block's table with room for `cap` edges, without those of weight <= keep_above. */
static inline UInt *adj_index(struct Adj *a) { return (UInt *)&a->p[a->cap]; }

/* Records that the pair at `pos` has source `from` in an indexed table. */
static inline void adj_index_put(struct Adj *a, UInt from, UInt pos) {
    UInt *idx = adj_index(a), mask = 2 * a->cap - 1;
    UInt j = (UInt)mix64(from) & mask;
    while (idx[j]) j = (j + 1) & mask;
    idx[j] = pos + 1;
}

static struct Adj *adj_rebuild(struct Adj *a, UInt cap, ULong keep_above) {
    SizeT idx_bytes = cap >= ADJ_INDEXED ? 2 * cap * sizeof(UInt) : 0;
    struct Adj *n = VG_(malloc)("hl.adj", sizeof(struct Adj) + cap * sizeof(Pair) + idx_bytes);
    n->n = 0;
    n->cap = cap;
    n->hint = 0;
    if (idx_bytes) VG_(memset)(adj_index(n), 0, idx_bytes);
    for (UInt i = 0; a && i < a->n; i++) {
        if (a->p[i].weight <= keep_above) {
            coacc.dropped += a->p[i].weight;
            coacc.used--;
            continue;
        }
        if (idx_bytes) adj_index_put(n, a->p[i].from, n->n);
        n->p[n->n++] = a->p[i];
    }
    if (a) VG_(free)(a);
    return n;
}

static void coacc_prune(void) {
    for (ULong b = 0; b < n_blocks; b++)
        if (blocks[b].adj) blocks[b].adj = adj_rebuild(blocks[b].adj, blocks[b].adj->cap, coacc.floor);
    coacc.floor *= 2;
}

/* Adds 1 to the edge from -> to. */
static inline void coacc_add(UInt from, ULong to) {
    struct Adj *a = blocks[to].adj;
    if (a) {
        UInt i = a->hint;
        if (i >= a->n || a->p[i].from != from) {
            if (a->cap < ADJ_INDEXED) {
                for (i = 0; i < a->n && a->p[i].from != from; i++) {}
            } else {
                UInt *idx = adj_index(a), mask = 2 * a->cap - 1;
                UInt j = (UInt)mix64(from) & mask;
                while (idx[j] && a->p[idx[j] - 1].from != from) j = (j + 1) & mask;
                i = idx[j] ? idx[j] - 1 : a->n;
            }
        }
        if (i < a->n) {
            if (a->p[i].weight != 0xffffffffU) a->p[i].weight++;
            a->hint = i + 1;
            return;
        }
    }
    if (coacc.used >= coacc.max) {
        while (coacc.used >= coacc.max) coacc_prune();
        coacc.dropped++;
        return;
    }
    if (!a || a->n == a->cap) a = blocks[to].adj = adj_rebuild(a, a ? a->cap * 2 : 4, 0);
    if (a->cap >= ADJ_INDEXED) adj_index_put(a, from, a->n);
    a->p[a->n].from = from;
    a->p[a->n].weight = 1;
    a->n++;
    a->hint = a->n;
    coacc.used++;
}

/* ---- the affinity queue (HALO §4.2) -------------------------------------------------------- */

/* The latest macro-accesses, newest at `q_head - 1`: block id and the bytes of the access that
 * opened the entry. Each entry is at least one byte, so `clo_affinity` entries always cover a
 * window of A bytes. */
static ULong *q_id = NULL;
static UInt *q_bytes = NULL;
static UInt q_cap = 0, q_head = 0, q_len = 0;
static ULong q_last = ~0ULL; /* the newest entry's block */
/* The current traversal's number: a block whose `seen` holds it is counted already (its
 * record is in cache anyway, having just been accessed). */
static UInt q_stamp = 0;

/* HALO's co-allocatability of blocks u and v (of full contexts x and y): no block allocated
 * between them came from x or y, so pools of x and y would have placed them side by side (the
 * chains hold small blocks only: a large one would not have gone to the pool). With
 * a the older: a's next from x is at or after b, and b's previous from y at or before a (for
 * x == y: a and b are consecutive allocations from x). */
static inline Bool co_allocatable(ULong u, ULong v) {
    ULong a = u < v ? u : v, b = u < v ? v : u;
    return blocks[a].next >= b && blocks[b].prev1 <= a + 1;
}

/* An entry opened by a store that initialises its block (no load from the block yet): bit 31
 * of its bytes (an entry covers at most the affinity distance, far below). */
#define Q_INIT 0x80000000u

/* A new macro-access to block v: one traversal of the queue feeds the graphs asked for. `init`:
 * a store before any load from v. Objects only built next to each other are not used together:
 * stores that initialise a block form no context edge, at either end (a list built interleaved
 * with others and then walked alone would otherwise look as affine to them as lists walked
 * together are). The block graph counts every access. */
static void affinity_access(ULong v, UWord sz, Bool init) {
    /* The same macro-access, unless it is v's first load after its initialising stores: that
     * one counts in the context graph (the block graph saw the macro-access already), and the
     * entry becomes an ordinary one. */
    Bool again = False;
    if (v == q_last) {
        UInt newest = q_head ? q_head - 1 : q_cap - 1;
        if (init || !(q_bytes[newest] & Q_INIT)) return;
        q_bytes[newest] &= ~Q_INIT;
        again = True;
    }
    Bool blocks_v = block_graph && !again;
    /* Large objects never form context edges but still take queue space: they are real
     * accesses between the others (HALO's tool leaves them out of its queue). */
    Bool ctx_v = ctx_graph && !init && blocks[v].size <= (SizeT)clo_max_grouped;
    if (blocks_v || ctx_v) {
        if (++q_stamp == 0) {
            for (ULong b = 0; b < n_blocks; b++) blocks[b].seen = blocks[b].cseen = 0;
            q_stamp = 1;
        }
        blocks[v].seen = blocks[v].cseen = q_stamp;
        ULong sum = 0;
        UInt idx = q_head;
        for (UInt k = 0; k < q_len; k++) {
            idx = idx ? idx - 1 : q_cap - 1;
            sum += q_bytes[idx] & ~Q_INIT;
            if (sum >= (ULong)clo_affinity) break;
            UInt u = (UInt)q_id[idx];
            Block *bu = &blocks[u];
            if (blocks_v && bu->seen != q_stamp) { /* not v itself, not counted already */
                bu->seen = q_stamp;
                coacc_add(u, v);
            }
            /* An initialising entry leaves u free to count through an older entry. */
            if (!ctx_v || bu->cseen == q_stamp || (q_bytes[idx] & Q_INIT)) continue;
            bu->cseen = q_stamp;
            if (bu->size <= (SizeT)clo_max_grouped && co_allocatable(u, v)) {
                UInt x = bu->fctx, y = blocks[v].fctx;
                edges_add(&cedges, x < y ? x : y, x < y ? y : x);
            }
        }
    }
    if (again) return;
    q_id[q_head] = v;
    q_bytes[q_head] = (sz ? (UInt)sz : 1) | (init ? Q_INIT : 0);
    q_last = v;
    if (++q_head == q_cap) q_head = 0;
    if (q_len < q_cap) q_len++;
}

/* ---- access helpers (called from instrumented code) --------------------------------------- */

static ULong n_accesses = 0, n_heap = 0;

static inline Bool hit(Addr a, ULong *id) {
    if (a - c_lo < c_span) {
        *id = c_id;
        return True;
    }
    if (!find_block(a, id)) return False;
    c_lo = blocks[*id].addr;
    c_span = blocks[*id].size;
    c_id = *id;
    return True;
}

static VG_REGPARM(2) void hl_read(Addr a, UWord sz) {
    ULong id;
    if (!hit(a, &id)) return;
    n_heap++;
    blocks[id].reads++;
    if (any_graph) affinity_access(id, sz, False);
}

static VG_REGPARM(2) void hl_write(Addr a, UWord sz) {
    ULong id;
    if (!hit(a, &id)) return;
    n_heap++;
    blocks[id].writes++;
    if (any_graph) affinity_access(id, sz, blocks[id].reads == 0);
}

/* An 8-byte store of `v` at `a`: a write, and a friend edge when `v` points into another block. */
static VG_REGPARM(2) void hl_write8(Addr a, UWord v) {
    ULong id;
    if (!hit(a, &id)) return;
    n_heap++;
    blocks[id].writes++;
    if (any_graph) affinity_access(id, 8, blocks[id].reads == 0);
    if (v - heap_lo >= heap_hi - heap_lo) return;
    ULong to;
    if (v - v_lo < v_span) {
        to = v_id;
    } else {
        if (!find_block(v, &to)) return;
        v_lo = blocks[to].addr;
        v_span = blocks[to].size;
        v_id = to;
    }
    if (to != id) edges_add(&friends, id, to);
}

/* ---- instrumentation ---------------------------------------------------------------------- */

static void add_call(IRSB *sb, const HChar *name, void *fn, IRExpr *a, IRExpr *b, IRExpr *guard) {
    IRDirty *di = unsafeIRDirty_0_N(2, name, VG_(fnptr_to_fnentry)(fn), mkIRExprVec_2(a, b));
    if (guard) di->guard = guard;
    addStmtToIRSB(sb, IRStmt_Dirty(di));
}

static void add_read(IRSB *sb, IRExpr *addr, Int sz, IRExpr *guard) {
    add_call(sb, "hl_read", hl_read, addr, mkIRExpr_HWord((HWord)sz), guard);
}

static void add_write(IRSB *sb, IRSB *in, IRExpr *addr, IRExpr *data, IRExpr *guard) {
    IRType ty = typeOfIRExpr(in->tyenv, data);
    if (ty == Ity_I64)
        add_call(sb, "hl_write8", hl_write8, addr, data, guard);
    else
        add_call(sb, "hl_write", hl_write, addr, mkIRExpr_HWord((HWord)sizeofIRType(ty)), guard);
}

/* Adds the accesses counted since the last flush to n_accesses, inline (before each exit of
 * the superblock and at its end, so the total is exact for the paths taken). */
static void flush_count(IRSB *sb, ULong *pending) {
    if (!*pending) return;
    IRTemp t1 = newIRTemp(sb->tyenv, Ity_I64), t2 = newIRTemp(sb->tyenv, Ity_I64);
    IRExpr *counter = mkIRExpr_HWord((HWord)&n_accesses);
    addStmtToIRSB(sb, IRStmt_WrTmp(t1, IRExpr_Load(Iend_LE, Ity_I64, counter)));
    addStmtToIRSB(sb, IRStmt_WrTmp(t2, IRExpr_Binop(Iop_Add64, IRExpr_RdTmp(t1), IRExpr_Const(IRConst_U64(*pending)))));
    addStmtToIRSB(sb, IRStmt_Store(Iend_LE, counter, IRExpr_RdTmp(t2)));
    *pending = 0;
}

static IRSB *hl_instrument(VgCallbackClosure *closure, IRSB *in, const VexGuestLayout *layout, const VexGuestExtents *vge,
                           const VexArchInfo *archinfo_host, IRType gWordTy, IRType hWordTy) {
    (void)closure, (void)layout, (void)vge, (void)archinfo_host, (void)gWordTy, (void)hWordTy;
    IRSB *sb = deepCopyIRSBExceptStmts(in);
    ULong pending = 0;
    for (Int i = 0; i < in->stmts_used; i++) {
        IRStmt *st = in->stmts[i];
        if (!st || st->tag == Ist_NoOp) continue;
        switch (st->tag) {
        case Ist_WrTmp: {
            IRExpr *d = st->Ist.WrTmp.data;
            if (d->tag == Iex_Load) {
                add_read(sb, d->Iex.Load.addr, sizeofIRType(d->Iex.Load.ty), NULL);
                pending++;
            }
            break;
        }
        case Ist_Store:
            add_write(sb, in, st->Ist.Store.addr, st->Ist.Store.data, NULL);
            pending++;
            break;
        case Ist_StoreG: {
            IRStoreG *sg = st->Ist.StoreG.details;
            add_write(sb, in, sg->addr, sg->data, sg->guard);
            pending++;
            break;
        }
        case Ist_LoadG: {
            IRLoadG *lg = st->Ist.LoadG.details;
            IRType wide = Ity_INVALID, loaded = Ity_INVALID;
            typeOfIRLoadGOp(lg->cvt, &wide, &loaded);
            add_read(sb, lg->addr, sizeofIRType(loaded), lg->guard);
            pending++;
            break;
        }
        case Ist_Dirty: {
            IRDirty *d = st->Ist.Dirty.details;
            if (d->mFx != Ifx_None) {
                if (d->mFx == Ifx_Read || d->mFx == Ifx_Modify) add_read(sb, d->mAddr, d->mSize, NULL), pending++;
                if (d->mFx == Ifx_Write || d->mFx == Ifx_Modify)
                    add_call(sb, "hl_write", hl_write, d->mAddr, mkIRExpr_HWord((HWord)d->mSize), NULL), pending++;
            }
            break;
        }
        case Ist_CAS: {
            IRCAS *cas = st->Ist.CAS.details;
            Int sz = sizeofIRType(typeOfIRExpr(in->tyenv, cas->dataLo));
            if (cas->dataHi) sz *= 2;
            add_read(sb, cas->addr, sz, NULL);
            add_call(sb, "hl_write", hl_write, cas->addr, mkIRExpr_HWord((HWord)sz), NULL);
            pending += 2;
            break;
        }
        case Ist_LLSC: {
            IRType ty;
            if (st->Ist.LLSC.storedata == NULL) {
                ty = typeOfIRTemp(in->tyenv, st->Ist.LLSC.result);
                add_read(sb, st->Ist.LLSC.addr, sizeofIRType(ty), NULL);
            } else {
                ty = typeOfIRExpr(in->tyenv, st->Ist.LLSC.storedata);
                add_call(sb, "hl_write", hl_write, st->Ist.LLSC.addr, mkIRExpr_HWord((HWord)sizeofIRType(ty)), NULL);
            }
            pending++;
            break;
        }
        case Ist_Exit:
            flush_count(sb, &pending);
            break;
        default:
            break;
        }
        addStmtToIRSB(sb, st);
    }
    flush_count(sb, &pending);
    return sb;
}

/* ---- heap events ------------------------------------------------------------------------ */

static void *new_block(ThreadId tid, SizeT req, SizeT align, Bool zero) {
    if ((SSizeT)req < 0) return NULL;
    void *p = VG_(cli_malloc)(align, req);
    if (!p) return NULL;
    if (zero) VG_(memset)(p, 0, req);
    if (n_blocks == cap_blocks) {
        cap_blocks = cap_blocks ? cap_blocks * 2 : 4096;
        blocks = VG_(realloc)("hl.blocks", blocks, cap_blocks * sizeof(Block));
    }
    Block *b = &blocks[n_blocks];
    b->addr = (Addr)p;
    b->size = req;
    b->alloc_at = heap_clock++;
    b->free_at = ~0ULL;
    b->reads = b->writes = 0;
    b->adj = NULL;
    b->seen = 0;
    Addr ips[HL_MAX_DEPTH];
    UInt n = alloc_stack(tid, ips, n_modules ? HL_MAX_DEPTH : (UInt)clo_depth);
    b->ctx = context_of(ips, n < (UInt)clo_depth ? n : (UInt)clo_depth);
    b->next = ~0ULL;
    b->prev1 = 0;
    b->fctx = 0;
    if (n_modules) b->fctx = full_context_of(ips, n);
    /* Blocks above the maximum grouped size never enter a group's pool, so they do not
     * separate the small blocks of their context (they are left out of the chains). */
    if (n_modules && req <= (SizeT)clo_max_grouped) {
        FullContext *x = &fctxs[b->fctx];
        if (x->last != ~0ULL) {
            blocks[x->last].next = n_blocks;
            b->prev1 = x->last + 1;
        }
        x->last = n_blocks;
    }
    Live *l = VG_(OSetGen_AllocNode)(live, sizeof(Live));
    l->addr = (Addr)p;
    l->size = req;
    l->id = n_blocks;
    VG_(OSetGen_Insert)(live, l);
    n_blocks++;
    if ((Addr)p < heap_lo) heap_lo = (Addr)p;
    if ((Addr)p + req > heap_hi) heap_hi = (Addr)p + req;
    return p;
}

/* Ends the block at `p`; False when `p` is no live block. */
static Bool end_block(void *p, SizeT *size) {
    Addr a = (Addr)p;
    Live *l = VG_(OSetGen_Lookup)(live, &a);
    if (!l || l->addr != a) return False;
    blocks[l->id].free_at = heap_clock++;
    acache_forget(l->addr, l->size, l->id);
    if (l->id == c_id) c_span = 0;
    if (l->id == v_id) v_span = 0;
    if (size) *size = l->size;
    VG_(OSetGen_FreeNode)(live, VG_(OSetGen_Remove)(live, &a));
    return True;
}

static void *hl_malloc(ThreadId tid, SizeT n) { return new_block(tid, n, VG_(clo_alignment), False); }
static void *hl_memalign(ThreadId tid, SizeT align, SizeT n) { return new_block(tid, n, align, False); }
static void *hl_new_aligned(ThreadId tid, SizeT n, SizeT align) { return new_block(tid, n, align, False); }

static void *hl_calloc(ThreadId tid, SizeT nmemb, SizeT size) {
    if (size && nmemb > (SizeT)-1 / size) return NULL;
    return new_block(tid, nmemb * size, VG_(clo_alignment), True);
}

static void hl_free(ThreadId tid, void *p) {
    (void)tid;
    if (p && end_block(p, NULL)) VG_(cli_free)(p);
}

static void hl_free_aligned(ThreadId tid, void *p, SizeT align) {
    (void)align;
    hl_free(tid, p);
}

static void *hl_realloc(ThreadId tid, void *p, SizeT n) {
    if (!p) return hl_malloc(tid, n);
    Addr a = (Addr)p;
    Live *l = VG_(OSetGen_Lookup)(live, &a);
    if (!l || l->addr != a) return NULL;
    if (n == 0) {
        hl_free(tid, p);
        return NULL;
    }
    SizeT old = l->size;
    void *q = new_block(tid, n, VG_(clo_alignment), False);
    if (!q) return NULL;
    VG_(memcpy)(q, p, old < n ? old : n);
    hl_free(tid, p);
    return q;
}

static SizeT hl_usable_size(ThreadId tid, void *p) {
    (void)tid;
    Addr a = (Addr)p;
    Live *l = VG_(OSetGen_Lookup)(live, &a);
    return l && l->addr == a ? l->size : 0;
}

/* ---- output ----------------------------------------------------------------------------- */

typedef struct {
    UChar *buf;
    SizeT len, cap;
} Out;

static void out_reserve(Out *o, SizeT n) {
    if (o->len + n > o->cap) {
        while (o->len + n > o->cap) o->cap = o->cap ? o->cap * 2 : 1 << 20;
        o->buf = VG_(realloc)("hl.out", o->buf, o->cap);
    }
}

static void out_bytes(Out *o, const void *p, SizeT n) {
    out_reserve(o, n);
    VG_(memcpy)(o->buf + o->len, p, n);
    o->len += n;
}

static void out_u32(Out *o, UInt v) { out_bytes(o, &v, 4); } /* amd64: little-endian */
static void out_u64(Out *o, ULong v) { out_bytes(o, &v, 8); }

static void out_var(Out *o, ULong v) {
    if (o->len + 10 > o->cap) out_reserve(o, 10);
    UChar *b = o->buf + o->len;
    while (v >= 0x80) {
        *b++ = (UChar)(v | 0x80);
        v >>= 7;
    }
    *b++ = (UChar)v;
    o->len = b - o->buf;
}

static void out_str(Out *o, const HChar *s) {
    SizeT n = s ? VG_(strlen)(s) : 0;
    out_var(o, n);
    out_bytes(o, s, n);
}

static Int edge_cmp(const void *a, const void *b) {
    ULong x = *(const ULong *)a, y = *(const ULong *)b;
    return x < y ? -1 : x > y;
}

/* The edges sorted by (from, to), as pairs (packed key, weight). */
static void out_edges(Out *o, Edges *e) {
    ULong *pairs = VG_(malloc)("hl.sort", (e->used ? e->used : 1) * 2 * sizeof(ULong));
    ULong n = 0;
    for (ULong i = 0; i < e->cap; i++)
        if (e->slots[i].weight) pairs[2 * n] = e->slots[i].key, pairs[2 * n + 1] = e->slots[i].weight, n++;
    VG_(ssort)(pairs, n, 2 * sizeof(ULong), edge_cmp);
    for (ULong i = 0; i < n; i++) {
        out_var(o, pairs[2 * i] >> 32);
        out_var(o, pairs[2 * i] & 0xffffffffULL);
        out_var(o, pairs[2 * i + 1]);
    }
    VG_(free)(pairs);
}

/* The co-access edges sorted by (from, to). They are held by `to`: a counting sort by `from`
 * that visits the targets in ascending order leaves each source's targets ascending too. */
static void out_adj(Out *o) {
    ULong *start = VG_(calloc)("hl.sort", n_blocks + 1, sizeof(ULong));
    for (ULong b = 0; b < n_blocks; b++)
        for (UInt i = 0; blocks[b].adj && i < blocks[b].adj->n; i++) start[blocks[b].adj->p[i].from + 1]++;
    for (ULong b = 0; b < n_blocks; b++) start[b + 1] += start[b];
    tl_assert(start[n_blocks] == coacc.used);
    UInt *to = VG_(malloc)("hl.sort", (coacc.used ? coacc.used : 1) * sizeof(UInt));
    UInt *weight = VG_(malloc)("hl.sort", (coacc.used ? coacc.used : 1) * sizeof(UInt));
    for (ULong b = 0; b < n_blocks; b++) {
        struct Adj *a = blocks[b].adj;
        for (UInt i = 0; a && i < a->n; i++) {
            ULong at = start[a->p[i].from]++;
            to[at] = (UInt)b;
            weight[at] = a->p[i].weight;
        }
    }
    /* start[f] is now the end of f's run, which is where f + 1's begins. */
    ULong at = 0;
    for (ULong f = 0; f < n_blocks; f++) {
        for (; at < start[f]; at++) {
            out_var(o, f);
            out_var(o, to[at]);
            out_var(o, weight[at]);
        }
    }
    VG_(free)(start);
    VG_(free)(to);
    VG_(free)(weight);
}

/* A context's key and frames, each frame followed by its depth when `depths` is given. */
static void out_context(Out *o, const Context *x, const UInt *depths) {
    DiEpoch ep = VG_(current_DiEpoch)();
    out_u64(o, x->key);
    out_var(o, x->n);
    for (UInt k = 0; k < x->n; k++) {
        const HChar *fn = NULL;
        /* A return address may be the first byte after its function: name the call. */
        Addr at = x->ips[k] ? x->ips[k] - 1 : 0;
        if (!VG_(get_fnname)(ep, at, &fn)) fn = NULL;
        out_var(o, x->ips[k]);
        out_str(o, x->files[k]);
        out_var(o, x->offs[k]);
        out_str(o, fn);
        if (depths) out_var(o, depths[k]);
    }
}

static Int hl_pid = 0;

static void write_profile(void) {
    Out o = {0};
    XArray *args = VG_(args_for_client);
    Word nargs = args ? VG_(sizeXA)(args) : 0;
    out_bytes(&o, HLA_MAGIC, 8);
    out_u32(&o, HLA_VERSION);
    out_u32(&o, (UInt)clo_depth);
    out_u64(&o, (ULong)clo_affinity);
    out_u64(&o, n_accesses);
    out_u64(&o, n_heap);
    out_u64(&o, n_blocks);
    out_u64(&o, n_ctxs);
    out_u64(&o, coacc.used);
    out_u64(&o, friends.used);
    out_u64(&o, coacc.dropped);
    out_u64(&o, friends.dropped);
    out_u64(&o, 1 + (ULong)nargs);
    out_u64(&o, ctx_graph ? (ULong)clo_max_grouped : 0);
    out_u64(&o, n_modules);
    out_u64(&o, n_fctxs);
    out_u64(&o, cedges.used);
    out_u64(&o, cedges.dropped);
    tl_assert(o.len == HLA_HEADER_FIXED);
    out_str(&o, VG_(args_the_exename));
    for (Word i = 0; i < nargs; i++) out_str(&o, *(HChar **)VG_(indexXA)(args, i));
    for (UInt m = 0; m < n_modules; m++) out_str(&o, clo_modules[m]);
    for (UInt c = 0; c < n_ctxs; c++) out_context(&o, &ctxs[c], NULL);
    for (UInt c = 0; c < n_fctxs; c++) out_context(&o, &fctxs[c].c, fctxs[c].depths);
    ULong prev = 0;
    for (ULong b = 0; b < n_blocks; b++) {
        Block *x = &blocks[b];
        out_var(&o, x->size);
        out_var(&o, x->ctx);
        out_var(&o, x->alloc_at - prev);
        out_var(&o, x->free_at == ~0ULL ? 0 : x->free_at - x->alloc_at);
        out_var(&o, x->reads);
        out_var(&o, x->writes);
        if (n_fctxs) out_var(&o, x->fctx);
        prev = x->alloc_at;
    }
    out_adj(&o);
    out_edges(&o, &friends);
    out_edges(&o, &cedges);
    out_bytes(&o, HLA_END, 8);
    ULong h = 0xcbf29ce484222325ULL;
    for (SizeT i = 0; i < o.len; i++) h = (h ^ o.buf[i]) * 0x100000001b3ULL;
    out_u64(&o, h);

    SysRes r = VG_(open)(clo_out, VKI_O_CREAT | VKI_O_WRONLY | VKI_O_TRUNC, 0644);
    if (sr_isError(r)) {
        VG_(umsg)("heaplab: cannot create %s (error %lu)\n", clo_out, sr_Err(r));
        return;
    }
    Int fd = (Int)sr_Res(r);
    SizeT done = 0;
    while (done < o.len) {
        Int w = VG_(write)(fd, o.buf + done, o.len - done);
        if (w <= 0) {
            VG_(umsg)("heaplab: cannot write %s\n", clo_out);
            break;
        }
        done += w;
    }
    VG_(close)(fd);
    VG_(free)(o.buf);
}

/* ---- tool lifecycle ----------------------------------------------------------------------- */

static Bool hl_process_cmd_line_option(const HChar *arg) {
    const HChar *module, *graph;
    if VG_STR_CLO (arg, "--hl-out", clo_out) {
    } else if VG_BINT_CLO (arg, "--hl-depth", clo_depth, 1, HL_MAX_DEPTH) {
    } else if VG_BINT_CLO (arg, "--hl-affinity", clo_affinity, 1, 1 << 20) {
    } else if VG_BINT_CLO (arg, "--hl-max-edges", clo_max_edges, 1024, 1LL << 32) {
    } else if VG_BINT_CLO (arg, "--hl-max-grouped", clo_max_grouped, 0, 1LL << 40) {
    } else if VG_STR_CLO (arg, "--hl-module", module) {
        if (n_modules == HL_MAX_MODULES) VG_(fmsg_bad_option)(arg, "heaplab: at most %d context modules\n", HL_MAX_MODULES);
        clo_modules[n_modules] = module;
        module_hash[n_modules++] = fnv1a(module);
    } else if VG_STR_CLO (arg, "--hl-graph", graph) {
        block_graph = VG_(strcmp)(graph, "blocks") == 0 || VG_(strcmp)(graph, "both") == 0;
        ctx_graph = VG_(strcmp)(graph, "contexts") == 0 || VG_(strcmp)(graph, "both") == 0;
        if (!block_graph && !ctx_graph && VG_(strcmp)(graph, "none") != 0)
            VG_(fmsg_bad_option)(arg, "heaplab: --hl-graph takes blocks, contexts, both or none\n");
    } else
        return VG_(replacement_malloc_process_cmd_line_option)(arg);
    return True;
}

static void hl_print_usage(void) {
    VG_(printf)("    --hl-out=FILE           the .hlaccess profile to write [required]\n"
                "    --hl-depth=N            frames per allocation context [1]\n"
                "    --hl-affinity=A         affinity distance in bytes [128]\n"
                "    --hl-max-edges=N        edges held per graph [4194304]\n"
                "    --hl-module=NAME        a context module's file name (repeatable; the executable first)\n"
                "    --hl-graph=WHICH        blocks, contexts, both or none [blocks]\n"
                "    --hl-max-grouped=BYTES  larger blocks form no context edges [4096]\n");
}

static void hl_print_debug_usage(void) { VG_(printf)("    (none)\n"); }

static void hl_post_clo_init(void) {
    if (!clo_out) VG_(fmsg_bad_option)("--hl-out", "heaplab: --hl-out=FILE is required\n");
    if (ctx_graph && !n_modules) VG_(fmsg_bad_option)("--hl-graph", "heaplab: a context graph needs --hl-module\n");
    any_graph = block_graph || ctx_graph;
    edges_init(&cedges, (ULong)clo_max_edges);
    hl_pid = VG_(getpid)();
    q_cap = (UInt)clo_affinity;
    q_id = VG_(malloc)("hl.q", q_cap * sizeof(ULong));
    q_bytes = VG_(malloc)("hl.q", q_cap * sizeof(UInt));
    coacc.max = (ULong)clo_max_edges;
    coacc.floor = 1;
    edges_init(&friends, (ULong)clo_max_edges);
}

static void hl_fini(Int exitcode) {
    (void)exitcode;
    /* A fork child runs this too: only the profiled process writes the file. */
    if (VG_(getpid)() != hl_pid) return;
    write_profile();
}

static void hl_pre_clo_init(void) {
    VG_(details_name)("heaplab");
    VG_(details_version)("1");
    VG_(details_description)("heaplab's heap access profiler");
    VG_(details_copyright_author)("heaplab authors");
    VG_(details_bug_reports_to)("heaplab");
    VG_(details_avg_translation_sizeB)(600);
    VG_(basic_tool_funcs)(hl_post_clo_init, hl_instrument, hl_fini);
    VG_(needs_command_line_options)(hl_process_cmd_line_option, hl_print_usage, hl_print_debug_usage);
    VG_(needs_malloc_replacement)(hl_malloc, hl_malloc, hl_new_aligned, hl_malloc, hl_new_aligned, hl_memalign, hl_calloc, hl_free, hl_free,
                                  hl_free_aligned, hl_free, hl_free_aligned, hl_realloc, hl_usable_size, 0);
    live = VG_(OSetGen_Create)(offsetof(Live, addr), live_cmp, VG_(malloc), "hl.live", VG_(free));
}

VG_DETERMINE_INTERFACE_VERSION(hl_pre_clo_init)
