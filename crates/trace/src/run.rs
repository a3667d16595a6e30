//! A traced run's entry point: the index (`STEM.hlrun`, JSON) of every process a `heaplab trace`
//! run traced — its file, command line, parent, events and peak RSS — written beside the traces
//! when the run had more than one process, and the choice of one process where a command reads
//! a single trace (`--process`; by default the process with the most events).

use crate::format::{EndKind, Op, PageOp};
use crate::launch::signal_name;
use crate::reader::{Ending, TraceReader};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

/// The first bytes of every run index: its JSON starts with this key (defined with the other
/// formats' magic in `heaplab_model::input`).
pub const MAGIC: &str = match std::str::from_utf8(heaplab_model::input::RUN_MAGIC) {
    Ok(m) => m,
    Err(_) => panic!("the run index's magic is text"),
};
/// The index version this build writes and reads.
pub const VERSION: u64 = 1;

/// One process of a run.
#[derive(Clone, Debug, PartialEq)]
pub struct Process {
    /// Its trace, relative to the index's directory; `None` when it recorded no event (the
    /// empty file is removed).
    pub file: Option<String>,
    /// Process id.
    pub pid: u32,
    /// Parent's process id.
    pub ppid: u32,
    /// `root`, `fork child` or `exec'd image`.
    pub origin: String,
    /// The executable.
    pub exe: String,
    /// The command line.
    pub args: Vec<String>,
    /// Heap calls recorded.
    pub events: u64,
    /// Calls per function, by name (every function of the format, zeros included).
    pub calls: Vec<(String, u64)>,
    /// Direct address-space calls (mmap, munmap, ...) by name, those made at least once.
    pub page_calls: Vec<(String, u64)>,
    /// free(NULL) calls, counted rather than recorded (from the trailer).
    pub free_null: u64,
    /// Calls per thread id.
    pub threads: Vec<(u32, u64)>,
    /// How the trace ends, in words (see [`describe_ending`]).
    pub status: String,
    /// Size of its trace file.
    pub file_bytes: u64,
    /// When it started: monotonic clock, ns (orders the processes).
    pub start_ns: u64,
    /// Peak RSS (kernel VmHWM) when the process wrote a trailer.
    pub peak_rss: Option<u64>,
    /// Whether the trace ends with a trailer and no damage.
    pub complete: bool,
}

impl Process {
    /// A short label: pid, the command line (or the executable) and the file.
    pub fn label(&self) -> String {
        let cmd = if self.args.is_empty() { self.exe.clone() } else { self.args.join(" ") };
        format!("pid {} `{}`", self.pid, cmd)
    }

    /// Its entry in the index, as JSON (also what `heaplab trace --json` builds on).
    pub fn json(&self) -> Value {
        let counts = |c: &[(String, u64)]| c.iter().map(|(k, n)| (k.clone(), json!(n))).collect::<serde_json::Map<String, Value>>();
        json!({
            "file": self.file, "pid": self.pid, "ppid": self.ppid, "origin": self.origin, "exe": self.exe, "args": self.args,
            "events": self.events, "calls": counts(&self.calls), "free_null": self.free_null, "page_calls": counts(&self.page_calls),
            "threads": self.threads.iter().map(|(t, n)| json!({"tid": t, "calls": n})).collect::<Vec<_>>(),
            "status": self.status, "start_ns": self.start_ns, "file_bytes": self.file_bytes, "peak_rss_bytes": self.peak_rss,
            "complete": self.complete,
        })
    }

    /// The name a user picks it by: the last component of argv[0] (else of the executable).
    pub fn name(&self) -> &str {
        let first = self.args.first().map(String::as_str).unwrap_or(&self.exe);
        first.rsplit('/').next().unwrap_or(first)
    }
}

