//! Which addresses are taken during a buffer's lifetime: the query at the heart of every greedy
//! placer (first-fit and best-fit in any order, and the boxing algorithm's squeeze).
//!
//! # What it owns
//! [`Occupancy`] indexes the buffers placed so far by time and answers "lowest / tightest
//! aligned address range free during buffer `i`'s lifetime" without a conflict graph and without
//! listing the conflicting buffers.
//!
//! # Design
//! Time is compressed to the ranks of the distinct `lower` values (every query asks about a
//! buffer's own lifetime, and two half-open lifetimes meet exactly when one *starts* inside the
//! other, so start ticks are the only ticks that matter). Buffer `i` has a leaf range
//! `[a, c)`: `a` is the rank of its `lower`, `c` the number of distinct lowers below its `upper`.
//! A placed buffer `p` conflicts with a query `q` exactly when either
//! - `p` is live at `q`'s start (`a_p ≤ a_q < c_p`): a *stabbing* query, or
//! - `p` starts strictly inside `q` (`a_q < a_p < c_q`): a *range* query on start ranks.
//!
//! The two cases are disjoint and together exact. One segment tree over the start ranks holds
//! them, in two kinds of node:
//! - *low* nodes (subtrees of at least 2^8 leaves at the bottom) keep per-buffer sets:
//!   `cover`, where a placed buffer's address range is added at the canonical nodes of its
//!   `[a, c)` within a low subtree, so that the stabbing query unions the sets on the path from
//!   leaf `a_q` up to its low subtree's root; and `starts`, where it is added on the path from
//!   leaf `a_p` up to that root, so that the range query unions the canonical nodes of
//!   `[a_q + 1, c_q)` within the subtree;
//! - *high* nodes (the top levels, at most 256 nodes) keep unions: `full`, the addresses taken
//!   at some tick of the node's range, and `pending`, those of buffers covering the whole range
//!   that the children have not received yet (a lazy segment tree: a query pushes them one
//!   level down on its way, into a high child's sets or a low child's `cover`). A query takes
//!   the `full` set of each high node inside its range whole, and the low subtrees at its two
//!   ends as above.
//!
//! Why two kinds: per-buffer sets cannot coalesce when neighbouring addresses belong to
//! buffers of different time ranges (long-lived buffers under a churn of short ones: an
//! interpreter's or a parser's heap), so a query there walked every buffer placed below its
//! answer, quadratic in all (a jq heap of 2.3·10^5 buffers: 60 s for first fit by size). A
//! union over a long time range is a few intervals on such heaps, and the merge below gallops
//! over everything it covers. Unions at every node would cost one interval per hole per node
//! (on a heap fragmented at every tick, many times the buffers), hence only the top levels.
//!
//! Each node holds a coalesced set of address intervals (sorted, disjoint, touching ones
//! merged), so a densely packed stack of a thousand buffers is one interval and a query's cost
//! follows the number of *gaps* below its answer, not the number of conflicting buffers. The
//! previous design kept two sets per node of one tree (`here` and `sub`) and paid about 47 set
//! insertions per buffer and 22 sets per query on 10^5 random buffers; this one pays about
//! `3 log n` insertions and `3 log n` sets at most, and fewer in practice (empty sets are
//! skipped).
//!
//! # Why it is fast and lean
//! The sets are small (a few hundred intervals at most on 10^6 buffers), so the cost is cache
//! misses, not memmove. Nodes hold a `u32` handle (0 = empty) into one [`Pool`] of intervals:
//! blocks of power-of-two capacity carved from a single `Vec`, recycled through per-size free
//! lists. That is 4 bytes per node, 12 per non-empty set, 16 per stored interval, and no
//! allocator call or pointer chase per set. The leaf ranges are computed once in
//! [`Occupancy::new`] (8 bytes per buffer), so no query or insertion searches the time axis.
//! A query or an insertion touches a few dozen sets spread over the pool: it first asks the
//! cache for all their handles, heads and first intervals, level by level, so that their misses
//! overlap instead of coming one set after the other (first fit by size on 10^6 random buffers:
//! a quarter less time).
//!
//! # Complexity
//! `new`: O(n log n) time, O(n) memory. `insert`: O(log n) set insertions, each a binary search
//! plus a shift of the (small) set. `lowest_fit`: a leapfrog join over the O(log n) gathered
//! sets, touching each set's intervals below the answer about once. `tightest_fit`: a walk over
//! every free gap of the union (it must compare them all).
//!
//! A push merges its pending intervals into each child's sets, linear in both. An insertion
//! still shifts the tail of each set it enters, so the worst case stays quadratic (sets that
//! coalesce nowhere): [`Occupancy::work`] counts every step, and every greedy loop looks at its
//! deadline by it; insertion in address order is cheapest where the offsets are known.

