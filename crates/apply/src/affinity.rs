//! `plan-affinity`: the memory-optimal plan, then blocks used together (co-access edges, HALO's
//! affinity) moved next to each other wherever the plan leaves room, never raising the makespan
//! and never making two live blocks overlap.
//!
//! The pass takes co-access pairs heaviest first (both directions summed). A pair already at
//! most a cache line apart is kept as it is. Otherwise one of the two blocks (the mover, never
//! one an earlier pair fixed) is tried right above and right below the other (the anchor): the
//! spot must lie inside `[0, makespan)`, honour the mover's alignment, and overlap no block
//! live at the same time as the mover, or overlap exactly one, of the same slot size, sitting
//! exactly there and free to go to the mover's old spot (a swap of equal blocks, which dense
//! plans often need). A pair that got together fixes both its blocks, so later, lighter pairs
//! cannot pull them apart again.
//!
//! Which blocks are live together comes from a static interval tree over lifetimes (blocks
//! sorted by start, a max-end tree to skip those that ended): a query costs O(log n + k) for k
//! blocks live during the mover's lifetime. A work budget bounds the pass on huge traces; the
//! report says when it ran out. The result is validated again when the layout is assembled.

use crate::source::SourceBlock;
use crate::strategy::{slot_align_log2, CACHE_LINE};
use crate::slot;
use heaplab_access::Edge;

/// At most this many co-access pairs are considered (the heaviest).
pub const MAX_PAIRS: usize = 200_000;
/// At most this many blocks are examined in all by the overlap queries.
pub const WORK_BUDGET: u64 = 200_000_000;

/// What the pass did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AffinityReport {
    /// Co-access pairs considered.
    pub pairs: u64,
    /// Pairs already at most a cache line apart in the plan.
    pub already_near: u64,
    /// Pairs brought together by moving a block into free space.
    pub moved: u64,
    /// Pairs brought together by swapping two blocks of equal size.
    pub swapped: u64,
    /// Share of co-access weight between blocks at most a cache line apart, before and after.
    pub near_before: f64,
    /// After the pass.
    pub near_after: f64,
    /// The plan's makespan, and the region after (never larger).
    pub makespan_before: u64,
    /// Region after the pass.
    pub makespan_after: u64,
    /// Whether the work budget ran out before every pair was tried.
    pub budget_exhausted: bool,
}

/// Blocks whose lifetimes intersect a query interval: sorted by start, with a tree of maximum
/// ends over that order.
struct TimeIndex {
    order: Vec<usize>,
    lowers: Vec<u64>,
    /// Implicit binary tree over `order` (leaves from `size`), each node the max end below it.
    max_upper: Vec<u64>,
    size: usize,
}

impl TimeIndex {
    fn new(blocks: &[SourceBlock]) -> TimeIndex {
        let mut order: Vec<usize> = (0..blocks.len()).collect();
        order.sort_by_key(|&i| blocks[i].lower);
        let lowers = order.iter().map(|&i| blocks[i].lower).collect();
        let size = order.len().next_power_of_two().max(1);
        let mut max_upper = vec![0u64; 2 * size];
        for (k, &i) in order.iter().enumerate() {
            max_upper[size + k] = blocks[i].upper;
        }
        for k in (1..size).rev() {
            max_upper[k] = max_upper[2 * k].max(max_upper[2 * k + 1]);
        }
        TimeIndex { order, lowers, max_upper, size }
    }

    /// Calls `each` for every block live at some time in `[lower, upper)`; returns the work done
    /// (blocks reported, plus one).
    fn query(&self, lower: u64, upper: u64, mut each: impl FnMut(usize)) -> u64 {
        let end = self.lowers.partition_point(|&l| l < upper);
        let mut found = 0;
        let mut stack = vec![(1usize, 0usize, self.size)];
        while let Some((node, lo, hi)) = stack.pop() {
            if lo >= end || self.max_upper[node] <= lower {
                continue;
            }
            if node >= self.size {
                each(self.order[lo]);
                found += 1;
                continue;
            }
            let mid = (lo + hi) / 2;
            stack.push((2 * node + 1, mid, hi));
            stack.push((2 * node, lo, mid));
        }
        found + 1
    }
}

/// Whether slots `[a, a + sa)` and `[b, b + sb)` are at most a cache line apart.
fn near(a: u64, sa: u64, b: u64, sb: u64) -> bool {
    let gap = a.max(b) as i128 - (a + sa).min(b + sb) as i128;
    gap < CACHE_LINE as i128
}

