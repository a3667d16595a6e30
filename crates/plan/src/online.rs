//! First-fit and best-fit *in start order* as what they are: an online allocator replayed over
//! time.
//!
//! When buffers are placed by increasing `lower`, the placed buffers that conflict with the next
//! one are exactly those still live at its start (placed ones start no later, and conflict iff
//! they end after it). So instead of the general [`Occupancy`](crate::occupancy::Occupancy)
//! index, a sweep keeps the free address ranges *now*: a map of the free gaps below the top of
//! the live blocks (coalesced), the top itself, and for best fit the same gaps keyed by length.
//! Buffers ending at or before the next start are freed first (merging their range into the
//! neighbouring gaps). The offsets are exactly those of
//! [`place_in_order`](crate::heuristics::place_in_order) with [`Order::Start`]
//! (the oracle test says so), in O(n log n); memory is O(max live buffers) beyond the output.
//! First fit finds the lowest gap that holds a buffer in a [`GapList`]: the gaps by address in
//! blocks that know their longest gap, so whole blocks are skipped (a plain scan of every gap
//! was linear per buffer on real heaps: a traced python3 run of 4.5M blocks took 98 s). A gap
//! the sweep shrinks, grows or moves between the same neighbours is changed in place, where
//! the search that found it left it.

use crate::rules::{Fit, Order};
use heaplab_model::{align_up, Buffer};
use std::collections::{BTreeMap, BTreeSet};

/// Most gaps a block of a [`GapList`] holds; a fuller one splits in two halves.
const BLOCK: usize = 64;

/// Blocks per group of [`GapList::bounds`] (in tests 4, so that small instances have many
/// groups).
#[cfg(not(test))]
const GROUP: usize = 64;
#[cfg(test)]
const GROUP: usize = 4;

/// The gaps by start address, in blocks of at most [`BLOCK`] consecutive gaps, with each
/// block's first start and longest gap in arrays of their own: the lowest gap of at least a
/// given length is the first block whose longest gap is that long, found by a scan of one
/// contiguous array (a group of [`GROUP`] blocks at a time, skipped whole by a bound on its
/// longest gap), then a scan of that block; a gap is found by address by two binary
/// searches. Everything it touches is contiguous, where a search tree chases a pointer at
/// every level.
#[derive(Clone)]
struct GapList {
    /// The blocks in address order, each its gaps `(start, end)` in address order, never empty.
    blocks: Vec<Vec<Gap>>,
    /// Per block: the start of its first gap.
    first: Vec<u64>,
    /// Per block: its longest gap.
    longest: Vec<u64>,
    /// Per group of [`GROUP`] consecutive blocks: at least the longest gap in its blocks. A
    /// search skips the groups whose bound is below the length it seeks: on a fragmented heap
    /// (a traced python3 run of 6.9·10^6 blocks) the low blocks hold only short gaps, and a
    /// scan of every block's longest gap took 90% of a 21 s sweep. Bounds, not exact maxima,
    /// so that a block inserted or removed (which moves every later block to a neighbouring
    /// group) costs one pass over the groups, not over the blocks: each group's bound then
    /// takes in its neighbour's. A search that scans a group in vain makes its bound exact.
    bounds: Vec<u64>,
    /// Where the last searches ([`GapList::lowest`], [`GapList::around`]) found gaps, as
    /// (block, position): the sweep reshapes a gap it has just found, and looking there first
    /// spares a search. Cleared when gaps are added or removed (positions move).
    found: [(usize, usize); 2],
}

/// A free range `(start, end)`.
type Gap = (u64, u64);

/// No position ([`GapList::found`]).
const NOWHERE: (usize, usize) = (usize::MAX, usize::MAX);

impl GapList {
    fn new() -> Self {
        GapList { blocks: Vec::new(), first: Vec::new(), longest: Vec::new(), bounds: Vec::new(), found: [NOWHERE; 2] }
    }

    fn refresh(&mut self, bi: usize) {
        let block = &self.blocks[bi];
        self.first[bi] = block[0].0;
        self.longest[bi] = block.iter().map(|&(s, e)| e - s).max().unwrap_or(0);
        self.grew(bi);
    }

    /// Keeps block `bi`'s group bound at or above its longest gap (which may have grown).
    fn grew(&mut self, bi: usize) {
        let g = bi / GROUP;
        self.bounds[g] = self.bounds[g].max(self.longest[bi]);
    }

    /// After a block was inserted at `bi` (its longest gap set): every later block moved one
    /// place up, the last of each group into the next.
    fn block_inserted(&mut self, bi: usize) {
        if self.bounds.len() < self.blocks.len().div_ceil(GROUP) {
            self.bounds.push(0);
        }
        for g in (bi / GROUP + 1..self.bounds.len()).rev() {
            self.bounds[g] = self.bounds[g].max(self.bounds[g - 1]);
        }
        self.grew(bi);
    }

    /// After the block at `bi` was removed: every later block moved one place down, the first
    /// of each group into the one before.
    fn block_removed(&mut self, bi: usize) {
        for g in bi / GROUP..self.bounds.len().saturating_sub(1) {
            self.bounds[g] = self.bounds[g].max(self.bounds[g + 1]);
        }
        self.bounds.truncate(self.blocks.len().div_ceil(GROUP));
    }

    /// The first block at or after `from` whose longest gap is at least `size`.
    fn next_holding(&mut self, from: usize, size: u64) -> Option<usize> {
        let n = self.longest.len();
        // The rest of `from`'s group block by block, then whole groups by their bounds.
        let g0 = from / GROUP;
        let end = ((g0 + 1) * GROUP).min(n);
        if let Some(d) = self.longest.get(from..end).and_then(|l| l.iter().position(|&l| l >= size)) {
            return Some(from + d);
        }
        let mut g = g0 + 1;
        while let Some(d) = self.bounds.get(g..).and_then(|b| b.iter().position(|&b| b >= size)) {
            g += d;
            let blocks = &self.longest[g * GROUP..((g + 1) * GROUP).min(n)];
            match blocks.iter().position(|&l| l >= size) {
                Some(k) => return Some(g * GROUP + k),
                None => self.bounds[g] = blocks.iter().copied().max().unwrap_or(0),
            }
            g += 1;
        }
        None
    }

    /// Whether every group's bound holds (tests).
    #[cfg(test)]
    fn bounds_hold(&self) -> bool {
        self.bounds.len() == self.blocks.len().div_ceil(GROUP)
            && self.longest.chunks(GROUP).zip(&self.bounds).all(|(l, &b)| l.iter().all(|&l| l <= b))
            && self.blocks.iter().zip(&self.longest).all(|(bl, &l)| bl.iter().map(|&(s, e)| e - s).max() == Some(l))
    }