use heaplab_model::{align_up, Buffer};
use heaplab_sweep::prefetch;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// A handle to one interval set in the [`Pool`]; 0 means the empty set.
type Handle = u32;

/// Where one set's intervals live in the pool.
#[derive(Clone, Copy, Default)]
struct Head {
    /// First slot of the block.
    at: u32,
    /// Intervals in use.
    len: u32,
    /// The block holds `1 << class` slots.
    class: u8,
}

/// Coalesced interval sets (sorted, disjoint, touching intervals merged), stored in blocks of
/// one flat vector.
#[derive(Default)]
struct Pool {
    slots: Vec<(u64, u64)>,
    /// Set heads by handle; `heads[0]` is a placeholder for the empty handle.
    heads: Vec<Head>,
    /// Freed blocks by size class.
    free: Vec<Vec<u32>>,
}

impl Pool {
    fn new() -> Pool {
        Pool { slots: Vec::new(), heads: vec![Head::default()], free: vec![Vec::new(); 33] }
    }

    fn alloc(&mut self, class: u8) -> u32 {
        if let Some(at) = self.free[class as usize].pop() {
            return at;
        }
        let at = self.slots.len();
        assert!(at + (1usize << class) <= u32::MAX as usize, "occupancy pool exceeds 2^32 intervals");
        self.slots.resize(at + (1 << class), (0, 0));
        at as u32
    }

    /// Where set `h` lies in `slots`: (first slot, length).
    #[inline]
    fn range(&self, h: Handle) -> (u32, u32) {
        let hd = self.heads[h as usize];
        (hd.at, hd.len)
    }

    /// The intervals at a range returned by [`Pool::range`] (valid until the next insertion).
    #[inline]
    fn get(&self, (at, len): (u32, u32)) -> &[(u64, u64)] {
        &self.slots[at as usize..(at + len) as usize]
    }

    /// Empties set `h`, keeping its block for the next insertions.
    fn clear(&mut self, h: Handle) {
        self.heads[h as usize].len = 0;
    }

    /// Adds `[start, end)` to set `*h` (creating it when `*h == 0`), merging every interval
    /// it touches or overlaps.
    /// Returns the work done: one plus the intervals moved.
    fn insert(&mut self, h: &mut Handle, start: u64, end: u64) -> u64 {
        if *h == 0 {
            let at = self.alloc(0);
            self.slots[at as usize] = (start, end);
            assert!(self.heads.len() < u32::MAX as usize, "more than 2^32 interval sets");
            *h = self.heads.len() as Handle;
            self.heads.push(Head { at, len: 1, class: 0 });
            return 1;
        }
        let mut hd = self.heads[*h as usize];
        let (at, len) = (hd.at as usize, hd.len as usize);
        let v = &self.slots[at..at + len];
        let i = v.partition_point(|iv| iv.1 < start);
        let j = i + v[i..].partition_point(|iv| iv.0 <= end);
        let work = 1 + (len - i) as u64;
        if i < j {
            let merged = (v[i].0.min(start), v[j - 1].1.max(end));
            self.slots[at + i] = merged;
            self.slots.copy_within(at + j..at + len, at + i + 1);
            hd.len -= (j - i - 1) as u32;
        } else {
            if len == 1usize << hd.class {
                let new_at = self.alloc(hd.class + 1) as usize;
                self.slots.copy_within(at..at + len, new_at);
                self.free[hd.class as usize].push(at as u32);
                hd.at = new_at as u32;
                hd.class += 1;
            }
            let at = hd.at as usize;
            self.slots.copy_within(at + i..at + len, at + i + 1);
            self.slots[at + i] = (start, end);
            hd.len += 1;
        }
        self.heads[*h as usize] = hd;
        work
    }

