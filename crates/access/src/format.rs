//! The `.hlaccess` file: one access profile, written by the valgrind tool at the program's exit
//! (`tool/hl_main.c`, `write_profile`) and by [`write`] (tests, tools), read by [`read`].
//!
//! Version 2 (version 1 is read too: it ends its fixed header at byte 96 and has none of the
//! parts marked v2; its profiles read with no full contexts). Integers in the fixed header are
//! little-endian; `var` is an unsigned LEB128 varint (7 bits a byte, low first, at most 10
//! bytes); `str` is `var` length + UTF-8 bytes.
//! ```text
//!   0  magic "HLACCESS" (8 bytes)
//!   8  u32 version = 2
//!  12  u32 stack depth (frames per context)
//!  16  u64 affinity distance A (bytes)
//!  24  u64 accesses (loads and stores executed, heap or not)
//!  32  u64 heap accesses (of those, the ones inside a live heap block)
//!  40  u64 B = blocks
//!  48  u64 C = contexts
//!  56  u64 E = co-access edges
//!  64  u64 F = friend edges
//!  72  u64 co-access weight dropped by the memory bound
//!  80  u64 friend weight dropped by the memory bound
//!  88  u64 K = command words
//!  96  u64 max grouped size (bytes; 0 = no context graph)          v2
//! 104  u64 M = context modules                                     v2
//! 112  u64 G = full contexts                                       v2
//! 120  u64 X = context edges                                       v2
//! 128  u64 context weight dropped by the memory bound              v2
//! 136  K × str: the command (program, then its arguments)
//!      M × str: context module basenames, the executable first    v2
//!      C × context: u64 key, var n (≤ 64), n × frame (innermost first):
//!          var ip, str module path ("" = none), var file offset, str function ("" = unknown)
//!      G × full context: u64 key, var n (≤ 64), n × (frame as above, var depth)   v2
//!      B × block, in allocation order: var size, var context index (< C),
//!          var alloc_at − previous block's alloc_at (the first: alloc_at),
//!          var free_at − alloc_at (0 = live at exit), var reads, var writes,
//!          var full context index (< G; present only when G > 0)     v2
//!      E × edge, sorted by (from, to), no repeats: var from, var to, var weight (≥ 1)
//!      F × edge, the same
//!      X × context edge, the same, with from ≤ to < G              v2
//!      "HLA-END\0" (8 bytes)
//!      u64 FNV-1a 64 of every byte before it
//! ```
//! Co-access and friend edge ends are block indices (< B), `from ≠ to`. A full context's key is
//! `heaplab_trace::context`'s key of its frames; its frames have module paths, and depths
//! strictly increasing below 64 (each frame lies deeper in the raw stack than the one before).
//! Readers reject anything else with a message naming the file and what is wrong: bad magic,
//! an unknown version, truncation, a checksum mismatch, indices out of range, a key that does
//! not match its frames, trailing bytes.

use crate::codes::{END, HEADER_FIXED, HEADER_FIXED_V1, MAGIC, VERSION};
use crate::{AccessBlock, AccessProfile, Context, Edge, Frame, FullContext, ProfileInfo};
use heaplab_trace::context::{basename, context_key, fnv1a, frame_key};
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

/// The most frames a context or full context has (the tool's stack walk).
const MAX_FRAMES: u64 = 64;

