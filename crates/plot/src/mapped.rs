//! The address axis of an allocator's placement (the jobs `heaplab replay` records): blocks at
//! real addresses, in memory mappings that may lie terabytes apart. Drawn to one linear scale
//! such a picture would be empty space with a few hairlines in it, so this module lays the axis
//! out in bands:
//!
//! - every mapping holding blocks is its own band, in address order, separated from the next
//!   by a thin strip with a line;
//! - inside a mapping, a range no block ever used (over the whole run) is cut out when it is at
//!   least [`MIN_CUT`] and at least 1/16 of the addresses drawn: it becomes a thin hatched strip
//!   labelled with its size. Smaller gaps stay to scale, since they are what fragmentation is;
//! - each band (a mapping, or its part between cut-outs) gets height in proportion to the
//!   addresses it spans, but at least a tenth of the picture (less with many bands), so a
//!   100 KiB heap beside a few mmap'd megabytes stays readable. Inside a band the scale is
//!   linear; its ticks count bytes up from a page-aligned base printed on the band, so each band
//!   reads on its own scale. The caption says when bands are not to one scale.

use heaplab_model::Buffer;

/// Unused ranges smaller than this are never cut out of the picture: gaps of a few pages are
/// the external fragmentation a reader is looking for.
pub const MIN_CUT: u64 = 64 << 10;
/// Band bases are rounded down to this, so tick labels count from a page boundary.
const BASE_ALIGN: u64 = 4096;

/// A memory mapping, as its band is labelled.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Region {
    /// Its name, e.g. `[heap]` or `anonymous` (empty: unnamed).
    pub name: String,
}

/// Blocks at real addresses, each in one region: an allocator's placement.
#[derive(Clone, Copy, Debug)]
pub struct Mapped<'a> {
    /// Lifetimes (`lower`, `upper`) and extents (`size`) of the blocks; `id` appears in the
    /// SVG's tooltips.
    pub blocks: &'a [Buffer],
    /// The address of each block.
    pub addresses: &'a [u64],
    /// The region (index into `regions`) of each block.
    pub region: &'a [u32],
    /// The regions.
    pub regions: &'a [Region],
}

/// A stretch of one region's addresses drawn to scale: real `[lo, hi)` at drawn offset `y`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Segment {
    pub region: u32,
    pub lo: u64,
    pub hi: u64,
    pub y: u64,
    /// `lo` rounded down to a page: ticks count from here, and the band label prints it.
    pub base: u64,
}

/// What lies between two segments: a cut-out unused range of one region (`unused` bytes), or
/// the boundary between two regions.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Strip {
    pub y0: u64,
    pub y1: u64,
    pub unused: Option<u64>,
}

/// The drawn axis: segments and strips in drawing order (bottom up), the drawn offset of every
/// block, how drawn offsets map to the height of the plot, and the figures the caption gives.
///
/// Drawn offsets are bytes within a segment; a strip takes one unit between two segments. The
/// plot's height is shared out by `pieces`: `(lo, hi, f0, f1)` maps drawn offsets `[lo, hi]`
/// linearly onto the fractions `[f0, f1]` of the height, bottom up, one piece per segment and
/// strip, contiguous, so the map is continuous and increasing.
#[derive(Clone, Debug, Default)]
pub(crate) struct Layout {
    pub segments: Vec<Segment>,
    pub strips: Vec<Strip>,
    pub offsets: Vec<u64>,
    pub pieces: Vec<(u64, u64, f64, f64)>,
    /// Drawn height, strips included.
    pub total: u64,
    /// Unused ranges at least this large were cut out.
    pub cut_from: u64,
    /// Bytes of address space cut out.
    pub cut: u128,
    /// Regions holding blocks.
    pub regions: usize,
    /// Whether some band was given more height than its share (bands not to one scale).
    pub rescaled: bool,
}

/// Fraction of the height for each strip (at most a quarter for all of them together).
const STRIP_SHARE: f64 = 0.025;
/// Least fraction of the height for a band (less when there are many).
const BAND_FLOOR: f64 = 0.10;
/// Fraction left free above the top band, so its outlines show.
const HEADROOM: f64 = 0.01;