    /// The block that holds or would hold a gap starting at `key`: the last whose first start
    /// is at most `key`, else the first.
    fn block_of(&self, key: u64) -> usize {
        self.first.partition_point(|&f| f <= key).saturating_sub(1)
    }

    /// Where the gap starting at `start` (which exists) is.
    fn locate(&self, start: u64) -> (usize, usize) {
        for &(bi, k) in &self.found {
            if self.blocks.get(bi).and_then(|b| b.get(k)).is_some_and(|g| g.0 == start) {
                return (bi, k);
            }
        }
        let bi = self.block_of(start);
        let k = self.blocks[bi].partition_point(|g| g.0 < start);
        debug_assert!(self.blocks[bi][k].0 == start, "no gap starts at {start}");
        (bi, k)
    }

    /// Adds the gap `[start, end)`, which overlaps none.
    fn insert(&mut self, start: u64, end: u64) {
        self.found = [NOWHERE; 2];
        if self.blocks.is_empty() {
            self.blocks.push(vec![(start, end)]);
            self.first.push(start);
            self.longest.push(end - start);
            self.block_inserted(0);
            return;
        }
        let bi = self.block_of(start);
        let block = &mut self.blocks[bi];
        let k = block.partition_point(|g| g.0 < start);
        block.insert(k, (start, end));
        if block.len() > BLOCK {
            let rest = block.split_off(BLOCK / 2);
            self.blocks.insert(bi + 1, rest);
            self.first.insert(bi + 1, 0);
            self.longest.insert(bi + 1, 0);
            self.block_inserted(bi + 1);
            self.refresh(bi);
            self.refresh(bi + 1);
        } else {
            self.first[bi] = self.first[bi].min(start);
            self.longest[bi] = self.longest[bi].max(end - start);
            self.grew(bi);
        }
    }

    /// Removes the gap starting at `start` (which exists). A block left with under a quarter
    /// of [`BLOCK`] gaps joins its next one where both fit in one, so the blocks stay full
    /// enough for the scans.
    fn remove(&mut self, start: u64) {
        let (bi, k) = self.locate(start);
        self.found = [NOWHERE; 2];
        let (s, e) = self.blocks[bi].remove(k);
        let len = self.blocks[bi].len();
        if len == 0 {
            self.blocks.remove(bi);
            self.first.remove(bi);
            self.longest.remove(bi);
            self.block_removed(bi);
            return;
        }
        if len < BLOCK / 4 {
            let next = if bi + 1 < self.blocks.len() { Some(bi + 1) } else { bi.checked_sub(1) };
            if let Some(other) = next.filter(|&o| self.blocks[o].len() + len <= BLOCK) {
                let (lo, hi) = (bi.min(other), bi.max(other));
                let moved = self.blocks.remove(hi);
                self.first.remove(hi);
                self.longest.remove(hi);
                self.block_removed(hi);
                self.blocks[lo].extend(moved);
                self.refresh(lo);
                return;
            }
        }
        if k == 0 || e - s == self.longest[bi] {
            self.refresh(bi);
        }
    }

    /// Changes the gap starting at `start` (which exists) to `[new_start, new_end)`, which
    /// must keep its place in address order (it lies between its neighbours).
    fn reshape(&mut self, start: u64, new_start: u64, new_end: u64) {
        let (bi, k) = self.locate(start);
        let old = std::mem::replace(&mut self.blocks[bi][k], (new_start, new_end));
        let len = new_end - new_start;
        if k == 0 {
            self.first[bi] = new_start;
        }
        if len >= self.longest[bi] {
            self.longest[bi] = len;
            self.grew(bi);
        } else if old.1 - old.0 == self.longest[bi] {
            self.refresh(bi);
        }
    }

    /// The gaps around `key` (which starts none): the one with the greatest start below it and
    /// the one with the least start above it, as `(start, end)`.
    fn around(&mut self, key: u64) -> (Option<Gap>, Option<Gap>) {
        self.found = [NOWHERE; 2];
        let p = self.first.partition_point(|&f| f < key);
        if p == 0 {
            let above = self.blocks.first().map(|b| b[0]);
            if above.is_some() {
                self.found[1] = (0, 0);
            }
            return (None, above);
        }
        let bi = p - 1;
        let block = &self.blocks[bi];
        let k = block.partition_point(|g| g.0 < key);
        let below = block[k - 1];
        self.found[0] = (bi, k - 1);
        let above = if k < block.len() {
            self.found[1] = (bi, k);
            Some(block[k])
        } else if p < self.blocks.len() {
            self.found[1] = (p, 0);
            Some(self.blocks[p][0])
        } else {
            None
        };
        (Some(below), above)
    }

    /// Lowest aligned offset at or above `from` in a gap where `size` bytes fit, with that gap's
    /// start and end (a gap that straddles `from` counts from there).
    fn lowest_from(&mut self, from: u64, size: u64, align_log2: u8) -> Option<(u64, u64, u64)> {
        self.found = [NOWHERE; 2];
        if self.blocks.is_empty() {
            return None;
        }
        let fit = |s: u64, e: u64| {
            let a = align_up(s.max(from), align_log2).unwrap_or(u64::MAX);
            (a.saturating_add(size) <= e).then_some(a)
        };
        // Only the block that holds `from` has gaps below it (skipped); the blocks after it
        // start above. Blocks without a gap that long are skipped whole.
        let mut bi = self.block_of(from);
        let mut skip = self.blocks[bi].partition_point(|g| g.1 <= from);
        loop {
            if self.longest[bi] >= size {
                for (k, &(s, e)) in self.blocks[bi].iter().enumerate().skip(skip) {
                    if e - s >= size {
                        if let Some(a) = fit(s, e) {
                            self.found[0] = (bi, k);
                            return Some((a, s, e));
                        }
                    }
                }
            }
            bi = self.next_holding(bi + 1, size)?;
            skip = 0;
        }
    }

    /// The gap that holds address `a`, if one does.
    fn containing(&mut self, a: u64) -> Option<Gap> {
        self.found = [NOWHERE; 2];
        if self.blocks.is_empty() {
            return None;
        }
        let bi = self.block_of(a);
        let k = self.blocks[bi].partition_point(|g| g.0 <= a);
        let g = *self.blocks[bi].get(k.checked_sub(1)?)?;
        self.found[0] = (bi, k - 1);
        (g.1 > a).then_some(g)
    }
}

/// Free address space while the sweep runs: bounded gaps and everything from `top` up. First
/// fit keeps the gaps in a [`GapList`] alone (it answers the neighbour queries too); best fit in
/// a map by address and a set by length.
#[derive(Clone)]
struct FreeSpace {
    /// Gap start → gap end, for the maximal free ranges below `top` (best fit).
    gaps: BTreeMap<u64, u64>,
    /// The same gaps as (length, start) (best fit).
    by_len: BTreeSet<(u64, u64)>,
    /// The gaps by address with the longest per block (first fit).
    tree: Option<GapList>,
    /// Everything at or above `top` is free.
    top: u64,
}

