//! The portfolio driver behind `heaplab plan`. It owns the order of the stages and how they
//! hand placements on; every number that decides which stage runs on what and for how long is
//! a field of [`Policy`] (its defaults are the figures quoted below), and each stage but the
//! heuristics can be switched off there ([`Stage`]).
//!
//! 1. Split the instance into independent components (time ranges no buffer crosses); each is
//!    planned alone from offset 0, and the makespan is the largest component makespan.
//! 2. Solve trivial components exactly (no conflicts; all sizes equal), except when a single
//!    heuristic or the heuristics alone were asked for.
//! 3. Run the greedy heuristics on every component, in parallel, keeping the best. Under `Auto`
//!    they may not start after the first quarter of the time limit, kept for the searches.
//!    Above 2·10^6 buffers the start-order sweep goes first; up to 4·10^6
//!    ([`Policy::huge_first_fit_max_buffers`]) first fit by size runs beside it, and above that
//!    only the sweeps and first fit around the rocks run (memory); where the size split
//!    follows (below), the outward pair, the rocks and the outward sweep from the peak.
//!    Beside the first heuristic, on the other core, run the start-order sweep, first fit
//!    around the rocks and the outward sweep from the peak, as the time allows. Wherever first
//!    fit by size runs first, it is kept only while its pace says it will finish by the
//!    deadline ([`crate::heuristics::Pace`]), the sweep standing in once it gives up.
//!    From 50,000 buffers ([`Policy::split_min_buffers`]), on a component whose largest
//!    fifth holds nearly all the area, with [`Policy::split_seconds_per_buffer`] of limit,
//!    the *size split* ([`crate::split`]) follows, in place of the early windows (step 5;
//!    not where the deep chase runs it): the large part planned alone by this pipeline (above
//!    2·10^6 buffers as the huge path plans) in [`Policy::split_share`] of the time left, the
//!    rest placed around it.
//! 4. On *flat* components (load equal to the max at every tick) of more than 64 buffers that
//!    decide the makespan, merge the buffers into blocks ([`crate::flat`]) and plan the blocks by
//!    this same pipeline (nested), trying other merge orders while they do not pack at the
//!    lower bound. Up to 80% of the time left.
//! 5. On components of more than 2,000 buffers ([`Policy::small_buffers`]), plan the *critical windows*
//!    ([`crate::windows`]): the stretches of time where the makespan is decided, each planned
//!    alone by this same pipeline (nested: without flat blocks or windows), the rest filled in
//!    around them. Up to 80% of the time left ([`Policy::windows_share`]), if a first-fit placement and
//!    a fifth more fit in it, else their local form from the best placement (one window at a
//!    time, re-placing only a ring of buffers around it); above 2·10^6 buffers
//!    ([`Policy::huge_buffers`]) only the local form. On the largest component, when it has 50,000–400,000 buffers and
//!    is not flat, the windows start at once instead, beside stage 3 on the other core (one
//!    first-fit placement there can take a third of a 3 s budget), and stop as soon as a
//!    heuristic reaches the lower bound; the stage is then named `heuristics + critical windows`.
//!    So too above 400,000 buffers when the limit is long enough for a fill
//!    ([`Policy::early_windows_seconds_per_buffer`]); there the first round opens a window at
//!    every stretch near the max load ([`Policy::windows_depth`]), the fill stacks the smallest
//!    buffers ([`Policy::windows_tail_load`]), and it stands in for first fit by size, which
//!    runs only when cheap; once the heuristics are done, their core runs a second chase whose
//!    first round opens only the peak's window (which of the two fills best depends on how
//!    flat the load is), and each stops its fills above the other's best.
//! 6. On components small enough for it (a bounded conflict count), run the exact search
//!    ([`crate::exact`]) from the best placement: it tries the lower bound first, then goes on
//!    with it beside a descent that halves the gap from above (see [`crate::exact::minimize`]),
//!    and proves optimality when it closes the gap. Under `Auto` it
//!    gets 90% of the time left when components have at most 2,000 buffers, else 10% (all of
//!    it for a component that decides the makespan alone, 60% of it per component when several
//!    tie); what it refutes raises the lower bound.
//! 7. Improve the components that decide the makespan with the large-neighbourhood search
//!    ([`crate::improve`]) from the best placement and the runners-up, one per thread: exact
//!    re-packing of small slabs under each peak, then greedy re-packing of time windows; it gets
//!    half of the time left (a third when a component has more than 2,000 buffers: boxing pays
//!    more there) and returns early when stuck. Above 2·10^6 buffers, and where first fit by
//!    size gave up (no fill or boxing pass fits in the time there either), it runs to its
//!    deadline (above 2·10^6 buffers from the best placement alone), and then it and the local windows take turns
//!    (windows until [`Policy::huge_windows_patience`] rounds fail, the search for half of the
//!    time left) until the windows' share of what is left drops below
//!    [`Policy::local_windows_min_seconds`]; boxing does not run there.
//! 8. Spend the remaining time on the boxing algorithm ([`crate::boxing`]) for the components
//!    whose makespan is above the global lower bound — only those decide the result — largest
//!    first, each bootstrapped with its best heuristic makespan (passes that cannot beat it stop
//!    early). Each component gets 60% of the time left (the last one all of it), `--iterations`
//!    passes at most, and seeds derived from `--seed` and its index; time left over goes back to
//!    the component that decides the makespan (see `boxing_stage`). `Algorithm::Boxing` runs
//!    this stage alone, on every non-trivial component, without bootstrapping.
//!    Under `Auto` boxing keeps a fifth of its time for a last improvement search on what it
//!    found (always run on components above 2,000 buffers, else only when boxing improved).
//! 9. Stop as soon as the makespan equals the lower bound (proven optimal) or time runs out; a
//!    component whose first heuristic already reaches the lower bound runs no other.
//!
//! With a capacity ([`PlanOptions::capacity`], the memory there is) every stage aims at the
//! capacity instead of the lower bound, so the plan ends at the first placement within it; the
//! exact search decides that capacity alone, on every component above it, smallest first with
//! equal shares of its time, and once it proves that one cannot fit, the stages after it do not
//! run.
//!
//! Every result is validated before it is returned; an invalid placement is a bug and panics.

use crate::boxing::{self, BoxingParams, Squeeze};
use crate::exact;
use crate::improve;
use crate::heuristics::{self, Fit, Heuristic, Order};
use crate::policy::{Policy, Stage};
use heaplab_model::Buffer;
use rayon::prelude::*;
use std::borrow::Cow;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Which algorithm `plan` may use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Algorithm {
    /// Everything, best result wins (the default).
    Auto,
    /// Only the greedy heuristics (all standard orders and fits).
    Heuristics,
    /// One named heuristic.
    Heuristic(Heuristic),
    /// Only the boxing algorithm (no heuristic bootstrapping).
    Boxing,
    /// Only the exact search (from first-fit/size), on components within its conflict budget
    /// (`exact` on the command line).
    ExactSearch,
}

impl Algorithm {
    /// Names accepted by `--algorithm`.
    pub const NAMES: &'static str = "auto, heuristics, boxing, exact, first-fit/size, best-fit/size, first-fit/area, \
best-fit/area, first-fit/lifetime, best-fit/lifetime, first-fit/start, best-fit/start, first-fit/rocks, best-fit/rocks, first-fit/outward, best-fit/outward, first-fit/random, \
best-fit/random";

    /// Parses a name from [`Algorithm::NAMES`]; `random` orders use the seed.
    pub fn parse(s: &str, seed: u64) -> Option<Algorithm> {
        match s {
            "auto" => return Some(Algorithm::Auto),
            "heuristics" => return Some(Algorithm::Heuristics),
            "boxing" => return Some(Algorithm::Boxing),
            "exact" => return Some(Algorithm::ExactSearch),
            _ => {}
        }
        let (fit, order) = s.split_once('/')?;
        let fit = match fit {
            "first-fit" => Fit::First,
            "best-fit" => Fit::Best,
            _ => return None,
        };
        let order = match order {
            "size" => Order::Size,
            "area" => Order::Area,
            "lifetime" => Order::Length,
            "start" => Order::Start,
            "rocks" => Order::Rocks,
            "outward" => Order::Outward,
            "peak" => Order::Peak,
            "random" => Order::Random(seed),
            _ => return None,
        };
        Some(Algorithm::Heuristic(Heuristic { order, fit }))
    }

    /// Whether this algorithm includes `stage` (the policy may still switch it off). The greedy
    /// heuristics are not a stage: every algorithm but `Boxing` runs some.
    pub fn includes(self, stage: Stage) -> bool {
        match self {
            Algorithm::Auto => true,
            Algorithm::Heuristics | Algorithm::Heuristic(_) => false,
            Algorithm::ExactSearch => matches!(stage, Stage::Trivial | Stage::Exact),
            Algorithm::Boxing => matches!(stage, Stage::Trivial | Stage::Boxing),
        }
    }
}

/// Live figures of a running plan, read by the CLI's progress line.
#[derive(Debug, Default)]
pub struct Progress {
    /// Best makespan so far (0 until the first complete placement).
    pub best: AtomicU64,
    /// What the driver is doing.
    pub stage: Mutex<String>,
}

impl Progress {
    fn set_stage(&self, s: impl Into<String>) {
        if let Ok(mut g) = self.stage.lock() {
            *g = s.into();
        }
    }
}

/// The longest time limit front ends accept for [`PlanOptions::time_limit`], in seconds: one
/// week. Longer is a typo rather than a plan, and deadlines stay far from `Instant` overflow.
pub const MAX_TIME_LIMIT_SECS: f64 = 604_800.0;

/// Options for [`plan`].
#[derive(Clone, Debug)]
pub struct PlanOptions {
    /// Wall-clock budget; the driver returns its best placement when it runs out.
    pub time_limit: Duration,
    /// Cap on boxing iterations (per component), if any.
    pub iterations: Option<usize>,
    /// Seed for every stochastic step.
    pub seed: u64,
    /// Algorithm restriction.
    pub algorithm: Algorithm,
    /// Memory available, as minimalloc takes it: when set, a placement with makespan at most
    /// this is enough, and the driver stops at the first it finds instead of minimising further
    /// (the exact search then decides this capacity alone). Whether one fits is for the caller
    /// to check on the outcome; a proof that none does shows as a lower bound above it.
    pub capacity: Option<u64>,
    /// Which stages run, their shares of the time and the sizes that choose between them
    /// ([`Policy::default`]: the tuned portfolio). Nested plans (windows, blocks) inherit it.
    pub policy: Policy,
    /// Set from another thread to stop planning early (a front end's Ctrl-C): every stage
    /// treats it as its deadline having passed, so `plan` returns the best placement found so
    /// far, validated, as soon as the running stage notices.
    pub cancel: Option<Arc<AtomicBool>>,
}

