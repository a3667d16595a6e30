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
//! The treap alone holds first fit's gaps, and a gap the sweep shrinks, grows or moves between
//! the same neighbours is changed in place, walking back up the path of the search that found
//! it: most buffers cost one search and one walk instead of several splits and merges (the
//! sweep at 10^7 random buffers took three times as long that way).

use crate::rules::{Fit, Order};
use heaplab_model::{align_up, Buffer};
use std::collections::{BTreeMap, BTreeSet};

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
    /// The root-to-node path of the last search ([`GapTree::lowest`], [`GapTree::around`]),
    /// and the depths on it of the gaps it returned: the sweep reshapes a gap it has just
    /// found, and walking back up this path spares a second descent.
    path: Vec<u32>,
    found: [usize; 2],
}

/// A free range `(start, end)`.
type Gap = (u64, u64);

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
        GapTree {
            nodes: vec![GapNode::default()],
            spare: Vec::new(),
            root: 0,
            rng: crate::rng::Rng::new(0x9e37_79b9_7f4a_7c15),
            path: Vec::new(),
            found: [usize::MAX; 2],
        }
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

    /// Adds the gap `[start, end)`: a descent to where its priority puts it, and a split of
    /// the subtree there (no whole-tree split and merges).
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
        self.found = [usize::MAX; 2];
        self.root = self.insert_at(self.root, id);
    }

    fn insert_at(&mut self, t: u32, id: u32) -> u32 {
        if t == 0 {
            return id;
        }
        let key = self.nodes[id as usize].start;
        if self.nodes[id as usize].prio > self.nodes[t as usize].prio {
            let (a, b) = self.split(t, key);
            self.nodes[id as usize].left = a;
            self.nodes[id as usize].right = b;
            self.fix(id);
            return id;
        }
        if key < self.nodes[t as usize].start {
            let l = self.insert_at(self.nodes[t as usize].left, id);
            self.nodes[t as usize].left = l;
        } else {
            let r = self.insert_at(self.nodes[t as usize].right, id);
            self.nodes[t as usize].right = r;
        }
        self.fix(t);
        t
    }

    /// Removes the gap starting at `start` (which exists): its children merged in its place.
    fn remove(&mut self, start: u64) {
        self.found = [usize::MAX; 2];
        self.root = self.remove_at(self.root, start);
    }

    fn remove_at(&mut self, t: u32, start: u64) -> u32 {
        debug_assert!(t != 0, "removing a gap that is not there");
        let n = self.nodes[t as usize];
        if n.start == start {
            self.spare.push(t);
            return self.merge(n.left, n.right);
        }
        if start < n.start {
            let l = self.remove_at(n.left, start);
            self.nodes[t as usize].left = l;
        } else {
            let r = self.remove_at(n.right, start);
            self.nodes[t as usize].right = r;
        }
        self.fix(t);
        t
    }

    /// Changes the gap starting at `start` (which exists) to `[new_start, new_end)`, which
    /// must keep its place in address order (it lies between its neighbours): one descent,
    /// the subtree maxima fixed on the way back.
    fn reshape(&mut self, start: u64, new_start: u64, new_end: u64) {
        let depth = match self.found.iter().copied().find(|&d| d < self.path.len() && self.nodes[self.path[d] as usize].start == start) {
            Some(d) => d,
            None => {
                self.path.clear();
                let mut t = self.root;
                while self.nodes[t as usize].start != start {
                    debug_assert!(t != 0, "reshaping a gap that is not there");
                    self.path.push(t);
                    let n = &self.nodes[t as usize];
                    t = if start < n.start { n.left } else { n.right };
                }
                self.path.push(t);
                self.path.len() - 1
            }
        };
        let t = self.path[depth] as usize;
        self.nodes[t].start = new_start;
        self.nodes[t].end = new_end;
        for k in (0..=depth).rev() {
            self.fix(self.path[k]);
        }
    }

    /// The gaps around `key` (which starts none): the one with the greatest start below it and
    /// the one with the least start above it, as `(start, end)`, in one descent.
    fn around(&mut self, key: u64) -> (Option<Gap>, Option<Gap>) {
        let (mut t, mut below, mut above) = (self.root, None, None);
        self.path.clear();
        self.found = [usize::MAX; 2];
        while t != 0 {
            let n = &self.nodes[t as usize];
            self.path.push(t);
            if n.start < key {
                below = Some((n.start, n.end));
                self.found[0] = self.path.len() - 1;
                t = n.right;
            } else {
                above = Some((n.start, n.end));
                self.found[1] = self.path.len() - 1;
                t = n.left;
            }
        }
        (below, above)
    }

    /// [`GapTree::lowest_in`] from the root, remembering the path to the gap found.
    fn lowest(&mut self, size: u64, align_log2: u8) -> Option<(u64, u64, u64)> {
        self.path.clear();
        self.found = [usize::MAX; 2];
        let r = self.lowest_in(self.root, size, align_log2);
        if r.is_some() {
            self.found[0] = self.path.len() - 1;
        }
        r
    }

    /// Lowest aligned offset in a gap of the subtree `t` where `size` bytes fit, with that
    /// gap's start and end; the path to it is left on `path`.
    fn lowest_in(&mut self, t: u32, size: u64, align_log2: u8) -> Option<(u64, u64, u64)> {
        let n = self.nodes[t as usize];
        if t == 0 || n.max_len < size {
            return None;
        }
        self.path.push(t);
        if let Some(a) = self.lowest_in(n.left, size, align_log2) {
            return Some(a);
        }
        if n.end - n.start >= size {
            let a = align_up(n.start, align_log2).unwrap_or(u64::MAX);
            if a.saturating_add(size) <= n.end {
                return Some((a, n.start, n.end));
            }
        }
        if let Some(a) = self.lowest_in(n.right, size, align_log2) {
            return Some(a);
        }
        self.path.pop();
        None
    }
}

