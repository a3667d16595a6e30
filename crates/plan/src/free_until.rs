//! First fit in start order around many planned rocks, by "free until" labels: the sweep the
//! size split ([`crate::split`]) places the rest of a component with.
//!
//! # What it owns
//! [`LabelMap`], the address space cut into ranges that each carry one label (taken now, or
//! free until a tick), and [`first_fit_around_labelled`], the sweep that uses it.
//!
//! # Why
//! [`crate::online::first_fit_around`] keeps the free space *now* and asks the rocks whether one
//! starts inside a buffer's lifetime at the address found; if so the search resumes above it.
//! Around a dense plan of many rocks (the large part of random 10^7 buffers: 2·10^6 rocks) the
//! holes at low addresses are where rocks are about to start, so a buffer climbs past about 31
//! rocks before it fits: 77 s at 10^7. Here each address carries instead the tick until which it
//! stays free (the start of the next rock there, or "taken"), so a buffer fits where a run of
//! labels at least its end holds it: one scan, no climbing, the same offsets (the oracle test
//! says so). When a rock ends, the labels of its range become those of the rocks above it in
//! time, which a backward pass over the rocks alone computed beforehand (for each rock, its
//! range as it is at its end); when a placed buffer ends, its range gets back the labels it
//! covered when it was placed (no rock started there meanwhile: they were at least its end).

use heaplab_model::{align_up, Buffer};
use std::collections::HashMap;

/// Label of a range taken by a live buffer or rock.
const TAKEN: u64 = 0;
/// Label of a range no rock will ever take again.
const FOREVER: u64 = u64::MAX;
/// Most ranges a block holds; a fuller one splits in two halves.
const BLOCK: usize = 128;
/// A block with fewer ranges than this joins the next when both fit in one.
const SMALL: usize = 16;

/// Consecutive labelled ranges as (start, label), ascending by start; the range of the last
/// one in the last block ends at `u64::MAX`, each other's where the next begins.
#[derive(Clone, Default)]
struct Block {
    ranges: Vec<(u64, u64)>,
    /// The largest label, so that a search for labels of at least some tick skips the block.
    max: u64,
}

impl Block {
    fn refresh(&mut self) {
        self.max = self.ranges.iter().map(|r| r.1).max().unwrap_or(0);
    }

    fn first(&self) -> u64 {
        self.ranges[0].0
    }
}

/// The address space `[0, u64::MAX)` as ranges, each labelled [`TAKEN`] or with the tick until
/// which it is free, in blocks of at most [`BLOCK`] ranges that know their largest label.
/// Adjacent ranges of one label are merged where a change meets them in a block.
pub struct LabelMap {
    blocks: Vec<Block>,
    /// The ranges a change puts in, gathered before they are spliced in.
    scratch: Vec<(u64, u64)>,
}

impl Default for LabelMap {
    fn default() -> Self {
        Self::new()
    }
}

impl LabelMap {
    /// Everything free forever.
    pub fn new() -> Self {
        LabelMap { blocks: vec![Block { ranges: vec![(0, FOREVER)], max: FOREVER }], scratch: Vec::new() }
    }

    /// The block whose ranges hold address `a`, and the range in it.
    fn find(&self, a: u64) -> (usize, usize) {
        let bi = self.blocks.partition_point(|b| b.first() <= a) - 1;
        (bi, self.blocks[bi].ranges.partition_point(|r| r.0 <= a) - 1)
    }

    /// The labels over `[a, e)`, as (start, label) from `a` on, appended to `out`.
    pub fn labels_over(&self, a: u64, e: u64, out: &mut Vec<(u64, u64)>) {
        let (bi, k) = self.find(a);
        out.push((a, self.blocks[bi].ranges[k].1));
        let mut k = k + 1;
        for b in &self.blocks[bi..] {
            for &r in &b.ranges[k..] {
                if r.0 >= e {
                    return;
                }
                out.push(r);
            }
            k = 0;
        }
    }

