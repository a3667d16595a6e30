//! An access profile brought onto a trace's blocks. The profile comes from a separate run (under
//! valgrind), so its blocks are not the trace's: they are aligned by their sequence of requested
//! sizes ([`align`]), which tolerates a few allocations present in one run and not the other,
//! and only aligned blocks lend their counts and edges to the trace's blocks ([`Usage`]).

use heaplab_access::{AccessProfile, Edge};

/// Blocks of each sequence an alignment window spans.
pub const WINDOW: usize = 64;

/// Aligns two size sequences: `result[i]` is the index in `profile` of the block that trace
/// block `i` stands for, `None` when it has none. Equal sizes pair off in order. At a
/// difference, the next [`WINDOW`] blocks of each sequence are aligned exactly (the longest
/// common subsequence of their sizes, by dynamic programming), and the first half of that
/// alignment is kept: the second half may be cut short by the window's end, and is aligned
/// again from where the first ends. Insertions and deletions in either sequence, a few or a
/// few dozen together, and several close to one another, are all handled; each window costs
/// O(WINDOW²) and moves on by at least WINDOW / 2 blocks of one sequence, so the whole is
/// linear in the lengths.
pub fn align(trace: &[u64], profile: &[u64]) -> Vec<Option<usize>> {
    let (n, m) = (trace.len(), profile.len());
    let mut out = vec![None; n];
    // lcs[x * (WINDOW + 1) + y]: common subsequence of the windows' suffixes from x and y.
    let stride = WINDOW + 1;
    let mut lcs = vec![0u16; stride * stride];
    let (mut i, mut j) = (0, 0);
    while i < n && j < m {
        if trace[i] == profile[j] {
            out[i] = Some(j);
            i += 1;
            j += 1;
            continue;
        }
        let (w1, w2) = (WINDOW.min(n - i), WINDOW.min(m - j));
        for x in (0..=w1).rev() {
            for y in (0..=w2).rev() {
                lcs[x * stride + y] = if x == w1 || y == w2 {
                    0
                } else if trace[i + x] == profile[j + y] {
                    1 + lcs[(x + 1) * stride + y + 1]
                } else {
                    lcs[(x + 1) * stride + y].max(lcs[x * stride + y + 1])
                };
            }
        }
        // Keep the first half, or all of it where a sequence ends inside the window.
        let hx = if i + w1 == n { w1 } else { w1 / 2 };
        let hy = if j + w2 == m { w2 } else { w2 / 2 };
        let (mut x, mut y) = (0, 0);
        while x < hx && y < hy {
            let here = lcs[x * stride + y];
            if trace[i + x] == profile[j + y] && here == 1 + lcs[(x + 1) * stride + y + 1] {
                out[i + x] = Some(j + y);
                x += 1;
                y += 1;
            } else if lcs[(x + 1) * stride + y] == here {
                x += 1;
            } else {
                y += 1;
            }
        }
        i += x;
        j += y;
    }
    out
}

/// A profile's figures on a trace's blocks (indices are trace block ids).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Usage {
    /// Loads and stores per trace block (0 for a block no profile block aligned with).
    pub accesses: Vec<u64>,
    /// Co-access edges between aligned blocks: `to` was used within the affinity distance
    /// after `from`.
    pub coaccess: Vec<Edge>,
    /// Friend edges between aligned blocks: a pointer to `to` was stored in `from`.
    pub friends: Vec<Edge>,
    /// Trace blocks that have a profile block.
    pub aligned: u64,
    /// Blocks in the profile.
    pub profile_blocks: u64,
}

impl Usage {
    /// Share of the trace's blocks that found a profile block (1 for an empty trace).
    pub fn aligned_share(&self) -> f64 {
        if self.accesses.is_empty() {
            1.0
        } else {
            self.aligned as f64 / self.accesses.len() as f64
        }
    }
}

/// Brings `profile` onto the trace blocks whose requested sizes are `sizes` (by id).
pub fn usage(sizes: &[u64], profile: &AccessProfile) -> Usage {
    let theirs: Vec<u64> = profile.blocks.iter().map(|b| b.size).collect();
    let map = align(sizes, &theirs);
    let mut back = vec![u64::MAX; theirs.len()];
    let mut accesses = vec![0u64; sizes.len()];
    let mut aligned = 0;
    for (i, j) in map.iter().enumerate() {
        if let Some(j) = *j {
            back[j] = i as u64;
            let b = &profile.blocks[j];
            accesses[i] = b.reads.saturating_add(b.writes);
            aligned += 1;
        }
    }
    let carry = |edges: &[Edge]| -> Vec<Edge> {
        edges
            .iter()
            .filter_map(|e| {
                let (from, to) = (*back.get(e.from as usize)?, *back.get(e.to as usize)?);
                (from != u64::MAX && to != u64::MAX && from != to && e.weight > 0).then_some(Edge { from, to, weight: e.weight })
            })
            .collect()
    };
    Usage { coaccess: carry(&profile.coaccess), friends: carry(&profile.friends), accesses, aligned, profile_blocks: theirs.len() as u64 }
}

#[cfg(test)]
mod tests {
    use super::*;
    use heaplab_access::AccessBlock;
    use heaplab_rng::Rng;

