//! `heaplab-bench-apply`: layouts applied to running programs, measured against the general
//! allocators, behind `make bench-apply`.
//!
//! For each workload (the pointer-chasing programs of `../shared/workloads/`, built here into the
//! work folder, and Debian's sqlite3, jq, xmllint and python3 on inputs generated here) it
//! profiles a small input (`heaplab trace`, `heaplab access`), computes a layout per strategy
//! (`heaplab layout`), and measures the large input under glibc, jemalloc, mimalloc and tcmalloc
//! (LD_PRELOAD) and under each layout (`heaplab run`): peak RSS and wall time over repeated runs
//! (the first discarded, median and quartiles of the rest), simulated D1 and LL data misses (one
//! run under `valgrind --tool=cachegrind`), and the runtime's match rate. `plan` is profiled on
//! the large input itself (the same run, so the plan's region is the whole heap's makespan).
//! Every run's standard output is compared with the plain (glibc) run's: a difference is a
//! reported failure of that row.
//!
//! Comparisons use heaplab-decide's statistics (HPT in-app and cross-application verdicts, the
//! rank-sum test); the targets are checked and the results written as `apply-results.md` (beside
//! libstaticmalloc's published tables) and `apply/*.json`. A command missing from the heaplab
//! binary leaves its rows out, and the results say which and why.

#[path = "../programs.rs"]
mod programs;

use programs::measure::{self, Launch, Progress, Sample};
use programs::*;

use heaplab_apply::report::RunReport;
use heaplab_trace::runtime_report::RuntimeReport;
use heaplab_decide::hpt::{analyse, InAppVerdict, Options};
use heaplab_decide::ranktest::{rank_sum, Alternative};
use heaplab_decide::results::{pyperf_checks, Better, Configuration, Metric, Results, Series};
use heaplab_study::measure::RssMethod;
use heaplab_study::stats::{median, quantile};
use heaplab_study::Machine;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::time::Instant;

const USAGE: &str = "\
heaplab-bench-apply — layouts applied to running programs against glibc, jemalloc, mimalloc, tcmalloc

