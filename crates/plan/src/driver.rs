//! The portfolio driver behind `heaplab plan`.
//!
//! 1. Split the instance into independent components (time ranges no buffer crosses); each is
//!    planned alone from offset 0, and the makespan is the largest component makespan.
//! 2. Solve trivial components exactly (no conflicts; all sizes equal), except when a single
//!    heuristic or the heuristics alone were asked for.
//! 3. Run the greedy heuristics on every component, in parallel, keeping the best. Under `Auto`
//!    they may not start after the first quarter of the time limit, kept for the searches.
//! 4. On *flat* components (load equal to the max at every tick) of more than 64 buffers that
//!    decide the makespan, merge the buffers into blocks ([`crate::flat`]) and plan the blocks by
//!    this same pipeline (nested), trying other merge orders while they do not pack at the
//!    lower bound. Up to 80% of the time left.
//! 5. On components of more than 2,000 buffers ([`SMALL_BUFFERS`]), plan the *critical windows*
//!    ([`crate::windows`]): the stretches of time where the makespan is decided, each planned
//!    alone by this same pipeline (nested: without flat blocks or windows), the rest filled in
//!    around them. Up to 80% of the time left ([`WINDOWS_SHARE`]), if a first-fit placement and
//!    a fifth more fit in it. On the largest component, when it has 50,000–400,000 buffers and
//!    is not flat, the windows start at once instead, beside stage 3 on the other core (one
//!    first-fit placement there can take a third of a 3 s budget), and stop as soon as a
//!    heuristic reaches the lower bound; the stage is then named `heuristics + critical windows`.
//! 6. On components small enough for it (a bounded conflict count), run the exact search
//!    ([`crate::exact`]) from the best placement: it tries the lower bound first and then halves
//!    the gap, on two threads, and proves optimality when it closes the gap. Under `Auto` it
//!    gets 90% of the time left when components have at most 2,000 buffers, else 10% (all of
//!    it for a component that decides the makespan alone, 60% of it per component when several
//!    tie); what it refutes raises the lower bound.
//! 7. Improve the components that decide the makespan with the large-neighbourhood search
//!    ([`crate::improve`]) from the best placement and the runners-up, one per thread: exact
//!    re-packing of small slabs under each peak, then greedy re-packing of time windows; it gets
//!    half of the time left (a third when a component has more than 2,000 buffers: boxing pays
//!    more there) and returns early when stuck.
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
use heaplab_model::Buffer;
use rayon::prelude::*;
use std::borrow::Cow;
use std::sync::atomic::{AtomicU64, Ordering};
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
    /// Only the exact search (from first-fit/size), on components within its conflict budget.
    Exact,
}

impl Algorithm {
    /// Names accepted by `--algorithm`.
    pub const NAMES: &'static str = "auto, heuristics, boxing, exact, first-fit/size, best-fit/size, first-fit/area, \
best-fit/area, first-fit/lifetime, best-fit/lifetime, first-fit/start, best-fit/start, first-fit/random, best-fit/random";

