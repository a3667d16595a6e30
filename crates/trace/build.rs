//! Compiles the LD_PRELOAD tracer (`preload/heaplab_preload.c`) with the system C compiler into
//! OUT_DIR; `src/preload.rs` embeds the result so the `heaplab` binary carries its own tracer
//! and works from any directory on a fresh clone.

use std::path::PathBuf;
use std::process::Command;

fn main() {
    let src = "preload/heaplab_preload.c";
    println!("cargo:rerun-if-changed={src}");
    println!("cargo:rerun-if-env-changed=CC");
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("libheaplab_preload.so");
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".to_string());
    let status = Command::new(&cc)
        .args(["-O2", "-g0", "-fPIC", "-shared", "-fvisibility=hidden", "-Wall", "-Wextra", "-o"])
        .arg(&out)
        .arg(src)
        .args(["-ldl", "-lpthread"])
        .status();
    match status {
        Ok(s) if s.success() => {}
        Ok(s) => panic!("{cc} failed to compile {src} ({s}); a C compiler (gcc or clang) is required"),
        Err(e) => panic!("cannot run the C compiler '{cc}' ({e}); install gcc (apt-get install -y gcc) or set CC"),
    }
    println!("cargo:rustc-env=HEAPLAB_PRELOAD_SO={}", out.display());
}
