//! The programs the apply and group benches measure, and how they are measured alike: the
//! pointer-chasing workloads of `../shared/workloads/` (built here) and Debian programs on
//! generated inputs, each with a small input to profile and a large one to measure; output
//! fingerprints; cachegrind started without valgrind's launcher; the measuring itself
//! ([`measure`]). Included by those benches with `#[path]`.

use heaplab_decide::runner::Cachegrind;
use heaplab_study::stats::{median, quantile};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[path = "traced.rs"]
#[allow(dead_code)] // the traced group's generators; these benches need the input generators
pub mod traced;
#[path = "host.rs"]
#[allow(dead_code)]
pub mod host;
#[path = "measure.rs"]
pub mod measure;

/// Cachegrind's cache geometry, fixed: this machine reports a bogus L3 (valgrind reads 384 MiB,
/// 1-way), so the simulated caches are stated instead of detected: lscpu's 48 KiB 12-way L1D
/// and 32 KiB 8-way L1I, and its 32 MiB L3 as a 16-way LL. Lines of 64 bytes.
pub const CACHE_GEOMETRY: [&str; 3] = ["--I1=32768,8,64", "--D1=49152,12,64", "--LL=33554432,16,64"];

/// A run is killed after this long; cachegrind runs after this many times as long.
pub const RUN_TIMEOUT: Duration = Duration::from_secs(120);
pub const CACHEGRIND_FACTOR: u32 = 5;


/// The command line the apply and group benches share; `X` holds a bench's own options.
pub struct Opts<X> {
    /// The heaplab binary (absolute: children run in other folders).
    pub heaplab: PathBuf,
    /// Where the results go.
    pub out: PathBuf,
    /// Builds, inputs, profiles, layouts or groups.
    pub work: PathBuf,
    /// The shared folder (workloads/ is read there).
    pub shared: PathBuf,
    /// Runs per workload and configuration, the first discarded.
    pub runs: usize,
    /// These workloads only (empty: all).
    pub only: Vec<String>,
    /// Whether the cachegrind runs are made.
    pub cachegrind: bool,
    /// Development mode: a few workloads, fewer runs.
    pub quick: bool,
    /// The bench's own options.
    pub own: X,
}

/// Ends bench `heaplab-bench-BENCH` on bad usage or a failed step: the message, exit status 2.
pub fn die_as(bench: &str, m: &str) -> ! {
    eprintln!("heaplab-bench-{bench}: {m}");
    std::process::exit(2)
}

impl<X> Opts<X> {
    /// Reads the command line of `heaplab-bench-BENCH` (`usage`: its help; quick mode also by
    /// `HEAPLAB_BENCH_BENCH_QUICK=1`). `own` holds the bench's defaults, and `more` reads an
    /// option that is not a shared one (given a reader of its value), saying whether it knew it.
    pub fn parse(bench: &str, usage: &str, own: X, mut more: impl FnMut(&mut X, &str, &mut dyn FnMut(&str) -> String) -> bool) -> Opts<X> {
        let quick_env = std::env::var(format!("HEAPLAB_BENCH_{}_QUICK", bench.to_uppercase())).is_ok_and(|v| !v.is_empty() && v != "0");
        let mut o = Opts {
            heaplab: PathBuf::from("target/release/heaplab"),
            out: PathBuf::new(),
            work: PathBuf::from(format!("target/bench-{bench}")),
            shared: PathBuf::from("../shared"),
            runs: 0,
            only: Vec::new(),
            cachegrind: true,
            quick: quick_env,
            own,
        };
        let mut args = std::env::args().skip(1);
        while let Some(a) = args.next() {
            let mut val = |name: &str| args.next().unwrap_or_else(|| die_as(bench, &format!("{name} needs a value\n{usage}")));
            match a.as_str() {
                "--heaplab" => o.heaplab = PathBuf::from(val("--heaplab")),
                "--out" => o.out = PathBuf::from(val("--out")),
                "--work" => o.work = PathBuf::from(val("--work")),
                "--shared" => o.shared = PathBuf::from(val("--shared")),
                "--runs" => o.runs = val("--runs").parse().ok().filter(|n| *n >= 3).unwrap_or_else(|| die_as(bench, "--runs: expected a number of at least 3")),
                "--only" => o.only = val("--only").split(',').map(|s| s.trim().to_string()).filter(|s| !s.is_empty()).collect(),
                "--no-cachegrind" => o.cachegrind = false,
                "--quick" => o.quick = true,
                "-h" | "--help" => {
                    println!("{usage}");
                    std::process::exit(0)
                }
                _ => {
                    if !more(&mut o.own, &a, &mut val) {
                        die_as(bench, &format!("unknown option {a}\n{usage}"))
                    }
                }
            }
        }
        if o.runs == 0 {
            o.runs = if o.quick { 4 } else { 11 };
        }
        if o.out.as_os_str().is_empty() {
            o.out = PathBuf::from(if o.quick { format!("out/bench-{bench}-quick") } else { "bench".into() });
        }
        o.heaplab = std::path::absolute(&o.heaplab).unwrap_or_else(|e| die_as(bench, &format!("{}: {e}", o.heaplab.display())));
        o
    }
}

