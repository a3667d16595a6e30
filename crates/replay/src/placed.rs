//! The placed representation: where an allocator put every block of a trace, as jobs (time ×
//! address rectangles) grouped by the memory mapping that holds them. The `.hlplaced` binary
//! format (version 1) and its CSV export are specified and implemented here.
//!
//! A **job** is one block from its allocation to its release: `[start, end)` on the trace's
//! allocated-bytes clock (each allocation advances it by its requested size, at least 1; frees
//! take no time; blocks never freed end at the trace's end), the requested and usable sizes, and
//! its address. Jobs carry their global allocation index (`id`), so ids increase with `start`.
//!
//! **Binary layout.** All fixed-width integers little-endian; varints are LEB128, "zz" zigzag:
//! ```text
//! header   "HLPLACE\0", u16 version, u16 flags (0; readers reject others), u32 page size
//!          (a power of two), u32 threads, u32 mapping count, u64 job count, u64 end time
//!          (≥ every job's end, so > 0 whenever there are jobs),
//!          4 × (u16 length + UTF-8): allocator name, the object that defined malloc, trace
//!          file, command line
//! mappings per mapping: varint id, varint start, varint end, varint job count, u16 length +
//!          name (a mapping id of 0 collects jobs found in no mapping)
//! jobs     per mapping, in table order, jobs in id order:
//!          varint id − previous id − 1 (previous = −1 at each mapping's start),
//!          varint start − previous start (0 at each mapping's start), varint end − start,
//!          zz address delta (from the previous job's address, the mapping's start for its
//!          first job): (zz(delta / 16) << 1) when the delta is a multiple of 16, else
//!          (zz(delta) << 1) | 1; varint requested; varint usable − requested
//! end      "HLPEND\0\0", u64 job count
//! ```
//! A job takes 8–12 bytes on typical traces. Readers reject other magic and versions, and
//! name the job and byte offset where a damaged or truncated file stops making sense.
//!
//! **CSV export**: the header [`CSV_HEADER`] (columns in any order, `map_start` optional; an
//! unknown or repeated column is an error, as in the instance CSV), then one job per line.
//!
//! **Validity**: a placement is valid when no two jobs overlap in address while both are live
//! ([`first_overlap`]); the replay checks every placement it writes, `heaplab frag` every one
//! it reads.

use heaplab_model::varint::{get_varint, put_varint, unzigzag, zigzag};
use heaplab_model::{quoted, FileKind, Input, InputError, InputErrorKind as K, Wanted};
use std::io::{Read, Write};

/// The first 8 bytes of a placed file (defined with the other formats' magic in
/// `heaplab_model::input`, which tells files apart by it).
pub use heaplab_model::input::PLACED_MAGIC as MAGIC;
/// The format version written and read.
pub const VERSION: u16 = 1;
/// Marker before the closing job count.
pub const END: &[u8; 8] = b"HLPEND\0\0";

/// A memory mapping of the replay process, as far as it held blocks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mapping {
    /// The replayer's id (1, 2, … in order of discovery; 0 = blocks found in no mapping).
    pub id: u32,
    /// Lowest start address it had.
    pub start: u64,
    /// Highest end address it had (exclusive).
    pub end: u64,
    /// From /proc/self/maps: `[heap]`, a file, or `anonymous`.
    pub name: String,
}

/// One block over its lifetime.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Job {
    /// Allocation index in the trace (0-based), increasing with `start`.
    pub id: u64,
    /// Index of its mapping in [`Placed::mappings`].
    pub mapping: u32,
    /// Allocation time (allocated-bytes clock).
    pub start: u64,
    /// Release time, > `start`.
    pub end: u64,
    /// Bytes the program asked for.
    pub requested: u64,
    /// Bytes the allocator gave (malloc_usable_size), ≥ `requested`.
    pub usable: u64,
    /// Address of the block.
    pub address: u64,
}

/// What a placed file says about its making.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PlacedMeta {
    /// Page size of the replaying machine.
    pub page_size: u32,
    /// Threads replayed.
    pub threads: u32,
    /// Clock value at the end of the trace (where never-freed jobs end).
    pub end_time: u64,
    /// The allocator's name as selected (`glibc`, `jemalloc`, or a path).
    pub allocator: String,
    /// The shared object that defined malloc in the replay process.
    pub provider: String,
    /// The trace replayed.
    pub trace: String,
    /// The traced command line.
    pub command: String,
}