Usage: heaplab-bench-apply [OPTIONS]      (run from the repository root; `make bench-apply` does)
  --heaplab PATH       heaplab binary [default: target/release/heaplab]
  --out DIR            where apply-results.md and apply/ go [default: bench; quick: out/bench-apply-quick]
  --work DIR           builds, inputs, profiles, layouts [default: target/bench-apply]
  --shared DIR         the shared folder (workloads/ is read there) [default: ../shared]
  --runs N             runs per workload and configuration, the first discarded [default: 11; quick: 4]
  --only W,W           these workloads only
  --no-cachegrind      skip the cachegrind runs (no D1/LL columns, no cache target)
  --fallback ALLOC     fallback allocator of the cache strategies' runs [default: jemalloc]
  --stack-depth N      frames per allocation context of the cache strategies [default: 4]
  --no-same            leave out the cache strategies profiled on the measured input itself
                       (rows STRATEGY-same: global ordinals, the large input's trace and profile)
  --quick              development mode: three workloads, 4 runs (also HEAPLAB_BENCH_APPLY_QUICK=1)
  -h, --help           this help

Exit status: 0 when every row was measured with outputs identical to the plain run, 1 when a row
failed or is missing (the results say which), 2 on bad usage.";

/// The general allocators, by `heaplab_replay` name, glibc (the plain run) first.
const ALLOCATORS: [&str; 4] = ["glibc", "jemalloc", "mimalloc", "tcmalloc"];

/// The cache strategies: profiled on the small input, run on the large one.
const CACHE_STRATEGIES: [&str; 9] = ["simple", "random", "size", "usage-df", "usage-grouped", "friends-df", "friends-grouped", "one-per-line", "plan-affinity"];

/// The strategies that read the access profile (the others need only the trace).
const NEEDS_ACCESS: [&str; 5] = ["usage-df", "usage-grouped", "friends-df", "friends-grouped", "plan-affinity"];

/// libstaticmalloc's published results (Lee, "Cache-conscious memory allocation", 2004 thesis,
/// `../shared/papers/002_38cb54be89fda791.txt`, section 5.2): Table 5.1 best times in seconds,
/// Table 5.2 time ratio to Simple, for cover 100x100, 300x300, 500x500, hp 4x3, traverse 16,10.
const PAPER_TIMES: [(&str, [&str; 5], [&str; 5]); 8] = [
    ("Simple", ["0.002352", "0.080595", "0.926647", "0.007496", "0.111173"], ["1.0000", "1.0000", "1.0000", "1.0000", "1.0000"]),
    ("Random", ["0.002395", "0.211720", "1.949964", "0.010427", "0.213957"], ["1.0182", "2.6270", "2.1043", "1.3910", "1.9245"]),
    ("Size", ["0.002346", "0.080677", "0.926026", "0.007491", "0.110867"], ["0.9974", "1.0010", "0.9993", "0.9993", "0.9972"]),
    ("Friends DF", ["*0.002340*", "0.080653", "0.925796", "0.007841", "0.079430"], ["*0.9949*", "1.0007", "0.9991", "1.0460", "0.7145"]),
    ("Friends Grouped", ["0.002353", "0.083250", "0.933972", "*0.007370*", "0.114451"], ["1.0004", "1.0329", "1.0079", "*0.9832*", "1.0295"]),
    ("Usage DF", ["0.002361", "*0.076603*", "*0.923315*", "0.007476", "*0.079179*"], ["1.0038", "*0.9505*", "*0.9964*", "0.9973", "*0.7122*"]),
    ("Usage Grouped", ["0.002373", "0.090737", "1.047584", "0.007497", "0.111261"], ["1.0089", "1.1258", "1.1305", "0.9973", "1.0008"]),
    ("Oneperline", ["0.002442", "0.151122", "1.245283", "0.009993", "0.144253"], ["1.0383", "1.8751", "1.3439", "1.3331", "1.2976"]),
];

/// Table 5.3 of the same thesis: cover on 300x300 under cachegrind (8 KiB 4-way L1D, 32-byte
/// lines; 512 KiB L2): data refs, L1 data misses, L1 miss rate, L2 data misses, L2 miss rate.
const PAPER_CACHE: [(&str, &str, &str, &str, &str, &str); 8] = [
    ("Simple", "28,937,189", "5,814,499", "20.00%", "556,132", "1.90%"),
    ("Random", "28,937,189", "6,815,227", "23.50%", "1,125,087", "3.80%"),
    ("Size", "28,937,187", "5,811,861", "20.00%", "551,960", "1.90%"),
    ("Friends DF", "28,937,187", "*5,809,314*", "20.00%", "556,153", "1.90%"),
    ("Friends Grouped", "28,937,187", "5,827,200", "20.10%", "583,593", "2.00%"),
    ("Usage DF", "28,937,187", "5,809,386", "20.00%", "*535,461*", "*1.80%*"),
    ("Usage Grouped", "28,937,187", "6,083,590", "21.00%", "604,834", "2.00%"),
    ("Oneperline", "28,937,189", "6,470,792", "22.30%", "1,520,016", "5.20%"),
];

fn die(m: &str) -> ! {
    programs::die_as("apply", m)
}

/// The apply bench's own options.
struct ApplyOpts {
    /// Fallback allocator of the cache strategies' runs.
    fallback: String,
    /// Frames per allocation context of the cache strategies.
    stack_depth: u32,
    /// Whether the cache strategies also run profiled on the measured input itself.
    same: bool,
}

/// The command line.
type Opts = programs::Opts<ApplyOpts>;

fn parse_args() -> Opts {
    let own = ApplyOpts { fallback: "jemalloc".into(), stack_depth: 4, same: true };
    let o = Opts::parse("apply", USAGE, own, |own, a, val| {
        match a {
            "--fallback" => own.fallback = val("--fallback"),
            "--stack-depth" => own.stack_depth = val("--stack-depth").parse().ok().filter(|n| (1..=64).contains(n)).unwrap_or_else(|| die("--stack-depth: expected 1 to 64")),
            "--no-same" => own.same = false,
            _ => return false,
        }
        true
    });
    if heaplab_replay::resolve(&o.own.fallback).is_err() {
        die(&format!("--fallback {}: unknown allocator", o.own.fallback));
    }
    o
}

/// A configuration measured.
#[derive(Clone, Debug)]
enum Config {
    /// A general allocator by LD_PRELOAD (glibc: none).
    Allocator { name: String, library: Option<PathBuf> },
    /// A layout run with `heaplab run`: `name` is the strategy, with [`SAME`] appended for a
    /// cache strategy profiled on the measured input itself.
    Layout { name: String, strategy: String, same_input: bool, fallback: String },
}

/// Suffix of the cache strategies' rows profiled on the measured input itself (global
/// ordinals): what the strategies can do when the layout covers every block.
const SAME: &str = "-same";

impl Config {
    fn name(&self) -> &str {
        match self {
            Config::Allocator { name, .. } => name,
            Config::Layout { name, .. } => name,
        }
    }

    fn describe(&self, stack_depth: u32) -> String {
        match self {
            Config::Allocator { name, library: Some(l) } => format!("{name} (LD_PRELOAD={})", l.display()),
            Config::Allocator { name, library: None } => format!("{name} (no preload: the plain run)"),
            Config::Layout { strategy, same_input: true, fallback, .. } => {
                format!("heaplab run, layout {strategy} from a trace (and access profile) of the measured input itself, global ordinals, fallback {fallback}")
            }
            Config::Layout { strategy, same_input: false, fallback, .. } => {
                format!("heaplab run, layout {strategy} from the small input's trace and access profile, contexts of {stack_depth} frames, fallback {fallback}")
            }
        }
    }
}

fn configs(o: &Opts) -> Vec<Config> {
    let mut c: Vec<Config> = ALLOCATORS
        .iter()
        .map(|a| {
            let r = heaplab_replay::resolve(a).unwrap_or_else(|e| die(&format!("allocator {a}: {} (make study-deps installs it)", e.0)));
            Config::Allocator { name: a.to_string(), library: r.library }
        })
        .collect();
    c.push(Config::Layout { name: "plan".into(), strategy: "plan".into(), same_input: true, fallback: "glibc".into() });
    c.extend(CACHE_STRATEGIES.iter().map(|s| Config::Layout { name: s.to_string(), strategy: s.to_string(), same_input: false, fallback: o.own.fallback.clone() }));
    if o.own.same {
        c.extend(CACHE_STRATEGIES.iter().map(|s| Config::Layout { name: format!("{s}{SAME}"), strategy: s.to_string(), same_input: true, fallback: o.own.fallback.clone() }));
    }
    c
}

/// What preparing a workload made: layouts by strategy (or why not), and figures of the steps.
#[derive(Default)]
struct Prepared {
    layouts: Vec<(String, Result<PathBuf, String>)>,
    /// Step name → wall seconds.
    steps: Vec<(String, f64)>,
}

/// Profiles the small input (trace with frames, access profile with contexts), traces the large
/// one, and computes every layout.
fn prepare(o: &Opts, w: &Workload, commands: &Commands) -> Prepared {
    let dir = std::path::absolute(o.work.join(&w.name).join("profile")).unwrap_or_else(|_| o.work.join(&w.name).join("profile"));
    let _ = std::fs::create_dir_all(&dir);
    let p = |f: &str| dir.join(f).display().to_string();
    let mut prep = Prepared::default();
    let exe = w.exe.display().to_string();
    let with = |mut a: Vec<String>, input: &Input| {
        a.push("--".into());
        a.push(exe.clone());
        a.extend(input.args.iter().cloned());
        a
    };
    let mut step = |name: &str, args: Vec<String>, input: &Input| -> Result<(), String> {
        eprintln!("  {name}");
        let secs = heaplab(&o.heaplab, &args, &input.cwd, input.stdin.as_deref(), &w.env)?;
        prep.steps.push((name.to_string(), secs));
        Ok(())
    };
    let depth = o.own.stack_depth.to_string();
    let small_trace = step("trace small", with(strs(&["trace", "--stack-depth", &depth, "-o", &p("small.hltrace")]), &w.small), &w.small);
    let access = if !commands.access {
        Err("heaplab access is not in this heaplab build".to_string())
    } else {
        step("access small", with(strs(&["access", "--contexts", "--stack-depth", &depth, "-o", &p("small.hlaccess")]), &w.small), &w.small)
    };
    let large_trace = step("trace large", with(strs(&["trace", "-o", &p("large.hltrace")]), &w.large), &w.large);
    let layout_missing = (!commands.layout).then(|| "heaplab layout is not in this heaplab build".to_string());
    // plan: the large input's own trace, global ordinals.
    let plan = match (&layout_missing, &large_trace) {
        (Some(m), _) => Err(m.clone()),
        (_, Err(e)) => Err(format!("tracing the large input: {e}")),
        _ => step("layout plan", strs(&["layout", &p("large.hltrace"), "--strategy", "plan", "-o", &p("plan.hllayout")]), &w.large).map(|_| dir.join("plan.hllayout")),
    };
    let mut layouts = vec![("plan".to_string(), plan)];
    for s in CACHE_STRATEGIES {
        let needs = NEEDS_ACCESS.contains(&s);
        let r = match (&layout_missing, &small_trace, &access) {
            (Some(m), _, _) => Err(m.clone()),
            (_, Err(e), _) => Err(format!("tracing the small input: {e}")),
            (_, _, Err(e)) if needs => Err(format!("no access profile: {e}")),
            _ => {
                let mut a = strs(&["layout", &p("small.hltrace"), "--strategy", s, "--contexts", "-o", &p(&format!("{s}.hllayout"))]);
                if access.is_ok() {
                    a.extend(strs(&["--access", &p("small.hlaccess")]));
                }
                step(&format!("layout {s}"), a, &w.small).map(|_| dir.join(format!("{s}.hllayout")))
            }
        };
        layouts.push((s.to_string(), r));
    }
    if o.own.same {
        let access_large = match &access {
            Err(e) => Err(e.clone()),
            Ok(()) => step("access large", with(strs(&["access", "-o", &p("large.hlaccess")]), &w.large), &w.large),
        };
        for s in CACHE_STRATEGIES {
            let r = match (&layout_missing, &large_trace, &access_large) {
                (Some(m), _, _) => Err(m.clone()),
                (_, Err(e), _) => Err(format!("tracing the large input: {e}")),
                (_, _, Err(e)) if NEEDS_ACCESS.contains(&s) => Err(format!("no access profile: {e}")),
                _ => {
                    let f = format!("{s}{SAME}.hllayout");
                    let mut a = strs(&["layout", &p("large.hltrace"), "--strategy", s, "-o", &p(&f)]);
                    if access_large.is_ok() {
                        a.extend(strs(&["--access", &p("large.hlaccess")]));
                    }
                    step(&format!("layout {s}{SAME}"), a, &w.large).map(|_| dir.join(&f))
                }
            };
            layouts.push((format!("{s}{SAME}"), r));
        }
    }
    prep.layouts = layouts;
    prep
}

/// Which heaplab commands the binary has.
struct Commands {
    access: bool,
    layout: bool,
    run: bool,
}

/// What a configuration keeps of its runs besides the samples: for a layout, the runtime's report
/// of the last run (read and raw) and the layout's figures.
#[derive(Default)]
struct LayoutRun {
    report: Option<RunReport>,
    report_json: Value,
    layout: Option<LayoutFacts>,
}

/// Everything measured for one workload under one configuration.
type Cell = measure::Cell<LayoutRun>;

/// Figures of a layout file, read with heaplab-apply's reader.
#[derive(Clone, Debug)]
struct LayoutFacts {
    entries: u64,
    planned: u64,
    contexts: u64,
    region: u64,
    /// End of the highest planned slot.
    makespan: u64,
    /// Most slot bytes live at once (the lower bound of any region).
    max_load: u64,
}

fn layout_facts(path: &Path) -> Result<LayoutFacts, String> {
    let l = heaplab_apply::format::read(&path.display().to_string()).map_err(|e| e.to_string())?;
    let (buffers, offsets, _) = heaplab_apply::format::planned_buffers(&l);
    let makespan = buffers.iter().zip(&offsets).map(|(b, o)| o + b.size).max().unwrap_or(0);
    Ok(LayoutFacts {
        entries: l.contexts.iter().map(|c| c.entries.len() as u64).sum(),
        planned: buffers.len() as u64,
        contexts: l.contexts.len() as u64,
        region: l.region,
        makespan,
        max_load: heaplab_sweep::max_load(&buffers),
    })
}

/// One measured run: the sample, its output, and for a layout the runtime's report (read and raw).
type Measurement = (Sample, Fingerprint, Option<(RunReport, Value)>);

impl Config {
    /// How the configuration runs the workload (`layout`: its layout file).
    fn launch<'a>(&'a self, o: &'a Opts, layout: Option<&'a Path>) -> Launch<'a> {
        match self {
            Config::Allocator { library, .. } => Launch::Preload(library.clone()),
            Config::Layout { fallback, .. } => Launch::HeaplabRun { heaplab: &o.heaplab, option: "--layout", file: layout, fallback },
        }
    }
}

