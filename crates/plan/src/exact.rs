//! Exact search for small and medium components: a depth-first branch-and-bound over
//! *canonical* partial solutions. It answers "does a placement with makespan ≤ C exist?",
//! proving it either way when it runs to the end, and is cut off by time, node or cancellation
//! limits otherwise. [`decide_portfolio`] runs it on several threads as a portfolio: fixed
//! orders deepened with growing node budgets, and short restarts over randomly perturbed ones.
//!
//! # The search space
//!
//! Time is cut into *sections*, the maximal cliques of the interval graph (the buffers live just
//! before each distinct end time); a buffer spans a contiguous run of them, and two buffers
//! conflict exactly when they share one. Buffers are placed one at a time, each on the skyline of
//! what is placed: its offset is the highest top among placed buffers in its sections (its
//! *viable offset*), aligned up. Offsets are placed in non-decreasing order, ties by a rank.
//! This is minimalloc's idea of canonical solutions (Moffitt, ASPLOS'23; its public description
//! names canonical solutions, section inference, dominance, decomposition and hatless pruning);
//! the argument below for why it is complete, and what it lets us prune, is our own.
//!
//! **Completeness.** Take a placement of makespan ≤ C that, among all such, has the least sum of
//! offsets. (1) No buffer can move down, so each sits exactly on the highest top of the
//! conflicting buffers below it (or at 0), aligned up; placing the buffers in offset order on the
//! skyline reproduces it. (2) No buffer `u` fits in an empty region below its offset. So at every
//! node, with last offset `p`:
//! - an unplaced `u` whose viable offset `v(u)` has `v(u) + size(u) ≤ p` is *dead*: the region
//!   `[v(u), p)` over its sections stays empty forever (placed tops there are ≤ `v(u)`, later
//!   buffers start at ≥ `p`) and `u` would fit in it — prune (dominance);
//! - likewise the next offset `o` must satisfy `o < v(u) + size(u)` for every unplaced `u`: the
//!   candidates lie below `G = min_u v(u) + size(u)`;
//! - the next offset is at least `p`, with ties broken by rank.
//!
//! Unit tests replay placements in that form through the pruning rules, and compare the
//! decision against brute force on small instances.
//!
//! **Inference.** In each section the unplaced buffers covering it are pairwise conflicting, so
//! they stack above the lowest offset any of them can still take: `low + rem ≤ C`. A buffer that
//! can no longer be placed at `p` (viable offset below `p`, or ranked before the last placement)
//! counts as `p + 1`. Every unplaced `u` also needs `max(p, v(u)) + size(u) ≤ C`.
//!
//! **Search.** Candidates in increasing viable offset, ties by rank, so the first dive is a
//! skyline greedy. A buffer with no unplaced conflict (*hatless*) that fails at its viable offset
//! fails everywhere, so its siblings are not tried. Buffers with the same sections, size,
//! alignment and floor are interchangeable and placed in rank order only. When the unplaced
//! buffers fall apart into independent groups (no section shared), each is solved alone and a
//! failing group fails the node at once. States proven to fail are remembered ([`FailureMemo`]).
//!
//! Conflicts are kept as per-buffer lists, built by a sweep. That is quadratic in the worst case,
//! which is why [`Problem::new`] refuses components above a conflict budget; large instances
//! never get here.

use heaplab_model::{align_up, Buffer};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

/// Stack of each exact-search thread: the search recurses once per placed buffer (up to
/// [`crate::Policy::exact_max_buffers`] deep, or a whole improvement slab's free set). Reserved,
/// not touched, beyond what it uses.
const SEARCH_STACK_BYTES: usize = 64 << 20;

/// Largest problem [`Problem::decide`] searches on the calling thread's own stack: a level takes
/// about 500 bytes in a release build (several times that unoptimised), so 256 levels fit
/// within the 2 MiB of any thread, whatever its caller already holds there.
pub const INLINE_SEARCH_MAX_BUFFERS: usize = 256;

/// How a decision search ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    /// A placement with makespan ≤ the capacity (offsets parallel to the input).
    Found(Vec<u64>),
    /// The space is exhausted: no placement fits the capacity.
    Infeasible,
    /// Stopped by the deadline, the node limit or cancellation.
    Unknown,
}

/// The static tie-break order among candidates with equal viable offset. Width is the
/// lifetime length, area is size × width, total is the peak section load a buffer sits in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rank {
    /// Widest first, then larger area, then larger total.
    WidthAreaTotal,
    /// Largest total first, then larger area, then wider.
    TotalAreaWidth,
    /// Largest total first, then wider, then larger area.
    TotalWidthArea,
    /// Largest size first, then larger total.
    SizeTotal,
    /// A seeded random order.
    Random(u64),
    /// Largest total first with every buffer's total scaled by a seeded random factor: a
    /// perturbation of a good order (a plain random order is far worse).
    Jitter(u64),
    /// Largest size first with every buffer's size scaled by a seeded random factor, then
    /// larger total: the portfolio's restarts alternate it with [`Rank::Jitter`].
    SizeJitter(u64),
}

impl Rank {
    /// The rankings a portfolio tries first.
    pub const ALL: [Rank; 3] = [Rank::WidthAreaTotal, Rank::TotalAreaWidth, Rank::TotalWidthArea];
}

/// How one search orders its choices: a ranking, and what happens when the unplaced buffers
/// fall apart into independent groups. Either way is complete; they differ in which solutions
/// come first, and instances differ in which one finds a solution quickly.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Strategy {
    /// Tie-break order among candidates at equal viable offsets.
    pub rank: Rank,
    /// When set, each independent group restarts the canonical order from offset 0 with ranks
    /// recomputed from the section totals of what is left (as minimalloc's sub-partitions do);
    /// otherwise groups continue the enclosing order, which prunes more.
    pub rerank_groups: bool,
    /// When set, branch on the section with the fewest candidates at the current offset: one
    /// branch per buffer that could fill its lowest free address, plus one that leaves it
    /// empty there (first-fail, as in exact cover); otherwise candidates are taken in (offset,
    /// rank) order.
    pub by_section: bool,
}

impl Strategy {
    /// The default portfolio, most broadly successful first (measured on the minimalloc suite
    /// and generated tight instances: each of these is the fastest, or the only one to
    /// succeed, on some of them; the other combinations were dominated).
    pub fn portfolio() -> Vec<Strategy> {
        let s = |rank, rerank_groups, by_section| Strategy { rank, rerank_groups, by_section };
        vec![
            s(Rank::TotalWidthArea, false, false),
            s(Rank::TotalWidthArea, true, false),
            s(Rank::TotalAreaWidth, false, true),
            s(Rank::WidthAreaTotal, false, true),
            s(Rank::TotalAreaWidth, false, false),
            s(Rank::WidthAreaTotal, false, false),
        ]
    }
}

impl From<Rank> for Strategy {
    fn from(rank: Rank) -> Self {
        Strategy { rank, rerank_groups: false, by_section: false }
    }
}

/// Limits of one search.
#[derive(Clone, Copy, Debug)]
pub struct Limits<'a> {
    /// Stop at this instant.
    pub deadline: Option<Instant>,
    /// Stop after this many nodes.
    pub nodes: u64,
    /// Stop when this becomes true (the caller gave up).
    pub cancel: Option<&'a AtomicBool>,
    /// A second stop flag (a portfolio cancelling this run).
    pub also_cancel: Option<&'a AtomicBool>,
    /// A third stop flag (a search beside this one that made it moot: see [`minimize`]).
    pub moot: Option<&'a AtomicBool>,
}

impl Default for Limits<'_> {
    fn default() -> Self {
        Limits { deadline: None, nodes: u64::MAX, cancel: None, also_cancel: None, moot: None }
    }
}

/// Statistics of one search.
#[derive(Clone, Copy, Debug, Default)]
pub struct SearchStats {
    /// Nodes expanded.
    pub nodes: u64,
}

/// The static part of a search: sections, conflict lists and ranks. Built once per component
/// and shared by every search on it.
pub struct Problem {
    size: Vec<u64>,
    align: Vec<u8>,
    /// Section range `[first, last)` of each buffer.
    first: Vec<u32>,
    last: Vec<u32>,
    /// Conflict lists in CSR form.
    conf_start: Vec<u32>,
    conf: Vec<u32>,
    /// The buffers covering each section, in CSR form (at most 2 × conflicts + n entries: a
    /// buffer spans a section only where some buffer it conflicts with, or itself, ends).
    sec_start: Vec<u32>,
    sec_bufs: Vec<u32>,
    /// Load of each section.
    section_load: Vec<u64>,
    /// Peak section load over each buffer's sections.
    total: Vec<u64>,
    /// Lowest offset each buffer may take (0, or the top of fixed obstacles below it).
    floor: Vec<u64>,
    /// Lifetime length.
    width: Vec<u64>,
    /// Size × lifetime length.
    area: Vec<u128>,
}

