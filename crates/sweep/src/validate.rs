//! The placement validator: proves a placement valid or names the buffers that clash.
//!
//! A sweep keeps the live buffers in an ordered map keyed by offset. Live buffers are pairwise
//! disjoint in address, so a new buffer overlaps some live one exactly when it overlaps the
//! one starting highest below its end (one look-up in that map): O(n log n) overall. A buffer found clashing is reported
//! and left out of the map, so the map stays disjoint and every later clash with a correctly
//! placed buffer is still found. Validity (no clash at all) is therefore decided exactly.

use crate::{prefetch_ahead, Sweep, PREFETCH_AHEAD};
use heaplab_model::Buffer;
use std::collections::BTreeMap;

/// At most this many clashing pairs are listed; the count goes on.
pub const MAX_LISTED: usize = 100;

/// Two buffers live at the same time whose address ranges overlap (indices into the instance).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Clash {
    /// The buffer already live.
    pub a: usize,
    /// The buffer placed on top of it.
    pub b: usize,
    /// First tick both are live.
    pub tick: u64,
}

/// The validator's verdict.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Validation {
    /// Highest `offset + size`.
    pub makespan: u64,
    /// Clashing pairs found (at most [`MAX_LISTED`]).
    pub clashes: Vec<Clash>,
    /// Number of buffers found clashing (each counted once, when it was placed).
    pub clashing_buffers: usize,
    /// Buffers whose offset violates their alignment.
    pub misaligned: Vec<usize>,
    /// Buffers whose `offset + size` overflows 64 bits.
    pub overflowing: Vec<usize>,
    /// Set when the offsets are not one per buffer: `(buffers, offsets)`.
    pub count_mismatch: Option<(usize, usize)>,
}

impl Validation {
    /// Whether the placement is valid.
    pub fn is_valid(&self) -> bool {
        self.clashing_buffers == 0 && self.misaligned.is_empty() && self.overflowing.is_empty() && self.count_mismatch.is_none()
    }

    /// A one-paragraph human explanation, naming buffers by their ids.
    pub fn describe(&self, buffers: &[Buffer], offsets: &[u64]) -> String {
        if let Some((n, m)) = self.count_mismatch {
            return format!("{n} buffers but {m} offsets");
        }
        if self.is_valid() {
            return format!("valid: {} buffers, makespan {}", buffers.len(), self.makespan);
        }
        let mut s = String::from("INVALID:");
        for &i in self.overflowing.iter().take(10) {
            s.push_str(&format!("\n  buffer {}: offset {} + size {} overflows 64 bits", buffers[i].id, offsets[i], buffers[i].size));
        }
        for &i in self.misaligned.iter().take(10) {
            s.push_str(&format!(
                "\n  buffer {}: offset {} is not a multiple of its alignment {}",
                buffers[i].id,
                offsets[i],
                buffers[i].alignment()
            ));
        }
        if self.misaligned.len() > 10 {
            s.push_str(&format!("\n  … {} misaligned buffers in all", self.misaligned.len()));
        }
        for c in &self.clashes {
            let (x, y) = (&buffers[c.a], &buffers[c.b]);
            s.push_str(&format!(
                "\n  buffers {} and {} clash at tick {}: [{}, {}) × [{}, {}) overlaps [{}, {}) × [{}, {})",
                x.id,
                y.id,
                c.tick,
                x.lower,
                x.upper,
                offsets[c.a],
                offsets[c.a] + x.size,
                y.lower,
                y.upper,
                offsets[c.b],
                offsets[c.b] + y.size
            ));
        }
        if self.clashing_buffers > self.clashes.len() {
            s.push_str(&format!("\n  … {} clashing buffers in all", self.clashing_buffers));
        }
        s
    }
}

