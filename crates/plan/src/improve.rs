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
use crate::occupancy::Occupancy;
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
    /// Largest column re-placed by first-fit: a column is everything alive at an instant, which
    /// in a traced heap can be tens of thousands of buffers, each move then taking longer than
    /// the whole budget.
    pub max_column: usize,
}

impl ImproveParams {
    /// Defaults for a deadline: free sets of up to 2,000 buffers, 50,000 nodes a move, columns
    /// of up to 5,000 buffers.
    pub fn new(deadline: Instant, seed: u64, target: u64) -> Self {
        ImproveParams { deadline, seed, target, max_free: 2000, nodes: 50_000, max_column: 5000 }
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

/// The next move planned for one peak buffer.
#[derive(Clone, Copy, Debug)]
enum Next {
    /// Re-pack the slab of this thickness exactly.
    Slab(u64),
    /// Re-place a column by first-fit; this many tries made.
    Column(u32),
}

/// First-fit re-placements of a column tried per peak before it counts as exhausted.
const COLUMN_TRIES: u32 = 6;

/// Improves `offsets` (a valid placement of `buffers`) in place until the deadline, the target,
/// or until no peak can be lowered with the largest allowed neighbourhoods.
///
/// Each peak buffer is worked on with growing slabs (re-packed exactly above the skyline of the
/// rest; see the module doc) and then, when even the thickest slab fails, with *column* moves:
/// the buffers alive at one instant of its lifetime are taken out and put back by first-fit
/// against everything else — the first try in their current offset order (a compaction that
/// can only lower them, into holes under other buffers the skyline cannot use), later tries by
/// size with random perturbations. A column move is kept when the column no longer reaches the
/// makespan (or, for the compaction, when anything moved down).
pub fn improve(buffers: &[Buffer], offsets: &mut [u64], params: &ImproveParams) -> ImproveStats {
    let n = buffers.len();
    let mut by_top: BTreeSet<(u64, u32)> = (0..n).map(|i| (offsets[i] + buffers[i].size, i as u32)).collect();
    let makespan = |by_top: &BTreeSet<(u64, u32)>| by_top.last().map(|&(t, _)| t).unwrap_or(0);
    let mut stats = ImproveStats { start: makespan(&by_top), ..Default::default() };
    let mut rng = Rng::new(params.seed);
    // The next move per peak buffer, reset whenever the makespan drops; a peak whose moves all
    // failed is exhausted for this makespan.
    let mut next: HashMap<u32, Next> = HashMap::new();
    let mut exhausted: BTreeSet<u32> = BTreeSet::new();
    let mut current = makespan(&by_top);
    while Instant::now() < params.deadline {
        let m = makespan(&by_top);
        if m <= params.target || m == 0 {
            break;
        }
        if m < current {
            current = m;
            next.clear();
            exhausted.clear();
        }
        let peaks: Vec<u32> = by_top.range((m, 0)..).map(|&(_, i)| i).filter(|i| !exhausted.contains(i)).collect();
        if peaks.is_empty() {
            break;
        }
        let star = peaks[rng.below(peaks.len() as u64) as usize];
        let step = *next.entry(star).or_insert(Next::Slab(buffers[star as usize].size));
        stats.moves += 1;
        let moved = match step {
            Next::Slab(thickness) => {
                let moved = slab_move(buffers, offsets, &by_top, star, m, thickness, params, &mut rng);
                if moved.is_none() {
                    let grown = thickness.saturating_mul(2);
                    next.insert(star, if thickness >= m { Next::Column(0) } else { Next::Slab(grown.min(m)) });
                }
                moved
            }
            Next::Column(tries) => {
                let moved = column_move(buffers, offsets, star, m, tries, params.max_column, &mut rng);
                if moved.is_none() {
                    if tries + 1 >= COLUMN_TRIES {
                        exhausted.insert(star);
                    } else {
                        next.insert(star, Next::Column(tries + 1));
                    }
                }
                moved
            }
        };
        if let Some(moves) = moved {
            for (i, o) in moves {
                by_top.remove(&(offsets[i] + buffers[i].size, i as u32));
                offsets[i] = o;
                by_top.insert((offsets[i] + buffers[i].size, i as u32));
            }
            stats.improvements += 1;
        }
    }
    stats.end = makespan(&by_top);
    stats
}

/// The buffers overlapping `[lo, hi)` in time that are not in `free` (sorted), as indices.
fn overlapping(buffers: &[Buffer], lo: u64, hi: u64, free: &[usize]) -> Vec<usize> {
    (0..buffers.len()).filter(|&j| buffers[j].lower < hi && lo < buffers[j].upper && free.binary_search(&j).is_err()).collect()
}

/// Slab move (see the module doc): new offsets for the free set, or `None` when the exact
/// search could not keep it below `m` within its budget.
#[allow(clippy::too_many_arguments)]
fn slab_move(
    buffers: &[Buffer],
    offsets: &[u64],
    by_top: &BTreeSet<(u64, u32)>,
    star: u32,
    m: u64,
    thickness: u64,
    params: &ImproveParams,
    rng: &mut Rng,
) -> Option<Vec<(usize, u64)>> {
    let mut free = free_set(buffers, by_top, star, m.saturating_sub(thickness), params.max_free)?;
    free.sort_unstable();
    // Floors: the highest top of fixed buffers alive during each free buffer's lifetime.
    let (lo, hi) = free.iter().fold((u64::MAX, 0), |(lo, hi), &i| (lo.min(buffers[i].lower), hi.max(buffers[i].upper)));
    let fixed = overlapping(buffers, lo, hi, &free);
    let floors: Vec<u64> = free
        .iter()
        .map(|&i| {
            fixed.iter().filter(|&&j| buffers[j].conflicts(&buffers[i])).map(|&j| offsets[j] + buffers[j].size).max().unwrap_or(0)
        })
        .collect();
    let sub: Vec<Buffer> = free.iter().map(|&i| buffers[i]).collect();
    let problem = exact::Problem::new(&sub, u64::MAX)?.with_floors(floors);
    let strategies = Strategy::portfolio();
    let strategy = strategies[rng.below(strategies.len() as u64) as usize];
    let limits = Limits { deadline: Some(params.deadline), nodes: params.nodes, ..Limits::default() };
    match problem.decide(m - 1, strategy, limits).0 {
        Decision::Found(new) => Some(free.into_iter().zip(new).collect()),
        Decision::Infeasible | Decision::Unknown => None,
    }
}

/// Column move (see [`improve`]): the buffers alive at a random instant of `star`'s lifetime
/// re-placed by first-fit against all the others, in the order of try `tries`.
fn column_move(buffers: &[Buffer], offsets: &[u64], star: u32, m: u64, tries: u32, max_column: usize, rng: &mut Rng) -> Option<Vec<(usize, u64)>> {
    let b = &buffers[star as usize];
    let t = b.lower + rng.below(b.length());
    let free: Vec<usize> = (0..buffers.len()).filter(|&i| buffers[i].lower <= t && t < buffers[i].upper).collect();
    if free.len() > max_column {
        return None;
    }
    let (lo, hi) = free.iter().fold((u64::MAX, 0), |(lo, hi), &i| (lo.min(buffers[i].lower), hi.max(buffers[i].upper)));
    let fixed = overlapping(buffers, lo, hi, &free);
    let local: Vec<Buffer> = fixed.iter().chain(&free).map(|&i| buffers[i]).collect();
    let mut occ = Occupancy::new(&local);
    for (k, &j) in fixed.iter().enumerate() {
        occ.insert(k, offsets[j]);
    }
    let mut order: Vec<usize> = (0..free.len()).collect();
    if tries == 0 {
        order.sort_by_key(|&k| (offsets[free[k]], k));
    } else {
        // Size order, each key scaled by a random factor in [1, 2): nearby sizes swap places.
        let keys: Vec<u128> = free.iter().map(|&i| buffers[i].size as u128 * (1024 + rng.below(1024)) as u128).collect();
        order.sort_by_key(|&k| (std::cmp::Reverse(keys[k]), k));
    }
    let mut placed = vec![0u64; free.len()];
    for &k in &order {
        let at = fixed.len() + k;
        placed[k] = occ.lowest_fit(at);
        occ.insert(at, placed[k]);
    }
    let new_top = free.iter().zip(&placed).map(|(&i, &o)| o + buffers[i].size).max().unwrap_or(0);
    let lowered = free.iter().zip(&placed).any(|(&i, &o)| o < offsets[i]);
    let keep = new_top < m || (tries == 0 && lowered && new_top <= m);
    keep.then(|| free.into_iter().zip(placed).collect())
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
