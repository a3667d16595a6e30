//! From an access profile to the graph HALO groups (§4.1, end): one node per reduced context
//! ([`node_keys`]: the profile's full context, or that with recursion collapsed by function)
//! that holds accesses to small objects, kept hottest first until they cover the asked share of
//! all such accesses (a node whose objects churn, [`turnover`], is passed over), and the
//! profile's context affinity edges summed between kept nodes. Also the profile's contexts and
//! call sites as [`crate::Groups`] records them.

use crate::{GroupContext, GroupEdge, GroupError, ObjectSizes, Params, Recursion, Site};
use heaplab_access::AccessProfile;
use std::collections::HashMap;

/// A kept reduced context.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Node {
    /// The profile's full contexts it stands for (indices, ascending; one under
    /// [`Recursion::CallSite`]).
    pub contexts: Vec<u32>,
    /// Loads and stores to their objects of at most `max_object_size` bytes.
    pub accesses: u64,
}

/// An edge between two nodes (indices into [`Graph::nodes`], `a <= b`; `a == b` is a loop:
/// two objects of one context).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Edge {
    /// One end.
    pub a: usize,
    /// The other end.
    pub b: usize,
    /// Weight (≥ 1).
    pub weight: u64,
}

/// The graph grouping works on.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Graph {
    /// Kept contexts, hottest first (ties: lower context index first).
    pub nodes: Vec<Node>,
    /// Edges between them, sorted by (a, b), no repeats.
    pub edges: Vec<Edge>,
    /// The nodes' accesses, summed (HALO's `graph.accesses`).
    pub accesses: u64,
}

/// The graph and what [`crate::Groups`] records of the profile.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Built {
    /// What grouping works on.
    pub graph: Graph,
    /// Every call site of the profile's full contexts, in order of first appearance.
    pub sites: Vec<Site>,
    /// Every full context of the profile (same indices), none grouped yet.
    pub contexts: Vec<GroupContext>,
    /// The profile's context affinity edges, all of them.
    pub edges: Vec<GroupEdge>,
    /// Accesses to small objects of attributable contexts: what the coverage is a share of.
    pub groupable_accesses: u64,
}