impl Problem {
    /// Prepares `buffers` for search. `None` when they have more than `max_conflicts`
    /// conflicting pairs (the lists would be too large).
    pub fn new(buffers: &[Buffer], max_conflicts: u64) -> Option<Problem> {
        if heaplab_sweep::conflict_count(buffers) > max_conflicts {
            return None;
        }
        let n = buffers.len();
        // Sections are the maximal cliques of the interval graph: the buffers live just before
        // each distinct end time. Between two end times loads only grow, so a clique's load is
        // the peak of its stretch of time, and two buffers conflict exactly when they share a
        // clique. Fewer sections than elementary intervals, with the same constraints.
        let mut ends: Vec<u64> = buffers.iter().map(|b| b.upper).collect();
        ends.sort_unstable();
        ends.dedup();
        let first: Vec<u32> = buffers.iter().map(|b| ends.partition_point(|&x| x <= b.lower) as u32).collect();
        let last: Vec<u32> = buffers.iter().map(|b| ends.partition_point(|&x| x <= b.upper) as u32).collect();
        let sections = ends.len();
        // Section loads by a difference array.
        let mut diff = vec![0i128; sections + 1];
        for (i, b) in buffers.iter().enumerate() {
            diff[first[i] as usize] += b.size as i128;
            diff[last[i] as usize] -= b.size as i128;
        }
        let mut section_load = Vec::with_capacity(sections);
        let mut acc = 0i128;
        for d in &diff[..sections] {
            acc += d;
            section_load.push(acc as u64);
        }
        let total: Vec<u64> = (0..n)
            .map(|i| section_load[first[i] as usize..last[i] as usize].iter().copied().max().unwrap_or(0))
            .collect();
        // Conflict lists: each buffer conflicts with everything live when it starts, and
        // symmetrically; a sweep over starts in order with an active list ordered by end.
        let mut by_start: Vec<u32> = (0..n as u32).collect();
        by_start.sort_unstable_by_key(|&i| (first[i as usize], i));
        let mut lists: Vec<Vec<u32>> = vec![Vec::new(); n];
        let mut active: Vec<u32> = Vec::new();
        for &i in &by_start {
            let s = first[i as usize];
            active.retain(|&j| last[j as usize] > s);
            for &j in &active {
                lists[i as usize].push(j);
                lists[j as usize].push(i);
            }
            active.push(i);
        }
        let mut conf_start = Vec::with_capacity(n + 1);
        let mut conf = Vec::new();
        conf_start.push(0);
        for l in lists {
            conf.extend_from_slice(&l);
            conf_start.push(conf.len() as u32);
        }
        let mut sec_start = vec![0u32; sections + 1];
        for i in 0..n {
            for s in first[i]..last[i] {
                sec_start[s as usize + 1] += 1;
            }
        }
        for s in 0..sections {
            sec_start[s + 1] += sec_start[s];
        }
        let mut fill = sec_start.clone();
        let mut sec_bufs = vec![0u32; sec_start[sections] as usize];
        for i in 0..n {
            for s in first[i]..last[i] {
                sec_bufs[fill[s as usize] as usize] = i as u32;
                fill[s as usize] += 1;
            }
        }
        Some(Problem {
            size: buffers.iter().map(|b| b.size).collect(),
            align: buffers.iter().map(|b| b.align_log2).collect(),
            first,
            last,
            conf_start,
            conf,
            sec_start,
            sec_bufs,
            section_load,
            total,
            floor: vec![0; n],
            width: buffers.iter().map(|b| b.length()).collect(),
            area: buffers.iter().map(|b| b.size as u128 * b.length() as u128).collect(),
        })
    }

    /// Gives each buffer a floor: it may not go below it (the highest top of fixed buffers under
    /// it, when the search re-packs part of a placement on top of the rest). The completeness
    /// argument is unchanged: in a least-offset-sum solution each buffer still sits on its floor
    /// or on the highest conflicting buffer below it, and a region between a dead buffer's
    /// viable offset and the current offset still holds nothing.
    pub fn with_floors(mut self, floors: Vec<u64>) -> Problem {
        assert_eq!(floors.len(), self.len(), "one floor per buffer");
        self.floor = floors;
        self
    }

    /// Number of buffers.
    pub fn len(&self) -> usize {
        self.size.len()
    }

    /// Whether there are no buffers.
    pub fn is_empty(&self) -> bool {
        self.size.is_empty()
    }

    /// The makespan of `offsets` (parallel to the buffers).
    pub fn makespan_of(&self, offsets: &[u64]) -> u64 {
        offsets.iter().zip(&self.size).map(|(o, s)| o + s).max().unwrap_or(0)
    }

    /// The max load (the trivial lower bound).
    pub fn max_load(&self) -> u64 {
        self.section_load.iter().copied().max().unwrap_or(0)
    }

    fn conflicts(&self, i: usize) -> &[u32] {
        &self.conf[self.conf_start[i] as usize..self.conf_start[i + 1] as usize]
    }

    /// The buffers covering section `s` (placed or not).
    fn covering(&self, s: usize) -> &[u32] {
        &self.sec_bufs[self.sec_start[s] as usize..self.sec_start[s + 1] as usize]
    }

    /// Rank of every buffer (0 = tried first among equal viable offsets).
    fn ranks(&self, rank: Rank) -> Vec<u32> {
        let mut idx: Vec<u32> = (0..self.len() as u32).collect();
        self.order(rank, &mut idx, |i| self.total[i], |i| i as u32);
        let mut r = vec![0u32; self.len()];
        for (k, &i) in idx.iter().enumerate() {
            r[i as usize] = k as u32;
        }
        r
    }

    /// Sorts `idx` into `rank` order, best first, with `total(i)` as the section total and
    /// `tie(i)` breaking ties.
    fn order(&self, rank: Rank, idx: &mut [u32], total: impl Fn(usize) -> u64, tie: impl Fn(usize) -> u32) {
        use std::cmp::Reverse;
        let (w, a, z) = (&self.width, &self.area, &self.size);
        let t = |i: u32| total(i as usize);
        let u = |i: u32| i as usize;
        match rank {
            Rank::WidthAreaTotal => idx.sort_by_cached_key(|&i| (Reverse((w[u(i)], a[u(i)], t(i))), tie(u(i)))),
            Rank::TotalAreaWidth => idx.sort_by_cached_key(|&i| (Reverse((t(i), a[u(i)], w[u(i)])), tie(u(i)))),
            Rank::TotalWidthArea => idx.sort_by_cached_key(|&i| (Reverse((t(i), w[u(i)], a[u(i)])), tie(u(i)))),
            Rank::SizeTotal => idx.sort_by_cached_key(|&i| (Reverse((z[u(i)], t(i))), tie(u(i)))),
            Rank::Jitter(seed) => {
                idx.sort_by_cached_key(|&i| (Reverse((t(i) as u128 * jitter_factor(seed, i), w[u(i)])), tie(u(i))))
            }
            Rank::SizeJitter(seed) => {
                idx.sort_by_cached_key(|&i| (Reverse((z[u(i)] as u128 * jitter_factor(seed, i), t(i))), tie(u(i))))
            }
            Rank::Random(seed) => {
                idx.sort_by_key(|&i| tie(u(i)));
                crate::rng::Rng::new(seed ^ idx.len() as u64).shuffle(idx);
            }
        }
    }

    /// Searches for a placement with makespan ≤ `capacity`. The search recurses once per placed
    /// buffer: a problem of more than [`INLINE_SEARCH_MAX_BUFFERS`] is searched on a thread of
    /// its own with a [`SEARCH_STACK_BYTES`] stack, whatever thread calls: rayon's and std's get
    /// 2 MiB, which an improvement slab of a few thousand buffers overflows.
    pub fn decide(&self, capacity: u64, strategy: Strategy, limits: Limits) -> (Decision, SearchStats) {
        if self.len() > INLINE_SEARCH_MAX_BUFFERS {
            let ran = std::thread::scope(|scope| {
                let spawned = std::thread::Builder::new().stack_size(SEARCH_STACK_BYTES).spawn_scoped(scope, || self.decide_with_memo(capacity, strategy, limits, None));
                spawned.map(|h| h.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)))
            });
            // No thread to be had: search here, as deep as this stack allows.
            if let Ok((d, st, _)) = ran {
                return (d, st);
            }
        }
        let (d, st, _) = self.decide_with_memo(capacity, strategy, limits, None);
        (d, st)
    }

    /// [`Problem::decide`], reusing the failure memo of an earlier run with the same capacity
    /// and strategy: a run restarted with a larger node budget then skips, at their roots, the
    /// subtrees the earlier run exhausted. Returns the memo for the next run.
    fn decide_with_memo(&self, capacity: u64, strategy: Strategy, limits: Limits, memo: Option<FailureMemo>) -> (Decision, SearchStats, FailureMemo) {
        let mut s = Search::new(self, capacity, strategy, limits, memo);
        let d = if s.root_infeasible() {
            Decision::Infeasible
        } else {
            let all: Vec<u32> = (0..self.len() as u32).collect();
            if s.solve(&all, 0, u32::MAX, true) {
                Decision::Found(s.offsets.clone())
            } else if s.stopped {
                Decision::Unknown
            } else {
                Decision::Infeasible
            }
        };
        (d, SearchStats { nodes: s.nodes }, s.memo)
    }
}

/// The factor in [0.5, 1.5) that the jittered rankings ([`Rank::Jitter`], [`Rank::SizeJitter`])
/// scale buffer `i`'s key by under `seed`, in exact integers: (2^31 + 32 random bits) / 2^32.
/// The order stays close to the unjittered one, as a greedy needs, while every seed explores
/// another tree. Narrower factors (±5%) rarely changed the search; wider ones behaved like
/// these on the minimalloc suite.
fn jitter_factor(seed: u64, i: u32) -> u128 {
    (1u128 << 31) + (crate::rng::mix(seed, i as u64) >> 32) as u128
}

/// What [`Search::scan`] learns about a node.
struct Scan {
    /// The node's failure-memo key.
    key: (u64, u64),
    /// Dominance bound: the next placement's offset must be below the lowest top of an unplaced
    /// buffer at its viable offset (else that buffer could have gone first).
    gap_bound: u64,
    /// The section range the members span.
    lo: u32,
    hi: u32,
    /// The highest lowest offset any member can still take.
    max_low: u64,
}

/// One undoable change of the search state.
#[derive(Clone, Copy)]
enum Undo {
    /// Buffer's viable offset was this.
    Viable(u32, u64),
    /// Buffer was unplaced (restores its sections' remaining sizes and cuts).
    Placed(u32),
    /// Buffer's exclusion offset was this.
    Excluded(u32, u64),
}

/// From this round of [`portfolio_job`] on (fixed orders at `16n` nodes each), restarts get
/// [`RESTART_WEIGHT`] times the nodes of deepening. The fixed orders that suit an instance
/// succeed within the first rounds (minimalloc F and K at `2n` and `8n`); past them a success
/// is far likelier from a restart (minimalloc D at its max load: none of the fixed orders in
/// 10^9 nodes, a restart about once in 10^6 restart nodes, whatever the restart length between
/// `10n` and `80n`), while deepening is kept for the proofs of infeasibility.
const RESTART_HEAVY_FROM: u32 = 3;
/// See [`RESTART_HEAVY_FROM`].
const RESTART_WEIGHT: u64 = 3;

/// One job of [`decide_portfolio`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Job {
    /// Strategy `which` of the portfolio, continued (same tree, its failure memo) with a
    /// larger node budget.
    Deepen { which: usize, budget: u64 },
    /// A fresh tree: section branching over a jittered ranking ([`restart_rank`]).
    Restart { seed: u64, budget: u64 },
}

/// The ranking of restart `seed`: sizes jittered ([`Rank::SizeJitter`]) on even seeds, section
/// totals ([`Rank::Jitter`]) on odd ones. Which succeeds more often depends on the instance,
/// by factors of several either way, so each gets half. Per restart node at the max load
/// (sections branched, `10n`–`80n` nodes each): minimalloc D found a packing once in
/// 0.6–1.4·10^6 nodes with sizes against 1.6–3.2·10^6 with totals, and generated random and
/// nn instances of 400 and 1,500 buffers as often or more with sizes (random, 1,500 buffers:
/// 56 of 60 restarts of `20n` nodes against 31); generated tight instances of 800 buffers
/// succeed 5–25 times as often with totals, and minimalloc E took 0.31 s with sizes alone,
/// 0.03 s with both.
fn restart_rank(seed: u64) -> Rank {
    if seed % 2 == 0 {
        Rank::SizeJitter(seed)
    } else {
        Rank::Jitter(seed)
    }
}

