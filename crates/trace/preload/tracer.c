/* tracer.c — the LD_PRELOAD tracer behind `heaplab trace`: the client of the native layer
 * (native/interpose.h) that records every call it is handed into a `.hltrace` file.
 *
 * Owns: the trace file (creation, the root name, growth, its mappings), the per-thread windows
 * and the event encoder, timestamps, the trailer, the configuration (HEAPLAB_TRACE), and what
 * fork, exec, exit and crashes mean for a trace. Interposition itself, the bootstrap arena and
 * the re-entrancy guard are the layer's; call-site ids are native/sites.c's. The file format is
 * specified in crates/trace/src/format.rs; its numbers (HLT_*) come from the generated
 * heaplab_format.h, and the encoder here and the decoder there change together (bump VERSION).
 *
 * Design in one paragraph. The trace file is written through MAP_SHARED mappings of the file
 * itself, so every committed event is in the page cache the moment it is stored: a crash, a
 * SIGKILL, exec or _exit loses nothing that was committed, and no flush is ever needed. Each
 * thread appends to its own "window" (a record of 4-64 KiB reserved under a lock); an event is
 * committed by storing its header byte last, so a torn event reads as the end of the window.
 * A global atomic sequence number gives the total order across threads; windows carry the
 * counter value at reservation ("floor"), which is monotone in file order, so the reader can
 * merge windows by sequence with bounded memory. The tracer never calls the traced malloc:
 * its memory is mmap'd or static, and the layer's guard sends the tracer's own and nested
 * calls straight to the real functions. The tracer's own mappings go through raw syscalls
 * (sys_mmap, sys_munmap), never through the interposed mmap, so they are neither recorded nor
 * re-entered.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h> /* rename() only: the tracer never uses stdio's buffers */
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "interpose.h"
#include "sites.h"


/* The format's numbers (HLT_*) are generated from crates/trace/src/format/codes.rs. */
#include "heaplab_format.h"

/* The layer's operation codes are the format's, so calls are encoded without translation. */
_Static_assert(HL_MALLOC == HLT_OP_MALLOC && HL_FREE == HLT_OP_FREE && HL_CALLOC == HLT_OP_CALLOC &&
                   HL_REALLOC == HLT_OP_REALLOC && HL_REALLOCARRAY == HLT_OP_REALLOCARRAY &&
                   HL_POSIX_MEMALIGN == HLT_OP_POSIX_MEMALIGN && HL_ALIGNED_ALLOC == HLT_OP_ALIGNED_ALLOC &&
                   HL_MEMALIGN == HLT_OP_MEMALIGN && HL_VALLOC == HLT_OP_VALLOC && HL_PVALLOC == HLT_OP_PVALLOC,
               "interpose.h's hl_op must equal the .hltrace operation codes");
_Static_assert(HL_MMAP == HLT_PAGE_MMAP && HL_MUNMAP == HLT_PAGE_MUNMAP && HL_MREMAP == HLT_PAGE_MREMAP &&
                   HL_MPROTECT == HLT_PAGE_MPROTECT && HL_BRK == HLT_PAGE_BRK && HL_SBRK == HLT_PAGE_SBRK,
               "interpose.h's hl_page_op must equal the .hltrace page-event kinds");
_Static_assert(sizeof HLT_MAGIC == 8 && sizeof HLT_TRAILER_END == 7, "magic sizes");

#define CLOCK_SHIFT 10          /* timestamps in units of 1024 ns */
#define SEG_SIZE (1u << 20)     /* file mapped in 1 MiB segments */
#define MAX_SEGS 65536          /* so at most 64 GiB of trace */
#define GROW_STEP (64u << 10)   /* the file is extended 64 KiB at a time */
#define WIN_MIN 1024u
#define WIN_MAX 65536u
#define EV_MAX 96               /* an encoded call event never exceeds this */

/* ---- per-thread state (initial-exec TLS: no allocation on first touch) ---- */
struct tstate {
    unsigned char *win; /* payload of the current window, NULL when none */
    uint32_t pos, cap;
    uint64_t last_seq, last_ts;
    uint64_t last_ptr;
    uint64_t win_off;   /* file offset of the current window's header */
    uint64_t win_ns, win_tsc, tsc_mult; /* clock base of the window (see event_ns) */
    uint32_t seg;       /* segment holding the current window */
    uint32_t tid;
    uint32_t next_size;
    int registered;     /* thread-exit destructor armed */
};
static __thread struct tstate T __attribute__((tls_model("initial-exec")));

/* ---- process-wide tracing state ---- */
static atomic_uint_fast64_t seq_ctr;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int fd = -1;
static dev_t file_dev;
static ino_t file_ino;
static char out_path[4096];        /* this image's trace file */
static char stem[4096];            /* base for derived names (fork children, other images) */
static char final_path[4096];      /* where the root file is renamed once tracing has started */
static char only[1024];            /* comma-separated program names to trace; empty = all */
static uint64_t trailer_off;       /* where the trailer record is, while trailer_done */
static uint32_t trailer_seg = UINT32_MAX;
static uint64_t file_end;          /* bytes reserved so far */
static uint64_t file_size;         /* current length of the file */
static int stack_depth;
static int trailer_done;
static pid_t trace_pid;
static struct seg { unsigned char *base; uint32_t refs; } segs[MAX_SEGS];
static uint32_t cur_seg = UINT32_MAX;
static pthread_key_t exit_key;
static int exit_key_ok;

