//! `heaplab compare`: the HPT analysis of configurations against a reference. With `--pyperf`
//! it reads pyperf files (the reference first); with `--config`/`--workload` it measures them
//! with the runner of `heaplab_decide::runner` (checkpointing DIR/results.json after every run,
//! `--resume` to continue an interrupted measurement). Either way it prints the chapter-2 table
//! (configurations × metrics: cross-application speedup with confidence, or MI/PD) and the
//! per-workload comparisons, and writes DIR/results.json (every raw sample, provenance, the
//! analysis), DIR/report.md, DIR/index.html and one ECDF picture of per-workload speedups per
//! metric (DIR/ecdf-METRIC.png).

use crate::Failure;
use clap::Args;
use heaplab_decide::hpt::{analyse, pct, Analysis, InAppVerdict, Options};
use heaplab_decide::pyperf::{self, Input};
use heaplab_decide::results::Results;
use heaplab_decide::runner::{self, ConfigSpec, MetricKind, Plan, Runner, RunnerError, WorkloadSpec};
use heaplab_decide::DecideError;
use heaplab_model::files;
use heaplab_plot::chart::{AxisFormat, Chart, Point, Series, Style};

impl From<DecideError> for Failure {
    fn from(e: DecideError) -> Self {
        match e {
            DecideError::Input(m) => Failure::Input(m),
        }
    }
}

/// Long help of `heaplab compare`: every statistic in a sentence.
pub const COMPARE_HELP: &str = "\
Compare configurations (allocators, builds, settings) against a reference with stated
confidence, by the HPT method (Chen et al., HPCA 2012) as the thesis' chapter 2 applies it.

