//! `frag`: the 2-D fragmentation of placed jobs (`heaplab replay`'s output), by the same
//! reader and metric as `heaplab frag`, with its messages.

use crate::errors::input_error;
use heaplab_frag::FragOptions;
use heaplab_replay::placed;
use numpy::PyArray1;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

/// Measures the placed file at `path`: `page_size` defaults to the file's (4096 for CSV, as in
/// `heaplab frag`); `buckets` is the length of the series over time.
#[pyfunction]
#[pyo3(signature = (path, page_size=None, buckets=100))]
pub fn frag<'py>(py: Python<'py>, path: &str, page_size: Option<u64>, buckets: usize) -> PyResult<Bound<'py, PyDict>> {
    if let Some(p) = page_size {
        if !p.is_power_of_two() || p > 1 << 30 {
            return Err(input_error(py, format!("page_size {p}: expected a power of two from 1 to 1,073,741,824")));
        }
    }
    if buckets > 100_000 {
        return Err(input_error(py, format!("buckets {buckets}: expected 0 to 100,000")));
    }
    let path_s = path.to_string();
    let got = py.detach(move || {
        let p = placed::read(&path_s, page_size.unwrap_or(4096) as u32).map_err(|e| e.to_string())?;
        let opts = FragOptions { page_size: page_size.unwrap_or(p.meta.page_size as u64), buckets };
        let f = heaplab_frag::fragmentation(&p, &opts).map_err(|e| format!("{path_s}: {e}"))?;
        Ok::<_, String>((p, f, opts.page_size))
    });
    let (p, f, page) = got.map_err(|m| input_error(py, m))?;
    let d = PyDict::new(py);
    d.set_item("allocator", &p.meta.allocator)?;
    d.set_item("trace", &p.meta.trace)?;
    d.set_item("jobs", p.jobs.len())?;
    d.set_item("page_size", page)?;
    d.set_item("end_time", f.end_time)?;
    d.set_item("external", f.total.external_ratio())?;
    d.set_item("internal", f.total.internal_ratio())?;
    d.set_item("job_area", f.total.jobs as f64)?;
    d.set_item("external_area", f.total.external as f64)?;
    d.set_item("internal_area", f.total.internal as f64)?;
    let maps = PyList::empty(py);
    for (m, mf) in p.mappings.iter().zip(&f.mappings) {
        let md = PyDict::new(py);
        md.set_item("id", m.id)?;
        md.set_item("name", &m.name)?;
        md.set_item("start", m.start)?;
        md.set_item("end", m.end)?;
        md.set_item("jobs", mf.jobs)?;
        md.set_item("external", mf.areas.external_ratio())?;
        md.set_item("internal", mf.areas.internal_ratio())?;
        md.set_item("makespan", mf.makespan)?;
        md.set_item("max_load", mf.max_load)?;
        maps.append(md)?;
    }
    d.set_item("mappings", maps)?;
    let s = &f.series;
    d.set_item("series_t0", PyArray1::from_iter(py, s.iter().map(|b| b.t0)))?;
    d.set_item("series_t1", PyArray1::from_iter(py, s.iter().map(|b| b.t1)))?;
    d.set_item("series_external", PyArray1::from_iter(py, s.iter().map(|b| b.areas.external_ratio())))?;
    d.set_item("series_internal", PyArray1::from_iter(py, s.iter().map(|b| b.areas.internal_ratio())))?;
    Ok(d)
}
