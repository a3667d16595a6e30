//! The streaming `.hltrace` reader: parses the header, walks records in file order, and merges
//! the threads' windows into one stream of heap operations in global sequence order.
//!
//! Memory is bounded by the windows whose sequence ranges overlap (about one per live thread):
//! a window is loaded only when the smallest pending sequence number reaches its floor. Every
//! window is validated when it is loaded, before any event at or beyond its floor is handed
//! out, so damage (a file cut short, corrupt bytes) is found in time to stop the stream at a
//! consistent point: every event with a sequence number below [`Damage::usable_below`] is
//! delivered and nothing after it. A zero byte where a record or event would start is the
//! normal end of a process that crashed, exec'd or called `_exit` after its trailer; it is not
//! damage.
//!
//! Page events (direct `mmap` & co., format op 11) are merged into the same order but are not
//! heap operations: the iterator never yields them, so conversion, planning and replay see the
//! heap alone. A consumer that wants them asks with [`TraceReader::keep_pages`] and drains them
//! with [`TraceReader::take_pages`] before each step.

use crate::format::{self as f, EndKind, Op, PageOp};
use heaplab_model::varint::{get_varint, unzigzag};
use heaplab_model::{FileKind, Input, InputError, InputErrorKind as K, Wanted};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, VecDeque};
use std::io::Read;

/// Which process image a trace belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    /// The program `heaplab trace` started.
    Root,
    /// A child created by fork (its own file, named by pid).
    ForkChild,
    /// A program image started by exec in a traced process tree.
    Exec,
    /// A value this reader does not know.
    Other(u8),
}

impl Origin {
    /// A short word for reports.
    pub fn name(self) -> &'static str {
        match self {
            Origin::Root => "root",
            Origin::ForkChild => "fork child",
            Origin::Exec => "exec'd image",
            Origin::Other(_) => "unknown",
        }
    }
}

/// The page sizes a header may give: powers of two from 512 B to 1 GiB. Every base page size
/// Linux has used (4 KiB to 256 KiB) is inside with room; anything else is a damaged header
/// (0 would drop valloc's alignment in a replay, and 3 would silently become 4).
pub const PAGE_SIZES: std::ops::RangeInclusive<u32> = 512..=1 << 30;

/// The file header.
#[derive(Clone, Debug)]
pub struct Header {
    /// Format version.
    pub version: u16,
    /// Process id of the traced process.
    pub pid: u32,
    /// Its parent's process id.
    pub ppid: u32,
    /// Page size of the machine: a power of two in [`PAGE_SIZES`] (checked on reading).
    pub page_size: u32,
    /// Timestamps are monotonic nanoseconds shifted right by this.
    pub clock_shift: u8,
    /// Call-stack depth recorded per site (0: no call sites).
    pub stack_depth: u8,
    /// Root, fork child or exec'd image.
    pub origin: Origin,
    /// Monotonic clock at the start, ns.
    pub start_mono_ns: u64,
    /// Wall clock at the start, ns since the Unix epoch.
    pub start_real_ns: u64,
    /// For a fork child: the parent's pid.
    pub parent_pid: u32,
    /// For a fork child: the parent's sequence number at the fork.
    pub parent_seq: u64,
    /// The executable (from /proc/self/exe).
    pub exe: String,
    /// The command line.
    pub args: Vec<String>,
    /// Header length in bytes.
    pub len: u64,
}

impl Header {
    /// Converts a timestamp in clock units to ns since the trace started.
    pub fn ns_since_start(&self, ts: u64) -> u64 {
        (ts << self.clock_shift).saturating_sub(self.start_mono_ns)
    }
}

/// A mapped executable module, for symbolising call sites offline.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Module {
    /// First address of the mapping.
    pub start: u64,
    /// End address (exclusive).
    pub end: u64,
    /// Offset of the mapping in the file.
    pub offset: u64,
    /// The file's path.
    pub path: String,
}

/// The trailer written when the process ended through exit, `_exit` or a fatal signal.
#[derive(Clone, Debug)]
pub struct Trailer {
    /// How the process ended.
    pub end: EndKind,
    /// Sequence numbers handed out when the trailer was written.
    pub seq_count: u64,
    /// Timestamp at the trailer (clock units).
    pub end_ts: u64,
    /// Peak resident set size (VmHWM) in bytes, as the kernel counted it.
    pub peak_rss: u64,
    /// Peak virtual size (VmPeak) in bytes.
    pub peak_vm: u64,
    /// free(NULL) calls, which are counted rather than recorded.
    pub free_null: u64,
    /// Executable mappings at the end.
    pub modules: Vec<Module>,
}

