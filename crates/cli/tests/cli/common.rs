//! What every CLI test needs, in one place: running the `heaplab` binary (arguments, working
//! directory, standard input, environment, a deadline, or a bash line), fresh scratch
//! directories under the build directory, the C test programs of `tests/programs/` compiled once
//! per run, the check that a required tool is installed, and reading JSON output.
//!
//! Every run removes `LD_PRELOAD` (a test that wants one sets it) and gets a closed standard
//! input unless one is given, so no run depends on the terminal the tests were started from.

use serde_json::Value;
use std::collections::HashSet;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// The binary under test.
pub const BIN: &str = env!("CARGO_BIN_EXE_heaplab");

/// A small valid instance: 4 buffers, max load 14, one component.
pub const GOOD: &str = "id,lower,upper,size\n0,0,10,4\n1,5,15,8\n2,10,20,4\n3,0,20,2\n";

/// One finished run of heaplab (or of a bash line around it).
pub struct Run {
    /// The exit code; -1 when a signal ended the process.
    pub code: i32,
    /// Standard output, lossily decoded.
    pub stdout: String,
    /// Standard error, lossily decoded.
    pub stderr: String,
}

/// A run of heaplab being set up; [`Heaplab::run`] starts it and waits for it.
pub struct Heaplab {
    cmd: Command,
    /// How the run is named in failure messages.
    shown: String,
    stdin: Option<Vec<u8>>,
    deadline: Option<Duration>,
}

impl Heaplab {
    /// heaplab with `args`, in the test process's working directory.
    pub fn new(args: &[&str]) -> Self {
        let mut cmd = Command::new(BIN);
        cmd.args(args).env_remove("LD_PRELOAD");
        Heaplab { cmd, shown: format!("heaplab {args:?}"), stdin: None, deadline: None }
    }

    /// A bash command line (for `<(…)`, pipes and redirections), with `$HEAPLAB` naming the binary.
    pub fn shell(line: &str) -> Self {
        let mut cmd = Command::new("bash");
        cmd.arg("-c").arg(line).env("HEAPLAB", BIN).env_remove("LD_PRELOAD");
        Heaplab { cmd, shown: format!("bash -c {line:?}"), stdin: None, deadline: None }
    }

    /// Runs in `dir`.
    pub fn dir(mut self, dir: &Path) -> Self {
        self.cmd.current_dir(dir);
        self
    }

    /// Feeds `bytes` to standard input (a pipe).
    pub fn stdin(mut self, bytes: impl Into<Vec<u8>>) -> Self {
        self.stdin = Some(bytes.into());
        self
    }

    /// Sets an environment variable for this run only (the test process's own stays as it is:
    /// tests share the process).
    pub fn env(mut self, key: &str, value: impl AsRef<OsStr>) -> Self {
        self.cmd.env(key, value);
        self
    }

    /// Sets several environment variables for this run only; see [`Heaplab::env`].
    pub fn envs(mut self, vars: &[(&str, &str)]) -> Self {
        self.cmd.envs(vars.iter().copied());
        self
    }

    /// Fails the test, killing the run, if it has not ended after `secs` seconds: a hang fails
    /// instead of hanging the suite.
    pub fn within(mut self, secs: u64) -> Self {
        self.deadline = Some(Duration::from_secs(secs));
        self
    }