    /// Sets the labels over `[a, e)` to `pieces` ((start, label), ascending, the first at `a`,
    /// each up to the next, the last up to `e`).
    pub fn set(&mut self, a: u64, e: u64, pieces: &[(u64, u64)]) {
        debug_assert!(a < e && pieces.first().is_some_and(|p| p.0 == a) && pieces.last().is_some_and(|p| p.0 < e));
        let (bi, k) = self.find(a);
        // The ranges of block `bi` from `k` on that start below `e` go (the one at `k` stays,
        // cut at `a`, if it starts below it); so do those of the blocks after it (whole blocks,
        // then the head of one). `tail` is the label in force at `e` before the change.
        let ranges = &self.blocks[bi].ranges;
        let m = k + ranges[k..].partition_point(|r| r.0 < e);
        let mut tail = ranges[m - 1].1;
        let mut next_at_e = ranges.get(m).map(|r| r.0 == e);
        while next_at_e.is_none() && bi + 1 < self.blocks.len() {
            let nb = &mut self.blocks[bi + 1];
            let cut = nb.ranges.partition_point(|r| r.0 < e);
            if cut > 0 {
                tail = nb.ranges[cut - 1].1;
            }
            if cut == nb.ranges.len() {
                self.blocks.remove(bi + 1);
                continue;
            }
            next_at_e = Some(nb.ranges[cut].0 == e);
            if cut > 0 {
                nb.ranges.drain(..cut);
                nb.refresh();
            }
        }
        let keep = if self.blocks[bi].ranges[k].0 < a { k + 1 } else { k };
        let b = &mut self.blocks[bi];
        let mut last = keep.checked_sub(1).map(|j| b.ranges[j].1);
        let scratch = &mut self.scratch;
        scratch.clear();
        for &(s, l) in pieces.iter().chain((next_at_e != Some(true)).then_some(&(e, tail))) {
            if last != Some(l) {
                scratch.push((s, l));
                last = Some(l);
            }
        }
        // The range after the change merges into the change's last label where equal.
        let upto = if b.ranges.get(m).is_some_and(|r| Some(r.1) == last) { m + 1 } else { m };
        b.ranges.splice(keep..upto, scratch.drain(..));
        b.refresh();
        if b.ranges.len() > BLOCK {
            let half = b.ranges.len() / 2;
            let mut hi = Block { ranges: b.ranges.split_off(half), max: 0 };
            hi.refresh();
            b.refresh();
            self.blocks.insert(bi + 1, hi);
            return;
        }
        let len = b.ranges.len();
        if len < SMALL && bi + 1 < self.blocks.len() && len + self.blocks[bi + 1].ranges.len() <= BLOCK {
            let next = self.blocks.remove(bi + 1);
            let b = &mut self.blocks[bi];
            b.ranges.extend(next.ranges);
            b.max = b.max.max(next.max);
        }
    }

    /// The least label over `[at, at + size)`, or `Err(x)` where the label at `x` in it is
    /// below `need` (the first such address; `u64::MAX` where the span passes the address
    /// space); the range holding `at` is range `k` of block `bi` or one after it.
    fn least_over(&self, (bi, k): (usize, usize), at: u64, size: u64, need: u64) -> Result<u64, u64> {
        let end = at.checked_add(size).ok_or(u64::MAX)?;
        let mut least = FOREVER;
        let mut k = k;
        for (j, b) in self.blocks[bi..].iter().enumerate() {
            for (x, &(s, l)) in b.ranges[k..].iter().enumerate() {
                if s >= end && s > at {
                    return Ok(least);
                }
                // Ranges that end by `at` are not covered.
                let next = match b.ranges.get(k + x + 1) {
                    Some(r) => r.0,
                    None => self.blocks.get(bi + j + 1).map_or(u64::MAX, |nb| nb.first()),
                };
                if next <= at {
                    continue;
                }
                if l < need {
                    return Err(s.max(at));
                }
                least = least.min(l);
            }
            k = 0;
        }
        Ok(least)
    }

