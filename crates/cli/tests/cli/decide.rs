//! End-to-end tests of `heaplab compare --pyperf` and `heaplab rank`: small pyperf files written
//! here (three configurations, a few benchmarks, a timing and a memory file for the reference),
//! the table and the report directory, ranking the results and a CSV, and bad input (a file
//! of another format, a missing file, an unknown criterion) refused with exit 2 and a message
//! that names it, leaving no report behind.

use crate::common::{heaplab_in, json, write, Run};

/// A pyperf file: `benches` of (name, values), `unit` second or byte, values spread as runs of 3.
fn pyperf(benches: &[(&str, Vec<f64>)], unit: &str) -> String {
    let b: Vec<serde_json::Value> = benches
        .iter()
        .map(|(name, values)| {
            let mut runs = vec![serde_json::json!({"metadata": {"calibrate_loops": 4}, "warmups": [[1, values[0]]]})];
            for chunk in values.chunks(3) {
                runs.push(serde_json::json!({"warmups": [[4, chunk[0] * 1.1]], "values": chunk}));
            }
            serde_json::json!({"metadata": {"name": name, "unit": unit, "loops": 4}, "runs": runs})
        })
        .collect();
    serde_json::json!({"version": "1.0", "metadata": {"python_version": "3.11.2"}, "benchmarks": b}).to_string()
}

/// 12 values around `base × factor` with a deterministic 1% wobble.
fn values(base: f64, factor: f64, seed: u64) -> Vec<f64> {
    (0..12).map(|k| base * factor * (1.0 + 0.01 * (((k * 7 + seed * 13) % 11) as f64 / 11.0))).collect()
}

fn fixtures(dir: &std::path::Path) {
    let names = ["json_dumps", "richards", "float", "nbody", "regex_compile", "pickle"];
    let file = |factor: f64, seed: u64, unit: &str, base: f64| {
        let b: Vec<(&str, Vec<f64>)> = names.iter().enumerate().map(|(k, n)| (*n, values(base * (k + 1) as f64, factor, seed + k as u64))).collect();
        pyperf(&b, unit)
    };
    write(dir, "ref.json", &file(1.0, 1, "second", 0.01));
    write(dir, "fast.json", &file(1.0 / 1.25, 2, "second", 0.01));
    write(dir, "slow.json", &file(1.15, 3, "second", 0.01));
    write(dir, "ref-mem.json", &file(1.0, 4, "byte", 2e7));
    write(dir, "fast-mem.json", &file(1.3, 5, "byte", 2e7));
    write(dir, "slow-mem.json", &file(0.8, 6, "byte", 2e7));
}

fn ok(dir: &std::path::Path, args: &[&str]) -> String {
    let Run { code, stdout, stderr } = heaplab_in(dir, args);
    assert_eq!(code, 0, "heaplab {args:?}: {stderr}");
    stdout
}

fn usage_error(dir: &std::path::Path, args: &[&str], needle: &str) {
    let Run { code, stderr, .. } = heaplab_in(dir, args);
    assert_eq!(code, 2, "heaplab {args:?} must be a usage error: {stderr}");
    assert!(stderr.contains(needle), "heaplab {args:?}: message must mention {needle:?}: {stderr}");
}