/// Builds the graph of `profile` under `params` (coverage, max object size).
pub fn build(profile: &AccessProfile, params: &Params) -> Result<Built, GroupError> {
    let fc = &profile.full_contexts;
    if fc.is_empty() {
        return Err(GroupError::NoContexts);
    }
    if profile.info.max_grouped_size > 0 && params.max_object_size > profile.info.max_grouped_size {
        return Err(GroupError::Params(format!(
            "max object size {} is larger than the {} bytes the profile's affinity graph covers (profile again with a larger maximum)",
            params.max_object_size, profile.info.max_grouped_size
        )));
    }
    let n = fc.len();
    let mut sites: Vec<Site> = Vec::new();
    let mut site_of: HashMap<(String, u64), u32> = HashMap::new();
    let mut contexts = Vec::with_capacity(n);
    for (i, c) in fc.iter().enumerate() {
        let mut ids = Vec::with_capacity(c.frames.len());
        for (k, f) in c.frames.iter().enumerate() {
            let module = f.module.rsplit('/').next().unwrap_or("").to_string();
            let depth = c.depths.get(k).copied().ok_or_else(|| GroupError::Profile(format!("full context {i} has {} frames but {} depths", c.frames.len(), c.depths.len())))?;
            let id = *site_of.entry((module.clone(), f.file_offset)).or_insert_with(|| {
                sites.push(Site { module, file_offset: f.file_offset, function: f.function.clone(), max_depth: 0 });
                (sites.len() - 1) as u32
            });
            let s = &mut sites[id as usize];
            s.max_depth = s.max_depth.max(depth);
            if s.function.is_empty() {
                s.function = f.function.clone();
            }
            ids.push(id);
        }
        contexts.push(GroupContext { sites: ids, ..GroupContext::default() });
    }
    // Accesses per context: all objects (for the record), and small ones (the node's weight);
    // the small ones' lifetimes, for the turnover.
    let mut small = vec![0u64; n];
    let mut lives: Vec<Vec<Life>> = vec![Vec::new(); n];
    for (i, b) in profile.blocks.iter().enumerate() {
        if b.full_context == u32::MAX {
            continue;
        }
        let c = b.full_context as usize;
        if c >= n {
            return Err(GroupError::Profile(format!("block {i} names full context {c} of {n}")));
        }
        let acc = b.reads.saturating_add(b.writes);
        let x = &mut contexts[c];
        let z = x.sizes.get_or_insert(ObjectSizes { min: u64::MAX, max: 0, freed: 0 });
        z.min = z.min.min(b.size);
        z.max = z.max.max(b.size);
        z.freed += u64::from(b.free_at != u64::MAX);
        x.objects += 1;
        x.bytes = x.bytes.saturating_add(b.size);
        x.accesses = x.accesses.saturating_add(acc);
        if b.size <= params.max_object_size {
            x.small_accesses = x.small_accesses.saturating_add(acc);
            x.small_bytes = x.small_bytes.saturating_add(b.size);
            small[c] = small[c].saturating_add(acc);
            lives[c].push(Life { size: b.size, alloc_at: b.alloc_at, free_at: b.free_at });
        }
    }
    // Objects of no known context could share a size class with any group's: no context's
    // sizes can then rule that out (`same_layout`).
    if profile.blocks.iter().any(|b| b.full_context == u32::MAX) {
        contexts.iter_mut().for_each(|x| x.sizes = None);
    }
    // The context with no frame in the program's modules cannot be told apart at run time: it
    // is no node, and its accesses are no part of what the coverage counts.
    let attributable = |c: usize| !fc[c].frames.is_empty();
    let groupable: u64 = (0..n).filter(|&c| attributable(c)).map(|c| small[c]).fold(0, u64::saturating_add);
    // Candidate nodes: the attributable contexts with small-object accesses, by reduced context.
    let keys = node_keys(&sites, &contexts, params.recursion);
    let mut candidates: Vec<Node> = Vec::new();
    let mut candidate_of: HashMap<&[u32], usize> = HashMap::new();
    for c in (0..n).filter(|&c| attributable(c) && small[c] > 0) {
        let k = *candidate_of.entry(&keys[c]).or_insert_with(|| {
            candidates.push(Node::default());
            candidates.len() - 1
        });
        candidates[k].contexts.push(c as u32);
        candidates[k].accesses = candidates[k].accesses.saturating_add(small[c]);
    }
    candidates.sort_by_key(|nd| (std::cmp::Reverse(nd.accesses), nd.contexts[0]));
    let target = params.coverage * groupable as f64;
    let mut covered = 0u64;
    let mut nodes = Vec::new();
    for nd in candidates {
        if covered as f64 >= target {
            break;
        }
        if params.max_turnover > 0.0 {
            let node_lives: Vec<Life> = nd.contexts.iter().flat_map(|&c| lives[c as usize].iter().copied()).collect();
            if turnover(&node_lives) > params.max_turnover {
                for &c in &nd.contexts {
                    contexts[c as usize].churns = true;
                }
                continue;
            }
        }
        covered = covered.saturating_add(nd.accesses);
        for &c in &nd.contexts {
            contexts[c as usize].kept = true;
        }
        nodes.push(nd);
    }
    let mut node_of = vec![usize::MAX; n];
    for (k, nd) in nodes.iter().enumerate() {
        for &c in &nd.contexts {
            node_of[c as usize] = k;
        }
    }
    let mut edges = Vec::with_capacity(profile.context_affinity.len());
    let mut graph_edges = Vec::new();
    for e in &profile.context_affinity {
        if e.from >= n as u64 || e.to >= n as u64 {
            return Err(GroupError::Profile(format!("context affinity edge ({}, {}) names a context beyond the {n}", e.from, e.to)));
        }
        let (a, b) = (e.from.min(e.to) as u32, e.from.max(e.to) as u32);
        edges.push(GroupEdge { a, b, weight: e.weight });
        let (na, nb) = (node_of[a as usize], node_of[b as usize]);
        if na != usize::MAX && nb != usize::MAX && e.weight > 0 {
            graph_edges.push(Edge { a: na.min(nb), b: na.max(nb), weight: e.weight });
        }
    }
    edges.sort_by_key(|e| (e.a, e.b));
    edges.dedup_by(|x, y| {
        let same = (x.a, x.b) == (y.a, y.b);
        if same {
            y.weight = y.weight.saturating_add(x.weight);
        }
        same
    });
    Ok(Built { graph: Graph::new(nodes, graph_edges), sites, contexts, edges, groupable_accesses: groupable })
}