    /// Adds every interval of `add` (sorted, disjoint) to set `*h`, as [`Pool::insert`] would
    /// one by one, in one merge: linear in both sets, where inserting one by one shifts the
    /// set's tail for each (quadratic when they interleave: a window of 2·10^5 traced buffers
    /// pinned at once made one push of 10^5 intervals take seconds). `merged` is scratch.
    /// Returns the work done: one plus the intervals of both.
    fn merge(&mut self, h: &mut Handle, add: &[(u64, u64)], merged: &mut Vec<(u64, u64)>) -> u64 {
        if add.len() <= 1 || *h == 0 {
            return add.iter().map(|&(s, e)| self.insert(h, s, e)).sum();
        }
        let mut hd = self.heads[*h as usize];
        let (at, len) = (hd.at as usize, hd.len as usize);
        merged.clear();
        let (mut i, mut j) = (0, 0);
        let old = &self.slots[at..at + len];
        while i < old.len() || j < add.len() {
            let next = if j == add.len() || (i < old.len() && old[i].0 <= add[j].0) {
                i += 1;
                old[i - 1]
            } else {
                j += 1;
                add[j - 1]
            };
            // Touching intervals merge, as in `insert`.
            match merged.last_mut() {
                Some(last) if next.0 <= last.1 => last.1 = last.1.max(next.1),
                _ => merged.push(next),
            }
        }
        let mut class = hd.class;
        while merged.len() > 1usize << class {
            class += 1;
        }
        if class != hd.class {
            self.free[hd.class as usize].push(hd.at);
            hd.at = self.alloc(class);
            hd.class = class;
        }
        let at = hd.at as usize;
        self.slots[at..at + merged.len()].copy_from_slice(merged);
        hd.len = merged.len() as u32;
        self.heads[*h as usize] = hd;
        1 + (len + add.len()) as u64
    }
}

/// Asks the cache for the lines of `v` (up to 16 of them) at once, before a binary search
/// would wait for them one after the other.
#[inline(always)]
fn prefetch_lines(v: &[(u64, u64)]) {
    for x in v.iter().take(64).step_by(4) {
        prefetch(x);
    }
}

/// The first index `≥ k` of an interval of the sorted set `v` ending after `x`: an exponential
/// then binary search from `k`, so a cursor that falls far behind a jump of `x` catches up in
/// O(log distance) instead of one step per skipped interval.
#[inline]
fn skip_ending_by(v: &[(u64, u64)], mut k: usize, x: u64) -> usize {
    let mut step = 1;
    while k + step <= v.len() && v[k + step - 1].1 <= x {
        k += step;
        step *= 2;
    }
    let hi = (k + step).min(v.len());
    k + v[k..hi].partition_point(|iv| iv.1 <= x)
}

/// The first interval of `v` ending after `x`, searching from `*cursor` (monotone in `x`).
#[inline]
fn first_ending_after(v: &[(u64, u64)], x: u64, cursor: &mut usize) -> Option<(u64, u64)> {
    let mut k = *cursor;
    if k == usize::MAX {
        k = v.partition_point(|iv| iv.1 <= x);
    }
    while k < v.len() && v[k].1 <= x {
        k += 1;
    }
    *cursor = k;
    v.get(k).copied()
}

/// Subtrees of at least `2^LOW_HEIGHT` leaves keep the per-buffer sets (`cover`, `starts`);
/// nodes above keep coalesced unions (`full`, `pending`), at most [`HIGH_NODES`] of them. Fewer
/// high nodes save memory on heaps fragmented at every tick (a union costs one interval per
/// hole, and a long-lived buffer is copied into every low subtree it covers); more coalesce
/// more of a query into few sets. On a jq heap of 2.3·10^5 buffers, 256 high nodes took first
/// fit by size from 60 s to 4 s for 180 MB of sets; 1,800 took the sets to 900 MB.
pub(crate) const LOW_HEIGHT: u32 = 8;

/// The most high nodes (the top eight levels of the tree).
const HIGH_NODES: usize = 256;

/// Which of a node's sets ([`Occupancy::insert`]'s targets).
#[derive(Clone, Copy)]
enum SetKind {
    Full,
    Pending,
    Cover,
    Starts,
}

