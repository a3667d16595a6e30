//! Driving pyperformance for `heaplab compare --suite pyperformance`: one `pyperformance run`
//! per configuration and pass (timing, then `--track-memory`), the configuration's allocator
//! preloaded and its settings (e.g. `PYTHONMALLOC=malloc`) passed to pyperf's worker
//! processes with `--inherit-environ`. Each run writes a pyperf JSON file; the analysis reads
//! them as `--pyperf` does ([`crate::pyperf::read`]). Also: finding pyperformance, checking
//! the Python under test and describing its build (PGO/LTO "release" or "standard").

use crate::pyperf::Input;
use crate::runner::ConfigSpec;
use crate::DecideError;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The benchmarks of the thesis' Table 2.2 under their pyperformance names ("json" is
/// pyperformance's `json_dumps` and `json_loads`, "dulwich" its `dulwich_log`).
pub const TABLE_2_2: [&str; 16] = [
    "chameleon",
    "django_template",
    "dulwich_log",
    "fannkuch",
    "float",
    "genshi",
    "html5lib",
    "json_dumps",
    "json_loads",
    "pathlib",
    "pickle",
    "regex_compile",
    "richards",
    "spectral_norm",
    "telco",
    "tornado_http",
];

/// How to install pyperformance, for the error when it is missing.
pub const INSTALL_HINT: &str =
    "install it with `make bench-deps` (a venv at .venv-bench/ with pyperformance and pyperf from PyPI) or `python3 -m pip install pyperformance pyperf`, or give --pyperformance PATH";

/// One pass over the benchmarks: what pyperf measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pass {
    /// Wall time per loop (pyperf's default; metric `time`).
    Time,
    /// Peak private memory of the worker (`--track-memory`; metric `memory`).
    Memory,
}

impl Pass {
    /// The metric name the pass's values get (as [`crate::pyperf::read`] names them).
    pub fn metric(self) -> &'static str {
        match self {
            Pass::Time => "time",
            Pass::Memory => "memory",
        }
    }

    /// Parses `--metrics` for this suite: `time` and/or `memory`.
    pub fn parse_list(s: &str) -> Result<Vec<Pass>, DecideError> {
        let mut out = Vec::new();
        for m in s.split(',').map(str::trim).filter(|m| !m.is_empty()) {
            let p = match m {
                "time" => Pass::Time,
                "memory" => Pass::Memory,
                _ => return Err(DecideError::Input(format!("--metrics: '{m}' is not measured by pyperformance (time, memory)"))),
            };
            if !out.contains(&p) {
                out.push(p);
            }
        }
        if out.is_empty() {
            return Err(DecideError::Input("--metrics: no metric given (time, memory)".into()));
        }
        Ok(out)
    }
}

/// pyperf's run length presets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// pyperf's default (20 worker processes × 3 values).
    Default,
    /// `--fast` (10 processes × 2 values).
    Fast,
    /// `--rigorous` (40 processes × 3 values).
    Rigorous,
}

/// One `pyperformance run` to start.
#[derive(Clone, Debug, PartialEq)]
pub struct Invocation {
    /// The pyperformance executable.
    pub program: PathBuf,
    /// Its arguments.
    pub args: Vec<String>,
    /// Environment set for it (and, through `--inherit-environ`, for pyperf's workers).
    pub env: Vec<(String, String)>,
    /// Environment removed (variables another configuration sets, so none leaks in).
    pub env_remove: Vec<String>,
    /// Where it runs: pyperformance keeps its per-Python venvs under `venv/` here.
    pub cwd: PathBuf,
    /// The pyperf JSON file it writes.
    pub output: PathBuf,
}

impl Invocation {
    /// The command line as a shell would read it (for logs and provenance).
    pub fn shown(&self) -> String {
        let mut parts: Vec<String> = self.env.iter().map(|(k, v)| format!("{k}={}", crate::suites::sh_quote(v))).collect();
        parts.push(crate::suites::sh_quote(&self.program.to_string_lossy()));
        parts.extend(self.args.iter().map(|a| crate::suites::sh_quote(a)));
        parts.join(" ")
    }
}