    /// Of the first `choices` places where `size` bytes fit labelled at least `need` (the
    /// lowest, then from each range above it whose label differs from the one below it, each
    /// offset once), the one whose least label is smallest, the lowest of equals: the hole
    /// that closes soonest after `need`, keeping the holes that stay free longer for longer
    /// buffers. The search ends at a place free for ever (above every rock, as a rule).
    /// `choices` 1 is [`LabelMap::lowest`]. A place that fails records where (the first
    /// label below `need`), so the places below it that would reach it are not walked again:
    /// many small ranges under one long failing run cost one walk, not one each.
    pub fn tightest(&self, size: u64, align_log2: u8, need: u64, choices: usize) -> u64 {
        let first = self.lowest(size, align_log2, need);
        if first == u64::MAX || choices <= 1 {
            return first;
        }
        let (mut bi, mut k) = self.find(first);
        let mut best = (self.least_over((bi, k), first, size, need).unwrap_or(FOREVER), first);
        let (mut found, mut last_at, mut failed_at) = (1, first, None::<u64>);
        let mut below = self.blocks[bi].ranges[k].1;
        k += 1;
        while best.0 != FOREVER && found < choices {
            if k == self.blocks[bi].ranges.len() {
                bi += 1;
                k = 0;
                // Whole blocks below `need` hold no place; what follows them differs from them.
                while bi < self.blocks.len() && self.blocks[bi].max < need {
                    below = TAKEN;
                    bi += 1;
                }
                if bi == self.blocks.len() {
                    break;
                }
            }
            let (s, l) = self.blocks[bi].ranges[k];
            k += 1;
            if l >= need && l != below {
                if let Some(at) = align_up(s, align_log2).filter(|&at| at != last_at) {
                    last_at = at;
                    let reaches_failure = failed_at.is_some_and(|x| at <= x && at.saturating_add(size) > x);
                    if !reaches_failure {
                        match self.least_over((bi, k - 1), at, size, need) {
                            Ok(least) => {
                                found += 1;
                                best = best.min((least, at));
                                if least == FOREVER {
                                    break;
                                }
                            }
                            Err(x) => failed_at = Some(x),
                        }
                    }
                }
            }
            below = l;
        }
        best.1
    }

    /// The lowest offset aligned to `2^align_log2` where `size` bytes are labelled at least
    /// `need` throughout.
    pub fn lowest(&self, size: u64, align_log2: u8, need: u64) -> u64 {
        let mut run: Option<u64> = None;
        for (bi, b) in self.blocks.iter().enumerate() {
            if b.max < need {
                run = None;
                continue;
            }
            for (k, &(s, l)) in b.ranges.iter().enumerate() {
                if l < need {
                    run = None;
                    continue;
                }
                let from = *run.get_or_insert(s);
                let end = match b.ranges.get(k + 1) {
                    Some(r) => r.0,
                    None => self.blocks.get(bi + 1).map_or(u64::MAX, |b| b.first()),
                };
                if let Some(at) = align_up(from, align_log2) {
                    if at.checked_add(size).is_some_and(|t| t <= end) {
                        return at;
                    }
                }
            }
        }
        u64::MAX
    }
}

