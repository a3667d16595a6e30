//! The study's report: `index.html` (opens in a browser, reads on its own), `report.md` (the
//! same tables for a repository), `results.json` (every number) and PNG plots per workload: the
//! scatter of peak RSS against fragmentation (median and min–max over the runs per allocator)
//! and external fragmentation over time per allocator. [`interpretation`] is the one text of
//! what the correlation can and cannot show, shared by every output and the CLI.

use crate::measure::RssMethod;
use crate::outdir::Staging;
use crate::stats::{Spearman, EXACT_MAX_N};
use crate::{Machine, Study, WorkloadResult, STRONG_RHO};
use heaplab_plot::chart::{render_chart_png, AxisFormat, Chart, Point, Series, Style};
use serde_json::{json, Value};
use std::fmt::Write as _;
use std::path::Path;

const MIB: f64 = 1048576.0;

use heaplab_plot::escape_markup as esc;

/// A file-name-safe form of a workload name.
pub fn slug(name: &str) -> String {
    name.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '.' { c } else { '_' }).collect()
}

fn rho_text(s: &Option<Spearman>) -> String {
    match s {
        Some(s) => format!("{:+.2}", s.rho),
        None => "n/a".into(),
    }
}

fn p_fmt(p: f64) -> String {
    if p < 1e-4 {
        format!("{p:.1e}")
    } else {
        format!("{p:.4}")
    }
}

fn p_text(s: &Option<Spearman>) -> String {
    s.map_or("n/a".into(), |s| p_fmt(s.p))
}

/// "ρ = +0.80, p = 0.3333 over 4 allocators (exact permutation; smallest possible p 0.0833)".
fn rho_sentence(s: &Option<Spearman>) -> String {
    match s {
        Some(s) => format!("ρ = {:+.2}, p = {} over {} allocators ({}; smallest possible p {})", s.rho, p_fmt(s.p), s.n, s.test.name(), p_fmt(s.p_min)),
        None => "ρ undefined (fewer than 3 allocators, or a constant side)".into(),
    }
}

/// n! for the small n of exact tests.
fn factorial(n: usize) -> u64 {
    (1..=n as u64).product()
}

/// What the study's correlations can and cannot show, as plain sentences (Markdown-safe, no
/// HTML): written into every report and printed by the CLI, so that a p-value is never read
/// without its limits.
pub fn interpretation(s: &Study) -> Vec<String> {
    let ok: Vec<&WorkloadResult> = s.workloads.iter().filter(|w| w.error.is_none()).collect();
    if ok.is_empty() {
        return Vec::new();
    }
    let mut ns: Vec<usize> = ok.iter().filter_map(|w| w.rho_external.map(|r| r.n)).collect();
    ns.sort_unstable();
    ns.dedup();
    let mut o = vec![format!(
        "Each correlation has one point per allocator. The replay is deterministic, so an allocator has one fragmentation value; its {} run{} \
         measure{} run-to-run RSS noise, not further observations of the relation, and are summarised by their median (range and standard \
         deviation beside it). Pairing every run with the same fragmentation value would count one observation {} times and make p look far \
         smaller than the evidence allows.",
        s.runs,
        if s.runs == 1 { "" } else { "s" },
        if s.runs == 1 { "s" } else { "" },
        s.runs
    )];
    for &n in &ns {
        if n <= EXACT_MAX_N {
            let all = factorial(n);
            let pmin = 2.0 / all as f64;
            let mut t = format!(
                "With {n} allocators p is exact: the share of all {n}! = {all} pairings of RSS ranks with fragmentation ranks whose |ρ| is at least \
                 the observed one (two-sided). The smallest p possible is 2/{all} = {} (a perfect order; ties make it larger)",
                p_fmt(pmin)
            );
            if pmin > 0.05 {
                let more = (n + 1..=EXACT_MAX_N).find(|&k| 2.0 / factorial(k) as f64 <= 0.05).unwrap_or(EXACT_MAX_N);
                let _ = write!(t, ", so p < 0.05 cannot occur however strong the relation: the test cannot show significance here. At least {more} allocators would be needed for that.");
            } else {
                t.push('.');
            }
            o.push(t);
        } else {
            o.push(format!("With {n} allocators p comes from the t-approximation with {} degrees of freedom (exact enumeration stops at {EXACT_MAX_N} points).", n - 2));
        }
    }
    let (strong, with) = s.strong();
    if let Some(e) = s.strong_by_chance().filter(|_| with > 0) {
        let few = if ns == [4] { format!(" With 4 points ρ takes few values (without ties: −1, −0.8, …, 0.8, 1), so ρ > {STRONG_RHO} means at most one adjacent pair out of order.") } else { String::new() };
        o.push(format!(
            "With no association at all, ρ > {STRONG_RHO} would still occur in about {e:.2} of the {with} workload{} by chance (the sum of each \
             workload's exact chance); {strong} did.{few}",
            if with == 1 { "" } else { "s" }
        ));
    }
    o.push(format!(
        "The p-values are not corrected for testing {} workload{} and two fragmentation measures; read them as descriptions, not as a test \
         of the study's hypothesis.",
        ok.len(),
        if ok.len() == 1 { "" } else { "s" }
    ));
    o.push(
        "A correlation over allocators cannot show causation: allocators differ in much more than placement (fixed footprint, arenas, caches, \
         when pages go back to the kernel), and any of these can order their peak RSS. Nor does a missing correlation show that fragmentation \
         does not matter within one allocator."
            .into(),
    );
    let (mut over, mut pairs) = (0, 0);
    for w in &ok {
        let (a, b) = w.rss_overlaps(s.rss_method);
        over += a;
        pairs += b;
    }
    if pairs > 0 && s.runs > 1 {
        o.push(format!(
            "Run-to-run noise: the peak-RSS ranges over the runs overlap in {over} of {pairs} allocator pairs (all workloads together); only \
             for the other pairs is the RSS order the same in every run."
        ));
    } else if s.runs == 1 {
        o.push("With one run per allocator the run-to-run RSS noise is unknown.".into());
    }
    o
}

