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
//! Once a peak's slab is thicker than the makespan or holds more than `max_free` buffers, the
//! exact search is a long shot and the peak gets *window moves* instead: the buffers alive in a
//! random time window around it whose tops lie above a random depth are taken out and put back
//! greedily against all the others, which, unlike the floors, lets them drop into holes far
//! below. Sideways moves (the peak stays but fewer buffers reach it, or they sit lower on the
//! whole) are kept too, so the search can drift out of a local optimum.
//!
//! Everything is local: a move lists the buffers alive in a window through a [`TimeIndex`] and
//! searches or re-places a few hundred to a few thousand buffers, so the search scales to
//! millions of buffers; moves never raise the makespan, and the result is validated by the
//! caller like every other placement. It returns early when stuck (see [`improve`]).

use crate::exact::{self, Decision, Limits, Strategy};
use crate::occupancy::Occupancy;
use crate::rng::Rng;
use crate::timeline::TimeIndex;
use heaplab_model::Buffer;
use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// Limits and knobs of [`improve`].
#[derive(Clone, Debug)]
pub struct ImproveParams {
    /// Stop at this instant.
    pub deadline: Instant,
    /// Seed for the choice of peaks and search orders.
    pub seed: u64,
    /// The makespan to stop at: a proven lower bound, or a user's capacity above it.
    pub target: u64,
    /// Largest free set handed to the exact search.
    pub max_free: usize,
    /// Node budget of one re-packing search.
    pub nodes: u64,
    /// Largest free set of a window move: everything alive in a window of a traced heap can be
    /// tens of thousands of buffers, each move then taking longer than the whole budget.
    pub max_window: usize,
    /// Raised by any search sharing it that reaches the target: the others stop too.
    pub stop: Option<Arc<AtomicBool>>,
    /// Set by the caller to stop at once, as if the deadline had passed
    /// ([`crate::PlanOptions::cancel`]).
    pub cancel: Option<Arc<AtomicBool>>,
    /// Keep going when stuck, until the deadline or the target: for a caller with nothing
    /// better to do with the time, where drops come after long runs without one.
    pub patient: bool,
}

impl ImproveParams {
    /// Defaults for a deadline: free sets of up to 2,000 buffers, 50,000 nodes a move, windows
    /// of up to 5,000 buffers.
    pub fn new(deadline: Instant, seed: u64, target: u64) -> Self {
        ImproveParams { deadline, seed, target, max_free: 2000, nodes: 50_000, max_window: 5000, stop: None, cancel: None, patient: false }
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
    /// Slabs are exhausted or too large for the exact search: greedy window re-packs.
    Window,
}

/// Moves, or seconds, without a makespan drop before [`improve`] may return early.
const PATIENCE: usize = 200;
const PATIENCE_SECONDS: f64 = 0.5;

/// Most buffers left in place that a move looks at, in window sizes
/// ([`ImproveParams::max_window`]); beyond it the move works in a band (see
/// [`Improver::collect_fixed`]).
const FIXED_MAX_WINDOWS: usize = 16;

/// Improves `offsets` (a valid placement of `buffers`) in place until the deadline, the target,
/// or until it is stuck (no drop of the makespan in [`PATIENCE`] moves or [`PATIENCE_SECONDS`],
/// and in as long as the last drop took), unless [`ImproveParams::patient`].
///
/// Each peak buffer is worked on with growing slabs (re-packed exactly above the skyline of the
/// rest; see the module doc) while the slab stays small enough for the exact search, and then
/// with *window* moves (see [`Improver::window_move`]).
pub fn improve(buffers: &[Buffer], offsets: &mut [u64], params: &ImproveParams) -> ImproveStats {
    let mut im = Improver::new(buffers, offsets, params);
    im.run();
    im.stats
}

/// State of one [`improve`] run.
struct Improver<'a> {
    buffers: &'a [Buffer],
    offsets: &'a mut [u64],
    params: &'a ImproveParams,
    /// Every buffer by (top, index): the peaks are the last entries.
    by_top: BTreeSet<(u64, u32)>,
    index: TimeIndex,
    /// `mark[i] == epoch` when buffer `i` is in the current move's free set.
    mark: Vec<u32>,
    epoch: u32,
    rng: Rng,
    stats: ImproveStats,
    /// Reused lists: free set, fixed set, query output.
    free: Vec<usize>,
    fixed: Vec<usize>,
    found: Vec<usize>,
}

