//! Tests of both renderers: structure of the output, decoded pixels against the scene's own
//! mapping, and inputs that must not panic (empty, one buffer, values near `u64::MAX`).

use super::*;

fn decode(bytes: &[u8]) -> (u32, u32, Vec<u8>) {
    let dec = png::Decoder::new(bytes);
    let mut r = dec.read_info().expect("valid PNG header");
    let mut buf = vec![0; r.output_buffer_size()];
    let info = r.next_frame(&mut buf).expect("valid PNG data");
    assert_eq!(info.color_type, png::ColorType::Rgb);
    buf.truncate(info.buffer_size());
    (info.width, info.height, buf)
}

fn pixel(img: &(u32, u32, Vec<u8>), x: i64, y: i64) -> Rgb {
    let i = (y as usize * img.0 as usize + x as usize) * 3;
    [img.2[i], img.2[i + 1], img.2[i + 2]]
}

/// A small valid placement: `k` buffers in a staircase plus a wide one underneath.
fn staircase(k: u64) -> (Vec<Buffer>, Vec<u64>) {
    let mut bs = vec![Buffer::new(0, 0, 10 * k, 1000)];
    let mut offs = vec![0];
    for i in 0..k {
        bs.push(Buffer::new(i + 1, 10 * i, 10 * i + 10, 500 + 100 * i));
        offs.push(1000);
    }
    (bs, offs)
}

fn opts() -> PlotOptions {
    PlotOptions {
        title: "test".into(),
        ..Default::default()
    }
}

