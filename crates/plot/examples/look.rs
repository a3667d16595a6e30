//! Draws example pictures to look at: `cargo run --release -p heaplab-plot --example look [dir]`.
//! Writes small (30 random buffers), nn (2,000) and large (10^6) placements as PNG and SVG, and
//! prints how long each took.

use heaplab_gen::{generate, Kind};
use heaplab_plan::heuristics::{first_fit_in_order, order, Order};
use heaplab_plot::{render_png, render_svg, PlotOptions};
use std::time::Instant;

fn main() {
    let dir = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "/tmp".to_string());
    for (name, kind, n) in [
        ("small", Kind::Random, 30),
        ("nn", Kind::Nn, 2000),
        ("tight", Kind::Tight, 5000),
        ("large", Kind::Random, 1_000_000),
    ] {
        let inst = generate(kind, n, 1);
        let offs = first_fit_in_order(&inst.buffers, &order(&inst.buffers, Order::Size));
        let opts = PlotOptions {
            title: format!("{name}.csv ({} buffers, first-fit by size)", n),
            ..Default::default()
        };
        let t = Instant::now();
        let png = render_png(&inst.buffers, &offs, &opts);
        let tp = t.elapsed();
        let t = Instant::now();
        let svg = render_svg(&inst.buffers, &offs, &opts);
        let ts = t.elapsed();
        std::fs::write(format!("{dir}/plot-{name}.png"), &png).unwrap();
        std::fs::write(format!("{dir}/plot-{name}.svg"), &svg).unwrap();
        println!(
            "{name:6} n={n:8}  png {:7.1} ms {:8} B   svg {:7.1} ms {:9} B",
            tp.as_secs_f64() * 1e3,
            png.len(),
            ts.as_secs_f64() * 1e3,
            svg.len()
        );
    }
    let opts = PlotOptions {
        title: "empty.csv".into(),
        ..Default::default()
    };
    std::fs::write(format!("{dir}/plot-empty.png"), render_png(&[], &[], &opts)).unwrap();
    let opts = PlotOptions {
        title: "small at 480x300".into(),
        width: 480,
        height: 300,
        ..Default::default()
    };
    let inst = generate(Kind::Random, 30, 1);
    let offs = first_fit_in_order(&inst.buffers, &order(&inst.buffers, Order::Size));
    std::fs::write(
        format!("{dir}/plot-small-480.png"),
        render_png(&inst.buffers, &offs, &opts),
    )
    .unwrap();
}
