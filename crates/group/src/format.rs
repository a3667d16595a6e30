//! The `.hlgroups` file: what `heaplab group` writes and `heaplab run --groups` and
//! `heaplab group-info` read. Written atomically (a temporary file renamed into place), read
//! and validated in full: a damaged or inconsistent file is refused with a message naming it.
//!
//! Version 5 (version 4, the same without the contexts' small-object figures, is read too, with
//! them taken from the sizes; version 3, version 4 where flag bit 4 alone means a cold group of
//! every context it could take; version 2, version 3 without the contexts' sizes, with sizes unknown;
//! version 1, version 2 without the last three header numbers and the churn flag, with no
//! turnover or walk limit either). Fixed-header integers are little-endian; `var` is an unsigned LEB128 varint
//! (`heaplab_model::varint`); `str` is `var` length + UTF-8 bytes; `f64` is IEEE-754 bits.
//! ```text
//!   0  magic "HLGROUPS" (8 bytes)
//!   8  u32 version = 5
//!  12  u32 walk depth (frames the run-time walk visits)
//!  16  u64 affinity distance (bytes)
//!  24  f64 coverage          32  f64 merge tolerance     40  f64 group threshold
//!  48  u64 min weight        56  u64 max group members   64  u64 max object size
//!  72  u64 chunk size        80  u32 spare chunks        84  u32 flags (bit 0: whole call sites,
//!                                                               bit 1: recursion collapsed by function,
//!                                                               bit 2: groups dropped for their cost,
//!                                                               bit 3: lopsided groups absorbed,
//!                                                               bit 4: a cold group may be last,
//!                                                               bit 5: with bit 4, only of the
//!                                                               contexts that dilute a group)
//!  88  u64 K = command words 96  u64 S = sites          104  u64 C = contexts
//! 112  u64 E = edges        120  u64 G = groups         128  f64 max turnover (0: no limit)
//! 136  f64 max walk per object (0: no limit)            144  f64 estimated walk per object
//! 152  K × str: the profiled command
//!      S × site: str module basename, var file offset, str function ("" = unknown),
//!                var max depth
//!      C × context: var flags (bit 0: kept, bit 1: churns, bit 2: sizes known), var group + 1
//!                   (0: none), var accesses, var objects, var bytes, var n, n × var site
//!                   (innermost first), then with bit 2: var smallest request, var largest
//!                   request, var objects freed; then var accesses and var bytes of its objects
//!                   of at most the max object size
//!      E × edge, sorted by (a, b), no repeats: var a, var b (a ≤ b), var weight (≥ 1)
//!      G × group, in the order selectors are tried: var weight, var accesses,
//!                var m, m × var member context, var d, d × (var k ≥ 1, k × var site)
//!      "HLG-END\0" (8 bytes)
//!      u64 FNV-1a 64 of every byte before it
//! ```
//! Rules a reader checks beyond the layout: the parameters' ranges ([`crate::Params::validate`]),
//! indices in range, a context's group listing it as a member and no context in two groups,
//! and the walk depth being the deepest selector site's max depth + 1.

use crate::{ColdGroup, Group, GroupContext, GroupEdge, Groups, Identification, ObjectSizes, Params, Recursion, Site};
use heaplab_model::varint::{get_varint, put_varint};
use heaplab_model::{InputError, InputErrorKind};
use heaplab_trace::context::fnv1a;

/// The file's first 8 bytes.
pub const MAGIC: &[u8; 8] = b"HLGROUPS";
/// The version this module writes (it reads this one and the four before).
pub const VERSION: u32 = 5;
/// The end marker before the checksum.
pub const END: &[u8; 8] = b"HLG-END\0";
const HEADER: usize = 152;
/// Version 1's header: the later versions' without the last three numbers.
const HEADER_V1: usize = 128;

/// Why groups could not be written (the format's rules, or the file).
pub use heaplab_model::files::WriteError;

