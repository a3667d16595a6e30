//! The tracing subcommands: `heaplab trace` (run a program under the preload tracer),
//! `heaplab trace-info` (describe a trace), and trace input for `plan` and `convert`
//! ([`TraceInputArgs`], [`read_instance`]) with the "oracle gap" that `plan` adds for traces.

use crate::report::{bytes, grouped, ProgressLine};
use crate::Failure;
use clap::Args;
use heaplab_model::{files, FileKind, Input, Instance, Semantics};
use heaplab_trace::format::{EndKind, Op};
use heaplab_trace::{analyse, Clock, ConvertOptions, Ending, Header, SizeModel, TraceReader, TraceStats};
use serde_json::{json, Value};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

pub const TRACE_HELP: &str = "\
Run PROGRAM with the heaplab tracer preloaded and record every heap request it makes: malloc,
free, calloc, realloc, reallocarray, posix_memalign, aligned_alloc, memalign, valloc, pvalloc,
with sizes, pointers, the size the allocator really gave (malloc_usable_size), thread, a global
sequence number and a timestamp. Works under any allocator preloaded after it (jemalloc,
mimalloc, tcmalloc: put them in LD_PRELOAD yourself). The program's standard input, output and
error are its own, so `heaplab trace -o run.hltrace -- sqlite3 db < script.sql` works.

Files: the program writes OUTPUT. A child created by fork writes STEM.PID.hltrace beside it
(STEM = OUTPUT without .hltrace), and so does every program image started by exec while
--follow-exec is on (STEM.PID.K.hltrace if that name is taken, e.g. when a forked child execs).
Every committed event is on disk at once (the file is written through a shared mapping): a
crash, a kill, exec or _exit loses nothing but the trailer (peak RSS, module map).

Prints the program's status, the traces written, and for OUTPUT: events, calls per function,
threads and bytes per event (a quick count; `heaplab trace-info` analyses the file), after whatever the program itself printed (for
machine reading of a program that prints, use `heaplab trace-info --json` on the file). Then use
`heaplab trace-info`, `heaplab convert` and `heaplab plan` on it.

Exit status: 0 when the program exited 0; 1 when it exited with another status (the trace is
complete and kept); 2 when it was killed by a signal (the trace is kept and readable up to the
crash), could not be started, or produced no trace (statically linked and setuid programs
ignore LD_PRELOAD).

Environment: HEAPLAB_PRELOAD=/path/lib.so uses that tracer library instead of the built-in one.

Examples:
  heaplab trace -o run.hltrace -- sqlite3 db.sqlite < script.sql
  heaplab trace --stack-depth 8 -o run.hltrace -- python3 app.py
  heaplab trace --no-follow-exec -o sh.hltrace -- sh -c 'seq 1000 | sort | xz > /dev/null'";

/// Arguments of `heaplab trace`.
#[derive(Args)]
pub struct TraceArgs {
    /// The trace file of the program started (children get STEM.PID.hltrace beside it).
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
    /// Print the summary as JSON.
    #[arg(long)]
    json: bool,
    /// The program and its arguments (put them after `--`).
    #[arg(required = true, trailing_var_arg = true, allow_hyphen_values = true, value_name = "PROGRAM")]
    command: Vec<String>,
}

pub fn find_program(name: &str) -> Option<PathBuf> {
    let is_exec = |p: &Path| {
        use std::os::unix::fs::PermissionsExt;
        p.is_file() && p.metadata().map(|m| m.permissions().mode() & 0o111 != 0).unwrap_or(false)
    };
    if name.contains('/') {
        let p = PathBuf::from(name);
        return is_exec(&p).then_some(p);
    }
    std::env::var_os("PATH")
        .map(|paths| std::env::split_paths(&paths).map(|d| d.join(name)).find(|p| is_exec(p)))
        .unwrap_or(None)
}