impl FreeSpace {
    fn new(fit: Fit) -> Self {
        FreeSpace { gaps: BTreeMap::new(), by_len: BTreeSet::new(), tree: (fit == Fit::First).then(GapList::new), top: 0 }
    }

    fn add_gap(&mut self, start: u64, end: u64) {
        match &mut self.tree {
            Some(t) => t.insert(start, end),
            None => {
                self.gaps.insert(start, end);
                self.by_len.insert((end - start, start));
            }
        }
    }

    fn remove_gap(&mut self, start: u64, end: u64) {
        match &mut self.tree {
            Some(t) => t.remove(start),
            None => {
                self.gaps.remove(&start);
                self.by_len.remove(&(end - start, start));
            }
        }
    }

    /// Turns gap `[start, end)` into `[new_start, new_end)`, which lies between the same
    /// neighbours.
    fn reshape_gap(&mut self, (start, end): (u64, u64), new_start: u64, new_end: u64) {
        match &mut self.tree {
            Some(t) => t.reshape(start, new_start, new_end),
            None => {
                self.remove_gap(start, end);
                self.add_gap(new_start, new_end);
            }
        }
    }

    /// The gaps that touch the taken range `[start, end)`: one ending at `start`, one
    /// starting at `end`.
    fn touching(&mut self, start: u64, end: u64) -> (Option<(u64, u64)>, Option<u64>) {
        // No gap starts inside a taken range, so the gaps around `start` are its neighbours.
        let (below, above) = match &mut self.tree {
            Some(t) => t.around(start),
            None => (self.gaps.range(..start).next_back().map(|(&s, &e)| (s, e)), self.gaps.range(start..).next().map(|(&s, &e)| (s, e))),
        };
        (below.filter(|&(_, ge)| ge == start), above.filter(|&(gs, _)| gs == end).map(|(_, ge)| ge))
    }

    /// Lowest aligned offset where `size` bytes are free, with the gap it lies in (none: on
    /// top).
    fn lowest(&mut self, size: u64, align_log2: u8) -> (u64, Option<(u64, u64)>) {
        self.lowest_from(0, size, align_log2)
    }

    /// [`FreeSpace::lowest`] at or above `from` (first fit).
    fn lowest_from(&mut self, from: u64, size: u64, align_log2: u8) -> (u64, Option<(u64, u64)>) {
        let tree = self.tree.as_mut().expect("first fit keeps the gap list");
        match tree.lowest_from(from, size, align_log2) {
            Some((a, s, e)) => (a, Some((s, e))),
            None => (align_up(self.top.max(from), align_log2).unwrap_or(u64::MAX), None),
        }
    }

    /// Marks the free range `[a, a + size)` taken, wherever it lies (first fit). Free below the
    /// top means inside one gap: the space just under the top is a live block's.
    fn take_range(&mut self, a: u64, size: u64) {
        let gap = if a >= self.top {
            None
        } else {
            let tree = self.tree.as_mut().expect("first fit keeps the gap list");
            let g = tree.containing(a).filter(|&(_, e)| a + size <= e);
            assert!(g.is_some(), "the range [{a}, {}) is not free", a + size);
            g
        };
        self.take(a, size, gap);
    }

    /// Aligned start of the smallest gap that holds `size` bytes (lowest on ties), else on top,
    /// with the gap it lies in.
    fn tightest(&self, size: u64, align_log2: u8) -> (u64, Option<(u64, u64)>) {
        for &(len, s) in self.by_len.range((size, 0)..) {
            let a = align_up(s, align_log2).unwrap_or(u64::MAX);
            if a.saturating_add(size) <= s + len {
                return (a, Some((s, s + len)));
            }
        }
        (align_up(self.top, align_log2).unwrap_or(u64::MAX), None)
    }

    /// Places `b` by `fit` and returns its offset; taken unless its lifetime is empty (then it
    /// would be freed before anything else is placed).
    fn place(&mut self, b: &Buffer, fit: Fit) -> u64 {
        let (a, gap) = match fit {
            Fit::First => self.lowest(b.size, b.align_log2),
            Fit::Best => self.tightest(b.size, b.align_log2),
        };
        if b.lower < b.upper {
            self.take(a, b.size, gap);
        }
        a
    }

    /// Marks `[a, a + size)` taken; it lies inside `gap`, or at or above `top` when `None`.
    fn take(&mut self, a: u64, size: u64, gap: Option<(u64, u64)>) {
        let end = a + size;
        let Some((gs, ge)) = gap else {
            if a > self.top {
                self.add_gap(self.top, a);
            }
            self.top = end;
            return;
        };
        debug_assert!(gs <= a && end <= ge);
        match (gs < a, end < ge) {
            (true, true) => {
                self.reshape_gap((gs, ge), gs, a);
                self.add_gap(end, ge);
            }
            (true, false) => self.reshape_gap((gs, ge), gs, a),
            (false, true) => self.reshape_gap((gs, ge), end, ge),
            (false, false) => self.remove_gap(gs, ge),
        }
    }

    /// Returns `[start, end)` to the free space, merging it with the gaps it touches.
    fn release(&mut self, start: u64, end: u64) {
        let (below, above) = self.touching(start, end);
        match (below, above) {
            (Some(b), Some(ae)) => {
                self.remove_gap(end, ae);
                self.reshape_gap(b, b.0, ae);
            }
            (None, Some(ae)) => self.reshape_gap((end, ae), start, ae),
            (Some(b), None) if end == self.top => {
                self.remove_gap(b.0, b.1);
                self.top = b.0;
            }
            (Some(b), None) => self.reshape_gap(b, b.0, end),
            (None, None) if end == self.top => self.top = start,
            (None, None) => self.add_gap(start, end),
        }
    }
}

/// Places `buffers` in [`Order::Start`] order with the given
/// fit, by sweeping time; the same offsets as the general placer with that order.
pub fn place_by_start(buffers: &[Buffer], fit: Fit) -> Vec<u64> {
    place_by_start_with_ends(buffers, &ends_of(buffers), fit)
}

/// The buffers in order of their ends, as the sweeps free them. Sorted on this thread: callers
/// run sweeps inside parallel stages (a window's fill), where a parallel sort could make this
/// thread wait on, or take up, the other core's work.
pub fn ends_of(buffers: &[Buffer]) -> Vec<u32> {
    let mut keyed: Vec<(u64, u32)> = buffers.iter().enumerate().map(|(i, b)| (b.upper, i as u32)).collect();
    keyed.sort_unstable();
    keyed.into_iter().map(|(_, i)| i).collect()
}

