//! The `.hlaccess` file: one access profile, written by the valgrind tool at the program's exit
//! (`tool/hl_main.c`, `write_profile`) and by [`write`] (tests, tools), read by [`read`].
//!
//! Version 1. Integers in the fixed header are little-endian; `var` is an unsigned LEB128
//! varint (7 bits a byte, low first, at most 10 bytes); `str` is `var` length + UTF-8 bytes.
//! ```text
//!  0  magic "HLACCESS" (8 bytes)
//!  8  u32 version = 1
//! 12  u32 stack depth (frames per context)
//! 16  u64 affinity distance A (bytes)
//! 24  u64 accesses (loads and stores executed, heap or not)
//! 32  u64 heap accesses (of those, the ones inside a live heap block)
//! 40  u64 B = blocks
//! 48  u64 C = contexts
//! 56  u64 E = co-access edges
//! 64  u64 F = friend edges
//! 72  u64 co-access weight dropped by the memory bound
//! 80  u64 friend weight dropped by the memory bound
//! 88  u64 K = command words
//! 96  K × str: the command (program, then its arguments)
//!     C × context: u64 key, var n, n × frame (innermost first):
//!         var ip, str module path ("" = none), var file offset, str function ("" = unknown)
//!     B × block, in allocation order: var size, var context index (< C),
//!         var alloc_at − previous block's alloc_at (the first: alloc_at),
//!         var free_at − alloc_at (0 = live at exit), var reads, var writes
//!     E × edge, sorted by (from, to), no repeats: var from, var to, var weight (≥ 1)
//!     F × edge, the same
//!     "HLA-END\0" (8 bytes)
//!     u64 FNV-1a 64 of every byte before it
//! ```
//! Edge ends are block indices (< B), `from ≠ to`. Readers reject anything else with a message
//! naming the file and what is wrong: bad magic, an unknown version, truncation, a checksum
//! mismatch, indices out of range, trailing bytes.

use crate::codes::{END, HEADER_FIXED, MAGIC, VERSION};
use crate::{AccessBlock, AccessProfile, Context, Edge, Frame, ProfileInfo};
use heaplab_trace::context::fnv1a;
use std::path::Path;

/// Why a profile could not be read or written.
#[derive(Debug)]
pub struct FormatError {
    /// The file.
    pub path: String,
    /// What is wrong with it.
    pub what: String,
}

impl std::fmt::Display for FormatError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.path, self.what)
    }
}

impl std::error::Error for FormatError {}

/// Reads the profile at `path`.
pub fn read(path: impl AsRef<Path>) -> Result<AccessProfile, FormatError> {
    let path = path.as_ref();
    let shown = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|e| FormatError { path: shown.clone(), what: format!("cannot read: {e}") })?;
    parse(&bytes).map_err(|what| FormatError { path: shown, what })
}