/// Parses a profile from its bytes (the error says what is wrong, without the file name).
pub fn parse(bytes: &[u8]) -> Result<AccessProfile, String> {
    if bytes.len() < 8 || &bytes[..8] != MAGIC {
        return Err("not an access profile (bad magic; expected a .hlaccess file from `heaplab access`)".into());
    }
    if bytes.len() < 12 {
        return Err(format!("truncated: {} bytes, shorter than the header", bytes.len()));
    }
    let version = u32::from_le_bytes(bytes[8..12].try_into().unwrap());
    let fixed = match version {
        1 => HEADER_FIXED_V1,
        VERSION => HEADER_FIXED,
        _ => return Err(format!("format version {version}; this heaplab reads versions 1 and {VERSION}")),
    };
    if bytes.len() < fixed {
        return Err(format!("truncated: {} bytes, shorter than the {fixed}-byte header", bytes.len()));
    }
    if bytes.len() < fixed + 16 {
        return Err(format!("truncated: {} bytes, no room for the end marker and checksum", bytes.len()));
    }
    let body_end = bytes.len() - 8;
    let sum = u64::from_le_bytes(bytes[body_end..].try_into().unwrap());
    if &bytes[body_end - 8..body_end] != END || sum != fnv1a(&bytes[..body_end]) {
        return Err("truncated or corrupt: the end marker or checksum does not match (was the profiled run cut short?)".into());
    }
    let u64_at = |o: usize| u64::from_le_bytes(bytes[o..o + 8].try_into().unwrap());
    let v2 = version >= 2;
    let v2_at = |o: usize| if v2 { u64_at(o) } else { 0 };
    let mut info = ProfileInfo {
        stack_depth: u32::from_le_bytes(bytes[12..16].try_into().unwrap()),
        affinity_distance: u64_at(16),
        accesses: u64_at(24),
        heap_accesses: u64_at(32),
        coaccess_dropped: u64_at(72),
        friends_dropped: u64_at(80),
        max_grouped_size: v2_at(96),
        context_affinity_dropped: v2_at(128),
        ..ProfileInfo::default()
    };
    let (n_blocks, n_contexts, n_coaccess, n_friends, n_words) = (u64_at(40), u64_at(48), u64_at(56), u64_at(64), u64_at(88));
    let (n_modules, n_full, n_cedges) = (v2_at(104), v2_at(112), v2_at(120));
    let mut r = Cursor { bytes: &bytes[..body_end - 8], at: fixed };
    // Every record takes at least one byte: counts beyond the bytes left are corrupt, and
    // checking first keeps a bad count from reserving absurd memory.
    for (n, what) in [
        (n_words, "command words"),
        (n_modules, "context modules"),
        (n_contexts, "contexts"),
        (n_full, "full contexts"),
        (n_blocks, "blocks"),
        (n_coaccess, "co-access edges"),
        (n_friends, "friend edges"),
        (n_cedges, "context edges"),
    ] {
        if n > r.left() as u64 {
            return Err(format!("header says {n} {what}, more than the file can hold"));
        }
    }
    if n_full > u64::from(u32::MAX) {
        return Err(format!("header says {n_full} full contexts, more than a block can name"));
    }
    for _ in 0..n_words {
        info.command.push(r.str("command word")?);
    }
    for i in 0..n_modules {
        info.context_modules.push(r.str(&format!("context module {i}"))?);
    }
    let mut contexts = Vec::with_capacity(n_contexts as usize);
    for i in 0..n_contexts {
        let what = format!("context {i}");
        let key = r.u64(&what)?;
        let n = r.frame_count(&what)?;
        let mut frames = Vec::with_capacity(n as usize);
        for _ in 0..n {
            frames.push(r.frame(&what)?);
        }
        contexts.push(Context { key, frames });
    }
    let mut full_contexts = Vec::with_capacity(n_full as usize);
    let mut keys = std::collections::HashSet::new();
    for i in 0..n_full {
        let what = format!("full context {i}");
        let key = r.u64(&what)?;
        let n = r.frame_count(&what)?;
        let (mut frames, mut depths) = (Vec::with_capacity(n as usize), Vec::with_capacity(n as usize));
        for k in 0..n {
            let f = r.frame(&what)?;
            let depth = r.var(&what)?;
            if f.module.is_empty() {
                return Err(format!("{what}: frame {k} lies in no module (full contexts keep frames of the context modules only)"));
            }
            if depth >= MAX_FRAMES || depths.last().is_some_and(|&d| u64::from(d) >= depth) {
                return Err(format!("{what}: frame {k} at depth {depth}: depths must increase frame by frame and stay below {MAX_FRAMES}"));
            }
            frames.push(f);
            depths.push(depth as u32);
        }
        if key != full_key(&frames) {
            return Err(format!("{what}: key {key:016x} does not match its frames"));
        }
        if !keys.insert(key) {
            return Err(format!("{what}: key {key:016x} repeats an earlier full context"));
        }
        full_contexts.push(FullContext { key, frames, depths });
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
        let (reads, writes) = (r.var(&what)?, r.var(&what)?);
        let full_context = if n_full > 0 {
            let f = r.var(&what)?;
            if f >= n_full {
                return Err(format!("block {i}: full context {f} out of range ({n_full} full contexts)"));
            }
            f as u32
        } else {
            u32::MAX
        };
        blocks.push(AccessBlock { size, context: context as u32, alloc_at: clock, free_at, reads, writes, full_context });
    }
    let coaccess = r.edges(n_coaccess, "co-access edge", |e| e.from < n_blocks && e.to < n_blocks && e.from != e.to, &format!("an edge between two of the {n_blocks} blocks"))?;
    let friends = r.edges(n_friends, "friend edge", |e| e.from < n_blocks && e.to < n_blocks && e.from != e.to, &format!("an edge between two of the {n_blocks} blocks"))?;
    let context_affinity = r.edges(n_cedges, "context edge", |e| e.from <= e.to && e.to < n_full, &format!("an edge from <= to between the {n_full} full contexts"))?;
    if r.left() != 0 {
        return Err(format!("{} unexpected bytes after the last edges", r.left()));
    }
    Ok(AccessProfile { info, blocks, contexts, coaccess, friends, full_contexts, context_affinity })
}