impl<'a> Improver<'a> {
    fn new(buffers: &'a [Buffer], offsets: &'a mut [u64], params: &'a ImproveParams) -> Self {
        let by_top: BTreeSet<(u64, u32)> = (0..buffers.len()).map(|i| (offsets[i] + buffers[i].size, i as u32)).collect();
        let start = by_top.last().map(|&(t, _)| t).unwrap_or(0);
        Improver {
            buffers,
            offsets,
            params,
            by_top,
            index: TimeIndex::new(buffers),
            mark: vec![0; buffers.len()],
            epoch: 0,
            rng: Rng::new(params.seed),
            stats: ImproveStats { start, end: start, ..Default::default() },
            free: Vec::new(),
            fixed: Vec::new(),
            found: Vec::new(),
        }
    }

    fn makespan(&self) -> u64 {
        self.by_top.last().map(|&(t, _)| t).unwrap_or(0)
    }

    fn run(&mut self) {
        // The next move per peak buffer, reset whenever the makespan drops.
        let mut next: HashMap<u32, Next> = HashMap::new();
        let mut current = self.makespan();
        let started = Instant::now();
        let (mut last_drop, mut moves_at_drop) = (started, 0);
        while Instant::now() < self.params.deadline && !self.params.cancel.as_ref().is_some_and(|c| c.load(Ordering::Relaxed)) {
            let m = self.makespan();
            if m <= self.params.target || m == 0 {
                if let Some(stop) = &self.params.stop {
                    stop.store(true, Ordering::Relaxed);
                }
                break;
            }
            if self.params.stop.as_ref().is_some_and(|s| s.load(Ordering::Relaxed)) {
                break;
            }
            if m < current {
                current = m;
                next.clear();
                (last_drop, moves_at_drop) = (Instant::now(), self.stats.moves);
            }
            // Stuck: `PATIENCE` moves or `PATIENCE_SECONDS` (slab moves on large slabs are
            // slow), and longer than it took to reach the last drop, without lowering the
            // makespan. The time is better spent by the caller (another start, boxing) than on
            // more of the same moves.
            let since = last_drop.elapsed();
            let stuck = self.stats.moves - moves_at_drop >= PATIENCE || since.as_secs_f64() >= PATIENCE_SECONDS;
            if stuck && since > last_drop - started && !self.params.patient {
                break;
            }
            let peaks: Vec<u32> = self.by_top.range((m, 0)..).map(|&(_, i)| i).collect();
            let star = peaks[self.rng.below(peaks.len() as u64) as usize];
            let step = *next.entry(star).or_insert(Next::Slab(self.buffers[star as usize].size));
            self.stats.moves += 1;
            let moved = match step {
                Next::Slab(thickness) => {
                    let (moved, size) = self.slab_move(star, m, thickness);
                    if moved.is_none() {
                        let grown = thickness.saturating_mul(2);
                        let last = thickness >= m || size > self.params.max_free;
                        next.insert(star, if last { Next::Window } else { Next::Slab(grown.min(m)) });
                    }
                    moved
                }
                Next::Window => self.window_move(star, m),
            };
            if let Some(moves) = moved {
                for (i, o) in moves {
                    self.by_top.remove(&(self.offsets[i] + self.buffers[i].size, i as u32));
                    self.offsets[i] = o;
                    self.by_top.insert((o + self.buffers[i].size, i as u32));
                }
                self.stats.improvements += 1;
            }
        }
        self.stats.end = self.makespan();
    }

    /// Marks the buffers of `self.free` as the current move's free set (a new epoch, so the
    /// previous move's marks lapse without clearing them).
    fn mark_free(&mut self) {
        self.epoch = self.epoch.wrapping_add(1);
        if self.epoch == 0 {
            self.mark.fill(0);
            self.epoch = 1;
        }
        for &i in &self.free {
            self.mark[i] = self.epoch;
        }
    }

    /// The time span of the free set (`self.free`): its first start and last end.
    fn free_span(&self) -> (u64, u64) {
        self.free.iter().fold((u64::MAX, 0), |(lo, hi), &i| (lo.min(self.buffers[i].lower), hi.max(self.buffers[i].upper)))
    }

