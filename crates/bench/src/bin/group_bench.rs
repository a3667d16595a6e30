//! `heaplab-bench-group`: HALO-style grouping (`heaplab group`, `heaplab run --groups`) measured
//! against the general allocators, behind `make bench-group`.
//!
//! For each workload (the pointer-chasing programs of `../shared/workloads/` and Debian programs
//! on generated inputs, the same set as the apply bench) it profiles the small input (`heaplab
//! access --contexts --graph contexts`), groups the profile (`heaplab group`, its defaults: HALO's) and
//! measures the large input under glibc, jemalloc, mimalloc and tcmalloc (LD_PRELOAD) and grouped
//! (`heaplab run --groups`, fallback jemalloc as HALO's baseline): wall time and peak RSS over
//! repeated interleaved runs (the first discarded, median and quartiles of the rest), simulated
//! D1 and LL data misses (one run under cachegrind), the runtime's grouped share and the grouped
//! heap's fragmentation at its peak (HALO's table 1). Every run's output is compared with the
//! plain run's. Results: `group-results.md`, `group-results.json` and the chart
//! `group/against-jemalloc.svg` (HALO's figures 13 and 14 in one).

#[path = "../programs.rs"]
mod programs;

use heaplab_decide::ranktest::{holm_adjusted, rank_sum, Alternative};
use heaplab_study::measure::RssMethod;
use heaplab_study::stats::median;
use heaplab_study::Machine;
use programs::measure::{self, Launch, Progress, Sample};
use programs::*;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::time::Instant;

const USAGE: &str = "\
heaplab-bench-group — HALO-style grouping against glibc, jemalloc, mimalloc, tcmalloc

