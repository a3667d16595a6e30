//! Trace statistics: what `heaplab trace-info` reports. Calls per function, threads, live bytes
//! and blocks over time (their peaks are the lower bound any placement of this heap must meet),
//! the size histogram, duration, and the real allocator's footprint as the trace shows it: the
//! pages its live blocks touched at the worst moment. Also the program's direct address-space
//! use from page events ([`PageStats`], kept exact as a set of ranges by [`Mappings`]) and how
//! much of the peak RSS the heap and those mappings explain ([`RssBreakdown`]).

use crate::blocks::{Cause, Change, Counts};
use crate::format::{self as f, Op, PageOp};
use crate::reader::{Event, PageEvent};
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
    /// Direct mmap/munmap/mremap/mprotect/brk/sbrk calls and the memory they held.
    pub pages: PageStats,
}

/// The program's direct address-space use, from page events. Mapped bytes are virtual sizes
/// (page-rounded): an upper bound of what the mappings can add to RSS, as valgrind massif's
/// `--pages-as-heap` counts them. Calls made by glibc's malloc are not among them (the tracer
/// cannot see them; they are the heap), nor are the loader's mappings of code and libraries.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PageStats {
    /// Calls per function (failed ones included).
    pub calls: BTreeMap<PageOp, u64>,
    /// Calls that failed (they change nothing).
    pub failed: u64,
    /// Peak bytes of accessible anonymous mappings (private or shared).
    pub peak_anon_bytes: u64,
    /// Peak bytes of accessible file-backed mappings (private or shared).
    pub peak_file_bytes: u64,
    /// Peak bytes mapped `PROT_NONE`: address space reserved, never resident, so left out of
    /// the other figures (language runtimes reserve gigabytes this way).
    pub peak_reserved_bytes: u64,
    /// Peak growth of the program break by the program's own brk/sbrk calls.
    pub peak_brk_bytes: u64,
    /// Peak of anonymous + file-backed + break growth at one moment.
    pub peak_direct_bytes: u64,
    /// Peak of the heap's live usable bytes + the direct bytes at one moment (the two peaks
    /// need not coincide, so this can be less than their sum).
    pub peak_heap_and_direct_bytes: u64,
    /// Bytes still mapped (reservations included) at the end of the trace.
    pub mapped_at_end_bytes: u64,
}

/// How much of the peak RSS (the trailer's VmHWM) the trace accounts for: the heap's peak live
/// bytes (usable sizes), the peak of the direct mappings and break growth, and the rest (code,
/// stacks, libraries, allocator overhead and fragmentation). Each part is its own peak as a
/// share of the RSS peak; when the heap and the mappings together pass it (peaks at different
/// moments, mapped pages never touched), the rest is 0 and `overlap` says so.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RssBreakdown {
    /// Peak RSS, bytes.
    pub peak_rss: u64,
    /// Peak live heap bytes (usable sizes).
    pub heap: u64,
    /// Peak direct bytes ([`PageStats::peak_direct_bytes`]).
    pub direct: u64,
    /// What neither explains.
    pub rest: u64,
    /// The heap as a percentage of the peak RSS.
    pub heap_pct: f64,
    /// The direct mappings as a percentage of the peak RSS.
    pub direct_pct: f64,
    /// The rest as a percentage of the peak RSS.
    pub rest_pct: f64,
    /// Heap and direct peaks together exceed the peak RSS.
    pub overlap: bool,
}

impl TraceStats {
    /// The breakdown of `peak_rss` bytes (`None` when it is 0, i.e. unknown).
    pub fn rss_breakdown(&self, peak_rss: u64) -> Option<RssBreakdown> {
        if peak_rss == 0 {
            return None;
        }
        let heap = self.peak_live_usable;
        let direct = self.pages.peak_direct_bytes;
        let rest = peak_rss.saturating_sub(heap.saturating_add(direct));
        let pct = |b: u64| b as f64 * 100.0 / peak_rss as f64;
        Some(RssBreakdown {
            peak_rss,
            heap,
            direct,
            rest,
            heap_pct: pct(heap),
            direct_pct: pct(direct),
            rest_pct: pct(rest),
            overlap: heap.saturating_add(direct) > peak_rss,
        })
    }
}

