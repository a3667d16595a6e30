/* heaplab replay child: executes a trace's heap requests under the allocator preloaded into this
 * process, and reports where each block landed.
 *
 * The driver (crates/replay/src/driver.rs) starts this program with the allocator under test in
 * LD_PRELOAD (nothing for glibc) and a shared memory file as descriptor 3. The layout of that
 * file is `struct shm` below, mirrored in driver.rs: a header, a ring of fixed-size entries and
 * the table of memory mappings. The driver writes requests into the ring and publishes
 * `produced`; this process executes them in ring order, overwrites each entry with its result
 * (address, usable size, mapping id) and publishes `executed`. Waiting is a short spin then a
 * futex, in both directions, so neither side makes a system call per request.
 *
 * Nothing here allocates through the allocator under test: the block table, the mapping table
 * and the /proc/self/maps buffer are mmap'd with raw system calls, and no stdio is used once the
 * replay runs. Threads: one replay thread per traced thread, created before the first request
 * (libc may allocate a few bytes for their TLS then); they take turns through `turn`, so
 * requests execute in the trace's global order, each on the thread that made it.
 *
 * Mappings: blocks are located in this process's own mappings as read from /proc/self/maps.
 * The list is re-read when a block falls outside every known mapping (a new or grown mapping),
 * after the allocator called mmap, munmap or mremap (interposed below to count them; glibc's
 * malloc uses internal calls that cannot be seen), and after a block of 64 KiB or more was
 * freed (glibc returns those with munmap or by trimming the heap). Each writable mapping gets an
 * id that it keeps while it grows, shrinks or merges with neighbours (it inherits the oldest id
 * among the mappings it overlaps). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <malloc.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define SHM_MAGIC 0x31594c504552484cULL /* the bytes "LHREPLY1" read as a little-endian u64 */
#define SHM_VERSION 1
#define SHM_FD 3

enum { OP_QUIT = 0, OP_MALLOC = 1, OP_FREE = 2, OP_CALLOC = 3, OP_REALLOC = 4, OP_REALLOCARRAY = 5,
       OP_POSIX_MEMALIGN = 6, OP_ALIGNED_ALLOC = 7, OP_MEMALIGN = 8, OP_VALLOC = 9, OP_PVALLOC = 10 };
enum { STATE_STARTING = 0, STATE_READY = 1, STATE_DONE = 2, STATE_FAILED = 3 };
enum { RESULT_INPUT_KEPT = 1 };

/* One ring entry, 32 bytes. Request: op, thread, slot, a = size, b = count or alignment.
 * Result (written over the request): a = address (0: NULL), b = usable size, map = mapping id,
 * flags = RESULT_INPUT_KEPT when a realloc failed and its input block stays live in the slot. */
struct entry {
    uint8_t op;
    uint8_t flags;
    uint16_t thread;
    uint32_t slot;
    uint64_t a;
    uint64_t b;
    uint32_t map;
    uint32_t pad;
};

/* A mapping as reported to the driver: its id, the largest extent seen, and its name. */
struct mapping {
    uint64_t start;
    uint64_t end;
    uint32_t id;
    uint32_t flags;
    char name[48];
};

/* The first page of the shared file. Counters the two sides write sit on their own cache lines. */
struct shm {
    uint64_t magic;
    uint32_t version;
    uint32_t ring_len;     /* entries, a power of two */
    uint32_t threads;      /* replay threads to create */
    uint32_t max_mappings; /* capacity of the mapping table */
    uint64_t ring_off;     /* byte offset of the ring */
    uint64_t maps_off;     /* byte offset of the mapping table */
    uint32_t state;        /* STATE_*, written by the child */
    uint32_t malloc_from_preload; /* 1 when malloc resolves into the first LD_PRELOAD object */
    uint32_t maps_count;   /* mapping table entries in use */
    uint32_t maps_rereads; /* times /proc/self/maps was read */
    char provider[256];    /* the object that defines malloc in this process */
    char message[256];     /* why the child failed */
    uint8_t pad0[64];
    uint64_t produced;     /* driver: entries written */
    uint8_t pad1[56];
    uint64_t executed;     /* child: entries executed */
    uint8_t pad2[56];
    uint32_t child_waiting;  /* futex: the child sleeps on it waiting for `produced` */
    uint8_t pad3[60];
    uint32_t driver_waiting; /* futex: the driver sleeps on it waiting for `executed` */
    uint8_t pad4[60];
    uint32_t turn;         /* futex: the replay thread whose turn it is; UINT32_MAX = stop */
    uint8_t pad5[60];
};

