/* unwind.c — the stack walker (see unwind.h): per-address unwind rules decoded once from the
 * modules' .eh_frame_hdr/.eh_frame, cached in a lock-free table, and the walk over them. */
#define _GNU_SOURCE
#include "unwind.h"

#include <dlfcn.h>
#include <execinfo.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "interpose.h"

#define MAX_WALK 256 /* frames a walk returns at most (callers ask for HL_MAX_DEPTH and a few) */

atomic_int hl_unwind_mode_now;
__thread struct hl_unwind_counts hl_unwind_counted __attribute__((tls_model("initial-exec")));
_Atomic(struct hl_rule_slot *) hl_rules; /* stays NULL where the rules are not used */
__thread uintptr_t hl_stack_lo __attribute__((tls_model("initial-exec"))), hl_stack_hi __attribute__((tls_model("initial-exec")));

void hl_unwind_set_mode(enum hl_unwind_mode m) { atomic_store(&hl_unwind_mode_now, (int)m); }

void hl_unwind_init(void) {
    const char *how = getenv("HEAPLAB_UNWIND");
    if (how && strcmp(how, "backtrace") == 0) hl_unwind_set_mode(HL_UNWIND_BACKTRACE);
    if (how && strcmp(how, "check") == 0) hl_unwind_set_mode(HL_UNWIND_CHECK);
    /* glibc loads libgcc's unwinder (the fallback) on backtrace's first call, by dlopen, which
     * allocates: done here, outside any hooked call. A call asking for no frames loads it and
     * walks nothing; decoding rules and libgcc's first unwinding need no allocation, so they
     * wait for the first walk, which a program whose allocations all decide at their call
     * site never makes. */
    void *warm[1];
    backtrace(warm, 0);
}
void hl_unwind_counts(struct hl_unwind_counts *c) { *c = hl_unwind_counted; }
void hl_unwind_set_stack(uintptr_t lo, uintptr_t hi) {
    if (lo < hi) hl_stack_lo = lo, hl_stack_hi = hi;
}

/* Drops the first `skip` entries of `buf[0..n)`, then, with `after`, everything up to and
 * including the first entry equal to it (none left when it is not among the first
 * HL_UNWIND_SEARCH); copies at most `max` of the rest to `pcs`. */
static int keep(void **buf, int n, int skip, const void *after, void **pcs, int max) {
    int i = skip;
    if (after) {
        int lim = i + HL_UNWIND_SEARCH < n ? i + HL_UNWIND_SEARCH : n;
        while (i < lim && buf[i] != after) i++;
        if (i == lim) return 0;
        i++;
    }
    int k = 0;
    for (; i < n && k < max; i++) pcs[k++] = buf[i];
    return k;
}

#if defined(__x86_64__) && defined(DLFO_STRUCT_HAS_EH_DBASE)

/* ---- rules (their encoding: unwind.h) ---- */
static inline uint64_t rule_step(int cfa_rbp, int64_t cfa_off, int rbp_saved, int64_t rbp_off) {
    return HL_R_STEP | (cfa_rbp ? HL_R_CFA_RBP : 0) | (rbp_saved ? HL_R_RBP_SAVED : 0) | (uint64_t)(uint32_t)(int32_t)cfa_off << 8 |
           (uint64_t)(uint16_t)(int16_t)rbp_off << 40;
}

/* ---- the cache (its layout: unwind.h) ----
 * A writer claims a slot by storing the address with PENDING set, stores the rule, then clears
 * PENDING; readers take only finished slots, so a rule is never read half-written. */
#define RULE_PROBES 16
#define PENDING (1ull << 63)

static struct hl_rule_slot *get_table(void) {
    struct hl_rule_slot *t = atomic_load_explicit(&hl_rules, memory_order_acquire);
    if (HL_LIKELY(t)) return t;
    void *m = sys_mmap(NULL, sizeof *t * HL_RULE_SLOTS, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED) return NULL;
#ifndef HL_COMPACT_TABLES
    madvise(m, sizeof *t * HL_RULE_SLOTS, MADV_HUGEPAGE); /* a few TLB entries for the whole table */
#endif
    struct hl_rule_slot *none = NULL;
    if (!atomic_compare_exchange_strong(&hl_rules, &none, (struct hl_rule_slot *)m)) {
        sys_munmap(m, sizeof *t * HL_RULE_SLOTS); /* another thread made it first */
        return none;
    }
    return m;
}

