//! Greedy placement heuristics in the DSA sense: buffers are taken in some order and each goes
//! to the lowest (first-fit) or tightest (best-fit) address range that is free *during its
//! lifetime*, i.e. not used by any already placed buffer whose lifetime intersects it.
//!
//! Finding those buffers is the costly part. [`PlacedIndex`] answers it without a conflict graph:
//! buffers sorted by start, with a max-tree of the ends of the placed ones, so a query visits only
//! the placed buffers that really intersect: O((k + 1) log n) for k of them.

use heaplab_model::{align_up, Buffer};

/// How a free address range is chosen.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Fit {
    /// The lowest range that fits.
    First,
    /// The smallest gap that fits (lowest on ties), else on top.
    Best,
}

/// The order buffers are placed in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Order {
    /// Size descending, longer lifetime first on ties ("big rocks first").
    Size,
    /// Area (size × lifetime) descending.
    Area,
    /// Lifetime length descending, then size.
    Length,
    /// Start time ascending, larger first: what an online allocator would see.
    Start,
    /// Seeded random permutation.
    Random(u64),
}

/// A heuristic: an order and a fit rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Heuristic {
    /// Placement order.
    pub order: Order,
    /// Gap choice.
    pub fit: Fit,
}

impl Heuristic {
    /// The deterministic heuristics every portfolio run tries.
    pub const STANDARD: [Heuristic; 8] = [
        Heuristic { order: Order::Size, fit: Fit::First },
        Heuristic { order: Order::Size, fit: Fit::Best },
        Heuristic { order: Order::Area, fit: Fit::First },
        Heuristic { order: Order::Area, fit: Fit::Best },
        Heuristic { order: Order::Length, fit: Fit::First },
        Heuristic { order: Order::Length, fit: Fit::Best },
        Heuristic { order: Order::Start, fit: Fit::First },
        Heuristic { order: Order::Start, fit: Fit::Best },
    ];

    /// A short name such as `first-fit/size`.
    pub fn name(&self) -> String {
        let fit = match self.fit {
            Fit::First => "first-fit",
            Fit::Best => "best-fit",
        };
        let order = match self.order {
            Order::Size => "size".to_string(),
            Order::Area => "area".to_string(),
            Order::Length => "lifetime".to_string(),
            Order::Start => "start".to_string(),
            Order::Random(s) => format!("random#{s}"),
        };
        format!("{fit}/{order}")
    }

    /// Places every buffer; the result is valid by construction.
    pub fn run(&self, buffers: &[Buffer]) -> Vec<u64> {
        let order = order(buffers, self.order);
        place_in_order(buffers, &order, self.fit)
    }
}

/// Buffer indices in the given order (ties broken by index, so the result is deterministic).
pub fn order(buffers: &[Buffer], o: Order) -> Vec<u32> {
    let mut idx: Vec<u32> = (0..buffers.len() as u32).collect();
    let b = |i: &u32| &buffers[*i as usize];
    match o {
        Order::Size => idx.sort_unstable_by_key(|i| (std::cmp::Reverse((b(i).size, b(i).length())), b(i).lower, *i)),
        Order::Area => idx.sort_unstable_by_key(|i| {
            (std::cmp::Reverse((b(i).size as u128 * b(i).length() as u128, b(i).size)), b(i).lower, *i)
        }),
        Order::Length => idx.sort_unstable_by_key(|i| (std::cmp::Reverse((b(i).length(), b(i).size)), b(i).lower, *i)),
        Order::Start => idx.sort_unstable_by_key(|i| (b(i).lower, std::cmp::Reverse(b(i).size), *i)),
        Order::Random(seed) => {
            let mut rng = crate::rng::Rng::new(seed);
            for k in (1..idx.len()).rev() {
                let j = rng.below(k as u64 + 1) as usize;
                idx.swap(k, j);
            }
        }
    }
    idx
}

/// Places buffers one by one in `order` at the lowest offset that clashes with no placed,
/// time-conflicting buffer, honouring alignment. Valid by construction.
pub fn first_fit_in_order(buffers: &[Buffer], order: &[u32]) -> Vec<u64> {
    place_in_order(buffers, order, Fit::First)
}

/// Places buffers in `order` with the given fit rule.
pub fn place_in_order(buffers: &[Buffer], order: &[u32], fit: Fit) -> Vec<u64> {
    let mut index = PlacedIndex::new(buffers);
    let mut offsets = vec![0u64; buffers.len()];
    let mut occupied: Vec<(u64, u64)> = Vec::new();
    for &i in order {
        let i = i as usize;
        let b = &buffers[i];
        occupied.clear();
        index.for_each_conflicting(b.lower, b.upper, |j| occupied.push((offsets[j], offsets[j] + buffers[j].size)));
        let off = match fit {
            Fit::First => lowest_fit(&mut occupied, b.size, b.align_log2),
            Fit::Best => tightest_fit(&mut occupied, b.size, b.align_log2),
        };
        offsets[i] = off;
        index.insert(i);
    }
    offsets
}

