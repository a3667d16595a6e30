//! `heaplab trace-info`: describe a trace (calls, threads, peak live bytes, direct mappings,
//! the RSS breakdown, sizes, duration) or a run index (its processes, then one in full).

use crate::trace_input::{analyse_with_progress, damaged, select_trace};
use crate::Failure;
use clap::Args;
use heaplab_model::units::{bytes, grouped};
use heaplab_model::{FileKind, Input};
use heaplab_trace::format::{Op, PageOp};
use heaplab_trace::run::{describe_ending as end_text, RunIndex};
use heaplab_trace::{Ending, Header, TraceReader, TraceStats};
use serde_json::{json, Value};
use std::fmt::Write as _;
use std::path::Path;

/// The run's processes in the order they started; with `most`, only the `most` with the most
/// events (and a line saying how many more the index lists).
pub fn print_table(w: &mut String, index: &RunIndex, shown: impl Fn(&str) -> String, most: usize) {
    let mut by_events: Vec<usize> = (0..index.processes.len()).collect();
    by_events.sort_by_key(|&k| std::cmp::Reverse(index.processes[k].events));
    let mut rows: Vec<usize> = by_events.into_iter().take(most).collect();
    rows.sort_unstable();
    let _ = writeln!(w, "  {:>8} {:>8}  {:<12} {:>12} {:>11}  file  command", "pid", "parent", "origin", "events", "peak RSS");
    for &k in &rows {
        let p = &index.processes[k];
        let file = p.file.as_deref().map(&shown).unwrap_or_else(|| "(no heap calls)".into());
        let rss = p.peak_rss.map(bytes).unwrap_or_else(|| "—".into());
        let cmd = if p.args.is_empty() { p.exe.clone() } else { p.args.join(" ") };
        let _ = writeln!(w, "  {:>8} {:>8}  {:<12} {:>12} {:>11}  {file}  `{}`", p.pid, p.ppid, p.origin, grouped(p.events), rss, clip(&cmd, 60));
    }
    if rows.len() < index.processes.len() {
        let _ = writeln!(w, "  … and {} more with fewer events (every one is in the index)", index.processes.len() - rows.len());
    }
}

