//! Critical windows: plan the stretches of time where the makespan is decided as instances of
//! their own, then place everything else around them.
//!
//! On a large instance the load reaches its maximum in a few short stretches of time, and a
//! greedy placement loses its bytes there: on 10^5 random buffers first-fit by size ends 2.8%
//! above the max load, boxing 1.9–2.4%, both at the global peak, while the 631 buffers live
//! within 150 ticks of it, planned alone, pack to exactly the max load in 20 ms. So:
//!
//! 1. Take the instant of maximum load (later rounds: the instant of maximum load during the
//!    lifetime of the buffer that ended highest in the last round's fill).
//! 2. Open a *window* `[t − w, t + 1 + w)` around it, the widest holding at most
//!    `clamp(2 · live(t), 256, max_window)` buffers (never less than the column at `t`).
//! 3. Windows whose buffers conflict are merged into one window spanning both, so every buffer
//!    belongs to one window at most and buffers of different windows never overlap in time.
//! 4. Each window is planned alone by the caller's `solve` (the driver's own pipeline: exact
//!    search, heuristics, improvement) on its buffers with lifetimes clipped to the window.
//!    Clipping is safe: buffers live in the same window conflict exactly when their clipped
//!    lifetimes do (three pairwise-intersecting intervals share a point), so a valid plan of the
//!    window is valid for its buffers' real lifetimes. Plans are kept while a window is unchanged.
//! 5. *Fill*: window buffers at their planned offsets, every other buffer by first-fit in size
//!    order around them ([`Occupancy`] sees all placed buffers, so holes under and between the
//!    windows are used). A fill stops as soon as a buffer ends above the best makespan known
//!    (its own, or a rival's: the driver runs the windows beside its heuristics on large
//!    components and posts their makespans to [`WindowParams::rival`]).
//!
//! It stops at the deadline, at the target (reached by itself or the rival), when the buffer
//! that ended highest belongs to a window (then the window's own plan decides and another window
//! cannot help), or after two rounds in a row that did not improve. The windows spend effort
//! where the makespan is decided: the rest of the instance only has to stay below them.

use crate::heuristics::{self, Order};
use crate::occupancy::Occupancy;
use crate::timeline::TimeIndex;
use heaplab_model::Buffer;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// Limits of [`plan_windows`].
#[derive(Clone, Debug)]
pub struct WindowParams {
    /// Stop at this instant (a round in progress finishes its fill first).
    pub deadline: Instant,
    /// The makespan to stop at: a proven lower bound, or a user's capacity above it.
    pub target: u64,
    /// Makespan to beat (the best placement known): fills abandon above it.
    pub bound: u64,
    /// Largest window, in buffers, unless the column at its centre alone is larger.
    pub max_window: usize,
    /// The best makespan found meanwhile by another thread (the driver's heuristics, when the
    /// windows run beside them): fills abandon above it too, and the search stops once it
    /// reaches `target`, so a heuristic that solves the instance does not wait for the windows.
    pub rival: Option<Arc<AtomicU64>>,
    /// Set by the caller to stop before the next round, as if the deadline had passed
    /// ([`crate::PlanOptions::cancel`]).
    pub cancel: Option<Arc<AtomicBool>>,
}

impl WindowParams {
    /// Defaults: windows of up to 4,000 buffers.
    pub fn new(deadline: Instant, target: u64, bound: u64) -> Self {
        WindowParams { deadline, target, bound, max_window: 4000, rival: None, cancel: None }
    }
}

/// What [`plan_windows`] found.
#[derive(Clone, Debug, Default)]
pub struct WindowOutcome {
    /// The best placement, when one beat `bound`.
    pub offsets: Option<Vec<u64>>,
    /// Its makespan (`bound` when none beat it).
    pub makespan: u64,
    /// Fills run.
    pub rounds: usize,
    /// Windows at the end (after merging).
    pub windows: usize,
}

/// A time window and its buffers' plan.
struct Window {
    lo: u64,
    hi: u64,
    /// Buffers live in `[lo, hi)`, in start order.
    members: Vec<usize>,
    /// Offsets of `members` from `solve`, once planned.
    plan: Option<Vec<u64>>,
}

