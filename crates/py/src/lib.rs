//! `heaplab._native`: the Python extension module behind the `heaplab` package. It only moves
//! data between numpy arrays and the libraries (planning, validation, file and trace reading,
//! fragmentation) and turns their errors into the package's exceptions with the CLI's messages;
//! the pure-Python package (`python/heaplab`) gives it its public shape.
//!
//! Arrays arrive as contiguous `uint64` (the package converts any integer dtype once) and
//! leave as numpy arrays built from the libraries' vectors, without per-element Python work.

mod arrays;
mod errors;
mod frag;
mod planning;
mod read;
mod study;
mod traces;

use pyo3::prelude::*;

/// The module: one function per library entry point the package uses.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(planning::plan, m)?)?;
    m.add_function(wrap_pyfunction!(planning::check, m)?)?;
    m.add_function(wrap_pyfunction!(planning::max_load, m)?)?;
    m.add_function(wrap_pyfunction!(planning::parse_bytes, m)?)?;
    m.add_function(wrap_pyfunction!(arrays::validate_instance, m)?)?;
    m.add_function(wrap_pyfunction!(read::read, m)?)?;
    m.add_function(wrap_pyfunction!(read::write, m)?)?;
    m.add_function(wrap_pyfunction!(traces::trace_events, m)?)?;
    m.add_function(wrap_pyfunction!(traces::trace_info, m)?)?;
    m.add_function(wrap_pyfunction!(frag::frag, m)?)?;
    study::register(m)?;
    m.add("ALGORITHMS", heaplab_plan::Algorithm::NAMES)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