/// [`place_by_start`] given the buffers in order of their ends (`ends`, every index once; any
/// order among equal ends), as splitting into components computes it
/// ([`heaplab_sweep::Component::ends`]): the sweep frees buffers in that order instead of
/// keeping the live ones in a heap.
pub fn place_by_start_with_ends(buffers: &[Buffer], ends: &[u32], fit: Fit) -> Vec<u64> {
    debug_assert_eq!(ends.len(), buffers.len());
    let mut free = FreeSpace::new(fit);
    let mut offsets = vec![0u64; buffers.len()];
    // The next buffer to free. One ending at or before the next start began before it, so it
    // is placed; one of empty lifetime is never taken (it would be freed before anything else
    // is placed), so it is not freed either.
    let mut next_end = 0;
    for i in crate::rules::in_start_order(buffers) {
        let b = &buffers[i as usize];
        for_ended(buffers, ends, &mut next_end, b.lower, |j| {
            let e = &buffers[j as usize];
            if e.lower < e.upper {
                let o = offsets[j as usize];
                free.release(o, o + e.size);
            }
        });
        offsets[i as usize] = free.place(b, fit);
    }
    offsets
}

/// [`Order::Outward`] as two sweeps that run at once, one per core where two are free: the
/// buffers live at the cut go first, in start order (they all conflict, so they stack); from
/// that free space one sweep runs forward in time over the buffers that start at or after the
/// cut, and one backward (start and end swapped) over those that end at or before it. The two
/// share only the buffers live at the cut, placed before either starts. The same offsets as the
/// general placer in that order for every buffer of non-empty lifetime (the oracle test says
/// so), in about 60% of the sweep's wall time where it has two cores. `ends`: the buffers by
/// their ends, in any order among equal ends. `order` says where the cut is:
/// [`Order::Outward`] (the middle) or [`Order::Peak`] (the max load).
pub fn place_outward(buffers: &[Buffer], ends: &[u32], fit: Fit, order: Order) -> Vec<u64> {
    debug_assert!(matches!(order, Order::Outward | Order::Peak));
    let peak = order == Order::Peak;
    if crate::rules::by_start(buffers) {
        return outward_by_start(buffers, ends, fit, peak, |i| i);
    }
    // Swept in start order as a copy, then the offsets put back; ties among equal ends are
    // broken by the buffers' own indices.
    let order = crate::rules::order(buffers, Order::Start);
    let mut at = vec![0u32; buffers.len()];
    order.iter().enumerate().for_each(|(k, &i)| at[i as usize] = k as u32);
    let sorted: Vec<Buffer> = order.iter().map(|&i| buffers[i as usize]).collect();
    let ends: Vec<u32> = ends.iter().map(|&i| at[i as usize]).collect();
    let mut offsets = vec![0u64; buffers.len()];
    for (&i, o) in order.iter().zip(outward_by_start(&sorted, &ends, fit, peak, |k| order[k as usize])) {
        offsets[i as usize] = o;
    }
    offsets
}

/// [`place_outward`] on buffers by start whose start order breaks ties among equal starts and
/// sizes by index; `tie` gives the index that breaks them among equal ends and sizes; cut at
/// the max load where `peak` says so, else at the middle.
fn outward_by_start(buffers: &[Buffer], ends: &[u32], fit: Fit, peak: bool, tie: impl Fn(u32) -> u32 + Sync) -> Vec<u64> {
    use crate::rules::{runs_by_size, Cut};
    use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
    let n = buffers.len();
    let Some(middle) = buffers.get(n / 2) else { return Vec::new() };
    let cut = if peak { Cut::at_peak(buffers, 0..n as u32, ends.iter().copied()) } else { Cut::of(middle) };
    let m = buffers.partition_point(|b| !cut.after(b));
    // Each half writes its own buffers' offsets and reads those of the live ones, written
    // before either starts (relaxed atomics are plain loads and stores here).
    let offsets: Vec<AtomicU64> = std::iter::repeat_with(|| AtomicU64::new(0)).take(n).collect();
    let release = |free: &mut FreeSpace, j: u32| {
        let e = &buffers[j as usize];
        if e.lower < e.upper {
            let o = offsets[j as usize].load(Relaxed);
            free.release(o, o + e.size);
        }
    };
    let mut free = FreeSpace::new(fit);
    let live = (0..m as u32).filter(|&i| cut.live(&buffers[i as usize]));
    for i in runs_by_size(buffers, live, |b| b.lower, |i| i) {
        offsets[i as usize].store(free.place(&buffers[i as usize], fit), Relaxed);
    }
    // Those ending at or before the cut come first in `ends`.
    let p = ends.partition_point(|&j| buffers[j as usize].upper <= cut.0);
    let forward = |mut free: FreeSpace| {
        let mut next = p;
        for i in runs_by_size(buffers, m as u32..n as u32, |b| b.lower, |i| i) {
            let b = &buffers[i as usize];
            for_ended(buffers, ends, &mut next, b.lower, |j| release(&mut free, j));
            offsets[i as usize].store(free.place(b, fit), Relaxed);
        }
    };
    let backward = |mut free: FreeSpace| {
        // Time runs backward: a buffer is freed once the next one to place ends at or before
        // its start. Those starting before the cut, latest first, are the live ones and those
        // of this side already placed (one of non-empty lifetime starting at or after the next
        // one's end also ends after it, so it came first); among equal starts the order does
        // not matter.
        let mut next = m;
        let side = ends[..p].iter().enumerate().rev().filter_map(|(k, &i)| {
            if let Some(&a) = k.checked_sub(PREFETCH_AHEAD).map(|a| &ends[a]) {
                heaplab_sweep::prefetch(&buffers[a as usize]);
            }
            cut.before(&buffers[i as usize]).then_some(i)
        });
        for i in runs_by_size(buffers, side, |b| b.upper, &tie) {
            let b = &buffers[i as usize];
            while next > 0 && buffers[next - 1].lower >= b.upper {
                next -= 1;
                release(&mut free, next as u32);
            }
            offsets[i as usize].store(free.place(b, fit), Relaxed);
        }
    };
    let copy = free.clone();
    rayon::join(|| forward(copy), || backward(free));
    offsets.into_iter().map(AtomicU64::into_inner).collect()
}

/// How far ahead in end order a sweep asks the cache for the buffer it will free (or place,
/// sweeping backward): that order is a random walk through the buffers at scale, a miss each,
/// which the sweep otherwise waited on (10^7 random buffers: the outward pair 10–15% faster).
const PREFETCH_AHEAD: usize = 16;

