//! Running a program under the tracer: finding it, preloading the tracer library with its
//! settings, passing on the signals a user sends to heaplab, ending the program when a cap on
//! the run's trace size or duration is reached, and collecting the trace files the run wrote.
//!
//! It also runs a program with one of heaplab's runtime libraries preloaded ([`RuntimeRun`]):
//! the launch, the options, the finished run and the errors the layout runtime's and the
//! grouped allocator's launchers share; each of them adds only its own settings and report.
//!
//! The program's standard streams are its own: nothing here reads or writes them.

use crate::runtime_report::RuntimeReport;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus};
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::{Duration, Instant};

/// How to trace a run.
#[derive(Clone, Debug, Default)]
pub struct LaunchOptions {
    /// Call-stack frames recorded per allocation (0: none).
    pub stack_depth: u32,
    /// Trace programs started by exec.
    pub follow_exec: bool,
    /// Trace only processes whose executable or argv[0] has one of these names (empty: all).
    /// A name also matches its versioned forms: `python3` matches `python3.11`.
    pub only: Vec<String>,
    /// End the program when the run's trace files together reach this many bytes.
    pub max_bytes: Option<u64>,
    /// End the program after this long.
    pub max_duration: Option<Duration>,
}

/// Why heaplab ended a program before it finished by itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cap {
    /// The run's traces reached `max_bytes`.
    Size(u64),
    /// The run lasted `max_duration`.
    Duration(Duration),
}

/// A finished traced run.
#[derive(Debug)]
pub struct Launched {
    /// How the program ended.
    pub status: ExitStatus,
    /// Traces written beside the output by fork children and exec'd programs, by name.
    pub children: Vec<PathBuf>,
    /// Set when a cap ended the program.
    pub capped: Option<Cap>,
    /// The last signal heaplab received during the run and passed on to the program.
    pub forwarded: Option<i32>,
    /// Wall time of the run.
    pub wall: Duration,
}

/// Why a run could not be traced.
#[derive(Debug)]
pub enum LaunchError {
    /// The program is neither an executable file nor in PATH.
    NotFound(String),
    /// The trace cannot be written where asked (the message names the path and the reason).
    Output(String),
    /// The tracer library could not be installed.
    Library(std::io::Error),
    /// The program could not be started.
    Start(String, std::io::Error),
    /// The program ran but no process wrote a trace (the message says why that may be).
    NoTrace(String, ExitStatus),
    /// A run's own scratch files could not be written (the message names them).
    Setup(String),
}

impl LaunchError {
    /// Whose fault it is: the tracer library that cannot be installed is the work failing;
    /// everything else is the program or the output the caller named.
    pub fn class(&self) -> heaplab_model::ErrorClass {
        match self {
            LaunchError::Library(_) | LaunchError::Setup(_) => heaplab_model::ErrorClass::WorkFailed,
            _ => heaplab_model::ErrorClass::BadInput,
        }
    }
}

impl std::fmt::Display for LaunchError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LaunchError::NotFound(p) => write!(f, "{p}: program not found (not an executable file, nor in PATH)"),
            LaunchError::Output(m) => f.write_str(m),
            LaunchError::Library(e) => write!(f, "cannot install the tracer library: {e}"),
            LaunchError::Start(p, e) => write!(f, "{p}: cannot start: {e}"),
            LaunchError::NoTrace(m, _) | LaunchError::Setup(m) => f.write_str(m),
        }
    }
}

/// The executable `name` runs: a path when it contains '/', else the first match in PATH.
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

/// Finds the real binary for `name`, for callers that must trace the program itself (the bench
/// harness): unlike [`find_program`], which takes what the shell would run, it looks in
/// `/usr/bin` first, then every `PATH` entry, each with symlinks resolved, keeping the first
/// that is an ELF file. A shell wrapper (pyenv's
/// `python3` shim, for one) is skipped: traced through it, the program's own heap would go to a
/// child trace `STEM.PID.hltrace` and the main trace would hold only the shell's.
pub fn find_binary(name: &str) -> Option<PathBuf> {
    let mut dirs = vec![PathBuf::from("/usr/bin")];
    if let Some(path) = std::env::var_os("PATH") {
        dirs.extend(std::env::split_paths(&path));
    }
    dirs.into_iter().map(|d| d.join(name)).find_map(|p| {
        let real = std::fs::canonicalize(&p).ok()?;
        is_elf_executable(&real).then_some(real)
    })
}

fn is_elf_executable(p: &Path) -> bool {
    use std::io::Read;
    use std::os::unix::fs::PermissionsExt;
    let Ok(meta) = std::fs::metadata(p) else { return false };
    if !meta.is_file() || meta.permissions().mode() & 0o111 == 0 {
        return false;
    }
    let mut magic = [0u8; 4];
    std::fs::File::open(p).and_then(|mut f| f.read_exact(&mut magic)).is_ok() && magic == *b"\x7fELF"
}

/// The part of a trace file name before `.hltrace`: the stem that children's names extend.
pub fn stem(output: &Path) -> String {
    let name = output.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    name.strip_suffix(".hltrace").unwrap_or(&name).to_string()
}

