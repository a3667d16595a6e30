//! The boxing algorithm of Buchsbaum et al. ("BA"), as made executable by the thesis in
//! `../shared/papers/000_…` (ch. 4 and app. B.1), used as a stochastic sorting step in front of
//! a final greedy placement.
//!
//! This module owns one *pass* (box → unbox → squeeze) and the loop that repeats it:
//!
//! 1. **Prelude** (once, `Prelude`): the legal ε range of inequality 4.11,
//!    `[((log₂ r)¹⁴ / r)^(1/6), μ_lim·(log₂ r)²]` with `r = h_max/h_min` and `μ_lim = (√5−1)/2`
//!    (4.10); when it is empty (`r` below ≈ 2216.53, 4.12) a *dummy* job of height
//!    `⌈2216.53·h_min⌉` (raised until the range really is non-empty) spanning the whole time range
//!    is added, and ignored when placing. ε is calibrated as in thesis 4.5.6.
//! 2. **Boxing** (Theorem 16 → Corollary 15 → Theorem 2 → Lemma 1): the result is a set of
//!    equal-height boxes nested like Matryoshkas down to the original buffers. Jobs live in an
//!    arena (`Arena`): a `Vec` of fixed-size records plus one `Vec<u32>` of child indices, so a
//!    pass costs O(n) memory and no reference counting.
//! 3. **Unboxing** (thesis 4.4, fig. 4.6): every original buffer gets a *loose* offset.
//! 4. **Squeeze** (4.4, 4.5.7): buffers are placed in increasing loose offset by first-fit (or
//!    best-fit, as idealloc does) through [`Occupancy`](crate::occupancy::Occupancy), honouring
//!    alignment, and abandoned as soon as one buffer's top shows the pass cannot beat the best
//!    makespan known (bootstrapping and early stop, 4.5.5).
//!
//! # Randomness and reproducibility
//! Everything stochastic draws from [`Rng`] seeded by [`mix`] of the caller's seed and a
//! structural tag (pass number, Theorem 16 round, size class, Theorem 2 segment index), never from
//! thread timing or hash order. Parallel work (the size classes of Corollary 15 and the sub-
//! problems `X_i` of Theorem 2, thesis 4.5.9) runs as rayon maps whose results are collected in
//! order, so a pass gives the same boxes on any number of threads. Passes themselves run in
//! parallel batches of one per thread (fewer when they would hold over 2^20 buffers in all),
//! merged in pass order (see [`plan`]): the same seed and thread count give the same plan,
//! provided the iteration cap rather than the deadline ends the run.
//!
//! Sources of variety between passes: ε (the first pass uses the calibrated ε, later passes draw ε
//! uniformly from the legal range, the alternative the thesis proposes in 4.7.2 "Sampling many
//! ε-values"; with a dummy job the range is a single point, though), Theorem 2's critical point
//! injection (4.3.3), which picks the injected point at random, whether a pass injects only when
//! needed or in every sub-problem (`Injection`), and the squeeze's fit rule ([`Squeeze`]).
//!
//! # Deliberate deviations from the thesis and from BA (each marked `DEVIATION` in the code)
//! - Lifetimes are half-open tick ranges `[lower, upper)` and critical points are ticks; a job is
//!   live at `t` iff `lower ≤ t < upper`, and "inside `(t_i, t_{i+1})`" means `t_i < lower` and
//!   `upper ≤ t_{i+1}`. Every job is then either live at a critical point (an `R_i`) or inside
//!   exactly one gap (an `X_i`), and each `X_i` is strictly smaller than its parent.
//! - Theorem 2 without free spaces (thesis 4.5.8): the rows of unresolved jobs are boxed `H'` at a
//!   time into new boxes instead of filling free spaces inherited from above; the endpoints of the
//!   gaps in those rows still become the critical points of the sub-problems, which is how BA's
//!   `T ← endpoints of F_ℓ` shapes the recursion.
//! - Theorem 2's recursion runs breadth-first over a work list instead of on the call stack, so
//!   chains of nested sub-problems (depth up to n) cannot overflow a thread's stack.
//! - The calibration scans the whole ε schedule of 4.5.6 (steps of 1% of the remaining range)
//!   instead of stopping after three non-improving steps as idealloc does: the rogue rounds
//!   depend only on the multiset of heights, so `r*` is computed by a dry run (`schedule`)
//!   without boxing anything, and the full scan costs microseconds.
//! - Theorem 16's rogue loop is capped at [`MAX_ROUNDS`] rounds (never reached in practice; it
//!   bounds nesting depth and memory on adversarial height sequences).
//! - Half the passes inject a random critical point into every Theorem 2 sub-problem, not only
//!   where none of the points handed down has a live job (see `Injection`).
//! - The last application of Corollary 15 uses `μ* = ε/(log₂ r*)²` capped at `0.99·μ_lim`
//!   (thesis 4.3.2: BA's `ε` there may exceed 1), and box height `⌈h_max/μ*⌉`.
//! - Unboxing tells jobs apart by height *and* content class, so the equal-height top-level boxes
//!   are stacked by the size class of their contents, larger first, instead of in one colouring
//!   (see `Unboxer`); and a row's watermark rises to the highest address its contents reached
//!   rather than by the nominal height. Both only change the order the squeeze sees.
//! - Passes run in parallel batches that share the early-stop bound of the batch's start, rather
//!   than strictly one after the other (see [`plan`]).

use crate::heuristics::{colour_intervals, place_in_order_bounded, solve_conflict_free, solve_equal_sizes, Fit};
use crate::rng::{mix, Rng};
use heaplab_model::Buffer;
use rayon::prelude::*;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// `(√5 − 1)/2`: the universal upper bound on μ (thesis inequality 4.10).
pub const MU_LIMIT: f64 = 0.618_033_988_749_894_8;

/// The ratio `h_max/h_min` below which the legal ε range is empty (thesis inequality 4.12).
pub const MIN_RATIO: f64 = 2216.53;

/// Safety cap on Theorem 16's rogue rounds (see the module's deviations).
pub const MAX_ROUNDS: usize = 64;

/// Buffers that concurrent passes may hold at once (see [`plan`]).
const MAX_IN_FLIGHT: usize = 1 << 20;

/// ε values tried by the calibration (each one 1% of the remaining range above the last).
const CALIBRATION_STEPS: usize = 500;

/// How the final squeeze chooses an address for each buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Squeeze {
    /// First fit (the thesis, 4.4).
    First,
    /// Best fit (what idealloc's code does).
    Best,
    /// A seeded draw per pass: best fit for a quarter of the passes, first fit for the rest
    /// (the default). Which fit wins depends on the instance (best fit on minimalloc C, E, G,
    /// first fit on D, H and on most generated 10^4–10^5 instances), and a best-fit squeeze costs
    /// about 2.5 times a first-fit one, so a quarter gives each about the same time.
    #[default]
    Mixed,
}

/// Parameters of [`plan`].
#[derive(Clone, Debug)]
pub struct BoxingParams {
    /// Seed of every random choice.
    pub seed: u64,
    /// Cap on passes (`usize::MAX`: none). A pass abandoned by the early stop counts.
    pub iterations: usize,
    /// Stop starting passes after this instant. Without an upper bound the first pass always
    /// completes, whatever the deadline, so that there is a placement to return.
    pub deadline: Option<Instant>,
    /// Stop as soon as a makespan ≤ `target` is found (pass the max load: nothing is better).
    pub target: u64,
    /// Makespan to beat (the best heuristic's, for bootstrapping): passes that cannot reach a
    /// makespan strictly below it are abandoned early, and only placements strictly below it are
    /// returned.
    pub upper_bound: Option<u64>,
    /// Fit rule of the squeeze.
    pub squeeze: Squeeze,
    /// Stop starting passes once this is set (the caller gave up, [`crate::PlanOptions::cancel`]),
    /// and cut a squeeze short, as the deadline does (the start-order sweep then stands in).
    pub cancel: Option<Arc<AtomicBool>>,
}

