//! Grouping whole profiles: the graph's rules (coverage, large objects, the unattributable
//! context) and the pipeline on the access pattern of tests/programs/lists.c.

use super::*;
use heaplab_access::{AccessBlock, AccessProfile, Edge, Frame, FullContext};

/// A profile whose full context i has the frames `chains[i]` (function names, innermost
/// first; a name's offset is fixed by the name; `f@x` is another call site in function f)
/// and whose blocks are `(context, size,
/// accesses)`; `affinity` are the context edges.
pub(crate) fn profile(chains: &[&[&str]], blocks: &[(u32, u64, u64)], affinity: &[(u64, u64, u64)]) -> AccessProfile {
    let offset = |f: &str| 0x1000 + f.bytes().fold(0u64, |h, b| h * 31 + u64::from(b)) % 0x10000;
    let full_contexts = chains
        .iter()
        .map(|c| FullContext {
            key: c.iter().fold(7u64, |h, f| h.wrapping_mul(1_000_003) ^ offset(f)),
            frames: c.iter().map(|f| Frame { ip: 0x400000 + offset(f), module: "/usr/bin/prog".into(), file_offset: offset(f), function: f.split('@').next().unwrap().into() }).collect(),
            depths: (0..c.len() as u32).map(|d| d + 1).collect(),
        })
        .collect();
    let blocks = blocks
        .iter()
        .enumerate()
        .map(|(i, &(c, size, acc))| AccessBlock { size, context: 0, alloc_at: i as u64, free_at: u64::MAX, reads: acc - acc / 4, writes: acc / 4, full_context: c })
        .collect();
    let mut p = AccessProfile { blocks, full_contexts, context_affinity: affinity.iter().map(|&(from, to, weight)| Edge { from, to, weight }).collect(), ..AccessProfile::default() };
    p.info.affinity_distance = 128;
    p.info.max_grouped_size = 4096;
    p.info.command = vec!["./prog".into()];
    p
}

/// lists.c: list A and list B built by their own functions through one wrapper and walked
/// together, list C walked apart, a big table, and an allocation made by a library on its
/// own (no program frame).
pub(crate) fn lists() -> AccessProfile {
    let chains: [&[&str]; 5] = [
        &["xmalloc", "build_a", "main"],
        &["xmalloc", "build_b", "main"],
        &["xmalloc", "build_c", "main"],
        &["xmalloc", "make_table", "main"],
        &[],
    ];
    let mut blocks = Vec::new();
    for k in 0..100 {
        blocks.push((0, 16, 40));
        blocks.push((1, 16, 38));
        blocks.push((2, 16, 30 + k % 2));
    }
    blocks.push((3, 1 << 20, 100_000));
    blocks.push((4, 64, 50));
    profile(&chains, &blocks, &[(0, 0, 3000), (0, 1, 7000), (1, 1, 2900), (1, 2, 20), (2, 2, 5000), (0, 3, 900)])
}

#[test]
fn the_lists_program_groups_a_with_b_and_c_apart() {
    let g = group(&lists(), &Params::default()).unwrap();
    // Contexts 0 and 1 together, 2 in a group of its own, the table (1 MiB objects) and the
    // frameless context are no node.
    assert_eq!(g.groups.len(), 2);
    assert_eq!(g.groups[0].members, vec![0, 1]);
    assert_eq!(g.groups[1].members, vec![2]);
    assert_eq!(g.groups[0].weight, 3000 + 7000 + 2900);
    assert_eq!(g.groups[0].accesses, 4000 + 3800);
    assert_eq!([0, 1, 2, 3, 4].map(|c| g.contexts[c].kept), [true, true, true, false, false]);
    assert_eq!([0, 1, 2, 3, 4].map(|c| g.contexts[c].group), [Some(0), Some(0), Some(1), None, None]);
    // All of them go through xmalloc (depth 1): the builders (depth 2) select.
    let name = |s: u32| g.sites[s as usize].function.as_str();
    let sel: Vec<Vec<Vec<&str>>> = g.groups.iter().map(|x| x.selector.iter().map(|c| c.iter().map(|&s| name(s)).collect()).collect()).collect();
    assert_eq!(sel, vec![vec![vec!["build_a"], vec!["build_b"]], vec![vec!["build_c"]]]);
    assert_eq!(g.walk_depth, 3);
    assert!(select::misclassified(&g).is_empty());
    assert_eq!(g.sites.iter().map(|s| s.module.as_str()).collect::<Vec<_>>(), ["prog"; 6]);
    assert_eq!(g.edges.len(), 6);
    assert_eq!(g.context_names(), ["xmalloc < build_a", "xmalloc < build_b", "xmalloc < build_c", "xmalloc < make_table", "(no program frame)"]);
    // Deterministic.
    assert_eq!(group(&lists(), &Params::default()).unwrap(), g);
}

