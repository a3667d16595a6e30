//! Which buffers are live when: a static index over the lifetimes of an instance, for the
//! searches that work on time windows ([`crate::improve`], [`crate::windows`]).
//!
//! [`TimeIndex`] lists the buffers live somewhere in a time range in O((k + 1) log n) for k
//! answers and counts them in O(log n), where a scan of every buffer per query would dominate
//! those searches from 10^5 buffers up. It is built once (O(n log n), 20 bytes a buffer plus a tree of 16 bytes per leaf, leaves rounded up to a
//! power of two) and
//! never changes: placements move buffers in address, not in time.

use heaplab_model::Buffer;

/// Buffers sorted by start, with a segment tree of the latest end under each node.
pub struct TimeIndex {
    /// Buffer indices by `lower` (ties by index).
    by_lower: Vec<u32>,
    /// `lower` of `by_lower[k]`, sorted.
    lowers: Vec<u64>,
    /// Every `upper`, sorted (for counting).
    sorted_uppers: Vec<u64>,
    /// `max_upper[node]`: the latest `upper` under `node` (implicit tree, leaves at
    /// `leaves..2·leaves` in `by_lower` order).
    max_upper: Vec<u64>,
    leaves: usize,
}

impl TimeIndex {
    /// The index of `buffers`' lifetimes; answers name buffers by their index there.
    pub fn new(buffers: &[Buffer]) -> Self {
        let mut by_lower: Vec<u32> = (0..buffers.len() as u32).collect();
        by_lower.sort_unstable_by_key(|&i| (buffers[i as usize].lower, i));
        let lowers: Vec<u64> = by_lower.iter().map(|&i| buffers[i as usize].lower).collect();
        let uppers: Vec<u64> = by_lower.iter().map(|&i| buffers[i as usize].upper).collect();
        let mut sorted_uppers = uppers.clone();
        sorted_uppers.sort_unstable();
        let leaves = buffers.len().max(1).next_power_of_two();
        let mut max_upper = vec![0u64; 2 * leaves];
        max_upper[leaves..leaves + uppers.len()].copy_from_slice(&uppers);
        for node in (1..leaves).rev() {
            max_upper[node] = max_upper[2 * node].max(max_upper[2 * node + 1]);
        }
        TimeIndex { by_lower, lowers, sorted_uppers, max_upper, leaves }
    }

    /// Appends to `out` the buffers live somewhere in `[lo, hi)` (`lower < hi` and `upper > lo`),
    /// in start order.
    pub fn overlapping(&self, lo: u64, hi: u64, out: &mut Vec<usize>) {
        let end = self.lowers.partition_point(|&t| t < hi);
        if end == 0 || lo >= hi {
            return;
        }
        // Depth-first, left child on top, so answers come out in start order.
        let mut stack = vec![(1usize, 0usize, self.leaves)];
        while let Some((node, a, b)) = stack.pop() {
            if a >= end || self.max_upper[node] <= lo {
                continue;
            }
            if b - a == 1 {
                out.push(self.by_lower[a] as usize);
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
        ) {
            let bs: Vec<Buffer> = spans.iter().enumerate().map(|(i, &(l, d))| Buffer::new(i as u64, l, l + d, 1)).collect();
            let idx = TimeIndex::new(&bs);
            let hi = lo + len;
            let mut got = Vec::new();
            idx.overlapping(lo, hi, &mut got);
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
