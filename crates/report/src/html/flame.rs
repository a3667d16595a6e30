//! The flame graph (an icicle: outermost frame at the top) of live bytes at a snapshot moment.
//! Sites become paths of frame names, outermost first, with the allocator's frames trimmed
//! from the inner end; paths sharing a prefix share nodes of one tree. The page draws the
//! peak's graph here as SVG and embeds the tree and the snapshots as JSON, from which its
//! script draws any moment with the same layout (widths proportional to bytes, children
//! largest first, boxes under a third of a pixel left out).

use super::{esc, label, location, pct, short, bytes};
use crate::naming::is_plumbing;
use crate::model::Report;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::fmt::Write;

/// Snapshots the page keeps (the peak and evenly spaced others).
const MAX_SNAPSHOTS: usize = 64;
/// Sites per snapshot the page keeps; the smaller ones join the snapshot's "other" bytes.
const SITES_PER_SNAPSHOT: usize = 300;
/// Nodes of the call-path tree at most: a site whose path would pass it joins its snapshot's
/// "other" bytes (snapshots are taken peak first, so the peak's sites come first).
const MAX_NODES: usize = 6000;
/// Width of the drawing in SVG units, and height of one row.
pub(super) const WIDTH: f64 = 1200.0;
const ROW: f64 = 18.0;
/// Names of the two nodes that are no frame.
const ROOT: &str = "all live bytes";
const OTHER: &str = "[smaller sites]";

/// A node's name and how it is shown.
struct Name {
    label: String,
    module: String,
    loc: String,
    colour: String,
}

/// One kept snapshot: live bytes per leaf node.
struct Snap {
    ns: u64,
    live: u64,
    other: u64,
    leaves: Vec<(u32, u64)>,
}

/// The tree of call paths of the report's snapshots, and the snapshots on it.
pub(super) struct Flame {
    names: Vec<Name>,
    /// (parent node or `u32::MAX` at the top, name) per node.
    nodes: Vec<(u32, u32)>,
    snaps: Vec<Snap>,
    moments: Vec<u64>,
}

impl Flame {
    pub(super) fn new(r: &Report) -> Flame {
        let mut f = Flame { names: vec![], nodes: vec![], snaps: vec![], moments: vec![] };
        let mut name_ix: HashMap<String, u32> = HashMap::new();
        let mut node_ix: HashMap<(u32, u32), u32> = HashMap::new();
        let mut leaf_of: HashMap<u32, u32> = HashMap::new();
        for si in kept(r.snapshots.len()) {
            let s = &r.snapshots[si];
            let mut sites = s.sites.clone();
            sites.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
            let dropped: u64 = sites.iter().skip(SITES_PER_SNAPSHOT).map(|x| x.1).sum();
            sites.truncate(SITES_PER_SNAPSHOT);
            let mut leaves: HashMap<u32, u64> = HashMap::new();
            let mut dropped = dropped;
            for (site, b) in sites {
                let leaf = match leaf_of.get(&site) {
                    Some(&leaf) => leaf,
                    None => {
                        let path = path(r, site);
                        if f.nodes.len() + path.len() > MAX_NODES {
                            dropped += b;
                            continue;
                        }
                        let mut parent = u32::MAX;
                        for (l, frame) in path {
                            let name = *name_ix.entry(l.clone()).or_insert_with(|| {
                                f.names.push(name(&l, frame));
                                f.names.len() as u32 - 1
                            });
                            parent = *node_ix.entry((parent, name)).or_insert_with(|| {
                                f.nodes.push((parent, name));
                                f.nodes.len() as u32 - 1
                            });
                        }
                        leaf_of.insert(site, parent);
                        parent
                    }
                };
                *leaves.entry(leaf).or_default() += b;
            }
            let mut leaves: Vec<(u32, u64)> = leaves.into_iter().collect();
            leaves.sort_unstable();
            f.moments.push(s.ns);
            f.snaps.push(Snap { ns: s.ns, live: s.live_bytes, other: s.other_bytes + dropped, leaves });
        }
        f
    }