#[test]
fn svg_has_one_rect_per_buffer() {
    let (bs, offs) = staircase(7);
    let svg = render_svg(&bs, &offs, &opts());
    assert!(svg.starts_with("<svg"));
    assert!(svg.trim_end().ends_with("</svg>"));
    assert_eq!(svg.matches(r#"<rect class="buf""#).count(), bs.len());
    assert_eq!(svg.matches("<text").count(), svg.matches("</text>").count());
    assert!(svg.contains("max load") && svg.contains("makespan") && svg.contains("fragmentation"));
    assert!(!svg.contains("NaN") && !svg.contains("inf"));
}

#[test]
fn large_svg_embeds_a_raster() {
    let n = SVG_RECT_LIMIT as u64 + 5;
    let bs: Vec<Buffer> = (0..n)
        .map(|i| Buffer::new(i, i, i + 3, 16 + i % 64))
        .collect();
    let offs: Vec<u64> = (0..n).map(|i| (i % 3) * 100).collect();
    let svg = render_svg(&bs, &offs, &opts());
    assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
    assert_eq!(svg.matches(r#"class="buf""#).count(), 0);
    assert_eq!(svg.matches("data:image/png;base64,").count(), 1);
    // Bounded by the raster (base64 of at most raw RGB), not by n.
    assert!(svg.len() < 1200 * 700 * 4 + 100_000, "{} bytes", svg.len());
}

#[test]
fn png_decodes_to_the_requested_size() {
    let (bs, offs) = staircase(5);
    for (w, h) in [(1200, 700), (640, 480), (333, 222)] {
        let img = decode(&render_png(
            &bs,
            &offs,
            &PlotOptions {
                width: w,
                height: h,
                title: "t".into(),
                ..Default::default()
            },
        ));
        assert_eq!((img.0, img.1), (w, h));
    }
    // Degenerate sizes are clamped, not fatal.
    let img = decode(&render_png(
        &bs,
        &offs,
        &PlotOptions {
            width: 0,
            height: 0,
            title: String::new(),
            ..Default::default()
        },
    ));
    assert_eq!((img.0, img.1), (MIN_WIDTH, MIN_HEIGHT));
}

#[test]
fn pixels_show_buffers_and_free_space() {
    let (bs, offs) = staircase(4);
    let o = opts();
    let sc = Scene::new(&bs, &offs, &o);
    let img = decode(&render_png(&bs, &offs, &o));
    for i in 0..bs.len() {
        let (x0, y0, x1, y1) = sc.cell(i);
        assert!(x1 - x0 > 2 * OUTLINE_MIN_PX && y1 - y0 > 2 * OUTLINE_MIN_PX);
        // The centre has the fill, the bottom-left corner the outline (the top edge of the
        // highest buffer lies under the makespan line).
        assert_eq!(
            pixel(&img, (x0 + x1) / 2, (y0 + y1) / 2),
            fill_colour(i),
            "buffer {i}"
        );
        assert_eq!(
            pixel(&img, x0, y1 - 1),
            outline_colour(fill_colour(i)),
            "buffer {i}"
        );
    }
    // Above buffer 1 (ticks [0, 10), addresses [1000, 1500)) and below the makespan (1800,
    // buffer 4) nothing is placed at address 1650.
    let x = ((sc.fx(2) + sc.fx(8)) / 2.0) as i64;
    let y = sc.fy(1650.0) as i64;
    let p = pixel(&img, x, y);
    assert!(p == PLOT_BG || p == GRID, "{p:?}");
    // Outside the plot area: figure background.
    assert_eq!(pixel(&img, img.0 as i64 - 2, img.1 as i64 / 2), BG);
}

#[test]
fn svg_rects_sit_where_the_png_pixels_are() {
    let (bs, offs) = staircase(3);
    let o = opts();
    let sc = Scene::new(&bs, &offs, &o);
    let svg = render_svg(&bs, &offs, &o);
    let (x0, _, _, _) = sc.cell(2);
    let needle = format!(r#"x="{:.2}""#, sc.fx(bs[2].lower) + 0.5);
    assert!(svg.contains(&needle), "{needle}");
    assert!((sc.fx(bs[2].lower) - x0 as f64).abs() <= 0.5);
}

#[test]
fn colours_are_deterministic_and_varied() {
    let a: Vec<Rgb> = (0..100).map(fill_colour).collect();
    let b: Vec<Rgb> = (0..100).map(fill_colour).collect();
    assert_eq!(a, b);
    let distinct: std::collections::HashSet<Rgb> = a.iter().copied().collect();
    assert!(distinct.len() >= 20, "{}", distinct.len());
    assert!(!a.contains(&PLOT_BG) && !a.contains(&BG));
}

#[test]
fn empty_input_draws_axes_and_says_so() {
    let svg = render_svg(&[], &[], &opts());
    assert!(svg.contains("no buffers"));
    assert_eq!(svg.matches(r#"class="buf""#).count(), 0);
    let img = decode(&render_png(&[], &[], &opts()));
    assert_eq!((img.0, img.1), (1200, 700));
    let sc = Scene::new(&[], &[], &opts());
    // The x axis is drawn.
    assert_eq!(pixel(&img, sc.px0 + sc.pw / 3, sc.py0 + sc.ph), AXIS);
}

#[test]
fn one_buffer_fills_its_rectangle() {
    let bs = [Buffer::new(7, 5, 6, 1)];
    let o = opts();
    let sc = Scene::new(&bs, &[0], &o);
    let (x0, y0, x1, y1) = sc.cell(0);
    // It spans the whole time axis and rises to 1/1.08 of the plot height.
    assert_eq!((x0, x1, y1), (sc.px0, sc.px0 + sc.pw, sc.py0 + sc.ph));
    assert!(y0 > sc.py0);
    let img = decode(&render_png(&bs, &[0], &o));
    assert_eq!(pixel(&img, (x0 + x1) / 3, (y0 + y1) / 2), fill_colour(0));
    let svg = render_svg(&bs, &[0], &o);
    assert_eq!(svg.matches(r#"class="buf""#).count(), 1);
    assert!(svg.contains("fragmentation 0.00%"));
}

#[test]
fn sub_pixel_buffers_still_cover_a_pixel() {
    // One huge buffer makes the small one far thinner than a pixel in both directions.
    // It sits at address 0, under the big one, away from the makespan line.
    let bs = [
        Buffer::new(0, 0, 1_000_000, 1 << 40),
        Buffer::new(1, 500_000, 500_001, 1),
    ];
    let offs = [1, 0];
    let o = opts();
    let sc = Scene::new(&bs, &offs, &o);
    let (x0, y0, x1, y1) = sc.cell(1);
    assert_eq!((x1 - x0, y1 - y0), (1, 1));
    // Its pixel is also the big buffer's bottom row (its outline); the tiny one is mixed over it
    // at the least opacity, so it stays visible.
    let img = decode(&render_png(&bs, &offs, &o));
    let (big, tiny) = (outline_colour(fill_colour(0)), fill_colour(1));
    let want: Rgb =
        std::array::from_fn(|k| (big[k] as f32 * 0.5 + tiny[k] as f32 * 0.5).round() as u8);
    assert_eq!(pixel(&img, x0, y0), want);
    assert_ne!(want, big);
}

#[test]
fn values_near_u64_max_do_not_panic() {
    let m = u64::MAX;
    let bs = [
        Buffer::new(0, m - 10, m, m),
        Buffer::new(1, m - 5, m, m / 2),
        Buffer::new(2, 0, m, m - 1),
        Buffer::new(m, m - 1, m, 1),
    ];
    let offs = [0, m, m - 1, m];
    for o in [
        opts(),
        PlotOptions {
            width: 300,
            height: 200,
            title: "x".repeat(500),
            ..Default::default()
        },
    ] {
        let svg = render_svg(&bs, &offs, &o);
        assert!(svg.trim_end().ends_with("</svg>"));
        assert!(!svg.contains("NaN") && !svg.contains("inf"));
        let img = decode(&render_png(&bs, &offs, &o));
        assert_eq!((img.0, img.1), (o.width, o.height));
    }
    // Wide max load: the sizes sum past u64.
    assert_eq!(
        super::max_load(&bs),
        m as u128 + (m / 2) as u128 + (m - 1) as u128 + 1
    );
}

#[test]
fn mismatched_offsets_draw_the_common_prefix() {
    let (bs, offs) = staircase(4);
    let svg = render_svg(&bs, &offs[..2], &opts());
    assert_eq!(svg.matches(r#"class="buf""#).count(), 2);
    decode(&render_png(&bs[..1], &offs, &opts()));
}

#[test]
fn markup_in_titles_is_escaped() {
    let o = PlotOptions {
        title: "a<b>&c".into(),
        ..Default::default()
    };
    let svg = render_svg(&[], &[], &o);
    assert!(svg.contains("a&lt;b&gt;&amp;c"));
}

#[test]
fn weights_colour_buffers_on_the_heat_scale() {
    let bufs = [Buffer::new(0, 0, 10, 100), Buffer::new(1, 0, 10, 100), Buffer::new(2, 5, 20, 50)];
    let offs = [0, 100, 200];
    let o = PlotOptions { weights: vec![0, 1000, 1], ..opts() };
    let svg = render_svg(&bufs, &offs, &o);
    // the heaviest is the dark end, the unweighted grey; the caption says what colour means
    assert!(svg.contains("#78001e") && svg.contains("#cdcdc8"), "{svg}");
    assert!(svg.contains("colour: accesses"));
    assert!(!render_svg(&bufs, &offs, &opts()).contains("#78001e"));
    assert_ne!(render_png(&bufs, &offs, &o), render_png(&bufs, &offs, &opts()));
}