/// Trace files a run wrote beside `output`: STEM.PID.hltrace and STEM.PID.K.hltrace, by name.
pub fn child_traces(output: &Path) -> Vec<PathBuf> {
    let dir = output.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let stem = stem(output);
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let n = e.file_name().to_string_lossy().into_owned();
            let mid = n.strip_prefix(&format!("{stem}."))?.strip_suffix(".hltrace")?.to_string();
            let parts: Vec<&str> = mid.split('.').collect();
            let ok = parts.len() <= 2 && parts.iter().all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
            ok.then(|| e.path())
        })
        .collect();
    found.sort();
    found
}

/// The pid of the running program, for the signal handler (0: none).
static CHILD: AtomicI32 = AtomicI32::new(0);
/// The last signal passed on to it.
static FORWARDED: AtomicI32 = AtomicI32::new(0);
/// A signal that came while a program started by [`Supervised::spawn`] had no pid yet (0:
/// none): whoever takes it, the handler or the spawner, passes it on.
static PENDING: AtomicI32 = AtomicI32::new(0);

/// The signals a user sends to end a run: heaplab passes them on to the program and stays to
/// finish its trace and summary.
const PASSED_ON: [i32; 4] = [libc::SIGINT, libc::SIGQUIT, libc::SIGTERM, libc::SIGHUP];

extern "C" fn pass_on(sig: i32, info: *mut libc::siginfo_t, _: *mut libc::c_void) {
    // A signal from the terminal (Ctrl-C, Ctrl-\, hang-up) already went to the whole
    // foreground process group, the program included: passing it on would deliver it twice.
    // SAFETY: the kernel hands a valid siginfo to an SA_SIGINFO handler.
    let from_kernel = unsafe { (*info).si_code } > 0;
    let pid = CHILD.load(Ordering::SeqCst);
    FORWARDED.store(sig, Ordering::SeqCst);
    if from_kernel {
        return;
    }
    if pid > 0 {
        // SAFETY: kill is async-signal-safe.
        unsafe {
            libc::kill(pid, sig);
        }
        return;
    }
    // No pid yet: leave the signal for the spawner, unless the pid came meanwhile.
    PENDING.store(sig, Ordering::SeqCst);
    pass_pending();
}

/// Passes on the [`PENDING`] signal, if there is one and the program's pid is known.
fn pass_pending() {
    let pid = CHILD.load(Ordering::SeqCst);
    if pid > 0 {
        let sig = PENDING.swap(0, Ordering::SeqCst);
        if sig != 0 {
            // SAFETY: kill is async-signal-safe.
            unsafe {
                libc::kill(pid, sig);
            }
        }
    }
}

/// Handlers that pass [`PASSED_ON`] signals to the program while it runs; the old dispositions
/// come back on drop. The handlers are reset by exec, so the program starts with the default
/// dispositions (an ignored SIGINT would be inherited, and Ctrl-C could not stop it).
struct PassOn([libc::sigaction; 4]);

impl PassOn {
    fn install() -> PassOn {
        // SAFETY: plain sigaction calls with a zeroed, then filled, struct.
        unsafe {
            let mut old: [libc::sigaction; 4] = std::mem::zeroed();
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = pass_on as *const () as usize;
            sa.sa_flags = libc::SA_SIGINFO | libc::SA_RESTART;
            libc::sigemptyset(&mut sa.sa_mask);
            for (k, &sig) in PASSED_ON.iter().enumerate() {
                libc::sigaction(sig, &sa, &mut old[k]);
            }
            PassOn(old)
        }
    }
}

impl Drop for PassOn {
    fn drop(&mut self) {
        CHILD.store(0, Ordering::SeqCst);
        // SAFETY: restores the dispositions saved by install().
        unsafe {
            for (k, &sig) in PASSED_ON.iter().enumerate() {
                libc::sigaction(sig, &self.0[k], std::ptr::null_mut());
            }
        }
    }
}

/// Blocks the [`PASSED_ON`] signals until dropped, so one that arrives while the program is
/// being started is delivered (and passed on) once its pid is known.
struct Blocked(libc::sigset_t);

impl Blocked {
    fn new() -> Blocked {
        // SAFETY: signal-mask calls on sets we own.
        unsafe {
            let mut set: libc::sigset_t = std::mem::zeroed();
            let mut old: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            for &s in &PASSED_ON {
                libc::sigaddset(&mut set, s);
            }
            libc::pthread_sigmask(libc::SIG_BLOCK, &set, &mut old);
            Blocked(old)
        }
    }
}

impl Drop for Blocked {
    fn drop(&mut self) {
        // SAFETY: restores the mask saved by new().
        unsafe {
            libc::pthread_sigmask(libc::SIG_SETMASK, &self.0, std::ptr::null_mut());
        }
    }
}

/// Fails early, before the program runs, when the trace cannot be created in `dir` (the
/// tracer inside the program could only print a warning and run untraced).
fn check_dir_writable(dir: &Path) -> Result<(), LaunchError> {
    if !dir.is_dir() {
        return Err(LaunchError::Output(format!("{}: the output directory does not exist", dir.display())));
    }
    let probe = dir.join(format!(".heaplab-probe.{}", std::process::id()));
    match std::fs::OpenOptions::new().write(true).create_new(true).open(&probe) {
        Ok(_) => {
            let _ = std::fs::remove_file(&probe);
            Ok(())
        }
        Err(e) => Err(LaunchError::Output(format!("{}: cannot write the trace there: {e}", dir.display()))),
    }
}

