//! Grouping heap objects by allocation context, as HALO does (Savage and Jones, CGO 2020), for
//! unmodified dynamically linked programs. An access profile's full contexts and their affinity
//! graph become [`Groups`]: sets of contexts whose objects are used together, each with a
//! selector (the few call sites that tell its members apart from every other context). At run
//! time the grouped allocator walks the stack of each small allocation, evaluates the selectors
//! and serves a group's objects by bump allocation from that group's own chunks, everything
//! else from the fallback allocator.
//!
//! Modules, in pipeline order: [`graph`] (the profile's contexts and the affinity graph between
//! the kept ones), [`cluster`] (HALO's greedy grouping, figures 6–8), [`select`] (selectors,
//! figure 10, and checking them against the profile's own contexts), [`format`] (the
//! `.hlgroups` file). [`group`] runs the first three.

pub mod cluster;
pub mod cost;
pub mod format;
pub mod graph;
pub mod report;
pub mod run;
pub mod same_layout;
pub mod select;
pub mod table;

use std::collections::HashMap;

/// HALO's parameters, with its defaults (§4, §5.1). `min_weight`, `max_group_members` and
/// `group_threshold` are not given in the paper; their defaults here are heaplab's (see
/// [`Params::default`]).
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
    /// A group is kept only if its internal weight is at least this share of the graph's
    /// accesses and its objects' accesses at least this share of all the profile's accesses
    /// (objects of every size).
    pub group_threshold: f64,
    /// Objects larger than this are never grouped (HALO: 4 KiB).
    pub max_object_size: u64,
    /// Bytes per chunk of the grouped allocator (HALO: 1 MiB).
    pub chunk_size: u64,
    /// Empty chunks kept for reuse instead of returned to the kernel (HALO: 1).
    pub spare_chunks: u32,
    /// Whole call sites: contexts below the coverage cut follow their allocation call site's
    /// grouped contexts when those all fall in one group, instead of going to the fallback
    /// (heaplab's default; HALO: off, it groups covered contexts only). The call site then
    /// decides without a stack walk, and a list built from covered and uncovered contexts stays
    /// in one heap.
    pub whole_call_sites: bool,
    /// A group with more edge weight to another group than inside itself joins that group
    /// after the clustering ([`cluster`]'s `absorb`; heaplab's default; HALO: off, every group
    /// stays as the density score formed it). The score favours small tight groups, so contexts
    /// used mostly with a large group's objects can end up in a group of their own, in other
    /// chunks. It relies on the profile's edges coming from use, not construction (the access
    /// tool leaves initialising stores out of them): a list built interleaved with others and
    /// then walked alone (HALO's figure 2) must not look tied to them.
    pub absorb: bool,
    /// Which contexts no group claims get a cold group of their own, tried last, instead of
    /// following their call site's group (whole call sites) or going to the fallback (HALO):
    /// see [`ColdGroup`]. Their objects then stay out of the hot groups' chunks, where,
    /// allocated between the objects a program uses together, they push those apart; the call
    /// site no longer decides alone, so each allocation there walks a frame or more.
    /// heaplab's addition (HALO's uncovered contexts go to the fallback).
    pub cold_group: ColdGroup,
    /// How recursion is collapsed when contexts become the graph's nodes (HALO: by call site).
    pub recursion: Recursion,
    /// A node whose small objects churn is left out: one whose bytes allocated exceed this many
    /// times its peak live bytes (0: no limit; HALO has no such rule). A bump allocator that
    /// never reuses a dead object's space touches `turnover` times the memory a reusing
    /// allocator does, so short-lived objects stream through the cache instead of packing.
    pub max_turnover: f64,
    /// Groups are dropped, all of them, when identifying them would walk more than this many
    /// stack frames per object they serve ([`cost::walk_per_grouped_object`]; 0: no limit;
    /// HALO identifies groups in constant time with rewritten binaries and has no such rule).
    pub max_walk_per_object: f64,
}

/// How the graph's nodes are made of the profile's contexts. The profile keeps HALO's reduction
/// (each return address at its innermost occurrence only); grouping may collapse further.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Recursion {
    /// HALO's reduction (§4.1): one node per profile context, so a recursion's path through
    /// different call sites of one function (the order they were taken in, which of them were)
    /// makes distinct nodes.
    CallSite,
    /// One node per context reduced further to the innermost frame of each function (module and
    /// symbol; a frame without a symbol stands for itself): the objects a recursion allocates
    /// at one point are one node whatever path through the function's own call sites led
    /// there. Selectors still tell the profile's contexts apart by all their call sites.
    #[default]
    Function,
}

