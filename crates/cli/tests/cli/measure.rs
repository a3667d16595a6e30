//! End-to-end tests of `heaplab compare` measuring commands itself: glibc and jemalloc × two
//! tiny real workloads (gzip and xz of a small file), a few runs; the report and the raw
//! samples; a failing workload (exit 2, the runs before it kept); an unknown allocator (exit 2,
//! nothing run); an interrupted measurement continued with `--resume`.

use crate::common::{heaplab_in, json, write, BIN};
use serde_json::Value;
use std::path::Path;

const GZ: &str = "gz=gzip -c input.txt > /dev/null";
const XZ: &str = "xz=xz -c input.txt > /dev/null";

fn input(dir: &Path) {
    let text: String = (0..4000).map(|i| format!("line {i} of a small input, {}\n", i * 7919 % 1000)).collect();
    write(dir, "input.txt", &text);
}

fn results(dir: &Path) -> Value {
    json(&std::fs::read_to_string(dir.join("cmp/results.json")).unwrap(), "results.json")
}

fn series<'a>(doc: &'a Value, config: &str, workload: &str, metric: &str) -> &'a Value {
    doc["series"].as_array().unwrap().iter().find(|s| s["configuration"] == config && s["workload"] == workload && s["metric"] == metric).unwrap_or_else(|| panic!("no series {config} {workload} {metric}"))
}