/// At most `n` characters of `s`, with an ellipsis when cut.
fn clip(s: &str, n: usize) -> String {
    match s.char_indices().nth(n) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

fn calls_json(calls: &std::collections::BTreeMap<Op, u64>) -> Value {
    let mut m = serde_json::Map::new();
    for op in Op::ALL {
        m.insert(op.name().to_string(), json!(calls.get(&op).copied().unwrap_or(0)));
    }
    Value::Object(m)
}

fn calls_text(calls: &std::collections::BTreeMap<Op, u64>, free_null: u64) -> String {
    let list: Vec<String> = calls.iter().map(|(op, n)| format!("{} {}", op.name(), grouped(*n))).collect();
    let fnull = if free_null > 0 { format!(", free(NULL) {}", grouped(free_null)) } else { String::new() };
    format!("{}{fnull}", list.join(", "))
}

/// The direct calls (page events) as `mmap 5, munmap 6, …`, failures noted; "none" when there
/// are none.
fn page_calls_text(calls: &std::collections::BTreeMap<PageOp, u64>, failed: u64) -> String {
    if calls.is_empty() {
        return "none".into();
    }
    let list: Vec<String> = calls.iter().map(|(op, n)| format!("{} {}", op.name(), grouped(*n))).collect();
    let failed = if failed > 0 { format!(" ({} failed)", grouped(failed)) } else { String::new() };
    format!("{}{failed}", list.join(", "))
}

/// The `pages` object of `trace-info --json`: direct calls and the memory they held.
fn pages_json(st: &TraceStats) -> Value {
    let p = &st.pages;
    let mut calls = serde_json::Map::new();
    for op in PageOp::ALL {
        calls.insert(op.name().to_string(), json!(p.calls.get(&op).copied().unwrap_or(0)));
    }
    json!({
        "calls": calls,
        "failed": p.failed,
        "peak_anon_bytes": p.peak_anon_bytes,
        "peak_file_bytes": p.peak_file_bytes,
        "peak_reserved_bytes": p.peak_reserved_bytes,
        "peak_brk_bytes": p.peak_brk_bytes,
        "peak_direct_bytes": p.peak_direct_bytes,
        "peak_heap_and_direct_bytes": p.peak_heap_and_direct_bytes,
        "mapped_at_end_bytes": p.mapped_at_end_bytes,
    })
}

/// The `rss_breakdown` object of `trace-info --json` (null without a trailer's peak RSS).
fn rss_breakdown_json(s: &Summary) -> Value {
    let Some(b) = s.ending.trailer.as_ref().and_then(|t| s.stats.rss_breakdown(t.peak_rss)) else { return Value::Null };
    json!({
        "peak_rss_bytes": b.peak_rss,
        "heap_bytes": b.heap,
        "heap_pct": b.heap_pct,
        "direct_bytes": b.direct,
        "direct_pct": b.direct_pct,
        "rest_bytes": b.rest,
        "rest_pct": b.rest_pct,
        "overlap": b.overlap,
    })
}

/// The lines on direct mappings and the RSS breakdown in `trace-info`.
fn print_pages(s: &Summary) {
    let p = &s.stats.pages;
    println!("direct calls   {}", page_calls_text(&p.calls, p.failed));
    if !p.calls.is_empty() {
        println!(
            "direct maps    peak {} anonymous, {} file-backed, break +{}; {} reserved PROT_NONE; {} mapped at the end",
            bytes(p.peak_anon_bytes),
            bytes(p.peak_file_bytes),
            bytes(p.peak_brk_bytes),
            bytes(p.peak_reserved_bytes),
            bytes(p.mapped_at_end_bytes)
        );
        println!("               together {} at their peak; with the heap's live bytes {}", bytes(p.peak_direct_bytes), bytes(p.peak_heap_and_direct_bytes));
    }
    if let Some(b) = s.ending.trailer.as_ref().and_then(|t| s.stats.rss_breakdown(t.peak_rss)) {
        println!(
            "RSS breakdown  the heap explains {:.1}% of peak RSS ({} live); direct mappings {:.1}% ({}); the rest (code, stacks, libraries, allocator overhead) {:.1}% ({})",
            b.heap_pct,
            bytes(b.heap),
            b.direct_pct,
            bytes(b.direct),
            b.rest_pct,
            bytes(b.rest)
        );
        if b.overlap {
            println!("               (heap and mappings peaked at different moments or were not all resident: their sum passes the RSS peak)");
        }
    }
}

/// Everything `trace-info` reports about one file.
struct Summary {
    file: String,
    header: Header,
    ending: Ending,
    stats: TraceStats,
}

fn summarise(input: Input) -> Result<Summary, Failure> {
    let shown = input.name().to_string();
    let shown = shown.as_str();
    let mut r = TraceReader::from_input(input)?;
    let analysis = analyse_with_progress(&mut r, None, shown);
    let header = r.header().clone();
    Ok(Summary { file: shown.to_string(), header, ending: r.into_ending(), stats: analysis.stats })
}


fn duration_ns(s: &Summary) -> u64 {
    let end = s.ending.trailer.as_ref().map(|t| s.header.ns_since_start(t.end_ts));
    end.or(s.stats.last_ns).unwrap_or(0)
}

fn summary_json(s: &Summary) -> Value {
    let st = &s.stats;
    let calls = calls_json(&st.calls);
    let t = s.ending.trailer.as_ref();
    json!({
        "file": s.file,
        "file_bytes": s.ending.file_bytes,
        "bytes_per_event": if st.events > 0 { s.ending.file_bytes as f64 / st.events as f64 } else { 0.0 },
        "pid": s.header.pid,
        "ppid": s.header.ppid,
        "origin": s.header.origin.name(),
        "exe": s.header.exe,
        "args": s.header.args,
        "stack_depth": s.header.stack_depth,
        "events": st.events,
        "calls": calls,
        "free_null": st.free_null,
        "threads": st.threads.len(),
        "calls_per_thread": st.threads.iter().map(|(t, n)| json!({"tid": t, "calls": n})).collect::<Vec<_>>(),
        "peak_live_bytes": st.peak_live_requested,
        "peak_live_usable_bytes": st.peak_live_usable,
        "peak_live_blocks": st.peak_live_blocks,
        "peak_pages_bytes": st.peak_pages_bytes,
        "peak_rss_bytes": t.map(|t| t.peak_rss),
        "pages": pages_json(st),
        "rss_breakdown": rss_breakdown_json(s),
        "total_requested_bytes": st.total_requested,
        "failed_allocations": st.failed,
        "unmatched_frees": st.unmatched_frees,
        "live_at_end": st.live_at_end,
        "duration_ns": duration_ns(s),
        "size_histogram": st.size_histogram.iter().map(|(lo, hi, c)| json!({"lo": lo, "hi": hi, "count": c})).collect::<Vec<_>>(),
        "call_sites": s.ending.sites.len(),
        "modules": t.map_or(0, |t| t.modules.len()),
        "complete": s.ending.is_complete(),
        "status": end_text(&s.ending),
        "damage": s.ending.damage.as_ref().map(|d| json!({"offset": d.offset, "reason": d.reason, "usable_below_seq": d.usable_below})),
        "usable_events": st.events,
    })
}

fn print_summary(s: &Summary) {
    let st = &s.stats;
    let h = &s.header;
    println!("trace          {} ({}, {:.2} bytes/event)", s.file, bytes(s.ending.file_bytes), if st.events > 0 { s.ending.file_bytes as f64 / st.events as f64 } else { 0.0 });
    println!("process        pid {} ({}), {}", h.pid, h.origin.name(), if h.args.is_empty() { h.exe.clone() } else { h.args.join(" ") });
    println!("status         {}", end_text(&s.ending));
    println!("events         {}", grouped(st.events));
    println!("calls          {}", calls_text(&st.calls, st.free_null));
    println!("threads        {}", st.threads.len());
    println!("peak live      {} B requested ({}), {} usable, {} blocks", grouped(st.peak_live_requested), bytes(st.peak_live_requested), bytes(st.peak_live_usable), grouped(st.peak_live_blocks));
    println!("peak pages     {} touched by live blocks", bytes(st.peak_pages_bytes));
    if let Some(t) = &s.ending.trailer {
        println!("peak RSS       {} (kernel VmHWM: code, stacks and libraries included)", bytes(t.peak_rss));
    }
    print_pages(s);
    println!("allocated      {} in total; {} failed, {} frees of unknown pointers, {} blocks live at the end", bytes(st.total_requested), grouped(st.failed), grouped(st.unmatched_frees), grouped(st.live_at_end));
    println!("duration       {:.3} s", duration_ns(s) as f64 / 1e9);
}

fn print_histogram(st: &TraceStats) {
    println!("\nrequested size histogram");
    let most = st.size_histogram.iter().map(|b| b.2).max().unwrap_or(1);
    for &(lo, hi, c) in &st.size_histogram {
        let bar = "#".repeat(((c * 40).div_ceil(most)) as usize);
        println!("  {:>24}  {:>10}  {bar}", format!("{} – {}", bytes(lo), bytes(hi)), grouped(c));
    }
    if st.threads.len() > 1 {
        println!("\ncalls per thread");
        for (t, n) in &st.threads {
            println!("  {t:>10}  {:>10}", grouped(*n));
        }
    }
}

/// Arguments of `heaplab trace-info`.
#[derive(Args)]
pub struct TraceInfoArgs {
    /// A trace written by `heaplab trace`, or a run's index (.hlrun): every process, then the
    /// one --process names in full.
    input: String,
    /// For a run index: describe this process in full (a pid, or a program name such as
    /// python3; the one with the most events when several have it).
    #[arg(long, value_name = "PID|NAME")]
    process: Option<String>,
    /// Print as JSON.
    #[arg(long)]
    json: bool,
    /// Exit 0 on a damaged (e.g. truncated) trace; its usable part is described either way.
    #[arg(long)]
    allow_truncated: bool,
}

fn damage_failure(file: &str, e: &Ending, events: u64) -> Option<Failure> {
    e.damage.as_ref().map(|d| damaged(file, &d.reason, events, d.usable_below))
}

/// `heaplab trace-info` on a run index: the run and its processes, then one process in full.
fn run_info(a: &TraceInfoArgs, input: Input) -> Result<(), Failure> {
    let (trace, index) = select_trace(input, a.process.as_deref())?;
    let index = index.expect("a run index");
    let p = index.select(a.process.as_deref()).map_err(|e| Failure::Input(format!("{}: {e}", a.input)))?;
    let dir = Path::new(&a.input).parent().unwrap_or(Path::new(""));
    let shown = |f: &str| dir.join(f).to_string_lossy().into_owned();
    let events: u64 = index.processes.iter().map(|p| p.events).sum();
    let file_bytes: u64 = index.processes.iter().map(|p| p.file_bytes).sum();
    let peak_rss = index.processes.iter().filter_map(|p| p.peak_rss).max();
    let s = Some(summarise(trace)?);
    if a.json {
        let mut v: Value = serde_json::from_str(&index.to_json()).expect("the index is JSON");
        v["total_events"] = json!(events);
        v["total_file_bytes"] = json!(file_bytes);
        v["largest_peak_rss_bytes"] = json!(peak_rss);
        v["selected"] = s.as_ref().map(summary_json).unwrap_or(Value::Null);
        println!("{}", serde_json::to_string_pretty(&v).expect("JSON of plain values"));
    } else {
        let mut w = String::new();
        let _ = writeln!(w, "run            {}  `{}` — {}", a.input, index.command.join(" "), index.status);
        let traced = index.processes.iter().filter(|p| p.file.is_some()).count();
        let _ = writeln!(w, "processes      {} ({} with heap calls)", index.processes.len(), traced);
        let _ = writeln!(w, "events         {} in {} of traces", grouped(events), bytes(file_bytes));
        if let Some(r) = peak_rss {
            let _ = writeln!(w, "peak RSS       {} (the largest of any one process)", bytes(r));
        }
        print_table(&mut w, &index, shown, usize::MAX);
        print!("{w}");
        let why = if a.process.is_some() { "as --process asks" } else { "the most events; --process PID|NAME picks another" };
        println!("\n— {} ({why}) —", p.label());
        if let Some(s) = &s {
            print_trace_info(s);
        }
    }
    match s.as_ref().and_then(|s| damage_failure(&s.file, &s.ending, s.stats.events)) {
        Some(f) if !a.allow_truncated => Err(f),
        _ => Ok(()),
    }
}

fn print_trace_info(s: &Summary) {
    print_summary(s);
    if s.header.stack_depth > 0 {
        println!("call sites     {} distinct (stack depth {})", grouped(s.ending.sites.len() as u64), s.header.stack_depth);
    }
    if let Some(t) = &s.ending.trailer {
        let n = t.modules.len();
        println!("modules        {n} executable mapping{} recorded for symbolisation", if n == 1 { "" } else { "s" });
    }
    print_histogram(&s.stats);
}

/// `heaplab trace-info`.
pub fn trace_info(a: TraceInfoArgs) -> Result<(), Failure> {
    let mut input = Input::open(&a.input)?;
    if input.kind()? == FileKind::RunIndex {
        return run_info(&a, input);
    }
    let (input, _) = select_trace(input, a.process.as_deref())?;
    let s = summarise(input)?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&summary_json(&s)).expect("JSON of plain values"));
    } else {
        print_trace_info(&s);
    }
    match damage_failure(&a.input, &s.ending, s.stats.events) {
        Some(f) if !a.allow_truncated => Err(f),
        _ => Ok(()),
    }
}