/// A whole placed file: mappings, and jobs grouped by mapping (in table order) and sorted by id
/// within each mapping.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Placed {
    /// Header information.
    pub meta: PlacedMeta,
    /// The mappings.
    pub mappings: Vec<Mapping>,
    /// The jobs, grouped by mapping.
    pub jobs: Vec<Job>,
}

impl Placed {
    /// Builds a placed representation from jobs in any order (sorted here) whose `mapping`
    /// indexes `mappings`.
    pub fn new(meta: PlacedMeta, mappings: Vec<Mapping>, mut jobs: Vec<Job>) -> Placed {
        jobs.sort_unstable_by_key(|j| (j.mapping, j.id));
        Placed { meta, mappings, jobs }
    }

    /// The jobs of each mapping, in table order (one slice per mapping, possibly empty).
    pub fn by_mapping(&self) -> Vec<&[Job]> {
        let mut out = Vec::with_capacity(self.mappings.len());
        let mut at = 0;
        for m in 0..self.mappings.len() as u32 {
            let n = self.jobs[at..].iter().take_while(|j| j.mapping == m).count();
            out.push(&self.jobs[at..at + n]);
            at += n;
        }
        out
    }
}

/// Two jobs whose blocks overlap while both are live: not a real allocator's placement.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Overlap {
    /// The job being placed.
    pub job: u64,
    /// The live job it overlaps.
    pub other: u64,
    /// When.
    pub time: u64,
}

impl std::fmt::Display for Overlap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "job {} overlaps job {} while both are live (at time {}): not a valid placement", self.job, self.other, self.time)
    }
}

/// The first clash between live jobs (by allocation time), if any: a sweep over start and end
/// times (lifetimes are half-open, so at equal times releases come first) with the live blocks
/// ordered by address. Jobs of usable size 0 cover nothing and cannot clash. O(n log n).
pub fn first_overlap(jobs: &[Job]) -> Option<Overlap> {
    let mut ev: Vec<(u64, bool, u32)> = Vec::with_capacity(2 * jobs.len());
    for (k, j) in jobs.iter().enumerate().filter(|(_, j)| j.usable > 0) {
        ev.push((j.start, true, k as u32));
        ev.push((j.end, false, k as u32));
    }
    ev.sort_unstable();
    let mut live: std::collections::BTreeMap<u64, (u64, u64)> = std::collections::BTreeMap::new();
    for (t, starts, k) in ev {
        let j = &jobs[k as usize];
        if !starts {
            live.remove(&j.address);
            continue;
        }
        let end = j.address.saturating_add(j.usable);
        let below = live.range(..=j.address).next_back().filter(|(_, &(e, _))| e > j.address);
        let above = live.range(j.address..).next().filter(|(&a, _)| a < end);
        if let Some((_, &(_, other))) = below.or(above) {
            return Some(Overlap { job: j.id, other, time: t });
        }
        live.insert(j.address, (end, j.id));
    }
    None
}

fn put_str(out: &mut Vec<u8>, s: &str) {
    let b = &s.as_bytes()[..s.len().min(u16::MAX as usize)];
    out.extend_from_slice(&(b.len() as u16).to_le_bytes());
    out.extend_from_slice(b);
}