/// Reads the report `heaplab run --report` wrote, with heaplab-apply's reader; the launcher's
/// wall time comes from the same file.
fn read_report(path: &Path) -> Result<(RunReport, Value), String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut r = RunReport::parse_runtime(&path.display().to_string(), &text)?;
    let v: Value = serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    // The launcher's fields, which `heaplab run` adds to the runtime's own.
    r.common.wall_seconds = v["wall_seconds"].as_f64().ok_or_else(|| format!("{}: no wall_seconds", path.display()))?;
    r.common.peak_rss_bytes = v["peak_rss_bytes"].as_u64().ok_or_else(|| format!("{}: no peak_rss_bytes", path.display()))?;
    Ok((r, v))
}

/// Runs a workload's large input once under `c`: the sample, its output's fingerprint, and the
/// report for layouts.
fn measure_once(o: &Opts, w: &Workload, c: &Config, layout: Option<&Path>, scratch: &Path) -> Result<Measurement, String> {
    let (run, fp, report) = measure::measure_once(w, &c.launch(o, layout), c.name(), scratch)?;
    Ok(match c {
        Config::Allocator { .. } => (Sample { wall: run.wall, rss: run.peak(RssMethod::Rusage) }, fp, None),
        Config::Layout { .. } => {
            let (r, v) = read_report(&report)?;
            if let Some(e) = &r.common.error {
                return Err(format!("the layout was not applied: {e}"));
            }
            (Sample { wall: r.common.wall_seconds, rss: r.common.peak_rss_bytes }, fp, Some((r, v)))
        }
    })
}

