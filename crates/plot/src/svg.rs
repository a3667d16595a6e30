//! Writing a [`Scene`] as SVG: vector rectangles for small inputs, an embedded raster of the
//! plot area for large ones (see [`crate::render_svg`]); axes, lines and text are always vector.

use crate::raster::{plot_area, Canvas};
use crate::{hex, scale, Scene};
use std::fmt::Write;

/// Escapes text for XML and HTML content and attribute values (quoted with either quote); the
/// one escaper of every SVG and HTML page heaplab writes.
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            // Control characters are not allowed in XML 1.0.
            c if (c as u32) < 0x20 && c != '\t' => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// Standard base64 with padding, for the `data:` URI.
fn base64(data: &[u8]) -> String {
    const T: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(data.len().div_ceil(3) * 4);
    for ch in data.chunks(3) {
        let b = [ch[0], *ch.get(1).unwrap_or(&0), *ch.get(2).unwrap_or(&0)];
        let v = (b[0] as u32) << 16 | (b[1] as u32) << 8 | b[2] as u32;
        for k in 0..4 {
            if k <= ch.len() {
                out.push(T[(v >> (18 - 6 * k) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Text with its top at `y` (the bitmap font's convention), anchored start/middle/end at `x`.
#[allow(clippy::too_many_arguments)] // a private drawing helper; a struct would only add noise
fn text(
    out: &mut String,
    x: f64,
    y: i64,
    s: i64,
    anchor: &str,
    fill: crate::Rgb,
    extra: &str,
    t: &str,
) {
    // Sans-serif cap height is about 0.7 em, so a 10·s px font matches the 7·s px bitmap glyphs.
    let _ = writeln!(
        out,
        r#"<text x="{x:.1}" y="{}" font-size="{}" text-anchor="{anchor}" fill="{}"{extra}>{}</text>"#,
        y + 7 * s,
        10 * s,
        hex(fill),
        esc(t)
    );
}

pub(crate) fn render(sc: &Scene) -> String {
    let s = sc.s;
    let (x0, y0, x1, y1) = (sc.px0, sc.py0, sc.px0 + sc.pw, sc.py0 + sc.ph);
    let n = sc.buffers.len();
    let mut out = String::with_capacity(4096 + n.min(crate::SVG_RECT_LIMIT) * 160);
    let _ = writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="DejaVu Sans, Helvetica, Arial, sans-serif">"#,
        w = sc.w,
        h = sc.h
    );
    let _ = writeln!(
        out,
        r#"<rect width="100%" height="100%" fill="{}"/>"#,
        hex(crate::BG)
    );

    if n > crate::SVG_RECT_LIMIT {
        // Same pixels as the PNG renderer, cropped to the plot area.
        let mut c = Canvas::new(sc.pw, sc.ph, x0, y0, crate::PLOT_BG);
        plot_area(&mut c, sc);
        let _ = writeln!(
            out,
            r#"<image x="{x0}" y="{y0}" width="{}" height="{}" style="image-rendering:pixelated" href="data:image/png;base64,{}"/>"#,
            sc.pw,
            sc.ph,
            base64(&c.to_png())
        );
    } else {
        let _ = writeln!(
            out,
            r#"<rect x="{x0}" y="{y0}" width="{}" height="{}" fill="{}"/>"#,
            sc.pw,
            sc.ph,
            hex(crate::PLOT_BG)
        );
        let _ = writeln!(out, r#"<g stroke="{}" stroke-width="1">"#, hex(crate::GRID));
        for (v, _) in &sc.yticks {
            let y = sc.fy(*v).round() + 0.5;
            let _ = writeln!(out, r#"<line x1="{x0}" y1="{y}" x2="{x1}" y2="{y}"/>"#);
        }
        for (v, _) in &sc.xticks {
            let x = sc.fxf(*v).round() + 0.5;
            let _ = writeln!(out, r#"<line x1="{x}" y1="{y0}" x2="{x}" y2="{y1}"/>"#);
        }
        out.push_str("</g>\n<g>\n");
        for i in 0..n {
            // Exact fractional edges; sub-pixel buffers are widened to one unit so they show.
            let b = &sc.buffers[i];
            let lo = sc.offsets[i] as u128;
            let hi = lo + b.size as u128;
            let xa = sc.fx(b.lower);
            let xb = sc.fx(b.upper).max(xa + 1.0);
            let yb = sc.fy(lo as f64);
            let ya = sc.fy(hi as f64).min(yb - 1.0);
            let fill = sc.fill(i);
            let (w, h) = (xb - xa, yb - ya);
            let stroke = if w >= crate::OUTLINE_MIN_PX as f64 && h >= crate::OUTLINE_MIN_PX as f64 {
                // Inset by half the stroke so the outline stays inside like the PNG's.
                format!(
                    r#" stroke="{}" stroke-width="1""#,
                    hex(crate::outline_colour(fill))
                )
            } else {
                String::new()
            };
            let inset = if stroke.is_empty() { 0.0 } else { 0.5 };
            let at = match sc.addresses {
                Some(a) => format!("address 0x{:x}", a[i]),
                None => format!("offset {}", sc.offsets[i]),
            };
            let _ = writeln!(
                out,
                r#"<rect class="buf" x="{:.2}" y="{:.2}" width="{:.2}" height="{:.2}" fill="{}"{stroke}><title>id {}: {} [{}, {}), {} at {at}</title></rect>"#,
                xa + inset,
                ya + inset,
                w - 2.0 * inset,
                h - 2.0 * inset,
                hex(fill),
                b.id,
                sc.time_unit,
                b.lower,
                b.upper,
                scale::bytes(b.size as f64),
            );
        }
        out.push_str("</g>\n");
    }

    // Mapped pictures: strips between segments (hatched where an unused range was cut out, a
    // line between mappings), and each band's label where it fits.
    if !sc.strips.is_empty() {
        let _ = writeln!(
            out,
            r#"<defs><pattern id="cut" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><rect width="6" height="6" fill="{}"/><line x1="0" y1="0" x2="0" y2="6" stroke="{}" stroke-width="1.5"/></pattern></defs>"#,
            hex(crate::BG),
            hex(crate::CUT_HATCH)
        );
    }
    for (lo, hi, label) in &sc.strips {
        let (ya, yb) = (sc.fy(*hi).round(), sc.fy(*lo).round());
        let ya = ya.min(yb - 1.0);
        match label {
            None => {
                let _ = writeln!(out, r#"<rect x="{x0}" y="{ya}" width="{}" height="{}" fill="{}"/>"#, sc.pw, yb - ya, hex(crate::BG));
                let mid = ((ya + yb) / 2.0).floor() + 0.5;
                let _ = writeln!(out, r#"<line x1="{x0}" y1="{mid}" x2="{x1}" y2="{mid}" stroke="{}" stroke-width="{}"/>"#, hex(crate::MAPPING_EDGE), s.max(1));
            }
            Some(t) => {
                let _ = writeln!(out, r#"<rect x="{x0}" y="{ya}" width="{}" height="{}" fill="url(#cut)"/>"#, sc.pw, yb - ya);
                if yb - ya >= 11.0 {
                    let extra = r#" stroke="white" stroke-width="4" paint-order="stroke""#;
                    text(&mut out, (x0 + sc.pw / 2) as f64, ((ya + yb) / 2.0) as i64 - 3, 1, "middle", crate::MUTED, extra, t);
                }
            }
        }
    }
    for (lo, hi, t) in &sc.bands {
        let (ya, yb) = (sc.fy(*hi).round() as i64, sc.fy(*lo).round() as i64);
        let ts = if yb - ya >= 7 * s + 6 { s } else { 1 };
        if yb - ya >= 7 * ts + 4 {
            let extra = r#" stroke="white" stroke-width="4" stroke-opacity="0.8" paint-order="stroke""#;
            text(&mut out, (x0 + 6) as f64, ya + 3, ts, "start", crate::TEXT, extra, t);
        }
    }

    // Axes and ticks.
    let axis = hex(crate::AXIS);
    let _ = writeln!(
        out,
        r#"<path d="M{} {y0}V{}H{x1}" fill="none" stroke="{axis}" stroke-width="1"/>"#,
        x0 as f64 - 0.5,
        y1 as f64 + 0.5
    );
    for (v, label) in &sc.yticks {
        let y = sc.fy(*v).round();
        let _ = writeln!(
            out,
            r#"<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="{axis}"/>"#,
            x0 - 6,
            y + 0.5,
            x0 - 1,
            y + 0.5
        );
        text(
            &mut out,
            (x0 - 9) as f64,
            y as i64 - 7 * s / 2,
            s,
            "end",
            crate::MUTED,
            "",
            label,
        );
    }
    for (v, label) in &sc.xticks {
        let x = sc.fxf(*v).round();
        let _ = writeln!(
            out,
            r#"<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="{axis}"/>"#,
            x + 0.5,
            y1 + 1,
            x + 0.5,
            y1 + 6
        );
        text(
            &mut out,
            x + 0.5,
            y1 + 9,
            s,
            "middle",
            crate::MUTED,
            "",
            label,
        );
    }
    text(
        &mut out,
        (x0 + sc.pw / 2) as f64,
        sc.h - 7 * s - 6,
        s,
        "middle",
        crate::TEXT,
        "",
        &sc.x_label,
    );
    let (ax, ay) = (8 + 7 * s, y0 + sc.ph / 2);
    let _ = writeln!(
        out,
        r#"<text transform="translate({ax},{ay}) rotate(-90)" font-size="{}" text-anchor="middle" fill="{}">{}</text>"#,
        10 * s,
        hex(crate::TEXT),
        sc.y_label
    );

    for m in &sc.marks {
        let y = sc.fy(m.value).round();
        let thick = s.max(1);
        let dash = if m.dashed {
            format!(r#" stroke-dasharray="{} {}""#, 8 * thick, 5 * thick)
        } else {
            String::new()
        };
        let _ = writeln!(
            out,
            r#"<line x1="{x0}" y1="{y}" x2="{x1}" y2="{y}" stroke="{}" stroke-width="{thick}"{dash}/>"#,
            hex(m.colour)
        );
        let ty = if m.above {
            y as i64 - thick - 7 * s - 3
        } else {
            y as i64 + thick + 3
        };
        let extra = r#" stroke="white" stroke-width="4" stroke-opacity="0.8" paint-order="stroke""#;
        text(
            &mut out,
            (x1 - 6) as f64,
            ty,
            s,
            "end",
            m.colour,
            extra,
            &m.label,
        );
    }
    if sc.empty {
        let ts = s + 1;
        text(
            &mut out,
            (x0 + sc.pw / 2) as f64,
            y0 + (sc.ph - 7 * ts) / 2,
            ts,
            "middle",
            crate::MUTED,
            "",
            "no buffers",
        );
    }
    text(
        &mut out,
        10.0,
        sc.title_y(),
        s + 1,
        "start",
        crate::TEXT,
        r#" font-weight="bold""#,
        &sc.title,
    );
    text(
        &mut out,
        10.0,
        sc.caption_y(),
        s,
        "start",
        crate::MUTED,
        "",
        &sc.caption,
    );
    out.push_str("</svg>\n");
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn base64_matches_rfc4648_vectors() {
        let cases = [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foobar", "Zm9vYmFy"),
        ];
        for (i, o) in cases {
            assert_eq!(super::base64(i.as_bytes()), o);
        }
    }

    #[test]
    fn escapes_markup() {
        assert_eq!(super::esc(r#"a<b>&"c""#), "a&lt;b&gt;&amp;&quot;c&quot;");
    }
}