/// Checks every rule of the format; the error says which and where.
pub fn validate(g: &Groups) -> Result<(), String> {
    g.params.validate()?;
    let (ns, nc) = (g.sites.len() as u64, g.contexts.len() as u64);
    for (i, c) in g.contexts.iter().enumerate() {
        if let Some(s) = c.sites.iter().find(|&&s| u64::from(s) >= ns) {
            return Err(format!("context {i} names site {s} of {ns}"));
        }
        if c.churns && (c.kept || c.group.is_some()) {
            return Err(format!("context {i} churns but is kept or grouped"));
        }
        if let Some(z) = c.sizes {
            if z.min > z.max || z.freed > c.objects {
                return Err(format!("context {i}: sizes {}..{} with {} of {} objects freed", z.min, z.max, z.freed, c.objects));
            }
        }
        if c.small_accesses > c.accesses || c.small_bytes > c.bytes {
            return Err(format!("context {i}: small objects' {} accesses and {} bytes beyond all its objects' {} and {}", c.small_accesses, c.small_bytes, c.accesses, c.bytes));
        }
        if let Some(k) = c.group {
            match g.groups.get(k as usize) {
                Some(grp) if grp.members.contains(&(i as u32)) => {}
                Some(_) => return Err(format!("context {i} says it is in group {k}, which does not list it")),
                None => return Err(format!("context {i} names group {k} of {}", g.groups.len())),
            }
        }
    }
    for (i, w) in g.edges.windows(2).enumerate() {
        if (w[0].a, w[0].b) >= (w[1].a, w[1].b) {
            return Err(format!("edges {i} and {} not sorted and unique", i + 1));
        }
    }
    for (i, e) in g.edges.iter().enumerate() {
        if e.a > e.b || u64::from(e.b) >= nc || e.weight == 0 {
            return Err(format!("edge {i} ({}, {}, weight {}) is not a ≤ b < {nc} with weight ≥ 1", e.a, e.b, e.weight));
        }
    }
    if g.identification.dropped && !g.groups.is_empty() {
        return Err(format!("{} groups, but they are marked as dropped for their cost", g.groups.len()));
    }
    let mut depth = 0;
    for (k, grp) in g.groups.iter().enumerate() {
        if grp.members.is_empty() {
            return Err(format!("group {k} has no members"));
        }
        for &m in &grp.members {
            match g.contexts.get(m as usize) {
                Some(c) if c.group == Some(k as u32) => {}
                Some(c) => return Err(format!("group {k} lists context {m}, which says it is in group {:?}", c.group)),
                None => return Err(format!("group {k} lists context {m} of {nc}")),
            }
        }
        for conj in &grp.selector {
            if conj.is_empty() {
                return Err(format!("group {k} has an empty conjunction (it would select everything)"));
            }
            for &s in conj {
                let site = g.sites.get(s as usize).ok_or_else(|| format!("group {k}'s selector names site {s} of {ns}"))?;
                depth = depth.max(site.max_depth + 1);
            }
        }
    }
    if g.walk_depth != depth {
        return Err(format!("walk depth {} but the deepest selector site needs {depth}", g.walk_depth));
    }
    Ok(())
}

fn put_str(b: &mut Vec<u8>, s: &str) {
    put_varint(b, s.len() as u64);
    b.extend_from_slice(s.as_bytes());
}

/// The file's bytes for valid groups.
pub fn to_bytes(g: &Groups) -> Result<Vec<u8>, WriteError> {
    to_bytes_as(g, true)
}

