//! `heaplab frag`: the 2-D fragmentation of placed jobs, measured by `heaplab_frag::measure`;
//! this module prints it: the summary, the per-mapping table, the series over time, JSON and
//! the over-time plot.

use crate::progress::ProgressLine;
use crate::Failure;
use clap::Args;
use heaplab_frag::{Frag, Measured};
use heaplab_model::files;
use heaplab_model::units::{bytes, grouped};
use heaplab_replay::Placed;
use serde_json::{json, Value};

pub const FRAG_HELP: &str = "\
Measure the fragmentation of placed jobs in the time x address plane (equation 3.1 of the thesis
in ../shared/papers/000_..., chapter 3; equation 1 of the paper 003_...).

External fragmentation F/L: for every span between consecutive events, and every virtual page
that holds a live block, the bytes of that page left unused below the page's highest live
block, times the span's length; summed over time and mappings (F) and divided by the total job
area L = sum of usable size x lifetime. Internal fragmentation: sum of (usable - requested) x
lifetime, divided by the same L. Both are reported in total and per mapping, with the simpler
measure makespan - max load per mapping (highest block end - lowest block start, minus the peak
of live usable bytes) and the fragmentation over time.

Choices the papers leave open:
  time     the trace's allocated-bytes clock: an allocation starts its job at the current value
           and advances it by its requested size (at least 1); frees take no time. A span runs
           between two consecutive distinct event times; a job is live on [start, end); at equal
           times releases come first; jobs never freed end at the trace's end.
  pages    aligned [k*P, (k+1)*P) ranges of absolute addresses, P = the replaying machine's page
           size (from the placed file; --page-size for CSV input or to override). Mappings
           start on page boundaries, so this equals counting from each mapping's start.
  crossing a block crossing page boundaries counts in every page it touches, clipped to it: it
           is the ceiling of the page where it starts (covered from its start to the page end),
           pages it covers whole have no gap, and the page where it ends is covered from the
           page start to its end. Gaps never cross a page boundary.
  extent   blocks are their usable size: allocator headers between blocks are external
           fragmentation, usable bytes beyond the request are internal.
  mapping  a page's gap is charged to the mapping of the block that forms its ceiling.

The computation is an event sweep with per-page bookkeeping: O(n log n) for n jobs.

INPUT: a placed file from `heaplab replay` (binary), or CSV with the columns
job,mapping,map_start,start,end,requested,usable,address in any order (map_start optional; an
unknown or repeated column is an error). Two jobs that overlap while both are live make the
input invalid (exit 2).

Examples:
  heaplab frag run.jemalloc.hlplaced
  heaplab frag run.jemalloc.hlplaced --json --buckets 200
  heaplab frag run.csv --page-size 16384 --plot frag.png";

/// Arguments of `heaplab frag`.
#[derive(Args)]
pub struct FragArgs {
    /// A placed file (binary from `heaplab replay`, or CSV).
    input: String,
    /// Print as JSON (with the per-mapping figures and the series over time).
    #[arg(long)]
    json: bool,
    #[arg(long, value_name = "BYTES", value_parser = crate::flag_ranges::PAGE_SIZE.parser::<u64>(),
        help = crate::flag_ranges::PAGE_SIZE.help(&format!("Page size in bytes; default: the placed file's, {} for CSV.", heaplab_frag::DEFAULT_PAGE_SIZE)))]
    page_size: Option<u64>,
    #[arg(long, default_value_t = 100, value_name = "N", value_parser = crate::flag_ranges::FRAG_BUCKETS.parser::<usize>(),
        help = crate::flag_ranges::FRAG_BUCKETS.help("Buckets of the fragmentation-over-time series (0: none)."))]
    buckets: usize,
    /// Draw fragmentation over time to this PNG.
    #[arg(long, value_name = "FILE")]
    plot: Option<String>,
}

fn pct(x: f64) -> String {
    format!("{:.2}%", x * 100.0)
}

/// The JSON of a fragmentation result.
pub fn frag_json(p: &Placed, f: &Frag, page: u64) -> Value {
    let maps: Vec<Value> = p
        .mappings
        .iter()
        .zip(&f.mappings)
        .map(|(m, mf)| {
            json!({
                "id": m.id, "name": m.name, "start": m.start, "end": m.end, "jobs": mf.jobs,
                "job_area": mf.areas.jobs as f64, "external_area": mf.areas.external as f64, "internal_area": mf.areas.internal as f64,
                "external": mf.areas.external_ratio(), "internal": mf.areas.internal_ratio(),
                "makespan": mf.makespan, "max_load": mf.max_load, "makespan_minus_max_load": mf.makespan as i128 - mf.max_load as i128,
            })
        })
        .collect();
    let series: Vec<Value> = f
        .series
        .iter()
        .map(|b| json!({"t0": b.t0, "t1": b.t1, "external": b.areas.external_ratio(), "internal": b.areas.internal_ratio(), "mean_live_bytes": if b.t1 > b.t0 { b.areas.jobs as f64 / (b.t1 - b.t0) as f64 } else { 0.0 }}))
        .collect();
    json!({
        "allocator": p.meta.allocator,
        "trace": p.meta.trace,
        "jobs": p.jobs.len(),
        "page_size": page,
        "end_time": f.end_time,
        "external": f.total.external_ratio(),
        "internal": f.total.internal_ratio(),
        "job_area": f.total.jobs as f64,
        "external_area": f.total.external as f64,
        "internal_area": f.total.internal as f64,
        "mappings": maps,
        "series": series,
    })
}