/// The index of a run.
#[derive(Clone, Debug, PartialEq)]
pub struct RunIndex {
    /// The command heaplab started.
    pub command: Vec<String>,
    /// How it ended, in words.
    pub status: String,
    /// The trace file of the first traced process (the `-o` file), relative to the index.
    pub root: String,
    /// Every traced process: the root first, then in the order they started.
    pub processes: Vec<Process>,
}

/// Where the index of a run whose first trace is `output` goes: STEM.hlrun beside it.
pub fn index_path(output: &Path) -> PathBuf {
    output.with_file_name(format!("{}.hlrun", crate::launch::stem(output)))
}

impl RunIndex {
    /// Builds the index of a run from its trace files (the root first): each is skimmed for
    /// its header, events and trailer; files with no event are removed and listed without one.
    /// `progress` is told each file as it is read.
    pub fn build(command: &[String], status: &str, root: &Path, others: &[PathBuf], mut progress: impl FnMut(usize, &Path)) -> RunIndex {
        let dir = root.parent().map(Path::to_path_buf).unwrap_or_default();
        let rel = |p: &Path| p.strip_prefix(&dir).unwrap_or(p).to_string_lossy().into_owned();
        let mut processes = Vec::new();
        for (k, path) in std::iter::once(root).chain(others.iter().map(PathBuf::as_path)).enumerate() {
            progress(k, path);
            let Ok(r) = TraceReader::open(&path.to_string_lossy()) else { continue };
            let h = r.header().clone();
            let skim = r.skim();
            let e = &skim.ending;
            let calls = Op::ALL.iter().map(|op| (op.name().to_string(), skim.calls.get(op).copied().unwrap_or(0))).collect();
            let empty = e.calls == 0 && k > 0;
            if empty {
                let _ = std::fs::remove_file(path);
            }
            processes.push(Process {
                file: (!empty).then(|| rel(path)),
                pid: h.pid,
                ppid: h.ppid,
                origin: h.origin.name().to_string(),
                exe: h.exe.clone(),
                args: h.args.clone(),
                events: e.calls,
                calls,
                page_calls: PageOp::ALL.iter().filter_map(|op| skim.pages.get(op).map(|n| (op.name().to_string(), *n))).collect(),
                free_null: e.trailer.as_ref().map_or(0, |t| t.free_null),
                threads: skim.threads.iter().map(|(t, n)| (*t, *n)).collect(),
                status: describe_ending(e),
                file_bytes: if empty { 0 } else { e.file_bytes },
                start_ns: h.start_mono_ns,
                peak_rss: e.trailer.as_ref().map(|t| t.peak_rss),
                complete: e.is_complete(),
            });
        }
        // The root first, then in the order the processes started.
        processes[1..].sort_by_key(|p| (p.start_ns, p.pid));
        RunIndex { command: command.to_vec(), status: status.to_string(), root: rel(root), processes }
    }

    /// The index as JSON, starting with [`MAGIC`].
    pub fn to_json(&self) -> String {
        let procs: Vec<Value> = self.processes.iter().map(Process::json).collect();
        let rest = json!({"command": self.command, "status": self.status, "root": self.root, "processes": procs});
        let body = serde_json::to_string_pretty(&rest).expect("JSON of plain values");
        // The version key first, so the file is recognised by its first bytes.
        format!("{MAGIC} {VERSION},{}\n", &body[1..])
    }

