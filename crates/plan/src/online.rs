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
//! [`place_in_order`](crate::heuristics::place_in_order) with [`Order::Start`](crate::heuristics::Order::Start)
//! (the oracle test says so), in O(n log n) plus, for first fit, the gaps scanned below each
//! answer; memory is O(max live buffers) beyond the output.

use crate::heuristics::Fit;
use heaplab_model::{align_up, Buffer};
use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap};

/// Free address space while the sweep runs: bounded gaps and everything from `top` up.
struct FreeSpace {
    /// Gap start → gap end, for the maximal free ranges below `top`.
    gaps: BTreeMap<u64, u64>,
    /// The same gaps as (length, start), kept only for best fit.
    by_len: Option<BTreeSet<(u64, u64)>>,
    /// Everything at or above `top` is free.
    top: u64,
}

impl FreeSpace {
    fn add_gap(&mut self, start: u64, end: u64) {
        self.gaps.insert(start, end);
        if let Some(s) = &mut self.by_len {
            s.insert((end - start, start));
        }
    }

    fn remove_gap(&mut self, start: u64, end: u64) {
        self.gaps.remove(&start);
        if let Some(s) = &mut self.by_len {
            s.remove(&(end - start, start));
        }
    }

    /// Lowest aligned offset where `size` bytes are free.
    fn lowest(&self, size: u64, align_log2: u8) -> u64 {
        for (&s, &e) in &self.gaps {
            if e - s >= size {
                let a = align_up(s, align_log2).unwrap_or(u64::MAX);
                if a.saturating_add(size) <= e {
                    return a;
                }
            }
        }
        align_up(self.top, align_log2).unwrap_or(u64::MAX)
    }

    /// Aligned start of the smallest gap that holds `size` bytes (lowest on ties), else on top.
    fn tightest(&self, size: u64, align_log2: u8) -> u64 {
        let by_len = self.by_len.as_ref().expect("best fit keeps gaps by length");
        for &(len, s) in by_len.range((size, 0)..) {
            let a = align_up(s, align_log2).unwrap_or(u64::MAX);
            if a.saturating_add(size) <= s + len {
                return a;
            }
        }
        align_up(self.top, align_log2).unwrap_or(u64::MAX)
    }

    /// Marks `[a, a + size)` taken; it lies inside a gap or at or above `top`.
    fn take(&mut self, a: u64, size: u64) {
        let end = a + size;
        if a >= self.top {
            if a > self.top {
                self.add_gap(self.top, a);
            }
            self.top = end;
            return;
        }
        let (&gs, &ge) = self.gaps.range(..=a).next_back().expect("a free offset lies in a gap");
        debug_assert!(end <= ge);
        self.remove_gap(gs, ge);
        if gs < a {
            self.add_gap(gs, a);
        }
        if end < ge {
            self.add_gap(end, ge);
        }
    }

    /// Returns `[start, end)` to the free space, merging it with the gaps it touches.
    fn release(&mut self, mut start: u64, mut end: u64) {
        if let Some((&gs, &ge)) = self.gaps.range(..start).next_back() {
            if ge == start {
                self.remove_gap(gs, ge);
                start = gs;
            }
        }
        if let Some(&ge) = self.gaps.get(&end) {
            self.remove_gap(end, ge);
            end = ge;
        }
        if end == self.top {
            self.top = start;
        } else {
            self.add_gap(start, end);
        }
    }
}

/// Places `buffers` in [`Order::Start`](crate::heuristics::Order::Start) order with the given
/// fit, by sweeping time; the same offsets as the general placer with that order.
pub fn place_by_start(buffers: &[Buffer], fit: Fit) -> Vec<u64> {
    let order = crate::heuristics::order(buffers, crate::heuristics::Order::Start);
    let mut free = FreeSpace { gaps: BTreeMap::new(), by_len: (fit == Fit::Best).then(BTreeSet::new), top: 0 };
    // (upper, buffer) of placed buffers still live.
    let mut live: BinaryHeap<Reverse<(u64, u32)>> = BinaryHeap::new();
    let mut offsets = vec![0u64; buffers.len()];
    for &i in &order {
        let b = &buffers[i as usize];
        while let Some(&Reverse((upper, j))) = live.peek() {
            if upper > b.lower {
                break;
            }
            live.pop();
            let o = offsets[j as usize];
            free.release(o, o + buffers[j as usize].size);
        }
        let a = match fit {
            Fit::First => free.lowest(b.size, b.align_log2),
            Fit::Best => free.tightest(b.size, b.align_log2),
        };
        free.take(a, b.size);
        offsets[i as usize] = a;
        live.push(Reverse((b.upper, i)));
    }
    offsets
}
