/* unwind.h — the native layer's stack walker: the return addresses of the calling thread's
 * stack, as glibc's backtrace() gives them, at a fraction of its cost.
 *
 * backtrace() (libgcc's _Unwind_Backtrace) finds, decodes and runs the DWARF CFI of every frame
 * on every call. hl_unwind decodes the CFI of each code address once, keeps the rule it yields
 * (CFA = rsp or rbp + N, return address at CFA - 8, rbp saved at CFA + M or unchanged) in a
 * lock-free table keyed by the address, and from then on steps a frame with a table look-up and
 * two loads. Frames whose CFI says more than that (signal frames, stack realignment, registers
 * saved in other registers) make the whole walk fall back to backtrace(), so stacks always equal
 * its. Reads of the stack are checked against the bounds of the mapping holding the thread's
 * stack pointer, so bad CFI ends a walk instead of faulting. Never allocates.
 *
 * x86-64 only; elsewhere hl_unwind is backtrace().
 */
#ifndef HEAPLAB_UNWIND_H
#define HEAPLAB_UNWIND_H

#include <stdatomic.h>
#include <stdint.h>

/* Fills `pcs` with at most `max` return addresses, innermost first: pcs[0] is where
 * hl_unwind returns to in its caller, as with backtrace(pcs, max). Returns how many. */
int hl_unwind(void **pcs, int max);

/* Like hl_unwind, but returns only the frames above the one whose return address is `ret`
 * (looked for among the first HL_UNWIND_SEARCH frames; none are returned when it is not
 * there): the callers of an interposed function, whatever the frames in between. */
#define HL_UNWIND_SEARCH 16
int hl_unwind_after(const void *ret, void **pcs, int max);

/* Like hl_unwind_after, when `frame` is the frame address (__builtin_frame_address(0), with
 * its standard prologue) of the function that `ret` returns from: the walk starts at `ret`
 * instead of stepping every frame up to it. A frame that does not hold `ret` where the prologue
 * puts it (or NULL) makes this hl_unwind_after. */
int hl_unwind_above(const void *ret, const void *frame, void **pcs, int max);

/* hl_unwind_above(ret, frame, pc, 1) in one step: the return address of the caller of the
 * function `ret` is in (1; 0 when the stack ends there), for a caller that needs only it.
 * hl_unwind_caller_inline (below) is the same, its common case inline. */
int hl_unwind_caller(const void *ret, const void *frame, void **pc);

/* hl_unwind_above's walk in steps, for a caller that stops as soon as it knows enough:
 * hl_walk_start begins above `ret` (0; -1 when `frame` does not hold it or the walk needs the
 * fallback, so the caller takes hl_unwind_above instead). Each hl_walk_more appends up to `max`
 * further return addresses to `pcs`, stopping after the first one in [lo, lo + span] (the
 * addresses the caller looks for), and returns how many (0 once the stack has ended; -1 when a
 * frame needs the fallback: the caller starts over with hl_unwind_above). */
struct hl_walk { uint64_t a; uintptr_t sp, bp, hi, zero_at; int ended; };
int hl_walk_start(struct hl_walk *w, const void *ret, const void *frame);
int hl_walk_more(struct hl_walk *w, void **pcs, int max, uint64_t lo, uint64_t span);

/* hl_walk_more for a caller that needs only some frames: steps up to `max` frames, stopping
 * after the first whose return address lies in [lo, lo + span], which goes to *hit (left as it
 * was when none did). Returns the frames stepped (0 once the stack has ended; -1 as
 * hl_walk_more). No return address is stored: each frame costs a rule look-up and its loads. */
int hl_walk_to(struct hl_walk *w, int max, uint64_t lo, uint64_t span, void **hit);

