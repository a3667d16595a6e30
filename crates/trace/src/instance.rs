//! A trace read where an instance is expected: picking the process a run index names
//! ([`select`]), converting its trace with the statistics gathered on the way ([`read`]), the
//! whole sequence from an opened input to an instance, whatever file it is ([`read_input`]),
//! and the oracle gap those statistics give against a plan ([`TraceInstance::oracle_gap`]).
//!
//! Front ends (the CLI's `plan`, `stats`, `convert`, `replay`, `trace-info`; the Python
//! bindings) call these and only word the results; the errors are typed ([`InstanceError`]) so
//! each front end can name its own flags in the message, and [`ReadWatch`] tells a front end
//! what to say while the work runs.

use crate::convert::{analyse, ConvertOptions};
use crate::reader::{Ending, TraceReader};
use crate::run::RunIndex;
use crate::stats::TraceStats;
use heaplab_model::{files, ErrorClass, FileKind, Input, InputError, Instance, Semantics};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

/// Why a trace could not be read as an instance.
#[derive(Debug)]
pub enum InstanceError {
    /// The file could not be read or is not what was expected.
    Input(InputError),
    /// A process was asked for but the input is not a run index.
    NotRunIndex {
        /// The input's name.
        name: String,
    },
    /// The run index is malformed (the message names the file).
    BadIndex(String),
    /// The run index cannot be read, or names no such process.
    Index {
        /// The index's name.
        name: String,
        /// What is wrong.
        reason: String,
    },
    /// The process the index names made no heap call, so it has no trace.
    NoTrace {
        /// The index's name.
        name: String,
        /// The process, as [`crate::run::Process::label`] names it.
        process: String,
    },
    /// The trace is damaged and its usable part was not asked for.
    Damaged {
        /// The trace's name.
        name: String,
        /// What cut it short.
        reason: String,
        /// Events before the damage (usable).
        events: u64,
        /// Sequence numbers below this are usable.
        usable_below: u64,
    },
    /// The conversion stopped: sizes or times left the range instances guarantee.
    Conversion {
        /// The trace's name.
        name: String,
        /// Why.
        reason: String,
    },
    /// A thread was asked for that the trace does not have.
    NoSuchThread {
        /// The trace's name.
        name: String,
        /// The thread asked for.
        thread: u32,
        /// The threads the trace has.
        known: Vec<u32>,
    },
}

impl InstanceError {
    /// Every one of these is the caller's input: a trace, an index or a choice in them.
    pub fn class(&self) -> ErrorClass {
        ErrorClass::BadInput
    }
}

impl From<InputError> for InstanceError {
    fn from(e: InputError) -> Self {
        InstanceError::Input(e)
    }
}

impl std::fmt::Display for InstanceError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            InstanceError::Input(e) => write!(f, "{e}"),
            InstanceError::NotRunIndex { name } => write!(f, "{name} is not a run index (.hlrun, written by `heaplab trace` for a run of several processes)"),
            InstanceError::BadIndex(m) => f.write_str(m),
            InstanceError::Index { name, reason } => write!(f, "{name}: {reason}"),
            InstanceError::NoTrace { name, process } => write!(f, "{name}: {process} made no heap call, so it has no trace"),
            InstanceError::Damaged { name, reason, events, usable_below } => {
                write!(f, "{name}: {reason} ({events} events before it, sequence numbers < {usable_below}, are usable)")
            }
            InstanceError::Conversion { name, reason } => write!(f, "{name}: {reason}"),
            InstanceError::NoSuchThread { name, thread, known } => {
                let known: Vec<String> = known.iter().map(|k| k.to_string()).collect();
                write!(f, "{name}: thread {thread}: no such thread (threads: {})", known.join(", "))
            }
        }
    }
}

impl std::error::Error for InstanceError {}