/// The `k`-th job of a portfolio of `strategies` on `n` buffers. Round `r` runs every strategy
/// with a budget of `2n · 2^r` nodes, each followed by as many restarts of `10n` nodes as make
/// up the same number of nodes (three times as many from round [`RESTART_HEAVY_FROM`] on), so
/// deepening and restarting share the search half and half in the first rounds, and a quarter
/// to three quarters after them.
fn portfolio_job(k: usize, strategies: usize, n: usize) -> Job {
    let base = 2 * n.max(1) as u64;
    let restart = 5 * base;
    let (mut k, mut restarts_before) = (k as u64, 0u64);
    for round in 0..=40u32 {
        let budget = base.saturating_mul(1 << round);
        let weight = if round >= RESTART_HEAVY_FROM { RESTART_WEIGHT } else { 1 };
        let per = budget.saturating_mul(weight).div_ceil(restart);
        let block = strategies as u64 * (1 + per);
        if k < block || round == 40 {
            let (which, q) = (k / (1 + per), k % (1 + per));
            if q == 0 {
                return Job::Deepen { which: which.min(strategies as u64 - 1) as usize, budget };
            }
            return Job::Restart { seed: restarts_before + which * per + q - 1, budget: restart };
        }
        k -= block;
        restarts_before += strategies as u64 * per;
    }
    unreachable!("round 40 takes every job")
}

/// Searches with restarts on `threads` threads, in jobs ([`portfolio_job`]) of two kinds:
/// *deepening* runs each strategy again with a doubled node budget, resuming from its failure
/// memo, and *restarts* run short searches on fresh trees, each ranked by another seed of
/// [`restart_rank`] with section branching. Search trees are heavy-tailed: one long run can
/// spend millions of nodes under an early mistake that many short runs over perturbed orders
/// avoid (minimalloc D at its max load: no strategy of the portfolio found a packing in 10^9
/// nodes; one restart in a few hundred finds one within 2,000). Deepening is what proves
/// infeasibility and is kept for the instances the fixed orders suit.
///
/// Jobs are taken in index order; the verdict of the lowest-indexed job that finds a
/// placement or proves there is none wins, and jobs above it are cancelled. Each job is
/// deterministic, so the result does not depend on thread timing, only on the limits (a
/// deadline that cuts a run short can change it).
pub fn decide_portfolio(problem: &Problem, capacity: u64, strategies: &[Strategy], threads: usize, limits: Limits) -> (Decision, SearchStats) {
    let (d, st, _) = decide_portfolio_from(problem, capacity, strategies, threads, limits, 0);
    (d, st)
}

/// [`decide_portfolio`] from job `first` on, so that a search stopped by its limits can go on
/// where it stopped: also returns the first job it did not finish (every job below it ran to
/// its end without a verdict, unless one was reached).
fn decide_portfolio_from(problem: &Problem, capacity: u64, strategies: &[Strategy], threads: usize, limits: Limits, first: usize) -> (Decision, SearchStats, usize) {
    use std::sync::atomic::{AtomicU64, AtomicUsize};
    use std::sync::{Arc, Mutex};
    if strategies.is_empty() {
        return (Decision::Unknown, SearchStats::default(), first);
    }
    let next = AtomicUsize::new(first);
    // The lowest job cut short by the limits (its verdict unknown because of them).
    let cut = AtomicUsize::new(usize::MAX);
    let nodes = AtomicU64::new(0);
    let best: Mutex<Option<(usize, Decision)>> = Mutex::new(None);
    let running: Mutex<Vec<(usize, Arc<AtomicBool>)>> = Mutex::new(Vec::new());
    // One failure memo per strategy, handed from each run to the next of the same strategy.
    let memos: Vec<Mutex<Option<FailureMemo>>> = strategies.iter().map(|_| Mutex::new(None)).collect();
    let stopped_outside = || {
        limits.deadline.is_some_and(|t| Instant::now() >= t) || [limits.cancel, limits.moot].into_iter().flatten().any(|c| c.load(Ordering::Relaxed))
    };
    std::thread::scope(|scope| {
        for _ in 0..threads.max(1) {
            // The search recurses once per placed buffer: thousands of frames deep on a
            // component at the size limit, past the default 2 MiB a thread gets.
            let spawned = std::thread::Builder::new().stack_size(SEARCH_STACK_BYTES).spawn_scoped(scope, || loop {
                let job = next.fetch_add(1, Ordering::Relaxed);
                let winner = best.lock().expect("portfolio lock").as_ref().map(|(w, _)| *w);
                if winner.is_some_and(|w| job > w) {
                    return;
                }
                if stopped_outside() {
                    // Taken but not run: where a resumed search begins.
                    cut.fetch_min(job, Ordering::Relaxed);
                    return;
                }
                let left = limits.nodes.saturating_sub(nodes.load(Ordering::Relaxed));
                if left == 0 {
                    return;
                }
                let flag = Arc::new(AtomicBool::new(false));
                running.lock().expect("portfolio lock").push((job, flag.clone()));
                let job_limits = |budget: u64| Limits { nodes: budget.min(left), also_cancel: Some(&flag), ..limits };
                let (d, st) = match portfolio_job(job, strategies.len(), problem.len()) {
                    Job::Deepen { which, budget } => {
                        let memo = memos[which].lock().expect("portfolio lock").take();
                        let (d, st, memo) = problem.decide_with_memo(capacity, strategies[which], job_limits(budget), memo);
                        *memos[which].lock().expect("portfolio lock") = Some(memo);
                        (d, st)
                    }
                    Job::Restart { seed, budget } => {
                        let strategy = Strategy { rank: restart_rank(seed), rerank_groups: false, by_section: true };
                        // This thread has the search's stack already.
                        let (d, st, _) = problem.decide_with_memo(capacity, strategy, job_limits(budget), None);
                        (d, st)
                    }
                };
                nodes.fetch_add(st.nodes, Ordering::Relaxed);
                if d == Decision::Unknown && stopped_outside() {
                    cut.fetch_min(job, Ordering::Relaxed);
                }
                running.lock().expect("portfolio lock").retain(|(j, _)| *j != job);
                if d != Decision::Unknown {
                    let mut b = best.lock().expect("portfolio lock");
                    if b.as_ref().is_none_or(|(w, _)| job < *w) {
                        *b = Some((job, d));
                        for (j, f) in running.lock().expect("portfolio lock").iter() {
                            if *j > job {
                                f.store(true, Ordering::Relaxed);
                            }
                        }
                    }
                }
            });
            spawned.expect("cannot start an exact-search thread");
        }
    });
    let stats = SearchStats { nodes: nodes.into_inner() };
    let resume = cut.into_inner().min(next.into_inner());
    match best.into_inner().expect("portfolio lock") {
        Some((_, d)) => (d, stats, resume),
        None => (Decision::Unknown, stats, resume),
    }
}

/// What [`minimize`] found.
#[derive(Clone, Debug)]
pub struct Minimized {
    /// The best placement the search found, if it found one below the incumbent.
    pub offsets: Option<Vec<u64>>,
    /// Its makespan (or the incumbent's when nothing better was found).
    pub makespan: u64,
    /// A proven lower bound on the optimal makespan: every capacity below it was refuted.
    pub lower_bound: u64,
    /// Nodes searched in all.
    pub nodes: u64,
}

/// Anytime minimisation by decision searches. Starts from an incumbent makespan and a known
/// lower bound, and searches two fronts:
/// - the *bound*: the lower bound itself (usually the max load, often optimal, and the hardest
///   capacity to settle);
/// - the *descent*: the capacities above it, halving the gap: a found placement lowers the
///   upper end, a refuted capacity raises the lower end, and a search cut off by its time share
///   (half of the time left) moves the next capacity halfway up.
///
/// The bound goes first, alone on every thread, for [`BOUND_ALONE`] of the time (most
/// instances settle there in a fraction of a second). If it is still open, it goes on from the
/// job where it stopped on half the threads while the descent runs on the other half until the
/// deadline: a placement at the bound ends the descent; a placement at the bound or a
/// refutation from the descent (which refutes the bound too) ends the bound's search. When the
/// bound took 80% of the time first and the descent had the rest, minimalloc J at 3 s ended
/// 4.97% above its max load, where capacities 3% above it take well under a second to place;
/// now 4.35%, and minimalloc D at 30 s still reaches its max load (in 8.7 s instead of 7.8 s).
/// On one thread the bound has 80% of the time, then the descent. Stops when the gap closes
/// (the result is proven optimal), the deadline passes or `cancel` is set.
///
/// With a `capacity` (a user's memory size, as minimalloc takes it) any makespan up to it is
/// enough: only that capacity is decided, with all the time, and a refutation proves that
/// nothing fits (the returned lower bound is then above it).
#[allow(clippy::too_many_arguments)]
pub fn minimize(
    problem: &Problem,
    incumbent: u64,
    lower_bound: u64,
    capacity: Option<u64>,
    strategies: &[Strategy],
    threads: usize,
    deadline: Instant,
    cancel: Option<&AtomicBool>,
) -> Minimized {
    minimize_with(problem, incumbent, lower_bound, capacity, strategies, threads, deadline, cancel, BOUND_ALONE)
}

