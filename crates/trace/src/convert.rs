//! Trace → instance: one pass over the merged stream that builds heaplab buffers and the trace
//! statistics together, both from the blocks [`crate::blocks`] opens and closes. Each block of
//! the thread scope becomes a buffer with the block's id, open and close times, size and
//! alignment; the rules (unknown frees, failed calls, realloc halves, malloc(0), blocks live at
//! the end) and the clocks are the blocks layer's and are documented there.
//!
//! Page events (the program's direct mmap & co.) feed the statistics only: they never become
//! buffers, so the instance is the heap's alone.

use crate::blocks::{Block, BlockOptions, Blocks, Closed, SizeModel};
use crate::reader::{Half, Step, TraceReader};
use crate::stats::{TraceStats, Tracker};
use heaplab_model::{Buffer, Instance};
use std::io::Read;
use std::sync::atomic::{AtomicU64, Ordering};

/// How to convert: the blocks' clock and size model, and the thread whose blocks become
/// buffers (`None`: the whole process). Under [`SizeModel::Usable`] the requested size is
/// kept in the instance's `requested` column.
pub type ConvertOptions = BlockOptions;

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

/// The instance being built.
struct Builder {
    size: SizeModel,
    page: u64,
    buffers: Vec<Buffer>,
    /// Sum of the buffers' sizes with alignment padding.
    total: u64,
    error: Option<String>,
}

impl Builder {
    /// Ends the buffer of a block that closed.
    fn close(&mut self, c: &Closed<()>) {
        if let Some(buf) = c.block.id.and_then(|id| self.buffers.get_mut(id as usize)) {
            buf.upper = c.at;
        }
    }

    /// Starts a buffer for a block of the scope that `step` (at `ns`) opened. After an error
    /// the instance stops growing; buffers opened before it still close.
    fn open(&mut self, step: &Step, b: &Block, ns: u64) {
        if b.id.is_none() || self.error.is_some() {
            return;
        }
        let e = &step.event;
        let padded = b.size.saturating_add(e.alignment(self.page));
        if self.total.saturating_add(padded) >= LIMIT || b.open >= LIMIT || ns >= LIMIT {
            self.error = Some(format!(
                "buffer sizes or times pass 2^62 at sequence number {} (a {} of {} bytes): the trace is corrupt",
                e.seq,
                e.op.name(),
                e.requested()
            ));
            return;
        }
        self.total += padded;
        let mut buf = Buffer::new(self.buffers.len() as u64, b.open, u64::MAX, b.size);
        buf.align_log2 = b.align_log2;
        if self.size == SizeModel::Usable {
            buf.requested = b.requested.clamp(1, b.size);
        }
        self.buffers.push(buf);
    }
}

/// Reads the whole stream of `reader`, computing statistics and, with `convert`, the instance.
/// Stops where the reader stops (see [`crate::reader::Damage`]); the caller decides whether a
/// damaged trace is acceptable. `progress`, when given, is updated with the steps read so far
/// (every 65,536 steps) for a progress display.
pub fn analyse<R: Read>(reader: &mut TraceReader<R>, convert: Option<&ConvertOptions>, progress: Option<&AtomicU64>) -> Analysis {
    let header = reader.header().clone();
    let mut tracker = Tracker::new(header.page_size);
    // Statistics alone need no particular clock: the default one serves.
    let mut blocks: Blocks = Blocks::new(convert.copied().unwrap_or_default(), &header);
    let mut b = convert.map(|o| Builder { size: o.size, page: u64::from(header.page_size.max(1)), buffers: Vec::new(), total: 0, error: None });
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
        let ns = header.ns_since_start(step.event.ts);
        if step.half != Half::Acquire {
            tracker.call(&step.event, ns);
        }
        let change = blocks.step(&step);
        tracker.change(&change);
        if let Some(b) = b.as_mut() {
            if let Some(c) = &change.closed {
                b.close(c);
            }
            if let Some(o) = &change.opened {
                b.open(&step, o, ns);
            }
        }
    }
    for p in reader.take_pages() {
        tracker.page(&p);
    }
    if let Some(t) = reader.ending().trailer.as_ref() {
        tracker.stats.free_null = t.free_null;
    }
    let mut live_at_end = 0u64;
    for c in blocks.finish() {
        live_at_end += 1;
        if let Some(b) = b.as_mut() {
            b.close(&c);
        }
    }
    let conversion_error = b.as_ref().and_then(|b| b.error.clone());
    let instance = b.map(|b| {
        let mut inst = Instance::new(b.buffers);
        inst.columns.requested = b.size == SizeModel::Usable;
        inst
    });
    Analysis { stats: tracker.finish(blocks.counts(), live_at_end), instance, conversion_error }
}