/// One input of a workload.
#[derive(Clone, Debug)]
pub struct Input {
    pub args: Vec<String>,
    pub stdin: Option<PathBuf>,
    /// Where it runs (its folder holds what it reads).
    pub cwd: PathBuf,
    pub what: String,
}

/// A program measured: a small input to profile, a large one to measure.
#[derive(Clone, Debug)]
pub struct Workload {
    pub name: String,
    /// One of the shared pointer-chasing programs (the cache target counts these).
    pub pointer_chasing: bool,
    pub exe: PathBuf,
    pub env: Vec<(String, String)>,
    pub small: Input,
    pub large: Input,
}

/// A path as the results show it: relative to the repository root (the current folder) where
/// it lies below it, so the results do not name the machine's folders.
pub fn shown(p: &Path) -> String {
    let cwd = std::env::current_dir().unwrap_or_default();
    match p.strip_prefix(&cwd) {
        Ok(r) => r.display().to_string(),
        Err(_) => p.display().to_string(),
    }
}

impl Workload {
    /// The command line as recorded in the results (paths shown relative to the repository).
    pub fn command(&self, input: &Input) -> String {
        let mut s = String::new();
        for (k, v) in &self.env {
            s += &format!("{k}={v} ");
        }
        s += &host::shell_quote(&shown(&self.exe));
        for a in &input.args {
            s += &format!(" {}", host::shell_quote(&shown(Path::new(a))));
        }
        if let Some(i) = &input.stdin {
            s += &format!(" < {}", host::shell_quote(&shown(i)));
        }
        s
    }
}

/// The shared workloads: folder, extra gcc flags, small and large arguments. Sizes are chosen
/// so that the large run takes tens of milliseconds here (cachegrind makes it seconds) and
/// makes at most about 10^5 allocations (identifying each by its context costs microseconds).
pub const SHARED: [(&str, &[&str], &str, &str); 10] = [
    ("health", &["-DTORONTO"], "5 20 1", "7 20 1"),
    ("treeadd", &["-DTORONTO"], "13", "16"),
    ("mst", &["-DTORONTO"], "200", "600"),
    ("perimeter", &["-DTORONTO"], "6", "8"),
    ("bisort", &["-DTORONTO", "-std=gnu17"], "5000", "50000"),
    ("tsp", &["-DTORONTO"], "5000", "50000"),
    // power takes no size argument: its scaled-back build, profiled and measured on the same run.
    ("power", &["-DTORONTO", "-DSMALL_PROBLEM_SIZE"], "", ""),
    ("ft", &[], "100 1000", "500 10000"),
    ("anagram", &[], "input.in", "input.OUT:30"),
    ("analyzer", &["-DVERSION=\"1.00\"", "-DCOMPDATE=\"today\"", "-DCFLAGS=\"\"", "-DHOSTNAME=\"thishost\""], "ref.in:2000", "ref.in:10000"),
];

/// Builds one shared program into `bin/` (again only when a source is newer than the binary).
pub fn build_shared(src: &Path, name: &str, flags: &[&str], bin: &Path) -> Result<PathBuf, String> {
    let exe = bin.join(name);
    let mut sources: Vec<PathBuf> = std::fs::read_dir(src)
        .map_err(|e| format!("{}: {e}", src.display()))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "c"))
        .collect();
    sources.sort();
    if sources.is_empty() {
        return Err(format!("{}: no C sources", src.display()));
    }
    let newest = sources.iter().filter_map(|p| p.metadata().and_then(|m| m.modified()).ok()).max();
    let built = exe.metadata().and_then(|m| m.modified()).ok();
    if matches!((built, newest), (Some(b), Some(n)) if b >= n) {
        return Ok(exe);
    }
    let out = Command::new("cc").args(["-O2", "-w"]).args(flags).arg("-o").arg(&exe).args(&sources).arg("-lm").stdin(Stdio::null()).output().map_err(|e| format!("cc: {e}"))?;
    if !out.status.success() {
        return Err(format!("cc {name} failed: {}", String::from_utf8_lossy(&out.stderr).lines().last().unwrap_or("")));
    }
    Ok(exe)
}

