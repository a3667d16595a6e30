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

#[path = "../host.rs"]
#[allow(dead_code)] // only `output` is needed here
mod host;

use heaplab_apply::run::run;
use heaplab_apply::strategy::{build, Strategy, StrategyOptions};
use heaplab_trace::launch::{launch, LaunchOptions, RuntimeOptions};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

const USAGE: &str = "\
heaplab-bench-apply-runtime — the layout runtime's cost per allocation

Usage: heaplab-bench-apply-runtime [--runs N] [--pairs N] [--out DIR]
  --runs N   runs per configuration; the median is reported [default: 7]
  --pairs N  malloc/free pairs timed per run [default: 2000000]
  --out DIR  where apply-runtime-results.md goes [default: bench]";

fn fail(m: String) -> ! {
    eprintln!("heaplab-bench-apply-runtime: {m}");
    std::process::exit(2)
}

/// The workload's ns per pair from one run (plain or under a layout), and the layout's match
/// rate.
fn once(cmd: &[String], layout: Option<&str>, fallback: &heaplab_replay::allocators::Allocator, scratch: &Path) -> (f64, f64) {
    let mut rate = 0.0;
    let out = scratch.join("out.txt");
    let file = || std::fs::File::create(&out).unwrap_or_else(|e| fail(format!("{}: {e}", out.display())));
    match layout {
        None => {
            let st = Command::new(&cmd[0]).args(&cmd[1..]).env("LD_PRELOAD", fallback.preload()).stdout(file()).status();
            if !st.is_ok_and(|s| s.success()) {
                fail(format!("{cmd:?} failed"));
            }
        }
        Some(l) => {
            let opts = RuntimeOptions { fallback: fallback.library.clone(), fallback_name: fallback.name.clone() };
            let a = run(l, cmd, &opts, |c| c.stdout(file())).unwrap_or_else(|e| fail(e.to_string()));
            if !a.status.success() {
                fail(format!("{cmd:?} under {l} failed"));
            }
            rate = a.report.map_or(0.0, |r| r.match_rate);
        }
    }
    let text = std::fs::read_to_string(&out).unwrap_or_default();
    (text.trim().parse().unwrap_or_else(|_| fail(format!("{cmd:?}: no timing in its output ({text:?})"))), rate)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
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
    let mut runs = 7usize;
    let mut pairs = 2_000_000u64;
    let mut out_dir = PathBuf::from("bench");
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut val = |what: &str| args.next().unwrap_or_else(|| fail(format!("{what} needs a value\n{USAGE}")));
        match a.as_str() {
            "--runs" => runs = val("--runs").parse().unwrap_or_else(|_| fail("--runs: expected a number".into())),
            "--pairs" => pairs = val("--pairs").parse().unwrap_or_else(|_| fail("--pairs: expected a number".into())),
            "--out" => out_dir = PathBuf::from(val("--out")),
            "-h" | "--help" => {
                println!("{USAGE}");
                return;
            }
            _ => fail(format!("unknown argument {a}\n{USAGE}")),
        }
    }
    let scratch = std::env::temp_dir().join(format!("heaplab-bench-apply-runtime-{}", std::process::id()));
    std::fs::create_dir_all(&scratch).unwrap_or_else(|e| fail(format!("{}: {e}", scratch.display())));
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("programs/alloc_loop.c");
    let prog = scratch.join("alloc_loop");
    if !Command::new("cc").args(["-O2", "-o"]).arg(&prog).arg(&src).status().is_ok_and(|s| s.success()) {
        fail("cannot compile programs/alloc_loop.c (a C compiler is required)".into());
    }
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
        // Configurations take turns run by run, so drifting load spreads over all of them.
        let mut times: Vec<Vec<f64>> = vec![Vec::new(); 1 + layouts.len()];
        let mut rates = vec![0.0; 1 + layouts.len()];
        for _ in 0..runs {
            times[0].push(once(&cmd, None, &alloc, &scratch).0);
            for (k, (_, l)) in layouts.iter().enumerate() {
                let (t, r) = once(&cmd, Some(l), &alloc, &scratch);
                times[k + 1].push(t);
                rates[k + 1] = r;
            }
        }
        let base = median(times[0].clone());
        rows.push(format!("| {name} | plain | {base:.1} | | |"));
        for (k, (what, _)) in layouts.iter().enumerate() {
            let t = median(times[k + 1].clone());
            rows.push(format!("| {name} | {what} | {t:.1} | {:+.1} | {:.2}% |", t - base, 100.0 * rates[k + 1]));
        }
    }
    let _ = std::fs::remove_dir_all(&scratch);

    let commit = host::output("git", &["rev-parse", "--short", "HEAD"]);
    let date = host::output("date", &["-u", "+%Y-%m-%d %H:%M UTC"]);
    let cpu = host::output("sh", &["-c", "grep -m1 'model name' /proc/cpuinfo | cut -d: -f2"]);
    let cores = host::output("nproc", &[]);
    let mem = host::output("sh", &["-c", "awk '/MemTotal/ {printf \"%.0f GiB\", $2 / 1048576}' /proc/meminfo"]);
    let table = format!("| fallback | configuration | ns per malloc+free | added ns | served from the region |\n|---|---|---:|---:|---:|\n{}\n", rows.join("\n"));
    print!("{table}");
    let text = format!(
        "# The layout runtime's cost per allocation\n\n\
         Machine: {} ({} cores, {}), shared with other jobs while measured. Date: {}. Commit: {}.\n\
         Command: `make bench-apply-runtime` (`heaplab-bench-apply-runtime --runs {runs} --pairs {pairs}`).\n\n\
         The workload (`crates/bench/programs/alloc_loop.c`) times {pairs} malloc/free pairs of 8 sizes (16 to 256\n\
         bytes) inside the program; each figure is the median of {runs} runs, configurations taking turns.\n\
         \"Added\" is what `heaplab run` adds per pair over the allocator alone. *All fall back*: every\n\
         allocation is identified against a layout that expects it but plans none (the identification\n\
         cost, target at most 100 ns); *served*: the `plan` layout serves every allocation from the region\n\
         (identification, the slot check and the region's bookkeeping instead of the allocator's own work).\n\
         *By call site*: a layout keyed by call-site context (stack depth 1: the calling instruction).\n\n{table}",
        cpu.trim(),
        cores.trim(),
        mem.trim(),
        date.trim(),
        commit.trim()
    );
    let path = out_dir.join("apply-runtime-results.md");
    std::fs::write(&path, text).unwrap_or_else(|e| fail(format!("{}: {e}", path.display())));
    eprintln!("wrote {}", path.display());
}