/// Lowest aligned offset where `[offset, offset + size)` misses every occupied range.
pub fn lowest_fit(occupied: &mut [(u64, u64)], size: u64, align_log2: u8) -> u64 {
    occupied.sort_unstable();
    let mut cand = 0u64;
    for &(start, end) in occupied.iter() {
        if start >= cand.saturating_add(size) {
            break;
        }
        if end > cand {
            cand = align_up(end, align_log2).unwrap_or(u64::MAX);
        }
    }
    cand
}

/// The aligned start of the smallest gap between occupied ranges that holds `size`; on top of
/// everything when none does. Lowest gap on ties.
pub fn tightest_fit(occupied: &mut [(u64, u64)], size: u64, align_log2: u8) -> u64 {
    occupied.sort_unstable();
    let mut covered = 0u64; // everything below is occupied or already considered
    let mut best: Option<(u64, u64)> = None; // (gap length, aligned start)
    for &(start, end) in occupied.iter() {
        if start > covered {
            let s = align_up(covered, align_log2).unwrap_or(u64::MAX);
            if s.saturating_add(size) <= start {
                let len = start - covered;
                if best.is_none_or(|(l, _)| len < l) {
                    best = Some((len, s));
                }
            }
        }
        covered = covered.max(end);
    }
    best.map(|(_, s)| s).unwrap_or_else(|| align_up(covered, align_log2).unwrap_or(u64::MAX))
}

/// Placed buffers, searchable by lifetime overlap.
///
/// All buffers are sorted by `lower` once; a segment tree over that order keeps, per node, the
/// largest `upper` among *placed* buffers below it (0 when none). The buffers intersecting
/// `[l, u)` are the placed ones in the prefix with `lower < u` whose `upper > l`: the descent
/// prunes every subtree whose maximum end is `≤ l`.
pub struct PlacedIndex {
    lowers: Vec<u64>,
    by_lower: Vec<u32>,
    pos: Vec<u32>,
    uppers: Vec<u64>,
    tree: Vec<u64>,
    leaves: usize,
}

impl PlacedIndex {
    /// An index with nothing placed yet.
    pub fn new(buffers: &[Buffer]) -> Self {
        let mut by_lower: Vec<u32> = (0..buffers.len() as u32).collect();
        by_lower.sort_unstable_by_key(|&i| (buffers[i as usize].lower, i));
        let mut pos = vec![0u32; buffers.len()];
        for (k, &i) in by_lower.iter().enumerate() {
            pos[i as usize] = k as u32;
        }
        let leaves = buffers.len().next_power_of_two().max(1);
        PlacedIndex {
            lowers: by_lower.iter().map(|&i| buffers[i as usize].lower).collect(),
            by_lower,
            pos,
            uppers: buffers.iter().map(|b| b.upper).collect(),
            tree: vec![0; 2 * leaves],
            leaves,
        }
    }

    /// Marks buffer `i` placed.
    pub fn insert(&mut self, i: usize) {
        let mut node = self.leaves + self.pos[i] as usize;
        let u = self.uppers[i];
        while node >= 1 && self.tree[node] < u {
            self.tree[node] = u;
            node /= 2;
        }
    }

    /// Marks buffer `i` not placed.
    pub fn remove(&mut self, i: usize) {
        let mut node = self.leaves + self.pos[i] as usize;
        self.tree[node] = 0;
        node /= 2;
        while node >= 1 {
            let m = self.tree[2 * node].max(self.tree[2 * node + 1]);
            if self.tree[node] == m {
                break;
            }
            self.tree[node] = m;
            node /= 2;
        }
    }

    /// Calls `f` with every placed buffer whose lifetime intersects `[l, u)`.
    pub fn for_each_conflicting(&self, l: u64, u: u64, mut f: impl FnMut(usize)) {
        let prefix = self.lowers.partition_point(|&x| x < u);
        if prefix == 0 {
            return;
        }
        // Iterative descent over nodes covering [0, prefix).
        let mut stack: Vec<(usize, usize, usize)> = vec![(1, 0, self.leaves)];
        while let Some((node, lo, hi)) = stack.pop() {
            if lo >= prefix || self.tree[node] <= l {
                continue;
            }
            if hi - lo == 1 {
                f(self.by_lower[lo] as usize);
                continue;
            }
            let mid = (lo + hi) / 2;
            stack.push((2 * node + 1, mid, hi));
            stack.push((2 * node, lo, mid));
        }
    }
}

