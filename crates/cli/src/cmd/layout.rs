//! `heaplab layout`: a trace (and an access profile for the strategies that need one) to a
//! `.hllayout` file through `heaplab_apply`'s strategies, with its summary (table or JSON) and
//! picture.

use crate::flag_ranges::{SEED, TIME_LIMIT};
use crate::outputs::check_outputs;
use crate::picture::{check_format, write_layout_plot};
use crate::Failure;
use clap::Args;
use heaplab_apply::profile::{usage, Usage};
use heaplab_apply::source::{self, SourceError};
use heaplab_apply::strategy::{build, Built, Strategy, StrategyError, StrategyOptions};
use heaplab_apply::{format, Layout};
use heaplab_model::units::{bytes, grouped, pct};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

pub const LAYOUT_HELP: &str = "\
Compute a layout: where in one reserved region each heap allocation a program makes goes, for
`heaplab run --layout` to serve the program's next run from it.

TRACE is a trace from `heaplab trace` (.hltrace; a run index .hlrun stands for its root process).
Its allocations are identified by their global ordinal and size, or with --contexts by their
call site's stable key (the trace must have been recorded with --stack-depth N), their ordinal
within it and their size. Lifetimes are on the trace's events clock.

Strategies (--strategy):
  plan             heaplab's memory-optimal plan: blocks whose lifetimes do not intersect share
                   memory; the region is the plan's makespan (--time-limit, --seed)
  plan-affinity    the plan, then blocks used together (co-access) moved next to each other
                   wherever the plan leaves room, never raising the makespan (needs --access)
  simple           allocation order, one block after another
  random           a seeded shuffle (--seed), one block after another
  size             smallest first
  one-per-line     allocation order, each block starting a 64-byte cache line of its own
  usage-df         depth-first along co-access edges from the largest block (needs --access)
  usage-grouped    each block's co-accessed successors together (needs --access)
  friends-df       depth-first along pointer (friend) edges (needs --access)
  friends-grouped  each block's friends together (needs --access)
The last eight are libstaticmalloc's and, as there, never reuse memory: their region is the sum
of all blocks.

--access takes a profile from `heaplab access` of the same program and input. Its run is a
different one (under valgrind), so its blocks are matched to the trace's by their sequence of
sizes, robust to a few allocations present in one run only; the summary says what share matched,
and only matched blocks lend their access counts and edges.

Every layout is validated (no two planned blocks live at the same time overlap) before it is
written; nothing is written otherwise.

Prints: entries, planned, contexts, region against the max load (the least any layout that reuses
memory needs), the planner's figures, the profile's matched share, and for plan-affinity the
share of co-access weight within a cache line before and after.

Examples:
  heaplab trace -o prog.hltrace -- ./prog small-input
  heaplab layout prog.hltrace --strategy plan -o prog.hllayout --plot layout.png
  heaplab access -o prof.hlaccess -- ./prog small-input
  heaplab layout prog.hltrace --access prof.hlaccess --strategy plan-affinity -o prog.hllayout --json";

/// Arguments of `heaplab layout`.
#[derive(Args)]
pub struct LayoutArgs {
    /// Trace of the program (.hltrace, or a run index .hlrun: its root process).
    trace: String,
    /// Access profile of the program (.hlaccess from `heaplab access`).
    #[arg(long, value_name = "PROFILE")]
    access: Option<String>,
    /// The strategy (see above).
    #[arg(long, value_name = "S", value_parser = strategy_names())]
    strategy: String,
    /// Identify allocations by call-site context (the trace needs call sites: --stack-depth).
    #[arg(long)]
    contexts: bool,
    /// Write the layout here (.hllayout).
    #[arg(short, long, value_name = "FILE")]
    output: String,
    /// Also draw the layout to this file (.png or .svg).
    #[arg(long, value_name = "FILE")]
    plot: Option<String>,
    #[arg(long, default_value_t = 3.0, value_name = "SECONDS", value_parser = TIME_LIMIT.parser(),
        help = TIME_LIMIT.help("The planner's budget in seconds (plan, plan-affinity)."))]
    time_limit: f64,
    #[arg(long, default_value_t = 1, value_parser = SEED.parser::<u64>(),
        help = SEED.help("Seed of random and of the planner's stochastic stages."))]
    seed: u64,
    /// Print the summary as JSON instead of a table.
    #[arg(long)]
    json: bool,
}