/// Calls `each` with the buffers of `ends` (in order of their ends) from `*next` on that end
/// at or before `now`, and moves `*next` past them: what a sweep frees before it places a
/// buffer starting at `now`.
fn for_ended(buffers: &[Buffer], ends: &[u32], next: &mut usize, now: u64, mut each: impl FnMut(u32)) {
    if let Some(&j) = ends.get(*next + PREFETCH_AHEAD) {
        heaplab_sweep::prefetch(&buffers[j as usize]);
    }
    while let Some(&j) = ends.get(*next) {
        if buffers[j as usize].upper > now {
            break;
        }
        *next += 1;
        each(j);
    }
}

/// The one question the sweep asks the rocks before it places a buffer: does a rock that
/// starts later in the buffer's lifetime overlap this range? (Rocks live at its start are in
/// the free space already.) Indexed by address ([`RockIndex`]) where that is small: a few large
/// rocks, long-lived or not (a heap's tables); by time ([`RockTimes`]) where many rocks would
/// be listed in many address buckets each (2·10^5 rocks of random 10^6, the size split's large
/// part, would take some 10 GB by address; the split itself now sweeps with
/// [`crate::free_until`], which does not climb).
enum Rocks {
    ByAddress(RockIndex),
    ByTime(RockTimes),
}

impl Rocks {
    /// Address buckets listing more than this many entries a rock, beyond a floor of 2^24
    /// entries (400 MB), go to the time index instead. Where the address index fits it is the
    /// faster (first fit around the 1,953 rocks of random 2·10^6: 1.26 s against 1.66 s).
    const MAX_ENTRIES_PER_ROCK: u64 = 64;

    fn new(buffers: &[Buffer], rocks: &[u32], offsets: &[u64]) -> Self {
        let shape = RockIndex::shape(buffers, rocks, offsets);
        let entries: u64 = rocks.iter().zip(offsets).map(|(&r, &o)| ((o + buffers[r as usize].size - 1) >> shape.0) - (o >> shape.0) + 1).sum();
        if entries > (1u64 << 24).max(Self::MAX_ENTRIES_PER_ROCK * rocks.len() as u64) {
            Rocks::ByTime(RockTimes::new(buffers, rocks, offsets))
        } else {
            Rocks::ByAddress(RockIndex::with_shape(buffers, rocks, offsets, shape))
        }
    }

    /// The highest top among the rocks that start within `(lower, upper)` and overlap
    /// `[a, a + size)`, if any.
    #[inline]
    fn conflict(&self, a: u64, size: u64, lower: u64, upper: u64) -> Option<u64> {
        match self {
            Rocks::ByAddress(x) => x.conflict(a, size, lower, upper),
            Rocks::ByTime(x) => x.conflict(a, size, lower, upper),
        }
    }
}

/// The rocks by start time, in bins of `2^shift` ticks (about eight rocks a bin), each bin's
/// rocks by offset. A query looks at the bins of the buffer's lifetime and, in each, at the
/// rocks whose offset lies within the bin's largest rock below the range's end: a few binary
/// searches where lifetimes are short against the rocks' time span.
struct RockTimes {
    first: u64,
    shift: u32,
    /// Where each bin's rocks begin in `rocks` (one more entry than bins).
    starts: Vec<usize>,
    /// Per bin, its rocks as (offset, top, lower) by offset.
    rocks: Vec<(u64, u64, u64)>,
    /// Per bin, its largest rock's size.
    largest: Vec<u64>,
}

impl RockTimes {
    const ROCKS_PER_BIN: usize = 512;

    fn new(buffers: &[Buffer], rocks: &[u32], offsets: &[u64]) -> Self {
        let first = rocks.iter().map(|&r| buffers[r as usize].lower).min().unwrap_or(0);
        let last = rocks.iter().map(|&r| buffers[r as usize].lower).max().unwrap_or(0);
        let want = (rocks.len() / Self::ROCKS_PER_BIN).clamp(1, 1 << 22) as u64;
        let shift = ((last - first) / want).max(1).next_power_of_two().trailing_zeros();
        let nb = (((last - first) >> shift) + 1) as usize;
        let bin = |r: u32| ((buffers[r as usize].lower - first) >> shift) as usize;
        let mut starts = vec![0usize; nb + 1];
        for &r in rocks {
            starts[bin(r) + 1] += 1;
        }
        for k in 0..nb {
            starts[k + 1] += starts[k];
        }
        let mut fill = starts.clone();
        let mut items = vec![(0, 0, 0); rocks.len()];
        let mut largest = vec![0u64; nb];
        for (&r, &o) in rocks.iter().zip(offsets) {
            let b = &buffers[r as usize];
            let k = bin(r);
            items[fill[k]] = (o, o + b.size, b.lower);
            fill[k] += 1;
            largest[k] = largest[k].max(b.size);
        }
        for k in 0..nb {
            items[starts[k]..starts[k + 1]].sort_unstable();
        }
        RockTimes { first, shift, starts, rocks: items, largest }
    }

    fn conflict(&self, a: u64, size: u64, lower: u64, upper: u64) -> Option<u64> {
        let nb = self.largest.len();
        // A rock counts when it starts strictly inside `(lower, upper)`: none can below the first.
        if upper <= lower + 1 || upper <= self.first {
            return None;
        }
        let from = ((lower + 1).max(self.first) - self.first) >> self.shift;
        let to = ((upper - 1 - self.first) >> self.shift).min(nb as u64 - 1);
        let mut top = None;
        for k in from as usize..=to as usize {
            let bin = &self.rocks[self.starts[k]..self.starts[k + 1]];
            if bin.is_empty() {
                continue;
            }
            // A rock below `a` overlaps only if it reaches above it: its offset is then more
            // than `a` minus the bin's largest size.
            let low = (a + 1).saturating_sub(self.largest[k]);
            let p = bin.partition_point(|r| r.0 < low);
            for &(o, t, l) in bin[p..].iter().take_while(|r| r.0 < a + size) {
                if t > a && o < a + size && lower < l && l < upper {
                    top = top.max(Some(t));
                }
            }
        }
        top
    }
}

/// The rocks' rectangles by address. A rock overlaps `[a, a + size)` when it holds `a` or
/// starts above it, below `a + size`. For the first the address space up to the highest rock
/// is cut into buckets of `2^shift` bytes, each listing the rocks that overlap it, by start;
/// for the second the rocks are also kept by offset. A query costs two binary searches and the
/// rocks it meets, however long the range (a buffer below the rocks' size can still span many
/// buckets).
struct RockIndex {
    shift: u32,
    /// Where each bucket's rocks begin in `rocks` (one more entry than buckets).
    starts: Vec<usize>,
    /// Per bucket, its rocks as (lower, offset, top) by lower.
    rocks: Vec<(u64, u64, u64)>,
    /// Every rock as (offset, lower, top), by offset.
    by_offset: Vec<(u64, u64, u64)>,
}

