//! The event sweep every analysis in heaplab rests on: buffers sorted once by start and by end,
//! merged into a time-ordered stream of allocations and frees (frees first at equal ticks, because
//! lifetimes are half-open). From it come max load, the load profile, the conflict count,
//! independent components, instance statistics ([`stats`]) and the placement validator
//! ([`validate`]), all in O(n log n) time and O(n) memory — never a pairwise conflict graph.

pub mod stats;
pub mod validate;

use heaplab_model::Buffer;

pub use validate::{validate, Clash, Validation};

/// One step of the sweep.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// Buffer `i` becomes live at its `lower`.
    Alloc(usize),
    /// Buffer `i` stops being live at its `upper`.
    Free(usize),
}

/// Buffers ordered by start and by end: the sorted half of every sweep (8 bytes a buffer).
pub struct Sweep {
    /// Buffer indices by `(lower, index)`.
    pub by_lower: Vec<u32>,
    /// Buffer indices by `(upper, index)`.
    pub by_upper: Vec<u32>,
}

impl Sweep {
    /// Sorts the buffers. Panics only if there are more than 2^32 buffers.
    pub fn new(buffers: &[Buffer]) -> Sweep {
        assert!(buffers.len() <= u32::MAX as usize, "more than 2^32 buffers");
        Sweep { by_lower: sorted_by(buffers, |b| b.lower), by_upper: sorted_by(buffers, |b| b.upper) }
    }

    /// The events in time order; at equal ticks frees come before allocations.
    pub fn events<'a>(&'a self, buffers: &'a [Buffer]) -> impl Iterator<Item = (u64, Event)> + 'a {
        self.sized_events(buffers).map(|(t, e, _)| (t, e))
    }

    /// [`Sweep::events`] with each buffer's size.
    pub fn sized_events<'a>(&'a self, buffers: &'a [Buffer]) -> impl Iterator<Item = (u64, Event, u64)> + 'a {
        let (mut a, mut f) = (0usize, 0usize);
        std::iter::from_fn(move || {
            // The buffers a few steps ahead in both orders, fetched early: on input out of
            // start order each look-up by index was a cache miss that the next step waited on.
            prefetch_ahead(buffers, &self.by_lower, a + PREFETCH_AHEAD);
            prefetch_ahead(buffers, &self.by_upper, f + PREFETCH_AHEAD);
            let next_alloc = self.by_lower.get(a).map(|&i| &buffers[i as usize]);
            let next_free = self.by_upper.get(f).map(|&i| &buffers[i as usize]);
            match (next_alloc, next_free) {
                (Some(x), y) if y.is_none_or(|y| x.lower < y.upper) => {
                    a += 1;
                    Some((x.lower, Event::Alloc(self.by_lower[a - 1] as usize), x.size))
                }
                (_, Some(y)) => {
                    f += 1;
                    Some((y.upper, Event::Free(self.by_upper[f - 1] as usize), y.size))
                }
                _ => None,
            }
        })
    }
}

/// How many steps ahead a sweep fetches the buffers it will read ([`prefetch_ahead`]).
pub(crate) const PREFETCH_AHEAD: usize = 32;

/// Asks the cache for item `order[k]` of `items`, if there is one.
#[inline(always)]
pub(crate) fn prefetch_ahead<T>(items: &[T], order: &[u32], k: usize) {
    if let Some(item) = order.get(k).and_then(|&i| items.get(i as usize)) {
        prefetch(item);
    }
}

/// Asks the cache for the line holding `x`, for a look-up to come (a hint only; nothing off
/// x86-64): the sweeps here and the planner's occupancy index use it where misses would
/// otherwise come one after the other.
#[inline(always)]
pub fn prefetch<T>(x: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch reads nothing and cannot fault; `x` is a valid reference anyway.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(x as *const T as *const i8)
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = x;
}

/// Maximum over ticks of the summed sizes of live buffers: the trivial lower bound on makespan.
pub fn max_load(buffers: &[Buffer]) -> u64 {
    // The profile's maximum without the profile (16 bytes a tick: 320 MB at 10^7 buffers).
    // Frees come first at equal ticks, so the running maximum after each allocation is the
    // profile's.
    let sweep = Sweep::new(buffers);
    let (mut load, mut best) = (0u64, 0u64);
    for (_, e, size) in sweep.sized_events(buffers) {
        match e {
            Event::Alloc(_) => {
                load += size;
                best = best.max(load);
            }
            Event::Free(_) => load -= size,
        }
    }
    best
}

/// The load as a step function: `(tick, load)` pairs, the load holding from `tick` until the
/// next pair's tick. Ticks are strictly increasing; the last pair has load 0.
pub fn load_profile(buffers: &[Buffer]) -> Vec<(u64, u64)> {
    let sweep = Sweep::new(buffers);
    let mut out: Vec<(u64, u64)> = Vec::new();
    let mut load = 0u64;
    for (t, e, size) in sweep.sized_events(buffers) {
        match e {
            Event::Alloc(_) => load += size,
            Event::Free(_) => load -= size,
        }
        match out.last_mut() {
            Some(last) if last.0 == t => last.1 = load,
            _ => out.push((t, load)),
        }
    }
    out
}

