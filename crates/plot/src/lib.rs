//! Pictures of placements, charts of measurements ([`chart`]) and grouped graphs ([`graph`]).
//! A placement: time on the x axis, address on the y axis, each buffer a filled
//! rectangle `[lower, upper) × [offset, offset + size)`, with the max load (the lower bound) and
//! the makespan drawn as labelled horizontal lines, and a caption with the figures.
//!
//! An allocator's placement ([`render_mapped_png`], [`render_mapped_svg`]) is drawn the same
//! way on an address axis made of bands, one per memory mapping, with large never-used address
//! ranges cut out ([`mapped`] says how). The time axis is labelled by its [`Clock`].
//!
//! This crate owns drawing only: [`render_png`] rasterises into an RGB pixel buffer and encodes
//! it with the `png` crate; [`render_svg`] writes SVG text. Text in PNGs uses an embedded 5×7
//! bitmap font (no font files, no system libraries). Both renderers share one scene description: the
//! layout, the data-to-pixel mapping, ticks and labels, so the two formats agree pixel for pixel
//! on where every buffer lands.
//!
//! Scale: both handle 10^6 buffers in well under a second of drawing. Every buffer covers at least
//! one pixel (a sub-pixel buffer is never lost), outlines appear only on rectangles at least
//! [`OUTLINE_MIN_PX`] pixels on each side. Large SVGs are the exception described on
//! [`render_svg`]. Arithmetic on coordinates is in `u128`/`f64`, so values near `u64::MAX`
//! draw without overflow.

pub mod chart;
mod font;
pub mod graph;
pub mod mapped;
mod raster;
mod scale;
mod svg;

pub use svg::esc as escape_markup;

use heaplab_model::Buffer;
pub use mapped::{Mapped, Region};

/// What the time axis counts: its label says so.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Clock {
    /// An instance's abstract time (its file does not say what it counts).
    #[default]
    Ticks,
    /// Bytes allocated so far (the thesis' clock; a replay's placed jobs).
    Bytes,
    /// Heap operations so far.
    Events,
    /// Nanoseconds.
    Ns,
}

impl Clock {
    /// The unit, as printed in tooltips: "ticks", "bytes allocated", "events", "ns".
    pub fn unit(self) -> &'static str {
        match self {
            Clock::Ticks => "ticks",
            Clock::Bytes => "bytes allocated",
            Clock::Events => "events",
            Clock::Ns => "ns",
        }
    }

    /// The time axis's label, e.g. "time (bytes allocated)".
    pub fn label(self) -> String {
        format!("time ({})", self.unit())
    }
}

/// Size and title of a picture.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlotOptions {
    /// Width in pixels (SVG user units). Clamped to `[MIN_WIDTH, MAX_SIDE]`.
    pub width: u32,
    /// Height in pixels (SVG user units). Clamped to `[MIN_HEIGHT, MAX_SIDE]`.
    pub height: u32,
    /// Printed at the top; usually the input file name. Empty gives "placement".
    pub title: String,
    /// What the time axis counts.
    pub clock: Clock,
    /// A weight per buffer (a layout's access counts): when given, buffers are coloured on a
    /// light-to-dark heat scale of log(1 + weight) instead of the palette, weight 0 in grey.
    pub weights: Vec<u64>,
}

impl Default for PlotOptions {
    fn default() -> Self {
        PlotOptions {
            width: 1200,
            height: 700,
            title: String::new(),
            clock: Clock::Ticks,
            weights: Vec::new(),
        }
    }
}

/// Smallest width drawn: below it axes and labels no longer fit.
pub const MIN_WIDTH: u32 = 200;
/// Smallest height drawn.
pub const MIN_HEIGHT: u32 = 150;
/// Largest side drawn, so a typo cannot ask for gigabytes of pixels.
pub const MAX_SIDE: u32 = 4096;
/// Rectangles at least this many pixels wide and tall get a darker outline; smaller ones are
/// solid so that dense regions do not turn into a mesh of outlines.
pub const OUTLINE_MIN_PX: i64 = 4;
/// Above this many buffers, SVG output embeds the rectangles as a raster image (see
/// [`render_svg`]).
pub const SVG_RECT_LIMIT: usize = 20_000;

/// Draws the placement as a PNG and returns the file's bytes.
///
/// `offsets[i]` is the offset of `buffers[i]`; if the slices differ in length only the common
/// prefix is drawn (the caption still counts every buffer for the max load).
pub fn render_png(buffers: &[Buffer], offsets: &[u64], opts: &PlotOptions) -> Vec<u8> {
    raster::render(&Scene::new(buffers, offsets, opts))
}

