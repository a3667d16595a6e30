//! The `plan`, `stats`, `plot`, `gen` and `convert` subcommands: arguments, and turning the
//! library's results into the human table or JSON.

use crate::flag_ranges::{GEN_BUFFERS, ITERATIONS, SEED, TIME_LIMIT};
use crate::outputs::check_outputs;
pub(crate) use crate::outputs::check_writable;
use crate::report::{bytes, exact_bytes, grouped, parse_bytes, pct, ProgressLine};
use crate::Failure;
use clap::Args;
use heaplab_model::{files, FileKind, Input, Semantics};
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
the critical windows (the stretches
of time around the load's peaks, where the makespan is decided) are planned as instances of their
own and everything else is placed around them (from 50,000 buffers beside the heuristics, on the
other core); components of up to 6,000 buffers (and 10 million
conflicting pairs) get an exact branch-and-bound search that tries the max load first and proves
optimality when it can; a large-neighbourhood improvement search (exact re-packing under the
peak, greedy re-packing of time windows) and the boxing algorithm of Buchsbaum et al. share the
remaining time on the components that decide the makespan (the `stages` line says how). It stops
early when the makespan equals the lower bound, which proves the plan optimal. Every placement is
validated before it is written.

With --capacity (the memory there is, as minimalloc takes it) any plan that fits is enough: the
planner stops at the first one within the capacity instead of minimising further, and the exact
search decides that capacity alone (it can prove that nothing fits). K, M, G, T (or KiB, MiB, GiB,
TiB) are powers of 1024; KB, MB, GB, TB powers of 1000. When no plan fits the exit code is 1 and
nothing is written (an existing output file is left as it was): when the max load is above the
capacity this is said at once, without planning; otherwise the summary shows the best plan found
and whether the exact search proved that none fits or time ran out. The JSON summary has
`capacity` and `fits` in every case.

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
    #[arg(long, default_value = "inex", value_parser = ["inex", "in", "ex"])]
    semantics: String,
    /// Print the summary as JSON instead of a table.
    #[arg(long)]
    json: bool,
    #[arg(long, default_value_t = 3.0, value_name = "SECONDS", value_parser = TIME_LIMIT.parser(), help = TIME_LIMIT.help(
        "Wall-clock budget in seconds; the best placement found by then is returned. One greedy placement always \
         completes first, so on a million buffers or more a run can take longer (first-fit by size: about 4-20 s \
         at 10^6; above 2*10^6 the faster start-order sweep runs first, and first-fit by size only if the budget \
         allows it)."))]
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
    trace: crate::trace::TraceInputArgs,
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

fn semantics(s: &str) -> Semantics {
    Semantics::parse(s).unwrap_or_default()
}

fn io_failure(path: &str, e: std::io::Error) -> Failure {
    Failure::Input(format!("{path}: cannot write: {e}"))
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
        plot_format(p)?;
    }
    let (inst, traced) = crate::trace::read_instance(&a.input, semantics(&a.semantics), &a.trace)?;
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
    let opts = PlanOptions {
        time_limit: Duration::from_secs_f64(a.time_limit),
        iterations: a.iterations,
        seed: a.seed,
        algorithm,
        capacity,
        policy,
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
        heaplab_plan::plan(&inst.buffers, &opts, Some(&progress))
    };
    // Under a capacity, a plan that does not fit is shown but not written.
    let fits = capacity.is_none_or(|c| outcome.makespan <= c);
    if fits {
        if let Some(out) = &a.output {
            files::write(out, &inst, Some(&outcome.offsets)).map_err(|e| io_failure(out, e))?;
        }
        if let Some(p) = &a.plot {
            // A trace's time axis is the clock it was converted with.
            let clock = if traced.is_some() { a.trace.plot_clock() } else { heaplab_plot::Clock::Ticks };
            write_plot(p, &inst.buffers, &outcome.offsets, &a.input, clock)?;
        }
    }
    let total = t0.elapsed().as_secs_f64();
    let frag = outcome.makespan - outcome.max_load;
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
            "output": if fits { a.output.clone() } else { None },
            "valid": true,
        });
        if let Some(t) = &traced {
            crate::trace::oracle_gap(t, outcome.makespan, outcome.max_load, Some(&mut v));
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
        println!("time           {total:.3} s (read {read_s:.3} s, plan {:.3} s)", outcome.seconds);
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
            crate::trace::oracle_gap(t, outcome.makespan, outcome.max_load, None);
        }
    }
    match capacity {
        Some(c) if !fits => {
            let why = if outcome.lower_bound > c {
                format!("the exact search proved that every plan needs at least {}", exact_bytes(outcome.lower_bound))
            } else {
                // The heuristics alone do not use the time: more of it would not help them.
                let hint = if matches!(algorithm, Algorithm::Heuristics | Algorithm::Heuristic(_)) {
                    ""
                } else {
                    "; a longer --time-limit may find one"
                };
                format!(
                    "the best plan found in {} s needs {} (lower bound {}){hint}",
                    a.time_limit,
                    exact_bytes(outcome.makespan),
                    exact_bytes(outcome.lower_bound)
                )
            };
            let written = if a.output.is_some() || a.plot.is_some() { "; nothing written" } else { "" };
            Err(Failure::Work(format!("{}: no plan fits in --capacity {}: {why}{written}", a.input, exact_bytes(c))))
        }
        _ => Ok(()),
    }
}

