//! Charts of measurements as PNG: scatter plots with error bars and line series over a numeric
//! x axis, with a title, axis labels and a legend. They share the raster, the bitmap font and
//! the palette with the placement pictures; `heaplab frag --plot` and `heaplab study` draw
//! with them.

use crate::raster::Canvas;
use crate::{scale, Rgb, AXIS, BG, GRID, MUTED, PALETTE, PLOT_BG, TEXT};

/// How an axis prints its values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AxisFormat {
    /// Plain numbers with K/M/G suffixes.
    Number,
    /// Fractions printed as percentages (0.25 → "25%").
    Percent,
    /// Bytes with binary units.
    Bytes,
}

/// How a series is drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Style {
    /// Filled circles (with error bars where given).
    Markers,
    /// A polyline through the points in order.
    Line,
}

/// One point; `y_err` > 0 draws an error bar of ± that much.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Point {
    /// x value.
    pub x: f64,
    /// y value.
    pub y: f64,
    /// Half-height of the error bar (0: none).
    pub y_err: f64,
}

/// A named set of points in one colour.
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    /// Shown in the legend.
    pub name: String,
    /// Palette index of its colour.
    pub colour: usize,
    /// How it is drawn.
    pub style: Style,
    /// The points (in x order for lines).
    pub points: Vec<Point>,
}

/// A chart: axes, series and text.
#[derive(Clone, Debug, PartialEq)]
pub struct Chart {
    /// Top line.
    pub title: String,
    /// Second line, smaller (figures, the test used).
    pub subtitle: String,
    /// Under the x axis.
    pub x_label: String,
    /// Beside the y axis.
    pub y_label: String,
    /// How x values print.
    pub x_format: AxisFormat,
    /// How y values print.
    pub y_format: AxisFormat,
    /// Start the x axis at 0 rather than at the smallest value.
    pub x_from_zero: bool,
    /// Start the y axis at 0 rather than at the smallest value.
    pub y_from_zero: bool,
    /// The data.
    pub series: Vec<Series>,
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
}

impl Default for Chart {
    fn default() -> Self {
        Chart {
            title: String::new(),
            subtitle: String::new(),
            x_label: String::new(),
            y_label: String::new(),
            x_format: AxisFormat::Number,
            y_format: AxisFormat::Number,
            x_from_zero: false,
            y_from_zero: false,
            series: Vec::new(),
            width: 1000,
            height: 600,
        }
    }
}

/// The colour of palette entry `k` (wrapping).
pub fn colour(k: usize) -> Rgb {
    PALETTE[k % PALETTE.len()]
}

fn label(v: f64, f: AxisFormat, unit: f64) -> String {
    match f {
        AxisFormat::Number => scale::ticks(v),
        AxisFormat::Percent => format!("{}%", scale::short(v * 100.0, 2)),
        AxisFormat::Bytes => {
            let units = ["B", "KiB", "MiB", "GiB", "TiB"];
            let k = (unit.log2() / 10.0).round() as usize;
            format!("{} {}", scale::short(v / unit, 2), units[k.min(4)])
        }
    }
}

/// Axis range and ticks for values in `[lo, hi]`; bytes axes step in whole units of
/// KiB/MiB/GiB. Returns (min, max, ticks, unit).
fn axis(lo: f64, hi: f64, from_zero: bool, f: AxisFormat, target: usize) -> (f64, f64, Vec<f64>, f64) {
    let (mut lo, mut hi) = if lo.is_finite() && hi.is_finite() { (lo, hi) } else { (0.0, 1.0) };
    if from_zero {
        lo = lo.min(0.0);
    }
    if hi <= lo {
        let pad = if hi.abs() > 0.0 { hi.abs() * 0.05 } else { 1.0 };
        lo -= pad;
        hi += pad;
    } else {
        let pad = (hi - lo) * 0.06;
        hi += pad;
        if !(from_zero && lo == 0.0) {
            lo -= pad;
        }
    }
    if from_zero && lo < 0.0 && lo > -1e-12 {
        lo = 0.0;
    }
    let unit = match f {
        AxisFormat::Bytes => {
            let mut u = 1.0;
            while hi.abs().max(lo.abs()) / u >= 1024.0 {
                u *= 1024.0;
            }
            u
        }
        AxisFormat::Percent => 0.01,
        AxisFormat::Number => 1.0,
    };
    let t = nice_ticks(lo / unit, hi / unit, target).into_iter().map(|v| v * unit).collect();
    (lo, hi, t, unit)
}

/// Multiples of the smallest 1-2-5 × 10^k step (k may be negative) giving at most `target`
/// intervals over `[lo, hi]`.
fn nice_ticks(lo: f64, hi: f64, target: usize) -> Vec<f64> {
    let range = (hi - lo).max(f64::MIN_POSITIVE);
    let mut mag = 10f64.powf((range / target.max(1) as f64).log10().floor());
    let step = 'found: loop {
        for m in [1.0, 2.0, 5.0] {
            if range / (m * mag) <= target.max(1) as f64 {
                break 'found m * mag;
            }
        }
        mag *= 10.0;
    };
    let first = (lo / step).ceil() as i64;
    (first..).map(|k| k as f64 * step).take_while(|&v| v <= hi + step * 1e-9).take(1000).collect()
}

