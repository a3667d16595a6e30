//! The blocks a layout is built from: one trace read through the trace → blocks layer
//! (`heaplab_trace::blocks`), on the events clock, every thread, requested sizes. Each block
//! keeps its global allocation ordinal (`Block.id`, the identity the runtime matches without
//! contexts), its alignment, its lifetime, and with contexts the stable key of its call site
//! (`heaplab_trace::context`, from the trace's module map and its `Site` frames).
//!
//! A run index (several processes) stands for its root process's first image: that is the
//! process a layout applies to.

use heaplab_model::{ErrorClass, FileKind, Input, InputError};
use heaplab_trace::context::ModuleMap;
use heaplab_trace::run::RunIndex;
use heaplab_trace::{BlockOptions, Blocks, Clock, TraceReader};
use std::path::Path;

/// One heap block of the trace, as a layout sees it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SourceBlock {
    /// Global allocation ordinal (`Block.id`): the block's index in [`Source::blocks`].
    pub id: u64,
    /// Requested bytes (0 for malloc(0)).
    pub size: u64,
    /// Log2 of the alignment its call asked for (0: none).
    pub align_log2: u8,
    /// Lifetime `[lower, upper)` on the events clock.
    pub lower: u64,
    /// End of the lifetime.
    pub upper: u64,
    /// Stable context key of its call site; 0 when contexts were not asked for.
    pub context: u64,
}

/// A trace's blocks, in allocation order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Source {
    /// The trace file read (for a run index: its root trace).
    pub file: String,
    /// Blocks by id.
    pub blocks: Vec<SourceBlock>,
    /// Frames per context key: the trace's stack depth with contexts, 0 without.
    pub stack_depth: u32,
}

/// Why a trace could not serve as a layout's source.
#[derive(Debug)]
pub enum SourceError {
    /// The file is unreadable, not a trace, or damaged.
    Input(InputError),
    /// Contexts were asked for but the trace recorded no call sites.
    NoSites {
        /// The trace.
        file: String,
    },
    /// Contexts were asked for but the trace has no module map (no trailer).
    NoModules {
        /// The trace.
        file: String,
    },
}

impl SourceError {
    /// All of these are the caller's input.
    pub fn class(&self) -> ErrorClass {
        ErrorClass::BadInput
    }
}

impl std::fmt::Display for SourceError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SourceError::Input(e) => write!(f, "{e}"),
            SourceError::NoSites { file } => write!(f, "{file}: the trace recorded no call sites, so its blocks have no contexts"),
            SourceError::NoModules { file } => {
                write!(f, "{file}: the trace has no module map (it ends without a trailer), so call sites have no stable keys")
            }
        }
    }
}

impl std::error::Error for SourceError {}

impl From<InputError> for SourceError {
    fn from(e: InputError) -> Self {
        SourceError::Input(e)
    }
}

/// The trace to read for `path`: the file itself, or a run index's root trace.
fn root_trace(path: &str) -> Result<Input, InputError> {
    let mut input = Input::open(path)?;
    if input.kind()? != FileKind::RunIndex {
        return Ok(input);
    }
    let bad = |m: String| InputError::file(path, heaplab_model::InputErrorKind::Consistency, m);
    let mut text = String::new();
    std::io::Read::read_to_string(&mut input, &mut text).map_err(|e| bad(format!("cannot read: {e}")))?;
    let index = RunIndex::parse(path, &text).map_err(bad)?;
    let root = index.processes.first().ok_or_else(|| bad("the run index lists no process".into()))?;
    let file = index.trace_path(Path::new(path), root).ok_or_else(|| bad(format!("the root process {} made no heap call", root.label())))?;
    Input::open(&file.to_string_lossy())
}

/// Reads the blocks of the trace at `path` (a `.hltrace`, or a run index's root process); with
/// `contexts`, each block's stable context key.
pub fn read(path: &str, contexts: bool) -> Result<Source, SourceError> {
    let input = root_trace(path)?;
    let file = input.name().to_string();
    let mut reader = TraceReader::from_input(input)?;
    let header = reader.header().clone();
    let options = BlockOptions { clock: Clock::Events, ..BlockOptions::default() };
    let mut machine: Blocks = Blocks::new(options, &header);
    let mut blocks: Vec<SourceBlock> = Vec::new();
    let mut sites: Vec<u32> = Vec::new();
    let close = |blocks: &mut Vec<SourceBlock>, id: Option<u64>, at: u64| {
        if let Some(b) = id.and_then(|i| blocks.get_mut(i as usize)) {
            b.upper = at;
        }
    };
    for step in reader.by_ref() {
        let change = machine.step(&step);
        if let Some(c) = change.closed {
            close(&mut blocks, c.block.id, c.at);
        }
        if let Some(b) = change.opened {
            let id = b.id.expect("every thread is in scope");
            debug_assert_eq!(id as usize, blocks.len());
            blocks.push(SourceBlock { id, size: b.requested, align_log2: b.align_log2, lower: b.open, upper: u64::MAX, context: 0 });
            sites.push(b.site);
        }
    }
    for c in machine.finish() {
        close(&mut blocks, c.block.id, c.at);
    }
    let ending = reader.into_ending();
    if let Some(d) = &ending.damage {
        return Err(InputError::file(&file, heaplab_model::InputErrorKind::Format, format!("damaged trace: {} (a layout needs every allocation)", d.reason)).into());
    }
    let mut stack_depth = 0;
    if contexts {
        if header.stack_depth == 0 || ending.sites.is_empty() {
            return Err(SourceError::NoSites { file });
        }
        let Some(trailer) = &ending.trailer else { return Err(SourceError::NoModules { file }) };
        let map = ModuleMap::new(&trailer.modules);
        let mut keys = std::collections::HashMap::new();
        for (b, site) in blocks.iter_mut().zip(&sites) {
            b.context = *keys.entry(*site).or_insert_with(|| match ending.sites.get(site) {
                Some(s) => map.context_key(&s.frames),
                // A call site the trace did not define: the key of no frames, which the runtime
                // computes only when it can unwind nothing (so the entry rarely matches).
                None => map.context_key(&[]),
            });
        }
        stack_depth = u32::from(header.stack_depth);
    }
    Ok(Source { file, blocks, stack_depth })
}