/* hl_walk_more that also says, per frame returned, which stack words it read: where the return
 * address was (`ret_at`), where the caller's rbp was restored from (`bp_at`, 0 when it was not),
 * rbp after the step, and whether the step found the frame from rbp (`from_bp`). A walk is a
 * function of its start (a, sp, and bp where a step used it before any frame restored it) and
 * those words (the rules are fixed per code address), so a caller that finds the same start and
 * the same words again has the same frames without stepping them (group.c's walk memo). When a
 * walk ends before `max` frames, the entry after its last frame tells about the step that ended
 * it, and `zero_at` says where a zero return address that ended it was read (else 0). A caller
 * may resume from any frame it kept: a = return address - 1, sp = ret_at + 8, bp = its bp. */
struct hl_walk_trace { uintptr_t ret_at, bp_at, bp; int from_bp; };
int hl_walk_more_traced(struct hl_walk *w, void **pcs, struct hl_walk_trace *tr, int max, uint64_t lo, uint64_t span);

/* How walks are made from now on, in every thread: with the cached rules (the default), with
 * backtrace() itself (the reference), or both, hl_unwind_after writing a line to stderr for
 * each of its first few walks whose two stacks differ (a test of the walker on real programs). */
enum hl_unwind_mode { HL_UNWIND_RULES, HL_UNWIND_BACKTRACE, HL_UNWIND_CHECK };
void hl_unwind_set_mode(enum hl_unwind_mode mode);

/* Readies the walker before the first walk a library times or traces: the mode named by
 * HEAPLAB_UNWIND in the environment (backtrace, check; else the rules), and libgcc's unwinder
 * (the fallback) loaded now rather than inside a hooked call. */
void hl_unwind_init(void);

/* Tells the walker the calling thread's stack mapping [lo, hi), found by its caller in
 * /proc/self/maps, which spares the walker reading the file again for it (ignored if empty). */
void hl_unwind_set_stack(uintptr_t lo, uintptr_t hi);

/* The calling thread's counts since it started: walks, walks that fell back to backtrace(),
 * code addresses whose CFI was decoded (cache misses), and checked walks that differed. */
struct hl_unwind_counts {
    uint64_t walks, fallbacks, decoded, mismatches;
};
void hl_unwind_counts(struct hl_unwind_counts *c);

/* ---- hl_unwind_caller's common case, inline (for the grouped allocator's hot path) ----
 * It reads the rule cache unwind.c fills. One code address's rule is a word: bits 0-1 what to
 * do (HL_R_STEP, HL_R_END of the stack, HL_R_FALLBACK to backtrace), bit 2 the CFA's base (rsp
 * or rbp), bit 3 whether rbp was saved (at CFA + rbp's offset, else it is unchanged), bits 8-39
 * the CFA offset, bits 40-55 rbp's offset. The return address is always at CFA - 8 (the x86-64
 * call convention; other CFI falls back). The cache maps code addresses to rules by open
 * addressing from hl_rule_slot_of. */
enum { HL_R_STEP = 1, HL_R_END = 2, HL_R_FALLBACK = 3 };
#define HL_R_CFA_RBP 4u
#define HL_R_RBP_SAVED 8u
static inline int hl_rule_kind(uint64_t r) { return (int)(r & 3); }
static inline int64_t hl_rule_cfa_off(uint64_t r) { return (int32_t)(uint32_t)(r >> 8); }
static inline int64_t hl_rule_rbp_off(uint64_t r) { return (int16_t)(uint16_t)(r >> 40); }
/* A client whose peak RSS is measured (the runtime library) builds with HL_COMPACT_TABLES: the
 * hashed tables scatter over every page they span, so they are kept small there. */
#ifdef HL_COMPACT_TABLES
#define HL_RULE_BITS 14
#else
#define HL_RULE_BITS 18
#endif
#define HL_RULE_SLOTS (1u << HL_RULE_BITS)
struct hl_rule_slot {
    _Atomic uint64_t pc;
    _Atomic uint64_t rule;
};
static inline uint32_t hl_rule_slot_of(uint64_t pc) { return (uint32_t)((pc * 0x9e3779b97f4a7c15ull) >> (64 - HL_RULE_BITS)); }
/* The rule for code address `a` when its first slot of table t holds it, else 0 (no rule's
 * kind is 0): the hit every walk's frames take once the rules are cached. */