/// [`minimize`] with the bound alone for `bound_alone` of the time (tests force both fronts).
#[allow(clippy::too_many_arguments)]
fn minimize_with(
    problem: &Problem,
    incumbent: u64,
    lower_bound: u64,
    capacity: Option<u64>,
    strategies: &[Strategy],
    threads: usize,
    deadline: Instant,
    cancel: Option<&AtomicBool>,
    bound_alone: f64,
) -> Minimized {
    let mut out = Minimized { offsets: None, makespan: incumbent, lower_bound: lower_bound.max(problem.max_load()), nodes: 0 };
    if let Some(c) = capacity {
        if out.makespan > c && out.lower_bound <= c {
            let (d, st) = decide_portfolio(problem, c, strategies, threads, Limits { deadline: Some(deadline), cancel, ..Limits::default() });
            out.nodes = st.nodes;
            match d {
                Decision::Found(off) => {
                    out.makespan = problem.makespan_of(&off);
                    out.offsets = Some(off);
                }
                Decision::Infeasible => out.lower_bound = c + 1,
                Decision::Unknown => {}
            }
        }
        return out;
    }
    if out.lower_bound >= out.makespan {
        return out;
    }
    let bound = out.lower_bound;
    if threads < 2 || bound + 1 >= out.makespan {
        // One front: the bound first, with 80% of the time (its settling is the likeliest
        // optimum; all of it where it is the only capacity left), then the descent.
        let share = if bound + 1 >= out.makespan { 1.0 } else { 0.8 };
        let first = decide_portfolio(problem, bound, strategies, threads, Limits { deadline: Some(share_of(deadline, share)), cancel, ..Limits::default() });
        out.absorb(problem, bound, first);
        descend(problem, &mut out, strategies, threads, deadline, cancel, None, None);
        return out;
    }
    // The bound alone first, on every thread: most instances settle there quickly.
    let (d, st, resume) = decide_portfolio_from(problem, bound, strategies, threads, Limits { deadline: Some(share_of(deadline, bound_alone)), cancel, ..Limits::default() }, 0);
    let unsettled = d == Decision::Unknown;
    out.absorb(problem, bound, (d, st));
    if !unsettled {
        // Optimal, or refuted: the descent has every thread.
        descend(problem, &mut out, strategies, threads, deadline, cancel, None, None);
        return out;
    }
    let (bound_done, descent_done) = (AtomicBool::new(false), AtomicBool::new(false));
    let on_bound = threads - threads / 2;
    let first = std::thread::scope(|scope| {
        let at_bound = scope.spawn(|| {
            let limits = Limits { deadline: Some(deadline), cancel, moot: Some(&descent_done), ..Limits::default() };
            let (d, st, _) = decide_portfolio_from(problem, bound, strategies, on_bound, limits, resume);
            // A placement at the bound is optimal: the descent stops. A refutation leaves the
            // descent going (it already works above the bound).
            if matches!(d, Decision::Found(_)) {
                bound_done.store(true, Ordering::Relaxed);
            }
            (d, st)
        });
        // The descent works above the bound: the bound's own front settles it.
        let mut above = Minimized { offsets: None, makespan: out.makespan, lower_bound: bound + 1, nodes: 0 };
        // A refutation above the bound refutes it too (the descent says so at once), and a
        // placement at the bound settles it; a gap closed above it leaves the bound's search
        // going.
        descend(problem, &mut above, strategies, threads / 2, deadline, cancel, Some(&bound_done), Some(&descent_done));
        let refuted = above.lower_bound > bound + 1;
        if above.makespan <= bound {
            descent_done.store(true, Ordering::Relaxed);
        }
        out.nodes += above.nodes;
        if above.offsets.is_some() {
            out.offsets = above.offsets;
            out.makespan = above.makespan;
        }
        if refuted {
            out.lower_bound = above.lower_bound;
        }
        at_bound.join().expect("the bound's search")
    });
    out.absorb(problem, bound, first);
    out
}

/// Share of [`minimize`]'s time the lower bound is searched alone, on every thread, before the
/// descent starts beside it.
const BOUND_ALONE: f64 = 0.2;

/// The instant `share` of the way from now to `deadline`.
fn share_of(deadline: Instant, share: f64) -> Instant {
    let now = Instant::now();
    now + deadline.saturating_duration_since(now).mul_f64(share)
}

impl Minimized {
    /// Takes the verdict of a decision search at capacity `cap`.
    fn absorb(&mut self, problem: &Problem, cap: u64, (d, st): (Decision, SearchStats)) {
        self.nodes += st.nodes;
        match d {
            Decision::Found(off) => {
                let m = problem.makespan_of(&off);
                if m < self.makespan {
                    self.makespan = m;
                    self.offsets = Some(off);
                }
            }
            Decision::Infeasible => self.lower_bound = self.lower_bound.max(cap + 1),
            Decision::Unknown => {}
        }
    }
}

/// The descent of [`minimize`]: capacities between `out.lower_bound` and `out.makespan`,
/// halving the gap (see there), until it closes, the deadline, `cancel` or `moot`. Sets
/// `refuted` as soon as it refutes a capacity.
#[allow(clippy::too_many_arguments)]
fn descend(
    problem: &Problem,
    out: &mut Minimized,
    strategies: &[Strategy],
    threads: usize,
    deadline: Instant,
    cancel: Option<&AtomicBool>,
    moot: Option<&AtomicBool>,
    refuted: Option<&AtomicBool>,
) {
    let mut cap = out.lower_bound + (out.makespan.saturating_sub(out.lower_bound)) / 2;
    while out.lower_bound < out.makespan {
        if Instant::now() >= deadline || [cancel, moot].into_iter().flatten().any(|c| c.load(Ordering::Relaxed)) {
            break;
        }
        let share = if cap + 1 >= out.makespan { 1.0 } else { 0.5 };
        let limits = Limits { deadline: Some(share_of(deadline, share)), cancel, moot, ..Limits::default() };
        let (d, st) = decide_portfolio(problem, cap, strategies, threads, limits);
        let (found, refutes) = (matches!(d, Decision::Found(_)), d == Decision::Infeasible);
        out.absorb(problem, cap, (d, st));
        if found {
            // A placement below the lower bound handed in (the whole instance's, above this
            // component's optimum) ends the search like one at it.
            cap = out.lower_bound + out.makespan.saturating_sub(out.lower_bound) / 2;
        } else if refutes {
            if let Some(r) = refuted {
                r.store(true, Ordering::Relaxed);
            }
            cap = out.lower_bound + (out.makespan.saturating_sub(1).saturating_sub(out.lower_bound)) / 2;
        } else if share == 1.0 {
            break;
        } else {
            cap += (out.makespan - 1 - cap).div_ceil(2);
        }
    }
}

/// Subproblems already proven to fail. What remains to be solved at a node depends only on the
/// unplaced buffers, their viable offsets, and the last placement's offset and rank; the same
/// state is often reached again through another order of the same placements (buffers stacked
/// in a different order under the same skyline), and then need not be searched twice. A
/// direct-mapped table of 128-bit state hashes: a lossy cache, so it bounds memory, and a
/// false match needs a 128-bit collision.
struct FailureMemo {
    salt: Vec<(u64, u64)>,
    table: Vec<(u64, u64)>,
}

impl FailureMemo {
    /// Slots of a search without a small node budget (4 MiB).
    const SLOTS: usize = 1 << 18;

    /// A memo for a search of at most `nodes` nodes: a short run records at most one state a
    /// node, so a table a few times that size does (a fresh 4 MiB table for each of thousands
    /// of short restarts cost a third of their time in page faults).
    fn new(n: usize, nodes: u64) -> Self {
        let slots = Self::slots(nodes);
        let mut rng = crate::rng::Rng::new(0x5eed_f00d);
        FailureMemo {
            salt: (0..n).map(|_| (rng.next_u64(), rng.next_u64())).collect(),
            table: vec![(0, 0); slots],
        }
    }

    fn slots(nodes: u64) -> usize {
        if nodes >= (Self::SLOTS / 4) as u64 {
            Self::SLOTS
        } else {
            (4 * nodes as usize).next_power_of_two().max(1024)
        }
    }

    /// Enlarges the table for a run of `nodes` nodes, keeping what it holds.
    fn grow(&mut self, nodes: u64) {
        let slots = Self::slots(nodes);
        if slots > self.table.len() {
            let old = std::mem::replace(&mut self.table, vec![(0, 0); slots]);
            for key in old.into_iter().filter(|k| k.1 != 0) {
                self.table[key.0 as usize & (slots - 1)] = key;
            }
        }
    }

    fn mix(x: u64) -> u64 {
        let x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        let x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        x ^ (x >> 31)
    }

    /// The start of a node's key: the last placement's offset and rank.
    fn seed(&self, p: u64, last_rank: u32) -> (u64, u64) {
        (Self::mix(p ^ 0x1234_5678), Self::mix((last_rank as u64) ^ (p << 7)))
    }

    /// The term unplaced buffer `u`, with viable offset `v`, adds to a node's key. A buffer
    /// ruled out at the node's offset (`excluded`) is a different state from one still allowed
    /// there.
    #[inline]
    fn term(&self, u: usize, v: u64, excluded: bool) -> (u64, u64) {
        let (s1, s2) = self.salt[u];
        let v = v ^ (excluded as u64) << 63;
        (Self::mix(s1 ^ v), Self::mix(s2 ^ v.rotate_left(29)))
    }

    /// Every buffer's term at `viable`.
    fn terms(&self, viable: &[u64]) -> Vec<(u64, u64)> {
        viable.iter().enumerate().map(|(u, &v)| self.term(u, v, false)).collect()
    }

    fn failed(&self, key: (u64, u64)) -> bool {
        let key = (key.0, key.1 | 1);
        self.table[key.0 as usize & (self.table.len() - 1)] == key
    }

    fn record(&mut self, key: (u64, u64)) {
        // The low bit set keeps a key apart from the table's empty slots.
        let key = (key.0, key.1 | 1);
        let slot = key.0 as usize & (self.table.len() - 1);
        self.table[slot] = key;
    }
}

/// Whether a buffer of rank `rank` may follow a placement of rank `last_rank` at the same
/// offset (`u32::MAX`: no placement at that offset yet).
#[inline]
fn follows(rank: u32, last_rank: u32) -> bool {
    last_rank == u32::MAX || rank > last_rank
}

/// The lowest offset a buffer with viable offset `v` can still take after a placement at `p`:
/// `v`, or above `p` when it can no longer go at `p` (`v` below it, or not `allowed_at_p`).
#[inline]
fn lowest_at(v: u64, p: u64, allowed_at_p: bool) -> u64 {
    if v > p || (v == p && allowed_at_p) {
        v
    } else {
        p + 1
    }
}