    /// Parses the text of an index read from `path` (named in errors).
    pub fn parse(path: &str, text: &str) -> Result<RunIndex, String> {
        if !text.starts_with(MAGIC) {
            return Err(format!("{path}: not a heaplab run index (expected a file written by `heaplab trace`)"));
        }
        let v: Value = serde_json::from_str(text).map_err(|e| format!("{path}: damaged run index: {e}"))?;
        if v["heaplab_run"].as_u64() != Some(VERSION) {
            return Err(format!("{path}: run index version {} is not supported (this heaplab reads version {VERSION})", v["heaplab_run"]));
        }
        let bad = |what: &str| format!("{path}: damaged run index: {what}");
        let strings = |x: &Value| -> Option<Vec<String>> { x.as_array()?.iter().map(|s| s.as_str().map(String::from)).collect() };
        let mut processes = Vec::new();
        for (k, p) in v["processes"].as_array().ok_or_else(|| bad("no processes"))?.iter().enumerate() {
            let num = |key: &str| p[key].as_u64().ok_or_else(|| bad(&format!("process {k}: no '{key}'")));
            processes.push(Process {
                file: p["file"].as_str().map(String::from),
                pid: num("pid")? as u32,
                ppid: num("ppid")? as u32,
                origin: p["origin"].as_str().unwrap_or("unknown").to_string(),
                exe: p["exe"].as_str().unwrap_or_default().to_string(),
                args: strings(&p["args"]).unwrap_or_default(),
                events: num("events")?,
                calls: counts(&p["calls"], &Op::ALL.map(Op::name)),
                page_calls: counts(&p["page_calls"], &PageOp::ALL.map(PageOp::name)),
                free_null: p["free_null"].as_u64().unwrap_or(0),
                threads: p["threads"]
                    .as_array()
                    .map(|a| a.iter().filter_map(|t| Some((t["tid"].as_u64()? as u32, t["calls"].as_u64()?))).collect())
                    .unwrap_or_default(),
                status: p["status"].as_str().unwrap_or_default().to_string(),
                file_bytes: num("file_bytes")?,
                start_ns: p["start_ns"].as_u64().unwrap_or(0),
                peak_rss: p["peak_rss_bytes"].as_u64(),
                complete: p["complete"].as_bool().unwrap_or(false),
            });
        }
        if processes.is_empty() {
            return Err(bad("no processes"));
        }
        Ok(RunIndex {
            command: strings(&v["command"]).ok_or_else(|| bad("no command"))?,
            status: v["status"].as_str().unwrap_or_default().to_string(),
            root: v["root"].as_str().ok_or_else(|| bad("no root"))?.to_string(),
            processes,
        })
    }

    /// The process with the most events (the first such): what a reader takes by default.
    pub fn main_process(&self) -> &Process {
        let most = self.processes.iter().map(|p| p.events).max().unwrap_or(0);
        self.processes.iter().find(|p| p.events == most).expect("an index has a process")
    }

    /// The process `selector` names: a pid, or a program name (argv[0]'s or the executable's
    /// last component; the one with the most events when several have it). `None` picks
    /// [`RunIndex::main_process`]. Only processes with a trace file can be picked.
    pub fn select(&self, selector: Option<&str>) -> Result<&Process, String> {
        let Some(sel) = selector else { return Ok(self.main_process()) };
        let traced = || self.processes.iter().filter(|p| p.file.is_some());
        let hits: Vec<&Process> = match sel.parse::<u32>() {
            Ok(pid) => traced().filter(|p| p.pid == pid).collect(),
            Err(_) => traced().filter(|p| p.name() == sel || p.exe.rsplit('/').next() == Some(sel)).collect(),
        };
        // A pid can have several images (exec): the one with the most events.
        let best = hits.iter().copied().max_by_key(|p| (p.events, std::cmp::Reverse(p.pid)));
        best.ok_or_else(|| {
            let names: Vec<String> = traced().map(|p| format!("{} ({})", p.pid, p.name())).collect();
            format!("--process {sel}: no traced process has that pid or name (processes: {})", names.join(", "))
        })
    }

    /// The path of a process's trace, for an index read from `index`.
    pub fn trace_path(&self, index: &Path, p: &Process) -> Option<PathBuf> {
        let f = p.file.as_ref()?;
        Some(index.parent().map(|d| d.join(f)).unwrap_or_else(|| PathBuf::from(f)))
    }
}


