//! Static memory planning: given buffers with sizes and lifetimes, choose offsets that minimise
//! the makespan (peak memory). Owns the greedy [`heuristics`] (built from the placement
//! [`rules`], with the start-order sweep in [`online`]) and the trivial cases they solve in
//! closed form, the [`exact`] branch-and-bound search, the boxing algorithm of Buchsbaum et al.
//! ([`boxing`]), the blocks of [`flat`] components, the critical [`windows`] decomposition, the
//! size [`split`], the [`improve`]ment search, and the portfolio [`driver`] that splits an instance into independent
//! components and runs all of these within a time limit, as its [`policy`] says. In code
//! names "exact" means the branch-and-bound search only (the printed names of the trivial
//! cases keep their `exact:` prefix: outputs do not change).

pub mod boxing;
pub mod driver;
pub mod exact;
pub mod heuristics;
pub mod improve;
pub mod occupancy;
pub mod online;
pub mod policy;
pub mod rules;
pub mod split;
pub mod flat;
pub mod free_until;
pub mod timeline;
pub mod windows;

/// The seeded PRNG every stochastic stage draws from (the workspace's one copy, shared with
/// the instance generators).
pub use heaplab_rng as rng;

pub use driver::{plan, plan_in_place, Algorithm, PlanOptions, PlanOutcome, Progress, MAX_TIME_LIMIT_SECS};
pub use policy::{Policy, Stage};