/// The study: pyperformance × configurations × passes for one Python.
#[derive(Clone, Debug)]
pub struct Study {
    /// The pyperformance executable.
    pub pyperformance: PathBuf,
    /// The Python under test.
    pub python: PathBuf,
    /// Benchmark names (pyperformance's).
    pub benchmarks: Vec<String>,
    /// Configurations, the reference first.
    pub configs: Vec<ConfigSpec>,
    /// Passes, in order.
    pub passes: Vec<Pass>,
    /// pyperf's preset.
    pub mode: Mode,
    /// pyperf's `--min-time` (seconds per value), when given.
    pub min_time: Option<f64>,
    /// pyperformance's working directory (its venvs are created and reused there).
    pub workdir: PathBuf,
    /// Where the pyperf files go (`CONFIG.PASS.json.gz`).
    pub rundir: PathBuf,
}

impl Study {
    /// The environment variable names any configuration sets, `LD_PRELOAD` first: passed to
    /// pyperf's workers by `--inherit-environ`, removed where a configuration does not set them.
    pub fn inherited(&self) -> Vec<String> {
        let mut names = vec!["LD_PRELOAD".to_string()];
        for c in &self.configs {
            for (k, _) in &c.env {
                if !names.contains(k) {
                    names.push(k.clone());
                }
            }
        }
        names
    }

    /// The pyperf file of `config` and `pass`.
    pub fn output(&self, config: &ConfigSpec, pass: Pass) -> PathBuf {
        self.rundir.join(format!("{}.{}.json.gz", config.name, pass.metric()))
    }

    /// The `pyperformance run` for `config` and `pass`.
    pub fn invocation(&self, config: &ConfigSpec, pass: Pass) -> Invocation {
        let output = self.output(config, pass);
        let mut args = vec![
            "run".to_string(),
            "--python".into(),
            self.python.to_string_lossy().into_owned(),
            "--benchmarks".into(),
            self.benchmarks.join(","),
            "--output".into(),
            output.to_string_lossy().into_owned(),
            "--inherit-environ".into(),
            self.inherited().join(","),
        ];
        match self.mode {
            Mode::Default => {}
            Mode::Fast => args.push("--fast".into()),
            Mode::Rigorous => args.push("--rigorous".into()),
        }
        if let Some(t) = self.min_time {
            args.push(format!("--min-time={t}"));
        }
        if pass == Pass::Memory {
            args.push("--track-memory".into());
        }
        let mut env = Vec::new();
        let preload = config.allocator.preload();
        if !preload.is_empty() {
            env.push(("LD_PRELOAD".to_string(), preload));
        }
        env.extend(config.env.iter().cloned());
        let env_remove = self.inherited().into_iter().filter(|k| !env.iter().any(|(e, _)| e == k)).collect();
        Invocation { program: self.pyperformance.clone(), args, env, env_remove, cwd: self.workdir.clone(), output }
    }

    /// The runs in order: passes outer, configurations inner (all configurations of a pass
    /// close together in time).
    pub fn invocations(&self) -> Vec<(ConfigSpec, Pass, Invocation)> {
        let mut out = Vec::new();
        for &p in &self.passes {
            for c in &self.configs {
                out.push((c.clone(), p, self.invocation(c, p)));
            }
        }
        out
    }

    /// The pyperf files as `--pyperf` inputs, the reference's first.
    pub fn inputs(&self) -> Vec<Input> {
        let mut out = Vec::new();
        for c in &self.configs {
            for &p in &self.passes {
                out.push(Input { configuration: c.name.clone(), path: self.output(c, p).to_string_lossy().into_owned() });
            }
        }
        out
    }
}

/// Finds pyperformance: `explicit` when given (must exist), else the first of `candidates`
/// that exists, else `pyperformance` on PATH. Missing: an error with the install hint.
pub fn find(explicit: Option<&Path>, candidates: &[PathBuf]) -> Result<PathBuf, DecideError> {
    if let Some(p) = explicit {
        return if p.is_file() { Ok(p.to_path_buf()) } else { Err(DecideError::Input(format!("--pyperformance {}: no such file; {INSTALL_HINT}", p.display()))) };
    }
    if let Some(p) = candidates.iter().find(|p| p.is_file()) {
        return Ok(p.clone());
    }
    let on_path = std::env::var_os("PATH").into_iter().flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>()).map(|d| d.join("pyperformance")).find(|p| p.is_file());
    on_path.ok_or_else(|| DecideError::Input(format!("pyperformance not found (looked in {} and on PATH): {INSTALL_HINT}", candidates.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", "))))
}

