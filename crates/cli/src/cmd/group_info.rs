//! `heaplab group-info`: describe a `.hlgroups` file (parameters, contexts with their frames,
//! the heaviest edges, groups and selectors, misclassified contexts) and draw its graph.

use crate::cmd::group::{describe, print_summary};
use crate::outputs::check_outputs;
use crate::picture::{check_format, write_picture};
use crate::Failure;
use clap::Args;
use heaplab_group::{ColdGroup, format, Groups};
use heaplab_model::units::{bytes, grouped};
use heaplab_plot::graph::{render_graph_png, render_graph_svg, GraphNode, GraphPicture};

pub const GROUP_INFO_HELP: &str = "\
Describe groups written by `heaplab group`: the profiled command and parameters, every context
(kept in the graph, left out because its objects churn, or not; its group; the group run-time
identification serves it from, which whole call sites can make differ; accesses, objects,
bytes, and its call sites symbolised: function, module and offset, innermost first), the
heaviest affinity edges, the groups with their selectors, the walk depth, and the contexts the
selectors would misclassify. The file is read in full and validated first: a damaged or
inconsistent file is an error (exit 2) naming what is wrong.

--plot draws the graph like HALO's figure 9: each kept context a disc whose area follows its
accesses, coloured by group (grey: ungrouped), edges thicker for more weight, edges below 1% of
the heaviest hidden, loops drawn as rings, and a legend naming each group's contexts.

Examples:
  heaplab group-info prog.hlgroups
  heaplab group-info prog.hlgroups --plot groups.svg --json";

/// Edges listed in the table (all are in the JSON).
const EDGES_SHOWN: usize = 20;

/// Arguments of `heaplab group-info`.
#[derive(Args)]
pub struct GroupInfoArgs {
    /// The groups (.hlgroups).
    groups: String,
    /// Draw the graph to this file (.png or .svg).
    #[arg(long, value_name = "FILE")]
    plot: Option<String>,
    /// Print the description as JSON.
    #[arg(long)]
    json: bool,
}

/// `heaplab group-info`.
pub fn group_info(a: GroupInfoArgs) -> Result<(), Failure> {
    if let Some(p) = &a.plot {
        check_outputs(&[p], &[&a.groups])?;
        check_format(p)?;
    }
    let g = format::read(&a.groups)?;
    if let Some(p) = &a.plot {
        let pic = picture(&g, &a.groups);
        write_picture(p, || render_graph_png(&pic), || render_graph_svg(&pic))?;
    }
    if a.json {
        let mut v = describe(&g, true);
        v["file"] = serde_json::json!(a.groups);
        v["plot"] = serde_json::json!(a.plot);
        println!("{}", serde_json::to_string_pretty(&v).expect("JSON of plain values"));
        return Ok(());
    }
    let p = &g.params;
    let members = if p.max_group_members == 0 { "no limit".to_string() } else { p.max_group_members.to_string() };
    println!("groups file    {}", a.groups);
    println!("command        {}", g.command.join(" "));
    println!("affinity       {} B", grouped(g.affinity_distance));
    println!(
        "parameters     coverage {}, merge tolerance {}, min weight {}, max members {members}, threshold {}, recursion by {}, max turnover {}{}{}{}",
        p.coverage,
        p.merge_tolerance,
        p.min_weight,
        p.group_threshold,
        p.recursion.name(),
        if p.max_turnover == 0.0 { "no limit".to_string() } else { p.max_turnover.to_string() },
        if p.whole_call_sites { ", whole call sites" } else { "" },
        if p.absorb { ", lopsided groups absorbed" } else { ", groups kept apart" },
        match p.cold_group {
            ColdGroup::Never => ", no cold group",
            ColdGroup::Diluting => ", cold group of diluting contexts",
            ColdGroup::All => ", cold group of every context it can take",
        }
    );
    println!("allocator      objects ≤ {} B, chunks of {}, {} spare", grouped(p.max_object_size), bytes(p.chunk_size), p.spare_chunks);
    // Where run-time identification sends each context: its group, or another one where whole
    // call sites take it in (`-`: the fallback).
    let runs_in = heaplab_group::table::destinations(&g);
    print_summary(&g, &runs_in);
    let names = g.context_names();
    println!("\ncontext  kept   group  runs in     accesses   objects        bytes  call sites (innermost first)");
    for (i, c) in g.contexts.iter().enumerate() {
        let sites: Vec<String> = c
            .sites
            .iter()
            .map(|&s| {
                let x = &g.sites[s as usize];
                format!("{} ({}+{:#x})", g.site_name(s), x.module, x.file_offset)
            })
            .collect();
        let group = c.group.map_or("-".to_string(), |k| k.to_string());
        let runs = runs_in[i].map_or("-".to_string(), |k| k.to_string());
        let frames = if sites.is_empty() { names[i].clone() } else { sites.join(" < ") };
        println!("{i:>7}  {:<5}  {group:>5}  {runs:>7}  {:>11}  {:>8}  {:>11}  {frames}", if c.kept { "yes" } else if c.churns { "churn" } else { "no" }, grouped(c.accesses), grouped(c.objects), grouped(c.bytes));
    }
    let mut edges = g.edges.clone();
    edges.sort_by_key(|e| (std::cmp::Reverse(e.weight), e.a, e.b));
    println!("\nedges (heaviest {} of {})", EDGES_SHOWN.min(edges.len()), grouped(edges.len() as u64));
    for e in edges.iter().take(EDGES_SHOWN) {
        println!("  {:>12}  {} — {}", grouped(e.weight), names[e.a as usize], names[e.b as usize]);
    }
    if let Some(p) = &a.plot {
        println!("\npicture        {p}");
    }
    Ok(())
}

/// The kept contexts as a picture (ungrouped ones grey), edges below 1% of the heaviest hidden.
fn picture(g: &Groups, file: &str) -> GraphPicture {
    let names = g.context_names();
    let kept: Vec<usize> = (0..g.contexts.len()).filter(|&i| g.contexts[i].kept).collect();
    let mut index = vec![usize::MAX; g.contexts.len()];
    for (k, &i) in kept.iter().enumerate() {
        index[i] = k;
    }
    let nodes = kept
        .iter()
        .map(|&i| GraphNode { label: names[i].clone(), weight: g.contexts[i].accesses, group: g.contexts[i].group.map(|k| k as usize) })
        .collect();
    let edges: Vec<(usize, usize, u64)> = g
        .edges
        .iter()
        .filter(|e| index[e.a as usize] != usize::MAX && index[e.b as usize] != usize::MAX)
        .map(|e| (index[e.a as usize], index[e.b as usize], e.weight))
        .collect();
    let heaviest = edges.iter().map(|e| e.2).max().unwrap_or(0);
    let legend = g.groups.iter().enumerate().map(|(k, x)| format!("{k}: {}", x.members.iter().map(|&m| names[m as usize].as_str()).collect::<Vec<_>>().join(", "))).collect();
    GraphPicture {
        title: format!("{file}: {} groups", g.groups.len()),
        subtitle: format!("{} kept contexts of {}, {} edges; disc area = accesses, edges under {} hidden", kept.len(), g.contexts.len(), edges.len(), grouped(heaviest / 100)),
        nodes,
        edges,
        min_edge: heaviest / 100,
        groups: legend,
        width: 1200,
        height: 800,
    }
}
