//! Compiles the grouped allocator (`runtime/group.c` on the native layer of heaplab-trace,
//! `../trace/native/`, in its client-served mode) into `libheaplab_group.so` in OUT_DIR;
//! `src/run.rs` embeds it, so `heaplab run --groups` needs no install step. The runtime table's
//! numbers the C reads come from the Rust definitions (`src/table.rs`) into the generated
//! `heaplab_group_table.h`: the table has one definition.

use heaplab_native_build::{rust_const, CBuild, CHeader};

/// A `u32` constant of `path` written as a number, `u32::MAX` or `u32::MAX - N`, as a C literal.
fn u32_literal(path: &str, name: &str) -> String {
    let text = rust_const(path, name);
    let value = match text.strip_prefix("u32::MAX") {
        Some(rest) if rest.trim().is_empty() => Some(u32::MAX),
        Some(rest) => rest.trim().strip_prefix('-').and_then(|n| n.trim().parse::<u32>().ok()).and_then(|n| u32::MAX.checked_sub(n)),
        None => text.parse::<u32>().ok(),
    };
    let value = value.unwrap_or_else(|| panic!("{path}: cannot read `{name} = {text}` as a u32"));
    format!("0x{value:x}u")
}

fn table_header() -> CHeader {
    let table = "src/table.rs";
    let magic = rust_const(table, "MAGIC");
    let magic = magic.strip_prefix("b\"").and_then(|m| m.strip_suffix('"')).expect("MAGIC is a byte string literal");
    let spare = rust_const("src/lib.rs", "MAX_SPARE_CHUNKS");
    CHeader::new("heaplab_group_table.h", "The runtime table's numbers, from crates/group/src/table.rs and lib.rs.")
        .define_str("HLG_MAGIC", magic.as_bytes(), "the first 8 bytes")
        .define("HLG_VERSION", format!("{}u", rust_const(table, "VERSION")), "the version the runtime reads")
        .define("HLG_HEADER", rust_const(table, "HEADER"), "bytes of the header")
        .define("HLG_SITE_RECORD", rust_const(table, "SITE_RECORD"), "bytes per site record")
        .define("HLG_PAIR_RECORD", rust_const(table, "PAIR_RECORD"), "bytes per group or conjunction record")
        .define("HLG_MAX_SITES", rust_const(table, "MAX_SITES"), "selector sites at most")
        .define("HLG_MAX_WALK", rust_const(table, "MAX_WALK"), "frames walked at most")
        .define("HLG_MAX_GROUPS", format!("({})", rust_const(table, "MAX_GROUPS").replace("(1 << 24)", "(1u << 24)")), "groups at most")
        .define("HLG_MAX_TABLE_SITES", format!("({})", rust_const(table, "MAX_TABLE_SITES").replace(" << ", "u << ")), "sites of all kinds at most")
        .define("HLG_WALK", u32_literal(table, "WALK"), "a site's `decides`: walk (table.rs WALK)")
        .define("HLG_FALLBACK", u32_literal(table, "FALLBACK"), "a site's `decides`: fall back (table.rs FALLBACK)")
        .define("HLG_MODULE", u32_literal(table, "MODULE"), "a record's `decides`: a program module, no site (table.rs MODULE)")
        .define("HLG_MAX_SPARE", format!("({})", spare.replace(" << ", "u << ")), "spare chunks at most")
}

fn main() {
    let generated = table_header().write();
    CBuild::shared_library("libheaplab_group.so")
        .source("../trace/native/interpose.c")
        .source("../trace/native/unwind.c")
        .source("../trace/native/modules.c")
        .source("../trace/native/report.c")
        .source("runtime/group.c")
        .include("../trace/native")
        .include("runtime")
        .include(generated)
        .flags(["-DHL_CLIENT_SERVES", "-DHL_COMPACT_TABLES"])
        .lib("dl")
        .lib("pthread")
        .embed("HEAPLAB_GROUP_SO");
}
