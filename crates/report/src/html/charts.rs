//! The page's charts as inline SVG, drawn here so that they read without JavaScript: the heap
//! over time (one or two series, the peak and the flame graph's moments marked), histograms
//! (blocks as bars, their bytes as a line on a second axis) and the allocators' peaks beside
//! the plan and the lower bound. Colours come from the page's CSS classes, so they follow its
//! light or dark scheme.

use super::{bytes, esc, sig3};
use crate::model::{AllocatorRow, Bin, TimePoint};
use std::fmt::Write;

/// A size as an axis label: short, in binary units ("64 B", "1 KiB", "1.5 MiB").
pub(super) fn size_label(v: u64) -> String {
    let units = &BYTE_UNITS;
    let u = units.iter().rev().find(|u| u.0 <= v as f64).unwrap_or(&units[0]);
    format!("{} {}", sig3(v as f64 / u.0), u.1)
}

/// Points of a timeline drawn at most (more are merged, keeping each group's maximum).
const MAX_POINTS: usize = 2400;

/// The step of 1, 2 or 5 times a power of ten nearest to `raw`.
fn nice_step(raw: f64) -> f64 {
    if raw <= 0.0 || !raw.is_finite() {
        return 1.0;
    }
    let p = 10f64.powf(raw.log10().floor());
    let m = raw / p;
    p * if m < 1.5 {
        1.0
    } else if m < 3.0 {
        2.0
    } else if m < 7.0 {
        5.0
    } else {
        10.0
    }
}

/// Ticks from 0 up to at least `max` in about four steps, labelled in one unit chosen among
/// `units` (value of one unit, its name): the largest not above `max`.
fn ticks(max: f64, units: &[(f64, &str)]) -> (f64, Vec<(f64, String)>) {
    let max = max.max(1.0);
    let unit = units.iter().rev().find(|u| u.0 <= max).unwrap_or(&units[0]);
    let step = nice_step(max / unit.0 / 4.0).max(if unit.0 == 1.0 { 1.0 } else { 0.0 });
    let n = (max / unit.0 / step - 1e-9).ceil().max(1.0) as usize;
    let ticks = (0..=n)
        .map(|k| {
            let v = k as f64 * step;
            let s = if k == 0 {
                "0".to_string()
            } else if matches!(unit.1, "" | "k" | "M") {
                format!("{}{}", sig3(v), unit.1)
            } else {
                format!("{} {}", sig3(v), unit.1)
            };
            (v * unit.0, s)
        })
        .collect();
    (n as f64 * step * unit.0, ticks)
}

const BYTE_UNITS: [(f64, &str); 5] =
    [(1.0, "B"), (1024.0, "KiB"), (1048576.0, "MiB"), (1073741824.0, "GiB"), (1099511627776.0, "TiB")];
const TIME_UNITS: [(f64, &str); 4] = [(1.0, "ns"), (1e3, "µs"), (1e6, "ms"), (1e9, "s")];
const COUNT_UNITS: [(f64, &str); 3] = [(1.0, ""), (1e3, "k"), (1e6, "M")];

