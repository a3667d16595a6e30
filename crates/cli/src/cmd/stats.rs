//! `heaplab stats`: describe an instance (or a trace, converted on the way).

use crate::Failure;
use clap::Args;
use heaplab_model::units::{bytes, grouped};
use heaplab_model::{Input, Semantics};
use serde_json::json;

/// Arguments of `heaplab stats`.
#[derive(Args)]
pub struct StatsArgs {
    /// Instance or placement file (CSV or .hlbin), or a trace (.hltrace, converted on the way);
    /// '-' reads standard input.
    input: String,
    /// Lifetime convention of the input.
    #[arg(long, default_value = "inex", value_parser = crate::options::semantics())]
    semantics: Semantics,
    /// Print as JSON.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    trace: crate::options::TraceInputArgs,
}

/// `heaplab stats`.
pub fn stats(a: StatsArgs) -> Result<(), Failure> {
    let (inst, _, _) = crate::trace_input::read_input(Input::open(&a.input)?, a.semantics, true, &a.trace)?;
    let s = heaplab_sweep::stats::stats(&inst.buffers);
    let hist = |h: &[heaplab_sweep::stats::Bucket]| -> Vec<serde_json::Value> {
        h.iter().map(|b| json!({"lo": b.lo, "hi": b.hi, "count": b.count})).collect()
    };
    if a.json {
        let v = json!({
            "input": a.input, "n": s.n, "max_load": s.max_load, "max_live": s.max_live,
            "conflicts": s.conflicts, "components": s.components, "largest_component": s.largest_component,
            "total_size": s.total_size, "span": [s.span.0, s.span.1], "size_min": s.size_range.0,
            "size_max": s.size_range.1, "aligned": s.aligned,
            "size_histogram": hist(&s.size_hist), "lifetime_histogram": hist(&s.lifetime_hist),
        });
        println!("{}", serde_json::to_string_pretty(&v).expect("JSON of plain values"));
        return Ok(());
    }
    println!("instance           {}", a.input);
    println!("buffers            {}", grouped(s.n as u64));
    println!("max load           {} B ({})", grouped(s.max_load), bytes(s.max_load));
    println!("total size         {} B ({})", grouped(s.total_size), bytes(s.total_size));
    println!("most live at once  {}", grouped(s.max_live as u64));
    println!("conflicting pairs  {}", grouped(s.conflicts));
    println!("components         {} (largest {} buffers)", grouped(s.components as u64), grouped(s.largest_component as u64));
    println!("time span          [{}, {})", s.span.0, s.span.1);
    println!("sizes              {} … {}", bytes(s.size_range.0), bytes(s.size_range.1));
    println!("aligned buffers    {}", grouped(s.aligned as u64));
    for (title, h, unit_bytes) in [("size", &s.size_hist, true), ("lifetime (ticks)", &s.lifetime_hist, false)] {
        println!("\n{title} histogram");
        let most = h.iter().map(|b| b.count).max().unwrap_or(1);
        for b in h.iter() {
            let range = if unit_bytes { format!("{} – {}", bytes(b.lo), bytes(b.hi)) } else { format!("{} – {}", b.lo, b.hi) };
            let bar = "#".repeat(((b.count * 40).div_ceil(most)) as usize);
            println!("  {range:>26}  {:>10}  {bar}", grouped(b.count));
        }
    }
    Ok(())
}
