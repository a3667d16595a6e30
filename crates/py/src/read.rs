//! Instance files in and out: `read` takes what `heaplab plan` reads (CSV, .hlbin, a trace
//! converted on the way, or a run index's process) through the library call the CLI makes
//! (`heaplab_trace::instance::read_input`), and `write` writes what `heaplab convert` writes,
//! so files and messages are the CLI's.

use crate::arrays::slice;
use crate::errors::{input_error, of_class};
use heaplab_model::{files, Input, Semantics};
use heaplab_trace::instance::{self, InstanceError, ReadOptions};
use heaplab_trace::{Clock, ConvertOptions, SizeModel};
use numpy::{PyArray1, PyReadonlyArray1};
use pyo3::prelude::*;
use pyo3::types::PyDict;

/// A library error about trace input as the package's exception.
pub fn instance_error(py: Python<'_>, e: InstanceError) -> PyErr {
    let message = match &e {
        InstanceError::Damaged { .. } => format!("{e}; pass allow_truncated=True to use them"),
        _ => e.to_string(),
    };
    of_class(py, e.class(), message)
}

/// A named choice, or an `InputError` listing the choices.
fn choose<T: Copy>(py: Python<'_>, what: &str, given: &str, names: &[(&str, T)]) -> PyResult<T> {
    names.iter().find(|(n, _)| *n == given).map(|(_, v)| *v).ok_or_else(|| {
        let all: Vec<&str> = names.iter().map(|(n, _)| *n).collect();
        input_error(py, format!("{what} {given:?}: expected one of {}", all.join(", ")))
    })
}

/// The conversion of a trace, from the names the CLI's `--clock` and `--size` take.
pub fn convert_options(py: Python<'_>, clock: &str, size: &str, thread: Option<u32>) -> PyResult<ConvertOptions> {
    let clock = choose(py, "clock", clock, &[("bytes", Clock::Bytes), ("events", Clock::Events), ("ns", Clock::Ns)])?;
    let size = choose(py, "size", size, &[("requested", SizeModel::Requested), ("usable", SizeModel::Usable)])?;
    Ok(ConvertOptions { clock, size, thread })
}

/// Reads an instance (or a placement: `offsets` is then set) from `path`; a trace is converted
/// with `clock`, `size` and `thread`. Returns a dict of `uint64` columns and what was read.
#[pyfunction]
#[pyo3(signature = (path, semantics="inex", clock="bytes", size="requested", thread=None, allow_truncated=false, process=None))]
#[allow(clippy::too_many_arguments)]
pub fn read<'py>(
    py: Python<'py>,
    path: &str,
    semantics: &str,
    clock: &str,
    size: &str,
    thread: Option<u32>,
    allow_truncated: bool,
    process: Option<&str>,
) -> PyResult<Bound<'py, PyDict>> {
    let sem = choose(py, "semantics", semantics, &[("inex", Semantics::Inex), ("in", Semantics::In), ("ex", Semantics::Ex)])?;
    let opts = ReadOptions { convert: convert_options(py, clock, size, thread)?, allow_truncated };
    let (path, process) = (path.to_string(), process.map(str::to_string));
    let got = py.detach(move || instance::read_input(Input::open(&path)?, process.as_deref(), sem, true, &opts, &mut ()));
    let instance::InputRead { instance: inst, offsets, trace: traced } = got.map_err(|e| instance_error(py, e))?;
    let d = PyDict::new(py);
    let col = |f: fn(&heaplab_model::Buffer) -> u64| PyArray1::from_iter(py, inst.buffers.iter().map(f));
    d.set_item("ids", col(|b| b.id))?;
    d.set_item("lower", col(|b| b.lower))?;
    d.set_item("upper", col(|b| b.upper))?;
    d.set_item("sizes", col(|b| b.size))?;
    d.set_item("alignment", col(|b| b.alignment()))?;
    d.set_item("requested", if inst.columns.requested { Some(col(|b| b.requested)) } else { None })?;
    d.set_item("offsets", offsets.map(|o| PyArray1::from_vec(py, o)))?;
    if let Some(t) = traced {
        let s = &t.stats;
        let info = PyDict::new(py);
        info.set_item("events", s.events)?;
        info.set_item("threads", s.threads.len())?;
        info.set_item("peak_live_bytes", s.peak_live_requested)?;
        info.set_item("peak_live_usable_bytes", s.peak_live_usable)?;
        info.set_item("truncated", t.ending.damage.is_some())?;
        d.set_item("trace", info)?;
    }
    Ok(d)
}

/// Writes an instance, or with `offsets` a placement, as `heaplab convert` does: CSV, or
/// binary when `path` ends in `.hlbin`; atomically (nothing half-written on error).
#[pyfunction]
#[pyo3(signature = (path, ids, lower, upper, sizes, alignment=None, requested=None, offsets=None))]
#[allow(clippy::too_many_arguments)]
pub fn write(
    py: Python<'_>,
    path: &str,
    ids: PyReadonlyArray1<'_, u64>,
    lower: PyReadonlyArray1<'_, u64>,
    upper: PyReadonlyArray1<'_, u64>,
    sizes: PyReadonlyArray1<'_, u64>,
    alignment: Option<PyReadonlyArray1<'_, u64>>,
    requested: Option<PyReadonlyArray1<'_, u64>>,
    offsets: Option<PyReadonlyArray1<'_, u64>>,
) -> PyResult<()> {
    let cols = crate::arrays::columns(py, &ids, &lower, &upper, &sizes, &alignment, &requested)?;
    let inst = cols.instance().map_err(|m| input_error(py, m))?;
    let offsets = offsets.as_ref().map(|o| slice(py, "offsets", o)).transpose()?.map(<[u64]>::to_vec);
    if let Some(o) = &offsets {
        if o.len() != inst.len() {
            return Err(input_error(py, format!("offsets has {} values but sizes has {}: one per buffer expected", o.len(), inst.len())));
        }
    }
    let path = path.to_string();
    py.detach(|| files::write(&path, &inst, offsets.as_deref())).map_err(|e| input_error(py, format!("{path}: cannot write: {e}")))
}