    /// Parses a name from [`Algorithm::NAMES`]; `random` orders use the seed.
    pub fn parse(s: &str, seed: u64) -> Option<Algorithm> {
        match s {
            "auto" => return Some(Algorithm::Auto),
            "heuristics" => return Some(Algorithm::Heuristics),
            "boxing" => return Some(Algorithm::Boxing),
            "exact" => return Some(Algorithm::Exact),
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
            "random" => Order::Random(seed),
            _ => return None,
        };
        Some(Algorithm::Heuristic(Heuristic { order, fit }))
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
}

impl Default for PlanOptions {
    fn default() -> Self {
        PlanOptions { time_limit: Duration::from_secs(3), iterations: None, seed: 1, algorithm: Algorithm::Auto, capacity: None }
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
}

struct Part<'a> {
    /// Indices into the full instance; empty when the part is the whole instance, which was
    /// already in start order.
    index: Vec<u32>,
    /// The part's buffers: borrowed (no copy, 48 bytes a buffer saved) when they are the whole
    /// instance in start order, common at scale (a trace, the `nn` and `malloc` generators).
    buffers: Cow<'a, [Buffer]>,
    max_load: u64,
    /// Proven lower bound on this component's makespan (its max load, or more).
    lower: u64,
    offsets: Vec<u64>,
    makespan: u64,
    algorithm: String,
    attempts: Vec<Attempt>,
    exact: bool,
    /// The next best placements (makespan, algorithm, offsets), best first: other starting
    /// points for the improvement search, which gets stuck in different places from each.
    runners_up: Vec<(u64, String, Vec<u64>)>,
    /// Predicted seconds of one first-fit placement (measured on the first heuristic, scaled
    /// by its relative cost); a boxing pass costs at least that and cannot be interrupted
    /// before its squeeze, so under `Auto` boxing is skipped when less time is left.
    first_fit_seconds: f64,
    /// The critical windows already ran on this part (beside the heuristics), and the windows
    /// stage leaves it alone.
    windowed: bool,
}

/// Runners-up kept per component, and the component size up to which they are kept (each is a
/// copy of the offsets).
const RUNNERS_UP: usize = 2;
const RUNNERS_UP_MAX_BUFFERS: usize = 200_000;

impl Part<'_> {
    fn offer(&mut self, name: String, offsets: Vec<u64>, seconds: f64) {
        let v = heaplab_sweep::validate(&self.buffers, &offsets);
        assert!(v.is_valid(), "{name} produced an invalid placement: {}", v.describe(&self.buffers, &offsets));
        self.attempts.push(Attempt { name: name.clone(), makespan: v.makespan, seconds });
        let mut loser = (v.makespan, name, offsets);
        if self.offsets.is_empty() || v.makespan < self.makespan {
            std::mem::swap(&mut loser.2, &mut self.offsets);
            std::mem::swap(&mut loser.1, &mut self.algorithm);
            loser.0 = std::mem::replace(&mut self.makespan, v.makespan);
        }
        if self.buffers.len() <= RUNNERS_UP_MAX_BUFFERS && !loser.2.is_empty() && !self.runners_up.iter().any(|r| r.0 == loser.0) {
            self.runners_up.push(loser);
            self.runners_up.sort_by_key(|r| r.0);
            self.runners_up.truncate(RUNNERS_UP);
        }
    }
}

/// Plans `buffers` within the options' limits. Optional `progress` is updated as it goes.
pub fn plan(buffers: &[Buffer], opts: &PlanOptions, progress: Option<&Progress>) -> PlanOutcome {
    plan_at(buffers, opts, progress, false)
}