/// Mutable search state, undone on backtrack through one trail.
struct Search<'p, 'l> {
    p: &'p Problem,
    capacity: u64,
    rank: Vec<u32>,
    limits: Limits<'l>,
    /// Viable offset of each buffer (meaningful while unplaced).
    viable: Vec<u64>,
    /// Total size of unplaced buffers in each section.
    rem: Vec<u64>,
    /// Unplaced buffers spanning the boundary between section `s` and `s + 1`; where it drops
    /// to zero the unplaced buffers fall apart into independent groups.
    cuts: Vec<u32>,
    placed: Vec<bool>,
    trail: Vec<Undo>,
    offsets: Vec<u64>,
    nodes: u64,
    stopped: bool,
    /// For each buffer, the interchangeable buffer (same sections, size, alignment and floor:
    /// it conflicts with exactly the same buffers and may take the same offsets) ranked just
    /// before it, which must be placed first; swapping such buffers changes nothing, so one
    /// order of each group is explored.
    twin: Vec<u32>,
    /// Scratch: per-section lowest offset an unplaced buffer can still take (the debug oracle's).
    #[cfg(debug_assertions)]
    low: Vec<u64>,
    /// Subproblems proven to fail (see [`FailureMemo`]).
    memo: FailureMemo,
    /// Each buffer's failure-memo term at its current viable offset ([`FailureMemo::term`]):
    /// hashing every member at every node was a seventh of the search's work.
    term: Vec<(u64, u64)>,
    /// The ranking in use (groups are ranked afresh with it).
    kind: Rank,
    /// Whether independent groups restart the canonical order with fresh ranks (see
    /// [`Strategy`]).
    rerank_groups: bool,
    /// Whether to branch by section (see [`Strategy`]).
    by_section: bool,
    /// In section branching: the offset at which a buffer was ruled out (`u64::MAX`: none).
    excluded: Vec<u64>,
    /// Scratch: per-section count of candidates.
    count: Vec<u32>,
    /// Per section, the unplaced buffer covering it that had the lowest offset at the last
    /// section inference there (`u32::MAX`: none yet); a cache, not part of the search state.
    witness: Vec<u32>,
    /// The section where section inference last failed (`u32::MAX`: none yet): most nodes fail
    /// there, and it is asked before the member pass (a cache, not part of the search state).
    hot: u32,
    /// Sections `[lo, hi)` of the independent group being solved (all of them outside groups):
    /// the unplaced buffers covering a section in it are the group's own.
    span: (u32, u32),
    /// Reusable member and candidate lists, one per depth.
    member_pool: Vec<Vec<u32>>,
    cand_pool: Vec<Vec<(u64, u32, u32)>>,
}

impl<'p, 'l> Search<'p, 'l> {
    /// A search at the root, with the failure memo of an earlier run of the same capacity and
    /// strategy when there is one (grown to this run's budget).
    fn new(p: &'p Problem, capacity: u64, strategy: Strategy, limits: Limits<'l>, memo: Option<FailureMemo>) -> Self {
        let n = p.len();
        let viable: Vec<u64> = (0..n).map(|i| align_up(p.floor[i], p.align[i]).unwrap_or(u64::MAX)).collect();
        let memo = match memo {
            Some(mut m) => {
                m.grow(limits.nodes);
                m
            }
            None => FailureMemo::new(n, limits.nodes),
        };
        let term = memo.terms(&viable);
        let rem = p.section_load.clone();
        let sections = rem.len();
        let mut cuts = vec![0u32; sections];
        for i in 0..n {
            for s in p.first[i]..p.last[i].saturating_sub(1) {
                cuts[s as usize] += 1;
            }
        }
        let rank_kind = strategy.rank;
        let rank = p.ranks(rank_kind);
        let mut by_shape: Vec<u32> = (0..n as u32).collect();
        // The floor is part of the shape: forcing a rank order on buffers with different
        // floors can hide every solution.
        let shape = |i: u32| {
            let i = i as usize;
            (p.first[i], p.last[i], p.size[i], p.align[i], p.floor[i])
        };
        by_shape.sort_unstable_by_key(|&i| (shape(i), rank[i as usize]));
        let mut twin = vec![u32::MAX; n];
        for w in by_shape.windows(2) {
            if shape(w[0]) == shape(w[1]) {
                twin[w[1] as usize] = w[0];
            }
        }
        Search {
            p,
            capacity,
            rank,
            twin,
            limits,
            viable,
            rem,
            cuts,
            placed: vec![false; n],
            trail: Vec::new(),
            offsets: vec![0; n],
            nodes: 0,
            stopped: false,
            #[cfg(debug_assertions)]
            low: vec![u64::MAX; sections],
            member_pool: Vec::new(),
            cand_pool: Vec::new(),
            term,
            memo,
            kind: rank_kind,
            rerank_groups: strategy.rerank_groups,
            by_section: strategy.by_section,
            excluded: vec![u64::MAX; n],
            count: vec![0; sections],
            witness: vec![u32::MAX; sections],
            hot: u32::MAX,
            span: (0, sections as u32),
        }
    }

    fn root_infeasible(&self) -> bool {
        self.p.max_load() > self.capacity
            || (0..self.p.len()).any(|i| self.viable[i].saturating_add(self.p.size[i]) > self.capacity)
    }

    fn out_of_budget(&mut self) -> bool {
        if self.nodes >= self.limits.nodes {
            return true;
        }
        // Nodes cost O(n): on large components 1024 of them can take a second.
        if self.nodes % 64 == 1 {
            for c in [self.limits.cancel, self.limits.also_cancel, self.limits.moot].into_iter().flatten() {
                if c.load(Ordering::Relaxed) {
                    return true;
                }
            }
            if let Some(d) = self.limits.deadline {
                if Instant::now() >= d {
                    return true;
                }
            }
        }
        false
    }

    /// Splits `members` into groups that share no section (independent subproblems).
    fn groups(&self, members: &[u32]) -> Vec<Vec<u32>> {
        let mut by_first: Vec<u32> = members.to_vec();
        by_first.sort_unstable_by_key(|&u| self.p.first[u as usize]);
        let mut out: Vec<Vec<u32>> = Vec::new();
        let mut reach = 0u32;
        for u in by_first {
            let (f, l) = (self.p.first[u as usize], self.p.last[u as usize]);
            match out.last_mut() {
                Some(g) if f < reach => {
                    g.push(u);
                    reach = reach.max(l);
                }
                _ => {
                    out.push(vec![u]);
                    reach = l;
                }
            }
        }
        out
    }

    /// Ranks the buffers of an independent group afresh, by the section totals of what is
    /// still unplaced; returns their old ranks.
    fn rerank(&mut self, group: &[u32]) -> Vec<u32> {
        let saved: Vec<u32> = group.iter().map(|&u| self.rank[u as usize]).collect();
        let mut idx = group.to_vec();
        let (p, rem, rank) = (self.p, &self.rem, &self.rank);
        let total = |i: usize| (p.first[i]..p.last[i]).map(|s| rem[s as usize]).max().unwrap_or(0);
        p.order(self.kind, &mut idx, total, |i| rank[i]);
        for (k, &u) in idx.iter().enumerate() {
            self.rank[u as usize] = k as u32;
        }
        saved
    }

    /// Whether no unplaced buffer conflicts with `u`.
    fn hatless(&self, u: usize) -> bool {
        self.p.conflicts(u).iter().all(|&c| self.placed[c as usize])
    }

    /// Whether `u` may follow a placement of rank `last_rank` at the same offset.
    #[inline]
    fn after(&self, u: usize, last_rank: u32) -> bool {
        follows(self.rank[u], last_rank)
    }

    /// Lowest offset `u` can still take when the last placement was at `p` with `last_rank`:
    /// its viable offset, or above `p` when it can no longer be placed at `p` (its viable
    /// offset is below `p`, or it ranks before the last placement).
    #[inline]
    fn lowest(&self, u: usize, p: u64, last_rank: u32) -> u64 {
        lowest_at(self.viable[u], p, self.after(u, last_rank) && self.excluded[u] != p)
    }

    /// One pass over `members` at a node whose last placement was at `p` with `last_rank`: the
    /// per-buffer checks, what section inference needs and the failure-memo key, fused because
    /// the search spends most of its time in these loops (separate passes read the same arrays
    /// three times). `None` when some buffer can no longer fit.
    fn scan(&self, members: &[u32], p: u64, last_rank: u32) -> Option<Scan> {
        let cap = self.capacity;
        let mut sc = Scan { key: self.memo.seed(p, last_rank), gap_bound: u64::MAX, lo: u32::MAX, hi: 0, max_low: 0 };
        // Every array cut to one length: a single bounds check per member covers them all.
        let n = self.p.len();
        let (viable, size, excluded, rank) = (&self.viable[..n], &self.p.size[..n], &self.excluded[..n], &self.rank[..n]);
        let (first, last, term) = (&self.p.first[..n], &self.p.last[..n], &self.term[..n]);
        for &u in members {
            let u = u as usize;
            if u >= n {
                unreachable!("member {u} out of range");
            }
            let (v, size) = (viable[u], size[u]);
            let excluded = excluded[u] == p;
            let low = lowest_at(v, p, follows(rank[u], last_rank) && !excluded);
            let top = v + size;
            if low + size > cap || top <= p {
                return None;
            }
            sc.gap_bound = sc.gap_bound.min(top);
            sc.max_low = sc.max_low.max(low);
            sc.lo = sc.lo.min(first[u]);
            sc.hi = sc.hi.max(last[u]);
            // Terms of buffers at their viable offset are kept up to date by `place` and `undo`.
            let t = if excluded { self.memo.term(u, v, true) } else { term[u] };
            sc.key = (sc.key.0.wrapping_add(t.0), sc.key.1.wrapping_add(t.1));
        }
        Some(sc)
    }

    /// Section inference over the sections `[sc.lo, sc.hi)` of a node's members (see
    /// [`Search::scan`]): in each section the unplaced buffers covering it are pairwise
    /// conflicting, so they stack above the lowest offset any of them can still take:
    /// `low + rem ≤ C`.
    ///
    /// Only sections where even the highest such offset among the members could break the bound
    /// are examined, each through its own buffer list: spreading every member's offset over its
    /// sections was half of the search's time. The unplaced buffers covering a section spanned
    /// by the members are members: the members are a connected group of the unplaced buffers
    /// (or all of them), and buffers sharing a section conflict.
    fn sections_fit(&mut self, sc: &Scan, p: u64, last_rank: u32) -> bool {
        let mut ok = true;
        let (lo, hi) = (sc.lo as usize, sc.hi as usize);
        for (s, &rem) in (lo..hi).zip(&self.rem[lo..hi]) {
            if rem == 0 || sc.max_low.saturating_add(rem) <= self.capacity {
                continue;
            }
            // Any unplaced buffer covering the section bounds its lowest offset from above: the
            // one that was lowest at the last scan usually still passes, and spares the scan.
            let w = self.witness[s];
            if w != u32::MAX && !self.placed[w as usize] && self.lowest(w as usize, p, last_rank).saturating_add(rem) <= self.capacity {
                continue;
            }
            let mut low = (u64::MAX, u32::MAX);
            for &u in self.p.covering(s) {
                if !self.placed[u as usize] {
                    low = low.min((self.lowest(u as usize, p, last_rank), u));
                }
            }
            self.witness[s] = low.1;
            if low.1 != u32::MAX && low.0.saturating_add(rem) > self.capacity {
                self.hot = s as u32;
                ok = false;
                break;
            }
        }
        ok
    }

