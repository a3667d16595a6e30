//! What identifying the groups at run time would cost, estimated from the profile: the stack
//! frames the grouped allocator's walks visit for the profile's own small allocations, per
//! object the groups serve. Each allocation walks to its innermost program frame (allocations
//! made inside a library go through the library's frames first), and deeper where its call site
//! does not decide alone (`table::call_sites`); an allocation with no program frame walks the
//! whole depth. With no groups nothing walks. Grouping pays off through fewer cache misses, at
//! most a few per object; a walk costs a few nanoseconds per frame, so groups that need hundreds
//! of frames per object they serve cost more than they can give back.

use crate::table::{call_sites, site_key, WALK};
use crate::Groups;
use heaplab_access::AccessProfile;

/// Frames walked per grouped object: the estimate for the profile's own run (0 when nothing is
/// grouped).
pub fn walk_per_grouped_object(profile: &AccessProfile, g: &Groups) -> f64 {
    if g.groups.is_empty() {
        return 0.0;
    }
    let calls = call_sites(g);
    // Site depths are the deepest position profiling saw: an estimate from above.
    let frames_of: Vec<u64> = g
        .contexts
        .iter()
        .map(|c| {
            let Some(&s0) = c.sites.first() else { return u64::from(g.walk_depth) };
            let site = &g.sites[s0 as usize];
            let first = u64::from(site.max_depth) + 1;
            match calls.get(&site_key(g, s0)) {
                Some(cs) if cs.decides == WALK => u64::from(cs.depth).max(first),
                _ => first,
            }
        })
        .collect();
    let (mut frames, mut grouped) = (0u64, 0u64);
    for b in profile.blocks.iter().filter(|b| b.size <= g.params.max_object_size) {
        match g.contexts.get(b.full_context as usize) {
            Some(c) => {
                frames += frames_of[b.full_context as usize];
                grouped += u64::from(c.group.is_some());
            }
            None => frames += u64::from(g.walk_depth),
        }
    }
    if grouped == 0 {
        return 0.0;
    }
    frames as f64 / grouped as f64
}