/// One run under cachegrind: (D1 misses, LL data misses, data references), seconds, and the
/// output fingerprint. For a layout, the runtime's report of that run must show the layout
/// applied as in the measured runs (`planned`), or the row fails.
fn cachegrind_once(o: &Opts, w: &Workload, c: &Config, layout: Option<&Path>, scratch: &Path, cg: &CachegrindTool, planned: Option<u64>) -> Result<(Misses, f64, Fingerprint), String> {
    let (m, secs, fp, report) = measure::cachegrind_once(w, &c.launch(o, layout), c.name(), scratch, cg)?;
    // valgrind adds to the environment and to LD_PRELOAD, which python3 copies into its heap:
    // a few blocks more or less may match there; a layout not applied matches none.
    if let Some(want) = planned {
        let (r, _) = read_report(&report)?;
        if r.planned.abs_diff(want) as f64 > 0.02 * want as f64 {
            return Err(format!("the layout served {} blocks under cachegrind, {want} in the measured runs", r.planned));
        }
    }
    Ok((m, secs, fp))
}

fn mib(b: f64) -> String {
    format!("{:.1}", b / 1048576.0)
}

fn grouped(n: u64) -> String {
    heaplab_model::units::grouped(n)
}

/// Per workload: the cells by configuration name.
struct Measured {
    workload: Workload,
    prepared: Prepared,
    cells: Vec<(String, Cell)>,
    /// The plain run's output fingerprint and exit.
    plain: Option<Fingerprint>,
}

impl Measured {
    fn cell(&self, c: &str) -> Option<&Cell> {
        self.cells.iter().find(|(n, _)| n == c).map(|(_, c)| c)
    }
}

fn main() {
    let o = parse_args();
    isolate_env();
    let t_start = Instant::now();
    let commit = measured_commit();
    if !o.heaplab.is_file() {
        die(&format!("{}: no heaplab binary (cargo build --release -p heaplab-cli)", o.heaplab.display()));
    }
    let commands = Commands { access: has_command(&o.heaplab, "access"), layout: has_command(&o.heaplab, "layout"), run: has_command(&o.heaplab, "run") };
    let valgrind = if o.cachegrind { Some(find_cachegrind().unwrap_or_else(|e| die(&e))) } else { None };
    let wanted = |n: &str| if o.only.is_empty() { !o.quick || ["treeadd", "health", "jq"].contains(&n) } else { o.only.iter().any(|x| x == n) };
    let (ws, missing) = workloads(&o.work, &o.shared, wanted);
    for (n, why) in &missing {
        eprintln!("heaplab-bench-apply: workload {n} left out: {why}");
    }
    if ws.is_empty() {
        die("no workload to measure");
    }
    let configs = configs(&o);
    let mut all = Vec::new();
    for (k, w) in ws.iter().enumerate() {
        eprintln!("[{}/{}] {} ({:.0} s so far): profiling {}", k + 1, ws.len(), w.name, t_start.elapsed().as_secs_f64(), w.small.what);
        let prepared = prepare(&o, w, &commands);
        let m = measure_workload(&o, w, prepared, &configs, &commands, valgrind.as_ref(), k, ws.len(), t_start);
        all.push(m);
    }
    let (md, js, clean) = summary(&o, &commit, &all, &missing, &configs, &commands, t_start.elapsed().as_secs_f64());
    let dir = o.out.join("apply");
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| die(&format!("{}: {e}", dir.display())));
    for (name, v) in js {
        let p = dir.join(format!("{name}.json"));
        std::fs::write(&p, serde_json::to_string_pretty(&v).expect("plain JSON") + "\n").unwrap_or_else(|e| die(&format!("{}: {e}", p.display())));
    }
    let p = o.out.join("apply-results.md");
    std::fs::write(&p, &md).unwrap_or_else(|e| die(&format!("{}: {e}", p.display())));
    print!("{md}");
    eprintln!("wrote {} and {}/ in {:.0} s", p.display(), dir.display(), t_start.elapsed().as_secs_f64());
    std::process::exit(if clean { 0 } else { 1 });
}

/// Measures one workload under every configuration: rounds of one run each (interleaved, so a
/// slow spell of the machine spreads over all of them), then one cachegrind run each.
#[allow(clippy::too_many_arguments)]
fn measure_workload(o: &Opts, w: &Workload, prepared: Prepared, configs: &[Config], commands: &Commands, valgrind: Option<&CachegrindTool>, k: usize, n: usize, t0: Instant) -> Measured {
    let scratch = std::path::absolute(o.work.join(&w.name).join("runs")).unwrap_or_else(|_| o.work.join(&w.name).join("runs"));
    let _ = std::fs::create_dir_all(&scratch);
    let mut cells: Vec<Cell> = Vec::new();
    let mut layouts: Vec<Option<PathBuf>> = Vec::new();
    for c in configs {
        let mut cell = Cell::default();
        let mut path = None;
        if let Config::Layout { name, .. } = c {
            match prepared.layouts.iter().find(|(s, _)| s == name).map(|(_, r)| r) {
                Some(Ok(p)) if commands.run => {
                    match layout_facts(p) {
                        Ok(f) => cell.runtime.layout = Some(f),
                        Err(e) => cell.error = Some(format!("layout unreadable: {e}")),
                    }
                    path = Some(p.clone());
                }
                Some(Ok(_)) => cell.error = Some("heaplab run is not in this heaplab build".into()),
                Some(Err(e)) => cell.error = Some(e.clone()),
                None => cell.error = Some("no layout".into()),
            }
        }
        cells.push(cell);
        layouts.push(path);
    }
    let names: Vec<String> = configs.iter().map(|c| c.name().to_string()).collect();
    let at = Progress { name: &w.name, k, n, t0 };
    let plain = measure::measure_cells(
        &at,
        o.runs,
        &names,
        &mut cells,
        |i| measure_once(o, w, &configs[i], layouts[i].as_deref(), &scratch),
        |kept: &mut LayoutRun, (r, v)| {
            kept.report = Some(r);
            kept.report_json = v;
        },
        valgrind.map(|vg| |i: usize, cell: &Cell| cachegrind_once(o, w, &configs[i], layouts[i].as_deref(), &scratch, vg, cell.runtime.report.as_ref().map(|r| r.planned))),
    );
    Measured { workload: w.clone(), prepared, cells: names.into_iter().zip(cells).collect(), plain }
}

