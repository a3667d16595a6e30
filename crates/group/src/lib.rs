//! Grouping heap objects by allocation context, as HALO does (Savage and Jones, CGO 2020), for
//! unmodified dynamically linked programs. An access profile's full contexts and their affinity
//! graph become [`Groups`]: sets of contexts whose objects are used together, each with a
//! selector (the few call sites that tell its members apart from every other context). At run
//! time the grouped allocator walks the stack of each small allocation, evaluates the selectors
//! and serves a group's objects by bump allocation from that group's own chunks, everything
//! else from the fallback allocator.

/// HALO's parameters, with its defaults (§4, §5.1).
#[derive(Clone, Debug, PartialEq)]
pub struct Params {
    /// Share of all accesses the kept contexts must cover, hottest first (HALO: 0.9).
    pub coverage: f64,
    /// Merge tolerance T of the merge benefit (HALO: 0.05).
    pub merge_tolerance: f64,
    /// Edges lighter than this are ignored when grouping.
    pub min_weight: u64,
    /// At most this many contexts per group (0: no limit).
    pub max_group_members: usize,
    /// A group is kept only if its internal weight is at least this share of all accesses.
    pub group_threshold: f64,
    /// Objects larger than this are never grouped (HALO: 4 KiB).
    pub max_object_size: u64,
    /// Bytes per chunk of the grouped allocator (HALO: 1 MiB).
    pub chunk_size: u64,
    /// Empty chunks kept for reuse instead of returned to the kernel (HALO: 1).
    pub spare_chunks: u32,
}

/// A call site: a return address, named so that it is found again in another run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Site {
    /// Basename of the mapped file.
    pub module: String,
    /// Offset of the return address in that file.
    pub file_offset: u64,
    /// The function holding the call, when symbols were available ("" otherwise).
    pub function: String,
    /// The deepest raw stack position (0 = the allocation call's return address) at which
    /// profiling saw it.
    pub max_depth: u32,
}

/// A full (reduced) allocation context of the profile, as grouping saw it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GroupContext {
    /// Its call sites, innermost first (indices into [`Groups::sites`]).
    pub sites: Vec<u32>,
    /// Its group (index into [`Groups::groups`]), `None` when ungrouped.
    pub group: Option<u32>,
    /// Loads and stores to its objects.
    pub accesses: u64,
    /// Objects allocated there.
    pub objects: u64,
    /// Bytes requested there.
    pub bytes: u64,
    /// Whether it was kept in the graph (within the coverage, small objects).
    pub kept: bool,
}

/// A group of contexts whose objects are allocated together.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Group {
    /// Member contexts (indices into [`Groups::contexts`]).
    pub members: Vec<u32>,
    /// The sum of the edge weights inside the group.
    pub weight: u64,
    /// Accesses to the members' objects.
    pub accesses: u64,
    /// The selector, in disjunctive normal form: an allocation belongs to the group when, for
    /// some conjunction, every site of it (indices into [`Groups::sites`]) is on its stack.
    pub selector: Vec<Vec<u32>>,
}

/// An affinity edge between two contexts (indices into [`Groups::contexts`], `a <= b`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GroupEdge {
    /// One end.
    pub a: u32,
    /// The other end (equal to `a` for two objects of one context).
    pub b: u32,
    /// Weight.
    pub weight: u64,
}

/// The result of grouping one profile: what `heaplab group` writes and `heaplab run --groups`
/// applies.
#[derive(Clone, Debug, PartialEq)]
pub struct Groups {
    /// The parameters used.
    pub params: Params,
    /// The profiled command line.
    pub command: Vec<String>,
    /// The affinity distance the profile was recorded with (bytes).
    pub affinity_distance: u64,
    /// Every call site any context uses.
    pub sites: Vec<Site>,
    /// The profile's full contexts.
    pub contexts: Vec<GroupContext>,
    /// The affinity graph between them.
    pub edges: Vec<GroupEdge>,
    /// Groups in the order their selectors are tried (most accessed first).
    pub groups: Vec<Group>,
    /// Frames the run-time walk must visit to see every selector site (the deepest selector
    /// site's `max_depth` + 1).
    pub walk_depth: u32,
}
