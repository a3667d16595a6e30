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
 * function `ret` is in (1; 0 when the stack ends there), for a caller that needs only it. */
int hl_unwind_caller(const void *ret, const void *frame, void **pc);

/* hl_unwind_above's walk in steps, for a caller that stops as soon as it knows enough:
 * hl_walk_start begins above `ret` (0; -1 when `frame` does not hold it or the walk needs the
 * fallback, so the caller takes hl_unwind_above instead). Each hl_walk_more appends up to `max`
 * further return addresses to `pcs`, stopping after the first one in [lo, lo + span] (the
 * addresses the caller looks for), and returns how many (0 once the stack has ended; -1 when a
 * frame needs the fallback: the caller starts over with hl_unwind_above). */
struct hl_walk { uint64_t a; uintptr_t sp, bp, lo, hi, zero_at; int ended; };
int hl_walk_start(struct hl_walk *w, const void *ret, const void *frame);
int hl_walk_more(struct hl_walk *w, void **pcs, int max, uint64_t lo, uint64_t span);

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

/* The calling thread's counts since it started: walks, walks that fell back to backtrace(),
 * code addresses whose CFI was decoded (cache misses), and checked walks that differed. */
struct hl_unwind_counts {
    uint64_t walks, fallbacks, decoded, mismatches;
};
void hl_unwind_counts(struct hl_unwind_counts *c);

#endif