impl Default for BoxingParams {
    fn default() -> Self {
        BoxingParams { seed: 1, iterations: 1, deadline: None, target: 0, upper_bound: None, squeeze: Squeeze::default(), cancel: None }
    }
}

/// What [`plan`] found.
#[derive(Clone, Debug)]
pub struct BoxingOutcome {
    /// The best placement, parallel to the input buffers. **Empty** when an `upper_bound` was
    /// given and no pass beat it (or the deadline left no time for a pass): callers must check.
    /// (Also empty, with makespan 0, for an instance without buffers.)
    pub offsets: Vec<u64>,
    /// Its makespan; `u64::MAX` when `offsets` is empty for want of an improvement.
    pub makespan: u64,
    /// Box → unbox → squeeze passes run (including those the early stop abandoned).
    pub iterations: usize,
    /// Passes whose squeeze placed every buffer.
    pub placements: usize,
    /// Whether the instance was solved in closed form without boxing (no conflicts, or equal
    /// sizes).
    pub solved_trivially: bool,
    /// Whether a dummy job was needed (h_max/h_min below [`MIN_RATIO`]).
    pub dummy: bool,
    /// The legal ε range (after the dummy, if any).
    pub epsilon_range: (f64, f64),
    /// The calibrated ε (used by the first pass).
    pub epsilon_calibrated: f64,
    /// ε of the pass that produced `offsets` (NaN if none did).
    pub epsilon: f64,
    /// `r* = h_max/h_min` after the rogue rounds of that pass.
    pub r_star: f64,
    /// Rogue rounds of that pass.
    pub rounds: usize,
    /// Fit rule of that pass.
    pub fit: Option<Fit>,
    /// Index of that pass (0-based).
    pub best_pass: Option<usize>,
    /// Seconds spent boxing, unboxing and squeezing, summed over passes.
    pub phase_seconds: [f64; 3],
    /// Whether `offsets` come from the start-order sweep standing in for boxing: without an
    /// `upper_bound`, the deadline passed (or the plan was cancelled) before any pass finished
    /// its squeeze.
    pub stand_in: bool,
}

impl BoxingOutcome {
    fn new() -> Self {
        BoxingOutcome {
            offsets: Vec::new(),
            makespan: u64::MAX,
            iterations: 0,
            placements: 0,
            solved_trivially: false,
            dummy: false,
            epsilon_range: (f64::NAN, f64::NAN),
            epsilon_calibrated: f64::NAN,
            epsilon: f64::NAN,
            r_star: f64::NAN,
            rounds: 0,
            fit: None,
            best_pass: None,
            phase_seconds: [0.0; 3],
            stand_in: false,
        }
    }
}

/// Plans `buffers` by repeated boxing passes within `params`' limits; see the module doc.
pub fn plan(buffers: &[Buffer], params: &BoxingParams) -> BoxingOutcome {
    let mut out = BoxingOutcome::new();
    if buffers.is_empty() {
        out.makespan = 0;
        out.solved_trivially = true;
        return out;
    }
    // Elementary cases (thesis 4.2.1), solved optimally.
    if let Some(off) = solve_conflict_free(buffers).or_else(|| solve_equal_sizes(buffers)) {
        out.solved_trivially = true;
        let m = makespan(buffers, &off);
        if params.upper_bound.is_none_or(|u| m < u) {
            out.offsets = off;
            out.makespan = m;
        }
        return out;
    }
    let pre = Prelude::new(buffers);
    out.dummy = pre.dummy.is_some();
    out.epsilon_range = (pre.eps_lo, pre.eps_hi);
    out.epsilon_calibrated = pre.eps;
    // The makespan a pass must beat.
    let mut best = params.upper_bound.unwrap_or(u64::MAX);
    // DEVIATION (4.5.5 runs passes one after the other): passes are independent but for the
    // bound of the early stop, so they run in batches of one per thread (fewer for large
    // instances), all with the bound known when the batch starts, and are merged in pass order. The result depends on the seed
    // and the thread count, never on timing (except through the deadline, which decides how many
    // batches run and may cut a squeeze short).
    // At most MAX_IN_FLIGHT buffers' worth of concurrent passes: each holds an arena and an
    // occupancy index (~400 B a buffer at 10^6), and at 10^6 buffers two concurrent squeezes
    // were measured 2.4 times slower each than one alone (memory-bound), i.e. slower overall.
    let threads = rayon::current_num_threads().clamp(1, (MAX_IN_FLIGHT / buffers.len()).max(1));
    let unlimited = params.deadline.is_none() && params.iterations == usize::MAX;
    let mut pass = 0usize;
    // Computed before the passes, so that standing in costs no time past the deadline.
    let stand_in = ((params.deadline.is_some() || params.cancel.is_some()) && params.upper_bound.is_none()).then(|| {
        crate::heuristics::Heuristic { order: crate::rules::Order::Start, fit: Fit::First }.run(buffers)
    });
    while pass < params.iterations {
        if best <= params.target {
            break;
        }
        // The first batch always starts, so that there is a placement to return.
        let cancelled = params.cancel.as_ref().is_some_and(|c| c.load(Ordering::Relaxed));
        if (pass > 0 || params.upper_bound.is_some()) && (cancelled || params.deadline.is_some_and(|d| Instant::now() >= d)) {
            break;
        }
        let batch = threads.min(params.iterations - pass);
        // Strictly below `best`. A squeeze can cost as much as a quadratic first fit (see
        // `WORK_PER_CLOCK_CHECK`), so the deadline (or a cancel) interrupts it even in the
        // first batch; the start-order sweep then stands in.
        let bound = if best == u64::MAX { u64::MAX } else { best - 1 };
        let results: Vec<Pass> =
            (pass..pass + batch).into_par_iter().map(|p| run_pass(buffers, &pre, params, p, bound, params.deadline)).collect();
        for (p, r) in (pass..).zip(results) {
            out.iterations += 1;
            for (total, s) in out.phase_seconds.iter_mut().zip(r.seconds) {
                *total += s;
            }
            let Some(off) = r.offsets else { continue };
            out.placements += 1;
            let m = makespan(buffers, &off);
            debug_assert!(m <= bound);
            if m < best {
                best = m;
                out.offsets = off;
                out.makespan = m;
                out.epsilon = r.eps;
                out.r_star = r.r_star;
                out.rounds = r.rounds;
                out.fit = Some(r.fit);
                out.best_pass = Some(p);
            }
        }
        pass += batch;
        if unlimited {
            // Neither a deadline nor a cap: one batch, rather than running forever.
            break;
        }
    }
    if let Some(off) = stand_in.filter(|_| out.offsets.is_empty() && !buffers.is_empty()) {
        out.makespan = makespan(buffers, &off);
        out.offsets = off;
        out.stand_in = true;
    }
    out
}

/// One box → unbox → squeeze pass.
struct Pass {
    /// `None` when the squeeze gave up (bound exceeded or deadline).
    offsets: Option<Vec<u64>>,
    eps: f64,
    r_star: f64,
    rounds: usize,
    fit: Fit,
    seconds: [f64; 3],
}

