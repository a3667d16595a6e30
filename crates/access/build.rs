//! Compiles the valgrind tool (`tool/`) into OUT_DIR when valgrind's tool headers and static
//! libraries are installed (Debian's `valgrind` package has them): the static tool executable
//! `heaplab-amd64-linux` and its malloc-replacement preload `vgpreload_heaplab-amd64-linux.so`,
//! both embedded by `src/tool.rs`. Without them the crate still builds, embeds nothing, and
//! `heaplab access` says what to install. The tool's header of format numbers is generated from
//! `src/codes.rs`.

use heaplab_native_build::{out_dir, CBuild, CHeader};
use std::path::Path;

#[allow(dead_code)] // the build script uses only the constants it writes out
#[path = "src/codes.rs"]
mod codes;

const INCLUDE: &str = "/usr/include/valgrind";
const LIBS: &str = "/usr/lib/x86_64-linux-gnu/valgrind";

fn main() {
    println!("cargo:rerun-if-changed=src/codes.rs");
    println!("cargo:rerun-if-changed={INCLUDE}/pub_tool_basics.h");
    println!("cargo:rerun-if-changed={LIBS}/libcoregrind-amd64-linux.a");
    let lib = |name: &str| format!("{LIBS}/{name}");
    let needed = [format!("{INCLUDE}/pub_tool_tooliface.h"), lib("libcoregrind-amd64-linux.a"), lib("libvex-amd64-linux.a"), lib("libgcc-sup-amd64-linux.a"), lib("libreplacemalloc_toolpreload-amd64-linux.a")];
    let available = cfg!(all(target_arch = "x86_64", target_os = "linux")) && needed.iter().all(|p| Path::new(p).exists());
    if !available {
        let dir = out_dir();
        for name in ["heaplab-amd64-linux", "vgpreload_heaplab-amd64-linux.so"] {
            std::fs::write(dir.join(name), b"").expect("OUT_DIR is writable");
        }
        println!("cargo:rustc-env=HEAPLAB_VG_TOOL={}", dir.join("heaplab-amd64-linux").display());
        println!("cargo:rustc-env=HEAPLAB_VG_PRELOAD={}", dir.join("vgpreload_heaplab-amd64-linux.so").display());
        println!("cargo:warning=valgrind's tool headers or libraries are missing: `heaplab access` will ask for `apt-get install valgrind`");
        return;
    }
    let header = CHeader::new("hl_format.h", "The .hlaccess format's numbers, from crates/access/src/codes.rs (specified in format.rs).")
        .define_str("HLA_MAGIC", codes::MAGIC, "the first 8 bytes")
        .define("HLA_VERSION", codes::VERSION, "the version the tool writes")
        .define("HLA_HEADER_FIXED", codes::HEADER_FIXED, "bytes of the fixed header")
        .define_str("HLA_END", codes::END, "the 8 bytes before the checksum")
        .write();
    // The tool is a static executable loaded at valgrind's tool address, without libc: the
    // recipe valgrind's own build uses for its tools.
    CBuild::program("heaplab-amd64-linux")
        .source("tool/hl_main.c")
        .include(INCLUDE)
        .include(header)
        .flags([
            "-fno-strict-aliasing", "-fno-builtin", "-fno-stack-protector", "-fno-pie", "-Wno-unused-parameter",
            "-DVGA_amd64=1", "-DVGO_linux=1", "-DVGP_amd64_linux=1", "-DVGPV_amd64_linux_vanilla=1",
            "-static", "-nodefaultlibs", "-nostartfiles", "-u", "_start", "-no-pie", "-Wl,--build-id=none", "-Wl,-Ttext-segment=0x58000000",
        ])
        .link(lib("libcoregrind-amd64-linux.a"))
        .link(lib("libvex-amd64-linux.a"))
        .link(lib("libgcc-sup-amd64-linux.a"))
        .link("-lgcc")
        .embed("HEAPLAB_VG_TOOL");
    // The preload is valgrind's malloc-replacement stubs alone (as vgpreload_massif is built):
    // they hand every allocation call to the tool through client requests.
    CBuild::shared_library("vgpreload_heaplab-amd64-linux.so")
        .flags(["-nodefaultlibs", "-Wl,-z,interpose,-z,initfirst"])
        .link("-Wl,--whole-archive")
        .link(lib("libreplacemalloc_toolpreload-amd64-linux.a"))
        .link("-Wl,--no-whole-archive")
        .embed("HEAPLAB_VG_PRELOAD");
}
