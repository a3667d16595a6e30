//! A Rust encoder of the `.hltrace` format, byte-compatible with the C tracer's. It lets tests
//! build traces with known content (round trips, damage at every byte) and lets other tools
//! emit traces heaplab can read.

use crate::format::{self as f, Op, PageOp};
use heaplab_model::varint::{put_varint, zigzag};
use crate::reader::{Event, PageEvent, Trailer};

/// Builds a trace in memory.
pub struct TraceWriter {
    out: Vec<u8>,
    window: Option<usize>,
    sites: bool,
    last_seq: u64,
    last_ts: u64,
    last_ptr: u64,
}

/// Header fields a writer needs.
#[derive(Clone, Debug)]
pub struct WriterHeader {
    /// Process id.
    pub pid: u32,
    /// Executable path.
    pub exe: String,
    /// Page size.
    pub page_size: u32,
    /// Timestamp shift.
    pub clock_shift: u8,
    /// Stack depth (call-site ids are written when > 0).
    pub stack_depth: u8,
    /// Monotonic start, ns.
    pub start_mono_ns: u64,
}

impl TraceWriter {
    /// Starts a trace with this header.
    pub fn new(h: &WriterHeader) -> TraceWriter {
        let exe = h.exe.as_bytes();
        let exe = &exe[..exe.len().min(1024)];
        let len = (f::HEADER_FIXED + 2 + exe.len() + 2 + 31) & !31;
        let mut out = vec![0u8; len];
        out[..8].copy_from_slice(f::MAGIC);
        out[8..10].copy_from_slice(&f::VERSION.to_le_bytes());
        out[10..12].copy_from_slice(&u16::from(h.stack_depth > 0).to_le_bytes());
        out[12..16].copy_from_slice(&(len as u32).to_le_bytes());
        out[16..20].copy_from_slice(&h.pid.to_le_bytes());
        out[24..28].copy_from_slice(&h.page_size.to_le_bytes());
        out[28] = h.clock_shift;
        out[29] = h.stack_depth;
        out[31] = 1;
        out[32..40].copy_from_slice(&h.start_mono_ns.to_le_bytes());
        out[64..66].copy_from_slice(&(exe.len() as u16).to_le_bytes());
        out[66..66 + exe.len()].copy_from_slice(exe);
        TraceWriter { out, window: None, sites: h.stack_depth > 0, last_seq: 0, last_ts: 0, last_ptr: 0 }
    }

    fn close(&mut self) {
        if let Some(start) = self.window.take() {
            let cap = (self.out.len() - start - f::RECORD_HEADER) as u32;
            self.out[start + 4..start + 8].copy_from_slice(&cap.to_le_bytes());
        }
    }

    fn record(&mut self, kind: u8, tid: u32, floor: u64, base_ts: u64) -> usize {
        self.close();
        let start = self.out.len();
        let mut h = [0u8; f::RECORD_HEADER];
        h[0] = kind;
        h[1] = if self.sites && kind == f::KIND_EVENTS { f::RECORD_SITES } else { 0 };
        h[8..12].copy_from_slice(&tid.to_le_bytes());
        h[16..24].copy_from_slice(&floor.to_le_bytes());
        h[24..32].copy_from_slice(&base_ts.to_le_bytes());
        self.out.extend_from_slice(&h);
        start
    }

    /// Starts a window of thread `tid`; its events must have sequence numbers ≥ `floor`, and
    /// floors must not decrease from one window to the next.
    pub fn begin_window(&mut self, tid: u32, floor: u64, base_ts: u64) {
        let start = self.record(f::KIND_EVENTS, tid, floor, base_ts);
        self.window = Some(start);
        self.last_seq = floor.wrapping_sub(1);
        self.last_ts = base_ts;
        self.last_ptr = 0;
    }

