//! `heaplab-bench-decide`: the thesis' CPython allocator study reproduced (`heaplab compare
//! --suite pyperformance --configs cpython-dsa` for each Python build) and the same analysis
//! over the default suite (`heaplab compare --suite default`, four allocators), behind `make
//! bench-decide`.
//!
//! Writes the compare reports under `bench/decide/`, and `bench/decide-results.md` and
//! `bench/decide-results.json`: our cross-application tables beside the thesis' Tables 2.3-2.5
//! (execution time and memory), which of its findings hold here with the numbers, and the
//! default suite's table (machine, date, commit, commands).

#[path = "../host.rs"]
#[allow(dead_code)] // shared with the other benches; this one needs only `output`
mod host;

use heaplab_decide::hpt::{analyse, CrossApp, InAppVerdict, Options};
use heaplab_decide::results::Results;
use heaplab_study::Machine;
use host::output;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

const USAGE: &str = "\
heaplab-bench-decide — the thesis' CPython allocator study and the default suite, compared with HPT

Usage: heaplab-bench-decide [--heaplab PATH] [--out DIR] [--python NAME=PATH]... [--runs N]
                            [--pyperf-args ARGS] [--resume] [--only-summary] [--skip-pyperformance] [--skip-suite]
  --heaplab PATH      heaplab binary [default: target/release/heaplab]
  --out DIR           where decide-results.md/json and decide/ go [default: bench]
  --python NAME=PATH  a CPython build to study, NAME release or standard (repeatable)
                      [default: release=/usr/bin/python3, and standard=$HEAPLAB_STANDARD_PYTHON
                      or ~/.pyenv/versions/3.11.7/bin/python3 when it exists]
  --runs N            runs per allocator and workload of the default suite [default: 10]
  --pyperf-args ARGS  pyperf preset options for compare --suite pyperformance [default: --fast]
  --work-dir DIR      pyperformance's venvs and raw files [default: target/pyperformance]
  --resume            reuse pyperformance files already taken (compare --resume)
  --only-summary      only rewrite decide-results.md/json from the reports in DIR/decide/
  --skip-pyperformance, --skip-suite   leave one part out (its last report is summarised)";