/// Parses a profile from its bytes (the error says what is wrong, without the file name).
pub fn parse(bytes: &[u8]) -> Result<AccessProfile, String> {
    if bytes.len() < 8 || &bytes[..8] != MAGIC {
        return Err("not an access profile (bad magic; expected a .hlaccess file from `heaplab access`)".into());
    }
    if bytes.len() < HEADER_FIXED {
        return Err(format!("truncated: {} bytes, shorter than the {HEADER_FIXED}-byte header", bytes.len()));
    }
    let version = u32::from_le_bytes(bytes[8..12].try_into().unwrap());
    if version != VERSION {
        return Err(format!("format version {version}; this heaplab reads version {VERSION}"));
    }
    if bytes.len() < HEADER_FIXED + 16 {
        return Err(format!("truncated: {} bytes, no room for the end marker and checksum", bytes.len()));
    }
    let body_end = bytes.len() - 8;
    let sum = u64::from_le_bytes(bytes[body_end..].try_into().unwrap());
    if &bytes[body_end - 8..body_end] != END || sum != fnv1a(&bytes[..body_end]) {
        return Err("truncated or corrupt: the end marker or checksum does not match (was the profiled run cut short?)".into());
    }
    let u64_at = |o: usize| u64::from_le_bytes(bytes[o..o + 8].try_into().unwrap());
    let mut info = ProfileInfo {
        stack_depth: u32::from_le_bytes(bytes[12..16].try_into().unwrap()),
        affinity_distance: u64_at(16),
        accesses: u64_at(24),
        heap_accesses: u64_at(32),
        coaccess_dropped: u64_at(72),
        friends_dropped: u64_at(80),
        ..ProfileInfo::default()
    };
    let (n_blocks, n_contexts, n_coaccess, n_friends, n_words) = (u64_at(40), u64_at(48), u64_at(56), u64_at(64), u64_at(88));
    let mut r = Cursor { bytes: &bytes[..body_end - 8], at: HEADER_FIXED };
    // Every record takes at least one byte: counts beyond the bytes left are corrupt, and
    // checking first keeps a bad count from reserving absurd memory.
    for (n, what) in [(n_words, "command words"), (n_contexts, "contexts"), (n_blocks, "blocks"), (n_coaccess, "co-access edges"), (n_friends, "friend edges")] {
        if n > r.left() as u64 {
            return Err(format!("header says {n} {what}, more than the file can hold"));
        }
    }
    for _ in 0..n_words {
        info.command.push(r.str("command word")?);
    }
    let mut contexts = Vec::with_capacity(n_contexts as usize);
    for i in 0..n_contexts {
        let key = r.u64(&format!("context {i}"))?;
        let n = r.var(&format!("context {i}"))?;
        if n > 64 {
            return Err(format!("context {i} has {n} frames (at most 64)"));
        }
        let mut frames = Vec::with_capacity(n as usize);
        for _ in 0..n {
            let what = format!("context {i}");
            frames.push(Frame { ip: r.var(&what)?, module: r.str(&what)?, file_offset: r.var(&what)?, function: r.str(&what)? });
        }
        contexts.push(Context { key, frames });
    }
    let mut blocks = Vec::with_capacity(n_blocks as usize);
    let mut clock = 0u64;
    for i in 0..n_blocks {
        let what = format!("block {i}");
        let size = r.var(&what)?;
        let context = r.var(&what)?;
        if context >= n_contexts {
            return Err(format!("block {i}: context {context} out of range ({n_contexts} contexts)"));
        }
        clock = clock.checked_add(r.var(&what)?).ok_or_else(|| format!("block {i}: allocation time overflows"))?;
        let life = r.var(&what)?;
        let free_at = if life == 0 { u64::MAX } else { clock.checked_add(life).ok_or_else(|| format!("block {i}: free time overflows"))? };
        blocks.push(AccessBlock { size, context: context as u32, alloc_at: clock, free_at, reads: r.var(&what)?, writes: r.var(&what)?, full_context: u32::MAX });
    }
    let coaccess = r.edges(n_coaccess, n_blocks, "co-access edge")?;
    let friends = r.edges(n_friends, n_blocks, "friend edge")?;
    if r.left() != 0 {
        return Err(format!("{} unexpected bytes after the friend edges", r.left()));
    }
    Ok(AccessProfile { info, blocks, contexts, coaccess, friends, ..AccessProfile::default() })
}

