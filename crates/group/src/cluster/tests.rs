use super::*;
use crate::graph::{Edge, Node};
use proptest::prelude::*;
use std::collections::BTreeSet;

fn graph(accesses: &[u64], edges: &[(usize, usize, u64)]) -> Graph {
    let nodes = accesses.iter().enumerate().map(|(i, &a)| Node { contexts: vec![i as u32], accesses: a }).collect();
    Graph::new(nodes, edges.iter().map(|&(a, b, weight)| Edge { a, b, weight }).collect())
}

/// Figure 6 as the paper has it (no absorbing), at tolerance T and no threshold.
fn params(tolerance: f64) -> Params {
    Params { merge_tolerance: tolerance, group_threshold: 0.0, absorb: false, ..Params::default() }
}

fn members(found: &[Found]) -> Vec<Vec<usize>> {
    found.iter().map(|f| f.members.clone()).collect()
}

#[test]
fn figure_8_by_hand() {
    // A = {x, y} joined by 10; B = z, tied to x by 8 and to y by 9; no loops.
    let s_a = score(10, 2, 0);
    let s_b = score(0, 1, 0);
    let s_c = score(27, 3, 0);
    assert_eq!((s_a, s_b, s_c), (10.0, 0.0, 9.0));
    // 9 − 0.95 × 10 = −0.5: z stays out at HALO's 5%; at 15%, 9 − 8.5 = 0.5: it joins.
    assert!((merge_benefit(s_a, s_b, s_c, 0.05) + 0.5).abs() < 1e-12);
    assert!((merge_benefit(s_a, s_b, s_c, 0.15) - 0.5).abs() < 1e-12);
    // Loops count only when present: a lone node with a loop of 7 scores 7, two nodes with
    // one loop share their weight among the loop and the pair.
    assert_eq!(score(7, 1, 1), 7.0);
    assert_eq!(score(12, 2, 1), 6.0);
}

#[test]
fn merge_tolerance_decides_the_third_member() {
    let g = graph(&[30, 20, 10], &[(0, 1, 10), (0, 2, 8), (1, 2, 9)]);
    assert_eq!(members(&group(&g, &params(0.05))), vec![vec![0, 1]]);
    assert_eq!(members(&group(&g, &params(0.15))), vec![vec![0, 1, 2]]);
    // The member limit stops growth whatever the benefit.
    let capped = Params { max_group_members: 2, ..params(0.15) };
    assert_eq!(members(&group(&g, &capped)), vec![vec![0, 1]]);
    let f = group(&g, &params(0.15));
    assert_eq!(f[0].weight, 27);
}

#[test]
fn two_lists_walked_together_are_grouped_apart_from_a_third() {
    // Lists A and B interleaved (each list's nodes affine to each other: loops; and across),
    // list C walked on its own: {A, B} together, C alone.
    let g = graph(&[1000, 900, 800], &[(0, 0, 300), (1, 1, 280), (0, 1, 600), (2, 2, 500), (1, 2, 3)]);
    let f = group(&g, &params(0.05));
    assert_eq!(members(&f), vec![vec![0, 1], vec![2]]);
    assert_eq!(f[0].weight, 1180);
    assert_eq!(f[1].weight, 500);
    // With a threshold above C's own weight C is no group at all.
    let strict = Params { group_threshold: 0.2, ..params(0.05) };
    assert_eq!(members(&group(&g, &strict)), vec![vec![0, 1]]);
}

#[test]
fn the_start_is_the_hotter_end_of_the_strongest_available_edge() {
    // Edge (1, 2) is strongest; node 2 is hotter than node 1, so it starts the group.
    let g = graph(&[5, 10, 50, 1], &[(1, 2, 100), (0, 3, 40)]);
    let f = group(&g, &params(0.05));
    assert_eq!(members(&f), vec![vec![2, 1], vec![0, 3]]);
    // Equal accesses: the earlier node.
    let g = graph(&[10, 10], &[(0, 1, 100)]);
    assert_eq!(members(&group(&g, &params(0.05))), vec![vec![0, 1]]);
}

