//! The heap report: what users of heaptrack and memray open a trace for (where the peak comes
//! from, which call sites allocate most or most often, what is temporary, what leaks, how the
//! heap grows, what changed between two runs), beside what only heaplab knows (the optimal
//! plan's peak and the allocators' waste).
//!
//! [`model`] holds the report's data: one [`model::Report`] per trace, one
//! [`model::DiffReport`] per pair. It is aggregated (per call site, a bounded number of
//! timeline points and snapshots), so it stays small whatever the trace's size, and it is what
//! every view reads: the terminal tables ([`text`]), `--json` and the HTML page ([`html`]).
//! [`analyse`] builds a report from a trace in one pass, with call sites symbolised by
//! [`symbols`]; [`oracle`] adds the optimal plan; [`diff`] compares two reports; [`limits`]
//! checks one against CI limits. [`naming`] says which frame names a site, for every view.

pub mod model;
pub mod oracle;
pub mod analyse;
pub mod diff;
pub mod html;
pub mod limits;
pub mod naming;
pub mod symbols;
pub mod text;
#[doc(hidden)]
pub mod browser;
