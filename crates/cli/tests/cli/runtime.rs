//! What the tests of `heaplab run` with a layout (`run`) and with groups (`group_run`) share:
//! the test programs they compile, tracing a program, the run against a plain run that is their
//! oracle (same output, same exit status, a report whose fallback adds up), the program's
//! streams and status passed through, and the shared pointer-chasing workloads built for them.

use crate::common::{scratch_dir, Heaplab, Run};
use serde_json::Value;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Mutex, OnceLock};

/// A test program of `tests/programs/`, compiled once per run with `flags` (each set of flags
/// its own binary, named after the program).
pub fn compiled(name: &str, flags: &[&str]) -> String {
    static BINS: OnceLock<Mutex<HashMap<String, PathBuf>>> = OnceLock::new();
    let mut bins = BINS.get_or_init(Default::default).lock().unwrap();
    let variant: String = flags.join(" ").chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '_' }).collect();
    bins.entry(format!("{name} {variant}"))
        .or_insert_with(|| {
            let dir = scratch_dir("runtime", &format!("program-{name}-{variant}"));
            let src = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/programs/{name}.c"));
            let out = dir.join(name);
            let st = Command::new("cc").args(flags).arg("-o").arg(&out).arg(&src).status();
            assert!(st.is_ok_and(|s| s.success()), "cannot compile {name}.c: a C compiler (cc) is required");
            out
        })
        .to_string_lossy()
        .into_owned()
}

/// `tests/programs/applied.c`, which checks every byte of its live blocks before it frees them.
pub fn applied() -> String {
    compiled("applied", &["-O2", "-pthread", "-rdynamic"])
}

/// Traces `cmd` in `dir` into `name.hltrace` (call stacks of `depth` frames); returns its path.
pub fn trace(dir: &Path, name: &str, depth: u32, cmd: &[&str], env: &[(&str, &str)]) -> String {
    let out = format!("{name}.hltrace");
    let depth = depth.to_string();
    let mut args = vec!["trace", "--no-follow-exec", "--stack-depth", &depth, "-o", &out, "--"];
    args.extend_from_slice(cmd);
    let r = Heaplab::new(&args).dir(dir).envs(env).within(300).run();
    assert_eq!(r.code, 0, "trace {cmd:?}: {}", r.stderr);
    dir.join(out).to_string_lossy().into_owned()
}

/// Runs `cmd` plainly, then with `heaplab run RUNTIME EXTRA -- cmd` (`runtime`: `--layout FILE`
/// or `--groups FILE`, with `--quiet` or not); requires the same standard output and exit
/// status, a report without error or stray frees, and a fallback count that is the sum of its
/// `reasons`. Returns the report, the run and the plain run, for the caller's own checks.
pub fn same_as_plain(dir: &Path, runtime: &[&str], reasons: &[&str], cmd: &[&str], env: &[(&str, &str)], extra: &[&str]) -> (Value, Run, Output) {
    let (v, r, plain) = beside_plain(dir, runtime, cmd, env, extra);
    assert_eq!(v["error"], Value::Null, "{v}");
    assert_eq!(v["stray_frees"], 0, "{v}");
    let fb = &v["fallback"];
    let fell_back: u64 = reasons.iter().map(|k| fb[k].as_u64().unwrap()).sum();
    assert_eq!(fb["count"].as_u64().unwrap(), fell_back, "{v}");
    // The run launcher's figures, which the runtime's own report does not have.
    assert!(v["peak_rss_bytes"].as_u64().is_some_and(|p| p > 0) && v["wall_seconds"].as_f64().is_some_and(|w| w > 0.0), "{v}");
    (v, r, plain)
}

/// `cmd` run plainly and with `heaplab run RUNTIME --report … EXTRA --`: the same exit status
/// and standard output, or the test fails; the report, heaplab's run and the plain run.
pub fn beside_plain(dir: &Path, runtime: &[&str], cmd: &[&str], env: &[(&str, &str)], extra: &[&str]) -> (Value, Run, Output) {
    let plain = Command::new(cmd[0]).args(&cmd[1..]).current_dir(dir).envs(env.iter().copied()).env_remove("LD_PRELOAD").output().unwrap();
    let report = dir.join("report.json");
    let _ = std::fs::remove_file(&report);
    let report_s = report.to_string_lossy().into_owned();
    let mut args = vec!["run"];
    args.extend_from_slice(runtime);
    args.extend_from_slice(&["--report", &report_s]);
    args.extend_from_slice(extra);
    args.push("--");
    args.extend_from_slice(cmd);
    let r = Heaplab::new(&args).dir(dir).envs(env).within(300).run();
    let under = runtime.last().unwrap_or(&"");
    assert_eq!(r.code, plain.status.code().unwrap_or(-1), "{cmd:?} under {under}: exit status differs; stderr: {}", r.stderr);
    assert!(r.stdout == String::from_utf8_lossy(&plain.stdout), "{cmd:?} under {under}: output differs from a plain run\n--- plain\n{}\n--- run\n{}\nstderr: {}", String::from_utf8_lossy(&plain.stdout), r.stdout, r.stderr);
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    (v, r, plain)
}

/// `heaplab run --quiet RUNTIME -- sh …` leaves the program's standard streams and exit status
/// alone: its output, its error and its status 7; a signal that kills it is 128 + its number.
pub fn streams_and_status_pass_through(dir: &Path, runtime: &[&str]) {
    let run = |script: &str| {
        let mut args = vec!["run", "--quiet"];
        args.extend_from_slice(runtime);
        args.extend_from_slice(&["--", "sh", "-c", script]);
        Heaplab::new(&args).dir(dir).run()
    };
    let r = run("echo out; echo err >&2; exit 7");
    assert_eq!((r.code, r.stdout.as_str(), r.stderr.as_str()), (7, "out\n", "err\n"));
    assert_eq!(run("kill -TERM $$").code, 128 + 15);
}

/// The pointer-chasing workloads of `../shared/workloads` named by `names`, built into a
/// scratch directory of `area`: that directory and their binaries, in order; `None` (having said
/// "skipped") when ../shared is absent.
pub fn shared_workloads(area: &str, names: &[&str]) -> Option<(PathBuf, Vec<String>)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/workloads");
    if !root.is_dir() {
        println!("skipped: ../shared not found");
        return None;
    }
    let dir = scratch_dir(area, "workloads");
    let bins = names
        .iter()
        .map(|name| {
            let sources: Vec<PathBuf> = std::fs::read_dir(root.join(name)).unwrap().flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|x| x == "c")).collect();
            let bin = dir.join(name);
            let st = Command::new("cc").args(["-O2", "-w", "-DTORONTO", "-std=gnu17", "-o"]).arg(&bin).args(&sources).arg("-lm").status().unwrap();
            assert!(st.success(), "cannot build {name}");
            bin.to_string_lossy().into_owned()
        })
        .collect();
    Some((dir, bins))
}