struct Cursor<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Cursor<'_> {
    fn left(&self) -> usize {
        self.bytes.len() - self.at
    }

    fn truncated(what: &str) -> String {
        format!("truncated in {what}")
    }

    fn u64(&mut self, what: &str) -> Result<u64, String> {
        let b = self.bytes.get(self.at..self.at + 8).ok_or_else(|| Self::truncated(what))?;
        self.at += 8;
        Ok(u64::from_le_bytes(b.try_into().unwrap()))
    }

    fn var(&mut self, what: &str) -> Result<u64, String> {
        let mut v = 0u64;
        for shift in (0..70).step_by(7) {
            let b = *self.bytes.get(self.at).ok_or_else(|| Self::truncated(what))?;
            self.at += 1;
            if shift == 63 && b > 1 {
                return Err(format!("{what}: a number overflows 64 bits"));
            }
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(format!("{what}: a number overflows 64 bits"))
    }

    fn str(&mut self, what: &str) -> Result<String, String> {
        let n = self.var(what)?;
        if n > self.left() as u64 {
            return Err(Self::truncated(what));
        }
        let s = &self.bytes[self.at..self.at + n as usize];
        self.at += n as usize;
        // Paths and symbols are bytes on Linux: shown lossily rather than refused.
        Ok(String::from_utf8_lossy(s).into_owned())
    }

    fn edges(&mut self, n: u64, n_blocks: u64, what: &str) -> Result<Vec<Edge>, String> {
        let mut out: Vec<Edge> = Vec::with_capacity(n as usize);
        for i in 0..n {
            let w = format!("{what} {i}");
            let e = Edge { from: self.var(&w)?, to: self.var(&w)?, weight: self.var(&w)? };
            if e.from >= n_blocks || e.to >= n_blocks || e.from == e.to || e.weight == 0 {
                return Err(format!("{w}: {} -> {} weight {} is not an edge between two of the {n_blocks} blocks", e.from, e.to, e.weight));
            }
            if out.last().is_some_and(|p| (p.from, p.to) >= (e.from, e.to)) {
                return Err(format!("{w}: edges are not sorted by (from, to) without repeats"));
            }
            out.push(e);
        }
        Ok(out)
    }
}

/// The bytes of `p` in the format above. Panics on a profile that breaks the format's rules
/// (a block naming a missing context, an edge naming a missing block): that is a bug.
pub fn to_bytes(p: &AccessProfile) -> Vec<u8> {
    let mut b = Vec::with_capacity(HEADER_FIXED + 16 * p.blocks.len());
    b.extend_from_slice(MAGIC);
    b.extend_from_slice(&VERSION.to_le_bytes());
    b.extend_from_slice(&p.info.stack_depth.to_le_bytes());
    for v in [
        p.info.affinity_distance,
        p.info.accesses,
        p.info.heap_accesses,
        p.blocks.len() as u64,
        p.contexts.len() as u64,
        p.coaccess.len() as u64,
        p.friends.len() as u64,
        p.info.coaccess_dropped,
        p.info.friends_dropped,
        p.info.command.len() as u64,
    ] {
        b.extend_from_slice(&v.to_le_bytes());
    }
    debug_assert_eq!(b.len(), HEADER_FIXED);
    for w in &p.info.command {
        put_str(&mut b, w);
    }
    for c in &p.contexts {
        b.extend_from_slice(&c.key.to_le_bytes());
        put_var(&mut b, c.frames.len() as u64);
        for f in &c.frames {
            put_var(&mut b, f.ip);
            put_str(&mut b, &f.module);
            put_var(&mut b, f.file_offset);
            put_str(&mut b, &f.function);
        }
    }
    let mut prev = 0;
    for (i, k) in p.blocks.iter().enumerate() {
        assert!((k.context as usize) < p.contexts.len(), "block {i} names context {} of {}", k.context, p.contexts.len());
        assert!(k.alloc_at >= prev && k.free_at > k.alloc_at, "block {i}: times out of order");
        put_var(&mut b, k.size);
        put_var(&mut b, u64::from(k.context));
        put_var(&mut b, k.alloc_at - prev);
        put_var(&mut b, if k.free_at == u64::MAX { 0 } else { k.free_at - k.alloc_at });
        put_var(&mut b, k.reads);
        put_var(&mut b, k.writes);
        prev = k.alloc_at;
    }
    for edges in [&p.coaccess, &p.friends] {
        let mut sorted = edges.clone();
        sorted.sort_by_key(|e| (e.from, e.to));
        for e in &sorted {
            assert!(e.from < p.blocks.len() as u64 && e.to < p.blocks.len() as u64 && e.from != e.to && e.weight > 0, "bad edge {e:?}");
            put_var(&mut b, e.from);
            put_var(&mut b, e.to);
            put_var(&mut b, e.weight);
        }
    }
    b.extend_from_slice(END);
    let sum = fnv1a(&b);
    b.extend_from_slice(&sum.to_le_bytes());
    b
}