/// Number of conflicting pairs (buffers whose lifetimes intersect), computed without listing
/// them: each allocation conflicts with every buffer live when it starts.
pub fn conflict_count(buffers: &[Buffer]) -> u64 {
    let sweep = Sweep::new(buffers);
    let mut live = 0u64;
    let mut pairs = 0u64;
    for (_, e) in sweep.events(buffers) {
        match e {
            Event::Alloc(_) => {
                pairs += live;
                live += 1;
            }
            Event::Free(_) => live -= 1,
        }
    }
    pairs
}

/// A maximal group of buffers connected through overlapping lifetimes. Components occupy
/// disjoint time ranges, so each can be planned alone, every one starting at offset 0.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Component {
    /// Buffer indices, ordered by start time.
    pub buffers: Vec<u32>,
    /// The same indices ordered by end time (`(upper, index)`): the order a sweep frees them
    /// in, sorted once here for the splitting.
    pub ends: Vec<u32>,
    /// First tick of the component.
    pub lower: u64,
    /// Tick after its last.
    pub upper: u64,
    /// Its max load.
    pub max_load: u64,
}

/// Buffer indices ordered by `(key(buffer), index)`. The keys are sorted as `key << 32 | index`
/// rather than indices compared through the buffers: at 10^7 buffers the indirection's cache
/// misses cost most of the time. Keys already in order (buffers in start order, as the planner
/// keeps them) are not sorted again, and keys below 2^32 (ticks, on every instance of fewer
/// than 4·10^9 events) sort as 8-byte words, not 16: at 10^7 buffers the two sorts were 0.6 s of
/// every plan. Both cores share large sorts.
pub fn sorted_by(buffers: &[Buffer], key: impl Fn(&Buffer) -> u64 + Sync) -> Vec<u32> {
    use rayon::prelude::*;
    assert!(buffers.len() <= u32::MAX as usize, "more than 2^32 buffers");
    let n = buffers.len();
    if buffers.par_windows(2).all(|w| key(&w[0]) <= key(&w[1])) {
        return (0..n as u32).collect();
    }
    if buffers.par_iter().all(|b| key(b) <= u32::MAX as u64) {
        sorted_keys(buffers.par_iter().enumerate().map(|(i, b)| key(b) << 32 | i as u64).collect(), |k| k as u32)
    } else {
        sorted_keys(buffers.par_iter().enumerate().map(|(i, b)| (key(b) as u128) << 32 | i as u128).collect(), |k| k as u32)
    }
}

/// The indices in the low bits of `keys`, once sorted (on both cores when there are many).
fn sorted_keys<K: Ord + Copy + Send + Sync>(mut keys: Vec<K>, index: impl Fn(K) -> u32 + Sync) -> Vec<u32> {
    use rayon::prelude::*;
    if keys.len() > 1 << 16 {
        keys.par_sort_unstable();
    } else {
        keys.sort_unstable();
    }
    keys.par_iter().map(|&k| index(k)).collect()
}

/// Splits the time axis wherever no buffer is live across a tick boundary, and finds each
/// component's max load on the way: one sweep of the events. O(n log n).
pub fn components(buffers: &[Buffer]) -> Vec<Component> {
    let sweep = Sweep::new(buffers);
    // Per component: where its allocations and frees end in the sorted orders, its time range
    // and max load. Frees of one component all come before the next one's allocations, so each
    // component is a run of both orders.
    let mut cuts: Vec<(usize, usize, u64, u64, u64)> = Vec::new();
    let (mut allocs, mut frees) = (0usize, 0usize);
    let (mut live, mut load, mut peak, mut lower) = (0usize, 0u64, 0u64, 0u64);
    for (t, e, size) in sweep.sized_events(buffers) {
        match e {
            Event::Alloc(_) => {
                if live == 0 {
                    lower = t;
                }
                live += 1;
                allocs += 1;
                load += size;
                peak = peak.max(load);
            }
            Event::Free(_) => {
                live -= 1;
                frees += 1;
                load -= size;
                // Frees come before allocations at equal ticks, so nothing is live across `t`.
                if live == 0 {
                    cuts.push((allocs, frees, lower, t, peak));
                    peak = 0;
                }
            }
        }
    }
    // One component (the common case at scale) takes the sorted orders without a copy.
    if let [(_, _, lower, upper, max_load)] = cuts[..] {
        return vec![Component { buffers: sweep.by_lower, ends: sweep.by_upper, lower, upper, max_load }];
    }
    let (mut a0, mut f0) = (0usize, 0usize);
    cuts.into_iter()
        .map(|(a, f, lower, upper, max_load)| {
            let c = Component { buffers: sweep.by_lower[a0..a].to_vec(), ends: sweep.by_upper[f0..f].to_vec(), lower, upper, max_load };
            (a0, f0) = (a, f);
            c
        })
        .collect()
}