/// The measurements as decide's results (time and peak RSS of every row that completed), so
/// that heaplab-decide's HPT analysis compares each configuration with the plain run.
fn results(all: &[Measured], configs: &[Config], stack_depth: u32) -> Results {
    let metrics = vec![Metric { name: "time".into(), unit: "second".into(), better: Better::Lower }, Metric { name: "rss".into(), unit: "byte".into(), better: Better::Lower }];
    let mut series = Vec::new();
    for m in all {
        for (c, cell) in &m.cells {
            if cell.error.is_some() || cell.samples.is_empty() {
                continue;
            }
            for (metric, values, unit) in [
                ("time", cell.samples.iter().map(|s| s.wall).collect::<Vec<_>>(), "second"),
                ("rss", cell.samples.iter().map(|s| s.rss as f64).collect::<Vec<_>>(), "byte"),
            ] {
                let unstable = pyperf_checks(&values, unit, (metric == "time").then_some(1.0));
                series.push(Series { configuration: c.clone(), workload: m.workload.name.clone(), metric: metric.into(), values, warmups: vec![], unstable });
            }
        }
    }
    Results {
        reference: "glibc".into(),
        configurations: configs.iter().map(|c| Configuration { name: c.name().to_string(), description: c.describe(stack_depth) }).collect(),
        metrics,
        series,
        provenance: json!({"tool": "heaplab-bench-apply", "source": "make bench-apply"}),
    }
}