static struct shm *S;
static struct entry *ring;
static uint64_t ring_mask;
static struct mapping *table;

/* ---- raw system calls (these never reach the allocator, and never bump the mmap counter) ---- */

static void *raw_mmap(size_t len) {
    long r = syscall(SYS_mmap, NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    return r < 0 && r > -4096 ? NULL : (void *)r;
}

static void futex_wait(uint32_t *addr, uint32_t val, long ns) {
    struct timespec ts = { ns / 1000000000L, ns % 1000000000L };
    syscall(SYS_futex, addr, FUTEX_WAIT, val, &ts, NULL, 0);
}

static void futex_wake(uint32_t *addr) {
    syscall(SYS_futex, addr, FUTEX_WAKE, 0x7fffffff, NULL, NULL, 0);
}

static void say(const char *s) {
    ssize_t r = write(2, s, strlen(s));
    (void)r;
}

static void fail(const char *msg) {
    if (S) {
        strncpy(S->message, msg, sizeof S->message - 1);
        __atomic_store_n(&S->state, STATE_FAILED, __ATOMIC_SEQ_CST);
        futex_wake(&S->driver_waiting);
    }
    say("heaplab replay child: ");
    say(msg);
    say("\n");
    _exit(3);
}

/* ---- the allocator's mmap calls, counted ---- */

static uint64_t map_generation;

void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off) {
    __atomic_fetch_add(&map_generation, 1, __ATOMIC_RELAXED);
    return (void *)syscall(SYS_mmap, addr, len, prot, flags, fd, off);
}
void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off) __attribute__((alias("mmap")));

int munmap(void *addr, size_t len) {
    __atomic_fetch_add(&map_generation, 1, __ATOMIC_RELAXED);
    return (int)syscall(SYS_munmap, addr, len);
}

void *mremap(void *old, size_t old_len, size_t new_len, int flags, ...) {
    void *new_addr = NULL;
    if (flags & MREMAP_FIXED) {
        va_list ap;
        va_start(ap, flags);
        new_addr = va_arg(ap, void *);
        va_end(ap);
    }
    __atomic_fetch_add(&map_generation, 1, __ATOMIC_RELAXED);
    return (void *)syscall(SYS_mremap, old, old_len, new_len, flags, new_addr);
}

/* ---- the process's mappings ---- */

/* The writable mappings from the last read of /proc/self/maps, sorted by start, with ids. */
struct vma {
    uint64_t start, end;
    uint32_t id;
};
#define MAX_VMAS 65536
static struct vma *vmas, *vmas_next;
static uint32_t nvmas;
static char *maps_buf;
#define MAPS_BUF (4u << 20)
static uint64_t seen_generation;
static int maps_dirty = 1;

static uint64_t hex(const char **p) {
    uint64_t v = 0;
    for (;;) {
        char c = **p;
        int d;
        if (c >= '0' && c <= '9') d = c - '0';
        else if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
        else break;
        v = v << 4 | (uint64_t)d;
        (*p)++;
    }
    return v;
}

