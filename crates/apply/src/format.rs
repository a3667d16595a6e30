//! The `.hllayout` file format (version 1) and the rules of a valid layout. The runtime library
//! reads the same bytes in C; the layout below is the contract (all integers little-endian):
//!
//! ```text
//!  0  magic "HLLAYOUT" (8 bytes)
//!  8  u32 version = 1
//! 12  u32 flags: bit 0 = entries are keyed by context (else one context, key 0, global ordinals)
//! 16  u32 stack depth (frames per context key; 0 without contexts)
//! 20  u32 S = strategy name length (1..=64 bytes, UTF-8)
//! 24  u64 region size R in bytes (≥ end of every planned slot)
//! 32  u64 C = number of contexts (≥ 1 when N > 0)
//! 40  u64 N = number of entries
//! 48  u64 region alignment (a power of two, ≥ 4096)
//! 56  u64 max planned entries live at once (sizes the runtime's live table)
//! 64  strategy name, S bytes, zero-padded to a multiple of 8
//!     C context records, 24 bytes each: u64 key, u64 first entry, u64 entry count
//!       (sorted by key, keys unique, ranges contiguous and covering [0, N) in order)
//!     N entry records, 16 bytes each: u64 size (requested bytes), u64 offset
//!       (u64::MAX = expected but not planned: fall back)
//!     N info records, 32 bytes each: u64 block id in the trace, u64 lower, u64 upper
//!       (lifetime [lower, upper) on the trace's clock), u64 accesses
//!     u64 FNV-1a 64 of every byte before it (integrity check)
//! ```
//!
//! A planned entry occupies `[offset, offset + slot(size))`. A layout is valid when the fields
//! above hold and no two planned entries whose lifetimes intersect overlap in the region
//! (decided by `heaplab_sweep::validate` over the slots). [`write`] refuses an invalid layout
//! (that is a bug of whoever built it); [`read`] refuses a damaged or invalid file, naming it.

use crate::{slot, Entry, Layout, LayoutContext, GRANULE};
use heaplab_model::{Buffer, InputError, InputErrorKind};
use heaplab_trace::context::fnv1a;

/// The file's first 8 bytes.
pub const MAGIC: &[u8; 8] = b"HLLAYOUT";
/// The version this module writes and reads.
pub const VERSION: u32 = 1;
/// Flag bit: entries are keyed by context.
pub const FLAG_CONTEXTS: u32 = 1;
/// Longest strategy name in bytes.
pub const MAX_STRATEGY: usize = 64;
/// Smallest region alignment (a page).
pub const MIN_REGION_ALIGN: u64 = 4096;
/// The offset of an entry that is expected but not planned.
pub const UNPLANNED: u64 = u64::MAX;

const HEADER: usize = 64;
const CONTEXT_RECORD: u64 = 24;
const ENTRY_RECORD: u64 = 16;
const INFO_RECORD: u64 = 32;

/// Why a layout could not be written (the format's rules, or the file).
pub use heaplab_model::files::WriteError;

/// The planned entries as buffers over their slots, with the entries they came from
/// (context index, entry index), for the validator and for pictures.
pub fn planned_buffers(layout: &Layout) -> (Vec<Buffer>, Vec<u64>, Vec<(usize, usize)>) {
    let mut buffers = Vec::new();
    let mut offsets = Vec::new();
    let mut which = Vec::new();
    for (c, ctx) in layout.contexts.iter().enumerate() {
        for (i, e) in ctx.entries.iter().enumerate() {
            if let Some(o) = e.offset {
                buffers.push(Buffer::new(e.block, e.lower, e.upper, slot(e.size)));
                offsets.push(o);
                which.push((c, i));
            }
        }
    }
    (buffers, offsets, which)
}

/// Most planned entries live at once.
pub fn max_planned_live(layout: &Layout) -> u64 {
    heaplab_sweep::max_live(&planned_buffers(layout).0) as u64
}