    /// Whether section inference fails in section `s` alone: its unplaced buffers cannot all
    /// stack above the lowest offset any of them can still take.
    fn section_fails(&self, s: usize, p: u64, last_rank: u32) -> bool {
        let rem = self.rem[s];
        if rem == 0 {
            return false;
        }
        let mut any = false;
        for &u in self.p.covering(s) {
            if !self.placed[u as usize] {
                if self.lowest(u as usize, p, last_rank).saturating_add(rem) <= self.capacity {
                    return false;
                }
                any = true;
            }
        }
        any
    }

    /// The plain form of [`Search::sections_fit`] (every member's lowest offset spread over its
    /// sections), kept as the oracle of debug builds.
    #[cfg(debug_assertions)]
    fn sections_fit_by_spreading(&mut self, members: &[u32], p: u64, last_rank: u32) -> bool {
        let (mut lo, mut hi) = (u32::MAX, 0u32);
        for &u in members {
            let u = u as usize;
            let v = self.lowest(u, p, last_rank);
            let (first, last) = (self.p.first[u], self.p.last[u]);
            for m in &mut self.low[first as usize..last as usize] {
                *m = (*m).min(v);
            }
            lo = lo.min(first);
            hi = hi.max(last);
        }
        let mut ok = true;
        for s in lo as usize..hi as usize {
            let m = std::mem::replace(&mut self.low[s], u64::MAX);
            ok &= m == u64::MAX || m + self.rem[s] <= self.capacity;
        }
        ok
    }

    /// The checks of a node: the member pass ([`Search::scan`]), then, unless the failure memo
    /// knows the node, section inference. `None` when it can be pruned. Otherwise `cand` receives,
    /// sorted by (offset, rank), every member that may be placed next at its viable offset below
    /// the dominance bound ([`Scan::gap_bound`]).
    fn check(&mut self, members: &[u32], p: u64, last_rank: u32, cand: &mut Vec<(u64, u32, u32)>) -> Option<Scan> {
        // Three nodes in four fail section inference, most of them where the last one failed:
        // that section is asked first, before the member pass, when it lies in the group being
        // solved (then its unplaced buffers are members). Same verdicts: a failing section fails
        // the node either way, and a pruned node records nothing.
        if (self.span.0..self.span.1).contains(&self.hot) && self.section_fails(self.hot as usize, p, last_rank) {
            #[cfg(debug_assertions)]
            assert!(!self.sections_fit_by_spreading(members, p, last_rank), "hot section shortcut");
            return None;
        }
        let sc = self.scan(members, p, last_rank)?;
        if self.memo.failed(sc.key) {
            return None;
        }
        let ok = self.sections_fit(&sc, p, last_rank);
        #[cfg(debug_assertions)]
        assert_eq!(ok, self.sections_fit_by_spreading(members, p, last_rank), "section inference shortcut");
        if !ok {
            return None;
        }
        cand.clear();
        let n = self.p.len();
        let (viable, twin, excluded, rank) = (&self.viable[..n], &self.twin[..n], &self.excluded[..n], &self.rank[..n]);
        for &u in members {
            let u = u as usize;
            if u >= n {
                unreachable!("member {u} out of range");
            }
            let (v, twin) = (viable[u], twin[u]);
            if v >= p
                && v < sc.gap_bound
                && (v > p || (follows(rank[u], last_rank) && excluded[u] != p))
                && (twin == u32::MAX || self.placed[twin as usize])
            {
                cand.push((v, rank[u], u as u32));
            }
        }
        cand.sort_unstable();
        Some(sc)
    }

    /// Places every buffer of `members` (all unplaced), continuing a canonical sequence whose
    /// last placement was at offset `last_off` with rank `last_rank` (`u32::MAX`: none yet; a
    /// buffer placed at that same offset must rank after it). `may_split` says the last
    /// placement cut a boundary, so `members` may have fallen apart into independent groups.
    /// True when they all fit; on failure the state is as it was.
    fn solve(&mut self, members: &[u32], last_off: u64, last_rank: u32, may_split: bool) -> bool {
        if members.is_empty() {
            return true;
        }
        self.nodes += 1;
        if self.out_of_budget() {
            self.stopped = true;
            return false;
        }
        // Independent groups are solved one after the other: a failing group fails the node
        // without retrying the others' alternatives.
        if may_split && members.len() > 1 {
            let groups = self.groups(members);
            if groups.len() > 1 {
                let mark = self.trail.len();
                let outer = self.span;
                for g in &groups {
                    let lo = g.iter().map(|&u| self.p.first[u as usize]).min().unwrap_or(0);
                    let hi = g.iter().map(|&u| self.p.last[u as usize]).max().unwrap_or(0);
                    self.span = (lo, hi);
                    let ok = if self.rerank_groups {
                        let saved = self.rerank(g);
                        let ok = self.solve(g, 0, u32::MAX, false);
                        for (&u, &r) in g.iter().zip(&saved) {
                            self.rank[u as usize] = r;
                        }
                        ok
                    } else {
                        self.solve(g, last_off, last_rank, false)
                    };
                    if !ok {
                        self.span = outer;
                        self.undo(mark);
                        return false;
                    }
                }
                self.span = outer;
                return true;
            }
        }
        let p = last_off;
        let depth = self.p.len() - members.len();
        if self.cand_pool.len() <= depth {
            self.cand_pool.resize_with(depth + 1, Vec::new);
            self.member_pool.resize_with(depth + 1, Vec::new);
        }
        let mut cand = std::mem::take(&mut self.cand_pool[depth]);
        let Some(sc) = self.check(members, p, last_rank, &mut cand) else {
            self.cand_pool[depth] = cand;
            return false;
        };
        if self.by_section {
            // Section branching restarts the canonical order at every placement, so its nodes
            // come with no last rank, and `cand` holds exactly the candidates it branches on.
            debug_assert_eq!(last_rank, u32::MAX);
            let found = self.branch_on_section(members, &cand);
            self.cand_pool[depth] = cand;
            if !found && !self.stopped {
                self.memo.record(sc.key);
            }
            return found;
        }
        let mut rest = std::mem::take(&mut self.member_pool[depth]);
        let mut found = false;
        for &(v, r, u) in &cand {
            let mark = self.trail.len();
            let split = self.place(u as usize, v);
            rest.clear();
            rest.extend(members.iter().copied().filter(|&x| x != u));
            if self.solve(&rest, v, r, split) {
                found = true;
                break;
            }
            self.undo(mark);
            // A buffer with no unplaced conflict can only ever go at its viable offset, and
            // nothing else depends on it: if that failed, every other choice here (which would
            // leave it behind the canonical order) fails too.
            if self.stopped || self.hatless(u as usize) {
                break;
            }
        }
        self.cand_pool[depth] = cand;
        self.member_pool[depth] = rest;
        if !found && !self.stopped {
            self.memo.record(sc.key);
        }
        found
    }

    /// Section branching below a node that passed its checks: the next placements are at the
    /// lowest candidate offset `q`. Among the sections that a candidate at `q` could fill, the
    /// one with the fewest such candidates is decided: each candidate covering it is tried at
    /// `q`, and finally the section is left empty at `q` (its candidates ruled out there). A
    /// hatless candidate is placed without alternatives.
    fn branch_on_section(&mut self, members: &[u32], cand: &[(u64, u32, u32)]) -> bool {
        // `cand` is sorted by (offset, rank): its head is the candidates at the lowest offset,
        // in rank order.
        let Some(&(q, _, _)) = cand.first() else { return false };
        let at_q = &cand[..cand.partition_point(|c| c.0 == q)];
        if let Some(&(_, _, u)) = at_q.iter().find(|c| self.hatless(c.2 as usize)) {
            return self.try_place(members, u, q);
        }
        for &(_, _, u) in at_q {
            for s in self.p.first[u as usize]..self.p.last[u as usize] {
                self.count[s as usize] += 1;
            }
        }
        let mut best = (u32::MAX, u32::MAX);
        for &(_, _, u) in at_q {
            for s in self.p.first[u as usize]..self.p.last[u as usize] {
                let c = self.count[s as usize];
                if c > 0 {
                    best = best.min((c, s));
                    self.count[s as usize] = 0;
                }
            }
        }
        let section = best.1;
        let covers = |p: &Problem, u: u32| p.first[u as usize] <= section && section < p.last[u as usize];
        for &(_, _, u) in at_q {
            if !covers(self.p, u) {
                continue;
            }
            if self.try_place(members, u, q) {
                return true;
            }
            if self.stopped {
                return false;
            }
        }
        // Leave the section empty at `q`: nothing covering it may be placed there.
        let mark = self.trail.len();
        for &(_, _, u) in at_q {
            if covers(self.p, u) {
                self.trail.push(Undo::Excluded(u, self.excluded[u as usize]));
                self.excluded[u as usize] = q;
            }
        }
        if self.solve(members, q, u32::MAX, false) {
            return true;
        }
        self.undo(mark);
        false
    }

    /// Places `u` at `off` and solves the rest; on failure the state is restored.
    fn try_place(&mut self, members: &[u32], u: u32, off: u64) -> bool {
        let mark = self.trail.len();
        let split = self.place(u as usize, off);
        // The list of the node's depth is free: section branching does not use it.
        let depth = self.p.len() - members.len();
        let mut rest = std::mem::take(&mut self.member_pool[depth]);
        rest.clear();
        rest.extend(members.iter().copied().filter(|&x| x != u));
        let found = self.solve(&rest, off, u32::MAX, split);
        self.member_pool[depth] = rest;
        if !found {
            self.undo(mark);
        }
        found
    }

    /// Test support: follows `order` (a placement sequence) through the node checks and says
    /// where the search would have cut it off.
    #[cfg(test)]
    fn replay(&mut self, order: &[u32], offsets: &[u64]) -> Result<(), String> {
        let mut members: Vec<u32> = (0..self.p.len() as u32).collect();
        let (mut p, mut last_rank) = (0u64, u32::MAX);
        for (k, &u) in order.iter().enumerate() {
            let mut cand = Vec::new();
            let Some(sc) = self.check(&members, p, last_rank, &mut cand) else {
                return Err(format!("step {k}: node pruned before placing buffer {u} at {}", offsets[u as usize]));
            };
            let g = sc.gap_bound;
            if !cand.iter().any(|c| c.2 == u && c.0 < g) {
                return Err(format!(
                    "step {k}: buffer {u} (viable {}, wanted {}) not a candidate (p {p}, bound {g})",
                    self.viable[u as usize], offsets[u as usize]
                ));
            }
            if self.viable[u as usize] != offsets[u as usize] {
                return Err(format!("step {k}: buffer {u} viable {} but placed at {}", self.viable[u as usize], offsets[u as usize]));
            }
            self.place(u as usize, offsets[u as usize]);
            p = offsets[u as usize];
            last_rank = self.rank[u as usize];
            members.retain(|&x| x != u);
        }
        Ok(())
    }