Usage: heaplab-bench-group [OPTIONS]      (run from the repository root; `make bench-group` does)
  --heaplab PATH       heaplab binary [default: target/release/heaplab]
  --out DIR            where group-results.md/json and group/ go [default: bench; quick: out/bench-group-quick]
  --work DIR           builds, inputs, profiles, groups [default: target/bench-group]
  --shared DIR         the shared folder (workloads/ is read there) [default: ../shared]
  --runs N             runs per workload and configuration, the first discarded [default: 11; quick: 4]
  --only W,W           these workloads only
  --no-cachegrind      skip the cachegrind runs (no D1/LL columns, no miss targets)
  --quick              development mode: health, treeadd and jq, 4 runs (also HEAPLAB_BENCH_GROUP_QUICK=1)
  --group-args 'ARGS'  extra arguments for `heaplab group`, e.g. '--whole-call-sites --merge-tolerance 1'
                       (a variant: give it its own --out) [default: none, heaplab group's defaults]
  -h, --help           this help

Exit status: 0 when every row was measured with outputs identical to the plain run, 1 when a row
failed or is missing (the results say which), 2 on bad usage.";

/// The general allocators, by `heaplab_replay` name, glibc (the plain run) first.
const ALLOCATORS: [&str; 4] = ["glibc", "jemalloc", "mimalloc", "tcmalloc"];

/// The grouped configuration's name in the tables.
const GROUPED: &str = "grouped";

/// HALO's fallback and baseline.
const BASELINE: &str = "jemalloc";

/// HALO's table 1 (fragmentation of grouped objects at peak memory use): benchmark, %, bytes.
const HALO_FRAGMENTATION: [(&str, &str, &str); 9] = [
    ("health", "0.01%", "31.98 KiB"),
    ("equake", "0.05%", "12.08 KiB"),
    ("analyzer", "0.13%", "4.31 KiB"),
    ("ammp", "0.20%", "40.97 KiB"),
    ("art", "0.62%", "11.70 KiB"),
    ("ft", "2.06%", "4.05 KiB"),
    ("povray", "26.47%", "37.06 KiB"),
    ("roms", "93.60%", "29.95 KiB"),
    ("leela", "99.99%", "2.05 MiB"),
];

/// Measured inputs of the shared programs for this bench, larger than the apply bench's (which
/// keeps runs of tens of milliseconds): grouping pays a stack walk per small allocation up front
/// and gains only while the grouped objects are used, so runs of a few milliseconds measure
/// start-up and identification rather than layout. HALO measured on ref inputs. These run
/// 0.1 to 0.6 s here under glibc (cachegrind about 50 times that). treeadd stays at 19 levels:
/// at 20 its tree (32 MiB of nodes) sits right at the simulated LL size, where the grouped
/// chunks' bitmaps alone tip it from fitting to thrashing.
const GROUP_LARGE: [(&str, &str); 5] = [("health", "9 40 1"), ("treeadd", "19"), ("perimeter", "10"), ("bisort", "300000"), ("ft", "1000 30000")];

fn die(m: &str) -> ! {
    programs::die_as("group", m)
}

/// The command line; the bench's own option: extra arguments for `heaplab group` (empty: `heaplab group`'s defaults).
type Opts = programs::Opts<Vec<String>>;

/// A configuration measured: an allocator by LD_PRELOAD (glibc: none), or grouped.
#[derive(Clone, Debug)]
struct Config {
    name: String,
    library: Option<PathBuf>,
    grouped: bool,
}

fn configs() -> Vec<Config> {
    let mut c: Vec<Config> = ALLOCATORS
        .iter()
        .map(|a| {
            let r = heaplab_replay::resolve(a).unwrap_or_else(|e| die(&format!("allocator {a}: {} (make study-deps installs it)", e.0)));
            Config { name: a.to_string(), library: r.library, grouped: false }
        })
        .collect();
    c.push(Config { name: GROUPED.into(), library: None, grouped: true });
    c
}

/// What profiling and grouping a workload made.
#[derive(Default)]
struct Prepared {
    /// The groups file, or why there is none.
    groups: Option<Result<PathBuf, String>>,
    /// `heaplab group-info --json` of it.
    info: Value,
    /// Step → wall seconds.
    steps: Vec<(String, f64)>,
}

fn prepare(o: &Opts, w: &Workload) -> Prepared {
    let dir = std::path::absolute(o.work.join(&w.name).join("profile")).unwrap_or_else(|_| o.work.join(&w.name).join("profile"));
    let _ = std::fs::create_dir_all(&dir);
    let p = |f: &str| dir.join(f).display().to_string();
    let mut prep = Prepared::default();
    let mut access = strs(&["access", "--contexts", "--graph", "contexts", "-o", &p("small.hlaccess"), "--"]);
    access.push(w.exe.display().to_string());
    access.extend(w.small.args.iter().cloned());
    eprintln!("  access small");
    let r = heaplab(&o.heaplab, &access, &w.small.cwd, w.small.stdin.as_deref(), &w.env).and_then(|s| {
        prep.steps.push(("access (small input)".into(), s));
        eprintln!("  group");
        heaplab(&o.heaplab, &[strs(&["group", &p("small.hlaccess"), "-o", &p("groups.hlgroups")]), o.own.clone()].concat(), &dir, None, &[])
    });
    prep.groups = Some(r.map(|s| {
        prep.steps.push(("group".into(), s));
        dir.join("groups.hlgroups")
    }));
    if let Some(Ok(g)) = &prep.groups {
        let out = std::process::Command::new(&o.heaplab).args(["group-info", &g.display().to_string(), "--json"]).stdin(std::process::Stdio::null()).output();
        if let Some(out) = out.ok().filter(|x| x.status.success()) {
            prep.info = serde_json::from_slice(&out.stdout).map(trim_info).unwrap_or(Value::Null);
        }
    }
    prep
}

/// Edges, grouped contexts and misclassified contexts of a workload kept in the results file
/// (all are in its `.hlgroups`).
const LISTED: usize = 50;

/// `group-info --json` with only the most accessed grouped contexts, the heaviest edges and the
/// first misclassified contexts: an interpreter's profile has thousands of deep contexts, which
/// would make the results file tens of megabytes while the groups are what it is read for.
fn trim_info(mut info: Value) -> Value {
    if let Some(list) = info.get_mut("context_list").and_then(Value::as_array_mut) {
        list.retain(|c| !c["group"].is_null());
        list.sort_by_key(|c| std::cmp::Reverse(c["accesses"].as_u64().unwrap_or(0)));
        list.truncate(LISTED);
    }
    for key in ["edge_list", "misclassified"] {
        if let Some(list) = info.get_mut(key).and_then(Value::as_array_mut) {
            list.truncate(LISTED);
        }
    }
    info
}

/// Everything measured for one workload under one configuration: for the grouped one, the
/// runtime's report of the last run.
type Cell = measure::Cell<Value>;

/// How configuration `c` runs the workload.
fn launch<'a>(o: &'a Opts, c: &Config, groups: Option<&'a Path>) -> Launch<'a> {
    if c.grouped {
        Launch::HeaplabRun { heaplab: &o.heaplab, option: "--groups", file: groups, fallback: BASELINE }
    } else {
        Launch::Preload(c.library.clone())
    }
}

/// A number in the runtime's report at a JSON pointer.
fn num(v: &Value, pointer: &str) -> Option<f64> {
    v.pointer(pointer).and_then(Value::as_f64)
}

/// Runs a workload's large input once under `c`: the sample, its output's fingerprint, and the
/// grouped runtime's report.
fn measure_once(o: &Opts, w: &Workload, c: &Config, groups: Option<&Path>, scratch: &Path) -> Result<(Sample, Fingerprint, Option<Value>), String> {
    let (run, fp, report) = measure::measure_once(w, &launch(o, c, groups), &c.name, scratch)?;
    if !c.grouped {
        return Ok((Sample { wall: run.wall, rss: run.peak(RssMethod::Rusage) }, fp, None));
    }
    // The runtime's own figures: heaplab's start-up and its check of the groups are not counted.
    let text = std::fs::read_to_string(&report).map_err(|e| format!("{}: {e}", report.display()))?;
    let v: Value = serde_json::from_str(&text).map_err(|e| format!("{}: {e}", report.display()))?;
    let wall = num(&v, "/wall_seconds").ok_or_else(|| format!("{}: no wall_seconds", report.display()))?;
    let rss = num(&v, "/peak_rss_bytes").ok_or_else(|| format!("{}: no peak_rss_bytes", report.display()))? as u64;
    Ok((Sample { wall, rss }, fp, Some(v)))
}

/// One run under cachegrind: the misses, seconds and output fingerprint. Grouped, the runtime's
/// report of that run must show about as many objects grouped as the `measured` runs did, or the
/// row fails.
fn cachegrind_once(o: &Opts, w: &Workload, c: &Config, groups: Option<&Path>, scratch: &Path, cg: &CachegrindTool, measured: &Value) -> Result<(Misses, f64, Fingerprint), String> {
    let (m, secs, fp, report) = measure::cachegrind_once(w, &launch(o, c, groups), &c.name, scratch, cg)?;
    if c.grouped {
        let rep: Value = std::fs::read_to_string(&report).ok().and_then(|t| serde_json::from_str(&t).ok()).unwrap_or(Value::Null);
        if let (Some(a), Some(b)) = (num(&rep, "/grouped/count"), num(measured, "/grouped/count")) {
            if (a - b).abs() > 0.02 * b.max(1.0) {
                return Err(format!("grouped {a} objects under cachegrind, {b} in the measured runs"));
            }
        }
    }
    Ok((m, secs, fp))
}

struct Measured {
    workload: Workload,
    prepared: Prepared,
    cells: Vec<(String, Cell)>,
}

impl Measured {
    fn cell(&self, c: &str) -> Option<&Cell> {
        self.cells.iter().find(|(n, _)| n == c).map(|(_, c)| c).filter(|c| c.error.is_none())
    }
    fn times(&self, c: &str) -> Vec<f64> {
        self.cell(c).map(|c| c.samples.iter().map(|s| s.wall).collect()).unwrap_or_default()
    }
    fn rss(&self, c: &str) -> Vec<f64> {
        self.cell(c).map(|c| c.samples.iter().map(|s| s.rss as f64).collect()).unwrap_or_default()
    }
    fn d1(&self, c: &str) -> Option<u64> {
        self.cell(c).and_then(|c| c.cache).map(|m| m.0)
    }
}

#[allow(clippy::too_many_arguments)]
fn measure_workload(o: &Opts, w: &Workload, prepared: Prepared, configs: &[Config], cg: Option<&CachegrindTool>, k: usize, n: usize, t0: Instant) -> Measured {
    let scratch = std::path::absolute(o.work.join(&w.name).join("runs")).unwrap_or_else(|_| o.work.join(&w.name).join("runs"));
    let _ = std::fs::create_dir_all(&scratch);
    let groups: Option<PathBuf> = prepared.groups.as_ref().and_then(|r| r.as_ref().ok().cloned());
    let mut cells: Vec<Cell> = configs
        .iter()
        .map(|c| {
            let mut cell = Cell::default();
            if c.grouped {
                match &prepared.groups {
                    Some(Err(e)) => cell.error = Some(e.clone()),
                    None => cell.error = Some("not prepared".into()),
                    _ => {}
                }
            }
            cell
        })
        .collect();
    let names: Vec<String> = configs.iter().map(|c| c.name.clone()).collect();
    let at = Progress { name: &w.name, k, n, t0 };
    let groups = groups.as_deref();
    measure::measure_cells(
        &at,
        o.runs,
        &names,
        &mut cells,
        |i| measure_once(o, w, &configs[i], groups, &scratch),
        |report, v| *report = v,
        cg.map(|cg| |i: usize, cell: &Cell| cachegrind_once(o, w, &configs[i], groups, &scratch, cg, &cell.runtime)),
    );
    Measured { workload: w.clone(), prepared, cells: names.into_iter().zip(cells).collect() }
}

/// A p-value for the tables: three decimals, or "< 0.001".
fn p_value(p: f64) -> String {
    if p < 0.001 {
        "< 0.001".into()
    } else {
        format!("{p:.3}")
    }
}

/// Relative change of `x` against `base`, as a percentage (negative: fewer, faster).
fn change(x: f64, base: f64) -> f64 {
    100.0 * (x / base - 1.0)
}

/// The chart: per workload, the grouped run's change in D1 misses and in time against jemalloc
/// (HALO's figures 13 and 14 show the reductions; bars below zero here are improvements).
fn chart(rows: &[(String, Option<f64>, Option<f64>)]) -> String {
    let (w, h, left, top, bottom) = (90.0 * rows.len().max(1) as f64 + 120.0, 360.0, 70.0, 50.0, 90.0);
    let vals: Vec<f64> = rows.iter().flat_map(|r| [r.1, r.2]).flatten().collect();
    let lo = vals.iter().cloned().fold(-5.0f64, f64::min).floor();
    let hi = vals.iter().cloned().fold(5.0f64, f64::max).ceil();
    let y = |v: f64| top + (hi - v) / (hi - lo) * (h - top - bottom);
    let mut s = format!("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n");
    s += &format!("<text x=\"{left}\" y=\"20\" font-size=\"15\">Grouped (heaplab run --groups) against jemalloc</text>\n<text x=\"{left}\" y=\"38\" fill=\"#555\">change in simulated D1 misses and in median wall time; below 0 is better</text>\n");
    let step = ((hi - lo) / 8.0).max(1.0).ceil();
    let mut t = (lo / step).ceil() * step;
    while t <= hi {
        s += &format!("<line x1=\"{left}\" x2=\"{}\" y1=\"{:.1}\" y2=\"{:.1}\" stroke=\"{}\"/>\n<text x=\"{}\" y=\"{:.1}\" text-anchor=\"end\">{t:.0}%</text>\n", w - 20.0, y(t), y(t), if t == 0.0 { "#000" } else { "#ddd" }, left - 6.0, y(t) + 4.0);
        t += step;
    }
    for (i, (name, d1, time)) in rows.iter().enumerate() {
        let x0 = left + 20.0 + 90.0 * i as f64;
        for (j, (v, colour)) in [(d1, "#3b6fb6"), (time, "#e08a2c")].iter().enumerate() {
            if let Some(v) = v {
                let (a, b) = (y(0.0), y(*v));
                s += &format!("<rect x=\"{:.1}\" y=\"{:.1}\" width=\"28\" height=\"{:.1}\" fill=\"{colour}\"><title>{name}: {v:+.1}%</title></rect>\n", x0 + 30.0 * j as f64, a.min(b), (a - b).abs().max(0.5));
            }
        }
        s += &format!("<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\" transform=\"rotate(-40 {:.1} {:.1})\">{name}</text>\n", x0 + 30.0, h - bottom + 16.0, x0 + 30.0, h - bottom + 16.0);
    }
    let ly = h - 18.0;
    s += &format!("<rect x=\"{left}\" y=\"{}\" width=\"12\" height=\"12\" fill=\"#3b6fb6\"/><text x=\"{}\" y=\"{}\">D1 misses</text>\n", ly - 10.0, left + 16.0, ly);
    s += &format!("<rect x=\"{}\" y=\"{}\" width=\"12\" height=\"12\" fill=\"#e08a2c\"/><text x=\"{}\" y=\"{}\">wall time</text>\n</svg>\n", left + 110.0, ly - 10.0, left + 126.0, ly);
    s
}

/// A count with thousands separators.
fn count(n: u64) -> String {
    heaplab_model::units::grouped(n)
}

fn kib(b: f64) -> String {
    format!("{:.2} KiB", b / 1024.0)
}

fn main() {
    let o = Opts::parse("group", USAGE, Vec::new(), |own, a, val| {
        if a != "--group-args" {
            return false;
        }
        *own = val("--group-args").split_whitespace().map(String::from).collect();
        true
    });
    isolate_env();
    let t0 = Instant::now();
    let commit = measured_commit();
    if !o.heaplab.is_file() {
        die(&format!("{}: no heaplab binary (cargo build --release -p heaplab-cli)", o.heaplab.display()));
    }
    for cmd in ["access", "group", "run"] {
        if !has_command(&o.heaplab, cmd) {
            die(&format!("{}: this heaplab has no `{cmd}` command", o.heaplab.display()));
        }
    }
    let cg = if o.cachegrind { Some(find_cachegrind().unwrap_or_else(|e| die(&e))) } else { None };
    let wanted = |n: &str| if o.only.is_empty() { !o.quick || ["health", "treeadd", "jq"].contains(&n) } else { o.only.iter().any(|x| x == n) };
    let (mut ws, missing) = workloads(&o.work, &o.shared, wanted);
    for w in &mut ws {
        if let Some((_, spec)) = GROUP_LARGE.iter().find(|(n, _)| *n == w.name) {
            w.large.args = spec.split_whitespace().map(String::from).collect();
            w.large.what = spec.to_string();
        }
    }
    for (n, why) in &missing {
        eprintln!("heaplab-bench-group: workload {n} left out: {why}");
    }
    if ws.is_empty() {
        die("no workload to measure");
    }
    let configs = configs();
    let mut all = Vec::new();
    for (k, w) in ws.iter().enumerate() {
        eprintln!("[{}/{}] {} ({:.0} s so far): profiling {}", k + 1, ws.len(), w.name, t0.elapsed().as_secs_f64(), w.small.what);
        let prepared = prepare(&o, w);
        all.push(measure_workload(&o, w, prepared, &configs, cg.as_ref(), k, ws.len(), t0));
    }
    let (md, js, svg, clean) = summary(&o, &commit, &all, &missing, &configs, t0.elapsed().as_secs_f64());
    let dir = o.out.join("group");
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| die(&format!("{}: {e}", dir.display())));
    let write = |p: PathBuf, text: &str| std::fs::write(&p, text).unwrap_or_else(|e| die(&format!("{}: {e}", p.display())));
    write(dir.join("against-jemalloc.svg"), &svg);
    write(o.out.join("group-results.json"), &(serde_json::to_string_pretty(&js).expect("plain JSON") + "\n"));
    write(o.out.join("group-results.md"), &md);
    print!("{md}");
    eprintln!("wrote {} in {:.0} s", o.out.join("group-results.md").display(), t0.elapsed().as_secs_f64());
    std::process::exit(if clean { 0 } else { 1 });
}

