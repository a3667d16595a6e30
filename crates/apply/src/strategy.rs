//! Layout strategies: each a function from a trace's blocks (and, for some, the access profile
//! brought onto them, [`Usage`]) to an offset per block, and [`build`], which runs one and
//! assembles the [`Layout`] (contexts, entries in ordinal order, region, alignment).
//!
//! `plan` is heaplab's DSA planner: blocks whose lifetimes do not intersect share memory, and
//! the region is the plan's makespan. The libstaticmalloc strategies (`simple`, `random`,
//! `size`, `usage-df`, `usage-grouped`, `friends-df`, `friends-grouped`, `one-per-line`; see
//! chapter 4 of `../shared/papers/002_…`) lay blocks out one after another in an order of their
//! own and, as there, never reuse memory: the region is the sum of the slots. `plan-affinity`
//! takes the plan and then moves blocks used together next to each other where the plan leaves
//! room ([`crate::affinity`]).
//!
//! Every block's offset honours its slot granule (16) and its alignment.

use crate::affinity::{self, AffinityReport};
use crate::profile::Usage;
use crate::source::{Source, SourceBlock};
use crate::{slot, Entry, Layout, LayoutContext, GRANULE};
use heaplab_access::Edge;
use heaplab_model::{align_up, Buffer};
use heaplab_rng::Rng;
use std::time::Duration;

/// The cache line `one-per-line` starts every block on.
pub const CACHE_LINE: u64 = 64;
/// Sequential layouts stop planning blocks past this end (they go to the fallback allocator):
/// a region must stay far inside the address space.
pub const MAX_REGION: u64 = 1 << 46;

/// A layout strategy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Strategy {
    /// heaplab's memory-optimal plan: region = makespan.
    Plan,
    /// The plan, then blocks used together moved next to each other without raising the
    /// makespan.
    PlanAffinity,
    /// Allocation order, one after another.
    Simple,
    /// A seeded shuffle, one after another.
    Random,
    /// Smallest first.
    Size,
    /// Depth-first along co-access edges, from the largest block.
    UsageDf,
    /// Each block's co-accessed successors together.
    UsageGrouped,
    /// Depth-first along friend (pointer) edges, from the largest block.
    FriendsDf,
    /// Each block's friends together.
    FriendsGrouped,
    /// Allocation order, each block on a cache line of its own.
    OnePerLine,
}

impl Strategy {
    /// Every strategy, in the order help texts list them.
    pub const ALL: [Strategy; 10] = [
        Strategy::Plan,
        Strategy::PlanAffinity,
        Strategy::Simple,
        Strategy::Random,
        Strategy::Size,
        Strategy::UsageDf,
        Strategy::UsageGrouped,
        Strategy::FriendsDf,
        Strategy::FriendsGrouped,
        Strategy::OnePerLine,
    ];

    /// The name users type and layouts record.
    pub fn name(self) -> &'static str {
        match self {
            Strategy::Plan => "plan",
            Strategy::PlanAffinity => "plan-affinity",
            Strategy::Simple => "simple",
            Strategy::Random => "random",
            Strategy::Size => "size",
            Strategy::UsageDf => "usage-df",
            Strategy::UsageGrouped => "usage-grouped",
            Strategy::FriendsDf => "friends-df",
            Strategy::FriendsGrouped => "friends-grouped",
            Strategy::OnePerLine => "one-per-line",
        }
    }

    /// The strategy of a name.
    pub fn parse(s: &str) -> Option<Strategy> {
        Strategy::ALL.into_iter().find(|k| k.name() == s)
    }

    /// Whether it needs an access profile.
    pub fn needs_profile(self) -> bool {
        matches!(self, Strategy::PlanAffinity | Strategy::UsageDf | Strategy::UsageGrouped | Strategy::FriendsDf | Strategy::FriendsGrouped)
    }

    /// Whether blocks share memory over time (the region is a makespan, not a sum).
    pub fn reuses_memory(self) -> bool {
        matches!(self, Strategy::Plan | Strategy::PlanAffinity)
    }
}

