use super::*;
use crate::{format, Group, GroupContext, ObjectSizes, Params, Site};

/// Groups of hand-made contexts: (call sites innermost first, group, smallest and largest
/// request, objects freed, kept); each site its own function in "prog".
fn groups(contexts: &[(&[u32], Option<u32>, u64, u64, u64, bool)]) -> Groups {
    let nsites = contexts.iter().flat_map(|c| c.0.iter()).max().map_or(0, |&s| s + 1);
    let sites = (0..nsites).map(|s| Site { module: "prog".into(), file_offset: 0x1000 + 16 * u64::from(s), function: format!("f{s}"), max_depth: 0 }).collect();
    let ngroups = contexts.iter().filter_map(|c| c.1).max().map_or(0, |k| k + 1);
    let mut g = Groups {
        params: Params::default(),
        command: vec!["prog".into()],
        affinity_distance: 128,
        sites,
        contexts: contexts
            .iter()
            .map(|&(s, group, min, max, freed, kept)| GroupContext { sites: s.to_vec(), group, accesses: 10, objects: 4, bytes: 4 * max, small_accesses: 10, small_bytes: 4 * max, kept, churns: false, sizes: Some(ObjectSizes { min, max, freed }) })
            .collect(),
        edges: Vec::new(),
        groups: (0..ngroups).map(|k| Group { members: contexts.iter().enumerate().filter(|c| c.1 .1 == Some(k)).map(|c| c.0 as u32).collect(), weight: 1, accesses: 10, selector: Vec::new() }).collect(),
        walk_depth: 0,
        identification: Default::default(),
    };
    crate::select::identify(&mut g);
    format::validate(&g).unwrap();
    g
}

#[test]
fn jemalloc_classes_follow_its_table() {
    let c = |s| SizeClasses::Jemalloc.class(s);
    for (size, class, below) in [(0, 8, 0), (1, 8, 0), (8, 8, 0), (9, 16, 8), (17, 32, 16), (33, 48, 32), (48, 48, 32), (128, 128, 112), (129, 160, 128), (160, 160, 128), (161, 192, 160), (256, 256, 224), (257, 320, 256), (4096, 4096, 3584), (4097, 5120, 4096)] {
        assert_eq!(c(size), (class, below), "size {size}");
    }
    assert_eq!(SizeClasses::of("jemalloc"), Some(SizeClasses::Jemalloc));
    assert_eq!(SizeClasses::of("glibc"), None);
    assert_eq!(SizeClasses::of("/usr/lib/libjemalloc.so.2"), None);
}

#[test]
fn a_group_alone_in_its_class_is_declined() {
    // Group 0: 48-byte nodes; an ungrouped context of 24-byte objects (jemalloc's 32 class).
    let g = groups(&[(&[0], Some(0), 41, 48, 0, true), (&[1], None, 24, 24, 0, true)]);
    assert_eq!(declined(&g, SizeClasses::Jemalloc), vec![Declined { group: 0, class: 48 }]);
}

#[test]
fn a_group_the_fallback_lays_out_otherwise_is_kept() {
    let je = |g: &Groups| declined(g, SizeClasses::Jemalloc);
    // Another context's objects share the class: jemalloc interleaves them, the group does not.
    assert!(je(&groups(&[(&[0], Some(0), 48, 48, 0, true), (&[1], None, 40, 40, 0, true)])).is_empty());
    // 24-byte objects take 24 bytes in a group, 32 in jemalloc.
    assert!(je(&groups(&[(&[0], Some(0), 24, 24, 0, true)])).is_empty());
    // Two classes in one group: the group mixes what jemalloc keeps apart.
    assert!(je(&groups(&[(&[0], Some(0), 48, 64, 0, true)])).is_empty());
    // Freed objects: jemalloc reuses their slots, bump allocation does not.
    assert!(je(&groups(&[(&[0], Some(0), 48, 48, 1, true)])).is_empty());
    // An object above the group's size limit goes to the fallback whatever its class.
    let mut big = groups(&[(&[0], Some(0), 4096, 4096, 0, true)]);
    assert_eq!(je(&big), vec![Declined { group: 0, class: 4096 }]);
    big.params.max_object_size = 2048;
    assert!(je(&big).is_empty());
    // Beyond jemalloc's small classes each object gets a page-aligned extent of its own.
    let mut large = groups(&[(&[0], Some(0), 16384, 16384, 0, true)]);
    large.params.max_object_size = 1 << 16;
    assert!(je(&large).is_empty());
    large.contexts[0].sizes = Some(ObjectSizes { min: 14336, max: 14336, freed: 0 });
    assert_eq!(je(&large), vec![Declined { group: 0, class: 14336 }]);
    // Sizes unknown anywhere (an older file): nothing can be ruled out.
    let mut old = groups(&[(&[0], Some(0), 48, 48, 0, true), (&[1], None, 24, 24, 0, true)]);
    old.contexts[1].sizes = None;
    assert!(je(&old).is_empty());
}

#[test]
fn contexts_that_follow_a_call_site_count_as_the_group() {
    // Context 1 was not kept but allocates at context 0's call site: with whole call sites it
    // is served by group 0 at run time, and its 24-byte objects make the group two classes.
    let mut g = groups(&[(&[0, 1], Some(0), 48, 48, 0, true), (&[0, 2], None, 24, 24, 0, false)]);
    assert!(g.params.whole_call_sites);
    assert_eq!(destinations(&g)[1], Some(0));
    assert!(declined(&g, SizeClasses::Jemalloc).is_empty());
    // Without whole call sites it falls back (its sites select no group), and is another
    // context in the 32 class, which does not touch the group's.
    g.params.whole_call_sites = false;
    assert_eq!(destinations(&g)[1], None);
    assert_eq!(declined(&g, SizeClasses::Jemalloc), vec![Declined { group: 0, class: 48 }]);
}

#[test]
fn each_group_is_judged_on_its_own() {
    // Group 0 is alone in the 48 class; group 1 mixes 24- and 56-byte objects.
    let g = groups(&[(&[0, 2], Some(0), 48, 48, 0, true), (&[1, 2], Some(1), 24, 24, 0, true), (&[3], Some(1), 56, 56, 0, true)]);
    assert_eq!(declined(&g, SizeClasses::Jemalloc), vec![Declined { group: 0, class: 48 }]);
}