/// The input a reader takes, after [`select`].
pub struct Selected {
    /// The trace to read (the input itself when it was not a run index).
    pub input: Input,
    /// For a run index: the index, the process taken and its trace file.
    pub run: Option<SelectedRun>,
}

/// The process [`select`] took from a run index.
pub struct SelectedRun {
    /// The whole index.
    pub index: RunIndex,
    /// The process taken, as [`crate::run::Process::label`] names it.
    pub process: String,
    /// Its trace file.
    pub file: PathBuf,
}

/// The trace a reader takes from `input`: `input` itself, or for a run index the process
/// `selector` picks (by default the one with the most events). A selector on anything but a
/// run index is an error: it would otherwise be ignored silently.
pub fn select(mut input: Input, selector: Option<&str>) -> Result<Selected, InstanceError> {
    let name = input.name().to_string();
    if input.kind()? != FileKind::RunIndex {
        if selector.is_some() {
            return Err(InstanceError::NotRunIndex { name });
        }
        return Ok(Selected { input, run: None });
    }
    let mut text = String::new();
    std::io::Read::read_to_string(&mut input, &mut text).map_err(|e| InstanceError::Index { name: name.clone(), reason: format!("cannot read: {e}") })?;
    let index = RunIndex::parse(&name, &text).map_err(InstanceError::BadIndex)?;
    let p = index.select(selector).map_err(|reason| InstanceError::Index { name: name.clone(), reason })?;
    // An index from standard input names its traces relative to the working directory.
    let at = if name == "-" { Path::new("./-") } else { Path::new(&name) };
    let process = p.label();
    let file = index.trace_path(at, p).ok_or_else(|| InstanceError::NoTrace { name: name.clone(), process: process.clone() })?;
    let trace = Input::open(&file.to_string_lossy())?;
    Ok(Selected { input: trace, run: Some(SelectedRun { index, process, file }) })
}

/// How [`read`] converts a trace.
#[derive(Clone, Copy, Debug, Default)]
pub struct ReadOptions {
    /// Clock, size model and thread of the conversion.
    pub convert: ConvertOptions,
    /// Use the usable part of a damaged trace instead of failing.
    pub allow_truncated: bool,
}

/// A trace read as an instance, with what the trace said besides.
pub struct TraceInstance {
    /// The converted instance.
    pub instance: Instance,
    /// The trace's statistics (peak live bytes, pages, threads, ...).
    pub stats: TraceStats,
    /// How the trace ended (trailer, damage).
    pub ending: Ending,
}

/// Reads a trace (an opened input, told apart by its magic) as an instance; `progress` counts
/// the events read, for a progress line.
pub fn read(input: Input, opts: &ReadOptions, progress: Option<&AtomicU64>) -> Result<TraceInstance, InstanceError> {
    let name = input.name().to_string();
    let mut r = TraceReader::from_input(input)?;
    let analysis = analyse(&mut r, Some(&opts.convert), progress);
    let ending = r.into_ending();
    if let Some(d) = &ending.damage {
        if !opts.allow_truncated {
            return Err(InstanceError::Damaged { name, reason: d.reason.clone(), events: analysis.stats.events, usable_below: d.usable_below });
        }
    }
    if let Some(reason) = analysis.conversion_error {
        return Err(InstanceError::Conversion { name, reason });
    }
    if let Some(thread) = opts.convert.thread {
        if !analysis.stats.threads.contains_key(&thread) {
            return Err(InstanceError::NoSuchThread { name, thread, known: analysis.stats.threads.keys().copied().collect() });
        }
    }
    Ok(TraceInstance { instance: analysis.instance.unwrap_or_default(), stats: analysis.stats, ending })
}