/* ---- decoding CFI ---- */
struct cursor {
    const uint8_t *p, *end;
    int bad;
};
static uint64_t uleb(struct cursor *c) {
    uint64_t v = 0;
    for (int sh = 0; c->p < c->end; sh += 7) {
        uint8_t b = *c->p++;
        if (sh < 64) v |= (uint64_t)(b & 0x7f) << sh;
        if (!(b & 0x80)) return v;
    }
    c->bad = 1;
    return 0;
}
static int64_t sleb(struct cursor *c) {
    int64_t v = 0;
    int sh = 0;
    for (; c->p < c->end; ) {
        uint8_t b = *c->p++;
        if (sh < 64) v |= (int64_t)((uint64_t)(b & 0x7f) << sh);
        sh += 7;
        if (!(b & 0x80)) {
            if (sh < 64 && (b & 0x40)) v |= -((int64_t)1 << sh);
            return v;
        }
    }
    c->bad = 1;
    return 0;
}
static uint64_t fixed(struct cursor *c, int n) {
    if (c->end - c->p < n) {
        c->bad = 1;
        return 0;
    }
    uint64_t v = 0;
    memcpy(&v, c->p, (size_t)n);
    c->p += n;
    return v;
}
/* A pointer in DW_EH_PE encoding `enc`; `datarel` is the .eh_frame_hdr's address. Encodings
 * relative to text or a function do not occur in x86-64 .eh_frame: they mark the CFI bad. */
static uint64_t encoded(struct cursor *c, uint8_t enc, uint64_t datarel) {
    if (enc == 0xff) return 0; /* DW_EH_PE_omit */
    uint64_t at = (uint64_t)(uintptr_t)c->p, v;
    switch (enc & 0x0f) {
    case 0x00: v = fixed(c, 8); break;
    case 0x01: v = uleb(c); break;
    case 0x02: v = fixed(c, 2); break;
    case 0x03: v = fixed(c, 4); break;
    case 0x04: v = fixed(c, 8); break;
    case 0x09: v = (uint64_t)sleb(c); break;
    case 0x0a: v = (uint64_t)(int64_t)(int16_t)fixed(c, 2); break;
    case 0x0b: v = (uint64_t)(int64_t)(int32_t)fixed(c, 4); break;
    case 0x0c: v = fixed(c, 8); break;
    default: c->bad = 1; return 0;
    }
    switch (enc & 0x70) {
    case 0x00: break;
    case 0x10: v += at; break;
    case 0x30: v += datarel; break;
    default: c->bad = 1;
    }
    return v;
}

/* Register numbers (DWARF, x86-64) and what the walk follows of them. */
enum { REG_RBP = 6, REG_RSP = 7, REG_RA = 16 };
enum { HOW_SAME, HOW_UNDEF, HOW_OFFSET, HOW_OTHER };
struct regs_state {
    int cfa_reg, cfa_expr;
    int64_t cfa_off;
    uint8_t how[3];   /* rbp, rsp, ra */
    int64_t off[3];
};
static int tracked(uint64_t reg) { return reg == REG_RBP ? 0 : reg == REG_RSP ? 1 : reg == REG_RA ? 2 : -1; }

struct cie {
    uint64_t code_align;
    int64_t data_align;
    uint64_t ra_reg;
    uint8_t fde_enc;
    int has_z, signal;
    const uint8_t *insns, *end;
};

/* Runs the CFA program [c) up to code address `target` (from `loc`). Returns 0, or -1 where it
 * uses what the walk does not follow. `init` is the state after the CIE's program. */