/// Identity of a file (device, inode), to tell a trace this run wrote from an older file.
fn identity(p: &Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(p).ok().map(|m| (m.dev(), m.ino()))
}

/// Every descendant of `pid`, from /proc (the program's own children may hold the run's
/// traces open too, and a cap must end them as well).
fn descendants(pid: i32) -> Vec<i32> {
    let mut parent_of = Vec::new();
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(p) = e.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else { continue };
        let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else { continue };
        // The command name in parentheses may hold spaces: the fields start after the last ')'.
        let ppid = stat.rsplit_once(')').and_then(|(_, rest)| rest.split_whitespace().nth(1)?.parse::<i32>().ok());
        if let Some(pp) = ppid {
            parent_of.push((p, pp));
        }
    }
    let mut found = vec![pid];
    let mut k = 0;
    while k < found.len() {
        let q = found[k];
        found.extend(parent_of.iter().filter(|(_, pp)| *pp == q).map(|(p, _)| *p));
        k += 1;
    }
    found.remove(0);
    found
}

/// Bytes the run's traces hold so far.
fn traces_bytes(output: &Path, claim: &Path) -> u64 {
    let size = |p: &Path| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
    size(output) + size(claim) + child_traces(output).iter().map(|p| size(p)).sum::<u64>()
}

/// A program started the way heaplab runs programs: no signal blocked in it, SIGTERM to it if
/// heaplab dies (a parent-death signal), and SIGINT, SIGQUIT, SIGTERM and SIGHUP sent to heaplab
/// passed on to it until [`Supervised::finish`]. Its standard streams are whatever the command
/// says (by default heaplab's own, untouched).
pub struct Supervised {
    /// The running program.
    pub child: std::process::Child,
    /// When it was started.
    pub started: Instant,
    handlers: PassOn,
}

impl Supervised {
    /// Starts `cmd` (`program` names it in errors).
    pub fn start(cmd: &mut Command, program: &str) -> Result<Supervised, LaunchError> {
        Supervised::start_as(cmd, program, true)
    }

    /// Starts `cmd` without a step of heaplab's own between fork and exec (where `cmd` has none
    /// either, the standard library spawns it by `posix_spawn`). The program starts with
    /// heaplab's signal mask (none blocked, unless whatever started heaplab blocked some) but
    /// without a parent-death signal: the run launcher it starts asks for its own and passes it
    /// on (see [`run_launched`]).
    pub fn spawn(cmd: &mut Command, program: &str) -> Result<Supervised, LaunchError> {
        Supervised::start_as(cmd, program, false)
    }

    fn start_as(cmd: &mut Command, program: &str, forked: bool) -> Result<Supervised, LaunchError> {
        if forked {
            Supervised::before_exec(cmd);
        }
        FORWARDED.store(0, Ordering::SeqCst);
        PENDING.store(0, Ordering::SeqCst);
        let handlers = PassOn::install();
        let started = Instant::now();
        // Forked, the child empties its mask before exec; spawned, it inherits ours, so the
        // signals stay unblocked and one that comes before the pid is known waits in PENDING.
        let _blocked = forked.then(Blocked::new);
        let child = cmd.spawn().map_err(|e| LaunchError::Start(program.to_string(), e))?;
        CHILD.store(child.id() as i32, Ordering::SeqCst);
        pass_pending();
        Ok(Supervised { child, started, handlers })
    }

    /// The steps [`Supervised::start`] takes in the child between fork and exec.
    fn before_exec(cmd: &mut Command) {
        let parent = std::process::id() as i32;
        // SAFETY: the closure runs in the child between fork and exec and only makes raw syscalls.
        unsafe {
            cmd.pre_exec(move || {
                // The program starts with no signal blocked (heaplab blocks some while it starts it).
                let mut none: libc::sigset_t = std::mem::zeroed();
                libc::sigemptyset(&mut none);
                libc::pthread_sigmask(libc::SIG_SETMASK, &none, std::ptr::null_mut());
                // Not outlived unnoticed: if heaplab dies (even by SIGKILL), the program is ended.
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM);
                if libc::getppid() != parent {
                    libc::raise(libc::SIGTERM);
                }
                Ok(())
            });
        }
    }

    /// Waits for the program to end: its status, the wall time and the last signal passed on.
    pub fn wait(mut self, program: &str) -> Result<(ExitStatus, Duration, Option<i32>), LaunchError> {
        let status = self.child.wait().map_err(|e| LaunchError::Start(program.to_string(), e))?;
        let (wall, forwarded) = self.finish();
        Ok((status, wall, forwarded))
    }

    /// Once the program has ended: the wall time and the last signal passed on to it; the
    /// signal dispositions are restored.
    pub fn finish(self) -> (Duration, Option<i32>) {
        let wall = self.started.elapsed();
        drop(self.handlers);
        (wall, Some(FORWARDED.load(Ordering::SeqCst)).filter(|&s| s != 0))
    }
}

