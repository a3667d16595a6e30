//! `frag`: the 2-D fragmentation of placed jobs (`heaplab replay`'s output), by the library
//! call `heaplab frag` makes, with its messages and its options' ranges.

use crate::errors::input_error;
use heaplab_frag::{Measured, MAX_BUCKETS, MAX_PAGE_SIZE};
use heaplab_model::units::grouped;
use numpy::PyArray1;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

/// Measures the placed file at `path` with `heaplab_frag::measure`, as `heaplab frag` does:
/// `page_size` defaults to the file's (`heaplab_frag::DEFAULT_PAGE_SIZE` for CSV); `buckets`
/// is the length of the series over time.
#[pyfunction]
#[pyo3(signature = (path, page_size=None, buckets=100))]
pub fn frag<'py>(py: Python<'py>, path: &str, page_size: Option<u64>, buckets: usize) -> PyResult<Bound<'py, PyDict>> {
    if let Some(p) = page_size {
        if !p.is_power_of_two() || p > MAX_PAGE_SIZE {
            return Err(input_error(py, format!("page_size {p}: expected a power of two from 1 to {}", grouped(MAX_PAGE_SIZE))));
        }
    }
    if buckets > MAX_BUCKETS {
        return Err(input_error(py, format!("buckets {buckets}: expected 0 to {}", grouped(MAX_BUCKETS as u64))));
    }
    let path = path.to_string();
    let m = py.detach(move || heaplab_frag::measure(&path, page_size, buckets)).map_err(|e| input_error(py, e.to_string()))?;
    let Measured { placed: p, frag: f, page_size: page, .. } = m;
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
