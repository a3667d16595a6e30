//! Compiles the run launcher (`launcher/heaplab_run.c`) with the system C compiler into
//! OUT_DIR; `src/measure.rs` embeds it (see the launcher's comment for why it exists).

use std::path::PathBuf;
use std::process::Command;

fn main() {
    let src = "launcher/heaplab_run.c";
    println!("cargo:rerun-if-changed={src}");
    println!("cargo:rerun-if-env-changed=CC");
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("heaplab_run");
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".to_string());
    let status = Command::new(&cc).args(["-O2", "-g0", "-Wall", "-Wextra", "-o"]).arg(&out).arg(src).status();
    match status {
        Ok(s) if s.success() => {}
        Ok(s) => panic!("{cc} failed to compile {src} ({s}); a C compiler (gcc or clang) is required"),
        Err(e) => panic!("cannot run the C compiler '{cc}' ({e}); install gcc (apt-get install -y gcc) or set CC"),
    }
    println!("cargo:rustc-env=HEAPLAB_RUN_LAUNCHER={}", out.display());
}
