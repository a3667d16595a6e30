//! Improvement search for placements too large for the exact search: a large-neighbourhood
//! search that re-packs, exactly, the *top slab* around one peak at a time.
//!
//! The makespan `M` is decided by the buffers whose top reaches it. Pick one (`b*`) and a slab
//! thickness `Δ`; the buffers whose top is above `h = M − Δ` and that are connected to `b*`
//! through overlapping lifetimes form the *free set* `F`, spanning a time window `W`. Every other
//! buffer alive in `W` has its top at or below `h` (had it poked above `h`, it would overlap a
//! member of `F` and be in it), so seen from `F` the rest of the placement is a skyline: each
//! free buffer has a *floor*, the highest top of the fixed buffers under its lifetime. Re-packing
//! `F` above those floors is exactly the problem the exact search solves
//! ([`crate::exact::Problem::with_floors`]), so each move asks it for a packing of `F` whose
//! tops all stay below `M`. A success lowers this peak; when no buffer reaches `M` any more, the
//! makespan has dropped. A failure (refuted, or out of nodes) widens the slab next time, so the
//! neighbourhoods grow where they must.
//!
//! Everything is local: a move costs a scan for the buffers alive in `W` plus a search over a
//! few hundred buffers, so the search scales to millions of buffers; moves never make the
//! placement worse, and the result is validated by the caller like every other placement.

use crate::exact::{self, Decision, Limits, Strategy};
use crate::rng::Rng;
use heaplab_model::Buffer;
use std::collections::{BTreeSet, HashMap};
use std::time::Instant;

/// Limits and knobs of [`improve`].
#[derive(Clone, Debug)]
pub struct ImproveParams {
    /// Stop at this instant.
    pub deadline: Instant,
    /// Seed for the choice of peaks and search orders.
    pub seed: u64,
    /// A proven lower bound: the search stops when the makespan reaches it.
    pub target: u64,
    /// Largest free set handed to the exact search.
    pub max_free: usize,
    /// Node budget of one re-packing search.
    pub nodes: u64,
}

impl ImproveParams {
    /// Defaults for a deadline: free sets of up to 2,000 buffers, 50,000 nodes a move.
    pub fn new(deadline: Instant, seed: u64, target: u64) -> Self {
        ImproveParams { deadline, seed, target, max_free: 2000, nodes: 50_000 }
    }
}

/// What [`improve`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ImproveStats {
    /// Re-packing searches run.
    pub moves: usize,
    /// Of those, how many lowered their peak.
    pub improvements: usize,
    /// Makespan before.
    pub start: u64,
    /// Makespan after.
    pub end: u64,
}

/// Improves `offsets` (a valid placement of `buffers`) in place until the deadline, the target,
/// or until no peak can be lowered with the largest allowed neighbourhood.
pub fn improve(buffers: &[Buffer], offsets: &mut [u64], params: &ImproveParams) -> ImproveStats {
    let n = buffers.len();
    let top = |i: usize, off: &[u64]| off[i] + buffers[i].size;
    let mut by_top: BTreeSet<(u64, u32)> = (0..n).map(|i| (top(i, offsets), i as u32)).collect();
    let makespan = |by_top: &BTreeSet<(u64, u32)>| by_top.last().map(|&(t, _)| t).unwrap_or(0);
    let mut stats = ImproveStats { start: makespan(&by_top), ..Default::default() };
    let mut rng = Rng::new(params.seed);
    // Slab thickness to try next per peak buffer, reset whenever the makespan drops; a peak
    // whose largest neighbourhood failed is exhausted for this makespan.
    let mut slab: HashMap<u32, u64> = HashMap::new();
    let mut exhausted: BTreeSet<u32> = BTreeSet::new();
    let mut current = makespan(&by_top);
    let strategies = Strategy::portfolio();
    while Instant::now() < params.deadline {
        let m = makespan(&by_top);
        if m <= params.target || m == 0 {
            break;
        }
        if m < current {
            current = m;
            slab.clear();
            exhausted.clear();
        }
        // The buffers at the peak, in random order; the first one not exhausted is next.
        let mut peaks: Vec<u32> = by_top.range((m, 0)..).map(|&(_, i)| i).filter(|i| !exhausted.contains(i)).collect();
        if peaks.is_empty() {
            break;
        }
        let star = peaks.swap_remove(rng.below(peaks.len() as u64) as usize);
        let thickness = *slab.entry(star).or_insert(buffers[star as usize].size);
        let Some(free) = free_set(buffers, &by_top, star, m.saturating_sub(thickness), params.max_free) else {
            exhausted.insert(star);
            continue;
        };
        let widen = |slab: &mut HashMap<u32, u64>| {
            let t = slab.get(&star).copied().unwrap_or(1);
            slab.insert(star, t.saturating_mul(2).min(m));
        };
        // Floors: the highest top of fixed buffers alive during each free buffer's lifetime.
        let (lo, hi) = free.iter().fold((u64::MAX, 0), |(lo, hi), &i| (lo.min(buffers[i].lower), hi.max(buffers[i].upper)));
        let in_free: std::collections::HashSet<usize> = free.iter().copied().collect();
        let fixed: Vec<usize> =
            (0..n).filter(|&j| buffers[j].lower < hi && lo < buffers[j].upper && !in_free.contains(&j)).collect();
        let floors: Vec<u64> = free
            .iter()
            .map(|&i| {
                fixed.iter().filter(|&&j| buffers[j].conflicts(&buffers[i])).map(|&j| top(j, offsets)).max().unwrap_or(0)
            })
            .collect();
        let sub: Vec<Buffer> = free.iter().map(|&i| buffers[i]).collect();
        let Some(problem) = exact::Problem::new(&sub, u64::MAX).map(|p| p.with_floors(floors)) else { continue };
        stats.moves += 1;
        let strategy = strategies[rng.below(strategies.len() as u64) as usize];
        let limits = Limits { deadline: Some(params.deadline), nodes: params.nodes, ..Limits::default() };
        let (dec, dst) = problem.decide(m - 1, strategy, limits);
        if std::env::var("IMPDBG").is_ok() { eprintln!("m {m} star {star} thick {thickness} |F| {} fixed {} -> {} nodes {}", free.len(), fixed.len(), match &dec { Decision::Found(_) => "found", Decision::Infeasible => "infeasible", _ => "unknown" }, dst.nodes); }
        match dec {
            Decision::Found(new) => {
                for (k, &i) in free.iter().enumerate() {
                    by_top.remove(&(top(i, offsets), i as u32));
                    offsets[i] = new[k];
                    by_top.insert((top(i, offsets), i as u32));
                }
                stats.improvements += 1;
            }
            Decision::Infeasible | Decision::Unknown => {
                if thickness >= m {
                    exhausted.insert(star);
                } else {
                    widen(&mut slab);
                }
            }
        }
    }
    stats.end = makespan(&by_top);
    stats
}

