//! The size split: where a few buffers of a component hold nearly all its bytes (log-uniform or
//! other heavy-tailed sizes), plan those alone and place the rest around them.
//!
//! # What it owns
//! [`large_part`], the rule that picks the large buffers, and [`plan_split`], the placement:
//! the large part planned as an instance of its own (by whatever `solve` the caller gives, the
//! driver's whole pipeline), the others by first fit in start order around it
//! ([`crate::free_until::first_fit_around_labelled`]: the offsets of the sweep of first fit
//! around the rocks, without its climb past every rock in a buffer's way).
//!
//! # Why
//! On random 10^6 buffers (sizes log-uniform in [1, 2^20)) about 1,000 buffers are live at an
//! instant, and one first-fit fill of the whole component takes 12–15 s, so the critical
//! windows get a round or two in a 30 s limit. The largest fifth holds 94% of the bytes with
//! about 200 buffers live at an instant: planned alone, a fill takes a second or two and the
//! windows chase its peaks round after round, as they do on random 10^5. The rest, small
//! against the gaps the large part leaves, costs a sweep. It mostly ends on top of the large
//! part where that is highest, which is why the rest must hold little of the area. Above
//! 2·10^6 buffers (random 10^7: 10^5 buffers live at an instant) the same holds of the
//! local windows and the improvement search, which meet a fifth as many buffers in a window
//! of the large part.

use heaplab_model::Buffer;
use std::time::Instant;

/// The large part of `buffers`: the indices (ascending) of the buffers larger than the
/// `⌊max_share · n⌋ + 1`-th largest size (so never part of a size class), when the others hold
/// a share of the area (size × lifetime length) within `rest_area`; `None` where there is no
/// such part (sizes of a few classes, as a network's tensors, or of one scale).
pub fn large_part(buffers: &[Buffer], max_share: f64, rest_area: std::ops::RangeInclusive<f64>) -> Option<Vec<u32>> {
    let k = (buffers.len() as f64 * max_share) as usize;
    if k == 0 || k >= buffers.len() {
        return None;
    }
    let mut sizes: Vec<u64> = buffers.iter().map(|b| b.size).collect();
    let (_, &mut cut, _) = sizes.select_nth_unstable_by(k, |a, b| b.cmp(a));
    drop(sizes);
    let area = |b: &Buffer| b.size as f64 * b.upper.saturating_sub(b.lower) as f64;
    let (mut all, mut rest) = (0.0, 0.0);
    let mut large = Vec::new();
    for (i, b) in buffers.iter().enumerate() {
        all += area(b);
        if b.size > cut {
            large.push(i as u32);
        } else {
            rest += area(b);
        }
    }
    (!large.is_empty() && all > 0.0 && rest_area.contains(&(rest / all))).then_some(large)
}

/// Places `buffers` with the large part `large` (from [`large_part`]) planned by `solve` (given
/// those buffers alone and an instant to finish by, `plan_until`; it returns a valid placement
/// of them, or `None` to stop there: the plan was cancelled) and the others in start order
/// around it, each at the tightest in time of its first `choices` fits
/// ([`crate::free_until::LabelMap::tightest`]; 1: first fit). `ends` gives the buffers in order of their end
/// ([`crate::online::ends_of`]), asked for once the large part is planned (so that a caller
/// short of memory can sort them then). `None` if `solve` stopped, or the sweep is still
/// running at `deadline` or when `cancel` is set.
pub fn plan_split(
    buffers: &[Buffer],
    ends: impl FnOnce() -> Vec<u32>,
    large: &[u32],
    choices: usize,
    plan_until: Instant,
    deadline: Instant,
    cancel: Option<&std::sync::atomic::AtomicBool>,
    solve: impl FnOnce(&[Buffer], Instant) -> Option<Vec<u64>>,
) -> Option<Vec<u64>> {
    let sub: Vec<Buffer> = large.iter().map(|&i| buffers[i as usize]).collect();
    let offsets = solve(&sub, plan_until)?;
    drop(sub);
    crate::free_until::first_fit_around_labelled(buffers, &ends(), large, &offsets, choices, Some(deadline), cancel)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The largest fifth of log-uniform sizes is taken (the rest holds about 6% of the area);
    /// equal sizes, or sizes of one scale, have no large part.
    #[test]
    fn the_large_part_is_a_minority_holding_most_of_the_area() {
        let inst = heaplab_gen::generate(heaplab_gen::Kind::Random, 20_000, 3);
        let large = large_part(&inst.buffers, 0.2, 0.0..=0.1).expect("log-uniform sizes split");
        assert!(large.len() <= 4_000 && large.len() > 3_000, "{}", large.len());
        assert!(large.windows(2).all(|w| w[0] < w[1]));
        let smallest_large = large.iter().map(|&i| inst.buffers[i as usize].size).min().unwrap();
        let others = (0..inst.buffers.len() as u32).filter(|i| large.binary_search(i).is_err());
        assert!(others.map(|i| inst.buffers[i as usize].size).all(|s| s < smallest_large));
        let equal: Vec<Buffer> = (0..1000).map(|i| Buffer::new(i, i, i + 10, 64)).collect();
        assert_eq!(large_part(&equal, 0.2, 0.0..=0.1), None);
        let one_scale: Vec<Buffer> = (0..1000).map(|i| Buffer::new(i, i, i + 10, 1000 + i % 7)).collect();
        assert_eq!(large_part(&one_scale, 0.2, 0.0..=0.1), None);
        assert_eq!(large_part(&inst.buffers, 0.2, 0.07..=0.1), None, "the rest holds about 6%");
    }

    /// Whatever the large part's placement, the split's is valid, keeps the large part where
    /// it was planned, and reaches at least that plan's top (the rest goes around it).
    #[test]
    fn the_split_keeps_the_large_plan_and_places_the_rest_validly() {
        for (n, seed, choices) in [(3_000, 1, 1), (12_000, 2, 16), (40_000, 5, 1), (40_000, 5, 16), (20_000, 7, 3)] {
            let bs = heaplab_gen::generate(heaplab_gen::Kind::Random, n, seed).buffers;
            let large = large_part(&bs, 0.2, 0.0..=0.1).unwrap();
            let ends = crate::online::ends_of(&bs);
            let far = Instant::now() + std::time::Duration::from_secs(600);
            let mut planned = Vec::new();
            let off = plan_split(&bs, || ends.clone(), &large, choices, far, far, None, |sub, _| {
                planned = crate::heuristics::first_fit_in_order(sub, &crate::rules::order(sub, crate::heuristics::Order::Size));
                Some(planned.clone())
            })
            .unwrap();
            let v = heaplab_sweep::validate(&bs, &off);
            assert!(v.is_valid(), "{}", v.describe(&bs, &off));
            for (k, &i) in large.iter().enumerate() {
                assert_eq!(off[i as usize], planned[k]);
            }
            let large_top = large.iter().zip(&planned).map(|(&i, &o)| o + bs[i as usize].size).max().unwrap();
            assert!(v.makespan >= large_top);
        }
        // A solve that stops (a cancelled plan) stops the split before the sweep.
        let bs = heaplab_gen::generate(heaplab_gen::Kind::Random, 3_000, 1).buffers;
        let (large, ends, now) = (large_part(&bs, 0.2, 0.0..=0.1).unwrap(), crate::online::ends_of(&bs), Instant::now());
        assert_eq!(plan_split(&bs, || ends.clone(), &large, 1, now, now + std::time::Duration::from_secs(60), None, |_, _| None), None);
    }
}