#[test]
fn contexts_are_kept_hottest_first_until_the_coverage() {
    // Accesses 50, 30, 15, 5 (all small): 90% = 90 is reached with the third.
    let p = profile(&[&["a"], &["b"], &["c"], &["d"]], &[(0, 8, 50), (1, 8, 30), (2, 8, 15), (3, 8, 5)], &[]);
    let b = graph::build(&p, &Params::default()).unwrap();
    assert_eq!(b.graph.nodes.iter().map(|n| n.contexts.clone()).collect::<Vec<_>>(), vec![vec![0], vec![1], vec![2]]);
    assert_eq!(b.graph.accesses, 95);
    assert_eq!(b.groupable_accesses, 100);
    let b = graph::build(&p, &Params { coverage: 0.5, ..Params::default() }).unwrap();
    assert_eq!(b.graph.nodes.len(), 1);
    // Objects above the maximum count for nothing: context 0's big object leaves it at 10.
    let p = profile(&[&["a"], &["b"]], &[(0, 8, 10), (0, 5000, 1000), (1, 8, 30)], &[]);
    let b = graph::build(&p, &Params::default()).unwrap();
    assert_eq!(b.graph.nodes, vec![graph::Node { contexts: vec![1], accesses: 30 }, graph::Node { contexts: vec![0], accesses: 10 }]);
    assert_eq!(b.contexts[0].accesses, 1010);
}

#[test]
fn bad_profiles_and_parameters_are_refused() {
    let mut none = lists();
    none.full_contexts.clear();
    assert_eq!(group(&none, &Params::default()), Err(GroupError::NoContexts));
    assert!(GroupError::NoContexts.to_string().contains("heaplab access --contexts"));
    assert!(check_affinity_distance(&lists(), 128).is_ok());
    let e = check_affinity_distance(&lists(), 64).unwrap_err().to_string();
    assert!(e.contains("64") && e.contains("128"), "{e}");
    let e = group(&lists(), &Params { max_object_size: 8192, chunk_size: 1 << 20, ..Params::default() }).unwrap_err();
    assert!(e.to_string().contains("4096"), "{e}");
    for bad in [
        Params { coverage: 0.0, ..Params::default() },
        Params { merge_tolerance: 1.5, ..Params::default() },
        Params { group_threshold: f64::NAN, ..Params::default() },
        Params { chunk_size: 3 << 20, ..Params::default() },
        Params { max_object_size: 1 << 20, ..Params::default() },
        Params { max_turnover: 0.5, ..Params::default() },
        Params { max_turnover: f64::INFINITY, ..Params::default() },
        Params { max_walk_per_object: -1.0, ..Params::default() },
    ] {
        assert!(matches!(group(&lists(), &bad), Err(GroupError::Params(_))), "{bad:?}");
    }
    let mut broken = lists();
    broken.context_affinity.push(Edge { from: 0, to: 99, weight: 1 });
    assert!(matches!(group(&broken, &Params::default()), Err(GroupError::Profile(_))));
    let mut broken = lists();
    broken.blocks[0].full_context = 77;
    assert!(matches!(group(&broken, &Params::default()), Err(GroupError::Profile(_))));
}