#[test]
fn light_edges_are_ignored_and_nodes_without_edges_are_not_grouped() {
    let g = graph(&[10, 10, 10, 10], &[(0, 1, 5), (2, 3, 50)]);
    let p = Params { min_weight: 10, ..params(0.05) };
    assert_eq!(members(&group(&g, &p)), vec![vec![2, 3]]);
    assert!(group(&graph(&[1, 2, 3], &[]), &params(0.05)).is_empty());
}

#[test]
fn a_dropped_group_keeps_its_nodes_out_of_later_groups() {
    // {0, 1} forms first but is too light for the threshold; 1 is not offered to {2, 3}.
    let g = graph(&[100, 100, 100, 100], &[(0, 1, 60), (2, 3, 50), (1, 2, 40)]);
    let p = Params { group_threshold: 0.155, ..params(0.05) };
    // accesses 400 × 0.155 = 62: both groups fall short.
    assert!(group(&g, &p).is_empty());
    let p = Params { group_threshold: 0.1, ..params(0.05) };
    assert_eq!(members(&group(&g, &p)), vec![vec![0, 1], vec![2, 3]]);
}

#[test]
fn a_group_used_mostly_with_another_joins_it() {
    // Nodes 0–3 pairwise at 100 (score 100); node 4 tied to each of them by 30 and to node 5
    // by 10. Joining {0..3} would drop its score to 720 / 10 = 72, below 95: figure 6 leaves
    // {4, 5} a group of its own (weight 10), though 4's objects are used twelve times as much
    // with the big group's (120) as with 5's.
    let mut edges = vec![(4, 5, 10)];
    for a in 0..4 {
        for b in a + 1..4 {
            edges.push((a, b, 100));
        }
        edges.push((a, 4, 30));
    }
    let g = graph(&[90, 80, 70, 60, 50, 40], &edges);
    assert_eq!(members(&group(&g, &params(0.05))), vec![vec![0, 1, 2, 3], vec![4, 5]]);
    let f = group(&g, &Params { absorb: true, ..params(0.05) });
    assert_eq!(members(&f), vec![vec![0, 1, 2, 3, 4, 5]]);
    assert_eq!(f[0].weight, 600 + 10 + 120);
    // The member limit keeps them apart.
    let capped = Params { absorb: true, max_group_members: 5, ..params(0.05) };
    assert_eq!(members(&group(&g, &capped)), vec![vec![0, 1, 2, 3], vec![4, 5]]);
    // A group tied more strongly inside than across stays: {4, 5} at 200 (now the strongest
    // edge, so formed first) against 120.
    edges[0].2 = 200;
    let g = graph(&[90, 80, 70, 60, 50, 40], &edges);
    assert_eq!(members(&group(&g, &Params { absorb: true, ..params(0.05) })), vec![vec![4, 5], vec![0, 1, 2, 3]]);
}