/// Markdown, JSON files (name → document), and whether every row completed cleanly.
fn summary(o: &Opts, commit: &str, all: &[Measured], missing: &[(String, String)], configs: &[Config], commands: &Commands, seconds: f64) -> (String, Vec<(String, Value)>, bool) {
    let m = Machine::detect();
    let res = results(all, configs, o.own.stack_depth);
    let analysis = analyse(&res, &Options::default());
    let mut clean = missing.is_empty();
    let mut md = String::from("# Layouts applied to running programs (`make bench-apply`)\n\n");
    md.push_str(&format!("Machine: {} · {} cores · {} · kernel {}. Commit {commit}. Whole run: {:.0} s{}.\n\n", m.cpu, m.cores, m.os, m.kernel, seconds, if o.quick { " (quick mode)" } else { "" }));
    md.push_str(&format!(
        "Each workload's large input runs {} times per configuration, interleaved round by round (every other round backwards, each pair starting one configuration further along); the first round is discarded and the \
         other {} give the median and quartiles [q1–q3] of wall time and peak RSS. Allocators are preloaded (`LD_PRELOAD`) and measured \
         by heaplab's run launcher (wall time, `wait4` peak RSS of the program); layouts run with `heaplab run --layout L --report R \
         --fallback F` and take their figures from the report, which are the run launcher's too (the program's wall time from the \
         launcher's fork of it to its end, its `wait4` peak RSS), so that heaplab's own start-up and layout check are not counted. D1 and LL are data misses (reads + writes) of one run under \
         `valgrind --tool=cachegrind --cache-sim=yes {}` (a 48 KiB 12-way L1D and a 32 MiB 16-way LL, 64-byte lines, stated because \
         valgrind misreads this machine's L3; the tool binary is started directly, under `heaplab run` for layouts, so that the runtime \
         loads into the program and not into valgrind's launcher, and the report of that run must show the blocks planned in the \
         measured runs within 2%); ×je is the ratio to jemalloc's. *match* is the runtime's planned / allocations. \
         *vs glibc (time)* is HPT's in-app verdict (one-sided rank-sum test at 95%, heaplab-decide). Every run's standard output is \
         compared with the plain (glibc) run's; a difference fails the row.\n\n",
        o.runs,
        o.runs - 1,
        CACHE_GEOMETRY.join(" ")
    ));
    md.push_str(&format!(
        "`plan` is profiled on the measured input itself (`heaplab trace` of the large input, `heaplab layout --strategy plan`, global \
         ordinals, glibc fallback): the memory-optimal placement of every block. The cache strategies are profiled on the small input \
         (`heaplab trace --stack-depth {d}`, `heaplab access --contexts --stack-depth {d}`, `heaplab layout --contexts`) and run on the \
         large one with `--fallback {fb}`, so they differ from jemalloc only where the layout places a block; what falls back is in \
         *fallback*. The rows STRATEGY-same are the same strategies profiled on the measured input itself (its trace and `heaplab access` \
         profile, global ordinals, `--fallback {fb}`): what the strategies do when the layout covers every block, as libstaticmalloc's \
         profile covered its runs.\n\n",
        d = o.own.stack_depth,
        fb = o.own.fallback
    ));
    let absent: Vec<&str> = [("access", commands.access), ("layout", commands.layout), ("run", commands.run)].iter().filter(|(_, h)| !h).map(|(n, _)| *n).collect();
    if !absent.is_empty() {
        clean = false;
        md.push_str(&format!("**Missing rows:** this heaplab build has no `heaplab {}`; the rows that need it are marked missing below.\n\n", absent.join("`, `heaplab ")));
    }
    for (n, why) in missing {
        md.push_str(&format!("**Workload {n} left out:** {why}.\n\n"));
    }

    // Targets.
    let mut target_md = String::from("## Targets\n\n");
    let mut js_targets = Vec::new();
    // plan: match >= 99% on the same input, region = makespan, peak RSS below the best allocator.
    let (mut plan_match, mut plan_rows, mut plan_rss_wins, mut plan_region_ok) = (0, 0, 0, 0);
    let mut rss_lines = Vec::new();
    for mm in all {
        let Some(p) = mm.cell("plan").filter(|c| c.error.is_none() && c.runtime.report.is_some()) else { continue };
        let r = p.runtime.report.as_ref().expect("filtered");
        plan_rows += 1;
        if r.match_rate >= 0.99 {
            plan_match += 1;
        }
        if p.runtime.layout.as_ref().is_some_and(|f| f.makespan == r.region_bytes && f.region == r.region_bytes) {
            plan_region_ok += 1;
        }
        let plan_rss: Vec<f64> = p.samples.iter().map(|s| s.rss as f64).collect();
        let best = ALLOCATORS
            .iter()
            .filter_map(|a| mm.cell(a).filter(|c| c.error.is_none() && !c.samples.is_empty()).map(|c| (*a, c.samples.iter().map(|s| s.rss as f64).collect::<Vec<_>>())))
            .min_by(|a, b| median(&a.1).total_cmp(&median(&b.1)));
        if let Some((best_name, best_rss)) = best {
            let below = median(&plan_rss) < median(&best_rss);
            let conf = 1.0 - rank_sum(&plan_rss, &best_rss, Alternative::Less).p;
            if below {
                plan_rss_wins += 1;
            }
            rss_lines.push(format!(
                "{} {} MiB vs {best_name} {} MiB ({}{})",
                mm.workload.name,
                mib(median(&plan_rss)),
                mib(median(&best_rss)),
                if below { "below" } else { "not below" },
                format_args!(", {} confidence plan is lower", heaplab_decide::hpt::pct(conf))
            ));
            js_targets.push(json!({"target": "plan peak RSS below the best allocator", "workload": mm.workload.name, "plan_median_rss": median(&plan_rss), "best": best_name, "best_median_rss": median(&best_rss), "below": below, "confidence_lower": conf}));
        }
    }
    target_md.push_str(&format!(
        "- `plan`, same input, match rate ≥ 99%: **{plan_match} of {plan_rows}** workloads. Region = the plan's makespan (report's region_bytes = the layout's highest planned slot end): {plan_region_ok} of {plan_rows}.\n"
    ));
    let need = 6.0 / 10.0;
    target_md.push_str(&format!(
        "- `plan`, peak RSS (median) below the best of glibc, jemalloc, mimalloc, tcmalloc on at least 6 of 10 workloads: **{plan_rss_wins} of {}** ({}). {}.\n",
        rss_lines.len(),
        if rss_lines.is_empty() { "no data" } else if plan_rss_wins as f64 >= need * rss_lines.len() as f64 { "met" } else { "not met" },
        if rss_lines.is_empty() { String::new() } else { rss_lines.join("; ") }
    ));
    // Cache strategies: best <= 0.9 x jemalloc's D1 misses on >= 3 pointer-chasing workloads,
    // for the rows profiled on the small input and (when measured) on the same input.
    let mut cache_summary = Vec::new();
    for (suffix, family) in [("", "profiled on the small input"), (SAME, "profiled on the measured input itself")] {
        if !suffix.is_empty() && !o.own.same {
            continue;
        }
        let (mut wins, mut lines) = (0, Vec::new());
        for mm in all.iter().filter(|m| m.workload.pointer_chasing) {
            let Some(je) = mm.cell("jemalloc").and_then(|c| c.cache) else { continue };
            let d1 = |s: &str| mm.cell(&format!("{s}{suffix}")).and_then(|c| c.cache).map(|x| x.0);
            let best = CACHE_STRATEGIES.iter().filter_map(|s| d1(s).map(|x| (*s, x))).min_by_key(|x| x.1);
            let random = d1("random").map(|x| x as f64 / je.0.max(1) as f64);
            if let Some((s, d)) = best {
                let ratio = d as f64 / je.0.max(1) as f64;
                if ratio <= 0.9 {
                    wins += 1;
                }
                lines.push(format!("{} best {s}{suffix} {ratio:.3}×{}", mm.workload.name, random.map(|r| format!(", random {r:.3}×")).unwrap_or_default()));
                js_targets.push(json!({"target": "best cache strategy D1 <= 0.9x jemalloc", "family": family, "workload": mm.workload.name, "best": format!("{s}{suffix}"), "ratio": ratio, "random_ratio": random, "met": ratio <= 0.9}));
            }
        }
        target_md.push_str(&format!(
            "- Cache strategies {family}: the best has ≤ 0.9× jemalloc's D1 misses on at least 3 pointer-chasing workloads: **{wins} of {}** ({}). Per workload (D1 misses ÷ jemalloc's): {}.\n",
            lines.len(),
            if lines.is_empty() { "no data" } else if wins >= 3 { "met" } else { "not met" },
            if lines.is_empty() { "—".into() } else { lines.join("; ") }
        ));
        cache_summary.push(json!({"family": family, "met_on": wins, "of": lines.len()}));
    }
    target_md.push('\n');

    // Cross-application verdicts (HPT) against the plain run.
    let mut cross = String::from("## Across workloads (HPT against glibc)\n\n| configuration | time | peak RSS |\n|---|---|---|\n");
    for c in configs.iter().skip(1) {
        let cell = |metric: &str| analysis.cell(c.name(), metric).map(|x| x.verdict.cell()).unwrap_or_else(|| "n/a".into());
        let geo = |metric: &str| analysis.summary_speedup(&res, c.name(), metric).map(|g| format!(" [{g:.3}]")).unwrap_or_default();
        cross.push_str(&format!("| {} | {}{} | {}{} |\n", c.name(), cell("time"), geo("time"), cell("rss"), geo("rss")));
    }
    cross.push_str(&format!(
        "\nCells as `heaplab compare` prints them: `r (c%)` at least r times better across workloads with confidence c, MI marginal, PD degradation; \
         in brackets the geometric mean of per-workload median speedups. Workloads used: time {}, peak RSS {} (the others left out as unstable or without a significant difference for some configuration).\n\n",
        analysis.subsets.iter().find(|s| s.metric == "time").map_or(0, |s| s.kept.len()),
        analysis.subsets.iter().find(|s| s.metric == "rss").map_or(0, |s| s.kept.len())
    ));

    // Compact matrices: D1 ratio to jemalloc and RSS ratio to the best allocator.
    let names: Vec<&str> = configs.iter().map(Config::name).collect();
    let mut d1 = format!("## D1 misses ÷ jemalloc's\n\n| workload | {} |\n|---|{}\n", names.join(" | "), "---|".repeat(names.len()));
    for mm in all {
        let je = mm.cell("jemalloc").and_then(|c| c.cache).map(|x| x.0);
        let row: Vec<String> = names.iter().map(|n| match (mm.cell(n).and_then(|c| c.cache), je) { (Some(x), Some(j)) if j > 0 => format!("{:.3}", x.0 as f64 / j as f64), _ => "—".into() }).collect();
        d1.push_str(&format!("| {} | {} |\n", mm.workload.name, row.join(" | ")));
    }
    d1.push('\n');

    // Per-workload tables.
    let mut per = String::from("## Per workload\n\n");
    let mut js_files: Vec<(String, Value)> = Vec::new();
    for mm in all {
        let w = &mm.workload;
        per.push_str(&format!("### {}\n\nProfiled: `{}` ({}). Measured: `{}` ({}).\n\n", w.name, w.command(&w.small), w.small.what, w.command(&w.large), w.large.what));
        if mm.plain.is_none() {
            per.push_str("No run completed.\n\n");
        }
        per.push_str("| configuration | match | fallback | entries | wall ms | peak RSS MiB | vs glibc (time) | D1 misses | ×je | LL misses | note |\n|---|---|---|---|---|---|---|---|---|---|---|\n");
        let je = mm.cell("jemalloc").and_then(|c| c.cache).map(|x| x.0);
        let mut js_cells = Vec::new();
        for (name, cell) in &mm.cells {
            let walls: Vec<f64> = cell.samples.iter().map(|s| s.wall).collect();
            let rss: Vec<f64> = cell.samples.iter().map(|s| s.rss as f64).collect();
            let (mat, fb) = match &cell.runtime.report {
                Some(r) => (format!("{:.2}%", 100.0 * r.match_rate), grouped(r.common.fallback_count)),
                None => ("—".into(), "—".into()),
            };
            let entries = cell.runtime.layout.as_ref().map(|f| grouped(f.entries)).unwrap_or_else(|| "—".into());
            let verdict = analysis.in_app.iter().find(|x| x.configuration == *name && x.workload == w.name && x.metric == "time").map(|x| match x.verdict {
                InAppVerdict::Better => format!("faster {:.3}×", x.speedup),
                InAppVerdict::Worse => format!("slower {:.3}×", x.speedup),
                InAppVerdict::Unclear => format!("no difference ({:.3}×)", x.speedup),
            });
            let verdict = if name == "glibc" { "reference".to_string() } else { verdict.unwrap_or_else(|| "—".into()) };
            let (d1c, ratio, ll) = match cell.cache {
                Some((d, l, _)) => (grouped(d), je.filter(|j| *j > 0).map(|j| format!("{:.3}", d as f64 / j as f64)).unwrap_or_else(|| "—".into()), grouped(l)),
                None => ("—".into(), "—".into(), "—".into()),
            };
            let note = match &cell.error {
                Some(e) => {
                    clean = false;
                    format!("**missing: {}**", e.replace('|', "/"))
                }
                None => cell.runtime.report.as_ref().and_then(|r| r.first_mismatch.as_ref()).map(|f| format!("first mismatch #{} ({})", f.ordinal, f.reason.replace('_', " "))).unwrap_or_default(),
            };
            per.push_str(&format!(
                "| {name} | {mat} | {fb} | {entries} | {} | {} | {verdict} | {d1c} | {ratio} | {ll} | {note} |\n",
                spread(&walls, 1000.0, 1),
                spread(&rss, 1.0 / 1048576.0, 1)
            ));
            js_cells.push(json!({
                "configuration": name,
                "error": cell.error,
                "wall_seconds": walls,
                "peak_rss_bytes": rss,
                "wall_median": (!walls.is_empty()).then(|| median(&walls)),
                "wall_quartiles": (!walls.is_empty()).then(|| [quantile(&walls, 0.25), quantile(&walls, 0.75)]),
                "rss_median": (!rss.is_empty()).then(|| median(&rss)),
                "rss_quartiles": (!rss.is_empty()).then(|| [quantile(&rss, 0.25), quantile(&rss, 0.75)]),
                "cachegrind": cell.cache.map(|(d, l, r)| json!({"d1_misses": d, "ll_data_misses": l, "data_refs": r, "seconds": cell.cache_seconds})),
                "layout": cell.runtime.layout.as_ref().map(|f| json!({"entries": f.entries, "planned": f.planned, "contexts": f.contexts, "region": f.region, "makespan": f.makespan, "max_load": f.max_load})),
                "report": cell.runtime.report_json,
            }));
        }
        if let Some(f) = mm.cell("plan").and_then(|c| c.runtime.layout.as_ref()) {
            per.push_str(&format!(
                "\n`plan` layout: {} entries, {} planned; region {} bytes = makespan {} bytes; max load {} bytes ({:.2}% above it).\n",
                grouped(f.entries),
                grouped(f.planned),
                grouped(f.region),
                grouped(f.makespan),
                grouped(f.max_load),
                if f.max_load > 0 { 100.0 * (f.makespan as f64 - f.max_load as f64) / f.max_load as f64 } else { 0.0 }
            ));
        }
        let steps: Vec<String> = mm.prepared.steps.iter().map(|(n, s)| format!("{n} {s:.1} s")).collect();
        if !steps.is_empty() {
            per.push_str(&format!("\nPreparation (wall): {}.\n", steps.join(", ")));
        }
        per.push('\n');
        js_files.push((
            w.name.clone(),
            json!({
                "workload": w.name, "pointer_chasing": w.pointer_chasing,
                "profiled": {"command": w.command(&w.small), "what": w.small.what, "cwd": shown(&w.small.cwd)},
                "measured": {"command": w.command(&w.large), "what": w.large.what, "cwd": shown(&w.large.cwd)},
                "preparation_seconds": mm.prepared.steps.iter().map(|(n, s)| json!({"step": n, "seconds": s})).collect::<Vec<_>>(),
                "configurations": js_cells,
            }),
        ));
    }

    let mut paper = String::from(
        "## libstaticmalloc's published results\n\nQuoted from Lee, *Cache-conscious memory allocation* (2004 thesis; \
         `../shared/papers/002_38cb54be89fda791.txt`, section 5.2), measured on a 2.4 GHz Pentium 4 Xeon (8 KB L1, 512 KB L2, 2 MB L3), \
         FreeBSD 4.8, best of ≥ 1,000 runs; programs annotated with `ccmalloc()`. Italics: the thesis' best.\n\n\
         Table 5.1, best times in seconds, and Table 5.2, time ratio to Simple:\n\n\
         | strategy | cover 100×100 | cover 300×300 | cover 500×500 | hp 4×3 | traverse 16,10 | ratio: cover 100 | cover 300 | cover 500 | hp | traverse |\n\
         |---|---|---|---|---|---|---|---|---|---|---|\n",
    );
    for (s, t, r) in PAPER_TIMES {
        paper.push_str(&format!("| {s} | {} | {} |\n", t.join(" | "), r.join(" | ")));
    }
    paper.push_str(
        "\nTable 5.3, cover on 300×300 under cachegrind (8 KB 4-way L1D, 32-byte lines; 512 KB 8-way L2):\n\n\
         | strategy | data refs | L1 data misses | L1 miss rate | L2 data misses | L2 miss rate |\n|---|---|---|---|---|---|\n",
    );
    for (s, a, b, c, d, e) in PAPER_CACHE {
        paper.push_str(&format!("| {s} | {a} | {b} | {c} | {d} | {e} |\n"));
    }
    paper.push_str(
        "\nThe thesis' strategies differ from each other by at most 0.5% in L1 misses except Random (+17%) and Oneperline (+11%) on cover; \
         Random was up to 2.63× slower than Simple. Here the reference is jemalloc (a real allocator) rather than Simple.\n",
    );

    md.push_str(&target_md);
    md.push_str(&cross);
    md.push_str(&d1);
    md.push_str(&per);
    md.push_str(&paper);

    js_files.push(("compare".into(), res.to_json(analysis.to_json())));
    js_files.push((
        "summary".into(),
        json!({
            "machine": {"cpu": m.cpu, "cores": m.cores, "os": m.os, "kernel": m.kernel},
            "commit": commit, "runs": o.runs, "quick": o.quick, "seconds": seconds,
            "cache_geometry": CACHE_GEOMETRY, "fallback_of_cache_strategies": o.own.fallback, "stack_depth": o.own.stack_depth,
            "configurations": configs.iter().map(|c| json!({"name": c.name(), "description": c.describe(o.own.stack_depth)})).collect::<Vec<_>>(),
            "missing_workloads": missing.iter().map(|(n, w)| json!({"workload": n, "why": w})).collect::<Vec<_>>(),
            "missing_commands": absent,
            "targets": js_targets,
            "targets_summary": {"plan_match_99": [plan_match, plan_rows], "plan_region_is_makespan": [plan_region_ok, plan_rows], "plan_rss_below_best": [plan_rss_wins, rss_lines.len()], "cache_best_le_0_9_jemalloc": cache_summary},
        }),
    ));
    (md, js_files, clean)
}