/// A call site: the return address of the call and, with `--stack-depth` > 1, its callers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Site {
    /// Its id in the trace (1-based; 0 means unknown).
    pub id: u32,
    /// The tracer's hash of the frames.
    pub hash: u64,
    /// Return addresses, innermost first.
    pub frames: Vec<u64>,
}

/// One recorded call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Event {
    /// Sequence number (global order within the process).
    pub seq: u64,
    /// realloc/reallocarray: sequence number of the allocation half; otherwise = `seq`.
    pub seq2: u64,
    /// Thread id.
    pub tid: u32,
    /// Timestamp in clock units (see [`Header::clock_shift`]).
    pub ts: u64,
    /// The function called.
    pub op: Op,
    /// Input pointer (free, realloc), 0 for NULL.
    pub ptr_in: u64,
    /// Result pointer (allocations, realloc), 0 for NULL.
    pub ptr_out: u64,
    /// The size argument.
    pub size: u64,
    /// The element count (calloc, reallocarray) or alignment (aligned ops); 0 otherwise.
    pub extra: u64,
    /// malloc_usable_size of the result (0 when NULL).
    pub usable: u64,
    /// Call-site id (0 when not recorded).
    pub site: u32,
}

impl Event {
    /// Bytes the program asked for (count × size for calloc and reallocarray, saturating).
    pub fn requested(&self) -> u64 {
        if self.op.has_count() {
            self.size.saturating_mul(self.extra)
        } else {
            self.size
        }
    }

    /// Required alignment in bytes (1 when the call has none); valloc/pvalloc use `page`.
    pub fn alignment(&self, page: u64) -> u64 {
        match self.op {
            _ if self.op.has_alignment() => self.extra.max(1),
            Op::Valloc | Op::Pvalloc => page.max(1),
            _ => 1,
        }
    }

    /// Whether this call released `ptr_in`: every free, and a realloc that succeeded or
    /// freed its input with size 0.
    pub fn releases(&self) -> bool {
        match self.op {
            Op::Free => true,
            Op::Realloc | Op::Reallocarray => self.ptr_in != 0 && (self.ptr_out != 0 || self.requested() == 0),
            _ => false,
        }
    }
}

/// One direct address-space call (format op 11): the program's own `mmap`, `munmap`, `mremap`,
/// `mprotect`, `brk` or `sbrk`, not the allocator's (see the format notes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PageEvent {
    /// Sequence number (the same order as the heap events).
    pub seq: u64,
    /// Thread id.
    pub tid: u32,
    /// Timestamp in clock units.
    pub ts: u64,
    /// The function called.
    pub op: PageOp,
    /// The call failed and changed nothing.
    pub failed: bool,
    /// mmap: the mapping made; munmap, mremap, mprotect: the range given; brk, sbrk: the
    /// program break before the call.
    pub addr: u64,
    /// Length in bytes (mremap: the old length; brk, sbrk: 0).
    pub len: u64,
    /// mremap: where the mapping is now; brk, sbrk: the break after (asked for, when failed).
    pub new_addr: u64,
    /// mremap: the new length.
    pub new_len: u64,
    /// mmap, mremap: the flags.
    pub flags: u64,
    /// mmap, mprotect: the protection.
    pub prot: u64,
}

/// Which part of a call a [`Step`] is. realloc is two steps (table 3.1 of the thesis: free,
/// then malloc) with their own sequence numbers; other calls are one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Half {
    /// The whole call (every op but realloc and reallocarray).
    Whole,
    /// The release of a realloc's input (at `seq`).
    Release,
    /// The allocation of a realloc's result (at `seq2`).
    Acquire,
}

/// One item of the merged stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Step {
    /// Which part of the call.
    pub half: Half,
    /// The call.
    pub event: Event,
}

impl Step {
    /// The sequence number at which this step happened.
    pub fn seq(&self) -> u64 {
        if self.half == Half::Acquire {
            self.event.seq2
        } else {
            self.event.seq
        }
    }
}

/// Where and why a trace stops being readable.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Damage {
    /// Byte offset of the problem.
    pub offset: u64,
    /// What is wrong.
    pub reason: String,
    /// Every event with a sequence number below this was delivered; none from here on.
    pub usable_below: u64,
}