#[test]
fn compare_pyperf_prints_the_table_and_writes_the_report() {
    let dir = scratch!("compare");
    fixtures(&dir);
    let out = ok(&dir, &["compare", "--pyperf", "ref=ref.json", "ref=ref-mem.json", "fast=fast.json", "fast=fast-mem.json", "slow=slow.json", "slow=slow-mem.json", "-o", "cmp"]);
    assert!(out.contains("Cross-application speedup over ref"), "{out}");
    let line = |name: &str| out.lines().find(|l| l.trim_start().starts_with(name)).unwrap_or_else(|| panic!("no row {name}: {out}")).to_string();
    // fast: 1.25× faster in time → a speedup cell (a lower bound ≤ 1.25); 1.3× the memory → PD.
    let fast = line("fast ");
    let cells: Vec<&str> = fast.split("  ").map(str::trim).filter(|s| !s.is_empty()).collect();
    let speed: f64 = cells[1].split(' ').next().unwrap().parse().unwrap_or_else(|_| panic!("time cell of fast: {fast}"));
    assert!(speed > 1.15 && speed <= 1.25 + 1e-9, "{fast}");
    assert!(cells[2].starts_with("PD ("), "{fast}");
    let slow = line("slow ");
    assert!(slow.contains("PD (") && slow.split("  ").any(|c| c.trim().starts_with("1.")), "slow: PD on time, a speedup on memory: {slow}");
    assert!(out.contains("In-app comparisons: time") && out.contains("richards"), "{out}");
    let results = json(&std::fs::read_to_string(dir.join("cmp/results.json")).unwrap(), "results.json");
    assert_eq!(results["format"], "heaplab-compare");
    assert_eq!(results["reference"], "ref");
    assert_eq!(results["series"].as_array().unwrap().len(), 3 * 6 * 2, "every configuration × benchmark × metric");
    assert_eq!(results["series"][0]["values"].as_array().unwrap().len(), 12, "raw samples kept");
    assert!(results["provenance"]["files"].as_array().unwrap().len() == 6);
    let report = std::fs::read_to_string(dir.join("cmp/report.md")).unwrap();
    assert!(report.contains("| configuration") && report.contains("ecdf-time.png"), "{report}");
    let html = std::fs::read_to_string(dir.join("cmp/index.html")).unwrap();
    assert!(html.contains("<th>configuration</th>") && html.contains("<img src=\"ecdf-memory.png\"") && html.ends_with("</html>\n"), "{html}");
    for m in ["time", "memory"] {
        let png = std::fs::read(dir.join(format!("cmp/ecdf-{m}.png"))).unwrap();
        assert!(png.starts_with(b"\x89PNG"), "ecdf-{m}.png");
    }
    // rank on the results: memory matters most, time least.
    let out = ok(&dir, &["rank", "cmp/results.json", "--best", "memory", "--worst", "time"]);
    assert!(out.contains("Pareto front:"), "{out}");
    let v = json(&ok(&dir, &["rank", "cmp/results.json", "--best", "memory", "--worst", "time", "--json"]), "rank --json");
    assert_eq!(v["ranking"][0]["alternative"], "slow", "the memory-lean configuration wins when memory matters most: {v}");
    let v = json(&ok(&dir, &["rank", "cmp/results.json", "--best", "time", "--worst", "memory", "--method", "fbwm", "--json"]), "fbwm");
    assert_eq!(v["ranking"][0]["alternative"], "fast", "{v}");
    let w: f64 = v["criteria"].as_array().unwrap().iter().map(|c| c["weight"].as_f64().unwrap()).sum();
    assert!((w - 1.0).abs() < 1e-6);
}

#[test]
fn rank_a_csv_with_every_method() {
    let dir = scratch!("rank-csv");
    write(&dir, "m.csv", "name,time,rss,throughput:max\nglibc,10,300,5\njemalloc,9,320,6\nmimalloc,8,400,6\nbad,11,420,4\n");
    for method in ["bwm", "fbwm", "topsis"] {
        let v = json(&ok(&dir, &["rank", "m.csv", "--best", "rss", "--worst", "throughput", "--method", method, "--json"]), method);
        let front: Vec<&str> = v["pareto_front"].as_array().unwrap().iter().map(|x| x.as_str().unwrap()).collect();
        assert_eq!(front, ["glibc", "jemalloc", "mimalloc"], "{method}");
        assert_ne!(v["ranking"][0]["alternative"], "bad", "{method}");
        assert_eq!(v["ranking"][3]["alternative"], "bad", "{method}: the dominated alternative is last");
    }
    let v = json(&ok(&dir, &["rank", "m.csv", "--best", "rss", "--worst", "throughput", "--prefs", "rss=1,time=3,throughput=9", "--json"]), "prefs");
    assert_eq!(v["best_to_others"], serde_json::json!([3.0, 1.0, 9.0]));
    assert_eq!(v["others_to_worst"], serde_json::json!([3.0, 9.0, 1.0]), "derived: a_BW / a_Bj");
    assert!(v["xi"].as_f64().unwrap().abs() < 1e-9, "consistent comparisons: ξ = 0");
}