fn run_pass(
    buffers: &[Buffer],
    pre: &Prelude,
    params: &BoxingParams,
    pass: usize,
    bound: u64,
    deadline: Option<Instant>,
) -> Pass {
    let mut rng = Rng::new(mix(params.seed, pass as u64));
    let eps = if pass == 0 { pre.eps } else { pre.eps_lo + rng.unit() * (pre.eps_hi - pre.eps_lo) };
    let fit = match params.squeeze {
        Squeeze::First => Fit::First,
        Squeeze::Best => Fit::Best,
        Squeeze::Mixed if rng.below(4) != 0 => Fit::First,
        Squeeze::Mixed => Fit::Best,
    };
    let t0 = Instant::now();
    let sched = schedule(&pre.heights, eps);
    let mut arena = Arena::new(buffers, pre.dummy);
    let inject = if rng.below(2) == 0 { Injection::WhenNeeded } else { Injection::Always };
    let top = theorem16(&mut arena, &sched, eps, inject, rng.next_u64());
    let t1 = Instant::now();
    let loose = unbox(&arena, &top);
    drop(arena);
    let order = squeeze_order(&loose);
    let t2 = Instant::now();
    let offsets = place_in_order_bounded(buffers, &order, fit, bound, deadline, params.cancel.as_deref());
    let t3 = Instant::now();
    Pass {
        offsets,
        eps,
        r_star: sched.r_star,
        rounds: sched.rounds.len(),
        fit,
        seconds: [(t1 - t0).as_secs_f64(), (t2 - t1).as_secs_f64(), (t3 - t2).as_secs_f64()],
    }
}

fn makespan(buffers: &[Buffer], offsets: &[u64]) -> u64 {
    buffers.iter().zip(offsets).map(|(b, &o)| o + b.size).max().unwrap_or(0)
}

/// The squeeze order: increasing loose offset. Buffers sharing a loose offset are pairwise
/// time-disjoint (they are in one colouring row, or in time-disjoint boxes of one row), so the
/// order among them cannot change any offset; the tie-break only makes the order total.
fn squeeze_order(loose: &[u64]) -> Vec<u32> {
    let mut order: Vec<u32> = (0..loose.len() as u32).collect();
    order.sort_unstable_by_key(|&i| (loose[i as usize], i));
    order
}

// ---------------------------------------------------------------------------------------------
// Prelude: ε range, dummy job, calibration (thesis 4.3.2, 4.5.6)
// ---------------------------------------------------------------------------------------------

/// What every pass shares.
struct Prelude {
    /// All job heights, sorted (the dummy's included).
    heights: Vec<u64>,
    /// Height of the dummy job, if one is needed.
    dummy: Option<u64>,
    eps_lo: f64,
    eps_hi: f64,
    /// The calibrated ε.
    eps: f64,
}

/// Inequality 4.11: the legal ε range for a height ratio `r` (empty when `lo ≥ hi`).
pub fn epsilon_range(r: f64) -> (f64, f64) {
    let lg = r.log2();
    ((lg.powi(14) / r).powf(1.0 / 6.0), MU_LIMIT * lg * lg)
}

impl Prelude {
    fn new(buffers: &[Buffer]) -> Prelude {
        let mut heights: Vec<u64> = buffers.iter().map(|b| b.size).collect();
        heights.sort_unstable();
        let (hmin, hmax) = (heights[0], heights[heights.len() - 1]);
        let legal = |h_max: u64| {
            let (lo, hi) = epsilon_range(h_max as f64 / hmin as f64);
            lo < hi
        };
        let mut dummy = None;
        if !legal(hmax) {
            // Invariant 4.12 needs r ≥ 2216.53. Float rounding may leave the range empty right
            // at the threshold, so the dummy grows by 1% until it is not. If even that does not
            // fit in 63 bits (h_min above about 2^52), there is no dummy: the rogue phase then simply
            // never runs (its safety test fails) and only the last application of Corollary 15
            // boxes, which needs nothing but μ* < μ_lim.
            let mut h = (MIN_RATIO * hmin as f64).ceil();
            while h < u64::MAX as f64 / 2.0 && !legal(h as u64) {
                h = (h * 1.01).ceil();
            }
            if h < u64::MAX as f64 / 2.0 {
                dummy = Some(h as u64);
                heights.push(h as u64);
            }
        }
        let h_top = *heights.last().expect("non-empty");
        let (eps_lo, eps_hi) = epsilon_range(h_top as f64 / hmin as f64);
        let (eps_lo, eps_hi) = if eps_lo < eps_hi { (eps_lo, eps_hi) } else { (eps_hi, eps_hi) };
        // Calibration (4.5.6): from the left end upward in steps of 1% of the remaining range,
        // keep the ε with the smallest r* (the first one on ties). DEVIATION: the whole schedule
        // is scanned (idealloc stops after three non-improving steps); each step is a dry run.
        let mut eps = eps_lo;
        let mut best = (schedule(&heights, eps).r_star, eps);
        for _ in 0..CALIBRATION_STEPS {
            eps += 0.01 * (eps_hi - eps);
            let r = schedule(&heights, eps).r_star;
            if r < best.0 {
                best = (r, eps);
            }
        }
        Prelude { heights, dummy, eps_lo, eps_hi, eps: best.1 }
    }
}

// ---------------------------------------------------------------------------------------------
// Theorem 16: the rogue rounds and the last application of Corollary 15
// ---------------------------------------------------------------------------------------------

/// One round of Theorem 16's first phase.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Round {
    /// Error parameter μ = ε/(log₂ r)².
    mu: f64,
    /// Box height H = ⌈μ⁵·h_max/(log₂ r)²⌉.
    box_height: u64,
    /// Jobs of height ≤ ⌊μH⌋ are the small ones, X_s.
    small: u64,
}

/// The rounds Theorem 16 runs for ε on a multiset of heights, and the resulting r*.
#[derive(Clone, Debug)]
struct Schedule {
    rounds: Vec<Round>,
    r_star: f64,
}

/// Round parameters, or `None` when another round would not be "safe": BA's own condition
/// `(log₂ r)² ≥ 1/ε`, `μ < μ_lim` (4.10), and `⌊μH⌋ ≥ h_min`, without which X_s is empty and the
/// loop never ends (4.3.1). Together they imply `H/h ≥ 1` for every rounded small height `h`
/// (Corollary 15 never calls Theorem 2 with a zero box-height parameter).
fn round_params(hmin: u64, hmax: u64, eps: f64) -> Option<Round> {
    // Written so that a NaN anywhere means "not safe".
    let lg2 = (hmax as f64 / hmin as f64).log2().powi(2);
    let mu = eps / lg2;
    let h = (mu.powi(5) * hmax as f64 / lg2).ceil().max(1.0);
    let safe = lg2 * eps >= 1.0 && mu < MU_LIMIT && h < u64::MAX as f64;
    if !safe {
        return None;
    }
    let box_height = h as u64;
    let small = (mu * box_height as f64).floor() as u64;
    (small >= hmin).then_some(Round { mu, box_height, small })
}

/// Theorem 16's rogue rounds as a dry run: every box Corollary 15 makes in a round has height H,
/// so the heights after a round are known without boxing — (heights > ⌊μH⌋) ∪ {H}.
fn schedule(sorted_heights: &[u64], eps: f64) -> Schedule {
    let hmax = *sorted_heights.last().expect("non-empty");
    let mut next = 0usize; // sorted_heights[next..] are not boxed yet
    let mut boxes: Vec<u64> = Vec::new(); // heights of the boxes of earlier rounds still on top
    let mut rounds = Vec::new();
    let hmin_of = |next: usize, boxes: &[u64]| {
        sorted_heights.get(next).copied().into_iter().chain(boxes.iter().copied()).min().expect("jobs remain")
    };
    // DEVIATION: at most MAX_ROUNDS rounds (h_min grows every round, so the loop ends anyway,
    // but possibly only after many O(n) rounds on adversarial heights).
    while rounds.len() < MAX_ROUNDS {
        let Some(rd) = round_params(hmin_of(next, &boxes), hmax, eps) else { break };
        next = sorted_heights.partition_point(|&h| h <= rd.small);
        boxes.retain(|&b| b > rd.small);
        boxes.push(rd.box_height);
        rounds.push(rd);
    }
    Schedule { r_star: hmax as f64 / hmin_of(next, &boxes) as f64, rounds }
}

