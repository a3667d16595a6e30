//! The study's report: `index.html` (opens in a browser, reads on its own), `report.md` (the
//! same tables for a repository), `results.json` (every number) and PNG plots per workload: the
//! scatter of peak RSS against fragmentation (mean ± standard deviation per allocator, as in
//! the paper's figure 9) and external fragmentation over time per allocator.

use crate::measure::RssMethod;
use crate::stats::{mean_sd, Spearman};
use crate::{Study, WorkloadResult, STRONG_RHO};
use heaplab_plot::chart::{render_chart_png, AxisFormat, Chart, Point, Series, Style};
use serde_json::{json, Value};
use std::fmt::Write as _;
use std::path::Path;

const MIB: f64 = 1048576.0;

fn esc(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

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

fn p_text(s: &Option<Spearman>) -> String {
    match s {
        Some(s) if s.p < 1e-4 => format!("{:.1e}", s.p),
        Some(s) => format!("{:.4}", s.p),
        None => "n/a".into(),
    }
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
        .map(|(k, a)| {
            let (mean, sd) = mean_sd(&a.peaks(m));
            Series { name: a.name.clone(), colour: k, style: Style::Markers, points: vec![Point { x: a.external, y: mean, y_err: sd }] }
        })
        .collect();
    let sub = match &w.rho_external {
        Some(s) => format!("Spearman rho = {:+.2}, p = {} over {} runs ({})", s.rho, p_text(&w.rho_external), s.n, s.test.name()),
        None => "Spearman rho undefined (a constant side)".into(),
    };
    Chart {
        title: format!("{}: peak RSS vs 2-D fragmentation", w.name),
        subtitle: sub,
        x_label: "external fragmentation (replay)".into(),
        y_label: "peak RSS (mean +/- sd)".into(),
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

fn workload_json(w: &WorkloadResult, m: RssMethod) -> Value {
    let sp = |s: &Option<Spearman>| s.map(|s| json!({"rho": s.rho, "p": s.p, "n": s.n, "test": s.test.name()}));
    json!({
        "name": w.name,
        "description": w.description,
        "command": w.command,
        "traced_exe": w.traced_exe,
        "events": w.events,
        "threads": w.threads,
        "error": w.error,
        "spearman_external": sp(&w.rho_external),
        "spearman_internal": sp(&w.rho_internal),
        "allocators": w.allocators.iter().map(|a| {
            let peaks = a.peaks(m);
            let (mean, sd) = mean_sd(&peaks);
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
                "peak_rss_mean_bytes": mean,
                "peak_rss_sd_bytes": sd,
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
        "machine": {"cpu": s.machine.cpu, "cores": s.machine.cores, "memory_bytes": s.machine.memory, "kernel": s.machine.kernel, "os": s.machine.os},
        "runs_per_allocator": s.runs,
        "rss_method": match s.rss_method { RssMethod::Rusage => "rusage", RssMethod::Proc => "proc" },
        "strong_rho_threshold": STRONG_RHO,
        "workloads_with_rho": with,
        "workloads_rho_above_threshold": strong,
        "workloads": s.workloads.iter().map(|w| workload_json(w, s.rss_method)).collect::<Vec<_>>(),
    })
}

fn method_md(s: &Study) -> String {
    format!(
        "Each workload is traced once (`heaplab trace`; the process image with the most heap events is kept), the trace is replayed under every \
         allocator (`heaplab replay`) and its external fragmentation measured (`heaplab frag`: page-local gaps below the highest live block of \
         each page, times time, over the total job area; equation 3.1 of the thesis). The real program then runs {} times under each allocator, \
         the allocators taking turns, and its peak RSS is measured ({}). Spearman's ρ is computed between fragmentation and peak RSS over all \
         allocator × run pairs (ties get average ranks); its two-sided p-value comes from the exact permutation distribution for n ≤ 9 and from \
         the t-approximation with n − 2 degrees of freedom otherwise. ρ > {STRONG_RHO} is the paper's \"strong monotonic relation\".",
        s.runs,
        match s.rss_method {
            RssMethod::Rusage => "wait4's ru_maxrss; /proc sampling where it reports nothing",
            RssMethod::Proc => "sampling /proc every 4 ms: VmHWM and the process tree's summed VmRSS",
        }
    )
}

/// The cells of an allocator's row in the per-workload tables: name, external, internal,
/// makespan − max load, jobs, mappings, peak RSS, replay speed.
fn allocator_cells(a: &crate::AllocatorResult, m: RssMethod) -> [String; 8] {
    let (mean, sd) = mean_sd(&a.peaks(m));
    let rate = if a.replay_seconds > 0.0 { a.replay_requests as f64 / a.replay_seconds } else { 0.0 };
    [
        a.name.clone(),
        format!("{:.2}%", a.external * 100.0),
        format!("{:.2}%", a.internal * 100.0),
        format!("{:.2} MiB", a.makespan_excess as f64 / MIB),
        a.jobs.to_string(),
        a.mappings.to_string(),
        format!("{:.2} ± {:.2}", mean / MIB, sd / MIB),
        format!("{:.2}M req/s", rate / 1e6),
    ]
}

/// The Markdown report.
pub fn markdown(s: &Study) -> String {
    let mut o = String::new();
    let (strong, with) = s.strong();
    let _ = writeln!(o, "# heaplab study: 2-D fragmentation vs peak RSS\n");
    let _ = writeln!(o, "Machine: {}. Date: {}. heaplab {}. Runs per allocator: {}.\n", s.machine.describe(), s.date, s.version, s.runs);
    let _ = writeln!(o, "Command: `{}`\n", s.invocation);
    let _ = writeln!(o, "{}\n", method_md(s));
    let _ = writeln!(o, "## Summary\n\n**ρ > {STRONG_RHO} in {strong} of {with} workloads** (the published study found 13 of 28).\n");
    let _ = writeln!(o, "| workload | jobs | external frag. range | peak RSS range (MiB) | ρ external | p | ρ internal | p |");
    let _ = writeln!(o, "|---|---:|---|---|---:|---:|---:|---:|");
    for w in &s.workloads {
        if let Some(e) = &w.error {
            let _ = writeln!(o, "| {} | — | failed: {} | | | | | |", w.name, e.replace('|', "/"));
            continue;
        }
        let ext: Vec<f64> = w.allocators.iter().map(|a| a.external * 100.0).collect();
        let rss: Vec<f64> = w.allocators.iter().map(|a| mean_sd(&a.peaks(s.rss_method)).0 / MIB).collect();
        let range = |v: &[f64], d: usize| format!("{:.d$}–{:.d$}", v.iter().cloned().fold(f64::INFINITY, f64::min), v.iter().cloned().fold(f64::NEG_INFINITY, f64::max));
        let jobs = w.allocators.first().map_or(0, |a| a.jobs);
        let _ = writeln!(
            o,
            "| {} | {} | {}% | {} | {} | {} | {} | {} |",
            w.name,
            jobs,
            range(&ext, 2),
            range(&rss, 2),
            rho_text(&w.rho_external),
            p_text(&w.rho_external),
            rho_text(&w.rho_internal),
            p_text(&w.rho_internal)
        );
    }
    for w in s.workloads.iter().filter(|w| w.error.is_none()) {
        let _ = writeln!(o, "\n## {}\n\n{}. Command: `{}`. Replayed: `{}` ({} events, {} thread{}).\n", w.name, w.description, command_text(&w.command), w.traced_exe, w.events, w.threads, if w.threads == 1 { "" } else { "s" });
        let _ = writeln!(o, "| allocator | external | internal | makespan − max load | jobs | mappings | peak RSS mean ± sd (MiB) | replay |");
        let _ = writeln!(o, "|---|---:|---:|---:|---:|---:|---:|---:|");
        for a in &w.allocators {
            let _ = writeln!(o, "| {} |", allocator_cells(a, s.rss_method).join(" | "));
        }
        let _ = writeln!(o, "\nSpearman ρ (external, peak RSS) = {}, p = {}; (internal, peak RSS) = {}, p = {}.\n", rho_text(&w.rho_external), p_text(&w.rho_external), rho_text(&w.rho_internal), p_text(&w.rho_internal));
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
code{background:#f4f4f2;padding:0 .25em;border-radius:3px;font-size:.92em}.plots img{max-width:49%;height:auto;border:1px solid #eee}\
.fail{color:#b42318}";

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
    let _ = write!(o, "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>heaplab study</title><style>{CSS}</style></head><body>");
    let _ = write!(o, "<h1>Does 2-D fragmentation predict peak RSS?</h1><p class=\"meta\">{} · {} · heaplab {} · {} runs per allocator</p>", esc(&s.machine.describe()), esc(&s.date), esc(&s.version), s.runs);
    let _ = write!(o, "<p class=\"big\">Spearman ρ &gt; {STRONG_RHO} in <b>{strong} of {with}</b> workloads. The published study found 13 of 28.</p>");
    let _ = write!(o, "<p>{}</p><p class=\"meta\">Command: <code>{}</code></p>", esc(&method_md(s)).replace('`', ""), esc(&s.invocation));
    let _ = write!(o, "<h2>Summary</h2><table><tr><th>workload</th><th>jobs</th><th>external fragmentation</th><th>peak RSS (MiB)</th><th>ρ external</th><th>p</th><th>ρ internal</th><th>p</th></tr>");
    for w in &s.workloads {
        if let Some(e) = &w.error {
            let _ = write!(o, "<tr><td>{}</td><td colspan=\"7\" class=\"fail\">failed: {}</td></tr>", esc(&w.name), esc(e));
            continue;
        }
        let ext: Vec<f64> = w.allocators.iter().map(|a| a.external * 100.0).collect();
        let rss: Vec<f64> = w.allocators.iter().map(|a| mean_sd(&a.peaks(s.rss_method)).0 / MIB).collect();
        let range = |v: &[f64], d: usize, u: &str| format!("{:.d$}{u} – {:.d$}{u}", v.iter().cloned().fold(f64::INFINITY, f64::min), v.iter().cloned().fold(f64::NEG_INFINITY, f64::max));
        let _ = write!(
            o,
            "<tr><td><a href=\"#{}\">{}</a></td><td>{}</td><td>{}</td><td>{}</td><td class=\"{}\">{}</td><td>{}</td><td class=\"{}\">{}</td><td>{}</td></tr>",
            slug(&w.name),
            esc(&w.name),
            w.allocators.first().map_or(0, |a| a.jobs),
            range(&ext, 2, "%"),
            range(&rss, 2, ""),
            rho_class(&w.rho_external),
            rho_text(&w.rho_external),
            p_text(&w.rho_external),
            rho_class(&w.rho_internal),
            rho_text(&w.rho_internal),
            p_text(&w.rho_internal)
        );
    }
    let _ = write!(o, "</table>");
    for w in s.workloads.iter().filter(|w| w.error.is_none()) {
        let n = slug(&w.name);
        let _ = write!(o, "<h2 id=\"{n}\">{}</h2><p>{}. Replayed <code>{}</code>: {} events, {} thread{}.</p><p class=\"meta\">Command: <code>{}</code></p>", esc(&w.name), esc(&w.description), esc(&w.traced_exe), w.events, w.threads, if w.threads == 1 { "" } else { "s" }, esc(&command_text(&w.command)));
        let _ = write!(o, "<table><tr><th>allocator</th><th>external</th><th>internal</th><th>makespan − max load</th><th>jobs</th><th>mappings</th><th>peak RSS (MiB, mean ± sd)</th><th>replay</th></tr>");
        for a in &w.allocators {
            let cells: Vec<String> = allocator_cells(a, s.rss_method).iter().map(|c| format!("<td>{}</td>", esc(c))).collect();
            let _ = write!(o, "<tr>{}</tr>", cells.concat());
        }
        let _ = write!(
            o,
            "</table><p>Spearman ρ (external fragmentation, peak RSS) = <b class=\"{}\">{}</b>, p = {}; (internal, peak RSS) = {}, p = {}.</p>",
            rho_class(&w.rho_external),
            rho_text(&w.rho_external),
            p_text(&w.rho_external),
            rho_text(&w.rho_internal),
            p_text(&w.rho_internal)
        );
        let _ = write!(o, "<div class=\"plots\"><img src=\"{n}-scatter.png\" alt=\"{0} scatter\"> <img src=\"{n}-frag-time.png\" alt=\"{0} over time\"></div>", esc(&w.name));
    }
    let _ = write!(o, "<p class=\"meta\">Every number is in <a href=\"results.json\">results.json</a>.</p></body></html>");
    o
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