#[test]
fn bad_input_is_a_usage_error() {
    let dir = scratch!("bad");
    fixtures(&dir);
    write(&dir, "hyperfine.json", r#"{"results": [{"command": "sleep 0.1", "mean": 0.1, "times": [0.1, 0.1]}]}"#);
    write(&dir, "other.json", r#"{"hello": 1}"#);
    usage_error(&dir, &["compare", "--pyperf", "ref.json", "hyperfine.json", "-o", "out"], "hyperfine");
    usage_error(&dir, &["compare", "--pyperf", "ref.json", "other.json", "-o", "out"], "not a pyperf results file");
    usage_error(&dir, &["compare", "--pyperf", "ref.json", "missing.json", "-o", "out"], "missing.json: cannot read");
    usage_error(&dir, &["compare", "--pyperf", "ref.json", "-o", "out"], "only one configuration");
    usage_error(&dir, &["compare", "--pyperf", "ref.json", "fast.json", "--confidence", "1.5", "-o", "out"], "--confidence");
    assert!(!dir.join("out").exists(), "nothing written on a usage error");
    write(&dir, "m.csv", "name,time,rss\na,1,2\nb,2,1\n");
    usage_error(&dir, &["rank", "m.csv", "--best", "energy", "--worst", "time"], "unknown criterion 'energy'");
    usage_error(&dir, &["rank", "m.csv", "--best", "rss", "--worst", "rss"], "both 'rss'");
    usage_error(&dir, &["rank", "m.csv", "--best", "rss", "--worst", "time", "--prefs", "rss=1,time=12"], "between 1 and 9");
    usage_error(&dir, &["rank", "m.csv", "--best", "rss", "--worst", "time", "--prefs", "cpu=2"], "unknown criterion 'cpu'");
    usage_error(&dir, &["rank", "other.json", "--best", "rss", "--worst", "time"], "not a heaplab compare results file");
    usage_error(&dir, &["rank", "nope.csv", "--best", "rss", "--worst", "time"], "nope.csv: cannot read");
}

/// An unstable benchmark (pyperf's rules) is left out and named with the reason; with
/// --keep-unstable it is analysed; the report directory of a previous run is replaced.
#[test]
fn unstable_benchmarks_are_left_out_unless_kept() {
    let dir = scratch!("unstable");
    let mut noisy = values(0.02, 1.0, 1);
    noisy[5] *= 3.0;
    write(&dir, "a.json", &pyperf(&[("steady", values(0.01, 1.0, 1)), ("noisy", noisy.clone())], "second"));
    write(&dir, "b.json", &pyperf(&[("steady", values(0.01, 0.8, 2)), ("noisy", values(0.02, 0.8, 3))], "second"));
    let out = ok(&dir, &["compare", "--pyperf", "a.json", "b.json", "-o", "cmp"]);
    assert!(out.contains("1 workload(s) analysed, 1 left out") && out.contains("noisy: unstable under a: the standard deviation is") && out.contains("the maximum is"), "{out}");
    let out = ok(&dir, &["compare", "--pyperf", "a.json", "b.json", "--keep-unstable", "-o", "cmp"]);
    assert!(out.contains("2 workload(s) analysed"), "{out}");
    let v = json(&std::fs::read_to_string(dir.join("cmp/results.json")).unwrap(), "results.json");
    assert_eq!(v["analysis"]["keep_unstable"], true);
    assert_eq!(v["configurations"][0]["name"], "a", "named after the file");
}

/// `--suite pyperformance` with what makes it fail before anything runs; nothing is written.
fn pyperformance_refused(name: &str, extra: &[&str], env_path: Option<&str>) -> Run {
    let d = crate::common::scratch_dir(module_path!(), name);
    let mut args = vec!["compare", "--suite", "pyperformance"];
    args.extend_from_slice(extra);
    args.extend_from_slice(&["-o", "cpy"]);
    let mut cmd = crate::common::Heaplab::new(&args).dir(&d).env("XDG_CACHE_HOME", d.join("cache"));
    if let Some(p) = env_path {
        cmd = cmd.env("PATH", p);
    }
    let r = cmd.run();
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(!d.join("cpy").exists(), "a report was written");
    assert!(!d.join("cache").exists(), "pyperformance's work directory was created");
    r
}

#[test]
fn pyperformance_missing_says_how_to_install() {
    if !std::path::Path::new("/usr/bin/python3").is_file() {
        return eprintln!("skipped: /usr/bin/python3 not found");
    }
    // No venv in the scratch directory, and a PATH without pyperformance.
    let r = pyperformance_refused("pp-missing", &["--python", "/usr/bin/python3"], Some("/usr/bin:/bin"));
    assert!(r.stderr.contains("pyperformance not found") && r.stderr.contains("pip install pyperformance pyperf") && r.stderr.contains("make bench-deps"), "{}", r.stderr);
    let r = pyperformance_refused("pp-given", &["--python", "/usr/bin/python3", "--pyperformance", "/nonexistent/pyperformance"], None);
    assert!(r.stderr.contains("--pyperformance /nonexistent/pyperformance: no such file") && r.stderr.contains("pip install"), "{}", r.stderr);
}

#[test]
fn pyperformance_bad_python() {
    let r = pyperformance_refused("pp-python", &["--python", "/nonexistent/python3"], None);
    assert!(r.stderr.contains("--python /nonexistent/python3: cannot run it"), "{}", r.stderr);
    let r = pyperformance_refused("pp-false", &["--python", "/bin/false"], None);
    assert!(r.stderr.contains("--python /bin/false: not a working Python"), "{}", r.stderr);
    let r = pyperformance_refused("pp-none", &[], None);
    assert!(r.stderr.contains("--suite pyperformance needs --python"), "{}", r.stderr);
    let r = pyperformance_refused("pp-metric", &["--python", "/usr/bin/python3", "--pyperformance", "/bin/true", "--metrics", "rss"], None);
    assert!(r.stderr.contains("'rss' is not measured by pyperformance"), "{}", r.stderr);
}

#[test]
fn pyperformance_options_need_the_suite() {
    let d = crate::common::scratch_dir(module_path!(), "pp-flags");
    let r = heaplab_in(&d, &["compare", "--fast", "--config", "glibc", "--config", "jemalloc", "--workload", "t=true", "-o", "cmp"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("--fast goes with --suite pyperformance"), "{}", r.stderr);
}
