//! Which frame names a call site: the one rule every view uses (the terminal tables, the CI
//! limits' messages, the diff and the HTML page).
//!
//! A site is named by its innermost frame that is the program's own code: frames of the heap's
//! plumbing (the allocator's entry points and code in the C library, the loader, the C++
//! runtime, the allocators and heaplab's preload) are passed over, and so is a program's
//! allocation wrapper (xmalloc, g_malloc, sqlite3Malloc, PyMem_Malloc, ...) when the stack
//! holds its caller: the caller says what the memory is for. heaptrack names a site by its
//! innermost frame (on sqlite3, an unnamed static function under `sqlite3Malloc`, where this
//! names `sqlite3BtreeInsert`); the whole stack is shown beside the name in every view.
//!
//! A wrapper is recognised by its name alone: the last word of its base name (after the last
//! `::`, arguments and template arguments cut, words split at `_`) is `alloc`, `malloc`,
//! `calloc`, `realloc` or one of those with an `x` in front (xmalloc, g_malloc, pool_alloc,
//! my_xrealloc), or the name ends in `Malloc`, `Calloc`, `Realloc` or `Alloc` (sqlite3Malloc,
//! PyMem_Realloc, PyType_GenericAlloc). Only the last word counts: `alloc_node`,
//! `allocate_table` or `realloc_buffer` name what they build, which says more than their
//! caller, so they name their sites.
//!
//! When no frame qualifies the fallbacks are, in order: a wrapper without its caller (the stack
//! was cut), an unnamed frame of the program (`module+0xoffset` says where), the innermost
//! named frame, the innermost frame.

use crate::model::Frame;

/// The allocator's entry points and the C library's functions that return heap memory.
const ENTRY_POINTS: [&str; 22] = [
    "malloc", "calloc", "realloc", "reallocarray", "free", "cfree", "posix_memalign", "aligned_alloc", "memalign", "valloc",
    "pvalloc", "strdup", "strndup", "__strdup", "__strndup", "wcsdup", "asprintf", "vasprintf", "__asprintf", "getline",
    "getdelim", "malloc_usable_size",
];

/// Functions by prefix: C++ operators new and delete (demangled and mangled), the C library's
/// internal names, the standard library's allocator templates instantiated in the program.
const PREFIXES: [&str; 12] = [
    "operator new", "operator delete", "_Znw", "_Zna", "_Zdl", "_Zda", "__libc_", "std::allocator", "std::__new_allocator",
    "__gnu_cxx::new_allocator", "std::allocator_traits", "__gnu_cxx::__alloc_traits",
];

/// Modules (file names) by prefix: the C library, the loader, the C++ runtime and its
/// unwinder, the allocators heaplab replays, and heaplab's own preloaded libraries.
const MODULES: [&str; 10] = ["libc.so", "libc-", "ld-linux", "ld-", "libstdc++", "libgcc_s", "libjemalloc", "libmimalloc", "libtcmalloc", "libheaplab"];

/// Whether `f` is the heap's plumbing rather than the program: an allocator entry point, or
/// code of the C library, the loader, the C++ runtime, an allocator or heaplab's preload.
pub fn is_plumbing(f: &Frame) -> bool {
    ENTRY_POINTS.contains(&f.function.as_str()) || PREFIXES.iter().any(|p| f.function.starts_with(p)) || MODULES.iter().any(|m| f.module.starts_with(m))
}

/// A function's base name: after the last `::`, without arguments or template arguments.
fn base_name(function: &str) -> &str {
    let mut s = function.split('(').next().unwrap_or(function);
    // Template arguments at the end (`pool_alloc<Node>`), nested ones included.
    if s.ends_with('>') {
        let mut depth = 0;
        for (i, c) in s.char_indices().rev() {
            match c {
                '>' => depth += 1,
                '<' => depth -= 1,
                _ => {}
            }
            if depth == 0 {
                s = &s[..i];
                break;
            }
        }
    }
    s.rsplit("::").next().unwrap_or(s)
}

/// Whether `f` is named as an allocation wrapper (see the module's documentation).
pub fn is_wrapper(f: &Frame) -> bool {
    let base = base_name(&f.function);
    let last = base.rsplit('_').next().unwrap_or(base).to_ascii_lowercase();
    let verb = last.strip_prefix('x').unwrap_or(&last);
    let verb = ["m", "c", "re"].iter().find_map(|p| verb.strip_prefix(p)).unwrap_or(verb);
    verb == "alloc" || ["Malloc", "Calloc", "Realloc", "Alloc"].iter().any(|s| base.ends_with(s))
}

/// How well a frame names its site: 0 best (see the module's documentation).
fn rank(f: &Frame, has_caller: bool) -> u8 {
    let named = !f.function.is_empty();
    match (named, is_plumbing(f)) {
        (true, false) if !(has_caller && is_wrapper(f)) => 0,
        (true, false) => 1,
        (false, false) => 2,
        (true, true) => 3,
        (false, true) => 4,
    }
}