impl Recursion {
    /// The name `heaplab group --recursion` takes.
    pub fn name(self) -> &'static str {
        match self {
            Recursion::CallSite => "call-site",
            Recursion::Function => "function",
        }
    }

    /// The mode named `name` (see [`Recursion::name`]).
    pub fn parse(name: &str) -> Option<Recursion> {
        [Recursion::CallSite, Recursion::Function].into_iter().find(|r| r.name() == name)
    }
}

/// Which of the contexts no group claims, allocating at a call site where grouped contexts
/// allocate too, get the cold group ([`Params::cold_group`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ColdGroup {
    /// None: whole call sites put them in their call site's group, or they go to the fallback.
    Never,
    /// Those that whole call sites would put in a group they *dilute*, call site by call site:
    /// where, among the group's objects and those of the contexts one call site would add,
    /// the latter's share of the bytes exceeds their share of the accesses by more than
    /// [`COLD_DILUTION`] (objects small enough to group only). Objects as hot per byte as the group's cost it nothing and keep
    /// their call site's decision free of a walk (power: the same tree nodes reached by other
    /// paths, 0 points); objects much colder take lines the group's hot objects would share
    /// (health: the list nodes made as patients move between lists, 23% of the group's bytes
    /// and 13% of its accesses, 11 points).
    #[default]
    Diluting,
    /// Every one of them (whether or not a group would take them in).
    All,
}

impl ColdGroup {
    /// The name `heaplab group --json` and `group-info` show.
    pub fn name(self) -> &'static str {
        match self {
            ColdGroup::Never => "never",
            ColdGroup::Diluting => "diluting",
            ColdGroup::All => "all",
        }
    }
}

/// How far the share of a group's bytes that the contexts whole call sites add to it may exceed
/// their share of its accesses before they go to a cold group instead ([`ColdGroup::Diluting`]):
/// 5 points. Small enough that a context a tenth as hot per byte as its group goes once it adds
/// about 6% to the group's bytes; large enough that a few rare objects (a handful of colder
/// nodes beside thousands of hot ones) do not cost their call site a walk. On the bench's
/// profiles the taken-in contexts dilute by 0 points (power), 0.3 (ft, one object) and 8–11
/// (health, on three small inputs).
pub const COLD_DILUTION: f64 = 0.05;

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
    /// Loads and stores to its objects small enough to group ([`Params::max_object_size`]):
    /// what a group serving it would hold.
    pub small_accesses: u64,
    /// Bytes requested of those objects.
    pub small_bytes: u64,
    /// Whether it was kept in the graph (within the coverage, small objects).
    pub kept: bool,
    /// Whether it was left out because its node's objects churn ([`Params::max_turnover`]).
    pub churns: bool,
    /// The sizes of its objects and how many were freed (`None` in files written before
    /// heaplab recorded them): what [`same_layout`] needs to tell whether the fallback
    /// allocator would lay them out as a group does.
    pub sizes: Option<ObjectSizes>,
}

/// The sizes a context's objects were requested with, and how many of them were freed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ObjectSizes {
    /// The smallest request (bytes).
    pub min: u64,
    /// The largest request (bytes).
    pub max: u64,
    /// Objects freed before the profiled run ended.
    pub freed: u64,
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
    /// What identifying the groups grouping found would cost (before any were dropped for it).
    pub identification: Identification,
}

/// The estimated cost of identifying the groups at run time ([`cost`]).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Identification {
    /// Stack frames walked per grouped object, for the profile's own allocations.
    pub walk_per_object: f64,
    /// Whether the groups were dropped because that exceeds [`Params::max_walk_per_object`].
    pub dropped: bool,
}