/// Draws the placement as an SVG document.
///
/// Up to [`SVG_RECT_LIMIT`] buffers each become a `<rect class="buf">` with a `<title>` tooltip
/// (id, lifetime, size, offset). Beyond that, a million `<rect>`s would make a file of hundreds
/// of megabytes that no viewer opens comfortably, and at the picture's resolution most of them
/// are smaller than a pixel anyway. So the plot area is rasterised exactly as [`render_png`]
/// does and embedded as a `data:image/png` URI, while axes, ticks, the max-load and makespan
/// lines and all text stay vector. The file size is then bounded by the picture size (about that
/// of the PNG: 1–3 MB for a dense 10^6-buffer picture at 1200×700), not by n.
pub fn render_svg(buffers: &[Buffer], offsets: &[u64], opts: &PlotOptions) -> String {
    svg::render(&Scene::new(buffers, offsets, opts))
}

/// Draws an allocator's placement as a PNG: each block `[lower, upper) × [address, address +
/// size)`, one band per region (memory mapping), large never-used ranges cut out to hatched
/// strips labelled with their size (see [`mapped`]). No max-load or makespan lines (a makespan
/// across mappings means nothing); the caption gives the peak of live bytes instead.
pub fn render_mapped_png(m: &Mapped, opts: &PlotOptions) -> Vec<u8> {
    let l = mapped::layout(m);
    raster::render(&Scene::build(m.blocks, &l.offsets, opts, Some((m, &l))))
}

/// Draws an allocator's placement as SVG, like [`render_mapped_png`] (and with the same
/// raster fallback as [`render_svg`] for many blocks); tooltips give each block's address.
pub fn render_mapped_svg(m: &Mapped, opts: &PlotOptions) -> String {
    let l = mapped::layout(m);
    svg::render(&Scene::build(m.blocks, &l.offsets, opts, Some((m, &l))))
}

type Rgb = [u8; 3];

/// Figure background.
const BG: Rgb = [255, 255, 255];
/// Plot-area background, a shade off white so empty address space reads as "free".
const PLOT_BG: Rgb = [248, 248, 246];
const GRID: Rgb = [228, 228, 226];
const AXIS: Rgb = [90, 90, 90];
const TEXT: Rgb = [25, 25, 25];
const MUTED: Rgb = [85, 85, 85];
const LOAD_LINE: Rgb = [40, 40, 40];
const MAKESPAN_LINE: Rgb = [200, 40, 40];
/// A cut-out unused range inside a mapping: hatched in this over the plot background.
const CUT_HATCH: Rgb = [200, 200, 196];
/// The boundary between two mappings' bands.
const MAPPING_EDGE: Rgb = [120, 120, 118];

/// Tableau 10: distinguishable, colour-blind-aware and calm enough for dense pictures.
const PALETTE: [Rgb; 10] = [
    [78, 121, 167],
    [242, 142, 43],
    [225, 87, 89],
    [118, 183, 178],
    [89, 161, 79],
    [237, 201, 72],
    [176, 122, 161],
    [255, 157, 167],
    [156, 117, 95],
    [186, 176, 172],
];

fn splitmix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

/// Fill colour of the buffer at index `i`: a palette colour picked by a hash of the index (so
/// neighbours in the input rarely match), lightened or darkened a little for more variety.
fn fill_colour(i: usize) -> Rgb {
    let h = splitmix(i as u64);
    let base = PALETTE[(h % PALETTE.len() as u64) as usize];
    // Shade in -2..=2 steps of 10%: towards white when positive, towards black when negative.
    let shade = ((h >> 32) % 5) as i32 - 2;
    base.map(|c| {
        let c = c as f32;
        let v = if shade >= 0 {
            c + (255.0 - c) * 0.10 * shade as f32
        } else {
            c * (1.0 + 0.10 * shade as f32)
        };
        v.round() as u8
    })
}

/// Colour of an unweighted buffer (weight 0) in a weighted picture.
const NO_WEIGHT: Rgb = [205, 205, 200];
/// Ends of the heat scale (light yellow for the least used, dark red for the most).
const HEAT: [Rgb; 3] = [[255, 230, 140], [240, 110, 40], [120, 0, 30]];