impl Default for PlanOptions {
    fn default() -> Self {
        PlanOptions {
            time_limit: Duration::from_secs(3),
            iterations: None,
            seed: 1,
            algorithm: Algorithm::Auto,
            capacity: None,
            policy: Policy::default(),
            cancel: None,
        }
    }
}

/// One algorithm's result on the whole instance (its makespan assuming the other components keep
/// their best placements is not meaningful, so this is per the component that decides the
/// makespan).
#[derive(Clone, Debug)]
pub struct Attempt {
    /// Algorithm name.
    pub name: String,
    /// Makespan it reached on the deciding component.
    pub makespan: u64,
    /// Seconds it took there.
    pub seconds: f64,
}

/// What [`plan`] returns.
#[derive(Clone, Debug)]
pub struct PlanOutcome {
    /// Offsets, parallel to the input buffers. Validated.
    pub offsets: Vec<u64>,
    /// Highest `offset + size`.
    pub makespan: u64,
    /// Max load: the trivial lower bound.
    pub max_load: u64,
    /// The best proven lower bound: the max load, raised where the exact search refuted
    /// capacities of the component that decides it.
    pub lower_bound: u64,
    /// Whether `makespan == lower_bound`, which proves optimality.
    pub optimal: bool,
    /// The algorithm that produced the component deciding the makespan.
    pub algorithm: String,
    /// Number of independent components.
    pub components: usize,
    /// Buffers in the component deciding the makespan.
    pub critical_buffers: usize,
    /// Results of each algorithm on that component.
    pub attempts: Vec<Attempt>,
    /// Boxing iterations run in all.
    pub boxing_iterations: usize,
    /// Wall time spent in each stage (name, seconds), in the order they first ran.
    pub stages: Vec<(String, f64)>,
    /// Wall time spent in `plan`.
    pub seconds: f64,
    /// Of that, seconds spent validating placements (each one offered, and the assembled
    /// result), which the time limit does not cover.
    pub validation_seconds: f64,
}

struct Part<'a> {
    /// Indices into the full instance; empty when the part is the whole instance, which was
    /// already in start order.
    index: Vec<u32>,
    /// The part's buffers: borrowed (no copy, 48 bytes a buffer saved) when they are the whole
    /// instance in start order, common at scale (a trace, the `nn` and `malloc` generators).
    buffers: Cow<'a, [Buffer]>,
    /// The part's buffers in order of their ends, from the splitting, for the start-order
    /// sweep; emptied once the heuristics have run.
    ends: Vec<u32>,
    max_load: u64,
    /// Proven lower bound on this component's makespan (its max load, or more).
    lower: u64,
    offsets: Vec<u64>,
    makespan: u64,
    algorithm: String,
    attempts: Vec<Attempt>,
    /// Solved in closed form by the trivial cases ([`Stage::Trivial`]): no stage works on it.
    solved_trivially: bool,
    /// The next best placements (makespan, algorithm, offsets), best first: other starting
    /// points for the improvement search, which gets stuck in different places from each.
    runners_up: Vec<(u64, String, Vec<u64>)>,
    /// How many runners-up to keep: the policy's count, or none on a component too large for
    /// the copies.
    keep_runners_up: usize,
    /// Predicted seconds of one first-fit placement (measured on the first heuristic, scaled
    /// by its relative cost); a boxing pass costs at least that and cannot be interrupted
    /// before its squeeze, so under `Auto` boxing is skipped when less time is left.
    first_fit_seconds: f64,
    /// Seconds of the start-order sweep, measured, or where the outward pair ran instead,
    /// scaled from its time (0 when neither ran): what an O(n log n) pass over the part costs,
    /// such as building an improvement search's index, which cannot be interrupted
    /// ([`Policy::improve_min_sweeps`]).
    sweep_seconds: f64,
    /// The critical windows already ran on this part (beside the heuristics), and the windows
    /// stage leaves it alone.
    windowed: bool,
    /// The first heuristic (first fit by size) gave up, its pace projecting past the deadline:
    /// as above [`Policy::huge_buffers`], the fills and boxing, which cost a first-fit
    /// placement, cannot run, so the local windows and the improvement search take turns to
    /// the deadline ([`Part::searched_to_deadline`]).
    first_gave_up: bool,
    /// More than [`Policy::flat_min_buffers`] buffers and flat ([`crate::flat::is_flat`]): the
    /// flat stage's, which the heuristics and the early windows leave to it. Asked once here.
    flat: bool,
    /// Seconds spent validating the placements offered.
    validating: f64,
    /// Placements offered are not validated one by one, only the result (in `assemble`):
    /// above [`Policy::huge_buffers`], where a validation takes seconds that belong to the
    /// searches.
    validate_at_end: bool,
    /// The size split's large part ([`crate::split::large_part`]) where the split follows the
    /// heuristics ([`split_after_heuristics`]); empty elsewhere.
    split_large: Vec<u32>,
}

impl Part<'_> {
    /// Whether nothing after the improvement search uses the time on this part, so that it
    /// and the local windows take turns to the deadline: above [`Policy::huge_buffers`], or
    /// where first fit by size could not be finished in the limit.
    fn searched_to_deadline(&self, policy: &Policy) -> bool {
        policy.is_huge(self.buffers.len()) || self.first_gave_up
    }

    fn offer(&mut self, name: String, offsets: Vec<u64>, seconds: f64) {
        let checked = self.check(&name, &offsets);
        self.offer_checked(name, offsets, seconds, checked);
    }

    /// Validates `offsets` (panics, naming `name`, when they are not valid; above
    /// [`Policy::huge_buffers`] only measures them, see `validate_at_end`): the makespan and
    /// the seconds spent. Needs only a shared borrow, so a heuristic's own thread can check its
    /// placement as soon as it is made instead of the driver after the deadline.
    fn check(&self, name: &str, offsets: &[u64]) -> Checked {
        check_placement(&self.buffers, self.validate_at_end, name, offsets)
    }

    /// [`Part::offer`] of a placement [`Part::check`] has checked.
    fn offer_checked(&mut self, name: String, offsets: Vec<u64>, seconds: f64, checked: Checked) {
        let makespan = checked.makespan;
        self.validating += checked.seconds;
        self.attempts.push(Attempt { name: name.clone(), makespan, seconds });
        let mut loser = (makespan, name, offsets);
        if self.offsets.is_empty() || makespan < self.makespan {
            std::mem::swap(&mut loser.2, &mut self.offsets);
            std::mem::swap(&mut loser.1, &mut self.algorithm);
            loser.0 = std::mem::replace(&mut self.makespan, makespan);
        }
        if self.keep_runners_up > 0 && !loser.2.is_empty() && !self.runners_up.iter().any(|r| r.0 == loser.0) {
            self.runners_up.push(loser);
            self.runners_up.sort_by_key(|r| r.0);
            self.runners_up.truncate(self.keep_runners_up);
        }
    }
}

/// What [`Part::check`] found of a placement: its makespan, and the seconds validating it took.
#[derive(Clone, Copy)]
struct Checked {
    makespan: u64,
    seconds: f64,
}

/// [`Part::check`] of a component's `buffers` (`measure_only`: its `validate_at_end`), for a
/// thread that cannot borrow the part.
fn check_placement(buffers: &[Buffer], measure_only: bool, name: &str, offsets: &[u64]) -> Checked {
    if measure_only {
        return Checked { makespan: buffers.iter().zip(offsets).map(|(b, &o)| o + b.size).max().unwrap_or(0), seconds: 0.0 };
    }
    let t = Instant::now();
    let v = heaplab_sweep::validate(buffers, offsets);
    assert!(v.is_valid(), "{name} produced an invalid placement: {}", v.describe(buffers, offsets));
    Checked { makespan: v.makespan, seconds: t.elapsed().as_secs_f64() }
}

/// Plans `buffers` within the options' limits. Optional `progress` is updated as it goes.
pub fn plan(buffers: &[Buffer], opts: &PlanOptions, progress: Option<&Progress>) -> PlanOutcome {
    plan_at(buffers, opts, progress, false, StageClock::new(progress))
}

/// [`plan`] with the buffers put in start order in place while it runs and back in their own
/// order before it returns: the same plan and outcome (the components see their buffers in
/// the same order), and an instance that is one component is then planned without a copy of
/// it during planning (48 bytes a buffer; 480 MB at 10^7 buffers), at the cost of an index
/// (4 bytes a buffer) and of copies made just before and after, outside planning's peak. For
/// callers that own the buffers and plan large instances (the CLI).
///
/// The time limit and the outcome's seconds count from the call, the ordering included (about
/// half a second each way at 10^7 buffers), so that a caller's limit holds the whole call.
pub fn plan_in_place(buffers: &mut Vec<Buffer>, opts: &PlanOptions, progress: Option<&Progress>) -> PlanOutcome {
    if buffers.is_sorted_by_key(|b| b.lower) || buffers.len() > u32::MAX as usize {
        return plan(buffers, opts, progress);
    }
    let mut clock = StageClock::new(progress);
    clock.mark("putting buffers in start order");
    // Start order, ties by index: the order `split` gives a component's buffers (the sort
    // the splitting does, on both cores; the keys are distinct, so the order is the same on
    // any number of threads).
    let order = heaplab_sweep::sorted_by(buffers, |b| b.lower);
    // Through a copy that replaces the buffers (the old ones are dropped before planning
    // starts, and again after it ends), outside its peak.
    *buffers = gathered(buffers, &order);
    let mut sorted = InStartOrder { buffers, order, restored: false };
    let mut out = plan_at(sorted.buffers, opts, progress, false, clock);
    let t = Instant::now();
    // The offsets and the buffers both gathered through each buffer's place in start order.
    let place = sorted.places();
    out.offsets = gathered(&out.offsets, &place);
    sorted.restore(&place);
    drop(place);
    let back = t.elapsed().as_secs_f64();
    out.stages.push(("putting buffers back in their order".to_string(), back));
    out.seconds += back;
    out
}

/// Buffers put in start order by [`plan_in_place`] (`order[k]`: the index of the k-th), which
/// go back to their own order when this is dropped, after a panic in planning too.
struct InStartOrder<'a> {
    buffers: &'a mut Vec<Buffer>,
    order: Vec<u32>,
    restored: bool,
}