/// A tree built by a recursive function through two call sites (`build@l`, `build@r`), each
/// node allocated at `build`, its payload by `fill` (called from `build@f`); the
/// profile's contexts are HALO's reduction: each return address once, innermost first.
fn recursive_tree() -> AccessProfile {
    let chains: [&[&str]; 8] = [
        &["build", "main"],
        &["build", "build@l", "main"],
        &["build", "build@r", "main"],
        &["build", "build@l", "build@r", "main"],
        &["build", "build@r", "build@l", "main"],
        &["fill", "build@f", "build@l", "main"],
        &["fill", "build@f", "build@r", "build@l", "main"],
        &["other", "main"],
    ];
    let mut blocks = Vec::new();
    for k in 0..40u32 {
        blocks.push((k % 5, 32, 20));
        blocks.push((5 + k % 2, 32, 10));
        blocks.push((7, 32, 5));
    }
    // Tree nodes used with each other, payloads with each other and a little with the nodes,
    // the other objects alone.
    let mut affinity = Vec::new();
    for a in 0..5u64 {
        for b in a..5 {
            affinity.push((a, b, 60));
        }
        affinity.push((a, 5, 30));
        affinity.push((a, 6, 30));
    }
    affinity.extend([(5, 5, 40), (5, 6, 40), (6, 6, 40), (7, 7, 200)]);
    profile(&chains, &blocks, &affinity)
}

#[test]
fn recursion_by_function_makes_one_node_of_a_recursion_s_paths() {
    let p = recursive_tree();
    let g = group(&p, &Params::default()).unwrap();
    assert_eq!(g.params.recursion, Recursion::Function);
    let b = graph::build(&p, &Params::default()).unwrap();
    let mut nodes: Vec<Vec<u32>> = b.graph.nodes.iter().map(|n| n.contexts.clone()).collect();
    nodes.sort();
    assert_eq!(nodes, vec![vec![0, 1, 2, 3, 4], vec![5, 6], vec![7]], "the tree's nodes, its payloads, the others");
    let tree = g.contexts[0].group.expect("the tree is grouped");
    assert!((0..5).all(|c| g.contexts[c].group == Some(tree)), "every path to a node in one group: {:?}", g.contexts);
    assert!(g.contexts[5].group.is_some() && g.contexts[5].group == g.contexts[6].group, "{:?}", g.contexts);
    assert_ne!(g.contexts[7].group, Some(tree));
    assert!(select::misclassified(&g).is_empty());
    // The allocation call sites tell the groups apart: no walk beyond the innermost frame (at
    // stack position 1 in these profiles).
    let name = |s: u32| g.sites[s as usize].function.as_str();
    for x in &g.groups {
        assert!(x.selector.iter().all(|c| c.len() == 1 && ["build", "fill", "other"].contains(&name(c[0]))), "{:?}", x.selector);
    }
    assert_eq!(g.walk_depth, 2);
}

#[test]
fn recursion_by_call_site_keeps_halo_s_nodes() {
    let params = Params { recursion: Recursion::CallSite, ..Params::default() };
    let b = graph::build(&recursive_tree(), &params).unwrap();
    assert_eq!(b.graph.nodes.len(), 8, "one node per profile context");
    assert!(b.graph.nodes.iter().all(|n| n.contexts.len() == 1));
    // A frame without a symbol is a function of its own: nothing collapses.
    let mut p = recursive_tree();
    for c in &mut p.full_contexts {
        for f in &mut c.frames {
            f.function.clear();
        }
    }
    assert_eq!(graph::build(&p, &Params::default()).unwrap().graph.nodes.len(), 8);
}

#[test]
fn turnover_is_bytes_allocated_over_peak_live() {
    use graph::{turnover, Life};
    let life = |size, alloc_at, free_at| Life { size, alloc_at, free_at };
    assert_eq!(turnover(&[]), 1.0);
    assert_eq!(turnover(&[life(0, 0, 1)]), 1.0);
    // A structure that lives: 1. Built, dropped and built again: 2.
    assert_eq!(turnover(&[life(8, 0, u64::MAX), life(8, 1, u64::MAX)]), 1.0);
    assert_eq!(turnover(&[life(8, 0, 2), life(8, 1, 3), life(8, 4, 6), life(8, 5, 7)]), 2.0);
    // One object at a time, each freed before the next: as many times over as there are objects.
    let churn: Vec<Life> = (0..10).map(|k| life(16, 2 * k, 2 * k + 1)).collect();
    assert_eq!(turnover(&churn), 10.0);
}