/// The first `lines` lines of an analyzer trace, ended where an epoch starts, with the END line
/// the analyzer needs (it otherwise reads past the end forever).
pub fn analyzer_prefix(text: &str, lines: usize) -> String {
    let (mut out, mut epochs, mut cycle) = (String::new(), 0u64, "0".to_string());
    for (i, l) in text.lines().enumerate() {
        if l.starts_with("START:") {
            if i >= lines {
                break;
            }
            epochs += 1;
        }
        if l.starts_with("END:") {
            break;
        }
        if let Some(c) = l.split_whitespace().nth(2) {
            cycle = c.to_string();
        }
        out.push_str(l);
        out.push('\n');
    }
    out.push_str(&format!("END: {epochs} {cycle}\n"));
    out
}

/// One shared workload's input: arguments, or `FILE:N` (the first N lines of the program's
/// file, written into the work folder).
pub fn shared_input(name: &str, spec: &str, src: &Path, dir: &Path, which: &str) -> Result<Input, String> {
    let io = |e: std::io::Error| format!("{}: {e}", dir.display());
    let Some((file, n)) = spec.split_once(':') else {
        if name == "anagram" {
            return Ok(Input { args: vec!["words".into(), "2".into()], stdin: Some(src.join(spec)), cwd: src.to_path_buf(), what: format!("words 2 < {spec}") });
        }
        return Ok(Input { args: spec.split_whitespace().map(String::from).collect(), stdin: None, cwd: dir.to_path_buf(), what: if spec.is_empty() { "(no arguments)".into() } else { spec.into() } });
    };
    let n: usize = n.parse().map_err(|_| format!("{spec}: bad line count"))?;
    let text = std::fs::read_to_string(src.join(file)).map_err(|e| format!("{}: {e}", src.join(file).display()))?;
    let path = dir.join(format!("{which}.in"));
    if name == "analyzer" {
        std::fs::write(&path, analyzer_prefix(&text, n)).map_err(io)?;
        let p = std::path::absolute(&path).map_err(io)?;
        Ok(Input { args: vec![p.display().to_string()], stdin: None, cwd: src.to_path_buf(), what: format!("first epochs of {file} up to line {n}") })
    } else {
        let prefix: String = text.lines().take(n).map(|l| format!("{l}\n")).collect();
        std::fs::write(&path, prefix).map_err(io)?;
        let p = std::path::absolute(&path).map_err(io)?;
        Ok(Input { args: vec!["words".into(), "2".into()], stdin: Some(p), cwd: src.to_path_buf(), what: format!("words 2 < first {n} lines of {file}") })
    }
}

/// The Debian programs: (name, small count, large count) of generated records.
pub const DEBIAN: [(&str, usize, usize); 4] = [("sqlite3", 200, 2000), ("jq", 300, 3000), ("xmllint", 300, 3000), ("python3", 100, 400)];

/// A Debian program's input of `n` records, written to `dir` (its own folder: `small` or `large`,
/// names of one length so that the programs see the same path lengths).
pub fn debian_input(program: &str, n: usize, dir: &Path) -> Result<(Input, Vec<(String, String)>), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let w = |f: &str, text: String| std::fs::write(dir.join(f), text).map_err(|e| format!("{}: {e}", dir.join(f).display()));
    let input = |args: Vec<&str>, what: String| Input { args: args.into_iter().map(String::from).collect(), stdin: None, cwd: dir.to_path_buf(), what };
    Ok(match program {
        "sqlite3" => {
            w("script.sql", traced::sql_script(n))?;
            (input(vec![":memory:", ".read script.sql"], format!("{n} inserts, an index, queries, a delete and an update")), vec![])
        }
        "jq" => {
            w("records.json", traced::jq_records(n))?;
            (input(vec!["-c", traced::JQ_FILTER, "records.json"], format!("filter and reshape {n} JSON records")), vec![])
        }
        "xmllint" => {
            w("doc.xml", traced::xml_records(n))?;
            (input(vec!["--format", "doc.xml"], format!("parse and reformat {n} XML records")), vec![])
        }
        "python3" => {
            w("script.py", traced::python_script(n))?;
            let env = [("PYTHONMALLOC", "malloc"), ("PYTHONHASHSEED", "0"), ("PYTHONDONTWRITEBYTECODE", "1")];
            (input(vec!["-s", "script.py"], format!("{n} dicts, a third deleted, formatted, JSON round trip")), env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect())
        }
        _ => unreachable!("every program of DEBIAN has an input"),
    })
}