/// Checks that no two buffers live at the same time overlap in `[offset, offset + size)`, that
/// every offset honours its alignment, and that nothing overflows.
pub fn validate(buffers: &[Buffer], offsets: &[u64]) -> Validation {
    let mut v = Validation::default();
    if buffers.len() != offsets.len() {
        v.count_mismatch = Some((buffers.len(), offsets.len()));
        return v;
    }
    for (i, (b, &o)) in buffers.iter().zip(offsets).enumerate() {
        match o.checked_add(b.size) {
            Some(end) => v.makespan = v.makespan.max(end),
            None => v.overflowing.push(i),
        }
        if o & (b.alignment() - 1) != 0 {
            v.misaligned.push(i);
        }
    }
    if !v.overflowing.is_empty() {
        return v;
    }
    let chunks = if buffers.len() >= PARALLEL_MIN_BUFFERS { rayon::current_num_threads().clamp(1, 16) } else { 1 };
    clashes(buffers, offsets, chunks, &mut v);
    v
}

/// Instances from this size on are validated in time slices on every core: from here a sweep
/// takes tenths of a second, which the slices divide; below it, milliseconds.
const PARALLEL_MIN_BUFFERS: usize = 1 << 16;

/// Finds the clashing buffers (alignment and overflow already checked) in `chunks` time slices
/// swept in parallel. A slice starts from the buffers live across its first tick, put in the
/// map in start order without reporting the overlaps among them: each such overlap began in
/// an earlier slice and was reported there. So the placement is found valid exactly when the
/// sweep in one piece finds it so; on an invalid one the count of clashing buffers may differ.
fn clashes(buffers: &[Buffer], offsets: &[u64], chunks: usize, v: &mut Validation) {
    use rayon::prelude::*;
    let sweep = Sweep::new(buffers);
    let n = buffers.len();
    // Slice k takes the allocations at ticks [cut[k], cut[k + 1]).
    let mut cut: Vec<u64> = (0..chunks).map(|k| if k == 0 { 0 } else { buffers[sweep.by_lower[k * n / chunks] as usize].lower }).collect();
    cut.dedup();
    let slices: Vec<(usize, Vec<Clash>)> = (0..cut.len())
        .into_par_iter()
        .map(|k| {
            let (from, to) = (cut[k], cut.get(k + 1).copied().unwrap_or(u64::MAX));
            let a0 = sweep.by_lower.partition_point(|&i| buffers[i as usize].lower < from);
            let a1 = sweep.by_lower.partition_point(|&i| buffers[i as usize].lower < to);
            let f0 = sweep.by_upper.partition_point(|&i| buffers[i as usize].upper <= from);
            // offset → (end, buffer index) of live, pairwise disjoint buffers.
            let mut live: BTreeMap<u64, (u64, u32)> = BTreeMap::new();
            for &i in sweep.by_lower[..a0].iter().filter(|&&i| buffers[i as usize].upper > from) {
                let (o, end) = (offsets[i as usize], offsets[i as usize] + buffers[i as usize].size);
                if live.range(..end).next_back().is_none_or(|(_, &(e, _))| e <= o) {
                    live.insert(o, (end, i));
                }
            }
            let (mut count, mut found) = (0usize, Vec::new());
            let (mut a, mut f) = (a0, f0);
            while a < a1 {
                // The buffers and offsets a few steps ahead, fetched early (see `prefetch_ahead`).
                prefetch_ahead(buffers, &sweep.by_lower, a + PREFETCH_AHEAD);
                prefetch_ahead(offsets, &sweep.by_lower, a + PREFETCH_AHEAD);
                prefetch_ahead(buffers, &sweep.by_upper, f + PREFETCH_AHEAD);
                prefetch_ahead(offsets, &sweep.by_upper, f + PREFETCH_AHEAD);
                let i = sweep.by_lower[a] as usize;
                // Frees first at equal ticks (half-open lifetimes).
                if let Some(&j) = sweep.by_upper.get(f).filter(|&&j| buffers[j as usize].upper <= buffers[i].lower) {
                    f += 1;
                    if let std::collections::btree_map::Entry::Occupied(e) = live.entry(offsets[j as usize]) {
                        if e.get().1 == j {
                            e.remove();
                        }
                    }
                    continue;
                }
                a += 1;
                let (o, end) = (offsets[i], offsets[i] + buffers[i].size);
                // One look-up: of the live buffers starting below `end`, only the highest can
                // overlap [o, end) if any does (one below it reaching past `o` would contain
                // its start, and live buffers are disjoint).
                if let Some((_, &(_, j))) = live.range(..end).next_back().filter(|(_, &(e, _))| e > o) {
                    count += 1;
                    if found.len() < MAX_LISTED {
                        found.push(Clash { a: j as usize, b: i, tick: buffers[i].lower });
                    }
                } else {
                    live.insert(o, (end, i as u32));
                }
            }
            (count, found)
        })
        .collect();
    for (count, found) in slices {
        v.clashing_buffers += count;
        let room = MAX_LISTED - v.clashes.len();
        v.clashes.extend(found.into_iter().take(room));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(id: u64, lower: u64, upper: u64, size: u64) -> Buffer {
        Buffer::new(id, lower, upper, size)
    }

    fn brute_valid(bs: &[Buffer], off: &[u64]) -> bool {
        for i in 0..bs.len() {
            if !off[i].is_multiple_of(bs[i].alignment()) {
                return false;
            }
            for j in 0..i {
                let addr = off[i] < off[j] + bs[j].size && off[j] < off[i] + bs[i].size;
                if bs[i].conflicts(&bs[j]) && addr {
                    return false;
                }
            }
        }
        true
    }

    #[test]
    fn finds_overlap_and_names_it() {
        let bs = [b(10, 0, 5, 4), b(11, 2, 8, 4)];
        let v = validate(&bs, &[0, 3]);
        assert!(!v.is_valid());
        assert_eq!(v.clashes, vec![Clash { a: 0, b: 1, tick: 2 }]);
        assert!(v.describe(&bs, &[0, 3]).contains("buffers 10 and 11 clash"));
        assert!(validate(&bs, &[0, 4]).is_valid());
    }

    #[test]
    fn same_offset_clash_and_time_reuse() {
        let bs = [b(0, 0, 5, 4), b(1, 0, 5, 4), b(2, 5, 6, 4)];
        assert!(!validate(&bs, &[0, 0, 0]).is_valid());
        assert!(validate(&bs, &[0, 4, 0]).is_valid());
    }

    #[test]
    fn alignment_overflow_and_counts() {
        let mut x = b(0, 0, 1, 8);
        x.align_log2 = 4;
        assert_eq!(validate(&[x], &[8]).misaligned, vec![0]);
        assert!(validate(&[x], &[16]).is_valid());
        assert!(!validate(&[b(0, 0, 1, 8)], &[u64::MAX - 3]).is_valid());
        assert!(!validate(&[b(0, 0, 1, 8)], &[]).is_valid());
    }

    #[test]
    fn agrees_with_brute_force_on_random_placements() {
        let mut s = 0x9e37_79b9_7f4a_7c15u64;
        let mut rnd = |m: u64| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s % m
        };
        let (mut valid, mut invalid) = (0, 0);
        for round in 0..3000 {
            let n = 1 + (round % 12) as usize;
            let bs: Vec<Buffer> = (0..n)
                .map(|i| {
                    let lo = rnd(12);
                    let mut x = b(i as u64, lo, lo + 1 + rnd(6), 1 + rnd(8));
                    x.align_log2 = (rnd(4) == 0) as u8;
                    x
                })
                .collect();
            let off: Vec<u64> = (0..n).map(|_| rnd(24)).collect();
            let expect = brute_valid(&bs, &off);
            let whole = validate(&bs, &off);
            assert_eq!(whole.is_valid(), expect, "{bs:?} {off:?}");
            // In time slices: the same verdict, and on a valid placement the same everything.
            for chunks in [2, 3, 5] {
                let mut w = Validation { makespan: whole.makespan, misaligned: whole.misaligned.clone(), ..Default::default() };
                clashes(&bs, &off, chunks, &mut w);
                assert_eq!(w.is_valid(), expect, "{chunks} slices: {bs:?} {off:?}");
                if expect {
                    assert_eq!(w, whole);
                }
            }
            if expect {
                valid += 1
            } else {
                invalid += 1
            }
        }
        assert!(valid > 100 && invalid > 100, "both outcomes exercised: {valid} {invalid}");
    }
}
