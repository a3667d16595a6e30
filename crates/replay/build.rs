//! Compiles the replay child (`child/heaplab_replay_child.c`) into OUT_DIR; `src/child.rs`
//! embeds the executable so the `heaplab` binary carries it, as the trace crate does with its
//! preload library.

use heaplab_native_build::CBuild;

fn main() {
    CBuild::program("heaplab_replay_child")
        .source("child/heaplab_replay_child.c")
        // -rdynamic exports the child's mmap/munmap/mremap so that the preloaded allocator's
        // calls reach them (they count mapping changes); -fno-builtin keeps malloc calls real.
        .flags(["-fno-builtin-malloc", "-fno-builtin-calloc", "-fno-builtin-free", "-rdynamic", "-pthread"])
        .lib("dl")
        .embed("HEAPLAB_REPLAY_CHILD");
}