/// What [`read_input`] tells its caller while it works, for the lines a front end shows; every
/// method does nothing by default (`()` watches nothing).
pub trait ReadWatch {
    /// A run index's process was taken (before its trace is read).
    fn selected(&mut self, _run: &SelectedRun) {}
    /// The trace `name` is about to be converted: the counter returned, if any, counts the
    /// events read (for a progress line).
    fn converting(&mut self, _name: &str) -> Option<Arc<AtomicU64>> {
        None
    }
    /// The trace `name` was converted.
    fn converted(&mut self, _name: &str, _trace: &TraceInstance) {}
}

impl ReadWatch for () {}

/// What [`read_input`] read.
pub struct InputRead {
    /// The instance.
    pub instance: Instance,
    /// Its offsets, when the file is a placement and offsets were allowed.
    pub offsets: Option<Vec<u64>>,
    /// When the input was a trace: what the trace said besides the instance (its `instance`
    /// field is left empty, the instance being [`InputRead::instance`]).
    pub trace: Option<TraceInstance>,
}

/// Reads an instance from an opened input, whatever it is: an instance file (CSV, .hlbin; with
/// its offsets when `allow_offsets` and the file has them), a trace (converted with `opts`), or
/// a run index (the trace of the process `selector` picks, see [`select`]). A selector on
/// anything but a run index is an error. The input is read once, so pipes work.
pub fn read_input(
    input: Input,
    selector: Option<&str>,
    semantics: Semantics,
    allow_offsets: bool,
    opts: &ReadOptions,
    watch: &mut dyn ReadWatch,
) -> Result<InputRead, InstanceError> {
    let s = select(input, selector)?;
    if let Some(run) = &s.run {
        watch.selected(run);
    }
    let mut input = s.input;
    if input.kind()? != FileKind::Trace {
        let (instance, offsets) = files::read_input(input, semantics, allow_offsets)?;
        return Ok(InputRead { instance, offsets, trace: None });
    }
    let name = input.name().to_string();
    let counter = watch.converting(&name);
    let mut trace = read(input, opts, counter.as_deref())?;
    watch.converted(&name, &trace);
    let instance = std::mem::take(&mut trace.instance);
    Ok(InputRead { instance, offsets: None, trace: Some(trace) })
}

/// The oracle gap: a static plan's makespan against the peak the trace's real allocator
/// reached (pages touched by live blocks, and the process's RSS when the trailer has it).
#[derive(Clone, Debug, PartialEq)]
pub struct OracleGap {
    /// Events in the trace.
    pub events: u64,
    /// Threads in the trace.
    pub threads: usize,
    /// Peak of live requested bytes.
    pub peak_live_requested: u64,
    /// Peak of live usable bytes.
    pub peak_live_usable: u64,
    /// The plan's makespan.
    pub plan_makespan: u64,
    /// The allocator's peak, in bytes of pages touched by live blocks.
    pub allocator_peak_pages: u64,
    /// The process's peak RSS, when the trailer has it.
    pub peak_rss: Option<u64>,
    /// Allocator peak minus plan makespan (negative when the allocator did better).
    pub gap_bytes: i128,
    /// The gap in percent of the makespan (0 for an empty plan).
    pub gap_pct_of_makespan: f64,
    /// Whether the trace is complete.
    pub complete: bool,
}

impl TraceInstance {
    /// The oracle gap of a plan of this instance with makespan `makespan`.
    pub fn oracle_gap(&self, makespan: u64) -> OracleGap {
        let st = &self.stats;
        let gap = st.peak_pages_bytes as i128 - makespan as i128;
        OracleGap {
            events: st.events,
            threads: st.threads.len(),
            peak_live_requested: st.peak_live_requested,
            peak_live_usable: st.peak_live_usable,
            plan_makespan: makespan,
            allocator_peak_pages: st.peak_pages_bytes,
            peak_rss: self.ending.trailer.as_ref().map(|t| t.peak_rss),
            gap_bytes: gap,
            gap_pct_of_makespan: if makespan > 0 { gap as f64 * 100.0 / makespan as f64 } else { 0.0 },
            complete: self.ending.is_complete(),
        }
    }
}
