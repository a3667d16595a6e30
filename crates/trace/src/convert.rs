//! Trace → instance: one pass over the merged stream that builds heaplab buffers and the trace
//! statistics together.
//!
//! The rules follow table 3.1 of the thesis (`../shared/papers/000_…`, Ch. 3): every allocation
//! call (malloc, calloc, posix_memalign, aligned_alloc, memalign, valloc, pvalloc) opens a
//! buffer; free closes it; realloc and reallocarray close the old buffer and open a new one, at
//! their own two sequence numbers, even when the block did not move. Further decisions:
//! - buffers never freed end at the end of the trace;
//! - alignment is kept: the aligned calls' alignment (rounded up to a power of two), the page
//!   size for valloc and pvalloc; plain malloc's natural alignment is not a constraint;
//! - a free of a pointer the trace never saw allocated (inherited from a fork parent, from the
//!   loader, or from another allocator) is ignored and counted; so is a failed (NULL)
//!   allocation, and a failed realloc leaves its input live;
//! - an allocation that returns an address still live in the trace (a missed free) closes the
//!   older buffer first, and is counted;
//! - a zero-byte request becomes a 1-byte buffer when sizes are the requested ones.
//!
//! Time models ([`Clock`]) all keep the exact order of the trace, so they give the same
//! conflicts and the same max load: the event index, the allocated-bytes clock (the thesis'
//! choice: time advances by the size of each allocation, frees take no time) and nanoseconds
//! (made strictly increasing by breaking ties in trace order).
//!
//! Page events (the program's direct mmap & co.) feed the statistics only: they never become
//! buffers, so the instance is the heap's alone.

use crate::format::Op;
use crate::reader::{Half, TraceReader};
use crate::stats::{AddressMap, TraceStats, Tracker};
use heaplab_model::{Buffer, Instance};
use std::io::Read;
use std::sync::atomic::{AtomicU64, Ordering};

/// The time axis of the converted instance.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Clock {
    /// One tick per heap operation (a realloc takes two).
    Events,
    /// Bytes allocated so far (the thesis' clock).
    #[default]
    Bytes,
    /// Nanoseconds since the trace started, strictly increasing.
    Ns,
}

impl Clock {
    /// Parses `events`, `bytes` or `ns`.
    pub fn parse(s: &str) -> Option<Clock> {
        match s {
            "events" => Some(Clock::Events),
            "bytes" => Some(Clock::Bytes),
            "ns" => Some(Clock::Ns),
            _ => None,
        }
    }
}

/// Which size a buffer gets.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SizeModel {
    /// What the program asked for (the `requested` column is then omitted).
    #[default]
    Requested,
    /// What the allocator gave (malloc_usable_size); the requested size is kept in the
    /// `requested` column.
    Usable,
}

impl SizeModel {
    /// Parses `requested` or `usable`.
    pub fn parse(s: &str) -> Option<SizeModel> {
        match s {
            "requested" => Some(SizeModel::Requested),
            "usable" => Some(SizeModel::Usable),
            _ => None,
        }
    }
}

/// How to convert.
#[derive(Clone, Copy, Debug, Default)]
pub struct ConvertOptions {
    /// Time model.
    pub clock: Clock,
    /// Size model.
    pub size: SizeModel,
    /// Only buffers allocated by this thread, on a clock that only its operations advance
    /// (frees by other threads still close its buffers). `None`: the whole process.
    pub thread: Option<u32>,
}

/// What one pass over a trace produced.
pub struct Analysis {
    /// The statistics.
    pub stats: TraceStats,
    /// The instance, when conversion was asked for.
    pub instance: Option<Instance>,
    /// Why the instance stops early, when sizes or the clock would leave the range heaplab
    /// instances guarantee (only a corrupt trace gets there).
    pub conversion_error: Option<String>,
}

/// Sizes and times of converted buffers stay below this, so that every sum the planner makes
/// (sizes with alignment padding, lifetimes) fits in 64 bits.
const LIMIT: u64 = 1 << 62;