/* Records the extent and name of mapping `id` in the table the driver reads. */
static void note_mapping(uint32_t id, uint64_t start, uint64_t end, const char *name, size_t nlen) {
    if (id == 0 || id > S->max_mappings) return;
    struct mapping *m = &table[id - 1];
    if (m->id == 0) {
        m->id = id;
        m->start = start;
        m->end = end;
        if (nlen >= sizeof m->name) nlen = sizeof m->name - 1;
        memcpy(m->name, name, nlen);
        m->name[nlen] = 0;
        if (id > S->maps_count) __atomic_store_n(&S->maps_count, id, __ATOMIC_RELEASE);
    } else {
        if (start < m->start) m->start = start;
        if (end > m->end) m->end = end;
    }
}

static uint32_t next_id = 1;

/* Re-reads /proc/self/maps; writable mappings inherit the oldest id among the previous
 * mappings they overlap, or get a new one. */
static void read_maps(void) {
    int fd = (int)syscall(SYS_openat, AT_FDCWD, "/proc/self/maps", O_RDONLY | O_CLOEXEC);
    if (fd < 0) fail("cannot open /proc/self/maps");
    size_t len = 0;
    for (;;) {
        long r = syscall(SYS_read, fd, maps_buf + len, MAPS_BUF - 1 - len);
        if (r < 0 && r != -EINTR) break;
        if (r <= 0) break;
        len += (size_t)r;
        if (len >= MAPS_BUF - 1) break;
    }
    syscall(SYS_close, fd);
    maps_buf[len] = 0;
    uint32_t n = 0, old = 0;
    const char *p = maps_buf;
    while (*p && n < MAX_VMAS) {
        const char *line = p;
        uint64_t start = hex(&p);
        if (*p == '-') p++;
        uint64_t end = hex(&p);
        while (*p == ' ') p++;
        int writable = p[0] && p[1] == 'w';
        /* name: after perms, offset, dev, inode */
        const char *q = p;
        for (int field = 0; field < 4 && *q && *q != '\n'; field++) {
            while (*q && *q != ' ' && *q != '\n') q++;
            while (*q == ' ') q++;
        }
        const char *name = q;
        while (*q && *q != '\n') q++;
        size_t nlen = (size_t)(q - name);
        p = *q ? q + 1 : q;
        (void)line;
        if (!writable || end <= start) continue;
        if (nlen >= 7 && memcmp(name, "[stack]", 7) == 0) continue;
        /* The previous mappings overlapping [start, end): both lists are sorted. */
        while (old < nvmas && vmas[old].end <= start) old++;
        uint32_t id = 0;
        for (uint32_t k = old; k < nvmas && vmas[k].start < end; k++)
            if (id == 0 || vmas[k].id < id) id = vmas[k].id;
        if (id == 0) id = next_id++;
        vmas_next[n].start = start;
        vmas_next[n].end = end;
        vmas_next[n].id = id;
        note_mapping(id, start, end, nlen ? name : "anonymous", nlen ? nlen : 9);
        n++;
    }
    struct vma *t = vmas;
    vmas = vmas_next;
    vmas_next = t;
    nvmas = n;
    S->maps_rereads++;
    maps_dirty = 0;
}

static uint32_t find(uint64_t addr, uint64_t len) {
    uint32_t lo = 0, hi = nvmas;
    while (lo < hi) {
        uint32_t mid = (lo + hi) / 2;
        if (vmas[mid].end <= addr) lo = mid + 1;
        else hi = mid;
    }
    if (lo < nvmas && vmas[lo].start <= addr && addr + (len ? len : 1) <= vmas[lo].end) return vmas[lo].id;
    return 0;
}

static uint32_t mapping_of(uint64_t addr, uint64_t len) {
    uint64_t g = __atomic_load_n(&map_generation, __ATOMIC_RELAXED);
    if (g != seen_generation || maps_dirty) {
        seen_generation = g;
        read_maps();
    }
    uint32_t id = find(addr, len);
    if (id == 0) {
        read_maps();
        id = find(addr, len);
    }
    return id;
}