/// The stable key of a full context's frames (`heaplab_trace::context`'s rule).
pub fn full_key(frames: &[Frame]) -> u64 {
    context_key(frames.iter().map(|f| if f.module.is_empty() { f.ip } else { frame_key(basename(&f.module), f.file_offset) }))
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

    fn frame_count(&mut self, what: &str) -> Result<u64, String> {
        let n = self.var(what)?;
        if n > MAX_FRAMES {
            return Err(format!("{what} has {n} frames (at most {MAX_FRAMES})"));
        }
        Ok(n)
    }

    fn frame(&mut self, what: &str) -> Result<Frame, String> {
        Ok(Frame { ip: self.var(what)?, module: self.str(what)?, file_offset: self.var(what)?, function: self.str(what)? })
    }

    /// `n` edges, sorted without repeats, each weighing at least 1 and passing `ok` (which
    /// `should` describes).
    fn edges(&mut self, n: u64, what: &str, ok: impl Fn(&Edge) -> bool, should: &str) -> Result<Vec<Edge>, String> {
        let mut out: Vec<Edge> = Vec::with_capacity(n as usize);
        for i in 0..n {
            let w = format!("{what} {i}");
            let e = Edge { from: self.var(&w)?, to: self.var(&w)?, weight: self.var(&w)? };
            if !ok(&e) || e.weight == 0 {
                return Err(format!("{w}: {} -> {} weight {} is not {should}, of weight 1 or more", e.from, e.to, e.weight));
            }
            if out.last().is_some_and(|p| (p.from, p.to) >= (e.from, e.to)) {
                return Err(format!("{w}: edges are not sorted by (from, to) without repeats"));
            }
            out.push(e);
        }
        Ok(out)
    }
}