/// [`plan`]; `nested` for the plan of a sub-instance (a window, a flat component's blocks; see
/// [`plan_nested`]), which opens no windows and merges no blocks again.
fn plan_at(buffers: &[Buffer], opts: &PlanOptions, progress: Option<&Progress>, nested: bool) -> PlanOutcome {
    let start = Instant::now();
    let deadline = start + opts.time_limit;
    // Under `Auto`, further heuristics may not start once they would run past a quarter of the
    // budget: the rest belongs to the searches that improve on them (on 10^5 buffers the
    // best-fit variants alone can take the whole limit, and rarely beat first-fit/size there).
    let heuristics_deadline =
        if opts.algorithm == Algorithm::Auto { start + opts.time_limit / 4 } else { deadline };
    // A heuristic whose prediction was wrong is abandoned here (the first one always finishes).
    let heuristics_cutoff =
        if opts.algorithm == Algorithm::Auto { start + opts.time_limit * 2 / 5 } else { deadline };
    // Wall time per stage, for the summary: the stage name and when it began.
    let timeline = std::cell::RefCell::new(Vec::<(String, Instant)>::new());
    let stage = |s: &str| {
        timeline.borrow_mut().push((s.to_string(), Instant::now()));
        if let Some(p) = progress {
            p.set_stage(s)
        }
    };
    stage("splitting into components");
    let comps = heaplab_sweep::components(buffers);
    let single = comps.len() == 1;
    let mut parts: Vec<Part> = comps
        .into_iter()
        .map(|c| {
            // A component is its buffers in start order (ties by index), which the algorithms'
            // tie-breaks see; only when that is the input order can the input be borrowed.
            let (index, bs) = if single && c.buffers.iter().enumerate().all(|(k, &i)| i as usize == k) {
                (Vec::new(), Cow::Borrowed(buffers))
            } else {
                let bs: Vec<Buffer> = c.buffers.iter().map(|&i| buffers[i as usize]).collect();
                (c.buffers, Cow::Owned(bs))
            };
            Part {
                max_load: heaplab_sweep::max_load(&bs),
                lower: 0,
                index,
                buffers: bs,
                offsets: Vec::new(),
                makespan: 0,
                algorithm: String::new(),
                attempts: Vec::new(),
                exact: false,
                runners_up: Vec::new(),
                first_fit_seconds: 0.0,
                windowed: false,
            }
        })
        .collect();
    let lower_bound = parts.iter().map(|p| p.max_load).max().unwrap_or(0);
    for part in &mut parts {
        part.lower = part.max_load;
    }
    // The makespan at which a component is done: the lower bound, or a capacity above it.
    let target = opts.capacity.map_or(lower_bound, |c| c.max(lower_bound));

    // On a large component that is not flat, the critical windows (stage 5) are what usually
    // reaches the max load, and one first-fit placement there can take a third of a 3 s
    // budget: the windows start now, beside the heuristics, on the other core. The heuristics
    // post their makespans to `rival`, which stops the windows once one reaches the target.
    let speculative = (opts.algorithm == Algorithm::Auto && !nested)
        .then(|| (0..parts.len()).max_by_key(|&i| (parts[i].buffers.len(), std::cmp::Reverse(i))))
        .flatten()
        .filter(|&i| {
            let p = &parts[i];
            (SPECULATIVE_WINDOWS_MIN..=SPECULATIVE_WINDOWS_MAX).contains(&p.buffers.len())
                && !crate::flat::is_flat(&p.buffers, p.max_load)
        });
    let rival = Arc::new(AtomicU64::new(u64::MAX));
    stage(if speculative.is_some() { "heuristics + critical windows" } else { "heuristics" });
    let heuristics: Vec<Heuristic> = match opts.algorithm {
        Algorithm::Auto | Algorithm::Heuristics => Heuristic::STANDARD.to_vec(),
        Algorithm::Heuristic(h) => vec![h],
        Algorithm::Exact => vec![Heuristic::STANDARD[0]],
        Algorithm::Boxing => Vec::new(),
    };
    // Tells the windows running beside the heuristics (if on this part) a makespan reached.
    let post = |i: usize, makespan: u64| {
        if speculative == Some(i) {
            rival.fetch_min(makespan, Ordering::Relaxed);
        }
    };
    let run_heuristics = |parts: &mut [Part]| parts.par_iter_mut().enumerate().for_each(|(index, part)| {
        // Exact cases first (also under `Boxing`, whose own prelude would solve them anyway, so
        // that they do not take a share of the boxing time).
        if matches!(opts.algorithm, Algorithm::Auto | Algorithm::Boxing | Algorithm::Exact) {
            let t = Instant::now();
            if let Some(off) = heuristics::solve_conflict_free(&part.buffers) {
                part.offer("exact: no conflicts".into(), off, t.elapsed().as_secs_f64());
            } else if let Some(off) = heuristics::solve_equal_sizes(&part.buffers) {
                part.offer("exact: equal sizes (interval colouring)".into(), off, t.elapsed().as_secs_f64());
            }
            part.exact = !part.offsets.is_empty();
            if part.exact {
                post(index, part.makespan);
                return;
            }
        }
        // The first heuristic always runs, alone, so that there is a placement and a measure of
        // cost; a later one starts only if its predicted time (`Heuristic::relative_cost` times
        // the first one's) still fits before the heuristics' deadline.
        // Above `HUGE_BUFFERS` the cheapest heuristic goes first: first-fit by size grows
        // superlinearly there (10^7 random buffers: 500 s and 5.5 GB, the start-order sweep 14 s
        // and 1.2 GB), and then runs only if its predicted time fits the budget.
        let mut heuristics = heuristics.clone();
        if part.buffers.len() > HUGE_BUFFERS && heuristics.len() > 1 {
            let cheapest = (0..heuristics.len())
                .min_by(|&a, &b| heuristics[a].relative_cost().total_cmp(&heuristics[b].relative_cost()))
                .unwrap_or(0);
            let h = heuristics.remove(cheapest);
            heuristics.insert(0, h);
        }
        let Some((first, rest)) = heuristics.split_first() else { return };
        let t = Instant::now();
        let off = first.run(&part.buffers);
        let unit = t.elapsed();
        part.first_fit_seconds = unit.as_secs_f64() / first.relative_cost();
        let top = part.buffers.iter().zip(&off).map(|(b, &o)| o + b.size).max().unwrap_or(0);
        post(index, top);
        // At the target (the global lower bound, or the capacity) nothing better is needed: the
        // other heuristics are skipped.
        let rest = if top <= target { &[][..] } else { rest };
        let mut results = vec![(first.name(), off, unit.as_secs_f64())];
        results.extend(
            rest.par_iter()
                .filter_map(|h| {
                    let predicted = unit.mul_f64(h.relative_cost());
                    if Instant::now() + predicted > heuristics_deadline {
                        return None;
                    }
                    let t = Instant::now();
                    let off = h.run_until(&part.buffers, heuristics_cutoff)?;
                    Some((h.name(), off, t.elapsed().as_secs_f64()))
                })
                .collect::<Vec<_>>(),
        );
        for (name, off, secs) in results {
            part.offer(name, off, secs);
        }
        post(index, part.makespan);
        if let Some(p) = progress {
            p.best.fetch_max(part.makespan, Ordering::Relaxed);
        }
    });
    match speculative {
        None => run_heuristics(&mut parts),
        Some(i) => {
            let sub = parts[i].buffers.to_vec();
            let mut params = crate::windows::WindowParams::new(start + opts.time_limit.mul_f64(WINDOWS_SHARE), target, u64::MAX);
            params.rival = Some(Arc::clone(&rival));
            let began = Instant::now();
            let ((), out) = rayon::join(
                || run_heuristics(&mut parts),
                || crate::windows::plan_windows(&sub, &params, &mut |w: &[Buffer], until: Instant| plan_nested(w, until, opts.seed)),
            );
            if let Some(off) = out.offsets {
                parts[i].offer(format!("critical windows ({})", out.windows), off, began.elapsed().as_secs_f64());
            }
            parts[i].windowed = true;
            show_best(&parts, progress);
        }
    }

    // Small components are where the exact search shines and boxing rarely helps; on large
    // ones the exact search is a long shot and boxing, then improving its result, pays most.
    let largest = parts.iter().filter(|p| !p.exact).map(|p| p.buffers.len()).max().unwrap_or(0);
    let small = largest <= SMALL_BUFFERS;

    if opts.algorithm == Algorithm::Auto && !nested {
        stage("flat components");
        flat_stage(&mut parts, target, deadline, opts.seed, progress);
    }
    if opts.algorithm == Algorithm::Auto && !nested && !small {
        stage("critical windows");
        windows_stage(&mut parts, target, deadline, opts.seed, progress);
    }
    if matches!(opts.algorithm, Algorithm::Auto | Algorithm::Exact) {
        stage("exact search");
        let share = match opts.algorithm {
            Algorithm::Auto if small => 0.9,
            Algorithm::Auto => 0.1,
            _ => 1.0,
        };
        exact_stage(&mut parts, lower_bound, opts.capacity, share, deadline, progress);
    }

    // Once a component is proven not to fit the capacity, nothing more is worth doing.
    if opts.algorithm == Algorithm::Auto && !refuted(&parts, opts.capacity) {
        stage("improvement search");
        // Half the time left on small components; a third on large ones, whose boxing passes
        // are long and which get a second improvement round from boxing's result anyway.
        let now = Instant::now();
        let share = if small { 0.5 } else { 0.33 };
        improve_stage(&mut parts, target, now + deadline.saturating_duration_since(now).mul_f64(share), opts.seed, progress);
    }

    let mut boxing_iterations = 0;
    if matches!(opts.algorithm, Algorithm::Auto | Algorithm::Boxing) && !refuted(&parts, opts.capacity) {
        stage("boxing");
        // Under `Auto` a fifth of what is left is kept to improve what boxing finds.
        let boxing_deadline = if opts.algorithm == Algorithm::Auto {
            let now = Instant::now();
            now + deadline.saturating_duration_since(now).mul_f64(0.8)
        } else {
            deadline
        };
        let before: Vec<u64> = parts.iter().map(|p| p.makespan).collect();
        boxing_iterations = boxing_stage(&mut parts, opts, target, boxing_deadline, progress);
        if opts.algorithm == Algorithm::Auto && (!small || parts.iter().zip(&before).any(|(p, &b)| p.makespan < b)) {
            stage("improvement search");
            improve_stage(&mut parts, target, deadline, opts.seed ^ 1, progress);
        }
    }

    stage("assembling");
    let mut offsets = vec![0u64; buffers.len()];
    for part in &parts {
        if part.index.is_empty() {
            offsets.copy_from_slice(&part.offsets);
        }
        for (&i, &o) in part.index.iter().zip(&part.offsets) {
            offsets[i as usize] = o;
        }
    }
    let v = heaplab_sweep::validate(buffers, &offsets);
    assert!(v.is_valid(), "assembled placement invalid: {}", v.describe(buffers, &offsets));
    let mut stages: Vec<(String, f64)> = Vec::new();
    {
        let marks = timeline.borrow();
        for (k, (name, at)) in marks.iter().enumerate() {
            let end = marks.get(k + 1).map(|m| m.1).unwrap_or_else(Instant::now);
            match stages.iter_mut().find(|(n, _)| n == name) {
                Some(st) => st.1 += (end - *at).as_secs_f64(),
                None => stages.push((name.clone(), (end - *at).as_secs_f64())),
            }
        }
    }
    let critical = parts.iter().max_by_key(|p| (p.makespan, p.buffers.len()));
    let proven = parts.iter().map(|p| p.lower).max().unwrap_or(0).max(lower_bound);
    PlanOutcome {
        makespan: v.makespan,
        max_load: lower_bound,
        lower_bound: proven,
        optimal: v.makespan == proven,
        algorithm: critical.map(|p| p.algorithm.clone()).unwrap_or_else(|| "none (no buffers)".into()),
        components: parts.len(),
        critical_buffers: critical.map(|p| p.buffers.len()).unwrap_or(0),
        attempts: critical.map(|p| p.attempts.clone()).unwrap_or_default(),
        boxing_iterations,
        offsets,
        stages,
        seconds: start.elapsed().as_secs_f64(),
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
fn boxing_stage(parts: &mut [Part], opts: &PlanOptions, target: u64, deadline: Instant, progress: Option<&Progress>) -> usize {
    let mut queue: Vec<usize> = (0..parts.len())
        .filter(|&i| !parts[i].exact && (parts[i].offsets.is_empty() || parts[i].makespan > target.max(parts[i].lower)))
        .collect();
    queue.sort_by_key(|&i| (std::cmp::Reverse((parts[i].offsets.is_empty(), parts[i].makespan, parts[i].buffers.len())), i));
    let cap = opts.iterations.unwrap_or(usize::MAX);
    let mut used = vec![0usize; parts.len()];
    let mut total = 0;
    // Runs boxing on part `i` for `share` of the time left, aiming at `target`; returns the passes.
    let run = |parts: &mut [Part], used: &mut [usize], i: usize, round: u64, share: f64, target: u64| {
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
        };
        let out = boxing::plan(&part.buffers, &params);
        used[i] += out.iterations;
        // Empty offsets: no pass beat the bound (never the case without one).
        if !out.offsets.is_empty() {
            let name = if out.exact { "exact (boxing prelude)".to_string() } else { "boxing".to_string() };
            part.offer(name, out.offsets, now.elapsed().as_secs_f64());
        }
        show_best(parts, progress);
        out.iterations
    };
    // Under `Auto`, a pass that cannot finish in the time left is not started (on 4.4M traced
    // blocks one pass took 15 s of a 3 s budget).
    let hopeless = |p: &Part| {
        !p.offsets.is_empty()
            && opts.algorithm == Algorithm::Auto
            && deadline.saturating_duration_since(Instant::now()).as_secs_f64() < p.first_fit_seconds
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
            let share = if k + 1 == queue.len() { 1.0 } else { 0.6 };
            total += run(parts, &mut used, i, 0, share, settled);
        }
        settled = settled.max(parts[i].makespan);
    }
    for round in 1.. {
        let Some(&i) = queue.iter().max_by_key(|&&i| (parts[i].makespan, std::cmp::Reverse(i))) else { break };
        let others = queue.iter().filter(|&&j| j != i).map(|&j| parts[j].makespan).max().unwrap_or(0);
        let others = others.max(settled_outside(parts, &queued, target));
        if parts[i].makespan <= others || used[i] >= cap || Instant::now() >= deadline || hopeless(&parts[i]) {
            break;
        }
        let passes = run(parts, &mut used, i, round, 1.0, others);
        total += passes;
        if passes == 0 {
            break;
        }
    }
    total
}