impl InStartOrder<'_> {
    /// `place[i]`: where the buffer of index `i` lies in start order (the inverse of `order`).
    /// Each core writes the places of one range of indices, reading all of `order` (in order)
    /// to find them: a scatter split by where it writes, which needs no shared writes.
    fn places(&self) -> Vec<u32> {
        let n = self.order.len();
        let chunk = n.div_ceil(rayon::current_num_threads().max(1)).max(1 << 16);
        let mut place = vec![0u32; n];
        place.par_chunks_mut(chunk).enumerate().for_each(|(c, part)| {
            let lo = (c * chunk) as u32;
            for (k, &i) in self.order.iter().enumerate() {
                if let Some(p) = i.checked_sub(lo).and_then(|d| part.get_mut(d as usize)) {
                    *p = k as u32;
                }
            }
        });
        place
    }

    /// Puts the buffers back in their own order; `place` from [`InStartOrder::places`].
    fn restore(&mut self, place: &[u32]) {
        *self.buffers = gathered(self.buffers, place);
        self.restored = true;
    }
}

/// `items[from[k]]` for each k (`from` a permutation), on every core into a new vector: in
/// place, by following cycles, each move would wait for the last one's cache miss (several
/// times slower at 10^7 buffers), and a copy back into the old one would cost a pass more.
fn gathered<T: Copy + Send + Sync>(items: &[T], from: &[u32]) -> Vec<T> {
    from.par_iter().map(|&i| items[i as usize]).collect()
}

impl Drop for InStartOrder<'_> {
    fn drop(&mut self) {
        if !self.restored {
            let place = self.places();
            self.restore(&place);
        }
    }
}

/// [`plan`]; `nested` for the plan of a sub-instance (a window, a flat component's blocks; see
/// [`plan_nested`]), which opens no windows and merges no blocks again. One stage after the
/// other, each on the components still above their target (see the module's list). The time
/// limit counts from `clock`'s start.
fn plan_at(buffers: &[Buffer], opts: &PlanOptions, progress: Option<&Progress>, nested: bool, mut clock: StageClock<'_>) -> PlanOutcome {
    clock.mark("splitting into components");
    let mut parts = split(buffers, &opts.policy);
    let run = Run::new(opts, progress, nested, clock.start, &parts);

    let early = early_windows_part(&run, &parts);
    // The size split follows the heuristics wherever it applies, but on the part whose deep
    // chase runs it (above the early windows' range, with the time for fills); where it
    // follows, it takes the early windows' place.
    for (i, part) in parts.iter_mut().enumerate() {
        if !filled(&opts.policy, early, i, part) {
            part.split_large = split_after_heuristics(&run, part).unwrap_or_default();
        }
    }
    let early = early.filter(|&i| parts[i].split_large.is_empty());
    clock.mark(if early.is_some() { "heuristics + critical windows" } else { "heuristics" });
    heuristics_stage(&run, &mut parts, early);
    if parts.iter().any(|p| !p.split_large.is_empty()) {
        clock.mark("size split");
        split_stage(&run, &mut parts);
    }

    // Small components are where the exact search shines and boxing rarely helps; on large
    // ones the exact search is a long shot and boxing, then improving its result, pays most.
    // In a nested plan (a window's dense buffers) small goes up to what the exact search takes.
    let largest = parts.iter().filter(|p| !p.solved_trivially).map(|p| p.buffers.len()).max().unwrap_or(0);
    let small = opts.policy.is_small(largest, nested);

    if run.runs(Stage::Flat) {
        clock.mark("flat components");
        flat_stage(&run, &mut parts);
    }
    if run.runs(Stage::Windows) && !small {
        clock.mark("critical windows");
        windows_stage(&run, &mut parts);
    }
    if run.runs(Stage::Exact) {
        clock.mark("exact search");
        let share = match opts.algorithm {
            Algorithm::Auto if small => opts.policy.exact_share_small,
            Algorithm::Auto => opts.policy.exact_share_large,
            _ => 1.0,
        };
        exact_stage(&run, &mut parts, share);
    }
    // Once a component is proven not to fit the capacity, nothing more is worth doing.
    if run.runs(Stage::Improve) && !refuted(&parts, opts.capacity) {
        clock.mark("improvement search");
        let share = if small { opts.policy.improve_share_small } else { opts.policy.improve_share_large };
        improve_stage(&run, &mut parts, run.share_of_left(share), opts.seed);
    }
    // Above the huge size, and where first fit by size gave up, boxing does not run: the local
    // windows and the improvement search take turns until the deadline instead, each getting
    // stuck where the other still moves.
    if run.runs(Stage::Windows) && run.runs(Stage::Improve) && !small && !refuted(&parts, opts.capacity) {
        for turn in 1u64.. {
            let searched = above_target(&parts, run.target, |p| p.searched_to_deadline(&opts.policy));
            let left = run.left().as_secs_f64();
            if searched.is_empty() || left <= 0.0 || left * opts.policy.windows_share < opts.policy.local_windows_min_seconds || run.cancelled() {
                break;
            }
            clock.mark("critical windows");
            windows_stage(&run, &mut parts);
            clock.mark("improvement search");
            improve_stage(&run, &mut parts, run.share_of_left(0.5), opts.seed ^ (turn << 8));
        }
    }
    let mut boxing_iterations = 0;
    if run.runs(Stage::Boxing) && !refuted(&parts, opts.capacity) {
        clock.mark("boxing");
        // Part of what is left is kept to polish what boxing finds, when that runs.
        let boxing_deadline = if run.runs(Stage::Polish) { run.share_of_left(opts.policy.boxing_share) } else { run.deadline };
        let before: Vec<u64> = parts.iter().map(|p| p.makespan).collect();
        boxing_iterations = boxing_stage(&run, &mut parts, boxing_deadline);
        // On small components only a boxing result that improved something is worth polishing.
        if run.runs(Stage::Polish) && (!small || parts.iter().zip(&before).any(|(p, &b)| p.makespan < b)) {
            clock.mark("improvement search");
            improve_stage(&run, &mut parts, run.deadline, opts.seed ^ 1);
        }
    }

    clock.mark("assembling");
    assemble(buffers, &mut parts, run.lower_bound, boxing_iterations, clock)
}

/// What every stage of one [`plan_at`] call reads: the options, the clock and the targets.
struct Run<'a> {
    opts: &'a PlanOptions,
    progress: Option<&'a Progress>,
    nested: bool,
    start: Instant,
    deadline: Instant,
    /// The largest max load of a component: the global lower bound.
    lower_bound: u64,
    /// The makespan at which a component is done: the lower bound, or a capacity above it.
    target: u64,
}

impl<'a> Run<'a> {
    fn new(opts: &'a PlanOptions, progress: Option<&'a Progress>, nested: bool, start: Instant, parts: &[Part]) -> Self {
        let lower_bound = parts.iter().map(|p| p.max_load).max().unwrap_or(0);
        let target = opts.capacity.map_or(lower_bound, |c| c.max(lower_bound));
        Run { opts, progress, nested, start, deadline: start + opts.time_limit, lower_bound, target }
    }

    /// Whether `stage` runs: the algorithm includes it, the policy has it on, (for the
    /// stages that plan sub-instances by this driver) this is not already such a plan, and the
    /// plan was not cancelled.
    fn runs(&self, stage: Stage) -> bool {
        let recursive = matches!(stage, Stage::Split | Stage::EarlyWindows | Stage::Flat | Stage::Windows);
        self.opts.algorithm.includes(stage) && self.opts.policy.runs(stage) && !(self.nested && recursive) && !self.cancelled()
    }

    /// Whether the caller cancelled the plan ([`PlanOptions::cancel`]).
    fn cancelled(&self) -> bool {
        self.opts.cancel.as_ref().is_some_and(|c| c.load(Ordering::Relaxed))
    }

    /// The time left to the deadline.
    fn left(&self) -> Duration {
        self.deadline.saturating_duration_since(Instant::now())
    }

    /// The instant `share` of the time left from now.
    fn share_of_left(&self, share: f64) -> Instant {
        let now = Instant::now();
        now + self.deadline.saturating_duration_since(now).mul_f64(share)
    }
}

/// Wall time per stage, for the summary and the progress line: each stage's name and when it
/// began.
struct StageClock<'a> {
    start: Instant,
    marks: Vec<(String, Instant)>,
    progress: Option<&'a Progress>,
}

impl<'a> StageClock<'a> {
    fn new(progress: Option<&'a Progress>) -> Self {
        StageClock { start: Instant::now(), marks: Vec::new(), progress }
    }

    fn mark(&mut self, stage: &str) {
        self.marks.push((stage.to_string(), Instant::now()));
        if let Some(p) = self.progress {
            p.set_stage(stage)
        }
    }

    /// Seconds per stage name, in the order they first ran.
    fn stages(&self) -> Vec<(String, f64)> {
        let mut stages: Vec<(String, f64)> = Vec::new();
        for (k, (name, at)) in self.marks.iter().enumerate() {
            let end = self.marks.get(k + 1).map(|m| m.1).unwrap_or_else(Instant::now);
            match stages.iter_mut().find(|(n, _)| n == name) {
                Some(st) => st.1 += (end - *at).as_secs_f64(),
                None => stages.push((name.clone(), (end - *at).as_secs_f64())),
            }
        }
        stages
    }
}

/// The instance's independent components (time ranges no buffer crosses), each to be planned
/// alone from offset 0.
fn split<'a>(buffers: &'a [Buffer], policy: &Policy) -> Vec<Part<'a>> {
    let comps = heaplab_sweep::components(buffers);
    let single = comps.len() == 1;
    // Each buffer's index in its component, to give the components' end orders in their own
    // indices; not needed when the one component is the input itself.
    let mut local: Vec<u32> = Vec::new();
    comps
        .into_iter()
        .map(|c| {
            // A component is its buffers in start order (ties by index), which the algorithms'
            // tie-breaks see; only when that is the input order can the input be borrowed.
            let (index, bs, ends) = if single && c.buffers.iter().enumerate().all(|(k, &i)| i as usize == k) {
                (Vec::new(), Cow::Borrowed(buffers), c.ends)
            } else {
                if local.is_empty() {
                    local = vec![0; buffers.len()];
                }
                for (k, &i) in c.buffers.iter().enumerate() {
                    local[i as usize] = k as u32;
                }
                let ends = c.ends.iter().map(|&i| local[i as usize]).collect();
                let bs: Vec<Buffer> = c.buffers.iter().map(|&i| buffers[i as usize]).collect();
                (c.buffers, Cow::Owned(bs), ends)
            };
            let max_load = c.max_load;
            // Above the huge size too none: the improvement search from the best placement
            // runs to its deadline there, and a runner-up would be 80 MB (10^7 buffers) of the
            // peak that its index sets, never searched from.
            let keep_runners_up = if bs.len() <= policy.runners_up_max_buffers { policy.runners_up } else { 0 };
            let huge = policy.is_huge(bs.len());
            let flat = bs.len() > policy.flat_min_buffers && crate::flat::is_flat(&bs, max_load);
            Part {
                max_load,
                lower: max_load,
                index,
                buffers: bs,
                ends,
                offsets: Vec::new(),
                makespan: 0,
                algorithm: String::new(),
                attempts: Vec::new(),
                solved_trivially: false,
                runners_up: Vec::new(),
                keep_runners_up,
                first_fit_seconds: 0.0,
                sweep_seconds: 0.0,
                windowed: false,
                first_gave_up: false,
                flat,
                validating: 0.0,
                validate_at_end: huge,
                split_large: Vec::new(),
            }
        })
        .collect()
}