/// What the reader found once the stream is exhausted.
#[derive(Clone, Debug, Default)]
pub struct Ending {
    /// The trailer, when the process wrote one.
    pub trailer: Option<Trailer>,
    /// Damage that cut the stream short.
    pub damage: Option<Damage>,
    /// The problem with a trailer that could not be decoded (events are unaffected).
    pub trailer_error: Option<String>,
    /// File size in bytes.
    pub file_bytes: u64,
    /// Steps delivered.
    pub steps: u64,
    /// Calls delivered (a realloc is one call, two steps).
    pub calls: u64,
    /// Last sequence number delivered.
    pub last_seq: Option<u64>,
    /// Call sites defined in the trace, by id.
    pub sites: HashMap<u32, Site>,
    /// Page events merged (delivered through [`TraceReader::take_pages`] or not).
    pub page_calls: u64,
}

impl Ending {
    /// Whether the trace ends with a trailer and no damage.
    pub fn is_complete(&self) -> bool {
        self.trailer.is_some() && self.damage.is_none()
    }
}

/// A window being merged: its undelivered payload and the decoding state.
struct Window {
    buf: Vec<u8>,
    pos: usize,
    end: usize,
    tid: u32,
    sites: bool,
    state: Delta,
    next: Option<Merged>,
}

/// An event the merge orders: a heap call (yielded as steps) or a page event (queued aside).
#[derive(Clone, Copy)]
enum Merged {
    Heap(Event),
    Page(PageEvent),
}

impl Merged {
    fn seq(&self) -> u64 {
        match self {
            Merged::Heap(e) => e.seq,
            Merged::Page(p) => p.seq,
        }
    }
}

/// The delta-decoding state of one window.
#[derive(Clone, Copy)]
struct Delta {
    last_seq: u64,
    last_ts: u64,
    last_ptr: u64,
}

enum Item {
    Event(Event),
    Page(PageEvent),
    Site(Site),
}

/// Decodes the item at `buf[*pos]`; `Ok(None)` at the end of the payload.
fn decode(buf: &[u8], pos: &mut usize, st: &mut Delta, tid: u32, sites: bool) -> Result<Option<Item>, &'static str> {
    let Some(&h) = buf.get(*pos) else { return Ok(None) };
    if h == 0 {
        return Ok(None);
    }
    *pos += 1;
    let v = |pos: &mut usize| get_varint(buf, pos).ok_or("malformed or cut varint");
    let code = h & 0x0f;
    if code == f::OP_SITE {
        let id = v(pos)?;
        let hash = v(pos)?;
        let n = v(pos)?;
        if n > 256 || id == 0 || id > u32::MAX as u64 {
            return Err("implausible call-site definition");
        }
        let mut frames = Vec::with_capacity(n as usize);
        for _ in 0..n {
            frames.push(v(pos)?);
        }
        return Ok(Some(Item::Site(Site { id: id as u32, hash, frames })));
    }
    let op = if code == f::OP_PAGES { None } else { Some(Op::from_code(code).ok_or("unknown operation code")?) };
    let seq = if h & f::F_SEQ != 0 { st.last_seq.wrapping_add(1).checked_add(v(pos)?) } else { Some(st.last_seq.wrapping_add(1)) }
        .ok_or("sequence number overflows")?;
    let ts = if h & f::F_TS != 0 { st.last_ts.checked_add(v(pos)?).ok_or("timestamp overflows")? } else { st.last_ts };
    let Some(op) = op else {
        let p = decode_page(h, seq, tid, ts, &mut || v(pos))?;
        st.last_seq = seq;
        st.last_ts = ts;
        return Ok(Some(Item::Page(p)));
    };
    let unit: u64 = if h & f::F_RAW != 0 { 1 } else { 16 };
    let delta = |base: u64, raw: u64| base.wrapping_add((unzigzag(raw) as u64).wrapping_mul(unit));
    let null = h & f::F_NULL != 0;
    let mut e = Event { seq, seq2: seq, tid, ts, op, ptr_in: 0, ptr_out: 0, size: 0, extra: 0, usable: 0, site: 0 };
    match op {
        Op::Free => e.ptr_in = delta(st.last_ptr, v(pos)?),
        Op::Realloc | Op::Reallocarray => {
            if !null {
                e.ptr_in = delta(st.last_ptr, v(pos)?);
            }
            if op == Op::Reallocarray {
                e.extra = v(pos)?;
            }
            e.size = v(pos)?;
            e.seq2 = seq.checked_add(1).and_then(|s| s.checked_add(v(pos).ok()?)).ok_or("sequence number overflows")?;
            let out = v(pos)?;
            if out != 0 {
                let base = if e.ptr_in != 0 { e.ptr_in } else { st.last_ptr };
                e.ptr_out = delta(base, out - 1);
                let req = if op == Op::Reallocarray { e.size.wrapping_mul(e.extra) } else { e.size };
                e.usable = req.wrapping_add(unzigzag(v(pos)?) as u64);
            }
        }
        _ => {
            if op.has_alignment() || op == Op::Calloc {
                e.extra = v(pos)?;
            }
            e.size = v(pos)?;
            if !null {
                e.ptr_out = delta(st.last_ptr, v(pos)?);
                let req = if op == Op::Calloc { e.size.wrapping_mul(e.extra) } else { e.size };
                e.usable = req.wrapping_add(unzigzag(v(pos)?) as u64);
            }
        }
    }
    if sites && op != Op::Free {
        e.site = u32::try_from(v(pos)?).map_err(|_| "call-site id out of range")?;
    }
    st.last_seq = e.seq2;
    st.last_ts = ts;
    if e.ptr_out != 0 {
        st.last_ptr = e.ptr_out;
    } else if e.ptr_in != 0 {
        st.last_ptr = e.ptr_in;
    }
    Ok(Some(Item::Event(e)))
}