static int run_cfa(struct cursor *c, const struct cie *ci, uint64_t loc, uint64_t target, struct regs_state *st, const struct regs_state *init) {
    struct regs_state saved[8];
    int nsaved = 0;
    while (c->p < c->end && !c->bad) {
        uint8_t op = *c->p++;
        uint64_t reg, delta = 0;
        int t;
        switch (op & 0xc0) {
        case 0x40: delta = (op & 0x3f) * ci->code_align; goto advance;
        case 0x80:
            t = tracked(op & 0x3f);
            if (t >= 0) {
                st->how[t] = HOW_OFFSET;
                st->off[t] = (int64_t)uleb(c) * ci->data_align;
            } else uleb(c);
            continue;
        case 0xc0:
            t = tracked(op & 0x3f);
            if (t >= 0) {
                st->how[t] = init->how[t];
                st->off[t] = init->off[t];
            }
            continue;
        }
        switch (op) {
        case 0x00: continue;                                     /* nop */
        case 0x01: {                                             /* set_loc */
            uint64_t nl = encoded(c, ci->fde_enc, 0);
            if (nl > target) return 0;
            loc = nl;
            continue;
        }
        case 0x02: delta = fixed(c, 1) * ci->code_align; goto advance;
        case 0x03: delta = fixed(c, 2) * ci->code_align; goto advance;
        case 0x04: delta = fixed(c, 4) * ci->code_align; goto advance;
        case 0x05: case 0x11: case 0x2f: {                       /* offset_extended(_sf), GNU negative */
            reg = uleb(c);
            int64_t o = op == 0x11 ? sleb(c) * ci->data_align : (int64_t)uleb(c) * ci->data_align;
            if (op == 0x2f) o = -o;
            if ((t = tracked(reg)) >= 0) {
                st->how[t] = HOW_OFFSET;
                st->off[t] = o;
            }
            continue;
        }
        case 0x06:                                               /* restore_extended */
            if ((t = tracked(uleb(c))) >= 0) {
                st->how[t] = init->how[t];
                st->off[t] = init->off[t];
            }
            continue;
        case 0x07: case 0x08:                                    /* undefined, same_value */
            if ((t = tracked(uleb(c))) >= 0) st->how[t] = op == 0x07 ? HOW_UNDEF : HOW_SAME;
            continue;
        case 0x09:                                               /* register */
            if ((t = tracked(uleb(c))) >= 0) st->how[t] = HOW_OTHER;
            uleb(c);
            continue;
        case 0x0a:                                               /* remember_state */
            if (nsaved == 8) return -1;
            saved[nsaved++] = *st;
            continue;
        case 0x0b:                                               /* restore_state (the CFA too, as GCC expects) */
            if (nsaved == 0) return -1;
            *st = saved[--nsaved];
            continue;
        case 0x0c:                                               /* def_cfa */
            st->cfa_reg = (int)uleb(c);
            st->cfa_off = (int64_t)uleb(c);
            st->cfa_expr = 0;
            continue;
        case 0x12:                                               /* def_cfa_sf */
            st->cfa_reg = (int)uleb(c);
            st->cfa_off = sleb(c) * ci->data_align;
            st->cfa_expr = 0;
            continue;
        case 0x0d: st->cfa_reg = (int)uleb(c); st->cfa_expr = 0; continue;
        case 0x0e: st->cfa_off = (int64_t)uleb(c); continue;
        case 0x13: st->cfa_off = sleb(c) * ci->data_align; continue;
        case 0x0f: {                                             /* def_cfa_expression */
            uint64_t n = uleb(c);
            if ((uint64_t)(c->end - c->p) < n) return -1;
            c->p += n;
            st->cfa_expr = 1;
            continue;
        }
        case 0x10: case 0x16: {                                  /* expression, val_expression */
            t = tracked(uleb(c));
            uint64_t n = uleb(c);
            if ((uint64_t)(c->end - c->p) < n) return -1;
            c->p += n;
            if (t >= 0) st->how[t] = HOW_OTHER;
            continue;
        }
        case 0x14: case 0x15:                                    /* val_offset(_sf) */
            t = tracked(uleb(c));
            if (op == 0x14) uleb(c); else sleb(c);
            if (t >= 0) st->how[t] = HOW_OTHER;
            continue;
        case 0x2e: uleb(c); continue;                            /* GNU_args_size */
        default: return -1;
        }
    advance:
        if (loc + delta > target) return 0;
        loc += delta;
    }
    return c->bad ? -1 : 0;
}

/* Parses the CIE at `p` (its length field). Returns 0, or -1. */
static int parse_cie(const uint8_t *p, struct cie *ci) {
    struct cursor c = {p, p + 12, 0};
    uint64_t len = fixed(&c, 4);
    if (len == 0xffffffff) return -1; /* 64-bit DWARF: not in .eh_frame */
    c.end = c.p + len;
    if (fixed(&c, 4) != 0) return -1; /* a CIE's id is 0 in .eh_frame */
    uint64_t version = fixed(&c, 1);
    const char *aug = (const char *)c.p;
    while (c.p < c.end && *c.p) c.p++;
    c.p++;
    if (aug[0] && aug[0] != 'z') return -1; /* old "eh" augmentation and the like */
    ci->code_align = uleb(&c);
    ci->data_align = sleb(&c);
    ci->ra_reg = version == 1 ? fixed(&c, 1) : uleb(&c);
    ci->fde_enc = 0;
    ci->signal = 0;
    ci->has_z = aug[0] == 'z';
    if (ci->has_z) {
        uint64_t alen = uleb(&c);
        const uint8_t *adata_end = c.p + alen;
        for (const char *a = aug + 1; *a && !c.bad; a++) {
            if (*a == 'R') ci->fde_enc = (uint8_t)fixed(&c, 1);
            else if (*a == 'P') {
                uint8_t enc = (uint8_t)fixed(&c, 1);
                encoded(&c, enc & 0x7f, 0);
            } else if (*a == 'L') fixed(&c, 1);
            else if (*a == 'S') ci->signal = 1;
            else break; /* unknown: the length lets us skip the rest */
        }
        c.p = adata_end;
    }
    if (c.bad || c.p > c.end) return -1;
    ci->insns = c.p;
    ci->end = c.end;
    return 0;
}

