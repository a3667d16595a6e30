//! Rasterising a [`Scene`] into an RGB pixel buffer and encoding it as PNG.

use crate::font::{ink, GLYPH_H, GLYPH_W};
use crate::{Rgb, Scene};

/// An RGB image whose pixel (0, 0) sits at scene coordinates `(ox, oy)`. Drawing takes scene
/// coordinates and clips, so the same code draws the whole figure or just the plot area.
pub(crate) struct Canvas {
    w: i64,
    h: i64,
    ox: i64,
    oy: i64,
    pix: Vec<u8>,
}

impl Canvas {
    pub(crate) fn new(w: i64, h: i64, ox: i64, oy: i64, bg: Rgb) -> Canvas {
        let mut pix = Vec::with_capacity((w * h * 3) as usize);
        for _ in 0..w * h {
            pix.extend_from_slice(&bg);
        }
        Canvas { w, h, ox, oy, pix }
    }

    /// Clips `[x0, x1) × [y0, y1)` (scene coordinates) to the canvas, in canvas coordinates.
    fn clip(&self, x0: i64, y0: i64, x1: i64, y1: i64) -> Option<(usize, usize, usize, usize)> {
        let (x0, x1) = ((x0 - self.ox).max(0), (x1 - self.ox).min(self.w));
        let (y0, y1) = ((y0 - self.oy).max(0), (y1 - self.oy).min(self.h));
        (x0 < x1 && y0 < y1).then_some((x0 as usize, y0 as usize, x1 as usize, y1 as usize))
    }

    /// Fills `[x0, x1) × [y0, y1)`.
    pub(crate) fn fill(&mut self, x0: i64, y0: i64, x1: i64, y1: i64, c: Rgb) {
        if let Some((x0, y0, x1, y1)) = self.clip(x0, y0, x1, y1) {
            let w = self.w as usize;
            for y in y0..y1 {
                for px in self.pix[(y * w + x0) * 3..(y * w + x1) * 3].chunks_exact_mut(3) {
                    px.copy_from_slice(&c);
                }
            }
        }
    }

    /// Mixes `c` over `[x0, x1) × [y0, y1)` with opacity `alpha` (label backgrounds).
    pub(crate) fn blend(&mut self, x0: i64, y0: i64, x1: i64, y1: i64, c: Rgb, alpha: f32) {
        if let Some((x0, y0, x1, y1)) = self.clip(x0, y0, x1, y1) {
            let w = self.w as usize;
            for y in y0..y1 {
                for px in self.pix[(y * w + x0) * 3..(y * w + x1) * 3].chunks_exact_mut(3) {
                    for (v, &ck) in px.iter_mut().zip(&c) {
                        *v = (*v as f32 * (1.0 - alpha) + ck as f32 * alpha).round() as u8;
                    }
                }
            }
        }
    }

    /// Mixes colour `c` (components 0..=255) into one pixel with opacity `alpha`.
    pub(crate) fn mix_pixel(&mut self, x: i64, y: i64, c: [f32; 3], alpha: f32) {
        let (x, y) = (x - self.ox, y - self.oy);
        if x >= 0 && y >= 0 && x < self.w && y < self.h {
            let i = ((y * self.w + x) * 3) as usize;
            for (v, ck) in self.pix[i..i + 3].iter_mut().zip(c) {
                *v = (*v as f32 * (1.0 - alpha) + ck * alpha).round() as u8;
            }
        }
    }

    /// Draws the outline of `[x0, x1) × [y0, y1)`, one pixel thick, inside the rectangle.
    fn frame(&mut self, x0: i64, y0: i64, x1: i64, y1: i64, c: Rgb) {
        self.fill(x0, y0, x1, y0 + 1, c);
        self.fill(x0, y1 - 1, x1, y1, c);
        self.fill(x0, y0, x0 + 1, y1, c);
        self.fill(x1 - 1, y0, x1, y1, c);
    }