/// Writes `p` in the binary format.
pub fn write_binary<W: Write + ?Sized>(w: &mut W, p: &Placed) -> std::io::Result<()> {
    let mut out = Vec::with_capacity(64 + p.jobs.len() * 10);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&VERSION.to_le_bytes());
    out.extend_from_slice(&0u16.to_le_bytes());
    out.extend_from_slice(&p.meta.page_size.to_le_bytes());
    out.extend_from_slice(&p.meta.threads.to_le_bytes());
    out.extend_from_slice(&(p.mappings.len() as u32).to_le_bytes());
    out.extend_from_slice(&(p.jobs.len() as u64).to_le_bytes());
    out.extend_from_slice(&p.meta.end_time.to_le_bytes());
    for s in [&p.meta.allocator, &p.meta.provider, &p.meta.trace, &p.meta.command] {
        put_str(&mut out, s);
    }
    let groups = p.by_mapping();
    for (m, jobs) in p.mappings.iter().zip(&groups) {
        put_varint(&mut out, m.id as u64);
        put_varint(&mut out, m.start);
        put_varint(&mut out, m.end);
        put_varint(&mut out, jobs.len() as u64);
        put_str(&mut out, &m.name);
    }
    for (m, jobs) in p.mappings.iter().zip(&groups) {
        let (mut id, mut start, mut addr) = (u64::MAX, 0u64, m.start);
        for j in jobs.iter() {
            put_varint(&mut out, j.id.wrapping_sub(id).wrapping_sub(1));
            put_varint(&mut out, j.start - start);
            put_varint(&mut out, j.end - j.start);
            let d = j.address.wrapping_sub(addr) as i64;
            if d % 16 == 0 {
                put_varint(&mut out, zigzag(d / 16) << 1);
            } else {
                put_varint(&mut out, (zigzag(d) << 1) | 1);
            }
            put_varint(&mut out, j.requested);
            put_varint(&mut out, j.usable - j.requested);
            (id, start, addr) = (j.id, j.start, j.address);
        }
        if out.len() >= 1 << 20 {
            w.write_all(&out)?;
            out.clear();
        }
    }
    out.extend_from_slice(END);
    out.extend_from_slice(&(p.jobs.len() as u64).to_le_bytes());
    w.write_all(&out)
}

/// Whether an opened input holds placed jobs: the binary by its magic, or the CSV export by a
/// header with a `job` column (instance and placement CSV files never have one). Only the
/// look-ahead is read, so the same input is then handed to whichever reader it names.
pub fn holds_placed(input: &mut Input) -> Result<bool, InputError> {
    if input.kind()? == FileKind::Placed {
        return Ok(true);
    }
    // A header is short: one that does not end within the look-ahead is not the export's.
    Ok(input.first_line()?.is_some_and(|head| {
        let head = String::from_utf8_lossy(head);
        head.trim_start_matches('\u{feff}').split(',').any(|c| c.trim().eq_ignore_ascii_case("job"))
    }))
}

/// A cursor over the file's bytes that names the offset of what it could not read.
struct Cursor<'a> {
    b: &'a [u8],
    pos: usize,
    name: &'a str,
}

impl Cursor<'_> {
    fn fail(&self, what: &str) -> InputError {
        let cut = self.pos >= self.b.len();
        let msg = if cut {
            format!("truncated: the file ends at byte {} inside {what}", self.b.len())
        } else {
            format!("corrupt {what} at byte {}", self.pos)
        };
        InputError::file(self.name, K::Format, msg)
    }
    fn bytes(&mut self, n: usize, what: &str) -> Result<&[u8], InputError> {
        let s = self.b.get(self.pos..self.pos.saturating_add(n)).ok_or_else(|| {
            let mut c = Cursor { b: self.b, pos: self.b.len(), name: self.name };
            c.pos = self.b.len();
            c.fail(what)
        })?;
        self.pos += n;
        Ok(s)
    }
    fn u16(&mut self, what: &str) -> Result<u16, InputError> {
        Ok(u16::from_le_bytes(self.bytes(2, what)?.try_into().expect("2 bytes")))
    }
    fn u32(&mut self, what: &str) -> Result<u32, InputError> {
        Ok(u32::from_le_bytes(self.bytes(4, what)?.try_into().expect("4 bytes")))
    }
    fn u64(&mut self, what: &str) -> Result<u64, InputError> {
        Ok(u64::from_le_bytes(self.bytes(8, what)?.try_into().expect("8 bytes")))
    }
    fn varint(&mut self, what: &str) -> Result<u64, InputError> {
        let at = self.pos;
        get_varint(self.b, &mut self.pos).ok_or_else(|| {
            self.pos = if self.b.len() - at < 10 && self.b[at..].iter().all(|&x| x & 0x80 != 0) { self.b.len() } else { at };
            self.fail(what)
        })
    }
    fn string(&mut self, what: &str) -> Result<String, InputError> {
        let n = self.u16(what)? as usize;
        Ok(String::from_utf8_lossy(self.bytes(n, what)?).into_owned())
    }
}