/// [`to_bytes`], with or without the contexts' small-object figures (without: version 4's body,
/// which the tests of older versions start from).
pub(crate) fn to_bytes_as(g: &Groups, small: bool) -> Result<Vec<u8>, WriteError> {
    validate(g).map_err(|m| WriteError::Invalid("invalid groups", m))?;
    let p = &g.params;
    let mut b = Vec::with_capacity(HEADER + 16 * (g.sites.len() + g.contexts.len() + g.edges.len()));
    b.extend_from_slice(MAGIC);
    b.extend_from_slice(&VERSION.to_le_bytes());
    b.extend_from_slice(&g.walk_depth.to_le_bytes());
    b.extend_from_slice(&g.affinity_distance.to_le_bytes());
    for v in [p.coverage, p.merge_tolerance, p.group_threshold] {
        b.extend_from_slice(&v.to_bits().to_le_bytes());
    }
    for v in [p.min_weight, p.max_group_members as u64, p.max_object_size, p.chunk_size] {
        b.extend_from_slice(&v.to_le_bytes());
    }
    b.extend_from_slice(&p.spare_chunks.to_le_bytes());
    let flags = u32::from(p.whole_call_sites) | u32::from(p.recursion == Recursion::Function) << 1 | u32::from(g.identification.dropped) << 2 | u32::from(p.absorb) << 3 | u32::from(p.cold_group != ColdGroup::Never) << 4 | u32::from(p.cold_group == ColdGroup::Diluting) << 5;
    b.extend_from_slice(&flags.to_le_bytes());
    for v in [g.command.len(), g.sites.len(), g.contexts.len(), g.edges.len(), g.groups.len()] {
        b.extend_from_slice(&(v as u64).to_le_bytes());
    }
    for v in [p.max_turnover, p.max_walk_per_object, g.identification.walk_per_object] {
        b.extend_from_slice(&v.to_bits().to_le_bytes());
    }
    debug_assert_eq!(b.len(), HEADER);
    for w in &g.command {
        put_str(&mut b, w);
    }
    for s in &g.sites {
        put_str(&mut b, &s.module);
        put_varint(&mut b, s.file_offset);
        put_str(&mut b, &s.function);
        put_varint(&mut b, u64::from(s.max_depth));
    }
    for c in &g.contexts {
        put_varint(&mut b, u64::from(c.kept) | u64::from(c.churns) << 1 | u64::from(c.sizes.is_some()) << 2);
        put_varint(&mut b, c.group.map_or(0, |k| u64::from(k) + 1));
        for v in [c.accesses, c.objects, c.bytes, c.sites.len() as u64] {
            put_varint(&mut b, v);
        }
        for &s in &c.sites {
            put_varint(&mut b, u64::from(s));
        }
        if let Some(z) = c.sizes {
            for v in [z.min, z.max, z.freed] {
                put_varint(&mut b, v);
            }
        }
        if small {
            put_varint(&mut b, c.small_accesses);
            put_varint(&mut b, c.small_bytes);
        }
    }
    for e in &g.edges {
        for v in [u64::from(e.a), u64::from(e.b), e.weight] {
            put_varint(&mut b, v);
        }
    }
    for grp in &g.groups {
        for v in [grp.weight, grp.accesses, grp.members.len() as u64] {
            put_varint(&mut b, v);
        }
        for &m in &grp.members {
            put_varint(&mut b, u64::from(m));
        }
        put_varint(&mut b, grp.selector.len() as u64);
        for conj in &grp.selector {
            put_varint(&mut b, conj.len() as u64);
            for &s in conj {
                put_varint(&mut b, u64::from(s));
            }
        }
    }
    b.extend_from_slice(END);
    let sum = fnv1a(&b);
    b.extend_from_slice(&sum.to_le_bytes());
    Ok(b)
}

/// Writes valid groups to `path` atomically (nothing is written when they are invalid).
pub fn write(path: &str, g: &Groups) -> Result<(), WriteError> {
    let bytes = to_bytes(g)?;
    heaplab_model::files::write_bytes(path, &bytes)
}

/// Reads and validates the groups in `path`.
pub fn read(path: &str) -> Result<Groups, InputError> {
    from_bytes(path, &heaplab_model::files::read_bytes(path)?)
}