/* ---- encoding and file names, without allocating ---- */
static inline unsigned char *put_varint(unsigned char *p, uint64_t v) {
    while (v >= 0x80) {
        *p++ = (unsigned char)v | 0x80;
        v >>= 7;
    }
    *p++ = (unsigned char)v;
    return p;
}
static inline uint64_t zz(int64_t d) { return ((uint64_t)d << 1) ^ (uint64_t)(d >> 63); }
static inline uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
/* Timestamps. clock_gettime costs ~20 ns even through the vDSO, the largest part of an event's
 * cost, so on x86 with an invariant TSC events read the TSC and convert it to monotonic ns from
 * their window's base (both clocks read when the window started). The conversion factor is
 * measured against CLOCK_MONOTONIC from the process start, once a millisecond has passed, and
 * refined at every window; until then, and elsewhere, events read the clock itself. */
static int use_tsc;
static uint64_t tsc0, mono0;
static _Atomic uint64_t tsc_mult; /* ns per TSC tick, 32.32 fixed point; 0 = not known yet */
#if defined(__x86_64__) || defined(__i386__)
static inline uint64_t tsc(void) { return __builtin_ia32_rdtsc(); }
#else
static inline uint64_t tsc(void) { return 0; }
#endif
#define TSC_REBASE (1ull << 30) /* re-read the clock after this many ticks in one window */

static void put32(unsigned char *p, uint32_t v) { memcpy(p, &v, 4); }
static void put64(unsigned char *p, uint64_t v) { memcpy(p, &v, 8); }
static size_t cat(char *dst, size_t cap, size_t at, const char *s) {
    while (*s && at + 1 < cap) dst[at++] = *s++;
    dst[at] = 0;
    return at;
}
static size_t cat_u(char *dst, size_t cap, size_t at, uint64_t v) {
    char b[24];
    int n = 0;
    do { b[n++] = (char)('0' + v % 10); v /= 10; } while (v);
    while (n && at + 1 < cap) dst[at++] = b[--n];
    dst[at] = 0;
    return at;
}
static uint32_t gettid_(void) { return (uint32_t)syscall(SYS_gettid); }
/* ---- the trace file ---- */

/* Keeps our descriptor valid even if the program closed it or dup'ed something over it: the
 * descriptor lives at 1000 or above and is checked against the file's identity before use. */
static int ensure_fd(void) {
    struct stat st;
    if (fd >= 0 && fstat(fd, &st) == 0 && st.st_dev == file_dev && st.st_ino == file_ino) return 0;
    int f = open(out_path, O_RDWR | O_CLOEXEC);
    if (f < 0) return -1;
    if (fstat(f, &st) != 0 || st.st_dev != file_dev || st.st_ino != file_ino) {
        close(f); /* the file was replaced or deleted: stop rather than write elsewhere */
        return -1;
    }
    int hi = fcntl(f, F_DUPFD_CLOEXEC, 1000);
    if (hi >= 0) {
        close(f);
        f = hi;
    }
    fd = f;
    return 0;
}

/* Makes the file at least `need` bytes long. fallocate reserves real blocks, so a full disk is
 * an error here instead of a SIGBUS in the traced program later. */
static int grow(uint64_t need) {
    if (need <= file_size) return 0;
    /* After the trailer only stragglers (other libraries' destructors) remain: grow exactly. */
    uint64_t step = file_size < 4 * GROW_STEP ? 4096 : GROW_STEP; /* small processes stay small */
    uint64_t target = trailer_done ? need : (need + step - 1) / step * step;
    if (ensure_fd() != 0) return -1;
    int r = fallocate(fd, 0, (off_t)file_size, (off_t)(target - file_size));
    if (r != 0 && (errno == EOPNOTSUPP || errno == ENOSYS)) r = ftruncate(fd, (off_t)target);
    if (r != 0) return -1;
    file_size = target;
    return 0;
}

static void stop_tracing(const char *why) {
    if (atomic_exchange(&hl_active, 0)) {
        hl_say("heaplab trace: ");
        hl_say(why);
        hl_say("; tracing stopped (the trace so far is readable)\n");
    }
}

/* Address of file offset `off`, which must lie in segment `s`. */
static inline unsigned char *at(uint32_t s, uint64_t off) { return segs[s].base + (off - (uint64_t)s * SEG_SIZE); }

static void seg_release(uint32_t s) {
    if (s >= MAX_SEGS || !segs[s].base) return;
    if (--segs[s].refs == 0) {
        /* Unmapping finished segments keeps the trace's own pages out of the program's RSS. */
        sys_munmap(segs[s].base, SEG_SIZE);
        segs[s].base = NULL;
    }
}

static int map_seg(uint32_t s) {
    if (s >= MAX_SEGS) return -1;
    if (ensure_fd() != 0) return -1;
    void *m = sys_mmap(NULL, SEG_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)s * SEG_SIZE);
    if (m == MAP_FAILED) return -1;
    segs[s].base = m;
    segs[s].refs = 1; /* the carving reference, dropped when carving moves on */
    return 0;
}

/* Reserves `size` bytes (a multiple of 32, at most SEG_SIZE) in the file and returns the
 * segment holding them. Caller holds the lock. Returns UINT32_MAX on failure. */
