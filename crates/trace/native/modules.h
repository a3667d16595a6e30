/* modules.h — the executable file mappings of the running process, from /proc/self/maps, for the
 * runtime libraries: the layout runtime turns frames into stable context keys with them, the
 * grouped allocator turns (module, file offset) call sites into addresses. A module is named by
 * the FNV-1a hash of its file's basename (crates/trace/src/context.rs has the same rule).
 * Never allocates: the scratch buffer is mmap'd and given back.
 */
#ifndef HEAPLAB_MODULES_H
#define HEAPLAB_MODULES_H

#include <stddef.h>
#include <stdint.h>

/* One executable file mapping: [lo, hi) maps the file from offset `off`. */
struct hl_module { uint64_t lo, hi, off, name_hash; };

/* 64-bit FNV-1a of n bytes. */
uint64_t hl_fnv1a(const char *s, size_t n);

/* Reads the executable file mappings into m (at most cap), in address order. Returns how many,
 * or (size_t)-1 when /proc/self/maps cannot be read (m is then untouched). */
size_t hl_load_modules(struct hl_module *m, size_t cap);

/* hl_load_modules, and the mapping holding address `sp` (a thread's stack pointer) into
 * *sp_lo, *sp_hi when there is one (left alone otherwise): one read of /proc/self/maps for both. */
size_t hl_load_modules_at(struct hl_module *m, size_t cap, uintptr_t sp, uintptr_t *sp_lo, uintptr_t *sp_hi);

/* The module of m[0..n) (address order) holding address a, or NULL. */
const struct hl_module *hl_module_of(const struct hl_module *m, size_t n, uint64_t a);

#endif