/// Runs `command` under the tracer, writing the first traced process's trace to `output`
/// (absolute). The file takes its name as soon as tracing starts, so a run that cannot start
/// leaves an existing `output` alone, and one whose heaplab dies leaves the trace at `output`.
/// `setup` adjusts the command (standard streams, working directory, environment) before it
/// starts.
///
/// While the program runs, SIGINT, SIGQUIT, SIGTERM and SIGHUP sent to heaplab are passed on to
/// it (the run then ends as the program does), and the program gets SIGTERM if heaplab itself
/// dies (a parent-death signal).
pub fn launch(command: &[String], output: &Path, opts: &LaunchOptions, setup: impl FnOnce(&mut Command) -> &mut Command) -> Result<Launched, LaunchError> {
    let program = &command[0];
    let resolved = find_program(program).ok_or_else(|| LaunchError::NotFound(program.clone()))?;
    let dir = output.parent().unwrap_or(Path::new("/")).to_path_buf();
    check_dir_writable(&dir)?;
    let lib = crate::preload::library_path().map_err(LaunchError::Library)?;
    let name = output.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    // The tracer claims the root name by creating this file, then writes OUTPUT itself.
    let claim = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    let _ = std::fs::remove_file(&claim);
    let before = child_traces(output);
    let old_output = identity(output);
    // The tracer's settings travel in one variable (lines of key=value), read at its start.
    let settings = format!(
        "out={}\nroot={}\ndepth={}\nfollow={}\nlib={}\nonly={}",
        output.display(),
        claim.display(),
        opts.stack_depth,
        u8::from(opts.follow_exec),
        lib.display(),
        opts.only.join(",")
    );
    if settings.lines().count() != 6 {
        return Err(LaunchError::Output(format!("{}: a trace path cannot contain a newline", output.display())));
    }
    let mut cmd = preload_command(&resolved, command, &[&lib]);
    cmd.env("HEAPLAB_TRACE", &settings);
    setup(&mut cmd);
    let mut run = Supervised::start(&mut cmd, program).inspect_err(|_| {
        let _ = std::fs::remove_file(&claim);
    })?;
    let t0 = run.started;
    let child = &mut run.child;
    let mut capped = None;
    let status = if opts.max_bytes.is_none() && opts.max_duration.is_none() {
        child.wait()
    } else {
        let mut ended_at: Option<Instant> = None;
        loop {
            if let Some(s) = child.try_wait().transpose() {
                break s;
            }
            std::thread::sleep(Duration::from_millis(20));
            let hit = match (opts.max_duration, opts.max_bytes) {
                (Some(d), _) if t0.elapsed() >= d => Some(Cap::Duration(d)),
                (_, Some(b)) if traces_bytes(output, &claim) >= b => Some(Cap::Size(b)),
                _ => None,
            };
            match (hit, ended_at) {
                (Some(cap), None) => {
                    capped = Some(cap);
                    ended_at = Some(Instant::now());
                    let pid = child.id() as i32;
                    for p in std::iter::once(pid).chain(descendants(pid)) {
                        // SAFETY: kill on pids of the run's own process tree.
                        unsafe {
                            libc::kill(p, libc::SIGTERM);
                        }
                    }
                }
                // A program that ignores SIGTERM gets SIGKILL two seconds later.
                (_, Some(at)) if at.elapsed() >= Duration::from_secs(2) => {
                    let pid = child.id() as i32;
                    for p in std::iter::once(pid).chain(descendants(pid)) {
                        // SAFETY: as above.
                        unsafe {
                            libc::kill(p, libc::SIGKILL);
                        }
                    }
                }
                _ => {}
            }
        }
    }
    .map_err(|e| LaunchError::Start(program.clone(), e))?;
    let (wall, forwarded) = run.finish();

    // The tracer renamed its file to OUTPUT, or (when that failed) wrote the claim file itself.
    let claimed = std::fs::metadata(&claim).map(|m| m.len()).unwrap_or(0);
    if claimed > 0 {
        std::fs::rename(&claim, output).map_err(|e| LaunchError::Output(format!("{}: cannot rename the trace into place: {e}", output.display())))?;
    } else {
        let _ = std::fs::remove_file(&claim);
    }
    let written = claimed > 0 || identity(output).is_some_and(|id| Some(id) != old_output);
    if !written {
        let why = if opts.only.is_empty() {
            "statically linked and setuid programs ignore LD_PRELOAD".to_string()
        } else {
            format!("no process of the run was named {} (--only)", opts.only.join(" or "))
        };
        let st = describe_status(&status);
        return Err(LaunchError::NoTrace(format!("{program} {st}, but no trace was written: {why}"), status));
    }
    let children = child_traces(output).into_iter().filter(|p| !before.contains(p)).collect();
    Ok(Launched { status, children, capped, forwarded, wall })
}

/// A signal's name, as users know it: `SIGINT (2)`.
pub fn signal_name(sig: i32) -> String {
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
        14 => "SIGALRM",
        15 => "SIGTERM",
        24 => "SIGXCPU",
        25 => "SIGXFSZ",
        _ => return format!("signal {sig}"),
    };
    format!("{name} ({sig})")
}