enum PlotFormat {
    Png,
    Svg,
}

fn plot_format(path: &str) -> Result<PlotFormat, Failure> {
    let lower = path.to_ascii_lowercase();
    if lower.ends_with(".png") {
        Ok(PlotFormat::Png)
    } else if lower.ends_with(".svg") {
        Ok(PlotFormat::Svg)
    } else {
        Err(Failure::Input(format!("{path}: picture must end in .png or .svg")))
    }
}

/// Draws a picture with `png` or `svg` by the extension of `path`, and writes it atomically.
pub(crate) fn write_picture(path: &str, png: impl FnOnce() -> Vec<u8>, svg: impl FnOnce() -> String) -> Result<(), Failure> {
    let res = match plot_format(path)? {
        PlotFormat::Png => {
            let png = png();
            files::write_atomic(path, |w| w.write_all(&png))
        }
        PlotFormat::Svg => {
            let svg = svg();
            files::write_atomic(path, |w| w.write_all(svg.as_bytes()))
        }
    };
    res.map_err(|e| io_failure(path, e))
}

fn write_plot(path: &str, buffers: &[heaplab_model::Buffer], offsets: &[u64], title: &str, clock: heaplab_plot::Clock) -> Result<(), Failure> {
    let opts = heaplab_plot::PlotOptions { title: title.to_string(), clock, ..Default::default() };
    write_picture(path, || heaplab_plot::render_png(buffers, offsets, &opts), || heaplab_plot::render_svg(buffers, offsets, &opts))
}

/// Arguments of `heaplab stats`.
#[derive(Args)]
pub struct StatsArgs {
    /// Instance or placement file (CSV or .hlbin), or a trace (.hltrace, converted on the way);
    /// '-' reads standard input.
    input: String,
    /// Lifetime convention of the input.
    #[arg(long, default_value = "inex", value_parser = ["inex", "in", "ex"])]
    semantics: String,
    /// Print as JSON.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    trace: crate::trace::TraceInputArgs,
}

/// `heaplab stats`.
pub fn stats(a: StatsArgs) -> Result<(), Failure> {
    let (inst, _, _) = crate::trace::read_input(Input::open(&a.input)?, semantics(&a.semantics), true, &a.trace)?;
    let s = heaplab_sweep::stats::stats(&inst.buffers);
    let hist = |h: &[heaplab_sweep::stats::Bucket]| -> Vec<serde_json::Value> {
        h.iter().map(|b| json!({"lo": b.lo, "hi": b.hi, "count": b.count})).collect()
    };
    if a.json {
        let v = json!({
            "input": a.input, "n": s.n, "max_load": s.max_load, "max_live": s.max_live,
            "conflicts": s.conflicts, "components": s.components, "largest_component": s.largest_component,
            "total_size": s.total_size, "span": [s.span.0, s.span.1], "size_min": s.size_range.0,
            "size_max": s.size_range.1, "aligned": s.aligned,
            "size_histogram": hist(&s.size_hist), "lifetime_histogram": hist(&s.lifetime_hist),
        });
        println!("{}", serde_json::to_string_pretty(&v).expect("JSON of plain values"));
        return Ok(());
    }
    println!("instance           {}", a.input);
    println!("buffers            {}", grouped(s.n as u64));
    println!("max load           {} B ({})", grouped(s.max_load), bytes(s.max_load));
    println!("total size         {} B ({})", grouped(s.total_size), bytes(s.total_size));
    println!("most live at once  {}", grouped(s.max_live as u64));
    println!("conflicting pairs  {}", grouped(s.conflicts));
    println!("components         {} (largest {} buffers)", grouped(s.components as u64), grouped(s.largest_component as u64));
    println!("time span          [{}, {})", s.span.0, s.span.1);
    println!("sizes              {} … {}", bytes(s.size_range.0), bytes(s.size_range.1));
    println!("aligned buffers    {}", grouped(s.aligned as u64));
    for (title, h, unit_bytes) in [("size", &s.size_hist, true), ("lifetime (ticks)", &s.lifetime_hist, false)] {
        println!("\n{title} histogram");
        let most = h.iter().map(|b| b.count).max().unwrap_or(1);
        for b in h.iter() {
            let range = if unit_bytes { format!("{} – {}", bytes(b.lo), bytes(b.hi)) } else { format!("{} – {}", b.lo, b.hi) };
            let bar = "#".repeat(((b.count * 40).div_ceil(most)) as usize);
            println!("  {range:>26}  {:>10}  {bar}", grouped(b.count));
        }
    }
    Ok(())
}