/// What heaplab records about the Python under test.
#[derive(Clone, Debug, PartialEq)]
pub struct PythonBuild {
    /// The path given.
    pub path: PathBuf,
    /// `sys.version`, one line.
    pub version: String,
    /// `sysconfig`'s `CONFIG_ARGS` (configure's arguments).
    pub config_args: String,
    /// `sysconfig`'s `PY_CFLAGS`.
    pub cflags: String,
    /// Whether configure was given `--enable-optimizations` (PGO).
    pub pgo: bool,
    /// Whether configure was given `--with-lto`.
    pub lto: bool,
    /// Whether it comes from a Debian package (whose rules build with PGO and LTO outside
    /// configure, so sysconfig does not show them).
    pub debian: bool,
}

impl PythonBuild {
    /// One line: the version and what the build is.
    pub fn describe(&self) -> String {
        let kind = if self.pgo || self.lto {
            format!("release build (configure:{}{})", if self.pgo { " --enable-optimizations" } else { "" }, if self.lto { " --with-lto" } else { "" })
        } else if self.debian {
            "Debian package: configure shows neither --enable-optimizations nor --with-lto, but Debian's rules build it with PGO and LTO (a release build)".to_string()
        } else {
            "standard build (configure without --enable-optimizations or --with-lto)".to_string()
        };
        format!("{} {}: {kind}", self.path.display(), self.version)
    }
}

/// Runs `python` to check it is a working Python and to read how it was built.
pub fn inspect_python(python: &Path) -> Result<PythonBuild, DecideError> {
    let script = "import sys, sysconfig, os\n\
                  v = sysconfig.get_config_var\n\
                  print(sys.version.replace('\\n', ' '))\n\
                  print(v('CONFIG_ARGS') or '')\n\
                  print(v('PY_CFLAGS') or '')\n\
                  print(os.path.exists('/usr/share/doc/python%d.%d/changelog.Debian.gz' % sys.version_info[:2]) and sys.prefix == '/usr')\n";
    let out = Command::new(python).arg("-c").arg(script).output().map_err(|e| DecideError::Input(format!("--python {}: cannot run it: {e}", python.display())))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        return Err(DecideError::Input(format!("--python {}: not a working Python ({}): {}", python.display(), out.status, err.trim().lines().last().unwrap_or(""))));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = text.lines().collect();
    if lines.len() < 4 {
        return Err(DecideError::Input(format!("--python {}: does not answer like CPython", python.display())));
    }
    let config_args = lines[1].to_string();
    Ok(PythonBuild {
        path: python.to_path_buf(),
        version: lines[0].to_string(),
        pgo: config_args.contains("--enable-optimizations"),
        lto: config_args.contains("--with-lto"),
        config_args,
        cflags: lines[2].trim().to_string(),
        debian: lines[3] == "True",
    })
}

/// Checks that `config` takes effect in `python`: the preloaded library is mapped and the
/// settings are in the environment the interpreter sees.
pub fn check_config(python: &Path, config: &ConfigSpec) -> Result<(), DecideError> {
    let mut cmd = Command::new(python);
    cmd.arg("-c").arg("import os, sys\nprint(open('/proc/self/maps').read())\nprint('ENV', repr(dict(os.environ)))");
    cmd.env_remove("LD_PRELOAD").env_remove("PYTHONMALLOC");
    let preload = config.allocator.preload();
    if !preload.is_empty() {
        cmd.env("LD_PRELOAD", &preload);
    }
    for (k, v) in &config.env {
        cmd.env(k, v);
    }
    let out = cmd.output().map_err(|e| DecideError::Input(format!("--python {}: cannot run it: {e}", python.display())))?;
    let text = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        return Err(DecideError::Input(format!("configuration {}: {} fails under it: {}", config.name, python.display(), String::from_utf8_lossy(&out.stderr).trim())));
    }
    if let Some(lib) = &config.allocator.library {
        // /proc/self/maps names the file the symlink (libmimalloc.so.2 -> .so.2.0) points to.
        let real = std::fs::canonicalize(lib).unwrap_or_else(|_| lib.clone());
        if !text.lines().any(|l| l.ends_with(&*real.to_string_lossy()) || l.ends_with(&*lib.to_string_lossy())) {
            return Err(DecideError::Input(format!("configuration {}: {} is not mapped into {} under LD_PRELOAD", config.name, lib.display(), python.display())));
        }
    }
    Ok(())
}

