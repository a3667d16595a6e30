//! What the benchmark binaries ask of the host: CPU time of finished children, the output of a
//! small command (git, date, uname) and the machine line of the results' header, and commands
//! written the way a shell reads them back.

use std::process::Command;

/// CPU seconds (user + system) of all waited-for children so far.
pub fn children_cpu() -> f64 {
    // SAFETY: getrusage only writes into the struct we pass.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut ru) };
    let t = |v: libc::timeval| v.tv_sec as f64 + v.tv_usec as f64 / 1e6;
    t(ru.ru_utime) + t(ru.ru_stime)
}

/// The trimmed standard output of a command ("" when it cannot run).
pub fn output(cmd: &str, args: &[&str]) -> String {
    Command::new(cmd).args(args).output().map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string()).unwrap_or_default()
}

/// Quotes an argument for the recorded command line when the shell would need it.
pub fn shell_quote(a: &str) -> String {
    if !a.is_empty() && a.chars().all(|c| c.is_ascii_alphanumeric() || "-_./=,:+".contains(c)) {
        a.to_string()
    } else {
        format!("'{}'", a.replace('\'', r"'\''"))
    }
}

/// The results' line naming the machine, the date and the `commit` measured.
pub fn machine_line(commit: &str) -> String {
    let date = output("date", &["-u", "+%Y-%m-%d %H:%M UTC"]);
    let cpu = output("sh", &["-c", "grep -m1 'model name' /proc/cpuinfo | cut -d: -f2"]);
    let cores = output("nproc", &[]);
    let mem = output("sh", &["-c", "awk '/MemTotal/ {printf \"%.0f GiB\", $2 / 1048576}' /proc/meminfo"]);
    format!("Machine: {cpu} ({cores} cores, {mem}), shared with other jobs while measured. Date: {date}. Commit: {}.", commit.trim())
}