/// Reads a placed file from `r`; `name` is used in messages.
pub fn read_binary<R: Read>(mut r: R, name: &str) -> Result<Placed, InputError> {
    let mut b = Vec::new();
    r.read_to_end(&mut b).map_err(|e| InputError::file(name, K::Io, format!("cannot read: {e}")))?;
    if b.len() < 8 || &b[..8] != MAGIC {
        return Err(InputError::file(name, K::Format, "not a heaplab placed file (bad magic; expected a file written by `heaplab replay`)"));
    }
    let mut c = Cursor { b: &b, pos: 8, name };
    let version = c.u16("the header")?;
    if version != VERSION {
        return Err(InputError::file(name, K::Format, format!("placed format version {version}; this heaplab reads version {VERSION}")));
    }
    let flags = c.u16("the header")?;
    if flags != 0 {
        return Err(InputError::file(name, K::Format, format!("corrupt header: flags {flags:#06x} at byte 10 (this format version defines none; expected 0)")));
    }
    let page_size = c.u32("the header")?;
    let threads = c.u32("the header")?;
    let nmaps = c.u32("the header")? as usize;
    let njobs = c.u64("the header")?;
    let end_time = c.u64("the header")?;
    let meta = PlacedMeta {
        page_size,
        threads,
        end_time,
        allocator: c.string("the header")?,
        provider: c.string("the header")?,
        trace: c.string("the header")?,
        command: c.string("the header")?,
    };
    if page_size == 0 || !page_size.is_power_of_two() {
        return Err(InputError::file(name, K::Format, format!("corrupt header: page size {page_size} at byte 12 is not a power of two")));
    }
    if end_time == 0 && njobs > 0 {
        return Err(InputError::file(name, K::Format, format!("corrupt header: end time 0 at byte 32, but the file has {njobs} jobs (each ends at a time > 0)")));
    }
    // Every mapping takes at least 6 bytes and every job 6: counts beyond the file are corrupt.
    if nmaps > b.len() / 6 || njobs > (b.len() / 6) as u64 {
        return Err(InputError::file(name, K::Format, format!("truncated or corrupt: the header counts {nmaps} mappings and {njobs} jobs, which cannot fit in the file's {} bytes", b.len())));
    }
    let mut mappings = Vec::with_capacity(nmaps);
    let mut counts = Vec::with_capacity(nmaps);
    for k in 0..nmaps {
        let what = format!("mapping {k}");
        let id = c.varint(&what)?;
        let start = c.varint(&what)?;
        let end = c.varint(&what)?;
        let n = c.varint(&what)?;
        let mname = c.string(&what)?;
        if id > u32::MAX as u64 || end < start {
            return Err(InputError::file(name, K::Format, format!("corrupt mapping {k} before byte {}", c.pos)));
        }
        mappings.push(Mapping { id: id as u32, start, end, name: mname });
        counts.push(n);
    }
    // Mapping ids name mappings (the CSV export keys jobs by them): two with one id are corrupt.
    let mut ids: Vec<u32> = mappings.iter().map(|m| m.id).collect();
    ids.sort_unstable();
    if let Some(w) = ids.windows(2).find(|w| w[0] == w[1]) {
        return Err(InputError::file(name, K::Format, format!("corrupt mapping table: mapping id {} appears twice", w[0])));
    }
    if counts.iter().try_fold(0u64, |a, &n| a.checked_add(n)) != Some(njobs) {
        return Err(InputError::file(name, K::Format, "corrupt mapping table: its job counts do not add up to the header's"));
    }
    let mut jobs = Vec::with_capacity(njobs as usize);
    for (m, (&n, map)) in counts.iter().zip(&mappings).enumerate() {
        let (mut id, mut start, mut addr) = (u64::MAX, 0u64, map.start);
        for _ in 0..n {
            let what = format!("job {}", jobs.len());
            let bad = |c: &Cursor| InputError::file(name, K::Format, format!("corrupt {what} before byte {}: values out of range", c.pos));
            id = id.wrapping_add(1).checked_add(c.varint(&what)?).ok_or_else(|| bad(&c))?;
            start = start.checked_add(c.varint(&what)?).ok_or_else(|| bad(&c))?;
            let end = start.checked_add(c.varint(&what)?).ok_or_else(|| bad(&c))?;
            let a = c.varint(&what)?;
            let d = if a & 1 == 0 { unzigzag(a >> 1).wrapping_mul(16) } else { unzigzag(a >> 1) };
            addr = addr.wrapping_add(d as u64);
            let requested = c.varint(&what)?;
            let usable = requested.checked_add(c.varint(&what)?).ok_or_else(|| bad(&c))?;
            if end <= start || id == u64::MAX {
                return Err(bad(&c));
            }
            if end > end_time {
                return Err(InputError::file(name, K::Format, format!("corrupt {what} before byte {}: it ends at {end}, after the header's end time {end_time}", c.pos)));
            }
            jobs.push(Job { id, mapping: m as u32, start, end, requested, usable, address: addr });
        }
    }
    if let Some(id) = repeated_id(&jobs) {
        return Err(InputError::file(name, K::Format, format!("corrupt: job id {id} appears twice")));
    }
    let tail = c.bytes(16, "the end marker")?;
    if &tail[..8] != END || u64::from_le_bytes(tail[8..].try_into().expect("8 bytes")) != njobs {
        return Err(InputError::file(name, K::Format, format!("corrupt end marker at byte {}", c.pos - 16)));
    }
    if c.pos != b.len() {
        return Err(InputError::file(name, K::Format, format!("{} unexpected bytes after the end marker", b.len() - c.pos)));
    }
    Ok(Placed { meta, mappings, jobs })
}