/// Runs one invocation (replacing an earlier file), failing with the end of its output when
/// pyperformance fails without writing its file. Benchmarks that fail inside a run are left
/// out of the file by pyperformance; the returned note names the run when that happens.
pub fn run(inv: &Invocation) -> Result<Option<String>, DecideError> {
    if let Some(d) = inv.output.parent() {
        std::fs::create_dir_all(d).map_err(|e| DecideError::Input(format!("{}: cannot create: {e}", d.display())))?;
    }
    std::fs::create_dir_all(&inv.cwd).map_err(|e| DecideError::Input(format!("{}: cannot create: {e}", inv.cwd.display())))?;
    let _ = std::fs::remove_file(&inv.output);
    let mut cmd = Command::new(&inv.program);
    cmd.args(&inv.args).current_dir(&inv.cwd).stdin(std::process::Stdio::null());
    for k in &inv.env_remove {
        cmd.env_remove(k);
    }
    for (k, v) in &inv.env {
        cmd.env(k, v);
    }
    let out = cmd.output().map_err(|e| DecideError::Input(format!("{}: cannot start: {e}", inv.program.display())))?;
    let log = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    let tail: Vec<&str> = log.lines().rev().take(15).collect::<Vec<_>>().into_iter().rev().collect();
    if !inv.output.is_file() {
        return Err(DecideError::Input(format!("`{}` failed ({}) without writing {}:\n{}", inv.shown(), out.status, inv.output.display(), tail.join("\n"))));
    }
    Ok((!out.status.success()).then(|| format!("`{}` exited with {} (some benchmarks failed; {})", inv.shown(), out.status, tail.join(" | "))))
}

/// What [`measure`] reports before each pyperformance run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// The run starts now.
    Start,
    /// Its file is already there (`resume`) and is reused.
    Reused,
}