/* ---- the allocation functions: the preloaded allocator's, or emulated on its own calls when it
 * lacks one (glibc's version would hand out glibc memory that the allocator cannot free) ---- */

static void *(*f_reallocarray)(void *, size_t, size_t);
static void *(*f_valloc)(size_t);
static void *(*f_pvalloc)(size_t);
static void *(*f_memalign)(size_t, size_t);
static void *(*f_aligned_alloc)(size_t, size_t);
static size_t page_size;

static void *own(const char *name, void *malloc_obj) {
    void *f = dlsym(RTLD_DEFAULT, name);
    Dl_info info;
    if (!f || !dladdr(f, &info) || info.dli_fbase != malloc_obj) return NULL;
    return f;
}

static void *do_reallocarray(void *p, size_t n, size_t s) {
    if (f_reallocarray) return f_reallocarray(p, n, s);
    size_t total;
    if (__builtin_mul_overflow(n, s, &total)) {
        errno = ENOMEM;
        return NULL;
    }
    return realloc(p, total);
}

static void *do_memalign(size_t a, size_t s) {
    if (f_memalign) return f_memalign(a, s);
    void *p = NULL;
    if (a < sizeof(void *)) a = sizeof(void *);
    return posix_memalign(&p, a, s) == 0 ? p : NULL;
}

static void *do_aligned_alloc(size_t a, size_t s) {
    if (f_aligned_alloc) return f_aligned_alloc(a, s);
    return do_memalign(a, s);
}

static void *do_valloc(size_t s) {
    return f_valloc ? f_valloc(s) : do_memalign(page_size, s);
}

static void *do_pvalloc(size_t s) {
    if (f_pvalloc) return f_pvalloc(s);
    size_t r = (s + page_size - 1) & ~(page_size - 1);
    return do_memalign(page_size, r ? r : page_size);
}

/* ---- the replay ---- */

static void **blocks; /* slot -> block */
#define MAX_SLOTS (1ull << 28)

static void execute(struct entry *e) {
    void *p = NULL;
    uint32_t s = e->slot;
    if (s >= MAX_SLOTS) fail("slot out of range");
    switch (e->op) {
    case OP_MALLOC: p = malloc(e->a); break;
    case OP_CALLOC: p = calloc(e->b, e->a); break;
    case OP_POSIX_MEMALIGN:
        if (posix_memalign(&p, e->b, e->a) != 0) p = NULL;
        break;
    case OP_ALIGNED_ALLOC: p = do_aligned_alloc(e->b, e->a); break;
    case OP_MEMALIGN: p = do_memalign(e->b, e->a); break;
    case OP_VALLOC: p = do_valloc(e->a); break;
    case OP_PVALLOC: p = do_pvalloc(e->a); break;
    case OP_REALLOC:
    case OP_REALLOCARRAY: {
        void *old = blocks[s];
        uint64_t total = e->a;
        if (e->op == OP_REALLOCARRAY && __builtin_mul_overflow(e->a, e->b, &total)) total = UINT64_MAX;
        p = e->op == OP_REALLOC ? realloc(old, e->a) : do_reallocarray(old, e->b, e->a);
        if (!p && old && total != 0) {
            /* Failed (out of memory): the input block stays live and in its slot, as C says; it
             * is not the new block, so report no address and let the driver keep the input's
             * job open instead of recording the new size at the old address. */
            e->a = e->b = 0;
            e->map = 0;
            e->flags = RESULT_INPUT_KEPT;
            return;
        }
        if (!p) {
            /* realloc(p, 0) freed p, or realloc(NULL, n) failed: nothing is live in the slot. */
            blocks[s] = NULL;
            e->a = e->b = 0;
            e->map = 0;
            return;
        }
        break;
    }
    case OP_FREE: {
        void *old = blocks[s];
        uint64_t usable = old ? malloc_usable_size(old) : 0;
        free(old);
        blocks[s] = NULL;
        if (usable >= (64u << 10)) maps_dirty = 1;
        e->a = e->b = 0;
        e->map = 0;
        return;
    }
    default: fail("unknown request");
    }
    blocks[s] = p;
    if (!p) {
        e->a = e->b = 0;
        e->map = 0;
        return;
    }
    uint64_t usable = malloc_usable_size(p);
    e->a = (uint64_t)(uintptr_t)p;
    e->b = usable;
    e->map = mapping_of((uint64_t)(uintptr_t)p, usable);
}