/* Decodes the rule for code address `a` (a return address minus one, or the walk's own pc). */
static uint64_t decode(uint64_t a) {
    struct dl_find_object fo;
    if (_dl_find_object((void *)(uintptr_t)a, &fo) != 0 || !fo.dlfo_eh_frame) return HL_R_END; /* not in a module: JIT code, or no CFI */
    const uint8_t *hdr = fo.dlfo_eh_frame;
    uint64_t base = (uint64_t)(uintptr_t)hdr;
    if (hdr[0] != 1 || hdr[3] != 0x3b) return HL_R_FALLBACK; /* a search table of datarel sdata4 pairs is what linkers write */
    struct cursor c = {hdr + 4, hdr + 4 + 32, 0};
    encoded(&c, hdr[1], base);
    uint64_t count = encoded(&c, hdr[2], base);
    if (c.bad || count == 0) return HL_R_FALLBACK;
    const int32_t *tab = (const int32_t *)c.p;
    /* The last entry whose start is at or below `a`. */
    uint64_t lo = 0, hi = count;
    int64_t rel = (int64_t)(a - base);
    if (rel < tab[0]) return HL_R_END;
    while (hi - lo > 1) {
        uint64_t mid = (lo + hi) / 2;
        if (tab[2 * mid] <= rel) lo = mid;
        else hi = mid;
    }
    const uint8_t *fde = hdr + tab[2 * lo + 1];
    struct cursor f = {fde, fde + 8, 0};
    uint64_t flen = fixed(&f, 4);
    if (flen == 0 || flen == 0xffffffff) return HL_R_FALLBACK;
    f.end = fde + 4 + flen;
    const uint8_t *cie_at = f.p;
    uint64_t cie_off = fixed(&f, 4);
    struct cie ci;
    if (parse_cie(cie_at - cie_off, &ci) != 0) return HL_R_FALLBACK;
    if (ci.signal || ci.ra_reg != REG_RA) return HL_R_FALLBACK;
    uint64_t start = encoded(&f, ci.fde_enc, base);
    uint64_t range = encoded(&f, ci.fde_enc & 0x0f, base);
    if (f.bad) return HL_R_FALLBACK;
    if (a < start || a >= start + range) return HL_R_END; /* a gap between functions: no CFI covers it */
    if (ci.has_z) {
        uint64_t alen = uleb(&f);
        f.p += alen;
    }
    if (f.bad || f.p > f.end) return HL_R_FALLBACK;
    /* x86-64 CIEs start with CFA = rsp + 8, return address at CFA - 8. */
    struct regs_state st = {REG_RSP, 0, 8, {HOW_SAME, HOW_SAME, HOW_SAME}, {0, 0, 0}};
    struct cursor cc = {ci.insns, ci.end, 0};
    if (run_cfa(&cc, &ci, 0, UINT64_MAX, &st, &st) != 0) return HL_R_FALLBACK;
    struct regs_state init = st;
    if (run_cfa(&f, &ci, start, a, &st, &init) != 0) return HL_R_FALLBACK;
    if (st.how[2] == HOW_UNDEF) return HL_R_END; /* the outermost frame (_start, a thread's start) */
    if (st.cfa_expr || (st.cfa_reg != REG_RSP && st.cfa_reg != REG_RBP)) return HL_R_FALLBACK;
    if (st.how[2] != HOW_OFFSET || st.off[2] != -8 || st.how[1] != HOW_SAME) return HL_R_FALLBACK;
    if (st.how[0] != HOW_SAME && st.how[0] != HOW_OFFSET) return HL_R_FALLBACK;
    if (st.cfa_off != (int32_t)st.cfa_off || st.off[0] != (int16_t)st.off[0]) return HL_R_FALLBACK;
    return rule_step(st.cfa_reg == REG_RBP, st.cfa_off, st.how[0] == HOW_OFFSET, st.off[0]);
}