/// Fill colours on the heat scale for `weights` (log(1 + w) over the largest).
fn heat_colours(weights: &[u64]) -> Vec<Rgb> {
    let top = weights.iter().copied().max().unwrap_or(0);
    let scale = ((top as f64).ln_1p()).max(f64::MIN_POSITIVE);
    weights
        .iter()
        .map(|&w| {
            if w == 0 {
                return NO_WEIGHT;
            }
            let f = ((w as f64).ln_1p() / scale).clamp(0.0, 1.0) * 2.0;
            let (a, b, t) = if f < 1.0 { (HEAT[0], HEAT[1], f) } else { (HEAT[1], HEAT[2], f - 1.0) };
            [0, 1, 2].map(|k| (a[k] as f64 + (b[k] as f64 - a[k] as f64) * t).round() as u8)
        })
        .collect()
}

/// Outline colour for a fill: the same hue, darker.
fn outline_colour(c: Rgb) -> Rgb {
    c.map(|v| (v as u32 * 6 / 10) as u8)
}

fn hex(c: Rgb) -> String {
    format!("#{:02x}{:02x}{:02x}", c[0], c[1], c[2])
}

/// A labelled horizontal line (max load or makespan).
struct Mark {
    value: f64,
    label: String,
    dashed: bool,
    colour: Rgb,
    /// Label above the line (the upper of the two lines) or below it, so they never overlap.
    above: bool,
}

/// Everything both renderers need: layout in pixels, the data-to-pixel mapping, ticks, lines
/// and text. Pixel coordinates are `i64` with y growing downwards; `(px0, py0)` is the top-left
/// corner of the plot area and address 0 is its bottom edge.
struct Scene<'a> {
    buffers: &'a [Buffer],
    offsets: &'a [u64],
    w: i64,
    h: i64,
    /// Text scale: font cells per pixel (1 for small pictures, 2 from 800×450).
    s: i64,
    px0: i64,
    py0: i64,
    pw: i64,
    ph: i64,
    tmin: u64,
    trange: f64,
    /// Address at the top edge of the plot area.
    top: f64,
    xticks: Vec<(f64, String)>,
    yticks: Vec<(f64, String)>,
    marks: Vec<Mark>,
    title: String,
    caption: String,
    empty: bool,
    x_label: String,
    y_label: &'static str,
    /// Shown in SVG tooltips: the time unit, and each buffer's real address (mapped pictures).
    time_unit: &'static str,
    addresses: Option<&'a [u64]>,
    /// Mapped pictures: the piecewise map of drawn offsets to the plot's height.
    yfrac: Option<&'a mapped::Layout>,
    /// Mapped pictures: strips `[y0, y1)` in data units, with the label of a cut-out range
    /// (`None`: a boundary between mappings).
    strips: Vec<(f64, f64, Option<String>)>,
    /// Mapped pictures: each band's label and its extent `[y0, y1)` in data units.
    bands: Vec<(f64, f64, String)>,
    /// Per-buffer fills on the heat scale, when the options gave weights.
    heat: Option<Vec<Rgb>>,
}

/// Max load as `u128`: the sweep crate's when the sizes cannot overflow `u64`, otherwise a
/// local wide sweep (only absurd inputs get there, and they must draw, not panic).
fn max_load(buffers: &[Buffer]) -> u128 {
    let total: u128 = buffers.iter().map(|b| b.size as u128).sum();
    if total <= u64::MAX as u128 {
        return heaplab_sweep::max_load(buffers) as u128;
    }
    // Frees sort before allocations at equal ticks because lifetimes are half-open.
    let mut ev: Vec<(u64, bool, u64)> = Vec::with_capacity(2 * buffers.len());
    for b in buffers {
        ev.push((b.lower, true, b.size));
        ev.push((b.upper, false, b.size));
    }
    ev.sort_unstable();
    let (mut load, mut best) = (0i128, 0i128);
    for (_, alloc, size) in ev {
        load += if alloc { size as i128 } else { -(size as i128) };
        best = best.max(load);
    }
    best as u128
}

/// Text width in pixels at scale `s` for the bitmap font (5 cells + 1 gap per char).
fn text_w(text: &str, s: i64) -> i64 {
    let n = text.chars().count() as i64;
    if n == 0 {
        0
    } else {
        n * 6 * s - s
    }
}

/// Shortens `text` to at most `max_chars`, keeping the end (the file name of a path) behind "...".
fn fit(text: &str, max_chars: usize) -> String {
    let n = text.chars().count();
    if n <= max_chars {
        return text.to_string();
    }
    let keep = max_chars.saturating_sub(3);
    format!("...{}", text.chars().skip(n - keep).collect::<String>())
}