/// Counts by function name from a JSON object, in the order of `names` (the format's order, which
/// a JSON object does not keep); names this build does not know come last.
fn counts(v: &Value, names: &[&str]) -> Vec<(String, u64)> {
    let mut out: Vec<(String, u64)> = v.as_object().map(|m| m.iter().map(|(k, n)| (k.clone(), n.as_u64().unwrap_or(0))).collect()).unwrap_or_default();
    out.sort_by_key(|(k, _)| names.iter().position(|n| n == k).unwrap_or(names.len()));
    out
}

/// How a trace ends, in words: complete (and how the process ended), damaged (and which events
/// are usable), or without a trailer.
pub fn describe_ending(e: &Ending) -> String {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn process(pid: u32, exe: &str, events: u64, file: Option<&str>) -> Process {
        Process {
            file: file.map(String::from),
            pid,
            ppid: 1,
            origin: "exec'd image".into(),
            exe: exe.into(),
            args: vec![exe.rsplit('/').next().unwrap().into(), "-c".into(), "x = 'a \"quoted\" arg'".into()],
            events,
            calls: vec![("malloc".into(), events / 2), ("free".into(), events / 2)],
            page_calls: vec![("mmap".into(), 3)],
            free_null: 2,
            threads: vec![(pid, events)],
            status: "complete (process exited)".into(),
            start_ns: 1000 + pid as u64,
            file_bytes: events * 4,
            peak_rss: Some(1 << 20),
            complete: true,
        }
    }

    fn index() -> RunIndex {
        RunIndex {
            command: vec!["sh".into(), "-c".into(), "python3 x.py | sort".into()],
            status: "exited with status 0".into(),
            root: "run.hltrace".into(),
            processes: vec![
                process(10, "/bin/sh", 50, Some("run.hltrace")),
                process(11, "/usr/bin/python3.11", 9000, Some("run.11.1.hltrace")),
                process(11, "/usr/bin/env", 300, Some("run.11.hltrace")),
                process(12, "/usr/bin/sort", 0, None),
            ],
        }
    }

    #[test]
    fn the_index_round_trips_and_starts_with_its_magic() {
        let ix = index();
        let text = ix.to_json();
        assert!(text.starts_with(MAGIC));
        assert_eq!(RunIndex::parse("r.hlrun", &text).unwrap(), ix);
    }

    #[test]
    fn damaged_and_foreign_indexes_are_refused_by_name() {
        let text = index().to_json();
        let cases = [
            ("{\"something\": 1}".to_string(), "not a heaplab run index"),
            (text.replacen("\"heaplab_run\": 1", "\"heaplab_run\": 9", 1), "version"),
            (text[..text.len() / 2].to_string(), "damaged run index"),
            (text.replacen("\"pid\"", "\"pod\"", 1), "no 'pid'"),
        ];
        for (bad, says) in cases {
            let e = RunIndex::parse("r.hlrun", &bad).unwrap_err();
            assert!(e.starts_with("r.hlrun: ") && e.contains(says), "{e}");
        }
    }

    #[test]
    fn processes_are_picked_by_pid_name_or_most_events() {
        let ix = index();
        assert_eq!(ix.main_process().exe, "/usr/bin/python3.11");
        assert_eq!(ix.select(None).unwrap().exe, "/usr/bin/python3.11");
        // A pid with two images: the one with the most events.
        assert_eq!(ix.select(Some("11")).unwrap().exe, "/usr/bin/python3.11");
        assert_eq!(ix.select(Some("env")).unwrap().pid, 11);
        assert_eq!(ix.select(Some("sh")).unwrap().pid, 10);
        // A process with no heap call has no trace to read.
        let e = ix.select(Some("sort")).unwrap_err();
        assert!(e.contains("--process sort") && e.contains("10 (sh)"), "{e}");
        assert!(ix.select(Some("99")).is_err());
        let p = ix.select(Some("python3.11")).unwrap();
        assert_eq!(ix.trace_path(Path::new("/d/run.hlrun"), p).unwrap(), Path::new("/d/run.11.1.hltrace"));
    }
}
