//! `heaplab-bench-apply-runtime`: what the layout runtime (`heaplab run`) adds to each
//! allocation on top of the fallback allocator, behind `make bench-apply-runtime`.
//!
//! The workload (`programs/alloc_loop.c`, compiled here) times N malloc/free pairs inside the
//! program. It runs plainly under the allocator, then under the runtime with layouts built from
//! its own trace: every allocation expected but none planned (identification, then the
//! fallback: the identification cost), the `plan` layout (identification and serving from the
//! region instead of the allocator), and `plan` keyed by call site (stack depth 1). Each figure
//! is the median of several runs; the table and `bench/apply-runtime-results.md` name machine
//! and commit.

#[path = "../runtime_cost.rs"]
mod runtime_cost;

use heaplab_apply::run::run;
use heaplab_apply::strategy::{build, Strategy, StrategyOptions};
use heaplab_trace::launch::{launch, LaunchOptions, RuntimeOptions};
use runtime_cost::{fail, Args};
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

const USAGE: &str = "\
heaplab-bench-apply-runtime — the layout runtime's cost per allocation

Usage: heaplab-bench-apply-runtime [--runs N] [--pairs N] [--out DIR]
  --runs N   runs per configuration; the median is reported [default: 7]
  --pairs N  malloc/free pairs timed per run [default: 2000000]
  --out DIR  where apply-runtime-results.md goes [default: bench]";

/// The workload's ns per pair from one run (plain or under a layout), and the layout's match
/// rate.
fn once(cmd: &[String], layout: Option<&str>, fallback: &heaplab_replay::allocators::Allocator, scratch: &Path) -> (f64, f64) {
    let Some(l) = layout else { return (runtime_cost::plain(cmd, fallback, scratch), 0.0) };
    runtime_cost::under(cmd, scratch, |out| {
        let opts = RuntimeOptions { fallback: fallback.library.clone(), fallback_name: fallback.name.clone() };
        let a = run(l, cmd, &opts, |c| c.stdout(out)).unwrap_or_else(|e| fail(e.to_string()));
        if !a.status.success() {
            fail(format!("{cmd:?} under {l} failed"));
        }
        a.report.map_or(0.0, |r| r.match_rate)
    })
}

/// A layout of `strategy` from the trace, written to `scratch`; `unplanned` keeps every entry
/// but plans none.
fn layout(trace: &Path, strategy: Strategy, contexts: bool, unplanned: bool, scratch: &Path, name: &str) -> String {
    let source = heaplab_apply::source::read(&trace.to_string_lossy(), contexts).unwrap_or_else(|e| fail(e.to_string()));
    let opts = StrategyOptions { time_limit: Duration::from_secs(5), seed: 1 };
    let mut l = build(strategy, &source, None, &opts).unwrap_or_else(|e| fail(e.to_string())).layout;
    if unplanned {
        l.contexts.iter_mut().flat_map(|c| c.entries.iter_mut()).for_each(|e| e.offset = None);
        l.region = 0;
    }
    let path = scratch.join(format!("{name}.hllayout")).to_string_lossy().into_owned();
    heaplab_apply::format::write(&path, &l).unwrap_or_else(|e| fail(e.to_string()));
    path
}

fn main() {
    let Args { runs, pairs, out: out_dir } = Args::parse("heaplab-bench-apply-runtime", USAGE);
    let scratch = runtime_cost::scratch();
    let prog = runtime_cost::compile("alloc_loop", &scratch);
    let cmd = vec![prog.to_string_lossy().into_owned(), pairs.to_string()];

    // Two traces of the workload: without call sites, and with the calling instruction.
    let traced = |depth: u32, name: &str| {
        let out = std::path::absolute(scratch.join(format!("{name}.hltrace"))).unwrap();
        let opts = LaunchOptions { stack_depth: depth, ..LaunchOptions::default() };
        launch(&cmd, &out, &opts, |c| c.stdout(Stdio::null())).unwrap_or_else(|e| fail(e.to_string()));
        out
    };
    let plain_trace = traced(0, "plain");
    let site_trace = traced(1, "sites");
    let layouts = [
        ("identified, all fall back", layout(&plain_trace, Strategy::Simple, false, true, &scratch, "unplanned")),
        ("identified, served (plan)", layout(&plain_trace, Strategy::Plan, false, false, &scratch, "plan")),
        ("by call site, all fall back", layout(&site_trace, Strategy::Simple, true, true, &scratch, "ctx-unplanned")),
        ("by call site, served (plan)", layout(&site_trace, Strategy::Plan, true, false, &scratch, "ctx-plan")),
    ];

    let mut rows = Vec::new();
    for name in ["glibc", "jemalloc"] {
        let alloc = heaplab_replay::allocators::resolve(name).unwrap_or_else(|e| fail(e.to_string()));
        let measured = runtime_cost::take_turns(runs, 1 + layouts.len(), |k| once(&cmd, k.checked_sub(1).map(|k| layouts[k].1.as_str()), &alloc, &scratch));
        let base = measured[0].0;
        rows.push(format!("| {name} | plain | {base:.1} | | |"));
        for ((what, _), (t, rate)) in layouts.iter().zip(&measured[1..]) {
            rows.push(format!("| {name} | {what} | {t:.1} | {:+.1} | {:.2}% |", t - base, 100.0 * rate));
        }
    }
    let _ = std::fs::remove_dir_all(&scratch);

    let table = format!("| fallback | configuration | ns per malloc+free | added ns | served from the region |\n|---|---|---:|---:|---:|\n{}\n", rows.join("\n"));
    print!("{table}");
    let body = format!(
        "Command: `make bench-apply-runtime` (`heaplab-bench-apply-runtime --runs {runs} --pairs {pairs}`).\n\n\
         The workload (`crates/bench/programs/alloc_loop.c`) times {pairs} malloc/free pairs of 8 sizes (16 to 256\n\
         bytes) inside the program; each figure is the median of {runs} runs, configurations taking turns.\n\
         \"Added\" is what `heaplab run` adds per pair over the allocator alone. *All fall back*: every\n\
         allocation is identified against a layout that expects it but plans none (the identification\n\
         cost, target at most 100 ns); *served*: the `plan` layout serves every allocation from the region\n\
         (identification, the slot check and the region's bookkeeping instead of the allocator's own work).\n\
         *By call site*: a layout keyed by call-site context (stack depth 1: the calling instruction).\n\n{table}"
    );
    runtime_cost::write_results(&out_dir, "apply-runtime-results.md", "The layout runtime's cost per allocation", &body);
}