/// Decodes the fields of a page event (op 11) after its sequence and timestamp deltas.
fn decode_page(h: u8, seq: u64, tid: u32, ts: u64, v: &mut dyn FnMut() -> Result<u64, &'static str>) -> Result<PageEvent, &'static str> {
    let op = PageOp::from_code(v()?).ok_or("unknown page operation")?;
    let failed = h & f::F_NULL != 0;
    let mut p = PageEvent { seq, tid, ts, op, failed, addr: 0, len: 0, new_addr: 0, new_len: 0, flags: 0, prot: 0 };
    match op {
        PageOp::Mmap => {
            p.len = v()?;
            p.prot = v()?;
            p.flags = v()?;
            if !failed {
                p.addr = v()?;
            }
        }
        PageOp::Munmap => {
            p.addr = v()?;
            p.len = v()?;
        }
        PageOp::Mremap => {
            p.addr = v()?;
            p.len = v()?;
            p.new_len = v()?;
            p.flags = v()?;
            if !failed {
                p.new_addr = v()?;
            }
        }
        PageOp::Mprotect => {
            p.addr = v()?;
            p.len = v()?;
            p.prot = v()?;
        }
        PageOp::Brk | PageOp::Sbrk => {
            p.addr = v()?;
            p.new_addr = v()?;
        }
    }
    Ok(p)
}

/// Decodes the window's next event into `w.next`; false when it has none.
fn pull(w: &mut Window) -> bool {
    while w.pos < w.end {
        // Validated when loaded; a failure here cannot happen, but would end the window.
        match decode(&w.buf[..w.end], &mut w.pos, &mut w.state, w.tid, w.sites) {
            Ok(Some(Item::Event(e))) => {
                w.next = Some(Merged::Heap(e));
                return true;
            }
            Ok(Some(Item::Page(p))) => {
                w.next = Some(Merged::Page(p));
                return true;
            }
            Ok(Some(Item::Site(_))) => {}
            _ => break,
        }
    }
    w.next = None;
    false
}

/// What [`TraceReader::skim`] counts.
#[derive(Clone, Debug)]
pub struct Skim {
    /// Calls per function.
    pub calls: std::collections::BTreeMap<Op, u64>,
    /// Calls per thread id.
    pub threads: std::collections::BTreeMap<u32, u64>,
    /// Page events per function.
    pub pages: std::collections::BTreeMap<PageOp, u64>,
    /// Trailer, damage and file size (`calls` holds the total).
    pub ending: Ending,
}

/// A record header as read from the file.
#[derive(Clone, Copy, Debug)]
struct RecordHead {
    offset: u64,
    kind: u8,
    flags: u8,
    capacity: u32,
    tid: u32,
    floor: u64,
    base_ts: u64,
}

/// Records larger than this are corrupt (the tracer's are at most 1 MiB).
const MAX_RECORD: u32 = 64 << 20;

/// The streaming reader; iterate it for [`Step`]s in sequence order, then call [`ending`].
///
/// [`ending`]: TraceReader::ending
pub struct TraceReader<R: Read> {
    r: R,
    name: String,
    header: Header,
    offset: u64,
    lookahead: Option<RecordHead>,
    exhausted: bool,
    windows: Vec<Window>,
    free_slots: Vec<usize>,
    heap: BinaryHeap<Reverse<(u64, usize)>>,
    /// realloc allocation halves waiting for their turn: (seq2, ticket), and the events by
    /// ticket (a counter: corrupt input may repeat sequence numbers).
    pending: BinaryHeap<Reverse<(u64, u64)>>,
    pending_events: HashMap<u64, Event>,
    tickets: u64,
    /// Page events merged but not yet taken, when [`TraceReader::keep_pages`] asked for them.
    pages: Option<VecDeque<PageEvent>>,
    limit: u64,
    last_floor: u64,
    ending: Ending,
}

impl TraceReader<Input> {
    /// Opens a trace file (or `-`, standard input; pipes work) and reads its header. Errors
    /// name the file.
    pub fn open(path: &str) -> Result<Self, InputError> {
        TraceReader::from_input(Input::open(path)?)
    }

    /// Reads the header of an opened input; any other kind of file is an error that says what
    /// it is.
    pub fn from_input(mut input: Input) -> Result<Self, InputError> {
        if input.kind()? != FileKind::Trace {
            return Err(input.wrong_kind(Wanted::Trace));
        }
        let len = input.len().unwrap_or(0);
        let name = input.name().to_string();
        let mut r = TraceReader::new(input, &name)?;
        r.ending.file_bytes = len;
        Ok(r)
    }

    /// The input being read (to [`Input::reread`] it for a second pass).
    pub fn get_ref(&self) -> &Input {
        &self.r
    }
}

fn read_full<R: Read>(r: &mut R, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}
fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}
fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