    /// A horizontal line `thick` pixels thick with its top at `y`, optionally dashed.
    fn hline(&mut self, x0: i64, x1: i64, y: i64, thick: i64, c: Rgb, dashed: bool) {
        if !dashed {
            return self.fill(x0, y, x1, y + thick, c);
        }
        let (on, off) = (8 * thick, 5 * thick);
        let mut x = x0;
        while x < x1 {
            self.fill(x, y, (x + on).min(x1), y + thick, c);
            x += on + off;
        }
    }

    /// Text in the bitmap font with its top-left corner at `(x, y)`, `s` pixels per font cell.
    pub(crate) fn text(&mut self, x: i64, y: i64, s: i64, text: &str, c: Rgb) {
        for (k, ch) in text.chars().enumerate() {
            let gx = x + k as i64 * 6 * s;
            for row in 0..GLYPH_H {
                for col in 0..GLYPH_W {
                    if ink(ch, col, row) {
                        let (cx, cy) = (gx + col as i64 * s, y + row as i64 * s);
                        self.fill(cx, cy, cx + s, cy + s, c);
                    }
                }
            }
        }
    }

    /// Text turned 90° anticlockwise (reading upwards) with its baseline-left corner at
    /// `(x, y)`: the glyph top faces left.
    pub(crate) fn vtext(&mut self, x: i64, y: i64, s: i64, text: &str, c: Rgb) {
        for (k, ch) in text.chars().enumerate() {
            let gy = y - k as i64 * 6 * s;
            for row in 0..GLYPH_H {
                for col in 0..GLYPH_W {
                    if ink(ch, col, row) {
                        let (cx, cy) = (x + row as i64 * s, gy - (col as i64 + 1) * s);
                        self.fill(cx, cy, cx + s, cy + s, c);
                    }
                }
            }
        }
    }

    /// PNG file bytes (8-bit RGB).
    pub(crate) fn to_png(&self) -> Vec<u8> {
        let mut out = Vec::new();
        {
            let mut enc = png::Encoder::new(&mut out, self.w as u32, self.h as u32);
            enc.set_color(png::ColorType::Rgb);
            enc.set_depth(png::BitDepth::Eight);
            // Flat colour areas compress well even at the fast setting, and it keeps 8k×8k fast.
            enc.set_compression(png::Compression::Fast);
            // Writing into a Vec cannot fail, and the dimensions are clamped to valid sizes.
            let mut w = enc.write_header().expect("PNG header for a clamped size");
            w.write_image_data(&self.pix)
                .expect("PNG data of the declared size");
        }
        out
    }
}

