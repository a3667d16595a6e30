//! `heaplab study`: for each workload, trace it once, replay the trace under each allocator and
//! measure the replay's fragmentation, run the real program under each allocator N times for
//! its peak RSS, correlate the two over the allocators (Spearman, `heaplab_study::stats`), and
//! write the report directory (`heaplab_study::report`). The loop is the library's
//! (`heaplab_study::pipeline`); this file checks the flags, turns the loop's progress into
//! `heaplab: [k/n] …` lines and prints the summary. Workloads are one command after `--`, or
//! the default suite. The output directory is checked (and its temporary sibling created)
//! before any workload runs, so a bad `-o` costs nothing.

use crate::Failure;
use clap::Args;
use heaplab_model::units::grouped;
use heaplab_study::measure::RssMethod;
use heaplab_study::outdir::{CreateDirError, Scratch};
use heaplab_study::pipeline::{study_workloads, Progress, Step, StudyOptions};
use heaplab_study::suite::Workload;
use heaplab_study::Study;
use std::time::Duration;

pub const STUDY_HELP: &str = "\
Does an allocator's 2-D fragmentation predict its peak RSS? For each workload: trace it once
(the process image with the most heap events is kept), replay the trace under every allocator and
measure the external and internal fragmentation of each placement (see `heaplab frag --help`),
then run the real program under every allocator --runs times, the allocators taking turns, and
measure its peak RSS (wait4's ru_maxrss; --rss proc samples /proc instead). Spearman's rho
between fragmentation and the median peak RSS over the allocators (one point per allocator: the
replay is deterministic, so the runs measure RSS noise, shown separately as each allocator's
min-max range), with its two-sided p-value (exact permutation distribution up to 10 allocators,
t-approximation with n-2 degrees of freedom above), says whether the relation is monotonic; the
paper calls rho > 0.65 strong. With 4 allocators the smallest possible p is 2/4! = 0.083, so no
result can be significant at 0.05; the report says what the test can and cannot show.

Workloads: the command after `--` (run in the current directory; its standard output is
discarded, standard input is /dev/null), or --suite default: perl, xz, xmllint (libxml2),
espeak-ng, tjbench (libjpeg-turbo), sqlite3, python3, jq, php, ruby and lua5.4 on inputs
generated in a temporary directory. Every run must exit 0; a workload that fails is reported
with the end of its standard error (which is otherwise not shown). Files a run creates in its
working directory are removed after it (so `gzip -k big.tar` can run again); --keep-outputs
keeps them.

Writes OUTDIR/index.html (open it in a browser), report.md, results.json and two PNG plots per
workload (peak RSS against fragmentation; fragmentation over time), atomically: into a temporary
directory renamed into place. An existing OUTDIR is replaced only if it holds a previous report.
Prints the summary table (or --json). Exit 2 for bad arguments or an OUTDIR that cannot be
written (checked before anything runs); exit 1 if a workload failed (the report says which).

--gather gathers studies made elsewhere (their OUTDIRs or results.json files, made with the same
--runs and --rss) into one report, as heaplab.dask.study gathers the workloads it studied on a
cluster's workers: nothing runs, and each workload keeps the machine it ran on.

Examples:
  heaplab study --allocators glibc,jemalloc,mimalloc,tcmalloc --runs 10 -o report/ -- gzip -9 -k big.tar
  heaplab study --suite default --runs 10 -o report/
  heaplab study --gather host1/report host2/report -o all/";

/// Arguments of `heaplab study`.
#[derive(Args)]
pub struct StudyArgs {
    /// Allocators, comma-separated: glibc, jemalloc, mimalloc, tcmalloc or library paths.
    #[arg(long, default_value = "glibc,jemalloc,mimalloc,tcmalloc", value_name = "LIST")]
    allocators: String,
    #[arg(long, default_value_t = 10, value_name = "N", value_parser = crate::flag_ranges::STUDY_RUNS.parser::<usize>(),
        help = crate::flag_ranges::STUDY_RUNS.help("Runs of the real program per allocator."))]
    runs: usize,
    /// The report directory.
    #[arg(short, long, value_name = "OUTDIR")]
    output: String,
    /// Run a ready-made workload list instead of a command (only `default` exists).
    #[arg(long, value_name = "NAME", value_parser = ["default"])]
    suite: Option<String>,
    /// Only these workloads of the suite (comma-separated names).
    #[arg(long, value_name = "NAMES")]
    only: Option<String>,
    #[arg(long, default_value_t = 1, value_name = "K", value_parser = crate::flag_ranges::SUITE_SCALE.parser::<u64>(),
        help = crate::flag_ranges::SUITE_SCALE.help("Divide the suite's input sizes by this (1 = full size; larger for quick checks)."))]
    suite_scale: u64,
    /// Peak RSS from wait4's rusage (default) or from sampling /proc.
    #[arg(long, default_value = "rusage", value_parser = crate::options::rss_method())]
    rss: RssMethod,
    #[arg(long, default_value_t = 600, value_name = "SECONDS", value_parser = crate::flag_ranges::STUDY_TIMEOUT.parser::<u64>(),
        help = crate::flag_ranges::STUDY_TIMEOUT.help("Kill a run after this many seconds (it then counts as failed)."))]
    timeout: u64,
    /// Keep the files runs create in the working directory.
    #[arg(long)]
    keep_outputs: bool,
    /// Also keep each replay's placed file in OUTDIR/placed/.
    #[arg(long)]
    keep_placed: bool,
    /// Gather these studies (report directories or results.json files) into one report instead.
    #[arg(long, num_args = 1.., value_name = "RESULTS")]
    gather: Vec<String>,
    /// Print the results as JSON.
    #[arg(long)]
    json: bool,
    /// The program and its arguments (after `--`).
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, value_name = "PROGRAM")]
    command: Vec<String>,
}

