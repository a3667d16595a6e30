/* interpose.c — the native layer's interposers (see interpose.h for the contract with a client).
 *
 * Owns the process-level corner cases every heaplab preload library shares: bootstrap (dlsym
 * allocates before the real malloc is known: the bootstrap arena serves it), re-entrancy (a
 * thread-local guard in initial-exec TLS, which needs no allocation, sends the client's own and
 * nested calls straight to the real functions), and the calls that end or replace an image
 * (_exit, exec, fatal signals). What is done with each call is the client's: the hooks.
 */
#define _GNU_SOURCE
#include "interpose.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <string.h>
#include <sys/mman.h>

struct hl_real hl_real;
__thread struct hl_thread hl_self __attribute__((tls_model("initial-exec")));
atomic_int hl_init_state;
atomic_int hl_active;
atomic_uint_fast64_t hl_free_null;
long hl_page_size;
#ifdef HL_CLIENT_SERVES
uintptr_t hl_own_base, hl_own_len;
#endif

void hl_say(const char *msg) {
    ssize_t r = write(2, msg, strlen(msg));
    (void)r;
}

/* ---- bootstrap arena: serves dlsym's own requests before the real functions are known ---- */
static _Alignas(16) unsigned char boot_arena[1 << 16];
static atomic_size_t boot_used;

