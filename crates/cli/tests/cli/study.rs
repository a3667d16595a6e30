//! End-to-end tests of `heaplab study` beyond the small report of the `replay` module: the
//! correlation has one point per allocator and its p-value is the exact one (checked here
//! against a brute-force enumeration over the allocators' numbers in the JSON), the report says
//! what the test cannot show, a failing workload shows the end of its standard error, and an
//! unusable output directory is a usage error (exit 2) before anything runs.
//!
//! The allocators (libjemalloc2, libmimalloc2.0, libtcmalloc-minimal4) and perl must be
//! installed (`make test` installs them).

use crate::common::{heaplab_in, Run};
use serde_json::Value;
use std::time::{Duration, Instant};

/// Average ranks (1-based), written independently of the crate's.
fn avg_ranks(v: &[f64]) -> Vec<f64> {
    v.iter().map(|x| v.iter().filter(|y| *y < x).count() as f64 + (v.iter().filter(|y| *y == x).count() as f64 + 1.0) / 2.0).collect()
}

fn pearson(a: &[f64], b: &[f64]) -> f64 {
    let n = a.len() as f64;
    let (ma, mb) = (a.iter().sum::<f64>() / n, b.iter().sum::<f64>() / n);
    let cov: f64 = a.iter().zip(b).map(|(x, y)| (x - ma) * (y - mb)).sum();
    let va: f64 = a.iter().map(|x| (x - ma) * (x - ma)).sum();
    let vb: f64 = b.iter().map(|y| (y - mb) * (y - mb)).sum();
    cov / (va * vb).sqrt()
}

/// Every permutation of `v` (recursive insertion, so not the crate's Heap's algorithm).
fn permutations(v: &[f64]) -> Vec<Vec<f64>> {
    if v.len() <= 1 {
        return vec![v.to_vec()];
    }
    let mut out = Vec::new();
    for p in permutations(&v[1..]) {
        for k in 0..=p.len() {
            let mut q = p.clone();
            q.insert(k, v[0]);
            out.push(q);
        }
    }
    out
}

/// (ρ, exact two-sided p, smallest possible p) by brute force.
fn exact_spearman(x: &[f64], y: &[f64]) -> (f64, f64, f64) {
    let (rx, ry) = (avg_ranks(x), avg_ranks(y));
    let rho = pearson(&rx, &ry);
    let all: Vec<f64> = permutations(&ry).iter().map(|p| pearson(&rx, p).abs()).collect();
    let top = all.iter().cloned().fold(0.0, f64::max);
    let n = all.len() as f64;
    (rho, all.iter().filter(|&&r| r >= rho.abs() - 1e-9).count() as f64 / n, all.iter().filter(|&&r| r >= top - 1e-9).count() as f64 / n)
}