fn strategy_names() -> Vec<&'static str> {
    Strategy::ALL.iter().map(|s| s.name()).collect()
}

/// The trace-reading error in this command's words.
fn source_failure(e: SourceError) -> Failure {
    match e {
        SourceError::NoSites { file } => Failure::Input(format!(
            "{file}: --contexts needs call sites and this trace has none: trace with --stack-depth N (heaplab trace --stack-depth 4 -o TRACE -- PROGRAM)"
        )),
        e => Failure::of(e.class(), e.to_string()),
    }
}

/// `heaplab layout`.
pub fn layout(a: LayoutArgs) -> Result<(), Failure> {
    let t0 = Instant::now();
    let strategy = Strategy::parse(&a.strategy).expect("clap checked the strategy name");
    if strategy.needs_profile() && a.access.is_none() {
        return Err(Failure::Input(format!(
            "--strategy {} needs an access profile: pass --access PROFILE.hlaccess (from `heaplab access`)",
            strategy.name()
        )));
    }
    let outputs: Vec<&str> = std::iter::once(a.output.as_str()).chain(a.plot.as_deref()).collect();
    let inputs: Vec<&str> = std::iter::once(a.trace.as_str()).chain(a.access.as_deref()).collect();
    check_outputs(&outputs, &inputs)?;
    if let Some(p) = &a.plot {
        check_format(p)?;
    }
    let src = source::read(&a.trace, a.contexts).map_err(source_failure)?;
    let profile = match &a.access {
        Some(p) => {
            let profile = heaplab_access::read(p).map_err(|e| Failure::Input(e.to_string()))?;
            let sizes: Vec<u64> = src.blocks.iter().map(|b| b.size).collect();
            Some(usage(&sizes, &profile))
        }
        None => None,
    };
    if let (Some(u), Some(p)) = (&profile, &a.access) {
        if !src.blocks.is_empty() && u.aligned_share() < 0.9 {
            eprintln!(
                "heaplab: warning: {p}: only {:.1}% of the trace's blocks match a profile block; is it a profile of the same program and input?",
                u.aligned_share() * 100.0
            );
        }
    }
    let opts = StrategyOptions { time_limit: Duration::from_secs_f64(a.time_limit), seed: a.seed };
    let built = build(strategy, &src, profile.as_ref(), &opts).map_err(|e| match e {
        StrategyError::NeedsProfile(_) => Failure::Input(e.to_string()),
        StrategyError::Invalid(_) => Failure::Work(e.to_string()),
    })?;
    format::write(&a.output, &built.layout)?;
    if let Some(p) = &a.plot {
        write_layout_plot(p, &built.layout, &format!("{} ({})", a.output, strategy.name()))?;
    }
    let seconds = t0.elapsed().as_secs_f64();
    if a.json {
        let v = summary_json(&a, &built, profile.as_ref(), seconds);
        println!("{}", serde_json::to_string_pretty(&v).expect("JSON of plain values"));
    } else {
        print_summary(&a, &built, profile.as_ref(), seconds);
    }
    Ok(())
}

/// Entries, planned entries and the bytes they request.
pub fn counts(l: &Layout) -> (u64, u64, u64) {
    let entries = l.contexts.iter().flat_map(|c| c.entries.iter());
    let (mut n, mut planned, mut planned_bytes) = (0, 0, 0u64);
    for e in entries {
        n += 1;
        if e.offset.is_some() {
            planned += 1;
            planned_bytes = planned_bytes.saturating_add(e.size);
        }
    }
    (n, planned, planned_bytes)
}

