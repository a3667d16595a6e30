//! The tracing subcommands: `heaplab trace` (run a program under the preload tracer, via
//! `heaplab_trace::launch`), `heaplab trace-info` (describe a trace or a run), and trace input
//! for `plan` and `convert` ([`TraceInputArgs`], [`read_instance`]) with the "oracle gap" that
//! `plan` adds for traces.

use crate::report::{bytes, grouped, parse_bytes, ProgressLine};
use crate::Failure;
use clap::Args;
use heaplab_model::{files, FileKind, Input, Instance, Semantics};
use heaplab_trace::format::{Op, PageOp};
use heaplab_trace::launch::{Cap, LaunchError, LaunchOptions};
use heaplab_trace::run::{describe_ending as end_text, Process, RunIndex};
use heaplab_trace::{analyse, Clock, ConvertOptions, Ending, Header, SizeModel, TraceReader, TraceStats};
use serde_json::{json, Value};
use std::fmt::Write as _;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

pub use heaplab_trace::launch::{describe_status, find_program};

pub const TRACE_HELP: &str = "\
Run PROGRAM with the heaplab tracer preloaded and record every heap request it makes: malloc,
free, calloc, realloc, reallocarray, posix_memalign, aligned_alloc, memalign, valloc, pvalloc,
with sizes, pointers, the size the allocator really gave (malloc_usable_size), thread, a global
sequence number and a timestamp. Works under any allocator preloaded after it (jemalloc,
mimalloc, tcmalloc: put them in LD_PRELOAD yourself).

The program's standard input, output and error are its own: heaplab never writes to its
standard output, so `heaplab trace -o x.hltrace -- xz -c in > in.xz` gives the same archive as
`xz -c in > in.xz`. heaplab's summary goes to standard error after the program ends, or to the
file --summary names (as JSON with --json).

Files: the first traced process writes OUTPUT, which exists as soon as tracing starts. A child
created by fork writes STEM.PID.hltrace beside it (STEM = OUTPUT without .hltrace), and so does
every program image started by exec while --follow-exec is on (STEM.PID.K.hltrace if that name is
taken). When a run has more than one process, heaplab writes STEM.hlrun, the run's index: every
process with its command line, parent, events and peak RSS; processes that made no heap call
are listed there and their empty files removed. Every command that reads a trace also reads the
index (it takes the process with the most events, or the one --process names). Every committed
event is on disk at once (the file is written through a shared mapping): a crash, a kill, exec
or _exit loses nothing but the trailer (peak RSS, module map).

Caps: --max-size ends the program (SIGTERM, then SIGKILL after 2 s) when the run's traces reach
that size, --max-time when it has run that long; the traces stay readable up to there and the
exit status is 1. Sizes are checked 50 times a second, so a trace can pass its cap by what the
program writes in 20 ms.

Signals: SIGINT, SIGQUIT, SIGTERM and SIGHUP sent to heaplab are passed on to the program (a
Ctrl-C at the terminal reaches it directly); heaplab waits for it to end and leaves the trace at
OUTPUT. If heaplab itself is killed (SIGKILL), the program gets SIGTERM; its trace is at OUTPUT
all the same, without the summary.

Exit status: 0 when the program exited 0; 1 when it exited with another status or a cap ended
it (the trace is complete and kept); 2 when it was killed by a signal (the trace is kept and
readable up to that point; a program ended by SIGPIPE, as in `heaplab trace ... -- yes | head`,
counts as killed), could not be started, or produced no trace (statically linked and setuid
programs ignore LD_PRELOAD).

Environment: HEAPLAB_PRELOAD=/path/lib.so uses that tracer library instead of the built-in one.