    /// Starts the run and waits for it.
    pub fn run(mut self) -> Run {
        self.cmd.stdin(if self.stdin.is_some() { Stdio::piped() } else { Stdio::null() });
        self.cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut child = self.cmd.spawn().unwrap_or_else(|e| panic!("cannot start {}: {e}", self.shown));
        // Fed from a thread: a program that writes before it has read everything cannot block on
        // a full pipe while we block on its input.
        let feeder = self.stdin.take().map(|bytes| {
            let mut pipe = child.stdin.take().expect("piped stdin");
            std::thread::spawn(move || std::io::Write::write_all(&mut pipe, &bytes))
        });
        let out = match self.deadline {
            None => child.wait_with_output().expect("wait for heaplab"),
            Some(limit) => {
                let so = drain(child.stdout.take().map(|p| Box::new(p) as _));
                let se = drain(child.stderr.take().map(|p| Box::new(p) as _));
                let t0 = Instant::now();
                let status = loop {
                    if let Some(s) = child.try_wait().unwrap() {
                        break s;
                    }
                    if t0.elapsed() >= limit {
                        let _ = child.kill();
                        let _ = child.wait();
                        panic!("{} still running after {} s: it hangs", self.shown, limit.as_secs());
                    }
                    std::thread::sleep(Duration::from_millis(5));
                };
                std::process::Output { status, stdout: so.join().unwrap(), stderr: se.join().unwrap() }
            }
        };
        if let Some(f) = feeder {
            f.join().unwrap().unwrap_or_else(|e| panic!("{}: writing its standard input: {e}", self.shown));
        }
        Run {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }
}

/// Reads a child's pipe to its end on a thread of its own, so a chatty run cannot stall on a
/// full pipe while it is polled.
pub fn drain(p: Option<Box<dyn std::io::Read + Send>>) -> std::thread::JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut v = Vec::new();
        if let Some(mut p) = p {
            let _ = p.read_to_end(&mut v);
        }
        v
    })
}

/// heaplab with `args` in the test process's working directory.
pub fn heaplab(args: &[&str]) -> Run {
    Heaplab::new(args).run()
}

/// heaplab with `args` in `dir`.
pub fn heaplab_in(dir: &Path, args: &[&str]) -> Run {
    Heaplab::new(args).dir(dir).run()
}

/// heaplab in `dir` with a deadline of `secs`; `shell` runs `args` joined by spaces as a bash
/// line instead (for `<(…)`), with `$HEAPLAB` naming the binary.
pub fn heaplab_within(dir: &Path, secs: u64, args: &[&str], shell: bool) -> Run {
    let h = if shell { Heaplab::shell(&args.join(" ")) } else { Heaplab::new(args) };
    h.dir(dir).within(secs).run()
}

/// Runs heaplab in `dir`, requires exit 0 and returns standard output read as JSON.
pub fn ok_json(dir: &Path, args: &[&str]) -> Value {
    let r = heaplab_in(dir, args);
    assert_eq!(r.code, 0, "heaplab {args:?}: {}", r.stderr);
    json(&r.stdout, &format!("heaplab {args:?}"))
}

/// `text` read as JSON; `what` names its source when it is not.
pub fn json(text: &str, what: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("{what}: not JSON ({e}): {text}"))
}

/// Writes `text` to `dir/name` and returns the path.
pub fn write(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.to_string_lossy().into_owned()
}

/// A fresh scratch directory for the calling test: `scratch!("name")`. See [`scratch_dir`].
macro_rules! scratch {
    ($name:expr) => {
        $crate::common::scratch_dir(module_path!(), $name)
    };
}

/// A fresh directory `AREA-NAME` under the build's temporary directory, where AREA is the test
/// module (the last part of `module`): the same name in two modules gives two directories.
/// Emptied now and left for the next run, so nothing piles up in /tmp and a failure's files can
/// be looked at. A name used twice in one run fails the test: two tests would share files.
pub fn scratch_dir(module: &str, name: &str) -> PathBuf {
    static TAKEN: Mutex<Option<HashSet<String>>> = Mutex::new(None);
    let area = module.rsplit("::").next().unwrap_or(module);
    let full = format!("{area}-{name}");
    let fresh = TAKEN.lock().unwrap().get_or_insert_with(HashSet::new).insert(full.clone());
    assert!(fresh, "scratch directory {full} is used by two tests: give one another name");
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join(full);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The test programs (`tests/programs/*.c`) compiled once per run of this binary, or why not.
fn programs() -> &'static Result<PathBuf, String> {
    static DIR: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = scratch_dir("common", "programs");
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/programs");
        let builds: [(&str, &[&str]); 4] = [
            ("threads", &["-O2", "-pthread"]),
            ("misbehave", &["-O0"]),
            ("pages", &["-O0"]),
            ("early.so", &["-O0", "-shared", "-fPIC"]),
        ];
        for (name, flags) in builds {
            let c = format!("{}.c", name.trim_end_matches(".so"));
            let st = Command::new("cc").args(flags).arg("-o").arg(dir.join(name)).arg(src.join(&c)).status();
            if !st.is_ok_and(|s| s.success()) {
                return Err(format!("cannot compile {c}: a C compiler (cc) is required"));
            }
        }
        Ok(dir)
    })
}

