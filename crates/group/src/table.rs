//! The runtime table: the flat file `heaplab run --groups` writes into the run's scratch
//! directory for the grouped allocator (`runtime/group.c`), so that the C side reads fixed-size
//! records and never parses the `.hlgroups` format. It holds only what identification and
//! allocation need: the selector sites (module basename, file offset), each group's selector as
//! DNF over those sites, the walk depth and the allocator's parameters.
//!
//! Layout (little-endian): a header of [`HEADER`] bytes ([`MAGIC`], then u64s: version,
//! walk_depth, max_object_size, chunk_size, spare_chunks, sites, groups, conjunctions, terms,
//! names_len, total_len); sites ([`SITE_RECORD`] bytes each: file offset u64, name offset u32,
//! name length u32); groups and conjunctions ([`PAIR_RECORD`] bytes each: first u32, count u32,
//! into the conjunctions and the terms); terms (u32 site indices); the basenames. `build.rs`
//! hands these numbers to the C as `heaplab_group_table.h`.

use crate::Groups;
use std::collections::HashMap;

/// The table's first 8 bytes.
pub const MAGIC: &[u8; 8] = b"HLGRTAB1";
/// The version written and read.
pub const VERSION: u64 = 1;
/// Bytes of the header.
pub const HEADER: u64 = 96;
/// Bytes per site record.
pub const SITE_RECORD: u64 = 16;
/// Bytes per group or conjunction record.
pub const PAIR_RECORD: u64 = 8;
/// The most selector sites the runtime tells apart (bits of its per-walk site set).
pub const MAX_SITES: u64 = 4096;
/// The most frames the runtime walks.
pub const MAX_WALK: u64 = 128;

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
                let site = &g.sites[s as usize];
                let base = site.module.rsplit('/').next().unwrap_or_default().to_string();
                let key = (base, site.file_offset);
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
    if sites.len() as u64 > MAX_SITES {
        return Err(format!("{} selector sites; the grouped allocator tells at most {MAX_SITES} apart", sites.len()));
    }
    if u64::from(g.walk_depth) > MAX_WALK {
        return Err(format!("selectors need a walk of {} frames; the grouped allocator walks at most {MAX_WALK}", g.walk_depth));
    }
    let mut names = Vec::new();
    let mut site_bytes = Vec::new();
    for (base, off) in &sites {
        site_bytes.extend_from_slice(&off.to_le_bytes());
        site_bytes.extend_from_slice(&(names.len() as u32).to_le_bytes());
        site_bytes.extend_from_slice(&(base.len() as u32).to_le_bytes());
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

    #[test]
    fn only_selector_sites_are_kept_once_each_in_group_order() {
        let member = |k| GroupContext { sites: vec![0], group: Some(k), accesses: 1, objects: 1, bytes: 8, kept: true };
        let g = Groups {
            params: Params::default(),
            command: vec!["p".into()],
            affinity_distance: 128,
            // Sites 1 and 3 are one call site named twice; site 0 is in no selector.
            sites: vec![site("p", 0x10, 0), site("p", 0x20, 1), site("libx.so", 0x30, 2), site("p", 0x20, 3)],
            contexts: vec![member(0), member(1)],
            edges: Vec::new(),
            groups: vec![
                Group { members: vec![0], weight: 1, accesses: 1, selector: vec![vec![1, 2], vec![3]] },
                Group { members: vec![1], weight: 1, accesses: 1, selector: vec![vec![2, 3, 1]] },
            ],
            walk_depth: 4,
        };
        let b = to_bytes(&g).unwrap();
        assert_eq!(&b[..8], MAGIC);
        let h: Vec<u64> = (0..11).map(|i| u64_at(&b, 8 + 8 * i)).collect();
        assert_eq!(h, vec![VERSION, 4, 4096, 1 << 20, 1, 2, 2, 3, 5, 8, b.len() as u64]);
        let sites = HEADER as usize;
        assert_eq!((u64_at(&b, sites), u32_at(&b, sites + 8), u32_at(&b, sites + 12)), (0x20, 0, 1));
        assert_eq!((u64_at(&b, sites + 16), u32_at(&b, sites + 24), u32_at(&b, sites + 28)), (0x30, 1, 7));
        let pairs = sites + 32;
        let pair = |i: usize| (u32_at(&b, pairs + 8 * i), u32_at(&b, pairs + 8 * i + 4));
        assert_eq!([pair(0), pair(1)], [(0, 2), (2, 1)], "groups: first conjunction, count");
        assert_eq!([pair(2), pair(3), pair(4)], [(0, 2), (2, 1), (3, 2)], "conjunctions: first term, count (a repeated site once)");
        let terms: Vec<u32> = (0..5).map(|i| u32_at(&b, pairs + 40 + 4 * i)).collect();
        assert_eq!(terms, vec![0, 1, 0, 1, 0]);
        assert_eq!(&b[b.len() - 8..], b"plibx.so");
    }

    #[test]
    fn what_the_runtime_cannot_apply_is_refused() {
        let mut g = Groups {
            params: Params::default(),
            command: Vec::new(),
            affinity_distance: 128,
            sites: (0..=MAX_SITES).map(|i| site("p", i, 0)).collect(),
            contexts: Vec::new(),
            edges: Vec::new(),
            groups: vec![Group { members: Vec::new(), weight: 1, accesses: 1, selector: (0..=MAX_SITES as u32).map(|i| vec![i]).collect() }],
            walk_depth: 1,
        };
        assert!(to_bytes(&g).unwrap_err().contains("selector sites"));
        g.groups[0].selector.truncate(1);
        g.walk_depth = MAX_WALK as u32 + 1;
        assert!(to_bytes(&g).unwrap_err().contains("walk"));
    }
}
