//! Which addresses are taken during a time range: the query at the heart of every greedy placer.
//!
//! A segment tree over the (compressed) time axis. A placed buffer is stored at the O(log n)
//! canonical nodes covering its lifetime, in two coalesced interval sets per node:
//! - `here`: address ranges of buffers canonical at this node (they cover its whole time range);
//! - `sub`: the union of address ranges of buffers stored at this node or anywhere below it.
//!
//! The buffers whose lifetimes meet a query range Q are exactly those in `sub` of Q's canonical
//! nodes plus those in `here` of every node on the two leaf-to-root boundary paths of Q (tree
//! nodes are laminar: a buffer's node and a query's node meet only if one contains the other).
//! A first-fit query walks the free gaps of the union of these O(log n) sets. Because the sets
//! are coalesced, a densely packed stack of a thousand buffers is one interval, so the cost
//! follows the number of *gaps* below the answer, not the number of conflicting buffers, which
//! is what enumerating neighbours (XLA's and TFLite's greedy planners) pays for.
//!

use heaplab_model::{align_up, Buffer};

/// Sorted, disjoint, coalesced half-open address intervals.
#[derive(Default, Clone, Debug)]
struct IntervalSet(Vec<(u64, u64)>);

impl IntervalSet {
    fn insert(&mut self, start: u64, end: u64) {
        let v = &mut self.0;
        // Intervals touching or overlapping [start, end) are merged into it.
        let i = v.partition_point(|iv| iv.1 < start);
        let j = v.partition_point(|iv| iv.0 <= end);
        if i == j {
            v.insert(i, (start, end));
        } else {
            let merged = (v[i].0.min(start), v[j - 1].1.max(end));
            v.splice(i..j, std::iter::once(merged));
        }
    }

    /// Lowest `a ≥ x`, aligned, with `[a, a + size)` free in this set. `cursor` is an index no
    /// later than the first interval ending after `x` (`usize::MAX`: unknown); it is advanced,
    /// so repeated calls with growing `x` scan the set once instead of searching it each time.
    #[inline]
    fn lowest_window(&self, x: u64, size: u64, align_log2: u8, cursor: &mut usize) -> u64 {
        let v = &self.0;
        let mut k = if *cursor == usize::MAX { v.partition_point(|iv| iv.1 <= x) } else { *cursor };
        while k < v.len() && v[k].1 <= x {
            k += 1;
        }
        *cursor = k;
        let mut a = align_up(x, align_log2).unwrap_or(u64::MAX);
        while k < v.len() && v[k].0 < a.saturating_add(size) {
            a = a.max(align_up(v[k].1, align_log2).unwrap_or(u64::MAX));
            k += 1;
        }
        a
    }

    /// The first interval ending after `x`.
    #[inline]
    fn first_ending_after(&self, x: u64) -> Option<(u64, u64)> {
        let k = self.0.partition_point(|iv| iv.1 <= x);
        self.0.get(k).copied()
    }
}

/// Placed buffers indexed by time, answering "lowest / tightest free address range during
/// `[lower, upper)`".
pub struct Occupancy {
    /// Sorted distinct time points; leaf `j` is `[times[j], times[j+1])`.
    times: Vec<u64>,
    leaves: usize,
    here: Vec<Option<Box<IntervalSet>>>,
    sub: Vec<Option<Box<IntervalSet>>>,
    /// Reused query buffers: the gathered sets and a scan cursor into each.
    sets: Vec<usize>,
    cursors: Vec<usize>,
}

impl Occupancy {
    /// An empty index over the time points of `buffers`.
    pub fn new(buffers: &[Buffer]) -> Self {
        let mut times: Vec<u64> = buffers.iter().flat_map(|b| [b.lower, b.upper]).collect();
        times.sort_unstable();
        times.dedup();
        let leaves = times.len().max(2).next_power_of_two();
        Occupancy {
            times,
            leaves,
            here: vec![None; 2 * leaves],
            sub: vec![None; 2 * leaves],
            sets: Vec::with_capacity(128),
            cursors: Vec::with_capacity(128),
        }
    }

    fn leaf_range(&self, b: &Buffer) -> (usize, usize) {
        let l = self.times.partition_point(|&t| t < b.lower);
        let r = self.times.partition_point(|&t| t < b.upper);
        (l, r)
    }