fn command_text(c: &[String]) -> String {
    let t: Vec<String> = c
        .iter()
        .map(|a| {
            let a = if a.len() > 60 { format!("{}…", a.chars().take(57).collect::<String>()) } else { a.clone() };
            if a.contains(' ') || a.contains('\n') { format!("'{}'", a.replace('\n', "⏎")) } else { a }
        })
        .collect();
    t.join(" ")
}

/// The scatter plot of one workload.
pub fn scatter(w: &WorkloadResult, m: RssMethod) -> Chart {
    let series = w
        .allocators
        .iter()
        .enumerate()
        .flat_map(|(k, a)| {
            let r = a.rss(m);
            // The range over the runs as an unnamed line (kept out of the legend), then the
            // median on top of it.
            [
                Series { name: String::new(), colour: k, style: Style::Line, points: vec![Point { x: a.external, y: r.min, y_err: 0.0 }, Point { x: a.external, y: r.max, y_err: 0.0 }] },
                Series { name: a.name.clone(), colour: k, style: Style::Markers, points: vec![Point { x: a.external, y: r.median, y_err: 0.0 }] },
            ]
        })
        .collect();
    let sub = match &w.rho_external {
        // Short enough for the chart's width; the report's text names the test.
        Some(s) => format!("rho = {:+.2}, p = {} over {} allocators (smallest possible p {})", s.rho, p_fmt(s.p), s.n, p_fmt(s.p_min)),
        None => "Spearman rho undefined (fewer than 3 allocators, or a constant side)".into(),
    };
    Chart {
        title: format!("{}: peak RSS vs 2-D fragmentation", w.name),
        subtitle: sub,
        x_label: "external fragmentation (replay)".into(),
        y_label: "peak RSS (median, min-max)".into(),
        x_format: AxisFormat::Percent,
        y_format: AxisFormat::Bytes,
        series,
        width: 900,
        height: 520,
        ..Default::default()
    }
}

/// External fragmentation over time, one line per (name, (time, ratio) points).
pub fn over_time(title: String, runs: &[(String, Vec<(f64, f64)>)]) -> Chart {
    let series = runs
        .iter()
        .enumerate()
        .map(|(k, (name, pts))| Series { name: name.clone(), colour: k, style: Style::Line, points: pts.iter().map(|&(x, y)| Point { x, y, y_err: 0.0 }).collect() })
        .collect();
    Chart {
        title,
        subtitle: "page-local gaps below live blocks / job area, per time bucket".into(),
        x_label: "time (bytes allocated)".into(),
        y_label: "external fragmentation".into(),
        x_format: AxisFormat::Number,
        y_format: AxisFormat::Percent,
        x_from_zero: true,
        y_from_zero: true,
        series,
        width: 900,
        height: 520,
    }
}

