//! `heaplab layout-info`: describe a `.hllayout` file (strategy, contexts, entries planned and
//! not, region against the max load of its planned entries, bytes, accesses) and draw it.

use crate::cmd::layout::counts;
use crate::outputs::check_outputs;
use crate::picture::{check_format, write_layout_plot};
use crate::Failure;
use clap::Args;
use heaplab_apply::format;
use heaplab_model::units::{bytes, grouped, pct};
use serde_json::json;

pub const LAYOUT_INFO_HELP: &str = "\
Describe a layout written by `heaplab layout`: its strategy, contexts (and the call-stack depth
their keys hash), entries planned (served from the region) and unplanned (sent to the fallback
allocator), the region and its alignment against the max load of the planned entries (the least
memory they need), the bytes they request, and the access counts the profile gave them. The file
is read in full and validated first: a damaged or invalid layout is an error (exit 2) naming what
is wrong.

--plot draws it: time (the trace's events) × offset in the region, each planned entry a rectangle
coloured by its access count (light = few, dark = many, grey = none or no profile).

Examples:
  heaplab layout-info prog.hllayout
  heaplab layout-info prog.hllayout --plot layout.png --json";

/// Arguments of `heaplab layout-info`.
#[derive(Args)]
pub struct LayoutInfoArgs {
    /// The layout (.hllayout).
    layout: String,
    /// Draw it to this file (.png or .svg).
    #[arg(long, value_name = "FILE")]
    plot: Option<String>,
    /// Print the description as JSON.
    #[arg(long)]
    json: bool,
}

/// `heaplab layout-info`.
pub fn layout_info(a: LayoutInfoArgs) -> Result<(), Failure> {
    if let Some(p) = &a.plot {
        check_outputs(&[p], &[&a.layout])?;
        check_format(p)?;
    }
    let l = format::read(&a.layout)?;
    let (n, planned, planned_bytes) = counts(&l);
    let (buffers, _, _) = format::planned_buffers(&l);
    let max_load = heaplab_sweep::max_load(&buffers);
    let slot_bytes: u64 = buffers.iter().map(|b| b.size).sum();
    let accesses: u64 = l.contexts.iter().flat_map(|c| c.entries.iter()).map(|e| e.accesses).sum();
    let live = format::max_planned_live(&l);
    let file_bytes = std::fs::metadata(&a.layout).map(|m| m.len()).unwrap_or(0);
    if let Some(p) = &a.plot {
        write_layout_plot(p, &l, &format!("{} ({})", a.layout, l.strategy))?;
    }
    if a.json {
        let v = json!({
            "file": a.layout,
            "file_bytes": file_bytes,
            "strategy": l.strategy,
            "stack_depth": l.stack_depth,
            "contexts": l.contexts.len(),
            "entries": n,
            "planned": planned,
            "unplanned": n - planned,
            "planned_bytes": planned_bytes,
            "planned_slot_bytes": slot_bytes,
            "region_bytes": l.region,
            "region_align": l.region_align,
            "max_load_bytes": max_load,
            "region_over_max_load_pct": pct(l.region, max_load),
            "max_planned_live": live,
            "accesses": accesses,
            "plot": a.plot,
            "valid": true,
        });
        println!("{}", serde_json::to_string_pretty(&v).expect("JSON of plain values"));
        return Ok(());
    }
    let ctx = if l.stack_depth > 0 { format!("{} contexts (keys of {} frames)", grouped(l.contexts.len() as u64), l.stack_depth) } else { "no contexts (global ordinals)".into() };
    println!("layout         {} ({}, valid)", a.layout, bytes(file_bytes));
    println!("strategy       {}", l.strategy);
    println!("contexts       {ctx}");
    println!("entries        {} ({} planned, {} unplanned)", grouped(n), grouped(planned), grouped(n - planned));
    println!("bytes          {} B requested by planned entries ({} B in slots)", grouped(planned_bytes), grouped(slot_bytes));
    println!("region         {} B ({}), aligned to {}", grouped(l.region), bytes(l.region), bytes(l.region_align));
    println!("max load       {} B ({}): region {:+.3}%", grouped(max_load), bytes(max_load), pct(l.region, max_load));
    println!("live at once   {} planned entries at most", grouped(live));
    if accesses > 0 {
        println!("accesses       {} (from the access profile)", grouped(accesses));
    }
    if let Some(p) = &a.plot {
        println!("picture        {p}");
    }
    Ok(())
}
