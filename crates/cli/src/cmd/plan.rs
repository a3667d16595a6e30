//! `heaplab plan`: arguments, the planner's policy from `--no-stage` and `--policy`, and the
//! summary (table or JSON), with the oracle gap when the input is a trace.

use crate::flag_ranges::{ITERATIONS, SEED, TIME_LIMIT};
use crate::outputs::check_outputs;
use crate::picture::write_plot;
use crate::progress::ProgressLine;
use crate::trace_input::{oracle_gap_json, print_oracle_gap};
use crate::Failure;
use clap::Args;
use heaplab_model::units::{bytes, exact_bytes, grouped, parse_bytes, pct};
use heaplab_model::{files, Semantics};
use heaplab_plan::{Algorithm, PlanOptions, Progress};
use serde_json::json;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

pub const PLAN_HELP: &str = "\
Plan offsets for every buffer of an instance so that buffers live at the same time never overlap,
minimising the makespan (the peak memory: highest offset + size).

INPUT is a CSV file with header id,lower,upper,size (optional columns alignment, requested), a
heaplab binary instance (.hlbin), or a trace from `heaplab trace` (.hltrace, converted on the way:
see the Trace input options; the summary then adds the oracle gap, the real allocator's peak
against the plan); '-' reads standard input. Lifetimes are [lower, upper) unless
--semantics says otherwise.

How it works: the instance is split into independent components (time ranges no buffer crosses);
trivial components are solved exactly; greedy first-fit and best-fit heuristics run over several
orders in parallel; a flat component (the same load at every tick, so no slack anywhere) is merged
into blocks, rectangles its buffers fill exactly (equal heights meeting in time chain, equal
lifetimes stack), and the blocks are planned instead; on components of more than 2,000 buffers
the critical windows (the stretches of time around the load's peaks, where the makespan is
decided) are planned as instances of their own and everything else is placed around them (from
50,000 buffers beside the heuristics, on the other core; where one full placement takes too much
of the budget, window by window, re-placing only the buffers around each); on components of
more than 400,000 buffers given a long limit (20 s per million buffers; above 2 million, 4 s)
where a fifth of the buffers hold 80–99.9% of the area (size × lifetime), those are planned
alone the same way and the rest placed around them (`size split`); components of up to
6,000 buffers (and 10 million conflicting pairs) get an exact branch-and-bound search that tries
the max load first and proves optimality when it can; a large-neighbourhood improvement search
(exact re-packing under the peak, greedy re-packing of time windows) and the boxing algorithm of
Buchsbaum et al. share the remaining time on the components that decide the makespan (the
`stages` line says how). It stops early when the makespan equals the lower bound, which proves
the plan optimal. Every placement is validated before it is written.

With --capacity (the memory there is, as minimalloc takes it) any plan that fits is enough: the
planner stops at the first one within the capacity instead of minimising further, and the exact
search decides that capacity alone (it can prove that nothing fits). K, M, G, T (or KiB, MiB, GiB,
TiB) are powers of 1024; KB, MB, GB, TB powers of 1000. When no plan fits the exit code is 1 and
nothing is written (an existing output file is left as it was): when the max load is above the
capacity this is said at once, without planning; otherwise the summary shows the best plan found
and whether the exact search proved that none fits or time ran out. The JSON summary has
`capacity` and `fits` in every case.

Ctrl-C (or SIGTERM) stops the planning at once: the best placement found so far is validated and
written as usual, the summary says `interrupted`, and the exit code is 1. A second Ctrl-C while
it is written ends heaplab at once, leaving the output as it was.

Prints: buffers, max load, the best proven lower bound (the max load, or more where the exact
search refuted smaller makespans), makespan, fragmentation (makespan - max load, in bytes and % of
max load), the gap to the lower bound, time, and the algorithm that won.

Examples:
  heaplab plan model.csv -o placed.csv
  heaplab plan model.csv --capacity 16GiB -o placed.csv
  heaplab plan model.csv --time-limit 10 --seed 7 --json
  heaplab plan model.csv --algorithm best-fit/size -o placed.csv --plot placed.png";