Measuring: --config NAME=ALLOCATOR[,KEY=VALUE...] (glibc, jemalloc, mimalloc, tcmalloc or a path
to a .so, preloaded; KEY=VALUE set in the environment; the first --config is the reference unless
--reference) and --workload NAME=COMMAND (run by sh -c in the current directory, standard input
/dev/null unless redirected). Every workload runs under every configuration --warmup + --runs
times, interleaved: round by round, each workload under each configuration once per round, so
that slow drifts of the machine spread over all configurations; warm-up rounds are kept in
results.json apart and never analysed. Metrics (--metrics):
  time                wall time of the run (seconds).
  cpu                 user + system CPU time of the command and the children it waited for.
  rss                 peak resident set size (wait4's ru_maxrss, as heaplab study measures it).
  energy              RAPL energy through /sys/class/powercap (package, core and DRAM domains,
                      joules; machine-wide during the run). Where the counters cannot be read
                      the metric is left out and the report says \"not available on this machine\".
  l1d                 L1 data-cache misses (reads + writes) from valgrind --tool=cachegrind, a
                      second, much slower run of the same command (valgrind must be installed).
DIR/results.json is rewritten after every run: an interrupted measurement (Ctrl-C, kill) keeps
every finished run; the same command with --resume continues it. A workload that fails or
crashes stops the measurement with exit status 2, naming it, its exit status or signal and the
end of its standard error; the runs taken so far stay in DIR/results.json.

Analysing: --pyperf pyperf / pyperformance JSON files (optionally .json.gz), the reference first.
Each file is one configuration (named after the file, or NAME=FILE); files with the same NAME add
metrics (a timing file and a --track-memory file: time and memory).

The statistics:
  in-app comparison   per workload, the one-sided Wilcoxon rank-sum (Mann-Whitney) test of the
                      configuration's samples against the reference's; its confidence is 1 - p
                      (exact distribution up to 50 samples a side without ties, else the normal
                      approximation with tie correction).
  speedup (median)    the reference's median over the configuration's (inverted where higher is
                      better): above 1 means the configuration is better on that workload.
  stable              pyperf's checks: standard deviation under 10% of the mean, minimum and
                      maximum within 50% of the mean (measured wall times: and at least 1 ms);
                      unstable workloads are left out (unless --keep-unstable).
  common subset       the workloads stable and measured under every configuration and (unless
                      --keep-insignificant) significantly different for every configuration.
  cross-app speedup   the largest r (in steps of --step) for which the signed-rank test over the
                      workloads still says \"the configuration is r times better\" with the asked
                      --confidence; a lower bound for an arbitrary application, printed with its
                      confidence.
  MI                  marginal improvement: neither significantly better nor worse across
                      applications; the percentage is the confidence that it is better.
  PD                  performance degradation: worse than the reference across applications, with
                      that confidence.
  ECDF                per metric, the distribution over workloads of each configuration's
                      geometric-mean speedup (the thesis' figures 2.3-2.6).

Examples:
  heaplab compare --runs 30 --warmup 1 --config ref=glibc --config je=jemalloc \\
      --config mi=mimalloc,MIMALLOC_ARENA_EAGER_COMMIT=1 \\
      --workload 'sqlite=sqlite3 :memory: < script.sql' --workload 'jq=jq -f filter.jq in.json' \\
      --metrics time,cpu,rss,energy -o cmp/
  heaplab compare --pyperf ref=base.json je=jemalloc.json mi=mimalloc.json -o cmp/
  heaplab rank cmp/results.json --best memory --worst time";

/// Arguments of `heaplab compare`.
#[derive(Args)]
pub struct CompareArgs {
    /// pyperf result files, the reference first: FILE or NAME=FILE (several files with one NAME
    /// add metrics to that configuration).
    #[arg(long, num_args = 1.., value_name = "[NAME=]FILE", conflicts_with_all = ["config", "workload", "resume"])]
    pyperf: Vec<String>,
    /// A configuration to measure: NAME=ALLOCATOR[,KEY=VALUE...] (allocator glibc, jemalloc,
    /// mimalloc, tcmalloc or a .so path; KEY=VALUE environment settings). Repeat it; the first
    /// is the reference unless --reference.
    #[arg(long, value_name = "NAME=ALLOCATOR[,KEY=VALUE...]")]
    config: Vec<String>,
    /// A workload to measure: NAME=COMMAND, run by sh -c (redirections allowed). Repeat it.
    #[arg(long, value_name = "NAME=COMMAND")]
    workload: Vec<String>,
    /// The configuration the others are compared with (default: the first --config).
    #[arg(long, value_name = "NAME")]
    reference: Option<String>,
    #[arg(long, default_value_t = 10, value_name = "N", value_parser = crate::flag_ranges::COMPARE_RUNS.parser::<usize>(),
        help = crate::flag_ranges::COMPARE_RUNS.help("Measured runs per configuration and workload."))]
    runs: usize,
    #[arg(long, default_value_t = 1, value_name = "N", value_parser = crate::flag_ranges::COMPARE_WARMUP.parser::<usize>(),
        help = crate::flag_ranges::COMPARE_WARMUP.help("Warm-up runs before them (kept apart, never analysed)."))]
    warmup: usize,
    /// What to measure, comma-separated: time, cpu, rss, energy (where RAPL is readable), l1d
    /// (cachegrind, slow).
    #[arg(long, default_value = "time,cpu,rss,energy", value_name = "LIST")]
    metrics: String,
    #[arg(long, default_value_t = 600, value_name = "SECONDS", value_parser = crate::flag_ranges::STUDY_TIMEOUT.parser::<u64>(),
        help = crate::flag_ranges::STUDY_TIMEOUT.help("Kill a run after this many seconds (it then counts as failed)."))]
    timeout: u64,
    /// Continue the interrupted measurement in DIR (the same --config, --workload, --metrics,
    /// --runs and --warmup).
    #[arg(long)]
    resume: bool,
    /// Directory for results.json, report.md, index.html and the ECDF pictures (replaced if it
    /// holds a previous report).
    #[arg(short = 'o', long = "output", value_name = "DIR")]
    output: String,
    /// Confidence a conclusion needs (0.5 < c < 1).
    #[arg(long, default_value_t = 0.95)]
    confidence: f64,
    /// Step of the cross-app speedup search.
    #[arg(long, default_value_t = 0.005)]
    step: f64,
    /// Keep workloads without a significant in-app difference (HPT counts them as zero
    /// differences) instead of dropping them as the thesis does.
    #[arg(long)]
    keep_insignificant: bool,
    /// Analyse workloads that pyperf's stability checks reject (the thesis leaves them out).
    #[arg(long)]
    keep_unstable: bool,
}

