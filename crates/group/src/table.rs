//! The runtime table: the flat file `heaplab run --groups` writes into the run's scratch
//! directory for the grouped allocator (`runtime/group.c`), so that the C side reads fixed-size
//! records and never parses the `.hlgroups` format. It holds only what identification and
//! allocation need: the selector sites (module basename, file offset), each group's selector as
//! DNF over those sites, the walk depth and the allocator's parameters, and the profile's
//! allocation call sites with what each decides ([`call_sites`]), and one record per program
//! module holding none of those sites ([`MODULE`]), so that the runtime knows every module whose
//! frames make up contexts.
//!
//! Layout (little-endian): a header of [`HEADER`] bytes ([`MAGIC`], then u64s: version,
//! walk_depth, max_object_size, chunk_size, spare_chunks, sites, groups, conjunctions, terms,
//! names_len, total_len, selector_sites); sites ([`SITE_RECORD`] bytes each: file offset u64,
//! name offset u32, name length u32, decides u32, depth u32, otherwise u32, 4 bytes unused), the selector sites first, then
//! call sites that are in no selector, then the module records; groups and conjunctions ([`PAIR_RECORD`] bytes each:
//! first u32, count u32, into the conjunctions and the terms); terms (u32 site indices); the
//! basenames. `build.rs` hands these numbers to the C as `heaplab_group_table.h`.

use crate::select::classify;
use crate::Groups;
use std::collections::HashMap;

/// The table's first 8 bytes.
pub const MAGIC: &[u8; 8] = b"HLGRTAB1";
/// The version written and read.
pub const VERSION: u64 = 4;
/// Bytes of the header.
pub const HEADER: u64 = 104;
/// Bytes per site record.
pub const SITE_RECORD: u64 = 32;
/// A site's `decides`: no decision at this call site (or not a call site), walk the stack.
pub const WALK: u32 = u32::MAX;
/// A site's `decides`: allocations made here fall back without a walk.
pub const FALLBACK: u32 = u32::MAX - 1;
/// A record's `decides` (with depth 0) when it names no site but a program module: a file offset
/// of one of its sites, so that the runtime finds the module's code where it is loaded.
pub const MODULE: u32 = u32::MAX - 2;
/// The most sites of all kinds (selector and call sites) in a table.
pub const MAX_TABLE_SITES: u64 = 1 << 20;
/// Bytes per group or conjunction record.
pub const PAIR_RECORD: u64 = 8;
/// The most selector sites the runtime tells apart (bits of its per-walk site set).
pub const MAX_SITES: u64 = 4096;
/// The most frames the runtime walks.
pub const MAX_WALK: u64 = 128;
/// The most groups a table holds (the runtime packs a call site's `otherwise` beside its depth).
pub const MAX_GROUPS: u64 = (1 << 24) - 2;

/// What an allocation call site tells at run time, met as the allocation's first frame in the
/// program's modules (its return address, or the first program frame a walk through library
/// code meets): `decides` is a group, or [`FALLBACK`], or [`WALK`]; `depth` is the walk's depth
/// (stack frames from the allocation call) for allocations made there; `otherwise` is where a
/// walk from there that meets no group's selector sends the allocation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CallSite {
    /// The group every profiled context allocating here is selected into, [`FALLBACK`] when
    /// none is, [`WALK`] when they differ.
    pub decides: u32,
    /// Frames to walk: 1 + the deepest selector site of a profiled context allocating here.
    pub depth: u32,
    /// With [`WALK`]: the group an allocation made here goes to when no selector holds for its
    /// stack, or [`FALLBACK`]. With whole call sites, the group of most of the call site's
    /// profiled objects, when they outnumber those its profiled contexts in no group allocated
    /// and none of those contexts churns; [`FALLBACK`] otherwise and for the other decisions.
    pub otherwise: u32,
}

/// Site `s` as the table names it: (module basename, file offset).
pub(crate) fn site_key(g: &Groups, s: u32) -> (String, u64) {
    let site = &g.sites[s as usize];
    (site.module.rsplit('/').next().unwrap_or_default().to_string(), site.file_offset)
}