/// Runs the study (every configuration checked first, then every pass × configuration; with
/// `resume`, files already in [`Study::rundir`] are reused) and reads the pyperf files as
/// `--pyperf` reads them. The configurations' descriptions name the allocator, the settings
/// and the file; the provenance records the Python build, pyperformance's version, the
/// benchmarks and every command line. `progress(k, n, config, pass, step)` is called before
/// each run.
pub fn measure(study: &Study, build: &PythonBuild, resume: bool, progress: &mut dyn FnMut(usize, usize, &ConfigSpec, Pass, Step)) -> Result<crate::results::Results, DecideError> {
    for c in &study.configs {
        check_config(&study.python, c)?;
    }
    let runs = study.invocations();
    let mut notes = Vec::new();
    for (k, (c, p, inv)) in runs.iter().enumerate() {
        if resume && inv.output.is_file() {
            progress(k, runs.len(), c, *p, Step::Reused);
            continue;
        }
        progress(k, runs.len(), c, *p, Step::Start);
        if let Some(n) = run(inv)? {
            notes.push(n);
        }
    }
    let mut r = crate::pyperf::read(&study.inputs())?;
    for conf in &mut r.configurations {
        if let Some(c) = study.configs.iter().find(|c| c.name == conf.name) {
            conf.description = format!("{} (pyperf files: {})", c.describe(), study.passes.iter().map(|p| format!("pyperf/{}.{}.json.gz", c.name, p.metric())).collect::<Vec<_>>().join(", "));
        }
    }
    let version = Command::new(&study.pyperformance).arg("--version").output().ok().map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string()).unwrap_or_default();
    r.provenance["suite"] = serde_json::json!({
        "name": "pyperformance",
        "pyperformance": version,
        "python": {"path": build.path, "version": build.version, "config_args": build.config_args, "cflags": build.cflags,
                   "pgo": build.pgo, "lto": build.lto, "debian": build.debian, "build": build.describe()},
        "benchmarks": study.benchmarks,
        "mode": format!("{:?}", study.mode).to_lowercase(),
        "min_time": study.min_time,
        "commands": runs.iter().map(|(_, _, inv)| inv.shown()).collect::<Vec<_>>(),
        "notes": notes,
    });
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn study() -> Option<Study> {
        let configs = crate::suites::config_set("cpython-dsa").ok()?;
        Some(Study {
            pyperformance: "/opt/pp/bin/pyperformance".into(),
            python: "/usr/bin/python3".into(),
            benchmarks: vec!["richards".into(), "float".into()],
            configs,
            passes: vec![Pass::Time, Pass::Memory],
            mode: Mode::Fast,
            min_time: None,
            workdir: "/w".into(),
            rundir: "/r".into(),
        })
    }

    #[test]
    fn command_lines() {
        let Some(s) = study() else { return eprintln!("skipped: jemalloc or mimalloc not installed") };
        assert_eq!(s.inherited(), ["LD_PRELOAD", "PYTHONMALLOC"]);
        let runs = s.invocations();
        assert_eq!(runs.len(), 12);
        let (c, p, inv) = &runs[0];
        assert_eq!((c.name.as_str(), *p), ("pymalloc_glibc", Pass::Time));
        assert_eq!(
            inv.args,
            ["run", "--python", "/usr/bin/python3", "--benchmarks", "richards,float", "--output", "/r/pymalloc_glibc.time.json.gz", "--inherit-environ", "LD_PRELOAD,PYTHONMALLOC", "--fast"]
        );
        assert!(inv.env.is_empty());
        assert_eq!(inv.env_remove, ["LD_PRELOAD", "PYTHONMALLOC"]);
        assert_eq!(inv.cwd, Path::new("/w"));
        assert_eq!(inv.program, Path::new("/opt/pp/bin/pyperformance"));
        // jemalloc without pymalloc, memory pass.
        let (_, _, inv) = runs.iter().find(|(c, p, _)| c.name == "jemalloc" && *p == Pass::Memory).unwrap();
        assert_eq!(inv.args.last().map(String::as_str), Some("--track-memory"));
        assert!(inv.args.contains(&"/r/jemalloc.memory.json.gz".to_string()));
        assert_eq!(inv.env[0].0, "LD_PRELOAD");
        assert!(inv.env[0].1.contains("jemalloc"), "{:?}", inv.env);
        assert_eq!(inv.env[1], ("PYTHONMALLOC".to_string(), "malloc".to_string()));
        assert!(inv.env_remove.is_empty());
        // pymalloc with mimalloc: the preload only, PYTHONMALLOC removed.
        let inv = s.invocation(&s.configs[1], Pass::Time);
        assert_eq!(inv.env.len(), 1);
        assert!(inv.env[0].1.contains("mimalloc"));
        assert_eq!(inv.env_remove, ["PYTHONMALLOC"]);
        assert!(inv.shown().starts_with("LD_PRELOAD="), "{}", inv.shown());
        // glibc without pymalloc: no preload.
        let inv = s.invocation(&s.configs[5], Pass::Time);
        assert_eq!(inv.env, [("PYTHONMALLOC".to_string(), "malloc".to_string())]);
        assert_eq!(inv.env_remove, ["LD_PRELOAD"]);
        // Passes outer: all six timing runs first.
        assert!(runs[..6].iter().all(|(_, p, _)| *p == Pass::Time));
        let inputs = s.inputs();
        assert_eq!(inputs.len(), 12);
        assert_eq!((inputs[0].configuration.as_str(), inputs[1].path.as_str()), ("pymalloc_glibc", "/r/pymalloc_glibc.memory.json.gz"));
    }

    #[test]
    fn presets_and_min_time() {
        let Some(mut s) = study() else { return eprintln!("skipped: jemalloc or mimalloc not installed") };
        s.mode = Mode::Rigorous;
        s.min_time = Some(0.05);
        let a = s.invocation(&s.configs[0], Pass::Time).args;
        assert!(a.contains(&"--rigorous".into()) && a.contains(&"--min-time=0.05".into()) && !a.contains(&"--fast".into()));
        s.mode = Mode::Default;
        let a = s.invocation(&s.configs[0], Pass::Time).args;
        assert!(!a.iter().any(|x| x == "--fast" || x == "--rigorous"));
    }

    #[test]
    fn metrics_of_the_suite() {
        assert_eq!(Pass::parse_list("memory,time,memory").unwrap(), [Pass::Memory, Pass::Time]);
        assert!(Pass::parse_list("rss").unwrap_err().to_string().contains("'rss'"));
        assert!(Pass::parse_list("").is_err());
    }

    #[test]
    fn finding_pyperformance() {
        let e = find(Some(Path::new("/nonexistent/pyperformance")), &[]).unwrap_err().to_string();
        assert!(e.contains("/nonexistent/pyperformance") && e.contains("pip install pyperformance"), "{e}");
        let here = std::env::current_exe().unwrap();
        assert_eq!(find(None, &["/nonexistent/x".into(), here.clone()]).unwrap(), here);
    }

    #[test]
    fn bad_python() {
        let e = inspect_python(Path::new("/nonexistent/python3")).unwrap_err().to_string();
        assert!(e.contains("--python /nonexistent/python3") && e.contains("cannot run"), "{e}");
        let e = inspect_python(Path::new("/bin/false")).unwrap_err().to_string();
        assert!(e.contains("not a working Python"), "{e}");
        if Path::new("/usr/bin/python3").exists() {
            let b = inspect_python(Path::new("/usr/bin/python3")).unwrap();
            assert!(b.version.starts_with("3."), "{b:?}");
            assert!(b.describe().contains("/usr/bin/python3"));
        }
    }
}