/// Component size above which the heuristics start with the cheapest one (see [`plan`]).
const HUGE_BUFFERS: usize = 2_000_000;

/// Components of at most this many buffers are *small*: the exact search gets most of the time
/// and no critical windows are opened (a window would be most of the component).
const SMALL_BUFFERS: usize = 2_000;

/// The components a search stage works on, largest makespan first (ties by index): not solved
/// exactly, with a placement above their target (`target` — the global lower bound, or the
/// capacity when one is given — or their own proven bound, whichever is higher), and a buffer
/// count `sized` accepts.
fn above_target(parts: &[Part], target: u64, sized: impl Fn(usize) -> bool) -> Vec<usize> {
    let mut queue: Vec<usize> = (0..parts.len())
        .filter(|&i| !parts[i].exact && !parts[i].offsets.is_empty() && parts[i].makespan > target.max(parts[i].lower))
        .filter(|&i| sized(parts[i].buffers.len()))
        .collect();
    queue.sort_by_key(|&i| (std::cmp::Reverse(parts[i].makespan), i));
    queue
}

/// Offsets for a sub-instance a stage builds (a window, the blocks of a flat component), planned
/// by this driver under `Auto` until `until`, nested: no windows or flat blocks inside.
fn plan_nested(sub: &[Buffer], until: Instant, seed: u64) -> Vec<u64> {
    let opts = PlanOptions { time_limit: until.saturating_duration_since(Instant::now()), seed, ..PlanOptions::default() };
    plan_at(sub, &opts, None, true).offsets
}