/// Plans `buffers` by critical windows (see the module doc). `solve(sub, until)` must return a
/// valid placement of `sub` (an instance of clipped lifetimes) and should return by `until`.
pub fn plan_windows(buffers: &[Buffer], params: &WindowParams, solve: &mut dyn FnMut(&[Buffer], Instant) -> Vec<u64>) -> WindowOutcome {
    let mut out = WindowOutcome { makespan: params.bound, ..Default::default() };
    if buffers.is_empty() {
        return out;
    }
    let index = TimeIndex::new(buffers);
    let profile = heaplab_sweep::load_profile(buffers);
    let order = heuristics::order(buffers, Order::Size);
    let mut windows: Vec<Window> = Vec::new();
    let mut in_window = vec![false; buffers.len()];
    let mut focus = peak_in(&profile, index.start(), index.end());
    let mut stale = 0;
    let rival = || params.rival.as_ref().map_or(u64::MAX, |r| r.load(Ordering::Relaxed));
    let cancelled = || params.cancel.as_ref().is_some_and(|c| c.load(Ordering::Relaxed));
    while Instant::now() < params.deadline && out.makespan > params.target && rival() > params.target && !cancelled() {
        add_window(&mut windows, open_window(&index, focus, params.max_window), &index, buffers);
        // Plan the new windows, sharing a quarter of the time left between them.
        let unplanned = windows.iter().filter(|w| w.plan.is_none()).count();
        for w in windows.iter_mut().filter(|w| w.plan.is_none()) {
            let now = Instant::now();
            let until = now + params.deadline.saturating_duration_since(now).mul_f64(0.25 / unplanned as f64);
            let sub: Vec<Buffer> = w
                .members
                .iter()
                .map(|&i| Buffer { lower: buffers[i].lower.max(w.lo), upper: buffers[i].upper.min(w.hi), ..buffers[i] })
                .collect();
            w.plan = Some(solve(&sub, until));
        }
        in_window.fill(false);
        let mut offsets = vec![0u64; buffers.len()];
        let mut occ = Occupancy::new(buffers);
        let mut windows_top = 0;
        // Both the windows' insertion and the fill, first fit by size, can cost as much as a
        // whole first-fit placement (see `WORK_PER_CLOCK_CHECK`): a round stops at the deadline.
        let mut clock = heuristics::DeadlineCheck::new(Some(params.deadline));
        let mut expired = false;
        // In address order every insertion appends to its sets instead of shifting them (a
        // window of 2.7·10^5 stacked buffers: 3.3 s in member order).
        let mut placed: Vec<(u64, usize)> =
            windows.iter().flat_map(|w| w.plan.as_deref().unwrap_or(&[]).iter().copied().zip(w.members.iter().copied())).collect();
        placed.sort_unstable();
        for (k, (o, i)) in placed.into_iter().enumerate() {
            if clock.passed(k, &occ) {
                expired = true;
                break;
            }
            offsets[i] = o;
            occ.insert(i, o);
            in_window[i] = true;
            windows_top = windows_top.max(o + buffers[i].size);
        }
        // The fill: stops at the first buffer that cannot stay below the best makespan.
        let mut highest = (windows_top, usize::MAX);
        let mut bound = out.makespan.min(rival());
        let mut complete = !expired && windows_top < bound;
        if complete {
            for (k, &i) in order.iter().enumerate() {
                let i = i as usize;
                if in_window[i] {
                    continue;
                }
                if k % 1024 == 0 {
                    bound = bound.min(rival());
                }
                if clock.passed(k, &occ) {
                    complete = false;
                    break;
                }
                let o = occ.lowest_fit(i);
                let top = o + buffers[i].size;
                if top >= bound {
                    highest = (top, i);
                    complete = false;
                    break;
                }
                offsets[i] = o;
                occ.insert(i, o);
                highest = highest.max((top, i));
            }
        }
        out.rounds += 1;
        if complete {
            out.makespan = highest.0;
            out.offsets = Some(offsets);
            stale = 0;
        } else {
            stale += 1;
        }
        // The buffer that ended highest: a window's (then its plan decides) or the next focus.
        let culprit = highest.1;
        if culprit == usize::MAX || stale >= 2 {
            break;
        }
        focus = peak_in(&profile, buffers[culprit].lower, buffers[culprit].upper);
    }
    out.windows = windows.len();
    out
}