/// Trace files a run wrote beside `output`: STEM.PID.hltrace and STEM.PID.K.hltrace.
fn child_traces(output: &Path) -> Vec<PathBuf> {
    let dir = output.parent().unwrap_or(Path::new("."));
    let name = output.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let stem = name.strip_suffix(".hltrace").unwrap_or(&name).to_string();
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let n = e.file_name().to_string_lossy().into_owned();
            let mid = n.strip_prefix(&format!("{stem}."))?.strip_suffix(".hltrace")?.to_string();
            let ok = !mid.is_empty() && mid.split('.').count() <= 2 && mid.split('.').all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
            ok.then(|| e.path())
        })
        .collect();
    found.sort();
    found
}

fn signal_name(sig: i32) -> String {
    let name = match sig {
        1 => "SIGHUP",
        2 => "SIGINT",
        3 => "SIGQUIT",
        4 => "SIGILL",
        6 => "SIGABRT",
        7 => "SIGBUS",
        8 => "SIGFPE",
        9 => "SIGKILL",
        11 => "SIGSEGV",
        13 => "SIGPIPE",
        15 => "SIGTERM",
        _ => return format!("signal {sig}"),
    };
    format!("{name} ({sig})")
}

pub fn describe_status(s: &ExitStatus) -> String {
    match (s.code(), s.signal()) {
        (Some(c), _) => format!("exited with status {c}"),
        (None, Some(sig)) => format!("killed by {}", signal_name(sig)),
        _ => "ended in an unknown way".to_string(),
    }
}

/// Ignores SIGINT and SIGQUIT while the traced program runs (as `time` and `system()` do):
/// a Ctrl-C goes to the program, and heaplab stays to keep its trace and report.
struct IgnoreInterrupts(libc::sighandler_t, libc::sighandler_t);

impl IgnoreInterrupts {
    fn new() -> IgnoreInterrupts {
        // SAFETY: signal() with SIG_IGN installs no handler code; the old dispositions are restored on drop.
        unsafe { IgnoreInterrupts(libc::signal(libc::SIGINT, libc::SIG_IGN), libc::signal(libc::SIGQUIT, libc::SIG_IGN)) }
    }
}

impl Drop for IgnoreInterrupts {
    fn drop(&mut self) {
        // SAFETY: restores the dispositions saved in new().
        unsafe {
            libc::signal(libc::SIGINT, self.0);
            libc::signal(libc::SIGQUIT, self.1);
        }
    }
}

/// `heaplab trace`.
pub fn trace(a: TraceArgs) -> Result<(), Failure> {
    crate::commands::check_writable(&a.output)?;
    if a.output == "-" {
        return Err(Failure::Input("-o -: a trace must go to a file".into()));
    }
    let program = &a.command[0];
    let output = std::path::absolute(&a.output).map_err(|e| Failure::Input(format!("{}: {e}", a.output)))?;
    let t0 = Instant::now();
    let traced = {
        let _quiet = IgnoreInterrupts::new();
        run_traced(&a.command, &output, a.stack_depth, !a.no_follow_exec, |c| c)?
    };
    let wall = t0.elapsed().as_secs_f64();
    let (status, children) = (traced.status, traced.children);

    // A quick count of every file (one pass in file order); `trace-info` does the full analysis.
    let out_str = output.to_string_lossy().into_owned();
    let root = skim(&a.output, &out_str)?;
    let mut child_rows = Vec::new();
    for c in &children {
        let p = c.to_string_lossy().into_owned();
        match skim(&p, &p) {
            Ok(k) => child_rows.push((p, k.header.exe.clone(), k.skim.ending.calls, k.skim.ending.file_bytes)),
            Err(Failure::Input(e) | Failure::Work(e)) => child_rows.push((format!("{p} (unreadable: {e})"), String::new(), 0, 0)),
        }
    }
    let code = match (status.code(), status.signal()) {
        (Some(0), _) => Ok(()),
        (Some(c), _) => Err(Failure::Work(format!("{program} exited with status {c}; its trace is complete: {}", a.output))),
        _ => Err(Failure::Input(format!(
            "{program} was {}; its trace is kept and readable up to the crash: {}",
            describe_status(&status),
            a.output
        ))),
    };
    if a.json {
        let mut v = root.json();
        v["program"] = json!({
            "command": a.command,
            "exit_code": status.code(),
            "signal": status.signal(),
            "wall_seconds": wall,
        });
        v["children"] = Value::Array(
            child_rows.iter().map(|(p, exe, n, b)| json!({"file": p, "exe": exe, "events": n, "file_bytes": b})).collect(),
        );
        println!("{}", serde_json::to_string_pretty(&v).expect("JSON of plain values"));
    } else {
        println!("program        {} — {} after {wall:.2} s", a.command.join(" "), describe_status(&status));
        root.print();
        if !child_rows.is_empty() {
            println!("other traces   {} (fork children and exec'd programs)", child_rows.len());
            for (p, exe, n, b) in &child_rows {
                println!("  {p}  {}  {} events, {}", exe, grouped(*n), bytes(*b));
            }
        }
    }
    code
}