/// μ* of the last application of Corollary 15 (4.3.2), capped below μ_lim as idealloc does.
/// DEVIATION from BA, which uses ε itself there (unsafe: ε may exceed 1).
fn last_mu(hmin: u64, hmax: u64, eps: f64) -> f64 {
    let mu = eps / (hmax as f64 / hmin as f64).log2().powi(2);
    if mu < MU_LIMIT {
        mu
    } else {
        0.99 * MU_LIMIT
    }
}

/// Theorem 16: boxes every job of the arena; returns the top-level boxes, all of one height.
fn theorem16(arena: &mut Arena, sched: &Schedule, eps: f64, inject: Injection, seed: u64) -> Vec<u32> {
    let mut top: Vec<u32> = (0..arena.jobs.len() as u32).collect();
    for (k, rd) in sched.rounds.iter().enumerate() {
        let (small, mut large): (Vec<u32>, Vec<u32>) =
            top.into_iter().partition(|&j| arena.jobs[j as usize].height <= rd.small);
        assert!(!small.is_empty(), "Theorem 16: a rogue round with no small jobs would never end");
        large.extend(corollary15(arena, &small, rd.box_height, rd.mu, inject, mix(seed, k as u64)));
        top = large;
    }
    let (hmin, hmax) = top
        .iter()
        .map(|&j| arena.jobs[j as usize].height)
        .fold((u64::MAX, 0), |(lo, hi), h| (lo.min(h), hi.max(h)));
    debug_assert_eq!(hmax as f64 / hmin as f64, sched.r_star);
    let mu = last_mu(hmin, hmax, eps);
    let h = (hmax as f64 / mu).ceil() as u64;
    corollary15(arena, &top, h, mu, inject, mix(seed, u64::MAX))
}

// ---------------------------------------------------------------------------------------------
// Corollary 15 and Theorem 2
// ---------------------------------------------------------------------------------------------

/// `⌊(1+ε)^i⌋` for the `i` with `(1+ε)^(i−1) < h ≤ (1+ε)^i` (Corollary 15's rounding). Float
/// fix-ups keep the defining inequalities true as computed; the result is never below `h` (which
/// `as f64` could otherwise lose above 2^53).
fn rounded_height(h: u64, eps: f64) -> u64 {
    if h <= 1 {
        return 1;
    }
    let base = 1.0 + eps;
    let hf = h as f64;
    let mut i = (hf.ln() / base.ln()).ceil().max(0.0) as i32;
    while base.powi(i) < hf {
        i += 1;
    }
    while i > 0 && base.powi(i - 1) >= hf {
        i -= 1;
    }
    (base.powi(i).floor() as u64).max(h)
}

/// Corollary 15 (Z, H, ε): rounds heights, groups jobs by rounded height `h_i`, and boxes each
/// group with Theorem 2 (box-height parameter `⌊H/h_i⌋`, real box height H). Groups are
/// independent and run in parallel. Returns the new boxes.
fn corollary15(arena: &mut Arena, jobs: &[u32], box_height: u64, eps: f64, inject: Injection, seed: u64) -> Vec<u32> {
    let mut keyed: Vec<(u64, u32)> =
        jobs.iter().map(|&j| (rounded_height(arena.jobs[j as usize].height, eps), j)).collect();
    keyed.sort_unstable();
    let mut tasks = Vec::new();
    for (c, class) in keyed.chunk_by(|a, b| a.0 == b.0).enumerate() {
        let unit = class[0].0;
        let per_box = box_height / unit;
        // What the latent invariants guarantee (4.3.2): never a zero box-height parameter.
        assert!(per_box >= 1, "Corollary 15: class height {unit} above box height {box_height} (ε = {eps})");
        let set: Vec<u32> = class.iter().map(|&(_, j)| j).collect();
        let lo = set.iter().map(|&j| arena.jobs[j as usize].lower).min().expect("non-empty class");
        let hi = set.iter().map(|&j| arena.jobs[j as usize].upper).max().expect("non-empty class");
        tasks.push(Task { jobs: set, lo, hi, crit: Vec::new(), per_box, unit, inject, seed: mix(seed, c as u64) });
    }
    theorem2(arena, tasks, box_height, eps)
}

/// One Theorem 2 (sub)problem: jobs of one rounded height, all inside the tick range `[lo, hi)`,
/// and the interior critical points (sorted, within `[lo, hi)`).
#[derive(Debug)]
struct Task {
    jobs: Vec<u32>,
    lo: u64,
    hi: u64,
    crit: Vec<u64>,
    /// Box-height parameter H' = ⌊H/h_i⌋: at most this many jobs live at once in a box.
    per_box: u64,
    /// The rounded height h_i.
    unit: u64,
    inject: Injection,
    seed: u64,
}

/// When Theorem 2 injects a critical point (thesis 4.3.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Injection {
    /// Only when no job of the sub-problem is live at any of its critical points (the thesis).
    WhenNeeded,
    /// In every sub-problem, besides the points handed down. DEVIATION: the gap endpoints handed
    /// down tend to lie near the ends of a sub-problem's range, where few of its jobs are live, so
    /// each level boxes few jobs and the recursion peels slowly (depth 100–220 on random 10^5
    /// buffers; 14 s of boxing per pass at 10^6). A random point splits the range like a
    /// quicksort pivot: depth ~20, a fifth of the boxing time, and other boxes for the squeeze.
    /// Over 2000 passes it did better on minimalloc F, G, H, J, K (by 1.6–7 points) and worse
    /// on C, D (by ~1); single passes on tight 10^5 were ~0.5 point worse, on random 10^4–10^5
    /// more spread (better best, worse median). So each pass draws one of the two rules.
    Always,
}

/// A processed task: new boxes (contents concatenated, with their lengths) and sub-problems.
struct Processed {
    contents: Vec<u32>,
    lengths: Vec<u32>,
    unit: u64,
    children: Vec<Task>,
}

/// Theorem 2 over a list of independent problems, breadth-first: each round processes every
/// pending task in parallel (collected in order), then creates their boxes in the arena.
/// DEVIATION: BA recurses; a work list cannot overflow the stack on chains of depth ~n.
fn theorem2(arena: &mut Arena, mut tasks: Vec<Task>, box_height: u64, eps: f64) -> Vec<u32> {
    let mut boxes = Vec::new();
    while !tasks.is_empty() {
        let jobs = &arena.jobs;
        let done: Vec<Processed> = tasks.into_par_iter().map(|t| process(jobs, t, eps)).collect();
        tasks = Vec::new();
        for d in done {
            let mut k = 0;
            for &len in &d.lengths {
                boxes.push(arena.add_box(&d.contents[k..k + len as usize], box_height, d.unit));
                k += len as usize;
            }
            tasks.extend(d.children);
        }
    }
    boxes
}

