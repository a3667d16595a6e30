use super::*;
use crate::{Group, GroupContext, Params, Site};
use proptest::prelude::*;

/// Groups over contexts whose call chains are `chains` (site indices, innermost first; site s
/// is at depth `s % 4`), grouped as `groups` says (most accessed first).
fn groups(chains: &[Vec<u32>], groups: &[Vec<u32>]) -> Groups {
    let n_sites = chains.iter().flatten().map(|&s| s + 1).max().unwrap_or(0);
    let sites = (0..n_sites).map(|s| Site { module: "prog".into(), file_offset: 0x1000 + u64::from(s), function: format!("f{s}"), max_depth: s % 4 }).collect();
    let mut contexts: Vec<GroupContext> = chains.iter().map(|c| GroupContext { sites: c.clone(), kept: true, ..GroupContext::default() }).collect();
    for (k, g) in groups.iter().enumerate() {
        for &m in g {
            contexts[m as usize].group = Some(k as u32);
        }
    }
    let mut out = Groups {
        params: Params::default(),
        command: vec!["prog".into()],
        affinity_distance: 128,
        sites,
        contexts,
        edges: Vec::new(),
        groups: groups.iter().map(|g| Group { members: g.clone(), ..Group::default() }).collect(),
        walk_depth: 0,
        identification: Default::default(),
    };
    identify(&mut out);
    out
}

#[test]
fn distinct_call_sites_select_their_contexts() {
    // Sites: 0 = the wrapper every allocation goes through, 1..=3 the list builders, 4 main.
    let g = groups(&[vec![0, 1, 4], vec![0, 2, 4], vec![0, 3, 4]], &[vec![0, 1]]);
    // The wrapper and main are shared with context 2: the builders tell them apart.
    assert_eq!(g.groups[0].selector, vec![vec![1], vec![2]]);
    assert_eq!(g.walk_depth, 3); // site 2 is at depth 2
    assert_eq!(classify(&g, &[0, 1, 4]), Some(0));
    assert_eq!(classify(&g, &[0, 3, 4]), None);
    assert!(misclassified(&g).is_empty());
}

#[test]
fn equal_conflicts_prefer_the_site_nearest_the_allocation() {
    // Nothing else shares sites 5 or 6: either would do, 5 is innermost.
    let g = groups(&[vec![5, 6], vec![1, 2]], &[vec![0]]);
    assert_eq!(g.groups[0].selector, vec![vec![5]]);
    assert_eq!(g.walk_depth, 2);
}

#[test]
fn conjunctions_grow_until_no_conflict_is_left() {
    // Context 0 = a→b→c; 1 shares a and b, 2 shares b and c: a leaves 1, then c rules it out.
    let g = groups(&[vec![0, 1, 2], vec![0, 1, 3], vec![4, 1, 2]], &[vec![0]]);
    assert_eq!(g.groups[0].selector, vec![vec![0, 2]]);
    assert!(misclassified(&g).is_empty());
}

#[test]
fn earlier_groups_are_no_conflict_and_indistinguishable_contexts_are_reported() {
    // Group 0 = {0}; group 1 = {1}, whose chain is inside context 0's: context 0 is claimed by
    // group 0 first, so [1] needs no more sites.
    let g = groups(&[vec![7, 1, 2], vec![1, 2]], &[vec![0], vec![1]]);
    assert_eq!(g.groups[1].selector, vec![vec![1]]);
    assert!(misclassified(&g).is_empty());
    // Ungrouped context 2 holds all of context 1's sites: nothing can tell them apart.
    let g = groups(&[vec![7], vec![1, 2], vec![3, 1, 2]], &[vec![0], vec![1]]);
    assert_eq!(misclassified(&g), vec![Misclassified { context: 2, expected: None, got: Some(1) }]);
}

#[test]
fn equal_conjunctions_are_kept_once() {
    // Members 0 and 1 both reduce to site 2 (their own sites are shared with context 2).
    let g = groups(&[vec![0, 2], vec![1, 2], vec![0, 1, 3]], &[vec![0, 1]]);
    assert_eq!(g.groups[0].selector, vec![vec![2]]);
}

fn arb_case() -> impl Strategy<Value = (Vec<Vec<u32>>, Vec<Vec<u32>>)> {
    (2usize..12, 2u32..10)
        .prop_flat_map(|(n, sites)| {
            (
                // Reduced chains: distinct sites each, at least one.
                proptest::collection::vec(proptest::collection::btree_set(0..sites, 1..5), n).prop_map(|v| {
                    let mut out: Vec<Vec<u32>> = Vec::new();
                    for s in v {
                        let c: Vec<u32> = s.into_iter().collect();
                        if !out.contains(&c) {
                            out.push(c);
                        }
                    }
                    out
                }),
                proptest::collection::vec(0usize..4, n),
                Just(n),
            )
        })
        .prop_map(|(chains, assign, _)| {
            // assign[i] < 3: context i in group assign[i]; 3: ungrouped.
            let mut gs = vec![Vec::new(); 3];
            for (i, &a) in assign.iter().take(chains.len()).enumerate() {
                if a < 3 {
                    gs[a].push(i as u32);
                }
            }
            gs.retain(|g| !g.is_empty());
            (chains, gs)
        })
}

proptest! {
    #[test]
    fn selectors_give_every_distinguishable_context_its_group((chains, gs) in arb_case()) {
        let g = groups(&chains, &gs);
        let superset = |c: &[u32], of: &[u32]| of.iter().all(|s| c.contains(s));
        let matches = |conj: &[u32], c: usize| superset(&chains[c], conj);
        // Contexts a conjunction of group k still matches, outside groups 0..=k.
        let mut residual: Vec<Vec<usize>> = vec![Vec::new(); gs.len()];
        for (k, grp) in g.groups.iter().enumerate() {
            for conj in &grp.selector {
                prop_assert!(!conj.is_empty());
                for c in 0..chains.len() {
                    let claimed = g.contexts[c].group.is_some_and(|x| x as usize <= k);
                    if !claimed && matches(conj, c) {
                        residual[k].push(c);
                    }
                }
            }
            for &m in &grp.members {
                // Its conjunction is made of its own sites; and it ends without conflict
                // exactly when no unclaimed context holds every site of the member.
                let own: Vec<&Vec<u32>> = grp.selector.iter().filter(|conj| matches(conj, m as usize)).collect();
                prop_assert!(!own.is_empty(), "member {} matches none of its group's conjunctions", m);
                let hidden = (0..chains.len()).any(|c| {
                    c != m as usize && g.contexts[c].group.is_none_or(|x| x as usize > k) && superset(&chains[c], &chains[m as usize])
                });
                let clean = own.iter().any(|conj| (0..chains.len()).all(|c| g.contexts[c].group.is_some_and(|x| x as usize <= k) || !matches(conj, c)));
                prop_assert_eq!(clean, !hidden, "member {} of group {}", m, k);
            }
        }
        // Whoever is misclassified was left matching by some earlier (or, ungrouped, any)
        // group's conjunction; nobody else is.
        let wrong = misclassified(&g);
        for c in 0..chains.len() {
            let own = g.contexts[c].group.map_or(gs.len(), |x| x as usize);
            let explained = (0..own).any(|k| residual[k].contains(&c));
            prop_assert_eq!(wrong.iter().any(|w| w.context as usize == c), explained, "context {}", c);
        }
        let deepest = g.groups.iter().flat_map(|x| x.selector.iter().flatten()).map(|&s| s % 4 + 1).max().unwrap_or(0);
        prop_assert_eq!(g.walk_depth, deepest);
    }
}