/// lists() with list C's objects each freed before the next is allocated.
fn lists_with_churning_c() -> AccessProfile {
    let mut p = lists();
    for b in p.blocks.iter_mut() {
        b.alloc_at *= 2;
        if b.full_context == 2 {
            b.free_at = b.alloc_at + 1;
        }
    }
    p
}

#[test]
fn churning_contexts_are_left_out_unless_the_limit_is_off() {
    let g = group(&lists_with_churning_c(), &Params::default()).unwrap();
    assert_eq!([0, 1, 2].map(|c| g.contexts[c].churns), [false, false, true]);
    assert_eq!([0, 1, 2].map(|c| g.contexts[c].kept), [true, true, false]);
    assert_eq!([0, 1, 2].map(|c| g.contexts[c].group), [Some(0), Some(0), None]);
    assert_eq!(g.groups.len(), 1);
    assert!(select::misclassified(&g).is_empty());
    assert!(format::validate(&g).is_ok());
    // 100 objects of 16 bytes, one live at a time: 100 times over; a limit above it keeps C.
    for max_turnover in [0.0, 100.0] {
        let g = group(&lists_with_churning_c(), &Params { max_turnover, ..Params::default() }).unwrap();
        assert!(g.contexts.iter().all(|c| !c.churns));
        assert_eq!(g.contexts[2].group, Some(1), "{max_turnover}");
    }
}

#[test]
fn groups_that_cost_more_walking_than_they_serve_are_dropped() {
    // lists(): every context allocates through xmalloc (stack position 1, so not a call site
    // that decides alone), and the frameless one finds no program frame: each of the 301 small
    // allocations walks the whole depth (3 frames), and 300 of them (lists A, B, C) are grouped.
    let g = group(&lists(), &Params::default()).unwrap();
    let per = g.identification.walk_per_object;
    assert!((per - 3.0 * 301.0 / 300.0).abs() < 1e-9, "{per}");
    assert!(!g.identification.dropped);
    let cheap = Params { max_walk_per_object: 3.0, ..Params::default() };
    let g = group(&lists(), &cheap).unwrap();
    assert!(g.identification.dropped);
    assert!(g.groups.is_empty() && g.walk_depth == 0);
    assert!(g.contexts.iter().all(|c| c.group.is_none()));
    assert_eq!(g.identification.walk_per_object, per, "the estimate of the groups that were found");
    assert!(format::validate(&g).is_ok());
    // Off: kept whatever they cost.
    assert!(!group(&lists(), &Params { max_walk_per_object: 0.0, ..cheap }).unwrap().identification.dropped);
}

#[test]
fn groups_the_program_hardly_touches_are_dropped() {
    // lists(): of about 110,900 accesses, A and B's objects take 7,800 (7%), C's 3,050 (2.7%),
    // the table's 100,000. At a threshold of 5% C's group falls short of all accesses (not of
    // the graph's: 5% of its 10,850 is 543, below C's weight of 5,000) and is dropped.
    let g = group(&lists(), &Params { group_threshold: 0.05, ..Params::default() }).unwrap();
    assert_eq!(g.groups.len(), 1);
    assert_eq!(g.groups[0].members, vec![0, 1]);
    assert_eq!([0, 1, 2].map(|c| g.contexts[c].group), [Some(0), Some(0), None]);
    assert!(format::validate(&g).is_ok());
    // The table alone taking nearly every access: no group is worth serving.
    let mut p = lists();
    p.blocks.iter_mut().filter(|b| b.full_context == 3).for_each(|b| (b.reads, b.writes) = (100_000_000, 0));
    let g = group(&p, &Params::default()).unwrap();
    assert!(g.groups.is_empty() && g.contexts.iter().all(|c| c.group.is_none()));
    assert!(format::validate(&g).is_ok());
}