/// First fit in start order around rocks placed beforehand (`rocks` at `rock_offsets`, valid
/// among themselves): with `choices` 1, exactly the offsets of
/// [`crate::online::first_fit_around`] for rocks of non-empty lifetimes (a rock of none is left
/// where it is and keeps nothing clear), in time that does not grow with the rocks met in a
/// buffer's lifetime; with more, each buffer goes to the tightest in time of its first
/// `choices` fits ([`LabelMap::tightest`]). `ends` orders the buffers by end
/// ([`crate::online::ends_of`]). `None` once `deadline` has passed or `cancel` is set (looked
/// at every 4096 buffers, in both passes).
pub fn first_fit_around_labelled(
    buffers: &[Buffer],
    ends: &[u32],
    rocks: &[u32],
    rock_offsets: &[u64],
    choices: usize,
    deadline: Option<std::time::Instant>,
    cancel: Option<&std::sync::atomic::AtomicBool>,
) -> Option<Vec<u64>> {
    debug_assert_eq!(ends.len(), buffers.len());
    let n = buffers.len();
    let mut offsets = vec![0u64; n];
    // Per buffer: 0 the rest, 1 a rock of non-empty lifetime, 2 a rock of an empty one.
    let mut kind = vec![0u8; n];
    for (&r, &o) in rocks.iter().zip(rock_offsets) {
        offsets[r as usize] = o;
        let b = &buffers[r as usize];
        kind[r as usize] = if b.lower < b.upper && b.size > 0 { 1 } else { 2 };
    }
    // Rocks by start (ties by index) and, for the snapshots, by end.
    let mut by_start: Vec<u32> = rocks.iter().copied().filter(|&r| kind[r as usize] == 1).collect();
    by_start.sort_unstable_by_key(|&r| (buffers[r as usize].lower, r));
    let rock_range = |offsets: &[u64], r: u32| {
        let o = offsets[r as usize];
        (o, o + buffers[r as usize].size)
    };
    // The backward pass over the rocks alone: each rock's range labelled with its start, latest
    // start first (a later label is never above an earlier one where they overlap: rocks that
    // share addresses are apart in time). At each rock's end, once every rock starting at or
    // after it is labelled, its range is recorded: the labels it gets back when it ends.
    let mut map = LabelMap::new();
    let label = |map: &mut LabelMap, q: u32| {
        let (a, e) = rock_range(&offsets, q);
        map.set(a, e, &[(a, buffers[q as usize].lower)]);
    };
    // A rock's place in `by_start`.
    let slot = |r: u32| by_start.binary_search_by_key(&(buffers[r as usize].lower, r), |&q| (buffers[q as usize].lower, q)).expect("a rock");
    // Per rock (by start), where its labels at its end lie in `after`, and how many.
    let mut after_of: Vec<(u32, u32)> = vec![(0, 0); by_start.len()];
    let mut after: Vec<(u64, u64)> = Vec::new();
    let mut next = by_start.len();
    let passed = |k: usize| {
        k % 4096 == 0
            && (deadline.is_some_and(|d| std::time::Instant::now() >= d) || cancel.is_some_and(|c| c.load(std::sync::atomic::Ordering::Relaxed)))
    };
    for (k, &r) in ends.iter().rev().enumerate() {
        if passed(k + 1) {
            return None;
        }
        if kind[r as usize] != 1 {
            continue;
        }
        let upper = buffers[r as usize].upper;
        while next > 0 && buffers[by_start[next - 1] as usize].lower >= upper {
            next -= 1;
            label(&mut map, by_start[next]);
        }
        let (a, e) = rock_range(&offsets, r);
        let first = after.len();
        map.labels_over(a, e, &mut after);
        after_of[slot(r)] = (first as u32, (after.len() - first) as u32);
    }
    while next > 0 {
        next -= 1;
        label(&mut map, by_start[next]);
    }
    // The forward sweep. The labels a placed buffer covered, kept until it ends.
    let mut covered: HashMap<u32, Vec<(u64, u64)>> = HashMap::new();
    let mut spare: Vec<Vec<(u64, u64)>> = Vec::new();
    let (mut next_end, mut next_rock) = (0usize, 0usize);
    for (k, i) in crate::rules::in_start_order(buffers).enumerate() {
        if passed(k + 1) {
            return None;
        }
        if kind[i as usize] != 0 {
            continue;
        }
        let b = &buffers[i as usize];
        // What ends by `b`'s start, and the rocks that start by then, in time order (an end
        // before a start at the same tick).
        loop {
            let end = ends.get(next_end).map(|&j| buffers[j as usize].upper).filter(|&u| u <= b.lower);
            let start = by_start.get(next_rock).map(|&r| buffers[r as usize].lower).filter(|&l| l <= b.lower);
            match (end, start) {
                (Some(u), s) if s.is_none_or(|l| u <= l) => {
                    let j = ends[next_end];
                    next_end += 1;
                    let e = &buffers[j as usize];
                    match kind[j as usize] {
                        1 => {
                            let (first, len) = after_of[slot(j)];
                            let (a, t) = rock_range(&offsets, j);
                            map.set(a, t, &after[first as usize..(first + len) as usize]);
                        }
                        0 if e.lower < e.upper && e.size > 0 => {
                            let back = covered.remove(&j).expect("a buffer that ends was placed");
                            map.set(offsets[j as usize], offsets[j as usize] + e.size, &back);
                            spare.push(back);
                        }
                        _ => {}
                    }
                }
                (_, Some(_)) => {
                    let r = by_start[next_rock];
                    next_rock += 1;
                    let (a, t) = rock_range(&offsets, r);
                    map.set(a, t, &[(a, TAKEN)]);
                }
                (None, None) => break,
                (Some(_), None) => unreachable!(),
            }
        }
        // Free now and until its end (an empty lifetime: free now).
        let need = b.upper.max(b.lower + 1);
        let a = map.tightest(b.size, b.align_log2, need, choices);
        offsets[i as usize] = a;
        if b.lower < b.upper && b.size > 0 {
            let mut back = spare.pop().unwrap_or_default();
            back.clear();
            map.labels_over(a, a + b.size, &mut back);
            map.set(a, a + b.size, &[(a, TAKEN)]);
            covered.insert(i, back);
        }
    }
    Some(offsets)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::heuristics::place_in_order;
    use crate::rules::Fit;

    /// The map against a plain array of labels, one per address, over random changes.
    #[test]
    fn the_label_map_matches_a_label_per_address() {
        let mut rng = crate::rng::Rng::new(5);
        for round in 0..30u64 {
            let width = 64 + (round * 37) % 3000;
            let mut plain = vec![FOREVER; width as usize + 64];
            let mut map = LabelMap::new();
            for _ in 0..2000 {
                let a = rng.next_u64() % width;
                let e = a + 1 + rng.next_u64() % (1 + (width - a) / (1 + rng.next_u64() % 8));
                let mut pieces = vec![(a, rng.next_u64() % 6)];
                let mut s = a;
                while rng.next_u64() % 3 == 0 {
                    s += 1 + rng.next_u64() % 4;
                    if s >= e {
                        break;
                    }
                    pieces.push((s, rng.next_u64() % 6));
                }
                map.set(a, e, &pieces);
                for (w, &(ps, l)) in pieces.iter().enumerate() {
                    let pe = pieces.get(w + 1).map_or(e, |p| p.0);
                    plain[ps as usize..pe as usize].iter_mut().for_each(|x| *x = l);
                }
                let (qa, qe) = (rng.next_u64() % width, 0);
                let qe = (qa + 1 + rng.next_u64() % 40).max(qe);
                let mut got = Vec::new();
                map.labels_over(qa, qe, &mut got);
                let mut want = vec![(qa, plain[qa as usize])];
                for x in qa + 1..qe {
                    if plain[x as usize] != plain[x as usize - 1] {
                        want.push((x, plain[x as usize]));
                    }
                }
                // The map may keep equal neighbours apart where they met across blocks.
                got.dedup_by(|b, a| a.1 == b.1);
                assert_eq!(got, want, "round {round}");
                let (size, need, al) = (1 + rng.next_u64() % 20, rng.next_u64() % 7, (rng.next_u64() % 3) as u8);
                let brute = (0..width + 64)
                    .filter(|x| x % (1 << al) == 0)
                    .find(|&x| (x..x + size).all(|y| y >= plain.len() as u64 || plain[y as usize] >= need))
                    .unwrap();
                assert_eq!(map.lowest(size, al, need), brute, "round {round}: {size} bytes at least {need}");
                // The tightest of the first few fits: the lowest, then one from each change of
                // label at least `need`, up to the first free for ever.
                let label = |y: u64| plain.get(y as usize).copied().unwrap_or(FOREVER);
                let least = |x: u64| (x..x + size).map(label).min().filter(|&l| l >= need);
                let choices = 1 + (rng.next_u64() % 6) as usize;
                let mut best = (least(brute).unwrap(), brute);
                let (mut found, mut last, mut last_at) = (1, best.0, brute);
                for x in brute + 1..width + 64 {
                    if last == FOREVER || found == choices {
                        break;
                    }
                    let at = x.next_multiple_of(1 << al);
                    if label(x) >= need && label(x) != label(x - 1) && at != last_at {
                        last_at = at;
                        if let Some(l) = least(at) {
                            (found, last) = (found + 1, l);
                            best = best.min((l, at));
                        }
                    }
                }
                assert_eq!(map.tightest(size, al, need, choices), best.1, "round {round}: {size} bytes at least {need}, {choices} places");
            }
        }
    }

    /// A place whose bytes would pass the end of the address space is no place, and offsets
    /// that alignment rounds to the same address count as one choice.
    #[test]
    fn tightest_at_the_edges() {
        let mut map = LabelMap::new();
        // Free until 9 up to near the top, taken there, then a short hole free until 7: the
        // tighter hole, but 200 bytes from there pass the end of the address space.
        map.set(0, u64::MAX - 100, &[(0, 9)]);
        map.set(u64::MAX - 100, u64::MAX - 50, &[(u64::MAX - 100, TAKEN)]);
        map.set(u64::MAX - 50, u64::MAX, &[(u64::MAX - 50, 7)]);
        assert_eq!(map.tightest(200, 0, 5, 16), 0, "the hole at the top is too short");
        // Labels changing every byte within one 8-byte unit round to one offset, one choice:
        // fits of 8 bytes aligned to 8 needing 4 are 0 (least label 9), 8 (8), 16 (6), 24 (5),
        // so the fourth choice is 24, not 16 again.
        let mut map = LabelMap::new();
        map.set(0, 8, &[(0, 9)]);
        map.set(8, 16, &[(8, 8), (9, 9), (10, 8), (11, 9)]);
        map.set(16, 24, &[(16, 6)]);
        map.set(24, 32, &[(24, 5)]);
        map.set(32, 64, &[(32, 7)]);
        assert_eq!(map.tightest(8, 3, 4, 3), 16);
        assert_eq!(map.tightest(8, 3, 4, 4), 24);
    }

    /// Exactly the offsets of the climbing sweep (and so of the general placer with the rocks
    /// first): rocks of random subsets and of dense plans, buffers of every shape, alignment.
    #[test]
    fn the_labelled_sweep_matches_first_fit_around() {
        let mut rng = crate::rng::Rng::new(43);
        for round in 0..60u64 {
            let n = 300 + (round as usize * 131) % 4000;
            let bs = if round % 2 == 0 {
                heaplab_gen::generate(heaplab_gen::Kind::Random, n, round).buffers
            } else {
                let span = 1 + n as u64 / (1 + round % 5);
                (0..n as u64)
                    .map(|i| {
                        let lo = rng.next_u64() % span;
                        let mut b = Buffer::new(i, lo, lo + 1 + rng.next_u64() % (1 + span / 4), 1 + rng.next_u64() % 5000);
                        b.align_log2 = if round % 4 == 1 { (rng.next_u64() % 5) as u8 } else { 0 };
                        b
                    })
                    .collect()
            };
            let ends = crate::online::ends_of(&bs);
            let rocks: Vec<u32> = match round % 3 {
                0 => crate::split::large_part(&bs, 0.2, 0.0..=1.0).unwrap_or_default(),
                1 => (0..bs.len() as u32).filter(|_| rng.next_u64() % 4 == 0).collect(),
                _ => (0..bs.len() as u32).filter(|_| rng.next_u64() % 2 == 0).collect(),
            };
            let sub: Vec<Buffer> = rocks.iter().map(|&r| bs[r as usize]).collect();
            let by_size = crate::rules::order(&sub, crate::rules::Order::Size);
            let rock_offsets = place_in_order(&sub, &by_size, Fit::First);
            let want = crate::online::first_fit_around(&bs, &ends, &rocks, &rock_offsets, None).unwrap();
            let got = first_fit_around_labelled(&bs, &ends, &rocks, &rock_offsets, 1, None, None).unwrap();
            assert!(heaplab_sweep::validate(&bs, &got).is_valid(), "round {round}");
            assert_eq!(got, want, "round {round}: {} rocks", rocks.len());
        }
        // With more places to choose from: valid, and the rocks kept where they were.
        for round in 0..20u64 {
            let bs = heaplab_gen::generate(heaplab_gen::Kind::Random, 2_000 + 500 * round as usize, round).buffers;
            let ends = crate::online::ends_of(&bs);
            let rocks = crate::split::large_part(&bs, 0.2, 0.0..=1.0).unwrap();
            let sub: Vec<Buffer> = rocks.iter().map(|&r| bs[r as usize]).collect();
            let rock_offsets = place_in_order(&sub, &crate::rules::order(&sub, crate::rules::Order::Size), Fit::First);
            let got = first_fit_around_labelled(&bs, &ends, &rocks, &rock_offsets, 1 + round as usize % 20, None, None).unwrap();
            let v = heaplab_sweep::validate(&bs, &got);
            assert!(v.is_valid(), "round {round}: {}", v.describe(&bs, &got));
            assert!(rocks.iter().zip(&rock_offsets).all(|(&r, &o)| got[r as usize] == o));
        }
        // A set flag (a cancelled plan) or a past deadline stops it.
        let bs = heaplab_gen::generate(heaplab_gen::Kind::Random, 20_000, 1).buffers;
        let (ends, rocks) = (crate::online::ends_of(&bs), crate::split::large_part(&bs, 0.2, 0.0..=1.0).unwrap());
        let sub: Vec<Buffer> = rocks.iter().map(|&r| bs[r as usize]).collect();
        let rock_offsets = crate::online::place_by_start(&sub, Fit::First);
        let set = std::sync::atomic::AtomicBool::new(true);
        assert_eq!(first_fit_around_labelled(&bs, &ends, &rocks, &rock_offsets, 1, None, Some(&set)), None);
        assert_eq!(first_fit_around_labelled(&bs, &ends, &rocks, &rock_offsets, 1, Some(std::time::Instant::now()), None), None);
    }
}