/// One level of Theorem 2's recursion on one task (simplified per thesis 4.5.8).
///
/// DEVIATION (semantics): ticks and half-open lifetimes instead of BA's open intervals on the
/// reals. A job is live at critical point `t` iff `lower ≤ t < upper`; otherwise it lies inside
/// exactly one gap, `t_{p−1} < lower` and `upper ≤ t_p`, whose tick range `[t_{p−1}+1, t_p)`
/// bounds its sub-problem. DEVIATION (4.5.8): no free spaces; unresolved rows are boxed into new
/// boxes, and only the endpoints of their gaps are handed down as critical points.
fn process(jobs: &[Job], task: Task, eps: f64) -> Processed {
    let Task { jobs: set, lo, hi, mut crit, per_box, unit, inject, seed } = task;
    let span = |j: u32| (jobs[j as usize].lower, jobs[j as usize].upper);
    // Index of the first critical point at or after `lower`, and whether the job is live there.
    let first_point = |crit: &[u64], j: u32| {
        let (lower, upper) = span(j);
        let p = crit.partition_point(|&c| c < lower);
        (p, p < crit.len() && crit[p] < upper)
    };
    // Critical point injection (4.3.3): the recursion needs a point at which some job is live.
    // The point is the start of a job drawn at random (an event time at which that job is live).
    let needed = inject == Injection::WhenNeeded && !set.iter().any(|&j| first_point(&crit, j).1);
    if needed || inject == Injection::Always {
        let pick = set[Rng::new(seed).below(set.len() as u64) as usize];
        let t = span(pick).0;
        let at = crit.partition_point(|&c| c < t);
        // Already a point (only possible under `Always`): `pick` is live there all the same.
        if crit.get(at) != Some(&t) {
            crit.insert(at, t);
        }
    }
    debug_assert!(crit.windows(2).all(|w| w[0] < w[1]) && crit.iter().all(|&c| lo <= c && c < hi));
    let q = crit.len();

    // Partition: R-jobs keyed by the critical point of their R_i, X-jobs by their gap.
    // R_i follow BA's recursive middle-point rule: R_⌈q/2⌉ are the jobs live at t_⌈q/2⌉; those
    // ending before it recurse on the left points, those starting after it on the right ones.
    // A job is live at a contiguous run [pf, pl] of points, so the rule is a descent of the
    // implicit binary tree of points to the first node inside its run.
    let mut r_jobs: Vec<(u32, u32)> = Vec::new();
    let mut x_jobs: Vec<(u32, u32)> = Vec::new();
    for &j in &set {
        let (pf, live) = first_point(&crit, j);
        if !live {
            x_jobs.push((pf as u32, j));
            continue;
        }
        let pl = crit.partition_point(|&c| c < span(j).1) - 1;
        let (mut a, mut b) = (0usize, q);
        let node = loop {
            let mid = a + (b - a).div_ceil(2) - 1;
            if mid < pf {
                a = mid + 1;
            } else if mid > pl {
                b = mid;
            } else {
                break mid;
            }
        };
        r_jobs.push((node as u32, j));
    }
    // Progress: every level boxes at least one job, so sub-problems are strictly smaller.
    assert!(!r_jobs.is_empty(), "Theorem 2: no job live at a critical point after injection");

    let mut contents = Vec::new();
    let mut lengths = Vec::new();
    let mut unresolved = Vec::new();
    r_jobs.sort_unstable();
    for group in r_jobs.chunk_by(|a, b| a.0 == b.0) {
        let r: Vec<u32> = group.iter().map(|&(_, j)| j).collect();
        // Lemma 1's precondition: all of R_i is live at t_i.
        let t = crit[group[0].0 as usize];
        debug_assert!(r.iter().all(|&j| span(j).0 <= t && t < span(j).1));
        lemma1(jobs, &r, per_box, eps, &mut contents, &mut lengths, &mut unresolved);
    }

    // Pack all unresolved jobs by interval graph colouring; every H' consecutive rows are a box.
    // The ends of the gaps in those rows are the critical points offered to the sub-problems.
    let mut points: Vec<u64> = Vec::new();
    if !unresolved.is_empty() {
        let spans: Vec<(u64, u64)> = unresolved.iter().map(|&j| span(j)).collect();
        let (colour, _) = colour_intervals(&spans);
        let mut rows: Vec<(u32, u64, u32)> =
            unresolved.iter().zip(&colour).map(|(&j, &c)| (c, span(j).0, j)).collect();
        rows.sort_unstable();
        for boxed in rows.chunk_by(|a, b| a.0 as u64 / per_box == b.0 as u64 / per_box) {
            contents.extend(boxed.iter().map(|&(_, _, j)| j));
            lengths.push(boxed.len() as u32);
        }
        for row in rows.chunk_by(|a, b| a.0 == b.0) {
            points.push(row[0].1);
            for w in row.windows(2) {
                let (end, next) = (span(w[0].2).1, w[1].1);
                if end < next {
                    points.push(end);
                    points.push(next);
                }
            }
            points.push(span(row[row.len() - 1].2).1);
        }
        points.sort_unstable();
        points.dedup();
    }

    // Sub-problems X_i: the jobs inside the gap between consecutive critical points.
    let mut children = Vec::new();
    x_jobs.sort_unstable();
    for group in x_jobs.chunk_by(|a, b| a.0 == b.0) {
        let p = group[0].0 as usize;
        let clo = if p == 0 { lo } else { crit[p - 1] + 1 };
        let chi = if p == q { hi } else { crit[p] };
        let sub: Vec<u32> = group.iter().map(|&(_, j)| j).collect();
        debug_assert!(sub.iter().all(|&j| clo <= span(j).0 && span(j).1 <= chi));
        let a = points.partition_point(|&t| t < clo);
        let b = points.partition_point(|&t| t < chi);
        children.push(Task {
            jobs: sub,
            lo: clo,
            hi: chi,
            crit: points[a..b].to_vec(),
            per_box,
            unit,
            inject,
            seed: mix(seed, p as u64 + 1),
        });
    }
    debug_assert!(children.iter().all(|c| c.jobs.len() < set.len()));
    Processed { contents, lengths, unit, children }
}

/// Lemma 1 (appendix B.1) on `r`, jobs all live at one point: the outer vertical strip (the
/// H'⌈1/ε²⌉ earliest-starting jobs) and outer horizontal strip (the H'⌈1/ε²⌉ latest-ending of
/// the rest) stay unresolved; the rest is cut into alternating vertical and horizontal strips of
/// H'⌈1/ε⌉ jobs, vertical strips boxed H' at a time by decreasing end, horizontal ones by
/// increasing start. As in idealloc, the outer strips are cut only when there are more than
/// 2·H'⌈1/ε²⌉ jobs; otherwise all of them are unresolved.
fn lemma1(
    jobs: &[Job],
    r: &[u32],
    per_box: u64,
    eps: f64,
    contents: &mut Vec<u32>,
    lengths: &mut Vec<u32>,
    unresolved: &mut Vec<u32>,
) {
    let n = r.len();
    let outer = per_box.saturating_mul((1.0 / (eps * eps)).ceil() as u64);
    if n as u64 <= outer.saturating_mul(2) {
        unresolved.extend_from_slice(r);
        return;
    }
    let (outer, inner) = (outer as usize, per_box.saturating_mul((1.0 / eps).ceil() as u64).min(n as u64) as usize);
    let job = |k: u32| &jobs[r[k as usize] as usize];
    let mut by_start: Vec<u32> = (0..n as u32).collect();
    by_start.sort_unstable_by_key(|&k| (job(k).lower, job(k).upper, r[k as usize]));
    let mut by_end: Vec<u32> = (0..n as u32).collect();
    by_end.sort_unstable_by_key(|&k| (std::cmp::Reverse(job(k).upper), std::cmp::Reverse(job(k).lower), r[k as usize]));
    let mut taken = vec![false; n];
    let mut left = n;
    // Takes the next `count` jobs not taken yet from `view`, resuming at `*pos`.
    let mut take = |view: &[u32], pos: &mut usize, count: usize, left: &mut usize| {
        let mut strip = Vec::with_capacity(count.min(*left));
        while strip.len() < count && *pos < view.len() {
            let k = view[*pos];
            *pos += 1;
            if !std::mem::replace(&mut taken[k as usize], true) {
                strip.push(k);
            }
        }
        *left -= strip.len();
        strip
    };
    let (mut ps, mut pe) = (0usize, 0usize);
    for strip in [take(&by_start, &mut ps, outer, &mut left), take(&by_end, &mut pe, outer, &mut left)] {
        unresolved.extend(strip.iter().map(|&k| r[k as usize]));
    }
    let per_box = per_box.min(n as u64) as usize;
    let mut vertical = true;
    while left > 0 {
        let mut strip = if vertical {
            let mut s = take(&by_start, &mut ps, inner, &mut left);
            s.sort_unstable_by_key(|&k| (std::cmp::Reverse(job(k).upper), r[k as usize]));
            s
        } else {
            let mut s = take(&by_end, &mut pe, inner, &mut left);
            s.sort_unstable_by_key(|&k| (job(k).lower, r[k as usize]));
            s
        };
        for group in strip.chunks_mut(per_box) {
            contents.extend(group.iter().map(|&k| r[k as usize]));
            lengths.push(group.len() as u32);
        }
        vertical = !vertical;
    }
}