struct Cursor<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Cursor<'_> {
    fn left(&self) -> usize {
        self.bytes.len() - self.at
    }
    fn var(&mut self, what: &str) -> Result<u64, String> {
        get_varint(self.bytes, &mut self.at).ok_or_else(|| format!("{what}: malformed or cut-short number"))
    }
    fn u32(&mut self, what: &str) -> Result<u32, String> {
        u32::try_from(self.var(what)?).map_err(|_| format!("{what}: index beyond 32 bits"))
    }
    fn count(&mut self, what: &str) -> Result<usize, String> {
        let n = self.var(what)?;
        // Every item takes at least a byte: a count beyond what is left is corrupt.
        if n > self.left() as u64 {
            return Err(format!("{what}: count {n} is more than the file can hold"));
        }
        Ok(n as usize)
    }
    fn str(&mut self, what: &str) -> Result<String, String> {
        let n = self.count(what)?;
        let s = std::str::from_utf8(&self.bytes[self.at..self.at + n]).map_err(|_| format!("{what}: text is not UTF-8"))?;
        self.at += n;
        Ok(s.to_string())
    }
}

/// Parses and validates groups from the bytes of `file` (the name is for messages).
pub fn from_bytes(file: &str, bytes: &[u8]) -> Result<Groups, InputError> {
    let format = |m: String| InputError::file(file, InputErrorKind::Format, m);
    if bytes.len() < MAGIC.len() || &bytes[..MAGIC.len()] != MAGIC {
        return Err(format("not a groups file (no HLGROUPS magic; expected a .hlgroups file from `heaplab group`)".into()));
    }
    if bytes.len() < HEADER_V1 + 16 {
        return Err(format(format!("truncated: {} bytes, shorter than the {HEADER_V1}-byte header and the end", bytes.len())));
    }
    let u32_at = |o: usize| u32::from_le_bytes(bytes[o..o + 4].try_into().unwrap());
    let u64_at = |o: usize| u64::from_le_bytes(bytes[o..o + 8].try_into().unwrap());
    let version = u32_at(8);
    let header = match version {
        1 => HEADER_V1,
        2..=VERSION => HEADER,
        _ => return Err(format(format!("groups format version {version}; this heaplab reads versions 1 to {VERSION}"))),
    };
    if bytes.len() < header + 16 {
        return Err(format(format!("truncated: {} bytes, shorter than the {header}-byte header and the end", bytes.len())));
    }
    let body = bytes.len() - 8;
    if &bytes[body - 8..body] != END || u64_at(body) != fnv1a(&bytes[..body]) {
        return Err(format("truncated or corrupt: the end marker or checksum does not match".into()));
    }
    let flags = u32_at(84);
    if flags > [3, 31, 31, 63, 63][version as usize - 1] || flags & 48 == 32 {
        return Err(format(format!("unknown flags {flags:#x} at byte 84")));
    }
    let params = Params {
        coverage: f64::from_bits(u64_at(24)),
        merge_tolerance: f64::from_bits(u64_at(32)),
        group_threshold: f64::from_bits(u64_at(40)),
        min_weight: u64_at(48),
        max_group_members: usize::try_from(u64_at(56)).map_err(|_| format("max group members beyond this machine's range".into()))?,
        max_object_size: u64_at(64),
        chunk_size: u64_at(72),
        spare_chunks: u32_at(80),
        whole_call_sites: u32_at(84) & 1 != 0,
        absorb: u32_at(84) & 8 != 0,
        cold_group: match (flags & 16 != 0, flags & 32 != 0) {
            (false, _) => ColdGroup::Never,
            (true, false) => ColdGroup::All,
            (true, true) => ColdGroup::Diluting,
        },
        recursion: if u32_at(84) & 2 != 0 { Recursion::Function } else { Recursion::CallSite },
        max_turnover: if version == 1 { 0.0 } else { f64::from_bits(u64_at(128)) },
        max_walk_per_object: if version == 1 { 0.0 } else { f64::from_bits(u64_at(136)) },
    };
    let walk_per_object = if version == 1 { 0.0 } else { f64::from_bits(u64_at(144)) };
    if !(walk_per_object.is_finite() && walk_per_object >= 0.0) {
        return Err(format(format!("estimated walk per object {walk_per_object} at byte 144 is not a number of frames")));
    }
    let mut g = Groups {
        params,
        command: Vec::new(),
        affinity_distance: u64_at(16),
        sites: Vec::new(),
        contexts: Vec::new(),
        edges: Vec::new(),
        groups: Vec::new(),
        walk_depth: u32_at(12),
        identification: Identification { walk_per_object, dropped: u32_at(84) & 4 != 0 },
    };
    let mut r = Cursor { bytes: &bytes[..body - 8], at: header };
    let counts: Vec<u64> = (0..5).map(|k| u64_at(88 + 8 * k)).collect();
    for (n, what) in counts.iter().zip(["command words", "sites", "contexts", "edges", "groups"]) {
        if *n > r.left() as u64 {
            return Err(format(format!("header says {n} {what}, more than the file can hold")));
        }
    }
    let context_flags = match version {
        1 => 1,
        2 => 3,
        _ => 7,
    };
    parse_body(&mut r, &mut g, &counts, context_flags, version >= 5).map_err(format)?;
    if r.left() != 0 {
        return Err(format(format!("{} unexpected bytes after the groups", r.left())));
    }
    validate(&g).map_err(|m| InputError::file(file, InputErrorKind::Consistency, format!("invalid groups: {m}")))?;
    Ok(g)
}

