//! Trace input for the commands that read instances (`plan`, `stats`, `convert`) and traces
//! (`replay`, `trace-info`): the work is `heaplab_trace::instance` (picking a run index's
//! process, reading whatever file was given, converting, the oracle gap); this module words
//! it: the line saying which process was taken, the progress line, the conversion summary,
//! the oracle gap table and JSON, and the messages that name this CLI's flags.

use crate::options::TraceInputArgs;
use crate::progress::ProgressLine;
use crate::Failure;
use heaplab_model::units::{bytes, grouped};
use heaplab_model::{Input, Instance, Semantics};
use heaplab_trace::instance::{self, InstanceError, OracleGap, ReadOptions, ReadWatch, SelectedRun, TraceInstance};
use heaplab_trace::run::RunIndex;
use heaplab_trace::{analyse, Analysis, ConvertOptions, TraceReader};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// The message for a damaged trace, naming the flag that accepts it.
pub fn damaged(name: &str, reason: &str, events: u64, usable_below: u64) -> Failure {
    Failure::Input(format!(
        "{name}: {reason} ({} events before it, sequence numbers < {usable_below}, are usable; pass --allow-truncated to use them)",
        grouped(events)
    ))
}

/// A trace-input error in this CLI's words (its flags named).
fn failure(e: InstanceError, selector: Option<&str>) -> Failure {
    match e {
        InstanceError::Input(e) => e.into(),
        InstanceError::NotRunIndex { .. } => Failure::Input(format!("--process {}: {e}", selector.unwrap_or_default())),
        InstanceError::Damaged { name, reason, events, usable_below } => damaged(&name, &reason, events, usable_below),
        InstanceError::NoSuchThread { name, thread, known } => {
            let known: Vec<String> = known.iter().map(|k| k.to_string()).collect();
            Failure::Input(format!("{name}: --thread {thread}: no such thread (threads: {})", known.join(", ")))
        }
        e => Failure::of(e.class(), e.to_string()),
    }
}

/// The trace a reader takes from `input`: `input` itself, or for a run index the process
/// `selector` picks (by default the one with the most events), said on standard error, with
/// the index.
pub fn select_trace(input: Input, selector: Option<&str>) -> Result<(Input, Option<RunIndex>), Failure> {
    let name = input.name().to_string();
    let s = instance::select(input, selector).map_err(|e| failure(e, selector))?;
    let Some(run) = s.run else { return Ok((s.input, None)) };
    say_selected(&name, &run, selector);
    Ok((s.input, Some(run.index)))
}

/// The line on standard error saying which process of the run index `name` is read.
fn say_selected(name: &str, run: &SelectedRun, selector: Option<&str>) {
    let why = if selector.is_some() { "as --process asks" } else { "the most events; --process PID|NAME picks another" };
    eprintln!("heaplab: {name}: reading {} ({why}): {}", run.process, run.file.display());
}

/// Runs the analysis with a progress line on a terminal (big traces take seconds).
pub fn analyse_with_progress<R: std::io::Read>(r: &mut TraceReader<R>, convert: Option<&ConvertOptions>, shown: &str) -> Analysis {
    let counter = Arc::new(AtomicU64::new(0));
    let _line = progress_line(&counter, shown);
    analyse(r, convert, Some(&counter))
}

fn progress_line(counter: &Arc<AtomicU64>, shown: &str) -> ProgressLine {
    let (c, name) = (counter.clone(), shown.to_string());
    ProgressLine::start(move |el| format!("reading {name}: {} events, {:.1} s", grouped(c.load(Ordering::Relaxed)), el.as_secs_f64()))
}

/// Reads an instance from an instance file or, when `path` is a trace, by converting it.
pub fn read_instance(path: &str, semantics: Semantics, t: &TraceInputArgs) -> Result<(Instance, Option<TraceInstance>), Failure> {
    let (inst, _, traced) = read_input(Input::open(path)?, semantics, false, t)?;
    Ok((inst, traced))
}

