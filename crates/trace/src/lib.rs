//! Tracing real programs' heaps: the `.hltrace` format ([`format`]), the LD_PRELOAD tracer that
//! writes it (C, `preload/`, embedded by [`preload`]), the streaming reader that merges threads
//! into one ordered stream ([`reader`]), the stream's blocks and their lifetimes under the
//! rules of the thesis' table 3.1 ([`blocks`], shared with the replay), trace statistics
//! ([`stats`]) and the conversion of a trace to a heaplab instance ([`convert`]); running a
//! program under the tracer or one of heaplab's runtime libraries ([`launch`]; what the
//! runtimes' reports share: [`runtime_report`]) and the index of a run's processes ([`run`]); a trace
//! read where an instance is expected, with the oracle gap ([`instance`]); stable keys of call
//! sites across runs ([`context`]).

pub mod blocks;
pub mod compress;
pub mod context;
pub mod convert;
pub mod format;
pub mod instance;
pub mod launch;
pub mod preload;
pub mod reader;
pub mod run;
pub mod runtime_report;
pub mod stats;
#[cfg(test)]
mod tests;
pub mod writer;

pub use blocks::{Block, BlockOptions, Blocks, Cause, Change, Clock, Closed, Counts, SizeModel};
pub use convert::{analyse, Analysis, ConvertOptions};
pub use reader::{Damage, Ending, Event, Half, Header, Origin, PageEvent, Skim, Step, TraceReader};
pub use stats::TraceStats;
