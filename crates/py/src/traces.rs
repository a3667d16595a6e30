//! Heap traces (`.hltrace`, from `heaplab trace`): their calls as numpy columns and the
//! summary `heaplab trace-info` prints, read by the trace library's reader and analysis.

use crate::read::instance_error;
use heaplab_model::Input;
use heaplab_trace::format::Op;
use heaplab_trace::instance::{self, InstanceError};
use heaplab_trace::reader::Half;
use heaplab_trace::run::describe_ending;
use heaplab_trace::{analyse, TraceReader};
use numpy::PyArray1;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

/// The reader of the trace at `path` (for a run index, of the process `process` picks).
fn reader(path: &str, process: Option<&str>) -> Result<TraceReader<Input>, InstanceError> {
    let input = instance::select(Input::open(path)?, process)?.input;
    Ok(TraceReader::from_input(input)?)
}

/// The error for a damaged trace whose usable part was not asked for, worded as when it is
/// read as an instance.
fn damaged(name: &str, ending: &heaplab_trace::Ending, events: u64) -> Option<InstanceError> {
    let d = ending.damage.as_ref()?;
    Some(InstanceError::Damaged { name: name.to_string(), reason: d.reason.clone(), events, usable_below: d.usable_below })
}

/// Every call of the trace in order of sequence number, as columns: `seq`, `seq2` (a
/// realloc's allocation half, else = seq), `tid`, `ns` (since the start), `op` (code; names in
/// `ops`), `ptr_in`, `ptr_out`, `size`, `extra` (count or alignment), `usable`, `requested`,
/// `site`.
#[pyfunction]
#[pyo3(signature = (path, allow_truncated=false, process=None))]
pub fn trace_events<'py>(py: Python<'py>, path: &str, allow_truncated: bool, process: Option<&str>) -> PyResult<Bound<'py, PyDict>> {
    #[derive(Default)]
    struct Cols {
        seq: Vec<u64>,
        seq2: Vec<u64>,
        tid: Vec<u32>,
        ns: Vec<u64>,
        op: Vec<u8>,
        ptr_in: Vec<u64>,
        ptr_out: Vec<u64>,
        size: Vec<u64>,
        extra: Vec<u64>,
        usable: Vec<u64>,
        requested: Vec<u64>,
        site: Vec<u32>,
    }
    let (path, process) = (path.to_string(), process.map(str::to_string));
    let got = py.detach(move || -> Result<Cols, InstanceError> {
        let mut r = reader(&path, process.as_deref())?;
        let header = r.header().clone();
        let mut c = Cols::default();
        // A realloc is two steps (release, then acquire); one row per call, at the first.
        for step in r.by_ref().filter(|s| s.half != Half::Acquire) {
            let e = step.event;
            c.seq.push(e.seq);
            c.seq2.push(e.seq2);
            c.tid.push(e.tid);
            c.ns.push(header.ns_since_start(e.ts));
            c.op.push(e.op as u8);
            c.ptr_in.push(e.ptr_in);
            c.ptr_out.push(e.ptr_out);
            c.size.push(e.size);
            c.extra.push(e.extra);
            c.usable.push(e.usable);
            c.requested.push(e.requested());
            c.site.push(e.site);
        }
        let name = r.name().to_string();
        let ending = r.into_ending();
        if !allow_truncated {
            if let Some(e) = damaged(&name, &ending, c.seq.len() as u64) {
                return Err(e);
            }
        }
        Ok(c)
    });
    let c = got.map_err(|e| instance_error(py, e))?;
    let d = PyDict::new(py);
    d.set_item("seq", PyArray1::from_vec(py, c.seq))?;
    d.set_item("seq2", PyArray1::from_vec(py, c.seq2))?;
    d.set_item("tid", PyArray1::from_vec(py, c.tid))?;
    d.set_item("ns", PyArray1::from_vec(py, c.ns))?;
    d.set_item("op", PyArray1::from_vec(py, c.op))?;
    d.set_item("ptr_in", PyArray1::from_vec(py, c.ptr_in))?;
    d.set_item("ptr_out", PyArray1::from_vec(py, c.ptr_out))?;
    d.set_item("size", PyArray1::from_vec(py, c.size))?;
    d.set_item("extra", PyArray1::from_vec(py, c.extra))?;
    d.set_item("usable", PyArray1::from_vec(py, c.usable))?;
    d.set_item("requested", PyArray1::from_vec(py, c.requested))?;
    d.set_item("site", PyArray1::from_vec(py, c.site))?;
    let ops = PyDict::new(py);
    for op in Op::ALL {
        ops.set_item(op as u8, op.name())?;
    }
    d.set_item("ops", ops)?;
    Ok(d)
}

