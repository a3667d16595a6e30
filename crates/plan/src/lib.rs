//! Static memory planning: given buffers with sizes and lifetimes, choose offsets that minimise
//! the makespan (peak memory). Owns the greedy [`heuristics`], the exact trivial cases and the
//! [`exact`] search, the boxing algorithm of Buchsbaum et al. ([`boxing`]), the blocks of
//! [`flat`] components, the critical [`windows`] decomposition, the [`improve`]ment search, and
//! the portfolio [`driver`] that splits an instance into independent components and runs all of
//! these within a time limit.

pub mod boxing;
pub mod driver;
pub mod exact;
pub mod heuristics;
pub mod improve;
pub mod occupancy;
pub mod online;
pub mod flat;
pub mod timeline;
pub mod windows;

/// The seeded PRNG every stochastic stage draws from (the workspace's one copy, shared with
/// the instance generators).
pub use heaplab_rng as rng;

pub use driver::{plan, Algorithm, PlanOptions, PlanOutcome, Progress};
