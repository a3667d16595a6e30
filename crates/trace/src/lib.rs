//! Tracing real programs' heaps: the `.hltrace` format ([`format`]), the LD_PRELOAD tracer that
//! writes it (C, `preload/`, embedded by [`preload`]), the streaming reader that merges threads
//! into one ordered stream ([`reader`]), trace statistics ([`stats`]) and the conversion of a
//! trace to a heaplab instance ([`convert`], the thesis' table 3.1).

pub mod convert;
pub mod format;
pub mod preload;
pub mod reader;
pub mod stats;
#[cfg(test)]
mod tests;
pub mod writer;

pub use convert::{analyse, Analysis, Clock, ConvertOptions, SizeModel};
pub use reader::{is_trace, Damage, Ending, Event, Half, Header, Origin, PageEvent, Skim, Step, TraceReader};
pub use stats::TraceStats;