/// Every workload that can run here, and (name, why not) for the others.
pub fn workloads(work: &Path, shared: &Path, wanted: impl Fn(&str) -> bool) -> (Vec<Workload>, Vec<(String, String)>) {
    let (mut ok, mut missing) = (Vec::new(), Vec::new());
    let bin = work.join("bin");
    let _ = std::fs::create_dir_all(&bin);
    let src_root = shared.join("workloads");
    for (name, flags, small, large) in SHARED {
        if !wanted(name) {
            continue;
        }
        let src = src_root.join(name);
        if !src.is_dir() {
            missing.push((name.to_string(), format!("skipped: {} not found", src.display())));
            continue;
        }
        let dir = work.join(name);
        let _ = std::fs::create_dir_all(&dir);
        let built = build_shared(&src, name, flags, &bin).and_then(|exe| {
            let exe = std::path::absolute(&exe).map_err(|e| e.to_string())?;
            let src = std::path::absolute(&src).map_err(|e| e.to_string())?;
            let dir = std::path::absolute(&dir).map_err(|e| e.to_string())?;
            Ok(Workload {
                name: name.to_string(),
                pointer_chasing: true,
                exe,
                env: vec![],
                small: shared_input(name, small, &src, &dir, "small")?,
                large: shared_input(name, large, &src, &dir, "large")?,
            })
        });
        match built {
            Ok(w) => ok.push(w),
            Err(e) => missing.push((name.to_string(), e)),
        }
    }
    for (program, small, large) in DEBIAN {
        if !wanted(program) {
            continue;
        }
        let Some(exe) = heaplab_trace::launch::find_binary(program) else {
            missing.push((program.to_string(), format!("{program} is not installed (make study-deps installs it)")));
            continue;
        };
        let dir = std::path::absolute(work.join(program)).unwrap_or_else(|_| work.join(program));
        match debian_input(program, small, &dir.join("small")).and_then(|(s, env)| Ok((s, debian_input(program, large, &dir.join("large"))?.0, env))) {
            Ok((s, l, env)) => ok.push(Workload { name: program.to_string(), pointer_chasing: false, exe, env, small: s, large: l }),
            Err(e) => missing.push((program.to_string(), e)),
        }
    }
    (ok, missing)
}


/// A run's output as it is compared: (FNV-1a 64 of its bytes, its length).
pub type Fingerprint = (u64, u64);

/// Simulated misses of one run: (D1 misses, LL data misses, data references).
pub type Misses = (u64, u64, u64);


/// FNV-1a 64 of a file's bytes and its length: the fingerprint a run's output is compared by.
pub fn fingerprint(path: &Path) -> Result<Fingerprint, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in &bytes {
        h ^= *b as u64;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    Ok((h, bytes.len() as u64))
}


/// The measured program's cachegrind file among those of a run: the one whose command is the
/// workload's program (a layout run also profiles heaplab itself).
pub fn pick_cachegrind<'a>(files: &'a [Cachegrind], exe: &Path) -> Result<&'a Cachegrind, String> {
    let base = exe.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default();
    let mut of = files.iter().filter(|f| f.cmd.split_whitespace().next().and_then(|p| Path::new(p).file_name()).is_some_and(|n| n.to_string_lossy() == base));
    match (of.next(), of.next()) {
        (Some(f), None) => Ok(f),
        (None, _) => Err(format!("cachegrind wrote no file for {base} (commands: {})", files.iter().map(|f| f.cmd.as_str()).collect::<Vec<_>>().join("; "))),
        (Some(_), Some(_)) => Err(format!("cachegrind wrote more than one file for {base}")),
    }
}

