/* interpose.h — the native layer's interposition API, shared by heaplab's LD_PRELOAD libraries.
 *
 * Owns: finding the real functions (dlsym RTLD_NEXT), the bootstrap arena that serves dlsym's
 * own allocations before they are known, the thread-local re-entrancy guard, initialisation
 * order, and the exported interposers: the malloc family, the direct address-space calls
 * (mmap, munmap, mremap, mprotect, brk, sbrk), _exit, and the exec family. It records nothing
 * itself: at each call it calls the hooks below, which its client (the tracer, preload/tracer.c)
 * defines. A client is linked into the same .so as interpose.c, so the hooks are plain direct
 * calls. Compiled with HL_CLIENT_SERVES, the layer instead hands the allocation calls to a client
 * that serves them itself (the layout runtime, crates/apply/runtime/): see "client-served mode".
 *
 * Contract with a client:
 *   - Hooks run with the guard held (hl_self.busy == 1): any malloc or page call they make, and
 *     any the real functions make, goes straight to the real functions untraced. Still, a hook
 *     must not call the traced malloc for its own memory (use sys_mmap or static storage), because
 *     during bootstrap the real malloc may not be known yet.
 *   - Call hooks run only while hl_active is set (the client sets it once it is ready).
 *   - hl_on_init runs once, in the first thread that enters the library, after the real
 *     functions are resolved.
 */
#ifndef HEAPLAB_INTERPOSE_H
#define HEAPLAB_INTERPOSE_H

/* Includers define _GNU_SOURCE before any system header (off_t, RTLD_NEXT, mremap). */
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

#define HL_EXPORT __attribute__((visibility("default")))
#define HL_LIKELY(x) __builtin_expect(!!(x), 1)
#define HL_UNLIKELY(x) __builtin_expect(!!(x), 0)

/* ---- the real functions (NULL where glibc lacks one; malloc, free, calloc, realloc,
 * posix_memalign and malloc_usable_size are always there once initialisation is done) ---- */
struct hl_real {
    void *(*malloc)(size_t);
    void (*free)(void *);
    void *(*calloc)(size_t, size_t);
    void *(*realloc)(void *, size_t);
    int (*posix_memalign)(void **, size_t, size_t);
    void *(*aligned_alloc)(size_t, size_t);
    void *(*memalign)(size_t, size_t);
    void *(*valloc)(size_t);
    void *(*pvalloc)(size_t);
    size_t (*usable)(void *);
    void (*_exit)(int) __attribute__((noreturn));
    int (*execve)(const char *, char *const[], char *const[]);
    int (*execv)(const char *, char *const[]);
    int (*execvp)(const char *, char *const[]);
    int (*execvpe)(const char *, char *const[], char *const[]);
    int (*fexecve)(int, char *const[], char *const[]);
    void *(*mmap)(void *, size_t, int, int, int, off_t);
    int (*munmap)(void *, size_t);
    void *(*mremap)(void *, size_t, size_t, int, ...);
    int (*mprotect)(void *, size_t, int);
    int (*brk)(void *);
    void *(*sbrk)(intptr_t);
};
extern struct hl_real hl_real;

/* ---- per-thread guard (initial-exec TLS: touching it never allocates) ---- */
struct hl_thread {
    int busy; /* inside a hook or a real function: do not call the hooks */
    /* Client-served mode: while a malloc-family call is served, the frame address of the
     * exported function the program called (its return address is above it), else NULL. A
     * client walking the program's stack starts there (unwind.h, hl_unwind_above). */
    const void *frame;
};
extern __thread struct hl_thread hl_self __attribute__((tls_model("initial-exec")));

/* ---- process-wide state the client reads or sets ---- */
extern atomic_int hl_init_state;          /* 0 none, 1 running, 2 done */
extern atomic_int hl_active;              /* set by the client: call the hooks */
extern atomic_uint_fast64_t hl_free_null; /* free(NULL) calls while active (not a hook: too hot) */
extern long hl_page_size;

/* The library's own mappings: raw syscalls, because `mmap` inside the library binds to the
 * interposer. syscall() turns -errno into -1 (MAP_FAILED) with errno set, as mmap does. */
static inline void *sys_mmap(void *a, size_t n, int prot, int flags, int f, off_t off) {
    return (void *)syscall(SYS_mmap, a, n, prot, flags, f, off);
}
static inline int sys_munmap(void *a, size_t n) { return (int)syscall(SYS_munmap, a, n); }

