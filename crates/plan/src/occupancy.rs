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
//! The two cases are disjoint and together exact, so two segment trees over the start ranks
//! suffice:
//! - `cover`: a placed buffer's address range is added at the O(log n) canonical nodes of its
//!   `[a, c)`; the stabbing query unions the sets on the leaf-to-root path of `a_q`;
//! - `starts`: a placed buffer's address range is added at every node on the path from leaf
//!   `a_p` to the root (except the left spine, whose nodes contain leaf 0 and so are never
//!   canonical for a range `[a_q + 1, c_q)`); the range query unions the canonical nodes of
//!   `[a_q + 1, c_q)`.
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
//!
//! # Complexity
//! `new`: O(n log n) time, O(n) memory. `insert`: O(log n) set insertions, each a binary search
//! plus a shift of the (small) set. `lowest_fit`: a leapfrog join over the O(log n) gathered
//! sets, touching each set's intervals below the answer about once. `tightest_fit`: a walk over
//! every free gap of the union (it must compare them all).
//!
//! The worst case is quadratic overall, and real heaps reach it: long-lived buffers stacked
//! under a churn of short ones (an interpreter or parser; a jq trace of 3·10^5 buffers) put
//! neighbouring address ranges into different sets, as their lifetimes decompose into
//! different nodes. No set coalesces, a query walks about every buffer placed below its answer
//! (2.5·10^4 intervals a query there, 65 s for first fit by size) and an insertion out of
//! address order shifts sets of that length. Hence [`Occupancy::work`], by which every greedy
//! loop looks at its deadline, and insertion in address order where the offsets are known.

use heaplab_model::{align_up, Buffer};
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

/// Placed buffers indexed by time, answering "lowest / tightest free address range during
/// buffer `i`'s lifetime" for the buffers it was built over.
pub struct Occupancy<'a> {
    buffers: &'a [Buffer],
    /// Per buffer, its leaf range `[a, c)` over the ranks of the distinct lowers.
    span: Vec<(u32, u32)>,
    /// Leaves of both trees (a power of two); node `k` has children `2k`, `2k + 1`.
    leaves: usize,
    /// Stabbing tree: sets of buffers whose leaf range covers the node's.
    cover: Vec<Handle>,
    /// Start tree: sets of buffers whose start leaf lies under the node.
    starts: Vec<Handle>,
    pool: Pool,
    /// Reused query buffers: the gathered sets, a scan cursor into each, and the merge heap
    /// of (next interval start, set).
    sets: Vec<(u32, u32)>,
    cursors: Vec<usize>,
    heap: BinaryHeap<Reverse<(u64, u32)>>,
    /// See [`Occupancy::work`].
    work: u64,
}

impl<'a> Occupancy<'a> {
    /// An empty index over the lifetimes of `buffers`; queries and insertions name buffers by
    /// their index there. Panics beyond 2^32 buffers.
    pub fn new(buffers: &'a [Buffer]) -> Self {
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
        Occupancy {
            buffers,
            span,
            leaves,
            cover: vec![0; 2 * leaves],
            starts: vec![0; 2 * leaves],
            pool: Pool::new(),
            sets: Vec::with_capacity(128),
            cursors: Vec::with_capacity(128),
            heap: BinaryHeap::with_capacity(128),
            work: 0,
        }
    }

    /// Steps taken so far by the queries (sets gathered, intervals visited) and insertions
    /// (sets touched, intervals shifted): proportional to the time spent, so a caller can check
    /// a deadline after a fixed amount of work rather than a fixed number of buffers (one query
    /// can visit every interval placed so far), and a test can bound the work without a clock.
    pub fn work(&self) -> u64 {
        self.work
    }

    /// Records buffer `i` at `offset`.
    pub fn insert(&mut self, i: usize, offset: u64) {
        let (a, c) = self.span[i];
        let end = offset + self.buffers[i].size;
        let (mut lo, mut hi) = (a as usize + self.leaves, c as usize + self.leaves);
        while lo < hi {
            if lo & 1 == 1 {
                self.work += self.pool.insert(&mut self.cover[lo], offset, end);
                lo += 1;
            }
            if hi & 1 == 1 {
                hi -= 1;
                self.work += self.pool.insert(&mut self.cover[hi], offset, end);
            }
            lo /= 2;
            hi /= 2;
        }
        let mut node = a as usize + self.leaves;
        // The left spine (powers of two) holds leaf 0, never inside a range query.
        while !node.is_power_of_two() {
            self.work += self.pool.insert(&mut self.starts[node], offset, end);
            node /= 2;
        }
    }

    /// Collects into `self.sets` the sets whose union is the address space taken during buffer
    /// `i`'s lifetime.
    fn gather(&mut self, i: usize) {
        self.sets.clear();
        self.cursors.clear();
        let (a, c) = self.span[i];
        let mut node = a as usize + self.leaves;
        while node >= 1 {
            if self.cover[node] != 0 {
                self.sets.push(self.pool.range(self.cover[node]));
            }
            node /= 2;
        }
        let (mut lo, mut hi) = (a as usize + 1 + self.leaves, c as usize + self.leaves);
        while lo < hi {
            if lo & 1 == 1 {
                if self.starts[lo] != 0 {
                    self.sets.push(self.pool.range(self.starts[lo]));
                }
                lo += 1;
            }
            if hi & 1 == 1 {
                hi -= 1;
                if self.starts[hi] != 0 {
                    self.sets.push(self.pool.range(self.starts[hi]));
                }
            }
            lo /= 2;
            hi /= 2;
        }
        self.cursors.resize(self.sets.len(), usize::MAX);
        self.work += 1 + self.sets.len() as u64;
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