/// The component on which the critical windows start beside the heuristics, if any: the
/// largest, when its size is in the policy's range (or above it, up to the huge size, when the
/// time limit is long enough for a fill) and it is not flat. There the windows are what usually
/// reaches the max load, and one first-fit placement can take a third of a 3 s budget (on 10^6
/// buffers, most of a 30 s one), so they start at once on the other core.
fn early_windows_part(run: &Run, parts: &[Part]) -> Option<usize> {
    if !run.runs(Stage::EarlyWindows) {
        return None;
    }
    let policy = &run.opts.policy;
    let i = (0..parts.len()).max_by_key(|&i| (parts[i].buffers.len(), std::cmp::Reverse(i)))?;
    let p = &parts[i];
    let n = p.buffers.len();
    // Above the range, a limit long enough for a first-fit placement and a fill, one on each
    // core (see the policy).
    let long = !policy.is_huge(n) && run.opts.time_limit.as_secs_f64() >= policy.early_windows_seconds_per_buffer * n as f64;
    let sized = (policy.early_windows_min_buffers..=policy.early_windows_max_buffers).contains(&n) || (n > policy.early_windows_max_buffers && long);
    (sized && !p.flat).then_some(i)
}

/// Whether part `i` is the early windows' part `early` above their range ([`early_windows_part`]
/// gave it the time for fills): there the chases' fill stands in for first fit by size, and
/// the deep chase's core runs the size split.
fn filled(policy: &Policy, early: Option<usize>, i: usize, part: &Part) -> bool {
    early == Some(i) && part.buffers.len() > policy.early_windows_max_buffers
}