/// The frame that names the site whose stack (innermost first, indices into `frames`) is
/// `stack`; `None` for an empty stack (the site whose stack was not recorded).
pub fn site_frame<'a>(frames: &'a [Frame], stack: &[u32]) -> Option<&'a Frame> {
    let all: Vec<&Frame> = stack.iter().filter_map(|&i| frames.get(i as usize)).collect();
    (0..all.len()).min_by_key(|&k| (rank(all[k], k + 1 < all.len()), k)).map(|k| all[k])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(function: &str, module: &str, offset: u64) -> Frame {
        Frame { function: function.into(), module: module.into(), offset, ..Frame::default() }
    }

    #[test]
    fn plumbing_is_known_by_module_or_entry_point() {
        assert!(is_plumbing(&f("malloc", "demo", 1)));
        assert!(is_plumbing(&f("operator new[](unsigned long)", "demo", 1)));
        assert!(is_plumbing(&f("_ZnwmSt11align_val_t", "", 1)));
        assert!(is_plumbing(&f("", "libc.so.6", 1)));
        assert!(is_plumbing(&f("_IO_file_doallocate", "libc.so.6", 1)));
        assert!(is_plumbing(&f("std::__new_allocator<int>::allocate(unsigned long, void const*)", "demo", 1)));
        assert!(is_plumbing(&f("je_malloc_default", "libjemalloc.so.2", 1)));
        assert!(is_plumbing(&f("hl_malloc", "libheaplab_preload.so", 1)));
        assert!(!is_plumbing(&f("mallocator_config", "demo", 1)), "a program function is not plumbing by a substring");
        assert!(!is_plumbing(&f("", "libsqlite3.so.0", 1)));
    }

    #[test]
    fn wrappers_are_named_after_allocating_in_their_last_word() {
        for w in ["xmalloc", "xcalloc", "xrealloc", "g_malloc", "g_try_malloc", "pool_alloc", "my_xrealloc", "sqlite3Malloc", "PyMem_Malloc", "PyMem_Realloc", "PyType_GenericAlloc", "ns::arena_alloc<Node>(unsigned long)", "alloc"] {
            assert!(is_wrapper(&f(w, "demo", 1)), "{w}");
        }
        for p in ["alloc_node", "allocate_table", "realloc_buffer", "sqlite3DbMallocRaw", "make_table", "std::vector<int>::_M_realloc_insert<int const&>(int const&)", "dealloc", "locale_alloc_check", ""] {
            assert!(!is_wrapper(&f(p, "demo", 1)), "{p}");
        }
    }

    /// Stacks as the tracer records them: innermost first, starting at malloc's caller (or at
    /// the allocator when the C++ runtime or the C library allocates).
    #[test]
    fn the_site_is_named_by_its_innermost_program_frame_past_wrappers() {
        let frames = vec![
            f("malloc", "libc.so.6", 0),                                                                     // 0
            f("operator new(unsigned long)", "libstdc++.so.6", 1),                                           // 1
            f("std::__new_allocator<int>::allocate(unsigned long, void const*)", "demo", 2),                 // 2
            f("grow", "demo", 3),                                                                            // 3
            f("__strdup", "libc.so.6", 4),                                                                   // 4
            f("", "libsqlite3.so.0", 5),                                                                     // 5
            f("sqlite3Malloc", "libsqlite3.so.0", 6),                                                        // 6
            f("sqlite3BtreeInsert", "libsqlite3.so.0", 7),                                                   // 7
            f("alloc_node", "demo", 8),                                                                      // 8
            f("build_tree", "demo", 9),                                                                      // 9
            f("xmalloc", "demo", 10),                                                                        // 10
            f("make_table", "report", 11),                                                                   // 11
            f("main", "report", 12),                                                                         // 12
        ];
        let name = |stack: &[u32]| site_frame(&frames, stack).map(|x| if x.function.is_empty() { format!("{}+{}", x.module, x.offset) } else { x.function.clone() });
        // report.c's stacks start at malloc's caller.
        assert_eq!(name(&[11, 12]).unwrap(), "make_table");
        // sqlite3: the wrapper and the unnamed frame between are passed over.
        assert_eq!(name(&[6, 5, 7]).unwrap(), "sqlite3BtreeInsert");
        assert_eq!(name(&[5, 6, 5, 7]).unwrap(), "sqlite3BtreeInsert");
        // The C++ runtime and the allocator templates are plumbing.
        assert_eq!(name(&[0, 1, 2, 3]).unwrap(), "grow");
        // A function named for what it allocates names its site.
        assert_eq!(name(&[10, 8, 9]).unwrap(), "alloc_node");
        // A wrapper whose caller was cut off names its site; so does one whose callers are all
        // plumbing or unnamed.
        assert_eq!(name(&[0, 6]).unwrap(), "sqlite3Malloc");
        assert_eq!(name(&[10, 5]).unwrap(), "xmalloc");
        // No named program frame: the program's unnamed frame says where.
        assert_eq!(name(&[0, 5]).unwrap(), "libsqlite3.so.0+5");
        // All plumbing: the innermost named frame.
        assert_eq!(name(&[4, 0]).unwrap(), "__strdup");
        assert_eq!(site_frame(&frames, &[]), None);
    }
}
