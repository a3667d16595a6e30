//! Deciding between configurations with stated confidence, and ranking them by a decision
//! maker's preferences. The compare results ([`results`], filled by [`pyperf`], or by the
//! [`runner`] that measures commands itself, energy from [`rapl`], or by
//! pyperformance runs that [`pyperformance`] drives; named configuration sets and suites in
//! [`suites`]) go through the HPT analysis
//! ([`hpt`], built on the rank tests of [`ranktest`]); decision
//! matrices ([`mcdm`]) are ranked with criteria weights from the best-worst methods ([`bwm`],
//! solved with the small simplex of [`lp`]), TOPSIS, and the Pareto front. The methods, their
//! sources and where heaplab deviates from them are in docs/decide.md.

pub mod bwm;
pub mod hpt;
pub mod lp;
pub mod mcdm;
pub mod pyperf;
pub mod pyperformance;
pub mod rapl;
pub mod ranktest;
pub mod results;
pub mod runner;
pub mod suites;

/// A decision error: bad input (a file, an option, comparisons that break the method's rules).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DecideError {
    /// The input cannot be used; the message names what and where.
    Input(String),
}

impl std::fmt::Display for DecideError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DecideError::Input(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for DecideError {}
