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