impl RockIndex {
    /// About this many buckets per rock: a rock is listed in `size >> shift` + 1 or 2 buckets.
    const BUCKETS_PER_ROCK: usize = 4;
    const MAX_BUCKETS: usize = 1 << 20;

    /// The bucket size (as a shift) and the number of buckets.
    fn shape(buffers: &[Buffer], rocks: &[u32], offsets: &[u64]) -> (u32, usize) {
        let top = rocks.iter().zip(offsets).map(|(&r, &o)| o + buffers[r as usize].size).max().unwrap_or(0);
        let want = (rocks.len() * Self::BUCKETS_PER_ROCK).clamp(1, Self::MAX_BUCKETS) as u64;
        let shift = (top / want).max(1).next_power_of_two().trailing_zeros();
        (shift, ((top >> shift) + 1) as usize)
    }

    /// The index for the bucket size and count [`RockIndex::shape`] gave.
    fn with_shape(buffers: &[Buffer], rocks: &[u32], offsets: &[u64], (shift, nb): (u32, usize)) -> Self {
        let span = |r: u32, o: u64| (o >> shift) as usize..=((o + buffers[r as usize].size - 1) >> shift) as usize;
        let mut starts = vec![0usize; nb + 1];
        for (&r, &o) in rocks.iter().zip(offsets) {
            span(r, o).for_each(|k| starts[k + 1] += 1);
        }
        for k in 0..nb {
            starts[k + 1] += starts[k];
        }
        let mut fill = starts.clone();
        let mut items = vec![(0, 0, 0); starts[nb]];
        for (&r, &o) in rocks.iter().zip(offsets) {
            let b = &buffers[r as usize];
            for k in span(r, o) {
                items[fill[k]] = (b.lower, o, o + b.size);
                fill[k] += 1;
            }
        }
        for k in 0..nb {
            items[starts[k]..starts[k + 1]].sort_unstable();
        }
        let mut by_offset: Vec<(u64, u64, u64)> = rocks.iter().zip(offsets).map(|(&r, &o)| (o, buffers[r as usize].lower, o + buffers[r as usize].size)).collect();
        by_offset.sort_unstable();
        RockIndex { shift, starts, rocks: items, by_offset }
    }

    /// The highest top among the rocks that start within `(lower, upper)` and overlap
    /// `[a, a + size)`, if any.
    fn conflict(&self, a: u64, size: u64, lower: u64, upper: u64) -> Option<u64> {
        let k = (a >> self.shift) as usize;
        if k + 1 >= self.starts.len() || upper <= lower + 1 {
            return None;
        }
        let in_time = |l: u64| lower < l && l < upper;
        let mut top = None;
        // Rocks that hold `a` (and others of its bucket: any overlap counts).
        let bucket = &self.rocks[self.starts[k]..self.starts[k + 1]];
        let p = bucket.partition_point(|r| r.0 <= lower);
        for &(_, o, t) in bucket[p..].iter().take_while(|r| r.0 < upper) {
            if o < a + size && t > a {
                top = top.max(Some(t));
            }
        }
        // Rocks that start inside the range.
        let p = self.by_offset.partition_point(|r| r.0 <= a);
        for &(_, l, t) in self.by_offset[p..].iter().take_while(|r| r.0 < a + size) {
            if in_time(l) {
                top = top.max(Some(t));
            }
        }
        top
    }
}