Examples:
  heaplab trace -o run.hltrace -- sqlite3 db.sqlite < script.sql
  heaplab trace --stack-depth 8 -o run.hltrace -- python3 app.py
  heaplab trace --only python3 -o py.hltrace -- ./run-tests.sh
  heaplab trace --max-size 2GiB --max-time 60 -o long.hltrace -- ./server
  heaplab trace --no-follow-exec -o sh.hltrace -- sh -c 'seq 1000 | sort | xz > /dev/null'";

/// Arguments of `heaplab trace`.
#[derive(Args)]
pub struct TraceArgs {
    /// The trace file of the first traced process (children get STEM.PID.hltrace beside it,
    /// and a run of several processes an index, STEM.hlrun).
    #[arg(short, long, value_name = "FILE")]
    output: String,
    #[arg(long, default_value_t = 0, value_name = "N", value_parser = crate::flag_ranges::STACK_DEPTH.parser::<u32>(),
        help = crate::flag_ranges::STACK_DEPTH.help("Record call sites: 1 = the calling instruction (cheap), N > 1 = also a hash of N frames (unwinds the stack: a few µs per allocation)."))]
    stack_depth: u32,
    /// Trace programs started by exec (the default).
    #[arg(long, overrides_with = "no_follow_exec")]
    follow_exec: bool,
    /// Do not trace programs started by exec (fork children of traced programs still are).
    #[arg(long)]
    no_follow_exec: bool,
    /// Trace only processes running this program (its executable's or argv[0]'s name;
    /// `python3` also matches `python3.11`); repeat or separate with commas for several.
    /// Other processes run untraced, and their children are still checked.
    #[arg(long, value_name = "NAME", value_delimiter = ',')]
    only: Vec<String>,
    /// End the program when the run's traces reach this size (bytes, or 512MiB, 2GiB, ...).
    #[arg(long, value_name = "BYTES")]
    max_size: Option<String>,
    /// End the program after this many seconds (fractions allowed; at most a week).
    #[arg(long, value_name = "SECONDS")]
    max_time: Option<f64>,
    /// Compress every trace of the run with zstd once the program has ended (in place: the
    /// files keep their names, and every heaplab command reads them as they are).
    #[arg(long)]
    compress: bool,
    /// Write the summary to this file instead of standard error.
    #[arg(long, value_name = "FILE")]
    summary: Option<String>,
    /// Write the summary as JSON.
    #[arg(long)]
    json: bool,
    /// The program and its arguments (put them after `--`).
    #[arg(required = true, trailing_var_arg = true, allow_hyphen_values = true, value_name = "PROGRAM")]
    command: Vec<String>,
}

/// A finished traced run, for callers that trace a workload (`study`).
pub struct Traced {
    /// How the program ended.
    pub status: ExitStatus,
    /// Traces written beside the output by fork children and exec'd programs.
    pub children: Vec<PathBuf>,
}

fn launch_failure(e: LaunchError) -> Failure {
    match e {
        LaunchError::Library(_) => Failure::Work(e.to_string()),
        _ => Failure::Input(e.to_string()),
    }
}

/// Runs `command` under the tracer, writing the trace to `output` (absolute), every process
/// traced, no caps. `setup` adjusts the command (standard streams, working directory,
/// environment) before it starts.
pub fn run_traced(command: &[String], output: &Path, stack_depth: u32, follow: bool, setup: impl FnOnce(&mut Command) -> &mut Command) -> Result<Traced, Failure> {
    let opts = LaunchOptions { stack_depth, follow_exec: follow, ..Default::default() };
    let l = heaplab_trace::launch::launch(command, output, &opts, setup).map_err(launch_failure)?;
    Ok(Traced { status: l.status, children: l.children })
}

/// The longest --max-time: a week (longer is surely a typo, and a Duration must hold it).
const MAX_TIME_S: f64 = 7.0 * 24.0 * 3600.0;