impl Default for Params {
    /// HALO's published values where the paper gives them (coverage 0.9, tolerance 5%, 4 KiB
    /// objects, 1 MiB chunks, one spare chunk). The other three are not in the paper and its
    /// artefact's values could not be consulted here, so they are chosen to filter nothing the
    /// paper's text keeps: every edge counts (`min_weight` 1), groups are as large as the merge
    /// benefit lets them grow (no member limit), and a group must hold at least 0.1% of the
    /// graph's accesses in internal weight to be worth a pool of chunks of its own. A turnover
    /// above 4 leaves a node out: a data structure that lives (or is rebuilt a few times over
    /// the run) stays, while objects replaced many times over, which bump allocation would
    /// spread over fresh memory, go to the fallback allocator that reuses their space. Groups
    /// whose identification would walk more than 8 frames per object they serve (about 25 ns
    /// of walking, what the few cache misses an object's placement saves are worth) are not made.
    /// Lopsided groups are absorbed and whole call sites followed, both departures from HALO:
    /// together they keep the objects a program uses together (one kind of list node made at
    /// several call sites) in one group and let their call site decide without a walk (health:
    /// about 20% less time than jemalloc, where HALO's groups ran about as fast as jemalloc).
    /// Contexts below the coverage cut that would dilute the group their call site takes them
    /// into go to a cold group instead ([`ColdGroup::Diluting`]), as HALO keeps its uncovered
    /// contexts out of its groups: health's D1 misses −24% against −20% without, for a smaller
    /// gain in time (−12% to −17% against about −20%), the one walk step it adds at its list nodes'
    /// call site and the split of their allocation order costing more on real caches than the
    /// simulated ones show.
    fn default() -> Self {
        Params {
            coverage: 0.9,
            merge_tolerance: 0.05,
            min_weight: 1,
            max_group_members: 0,
            group_threshold: 0.001,
            max_object_size: 4096,
            chunk_size: 1 << 20,
            spare_chunks: 1,
            whole_call_sites: true,
            absorb: true,
            cold_group: ColdGroup::default(),
            recursion: Recursion::default(),
            max_turnover: 4.0,
            max_walk_per_object: 8.0,
        }
    }
}

impl Groups {
    /// Whether group `k` is the cold group ([`Params::cold_group`]): the last one, with no edge
    /// weight (every group the clustering forms holds at least one edge).
    pub fn is_cold(&self, k: usize) -> bool {
        self.params.cold_group != ColdGroup::Never && k + 1 == self.groups.len() && self.groups[k].weight == 0
    }

    /// A call site as people read it: its function, or `module+0xoffset` when unknown.
    pub fn site_name(&self, s: u32) -> String {
        match self.sites.get(s as usize) {
            Some(x) if !x.function.is_empty() => x.function.clone(),
            Some(x) => format!("{}+{:#x}", x.module, x.file_offset),
            None => format!("site {s}?"),
        }
    }

    /// Short names for the contexts: the names of each one's innermost call sites, as few as
    /// tell it apart from the others (at most [`NAME_FRAMES`]), innermost first, joined by
    /// " < " (`xmalloc < build_a`: build_a called xmalloc, which allocated).
    pub fn context_names(&self) -> Vec<String> {
        let names: Vec<Vec<String>> = self.contexts.iter().map(|c| c.sites.iter().take(NAME_FRAMES).map(|&s| self.site_name(s)).collect()).collect();
        let mut counts: Vec<HashMap<&[String], usize>> = vec![HashMap::new(); NAME_FRAMES + 1];
        for n in &names {
            for l in 1..=n.len() {
                *counts[l].entry(&n[..l]).or_default() += 1;
            }
        }
        names
            .iter()
            .map(|n| {
                if n.is_empty() {
                    return "(no program frame)".to_string();
                }
                let l = (1..=n.len()).find(|&l| counts[l][&n[..l]] == 1).unwrap_or(n.len());
                n[..l].join(" < ")
            })
            .collect()
    }
}

/// Most call sites in a context's name.
pub const NAME_FRAMES: usize = 4;

/// Largest chunk the grouped allocator accepts (1 GiB).
pub const MAX_CHUNK_SIZE: u64 = 1 << 30;
/// Smallest chunk (a page).
pub const MIN_CHUNK_SIZE: u64 = 4096;
/// Most spare chunks kept.
pub const MAX_SPARE_CHUNKS: u32 = 1 << 16;

impl Params {
    /// Whether a group whose objects take `accesses` of the profile's `all` is worth serving. A
    /// group the program hardly touches cannot move its misses, while serving it costs the
    /// runtime's start-up and the walks that find it: its objects must take the threshold's
    /// share of all the profile's accesses, objects of every size (mst: a group of two objects
    /// with 40 of 836,479 accesses, the rest to its large hash tables, was slower than
    /// jemalloc; ft's cold group: one object, 10 of 233,801).
    pub fn takes_its_share(&self, accesses: u64, all: u64) -> bool {
        accesses as f64 >= all as f64 * self.group_threshold
    }