/// The tick of maximum load in `[lo, hi)` (the first such), from a load profile as
/// [`heaplab_sweep::load_profile`] gives it.
fn peak_in(profile: &[(u64, u64)], lo: u64, hi: u64) -> u64 {
    // The step holding at `lo` starts at or before it.
    let first = profile.partition_point(|&(t, _)| t <= lo).saturating_sub(1);
    let mut best = (0u64, lo);
    for &(t, load) in profile[first..].iter().take_while(|&&(t, _)| t < hi) {
        if load > best.0 {
            best = (load, t.max(lo));
        }
    }
    best.1
}

/// The window around tick `t`: `[t − w, t + 1 + w)` for the largest `w` with at most
/// `clamp(2 · live(t), 256, max)` buffers live in it, and never less than the column at `t`.
fn open_window(index: &TimeIndex, t: u64, max: usize) -> (u64, u64) {
    let live = index.count(t, t + 1);
    let cap = (2 * live).clamp(256, max.max(256)).max(live);
    let span = index.end().saturating_sub(index.start()).max(1);
    let fits = |w: u64| index.count(t.saturating_sub(w), t.saturating_add(1).saturating_add(w)) <= cap;
    // Largest w in [0, span] with fits(w); fits(0) holds by the choice of cap.
    let (mut lo, mut hi) = (0u64, span);
    while lo < hi {
        let mid = lo + (hi - lo).div_ceil(2);
        if fits(mid) {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    (t.saturating_sub(lo), t.saturating_add(1).saturating_add(lo))
}

/// Adds window `[lo, hi)` and merges windows until no two overlap or hold conflicting buffers
/// (see the module doc); merged windows lose their plans.
fn add_window(windows: &mut Vec<Window>, (lo, hi): (u64, u64), index: &TimeIndex, buffers: &[Buffer]) {
    let members = |lo: u64, hi: u64| {
        let mut m = Vec::new();
        index.overlapping(lo, hi, &mut m);
        m
    };
    windows.push(Window { lo, hi, members: members(lo, hi), plan: None });
    windows.sort_by_key(|w| (w.lo, w.hi));
    let mut merged: Vec<Window> = Vec::with_capacity(windows.len());
    for w in windows.drain(..) {
        if let Some(last) = merged.last_mut() {
            // Buffers of `last` end by its latest upper; `w`'s start at its earliest lower. With
            // `last` before `w`, some pair conflicts exactly when that lower is before that upper.
            let last_end = last.members.iter().map(|&i| buffers[i].upper).max().unwrap_or(last.hi);
            let w_start = w.members.iter().map(|&i| buffers[i].lower).min().unwrap_or(w.lo);
            if w.lo < last.hi || w_start < last_end {
                let (lo, hi) = (last.lo.min(w.lo), last.hi.max(w.hi));
                if (lo, hi) != (last.lo, last.hi) {
                    *last = Window { lo, hi, members: members(lo, hi), plan: None };
                }
                continue;
            }
        }
        merged.push(w);
    }
    *windows = merged;
}

#[cfg(test)]
mod tests {
    use super::*;
    use heaplab_sweep::{max_load, validate};
    use std::time::Duration;

    /// A stand-in for the driver's pipeline: first-fit by size.
    fn first_fit(sub: &[Buffer], _: Instant) -> Vec<u64> {
        heuristics::Heuristic::STANDARD[0].run(sub)
    }

    #[test]
    fn every_fill_is_valid_and_beats_the_bound_or_reports_none() {
        for (k, &kind) in heaplab_gen::Kind::ALL.iter().enumerate() {
            for n in [1usize, 2, 50, 600, 3000] {
                let inst = heaplab_gen::generate(kind, n, 11 + k as u64);
                let bs = &inst.buffers;
                let bound = validate(bs, &heuristics::Heuristic::STANDARD[0].run(bs)).makespan + 1;
                let params = WindowParams { max_window: 64, ..WindowParams::new(Instant::now() + Duration::from_millis(500), max_load(bs), bound) };
                let out = plan_windows(bs, &params, &mut first_fit);
                match &out.offsets {
                    Some(off) => {
                        let v = validate(bs, off);
                        assert!(v.is_valid(), "{} n={n}: {}", kind.name(), v.describe(bs, off));
                        assert_eq!(v.makespan, out.makespan);
                        assert!(out.makespan < bound);
                    }
                    None => assert_eq!(out.makespan, bound),
                }
            }
        }
    }

    #[test]
    fn a_rival_stops_the_search_and_bounds_its_fills() {
        let inst = heaplab_gen::generate(heaplab_gen::Kind::Random, 3000, 5);
        let bs = &inst.buffers;
        let greedy = validate(bs, &first_fit(bs, Instant::now())).makespan;
        let params = |rival: u64| WindowParams {
            max_window: 64,
            rival: Some(Arc::new(AtomicU64::new(rival))),
            ..WindowParams::new(Instant::now() + Duration::from_secs(5), max_load(bs), u64::MAX)
        };
        // A rival at the target: nothing left to do, not even one fill.
        let out = plan_windows(bs, &params(max_load(bs)), &mut first_fit);
        assert_eq!((out.rounds, out.offsets.is_none()), (0, true));
        // A rival at the greedy makespan: every fill must beat it (a round that does not is
        // abandoned), so whatever comes back is below it.
        let out = plan_windows(bs, &params(greedy), &mut first_fit);
        assert!(out.rounds >= 1);
        if let Some(off) = &out.offsets {
            let v = validate(bs, off);
            assert!(v.is_valid() && v.makespan < greedy, "{}", v.describe(bs, off));
        }
    }

    #[test]
    fn windows_of_conflicting_buffers_are_merged() {
        // Buffer 1 spans both windows' centres: one window must hold all of them.
        let bs = vec![Buffer::new(0, 0, 2, 5), Buffer::new(1, 1, 9, 1), Buffer::new(2, 8, 10, 5), Buffer::new(3, 20, 22, 1)];
        let index = TimeIndex::new(&bs);
        let mut ws = Vec::new();
        add_window(&mut ws, (0, 2), &index, &bs);
        add_window(&mut ws, (20, 21), &index, &bs);
        assert_eq!(ws.len(), 2, "far apart and sharing no buffer");
        add_window(&mut ws, (8, 9), &index, &bs);
        assert_eq!(ws.len(), 2);
        assert_eq!((ws[0].lo, ws[0].hi), (0, 9));
        assert_eq!(ws[0].members, vec![0, 1, 2]);
    }

    #[test]
    fn the_window_is_the_widest_under_the_cap_and_holds_the_column() {
        // 300 short buffers one after another (one live per tick) and one long one.
        let mut bs: Vec<Buffer> = (0..300).map(|i| Buffer::new(i, i, i + 1, 1)).collect();
        bs.push(Buffer::new(300, 0, 300, 1));
        let index = TimeIndex::new(&bs);
        let (lo, hi) = open_window(&index, 150, 4000);
        assert!(index.count(lo, hi) <= 256 && index.count(lo.saturating_sub(1), hi + 1) > 256);
        assert!(lo <= 150 && 150 < hi);
        assert_eq!(peak_in(&heaplab_sweep::load_profile(&bs), 10, 20), 10);
        // A column larger than the cap is still taken whole: 400 buffers live over [0, 10).
        let bs: Vec<Buffer> = (0..400).map(|i| Buffer::new(i, 0, 10, 1)).collect();
        let index = TimeIndex::new(&bs);
        let (lo, hi) = open_window(&index, 5, 256);
        assert_eq!(index.count(lo, hi), 400);
        assert!(lo <= 5 && 5 < hi);
    }
}
