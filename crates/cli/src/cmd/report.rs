//! `heaplab report`: the heap report of a trace (heaplab-report's analysis, symbolisation,
//! oracle, diff and limits) as text, JSON or a self-contained HTML page; and the CI limits
//! `trace` checks after the program ends.

use crate::trace_input::{damaged, select_trace};
use crate::Failure;
use clap::Args;
use heaplab_model::units::{grouped, parse_bytes};
use heaplab_model::Input;
use heaplab_report::analyse::{analyse, Options};
use heaplab_report::limits::{self, Limits};
use heaplab_report::model::{AllocatorRow, Report};
use heaplab_trace::TraceReader;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

pub const REPORT_HELP: &str = "\
The heap report of a trace, as users of heaptrack and memray expect it: where the peak comes from
(bytes each call site had live when the heap peaked), which sites allocate the most bytes or the
most often, what is temporary (freed by the thread's next heap call, as heaptrack counts it), what
leaks (live at the end), the heap over time, size and lifetime histograms; beside what only
heaplab knows: the optimal plan of the same heap (the oracle gap: peak vs optimal plan vs lower
bound). Call sites are symbolised from the module map the trace records: DWARF when the program or
a separate debug file (/usr/lib/debug) has it, else the symbol tables; the notes say what is
missing. Trace with --stack-depth 16 (or 8, the default) to have call sites.

Without -o the report is printed (the summary, then the top sites by peak, by bytes, by calls, by
temporaries and the leaks, each with its stack); with -o DIR it is written as DIR/index.html (one
self-contained page, no network) and DIR/report.json. --json prints the report's JSON instead.
--at TIME prints the sites live at that moment (1.5s, 250ms, 40%: the recorded moment nearest).

--diff AFTER compares two traces of the same program site by site (sites match across runs
whatever the load addresses): the sites whose bytes at the peak changed most come first.

Allocators beside the plan: --replay glibc,jemalloc replays the trace under each allocator (as
`heaplab replay` does) and measures its placement (as `heaplab frag` does): its peak (bytes of the
pages its live blocks touched), its 2-D fragmentation, and how far its peak is over the optimal
plan. --placed a.hlplaced,b.hlplaced shows replays already made the same way.

CI limits: --limit-peak, --limit-leaks (sizes: 200MiB, 1,048,576, ...) and --limit-allocations
exit 1 when the trace passes one, naming the largest sites on standard error. `heaplab trace`
takes the same flags and checks them once the program has exited 0.

Exit status: 0 success; 1 a limit was exceeded; 2 bad input (not a trace, damaged without
--allow-truncated, a missing file, an unknown or missing allocator, a placed file that is not).

Examples:
  heaplab trace --stack-depth 16 -o run.hltrace -- ./prog args
  heaplab report run.hltrace --top 20
  heaplab report run.hltrace -o report/            # report/index.html, report/report.json
  heaplab report run.hltrace --at 40%
  heaplab report run.hltrace --replay glibc,jemalloc,mimalloc,tcmalloc -o report/
  heaplab report before.hltrace --diff after.hltrace -o diff/
  heaplab report run.hltrace --limit-peak 200MiB --limit-leaks 1MiB";

/// The CI limits, shared by `report` and `trace`.
#[derive(Args, Clone, Default)]
pub struct LimitArgs {
    /// Exit 1 when the heap's peak (live requested bytes) passes this size (bytes, or 200MiB,
    /// 1GB, ...), naming the sites with the most bytes at the peak.
    #[arg(long, value_name = "BYTES", help_heading = "CI limits")]
    pub limit_peak: Option<String>,
    /// Exit 1 when the bytes live at the end (leaks) pass this size, naming the leaking sites.
    #[arg(long, value_name = "BYTES", help_heading = "CI limits")]
    pub limit_leaks: Option<String>,
    /// Exit 1 when the allocation calls pass this number, naming the sites with the most calls.
    #[arg(long, value_name = "N", help_heading = "CI limits")]
    pub limit_allocations: Option<u64>,
}

impl LimitArgs {
    /// The limits, sizes parsed.
    pub fn limits(&self) -> Result<Limits, Failure> {
        let size = |flag: &str, v: &Option<String>| v.as_deref().map(parse_bytes).transpose().map_err(|e| Failure::Input(format!("{flag} {e}")));
        Ok(Limits { peak: size("--limit-peak", &self.limit_peak)?, leaks: size("--limit-leaks", &self.limit_leaks)?, allocations: self.limit_allocations })
    }
}

/// Sites named per limit passed.
const LIMIT_SITES: usize = 3;

/// Checks `report` against `limits`: the limits passed, with their sites, on standard error and
/// as a failure (exit 1).
pub fn check_limits(report: &Report, limits: &Limits) -> Result<(), Failure> {
    let v = limits::check(report, limits, LIMIT_SITES);
    if v.is_empty() {
        return Ok(());
    }
    eprint!("{}", limits::describe(report, &v));
    let flags: Vec<&str> = v.iter().map(|x| x.kind.flag()).collect();
    Err(Failure::Work(format!("{}: past {}", report.meta.trace, flags.join(", "))))
}

/// When the oracle is planned.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum OracleMode {
    /// When the trace is small enough to plan in a few seconds.
    Auto,
    /// Always (under --plan-time-limit).
    On,
    /// Never.
    Off,
}

