//! The peak-RSS study split into tasks, for `heaplab.dask.study`: one workload studied where
//! the call runs (its `results.json` entry comes back as JSON text, which travels between
//! machines), and the report written from such entries gathered in one place, by the same
//! library functions as `heaplab study`. Options are checked here with the CLI's messages.

use heaplab_study::measure::RssMethod;
use heaplab_study::outdir::{Scratch, Staging};
use heaplab_study::pipeline::{study_workload as study_one, StudyOptions};
use heaplab_study::suite::{default_suite, select, Workload};
use heaplab_study::{report, results, Study};
use crate::errors::{input_error, work_error};
use pyo3::prelude::*;
use std::path::PathBuf;
use std::time::Duration;

/// The default allocator list of `heaplab study`.
const ALLOCATORS: &str = "glibc,jemalloc,mimalloc,tcmalloc";

/// `rusage` or `proc`.
fn rss_method(py: Python<'_>, rss: &str) -> PyResult<RssMethod> {
    RssMethod::parse(rss).ok_or_else(|| input_error(py, format!("rss: expected rusage or proc, not {rss:?}")))
}

/// The study's options, checked: the allocators by name or path, the RSS method, runs ≥ 1 and a
/// positive timeout.
fn options(py: Python<'_>, allocators: &str, runs: usize, rss: &str, timeout: f64) -> PyResult<(Vec<heaplab_replay::Allocator>, RssMethod, Duration)> {
    let allocs = heaplab_replay::resolve_list(allocators).map_err(|e| input_error(py, e.0))?;
    let rss = rss_method(py, rss)?;
    if runs == 0 {
        return Err(input_error(py, "runs: expected at least 1"));
    }
    if !(timeout.is_finite() && timeout > 0.0) {
        return Err(input_error(py, format!("timeout: expected a positive number of seconds, not {timeout}")));
    }
    Ok((allocs, rss, Duration::from_secs_f64(timeout)))
}

/// Checks the study's options (raises `heaplab.InputError` with the CLI's message).
#[pyfunction]
#[pyo3(signature = (*, allocators=ALLOCATORS, runs=10, rss="rusage", timeout=600.0))]
fn study_check(py: Python<'_>, allocators: &str, runs: usize, rss: &str, timeout: f64) -> PyResult<()> {
    options(py, allocators, runs, rss, timeout).map(|_| ())
}

/// The names of the default suite's workloads, in order; with `only`, checks that each is one
/// of them and returns those, in suite order.
#[pyfunction]
#[pyo3(signature = (only=None))]
fn study_suite_names(py: Python<'_>, only: Option<Vec<String>>) -> PyResult<Vec<String>> {
    let scratch = Scratch::create().map_err(|e| work_error(py, e.to_string()))?;
    // The smallest inputs: only the names are wanted.
    let mut suite = default_suite(scratch.dir(), u64::MAX).map_err(|e| work_error(py, format!("cannot write the suite's inputs: {e}")))?;
    if let Some(only) = only {
        let names: Vec<&str> = only.iter().map(String::as_str).collect();
        select(&mut suite, &names).map_err(|e| input_error(py, format!("only {}: no such workload in the suite ({})", e.name, e.known.join(", "))))?;
    }
    Ok(suite.into_iter().map(|w| w.name).collect())
}

/// Studies one workload here, the GIL released: `command` (a program and its arguments, run in
/// `cwd`, or in a fresh empty directory when `cwd` is None) or the default suite's workload
/// `suite` (its inputs generated here at `suite_scale`). Returns its `results.json` entry as
/// JSON text; a workload that fails has its `error` set, as in `heaplab study`.
#[pyfunction]
#[pyo3(signature = (command=None, *, suite=None, suite_scale=1, name=None, description=String::new(), env=Vec::new(), stdin=None, cwd=None,
    allocators=ALLOCATORS, runs=10, rss="rusage", timeout=600.0, keep_outputs=false))]