/// What a mapped range is: its backing and whether it is accessible at all.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Backing {
    file: bool,
    reserved: bool,
}

impl Backing {
    /// Index into [`Mappings::bytes`]: anonymous, file-backed, reserved.
    fn class(self) -> usize {
        if self.reserved {
            2
        } else {
            usize::from(self.file)
        }
    }
}

/// The program's direct mappings as a set of disjoint ranges, so that partial munmap,
/// mprotect and mremap are exact: a counter could not tell which part of a mapping a call hit.
/// Ranges the trace never saw mapped (code, stacks, glibc's own mappings) are not tracked, and
/// calls on them change nothing here.
#[derive(Default)]
pub(crate) struct Mappings {
    /// start → (end, backing).
    ranges: BTreeMap<u64, (u64, Backing)>,
    /// Bytes per [`Backing::class`].
    bytes: [u64; 3],
    /// Net growth of the break by the program's own calls (may go negative).
    brk: i128,
    page: u64,
    stats: PageStats,
}

impl Mappings {
    fn new(page: u64) -> Mappings {
        Mappings { page, ..Mappings::default() }
    }

    /// The page-rounded range of `len` bytes at `addr`, as the kernel applies it.
    fn span(&self, addr: u64, len: u64) -> (u64, u64) {
        let len = len.saturating_add(self.page - 1) & !(self.page - 1);
        (addr, addr.saturating_add(len))
    }

    fn add(&mut self, a: u64, b: u64, k: Backing) {
        if a < b {
            self.ranges.insert(a, (b, k));
            self.bytes[k.class()] += b - a;
        }
    }

    /// Removes `[a, b)` from every range, splitting those it cuts, and returns the removed
    /// pieces in address order.
    fn carve(&mut self, a: u64, b: u64) -> Vec<(u64, u64, Backing)> {
        let before = self.ranges.range(..a).next_back().filter(|(_, (end, _))| *end > a).map(|(s, _)| *s);
        let hit: Vec<u64> = before.into_iter().chain(self.ranges.range(a..b).map(|(s, _)| *s)).collect();
        let mut out = Vec::with_capacity(hit.len());
        for s in hit {
            let (e, k) = self.ranges.remove(&s).expect("listed");
            self.bytes[k.class()] -= e - s;
            self.add(s, a.max(s).min(e), k);
            self.add(b.max(s).min(e), e, k);
            if a.max(s) < b.min(e) {
                out.push((a.max(s), b.min(e), k));
            }
        }
        out
    }

    /// The direct bytes now: accessible mappings and break growth.
    fn direct(&self) -> u64 {
        self.bytes[0] + self.bytes[1] + u64::try_from(self.brk.max(0)).unwrap_or(u64::MAX)
    }