/* The table's slow path: a rule not cached yet (decoded and inserted), or a full probe run. */
static __attribute__((noinline)) uint64_t rule_miss(struct hl_rule_slot *t, uint64_t a, uint32_t s, int probe) {
    for (; probe < RULE_PROBES; probe++, s = (s + 1) & (HL_RULE_SLOTS - 1)) {
        uint64_t k = atomic_load_explicit(&t[s].pc, memory_order_acquire);
        if (k == a) return atomic_load_explicit(&t[s].rule, memory_order_relaxed);
        if (k == (a | PENDING)) break; /* another thread is decoding it now */
        if (k == 0) {
            hl_unwind_counted.decoded++;
            uint64_t r = decode(a);
            uint64_t seen = 0;
            if (atomic_compare_exchange_strong(&t[s].pc, &seen, a | PENDING)) {
                atomic_store_explicit(&t[s].rule, r, memory_order_relaxed);
                atomic_store_explicit(&t[s].pc, a, memory_order_release);
            }
            return r;
        }
    }
    hl_unwind_counted.decoded++;
    return decode(a);
}

/* The rule for code address `a`: its first slot inline (the hit every walk's frames take once
 * the rules are cached), anything else out of line. */
static inline __attribute__((always_inline)) uint64_t rule_in(struct hl_rule_slot *t, uint64_t a) {
    if (HL_UNLIKELY(!t)) return decode(a);
    uint64_t r = hl_rule_cached(t, a);
    return HL_LIKELY(r) ? r : rule_miss(t, a, hl_rule_slot_of(a), 0);
}
static inline __attribute__((always_inline)) uint64_t rule_for(uint64_t a) { return rule_in(get_table(), a); }

/* ---- the thread's stack: the mapping holding its stack pointer, from /proc/self/maps ---- */

/* Sets hl_stack_lo/hl_stack_hi to the mapping holding `sp`; 0/0 when not found. Raw syscalls and a
 * buffer on the stack: this runs inside malloc. */
static void find_stack(uintptr_t sp) {
    hl_stack_lo = hl_stack_hi = 0;
    int f = (int)syscall(SYS_openat, AT_FDCWD, "/proc/self/maps", O_RDONLY | O_CLOEXEC);
    if (f < 0) return;
    char buf[4096];
    size_t have = 0;
    for (;;) {
        ssize_t n = syscall(SYS_read, f, buf + have, sizeof buf - have);
        if (n <= 0) break;
        have += (size_t)n;
        char *line = buf, *end = buf + have, *eol;
        while ((eol = memchr(line, '\n', (size_t)(end - line)))) {
            struct hl_maps_line l = hl_parse_maps_line(line, eol);
            if (l.lo <= sp && sp < l.hi) {
                hl_stack_lo = l.lo;
                hl_stack_hi = l.hi;
                syscall(SYS_close, f);
                return;
            }
            line = eol + 1;
        }
        have = (size_t)(end - line);
        if (have == sizeof buf) have = 0; /* a line longer than the buffer: its start is past */
        memmove(buf, line, have);
    }
    syscall(SYS_close, f);
}

/* One frame with rule r: from code address *a with stack pointer *sp and frame register *bp
 * (the stack ends at hi) to its caller's, whose return address goes to *ra. 1: stepped; 0: the
 * stack ends here (or its CFI leaves it); -1: the frame's CFI needs the fallback. */