struct LiveBlock {
    requested: u64,
    usable: u64,
    /// Index of its buffer in the instance, `u32::MAX` when it is not converted.
    buffer: u32,
}

struct Builder {
    opts: ConvertOptions,
    page: u64,
    buffers: Vec<Buffer>,
    counter: u64,
    bytes: u64,
    prev_ns: Option<u64>,
    total: u64,
    error: Option<String>,
}

impl Builder {
    fn selected(&self, tid: u32) -> bool {
        self.opts.thread.is_none_or(|t| t == tid)
    }

    /// The time of a step that opens a buffer of `opening_size` bytes or closes one, advancing
    /// the clock as the model says. Only `selected` steps advance the events clock; a close by
    /// another thread still lands after the opening, because the opening advanced it.
    fn time(&mut self, ns: u64, opening_size: Option<u64>, selected: bool) -> u64 {
        match self.opts.clock {
            Clock::Events => {
                let t = self.counter;
                if selected {
                    self.counter += 1;
                }
                t
            }
            Clock::Bytes => {
                let t = self.bytes;
                if let Some(s) = opening_size {
                    self.bytes = self.bytes.saturating_add(s.max(1));
                }
                t
            }
            Clock::Ns => {
                let t = match self.prev_ns {
                    Some(p) => ns.max(p.saturating_add(1)),
                    None => ns,
                };
                self.prev_ns = Some(t);
                t
            }
        }
    }

    fn end_time(&self) -> u64 {
        match self.opts.clock {
            Clock::Events => self.counter,
            Clock::Bytes => self.bytes,
            Clock::Ns => self.prev_ns.map_or(0, |p| p.saturating_add(1)),
        }
    }

    fn size_of(&self, requested: u64, usable: u64) -> u64 {
        match self.opts.size {
            SizeModel::Requested => requested.max(1),
            SizeModel::Usable => usable.max(requested).max(1),
        }
    }
}