/* Writes a message to stderr without allocating. */
void hl_say(const char *msg);

/* Reads a client's configuration, handed over in one environment variable as `key=value` lines
 * (separated by '\n'): each listed key found fills its buffer (NUL-terminated; a value longer
 * than `cap - 1` bytes is ignored). Never allocates. */
struct hl_conf_key {
    const char *key; /* "name=" */
    char *dst;
    size_t cap;
};
void hl_read_conf(const char *conf, const struct hl_conf_key *keys, size_t n);

/* Reads up to `cap` bytes of a file (a /proc file: read until end or `cap`); returns the count,
 * 0 when it cannot be opened. Never allocates. */
size_t hl_read_file(const char *path, char *buf, size_t cap);
/* Parses lower-case hex digits at *s, stopping at `end` or the first other character (as
 * /proc/self/maps writes addresses and offsets); advances *s. Inline: the stack walker uses it
 * without the rest of this layer. */
static inline uint64_t hl_hex(const char **s, const char *end) {
    uint64_t v = 0;
    for (; *s < end; (*s)++) {
        char c = **s;
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
        if (d < 0) break;
        v = v * 16 + (uint64_t)d;
    }
    return v;
}

/* One line of /proc/self/maps, [line, eol): the mapped range, whether it is executable, the
 * file offset, and the path as [path, eol) (empty for an anonymous mapping). */
struct hl_maps_line {
    uint64_t lo, hi, off;
    int exec;
    const char *path;
};
static inline struct hl_maps_line hl_parse_maps_line(const char *line, const char *eol) {
    struct hl_maps_line m;
    const char *s = line;
    m.lo = hl_hex(&s, eol);
    s++;
    m.hi = hl_hex(&s, eol);
    s++;
    m.exec = s + 3 < eol && s[2] == 'x';
    s += 5;
    m.off = s < eol ? hl_hex(&s, eol) : 0;
    const char *path = s;
    for (int field = 0; field < 2 && path < eol; field++) { /* skip dev and inode */
        while (path < eol && *path == ' ') path++;
        while (path < eol && *path != ' ') path++;
    }
    while (path < eol && *path == ' ') path++;
    m.path = path;
    return m;
}

/* Registers the client's fork hooks (pthread_atfork). */
void hl_watch_fork(void);
/* Installs the handler that calls hl_on_fatal_signal on SIGSEGV, SIGBUS, SIGILL, SIGFPE and
 * SIGABRT, where the program has not installed its own. */
void hl_watch_fatal_signals(void);

/* ---- the calls the hooks see ---- */

/* The malloc family. Values equal the .hltrace operation codes (the tracer checks). */
enum hl_op {
    HL_MALLOC = 1, HL_FREE, HL_CALLOC, HL_REALLOC, HL_REALLOCARRAY, HL_POSIX_MEMALIGN,
    HL_ALIGNED_ALLOC, HL_MEMALIGN, HL_VALLOC, HL_PVALLOC
};

/* One realloc or reallocarray call, from its begin hook to its end hook. */
struct hl_call {
    int op;                /* enum hl_op */
    uint64_t in, out;      /* input and result pointers (0 = NULL) */
    uint64_t size, extra;  /* size; nmemb (calloc, reallocarray) or alignment */
    void *ret;             /* the caller's return address (the call site) */
    uint64_t hook[3];      /* the hooks' own, from a *_begin hook to its *_end */
};

/* The direct address-space calls. Values equal the .hltrace page-event kinds. */
enum hl_page_op { HL_MMAP = 1, HL_MUNMAP, HL_MREMAP, HL_MPROTECT, HL_BRK, HL_SBRK };

/* One direct address-space call. Fields by kind: mmap (len, prot, flags, addr = result),
 * munmap (addr, len), mremap (addr, len, new_len, flags, new_addr = result), mprotect (addr,
 * len, prot), brk and sbrk (break before in addr, after in new_addr). `failed` is set for the
 * after hook. */
struct hl_page {
    int kind, failed;
    uint64_t addr, len, new_addr, new_len, flags, prot;
    uint64_t hook[2]; /* the hooks' own, from hl_before_page to hl_after_page */
};

/* ---- hooks: defined by the client ---- */