/// The path of a compiled test program (`threads`, `misbehave`, `pages`, `early.so`); fails
/// the test when they cannot be compiled.
pub fn prog(name: &str) -> String {
    match programs() {
        Ok(dir) => dir.join(name).to_string_lossy().into_owned(),
        Err(why) => panic!("{why}"),
    }
}

/// Like [`prog`], for tests that can do without: `None` when the programs cannot be compiled.
pub fn try_prog(name: &str) -> Option<String> {
    programs().as_ref().ok().map(|dir| dir.join(name).to_string_lossy().into_owned())
}

/// Fails the test unless `tool` (a command on PATH, or an absolute path) is installed.
pub fn need(tool: &str) {
    if tool.starts_with('/') {
        assert!(Path::new(tool).is_file(), "{tool} is not installed: `make test` installs it (see Makefile / .ci/run)");
        return;
    }
    let found = std::env::var_os("PATH").is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(tool).is_file()));
    assert!(found, "{tool} is not installed: `make test` installs it (see Makefile / .ci/run)");
}

/// A real program of the runtime tests: its name, command line and environment.
pub type RealProgram = (&'static str, &'static [&'static str], &'static [(&'static str, &'static str)]);

/// The real Debian programs the runtime tests run (sqlite3, jq, xz, python3 with
/// PYTHONMALLOC=malloc, so that its objects come from malloc), with their inputs written to
/// `dir` (the commands name them relative to it); fails the test when one is not installed.
pub fn real_programs(dir: &Path) -> [RealProgram; 4] {
    for t in ["sqlite3", "jq", "xz", "python3"] {
        need(t);
    }
    std::fs::write(
        dir.join("script.sql"),
        "create table t(a, b);\nwith recursive c(x) as (select 1 union all select x + 1 from c where x < 3000)\n\
         insert into t select x, hex(x * 7919) from c;\ncreate index i on t(b);\nselect count(*), sum(length(b)), max(b) from t;\n",
    )
    .unwrap();
    let mut json = String::new();
    for i in 0..2000 {
        json += &format!("{{\"id\":{i},\"name\":\"user{i}\",\"tags\":[\"t{}\",\"t{}\"],\"score\":{}.5}}\n", i % 17, i % 5, i % 1000);
    }
    std::fs::write(dir.join("records.json"), json).unwrap();
    std::fs::write(dir.join("text.txt"), (0..20000).map(|i| format!("{} line {i}\n", i * 7919 % 100_003)).collect::<String>()).unwrap();
    std::fs::write(dir.join("prog.py"), "d = {}\nfor i in range(20000):\n    d[str(i)] = [i] * (i % 7)\nprint(len(d), sum(len(v) for v in d.values()))\n").unwrap();
    [
        ("sqlite3", &["sqlite3", ":memory:", ".read script.sql"], &[]),
        ("jq", &["jq", "-c", "select(.score > 500) | {id, t: .tags[0]}", "records.json"], &[]),
        ("xz", &["xz", "-c", "-6", "text.txt"], &[]),
        ("python3", &["python3", "prog.py"], &[("PYTHONMALLOC", "malloc")]),
    ]
}
