//! Running a program under an allocator and measuring its peak resident set size.
//!
//! The primary measure is the kernel's: `wait4` returns the child's rusage, whose `ru_maxrss`
//! is the largest RSS of the program or of any descendant it waited for (what `time -v`
//! reports). The program is started by a tiny launcher (C, heaplab_trace's, [`heaplab_trace::launch::run_launcher`]) that
//! forks it and calls wait4: Linux folds the RSS a process had before exec into that figure,
//! and a program forked from heaplab itself would inherit heaplab's. Alongside it a sampler reads `/proc` every few milliseconds while the program runs
//! (no cgroup needed): the program's `VmHWM` and the summed `VmRSS` of its process tree. It is
//! the fallback where rusage reports nothing, and a cross-check elsewhere (sampling misses
//! peaks shorter than its period).
//!
//! The program's standard error is not shown (a study runs it dozens of times); its end is
//! kept ([`stderr_tail`]) so that a failed run can say why it failed.

use std::io::{BufRead, Read};
use heaplab_trace::launch::{launcher_command, launcher_end, LauncherEnd};
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What to run.
#[derive(Clone, Debug, Default)]
pub struct RunSpec {
    /// The executable (resolved).
    pub program: PathBuf,
    /// argv[0] as the user wrote it.
    pub arg0: String,
    /// The arguments.
    pub args: Vec<String>,
    /// Extra environment.
    pub env: Vec<(String, String)>,
    /// The allocator library to preload (`None`: glibc).
    pub preload: Option<PathBuf>,
    /// Standard input (`None`: /dev/null).
    pub stdin: Option<PathBuf>,
    /// Where standard output goes, a file created or truncated (`None`: /dev/null).
    pub stdout: Option<PathBuf>,
    /// Working directory.
    pub cwd: PathBuf,
    /// Killed after this long.
    pub timeout: Duration,
    /// Leave out the /proc sampler of resident memory (every 4 ms, on the other core), for a
    /// caller that takes the peak from `wait4` alone and compares the wall time with runs
    /// launched without one (`heaplab run`'s); [`Run::sampled_rss`] is then 0.
    pub unsampled: bool,
}

/// Which peak-RSS figure a study uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RssMethod {
    /// `wait4`'s ru_maxrss, falling back to /proc sampling when it is 0.
    Rusage,
    /// The /proc sampler's peak.
    Proc,
}

impl RssMethod {
    /// `rusage` or `proc`, as [`RssMethod::parse`] reads it.
    pub fn name(self) -> &'static str {
        match self {
            RssMethod::Rusage => "rusage",
            RssMethod::Proc => "proc",
        }
    }

    /// Parses `rusage` or `proc`.
    pub fn parse(s: &str) -> Option<RssMethod> {
        match s {
            "rusage" => Some(RssMethod::Rusage),
            "proc" => Some(RssMethod::Proc),
            _ => None,
        }
    }
}

/// One measured run.
#[derive(Clone, Debug, Default)]
pub struct Run {
    /// ru_maxrss in bytes (0 when the kernel reported none).
    pub rusage_rss: u64,
    /// The /proc sampler's peak in bytes: max of VmHWM and of the tree's summed VmRSS.
    pub sampled_rss: u64,
    /// Wall time, seconds: the launcher's, from its fork of the program to the program's end
    /// (starting the launcher, a fork of the caller, is left out: it grows with the caller's
    /// size, and `heaplab run`, measured from a small process, would otherwise look faster).
    /// The caller's own clock where the run was killed at its deadline or the launcher could
    /// not report.
    pub wall: f64,
    /// User CPU time, seconds.
    pub user: f64,
    /// System CPU time, seconds.
    pub sys: f64,
    /// Exit code, or −signal.
    pub status: i32,
    /// The end of what the program wrote to standard error ([`stderr_tail`]).
    pub stderr_tail: String,
}