fn summary(o: &Opts, commit: &str, all: &[Measured], missing: &[(String, String)], configs: &[Config], seconds: f64) -> (String, Value, String, bool) {
    let m = Machine::detect();
    let mut clean = missing.is_empty();
    let mut md = String::from("# Grouping heap objects by context (`make bench-group`)\n\n");
    md.push_str(&format!("Machine: {} · {} cores · {} · kernel {}. Commit {commit}. Whole run: {:.0} s{}.\n\n", m.cpu, m.cores, m.os, m.kernel, seconds, if o.quick { " (quick mode)" } else { "" }));
    md.push_str(&format!(
        "Each workload is profiled on its small input (`heaplab access --contexts --graph contexts`), grouped {} and measured on its \
         large input. The large input runs {} times per configuration, interleaved round by round (every other round backwards, each pair starting one configuration further along); the first round is discarded and \
         the other {} give the median and quartiles [q1–q3] of wall time and peak RSS. Allocators are preloaded; *grouped* is `heaplab \
         run --groups G --fallback jemalloc` (HALO's baseline) and takes its figures from that command's report, which are the run \
         launcher's as for the allocators (wall time from its fork of the program to the program's end, without heaplab's own start-up \
         and check of the groups; wait4's peak RSS). D1 and LL are data misses of one run under `valgrind --tool=cachegrind --cache-sim=yes {}` \
         (48 KiB 12-way L1D, 32 MiB 16-way LL, 64-byte lines; the tool binary started directly so that the runtime loads into the \
         program). *Δ vs jemalloc* is the median's change; the time verdict is a one-sided rank-sum test in each direction, its p-value \
         Holm-adjusted over the workloads (the targets speak of every workload at once), faster or slower at 95%. Every run's standard \
         output is compared with the plain (glibc) run's.\n\n",
        if o.own.is_empty() {
            "with `heaplab group`'s defaults (HALO's: coverage 90%, merge tolerance 5%, objects up to 4 KiB, 1 MiB chunks, one spare chunk; heaplab's departures: recursion collapsed by function, where HALO collapses by call site, lopsided groups absorbed, contexts below the coverage cut following their call site's group unless they would dilute it, then in a cold group, where HALO sends them to the fallback)".to_string()
        } else {
            format!("with `heaplab group {}` (otherwise its defaults)", o.own.join(" "))
        },
        o.runs,
        o.runs - 1,
        CACHE_GEOMETRY.join(" ")
    ));
    for (n, why) in missing {
        md.push_str(&format!("**Workload {n} left out:** {why}.\n\n"));
    }
    // Against jemalloc, per workload.
    let mut rows = Vec::new();
    let mut js_rows = Vec::new();
    let mut table = String::from(
        "## Against jemalloc (HALO's figures 13 and 14)\n\n| workload | groups | grouped objects | D1 Δ | time Δ | time verdict | peak RSS Δ | LL Δ |\n|---|---|---|---|---|---|---|---|\n",
    );
    let (mut health_ok, mut d1_wins, mut slower) = (None, Vec::new(), Vec::new());
    // One-sided rank-sum p-values of every workload's times, each direction Holm-adjusted over
    // the workloads: the targets claim "no workload slower" of all of them at once.
    let tested: Vec<Option<(f64, f64)>> = all
        .iter()
        .map(|mm| {
            let (tj, tg) = (mm.times(BASELINE), mm.times(GROUPED));
            (tj.len() >= 3 && tg.len() >= 3).then(|| (rank_sum(&tg, &tj, Alternative::Less).p, rank_sum(&tg, &tj, Alternative::Greater).p))
        })
        .collect();
    let family = |pick: fn(&(f64, f64)) -> f64| -> Vec<Option<f64>> {
        let ps: Vec<f64> = tested.iter().flatten().map(pick).collect();
        let mut adjusted = holm_adjusted(&ps).into_iter();
        tested.iter().map(|t| t.as_ref().and_then(|_| adjusted.next())).collect()
    };
    let (p_faster, p_slower) = (family(|t| t.0), family(|t| t.1));
    let mut unadjusted_slower = Vec::new();
    for (k, mm) in all.iter().enumerate() {
        let name = &mm.workload.name;
        let (tj, tg) = (mm.times(BASELINE), mm.times(GROUPED));
        let d1 = match (mm.d1(GROUPED), mm.d1(BASELINE)) {
            (Some(g), Some(j)) if j > 0 => Some(change(g as f64, j as f64)),
            _ => None,
        };
        let ll = match (mm.cell(GROUPED).and_then(|c| c.cache), mm.cell(BASELINE).and_then(|c| c.cache)) {
            (Some(g), Some(j)) if j.1 > 0 => Some(change(g.1 as f64, j.1 as f64)),
            _ => None,
        };
        let time = (!tj.is_empty() && !tg.is_empty()).then(|| change(median(&tg), median(&tj)));
        let rss = {
            let (a, b) = (mm.rss(GROUPED), mm.rss(BASELINE));
            (!a.is_empty() && !b.is_empty()).then(|| change(median(&a), median(&b)))
        };
        if tested[k].is_some_and(|t| t.1 <= 0.05) {
            unadjusted_slower.push(name.clone());
        }
        let verdict = match (p_faster[k], p_slower[k]) {
            (Some(f), _) if f <= 0.05 => format!("faster (p {})", p_value(f)),
            (_, Some(sl)) if sl <= 0.05 => {
                slower.push(name.clone());
                format!("**slower** (p {})", p_value(sl))
            }
            (Some(f), Some(sl)) => format!("no difference (p {})", p_value(f.min(sl))),
            _ => "—".to_string(),
        };
        let rep = mm.cell(GROUPED).map(|c| &c.runtime).cloned().unwrap_or(Value::Null);
        let (gc, alloc) = (num(&rep, "/grouped/count"), num(&rep, "/allocations"));
        let groups = mm.prepared.info.pointer("/groups").and_then(Value::as_array).map(|g| g.len());
        let pct = |v: Option<f64>| v.map(|x| format!("{x:+.1}%")).unwrap_or_else(|| "—".into());
        table.push_str(&format!(
            "| {name} | {} | {} | {} | {} | {verdict} | {} | {} |\n",
            groups.map(|g| g.to_string()).unwrap_or_else(|| "—".into()),
            match (gc, alloc) {
                (Some(g), Some(a)) if a > 0.0 => format!("{} of {} ({:.0}%)", count(g as u64), count(a as u64), 100.0 * g / a),
                _ if rep["allocator_loaded"] == Value::Bool(false) && rep["declined_groups"].as_array().is_some_and(|d| !d.is_empty()) => {
                    format!("none: {BASELINE} lays them out alike, so ran on it alone")
                }
                _ if rep["allocator_loaded"] == Value::Bool(false) => format!("none: ran on {BASELINE} alone"),
                _ => "—".into(),
            },
            pct(d1),
            pct(time),
            pct(rss),
            pct(ll)
        ));
        if name == "health" {
            health_ok = Some((d1, time, verdict.starts_with("faster")));
        } else if mm.workload.pointer_chasing || d1.is_some() {
            if let Some(d) = d1.filter(|d| *d <= -5.0) {
                d1_wins.push(format!("{name} {d:+.1}%"));
            }
        }
        rows.push((name.clone(), d1, time));
        js_rows.push(json!({"workload": name, "groups": groups, "grouped_objects": gc, "allocations": alloc, "d1_change_pct": d1, "time_change_pct": time, "time_verdict": verdict.replace('*', ""), "p_faster_holm": p_faster[k], "p_slower_holm": p_slower[k], "rss_change_pct": rss, "ll_change_pct": ll}));
    }
    table.push('\n');
    // Targets.
    let mut t = String::from("## Targets\n\n");
    let (hd, ht, h_faster) = health_ok.unwrap_or((None, None, false));
    // The time half holds only where the rank-sum test also finds the grouped runs faster: a
    // median 10% lower within the noise is no evidence of a gain.
    let health_met = hd.is_some_and(|d| d <= -20.0) && ht.is_some_and(|x| x <= -10.0) && h_faster;
    t.push_str(&format!(
        "- health: ≥ 20% fewer D1 misses and ≥ 10% less time than jemalloc (HALO: about 28% less time), the time also faster by the rank-sum test: **{}** (D1 {}, time {}{}).\n",
        if health_met { "met" } else { "not met" },
        hd.map(|x| format!("{x:+.1}%")).unwrap_or_else(|| "—".into()),
        ht.map(|x| format!("{x:+.1}%")).unwrap_or_else(|| "—".into()),
        if h_faster { ", faster" } else { ", within the noise" }
    ));
    t.push_str(&format!("- At least 3 other workloads with ≥ 5% fewer D1 misses: **{}** ({} of them{}).\n", if d1_wins.len() >= 3 { "met" } else { "not met" }, d1_wins.len(), if d1_wins.is_empty() { String::new() } else { format!(": {}", d1_wins.join(", ")) }));
    t.push_str(&format!(
        "- No workload slower than jemalloc beyond the noise (rank-sum, Holm-adjusted over the {} workloads, 95%): **{}**{}{}.\n",
        tested.iter().flatten().count(),
        if slower.is_empty() { "met" } else { "not met" },
        if slower.is_empty() { String::new() } else { format!(" (slower: {})", slower.join(", ")) },
        if unadjusted_slower.is_empty() { String::new() } else { format!("; tested alone at 95%, without the adjustment: {}", unadjusted_slower.join(", ")) }
    ));
    t.push_str("- Identification cost per allocation: see `group-runtime-results.md` (`make bench-group-runtime`).\n\n");
    // Fragmentation, HALO's table 1.
    let mut frag = String::from("## Fragmentation of the grouped heap at its peak (HALO's table 1)\n\n| workload | resident grouped | live grouped | fragmentation | HALO |\n|---|---|---|---|---|\n");
    for mm in all {
        let rep = mm.cell(GROUPED).map(|c| &c.runtime).cloned().unwrap_or(Value::Null);
        let (res, live) = (num(&rep, "/fragmentation/peak_resident_bytes"), num(&rep, "/fragmentation/live_bytes"));
        let halo = HALO_FRAGMENTATION.iter().find(|h| h.0 == mm.workload.name).map(|h| format!("{} ({})", h.1, h.2)).unwrap_or_else(|| "—".into());
        match (res, live) {
            (Some(r), Some(l)) if r > 0.0 => frag.push_str(&format!("| {} | {} | {} | {:.2}% ({}) | {halo} |\n", mm.workload.name, kib(r), kib(l), 100.0 * (r - l) / r, kib(r - l))),
            _ => frag.push_str(&format!("| {} | — | — | — | {halo} |\n", mm.workload.name)),
        }
    }
    frag.push_str("\nHALO's figures are for its own builds of these programs (SPEC inputs for the others); the rows it has no counterpart for show —.\n\n");
    // Per workload.
    let mut per = String::from("## Per workload\n\n");
    for mm in all {
        let w = &mm.workload;
        per.push_str(&format!("### {}\n\nProfiled: `{}` ({}). Measured: `{}` ({}).", w.name, w.command(&w.small), w.small.what, w.command(&w.large), w.large.what));
        for (s, secs) in &mm.prepared.steps {
            per.push_str(&format!(" {s}: {secs:.1} s."));
        }
        per.push_str("\n\n| configuration | wall ms | peak RSS MiB | D1 misses | ×je | LL misses | note |\n|---|---|---|---|---|---|---|\n");
        let je = mm.d1(BASELINE);
        for c in configs {
            let (_, cell) = mm.cells.iter().find(|(n, _)| *n == c.name).expect("a cell per configuration");
            let times: Vec<f64> = cell.samples.iter().map(|s| s.wall).collect();
            let rss: Vec<f64> = cell.samples.iter().map(|s| s.rss as f64).collect();
            let note = cell.error.clone().unwrap_or_default();
            if cell.error.is_some() {
                clean = false;
            }
            per.push_str(&format!(
                "| {} | {} | {} | {} | {} | {} | {} |\n",
                c.name,
                spread(&times, 1000.0, 1),
                spread(&rss, 1.0 / 1048576.0, 1),
                cell.cache.map(|m| count(m.0)).unwrap_or_else(|| "—".into()),
                match (cell.cache, je) {
                    (Some(m), Some(j)) if j > 0 => format!("{:.3}", m.0 as f64 / j as f64),
                    _ => "—".into(),
                },
                cell.cache.map(|m| count(m.1)).unwrap_or_else(|| "—".into()),
                note
            ));
        }
        per.push('\n');
    }
    md.push_str(&t);
    md.push_str(&table);
    md.push_str("![grouped against jemalloc](group/against-jemalloc.svg)\n\n");
    md.push_str(
        "HALO's published figures (Savage and Jones, CGO 2020, §5.2, on an Intel Xeon W-2195 with hardware counters): up to 23% fewer \
         L1 data-cache misses and up to 28% less time than jemalloc 5.1 (health, where hot-data-stream co-allocation reached about 21%); \
         about 4% faster on omnetpp and 16% on xalanc; 5–15% fewer misses with unchanged time on povray and leela; no effect on most \
         other SPEC CPU2017 programs.\n\n",
    );
    md.push_str(&frag);
    md.push_str(&per);
    let js = json!({"machine": {"cpu": m.cpu, "cores": m.cores, "os": m.os, "kernel": m.kernel}, "commit": commit, "runs": o.runs, "seconds": seconds,
        "workloads": js_rows, "missing": missing.iter().map(|(n, w)| json!({"workload": n, "why": w})).collect::<Vec<_>>(),
        "targets": {"health": {"d1_change_pct": hd, "time_change_pct": ht, "met": health_met}, "other_d1_wins": d1_wins, "slower_than_jemalloc": slower},
        "cells": all.iter().map(|mm| json!({"workload": mm.workload.name, "configurations": mm.cells.iter().map(|(n, c)| json!({
            "name": n, "wall_seconds": c.samples.iter().map(|s| s.wall).collect::<Vec<_>>(), "peak_rss_bytes": c.samples.iter().map(|s| s.rss).collect::<Vec<_>>(),
            "d1_misses": c.cache.map(|m| m.0), "ll_data_misses": c.cache.map(|m| m.1), "data_refs": c.cache.map(|m| m.2), "error": c.error, "report": c.runtime})).collect::<Vec<_>>(),
            "groups": mm.prepared.info})).collect::<Vec<_>>()});
    (md, js, chart(&rows), clean)
}