/// Arguments of `heaplab plan`.
#[derive(Args)]
pub struct PlanArgs {
    /// Instance file (CSV or .hlbin; '-' for standard input).
    input: String,
    /// Write the placement here (CSV, or binary if it ends in .hlbin); validated first.
    #[arg(short, long, value_name = "FILE")]
    output: Option<String>,
    /// Lifetime convention of the input: inex = [lower, upper), in = [lower, upper], ex = (lower, upper).
    #[arg(long, default_value = "inex", value_parser = crate::options::semantics())]
    semantics: Semantics,
    /// Print the summary as JSON instead of a table.
    #[arg(long)]
    json: bool,
    #[arg(long, default_value_t = 3.0, value_name = "SECONDS", value_parser = TIME_LIMIT.parser(), help = TIME_LIMIT.help(
        "Wall-clock budget in seconds; the best placement found by then is returned. Every stage stops at it: \
         the start-order sweep (fast on any input) runs beside the first heuristic and stands in when that one \
         runs out of time, so only reading, validation and writing come on top (about 0.5 s at 10^6 buffers). \
         One sweep, with the ordering by start and the split into components before it, must finish for \
         there to be a plan at all: a limit shorter than that (about 0.3-0.4 s per 10^6 buffers on 2 cores) \
         ends when it does, with a note saying so. \
         On large or adversarial inputs a longer budget gives a better plan (10^6 buffers: try 30)."))]
    time_limit: f64,
    /// Memory available, in bytes or with a unit (16GiB = 16·2^30, 16GB = 16·10^9): stop at the
    /// first plan that fits in it instead of minimising; exit code 1 when none fits.
    #[arg(long, value_name = "BYTES")]
    capacity: Option<String>,
    #[arg(long, value_name = "N", value_parser = ITERATIONS.parser::<usize>(), help = ITERATIONS.help("Cap on boxing iterations per component."))]
    iterations: Option<usize>,
    #[arg(long, default_value_t = 1, value_parser = SEED.parser::<u64>(),
        help = SEED.help("Seed for the stochastic algorithms; same seed and threads give the same plan."))]
    seed: u64,
    /// Restrict to one algorithm (auto, heuristics, boxing, exact, or FIT/ORDER such as best-fit/size).
    /// FIT is first-fit or best-fit; ORDER is size (largest first), area, lifetime, start (an
    /// online allocator's order), rocks (the largest 1/1024 by size, then the rest by start:
    /// first-fit/rocks costs about a start-order sweep), outward (start order both ways in time
    /// from the middle: two sweeps at once, one per core), peak (outward from the instant of the
    /// max load, the buffers live there stacked in start order: for heaps whose peak holds what
    /// was allocated long before it) or random (by --seed).
    #[arg(long, default_value = "auto", value_name = "NAME")]
    algorithm: String,
    /// Also draw the placement to this file (.png or .svg).
    #[arg(long, value_name = "FILE")]
    plot: Option<String>,
    /// For experiments: switch a stage of the planner off (repeatable), to see what it adds.
    #[arg(long = "no-stage", value_name = "STAGE", value_parser = stage_names())]
    no_stage: Vec<String>,
    /// For experiments: set a threshold or time share of the planner's policy (repeatable),
    /// e.g. small_buffers=5000 or exact_share_small=0.5; the keys are the fields of
    /// heaplab_plan::Policy, documented there.
    #[arg(long, value_name = "KEY=VALUE")]
    policy: Vec<String>,
    #[command(flatten)]
    trace: crate::options::TraceInputArgs,
}

fn stage_names() -> Vec<&'static str> {
    heaplab_plan::Stage::ALL.iter().map(|s| s.name()).collect()
}