    /// Records buffer `b` at `offset`.
    pub fn insert(&mut self, b: &Buffer, offset: u64) {
        let (l, r) = self.leaf_range(b);
        let end = offset + b.size;
        let (mut lo, mut hi) = (l + self.leaves, r + self.leaves);
        while lo < hi {
            if lo & 1 == 1 {
                self.here[lo].get_or_insert_with(Default::default).insert(offset, end);
                lo += 1;
            }
            if hi & 1 == 1 {
                hi -= 1;
                self.here[hi].get_or_insert_with(Default::default).insert(offset, end);
            }
            lo /= 2;
            hi /= 2;
        }
        // `sub` of the canonical nodes and all their ancestors: every node on the two boundary
        // paths, plus the canonical nodes themselves (which may hang off those paths).
        let (mut lo, mut hi) = (l + self.leaves, r + self.leaves);
        while lo < hi {
            if lo & 1 == 1 {
                self.sub[lo].get_or_insert_with(Default::default).insert(offset, end);
                lo += 1;
            }
            if hi & 1 == 1 {
                hi -= 1;
                self.sub[hi].get_or_insert_with(Default::default).insert(offset, end);
            }
            lo /= 2;
            hi /= 2;
        }
        for leaf in [l, r - 1] {
            // Ancestors only: a path node whose leaf range lies inside [l, r) is covered by a
            // canonical node already.
            let (mut node, mut width) = ((leaf + self.leaves) / 2, 2usize);
            while node >= 1 {
                let first = (leaf / width) * width;
                if first < l || first + width > r {
                    self.sub[node].get_or_insert_with(Default::default).insert(offset, end);
                }
                node /= 2;
                width *= 2;
            }
        }
    }

    /// Collects the sets whose union is the occupied address space during `b`'s lifetime, as
    /// indices: `2*node` for `here[node]`, `2*node+1` for `sub[node]`.
    fn gather(&mut self, b: &Buffer) {
        self.sets.clear();
        let (l, r) = self.leaf_range(b);
        let (mut lo, mut hi) = (l + self.leaves, r + self.leaves);
        while lo < hi {
            if lo & 1 == 1 {
                if self.sub[lo].is_some() {
                    self.sets.push(2 * lo + 1);
                }
                lo += 1;
            }
            if hi & 1 == 1 {
                hi -= 1;
                if self.sub[hi].is_some() {
                    self.sets.push(2 * hi + 1);
                }
            }
            lo /= 2;
            hi /= 2;
        }
        for leaf in [l, r - 1] {
            let mut node = leaf + self.leaves;
            while node >= 1 {
                if self.here[node].is_some() {
                    self.sets.push(2 * node);
                }
                node /= 2;
            }
        }
        self.sets.sort_unstable();
        self.sets.dedup();
    }

    #[inline]
    fn set(&self, k: usize) -> &IntervalSet {
        let s = if k & 1 == 1 { &self.sub[k / 2] } else { &self.here[k / 2] };
        s.as_deref().expect("gathered sets exist")
    }

    /// Moves `x` up past every occupied interval containing it; returns the free gap
    /// `[x, next occupied start)` (`u64::MAX` when nothing lies above).
    fn free_gap_from(&self, mut x: u64) -> (u64, u64) {
        let m = self.sets.len();
        let mut clean = 0; // consecutive sets that did not move x
        let mut k = 0;
        while clean < m {
            match self.set(self.sets[k]).first_ending_after(x) {
                Some((s, e)) if s <= x => {
                    x = e;
                    clean = 1;
                }
                _ => clean += 1,
            }
            k = (k + 1) % m;
        }
        let next = self.sets.iter().filter_map(|&k| self.set(k).first_ending_after(x)).map(|(s, _)| s).min();
        (x, next.unwrap_or(u64::MAX))
    }

    /// Lowest aligned offset free during `b`'s lifetime (first fit).
    ///
    /// A leapfrog join: each set moves `x` up to its own lowest free window of `b.size`; the
    /// answer is the first `x` no set moves. Each set's window function is monotone and never
    /// passes the true answer, so cycling until a full round leaves `x` unchanged finds it,
    /// touching each set's intervals below the answer about once.
    pub fn lowest_fit(&mut self, b: &Buffer) -> u64 {
        self.gather(b);
        let m = self.sets.len();
        let mut cursors = std::mem::take(&mut self.cursors);
        cursors.clear();
        cursors.resize(m, usize::MAX);
        let mut x = align_up(0, b.align_log2).unwrap_or(0);
        let (mut clean, mut k) = (0, 0);
        while clean < m {
            let y = self.set(self.sets[k]).lowest_window(x, b.size, b.align_log2, &mut cursors[k]);
            if y != x {
                x = y;
                clean = 1;
            } else {
                clean += 1;
            }
            k = (k + 1) % m;
        }
        self.cursors = cursors;
        x
    }

    /// Start of the smallest free gap during `b`'s lifetime that holds it (lowest on ties);
    /// on top of everything when none does (best fit).
    pub fn tightest_fit(&mut self, b: &Buffer) -> u64 {
        self.gather(b);
        if self.sets.is_empty() {
            return 0;
        }
        let mut best: Option<(u64, u64)> = None;
        let mut x = 0u64;
        loop {
            let (start, end) = self.free_gap_from(x);
            let a = align_up(start, b.align_log2).unwrap_or(u64::MAX);
            if end == u64::MAX {
                return best.map(|(_, s)| s).unwrap_or(a);
            }
            if a.saturating_add(b.size) <= end && best.is_none_or(|(len, _)| end - start < len) {
                best = Some((end - start, a));
            }
            x = end;
        }
    }
}