static uint32_t reserve(uint64_t size, uint64_t *off_out) {
    uint32_t s = (uint32_t)(file_end / SEG_SIZE);
    uint64_t room = (uint64_t)(s + 1) * SEG_SIZE - file_end;
    if (cur_seg != s || room < size) {
        if (cur_seg == s && room < size) {
            /* Windows never straddle segments: pad the rest of this one. */
            if (grow(file_end + room) != 0) return UINT32_MAX;
            unsigned char *h = at(s, file_end);
            memset(h, 0, HLT_RECORD_HEADER);
            put32(h + 4, (uint32_t)(room - HLT_RECORD_HEADER));
            __atomic_store_n(h, (unsigned char)HLT_KIND_PADDING, __ATOMIC_RELEASE);
            file_end += room;
            s++;
        }
        if (map_seg(s) != 0) return UINT32_MAX;
        if (cur_seg != UINT32_MAX) seg_release(cur_seg);
        cur_seg = s;
    }
    if (grow(file_end + size) != 0) return UINT32_MAX;
    *off_out = file_end;
    file_end += size;
    return s;
}

/* Gives back the unused tail of the thread's window when it is the last record in the file,
 * and drops the thread's hold on its segment. Caller holds the lock. */
static void close_window(struct tstate *t) {
    if (!t->win) return;
    uint64_t used = ((uint64_t)t->pos + 31) & ~(uint64_t)31;
    if (t->win_off + HLT_RECORD_HEADER + t->cap == file_end && used < t->cap) {
        put32(t->win - HLT_RECORD_HEADER + 4, (uint32_t)used);
        file_end = t->win_off + HLT_RECORD_HEADER + used;
    }
    seg_release(t->seg);
    t->win = NULL;
}

/* Starts a new window for thread `t` with room for at least `need` payload bytes. */
static __attribute__((noinline)) unsigned char *new_window(struct tstate *t, uint32_t need) {
    if (!atomic_load(&hl_active)) return NULL;
    if (!t->tid) t->tid = gettid_();
    if (!t->registered && exit_key_ok) {
        t->registered = 1;
        pthread_setspecific(exit_key, (void *)1);
    }
    pthread_mutex_lock(&lock);
    if (!atomic_load(&hl_active)) {
        pthread_mutex_unlock(&lock);
        return NULL;
    }
    close_window(t);
    uint32_t size = t->next_size && !trailer_done ? t->next_size : WIN_MIN;
    if (size < WIN_MAX) t->next_size = size * 2;
    uint64_t want = ((uint64_t)need + HLT_RECORD_HEADER + 31) & ~(uint64_t)31;
    if (want > size) size = (uint32_t)want;
    uint64_t off;
    uint32_t s = reserve(size, &off);
    if (s == UINT32_MAX) {
        pthread_mutex_unlock(&lock);
        stop_tracing("cannot extend the trace file (disk full or file removed?)");
        return NULL;
    }
    segs[s].refs++;
    unsigned char *h = at(s, off);
    uint64_t floor = atomic_load(&seq_ctr);
    uint64_t wns = now_ns(), wtsc = use_tsc ? tsc() : 0;
    if (use_tsc && wns - mono0 >= 1000000 && wtsc > tsc0)
        atomic_store(&tsc_mult, (uint64_t)(((__uint128_t)(wns - mono0) << 32) / (wtsc - tsc0)));
    t->win_ns = wns;
    t->win_tsc = wtsc;
    t->tsc_mult = atomic_load(&tsc_mult);
    uint64_t ts = wns >> CLOCK_SHIFT;
    memset(h, 0, HLT_RECORD_HEADER);
    h[1] = stack_depth ? HLT_RECORD_SITES : 0;
    put32(h + 4, size - HLT_RECORD_HEADER);
    put32(h + 8, t->tid);
    put64(h + 16, floor);
    put64(h + 24, ts);
    __atomic_store_n(h, (unsigned char)HLT_KIND_EVENTS, __ATOMIC_RELEASE);
    t->win = h + HLT_RECORD_HEADER;
    t->pos = 0;
    t->cap = size - HLT_RECORD_HEADER;
    t->win_off = off;
    t->seg = s;
    t->last_seq = floor - 1; /* the first event's delta is counted from the floor */
    t->last_ts = ts;
    t->last_ptr = 0;
    pthread_mutex_unlock(&lock);
    return t->win;
}

/* Room for `need` bytes in the thread's window. Must be called BEFORE the event's sequence
 * number is taken: that is what makes window floors a lower bound of their events. */
static inline unsigned char *room(struct tstate *t, uint32_t need) {
    if (HL_LIKELY(t->win && t->pos + need <= t->cap)) return t->win + t->pos;
    return new_window(t, need);
}

static inline uint64_t next_seq(void) { return atomic_fetch_add_explicit(&seq_ctr, 1, memory_order_relaxed); }

/* Monotonic ns of an event of thread `t` (see the timestamp note above). */
static inline uint64_t event_ns(struct tstate *t) {
    if (!t->tsc_mult) return now_ns();
    uint64_t d = tsc() - t->win_tsc;
    if (HL_UNLIKELY((int64_t)d < 0)) d = 0; /* another CPU's TSC a little behind */
    if (HL_UNLIKELY(d > TSC_REBASE)) {
        t->win_ns = now_ns();
        t->win_tsc = tsc();
        return t->win_ns;
    }
    return t->win_ns + (uint64_t)(((__uint128_t)d * t->tsc_mult) >> 32);
}

/* ---- call sites (with --stack-depth) ---- */

/* Room a site definition may take: header byte, id, hash, count, frames (10 bytes a varint). */
#define SITE_DEF_MAX (16 + 10 * (HL_MAX_DEPTH + 4))

/* Returns the site id of the call that returns to `ret` (0 = unknown) and, when the site is new,
 * encodes its definition in `def` (setting `*deflen`). */