/// The bytes of `p` in the format above (always the current version). Each block's
/// `full_context` is written only when the profile has full contexts. Panics on a profile that
/// breaks the format's rules (a block naming a missing context, an edge naming a missing block,
/// a full context whose key or depths do not fit its frames): that is a bug.
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
        p.info.max_grouped_size,
        p.info.context_modules.len() as u64,
        p.full_contexts.len() as u64,
        p.context_affinity.len() as u64,
        p.info.context_affinity_dropped,
    ] {
        b.extend_from_slice(&v.to_le_bytes());
    }
    debug_assert_eq!(b.len(), HEADER_FIXED);
    for w in p.info.command.iter().chain(&p.info.context_modules) {
        put_str(&mut b, w);
    }
    let put_frame = |b: &mut Vec<u8>, f: &Frame| {
        put_var(b, f.ip);
        put_str(b, &f.module);
        put_var(b, f.file_offset);
        put_str(b, &f.function);
    };
    for c in &p.contexts {
        b.extend_from_slice(&c.key.to_le_bytes());
        put_var(&mut b, c.frames.len() as u64);
        for f in &c.frames {
            put_frame(&mut b, f);
        }
    }
    for (i, c) in p.full_contexts.iter().enumerate() {
        assert!(c.frames.len() == c.depths.len() && c.key == full_key(&c.frames), "full context {i}: key or depths do not fit its frames");
        b.extend_from_slice(&c.key.to_le_bytes());
        put_var(&mut b, c.frames.len() as u64);
        for (f, &d) in c.frames.iter().zip(&c.depths) {
            put_frame(&mut b, f);
            put_var(&mut b, u64::from(d));
        }
    }
    let n_full = p.full_contexts.len();
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
        if n_full > 0 {
            assert!((k.full_context as usize) < n_full, "block {i} names full context {} of {n_full}", k.full_context);
            put_var(&mut b, u64::from(k.full_context));
        }
        prev = k.alloc_at;
    }
    let n_blocks = p.blocks.len() as u64;
    for (edges, undirected) in [(&p.coaccess, false), (&p.friends, false), (&p.context_affinity, true)] {
        let mut sorted = edges.clone();
        sorted.sort_by_key(|e| (e.from, e.to));
        for (j, e) in sorted.iter().enumerate() {
            let fits = if undirected { e.from <= e.to && e.to < n_full as u64 } else { e.from < n_blocks && e.to < n_blocks && e.from != e.to };
            assert!(fits && e.weight > 0 && (j == 0 || (sorted[j - 1].from, sorted[j - 1].to) != (e.from, e.to)), "bad edge {e:?}");
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

    fn frame(ip: u64, module: &str, off: u64, f: &str) -> Frame {
        Frame { ip, module: module.into(), file_offset: off, function: f.into() }
    }

    fn full(frames: Vec<Frame>, depths: Vec<u32>) -> FullContext {
        FullContext { key: full_key(&frames), frames, depths }
    }

    fn sample() -> AccessProfile {
        AccessProfile {
            info: ProfileInfo {
                command: vec!["./prog".into(), "arg".into()],
                affinity_distance: 128,
                stack_depth: 2,
                accesses: 1000,
                heap_accesses: 400,
                coaccess_dropped: 3,
                friends_dropped: 0,
                max_grouped_size: 4096,
                context_modules: vec!["prog".into(), "libx.so".into()],
                context_affinity_dropped: 2,
            },
            contexts: vec![
                Context { key: 0x1234_5679, frames: vec![frame(0x5555_0000_1234, "/bin/prog", 0x1234, "main"), frame(0x7f00_0000_0001, "", 0, "")] },
                Context { key: 7, frames: vec![frame(1, "/lib/x.so", 1 << 40, "f")] },
            ],
            full_contexts: vec![
                full(vec![frame(0x5555_0000_1234, "/bin/prog", 0x1234, "main")], vec![0]),
                full(vec![frame(0x5555_0000_2000, "/bin/prog", 0x2000, "g"), frame(0x7f00_0000_0001, "/lib/libx.so", 0x10, "")], vec![1, 63]),
                full(vec![], vec![]),
            ],
            blocks: vec![
                AccessBlock { size: 0, context: 0, alloc_at: 0, free_at: 3, reads: 0, writes: 0, full_context: 0 },
                AccessBlock { size: 1 << 33, context: 1, alloc_at: 1, free_at: u64::MAX, reads: u64::MAX, writes: 5, full_context: 2 },
                AccessBlock { size: 24, context: 0, alloc_at: 2, free_at: 4, reads: 300, writes: 100, full_context: 1 },
            ],
            coaccess: vec![Edge { from: 0, to: 2, weight: 9 }, Edge { from: 2, to: 1, weight: 1 }],
            friends: vec![Edge { from: 1, to: 0, weight: u64::MAX }],
            context_affinity: vec![Edge { from: 0, to: 0, weight: 4 }, Edge { from: 0, to: 1, weight: 70 }, Edge { from: 1, to: 2, weight: 1 }],
        }
    }

    /// The same profile without what version 2 added, in version 1's bytes.
    fn v1_bytes(p: &AccessProfile) -> (AccessProfile, Vec<u8>) {
        let mut p = p.clone();
        p.info.max_grouped_size = 0;
        p.info.context_modules.clear();
        p.info.context_affinity_dropped = 0;
        p.full_contexts.clear();
        p.context_affinity.clear();
        for b in &mut p.blocks {
            b.full_context = u32::MAX;
        }
        // With no modules, full contexts or context edges, version 2's body is version 1's.
        let v2 = to_bytes(&p);
        let mut b = v2[..HEADER_FIXED_V1].to_vec();
        b[8..12].copy_from_slice(&1u32.to_le_bytes());
        b.extend_from_slice(&v2[HEADER_FIXED..v2.len() - 8]);
        (p, reseal(b))
    }

    /// `b` (without a checksum, or with a stale one replaced) with its checksum.
    fn reseal(mut b: Vec<u8>) -> Vec<u8> {
        if b.ends_with(END) {
            let sum = fnv1a(&b);
            b.extend_from_slice(&sum.to_le_bytes());
        } else {
            let body = b.len() - 8;
            let sum = fnv1a(&b[..body]);
            b[body..].copy_from_slice(&sum.to_le_bytes());
        }
        b
    }

    #[test]
    fn round_trip() {
        let p = sample();
        assert_eq!(parse(&to_bytes(&p)).unwrap(), p);
        assert_eq!(parse(&to_bytes(&AccessProfile::default())).unwrap(), AccessProfile::default());
    }

    #[test]
    fn version_1_still_reads() {
        let (p, b) = v1_bytes(&sample());
        assert_eq!(u32::from_le_bytes(b[8..12].try_into().unwrap()), 1);
        let q = parse(&b).unwrap();
        assert_eq!(q, p);
        assert!(q.full_contexts.is_empty() && q.context_affinity.is_empty() && q.info.context_modules.is_empty());
        assert!(q.blocks.iter().all(|b| b.full_context == u32::MAX));
        for n in 0..b.len() {
            assert!(parse(&b[..n]).is_err(), "version 1 cut at {n} went unnoticed");
        }
    }

    #[test]
    fn every_truncation_and_corruption_is_an_error() {
        for b in [to_bytes(&sample()), v1_bytes(&sample()).1] {
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
    }

    #[test]
    fn messages_name_what_is_wrong() {
        let mut b = to_bytes(&sample());
        assert!(parse(b"HLTRACE\0xxxxxxxxxxxxxxxxxxxxxxxx").unwrap_err().contains("bad magic"));
        b[8] = 3;
        assert!(parse(&b).unwrap_err().contains("version 3"));
        // A header whose counts disagree with the records (checksum redone to match).
        for (at, n) in [(56, 3u64), (112, 4), (120, 9), (104, 1)] {
            let mut bytes = to_bytes(&sample());
            bytes[at..at + 8].copy_from_slice(&n.to_le_bytes());
            let e = parse(&reseal(bytes)).unwrap_err();
            assert!(!e.contains("checksum"), "header field at {at}: {e}");
        }
    }

    #[test]
    fn bad_full_contexts_and_context_edges_are_named() {
        let p = sample();
        // A key that does not match its frames.
        let mut b = to_bytes(&p);
        let key = p.full_contexts[1].key.to_le_bytes();
        let at = b.windows(8).position(|w| w == key).unwrap();
        b[at] ^= 1;
        let e = parse(&reseal(b)).unwrap_err();
        assert!(e.contains("full context 1") && e.contains("does not match"), "{e}");
        // Two full contexts with one key.
        let mut q = p.clone();
        q.full_contexts[2] = q.full_contexts[0].clone();
        let e = parse(&to_bytes(&q)).unwrap_err();
        assert!(e.contains("full context 2") && e.contains("repeats"), "{e}");
        // Depths that do not increase, or reach 64.
        for depths in [vec![5, 5], vec![1, 64]] {
            let mut q = p.clone();
            q.full_contexts[1].depths = depths.clone();
            let e = parse(&to_bytes(&q)).unwrap_err();
            assert!(e.contains("full context 1") && e.contains("depth"), "{depths:?}: {e}");
        }
        // A frame in no module.
        let mut q = p.clone();
        q.full_contexts[0] = full(vec![frame(9, "", 0, "")], vec![0]);
        assert!(parse(&to_bytes(&q)).unwrap_err().contains("no module"));
        // The last bytes before the end marker: the last block's full context, then one
        // context edge (from, to, weight), all single-byte varints here.
        let mut q = p.clone();
        q.coaccess.clear();
        q.friends.clear();
        q.context_affinity = vec![Edge { from: 1, to: 2, weight: 5 }];
        let good = to_bytes(&q);
        let edge = good.len() - 16 - 3;
        let mut b = good.clone();
        b[edge - 1] = 3;
        let e = parse(&reseal(b)).unwrap_err();
        assert!(e.contains("block 2: full context 3 out of range"), "{e}");
        for (patch, what) in [([2u8, 1, 5], "from <= to"), ([1, 3, 5], "from <= to"), ([1, 2, 0], "weight 0")] {
            let mut b = good.clone();
            b[edge..edge + 3].copy_from_slice(&patch);
            let e = parse(&reseal(b)).unwrap_err();
            assert!(e.contains("context edge 0") && e.contains(what), "{patch:?}: {e}");
        }
        // Unsorted or repeated context edges.
        let mut q = p.clone();
        q.coaccess.clear();
        q.friends.clear();
        q.context_affinity = vec![Edge { from: 0, to: 1, weight: 5 }, Edge { from: 1, to: 1, weight: 5 }];
        let mut b = to_bytes(&q);
        let n = b.len() - 16;
        b[n - 6..n].copy_from_slice(&[1, 1, 5, 0, 1, 5]);
        let e = parse(&reseal(b)).unwrap_err();
        assert!(e.contains("context edge 1") && e.contains("sorted"), "{e}");
    }

    #[test]
    fn missing_file_is_named() {
        let e = read("/nonexistent/x.hlaccess").unwrap_err();
        assert!(e.to_string().starts_with("/nonexistent/x.hlaccess: cannot read"), "{e}");
    }
}