/// A finished traced run.
pub struct Traced {
    /// How the program ended.
    pub status: ExitStatus,
    /// Traces written beside the output by fork children and exec'd programs.
    pub children: Vec<PathBuf>,
}

/// Runs `command` under the tracer, writing the trace to `output` (absolute; renamed into
/// place only when the program wrote one). `setup` adjusts the command (standard streams,
/// working directory, environment) before it starts.
pub fn run_traced(command: &[String], output: &Path, stack_depth: u32, follow: bool, setup: impl FnOnce(&mut Command) -> &mut Command) -> Result<Traced, Failure> {
    let program = &command[0];
    let resolved = find_program(program)
        .ok_or_else(|| Failure::Input(format!("{program}: program not found (not an executable file, nor in PATH)")))?;
    let lib = heaplab_trace::preload::library_path().map_err(|e| Failure::Work(format!("cannot install the tracer library: {e}")))?;
    let dir = output.parent().unwrap_or(Path::new("/")).to_path_buf();
    let name = output.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    // The program writes a temporary name that is renamed over OUTPUT afterwards, so a run that
    // cannot start leaves an existing OUTPUT alone.
    let tmp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    let _ = std::fs::remove_file(&tmp);
    let before = child_traces(output);
    let mut preload = lib.to_string_lossy().into_owned();
    if let Some(old) = std::env::var_os("LD_PRELOAD").filter(|v| !v.is_empty()) {
        preload = format!("{preload}:{}", old.to_string_lossy());
    }
    // The tracer's settings travel in one variable (lines of key=value), read at its start.
    let settings = format!(
        "out={}\nroot={}\ndepth={}\nfollow={}\nlib={}",
        output.display(),
        tmp.display(),
        stack_depth,
        u8::from(follow),
        lib.display()
    );
    if settings.lines().count() != 5 {
        return Err(Failure::Input(format!("{}: a trace path cannot contain a newline", output.display())));
    }
    let mut cmd = Command::new(&resolved);
    cmd.arg0(program).args(&command[1..]).env("LD_PRELOAD", &preload).env("HEAPLAB_TRACE", &settings);
    let status = setup(&mut cmd).status().map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        Failure::Input(format!("{program}: cannot start: {e}"))
    })?;
    if !tmp.is_file() {
        return Err(Failure::Input(format!(
            "{program} {}, but no trace was written: statically linked and setuid programs ignore LD_PRELOAD",
            describe_status(&status)
        )));
    }
    std::fs::rename(&tmp, output).map_err(|e| Failure::Work(format!("{}: cannot rename the trace into place: {e}", output.display())))?;
    let children = child_traces(output).into_iter().filter(|p| !before.contains(p)).collect();
    Ok(Traced { status, children })
}

/// The quick count `heaplab trace` prints for the files a run wrote.
struct Skimmed {
    file: String,
    header: Header,
    skim: heaplab_trace::Skim,
}

fn skim(shown: &str, path: &str) -> Result<Skimmed, Failure> {
    let r = TraceReader::open(path).map_err(|e| Failure::Input(e.to_string().replacen(path, shown, 1)))?;
    let header = r.header().clone();
    Ok(Skimmed { file: shown.to_string(), header, skim: r.skim() })
}