static inline uint64_t hl_rule_cached(struct hl_rule_slot *t, uint64_t a) {
    struct hl_rule_slot *e = t + hl_rule_slot_of(a);
    return atomic_load_explicit(&e->pc, memory_order_acquire) == a ? atomic_load_explicit(&e->rule, memory_order_relaxed) : 0;
}
#define HL_UNWIND_INTERNAL __attribute__((visibility("hidden")))
extern HL_UNWIND_INTERNAL _Atomic(struct hl_rule_slot *) hl_rules; /* NULL until the first walk */
extern HL_UNWIND_INTERNAL atomic_int hl_unwind_mode_now;          /* enum hl_unwind_mode */
/* The mapping holding the thread's stack, once a walk has looked it up (else 0, 0). */
extern HL_UNWIND_INTERNAL __thread uintptr_t hl_stack_lo __attribute__((tls_model("initial-exec"))), hl_stack_hi __attribute__((tls_model("initial-exec")));
extern HL_UNWIND_INTERNAL __thread struct hl_unwind_counts hl_unwind_counted __attribute__((tls_model("initial-exec")));

/* The rule for return address `ret` (the code address ret - 1), decoded and cached if it was not;
 * 0 where the rules are not used. Fixed per code address, so a caller may keep it. */
uint64_t hl_unwind_rule(const void *ret);

/* One plain step with rule r (a HL_R_STEP rule for `ret`, from the cache or kept by the caller),
 * from a frame that holds `ret`, on a stack already known: 1 and the caller's return address in
 * *pc; 0 when the stack ends there; -1 when it cannot be done here (the frame does not hold
 * `ret`, the stack is not known yet, or walks are not made with the rules): the caller takes
 * hl_unwind_caller. One step needs only the caller's return address at CFA - 8, not rbp's saved
 * value, which only a further step would use (so where rbp was saved is not checked against the
 * stack either). */
static inline __attribute__((always_inline)) int hl_unwind_step_with(uint64_t r, const void *ret, const void *frame, void **pc) {
    const uintptr_t *f = (const uintptr_t *)frame;
    uintptr_t sp = (uintptr_t)(f + 2), hi = hl_stack_hi;
    if (__builtin_expect(!f || f[1] != (uintptr_t)ret || sp < hl_stack_lo || sp >= hi || atomic_load_explicit(&hl_unwind_mode_now, memory_order_relaxed) != HL_UNWIND_RULES, 0))
        return -1;
    uintptr_t cfa = (r & HL_R_CFA_RBP ? f[0] : sp) + (uintptr_t)hl_rule_cfa_off(r);
    if (cfa < sp + 8 || cfa > hi) return 0; /* outside the stack: bad CFI or its end */
    uintptr_t ra = *(const uintptr_t *)(cfa - 8);
    if (ra == 0) return 0;
    *pc = (void *)ra;
    return 1;
}

/* hl_unwind_caller with its common case inline: the rule for `ret` cached in its first slot and
 * a plain step (hl_unwind_step_with). A `ret` of 0 finds no rule (none is kept for address -1)
 * and goes to hl_unwind_caller. */
static inline __attribute__((always_inline)) int hl_unwind_caller_inline(const void *ret, const void *frame, void **pc) {
    struct hl_rule_slot *t = atomic_load_explicit(&hl_rules, memory_order_acquire);
    uint64_t r = t ? hl_rule_cached(t, (uint64_t)(uintptr_t)ret - 1) : 0;
    if (__builtin_expect(hl_rule_kind(r) != HL_R_STEP, 0)) return hl_unwind_caller(ret, frame, pc); /* not cached (0), or not a plain step */
    int k = hl_unwind_step_with(r, ret, frame, pc);
    if (__builtin_expect(k < 0, 0)) return hl_unwind_caller(ret, frame, pc);
    hl_unwind_counted.walks++;
    return k;
}

#endif
