//! Which buffers are live when: a static index over the lifetimes of an instance, for the
//! searches that work on time windows ([`crate::improve`], [`crate::windows`]).
//!
//! [`TimeIndex`] lists the buffers live somewhere in a time range in O((k + 1) log n) for k
//! answers and counts them in O(log n), where a scan of every buffer per query would dominate
//! those searches from 10^5 buffers up. It is built once (O(n log n); about 28 bytes a buffer,
//! 24 for the sorted ends and starts and 4 for the start order, which buffers already in start
//! order, as the driver's components are, do without) and never changes: placements move buffers
//! in address, not in time.

use heaplab_model::Buffer;

/// Buffers per leaf of the tree of [`TimeIndex`]: a query scans a leaf's buffers, and the tree
/// costs 16 bytes a leaf (its leaves rounded up to a power of two), so one leaf per buffer made
/// it the largest part of the index (10^7 buffers: 268 MB), while a scan of 16 ends is cheap.
const LEAF: usize = 16;

/// Buffers sorted by start, with a segment tree of the latest end under each node.
pub struct TimeIndex {
    /// Buffer indices by `lower` (ties by index); empty when that is `0..n`.
    by_lower: Vec<u32>,
    /// `lower` of the buffers in start order, sorted.
    lowers: Vec<u64>,
    /// `upper` of the buffers in start order.
    uppers: Vec<u64>,
    /// Every `upper`, sorted (for counting).
    sorted_uppers: Vec<u64>,
    /// `max_upper[node]`: the latest `upper` under `node` (implicit tree, leaves at
    /// `leaves..2·leaves`, leaf `k` for the buffers `k·LEAF..(k+1)·LEAF` in start order).
    max_upper: Vec<u64>,
    leaves: usize,
}

impl TimeIndex {
    /// The index of `buffers`' lifetimes; answers name buffers by their index there.
    pub fn new(buffers: &[Buffer]) -> Self {
        let by_lower: Vec<u32> = if buffers.is_sorted_by_key(|b| b.lower) {
            Vec::new()
        } else {
            let mut v: Vec<u32> = (0..buffers.len() as u32).collect();
            v.sort_unstable_by_key(|&i| (buffers[i as usize].lower, i));
            v
        };
        let at = |k: usize| if by_lower.is_empty() { &buffers[k] } else { &buffers[by_lower[k] as usize] };
        let lowers: Vec<u64> = (0..buffers.len()).map(|k| at(k).lower).collect();
        let uppers: Vec<u64> = (0..buffers.len()).map(|k| at(k).upper).collect();
        let mut sorted_uppers = uppers.clone();
        sorted_uppers.sort_unstable();
        let leaves = buffers.len().div_ceil(LEAF).max(1).next_power_of_two();
        let mut max_upper = vec![0u64; 2 * leaves];
        for (k, chunk) in uppers.chunks(LEAF).enumerate() {
            max_upper[leaves + k] = chunk.iter().copied().max().unwrap_or(0);
        }
        for node in (1..leaves).rev() {
            max_upper[node] = max_upper[2 * node].max(max_upper[2 * node + 1]);
        }
        TimeIndex { by_lower, lowers, uppers, sorted_uppers, max_upper, leaves }
    }

    /// Appends to `out` the buffers live somewhere in `[lo, hi)` (`lower < hi` and `upper > lo`),
    /// in start order.
    pub fn overlapping(&self, lo: u64, hi: u64, out: &mut Vec<usize>) {
        let end = self.lowers.partition_point(|&t| t < hi);
        if end == 0 || lo >= hi {
            return;
        }
        // Depth-first, left child on top, so answers come out in start order. Nodes span leaves
        // `a..b`, buffers `a·LEAF..b·LEAF`.
        let mut stack = vec![(1usize, 0usize, self.leaves)];
        while let Some((node, a, b)) = stack.pop() {
            if a * LEAF >= end || self.max_upper[node] <= lo {
                continue;
            }
            if b - a == 1 {
                for k in a * LEAF..((a + 1) * LEAF).min(end) {
                    if self.uppers[k] > lo {
                        out.push(if self.by_lower.is_empty() { k } else { self.by_lower[k] as usize });
                    }
                }
                continue;
            }
            let mid = (a + b) / 2;
            stack.push((2 * node + 1, mid, b));
            stack.push((2 * node, a, mid));
        }
    }

    /// How many buffers are live somewhere in `[lo, hi)`: those starting before `hi` minus
    /// those of them that ended by `lo` (every buffer ending by `lo < hi` started before `hi`).
    pub fn count(&self, lo: u64, hi: u64) -> usize {
        if lo >= hi {
            return 0;
        }
        self.lowers.partition_point(|&t| t < hi) - self.sorted_uppers.partition_point(|&t| t <= lo)
    }

    /// The latest `upper` among all buffers (0 without buffers).
    pub fn end(&self) -> u64 {
        self.max_upper[1]
    }

    /// The earliest `lower` among all buffers (0 without buffers).
    pub fn start(&self) -> u64 {
        self.lowers.first().copied().unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn overlapping_and_count_match_a_scan(
            spans in prop::collection::vec((0u64..60, 1u64..30), 0..80),
            lo in 0u64..100,
            len in 0u64..40,
            sorted in any::<bool>(),
        ) {
            let mut bs: Vec<Buffer> = spans.iter().enumerate().map(|(i, &(l, d))| Buffer::new(i as u64, l, l + d, 1)).collect();
            // Both forms of the index: buffers in start order (no order kept) and not.
            if sorted {
                bs.sort_by_key(|b| b.lower);
            }
            let idx = TimeIndex::new(&bs);
            let hi = lo + len;
            let mut got = Vec::new();
            idx.overlapping(lo, hi, &mut got);
            prop_assert!(got.windows(2).all(|w| (bs[w[0]].lower, w[0]) < (bs[w[1]].lower, w[1])), "in start order");
            got.sort_unstable();
            let want: Vec<usize> = (0..bs.len()).filter(|&i| lo < hi && bs[i].lower < hi && bs[i].upper > lo).collect();
            prop_assert_eq!(&got, &want);
            prop_assert_eq!(idx.count(lo, hi), want.len());
            if !bs.is_empty() {
                prop_assert_eq!(idx.end(), bs.iter().map(|b| b.upper).max().unwrap());
                prop_assert_eq!(idx.start(), bs.iter().map(|b| b.lower).min().unwrap());
            }
        }
    }
}
