//! `plan` and `check` on arrays: the planner runs on its own thread with the GIL released,
//! while the calling thread waits and checks for signals, so Ctrl-C cancels the planner
//! (through [`PlanOptions::cancel`]) and raises `KeyboardInterrupt` at once.

use crate::arrays::{columns, slice};
use crate::errors::{input_error, invalid_placement, work_error};
use heaplab_plan::{Algorithm, PlanOptions, PlanOutcome, MAX_TIME_LIMIT_SECS};
use numpy::{PyArray1, PyReadonlyArray1};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

/// How often the waiting thread looks for a signal (Ctrl-C) while the planner runs.
const SIGNAL_POLL: Duration = Duration::from_millis(50);

/// Plans the instance; returns a dict of the outcome (`offsets` a `uint64` array in input
/// order). `capacity`: stop at the first plan within it (`fits` says whether one was found).
#[pyfunction]
#[pyo3(signature = (ids, lower, upper, sizes, alignment, capacity, time_limit, seed, algorithm))]
#[allow(clippy::too_many_arguments)]
pub fn plan<'py>(
    py: Python<'py>,
    ids: PyReadonlyArray1<'py, u64>,
    lower: PyReadonlyArray1<'py, u64>,
    upper: PyReadonlyArray1<'py, u64>,
    sizes: PyReadonlyArray1<'py, u64>,
    alignment: Option<PyReadonlyArray1<'py, u64>>,
    capacity: Option<u64>,
    time_limit: f64,
    seed: u64,
    algorithm: &str,
) -> PyResult<Bound<'py, PyDict>> {
    if !(time_limit > 0.0 && time_limit <= MAX_TIME_LIMIT_SECS) {
        return Err(input_error(py, format!("time_limit {time_limit}: expected seconds, more than 0 and at most {MAX_TIME_LIMIT_SECS} (one week)")));
    }
    let alg = Algorithm::parse(algorithm, seed)
        .ok_or_else(|| input_error(py, format!("algorithm {algorithm}: unknown; expected one of {}", Algorithm::NAMES)))?;
    let inst = columns(py, &ids, &lower, &upper, &sizes, &alignment, &None)?.instance().map_err(|m| input_error(py, m))?;
    let cancel = Arc::new(AtomicBool::new(false));
    let opts = PlanOptions {
        time_limit: Duration::from_secs_f64(time_limit),
        seed,
        algorithm: alg,
        capacity,
        cancel: Some(cancel.clone()),
        ..PlanOptions::default()
    };
    let outcome = run_cancellable(py, &cancel, || heaplab_plan::plan(&inst.buffers, &opts, None))?;
    let fits = capacity.is_none_or(|c| outcome.makespan <= c);
    outcome_dict(py, outcome, fits)
}

/// Runs `work` on a thread of its own while this one waits without the GIL, checking for
/// signals every [`SIGNAL_POLL`]; on a signal (Ctrl-C) it sets `cancel`, waits for `work` to
/// see it and return, and raises the signal's exception (`KeyboardInterrupt`).
fn run_cancellable<T: Send>(py: Python<'_>, cancel: &AtomicBool, work: impl FnOnce() -> T + Send) -> PyResult<T> {
    std::thread::scope(|s| {
        let (tx, mut rx) = mpsc::channel();
        let worker = s.spawn(move || {
            let out = work();
            let _ = tx.send(());
            out
        });
        let mut interrupted = None;
        loop {
            let (got, back) = py.detach(move || (rx.recv_timeout(SIGNAL_POLL), rx));
            rx = back;
            match got {
                Ok(()) | Err(mpsc::RecvTimeoutError::Disconnected) => break,
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    if let Err(e) = py.check_signals() {
                        cancel.store(true, Ordering::Relaxed);
                        interrupted = Some(e);
                        // The planner stops at its next check of the flag; wait for it without
                        // the GIL so that nothing it shares with Python is left running.
                        py.detach(|| while !worker.is_finished() {
                            std::thread::sleep(Duration::from_millis(5))
                        });
                        break;
                    }
                }
            }
        }
        let joined = worker.join();
        if let Some(e) = interrupted {
            return Err(e);
        }
        joined.map_err(|p| {
            let why = p
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "unknown panic".into());
            work_error(py, format!("the planner failed (a bug; please report it): {why}"))
        })
    })
}

