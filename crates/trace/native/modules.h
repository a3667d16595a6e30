/* modules.h — the executable file mappings of the running process, from /proc/self/maps or the
 * dynamic loader's list, for the runtime libraries: the layout runtime turns frames into stable
 * context keys with them, the grouped allocator turns (module, file offset) call sites into
 * addresses. A module is named by the FNV-1a hash of its file's basename
 * (crates/trace/src/context.rs has the same rule). Never allocates: the scratch buffer is
 * mmap'd and given back.
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

/* The executable segments of the objects the dynamic loader has loaded (dl_iterate_phdr: no
 * system call but one readlink per object, where reading /proc/self/maps took 80 µs at a
 * program's start), as hl_load_modules lists their mappings and names their files, in address
 * order. Returns how many, or (size_t)-1 when none was found. Files mapped executable by other
 * means than the loader are not in it: hl_load_modules is the complete list.
 * A caller that only looks for the modules named by the `nwanted` hashes in `wanted` (not NULL)
 * has the objects named as loaded (the program as exec'd) first, and as hl_load_modules names
 * them (symbolic links followed) only where some wanted name is then missing: a readlink per
 * object, about 1.5 µs each, is then spared when every wanted module is loaded under its name. */
size_t hl_load_modules_loaded(struct hl_module *m, size_t cap, const uint64_t *wanted, size_t nwanted);

/* How far below a stack pointer hl_main_stack's lower bound goes: still inside the stack's
 * mapping or the guard gap the kernel keeps free below it. */
#define HL_MAIN_STACK_BELOW ((uintptr_t)64 << 10)

/* On the main thread, bounds [*lo, *hi) of its stack around `sp` without reading
 * /proc/self/maps: *hi is the end of the stack's mapping (the page after the exec file name,
 * which the kernel puts at its top), *lo a little below sp (HL_MAIN_STACK_BELOW), so that
 * everything from a stack pointer in the bounds up to *hi is the stack's. Returns 0 on any
 * other thread, or when the kernel gave no file name (then read the maps). */
int hl_main_stack(uintptr_t sp, uintptr_t *lo, uintptr_t *hi);

/* At a program's start, on its main thread: hl_load_modules_loaded and hl_main_stack, without
 * reading /proc/self/maps; elsewhere, or where either finds nothing, hl_load_modules_at. The
 * stack bounds are left alone where none is found. */
size_t hl_load_modules_at_start(struct hl_module *m, size_t cap, uintptr_t sp, uintptr_t *sp_lo, uintptr_t *sp_hi, const uint64_t *wanted, size_t nwanted);

/* The module of m[0..n) (address order) holding address a, or NULL. */
const struct hl_module *hl_module_of(const struct hl_module *m, size_t n, uint64_t a);

#endif
