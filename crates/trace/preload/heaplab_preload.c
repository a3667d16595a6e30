/* heaplab_preload.c — the LD_PRELOAD tracer behind `heaplab trace`.
 *
 * Owns: interposing the malloc family, recording every request into a `.hltrace` file, the
 * program's direct address-space calls (mmap, munmap, mremap, mprotect, brk, sbrk: "page
 * events", so a report can say how much of the RSS the heap explains), and the
 * process-level corner cases (bootstrap, re-entrancy, threads, fork, exec, exit, crash, closed
 * or dup'ed descriptors). The file format is specified in crates/trace/src/format.rs; the
 * encoder here and the decoder there must change together (bump HLT_VERSION).
 *
 * Design in one paragraph. The trace file is written through MAP_SHARED mappings of the file
 * itself, so every committed event is in the page cache the moment it is stored: a crash, a
 * SIGKILL, exec or _exit loses nothing that was committed, and no flush is ever needed. Each
 * thread appends to its own "window" (a record of 4-64 KiB reserved under a lock); an event is
 * committed by storing its header byte last, so a torn event reads as the end of the window.
 * A global atomic sequence number gives the total order across threads; windows carry the
 * counter value at reservation ("floor"), which is monotone in file order, so the reader can
 * merge windows by sequence with bounded memory. The tracer never calls the traced malloc:
 * its memory is mmap'd or static, and a thread-local flag (initial-exec TLS, which needs no
 * allocation) sends the tracer's own and nested calls straight to the real functions. The
 * tracer's own mappings go through raw syscalls (sys_mmap, sys_munmap), never through the
 * interposed mmap, so they are neither recorded nor re-entered.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <execinfo.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h> /* rename() only: the tracer never uses stdio's buffers */
#include <stdarg.h>
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

#define EXPORT __attribute__((visibility("default")))
#define LIKELY(x) __builtin_expect(!!(x), 1)
#define UNLIKELY(x) __builtin_expect(!!(x), 0)

/* The format's numbers (HLT_*) are generated from crates/trace/src/format/codes.rs. */
#include "heaplab_format.h"

#define CLOCK_SHIFT 10          /* timestamps in units of 1024 ns */
#define SEG_SIZE (1u << 20)     /* file mapped in 1 MiB segments */
#define MAX_SEGS 65536          /* so at most 64 GiB of trace */
#define GROW_STEP (64u << 10)   /* the file is extended 64 KiB at a time */
#define WIN_MIN 1024u
#define WIN_MAX 65536u
#define MAX_DEPTH 64
#define EV_MAX 96               /* an encoded call event never exceeds this */
#define SITE_SLOTS (1u << 18)

/* ---- the real functions ---- */
static void *(*real_malloc)(size_t);
static void (*real_free)(void *);
static void *(*real_calloc)(size_t, size_t);
static void *(*real_realloc)(void *, size_t);
static int (*real_posix_memalign)(void **, size_t, size_t);
static void *(*real_aligned_alloc)(size_t, size_t);
static void *(*real_memalign)(size_t, size_t);
static void *(*real_valloc)(size_t);
static void *(*real_pvalloc)(size_t);
static size_t (*real_usable)(void *);
static void (*real__exit)(int) __attribute__((noreturn));
static int (*real_execve)(const char *, char *const[], char *const[]);
static int (*real_execv)(const char *, char *const[]);
static int (*real_execvp)(const char *, char *const[]);
static int (*real_execvpe)(const char *, char *const[], char *const[]);
static int (*real_fexecve)(int, char *const[], char *const[]);
static void *(*real_mmap)(void *, size_t, int, int, int, off_t);
static int (*real_munmap)(void *, size_t);
static void *(*real_mremap)(void *, size_t, size_t, int, ...);
static int (*real_mprotect)(void *, size_t, int);
static int (*real_brk)(void *);
static void *(*real_sbrk)(intptr_t);

/* ---- bootstrap arena: serves dlsym's own requests before the real functions are known ---- */
static _Alignas(16) unsigned char boot_arena[1 << 16];
static atomic_size_t boot_used;

static void *boot_alloc(size_t n, int zero) {
    (void)zero; /* the arena is never reused, so it is always zero */
    size_t need = (n + 16 + 15) & ~(size_t)15;
    size_t off = atomic_fetch_add(&boot_used, need);
    if (off + need > sizeof boot_arena) return NULL;
    memcpy(boot_arena + off, &n, sizeof n);
    return boot_arena + off + 16;
}
static inline int is_boot(const void *p) {
    return (const unsigned char *)p >= boot_arena && (const unsigned char *)p < boot_arena + sizeof boot_arena;
}
static size_t boot_size(const void *p) {
    size_t n;
    memcpy(&n, (const unsigned char *)p - 16, sizeof n);
    return n;
}

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
    int busy;           /* inside the tracer or a real function: do not trace */
    int registered;     /* thread-exit destructor armed */
};
static __thread struct tstate T __attribute__((tls_model("initial-exec")));