/// `heaplab compare`.
pub fn compare(a: CompareArgs) -> Result<(), Failure> {
    if !(a.confidence > 0.5 && a.confidence < 1.0) {
        return Err(Failure::Input(format!("--confidence {}: must lie strictly between 0.5 and 1", a.confidence)));
    }
    if !(a.step > 0.0 && a.step.is_finite()) {
        return Err(Failure::Input(format!("--step {}: must be a positive number", a.step)));
    }
    let opts = Options { confidence: a.confidence, step: a.step, keep_insignificant: a.keep_insignificant, keep_unstable: a.keep_unstable, ..Options::default() };
    let results = if !a.pyperf.is_empty() {
        let inputs: Vec<Input> = a.pyperf.iter().map(|s| Input::parse(s)).collect();
        pyperf::read(&inputs)?
    } else if !a.config.is_empty() || !a.workload.is_empty() {
        measure(&a)?
    } else {
        return Err(Failure::Input("nothing to compare: give --config and --workload to measure, or --pyperf FILES to analyse".into()));
    };
    report(&a.output, &results, &opts)
}

/// Set by SIGINT and SIGTERM while the runner measures.
static STOP: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

extern "C" fn on_stop(_: libc::c_int) {
    STOP.store(true, std::sync::atomic::Ordering::Relaxed);
}

