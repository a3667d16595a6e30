//! heaplab-bench-report: how long `heaplab report` takes on a trace of 10^7 heap calls recorded
//! with `--stack-depth 16` (`crates/bench/programs/report_loop.c`: 64 call sites, a live set of
//! 200,000 blocks). Each figure is the median of several runs; the table and
//! `bench/report-results.md` name machine and commit. Target: about 10 s.

#[path = "../host.rs"]
#[allow(dead_code)] // only `output` and `machine_line` are needed here
mod host;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

const USAGE: &str = "\
heaplab-bench-report — the time of heaplab report on a 10^7-event trace

usage: heaplab-bench-report [--heaplab PATH] [--calls N] [--runs K] [--out FILE]";

fn die(m: &str) -> ! {
    eprintln!("heaplab-bench-report: {m}");
    std::process::exit(2)
}

fn run(cmd: &mut Command) -> f64 {
    let t0 = Instant::now();
    let out = cmd.stdout(Stdio::null()).stderr(Stdio::piped()).output().expect("start");
    assert!(out.status.success(), "{cmd:?}: {}", String::from_utf8_lossy(&out.stderr));
    t0.elapsed().as_secs_f64()
}

fn main() {
    let mut heaplab = PathBuf::from("target/release/heaplab");
    let (mut calls, mut runs, mut out) = (10_000_000u64, 3usize, PathBuf::from("bench/report-results.md"));
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = || args.next().unwrap_or_else(|| die(&format!("{a} needs a value\n{USAGE}")));
        match a.as_str() {
            "--heaplab" => heaplab = PathBuf::from(value()),
            "--calls" => calls = value().parse().ok().filter(|&n| n >= 1).unwrap_or_else(|| die("--calls: expected a number of at least 1")),
            "--runs" => runs = value().parse().ok().filter(|&n| n >= 1).unwrap_or_else(|| die("--runs: expected a number of at least 1")),
            "--out" => out = PathBuf::from(value()),
            "-h" | "--help" => {
                println!("{USAGE}");
                return;
            }
            _ => die(&format!("unknown option {a}\n{USAGE}")),
        }
    }
    let commit = host::output("git", &["rev-parse", "--short", "HEAD"]);
    let heaplab = std::fs::canonicalize(&heaplab).expect("the heaplab binary (make build)");
    let scratch = std::env::temp_dir().join(format!("heaplab-bench-report-{}", std::process::id()));
    std::fs::create_dir_all(&scratch).unwrap();
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("programs/report_loop.c");
    let prog = scratch.join("report_loop");
    assert!(Command::new("cc").args(["-O2", "-g", "-o"]).arg(&prog).arg(&src).status().is_ok_and(|s| s.success()), "cc");
    let trace = scratch.join("run.hltrace");
    let trace_s = run(Command::new(&heaplab).args(["trace", "--stack-depth", "16", "-o"]).arg(&trace).arg("--").arg(&prog).arg(calls.to_string()));
    let size = std::fs::metadata(&trace).unwrap().len();
    let info = Command::new(&heaplab).args(["trace-info", "--json"]).arg(&trace).output().unwrap();
    let info: serde_json::Value = serde_json::from_slice(&info.stdout).unwrap();
    let events = info["events"].as_u64().unwrap_or(0);
    let mut rows = Vec::new();
    for (name, extra) in [("text (--top 20)", &["--top", "20"][..]), ("JSON", &["--json"]), ("HTML and JSON (-o DIR)", &["-o"])] {
        let times: Vec<f64> = (0..runs)
            .map(|_| {
                let mut c = Command::new(&heaplab);
                c.arg("report").arg(&trace).args(["--oracle", "off"]).args(extra);
                if extra == ["-o"] {
                    c.arg(scratch.join("report"));
                }
                run(&mut c)
            })
            .collect();
        rows.push(format!("| {name} | {:.2} |", heaplab_study::stats::median(&times)));
    }
    let _ = std::fs::remove_dir_all(&scratch);
    let table = format!("| view | seconds (median of {runs}) |\n|---|---:|\n{}\n", rows.join("\n"));
    print!("{table}");
    let text = format!(
        "# `heaplab report` on a 10^7-event trace\n\n\
         {}\n\
         Command: `make bench-report` (`heaplab-bench-report --calls {calls} --runs {runs}`).\n\n\
         The workload (`crates/bench/programs/report_loop.c`) makes {calls} heap calls from 64 call sites\n\
         (a live set of up to 200,000 blocks), traced with `--stack-depth 16` in {trace_s:.1} s: {events} events,\n\
         {:.1} MiB of trace. Each figure is the wall time of `heaplab report --oracle off` (one pass over\n\
         the trace, symbolisation, the view written), the median of {runs} runs. Target: about 10 s.\n\n{table}",
        host::machine_line(&commit),
        size as f64 / 1048576.0
    );
    std::fs::write(&out, text).unwrap();
    println!("wrote {}", out.display());
}