#[cfg(test)]
mod tests {
    use super::*;
    use heaplab_decide::runner::Cachegrind;

    #[test]
    fn picks_the_programs_cachegrind_file() {
        let heaplab = Cachegrind::parse("desc: I1 cache: 32768 B\ncmd: /repo/target/release/heaplab run --layout x -- /usr/bin/jq -c .\nevents: Ir Dr D1mr DLmr Dw D1mw DLmw\nsummary: 100 40 9 2 20 3 1\n").unwrap();
        let jq = Cachegrind::parse("cmd: /usr/bin/jq -c . records.json\nevents: Ir Dr D1mr DLmr Dw D1mw DLmw\nsummary: 1000 400 90 20 200 30 10\n").unwrap();
        let files = [heaplab, jq];
        let f = pick_cachegrind(&files, Path::new("/usr/bin/jq")).unwrap();
        assert_eq!((f.d1_misses(), f.ll_data_misses(), f.get("Dr").unwrap() + f.get("Dw").unwrap()), (Ok(120), Ok(30), 600));
        assert!(pick_cachegrind(&files, Path::new("/usr/bin/xmllint")).unwrap_err().contains("no file for xmllint"));
        assert!(pick_cachegrind(&[files[1].clone(), files[1].clone()], Path::new("/usr/bin/jq")).unwrap_err().contains("more than one"));
    }