/// The trivial cases and the greedy heuristics on every component, in parallel; beside them,
/// on part `early` (see [`early_windows_part`]), the critical windows, which stop once a
/// heuristic reaches the target there.
fn heuristics_stage(run: &Run, parts: &mut [Part], early: Option<usize>) {
    let opts = run.opts;
    let policy = &opts.policy;
    // Under `Auto`, further heuristics may not start once they would run past their share of
    // the budget: the rest belongs to the searches that improve on them.
    let (heuristics_deadline, heuristics_cutoff) = if opts.algorithm == Algorithm::Auto {
        (run.start + opts.time_limit.mul_f64(policy.heuristics_share), run.start + opts.time_limit.mul_f64(policy.heuristics_cutoff_share))
    } else {
        (run.deadline, run.deadline)
    };
    let heuristics: Vec<Heuristic> = match opts.algorithm {
        Algorithm::Auto | Algorithm::Heuristics => Heuristic::STANDARD.to_vec(),
        Algorithm::Heuristic(h) => vec![h],
        Algorithm::ExactSearch => vec![Heuristic::STANDARD[0]],
        Algorithm::Boxing => Vec::new(),
    };
    // The heuristics post their makespans on the early windows' part to `rival`, which stops
    // the windows once one reaches the target.
    let rival = Arc::new(AtomicU64::new(u64::MAX));
    let post = |i: usize, makespan: u64| {
        if early == Some(i) {
            rival.fetch_min(makespan, Ordering::Relaxed);
        }
    };
    let target = run.target;
    let run_heuristics = |parts: &mut [Part]| parts.par_iter_mut().enumerate().for_each(|(index, part)| {
        // For the start-order sweeps only: dropped (4 bytes a buffer) when this returns.
        let ends = std::mem::take(&mut part.ends);
        // Trivial cases first (also under `Boxing`, whose own prelude would solve them anyway,
        // so that they do not take a share of the boxing time).
        if run.runs(Stage::Trivial) {
            let t = Instant::now();
            if let Some(off) = heuristics::solve_conflict_free(&part.buffers) {
                part.offer("exact: no conflicts".into(), off, t.elapsed().as_secs_f64());
            } else if let Some(off) = heuristics::solve_equal_sizes(&part.buffers) {
                part.offer("exact: equal sizes (interval colouring)".into(), off, t.elapsed().as_secs_f64());
            }
            part.solved_trivially = !part.offsets.is_empty();
            if part.solved_trivially {
                post(index, part.makespan);
                return;
            }
        }
        // The first heuristic always runs, alone, so that there is a placement and a measure of
        // cost; a later one starts only if its predicted time (`Heuristic::relative_cost` times
        // the first one's) still fits before the heuristics' deadline.
        // Above `huge_buffers` the cheapest heuristic goes first (see the policy), and first-fit
        // by size then runs only if its predicted time fits the budget; so too on a component
        // above the early windows' range that they run on, whose fill (a first fit by size
        // around the windows) stands in for it.
        let mut heuristics = heuristics.clone();
        // A flat component that the flat stage will take (every tick at the max load) gains
        // nothing from the greedy orders, which end 20–40% above its load, while first fit by
        // size alone took 21 of a 30 s budget at 10^6 pieces and left the blocks a third of
        // it: only the start-order sweep (or the outward pair, below) runs there, for a first
        // placement.
        let sweep = Heuristic { order: Order::Start, fit: Fit::First };
        if run.runs(Stage::Flat) && part.flat {
            heuristics = vec![sweep];
        }
        // Where the size split follows, the heuristics are a fallback: the outward pair (1.3 s
        // at 10^7 buffers) and beside it the rocks and the sweep from the peak, which reach the
        // max load on heaps in a second or two (and end a split there before it starts); the
        // others' time goes to the split (random 10^7: best fit by start took 6 s more, and
        // ended 10% above the split's result).
        let splits = !part.split_large.is_empty();
        if splits {
            heuristics.retain(|h| matches!(h.order, Order::Rocks | Order::Peak) && h.fit == Fit::First);
            heuristics.insert(0, Heuristic { order: Order::Outward, fit: Fit::First });
        }
        let filled = filled(policy, early, index, part);
        let n = part.buffers.len();
        // Whether the index of first fit by size and the other non-sweep orders (about 240
        // bytes a buffer) is affordable: above `huge_first_fit_max_buffers` it would take the
        // planner past 1.5 GiB, so there only the sweeps and the rocks run, however long the
        // limit (random 10^7 at 240 s had started first fit by size, which gave up: 4.4 GB of
        // peak RSS).
        let indexed_fits = !policy.is_huge(n) || n <= policy.huge_first_fit_max_buffers;
        // First fit by size goes first wherever its index is affordable, but only while it can
        // finish: the sweep beside it is the stand-in, and once that is done, first fit gives
        // up if its pace says it would not make the deadline (below the huge size it ran to the
        // deadline and gave up there, leaving the later stages nothing: random 10^6 at 3–12 s,
        // 10.01% above the max load).
        let projected = indexed_fits && !filled && heuristics.first().is_some_and(|h| !h.is_sweep());
        if (policy.is_huge(n) || filled) && !projected && heuristics.len() > 1 {
            let cheapest = (0..heuristics.len())
                .min_by(|&a, &b| heuristics[a].relative_cost().total_cmp(&heuristics[b].relative_cost()))
                .unwrap_or(0);
            let h = heuristics.remove(cheapest);
            heuristics.insert(0, h);
        }
        // Above the huge size, where the sweep goes first, the outward pair of sweeps takes its
        // place (two halves at once, one per core: at 10^7 buffers the one placement within
        // the 3 s budget). Where it does not, the sweep stands in beside the first, below.
        // Not where the user named the one heuristic to run: its own result is wanted.
        let named = matches!(opts.algorithm, Algorithm::Heuristic(_));
        if policy.is_huge(n) && heuristics.first() == Some(&sweep) && !named {
            heuristics[0] = Heuristic { order: Order::Outward, fit: Fit::First };
        }
        let Some((first, rest)) = heuristics.split_first() else { return };
        let t = Instant::now();
        // Even the first heuristic stops at the deadline: its cost can grow quadratically (see
        // `WORK_PER_CLOCK_CHECK`). Unless it is a sweep itself, the start-order sweep,
        // O(n log n), then stands in for it; it runs beside it (on an idle core, at no cost in
        // wall time), so that the stand-in does not itself run past the deadline. Its result
        // also serves when the portfolio runs it below (it always completes, with the same
        // offsets).
        // First fit around the rocks follows the sweep on that core (or runs beside the first
        // heuristic when that is a sweep, the outward pair then sharing one core), for the time
        // given below: it comes nearest first fit by size where that is too slow, at about a
        // sweep's cost on heaps (a traced python3 heap of 3.5·10^6 buffers: 0.002% over the max
        // load in 2.4 s, the sweep 3.7%, first fit by size 0% in 27 s). Giving up costs
        // nothing more: the sweep has run.
        let rocks = Heuristic { order: Order::Rocks, fit: Fit::First };
        let with_rocks = rest.contains(&rocks) && crate::rules::most_rocks(part.buffers.len()) > 0;
        // The outward sweep from the peak follows the rocks there, where the time left still
        // holds a sweep: about a sweep's cost, and where most of what is live at the peak was
        // allocated long before it (a program's tables, kept to its exit) it packs the peak
        // that the rocks and first fit by size leave holes in (a traced ruby heap of 5·10^5
        // buffers: 0% in 0.5 s, the rocks 0.46%, and nothing after them gained a byte in 30 s).
        let peak = Heuristic { order: Order::Peak, fit: Fit::First };
        let with_peak = rest.contains(&peak);
        // `swept`: the sweep beside the first is done; `solved`: a placement beside it reached
        // the target, and the first and the heuristics after it give up (a traced python3 heap
        // of 2.45·10^6 buffers at 30 s: the rocks reached the max load in 1.5 s, first fit by
        // size ran on for 20 s to the same).
        let (swept, solved) = (AtomicBool::new(false), AtomicBool::new(false));
        // Whether the rocks (or the sweep from the peak) ran beside the first from its start: an
        // outward pair then had one core for both its halves, and took a sweep's time.
        let rocks_beside = AtomicBool::new(false);
        let at_target = |off: &[u64]| !named && part.buffers.iter().zip(off).all(|(b, &o)| o + b.size <= target);
        let (stand_ins, off) = rayon::join(
            || {
                let mut done: Vec<(Heuristic, Vec<u64>, f64)> = Vec::new();
                if !first.is_sweep() {
                    let t = Instant::now();
                    let off = sweep.run_until_with_ends(&part.buffers, &ends, run.deadline, None).expect("the start-order sweep always completes");
                    solved.fetch_or(at_target(&off), Ordering::Relaxed);
                    done.push((sweep, off, t.elapsed().as_secs_f64()));
                    swept.store(true, Ordering::Relaxed);
                }
                // Half the time left, so that the stages after the heuristics keep the other
                // half; above the huge size all of it: what follows there (the local windows
                // and the improvement search) gains little on a short budget, where the rocks
                // reach the max load on heaps (a traced python3 heap of 2.45·10^6 buffers at
                // 3 s: the sweep 3.40%, the rocks 0% in 1.5 s). Not started where they could
                // only give up (`Policy::rocks_min_seconds_per_buffer`): with less time than
                // the sweep took, or is expected to take where it goes first.
                let now = Instant::now();
                let left = run.deadline.saturating_duration_since(now);
                // Where the split follows, a quarter: the rest is the split's.
                let given = if splits {
                    left / 4
                } else if policy.is_huge(part.buffers.len()) {
                    left
                } else {
                    left / 2
                };
                let least = done.first().map_or(policy.rocks_min_seconds_per_buffer * part.buffers.len() as f64, |s| s.2);
                if with_rocks && given.as_secs_f64() >= least && !solved.load(Ordering::Relaxed) && !run.cancelled() {
                    rocks_beside.store(done.is_empty(), Ordering::Relaxed);
                    let until = now + given;
                    if let Some(off) = rocks.run_until_with_ends(&part.buffers, &ends, until, opts.cancel.as_deref()) {
                        solved.fetch_or(at_target(&off), Ordering::Relaxed);
                        done.push((rocks, off, now.elapsed().as_secs_f64()));
                    }
                }
                // A sweep does not stop at the deadline: it starts only where the time left
                // holds what the sweep took (or is expected to take, as for the rocks).
                let now = Instant::now();
                let left = run.deadline.saturating_duration_since(now).as_secs_f64();
                if with_peak && left >= least && !solved.load(Ordering::Relaxed) && !run.cancelled() {
                    rocks_beside.fetch_or(done.is_empty(), Ordering::Relaxed);
                    let off = peak.run_until_with_ends(&part.buffers, &ends, run.deadline, None).expect("a sweep always completes");
                    solved.fetch_or(at_target(&off), Ordering::Relaxed);
                    done.push((peak, off, now.elapsed().as_secs_f64()));
                }
                // Checked here, on this core, not by the driver once the first gives up at the
                // deadline (two checks of 2.3·10^5 buffers: 0.11 s late).
                done.into_iter().map(|(h, off, secs)| {
                    let checked = part.check(&h.name(), &off);
                    (h, off, secs, checked)
                }).collect::<Vec<_>>()
            },
            || {
                let off = first.run_beside(&part.buffers, &ends, run.deadline, projected.then_some(&swept), &solved, opts.cancel.as_deref());
                let secs = t.elapsed().as_secs_f64();
                let off = off.map(|off| {
                    let checked = part.check(&first.name(), &off);
                    (off, checked)
                });
                (off, secs)
            },
        );
        let (off, own) = off;
        let (mut stand_ins, unit) = (stand_ins, t.elapsed());
        // The first's cost relative to first fit by size, as it ran.
        let first_cost = if first.order == Order::Outward && rocks_beside.load(Ordering::Relaxed) {
            Heuristic { order: Order::Start, ..*first }.relative_cost()
        } else {
            first.relative_cost()
        };
        // The sweep's time: beside the first, or the first's own (scaled from the outward
        // pair's).
        part.sweep_seconds = match stand_ins.iter().find(|s| s.0 == sweep) {
            Some(s) => s.2,
            None if first.order == Order::Outward => own * sweep.relative_cost() / first_cost,
            None => own,
        };
        // Costs are scaled from the first's own time where it finished (the rocks beside it
        // may take longer), else from the time it was given.
        let (first, (off, checked), cost, scale) = match off {
            Some(off) => (*first, off, first_cost, own),
            None => {
                assert!(!stand_ins.is_empty(), "the start-order sweep always completes");
                part.first_gave_up = true;
                let (h, off, _, checked) = stand_ins.remove(0);
                (h, (off, checked), h.relative_cost(), unit.as_secs_f64())
            }
        };
        part.first_fit_seconds = scale / cost;
        let first_fit_seconds = part.first_fit_seconds;
        let top = part.buffers.iter().zip(&off).map(|(b, &o)| o + b.size).max().unwrap_or(0);
        post(index, top);
        // At the target (the global lower bound, or the capacity) nothing better is needed: the
        // other heuristics are skipped. Nor is a stand-in run again where it stood in for the
        // first, nor first fit around no rocks (the sweep again) on a small part.
        // Nor, where their index is not affordable, the orders that need it.
        let rest: Vec<Heuristic> = if top <= target {
            Vec::new()
        } else {
            rest.iter().copied().filter(|h| *h != first && (*h != rocks || with_rocks) && (indexed_fits || h.is_sweep() || *h == rocks)).collect()
        };
        // Those run beside the first are offered as they are (moved, not copied: 80 MB a
        // placement at 10^7 buffers), in their place in the portfolio's order.
        let mut beside: Vec<Option<(Vec<u64>, f64, Checked)>> = vec![None; rest.len()];
        for (h, off, secs, checked) in stand_ins {
            if let Some(k) = rest.iter().position(|r| *r == h) {
                beside[k] = Some((off, secs, checked));
            }
        }
        let mut results = vec![(first.name(), off, unit.as_secs_f64(), checked)];
        results.extend(
            rest.par_iter()
                .zip(beside.into_par_iter())
                .filter_map(|(h, beside)| {
                    if let Some((off, secs, checked)) = beside {
                        return Some((h.name(), off, secs, checked));
                    }
                    // Relative costs are to first fit by size, which the first one's time
                    // was scaled to.
                    let predicted = Duration::from_secs_f64(first_fit_seconds * h.relative_cost());
                    if Instant::now() + predicted > heuristics_deadline || run.cancelled() || solved.load(Ordering::Relaxed) {
                        return None;
                    }
                    let t = Instant::now();
                    let off = h.run_until_with_ends(&part.buffers, &ends, heuristics_cutoff, opts.cancel.as_deref())?;
                    let secs = t.elapsed().as_secs_f64();
                    let checked = part.check(&h.name(), &off);
                    Some((h.name(), off, secs, checked))
                })
                .collect::<Vec<_>>(),
        );
        for (name, off, secs, checked) in results {
            part.offer_checked(name, off, secs, checked);
        }
        post(index, part.makespan);
        if let Some(p) = run.progress {
            p.best.fetch_max(part.makespan, Ordering::Relaxed);
        }
    });
    match early {
        None => run_heuristics(parts),
        Some(i) => {
            // A borrowed component (the whole instance, in start order) is not copied.
            let sub = parts[i].buffers.clone();
            let mut params =
                crate::windows::WindowParams::new(run.start + opts.time_limit.mul_f64(policy.windows_share), target, u64::MAX);
            params.rival = Some(Arc::clone(&rival));
            params.cancel = opts.cancel.clone();
            if sub.len() > policy.early_windows_max_buffers {
                // The fill takes most of the limit (it stands in for first fit by size), so it
                // may run to the end, and the windows are planned in a tenth of it.
                params.depth = policy.windows_depth;
                params.deadline = run.deadline;
                params.plan_share = 0.1;
                params.tail_load = policy.windows_tail_load;
            }
            let began = Instant::now();
            // Above the range, once the heuristics are done, their core runs a second chase
            // whose first fill pins only the window at the max load. Windows at every stretch
            // near the max load win where one peak stands out; where the load is flat their
            // pinned plans fragment the fill around them, and one window does better. Which
            // holds is not known before a fill, and one fill takes most of the limit: each core
            // runs one. Both post their complete fills to `rival`, so the other's fills stop
            // once they cannot beat them (docs/planning-experiments.md has the measurements).
            // Only there is the first round deep (above): elsewhere the two chases are one.
            let second = params.depth > 0.0;
            let single = crate::windows::WindowParams { depth: 0.0, ..params.clone() };
            // Where a few buffers hold most of the area, the size split takes the deep
            // chase's core: the large part planned alone (a fifth of the buffers live at an
            // instant, so its windows chase round after round where here one fill takes most
            // of the limit) and the rest swept around it (docs/planning.md, step 5).
            let large = if second && run.runs(Stage::Split) { split_large_part(policy, &sub) } else { None };
            // The split's sweep frees buffers in the order of their ends, which the component
            // already has (the heuristics take the part's copy): a copy, not a second sort.
            let split_ends = if large.is_some() { parts[i].ends.clone() } else { Vec::new() };
            let solve = |w: &[Buffer], until: Instant| plan_nested(w, until, opts);
            // A chase started at `since` checks its placement on its own core as it ends (as
            // the heuristics do), ready to offer.
            let measure_only = parts[i].validate_at_end;
            let chase = |params: &crate::windows::WindowParams, from_peak: bool, since: Instant| {
                let out = crate::windows::plan_windows(&sub, params, &mut |w: &[Buffer], until: Instant| solve(w, until));
                let off = out.offsets?;
                let from = if from_peak { ", from the peak's alone" } else { "" };
                let name = format!("critical windows ({}{from})", out.windows);
                let checked = check_placement(&sub, measure_only, &name, &off);
                Some((name, off, since.elapsed().as_secs_f64(), checked))
            };
            let split = |large: &[u32], since: Instant| {
                let plan_until = run.share_of_left(policy.split_share);
                let solve = |w: &[Buffer], until: Instant| plan_large_part(run, w, until, false);
                let off = crate::split::plan_split(&sub, || split_ends, large, policy.split_rest_choices, plan_until, run.deadline, opts.cancel.as_deref(), solve)?;
                let name = "size split".to_string();
                let checked = check_placement(&sub, measure_only, &name, &off);
                rival.fetch_min(checked.makespan, Ordering::Relaxed);
                Some((name, off, since.elapsed().as_secs_f64(), checked))
            };
            let (single_out, deep_out) = rayon::join(
                || {
                    run_heuristics(parts);
                    let t = Instant::now();
                    let more = second && t < run.deadline && !run.cancelled() && rival.load(Ordering::Relaxed) > target;
                    if more { chase(&single, true, t) } else { None }
                },
                || match &large {
                    Some(large) => split(large, began),
                    None => chase(&params, false, began),
                },
            );
            for (name, off, secs, checked) in [deep_out, single_out].into_iter().flatten() {
                parts[i].offer_checked(name, off, secs, checked);
            }
            parts[i].windowed = true;
            show_best(parts, run.progress);
        }
    }
}