/* Once, after the real functions are resolved (guard held). Configure, then set hl_active. */
void hl_on_init(void);
/* An allocation call (malloc, calloc, the aligned family: `op`) has returned `out` (NULL when it
 * failed) for `size` bytes; `extra` is calloc's nmemb or the alignment; `ret` is the caller's
 * return address. Arguments rather than a struct hl_call: this is the hottest path. */
void hl_on_alloc(int op, void *out, size_t size, size_t extra, void *ret);
/* free(p), before the block is released (p is never NULL). */
void hl_on_free(void *p);
/* realloc / reallocarray: before the real call (c->out not known yet), and after it. */
void hl_on_realloc_begin(struct hl_call *c);
void hl_on_realloc_end(struct hl_call *c);
/* A direct address-space call of the program: before it (inputs only), after it (result and
 * `failed` filled). errno is kept for the program around the after hook. */
void hl_before_page(struct hl_page *p);
void hl_after_page(struct hl_page *p);
/* pthread_atfork hooks (registered by hl_watch_fork). */
void hl_on_fork_prepare(void);
void hl_on_fork_parent(void);
void hl_on_fork_child(void);
/* The process ends: exit() or return from main (the library destructor), _exit(status), or a
 * fatal signal. hl_on_fatal_signal runs in a signal handler: async-signal-safe code only
 * (syscalls, memory the client owns, trylock rather than lock). */
void hl_on_exit(void);
void hl_on_quick_exit(int status);
void hl_on_fatal_signal(int sig);
/* An exec call is about to replace the image; it returned, so it failed and this image goes on. */
void hl_before_exec(void);
void hl_after_failed_exec(void);

/* ---- client-served mode (compiled with -DHL_CLIENT_SERVES) ----
 *
 * The client serves the malloc family itself: the hl_serve_* functions below replace the real
 * call and the call hooks (hl_on_alloc, hl_on_free, hl_on_realloc_*), which the layer then never
 * calls. Blocks the client hands out of its own memory lie in [hl_own_base, hl_own_base +
 * hl_own_len) (set once, before hl_active); every other block is the real allocator's, and
 * the client gets it from hl_real_alloc or the hl_real functions (the fallback). Bootstrap,
 * guard, page calls, fork, exec and exit work as without the define.
 *   - hl_serve_alloc runs with the guard held, while hl_active, outside hooks: malloc (extra 0),
 *     calloc (extra = nmemb), the aligned family (extra = alignment); it sets *err (may be NULL)
 *     to posix_memalign's error code where the call fails.
 *   - hl_serve_free and hl_serve_usable get the client's own blocks, at any time (guard held
 *     or not, active or not): a block outlives the state that handed it out.
 *   - hl_serve_realloc gets realloc/reallocarray calls (bytes = nmemb × size, checked) while
 *     active outside hooks (identify = 1: a new block is an allocation to identify), and any
 *     call whose old block is the client's (identify = 0: only move it). Guard held.
 */
#ifdef HL_CLIENT_SERVES
extern uintptr_t hl_own_base, hl_own_len;
static inline int hl_owns(const void *p) { return (uintptr_t)p - hl_own_base < hl_own_len; }
void *hl_serve_alloc(int op, size_t size, size_t extra, void *ret, int *err);
/* hl_serve_alloc(HL_MALLOC, size, 0, ret, NULL), what malloc calls: a client may define it to
 * serve malloc without dispatching on the call (the layer's weak definition calls hl_serve_alloc). */
void *hl_serve_malloc(size_t size, void *ret);
void hl_serve_free(void *p);
size_t hl_serve_usable(void *p);
void *hl_serve_realloc(void *old, size_t bytes, void *ret, int identify);
#endif
/* Whether `align` is an alignment the call `op` accepts (else the real function reports the
 * error and nothing is allocated): what a serving client checks before serving. */
static inline int hl_valid_align(int op, size_t align) {
    if (op == HL_MALLOC || op == HL_CALLOC || op == HL_VALLOC || op == HL_PVALLOC) return 1;
    if (align == 0 || (align & (align - 1))) return 0;
    return op != HL_POSIX_MEMALIGN || align % sizeof(void *) == 0;
}
/* The real allocator's answer to one allocation call (op as for hl_serve_alloc); *err as
 * there. The fallback of a client that serves, and the layer's own path otherwise. */
void *hl_real_alloc(int op, size_t size, size_t extra, int *err);

#endif