/// Figure 6 as written, recomputing every score from the edge list: the oracle.
fn naive(g: &Graph, p: &Params) -> Vec<(Vec<usize>, u64)> {
    let edges: Vec<&Edge> = g.edges.iter().filter(|e| e.weight >= p.min_weight).collect();
    let sub = |set: &BTreeSet<usize>| {
        let inside: Vec<&&Edge> = edges.iter().filter(|e| set.contains(&e.a) && set.contains(&e.b)).collect();
        let w: u64 = inside.iter().map(|e| e.weight).sum();
        let loops = inside.iter().filter(|e| e.a == e.b).count();
        (w, score(w, set.len(), loops))
    };
    let mut avail: BTreeSet<usize> = (0..g.nodes.len()).collect();
    let mut out = Vec::new();
    while !avail.is_empty() {
        let Some(edge) = edges
            .iter()
            .filter(|e| avail.contains(&e.a) && avail.contains(&e.b))
            .max_by_key(|e| (e.weight, std::cmp::Reverse((e.a, e.b))))
        else {
            break;
        };
        let first = if g.nodes[edge.b].accesses > g.nodes[edge.a].accesses { edge.b } else { edge.a };
        let mut grp = BTreeSet::from([first]);
        let mut order = vec![first];
        avail.remove(&first);
        while p.max_group_members == 0 || grp.len() < p.max_group_members {
            let (mut best, mut pick) = (0.0, None);
            for &v in &avail {
                let b = BTreeSet::from([v]);
                let mut c = grp.clone();
                c.insert(v);
                let m = merge_benefit(sub(&grp).1, sub(&b).1, sub(&c).1, p.merge_tolerance);
                if m > best {
                    (best, pick) = (m, Some(v));
                }
            }
            let Some(v) = pick else { break };
            grp.insert(v);
            order.push(v);
            avail.remove(&v);
        }
        let w = sub(&grp).0;
        if w as f64 >= g.accesses as f64 * p.group_threshold {
            out.push((order, w));
        }
    }
    // Absorbing, from the edge list: the weight between two groups is what their union has
    // beyond their own.
    while p.absorb {
        let set = |o: &Vec<usize>| o.iter().copied().collect::<BTreeSet<usize>>();
        let mut best: Option<(f64, usize, usize)> = None;
        for a in 0..out.len() {
            for b in (0..out.len()).filter(|&b| b != a) {
                let both: BTreeSet<usize> = set(&out[a].0).union(&set(&out[b].0)).copied().collect();
                let cross = sub(&both).0 - out[a].1 - out[b].1;
                let fits = p.max_group_members == 0 || both.len() <= p.max_group_members;
                if cross > out[a].1 && fits {
                    let r = cross as f64 / out[a].1.max(1) as f64;
                    if best.is_none_or(|x| r > x.0) {
                        best = Some((r, a, b));
                    }
                }
            }
        }
        let Some((_, a, b)) = best else { break };
        let joined = out.remove(a);
        let b = if b > a { b - 1 } else { b };
        out[b].0.extend(joined.0);
        out[b].1 = sub(&set(&out[b].0)).0;
    }
    out
}

fn arb_graph() -> impl Strategy<Value = (Graph, Params)> {
    (1usize..14)
        .prop_flat_map(|n| {
            (
                proptest::collection::vec(1u64..1000, n),
                proptest::collection::vec((0..n, 0..n, 1u64..500), 0..3 * n),
                0.0f64..0.5,
                0usize..5,
                prop_oneof![Just(0.0), 0.0f64..0.3],
                1u64..60,
                any::<bool>(),
            )
        })
        .prop_map(|(acc, edges, t, max, thr, minw, absorb)| {
            let g = graph(&acc, &edges);
            (g, Params { merge_tolerance: t, max_group_members: max, group_threshold: thr, min_weight: minw, absorb, ..Params::default() })
        })
}

proptest! {
    #[test]
    fn grouping_matches_figure_6_and_its_rules((g, p) in arb_graph()) {
        let found = group(&g, &p);
        let expected = naive(&g, &p);
        prop_assert_eq!(found.iter().map(|f| (f.members.clone(), f.weight)).collect::<Vec<_>>(), expected);
        let mut seen = BTreeSet::new();
        for f in &found {
            prop_assert!(p.max_group_members == 0 || f.members.len() <= p.max_group_members);
            prop_assert!(f.weight as f64 >= g.accesses as f64 * p.group_threshold);
            for &m in &f.members {
                prop_assert!(seen.insert(m), "node {} in two groups", m);
            }
        }
        // Absorbing only merges: the same nodes are grouped either way.
        let apart = group(&g, &Params { absorb: false, ..p.clone() });
        let nodes = |f: &[Found]| f.iter().flat_map(|x| x.members.iter().copied()).collect::<BTreeSet<usize>>();
        prop_assert_eq!(nodes(&found), nodes(&apart));
        // Deterministic, and blind to the order edges were given in.
        let mut reversed = g.clone();
        reversed.edges.reverse();
        let reversed = Graph::new(reversed.nodes, reversed.edges);
        prop_assert_eq!(group(&reversed, &p), found);
    }
}