/// `heaplab study`.
pub fn study(a: StudyArgs) -> Result<(), Failure> {
    if !a.gather.is_empty() {
        if a.suite.is_some() || !a.command.is_empty() {
            return Err(Failure::Input("--gather writes a report from studies already made: give no --suite and no command".into()));
        }
        let staging = crate::outputs::report_dir(&a.output)?;
        let inputs: Vec<std::path::PathBuf> = a.gather.iter().map(std::path::PathBuf::from).collect();
        let parts = heaplab_study::results::gather(&inputs).map_err(Failure::Input)?;
        let study = Study::new(parts.workloads, parts.runs, parts.rss, invocation());
        let target = heaplab_study::report::install(staging, &study).map_err(Failure::Work)?;
        return finish(&study, &target, a.json);
    }
    let allocs = heaplab_replay::resolve_list(&a.allocators)?;
    match (&a.suite, a.command.is_empty()) {
        (Some(_), false) => return Err(Failure::Input("give either --suite or a command after --, not both".into())),
        (None, true) => return Err(Failure::Input("nothing to study: give a command after --, --suite default or --gather".into())),
        _ => {}
    }
    if a.only.is_some() && a.suite.is_none() {
        return Err(Failure::Input("--only selects workloads of --suite".into()));
    }
    if !a.command.is_empty() && heaplab_trace::launch::find_program(&a.command[0]).is_none() {
        return Err(Failure::Input(format!("{}: program not found (not an executable file, nor in PATH)", a.command[0])));
    }
    let staging = crate::outputs::report_dir(&a.output)?;
    let work = |e: CreateDirError| Failure::Work(e.to_string());
    let scratch = Scratch::create().map_err(work)?;
    let placed_dir = if a.keep_placed { Some(staging.subdir("placed").map_err(work)?) } else { None };
    let opts = StudyOptions {
        allocators: allocs,
        runs: a.runs,
        rss: a.rss,
        timeout: Duration::from_secs(a.timeout.max(1)),
        keep_outputs: a.keep_outputs,
        placed_dir,
        scratch: scratch.dir().to_path_buf(),
    };
    let mut show = |p: Progress| {
        let (tag, name) = (format!("[{}/{}]", p.index + 1, p.count), &p.workload.name);
        match p.step {
            Step::Tracing => eprintln!("heaplab: {tag} {name}: tracing"),
            Step::Replaying { events, allocator } => eprintln!("heaplab: {tag} {name}: replaying {} events under {}", grouped(events), allocator.name),
            Step::Running { run, runs, allocator } => eprintln!("heaplab: {tag} {name}: run {run}/{runs} under {}", allocator.name),
            Step::Failed(e) => eprintln!("heaplab: {tag} {name}: {e}"),
        }
    };
    let results = if a.suite.is_some() {
        let inputs = scratch.subdir("inputs").map_err(work)?;
        let mut suite = heaplab_study::suite::default_suite(&inputs, a.suite_scale).map_err(|e| Failure::Work(format!("cannot write the suite's inputs: {e}")))?;
        if let Some(only) = &a.only {
            let names: Vec<&str> = only.split(',').map(str::trim).filter(|s| !s.is_empty()).collect();
            heaplab_study::suite::select(&mut suite, &names)
                .map_err(|e| Failure::Input(format!("--only {}: no such workload in the suite ({})", e.name, e.known.join(", "))))?;
        }
        study_workloads(&suite, &inputs, &opts, &mut show)
    } else {
        let cwd = std::env::current_dir().map_err(|e| Failure::Work(format!("cannot read the current directory: {e}")))?;
        study_workloads(&[Workload::command(a.command.clone())], &cwd, &opts, &mut show)
    };
    let study = Study::new(results, a.runs, opts.rss, invocation());
    let target = heaplab_study::report::install(staging, &study).map_err(Failure::Work)?;
    finish(&study, &target, a.json)
}