    /// Checks every parameter's range; the error names the parameter and its range.
    pub fn validate(&self) -> Result<(), String> {
        let unit = |v: f64| v.is_finite() && (0.0..=1.0).contains(&v);
        if !(unit(self.coverage) && self.coverage > 0.0) {
            return Err(format!("coverage {} is not in (0, 1]", self.coverage));
        }
        if !unit(self.merge_tolerance) {
            return Err(format!("merge tolerance {} is not in [0, 1]", self.merge_tolerance));
        }
        if !unit(self.group_threshold) {
            return Err(format!("group threshold {} is not in [0, 1]", self.group_threshold));
        }
        if !self.chunk_size.is_power_of_two() || !(MIN_CHUNK_SIZE..=MAX_CHUNK_SIZE).contains(&self.chunk_size) {
            return Err(format!("chunk size {} is not a power of two from {MIN_CHUNK_SIZE} to {MAX_CHUNK_SIZE}", self.chunk_size));
        }
        // Chunks are found from an object's address by masking, so an object must fit in one
        // with room for the chunk's header; half a chunk leaves plenty.
        if self.max_object_size == 0 || self.max_object_size > self.chunk_size / 2 {
            return Err(format!("max object size {} is not from 1 to half the chunk size ({})", self.max_object_size, self.chunk_size / 2));
        }
        if !(self.max_turnover.is_finite() && (self.max_turnover == 0.0 || self.max_turnover >= 1.0)) {
            return Err(format!("max turnover {} is not 0 (no limit) or at least 1", self.max_turnover));
        }
        if !(self.max_walk_per_object.is_finite() && self.max_walk_per_object >= 0.0) {
            return Err(format!("max walk per object {} is not 0 (no limit) or more", self.max_walk_per_object));
        }
        if self.spare_chunks > MAX_SPARE_CHUNKS {
            return Err(format!("{} spare chunks (at most {MAX_SPARE_CHUNKS})", self.spare_chunks));
        }
        Ok(())
    }
}

/// Why a profile could not be grouped. All are the caller's to fix (bad input).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GroupError {
    /// The profile has no full contexts: it was recorded without `--contexts`.
    NoContexts,
    /// A parameter out of its range, or one that disagrees with the profile.
    Params(String),
    /// The profile breaks a rule of its format (an index out of range).
    Profile(String),
}

impl GroupError {
    /// Always bad input.
    pub fn class(&self) -> heaplab_model::ErrorClass {
        heaplab_model::ErrorClass::BadInput
    }
}

impl std::fmt::Display for GroupError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            GroupError::NoContexts => write!(f, "the profile has no full allocation contexts (record it with `heaplab access --contexts`)"),
            GroupError::Params(m) => write!(f, "{m}"),
            GroupError::Profile(m) => write!(f, "inconsistent profile: {m}"),
        }
    }
}

impl std::error::Error for GroupError {}

/// Fails unless `distance` (what the user expects) is the affinity distance the profile was
/// recorded with: the distance is chosen when profiling, and grouping cannot change it.
pub fn check_affinity_distance(profile: &heaplab_access::AccessProfile, distance: u64) -> Result<(), GroupError> {
    if profile.info.affinity_distance != distance {
        return Err(GroupError::Params(format!(
            "affinity distance {distance} asked for, but the profile was recorded with {} (profile again with `heaplab access --contexts --affinity-distance {distance}`)",
            profile.info.affinity_distance
        )));
    }
    Ok(())
}