/// An object's size and lifetime on the profile's clock (`free_at` `u64::MAX`: live at exit).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Life {
    /// Bytes asked for.
    pub size: u64,
    /// When it was allocated.
    pub alloc_at: u64,
    /// When it was freed.
    pub free_at: u64,
}

/// How many times over a set of objects is replaced: the bytes allocated over the peak of the
/// bytes live at once (1 for objects that all live together, 1 for none or only empty ones).
/// A bump allocator that never reuses a dead object's space touches this many times the
/// memory an allocator that reuses it does.
pub fn turnover(lives: &[Life]) -> f64 {
    let mut events: Vec<(u64, i128)> = Vec::with_capacity(2 * lives.len());
    let mut total = 0u128;
    for l in lives {
        total += u128::from(l.size);
        events.push((l.alloc_at, i128::from(l.size)));
        if l.free_at != u64::MAX {
            events.push((l.free_at, -i128::from(l.size)));
        }
    }
    // Frees before allocations at one instant: a clock tick holds one event, so only a
    // malformed profile ties, and then the lower peak is the cautious reading.
    events.sort_unstable_by_key(|&(t, d)| (t, d));
    let (mut live, mut peak) = (0i128, 0i128);
    for (_, d) in events {
        live += d;
        peak = peak.max(live);
    }
    if peak <= 0 {
        return 1.0;
    }
    total as f64 / peak as f64
}

/// Each context's reduced form, the key of its node: its call sites (indices into `sites`) as
/// they are under [`Recursion::CallSite`], and under [`Recursion::Function`] only the innermost
/// frame of each function (module and symbol). The profile's contexts already keep each return
/// address once, at its innermost occurrence, so two contexts of one recursion differ only in
/// the function's own outer call sites (which were taken, in which order); those are dropped.
/// A frame without a symbol is a function of its own. Outer frames are dropped rather than
/// inner ones because the inner frame is where the allocation was made from.
pub fn node_keys(sites: &[Site], contexts: &[GroupContext], recursion: Recursion) -> Vec<Vec<u32>> {
    contexts
        .iter()
        .map(|c| match recursion {
            Recursion::CallSite => c.sites.clone(),
            Recursion::Function => {
                let mut seen: Vec<(&str, &str)> = Vec::new();
                let mut key = Vec::with_capacity(c.sites.len());
                for &s in &c.sites {
                    let site = &sites[s as usize];
                    if !site.function.is_empty() {
                        let f = (site.module.as_str(), site.function.as_str());
                        if seen.contains(&f) {
                            continue;
                        }
                        seen.push(f);
                    }
                    key.push(s);
                }
                key
            }
        })
        .collect()
}

impl Graph {
    /// A graph of `nodes` (hottest first) and `edges` between them, in any order and with
    /// repeats (their weights add up); zero-weight edges are dropped.
    pub fn new(nodes: Vec<Node>, edges: Vec<Edge>) -> Graph {
        let mut edges: Vec<Edge> = edges.into_iter().filter(|e| e.weight > 0).map(|e| Edge { a: e.a.min(e.b), b: e.a.max(e.b), weight: e.weight }).collect();
        edges.sort_by_key(|e| (e.a, e.b));
        edges.dedup_by(|x, y| {
            let same = (x.a, x.b) == (y.a, y.b);
            if same {
                y.weight = y.weight.saturating_add(x.weight);
            }
            same
        });
        let accesses = nodes.iter().map(|n| n.accesses).fold(0, u64::saturating_add);
        Graph { nodes, edges, accesses }
    }
}