/// The profile's allocation call sites (the innermost site of each context: its first frame in
/// the program's modules), keyed as the table names sites. A call site decides alone when the
/// selectors put every profiled context allocating there in one group, or none: the walk cannot
/// tell those contexts apart, so it stops there (at the return address itself when the program
/// called the allocator, at the first program frame when a library did); otherwise the walk goes
/// only as deep as those contexts' selector sites, and an allocation whose stack no selector
/// holds for goes to the call site's `otherwise`. A first program frame that is none of the
/// profile's call sites is an unknown context: the runtime sends it to the fallback.
///
/// `otherwise` extends whole call sites to call sites whose contexts span several groups: the
/// contexts that no selector picks (below the coverage cut, or kept but left out of every group)
/// allocate the same kind of object as the rest of the call site, and sending them to the
/// fallback splits one structure between heaps (health at `--coverage 0.99` sent 10% of its
/// objects, list nodes, to jemalloc, among the nodes of its two groups).
pub fn call_sites(g: &Groups) -> HashMap<(String, u64), CallSite> {
    let selector: std::collections::HashSet<u32> = g.groups.iter().flat_map(|k| k.selector.iter().flatten().copied()).collect();
    /// Per call site: the one answer of its contexts (None once two differ), the deepest
    /// selector site of its contexts + 1, their objects per answer and whether one churns.
    struct Seen {
        class: Option<Option<u32>>,
        deepest: u32,
        objects: HashMap<Option<u32>, u64>,
        churns: bool,
    }
    let mut out: HashMap<(String, u64), Seen> = HashMap::new();
    for c in &g.contexts {
        let Some(&s0) = c.sites.first() else { continue };
        // With whole call sites, what the kept contexts decide is the call site's answer: the
        // others allocating there follow it (a call site only they use stays unknown: fallback);
        // a churning context was left out on purpose and goes on falling back. A context
        // below the cut that is in a group (the cold group) counts like a kept one.
        if g.params.whole_call_sites && !c.kept && !c.churns && c.group.is_none() {
            continue;
        }
        let class = classify(g, &c.sites);
        let deepest = c.sites.iter().filter(|s| selector.contains(s)).map(|&s| g.sites[s as usize].max_depth + 1).max().unwrap_or(1);
        let e = out.entry(site_key(g, s0)).or_insert(Seen { class: Some(class), deepest: 1, objects: HashMap::new(), churns: false });
        if e.class != Some(class) {
            e.class = None;
        }
        e.deepest = e.deepest.max(deepest);
        *e.objects.entry(class).or_insert(0) += c.objects;
        e.churns |= c.churns;
    }
    out.into_iter()
        .map(|(k, Seen { class, deepest, objects, churns })| {
            let c = match class {
                Some(Some(k)) => CallSite { decides: k, depth: 1, otherwise: FALLBACK },
                Some(None) => CallSite { decides: FALLBACK, depth: 1, otherwise: FALLBACK },
                None => {
                    let none = objects.get(&None).copied().unwrap_or(0);
                    // The most objects, the earlier group on a tie; it must outnumber the ungrouped.
                    let most = objects.iter().filter_map(|(k, &n)| Some((n, std::cmp::Reverse((*k)?)))).max();
                    let otherwise = match most {
                        Some((n, std::cmp::Reverse(k))) if g.params.whole_call_sites && !churns && n > none => k,
                        _ => FALLBACK,
                    };
                    CallSite { decides: WALK, depth: deepest.min(g.walk_depth.max(1)), otherwise }
                }
            };
            (k, c)
        })
        .collect()
}

/// Where the run-time identification sends each profiled context's allocations, by context:
/// its call site's group when the site decides alone, the selectors' answer when it walks (the
/// call site's `otherwise` when none holds), `None` (the fallback) for a call site that sends
/// its allocations there, one the table does not know, or a file without groups.
pub fn destinations(g: &Groups) -> Vec<Option<u32>> {
    if g.groups.is_empty() {
        return vec![None; g.contexts.len()];
    }
    let calls = call_sites(g);
    g.contexts
        .iter()
        .map(|c| {
            let &s0 = c.sites.first()?;
            match calls.get(&site_key(g, s0)) {
                None => None,
                Some(cs) if cs.decides == FALLBACK => None,
                Some(cs) if cs.decides == WALK => classify(g, &c.sites).or((cs.otherwise != FALLBACK).then_some(cs.otherwise)),
                Some(cs) => Some(cs.decides),
            }
        })
        .collect()
}

