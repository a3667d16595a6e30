//! Running a program under an allocator and measuring its peak resident set size.
//!
//! The primary measure is the kernel's: `wait4` returns the child's rusage, whose `ru_maxrss`
//! is the largest RSS of the program or of any descendant it waited for (what `time -v`
//! reports). Alongside it a sampler reads `/proc` every few milliseconds while the program runs
//! (no cgroup needed): the program's `VmHWM` and the summed `VmRSS` of its process tree. It is
//! the fallback where rusage reports nothing, and a cross-check elsewhere (sampling misses
//! peaks shorter than its period).

use std::io::Read;
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

/// Runs `spec` once, its output discarded, and measures it.
pub fn run_once(spec: &RunSpec) -> std::io::Result<Run> {
    let mut cmd = Command::new(&spec.program);
    cmd.arg0(&spec.arg0).args(&spec.args).current_dir(&spec.cwd).env_remove("LD_PRELOAD");
    for (k, v) in &spec.env {
        cmd.env(k, v);
    }
    if let Some(lib) = &spec.preload {
        cmd.env("LD_PRELOAD", lib);
    }
    match &spec.stdin {
        Some(p) => cmd.stdin(std::fs::File::open(p)?),
        None => cmd.stdin(Stdio::null()),
    };
    cmd.stdout(Stdio::null()).stderr(Stdio::piped());
    let t0 = Instant::now();
    let mut child = cmd.spawn()?;
    let pid = child.id();
    let mut err = child.stderr.take();
    let reader = std::thread::spawn(move || {
        let mut buf = Vec::new();
        if let Some(e) = err.as_mut() {
            let _ = e.read_to_end(&mut buf);
        }
        buf
    });
    let stop = Arc::new(AtomicBool::new(false));
    let peak = Arc::new(AtomicU64::new(0));
    let sampler = {
        let (s, p) = (stop.clone(), peak.clone());
        std::thread::spawn(move || sample(pid, s, p))
    };
    let done = Arc::new(AtomicBool::new(false));
    let watchdog = {
        let (d, limit) = (done.clone(), spec.timeout);
        std::thread::spawn(move || {
            let t = Instant::now();
            while !d.load(Ordering::Relaxed) {
                if t.elapsed() > limit {
                    // SAFETY: kill on our own child's pid, which is not reaped before `done` is set.
                    unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) };
                    return;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        })
    };
    let mut status: libc::c_int = 0;
    // SAFETY: an all-zero rusage is a valid value to be overwritten.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: wait4 on our own child; std's Child is not waited on afterwards.
    let r = loop {
        let r = unsafe { libc::wait4(pid as libc::pid_t, &mut status, 0, &mut ru) };
        if r >= 0 || std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
            break r;
        }
    };
    let wall = t0.elapsed().as_secs_f64();
    done.store(true, Ordering::Relaxed);
    stop.store(true, Ordering::Relaxed);
    let _ = watchdog.join();
    let _ = sampler.join();
    let stderr = reader.join().unwrap_or_default();
    if r < 0 {
        return Err(std::io::Error::last_os_error());
    }
    let code = if libc::WIFEXITED(status) { libc::WEXITSTATUS(status) } else { -libc::WTERMSIG(status) };
    let tail: Vec<&str> = std::str::from_utf8(&stderr).unwrap_or("").lines().rev().take(3).collect();
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    Ok(Run {
        rusage_rss: (ru.ru_maxrss.max(0) as u64) * 1024,
        sampled_rss: peak.load(Ordering::Relaxed),
        wall,
        user: secs(ru.ru_utime),
        sys: secs(ru.ru_stime),
        status: code,
        stderr_tail: tail.into_iter().rev().collect::<Vec<_>>().join("\n"),
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
        let r = run_once(&spec).unwrap();
        assert!(r.ok(), "{r:?}");
        assert!(r.rusage_rss >= 64 << 20 && r.sampled_rss >= 60 << 20, "{r:?}");
        assert!(r.peak(RssMethod::Rusage) == r.rusage_rss);
        let fail = RunSpec { args: vec!["-c".into(), "import sys; sys.exit(3)".into()], ..spec };
        assert_eq!(run_once(&fail).unwrap().status, 3);
    }
}