impl Run {
    /// Whether the program exited 0.
    pub fn ok(&self) -> bool {
        self.status == 0
    }
    /// The peak RSS by `method` (rusage falls back to sampling when the kernel reported 0).
    pub fn peak(&self, method: RssMethod) -> u64 {
        match method {
            RssMethod::Rusage if self.rusage_rss > 0 => self.rusage_rss,
            _ => self.sampled_rss,
        }
    }
}

fn kib_field(text: &str, key: &str) -> u64 {
    text.lines()
        .find(|l| l.starts_with(key))
        .and_then(|l| l[key.len()..].split_whitespace().next()?.parse::<u64>().ok())
        .map_or(0, |k| k * 1024)
}

/// The process tree under `pid`: it and every descendant (through /proc/PID/task/*/children).
fn tree(pid: u32) -> Vec<u32> {
    let mut out = vec![pid];
    let mut k = 0;
    while k < out.len() && out.len() < 4096 {
        let p = out[k];
        if let Ok(tasks) = std::fs::read_dir(format!("/proc/{p}/task")) {
            for t in tasks.flatten() {
                if let Ok(c) = std::fs::read_to_string(t.path().join("children")) {
                    out.extend(c.split_whitespace().filter_map(|s| s.parse::<u32>().ok()));
                }
            }
        }
        k += 1;
    }
    out
}

/// Samples the tree's memory until `stop`; returns the peak seen in bytes.
fn sample(pid: u32, stop: Arc<AtomicBool>, peak: Arc<AtomicU64>) {
    while !stop.load(Ordering::Relaxed) {
        let mut sum = 0u64;
        for (k, p) in tree(pid).into_iter().enumerate() {
            if let Ok(s) = std::fs::read_to_string(format!("/proc/{p}/status")) {
                sum += kib_field(&s, "VmRSS:");
                if k == 0 {
                    peak.fetch_max(kib_field(&s, "VmHWM:"), Ordering::Relaxed);
                }
            }
        }
        peak.fetch_max(sum, Ordering::Relaxed);
        std::thread::sleep(Duration::from_millis(4));
    }
}

/// At most this many lines of a program's standard error are kept for an error message.
pub const TAIL_LINES: usize = 20;
/// And at most this many bytes of them.
pub const TAIL_BYTES: usize = 2048;

/// The end of a program's standard error for an error message: its last [`TAIL_LINES`] lines,
/// at most [`TAIL_BYTES`] bytes (cut at a line start where one falls in the last 2 KB, else at a
/// character), invalid UTF-8 replaced, blank lines at the end dropped.
pub fn stderr_tail(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let text = text.trim_end();
    // The start of the last TAIL_LINES lines (all of them when there are fewer).
    let mut start = text.rmatch_indices('\n').nth(TAIL_LINES - 1).map_or(0, |(i, _)| i + 1);
    if text.len() - start > TAIL_BYTES {
        let mut min = text.len() - TAIL_BYTES;
        while !text.is_char_boundary(min) {
            min += 1;
        }
        start = match text[min..].find('\n') {
            Some(j) if min + j + 1 < text.len() => min + j + 1,
            _ => min,
        };
    }
    text[start..].to_string()
}