impl<R: Read> TraceReader<R> {
    /// Reads the header from `r`; `name` is used in messages.
    pub fn new(mut r: R, name: &str) -> Result<Self, InputError> {
        let err = |m: String| InputError::file(name, K::Format, m);
        let mut fixed = [0u8; f::HEADER_FIXED];
        let n = read_full(&mut r, &mut fixed).map_err(|e| InputError::file(name, K::Io, format!("cannot read: {e}")))?;
        if n < 8 || &fixed[..8] != f::MAGIC {
            return Err(err("not a heaplab trace (bad magic; expected a file written by `heaplab trace`)".into()));
        }
        if n < f::HEADER_FIXED {
            return Err(err(format!("truncated: the file ends inside the header ({n} of {} bytes)", f::HEADER_FIXED)));
        }
        let version = u16_at(&fixed, 8);
        if !(f::MIN_VERSION..=f::VERSION).contains(&version) {
            return Err(err(format!("trace format version {version}; this heaplab reads versions {} to {}", f::MIN_VERSION, f::VERSION)));
        }
        let len = u32_at(&fixed, 12) as usize;
        if !(f::HEADER_FIXED + 4..=1 << 16).contains(&len) {
            return Err(err(format!("corrupt header: length {len} out of range")));
        }
        let mut rest = vec![0u8; len - f::HEADER_FIXED];
        let got = read_full(&mut r, &mut rest).map_err(|e| InputError::file(name, K::Io, format!("cannot read: {e}")))?;
        if got < rest.len() {
            return Err(err(format!("truncated: the file ends inside the header ({} of {len} bytes)", f::HEADER_FIXED + got)));
        }
        let string = |at: usize| -> Result<(String, usize), InputError> {
            let l = rest.get(at..at + 2).map(|b| u16_at(b, 0) as usize).ok_or_else(|| err("corrupt header strings".into()))?;
            let s = rest.get(at + 2..at + 2 + l).ok_or_else(|| err("corrupt header strings".into()))?;
            Ok((String::from_utf8_lossy(s).into_owned(), at + 2 + l))
        };
        let (exe, next) = string(0)?;
        let (cmd, _) = string(next)?;
        let args = cmd.split('\0').filter(|s| !s.is_empty()).map(str::to_string).collect();
        let origin = match fixed[30] {
            f::ORIGIN_ROOT => Origin::Root,
            f::ORIGIN_FORK => Origin::ForkChild,
            f::ORIGIN_IMAGE => Origin::Exec,
            o => Origin::Other(o),
        };
        let clock_shift = fixed[28];
        if clock_shift > 40 {
            return Err(err(format!("corrupt header: clock shift {clock_shift}")));
        }
        let page_size = u32_at(&fixed, 24);
        if !page_size.is_power_of_two() || !PAGE_SIZES.contains(&page_size) {
            return Err(err(format!("corrupt header: page size {page_size} at byte 24 (expected a power of two from 512 B to 1 GiB)")));
        }
        let header = Header {
            version,
            pid: u32_at(&fixed, 16),
            ppid: u32_at(&fixed, 20),
            page_size,
            clock_shift,
            stack_depth: fixed[29],
            origin,
            start_mono_ns: u64_at(&fixed, 32),
            start_real_ns: u64_at(&fixed, 40),
            parent_pid: u32_at(&fixed, 48),
            parent_seq: u64_at(&fixed, 56),
            exe,
            args,
            len: len as u64,
        };
        let mut tr = TraceReader {
            r,
            name: name.to_string(),
            header,
            offset: len as u64,
            lookahead: None,
            exhausted: false,
            windows: Vec::new(),
            free_slots: Vec::new(),
            heap: BinaryHeap::new(),
            pending: BinaryHeap::new(),
            pending_events: HashMap::new(),
            tickets: 0,
            pages: None,
            limit: u64::MAX,
            last_floor: 0,
            ending: Ending::default(),
        };
        tr.advance_lookahead();
        Ok(tr)
    }