// ---------------------------------------------------------------------------------------------
// The arena of jobs
// ---------------------------------------------------------------------------------------------

/// A job: an original buffer, the dummy, or a box.
#[derive(Clone, Copy, Debug)]
struct Job {
    lower: u64,
    upper: u64,
    /// The buffer's size, or the box height H.
    height: u64,
    /// For a box, the rounded height class h_i of its contents: each child is at most this
    /// high and at most `height / unit` children are live at once. For other jobs, `height`.
    unit: u64,
    /// Children are `children[first .. first + count]`; `count == 0` for non-boxes.
    first: u32,
    count: u32,
}

/// All jobs of a pass. Jobs `0..originals` are the buffers in input order, then the dummy (if
/// any), then boxes in creation order.
struct Arena {
    jobs: Vec<Job>,
    children: Vec<u32>,
    originals: usize,
    dummy: Option<u32>,
}

impl Arena {
    fn new(buffers: &[Buffer], dummy_height: Option<u64>) -> Arena {
        assert!(buffers.len() < u32::MAX as usize, "boxing handles fewer than 2^32 - 1 buffers");
        let mut jobs: Vec<Job> = buffers
            .iter()
            .map(|b| Job { lower: b.lower, upper: b.upper, height: b.size, unit: b.size, first: 0, count: 0 })
            .collect();
        let dummy = dummy_height.map(|h| {
            let lower = buffers.iter().map(|b| b.lower).min().expect("non-empty");
            let upper = buffers.iter().map(|b| b.upper).max().expect("non-empty");
            jobs.push(Job { lower, upper, height: h, unit: h, first: 0, count: 0 });
            buffers.len() as u32
        });
        Arena { jobs, children: Vec::new(), originals: buffers.len(), dummy }
    }

    /// A box of height `height` around `contents`; its lifetime is their span.
    fn add_box(&mut self, contents: &[u32], height: u64, unit: u64) -> u32 {
        debug_assert!(!contents.is_empty());
        let lower = contents.iter().map(|&j| self.jobs[j as usize].lower).min().expect("non-empty box");
        let upper = contents.iter().map(|&j| self.jobs[j as usize].upper).max().expect("non-empty box");
        let first = self.children.len() as u32;
        self.children.extend_from_slice(contents);
        self.jobs.push(Job { lower, upper, height, unit, first, count: contents.len() as u32 });
        assert!(self.jobs.len() < u32::MAX as usize, "arena overflow");
        (self.jobs.len() - 1) as u32
    }

    fn children_of(&self, j: u32) -> &[u32] {
        let job = &self.jobs[j as usize];
        &self.children[job.first as usize..(job.first + job.count) as usize]
    }
}

// ---------------------------------------------------------------------------------------------
// Unboxing (thesis 4.4, figure 4.6)
// ---------------------------------------------------------------------------------------------

/// Loose offsets of the original buffers, from the top-level boxes.
fn unbox(arena: &Arena, top: &[u32]) -> Vec<u64> {
    let mut u = Unboxer { arena, loose: vec![0; arena.originals] };
    u.set(top, 0);
    u.loose
}

/// Figure 4.6's recursion. Jobs are "of one size" when both their height and their content class
/// (`unit`) match.
///
/// DEVIATION: the thesis compares heights only. Every top-level box has the same height H, so
/// it colours them all together and stacks the rows in colouring order, which interleaves boxes
/// of tiny and of huge buffers by start time; the squeeze then sees an order that is close to
/// random by size. Any order of the rows of equal-height boxes is an equally valid packing of
/// those boxes, so we take the one the squeeze (a first fit) handles best: boxes grouped by the
/// class of their contents, larger classes first, each group coloured on its own. On the
/// minimalloc suite this takes the median pass from 45–88% to 30–40% fragmentation.
struct Unboxer<'a> {
    arena: &'a Arena,
    loose: Vec<u64>,
}

impl Unboxer<'_> {
    /// Places a set of jobs from watermark `w`; returns the highest address reached.
    /// One class: colouring rows. Time-disjoint: all at `w`. Otherwise: class by class, larger
    /// first, each by colouring above the previous one.
    fn set(&mut self, set: &[u32], w: u64) -> u64 {
        let arena = self.arena;
        let class = |j: u32| (arena.jobs[j as usize].height, arena.jobs[j as usize].unit);
        let Some(&first) = set.first() else { return w };
        if set.iter().all(|&j| class(j) == class(first)) {
            return self.same_class(set, w);
        }
        if !overlapping(arena, set) {
            return set.iter().map(|&j| self.job(j, w)).max().unwrap_or(w);
        }
        let mut sorted = set.to_vec();
        sorted.sort_unstable_by_key(|&j| (std::cmp::Reverse(class(j)), j));
        let mut w = w;
        for same in sorted.chunk_by(|&a, &b| class(a) == class(b)) {
            w = self.same_class(same, w);
        }
        w
    }

    /// Interval graph colouring; each row is placed at the watermark, which then rises to the
    /// row's top. DEVIATION: the thesis (and idealloc) raise it by the jobs' height; the highest
    /// address reached keeps every row's buffers strictly below the next row's, which is what
    /// makes equal loose offsets imply time-disjoint buffers (see [`squeeze_order`]).
    fn same_class(&mut self, set: &[u32], mut w: u64) -> u64 {
        let arena = self.arena;
        let spans: Vec<(u64, u64)> =
            set.iter().map(|&j| (arena.jobs[j as usize].lower, arena.jobs[j as usize].upper)).collect();
        let (colour, _) = colour_intervals(&spans);
        let mut rows: Vec<(u32, u32)> = colour.into_iter().zip(set.iter().copied()).collect();
        rows.sort_unstable();
        for row in rows.chunk_by(|a, b| a.0 == b.0) {
            w = row.iter().map(|&(_, j)| self.job(j, w)).max().unwrap_or(w).max(w);
        }
        w
    }

    /// One job at watermark `w`: a buffer gets `w` as loose offset, a box places its contents
    /// from `w`, the dummy takes no room (4.5.7).
    fn job(&mut self, j: u32, w: u64) -> u64 {
        let arena = self.arena;
        if arena.dummy == Some(j) {
            return w;
        }
        if (j as usize) < arena.originals {
            self.loose[j as usize] = w;
            return w + arena.jobs[j as usize].height;
        }
        self.set(arena.children_of(j), w)
    }
}