    /// Fills `self.fixed` with the buffers overlapping the free set's time span that are not in
    /// it (the free set is `self.free`, marked by [`Improver::mark_free`]), and returns the
    /// *band floor*: 0, or where there are more of them than [`FIXED_MAX_WINDOWS`] windows'
    /// worth, an address below which the move leaves everything as it is, so that only the
    /// fixed buffers reaching above it are kept (`None` when even those are too many). On a
    /// traced heap a million buffers can be live at every instant, each move then costing a
    /// whole placement; the free buffers' offsets at or above the band floor keep every
    /// buffer below it out of their way.
    fn collect_fixed(&mut self, h: u64, m: u64) -> Option<u64> {
        let (lo, hi) = self.free_span();
        self.found.clear();
        self.index.overlapping(lo, hi, &mut self.found);
        let cap = FIXED_MAX_WINDOWS * self.params.max_window;
        // The band: twice the free set's depth below the makespan.
        let floor = if self.found.len() > cap + self.free.len() { h.saturating_sub(m - h) } else { 0 };
        self.fixed.clear();
        for &j in &self.found {
            if self.mark[j] != self.epoch && self.offsets[j] + self.buffers[j].size > floor {
                self.fixed.push(j);
            }
        }
        (self.fixed.len() <= cap).then_some(floor)
    }

    /// Slab move (see the module doc): new offsets for the free set, or `None` when the exact
    /// search could not keep it below `m` within its budget; with the free set's size.
    fn slab_move(&mut self, star: u32, m: u64, thickness: u64) -> (Option<Vec<(usize, u64)>>, usize) {
        let buffers = self.buffers;
        let Some(mut free) = free_set(buffers, &self.by_top, star, m.saturating_sub(thickness), self.params.max_free, self.params.deadline) else {
            return (None, 0);
        };
        free.sort_unstable();
        let size = free.len();
        self.free = free;
        self.mark_free();
        let Some(band) = self.collect_fixed(m.saturating_sub(thickness), m) else {
            return (None, size);
        };
        // Floors: the highest top of fixed buffers alive during each free buffer's lifetime,
        // and at least the band floor.
        let mut floors = vec![band; self.free.len()];
        let mut by_lower: Vec<usize> = (0..self.free.len()).collect();
        by_lower.sort_unstable_by_key(|&k| buffers[self.free[k]].lower);
        for (n, &j) in self.fixed.iter().enumerate() {
            // |fixed| × |free| steps at worst: the clock is read every 1024 fixed buffers.
            if n % 1024 == 1023 && Instant::now() >= self.params.deadline {
                return (None, size);
            }
            let (b, top) = (&buffers[j], self.offsets[j] + buffers[j].size);
            // Free buffers starting before b ends; of those, the ones ending after b starts.
            let end = by_lower.partition_point(|&k| buffers[self.free[k]].lower < b.upper);
            for &k in &by_lower[..end] {
                if buffers[self.free[k]].upper > b.lower {
                    floors[k] = floors[k].max(top);
                }
            }
        }
        let sub: Vec<Buffer> = self.free.iter().map(|&i| buffers[i]).collect();
        let Some(problem) = exact::Problem::new(&sub, u64::MAX) else {
            return (None, size);
        };
        let problem = problem.with_floors(floors);
        let strategies = Strategy::portfolio();
        let strategy = strategies[self.rng.below(strategies.len() as u64) as usize];
        let limits = Limits { deadline: Some(self.params.deadline), nodes: self.params.nodes, cancel: self.params.cancel.as_deref(), ..Limits::default() };
        match problem.decide(m - 1, strategy, limits).0 {
            Decision::Found(new) => (Some(self.free.iter().copied().zip(new).collect()), size),
            Decision::Infeasible | Decision::Unknown => (None, size),
        }
    }