/// Groups a profile's contexts: the graph of the kept contexts ([`graph::build`]), HALO's
/// greedy grouping ([`cluster::group`]), then the selectors ([`select::identify`]); the
/// groups are dropped when identifying them costs too much ([`Params::max_walk_per_object`]).
pub fn group(profile: &heaplab_access::AccessProfile, params: &Params) -> Result<Groups, GroupError> {
    params.validate().map_err(GroupError::Params)?;
    let built = graph::build(profile, params)?;
    let found = cluster::group(&built.graph, params);
    let mut out = Groups {
        params: params.clone(),
        command: profile.info.command.clone(),
        affinity_distance: profile.info.affinity_distance,
        sites: built.sites,
        contexts: built.contexts,
        edges: built.edges,
        groups: Vec::new(),
        walk_depth: 0,
        identification: Identification::default(),
    };
    for g in &found {
        let members: Vec<u32> = g.members.iter().flat_map(|&n| built.graph.nodes[n].contexts.iter().copied()).collect();
        let accesses = members.iter().map(|&m| out.contexts[m as usize].accesses).sum();
        out.groups.push(Group { members, weight: g.weight, accesses, selector: Vec::new() });
    }
    let all: u64 = out.contexts.iter().map(|c| c.accesses).sum();
    out.groups.retain(|g| params.takes_its_share(g.accesses, all));
    // Most accessed first (HALO's popularity order, which the selectors are built and tried
    // in); the sort is stable, so ties keep the order the groups were formed in.
    out.groups.sort_by_key(|g| std::cmp::Reverse(g.accesses));
    for (k, g) in out.groups.iter().enumerate() {
        for &m in &g.members {
            out.contexts[m as usize].group = Some(k as u32);
        }
    }
    select::identify(&mut out);
    // Which contexts whole call sites would put where follows from the groups' selectors, so
    // the cold group is chosen once they exist, and the selectors made again with it.
    let too_costly = |walk: f64| params.max_walk_per_object > 0.0 && walk > params.max_walk_per_object;
    let mut walk_per_object = cost::walk_per_grouped_object(profile, &out);
    if params.cold_group != ColdGroup::Never && add_cold_group(&mut out) {
        select::identify(&mut out);
        let with_cold = cost::walk_per_grouped_object(profile, &out);
        // A cold group whose walks alone would have every group dropped is not made.
        if too_costly(with_cold) && !too_costly(walk_per_object) {
            remove_cold_group(&mut out);
        } else {
            walk_per_object = with_cold;
        }
    }
    let dropped = too_costly(walk_per_object);
    if dropped {
        out.groups.clear();
        out.walk_depth = 0;
        for c in &mut out.contexts {
            c.group = None;
        }
    }
    out.identification = Identification { walk_per_object, dropped };
    Ok(out)
}

/// The contexts a cold group could take: in no group, not churning, with a call site in the
/// program and objects small enough to group, whose allocation call site (their innermost site,
/// keyed as the runtime table keys call sites) some grouped context allocates at too.
pub fn cold_candidates(g: &Groups) -> Vec<u32> {
    let call_site = |c: &GroupContext| c.sites.first().map(|&s| table::site_key(g, s));
    let hot: std::collections::HashSet<(String, u64)> = g.contexts.iter().filter(|c| c.group.is_some()).filter_map(call_site).collect();
    let max_object = g.params.max_object_size;
    (0..g.contexts.len() as u32)
        .filter(|&i| {
            let c = &g.contexts[i as usize];
            let small = c.sizes.is_none_or(|z| z.min <= max_object);
            c.group.is_none() && !c.churns && small && call_site(c).is_some_and(|k| hot.contains(&k))
        })
        .collect()
}

/// Appends the cold group ([`Params::cold_group`]) and says whether it did: the
/// [`cold_candidates`], with [`ColdGroup::Diluting`] only those that whole call sites would
/// send, from one call site, to a group they dilute (`g`'s selectors must be made). None when there are none, no groups, or
/// when their objects take less than the group threshold's share of the accesses, as for any
/// group.
fn add_cold_group(g: &mut Groups) -> bool {
    let mut members = cold_candidates(g);
    if g.params.cold_group == ColdGroup::Diluting {
        // Call site by call site: what walks for the cold group's sake is the call site, so
        // contexts at another call site of the same group, as hot as it, stay unwalked.
        let runs_in = table::destinations(g);
        let mut diluting: Vec<u32> = taken_in_by_call_site(g, &members, &runs_in).into_iter().filter(|(_, t)| t.dilution() > COLD_DILUTION).flat_map(|(cs, _)| cs).collect();
        diluting.sort_unstable();
        members = diluting;
    }
    let accesses = members.iter().map(|&m| g.contexts[m as usize].accesses).sum();
    let all: u64 = g.contexts.iter().map(|c| c.accesses).sum();
    if members.is_empty() || !g.params.takes_its_share(accesses, all) {
        return false;
    }
    let k = g.groups.len() as u32;
    for &m in &members {
        g.contexts[m as usize].group = Some(k);
    }
    g.groups.push(Group { members, weight: 0, accesses, selector: Vec::new() });
    true
}

/// What the contexts of no group that run in a group (`runs_in`, whole call sites taking them
/// in) add to that group: their accesses and bytes, and the group's own, of objects small
/// enough to group (larger ones go to the fallback whatever the group).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct TakenIn {
    /// Accesses and bytes requested of the group's own contexts.
    pub group_accesses: u64,
    /// See `group_accesses`.
    pub group_bytes: u64,
    /// Accesses and bytes requested of the contexts taken in.
    pub accesses: u64,
    /// See `accesses`.
    pub bytes: u64,
    /// How many contexts are taken in, and their objects.
    pub contexts: u64,
    /// See `contexts`.
    pub objects: u64,
}

