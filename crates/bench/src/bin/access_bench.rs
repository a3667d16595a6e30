//! `heaplab-bench-access`: the access profiler's slowdown, behind `make bench-access`. Builds
//! the programs of `../shared/workloads/` into `target/workloads/` (flags from its README), runs
//! each on a modest input alone, under `valgrind --tool=none` (the translation floor), under
//! `valgrind --tool=dhat` (comparable per-access work) and under `heaplab access` (as layouts
//! use it, and with `--contexts --graph contexts` as grouping uses it), and writes
//! `bench/access-results.md` and `.json`: wall times, slowdowns against the plain run, and what
//! the profile holds (heap accesses, blocks, edges), with machine, date and commit.

#[path = "../host.rs"]
#[allow(dead_code)] // shared with the other benches; this one needs only `output`
mod host;

use heaplab_study::Machine;
use host::output;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const USAGE: &str = "\
heaplab-bench-access — slowdown of `heaplab access` against the plain program, valgrind's none and dhat

Usage: heaplab-bench-access [--heaplab PATH] [--shared DIR] [--out DIR] [--runs N] [--timeout S] [--only NAME,...]
  --heaplab PATH   heaplab binary [default: target/release/heaplab]
  --shared DIR     the shared workloads [default: ../shared/workloads]
  --out DIR        where access-results.md/json go [default: bench]
  --runs N         runs per configuration, the median is kept [default: 3]
  --timeout S      a run taking longer is stopped and reported as such [default: 600]
  --only NAMES     only these workloads (comma-separated)";

/// A workload: name, gcc flags (besides -O2 and -lm), arguments, whether it runs in its folder
/// reading `input.OUT` on standard input.
struct Workload {
    name: &'static str,
    flags: &'static [&'static str],
    args: &'static [&'static str],
    stdin: Option<&'static str>,
}

/// Modest inputs: the plain run takes 0.05 to 0.5 s, so valgrind's start-up (about 0.2 s) is
/// not the whole figure and a profiled run stays within minutes.
const WORKLOADS: &[Workload] = &[
    Workload { name: "health", flags: &["-DTORONTO"], args: &["8", "20", "1"], stdin: None },
    Workload { name: "treeadd", flags: &["-DTORONTO"], args: &["18"], stdin: None },
    Workload { name: "mst", flags: &["-DTORONTO"], args: &["1000"], stdin: None },
    Workload { name: "perimeter", flags: &["-DTORONTO"], args: &["10"], stdin: None },
    Workload { name: "bisort", flags: &["-DTORONTO", "-std=gnu17"], args: &["250000"], stdin: None },
    Workload { name: "tsp", flags: &["-DTORONTO"], args: &["100000"], stdin: None },
    Workload { name: "power", flags: &["-DTORONTO"], args: &[], stdin: None },
    Workload { name: "ft", flags: &["-w"], args: &["1000", "20000"], stdin: None },
    Workload { name: "anagram", flags: &[], args: &["words", "2"], stdin: Some("input.OUT") },
    Workload {
        name: "analyzer",
        flags: &["-DVERSION=\"1.00\"", "-DCOMPDATE=\"today\"", "-DCFLAGS=\"\"", "-DHOSTNAME=\"thishost\""],
        args: &["test.in"],
        stdin: None,
    },
];

struct Opts {
    heaplab: PathBuf,
    shared: PathBuf,
    out: PathBuf,
    runs: usize,
    timeout: Duration,
    only: Vec<String>,
}

fn parse_args() -> Result<Opts, String> {
    let mut o = Opts {
        heaplab: PathBuf::from("target/release/heaplab"),
        shared: PathBuf::from("../shared/workloads"),
        out: PathBuf::from("bench"),
        runs: 3,
        timeout: Duration::from_secs(600),
        only: Vec::new(),
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = || args.next().ok_or_else(|| format!("{a} needs a value"));
        match a.as_str() {
            "--heaplab" => o.heaplab = PathBuf::from(value()?),
            "--shared" => o.shared = PathBuf::from(value()?),
            "--out" => o.out = PathBuf::from(value()?),
            "--runs" => o.runs = value()?.parse().ok().filter(|&n: &usize| n >= 1).ok_or("--runs: expected a whole number >= 1")?,
            "--timeout" => o.timeout = Duration::from_secs(value()?.parse().map_err(|_| "--timeout: expected seconds")?),
            "--only" => o.only = value()?.split(',').map(String::from).collect(),
            "-h" | "--help" => {
                println!("{USAGE}");
                std::process::exit(0);
            }
            _ => return Err(format!("unknown argument {a}\n{USAGE}")),
        }
    }
    Ok(o)
}