/// Reads the whole stream of `reader`, computing statistics and, with `convert`, the instance.
/// Stops where the reader stops (see [`crate::reader::Damage`]); the caller decides whether a
/// damaged trace is acceptable. `progress`, when given, is updated with the steps read so far
/// (every 65,536 steps) for a progress display.
pub fn analyse<R: Read>(reader: &mut TraceReader<R>, convert: Option<&ConvertOptions>, progress: Option<&AtomicU64>) -> Analysis {
    let header = reader.header().clone();
    let mut tracker = Tracker::new(header.page_size);
    let mut live: AddressMap<LiveBlock> = AddressMap::default();
    let mut b = convert.map(|o| Builder {
        opts: *o,
        page: header.page_size.max(1) as u64,
        buffers: Vec::new(),
        counter: 0,
        bytes: 0,
        prev_ns: None,
        total: 0,
        error: None,
    });
    let mut read = 0u64;
    reader.keep_pages();
    while let Some(step) = reader.next() {
        for p in reader.take_pages() {
            tracker.page(&p);
        }
        read += 1;
        if read & 0xffff == 0 {
            if let Some(p) = progress {
                p.store(read, Ordering::Relaxed);
            }
        }
        let e = step.event;
        let ns = header.ns_since_start(e.ts);
        if step.half != Half::Acquire {
            let s = &mut tracker.stats;
            *s.calls.entry(e.op).or_insert(0) += 1;
            *s.threads.entry(e.tid).or_insert(0) += 1;
            s.events += 1;
            s.first_ns.get_or_insert(ns);
            s.last_ns = Some(ns);
        }
        let selected = b.as_ref().is_some_and(|b| b.selected(e.tid));
        // The release part: free, or the first half of a realloc.
        let releases = match step.half {
            Half::Whole => e.op == Op::Free,
            Half::Release => e.releases(),
            Half::Acquire => false,
        };
        if releases {
            match live.remove(&e.ptr_in) {
                Some(blk) => {
                    tracker.release(e.ptr_in, blk.requested, blk.usable);
                    if let Some(b) = b.as_mut() {
                        let converted = blk.buffer != u32::MAX;
                        if converted || selected {
                            let t = b.time(ns, None, selected);
                            if converted {
                                let buf = &mut b.buffers[blk.buffer as usize];
                                buf.upper = t.max(buf.lower + 1);
                            }
                        }
                    }
                }
                None => {
                    tracker.stats.unmatched_frees += 1;
                    if let (Some(b), true) = (b.as_mut(), selected) {
                        b.time(ns, None, true);
                    }
                }
            }
            continue;
        }
        if step.half == Half::Release {
            // A failed realloc releases nothing; its clock tick is taken by the acquire half.
            continue;
        }
        if e.op == Op::Free {
            continue;
        }
        // The allocation part.
        if e.ptr_out == 0 {
            // realloc(p, 0) freeing p is not a failure; anything else returning NULL is.
            let freed_by_realloc = step.half == Half::Acquire && e.releases();
            if !freed_by_realloc {
                tracker.stats.failed += 1;
            }
            if let (Some(b), true) = (b.as_mut(), selected) {
                if b.opts.clock == Clock::Events {
                    b.counter += 1;
                }
            }
            continue;
        }
        let requested = e.requested();
        let usable = e.usable.max(requested);
        if let Some(old) = live.remove(&e.ptr_out) {
            tracker.stats.reused_live += 1;
            tracker.release(e.ptr_out, old.requested, old.usable);
            if let (Some(b), true) = (b.as_mut(), old.buffer != u32::MAX) {
                let t = b.end_time().max(1);
                let buf = &mut b.buffers[old.buffer as usize];
                buf.upper = t.max(buf.lower + 1);
            }
        }
        tracker.acquire(e.ptr_out, requested, usable);
        let mut index = u32::MAX;
        if let Some(b) = b.as_mut() {
            let size = b.size_of(requested, usable);
            let padded = size.saturating_add(e.alignment(b.page));
            if selected && b.error.is_none() && (b.total.saturating_add(padded) >= LIMIT || b.end_time() >= LIMIT || ns >= LIMIT) {
                b.error = Some(format!(
                    "buffer sizes or times pass 2^62 at sequence number {} (a {} of {} bytes): the trace is corrupt",
                    e.seq,
                    e.op.name(),
                    e.requested()
                ));
            }
            if selected && b.error.is_none() {
                b.total += padded;
                let lower = b.time(ns, Some(size), true);
                let align = e.alignment(b.page);
                let align_log2 = (align.next_power_of_two().trailing_zeros()).min(62) as u8;
                let mut buf = Buffer::new(b.buffers.len() as u64, lower, u64::MAX, size);
                buf.align_log2 = align_log2;
                if b.opts.size == SizeModel::Usable {
                    buf.requested = requested.clamp(1, size);
                }
                index = u32::try_from(b.buffers.len()).unwrap_or(u32::MAX);
                if index != u32::MAX {
                    b.buffers.push(buf);
                }
            }
        }
        live.insert(e.ptr_out, LiveBlock { requested, usable, buffer: index });
    }
    for p in reader.take_pages() {
        tracker.page(&p);
    }
    if let Some(t) = reader.ending().trailer.as_ref() {
        tracker.stats.free_null = t.free_null;
    }
    let live_at_end = live.len() as u64;
    let conversion_error = b.as_ref().and_then(|b| b.error.clone());
    let instance = b.map(|mut b| {
        let end = b.end_time();
        for buf in b.buffers.iter_mut().filter(|x| x.upper == u64::MAX) {
            buf.upper = end.max(buf.lower + 1);
        }
        let mut inst = Instance::new(b.buffers);
        inst.columns.requested = b.opts.size == SizeModel::Usable;
        inst
    });
    Analysis { stats: tracker.finish(live_at_end), instance, conversion_error }
}
