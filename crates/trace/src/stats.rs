//! Trace statistics: what `heaplab trace-info` reports. Calls per function, threads, live bytes
//! and blocks over time (their peaks are the lower bound any placement of this heap must meet),
//! the size histogram, duration, and the real allocator's footprint as the trace shows it: the
//! pages its live blocks touched at the worst moment.

use crate::format::Op;
use std::collections::{BTreeMap, HashMap};
use std::hash::{BuildHasherDefault, Hasher};

/// Hashes one u64 key (an address or page number) by a multiply and fold: the analysis does a
/// few map operations per event, and SipHash's resistance to chosen keys buys nothing here.
#[derive(Default, Clone, Copy)]
pub struct AddressHasher(u64);

impl Hasher for AddressHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(b as u64);
        }
    }
    fn write_u64(&mut self, v: u64) {
        let h = (self.0 ^ v).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        self.0 = h ^ (h >> 29);
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

/// A map keyed by addresses or page numbers (also used by the replay driver and the
/// fragmentation metric).
pub type AddressMap<V> = HashMap<u64, V, BuildHasherDefault<AddressHasher>>;

/// Figures about one trace, filled in by [`crate::convert::analyse`].
#[derive(Clone, Debug, Default)]
pub struct TraceStats {
    /// Calls per function (free(NULL) excluded: see `free_null`).
    pub calls: BTreeMap<Op, u64>,
    /// free(NULL) calls, from the trailer (counted, not recorded as events).
    pub free_null: u64,
    /// Recorded calls.
    pub events: u64,
    /// Calls per thread id.
    pub threads: BTreeMap<u32, u64>,
    /// Peak of the sum of requested sizes of live blocks.
    pub peak_live_requested: u64,
    /// Peak of the sum of usable sizes of live blocks.
    pub peak_live_usable: u64,
    /// Peak number of live blocks.
    pub peak_live_blocks: u64,
    /// Sum of requested sizes over all allocations.
    pub total_requested: u64,
    /// Sum of usable sizes over all allocations.
    pub total_usable: u64,
    /// Allocation calls that returned NULL.
    pub failed: u64,
    /// Frees (and realloc inputs) of pointers this trace never saw allocated: blocks from
    /// before tracing started (a fork parent, the dynamic loader) or from another allocator.
    pub unmatched_frees: u64,
    /// Allocations returning a pointer that was still live in the trace (a missed free).
    pub reused_live: u64,
    /// Blocks still live at the end of the trace (leaks, or memory freed by exit).
    pub live_at_end: u64,
    /// Histogram of requested sizes: (bucket low, bucket high exclusive, count), powers of two.
    pub size_histogram: Vec<(u64, u64, u64)>,
    /// Peak bytes of distinct pages touched by live blocks (usable sizes): the real
    /// allocator's placement seen page by page.
    pub peak_pages_bytes: u64,
    /// First and last event timestamps, ns since the trace started.
    pub first_ns: Option<u64>,
    /// See `first_ns`.
    pub last_ns: Option<u64>,
}

/// Blocks spanning more pages than this are counted whole instead of page by page: allocators
/// serve them from their own mappings, so they share no page, and a corrupt size cannot make
/// the page map grow without bound.
const BIG_BLOCK_PAGES: u64 = 1 << 16;

/// Running state behind [`TraceStats`]: live sums and the page map.
pub(crate) struct Tracker {
    pub stats: TraceStats,
    live_req: u64,
    live_usable: u64,
    live_blocks: u64,
    page_shift: u32,
    pages: AddressMap<u32>,
    /// Pages of blocks too big to track page by page (see [`BIG_BLOCK_PAGES`]).
    big_pages: u64,
    buckets: [u64; 65],
}

impl Tracker {
    pub fn new(page_size: u32) -> Tracker {
        let page = if page_size.is_power_of_two() { page_size } else { 4096 };
        Tracker {
            stats: TraceStats::default(),
            live_req: 0,
            live_usable: 0,
            live_blocks: 0,
            page_shift: page.trailing_zeros(),
            pages: AddressMap::default(),
            big_pages: 0,
            buckets: [0; 65],
        }
    }

    fn page_range(&self, ptr: u64, usable: u64) -> (u64, u64) {
        let last = ptr.saturating_add(usable.max(1) - 1);
        (ptr >> self.page_shift, last >> self.page_shift)
    }

    pub fn acquire(&mut self, ptr: u64, requested: u64, usable: u64) {
        let s = &mut self.stats;
        s.total_requested = s.total_requested.saturating_add(requested);
        s.total_usable = s.total_usable.saturating_add(usable);
        self.buckets[(64 - requested.leading_zeros()) as usize] += 1;
        self.live_req = self.live_req.saturating_add(requested);
        self.live_usable = self.live_usable.saturating_add(usable);
        self.live_blocks += 1;
        s.peak_live_requested = s.peak_live_requested.max(self.live_req);
        s.peak_live_usable = s.peak_live_usable.max(self.live_usable);
        s.peak_live_blocks = s.peak_live_blocks.max(self.live_blocks);
        let (a, b) = self.page_range(ptr, usable);
        if b - a >= BIG_BLOCK_PAGES {
            self.big_pages = self.big_pages.saturating_add(b - a + 1);
        } else {
            for p in a..=b {
                *self.pages.entry(p).or_insert(0) += 1;
            }
        }
        let bytes = (self.pages.len() as u64).saturating_add(self.big_pages).saturating_mul(1 << self.page_shift);
        self.stats.peak_pages_bytes = self.stats.peak_pages_bytes.max(bytes);
    }

    pub fn release(&mut self, ptr: u64, requested: u64, usable: u64) {
        self.live_req = self.live_req.saturating_sub(requested);
        self.live_usable = self.live_usable.saturating_sub(usable);
        self.live_blocks = self.live_blocks.saturating_sub(1);
        let (a, b) = self.page_range(ptr, usable);
        if b - a >= BIG_BLOCK_PAGES {
            self.big_pages = self.big_pages.saturating_sub(b - a + 1);
            return;
        }
        for p in a..=b {
            if let Some(c) = self.pages.get_mut(&p) {
                *c -= 1;
                if *c == 0 {
                    self.pages.remove(&p);
                }
            }
        }
    }

    pub fn finish(mut self, live_at_end: u64) -> TraceStats {
        self.stats.live_at_end = live_at_end;
        self.stats.size_histogram = self
            .buckets
            .iter()
            .enumerate()
            .filter(|(_, &c)| c > 0)
            .map(|(i, &c)| if i == 0 { (0, 1, c) } else { (1u64 << (i - 1), (1u64 << (i - 1)).saturating_mul(2), c) })
            .collect();
        self.stats
    }
}