/// The plot area: background, grid, buffers. Shared with the SVG renderer for large inputs.
pub(crate) fn plot_area(c: &mut Canvas, sc: &Scene) {
    let (x0, y0, x1, y1) = (sc.px0, sc.py0, sc.px0 + sc.pw, sc.py0 + sc.ph);
    c.fill(x0, y0, x1, y1, crate::PLOT_BG);
    for (v, _) in &sc.yticks {
        let y = sc.fy(*v).round() as i64;
        c.fill(x0, y, x1, y + 1, crate::GRID);
    }
    for (v, _) in &sc.xticks {
        let x = sc.fxf(*v).round() as i64;
        c.fill(x, y0, x + 1, y1, crate::GRID);
    }
    // Buffers at least a pixel in both directions are drawn solid. Thinner ones would turn a
    // dense region into confetti where the last buffer drawn decides each pixel's colour and
    // free space between them vanishes; instead they are accumulated per pixel (covered area
    // and area-weighted colour) and mixed over the background by coverage, so density and
    // fragmentation show as lightness. Every touched pixel gets at least MIN_INK opacity, so no
    // buffer disappears however small.
    let mut acc: Vec<[f32; 4]> = Vec::new();
    for i in 0..sc.buffers.len() {
        let b = &sc.buffers[i];
        let lo = sc.offsets[i] as u128;
        let hi = lo + b.size as u128;
        let (fx0, fx1) = (sc.fx(b.lower), sc.fx(b.upper));
        let (fy0, fy1) = (sc.fy(hi as f64), sc.fy(lo as f64));
        let fill = sc.fill(i);
        if fx1 - fx0 >= 1.0 && fy1 - fy0 >= 1.0 {
            let (bx0, by0, bx1, by1) = sc.cell(i);
            c.fill(bx0, by0, bx1, by1, fill);
            if bx1 - bx0 >= crate::OUTLINE_MIN_PX && by1 - by0 >= crate::OUTLINE_MIN_PX {
                c.frame(bx0, by0, bx1, by1, crate::outline_colour(fill));
            }
            continue;
        }
        if acc.is_empty() {
            acc = vec![[0.0; 4]; (sc.pw * sc.ph) as usize];
        }
        // Plot-area coordinates, clipped; each axis visits at least one pixel.
        let span = |a: f64, b: f64, len: i64| {
            let (a, b) = (a.clamp(0.0, len as f64), b.clamp(0.0, len as f64));
            let first = (a.floor() as i64).min(len - 1);
            let last = (b.ceil() as i64 - 1).clamp(first, len - 1);
            (a, b, first, last)
        };
        let (ax, bx, cx0, cx1) = span(fx0 - sc.px0 as f64, fx1 - sc.px0 as f64, sc.pw);
        let (ay, by, cy0, cy1) = span(fy0 - sc.py0 as f64, fy1 - sc.py0 as f64, sc.ph);
        // Overlap of [a, b] with pixel [p, p + 1], kept positive so the pixel counts as touched.
        let ov =
            |a: f64, b: f64, p: i64| (b.min(p as f64 + 1.0) - a.max(p as f64)).max(1e-6) as f32;
        for py in cy0..=cy1 {
            let oy = ov(ay, by, py);
            let row = (py * sc.pw) as usize;
            for px in cx0..=cx1 {
                let a = ov(ax, bx, px) * oy;
                let cell = &mut acc[row + px as usize];
                cell[0] += a;
                for k in 0..3 {
                    cell[k + 1] += a * fill[k] as f32;
                }
            }
        }
    }
    if !acc.is_empty() {
        for py in 0..sc.ph {
            for px in 0..sc.pw {
                let [a, r, g, b] = acc[(py * sc.pw + px) as usize];
                if a > 0.0 {
                    let mix = [r / a, g / a, b / a];
                    let alpha = a.clamp(MIN_INK, 1.0);
                    c.mix_pixel(sc.px0 + px, sc.py0 + py, mix, alpha);
                }
            }
        }
    }
}

/// The strips of a mapped picture: a cut-out unused range is hatched and labelled with its
/// size where it is tall enough; a boundary between mappings is a solid line.
fn strips(c: &mut Canvas, sc: &Scene) {
    let (x0, x1) = (sc.px0, sc.px0 + sc.pw);
    for (lo, hi, label) in &sc.strips {
        let (ya, yb) = (sc.fy(*hi).round() as i64, sc.fy(*lo).round() as i64);
        let (ya, yb) = (ya.min(yb - 1), yb);
        match label {
            None => {
                let mid = (ya + yb) / 2;
                c.fill(x0, ya, x1, yb, crate::BG);
                c.fill(x0, mid - sc.s / 2, x1, mid - sc.s / 2 + sc.s.max(1), crate::MAPPING_EDGE);
            }
            Some(text) => {
                c.fill(x0, ya, x1, yb, crate::BG);
                // Diagonal hatching, 6 px apart.
                for y in ya..yb {
                    let mut x = x0 + (6 - (y % 6)) % 6;
                    while x < x1 {
                        c.fill(x, y, x + 1, y + 1, crate::CUT_HATCH);
                        x += 6;
                    }
                }
                if yb - ya >= 7 + 4 {
                    let tw = crate::text_w(text, 1);
                    let (tx, ty) = (x0 + (sc.pw - tw) / 2, (ya + yb) / 2 - 3);
                    c.fill(tx - 4, ty - 2, tx + tw + 4, ty + 9, crate::BG);
                    c.text(tx, ty, 1, text, crate::MUTED);
                }
            }
        }
    }
}