/// The planner policy of `--no-stage` and `--policy`, over the default.
fn policy(a: &PlanArgs) -> Result<heaplab_plan::Policy, Failure> {
    let mut p = heaplab_plan::Policy::default();
    for name in &a.no_stage {
        p.set_stage(heaplab_plan::Stage::parse(name).expect("clap checked the stage name"), false);
    }
    for kv in &a.policy {
        let (k, v) = kv.split_once('=').ok_or_else(|| Failure::Input(format!("--policy {kv}: expected KEY=VALUE")))?;
        p.set(k.trim(), v.trim()).map_err(|e| Failure::Input(format!("--policy {kv}: {e}")))?;
    }
    Ok(p)
}

/// `heaplab plan`.
pub fn plan(a: PlanArgs) -> Result<(), Failure> {
    let t0 = Instant::now();
    let algorithm = Algorithm::parse(&a.algorithm, a.seed).ok_or_else(|| {
        Failure::Input(format!("--algorithm {}: unknown; expected one of {}", a.algorithm, Algorithm::NAMES))
    })?;
    let capacity = a.capacity.as_deref().map(parse_bytes).transpose().map_err(|e| Failure::Input(format!("--capacity {e}")))?;
    let policy = policy(&a)?;
    let outputs: Vec<&str> = [&a.output, &a.plot].into_iter().flatten().map(String::as_str).collect();
    check_outputs(&outputs, &[&a.input])?;
    if let Some(p) = &a.plot {
        crate::picture::check_format(p)?;
    }
    let (mut inst, traced) = crate::trace_input::read_instance(&a.input, a.semantics, &a.trace)?;
    let read_s = t0.elapsed().as_secs_f64();
    if let Some(c) = capacity {
        let load = heaplab_sweep::max_load(&inst.buffers);
        if load > c {
            if a.json {
                let v = json!({
                    "input": a.input,
                    "n": inst.len(),
                    "max_load": load,
                    "lower_bound": load,
                    "capacity": c,
                    "fits": false,
                    "output": null,
                    "seconds": t0.elapsed().as_secs_f64(),
                });
                println!("{}", serde_json::to_string_pretty(&v).expect("JSON of plain values"));
            }
            return Err(Failure::Work(format!(
                "{}: no plan fits in --capacity {}: the buffers live at the busiest instant alone need {}",
                a.input,
                exact_bytes(c),
                exact_bytes(load)
            )));
        }
    }
    if policy.is_huge(inst.buffers.len()) {
        one_heap_arena();
    }
    // Ctrl-C or SIGTERM stops the planner at its next check; its best placement is kept.
    let caught = crate::interrupt::Caught::start();
    let opts = PlanOptions {
        time_limit: Duration::from_secs_f64(a.time_limit),
        iterations: a.iterations,
        seed: a.seed,
        algorithm,
        capacity,
        policy,
        cancel: Some(caught.flag()),
    };
    let progress = Arc::new(Progress::default());
    let outcome = {
        let p = progress.clone();
        let limit = a.time_limit;
        let _line = ProgressLine::start(move |el| {
            let best = p.best.load(Ordering::Relaxed);
            let stage = p.stage.lock().map(|s| s.clone()).unwrap_or_default();
            let best = if best == 0 { "—".to_string() } else { bytes(best) };
            format!("planning: {:.1}/{limit:.1} s  best makespan {best}  [{stage}]", el.as_secs_f64())
        });
        heaplab_plan::plan_in_place(&mut inst.buffers, &opts, Some(&progress))
    };
    let interrupted = caught.caught();
    drop(caught);
    // Under a capacity, a plan that does not fit is shown but not written.
    let fits = capacity.is_none_or(|c| outcome.makespan <= c);
    if fits {
        if let Some(out) = &a.output {
            files::write(out, &inst, Some(&outcome.offsets)).map_err(|e| crate::outputs::cannot_write(out, e))?;
        }
        if let Some(p) = &a.plot {
            // A trace's time axis is the clock it was converted with.
            let clock = if traced.is_some() { a.trace.plot_clock() } else { heaplab_plot::Clock::Ticks };
            write_plot(p, &inst.buffers, &outcome.offsets, &a.input, clock)?;
        }
    }
    let total = t0.elapsed().as_secs_f64();
    let frag = outcome.makespan - outcome.max_load;
    if let Some(note) = past_limit_note(&outcome, a.time_limit, inst.len()).filter(|_| !interrupted) {
        eprintln!("{note}");
    }
    if a.json {
        let attempts: Vec<_> = outcome
            .attempts
            .iter()
            .map(|t| json!({"algorithm": t.name, "makespan": t.makespan, "seconds": t.seconds}))
            .collect();
        let mut v = json!({
            "input": a.input,
            "n": inst.len(),
            "max_load": outcome.max_load,
            "lower_bound": outcome.lower_bound,
            "gap_to_lower_bound_bytes": outcome.makespan - outcome.lower_bound,
            "makespan": outcome.makespan,
            "fragmentation_bytes": frag,
            "fragmentation_pct": pct(outcome.makespan, outcome.max_load),
            "optimal": outcome.optimal,
            "algorithm": outcome.algorithm,
            "components": outcome.components,
            "critical_component_buffers": outcome.critical_buffers,
            "boxing_iterations": outcome.boxing_iterations,
            "stages": outcome.stages.iter().map(|(n, t)| json!({"stage": n, "seconds": t})).collect::<Vec<_>>(),
            "attempts": attempts,
            "capacity": capacity,
            "fits": fits,
            "seed": a.seed,
            "time_limit": a.time_limit,
            "seconds": total,
            "read_seconds": read_s,
            "plan_seconds": outcome.seconds,
            "validation_seconds": outcome.validation_seconds,
            "output": if fits { a.output.clone() } else { None },
            "valid": true,
            "interrupted": interrupted,
        });
        if let Some(t) = &traced {
            v["trace"] = oracle_gap_json(&t.oracle_gap(outcome.makespan));
        }
        println!("{}", serde_json::to_string_pretty(&v).expect("JSON of plain values"));
    } else {
        let plural = |n: usize, one: &str, many: &str| format!("{} {}", grouped(n as u64), if n == 1 { one } else { many });
        println!(
            "instance       {} ({}, {})",
            a.input,
            plural(inst.len(), "buffer", "buffers"),
            plural(outcome.components, "component", "components")
        );
        if outcome.lower_bound > outcome.max_load {
            println!("max load       {} B ({})", grouped(outcome.max_load), bytes(outcome.max_load));
            println!("lower bound    {} B ({})  (proven by the exact search)", grouped(outcome.lower_bound), bytes(outcome.lower_bound));
        } else {
            println!("max load       {} B ({})  = lower bound", grouped(outcome.max_load), bytes(outcome.max_load));
        }
        println!("makespan       {} B ({})", grouped(outcome.makespan), bytes(outcome.makespan));
        if let Some(c) = capacity {
            let verdict = if fits {
                format!("fits, {} B to spare", grouped(c - outcome.makespan))
            } else if outcome.lower_bound > c {
                "does not fit: proven (the lower bound is above it)".to_string()
            } else {
                "no plan within it found in the time limit".to_string()
            };
            println!("capacity       {}  {verdict}", exact_bytes(c));
        }
        println!("fragmentation  {} B ({:.3}%)", grouped(frag), pct(outcome.makespan, outcome.max_load));
        let verdict = if !outcome.optimal {
            format!("  (gap to lower bound {} B, {:.3}%)", grouped(outcome.makespan - outcome.lower_bound), pct(outcome.makespan, outcome.lower_bound))
        } else if outcome.lower_bound == outcome.max_load {
            "  — proven optimal (makespan = max load)".to_string()
        } else {
            "  — proven optimal (makespan = proven lower bound)".to_string()
        };
        println!("algorithm      {}{verdict}", outcome.algorithm);
        let stopped = if interrupted { ", interrupted" } else { "" };
        println!("time           {total:.3} s (read {read_s:.3} s, plan {:.3} s{stopped})", outcome.seconds);
        let stages: Vec<String> =
            outcome.stages.iter().filter(|(_, t)| *t >= 0.0005).map(|(n, t)| format!("{n} {t:.3} s")).collect();
        println!("stages         {}", stages.join(", "));
        if outcome.attempts.len() > 1 {
            let mut att = outcome.attempts.clone();
            att.sort_by_key(|t| t.makespan);
            let list: Vec<String> = att
                .iter()
                .map(|t| format!("{} {:.2}%", t.name, pct(t.makespan, outcome.max_load)))
                .collect();
            println!("tried          {}", list.join(", "));
        }
        if let Some(o) = a.output.as_ref().filter(|_| fits) {
            println!("written        {o} (validated)");
        }
        if let Some(p) = a.plot.as_ref().filter(|_| fits) {
            println!("picture        {p}");
        }
        if let Some(t) = &traced {
            print_oracle_gap(&t.oracle_gap(outcome.makespan), outcome.max_load);
        }
    }
    match capacity {
        Some(c) if !fits => {
            let why = if outcome.lower_bound > c {
                format!("the exact search proved that every plan needs at least {}", exact_bytes(outcome.lower_bound))
            } else {
                // The heuristics alone do not use the time: more of it would not help them.
                let hint = if interrupted {
                    " (interrupted)"
                } else if matches!(algorithm, Algorithm::Heuristics | Algorithm::Heuristic(_)) {
                    ""
                } else {
                    "; a longer --time-limit may find one"
                };
                let secs = if interrupted { format!("{:.1}", outcome.seconds) } else { a.time_limit.to_string() };
                format!(
                    "the best plan found in {secs} s needs {} (lower bound {}){hint}",
                    exact_bytes(outcome.makespan),
                    exact_bytes(outcome.lower_bound)
                )
            };
            let written = if a.output.is_some() || a.plot.is_some() { "; nothing written" } else { "" };
            Err(Failure::Work(format!("{}: no plan fits in --capacity {}: {why}{written}", a.input, exact_bytes(c))))
        }
        _ if interrupted => {
            let written = if a.output.is_some() || a.plot.is_some() { "; the best placement found is written" } else { "" };
            Err(Failure::Work(format!("{}: planning interrupted after {:.1} s{written}", a.input, outcome.seconds)))
        }
        _ => Ok(()),
    }
}

