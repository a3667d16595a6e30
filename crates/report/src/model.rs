//! The report's data model: plain serialisable values, aggregated per call site, with bounded
//! timeline and snapshot counts. Built by the analysis of one trace, read by every view (text,
//! JSON, HTML) and by the diff and the CI limits. Byte counts are requested bytes unless a field
//! says otherwise; times are nanoseconds since the trace started.

use serde::{Deserialize, Serialize};

/// Version of the report's JSON (bumped when a field changes meaning or goes away).
pub const REPORT_VERSION: u32 = 1;

/// The report of one traced process.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Report {
    /// [`REPORT_VERSION`].
    pub version: u32,
    /// What was traced.
    pub meta: Meta,
    /// The headline figures.
    pub summary: Summary,
    /// Every symbolised frame that some stack uses; stacks refer to frames by index.
    pub frames: Vec<Frame>,
    /// One entry per call site (distinct recorded stack) that allocated, with its figures.
    /// Index 0 is the "unknown" site when the trace recorded no stacks for some allocations.
    pub sites: Vec<Site>,
    /// The heap over time (a bounded number of points, the peak always among them).
    pub timeline: Vec<TimePoint>,
    /// Live bytes per site at chosen moments (the peak first, then evenly spaced moments):
    /// the flame graph of any of them can be drawn.
    pub snapshots: Vec<Snapshot>,
    /// Requests by size (power-of-two bins).
    pub sizes: Vec<Bin>,
    /// Blocks by lifetime in nanoseconds (power-of-two bins; leaks are not counted).
    pub lifetimes: Vec<Bin>,
    /// The optimal plan of the trace and the lower bound, when computed.
    pub oracle: Option<Oracle>,
    /// Allocators replaying the trace, when replays exist or were asked for.
    pub allocators: Vec<AllocatorRow>,
    /// What the report could not do and why (missing debug info, a truncated trace, ...).
    pub notes: Vec<String>,
}

/// What was traced.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Meta {
    /// The trace file.
    pub trace: String,
    /// The executable.
    pub executable: String,
    /// The command line.
    pub command: Vec<String>,
    /// Process id.
    pub pid: u32,
    /// Stack frames recorded per allocation (0: no call sites).
    pub stack_depth: u32,
    /// Threads that made heap calls.
    pub threads: u32,
    /// Duration of the trace in nanoseconds.
    pub duration_ns: u64,
    /// How the process ended ("exit 0", "signal 11", "no trailer", ...).
    pub ending: String,
    /// Whether the trace is complete (a trailer and no damage).
    pub complete: bool,
}

/// The headline figures.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Summary {
    /// Peak of live requested bytes.
    pub peak_bytes: u64,
    /// When the peak was first reached.
    pub peak_ns: u64,
    /// Blocks live at the peak.
    pub peak_blocks: u64,
    /// Peak resident set size (VmHWM) from the trailer.
    pub peak_rss: Option<u64>,
    /// Allocation calls (malloc, calloc, realloc's allocation half, aligned calls, ...).
    pub allocations: u64,
    /// free calls (not counting free(NULL)).
    pub frees: u64,
    /// realloc and reallocarray calls.
    pub reallocs: u64,
    /// Requested bytes over all allocations.
    pub bytes_allocated: u64,
    /// Temporary allocations (see [`Site::temporary`]).
    pub temporary: u64,
    /// Blocks still live when the trace ended.
    pub leaked_blocks: u64,
    /// Their requested bytes.
    pub leaked_bytes: u64,
}

/// A frame: one return address, symbolised when the module's symbols allowed it. An inlined
/// call becomes several frames at the same address (innermost first, `inlined` on all but the
/// outermost).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Frame {
    /// Demangled function name ("" when unknown).
    pub function: String,
    /// Source file ("" when unknown).
    pub file: String,
    /// Source line (0 when unknown).
    pub line: u32,
    /// The module's file name (basename).
    pub module: String,
    /// Offset of the address in the module's file (stable across runs).
    pub offset: u64,
    /// Whether the function was inlined into the frame's caller.
    pub inlined: bool,
}

/// A call site (a recorded stack) and what it allocated.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Site {
    /// Stable key of the stack (the same in every run of the program; see
    /// `heaplab_trace::context`), 0 for the unknown site. The diff matches sites by it.
    pub key: u64,
    /// Frames, innermost first (indices into [`Report::frames`]).
    pub stack: Vec<u32>,
    /// Allocation calls.
    pub calls: u64,
    /// Requested bytes allocated.
    pub bytes: u64,
    /// Bytes live at the peak.
    pub peak_bytes: u64,
    /// The most bytes this site ever had live at once.
    pub max_live_bytes: u64,
    /// Temporary allocations, as heaptrack counts them: freed by the next heap call of the same
    /// thread, with no allocation between.
    pub temporary: u64,
    /// Blocks live at the end of the trace.
    pub leaked_blocks: u64,
    /// Their bytes.
    pub leaked_bytes: u64,
}

