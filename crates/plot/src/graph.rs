//! Node-link pictures of weighted graphs in groups (HALO's figure 9): each node a disc whose
//! area follows its weight, coloured by its group (grey when in none), each edge a line whose
//! thickness follows its weight, edges lighter than a threshold hidden, and a legend naming
//! each group's nodes. The layout is deterministic: groups sit on a circle, most important
//! first, each group's nodes on a small circle of their own; ungrouped nodes share one more.
//! `heaplab group-info --plot` draws with it.

use crate::chart::{colour, disc, line};
use crate::raster::Canvas;
use crate::svg::esc;
use crate::{hex, outline_colour, text_w, Rgb, BG, MUTED, TEXT};
use std::fmt::Write;

/// A node.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GraphNode {
    /// Shown in its tooltip (SVG).
    pub label: String,
    /// Its disc's area follows this.
    pub weight: u64,
    /// Its group (index into [`GraphPicture::groups`]), `None` for grey.
    pub group: Option<usize>,
}

/// A graph to draw.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GraphPicture {
    /// Top line.
    pub title: String,
    /// Second line.
    pub subtitle: String,
    /// The nodes.
    pub nodes: Vec<GraphNode>,
    /// Edges `(a, b, weight)` between node indices; loops (`a == b`) are drawn as a ring.
    pub edges: Vec<(usize, usize, u64)>,
    /// Edges lighter than this are not drawn.
    pub min_edge: u64,
    /// One legend line per group (what it holds).
    pub groups: Vec<String>,
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
}

const EDGE: Rgb = [150, 150, 146];
const UNGROUPED: Rgb = [190, 190, 186];

struct Placed {
    x: f64,
    y: f64,
    r: f64,
    fill: Rgb,
}

struct Scene {
    w: i64,
    h: i64,
    s: i64,
    nodes: Vec<Placed>,
    /// (a, b, thickness in pixels)
    edges: Vec<(usize, usize, f64)>,
    legend_x: i64,
    legend: Vec<(Rgb, String)>,
}

fn scene(g: &GraphPicture) -> Scene {
    let w = g.width.clamp(crate::MIN_WIDTH, crate::MAX_SIDE) as i64;
    let h = g.height.clamp(crate::MIN_HEIGHT, crate::MAX_SIDE) as i64;
    let s: i64 = if w >= 800 && h >= 450 { 2 } else { 1 };
    let legend_w = (w * 45 / 100).min(g.groups.iter().chain([&"ungrouped".to_string()]).map(|l| text_w(l, s) + 16 * s + 20).max().unwrap_or(0));
    let (top, pw) = (10 + 24 * s, (w - legend_w - 20).max(50));
    let ph = (h - top - 10).max(50);
    let (cx, cy) = (10.0 + pw as f64 / 2.0, top as f64 + ph as f64 / 2.0);
    // Clusters: each group, then the ungrouped nodes.
    let mut clusters: Vec<Vec<usize>> = vec![Vec::new(); g.groups.len() + 1];
    for (i, n) in g.nodes.iter().enumerate() {
        clusters[n.group.filter(|&k| k < g.groups.len()).unwrap_or(g.groups.len())].push(i);
    }
    clusters.retain(|c| !c.is_empty());
    let k = clusters.len().max(1) as f64;
    let span = (pw.min(ph) as f64) / 2.0 * 0.9;
    let (big, slot) = if k <= 1.0 { (0.0, span) } else { (span * 0.62, (span * 0.38).min(span * 0.62 * (std::f64::consts::PI / k).sin())) };
    let max_w = g.nodes.iter().map(|n| n.weight).max().unwrap_or(0).max(1) as f64;
    let r_max = (slot * 0.3).clamp(3.0, 40.0 * s as f64);
    let mut nodes: Vec<Placed> = g.nodes.iter().map(|_| Placed { x: cx, y: cy, r: 0.0, fill: UNGROUPED }).collect();
    for (j, members) in clusters.iter().enumerate() {
        let a = -std::f64::consts::FRAC_PI_2 + 2.0 * std::f64::consts::PI * j as f64 / k;
        let (gx, gy) = (cx + big * a.cos(), cy + big * a.sin());
        let m = members.len() as f64;
        let ring = if members.len() == 1 { 0.0 } else { slot * 0.7 };
        for (q, &i) in members.iter().enumerate() {
            let b = -std::f64::consts::FRAC_PI_2 + 2.0 * std::f64::consts::PI * q as f64 / m;
            let n = &g.nodes[i];
            nodes[i] = Placed {
                x: gx + ring * b.cos(),
                y: gy + ring * b.sin(),
                r: (r_max * (n.weight as f64 / max_w).sqrt()).max(2.0 * s as f64),
                fill: n.group.filter(|&k| k < g.groups.len()).map_or(UNGROUPED, colour),
            };
        }
    }
    let shown: Vec<&(usize, usize, u64)> = g.edges.iter().filter(|e| e.2 >= g.min_edge.max(1) && e.0 < g.nodes.len() && e.1 < g.nodes.len()).collect();
    let max_e = shown.iter().map(|e| e.2).max().unwrap_or(1) as f64;
    let edges = shown.iter().map(|e| (e.0, e.1, (1.0 + 7.0 * e.2 as f64 / max_e) * s as f64 / 2.0)).collect();
    let mut legend: Vec<(Rgb, String)> = g.groups.iter().enumerate().map(|(k, l)| (colour(k), l.clone())).collect();
    if g.nodes.iter().any(|n| n.group.is_none_or(|k| k >= g.groups.len())) {
        legend.push((UNGROUPED, "ungrouped".into()));
    }
    Scene { w, h, s, nodes, edges, legend_x: w - legend_w, legend }
}

