//! `heaplab-bench-trace`: the tracer's speed and size against heaptrack on real programs,
//! behind `make bench-trace`.
//!
//! Each workload runs plain, under `heaptrack`, and under `heaplab trace` without call stacks
//! and with `--stack-depth` 1, 8, 16 and 64 (median wall time of several runs, the whole command
//! as a user would time it: heaptrack's compression and heaplab's summary included). It reports
//! the calls recorded, bytes per event on disk, events per second and the added time of each
//! tracer and depth, prints Markdown tables and writes `bench/trace-results.md` and
//! `bench/trace-results.json` naming machine, date, commit and load.

#[path = "../host.rs"]
#[allow(dead_code)] // shared with the other benches
mod host;

use host::{children_cpu, output};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

const USAGE: &str = "\
heaplab-bench-trace — time heaplab trace against heaptrack on real programs

Usage: heaplab-bench-trace [--heaplab PATH] [--runs N] [--out DIR] [--quick]
  --heaplab PATH  heaplab binary [default: target/release/heaplab]
  --runs N        runs per configuration; the median is reported [default: 5]
  --out DIR       where trace-results.md/json go [default: bench]
  --quick         smaller workloads (a smoke test; results are not written)

Programs that are not installed (bc, gcc's cc1, node, ruby) are left out with a note.";

/// The `--stack-depth` values timed beside heaptrack (0, no call sites, is the main table's).
const DEPTHS: [u32; 4] = [1, 8, 16, 64];

struct Workload {
    name: &'static str,
    cmd: Vec<String>,
    env: Vec<(&'static str, &'static str)>,
    stdin: Option<PathBuf>,
    what: String,
}

fn workloads(dir: &Path, quick: bool) -> std::io::Result<Vec<Workload>> {
    let scale = if quick { 10 } else { 1 };
    let rows = 200_000 / scale;
    let sql = dir.join("script.sql");
    std::fs::write(
        &sql,
        format!(
            "create table t(a, b);\nwith recursive c(x) as (select 1 union all select x + 1 from c where x < {rows})\n\
             insert into t select x, hex(randomblob(16)) from c;\ncreate index i on t(b);\nselect count(*), sum(length(b)) from t;\n"
        ),
    )?;
    let records = 30_000 / scale;
    let json = dir.join("records.json");
    let mut f = std::io::BufWriter::new(std::fs::File::create(&json)?);
    for i in 0..records {
        writeln!(f, "{{\"id\":{i},\"name\":\"user{i}\",\"tags\":[\"t{}\",\"t{}\"],\"score\":{}.5}}", i % 17, i % 5, i % 1000)?;
    }
    f.flush()?;
    let text = dir.join("text.txt");
    let mut f = std::io::BufWriter::new(std::fs::File::create(&text)?);
    for i in 0..(400_000 / scale) {
        writeln!(f, "{} line {} {}", i * 7919 % 100_003, i, i % 97)?;
    }
    f.flush()?;
    let small = dir.join("small.txt");
    let lines: String = std::fs::read_to_string(&text)?.lines().take(100_000 / scale).map(|l| format!("{l}\n")).collect();
    std::fs::write(&small, lines)?;
    let py = format!(
        "import json\nd = [{{'k': i, 'v': str(i) * 3, 'l': [i, i + 1]}} for i in range({})]\ns = json.dumps(d)\nprint(len(json.loads(s)))",
        100_000 / scale
    );
    let python = if Path::new("/usr/bin/python3").exists() { "/usr/bin/python3" } else { "python3" };
    let terms = 12_000 / scale;
    let bc = dir.join("series.bc");
    std::fs::write(&bc, format!("scale=50; s=0; for (i=1; i<={terms}; i++) s = s + sqrt(i) / i; s\n"))?;
    let functions = 150 / scale;
    let c_src = dir.join("unit.c");
    let mut c = String::new();
    for f in 0..functions {
        c.push_str(&format!(
            "static int tab{f}[64];\nint fn{f}(int *a, int n) {{ int s = 0; for (int i = 0; i < n; i++) {{ if (a[i] % {m} == 0) s += a[i] * {f}; else s -= tab{f}[i % 64]; }}\n  \
             switch (n % 5) {{ case 0: s += fn{p}(a, n - 1); break; case 1: s ^= n; break; default: s++; }} return s; }}\n",
            m = f + 3,
            p = f.saturating_sub(1)
        ));
    }
    std::fs::write(&c_src, c)?;
    let objects = 200_000 / scale;
    let node = format!("const a = []; for (let i = 0; i < {objects}; i++) a.push({{k: i, s: 'v' + i, l: [i, i + 1]}}); const s = JSON.stringify(a); console.log(JSON.parse(s).length, s.length);");
    let ruby = format!("h = {{}}; {objects}.times {{ |i| h[\"k#{{i}}\"] = [i, 'v' * (30 + i % 20)] }}; puts h.map {{ |k, v| \"#{{k}}=#{{v[1]}}\" }}.join(',').size");
    let mut optional = Vec::new();
    if find_program("bc") {
        optional.push(Workload { name: "bc", cmd: vec!["bc".into(), "-l".into(), "series.bc".into()], env: vec![], stdin: None, what: format!("sum of sqrt(i)/i, i ≤ {terms}, 50 digits") });
    }
    // gcc's compiler proper, run directly: the driver would trace as, collect2 and ld too.
    if let Some(cc1) = Some(output("gcc", &["-print-prog-name=cc1"])).filter(|p| Path::new(p).is_file()) {
        optional.push(Workload {
            name: "cc1",
            cmd: vec![cc1, "-quiet".into(), "-O2".into(), "unit.c".into(), "-o".into(), "/dev/null".into()],
            env: vec![],
            stdin: None,
            what: format!("gcc -O2 on {functions} generated functions"),
        });
    }
    if find_program("node") {
        optional.push(Workload { name: "node", cmd: vec!["node".into(), "-e".into(), node], env: vec![], stdin: None, what: format!("JSON round trip of {objects} objects") });
    }
    if find_program("ruby") {
        optional.push(Workload { name: "ruby", cmd: vec!["ruby".into(), "-e".into(), ruby], env: vec![], stdin: None, what: format!("hash of {objects} arrays of strings, joined") });
    }
    let mut all = vec![
        Workload { name: "sqlite3", cmd: vec!["sqlite3".into(), ":memory:".into()], env: vec![], stdin: Some(sql), what: format!("{rows}-row table + index") },
        // PYTHONMALLOC=malloc: every object from malloc (by default small objects come from
        // Python's own arenas, a few large malloc calls).
        Workload {
            name: "python3",
            cmd: vec![python.into(), "-c".into(), py],
            env: vec![("PYTHONMALLOC", "malloc"), ("PYTHONHASHSEED", "0")],
            stdin: None,
            what: format!("JSON round trip of {} dicts, PYTHONMALLOC=malloc", 100_000 / scale),
        },
        Workload { name: "jq", cmd: vec!["jq".into(), "-c".into(), "select(.id % 3 == 0) | {id, tags}".into()], env: vec![], stdin: Some(json), what: format!("filter {records} records") },
        Workload { name: "sort", cmd: vec!["sort".into()], env: vec![], stdin: Some(text), what: format!("sort {} lines", 400_000 / scale) },
        Workload { name: "xz", cmd: vec!["xz".into(), "-3".into(), "-c".into()], env: vec![], stdin: Some(small), what: format!("compress {} of those lines at -3", 100_000 / scale) },
    ];
    all.extend(optional);
    Ok(all)
}

/// Whether `name` is an executable in PATH.
fn find_program(name: &str) -> bool {
    std::env::var_os("PATH").is_some_and(|path| std::env::split_paths(&path).any(|d| d.join(name).is_file()))
}

/// A run's wall seconds and the CPU seconds of its whole process tree (the program, the
/// tracer's helper processes, heaplab's own reading of the trace). CPU time barely moves with
/// other jobs' load on the machine; wall time does.
#[derive(Clone, Copy)]
struct Timing {
    wall: f64,
    cpu: f64,
}

/// Runs a command with stdin from a file and output discarded; its timing, or an error.
fn time(cmd: &[String], env: &[(&str, &str)], stdin: Option<&Path>, cwd: &Path) -> Result<Timing, String> {
    let mut c = Command::new(&cmd[0]);
    c.args(&cmd[1..]).envs(env.iter().copied()).current_dir(cwd).stdout(Stdio::null()).stderr(Stdio::null()).env_remove("LD_PRELOAD");
    c.stdin(match stdin {
        Some(p) => Stdio::from(std::fs::File::open(p).map_err(|e| e.to_string())?),
        None => Stdio::null(),
    });
    let cpu0 = children_cpu();
    let t0 = Instant::now();
    let st = c.status().map_err(|e| format!("{}: {e}", cmd[0]))?;
    let el = t0.elapsed().as_secs_f64();
    if !st.success() {
        return Err(format!("{} failed: {st}", cmd.join(" ")));
    }
    Ok(Timing { wall: el, cpu: children_cpu() - cpu0 })
}

/// `heaplab trace-info --json` of a trace.
fn trace_info(heaplab: &Path, trace: &Path) -> Result<serde_json::Value, String> {
    let info = Command::new(heaplab).args(["trace-info", "--json"]).arg(trace).output().map_err(|e| e.to_string())?;
    serde_json::from_slice(&info.stdout).map_err(|e| format!("trace-info {}: {e}", trace.display()))
}

fn median(v: &[Timing], f: impl Fn(&Timing) -> f64) -> f64 {
    heaplab_study::stats::median(&v.iter().map(f).collect::<Vec<_>>())
}

struct Row {
    name: &'static str,
    what: String,
    calls: u64,
    events: u64,
    trace_bytes: u64,
    /// heaptrack's (zstd-compressed) output file.
    heaptrack_bytes: u64,
    /// heaplab's trace after `--compress`, and that run's wall time.
    compressed_bytes: u64,
    compressed_s: f64,
    plain: f64,
    heaptrack: f64,
    heaplab: f64,
    plain_cpu: f64,
    heaptrack_cpu: f64,
    heaplab_cpu: f64,
    /// One per DEPTHS entry.
    depths: Vec<DepthRow>,
}

/// heaplab with call stacks of one depth.
struct DepthRow {
    depth: u32,
    wall: f64,
    cpu: f64,
    trace_bytes: u64,
    sites: u64,
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut heaplab = PathBuf::from("target/release/heaplab");
    let mut runs = 5usize;
    let mut out = PathBuf::from("bench");
    let mut quick = false;
    let mut i = 0;
    while i < args.len() {
        match args[i].as_str() {
            "--heaplab" if i + 1 < args.len() => heaplab = PathBuf::from(&args[i + 1]),
            "--runs" if i + 1 < args.len() => runs = args[i + 1].parse().unwrap_or(0),
            "--out" if i + 1 < args.len() => out = PathBuf::from(&args[i + 1]),
            "--quick" => {
                quick = true;
                i += 1;
                continue;
            }
            "-h" | "--help" => {
                println!("{USAGE}");
                return;
            }
            a => {
                eprintln!("heaplab-bench-trace: unknown or incomplete argument {a}\n{USAGE}");
                std::process::exit(2);
            }
        }
        i += 2;
    }
    if runs == 0 {
        eprintln!("heaplab-bench-trace: --runs must be at least 1");
        std::process::exit(2);
    }
    let heaplab = std::path::absolute(&heaplab).unwrap_or(heaplab);
    let dir = std::env::temp_dir().join(format!("heaplab-bench-trace-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temporary directory");
    let mut rows = Vec::new();
    let mut failed = false;
    let load_before = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    for w in workloads(&dir, quick).expect("workload files") {
        eprintln!("heaplab-bench-trace: {} ({})", w.name, w.what);
        let stdin = w.stdin.as_deref();
        let mut ht_cmd = vec!["heaptrack".to_string(), "-o".into(), dir.join("ht").to_string_lossy().into_owned()];
        ht_cmd.extend(w.cmd.iter().cloned());
        let trace = dir.join(format!("{}.hltrace", w.name));
        let hl_at = |depth: u32, trace: &Path| {
            let mut c = vec![heaplab.to_string_lossy().into_owned(), "trace".into(), "-o".into(), trace.to_string_lossy().into_owned(), "--stack-depth".into(), depth.to_string(), "--".into()];
            c.extend(w.cmd.iter().cloned());
            c
        };
        let hl_cmd = hl_at(0, &trace);
        let depth_traces: Vec<PathBuf> = DEPTHS.iter().map(|d| dir.join(format!("{}.d{d}.hltrace", w.name))).collect();
        let depth_cmds: Vec<Vec<String>> = DEPTHS.iter().zip(&depth_traces).map(|(&d, t)| hl_at(d, t)).collect();
        // The three configurations take turns, run by run, so a change in machine load
        // (other jobs) falls on all of them alike; the median of each is reported.
        let ht_files = || std::fs::read_dir(&dir).into_iter().flatten().flatten().filter(|e| e.file_name().to_string_lossy().starts_with("ht."));
        let clean = || {
            for e in ht_files() {
                let _ = std::fs::remove_file(e.path());
            }
        };
        let mut zst_cmd = hl_cmd.clone();
        let zst = dir.join(format!("{}.z.hltrace", w.name));
        zst_cmd.splice(2..4, ["-o".to_string(), zst.to_string_lossy().into_owned(), "--compress".into()]);
        let r = (|| -> Result<Row, String> {
            let (mut plain, mut heaptrack, mut hl) = (Vec::new(), Vec::new(), Vec::new());
            let mut at_depth: Vec<Vec<Timing>> = vec![Vec::new(); DEPTHS.len()];
            let mut heaptrack_bytes = 0;
            for _ in 0..runs {
                plain.push(time(&w.cmd, &w.env, stdin, &dir)?);
                heaptrack.push(time(&ht_cmd, &w.env, stdin, &dir)?);
                heaptrack_bytes = ht_files().filter_map(|e| e.metadata().ok()).map(|m| m.len()).sum();
                clean();
                hl.push(time(&hl_cmd, &w.env, stdin, &dir)?);
                for (k, c) in depth_cmds.iter().enumerate() {
                    at_depth[k].push(time(c, &w.env, stdin, &dir)?);
                }
            }
            let mut depths = Vec::new();
            for (k, &depth) in DEPTHS.iter().enumerate() {
                let v = trace_info(&heaplab, &depth_traces[k])?;
                depths.push(DepthRow {
                    depth,
                    wall: median(&at_depth[k], |t| t.wall),
                    cpu: median(&at_depth[k], |t| t.cpu),
                    trace_bytes: v["file_bytes"].as_u64().unwrap_or(0),
                    sites: v["call_sites"].as_u64().unwrap_or(0),
                });
            }
            let wall = |t: &Timing| t.wall;
            let cpu = |t: &Timing| t.cpu;
            let (plain_cpu, heaptrack_cpu, heaplab_cpu) = (median(&plain, cpu), median(&heaptrack, cpu), median(&hl, cpu));
            let (plain, heaptrack, hl) = (median(&plain, wall), median(&heaptrack, wall), median(&hl, wall));
            // One more run with --compress, for the compressed size and what compressing costs.
            let compressed_s = time(&zst_cmd, &w.env, stdin, &dir)?.wall;
            let compressed_bytes = std::fs::metadata(&zst).map(|m| m.len()).unwrap_or(0);
            let v = trace_info(&heaplab, &trace)?;
            let calls = v["calls"].as_object().map(|m| m.iter().filter(|(k, _)| *k != "free").map(|(_, n)| n.as_u64().unwrap_or(0)).sum()).unwrap_or(0);
            Ok(Row {
                name: w.name,
                what: w.what.clone(),
                calls,
                events: v["events"].as_u64().unwrap_or(0),
                trace_bytes: v["file_bytes"].as_u64().unwrap_or(0),
                heaptrack_bytes,
                compressed_bytes,
                compressed_s,
                plain,
                heaptrack,
                heaplab: hl,
                plain_cpu,
                heaptrack_cpu,
                heaplab_cpu,
                depths,
            })
        })();
        for t in &depth_traces {
            let _ = std::fs::remove_file(t);
        }
        match r {
            Ok(row) => rows.push(row),
            Err(e) => {
                eprintln!("heaplab-bench-trace: {}: {e}", w.name);
                failed = true;
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| s.lines().find(|l| l.starts_with("model name")).map(|l| l.split(':').nth(1).unwrap_or("").trim().to_string()))
        .unwrap_or_default();
    let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default().trim().to_string();
    let date = output("date", &["-u", "+%Y-%m-%d %H:%M UTC"]);
    let commit = output("git", &["rev-parse", "--short", "HEAD"]);
    let ht_version = output("heaptrack", &["--version"]);
    let load_after = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let load = |l: &str| l.split_whitespace().take(3).collect::<Vec<_>>().join(" ");
    let (load_before, load_after) = (load(&load_before), load(&load_after));
    let mut md = String::new();
    md.push_str("# heaplab trace vs heaptrack\n\n");
    md.push_str(&format!(
        "Machine: {cpu}, {cores} cores, Linux {kernel}. Date: {date}. Commit: {commit}. {ht_version}.\n\
         Command: `make bench-trace` (`heaplab-bench-trace --runs {runs}`). Wall time is the median of {runs} runs of the whole\n\
         command, the three configurations taking turns run by run (heaptrack's compression and heaplab's summary included);\n\
         \"added\" is the time added to the plain run; the CPU ratio compares the CPU time (user + system) the two tracers\n\
         add over the whole process tree, which other jobs on the machine disturb far less than wall time.\n\
         Events are calls recorded (a realloc is one); bytes/event is the trace file's size over its events.\n\
         Load average (1, 5, 15 min) at the start: {load_before}; at the end: {load_after} (the machine is shared with\n\
         other builds: wall times carry their noise, CPU times much less).\n\n"
    ));
    md.push_str("| program | workload | alloc calls | events | plain s | heaptrack s (added) | heaplab s (added) | added ratio, wall | added ratio, CPU | bytes/event | events/s |\n");
    md.push_str("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    let mut json_rows = Vec::new();
    for r in &rows {
        let add_ht = r.heaptrack - r.plain;
        let add_hl = r.heaplab - r.plain;
        let ratio = if add_ht > 0.0 { add_hl / add_ht } else { f64::NAN };
        let (cpu_ht, cpu_hl) = (r.heaptrack_cpu - r.plain_cpu, r.heaplab_cpu - r.plain_cpu);
        let cpu_ratio = if cpu_ht > 0.0 { cpu_hl / cpu_ht } else { f64::NAN };
        let bpe = if r.events > 0 { r.trace_bytes as f64 / r.events as f64 } else { 0.0 };
        let eps = if r.heaplab > 0.0 { r.events as f64 / r.heaplab } else { 0.0 };
        md.push_str(&format!(
            "| {} | {} | {} | {} | {:.3} | {:.3} ({:+.3}) | {:.3} ({:+.3}) | {:.2} | {:.2} | {:.2} | {:.2}M |\n",
            r.name, r.what, r.calls, r.events, r.plain, r.heaptrack, add_ht, r.heaplab, add_hl, ratio, cpu_ratio, bpe, eps / 1e6
        ));
        json_rows.push(serde_json::json!({
            "program": r.name, "workload": r.what, "alloc_calls": r.calls, "events": r.events, "trace_bytes": r.trace_bytes,
            "heaptrack_bytes": r.heaptrack_bytes, "compressed_bytes": r.compressed_bytes, "compressed_s": r.compressed_s,
            "plain_s": r.plain, "heaptrack_s": r.heaptrack, "heaplab_s": r.heaplab,
            "added_heaptrack_s": add_ht, "added_heaplab_s": add_hl, "added_ratio": ratio,
            "plain_cpu_s": r.plain_cpu, "heaptrack_cpu_s": r.heaptrack_cpu, "heaplab_cpu_s": r.heaplab_cpu, "added_cpu_ratio": cpu_ratio, "bytes_per_event": bpe, "events_per_s": eps,
            "stack_depths": r.depths.iter().map(|d| serde_json::json!({"depth": d.depth, "wall_s": d.wall, "cpu_s": d.cpu, "added_s": d.wall - r.plain, "trace_bytes": d.trace_bytes, "sites": d.sites})).collect::<Vec<_>>(),
        }));
    }
    md.push_str(&format!(
        "\n**Call stacks.** Added wall time (s) of `heaplab trace --stack-depth N` beside heaptrack's (which always records\n\
         whole stacks); the same runs as above, taking turns. \"÷ heaptrack\" and \"÷ depth 0\" compare depth 16's added time;\n\
         \"size\" is depth 16's trace file over depth 0's; sites are the distinct call stacks at depth 16.\n\n\
         | program | events | heaptrack added | depth 0 | {} | depth 16 ÷ heaptrack | depth 16 ÷ depth 0 | depth 16 CPU ÷ heaptrack CPU | size | sites |\n\
         |---|---:|---:|---:|{}---:|---:|---:|---:|---:|\n",
        DEPTHS.iter().map(|d| format!("depth {d}")).collect::<Vec<_>>().join(" | "),
        "---:|".repeat(DEPTHS.len())
    ));
    for r in &rows {
        let add_ht = r.heaptrack - r.plain;
        let add0 = r.heaplab - r.plain;
        let d16 = r.depths.iter().find(|d| d.depth == 16);
        let ratio = |a: f64, b: f64| if b > 0.02 { format!("{:.2}", a / b) } else { "—".into() };
        let cols: Vec<String> = r.depths.iter().map(|d| format!("{:+.3}", d.wall - r.plain)).collect();
        let (vs_ht, vs_0, cpu_vs, size, sites) = match d16 {
            Some(d) => (
                ratio(d.wall - r.plain, add_ht),
                ratio(d.wall - r.plain, add0),
                ratio(d.cpu - r.plain_cpu, r.heaptrack_cpu - r.plain_cpu),
                if r.trace_bytes > 0 { format!("{:.2}×", d.trace_bytes as f64 / r.trace_bytes as f64) } else { "—".into() },
                d.sites.to_string(),
            ),
            None => Default::default(),
        };
        md.push_str(&format!("| {} | {} | {add_ht:+.3} | {add0:+.3} | {} | {vs_ht} | {vs_0} | {cpu_vs} | {size} | {sites} |\n", r.name, r.events, cols.join(" | ")));
    }
    md.push_str(
        "\n**Trace file sizes.** heaptrack compresses its output with zstd as it goes; heaplab writes a raw file\n\
         (every committed event on disk at once) and `--compress` compresses it whole after the program ends\n\
         (time: one run with `--compress`, whole command).\n\n\
         | program | events | heaptrack file | heaplab file | heaplab `--compress` file | heaplab `--compress` ÷ heaptrack | `--compress` run s |\n\
         |---|---:|---:|---:|---:|---:|---:|\n",
    );
    for r in &rows {
        let kib = |b: u64| format!("{:.1} KiB", b as f64 / 1024.0);
        let vs = if r.heaptrack_bytes > 0 { format!("{:.2}×", r.compressed_bytes as f64 / r.heaptrack_bytes as f64) } else { "—".into() };
        md.push_str(&format!(
            "| {} | {} | {} | {} | {} | {vs} | {:.3} |\n",
            r.name,
            r.events,
            kib(r.heaptrack_bytes),
            kib(r.trace_bytes),
            kib(r.compressed_bytes),
            r.compressed_s
        ));
    }
    md.push_str(
        "\nTargets: at most 6 bytes per event on disk; added time at most a third of heaptrack's (ratio ≤ 0.33). With\n\
         `--stack-depth 16`: added time at most half of heaptrack's and at most 3× heaplab's own without stacks; trace\n\
         at most 1.5× the size without.\n\
         Anchor (`../shared/ANCHORS.md`): heaptrack 1.4 on a sqlite3 workload of 615,692 allocation calls, 0.24 s plain, 1.19 s traced.\n",
    );
    println!("{md}");
    if quick {
        eprintln!("heaplab-bench-trace: --quick: results not written");
    } else {
        let json = serde_json::json!({"machine": {"cpu": cpu, "cores": cores, "kernel": kernel}, "date": date, "commit": commit,
            "heaptrack": ht_version, "runs": runs, "load_before": load_before, "load_after": load_after, "rows": json_rows});
        let _ = std::fs::create_dir_all(&out);
        let w1 = std::fs::write(out.join("trace-results.md"), &md);
        let w2 = std::fs::write(out.join("trace-results.json"), serde_json::to_string_pretty(&json).expect("plain JSON") + "\n");
        if w1.is_err() || w2.is_err() {
            eprintln!("heaplab-bench-trace: cannot write results to {}", out.display());
            failed = true;
        } else {
            eprintln!("heaplab-bench-trace: wrote {}/trace-results.md and .json", out.display());
        }
    }
    if failed {
        std::process::exit(1);
    }
}