/// One point of the heap over time.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize)]
pub struct TimePoint {
    /// Nanoseconds since the trace started.
    pub ns: u64,
    /// Live requested bytes (the maximum over the interval the point stands for, so the
    /// drawn curve never hides a spike).
    pub live_bytes: u64,
    /// Live blocks at that moment.
    pub live_blocks: u64,
}

/// Live bytes per site at one moment.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Snapshot {
    /// Nanoseconds since the trace started.
    pub ns: u64,
    /// Live requested bytes in all.
    pub live_bytes: u64,
    /// (site index, live bytes) for sites with live bytes, largest first; the smallest sites
    /// beyond a bound are summed in `other_bytes`.
    pub sites: Vec<(u32, u64)>,
    /// Live bytes of sites not listed.
    pub other_bytes: u64,
}

/// A histogram bin `[lo, hi)`.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize)]
pub struct Bin {
    /// Lower bound (inclusive).
    pub lo: u64,
    /// Upper bound (exclusive).
    pub hi: u64,
    /// Blocks in the bin.
    pub count: u64,
    /// Their requested bytes.
    pub bytes: u64,
}

/// How much the heap could have needed: the trace planned offline.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Oracle {
    /// Peak of live bytes (the lower bound no layout beats).
    pub lower_bound: u64,
    /// The plan's makespan (bytes of address space the optimal-as-found plan needs).
    pub plan_bytes: u64,
    /// Whether the plan is proven optimal (it meets the lower bound).
    pub proven_optimal: bool,
    /// Seconds the planner ran.
    pub plan_seconds: f64,
    /// The real allocator's peak in bytes of pages touched by live blocks.
    pub allocator_pages_bytes: u64,
}

/// One allocator replaying the trace (`heaplab replay`), its placement measured by
/// `heaplab frag`.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct AllocatorRow {
    /// Its name (glibc, jemalloc, mimalloc, tcmalloc, ...).
    pub name: String,
    /// Peak bytes of the pages its live blocks touched during the replay: its resident heap as
    /// far as the blocks show it (the measure of [`Oracle::allocator_pages_bytes`]).
    pub peak_bytes: u64,
    /// 2-D (external) fragmentation in percent: address-time area wasted below live blocks
    /// page by page, over the blocks' area (see `heaplab frag`).
    pub fragmentation_pct: f64,
    /// Its peak over the plan's, in percent.
    pub over_plan_pct: Option<f64>,
}

impl AllocatorRow {
    /// The row of allocator `name` whose replay peaked at `peak_bytes` with external
    /// fragmentation `external` (a ratio), compared with the plan when `oracle` has one.
    pub fn new(name: &str, peak_bytes: u64, external: f64, oracle: Option<&Oracle>) -> AllocatorRow {
        let over_plan_pct = oracle.filter(|o| o.plan_bytes > 0).map(|o| (peak_bytes as f64 - o.plan_bytes as f64) * 100.0 / o.plan_bytes as f64);
        AllocatorRow { name: name.to_string(), peak_bytes, fragmentation_pct: external * 100.0, over_plan_pct }
    }
}

/// Two reports compared site by site.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct DiffReport {
    /// [`REPORT_VERSION`].
    pub version: u32,
    /// The earlier run.
    pub before: Meta,
    /// The later run.
    pub after: Meta,
    /// Headline figures of each.
    pub before_summary: Summary,
    /// Headline figures of each.
    pub after_summary: Summary,
    /// Frames used by either side's stacks.
    pub frames: Vec<Frame>,
    /// Sites of either side matched by key, largest change of peak bytes first.
    pub sites: Vec<SiteDiff>,
    /// Both heaps over time, for one chart.
    pub before_timeline: Vec<TimePoint>,
    /// Both heaps over time, for one chart.
    pub after_timeline: Vec<TimePoint>,
    /// Notes from both reports and from matching.
    pub notes: Vec<String>,
}

/// One site in two runs.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct SiteDiff {
    /// Stable key.
    pub key: u64,
    /// Frames, innermost first (indices into [`DiffReport::frames`]).
    pub stack: Vec<u32>,
    /// Figures in the earlier run (all zero when the site is new).
    pub before: SiteFigures,
    /// Figures in the later run (all zero when the site is gone).
    pub after: SiteFigures,
}

/// The per-site figures a diff compares.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SiteFigures {
    /// Allocation calls.
    pub calls: u64,
    /// Requested bytes allocated.
    pub bytes: u64,
    /// Bytes live at the peak.
    pub peak_bytes: u64,
    /// Temporary allocations.
    pub temporary: u64,
    /// Leaked bytes.
    pub leaked_bytes: u64,
}
