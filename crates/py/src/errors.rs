//! The package's exceptions, raised from Rust: the classes live in `heaplab._errors` (Python,
//! so that they can derive from both `HeaplabError` and `ValueError`), and every message is
//! the one the CLI prints for the same problem.

use pyo3::prelude::*;
use pyo3::types::PyTuple;

/// An exception of class `name` from `heaplab._errors`, built from `args`.
fn raise<'py>(py: Python<'py>, name: &str, args: Bound<'py, PyTuple>) -> PyErr {
    let made = py.import("heaplab._errors").and_then(|m| m.getattr(name)).and_then(|cls| cls.call1(args));
    match made {
        Ok(e) => PyErr::from_value(e),
        Err(e) => e,
    }
}

/// `heaplab.InputError(message)`: bad input (arrays, files, options).
pub fn input_error(py: Python<'_>, message: impl Into<String>) -> PyErr {
    let args = PyTuple::new(py, [message.into()]).expect("a tuple of one string");
    raise(py, "InputError", args)
}

/// `heaplab.HeaplabError(message)`: the work failed.
pub fn work_error(py: Python<'_>, message: impl Into<String>) -> PyErr {
    let args = PyTuple::new(py, [message.into()]).expect("a tuple of one string");
    raise(py, "HeaplabError", args)
}

/// `heaplab.InvalidPlacement(message, clashes, misaligned, overflowing)`: clashes are
/// `(id_a, id_b, tick)`, the others buffer ids.
pub fn invalid_placement(
    py: Python<'_>,
    message: String,
    clashes: Vec<(u64, u64, u64)>,
    misaligned: Vec<u64>,
    overflowing: Vec<u64>,
) -> PyErr {
    match (message, clashes, misaligned, overflowing).into_pyobject(py) {
        Ok(args) => raise(py, "InvalidPlacement", args),
        Err(e) => e,
    }
}

/// The exception for a library error of `class`, with `message`.
pub fn of_class(py: Python<'_>, class: heaplab_model::ErrorClass, message: String) -> PyErr {
    match class {
        heaplab_model::ErrorClass::BadInput => input_error(py, message),
        heaplab_model::ErrorClass::WorkFailed => work_error(py, message),
    }
}