/// Exact solution when no two buffers conflict: everything at offset 0.
pub fn solve_conflict_free(buffers: &[Buffer]) -> Option<Vec<u64>> {
    (heaplab_sweep::max_live(buffers) <= 1).then(|| vec![0; buffers.len()])
}

/// Exact solution when all sizes are equal (and every alignment divides that size): interval
/// graph colouring by start time uses exactly max-live colours, so makespan = max load.
pub fn solve_equal_sizes(buffers: &[Buffer]) -> Option<Vec<u64>> {
    let size = buffers.first()?.size;
    if buffers.iter().any(|b| b.size != size || size % b.alignment() != 0) {
        return None;
    }
    let sweep = heaplab_sweep::Sweep::new(buffers);
    let mut colour = vec![0u64; buffers.len()];
    let mut free: std::collections::BinaryHeap<std::cmp::Reverse<u64>> = Default::default();
    let mut next = 0u64;
    for (_, e) in sweep.events(buffers) {
        match e {
            heaplab_sweep::Event::Free(i) => free.push(std::cmp::Reverse(colour[i])),
            heaplab_sweep::Event::Alloc(i) => {
                colour[i] = free.pop().map(|r| r.0).unwrap_or_else(|| {
                    next += 1;
                    next - 1
                })
            }
        }
    }
    Some(colour.into_iter().map(|c| c * size).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use heaplab_sweep::{max_load, validate};

    #[test]
    fn fits_honour_gaps_and_alignment() {
        let mut occ = vec![(0, 10), (20, 30), (12, 15)];
        assert_eq!(lowest_fit(&mut occ, 5, 0), 15);
        assert_eq!(lowest_fit(&mut occ, 2, 0), 10);
        assert_eq!(lowest_fit(&mut occ, 2, 3), 16); // 8 is taken; 16..18 is free below 20
        let mut occ = vec![(0, 10), (20, 30), (12, 15)];
        assert_eq!(tightest_fit(&mut occ, 2, 0), 10);
        assert_eq!(tightest_fit(&mut occ, 4, 0), 15);
        assert_eq!(tightest_fit(&mut occ, 6, 0), 30);
    }

    #[test]
    fn index_finds_exactly_the_conflicting_placed_buffers() {
        let bs: Vec<Buffer> = (0..200u64).map(|i| Buffer::new(i, (i * 7) % 50, (i * 7) % 50 + 1 + i % 13, 1)).collect();
        let mut idx = PlacedIndex::new(&bs);
        for i in (0..200).step_by(3) {
            idx.insert(i);
        }
        idx.remove(3);
        for q in 0..60u64 {
            let (l, u) = (q, q + 1 + q % 5);
            let mut got = vec![];
            idx.for_each_conflicting(l, u, |j| got.push(j));
            got.sort();
            let want: Vec<usize> =
                (0..200).step_by(3).filter(|&j| j != 3 && bs[j].lower < u && l < bs[j].upper).collect();
            assert_eq!(got, want);
        }
    }

    #[test]
    fn every_heuristic_is_valid_on_random_instances() {
        let mut s = 77u64;
        let mut rnd = |m: u64| {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (s >> 33) % m
        };
        for round in 0..200 {
            let n = (round % 50) as usize;
            let bs: Vec<Buffer> = (0..n)
                .map(|i| {
                    let lo = rnd(40);
                    let len = 1 + rnd(15);
                    let bits = 1 + rnd(20);
                    let mut b = Buffer::new(i as u64, lo, lo + len, 1 + rnd(1 << bits));
                    b.align_log2 = if rnd(3) == 0 { rnd(6) as u8 } else { 0 };
                    b
                })
                .collect();
            let ml = max_load(&bs);
            for h in Heuristic::STANDARD.iter().chain(&[Heuristic { order: Order::Random(round), fit: Fit::First }]) {
                let off = h.run(&bs);
                let v = validate(&bs, &off);
                assert!(v.is_valid(), "{} {}", h.name(), v.describe(&bs, &off));
                assert!(v.makespan >= ml);
            }
        }
    }

    #[test]
    fn exact_cases_reach_max_load() {
        let bs: Vec<Buffer> = (0..100u64).map(|i| Buffer::new(i, i % 17, i % 17 + 1 + i % 5, 64)).collect();
        let off = solve_equal_sizes(&bs).unwrap();
        let v = validate(&bs, &off);
        assert!(v.is_valid());
        assert_eq!(v.makespan, max_load(&bs));
        let bs: Vec<Buffer> = (0..10u64).map(|i| Buffer::new(i, i, i + 1, 5 + i)).collect();
        assert_eq!(solve_conflict_free(&bs).unwrap(), vec![0; 10]);
        assert!(solve_conflict_free(&[Buffer::new(0, 0, 2, 1), Buffer::new(1, 1, 3, 1)]).is_none());
    }
}