/// The critical-windows stage of [`plan`] ([`crate::windows`]): on each component above
/// [`SMALL_BUFFERS`] that decides the makespan, largest makespan first, for up to
/// [`WINDOWS_SHARE`] of the time left, provided that holds a fill (about one first-fit placement)
/// and a fifth more for planning the window.
/// Each window is planned by this driver's own pipeline (nested: no windows inside windows).
fn windows_stage(parts: &mut [Part], target: u64, deadline: Instant, seed: u64, progress: Option<&Progress>) {
    let queue = above_target(parts, target, |n| n > SMALL_BUFFERS);
    for &i in &queue {
        let settled = parts.iter().map(|p| p.makespan).max().unwrap_or(0);
        let part = &mut parts[i];
        let now = Instant::now();
        let left = deadline.saturating_duration_since(now);
        if part.windowed || part.makespan < settled || left.as_secs_f64() * WINDOWS_SHARE < 1.2 * part.first_fit_seconds {
            continue;
        }
        let params = crate::windows::WindowParams::new(now + left.mul_f64(WINDOWS_SHARE), target.max(part.lower), part.makespan);
        let mut solve = |sub: &[Buffer], until: Instant| plan_nested(sub, until, seed);
        let out = crate::windows::plan_windows(&part.buffers, &params, &mut solve);
        if let Some(off) = out.offsets {
            part.offer(format!("critical windows ({})", out.windows), off, now.elapsed().as_secs_f64());
        }
        show_best(parts, progress);
    }
}