/// Whether any two of the jobs are live at the same time.
fn overlapping(arena: &Arena, set: &[u32]) -> bool {
    let mut spans: Vec<(u64, u64)> = set.iter().map(|&j| (arena.jobs[j as usize].lower, arena.jobs[j as usize].upper)).collect();
    spans.sort_unstable();
    spans.windows(2).any(|w| w[1].0 < w[0].1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use heaplab_sweep::{max_live, max_load, validate};
    use proptest::prelude::*;

    /// Small deterministic generator for test instances.
    struct Gen(u64);

    impl Gen {
        fn next(&mut self, m: u64) -> u64 {
            self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (self.0 >> 33) % m.max(1)
        }
    }

    /// The adversarial shapes of DESIGN.md, `round` picking the shape and the size.
    fn instance(round: u64) -> (Vec<Buffer>, &'static str) {
        let mut g = Gen(round.wrapping_mul(0x9e37_79b9) + 11);
        let n = (round % 40) as usize;
        let shape = round % 10;
        let mut bs: Vec<Buffer> = (0..n as u64)
            .map(|i| {
                let lo = g.next(50);
                let len = 1 + g.next(20);
                Buffer::new(i, lo, lo + len, 1 + g.next(1000))
            })
            .collect();
        let name = match shape {
            0 => "random",
            1 => {
                bs.iter_mut().for_each(|b| b.size = 48);
                "equal sizes"
            }
            2 => {
                for (i, b) in bs.iter_mut().enumerate() {
                    b.lower = i as u64;
                    b.upper = 2 * n as u64 + 1 - i as u64;
                }
                "nested lifetimes"
            }
            3 => {
                for b in bs.iter_mut() {
                    b.size = 1u64 << g.next(41); // 1 byte to 2^40
                }
                "huge size ratios"
            }
            4 => {
                for b in bs.iter_mut() {
                    b.align_log2 = g.next(7) as u8;
                }
                "alignment"
            }
            5 => {
                for b in bs.iter_mut() {
                    b.upper = b.lower + 1;
                }
                "single-tick lifetimes"
            }
            6 => {
                bs.truncate(1);
                "one buffer"
            }
            7 => {
                for b in bs.iter_mut() {
                    b.size = if g.next(2) == 0 { 3 } else { 7000 };
                }
                "two sizes"
            }
            8 => {
                for b in bs.iter_mut() {
                    b.lower = g.next(5);
                    b.upper = 10 + g.next(5);
                }
                "everything overlapping"
            }
            _ => {
                bs.clear();
                "no buffers"
            }
        };
        (bs, name)
    }

    fn check_valid(bs: &[Buffer], out: &BoxingOutcome, what: &str) {
        if bs.is_empty() {
            assert!(out.offsets.is_empty() && out.makespan == 0, "{what}");
            return;
        }
        assert_eq!(out.offsets.len(), bs.len(), "{what}");
        let v = validate(bs, &out.offsets);
        assert!(v.is_valid(), "{what}: {}", v.describe(bs, &out.offsets));
        assert_eq!(v.makespan, out.makespan, "{what}");
        assert!(out.makespan >= max_load(bs), "{what}");
    }

    #[test]
    fn every_placement_is_valid_on_adversarial_shapes() {
        for round in 0..300u64 {
            let (bs, name) = instance(round);
            for squeeze in [Squeeze::First, Squeeze::Best, Squeeze::Mixed] {
                let params = BoxingParams { seed: round, iterations: 3, squeeze, ..Default::default() };
                let out = plan(&bs, &params);
                check_valid(&bs, &out, &format!("{name} (round {round}, {squeeze:?})"));
                if name == "equal sizes" || name == "one buffer" {
                    assert!(out.solved_trivially && out.makespan == max_load(&bs), "{name}: solved exactly");
                }
            }
        }
    }

    #[test]
    fn extreme_heights_are_boxed_without_overflow() {
        // Equal sizes an alignment does not divide (r = 1: dummy), and sizes near 2^62 next to
        // 1 byte (r = 2^62: box heights near the top of u64).
        let mut equal: Vec<Buffer> = (0..30u64).map(|i| Buffer::new(i, i % 7, i % 7 + 3, 24)).collect();
        equal[3].align_log2 = 4;
        let mut huge: Vec<Buffer> = (0..3u64).map(|i| Buffer::new(i, i, i + 2, 1 << 62)).collect();
        huge.extend((3..20u64).map(|i| Buffer::new(i, i % 5, i % 5 + 2, 1 + i)));
        for (bs, what) in [(equal, "equal sizes, one aligned"), (huge, "sizes near 2^62")] {
            for seed in 0..5 {
                let out = plan(&bs, &BoxingParams { seed, iterations: 3, ..Default::default() });
                assert!(!out.solved_trivially, "{what}: goes through boxing");
                check_valid(&bs, &out, what);
            }
        }
    }

    /// Walks the boxes of one pass and checks what BA promises about them.
    fn check_boxing(arena: &Arena, top: &[u32], what: &str) {
        let h = arena.jobs[top[0] as usize].height;
        assert!(top.iter().all(|&j| arena.jobs[j as usize].height == h), "{what}: top-level boxes of one height");
        let mut seen = vec![0u32; arena.jobs.len()];
        let mut stack: Vec<u32> = top.to_vec();
        while let Some(j) = stack.pop() {
            seen[j as usize] += 1;
            let job = arena.jobs[j as usize];
            if job.count == 0 {
                assert!((j as usize) < arena.originals || arena.dummy == Some(j), "{what}: empty box {j}");
                continue;
            }
            let ch = arena.children_of(j);
            // The lifetime is the span of the contents.
            assert_eq!(job.lower, ch.iter().map(|&c| arena.jobs[c as usize].lower).min().unwrap(), "{what}");
            assert_eq!(job.upper, ch.iter().map(|&c| arena.jobs[c as usize].upper).max().unwrap(), "{what}");
            // The contents fit: each child at most `unit` high, at most H' = height/unit live at once.
            assert!(ch.iter().all(|&c| arena.jobs[c as usize].height <= job.unit), "{what}: child above its class");
            let per_box = job.height / job.unit;
            assert!(per_box >= 1, "{what}: zero box-height parameter");
            let kids: Vec<Buffer> = ch
                .iter()
                .map(|&c| Buffer::new(c as u64, arena.jobs[c as usize].lower, arena.jobs[c as usize].upper, 1))
                .collect();
            assert!(max_live(&kids) as u64 <= per_box, "{what}: {} live in a box of {per_box} rows", max_live(&kids));
            stack.extend_from_slice(ch);
        }
        // Every original buffer (and the dummy) is boxed exactly once; every box is reachable once.
        assert!(seen.iter().all(|&s| s == 1), "{what}: a job boxed {:?} times", seen.iter().find(|&&s| s != 1));
    }

    #[test]
    fn boxing_invariants_hold() {
        for round in 0..200u64 {
            let (bs, name) = instance(round);
            if bs.len() < 2 || solve_conflict_free(&bs).is_some() || solve_equal_sizes(&bs).is_some() {
                continue;
            }
            let pre = Prelude::new(&bs);
            assert!(pre.eps_lo <= pre.eps && pre.eps <= pre.eps_hi);
            for pass in 0..4u64 {
                let eps = if pass == 0 { pre.eps } else { pre.eps_lo + (pass as f64 / 4.0) * (pre.eps_hi - pre.eps_lo) };
                let sched = schedule(&pre.heights, eps);
                let mut arena = Arena::new(&bs, pre.dummy);
                let inject = if pass % 2 == 0 { Injection::WhenNeeded } else { Injection::Always };
                let top = theorem16(&mut arena, &sched, eps, inject, mix(round, pass));
                check_boxing(&arena, &top, &format!("{name} round {round} pass {pass}"));
                // Unboxing gives every buffer a loose offset inside the boxes' total height.
                let loose = unbox(&arena, &top);
                assert_eq!(loose.len(), bs.len());
            }
        }
    }

    #[test]
    fn theorem2_partitions_every_job_and_makes_progress() {
        let mut g = Gen(5);
        for round in 0..300u64 {
            let n = 1 + g.next(60) as usize;
            let bs: Vec<Buffer> = (0..n as u64)
                .map(|i| {
                    let lo = g.next(100);
                    Buffer::new(i, lo, lo + 1 + g.next(if round % 2 == 0 { 5 } else { 60 }), 1)
                })
                .collect();
            let arena = Arena::new(&bs, None);
            let lo = bs.iter().map(|b| b.lower).min().unwrap();
            let hi = bs.iter().map(|b| b.upper).max().unwrap();
            let mut crit: Vec<u64> = (0..g.next(4)).map(|_| lo + g.next(hi - lo)).collect();
            crit.sort_unstable();
            crit.dedup();
            let per_box = 1 + g.next(4);
            let inject = if round % 4 < 2 { Injection::WhenNeeded } else { Injection::Always };
            let task = Task { jobs: (0..n as u32).collect(), lo, hi, crit, per_box, unit: 1, inject, seed: round };
            let eps = [0.05, 0.3, 0.61][round as usize % 3];
            let done = process(&arena.jobs, task, eps);
            let mut seen = vec![0u32; n];
            let mut k = 0;
            for &len in &done.lengths {
                let group = &done.contents[k..k + len as usize];
                k += len as usize;
                assert!(!group.is_empty());
                let kids: Vec<Buffer> = group.iter().map(|&j| bs[j as usize]).collect();
                assert!(max_live(&kids) as u64 <= per_box, "box holds more than H' live jobs");
                group.iter().for_each(|&j| seen[j as usize] += 1);
            }
            for c in &done.children {
                assert!(!c.jobs.is_empty() && c.jobs.len() < n, "sub-problems are strictly smaller");
                assert!(lo <= c.lo && c.lo < c.hi && c.hi <= hi);
                for &j in &c.jobs {
                    let b = &bs[j as usize];
                    assert!(c.lo <= b.lower && b.upper <= c.hi, "job outside its sub-problem's bounds");
                    seen[j as usize] += 1;
                }
                assert!(c.crit.iter().all(|&t| c.lo <= t && t < c.hi));
            }
            assert!(seen.iter().all(|&s| s == 1), "every job lands in exactly one R_i or X_i");
            assert!(done.children.len() < n, "at least one job is boxed");
        }
    }

    #[test]
    fn epsilon_range_needs_ratio_2216_53() {
        let (lo, hi) = epsilon_range(2216.0);
        assert!(lo >= hi, "empty below the threshold");
        let (lo, hi) = epsilon_range(2218.0);
        assert!(lo < hi, "non-empty above it");
        // A small ratio gets a dummy, a large one does not.
        let bs = [Buffer::new(0, 0, 4, 10), Buffer::new(1, 1, 3, 30), Buffer::new(2, 2, 6, 20)];
        let pre = Prelude::new(&bs);
        assert!(pre.dummy.is_some_and(|h| h as f64 >= MIN_RATIO * 10.0));
        assert!(pre.eps_lo < pre.eps_hi);
        let bs = [Buffer::new(0, 0, 4, 1), Buffer::new(1, 1, 3, 1 << 30), Buffer::new(2, 2, 6, 20)];
        let pre = Prelude::new(&bs);
        assert!(pre.dummy.is_none() && pre.eps_lo < pre.eps_hi);
        let sched = schedule(&pre.heights, pre.eps);
        assert!(!sched.rounds.is_empty() && sched.r_star < (1u64 << 30) as f64);
    }

    #[test]
    fn rounded_heights_follow_corollary_15() {
        for eps in [1e-4, 0.01, 0.3, 0.6] {
            let mut prev = 0;
            for h in (1..3000u64).chain([1 << 40, (1 << 53) + 1, u64::MAX / 4]) {
                let r = rounded_height(h, eps);
                assert!(r >= h, "never rounded down");
                assert!((r as f64) <= (h as f64) * (1.0 + eps) + 1.0, "h {h} eps {eps} -> {r}");
                assert!(r >= prev, "monotone");
                prev = r;
            }
        }
    }

    #[test]
    fn same_seed_same_plan() {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
        for round in [3u64, 10, 13, 20, 33] {
            let (bs, name) = instance(round);
            let params = BoxingParams { seed: 42, iterations: 6, ..Default::default() };
            let a = pool.install(|| plan(&bs, &params));
            let b = pool.install(|| plan(&bs, &params));
            assert_eq!(a.offsets, b.offsets, "{name}");
            assert_eq!(a.iterations, b.iterations);
        }
    }

    #[test]
    fn early_stop_never_returns_worse_than_its_bound() {
        for round in (0..120u64).filter(|r| r % 10 == 0 || r % 10 == 3 || r % 10 == 7) {
            let (bs, name) = instance(round);
            if bs.len() < 2 {
                continue;
            }
            let free = plan(&bs, &BoxingParams { seed: round, iterations: 4, ..Default::default() });
            check_valid(&bs, &free, name);
            // A bound at the best makespan found: only strictly better placements come back.
            let bounded = plan(
                &bs,
                &BoxingParams { seed: round, iterations: 4, upper_bound: Some(free.makespan), ..Default::default() },
            );
            if bounded.offsets.is_empty() {
                assert_eq!(bounded.makespan, u64::MAX, "{name}: no placement says so");
            } else {
                check_valid(&bs, &bounded, name);
                assert!(bounded.makespan < free.makespan);
            }
            // An unbeatable bound: nothing, and it says so.
            let ml = max_load(&bs);
            let none = plan(&bs, &BoxingParams { seed: 1, iterations: 4, upper_bound: Some(ml), ..Default::default() });
            assert!(none.offsets.is_empty() && none.makespan == u64::MAX, "{name}");
            // A target already met: no pass at all.
            let met = plan(
                &bs,
                &BoxingParams { seed: 1, iterations: 4, upper_bound: Some(ml + 5), target: ml + 5, ..Default::default() },
            );
            assert!(met.solved_trivially || met.iterations == 0, "{name}");
            // A deadline in the past with a bound: returns at once; without one: still a placement.
            let past = Some(Instant::now());
            let late = plan(&bs, &BoxingParams { seed: 1, iterations: 4, deadline: past, upper_bound: Some(u64::MAX), ..Default::default() });
            assert!(late.solved_trivially || late.iterations == 0);
            let late = plan(&bs, &BoxingParams { seed: 1, iterations: 4, deadline: past, ..Default::default() });
            check_valid(&bs, &late, name);
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]
        #[test]
        fn random_instances_are_placed_validly(
            raw in prop::collection::vec((0u64..40, 1u64..12, 0u32..34, 0u8..5), 0..50),
            seed in any::<u64>(),
        ) {
            let bs: Vec<Buffer> = raw
                .iter()
                .enumerate()
                .map(|(i, &(lo, len, bits, al))| {
                    let mut b = Buffer::new(i as u64, lo, lo + len, 1 + (seed.rotate_left(bits) >> (64 - bits.max(1))));
                    b.align_log2 = al;
                    b
                })
                .collect();
            let out = plan(&bs, &BoxingParams { seed, iterations: 2, ..Default::default() });
            check_valid(&bs, &out, "proptest");
        }
    }
}