#define SPIN 4000

static inline void relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

/* Publishes progress and wakes the driver if it sleeps. */
static void publish(uint64_t done) {
    __atomic_store_n(&S->executed, done, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&S->driver_waiting, __ATOMIC_SEQ_CST)) {
        __atomic_store_n(&S->driver_waiting, 0, __ATOMIC_SEQ_CST);
        futex_wake(&S->driver_waiting);
    }
}

/* The next index the driver has produced beyond `cursor`, waiting for it. */
static uint64_t wait_produced(uint64_t cursor) {
    for (int i = 0;; i++) {
        uint64_t p = __atomic_load_n(&S->produced, __ATOMIC_ACQUIRE);
        if (p > cursor) return p;
        if (i < SPIN) {
            relax();
            continue;
        }
        publish(cursor);
        __atomic_store_n(&S->child_waiting, 1, __ATOMIC_SEQ_CST);
        if (__atomic_load_n(&S->produced, __ATOMIC_SEQ_CST) <= cursor) futex_wait(&S->child_waiting, 1, 50000000L);
        __atomic_store_n(&S->child_waiting, 0, __ATOMIC_SEQ_CST);
        if (getppid() == 1) fail("the driver went away");
        i = 0;
    }
}

static uint64_t cursor;   /* next entry to execute; only the thread whose turn it is touches it */
static uint64_t produced; /* last known value of S->produced */

/* Runs entries while they belong to thread `me`; returns when another thread's turn comes. */
static void run(uint32_t me) {
    for (;;) {
        if (cursor == produced) produced = wait_produced(cursor);
        struct entry *e = &ring[cursor & ring_mask];
        if (e->op == OP_QUIT) {
            cursor++;
            publish(cursor);
            __atomic_store_n(&S->turn, UINT32_MAX, __ATOMIC_SEQ_CST);
            futex_wake(&S->turn);
            return;
        }
        if (e->thread != me) {
            if (e->thread >= S->threads) fail("thread index out of range");
            __atomic_store_n(&S->turn, e->thread, __ATOMIC_SEQ_CST);
            futex_wake(&S->turn);
            return;
        }
        execute(e);
        cursor++;
        if ((cursor & 255) == 0) publish(cursor);
    }
}

/* Waits for thread `me`'s turn; false when the replay is over. */
static int my_turn(uint32_t me) {
    for (int i = 0;; i++) {
        uint32_t t = __atomic_load_n(&S->turn, __ATOMIC_ACQUIRE);
        if (t == me) return 1;
        if (t == UINT32_MAX) return 0;
        if (i < SPIN) {
            relax();
            continue;
        }
        futex_wait(&S->turn, t, 50000000L);
    }
}

static void *thread_main(void *arg) {
    uint32_t me = (uint32_t)(uintptr_t)arg;
    while (my_turn(me)) run(me);
    return NULL;
}

