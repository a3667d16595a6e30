//! Applying layouts to running programs. A [`Layout`] says, for each heap allocation a program
//! is expected to make (identified by its allocation context, its ordinal within that context
//! and its size), where in one reserved region it goes. Strategies compute layouts from a trace
//! and an optional access profile; the `.hllayout` format stores them; the runtime library
//! (C, LD_PRELOAD) serves them to an unmodified program and falls back to a real allocator for
//! everything else; the launcher runs a program that way and reads the runtime's report.

pub mod affinity;
pub mod format;
pub mod profile;
pub mod report;
pub mod run;
pub mod source;
pub mod strategy;

/// Granule of the region: every planned offset is a multiple, every slot a whole number.
pub const GRANULE: u64 = 16;

/// The bytes a planned allocation of `size` requested bytes occupies in the region.
pub fn slot(size: u64) -> u64 {
    size.max(1).div_ceil(GRANULE) * GRANULE
}

/// One expected allocation.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Entry {
    /// Requested bytes: a request matches the entry only with exactly this size.
    pub size: u64,
    /// Offset in the region, a multiple of [`GRANULE`]; `None`: expected but not planned (sent
    /// to the fallback allocator).
    pub offset: Option<u64>,
    /// The block's id in the trace the layout came from (its global allocation ordinal).
    pub block: u64,
    /// Lifetime `[lower, upper)` on the trace's clock (for validation and pictures).
    pub lower: u64,
    /// End of the lifetime.
    pub upper: u64,
    /// Accesses counted by the profile (0 without one).
    pub accesses: u64,
}

/// The expected allocations of one context, in the order the program makes them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LayoutContext {
    /// Stable context key (`heaplab_trace::context`); 0 when the layout has no contexts.
    pub key: u64,
    /// Its allocations by ordinal.
    pub entries: Vec<Entry>,
}

/// A layout: where each expected allocation goes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Layout {
    /// The strategy that made it.
    pub strategy: String,
    /// Frames hashed into a context key; 0: no contexts, one context of key 0 holds every
    /// allocation in global order.
    pub stack_depth: u32,
    /// Bytes of the region (at least the end of every planned slot).
    pub region: u64,
    /// Alignment of the region's base: a power of two, at least 4096.
    pub region_align: u64,
    /// Contexts, keys unique.
    pub contexts: Vec<LayoutContext>,
}
