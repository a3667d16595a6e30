//! Writing pictures: the format by the output's extension (PNG or SVG), drawn only once the
//! name is known to be right, written atomically. Used by `plot`, `plan --plot` and the layout
//! commands.

use crate::Failure;
use heaplab_model::files;

enum PlotFormat {
    Png,
    Svg,
}

/// Fails unless `path` ends in .png or .svg (checked before any work).
pub fn check_format(path: &str) -> Result<(), Failure> {
    plot_format(path).map(|_| ())
}

fn plot_format(path: &str) -> Result<PlotFormat, Failure> {
    let lower = path.to_ascii_lowercase();
    if lower.ends_with(".png") {
        Ok(PlotFormat::Png)
    } else if lower.ends_with(".svg") {
        Ok(PlotFormat::Svg)
    } else {
        Err(Failure::Input(format!("{path}: picture must end in .png or .svg")))
    }
}

/// Draws a picture with `png` or `svg` by the extension of `path`, and writes it atomically.
pub fn write_picture(path: &str, png: impl FnOnce() -> Vec<u8>, svg: impl FnOnce() -> String) -> Result<(), Failure> {
    let res = match plot_format(path)? {
        PlotFormat::Png => {
            let png = png();
            files::write_atomic(path, |w| w.write_all(&png))
        }
        PlotFormat::Svg => {
            let svg = svg();
            files::write_atomic(path, |w| w.write_all(svg.as_bytes()))
        }
    };
    res.map_err(|e| Failure::Input(format!("{path}: cannot write: {e}")))
}

/// Draws a placement of `buffers` at `offsets` to `path`.
pub fn write_plot(path: &str, buffers: &[heaplab_model::Buffer], offsets: &[u64], title: &str, clock: heaplab_plot::Clock) -> Result<(), Failure> {
    let opts = heaplab_plot::PlotOptions { title: title.to_string(), clock, ..Default::default() };
    write_picture(path, || heaplab_plot::render_png(buffers, offsets, &opts), || heaplab_plot::render_svg(buffers, offsets, &opts))
}

/// Draws a layout's planned entries (time on the trace's events clock × offset in the region),
/// coloured by their access counts when the layout has any.
pub fn write_layout_plot(path: &str, layout: &heaplab_apply::Layout, title: &str) -> Result<(), Failure> {
    let (buffers, offsets, which) = heaplab_apply::format::planned_buffers(layout);
    let weights: Vec<u64> = which.iter().map(|&(c, i)| layout.contexts[c].entries[i].accesses).collect();
    let weights = if weights.iter().any(|&w| w > 0) { weights } else { Vec::new() };
    let opts = heaplab_plot::PlotOptions { title: title.to_string(), clock: heaplab_plot::Clock::Events, weights, ..Default::default() };
    write_picture(path, || heaplab_plot::render_png(&buffers, &offsets, &opts), || heaplab_plot::render_svg(&buffers, &offsets, &opts))
}