#[test]
fn correlation_is_over_allocators_with_the_exact_p() {
    let dir = scratch!("exact");
    let script = "my %h; for my $i (1..4000) { $h{\"k$i\"} = [$i, 'v' x ($i % 30)]; } print scalar(keys %h), \"\\n\";";
    let Run { code, stdout: out, stderr: err } = heaplab_in(&dir, &["study", "--allocators", "glibc,jemalloc,mimalloc,tcmalloc", "--runs", "3", "-o", "rep", "--json", "--", "perl", "-e", script]);
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("not JSON ({e}): {out}"));
    let w = &v["workloads"][0];
    // Each workload names the machine it ran on: here the study's own.
    assert!(v["machine"]["host"].is_string() && v["machine"]["cores"].as_u64().unwrap() >= 1, "{}", v["machine"]);
    assert_eq!(w["machine"], v["machine"]);
    let allocs = w["allocators"].as_array().unwrap();
    assert_eq!(allocs.len(), 4);
    // One point per allocator: its fragmentation and the median of its 3 runs' peak RSS.
    let mut ext = Vec::new();
    let mut rss = Vec::new();
    for a in allocs {
        let mut peaks: Vec<f64> = a["runs"].as_array().unwrap().iter().map(|r| r["peak_rss_rusage_bytes"].as_f64().unwrap()).collect();
        assert_eq!(peaks.len(), 3);
        peaks.sort_by(f64::total_cmp);
        assert_eq!(a["peak_rss_median_bytes"].as_f64().unwrap(), peaks[1], "{a}");
        assert_eq!((a["peak_rss_min_bytes"].as_f64().unwrap(), a["peak_rss_max_bytes"].as_f64().unwrap()), (peaks[0], peaks[2]));
        ext.push(a["external"].as_f64().unwrap());
        rss.push(peaks[1]);
    }
    let s = &w["spearman_external"];
    assert_eq!(s["n"], 4, "4 points, not 12 allocator x run pairs: {s}");
    assert_eq!(s["test"], "exact permutation");
    let (rho, p, p_min) = exact_spearman(&ext, &rss);
    assert!((s["rho"].as_f64().unwrap() - rho).abs() < 1e-9, "{s} vs rho {rho}");
    assert!((s["p"].as_f64().unwrap() - p).abs() < 1e-9, "{s} vs p {p}");
    assert!((s["p_min"].as_f64().unwrap() - p_min).abs() < 1e-9, "{s} vs p_min {p_min}");
    // Whatever the numbers, 4 points cannot give p < 2/24.
    assert!(p >= 1.0 / 12.0 - 1e-12);
    // The limits are said everywhere: JSON, Markdown, HTML and the human table.
    let limits: Vec<&str> = v["interpretation"].as_array().unwrap().iter().map(|l| l.as_str().unwrap()).collect();
    assert!(limits.iter().any(|l| l.contains("2/24 = 0.0833") && l.contains("p < 0.05 cannot occur")), "{limits:?}");
    assert!(limits.iter().any(|l| l.contains("cannot show causation")), "{limits:?}");
    let md = std::fs::read_to_string(dir.join("rep/report.md")).unwrap();
    let html = std::fs::read_to_string(dir.join("rep/index.html")).unwrap();
    for text in [&md, &html] {
        assert!(text.contains("What this can and cannot show") && text.contains("0.0833"));
        assert!(!text.contains("the command given"), "the stray description line is back");
    }
    assert!(md.contains("range over runs"));
    let Run { code, stdout: out, stderr: err } = heaplab_in(&dir, &["study", "--allocators", "glibc,jemalloc,mimalloc,tcmalloc", "--runs", "2", "-o", "rep", "--", "perl", "-e", script]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("p < 0.05 cannot occur") && out.contains("runs "), "{out}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_failing_workload_shows_the_end_of_its_standard_error() {
    let dir = scratch!("fail");
    // Fails while traced: the program's own error must be shown.
    let Run { code, stdout: out, stderr: err } = heaplab_in(&dir, &["study", "--allocators", "glibc", "--runs", "2", "-o", "r", "--", "sh", "-c", "ls /nonexistent"]);
    assert_eq!(code, 1, "{out}{err}");
    for text in [&out, &err] {
        assert!(text.contains("exited with status 2") && text.contains("/nonexistent") && text.contains("No such file or directory"), "{text}");
    }
    // Traced fine, fails in the measured runs (which do not set HEAPLAB_TRACE), after 30 lines
    // of output: the last 20 are shown, the first ten are not.
    let script = "if [ -z \"$HEAPLAB_TRACE\" ]; then for i in $(seq 1 30); do echo \"noise $i\" >&2; done; echo 'boom: out of luck' >&2; exit 3; fi";
    let Run { code, stdout: out, stderr: err } = heaplab_in(&dir, &["study", "--allocators", "glibc", "--runs", "1", "-o", "r", "--json", "--", "sh", "-c", script]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(err.contains("run 1 under glibc exited with status 3") && err.contains("boom: out of luck") && err.contains("noise 30"), "{err}");
    assert!(!err.contains("noise 11\n") && !err.contains("noise 1\n"), "more than 20 lines: {err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert!(v["workloads"][0]["error"].as_str().unwrap().contains("boom: out of luck"), "{v}");
    let md = std::fs::read_to_string(dir.join("r/report.md")).unwrap();
    assert!(md.contains("boom: out of luck"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn an_unusable_output_directory_is_a_usage_error_before_anything_runs() {
    let dir = scratch!("outdir");
    std::fs::write(dir.join("file"), "x").unwrap();
    let ro = dir.join("ro");
    std::fs::create_dir(&ro).unwrap();
    let mut cases: Vec<(String, &str)> = vec![
        ("/nonexistent/dir/r".into(), "/nonexistent/dir does not exist"),
        ("file/r".into(), "file is not a directory"),
        // Not writable even for root.
        ("/sys/r".into(), "cannot write the report in /sys"),
    ];
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&ro, std::fs::Permissions::from_mode(0o555)).unwrap();
        // Root writes into a read-only directory anyway: the case only holds for other users.
        if std::fs::create_dir(ro.join("probe")).is_err() {
            cases.push(("ro/r".into(), "cannot write the report in ro"));
        }
    }
    for (out, want) in &cases {
        // A long-running workload: the error must come before it starts.
        let t0 = Instant::now();
        let Run { code, stderr: err, .. } = heaplab_in(&dir, &["study", "--runs", "1", "-o", out, "--", "sleep", "30"]);
        assert_eq!(code, 2, "-o {out}: {err}");
        assert!(err.contains(want) && err.contains(&format!("-o {out}")), "-o {out}: {err}");
        assert!(!err.contains("tracing") && t0.elapsed() < Duration::from_secs(10), "-o {out}: it ran first: {err}");
    }
    let left: Vec<String> = std::fs::read_dir(&dir).unwrap().flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect();
    assert_eq!(left.len(), 2, "nothing left behind: {left:?}");
    {
        use std::os::unix::fs::PermissionsExt;
        let _ = std::fs::set_permissions(&ro, std::fs::Permissions::from_mode(0o755));
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn studies_made_apart_are_gathered_into_one_report() {
    let dir = scratch!("gather");
    let script = "my @a; for my $i (1..2000) { push @a, 'x' x ($i % 50 + 1); } print scalar(@a), \"\\n\";";
    for (out, runs) in [("a", "2"), ("b", "2"), ("c", "1")] {
        let Run { code, stderr: err, .. } = heaplab_in(&dir, &["study", "--allocators", "glibc,jemalloc", "--runs", runs, "-o", out, "--", "perl", "-e", script]);
        assert_eq!(code, 0, "{err}");
    }
    let Run { code, stdout: out, stderr: err } = heaplab_in(&dir, &["study", "--gather", "a", "b/results.json", "-o", "all", "--json"]);
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    let read = |p: &str| serde_json::from_str::<Value>(&std::fs::read_to_string(dir.join(p)).unwrap()).unwrap();
    assert_eq!(read("all/results.json"), v);
    // Two workloads of one name are told apart; every number is the original study's.
    let names: Vec<&str> = v["workloads"].as_array().unwrap().iter().map(|w| w["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["perl", "perl-2"]);
    assert_eq!(v["runs_per_allocator"], 2);
    for (k, src) in ["a/results.json", "b/results.json"].iter().enumerate() {
        let mut w = read(src)["workloads"][0].clone();
        w["name"] = v["workloads"][k]["name"].clone();
        assert_eq!(v["workloads"][k], w, "{src}");
    }
    assert!(dir.join("all/perl-2-scatter.png").is_file() && dir.join("all/index.html").is_file());
    // Studies made differently are refused, naming the odd one; so is a command beside --gather.
    let Run { code, stderr: err, .. } = heaplab_in(&dir, &["study", "--gather", "a", "c", "-o", "all2"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("c/results.json: made with 1 runs per allocator") && err.contains("only studies made alike"), "{err}");
    let Run { code, stderr: err, .. } = heaplab_in(&dir, &["study", "--gather", "a", "-o", "all2", "--", "true"]);
    assert_eq!(code, 2, "{err}");
    let Run { code, stderr: err, .. } = heaplab_in(&dir, &["study", "--gather", "nowhere", "-o", "all2"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("nowhere: "), "{err}");
    assert!(!dir.join("all2").exists());
    let _ = std::fs::remove_dir_all(&dir);
}
