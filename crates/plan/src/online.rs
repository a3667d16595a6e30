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
//! First fit finds the lowest gap that holds a buffer in a treap of the gaps by address whose
//! nodes know the longest gap below them: a plain scan of the gaps in address order was linear
//! per buffer on real heaps (a traced python3 run of 4.5M blocks: 98 s, 1.2 s with the treap).

use crate::rules::{Fit, Order};
use heaplab_model::{align_up, Buffer};
use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap};

/// The gaps by start address in a treap (split/merge, random priorities), each node knowing the
/// longest gap in its subtree, so the lowest gap of at least a given length is found in
/// O(log n) expected: subtrees with no gap that long are skipped whole.
struct GapTree {
    /// Node 0 is the empty tree.
    nodes: Vec<GapNode>,
    /// Freed node slots.
    spare: Vec<u32>,
    root: u32,
    /// Priorities (fixed seed: the shape never changes the answers).
    rng: crate::rng::Rng,
}

#[derive(Clone, Copy, Default)]
struct GapNode {
    start: u64,
    end: u64,
    /// Longest gap in this subtree.
    max_len: u64,
    prio: u64,
    left: u32,
    right: u32,
}

impl GapTree {
    fn new() -> Self {
        GapTree { nodes: vec![GapNode::default()], spare: Vec::new(), root: 0, rng: crate::rng::Rng::new(0x9e37_79b9_7f4a_7c15) }
    }

    fn fix(&mut self, t: u32) {
        let n = self.nodes[t as usize];
        let m = (n.end - n.start).max(self.nodes[n.left as usize].max_len).max(self.nodes[n.right as usize].max_len);
        self.nodes[t as usize].max_len = m;
    }

    /// Splits `t` into the gaps starting before `key` and the others.
    fn split(&mut self, t: u32, key: u64) -> (u32, u32) {
        if t == 0 {
            return (0, 0);
        }
        if self.nodes[t as usize].start < key {
            let (a, b) = self.split(self.nodes[t as usize].right, key);
            self.nodes[t as usize].right = a;
            self.fix(t);
            (t, b)
        } else {
            let (a, b) = self.split(self.nodes[t as usize].left, key);
            self.nodes[t as usize].left = b;
            self.fix(t);
            (a, t)
        }
    }

    /// Joins two treaps, every gap of `a` below every gap of `b`.
    fn merge(&mut self, a: u32, b: u32) -> u32 {
        if a == 0 || b == 0 {
            return a | b;
        }
        if self.nodes[a as usize].prio > self.nodes[b as usize].prio {
            let r = self.merge(self.nodes[a as usize].right, b);
            self.nodes[a as usize].right = r;
            self.fix(a);
            a
        } else {
            let l = self.merge(a, self.nodes[b as usize].left);
            self.nodes[b as usize].left = l;
            self.fix(b);
            b
        }
    }

    fn insert(&mut self, start: u64, end: u64) {
        let node = GapNode { start, end, max_len: end - start, prio: self.rng.next_u64(), left: 0, right: 0 };
        let id = match self.spare.pop() {
            Some(id) => {
                self.nodes[id as usize] = node;
                id
            }
            None => {
                self.nodes.push(node);
                (self.nodes.len() - 1) as u32
            }
        };
        let (a, b) = self.split(self.root, start);
        let a = self.merge(a, id);
        self.root = self.merge(a, b);
    }

    fn remove(&mut self, start: u64) {
        let (a, b) = self.split(self.root, start);
        let (m, c) = self.split(b, start + 1);
        debug_assert!(m != 0 && self.nodes[m as usize].left == 0 && self.nodes[m as usize].right == 0);
        if m != 0 {
            self.spare.push(m);
        }
        self.root = self.merge(a, c);
    }

    /// Lowest aligned offset in a gap of the subtree `t` where `size` bytes fit.
    fn lowest(&self, t: u32, size: u64, align_log2: u8) -> Option<u64> {
        let n = &self.nodes[t as usize];
        if t == 0 || n.max_len < size {
            return None;
        }
        if let Some(a) = self.lowest(n.left, size, align_log2) {
            return Some(a);
        }
        if n.end - n.start >= size {
            let a = align_up(n.start, align_log2).unwrap_or(u64::MAX);
            if a.saturating_add(size) <= n.end {
                return Some(a);
            }
        }
        self.lowest(n.right, size, align_log2)
    }
}

/// Free address space while the sweep runs: bounded gaps and everything from `top` up.
struct FreeSpace {
    /// Gap start → gap end, for the maximal free ranges below `top`.
    gaps: BTreeMap<u64, u64>,
    /// The same gaps as (length, start), kept only for best fit.
    by_len: Option<BTreeSet<(u64, u64)>>,
    /// The same gaps by address with subtree maxima, kept only for first fit.
    tree: Option<GapTree>,
    /// Everything at or above `top` is free.
    top: u64,
}

impl FreeSpace {
    fn new(fit: Fit) -> Self {
        FreeSpace {
            gaps: BTreeMap::new(),
            by_len: (fit == Fit::Best).then(BTreeSet::new),
            tree: (fit == Fit::First).then(GapTree::new),
            top: 0,
        }
    }

    fn add_gap(&mut self, start: u64, end: u64) {
        self.gaps.insert(start, end);
        if let Some(s) = &mut self.by_len {
            s.insert((end - start, start));
        }
        if let Some(t) = &mut self.tree {
            t.insert(start, end);
        }
    }

    fn remove_gap(&mut self, start: u64, end: u64) {
        self.gaps.remove(&start);
        if let Some(s) = &mut self.by_len {
            s.remove(&(end - start, start));
        }
        if let Some(t) = &mut self.tree {
            t.remove(start);
        }
    }

    /// Lowest aligned offset where `size` bytes are free.
    fn lowest(&self, size: u64, align_log2: u8) -> u64 {
        let tree = self.tree.as_ref().expect("first fit keeps the gap tree");
        tree.lowest(tree.root, size, align_log2).unwrap_or_else(|| align_up(self.top, align_log2).unwrap_or(u64::MAX))
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

/// Places `buffers` in [`Order::Start`] order with the given
/// fit, by sweeping time; the same offsets as the general placer with that order.
pub fn place_by_start(buffers: &[Buffer], fit: Fit) -> Vec<u64> {
    let order = crate::rules::order(buffers, Order::Start);
    let mut free = FreeSpace::new(fit);
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
