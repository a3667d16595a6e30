//! The access profile of one run of a program: which heap blocks it allocated (in allocation
//! order, with sizes, contexts and lifetimes), how often each was read and written, which
//! blocks were used close together in time (the co-access graph, HALO's affinity), and which
//! blocks came to hold pointers to which (friends, as ccmalloc's hint named them). Written by
//! the valgrind tool `heaplab access` runs, read here; layouts and grouping consume
//! [`AccessProfile`].
//!
//! Modules: [`format`] (the `.hlaccess` file, its reader and writer), [`run`] (profiling a
//! program under the tool), [`tool`] (the embedded valgrind tool), [`codes`] (the format's
//! numbers shared with the tool's C).

/// One heap block of the profiled run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AccessBlock {
    /// Bytes the program asked for (0 for malloc(0)).
    pub size: u64,
    /// Index into [`AccessProfile::contexts`] of its allocation context.
    pub context: u32,
    /// When it was allocated, in heap events (allocations and frees) since the start.
    pub alloc_at: u64,
    /// When it was freed, on the same clock; `u64::MAX` when it was live at exit.
    pub free_at: u64,
    /// Loads that touched it.
    pub reads: u64,
    /// Stores that touched it.
    pub writes: u64,
    /// Index into [`AccessProfile::full_contexts`] of its reduced full context (HALO's
    /// context); `u32::MAX` when the profile has none.
    pub full_context: u32,
}

/// A frame of an allocation context.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Frame {
    /// The instruction address in the profiled run.
    pub ip: u64,
    /// Path of the file mapped there ("" when none).
    pub module: String,
    /// Offset of `ip` in that file.
    pub file_offset: u64,
    /// Function name, when symbols were available ("" otherwise).
    pub function: String,
}

/// An allocation context: the call stack of an allocation.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Context {
    /// The stable key of its frames (`heaplab_trace::context`), the key layouts and the runtime
    /// library use.
    pub key: u64,
    /// Frames, innermost first.
    pub frames: Vec<Frame>,
}

/// An allocation context as HALO reduces it (§4.1): the return addresses of the whole call
/// stack that lie in the program's own modules (the main executable, plus any modules the user
/// named), innermost first, each kept only at its innermost occurrence (recursion collapsed).
/// A call made from a library (say `operator new` calling malloc) is thereby attributed to the
/// program's call site that led into the library. Grouping (`heaplab group`) works on these.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FullContext {
    /// The stable key of its frames (`heaplab_trace::context`'s hash of module basename and
    /// file offset), the same in every run whatever ASLR does.
    pub key: u64,
    /// Frames, innermost first; empty for allocations with no frame in the program's modules.
    pub frames: Vec<Frame>,
    /// For each frame, the deepest position in the raw call stack (0 = the return address of
    /// the allocation call itself) at which it was seen: how far a run-time stack walk must go
    /// to find it.
    pub depths: Vec<u32>,
}

/// A weighted edge between two blocks (indices into [`AccessProfile::blocks`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Edge {
    /// For co-access: the block accessed first; for friends: the block the pointer was stored in.
    pub from: u64,
    /// For co-access: the block accessed next; for friends: the block pointed to.
    pub to: u64,
    /// How many times.
    pub weight: u64,
}

/// What the profiler was asked to do and what it saw in total.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProfileInfo {
    /// The profiled command line.
    pub command: Vec<String>,
    /// The co-access window in bytes of distinct accessed data (HALO's affinity distance).
    pub affinity_distance: u64,
    /// Frames recorded per context.
    pub stack_depth: u32,
    /// Loads and stores executed, heap or not.
    pub accesses: u64,
    /// Of those, the ones that touched a live heap block.
    pub heap_accesses: u64,
    /// Co-access weight dropped by the profiler's memory bound (the lightest edges go first).
    pub coaccess_dropped: u64,
    /// Friend weight dropped by the same bound.
    pub friends_dropped: u64,
    /// Objects larger than this many bytes are left out of the context affinity graph (HALO
    /// groups only small objects; its default is 4 KiB). 0 when there is no context graph.
    pub max_grouped_size: u64,
    /// Basenames of the modules whose frames make up the full contexts (the main executable
    /// first).
    pub context_modules: Vec<String>,
    /// Context affinity weight dropped by the memory bound (the lightest edges go first).
    pub context_affinity_dropped: u64,
}

/// One run's access profile.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AccessProfile {
    /// Header figures.
    pub info: ProfileInfo,
    /// Blocks in allocation order (a realloc allocates a new block).
    pub blocks: Vec<AccessBlock>,
    /// Allocation contexts.
    pub contexts: Vec<Context>,
    /// Co-access: `to` was accessed within the affinity distance after `from`.
    pub coaccess: Vec<Edge>,
    /// Friends: a pointer to `to` was stored inside `from`.
    pub friends: Vec<Edge>,
    /// Reduced full contexts (empty unless the profile was recorded with contexts).
    pub full_contexts: Vec<FullContext>,
    /// HALO's affinity graph between full contexts (§4.2): undirected, `from <= to` (indices
    /// into [`AccessProfile::full_contexts`]; `from == to` is two different objects of one
    /// context), sorted, no repeats, weight ≥ 1.
    pub context_affinity: Vec<Edge>,
}

pub mod codes;
pub mod format;
pub mod run;
pub mod tool;

pub use format::{read, write, FormatError};

/// What one allocation context's blocks add up to.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ContextTotals {
    /// Index into [`AccessProfile::contexts`] (into [`AccessProfile::full_contexts`] for
    /// [`AccessProfile::full_context_totals`]).
    pub context: u32,
    /// Blocks allocated there.
    pub blocks: u64,
    /// Bytes requested there.
    pub bytes: u64,
    /// Loads that touched those blocks.
    pub reads: u64,
    /// Stores that touched them.
    pub writes: u64,
}

impl AccessProfile {
    /// Per-context totals, most accessed first (ties: fewer blocks, then context index).
    pub fn context_totals(&self) -> Vec<ContextTotals> {
        totals(self.contexts.len(), self.blocks.iter().map(|b| (b.context, b)))
    }

    /// Per-full-context totals, in the same order as [`AccessProfile::context_totals`] (empty
    /// when the profile has no full contexts).
    pub fn full_context_totals(&self) -> Vec<ContextTotals> {
        let n = self.full_contexts.len();
        totals(n, self.blocks.iter().filter(|b| (b.full_context as usize) < n).map(|b| (b.full_context, b)))
    }

    /// The total weight of the context affinity graph.
    pub fn context_affinity_weight(&self) -> u64 {
        self.context_affinity.iter().map(|e| e.weight).sum()
    }

    /// The share of all loads and stores that touched the heap (0 when none ran).
    pub fn heap_share(&self) -> f64 {
        if self.info.accesses == 0 {
            0.0
        } else {
            self.info.heap_accesses as f64 / self.info.accesses as f64
        }
    }
}

/// Totals of `n` contexts over (context index, block) pairs, most accessed first.
fn totals<'a>(n: usize, blocks: impl Iterator<Item = (u32, &'a AccessBlock)>) -> Vec<ContextTotals> {
    let mut t: Vec<ContextTotals> = (0..n).map(|c| ContextTotals { context: c as u32, ..Default::default() }).collect();
    for (c, b) in blocks {
        let x = &mut t[c as usize];
        x.blocks += 1;
        x.bytes += b.size;
        x.reads += b.reads;
        x.writes += b.writes;
    }
    t.sort_by_key(|x| (std::cmp::Reverse(x.reads + x.writes), x.blocks, x.context));
    t
}