/// Machine, build, and per configuration (name, time cell, memory cell).
type ThesisTable = (&'static str, &'static str, [(&'static str, &'static str, &'static str); 5]);

/// The thesis' cross-application tables (execution time, memory footprint): machine, build,
/// configuration, time cell, memory cell.
const THESIS: [ThesisTable; 6] = [
    ("server (Table 2.3)", "standard", [
        ("pymalloc_mimalloc", "MI (58%)", "PD (100%)"),
        ("pymalloc_jemalloc", "MI (48%)", "PD (100%)"),
        ("mimalloc", "1.125 (93.96%)", "1.035 (92.98%)"),
        ("jemalloc", "1.105 (92.73%)", "1.075 (93.41%)"),
        ("malloc", "1.115 (91.29%)", "1.11 (89.79%)"),
    ]),
    ("server (Table 2.3)", "release", [
        ("pymalloc_mimalloc", "MI (35%)", "PD (100%)"),
        ("pymalloc_jemalloc", "MI (21%)", "PD (100%)"),
        ("mimalloc", "PD (99.99%)", "PD (100%)"),
        ("jemalloc", "PD (100%)", "PD (100%)"),
        ("malloc", "PD (100%)", "PD (100%)"),
    ]),
    ("PC (Table 2.4)", "standard", [
        ("pymalloc_mimalloc", "MI (82%)", "PD (100%)"),
        ("pymalloc_jemalloc", "MI (7%)", "PD (100%)"),
        ("mimalloc", "1.125 (93.97%)", "1.03 (94.81%)"),
        ("jemalloc", "1.115 (99.3%)", "1.03 (89.65%)"),
        ("malloc", "1.115 (91.39%)", "1.11 (90.96%)"),
    ]),
    ("PC (Table 2.4)", "release", [
        ("pymalloc_mimalloc", "MI (66%)", "PD (100%)"),
        ("pymalloc_jemalloc", "MI (89%)", "PD (100%)"),
        ("mimalloc", "PD (99.99%)", "PD (100%)"),
        ("jemalloc", "PD (100%)", "PD (100%)"),
        ("malloc", "PD (100%)", "PD (100%)"),
    ]),
    ("embedded SoC (Table 2.5)", "standard", [
        ("pymalloc_mimalloc", "MI (84%)", "N/A"),
        ("pymalloc_jemalloc", "MI (19%)", "N/A"),
        ("mimalloc", "1.12 (94.66%)", "N/A"),
        ("jemalloc", "1.11 (94.66%)", "N/A"),
        ("malloc", "1.095 (93.13%)", "N/A"),
    ]),
    ("embedded SoC (Table 2.5)", "release", [
        ("pymalloc_mimalloc", "1.01 (76.09%)", "PD (100%)"),
        ("pymalloc_jemalloc", "MI (93%)", "PD (100%)"),
        ("mimalloc", "PD (99.87%)", "PD (100%)"),
        ("jemalloc", "PD (99.99%)", "PD (100%)"),
        ("malloc", "PD (100%)", "PD (100%)"),
    ]),
];

/// The configurations without pymalloc.
const NO_PYMALLOC: [&str; 3] = ["mimalloc", "jemalloc", "malloc"];

fn die(m: &str) -> ! {
    eprintln!("heaplab-bench-decide: {m}");
    std::process::exit(2)
}

/// Runs heaplab with `args` (its output goes to the terminal).
fn heaplab(bin: &Path, args: &[String]) {
    eprintln!("+ {} {}", bin.display(), args.join(" "));
    let st = Command::new(bin).args(args).stdin(Stdio::null()).status().unwrap_or_else(|e| die(&format!("{}: cannot start: {e}", bin.display())));
    if !st.success() {
        die(&format!("heaplab {} failed: {st}", args.join(" ")));
    }
}

/// A report's results and their analysis (recomputed, as `heaplab rank` does).
struct Report {
    dir: String,
    results: Results,
    analysis: heaplab_decide::hpt::Analysis,
    /// The same with HPT's own rule: insignificant workloads kept as zero differences.
    hpt: heaplab_decide::hpt::Analysis,
}

fn load(dir: &Path) -> Option<Report> {
    let file = dir.join("results.json");
    let text = std::fs::read_to_string(&file).ok()?;
    let v: Value = serde_json::from_str(&text).ok()?;
    let results = Results::from_json(&file.display().to_string(), &v).ok()?;
    let analysis = analyse(&results, &Options::default());
    let hpt = analyse(&results, &Options { keep_insignificant: true, ..Options::default() });
    Some(Report { dir: dir.display().to_string(), results, analysis, hpt })
}

fn cell(r: &Report, c: &str, m: &str) -> String {
    r.analysis.cell(c, m).map(|x| x.verdict.cell()).unwrap_or_else(|| "n/a".into())
}

/// The cell under HPT's own rule, with the number of workloads it used.
fn hpt_cell(r: &Report, c: &str, m: &str) -> String {
    let n = r.hpt.subsets.iter().find(|s| s.metric == m).map(|s| s.kept.len()).unwrap_or(0);
    format!("{} over {n}", r.hpt.cell(c, m).map(|x| x.verdict.cell()).unwrap_or_else(|| "n/a".into()))
}

fn verdict(r: &Report, c: &str, m: &str) -> Option<CrossApp> {
    r.analysis.cell(c, m).map(|x| x.verdict)
}

/// The geometric mean over the metric's common stable workloads of the per-workload median
/// speedups (`Analysis::summary_speedup`), as text.
fn geo(r: &Report, c: &str, m: &str) -> String {
    r.analysis.summary_speedup(&r.results, c, m).map(|g| format!("{g:.3}")).unwrap_or_else(|| "n/a".into())
}

fn analysed(r: &Report, m: &str) -> usize {
    r.analysis.subsets.iter().find(|s| s.metric == m).map(|s| s.kept.len()).unwrap_or(0)
}

/// Medians of the reference's series per workload, for comparing builds.
fn reference_medians(r: &Report, metric: &str) -> Vec<(String, f64)> {
    r.results
        .series
        .iter()
        .filter(|s| s.configuration == r.results.reference && s.metric == metric && !s.values.is_empty())
        .map(|s| (s.workload.clone(), heaplab_study::stats::median(&s.values)))
        .collect()
}

fn main() {
    let mut bin = PathBuf::from("target/release/heaplab");
    let mut out = PathBuf::from("bench");
    let mut pythons: Vec<(String, String)> = Vec::new();
    let (mut runs, mut pyperf_args, mut work_dir) = (10usize, "--fast".to_string(), "target/pyperformance".to_string());
    let (mut resume, mut only_summary, mut skip_pp, mut skip_suite) = (false, false, false, false);
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut val = |name: &str| args.next().unwrap_or_else(|| die(&format!("{name} needs a value\n{USAGE}")));
        match a.as_str() {
            "--heaplab" => bin = PathBuf::from(val("--heaplab")),
            "--out" => out = PathBuf::from(val("--out")),
            "--python" => {
                let v = val("--python");
                let (n, p) = v.split_once('=').unwrap_or_else(|| die(&format!("--python {v}: expected NAME=PATH")));
                pythons.push((n.to_string(), p.to_string()));
            }
            "--runs" => runs = val("--runs").parse().unwrap_or_else(|_| die("--runs: expected a number")),
            "--pyperf-args" => pyperf_args = val("--pyperf-args"),
            "--work-dir" => work_dir = val("--work-dir"),
            "--resume" => resume = true,
            "--only-summary" => only_summary = true,
            "--skip-pyperformance" => skip_pp = true,
            "--skip-suite" => skip_suite = true,
            "-h" | "--help" => {
                println!("{USAGE}");
                return;
            }
            _ => die(&format!("unknown option {a}\n{USAGE}")),
        }
    }
    if pythons.is_empty() {
        pythons.push(("release".into(), "/usr/bin/python3".into()));
        let standard = std::env::var("HEAPLAB_STANDARD_PYTHON")
            .ok()
            .or_else(|| std::env::var("HOME").ok().map(|h| format!("{h}/.pyenv/versions/3.11.7/bin/python3")))
            .filter(|p| Path::new(p).is_file());
        if let Some(p) = standard {
            pythons.push(("standard".into(), p));
        }
    }
    let dir = out.join("decide");
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| die(&format!("{}: {e}", dir.display())));
    let mut commands = Vec::new();
    for (name, python) in &pythons {
        let mut a: Vec<String> = ["compare", "--suite", "pyperformance", "--python", python, "--configs", "cpython-dsa", "--work-dir", &work_dir]
            .iter()
            .map(|s| s.to_string())
            .collect();
        a.extend(pyperf_args.split_whitespace().map(String::from));
        a.extend(["-o".to_string(), dir.join(format!("pyperformance-{name}")).display().to_string()]);
        if resume {
            a.push("--resume".into());
        }
        if !only_summary && !skip_pp {
            heaplab(&bin, &a);
        }
        commands.push(format!("heaplab {}", a.join(" ")));
    }
    let suite_dir = dir.join("default-suite");
    let a: Vec<String> = ["compare", "--suite", "default", "--configs", "allocators", "--runs", &runs.to_string(), "--warmup", "1", "--metrics", "time,cpu,rss", "-o"]
        .iter()
        .map(|s| s.to_string())
        .chain([suite_dir.display().to_string()])
        .collect();
    if !only_summary && !skip_suite {
        heaplab(&bin, &a);
    }
    commands.push(format!("heaplab {}", a.join(" ")));

    let builds: Vec<(String, String, Report)> =
        pythons.iter().filter_map(|(n, p)| load(&dir.join(format!("pyperformance-{n}"))).map(|r| (n.clone(), p.clone(), r))).collect();
    let suite = load(&suite_dir);
    let (md, js) = summary(&builds, suite.as_ref(), &commands, &work_dir, &pyperf_args, runs);
    std::fs::write(out.join("decide-results.md"), md).unwrap_or_else(|e| die(&format!("{}: {e}", out.display())));
    std::fs::write(out.join("decide-results.json"), serde_json::to_string_pretty(&js).expect("plain JSON")).unwrap_or_else(|e| die(&format!("{}: {e}", out.display())));
    eprintln!("wrote {}/decide-results.md and decide-results.json", out.display());
}

/// The findings of the thesis checked on one build: (finding, holds?, evidence); `None` when a
/// configuration it needs has no cross-app verdict (too few analysed benchmarks).
fn findings(build: &str, r: &Report) -> Vec<(String, Option<bool>, String)> {
    let raw = findings_raw(build, r);
    raw.into_iter()
        .map(|(f, h, e, needs)| {
            let data = needs.iter().all(|(c, m)| verdict(r, c, m).is_some_and(|v| v != CrossApp::NoData));
            (f, if data { h } else { None }, e)
        })
        .collect()
}

type Finding = (String, Option<bool>, String, Vec<(String, String)>);

fn findings_raw(build: &str, r: &Report) -> Vec<Finding> {
    let mut out: Vec<Finding> = Vec::new();
    let need = |cs: &[&str], m: &str| cs.iter().map(|c| (c.to_string(), m.to_string())).collect::<Vec<_>>();
    let others: Vec<&str> = r.results.configurations.iter().map(|c| c.name.as_str()).filter(|c| *c != r.results.reference).collect();
    let list = |m: &str, cs: &[&str]| cs.iter().map(|c| format!("{c} {} (geomean {}; HPT rule {})", cell(r, c, m), geo(r, c, m), hpt_cell(r, c, m))).collect::<Vec<_>>().join("; ");
    if build == "release" {
        let all_pd = others.iter().all(|c| matches!(verdict(r, c, "memory"), Some(CrossApp::Degradation { .. })));
        let any_data = others.iter().any(|c| verdict(r, c, "memory").is_some_and(|v| v != CrossApp::NoData));
        out.push(("release build: the default (pymalloc_glibc) is footprint-optimal (every alternative PD on memory)".into(), any_data.then_some(all_pd), list("memory", &others), need(&others, "memory")));
        let no_pm_pd = NO_PYMALLOC.iter().all(|c| matches!(verdict(r, c, "time"), Some(CrossApp::Degradation { .. })));
        let hpt_pd = NO_PYMALLOC.iter().all(|c| matches!(r.hpt.cell(c, "time").map(|x| x.verdict), Some(CrossApp::Degradation { .. })));
        out.push(("release build: dropping pymalloc degrades execution time (PD for mimalloc, jemalloc, malloc; the thesis' distillation)".into(), Some(no_pm_pd), list("time", &NO_PYMALLOC), need(&NO_PYMALLOC, "time")));
        out.push(("release build: dropping pymalloc degrades execution time (PD for mimalloc, jemalloc, malloc; HPT's own rule)".into(), Some(hpt_pd), list("time", &NO_PYMALLOC), need(&NO_PYMALLOC, "time")));
        let none_gains = others.iter().all(|c| !matches!(verdict(r, c, "time"), Some(CrossApp::Speedup { speedup, .. }) if speedup > 1.02));
        out.push(("release build: execution time is very hard to improve (no configuration gains more than 1.02x)".into(), Some(none_gains), list("time", &others), need(&others, "time")));
    } else {
        let gains = NO_PYMALLOC.iter().all(|c| matches!(verdict(r, c, "time"), Some(CrossApp::Speedup { speedup, .. }) if speedup > 1.1));
        let some_gain = NO_PYMALLOC.iter().any(|c| matches!(verdict(r, c, "time"), Some(CrossApp::Speedup { .. })));
        out.push(("standard build: dropping pymalloc gains > 1.1x in execution time (mimalloc, jemalloc, malloc)".into(), Some(gains), list("time", &NO_PYMALLOC), need(&NO_PYMALLOC, "time")));
        if !gains {
            out.push(("standard build: dropping pymalloc gains at all in execution time (a speedup for at least one of them)".into(), Some(some_gain), list("time", &NO_PYMALLOC), need(&NO_PYMALLOC, "time")));
        }
        let mem = NO_PYMALLOC.iter().all(|c| matches!(verdict(r, c, "memory"), Some(CrossApp::Speedup { .. })));
        out.push(("standard build: memory footprint is also better without pymalloc (a speedup for mimalloc, jemalloc, malloc)".into(), Some(mem), list("memory", &NO_PYMALLOC), need(&NO_PYMALLOC, "memory")));
    }
    let pm = ["pymalloc_mimalloc", "pymalloc_jemalloc"];
    let pm_mi = pm.iter().all(|c| matches!(verdict(r, c, "time"), Some(CrossApp::MarginalImprovement { .. })));
    let pm_mem = pm.iter().all(|c| matches!(verdict(r, c, "memory"), Some(CrossApp::Degradation { .. })));
    out.push((format!("{build} build: keeping pymalloc and only swapping malloc changes execution time marginally (MI)"), Some(pm_mi), list("time", &pm), need(&pm, "time")));
    out.push((format!("{build} build: keeping pymalloc and swapping malloc costs memory (PD)"), Some(pm_mem), list("memory", &pm), need(&pm, "memory")));
    out
}

fn yes_no(h: Option<bool>) -> &'static str {
    match h {
        Some(true) => "holds",
        Some(false) => "does not hold",
        None => "no data",
    }
}