/// The body after the header; `context_flags` are the context flag bits the version knows,
/// `small` whether contexts carry their small-object figures (else they are taken from the
/// sizes: all of a context's figures when its largest object is small enough to group, none
/// when its smallest is not, all when unknown or mixed).
fn parse_body(r: &mut Cursor, g: &mut Groups, counts: &[u64], context_flags: u64, small: bool) -> Result<(), String> {
    for _ in 0..counts[0] {
        g.command.push(r.str("command word")?);
    }
    for i in 0..counts[1] {
        let what = format!("site {i}");
        let module = r.str(&what)?;
        let file_offset = r.var(&what)?;
        let function = r.str(&what)?;
        let max_depth = r.u32(&what)?;
        g.sites.push(Site { module, file_offset, function, max_depth });
    }
    for i in 0..counts[2] {
        let what = format!("context {i}");
        let flags = r.var(&what)?;
        if flags & !context_flags != 0 {
            return Err(format!("{what}: unknown flags {flags:#x}"));
        }
        let group = match r.u32(&what)? {
            0 => None,
            k => Some(k - 1),
        };
        let (accesses, objects, bytes) = (r.var(&what)?, r.var(&what)?, r.var(&what)?);
        let n = r.count(&what)?;
        let sites = (0..n).map(|_| r.u32(&what)).collect::<Result<_, _>>()?;
        let sizes = if flags & 4 != 0 { Some(ObjectSizes { min: r.var(&what)?, max: r.var(&what)?, freed: r.var(&what)? }) } else { None };
        let (small_accesses, small_bytes) = if small {
            (r.var(&what)?, r.var(&what)?)
        } else if sizes.is_some_and(|z| z.min > g.params.max_object_size) {
            (0, 0)
        } else {
            (accesses, bytes)
        };
        g.contexts.push(GroupContext { sites, group, accesses, objects, bytes, small_accesses, small_bytes, kept: flags & 1 != 0, churns: flags & 2 != 0, sizes });
    }
    for i in 0..counts[3] {
        let what = format!("edge {i}");
        g.edges.push(GroupEdge { a: r.u32(&what)?, b: r.u32(&what)?, weight: r.var(&what)? });
    }
    for i in 0..counts[4] {
        let what = format!("group {i}");
        let (weight, accesses) = (r.var(&what)?, r.var(&what)?);
        let m = r.count(&what)?;
        let members = (0..m).map(|_| r.u32(&what)).collect::<Result<_, _>>()?;
        let d = r.count(&what)?;
        let mut selector = Vec::with_capacity(d);
        for _ in 0..d {
            let k = r.count(&what)?;
            selector.push((0..k).map(|_| r.u32(&what)).collect::<Result<_, _>>()?);
        }
        g.groups.push(Group { members, weight, accesses, selector });
    }
    Ok(())
}

#[cfg(test)]
mod tests;