/// The outcome as the dict the package's `Plan` is made from.
fn outcome_dict(py: Python<'_>, o: PlanOutcome, fits: bool) -> PyResult<Bound<'_, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("makespan", o.makespan)?;
    d.set_item("max_load", o.max_load)?;
    d.set_item("lower_bound", o.lower_bound)?;
    d.set_item("optimal", o.optimal)?;
    d.set_item("fits", fits)?;
    d.set_item("algorithm", &o.algorithm)?;
    d.set_item("components", o.components)?;
    d.set_item("critical_buffers", o.critical_buffers)?;
    d.set_item("boxing_iterations", o.boxing_iterations)?;
    d.set_item("stages", PyList::new(py, o.stages.iter().map(|(n, t)| (n.as_str(), *t)))?)?;
    let attempts = PyList::new(py, o.attempts.iter().map(|a| (a.name.as_str(), a.makespan, a.seconds)))?;
    d.set_item("attempts", attempts)?;
    d.set_item("seconds", o.seconds)?;
    d.set_item("offsets", PyArray1::from_vec(py, o.offsets))?;
    Ok(d)
}

/// Validates offsets for the instance; returns the makespan, or raises `InvalidPlacement`
/// with the validator's description (the clashing buffers named by id).
#[pyfunction]
#[pyo3(signature = (ids, lower, upper, sizes, alignment, offsets))]
pub fn check(
    py: Python<'_>,
    ids: PyReadonlyArray1<'_, u64>,
    lower: PyReadonlyArray1<'_, u64>,
    upper: PyReadonlyArray1<'_, u64>,
    sizes: PyReadonlyArray1<'_, u64>,
    alignment: Option<PyReadonlyArray1<'_, u64>>,
    offsets: PyReadonlyArray1<'_, u64>,
) -> PyResult<u64> {
    let inst = columns(py, &ids, &lower, &upper, &sizes, &alignment, &None)?.instance().map_err(|m| input_error(py, m))?;
    let offsets = slice(py, "offsets", &offsets)?.to_vec();
    if offsets.len() != inst.len() {
        return Err(input_error(py, format!("offsets has {} values but sizes has {}: one per buffer expected", offsets.len(), inst.len())));
    }
    let (v, inst, offsets) = py.detach(move || (heaplab_sweep::validate(&inst.buffers, &offsets), inst, offsets));
    if v.is_valid() {
        return Ok(v.makespan);
    }
    let b = &inst.buffers;
    let clashes = v.clashes.iter().map(|c| (b[c.a].id, b[c.b].id, c.tick)).collect();
    let ids = |xs: &[usize]| xs.iter().map(|&i| b[i].id).collect();
    Err(invalid_placement(py, format!("placement: {}", v.describe(b, &offsets)), clashes, ids(&v.misaligned), ids(&v.overflowing)))
}

/// The max load (the trivial lower bound on any makespan) of the instance.
#[pyfunction]
#[pyo3(signature = (ids, lower, upper, sizes))]
pub fn max_load(
    py: Python<'_>,
    ids: PyReadonlyArray1<'_, u64>,
    lower: PyReadonlyArray1<'_, u64>,
    upper: PyReadonlyArray1<'_, u64>,
    sizes: PyReadonlyArray1<'_, u64>,
) -> PyResult<u64> {
    let inst = columns(py, &ids, &lower, &upper, &sizes, &None, &None)?.instance().map_err(|m| input_error(py, m))?;
    Ok(heaplab_sweep::max_load(&inst.buffers))
}

/// Bytes from a number with an optional unit, as `--capacity` takes them (`16GiB` = 16·2^30,
/// `16GB` = 16·10^9).
#[pyfunction]
pub fn parse_bytes(py: Python<'_>, text: &str) -> PyResult<u64> {
    heaplab_model::units::parse_bytes(text).map_err(|e| input_error(py, format!("capacity {e}")))
}