/// What `heaplab trace-info --json` reports about one trace (the same keys, for the fields
/// the package exposes).
#[pyfunction]
#[pyo3(signature = (path, allow_truncated=true, process=None))]
pub fn trace_info<'py>(py: Python<'py>, path: &str, allow_truncated: bool, process: Option<&str>) -> PyResult<Bound<'py, PyDict>> {
    let (path, process) = (path.to_string(), process.map(str::to_string));
    let got = py.detach(move || -> Result<_, InstanceError> {
        let mut r = reader(&path, process.as_deref())?;
        let analysis = analyse(&mut r, None, None);
        let header = r.header().clone();
        let name = r.name().to_string();
        let ending = r.into_ending();
        if !allow_truncated {
            if let Some(e) = damaged(&name, &ending, analysis.stats.events) {
                return Err(e);
            }
        }
        Ok((name, header, ending, analysis.stats))
    });
    let (name, h, ending, st) = got.map_err(|e| instance_error(py, e))?;
    let d = PyDict::new(py);
    let trailer = ending.trailer.as_ref();
    let duration = trailer.map(|t| h.ns_since_start(t.end_ts)).or(st.last_ns).unwrap_or(0);
    d.set_item("file", name)?;
    d.set_item("file_bytes", ending.file_bytes)?;
    d.set_item("pid", h.pid)?;
    d.set_item("ppid", h.ppid)?;
    d.set_item("origin", h.origin.name())?;
    d.set_item("exe", &h.exe)?;
    d.set_item("args", PyList::new(py, &h.args)?)?;
    d.set_item("page_size", h.page_size)?;
    d.set_item("events", st.events)?;
    let calls = PyDict::new(py);
    for op in Op::ALL {
        calls.set_item(op.name(), st.calls.get(&op).copied().unwrap_or(0))?;
    }
    d.set_item("calls", calls)?;
    d.set_item("free_null", st.free_null)?;
    d.set_item("threads", st.threads.len())?;
    let per_thread = PyDict::new(py);
    for (t, n) in &st.threads {
        per_thread.set_item(t, n)?;
    }
    d.set_item("calls_per_thread", per_thread)?;
    d.set_item("peak_live_bytes", st.peak_live_requested)?;
    d.set_item("peak_live_usable_bytes", st.peak_live_usable)?;
    d.set_item("peak_live_blocks", st.peak_live_blocks)?;
    d.set_item("peak_pages_bytes", st.peak_pages_bytes)?;
    d.set_item("peak_rss_bytes", trailer.map(|t| t.peak_rss))?;
    d.set_item("total_requested_bytes", st.total_requested)?;
    d.set_item("failed_allocations", st.failed)?;
    d.set_item("unmatched_frees", st.unmatched_frees)?;
    d.set_item("live_at_end", st.live_at_end)?;
    d.set_item("duration_ns", duration)?;
    let hist = PyList::new(py, st.size_histogram.iter().map(|&(lo, hi, c)| (lo, hi, c)))?;
    d.set_item("size_histogram", hist)?;
    d.set_item("call_sites", ending.sites.len())?;
    d.set_item("complete", ending.is_complete())?;
    d.set_item("status", describe_ending(&ending))?;
    Ok(d)
}
