//! `heaplab compare`: the HPT analysis of configurations against a reference. With `--pyperf`
//! it reads pyperf files (the reference first); with `--config`/`--workload` it measures them
//! with the runner of `heaplab_decide::runner` (checkpointing DIR/results.json after every run,
//! `--resume` to continue an interrupted measurement). Either way it prints the chapter-2 table
//! (configurations × metrics: cross-application speedup with confidence, or MI/PD) and the
//! per-workload comparisons, and writes DIR/results.json (every raw sample, provenance, the
//! analysis), DIR/report.md, DIR/index.html and one ECDF picture of per-workload speedups per
//! metric (DIR/ecdf-METRIC.png). `--suite default` measures the study suite's programs with the
//! runner; `--suite pyperformance` has `heaplab_decide::pyperformance` run pyperformance per
//! configuration and analyses its files as `--pyperf` does.

use crate::Failure;
use clap::Args;
use heaplab_decide::hpt::{analyse, pct, Analysis, InAppVerdict, Options};
use heaplab_decide::pyperf::{self, Input};
use heaplab_decide::results::Results;
use heaplab_decide::runner::{self, ConfigSpec, MetricKind, Plan, Runner, RunnerError, WorkloadSpec};
use heaplab_decide::suites;
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

Suites: --suite default measures the programs of `heaplab study --suite default` (their inputs
written to a scratch directory; --benchmarks keeps some) under --configs allocators (glibc,
jemalloc, mimalloc, tcmalloc) unless --configs/--config say otherwise. --suite pyperformance
--python PATH runs pyperformance for that Python once per configuration and pass (time, then
memory with --track-memory), the allocator preloaded and the settings passed to pyperf's
workers with --inherit-environ, under --configs cpython-dsa (pymalloc_glibc = the default and
reference, pymalloc_mimalloc, pymalloc_jemalloc, and without pymalloc, PYTHONMALLOC=malloc:
mimalloc, jemalloc, malloc), on the thesis' Table 2.2 benchmarks unless --benchmarks; --fast,
--rigorous and --min-time are pyperf's; the pyperf files are analysed as --pyperf analyses
them and copied into DIR/pyperf/. The report says whether the Python is a PGO/LTO release build.

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
  heaplab compare --suite pyperformance --python /usr/bin/python3 --configs cpython-dsa --fast -o cpy/
  heaplab compare --suite default --runs 10 --metrics time,cpu,rss -o suite/
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
    /// (cachegrind, slow) [default: time,cpu,rss,energy]; with --suite pyperformance: time,
    /// memory [default: both].
    #[arg(long, value_name = "LIST")]
    metrics: Option<String>,
    /// A ready-made workload suite: `default` (the programs of `heaplab study --suite default`,
    /// measured by the runner) or `pyperformance` (run by pyperformance for --python).
    #[arg(long, value_name = "NAME", value_parser = ["default", "pyperformance"], conflicts_with_all = ["pyperf", "workload"])]
    suite: Option<String>,
    /// A named configuration set: cpython-dsa (pymalloc on/off x glibc/jemalloc/mimalloc,
    /// reference pymalloc_glibc) or allocators (glibc, jemalloc, mimalloc, tcmalloc); --config
    /// entries are added after it. Default with --suite: cpython-dsa for pyperformance,
    /// allocators for default.
    #[arg(long, value_name = "SET", conflicts_with = "pyperf")]
    configs: Option<String>,
    /// Only these benchmarks (--suite pyperformance; default: the thesis' Table 2.2 set) or
    /// workloads (--suite default), comma-separated.
    #[arg(long, value_name = "LIST", requires = "suite")]
    benchmarks: Option<String>,
    /// The Python whose benchmarks pyperformance runs (--suite pyperformance).
    #[arg(long, value_name = "PATH")]
    python: Option<String>,
    /// The pyperformance executable (default: .venv-bench/bin/pyperformance, .venv/bin/pyperformance, or on PATH).
    #[arg(long, value_name = "PATH")]
    pyperformance: Option<String>,
    /// pyperf's --fast preset (10 worker processes x 2 values per benchmark instead of 20 x 3).
    #[arg(long, conflicts_with = "rigorous")]
    fast: bool,
    /// pyperf's --rigorous preset (40 worker processes x 3 values).
    #[arg(long)]
    rigorous: bool,
    /// pyperf's --min-time: the shortest duration of one value, seconds (pyperf's default 0.1).
    #[arg(long, value_name = "SECONDS")]
    min_time: Option<f64>,
    /// Where pyperformance runs and keeps its per-Python venvs and the raw pyperf files until
    /// the report is written (default: $XDG_CACHE_HOME or ~/.cache, heaplab/pyperformance).
    #[arg(long, value_name = "DIR")]
    work_dir: Option<String>,
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
    if a.suite.as_deref() != Some("pyperformance") {
        for (given, flag) in [(a.python.is_some(), "--python"), (a.pyperformance.is_some(), "--pyperformance"), (a.fast, "--fast"), (a.rigorous, "--rigorous"), (a.min_time.is_some(), "--min-time"), (a.work_dir.is_some(), "--work-dir")] {
            if given {
                return Err(Failure::Input(format!("{flag} goes with --suite pyperformance")));
            }
        }
    }
    let (results, extra) = match a.suite.as_deref() {
        Some("pyperformance") => pyperformance_suite(&a)?,
        Some(_) => {
            // The default suite: its inputs are written into a scratch directory, the runner's
            // working directory (the commands name the inputs relative to it).
            let scratch = heaplab_study::outdir::Scratch::create().map_err(|e| Failure::Work(format!("cannot create a scratch directory: {e}")))?;
            let only: Option<Vec<&str>> = a.benchmarks.as_deref().map(|b| b.split(',').map(str::trim).filter(|x| !x.is_empty()).collect());
            let inputs = scratch.subdir("inputs").map_err(|e| Failure::Work(format!("cannot create a scratch directory: {e}")))?;
            let workloads = suites::default_suite(&inputs, only.as_deref())?;
            let configs = configurations(&a, "allocators")?;
            (measure(&a, configs, workloads, inputs)?, Vec::new())
        }
        None if !a.pyperf.is_empty() => {
            let inputs: Vec<Input> = a.pyperf.iter().map(|s| Input::parse(s)).collect();
            (pyperf::read(&inputs)?, Vec::new())
        }
        None if !a.config.is_empty() || !a.workload.is_empty() || a.configs.is_some() => {
            let cwd = std::env::current_dir().map_err(|e| Failure::Work(format!("cannot read the current directory: {e}")))?;
            let workloads = a.workload.iter().map(|w| WorkloadSpec::parse(w)).collect::<Result<_, _>>()?;
            (measure(&a, configurations(&a, "")?, workloads, cwd)?, Vec::new())
        }
        None => return Err(Failure::Input("nothing to compare: give --config and --workload to measure, --suite default|pyperformance, or --pyperf FILES to analyse".into())),
    };
    report(&a.output, &results, &opts, &extra)
}