/// The command line as a shell would need it written (for the report).
fn invocation() -> String {
    std::env::args().map(|a| shell_word(&a)).collect::<Vec<_>>().join(" ")
}

/// Prints the study (the summary table and what it can show, or `json`) and says whether a
/// workload failed.
fn finish(study: &Study, target: &std::path::Path, json: bool) -> Result<(), Failure> {
    let (strong, with) = study.strong();
    if json {
        println!("{}", serde_json::to_string_pretty(&heaplab_study::report::study_json(study)).expect("JSON of plain values"));
    } else {
        print!("{}", summary_table(study));
        println!("\nrho > {} in {strong} of {with} workloads", heaplab_study::STRONG_RHO);
        println!("report         {}", target.join("index.html").display());
        let limits = heaplab_study::report::interpretation(study);
        if !limits.is_empty() {
            println!("\nWhat the correlation can and cannot show (also in the report):");
        }
        for line in limits {
            println!("{}", wrap(&line, 100, "- ", "  "));
        }
    }
    if study.workloads.iter().any(|w| w.error.is_some()) {
        return Err(Failure::Work("some workloads failed (see the report)".into()));
    }
    Ok(())
}

/// The human summary: per workload its allocators (points), ρ and exact p for external and
/// internal fragmentation, then one line per allocator with its fragmentation and its median
/// peak RSS with the min–max range over the runs (the run-to-run spread).
fn summary_table(study: &Study) -> String {
    use std::fmt::Write as _;
    let mut o = String::new();
    let _ = writeln!(o, "{:<12} {:>10} {:>4} {:>8} {:>8} {:>8} {:>8}", "workload", "jobs", "n", "rho ext", "p", "rho int", "p");
    let m = study.rss_method;
    for w in &study.workloads {
        if let Some(e) = &w.error {
            let _ = writeln!(o, "{:<12} failed: {e}", w.name);
            continue;
        }
        let f = |s: &Option<heaplab_study::stats::Spearman>| s.map_or(("n/a".to_string(), "n/a".to_string()), |s| (format!("{:+.2}", s.rho), format!("{:.4}", s.p)));
        let (re, pe) = f(&w.rho_external);
        let (ri, pi) = f(&w.rho_internal);
        let n = w.rho_external.map_or(w.allocators.len(), |s| s.n);
        let _ = writeln!(o, "{:<12} {:>10} {n:>4} {re:>8} {pe:>8} {ri:>8} {pi:>8}", w.name, grouped(w.allocators.first().map_or(0, |x| x.jobs)));
        for x in &w.allocators {
            let r = x.rss(m);
            let _ = writeln!(
                o,
                "    {:<10} external {:>7.2}%  internal {:>6.2}%  peak RSS median {:>8.2} MiB, runs {:.2}-{:.2} (sd {:.2})",
                x.name,
                x.external * 100.0,
                x.internal * 100.0,
                r.median / 1048576.0,
                r.min / 1048576.0,
                r.max / 1048576.0,
                r.sd / 1048576.0
            );
        }
    }
    o
}

/// `text` wrapped at `width` columns, the first line after `first`, the others after `rest`.
fn wrap(text: &str, width: usize, first: &str, rest: &str) -> String {
    let mut out = String::from(first);
    let mut col = first.chars().count();
    for (k, word) in text.split_whitespace().enumerate() {
        let len = word.chars().count();
        if k > 0 && col + 1 + len > width {
            out.push('\n');
            out.push_str(rest);
            col = rest.chars().count();
        } else if k > 0 {
            out.push(' ');
            col += 1;
        }
        out.push_str(word);
        col += len;
    }
    out
}

/// `a` as a shell would need it written: quoted when it holds anything but plain characters, so
/// the report's command line can be run again as shown.
fn shell_word(a: &str) -> String {
    if !a.is_empty() && a.chars().all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c)) {
        a.to_string()
    } else {
        format!("'{}'", a.replace('\'', "'\\''"))
    }
}