/// Share of the time left the critical-windows stage may take. Most of it: on large components
/// it is the stage that reaches the max load (10^5 random buffers: 0% where the improvement
/// search and boxing, given the same time, end 2.4-2.7% above), and on a slow machine the first
/// heuristic alone takes a third of a 3 s budget, so 60% of the rest no longer held the
/// one fill and window plan it needs there.
const WINDOWS_SHARE: f64 = 0.8;

/// Component sizes on which the critical windows start beside the heuristics (see [`plan_at`]):
/// from where one first-fit placement takes a sizeable part of a short budget, up to where a
/// second copy of the component and its occupancy index would cost more memory than it saves
/// time (above, a fill alone takes most of a 3 s budget and the windows stage does not run).
const SPECULATIVE_WINDOWS_MIN: usize = 50_000;
const SPECULATIVE_WINDOWS_MAX: usize = 400_000;

/// Buffers below which a flat component is left to the exact search alone.
const FLAT_MIN_BUFFERS: usize = 64;

/// The flat-components stage of [`plan`] ([`crate::flat`]): each component that decides the
/// makespan, has more than [`FLAT_MIN_BUFFERS`] buffers and the same load at every tick is
/// merged into blocks, and the blocks are planned as an instance of their own by this driver's
/// pipeline (nested). Up to 80% of the time left (the other stages rarely gain a byte on a
/// flat component: every instant is a peak, and no slack anywhere), shared equally by the
/// components in line; in a component's share the first merge order gets half, each further
/// one (drawn from `seed`) half of what remains, until a plan reaches the target.
fn flat_stage(parts: &mut [Part], target: u64, deadline: Instant, seed: u64, progress: Option<&Progress>) {
    let queue = above_target(parts, target, |n| n > FLAT_MIN_BUFFERS);
    let stage_end = {
        let now = Instant::now();
        now + deadline.saturating_duration_since(now).mul_f64(0.8)
    };
    for (k, &i) in queue.iter().enumerate() {
        let settled = parts.iter().map(|p| p.makespan).max().unwrap_or(0);
        let part = &mut parts[i];
        if part.makespan < settled || !crate::flat::is_flat(&part.buffers, part.max_load) {
            continue;
        }
        // An equal share of the stage for this component and each after it in the queue.
        let part_end = {
            let now = Instant::now();
            now + stage_end.saturating_duration_since(now) / (queue.len() - k) as u32
        };
        let aim = target.max(part.lower);
        for round in 0u64.. {
            let now = Instant::now();
            if now >= part_end || part.makespan <= aim {
                break;
            }
            let blocks = crate::flat::reduce(&part.buffers, (round > 0).then(|| seed ^ round.wrapping_mul(0x9E37_79B9_7F4A_7C15)));
            if blocks.len() * 2 > part.buffers.len() {
                break; // no structure to exploit
            }
            let sub = blocks.buffers();
            let until = now + part_end.saturating_duration_since(now) / 2;
            let off = blocks.expand(&plan_nested(&sub, until, seed), part.buffers.len());
            part.offer(format!("flat blocks ({} blocks)", sub.len()), off, now.elapsed().as_secs_f64());
        }
        show_best(parts, progress);
    }
}