/// Undirected pairs with summed weights, heaviest first (then by blocks).
fn pairs(n: usize, edges: &[Edge]) -> Vec<(usize, usize, u64)> {
    let mut p: Vec<(usize, usize, u64)> = edges
        .iter()
        .filter(|e| e.from != e.to && (e.from as usize) < n && (e.to as usize) < n)
        .map(|e| (e.from.min(e.to) as usize, e.from.max(e.to) as usize, e.weight))
        .collect();
    p.sort_unstable();
    p.dedup_by(|x, y| {
        let same = (x.0, x.1) == (y.0, y.1);
        if same {
            y.2 = y.2.saturating_add(x.2);
        }
        same
    });
    p.sort_unstable_by_key(|&(a, b, w)| (std::cmp::Reverse(w), a, b));
    p
}

/// Share of co-access weight between planned blocks at most a cache line apart (0 without
/// edges).
pub fn near_share(blocks: &[SourceBlock], offsets: &[Option<u64>], edges: &[Edge]) -> f64 {
    let (mut near_w, mut total) = (0u128, 0u128);
    for (a, b, w) in pairs(blocks.len(), edges) {
        total += w as u128;
        if let (Some(x), Some(y)) = (offsets[a], offsets[b]) {
            if near(x, slot(blocks[a].size), y, slot(blocks[b].size)) {
                near_w += w as u128;
            }
        }
    }
    if total == 0 {
        0.0
    } else {
        near_w as f64 / total as f64
    }
}

/// Moves blocks of a valid placement `offsets` (every block placed) next to the blocks they are
/// used with, as the module notes say; the placement stays valid and its makespan does not grow.
pub fn improve(blocks: &[SourceBlock], offsets: &mut [u64], edges: &[Edge]) -> AffinityReport {
    let n = blocks.len();
    let size: Vec<u64> = blocks.iter().map(|b| slot(b.size)).collect();
    let makespan = (0..n).map(|i| offsets[i] + size[i]).max().unwrap_or(0);
    let all = |o: &[u64]| near_share(blocks, &o.iter().map(|&x| Some(x)).collect::<Vec<_>>(), edges);
    let mut report = AffinityReport { near_before: all(offsets), makespan_before: makespan, ..AffinityReport::default() };
    let index = TimeIndex::new(blocks);
    let mut fixed = vec![false; n];
    let mut work = 0u64;
    let mut list = pairs(n, edges);
    list.truncate(MAX_PAIRS);
    // Blocks live with `v` that a slot at `o` would overlap, `skip` excepted (at most 2 kept).
    let clashes = |offsets: &[u64], v: usize, o: u64, skip: usize, work: &mut u64| -> Vec<usize> {
        let mut hit = Vec::new();
        *work += index.query(blocks[v].lower, blocks[v].upper, |c| {
            if c != v && c != skip && o < offsets[c] + size[c] && offsets[c] < o + size[v] && hit.len() < 2 {
                hit.push(c);
            }
        });
        hit
    };
    for &(a, b, _) in &list {
        if work > WORK_BUDGET {
            report.budget_exhausted = true;
            break;
        }
        report.pairs += 1;
        if near(offsets[a], size[a], offsets[b], size[b]) {
            report.already_near += 1;
            fixed[a] = true;
            fixed[b] = true;
            continue;
        }
        'pair: for (v, anchor) in [(b, a), (a, b)] {
            if fixed[v] {
                continue;
            }
            let align = 1u64 << slot_align_log2(&blocks[v]);
            let top = offsets[anchor] + size[anchor];
            let above = top.div_ceil(align) * align;
            let below = offsets[anchor].checked_sub(size[v]).map(|o| o / align * align);
            let spots = [Some(above).filter(|&o| o - top < CACHE_LINE), below.filter(|&o| offsets[anchor] - (o + size[v]) < CACHE_LINE)];
            for o in spots.into_iter().flatten() {
                if o + size[v] > makespan {
                    continue;
                }
                let hit = clashes(offsets, v, o, usize::MAX, &mut work);
                if hit.is_empty() {
                    offsets[v] = o;
                    report.moved += 1;
                } else {
                    let w = hit[0];
                    let old = offsets[v];
                    let swappable = hit.len() == 1 && !fixed[w] && w != anchor && offsets[w] == o && size[w] == size[v];
                    if !(swappable && old.is_multiple_of(1u64 << slot_align_log2(&blocks[w])) && clashes(offsets, w, old, v, &mut work).is_empty()) {
                        continue;
                    }
                    offsets[v] = o;
                    offsets[w] = old;
                    report.swapped += 1;
                }
                fixed[v] = true;
                fixed[anchor] = true;
                break 'pair;
            }
        }
    }
    report.near_after = all(offsets);
    report.makespan_after = (0..n).map(|i| offsets[i] + size[i]).max().unwrap_or(0);
    report
}
