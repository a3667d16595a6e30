//! The study loop: for each workload, trace it once (keeping the process image with the most
//! heap events), replay that trace under every allocator and measure the placement's
//! fragmentation, run the real program under every allocator several times for its peak RSS,
//! and correlate the two. Progress is reported through a callback, so a front end decides how
//! to show it; a workload that fails is recorded in its result (with the end of the program's
//! standard error) and the loop goes on with the next one.

use crate::measure::{read_tail, run_once, stderr_tail, RssMethod, RunSpec};
use crate::report::slug;
use crate::suite::Workload;
use crate::{AllocatorResult, Machine, WorkloadResult};
use heaplab_frag::FragOptions;
use heaplab_replay::{placed, Allocator, ReplayOptions};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

/// How the study runs each workload.
#[derive(Clone, Debug)]
pub struct StudyOptions {
    /// The allocators compared (replayed and preloaded into the real runs).
    pub allocators: Vec<Allocator>,
    /// Runs of the real program per allocator.
    pub runs: usize,
    /// Which peak-RSS figure the correlation uses.
    pub rss: RssMethod,
    /// A run taking longer is killed (and counts as failed).
    pub timeout: Duration,
    /// Keep the files runs create in the working directory (otherwise removed after each run,
    /// so a command like `gzip -k big.tar` can run again).
    pub keep_outputs: bool,
    /// Where each replay's placed file is kept (`None`: not kept).
    pub placed_dir: Option<PathBuf>,
    /// A directory for the traces and the traced runs' standard error.
    pub scratch: PathBuf,
}

/// What the study is doing now, for a progress display.
#[derive(Clone, Copy, Debug)]
pub enum Step<'a> {
    /// Tracing the workload.
    Tracing,
    /// Replaying its trace of `events` events under `allocator`.
    Replaying {
        /// Events in the trace replayed.
        events: u64,
        /// The allocator.
        allocator: &'a Allocator,
    },
    /// Run `run` (1-based) of `runs` of the real program under `allocator`.
    Running {
        /// This run, from 1.
        run: usize,
        /// Runs per allocator.
        runs: usize,
        /// The allocator.
        allocator: &'a Allocator,
    },
    /// The workload failed, for this reason (also in its result).
    Failed(&'a str),
}

/// One progress report: which workload (`index` from 0, of `count`) and what is happening.
#[derive(Clone, Copy, Debug)]
pub struct Progress<'a> {
    /// The workload's position in the list, from 0.
    pub index: usize,
    /// Workloads in the list.
    pub count: usize,
    /// The workload.
    pub workload: &'a Workload,
    /// What is happening.
    pub step: Step<'a>,
}

/// Studies each workload in turn, running it in `cwd`; one result per workload, in order.
pub fn study_workloads(workloads: &[Workload], cwd: &Path, opts: &StudyOptions, progress: &mut dyn FnMut(Progress)) -> Vec<WorkloadResult> {
    let count = workloads.len();
    workloads
        .iter()
        .enumerate()
        .map(|(index, w)| study_workload(w, cwd, opts, &mut |step| progress(Progress { index, count, workload: w, step })))
        .collect()
}

/// Studies one workload run in `cwd`: its result, with [`WorkloadResult::error`] set if it
/// could not be studied, and the machine it ran on.
pub fn study_workload(w: &Workload, cwd: &Path, opts: &StudyOptions, progress: &mut dyn FnMut(Step)) -> WorkloadResult {
    let mut res = WorkloadResult {
        name: w.name.clone(),
        description: w.description.clone(),
        command: w.command.clone(),
        machine: Some(Machine::detect()),
        ..Default::default()
    };
    if let Err(e) = run_workload(w, cwd, opts, progress, &mut res) {
        progress(Step::Failed(&e));
        res.error = Some(e);
    }
    res
}

/// Regular files directly in `dir`.
fn files_in(dir: &Path) -> BTreeSet<PathBuf> {
    std::fs::read_dir(dir).into_iter().flatten().flatten().filter(|e| e.file_type().is_ok_and(|t| t.is_file())).map(|e| e.path()).collect()
}

/// Removes the regular files in `dir` that were not in `before`.
fn remove_new(dir: &Path, before: &BTreeSet<PathBuf>) {
    for p in files_in(dir) {
        if !before.contains(&p) {
            let _ = std::fs::remove_file(p);
        }
    }
}

/// The trace kept for a workload: the process image with the most heap events.
struct Traced {
    path: PathBuf,
    exe: String,
    events: u64,
    threads: u32,
}