    fn place(&mut self, u: usize, off: u64) -> bool {
        self.offsets[u] = off;
        let size = self.p.size[u];
        let top = off + size;
        self.placed[u] = true;
        self.trail.push(Undo::Placed(u as u32));
        let (first, last) = (self.p.first[u] as usize, self.p.last[u] as usize);
        for s in first..last {
            self.rem[s] -= size;
        }
        let mut split = false;
        for s in first..last - 1 {
            self.cuts[s] -= 1;
            split |= self.cuts[s] == 0;
        }
        for &c in self.p.conflicts(u) {
            let c = c as usize;
            if self.placed[c] {
                continue;
            }
            let a = align_up(top, self.p.align[c]).unwrap_or(u64::MAX);
            if self.viable[c] < a {
                self.trail.push(Undo::Viable(c as u32, self.viable[c]));
                self.viable[c] = a;
                self.term[c] = self.memo.term(c, a, false);
            }
        }
        split
    }

    fn undo(&mut self, mark: usize) {
        while self.trail.len() > mark {
            match self.trail.pop().expect("trail entry") {
                Undo::Viable(c, old) => {
                    self.viable[c as usize] = old;
                    self.term[c as usize] = self.memo.term(c as usize, old, false);
                }
                Undo::Excluded(u, old) => self.excluded[u as usize] = old,
                Undo::Placed(u) => {
                    let u = u as usize;
                    self.placed[u] = false;
                    let (first, last) = (self.p.first[u] as usize, self.p.last[u] as usize);
                    for s in first..last {
                        self.rem[s] += self.p.size[u];
                    }
                    for s in first..last - 1 {
                        self.cuts[s] += 1;
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;
    use heaplab_sweep::{max_load, validate};

    /// Oracle: the optimum is the best first-fit over all orders (first-fit in the offset order
    /// of an optimal placement reproduces it or better), computed quadratically.
    fn brute_optimum(bs: &[Buffer]) -> u64 {
        fn first_fit(bs: &[Buffer], order: &[usize]) -> u64 {
            let mut off = vec![0u64; bs.len()];
            let mut placed: Vec<usize> = Vec::new();
            let mut makespan = 0;
            for &i in order {
                let mut occ: Vec<(u64, u64)> =
                    placed.iter().filter(|&&j| bs[j].conflicts(&bs[i])).map(|&j| (off[j], off[j] + bs[j].size)).collect();
                occ.sort_unstable();
                let mut y = align_up(0, bs[i].align_log2).unwrap();
                for (s, e) in occ {
                    if s >= y + bs[i].size {
                        break;
                    }
                    if e > y {
                        y = align_up(e, bs[i].align_log2).unwrap();
                    }
                }
                off[i] = y;
                makespan = makespan.max(y + bs[i].size);
                placed.push(i);
            }
            makespan
        }
        fn permute(bs: &[Buffer], k: usize, order: &mut Vec<usize>, best: &mut u64) {
            if k == order.len() {
                *best = (*best).min(first_fit(bs, order));
                return;
            }
            for j in k..order.len() {
                order.swap(k, j);
                permute(bs, k + 1, order, best);
                order.swap(k, j);
            }
        }
        let mut order: Vec<usize> = (0..bs.len()).collect();
        let mut best = u64::MAX;
        permute(bs, 0, &mut order, &mut best);
        if bs.is_empty() {
            0
        } else {
            best
        }
    }

    /// The portfolio's fixed strategies and its restarts' jittered rankings (seeded by `seed`),
    /// with and without section branching.
    fn all_strategies(seed: u64) -> Vec<Strategy> {
        let jittered = [true, false].map(|by_section| Strategy { rank: Rank::Jitter(seed), rerank_groups: false, by_section });
        Strategy::portfolio().into_iter().chain(jittered).collect()
    }

    fn random_instance(rng: &mut Rng, n: usize, round: u64) -> Vec<Buffer> {
        (0..n)
            .map(|i| {
                let lo = rng.below(10);
                let len = 1 + rng.below(if round.is_multiple_of(3) { 10 } else { 4 });
                let size = 1 + rng.below(if round.is_multiple_of(4) { 3 } else { 12 });
                let mut b = Buffer::new(i as u64, lo, lo + len, size);
                if round.is_multiple_of(5) {
                    b.align_log2 = rng.below(3) as u8;
                }
                b
            })
            .collect()
    }

    #[test]
    fn decision_matches_brute_force_optimum() {
        let mut rng = Rng::new(42);
        for round in 0..300u64 {
            let n = 1 + (round % 7) as usize;
            let bs = random_instance(&mut rng, n, round);
            let opt = brute_optimum(&bs);
            let p = Problem::new(&bs, u64::MAX).unwrap();
            for strategy in all_strategies(round) {
                let rank = strategy;
                match p.decide(opt, strategy, Limits::default()).0 {
                    Decision::Found(off) => {
                        let v = validate(&bs, &off);
                        assert!(v.is_valid(), "{}", v.describe(&bs, &off));
                        assert!(v.makespan <= opt, "round {round}: {} > {opt} for {bs:?}", v.makespan);
                    }
                    other => panic!("round {round} {rank:?}: expected a placement at {opt}, got {other:?} for {bs:?}"),
                }
                if opt > 0 {
                    assert_eq!(
                        p.decide(opt - 1, strategy, Limits::default()).0,
                        Decision::Infeasible,
                        "round {round} {rank:?}: {bs:?} has optimum {opt}"
                    );
                }
            }
            assert!(opt >= max_load(&bs));
        }
    }

    /// First-fit in offset order until nothing moves: a placement in which no buffer can move
    /// down, which the search's completeness argument says it must be able to follow.
    fn settle(bs: &[Buffer], mut off: Vec<u64>) -> Vec<u64> {
        loop {
            let mut order: Vec<u32> = (0..bs.len() as u32).collect();
            order.sort_by_key(|&i| (off[i as usize], i));
            let next = crate::heuristics::first_fit_in_order(bs, &order);
            if next == off {
                return off;
            }
            off = next;
        }
    }

    #[test]
    fn settled_placements_pass_every_pruning_rule() {
        let mut rng = Rng::new(11);
        for round in 0..400u64 {
            let n = 2 + (round % 90) as usize;
            let bs: Vec<Buffer> = if round % 2 == 0 {
                random_instance(&mut rng, n, round)
            } else {
                let (inst, _) = heaplab_gen::tight_with_offsets(n, round);
                inst.buffers.into_iter().filter(|_| rng.below(5) != 0).collect()
            };
            let order = crate::heuristics::order(&bs, crate::heuristics::Order::Random(round));
            let off = settle(&bs, crate::heuristics::first_fit_in_order(&bs, &order));
            let cap = bs.iter().zip(&off).map(|(b, o)| b.size + o).max().unwrap_or(0);
            let p = Problem::new(&bs, u64::MAX).unwrap();
            for strategy in all_strategies(round) {
                let rank = strategy;
                let mut s = Search::new(&p, cap, strategy, Limits::default(), None);
                // Buffers with the same sections, size and alignment are interchangeable; the
                // search places them in rank order, so give the lower-ranked one the lower offset.
                let mut off = off.clone();
                let mut by_shape: Vec<usize> = (0..bs.len()).collect();
                let shape = |i: usize| (p.first[i], p.last[i], bs[i].size, bs[i].align_log2);
                by_shape.sort_by_key(|&i| (shape(i), s.rank[i]));
                for group in by_shape.chunk_by(|&a, &b| shape(a) == shape(b)) {
                    let mut offs: Vec<u64> = group.iter().map(|&i| off[i]).collect();
                    offs.sort_unstable();
                    for (&i, o) in group.iter().zip(offs) {
                        off[i] = o;
                    }
                }
                let mut seq: Vec<u32> = (0..bs.len() as u32).collect();
                seq.sort_by_key(|&i| (off[i as usize], s.rank[i as usize]));
                if let Err(e) = s.replay(&seq, &off) {
                    panic!("round {round} {rank:?}: {e}\n{bs:?}\n{off:?}");
                }
            }
        }
    }

    /// Oracle: whether the buffers fit under `cap` with each at or above its floor, by trying
    /// every offset of every buffer.
    fn brute_fits(bs: &[Buffer], floors: &[u64], cap: u64) -> bool {
        fn go(bs: &[Buffer], floors: &[u64], cap: u64, k: usize, off: &mut Vec<u64>) -> bool {
            if k == bs.len() {
                return true;
            }
            for o in floors[k]..cap.saturating_sub(bs[k].size) + 1 {
                if o + bs[k].size > cap || o % (1 << bs[k].align_log2) != 0 {
                    continue;
                }
                let clear = (0..k).all(|j| !bs[j].conflicts(&bs[k]) || off[j] + bs[j].size <= o || o + bs[k].size <= off[j]);
                if clear {
                    off.push(o);
                    if go(bs, floors, cap, k + 1, off) {
                        return true;
                    }
                    off.pop();
                }
            }
            false
        }
        go(bs, floors, cap, 0, &mut Vec::new())
    }

    #[test]
    fn floors_are_decided_like_brute_force() {
        // Two buffers of one shape are interchangeable only with equal floors: forcing the
        // first-ranked one under the other once refuted this instance.
        let twins = [Buffer::new(0, 0, 10, 5), Buffer::new(1, 0, 10, 5)];
        let p = Problem::new(&twins, u64::MAX).unwrap().with_floors(vec![5, 0]);
        for strategy in Strategy::portfolio() {
            assert!(matches!(p.decide(10, strategy, Limits::default()).0, Decision::Found(_)), "{strategy:?}");
        }
        let mut rng = Rng::new(7);
        for round in 0..300u64 {
            let n = 2 + (round % 5) as usize;
            let mut bs = random_instance(&mut rng, n, round);
            let cap = brute_optimum(&bs) + rng.below(4);
            // Often two buffers of one shape, so that they get different floors.
            if n > 2 && round % 2 == 0 {
                bs[1] = Buffer { id: 1, ..bs[0] };
            }
            let floors: Vec<u64> = (0..n).map(|_| if rng.below(3) == 0 { rng.below(cap / 2 + 1) } else { 0 }).collect();
            let fits = brute_fits(&bs, &floors, cap);
            let p = Problem::new(&bs, u64::MAX).unwrap().with_floors(floors.clone());
            for strategy in all_strategies(round) {
                match p.decide(cap, strategy, Limits::default()).0 {
                    Decision::Found(off) => {
                        assert!(fits, "round {round} {strategy:?}: found a placement brute force says is impossible");
                        let v = validate(&bs, &off);
                        assert!(v.is_valid() && v.makespan <= cap, "{}", v.describe(&bs, &off));
                        for i in 0..n {
                            assert!(off[i] >= floors[i], "round {round}: buffer {i} below its floor");
                        }
                    }
                    Decision::Infeasible => assert!(!fits, "round {round} {strategy:?}: refuted, but {bs:?} fits {cap} with floors {floors:?}"),
                    Decision::Unknown => panic!("no limits set"),
                }
            }
        }
    }

    #[test]
    fn portfolio_jobs_share_nodes_between_deepening_and_restarts() {
        for (strategies, n) in [(6, 213), (1, 1), (3, 40), (6, 5000)] {
            let base = 2 * n as u64;
            let (mut deepen, mut restart) = (0u64, 0u64);
            let mut next_budget = vec![base; strategies];
            let mut seeds = Vec::new();
            for k in 0..20_000 {
                match portfolio_job(k, strategies, n) {
                    Job::Deepen { which, budget } => {
                        // Every strategy deepens in turn, its budget doubling each round.
                        assert_eq!(budget, next_budget[which], "job {k}");
                        next_budget[which] *= 2;
                        // Restarts have caught up with deepening before it doubles again.
                        assert!(restart + 5 * base > deepen, "job {k}: {restart} restart nodes behind {deepen}");
                        deepen += budget;
                    }
                    Job::Restart { seed, budget } => {
                        assert_eq!(budget, 5 * base);
                        seeds.push(seed);
                        restart += budget;
                    }
                }
            }
            // Fresh seeds in order: every restart explores another tree.
            assert!(seeds.iter().enumerate().all(|(i, &s)| s == i as u64), "seeds {:?}", &seeds[..seeds.len().min(20)]);
            assert!(deepen > 0 && restart >= deepen / 2, "{strategies} strategies, n {n}: {deepen} vs {restart}");
            // Past the first rounds restarts get the larger share.
            if deepen > (base * 2 * strategies as u64) << RESTART_HEAVY_FROM {
                assert!(4 * restart >= 5 * deepen, "{strategies} strategies, n {n}: {deepen} deepening vs {restart} restart nodes");
            }
        }
    }

    #[test]
    fn jittered_rankings_are_permutations_that_differ_by_seed() {
        let (inst, _) = heaplab_gen::tight_with_offsets(200, 5);
        let p = Problem::new(&inst.buffers, u64::MAX).unwrap();
        let kinds: [fn(u64) -> Rank; 2] = [Rank::Jitter, Rank::SizeJitter];
        let firsts = kinds.map(|kind| {
            let a = p.ranks(kind(1));
            let mut sorted = a.clone();
            sorted.sort_unstable();
            assert!(sorted.iter().enumerate().all(|(i, &r)| r == i as u32));
            assert_eq!(a, p.ranks(kind(1)));
            assert_ne!(a, p.ranks(kind(2)));
            a
        });
        assert_ne!(firsts[0], firsts[1]);
        // Consecutive restarts alternate the two.
        assert_ne!(std::mem::discriminant(&restart_rank(4)), std::mem::discriminant(&restart_rank(5)));
    }

    #[test]
    fn portfolio_verdict_does_not_depend_on_threads() {
        let mut rng = Rng::new(3);
        for round in 0..40u64 {
            let (inst, _) = heaplab_gen::tight_with_offsets(20 + (round % 40) as usize, round);
            let bs: Vec<Buffer> = inst.buffers.into_iter().filter(|_| rng.below(6) != 0).collect();
            let p = Problem::new(&bs, u64::MAX).unwrap();
            let cap = p.max_load();
            let one = decide_portfolio(&p, cap, &Strategy::portfolio(), 1, Limits::default()).0;
            let two = decide_portfolio(&p, cap, &Strategy::portfolio(), 2, Limits::default()).0;
            assert_eq!(one, two, "round {round}");
            if let Decision::Found(off) = one {
                let v = validate(&bs, &off);
                assert!(v.is_valid() && v.makespan <= cap);
            }
        }
    }

    #[test]
    fn minimize_reaches_the_brute_force_optimum_and_proves_it() {
        let mut rng = Rng::new(99);
        for round in 0..120u64 {
            let n = 1 + (round % 7) as usize;
            let bs = random_instance(&mut rng, n, round);
            let opt = brute_optimum(&bs);
            let p = Problem::new(&bs, u64::MAX).unwrap();
            let first = crate::heuristics::Heuristic::STANDARD[0].run(&bs);
            let inc = bs.iter().zip(&first).map(|(b, o)| b.size + o).max().unwrap_or(0);
            let far = Instant::now() + std::time::Duration::from_secs(60);
            // One thread: the bound, then the descent; two and three: the bound alone, then
            // (where it is still open) both fronts at once, which no time alone forces.
            for (threads, alone) in [(1, BOUND_ALONE), (2, BOUND_ALONE), (2, 0.0), (3, 0.0)] {
                let m = minimize_with(&p, inc, 0, None, &Strategy::portfolio(), threads, far, None, alone);
                assert_eq!(m.makespan, opt, "round {round}, {threads} threads: {bs:?}");
                assert_eq!(m.lower_bound, opt, "round {round}, {threads} threads: optimality proven");
                if let Some(off) = &m.offsets {
                    let v = validate(&bs, off);
                    assert!(v.is_valid() && v.makespan == m.makespan);
                } else {
                    assert_eq!(inc, opt);
                }
            }
        }
    }

    #[test]
    fn minimize_under_a_lower_bound_above_the_optimum_stops_at_the_first_placement() {
        // The driver hands every component the whole instance's lower bound; a component below
        // it must come back with a valid placement within it, not an overflow.
        let mut rng = Rng::new(7);
        for round in 0..60u64 {
            let bs = random_instance(&mut rng, 2 + (round % 6) as usize, round);
            let opt = brute_optimum(&bs);
            let p = Problem::new(&bs, u64::MAX).unwrap();
            let far = Instant::now() + std::time::Duration::from_secs(60);
            let lb = opt + 1 + round;
            for (threads, alone) in [(1, BOUND_ALONE), (2, BOUND_ALONE), (2, 0.0), (3, 0.0)] {
                let m = minimize_with(&p, u64::MAX / 2, lb, None, &Strategy::portfolio(), threads, far, None, alone);
                let off = m.offsets.expect("a placement within the lower bound");
                let v = validate(&bs, &off);
                assert!(v.is_valid() && v.makespan == m.makespan && m.makespan <= lb, "round {round}, {threads} threads");
            }
        }
    }

    #[test]
    fn a_capacity_is_decided_alone_against_the_brute_force_optimum() {
        let mut rng = Rng::new(41);
        let mut refuted = 0;
        for round in 0..120u64 {
            let n = 2 + (round % 6) as usize;
            let bs = random_instance(&mut rng, n, round);
            let opt = brute_optimum(&bs);
            let p = Problem::new(&bs, u64::MAX).unwrap();
            let first = crate::heuristics::Heuristic::STANDARD[0].run(&bs);
            let inc = bs.iter().zip(&first).map(|(b, o)| b.size + o).max().unwrap_or(0);
            let far = Instant::now() + std::time::Duration::from_secs(60);
            // At or above the optimum a placement fits (not necessarily the optimum); below, the
            // search proves that none does.
            for cap in [opt, opt + opt / 3] {
                let m = minimize(&p, inc, 0, Some(cap), &Strategy::portfolio(), 2, far, None);
                assert!(m.makespan <= cap, "round {round}: cap {cap}, got {}", m.makespan);
                assert!(m.lower_bound <= opt);
                if let Some(off) = &m.offsets {
                    let v = validate(&bs, off);
                    assert!(v.is_valid() && v.makespan == m.makespan);
                } else {
                    assert!(inc <= cap);
                }
            }
            if opt > p.max_load() {
                let m = minimize(&p, inc, 0, Some(opt - 1), &Strategy::portfolio(), 2, far, None);
                assert!(m.offsets.is_none() && m.lower_bound == opt, "round {round}: capacity {} refuted", opt - 1);
                refuted += 1;
            }
        }
        assert!(refuted >= 5, "only {refuted} instances above their max load: the refutation went untested");
    }

    #[test]
    fn limits_stop_the_search() {
        let mut rng = Rng::new(7);
        let bs = random_instance(&mut rng, 60, 1);
        let p = Problem::new(&bs, u64::MAX).unwrap();
        let (d, st) = p.decide(p.max_load(), Rank::TotalAreaWidth.into(), Limits { nodes: 10, ..Default::default() });
        assert!(st.nodes <= 11);
        assert!(matches!(d, Decision::Unknown | Decision::Found(_) | Decision::Infeasible));
        let cancel = AtomicBool::new(true);
        let (d, _) = p.decide(p.max_load() * 2, Rank::TotalAreaWidth.into(), Limits { cancel: Some(&cancel), ..Default::default() });
        assert_eq!(d, Decision::Unknown);
    }

    /// A search thousands of levels deep, asked for from a thread with a small stack (rayon's
    /// workers have 2 MiB): it runs on a stack of its own and finds the packing.
    #[test]
    fn a_deep_search_does_not_need_the_callers_stack() {
        // A chain: each buffer overlaps the next only, so the search places all 5,000 in turn.
        let n = 5_000u64;
        let bs: Vec<Buffer> = (0..n).map(|i| Buffer { id: i, lower: i, upper: i + 2, size: 1 + i % 3, requested: 0, align_log2: 0 }).collect();
        let p = Problem::new(&bs, u64::MAX).unwrap();
        let cap = p.max_load();
        let small = std::thread::Builder::new().stack_size(256 << 10).spawn(move || p.decide(cap, Rank::TotalAreaWidth.into(), Limits::default()).0).unwrap();
        match small.join().unwrap() {
            Decision::Found(offsets) => {
                let v = validate(&bs, &offsets);
                assert!(v.is_valid(), "{}", v.describe(&bs, &offsets));
                assert!(v.makespan <= cap, "{} > {cap}", v.makespan);
            }
            d => panic!("{d:?}"),
        }
    }
}