/// A machine as JSON (the study's, and each workload's).
pub fn machine_json(m: &Machine) -> Value {
    json!({"host": m.host, "cpu": m.cpu, "cores": m.cores, "memory_bytes": m.memory, "kernel": m.kernel, "os": m.os})
}

/// One workload's entry of `results.json`, its peak-RSS summaries by `m`: also the form in
/// which one workload studied on its own travels ([`crate::results::workload`] reads it back).
pub fn workload_json(w: &WorkloadResult, m: RssMethod) -> Value {
    let sp = |s: &Option<Spearman>| s.map(|s| json!({"rho": s.rho, "p": s.p, "p_min": s.p_min, "n": s.n, "points": "allocators", "test": s.test.name()}));
    let (over, pairs) = w.rss_overlaps(m);
    json!({
        "name": w.name,
        "description": w.description,
        "command": w.command,
        "traced_exe": w.traced_exe,
        "events": w.events,
        "threads": w.threads,
        "error": w.error,
        "machine": w.machine.as_ref().map(machine_json),
        "spearman_external": sp(&w.rho_external),
        "spearman_internal": sp(&w.rho_internal),
        "chance_rho_external_above_threshold": w.chance_strong,
        "rss_overlapping_pairs": over,
        "allocator_pairs": pairs,
        "allocators": w.allocators.iter().map(|a| {
            let r = a.rss(m);
            json!({
                "name": a.name,
                "library": a.library,
                "external": a.external,
                "internal": a.internal,
                "makespan_minus_max_load_bytes": a.makespan_excess,
                "jobs": a.jobs,
                "mappings": a.mappings,
                "replay_requests": a.replay_requests,
                "replay_seconds": a.replay_seconds,
                "frag_seconds": a.frag_seconds,
                "placed_bytes": a.placed_bytes,
                "peak_rss_median_bytes": r.median,
                "peak_rss_min_bytes": r.min,
                "peak_rss_max_bytes": r.max,
                "peak_rss_mean_bytes": r.mean,
                "peak_rss_sd_bytes": r.sd,
                "runs": a.runs.iter().map(|r| json!({
                    "peak_rss_rusage_bytes": r.rusage_rss,
                    "peak_rss_sampled_bytes": r.sampled_rss,
                    "wall_seconds": r.wall,
                    "user_seconds": r.user,
                    "sys_seconds": r.sys,
                    "status": r.status,
                })).collect::<Vec<_>>(),
                "external_over_time": a.series.iter().map(|(t, e)| json!([t, e])).collect::<Vec<_>>(),
            })
        }).collect::<Vec<_>>(),
    })
}

/// Everything as JSON.
pub fn study_json(s: &Study) -> Value {
    let (strong, with) = s.strong();
    json!({
        "date": s.date,
        "heaplab_version": s.version,
        "invocation": s.invocation,
        "machine": machine_json(&s.machine),
        "runs_per_allocator": s.runs,
        "rss_method": s.rss_method.name(),
        "correlation": "Spearman over allocators, one point each: fragmentation of the replay against the median peak RSS of the runs",
        "strong_rho_threshold": STRONG_RHO,
        "workloads_with_rho": with,
        "workloads_rho_above_threshold": strong,
        "workloads_rho_above_threshold_expected_by_chance": s.strong_by_chance(),
        "interpretation": interpretation(s),
        "workloads": s.workloads.iter().map(|w| workload_json(w, s.rss_method)).collect::<Vec<_>>(),
    })
}

fn method_md(s: &Study) -> String {
    format!(
        "Each workload is traced once (`heaplab trace`; the process image with the most heap events is kept), the trace is replayed under every \
         allocator (`heaplab replay`) and its external fragmentation measured (`heaplab frag`: page-local gaps below the highest live block of \
         each page, times time, over the total job area; equation 3.1 of the thesis). The real program then runs {} times under each allocator, \
         the allocators taking turns, and its peak RSS is measured ({}); an allocator's peak RSS is the median of its runs. Spearman's ρ is \
         computed between fragmentation and that median over the allocators, one point each (ties get average ranks); its two-sided p-value \
         comes from the exact permutation distribution for up to {EXACT_MAX_N} allocators and from the t-approximation with n − 2 degrees of \
         freedom above. ρ > {STRONG_RHO} is the paper's \"strong monotonic relation\".",
        s.runs,
        match s.rss_method {
            RssMethod::Rusage => "wait4's ru_maxrss; /proc sampling where it reports nothing",
            RssMethod::Proc => "sampling /proc every 4 ms: VmHWM and the process tree's summed VmRSS",
        }
    )
}