/// `heaplab trace`.
pub fn trace(a: TraceArgs) -> Result<(), Failure> {
    if a.stack_depth > 64 {
        return Err(Failure::Input(format!("--stack-depth {}: expected 0 to 64", a.stack_depth)));
    }
    if a.output == "-" {
        return Err(Failure::Input("-o -: a trace must go to a file".into()));
    }
    crate::commands::check_writable(&a.output)?;
    if let Some(s) = &a.summary {
        crate::commands::check_writable(s)?;
    }
    if let Some(n) = a.only.iter().find(|n| n.is_empty() || n.contains('/')) {
        return Err(Failure::Input(format!("--only {n:?}: expected a program name such as python3 (no path)")));
    }
    let max_bytes = a.max_size.as_deref().map(parse_bytes).transpose().map_err(|e| Failure::Input(format!("--max-size {e}")))?;
    if max_bytes == Some(0) {
        return Err(Failure::Input("--max-size 0: expected at least 1 byte".into()));
    }
    let max_duration = match a.max_time {
        Some(t) if !(t > 0.0 && t <= MAX_TIME_S) => {
            return Err(Failure::Input(format!("--max-time {t}: expected seconds, more than 0 and at most {MAX_TIME_S} (a week)")))
        }
        t => t.map(Duration::from_secs_f64),
    };
    let program = &a.command[0];
    let output = std::path::absolute(&a.output).map_err(|e| Failure::Input(format!("{}: {e}", a.output)))?;
    let opts = LaunchOptions { stack_depth: a.stack_depth, follow_exec: !a.no_follow_exec, only: a.only.clone(), max_bytes, max_duration };
    let run = heaplab_trace::launch::launch(&a.command, &output, &opts, |c| c).map_err(launch_failure)?;
    let status = run.status;

    // One pass over every file the run wrote (a progress line on a terminal for big runs).
    let files = 1 + run.children.len();
    let done = Arc::new(AtomicUsize::new(0));
    let index = {
        let d = done.clone();
        let _line = ProgressLine::start(move |el| format!("reading the run's traces: {} of {files} files, {:.1} s", d.load(Ordering::Relaxed), el.as_secs_f64()));
        RunIndex::build(&a.command, &describe_status(&status), &output, &run.children, |k, _| done.store(k, Ordering::Relaxed))
    };
    let mut index = index;
    if a.compress {
        compress_run(&mut index, &output)?;
    }
    let index_file = (index.processes.len() > 1).then(|| heaplab_trace::run::index_path(&output));
    if let Some(p) = &index_file {
        files::write_atomic(&p.to_string_lossy(), |w| w.write_all(index.to_json().as_bytes()))
            .map_err(|e| Failure::Work(format!("{}: cannot write the run index: {e}", p.display())))?;
    }
    let shown = |p: &Path| -> String {
        // Paths as the user wrote OUTPUT: relative to its directory as given.
        let dir = Path::new(&a.output).parent().unwrap_or(Path::new(""));
        dir.join(p.file_name().unwrap_or_default()).to_string_lossy().into_owned()
    };
    let root = &index.processes[0];
    let code = match (run.capped, status.code(), status.signal()) {
        (Some(cap), _, _) => Err(Failure::Work(format!("{program} was ended by {}; the trace is readable up to there: {}", cap_text(cap), a.output))),
        (None, Some(0), _) => Ok(()),
        (None, Some(c), _) => Err(Failure::Work(format!("{program} exited with status {c}; its trace is complete: {}", a.output))),
        _ => Err(Failure::Input(format!(
            "{program} was {}; its trace is kept and readable up to that point: {}",
            describe_status(&status),
            a.output
        ))),
    };
    let mut text = String::new();
    if a.json {
        let mut v = process_json(root, &a.output);
        v["program"] = json!({
            "command": a.command,
            "exit_code": status.code(),
            "signal": status.signal(),
            "wall_seconds": run.wall.as_secs_f64(),
            "capped": run.capped.map(cap_text),
            "signal_passed_on": run.forwarded,
        });
        v["index"] = json!(index_file.as_deref().map(shown));
        v["children"] = Value::Array(
            index.processes[1..]
                .iter()
                .map(|p| {
                    let mut c = process_json(p, &p.file.as_deref().map(|f| shown(Path::new(f))).unwrap_or_default());
                    c["file"] = json!(p.file.as_deref().map(|f| shown(Path::new(f))));
                    c
                })
                .collect(),
        );
        v["main"] = json!(index.main_process().file.as_deref().map(|f| shown(Path::new(f))));
        text = serde_json::to_string_pretty(&v).expect("JSON of plain values") + "\n";
    } else {
        let w = &mut text;
        let _ = writeln!(w, "program        {} — {} after {:.2} s", a.command.join(" "), describe_status(&status), run.wall.as_secs_f64());
        if let Some(cap) = run.capped {
            let _ = writeln!(w, "stopped        by {}", cap_text(cap));
        }
        if let Some(sig) = run.forwarded {
            let _ = writeln!(w, "signal         {} received and passed on to the program", heaplab_trace::launch::signal_name(sig));
        }
        print_process(w, root, &a.output);
        if let Some(ix) = &index_file {
            let empty = index.processes.iter().filter(|p| p.file.is_none()).count();
            let _ = writeln!(
                w,
                "processes      {} traced{}; index {}",
                index.processes.len(),
                if empty > 0 { format!(" ({empty} without heap calls: listed, files removed)") } else { String::new() },
                shown(ix)
            );
            print_table(w, &index, |f| shown(Path::new(f)), 12);
            let main = index.main_process();
            if let Some(f) = &main.file {
                let _ = writeln!(w, "main process   {} with the most events: {}", main.label(), shown(Path::new(f)));
            }
            let _ = writeln!(w, "next           heaplab trace-info {}   (every process; --process PID|NAME for one)", shown(ix));
        } else {
            let _ = writeln!(w, "next           heaplab trace-info {}   (peak live bytes, sizes, duration)", a.output);
        }
    }
    match &a.summary {
        Some(f) => files::write_atomic(f, |w| w.write_all(text.as_bytes())).map_err(|e| Failure::Input(format!("{f}: cannot write: {e}")))?,
        None => eprint!("{text}"),
    }
    code
}

