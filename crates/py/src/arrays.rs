//! Columns of buffers (numpy `uint64` arrays) into the model's instance, through the same
//! builder the file readers use, so arrays obey exactly the rules and messages of a CSV file.

use crate::errors::input_error;
use heaplab_model::csv::{InstanceBuilder, Position, RawBuffer};
use heaplab_model::{Columns, Instance, InputError, Semantics};
use numpy::PyReadonlyArray1;
use pyo3::prelude::*;

/// The name errors give to buffers that came from arrays.
const ARRAYS: &str = "arrays";

/// The columns of an instance, borrowed from numpy.
pub struct Columns1<'a> {
    pub ids: &'a [u64],
    pub lower: &'a [u64],
    pub upper: &'a [u64],
    pub sizes: &'a [u64],
    pub alignment: Option<&'a [u64]>,
    pub requested: Option<&'a [u64]>,
}

/// A contiguous view of a 1-D `uint64` array, or an `InputError` naming it.
pub fn slice<'a>(py: Python<'_>, name: &str, a: &'a PyReadonlyArray1<'_, u64>) -> PyResult<&'a [u64]> {
    a.as_slice().map_err(|_| input_error(py, format!("{name}: expected a contiguous 1-D array")))
}

/// Borrows the columns of an instance from numpy (each must be contiguous).
#[allow(clippy::too_many_arguments)]
pub fn columns<'a>(
    py: Python<'_>,
    ids: &'a PyReadonlyArray1<'_, u64>,
    lower: &'a PyReadonlyArray1<'_, u64>,
    upper: &'a PyReadonlyArray1<'_, u64>,
    sizes: &'a PyReadonlyArray1<'_, u64>,
    alignment: &'a Option<PyReadonlyArray1<'_, u64>>,
    requested: &'a Option<PyReadonlyArray1<'_, u64>>,
) -> PyResult<Columns1<'a>> {
    Ok(Columns1 {
        ids: slice(py, "ids", ids)?,
        lower: slice(py, "lower", lower)?,
        upper: slice(py, "upper", upper)?,
        sizes: slice(py, "sizes", sizes)?,
        alignment: alignment.as_ref().map(|a| slice(py, "alignment", a)).transpose()?,
        requested: requested.as_ref().map(|a| slice(py, "requested", a)).transpose()?,
    })
}

impl Columns1<'_> {
    /// Checks that every column has one value per buffer.
    fn check_lengths(&self) -> Result<(), String> {
        let n = self.sizes.len();
        let named = [("ids", Some(self.ids)), ("lower", Some(self.lower)), ("upper", Some(self.upper)), ("alignment", self.alignment), ("requested", self.requested)];
        for (name, col) in named {
            if let Some(c) = col {
                if c.len() != n {
                    return Err(format!("{name} has {} values but sizes has {n}: one per buffer expected", c.len()));
                }
            }
        }
        Ok(())
    }

    /// The instance these columns describe, checked by the model's rules (size > 0,
    /// upper > lower, power-of-two alignment, requested ≤ size, unique ids, sizes summing within
    /// 64 bits). An error names the buffer by its index in the arrays.
    pub fn instance(&self) -> Result<Instance, String> {
        self.check_lengths()?;
        let columns = Columns { alignment: self.alignment.is_some(), requested: self.requested.is_some() };
        let mut b = InstanceBuilder::new(ARRAYS, Semantics::Inex, columns).counting(Position::Index);
        b.reserve(self.sizes.len() as u64);
        for k in 0..self.sizes.len() {
            let raw = RawBuffer {
                id: self.ids[k],
                lower: self.lower[k],
                upper: self.upper[k],
                size: self.sizes[k],
                alignment: self.alignment.map_or(0, |a| a[k]),
                requested: self.requested.map_or(0, |r| r[k]),
            };
            b.push(k as u64, raw).map_err(|e| message(&e))?;
        }
        b.finish().map_err(|e| message(&e))
    }
}

/// The builder's message for buffers from arrays: its position is the index in the arrays.
fn message(e: &InputError) -> String {
    let at = e.line.map(|k| format!("buffer at index {k}")).unwrap_or_else(|| ARRAYS.to_string());
    match &e.field {
        Some(f) => format!("{at}: field '{f}': {}", e.message),
        None => format!("{at}: {}", e.message),
    }
}

/// Checks arrays the way `plan` and `check` will (the package calls it when an `Instance` is
/// made, so an invalid instance never exists). Raises `InputError`.
#[pyfunction]
#[pyo3(signature = (ids, lower, upper, sizes, alignment=None, requested=None))]
pub fn validate_instance(
    py: Python<'_>,
    ids: PyReadonlyArray1<'_, u64>,
    lower: PyReadonlyArray1<'_, u64>,
    upper: PyReadonlyArray1<'_, u64>,
    sizes: PyReadonlyArray1<'_, u64>,
    alignment: Option<PyReadonlyArray1<'_, u64>>,
    requested: Option<PyReadonlyArray1<'_, u64>>,
) -> PyResult<()> {
    let cols = columns(py, &ids, &lower, &upper, &sizes, &alignment, &requested)?;
    cols.instance().map(drop).map_err(|m| input_error(py, m))
}