impl Skimmed {
    fn events(&self) -> u64 {
        self.skim.ending.calls
    }

    fn bytes_per_event(&self) -> f64 {
        if self.events() > 0 {
            self.skim.ending.file_bytes as f64 / self.events() as f64
        } else {
            0.0
        }
    }

    fn json(&self) -> Value {
        let e = &self.skim.ending;
        json!({
            "file": self.file,
            "file_bytes": e.file_bytes,
            "bytes_per_event": self.bytes_per_event(),
            "pid": self.header.pid,
            "exe": self.header.exe,
            "events": self.events(),
            "calls": calls_json(&self.skim.calls),
            "free_null": e.trailer.as_ref().map_or(0, |t| t.free_null),
            "threads": self.skim.threads.len(),
            "calls_per_thread": self.skim.threads.iter().map(|(t, n)| json!({"tid": t, "calls": n})).collect::<Vec<_>>(),
            "peak_rss_bytes": e.trailer.as_ref().map(|t| t.peak_rss),
            "complete": e.is_complete(),
            "status": end_text(e),
        })
    }

    fn print(&self) {
        let e = &self.skim.ending;
        println!("trace          {} ({}, {:.2} bytes/event)", self.file, bytes(e.file_bytes), self.bytes_per_event());
        println!("status         {}", end_text(e));
        println!("events         {}", grouped(self.events()));
        println!("calls          {}", calls_text(&self.skim.calls, e.trailer.as_ref().map_or(0, |t| t.free_null)));
        println!("threads        {}", self.skim.threads.len());
        if let Some(t) = &e.trailer {
            println!("peak RSS       {} (kernel VmHWM)", bytes(t.peak_rss));
        }
        println!("next           heaplab trace-info {}   (peak live bytes, sizes, duration)", self.file);
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

fn summarise(shown: &str, path: &str) -> Result<Summary, Failure> {
    let mut r = TraceReader::open(path).map_err(|e| Failure::Input(e.to_string().replacen(path, shown, 1)))?;
    let analysis = analyse_with_progress(&mut r, None, shown);
    let header = r.header().clone();
    Ok(Summary { file: shown.to_string(), header, ending: r.into_ending(), stats: analysis.stats })
}

fn end_text(e: &Ending) -> String {
    match (&e.trailer, &e.damage) {
        (_, Some(d)) => format!("DAMAGED: {}; events with sequence number < {} are usable", d.reason, d.usable_below),
        (Some(t), None) => match t.end {
            EndKind::Exit => "complete (process exited)".into(),
            EndKind::UnderscoreExit(c) => format!("complete (process called _exit({c}))"),
            EndKind::Signal(s) => format!("complete up to a fatal {}", signal_name(s as i32)),
            EndKind::Exec => "complete (the process exec'd another program)".into(),
            EndKind::Other(k, c) => format!("complete (end kind {k}, code {c})"),
        },
        (None, None) => "no trailer: the process was killed, exec'd another program or crashed before it could write one; every event it committed is here".into(),
    }
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
    /// A trace written by `heaplab trace`.
    input: String,
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

/// `heaplab trace-info`.
pub fn trace_info(a: TraceInfoArgs) -> Result<(), Failure> {
    let s = summarise(&a.input, &a.input)?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&summary_json(&s)).expect("JSON of plain values"));
    } else {
        print_summary(&s);
        if s.header.stack_depth > 0 {
            println!("call sites     {} distinct (stack depth {})", grouped(s.ending.sites.len() as u64), s.header.stack_depth);
        }
        if let Some(t) = &s.ending.trailer {
            println!("modules        {} executable mappings recorded for symbolisation", t.modules.len());
        }
        print_histogram(&s.stats);
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
/// opened input, converting it first when it is a trace: the input is read once, so pipes work.
pub fn read_input(mut input: Input, semantics: Semantics, allow_offsets: bool, t: &TraceInputArgs) -> Result<InstanceRead, Failure> {
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
