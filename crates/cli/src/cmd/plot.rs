//! `heaplab plot`: draw a placement (an instance with offsets) or an allocator's placed jobs
//! from `heaplab replay`, one band per mapping.

use crate::outputs::check_writable;
use crate::picture::write_plot;
use crate::Failure;
use clap::Args;
use heaplab_model::units::{bytes, grouped};
use heaplab_model::{files, Input, Semantics};
use heaplab_replay::placed;

/// Arguments of `heaplab plot`.
#[derive(Args)]
pub struct PlotArgs {
    /// Placement file: an instance with an offset column (CSV or .hlbin), or an allocator's
    /// placement from `heaplab replay` (.hlplaced, or its CSV export from `heaplab convert`).
    placement: String,
    /// Picture to write: .png or .svg.
    #[arg(short, long, value_name = "FILE")]
    output: String,
    /// Lifetime convention of the input (instances; placed jobs are always [start, end)).
    #[arg(long, default_value = "inex", value_parser = crate::options::semantics())]
    semantics: Semantics,
    /// Title (default: the file name).
    #[arg(long)]
    title: Option<String>,
}

/// `heaplab plot`.
pub fn plot(a: PlotArgs) -> Result<(), Failure> {
    crate::picture::check_format(&a.output)?;
    check_writable(&a.output)?;
    // Opened once and told apart by its first bytes: a pipe is read like a file.
    let mut input = Input::open(&a.placement)?;
    if placed::holds_placed(&mut input)? {
        return plot_placed(input, &a.output, a.title.as_deref());
    }
    let (inst, offsets) = files::read_placement_input(input, a.semantics)?;
    let v = heaplab_sweep::validate(&inst.buffers, &offsets);
    if !v.is_valid() {
        eprintln!("heaplab: warning: drawing an invalid placement ({} clashing buffers)", v.clashing_buffers);
    }
    write_plot(&a.output, &inst.buffers, &offsets, a.title.as_deref().unwrap_or(&a.placement), heaplab_plot::Clock::Ticks)?;
    println!("picture        {} ({} buffers, makespan {})", a.output, grouped(inst.len() as u64), bytes(v.makespan));
    Ok(())
}

/// `heaplab plot` of placed jobs (a `.hlplaced` file or its CSV export): where the allocator
/// put every block, one band per mapping, on the allocated-bytes clock.
fn plot_placed(input: Input, output: &str, title: Option<&str>) -> Result<(), Failure> {
    let path = input.name().to_string();
    let p = placed::read_input(input, 4096)?;
    let blocks: Vec<heaplab_model::Buffer> = p.jobs.iter().map(|j| heaplab_model::Buffer::new(j.id, j.start, j.end, j.usable)).collect();
    let addresses: Vec<u64> = p.jobs.iter().map(|j| j.address).collect();
    let region: Vec<u32> = p.jobs.iter().map(|j| j.mapping).collect();
    let regions: Vec<heaplab_plot::Region> = p.mappings.iter().map(|m| heaplab_plot::Region { name: if m.name.is_empty() { format!("mapping {}", m.id) } else { m.name.clone() } }).collect();
    let m = heaplab_plot::Mapped { blocks: &blocks, addresses: &addresses, region: &region, regions: &regions };
    let title = match title {
        Some(t) => t.to_string(),
        None if !p.meta.allocator.is_empty() => format!("{path}: {} placement of {}", p.meta.allocator, p.meta.trace),
        None => path.to_string(),
    };
    let opts = heaplab_plot::PlotOptions { title, clock: heaplab_plot::Clock::Bytes, ..Default::default() };
    crate::picture::write_picture(output, || heaplab_plot::render_mapped_png(&m, &opts), || heaplab_plot::render_mapped_svg(&m, &opts))?;
    println!("picture        {output} ({} jobs in {} mappings{})", grouped(p.jobs.len() as u64), p.mappings.len(), if p.meta.allocator.is_empty() { String::new() } else { format!(", {}", p.meta.allocator) });
    Ok(())
}