/// Each band's label at its top left, on a translucent backing, where the band is tall enough.
fn band_labels(c: &mut Canvas, sc: &Scene) {
    for (lo, hi, text) in &sc.bands {
        let (ya, yb) = (sc.fy(*hi).round() as i64, sc.fy(*lo).round() as i64);
        let s = if yb - ya >= 7 * sc.s + 6 { sc.s } else { 1 };
        if yb - ya < 7 * s + 4 {
            continue;
        }
        let (tx, ty) = (sc.px0 + 6, ya + 3);
        c.blend(tx - 3, ty - 2, tx + crate::text_w(text, s) + 3, ty + 7 * s + 2, crate::BG, 0.8);
        c.text(tx, ty, s, text, crate::TEXT);
    }
}

/// Least opacity of a pixel touched by sub-pixel buffers (see [`plot_area`]).
const MIN_INK: f32 = 0.5;

/// The whole figure as PNG bytes.
pub(crate) fn render(sc: &Scene) -> Vec<u8> {
    let s = sc.s;
    let mut c = Canvas::new(sc.w, sc.h, 0, 0, crate::BG);
    plot_area(&mut c, sc);
    strips(&mut c, sc);
    band_labels(&mut c, sc);
    let (x0, y0, x1, y1) = (sc.px0, sc.py0, sc.px0 + sc.pw, sc.py0 + sc.ph);

    // Axes and ticks.
    c.fill(x0 - 1, y0, x0, y1 + 1, crate::AXIS);
    c.fill(x0 - 1, y1, x1, y1 + 1, crate::AXIS);
    for (v, label) in &sc.yticks {
        let y = sc.fy(*v).round() as i64;
        c.fill(x0 - 6, y, x0 - 1, y + 1, crate::AXIS);
        c.text(
            x0 - 9 - crate::text_w(label, s),
            y - 7 * s / 2,
            s,
            label,
            crate::MUTED,
        );
    }
    for (v, label) in &sc.xticks {
        let x = sc.fxf(*v).round() as i64;
        c.fill(x, y1 + 1, x + 1, y1 + 6, crate::AXIS);
        c.text(
            x - crate::text_w(label, s) / 2,
            y1 + 9,
            s,
            label,
            crate::MUTED,
        );
    }
    let xl = &sc.x_label;
    c.text(
        x0 + (sc.pw - crate::text_w(xl, s)) / 2,
        sc.h - 7 * s - 6,
        s,
        xl,
        crate::TEXT,
    );
    let yl = sc.y_label;
    c.vtext(
        8,
        y0 + (sc.ph + crate::text_w(yl, s)) / 2,
        s,
        yl,
        crate::TEXT,
    );

    // Max load and makespan, each labelled at the right end on a translucent backing.
    for m in &sc.marks {
        let y = sc.fy(m.value).round() as i64;
        let thick = s.max(1);
        c.hline(x0, x1, y - thick / 2, thick, m.colour, m.dashed);
        let tw = crate::text_w(&m.label, s);
        let tx = x1 - 6 - tw;
        let ty = if m.above {
            y - thick - 7 * s - 3
        } else {
            y + thick + 3
        };
        c.blend(tx - 3, ty - 2, tx + tw + 3, ty + 7 * s + 2, crate::BG, 0.8);
        c.text(tx, ty, s, &m.label, m.colour);
    }
    if sc.empty {
        let t = "no buffers";
        let ts = s + 1;
        c.text(
            x0 + (sc.pw - crate::text_w(t, ts)) / 2,
            y0 + (sc.ph - 7 * ts) / 2,
            ts,
            t,
            crate::MUTED,
        );
    }

    c.text(10, sc.title_y(), s + 1, &sc.title, crate::TEXT);
    c.text(10, sc.caption_y(), s, &sc.caption, crate::MUTED);
    c.to_png()
}