/// How a process ended, in words: `exited with status 3`, `killed by SIGSEGV (11)`.
pub fn describe_status(s: &ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (s.code(), s.signal()) {
        (Some(c), _) => format!("exited with status {c}"),
        (None, Some(sig)) => format!("killed by {}", signal_name(sig)),
        _ => "ended in an unknown way".to_string(),
    }
}

/// A private scratch directory for one run (a runtime library's claim file, report and whatever
/// else its launcher hands it), removed on drop.
pub struct Scratch(PathBuf);

impl Scratch {
    /// A new empty directory named after `prefix`, in /dev/shm where it is a writable directory
    /// and TMPDIR does not name another place, else under the system's temporary directory. A
    /// runtime removes its claim file there as the program starts and writes its report as it
    /// ends, in the program's time: on tmpfs both cost about 20 µs less than on ext4. What goes
    /// there is small (the groups' table, the claim, the report). What a heaplab killed by
    /// SIGKILL leaves there is not swept up by later runs: /dev/shm can be shared between pid
    /// namespaces (a container run with the host's IPC), where a process that runs elsewhere
    /// looks gone.
    pub fn new(prefix: &str) -> Result<Scratch, LaunchError> {
        use std::sync::atomic::AtomicU64;
        static N: AtomicU64 = AtomicU64::new(0);
        let name = format!("{prefix}-{}-{}", std::process::id(), N.fetch_add(1, Ordering::Relaxed));
        let shm = Path::new("/dev/shm");
        if std::env::var_os("TMPDIR").is_none() && shm.is_dir() {
            let d = shm.join(&name);
            let _ = std::fs::remove_dir_all(&d);
            if std::fs::create_dir(&d).is_ok() {
                return Ok(Scratch(d));
            }
        }
        let d = std::env::temp_dir().join(&name);
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).map_err(|e| LaunchError::Setup(format!("cannot create the run's scratch directory {}: {e}", d.display())))?;
        Ok(Scratch(d))
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// How to run a program with one of heaplab's runtime libraries.
#[derive(Clone, Debug, Default)]
pub struct RuntimeOptions {
    /// The fallback allocator's library, preloaded after the runtime (`None`: glibc's malloc).
    pub fallback: Option<PathBuf>,
    /// The fallback's name, for the report ("": glibc).
    pub fallback_name: String,
}

/// A program run with one of heaplab's runtime libraries (the layout runtime, the grouped
/// allocator) preloaded ahead of a fallback allocator. The library reads its settings from one
/// environment variable (lines of key=value); it acts only in the image that removes the claim
/// file named there (the one started here: programs that image starts by exec inherit the
/// variable but find no claim), and that image writes its report where `report=` says.
pub struct RuntimeRun<'a> {
    /// The runtime library.
    pub library: &'a Path,
    /// The fallback allocator.
    pub options: &'a RuntimeOptions,
    /// The environment variable the library reads.
    pub settings_var: &'a str,
    /// Settings for the library (`claim` and `report` are added); values hold no newline.
    pub settings: Vec<(&'a str, String)>,
}

/// A finished run with a runtime library, its report read as `R`.
#[derive(Debug)]
pub struct RuntimeFinished<R> {
    /// How the program ended.
    pub status: ExitStatus,
    /// The runtime's report completed with the launcher's fields; `None` when the program
    /// wrote none (it was killed by SIGKILL, or it is statically linked or setuid and ignored
    /// LD_PRELOAD).
    pub report: Option<R>,
    /// Why there is no report, in words.
    pub no_report: Option<String>,
}

/// Why a program could not be run with a runtime library.
#[derive(Debug)]
pub enum RuntimeError {
    /// The layout or groups are damaged, invalid or beyond what the runtime can apply (nothing
    /// was started).
    Input(heaplab_model::InputError),
    /// The program could not be found or started.
    Launch(LaunchError),
    /// The runtime library or the run's scratch files could not be written.
    Setup(String),
}

impl RuntimeError {
    /// A bad layout, bad groups or a bad program are the caller's input; a library that cannot
    /// be installed is the work failing.
    pub fn class(&self) -> heaplab_model::ErrorClass {
        match self {
            RuntimeError::Input(_) => heaplab_model::ErrorClass::BadInput,
            RuntimeError::Launch(e) => e.class(),
            RuntimeError::Setup(_) => heaplab_model::ErrorClass::WorkFailed,
        }
    }
}

impl std::fmt::Display for RuntimeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RuntimeError::Input(e) => write!(f, "{e}"),
            RuntimeError::Launch(e) => write!(f, "{e}"),
            RuntimeError::Setup(m) => f.write_str(m),
        }
    }
}

/// How a [`RuntimeRun`] ended.
#[derive(Debug)]
pub struct RuntimeRan {
    /// How the program ended.
    pub status: ExitStatus,
    /// Wall time of the run, from the launcher's fork of the program to its end.
    pub wall: Duration,
    /// The program's peak RSS (wait4's, see [`run_launched`]).
    pub peak_rss_bytes: u64,
    /// The report the runtime wrote, or why there is none, in words (the program was killed by
    /// SIGKILL, or it is statically linked or setuid and ignored LD_PRELOAD).
    pub report: Result<String, String>,
}