/// The configurations to measure: the named set (`--configs`, else `default_set` when not
/// empty), then the `--config` entries.
fn configurations(a: &CompareArgs, default_set: &str) -> Result<Vec<ConfigSpec>, Failure> {
    let mut out = Vec::new();
    match a.configs.as_deref() {
        Some(set) => out.extend(suites::config_set(set)?),
        None if !default_set.is_empty() && a.config.is_empty() => out.extend(suites::config_set(default_set)?),
        None => {}
    }
    for c in &a.config {
        out.push(ConfigSpec::parse(c)?);
    }
    Ok(out)
}

/// `--suite pyperformance`: pyperformance for each configuration and pass, the pyperf files
/// kept under the work directory until the report (which gets them under `pyperf/`) is written.
/// Files added to a report: a name inside DIR and the bytes.
type Extra = Vec<(String, Vec<u8>)>;

fn pyperformance_suite(a: &CompareArgs) -> Result<(Results, Extra), Failure> {
    use heaplab_decide::pyperformance::{self as pp, Mode, Pass, Step, Study};
    let python = a.python.as_deref().ok_or_else(|| Failure::Input("--suite pyperformance needs --python PATH (the Python to benchmark)".into()))?;
    let cwd = std::env::current_dir().map_err(|e| Failure::Work(format!("cannot read the current directory: {e}")))?;
    let python = if python.contains('/') {
        cwd.join(python)
    } else {
        let found = std::env::var_os("PATH").into_iter().flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>()).map(|d| d.join(python)).find(|p| p.is_file());
        found.ok_or_else(|| Failure::Input(format!("--python {python}: not found on PATH")))?
    };
    let build = pp::inspect_python(&python)?;
    let candidates = [cwd.join(".venv-bench/bin/pyperformance"), cwd.join(".venv/bin/pyperformance")];
    let pyperformance = pp::find(a.pyperformance.as_deref().map(std::path::Path::new), &candidates)?;
    let benchmarks: Vec<String> = match &a.benchmarks {
        Some(b) => b.split(',').map(|x| x.trim().to_string()).filter(|x| !x.is_empty()).collect(),
        None => pp::TABLE_2_2.iter().map(|b| b.to_string()).collect(),
    };
    if benchmarks.is_empty() {
        return Err(Failure::Input("--benchmarks: no benchmark given".into()));
    }
    if let Some(t) = a.min_time {
        if !(t > 0.0 && t.is_finite()) {
            return Err(Failure::Input(format!("--min-time {t}: must be a positive number of seconds")));
        }
    }
    let configs = configurations(a, "cpython-dsa")?;
    let mut plan_check = Plan { configs, workloads: vec![WorkloadSpec { name: "pyperformance".into(), command: String::new() }], metrics: Vec::new(), runs: 2, warmup: 0, timeout: std::time::Duration::ZERO, cwd: cwd.clone(), powercap_root: std::path::PathBuf::new() };
    plan_check.check(a.reference.as_deref())?;
    let work = match &a.work_dir {
        Some(d) => cwd.join(d),
        None => std::env::var_os("XDG_CACHE_HOME").map(std::path::PathBuf::from).or_else(|| std::env::var_os("HOME").map(|h| std::path::PathBuf::from(h).join(".cache"))).unwrap_or_else(|| cwd.clone()).join("heaplab/pyperformance"),
    };
    // The output directory is checked now, before the long runs.
    drop(crate::outputs::report_dir(&a.output)?);
    let study = Study {
        pyperformance,
        python,
        benchmarks,
        configs: plan_check.configs,
        passes: Pass::parse_list(a.metrics.as_deref().unwrap_or("time,memory"))?,
        mode: if a.fast { Mode::Fast } else if a.rigorous { Mode::Rigorous } else { Mode::Default },
        min_time: a.min_time,
        rundir: work.join("runs").join(file_safe(a.output.trim_end_matches('/'))),
        workdir: work,
    };
    eprintln!("heaplab: Python {}", build.describe());
    eprintln!("heaplab: pyperformance {} on {} benchmark(s) x {} configuration(s) x {} pass(es); raw files in {}", study.pyperformance.display(), study.benchmarks.len(), study.configs.len(), study.passes.len(), study.rundir.display());
    let t0 = std::time::Instant::now();
    let mut progress = |k: usize, n: usize, c: &ConfigSpec, p: Pass, s: Step| {
        let what = if s == Step::Reused { "reused (--resume)" } else { "running" };
        eprintln!("heaplab: [{}/{n}] {} {}: {what} (elapsed {})", k + 1, c.name, p.metric(), clock(t0.elapsed().as_secs_f64()));
    };
    let results = pp::measure(&study, &build, a.resume, &mut progress).map_err(|e| Failure::Input(format!("{e}\n(finished runs are kept in {}: the same command with --resume reuses them)", study.rundir.display())))?;
    let mut extra = Vec::new();
    for (_, _, inv) in study.invocations() {
        let name = inv.output.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let bytes = std::fs::read(&inv.output).map_err(|e| Failure::Work(format!("{}: cannot read: {e}", inv.output.display())))?;
        extra.push((format!("pyperf/{name}"), bytes));
    }
    Ok((results, extra))
}