/// Has every thread that allocates from now on use glibc's main arena. Above the huge size the
/// planner's stages build and drop indexes of hundreds of megabytes in turn, from whichever
/// thread runs them; with an arena per thread the memory one thread freed stays in its arena
/// while another's grows (docs/planning.md, step 3: peak RSS up to 1.62 GB at 10^7 random
/// buffers, 1.31 GB with one arena, the plans as good). The search there is mostly one thread
/// at a time, so the shared arena's lock costs little.
fn one_heap_arena() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets an allocator parameter; it is safe to call at any time.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 1);
    }
}

/// A note when planning ran past the time limit by more than a tenth (validation aside): on
/// inputs whose one mandatory placement takes longer than the limit, so that a user sees why
/// and which steps took the time instead of a limit silently not held.
fn past_limit_note(outcome: &heaplab_plan::PlanOutcome, limit: f64, n: usize) -> Option<String> {
    let took = outcome.seconds - outcome.validation_seconds;
    if took <= limit * 1.1 + 0.05 {
        return None;
    }
    let mut longest: Vec<&(String, f64)> = outcome.stages.iter().filter(|(name, t)| *t >= 0.1 * took && name != "assembling").collect();
    longest.sort_by(|x, y| y.1.total_cmp(&x.1));
    let list: Vec<String> = longest.iter().take(3).map(|(name, t)| format!("{name} {t:.2} s")).collect();
    Some(format!(
        "note: planning took {took:.2} s besides validation, past --time-limit {limit}: a plan of {} buffers needs its \
         first placement and the steps before it to finish, which cannot stop early (the longest steps: {})",
        grouped(n as u64),
        list.join(", ")
    ))
}