/// Traces the workload; returns the trace with the most events.
fn trace_workload(w: &Workload, cwd: &Path, opts: &StudyOptions) -> Result<Traced, String> {
    let out = opts.scratch.join(format!("{}.hltrace", slug(&w.name)));
    let stdin = match &w.stdin {
        Some(p) => Stdio::from(std::fs::File::open(p).map_err(|e| format!("{}: {e}", p.display()))?),
        None => Stdio::null(),
    };
    let env = w.env.clone();
    // Standard error goes to a file, read back only if the run fails (not shown otherwise, as
    // in the measured runs).
    let err_path = opts.scratch.join(format!("{}.stderr", slug(&w.name)));
    let err_file = std::fs::File::create(&err_path).map_err(|e| format!("{}: {e}", err_path.display()))?;
    let launch_opts = heaplab_trace::launch::LaunchOptions { stack_depth: 0, follow_exec: true, ..Default::default() };
    let t = heaplab_trace::launch::launch(&w.command, &out, &launch_opts, |c| {
        c.current_dir(cwd).stdin(stdin).stdout(Stdio::null()).stderr(err_file);
        for (k, v) in &env {
            c.env(k, v);
        }
        c
    });
    let tail = || std::fs::File::open(&err_path).map(|f| stderr_tail(&read_tail(f))).unwrap_or_default();
    let t = t.map_err(|e| with_tail(e.to_string(), &tail()))?;
    if !t.status.success() {
        return Err(with_tail(format!("the traced run {}", heaplab_trace::launch::describe_status(&t.status)), &tail()));
    }
    let mut best: Option<Traced> = None;
    for p in std::iter::once(out.clone()).chain(t.children.iter().cloned()) {
        let Ok(r) = heaplab_trace::TraceReader::open(&p.to_string_lossy()) else { continue };
        let exe = r.header().exe.clone();
        let sk = r.skim();
        if best.as_ref().is_none_or(|b| sk.ending.calls > b.events) {
            best = Some(Traced { path: p, exe, events: sk.ending.calls, threads: sk.threads.len() as u32 });
        }
    }
    best.ok_or_else(|| "no readable trace".to_string())
}

/// `msg`, followed by the end of the program's standard error when it wrote any.
fn with_tail(msg: String, tail: &str) -> String {
    if tail.is_empty() {
        return msg;
    }
    let lines: Vec<String> = tail.lines().map(|l| format!("  {l}")).collect();
    format!("{msg}; its standard error ended with:\n{}", lines.join("\n"))
}

/// Replays the traced workload under `a` and measures the placement.
fn replay_under(w: &Workload, trace: &str, a: &Allocator, opts: &StudyOptions) -> Result<AllocatorResult, String> {
    let (p, st) = heaplab_replay::replay_file(trace, a, &ReplayOptions::default(), None).map_err(|e| format!("replay under {}: {e}", a.name))?;
    let t0 = Instant::now();
    let f = heaplab_frag::fragmentation(&p, &FragOptions { page_size: p.meta.page_size as u64, buckets: 100 }).map_err(|e| format!("{}: {e}", a.name))?;
    let frag_seconds = t0.elapsed().as_secs_f64();
    let mut bin = Vec::new();
    placed::write_binary(&mut bin, &p).map_err(|e| e.to_string())?;
    if let Some(d) = &opts.placed_dir {
        std::fs::write(d.join(format!("{}.{}.hlplaced", slug(&w.name), slug(&a.name))), &bin).map_err(|e| e.to_string())?;
    }
    Ok(AllocatorResult {
        name: a.name.clone(),
        library: a.library.as_ref().map(|l| l.display().to_string()),
        external: f.total.external_ratio(),
        internal: f.total.internal_ratio(),
        makespan_excess: f.mappings.iter().map(|m| m.makespan.saturating_sub(m.max_load)).sum(),
        jobs: p.jobs.len() as u64,
        mappings: p.mappings.len(),
        replay_requests: st.requests,
        replay_seconds: st.seconds,
        frag_seconds,
        placed_bytes: bin.len() as u64,
        series: f.external_series(),
        runs: Vec::new(),
    })
}

fn run_workload(w: &Workload, cwd: &Path, opts: &StudyOptions, progress: &mut dyn FnMut(Step), res: &mut WorkloadResult) -> Result<(), String> {
    let program = heaplab_trace::launch::find_program(&w.command[0]).ok_or_else(|| format!("{}: program not found (is its package installed?)", w.command[0]))?;
    let before = files_in(cwd);
    progress(Step::Tracing);
    let traced = trace_workload(w, cwd, opts);
    if !opts.keep_outputs {
        remove_new(cwd, &before);
    }
    let traced = traced?;
    (res.traced_exe, res.events, res.threads) = (traced.exe, traced.events, traced.threads);
    let trace = traced.path.to_string_lossy().into_owned();
    for a in &opts.allocators {
        progress(Step::Replaying { events: traced.events, allocator: a });
        res.allocators.push(replay_under(w, &trace, a, opts)?);
    }
    for r in 0..opts.runs {
        for (k, a) in opts.allocators.iter().enumerate() {
            progress(Step::Running { run: r + 1, runs: opts.runs, allocator: a });
            let spec = RunSpec {
                program: program.clone(),
                arg0: w.command[0].clone(),
                args: w.command[1..].to_vec(),
                env: w.env.clone(),
                preload: a.library.clone(),
                stdin: w.stdin.clone(),
                stdout: None,
                cwd: cwd.to_path_buf(),
                timeout: opts.timeout,
                unsampled: false,
            };
            let before = files_in(cwd);
            let run = run_once(&spec).map_err(|e| format!("cannot run {}: {e}", w.command[0]));
            if !opts.keep_outputs {
                remove_new(cwd, &before);
            }
            let run = run?;
            if !run.ok() {
                let how = if run.status < 0 { format!("was killed by signal {}", -run.status) } else { format!("exited with status {}", run.status) };
                return Err(with_tail(format!("run {} under {} {how}", r + 1, a.name), &run.stderr_tail));
            }
            res.allocators[k].runs.push(run);
        }
    }
    res.correlate(opts.rss);
    Ok(())
}