/// Arguments of `heaplab report`.
#[derive(Args)]
pub struct ReportArgs {
    /// A trace written by `heaplab trace` (or a run's index, .hlrun: the process with the most
    /// events, or the one --process names).
    input: String,
    /// Compare with this later trace of the same program, site by site.
    #[arg(long, value_name = "AFTER")]
    diff: Option<String>,
    /// Write DIR/index.html (self-contained) and DIR/report.json instead of printing.
    #[arg(short, long, value_name = "DIR")]
    output: Option<String>,
    /// Sites per table.
    #[arg(long, default_value_t = 10, value_name = "N")]
    top: usize,
    /// Print the report (or the diff) as JSON.
    #[arg(long)]
    json: bool,
    /// Print the sites live at this moment: seconds (1.5, 1.5s, 250ms) or a share of the run (40%).
    #[arg(long, value_name = "TIME")]
    at: Option<String>,
    /// Plan the trace's heap for the oracle gap: auto plans traces of up to 200,000 allocations.
    #[arg(long, value_enum, default_value_t = OracleMode::Auto)]
    oracle: OracleMode,
    /// Seconds the oracle's planner may take.
    #[arg(long, default_value_t = 2.0, value_name = "SECONDS")]
    plan_time_limit: f64,
    /// For a run index (.hlrun): the process to report (a pid or a program name).
    #[arg(long, value_name = "PID|NAME")]
    process: Option<String>,
    /// Report the usable part of a damaged (truncated) trace instead of failing.
    #[arg(long)]
    allow_truncated: bool,
    /// Replay the trace under these allocators (comma-separated: glibc, jemalloc, mimalloc,
    /// tcmalloc, or paths of shared libraries) and show each one's peak and 2-D fragmentation
    /// beside the plan.
    #[arg(long, value_name = "ALLOCATORS", help_heading = "Allocators beside the plan")]
    replay: Option<String>,
    /// Placed files of this trace already replayed (`heaplab replay -o`), comma-separated:
    /// shown as --replay shows its replays.
    #[arg(long, value_name = "FILES", value_delimiter = ',', help_heading = "Allocators beside the plan")]
    placed: Vec<String>,
    #[command(flatten)]
    limits: LimitArgs,
}