/// The cells of an allocator's row in the per-workload tables: name, external, internal,
/// makespan − max load, jobs, mappings, peak RSS median, its range and sd over the runs, replay
/// speed.
fn allocator_cells(a: &crate::AllocatorResult, m: RssMethod) -> [String; 10] {
    let r = a.rss(m);
    let rate = if a.replay_seconds > 0.0 { a.replay_requests as f64 / a.replay_seconds } else { 0.0 };
    [
        a.name.clone(),
        format!("{:.2}%", a.external * 100.0),
        format!("{:.2}%", a.internal * 100.0),
        format!("{:.2} MiB", a.makespan_excess as f64 / MIB),
        a.jobs.to_string(),
        a.mappings.to_string(),
        format!("{:.2}", r.median / MIB),
        format!("{:.2}–{:.2}", r.min / MIB, r.max / MIB),
        format!("{:.2}", r.sd / MIB),
        format!("{:.2}M req/s", rate / 1e6),
    ]
}

/// One summary row's figures, shared by the Markdown and HTML tables: external fragmentation
/// range (%), median peak RSS range (MiB), allocators, pairs within noise.
fn summary_cells(w: &WorkloadResult, m: RssMethod) -> [String; 4] {
    let ext: Vec<f64> = w.allocators.iter().map(|a| a.external * 100.0).collect();
    let rss: Vec<f64> = w.allocators.iter().map(|a| a.rss(m).median / MIB).collect();
    let range = |v: &[f64], u: &str| format!("{:.2}{u}–{:.2}{u}", v.iter().cloned().fold(f64::INFINITY, f64::min), v.iter().cloned().fold(f64::NEG_INFINITY, f64::max));
    let (over, pairs) = w.rss_overlaps(m);
    [range(&ext, "%"), range(&rss, ""), w.allocators.len().to_string(), format!("{over}/{pairs}")]
}

/// The sentence under a workload's allocator table.
fn workload_sentence(w: &WorkloadResult, m: RssMethod) -> String {
    let (over, pairs) = w.rss_overlaps(m);
    let chance = w.chance_strong.map_or(String::new(), |c| format!(" With no association, ρ > {STRONG_RHO} would occur by chance with probability {c:.3}."));
    format!(
        "Spearman (external fragmentation, median peak RSS): {}. (Internal, median peak RSS): {}.{chance} Peak-RSS ranges over the runs overlap \
         for {over} of {pairs} allocator pairs.",
        rho_sentence(&w.rho_external),
        rho_sentence(&w.rho_internal)
    )
}

/// " Studied on HOST (machine)." when a workload ran elsewhere than the study's machine.
fn ran_on(s: &Study, w: &WorkloadResult) -> String {
    match &w.machine {
        Some(m) if *m != s.machine => format!(" Studied on {}: {}.", if m.host.is_empty() { "another machine" } else { &m.host }, m.describe()),
        _ => String::new(),
    }
}

/// "Description. " or nothing when a workload has none (a command given on the command line).
fn description_text(w: &WorkloadResult) -> String {
    if w.description.is_empty() {
        String::new()
    } else {
        format!("{}. ", w.description)
    }
}

const ALLOCATOR_HEADS: [&str; 10] = ["allocator", "external", "internal", "makespan − max load", "jobs", "mappings", "peak RSS median (MiB)", "range over runs", "sd", "replay"];
const SUMMARY_HEADS: [&str; 10] = ["workload", "jobs", "external frag. range", "median peak RSS range (MiB)", "allocators", "RSS pairs within noise", "ρ external", "p", "ρ internal", "p"];