/// Writes `p` to `path` (through a temporary file beside it, renamed into place: a reader never
/// sees half a profile).
pub fn write(path: impl AsRef<Path>, p: &AccessProfile) -> Result<(), FormatError> {
    let path = path.as_ref();
    let err = |e: std::io::Error| FormatError { path: path.display().to_string(), what: format!("cannot write: {e}") };
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let tmp = path.with_file_name(format!(".{name}.{}.tmp", std::process::id()));
    std::fs::write(&tmp, to_bytes(p)).and_then(|()| std::fs::rename(&tmp, path)).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        err(e)
    })
}

fn put_var(b: &mut Vec<u8>, mut v: u64) {
    loop {
        let byte = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            b.push(byte);
            return;
        }
        b.push(byte | 0x80);
    }
}

fn put_str(b: &mut Vec<u8>, s: &str) {
    put_var(b, s.len() as u64);
    b.extend_from_slice(s.as_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> AccessProfile {
        let frame = |ip, module: &str, off, f: &str| Frame { ip, module: module.into(), file_offset: off, function: f.into() };
        AccessProfile {
            info: ProfileInfo { command: vec!["./prog".into(), "arg".into()], affinity_distance: 128, stack_depth: 2, accesses: 1000, heap_accesses: 400, coaccess_dropped: 3, friends_dropped: 0, ..ProfileInfo::default() },
            contexts: vec![
                Context { key: 0x1234_5679, frames: vec![frame(0x5555_0000_1234, "/bin/prog", 0x1234, "main"), frame(0x7f00_0000_0001, "", 0, "")] },
                Context { key: 7, frames: vec![frame(1, "/lib/x.so", 1 << 40, "f")] },
            ],
            blocks: vec![
                AccessBlock { size: 0, context: 0, alloc_at: 0, free_at: 3, reads: 0, writes: 0, full_context: u32::MAX },
                AccessBlock { size: 1 << 33, context: 1, alloc_at: 1, free_at: u64::MAX, reads: u64::MAX, writes: 5, full_context: u32::MAX },
                AccessBlock { size: 24, context: 0, alloc_at: 2, free_at: 4, reads: 300, writes: 100, full_context: u32::MAX },
            ],
            coaccess: vec![Edge { from: 0, to: 2, weight: 9 }, Edge { from: 2, to: 1, weight: 1 }],
            friends: vec![Edge { from: 1, to: 0, weight: u64::MAX }],
            ..AccessProfile::default()
        }
    }

    #[test]
    fn round_trip() {
        let p = sample();
        assert_eq!(parse(&to_bytes(&p)).unwrap(), p);
        assert_eq!(parse(&to_bytes(&AccessProfile::default())).unwrap(), AccessProfile::default());
    }

    #[test]
    fn every_truncation_and_corruption_is_an_error() {
        let b = to_bytes(&sample());
        for n in 0..b.len() {
            let e = parse(&b[..n]).unwrap_err();
            assert!(e.contains("truncated") || e.contains("magic"), "{n}: {e}");
        }
        for i in 0..b.len() {
            let mut c = b.clone();
            c[i] ^= 0x40;
            assert!(parse(&c).is_err(), "flipping byte {i} went unnoticed");
        }
    }

    #[test]
    fn messages_name_what_is_wrong() {
        let mut b = to_bytes(&sample());
        assert!(parse(b"HLTRACE\0xxxxxxxxxxxxxxxxxxxxxxxx").unwrap_err().contains("bad magic"));
        b[8] = 2;
        assert!(parse(&b).unwrap_err().contains("version 2"));
        // A header whose counts disagree with the records (checksum redone to match).
        let mut bytes = to_bytes(&sample());
        let n = bytes.len();
        bytes[56..64].copy_from_slice(&3u64.to_le_bytes()); // claims 3 co-access edges
        let body = n - 8;
        let sum = fnv1a(&bytes[..body]);
        bytes[body..].copy_from_slice(&sum.to_le_bytes());
        let e = parse(&bytes).unwrap_err();
        assert!(e.contains("edge") || e.contains("truncated"), "{e}");
    }

    #[test]
    fn missing_file_is_named() {
        let e = read("/nonexistent/x.hlaccess").unwrap_err();
        assert!(e.to_string().starts_with("/nonexistent/x.hlaccess: cannot read"), "{e}");
    }
}