fn summary_json(a: &LayoutArgs, b: &Built, u: Option<&Usage>, seconds: f64) -> Value {
    let l = &b.layout;
    let (n, planned, planned_bytes) = counts(l);
    json!({
        "trace": a.trace,
        "output": a.output,
        "strategy": l.strategy,
        "contexts": l.contexts.len(),
        "stack_depth": l.stack_depth,
        "entries": n,
        "planned": planned,
        "unplanned": n - planned,
        "planned_bytes": planned_bytes,
        "region_bytes": l.region,
        "region_align": l.region_align,
        "max_load_bytes": b.max_load,
        "region_over_max_load_pct": pct(l.region, b.max_load),
        "plan": b.plan.as_ref().map(|p| json!({
            "makespan": p.makespan, "lower_bound": p.lower_bound, "optimal": p.optimal, "algorithm": p.algorithm, "seconds": p.seconds,
        })),
        "profile": u.map(|u| json!({
            "file": a.access, "aligned_blocks": u.aligned, "trace_blocks": u.accesses.len(), "profile_blocks": u.profile_blocks,
            "aligned_share": u.aligned_share(), "coaccess_edges": u.coaccess.len(), "friend_edges": u.friends.len(),
        })),
        "coaccess_near_share": b.near_share,
        "affinity": b.affinity.as_ref().map(|r| json!({
            "pairs": r.pairs, "already_near": r.already_near, "moved": r.moved, "swapped": r.swapped,
            "near_share_before": r.near_before, "near_share_after": r.near_after,
            "makespan_before": r.makespan_before, "region_after": r.makespan_after, "budget_exhausted": r.budget_exhausted,
        })),
        "plot": a.plot,
        "seed": a.seed,
        "time_limit": a.time_limit,
        "seconds": seconds,
        "valid": true,
    })
}

fn print_summary(a: &LayoutArgs, b: &Built, u: Option<&Usage>, seconds: f64) {
    let l = &b.layout;
    let (n, planned, planned_bytes) = counts(l);
    let ctx = if l.stack_depth > 0 { format!("{} contexts of {} frames", grouped(l.contexts.len() as u64), l.stack_depth) } else { "no contexts".to_string() };
    println!("layout         {} (strategy {}, {ctx})", a.output, l.strategy);
    println!("entries        {} ({} planned, {} B requested; {} to the fallback)", grouped(n), grouped(planned), grouped(planned_bytes), grouped(n - planned));
    println!(
        "region         {} B ({})  max load {} B: {:+.3}%",
        grouped(l.region),
        bytes(l.region),
        grouped(b.max_load),
        pct(l.region, b.max_load)
    );
    if let Some(p) = &b.plan {
        let verdict = if p.optimal { "proven optimal".to_string() } else { format!("gap to lower bound {:.3}%", pct(p.makespan, p.lower_bound)) };
        println!("plan           makespan {} B, {verdict} ({}, {:.3} s)", grouped(p.makespan), p.algorithm, p.seconds);
    }
    if let Some(u) = u {
        println!(
            "profile        {}: {:.1}% of the trace's blocks matched ({} of {}; the profile has {}), {} co-access and {} friend edges between them",
            a.access.as_deref().unwrap_or_default(),
            u.aligned_share() * 100.0,
            grouped(u.aligned),
            grouped(u.accesses.len() as u64),
            grouped(u.profile_blocks),
            grouped(u.coaccess.len() as u64),
            grouped(u.friends.len() as u64)
        );
    }
    match (&b.affinity, b.near_share) {
        (Some(r), _) => println!(
            "affinity       co-access weight within a cache line {:.1}% → {:.1}% ({} pairs moved together, {} swapped, {} already near, of {}{})",
            r.near_before * 100.0,
            r.near_after * 100.0,
            grouped(r.moved),
            grouped(r.swapped),
            grouped(r.already_near),
            grouped(r.pairs),
            if r.budget_exhausted { "; work budget reached" } else { "" }
        ),
        (None, Some(s)) => println!("affinity       co-access weight within a cache line {:.1}%", s * 100.0),
        _ => {}
    }
    println!("written        {} (validated)", a.output);
    if let Some(p) = &a.plot {
        println!("picture        {p}");
    }
    println!("time           {seconds:.3} s");
}