    /// The header.
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// The file name given to the reader.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// What was found at the end; complete once the iterator has returned `None`.
    pub fn ending(&self) -> &Ending {
        &self.ending
    }

    /// Keeps the page events (direct mmap & co.) the merge passes, in order, for
    /// [`take_pages`](TraceReader::take_pages); without this they are counted and dropped.
    pub fn keep_pages(&mut self) {
        self.pages.get_or_insert_with(VecDeque::new);
    }

    /// The page events merged since the last call: every one with a sequence number below
    /// the step just yielded (after the iterator ends: all the rest). Drain it before each
    /// step to see page and heap events in one order.
    pub fn take_pages(&mut self) -> impl Iterator<Item = PageEvent> + '_ {
        self.pages.iter_mut().flat_map(|q| q.drain(..))
    }

    /// Consumes the reader, returning the ending.
    pub fn into_ending(self) -> Ending {
        self.ending
    }

    fn damage(&mut self, offset: u64, reason: String, usable_below: u64) {
        if self.ending.damage.is_none() {
            self.ending.damage = Some(Damage { offset, reason, usable_below });
        }
        self.limit = self.limit.min(usable_below);
        self.exhausted = true;
        self.lookahead = None;
    }

    /// Reads record headers until the next event window (kept as the lookahead) or the end,
    /// consuming padding and trailers on the way.
    fn advance_lookahead(&mut self) {
        self.lookahead = None;
        while !self.exhausted {
            let at = self.offset;
            let mut h = [0u8; f::RECORD_HEADER];
            let n = match read_full(&mut self.r, &mut h) {
                Ok(n) => n,
                Err(e) => return self.damage(at, format!("read error: {e}"), self.last_floor),
            };
            if n == 0 || (n > 0 && h[0] == 0) {
                // End of records: EOF at a boundary, or the zero tail a process leaves when it
                // ends without cutting its file (crash, exec, _exit before the trailer).
                self.exhausted = true;
                return;
            }
            if n < f::RECORD_HEADER {
                let below = self.last_floor; // the lost window's floor is at least this
                return self.damage(at, format!("truncated: the file ends inside the record header at byte {at}"), below);
            }
            self.offset += f::RECORD_HEADER as u64;
            let head = RecordHead {
                offset: at,
                kind: h[0],
                flags: h[1],
                capacity: u32_at(&h, 4),
                tid: u32_at(&h, 8),
                floor: u64_at(&h, 16),
                base_ts: u64_at(&h, 24),
            };
            if head.capacity > MAX_RECORD {
                return self.damage(at, format!("corrupt record header at byte {at}: capacity {}", head.capacity), self.last_floor);
            }
            match head.kind {
                f::KIND_EVENTS => {
                    if head.floor < self.last_floor {
                        return self.damage(at, format!("corrupt record at byte {at}: window floors go backwards"), self.last_floor);
                    }
                    self.last_floor = head.floor;
                    self.lookahead = Some(head);
                    return;
                }
                f::KIND_PADDING | f::KIND_TRAILER => {
                    let mut payload = vec![0u8; head.capacity as usize];
                    let got = match read_full(&mut self.r, &mut payload) {
                        Ok(g) => g,
                        Err(e) => return self.damage(at, format!("read error: {e}"), self.last_floor),
                    };
                    self.offset += got as u64;
                    if got < payload.len() {
                        let what = if head.kind == f::KIND_TRAILER { "trailer" } else { "padding record" };
                        return self.damage(at, format!("truncated: the file ends inside the {what} at byte {at}"), self.last_floor);
                    }
                    if head.kind == f::KIND_TRAILER && self.ending.trailer.is_none() {
                        match parse_trailer(&payload) {
                            Ok(t) => self.ending.trailer = Some(t),
                            Err(e) => self.ending.trailer_error = Some(format!("trailer at byte {at}: {e}")),
                        }
                    }
                }
                k => {
                    return self.damage(at, format!("corrupt record at byte {at}: unknown kind {k:#04x}"), self.last_floor);
                }
            }
        }
    }

    /// Reads and validates the lookahead window's payload (recording damage and call sites),
    /// calling `each` for every good event, and moves the lookahead on.
    fn read_window(&mut self, mut each: impl FnMut(&Item)) -> Option<Window> {
        let head = self.lookahead.take()?;
        let mut buf = vec![0u8; head.capacity as usize];
        let got = match read_full(&mut self.r, &mut buf) {
            Ok(g) => g,
            Err(e) => {
                self.damage(head.offset, format!("read error: {e}"), head.floor);
                return None;
            }
        };
        let payload_at = self.offset;
        self.offset += got as u64;
        buf.truncate(got);
        let sites = head.flags & f::RECORD_SITES != 0;
        let start = Delta { last_seq: head.floor.wrapping_sub(1), last_ts: head.base_ts, last_ptr: 0 };
        // Validation pass: find the end of the good payload, collect call-site definitions.
        let (mut pos, mut st) = (0usize, start);
        let mut problem = None;
        loop {
            let before = pos;
            match decode(&buf, &mut pos, &mut st, head.tid, sites) {
                Ok(None) => break,
                Ok(Some(Item::Site(s))) => {
                    self.ending.sites.insert(s.id, s);
                }
                Ok(Some(item)) => each(&item),
                Err(e) => {
                    pos = before;
                    problem = Some(e);
                    break;
                }
            }
        }
        let cut = got < head.capacity as usize;
        if let Some(e) = problem {
            let at = payload_at + pos as u64;
            let what = if cut && pos + 24 >= got { "truncated: the file ends inside an event".to_string() } else { format!("corrupt event: {e}") };
            self.damage(at, format!("{what} at byte {at} (thread {}'s window at byte {})", head.tid, head.offset), head.floor);
        } else if cut {
            let at = payload_at + got as u64;
            self.damage(at, format!("truncated: the file ends at byte {at}, inside thread {}'s window at byte {}", head.tid, head.offset), head.floor);
        }
        if !self.exhausted {
            self.advance_lookahead();
        }
        Some(Window { buf, pos: 0, end: pos, tid: head.tid, sites, state: start, next: None })
    }

    /// Loads the lookahead window and queues its first event.
    fn load_window(&mut self) {
        let Some(mut w) = self.read_window(|_| {}) else { return };
        if pull(&mut w) {
            let key = w.next.map_or(u64::MAX, |e| e.seq());
            let slot = match self.free_slots.pop() {
                Some(s) => {
                    self.windows[s] = w;
                    s
                }
                None => {
                    self.windows.push(w);
                    self.windows.len() - 1
                }
            };
            self.heap.push(Reverse((key, slot)));
        }
    }

    /// Counts calls per function and per thread by reading the windows once in file order,
    /// without merging them by sequence number or tracking blocks: a fraction of the cost of
    /// iterating. Damage is recorded in the ending as usual (counts then cover what was read).
    pub fn skim(mut self) -> Skim {
        let mut calls = std::collections::BTreeMap::new();
        let mut threads = std::collections::BTreeMap::new();
        let mut pages = std::collections::BTreeMap::new();
        while self.lookahead.is_some() {
            self.read_window(|item| match item {
                Item::Event(e) => {
                    *calls.entry(e.op).or_insert(0u64) += 1;
                    *threads.entry(e.tid).or_insert(0u64) += 1;
                }
                Item::Page(p) => *pages.entry(p.op).or_insert(0u64) += 1,
                Item::Site(_) => {}
            });
        }
        self.ending.calls = calls.values().sum();
        self.ending.page_calls = pages.values().sum();
        Skim { calls, threads, pages, ending: self.ending }
    }

    fn min_key(&self) -> u64 {
        let a = self.heap.peek().map(|Reverse((k, _))| *k).unwrap_or(u64::MAX);
        let b = self.pending.peek().map(|Reverse((k, _))| *k).unwrap_or(u64::MAX);
        a.min(b)
    }
}