/// Draws the graph as PNG bytes.
pub fn render_graph_png(g: &GraphPicture) -> Vec<u8> {
    let sc = scene(g);
    let s = sc.s;
    let mut c = Canvas::new(sc.w, sc.h, 0, 0, BG);
    for &(a, b, th) in &sc.edges {
        let (p, q) = (&sc.nodes[a], &sc.nodes[b]);
        if a == b {
            // A loop: a ring around the node.
            let t = th.round().max(1.0);
            disc(&mut c, p.x, p.y, p.r + 2.0 + t, EDGE);
            disc(&mut c, p.x, p.y, p.r + 2.0, BG);
        } else {
            line(&mut c, p.x, p.y, q.x, q.y, th.round().max(1.0) as i64, EDGE);
        }
    }
    for p in &sc.nodes {
        disc(&mut c, p.x, p.y, p.r, outline_colour(p.fill));
        disc(&mut c, p.x, p.y, (p.r - 1.0).max(1.0), p.fill);
    }
    let row = 7 * s + 6 * s;
    for (k, (col, l)) in sc.legend.iter().enumerate() {
        let y = 18 + 24 * s + row * k as i64;
        c.fill(sc.legend_x, y, sc.legend_x + 8 * s, y + 7 * s, *col);
        c.text(sc.legend_x + 8 * s + 6, y, s, &crate::fit(l, ((sc.w - sc.legend_x - 8 * s - 10) / (6 * s)).max(4) as usize), TEXT);
    }
    c.text(10, 10, s + 1, &crate::fit(&g.title, ((sc.w - 20) / (6 * (s + 1))).max(4) as usize), TEXT);
    c.text(10, 10 + 7 * (s + 1) + 4 * s, s, &crate::fit(&g.subtitle, ((sc.w - 20) / (6 * s)).max(4) as usize), MUTED);
    c.to_png()
}