static inline __attribute__((always_inline)) int step_rule(uint64_t r, uint64_t *a, uintptr_t *sp, uintptr_t *bp, uintptr_t hi, uintptr_t *ra, struct hl_walk_trace *tr) {
    int kind = hl_rule_kind(r);
    if (tr) tr->from_bp = kind == HL_R_STEP && (r & HL_R_CFA_RBP);
    if (kind == HL_R_END) return 0;
    if (kind != HL_R_STEP) return -1;
    /* The return address and the saved rbp lie in the frame, at or above its sp: anything else
     * is bad CFI or the stack's end. */
    uintptr_t cfa = (r & HL_R_CFA_RBP ? *bp : *sp) + (uintptr_t)hl_rule_cfa_off(r);
    if (cfa < *sp + 8 || cfa > hi) return 0;
    uintptr_t ret = *(const uintptr_t *)(cfa - 8);
    if (tr) tr->ret_at = cfa - 8, tr->bp_at = 0;
    if (r & HL_R_RBP_SAVED) {
        uintptr_t at = cfa + (uintptr_t)hl_rule_rbp_off(r);
        if (at < *sp || at + 8 > hi) return 0;
        *bp = *(const uintptr_t *)at;
        if (tr) tr->bp_at = at;
    }
    *sp = cfa;
    if (tr) tr->bp = *bp;
    if (ret == 0) return 0; /* a zero return address ends the stack too */
    *ra = ret;
    *a = ret - 1;
    return 1;
}
static inline __attribute__((always_inline)) int step_traced(uint64_t *a, uintptr_t *sp, uintptr_t *bp, uintptr_t hi, uintptr_t *ra, struct hl_walk_trace *tr) {
    return step_rule(rule_for(*a), a, sp, bp, hi, ra, tr);
}
static inline __attribute__((always_inline)) int step_one(uint64_t *a, uintptr_t *sp, uintptr_t *bp, uintptr_t hi, uintptr_t *ra) {
    return step_traced(a, sp, bp, hi, ra, NULL);
}

/* Steps frames from code address `a` (the pc itself for the first frame of a walk, a return
 * address - 1 after that) with stack pointer `sp` and frame register `bp`: `skip` frames are
 * not returned, then as keep() says. Returns the frames kept, or -1 when a frame's CFI needs
 * the fallback. */
static inline __attribute__((always_inline)) int steps(uint64_t a, uintptr_t sp, uintptr_t bp, int skip, const void *after, void **pcs, int max) {
    int want = skip + (after ? HL_UNWIND_SEARCH : 0) + max; /* frames to step at most */
    if (HL_UNLIKELY(sp < hl_stack_lo || sp >= hl_stack_hi)) find_stack(sp);
    uintptr_t hi = hl_stack_hi;
    int n = 0, k = 0, found = !after;
    while (n < want && k < max) {
        uintptr_t ra;
        int r = step_one(&a, &sp, &bp, hi, &ra);
        if (r < 0) return -1;
        if (r == 0) break;
        n++;
        if (n > skip) {
            if (found) pcs[k++] = (void *)ra;
            else if ((void *)ra == after) found = 1;
            else if (n - skip >= HL_UNWIND_SEARCH) return 0;
        }
    }
    return found ? k : 0;
}

/* The walk: `skip` frames of the callers' own are not returned (the exported functions' one),
 * then as keep() says. noinline: its own frame is the first one stepped. */
static __attribute__((noinline)) int walk(int skip, const void *after, void **pcs, int max, int reference) {
    hl_unwind_counted.walks++;
    uintptr_t pc, sp, bp;
    /* rbp first: the compiler may hand rbp to another output of this statement. */
    __asm__ volatile("mov %%rbp, %2\n\tlea 0(%%rip), %0\n\tmov %%rsp, %1" : "=&r"(pc), "=&r"(sp), "=&r"(bp));
    int want = skip + (after ? HL_UNWIND_SEARCH : 0) + max;
    if (reference) goto fallback;
    int k = steps(pc, sp, bp, skip, after, pcs, max);
    if (k >= 0) return k;
fallback:
    hl_unwind_counted.fallbacks++;
    {
        void *tmp[MAX_WALK + HL_UNWIND_SEARCH + 2];
        if (want + 1 > (int)(sizeof tmp / sizeof *tmp)) want = (int)(sizeof tmp / sizeof *tmp) - 1;
        int got = backtrace(tmp, want + 1);
        return keep(tmp, got, skip + 1, after, pcs, max); /* + 1: backtrace's entry for this frame */
    }
}

#else

static __attribute__((noinline)) int walk(int skip, const void *after, void **pcs, int max, int reference) {
    (void)reference;
    hl_unwind_counted.walks++;
    hl_unwind_counted.fallbacks++;
    void *tmp[MAX_WALK + HL_UNWIND_SEARCH + 2];
    int want = skip + (after ? HL_UNWIND_SEARCH : 0) + max;
    if (want + 1 > (int)(sizeof tmp / sizeof *tmp)) want = (int)(sizeof tmp / sizeof *tmp) - 1;
    int got = backtrace(tmp, want + 1);
    return keep(tmp, got, skip + 1, after, pcs, max);
}

#endif