/// The table's bytes for `g` (valid groups, `format::validate`). Selector sites are numbered
/// afresh, one per distinct (module basename, file offset). Errors say what exceeds the runtime.
pub fn to_bytes(g: &Groups) -> Result<Vec<u8>, String> {
    let mut index: HashMap<(String, u64), u32> = HashMap::new();
    let mut sites: Vec<(String, u64)> = Vec::new();
    let mut group_recs = Vec::new();
    let mut conj_recs = Vec::new();
    let mut terms: Vec<u32> = Vec::new();
    for grp in &g.groups {
        group_recs.push((conj_recs.len() as u32, grp.selector.len() as u32));
        for conj in &grp.selector {
            let first = terms.len() as u32;
            for &s in conj {
                let key = site_key(g, s);
                let next = sites.len() as u32;
                let k = *index.entry(key.clone()).or_insert_with(|| {
                    sites.push(key);
                    next
                });
                if !terms[first as usize..].contains(&k) {
                    terms.push(k);
                }
            }
            conj_recs.push((first, terms.len() as u32 - first));
        }
    }
    if g.groups.len() as u64 > MAX_GROUPS {
        return Err(format!("{} groups; the grouped allocator takes at most {MAX_GROUPS}", g.groups.len()));
    }
    if sites.len() as u64 > MAX_SITES {
        return Err(format!("{} selector sites; the grouped allocator tells at most {MAX_SITES} apart", sites.len()));
    }
    let selector_sites = sites.len() as u64;
    // With no groups nothing is identified: no call site has anything to decide.
    let calls = if g.groups.is_empty() { HashMap::new() } else { call_sites(g) };
    let mut only_calls: Vec<&(String, u64)> = calls.keys().filter(|k| !index.contains_key(*k)).collect();
    only_calls.sort();
    sites.extend(only_calls.into_iter().cloned());
    // Every program module, so that a walk knows its first program frame: one record for each
    // module holding no selector or call site (an offset of one of its sites finds its code).
    let mut modules: Vec<(String, u64)> = Vec::new();
    if !g.groups.is_empty() {
        let named: std::collections::HashSet<&str> = sites.iter().map(|(m, _)| m.as_str()).collect();
        let mut extra: HashMap<String, u64> = HashMap::new();
        for s in 0..g.sites.len() as u32 {
            let (m, off) = site_key(g, s);
            if !named.contains(m.as_str()) {
                extra.entry(m).or_insert(off);
            }
        }
        modules = extra.into_iter().collect();
        modules.sort();
    }
    let module_from = sites.len();
    sites.extend(modules);
    if sites.len() as u64 > MAX_TABLE_SITES {
        return Err(format!("{} call sites; the grouped allocator takes at most {MAX_TABLE_SITES}", sites.len()));
    }
    if u64::from(g.walk_depth) > MAX_WALK {
        return Err(format!("selectors need a walk of {} frames; the grouped allocator walks at most {MAX_WALK}", g.walk_depth));
    }
    let mut names = Vec::new();
    let mut site_bytes = Vec::new();
    for (i, key) in sites.iter().enumerate() {
        let (base, off) = key;
        let call = if i >= module_from { CallSite { decides: MODULE, depth: 0, otherwise: FALLBACK } } else { calls.get(key).copied().unwrap_or(CallSite { decides: WALK, depth: 0, otherwise: FALLBACK }) };
        site_bytes.extend_from_slice(&off.to_le_bytes());
        site_bytes.extend_from_slice(&(names.len() as u32).to_le_bytes());
        site_bytes.extend_from_slice(&(base.len() as u32).to_le_bytes());
        site_bytes.extend_from_slice(&call.decides.to_le_bytes());
        site_bytes.extend_from_slice(&call.depth.to_le_bytes());
        site_bytes.extend_from_slice(&call.otherwise.to_le_bytes());
        site_bytes.extend_from_slice(&0u32.to_le_bytes());
        names.extend_from_slice(base.as_bytes());
    }
    let total = HEADER + sites.len() as u64 * SITE_RECORD + (group_recs.len() + conj_recs.len()) as u64 * PAIR_RECORD + terms.len() as u64 * 4 + names.len() as u64;
    let mut b = Vec::with_capacity(total as usize);
    b.extend_from_slice(MAGIC);
    let p = &g.params;
    for v in [
        VERSION,
        u64::from(g.walk_depth),
        p.max_object_size,
        p.chunk_size,
        u64::from(p.spare_chunks),
        sites.len() as u64,
        group_recs.len() as u64,
        conj_recs.len() as u64,
        terms.len() as u64,
        names.len() as u64,
        total,
        selector_sites,
    ] {
        b.extend_from_slice(&v.to_le_bytes());
    }
    b.extend_from_slice(&site_bytes);
    for (first, n) in group_recs.iter().chain(&conj_recs) {
        b.extend_from_slice(&first.to_le_bytes());
        b.extend_from_slice(&n.to_le_bytes());
    }
    for t in &terms {
        b.extend_from_slice(&t.to_le_bytes());
    }
    b.extend_from_slice(&names);
    debug_assert_eq!(b.len() as u64, total);
    Ok(b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Group, GroupContext, Params, Site};

    fn u64_at(b: &[u8], i: usize) -> u64 {
        u64::from_le_bytes(b[i..i + 8].try_into().unwrap())
    }
    fn u32_at(b: &[u8], i: usize) -> u32 {
        u32::from_le_bytes(b[i..i + 4].try_into().unwrap())
    }

    fn site(module: &str, off: u64, depth: u32) -> Site {
        Site { module: module.into(), file_offset: off, function: String::new(), max_depth: depth }
    }

    fn ctx(sites: Vec<u32>, group: Option<u32>, kept: bool) -> GroupContext {
        GroupContext { sites, group, accesses: 1, objects: 1, bytes: 8, small_accesses: 1, small_bytes: 8, kept, churns: false, sizes: None }
    }

    fn group_of(members: Vec<u32>, selector: Vec<Vec<u32>>) -> Group {
        Group { members, weight: 1, accesses: 1, selector }
    }

    /// Groups of program `p` with default parameters and no edges.
    fn groups(sites: Vec<Site>, contexts: Vec<GroupContext>, groups: Vec<Group>, walk_depth: u32) -> Groups {
        Groups { params: Params { whole_call_sites: false, ..Params::default() }, command: vec!["p".into()], affinity_distance: 128, sites, contexts, edges: Vec::new(), groups, walk_depth, identification: Default::default() }
    }

    #[test]
    fn only_selector_sites_are_kept_once_each_in_group_order() {
        let member = |k| ctx(vec![0], Some(k), true);
        // Sites 1 and 3 are one call site named twice; site 0 is in no selector.
        let g = groups(
            vec![site("p", 0x10, 0), site("p", 0x20, 1), site("libx.so", 0x30, 2), site("p", 0x20, 3)],
            vec![member(0), member(1)],
            vec![group_of(vec![0], vec![vec![1, 2], vec![3]]), group_of(vec![1], vec![vec![2, 3, 1]])],
            4,
        );
        let b = to_bytes(&g).unwrap();
        assert_eq!(&b[..8], MAGIC);
        let h: Vec<u64> = (0..12).map(|i| u64_at(&b, 8 + 8 * i)).collect();
        // Two selector sites, then the contexts' call site (p+0x10), in no selector.
        assert_eq!(h, vec![VERSION, 4, 4096, 1 << 20, 1, 3, 2, 3, 5, 9, b.len() as u64, 2]);
        let sites = HEADER as usize;
        let rec = |i: usize| (u64_at(&b, sites + SITE_RECORD as usize * i), u32_at(&b, sites + SITE_RECORD as usize * i + 8), u32_at(&b, sites + SITE_RECORD as usize * i + 12), u32_at(&b, sites + SITE_RECORD as usize * i + 16), u32_at(&b, sites + SITE_RECORD as usize * i + 20));
        assert_eq!(rec(0), (0x20, 0, 1, WALK, 0), "a selector site that is no call site");
        assert_eq!(rec(1), (0x30, 1, 7, WALK, 0));
        assert_eq!(rec(2), (0x10, 8, 1, FALLBACK, 1), "no selector holds for the contexts allocating there");
        let pairs = sites + 3 * SITE_RECORD as usize;
        let pair = |i: usize| (u32_at(&b, pairs + 8 * i), u32_at(&b, pairs + 8 * i + 4));
        assert_eq!([pair(0), pair(1)], [(0, 2), (2, 1)], "groups: first conjunction, count");
        assert_eq!([pair(2), pair(3), pair(4)], [(0, 2), (2, 1), (3, 2)], "conjunctions: first term, count (a repeated site once)");
        let terms: Vec<u32> = (0..5).map(|i| u32_at(&b, pairs + 40 + 4 * i)).collect();
        assert_eq!(terms, vec![0, 1, 0, 1, 0]);
        assert_eq!(&b[b.len() - 9..], b"plibx.sop");
    }

    #[test]
    fn call_sites_decide_alone_only_when_their_contexts_agree() {
        // Call sites: 0 (two contexts, both selected into group 0 by site 3), 1 (one context in
        // group 0, one in none), 2 (below a library's frame). Selector sites
        // 3 (depth 2) and 4 (depth 5).
        let ctx = |sites, group| ctx(sites, group, true);
        let g = groups(
            vec![site("p", 0x10, 0), site("p", 0x20, 0), site("p", 0x30, 1), site("p", 0x40, 2), site("p", 0x50, 5)],
            vec![ctx(vec![0, 3], Some(0)), ctx(vec![0, 3, 4], Some(0)), ctx(vec![1, 3], Some(0)), ctx(vec![1], None), ctx(vec![2, 4], Some(1))],
            vec![group_of(vec![0, 1, 2], vec![vec![3]]), group_of(vec![4], vec![vec![4]])],
            6,
        );
        let c = call_sites(&g);
        let at = |off: u64| c[&("p".to_string(), off)];
        assert_eq!(at(0x10), CallSite { decides: 0, depth: 1, otherwise: FALLBACK });
        assert_eq!(at(0x20), CallSite { decides: WALK, depth: 3, otherwise: FALLBACK }, "group 0 or none: walk to site 3 (depth 2)");
        assert_eq!(at(0x30), CallSite { decides: 1, depth: 1, otherwise: FALLBACK }, "met first below a library's frames, it decides as well");
        assert_eq!(c.len(), 3);
    }

    #[test]
    fn whole_call_sites_let_uncovered_contexts_follow_the_covered_ones() {
        // Call site 0: a covered context in group 0 and an uncovered one no selector holds for;
        // call site 1: only an uncovered context. Selector site 2.
        let mut g = groups(
            vec![site("p", 0x10, 0), site("p", 0x20, 0), site("p", 0x30, 1)],
            vec![ctx(vec![0, 2], Some(0), true), ctx(vec![0], None, false), ctx(vec![1], None, false)],
            vec![group_of(vec![0], vec![vec![2]])],
            2,
        );
        let c = call_sites(&g);
        assert_eq!(c[&("p".to_string(), 0x10)], CallSite { decides: WALK, depth: 2, otherwise: FALLBACK }, "HALO's rule: the uncovered context walks and falls back");
        assert_eq!(c[&("p".to_string(), 0x20)], CallSite { decides: FALLBACK, depth: 1, otherwise: FALLBACK });
        g.params.whole_call_sites = true;
        let c = call_sites(&g);
        assert_eq!(c[&("p".to_string(), 0x10)], CallSite { decides: 0, depth: 1, otherwise: FALLBACK }, "the call site decides for both");
        assert!(!c.contains_key(&("p".to_string(), 0x20)), "a call site of uncovered contexts only stays unknown: fallback");
    }

    #[test]
    fn a_split_call_site_sends_what_no_selector_picks_to_its_largest_group() {
        // Call site 0: contexts in group 0 (3 objects), group 1 (2), kept in none (1), and one
        // uncovered; call site 1: group 0 (1 object), none (1); call site 2 as 0 but with a
        // churning context. Selector sites 3 (group 0) and 4 (group 1).
        let with = |sites, group, kept, objects, churns| GroupContext { objects, churns, ..ctx(sites, group, kept) };
        let mut g = groups(
            vec![site("p", 0x10, 0), site("p", 0x20, 0), site("p", 0x30, 0), site("p", 0x40, 1), site("p", 0x50, 1)],
            vec![
                with(vec![0, 3], Some(0), true, 3, false),
                with(vec![0, 4], Some(1), true, 2, false),
                with(vec![0], None, true, 1, false),
                with(vec![0], None, false, 9, false),
                with(vec![1, 3], Some(0), true, 1, false),
                with(vec![1], None, true, 1, false),
                with(vec![2, 3], Some(0), true, 3, false),
                with(vec![2], None, true, 1, true),
            ],
            vec![group_of(vec![0, 4, 6], vec![vec![3]]), group_of(vec![1], vec![vec![4]])],
            2,
        );
        let at = |c: &HashMap<(String, u64), CallSite>, off: u64| c[&("p".to_string(), off)];
        let c = call_sites(&g);
        assert_eq!(at(&c, 0x10).otherwise, FALLBACK, "HALO's rule: what no selector picks falls back");
        g.params.whole_call_sites = true;
        let c = call_sites(&g);
        assert_eq!(at(&c, 0x10), CallSite { decides: WALK, depth: 2, otherwise: 0 }, "group 0 holds the most objects; the uncovered context does not count");
        assert_eq!(at(&c, 0x20).otherwise, FALLBACK, "a tie with the ungrouped objects: they stay with the fallback");
        assert_eq!(at(&c, 0x30).otherwise, FALLBACK, "a churning context must keep falling back");
        g.contexts[1].objects = 3;
        assert_eq!(at(&call_sites(&g), 0x10).otherwise, 0, "a tie between groups: the earlier");
        g.contexts[1].objects = 4;
        assert_eq!(at(&call_sites(&g), 0x10).otherwise, 1);
        assert_eq!(destinations(&g)[..4], [Some(0), Some(1), Some(1), Some(1)], "A's selector holds; what none picks follows B's group");
        let b = to_bytes(&g).unwrap();
        let recs = u64_at(&b, 48) as usize;
        let found = (0..recs).map(|i| HEADER as usize + SITE_RECORD as usize * i).find(|&r| u64_at(&b, r) == 0x10).unwrap();
        assert_eq!((u32_at(&b, found + 16), u32_at(&b, found + 20), u32_at(&b, found + 24)), (WALK, 2, 1), "decides, depth, otherwise");
    }

    #[test]
    fn a_program_module_with_no_selector_or_call_site_gets_a_module_record() {
        // libcb.so's frame is always below a frame of p (a callback), and no selector names it:
        // without its record the runtime would not know that a walk meeting it first has met
        // the program.
        let g = groups(
            vec![site("p", 0x10, 1), site("libcb.so", 0x700, 2), site("p", 0x20, 3)],
            vec![ctx(vec![0, 1, 2], Some(0), true)],
            vec![group_of(vec![0], vec![vec![2]])],
            4,
        );
        let b = to_bytes(&g).unwrap();
        assert_eq!(u64_at(&b, 48), 3, "the selector site, the call site, the module record");
        let rec = |i: usize| (u64_at(&b, HEADER as usize + SITE_RECORD as usize * i), u32_at(&b, HEADER as usize + SITE_RECORD as usize * i + 16), u32_at(&b, HEADER as usize + SITE_RECORD as usize * i + 20));
        assert_eq!([rec(0), rec(1), rec(2)], [(0x20, WALK, 0), (0x10, 0, 1), (0x700, MODULE, 0)]);
    }

    #[test]
    fn with_no_groups_the_table_has_no_call_sites() {
        // Groups dropped (for their cost, or all below the threshold): every allocation falls
        // back unwalked, and the call sites' depths would exceed the walk depth of 0.
        let mut g = crate::group(&crate::tests::lists(), &Params::default()).unwrap();
        assert!(u64_at(&to_bytes(&g).unwrap(), 48) > 0, "the grouped lists have sites");
        g.groups.clear();
        g.walk_depth = 0;
        for c in &mut g.contexts {
            c.group = None;
        }
        assert_eq!(u64_at(&to_bytes(&g).unwrap(), 48), 0);
    }

    #[test]
    fn what_the_runtime_cannot_apply_is_refused() {
        let mut g = groups((0..=MAX_SITES).map(|i| site("p", i, 0)).collect(), Vec::new(), vec![group_of(Vec::new(), (0..=MAX_SITES as u32).map(|i| vec![i]).collect())], 1);
        assert!(to_bytes(&g).unwrap_err().contains("selector sites"));
        g.groups[0].selector.truncate(1);
        g.walk_depth = MAX_WALK as u32 + 1;
        assert!(to_bytes(&g).unwrap_err().contains("walk"));
    }
}
