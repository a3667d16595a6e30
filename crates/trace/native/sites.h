/* sites.h — call-site ids: the return address of an allocation call, and with a stack depth
 * above one the caller's frames, hashed and numbered once per process in a lock-free table.
 *
 * Shared by heaplab's LD_PRELOAD libraries: the tracer records the ids (and each new site's
 * frames once), a layout allocator would look its plan up by them. Never allocates: the table
 * is mmap'd, frames live on the caller's stack. Stacks are walked by native/unwind.c (a library
 * that compiles sites.c compiles unwind.c too).
 */
#ifndef HEAPLAB_SITES_H
#define HEAPLAB_SITES_H

#include <stdint.h>

#define HL_MAX_DEPTH 64

/* One call site. `frames[0]` is the return address, then the caller's frames. */
struct hl_site {
    uint32_t id;      /* 1, 2, …; 0 = unknown (table full or not set up) */
    int is_new;       /* this call defined the site: frames and hash are to be recorded */
    int n;            /* frames used */
    uint64_t hash;    /* never 0 */
    void *frames[HL_MAX_DEPTH + 1];
};

/* One step of the fold that hashes frames into a site's hash (and, in the runtime library, into
 * a stable context key: crates/trace/src/context.rs has the same mixer). */
uint64_t hl_mix(uint64_t h, uint64_t v);

/* Sets up the table for stacks of `depth` frames (1 = the return address only; at most
 * HL_MAX_DEPTH). Returns 0, or -1 when the table cannot be mapped (ids are then 0).
 * HEAPLAB_UNWIND=backtrace in the environment walks stacks with glibc's backtrace() instead
 * (the reference the walker is tested against; many times slower), HEAPLAB_UNWIND=check with
 * both, reporting differences on stderr (see unwind.h). */
int hl_sites_init(int depth);
/* Forgets every site (in a fork child, whose ids start again from 1). */
void hl_sites_reset(void);
/* The site of the call that returns to `ret`. Fills `s`; returns s->id. */
uint32_t hl_site_of(void *ret, struct hl_site *s);

#endif
