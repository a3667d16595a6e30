//! One module per subcommand: its arguments (typed by [`crate::options`] and
//! [`crate::flag_ranges`]), the library calls that do its work, and its output. What several
//! subcommands share lives beside this directory ([`crate::trace_input`], [`crate::picture`],
//! [`crate::outputs`], [`crate::progress`]); the one use between subcommands is `trace`
//! printing its run table with `trace_info`'s.

pub mod access;
pub mod check;
pub mod compare;
pub mod convert;
pub mod frag;
pub mod gen;
pub mod group;
pub mod group_info;
pub mod layout;
pub mod layout_info;
pub mod plan;
pub mod plot;
pub mod rank;
pub mod replay;
pub mod report;
pub mod run;
pub mod stats;
pub mod study;
pub mod trace;
pub mod trace_info;