/// lists.c's A and B walked together, and D, rare, built through the same wrapper; S, as rare,
/// allocated at a call site of its own.
fn lists_with_rare_d() -> AccessProfile {
    let chains: [&[&str]; 4] = [&["xmalloc", "build_a", "main"], &["xmalloc", "build_b", "main"], &["xmalloc", "build_d", "main"], &["solo", "main"]];
    let mut blocks = Vec::new();
    for k in 0..100 {
        blocks.push((0, 16, 40));
        blocks.push((1, 16, 38));
        if k % 10 == 0 {
            blocks.push((2, 16, 5));
            blocks.push((3, 16, 5));
        }
    }
    profile(&chains, &blocks, &[(0, 0, 3000), (0, 1, 7000), (1, 1, 2900), (2, 2, 10), (3, 3, 10)])
}

/// lists.c's A and B walked together, and D built through the same wrapper: `d_blocks` nodes of
/// `d_reads` accesses each, below the coverage cut either way.
fn lists_with_d(d_blocks: usize, d_reads: u64) -> AccessProfile {
    let chains: [&[&str]; 3] = [&["xmalloc", "build_a", "main"], &["xmalloc", "build_b", "main"], &["xmalloc", "build_d", "main"]];
    let mut blocks = Vec::new();
    for k in 0..100 {
        blocks.push((0, 16, 40));
        blocks.push((1, 16, 38));
        if k < d_blocks {
            blocks.push((2, 16, d_reads));
        }
    }
    profile(&chains, &blocks, &[(0, 0, 3000), (0, 1, 7000), (1, 1, 2900), (2, 2, 10)])
}

#[test]
fn by_default_a_cold_group_takes_only_contexts_that_would_dilute_their_group() {
    // 100 nodes of D, a tenth as hot as A's and B's: a third of the group's bytes, 5% of its
    // accesses (28 points).
    let cold = lists_with_d(100, 4);
    let g = group(&cold, &Params::default()).unwrap();
    assert_eq!(g.params.cold_group, ColdGroup::Diluting);
    assert_eq!((g.groups.len(), g.contexts[2].kept, g.contexts[2].group), (2, false, Some(1)));
    assert!(g.is_cold(1));
    assert_eq!(table::destinations(&g), vec![Some(0), Some(0), Some(1)]);
    let would = without_cold_group(&g).unwrap();
    assert_eq!((would[0].contexts, would[0].objects, would[0].accesses, would[0].bytes), (1, 100, 400, 1600));
    assert_eq!((would[0].group_accesses, would[0].group_bytes), (7800, 3200));
    assert!((would[0].dilution() - (1600.0 / 4800.0 - 400.0 / 8200.0)).abs() < 1e-12);
    assert!(select::misclassified(&g).is_empty());
    // Never: whole call sites take D in; All: as the default here.
    let never = group(&cold, &Params { cold_group: ColdGroup::Never, ..Params::default() }).unwrap();
    assert_eq!((never.groups.len(), table::destinations(&never)), (1, vec![Some(0), Some(0), Some(0)]));
    assert!(without_cold_group(&never).is_none());
    let all = group(&cold, &Params { cold_group: ColdGroup::All, ..Params::default() }).unwrap();
    assert_eq!(all.groups[1].members, g.groups[1].members);
    // 10 nodes of D as hot per byte as A's and B's: taken in, no walk at xmalloc's call site.
    let hot = lists_with_d(10, 39);
    let g = group(&hot, &Params::default()).unwrap();
    assert_eq!((g.groups.len(), g.contexts[2].kept, g.contexts[2].group), (1, false, None));
    assert_eq!(table::destinations(&g), vec![Some(0), Some(0), Some(0)]);
    let runs_in = table::destinations(&g);
    let t = taken_in(&g, &[2], &runs_in)[0];
    assert!(t.dilution().abs() < 0.01, "{t:?}");
    // The same ten nodes ten times colder dilute by 4 points: still taken in.
    let few = group(&lists_with_d(10, 4), &Params::default()).unwrap();
    assert_eq!((few.groups.len(), table::destinations(&few)[2]), (1, Some(0)));
    let t = taken_in(&few, &[2], &table::destinations(&few))[0];
    assert!(t.contexts == 1 && t.dilution() > 0.03 && t.dilution() < COLD_DILUTION, "{t:?}");
}

