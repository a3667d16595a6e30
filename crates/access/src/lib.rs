//! The access profile of one run of a program: which heap blocks it allocated (in allocation
//! order, with sizes, contexts and lifetimes), how often each was read and written, which
//! blocks were used close together in time (the co-access graph, HALO's affinity), and which
//! blocks came to hold pointers to which (friends, as ccmalloc's hint named them). Written by
//! the valgrind tool `heaplab access` runs, read here; layouts and grouping consume
//! [`AccessProfile`].

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
}

pub mod codes;