/// Cachegrind, started without valgrind's launcher: its tool binary is static, so the
/// LD_PRELOAD a configuration sets reaches only the program (valgrind passes it on to its
/// client). Through the launcher (on Debian a shell script, then a dynamic binary) the layout's
/// runtime would load into those first, claim the layout there, and leave the program on the
/// fallback allocator.
pub struct CachegrindTool {
    /// The tool binary (`cachegrind-amd64-linux`).
    pub tool: PathBuf,
    /// The launcher the tool expects in `VALGRIND_LAUNCHER` (it refuses to run without one).
    pub launcher: PathBuf,
}

/// Finds cachegrind's tool binary beside valgrind's other files.
pub fn find_cachegrind() -> Result<CachegrindTool, String> {
    let valgrind = heaplab_trace::launch::find_program("valgrind").ok_or("valgrind is not installed (make study-deps installs it), or pass --no-cachegrind")?;
    // Debian's /usr/bin/valgrind is a script that runs valgrind.bin.
    let bin = PathBuf::from(format!("{}.bin", valgrind.display()));
    let launcher = if bin.is_file() { bin } else { valgrind };
    let dirs = std::env::var("VALGRIND_LIB").into_iter().map(PathBuf::from).chain(["/usr/libexec/valgrind", "/usr/lib/x86_64-linux-gnu/valgrind", "/usr/lib/valgrind"].map(PathBuf::from));
    let tool = dirs.map(|d| d.join("cachegrind-amd64-linux")).find(|p| p.is_file()).ok_or("cachegrind-amd64-linux not found (looked in $VALGRIND_LIB, /usr/libexec/valgrind, /usr/lib/x86_64-linux-gnu/valgrind, /usr/lib/valgrind)")?;
    Ok(CachegrindTool { tool, launcher })
}


/// `median [q1–q3]` of the values, scaled.
pub fn spread(v: &[f64], scale: f64, digits: usize) -> String {
    if v.is_empty() {
        return "—".into();
    }
    let f = |x: f64| format!("{:.*}", digits, x * scale);
    format!("{} [{}–{}]", f(median(v)), f(quantile(v, 0.25)), f(quantile(v, 0.75)))
}


pub fn strs(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}


/// Runs heaplab with `args` in `cwd` (stdin from `stdin` or nothing, its stdout discarded);
/// Ok(wall seconds) or the end of its standard error.
pub fn heaplab(heaplab: &Path, args: &[String], cwd: &Path, stdin: Option<&Path>, env: &[(String, String)]) -> Result<f64, String> {
    let t0 = Instant::now();
    let mut c = Command::new(heaplab);
    c.args(args).current_dir(cwd).envs(env.iter().map(|(k, v)| (k, v))).stdout(Stdio::null()).stderr(Stdio::piped());
    match stdin {
        Some(p) => c.stdin(std::fs::File::open(p).map_err(|e| format!("{}: {e}", p.display()))?),
        None => c.stdin(Stdio::null()),
    };
    let out = c.output().map_err(|e| format!("{}: cannot start: {e}", heaplab.display()))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let last = err.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("(no message)");
        return Err(format!("heaplab {} failed ({}): {last}", args.first().map_or("", String::as_str), out.status));
    }
    Ok(t0.elapsed().as_secs_f64())
}

/// Whether the heaplab binary has a command (its `--help` exits 0).
pub fn has_command(heaplab: &Path, cmd: &str) -> bool {
    Command::new(heaplab).args([cmd, "--help"]).stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok_and(|s| s.success())
}


/// Leaves the bench (and so every child) the traced group's small environment: python copies
/// every variable into its heap, so one more variable between profile and measured run would
/// change it.
pub fn isolate_env() {
    let keep = traced::base_env();
    for (k, _) in std::env::vars_os() {
        let k = k.to_string_lossy().into_owned();
        if !keep.iter().any(|(n, _)| *n == k) {
            std::env::remove_var(&k);
        }
    }
    for (k, v) in &keep {
        std::env::set_var(k, v);
    }
}

/// The commit measured, marked when the tree has uncommitted changes (take it before anything
/// can change the tree).
pub fn measured_commit() -> String {
    let commit = host::output("git", &["rev-parse", "--short", "HEAD"]);
    let dirty = !host::output("git", &["status", "--porcelain", "--untracked-files=no"]).is_empty();
    if dirty {
        format!("{commit} (with uncommitted changes)")
    } else {
        commit
    }
}
