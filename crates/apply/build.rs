//! Compiles the layout runtime (`runtime/apply.c` on the native layer of heaplab-trace,
//! `../trace/native/`, in its client-served mode) into `libheaplab_apply.so` in OUT_DIR;
//! `src/run.rs` embeds it, so `heaplab run` needs no install step. The `.hllayout` numbers the C
//! reads are taken from the Rust definitions (`src/format.rs`, `src/lib.rs`) into the generated
//! `heaplab_layout.h`: the format has one definition.

use heaplab_native_build::{rust_const, CBuild, CHeader};

fn layout_header() -> CHeader {
    let format = "src/format.rs";
    let magic = rust_const(format, "MAGIC");
    let magic = magic.strip_prefix("b\"").and_then(|m| m.strip_suffix('"')).expect("MAGIC is a byte string literal");
    CHeader::new("heaplab_layout.h", "The .hllayout format's numbers, from crates/apply/src/format.rs and lib.rs.")
        .define_str("HLL_MAGIC", magic.as_bytes(), "the first 8 bytes")
        .define("HLL_VERSION", rust_const(format, "VERSION"), "the version the runtime reads")
        .define("HLL_FLAG_CONTEXTS", rust_const(format, "FLAG_CONTEXTS"), "flag: entries keyed by context")
        .define("HLL_HEADER_SIZE", rust_const(format, "HEADER"), "bytes before the strategy name")
        .define("HLL_CONTEXT_RECORD", rust_const(format, "CONTEXT_RECORD"), "bytes per context record")
        .define("HLL_ENTRY_RECORD", rust_const(format, "ENTRY_RECORD"), "bytes per entry record")
        .define("HLL_INFO_RECORD", rust_const(format, "INFO_RECORD"), "bytes per info record")
        .define("HLL_GRANULE", format!("{}u", rust_const("src/lib.rs", "GRANULE")), "offsets and slots are multiples")
}

fn main() {
    let generated = layout_header().write();
    CBuild::shared_library("libheaplab_apply.so")
        .source("../trace/native/interpose.c")
        .source("../trace/native/sites.c")
        .source("../trace/native/unwind.c")
        .source("../trace/native/modules.c")
        .source("../trace/native/report.c")
        .source("runtime/apply.c")
        .include("../trace/native")
        .include("runtime")
        .include(generated)
        .flags(["-DHL_CLIENT_SERVES", "-DHL_COMPACT_TABLES"])
        .lib("dl")
        .lib("pthread")
        .embed("HEAPLAB_APPLY_SO");
}