#[test]
fn dilution_counts_only_objects_small_enough_to_group() {
    // D's ten nodes are as hot per byte as A's and B's; its twenty 8 KiB buffers, hardly used,
    // go to the fallback whatever happens, so they dilute nothing.
    let mut p = lists_with_d(10, 39);
    for _ in 0..20 {
        p.blocks.push(AccessBlock { size: 8192, context: 0, alloc_at: p.blocks.len() as u64, free_at: u64::MAX, reads: 1, writes: 0, full_context: 2 });
    }
    let g = group(&p, &Params::default()).unwrap();
    assert_eq!((g.contexts[2].bytes, g.contexts[2].small_bytes), (160 + 20 * 8192, 160));
    assert_eq!((g.groups.len(), g.contexts[2].group, table::destinations(&g)[2]), (1, None, Some(0)));
}

#[test]
fn dilution_is_judged_call_site_by_call_site() {
    // A and B, one group, allocate through two wrappers; D, many cold nodes, through A's, and E,
    // a few nodes as hot as B's, through B's. D goes to the cold group; E stays in the group,
    // and its call site decides without a walk.
    let chains: [&[&str]; 4] = [&["xmalloc", "build_a", "main"], &["ymalloc", "build_b", "main"], &["xmalloc", "build_d", "main"], &["ymalloc", "build_e", "main"]];
    let mut blocks = Vec::new();
    for k in 0..100 {
        blocks.push((0, 16, 40));
        blocks.push((1, 16, 38));
        blocks.push((2, 16, 4));
        if k < 10 {
            blocks.push((3, 16, 39));
        }
    }
    let p = profile(&chains, &blocks, &[(0, 0, 3000), (0, 1, 7000), (1, 1, 2900), (2, 2, 10), (3, 3, 10)]);
    let g = group(&p, &Params::default()).unwrap();
    assert_eq!([0, 1, 2, 3].map(|c| g.contexts[c].kept), [true, true, false, false]);
    assert_eq!([0, 1, 2, 3].map(|c| g.contexts[c].group), [Some(0), Some(0), Some(1), None]);
    assert!(g.is_cold(1));
    assert_eq!(table::destinations(&g), vec![Some(0), Some(0), Some(1), Some(0)]);
    // Judged together, E's nodes would have gone too.
    let both = taken_in(&group(&p, &Params { cold_group: ColdGroup::Never, ..Params::default() }).unwrap(), &[2, 3], &[Some(0), Some(0), Some(0), Some(0)])[0];
    assert!(both.dilution() > COLD_DILUTION);
    let ymalloc = g.contexts[3].sites[0];
    let calls = table::call_sites(&g);
    let at = |site: u32| calls.iter().find(|((_, off), _)| *off == g.sites[site as usize].file_offset).unwrap().1;
    assert_eq!(at(ymalloc).decides, 0, "B's and E's call site decides alone");
    assert_eq!(at(g.contexts[2].sites[0]).decides, table::WALK);
}

#[test]
fn a_cold_group_that_would_make_the_walks_too_costly_is_not_made() {
    // A's thousand nodes and, through the same wrapper, D's fifty larger and hardly used ones
    // (a sixth of the bytes, a thousandth of the accesses): D dilutes A's group, and its cold
    // group makes xmalloc's call site walk for A's nodes too.
    let chains: [&[&str]; 2] = [&["xmalloc", "build_a", "main"], &["xmalloc", "build_d", "main"]];
    let blocks: Vec<(u32, u64, u64)> = (0..1000).map(|_| (0, 16, 40)).chain((0..50).map(|_| (1, 64, 1))).collect();
    let p = profile(&chains, &blocks, &[(0, 0, 30000), (1, 1, 10)]);
    let with = group(&p, &Params::default()).unwrap();
    let without = group(&p, &Params { cold_group: ColdGroup::Never, ..Params::default() }).unwrap();
    assert!(with.is_cold(1) && without.groups.len() == 1);
    let (w1, w0) = (with.identification.walk_per_object, without.identification.walk_per_object);
    assert!(w1 > w0, "the cold group's call site walks: {w1} against {w0}");
    // A limit between the two: the group stays, without the cold group.
    let limit = (w0 + w1) / 2.0;
    let g = group(&p, &Params { max_walk_per_object: limit, ..Params::default() }).unwrap();
    assert_eq!((g.groups.len(), g.identification.dropped, g.contexts[1].group), (1, false, None));
    assert_eq!(g.identification.walk_per_object, w0);
    // Below both, every group goes, as before.
    let none = group(&p, &Params { max_walk_per_object: w0 / 2.0, ..Params::default() }).unwrap();
    assert!(none.groups.is_empty() && none.identification.dropped);
}

