//! What the benches of a runtime's cost per allocation (the layout runtime's, the grouped
//! allocator's) share: their command line (`--runs`, `--pairs`, `--out`), their failure exit, the
//! loop program compiled into a scratch directory, one timed run of it (plainly under the
//! fallback allocator, or under `heaplab run`), the median, and the results file with its
//! header. Each bench keeps its configurations and its table. Included with `#[path]`.

#[path = "host.rs"]
#[allow(dead_code)] // these benches need only the machine line
pub mod host;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The bench's name, for its messages.
static NAME: OnceLock<&'static str> = OnceLock::new();

/// Says `m` on standard error as the bench and exits with status 2.
pub fn fail(m: String) -> ! {
    eprintln!("{}: {m}", NAME.get().copied().unwrap_or("heaplab-bench"));
    std::process::exit(2)
}

/// The command line of a runtime cost bench.
pub struct Args {
    /// Runs per configuration (the median is reported).
    pub runs: usize,
    /// malloc/free pairs timed per run.
    pub pairs: u64,
    /// Where the results file goes.
    pub out: PathBuf,
}

impl Args {
    /// Reads the command line of bench `name` (`usage` is its help); `--help` prints it and
    /// exits.
    pub fn parse(name: &'static str, usage: &str) -> Args {
        let _ = NAME.set(name);
        let mut a = Args { runs: 7, pairs: 2_000_000, out: PathBuf::from("bench") };
        let mut args = std::env::args().skip(1);
        while let Some(arg) = args.next() {
            let mut val = |what: &str| args.next().unwrap_or_else(|| fail(format!("{what} needs a value\n{usage}")));
            match arg.as_str() {
                "--runs" => a.runs = val("--runs").parse().ok().filter(|n| *n >= 1).unwrap_or_else(|| fail("--runs: expected a number of at least 1".into())),
                "--pairs" => a.pairs = val("--pairs").parse().unwrap_or_else(|_| fail("--pairs: expected a number".into())),
                "--out" => a.out = PathBuf::from(val("--out")),
                "-h" | "--help" => {
                    println!("{usage}");
                    std::process::exit(0)
                }
                _ => fail(format!("unknown argument {arg}\n{usage}")),
            }
        }
        a
    }
}

/// A scratch directory for the bench's builds, traces and outputs (removed by the caller).
pub fn scratch() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("{}-{}", NAME.get().copied().unwrap_or("heaplab-bench"), std::process::id()));
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| fail(format!("{}: {e}", dir.display())));
    dir
}

/// `programs/NAME.c` compiled into `scratch`.
pub fn compile(name: &str, scratch: &Path) -> PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("programs/{name}.c"));
    let prog = scratch.join(name);
    if !Command::new("cc").args(["-O2", "-o"]).arg(&prog).arg(&src).status().is_ok_and(|s| s.success()) {
        fail(format!("cannot compile programs/{name}.c (a C compiler is required)"));
    }
    prog
}

/// One plain run of the loop program `cmd` (it prints its ns per pair) with `fallback`
/// preloaded: the ns per pair.
pub fn plain(cmd: &[String], fallback: &heaplab_replay::allocators::Allocator, scratch: &Path) -> f64 {
    let st = Command::new(&cmd[0]).args(&cmd[1..]).env("LD_PRELOAD", fallback.preload()).stdout(output(scratch)).status();
    if !st.is_ok_and(|s| s.success()) {
        fail(format!("{cmd:?} failed"));
    }
    timing(cmd, scratch)
}

/// One run of the loop program `cmd` by `run` (under `heaplab run`), given the file its standard
/// output must go to: the ns per pair, and what `run` returned.
pub fn under<R>(cmd: &[String], scratch: &Path, run: impl FnOnce(std::fs::File) -> R) -> (f64, R) {
    let kept = run(output(scratch));
    (timing(cmd, scratch), kept)
}

/// The file a run's standard output goes to, created afresh.
fn output(scratch: &Path) -> std::fs::File {
    let out = scratch.join("out.txt");
    std::fs::File::create(&out).unwrap_or_else(|e| fail(format!("{}: {e}", out.display())))
}

/// The ns per pair the run of `cmd` printed.
fn timing(cmd: &[String], scratch: &Path) -> f64 {
    let text = std::fs::read_to_string(scratch.join("out.txt")).unwrap_or_default();
    text.trim().parse().unwrap_or_else(|_| fail(format!("{cmd:?}: no timing in its output ({text:?})")))
}

/// Measures `n` configurations taking turns run by run (so that drifting load spreads over all
/// of them), `runs` runs each through `once` (the ns per pair and a figure of the run): per
/// configuration, the median ns per pair and the figure of its last run.
pub fn take_turns(runs: usize, n: usize, mut once: impl FnMut(usize) -> (f64, f64)) -> Vec<(f64, f64)> {
    let mut times: Vec<Vec<f64>> = vec![Vec::new(); n];
    let mut figures = vec![0.0; n];
    for _ in 0..runs {
        for k in 0..n {
            let (t, f) = once(k);
            times[k].push(t);
            figures[k] = f;
        }
    }
    times.iter().map(|t| heaplab_study::stats::median(t)).zip(figures).collect()
}

/// Writes the results file `name` under `out`: `# title`, the machine line, then `body`.
pub fn write_results(out: &Path, name: &str, title: &str, body: &str) {
    let commit = host::output("git", &["rev-parse", "--short", "HEAD"]);
    let text = format!("# {title}\n\n{}\n{body}", host::machine_line(&commit));
    let path = out.join(name);
    std::fs::write(&path, text).unwrap_or_else(|e| fail(format!("{}: {e}", path.display())));
    eprintln!("wrote {}", path.display());
}