/// The LD_PRELOAD that preloads `libraries`, then the user's own LD_PRELOAD (`None`: nothing).
fn preload_value(libraries: &[&Path]) -> Option<std::ffi::OsString> {
    let mut preload: Vec<std::ffi::OsString> = libraries.iter().map(|p| p.as_os_str().to_owned()).collect();
    preload.extend(std::env::var_os("LD_PRELOAD").filter(|v| !v.is_empty()));
    (!preload.is_empty()).then(|| preload.join(std::ffi::OsStr::new(":")))
}

/// `command` ready to start as `resolved` (its program found on PATH) under its own name, with
/// `libraries`, then the user's own LD_PRELOAD, preloaded.
fn preload_command(resolved: &Path, command: &[String], libraries: &[&Path]) -> Command {
    let mut cmd = Command::new(resolved);
    cmd.arg0(&command[0]).args(&command[1..]);
    match preload_value(libraries) {
        Some(v) => cmd.env("LD_PRELOAD", v),
        None => cmd.env_remove("LD_PRELOAD"),
    };
    cmd
}

/// What a run preloads before the user's own LD_PRELOAD: the runtime (`None`: none), then the
/// fallback allocator.
fn runtime_libraries<'a>(runtime: Option<&'a Path>, options: &'a RuntimeOptions) -> Vec<&'a Path> {
    runtime.into_iter().chain(options.fallback.as_deref()).collect()
}

/// The run launcher (`launcher/heaplab_run.c`), compiled by build.rs.
const RUN_LAUNCHER: &[u8] = include_bytes!(env!("HEAPLAB_RUN_LAUNCHER"));

/// The run launcher, installed in heaplab's cache: a program it starts reports its own peak RSS
/// to wait4, where one started from heaplab reports at least heaplab's (see the launcher's
/// comment for the protocol).
pub fn run_launcher() -> std::io::Result<PathBuf> {
    crate::preload::install_cached("heaplab_run", "", RUN_LAUNCHER, true)
}

/// A command that starts `program` (as `arg0`, with `args`) through the run launcher, with
/// `preload` as the program's LD_PRELOAD (empty: none; the launcher itself runs without one),
/// and the read end of the pipe the launcher reports on ([`launcher_end`] reads it). The write
/// end is close-on-exec but for the launcher's own exec (the command clears the flag between
/// fork and exec), so programs other threads start meanwhile never hold it, and the launcher
/// finds it by the number `HEAPLAB_RUN_REPORT_FD` gives: no descriptor of the caller's is
/// replaced. Drop the write end once the command has started.
pub fn launcher_command(program: &Path, arg0: &str, args: &[String], preload: &std::ffi::OsStr) -> std::io::Result<(Command, std::os::fd::OwnedFd, std::os::fd::OwnedFd)> {
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    let launcher = run_launcher()?;
    let mut fds = [0; 2];
    // SAFETY: pipe2 fills two descriptors we then own.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: fresh descriptors from pipe2.
    let (rd, wr) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    let w = wr.as_raw_fd();
    let mut cmd = Command::new(&launcher);
    cmd.arg(program).arg(arg0).args(args).env_remove("LD_PRELOAD").env("HEAPLAB_RUN_PRELOAD", preload).env("HEAPLAB_RUN_REPORT_FD", w.to_string());
    // SAFETY: only fcntl between fork and exec.
    unsafe {
        cmd.pre_exec(move || if libc::fcntl(w, libc::F_SETFD, 0) < 0 { Err(std::io::Error::last_os_error()) } else { Ok(()) });
    }
    Ok((cmd, rd, wr))
}

/// How a program started by the run launcher ended, from the launcher's report.
#[derive(Debug)]
pub enum LauncherEnd {
    /// It ran and was reaped.
    Done(LauncherDone),
    /// It could not be started.
    NotStarted(std::io::Error),
    /// No end was reported: the launcher was killed first.
    Unfinished,
}

/// A program's run as the launcher measured it.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct LauncherDone {
    /// Its exit code, or minus the signal that killed it.
    pub status: i32,
    /// Its peak RSS (wait4's ru_maxrss), bytes.
    pub max_rss_bytes: u64,
    /// User CPU time, seconds.
    pub user_seconds: f64,
    /// System CPU time, seconds.
    pub sys_seconds: f64,
    /// From the launcher's fork of it to its reaping.
    pub wall: Duration,
}

impl LauncherDone {
    /// The end as a wait status.
    pub fn exit_status(&self) -> ExitStatus {
        use std::os::unix::process::ExitStatusExt;
        ExitStatus::from_raw(if self.status >= 0 { (self.status & 0xff) << 8 } else { -self.status & 0x7f })
    }
}

/// Reads the launcher's report (all its lines); an error names a malformed end line.
pub fn launcher_end(report: &str) -> Result<LauncherEnd, String> {
    if let Some(e) = report.lines().find_map(|l| l.strip_prefix("exec ")) {
        return Ok(LauncherEnd::NotStarted(std::io::Error::from_raw_os_error(e.trim().parse().unwrap_or(0))));
    }
    let Some(done) = report.lines().find_map(|l| l.strip_prefix("done ")) else { return Ok(LauncherEnd::Unfinished) };
    let v: Vec<i64> = done.split_whitespace().filter_map(|x| x.parse().ok()).collect();
    if v.len() != 5 {
        return Err(format!("launcher report '{done}'"));
    }
    Ok(LauncherEnd::Done(LauncherDone {
        status: v[0] as i32,
        max_rss_bytes: v[1].max(0) as u64 * 1024,
        user_seconds: v[2] as f64 / 1e6,
        sys_seconds: v[3] as f64 / 1e6,
        wall: Duration::from_nanos(v[4].max(0) as u64),
    }))
}