/// The Markdown report.
pub fn markdown(s: &Study) -> String {
    let mut o = String::new();
    let (strong, with) = s.strong();
    let _ = writeln!(o, "# heaplab study: 2-D fragmentation vs peak RSS\n");
    let _ = writeln!(o, "Machine: {}. Date: {}. heaplab {}. Runs per allocator: {}.\n", s.machine.describe(), s.date, s.version, s.runs);
    let _ = writeln!(o, "Command: `{}`\n", s.invocation);
    let _ = writeln!(o, "{}\n", method_md(s));
    let _ = writeln!(o, "## Summary\n\n**ρ > {STRONG_RHO} in {strong} of {with} workloads** (the published study found 13 of 28).\n");
    let _ = writeln!(o, "| {} |", SUMMARY_HEADS.join(" | "));
    let _ = writeln!(o, "|---|---:|---|---|---:|---:|---:|---:|---:|---:|");
    for w in &s.workloads {
        if let Some(e) = &w.error {
            let e: Vec<&str> = e.lines().map(str::trim).collect();
            let _ = writeln!(o, "| {} | — | failed: {} | | | | | | | |", w.name, e.join(" / ").replace('|', "/"));
            continue;
        }
        let c = summary_cells(w, s.rss_method);
        let jobs = w.allocators.first().map_or(0, |a| a.jobs);
        let _ = writeln!(
            o,
            "| {} | {jobs} | {} | {} | {} | {} | {} | {} | {} | {} |",
            w.name,
            c[0],
            c[1],
            c[2],
            c[3],
            rho_text(&w.rho_external),
            p_text(&w.rho_external),
            rho_text(&w.rho_internal),
            p_text(&w.rho_internal)
        );
    }
    let limits = interpretation(s);
    if !limits.is_empty() {
        let _ = writeln!(o, "\n## What this can and cannot show\n");
    }
    for line in limits {
        let _ = writeln!(o, "- {line}");
    }
    for w in s.workloads.iter().filter(|w| w.error.is_none()) {
        let _ = writeln!(
            o,
            "\n## {}\n\n{}Command: `{}`. Replayed: `{}` ({} events, {} thread{}).{}\n",
            w.name,
            description_text(w),
            command_text(&w.command),
            w.traced_exe,
            w.events,
            w.threads,
            if w.threads == 1 { "" } else { "s" },
            ran_on(s, w)
        );
        let _ = writeln!(o, "| {} |", ALLOCATOR_HEADS.join(" | "));
        let _ = writeln!(o, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
        for a in &w.allocators {
            let _ = writeln!(o, "| {} |", allocator_cells(a, s.rss_method).join(" | "));
        }
        let _ = writeln!(o, "\n{}\n", workload_sentence(w, s.rss_method));
        let n = slug(&w.name);
        let _ = writeln!(o, "![{} scatter]({n}-scatter.png) ![{} over time]({n}-frag-time.png)", w.name, w.name);
    }
    o
}

const CSS: &str = "body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;max-width:1100px;margin:2em auto;padding:0 1.2em;color:#222;line-height:1.45}\
h1{font-size:1.7em;margin-bottom:.2em}h2{margin-top:2.2em;border-bottom:1px solid #ddd;padding-bottom:.2em}\
table{border-collapse:collapse;margin:1em 0;font-size:.92em}th,td{padding:.35em .7em;border-bottom:1px solid #e4e4e4;text-align:right}\
th{background:#f4f4f2;text-align:right}td:first-child,th:first-child{text-align:left}\
.meta{color:#555}.strong{color:#1a7f37;font-weight:600}.weak{color:#777}.neg{color:#b42318}\
.big{font-size:1.25em;background:#f6f8f6;border-left:4px solid #1a7f37;padding:.6em 1em}\
.limits{background:#fbf8ef;border-left:4px solid #b7791f;padding:.4em 1em .4em 2em}\
code{background:#f4f4f2;padding:0 .25em;border-radius:3px;font-size:.92em}.plots img{max-width:49%;height:auto;border:1px solid #eee}\
.fail{color:#b42318;text-align:left;white-space:pre-wrap;font-family:monospace}";

fn rho_class(s: &Option<Spearman>) -> &'static str {
    match s {
        Some(s) if s.rho > STRONG_RHO => "strong",
        Some(s) if s.rho < 0.0 => "neg",
        _ => "weak",
    }
}