/// Maximum number of buffers live at once.
pub fn max_live(buffers: &[Buffer]) -> usize {
    let sweep = Sweep::new(buffers);
    let (mut live, mut best) = (0usize, 0usize);
    for (_, e) in sweep.events(buffers) {
        match e {
            Event::Alloc(_) => {
                live += 1;
                best = best.max(live);
            }
            Event::Free(_) => live -= 1,
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(id: u64, lower: u64, upper: u64, size: u64) -> Buffer {
        Buffer::new(id, lower, upper, size)
    }

    /// Quadratic oracle for the sweep's results.
    fn brute(bs: &[Buffer]) -> (u64, u64) {
        let mut ticks: Vec<u64> = bs.iter().map(|x| x.lower).collect();
        let ml = ticks.drain(..).map(|t| bs.iter().filter(|x| x.lower <= t && t < x.upper).map(|x| x.size).sum()).max().unwrap_or(0);
        let mut c = 0;
        for i in 0..bs.len() {
            for j in 0..i {
                c += bs[i].conflicts(&bs[j]) as u64;
            }
        }
        (ml, c)
    }

    #[test]
    fn half_open_lifetimes_touching_do_not_conflict() {
        let bs = [b(0, 0, 5, 10), b(1, 5, 9, 7)];
        assert_eq!(max_load(&bs), 10);
        assert_eq!(conflict_count(&bs), 0);
        assert_eq!(components(&bs).len(), 2);
    }

    #[test]
    fn empty_and_single() {
        assert_eq!(max_load(&[]), 0);
        assert!(components(&[]).is_empty());
        assert_eq!(load_profile(&[b(3, 2, 4, 8)]), vec![(2, 8), (4, 0)]);
    }

    #[test]
    fn sweep_matches_brute_force_on_random_instances() {
        let mut s = 0x1234_5678_9abc_def0u64;
        let mut rnd = |m: u64| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s % m
        };
        for round in 0..300 {
            let n = (round % 40) as usize;
            let bs: Vec<Buffer> = (0..n)
                .map(|i| {
                    let lo = rnd(30);
                    b(i as u64, lo, lo + 1 + rnd(10), 1 + rnd(100))
                })
                .collect();
            let (ml, c) = brute(&bs);
            assert_eq!(max_load(&bs), ml);
            assert_eq!(conflict_count(&bs), c);
            let comps = components(&bs);
            assert_eq!(comps.iter().map(|c| c.buffers.len()).sum::<usize>(), n);
            assert_eq!(comps.iter().map(|c| c.max_load).max().unwrap_or(0), ml);
            for c in &comps {
                assert!(c.buffers.windows(2).all(|w| (bs[w[0] as usize].lower, w[0]) < (bs[w[1] as usize].lower, w[1])));
                assert!(c.ends.windows(2).all(|w| (bs[w[0] as usize].upper, w[0]) < (bs[w[1] as usize].upper, w[1])));
                let (mut by_start, mut by_end) = (c.buffers.clone(), c.ends.clone());
                by_start.sort_unstable();
                by_end.sort_unstable();
                assert_eq!(by_start, by_end);
                let sub: Vec<Buffer> = c.buffers.iter().map(|&i| bs[i as usize]).collect();
                assert_eq!(c.max_load, brute(&sub).0);
            }
            // No buffer of one component conflicts with a buffer of another.
            for (x, cx) in comps.iter().enumerate() {
                for cy in &comps[x + 1..] {
                    assert!(cx.upper <= cy.lower);
                    for &i in &cx.buffers {
                        for &j in &cy.buffers {
                            assert!(!bs[i as usize].conflicts(&bs[j as usize]));
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn sorted_by_orders_by_key_then_index_on_every_path() {
        let mut s = 0x9e37_79b9_7f4a_7c15u64;
        let mut rnd = move |m: u64| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s % m
        };
        // Small and large (the parallel sort), keys below and above 2^32 (8- and 16-byte
        // keys), already in order (no sort) or not, with ties.
        for &(n, top) in &[(0usize, 10u64), (1, 10), (50, 8), (70_000, 1 << 20), (70_000, u64::MAX), (300, u64::MAX - 5)] {
            for presorted in [false, true] {
                let mut bs: Vec<Buffer> = (0..n)
                    .map(|i| {
                        let lo = if top == u64::MAX { u64::MAX - 1 - rnd(1 << 40) * (rnd(2) << 20) } else { rnd(top) };
                        b(i as u64, lo, lo + 1, 1)
                    })
                    .collect();
                if presorted {
                    bs.sort_by_key(|x| x.lower);
                }
                let mut want: Vec<u32> = (0..n as u32).collect();
                want.sort_by_key(|&i| (bs[i as usize].lower, i));
                assert_eq!(sorted_by(&bs, |x| x.lower), want, "n {n}, keys below {top}, presorted {presorted}");
            }
        }
    }
}