/// Adds to `report` a row per allocator of `allocs` replaying its trace (`input`, or the
/// process of a run index), then a row per placed file, each measured as `heaplab frag` does.
fn allocator_rows(report: &mut Report, input: &str, process: Option<&str>, allow_truncated: bool, allocs: &[heaplab_replay::Allocator], placed: &[String]) -> Result<(), Failure> {
    if !allocs.is_empty() {
        let trace = crate::cmd::replay::trace_file(input, process)?;
        for al in allocs {
            let (p, _) = crate::cmd::replay::replay_with_progress(&trace, al, allow_truncated)?;
            let opts = heaplab_frag::FragOptions { page_size: p.meta.page_size as u64, buckets: 0 };
            let f = heaplab_frag::fragmentation(&p, &opts).map_err(|e| Failure::Work(format!("the replay under {} is not a valid placement: {e}", al.name)))?;
            report.allocators.push(AllocatorRow::new(&al.name, f.peak_pages_bytes, f.total.external_ratio(), report.oracle.as_ref()));
        }
    }
    for path in placed {
        let m = heaplab_frag::measure(path, None, 0).map_err(|e| Failure::Input(e.to_string()))?;
        let file_name = |p: &str| std::path::Path::new(p).file_name().map(|n| n.to_os_string());
        if !m.placed.meta.trace.is_empty() && file_name(&m.placed.meta.trace) != file_name(&report.meta.trace) {
            report.notes.push(format!("{path} is a replay of {}, not of {}", m.placed.meta.trace, report.meta.trace));
        }
        let name = if m.placed.meta.allocator.is_empty() { path.clone() } else { m.placed.meta.allocator.clone() };
        report.allocators.push(AllocatorRow::new(&name, m.frag.peak_pages_bytes, m.frag.total.external_ratio(), report.oracle.as_ref()));
    }
    Ok(())
}

/// A moment asked for by `--at`.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Moment {
    Ns(u64),
    Share(f64),
}

fn parse_moment(s: &str) -> Result<Moment, Failure> {
    let bad = || Failure::Input(format!("--at {s:?}: expected seconds (1.5, 1.5s, 250ms, 20us, 100ns) or a share of the run (40%)"));
    let t = s.trim();
    if let Some(p) = t.strip_suffix('%') {
        let v: f64 = p.trim().parse().map_err(|_| bad())?;
        return if (0.0..=100.0).contains(&v) { Ok(Moment::Share(v / 100.0)) } else { Err(bad()) };
    }
    let (num, scale) = [("ns", 1.0), ("us", 1e3), ("ms", 1e6), ("s", 1e9)]
        .iter()
        .find_map(|(u, k)| t.strip_suffix(u).map(|n| (n, *k)))
        .unwrap_or((t, 1e9));
    let v: f64 = num.trim().parse().map_err(|_| bad())?;
    if !(v.is_finite() && v >= 0.0) {
        return Err(bad());
    }
    Ok(Moment::Ns((v * scale) as u64))
}

/// The report of one trace (or of a run index's process), with the oracle as `mode` asks.
pub fn build(path: &str, process: Option<&str>, allow_truncated: bool, mode: OracleMode, plan_limit: f64, at_ns: Option<u64>) -> Result<Report, Failure> {
    let (input, _) = select_trace(Input::open(path)?, process)?;
    let name = input.name().to_string();
    let mut r = TraceReader::from_input(input)?;
    let counter = Arc::new(AtomicU64::new(0));
    let report = {
        let (c, shown) = (counter.clone(), name.clone());
        let _line = crate::progress::ProgressLine::start(move |el| format!("reading {shown}: {} events, {:.1} s", grouped(c.load(Ordering::Relaxed)), el.as_secs_f64()));
        analyse(&mut r, &Options { at_ns, ..Options::default() }, Some(&counter))
    };
    let mut report = report;
    if let Some(d) = &r.ending().damage {
        if !allow_truncated {
            return Err(damaged(&name, &d.reason, report.summary.allocations + report.summary.frees, d.usable_below));
        }
    }
    report.meta.trace = path.to_string();
    let plan = match mode {
        OracleMode::Off => false,
        OracleMode::On => true,
        OracleMode::Auto => heaplab_report::oracle::worth_planning(report.summary.allocations),
    };
    if plan && name == "-" {
        report.notes.push("the oracle was not planned: the trace came from standard input and cannot be read twice".into());
    } else if plan {
        let _line = crate::progress::ProgressLine::start(move |el| format!("planning the oracle: {:.1} s", el.as_secs_f64()));
        match heaplab_report::oracle::plan(Input::open(&name)?, Duration::from_secs_f64(plan_limit)) {
            Ok(o) => report.oracle = Some(o),
            Err(e) => report.notes.push(format!("the oracle was not planned: {e}")),
        }
    } else if mode == OracleMode::Auto {
        report.notes.push(format!(
            "the oracle (the optimal plan of this heap) was not planned: {} allocations are more than --oracle auto plans ({}); --oracle on plans it within --plan-time-limit",
            grouped(report.summary.allocations),
            grouped(heaplab_report::oracle::AUTO_MAX_BLOCKS)
        ));
    }
    Ok(report)
}