/// Placed buffers indexed by time, answering "lowest / tightest free address range during
/// buffer `i`'s lifetime" for the buffers it was built over.
pub struct Occupancy<'a> {
    buffers: &'a [Buffer],
    /// Per buffer, its leaf range `[a, c)` over the ranks of the distinct lowers.
    span: Vec<(u32, u32)>,
    /// Leaves of the tree (a power of two); node `k` has children `2k`, `2k + 1`.
    leaves: usize,
    /// Nodes below this index are *high* (they hold unions); the others are *low*.
    high: usize,
    /// High nodes: the addresses taken at some tick of the node's range, complete once the
    /// pending sets of its ancestors are pushed down.
    full: Vec<Handle>,
    /// High nodes: the addresses of buffers covering the node's whole range that its children
    /// have not received yet.
    pending: Vec<Handle>,
    /// Low nodes: buffers whose leaf range covers the node's, within its low subtree (the
    /// canonical nodes of their range, and what high parents push down).
    cover: Vec<Handle>,
    /// Low nodes: buffers whose start leaf lies under the node.
    starts: Vec<Handle>,
    pool: Pool,
    /// Reused query buffers: the gathered sets (as handles, then as ranges), a scan cursor into
    /// each, the merge heap of (next interval start, set), and a copy of a set being pushed.
    handles: Vec<Handle>,
    sets: Vec<(u32, u32)>,
    cursors: Vec<usize>,
    heap: BinaryHeap<Reverse<(u64, u32)>>,
    moving: Vec<(u64, u64)>,
    /// Scratch of a push's merges ([`Pool::merge`]).
    merged: Vec<(u64, u64)>,
    /// Reused by [`Occupancy::insert`]: the sets a buffer goes into.
    targets: Vec<(SetKind, u32)>,
    /// See [`Occupancy::work`].
    work: u64,
}

impl<'a> Occupancy<'a> {
    /// An empty index over the lifetimes of `buffers`; queries and insertions name buffers by
    /// their index there. Panics beyond 2^32 buffers.
    pub fn new(buffers: &'a [Buffer]) -> Self {
        Self::build(buffers, LOW_HEIGHT, HIGH_NODES)
    }

    /// [`Occupancy::new`] with low subtrees of `2^low_height` leaves and no cap on the high
    /// nodes (tests try small heights, so that small instances have high nodes).
    #[cfg(test)]
    pub(crate) fn with_low_height(buffers: &'a [Buffer], low_height: u32) -> Self {
        Self::build(buffers, low_height, usize::MAX)
    }

    fn build(buffers: &'a [Buffer], low_height: u32, max_high: usize) -> Self {
        assert!(buffers.len() < u32::MAX as usize, "more than 2^32 buffers");
        let mut lowers: Vec<u64> = buffers.iter().map(|b| b.lower).collect();
        lowers.sort_unstable();
        lowers.dedup();
        let span = buffers
            .iter()
            .map(|b| (lowers.partition_point(|&t| t < b.lower) as u32, lowers.partition_point(|&t| t < b.upper) as u32))
            .collect();
        let leaves = lowers.len().max(2).next_power_of_two();
        drop(lowers);
        // Nodes of height `low_height` and more are high, up to `max_high` of them (the top
        // levels: both bounds are powers of two).
        let high = ((2 * leaves) >> low_height).min(max_high);
        Occupancy {
            buffers,
            span,
            leaves,
            high,
            full: vec![0; high],
            pending: vec![0; high],
            cover: vec![0; 2 * leaves],
            starts: vec![0; 2 * leaves],
            pool: Pool::new(),
            handles: Vec::with_capacity(128),
            sets: Vec::with_capacity(128),
            cursors: Vec::with_capacity(128),
            heap: BinaryHeap::with_capacity(128),
            moving: Vec::new(),
            merged: Vec::new(),
            targets: Vec::with_capacity(64),
            work: 0,
        }
    }

    /// Steps taken so far by the queries (sets gathered, intervals visited, intervals pushed
    /// down) and insertions (sets touched, intervals shifted): proportional to the time spent,
    /// so a caller can check a deadline after a fixed amount of work rather than a fixed
    /// number of buffers (one query can visit every interval placed so far), and a test can
    /// bound the work without a clock.
    pub fn work(&self) -> u64 {
        self.work
    }

