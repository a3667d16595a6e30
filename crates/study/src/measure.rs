//! Running a program under an allocator and measuring its peak resident set size.
//!
//! The primary measure is the kernel's: `wait4` returns the child's rusage, whose `ru_maxrss`
//! is the largest RSS of the program or of any descendant it waited for (what `time -v`
//! reports). The program is started by a tiny launcher (C, `launcher/`, embedded here) that
//! forks it and calls wait4: Linux folds the RSS a process had before exec into that figure,
//! and a program forked from heaplab itself would inherit heaplab's. Alongside it a sampler reads `/proc` every few milliseconds while the program runs
//! (no cgroup needed): the program's `VmHWM` and the summed `VmRSS` of its process tree. It is
//! the fallback where rusage reports nothing, and a cross-check elsewhere (sampling misses
//! peaks shorter than its period).

use std::io::{BufRead, Read};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Command, Stdio};
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
    /// Working directory.
    pub cwd: PathBuf,
    /// Killed after this long.
    pub timeout: Duration,
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
    /// Wall time, seconds.
    pub wall: f64,
    /// User CPU time, seconds.
    pub user: f64,
    /// System CPU time, seconds.
    pub sys: f64,
    /// Exit code, or −signal.
    pub status: i32,
    /// The last lines the program wrote to standard error.
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

/// The run launcher, compiled by build.rs.
const LAUNCHER: &[u8] = include_bytes!(env!("HEAPLAB_RUN_LAUNCHER"));

/// Runs `spec` once, its output discarded, and measures it.
pub fn run_once(spec: &RunSpec) -> std::io::Result<Run> {
    let launcher = heaplab_trace::preload::install_cached("heaplab_run", "", LAUNCHER, true)?;
    let mut fds = [0; 2];
    // SAFETY: pipe2 fills two descriptors we then own.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: fresh descriptors from pipe2.
    let (rd, wr) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    let mut cmd = Command::new(&launcher);
    cmd.arg(&spec.program).arg(&spec.arg0).args(&spec.args).current_dir(&spec.cwd).env_remove("LD_PRELOAD");
    for (k, v) in &spec.env {
        cmd.env(k, v);
    }
    cmd.env("HEAPLAB_RUN_PRELOAD", spec.preload.as_ref().map(|p| p.as_os_str().to_owned()).unwrap_or_default());
    match &spec.stdin {
        Some(p) => cmd.stdin(std::fs::File::open(p)?),
        None => cmd.stdin(Stdio::null()),
    };
    cmd.stdout(Stdio::null()).stderr(Stdio::piped());
    let w = wr.as_raw_fd();
    // SAFETY: only dup2 between fork and exec.
    unsafe {
        cmd.pre_exec(move || if libc::dup2(w, 3) < 0 { Err(std::io::Error::last_os_error()) } else { Ok(()) });
    }
    let t0 = Instant::now();
    let mut child = cmd.spawn()?;
    drop(wr);
    let mut err = child.stderr.take();
    let reader = std::thread::spawn(move || {
        let mut buf = Vec::new();
        if let Some(e) = err.as_mut() {
            let _ = e.read_to_end(&mut buf);
        }
        buf
    });
    let mut report = std::io::BufReader::new(std::fs::File::from(rd));
    let mut line = String::new();
    report.read_line(&mut line)?;
    let pid: u32 = line.strip_prefix("pid ").and_then(|p| p.trim().parse().ok()).unwrap_or(0);
    let stop = Arc::new(AtomicBool::new(false));
    let peak = Arc::new(AtomicU64::new(0));
    let sampler = (pid != 0).then(|| {
        let (s, p) = (stop.clone(), peak.clone());
        std::thread::spawn(move || sample(pid, s, p))
    });
    let done = Arc::new(AtomicBool::new(false));
    let watchdog = {
        let (d, limit, lpid) = (done.clone(), spec.timeout, child.id());
        std::thread::spawn(move || {
            let t = Instant::now();
            while !d.load(Ordering::Relaxed) {
                if t.elapsed() > limit {
                    // SAFETY: kill on the program (still a child of the waiting launcher, so
                    // its pid cannot be reused) and on the launcher (not yet waited for).
                    unsafe {
                        if pid != 0 {
                            libc::kill(pid as libc::pid_t, libc::SIGKILL);
                        }
                        libc::kill(lpid as libc::pid_t, libc::SIGKILL);
                    }
                    return;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        })
    };
    let mut rest = String::new();
    let _ = report.read_to_string(&mut rest);
    let _ = child.wait();
    let wall = t0.elapsed().as_secs_f64();
    done.store(true, Ordering::Relaxed);
    stop.store(true, Ordering::Relaxed);
    let _ = watchdog.join();
    if let Some(s) = sampler {
        let _ = s.join();
    }
    let stderr = reader.join().unwrap_or_default();
    let tail: Vec<&str> = std::str::from_utf8(&stderr).unwrap_or("").lines().rev().take(3).collect();
    let stderr_tail = tail.into_iter().rev().collect::<Vec<_>>().join("\n");
    let line = format!("{line}{rest}");
    if let Some(e) = line.lines().find_map(|l| l.strip_prefix("exec ")) {
        let errno = e.trim().parse().unwrap_or(0);
        return Err(std::io::Error::other(format!("cannot start {}: {}", spec.program.display(), std::io::Error::from_raw_os_error(errno))));
    }
    let Some(done) = line.lines().find_map(|l| l.strip_prefix("done ")) else {
        // Killed before it could report (the deadline, or a signal to the launcher).
        return Ok(Run { sampled_rss: peak.load(Ordering::Relaxed), wall, status: -(libc::SIGKILL), stderr_tail, ..Default::default() });
    };
    let v: Vec<i64> = done.split_whitespace().filter_map(|x| x.parse().ok()).collect();
    if v.len() != 4 {
        return Err(std::io::Error::new(std::io::ErrorKind::InvalidData, format!("launcher report '{done}'")));
    }
    Ok(Run {
        rusage_rss: v[1].max(0) as u64 * 1024,
        sampled_rss: peak.load(Ordering::Relaxed),
        wall,
        user: v[2] as f64 / 1e6,
        sys: v[3] as f64 / 1e6,
        status: v[0] as i32,
        stderr_tail,
    })
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
            args: vec!["-c".into(), "import time; b = bytearray(64 << 20); time.sleep(0.1)".into()],
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
        let fail = RunSpec { args: vec!["-c".into(), "import sys; sys.exit(3)".into()], ..spec };
        assert_eq!(run_once(&fail).unwrap().status, 3);
    }
}
