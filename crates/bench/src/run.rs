//! Running a child process and measuring it: wall time, peak RSS (from `wait4`'s rusage, which
//! covers exactly that child), exit status and captured output, with a hard kill deadline.

use std::io::Read;
use std::process::{Command, Stdio};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// What one child run measured.
#[derive(Debug)]
pub struct Measured {
    /// Wall-clock seconds from spawn to exit (process start-up and I/O included, as in the
    /// anchors' figures).
    pub wall: f64,
    /// User CPU seconds of the child (`ru_utime`, all its threads): steadier than wall time on
    /// a shared machine.
    pub user: f64,
    /// Peak resident set size of the child in bytes (`ru_maxrss`).
    pub max_rss: u64,
    /// Exit code, or `None` when killed by a signal.
    pub code: Option<i32>,
    /// The signal that ended the child, if any.
    pub signal: Option<i32>,
    /// Whether the harness killed it at the deadline.
    pub timed_out: bool,
    /// Captured standard output.
    pub stdout: String,
    /// Captured standard error.
    pub stderr: String,
}

impl Measured {
    /// Exited with status 0.
    pub fn success(&self) -> bool {
        self.code == Some(0)
    }

    /// A short reason for a failed run, for tables and logs.
    pub fn failure(&self) -> String {
        if self.timed_out {
            format!("killed after {:.0} s", self.wall)
        } else if let Some(s) = self.signal {
            format!("signal {s}")
        } else {
            format!("exit {}", self.code.unwrap_or(-1))
        }
    }

    /// The last non-empty line of stderr (where heaplab puts its error message).
    pub fn last_error_line(&self) -> String {
        self.stderr.lines().rev().map(str::trim).find(|l| !l.is_empty()).unwrap_or("").to_string()
    }
}

/// Runs `cmd` to completion (or until `kill_after`), capturing stdout and stderr.
pub fn run(cmd: &mut Command, kill_after: Duration) -> std::io::Result<Measured> {
    cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let start = Instant::now();
    let mut child = cmd.spawn()?;
    let pid = child.id() as libc::pid_t;

    // Pipes are drained on threads: a child writing more than a pipe buffer would otherwise
    // block forever while we wait for it.
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let out_t = std::thread::spawn(move || {
        let mut s = Vec::new();
        let _ = out.read_to_end(&mut s);
        String::from_utf8_lossy(&s).into_owned()
    });
    let err_t = std::thread::spawn(move || {
        let mut s = Vec::new();
        let _ = err.read_to_end(&mut s);
        String::from_utf8_lossy(&s).into_owned()
    });

    // The watchdog kills the child at the deadline. `exited` is set (under the lock) after the
    // child has exited but *before* it is reaped, so the watchdog can never signal a recycled pid.
    let state = Arc::new((Mutex::new((false, false)), Condvar::new())); // (exited, killed)
    let dog = {
        let state = Arc::clone(&state);
        std::thread::spawn(move || {
            let (lock, cv) = &*state;
            let deadline = Instant::now() + kill_after;
            let mut g = lock.lock().unwrap();
            loop {
                if g.0 {
                    return;
                }
                let now = Instant::now();
                if now >= deadline {
                    // SAFETY: the child is not yet reaped (exited == false under the lock), so
                    // the pid still names it.
                    unsafe { libc::kill(pid, libc::SIGKILL) };
                    g.1 = true;
                    return;
                }
                g = cv.wait_timeout(g, deadline - now).unwrap().0;
            }
        })
    };

    // Wait for exit without reaping (WNOWAIT), tell the watchdog, then reap with wait4 to get
    // the child's own rusage.
    loop {
        // SAFETY: plain syscall on our own child; siginfo is written by the kernel.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        let r = unsafe { libc::waitid(libc::P_PID, pid as libc::id_t, &mut info, libc::WEXITED | libc::WNOWAIT) };
        if r == 0 {
            break;
        }
        let e = std::io::Error::last_os_error();
        if e.kind() != std::io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
    let wall = start.elapsed().as_secs_f64();
    let killed = {
        let (lock, cv) = &*state;
        let mut g = lock.lock().unwrap();
        g.0 = true;
        cv.notify_all();
        g.1
    };
    let _ = dog.join();
    let mut status: libc::c_int = 0;
    // SAFETY: rusage is plain data filled by the kernel.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    let r = unsafe { libc::wait4(pid, &mut status, 0, &mut ru) };
    if r < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // std's Child would otherwise try to reap it again on `wait`; we never call it, and dropping
    // a Child does not wait.
    drop(child);
    let (code, signal) = if libc::WIFEXITED(status) {
        (Some(libc::WEXITSTATUS(status)), None)
    } else if libc::WIFSIGNALED(status) {
        (None, Some(libc::WTERMSIG(status)))
    } else {
        (None, None)
    };
    Ok(Measured {
        wall,
        user: ru.ru_utime.tv_sec as f64 + ru.ru_utime.tv_usec as f64 * 1e-6,
        // ru_maxrss is in KiB on Linux.
        max_rss: (ru.ru_maxrss.max(0) as u64) * 1024,
        code,
        signal,
        timed_out: killed,
        stdout: out_t.join().unwrap_or_default(),
        stderr: err_t.join().unwrap_or_default(),
    })
}

/// Runs a command and returns its trimmed stdout, or `None` if it cannot be run or fails.
/// For the machine description (uname, git, date).
pub fn capture(prog: &str, args: &[&str]) -> Option<String> {
    let out = Command::new(prog).args(args).stderr(Stdio::null()).output().ok()?;
    if !out.status.success() {
        return None;
    }
    Some(String::from_utf8_lossy(&out.stdout).trim().to_string())
}