/// Conflicting pairs above which a component is left to the heuristics and boxing: the exact
/// search keeps per-buffer conflict lists (8 bytes a pair).
const EXACT_MAX_CONFLICTS: u64 = 10_000_000;
/// Buffers above which a component is left to the heuristics and boxing: the exact search's
/// nodes cost O(n), so a long search there is better spent on the other stages, and each level
/// of its recursion keeps its own list of the unplaced buffers, 2n² bytes a thread at full
/// depth (10^4 random buffers: 368 MB on two threads; at 6,000, 72 MB a thread). Lists shared
/// between levels (a sparse set undone on backtrack) would lift this.
const EXACT_MAX_BUFFERS: usize = 6_000;

/// The exact stage of [`plan`]: components above the makespan settled elsewhere, largest first,
/// each minimised from its best placement for `share` of the time left (the last one all of
/// the stage's time); under a user's `capacity`, only that capacity is decided. A refuted
/// capacity raises the component's proven lower bound.
fn exact_stage(parts: &mut [Part], lower_bound: u64, capacity: Option<u64>, share: f64, deadline: Instant, progress: Option<&Progress>) {
    let target = capacity.map_or(lower_bound, |c| c.max(lower_bound));
    let mut queue = above_target(parts, target, |n| n <= EXACT_MAX_BUFFERS);
    // Under a capacity every component above it must come down, and which is hard is not
    // known: the smallest go first, each with an equal share of what is left, so quick ones
    // hand their time on (largest-makespan-first gave minimalloc E's hard component 60% of the
    // stage behind a trivial one).
    if capacity.is_some() {
        queue.sort_by_key(|&i| (parts[i].buffers.len(), i));
    }
    let strategies = exact::Strategy::portfolio();
    let threads = rayon::current_num_threads().clamp(1, 2);
    let stage_end = {
        let now = Instant::now();
        now + deadline.saturating_duration_since(now).mul_f64(share)
    };
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
        let Some(problem) = exact::Problem::new(&part.buffers, EXACT_MAX_CONFLICTS) else { continue };
        let left = stage_end.duration_since(now);
        let until = if capacity.is_some() {
            now + left / (queue.len() - k) as u32
        } else if !others_tie {
            stage_end
        } else {
            now + left.mul_f64(0.6)
        };
        let m = exact::minimize(&problem, part.makespan, part.lower.max(lower_bound), capacity, &strategies, threads, until);
        part.lower = part.lower.max(m.lower_bound);
        if let Some(off) = m.offsets {
            part.offer("exact search".into(), off, now.elapsed().as_secs_f64());
        }
        show_best(parts, progress);
    }
}