/// The heap over time: each series `(css class, points)` as a line (the first also as an area),
/// the peak `(ns, bytes)` marked and labelled, and the given moments as ticks under the axis
/// with a cursor on the first.
pub(super) fn timeline(series: &[(&str, &[TimePoint])], tmax: u64, peak: Option<(u64, u64)>, moments: &[u64]) -> String {
    const W: f64 = 1200.0;
    const H: f64 = 250.0;
    const L: f64 = 74.0;
    const R: f64 = 16.0;
    const T: f64 = 14.0;
    const B: f64 = 40.0;
    let (pw, ph) = (W - L - R, H - T - B);
    let ymax = series.iter().flat_map(|s| s.1.iter().map(|p| p.live_bytes)).chain(peak.map(|p| p.1)).max().unwrap_or(0);
    let (ytop, yt) = ticks(ymax as f64, &BYTE_UNITS);
    let (_, mut xt) = ticks(tmax as f64, &TIME_UNITS);
    let xtop = (tmax as f64).max(1.0);
    xt.retain(|t| t.0 <= xtop);
    let mut o = String::new();
    let _ = write!(
        o,
        "<svg id=\"timeline-svg\" class=\"chart timeline\" viewBox=\"0 0 {W} {H}\" role=\"img\" \
         aria-label=\"live heap bytes over time\" data-l=\"{L}\" data-w=\"{pw}\" data-tmax=\"{xtop}\">"
    );
    if series.iter().all(|s| s.1.is_empty()) {
        let _ = write!(o, "<text x=\"{}\" y=\"{}\" class=\"empty\">No timeline in this report.</text></svg>", W / 2.0, H / 2.0);
        return o;
    }
    let sx = |ns: f64| L + pw * ns / xtop;
    let sy = |b: f64| T + ph - ph * b / ytop.max(1.0);
    for (v, s) in &yt {
        let y = sy(*v);
        let _ = write!(o, "<line class=\"grid\" x1=\"{L}\" x2=\"{}\" y1=\"{y:.1}\" y2=\"{y:.1}\"/><text class=\"yl\" x=\"{}\" y=\"{:.1}\">{s}</text>", L + pw, L - 6.0, y + 4.0);
    }
    for (v, s) in &xt {
        let x = sx(*v);
        let anchor = if x > L + pw - 20.0 { " text-anchor=\"end\"" } else { "" };
        let _ = write!(o, "<text class=\"xl\" x=\"{x:.1}\" y=\"{}\"{anchor}>{s}</text>", T + ph + 28.0);
    }
    let _ = write!(o, "<line class=\"axis\" x1=\"{L}\" x2=\"{}\" y1=\"{}\" y2=\"{}\"/>", L + pw, T + ph, T + ph);
    for (k, (class, pts)) in series.iter().enumerate() {
        let pts = thin(pts);
        if pts.is_empty() {
            continue;
        }
        let mut line = String::new();
        for (i, p) in pts.iter().enumerate() {
            let _ = write!(line, "{}{:.1},{:.1}", if i == 0 { "M" } else { "L" }, sx(p.ns as f64), sy(p.live_bytes as f64));
        }
        if k == 0 && series.len() == 1 {
            let _ = write!(
                o,
                "<path class=\"area {class}\" d=\"M{:.1},{:.1}{}L{:.1},{:.1}Z\"/>",
                sx(pts[0].ns as f64),
                T + ph,
                line.replacen('M', "L", 1),
                sx(pts[pts.len() - 1].ns as f64),
                T + ph
            );
        }
        let _ = write!(o, "<path class=\"line {}\" d=\"{line}\"/>", esc(class));
    }
    for (i, &m) in moments.iter().enumerate() {
        let x = sx(m as f64);
        let _ = write!(o, "<line class=\"moment\" data-i=\"{i}\" x1=\"{x:.1}\" x2=\"{x:.1}\" y1=\"{}\" y2=\"{}\"/>", T + ph + 2.0, T + ph + 10.0);
    }
    if let Some(&m) = moments.first() {
        let x = sx(m as f64);
        let _ = write!(o, "<line id=\"cursor\" class=\"cursor\" x1=\"{x:.1}\" x2=\"{x:.1}\" y1=\"{T}\" y2=\"{}\"/>", T + ph);
    }
    if let Some((ns, b)) = peak {
        let (x, y) = (sx(ns as f64), sy(b as f64));
        let right = x > L + pw * 0.7;
        let _ = write!(
            o,
            "<circle class=\"peak\" cx=\"{x:.1}\" cy=\"{y:.1}\" r=\"4\"/><text class=\"peaklabel\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"{}\">peak {} at {}</text>",
            if right { x - 8.0 } else { x + 8.0 },
            (y + 4.0).max(T + 10.0),
            if right { "end" } else { "start" },
            bytes(b),
            super::dur(ns)
        );
    }
    // Transparent on top, so that a click anywhere on the plot picks a moment.
    let _ = write!(o, "<rect class=\"hit\" x=\"{L}\" y=\"{T}\" width=\"{pw}\" height=\"{}\"/></svg>", ph + 12.0);
    o
}

/// At most [`MAX_POINTS`] points: consecutive ones merged into their maximum.
fn thin(pts: &[TimePoint]) -> Vec<TimePoint> {
    if pts.len() <= MAX_POINTS {
        return pts.to_vec();
    }
    let per = pts.len().div_ceil(MAX_POINTS);
    pts.chunks(per).map(|c| *c.iter().max_by_key(|p| p.live_bytes).unwrap_or(&c[0])).collect()
}