static void *boot_alloc(size_t n) {
    /* The arena is never reused, so it is always zero: calloc needs nothing more. */
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

/* ---- initialisation ---- */

/* Keeps `fn` only if it comes from the same object as the real malloc. An allocator preloaded
 * after heaplab may lack part of the aligned family (jemalloc has no pvalloc): glibc's would
 * then hand out blocks that the other allocator's free cannot take. Without it, the call goes
 * through posix_memalign (see hl_real_alloc). */
#define SAME_OBJECT_AS_MALLOC(fn)                                                                 \
    do {                                                                                          \
        if ((fn) && object_of((void *)(fn)) != object_of((void *)hl_real.malloc)) (fn) = NULL;   \
    } while (0)

/* The loaded object holding code address `fn` (NULL when none is found). glibc's
 * _dl_find_object is a binary search; dladdr, where it is missing, also looks for the nearest
 * symbol, a linear scan of the object's symbols (libc has thousands) on every call. */
static const void *object_of(void *fn) {
#ifdef DLFO_STRUCT_HAS_EH_DBASE
    struct dl_find_object o;
    return _dl_find_object(fn, &o) == 0 ? (const void *)o.dlfo_link_map : NULL;
#else
    Dl_info i;
    return dladdr(fn, &i) ? i.dli_fbase : NULL;
#endif
}

static void resolve(void) {
    hl_real.malloc = dlsym(RTLD_NEXT, "malloc");
    hl_real.free = dlsym(RTLD_NEXT, "free");
    hl_real.calloc = dlsym(RTLD_NEXT, "calloc");
    hl_real.realloc = dlsym(RTLD_NEXT, "realloc");
    hl_real.posix_memalign = dlsym(RTLD_NEXT, "posix_memalign");
    hl_real.aligned_alloc = dlsym(RTLD_NEXT, "aligned_alloc");
    hl_real.memalign = dlsym(RTLD_NEXT, "memalign");
    hl_real.valloc = dlsym(RTLD_NEXT, "valloc");
    hl_real.pvalloc = dlsym(RTLD_NEXT, "pvalloc");
    hl_real.usable = dlsym(RTLD_NEXT, "malloc_usable_size");
    hl_real._exit = dlsym(RTLD_NEXT, "_exit");
    hl_real.execve = dlsym(RTLD_NEXT, "execve");
    hl_real.execv = dlsym(RTLD_NEXT, "execv");
    hl_real.execvp = dlsym(RTLD_NEXT, "execvp");
    hl_real.execvpe = dlsym(RTLD_NEXT, "execvpe");
    hl_real.fexecve = dlsym(RTLD_NEXT, "fexecve");
    hl_real.mmap = dlsym(RTLD_NEXT, "mmap");
    hl_real.munmap = dlsym(RTLD_NEXT, "munmap");
    hl_real.mremap = dlsym(RTLD_NEXT, "mremap");
    hl_real.mprotect = dlsym(RTLD_NEXT, "mprotect");
    hl_real.brk = dlsym(RTLD_NEXT, "brk");
    hl_real.sbrk = dlsym(RTLD_NEXT, "sbrk");
    if (!hl_real.malloc || !hl_real.free || !hl_real.calloc || !hl_real.realloc || !hl_real.usable || !hl_real.posix_memalign) {
        hl_say("heaplab: cannot find the real malloc functions; aborting\n");
        syscall(SYS_exit_group, 127);
    }
    SAME_OBJECT_AS_MALLOC(hl_real.aligned_alloc);
    SAME_OBJECT_AS_MALLOC(hl_real.memalign);
    SAME_OBJECT_AS_MALLOC(hl_real.valloc);
    SAME_OBJECT_AS_MALLOC(hl_real.pvalloc);
}

static void do_init(void) {
    hl_self.busy = 1;
    resolve();
    hl_page_size = sysconf(_SC_PAGESIZE);
    hl_on_init();
    hl_self.busy = 0;
}

static inline void ensure_init(void) {
    if (HL_LIKELY(atomic_load_explicit(&hl_init_state, memory_order_acquire) == 2)) return;
    int zero = 0;
    if (atomic_compare_exchange_strong(&hl_init_state, &zero, 1)) {
        do_init();
        atomic_store_explicit(&hl_init_state, 2, memory_order_release);
    }
    /* Otherwise another thread (or our own dlsym) is initialising: callers fall back to the
     * bootstrap arena until the real functions are known. */
}

__attribute__((constructor)) static void hl_constructor(void) { ensure_init(); }
__attribute__((destructor)) static void hl_destructor(void) { hl_on_exit(); }

size_t hl_read_file(const char *path, char *buf, size_t cap) {
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

void hl_read_conf(const char *conf, const struct hl_conf_key *keys, size_t n) {
    for (const char *l = conf; l && *l;) {
        const char *e = strchr(l, '\n');
        if (!e) e = l + strlen(l);
        for (size_t k = 0; k < n; k++) {
            size_t kl = strlen(keys[k].key), vl = (size_t)(e - l) - kl;
            if ((size_t)(e - l) >= kl && memcmp(l, keys[k].key, kl) == 0 && vl < keys[k].cap) {
                memcpy(keys[k].dst, l + kl, vl);
                keys[k].dst[vl] = 0;
            }
        }
        l = *e ? e + 1 : e;
    }
}

void hl_watch_fork(void) { pthread_atfork(hl_on_fork_prepare, hl_on_fork_parent, hl_on_fork_child); }

static const int fatal_signals[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};

static void on_fatal(int sig, siginfo_t *si, void *uc) {
    (void)si;
    (void)uc;
    if (!hl_self.busy) hl_on_fatal_signal(sig);
    /* Restore the default action and let the signal kill the process as it would have. */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = SIG_DFL;
    sigaction(sig, &sa, NULL);
    raise(sig);
}

void hl_watch_fatal_signals(void) {
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

/* ---- the malloc family ---- */

#ifdef HL_CLIENT_SERVES
__attribute__((weak)) void *hl_serve_malloc(size_t n, void *ret) { return hl_serve_alloc(HL_MALLOC, n, 0, ret, NULL); }
#endif

#define PROLOGUE_ALLOC(fallback)                \
    if (HL_UNLIKELY(hl_init_state != 2)) {      \
        ensure_init();                          \
        if (!hl_real.malloc) return fallback;   \
    }

HL_EXPORT void *malloc(size_t n) {
    PROLOGUE_ALLOC(boot_alloc(n));
    struct hl_thread *t = &hl_self;
    if (t->busy || !hl_active) return hl_real.malloc(n);
    t->busy = 1;
#ifdef HL_CLIENT_SERVES
    t->frame = __builtin_frame_address(0);
    void *p = hl_serve_malloc(n, __builtin_return_address(0));
    t->frame = NULL;
#else
    void *p = hl_real.malloc(n);
    hl_on_alloc(HL_MALLOC, p, n, 0, __builtin_return_address(0));
#endif
    t->busy = 0;
    return p;
}

HL_EXPORT void *calloc(size_t nmemb, size_t size) {
    PROLOGUE_ALLOC(boot_alloc(nmemb * size));
    struct hl_thread *t = &hl_self;
    if (t->busy || !hl_active) return hl_real.calloc(nmemb, size);
    t->busy = 1;
#ifdef HL_CLIENT_SERVES
    t->frame = __builtin_frame_address(0);
    void *p = hl_serve_alloc(HL_CALLOC, size, nmemb, __builtin_return_address(0), NULL);
    t->frame = NULL;
#else
    void *p = hl_real.calloc(nmemb, size);
    hl_on_alloc(HL_CALLOC, p, size, nmemb, __builtin_return_address(0));
#endif
    t->busy = 0;
    return p;
}

HL_EXPORT void free(void *p) {
    if (HL_UNLIKELY(is_boot(p))) return;
    if (!p) {
        if (hl_active) atomic_fetch_add_explicit(&hl_free_null, 1, memory_order_relaxed);
        return;
    }
#ifdef HL_CLIENT_SERVES
    /* The client's blocks go back to it whatever the state; the others to the real free. */
    if (hl_owns(p)) {
        hl_serve_free(p);
        return;
    }
    if (HL_UNLIKELY(!hl_real.free)) {
        ensure_init();
        if (!hl_real.free) return;
    }
    hl_real.free(p);
}
#else
    if (HL_UNLIKELY(!hl_real.free)) {
        ensure_init();
        if (!hl_real.free) return; /* only bootstrap pointers exist yet */
    }
    struct hl_thread *t = &hl_self;
    if (t->busy || !hl_active) {
        hl_real.free(p);
        return;
    }
    t->busy = 1;
    /* The hook runs before the block is released: another thread can only be handed this
     * address after it, so a recorded order never shows two live blocks overlapping. */
    hl_on_free(p);
    hl_real.free(p);
    t->busy = 0;
}
#endif

/* realloc and reallocarray release the old block and then hand out the new one: one hook
 * before the call (the release) and one after (the allocation). */
/* Inlined into its callers, so that its frame address is theirs (the program's return address
 * above it). */
static inline __attribute__((always_inline)) void *realloc_common(int op, void *old, size_t nmemb, size_t size, void *ret) {
    struct hl_thread *t = &hl_self;
    size_t bytes = size;
    if (op == HL_REALLOCARRAY && __builtin_mul_overflow(nmemb, size, &bytes)) {
        errno = ENOMEM;
        bytes = SIZE_MAX; /* seen by the hooks as a failed request */
    }
#ifdef HL_CLIENT_SERVES
    if (op == HL_REALLOCARRAY && bytes == SIZE_MAX) return NULL;
    int identify = !t->busy && hl_active;
    if (!identify && !hl_owns(old)) return hl_real.realloc(old, bytes);
    int was = t->busy;
    const void *was_frame = t->frame;
    t->busy = 1;
    t->frame = __builtin_frame_address(0);
    void *q = hl_serve_realloc(old, bytes, ret, identify);
    t->busy = was;
    t->frame = was_frame;
    return q;
#else
    if (t->busy || !hl_active) return bytes == SIZE_MAX && op == HL_REALLOCARRAY ? NULL : hl_real.realloc(old, bytes);
    t->busy = 1;
    struct hl_call c = {.op = op, .in = (uintptr_t)old, .size = size, .extra = nmemb, .ret = ret};
    hl_on_realloc_begin(&c);
    void *p = (op == HL_REALLOCARRAY && bytes == SIZE_MAX) ? NULL : hl_real.realloc(old, bytes);
    c.out = (uintptr_t)p;
    hl_on_realloc_end(&c);
    t->busy = 0;
    return p;
#endif
}

HL_EXPORT void *realloc(void *old, size_t size) {
    if (HL_UNLIKELY(is_boot(old))) {
        /* A bootstrap block moves to the real heap; the arena copy is simply abandoned. */
        void *p = malloc(size);
        if (p) {
            size_t n = boot_size(old);
            memcpy(p, old, n < size ? n : size);
        }
        return p;
    }
    PROLOGUE_ALLOC(boot_alloc(size));
    return realloc_common(HL_REALLOC, old, 1, size, __builtin_return_address(0));
}

HL_EXPORT void *reallocarray(void *old, size_t nmemb, size_t size) {
    if (HL_UNLIKELY(is_boot(old))) {
        size_t bytes;
        if (__builtin_mul_overflow(nmemb, size, &bytes)) {
            errno = ENOMEM;
            return NULL;
        }
        return realloc(old, bytes);
    }
    PROLOGUE_ALLOC(boot_alloc(nmemb * size));
    return realloc_common(HL_REALLOCARRAY, old, nmemb, size, __builtin_return_address(0));
}

void *hl_real_alloc(int op, size_t size, size_t align, int *err) {
    void *p = NULL;
    int r = 0;
    size_t page = (size_t)hl_page_size;
    switch (op) {
    case HL_MALLOC:
        p = hl_real.malloc(size);
        break;
    case HL_CALLOC:
        p = hl_real.calloc(align, size); /* `align` is calloc's nmemb here */
        break;
    case HL_POSIX_MEMALIGN:
        r = hl_real.posix_memalign(&p, align, size);
        if (r) p = NULL;
        break;
    case HL_ALIGNED_ALLOC:
        p = hl_real.aligned_alloc ? hl_real.aligned_alloc(align, size) : (hl_real.posix_memalign(&p, align, size) ? NULL : p);
        break;
    case HL_MEMALIGN:
        p = hl_real.memalign ? hl_real.memalign(align, size) : (hl_real.posix_memalign(&p, align, size) ? NULL : p);
        break;
    case HL_VALLOC:
        p = hl_real.valloc ? hl_real.valloc(size) : (hl_real.posix_memalign(&p, page, size) ? NULL : p);
        break;
    case HL_PVALLOC: {
        size_t rounded = (size + page - 1) & ~(page - 1);
        p = hl_real.pvalloc ? hl_real.pvalloc(size) : (hl_real.posix_memalign(&p, page, rounded) ? NULL : p);
        break;
    }
    }
    if (err) *err = r;
    return p;
}

/* Inlined into its callers (as realloc_common is). */
static inline __attribute__((always_inline)) void *aligned_common(int op, size_t align, size_t size, void *ret, int *err) {
    struct hl_thread *t = &hl_self;
    if (t->busy || !hl_active) return hl_real_alloc(op, size, align, err);
    t->busy = 1;
#ifdef HL_CLIENT_SERVES
    if (err) *err = 0;
    t->frame = __builtin_frame_address(0);
    void *p = hl_serve_alloc(op, size, align, ret, err);
    t->frame = NULL;
#else
    void *p = hl_real_alloc(op, size, align, err);
    hl_on_alloc(op, p, size, align, ret);
#endif
    t->busy = 0;
    return p;
}

HL_EXPORT int posix_memalign(void **memptr, size_t align, size_t size) {
    if (HL_UNLIKELY(hl_init_state != 2)) {
        ensure_init();
        if (!hl_real.malloc) {
            *memptr = NULL;
            return ENOMEM; /* no aligned requests are expected during bootstrap */
        }
    }
    int err = 0;
    void *p = aligned_common(HL_POSIX_MEMALIGN, align, size, __builtin_return_address(0), &err);
    if (!err) *memptr = p;
    return err;
}
HL_EXPORT void *aligned_alloc(size_t align, size_t size) {
    PROLOGUE_ALLOC(NULL);
    return aligned_common(HL_ALIGNED_ALLOC, align, size, __builtin_return_address(0), NULL);
}
HL_EXPORT void *memalign(size_t align, size_t size) {
    PROLOGUE_ALLOC(NULL);
    return aligned_common(HL_MEMALIGN, align, size, __builtin_return_address(0), NULL);
}
HL_EXPORT void *valloc(size_t size) {
    PROLOGUE_ALLOC(NULL);
    return aligned_common(HL_VALLOC, (size_t)hl_page_size, size, __builtin_return_address(0), NULL);
}
HL_EXPORT void *pvalloc(size_t size) {
    PROLOGUE_ALLOC(NULL);
    return aligned_common(HL_PVALLOC, (size_t)hl_page_size, size, __builtin_return_address(0), NULL);
}

HL_EXPORT size_t malloc_usable_size(void *p) {
    if (HL_UNLIKELY(is_boot(p))) return boot_size(p);
#ifdef HL_CLIENT_SERVES
    if (hl_owns(p)) return hl_serve_usable(p);
#endif
    if (HL_UNLIKELY(!hl_real.usable)) {
        ensure_init();
        if (!hl_real.usable) return 0;
    }
    return hl_real.usable(p);
}

/* ---- the program's direct address-space calls ---- */

/* Whether this call of a page function is hooked: hooks are active, the real functions are
 * known, and we are not inside a hook or a hooked call (an allocator's own mmap calls made
 * inside malloc belong to the heap). */
static inline int page_hooked(struct hl_thread *t) {
    if (HL_UNLIKELY(hl_init_state != 2)) {
        ensure_init();
        if (hl_init_state != 2) return 0;
    }
    return !t->busy && hl_active && hl_real.mmap;
}

/* Calls the after hook, keeping the call's errno for the program. */
static void after_page(struct hl_page *e) {
    int err = errno;
    hl_after_page(e);
    errno = err;
}

HL_EXPORT void *mmap(void *addr, size_t len, int prot, int flags, int fdesc, off_t off) {
    struct hl_thread *t = &hl_self;
    if (!page_hooked(t)) return hl_real.mmap ? hl_real.mmap(addr, len, prot, flags, fdesc, off) : sys_mmap(addr, len, prot, flags, fdesc, off);
    t->busy = 1;
    struct hl_page e = {.kind = HL_MMAP, .len = len, .prot = (uint32_t)prot, .flags = (uint32_t)flags};
    hl_before_page(&e);
    void *r = hl_real.mmap(addr, len, prot, flags, fdesc, off);
    e.failed = r == MAP_FAILED;
    e.addr = (uintptr_t)r;
    after_page(&e);
    t->busy = 0;
    return r;
}
HL_EXPORT void *mmap64(void *addr, size_t len, int prot, int flags, int fdesc, off_t off) { return mmap(addr, len, prot, flags, fdesc, off); }

HL_EXPORT int munmap(void *addr, size_t len) {
    struct hl_thread *t = &hl_self;
    if (!page_hooked(t)) return hl_real.munmap ? hl_real.munmap(addr, len) : sys_munmap(addr, len);
    t->busy = 1;
    struct hl_page e = {.kind = HL_MUNMAP, .addr = (uintptr_t)addr, .len = len};
    hl_before_page(&e);
    int r = hl_real.munmap(addr, len);
    e.failed = r != 0;
    after_page(&e);
    t->busy = 0;
    return r;
}

HL_EXPORT void *mremap(void *old, size_t old_len, size_t new_len, int flags, ...) {
    void *want = NULL;
    if (flags & MREMAP_FIXED) {
        va_list ap;
        va_start(ap, flags);
        want = va_arg(ap, void *);
        va_end(ap);
    }
    struct hl_thread *t = &hl_self;
    if (!page_hooked(t)) {
        if (hl_real.mremap) return hl_real.mremap(old, old_len, new_len, flags, want);
        return (void *)syscall(SYS_mremap, old, old_len, new_len, flags, want);
    }
    t->busy = 1;
    struct hl_page e = {.kind = HL_MREMAP, .addr = (uintptr_t)old, .len = old_len, .new_len = new_len, .flags = (uint32_t)flags};
    hl_before_page(&e);
    void *r = hl_real.mremap(old, old_len, new_len, flags, want);
    e.failed = r == MAP_FAILED;
    e.new_addr = (uintptr_t)r;
    after_page(&e);
    t->busy = 0;
    return r;
}

HL_EXPORT int mprotect(void *addr, size_t len, int prot) {
    struct hl_thread *t = &hl_self;
    if (!page_hooked(t)) return hl_real.mprotect ? hl_real.mprotect(addr, len, prot) : (int)syscall(SYS_mprotect, addr, len, prot);
    t->busy = 1;
    struct hl_page e = {.kind = HL_MPROTECT, .addr = (uintptr_t)addr, .len = len, .prot = (uint32_t)prot};
    hl_before_page(&e);
    int r = hl_real.mprotect(addr, len, prot);
    e.failed = r != 0;
    after_page(&e);
    t->busy = 0;
    return r;
}

/* brk and sbrk go through glibc's own functions (never a raw syscall): glibc keeps the break
 * in a variable its malloc relies on. Called while another thread is still initialising the
 * library, they look glibc's up themselves. */
static void resolve_brk(void) {
    if (!hl_real.brk) hl_real.brk = dlsym(RTLD_NEXT, "brk");
    if (!hl_real.sbrk) hl_real.sbrk = dlsym(RTLD_NEXT, "sbrk");
}
HL_EXPORT int brk(void *addr) {
    struct hl_thread *t = &hl_self;
    int hooked = page_hooked(t);
    resolve_brk();
    if (!hooked) return hl_real.brk(addr);
    t->busy = 1;
    struct hl_page e = {.kind = HL_BRK, .addr = (uintptr_t)hl_real.sbrk(0), .new_addr = (uintptr_t)addr};
    hl_before_page(&e);
    int r = hl_real.brk(addr);
    e.failed = r != 0;
    after_page(&e);
    t->busy = 0;
    return r;
}

HL_EXPORT void *sbrk(intptr_t incr) {
    struct hl_thread *t = &hl_self;
    int hooked = page_hooked(t);
    resolve_brk();
    if (!hooked) return hl_real.sbrk(incr);
    t->busy = 1;
    struct hl_page e = {.kind = HL_SBRK};
    hl_before_page(&e);
    void *r = hl_real.sbrk(incr);
    e.failed = r == (void *)-1;
    e.addr = e.failed ? (uintptr_t)hl_real.sbrk(0) : (uintptr_t)r;
    e.new_addr = e.addr + (uint64_t)(int64_t)incr;
    after_page(&e);
    t->busy = 0;
    return r;
}

/* ---- the end of an image ---- */

/* _exit skips destructors, so the hook runs here. */
HL_EXPORT void _exit(int status) {
    if (hl_init_state == 2 && !hl_self.busy) hl_on_quick_exit(status);
    if (hl_real._exit) hl_real._exit(status);
    syscall(SYS_exit_group, status);
    __builtin_unreachable();
}
HL_EXPORT void _Exit(int status) { _exit(status); }

/* exec replaces the image. glibc's own internal exec calls (inside execvp, posix_spawn) are
 * not interposable: those images get no hook. */
static void before_exec(void) {
    if (hl_init_state == 2 && !hl_self.busy) hl_before_exec();
}

/* exec returned, so it failed and this image goes on. */
static void after_failed_exec(void) {
    if (hl_init_state != 2 || hl_self.busy) return;
    int saved = errno;
    hl_after_failed_exec();
    errno = saved;
}
HL_EXPORT int execve(const char *path, char *const argv[], char *const envp[]) {
    before_exec();
    int r = hl_real.execve ? hl_real.execve(path, argv, envp) : (int)syscall(SYS_execve, path, argv, envp);
    after_failed_exec();
    return r;
}
HL_EXPORT int execv(const char *path, char *const argv[]) {
    before_exec();
    extern char **environ;
    int r = hl_real.execv ? hl_real.execv(path, argv) : execve(path, argv, environ);
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
HL_EXPORT int execvp(const char *file, char *const argv[]) { EXEC_OR_ENOSYS(hl_real.execvp, file, argv) }
HL_EXPORT int execvpe(const char *file, char *const argv[], char *const envp[]) { EXEC_OR_ENOSYS(hl_real.execvpe, file, argv, envp) }
HL_EXPORT int fexecve(int fdesc, char *const argv[], char *const envp[]) { EXEC_OR_ENOSYS(hl_real.fexecve, fdesc, argv, envp) }

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

HL_EXPORT int execl(const char *path, const char *arg, ...) {
    GATHER(arg, (void)0);
    return execv(path, args);
}
HL_EXPORT int execlp(const char *file, const char *arg, ...) {
    GATHER(arg, (void)0);
    return execvp(file, args);
}
HL_EXPORT int execle(const char *path, const char *arg, ...) {
    char *const *envp;
    GATHER(arg, envp = va_arg(ap, char *const *));
    return execve(path, args, envp);
}