/// A job id that appears more than once, in any mappings: ids are the trace's allocation
/// indexes, one per job (both readers check it, so a file and its CSV export read alike).
fn repeated_id(jobs: &[Job]) -> Option<u64> {
    let mut ids: Vec<u64> = jobs.iter().map(|j| j.id).collect();
    ids.sort_unstable();
    ids.windows(2).find(|w| w[0] == w[1]).map(|w| w[0])
}

/// The CSV header of the export.
pub const CSV_HEADER: &str = "job,mapping,map_start,start,end,requested,usable,address";

/// Writes `p` as CSV: one line per job, grouped by mapping, with [`CSV_HEADER`].
pub fn write_csv<W: Write + ?Sized>(w: &mut W, p: &Placed) -> std::io::Result<()> {
    writeln!(w, "{CSV_HEADER}")?;
    for j in &p.jobs {
        let m = &p.mappings[j.mapping as usize];
        writeln!(w, "{},{},{},{},{},{},{},{}", j.id, m.id, m.start, j.start, j.end, j.requested, j.usable, j.address)?;
    }
    Ok(())
}

/// Reads the CSV export (or a file in the same shape from another tool): the columns of
/// [`CSV_HEADER`] in any order (`map_start` optional: the lowest job address of the mapping
/// then), integers in decimal or `0x` hex. `page_size` goes into the metadata.
pub fn read_csv<R: Read>(r: R, name: &str, page_size: u32) -> Result<Placed, InputError> {
    use std::io::BufRead;
    let mut lines = std::io::BufReader::new(r).lines();
    let head = match lines.next() {
        Some(l) => l.map_err(|e| match e.kind() {
            std::io::ErrorKind::InvalidData => InputError::at(name, 1, None, K::Value, "not UTF-8 text: a CSV file is text"),
            _ => InputError::file(name, K::Io, format!("cannot read: {e}")),
        })?,
        None => return Err(InputError::at(name, 1, None, K::Shape, format!("empty file; expected the header {CSV_HEADER}"))),
    };
    let cols: Vec<String> = head.trim_start_matches('\u{feff}').trim().split(',').map(|s| s.trim().to_ascii_lowercase()).collect();
    let need = ["job", "mapping", "start", "end", "requested", "usable", "address"];
    // A typo or a repeated column would otherwise be silently ignored (as the instance CSV
    // reader also refuses).
    let mut at = [usize::MAX; 8];
    for (i, c) in cols.iter().enumerate() {
        let Some(k) = need.iter().chain(["map_start"].iter()).position(|n| n == c) else {
            return Err(InputError::at(name, 1, Some(c), K::Shape, format!("unknown column in header; expected {CSV_HEADER} (map_start optional)")));
        };
        if at[k] != usize::MAX {
            return Err(InputError::at(name, 1, Some(c), K::Shape, "column appears twice in header"));
        }
        at[k] = i;
    }
    if let Some(n) = need.iter().zip(at).find(|(_, i)| *i == usize::MAX).map(|(n, _)| n) {
        return Err(InputError::at(name, 1, Some(n), K::Shape, format!("missing column '{n}'; expected the header {CSV_HEADER}")));
    }
    let mut maps: std::collections::BTreeMap<u64, (u64, u64, bool)> = Default::default();
    let mut rows = Vec::new();
    for (k, line) in lines.enumerate() {
        let ln = k as u64 + 2;
        let line = line.map_err(|e| match e.kind() {
            std::io::ErrorKind::InvalidData => InputError::at(name, ln, None, K::Value, "not UTF-8 text: a CSV file is text"),
            _ => InputError::file(name, K::Io, format!("cannot read: {e}")),
        })?;
        if line.trim().is_empty() {
            continue;
        }
        let f: Vec<&str> = line.split(',').map(str::trim).collect();
        if f.len() != cols.len() {
            return Err(InputError::at(name, ln, None, K::Shape, format!("{} fields, expected {}", f.len(), cols.len())));
        }
        let mut v = [0u64; 8];
        for (i, &c) in at.iter().enumerate() {
            if c == usize::MAX {
                continue;
            }
            let s = f[c];
            let parsed = match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
                Some(h) => u64::from_str_radix(h, 16),
                None => s.parse::<u64>(),
            };
            let col = if i < 7 { need[i] } else { "map_start" };
            v[i] = parsed.map_err(|_| InputError::at(name, ln, Some(col), K::Value, format!("{} is not a non-negative integer", quoted(s))))?;
        }
        let [id, map, start, end, requested, usable, address, map_start] = v;
        if map > u32::MAX as u64 {
            return Err(InputError::at(name, ln, Some("mapping"), K::Value, format!("{map} is not a 32-bit mapping id")));
        }
        if end <= start {
            return Err(InputError::at(name, ln, Some("end"), K::Consistency, format!("end must be greater than start (start {start}, end {end})")));
        }
        if usable < requested {
            return Err(InputError::at(name, ln, Some("usable"), K::Consistency, format!("usable {usable} is below requested {requested}")));
        }
        if address.checked_add(usable).is_none() {
            return Err(InputError::at(name, ln, Some("address"), K::Overflow, "address + usable passes 2^64"));
        }
        let e = maps.entry(map).or_insert((u64::MAX, 0, false));
        if at[7] != usize::MAX && !e.2 {
            *e = (map_start, e.1, true);
        } else if at[7] == usize::MAX {
            e.0 = e.0.min(address);
        }
        e.1 = e.1.max(address + usable);
        rows.push((map, Job { id, mapping: 0, start, end, requested, usable, address }));
    }
    let index: std::collections::BTreeMap<u64, u32> = maps.keys().enumerate().map(|(i, &m)| (m, i as u32)).collect();
    let mappings = maps.iter().map(|(&id, &(s, e, _))| Mapping { id: id as u32, start: s.min(e), end: e, name: String::new() }).collect();
    let end_time = rows.iter().map(|(_, j)| j.end).max().unwrap_or(0);
    let jobs = rows.into_iter().map(|(m, mut j)| {
        j.mapping = index[&m];
        j
    });
    let meta = PlacedMeta { page_size, threads: 0, end_time, trace: name.to_string(), ..Default::default() };
    let p = Placed::new(meta, mappings, jobs.collect());
    if let Some(id) = repeated_id(&p.jobs) {
        return Err(InputError::file(name, K::Consistency, format!("job id {id} appears twice")));
    }
    Ok(p)
}

/// Writes a placed file atomically: the CSV export when `path` ends in .csv, else the binary
/// format.
pub fn write(path: &str, p: &Placed) -> std::io::Result<()> {
    let csv = path.to_ascii_lowercase().ends_with(".csv");
    heaplab_model::files::write_atomic(path, |w| if csv { write_csv(w, p) } else { write_binary(w, p) })
}

/// Reads a placed file by path (or `-`; pipes work): the binary format (by magic) or the CSV
/// export, whose page size is `csv_page_size`.
pub fn read(path: &str, csv_page_size: u32) -> Result<Placed, InputError> {
    read_input(Input::open(path)?, csv_page_size)
}

/// Reads a placed file from an opened input; see [`read`]. Other heaplab files are rejected
/// with a message that says what they are.
pub fn read_input(mut input: Input, csv_page_size: u32) -> Result<Placed, InputError> {
    let name = input.name().to_string();
    match input.kind()? {
        FileKind::Placed => read_binary(input, &name),
        FileKind::Text | FileKind::Empty => read_csv(input, &name, csv_page_size),
        FileKind::Hlbin | FileKind::Trace | FileKind::RunIndex | FileKind::Unknown => Err(input.wrong_kind(Wanted::Placed)),
    }
}