/// Draws a line of thickness `th` from (x0, y0) to (x1, y1) in pixel coordinates.
pub(crate) fn line(c: &mut Canvas, x0: f64, y0: f64, x1: f64, y1: f64, th: i64, col: Rgb) {
    let n = ((x1 - x0).abs().max((y1 - y0).abs()).ceil() as i64).clamp(1, 20_000);
    for k in 0..=n {
        let f = k as f64 / n as f64;
        let (x, y) = ((x0 + (x1 - x0) * f).round() as i64, (y0 + (y1 - y0) * f).round() as i64);
        c.fill(x - th / 2, y - th / 2, x - th / 2 + th, y - th / 2 + th, col);
    }
}

pub(crate) fn disc(c: &mut Canvas, x: f64, y: f64, r: f64, col: Rgb) {
    let ri = r.ceil() as i64;
    let (cx, cy) = (x.round() as i64, y.round() as i64);
    for dy in -ri..=ri {
        for dx in -ri..=ri {
            if ((dx * dx + dy * dy) as f64) <= r * r {
                c.fill(cx + dx, cy + dy, cx + dx + 1, cy + dy + 1, col);
            }
        }
    }
}

/// Draws the chart as PNG bytes.
pub fn render_chart_png(ch: &Chart) -> Vec<u8> {
    let w = ch.width.clamp(crate::MIN_WIDTH, crate::MAX_SIDE) as i64;
    let h = ch.height.clamp(crate::MIN_HEIGHT, crate::MAX_SIDE) as i64;
    let s: i64 = if w >= 800 && h >= 450 { 2 } else { 1 };
    let mut c = Canvas::new(w, h, 0, 0, BG);
    let pts = || ch.series.iter().flat_map(|se| se.points.iter());
    let fold = |f: &dyn Fn(&Point) -> (f64, f64)| pts().map(f).fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), (x, y)| (a.min(x), b.max(y)));
    let (xlo, xhi) = fold(&|p| (p.x, p.x));
    let (ylo, yhi) = fold(&|p| (p.y - p.y_err.max(0.0), p.y + p.y_err.max(0.0)));

    let title_y = 10;
    let sub_y = title_y + 7 * (s + 1) + 4 * s;
    let py0 = if ch.subtitle.is_empty() { sub_y + 4 * s } else { sub_y + 7 * s + 10 * s };
    let bottom = 14 + 18 * s + 7 * s;
    let ph = (h - py0 - bottom).max(20);
    let (y0v, y1v, yt, yu) = axis(ylo, yhi, ch.y_from_zero, ch.y_format, (ph / (7 * s * 5)).max(2) as usize);
    let ylabels: Vec<String> = yt.iter().map(|&v| label(v, ch.y_format, yu)).collect();
    let lw = ylabels.iter().map(|l| crate::text_w(l, s)).max().unwrap_or(0);
    let px0 = 8 + 7 * s + 6 * s + lw + 10;
    let pw = (w - px0 - 20).max(20);
    let (x0v, x1v, xt, xu) = axis(xlo, xhi, ch.x_from_zero, ch.x_format, (pw / (6 * s * 8 + 24)).max(2) as usize);
    let fx = |x: f64| px0 as f64 + (x - x0v) / (x1v - x0v) * pw as f64;
    let fy = |y: f64| (py0 + ph) as f64 - (y - y0v) / (y1v - y0v) * ph as f64;

    c.fill(px0, py0, px0 + pw, py0 + ph, PLOT_BG);
    for (v, l) in yt.iter().zip(&ylabels) {
        let y = fy(*v).round() as i64;
        c.fill(px0, y, px0 + pw, y + 1, GRID);
        c.fill(px0 - 6, y, px0 - 1, y + 1, AXIS);
        c.text(px0 - 9 - crate::text_w(l, s), y - 7 * s / 2, s, l, MUTED);
    }
    for v in &xt {
        let x = fx(*v).round() as i64;
        let l = label(*v, ch.x_format, xu);
        c.fill(x, py0, x + 1, py0 + ph, GRID);
        c.fill(x, py0 + ph + 1, x + 1, py0 + ph + 6, AXIS);
        c.text(x - crate::text_w(&l, s) / 2, py0 + ph + 9, s, &l, MUTED);
    }
    c.fill(px0 - 1, py0, px0, py0 + ph + 1, AXIS);
    c.fill(px0 - 1, py0 + ph, px0 + pw, py0 + ph + 1, AXIS);

    for se in &ch.series {
        let col = colour(se.colour);
        match se.style {
            Style::Line => {
                for p in se.points.windows(2) {
                    line(&mut c, fx(p[0].x), fy(p[0].y), fx(p[1].x), fy(p[1].y), s, col);
                }
            }
            Style::Markers => {
                let dark = crate::outline_colour(col);
                for p in &se.points {
                    let (x, y) = (fx(p.x), fy(p.y));
                    if p.y_err > 0.0 {
                        let (ya, yb) = (fy(p.y - p.y_err), fy(p.y + p.y_err));
                        line(&mut c, x, ya, x, yb, s.max(1), dark);
                        line(&mut c, x - 4.0 * s as f64, ya, x + 4.0 * s as f64, ya, s.max(1), dark);
                        line(&mut c, x - 4.0 * s as f64, yb, x + 4.0 * s as f64, yb, s.max(1), dark);
                    }
                    disc(&mut c, x, y, 3.5 * s as f64, dark);
                    disc(&mut c, x, y, 2.5 * s as f64, col);
                }
            }
        }
    }
    if pts().next().is_none() {
        let t = "no data";
        c.text(px0 + (pw - crate::text_w(t, s + 1)) / 2, py0 + ph / 2, s + 1, t, MUTED);
    }

    // Legend, top right inside the plot, on a translucent backing.
    let named: Vec<&Series> = ch.series.iter().filter(|se| !se.name.is_empty()).collect();
    if !named.is_empty() {
        let row = 7 * s + 6 * s;
        let tw = named.iter().map(|se| crate::text_w(&se.name, s)).max().unwrap_or(0);
        let bw = tw + 12 * s + 16;
        let (bx, by) = (px0 + pw - bw - 8, py0 + 8);
        c.blend(bx, by, bx + bw, by + row * named.len() as i64 + 8, BG, 0.85);
        for (k, se) in named.iter().enumerate() {
            let y = by + 6 + row * k as i64;
            let col = colour(se.colour);
            c.fill(bx + 6, y, bx + 6 + 8 * s, y + 7 * s, col);
            c.text(bx + 12 + 8 * s, y, s, &se.name, TEXT);
        }
    }
    let xl = &ch.x_label;
    c.text(px0 + (pw - crate::text_w(xl, s)) / 2, h - 7 * s - 6, s, xl, TEXT);
    c.vtext(8, py0 + (ph + crate::text_w(&ch.y_label, s)) / 2, s, &ch.y_label, TEXT);
    let title = crate::fit(&ch.title, ((w - 20) / (6 * (s + 1))).max(4) as usize);
    c.text(10, title_y, s + 1, &title, TEXT);
    let sub = crate::fit(&ch.subtitle, ((w - 20) / (6 * s)).max(4) as usize);
    c.text(10, sub_y, s, &sub, MUTED);
    c.to_png()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(png: &[u8]) -> (u32, u32, Vec<u8>) {
        let mut r = png::Decoder::new(png).read_info().unwrap();
        let mut buf = vec![0; r.output_buffer_size()];
        let info = r.next_frame(&mut buf).unwrap();
        (info.width, info.height, buf)
    }

    #[test]
    fn draws_series_in_their_colours() {
        let ch = Chart {
            title: "t".into(),
            series: vec![
                Series { name: "a".into(), colour: 0, style: Style::Markers, points: vec![Point { x: 0.1, y: 5e6, y_err: 1e5 }, Point { x: 0.2, y: 6e6, y_err: 0.0 }] },
                Series { name: "b".into(), colour: 2, style: Style::Line, points: vec![Point { x: 0.0, y: 4e6, y_err: 0.0 }, Point { x: 0.3, y: 7e6, y_err: 0.0 }] },
            ],
            x_format: AxisFormat::Percent,
            y_format: AxisFormat::Bytes,
            ..Default::default()
        };
        let (w, h, px) = decode(&render_chart_png(&ch));
        assert_eq!((w, h), (1000, 600));
        let count = |c: Rgb| px.chunks_exact(3).filter(|p| p == &c).count();
        assert!(count(colour(0)) > 50 && count(colour(2)) > 200);
        // Empty charts and degenerate ranges draw too.
        let (w, _, _) = decode(&render_chart_png(&Chart::default()));
        assert_eq!(w, 1000);
        let one = Chart { series: vec![Series { name: String::new(), colour: 1, style: Style::Markers, points: vec![Point { x: 1.0, y: 1.0, y_err: 0.0 }] }], ..Default::default() };
        decode(&render_chart_png(&one));
    }

    #[test]
    fn labels_read_well() {
        assert_eq!(label(0.25, AxisFormat::Percent, 0.01), "25%");
        assert_eq!(label(0.025, AxisFormat::Percent, 0.01), "2.5%");
        assert_eq!(label(3.0 * 1048576.0, AxisFormat::Bytes, 1048576.0), "3 MiB");
        let (lo, hi, t, u) = axis(5.2e6, 6.1e6, false, AxisFormat::Bytes, 6);
        assert!(lo < 5.2e6 && hi > 6.1e6 && t.len() >= 2 && u == 1048576.0, "{lo} {hi} {t:?}");
    }
}