/// Measures the configurations × workloads of `a` into DIR/results.json, one checkpoint per run.
fn measure(a: &CompareArgs) -> Result<Results, Failure> {
    let cwd = std::env::current_dir().map_err(|e| Failure::Work(format!("cannot read the current directory: {e}")))?;
    let mut plan = Plan {
        configs: a.config.iter().map(|c| ConfigSpec::parse(c)).collect::<Result<_, _>>()?,
        workloads: a.workload.iter().map(|w| WorkloadSpec::parse(w)).collect::<Result<_, _>>()?,
        metrics: MetricKind::parse_list(&a.metrics)?,
        runs: a.runs,
        warmup: a.warmup,
        timeout: std::time::Duration::from_secs(a.timeout),
        cwd,
        powercap_root: heaplab_decide::rapl::POWERCAP_ROOT.into(),
    };
    plan.check(a.reference.as_deref())?;
    let dir = std::path::PathBuf::from(a.output.trim_end_matches('/'));
    let file = dir.join("results.json");
    let shown = file.display().to_string();
    let previous = if file.is_file() {
        let text = std::fs::read_to_string(&file).map_err(|e| Failure::Input(format!("{shown}: cannot read: {e}")))?;
        let v: serde_json::Value = serde_json::from_str(&text).map_err(|e| Failure::Input(format!("{shown}: not JSON: {e}")))?;
        Some(Results::from_json(&shown, &v)?)
    } else {
        None
    };
    let runner_err = |e: RunnerError| match e {
        RunnerError::Input(m) | RunnerError::Failed(m) => Failure::Input(m),
        RunnerError::Interrupted => Failure::Work("interrupted".into()),
    };
    let mut runner = match previous {
        Some(p) if a.resume && runner::is_partial(&p) => Runner::resume(plan, p, &shown).map_err(runner_err)?,
        Some(p) if runner::is_partial(&p) => {
            return Err(Failure::Input(format!(
                "{shown}: holds an interrupted measurement; add --resume to continue it (same options), or choose another directory"
            )))
        }
        _ if a.resume => return Err(Failure::Input(format!("--resume: {shown} holds no interrupted measurement to continue"))),
        _ => {
            // A previous report (or nothing) is replaced: checked as `--pyperf` checks it, then
            // cleared so that checkpoints never sit beside an older report.
            drop(crate::outputs::report_dir(&a.output)?);
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).map_err(|e| Failure::Input(format!("-o {}: cannot create: {e}", dir.display())))?;
            Runner::new(plan).map_err(runner_err)?
        }
    };
    for n in runner.notes() {
        eprintln!("heaplab: {n}");
    }
    let p = runner.plan();
    let (total, already) = (p.total(), runner.done());
    eprintln!(
        "heaplab: measuring {} configuration(s) × {} workload(s) × ({} run(s) + {} warm-up) = {total} runs{}",
        p.configs.len(),
        p.workloads.len(),
        p.runs,
        p.warmup,
        if already > 0 { format!(", {already} already done") } else { String::new() }
    );
    runner.write_checkpoint(&file).map_err(|e| Failure::Work(format!("{shown}: cannot write: {e}")))?;
    // SAFETY: installing a handler that only stores to an atomic.
    unsafe {
        libc::signal(libc::SIGINT, on_stop as *const () as libc::sighandler_t);
        libc::signal(libc::SIGTERM, on_stop as *const () as libc::sighandler_t);
    }
    let state = std::sync::Arc::new(std::sync::Mutex::new((already, String::new())));
    let shared = state.clone();
    let t0 = std::time::Instant::now();
    let progress = crate::progress::ProgressLine::start(move |el| {
        let (done, what) = shared.lock().map(|s| s.clone()).unwrap_or_default();
        let fresh = done.saturating_sub(already);
        let left = if fresh > 0 { format!(", about {} left", clock(el.as_secs_f64() / fresh as f64 * (total - done) as f64)) } else { String::new() };
        let width = 30;
        let filled = done * width / total.max(1);
        format!("heaplab: [{}{}] {done}/{total} runs{left}{what}", "#".repeat(filled), "-".repeat(width - filled))
    });
    let stopped = || STOP.load(std::sync::atomic::Ordering::Relaxed);
    let outcome = loop {
        if stopped() {
            break Err(RunnerError::Interrupted);
        }
        match runner.step(&stopped) {
            Ok(Some(d)) => {
                runner.write_checkpoint(&file).map_err(|e| Failure::Work(format!("{shown}: cannot write: {e}")))?;
                if let Ok(mut s) = state.lock() {
                    *s = (runner.done(), format!(" (last: {} under {})", d.workload, d.configuration));
                }
            }
            Ok(None) => break Ok(()),
            Err(e) => break Err(e),
        }
    };
    drop(progress);
    // SAFETY: restoring the default dispositions.
    unsafe {
        libc::signal(libc::SIGINT, libc::SIG_DFL);
        libc::signal(libc::SIGTERM, libc::SIG_DFL);
    }
    let kept = format!("{} of {total} runs kept in {shown}", runner.done());
    match outcome {
        Ok(()) => {
            eprintln!("heaplab: measured {total} runs in {}", clock(t0.elapsed().as_secs_f64()));
            let mut results = runner.results().clone();
            results.provenance["complete"] = serde_json::json!(true);
            Ok(results)
        }
        Err(RunnerError::Interrupted) => Err(Failure::Work(format!("interrupted: {kept}; run the same command with --resume to continue"))),
        Err(RunnerError::Failed(m)) => Err(Failure::Input(format!("{m}\n{kept} (fix the workload, then --resume)"))),
        Err(RunnerError::Input(m)) => Err(Failure::Input(m)),
    }
}