    /// Applies one page event; returns the direct bytes after it.
    fn apply(&mut self, p: &PageEvent) -> u64 {
        *self.stats.calls.entry(p.op).or_insert(0) += 1;
        if p.failed {
            self.stats.failed += 1;
            return self.direct();
        }
        match p.op {
            PageOp::Mmap => {
                let (a, b) = self.span(p.addr, p.len);
                self.carve(a, b); // MAP_FIXED replaces what was there
                self.add(a, b, Backing { file: p.flags & f::MAP_ANONYMOUS == 0, reserved: p.prot == 0 });
            }
            PageOp::Munmap => {
                let (a, b) = self.span(p.addr, p.len);
                self.carve(a, b);
            }
            PageOp::Mprotect => {
                let (a, b) = self.span(p.addr, p.len);
                for (s, e, k) in self.carve(a, b) {
                    self.add(s, e, Backing { reserved: p.prot == 0, ..k });
                }
            }
            PageOp::Mremap => {
                let (a, b) = self.span(p.addr, p.len);
                let (na, nb) = self.span(p.new_addr, p.new_len);
                let pieces = self.carve(a, b);
                if p.flags & f::MREMAP_DONTUNMAP != 0 {
                    for &(s, e, k) in &pieces {
                        self.add(s, e, k); // the old range stays mapped (emptied)
                    }
                }
                // Each piece keeps its backing at the same offset; growth takes the last one's.
                let mut ranges: Vec<(u64, u64, Backing)> = pieces
                    .iter()
                    .map(|&(s, e, k)| (na + (s - a), (na + (e - a)).min(nb), k))
                    .filter(|(s, e, _)| s < e)
                    .collect();
                if let Some(&(_, _, k)) = pieces.last() {
                    ranges.push((na + (b - a).min(nb - na), nb, k));
                }
                for (s, e, k) in ranges.into_iter().filter(|(s, e, _)| s < e) {
                    self.carve(s, e);
                    self.add(s, e, k);
                }
            }
            PageOp::Brk | PageOp::Sbrk => self.brk += p.new_addr as i128 - p.addr as i128,
        }
        let st = &mut self.stats;
        st.peak_anon_bytes = st.peak_anon_bytes.max(self.bytes[0]);
        st.peak_file_bytes = st.peak_file_bytes.max(self.bytes[1]);
        st.peak_reserved_bytes = st.peak_reserved_bytes.max(self.bytes[2]);
        st.peak_brk_bytes = st.peak_brk_bytes.max(u64::try_from(self.brk.max(0)).unwrap_or(u64::MAX));
        let direct = self.direct();
        self.stats.peak_direct_bytes = self.stats.peak_direct_bytes.max(direct);
        direct
    }
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
    maps: Mappings,
}

impl Tracker {
    /// A tracker for a trace with this page size.
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
            maps: Mappings::new(1 << page.trailing_zeros()),
        }
    }

    fn page_range(&self, ptr: u64, usable: u64) -> (u64, u64) {
        let last = ptr.saturating_add(usable.max(1) - 1);
        (ptr >> self.page_shift, last >> self.page_shift)
    }

    /// Counts a recorded call (a realloc once, at its first half) made `ns` after the start.
    pub fn call(&mut self, e: &Event, ns: u64) {
        let s = &mut self.stats;
        *s.calls.entry(e.op).or_insert(0) += 1;
        *s.threads.entry(e.tid).or_insert(0) += 1;
        s.events += 1;
        s.first_ns.get_or_insert(ns);
        s.last_ns = Some(ns);
    }

    /// Follows the live blocks through what one step did: the close first, as it happened.
    pub fn change<T>(&mut self, c: &Change<T>) {
        if let Some(c) = c.closed.as_ref().filter(|c| c.cause != Cause::End) {
            self.release(c.block.addr, c.block.requested, c.block.usable);
        }
        if let Some(b) = &c.opened {
            self.acquire(b.addr, b.requested, b.usable);
        }
    }

    fn acquire(&mut self, ptr: u64, requested: u64, usable: u64) {
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
        let joint = self.live_usable.saturating_add(self.maps.direct());
        self.maps.stats.peak_heap_and_direct_bytes = self.maps.stats.peak_heap_and_direct_bytes.max(joint);
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

    /// Applies a page event (direct mmap & co.) in its place among the heap events.
    pub fn page(&mut self, p: &PageEvent) {
        let joint = self.live_usable.saturating_add(self.maps.apply(p));
        self.maps.stats.peak_heap_and_direct_bytes = self.maps.stats.peak_heap_and_direct_bytes.max(joint);
    }

    fn release(&mut self, ptr: u64, requested: u64, usable: u64) {
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

    /// The statistics, given what the blocks layer counted and the blocks live at the end.
    pub fn finish(mut self, counts: Counts, live_at_end: u64) -> TraceStats {
        self.stats.failed = counts.failed;
        self.stats.unmatched_frees = counts.unknown_frees;
        self.stats.reused_live = counts.reused;
        self.stats.live_at_end = live_at_end;
        self.maps.stats.mapped_at_end_bytes = self.maps.bytes.iter().sum();
        self.stats.pages = std::mem::take(&mut self.maps.stats);
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