#[allow(clippy::too_many_arguments)]
fn study_workload(
    py: Python<'_>,
    command: Option<Vec<String>>,
    suite: Option<String>,
    suite_scale: u64,
    name: Option<String>,
    description: String,
    env: Vec<(String, String)>,
    stdin: Option<PathBuf>,
    cwd: Option<PathBuf>,
    allocators: &str,
    runs: usize,
    rss: &str,
    timeout: f64,
    keep_outputs: bool,
) -> PyResult<String> {
    let (allocators, rss, timeout) = options(py, allocators, runs, rss, timeout)?;
    let work = |e: heaplab_study::outdir::CreateDirError| work_error(py, e.to_string());
    let scratch = Scratch::create().map_err(work)?;
    let (w, cwd) = match (command, suite) {
        (Some(command), None) => {
            if command.is_empty() {
                return Err(input_error(py, "command: empty (expected a program and its arguments)"));
            }
            let mut w = Workload::command(command);
            w.name = name.unwrap_or(w.name);
            (w.description, w.env, w.stdin) = (description, env, stdin);
            let cwd = match cwd {
                Some(d) if d.is_dir() => d,
                Some(d) => return Err(input_error(py, format!("cwd {}: not a directory on this machine", d.display()))),
                None => scratch.subdir("cwd").map_err(work)?,
            };
            (w, cwd)
        }
        (None, Some(s)) => {
            let inputs = scratch.subdir("inputs").map_err(work)?;
            let mut all = default_suite(&inputs, suite_scale.max(1)).map_err(|e| work_error(py, format!("cannot write the suite's inputs: {e}")))?;
            select(&mut all, &[s.as_str()]).map_err(|e| input_error(py, format!("suite {}: no such workload in the suite ({})", e.name, e.known.join(", "))))?;
            (all.remove(0), inputs)
        }
        _ => return Err(input_error(py, "give either a command or a suite workload, not both")),
    };
    let opts = StudyOptions { allocators, runs, rss, timeout, keep_outputs, placed_dir: None, scratch: scratch.dir().to_path_buf() };
    let res = py.detach(|| study_one(&w, &cwd, &opts, &mut |_| {}));
    Ok(report::workload_json(&res, rss).to_string())
}

/// The `results.json` entry of a workload that failed before it could be studied (its task
/// was lost, or could not start where it ran), with `error` as the reason: `command`, named
/// `name` (default: after its program), or the default suite's workload `suite`.
#[pyfunction]
#[pyo3(signature = (command=None, *, suite=None, name=None, description=String::new(), error, rss="rusage"))]
fn study_failed(py: Python<'_>, command: Option<Vec<String>>, suite: Option<String>, name: Option<String>, description: String, error: String, rss: &str) -> PyResult<String> {
    let rss = rss_method(py, rss)?;
    let w = Workload::command(command.unwrap_or_default());
    let name = name.or(suite).unwrap_or(w.name);
    let w = heaplab_study::WorkloadResult { name, description, command: w.command, error: Some(error), ..Default::default() };
    Ok(report::workload_json(&w, rss).to_string())
}

/// A study's report directory: checked (and its temporary sibling created) when made, before
/// any workload runs; [`StudyReport::write`] writes the report from the gathered workloads and
/// puts it in place. Dropped unwritten, it leaves nothing behind.
#[pyclass(module = "heaplab._native")]
struct StudyReport {
    staging: Option<Staging>,
    target: PathBuf,
}

#[pymethods]
impl StudyReport {
    /// Checks `output` as `heaplab study -o` does (raises `heaplab.InputError`).
    #[new]
    fn new(py: Python<'_>, output: &str) -> PyResult<StudyReport> {
        let staging = Staging::create(output).map_err(|e| input_error(py, e.message("output", output)))?;
        Ok(StudyReport { target: staging.target().to_path_buf(), staging: Some(staging) })
    }

    /// Where the report goes.
    #[getter]
    fn target(&self) -> PathBuf {
        self.target.clone()
    }

    /// Writes the report (index.html, report.md, results.json, plots) of the workloads whose
    /// entries (JSON text, in report order) are `workloads`, studied with `runs` runs per
    /// allocator and `rss`, and returns results.json's text. Once only.
    fn write(&mut self, py: Python<'_>, workloads: Vec<String>, runs: usize, rss: &str, invocation: String) -> PyResult<String> {
        let rss_method = rss_method(py, rss)?;
        let parsed = workloads
            .iter()
            .enumerate()
            .map(|(k, t)| serde_json::from_str(t).map_err(|e| e.to_string()).and_then(|v| results::workload(&v)).map_err(|e| input_error(py, format!("workload {k}: {e}"))))
            .collect::<PyResult<Vec<_>>>()?;
        let staging = self.staging.take().ok_or_else(|| work_error(py, format!("{}: this report was already written", self.target.display())))?;
        let study = Study::new(parsed, runs, rss_method, invocation);
        py.detach(|| report::install(staging, &study)).map_err(|e| work_error(py, e))?;
        Ok(serde_json::to_string_pretty(&report::study_json(&study)).expect("JSON of plain values") + "\n")
    }
}

/// Adds the study functions to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(study_check, m)?)?;
    m.add_function(wrap_pyfunction!(study_suite_names, m)?)?;
    m.add_function(wrap_pyfunction!(study_workload, m)?)?;
    m.add_function(wrap_pyfunction!(study_failed, m)?)?;
    m.add_class::<StudyReport>()?;
    Ok(())
}