/// The HTML report.
pub fn html(s: &Study) -> String {
    let (strong, with) = s.strong();
    let mut o = String::new();
    let th = |h: &[&str]| h.iter().map(|c| format!("<th>{}</th>", esc(c))).collect::<String>();
    let _ = write!(o, "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>heaplab study</title><style>{CSS}</style></head><body>");
    let _ = write!(o, "<h1>Does 2-D fragmentation predict peak RSS?</h1><p class=\"meta\">{} · {} · heaplab {} · {} runs per allocator</p>", esc(&s.machine.describe()), esc(&s.date), esc(&s.version), s.runs);
    let _ = write!(o, "<p class=\"big\">Spearman ρ &gt; {STRONG_RHO} in <b>{strong} of {with}</b> workloads. The published study found 13 of 28.</p>");
    let _ = write!(o, "<p>{}</p><p class=\"meta\">Command: <code>{}</code></p>", esc(&method_md(s)).replace('`', ""), esc(&s.invocation));
    let _ = write!(o, "<h2>Summary</h2><table><tr>{}</tr>", th(&SUMMARY_HEADS));
    for w in &s.workloads {
        if let Some(e) = &w.error {
            let _ = write!(o, "<tr><td>{}</td><td colspan=\"9\" class=\"fail\">failed: {}</td></tr>", esc(&w.name), esc(e));
            continue;
        }
        let c = summary_cells(w, s.rss_method);
        let _ = write!(
            o,
            "<tr><td><a href=\"#{}\">{}</a></td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"{}\">{}</td><td>{}</td><td class=\"{}\">{}</td><td>{}</td></tr>",
            slug(&w.name),
            esc(&w.name),
            w.allocators.first().map_or(0, |a| a.jobs),
            c[0],
            c[1],
            c[2],
            c[3],
            rho_class(&w.rho_external),
            rho_text(&w.rho_external),
            p_text(&w.rho_external),
            rho_class(&w.rho_internal),
            rho_text(&w.rho_internal),
            p_text(&w.rho_internal)
        );
    }
    let _ = write!(o, "</table>");
    let limits = interpretation(s);
    if !limits.is_empty() {
        let _ = write!(o, "<h2>What this can and cannot show</h2><ul class=\"limits\">");
        for line in limits {
            let _ = write!(o, "<li>{}</li>", esc(&line));
        }
        let _ = write!(o, "</ul>");
    }
    for w in s.workloads.iter().filter(|w| w.error.is_none()) {
        let n = slug(&w.name);
        let _ = write!(o, "<h2 id=\"{n}\">{}</h2><p>{}Replayed <code>{}</code>: {} events, {} thread{}.{}</p><p class=\"meta\">Command: <code>{}</code></p>", esc(&w.name), esc(&description_text(w)), esc(&w.traced_exe), w.events, w.threads, if w.threads == 1 { "" } else { "s" }, esc(&ran_on(s, w)), esc(&command_text(&w.command)));
        let _ = write!(o, "<table><tr>{}</tr>", th(&ALLOCATOR_HEADS));
        for a in &w.allocators {
            let cells: Vec<String> = allocator_cells(a, s.rss_method).iter().map(|c| format!("<td>{}</td>", esc(c))).collect();
            let _ = write!(o, "<tr>{}</tr>", cells.concat());
        }
        let _ = write!(o, "</table><p>{}</p>", esc(&workload_sentence(w, s.rss_method)));
        let _ = write!(o, "<div class=\"plots\"><img src=\"{n}-scatter.png\" alt=\"{0} scatter\"> <img src=\"{n}-frag-time.png\" alt=\"{0} over time\"></div>", esc(&w.name));
    }
    let _ = write!(o, "<p class=\"meta\">Every number is in <a href=\"results.json\">results.json</a>.</p></body></html>");
    o
}

/// Writes the report into `staging` and puts it in place: how every front end (the CLI, the
/// Python binding gathering workloads studied as separate tasks) writes a study's report. The
/// error names the report's directory.
pub fn install(staging: Staging, s: &Study) -> Result<std::path::PathBuf, String> {
    let target = staging.target().to_path_buf();
    write(staging.dir(), s).and_then(|()| staging.install()).map_err(|e| format!("{}: cannot write the report: {e}", target.display()))?;
    Ok(target)
}

/// Writes the report files into `dir` (which exists).
pub fn write(dir: &Path, s: &Study) -> std::io::Result<()> {
    for w in s.workloads.iter().filter(|w| w.error.is_none()) {
        let n = slug(&w.name);
        std::fs::write(dir.join(format!("{n}-scatter.png")), render_chart_png(&scatter(w, s.rss_method)))?;
        let runs: Vec<(String, Vec<(f64, f64)>)> = w.allocators.iter().map(|a| (a.name.clone(), a.series.clone())).collect();
        std::fs::write(dir.join(format!("{n}-frag-time.png")), render_chart_png(&over_time(format!("{}: fragmentation over time", w.name), &runs)))?;
    }
    std::fs::write(dir.join("results.json"), serde_json::to_string_pretty(&study_json(s)).expect("JSON of plain values") + "\n")?;
    std::fs::write(dir.join("report.md"), markdown(s))?;
    std::fs::write(dir.join("index.html"), html(s))
}