/// What [`read_input`] read: the instance, its offsets when it is a placement, and the trace it
/// was converted from.
pub type InstanceRead = (Instance, Option<Vec<u64>>, Option<TraceInstance>);

/// Reads an instance (with its offsets when `allow_offsets` and the file has them) from an
/// opened input, converting it first when it is a trace, or the trace a run index's
/// `--process` picks ([`instance::read_input`]), saying on standard error what it reads.
pub fn read_input(input: Input, semantics: Semantics, allow_offsets: bool, t: &TraceInputArgs) -> Result<InstanceRead, Failure> {
    let mut watch = Watch { name: input.name().to_string(), args: t, line: None };
    let opts = ReadOptions { convert: t.convert(), allow_truncated: t.allow_truncated };
    let selector = t.process.as_deref();
    let r = instance::read_input(input, selector, semantics, allow_offsets, &opts, &mut watch).map_err(|e| failure(e, selector))?;
    Ok((r.instance, r.offsets, r.trace))
}

/// What [`read_input`] shows while the library reads: the process taken, the progress line,
/// the conversion summary.
struct Watch<'a> {
    /// The input's name as given.
    name: String,
    args: &'a TraceInputArgs,
    line: Option<ProgressLine>,
}

impl ReadWatch for Watch<'_> {
    fn selected(&mut self, run: &SelectedRun) {
        say_selected(&self.name, run, self.args.process.as_deref());
    }

    fn converting(&mut self, name: &str) -> Option<Arc<AtomicU64>> {
        let counter = Arc::new(AtomicU64::new(0));
        self.line = Some(progress_line(&counter, name));
        Some(counter)
    }

    fn converted(&mut self, name: &str, traced: &TraceInstance) {
        self.line = None;
        eprintln!(
            "heaplab: {name}: {} events -> {} buffers ({} clock, {} sizes)",
            grouped(traced.stats.events),
            grouped(traced.instance.len() as u64),
            self.args.clock_name(),
            self.args.size_name()
        );
    }
}

/// The oracle gap as the "trace" object of `plan --json`.
pub fn oracle_gap_json(g: &OracleGap) -> Value {
    json!({
        "events": g.events,
        "threads": g.threads,
        "peak_live_bytes": g.peak_live_requested,
        "peak_live_usable_bytes": g.peak_live_usable,
        "plan_makespan": g.plan_makespan,
        "allocator_peak_pages_bytes": g.allocator_peak_pages,
        "allocator_peak_rss_bytes": g.peak_rss,
        "oracle_gap_bytes": g.gap_bytes,
        "oracle_gap_pct_of_makespan": g.gap_pct_of_makespan,
        "complete": g.complete,
    })
}

/// The oracle gap as the lines `plan` prints after its summary.
pub fn print_oracle_gap(g: &OracleGap, max_load: u64) {
    println!("— oracle gap: the trace's real allocator against this plan —");
    println!("peak live      {} B ({}) requested, {} usable  (lower bound: max load {})", grouped(g.peak_live_requested), bytes(g.peak_live_requested), bytes(g.peak_live_usable), bytes(max_load));
    println!("plan makespan  {} B ({})", grouped(g.plan_makespan), bytes(g.plan_makespan));
    println!(
        "allocator      {} in pages touched by live blocks at its peak  (gap {}{} B, {:+.1}% of the plan)",
        bytes(g.allocator_peak_pages),
        if g.gap_bytes < 0 { "-" } else { "" },
        grouped(g.gap_bytes.unsigned_abs() as u64),
        g.gap_pct_of_makespan
    );
    match g.peak_rss {
        Some(r) => println!("process RSS    {} peak (VmHWM; includes code, stacks, libraries)", bytes(r)),
        None => println!("process RSS    unknown (no trailer)"),
    }
}