/// Free address space while the sweep runs: bounded gaps and everything from `top` up. First
/// fit keeps the gaps in the treap alone (it answers the neighbour queries too); best fit in
/// a map by address and a set by length.
struct FreeSpace {
    /// Gap start → gap end, for the maximal free ranges below `top` (best fit).
    gaps: BTreeMap<u64, u64>,
    /// The same gaps as (length, start) (best fit).
    by_len: BTreeSet<(u64, u64)>,
    /// The gaps by address with subtree maxima (first fit).
    tree: Option<GapTree>,
    /// Everything at or above `top` is free.
    top: u64,
}

impl FreeSpace {
    fn new(fit: Fit) -> Self {
        FreeSpace { gaps: BTreeMap::new(), by_len: BTreeSet::new(), tree: (fit == Fit::First).then(GapTree::new), top: 0 }
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
        let tree = self.tree.as_mut().expect("first fit keeps the gap tree");
        match tree.lowest(size, align_log2) {
            Some((a, s, e)) => (a, Some((s, e))),
            None => (align_up(self.top, align_log2).unwrap_or(u64::MAX), None),
        }
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
    place_by_start_with_ends(buffers, &heaplab_sweep::sorted_by(buffers, |b| b.upper), fit)
}

/// [`place_by_start`] given the buffers in order of their ends (`ends`, every index once; any
/// order among equal ends), as splitting into components computes it
/// ([`heaplab_sweep::Component::ends`]): the sweep frees buffers in that order instead of
/// keeping the live ones in a heap.
pub fn place_by_start_with_ends(buffers: &[Buffer], ends: &[u32], fit: Fit) -> Vec<u64> {
    debug_assert_eq!(ends.len(), buffers.len());
    let order = crate::rules::order(buffers, Order::Start);
    let mut free = FreeSpace::new(fit);
    let mut offsets = vec![0u64; buffers.len()];
    // The next buffer to free. One ending at or before the next start began before it, so it
    // is placed; one of empty lifetime is never taken (it would be freed before anything else
    // is placed), so it is not freed either.
    let mut next_end = 0;
    for &i in &order {
        let b = &buffers[i as usize];
        while let Some(&j) = ends.get(next_end) {
            let e = &buffers[j as usize];
            if e.upper > b.lower {
                break;
            }
            next_end += 1;
            if e.lower < e.upper {
                let o = offsets[j as usize];
                free.release(o, o + e.size);
            }
        }
        let (a, gap) = match fit {
            Fit::First => free.lowest(b.size, b.align_log2),
            Fit::Best => free.tightest(b.size, b.align_log2),
        };
        if b.lower < b.upper {
            free.take(a, b.size, gap);
        }
        offsets[i as usize] = a;
    }
    offsets
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::heuristics::place_in_order;

    /// Many live buffers at once, so the gap treap grows deep and every case of taking and
    /// releasing (inside a gap, at its ends, on top, merging with one or both neighbours) occurs:
    /// the sweep gives exactly the general placer's offsets (oracle-tested against brute force),
    /// and every placement passes the validator.
    #[test]
    fn sweep_matches_the_general_placer_with_many_gaps() {
        let mut rng = crate::rng::Rng::new(17);
        for round in 0..60u64 {
            let n = 200 + (round as usize * 97) % 3000;
            let span = 1 + n as u64 / (1 + round % 7);
            let bs: Vec<Buffer> = (0..n as u64)
                .map(|i| {
                    let lo = rng.next_u64() % span;
                    let len = 1 + rng.next_u64() % (1 + span / (1 + round % 5));
                    let size = match round % 3 {
                        0 => 1 + rng.next_u64() % 8,
                        1 => 1 << (rng.next_u64() % 12),
                        _ => 1 + rng.next_u64() % 100_000,
                    };
                    let mut b = Buffer::new(i, lo, lo + len, size);
                    b.align_log2 = if round % 4 == 0 { (rng.next_u64() % 6) as u8 } else { 0 };
                    b
                })
                .collect();
            let ord = crate::rules::order(&bs, Order::Start);
            for fit in [Fit::First, Fit::Best] {
                let got = place_by_start(&bs, fit);
                assert!(heaplab_sweep::validate(&bs, &got).is_valid(), "round {round} {fit:?}");
                assert_eq!(got, place_in_order(&bs, &ord, fit), "round {round} {fit:?}");
            }
        }
    }
}