/* ---- process-wide tracing state ---- */
static atomic_int init_state;      /* 0 none, 1 running, 2 done */
static atomic_int on;              /* tracing active */
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
static long page_size;
static struct seg { unsigned char *base; uint32_t refs; } segs[MAX_SEGS];
static uint32_t cur_seg = UINT32_MAX;
static pthread_key_t exit_key;
static int exit_key_ok;
static struct site_slot { _Atomic uint64_t key; _Atomic uint32_t id; uint32_t pad; } *sites;
static atomic_uint site_ctr;
static atomic_uint_fast64_t free_null; /* free(NULL) calls: counted, not recorded as events */

/* ---- small helpers that never allocate ---- */
static void say(const char *msg) {
    ssize_t r = write(2, msg, strlen(msg));
    (void)r;
}
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
/* The tracer's own mappings: raw syscalls, because `mmap` inside this library binds to our own
 * interposer. syscall() turns -errno into -1 (MAP_FAILED) with errno set, as mmap does. */
static void *sys_mmap(void *a, size_t n, int prot, int flags, int f, off_t off) {
    return (void *)syscall(SYS_mmap, a, n, prot, flags, f, off);
}
static int sys_munmap(void *a, size_t n) { return (int)syscall(SYS_munmap, a, n); }

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
    if (atomic_exchange(&on, 0)) {
        say("heaplab trace: ");
        say(why);
        say("; tracing stopped (the trace so far is readable)\n");
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
    if (!atomic_load(&on)) return NULL;
    if (!t->tid) t->tid = gettid_();
    if (!t->registered && exit_key_ok) {
        t->registered = 1;
        pthread_setspecific(exit_key, (void *)1);
    }
    pthread_mutex_lock(&lock);
    if (!atomic_load(&on)) {
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
    if (LIKELY(t->win && t->pos + need <= t->cap)) return t->win + t->pos;
    return new_window(t, need);
}

static inline uint64_t next_seq(void) { return atomic_fetch_add_explicit(&seq_ctr, 1, memory_order_relaxed); }

/* Monotonic ns of an event of thread `t` (see the timestamp note above). */
static inline uint64_t event_ns(struct tstate *t) {
    if (!t->tsc_mult) return now_ns();
    uint64_t d = tsc() - t->win_tsc;
    if (UNLIKELY((int64_t)d < 0)) d = 0; /* another CPU's TSC a little behind */
    if (UNLIKELY(d > TSC_REBASE)) {
        t->win_ns = now_ns();
        t->win_tsc = tsc();
        return t->win_ns;
    }
    return t->win_ns + (uint64_t)(((__uint128_t)d * t->tsc_mult) >> 32);
}

/* ---- call sites (with --stack-depth) ---- */

static uint64_t mix(uint64_t h, uint64_t v) {
    h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    h *= 0xff51afd7ed558ccdull;
    return h ^ (h >> 33);
}

/* Returns the site id of this call (0 = unknown) and, when the site is new, encodes its
 * definition at `*defp` (advancing it). */
static uint32_t site_of(void *ret, unsigned char **defp, uint32_t *deflen) {
    void *frames[MAX_DEPTH + 1];
    int n = 1;
    frames[0] = ret;
    if (stack_depth > 1) {
        /* Inlining decides how many of our own frames come first: start at the caller's. */
        void *raw[MAX_DEPTH + 4];
        int got = backtrace(raw, stack_depth + 4);
        int start = got;
        for (int i = 0; i < got; i++)
            if (raw[i] == ret) {
                start = i + 1;
                break;
            }
        for (int i = start; i < got && n < stack_depth; i++) frames[n++] = raw[i];
    }
    uint64_t h = 0x6a09e667f3bcc909ull;
    for (int i = 0; i < n; i++) h = mix(h, (uint64_t)(uintptr_t)frames[i]);
    h |= 1; /* 0 marks an empty slot */
    if (!sites) return 0;
    uint32_t slot = (uint32_t)(h >> 20) & (SITE_SLOTS - 1);
    for (int probe = 0; probe < 64; probe++, slot = (slot + 1) & (SITE_SLOTS - 1)) {
        uint64_t k = atomic_load_explicit(&sites[slot].key, memory_order_acquire);
        if (k == h) {
            uint32_t id;
            while ((id = atomic_load_explicit(&sites[slot].id, memory_order_acquire)) == 0) {
            }
            return id;
        }
        if (k == 0) {
            uint64_t seen = 0;
            if (atomic_compare_exchange_strong(&sites[slot].key, &seen, h)) {
                uint32_t id = atomic_fetch_add(&site_ctr, 1) + 1;
                atomic_store_explicit(&sites[slot].id, id, memory_order_release);
                unsigned char *p = *defp;
                unsigned char *q = p + 1;
                q = put_varint(q, id);
                q = put_varint(q, h);
                q = put_varint(q, (uint64_t)n);
                for (int i = 0; i < n; i++) q = put_varint(q, (uint64_t)(uintptr_t)frames[i]);
                *p = HLT_OP_SITE;
                *deflen = (uint32_t)(q - p);
                return id;
            }
            if (seen == h) { /* another thread defined this site just now */
                uint32_t id;
                while ((id = atomic_load_explicit(&sites[slot].id, memory_order_acquire)) == 0) {
                }
                return id;
            }
        }
    }
    return 0;
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

/* Encodes `e` at `w` (which has EV_MAX bytes of room) and commits it by storing the header
 * byte last. */
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
static __attribute__((noinline)) void record_alloc(struct tstate *t, struct ev *e, void *ret) {
    unsigned char defbuf[16 + 10 * (MAX_DEPTH + 4)];
    unsigned char *defp = defbuf;
    uint32_t deflen = 0, site = 0;
    if (stack_depth) site = site_of(ret, &defp, &deflen);
    unsigned char *w = room(t, EV_MAX + deflen);
    if (!w) return;
    if (deflen) {
        /* The site definition goes first; it is committed like an event (header byte last). */
        memcpy(w + 1, defbuf + 1, deflen - 1);
        __atomic_store_n(w, defbuf[0], __ATOMIC_RELEASE);
        t->pos += deflen;
        w += deflen;
    }
    e->seq = next_seq();
    e->usable = e->out ? real_usable((void *)(uintptr_t)e->out) : 0;
    commit(t, w, e, site);
}

/* ---- initialisation ---- */

static void resolve(void) {
    real_malloc = dlsym(RTLD_NEXT, "malloc");
    real_free = dlsym(RTLD_NEXT, "free");
    real_calloc = dlsym(RTLD_NEXT, "calloc");
    real_realloc = dlsym(RTLD_NEXT, "realloc");
    real_posix_memalign = dlsym(RTLD_NEXT, "posix_memalign");
    real_aligned_alloc = dlsym(RTLD_NEXT, "aligned_alloc");
    real_memalign = dlsym(RTLD_NEXT, "memalign");
    real_valloc = dlsym(RTLD_NEXT, "valloc");
    real_pvalloc = dlsym(RTLD_NEXT, "pvalloc");
    real_usable = dlsym(RTLD_NEXT, "malloc_usable_size");
    real__exit = dlsym(RTLD_NEXT, "_exit");
    real_execve = dlsym(RTLD_NEXT, "execve");
    real_execv = dlsym(RTLD_NEXT, "execv");
    real_execvp = dlsym(RTLD_NEXT, "execvp");
    real_execvpe = dlsym(RTLD_NEXT, "execvpe");
    real_fexecve = dlsym(RTLD_NEXT, "fexecve");
    real_mmap = dlsym(RTLD_NEXT, "mmap");
    real_munmap = dlsym(RTLD_NEXT, "munmap");
    real_mremap = dlsym(RTLD_NEXT, "mremap");
    real_mprotect = dlsym(RTLD_NEXT, "mprotect");
    real_brk = dlsym(RTLD_NEXT, "brk");
    real_sbrk = dlsym(RTLD_NEXT, "sbrk");
    if (!real_malloc || !real_free || !real_calloc || !real_realloc || !real_usable || !real_posix_memalign) {
        say("heaplab trace: cannot find the real malloc functions; aborting\n");
        syscall(SYS_exit_group, 127);
    }
}

static size_t read_file(const char *path, char *buf, size_t cap) {
    int f = open(path, O_RDONLY | O_CLOEXEC);
    if (f < 0) return 0;
    size_t n = 0;
    while (n < cap) {
        ssize_t r = read(f, buf + n, cap - n);
        if (r <= 0) break;
        n += (size_t)r;
    }
    close(f);
    return n;
}

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
    size_t cl = read_file("/proc/self/cmdline", cmd, sizeof cmd);
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
        say("heaplab trace: cannot create the trace file; this process is not traced\n");
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
    size_t cl = read_file("/proc/self/cmdline", cmd, sizeof cmd);
    uint64_t hlen = (HLT_HEADER_FIXED + 2 + (uint64_t)el + 2 + cl + 31) & ~(uint64_t)31;
    uint64_t off;
    if (reserve(hlen, &off) == UINT32_MAX || off != 0) {
        say("heaplab trace: cannot map the trace file; this process is not traced\n");
        return -1;
    }
    unsigned char *h = at(cur_seg, 0);
    memset(h, 0, hlen);
    memcpy(h + 8, &(uint16_t){HLT_VERSION}, 2);
    memcpy(h + 10, &(uint16_t){(uint16_t)(stack_depth ? 1 : 0)}, 2);
    put32(h + 12, (uint32_t)hlen);
    put32(h + 16, (uint32_t)trace_pid);
    put32(h + 20, (uint32_t)getppid());
    put32(h + 24, (uint32_t)page_size);
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
    atomic_store(&on, 1);
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

static uint64_t hex(const char **s) {
    uint64_t v = 0;
    for (;;) {
        char c = **s;
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
        if (d < 0) return v;
        v = v * 16 + (uint64_t)d;
        (*s)++;
    }
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
    if (trailer_done || !atomic_load(&on)) {
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
    size_t sn = read_file("/proc/self/status", status, sizeof status);
    unsigned char *p = body;
    p = put_varint(p, (uint64_t)kind);
    p = put_varint(p, (uint64_t)(int64_t)code);
    p = put_varint(p, atomic_load(&seq_ctr));
    p = put_varint(p, now_ns() >> CLOCK_SHIFT);
    p = put_varint(p, status_kb(status, sn, "VmHWM:"));
    p = put_varint(p, status_kb(status, sn, "VmPeak:"));
    p = put_varint(p, atomic_load(&free_null));
    size_t mn = read_file("/proc/self/maps", maps, scap - 1);
    maps[mn] = 0;
    unsigned char *count_at = p;
    p += 2; /* module count, filled below as a fixed two-byte varint */
    unsigned mods = 0;
    const char *line = maps;
    /* The module map only serves to symbolise call sites: skipped when none are recorded. */
    while (stack_depth && *line && mods < 4000 && p < body + scap - 4200) {
        const char *eol = strchr(line, '\n');
        if (!eol) eol = line + strlen(line);
        const char *s = line;
        uint64_t lo = hex(&s);
        s++;
        uint64_t hi = hex(&s);
        s++;
        int exec = s + 3 < eol && s[2] == 'x';
        s += 5;
        uint64_t off = hex(&s);
        const char *path = s;
        for (int field = 0; field < 2 && path < eol; field++) { /* skip dev and inode */
            while (path < eol && *path == ' ') path++;
            while (path < eol && *path != ' ') path++;
        }
        while (path < eol && *path == ' ') path++;
        size_t plen = (size_t)(eol - path);
        if (exec && plen > 0 && plen < 4096) {
            p = put_varint(p, lo);
            p = put_varint(p, hi);
            p = put_varint(p, off);
            p = put_varint(p, plen);
            memcpy(p, path, plen);
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

static const int fatal_signals[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};

static void on_fatal(int sig, siginfo_t *si, void *uc) {
    (void)si;
    (void)uc;
    if (!T.busy) write_trailer(HLT_END_SIGNAL, sig, 1);
    /* Restore the default action and let the signal kill the process as it would have. */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = SIG_DFL;
    sigaction(sig, &sa, NULL);
    raise(sig);
}

static void install_fatal_handlers(void) {
    for (size_t i = 0; i < sizeof fatal_signals / sizeof fatal_signals[0]; i++) {
        struct sigaction old;
        if (sigaction(fatal_signals[i], NULL, &old) != 0) continue;
        if (!(old.sa_flags & SA_SIGINFO) && old.sa_handler != SIG_DFL) continue; /* the program's own */
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = on_fatal;
        sa.sa_flags = SA_SIGINFO | SA_RESETHAND;
        sigemptyset(&sa.sa_mask);
        sigaction(fatal_signals[i], &sa, NULL);
    }
}

static void fork_prepare(void) { pthread_mutex_lock(&lock); }
static void fork_parent(void) { pthread_mutex_unlock(&lock); }

/* The child of a fork writes its own file, STEM.PID.hltrace; the parent's sequence number at
 * the fork goes into the child's header so the two traces can be lined up. */
static void fork_child(void) {
    uint64_t parent_seq = atomic_load(&seq_ctr);
    uint32_t parent_pid = (uint32_t)trace_pid;
    int was_on = atomic_load(&on);
    pthread_mutex_init(&lock, NULL);
    atomic_store(&on, 0);
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
    atomic_store(&free_null, 0);
    trailer_done = 0;
    trailer_seg = UINT32_MAX;
    if (sites) {
        madvise(sites, sizeof *sites * SITE_SLOTS, MADV_DONTNEED); /* zeroes the private table */
        atomic_store(&site_ctr, 0);
    }
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

static void do_init(void) {
    T.busy = 1;
    resolve();
    page_size = sysconf(_SC_PAGESIZE);
    /* One variable, so the traced program's environment grows by as little as heaptrack's
     * does: lines of KEY=VALUE (out, root, depth, follow, lib, only). */
    const char *conf = getenv("HEAPLAB_TRACE");
    static char out[4096], root[4096], lib[4096], depth[16], follow[4];
    only[0] = 0;
    if (conf) {
        for (const char *l = conf; *l;) {
            const char *e = strchr(l, '\n');
            if (!e) e = l + strlen(l);
            struct { const char *key; char *dst; size_t cap; } keys[] = {
                {"out=", out, sizeof out}, {"root=", root, sizeof root}, {"lib=", lib, sizeof lib},
                {"depth=", depth, sizeof depth}, {"follow=", follow, sizeof follow}, {"only=", only, sizeof only}};
            for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
                size_t kl = strlen(keys[k].key), vl = (size_t)(e - l) - kl;
                if ((size_t)(e - l) >= kl && memcmp(l, keys[k].key, kl) == 0 && vl < keys[k].cap) {
                    memcpy(keys[k].dst, l + kl, vl);
                    keys[k].dst[vl] = 0;
                }
            }
            l = *e ? e + 1 : e;
        }
    }
    if (*out) {
        if (*depth) {
            int d = 0;
            for (const char *c = depth; *c >= '0' && *c <= '9'; c++) d = d * 10 + (*c - '0');
            stack_depth = d > MAX_DEPTH ? MAX_DEPTH : d;
        }
        size_t n = cat(stem, sizeof stem, 0, out);
        if (n >= 8 && strcmp(stem + n - 8, ".hltrace") == 0) stem[n - 8] = 0;
        if (stack_depth) {
            void *m = sys_mmap(NULL, sizeof *sites * SITE_SLOTS, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            sites = m == MAP_FAILED ? NULL : m;
            if (stack_depth > 1) {
                void *warm[4];
                backtrace(warm, 4); /* loads the unwinder now, untraced */
            }
        }
        if (follow[0] == '0') unpreload_self(lib);
        {
            char cpu[8192];
            size_t cn = read_file("/proc/cpuinfo", cpu, sizeof cpu - 1);
            cpu[cn] = 0;
            use_tsc = tsc() != 0 && strstr(cpu, " constant_tsc") && strstr(cpu, " nonstop_tsc");
            mono0 = now_ns();
            tsc0 = tsc();
        }
        exit_key_ok = pthread_key_create(&exit_key, on_thread_exit) == 0;
        pthread_atfork(fork_prepare, fork_parent, fork_child);
        if (*root) cat(final_path, sizeof final_path, 0, out);
        int ok = 0;
        if (wanted()) {
            pthread_mutex_lock(&lock);
            ok = open_trace(root, HLT_ORIGIN_IMAGE, 0, 0) == 0;
            pthread_mutex_unlock(&lock);
        }
        if (ok) install_fatal_handlers();
    }
    T.busy = 0;
}

static inline void ensure_init(void) {
    if (LIKELY(atomic_load_explicit(&init_state, memory_order_acquire) == 2)) return;
    int zero = 0;
    if (atomic_compare_exchange_strong(&init_state, &zero, 1)) {
        do_init();
        atomic_store_explicit(&init_state, 2, memory_order_release);
    }
    /* Otherwise another thread (or our own dlsym) is initialising: callers fall back to the
     * bootstrap arena until the real functions are known. */
}

__attribute__((constructor)) static void heaplab_init(void) { ensure_init(); }
__attribute__((destructor)) static void heaplab_fini(void) { write_trailer(HLT_END_EXIT, 0, 0); }

/* ---- the interposed functions ---- */

#define PROLOGUE_ALLOC(fallback)                                                   \
    if (UNLIKELY(init_state != 2)) {                                                  \
        ensure_init();                                                             \
        if (!real_malloc) return fallback;                                         \
    }

EXPORT void *malloc(size_t n) {
    PROLOGUE_ALLOC(boot_alloc(n, 0));
    struct tstate *t = &T;
    if (t->busy || !on) return real_malloc(n);
    t->busy = 1;
    void *p = real_malloc(n);
    struct ev e = {.op = HLT_OP_MALLOC, .out = (uintptr_t)p, .size = n};
    record_alloc(t, &e, __builtin_return_address(0));
    t->busy = 0;
    return p;
}

EXPORT void *calloc(size_t nmemb, size_t size) {
    PROLOGUE_ALLOC(boot_alloc(nmemb * size, 1));
    struct tstate *t = &T;
    if (t->busy || !on) return real_calloc(nmemb, size);
    t->busy = 1;
    void *p = real_calloc(nmemb, size);
    struct ev e = {.op = HLT_OP_CALLOC, .out = (uintptr_t)p, .size = size, .extra = nmemb};
    record_alloc(t, &e, __builtin_return_address(0));
    t->busy = 0;
    return p;
}

EXPORT void free(void *p) {
    if (UNLIKELY(is_boot(p))) return;
    if (!p) {
        if (on) atomic_fetch_add_explicit(&free_null, 1, memory_order_relaxed);
        return;
    }
    if (UNLIKELY(!real_free)) {
        ensure_init();
        if (!real_free) return; /* only bootstrap pointers exist yet */
    }
    struct tstate *t = &T;
    if (t->busy || !on) {
        real_free(p);
        return;
    }
    t->busy = 1;
    /* The sequence number is taken before the block is released: another thread can only be
     * handed this address after it, so the order never shows two live blocks overlapping. */
    unsigned char *w = room(t, EV_MAX);
    if (w) {
        struct ev e = {.op = HLT_OP_FREE, .in = (uintptr_t)p};
        e.seq = next_seq();
        commit(t, w, &e, 0);
    }
    real_free(p);
    t->busy = 0;
}

/* realloc and reallocarray release the old block and then hand out the new one: two sequence
 * numbers, one taken before the call (the release) and one after (the allocation). */
static void *realloc_common(int op, void *old, size_t nmemb, size_t size, void *ret) {
    struct tstate *t = &T;
    size_t bytes = size;
    if (op == HLT_OP_REALLOCARRAY && __builtin_mul_overflow(nmemb, size, &bytes)) {
        errno = ENOMEM;
        bytes = SIZE_MAX; /* recorded as a failed request */
    }
    if (t->busy || !on) return bytes == SIZE_MAX && op == HLT_OP_REALLOCARRAY ? NULL : real_realloc(old, bytes);
    t->busy = 1;
    unsigned char defbuf[16 + 10 * (MAX_DEPTH + 4)];
    unsigned char *defp = defbuf;
    uint32_t deflen = 0, site = 0;
    if (stack_depth) site = site_of(ret, &defp, &deflen);
    unsigned char *w = room(t, EV_MAX + deflen);
    struct ev e = {.op = op, .in = (uintptr_t)old, .size = size, .extra = nmemb};
    e.seq = next_seq();
    void *p = (op == HLT_OP_REALLOCARRAY && bytes == SIZE_MAX) ? NULL : real_realloc(old, bytes);
    e.seq2 = next_seq();
    e.out = (uintptr_t)p;
    e.usable = p ? real_usable(p) : 0;
    if (w) {
        if (deflen) {
            memcpy(w + 1, defbuf + 1, deflen - 1);
            __atomic_store_n(w, defbuf[0], __ATOMIC_RELEASE);
            t->pos += deflen;
            w += deflen;
        }
        commit(t, w, &e, site);
    }
    t->busy = 0;
    return p;
}

EXPORT void *realloc(void *old, size_t size) {
    if (UNLIKELY(is_boot(old))) {
        /* A bootstrap block moves to the real heap; the arena copy is simply abandoned. */
        void *p = malloc(size);
        if (p) {
            size_t n = boot_size(old);
            memcpy(p, old, n < size ? n : size);
        }
        return p;
    }
    PROLOGUE_ALLOC(boot_alloc(size, 0));
    return realloc_common(HLT_OP_REALLOC, old, 1, size, __builtin_return_address(0));
}

EXPORT void *reallocarray(void *old, size_t nmemb, size_t size) {
    if (UNLIKELY(is_boot(old))) {
        size_t bytes;
        if (__builtin_mul_overflow(nmemb, size, &bytes)) {
            errno = ENOMEM;
            return NULL;
        }
        return realloc(old, bytes);
    }
    PROLOGUE_ALLOC(boot_alloc(nmemb * size, 0));
    return realloc_common(HLT_OP_REALLOCARRAY, old, nmemb, size, __builtin_return_address(0));
}

static void *aligned_common(int op, size_t align, size_t size, void *ret, int *err) {
    struct tstate *t = &T;
    void *p = NULL;
    int r = 0;
    int trace = !t->busy && on;
    if (trace) t->busy = 1;
    switch (op) {
    case HLT_OP_POSIX_MEMALIGN:
        r = real_posix_memalign(&p, align, size);
        if (r) p = NULL;
        break;
    case HLT_OP_ALIGNED_ALLOC:
        p = real_aligned_alloc ? real_aligned_alloc(align, size) : (real_posix_memalign(&p, align, size) ? NULL : p);
        break;
    case HLT_OP_MEMALIGN:
        p = real_memalign ? real_memalign(align, size) : (real_posix_memalign(&p, align, size) ? NULL : p);
        break;
    case HLT_OP_VALLOC:
        p = real_valloc ? real_valloc(size) : (real_posix_memalign(&p, (size_t)page_size, size) ? NULL : p);
        break;
    case HLT_OP_PVALLOC: {
        size_t rounded = (size + (size_t)page_size - 1) & ~((size_t)page_size - 1);
        p = real_pvalloc ? real_pvalloc(size) : (real_posix_memalign(&p, (size_t)page_size, rounded) ? NULL : p);
        break;
    }
    }
    if (err) *err = r;
    if (trace) {
        struct ev e = {.op = op, .out = (uintptr_t)p, .size = size, .extra = align};
        record_alloc(t, &e, ret);
        t->busy = 0;
    }
    return p;
}

EXPORT int posix_memalign(void **memptr, size_t align, size_t size) {
    if (UNLIKELY(init_state != 2)) {
        ensure_init();
        if (!real_malloc) {
            *memptr = NULL;
            return ENOMEM; /* no aligned requests are expected during bootstrap */
        }
    }
    int err = 0;
    void *p = aligned_common(HLT_OP_POSIX_MEMALIGN, align, size, __builtin_return_address(0), &err);
    if (!err) *memptr = p;
    return err;
}
EXPORT void *aligned_alloc(size_t align, size_t size) {
    PROLOGUE_ALLOC(NULL);
    return aligned_common(HLT_OP_ALIGNED_ALLOC, align, size, __builtin_return_address(0), NULL);
}
EXPORT void *memalign(size_t align, size_t size) {
    PROLOGUE_ALLOC(NULL);
    return aligned_common(HLT_OP_MEMALIGN, align, size, __builtin_return_address(0), NULL);
}
EXPORT void *valloc(size_t size) {
    PROLOGUE_ALLOC(NULL);
    return aligned_common(HLT_OP_VALLOC, (size_t)page_size, size, __builtin_return_address(0), NULL);
}
EXPORT void *pvalloc(size_t size) {
    PROLOGUE_ALLOC(NULL);
    return aligned_common(HLT_OP_PVALLOC, (size_t)page_size, size, __builtin_return_address(0), NULL);
}

EXPORT size_t malloc_usable_size(void *p) {
    if (UNLIKELY(is_boot(p))) return boot_size(p);
    if (UNLIKELY(!real_usable)) {
        ensure_init();
        if (!real_usable) return 0;
    }
    return real_usable(p);
}

/* ---- page events: the program's direct address-space calls ---- */

/* One page event. Fields by kind as in format.rs: mmap (len, prot, flags, addr), munmap (addr,
 * len), mremap (addr, len, new_len, flags, new_addr), mprotect (addr, len, prot), brk and sbrk
 * (break before in addr, after in new_addr). */
struct pev {
    int kind, failed;
    uint64_t addr, len, new_addr, new_len, flags, prot;
    uint64_t seq;
};

/* Encodes and commits a page event at `w` (EV_MAX bytes of room). Unlike heap events it leaves
 * the pointer-delta base alone: addresses are absolute, so heap events encode as before. */
static void commit_page(struct tstate *t, unsigned char *w, const struct pev *e) {
    unsigned h = HLT_OP_PAGES;
    unsigned char *p = put_order(t, w + 1, &h, e->seq, e->seq);
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

/* Whether this call of a page function is recorded: tracing is on, the real functions are
 * known, and we are not inside the tracer or a traced call (an allocator's own mmap calls
 * made inside malloc belong to the heap). */
static inline int page_traced(struct tstate *t) {
    if (UNLIKELY(init_state != 2)) {
        ensure_init();
        if (init_state != 2) return 0;
    }
    return !t->busy && on && real_mmap;
}

/* Records a page event whose call has returned (the sequence number is taken now: the
 * mapping exists from here on). errno is the call's, kept for the program. */
static void record_page_after(struct tstate *t, struct pev *e) {
    int err = errno;
    unsigned char *w = room(t, EV_MAX);
    if (w) {
        e->seq = next_seq();
        commit_page(t, w, e);
    }
    errno = err;
}

EXPORT void *mmap(void *addr, size_t len, int prot, int flags, int fdesc, off_t off) {
    struct tstate *t = &T;
    if (!page_traced(t)) return real_mmap ? real_mmap(addr, len, prot, flags, fdesc, off) : sys_mmap(addr, len, prot, flags, fdesc, off);
    t->busy = 1;
    void *r = real_mmap(addr, len, prot, flags, fdesc, off);
    struct pev e = {.kind = HLT_PAGE_MMAP, .failed = r == MAP_FAILED, .addr = (uintptr_t)r, .len = len, .prot = (uint32_t)prot, .flags = (uint32_t)flags};
    record_page_after(t, &e);
    t->busy = 0;
    return r;
}
EXPORT void *mmap64(void *addr, size_t len, int prot, int flags, int fdesc, off_t off) { return mmap(addr, len, prot, flags, fdesc, off); }

EXPORT int munmap(void *addr, size_t len) {
    struct tstate *t = &T;
    if (!page_traced(t)) return real_munmap ? real_munmap(addr, len) : sys_munmap(addr, len);
    t->busy = 1;
    /* Like free: the sequence number comes before the release, so another thread's mmap of
     * the same addresses can only follow it in the order. */
    unsigned char *w = room(t, EV_MAX);
    uint64_t seq = next_seq();
    int r = real_munmap(addr, len);
    int err = errno;
    struct pev e = {.kind = HLT_PAGE_MUNMAP, .failed = r != 0, .addr = (uintptr_t)addr, .len = len, .seq = seq};
    if (w) commit_page(t, w, &e);
    errno = err;
    t->busy = 0;
    return r;
}

EXPORT void *mremap(void *old, size_t old_len, size_t new_len, int flags, ...) {
    void *want = NULL;
    if (flags & MREMAP_FIXED) {
        va_list ap;
        va_start(ap, flags);
        want = va_arg(ap, void *);
        va_end(ap);
    }
    struct tstate *t = &T;
    if (!page_traced(t)) {
        if (real_mremap) return real_mremap(old, old_len, new_len, flags, want);
        return (void *)syscall(SYS_mremap, old, old_len, new_len, flags, want);
    }
    t->busy = 1;
    void *r = real_mremap(old, old_len, new_len, flags, want);
    struct pev e = {.kind = HLT_PAGE_MREMAP, .failed = r == MAP_FAILED, .addr = (uintptr_t)old, .len = old_len,
                    .new_addr = (uintptr_t)r, .new_len = new_len, .flags = (uint32_t)flags};
    record_page_after(t, &e);
    t->busy = 0;
    return r;
}

EXPORT int mprotect(void *addr, size_t len, int prot) {
    struct tstate *t = &T;
    if (!page_traced(t)) return real_mprotect ? real_mprotect(addr, len, prot) : (int)syscall(SYS_mprotect, addr, len, prot);
    t->busy = 1;
    int r = real_mprotect(addr, len, prot);
    struct pev e = {.kind = HLT_PAGE_MPROTECT, .failed = r != 0, .addr = (uintptr_t)addr, .len = len, .prot = (uint32_t)prot};
    record_page_after(t, &e);
    t->busy = 0;
    return r;
}

/* brk and sbrk go through glibc's own functions (never a raw syscall): glibc keeps the break
 * in a variable its malloc relies on. Called while another thread is still initialising the
 * tracer, they look glibc's up themselves. */
static void resolve_brk(void) {
    if (!real_brk) real_brk = dlsym(RTLD_NEXT, "brk");
    if (!real_sbrk) real_sbrk = dlsym(RTLD_NEXT, "sbrk");
}
EXPORT int brk(void *addr) {
    struct tstate *t = &T;
    int traced = page_traced(t);
    resolve_brk();
    if (!traced) return real_brk(addr);
    t->busy = 1;
    void *before = real_sbrk(0);
    int r = real_brk(addr);
    struct pev e = {.kind = HLT_PAGE_BRK, .failed = r != 0, .addr = (uintptr_t)before, .new_addr = (uintptr_t)addr};
    record_page_after(t, &e);
    t->busy = 0;
    return r;
}

EXPORT void *sbrk(intptr_t incr) {
    struct tstate *t = &T;
    int traced = page_traced(t);
    resolve_brk();
    if (!traced) return real_sbrk(incr);
    t->busy = 1;
    void *r = real_sbrk(incr);
    int failed = r == (void *)-1;
    uint64_t before = failed ? (uintptr_t)real_sbrk(0) : (uintptr_t)r;
    struct pev e = {.kind = HLT_PAGE_SBRK, .failed = failed, .addr = before, .new_addr = before + (uint64_t)(int64_t)incr};
    record_page_after(t, &e);
    t->busy = 0;
    return r;
}

/* _exit skips destructors, so the trailer is written here (exec needs nothing: the mapping
 * already holds every event). */
EXPORT void _exit(int status) {
    if (init_state == 2 && !T.busy) write_trailer(HLT_END_UNDERSCORE_EXIT, status, 0);
    if (real__exit) real__exit(status);
    syscall(SYS_exit_group, status);
    __builtin_unreachable();
}
EXPORT void _Exit(int status) { _exit(status); }

/* exec replaces the image: the mapping already holds every event, but the trailer (peak RSS,
 * module map) and the trimmed file length are written here first. glibc's own internal exec
 * calls (inside execvp, posix_spawn) are not interposable; those images' files keep a zero
 * tail, which readers treat as the end. */
static void before_exec(void) {
    if (init_state == 2 && !T.busy) write_trailer(HLT_END_EXEC, 0, 0);
}

/* exec returned, so it failed and this image goes on: its trailer becomes padding (readers
 * skip it) and a new one is written when the process really ends. */
static void after_failed_exec(void) {
    if (init_state != 2 || T.busy || syscall(SYS_getpid) != trace_pid) return;
    int saved = errno;
    pthread_mutex_lock(&lock);
    if (trailer_done && trailer_seg != UINT32_MAX && segs[trailer_seg].base) {
        __atomic_store_n(at(trailer_seg, trailer_off), (unsigned char)HLT_KIND_PADDING, __ATOMIC_RELEASE);
        trailer_done = 0;
        trailer_seg = UINT32_MAX;
    }
    pthread_mutex_unlock(&lock);
    errno = saved;
}
EXPORT int execve(const char *path, char *const argv[], char *const envp[]) {
    before_exec();
    int r = real_execve ? real_execve(path, argv, envp) : (int)syscall(SYS_execve, path, argv, envp);
    after_failed_exec();
    return r;
}
EXPORT int execv(const char *path, char *const argv[]) {
    before_exec();
    extern char **environ;
    int r = real_execv ? real_execv(path, argv) : execve(path, argv, environ);
    after_failed_exec();
    return r;
}
/* The exec functions without a raw-syscall fallback: ENOSYS if glibc lacks them. */
#define EXEC_OR_ENOSYS(real, ...)       \
    before_exec();                      \
    if (!real) {                        \
        after_failed_exec();            \
        errno = ENOSYS;                 \
        return -1;                      \
    }                                   \
    int r = real(__VA_ARGS__);          \
    after_failed_exec();                \
    return r;
EXPORT int execvp(const char *file, char *const argv[]) { EXEC_OR_ENOSYS(real_execvp, file, argv) }
EXPORT int execvpe(const char *file, char *const argv[], char *const envp[]) { EXEC_OR_ENOSYS(real_execvpe, file, argv, envp) }
EXPORT int fexecve(int fdesc, char *const argv[], char *const envp[]) { EXEC_OR_ENOSYS(real_fexecve, fdesc, argv, envp) }

/* The execl family takes its arguments as varargs: gather them (on the stack) and pass on. */
#define GATHER(first, extra_env)                                                   \
    va_list ap;                                                                    \
    size_t n = 1;                                                                  \
    va_start(ap, first);                                                           \
    while (va_arg(ap, char *)) n++;                                                \
    va_end(ap);                                                                    \
    if (n > 65536) {                                                               \
        errno = E2BIG;                                                             \
        return -1;                                                                 \
    }                                                                              \
    char *args[n + 1];                                                             \
    args[0] = (char *)first;                                                       \
    va_start(ap, first);                                                           \
    for (size_t i = 1; i <= n; i++) args[i] = va_arg(ap, char *);                  \
    extra_env;                                                                     \
    va_end(ap)

EXPORT int execl(const char *path, const char *arg, ...) {
    GATHER(arg, (void)0);
    return execv(path, args);
}
EXPORT int execlp(const char *file, const char *arg, ...) {
    GATHER(arg, (void)0);
    return execvp(file, args);
}
EXPORT int execle(const char *path, const char *arg, ...) {
    char *const *envp;
    GATHER(arg, envp = va_arg(ap, char *const *));
    return execve(path, args, envp);
}
