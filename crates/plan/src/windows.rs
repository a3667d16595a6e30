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
//! cannot help), or after [`WindowParams::fill_patience`] rounds in a row without a better
//! complete fill: the chase from window to window often takes several rounds whose fills stop
//! early (cheaply) before one completes lower. The windows spend effort where the makespan is
//! decided: the rest of the instance only has to stay below them.
//!
//! A fill costs one first-fit placement of the whole instance, seconds from 10^6 buffers on.
//! [`improve_windows`] is the local form for that scale: it starts from a complete placement,
//! and each round plans one window around a buffer at the makespan as above, moves the
//! window's buffers to their new offsets and re-places only the buffers outside it that now
//! collide with them, or a wider ring of buffers around it (first fit by size, against an index
//! of the buffers live around them), so a round costs in proportion to the window, not to the
//! instance, and many rounds fit in the time one fill takes.

use crate::heuristics::{self, Order};
use crate::occupancy::Occupancy;
use crate::timeline::TimeIndex;
use crate::rng::Rng;
use heaplab_model::Buffer;
use std::collections::BTreeSet;
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
    /// How far below the max load (a share of it) a stretch of time may peak and still get a
    /// window in the first round; 0 opens only the one at the maximum. Where a fill costs
    /// seconds only one or two rounds fit, so the windows must cover every stretch the fill
    /// could not keep below the target from the start.
    pub depth: f64,
    /// Most buffers the first round's windows may hold together, as a share of the instance.
    pub depth_share: f64,
    /// Share of the time left that the windows of a round are planned in together, the rest
    /// going to the fill.
    pub plan_share: f64,
    /// Largest max load, as a share of the instance's, of the *tail*: the smallest buffers,
    /// which the fill places by first fit only for a quarter of the time the rest of the fill
    /// took, then stacks above everything by a start-order sweep (0: no tail). In size order the second
    /// half of first fit's queries are for the smallest buffers and cost most of its time
    /// (each meets every buffer placed before it), while on log-uniform sizes that half weighs
    /// a thousandth of the load.
    pub tail_load: f64,
    /// Rounds in a row without a kept move after which [`improve_windows`] gives up.
    pub patience: usize,
    /// Rounds in a row without a better complete fill after which [`plan_windows`] gives up.
    pub fill_patience: usize,
}

