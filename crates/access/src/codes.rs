//! The `.hlaccess` format's numbers, shared with the valgrind tool: `build.rs` writes them into
//! the tool's C header, so they have one definition (the layout is specified in `format.rs`).

/// The first 8 bytes of every profile.
pub const MAGIC: &[u8; 8] = b"HLACCESS";
/// The version the tool writes (this crate also reads version 1).
pub const VERSION: u32 = 2;
/// Bytes of the fixed header, before the command words.
pub const HEADER_FIXED: usize = 136;
/// Bytes of version 1's fixed header.
pub const HEADER_FIXED_V1: usize = 96;
/// The 8 bytes before the checksum (NUL-terminated in C).
pub const END: &[u8; 8] = b"HLA-END\0";