impl<R: Read> Iterator for TraceReader<R> {
    type Item = Step;

    fn next(&mut self) -> Option<Step> {
        loop {
            // Load every window that may hold an event at or below the smallest pending key.
            while let Some(h) = self.lookahead {
                if h.floor <= self.min_key() {
                    self.load_window();
                } else {
                    break;
                }
            }
            let key = self.min_key();
            if key == u64::MAX || key >= self.limit {
                return None;
            }
            let from_pending = self.pending.peek().map(|Reverse((k, _))| *k) == Some(key);
            let step = if from_pending {
                let Reverse((_, ticket)) = self.pending.pop().expect("peeked");
                let event = self.pending_events.remove(&ticket).expect("every ticket has its event");
                Step { half: Half::Acquire, event }
            } else {
                let Reverse((_, slot)) = self.heap.pop().expect("peeked");
                let w = &mut self.windows[slot];
                let merged = w.next.take().expect("queued window has an event");
                if pull(w) {
                    let k = w.next.map_or(u64::MAX, |e| e.seq());
                    self.heap.push(Reverse((k, slot)));
                } else {
                    w.buf = Vec::new(); // a finished window keeps no memory
                    self.free_slots.push(slot);
                }
                let event = match merged {
                    Merged::Heap(e) => e,
                    Merged::Page(p) => {
                        // Not a heap step: set aside for take_pages, or dropped.
                        self.ending.page_calls += 1;
                        if let Some(q) = self.pages.as_mut() {
                            q.push_back(p);
                        }
                        continue;
                    }
                };
                self.ending.calls += 1;
                if event.op.is_realloc() {
                    self.tickets += 1;
                    self.pending.push(Reverse((event.seq2, self.tickets)));
                    self.pending_events.insert(self.tickets, event);
                    Step { half: Half::Release, event }
                } else {
                    Step { half: Half::Whole, event }
                }
            };
            self.ending.steps += 1;
            self.ending.last_seq = Some(step.seq());
            return Some(step);
        }
    }
}