/// Reads `r` to its end keeping only the last 64 KiB, enough for [`stderr_tail`] without
/// holding all of a chatty program's output.
pub fn read_tail(mut r: impl Read) -> Vec<u8> {
    const KEEP: usize = 64 << 10;
    let (mut buf, mut chunk) = (Vec::new(), vec![0u8; 16 << 10]);
    loop {
        match r.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => {
                buf.extend_from_slice(&chunk[..n]);
                if buf.len() > 2 * KEEP {
                    buf.drain(..buf.len() - KEEP);
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
    if buf.len() > KEEP {
        buf.drain(..buf.len() - KEEP);
    }
    buf
}


/// Runs `spec` once, its output discarded (or written where `spec.stdout` says), and measures it.
pub fn run_once(spec: &RunSpec) -> std::io::Result<Run> {
    let preload = spec.preload.as_deref().map(std::path::Path::as_os_str).unwrap_or_default();
    let (mut cmd, rd, wr) = launcher_command(&spec.program, &spec.arg0, &spec.args, preload)?;
    cmd.current_dir(&spec.cwd);
    for (k, v) in &spec.env {
        cmd.env(k, v);
    }
    match &spec.stdin {
        Some(p) => cmd.stdin(std::fs::File::open(p)?),
        None => cmd.stdin(Stdio::null()),
    };
    match &spec.stdout {
        Some(p) => cmd.stdout(std::fs::File::create(p)?),
        None => cmd.stdout(Stdio::null()),
    };
    cmd.stderr(Stdio::piped());
    let t0 = Instant::now();
    let mut child = cmd.spawn()?;
    drop(wr);
    let err = child.stderr.take();
    let reader = std::thread::spawn(move || err.map(read_tail).unwrap_or_default());
    let mut report = std::io::BufReader::new(std::fs::File::from(rd));
    let mut line = String::new();
    report.read_line(&mut line)?;
    let pid: u32 = line.strip_prefix("pid ").and_then(|p| p.trim().parse().ok()).unwrap_or(0);
    let stop = Arc::new(AtomicBool::new(false));
    let peak = Arc::new(AtomicU64::new(0));
    let sampler = (pid != 0 && !spec.unsampled).then(|| {
        let (s, p) = (stop.clone(), peak.clone());
        std::thread::spawn(move || sample(pid, s, p))
    });
    // The watchdog sleeps on a channel so that the end of the run wakes it at once.
    let (ended, wait_end) = std::sync::mpsc::channel::<()>();
    let watchdog = {
        let (limit, lpid) = (spec.timeout, child.id());
        std::thread::spawn(move || {
            let late = matches!(wait_end.recv_timeout(limit), Err(std::sync::mpsc::RecvTimeoutError::Timeout));
            if late {
                // SAFETY: kill on the program (still a child of the waiting launcher, so
                // its pid cannot be reused) and on the launcher (not yet waited for).
                unsafe {
                    if pid != 0 {
                        libc::kill(pid as libc::pid_t, libc::SIGKILL);
                    }
                    libc::kill(lpid as libc::pid_t, libc::SIGKILL);
                }
            }
            late
        })
    };
    let mut rest = String::new();
    let _ = report.read_to_string(&mut rest);
    let _ = child.wait();
    let wall = t0.elapsed().as_secs_f64();
    drop(ended);
    stop.store(true, Ordering::Relaxed);
    let late = watchdog.join().unwrap_or(false);
    if let Some(s) = sampler {
        let _ = s.join();
    }
    let stderr = reader.join().unwrap_or_default();
    let stderr_tail = stderr_tail(&stderr);
    let line = format!("{line}{rest}");
    match launcher_end(&line).map_err(|m| std::io::Error::new(std::io::ErrorKind::InvalidData, m))? {
        LauncherEnd::NotStarted(e) => Err(std::io::Error::other(format!("cannot start {}: {e}", spec.program.display()))),
        // Killed before it could report (the deadline, or a signal to the launcher).
        LauncherEnd::Unfinished => Ok(Run { sampled_rss: peak.load(Ordering::Relaxed), wall, status: -(libc::SIGKILL), stderr_tail, ..Default::default() }),
        LauncherEnd::Done(d) => Ok(Run {
            rusage_rss: d.max_rss_bytes,
            sampled_rss: peak.load(Ordering::Relaxed),
            // Killed at the deadline: the caller's clock, which the deadline was measured on (the
            // launcher, if it still reported, started its clock a little later).
            wall: if late { wall } else { d.wall.as_secs_f64() },
            user: d.user_seconds,
            sys: d.sys_seconds,
            status: d.status,
            stderr_tail,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn measures_a_program_that_touches_memory() {
        // python3 filling 64 MiB: both measures see at least that much.
        let py = ["/usr/bin/python3", "/usr/local/bin/python3"].into_iter().find(|p| std::path::Path::new(p).exists());
        let Some(py) = py else { panic!("python3 is required (make test installs it)") };
        let spec = RunSpec {
            program: py.into(),
            arg0: "python3".into(),
            args: vec!["-c".into(), "import time; b = bytearray(64 << 20); time.sleep(0.5)".into()],
            cwd: std::env::temp_dir(),
            timeout: Duration::from_secs(60),
            ..Default::default()
        };
        // This process holds 300 MiB while it starts the program: none of it may show.
        let ballast = vec![1u8; 300 << 20];
        let r = run_once(&spec).unwrap();
        assert!(ballast.iter().step_by(4096).all(|&b| b == 1));
        assert!(r.ok(), "{r:?}");
        assert!(r.rusage_rss < 200 << 20, "the parent's RSS leaked into the program's: {r:?}");
        assert!(r.rusage_rss >= 64 << 20 && r.sampled_rss >= 60 << 20, "{r:?}");
        assert!(r.peak(RssMethod::Rusage) == r.rusage_rss);
        // The launcher's clock: at least the program's sleep, and not the 60 s deadline.
        assert!(r.wall >= 0.5 && r.wall < 30.0, "{r:?}");
        // Unsampled: the peak from wait4 alone.
        let r = run_once(&RunSpec { unsampled: true, ..spec.clone() }).unwrap();
        assert!(r.ok() && r.rusage_rss >= 64 << 20 && r.sampled_rss == 0, "{r:?}");
        let fail = RunSpec { args: vec!["-c".into(), "import sys\nfor i in range(100): print('line', i, file=sys.stderr)\nsys.exit(3)".into()], ..spec };
        let r = run_once(&fail).unwrap();
        assert_eq!(r.status, 3);
        let want: Vec<String> = (80..100).map(|i| format!("line {i}")).collect();
        assert_eq!(r.stderr_tail, want.join("\n"), "the last 20 lines of standard error");
    }

    #[test]
    fn the_deadline_kills_a_program_that_runs_too_long() {
        let spec = RunSpec {
            program: "/bin/sleep".into(),
            arg0: "sleep".into(),
            args: vec!["30".into()],
            cwd: std::env::temp_dir(),
            timeout: Duration::from_millis(300),
            ..Default::default()
        };
        let t = Instant::now();
        let r = run_once(&spec).unwrap();
        assert_eq!(r.status, -libc::SIGKILL, "{r:?}");
        assert!(r.wall >= 0.3 && t.elapsed() < Duration::from_secs(20), "{r:?}");
    }

    #[test]
    fn stderr_tail_keeps_the_end() {
        assert_eq!(stderr_tail(b""), "");
        assert_eq!(stderr_tail(b"one\ntwo\n\n"), "one\ntwo");
        let many: String = (0..50).map(|i| format!("l{i}\n")).collect();
        assert_eq!(stderr_tail(many.as_bytes()).lines().collect::<Vec<_>>(), (30..50).map(|i| format!("l{i}")).collect::<Vec<_>>());
        // Long lines: at most TAIL_BYTES, starting at a line where one starts in reach.
        let long = format!("{}\n{}\nlast", "a".repeat(3000), "b".repeat(1500));
        assert_eq!(stderr_tail(long.as_bytes()), format!("{}\nlast", "b".repeat(1500)));
        // One huge line: its last bytes, cut at a character boundary, invalid UTF-8 replaced.
        let mut huge = "é".repeat(3000).into_bytes();
        huge.extend_from_slice(b"\xff end");
        let t = stderr_tail(&huge);
        assert!(t.len() <= TAIL_BYTES && t.ends_with("\u{fffd} end") && t.starts_with('é'), "{t}");
        // read_tail keeps the end of a long stream.
        let stream: Vec<u8> = (0..1_000_000u32).flat_map(|i| format!("{i}\n").into_bytes()).collect();
        let kept = read_tail(&stream[..]);
        assert!(kept.len() <= 64 << 10 && stream.ends_with(&kept));
        assert!(stderr_tail(&kept).ends_with("999999"));
    }
}