    #[test]
    fn reads_a_run_report() {
        let dir = std::env::temp_dir().join(format!("heaplab-apply-bench-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("r.json");
        let report = json!({
            "strategy": "plan", "layout": "x.hllayout", "error": null, "region_bytes": 4096, "stack_depth": 0, "contexts": 1, "entries": 10,
            "allocations": 12, "planned": 10, "planned_bytes": 640,
            "fallback": {"count": 2, "bytes": 64, "unplanned": 0, "size_mismatch": 1, "beyond_layout": 1, "unknown_context": 0, "busy": 0, "misaligned": 0},
            "first_mismatch": {"reason": "size_mismatch", "ordinal": 3, "context": 0, "expected_size": 32, "size": 48},
            "match_rate": 10.0 / 12.0, "frees_region": 10, "stray_frees": 0, "peak_rss_bytes": 2097152, "end": "exit",
            "wall_seconds": 0.25, "exit_status": {"code": 0, "signal": null}, "command": ["prog"],
        });
        std::fs::write(&p, report.to_string()).unwrap();
        let (r, v) = read_report(&p).unwrap();
        assert_eq!((r.planned, r.allocations, r.common.fallback_count, r.common.peak_rss_bytes, r.common.wall_seconds), (10, 12, 2, 2097152, 0.25));
        assert_eq!(r.first_mismatch.as_ref().map(|m| (m.ordinal, m.size)), Some((3, 48)));
        assert_eq!(v["region_bytes"], 4096);
        std::fs::write(&p, "{\"strategy\": \"plan\"}").unwrap();
        assert!(read_report(&p).is_err());
        std::fs::write(&p, "not json").unwrap();
        assert!(read_report(&p).unwrap_err().contains("not JSON"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn analyzer_prefix_ends_with_an_end_line() {
        let text = "START: 15\nST: a 22\nLD: b 23\nSTART: 30\nLD: c 31\nSTART: 40\nST: d 41\nEND: 3 41\n";
        assert_eq!(analyzer_prefix(text, 4), "START: 15\nST: a 22\nLD: b 23\nSTART: 30\nLD: c 31\nEND: 2 31\n");
        assert_eq!(analyzer_prefix(text, 100), "START: 15\nST: a 22\nLD: b 23\nSTART: 30\nLD: c 31\nSTART: 40\nST: d 41\nEND: 3 41\n");
    }

    #[test]
    fn spreads_and_fingerprints() {
        assert_eq!(spread(&[0.05, 0.01, 0.03, 0.02, 0.04], 1000.0, 1), "30.0 [20.0–40.0]");
        assert_eq!(spread(&[], 1.0, 0), "—");
        let p = std::env::temp_dir().join(format!("heaplab-apply-fp-{}", std::process::id()));
        std::fs::write(&p, b"a").unwrap();
        // FNV-1a 64 of "a".
        assert_eq!(fingerprint(&p).unwrap(), (0xaf63dc4c8601ec8c, 1));
        std::fs::remove_file(&p).unwrap();
    }
}