/// Checks every rule of a valid layout; the error says which rule and where.
pub fn validate(layout: &Layout) -> Result<(), String> {
    let name = layout.strategy.len();
    if name == 0 || name > MAX_STRATEGY {
        return Err(format!("strategy name of {name} bytes (1 to {MAX_STRATEGY})"));
    }
    if !layout.region_align.is_power_of_two() || layout.region_align < MIN_REGION_ALIGN {
        return Err(format!("region alignment {} is not a power of two ≥ {MIN_REGION_ALIGN}", layout.region_align));
    }
    let keyed = layout.stack_depth > 0;
    let n: usize = layout.contexts.iter().map(|c| c.entries.len()).sum();
    if n > 0 && layout.contexts.is_empty() {
        return Err("entries without a context".into());
    }
    if !keyed {
        if layout.contexts.len() > 1 {
            return Err(format!("{} contexts in a layout without contexts (stack depth 0)", layout.contexts.len()));
        }
        if let Some(c) = layout.contexts.first().filter(|c| c.key != 0) {
            return Err(format!("context key {:#x} in a layout without contexts (must be 0)", c.key));
        }
    } else {
        for (i, w) in layout.contexts.windows(2).enumerate() {
            if w[0].key >= w[1].key {
                return Err(format!("context keys not sorted and unique: {:#x} then {:#x} (contexts {i} and {})", w[0].key, w[1].key, i + 1));
            }
        }
        if let Some(c) = layout.contexts.first().filter(|c| c.key == 0) {
            return Err(format!("context key {:#x} in a layout with contexts (0 means none)", c.key));
        }
    }
    for ctx in &layout.contexts {
        for (i, e) in ctx.entries.iter().enumerate() {
            let at = || format!("context {:#x} entry {i} (block {})", ctx.key, e.block);
            if e.lower >= e.upper {
                return Err(format!("{}: empty lifetime [{}, {})", at(), e.lower, e.upper));
            }
            if let Some(o) = e.offset {
                if o == UNPLANNED {
                    return Err(format!("{}: offset {o} is reserved for unplanned entries", at()));
                }
                if o % GRANULE != 0 {
                    return Err(format!("{}: offset {o} is not a multiple of {GRANULE}", at()));
                }
                match o.checked_add(slot(e.size)) {
                    Some(end) if end <= layout.region => {}
                    _ => return Err(format!("{}: slot [{o}, +{}) ends beyond the region of {} bytes", at(), slot(e.size), layout.region)),
                }
            }
        }
    }
    let (buffers, offsets, _) = planned_buffers(layout);
    let v = heaplab_sweep::validate(&buffers, &offsets);
    if !v.is_valid() {
        return Err(format!("planned entries overlap: {}", v.describe(&buffers, &offsets)));
    }
    Ok(())
}

/// The file's bytes for a valid layout.
pub fn to_bytes(layout: &Layout) -> Result<Vec<u8>, WriteError> {
    validate(layout).map_err(|m| WriteError::Invalid("an invalid layout", m))?;
    let n: u64 = layout.contexts.iter().map(|c| c.entries.len() as u64).sum();
    let name = layout.strategy.as_bytes();
    let padded = name.len().div_ceil(8) * 8;
    let mut b = Vec::with_capacity(HEADER + padded + (layout.contexts.len() as u64 * CONTEXT_RECORD + n * (ENTRY_RECORD + INFO_RECORD) + 8) as usize);
    b.extend_from_slice(MAGIC);
    let flags = if layout.stack_depth > 0 { FLAG_CONTEXTS } else { 0 };
    for v in [VERSION, flags, layout.stack_depth, name.len() as u32] {
        b.extend_from_slice(&v.to_le_bytes());
    }
    for v in [layout.region, layout.contexts.len() as u64, n, layout.region_align, max_planned_live(layout)] {
        b.extend_from_slice(&v.to_le_bytes());
    }
    b.extend_from_slice(name);
    b.resize(HEADER + padded, 0);
    let mut first = 0u64;
    for c in &layout.contexts {
        for v in [c.key, first, c.entries.len() as u64] {
            b.extend_from_slice(&v.to_le_bytes());
        }
        first += c.entries.len() as u64;
    }
    let entries = || layout.contexts.iter().flat_map(|c| c.entries.iter());
    for e in entries() {
        for v in [e.size, e.offset.unwrap_or(UNPLANNED)] {
            b.extend_from_slice(&v.to_le_bytes());
        }
    }
    for e in entries() {
        for v in [e.block, e.lower, e.upper, e.accesses] {
            b.extend_from_slice(&v.to_le_bytes());
        }
    }
    let sum = fnv1a(&b);
    b.extend_from_slice(&sum.to_le_bytes());
    Ok(b)
}