/// Lays out the address axis of `m` (see the module documentation).
pub(crate) fn layout(m: &Mapped) -> Layout {
    let n = m.blocks.len().min(m.addresses.len()).min(m.region.len());
    let extent = |i: usize| (m.addresses[i], m.addresses[i].saturating_add(m.blocks[i].size.max(1)));
    // Regions in the order of their lowest block, so bands rise with addresses.
    let nreg = m.region[..n].iter().map(|&r| r as usize + 1).max().unwrap_or(0);
    let mut lowest = vec![u64::MAX; nreg];
    for i in 0..n {
        let r = m.region[i] as usize;
        lowest[r] = lowest[r].min(m.addresses[i]);
    }
    let key = |r: u32| (lowest[r as usize], r);
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_unstable_by_key(|&i| (key(m.region[i]), m.addresses[i]));

    // The ranges blocks ever used, per region: merged intervals.
    let mut runs: Vec<(u32, u64, u64)> = Vec::new();
    for &i in &order {
        let (r, (a, b)) = (m.region[i], extent(i));
        match runs.last_mut() {
            Some(last) if last.0 == r && a <= last.2 => last.2 = last.2.max(b),
            _ => runs.push((r, a, b)),
        }
    }
    let used: u128 = runs.iter().map(|&(_, a, b)| (b - a) as u128).sum();
    // A power of two, so the caption can say "128 KiB" rather than "127.3 KiB".
    let cut_from = MIN_CUT.max((used / 16).min(1 << 62) as u64).next_power_of_two();

    // Segments: runs of a region joined across gaps too small to cut.
    let mut segs: Vec<Segment> = Vec::new();
    let mut cut = 0u128;
    for (r, a, b) in runs {
        match segs.last_mut() {
            Some(s) if s.region == r && a - s.hi < cut_from => s.hi = b,
            Some(s) if s.region == r => {
                cut += (a - s.hi) as u128;
                segs.push(Segment { region: r, lo: a, hi: b, y: 0, base: 0 });
            }
            _ => segs.push(Segment { region: r, lo: a, hi: b, y: 0, base: 0 }),
        }
    }
    let nstrips = segs.len().saturating_sub(1);
    let mut strips = Vec::with_capacity(nstrips);
    let mut y = 0u64;
    for k in 0..segs.len() {
        if k > 0 {
            let (p, s) = (&segs[k - 1], &segs[k]);
            let unused = (p.region == s.region).then(|| s.lo - p.hi);
            strips.push(Strip { y0: y, y1: y.saturating_add(1), unused });
            y = y.saturating_add(1);
        }
        let s = &mut segs[k];
        s.y = y;
        s.base = s.lo - s.lo % BASE_ALIGN;
        y = y.saturating_add(s.hi - s.lo);
    }
    // Shares of the height: strips a fixed share each, bands by span with a floor.
    let strip_share = if nstrips == 0 { 0.0 } else { STRIP_SHARE.min(0.25 / nstrips as f64) };
    let room = 1.0 - HEADROOM - strip_share * nstrips as f64;
    let drawn: f64 = segs.iter().map(|s| (s.hi - s.lo) as f64).sum::<f64>().max(1.0);
    let floor = BAND_FLOOR.min(0.5 / segs.len().max(1) as f64);
    let weights: Vec<f64> = segs.iter().map(|s| ((s.hi - s.lo) as f64 / drawn).max(floor)).collect();
    let wsum: f64 = weights.iter().sum::<f64>().max(f64::MIN_POSITIVE);
    let rescaled = segs.iter().zip(&weights).any(|(s, &w)| w > 1.5 * (s.hi - s.lo) as f64 / drawn);
    let mut pieces = Vec::with_capacity(segs.len() + nstrips);
    let mut f = 0.0;
    for (k, s) in segs.iter().enumerate() {
        if k > 0 {
            let st = &strips[k - 1];
            pieces.push((st.y0, st.y1, f, f + strip_share));
            f += strip_share;
        }
        let share = room * weights[k] / wsum;
        pieces.push((s.y, s.y.saturating_add(s.hi - s.lo), f, f + share));
        f += share;
    }
    // Each block's drawn offset, from its segment (segments are in the blocks' sort order).
    let mut offsets = vec![0u64; m.blocks.len()];
    let mut k = 0;
    for &i in &order {
        let (r, a) = (m.region[i], m.addresses[i]);
        while k + 1 < segs.len() && (key(segs[k].region), segs[k].hi) <= (key(r), a) {
            k += 1;
        }
        let s = &segs[k];
        offsets[i] = s.y.saturating_add(a - s.lo);
    }
    let regions = lowest.iter().filter(|&&l| l != u64::MAX).count();
    Layout { segments: segs, strips, offsets, pieces, total: y, cut_from, cut, regions, rescaled }
}

impl Layout {
    /// The fraction of the plot's height (0 bottom, 1 top) at drawn offset `v`.
    pub(crate) fn frac(&self, v: f64) -> f64 {
        let k = self.pieces.partition_point(|p| (p.1 as f64) < v).min(self.pieces.len().saturating_sub(1));
        match self.pieces.get(k) {
            Some(&(lo, hi, f0, f1)) if hi > lo => f0 + (v - lo as f64) / (hi - lo) as f64 * (f1 - f0),
            Some(&(_, _, f0, _)) => f0,
            None => v / (self.total.max(1) as f64),
        }
    }