static uint32_t site_of(void *ret, unsigned char *def, uint32_t *deflen) {
    struct hl_site site;
    uint32_t id = hl_site_of(ret, &site);
    if (site.is_new) {
        unsigned char *q = def + 1;
        q = put_varint(q, id);
        q = put_varint(q, site.hash);
        q = put_varint(q, (uint64_t)site.n);
        for (int i = 0; i < site.n; i++) q = put_varint(q, (uint64_t)(uintptr_t)site.frames[i]);
        def[0] = HLT_OP_SITE;
        *deflen = (uint32_t)(q - def);
    }
    return id;
}

/* Copies a site definition to the window at `w` and commits it like an event (header byte
 * last); returns where the event that uses it goes. */
static inline unsigned char *put_site_def(struct tstate *t, unsigned char *w, const unsigned char *def, uint32_t deflen) {
    memcpy(w + 1, def + 1, deflen - 1);
    __atomic_store_n(w, def[0], __ATOMIC_RELEASE);
    t->pos += deflen;
    return w + deflen;
}

/* ---- encoding one call ---- */
struct ev {
    int op;
    uint64_t in, out;      /* input and result pointers (0 = NULL) */
    uint64_t size, extra;  /* size; nmemb (calloc, reallocarray) or alignment */
    uint64_t usable;       /* malloc_usable_size of the result */
    uint64_t seq, seq2;    /* seq2: realloc's allocation half */
};

static inline int is_alloc_op(int op) { return op != HLT_OP_FREE; }

/* Encodes the sequence and timestamp deltas of an event at `seq` (its last sequence number
 * `last`) at `p`, adding their flags to `*h`. Shared by every event kind. */
static inline __attribute__((always_inline)) unsigned char *put_order(struct tstate *t, unsigned char *p, unsigned *h, uint64_t seq, uint64_t last) {
    uint64_t sd = seq - t->last_seq - 1;
    if (sd) {
        *h |= HLT_F_SEQ;
        p = put_varint(p, sd);
    }
    t->last_seq = last;
    uint64_t ts = event_ns(t) >> CLOCK_SHIFT;
    if (ts < t->last_ts) ts = t->last_ts; /* never backwards within a window */
    if (ts != t->last_ts) {
        *h |= HLT_F_TS;
        p = put_varint(p, ts - t->last_ts);
        t->last_ts = ts;
    }
    return p;
}

/* Encodes `e` at `w` (which has EV_MAX bytes of room) and commits it by storing the header
 * byte last. */
static inline void commit(struct tstate *t, unsigned char *w, const struct ev *e, uint32_t site) {
    unsigned h = (unsigned)e->op;
    unsigned char *p = put_order(t, w + 1, &h, e->seq, e->op == HLT_OP_REALLOC || e->op == HLT_OP_REALLOCARRAY ? e->seq2 : e->seq);
    /* Pointer deltas in 16-byte units unless some delta is not a multiple of 16. */
    uint64_t base = t->last_ptr;
    int64_t d_in = (int64_t)(e->in - base);
    uint64_t base2 = e->in ? e->in : base;
    int64_t d_out = (int64_t)(e->out - base2);
    int raw = (e->in && (d_in & 15)) || (e->out && (d_out & 15));
    if (raw) h |= HLT_F_RAW;
    int sh = raw ? 0 : 4;
    switch (e->op) {
    case HLT_OP_FREE: /* free(NULL) never gets here */
        p = put_varint(p, zz(d_in >> sh));
        break;
    case HLT_OP_REALLOC:
    case HLT_OP_REALLOCARRAY:
        if (!e->in) h |= HLT_F_NULL;
        else p = put_varint(p, zz(d_in >> sh));
        if (e->op == HLT_OP_REALLOCARRAY) p = put_varint(p, e->extra);
        p = put_varint(p, e->size);
        p = put_varint(p, e->seq2 - e->seq - 1);
        p = put_varint(p, e->out ? zz(d_out >> sh) + 1 : 0);
        if (e->out) {
            uint64_t req = e->op == HLT_OP_REALLOC ? e->size : e->size * e->extra;
            p = put_varint(p, zz((int64_t)(e->usable - req)));
        }
        break;
    default: {
        uint64_t req = e->size;
        if (e->op == HLT_OP_CALLOC || e->op == HLT_OP_POSIX_MEMALIGN || e->op == HLT_OP_ALIGNED_ALLOC || e->op == HLT_OP_MEMALIGN)
            p = put_varint(p, e->extra);
        if (e->op == HLT_OP_CALLOC) req = e->size * e->extra;
        p = put_varint(p, e->size);
        if (!e->out) h |= HLT_F_NULL;
        else {
            p = put_varint(p, zz(d_out >> sh));
            p = put_varint(p, zz((int64_t)(e->usable - req)));
        }
    }
    }
    if (stack_depth && is_alloc_op(e->op)) p = put_varint(p, site);
    if (e->out) t->last_ptr = e->out;
    else if (e->in) t->last_ptr = e->in;
    __atomic_store_n(w, (unsigned char)h, __ATOMIC_RELEASE);
    t->pos += (uint32_t)(p - w);
}

/* Records an allocation-type call that has already returned (its sequence number is taken
 * now, after the allocator handed out the block). */
void hl_on_alloc(int op, void *out, size_t size, size_t extra, void *ret) {
    struct tstate *t = &T;
    unsigned char def[SITE_DEF_MAX];
    uint32_t deflen = 0, site = 0;
    if (stack_depth) site = site_of(ret, def, &deflen);
    unsigned char *w = room(t, EV_MAX + deflen);
    if (!w) return;
    if (deflen) w = put_site_def(t, w, def, deflen); /* the site definition goes first */
    struct ev e = {.op = op, .out = (uintptr_t)out, .size = size, .extra = extra};
    e.seq = next_seq();
    e.usable = e.out ? hl_real.usable((void *)(uintptr_t)e.out) : 0;
    commit(t, w, &e, site);
}