/// The large part of `part` when the size split runs on it once the heuristics are done: on
/// a component of at least [`Policy::split_min_buffers`] that is not flat and has a large
/// part, when the limit gives it [`Policy::split_seconds_per_buffer`] (the caller leaves out
/// the part whose deep chase runs it). Above the huge size the local windows and the
/// improvement search end about 4% above the max load on random 10^7 buffers in 120 s, a
/// window of the whole being dense with small buffers; planned apart, the large part's
/// windows are not. Below it the early windows' fill around their windows loses as the
/// greedy does wherever the load is near its maximum at many instants (random 10^6 at 10 s,
/// generator seeds 1–4: 2.5–10.5% above the max load by the local windows, 0.017–5.0% by
/// the split; docs/planning-experiments.md).
fn split_after_heuristics(run: &Run, part: &Part) -> Option<Vec<u32>> {
    let policy = &run.opts.policy;
    let n = part.buffers.len();
    let applies = run.runs(Stage::Split)
        && n >= policy.split_min_buffers
        && !part.flat
        && run.opts.time_limit.as_secs_f64() >= policy.split_seconds_per_buffer * n as f64;
    applies.then(|| split_large_part(policy, &part.buffers)).flatten()
}

/// [`crate::split::large_part`] of `buffers` with the policy's share and bounds.
fn split_large_part(policy: &Policy, buffers: &[Buffer]) -> Option<Vec<u32>> {
    crate::split::large_part(buffers, policy.split_max_share, policy.split_min_rest_area..=policy.split_max_rest_area)
}

/// The size split's large part `w` planned by this driver's pipeline (windows and all) until
/// `until`, without splitting again; `as_huge`: as the huge path plans, whatever its size (see
/// [`split_stage`]). `None` once the plan is cancelled: the sweep around it is then not started.
fn plan_large_part(run: &Run, w: &[Buffer], until: Instant, as_huge: bool) -> Option<Vec<u64>> {
    let mut policy = run.opts.policy.clone();
    policy.split = false;
    if as_huge {
        policy.huge_buffers = policy.huge_buffers.min(w.len().saturating_sub(1));
    }
    let off = plan_sub(w, until, &PlanOptions { policy, ..run.opts.clone() }, false);
    (!run.cancelled()).then_some(off)
}

/// The size split ([`crate::split`]) on the parts with a large part ([`split_after_heuristics`])
/// still above the target: the large part planned by this driver's pipeline (without
/// splitting again) in [`Policy::split_share`] of the time left, the rest swept around it,
/// the result offered as any other placement.
fn split_stage(run: &Run, parts: &mut [Part]) {
    let (opts, policy) = (run.opts, &run.opts.policy);
    for part in parts.iter_mut() {
        let large = std::mem::take(&mut part.split_large);
        // Half the time the limit gives it at least (the heuristics may have taken more than
        // their share: the rocks stop at a quarter of what was left).
        let least = Duration::from_secs_f64(0.5 * policy.split_seconds_per_buffer * part.buffers.len() as f64);
        // The sweep around the large part gets its time first: with its choices it took 5.5–7
        // start-order sweeps at 10^7 buffers (11–14 s), more than the share left it at 60 s,
        // and a split that does not finish gives nothing.
        let left = run.left();
        let reserve = Duration::from_secs_f64(policy.split_rest_sweeps * part.sweep_seconds);
        let short = left < least || left.saturating_sub(reserve) < left / 3;
        if large.is_empty() || part.solved_trivially || part.makespan <= run.target || short || run.cancelled() {
            continue;
        }
        let plan_until = run.share_of_left(policy.split_share).min(run.deadline - reserve);
        let t = Instant::now();
        // The heuristics' placement is dropped while the large part is planned, and made again
        // should the split not finish or not beat it (8 bytes a buffer, the margin under
        // 1.5 GiB at 10^7 buffers; the outward pair took 1.3 s there, the rocks 6 s); so is
        // the order of ends, sorted again for the sweep (0.45 s).
        let dropped = (part.makespan, part.algorithm.clone());
        part.offsets = Vec::new();
        let ends = || crate::online::ends_of(&part.buffers);
        // Planned as the huge path plans (the local windows and the improvement search taking
        // turns from first fit by size), not by the chase, whose fills of 2·10^6 buffers took
        // 30–40 s each: the large part of random 10^7 in 87 s, 2.10% above its own max load
        // against 3.34%, in 0.99 GB of peak RSS against 1.29 (one chase) or 2.11 (two).
        // Below the huge size, by the whole pipeline, as the deep chase's core plans it.
        let as_huge = policy.is_huge(part.buffers.len());
        let solve = |w: &[Buffer], until: Instant| plan_large_part(run, w, until, as_huge);
        let off = crate::split::plan_split(&part.buffers, ends, &large, policy.split_rest_choices, plan_until, run.deadline, opts.cancel.as_deref(), solve);
        drop(large);
        let secs = t.elapsed().as_secs_f64();
        let split = off.map(|off| {
            let checked = part.check("size split", &off);
            (off, checked)
        });
        if split.as_ref().is_none_or(|(_, c)| c.makespan >= dropped.0) {
            // The heuristic that won, made again, where the time left holds what it took the
            // first time; otherwise the outward pair, the quickest (a split that ran out of
            // time must not add the rocks' seconds past the deadline: ratio 10^7 at 40 s took
            // 52 s so), as once the plan is cancelled (whatever is offered is returned at once).
            let outward = Heuristic { order: Order::Outward, fit: Fit::First };
            let won = [Heuristic { order: Order::Rocks, fit: Fit::First }, Heuristic { order: Order::Peak, fit: Fit::First }]
                .into_iter()
                .find(|h| dropped.1 == h.name());
            let took = |h: &Heuristic| part.attempts.iter().filter(|a| a.name == h.name()).map(|a| a.seconds).fold(f64::INFINITY, f64::min);
            let h = won.filter(|h| !run.cancelled() && took(h) <= run.left().as_secs_f64()).unwrap_or(outward);
            let t = Instant::now();
            let ends = crate::online::ends_of(&part.buffers);
            let off = h.run_until_with_ends(&part.buffers, &ends, t + Duration::from_secs(u32::MAX as u64), None).expect("the sweeps and the rocks complete without a deadline");
            drop(ends);
            part.offer(h.name(), off, t.elapsed().as_secs_f64());
        }
        if let Some((off, checked)) = split {
            part.offer_checked("size split".into(), off, secs, checked);
        }
    }
}

/// The components' placements put together, validated, and the summary.
fn assemble(buffers: &[Buffer], parts: &mut [Part], lower_bound: u64, boxing_iterations: usize, clock: StageClock) -> PlanOutcome {
    // A part that is the whole instance (one component) was validated when its placement was
    // offered, against these buffers (in start order, the same conflicts): a second sweep
    // would only repeat it (seconds at 10^7 buffers); not above the huge size, where only the
    // result is validated, here. Parts put together are validated together.
    let whole = matches!(parts, [p] if p.buffers.len() == buffers.len() && !p.offsets.is_empty() && !p.validate_at_end);
    // The runners-up are done with: their copies go before the result's is made.
    parts.iter_mut().for_each(|p| p.runners_up = Vec::new());
    // A part without an index is the whole instance: its offsets are the result's.
    let mut offsets = match parts {
        [p] if p.index.is_empty() => std::mem::take(&mut p.offsets),
        _ => Vec::new(),
    };
    offsets.resize(buffers.len(), 0);
    for part in parts.iter() {
        for (&i, &o) in part.index.iter().zip(&part.offsets) {
            offsets[i as usize] = o;
        }
    }
    let t = Instant::now();
    let makespan = if whole {
        parts[0].makespan
    } else {
        let v = heaplab_sweep::validate(buffers, &offsets);
        assert!(v.is_valid(), "assembled placement invalid: {}", v.describe(buffers, &offsets));
        v.makespan
    };
    let critical = parts.iter().max_by_key(|p| (p.makespan, p.buffers.len()));
    let proven = parts.iter().map(|p| p.lower).max().unwrap_or(0).max(lower_bound);
    PlanOutcome {
        makespan,
        max_load: lower_bound,
        lower_bound: proven,
        optimal: makespan == proven,
        algorithm: critical.map(|p| p.algorithm.clone()).unwrap_or_else(|| "none (no buffers)".into()),
        components: parts.len(),
        critical_buffers: critical.map(|p| p.buffers.len()).unwrap_or(0),
        attempts: critical.map(|p| p.attempts.clone()).unwrap_or_default(),
        boxing_iterations,
        offsets,
        stages: clock.stages(),
        seconds: clock.start.elapsed().as_secs_f64(),
        validation_seconds: t.elapsed().as_secs_f64() + parts.iter().map(|p| p.validating).sum::<f64>(),
    }
}