#[test]
fn two_allocators_two_workloads() {
    let d = scratch!("two");
    input(&d);
    let r = heaplab_in(&d, &["compare", "--runs", "3", "--warmup", "1", "--config", "ref=glibc", "--config", "je=jemalloc", "--workload", GZ, "--workload", XZ, "-o", "cmp"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains("Cross-application speedup over ref"), "{}", r.stdout);
    assert!(r.stdout.contains("workload gz: `gzip -c input.txt > /dev/null`"), "{}", r.stdout);
    // This machine has no RAPL: said so, and the other metrics measured.
    if !Path::new("/sys/class/powercap/intel-rapl:0").exists() {
        assert!(r.stderr.contains("energy: not available on this machine"), "{}", r.stderr);
        assert!(r.stdout.contains("energy: not available on this machine"), "{}", r.stdout);
    }
    for f in ["results.json", "report.md", "index.html", "ecdf-time.png", "ecdf-cpu.png", "ecdf-rss.png"] {
        assert!(d.join("cmp").join(f).is_file(), "{f} missing");
    }
    let doc = results(&d);
    assert_eq!(doc["reference"], "ref");
    assert_eq!(doc["provenance"]["complete"], true);
    assert!(doc["configurations"][1]["description"].as_str().unwrap().contains("libjemalloc"), "{}", doc["configurations"]);
    for c in ["ref", "je"] {
        for w in ["gz", "xz"] {
            for m in ["time", "cpu", "rss"] {
                let s = series(&doc, c, w, m);
                assert_eq!(s["values"].as_array().unwrap().len(), 3, "{s}");
                assert_eq!(s["warmups"].as_array().unwrap().len(), 1, "{s}");
                assert!(s["values"].as_array().unwrap().iter().all(|v| v.as_f64().unwrap() > 0.0) || m == "cpu", "{s}");
            }
        }
    }
    // jemalloc is really preloaded: its RSS differs from glibc's on the same command.
    let med = |c: &str| {
        let mut v: Vec<f64> = series(&doc, c, "xz", "rss")["values"].as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect();
        v.sort_by(f64::total_cmp);
        v[1]
    };
    assert_ne!(med("ref"), med("je"));
    assert!(doc["analysis"]["cross_app"].is_array(), "{}", doc["analysis"]);
    // Without --resume, a finished report is replaced; --resume has nothing to continue.
    let r = heaplab_in(&d, &["compare", "--runs", "2", "--warmup", "0", "--config", "ref=glibc", "--config", "je=jemalloc", "--workload", GZ, "--resume", "-o", "cmp"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("no interrupted measurement"), "{}", r.stderr);
}

#[test]
fn a_failing_workload_keeps_the_runs_taken() {
    let d = scratch!("failing");
    input(&d);
    // `mark` counts its runs; `bad` fails once it has run 3 times, in round 2.
    let mark = "mark=echo run >> count";
    let bad = "bad=test $(wc -l < count) -gt 2 && { echo 'bad input, giving up' >&2; exit 7; }; gzip -c input.txt > /dev/null";
    let r = heaplab_in(&d, &["compare", "--runs", "3", "--warmup", "0", "--metrics", "time,rss", "--config", "ref=glibc", "--config", "je=jemalloc", "--workload", mark, "--workload", bad, "-o", "cmp"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("workload 'bad'") && r.stderr.contains("exit status 7") && r.stderr.contains("bad input, giving up"), "{}", r.stderr);
    let doc = results(&d);
    assert_eq!(doc["provenance"]["complete"], false);
    // Round 1 whole (4 runs) and round 2's `mark` runs (2): all kept.
    assert_eq!(series(&doc, "ref", "bad", "time")["values"].as_array().unwrap().len(), 1);
    assert_eq!(series(&doc, "je", "mark", "rss")["values"].as_array().unwrap().len(), 2);
    assert!(r.stderr.contains("6 of 12 runs kept"), "{}", r.stderr);
    // A crash names the signal.
    let r = heaplab_in(&d, &["compare", "--runs", "2", "--config", "ref=glibc", "--config", "je=jemalloc", "--workload", "seg=kill -SEGV $$", "-o", "crash"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("workload 'seg'") && r.stderr.contains("SIGSEGV"), "{}", r.stderr);
    // Rerunning without --resume over the interrupted measurement is refused, nothing lost.
    std::fs::remove_file(d.join("count")).unwrap();
    let r = heaplab_in(&d, &["compare", "--runs", "3", "--warmup", "0", "--metrics", "time,rss", "--config", "ref=glibc", "--config", "je=jemalloc", "--workload", mark, "--workload", bad, "-o", "cmp"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("--resume"), "{}", r.stderr);
    assert_eq!(results(&d), doc);
}

#[test]
fn bad_configurations_are_refused_before_anything_runs() {
    let d = scratch!("bad");
    let cases: [(&[&str], &str); 6] = [
        (&["--config", "ref=glibc", "--config", "x=nosuchalloc", "--workload", "t=touch ran"], "unknown allocator 'nosuchalloc'"),
        (&["--config", "ref=glibc", "--workload", "t=touch ran"], "at least two --config"),
        (&["--config", "ref=glibc", "--config", "ref=jemalloc", "--workload", "t=touch ran"], "given twice"),
        (&["--config", "ref=glibc", "--config", "je=jemalloc", "--workload", "touch ran"], "NAME=COMMAND"),
        (&["--config", "ref=glibc", "--config", "je=jemalloc", "--workload", "t=touch ran", "--reference", "mi"], "--reference mi"),
        (&["--config", "ref=glibc", "--config", "je=jemalloc", "--workload", "t=touch ran", "--metrics", "time,watts"], "'watts'"),
    ];
    for (args, want) in cases {
        let mut all = vec!["compare", "-o", "cmp"];
        all.extend_from_slice(args);
        let r = heaplab_in(&d, &all);
        assert_eq!(r.code, 2, "{args:?}: {}", r.stderr);
        assert!(r.stderr.contains(want), "{args:?}: {}", r.stderr);
        assert!(!d.join("ran").exists() && !d.join("cmp").exists(), "{args:?} ran something");
    }
    let r = heaplab_in(&d, &["compare", "-o", "cmp"]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("nothing to compare"), "{}", r.stderr);
}

#[test]
fn an_interrupted_measurement_resumes() {
    let d = scratch!("resume");
    let args = ["compare", "--runs", "4", "--warmup", "1", "--metrics", "time,cpu,rss", "--config", "ref=glibc", "--config", "je=jemalloc", "--workload", "nap=sleep 0.2", "-o", "cmp"];
    let child = std::process::Command::new(BIN).args(args).current_dir(&d).env_remove("LD_PRELOAD").stdin(std::process::Stdio::null()).stdout(std::process::Stdio::null()).stderr(std::process::Stdio::piped()).spawn().unwrap();
    // Wait for 3 runs in the checkpoint, then stop heaplab as Ctrl-C or kill would.
    let file = d.join("cmp/results.json");
    let taken = |doc: &Value| -> usize { doc["series"].as_array().unwrap().iter().filter(|s| s["metric"] == "time").map(|s| s["values"].as_array().unwrap().len() + s["warmups"].as_array().unwrap().len()).sum() };
    let t0 = std::time::Instant::now();
    loop {
        let n = std::fs::read_to_string(&file).ok().and_then(|t| serde_json::from_str::<Value>(&t).ok()).map_or(0, |v| taken(&v));
        if n >= 3 {
            break;
        }
        assert!(t0.elapsed().as_secs() < 60, "no runs recorded");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    std::process::Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap();
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("interrupted") && err.contains("--resume"), "{err}");
    let before = json(&std::fs::read_to_string(&file).unwrap(), "checkpoint");
    let kept = taken(&before);
    assert!((3..10).contains(&kept), "{kept}");
    assert_eq!(before["provenance"]["complete"], false);
    // Other options do not resume it.
    let mut other = args.to_vec();
    other[2] = "5";
    other.push("--resume");
    let r = heaplab_in(&d, &other);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("other runs"), "{}", r.stderr);
    let mut again = args.to_vec();
    again.push("--resume");
    let r = heaplab_in(&d, &again);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stderr.contains(&format!("{kept} already done")), "{}", r.stderr);
    let after = results(&d);
    assert_eq!(taken(&after), 10);
    assert_eq!(after["provenance"]["resumed"], 1);
    // Every run taken before the interruption is still there, in its place.
    for s in before["series"].as_array().unwrap() {
        let t = series(&after, s["configuration"].as_str().unwrap(), "nap", s["metric"].as_str().unwrap());
        for k in ["values", "warmups"] {
            let (a, b) = (s[k].as_array().unwrap(), t[k].as_array().unwrap());
            assert_eq!(a[..], b[..a.len()], "{k}");
        }
    }
}

#[test]
fn l1d_misses_from_cachegrind() {
    crate::common::need("valgrind");
    let d = scratch!("l1d");
    input(&d);
    let r = heaplab_in(&d, &["compare", "--runs", "2", "--warmup", "0", "--metrics", "time,l1d", "--config", "ref=glibc", "--config", "je=jemalloc", "--workload", GZ, "-o", "cmp"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(d.join("cmp/ecdf-l1d.png").is_file());
    let doc = results(&d);
    assert_eq!(doc["metrics"][1], serde_json::json!({"name": "l1d", "unit": "miss", "better": "lower"}));
    for c in ["ref", "je"] {
        let v = series(&doc, c, "gz", "l1d")["values"].as_array().unwrap().clone();
        assert!(v.len() == 2 && v.iter().all(|x| x.as_f64().unwrap() > 100.0), "{v:?}");
    }
}

#[test]
fn default_suite_workloads_are_the_study_suite() {
    crate::common::need("jq");
    crate::common::need("lua5.4");
    let d = scratch!("suite");
    let r = heaplab_in(&d, &["compare", "--suite", "default", "--benchmarks", "jq,lua5.4", "--config", "glibc", "--config", "jemalloc", "--runs", "2", "--warmup", "0", "--metrics", "time,rss", "-o", "cmp"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let doc = results(&d);
    let plan = &doc["provenance"]["plan"];
    let names: Vec<&str> = plan["workloads"].as_array().unwrap().iter().map(|w| w["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["jq", "lua5.4"]);
    let jq = plan["workloads"][0]["command"].as_str().unwrap();
    assert!(jq.starts_with("LC_ALL=C jq -c ") && jq.ends_with(" records.json"), "{jq}");
    for w in ["jq", "lua5.4"] {
        assert_eq!(series(&doc, "jemalloc", w, "rss")["values"].as_array().unwrap().len(), 2);
    }
    // The suite's inputs lived in a scratch directory, not in the current one or the report.
    assert!(!d.join("records.json").exists() && !d.join("cmp/records.json").exists());
}

#[test]
fn default_suite_unknown_workload_and_set() {
    let d = scratch!("suite-bad");
    let r = heaplab_in(&d, &["compare", "--suite", "default", "--benchmarks", "nope", "--runs", "2", "-o", "cmp"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("--benchmarks nope") && r.stderr.contains("xmllint"), "{}", r.stderr);
    let r = heaplab_in(&d, &["compare", "--suite", "default", "--configs", "nope", "--runs", "2", "-o", "cmp"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("--configs nope") && r.stderr.contains("cpython-dsa"), "{}", r.stderr);
    assert!(!d.join("cmp").exists());
}