/// Draws the graph as SVG, with a tooltip on every node and edge.
pub fn render_graph_svg(g: &GraphPicture) -> String {
    let sc = scene(g);
    let s = sc.s;
    let mut out = String::new();
    let _ = writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="DejaVu Sans, Helvetica, Arial, sans-serif">"#,
        w = sc.w,
        h = sc.h
    );
    let _ = writeln!(out, r#"<rect width="100%" height="100%" fill="{}"/>"#, hex(BG));
    let shown = g.edges.iter().filter(|e| e.2 >= g.min_edge.max(1) && e.0 < g.nodes.len() && e.1 < g.nodes.len());
    for (&(a, b, th), e) in sc.edges.iter().zip(shown) {
        let (p, q) = (&sc.nodes[a], &sc.nodes[b]);
        let tip = format!("<title>{} – {}: {}</title>", esc(&g.nodes[a].label), esc(&g.nodes[b].label), e.2);
        if a == b {
            let _ = writeln!(out, r#"<circle class="loop" cx="{:.1}" cy="{:.1}" r="{:.1}" fill="none" stroke="{}" stroke-width="{th:.1}">{tip}</circle>"#, p.x, p.y, p.r + 2.0 + th / 2.0, hex(EDGE));
        } else {
            let _ = writeln!(out, r#"<line class="edge" x1="{:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="{}" stroke-opacity="0.8" stroke-width="{th:.1}">{tip}</line>"#, p.x, p.y, q.x, q.y, hex(EDGE));
        }
    }
    for (p, n) in sc.nodes.iter().zip(&g.nodes) {
        let _ = writeln!(
            out,
            r#"<circle class="node" cx="{:.1}" cy="{:.1}" r="{:.1}" fill="{}" stroke="{}"><title>{}: {}</title></circle>"#,
            p.x,
            p.y,
            p.r,
            hex(p.fill),
            hex(outline_colour(p.fill)),
            esc(&n.label),
            n.weight
        );
    }
    let row = 7 * s + 6 * s;
    for (k, (col, l)) in sc.legend.iter().enumerate() {
        let y = 18 + 24 * s + row * k as i64;
        let _ = writeln!(out, r#"<rect x="{}" y="{y}" width="{}" height="{}" fill="{}"/>"#, sc.legend_x, 8 * s, 7 * s, hex(*col));
        let _ = writeln!(out, r#"<text x="{}" y="{}" font-size="{}" fill="{}">{}</text>"#, sc.legend_x + 8 * s + 6, y + 7 * s, 10 * s, hex(TEXT), esc(l));
    }
    let _ = writeln!(out, r#"<text x="10" y="{}" font-size="{}" fill="{}">{}</text>"#, 10 + 7 * (s + 1), 10 * (s + 1), hex(TEXT), esc(&g.title));
    let _ = writeln!(out, r#"<text x="10" y="{}" font-size="{}" fill="{}">{}</text>"#, 10 + 7 * (s + 1) + 11 * s, 10 * s, hex(MUTED), esc(&g.subtitle));
    out.push_str("</svg>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> GraphPicture {
        let node = |w: u64, group: Option<usize>| GraphNode { label: format!("n{w}"), weight: w, group };
        GraphPicture {
            title: "groups".into(),
            subtitle: "3 contexts".into(),
            nodes: vec![node(100, Some(0)), node(80, Some(0)), node(50, None), node(1, Some(1))],
            edges: vec![(0, 1, 500), (0, 0, 200), (1, 2, 3), (2, 3, 100)],
            min_edge: 10,
            groups: vec!["a, b".into(), "d".into()],
            width: 900,
            height: 500,
        }
    }

    #[test]
    fn nodes_take_their_group_colour_and_light_edges_are_hidden() {
        let png = render_graph_png(&sample());
        let mut r = png::Decoder::new(&png[..]).read_info().unwrap();
        let mut buf = vec![0; r.output_buffer_size()];
        let info = r.next_frame(&mut buf).unwrap();
        assert_eq!((info.width, info.height), (900, 500));
        let count = |c: Rgb| buf.chunks_exact(3).filter(|p| p == &c).count();
        assert!(count(colour(0)) > 200 && count(colour(1)) > 20 && count(UNGROUPED) > 50);
        let svg = render_graph_svg(&sample());
        assert_eq!(svg.matches(r#"class="node""#).count(), 4);
        assert_eq!(svg.matches(r#"class="edge""#).count(), 2, "the edge of weight 3 is hidden");
        assert_eq!(svg.matches(r#"class="loop""#).count(), 1);
        assert!(svg.contains("ungrouped") && svg.contains("a, b"));
        // Deterministic, and an empty graph draws too.
        assert_eq!(render_graph_svg(&sample()), svg);
        render_graph_png(&GraphPicture::default());
        assert!(render_graph_svg(&GraphPicture::default()).ends_with("</svg>\n"));
    }
}