#[test]
fn a_cold_group_takes_the_uncovered_contexts_of_the_hot_groups_call_sites() {
    let p = lists_with_rare_d();
    let plain = group(&p, &Params::default()).unwrap();
    assert_eq!(plain.groups.len(), 1);
    assert_eq!([0, 1, 2, 3].map(|c| plain.contexts[c].kept), [true, true, false, false], "D and S are below the coverage cut");
    let g = group(&p, &Params { cold_group: ColdGroup::All, ..Params::default() }).unwrap();
    assert_eq!(g.groups.len(), 2);
    assert_eq!(g.groups[0].members, plain.groups[0].members);
    assert_eq!((g.groups[1].members.clone(), g.groups[1].weight, g.groups[1].accesses), (vec![2], 0, 50), "D shares xmalloc's call site with A and B; S does not");
    assert_eq!([0, 1, 2, 3].map(|c| g.contexts[c].group), [Some(0), Some(0), Some(1), None]);
    assert!(g.is_cold(1) && !g.is_cold(0) && !plain.is_cold(0));
    let name = |s: u32| g.sites[s as usize].function.as_str();
    // Tried last, it only has to tell D from what no earlier group claims (S): its call site.
    assert_eq!(g.groups[1].selector.iter().map(|c| c.iter().map(|&s| name(s)).collect::<Vec<_>>()).collect::<Vec<_>>(), vec![vec!["xmalloc"]]);
    assert!(select::misclassified(&g).is_empty());
    // Without it xmalloc's call site decides alone for all three; with it, it walks.
    let at = |g: &Groups| table::call_sites(g).into_iter().find(|((_, off), _)| *off == g.sites[g.contexts[0].sites[0] as usize].file_offset).unwrap().1;
    assert_eq!(at(&plain).decides, 0);
    assert_eq!((at(&g).decides, at(&g).otherwise), (table::WALK, 0));
    assert_eq!(table::destinations(&g), vec![Some(0), Some(0), Some(1), None]);
    // A table allocated through the same wrapper stays out: its objects are never grouped.
    let mut big = lists_with_rare_d();
    big.blocks.push(AccessBlock { size: 1 << 20, context: 0, alloc_at: 999, free_at: u64::MAX, reads: 10, writes: 0, full_context: 4 });
    big.full_contexts.push(FullContext { key: 99, frames: big.full_contexts[0].frames.iter().take(1).cloned().chain(big.full_contexts[3].frames.iter().skip(1).cloned()).collect(), depths: vec![1, 2] });
    let with_table = group(&big, &Params { cold_group: ColdGroup::All, ..Params::default() }).unwrap();
    assert_eq!(with_table.groups[1].members, vec![2]);
    // No groups, no cold group.
    let none = group(&p, &Params { cold_group: ColdGroup::All, group_threshold: 0.99, ..Params::default() }).unwrap();
    assert!(none.groups.is_empty());
    // Nor one whose objects take less than the threshold's share of the accesses (D: 50 of
    // about 13,000), as for any group.
    let rare = group(&p, &Params { cold_group: ColdGroup::All, group_threshold: 0.01, ..Params::default() }).unwrap();
    assert_eq!((rare.groups.len(), rare.contexts[2].group), (1, None));
}