/// The boxing stage of [`plan`]; returns the passes run.
///
/// Only components above the global lower bound decide the makespan (under `Boxing` nothing but
/// the exact cases has a placement yet, so every other component qualifies). First round:
/// largest makespan first (under `Boxing`: most buffers first), each getting 60% of the time
/// left (the last one all of it) and aiming at the makespan already settled elsewhere (the
/// lower bound, the components outside the queue and those done before it). Then, while time
/// is left — a component may stop early at its target or iteration cap — the component that
/// decides the makespan gets more passes (new seeds), until it no longer decides it alone, its
/// cap is used up, or time runs out.
fn boxing_stage(run: &Run, parts: &mut [Part], deadline: Instant) -> usize {
    let (opts, target, progress) = (run.opts, run.target, run.progress);
    let mut queue: Vec<usize> = (0..parts.len())
        .filter(|&i| !parts[i].solved_trivially && (parts[i].offsets.is_empty() || parts[i].makespan > target.max(parts[i].lower)))
        .collect();
    queue.sort_by_key(|&i| (std::cmp::Reverse((parts[i].offsets.is_empty(), parts[i].makespan, parts[i].buffers.len())), i));
    let cap = opts.iterations.unwrap_or(usize::MAX);
    let mut used = vec![0usize; parts.len()];
    let mut total = 0;
    // Runs boxing on part `i` for `share` of the time left, aiming at `target`; returns the passes.
    let pass = |parts: &mut [Part], used: &mut [usize], i: usize, round: u64, share: f64, target: u64| {
        let part = &mut parts[i];
        let now = Instant::now();
        let left = deadline.saturating_duration_since(now);
        let params = BoxingParams {
            seed: crate::rng::mix(crate::rng::mix(opts.seed, i as u64), round),
            iterations: cap - used[i],
            deadline: Some(now + left.mul_f64(share)),
            target,
            // `Boxing` runs without heuristic bootstrapping: nothing to beat but itself.
            upper_bound: (!part.offsets.is_empty()).then_some(part.makespan),
            squeeze: Squeeze::default(),
            cancel: opts.cancel.clone(),
        };
        let out = boxing::plan(&part.buffers, &params);
        used[i] += out.iterations;
        // Empty offsets: no pass beat the bound (never the case without one).
        if !out.offsets.is_empty() {
            let name = if out.solved_trivially {
                "exact (boxing prelude)".to_string()
            } else if out.stand_in {
                "first-fit/start (boxing ran out of time)".to_string()
            } else {
                "boxing".to_string()
            };
            part.offer(name, out.offsets, now.elapsed().as_secs_f64());
        }
        show_best(parts, progress);
        out.iterations
    };
    // Under `Auto`, a pass that cannot finish in the time left is not started (on 4.4M traced
    // blocks one pass took 15 s of a 3 s budget).
    // Nor above the huge size (10^7 random buffers: 76 s of boxing found nothing and took
    // 1.8 GB more).
    let hopeless = |p: &Part| {
        !p.offsets.is_empty()
            && opts.algorithm == Algorithm::Auto
            && (deadline.saturating_duration_since(Instant::now()).as_secs_f64() < p.first_fit_seconds
                || opts.policy.is_huge(p.buffers.len()))
    };
    let mut queued = vec![false; parts.len()];
    queue.iter().for_each(|&i| queued[i] = true);
    let mut settled = settled_outside(parts, &queued, target);
    for (k, &i) in queue.iter().enumerate() {
        if hopeless(&parts[i]) {
            settled = settled.max(parts[i].makespan);
            continue;
        }
        if parts[i].offsets.is_empty() || parts[i].makespan > settled {
            let share = if k + 1 == queue.len() { 1.0 } else { opts.policy.boxing_component_share };
            total += pass(parts, &mut used, i, 0, share, settled);
        }
        settled = settled.max(parts[i].makespan);
    }
    for round in 1.. {
        let Some(&i) = queue.iter().max_by_key(|&&i| (parts[i].makespan, std::cmp::Reverse(i))) else { break };
        let others = queue.iter().filter(|&&j| j != i).map(|&j| parts[j].makespan).max().unwrap_or(0);
        let others = others.max(settled_outside(parts, &queued, target));
        if parts[i].makespan <= others || used[i] >= cap || Instant::now() >= deadline || run.cancelled() || hopeless(&parts[i]) {
            break;
        }
        let passes = pass(parts, &mut used, i, round, 1.0, others);
        total += passes;
        if passes == 0 {
            break;
        }
    }
    total
}

/// The components a search stage works on, largest makespan first (ties by index): not solved
/// exactly, with a placement above their target (`target` — the global lower bound, or the
/// capacity when one is given — or their own proven bound, whichever is higher), and that
/// `chosen` accepts.
fn above_target(parts: &[Part], target: u64, chosen: impl Fn(&Part) -> bool) -> Vec<usize> {
    let mut queue: Vec<usize> = (0..parts.len())
        .filter(|&i| !parts[i].solved_trivially && !parts[i].offsets.is_empty() && parts[i].makespan > target.max(parts[i].lower))
        .filter(|&i| chosen(&parts[i]))
        .collect();
    queue.sort_by_key(|&i| (std::cmp::Reverse(parts[i].makespan), i));
    queue
}

/// Offsets for a sub-instance a stage builds (a window, the blocks of a flat component), planned
/// by this driver under `Auto` with the caller's seed and policy until `until`, nested: no
/// windows or flat blocks inside.
fn plan_nested(sub: &[Buffer], until: Instant, caller: &PlanOptions) -> Vec<u64> {
    plan_sub(sub, until, caller, true)
}

/// [`plan_nested`], or (`nested` false) a plan of its own, every stage of the caller's policy
/// included.
fn plan_sub(sub: &[Buffer], until: Instant, caller: &PlanOptions, nested: bool) -> Vec<u64> {
    let opts = PlanOptions {
        time_limit: until.saturating_duration_since(Instant::now()),
        seed: caller.seed,
        policy: caller.policy.clone(),
        cancel: caller.cancel.clone(),
        ..PlanOptions::default()
    };
    plan_at(sub, &opts, None, nested, StageClock::new(None)).offsets
}

/// The critical-windows stage of [`plan`] ([`crate::windows`]): on each component above
/// [`Policy::small_buffers`] that decides the makespan, largest makespan first, for up to
/// [`Policy::windows_share`] of the time left: with fills when that holds
/// [`Policy::windows_min_fills`] first-fit placements (a fill, and the rest to plan the window),
/// else in their local form ([`crate::windows::improve_windows`]) from the best placement.
/// Each window is planned by this driver's own pipeline (nested: no windows inside windows).
fn windows_stage(run: &Run, parts: &mut [Part]) {
    let (policy, target, deadline) = (&run.opts.policy, run.target, run.deadline);
    let queue = above_target(parts, target, |p| p.buffers.len() > policy.small_buffers);
    for &i in &queue {
        let settled = parts.iter().map(|p| p.makespan).max().unwrap_or(0);
        let part = &mut parts[i];
        let now = Instant::now();
        let left = deadline.saturating_duration_since(now);
        if part.windowed || part.makespan < settled {
            continue;
        }
        // Above the huge size only the local form: a fill costs a first-fit placement, and at
        // 10^7 random buffers the fills found nothing in 80 s while taking 1.2 GB more.
        let huge = policy.is_huge(part.buffers.len());
        let share = left.as_secs_f64() * policy.windows_share;
        let fills = !huge && share >= policy.windows_min_fills * part.first_fit_seconds;
        let mut params = crate::windows::WindowParams {
            cancel: run.opts.cancel.clone(),
            ..crate::windows::WindowParams::new(now + left.mul_f64(policy.windows_share), target.max(part.lower), part.makespan)
        };
        if huge {
            params.max_window = policy.huge_window_max_buffers;
            params.patience = policy.huge_windows_patience;
        }
        let mut solve = |sub: &[Buffer], until: Instant| plan_nested(sub, until, run.opts);
        if fills {
            let out = crate::windows::plan_windows(&part.buffers, &params, &mut solve);
            if let Some(off) = out.offsets {
                part.offer(format!("critical windows ({})", out.windows), off, now.elapsed().as_secs_f64());
            }
        } else if share >= policy.local_windows_min_seconds {
            // Too little time for the fills: the local form, from the best placement.
            let mut off = part.offsets.clone();
            let seed = crate::rng::mix(run.opts.seed, i as u64);
            let out = crate::windows::improve_windows(&part.buffers, &mut off, &params, seed, &mut solve);
            if out.end < out.start {
                let name = format!("{} + local windows ({})", part.algorithm, out.moves);
                part.offer(name, off, now.elapsed().as_secs_f64());
            }
        }
        show_best(parts, run.progress);
    }
}

/// The flat-components stage of [`plan`] ([`crate::flat`]): each component that decides the
/// makespan, has more than [`Policy::flat_min_buffers`] buffers and the same load at every tick
/// is merged into blocks, and the blocks are planned as an instance of their own by this
/// driver's pipeline (nested). Up to [`Policy::flat_share`] of the time left. Up to
/// [`Policy::flat_side_by_side_max_buffers`] in all the components run side by side, one per
/// core (the makespan is the highest component's, so each must reach the target, and a merge of
/// 5·10^5 buffers takes over a second), each given the stage's time times the cores over the
/// components in line; above, one at a time, each with an equal share of what is left for it
/// and those after it. In a component's time the blocks of the first merge order are planned in
/// half of what is left after the merge, each further order's (drawn from the seed) in half of
/// what remains after it, or all of it where the other half could not repeat the merge, until a
/// plan reaches the target, or the time left could not hold a merge
/// ([`Policy::flat_min_seconds_per_buffer`]).
fn flat_stage(run: &Run, parts: &mut [Part]) {
    let queue = above_target(parts, run.target, |p| p.flat && p.buffers.len() > run.opts.policy.flat_min_buffers);
    if queue.is_empty() {
        return;
    }
    let stage_end = run.share_of_left(run.opts.policy.flat_share);
    let mut in_queue = vec![false; parts.len()];
    for &i in &queue {
        in_queue[i] = true;
    }
    // A flat component below a component this stage leaves alone does not decide the makespan.
    let others = parts.iter().zip(&in_queue).filter(|(_, &q)| !q).map(|(p, _)| p.makespan).max().unwrap_or(0);
    let mut queued: Vec<&mut Part> = parts.iter_mut().zip(&in_queue).filter(|(p, &q)| q && p.makespan >= others).map(|(p, _)| p).collect();
    queued.sort_by_key(|p| std::cmp::Reverse(p.makespan));
    let in_line: usize = queued.iter().map(|p| p.buffers.len()).sum();
    if in_line <= run.opts.policy.flat_side_by_side_max_buffers {
        // Every component in line, not only the highest: side by side, the others come down
        // with it. Each on a thread of its own, as many at once as there are cores (as rayon
        // tasks, a worker waiting inside one component's nested plan could take up another's
        // whole merge and hold the first past its end).
        let cores = rayon::current_num_threads().max(1);
        let share = stage_end.saturating_duration_since(Instant::now()).mul_f64((cores as f64 / queued.len() as f64).min(1.0));
        for group in queued.chunks_mut(cores) {
            let start = Instant::now();
            if start >= stage_end {
                break;
            }
            let part_end = (start + share).min(stage_end);
            std::thread::scope(|scope| {
                for part in group.iter_mut() {
                    scope.spawn(move || flat_component(run, part, part_end));
                }
            });
        }
    } else {
        // One at a time, each with an equal share of what is left for it and those after it,
        // those below the highest makespan left waiting.
        let len = queued.len();
        for k in 0..len {
            let settled = queued.iter().map(|p| p.makespan).max().unwrap_or(0);
            let now = Instant::now();
            if queued[k].makespan == settled {
                flat_component(run, queued[k], now + stage_end.saturating_duration_since(now) / (len - k) as u32);
            }
        }
    }
    show_best(parts, run.progress);
}