/// A histogram: blocks per bin as bars (left axis), their bytes as a line (right axis); bins
/// labelled by their lower bound with `fmt`, empty bins at either end left out.
pub(super) fn histogram(bins: &[Bin], fmt: fn(u64) -> String) -> String {
    const W: f64 = 590.0;
    const H: f64 = 230.0;
    const L: f64 = 52.0;
    const R: f64 = 68.0;
    const T: f64 = 12.0;
    const B: f64 = 36.0;
    let (pw, ph) = (W - L - R, H - T - B);
    let mut o = format!("<svg class=\"chart hist\" viewBox=\"0 0 {W} {H}\" role=\"img\">");
    let first = bins.iter().position(|b| b.count > 0);
    let last = bins.iter().rposition(|b| b.count > 0);
    let (Some(first), Some(last)) = (first, last) else {
        let _ = write!(o, "<text x=\"{}\" y=\"{}\" class=\"empty\">No blocks.</text></svg>", W / 2.0, H / 2.0);
        return o;
    };
    let bins = &bins[first..=last];
    let (ctop, ct) = ticks(bins.iter().map(|b| b.count).max().unwrap_or(1) as f64, &COUNT_UNITS);
    let (btop, bt) = ticks(bins.iter().map(|b| b.bytes).max().unwrap_or(1) as f64, &BYTE_UNITS);
    let bw = pw / bins.len() as f64;
    let cy = |c: f64| T + ph - ph * c / ctop.max(1.0);
    let by = |b: f64| T + ph - ph * b / btop.max(1.0);
    for (v, s) in &ct {
        let y = cy(*v);
        let _ = write!(o, "<line class=\"grid\" x1=\"{L}\" x2=\"{}\" y1=\"{y:.1}\" y2=\"{y:.1}\"/><text class=\"yl\" x=\"{}\" y=\"{:.1}\">{s}</text>", L + pw, L - 5.0, y + 4.0);
    }
    for (v, s) in &bt {
        let _ = write!(o, "<text class=\"yr\" x=\"{}\" y=\"{:.1}\">{s}</text>", L + pw + 5.0, by(*v) + 4.0);
    }
    let every = bins.len().div_ceil(7);
    let mut line = String::new();
    for (i, b) in bins.iter().enumerate() {
        let x = L + i as f64 * bw;
        let y = cy(b.count as f64);
        let _ = write!(
            o,
            "<g><title>{} to {}: {} blocks, {}</title><rect class=\"bar\" x=\"{:.1}\" y=\"{y:.1}\" width=\"{:.1}\" height=\"{:.1}\"/></g>",
            esc(&fmt(b.lo)),
            esc(&fmt(b.hi)),
            super::count(b.count),
            bytes(b.bytes),
            x + 1.0,
            (bw - 2.0).max(0.5),
            T + ph - y
        );
        let _ = write!(line, "{}{:.1},{:.1}", if i == 0 { "M" } else { "L" }, x + bw / 2.0, by(b.bytes as f64));
        if i % every == 0 {
            let _ = write!(o, "<text class=\"xl\" x=\"{:.1}\" y=\"{}\">{}</text>", x + bw / 2.0, T + ph + 16.0, esc(&fmt(b.lo)));
        }
    }
    let _ = write!(o, "<path class=\"line bytes\" d=\"{line}\"/><line class=\"axis\" x1=\"{L}\" x2=\"{}\" y1=\"{}\" y2=\"{}\"/></svg>", L + pw, T + ph, T + ph);
    o
}

/// Each allocator's peak as a bar, with the plan and the lower bound as labelled lines.
pub(super) fn allocators(rows: &[AllocatorRow], plan: Option<u64>, bound: Option<u64>) -> String {
    const W: f64 = 560.0;
    const L: f64 = 96.0;
    const R: f64 = 76.0;
    const T: f64 = 30.0;
    const ROW: f64 = 26.0;
    let h = T + ROW * rows.len() as f64 + 8.0;
    let pw = W - L - R;
    let top = rows.iter().map(|a| a.peak_bytes).chain(plan).chain(bound).max().unwrap_or(1).max(1) as f64;
    let sx = |b: u64| L + pw * b as f64 / top;
    let mut o = format!("<svg class=\"chart alloc\" viewBox=\"0 0 {W} {h}\" role=\"img\" aria-label=\"peak per allocator\">");
    for (i, a) in rows.iter().enumerate() {
        let y = T + i as f64 * ROW;
        let _ = write!(
            o,
            "<text class=\"yl\" x=\"{}\" y=\"{:.1}\">{}</text><rect class=\"bar\" x=\"{L}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{}\"/><text x=\"{:.1}\" y=\"{:.1}\">{}</text>",
            L - 6.0,
            y + 16.0,
            esc(&super::short(&a.name, 14)),
            y + 4.0,
            (sx(a.peak_bytes) - L).max(0.5),
            ROW - 8.0,
            sx(a.peak_bytes) + 4.0,
            y + 16.0,
            bytes(a.peak_bytes)
        );
    }
    for (v, class, name, dy) in [(plan, "plan", "plan", 10.0), (bound, "bound", "lower bound", 22.0)] {
        if let Some(v) = v {
            let x = sx(v);
            let _ = write!(
                o,
                "<line class=\"ref {class}\" x1=\"{x:.1}\" x2=\"{x:.1}\" y1=\"{}\" y2=\"{:.1}\"/><text class=\"reflabel {class}\" x=\"{x:.1}\" y=\"{dy}\">{name} {}</text>",
                T - 4.0,
                h - 4.0,
                bytes(v)
            );
        }
    }
    o.push_str("</svg>");
    o
}