/* Writes a walk's frames to stderr after `what` (raw syscalls: this runs inside malloc). */
static void say_frames(const char *what, void **pcs, int n) {
    char line[64 + MAX_WALK * 17];
    size_t at = 0;
    for (const char *c = what; *c; c++) line[at++] = *c;
    for (int i = 0; i < n; i++) {
        line[at++] = ' ';
        uintptr_t v = (uintptr_t)pcs[i];
        for (int sh = 44; sh >= 0; sh -= 4) line[at++] = "0123456789abcdef"[(v >> sh) & 15];
    }
    line[at++] = '\n';
    syscall(SYS_write, 2, line, at);
}

/* The asm statements keep the calls from being tail calls: these frames are the skipped one. */
__attribute__((noinline)) int hl_unwind(void **pcs, int max) {
    if (max > MAX_WALK) max = MAX_WALK;
    if (max <= 0) return 0;
    int n = walk(1, NULL, pcs, max, atomic_load_explicit(&hl_unwind_mode_now, memory_order_relaxed) == HL_UNWIND_BACKTRACE);
    __asm__ volatile("" ::: "memory");
    return n;
}

__attribute__((noinline)) int hl_unwind_after(const void *ret, void **pcs, int max) {
    if (max > MAX_WALK) max = MAX_WALK;
    if (max <= 0 || !ret) return 0;
    int m = atomic_load_explicit(&hl_unwind_mode_now, memory_order_relaxed);
    int n = walk(1, ret, pcs, max, m == HL_UNWIND_BACKTRACE);
    if (HL_UNLIKELY(m == HL_UNWIND_CHECK)) {
        void *ref[MAX_WALK];
        int r = walk(1, ret, ref, max, 1);
        if (r != n || memcmp(ref, pcs, sizeof *pcs * (size_t)n) != 0) {
            static atomic_int told;
            if (hl_unwind_counted.mismatches++ < 3 && atomic_fetch_add(&told, 1) < 5) {
                say_frames("heaplab unwind mismatch: walker", pcs, n);
                say_frames("heaplab unwind mismatch: backtrace", ref, r);
            }
        }
    }
    __asm__ volatile("" ::: "memory");
    return n;
}

#if defined(__x86_64__) && defined(DLFO_STRUCT_HAS_EH_DBASE)
int hl_unwind_above(const void *ret, const void *frame, void **pcs, int max) {
    const uintptr_t *f = frame;
    if (max > MAX_WALK) max = MAX_WALK;
    if (max <= 0 || !ret) return 0;
    /* The frame must be what the standard prologue makes of it: the caller's rbp at frame, the
     * return address above it. Anything else, and any mode but the rules: the search. */
    if (!f || f[1] != (uintptr_t)ret || atomic_load_explicit(&hl_unwind_mode_now, memory_order_relaxed) != HL_UNWIND_RULES) return hl_unwind_after(ret, pcs, max);
    hl_unwind_counted.walks++;
    int k = steps((uint64_t)(uintptr_t)ret - 1, (uintptr_t)(f + 2), f[0], 0, NULL, pcs, max);
    return k >= 0 ? k : hl_unwind_after(ret, pcs, max);
}

uint64_t hl_unwind_rule(const void *ret) {
    if (!ret || atomic_load_explicit(&hl_unwind_mode_now, memory_order_relaxed) != HL_UNWIND_RULES) return 0;
    return rule_for((uint64_t)(uintptr_t)ret - 1);
}

int hl_unwind_caller(const void *ret, const void *frame, void **pc) {
    const uintptr_t *f = frame;
    if (!ret || !f || f[1] != (uintptr_t)ret || atomic_load_explicit(&hl_unwind_mode_now, memory_order_relaxed) != HL_UNWIND_RULES) return hl_unwind_above(ret, frame, pc, 1);
    hl_unwind_counted.walks++;
    uint64_t a = (uint64_t)(uintptr_t)ret - 1;
    uintptr_t sp = (uintptr_t)(f + 2), bp = f[0], ra;
    if (HL_UNLIKELY(sp < hl_stack_lo || sp >= hl_stack_hi)) find_stack(sp);
    int r = step_one(&a, &sp, &bp, hl_stack_hi, &ra);
    if (HL_UNLIKELY(r < 0)) return hl_unwind_after(ret, pc, 1);
    if (r > 0) *pc = (void *)ra;
    return r;
}