/// Knobs of the strategies.
#[derive(Clone, Copy, Debug)]
pub struct StrategyOptions {
    /// The planner's time budget (`plan`, `plan-affinity`).
    pub time_limit: Duration,
    /// Seed of `random` and of the planner's stochastic stages.
    pub seed: u64,
}

impl Default for StrategyOptions {
    fn default() -> Self {
        StrategyOptions { time_limit: Duration::from_secs(3), seed: 1 }
    }
}

/// What the planner said, for `plan` and `plan-affinity`.
#[derive(Clone, Debug, PartialEq)]
pub struct PlanReport {
    /// The plan's makespan.
    pub makespan: u64,
    /// Its proven lower bound.
    pub lower_bound: u64,
    /// Whether the makespan is proven optimal.
    pub optimal: bool,
    /// The algorithm that decided it.
    pub algorithm: String,
    /// Seconds planning took.
    pub seconds: f64,
}

/// A built layout and the figures around it.
#[derive(Clone, Debug)]
pub struct Built {
    /// The layout (valid: it passed [`crate::format::validate`]).
    pub layout: Layout,
    /// Max load of the blocks' slots: no layout that reuses memory can have a smaller region.
    pub max_load: u64,
    /// The planner's figures (`plan`, `plan-affinity`).
    pub plan: Option<PlanReport>,
    /// `plan-affinity`'s moves.
    pub affinity: Option<AffinityReport>,
    /// With a profile: the share of co-access weight between blocks at most a cache line
    /// apart in the layout.
    pub near_share: Option<f64>,
}

/// Why a strategy could not build a layout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StrategyError {
    /// The strategy needs an access profile and none was given.
    NeedsProfile(Strategy),
    /// The result broke a rule of valid layouts: a bug, never an output.
    Invalid(String),
}

impl std::fmt::Display for StrategyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StrategyError::NeedsProfile(s) => write!(f, "strategy {} needs an access profile", s.name()),
            StrategyError::Invalid(m) => write!(f, "the strategy built an invalid layout: {m}"),
        }
    }
}

impl std::error::Error for StrategyError {}

/// The alignment (log2) a block's slot needs: its call's, and at least the granule's.
pub fn slot_align_log2(b: &SourceBlock) -> u8 {
    b.align_log2.max(GRANULE.trailing_zeros() as u8)
}

/// The blocks as planner buffers over their slots, aligned to at least the granule.
pub fn slot_buffers(blocks: &[SourceBlock]) -> Vec<Buffer> {
    blocks
        .iter()
        .map(|b| Buffer { id: b.id, lower: b.lower, upper: b.upper, size: slot(b.size), requested: 0, align_log2: slot_align_log2(b) })
        .collect()
}

/// Lays blocks out one after another in `order`, each at the next offset its alignment (and
/// `line`, a power of two: every block starts on one) allows. Blocks that would end past
/// [`MAX_REGION`] stay unplanned.
pub fn sequential(blocks: &[SourceBlock], order: impl IntoIterator<Item = usize>, line: u64) -> Vec<Option<u64>> {
    let mut out = vec![None; blocks.len()];
    let mut cursor = 0u64;
    let line_log2 = line.max(1).trailing_zeros() as u8;
    for i in order {
        let b = &blocks[i];
        let at = align_up(cursor, slot_align_log2(b).max(line_log2)).filter(|&o| o.saturating_add(slot(b.size)) <= MAX_REGION);
        if let Some(o) = at {
            out[i] = Some(o);
            cursor = o + slot(b.size);
        }
    }
    out
}

/// `simple`: allocation order, as the logging run laid blocks out.
pub fn simple(blocks: &[SourceBlock]) -> Vec<Option<u64>> {
    sequential(blocks, 0..blocks.len(), 1)
}

/// `random`: a shuffle of the blocks (seeded), one after another: uninformed placement.
pub fn random(blocks: &[SourceBlock], seed: u64) -> Vec<Option<u64>> {
    let mut order: Vec<usize> = (0..blocks.len()).collect();
    Rng::new(seed).shuffle(&mut order);
    sequential(blocks, order, 1)
}