/// Seconds as `1:05` or `1:02:05`.
fn clock(s: f64) -> String {
    let s = s.max(0.0).round() as u64;
    if s >= 3600 {
        format!("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
    } else {
        format!("{}:{:02}", s / 60, s % 60)
    }
}

/// The analysis, the report directory (written whole, then installed) and the printed tables.
fn report(a_output: &str, results: &Results, opts: &Options) -> Result<(), Failure> {
    let analysis = analyse(results, opts);
    let staging = crate::outputs::report_dir(a_output)?;
    let dir = staging.dir().to_path_buf();
    let write = |name: &str, bytes: &[u8]| -> Result<(), Failure> {
        let p = dir.join(name);
        files::write_atomic(&p.to_string_lossy(), |w| w.write_all(bytes)).map_err(|e| Failure::Work(format!("{}: cannot write: {e}", p.display())))
    };
    let doc = results.to_json(analysis.to_json());
    write("results.json", serde_json::to_string_pretty(&doc).expect("JSON of plain values").as_bytes())?;
    let mut pictures = Vec::new();
    for m in &results.metrics {
        let name = format!("ecdf-{}.png", file_safe(&m.name));
        write(&name, &heaplab_plot::chart::render_chart_png(&ecdf_chart(results, &analysis, &m.name)))?;
        pictures.push(name);
    }
    write("report.md", markdown(results, &analysis, &pictures).as_bytes())?;
    write("index.html", html(results, &analysis, &pictures).as_bytes())?;
    staging.install().map_err(|e| Failure::Work(format!("{a_output}: cannot install the report: {e}")))?;
    print!("{}", render(&sections(results, &analysis), Form::Text));
    println!("\nreport: {}/report.md, data: {}/results.json", a_output.trim_end_matches('/'), a_output.trim_end_matches('/'));
    Ok(())
}

fn file_safe(s: &str) -> String {
    s.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '_' }).collect()
}

/// One titled table of the output, with notes under it.
struct Section {
    title: String,
    /// Header row first; empty when the section is only notes.
    rows: Vec<Vec<String>>,
    notes: Vec<String>,
}

/// The chapter-2 table (with the subsets as notes) and the per-workload comparisons.
fn sections(r: &Results, a: &Analysis) -> Vec<Section> {
    let others: Vec<&str> = r.configurations.iter().map(|c| c.name.as_str()).filter(|n| *n != r.reference).collect();
    let metrics: Vec<&str> = r.metrics.iter().map(|m| m.name.as_str()).collect();
    let mut out = Vec::new();
    let mut rows = vec![std::iter::once("configuration".to_string()).chain(metrics.iter().map(|m| m.to_string())).collect::<Vec<_>>()];
    for c in &others {
        let mut row = vec![c.to_string()];
        for m in &metrics {
            row.push(a.cell(c, m).map(|x| x.verdict.cell()).unwrap_or_default());
        }
        rows.push(row);
    }
    let mut notes = Vec::new();
    for s in &a.subsets {
        let left = if s.dropped.is_empty() { String::new() } else { format!(", {} left out", s.dropped.len()) };
        notes.push(format!("{}: {} workload(s) analysed{left}", s.metric, s.kept.len()));
        for (w, why) in &s.dropped {
            notes.push(format!("  - {w}: {why}"));
        }
    }
    out.push(Section { title: format!("Cross-application speedup over {} (confidence {})", r.reference, pct(a.options.confidence)), rows, notes });
    for m in &metrics {
        let title = format!("In-app comparisons: {m} (median speedup over {}, verdict, confidence)", r.reference);
        let mut workloads: Vec<&str> = Vec::new();
        for x in a.in_app.iter().filter(|x| x.metric == *m) {
            if !workloads.contains(&x.workload.as_str()) {
                workloads.push(&x.workload);
            }
        }
        if workloads.is_empty() {
            out.push(Section { title, rows: Vec::new(), notes: vec!["(no stable workload common to all configurations)".into()] });
            continue;
        }
        let mut rows = vec![std::iter::once("workload".to_string()).chain(others.iter().map(|c| c.to_string())).collect::<Vec<_>>()];
        for w in &workloads {
            let mut row = vec![w.to_string()];
            for c in &others {
                let cell = a.in_app.iter().find(|x| x.metric == *m && x.workload == *w && x.configuration == *c).map(|x| match x.verdict {
                    InAppVerdict::Better => format!("{:.3} better ({})", x.speedup, pct(x.confidence_better)),
                    InAppVerdict::Worse => format!("{:.3} worse ({})", x.speedup, pct(x.confidence_worse)),
                    InAppVerdict::Unclear => format!("{:.3} unclear ({} better)", x.speedup, pct(x.confidence_better)),
                });
                row.push(cell.unwrap_or_default());
            }
            rows.push(row);
        }
        out.push(Section { title, rows, notes: Vec::new() });
    }
    if let Some(m) = measured(r) {
        out.push(m);
    }
    out
}