/// The improvement stage of [`plan`]: the components that decide the makespan, largest first,
/// each improved ([`crate::improve`]) from its best placement and its runners-up in parallel
/// until `until` (a search returns early when stuck), aiming at `target` or its proven lower
/// bound, whichever is higher.
fn improve_stage(parts: &mut [Part], target: u64, until: Instant, seed: u64, progress: Option<&Progress>) {
    let queue = above_target(parts, target, |_| true);
    for &i in &queue {
        let settled = parts.iter().map(|p| p.makespan).max().unwrap_or(0);
        let part = &mut parts[i];
        if part.makespan < settled || Instant::now() >= until {
            continue;
        }
        // From the best placement and the runners-up, on all threads (the search itself is
        // sequential): each start gets stuck in a different place, and a search returns early
        // when stuck, freeing its thread for the next start. The first to reach the target
        // stops the others.
        let aim = target.max(part.lower);
        let starts: Vec<(String, Vec<u64>)> = std::iter::once((part.algorithm.clone(), part.offsets.clone()))
            .chain(part.runners_up.iter().map(|r| (r.1.clone(), r.2.clone())))
            .collect();
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let buffers = &part.buffers;
        let results: Vec<(String, Vec<u64>, improve::ImproveStats, f64)> = starts
            .into_par_iter()
            .enumerate()
            .filter_map(|(k, (name, mut offsets))| {
                if Instant::now() >= until || stop.load(Ordering::Relaxed) {
                    return None;
                }
                let t = Instant::now();
                let seed = crate::rng::mix(crate::rng::mix(seed, i as u64), k as u64);
                let params = improve::ImproveParams { stop: Some(stop.clone()), ..improve::ImproveParams::new(until, seed, aim) };
                let stats = improve::improve(buffers, &mut offsets, &params);
                Some((name, offsets, stats, t.elapsed().as_secs_f64()))
            })
            .collect();
        for (name, offsets, stats, secs) in results {
            if stats.end < stats.start {
                part.offer(format!("{name} + improvement"), offsets, secs);
            }
        }
        show_best(parts, progress);
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