/// Writes a valid layout to `path` atomically (nothing is written when it is invalid).
pub fn write(path: &str, layout: &Layout) -> Result<(), WriteError> {
    let bytes = to_bytes(layout)?;
    heaplab_model::files::write_bytes(path, &bytes)
}

/// Reads and validates the layout in `path`.
pub fn read(path: &str) -> Result<Layout, InputError> {
    from_bytes(path, &heaplab_model::files::read_bytes(path)?)
}

/// Little-endian cursor over a checked byte range.
struct Cursor<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Cursor<'_> {
    fn u32(&mut self) -> u32 {
        let v = u32::from_le_bytes(self.bytes[self.at..self.at + 4].try_into().unwrap());
        self.at += 4;
        v
    }
    fn u64(&mut self) -> u64 {
        let v = u64::from_le_bytes(self.bytes[self.at..self.at + 8].try_into().unwrap());
        self.at += 8;
        v
    }
}

/// Parses and validates a layout from the bytes of `file` (the name is for messages).
pub fn from_bytes(file: &str, bytes: &[u8]) -> Result<Layout, InputError> {
    let bad = |kind: InputErrorKind, m: String| InputError::file(file, kind, m);
    let format = |m: String| bad(InputErrorKind::Format, m);
    if bytes.len() < MAGIC.len() || &bytes[..MAGIC.len()] != MAGIC {
        return Err(format("not a heaplab layout (no HLLAYOUT magic)".into()));
    }
    if bytes.len() < HEADER {
        return Err(format(format!("truncated: {} bytes, shorter than the {HEADER}-byte header", bytes.len())));
    }
    let mut c = Cursor { bytes, at: MAGIC.len() };
    let version = c.u32();
    if version != VERSION {
        return Err(format(format!("layout format version {version}, this heaplab reads version {VERSION}")));
    }
    let (flags, stack_depth, name_len) = (c.u32(), c.u32(), c.u32() as usize);
    let (region, nc, n, region_align, max_live) = (c.u64(), c.u64(), c.u64(), c.u64(), c.u64());
    if flags & !FLAG_CONTEXTS != 0 {
        return Err(format(format!("unknown flags {flags:#x}")));
    }
    if name_len == 0 || name_len > MAX_STRATEGY {
        return Err(format(format!("strategy name of {name_len} bytes (1 to {MAX_STRATEGY})")));
    }
    let expected = (|| {
        let tables = nc.checked_mul(CONTEXT_RECORD)?.checked_add(n.checked_mul(ENTRY_RECORD + INFO_RECORD)?)?;
        tables.checked_add((HEADER + name_len.div_ceil(8) * 8 + 8) as u64)
    })();
    match expected {
        Some(len) if len == bytes.len() as u64 => {}
        Some(len) if len > bytes.len() as u64 => {
            return Err(format(format!("truncated: {} bytes, the header ({nc} contexts, {n} entries) needs {len}", bytes.len())))
        }
        Some(len) => return Err(format(format!("{} bytes of trailing data after the {len} the header describes", bytes.len() as u64 - len))),
        None => return Err(format(format!("impossible counts: {nc} contexts, {n} entries"))),
    }
    let body = bytes.len() - 8;
    let stored = u64::from_le_bytes(bytes[body..].try_into().unwrap());
    if fnv1a(&bytes[..body]) != stored {
        return Err(format("checksum mismatch: the file is damaged".into()));
    }
    let consistency = |m: String| bad(InputErrorKind::Consistency, m);
    let strategy = std::str::from_utf8(&bytes[HEADER..HEADER + name_len])
        .map_err(|_| format("strategy name is not UTF-8".into()))?
        .to_string();
    if (flags & FLAG_CONTEXTS != 0) != (stack_depth > 0) {
        return Err(consistency(format!("flags {flags:#x} disagree with stack depth {stack_depth}")));
    }
    if n > 0 && nc == 0 {
        return Err(consistency(format!("{n} entries but no context")));
    }
    c.at = HEADER + name_len.div_ceil(8) * 8;
    let mut contexts = Vec::with_capacity(nc as usize);
    let mut next = 0u64;
    for i in 0..nc {
        let (key, first, count) = (c.u64(), c.u64(), c.u64());
        if first != next {
            return Err(consistency(format!("context {i} (key {key:#x}) starts at entry {first}, expected {next}")));
        }
        next = match first.checked_add(count) {
            Some(e) if e <= n => e,
            _ => return Err(consistency(format!("context {i} (key {key:#x}) covers entries [{first}, +{count}) beyond the {n} entries"))),
        };
        contexts.push(LayoutContext { key, entries: Vec::with_capacity(count as usize) });
    }
    if next != n {
        return Err(consistency(format!("contexts cover {next} of the {n} entries")));
    }
    let mut entries = Vec::with_capacity(n as usize);
    for _ in 0..n {
        let (size, offset) = (c.u64(), c.u64());
        entries.push(Entry { size, offset: (offset != UNPLANNED).then_some(offset), ..Entry::default() });
    }
    for e in &mut entries {
        (e.block, e.lower, e.upper, e.accesses) = (c.u64(), c.u64(), c.u64(), c.u64());
    }
    let mut entries = entries.into_iter();
    for ctx in &mut contexts {
        let count = ctx.entries.capacity();
        ctx.entries.extend(entries.by_ref().take(count));
    }
    let layout = Layout { strategy, stack_depth, region, region_align, contexts };
    validate(&layout).map_err(|m| consistency(format!("invalid layout: {m}")))?;
    let live = max_planned_live(&layout);
    if max_live < live {
        return Err(consistency(format!("header says at most {max_live} planned entries live at once, the entries have {live}")));
    }
    Ok(layout)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(block: u64, lower: u64, upper: u64, size: u64, offset: Option<u64>) -> Entry {
        Entry { size, offset, block, lower, upper, accesses: block * 3 }
    }

    fn sample(keyed: bool) -> Layout {
        let a = vec![entry(0, 0, 4, 24, Some(0)), entry(2, 1, 3, 0, Some(32)), entry(3, 4, 9, 100, Some(0))];
        let b = vec![entry(1, 0, 9, 7, None), entry(4, 5, 9, 16, Some(112))];
        let contexts = if keyed {
            vec![LayoutContext { key: 0x11, entries: a }, LayoutContext { key: 0x2f, entries: b }]
        } else {
            let mut all: Vec<Entry> = a.into_iter().chain(b).collect();
            all.sort_by_key(|e| e.block);
            vec![LayoutContext { key: 0, entries: all }]
        };
        Layout { strategy: "plan".into(), stack_depth: if keyed { 4 } else { 0 }, region: 128, region_align: 4096, contexts }
    }

    fn reread(bytes: &[u8]) -> Result<Layout, String> {
        from_bytes("x.hllayout", bytes).map_err(|e| e.to_string())
    }

    /// Rewrites the checksum so that a test reaches the checks behind it.
    fn reseal(b: &mut [u8]) {
        let body = b.len() - 8;
        let sum = fnv1a(&b[..body]);
        b[body..].copy_from_slice(&sum.to_le_bytes());
    }

    #[test]
    fn round_trips_with_and_without_contexts() {
        for keyed in [false, true] {
            let l = sample(keyed);
            let bytes = to_bytes(&l).unwrap();
            assert_eq!(reread(&bytes).unwrap(), l);
            assert_eq!(&bytes[..8], MAGIC);
            // header: flags, depth, N, max live
            assert_eq!(u32::from_le_bytes(bytes[12..16].try_into().unwrap()), keyed as u32);
            assert_eq!(u64::from_le_bytes(bytes[40..48].try_into().unwrap()), 5);
            assert_eq!(u64::from_le_bytes(bytes[56..64].try_into().unwrap()), 2);
            assert_eq!(bytes.len(), 64 + 8 + l.contexts.len() * 24 + 5 * 48 + 8);
        }
        let empty = Layout { strategy: "simple".into(), region_align: 4096, ..Layout::default() };
        assert_eq!(reread(&to_bytes(&empty).unwrap()).unwrap(), empty);
        let long = Layout { strategy: "s".repeat(64), ..sample(false) };
        assert_eq!(reread(&to_bytes(&long).unwrap()).unwrap(), long);
    }

    #[test]
    fn writes_files_atomically_and_refuses_invalid_layouts() {
        let dir = std::env::temp_dir().join(format!("heaplab-format-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("a.hllayout");
        let path = path.to_str().unwrap();
        write(path, &sample(true)).unwrap();
        assert_eq!(read(path).unwrap(), sample(true));
        let mut bad = sample(true);
        bad.contexts[1].entries[1].offset = Some(16); // overlaps block 3 during [5, 9)
        let e = write(&format!("{path}.bad"), &bad).unwrap_err().to_string();
        assert!(e.contains("overlap") && e.contains("buffers 3 and 4"), "{e}");
        assert!(!dir.join("a.hllayout.bad").exists());
        let e = read(&format!("{path}.missing")).unwrap_err().to_string();
        assert!(e.contains("a.hllayout.missing") && e.contains("cannot read"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn validation_rules() {
        let check = |f: &dyn Fn(&mut Layout)| {
            let mut l = sample(true);
            f(&mut l);
            validate(&l).unwrap_err()
        };
        assert!(check(&|l| l.strategy.clear()).contains("strategy name"));
        assert!(check(&|l| l.strategy = "x".repeat(65)).contains("strategy name"));
        assert!(check(&|l| l.region_align = 2048).contains("alignment"));
        assert!(check(&|l| l.region_align = 4096 * 3).contains("alignment"));
        assert!(check(&|l| l.contexts.swap(0, 1)).contains("sorted"));
        assert!(check(&|l| l.contexts[1].key = 0x11).contains("sorted"));
        assert!(check(&|l| l.contexts[0].key = 0).contains("0 means none"));
        assert!(check(&|l| l.stack_depth = 0).contains("without contexts"));
        assert!(check(&|l| l.contexts[0].entries[0].offset = Some(8)).contains("multiple of 16"));
        assert!(check(&|l| l.contexts[0].entries[0].offset = Some(UNPLANNED)).contains("reserved"));
        assert!(check(&|l| l.contexts[0].entries[2].offset = Some(32)).contains("beyond the region"));
        assert!(check(&|l| l.region = 127).contains("beyond the region"));
        assert!(check(&|l| l.contexts[0].entries[0].upper = 0).contains("empty lifetime"));
        // a zero-size request still occupies a granule: block 2 at 16 would overlap block 0's slot
        assert!(check(&|l| l.contexts[0].entries[1].offset = Some(16)).contains("overlap"));
        // no overlap in time: the same bytes may be reused
        let mut l = sample(true);
        l.contexts[1].entries[1].offset = Some(0);
        l.contexts[0].entries[2].offset = Some(0);
        l.contexts[0].entries[2].upper = 5;
        assert_eq!(validate(&l), Ok(()));
    }

    #[test]
    fn rejects_damaged_files_naming_file_and_problem() {
        let good = to_bytes(&sample(true)).unwrap();
        let err = |b: &[u8]| reread(b).unwrap_err();
        let mut b = good.clone();
        b[0] = b'X';
        assert!(err(&b).contains("x.hllayout") && err(&b).contains("magic"));
        assert!(err(b"HLL").contains("magic"));
        assert!(err(&good[..40]).contains("truncated"));
        for cut in [64, 100, good.len() - 1] {
            assert!(err(&good[..cut]).contains("truncated"), "{cut}: {}", err(&good[..cut]));
        }
        let mut b = good.clone();
        b.extend_from_slice(&[0; 8]);
        assert!(err(&b).contains("trailing"));
        let mut b = good.clone();
        b[8] = 2;
        assert!(err(&b).contains("version 2"));
        // any flipped bit in the tables is caught by the checksum
        for at in [70, 100, 200, good.len() - 20, good.len() - 1] {
            let mut b = good.clone();
            b[at] ^= 0x10;
            assert!(err(&b).contains("checksum"), "{at}: {}", err(&b));
        }
        let mut b = good.clone();
        b[32..40].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(err(&b).contains("impossible counts"));
    }

    #[test]
    fn rejects_inconsistent_tables_even_with_a_good_checksum() {
        let good = to_bytes(&sample(true)).unwrap();
        let err = |f: &dyn Fn(&mut Vec<u8>)| {
            let mut b = good.clone();
            f(&mut b);
            reseal(&mut b);
            reread(&b).unwrap_err()
        };
        let ctx = 64 + 8; // first context record
        let entries = ctx + 2 * 24;
        assert!(err(&|b| b[ctx + 8] = 1).contains("starts at entry 1"));
        assert!(err(&|b| b[ctx + 24 + 16] = 9).contains("beyond"));
        assert!(err(&|b| b[ctx + 24 + 16] = 1).contains("cover 4 of the 5"));
        assert!(err(&|b| b[12] = 0).contains("disagree"));
        assert!(err(&|b| b[12] = 3).contains("unknown flags"));
        assert!(err(&|b| b[ctx] = 0x40).contains("sorted"));
        assert!(err(&|b| b[56] = 1).contains("live at once"));
        assert!(err(&|b| b[64] = 0xff).contains("UTF-8"));
        // block 2 moved onto block 0 while both are live
        let e = err(&|b| b[entries + 16 + 8] = 0);
        assert!(e.contains("x.hllayout") && e.contains("overlap") && e.contains("buffers 0 and 2"), "{e}");
        assert!(err(&|b| b[entries + 8] = 3).contains("multiple of 16"));
        assert!(err(&|b| b[24] = 64).contains("beyond the region"));
    }

    #[test]
    fn random_layouts_round_trip_and_agree_with_a_pairwise_check() {
        let mut rng = heaplab_rng::Rng::new(0x2545_f491_4f6c_dd1d);
        let mut rnd = |m: u64| rng.below(m);
        let (mut valid, mut invalid) = (0, 0);
        for _ in 0..2000 {
            let n = rnd(9);
            let entries: Vec<Entry> = (0..n)
                .map(|i| {
                    let lo = rnd(10);
                    let off = (rnd(4) > 0).then(|| rnd(6) * 16);
                    entry(i, lo, lo + 1 + rnd(5), rnd(40), off)
                })
                .collect();
            let clash = entries.iter().enumerate().any(|(i, a)| {
                entries[..i].iter().any(|b| match (a.offset, b.offset) {
                    (Some(x), Some(y)) => a.lower < b.upper && b.lower < a.upper && x < y + slot(b.size) && y < x + slot(a.size),
                    _ => false,
                })
            });
            let l = Layout { strategy: "random".into(), stack_depth: 0, region: 6 * 16 + 48, region_align: 4096, contexts: vec![LayoutContext { key: 0, entries }] };
            match to_bytes(&l) {
                Ok(b) => {
                    assert!(!clash);
                    assert_eq!(reread(&b).unwrap(), l);
                    valid += 1;
                }
                Err(_) => {
                    assert!(clash);
                    invalid += 1;
                }
            }
        }
        assert!(valid > 100 && invalid > 100, "{valid} {invalid}");
    }
}
