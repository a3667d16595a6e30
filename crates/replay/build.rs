//! Compiles the replay child (`child/heaplab_replay_child.c`) with the system C compiler into
//! OUT_DIR; `src/child.rs` embeds the executable so the `heaplab` binary carries it, as the
//! trace crate does with its preload library.

use std::path::PathBuf;
use std::process::Command;

fn main() {
    let src = "child/heaplab_replay_child.c";
    println!("cargo:rerun-if-changed={src}");
    println!("cargo:rerun-if-env-changed=CC");
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("heaplab_replay_child");
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".to_string());
    // -rdynamic exports the child's mmap/munmap/mremap so that the preloaded allocator's calls
    // reach them (they count mapping changes); -fno-builtin keeps malloc calls real calls.
    let status = Command::new(&cc)
        .args(["-O2", "-g0", "-Wall", "-Wextra", "-fno-builtin-malloc", "-fno-builtin-calloc", "-fno-builtin-free", "-rdynamic", "-pthread", "-o"])
        .arg(&out)
        .arg(src)
        .arg("-ldl")
        .status();
    match status {
        Ok(s) if s.success() => {}
        Ok(s) => panic!("{cc} failed to compile {src} ({s}); a C compiler (gcc or clang) is required"),
        Err(e) => panic!("cannot run the C compiler '{cc}' ({e}); install gcc (apt-get install -y gcc) or set CC"),
    }
    println!("cargo:rustc-env=HEAPLAB_REPLAY_CHILD={}", out.display());
}
