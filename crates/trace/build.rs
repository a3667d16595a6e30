//! Compiles the LD_PRELOAD tracer (`native/` + `preload/`) into OUT_DIR (`src/preload.rs` embeds it, so the `heaplab`
//! binary carries its own tracer), and the run launcher (`launcher/`, which `src/launch.rs` embeds), after generating `heaplab_format.h` from the Rust constants
//! of the `.hltrace` format (`src/format/codes.rs`): the format's numbers have one definition.

use heaplab_native_build::{CBuild, CHeader};

#[allow(dead_code)] // the build script uses only the constants it writes out
#[path = "src/format/codes.rs"]
mod codes;

use codes::*;

fn format_header() -> CHeader {
    println!("cargo:rerun-if-changed=src/format/codes.rs");
    let mut h = CHeader::new("heaplab_format.h", "The .hltrace format's numbers, from crates/trace/src/format/codes.rs (specified in format.rs).")
        .define_str("HLT_MAGIC", MAGIC, "the first 8 bytes, NUL included")
        .define("HLT_VERSION", VERSION, "the version the tracer writes")
        .define("HLT_HEADER_FIXED", HEADER_FIXED, "size of the fixed part of the header")
        .define("HLT_RECORD_HEADER", RECORD_HEADER, "size of a record header")
        .define("HLT_KIND_EVENTS", format!("'{}'", KIND_EVENTS as char), "record kind: a thread's window of events")
        .define("HLT_KIND_PADDING", format!("'{}'", KIND_PADDING as char), "record kind: unused space")
        .define("HLT_KIND_TRAILER", format!("'{}'", KIND_TRAILER as char), "record kind: the trailer")
        .define("HLT_RECORD_SITES", RECORD_SITES, "record flag: allocation events carry a call-site id")
        .define_str("HLT_TRAILER_END", TRAILER_END, "marker at the end of a trailer")
        .gap()
        .define("HLT_F_SEQ", format!("0x{F_SEQ:02x}"), "a sequence delta follows (else previous + 1)")
        .define("HLT_F_TS", format!("0x{F_TS:02x}"), "a timestamp delta follows (else the same tick)")
        .define("HLT_F_NULL", format!("0x{F_NULL:02x}"), "alloc ops: result NULL; realloc ops: input NULL; page ops: failed")
        .define("HLT_F_RAW", format!("0x{F_RAW:02x}"), "pointer deltas in bytes (else in 16-byte units)")
        .gap();
    for op in Op::ALL {
        h = h.define(&format!("HLT_OP_{}", op.name().to_ascii_uppercase()), op as u8, "");
    }
    h = h.define("HLT_OP_PAGES", OP_PAGES, "a page event").define("HLT_OP_SITE", OP_SITE, "a call-site definition").gap();
    for op in PageOp::ALL {
        h = h.define(&format!("HLT_PAGE_{}", op.name().to_ascii_uppercase()), op as u8, "");
    }
    h.gap()
        .define("HLT_ORIGIN_ROOT", ORIGIN_ROOT, "")
        .define("HLT_ORIGIN_FORK", ORIGIN_FORK, "")
        .define("HLT_ORIGIN_IMAGE", ORIGIN_IMAGE, "")
        .define("HLT_CLOCK_MONOTONIC", CLOCK_MONOTONIC, "header clock id")
        .gap()
        .define("HLT_END_EXIT", END_EXIT, "")
        .define("HLT_END_UNDERSCORE_EXIT", END_UNDERSCORE_EXIT, "")
        .define("HLT_END_SIGNAL", END_SIGNAL, "")
        .define("HLT_END_EXEC", END_EXEC, "")
}

fn main() {
    let generated = format_header().write();
    // One .so: the native layer (interposition, bootstrap, guard; call sites) and the tracer,
    // its client, which defines the layer's hooks.
    CBuild::shared_library("libheaplab_preload.so")
        .source("native/interpose.c")
        .source("native/sites.c")
        .source("native/unwind.c")
        .source("preload/tracer.c")
        .include("native")
        .include(generated)
        .lib("dl")
        .lib("pthread")
        .embed("HEAPLAB_PRELOAD_SO");
    // The run launcher (see its comment): programs measured for their own peak RSS.
    CBuild::program("heaplab_run").source("launcher/heaplab_run.c").embed("HEAPLAB_RUN_LAUNCHER");
}