    /// Records buffer `i` at `offset`.
    pub fn insert(&mut self, i: usize, offset: u64) {
        let (a, c) = self.span[i];
        let end = offset + self.buffers[i].size;
        let mut targets = std::mem::take(&mut self.targets);
        targets.clear();
        self.targets_at(1, 0, self.leaves, a as usize, c as usize, &mut targets);
        // The start sets, from the start leaf up to its low subtree's root (also when the
        // buffer covers a high node whole and its insertion stopped there).
        let mut k = a as usize + self.leaves;
        while k >= self.high.max(1) {
            targets.push((SetKind::Starts, k as u32));
            k /= 2;
        }
        // The sets' handles, then their heads, then their intervals, fetched ahead for all of
        // them at once: set by set, each set's cache misses came one after the other.
        for &(kind, node) in &targets {
            prefetch(self.handle(kind, node));
        }
        for &(kind, node) in &targets {
            prefetch(&self.pool.heads[*self.handle(kind, node) as usize]);
        }
        for &(kind, node) in &targets {
            let h = *self.handle(kind, node);
            prefetch_lines(self.pool.get(self.pool.range(h)));
        }
        for &(kind, node) in &targets {
            // `handle`'s match again, by field: the pool is borrowed mutably beside the handle.
            let h = match kind {
                SetKind::Full => &mut self.full[node as usize],
                SetKind::Pending => &mut self.pending[node as usize],
                SetKind::Cover => &mut self.cover[node as usize],
                SetKind::Starts => &mut self.starts[node as usize],
            };
            self.work += self.pool.insert(h, offset, end);
        }
        self.targets = targets;
    }

    /// The handle of a node's set of the given kind.
    #[inline]
    fn handle(&self, kind: SetKind, node: u32) -> &Handle {
        match kind {
            SetKind::Full => &self.full[node as usize],
            SetKind::Pending => &self.pending[node as usize],
            SetKind::Cover => &self.cover[node as usize],
            SetKind::Starts => &self.starts[node as usize],
        }
    }

    /// The sets that take a buffer over leaves `[a, c)` at node `node` (leaves `[lo, hi)`) and
    /// below, into `out`. A high node's union takes it, and its pending set when the buffer
    /// covers it (its descendants receive it when a query passes); below the high nodes it goes
    /// to the cover sets of the canonical nodes of `[a, c)`.
    fn targets_at(&self, node: usize, lo: usize, hi: usize, a: usize, c: usize, out: &mut Vec<(SetKind, u32)>) {
        let covers = a <= lo && hi <= c;
        if node < self.high {
            out.push((SetKind::Full, node as u32));
            if covers {
                out.push((SetKind::Pending, node as u32));
                return;
            }
        } else if covers {
            out.push((SetKind::Cover, node as u32));
            return;
        }
        let mid = (lo + hi) / 2;
        if a < mid {
            self.targets_at(2 * node, lo, mid, a, c, out);
        }
        if mid < c {
            self.targets_at(2 * node + 1, mid, hi, a, c, out);
        }
    }

    /// Hands high node `node`'s pending intervals to its children: to the union and pending
    /// set of a high child, to the cover set of a low one.
    fn push(&mut self, node: usize) {
        let h = self.pending[node];
        if h == 0 || self.pool.range(h).1 == 0 {
            return;
        }
        self.moving.clear();
        self.moving.extend_from_slice(self.pool.get(self.pool.range(h)));
        self.pool.clear(h);
        let (moving, merged) = (&self.moving, &mut self.merged);
        for child in [2 * node, 2 * node + 1] {
            if child < self.high {
                self.work += self.pool.merge(&mut self.full[child], moving, merged);
                self.work += self.pool.merge(&mut self.pending[child], moving, merged);
            } else {
                self.work += self.pool.merge(&mut self.cover[child], moving, merged);
            }
        }
    }

