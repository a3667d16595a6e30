//! Instance statistics for `heaplab stats`: counts, bounds and log2 histograms of sizes and
//! lifetimes, from one pass of sorting plus sweeps.

use crate::{components, conflict_count, max_live, max_load};
use heaplab_model::Buffer;

/// One histogram bucket: values in `[lo, hi]` and how many buffers fall there.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bucket {
    /// Smallest value in the bucket.
    pub lo: u64,
    /// Largest value in the bucket.
    pub hi: u64,
    /// Buffers in the bucket.
    pub count: u64,
}

/// Summary of an instance.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stats {
    /// Buffers.
    pub n: usize,
    /// Maximum load (lower bound on makespan).
    pub max_load: u64,
    /// Most buffers live at once.
    pub max_live: usize,
    /// Conflicting pairs.
    pub conflicts: u64,
    /// Independent components (time ranges planned separately).
    pub components: usize,
    /// Buffers in the largest component.
    pub largest_component: usize,
    /// Sum of sizes.
    pub total_size: u64,
    /// Earliest start and latest end.
    pub span: (u64, u64),
    /// Smallest and largest size.
    pub size_range: (u64, u64),
    /// Buffers with an alignment above 1.
    pub aligned: usize,
    /// Sizes in power-of-two buckets (empty buckets omitted).
    pub size_hist: Vec<Bucket>,
    /// Lifetime lengths in power-of-two buckets (empty buckets omitted).
    pub lifetime_hist: Vec<Bucket>,
}

fn log2_hist(values: impl Iterator<Item = u64>) -> Vec<Bucket> {
    let mut counts = [0u64; 65];
    for v in values {
        counts[64 - v.leading_zeros() as usize] += 1;
    }
    (0..65)
        .filter(|&k| counts[k] > 0)
        .map(|k| {
            let (lo, hi) = if k == 0 { (0, 0) } else { (1u64 << (k - 1), if k == 64 { u64::MAX } else { (1u64 << k) - 1 }) };
            Bucket { lo, hi, count: counts[k] }
        })
        .collect()
}

/// Computes the statistics of an instance.
pub fn stats(buffers: &[Buffer]) -> Stats {
    let comps = components(buffers);
    Stats {
        n: buffers.len(),
        max_load: max_load(buffers),
        max_live: max_live(buffers),
        conflicts: conflict_count(buffers),
        components: comps.len(),
        largest_component: comps.iter().map(|c| c.buffers.len()).max().unwrap_or(0),
        total_size: buffers.iter().map(|b| b.size).sum(),
        span: (
            buffers.iter().map(|b| b.lower).min().unwrap_or(0),
            buffers.iter().map(|b| b.upper).max().unwrap_or(0),
        ),
        size_range: (
            buffers.iter().map(|b| b.size).min().unwrap_or(0),
            buffers.iter().map(|b| b.size).max().unwrap_or(0),
        ),
        aligned: buffers.iter().filter(|b| b.align_log2 > 0).count(),
        size_hist: log2_hist(buffers.iter().map(|b| b.size)),
        lifetime_hist: log2_hist(buffers.iter().map(|b| b.length())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_buckets_are_powers_of_two() {
        let bs: Vec<Buffer> = [1u64, 2, 3, 4, 1000].iter().enumerate().map(|(i, &s)| Buffer::new(i as u64, 0, s, s)).collect();
        let st = stats(&bs);
        assert_eq!(st.size_hist.iter().map(|b| (b.lo, b.count)).collect::<Vec<_>>(), vec![(1, 1), (2, 2), (4, 1), (512, 1)]);
        assert_eq!(st.max_load, 1010);
        assert_eq!(st.conflicts, 10);
        assert_eq!(st.components, 1);
        assert_eq!(st.total_size, 1010);
    }
}
