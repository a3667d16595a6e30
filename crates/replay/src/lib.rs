//! Allocators as bin-packing solvers: replay a trace's heap requests under a chosen allocator
//! and record where it put every block.
//!
//! - [`allocators`]: selecting an allocator by name (glibc, jemalloc, mimalloc, tcmalloc) or by
//!   the path of a shared library.
//! - [`driver`]: the replay itself — a clean child process (C, `child/`, embedded by
//!   [`child`]) with the allocator preloaded executes the requests it is sent through shared
//!   memory, one thread per traced thread, in the trace's global order, and reports each
//!   block's address, usable size and mapping.
//! - [`error`]: what can go wrong in a replay, each variant classed as bad input or failed
//!   work.
//! - [`placed`]: the result, jobs grouped by mapping, and its `.hlplaced` binary format and
//!   CSV export.

pub mod allocators;
pub mod child;
pub mod driver;
pub mod error;
pub mod placed;
#[cfg(test)]
mod tests;

pub use allocators::{resolve, resolve_list, Allocator, AllocatorError};
pub use driver::{replay, replay_file, ReplayOptions, ReplayStats};
pub use error::ReplayError;
pub use placed::{Job, Mapping, Placed, PlacedMeta};
