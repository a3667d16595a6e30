//! Allocators as bin-packing solvers: replay a trace's heap requests under a chosen allocator
//! and record where it put every block.
//!
//! - [`allocators`]: selecting an allocator by name (glibc, jemalloc, mimalloc, tcmalloc) or by
//!   the path of a shared library.
//! - [`driver`]: the replay itself — a clean child process (C, `child/`, embedded by
//!   [`child`]) with the allocator preloaded executes the requests it is sent through shared
//!   memory, one thread per traced thread, in the trace's global order, and reports each
//!   block's address, usable size and mapping.
//! - [`placed`]: the result, jobs grouped by mapping, and its `.hlplaced` binary format and
//!   CSV export.

pub mod allocators;
pub mod child;
pub mod driver;
pub mod placed;
#[cfg(test)]
mod tests;

pub use allocators::{resolve, resolve_list, Allocator, AllocatorError};
pub use driver::{replay, replay_file, ReplayError, ReplayOptions, ReplayStats};
pub use placed::{Job, Mapping, Placed, PlacedMeta};

impl ReplayError {
    /// The class of the error: a trace, option or allocator that cannot be used
    /// ([`ReplayError::Input`]), or a replay that failed ([`ReplayError::Work`]).
    pub fn class(&self) -> heaplab_model::ErrorClass {
        match self {
            ReplayError::Input(_) => heaplab_model::ErrorClass::BadInput,
            ReplayError::Work(_) => heaplab_model::ErrorClass::WorkFailed,
        }
    }
}