int hl_walk_start(struct hl_walk *w, const void *ret, const void *frame) {
    const uintptr_t *f = frame;
    w->ended = 1;
    w->zero_at = 0;
    if (!ret || !f || f[1] != (uintptr_t)ret || atomic_load_explicit(&hl_unwind_mode_now, memory_order_relaxed) != HL_UNWIND_RULES) return -1;
    hl_unwind_counted.walks++;
    w->a = (uint64_t)(uintptr_t)ret - 1;
    w->sp = (uintptr_t)(f + 2);
    w->bp = f[0];
    if (HL_UNLIKELY(w->sp < hl_stack_lo || w->sp >= hl_stack_hi)) find_stack(w->sp);
    w->hi = hl_stack_hi;
    w->ended = 0;
    return 0;
}

static inline __attribute__((always_inline)) int walk_more(struct hl_walk *w, void **pcs, struct hl_walk_trace *tr, int max, uint64_t lo, uint64_t span) {
    if (w->ended) return 0;
    /* In locals: stores to pcs could otherwise alias the walk's state. */
    uint64_t a = w->a;
    uintptr_t sp = w->sp, bp = w->bp, shi = w->hi;
    int k = 0;
    while (k < max) {
        uintptr_t ra;
        if (tr) tr[k].ret_at = 0;
        int r = step_traced(&a, &sp, &bp, shi, &ra, tr ? tr + k : NULL);
        if (r < 0) return -1;
        if (r == 0) {
            w->ended = 1;
            /* Where a zero return address was read (it ended the walk), so that a replay of
             * this walk can check it is still there. */
            w->zero_at = tr && tr[k].ret_at && sp == tr[k].ret_at + 8 ? tr[k].ret_at : 0;
            break;
        }
        pcs[k++] = (void *)ra;
        if (ra - lo <= span) break;
    }
    w->a = a, w->sp = sp, w->bp = bp;
    return k;
}
int hl_walk_more(struct hl_walk *w, void **pcs, int max, uint64_t lo, uint64_t span) { return walk_more(w, pcs, NULL, max, lo, span); }
int hl_walk_to(struct hl_walk *w, int max, uint64_t lo, uint64_t span, void **hit) {
    if (w->ended) return 0;
    struct hl_rule_slot *t = get_table();
    if (HL_UNLIKELY(!t)) return -1;
    uint64_t a = w->a;
    uintptr_t sp = w->sp, bp = w->bp, hi = w->hi, ra = 0;
    int k = 0, r = 1;
    while (k < max) {
        /* Frames whose rules are cached, with no call in the loop: its values stay in registers. */
        uint64_t rule;
        while ((rule = hl_rule_cached(t, a)) != 0 && k < max) {
            r = step_rule(rule, &a, &sp, &bp, hi, &ra, NULL);
            if (HL_UNLIKELY(r <= 0)) break;
            k++;
            if (ra - lo <= span) break;
        }
        if (r <= 0 || k == max || (k && ra - lo <= span)) break;
        r = step_rule(rule_miss(t, a, hl_rule_slot_of(a), 0), &a, &sp, &bp, hi, &ra, NULL);
        if (r <= 0) break;
        k++;
        if (ra - lo <= span) break;
    }
    if (r < 0) return -1;
    if (r == 0) w->ended = 1;
    else if (k && ra - lo <= span) *hit = (void *)ra;
    w->a = a, w->sp = sp, w->bp = bp;
    return k;
}
int hl_walk_more_traced(struct hl_walk *w, void **pcs, struct hl_walk_trace *tr, int max, uint64_t lo, uint64_t span) {
    return walk_more(w, pcs, tr, max, lo, span);
}
#else
int hl_unwind_above(const void *ret, const void *frame, void **pcs, int max) {
    (void)frame;
    return hl_unwind_after(ret, pcs, max);
}
int hl_unwind_caller(const void *ret, const void *frame, void **pc) { return hl_unwind_above(ret, frame, pc, 1); }
uint64_t hl_unwind_rule(const void *ret) {
    (void)ret;
    return 0;
}
int hl_walk_start(struct hl_walk *w, const void *ret, const void *frame) {
    (void)ret, (void)frame;
    w->ended = 1;
    return -1;
}
int hl_walk_more(struct hl_walk *w, void **pcs, int max, uint64_t lo, uint64_t span) {
    (void)w, (void)pcs, (void)max, (void)lo, (void)span;
    return -1;
}
int hl_walk_more_traced(struct hl_walk *w, void **pcs, struct hl_walk_trace *tr, int max, uint64_t lo, uint64_t span) {
    (void)tr;
    return hl_walk_more(w, pcs, max, lo, span);
}
int hl_walk_to(struct hl_walk *w, int max, uint64_t lo, uint64_t span, void **hit) {
    (void)w, (void)max, (void)lo, (void)span, (void)hit;
    return -1;
}
#endif