/// The run's processes in the order they started; with `most`, only the `most` with the most
/// events (and a line saying how many more the index lists).
fn print_table(w: &mut String, index: &RunIndex, shown: impl Fn(&str) -> String, most: usize) {
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

/// Compresses every trace the index lists, with a progress line, and records the new sizes.
fn compress_run(index: &mut RunIndex, output: &Path) -> Result<(), Failure> {
    let dir = output.parent().unwrap_or(Path::new("/")).to_path_buf();
    let total: u64 = index.processes.iter().filter(|p| p.file.is_some()).map(|p| p.file_bytes).sum();
    let done = Arc::new(AtomicU64::new(0));
    let d = done.clone();
    let _line = ProgressLine::start(move |el| {
        format!("compressing the traces: {} of {}, {:.1} s", bytes(d.load(Ordering::Relaxed)), bytes(total), el.as_secs_f64())
    });
    for p in index.processes.iter_mut() {
        let Some(f) = &p.file else { continue };
        let path = dir.join(f);
        p.file_bytes = heaplab_trace::compress::compress_in_place(&path, heaplab_trace::compress::DEFAULT_LEVEL, &done)
            .map_err(|e| Failure::Work(format!("{}: cannot compress: {e} (the uncompressed trace is kept)", path.display())))?;
    }
    Ok(())
}

fn cap_text(cap: Cap) -> String {
    match cap {
        Cap::Size(b) => format!("--max-size {} (the run's traces reached it)", bytes(b)),
        Cap::Duration(d) => format!("--max-time {} s", d.as_secs_f64()),
    }
}

/// At most `n` characters of `s`, with an ellipsis when cut.
fn clip(s: &str, n: usize) -> String {
    match s.char_indices().nth(n) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

fn bytes_per_event(p: &Process) -> f64 {
    if p.events > 0 {
        p.file_bytes as f64 / p.events as f64
    } else {
        0.0
    }
}

/// The quick count of one process's trace, as JSON.
fn process_json(p: &Process, file: &str) -> Value {
    let calls: serde_json::Map<String, Value> = p.calls.iter().map(|(k, n)| (k.clone(), json!(n))).collect();
    json!({
        "file": file,
        "file_bytes": p.file_bytes,
        "bytes_per_event": bytes_per_event(p),
        "pid": p.pid,
        "ppid": p.ppid,
        "origin": p.origin,
        "exe": p.exe,
        "args": p.args,
        "events": p.events,
        "calls": calls,
        "free_null": p.free_null,
        "page_calls": p.page_calls.iter().map(|(k, n)| (k.clone(), json!(n))).collect::<serde_json::Map<String, Value>>(),
        "threads": p.threads.len(),
        "calls_per_thread": p.threads.iter().map(|(t, n)| json!({"tid": t, "calls": n})).collect::<Vec<_>>(),
        "peak_rss_bytes": p.peak_rss,
        "complete": p.complete,
        "status": p.status,
    })
}

/// The quick count of one process's trace, as lines.
fn print_process(w: &mut String, p: &Process, file: &str) {
    let _ = writeln!(w, "trace          {file} ({}, {:.2} bytes/event)", bytes(p.file_bytes), bytes_per_event(p));
    let _ = writeln!(w, "status         {}", p.status);
    let _ = writeln!(w, "events         {}", grouped(p.events));
    let list: Vec<String> = p.calls.iter().filter(|(_, n)| *n > 0).map(|(k, n)| format!("{k} {}", grouped(*n))).collect();
    let fnull = if p.free_null > 0 { format!(", free(NULL) {}", grouped(p.free_null)) } else { String::new() };
    let _ = writeln!(w, "calls          {}{fnull}", list.join(", "));
    if !p.page_calls.is_empty() {
        let list: Vec<String> = p.page_calls.iter().map(|(k, n)| format!("{k} {}", grouped(*n))).collect();
        let _ = writeln!(w, "direct calls   {}  (the program's own; `heaplab trace-info` says how much of the RSS they explain)", list.join(", "));
    }
    let _ = writeln!(w, "threads        {}", p.threads.len());
    if let Some(r) = p.peak_rss {
        let _ = writeln!(w, "peak RSS       {} (kernel VmHWM)", bytes(r));
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

/// Runs the analysis with a progress line on a terminal (big traces take seconds).
fn analyse_with_progress<R: std::io::Read>(r: &mut TraceReader<R>, convert: Option<&ConvertOptions>, shown: &str) -> heaplab_trace::Analysis {
    let counter = Arc::new(AtomicU64::new(0));
    let (c, name) = (counter.clone(), shown.to_string());
    let _line = ProgressLine::start(move |el| format!("reading {name}: {} events, {:.1} s", grouped(c.load(Ordering::Relaxed)), el.as_secs_f64()));
    analyse(r, convert, Some(&counter))
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
    e.damage.as_ref().map(|d| {
        Failure::Input(format!(
            "{file}: {} ({} events before it, sequence numbers < {}, are usable; pass --allow-truncated to use them)",
            d.reason,
            grouped(events),
            d.usable_below
        ))
    })
}

/// The trace a reader takes from `input`: `input` itself, or for a run index the process
/// `selector` picks (by default the one with the most events), said on standard error, with
/// the index.
pub fn select_trace(mut input: Input, selector: Option<&str>) -> Result<(Input, Option<RunIndex>), Failure> {
    let name = input.name().to_string();
    if input.kind()? != FileKind::RunIndex {
        if let Some(s) = selector {
            return Err(Failure::Input(format!("--process {s}: {name} is not a run index (.hlrun, written by `heaplab trace` for a run of several processes)")));
        }
        return Ok((input, None));
    }
    let mut text = String::new();
    std::io::Read::read_to_string(&mut input, &mut text).map_err(|e| Failure::Input(format!("{name}: cannot read: {e}")))?;
    let index = RunIndex::parse(&name, &text).map_err(Failure::Input)?;
    let p = index.select(selector).map_err(|e| Failure::Input(format!("{name}: {e}")))?;
    // An index from standard input names its traces relative to the working directory.
    let at = if name == "-" { Path::new("./-") } else { Path::new(&name) };
    let file = index.trace_path(at, p).ok_or_else(|| Failure::Input(format!("{name}: {} made no heap call, so it has no trace", p.label())))?;
    let why = if selector.is_some() { "as --process asks" } else { "the most events; --process PID|NAME picks another" };
    eprintln!("heaplab: {name}: reading {} ({why}): {}", p.label(), file.display());
    let trace = Input::open(&file.to_string_lossy())?;
    Ok((trace, Some(index)))
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

/// Options for reading a trace where an instance is expected (`plan`, `convert`).
#[derive(Args, Clone)]
pub struct TraceInputArgs {
    /// For trace input: the time axis. bytes = allocated-bytes clock (the thesis'), events =
    /// operation index, ns = nanoseconds made strictly increasing.
    #[arg(long, default_value = "bytes", value_parser = ["events", "bytes", "ns"], help_heading = "Trace input")]
    clock: String,
    /// For trace input: buffer sizes as requested by the program, or as the allocator gave them
    /// (usable; the requested size is kept in the 'requested' column).
    #[arg(long, default_value = "requested", value_parser = ["requested", "usable"], help_heading = "Trace input")]
    size: String,
    #[arg(long, value_name = "TID", help_heading = "Trace input", value_parser = crate::flag_ranges::THREAD.parser::<u32>(),
        help = crate::flag_ranges::THREAD.help("For trace input: only buffers allocated by this thread id, on its own clock."))]
    thread: Option<u32>,
    /// For trace input: use the usable part of a damaged (truncated) trace instead of failing.
    #[arg(long, help_heading = "Trace input")]
    allow_truncated: bool,
    /// For a run index (.hlrun): the process to read (a pid, or a program name such as
    /// python3); by default the one with the most events.
    #[arg(long, value_name = "PID|NAME", help_heading = "Trace input")]
    process: Option<String>,
}

impl TraceInputArgs {
    /// The time axis a picture of the converted trace has.
    pub fn plot_clock(&self) -> heaplab_plot::Clock {
        match self.clock.as_str() {
            "events" => heaplab_plot::Clock::Events,
            "ns" => heaplab_plot::Clock::Ns,
            _ => heaplab_plot::Clock::Bytes,
        }
    }
}

/// What a trace contributed besides its instance, for `plan`'s oracle gap.
pub struct TraceFacts {
    stats: TraceStats,
    ending: Ending,
}

/// Reads an instance from an instance file or, when `path` is a trace, by converting it.
pub fn read_instance(path: &str, semantics: Semantics, t: &TraceInputArgs) -> Result<(Instance, Option<TraceFacts>), Failure> {
    let (inst, _, facts) = read_input(Input::open(path)?, semantics, false, t)?;
    Ok((inst, facts))
}

/// What [`read_input`] read: the instance, its offsets when it is a placement, and what a trace
/// said besides.
pub type InstanceRead = (Instance, Option<Vec<u64>>, Option<TraceFacts>);

/// Reads an instance (with its offsets when `allow_offsets` and the file has them) from an
/// opened input, converting it first when it is a trace, or the trace a run index's
/// `--process` picks: the input is read once, so pipes work.
pub fn read_input(input: Input, semantics: Semantics, allow_offsets: bool, t: &TraceInputArgs) -> Result<InstanceRead, Failure> {
    let mut input = select_trace(input, t.process.as_deref())?.0;
    if input.kind()? != FileKind::Trace {
        let (inst, offsets) = files::read_input(input, semantics, allow_offsets)?;
        return Ok((inst, offsets, None));
    }
    let path = input.name().to_string();
    let path = path.as_str();
    let opts = ConvertOptions {
        clock: Clock::parse(&t.clock).unwrap_or_default(),
        size: SizeModel::parse(&t.size).unwrap_or_default(),
        thread: t.thread,
    };
    let mut r = TraceReader::from_input(input)?;
    let analysis = analyse_with_progress(&mut r, Some(&opts), path);
    let ending = r.into_ending();
    if let Some(f) = damage_failure(path, &ending, analysis.stats.events) {
        if !t.allow_truncated {
            return Err(f);
        }
    }
    if let Some(e) = &analysis.conversion_error {
        return Err(Failure::Input(format!("{path}: {e}")));
    }
    let inst = analysis.instance.unwrap_or_default();
    if let Some(tid) = t.thread {
        if !analysis.stats.threads.contains_key(&tid) {
            let known: Vec<String> = analysis.stats.threads.keys().map(|k| k.to_string()).collect();
            return Err(Failure::Input(format!("{path}: --thread {tid}: no such thread (threads: {})", known.join(", "))));
        }
    }
    eprintln!(
        "heaplab: {path}: {} events -> {} buffers ({} clock, {} sizes)",
        grouped(analysis.stats.events),
        grouped(inst.len() as u64),
        t.clock,
        t.size
    );
    Ok((inst, None, Some(TraceFacts { stats: analysis.stats, ending })))
}

/// The oracle gap for `plan` on a trace: the optimal static plan's makespan against the peak
/// the real allocator reached (pages touched by live blocks, and RSS when the trailer has it).
/// Adds a "trace" object to `json`, or prints lines.
pub fn oracle_gap(facts: &TraceFacts, makespan: u64, max_load: u64, json: Option<&mut Value>) {
    let st = &facts.stats;
    let rss = facts.ending.trailer.as_ref().map(|t| t.peak_rss);
    let gap = st.peak_pages_bytes as i128 - makespan as i128;
    match json {
        Some(v) => {
            v["trace"] = json!({
                "events": st.events,
                "threads": st.threads.len(),
                "peak_live_bytes": st.peak_live_requested,
                "peak_live_usable_bytes": st.peak_live_usable,
                "plan_makespan": makespan,
                "allocator_peak_pages_bytes": st.peak_pages_bytes,
                "allocator_peak_rss_bytes": rss,
                "oracle_gap_bytes": gap,
                "oracle_gap_pct_of_makespan": if makespan > 0 { gap as f64 * 100.0 / makespan as f64 } else { 0.0 },
                "complete": facts.ending.is_complete(),
            });
        }
        None => {
            println!("— oracle gap: the trace's real allocator against this plan —");
            println!("peak live      {} B ({}) requested, {} usable  (lower bound: max load {})", grouped(st.peak_live_requested), bytes(st.peak_live_requested), bytes(st.peak_live_usable), bytes(max_load));
            println!("plan makespan  {} B ({})", grouped(makespan), bytes(makespan));
            println!(
                "allocator      {} in pages touched by live blocks at its peak  (gap {}{} B, {:+.1}% of the plan)",
                bytes(st.peak_pages_bytes),
                if gap < 0 { "-" } else { "" },
                grouped(gap.unsigned_abs() as u64),
                if makespan > 0 { gap as f64 * 100.0 / makespan as f64 } else { 0.0 }
            );
            match rss {
                Some(r) => println!("process RSS    {} peak (VmHWM; includes code, stacks, libraries)", bytes(r)),
                None => println!("process RSS    unknown (no trailer)"),
            }
        }
    }
}