/* The sequence number is taken before the block is released (see the layer's free). */
void hl_on_free(void *p) {
    struct tstate *t = &T;
    unsigned char *w = room(t, EV_MAX);
    if (w) {
        struct ev e = {.op = HLT_OP_FREE, .in = (uintptr_t)p};
        e.seq = next_seq();
        commit(t, w, &e, 0);
    }
}

/* realloc and reallocarray take two sequence numbers: one before the call (the release) and
 * one after it (the allocation). The begin hook reserves the window slot, takes the first and
 * writes a new site's definition uncommitted; the end hook commits the definition and then the
 * event, as one call did before the layer was split out. */
void hl_on_realloc_begin(struct hl_call *c) {
    struct tstate *t = &T;
    unsigned char def[SITE_DEF_MAX];
    uint32_t deflen = 0, site = 0;
    if (stack_depth) site = site_of(c->ret, def, &deflen);
    unsigned char *w = room(t, EV_MAX + deflen);
    c->hook[0] = next_seq();
    /* The real realloc runs guarded: nothing else writes to this thread's window meanwhile. */
    if (w && deflen) memcpy(w + 1, def + 1, deflen - 1);
    c->hook[1] = (uintptr_t)w;
    c->hook[2] = (uint64_t)site | (uint64_t)deflen << 32;
}

void hl_on_realloc_end(struct hl_call *c) {
    struct tstate *t = &T;
    struct ev e = {.op = c->op, .in = c->in, .out = c->out, .size = c->size, .extra = c->extra, .seq = c->hook[0]};
    e.seq2 = next_seq();
    e.usable = e.out ? hl_real.usable((void *)(uintptr_t)e.out) : 0;
    unsigned char *w = (unsigned char *)(uintptr_t)c->hook[1];
    if (!w) return;
    uint32_t deflen = (uint32_t)(c->hook[2] >> 32);
    if (deflen) {
        __atomic_store_n(w, (unsigned char)HLT_OP_SITE, __ATOMIC_RELEASE);
        t->pos += deflen;
        w += deflen;
    }
    commit(t, w, &e, (uint32_t)c->hook[2]);
}

/* ---- initialisation ---- */

/* Whether `name` (a path or a bare name) names one of the programs in `only`: its last path
 * component equals an entry, or is the entry followed by a version suffix (python3.11 for
 * python3). */
static int name_matches(const char *name, size_t len) {
    const char *b = name;
    for (size_t i = 0; i < len; i++)
        if (name[i] == '/') b = name + i + 1;
    size_t bl = len - (size_t)(b - name);
    for (const char *e = only; *e;) {
        const char *c = strchr(e, ',');
        size_t el = c ? (size_t)(c - e) : strlen(e);
        if (el && el <= bl && memcmp(b, e, el) == 0) {
            int ok = el == bl;
            for (size_t i = el; !ok && i < bl && ((b[i] >= '0' && b[i] <= '9') || b[i] == '.' || b[i] == '-'); i++) ok = i + 1 == bl;
            if (ok) return 1;
        }
        e = c ? c + 1 : e + el;
    }
    return 0;
}

/* Whether this image is to be traced: always without --only, else when its executable or its
 * argv[0] names one of the programs (an interpreter's executable is often python3.11 while
 * argv[0] says python3). */
static int wanted(void) {
    if (!*only) return 1;
    char exe[1024];
    ssize_t el = readlink("/proc/self/exe", exe, sizeof exe);
    if (el > 0 && name_matches(exe, (size_t)el)) return 1;
    char cmd[1024];
    size_t cl = hl_read_file("/proc/self/cmdline", cmd, sizeof cmd);
    return cl > 0 && name_matches(cmd, strnlen(cmd, cl));
}

/* Creates this image's trace file and writes the header. Caller holds the lock (or is the
 * only thread). `root_path` is tried first (exclusively); otherwise a name derived from the
 * stem and the pid is used: STEM.PID.hltrace, then STEM.PID.K.hltrace on collision. */
