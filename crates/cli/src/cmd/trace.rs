//! `heaplab trace`: run a program under the preload tracer (`heaplab_trace::launch`), index
//! the run's processes, compress on request, and print the summary.

use crate::cmd::trace_info::print_table;
use crate::progress::ProgressLine;
use crate::Failure;
use clap::Args;
use heaplab_model::files;
use heaplab_model::units::{bytes, grouped, parse_bytes};
use heaplab_trace::launch::{describe_status, Cap, LaunchOptions};
use heaplab_trace::run::{Process, RunIndex};
use serde_json::{json, Value};
use std::fmt::Write as _;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

pub const TRACE_HELP: &str = "\
Run PROGRAM with the heaplab tracer preloaded and record every heap request it makes: malloc,
free, calloc, realloc, reallocarray, posix_memalign, aligned_alloc, memalign, valloc, pvalloc,
with sizes, pointers, the size the allocator really gave (malloc_usable_size), thread, a global
sequence number, a timestamp and its call site: --stack-depth frames of the call stack (8 unless
given; 0 records none and is the fastest), each distinct stack stored once. Works under any
allocator preloaded after it (jemalloc, mimalloc, tcmalloc: put them in LD_PRELOAD yourself).

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

Exit status: 0 when the program exited 0; 1 when it exited with another status, a cap ended
it, or it exceeded a CI limit (the trace is complete and kept); 2 when it was killed by a signal (the trace is kept and
readable up to that point; a program ended by SIGPIPE, as in `heaplab trace ... -- yes | head`,
counts as killed), could not be started, or produced no trace (statically linked and setuid
programs ignore LD_PRELOAD).

CI limits: --limit-peak 200MiB, --limit-leaks 1MiB, --limit-allocations N: once the program has
exited 0, its trace (the main process's) is analysed as `heaplab report` does, and heaplab exits 1
when it passes a limit, naming the largest call sites on standard error. A program that failed
keeps its own exit status (the limits are then not checked).

Environment: HEAPLAB_PRELOAD=/path/lib.so uses that tracer library instead of the built-in one;
HEAPLAB_UNWIND=backtrace walks stacks with glibc's backtrace() (the reference; many times slower).

Examples:
  heaplab trace -o run.hltrace -- sqlite3 db.sqlite < script.sql
  heaplab trace --stack-depth 16 -o run.hltrace -- python3 app.py
  heaplab trace --stack-depth 0 -o fast.hltrace -- ./server
  heaplab trace --only python3 -o py.hltrace -- ./run-tests.sh
  heaplab trace --max-size 2GiB --max-time 60 -o long.hltrace -- ./server
  heaplab trace --limit-peak 200MiB --limit-leaks 1MiB -o run.hltrace -- ./test-suite
  heaplab trace --no-follow-exec -o sh.hltrace -- sh -c 'seq 1000 | sort | xz > /dev/null'";

/// Frames per call site when `--stack-depth` is not given: measured by `make bench-trace`
/// (bench/trace-results.md, docs/tracing.md#call-stacks), eight frames reach past allocation
/// wrappers and interpreter layers into the calling code, at 50-95% of sixteen's added time
/// where stacks are deep.
pub const DEFAULT_STACK_DEPTH: u32 = 8;

/// Arguments of `heaplab trace`.
#[derive(Args)]
pub struct TraceArgs {
    /// The trace file of the first traced process (children get STEM.PID.hltrace beside it,
    /// and a run of several processes an index, STEM.hlrun).
    #[arg(short, long, value_name = "FILE")]
    output: String,
    #[arg(long, default_value_t = DEFAULT_STACK_DEPTH, value_name = "N", value_parser = crate::flag_ranges::STACK_DEPTH.parser::<u32>(),
        help = crate::flag_ranges::STACK_DEPTH.help("Call-stack frames recorded per allocation site: 0 = none (the fastest), 1 = the calling instruction, N > 1 = also N - 1 callers (the stack is walked with cached unwind rules; see docs/tracing.md for what each depth costs); 8 unless given."))]
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
    #[command(flatten)]
    limits: crate::cmd::report::LimitArgs,
    /// The program and its arguments (put them after `--`).
    #[arg(required = true, trailing_var_arg = true, allow_hyphen_values = true, value_name = "PROGRAM")]
    command: Vec<String>,
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
    crate::outputs::check_writable(&a.output)?;
    if let Some(s) = &a.summary {
        crate::outputs::check_writable(s)?;
    }
    if let Some(n) = a.only.iter().find(|n| n.is_empty() || n.contains('/')) {
        return Err(Failure::Input(format!("--only {n:?}: expected a program name such as python3 (no path)")));
    }
    let limits = a.limits.limits()?;
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
    let run = heaplab_trace::launch::launch(&a.command, &output, &opts, |c| c)?;
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
        let mut v = process_json(root, Some(a.output.clone()));
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
                .map(|p| process_json(p, p.file.as_deref().map(|f| shown(Path::new(f)))))
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
    if limits.any() {
        // The program's own failure decides the exit status; limits are checked on a clean run.
        if code.is_err() {
            eprintln!("heaplab: CI limits not checked: the program did not exit 0");
            return code;
        }
        let main = index.main_process();
        let file = main.file.as_deref().map(|f| shown(Path::new(f))).unwrap_or_else(|| a.output.clone());
        let report = crate::cmd::report::build(&file, None, false, crate::cmd::report::OracleMode::Off, 1.0, None)?;
        crate::cmd::report::check_limits(&report, &limits)?;
    }
    code
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

fn bytes_per_event(p: &Process) -> f64 {
    if p.events > 0 {
        p.file_bytes as f64 / p.events as f64
    } else {
        0.0
    }
}

/// The quick count of one process's trace, as JSON: its index entry with the file as the user
/// names it, and threads counted as `trace-info --json` counts them.
fn process_json(p: &Process, file: Option<String>) -> Value {
    let mut v = p.json();
    v["file"] = json!(file);
    v["bytes_per_event"] = json!(bytes_per_event(p));
    v["calls_per_thread"] = v["threads"].take();
    v["threads"] = json!(p.threads.len());
    v
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