/// `size`: smallest first (allocation order among equal sizes): blocks of one size are likely
/// objects of one type, used together.
pub fn size(blocks: &[SourceBlock]) -> Vec<Option<u64>> {
    let mut order: Vec<usize> = (0..blocks.len()).collect();
    order.sort_by_key(|&i| (blocks[i].size, i));
    sequential(blocks, order, 1)
}

/// `one-per-line`: allocation order, every block starting a cache line ([`CACHE_LINE`]): no two
/// blocks share a line (no false sharing, no prefetching of neighbours either).
pub fn one_per_line(blocks: &[SourceBlock]) -> Vec<Option<u64>> {
    sequential(blocks, 0..blocks.len(), CACHE_LINE)
}

/// Out-edges per block, heaviest first (then by target), duplicates summed.
fn adjacency(n: usize, edges: &[Edge]) -> Vec<Vec<(u64, usize)>> {
    let mut adj: Vec<Vec<(u64, usize)>> = vec![Vec::new(); n];
    for e in edges {
        if (e.from as usize) < n && (e.to as usize) < n && e.from != e.to {
            adj[e.from as usize].push((e.weight, e.to as usize));
        }
    }
    for a in &mut adj {
        a.sort_unstable_by_key(|&(_, t)| t);
        a.dedup_by(|x, y| {
            let same = x.1 == y.1;
            if same {
                y.0 += x.0;
            }
            same
        });
        a.sort_unstable_by_key(|&(w, t)| (std::cmp::Reverse(w), t));
    }
    adj
}

/// `usage-df` / `friends-df`: a depth-first walk along `edges` (heaviest edge first) from the
/// largest block not yet laid out, laying blocks out in the order the walk first reaches them.
pub fn depth_first(blocks: &[SourceBlock], edges: &[Edge]) -> Vec<Option<u64>> {
    let n = blocks.len();
    let adj = adjacency(n, edges);
    let mut roots: Vec<usize> = (0..n).collect();
    roots.sort_by_key(|&i| (std::cmp::Reverse(blocks[i].size), i));
    let mut seen = vec![false; n];
    let mut order = Vec::with_capacity(n);
    let mut stack: Vec<(usize, usize)> = Vec::new();
    for r in roots {
        if seen[r] {
            continue;
        }
        seen[r] = true;
        order.push(r);
        stack.push((r, 0));
        while let Some(top) = stack.last_mut() {
            let (v, k) = *top;
            match adj[v].get(k) {
                Some(&(_, t)) => {
                    top.1 += 1;
                    if !seen[t] {
                        seen[t] = true;
                        order.push(t);
                        stack.push((t, 0));
                    }
                }
                None => {
                    stack.pop();
                }
            }
        }
    }
    sequential(blocks, order, 1)
}

/// `usage-grouped` / `friends-grouped`: in allocation order, each block that has out-edges has
/// its successors not yet laid out placed together (heaviest edge first), without the block
/// itself; the blocks left are laid out after, in allocation order.
pub fn grouped(blocks: &[SourceBlock], edges: &[Edge]) -> Vec<Option<u64>> {
    let n = blocks.len();
    let adj = adjacency(n, edges);
    let mut seen = vec![false; n];
    let mut order = Vec::with_capacity(n);
    for hub in &adj {
        for &(_, t) in hub {
            if !seen[t] {
                seen[t] = true;
                order.push(t);
            }
        }
    }
    order.extend((0..n).filter(|&i| !seen[i]));
    sequential(blocks, order, 1)
}

/// `plan`: heaplab's planner over the blocks' slots; every block planned.
pub fn plan(blocks: &[SourceBlock], opts: &StrategyOptions) -> (Vec<Option<u64>>, PlanReport) {
    let buffers = slot_buffers(blocks);
    let popts = heaplab_plan::PlanOptions { time_limit: opts.time_limit, seed: opts.seed, ..heaplab_plan::PlanOptions::default() };
    let out = heaplab_plan::plan(&buffers, &popts, None);
    let report = PlanReport { makespan: out.makespan, lower_bound: out.lower_bound, optimal: out.optimal, algorithm: out.algorithm.clone(), seconds: out.seconds };
    (out.offsets.into_iter().map(Some).collect(), report)
}