    /// Appends a call to the current window (as the C tracer encodes it).
    pub fn event(&mut self, e: &Event) {
        assert!(self.window.is_some(), "begin_window first");
        let mut b = Vec::with_capacity(64);
        let mut h = e.op as u8 | self.order(&mut b, e.seq, e.seq2, e.ts);
        let d_in = e.ptr_in.wrapping_sub(self.last_ptr) as i64;
        let base2 = if e.ptr_in != 0 { e.ptr_in } else { self.last_ptr };
        let d_out = e.ptr_out.wrapping_sub(base2) as i64;
        let raw = (e.ptr_in != 0 && d_in & 15 != 0) || (e.ptr_out != 0 && d_out & 15 != 0);
        if raw {
            h |= f::F_RAW;
        }
        let sh = if raw { 0 } else { 4 };
        match e.op {
            Op::Free => put_varint(&mut b, zigzag(d_in >> sh)),
            Op::Realloc | Op::Reallocarray => {
                if e.ptr_in == 0 {
                    h |= f::F_NULL;
                } else {
                    put_varint(&mut b, zigzag(d_in >> sh));
                }
                if e.op == Op::Reallocarray {
                    put_varint(&mut b, e.extra);
                }
                put_varint(&mut b, e.size);
                put_varint(&mut b, e.seq2 - e.seq - 1);
                put_varint(&mut b, if e.ptr_out != 0 { zigzag(d_out >> sh) + 1 } else { 0 });
                if e.ptr_out != 0 {
                    let req = if e.op == Op::Reallocarray { e.size.wrapping_mul(e.extra) } else { e.size };
                    put_varint(&mut b, zigzag(e.usable.wrapping_sub(req) as i64));
                }
            }
            op => {
                if op.has_alignment() || op == Op::Calloc {
                    put_varint(&mut b, e.extra);
                }
                put_varint(&mut b, e.size);
                if e.ptr_out == 0 {
                    h |= f::F_NULL;
                } else {
                    put_varint(&mut b, zigzag(d_out >> sh));
                    let req = if op == Op::Calloc { e.size.wrapping_mul(e.extra) } else { e.size };
                    put_varint(&mut b, zigzag(e.usable.wrapping_sub(req) as i64));
                }
            }
        }
        if self.sites && e.op != Op::Free {
            put_varint(&mut b, e.site as u64);
        }
        if e.ptr_out != 0 {
            self.last_ptr = e.ptr_out;
        } else if e.ptr_in != 0 {
            self.last_ptr = e.ptr_in;
        }
        self.out.push(h);
        self.out.extend_from_slice(&b);
    }

    /// Encodes the sequence and timestamp deltas of an event at `seq` (whose last sequence
    /// number is `last`) into `b`, returning the header flags they need.
    fn order(&mut self, b: &mut Vec<u8>, seq: u64, last: u64, ts: u64) -> u8 {
        let mut h = 0;
        let sd = seq.wrapping_sub(self.last_seq).wrapping_sub(1);
        if sd != 0 {
            h |= f::F_SEQ;
            put_varint(b, sd);
        }
        self.last_seq = last;
        if ts != self.last_ts {
            h |= f::F_TS;
            put_varint(b, ts - self.last_ts);
            self.last_ts = ts;
        }
        h
    }

    /// Appends a page event to the current window (as the C tracer encodes it).
    pub fn page(&mut self, p: &PageEvent) {
        assert!(self.window.is_some(), "begin_window first");
        let mut b = Vec::with_capacity(64);
        let mut h = f::OP_PAGES | self.order(&mut b, p.seq, p.seq, p.ts);
        if p.failed {
            h |= f::F_NULL;
        }
        put_varint(&mut b, p.op as u64);
        let fields: &[u64] = match p.op {
            PageOp::Mmap => &[p.len, p.prot, p.flags],
            PageOp::Munmap => &[p.addr, p.len],
            PageOp::Mremap => &[p.addr, p.len, p.new_len, p.flags],
            PageOp::Mprotect => &[p.addr, p.len, p.prot],
            PageOp::Brk | PageOp::Sbrk => &[p.addr, p.new_addr],
        };
        for &v in fields {
            put_varint(&mut b, v);
        }
        match p.op {
            PageOp::Mmap if !p.failed => put_varint(&mut b, p.addr),
            PageOp::Mremap if !p.failed => put_varint(&mut b, p.new_addr),
            _ => {}
        }
        self.out.push(h);
        self.out.extend_from_slice(&b);
    }

    /// Appends a call-site definition to the current window.
    pub fn site(&mut self, id: u32, hash: u64, frames: &[u64]) {
        self.out.push(f::OP_SITE);
        put_varint(&mut self.out, id as u64);
        put_varint(&mut self.out, hash);
        put_varint(&mut self.out, frames.len() as u64);
        for &fr in frames {
            put_varint(&mut self.out, fr);
        }
    }

    /// Appends a trailer record.
    pub fn trailer(&mut self, t: &Trailer, kind: u64, code: i64, floor: u64) {
        let start = self.record(f::KIND_TRAILER, 0, floor, t.end_ts);
        let mut b = Vec::new();
        for v in [kind, code as u64, t.seq_count, t.end_ts, t.peak_rss / 1024, t.peak_vm / 1024, t.free_null, t.modules.len() as u64] {
            put_varint(&mut b, v);
        }
        for m in &t.modules {
            for v in [m.start, m.end, m.offset, m.path.len() as u64] {
                put_varint(&mut b, v);
            }
            b.extend_from_slice(m.path.as_bytes());
        }
        b.extend_from_slice(f::TRAILER_END);
        self.out.extend_from_slice(&b);
        let cap = b.len() as u32;
        self.out[start + 4..start + 8].copy_from_slice(&cap.to_le_bytes());
    }

    /// The finished trace bytes.
    pub fn finish(mut self) -> Vec<u8> {
        self.close();
        self.out
    }
}
