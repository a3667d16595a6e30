//! `heaplab-bench-study`: replay speed (requests/s), fragmentation speed (jobs/s) and placed
//! file size (bytes/job) on real traces under each allocator, then the default suite's study
//! (`heaplab study --suite default`), behind `make bench-study`.
//!
//! Writes `bench/study-results.md` and `bench/study-results.json` (machine, date, commit,
//! command) and the suite's report in `bench/study-suite/`.

#[path = "../host.rs"]
#[allow(dead_code)] // shared with the other benches
mod host;

use heaplab_study::stats::median;
use heaplab_study::Machine;
use host::{children_cpu, output};
use serde_json::{json, Value};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

const USAGE: &str = "\
heaplab-bench-study — replay and fragmentation speed, placed-file size, and the default suite's study

Usage: heaplab-bench-study [--heaplab PATH] [--reps N] [--runs N] [--out DIR] [--skip-suite]
  --heaplab PATH  heaplab binary [default: target/release/heaplab]
  --reps N        repetitions of each replay and frag; the median is reported [default: 3]
  --runs N        runs per allocator in the suite's study [default: 10]
  --out DIR       where study-results.md/json and study-suite/ go [default: bench]
  --skip-suite    only the speed table (the summary repeats the last suite report's results)";

const ALLOCATORS: [&str; 4] = ["glibc", "jemalloc", "mimalloc", "tcmalloc"];

/// Runs heaplab with `args`; its JSON output, wall seconds and the CPU seconds of its tree.
fn heaplab(bin: &Path, args: &[&str], cwd: &Path) -> Result<(Value, f64, f64), String> {
    let cpu0 = children_cpu();
    let t0 = Instant::now();
    let out = Command::new(bin).args(args).current_dir(cwd).stdin(Stdio::null()).stderr(Stdio::inherit()).output().map_err(|e| e.to_string())?;
    let wall = t0.elapsed().as_secs_f64();
    if !out.status.success() {
        return Err(format!("heaplab {} failed: {}", args.join(" "), out.status));
    }
    let v = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    Ok((v, wall, children_cpu() - cpu0))
}

struct Workload {
    name: &'static str,
    what: String,
    cmd: Vec<String>,
    env: Vec<(&'static str, &'static str)>,
    stdin: Option<PathBuf>,
}

fn workloads(dir: &Path) -> std::io::Result<Vec<Workload>> {
    let sql = dir.join("script.sql");
    std::fs::write(
        &sql,
        "create table t(a, b);\nwith recursive c(x) as (select 1 union all select x + 1 from c where x < 200000)\n\
         insert into t select x, hex(randomblob(16)) from c;\ncreate index i on t(b);\nselect count(*), sum(length(b)) from t;\n",
    )?;
    let py = "import json\nd = [{'k': i, 'v': str(i) * 3, 'l': [i, i + 1]} for i in range(100000)]\ns = json.dumps(d)\nprint(len(json.loads(s)))";
    let pl = "my %h; for my $i (1..200000) { $h{\"k$i\"} = [$i, 'v' x ($i % 30)]; } my @k = sort keys %h; print scalar(@k), \"\\n\";";
    let python = if Path::new("/usr/bin/python3").exists() { "/usr/bin/python3" } else { "python3" };
    Ok(vec![
        Workload { name: "python3", what: "JSON round trip of 100000 dicts, PYTHONMALLOC=malloc".into(), cmd: vec![python.into(), "-c".into(), py.into()], env: vec![("PYTHONMALLOC", "malloc"), ("PYTHONHASHSEED", "0")], stdin: None },
        Workload { name: "sqlite3", what: "200000-row table + index in memory".into(), cmd: vec!["sqlite3".into(), ":memory:".into()], env: vec![], stdin: Some(sql) },
        Workload { name: "perl", what: "hash of 200000 keys, sorted".into(), cmd: vec!["perl".into(), "-e".into(), pl.into()], env: vec![], stdin: None },
    ])
}

fn main() {
    let mut heaplab_bin = PathBuf::from("target/release/heaplab");
    let (mut reps, mut runs, mut out_dir, mut skip_suite) = (3usize, 10usize, PathBuf::from("bench"), false);
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut val = |name: &str| args.next().unwrap_or_else(|| {
            eprintln!("{name} needs a value\n{USAGE}");
            std::process::exit(2)
        });
        match a.as_str() {
            "--heaplab" => heaplab_bin = PathBuf::from(val("--heaplab")),
            "--reps" => reps = val("--reps").parse().unwrap_or(3).max(1),
            "--runs" => runs = val("--runs").parse().unwrap_or(10).max(1),
            "--out" => out_dir = PathBuf::from(val("--out")),
            "--skip-suite" => skip_suite = true,
            "-h" | "--help" => {
                println!("{USAGE}");
                return;
            }
            _ => {
                eprintln!("unknown argument {a}\n{USAGE}");
                std::process::exit(2);
            }
        }
    }
    let bin = std::fs::canonicalize(&heaplab_bin).unwrap_or_else(|_| {
        eprintln!("{}: not found; run `make build` first", heaplab_bin.display());
        std::process::exit(2)
    });
    let work = std::env::temp_dir().join(format!("heaplab-bench-study-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work).expect("scratch directory");
    let fail = |e: String| -> ! {
        eprintln!("heaplab-bench-study: {e}");
        std::process::exit(1)
    };

    let mut rows: Vec<Value> = Vec::new();
    for w in workloads(&work).unwrap_or_else(|e| fail(e.to_string())) {
        let trace = format!("{}.hltrace", w.name);
        let mut c = Command::new(&bin);
        c.args(["trace", "--no-follow-exec", "-o", &trace, "--"]).args(&w.cmd).current_dir(&work).stdout(Stdio::null()).env_remove("LD_PRELOAD");
        c.envs(w.env.iter().copied());
        c.stdin(match &w.stdin {
            Some(p) => Stdio::from(std::fs::File::open(p).unwrap_or_else(|e| fail(e.to_string()))),
            None => Stdio::null(),
        });
        let st = c.status().unwrap_or_else(|e| fail(e.to_string()));
        if !st.success() {
            fail(format!("tracing {} failed: {st}", w.name));
        }
        for a in ALLOCATORS {
            eprintln!("heaplab-bench-study: {} under {a}", w.name);
            let placed = format!("{}.{a}.hlplaced", w.name);
            let (mut rate, mut cpu_rate, mut frag_rate, mut frag_cpu_rate) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
            let mut last = (Value::Null, Value::Null);
            for _ in 0..reps {
                let (r, _wall, cpu) = heaplab(&bin, &["replay", &trace, "-a", a, "-o", &placed, "--json"], &work).unwrap_or_else(|e| fail(e));
                let req = r["requests"].as_f64().unwrap_or(0.0);
                rate.push(r["requests_per_second"].as_f64().unwrap_or(0.0));
                cpu_rate.push(if cpu > 0.0 { req / cpu } else { 0.0 });
                let (f, _, _) = heaplab(&bin, &["frag", &placed, "--json", "--buckets", "0"], &work).unwrap_or_else(|e| fail(e));
                let jobs = f["jobs"].as_f64().unwrap_or(0.0);
                frag_rate.push(jobs / f["seconds"].as_f64().unwrap_or(f64::INFINITY));
                frag_cpu_rate.push(jobs / f["cpu_seconds"].as_f64().unwrap_or(f64::INFINITY));
                last = (r, f);
            }
            let (r, f) = last;
            rows.push(json!({
                "workload": w.name, "what": w.what, "allocator": a,
                "requests": r["requests"], "jobs": r["jobs"], "threads": r["threads"],
                "replay_requests_per_second": median(&rate), "replay_requests_per_cpu_second": median(&cpu_rate),
                "frag_jobs_per_second": median(&frag_rate), "frag_jobs_per_cpu_second": median(&frag_cpu_rate), "bytes_per_job": r["bytes_per_job"],
                "external": f["external"], "internal": f["internal"],
            }));
        }
    }

    let suite_dir = out_dir.join("study-suite");
    // With --skip-suite the last suite report's results are summarised again.
    let mut suite: Value = std::fs::read(suite_dir.join("results.json")).ok().and_then(|b| serde_json::from_slice(&b).ok()).unwrap_or(Value::Null);
    if !skip_suite {
        eprintln!("heaplab-bench-study: the default suite, {runs} runs per allocator");
        let t0 = Instant::now();
        let out = Command::new(&bin)
            .args(["study", "--suite", "default", "--runs", &runs.to_string(), "-o"])
            .arg(&suite_dir)
            .arg("--json")
            .stdin(Stdio::null())
            // Its progress lines show while the suite runs (about 15 minutes).
            .stderr(Stdio::inherit())
            .output()
            .unwrap_or_else(|e| fail(e.to_string()));
        suite = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
        suite["bench_wall_seconds"] = json!(t0.elapsed().as_secs_f64());
        if !out.status.success() {
            eprintln!("heaplab-bench-study: the study reported failures ({}); see {}", out.status, suite_dir.display());
        }
    }

    // The same machine description and clock as the study's own report.
    let Machine { cpu, cores, kernel, .. } = Machine::detect();
    let date = heaplab_study::utc_now();
    let commit = output("git", &["rev-parse", "--short", "HEAD"]);
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default().split_whitespace().take(3).collect::<Vec<_>>().join(" ");
    let command = std::env::args().collect::<Vec<_>>().join(" ");

    let mut md = String::new();
    md.push_str(&format!(
        "Machine: {cpu}, {cores} cores, Linux {kernel}. Date: {date}. Commit: {commit}. Load average at the end: {load} (the machine is shared; \
         CPU-time rates are steadier than wall-time ones). Command: `{command}`. Median of {reps} repetitions.\n\n"
    ));
    md.push_str("| trace | allocator | requests | jobs | replay req/s (wall) | replay req/CPU-s | frag jobs/s (wall) | frag jobs/CPU-s | bytes/job | external | internal |\n|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for r in &rows {
        md.push_str(&format!(
            "| {} | {} | {} | {} | {:.2}M | {:.2}M | {:.2}M | {:.2}M | {:.2} | {:.2}% | {:.2}% |\n",
            r["workload"].as_str().unwrap_or(""),
            r["allocator"].as_str().unwrap_or(""),
            r["requests"],
            r["jobs"],
            r["replay_requests_per_second"].as_f64().unwrap_or(0.0) / 1e6,
            r["replay_requests_per_cpu_second"].as_f64().unwrap_or(0.0) / 1e6,
            r["frag_jobs_per_second"].as_f64().unwrap_or(0.0) / 1e6,
            r["frag_jobs_per_cpu_second"].as_f64().unwrap_or(0.0) / 1e6,
            r["bytes_per_job"].as_f64().unwrap_or(0.0),
            r["external"].as_f64().unwrap_or(0.0) * 100.0,
            r["internal"].as_f64().unwrap_or(0.0) * 100.0,
        ));
    }
    md.push_str("\nTargets: replay ≥ 1M requests/s, fragmentation ≥ 1M jobs/s on one core, ≤ 16 bytes/job on disk. \
                 \"replay req/CPU-s\" divides by the CPU time of heaplab and its replay child together (two processes working in a pipeline).\n");
    if let Some(ws) = suite["workloads"].as_array() {
        md.push_str(&format!(
            "\n## Default suite: fragmentation vs peak RSS\n\n{} runs per allocator; full report in `study-suite/` (index.html, report.md). \
             **Spearman ρ > 0.65 in {} of {} workloads** (the published study: 13 of 28; expected by chance alone: {}). ρ is over the allocators, \
             one point each (peak RSS = median of the runs); p is the exact two-sided permutation p-value.\n\n\
             | workload | jobs | allocators | ρ external | p | smallest possible p | ρ internal | p | RSS pairs within noise |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|\n",
            suite["runs_per_allocator"],
            suite["workloads_rho_above_threshold"],
            suite["workloads_with_rho"],
            suite["workloads_rho_above_threshold_expected_by_chance"].as_f64().map_or("n/a".to_string(), |e| format!("{e:.1}"))
        ));
        for w in ws {
            if let Some(e) = w["error"].as_str() {
                md.push_str(&format!("| {} | failed: {} | | | | | | | |\n", w["name"].as_str().unwrap_or(""), e.lines().map(str::trim).collect::<Vec<_>>().join(" / ").replace('|', "/")));
                continue;
            }
            let f = |k: &str, f: &str| w[k][f].as_f64().map_or("n/a".to_string(), |x| if f == "rho" { format!("{x:+.2}") } else if x < 1e-4 { format!("{x:.1e}") } else { format!("{x:.4}") });
            md.push_str(&format!(
                "| {} | {} | {} | {} | {} | {} | {} | {} | {}/{} |\n",
                w["name"].as_str().unwrap_or(""),
                w["allocators"][0]["jobs"],
                w["allocators"].as_array().map_or(0, |a| a.len()),
                f("spearman_external", "rho"),
                f("spearman_external", "p"),
                f("spearman_external", "p_min"),
                f("spearman_internal", "rho"),
                f("spearman_internal", "p"),
                w["rss_overlapping_pairs"],
                w["allocator_pairs"]
            ));
        }
        if let Some(lines) = suite["interpretation"].as_array() {
            md.push_str("\nWhat this can and cannot show:\n\n");
            for l in lines.iter().filter_map(Value::as_str) {
                md.push_str(&format!("- {l}\n"));
            }
        }
    }
    print!("{md}");
    std::fs::create_dir_all(&out_dir).ok();
    let json = json!({"machine": {"cpu": cpu, "cores": cores, "kernel": kernel}, "date": date, "commit": commit, "command": command, "load_average": load, "reps": reps, "speed": rows, "suite": suite});
    let write = |name: &str, text: String| {
        let p = out_dir.join(name);
        let tmp = out_dir.join(format!(".{name}.tmp"));
        if std::fs::File::create(&tmp).and_then(|mut f| f.write_all(text.as_bytes())).and_then(|()| std::fs::rename(&tmp, &p)).is_err() {
            fail(format!("cannot write {}", p.display()));
        }
    };
    write("study-results.md", format!("# Replay, fragmentation and the peak-RSS study\n\n{md}"));
    write("study-results.json", serde_json::to_string_pretty(&json).expect("JSON of plain values") + "\n");
    let _ = std::fs::remove_dir_all(&work);
    eprintln!("wrote {}/study-results.md and .json", out_dir.display());
}