    /// Ticks for a plot area `ph` pixels tall at text scale `s`: per segment, multiples of a
    /// power of two counted from the segment's base, at least four text heights apart on that
    /// segment's own scale; labels read "+64 KiB" (bytes above the base printed on the band).
    /// Ticks closer than a label's height to the previous one are left out.
    pub(crate) fn ticks(&self, ph: i64, s: i64) -> Vec<(f64, String)> {
        let ph = ph.max(1) as f64;
        let mut out: Vec<(f64, String)> = Vec::new();
        let mut last_px = f64::NEG_INFINITY;
        for seg in &self.segments {
            let len = (seg.hi - seg.lo) as f64;
            let (f0, f1) = (self.frac(seg.y as f64), self.frac(seg.y as f64 + len));
            let bytes_per_px = len / ((f1 - f0) * ph).max(1e-9);
            let mut step = 1u64;
            while (step as f64) < (7 * s * 4) as f64 * bytes_per_px && step < 1 << 62 {
                step *= 2;
            }
            // From the multiple of `step` at or below the segment's start when that is close
            // (a page-aligned base a few bytes below the first block still gets its "+0"),
            // drawn at the segment's bottom edge; else from the next multiple.
            let start = seg.lo - seg.base;
            let below = start / step * step;
            let mut v = if start - below <= step / 4 { below } else { below.saturating_add(step) };
            while v <= seg.hi - seg.base {
                let y = seg.y.saturating_add(v.saturating_sub(start)) as f64;
                let px = self.frac(y) * ph;
                if px - last_px >= (7 * s + 5) as f64 {
                    out.push((y, format!("+{}", crate::scale::bytes(v as f64))));
                    last_px = px;
                }
                match v.checked_add(step) {
                    Some(next) => v = next,
                    None => break,
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mapped<'a>(blocks: &'a [Buffer], addresses: &'a [u64], region: &'a [u32], regions: &'a [Region]) -> Mapped<'a> {
        Mapped { blocks, addresses, region, regions }
    }

    #[test]
    fn far_apart_mappings_become_adjacent_bands() {
        let b = vec![Buffer::new(0, 0, 2, 100), Buffer::new(1, 1, 3, 4000), Buffer::new(2, 0, 3, 16)];
        let addr = [0x5555_0000_1000, 0x5555_0000_1080, 0x7fff_0000_0010];
        let regions = vec![Region { name: "[heap]".into() }, Region { name: "anonymous".into() }];
        // Regions listed out of address order: the bands still rise with addresses.
        let l = layout(&mapped(&b, &addr, &[0, 0, 1], &regions));
        assert_eq!(l.segments.len(), 2);
        assert_eq!(l.strips.len(), 1);
        assert_eq!(l.strips[0].unused, None, "a boundary between mappings");
        assert_eq!(l.offsets[0], 0);
        assert_eq!(l.offsets[1], 0x80, "to scale inside a band");
        assert_eq!(l.offsets[2], l.strips[0].y1);
        assert_eq!(l.segments[0].base, 0x5555_0000_1000);
        assert_eq!(l.total, l.strips[0].y1 + 16);
        assert_eq!(l.regions, 2);
        // The 16-byte band gets its floor of the height, not 16/166 of it.
        assert!(l.rescaled);
        let top = l.frac(l.total as f64);
        assert!((top - (1.0 - HEADROOM)).abs() < 1e-9, "{top}");
        assert!(l.frac(l.offsets[2] as f64 + 16.0) - l.frac(l.offsets[2] as f64) >= 0.08);
        // Continuous and increasing across the strip.
        let f: Vec<f64> = (0..=l.total).map(|v| l.frac(v as f64)).collect();
        assert!(f.windows(2).all(|w| w[1] > w[0]), "{f:?}");
    }

    #[test]
    fn large_unused_ranges_inside_a_mapping_are_cut_small_ones_kept() {
        let b = vec![Buffer::new(0, 0, 2, 4096); 3];
        // A 12 KiB gap (kept: below MIN_CUT), then a 1 GiB one (cut).
        let addr = [0x1000_0000, 0x1000_4000, 0x5000_0000];
        let l = layout(&mapped(&b, &addr, &[0, 0, 0], &[Region::default()]));
        assert_eq!(l.segments.len(), 2);
        assert_eq!(l.offsets[1] - l.offsets[0], 0x4000);
        assert_eq!(l.strips[0].unused, Some(0x5000_0000 - 0x1000_5000));
        assert_eq!(l.cut, (0x5000_0000 - 0x1000_5000) as u128);
        assert_eq!(l.total, 0x5000 + 1 + 0x1000, "the cut range takes one unit, not a gigabyte");
        assert!(!l.rescaled, "two bands of 20 KiB and 4 KiB: the smaller one is above the floor");
        let t = l.ticks(400, 1);
        assert_eq!(t[0].1, "+0 B");
        assert!(t.windows(2).all(|w| w[1].0 > w[0].0), "{t:?}");
    }

    #[test]
    fn empty_and_extreme_inputs_do_not_panic() {
        let l = layout(&mapped(&[], &[], &[], &[]));
        assert_eq!((l.total, l.segments.len()), (0, 0));
        assert!(l.ticks(100, 1).is_empty());
        assert_eq!(l.frac(0.0), 0.0);
        let b = vec![Buffer::new(0, 0, 1, u64::MAX), Buffer::new(1, 0, 1, 1)];
        let l = layout(&mapped(&b, &[u64::MAX - 1, 0], &[0, 1], &[Region::default(), Region::default()]));
        assert_eq!(l.segments.len(), 2);
        let _ = l.ticks(500, 2);
    }
}