/// Builds a workload into `bin/`; the binary's path.
fn build(w: &Workload, shared: &Path, bin: &Path) -> Result<PathBuf, String> {
    let dir = shared.join(w.name);
    let mut sources: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "c"))
        .collect();
    sources.sort();
    let exe = bin.join(w.name);
    let st = Command::new("gcc").arg("-O2").args(w.flags).arg("-o").arg(&exe).args(&sources).arg("-lm").stderr(Stdio::null()).status();
    match st {
        Ok(s) if s.success() => Ok(exe),
        _ => Err(format!("cannot build {} with gcc", w.name)),
    }
}

/// Wall seconds of one run of `prefix + exe args` in the workload's folder (None: it failed or
/// ran past the timeout).
fn timed(prefix: &[String], exe: &Path, w: &Workload, shared: &Path, timeout: Duration) -> Option<f64> {
    let (cmd, rest) = match prefix.split_first() {
        Some((c, rest)) => (c.clone(), rest.to_vec()),
        None => (exe.to_string_lossy().into_owned(), Vec::new()),
    };
    let mut c = Command::new(cmd);
    c.args(rest);
    if !prefix.is_empty() {
        c.arg(exe);
    }
    c.args(w.args).current_dir(shared.join(w.name)).stdout(Stdio::null()).stderr(Stdio::null());
    c.stdin(match w.stdin {
        Some(f) => Stdio::from(std::fs::File::open(shared.join(w.name).join(f)).ok()?),
        None => Stdio::null(),
    });
    let t0 = Instant::now();
    let mut child = c.spawn().ok()?;
    loop {
        if let Some(st) = child.try_wait().ok()? {
            return st.success().then(|| t0.elapsed().as_secs_f64());
        }
        if t0.elapsed() > timeout {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn main() {
    let o = parse_args().unwrap_or_else(|e| {
        eprintln!("heaplab-bench-access: {e}");
        std::process::exit(2);
    });
    if !o.shared.is_dir() {
        eprintln!("skipped: ../shared not found ({})", o.shared.display());
        return;
    }
    let shared = std::path::absolute(&o.shared).expect("cwd");
    let heaplab = std::path::absolute(&o.heaplab).expect("cwd");
    let bin = std::path::absolute("target/workloads").expect("cwd");
    std::fs::create_dir_all(&bin).expect("target/ is writable");
    let profile = bin.join("bench.hlaccess");
    let heaplab_cmd = |extra: &[&str]| {
        let mut v = vec![heaplab.to_string_lossy().into_owned(), "access".into()];
        v.extend(extra.iter().map(|s| s.to_string()));
        v.extend(["-o".into(), profile.to_string_lossy().into_owned(), "--".into()]);
        v
    };
    // The default run goes last: the profile read afterwards is its.
    let configs: [(&str, Vec<String>); 6] = [
        ("plain", vec![]),
        ("none", vec!["valgrind".into(), "-q".into(), "--tool=none".into()]),
        ("dhat", vec!["valgrind".into(), "-q".into(), "--tool=dhat".into(), "--dhat-out-file=/dev/null".into()]),
        ("no-graph", heaplab_cmd(&["--affinity-distance", "1"])),
        ("contexts", heaplab_cmd(&["--contexts", "--graph", "contexts"])),
        ("heaplab", heaplab_cmd(&[])),
    ];
    let mut rows = Vec::new();
    println!(
        "{:<10} {:>9} {:>8} {:>8} {:>10} {:>10} {:>9} {:>13} {:>9} {:>11}",
        "workload", "plain s", "none ×", "dhat ×", "no-graph ×", "contexts ×", "heaplab ×", "heap accesses", "blocks", "co-access"
    );
    for w in WORKLOADS.iter().filter(|w| o.only.is_empty() || o.only.iter().any(|n| n == w.name)) {
        let exe = match build(w, &shared, &bin) {
            Ok(e) => e,
            Err(e) => {
                eprintln!("{e}");
                continue;
            }
        };
        let mut secs = serde_json::Map::new();
        let mut plain = None;
        let mut cells = Vec::new();
        for (name, prefix) in &configs {
            let times: Vec<f64> = (0..o.runs).map_while(|_| timed(prefix, &exe, w, &shared, o.timeout)).collect();
            let m = (times.len() == o.runs).then(|| heaplab_study::stats::median(&times));
            if *name == "plain" {
                plain = m;
            } else {
                cells.push(match (m, plain) {
                    (Some(t), Some(p)) => format!("{:.1}", t / p),
                    _ => "—".into(),
                });
            }
            secs.insert(name.to_string(), json!(m));
        }
        let prof = heaplab_access::read(&profile).ok();
        let (heap, blocks, edges) = prof.as_ref().map_or((0, 0, 0), |p| (p.info.heap_accesses, p.blocks.len() as u64, p.coaccess.len() as u64));
        let _ = std::fs::remove_file(&profile);
        let slow = |k: &str| match (secs[k].as_f64(), plain) {
            (Some(t), Some(p)) => json!(t / p),
            _ => Value::Null,
        };
        println!(
            "{:<10} {:>9} {:>8} {:>8} {:>10} {:>10} {:>9} {:>13} {:>9} {:>11}",
            w.name,
            plain.map_or("—".into(), |p| format!("{p:.3}")),
            cells[0],
            cells[1],
            cells[2],
            cells[3],
            cells[4],
            heap,
            blocks,
            edges
        );
        rows.push(json!({
            "workload": w.name,
            "args": w.args,
            "seconds": secs,
            "slowdown": {"none": slow("none"), "dhat": slow("dhat"), "no-graph": slow("no-graph"), "contexts": slow("contexts"), "heaplab": slow("heaplab")},
            "heap_accesses": heap,
            "accesses": prof.as_ref().map(|p| p.info.accesses),
            "blocks": blocks,
            "coaccess_edges": edges,
            "coaccess_dropped": prof.as_ref().map(|p| p.info.coaccess_dropped),
            "friend_edges": prof.as_ref().map(|p| p.friends.len()),
        }));
    }
    write_results(&o, &rows);
}

fn write_results(o: &Opts, rows: &[Value]) {
    let machine = Machine::detect();
    let commit = output("git", &["rev-parse", "--short", "HEAD"]);
    let date = output("date", &["-u", "+%Y-%m-%d %H:%M UTC"]);
    let geo = |k: &str| {
        let v: Vec<f64> = rows.iter().filter_map(|r| r["slowdown"][k].as_f64()).collect();
        (!v.is_empty()).then(|| (v.iter().map(|x| x.ln()).sum::<f64>() / v.len() as f64).exp())
    };
    let mut md = String::new();
    md += "# Access profiler slowdown (`make bench-access`)\n\n";
    md += &format!("Machine: {}. Date: {date}. Commit: {commit}. Median of {} run(s) per cell; wall time.\n\n", machine.describe(), o.runs);
    md += "Slowdown = wall time under the tool / wall time of the plain program (gcc -O2, glibc), valgrind's start-up included.\n";
    md += "`none` is valgrind's translation alone, `dhat` its heap profiler (per-access work like ours), `heaplab` is `heaplab access` with its defaults (stack depth 1, affinity distance 128), `no-graph` the same with `--affinity-distance 1` (blocks, counts and friends, no co-access graph): the attribution's cost alone; `contexts` is `--contexts --graph contexts` (full contexts of up to 64 frames and HALO's context affinity graph, no block graph): what grouping profiles cost.\n\n";
    md += "| workload | args | plain s | none × | dhat × | no-graph × | contexts × | heaplab × | heap accesses | blocks | co-access edges |\n|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
    let f = |v: &Value| v.as_f64().map_or("—".to_string(), |x| format!("{x:.1}"));
    for r in rows {
        md += &format!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
            r["workload"].as_str().unwrap_or(""),
            r["args"].as_array().map(|a| a.iter().filter_map(|x| x.as_str()).collect::<Vec<_>>().join(" ")).unwrap_or_default(),
            r["seconds"]["plain"].as_f64().map_or("—".into(), |x| format!("{x:.3}")),
            f(&r["slowdown"]["none"]),
            f(&r["slowdown"]["dhat"]),
            f(&r["slowdown"]["no-graph"]),
            f(&r["slowdown"]["contexts"]),
            f(&r["slowdown"]["heaplab"]),
            r["heap_accesses"],
            r["blocks"],
            r["coaccess_edges"],
        );
    }
    let g = |k: &str| geo(k).map_or("—".into(), |x| format!("{x:.1}"));
    md += &format!("| **geometric mean** | | | {} | {} | {} | {} | {} | | | |\n", g("none"), g("dhat"), g("no-graph"), g("contexts"), g("heaplab"));
    std::fs::create_dir_all(&o.out).expect("the output folder can be made");
    let json = json!({"machine": machine.describe(), "date": date, "commit": commit, "runs": o.runs, "rows": rows,
        "geomean": {"none": geo("none"), "dhat": geo("dhat"), "no-graph": geo("no-graph"), "contexts": geo("contexts"), "heaplab": geo("heaplab")}});
    std::fs::write(o.out.join("access-results.md"), &md).expect("results written");
    std::fs::write(o.out.join("access-results.json"), serde_json::to_string_pretty(&json).unwrap() + "\n").expect("results written");
    println!("\nwrote {}", o.out.join("access-results.md").display());
}