/// What the runner measured, from its provenance: the workloads' commands, the runs, the
/// machine and what could not be measured here (energy without RAPL).
fn measured(r: &Results) -> Option<Section> {
    let p = &r.provenance;
    if p.get("source").and_then(|s| s.as_str()) != Some(runner::SOURCE) {
        return None;
    }
    let plan = &p["plan"];
    let mut notes = Vec::new();
    for w in plan["workloads"].as_array().into_iter().flatten() {
        notes.push(format!("workload {}: `{}`", w["name"].as_str().unwrap_or("?"), w["command"].as_str().unwrap_or("?")));
    }
    notes.push(format!("{} run(s) and {} warm-up(s) per configuration and workload, interleaved", plan["runs"], plan["warmup"]));
    let m = &p["machine"];
    notes.push(format!("machine: {}, {} core(s), Linux {}", m["cpu"].as_str().unwrap_or("unknown CPU"), m["cores"], m["kernel"].as_str().unwrap_or("?")));
    for n in p["notes"].as_array().into_iter().flatten().filter_map(|n| n.as_str()) {
        notes.push(n.to_string());
    }
    Some(Section { title: "Measured".into(), rows: Vec::new(), notes })
}

/// How sections are written.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Form {
    Text,
    Markdown,
    Html,
}

/// The sections as aligned text, Markdown or HTML.
fn render(sections: &[Section], form: Form) -> String {
    let esc = |s: &str| s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;");
    let mut out = String::new();
    for s in sections {
        match form {
            Form::Text => out.push_str(&format!("\n{}\n", s.title)),
            Form::Markdown => out.push_str(&format!("\n## {}\n\n", s.title)),
            Form::Html => out.push_str(&format!("<h2>{}</h2>\n", esc(&s.title))),
        }
        if !s.rows.is_empty() {
            let cols = s.rows[0].len();
            let width: Vec<usize> = (0..cols).map(|j| s.rows.iter().map(|r| r[j].chars().count()).max().unwrap_or(0)).collect();
            if form == Form::Html {
                out.push_str("<table>\n");
            }
            for (k, r) in s.rows.iter().enumerate() {
                let cells: Vec<String> = r.iter().enumerate().map(|(j, c)| format!("{c:<w$}", w = width[j])).collect();
                match form {
                    Form::Text => out.push_str(&format!("  {}\n", cells.join("  ").trim_end())),
                    Form::Markdown => {
                        out.push_str(&format!("| {} |\n", cells.join(" | ")));
                        if k == 0 {
                            out.push_str(&format!("|{}|\n", width.iter().map(|w| "-".repeat(w + 2)).collect::<Vec<_>>().join("|")));
                        }
                    }
                    Form::Html => {
                        let tag = if k == 0 { "th" } else { "td" };
                        out.push_str("<tr>");
                        for c in r {
                            out.push_str(&format!("<{tag}>{}</{tag}>", esc(c)));
                        }
                        out.push_str("</tr>\n");
                    }
                }
            }
            if form == Form::Html {
                out.push_str("</table>\n");
            }
        }
        match form {
            Form::Text => s.notes.iter().for_each(|n| out.push_str(&format!("  {n}\n"))),
            Form::Markdown => {
                if !s.notes.is_empty() {
                    out.push('\n');
                }
                s.notes.iter().for_each(|n| out.push_str(&format!("{}\n", if n.starts_with("  - ") { n.clone() } else { format!("- {n}") })));
            }
            Form::Html => {
                if !s.notes.is_empty() {
                    out.push_str("<ul>\n");
                    s.notes.iter().for_each(|n| out.push_str(&format!("<li>{}</li>\n", esc(n.trim_start_matches("  - ")))));
                    out.push_str("</ul>\n");
                }
            }
        }
    }
    out
}