    /// Window move: the buffers alive in a time window around a random instant of `star`'s
    /// lifetime whose top lies above a random depth below the makespan are taken out and put
    /// back greedily against all the others (so holes anywhere under them can be used), in a
    /// random one of several orders. Kept when the free set no longer reaches `m`, or when it
    /// still does with fewer buffers there or, at equal count, with no larger sum of tops (a
    /// sideways step that lets the search drift into shapes a later move can lower).
    fn window_move(&mut self, star: u32, m: u64) -> Option<Vec<(usize, u64)>> {
        let buffers = self.buffers;
        let b = buffers[star as usize];
        let t = b.lower + self.rng.below(b.length());
        let half = (b.length() / 2).max(1) << self.rng.below(4);
        // Depth: a few times the star's size (a thin slab) or a fraction of the makespan down
        // to all of it (a whole column: compaction into holes far below).
        let depth = if self.rng.below(2) == 0 { b.size.saturating_mul(1 << self.rng.below(8)) } else { m >> self.rng.below(8) };
        let h = m.saturating_sub(depth);
        self.found.clear();
        self.index.overlapping(t.saturating_sub(half), t.saturating_add(half).saturating_add(1), &mut self.found);
        self.free.clear();
        for &i in &self.found {
            if self.offsets[i] + buffers[i].size > h {
                self.free.push(i);
            }
        }
        if self.free.len() > self.params.max_window {
            return None;
        }
        self.mark_free();
        let band = self.collect_fixed(h, m)?;
        // Below a band floor one buffer stands for everything left in place: live throughout
        // the free set's span, from 0 up to the floor.
        let mut local: Vec<Buffer> = self.fixed.iter().chain(&self.free).map(|&i| buffers[i]).collect();
        let nfix = self.fixed.len() + (band > 0) as usize;
        let mut occ_offsets: Vec<u64> = self.fixed.iter().map(|&j| self.offsets[j]).collect();
        if band > 0 {
            let (lo, hi) = self.free_span();
            local.insert(self.fixed.len(), Buffer::new(0, lo, hi, band));
            occ_offsets.push(0);
        }
        let mut occ = Occupancy::new(&local);
        for (k, &o) in occ_offsets.iter().enumerate() {
            occ.insert(k, o);
        }
        let nf = self.free.len();
        let mut order: Vec<usize> = (0..nf).collect();
        let kind = self.rng.below(4);
        match kind {
            0 => order.sort_by_key(|&k| (self.offsets[self.free[k]], k)),
            1 | 2 => {
                // Size (1) or area (2) order, each key scaled by a random factor in [1, 2):
                // nearby keys swap places.
                let keys: Vec<u128> = self
                    .free
                    .iter()
                    .map(|&i| {
                        let b = &buffers[i];
                        let weight = if kind == 1 { b.size as u128 } else { b.size as u128 * b.length() as u128 };
                        weight * (1024 + self.rng.below(1024)) as u128
                    })
                    .collect();
                order.sort_by_key(|&k| (std::cmp::Reverse(keys[k]), k));
            }
            _ => self.rng.shuffle(&mut order),
        }
        let best = self.rng.below(4) == 0;
        let mut placed = vec![0u64; nf];
        for &k in &order {
            let at = nfix + k;
            placed[k] = if best { occ.tightest_fit(at) } else { occ.lowest_fit(at) };
            if placed[k] + buffers[self.free[k]].size > m {
                return None;
            }
            occ.insert(at, placed[k]);
        }
        let score = |tops: &mut dyn Iterator<Item = u64>| {
            let (mut at_m, mut sum) = (0u64, 0u128);
            for top in tops {
                at_m += (top == m) as u64;
                sum += top as u128;
            }
            (at_m, sum)
        };
        let old = score(&mut self.free.iter().map(|&i| self.offsets[i] + buffers[i].size));
        let new = score(&mut self.free.iter().zip(&placed).map(|(&i, &o)| o + buffers[i].size));
        (new <= old).then(|| self.free.iter().copied().zip(placed).collect())
    }
}