/// Arguments of `heaplab plot`.
#[derive(Args)]
pub struct PlotArgs {
    /// Placement file: an instance with an offset column (CSV or .hlbin), or an allocator's
    /// placement from `heaplab replay` (.hlplaced, or its CSV export from `heaplab convert`).
    placement: String,
    /// Picture to write: .png or .svg.
    #[arg(short, long, value_name = "FILE")]
    output: String,
    /// Lifetime convention of the input (instances; placed jobs are always [start, end)).
    #[arg(long, default_value = "inex", value_parser = ["inex", "in", "ex"])]
    semantics: String,
    /// Title (default: the file name).
    #[arg(long)]
    title: Option<String>,
}

/// `heaplab plot`.
pub fn plot(a: PlotArgs) -> Result<(), Failure> {
    plot_format(&a.output)?;
    check_writable(&a.output)?;
    // An allocator's placement: the binary by its magic, the CSV export by its header.
    if heaplab_replay::placed::is_placed(&a.placement) || heaplab_replay::placed::is_csv_export(&a.placement) {
        return crate::replay::plot_placed(&a.placement, &a.output, a.title.as_deref());
    }
    let (inst, offsets) = files::read_placement(&a.placement, semantics(&a.semantics))?;
    let v = heaplab_sweep::validate(&inst.buffers, &offsets);
    if !v.is_valid() {
        eprintln!("heaplab: warning: drawing an invalid placement ({} clashing buffers)", v.clashing_buffers);
    }
    write_plot(&a.output, &inst.buffers, &offsets, a.title.as_deref().unwrap_or(&a.placement), heaplab_plot::Clock::Ticks)?;
    println!("picture        {} ({} buffers, makespan {})", a.output, grouped(inst.len() as u64), bytes(v.makespan));
    Ok(())
}

pub const GEN_HELP: &str = "\
Generate a reproducible instance: the same kind, size and seed always give the same file.

Kinds are listed under --kind. 'tight' instances are cut from a full rectangle, so a packing with
makespan = max load exists: planners can be checked against a known optimum.";

/// Arguments of `heaplab gen`.
#[derive(Args)]
pub struct GenArgs {
    /// Kind of instance.
    #[arg(long, value_name = "KIND", value_parser = gen_kind_names())]
    kind: String,
    #[arg(long, value_name = "N", value_parser = GEN_BUFFERS.parser::<usize>(), help = GEN_BUFFERS.help("Number of buffers."))]
    buffers: usize,
    #[arg(long, default_value_t = 1, value_parser = SEED.parser::<u64>(), help = SEED.help("Seed."))]
    seed: u64,
    /// Output file (.csv, or .hlbin for the binary format); '-' for standard output.
    #[arg(short, long, value_name = "FILE")]
    output: String,
}

fn gen_kind_names() -> Vec<&'static str> {
    heaplab_gen::Kind::ALL.iter().map(|k| k.name()).collect()
}

/// `heaplab gen`.
pub fn gen(a: GenArgs) -> Result<(), Failure> {
    let kind = heaplab_gen::Kind::parse(&a.kind).ok_or_else(|| Failure::Input(format!("unknown kind {}", a.kind)))?;
    check_outputs(&[&a.output], &[])?;
    let inst = heaplab_gen::generate(kind, a.buffers, a.seed);
    files::write(&a.output, &inst, None).map_err(|e| io_failure(&a.output, e))?;
    if a.output != "-" {
        eprintln!("heaplab: wrote {} buffers of kind {} (seed {}) to {}", grouped(inst.len() as u64), kind.name(), a.seed, a.output);
    }
    Ok(())
}

/// Arguments of `heaplab convert`.
#[derive(Args)]
pub struct ConvertArgs {
    /// Instance or placement (CSV or .hlbin), a trace (.hltrace) to convert to an instance, or a
    /// placed file from `heaplab replay` (to its CSV export).
    input: String,
    /// Output: .hlbin for binary, anything else CSV. Lifetimes are written as [lower, upper).
    #[arg(short, long, value_name = "FILE")]
    output: String,
    /// Lifetime convention of the input.
    #[arg(long, default_value = "inex", value_parser = ["inex", "in", "ex"])]
    semantics: String,
    #[command(flatten)]
    trace: crate::trace::TraceInputArgs,
}

/// `heaplab convert`.
pub fn convert(a: ConvertArgs) -> Result<(), Failure> {
    check_outputs(&[&a.output], &[&a.input])?;
    // Opened once and told apart by magic: a pipe is read like a file.
    let mut input = Input::open(&a.input)?;
    if input.kind()? == FileKind::Placed {
        let p = heaplab_replay::placed::read_input(input, 4096)?;
        crate::replay::write_placed(&a.output, &p)?;
        eprintln!("heaplab: wrote {} jobs to {}", grouped(p.jobs.len() as u64), a.output);
        return Ok(());
    }
    let (inst, offsets, _) = crate::trace::read_input(input, semantics(&a.semantics), true, &a.trace)?;
    files::write(&a.output, &inst, offsets.as_deref()).map_err(|e| io_failure(&a.output, e))?;
    eprintln!("heaplab: wrote {} buffers to {}", grouped(inst.len() as u64), a.output);
    Ok(())
}