/// Puts per-block offsets into a layout: one context (key 0, entries by id) without contexts,
/// else one per context key (sorted), entries in allocation order within each.
pub fn assemble(strategy: &str, source: &Source, offsets: &[Option<u64>], accesses: Option<&[u64]>) -> Layout {
    let blocks = &source.blocks;
    let entry = |b: &SourceBlock| Entry {
        size: b.size,
        offset: offsets[b.id as usize],
        block: b.id,
        lower: b.lower,
        upper: b.upper,
        accesses: accesses.and_then(|a| a.get(b.id as usize).copied()).unwrap_or(0),
    };
    let contexts = if blocks.is_empty() {
        Vec::new()
    } else if source.stack_depth == 0 {
        vec![LayoutContext { key: 0, entries: blocks.iter().map(entry).collect() }]
    } else {
        let mut order: Vec<usize> = (0..blocks.len()).collect();
        order.sort_by_key(|&i| (blocks[i].context, i));
        let mut contexts: Vec<LayoutContext> = Vec::new();
        for i in order {
            let b = &blocks[i];
            match contexts.last_mut() {
                Some(c) if c.key == b.context => c.entries.push(entry(b)),
                _ => contexts.push(LayoutContext { key: b.context, entries: vec![entry(b)] }),
            }
        }
        contexts
    };
    let region = blocks.iter().filter_map(|b| offsets[b.id as usize].map(|o| o + slot(b.size))).max().unwrap_or(0);
    let align = blocks.iter().filter(|b| offsets[b.id as usize].is_some()).map(|b| 1u64 << slot_align_log2(b)).max().unwrap_or(1);
    Layout { strategy: strategy.to_string(), stack_depth: source.stack_depth, region, region_align: align.max(crate::format::MIN_REGION_ALIGN), contexts }
}

/// Runs `strategy` on `source` (with the profile brought onto it, when there is one) and
/// returns the validated layout.
pub fn build(strategy: Strategy, source: &Source, usage: Option<&Usage>, opts: &StrategyOptions) -> Result<Built, StrategyError> {
    let blocks = &source.blocks;
    let profile = usage.ok_or(StrategyError::NeedsProfile(strategy));
    let mut plan_report = None;
    let mut affinity_report = None;
    let offsets = match strategy {
        Strategy::Plan => {
            let (o, r) = plan(blocks, opts);
            plan_report = Some(r);
            o
        }
        Strategy::PlanAffinity => {
            let u = profile.clone()?;
            let (o, r) = plan(blocks, opts);
            plan_report = Some(r);
            let mut o: Vec<u64> = o.into_iter().map(|x| x.expect("the planner places every block")).collect();
            affinity_report = Some(affinity::improve(blocks, &mut o, &u.coaccess));
            o.into_iter().map(Some).collect()
        }
        Strategy::Simple => simple(blocks),
        Strategy::Random => random(blocks, opts.seed),
        Strategy::Size => size(blocks),
        Strategy::OnePerLine => one_per_line(blocks),
        Strategy::UsageDf => depth_first(blocks, &profile.clone()?.coaccess),
        Strategy::UsageGrouped => grouped(blocks, &profile.clone()?.coaccess),
        Strategy::FriendsDf => depth_first(blocks, &profile.clone()?.friends),
        Strategy::FriendsGrouped => grouped(blocks, &profile.clone()?.friends),
    };
    // The format keeps no alignment, so it is checked here, on the blocks.
    if let Some(b) = blocks.iter().find(|b| offsets[b.id as usize].is_some_and(|o| !o.is_multiple_of(1u64 << slot_align_log2(b)))) {
        return Err(StrategyError::Invalid(format!("block {} at offset {} breaks its alignment {}", b.id, offsets[b.id as usize].unwrap_or(0), 1u64 << slot_align_log2(b))));
    }
    let layout = assemble(strategy.name(), source, &offsets, usage.map(|u| u.accesses.as_slice()));
    crate::format::validate(&layout).map_err(StrategyError::Invalid)?;
    let near_share = usage.map(|u| affinity::near_share(blocks, &offsets, &u.coaccess));
    Ok(Built { layout, max_load: heaplab_sweep::max_load(&slot_buffers(blocks)), plan: plan_report, affinity: affinity_report, near_share })
}