/// The free set around `star`: buffers with top above `h`, grown from `star` by layers of
/// overlapping lifetimes (each layer adds the buffers above `h` alive during the previous
/// layer's time span) while it stays within `max` buffers; at most the whole connected slab.
/// `None` when `star` itself is not above `h`, or once `deadline` passes (each layer is a pass
/// over every buffer above `h`: on a flat component, nearly all of them).
fn free_set(buffers: &[Buffer], by_top: &BTreeSet<(u64, u32)>, star: u32, h: u64, max: usize, deadline: Instant) -> Option<Vec<usize>> {
    if by_top.range((h + 1, 0)..).all(|&(_, i)| i != star) {
        return None;
    }
    let above: Vec<usize> = by_top.range((h + 1, 0)..).map(|&(_, i)| i as usize).collect();
    let s = &buffers[star as usize];
    let (mut lo, mut hi) = (s.lower, s.upper);
    let mut layer = vec![star as usize];
    loop {
        if Instant::now() >= deadline {
            return None;
        }
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
    fn a_patient_search_ends_only_at_its_deadline_or_target_and_stays_valid() {
        for (k, &kind) in heaplab_gen::Kind::ALL.iter().enumerate() {
            let inst = heaplab_gen::generate(kind, 600, 9 + k as u64);
            let bs = &inst.buffers;
            let mut off = Heuristic::STANDARD[0].run(bs);
            let before = validate(bs, &off).makespan;
            let deadline = Instant::now() + std::time::Duration::from_millis(150);
            let params = ImproveParams { patient: true, ..ImproveParams::new(deadline, 3, max_load(bs)) };
            let st = improve(bs, &mut off, &params);
            let v = validate(bs, &off);
            assert!(v.is_valid(), "{}: {}", kind.name(), v.describe(bs, &off));
            assert!(v.makespan <= before && v.makespan == st.end, "{}", kind.name());
            assert!(Instant::now() >= deadline || st.end <= max_load(bs), "{}: returned early, stuck at {}", kind.name(), st.end);
        }
    }

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
    fn moves_under_a_tall_column_work_in_a_band_and_stay_valid() {
        // 400 unit buffers live throughout, stacked, under two short ones placed one above the
        // other although they never meet: more left-in-place buffers than a move looks at
        // (max_window 10: 160), so the move works in the band above 400 and still drops B.
        let mut bs: Vec<Buffer> = (0..400).map(|i| Buffer::new(i, 0, 100, 1)).collect();
        bs.push(Buffer::new(400, 0, 50, 10));
        bs.push(Buffer::new(401, 50, 100, 10));
        let mut off: Vec<u64> = (0..400).collect();
        off.extend([400, 410]);
        let far = Instant::now() + std::time::Duration::from_secs(3600);
        let params = ImproveParams { max_window: 10, ..ImproveParams::new(far, 1, max_load(&bs)) };
        let st = improve(&bs, &mut off, &params);
        let v = validate(&bs, &off);
        assert!(v.is_valid(), "{}", v.describe(&bs, &off));
        assert_eq!((st.start, st.end), (420, 410));
        // Adversarial shapes with the band on nearly every move: valid, never higher.
        for (k, &kind) in heaplab_gen::Kind::ALL.iter().enumerate() {
            let inst = heaplab_gen::generate(kind, 3000, 21 + k as u64);
            let bs = &inst.buffers;
            let mut off = Heuristic { order: crate::rules::Order::Start, fit: crate::rules::Fit::First }.run(bs);
            let before = validate(bs, &off).makespan;
            let deadline = Instant::now() + std::time::Duration::from_millis(200);
            let params = ImproveParams { max_window: 4, patient: true, ..ImproveParams::new(deadline, 7, max_load(bs)) };
            let st = improve(bs, &mut off, &params);
            let v = validate(bs, &off);
            assert!(v.is_valid(), "{}: {}", kind.name(), v.describe(bs, &off));
            assert!(v.makespan <= before && v.makespan == st.end, "{}", kind.name());
        }
    }

    #[test]
    fn free_set_is_the_connected_slab() {
        // Three buffers above h = 5: two overlapping in time, one apart.
        let bs = vec![Buffer::new(0, 0, 4, 3), Buffer::new(1, 2, 6, 3), Buffer::new(2, 8, 9, 9), Buffer::new(3, 0, 9, 2)];
        let off: Vec<u64> = vec![3, 6, 0, 0];
        let by_top: BTreeSet<(u64, u32)> = (0..4).map(|i| (off[i] + bs[i].size, i as u32)).collect();
        let far = Instant::now() + std::time::Duration::from_secs(3600);
        let mut f = free_set(&bs, &by_top, 1, 5, 10, far).unwrap();
        f.sort();
        assert_eq!(f, vec![0, 1]);
        assert_eq!(free_set(&bs, &by_top, 1, 5, 1, far).unwrap(), vec![1], "capped to the first layer");
        assert_eq!(free_set(&bs, &by_top, 2, 5, 10, far).unwrap(), vec![2]);
        assert!(free_set(&bs, &by_top, 3, 5, 10, far).is_none());
    }
}