/// Runs `command` with the fallback allocator alone preloaded (no runtime: it would have
/// nothing to apply) and the runtime's `settings_var` removed, as [`RuntimeRun::run`] runs it
/// otherwise: how it ended, its wall time and its peak RSS (see [`run_launched`]).
pub fn run_alone(options: &RuntimeOptions, settings_var: &str, command: &[String], setup: impl FnOnce(&mut Command) -> &mut Command) -> Result<(ExitStatus, Duration, u64), LaunchError> {
    run_launched(command, &runtime_libraries(None, options), |cmd| setup(cmd.env_remove(settings_var)))
}

/// Runs `command` with `libraries`, then the user's own LD_PRELOAD, preloaded, started through
/// the run launcher ([`launcher_command`]), which passes on the signals heaplab passes on and
/// gets SIGTERM, passed on too, if heaplab dies: how it ended, its wall time (from the
/// launcher's fork of it to its end) and its peak RSS, its own (wait4's: its largest image, or
/// a child it waited for, if larger; Linux would count heaplab's memory in the peak of a
/// program started from heaplab). The program's standard streams and other descriptors are
/// heaplab's; `setup` adjusts the command (streams, directory, environment).
pub fn run_launched(command: &[String], libraries: &[&Path], setup: impl FnOnce(&mut Command) -> &mut Command) -> Result<(ExitStatus, Duration, u64), LaunchError> {
    use std::io::Read;
    let program = &command[0];
    let resolved = find_program(program).ok_or_else(|| LaunchError::NotFound(program.clone()))?;
    let preload = preload_value(libraries).unwrap_or_default();
    let (mut cmd, rd, wr) = launcher_command(&resolved, program, &command[1..], &preload).map_err(|e| LaunchError::Start("the run launcher".into(), e))?;
    cmd.env("HEAPLAB_RUN_FORWARD", "1");
    setup(&mut cmd);
    let supervised = Supervised::spawn(&mut cmd, program);
    drop(wr);
    let (status, wall, _) = supervised.and_then(|s| s.wait(program))?;
    let mut report = String::new();
    let _ = std::fs::File::from(rd).read_to_string(&mut report);
    match launcher_end(&report) {
        Ok(LauncherEnd::Done(d)) => Ok((d.exit_status(), d.wall, d.max_rss_bytes)),
        Ok(LauncherEnd::NotStarted(e)) => Err(LaunchError::Start(program.clone(), e)),
        // The launcher itself ended before its report (killed): that is how the run ended.
        Ok(LauncherEnd::Unfinished) => Ok((status, wall, 0)),
        Err(m) => Err(LaunchError::Start(program.clone(), std::io::Error::new(std::io::ErrorKind::InvalidData, m))),
    }
}