fn parse_trailer(b: &[u8]) -> Result<Trailer, &'static str> {
    let mut pos = 0;
    let mut v = || get_varint(b, &mut pos).ok_or("malformed varint");
    let kind = v()?;
    let code = v()? as i64;
    let seq_count = v()?;
    let end_ts = v()?;
    let hwm = v()?;
    let peak = v()?;
    let free_null = v()?;
    let n = v()?;
    if n > 100_000 {
        return Err("implausible module count");
    }
    let mut modules = Vec::new();
    for _ in 0..n {
        let start = get_varint(b, &mut pos).ok_or("malformed varint")?;
        let end = get_varint(b, &mut pos).ok_or("malformed varint")?;
        let offset = get_varint(b, &mut pos).ok_or("malformed varint")?;
        let len = get_varint(b, &mut pos).ok_or("malformed varint")? as usize;
        let path = b.get(pos..pos.saturating_add(len)).ok_or("module path cut")?;
        pos += len;
        modules.push(Module { start, end, offset, path: String::from_utf8_lossy(path).into_owned() });
    }
    if b.get(pos..pos + 6) != Some(&f::TRAILER_END[..]) {
        return Err("end marker missing");
    }
    Ok(Trailer {
        end: EndKind::from_code(kind, code),
        seq_count,
        end_ts,
        peak_rss: hwm.saturating_mul(1024),
        peak_vm: peak.saturating_mul(1024),
        free_null,
        modules,
    })
}