    /// The moments of the kept snapshots (the peak first).
    pub(super) fn moments(&self) -> &[u64] {
        &self.moments
    }

    /// The data the page's script draws from.
    pub(super) fn data(&self, r: &Report) -> Value {
        let names: Vec<Value> = self.names.iter().map(|n| json!([n.label, n.module, n.loc, n.colour])).collect();
        let nodes: Vec<i64> = self
            .nodes
            .iter()
            .flat_map(|&(p, n)| [if p == u32::MAX { -1 } else { p as i64 }, n as i64])
            .collect();
        let snaps: Vec<Value> = self
            .snaps
            .iter()
            .map(|s| {
                let leaves: Vec<u64> = s.leaves.iter().flat_map(|&(l, b)| [l as u64, b]).collect();
                json!({ "ns": s.ns, "live": s.live, "other": s.other, "leaves": leaves })
            })
            .collect();
        json!({
            "kind": "report",
            "peak_ns": r.summary.peak_ns,
            "names": names,
            "nodes": nodes,
            "snapshots": snaps,
            "root": ROOT,
            "other": OTHER,
        })
    }

    /// The icicle of snapshot `k` as SVG.
    pub(super) fn svg(&self, k: usize) -> String {
        let Some(s) = self.snaps.get(k) else { return String::new() };
        let mut sum = vec![0u64; self.nodes.len()];
        for &(leaf, b) in &s.leaves {
            let mut n = leaf;
            while n != u32::MAX {
                sum[n as usize] += b;
                n = self.nodes[n as usize].0;
            }
        }
        let mut children: Vec<Vec<u32>> = vec![vec![]; self.nodes.len()];
        let mut top: Vec<u32> = vec![];
        for (i, &(p, _)) in self.nodes.iter().enumerate() {
            if sum[i] > 0 {
                if p == u32::MAX { top.push(i as u32) } else { children[p as usize].push(i as u32) }
            }
        }
        let total: u64 = top.iter().map(|&t| sum[t as usize]).sum::<u64>() + s.other;
        let total = total.max(s.live).max(1);
        let mut boxes = String::new();
        let mut depth = 0;
        let root_title = format!("{ROOT}: {}", bytes(total));
        draw_box(&mut boxes, ROOT, &root_title, "#999", 0.0, WIDTH, 0, "r");
        let mut order = top.clone();
        order.sort_by(|&a, &b| sum[b as usize].cmp(&sum[a as usize]).then(a.cmp(&b)));
        let mut x = 0.0;
        for n in order {
            x = self.place(&mut boxes, &sum, &children, n, x, 1, total, &mut depth);
        }
        if s.other > 0 {
            let w = WIDTH * s.other as f64 / total as f64;
            if w >= 1.0 / 3.0 {
                let t = format!("{OTHER}: {} ({})", bytes(s.other), pct(s.other, total));
                draw_box(&mut boxes, OTHER, &t, "#bbb", x, w, 1, "o");
                depth = depth.max(1);
            }
        }
        let h = (depth + 1) as f64 * ROW;
        format!(
            "<svg id=\"flame-svg\" class=\"flame\" viewBox=\"0 0 {WIDTH} {h}\" width=\"100%\" \
             preserveAspectRatio=\"none\" role=\"img\" aria-label=\"flame graph of live bytes\" \
             style=\"aspect-ratio:{WIDTH}/{h}\">{boxes}</svg>"
        )
    }