impl RuntimeRun<'_> {
    /// Runs `command` (its standard streams and exit status untouched, the [`Supervised`]
    /// discipline) with the library preloaded, using `scratch` for the claim and the report.
    /// `setup` adjusts the command (standard streams, working directory, environment).
    pub fn run(&self, command: &[String], scratch: &Scratch, setup: impl FnOnce(&mut Command) -> &mut Command) -> Result<RuntimeRan, LaunchError> {
        let program = &command[0];
        let claim = scratch.path().join("claim");
        let report_file = scratch.path().join("report.json");
        std::fs::write(&claim, b"").map_err(|e| LaunchError::Setup(format!("{}: {e}", claim.display())))?;
        // Made empty here, so that the runtime, writing it as the program ends, opens a file
        // instead of creating one (about 60 µs of the program's time on ext4).
        std::fs::write(&report_file, b"").map_err(|e| LaunchError::Setup(format!("{}: {e}", report_file.display())))?;
        let mut settings = self.settings.clone();
        settings.push(("report", report_file.display().to_string()));
        settings.push(("claim", claim.display().to_string()));
        if let Some((_, v)) = settings.iter().find(|(_, v)| v.contains('\n')) {
            return Err(LaunchError::Output(format!("{v:?}: a path handed to the runtime cannot contain a newline")));
        }
        let settings: Vec<String> = settings.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let settings = settings.join("\n");
        let (status, wall, peak_rss_bytes) = run_launched(command, &runtime_libraries(Some(self.library), self.options), |cmd| setup(cmd.env(self.settings_var, &settings)))?;
        let report = match std::fs::read_to_string(&report_file) {
            Ok(text) if !text.is_empty() => Ok(text),
            _ if claim.exists() => Err(format!("{program} never loaded the runtime library: statically linked and setuid programs ignore LD_PRELOAD")),
            _ => Err(format!("{program} {} before the runtime could write its report", describe_status(&status))),
        };
        Ok(RuntimeRan { status, wall, peak_rss_bytes, report })
    }

    /// [`RuntimeRun::run`], then the runtime's report read as `R` and completed with the
    /// launcher's fields (wall time, exit status, command, the fallback's name).
    pub fn run_reported<R: RuntimeReport>(&self, command: &[String], scratch: &Scratch, setup: impl FnOnce(&mut Command) -> &mut Command) -> Result<RuntimeFinished<R>, RuntimeError> {
        use std::os::unix::process::ExitStatusExt;
        let ran = self.run(command, scratch, setup).map_err(RuntimeError::Launch)?;
        let status = ran.status;
        let (report, no_report) = match ran.report {
            Ok(text) => {
                let mut r = R::parse_runtime(&scratch.path().join("report.json").display().to_string(), &text).map_err(RuntimeError::Setup)?;
                let c = r.common_mut();
                c.wall_seconds = ran.wall.as_secs_f64();
                c.peak_rss_bytes = ran.peak_rss_bytes;
                c.exit_code = status.code();
                c.signal = status.signal();
                c.command = command.to_vec();
                c.fallback_allocator = if self.options.fallback_name.is_empty() { "glibc".into() } else { self.options.fallback_name.clone() };
                (Some(r), None)
            }
            Err(why) => (None, Some(why)),
        };
        Ok(RuntimeFinished { status, report, no_report })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn find_binary_skips_scripts_and_missing_names() {
        let dir = std::env::temp_dir().join(format!("heaplab-launch-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let shim = dir.join("shim");
        std::fs::write(&shim, "#!/bin/sh\nexec true\n").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&shim, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert!(!is_elf_executable(&shim));
        assert!(find_binary("heaplab-bench-no-such-program").is_none());
        // /bin/sh itself is an ELF binary (through its symlinks) on any Linux this runs on.
        if let Ok(sh) = std::fs::canonicalize("/bin/sh") {
            assert!(is_elf_executable(&sh));
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_scratch_directory_is_made_and_removed() {
        let s = Scratch::new("heaplab-scratch-test").unwrap();
        assert!(s.path().is_dir());
        let p = s.path().to_path_buf();
        drop(s);
        assert!(!p.exists());
    }

    #[test]
    fn the_launchers_report_is_read() {
        match launcher_end("pid 7\ndone -15 2048 1500000 250000 3000000000\n").unwrap() {
            LauncherEnd::Done(d) => {
                assert_eq!((d.status, d.max_rss_bytes, d.wall), (-15, 2 << 20, Duration::from_secs(3)));
                assert_eq!((d.user_seconds, d.sys_seconds), (1.5, 0.25));
                use std::os::unix::process::ExitStatusExt;
                assert_eq!(d.exit_status().signal(), Some(15));
            }
            e => panic!("{e:?}"),
        }
        assert!(matches!(launcher_end("exec 2\n").unwrap(), LauncherEnd::NotStarted(e) if e.raw_os_error() == Some(2)));
        assert!(matches!(launcher_end("pid 7\n").unwrap(), LauncherEnd::Unfinished));
        assert_eq!(launcher_end("done 0 1\n").unwrap_err(), "launcher report '0 1'");
    }

    /// A program run alone reports its own peak RSS, not the memory of the process that started
    /// it (here this test, holding 256 MiB), and its exit status as it ended.
    #[test]
    fn a_program_run_alone_reports_its_own_peak_and_status() {
        let mut held = vec![0u8; 256 << 20];
        for i in (0..held.len()).step_by(4096) {
            held[i] = 1;
        }
        let opts = RuntimeOptions::default();
        let sh = |script: &str| vec!["sh".to_string(), "-c".to_string(), script.to_string()];
        let (status, wall, peak) = run_alone(&opts, "HEAPLAB_TEST_SETTINGS", &sh("exit 7"), |c| c).unwrap();
        assert_eq!(status.code(), Some(7));
        assert!(peak > 0 && peak < 64 << 20, "peak {peak} B: the program's, not this test's 256 MiB");
        assert!(wall > Duration::ZERO && wall < Duration::from_secs(30));
        let (status, _, _) = run_alone(&opts, "HEAPLAB_TEST_SETTINGS", &sh("kill -TERM $$"), |c| c).unwrap();
        use std::os::unix::process::ExitStatusExt;
        assert_eq!((status.code(), status.signal()), (None, Some(libc::SIGTERM)));
        // What `setup` gives reaches the program; the launcher's own variables do not.
        let out = std::env::temp_dir().join(format!("heaplab-alone-{}", std::process::id()));
        let file = std::fs::File::create(&out).unwrap();
        let (status, _, _) = run_alone(&opts, "HEAPLAB_TEST_SETTINGS", &sh("echo \"$HEAPLAB_TEST_KEPT ${HEAPLAB_RUN_FORWARD:-none}\""), |c| c.env("HEAPLAB_TEST_KEPT", "kept").stdout(file)).unwrap();
        assert_eq!(status.code(), Some(0));
        std::hint::black_box(&held);
        assert_eq!(std::fs::read_to_string(&out).unwrap(), "kept none\n");
        std::fs::remove_file(&out).unwrap();
        let e = run_alone(&opts, "HEAPLAB_TEST_SETTINGS", &["heaplab-no-such-program".to_string()], |c| c).unwrap_err();
        assert!(e.to_string().contains("heaplab-no-such-program"), "{e}");
    }
}