/// First fit in start order around buffers placed beforehand (the rocks of [`Order::Rocks`],
/// at `rock_offsets`, valid among themselves): the same offsets as the general placer with the
/// rocks first and the rest in [`Order::Start`] order. A rock takes its range in the sweep's
/// free space when it starts; a buffer placed before then keeps clear of it through
/// [`RockIndex`], so the search for its place resumes above any rock in the way. `None` once
/// `deadline` has passed (looked at every 4096 buffers or steps over a rock).
pub fn first_fit_around(buffers: &[Buffer], ends: &[u32], rocks: &[u32], rock_offsets: &[u64], deadline: Option<std::time::Instant>) -> Option<Vec<u64>> {
    debug_assert_eq!(ends.len(), buffers.len());
    const WAITING: u8 = 1;
    const TAKEN: u8 = 2;
    const GONE: u8 = 3;
    let mut offsets = vec![0u64; buffers.len()];
    let mut state = vec![0u8; buffers.len()];
    for (&r, &o) in rocks.iter().zip(rock_offsets) {
        offsets[r as usize] = o;
        state[r as usize] = WAITING;
    }
    let mut by_start = rocks.to_vec();
    by_start.sort_unstable_by_key(|&r| (buffers[r as usize].lower, r));
    let index = Rocks::new(buffers, rocks, rock_offsets);
    let mut free = FreeSpace::new(Fit::First);
    let (mut next_end, mut next_rock) = (0, 0);
    let mut steps = 0u32;
    let mut passed = || {
        steps += 1;
        steps % 4096 == 0 && deadline.is_some_and(|d| std::time::Instant::now() >= d)
    };
    for i in crate::rules::in_start_order(buffers) {
        if passed() {
            return None;
        }
        if state[i as usize] != 0 {
            continue;
        }
        let b = &buffers[i as usize];
        for_ended(buffers, ends, &mut next_end, b.lower, |j| {
            let e = &buffers[j as usize];
            match state[j as usize] {
                _ if e.lower >= e.upper => {}
                WAITING => state[j as usize] = GONE, // ended before anything was placed beside it
                0 | TAKEN => {
                    let o = offsets[j as usize];
                    free.release(o, o + e.size);
                }
                _ => {}
            }
        });
        while let Some(&r) = by_start.get(next_rock) {
            let rb = &buffers[r as usize];
            if rb.lower > b.lower {
                break;
            }
            next_rock += 1;
            if state[r as usize] == WAITING && rb.lower < rb.upper {
                free.take_range(offsets[r as usize], rb.size);
                state[r as usize] = TAKEN;
            }
        }
        let mut from = 0;
        let (a, gap) = loop {
            let (a, gap) = free.lowest_from(from, b.size, b.align_log2);
            match index.conflict(a, b.size, b.lower, b.upper) {
                Some(_) if passed() => return None,
                Some(top) => from = top,
                None => break (a, gap),
            }
        };
        if b.lower < b.upper {
            free.take(a, b.size, gap);
        }
        offsets[i as usize] = a;
    }
    Some(offsets)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::heuristics::place_in_order;

    /// Instances for the sweeps' oracle tests, by round: tiny to large sizes, dense to sparse
    /// in time, some with alignment; odd rounds mimic a heap (a few large long-lived blocks among
    /// many small short-lived ones, and runs of equal starts).
    fn sweep_instance(rng: &mut crate::rng::Rng, round: u64) -> Vec<Buffer> {
        let n = 200 + (round as usize * 97) % 3000;
        let span = 1 + n as u64 / (1 + round % 7);
        (0..n as u64)
            .map(|i| {
                let lo = if round % 2 == 1 && rng.next_u64() % 4 == 0 { (i as u64 * span / n as u64) & !3 } else { rng.next_u64() % span };
                let mut len = 1 + rng.next_u64() % (1 + span / (1 + round % 5));
                let mut size = match round % 3 {
                    0 => 1 + rng.next_u64() % 8,
                    1 => 1 << (rng.next_u64() % 12),
                    _ => 1 + rng.next_u64() % 100_000,
                };
                if round % 2 == 1 && rng.next_u64() % 50 == 0 {
                    (size, len) = (size * 64, len * 8);
                }
                let mut b = Buffer::new(i, lo, lo + len, size);
                b.align_log2 = if round % 4 == 0 { (rng.next_u64() % 6) as u8 } else { 0 };
                b
            })
            .collect()
    }

    /// The two rock indexes answer every query alike: rocks of all sizes and lifetimes, queries
    /// below, across and above them, lifetimes that hold rocks' starts and ones that do not.
    #[test]
    fn rock_indexes_by_address_and_by_time_agree() {
        let mut rng = crate::rng::Rng::new(41);
        for round in 0..40u64 {
            let bs = sweep_instance(&mut rng, round);
            let rocks: Vec<u32> = (0..bs.len() as u32).filter(|i| i % (2 + round as u32 % 5) == 0).collect();
            let sub: Vec<Buffer> = rocks.iter().map(|&r| bs[r as usize]).collect();
            let offsets = place_in_order(&sub, &(0..sub.len() as u32).collect::<Vec<_>>(), Fit::First);
            let (by_address, by_time) = (RockIndex::with_shape(&bs, &rocks, &offsets, RockIndex::shape(&bs, &rocks, &offsets)), RockTimes::new(&bs, &rocks, &offsets));
            let top = sub.iter().zip(&offsets).map(|(b, &o)| o + b.size).max().unwrap_or(1);
            for q in 0..1000 {
                let b = &bs[(rng.next_u64() % bs.len() as u64) as usize];
                let (mut lower, mut upper) = (b.lower, b.upper);
                // Every other query ends just after, or starts just before, a rock's start (the
                // first rock's among them): the edges of the strict `(lower, upper)`.
                if q % 2 == 1 {
                    let r = if q % 6 == 1 { sub.iter().min_by_key(|r| r.lower).unwrap() } else { &sub[(rng.next_u64() % sub.len() as u64) as usize] };
                    if q % 4 == 1 {
                        (lower, upper) = (r.lower.saturating_sub(1 + rng.next_u64() % 3), r.lower + 1);
                    } else {
                        (lower, upper) = (r.lower.saturating_sub(1), r.lower + 1 + rng.next_u64() % 50);
                    }
                }
                let a = rng.next_u64() % (top + top / 8 + 1);
                let size = 1 + rng.next_u64() % (1 + top / (1 + rng.next_u64() % 64));
                assert_eq!(by_address.conflict(a, size, lower, upper), by_time.conflict(a, size, lower, upper), "round {round}, [{lower}, {upper})");
            }
        }
    }

    /// First fit around rocks gives exactly the general placer's offsets with the rocks first,
    /// for the rocks of [`Order::Rocks`] and for any subset placed in any order (rocks that
    /// start with, before, inside and after the others' lifetimes, and ones that end before
    /// anything is placed beside them); every placement passes the validator.
    #[test]
    fn first_fit_around_rocks_matches_the_general_placer() {
        let mut rng = crate::rng::Rng::new(29);
        for round in 0..80u64 {
            let bs = sweep_instance(&mut rng, round);
            let ends = ends_of(&bs);
            let rocks: Vec<u32> = match round % 4 {
                0 | 1 => crate::rules::rocks(&bs),
                _ => {
                    let mut r: Vec<u32> = (0..bs.len() as u32).filter(|_| rng.next_u64() % (2 + round % 9) == 0).collect();
                    crate::rng::Rng::new(round).shuffle(&mut r);
                    r
                }
            };
            let sub: Vec<Buffer> = rocks.iter().map(|&r| bs[r as usize]).collect();
            let rock_offsets = place_in_order(&sub, &(0..sub.len() as u32).collect::<Vec<_>>(), Fit::First);
            let got = first_fit_around(&bs, &ends, &rocks, &rock_offsets, None).expect("no deadline");
            assert!(heaplab_sweep::validate(&bs, &got).is_valid(), "round {round}");
            let mut is_rock = vec![false; bs.len()];
            rocks.iter().for_each(|&r| is_rock[r as usize] = true);
            let ord: Vec<u32> = rocks.iter().copied().chain(crate::rules::order(&bs, Order::Start).into_iter().filter(|&i| !is_rock[i as usize])).collect();
            assert_eq!(got, place_in_order(&bs, &ord, Fit::First), "round {round}: {} rocks", rocks.len());
            if round % 4 < 2 {
                let h = crate::heuristics::Heuristic { order: Order::Rocks, fit: Fit::First };
                assert_eq!(h.run(&bs), got, "round {round}: the heuristic");
                assert_eq!(ord, crate::rules::order(&bs, Order::Rocks), "round {round}: the order");
            }
        }
    }

    /// Many live buffers at once, so the gap list splits and joins blocks and every case of
    /// taking and releasing (inside a gap, at its ends, on top, merging with one or both
    /// neighbours) occurs: the sweep gives exactly the general placer's offsets (oracle-tested
    /// against brute force), and every placement passes the validator.
    #[test]
    fn sweep_matches_the_general_placer_with_many_gaps() {
        let mut rng = crate::rng::Rng::new(17);
        for round in 0..60u64 {
            let bs = sweep_instance(&mut rng, round);
            let ord = crate::rules::order(&bs, Order::Start);
            for fit in [Fit::First, Fit::Best] {
                let got = place_by_start(&bs, fit);
                assert!(heaplab_sweep::validate(&bs, &got).is_valid(), "round {round} {fit:?}");
                assert_eq!(got, place_in_order(&bs, &ord, fit), "round {round} {fit:?}");
            }
        }
    }

    /// The outward sweeps give exactly the general placer's offsets in [`Order::Outward`] and
    /// [`Order::Peak`], with either fit, through the heuristic too: on buffers by start and
    /// not; with the ends in any order among equal ends (the ties are the sweeps' own); with
    /// empty lifetimes anywhere, the middle buffer's (the cut's) included; on instances where
    /// the middle cut falls inside runs of
    /// equal starts and of equal ends (checked to occur), where everything starts at one tick
    /// (no backward side), and of 0 to 3 buffers. Every placement passes the validator.
    #[test]
    fn outward_sweeps_match_the_general_placer() {
        let mut rng = crate::rng::Rng::new(31);
        let (mut starts_tied, mut ends_tied) = (0, 0);
        for round in 0..80u64 {
            let mut bs = match round {
                0..=3 => (0..round).map(|i| Buffer::new(i, i % 2, 3 + i % 2, 1 + i)).collect(),
                4 => (0..300).map(|i| Buffer::new(i, 7, 8 + i % 13, 1 + i % 5)).collect(),
                _ => sweep_instance(&mut rng, round),
            };
            let n = bs.len();
            // Both paths: buffers by start (as a component's are) and not.
            if round % 4 < 2 {
                bs.sort_by_key(|b| b.lower);
            }
            if n > 4 && round % 3 == 0 {
                for k in [round as usize % n, n / 2, rng.next_u64() as usize % n] {
                    bs[k].upper = bs[k].lower;
                }
            }
            let ord = crate::rules::order(&bs, Order::Outward);
            let mut seen = ord.clone();
            seen.sort_unstable();
            assert_eq!(seen, (0..n as u32).collect::<Vec<_>>(), "round {round}: every buffer once");
            // Ends with the ties among equal ends shuffled.
            let mut ends = ends_of(&bs);
            let mut k = 0;
            while k < n {
                let run = ends[k..].iter().take_while(|&&j| bs[j as usize].upper == bs[ends[k] as usize].upper).count();
                crate::rng::Rng::new(round ^ k as u64).shuffle(&mut ends[k..k + run]);
                k += run;
            }
            if let Some(&middle) = crate::rules::order(&bs, Order::Start).get(n / 2) {
                let cut = bs[middle as usize].lower;
                starts_tied += usize::from(bs.iter().filter(|b| b.lower == cut).count() > 1);
                ends_tied += usize::from(bs.iter().filter(|b| b.upper == cut && b.lower < cut).count() > 1);
            }
            for (order, fit) in [Order::Outward, Order::Peak].into_iter().flat_map(|o| [(o, Fit::First), (o, Fit::Best)]) {
                let got = place_outward(&bs, &ends, fit, order);
                let nonempty: Vec<Buffer> = bs.iter().filter(|b| b.lower < b.upper).copied().collect();
                let placed: Vec<u64> = bs.iter().zip(&got).filter(|(b, _)| b.lower < b.upper).map(|(_, &o)| o).collect();
                assert!(heaplab_sweep::validate(&nonempty, &placed).is_valid(), "round {round} {order:?} {fit:?}");
                let ord = if order == Order::Outward { ord.clone() } else { crate::rules::order(&bs, order) };
                let want = place_in_order(&bs, &ord, fit);
                let differ = bs.iter().zip(got.iter().zip(&want)).filter(|(b, (g, w))| b.lower < b.upper && g != w).count();
                assert_eq!(differ, 0, "round {round} {order:?} {fit:?}");
                let h = crate::heuristics::Heuristic { order, fit };
                assert_eq!(h.run(&bs), place_outward(&bs, &ends_of(&bs), fit, order), "round {round} {order:?} {fit:?}: the heuristic");
            }
        }
        assert!(starts_tied >= 10 && ends_tied >= 10, "cuts inside runs: {starts_tied} of equal starts, {ends_tied} of equal ends");
    }

    /// The gap list against a plain ordered map, over random additions, removals and reshapes
    /// of up to a few thousand gaps (so blocks split, empty and join, and groups of blocks
    /// shift): the same lowest fits (with alignment, from zero or an address) and the same
    /// neighbours, and every group's bound covers its blocks.
    #[test]
    fn gap_list_answers_as_an_ordered_map() {
        let mut rng = crate::rng::Rng::new(23);
        for round in 0..12u64 {
            let (mut list, mut map) = (GapList::new(), BTreeMap::<u64, u64>::new());
            let cap = [10, 70, 300, 3000][round as usize % 4];
            for step in 0..20_000u64 {
                // Gaps live on a grid of slots 1,000 apart, each within its slot.
                let slot = rng.next_u64() % (cap * 2) * 1000;
                let grow = step % 5000 < 3000;
                match map.get(&slot).copied() {
                    None if grow || map.is_empty() => {
                        let end = slot + 1 + rng.next_u64() % 999;
                        list.insert(slot, end);
                        map.insert(slot, end);
                    }
                    Some(_) if rng.next_u64().is_multiple_of(3) => {
                        let (ns, ne) = (slot + rng.next_u64() % 10, slot + 10 + rng.next_u64() % 990);
                        list.reshape(slot, ns, ne);
                        map.remove(&slot);
                        map.insert(ns, ne);
                        // Back to the grid, so later slots find it.
                        list.reshape(ns, slot, ne);
                        map.remove(&ns);
                        map.insert(slot, ne);
                    }
                    Some(_) => {
                        list.remove(slot);
                        map.remove(&slot);
                    }
                    None => {}
                }
                let size = 1 + rng.next_u64() % 1000;
                let align = (rng.next_u64() % 4) as u8;
                let want = map.iter().find_map(|(&s, &e)| {
                    let a = align_up(s, align).unwrap();
                    (a + size <= e).then_some((a, s, e))
                });
                assert_eq!(list.lowest_from(0, size, align), want, "round {round} step {step}");
                // From an address: a gap straddling it counts from there.
                let from = rng.next_u64() % (cap * 2) * 1000 + rng.next_u64() % 1000;
                let want = map.iter().find_map(|(&s, &e)| {
                    let a = align_up(s.max(from), align).unwrap();
                    (a + size <= e).then_some((a, s, e))
                });
                assert_eq!(list.lowest_from(from, size, align), want, "round {round} step {step}");
                assert!(list.bounds_hold(), "round {round} step {step}");
                let key = rng.next_u64() % (cap * 2) * 1000 + 500;
                let want = (map.range(..key).next_back().map(|(&s, &e)| (s, e)), map.range(key..).next().map(|(&s, &e)| (s, e)));
                assert_eq!(list.around(key), want, "round {round} step {step}");
                assert_eq!(list.blocks.iter().map(Vec::len).sum::<usize>(), map.len());
                for (bi, b) in list.blocks.iter().enumerate() {
                    assert!(!b.is_empty() && b.len() <= BLOCK);
                    assert_eq!((list.first[bi], list.longest[bi]), (b[0].0, b.iter().map(|g| g.1 - g.0).max().unwrap()));
                }
            }
        }
    }
}