static int open_trace(const char *root_path, int origin, uint32_t parent_pid, uint64_t parent_seq) {
    trace_pid = (pid_t)syscall(SYS_getpid);
    int f = -1;
    if (root_path && *root_path) {
        /* Only the first traced image gets the root name. It is claimed by creating ROOT
         * exclusively (heaplab removes it after the run). The trace itself is then created
         * under a second temporary name and renamed to its final name at once, so it is at the path the user gave from the start, even when
         * heaplab dies before the program ends; a later image cannot claim the name again. */
        int claim = open(root_path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (claim >= 0) {
            char tmp2[4096 + 2];
            size_t n = cat(tmp2, sizeof tmp2, 0, root_path);
            cat(tmp2, sizeof tmp2, n, "w");
            f = *final_path ? open(tmp2, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644) : -1;
            if (f >= 0 && rename(tmp2, final_path) == 0) {
                close(claim);
                cat(out_path, sizeof out_path, 0, final_path);
            } else {
                if (f >= 0) {
                    close(f);
                    unlink(tmp2);
                }
                f = claim; /* written under the claimed name; heaplab renames it afterwards */
                cat(out_path, sizeof out_path, 0, root_path);
            }
            origin = HLT_ORIGIN_ROOT;
        }
    }
    for (unsigned k = 0; f < 0 && k < 1000; k++) {
        size_t n = cat(out_path, sizeof out_path, 0, stem);
        n = cat(out_path, sizeof out_path, n, ".");
        n = cat_u(out_path, sizeof out_path, n, (uint64_t)trace_pid);
        if (k) {
            n = cat(out_path, sizeof out_path, n, ".");
            n = cat_u(out_path, sizeof out_path, n, k);
        }
        cat(out_path, sizeof out_path, n, ".hltrace");
        f = open(out_path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (f < 0 && errno != EEXIST) break;
    }
    if (f < 0) {
        hl_say("heaplab trace: cannot create the trace file; this process is not traced\n");
        return -1;
    }
    int hi = fcntl(f, F_DUPFD_CLOEXEC, 1000);
    if (hi >= 0) {
        close(f);
        f = hi;
    }
    struct stat st;
    fstat(f, &st);
    fd = f;
    file_dev = st.st_dev;
    file_ino = st.st_ino;
    file_size = 0;
    file_end = 0;
    cur_seg = UINT32_MAX;

    char exe[1024];
    ssize_t el = readlink("/proc/self/exe", exe, sizeof exe);
    if (el < 0) el = 0;
    char cmd[2048];
    size_t cl = hl_read_file("/proc/self/cmdline", cmd, sizeof cmd);
    uint64_t hlen = (HLT_HEADER_FIXED + 2 + (uint64_t)el + 2 + cl + 31) & ~(uint64_t)31;
    uint64_t off;
    if (reserve(hlen, &off) == UINT32_MAX || off != 0) {
        hl_say("heaplab trace: cannot map the trace file; this process is not traced\n");
        return -1;
    }
    unsigned char *h = at(cur_seg, 0);
    memset(h, 0, hlen);
    memcpy(h + 8, &(uint16_t){HLT_VERSION}, 2);
    memcpy(h + 10, &(uint16_t){(uint16_t)(stack_depth ? 1 : 0)}, 2);
    put32(h + 12, (uint32_t)hlen);
    put32(h + 16, (uint32_t)trace_pid);
    put32(h + 20, (uint32_t)getppid());
    put32(h + 24, (uint32_t)hl_page_size);
    h[28] = CLOCK_SHIFT;
    h[29] = (unsigned char)stack_depth;
    h[30] = (unsigned char)origin;
    h[31] = HLT_CLOCK_MONOTONIC;
    struct timespec rt;
    clock_gettime(CLOCK_REALTIME, &rt);
    put64(h + 32, now_ns());
    put64(h + 40, (uint64_t)rt.tv_sec * 1000000000u + (uint64_t)rt.tv_nsec);
    put32(h + 48, parent_pid);
    put64(h + 56, parent_seq);
    memcpy(h + 64, &(uint16_t){(uint16_t)el}, 2);
    memcpy(h + 66, exe, (size_t)el);
    memcpy(h + 66 + el, &(uint16_t){(uint16_t)cl}, 2);
    memcpy(h + 68 + el, cmd, cl);
    memcpy(h, HLT_MAGIC, 8); /* the magic goes last: a header without it was never finished */
    atomic_store(&hl_active, 1);
    return 0;
}

static uint64_t status_kb(const char *status, size_t n, const char *key) {
    size_t kl = strlen(key);
    for (size_t i = 0; i + kl < n; i++) {
        if ((i == 0 || status[i - 1] == '\n') && memcmp(status + i, key, kl) == 0) {
            uint64_t v = 0;
            for (i += kl; i < n && (status[i] == ' ' || status[i] == '\t'); i++) {
            }
            for (; i < n && status[i] >= '0' && status[i] <= '9'; i++) v = v * 10 + (uint64_t)(status[i] - '0');
            return v;
        }
    }
    return 0;
}

/* Writes the trailer record: how the process ended, its peak memory, and the executable
 * mappings (the module map that lets call sites be symbolised offline). Async-signal-safe
 * enough for the fatal-signal path: only syscalls and memory we own. */
static void write_trailer(int kind, int code, int from_signal) {
    if (syscall(SYS_getpid) != trace_pid) return; /* a vfork child shares our memory */
    if (from_signal) {
        if (pthread_mutex_trylock(&lock) != 0) return;
    } else {
        pthread_mutex_lock(&lock);
    }
    if (trailer_done || !atomic_load(&hl_active)) {
        pthread_mutex_unlock(&lock);
        return;
    }
    trailer_done = 1;
    close_window(&T);
    /* Scratch from mmap: the program's heap must not be touched here. */
    size_t scap = 1 << 20;
    char *maps = sys_mmap(NULL, scap * 2, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (maps == MAP_FAILED) {
        pthread_mutex_unlock(&lock);
        return;
    }
    unsigned char *body = (unsigned char *)maps + scap;
    char status[4096];
    size_t sn = hl_read_file("/proc/self/status", status, sizeof status);
    unsigned char *p = body;
    p = put_varint(p, (uint64_t)kind);
    p = put_varint(p, (uint64_t)(int64_t)code);
    p = put_varint(p, atomic_load(&seq_ctr));
    p = put_varint(p, now_ns() >> CLOCK_SHIFT);
    p = put_varint(p, status_kb(status, sn, "VmHWM:"));
    p = put_varint(p, status_kb(status, sn, "VmPeak:"));
    p = put_varint(p, atomic_load(&hl_free_null));
    size_t mn = hl_read_file("/proc/self/maps", maps, scap - 1);
    maps[mn] = 0;
    unsigned char *count_at = p;
    p += 2; /* module count, filled below as a fixed two-byte varint */
    unsigned mods = 0;
    const char *line = maps;
    /* The module map only serves to symbolise call sites: skipped when none are recorded. */
    while (stack_depth && *line && mods < 4000 && p < body + scap - 4200) {
        const char *eol = strchr(line, '\n');
        if (!eol) eol = line + strlen(line);
        struct hl_maps_line l = hl_parse_maps_line(line, eol);
        size_t plen = (size_t)(eol - l.path);
        if (l.exec && plen > 0 && plen < 4096) {
            p = put_varint(p, l.lo);
            p = put_varint(p, l.hi);
            p = put_varint(p, l.off);
            p = put_varint(p, plen);
            memcpy(p, l.path, plen);
            p += plen;
            mods++;
        }
        line = *eol ? eol + 1 : eol;
    }
    count_at[0] = (unsigned char)(mods & 0x7f) | 0x80;
    count_at[1] = (unsigned char)(mods >> 7);
    memcpy(p, HLT_TRAILER_END, 6);
    p += 6;
    uint64_t blen = (uint64_t)(p - body);
    uint64_t size = (blen + HLT_RECORD_HEADER + 31) & ~(uint64_t)31;
    uint64_t off;
    uint32_t s = size <= SEG_SIZE ? reserve(size, &off) : UINT32_MAX;
    if (s != UINT32_MAX) {
        unsigned char *h = at(s, off);
        memset(h, 0, HLT_RECORD_HEADER);
        put32(h + 4, (uint32_t)(size - HLT_RECORD_HEADER));
        put32(h + 8, T.tid ? T.tid : gettid_());
        put64(h + 16, atomic_load(&seq_ctr));
        put64(h + 24, now_ns() >> CLOCK_SHIFT);
        memcpy(h + HLT_RECORD_HEADER, body, blen);
        __atomic_store_n(h, (unsigned char)HLT_KIND_TRAILER, __ATOMIC_RELEASE);
        trailer_seg = s;
        trailer_off = off;
        /* Cut the file to what is used; later events (other destructors) extend it again. */
        if (ensure_fd() == 0 && ftruncate(fd, (off_t)file_end) == 0) file_size = file_end;
    }
    sys_munmap(maps, scap * 2);
    pthread_mutex_unlock(&lock);
}

static void on_thread_exit(void *unused) {
    (void)unused;
    if (!T.win) return;
    pthread_mutex_lock(&lock);
    close_window(&T);
    pthread_mutex_unlock(&lock);
}

/* A fatal signal: the trailer, if the lock can be had (async-signal-safe path). */
void hl_on_fatal_signal(int sig) { write_trailer(HLT_END_SIGNAL, sig, 1); }

/* The lock is held across fork, so the child never inherits it mid-update. */
void hl_on_fork_prepare(void) { pthread_mutex_lock(&lock); }
void hl_on_fork_parent(void) { pthread_mutex_unlock(&lock); }

/* The child of a fork writes its own file, STEM.PID.hltrace; the parent's sequence number at
 * the fork goes into the child's header so the two traces can be lined up. */
void hl_on_fork_child(void) {
    uint64_t parent_seq = atomic_load(&seq_ctr);
    uint32_t parent_pid = (uint32_t)trace_pid;
    int was_on = atomic_load(&hl_active);
    pthread_mutex_init(&lock, NULL);
    atomic_store(&hl_active, 0);
    for (uint32_t s = 0; s < MAX_SEGS; s++) {
        if (segs[s].base) sys_munmap(segs[s].base, SEG_SIZE);
        segs[s].base = NULL;
        segs[s].refs = 0;
    }
    if (fd >= 0) close(fd);
    fd = -1;
    T.win = NULL;
    T.tsc_mult = 0;
    T.tid = gettid_();
    T.next_size = 0;
    atomic_store(&seq_ctr, 0);
    atomic_store(&hl_free_null, 0);
    trailer_done = 0;
    trailer_seg = UINT32_MAX;
    if (stack_depth) hl_sites_reset();
    if (was_on) {
        pthread_mutex_lock(&lock);
        open_trace(NULL, HLT_ORIGIN_FORK, parent_pid, parent_seq);
        pthread_mutex_unlock(&lock);
    }
}

/* Not following exec: drop our library from LD_PRELOAD in place, before the program can copy
 * its environment, so images started by exec load the plain allocator. */
static void unpreload_self(const char *lib) {
    extern char **environ;
    size_t ll = strlen(lib);
    if (!ll) return;
    for (char **e = environ; e && *e; e++) {
        if (strncmp(*e, "LD_PRELOAD=", 11) != 0) continue;
        char *v = *e + 11, *w = v, *r = v;
        while (*r) {
            char *tok = r;
            while (*r && *r != ':' && *r != ' ') r++;
            size_t tl = (size_t)(r - tok);
            int skip = tl == ll && memcmp(tok, lib, ll) == 0;
            if (!skip && tl) {
                if (w != v) *w++ = ':';
                memmove(w, tok, tl);
                w += tl;
            }
            while (*r == ':' || *r == ' ') r++;
        }
        *w = 0;
    }
}

/* Reads the configuration and, when this image is to be traced, creates its file and turns
 * the hooks on. */
void hl_on_init(void) {
    /* One variable, so the traced program's environment grows by as little as heaptrack's
     * does: lines of KEY=VALUE (out, root, depth, follow, lib, only). */
    const char *conf = getenv("HEAPLAB_TRACE");
    static char out[4096], root[4096], lib[4096], depth[16], follow[4];
    only[0] = 0;
    const struct hl_conf_key keys[] = {
        {"out=", out, sizeof out}, {"root=", root, sizeof root}, {"lib=", lib, sizeof lib},
        {"depth=", depth, sizeof depth}, {"follow=", follow, sizeof follow}, {"only=", only, sizeof only}};
    hl_read_conf(conf, keys, sizeof keys / sizeof keys[0]);
    if (*out) {
        if (*depth) {
            int d = 0;
            for (const char *c = depth; *c >= '0' && *c <= '9'; c++) d = d * 10 + (*c - '0');
            stack_depth = d > HL_MAX_DEPTH ? HL_MAX_DEPTH : d;
        }
        size_t n = cat(stem, sizeof stem, 0, out);
        if (n >= 8 && strcmp(stem + n - 8, ".hltrace") == 0) stem[n - 8] = 0;
        if (stack_depth) hl_sites_init(stack_depth); /* without a table, sites are recorded as 0 */
        if (follow[0] == '0') unpreload_self(lib);
        {
            char cpu[8192];
            size_t cn = hl_read_file("/proc/cpuinfo", cpu, sizeof cpu - 1);
            cpu[cn] = 0;
            use_tsc = tsc() != 0 && strstr(cpu, " constant_tsc") && strstr(cpu, " nonstop_tsc");
            mono0 = now_ns();
            tsc0 = tsc();
        }
        exit_key_ok = pthread_key_create(&exit_key, on_thread_exit) == 0;
        hl_watch_fork();
        if (*root) cat(final_path, sizeof final_path, 0, out);
        int ok = 0;
        if (wanted()) {
            pthread_mutex_lock(&lock);
            ok = open_trace(root, HLT_ORIGIN_IMAGE, 0, 0) == 0;
            pthread_mutex_unlock(&lock);
        }
        if (ok) hl_watch_fatal_signals();
    }
}

/* The ends of an image: each writes the trailer (exec needs no more: the mapping already holds
 * every event; the trailer adds peak RSS, the module map and the trimmed file length). */
void hl_on_exit(void) { write_trailer(HLT_END_EXIT, 0, 0); }
void hl_on_quick_exit(int status) { write_trailer(HLT_END_UNDERSCORE_EXIT, status, 0); }
void hl_before_exec(void) { write_trailer(HLT_END_EXEC, 0, 0); }

/* exec returned, so it failed and this image goes on: its trailer becomes padding (readers
 * skip it) and a new one is written when the process really ends. */
void hl_after_failed_exec(void) {
    if (syscall(SYS_getpid) != trace_pid) return;
    pthread_mutex_lock(&lock);
    if (trailer_done && trailer_seg != UINT32_MAX && segs[trailer_seg].base) {
        __atomic_store_n(at(trailer_seg, trailer_off), (unsigned char)HLT_KIND_PADDING, __ATOMIC_RELEASE);
        trailer_done = 0;
        trailer_seg = UINT32_MAX;
    }
    pthread_mutex_unlock(&lock);
}

/* ---- page events: the program's direct address-space calls ---- */

/* Encodes and commits a page event at `w` (EV_MAX bytes of room). Unlike heap events it leaves
 * the pointer-delta base alone: addresses are absolute, so heap events encode as before. */
static void commit_page(struct tstate *t, unsigned char *w, const struct hl_page *e, uint64_t seq) {
    unsigned h = HLT_OP_PAGES;
    unsigned char *p = put_order(t, w + 1, &h, seq, seq);
    if (e->failed) h |= HLT_F_NULL;
    p = put_varint(p, (uint64_t)e->kind);
    switch (e->kind) {
    case HLT_PAGE_MMAP:
        p = put_varint(p, e->len);
        p = put_varint(p, e->prot);
        p = put_varint(p, e->flags);
        if (!e->failed) p = put_varint(p, e->addr);
        break;
    case HLT_PAGE_MUNMAP:
        p = put_varint(p, e->addr);
        p = put_varint(p, e->len);
        break;
    case HLT_PAGE_MREMAP:
        p = put_varint(p, e->addr);
        p = put_varint(p, e->len);
        p = put_varint(p, e->new_len);
        p = put_varint(p, e->flags);
        if (!e->failed) p = put_varint(p, e->new_addr);
        break;
    case HLT_PAGE_MPROTECT:
        p = put_varint(p, e->addr);
        p = put_varint(p, e->len);
        p = put_varint(p, e->prot);
        break;
    default: /* HLT_PAGE_BRK, HLT_PAGE_SBRK */
        p = put_varint(p, e->addr);
        p = put_varint(p, e->new_addr);
    }
    __atomic_store_n(w, (unsigned char)h, __ATOMIC_RELEASE);
    t->pos += (uint32_t)(p - w);
}

/* A page event takes its sequence number before the call for munmap (like free: another
 * thread's mmap of the same addresses can only follow it in the order), after it for the others
 * (the mapping exists from then on). */
void hl_before_page(struct hl_page *e) {
    if (e->kind != HL_MUNMAP) return;
    struct tstate *t = &T;
    e->hook[0] = (uintptr_t)room(t, EV_MAX);
    e->hook[1] = next_seq();
}

void hl_after_page(struct hl_page *e) {
    struct tstate *t = &T;
    unsigned char *w;
    uint64_t seq;
    if (e->kind == HL_MUNMAP) {
        w = (unsigned char *)(uintptr_t)e->hook[0];
        seq = e->hook[1];
    } else {
        w = room(t, EV_MAX);
        if (!w) return;
        seq = next_seq();
    }
    if (w) commit_page(t, w, e, seq);
}