int main(void) {
    S = (struct shm *)mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, SHM_FD, 0);
    if (S == MAP_FAILED) {
        S = NULL;
        fail("cannot map the shared memory (descriptor 3)");
    }
    if (S->magic != SHM_MAGIC || S->version != SHM_VERSION) fail("shared memory of another version");
    size_t total = S->maps_off + (size_t)S->max_mappings * sizeof(struct mapping);
    long r = syscall(SYS_mmap, NULL, total, PROT_READ | PROT_WRITE, MAP_SHARED, SHM_FD, 0);
    if (r < 0 && r > -4096) fail("cannot map the shared memory");
    munmap(S, 4096);
    S = (struct shm *)r;
    ring = (struct entry *)((char *)S + S->ring_off);
    ring_mask = S->ring_len - 1;
    table = (struct mapping *)((char *)S + S->maps_off);
    page_size = (size_t)sysconf(_SC_PAGESIZE);

    /* Which object defines malloc: the driver checks it is the allocator it asked for. */
    Dl_info info;
    void *m = dlsym(RTLD_DEFAULT, "malloc");
    if (m && dladdr(m, &info) && info.dli_fname) {
        strncpy(S->provider, info.dli_fname, sizeof S->provider - 1);
        const char *pre = getenv("LD_PRELOAD");
        if (pre && *pre) {
            size_t n = strcspn(pre, ": ");
            S->malloc_from_preload = strlen(info.dli_fname) == n && strncmp(info.dli_fname, pre, n) == 0;
        }
        f_reallocarray = (void *(*)(void *, size_t, size_t))own("reallocarray", info.dli_fbase);
        f_valloc = (void *(*)(size_t))own("valloc", info.dli_fbase);
        f_pvalloc = (void *(*)(size_t))own("pvalloc", info.dli_fbase);
        f_memalign = (void *(*)(size_t, size_t))own("memalign", info.dli_fbase);
        f_aligned_alloc = (void *(*)(size_t, size_t))own("aligned_alloc", info.dli_fbase);
    }
    blocks = raw_mmap(MAX_SLOTS * sizeof(void *));
    vmas = raw_mmap(MAX_VMAS * sizeof(struct vma));
    vmas_next = raw_mmap(MAX_VMAS * sizeof(struct vma));
    maps_buf = raw_mmap(MAPS_BUF);
    if (!blocks || !vmas || !vmas_next || !maps_buf) fail("cannot map the replayer's tables");

    uint32_t n = S->threads ? S->threads : 1;
    pthread_t *th = raw_mmap(n * sizeof(pthread_t));
    if (!th) fail("cannot map the thread table");
    __atomic_store_n(&S->turn, 0, __ATOMIC_SEQ_CST);
    for (uint32_t i = 1; i < n; i++) {
        pthread_attr_t a;
        pthread_attr_init(&a);
        pthread_attr_setstacksize(&a, 256 << 10);
        if (pthread_create(&th[i], &a, thread_main, (void *)(uintptr_t)i) != 0) fail("cannot create a replay thread");
        pthread_attr_destroy(&a);
    }
    read_maps();
    seen_generation = __atomic_load_n(&map_generation, __ATOMIC_RELAXED);
    __atomic_store_n(&S->state, STATE_READY, __ATOMIC_SEQ_CST);
    futex_wake(&S->driver_waiting);
    thread_main((void *)(uintptr_t)0);
    for (uint32_t i = 1; i < n; i++) pthread_join(th[i], NULL);
    __atomic_store_n(&S->state, STATE_DONE, __ATOMIC_SEQ_CST);
    publish(cursor);
    futex_wake(&S->driver_waiting);
    _exit(0);
}

/* The layout the driver mirrors (crates/replay/src/driver.rs). */
_Static_assert(sizeof(struct entry) == 32, "entry layout");
_Static_assert(sizeof(struct mapping) == 72, "mapping layout");
_Static_assert(__builtin_offsetof(struct shm, produced) == 632, "shm layout");
_Static_assert(__builtin_offsetof(struct shm, executed) == 696, "shm layout");
_Static_assert(__builtin_offsetof(struct shm, child_waiting) == 760, "shm layout");
_Static_assert(__builtin_offsetof(struct shm, driver_waiting) == 824, "shm layout");
_Static_assert(__builtin_offsetof(struct shm, turn) == 888, "shm layout");