/// Measures the configurations × workloads of `a` into DIR/results.json, one checkpoint per run.
fn measure(a: &CompareArgs, configs: Vec<ConfigSpec>, workloads: Vec<WorkloadSpec>, cwd: std::path::PathBuf) -> Result<Results, Failure> {
    let mut plan = Plan {
        configs,
        workloads,
        metrics: MetricKind::parse_list(a.metrics.as_deref().unwrap_or("time,cpu,rss,energy"))?,
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
    let caught = crate::interrupt::Caught::start();
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
    let stopped = || caught.caught();
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
    drop(caught);
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
fn report(a_output: &str, results: &Results, opts: &Options, extra: &[(String, Vec<u8>)]) -> Result<(), Failure> {
    let analysis = analyse(results, opts);
    let staging = crate::outputs::report_dir(a_output)?;
    let dir = staging.dir().to_path_buf();
    let write = |name: &str, bytes: &[u8]| -> Result<(), Failure> {
        let p = dir.join(name);
        files::write_atomic(&p.to_string_lossy(), |w| w.write_all(bytes)).map_err(|e| Failure::Work(format!("{}: cannot write: {e}", p.display())))
    };
    let doc = results.to_json(analysis.to_json());
    write("results.json", serde_json::to_string_pretty(&doc).expect("JSON of plain values").as_bytes())?;
    for (name, bytes) in extra {
        if let Some(d) = dir.join(name).parent() {
            std::fs::create_dir_all(d).map_err(|e| Failure::Work(format!("{}: cannot create: {e}", d.display())))?;
        }
        write(name, bytes)?;
    }
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
    let suite = &p["suite"];
    if suite["name"].as_str() == Some("pyperformance") {
        let mut notes = vec![format!("Python: {}", suite["python"]["build"].as_str().unwrap_or("?"))];
        notes.push(format!("configure: {}", suite["python"]["config_args"].as_str().unwrap_or("?")));
        notes.push(format!("{}; pyperf preset: {}{}", suite["pyperformance"].as_str().unwrap_or("pyperformance"), suite["mode"].as_str().unwrap_or("?"),
            suite["min_time"].as_f64().map(|t| format!(", --min-time {t}")).unwrap_or_default()));
        let names: Vec<&str> = suite["benchmarks"].as_array().into_iter().flatten().filter_map(|b| b.as_str()).collect();
        notes.push(format!("benchmarks asked for: {}", names.join(", ")));
        for c in suite["commands"].as_array().into_iter().flatten().filter_map(|c| c.as_str()) {
            notes.push(format!("`{c}`"));
        }
        for n in suite["notes"].as_array().into_iter().flatten().filter_map(|n| n.as_str()) {
            notes.push(n.to_string());
        }
        return Some(Section { title: "Measured (pyperformance)".into(), rows: Vec::new(), notes });
    }
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