    /// Draws node `n` at `x` and its children under it; returns the x after it.
    #[allow(clippy::too_many_arguments)]
    fn place(
        &self,
        o: &mut String,
        sum: &[u64],
        children: &[Vec<u32>],
        n: u32,
        x: f64,
        d: usize,
        total: u64,
        depth: &mut usize,
    ) -> f64 {
        let b = sum[n as usize];
        let w = WIDTH * b as f64 / total as f64;
        if w >= 1.0 / 3.0 {
            *depth = (*depth).max(d);
            let name = &self.names[self.nodes[n as usize].1 as usize];
            let title = format!("{}: {} ({}) {}", name.label, bytes(b), pct(b, total), name.loc);
            draw_box(o, &name.label, &title, &name.colour, x, w, d, &n.to_string());
            let mut order = children[n as usize].clone();
            order.sort_by(|&a, &b| sum[b as usize].cmp(&sum[a as usize]).then(a.cmp(&b)));
            let mut cx = x;
            for c in order {
                cx = self.place(o, sum, children, c, cx, d + 1, total, depth);
            }
        }
        x + w
    }
}

/// One box: a rectangle, its label when it fits, and a tooltip.
#[allow(clippy::too_many_arguments)]
fn draw_box(o: &mut String, text: &str, title: &str, fill: &str, x: f64, w: f64, d: usize, key: &str) {
    let y = d as f64 * ROW;
    let _ = write!(
        o,
        "<g data-k=\"{key}\"><title>{}</title><rect x=\"{x:.1}\" y=\"{y}\" width=\"{:.1}\" height=\"{}\" fill=\"{fill}\"/>",
        esc(title),
        (w - 0.5).max(0.3),
        ROW - 1.0
    );
    let fits = ((w - 6.0) / 6.6).floor();
    if fits >= 3.0 {
        let _ = write!(o, "<text x=\"{:.1}\" y=\"{}\">{}</text>", x + 3.0, y + 12.5, esc(&short(text, fits as usize)));
    }
    o.push_str("</g>");
}

/// Which snapshots to keep: all when few, else the first (the peak) and evenly spaced others.
fn kept(n: usize) -> Vec<usize> {
    if n <= MAX_SNAPSHOTS {
        return (0..n).collect();
    }
    let mut v: Vec<usize> = (0..MAX_SNAPSHOTS).map(|k| 1 + k * (n - 1) / MAX_SNAPSHOTS).collect();
    v[0] = 0;
    v.dedup();
    v
}

/// A site's path: its frames' names, outermost first, without the allocator's frames at the
/// inner end (unless nothing else is left). Each name comes with the frame it was seen on.
fn path(r: &Report, site: u32) -> Vec<(String, Option<&crate::model::Frame>)> {
    let frames: Vec<&crate::model::Frame> = r
        .sites
        .get(site as usize)
        .map(|s| s.stack.iter().filter_map(|&i| r.frames.get(i as usize)).collect())
        .unwrap_or_default();
    let inner = frames.iter().position(|f| !is_plumbing(f)).unwrap_or(0);
    let p: Vec<_> = frames[inner.min(frames.len())..].iter().rev().map(|f| (label(f), Some(*f))).collect();
    if p.is_empty() { vec![("[no stack recorded]".to_string(), None)] } else { p }
}

fn name(l: &str, f: Option<&crate::model::Frame>) -> Name {
    let (module, loc, inlined, plumbing) =
        f.map_or((String::new(), String::new(), false, false), |f| (f.module.clone(), location(f), f.inlined, is_plumbing(f)));
    Name { label: l.to_string(), colour: colour(l, &module, inlined, plumbing), module, loc }
}

/// Warm colours for the program's code, cool ones for its libraries, grey for the heap's
/// plumbing; the shade varies by function so that neighbours differ.
fn colour(label: &str, module: &str, inlined: bool, plumbing: bool) -> String {
    let h = fnv(label);
    if plumbing {
        return format!("hsl(0,0%,{}%)", 68 + h % 10);
    }
    let library = module.starts_with("lib") && module.contains(".so");
    let hue = if library { 170 + (fnv(module) % 70) as u32 } else { 8 + (h % 42) as u32 };
    let light = if inlined { 76 } else { 60 + (h / 64 % 12) as u32 };
    format!("hsl({hue},65%,{light}%)")
}

fn fnv(s: &str) -> u64 {
    s.bytes().fold(0xcbf29ce484222325u64, |h, b| (h ^ b as u64).wrapping_mul(0x100000001b3))
}