    /// Collects into `self.handles` sets whose union is the address space taken at some tick
    /// of leaves `[a, c)` under node `node` (leaves `[lo, hi)`), pushing pending sets down on
    /// the way so that the unions gathered are complete.
    fn gather_at(&mut self, node: usize, lo: usize, hi: usize, a: usize, c: usize) {
        if node >= self.high {
            // A low subtree: a buffer meets `[a', c')` when it is live at `a'` (a cover set on
            // the path from that leaf up to here) or starts inside `(a', c')` (start sets of
            // that range's canonical nodes); the two are disjoint. When the query began
            // further left, a buffer live at `a' = lo` that started before is live at `lo - 1`
            // too, and gathered there: only those starting in `[lo, c')` are left.
            let first = if a < lo {
                lo
            } else {
                let mut k = a + self.leaves;
                while k >= node {
                    self.handles.push(self.cover[k]);
                    k /= 2;
                }
                a + 1
            };
            let c = c.min(hi);
            let (mut l, mut r) = (first + self.leaves, c + self.leaves);
            while l < r {
                if l & 1 == 1 {
                    self.handles.push(self.starts[l]);
                    l += 1;
                }
                if r & 1 == 1 {
                    r -= 1;
                    self.handles.push(self.starts[r]);
                }
                l /= 2;
                r /= 2;
            }
            return;
        }
        if self.full[node] == 0 {
            return; // nothing taken at any tick of this range
        }
        if a <= lo && hi <= c {
            self.handles.push(self.full[node]);
            return;
        }
        self.push(node);
        let mid = (lo + hi) / 2;
        if a < mid {
            self.gather_at(2 * node, lo, mid, a, c);
        }
        if mid < c {
            self.gather_at(2 * node + 1, mid, hi, a, c);
        }
    }

    /// Collects into `self.sets` the sets whose union is the address space taken during buffer
    /// `i`'s lifetime.
    fn gather(&mut self, i: usize) {
        self.handles.clear();
        self.sets.clear();
        self.cursors.clear();
        let (a, c) = self.span[i];
        self.gather_at(1, 0, self.leaves, a as usize, c as usize);
        // Ranges are read once every push is done: a push may move a set in the pool. The
        // sets' heads, then their first intervals, are fetched ahead: one after the other,
        // their cache misses took most of a query's time.
        for &h in &self.handles {
            prefetch(&self.pool.heads[h as usize]);
        }
        for k in 0..self.handles.len() {
            let h = self.handles[k];
            if h != 0 && self.pool.range(h).1 > 0 {
                let r = self.pool.range(h);
                prefetch_lines(&self.pool.get(r)[..1]);
                self.sets.push(r);
            }
        }
        self.cursors.resize(self.sets.len(), usize::MAX);
        self.work += 1 + self.handles.len() as u64;
    }

    /// Lowest aligned offset free during buffer `i`'s lifetime (first fit).
    ///
    /// A lazy merge of the gathered sets in address order: a min-heap holds each set's first
    /// interval not known to end at or below the candidate `x`. While the lowest such interval
    /// starts below `x + size`, either it already ends by `x` (its set's cursor catches up) or
    /// it overlaps `[x, x + size)`, and then no window starting in `[x, end)` fits, so `x`
    /// moves to its aligned end. When it starts at or above `x + size`, every set is free
    /// there. Each interval below the answer is popped at most once (stale ones are skipped by
    /// galloping), O(log m) each, instead of re-asking every set after every move.
    pub fn lowest_fit(&mut self, i: usize) -> u64 {
        self.gather(i);
        let (size, align_log2) = (self.buffers[i].size, self.buffers[i].align_log2);
        let mut x = align_up(0, align_log2).unwrap_or(0);
        let heap = &mut self.heap;
        heap.clear();
        // Intervals are never empty, so below `x = align_up(0)` only their first ends can lie;
        // the cursors start at 0 and the first stale pop catches them up.
        for (k, &h) in self.sets.iter().enumerate() {
            self.cursors[k] = 0;
            heap.push(Reverse((self.pool.get(h)[0].0, k as u32)));
        }
        while let Some(&Reverse((s, k))) = heap.peek() {
            if s >= x.saturating_add(size) {
                break;
            }
            self.work += 1;
            let v = self.pool.get(self.sets[k as usize]);
            let c = self.cursors[k as usize];
            if v[c].1 > x {
                x = align_up(v[c].1, align_log2).unwrap_or(u64::MAX);
            }
            let c = skip_ending_by(v, c + 1, x);
            self.cursors[k as usize] = c;
            match v.get(c) {
                Some(&(s, _)) => {
                    heap.peek_mut().expect("peeked above").0 = (s, k);
                }
                None => {
                    heap.pop();
                }
            }
        }
        x
    }