impl<'a> Scene<'a> {
    fn new(buffers: &'a [Buffer], offsets: &'a [u64], opts: &PlotOptions) -> Scene<'a> {
        Scene::build(buffers, offsets, opts, None)
    }

    /// The scene of a placement; with `mapped`, of an allocator's placement whose offsets are
    /// the layout's drawn offsets.
    fn build(buffers: &'a [Buffer], offsets: &'a [u64], opts: &PlotOptions, mapped: Option<(&Mapped<'a>, &'a mapped::Layout)>) -> Scene<'a> {
        let m = buffers.len().min(offsets.len());
        let (drawn, offsets) = (&buffers[..m], &offsets[..m]);
        let w = opts.width.clamp(MIN_WIDTH, MAX_SIDE) as i64;
        let h = opts.height.clamp(MIN_HEIGHT, MAX_SIDE) as i64;
        let s: i64 = if w >= 800 && h >= 450 { 2 } else { 1 };

        let max_load = max_load(buffers);
        let makespan = drawn
            .iter()
            .zip(offsets)
            .map(|(b, &o)| o as u128 + b.size as u128)
            .max()
            .unwrap_or(0);
        let (tmin, tmax) = if drawn.is_empty() {
            (0, 1)
        } else {
            let lo = drawn.iter().map(|b| b.lower).min().unwrap_or(0);
            let hi = drawn.iter().map(|b| b.upper).max().unwrap_or(1);
            (lo, hi.max(lo.saturating_add(1)))
        };
        let trange = ((tmax - tmin) as f64).max(1.0);
        // Headroom above the higher line for its label; a mapped picture has no lines.
        let top = match mapped {
            Some((_, l)) => (l.total as f64).max(1.0),
            None => (makespan.max(max_load) as f64 * 1.08).max(1.0),
        };

        // Vertical layout: title, caption, plot, tick labels, axis label.
        let title_y = 10;
        let caption_y = title_y + 7 * (s + 1) + 4 * s;
        let py0 = caption_y + 7 * s + 8 * s;
        let bottom = 14 + 18 * s;
        let ph = (h - py0 - bottom).max(10);

        let yticks: Vec<(f64, String)> = match mapped {
            Some((_, l)) => l.ticks(ph, s),
            None => scale::address_ticks(top, (ph / (7 * s * 5)).max(2) as usize)
                .into_iter()
                .map(|v| (v, scale::bytes(v)))
                .collect(),
        };
        let label_w = yticks.iter().map(|(_, l)| text_w(l, s)).max().unwrap_or(0);
        let px0 = 8 + 7 * s + 4 * s + label_w + 10;
        let right = 16 + 9 * s;
        let pw = (w - px0 - right).max(10);
        let xticks: Vec<(f64, String)> = scale::time_ticks(
            tmin as f64,
            tmax as f64,
            (pw / (6 * s * 7 + 24)).max(2) as usize,
        )
        .into_iter()
        .map(|v| (v, scale::ticks(v)))
        .collect();

        let (l, mk) = (max_load as f64, makespan as f64);
        let mut marks = Vec::new();
        if !drawn.is_empty() && mapped.is_none() {
            // Makespan first so that when the two coincide the dashed max load shows on top.
            marks.push(Mark {
                value: mk,
                label: format!("makespan {}", scale::bytes(mk)),
                dashed: false,
                colour: MAKESPAN_LINE,
                above: mk >= l,
            });
            marks.push(Mark {
                value: l,
                label: format!("max load {}", scale::bytes(l)),
                dashed: true,
                colour: LOAD_LINE,
                above: l > mk,
            });
        }

        let title = if opts.title.is_empty() {
            "placement".to_string()
        } else {
            opts.title.clone()
        };
        let title = fit(&title, ((w - 20) / (6 * (s + 1))).max(4) as usize);
        let caption = if let Some((_, lay)) = mapped {
            let mut c = format!(
                "n={} blocks, {} mapping{}, peak live {}",
                scale::thousands(buffers.len() as u128),
                lay.regions,
                if lay.regions == 1 { "" } else { "s" },
                scale::bytes(l)
            );
            if lay.cut > 0 {
                c.push_str(&format!("; unused ranges >= {} cut (hatched)", scale::bytes(lay.cut_from as f64)));
            }
            if lay.rescaled {
                c.push_str("; bands not to one scale");
            }
            c
        } else if buffers.is_empty() {
            "n=0, no buffers".to_string()
        } else {
            let frag = if max_load > 0 {
                format!("{:.2}%", (makespan as f64 - l) / l * 100.0)
            } else {
                "n/a".to_string()
            };
            format!(
                "n={}, max load {}, makespan {}, fragmentation {}",
                scale::thousands(buffers.len() as u128),
                scale::bytes(l),
                scale::bytes(mk),
                frag
            )
        };
        let heat = (!opts.weights.is_empty()).then(|| heat_colours(&opts.weights));
        let caption = if heat.is_some() { format!("{caption}; colour: accesses (log), grey = none") } else { caption };
        let caption = fit(&caption, ((w - 20) / (6 * s)).max(4) as usize);
        let (mut strips, mut bands) = (Vec::new(), Vec::new());
        if let Some((mp, lay)) = mapped {
            for st in &lay.strips {
                let label = st.unused.map(|u| format!("{} unused", scale::bytes(u as f64)));
                strips.push((st.y0 as f64, st.y1 as f64, label));
            }
            for seg in &lay.segments {
                let name = mp.regions.get(seg.region as usize).map_or("", |r| r.name.as_str());
                let name = if name.is_empty() { "mapping" } else { name };
                let y1 = seg.y.saturating_add(seg.hi - seg.lo);
                bands.push((seg.y as f64, y1 as f64, format!("{name} @ 0x{:x}", seg.base)));
            }
        }

        Scene {
            buffers: drawn,
            offsets,
            w,
            h,
            s,
            px0,
            py0,
            pw,
            ph,
            tmin,
            trange,
            top,
            xticks,
            yticks,
            marks,
            title,
            caption,
            empty: drawn.is_empty(),
            x_label: opts.clock.label(),
            y_label: if mapped.is_some() { "address (per mapping)" } else { "address" },
            time_unit: opts.clock.unit(),
            addresses: mapped.map(|(mp, _)| mp.addresses),
            yfrac: mapped.map(|(_, l)| l),
            strips,
            bands,
            heat,
        }
    }

    /// Fill colour of buffer `i`: its heat colour in a weighted picture, else the palette's.
    fn fill(&self, i: usize) -> Rgb {
        match &self.heat {
            Some(h) => h.get(i).copied().unwrap_or(NO_WEIGHT),
            None => fill_colour(i),
        }
    }

    fn title_y(&self) -> i64 {
        10
    }

    fn caption_y(&self) -> i64 {
        self.title_y() + 7 * (self.s + 1) + 4 * self.s
    }

    /// x pixel (fractional) of tick `t`; the subtraction is exact in integers first.
    fn fx(&self, t: u64) -> f64 {
        self.px0 as f64 + t.saturating_sub(self.tmin) as f64 / self.trange * self.pw as f64
    }

    /// x pixel of a tick value already in `f64` (axis ticks).
    fn fxf(&self, t: f64) -> f64 {
        self.px0 as f64 + (t - self.tmin as f64) / self.trange * self.pw as f64
    }

    /// y pixel (fractional) of address `v`.
    fn fy(&self, v: f64) -> f64 {
        let f = match self.yfrac {
            Some(l) => l.frac(v),
            None => v / self.top,
        };
        (self.py0 + self.ph) as f64 - f * self.ph as f64
    }

    /// The pixel rectangle `[x0, x1) × [y0, y1)` covered by buffer `i`: edges rounded to the
    /// nearest pixel boundary (so neighbours share edges without gaps or overlaps), widened to
    /// at least one pixel each way, clipped to the plot area.
    fn cell(&self, i: usize) -> (i64, i64, i64, i64) {
        let b = &self.buffers[i];
        let lo = self.offsets[i] as u128;
        let hi = lo + b.size as u128;
        let (xmin, xmax) = (self.px0, self.px0 + self.pw);
        let (ymin, ymax) = (self.py0, self.py0 + self.ph);
        let x0 = (self.fx(b.lower).round() as i64).clamp(xmin, xmax - 1);
        let x1 = (self.fx(b.upper).round() as i64).clamp(x0 + 1, xmax);
        let y1 = (self.fy(lo as f64).round() as i64).clamp(ymin + 1, ymax);
        let y0 = (self.fy(hi as f64).round() as i64).clamp(ymin, y1 - 1);
        (x0, y0, x1, y1)
    }
}

#[cfg(test)]
mod tests;