/// `heaplab report`.
pub fn report(a: ReportArgs) -> Result<(), Failure> {
    let limits = a.limits.limits()?;
    if !(a.plan_time_limit > 0.0 && a.plan_time_limit <= 3600.0) {
        return Err(Failure::Input(format!("--plan-time-limit {}: expected seconds, more than 0 and at most 3600", a.plan_time_limit)));
    }
    if a.top == 0 {
        return Err(Failure::Input("--top 0: expected at least 1".into()));
    }
    let moment = a.at.as_deref().map(parse_moment).transpose()?;
    if moment.is_some() && (a.diff.is_some() || a.output.is_some() || a.json) {
        return Err(Failure::Input("--at prints the live sites of one moment: it goes without --diff, -o and --json".into()));
    }
    let allocs = a.replay.as_deref().map(heaplab_replay::resolve_list).transpose()?.unwrap_or_default();
    if (!allocs.is_empty() || !a.placed.is_empty()) && (moment.is_some() || a.diff.is_some()) {
        return Err(Failure::Input("--replay and --placed add allocators to the report of one trace: they go without --at and --diff".into()));
    }
    let staging = a.output.as_deref().map(crate::outputs::report_dir).transpose()?;
    let at_ns = match moment {
        Some(Moment::Ns(ns)) => Some(ns),
        _ => None,
    };
    let mut report = build(&a.input, a.process.as_deref(), a.allow_truncated, a.oracle, a.plan_time_limit, at_ns)?;
    allocator_rows(&mut report, &a.input, a.process.as_deref(), a.allow_truncated, &allocs, &a.placed)?;
    if let Some(m) = moment {
        let ns = match m {
            Moment::Ns(ns) => ns,
            Moment::Share(f) => (report.meta.duration_ns as f64 * f) as u64,
        };
        print!("{}", heaplab_report::text::render_at(&report, ns, a.top));
        return check_limits(&report, &limits);
    }
    let after = a.diff.as_deref().map(|p| build(p, a.process.as_deref(), a.allow_truncated, a.oracle, a.plan_time_limit, None)).transpose()?;
    let (html, json, text) = match &after {
        Some(after) => {
            let d = heaplab_report::diff::diff(&report, after);
            (
                staging.as_ref().map(|_| heaplab_report::html::render_diff(&d)),
                serde_json::to_string_pretty(&d).expect("JSON of plain values"),
                heaplab_report::text::render_diff(&d, a.top),
            )
        }
        None => (
            staging.as_ref().map(|_| heaplab_report::html::render_report(&report)),
            serde_json::to_string_pretty(&report).expect("JSON of plain values"),
            heaplab_report::text::render(&report, a.top),
        ),
    };
    match staging {
        Some(st) => {
            let out = a.output.as_deref().unwrap_or_default().trim_end_matches('/');
            let write = |name: &str, body: &str| std::fs::write(st.dir().join(name), body).map_err(|e| crate::outputs::cannot_write(&format!("{out}/{name}"), e));
            write("index.html", html.as_deref().unwrap_or_default())?;
            write("report.json", &format!("{json}\n"))?;
            st.install().map_err(|e| crate::outputs::cannot_write(out, e))?;
            eprintln!("heaplab: wrote {out}/index.html and {out}/report.json");
            if a.json {
                println!("{json}");
            }
        }
        None if a.json => println!("{json}"),
        None => print!("{text}"),
    }
    // Limits hold for the trace reported (with --diff: the later one).
    check_limits(after.as_ref().unwrap_or(&report), &limits)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn moments() {
        assert_eq!(parse_moment("1.5s").ok(), Some(Moment::Ns(1_500_000_000)));
        assert_eq!(parse_moment("250ms").ok(), Some(Moment::Ns(250_000_000)));
        assert_eq!(parse_moment("2").ok(), Some(Moment::Ns(2_000_000_000)));
        assert_eq!(parse_moment("40%").ok(), Some(Moment::Share(0.4)));
        assert!(parse_moment("140%").is_err());
        assert!(parse_moment("soon").is_err());
        assert!(parse_moment("-1s").is_err());
    }
}