    /// Moves `x` up past every occupied interval containing it; returns the free gap
    /// `[x, next occupied start)` (`u64::MAX` when nothing lies above). Uses and advances the
    /// cursors, so `x` must not decrease between calls of one query.
    fn free_gap_from(&mut self, mut x: u64) -> (u64, u64) {
        let m = self.sets.len();
        let mut clean = 0; // consecutive sets that did not move x
        let mut k = 0;
        while clean < m {
            self.work += 1;
            match first_ending_after(self.pool.get(self.sets[k]), x, &mut self.cursors[k]) {
                Some((s, e)) if s <= x => {
                    x = e;
                    clean = 1;
                }
                _ => clean += 1,
            }
            k = if k + 1 == m { 0 } else { k + 1 };
        }
        let mut next = u64::MAX;
        self.work += m as u64;
        for k in 0..m {
            if let Some((s, _)) = first_ending_after(self.pool.get(self.sets[k]), x, &mut self.cursors[k]) {
                next = next.min(s);
            }
        }
        (x, next)
    }

    /// Start of the smallest free gap during buffer `i`'s lifetime that holds it (lowest on
    /// ties); on top of everything when none does (best fit).
    pub fn tightest_fit(&mut self, i: usize) -> u64 {
        self.gather(i);
        let (size, align_log2) = (self.buffers[i].size, self.buffers[i].align_log2);
        if self.sets.is_empty() {
            return 0;
        }
        let mut best: Option<(u64, u64)> = None;
        let mut x = 0u64;
        loop {
            let (start, end) = self.free_gap_from(x);
            let a = align_up(start, align_log2).unwrap_or(u64::MAX);
            if end == u64::MAX {
                return best.map(|(_, s)| s).unwrap_or(a);
            }
            if a.saturating_add(size) <= end && best.is_none_or(|(len, _)| end - start < len) {
                best = Some((end - start, a));
            }
            x = end;
        }
    }
}


#[cfg(test)]
mod tests {
    use super::*;

    /// A merge leaves a set exactly as inserting the same intervals one by one does, however
    /// the two interleave, touch or overlap, and the pool's other sets untouched.
    #[test]
    fn a_merge_equals_inserting_one_by_one() {
        let mut rng = heaplab_rng::Rng::new(5);
        let mut rnd = |m: u64| rng.below(m);
        for round in 0..2_000 {
            let span = 1 + rnd(if round % 2 == 0 { 50 } else { 5_000 });
            let mut pool = Pool::new();
            let (mut a, mut b, mut other) = (0, 0, 0);
            for _ in 0..rnd(40) {
                let (s, len) = (rnd(span), 1 + rnd(span / 8 + 1));
                pool.insert(&mut a, s, s + len);
                pool.insert(&mut other, s / 2, s / 2 + len);
            }
            let copy: Vec<(u64, u64)> = pool.get(pool.range(a)).to_vec();
            copy.iter().for_each(|&(s, e)| {
                pool.insert(&mut b, s, e);
            });
            let others: Vec<(u64, u64)> = pool.get(pool.range(other)).to_vec();
            // The intervals added: sorted and disjoint, as a pending set is.
            let mut add = Pool::new();
            let mut h = 0;
            for _ in 0..rnd(60) {
                let (s, len) = (rnd(span), 1 + rnd(span / 8 + 1));
                add.insert(&mut h, s, s + len);
            }
            let add: Vec<(u64, u64)> = if h == 0 { Vec::new() } else { add.get(add.range(h)).to_vec() };
            let mut scratch = Vec::new();
            pool.merge(&mut a, &add, &mut scratch);
            for &(s, e) in &add {
                pool.insert(&mut b, s, e);
            }
            let got = if a == 0 { Vec::new() } else { pool.get(pool.range(a)).to_vec() };
            let want = if b == 0 { Vec::new() } else { pool.get(pool.range(b)).to_vec() };
            assert_eq!(got, want, "round {round}");
            assert_eq!(pool.get(pool.range(other)), &others[..], "round {round}: another set changed");
        }
    }
}
