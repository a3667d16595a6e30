//! HALO's grouping (§4.2, figures 6–8): a greedy clustering that grows tight-knit groups
//! around the strongest edges of the affinity graph, judged by a weighted density score.
//!
//! The paper leaves a few cases open; they are settled here, deterministically:
//! - the start edge is the heaviest edge with *both* ends still available (`graph[avail]` is the
//!   subgraph induced by the available nodes), self-loops included; ties go to the edge whose
//!   ends come first in the node order (hottest first);
//! - its hotter end starts the group (ties: the earlier node); a self-loop's one end is it;
//! - when no edge is left between available nodes, grouping stops: every group started from
//!   there would be a lone node without internal weight;
//! - the score of a lone node without a self-loop is 0 (the formula's 0/0);
//! - among candidates of equal merge benefit the earlier node (the hotter) joins;
//! - a group that falls short of the weight threshold is dropped, and its nodes stay out of
//!   later groups, as in the figure (they are no longer available).
//!
//! One step is heaplab's own (on by default, [`crate::Params::absorb`]): once the figure's
//! groups are formed, a group with more weight to another group than inside itself joins it.

use crate::graph::Graph;
use crate::Params;
use std::collections::HashMap;

/// A group found: node indices in the order they joined, and the weight of the edges inside.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Found {
    /// Nodes (indices into [`Graph::nodes`]), the start node first.
    pub members: Vec<usize>,
    /// Sum of the weights of the (filtered) edges between members, loops included.
    pub weight: u64,
}

/// HALO's score s(G) (figure 7) of a graph of `nodes` nodes, `loops` self-loops of positive
/// weight and total edge weight `weight`: weight / (|L| + |V|(|V|−1)/2), and 0 when that
/// denominator is 0 (a lone node without a loop).
pub fn score(weight: u64, nodes: usize, loops: usize) -> f64 {
    let pairs = nodes as f64 * (nodes as f64 - 1.0) / 2.0;
    let d = loops as f64 + pairs;
    if d == 0.0 {
        0.0
    } else {
        weight as f64 / d
    }
}

/// HALO's merge benefit m(A, B) (figure 8) from the three scores: S_c − (1 − T)·max(S_a, S_b).
pub fn merge_benefit(s_a: f64, s_b: f64, s_c: f64, tolerance: f64) -> f64 {
    s_c - (1.0 - tolerance) * s_a.max(s_b)
}

/// Runs figure 6 on `graph` with `params` (min_weight, max_group_members, merge_tolerance,
/// group_threshold). Groups come in the order they were formed.
pub fn group(graph: &Graph, params: &Params) -> Vec<Found> {
    let n = graph.nodes.len();
    let edges: Vec<_> = graph.edges.iter().filter(|e| e.weight >= params.min_weight).copied().collect();
    let mut adj: Vec<HashMap<usize, u64>> = vec![HashMap::new(); n];
    let mut loop_w = vec![0u64; n];
    for e in &edges {
        if e.a == e.b {
            loop_w[e.a] = loop_w[e.a].saturating_add(e.weight);
        } else {
            *adj[e.a].entry(e.b).or_default() += e.weight;
            *adj[e.b].entry(e.a).or_default() += e.weight;
        }
    }
    // Heaviest first, then by ends in node order: the first edge with both ends available is
    // the start edge.
    let mut by_weight = edges.clone();
    by_weight.sort_by_key(|e| (std::cmp::Reverse(e.weight), e.a, e.b));
    let mut avail = vec![true; n];
    let mut left = n;
    let limit = if params.max_group_members == 0 { usize::MAX } else { params.max_group_members };
    let mut groups = Vec::new();
    let mut next_edge = 0;
    while left > 0 {
        while next_edge < by_weight.len() && !(avail[by_weight[next_edge].a] && avail[by_weight[next_edge].b]) {
            next_edge += 1;
        }
        let Some(start) = by_weight.get(next_edge) else { break };
        let first = if graph.nodes[start.b].accesses > graph.nodes[start.a].accesses { start.b } else { start.a };
        let mut members = vec![first];
        avail[first] = false;
        left -= 1;
        // The group's internal weight and loops, and each node's weight into the group.
        let (mut weight, mut loops) = (loop_w[first], usize::from(loop_w[first] > 0));
        let mut into = vec![0u64; n];
        for (&v, &w) in &adj[first] {
            into[v] += w;
        }
        while members.len() < limit {
            let s_a = score(weight, members.len(), loops);
            let mut best: Option<(f64, usize)> = None;
            for v in (0..n).filter(|&v| avail[v]) {
                let s_b = score(loop_w[v], 1, usize::from(loop_w[v] > 0));
                let s_c = score(weight + loop_w[v] + into[v], members.len() + 1, loops + usize::from(loop_w[v] > 0));
                let m = merge_benefit(s_a, s_b, s_c, params.merge_tolerance);
                if m > best.map_or(0.0, |b| b.0) {
                    best = Some((m, v));
                }
            }
            let Some((_, v)) = best else { break };
            weight += loop_w[v] + into[v];
            loops += usize::from(loop_w[v] > 0);
            members.push(v);
            avail[v] = false;
            left -= 1;
            for (&u, &w) in &adj[v] {
                into[u] += w;
            }
        }
        if weight as f64 >= graph.accesses as f64 * params.group_threshold {
            groups.push(Found { members, weight });
        }
    }
    if params.absorb {
        absorb(&mut groups, &adj, limit);
    }
    groups
}

/// heaplab's addition to figure 6 ([`Params::absorb`]): a group with more edge weight to
/// another group than inside itself joins that one, the most lopsided first, until none is
/// left (or the member limit stops it). The density score divides a group's weight by its pairs
/// of members, so a large group scores low per pair, and a context (or a small group) whose
/// objects are used mostly with that group's cannot join it within a few percent of tolerance:
/// it starts a group of its own, whose objects then sit in other chunks than the objects they
/// are used with. A merged group's weight is both weights and the edges between them.
fn absorb(groups: &mut Vec<Found>, adj: &[HashMap<usize, u64>], limit: usize) {
    loop {
        let mut of = HashMap::new();
        for (k, g) in groups.iter().enumerate() {
            for &m in &g.members {
                of.insert(m, k);
            }
        }
        let k = groups.len();
        let mut cross = vec![vec![0u64; k]; k];
        for (a, g) in groups.iter().enumerate() {
            for &m in &g.members {
                for (&v, &w) in &adj[m] {
                    match of.get(&v) {
                        Some(&b) if b != a => cross[a][b] += w,
                        _ => {}
                    }
                }
            }
        }
        // The pair (a joins b) whose cross weight exceeds a's own weight by the largest factor;
        // ties to the earlier groups (formed around heavier edges).
        let mut best: Option<(f64, usize, usize)> = None;
        for a in 0..k {
            for b in (0..k).filter(|&b| b != a && cross[a][b] > groups[a].weight) {
                if groups[a].members.len() + groups[b].members.len() > limit {
                    continue;
                }
                let r = cross[a][b] as f64 / groups[a].weight.max(1) as f64;
                if best.is_none_or(|x| r > x.0) {
                    best = Some((r, a, b));
                }
            }
        }
        let Some((_, a, b)) = best else { return };
        let joined = std::mem::take(&mut groups[a]);
        groups[b].weight += joined.weight + cross[a][b];
        groups[b].members.extend(joined.members);
        groups.remove(a);
    }
}

#[cfg(test)]
mod tests;