impl TakenIn {
    /// The taken-in contexts' share of the bytes, among the group's objects and theirs.
    pub fn byte_share(&self) -> f64 {
        share(self.bytes, self.group_bytes)
    }

    /// The taken-in contexts' share of the accesses, among the group's objects and theirs.
    pub fn access_share(&self) -> f64 {
        share(self.accesses, self.group_accesses)
    }

    /// Points by which [`TakenIn::byte_share`] exceeds [`TakenIn::access_share`]
    /// ([`COLD_DILUTION`]; negative when they are hotter per byte than the group).
    pub fn dilution(&self) -> f64 {
        self.byte_share() - self.access_share()
    }

    /// Adds context `c` of `g`, taken in.
    fn add(&mut self, c: &GroupContext) {
        self.accesses += c.small_accesses;
        self.bytes += c.small_bytes;
        self.contexts += 1;
        self.objects += c.objects;
    }
}

/// `part`'s share of `part + rest` (0 when both are 0).
fn share(part: u64, rest: u64) -> f64 {
    if part + rest == 0 { 0.0 } else { part as f64 / (part + rest) as f64 }
}

/// Per group of `g`, its own figures, nothing taken in yet.
fn group_figures(g: &Groups) -> Vec<TakenIn> {
    let small = |members: &[u32], f: fn(&GroupContext) -> u64| members.iter().map(|&m| f(&g.contexts[m as usize])).sum();
    g.groups
        .iter()
        .map(|grp| TakenIn { group_accesses: small(&grp.members, |c| c.small_accesses), group_bytes: small(&grp.members, |c| c.small_bytes), ..TakenIn::default() })
        .collect()
}

/// Per group of `g`, what the contexts among `candidates` that run in it (`runs_in`) add to it.
pub fn taken_in(g: &Groups, candidates: &[u32], runs_in: &[Option<u32>]) -> Vec<TakenIn> {
    let mut t = group_figures(g);
    for &i in candidates {
        if let Some(k) = runs_in[i as usize] {
            t[k as usize].add(&g.contexts[i as usize]);
        }
    }
    t
}

/// The contexts among `candidates` that run in a group (`runs_in`), by group and allocation
/// call site, each set with what it adds to its group ([`taken_in`]).
pub fn taken_in_by_call_site(g: &Groups, candidates: &[u32], runs_in: &[Option<u32>]) -> Vec<(Vec<u32>, TakenIn)> {
    let mut at: HashMap<(u32, Option<(String, u64)>), Vec<u32>> = HashMap::new();
    for &i in candidates {
        if let Some(k) = runs_in[i as usize] {
            let site = g.contexts[i as usize].sites.first().map(|&s| table::site_key(g, s));
            at.entry((k, site)).or_default().push(i);
        }
    }
    // The groups' own figures once, each set's contexts added to its group's.
    let groups = group_figures(g);
    let mut out: Vec<(Vec<u32>, TakenIn)> = at
        .into_iter()
        .map(|((k, _), cs)| {
            let mut t = groups[k as usize];
            cs.iter().for_each(|&i| t.add(&g.contexts[i as usize]));
            (cs, t)
        })
        .collect();
    out.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    out
}

/// For groups with a cold group: per other group, what the cold group's contexts would add to
/// it without the cold group (whole call sites taking them in; the selectors made again
/// without it). `None` without a cold group.
pub fn without_cold_group(g: &Groups) -> Option<Vec<TakenIn>> {
    let k = g.groups.len().checked_sub(1)?;
    if !g.is_cold(k) {
        return None;
    }
    let mut h = g.clone();
    let cold = remove_cold_group(&mut h);
    let runs_in = table::destinations(&h);
    Some(taken_in(&h, &cold.members, &runs_in))
}

/// Takes the last group (the cold group) out of `g`, its contexts back to no group, and makes
/// the selectors again: `g` as it was before [`add_cold_group`].
fn remove_cold_group(g: &mut Groups) -> Group {
    let cold = g.groups.pop().expect("a cold group to remove");
    for &m in &cold.members {
        g.contexts[m as usize].group = None;
    }
    select::identify(g);
    cold
}


#[cfg(test)]
mod tests;