    /// Pairs an alignment found, as (trace index, profile index).
    fn pairs(map: &[Option<usize>]) -> Vec<(usize, usize)> {
        map.iter().enumerate().filter_map(|(i, j)| j.map(|j| (i, j))).collect()
    }

    #[test]
    fn identical_sequences_align_one_to_one() {
        let s = [8, 16, 8, 24, 1000, 0];
        assert_eq!(pairs(&align(&s, &s)), (0..6).map(|i| (i, i)).collect::<Vec<_>>());
        assert!(align(&[], &s).is_empty());
        assert_eq!(align(&s, &[]), vec![None; 6]);
    }

    #[test]
    fn extra_and_missing_blocks_at_either_side_and_inside() {
        let base: Vec<u64> = (0..400).map(|k| 16 + (k * 7919 % 97) * 8).collect();
        // The profile has 5 extra blocks at the start, misses 5 inside (two of them close to the
        // start and to each other, within a confirming run) and has 2 more at the end.
        let gone = [3, 6, 100, 101, 250];
        let mut prof = vec![1, 2, 3, 4, 5];
        prof.extend(base.iter().enumerate().filter(|(k, _)| !gone.contains(k)).map(|(_, &s)| s));
        prof.extend([9999, 7777]);
        let map = align(&base, &prof);
        let found = pairs(&map);
        assert_eq!(found.len(), 395, "every block present in both is aligned");
        for (i, j) in found {
            assert_eq!(base[i], prof[j]);
            let expect = 5 + i - gone.iter().filter(|&&d| d < i).count();
            assert_eq!(j, expect, "block {i}");
        }
        // The trace has blocks the profile lacks at its start and inside.
        let mut trace = vec![3, 3];
        trace.extend(&base[..200]);
        trace.push(12345);
        trace.extend(&base[200..]);
        let map = align(&trace, &base);
        assert_eq!(pairs(&map).len(), 400);
        assert!(map[0].is_none() && map[1].is_none() && map[202].is_none());
        assert_eq!(map[203], Some(200));
        // Dozens together: 20 blocks inserted in the trace, 30 missing from it further on.
        let mut trace: Vec<u64> = base[..100].to_vec();
        trace.extend((0..20).map(|k| 5 + k));
        trace.extend(&base[100..250]);
        trace.extend(&base[280..]);
        let found = pairs(&align(&trace, &base));
        assert_eq!(found.len(), 370);
        assert!(found.iter().all(|&(i, j)| trace[i] == base[j] && (j < 100 && i == j || (100..250).contains(&j) && i == j + 20 || j >= 280 && i == j - 10)));
    }

    #[test]
    fn random_edits_keep_most_blocks_aligned_and_pairs_in_order() {
        let mut r = Rng::new(7);
        for round in 0..50 {
            let n = 200 + r.below(800) as usize;
            let base: Vec<u64> = (0..n).map(|_| [16, 24, 32, 48, 64, 100, 4096][r.below(7) as usize] + r.below(3)).collect();
            let mut prof = Vec::new();
            let mut kept = 0;
            for &s in &base {
                match r.below(100) {
                    0 => {}
                    1 => {
                        prof.push(s);
                        prof.push(77777);
                        kept += 1;
                    }
                    _ => {
                        prof.push(s);
                        kept += 1;
                    }
                }
            }
            let map = align(&base, &prof);
            let found = pairs(&map);
            assert!(found.windows(2).all(|w| w[0].1 < w[1].1), "round {round}: order kept");
            assert!(found.iter().all(|&(i, j)| base[i] == prof[j]));
            assert!(found.len() * 100 >= kept * 95, "round {round}: {} of {kept}", found.len());
        }
    }

    #[test]
    fn unrelated_sequences_finish_in_linear_time_and_align_little() {
        let a: Vec<u64> = (0..20_000).map(|k| k * 2).collect();
        let b: Vec<u64> = (0..20_000).map(|k| k * 2 + 1).collect();
        assert!(pairs(&align(&a, &b)).is_empty());
    }

    #[test]
    fn usage_carries_counts_and_edges_of_aligned_blocks_only() {
        let block = |size, reads| AccessBlock { size, reads, writes: 1, ..AccessBlock::default() };
        // Profile: an extra block first (index 0), then the trace's blocks 0..3.
        let profile = AccessProfile {
            blocks: vec![block(5, 50), block(16, 10), block(32, 20), block(48, 30)],
            coaccess: vec![Edge { from: 1, to: 2, weight: 4 }, Edge { from: 0, to: 3, weight: 9 }, Edge { from: 3, to: 3, weight: 1 }],
            friends: vec![Edge { from: 3, to: 1, weight: 1 }],
            ..AccessProfile::default()
        };
        let u = usage(&[16, 32, 48], &profile);
        assert_eq!(u.accesses, vec![11, 21, 31]);
        assert_eq!(u.coaccess, vec![Edge { from: 0, to: 1, weight: 4 }]);
        assert_eq!(u.friends, vec![Edge { from: 2, to: 0, weight: 1 }]);
        assert_eq!((u.aligned, u.profile_blocks), (3, 4));
        assert_eq!(u.aligned_share(), 1.0);
    }
}