impl WindowParams {
    /// Defaults: windows of up to 4,000 buffers, one window in the first round.
    pub fn new(deadline: Instant, target: u64, bound: u64) -> Self {
        WindowParams { deadline, target, bound, max_window: 4000, rival: None, cancel: None, depth: 0.0, depth_share: 0.25, plan_share: 0.25, tail_load: 0.0, patience: LOCAL_PATIENCE, fill_patience: FILL_PATIENCE }
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
    let tail_from = tail_start(buffers, &order, params.tail_load);
    let mut windows: Vec<Window> = Vec::new();
    let mut in_window = vec![false; buffers.len()];
    let mut focus = peak_in(&profile, index.start(), index.end());
    for t in stretch_peaks(&profile, params.depth) {
        if windows.iter().map(|w| w.members.len()).sum::<usize>() as f64 >= params.depth_share * buffers.len() as f64 {
            break;
        }
        add_window(&mut windows, open_window(&index, t, params.max_window), &index, buffers);
    }
    let mut stale = 0;
    let rival = || params.rival.as_ref().map_or(u64::MAX, |r| r.load(Ordering::Relaxed));
    let cancelled = || params.cancel.as_ref().is_some_and(|c| c.load(Ordering::Relaxed));
    'search: while Instant::now() < params.deadline && out.makespan > params.target && rival() > params.target && !cancelled() {
        add_window(&mut windows, open_window(&index, focus, params.max_window), &index, buffers);
        // Plan the new windows, sharing `plan_share` of the time left between them.
        let unplanned = windows.iter().filter(|w| w.plan.is_none()).count();
        for w in windows.iter_mut().filter(|w| w.plan.is_none()) {
            let now = Instant::now();
            let until = now + params.deadline.saturating_duration_since(now).mul_f64(params.plan_share / unplanned as f64);
            w.plan = Some(solve(&clipped(buffers, &w.members, w.lo, w.hi), until));
            // A rival that reached the target meanwhile ends the search here.
            if rival() <= params.target {
                break 'search;
            }
        }
        in_window.fill(false);
        let mut offsets = vec![0u64; buffers.len()];
        let mut occ = Occupancy::new(buffers);
        let mut windows_top = 0;
        // Both the windows' insertion and the fill, first fit by size, can cost as much as a
        // whole first-fit placement (see `WORK_PER_CLOCK_CHECK`): a round stops at the deadline.
        let mut clock = heuristics::DeadlineCheck::new(Some(params.deadline)).or_cancelled(params.cancel.as_deref());
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
        // The tail is placed by first fit too for a quarter of the time the rest of the fill
        // took (where first fit is cheap, as on traced heaps, all of it), the remainder stacked.
        let fill_began = Instant::now();
        let mut tail_deadline = None;
        // Where the stacked part of the order begins (nothing stacked unless the tail's time runs out).
        let mut stacked_from = order.len();
        if complete {
            for (k, &i) in order.iter().enumerate() {
                if k >= tail_from {
                    let end = *tail_deadline.get_or_insert_with(|| Instant::now() + fill_began.elapsed() / TAIL_TIME_DIVISOR);
                    if k % 256 == 0 && Instant::now() >= end {
                        stacked_from = k;
                        break;
                    }
                }
                let i = i as usize;
                if in_window[i] {
                    continue;
                }
                if k % 1024 == 0 {
                    bound = bound.min(rival());
                    // The rival is done: this fill could not beat it.
                    if bound <= params.target {
                        complete = false;
                        break;
                    }
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
        // The tail, outside the windows, above everything placed.
        let mut makespan = highest.0;
        if complete && stacked_from < order.len() {
            let tail: Vec<usize> = order[stacked_from..].iter().map(|&i| i as usize).filter(|&i| !in_window[i]).collect();
            let sub: Vec<Buffer> = tail.iter().map(|&i| buffers[i]).collect();
            let base = heaplab_model::align_up(highest.0, sub.iter().map(|b| b.align_log2).max().unwrap_or(0)).unwrap_or(u64::MAX);
            for (&i, o) in tail.iter().zip(crate::online::place_by_start(&sub, heuristics::Fit::First)) {
                offsets[i] = base.saturating_add(o);
                makespan = makespan.max(offsets[i].saturating_add(buffers[i].size));
            }
            complete = makespan < bound;
        }
        out.rounds += 1;
        if complete {
            // Another search's fills (the driver may run two chases) stop above it too.
            if let Some(r) = &params.rival {
                r.fetch_min(makespan, Ordering::Relaxed);
            }
            out.makespan = makespan;
            out.offsets = Some(offsets);
            stale = 0;
        } else {
            stale += 1;
        }
        // The buffer that ended highest: a window's (then its plan decides) or the next focus.
        let culprit = highest.1;
        if culprit == usize::MAX || stale >= params.fill_patience {
            break;
        }
        focus = peak_in(&profile, buffers[culprit].lower, buffers[culprit].upper);
    }
    out.windows = windows.len();
    out
}

/// What [`improve_windows`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LocalOutcome {
    /// Windows planned.
    pub rounds: usize,
    /// Of those, how many were kept (their buffers and the colliding ones moved).
    pub moves: usize,
    /// Makespan before.
    pub start: u64,
    /// Makespan after.
    pub end: u64,
}

/// [`WindowParams::fill_patience`] by default (see the module doc). Two gave up where the chase
/// had barely begun (docs/planning.md).
pub const FILL_PATIENCE: usize = 8;

/// Rounds in a row without a kept move after which [`improve_windows`] gives up by default
/// ([`WindowParams::patience`]): every peak buffer has then been tried a few times, from
/// different instants of its lifetime.
pub const LOCAL_PATIENCE: usize = 48;

/// Most buffers a ring and its surroundings may hold, in windows ([`WindowParams::max_window`]):
/// on a traced heap long-lived buffers span the whole run, and a ring around one would be the
/// whole instance, each round then costing a full placement.
const LOCAL_MAX_WINDOWS: usize = 16;

/// A local window holding more than this many times the window size (its centre's column
/// alone) is not planned.
const WINDOW_COLUMN_SLACK: usize = 4;

/// Most pairs (window buffer, buffer around it) a round compares for collisions.
const LOCAL_MAX_PAIRS: usize = 1 << 24;

/// Local critical windows (see the module doc): improves `offsets`, a valid placement of
/// `buffers`, in place, until the deadline, the target, or [`WindowParams::patience`] rounds in a row
/// without a kept move. `solve` is as for [`plan_windows`]; `seed` picks the peak buffers and
/// instants.
///
/// A round: pick a buffer at the makespan `m` and the instant of maximum load in its lifetime
/// (later tries of the same buffer: a random instant of it), open the window there as
/// [`plan_windows`] does, and plan its buffers alone. Their new offsets are kept when every
/// buffer moved ends below `m`, the buffers moved being the window's and a *ring* around it,
/// re-placed by first fit (largest first) against every buffer live during their lifetimes:
/// first only the buffers outside the window that collide with its new offsets; failing that,
/// every buffer live during the window buffers' lifetimes; then also those live up to one and
/// four window widths further out (a window planned alone ignores its surroundings, and the
/// buffers at its edge often fit only once their own neighbours move too). The window holds
/// every buffer live in it, so a buffer outside it that conflicts with a window buffer is live
/// during that buffer's lifetime: checking those for collisions, and re-placing against
/// everything live around the re-placed ones, keeps the placement valid. A kept round takes
/// one buffer at `m` below it and lifts none to it, so the makespan never rises and drops once
/// no buffer is left at it.
pub fn improve_windows(
    buffers: &[Buffer],
    offsets: &mut [u64],
    params: &WindowParams,
    seed: u64,
    solve: &mut dyn FnMut(&[Buffer], Instant) -> Vec<u64>,
) -> LocalOutcome {
    let top = |i: usize, o: &[u64]| o[i] + buffers[i].size;
    let mut by_top = Tops::new(buffers, offsets, params.target);
    let mut out = LocalOutcome { start: by_top.makespan(), end: by_top.makespan(), ..Default::default() };
    if buffers.is_empty() {
        return out;
    }
    let index = TimeIndex::new(buffers);
    let mut rng = Rng::new(seed);
    let mut round = LocalRound::new(buffers.len(), params.deadline);
    // Tries per peak buffer since the makespan last dropped: the first try centres the window
    // on the buffer's own peak of load, later ones on random instants of its lifetime.
    let mut tries: std::collections::HashMap<u32, u32> = std::collections::HashMap::new();
    let mut stale = 0;
    let cancelled = || params.cancel.as_ref().is_some_and(|c| c.load(Ordering::Relaxed));
    loop {
        let m = by_top.makespan();
        out.end = m;
        if Instant::now() >= params.deadline || m <= params.target || stale >= params.patience || cancelled() {
            break;
        }
        // A random buffer at the makespan (a bounded look: there may be many).
        let peaks: Vec<u32> = by_top.set.range((m, 0)..).take(64).map(|&(_, i)| i).collect();
        let star = peaks[rng.below(peaks.len() as u64) as usize];
        let b = buffers[star as usize];
        let seen = tries.entry(star).or_insert(0);
        let first = (*seen == 0).then(|| local_peak(buffers, &index, b.lower, b.upper, LOCAL_MAX_WINDOWS * params.max_window, &mut round.found)).flatten();
        let t = first.unwrap_or_else(|| b.lower + rng.below(b.length().max(1)));
        *seen += 1;
        let (lo, hi) = open_window(&index, t, params.max_window);
        // A window is never narrower than the column at its centre; where that column alone
        // is far above the window size (a traced heap of 3.5·10^6 buffers had 10^6 live at
        // every instant) the window's plan would take the whole stage: the round fails at once.
        if index.count(lo, hi) > WINDOW_COLUMN_SLACK * params.max_window {
            out.rounds += 1;
            stale += 1;
            continue;
        }
        round.members.clear();
        index.overlapping(lo, hi, &mut round.members);
        let sub = clipped(buffers, &round.members, lo, hi);
        // An eighth of the time left per window, at most half a second: rounds should be many.
        let now = Instant::now();
        let until = now + params.deadline.saturating_duration_since(now).div_f64(8.0).min(std::time::Duration::from_millis(500));
        let plan = solve(&sub, until);
        out.rounds += 1;
        // Rings of growing width (see above): each costs more than the last.
        let width = hi - lo;
        let mut moved = None;
        for ring in [None, Some(0), Some(width), Some(4 * width)] {
            moved = round.relocate(buffers, offsets, &index, &plan, m, ring);
            if moved.is_some() || Instant::now() >= params.deadline {
                break;
            }
        }
        match moved {
            Some(moves) => {
                for (i, o) in moves {
                    let before = top(i, offsets);
                    offsets[i] = o;
                    by_top.moved(i, before, top(i, offsets));
                }
                by_top.refill(buffers, offsets, params.target);
                out.moves += 1;
                stale = 0;
                if by_top.makespan() < m {
                    tries.clear();
                }
            }
            None => stale += 1,
        }
    }
    out
}

/// The reusable lists of one [`improve_windows`] round.
struct LocalRound {
    /// The window's buffers, in start order.
    members: Vec<usize>,
    /// `mark[i] == epoch`: buffer `i` is in the window; `epoch + 1`: it is being re-placed.
    mark: Vec<u32>,
    epoch: u32,
    found: Vec<usize>,
    /// Re-placing stops here (the search's deadline).
    deadline: Instant,
}

impl LocalRound {
    fn new(n: usize, deadline: Instant) -> Self {
        LocalRound { members: Vec::new(), mark: vec![0; n], epoch: 0, found: Vec::new(), deadline }
    }

    /// The moves of one round: the window's buffers (`self.members`) to `plan`, and the ring
    /// re-placed by first fit: the buffers outside the window that collide with their new
    /// offsets (`ring` `None`), or all those live within `ring` ticks of the window buffers'
    /// span. `None` when a buffer moved would end at `m` or above, or the deadline passed while
    /// re-placing.
    fn relocate(&mut self, buffers: &[Buffer], offsets: &[u64], index: &TimeIndex, plan: &[u64], m: u64, ring: Option<u64>) -> Option<Vec<(usize, u64)>> {
        let members = &self.members;
        if members.iter().zip(plan).any(|(&i, &o)| o + buffers[i].size >= m) {
            return None;
        }
        self.epoch = self.epoch.wrapping_add(2);
        if self.epoch < 2 {
            self.mark.fill(0);
            self.epoch = 2;
        }
        let (window, moving) = (self.epoch, self.epoch + 1);
        for &i in members {
            self.mark[i] = window;
        }
        // Every buffer outside the window that conflicts with a window buffer lives during the
        // window buffers' span: check those against the window's new offsets.
        let span = |set: &mut dyn Iterator<Item = usize>| set.fold((u64::MAX, 0), |(lo, hi), i| (lo.min(buffers[i].lower), hi.max(buffers[i].upper)));
        let (lo, hi) = span(&mut members.iter().copied());
        let all = ring.is_some();
        let w = ring.unwrap_or(0);
        let cap = LOCAL_MAX_WINDOWS * members.len().max(256);
        if index.count(lo.saturating_sub(w), hi.saturating_add(w)) > cap {
            return None;
        }
        self.found.clear();
        index.overlapping(lo.saturating_sub(w), hi.saturating_add(w), &mut self.found);
        // Window buffers (lower, upper, offset, top) by start, and the same by offset, for the
        // collision checks: a buffer outside is checked against those that may share its time
        // or those that may share its addresses, whichever are fewer (on 10^7 random buffers
        // nearly every window buffer shares the time of every buffer around it, few its
        // addresses).
        let by_start: Vec<(u64, u64, u64, u64)> =
            members.iter().zip(plan).map(|(&i, &o)| (buffers[i].lower, buffers[i].upper, o, o + buffers[i].size)).collect();
        let mut by_offset = by_start.clone();
        by_offset.sort_unstable_by_key(|p| (p.2, p.3));
        let longest = by_start.iter().map(|p| p.1 - p.0).max().unwrap_or(0);
        let tallest = by_start.iter().map(|p| p.3 - p.2).max().unwrap_or(0);
        let mut colliders: Vec<usize> = Vec::new();
        let mut pairs = 0;
        for &j in &self.found {
            if self.mark[j] == window {
                continue;
            }
            if !all {
                let (b, o) = (&buffers[j], offsets[j]);
                // Window buffers alive with `j` start in `[b.lower − longest, b.upper)`; those
                // sharing its addresses are placed in `(o − tallest, o + size)`.
                let in_time = by_start.partition_point(|p| p.0 + longest <= b.lower)..by_start.partition_point(|p| p.0 < b.upper);
                let in_space = by_offset.partition_point(|p| p.2 + tallest <= o)..by_offset.partition_point(|p| p.2 < o + b.size);
                let near = if in_time.len() <= in_space.len() { &by_start[in_time] } else { &by_offset[in_space] };
                pairs += near.len();
                if pairs > LOCAL_MAX_PAIRS {
                    return None;
                }
                if !near.iter().any(|p| p.0 < b.upper && b.lower < p.1 && p.2 < o + b.size && o < p.3) {
                    continue;
                }
            }
            colliders.push(j);
            self.mark[j] = moving;
        }
        let mut moves: Vec<(usize, u64)> = members.iter().copied().zip(plan.iter().copied()).collect();
        if colliders.is_empty() {
            return Some(moves);
        }
        // Re-place the colliders against everything live during their lifetimes: the window
        // at its new offsets, the rest where it is.
        let (lo, hi) = span(&mut colliders.iter().copied());
        if index.count(lo, hi) > cap {
            return None;
        }
        self.found.clear();
        index.overlapping(lo, hi, &mut self.found);
        let fixed: Vec<usize> = self.found.iter().copied().filter(|&j| self.mark[j] != moving).collect();
        let local: Vec<Buffer> = fixed.iter().chain(&colliders).map(|&i| buffers[i]).collect();
        let at = |j: usize| if self.mark[j] == window { plan[members.binary_search_by_key(&(buffers[j].lower, j), |&k| (buffers[k].lower, k)).expect("a window member")] } else { offsets[j] };
        let mut fixed_at: Vec<(u64, usize)> = fixed.iter().enumerate().map(|(k, &j)| (at(j), k)).collect();
        // In address order every insertion appends to its sets (see `plan_windows`).
        fixed_at.sort_unstable();
        let mut occ = Occupancy::new(&local);
        let mut clock = heuristics::DeadlineCheck::new(Some(self.deadline));
        for (k, &(o, at)) in fixed_at.iter().enumerate() {
            if clock.passed(k, &occ) {
                return None;
            }
            occ.insert(at, o);
        }
        let mut order: Vec<usize> = (0..colliders.len()).collect();
        order.sort_unstable_by_key(|&k| (std::cmp::Reverse(buffers[colliders[k]].size), colliders[k]));
        for (n, &k) in order.iter().enumerate() {
            if clock.passed(n, &occ) {
                return None;
            }
            let o = occ.lowest_fit(fixed.len() + k);
            if o + buffers[colliders[k]].size >= m {
                return None;
            }
            occ.insert(fixed.len() + k, o);
            moves.push((colliders[k], o));
        }
        Some(moves)
    }
}

/// The buffers that end highest in a placement, by top (`offset + size`): those ending at
/// `floor` or above, the floor halfway between the makespan and the target when (re)built.
/// Only those are ever at the makespan, and on 10^7 buffers a set of all tops would cost
/// 350 MB.
struct Tops {
    set: BTreeSet<(u64, u32)>,
    floor: u64,
}

impl Tops {
    fn new(buffers: &[Buffer], offsets: &[u64], target: u64) -> Self {
        let mut tops = Tops { set: BTreeSet::new(), floor: 0 };
        tops.rebuild(buffers, offsets, target);
        tops
    }

    fn rebuild(&mut self, buffers: &[Buffer], offsets: &[u64], target: u64) {
        let m = buffers.iter().zip(offsets).map(|(b, &o)| o + b.size).max().unwrap_or(0);
        self.floor = if m > target { target + (m - target) / 2 } else { m };
        self.set = (0..buffers.len()).map(|i| (offsets[i] + buffers[i].size, i as u32)).filter(|&(t, _)| t >= self.floor).collect();
    }

    /// Rebuilds once no buffer is left at or above the floor (each time the gap to the target
    /// has halved).
    fn refill(&mut self, buffers: &[Buffer], offsets: &[u64], target: u64) {
        if self.set.is_empty() && !buffers.is_empty() {
            self.rebuild(buffers, offsets, target);
        }
    }

    /// Buffer `i` moved from ending at `before` to ending at `after`.
    fn moved(&mut self, i: usize, before: u64, after: u64) {
        self.set.remove(&(before, i as u32));
        if after >= self.floor {
            self.set.insert((after, i as u32));
        }
    }

    fn makespan(&self) -> u64 {
        self.set.last().map_or(0, |&(m, _)| m)
    }
}

/// The tick of maximum load in `[lo, hi)` (the first such), from the buffers live there, or
/// `None` when more than `cap` are (a long-lived buffer on a traced heap: the caller then
/// picks an instant at random rather than pay for a sweep of most of the instance).
fn local_peak(buffers: &[Buffer], index: &TimeIndex, lo: u64, hi: u64, cap: usize, scratch: &mut Vec<usize>) -> Option<u64> {
    if index.count(lo, hi) > cap {
        return None;
    }
    scratch.clear();
    index.overlapping(lo, hi, scratch);
    Some(peak_in(&heaplab_sweep::load_profile(&clipped(buffers, scratch, lo, hi)), lo, hi))
}

/// The buffers `members` with their lifetimes clipped to `[lo, hi)`: a window as an instance of
/// its own (members conflict there exactly when their clipped lifetimes do).
fn clipped(buffers: &[Buffer], members: &[usize], lo: u64, hi: u64) -> Vec<Buffer> {
    members.iter().map(|&i| Buffer { lower: buffers[i].lower.max(lo), upper: buffers[i].upper.min(hi), ..buffers[i] }).collect()
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

/// The tail's first fit may take the time the rest of the fill took over this: on 10^6 random
/// buffers the whole tail took twice that time, and a second round of windows gained more.
const TAIL_TIME_DIVISOR: u32 = 4;

/// Where the tail begins in `order` (size descending): the earliest of a few cut points (at
/// half the buffers and beyond) whose tail has a max load within `share` of the instance's;
/// `order.len()` (no tail) when none has or `share` is 0.
fn tail_start(buffers: &[Buffer], order: &[u32], share: f64) -> usize {
    let n = order.len();
    if share <= 0.0 || n == 0 {
        return n;
    }
    let limit = (heaplab_sweep::max_load(buffers) as f64 * share) as u64;
    for tenths in 5..10 {
        let from = n * tenths / 10;
        let tail: Vec<Buffer> = order[from..].iter().map(|&i| buffers[i as usize]).collect();
        if heaplab_sweep::max_load(&tail) <= limit {
            return from;
        }
    }
    n
}

/// The peak tick of every maximal stretch of the profile whose load stays within `depth` (a
/// share) of the maximum, highest first; none when `depth` is 0 (the caller opens the maximum's
/// window itself).
fn stretch_peaks(profile: &[(u64, u64)], depth: f64) -> Vec<u64> {
    let max = profile.iter().map(|p| p.1).max().unwrap_or(0);
    if depth <= 0.0 || max == 0 {
        return Vec::new();
    }
    let floor = max - (max as f64 * depth.min(1.0)) as u64;
    let mut peaks: Vec<(u64, u64)> = Vec::new(); // (load, tick)
    let mut current: Option<(u64, u64)> = None;
    for &(t, load) in profile {
        if load >= floor.max(1) {
            if current.is_none_or(|c| load > c.0) {
                current = Some((load, t));
            }
        } else if let Some(c) = current.take() {
            peaks.push(c);
        }
    }
    peaks.extend(current);
    peaks.sort_by_key(|&(load, t)| (std::cmp::Reverse(load), t));
    peaks.into_iter().map(|p| p.1).collect()
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
                // One window a round, or every stretch within 10% of the max load at once and
                // the smallest buffers (up to 5% of the load) stacked on top.
                let one = WindowParams { max_window: 64, ..WindowParams::new(Instant::now() + Duration::from_millis(500), max_load(bs), bound) };
                let deep = WindowParams { depth: 0.1, tail_load: 0.05, ..one.clone() };
                for params in [one, deep] {
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
    }

    #[test]
    fn stretches_near_the_max_load_open_windows_highest_first() {
        // Load 10 over [0, 10), 3 over [10, 20), 9 over [20, 25), 10 again over [30, 31).
        let profile = [(0, 10), (10, 3), (20, 9), (25, 0), (30, 10), (31, 0)];
        assert_eq!(stretch_peaks(&profile, 0.0), Vec::<u64>::new());
        assert_eq!(stretch_peaks(&profile, 0.05), vec![0, 30]);
        assert_eq!(stretch_peaks(&profile, 0.1), vec![0, 30, 20]);
        // Every tick with load: [0, 25) and [30, 31).
        assert_eq!(stretch_peaks(&profile, 1.0), vec![0, 30]);
    }

    #[test]
    fn the_tail_is_the_smallest_buffers_within_its_share_of_the_load() {
        // 100 buffers of size 1000 and 100 of size 1, all live together: the smaller half
        // weighs 100 of 100,100 bytes.
        let bs: Vec<Buffer> = (0..200u64).map(|i| Buffer::new(i, 0, 5, if i % 2 == 0 { 1000 } else { 1 })).collect();
        let ord = heuristics::order(&bs, Order::Size);
        assert_eq!(tail_start(&bs, &ord, 0.0), 200);
        assert_eq!(tail_start(&bs, &ord, 0.001), 100);
        assert!(ord[100..].iter().all(|&i| bs[i as usize].size == 1));
        // A lighter share: the tail of the last fifth (40 bytes) is the first within it.
        assert_eq!(tail_start(&bs, &ord, 0.0004), 160);
        assert_eq!(tail_start(&bs, &ord, 0.0001), 200, "no cut point is light enough");
        assert_eq!(tail_start(&[], &[], 0.5), 0);
    }

    /// Two rounds in a row whose fills do not beat the best makespan do not end the chase: on
    /// these instances the third round's fill is the first to complete lower.
    #[test]
    fn the_chase_outlasts_two_failed_fills() {
        for seed in [2u64, 6] {
            let inst = heaplab_gen::generate(heaplab_gen::Kind::Nested, 3000, seed);
            let bs = &inst.buffers;
            let greedy = validate(bs, &first_fit(bs, Instant::now())).makespan;
            let params = WindowParams { max_window: 64, ..WindowParams::new(Instant::now() + Duration::from_secs(60), max_load(bs), greedy) };
            let hasty = plan_windows(bs, &WindowParams { fill_patience: 2, ..params.clone() }, &mut first_fit);
            let patient = plan_windows(bs, &params, &mut first_fit);
            assert!(patient.rounds > hasty.rounds && patient.makespan < hasty.makespan, "seed {seed}: {} rounds to {} against {} to {}", hasty.rounds, hasty.makespan, patient.rounds, patient.makespan);
            let off = patient.offsets.expect("a fill below first fit's makespan");
            let v = validate(bs, &off);
            assert!(v.is_valid() && v.makespan == patient.makespan, "{}", v.describe(bs, &off));
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
        // A rival that reaches the target while the first window is planned: no more windows
        // planned, no fill.
        let p = params(greedy);
        let (rival, mut planned) = (Arc::clone(p.rival.as_ref().unwrap()), 0);
        let out = plan_windows(bs, &p, &mut |w: &[Buffer], until: Instant| {
            planned += 1;
            rival.store(max_load(bs), Ordering::Relaxed);
            first_fit(w, until)
        });
        assert_eq!((planned, out.rounds, out.offsets.is_none()), (1, 0, true));
    }

    #[test]
    fn local_windows_keep_every_placement_valid_and_never_raise_the_makespan() {
        for (k, &kind) in heaplab_gen::Kind::ALL.iter().enumerate() {
            for n in [1usize, 2, 50, 600, 3000] {
                let inst = heaplab_gen::generate(kind, n, 21 + k as u64);
                let bs = &inst.buffers;
                // From the start-order sweep, which leaves room for the windows to gain.
                let mut off = heuristics::Heuristic { order: Order::Start, fit: heuristics::Fit::First }.run(bs);
                let before = validate(bs, &off).makespan;
                let params = WindowParams { max_window: 64, ..WindowParams::new(Instant::now() + Duration::from_millis(300), max_load(bs), before) };
                let out = improve_windows(bs, &mut off, &params, 7, &mut first_fit);
                let v = validate(bs, &off);
                assert!(v.is_valid(), "{} n={n}: {}", kind.name(), v.describe(bs, &off));
                assert_eq!((out.start, out.end), (before, v.makespan), "{} n={n}", kind.name());
                assert!(v.makespan <= before, "{} n={n}", kind.name());
            }
        }
    }

    #[test]
    fn local_windows_lower_a_greedy_placement() {
        let inst = heaplab_gen::generate(heaplab_gen::Kind::Random, 3000, 3);
        let bs = &inst.buffers;
        let mut off = heuristics::Heuristic { order: Order::Start, fit: heuristics::Fit::First }.run(bs);
        let before = validate(bs, &off).makespan;
        // Windows planned by first fit by size: no time limit needed, the patience ends it.
        let params = WindowParams { max_window: 256, ..WindowParams::new(Instant::now() + Duration::from_secs(3600), max_load(bs), before) };
        let out = improve_windows(bs, &mut off, &params, 1, &mut first_fit);
        let v = validate(bs, &off);
        assert!(v.is_valid(), "{}", v.describe(bs, &off));
        assert!(out.moves > 0 && v.makespan < before, "{out:?}");
    }

    #[test]
    fn local_windows_stop_at_their_deadline_and_at_the_target() {
        let inst = heaplab_gen::generate(heaplab_gen::Kind::Random, 3000, 4);
        let bs = &inst.buffers;
        let start = heuristics::Heuristic { order: Order::Start, fit: heuristics::Fit::First }.run(bs);
        let m = validate(bs, &start).makespan;
        let mut calls = 0;
        let mut counting = |sub: &[Buffer], until: Instant| {
            calls += 1;
            first_fit(sub, until)
        };
        // A deadline already passed: no window is planned and nothing moves.
        let mut off = start.clone();
        let out = improve_windows(bs, &mut off, &WindowParams::new(Instant::now(), max_load(bs), m), 1, &mut counting);
        assert_eq!((out.rounds, out.moves, off == start), (0, 0, true));
        // A target at the makespan: done before the first round.
        let out = improve_windows(bs, &mut off, &WindowParams::new(Instant::now() + Duration::from_secs(60), m, m), 1, &mut counting);
        assert_eq!((out.rounds, calls), (0, 0));
    }

    #[test]
    fn local_windows_plan_no_column_far_above_the_window_size() {
        // 300 buffers live throughout and a peak above them: every window holds the 300, more
        // than four windows of 64, so no window is planned and the patience ends the search.
        let mut bs: Vec<Buffer> = (0..300).map(|i| Buffer::new(i, 0, 100, 1)).collect();
        bs.push(Buffer::new(300, 0, 50, 10));
        bs.push(Buffer::new(301, 50, 100, 10));
        let mut off: Vec<u64> = (0..300).collect();
        off.extend([300, 310]);
        let start = off.clone();
        let mut calls = 0;
        let mut counting = |sub: &[Buffer], until: Instant| {
            calls += 1;
            first_fit(sub, until)
        };
        let params = WindowParams { max_window: 64, ..WindowParams::new(Instant::now() + Duration::from_secs(3600), max_load(&bs), 320) };
        let out = improve_windows(&bs, &mut off, &params, 1, &mut counting);
        assert_eq!((out.rounds, out.moves, calls, off == start), (LOCAL_PATIENCE, 0, 0, true));
        // With windows as wide as the column the same peak is planned away.
        let params = WindowParams { max_window: 302, ..params };
        let out = improve_windows(&bs, &mut off, &params, 1, &mut first_fit);
        assert!(out.moves > 0 && out.end < 320 && validate(&bs, &off).is_valid(), "{out:?}");
    }

    #[test]
    fn a_ring_moves_only_what_it_must() {
        // Window [0, 2) holds buffers 0 and 1; buffer 2 lives after it, beside buffer 1, at
        // offset 4, and buffer 3 far away. Planned alone the window puts 1 at offset 4.
        let bs = vec![Buffer::new(0, 0, 2, 4), Buffer::new(1, 1, 4, 4), Buffer::new(2, 3, 6, 4), Buffer::new(3, 20, 22, 9)];
        let offsets = vec![4, 0, 4, 0];
        let index = TimeIndex::new(&bs);
        let far = Instant::now() + Duration::from_secs(60);
        let mut round = LocalRound::new(bs.len(), far);
        round.members = vec![0, 1];
        let plan = [0, 4];
        // Buffer 2 collides with 1's new offset and goes to the lowest free address, 0.
        let moves = round.relocate(&bs, &offsets, &index, &plan, 9, None).unwrap();
        assert_eq!(moves, vec![(0, 0), (1, 4), (2, 0)]);
        // A makespan the moves cannot stay below: refused.
        assert_eq!(round.relocate(&bs, &offsets, &index, &plan, 8, None), None);
        // A ring of 20 ticks takes in buffer 3 too.
        let moves = round.relocate(&bs, &offsets, &index, &plan, 10, Some(20)).unwrap();
        assert_eq!(moves.len(), 4);
        let mut after = offsets.clone();
        for (i, o) in moves {
            after[i] = o;
        }
        assert!(validate(&bs, &after).is_valid());
    }

    #[test]
    fn the_local_peak_is_the_profile_peak() {
        // Against the whole instance's load profile, on lifetimes of every kind.
        for (k, &kind) in heaplab_gen::Kind::ALL.iter().enumerate() {
            let inst = heaplab_gen::generate(kind, 400, 31 + k as u64);
            let bs = &inst.buffers;
            let (index, profile) = (TimeIndex::new(bs), heaplab_sweep::load_profile(bs));
            let mut scratch = Vec::new();
            for b in bs.iter().step_by(7) {
                let got = local_peak(bs, &index, b.lower, b.upper, usize::MAX, &mut scratch);
                assert_eq!(got, Some(peak_in(&profile, b.lower, b.upper)), "{} {b:?}", kind.name());
            }
            // More buffers live than the cap: no sweep.
            let b = bs[0];
            if index.count(b.lower, b.upper) > 1 {
                assert_eq!(local_peak(bs, &index, b.lower, b.upper, 1, &mut scratch), None);
            }
        }
    }

    #[test]
    fn the_top_set_tracks_the_makespan_through_moves_and_refills() {
        // Tops 10, 20, ..., 100 over a target of 0: the floor is 50, six buffers above it.
        let bs: Vec<Buffer> = (0..10u64).map(|i| Buffer::new(i, i, i + 1, 10)).collect();
        let mut off: Vec<u64> = (0..10u64).map(|i| 10 * i).collect();
        let mut tops = Tops::new(&bs, &off, 0);
        assert_eq!((tops.makespan(), tops.floor, tops.set.len()), (100, 50, 6));
        // Every buffer above the floor moved to the bottom: the set empties, and the refill
        // finds the new makespan among the rest.
        for (i, o) in off.iter_mut().enumerate().skip(4) {
            let before = *o + 10;
            *o = 0;
            tops.moved(i, before, 10);
        }
        assert!(tops.set.is_empty());
        tops.refill(&bs, &off, 0);
        assert_eq!(tops.makespan(), 40);
        // A buffer moved up past the makespan is seen at once.
        tops.moved(0, 10, 70);
        assert_eq!(tops.makespan(), 70);
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