/// One component's part of [`flat_stage`], until `part_end`.
fn flat_component(run: &Run, part: &mut Part, part_end: Instant) {
    let (seed, target) = (run.opts.seed, run.target);
    let aim = target.max(part.lower);
    for round in 0u64.. {
        let now = Instant::now();
        let too_short = part_end.saturating_duration_since(now).as_secs_f64() < part.buffers.len() as f64 * run.opts.policy.flat_min_seconds_per_buffer;
        if now >= part_end || too_short || part.makespan <= aim || run.cancelled() {
            break;
        }
        let order = (round > 0).then(|| seed ^ round.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        let Some(blocks) = crate::flat::reduce(&part.buffers, order, part_end, run.opts.cancel.as_deref()) else { break };
        if blocks.len() * 2 > part.buffers.len() {
            // No structure to exploit: first fit by size, which the heuristics stage left
            // to this stage on a flat component, gets the time instead.
            let first_fit = Heuristic { order: Order::Size, fit: Fit::First };
            if let Some(off) = first_fit.run_until(&part.buffers, part_end) {
                part.offer(first_fit.name(), off, now.elapsed().as_secs_f64());
            }
            break;
        }
        let sub = blocks.buffers();
        // Half of what is left after the merge, the other half for further merge orders,
        // unless that half could not repeat this merge (seconds from 10^6 buffers): then
        // all of it. (Counted from the round's start, a merge of 12 s at 3·10^6 buffers
        // left the blocks' plan nothing, and 37% above the load where it packs exactly.)
        let merged = Instant::now();
        let left = part_end.saturating_duration_since(merged);
        let until = if left / 2 > merged - now { merged + left / 2 } else { part_end };
        let off = blocks.expand(&plan_nested(&sub, until, run.opts), part.buffers.len());
        part.offer(format!("flat blocks ({} blocks)", sub.len()), off, now.elapsed().as_secs_f64());
    }
}

/// The exact stage of [`plan`]: the components within [`Policy::exact_max_buffers`] and
/// [`Policy::exact_max_conflicts`] above the makespan settled elsewhere, largest first, each
/// minimised from its best placement in the stage's `share` of the time left (see below for
/// how components share it); under a user's `capacity`, only that capacity is decided. A
/// refuted capacity raises the component's proven lower bound.
fn exact_stage(run: &Run, parts: &mut [Part], share: f64) {
    let (policy, lower_bound, capacity, target) = (&run.opts.policy, run.lower_bound, run.opts.capacity, run.target);
    let mut queue = above_target(parts, target, |p| p.buffers.len() <= policy.exact_max_buffers);
    // Under a capacity every component above it must come down, and which is hard is not
    // known: the smallest go first, each with an equal share of what is left, so quick ones
    // hand their time on (largest-makespan-first gave minimalloc E's hard component 60% of the
    // stage behind a trivial one).
    if capacity.is_some() {
        queue.sort_by_key(|&i| (parts[i].buffers.len(), i));
    }
    let strategies = exact::Strategy::portfolio();
    let threads = rayon::current_num_threads().min(policy.exact_threads).max(1);
    let stage_end = run.share_of_left(share);
    for (k, &i) in queue.iter().enumerate() {
        // Components that no longer decide the makespan need only reach what is settled.
        let settled = parts.iter().map(|p| p.makespan).max().unwrap_or(0);
        // The components after this one only matter if they tie with it: one below it is
        // skipped (as not deciding) unless this one gets below it first. So a component that
        // decides the makespan alone gets the whole stage. (Under a capacity, see above.)
        let others_tie = queue[k + 1..].iter().any(|&j| parts[j].makespan >= parts[i].makespan);
        // Once one component cannot fit the capacity, the plan cannot.
        if refuted(parts, capacity) {
            break;
        }
        let part = &mut parts[i];
        if capacity.is_none() && part.makespan < settled && part.makespan > target {
            // Not deciding: improving it cannot lower the makespan.
            continue;
        }
        let now = Instant::now();
        if now >= stage_end {
            break;
        }
        let Some(problem) = exact::Problem::new(&part.buffers, policy.exact_max_conflicts) else { continue };
        let left = stage_end.duration_since(now);
        let until = if capacity.is_some() {
            now + left / (queue.len() - k) as u32
        } else if !others_tie {
            stage_end
        } else {
            now + left.mul_f64(policy.exact_tie_share)
        };
        let m = exact::minimize(&problem, part.makespan, part.lower.max(lower_bound), capacity, &strategies, threads, until, run.opts.cancel.as_deref());
        part.lower = part.lower.max(m.lower_bound);
        if let Some(off) = m.offsets {
            part.offer("exact search".into(), off, now.elapsed().as_secs_f64());
        }
        show_best(parts, run.progress);
    }
}

/// The improvement stage of [`plan`]: the components that decide the makespan, largest first,
/// each improved ([`crate::improve`]) from its best placement and its runners-up in parallel
/// until `until` (a search returns early when stuck), aiming at `target` or its proven lower
/// bound, whichever is higher.
fn improve_stage(run: &Run, parts: &mut [Part], until: Instant, seed: u64) {
    let target = run.target;
    let queue = above_target(parts, target, |_| true);
    for &i in &queue {
        let settled = parts.iter().map(|p| p.makespan).max().unwrap_or(0);
        let part = &mut parts[i];
        // A search first builds its index of the part, which cannot be interrupted and costs
        // about a start-order sweep: one that would have little time left to search after it
        // does not start (at 10^7 buffers it ran the limit over by the time of the build).
        let left = until.saturating_duration_since(Instant::now()).as_secs_f64();
        if part.makespan < settled || left <= run.opts.policy.improve_min_sweeps * part.sweep_seconds || run.cancelled() {
            continue;
        }
        let aim = target.max(part.lower);
        let patient = part.searched_to_deadline(&run.opts.policy);
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let improve_one = |buffers: &[Buffer], (k, (name, mut offsets)): (usize, (String, Vec<u64>))| {
            if Instant::now() >= until || stop.load(Ordering::Relaxed) {
                return None;
            }
            let t = Instant::now();
            let seed = crate::rng::mix(crate::rng::mix(seed, i as u64), k as u64);
            let params = improve::ImproveParams {
                stop: Some(stop.clone()),
                cancel: run.opts.cancel.clone(),
                // Above the huge size, or where first fit by size gave up, nothing after this
                // search would use its time (boxing does not run there), and drops come after
                // long runs without one.
                patient,
                ..improve::ImproveParams::new(until, seed, aim)
            };
            let stats = improve::improve(buffers, &mut offsets, &params);
            Some((name, offsets, stats, t.elapsed().as_secs_f64()))
        };
        let offer = |part: &mut Part, (name, offsets, stats, secs): (String, Vec<u64>, improve::ImproveStats, f64)| {
            if stats.end < stats.start {
                part.offer(format!("{name} + improvement"), offsets, secs);
            }
        };
        if run.opts.policy.is_huge(part.buffers.len()) {
            // Above the huge size one search at a time: each keeps its own index of the
            // component (10^7 random buffers: 0.8 GB more when two ran together). The best
            // placement is searched in place: a move never raises the makespan, so the part
            // keeps a placement at least as good whatever the search does, and a copy would be
            // 80 MB of the peak its index sets. The runners-up (none under the default policy)
            // after it, each copied when its search begins, and the result before offered.
            let t = Instant::now();
            if t < until && !run.cancelled() {
                let params = improve::ImproveParams {
                    cancel: run.opts.cancel.clone(),
                    patient: true,
                    ..improve::ImproveParams::new(until, crate::rng::mix(crate::rng::mix(seed, i as u64), 0), aim)
                };
                let mut offsets = std::mem::take(&mut part.offsets);
                let stats = improve::improve(&part.buffers, &mut offsets, &params);
                if stats.end < stats.start {
                    // The part holds no placement now, so this one is taken as its best.
                    part.offer(format!("{} + improvement", part.algorithm), offsets, t.elapsed().as_secs_f64());
                } else {
                    part.offsets = offsets;
                }
            }
            let starts = 1 + part.runners_up.len();
            let mut pending = None;
            for k in 1..starts {
                let start = {
                    let r = &part.runners_up[k - 1];
                    (r.1.clone(), r.2.clone())
                };
                if let Some(result) = pending.take() {
                    offer(part, result);
                }
                pending = improve_one(&part.buffers, (k, start));
            }
            if let Some(result) = pending {
                offer(part, result);
            }
        } else {
            // From the best placement and the runners-up, on all threads (the search itself
            // is sequential): each start gets stuck in a different place, and a search returns
            // early when stuck, freeing its thread for the next start. The first to reach the
            // target stops the others.
            let starts: Vec<(String, Vec<u64>)> = std::iter::once((part.algorithm.clone(), part.offsets.clone()))
                .chain(part.runners_up.iter().map(|r| (r.1.clone(), r.2.clone())))
                .collect();
            let buffers = &part.buffers;
            let results: Vec<_> = starts.into_par_iter().enumerate().filter_map(|start| improve_one(buffers, start)).collect();
            for result in results {
                offer(part, result);
            }
        }
        show_best(parts, run.progress);
    }
}

/// Whether some component is proven not to fit the user's `capacity` (then the plan cannot).
fn refuted(parts: &[Part], capacity: Option<u64>) -> bool {
    capacity.is_some_and(|c| parts.iter().any(|p| p.lower > c))
}

/// Publishes the current makespan (the largest component's) to the progress line.
fn show_best(parts: &[Part], progress: Option<&Progress>) {
    if let Some(p) = progress {
        p.best.store(parts.iter().map(|p| p.makespan).max().unwrap_or(0), Ordering::Relaxed);
    }
}

/// The largest makespan among components outside the boxing queue, or the lower bound.
fn settled_outside(parts: &[Part], queued: &[bool], target: u64) -> u64 {
    parts.iter().zip(queued).filter(|(_, &q)| !q).map(|(p, _)| p.makespan).max().unwrap_or(0).max(target)
}