/// The ECDF over the stable common workloads of each configuration's geometric-mean speedup,
/// the reference's own included (as the thesis' figures show it).
fn ecdf_chart(r: &Results, a: &Analysis, metric: &str) -> Chart {
    let mut series = Vec::new();
    for (k, c) in r.configurations.iter().map(|c| c.name.as_str()).enumerate() {
        let mut xs: Vec<f64> = if c == r.reference {
            a.reference_geomeans.iter().filter(|(m, _, _)| m == metric).map(|(_, _, g)| *g).collect()
        } else {
            a.in_app.iter().filter(|x| x.metric == metric && x.configuration == c).map(|x| x.geomean_speedup).collect()
        };
        xs.sort_by(|p, q| p.partial_cmp(q).unwrap_or(std::cmp::Ordering::Equal));
        let n = xs.len() as f64;
        let mut points = Vec::new();
        for (i, &x) in xs.iter().enumerate() {
            points.push(Point { x, y: i as f64 / n, y_err: 0.0 });
            points.push(Point { x, y: (i + 1) as f64 / n, y_err: 0.0 });
        }
        series.push(Series { name: c.to_string(), colour: k, style: Style::Line, points });
    }
    Chart {
        title: format!("ECDF of per-workload speedup over {}: {metric}", r.reference),
        subtitle: "per workload: geometric-mean speedup; right of 1 is better".into(),
        x_label: "speedup (x)".into(),
        y_label: "P(S <= x)".into(),
        x_format: AxisFormat::Number,
        y_format: AxisFormat::Percent,
        y_from_zero: true,
        series,
        ..Chart::default()
    }
}

/// One sentence on reading the table, shared by report.md and index.html.
fn how_to_read(a: &Analysis) -> String {
    format!(
        "A cell `r (c%)` says: across applications the configuration is at least r times better than the reference, with \
         confidence c (HPT: rank-sum test per workload, signed-rank test across workloads, r stepped by {}). `MI (c%)`: a \
         marginal improvement at best; c is the confidence that it is better at all. `PD (c%)`: worse than the reference, \
         with confidence c. See docs/decide.md.",
        a.options.step
    )
}

fn markdown(r: &Results, a: &Analysis, pictures: &[String]) -> String {
    let mut out = String::from("# heaplab compare\n\n");
    out.push_str(&format!("Reference: **{}**. Configurations:\n\n", r.reference));
    for c in &r.configurations {
        out.push_str(&format!("- {}: {}\n", c.name, c.description));
    }
    out.push_str(&render(&sections(r, a), Form::Markdown));
    out.push_str("\n## ECDF of per-workload speedups\n\n");
    for p in pictures {
        out.push_str(&format!("![{p}]({p})\n\n"));
    }
    out.push_str(&format!("## How to read this\n\n{}\n", how_to_read(a)));
    out
}

fn html(r: &Results, a: &Analysis, pictures: &[String]) -> String {
    let esc = |s: &str| s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;");
    let mut out = String::from(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>heaplab compare</title><style>\
         body{font-family:sans-serif;max-width:70em;margin:2em auto;padding:0 1em}table{border-collapse:collapse}\
         td,th{border:1px solid #ccc;padding:.2em .6em;text-align:left}img{max-width:100%}</style></head><body>\n<h1>heaplab compare</h1>\n",
    );
    out.push_str(&format!("<p>Reference: <b>{}</b>.</p>\n<ul>\n", esc(&r.reference)));
    for c in &r.configurations {
        out.push_str(&format!("<li>{}: {}</li>\n", esc(&c.name), esc(&c.description)));
    }
    out.push_str("</ul>\n");
    out.push_str(&render(&sections(r, a), Form::Html));
    out.push_str("<h2>ECDF of per-workload speedups</h2>\n");
    for p in pictures {
        out.push_str(&format!("<p><img src=\"{p}\" alt=\"{p}\"></p>\n"));
    }
    out.push_str(&format!("<h2>How to read this</h2>\n<p>{}</p>\n</body></html>\n", esc(&how_to_read(a))));
    out
}