/// `heaplab frag`.
pub fn frag(a: FragArgs) -> Result<(), Failure> {
    if let Some(p) = &a.plot {
        crate::outputs::check_outputs(&[p], &[&a.input])?;
        if !p.to_ascii_lowercase().ends_with(".png") {
            return Err(Failure::Input(format!("--plot {p}: expected a .png file name")));
        }
    }
    let m = {
        let name = a.input.clone();
        let _line = ProgressLine::start(move |el| format!("measuring {name}: {:.1} s", el.as_secs_f64()));
        heaplab_frag::measure(&a.input, a.page_size, a.buckets).map_err(|e| Failure::Input(e.to_string()))?
    };
    let Measured { placed: p, frag: f, page_size: page, seconds: secs, cpu_seconds: cpu } = m;
    if let Some(out) = &a.plot {
        let title = format!("{} under {}", p.meta.trace, if p.meta.allocator.is_empty() { "an unnamed allocator" } else { &p.meta.allocator });
        let ch = heaplab_study::report::over_time(title, &[(p.meta.allocator.clone(), f.external_series())]);
        let png = heaplab_plot::chart::render_chart_png(&ch);
        files::write_atomic(out, |w| w.write_all(&png)).map_err(|e| Failure::Input(format!("{out}: cannot write: {e}")))?;
    }
    if a.json {
        let mut v = frag_json(&p, &f, page);
        v["seconds"] = json!(secs);
        v["cpu_seconds"] = json!(cpu);
        println!("{}", serde_json::to_string_pretty(&v).expect("JSON of plain values"));
        return Ok(());
    }
    let rate = if secs > 0.0 { p.jobs.len() as f64 / secs } else { 0.0 };
    println!("placed         {} ({}{} jobs, {} mappings, {} B pages)", a.input, if p.meta.allocator.is_empty() { String::new() } else { format!("{}, ", p.meta.allocator) }, grouped(p.jobs.len() as u64), p.mappings.len(), page);
    println!("external       {}   (page-local gaps below live blocks / job area)", pct(f.total.external_ratio()));
    println!("internal       {}   ((usable - requested) x lifetime / job area)", pct(f.total.internal_ratio()));
    println!("time           {secs:.3} s, {cpu:.3} s of CPU ({:.2}M jobs/s)", rate / 1e6);
    println!("\nper mapping (largest job area first)");
    println!("  {:>4}  {:<22} {:>10} {:>9} {:>9} {:>11} {:>11} {:>11}", "id", "name", "jobs", "external", "internal", "makespan", "max load", "difference");
    let mut order: Vec<usize> = (0..p.mappings.len()).collect();
    order.sort_by_key(|&k| std::cmp::Reverse(f.mappings[k].areas.jobs));
    for &k in order.iter().take(20) {
        let (m, mf) = (&p.mappings[k], &f.mappings[k]);
        let name: String = m.name.chars().rev().take(22).collect::<Vec<_>>().into_iter().rev().collect();
        println!(
            "  {:>4}  {:<22} {:>10} {:>9} {:>9} {:>11} {:>11} {:>11}",
            m.id,
            name,
            grouped(mf.jobs),
            pct(mf.areas.external_ratio()),
            pct(mf.areas.internal_ratio()),
            bytes(mf.makespan),
            bytes(mf.max_load),
            bytes(mf.makespan.saturating_sub(mf.max_load))
        );
    }
    if order.len() > 20 {
        println!("  … {} more (see --json)", order.len() - 20);
    }
    // At most 60 columns: neighbouring buckets are merged (their areas added).
    let per = f.series.len().div_ceil(60).max(1);
    let ext: Vec<f64> = f
        .series
        .chunks(per)
        .map(|c| c.iter().fold((0u128, 0u128), |(e, j), b| (e + b.areas.external, j + b.areas.jobs)))
        .filter(|&(_, j)| j > 0)
        .map(|(e, j)| e as f64 / j as f64)
        .collect();
    if !ext.is_empty() {
        let spark = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
        let hi = ext.iter().cloned().fold(0.0, f64::max).max(1e-12);
        let line: String = ext.iter().map(|&x| spark[((x / hi) * 7.0).round().clamp(0.0, 7.0) as usize]).collect();
        println!("\nover time      {line}");
        println!("               external per {} bytes allocated; max {}", grouped((f.series[0].t1 - f.series[0].t0) * per as u64), pct(hi));
    }
    Ok(())
}