fn summary(builds: &[(String, String, Report)], suite: Option<&Report>, commands: &[String], work_dir: &str, pyperf_args: &str, runs: usize) -> (String, Value) {
    let m = Machine::detect();
    let commit = output("git", &["rev-parse", "--short", "HEAD"]);
    let date = output("date", &["-u", "+%Y-%m-%d %H:%M UTC"]);
    let mut md = String::from("# The CPython allocator study, reproduced (`make bench-decide`)\n\n");
    md.push_str(&format!("Machine: {} · {} cores · {} · kernel {}. Commit {commit}, {date}.\n\n", m.cpu, m.cores, m.os, m.kernel));
    md.push_str("Commands:\n\n```\n");
    for c in commands {
        md.push_str(&format!("{c}\n"));
    }
    md.push_str("```\n\n");
    md.push_str(&format!(
        "pyperformance: {pyperf_args} (pyperf: 10 worker processes × 2 values per benchmark, so 20 samples per benchmark and configuration), \
         time and `--track-memory` in two passes; venvs in {work_dir}. HPT at 95% confidence, step 0.005 (docs/decide.md). \
         Reports with every sample, the in-app tables and the ECDF pictures: `bench/decide/`.\n\n"
    ));
    let mut js_builds = Vec::new();
    md.push_str("## The Python builds\n\n");
    for (name, path, r) in builds {
        let p = &r.results.provenance["suite"]["python"];
        md.push_str(&format!("- **{name}**: {} — {}\n", path, p["build"].as_str().unwrap_or("?")));
        md.push_str(&format!("  - configure: `{}`; PY_CFLAGS `{}`\n", p["config_args"].as_str().unwrap_or("?"), p["cflags"].as_str().unwrap_or("?")));
    }
    if builds.len() == 2 {
        let (a, b) = (&builds[0], &builds[1]);
        let ma = reference_medians(&a.2, "time");
        let mb = reference_medians(&b.2, "time");
        let ratios: Vec<f64> = ma.iter().filter_map(|(w, x)| mb.iter().find(|(v, _)| v == w).map(|(_, y)| y / x)).collect();
        if !ratios.is_empty() {
            let g = (ratios.iter().map(|r| r.ln()).sum::<f64>() / ratios.len() as f64).exp();
            let faster = ratios.iter().filter(|r| **r > 1.0).count();
            md.push_str(&format!(
                "\nDefault configuration (pymalloc_glibc), {} build against {}: geometric mean of the per-benchmark median time ratios {g:.3} \
                 ({} is faster on {faster} of {} benchmarks) — the {} build is the optimised one.\n",
                a.0, b.0, a.0, ratios.len(), if g > 1.0 { a.0.as_str() } else { b.0.as_str() }
            ));
        }
    }
    md.push_str("\n## Cross-application speedups over pymalloc_glibc: ours beside the thesis'\n\n");
    md.push_str("Cells as in the thesis' Tables 2.3–2.5: `r (c%)` at least r times better across applications with confidence c; \
                 MI marginal improvement (c: confidence of better); PD performance degradation. \
                 In brackets after ours: the geometric mean of the per-benchmark median speedups.\n\n");
    for build in ["standard", "release"] {
        let ours = builds.iter().find(|b| b.0 == build);
        md.push_str(&format!("### {} build\n\n", if build == "release" { "Release (PGO+LTO)" } else { "Standard (no PGO, no LTO)" }));
        md.push_str("| configuration | time: here | memory: here | time: server | memory: server | time: PC | memory: PC | time: SoC | memory: SoC |\n|---|---|---|---|---|---|---|---|---|\n");
        let thesis: Vec<_> = THESIS.iter().filter(|t| t.1 == build).collect();
        for (k, (conf, _, _)) in thesis[0].2.iter().enumerate() {
            let here = |metric: &str| ours.map(|o| format!("{} [{}]", cell(&o.2, conf, metric), geo(&o.2, conf, metric))).unwrap_or_else(|| "not run".into());
            md.push_str(&format!("| {conf} | {} | {} |", here("time"), here("memory")));
            for t in &thesis {
                md.push_str(&format!(" {} | {} |", t.2[k].1, t.2[k].2));
            }
            md.push('\n');
        }
        if let Some(o) = ours {
            let others: Vec<&str> = thesis[0].2.iter().map(|x| x.0).collect();
            md.push_str(&format!(
                "\nWith HPT's own rule instead of the thesis' second distillation (`--keep-insignificant`: benchmarks without a significant in-app difference \
                 count as zero differences instead of being dropped), time: {}; memory: {}.\n",
                others.iter().map(|c| format!("{c} {}", hpt_cell(&o.2, c, "time"))).collect::<Vec<_>>().join(", "),
                others.iter().map(|c| format!("{c} {}", hpt_cell(&o.2, c, "memory"))).collect::<Vec<_>>().join(", ")
            ));
            md.push_str(&format!("\nHere: {} benchmark(s) analysed for time, {} for memory (the rest left out: unstable, or no significant in-app difference for some configuration; see `bench/decide/pyperformance-{build}/report.md`).\n\n", analysed(&o.2, "time"), analysed(&o.2, "memory")));
        } else {
            md.push_str("\nNot run here (no such build given).\n\n");
        }
    }
    md.push_str("## The thesis' findings on this machine\n\n");
    let mut js_findings = Vec::new();
    for (name, _, r) in builds {
        for (f, holds, evidence) in findings(name, r) {
            md.push_str(&format!("- **{}** — {f}: {evidence}.\n", yes_no(holds)));
            js_findings.push(json!({"build": name, "finding": f, "holds": holds, "evidence": evidence}));
        }
    }
    for (name, path, r) in builds {
        let table: Vec<Value> = r
            .results
            .configurations
            .iter()
            .filter(|c| c.name != r.results.reference)
            .map(|c| json!({"configuration": c.name, "time": cell(r, &c.name, "time"), "memory": cell(r, &c.name, "memory"),
                             "time_geomean": r.analysis.summary_speedup(&r.results, &c.name, "time"), "memory_geomean": r.analysis.summary_speedup(&r.results, &c.name, "memory")}))
            .collect();
        js_builds.push(json!({"build": name, "python": path, "describe": r.results.provenance["suite"]["python"]["build"], "report": r.dir,
                              "benchmarks_analysed": {"time": analysed(r, "time"), "memory": analysed(r, "memory")}, "table": table}));
    }
    let mut js_suite = Value::Null;
    md.push_str("\n## The default suite × allocators (`heaplab compare --suite default`)\n\n");
    if let Some(s) = suite {
        md.push_str(&format!("{runs} runs + 1 warm-up per allocator and workload, interleaved; reference glibc. Cross-application:\n\n"));
        let metrics: Vec<&str> = s.results.metrics.iter().map(|m| m.name.as_str()).collect();
        md.push_str(&format!("| allocator | {} |\n|---|{}\n", metrics.join(" | "), "---|".repeat(metrics.len())));
        let others: Vec<&str> = s.results.configurations.iter().map(|c| c.name.as_str()).filter(|c| *c != s.results.reference).collect();
        for c in &others {
            md.push_str(&format!("| {c} | {} |\n", metrics.iter().map(|m| format!("{} [{}]", cell(s, c, m), geo(s, c, m))).collect::<Vec<_>>().join(" | ")));
        }
        md.push_str(&format!("\nWorkloads analysed: {}.\n\n", metrics.iter().map(|m| format!("{m} {}", analysed(s, m))).collect::<Vec<_>>().join(", ")));
        md.push_str("Which allocator wins where (per workload: the best median, its speedup over glibc and the rank-sum confidence that it is better; `glibc` when none is significantly better):\n\n");
        md.push_str(&format!("| workload | {} |\n|---|{}\n", metrics.join(" | "), "---|".repeat(metrics.len())));
        let mut workloads: Vec<String> = Vec::new();
        for x in &s.analysis.in_app {
            if !workloads.contains(&x.workload) {
                workloads.push(x.workload.clone());
            }
        }
        let mut winners = Vec::new();
        for w in &workloads {
            let mut row = Vec::new();
            for m in &metrics {
                let best = s.analysis.in_app.iter().filter(|x| x.workload == *w && x.metric == *m && x.verdict == InAppVerdict::Better).max_by(|a, b| a.speedup.total_cmp(&b.speedup));
                let text = match best {
                    Some(b) => format!("{} {:.3}x ({})", b.configuration, b.speedup, heaplab_decide::hpt::pct(b.confidence_better)),
                    None if s.analysis.in_app.iter().any(|x| x.workload == *w && x.metric == *m) => "glibc".into(),
                    None => "—".into(),
                };
                winners.push(json!({"workload": w, "metric": m, "winner": best.map(|b| b.configuration.clone()).unwrap_or_else(|| "glibc".into()), "speedup": best.map(|b| b.speedup), "confidence": best.map(|b| b.confidence_better)}));
                row.push(text);
            }
            md.push_str(&format!("| {w} | {} |\n", row.join(" | ")));
        }
        md.push_str("\n(Workloads missing from a column were left out of that metric: unstable; see `bench/decide/default-suite/report.md`.)\n");
        js_suite = json!({"report": s.dir, "runs": runs, "table": others.iter().map(|c| json!({"configuration": c,
            "cells": metrics.iter().map(|m| json!({"metric": m, "cell": cell(s, c, m), "geomean": s.analysis.summary_speedup(&s.results, c, m)})).collect::<Vec<_>>()})).collect::<Vec<_>>(),
            "winners": winners});
    } else {
        md.push_str("Not run (no report in bench/decide/default-suite).\n");
    }
    let js = json!({
        "machine": {"cpu": m.cpu, "cores": m.cores, "os": m.os, "kernel": m.kernel},
        "commit": commit, "date": date, "commands": commands, "pyperf_args": pyperf_args,
        "builds": js_builds, "findings": js_findings, "default_suite": js_suite,
        "thesis": THESIS.iter().map(|(mach, b, rows)| json!({"machine": mach, "build": b, "rows": rows.iter().map(|(c, t, mm)| json!({"configuration": c, "time": t, "memory": mm})).collect::<Vec<_>>()})).collect::<Vec<_>>(),
    });
    (md, js)
}