/// The free set around `star`: buffers with top above `h`, grown from `star` by layers of
/// overlapping lifetimes (each layer adds the buffers above `h` alive during the previous
/// layer's time span) while it stays within `max` buffers; at most the whole connected slab.
/// `None` when `star` itself is not above `h`.
fn free_set(buffers: &[Buffer], by_top: &BTreeSet<(u64, u32)>, star: u32, h: u64, max: usize) -> Option<Vec<usize>> {
    if by_top.range((h + 1, 0)..).all(|&(_, i)| i != star) {
        return None;
    }
    let above: Vec<usize> = by_top.range((h + 1, 0)..).map(|&(_, i)| i as usize).collect();
    let s = &buffers[star as usize];
    let (mut lo, mut hi) = (s.lower, s.upper);
    let mut layer = vec![star as usize];
    loop {
        let next: Vec<usize> = above.iter().copied().filter(|&i| buffers[i].lower < hi && lo < buffers[i].upper).collect();
        if next.len() > max || next.len() == layer.len() {
            return Some(if next.len() > max { layer } else { next });
        }
        for &i in &next {
            lo = lo.min(buffers[i].lower);
            hi = hi.max(buffers[i].upper);
        }
        layer = next;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::heuristics::Heuristic;
    use heaplab_sweep::{max_load, validate};

    #[test]
    fn moves_keep_the_placement_valid_and_never_raise_the_makespan() {
        for (k, &kind) in heaplab_gen::Kind::ALL.iter().enumerate() {
            for n in [1usize, 2, 40, 400] {
                let inst = heaplab_gen::generate(kind, n, 5 + k as u64);
                let bs = &inst.buffers;
                let mut off = Heuristic::STANDARD[0].run(bs);
                let before = validate(bs, &off).makespan;
                let deadline = Instant::now() + std::time::Duration::from_millis(300);
                let st = improve(bs, &mut off, &ImproveParams::new(deadline, 1, max_load(bs)));
                let v = validate(bs, &off);
                assert!(v.is_valid(), "{} n={n}: {}", kind.name(), v.describe(bs, &off));
                assert!(v.makespan <= before, "{} n={n}", kind.name());
                assert_eq!(v.makespan, st.end);
                assert_eq!(st.start, before);
            }
        }
    }

    #[test]
    fn free_set_is_the_connected_slab() {
        // Three buffers above h = 5: two overlapping in time, one apart.
        let bs = vec![Buffer::new(0, 0, 4, 3), Buffer::new(1, 2, 6, 3), Buffer::new(2, 8, 9, 9), Buffer::new(3, 0, 9, 2)];
        let off: Vec<u64> = vec![3, 6, 0, 0];
        let by_top: BTreeSet<(u64, u32)> = (0..4).map(|i| (off[i] + bs[i].size, i as u32)).collect();
        let mut f = free_set(&bs, &by_top, 1, 5, 10).unwrap();
        f.sort();
        assert_eq!(f, vec![0, 1]);
        assert_eq!(free_set(&bs, &by_top, 1, 5, 1).unwrap(), vec![1], "capped to the first layer");
        assert_eq!(free_set(&bs, &by_top, 2, 5, 10).unwrap(), vec![2]);
        assert!(free_set(&bs, &by_top, 3, 5, 10).is_none());
    }
}
