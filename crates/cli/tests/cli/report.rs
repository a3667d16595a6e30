//! `heaplab report` and `heaplab trace --limit-*` on `tests/programs/report.c`, whose peak, top
//! site, leaks and temporaries are known exactly (see the program's comment), and against
//! heaptrack_print on the same program.

use crate::common::{heaplab_in, json, need, ok_json};
use serde_json::Value;
use std::path::Path;
use std::process::Command;

/// report.c compiled with debug info into `dir` (-O0: each loop's call is one call site).
pub fn compile(dir: &Path) -> String {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/programs/report.c");
    let out = dir.join("report");
    let st = Command::new("cc").args(["-O0", "-g", "-o"]).arg(&out).arg(&src).status();
    assert!(st.is_ok_and(|s| s.success()), "cannot compile report.c: a C compiler (cc) is required");
    out.to_string_lossy().into_owned()
}

/// Traces report.c with argument `n` into `dir/name`.
pub fn traced(dir: &Path, prog: &str, n: u32, name: &str) -> String {
    let r = heaplab_in(dir, &["trace", "--stack-depth", "16", "-o", name, "--", prog, &n.to_string()]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    name.to_string()
}

/// The innermost named function of a site of a report's JSON.
fn function(report: &Value, site: &Value) -> String {
    let frames = report["frames"].as_array().unwrap();
    site["stack"].as_array().unwrap().iter().map(|i| frames[i.as_u64().unwrap() as usize]["function"].as_str().unwrap().to_string()).find(|f| !f.is_empty()).unwrap_or_default()
}

fn site_of<'a>(report: &'a Value, f: &str) -> &'a Value {
    report["sites"].as_array().unwrap().iter().find(|s| function(report, s) == f).unwrap_or_else(|| panic!("no site in {f}"))
}

const PEAK: u64 = 1_000_000 + 100 * 1000 + 3 * 4096;

#[test]
fn the_known_program_reports_its_peak_top_site_leaks_and_temporaries_exactly() {
    let dir = scratch!("known");
    let prog = compile(&dir);
    let t = traced(&dir, &prog, 1, "run.hltrace");
    let r = ok_json(&dir, &["report", &t, "--json"]);
    let s = &r["summary"];
    assert_eq!(s["peak_bytes"], PEAK);
    assert_eq!(s["peak_blocks"], 104);
    assert_eq!(s["allocations"], 154);
    assert_eq!(s["frees"], 151);
    assert_eq!(s["temporary"], 50);
    assert_eq!((s["leaked_blocks"].as_u64(), s["leaked_bytes"].as_u64()), (Some(3), Some(12_288)));
    // The top site by bytes at the peak, with its file and line.
    let top = r["sites"].as_array().unwrap().iter().max_by_key(|x| x["peak_bytes"].as_u64()).unwrap();
    assert_eq!(function(&r, top), "make_table");
    assert_eq!(top["peak_bytes"], 1_000_000);
    let f = &r["frames"][top["stack"][0].as_u64().unwrap() as usize];
    assert!(f["file"].as_str().unwrap().ends_with("report.c") && f["line"].as_u64().unwrap() > 0, "{f}");
    assert_eq!(site_of(&r, "make_nodes")["peak_bytes"], 100_000);
    assert_eq!(site_of(&r, "make_nodes")["calls"], 100);
    assert_eq!(site_of(&r, "scratch")["temporary"], 50);
    assert_eq!(site_of(&r, "leak_some")["leaked_bytes"], 12_288);
    // The oracle of so small a heap is planned, and no plan beats the peak.
    let o = &r["oracle"];
    assert!(o["plan_bytes"].as_u64().unwrap() >= o["lower_bound"].as_u64().unwrap());
    assert!(o["lower_bound"].as_u64().unwrap() >= PEAK);
    // The text view: the summary and the tables with stacks.
    let text = heaplab_in(&dir, &["report", &t, "--top", "3"]);
    assert_eq!(text.code, 0, "{}", text.stderr);
    assert!(text.stdout.contains("1,112,288 B requested"), "{}", text.stdout);
    for want in ["MOST MEMORY AT THE PEAK", "from make_table (programs/report.c:", "at make_table (programs/report.c:", "MOST TEMPORARY", "LEAKS", "from leak_some"] {
        assert!(text.stdout.contains(want), "{want} missing:\n{}", text.stdout);
    }
    // --at the peak's moment: the nodes and the table are live.
    let peak_s = format!("{}ns", s["peak_ns"].as_u64().unwrap());
    let at = heaplab_in(&dir, &["report", &t, "--at", &peak_s]);
    assert_eq!(at.code, 0, "{}", at.stderr);
    assert!(at.stdout.contains("make_table") && at.stdout.contains("make_nodes"), "{}", at.stdout);
}

#[test]
fn the_report_directory_holds_a_page_and_the_json_and_is_replaced() {
    let dir = scratch!("dir");
    let prog = compile(&dir);
    let t = traced(&dir, &prog, 1, "run.hltrace");
    for _ in 0..2 {
        let r = heaplab_in(&dir, &["report", &t, "-o", "out/"]);
        assert_eq!(r.code, 0, "{}", r.stderr);
    }
    let html = std::fs::read_to_string(dir.join("out/index.html")).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>") && html.contains("make_table"));
    let j = json(&std::fs::read_to_string(dir.join("out/report.json")).unwrap(), "report.json");
    assert_eq!(j["summary"]["peak_bytes"], PEAK);
    // A directory holding something else is not overwritten.
    std::fs::create_dir(dir.join("other")).unwrap();
    std::fs::write(dir.join("other/mine.txt"), "x").unwrap();
    let r = heaplab_in(&dir, &["report", &t, "-o", "other"]);
    assert_eq!(r.code, 2);
    assert!(dir.join("other/mine.txt").exists());
}

#[test]
fn bad_input_exits_2_with_a_clear_message() {
    let dir = scratch!("bad");
    let prog = compile(&dir);
    let t = traced(&dir, &prog, 1, "run.hltrace");
    let r = heaplab_in(&dir, &["report", "missing.hltrace"]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("missing.hltrace") && r.stderr.contains("No such file"), "{}", r.stderr);
    std::fs::write(dir.join("text.hltrace"), "hello\n").unwrap();
    let r = heaplab_in(&dir, &["report", "text.hltrace"]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("not a heaplab trace"), "{}", r.stderr);
    // Cut inside the events: damaged, refused unless asked for.
    let bytes = std::fs::read(dir.join(&t)).unwrap();
    std::fs::write(dir.join("cut.hltrace"), &bytes[..bytes.len() / 2]).unwrap();
    let r = heaplab_in(&dir, &["report", "cut.hltrace"]);
    assert_eq!(r.code, 2, "{}", r.stdout);
    assert!(r.stderr.contains("cut.hltrace") && r.stderr.contains("--allow-truncated"), "{}", r.stderr);
    let r = heaplab_in(&dir, &["report", "cut.hltrace", "--allow-truncated", "--json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(json(&r.stdout, "report")["meta"]["complete"], false);
    for bad in [&["--at", "soon"][..], &["--limit-peak", "12 parsecs"], &["--top", "0"]] {
        let mut args = vec!["report", t.as_str()];
        args.extend_from_slice(bad);
        assert_eq!(heaplab_in(&dir, &args).code, 2, "{bad:?}");
    }
}

#[test]
fn ci_limits_exit_1_naming_the_site() {
    let dir = scratch!("limits");
    let prog = compile(&dir);
    let r = heaplab_in(&dir, &["trace", "--stack-depth", "16", "--limit-peak", "1MB", "-o", "a.hltrace", "--", &prog]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(r.stderr.contains("--limit-peak exceeded") && r.stderr.contains("at the peak: make_table"), "{}", r.stderr);
    let r = heaplab_in(&dir, &["trace", "--stack-depth", "16", "--limit-peak", "2MiB", "--limit-leaks", "12288", "--limit-allocations", "154", "-o", "b.hltrace", "--", &prog]);
    assert_eq!(r.code, 0, "limits met exactly pass: {}", r.stderr);
    let r = heaplab_in(&dir, &["report", "b.hltrace", "--limit-leaks", "1KiB"]);
    assert_eq!(r.code, 1);
    assert!(r.stderr.contains("--limit-leaks exceeded") && r.stderr.contains("leak_some"), "{}", r.stderr);
    let r = heaplab_in(&dir, &["report", "b.hltrace", "--limit-allocations", "100", "--json"]);
    assert_eq!(r.code, 1);
    assert!(r.stderr.contains("make_nodes"), "{}", r.stderr);
    // A failing program keeps its own exit status.
    let r = heaplab_in(&dir, &["trace", "--limit-peak", "1", "-o", "c.hltrace", "--", "sh", "-c", "exit 3"]);
    assert_eq!(r.code, 1);
    assert!(r.stderr.contains("limits not checked"), "{}", r.stderr);
}

#[test]
fn the_diff_of_two_inputs_shows_the_changed_site() {
    let dir = scratch!("diff");
    let prog = compile(&dir);
    let a = traced(&dir, &prog, 1, "a.hltrace");
    let b = traced(&dir, &prog, 5, "b.hltrace");
    let d = ok_json(&dir, &["report", &a, "--diff", &b, "--json"]);
    let first = &d["sites"][0];
    let frames = d["frames"].as_array().unwrap();
    let names: Vec<&str> = first["stack"].as_array().unwrap().iter().map(|i| frames[i.as_u64().unwrap() as usize]["function"].as_str().unwrap()).collect();
    assert_eq!(names[0], "make_nodes", "{first}");
    assert_eq!((first["before"]["peak_bytes"].as_u64(), first["after"]["peak_bytes"].as_u64()), (Some(100_000), Some(500_000)));
    assert_eq!(d["after_summary"]["peak_bytes"], PEAK + 400_000);
    let t = heaplab_in(&dir, &["report", &a, "--diff", &b]);
    assert_eq!(t.code, 0, "{}", t.stderr);
    assert!(t.stdout.contains("SITES THAT CHANGED MOST") && t.stdout.contains("make_nodes"), "{}", t.stdout);
    let o = heaplab_in(&dir, &["report", &a, "--diff", &b, "-o", "d"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(dir.join("d/index.html").is_file() && dir.join("d/report.json").is_file());
}

/// heaptrack_print's sizes: "1000.00K", "12.29K", "1.18M", "0B" (powers of 1000).
fn ht_bytes(s: &str) -> f64 {
    let (n, k) = match s.chars().last() {
        Some('K') => (&s[..s.len() - 1], 1e3),
        Some('M') => (&s[..s.len() - 1], 1e6),
        Some('G') => (&s[..s.len() - 1], 1e9),
        _ => (s.trim_end_matches('B'), 1.0),
    };
    n.parse::<f64>().unwrap_or_else(|_| panic!("heaptrack size {s:?}")) * k
}

#[test]
fn figures_agree_with_heaptrack_print() {
    need("heaptrack");
    need("heaptrack_print");
    let dir = scratch!("heaptrack");
    let prog = compile(&dir);
    let t = traced(&dir, &prog, 1, "run.hltrace");
    let r = ok_json(&dir, &["report", &t, "--json", "--oracle", "off"]);
    let st = Command::new("heaptrack").args(["-o", "ht"]).arg(&prog).arg("1").current_dir(&dir).output().unwrap();
    assert!(st.status.success(), "heaptrack: {}", String::from_utf8_lossy(&st.stderr));
    let out = Command::new("heaptrack_print").args(["-f", "ht.zst", "-n", "5", "-s", "1"]).current_dir(&dir).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let line = |prefix: &str| text.lines().find_map(|l| l.strip_prefix(prefix)).unwrap_or_else(|| panic!("no {prefix:?} in\n{text}")).trim().to_string();
    // Peak consumers: "X peak memory consumed over N calls from" then the function.
    let lines: Vec<&str> = text.lines().collect();
    let mut peaks: Vec<(String, f64)> = Vec::new();
    for (k, l) in lines.iter().enumerate() {
        if let Some(x) = l.strip_suffix(" calls from").and_then(|l| l.split_once(" peak memory consumed over ")) {
            peaks.push((lines[k + 1].trim().to_string(), ht_bytes(x.0)));
        }
    }
    // The program's own sites come first in both, with the same bytes (heaptrack rounds to
    // 0.01 of its unit).
    let ours = |f: &str| site_of(&r, f)["peak_bytes"].as_u64().unwrap() as f64;
    for (k, f) in ["make_table", "make_nodes"].iter().enumerate() {
        assert_eq!(peaks[k].0, *f, "{text}");
        assert!((peaks[k].1 - ours(f)).abs() <= ours(f) * 1e-4 + 10.0, "{f}: heaptrack {} vs {}", peaks[k].1, ours(f));
    }
    let leaked = ht_bytes(&line("total memory leaked:"));
    assert!((leaked - 12_288.0).abs() <= 10.0, "heaptrack leaked {leaked}");
    assert_eq!(r["summary"]["leaked_bytes"], 12_288);
    // heaptrack's peak includes what its own preloaded library's libstdc++ allocates at start
    // (its exception pool, a site heaplab's trace never sees): the peak differs by those sites.
    let extra: f64 = peaks.iter().filter(|(f, _)| !["make_table", "make_nodes", "leak_some", "scratch", "main"].contains(&f.as_str())).map(|p| p.1).sum();
    let ht_peak = ht_bytes(&line("peak heap memory consumption:"));
    let ours_peak = r["summary"]["peak_bytes"].as_f64().unwrap();
    assert!((ht_peak - extra - ours_peak).abs() <= ht_peak * 0.01, "heaptrack peak {ht_peak} - its own {extra} vs {ours_peak}\n{text}");
}

#[test]
fn allocators_replaying_the_trace_stand_beside_the_plan() {
    let dir = scratch!("allocators");
    let prog = compile(&dir);
    let t = traced(&dir, &prog, 1, "run.hltrace");
    let r = ok_json(&dir, &["report", &t, "--json", "--replay", "glibc,jemalloc"]);
    let rows = r["allocators"].as_array().unwrap();
    let names: Vec<&str> = rows.iter().map(|a| a["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["glibc", "jemalloc"]);
    let (bound, plan) = (r["oracle"]["lower_bound"].as_u64().unwrap(), r["oracle"]["plan_bytes"].as_u64().unwrap());
    for a in rows {
        // Pages touched by the live blocks hold at least the live bytes, and not wildly more.
        let peak = a["peak_bytes"].as_u64().unwrap();
        assert!(peak >= bound && peak < 4 * bound, "{a}");
        let frag = a["fragmentation_pct"].as_f64().unwrap();
        assert!((0.0..100.0).contains(&frag), "{a}");
        let over = a["over_plan_pct"].as_f64().unwrap();
        assert!((over - (peak as f64 - plan as f64) * 100.0 / plan as f64).abs() < 1e-6, "{a}");
    }
    // A replay made before reads the same; the terminal shows the table.
    let p = heaplab_in(&dir, &["replay", &t, "--allocator", "glibc", "-o", "run.glibc.hlplaced"]);
    assert_eq!(p.code, 0, "{}", p.stderr);
    let again = ok_json(&dir, &["report", &t, "--json", "--placed", "run.glibc.hlplaced"]);
    assert_eq!(again["allocators"][0]["name"], "glibc");
    assert_eq!(again["allocators"][0]["peak_bytes"], rows[0]["peak_bytes"]);
    let text = heaplab_in(&dir, &["report", &t, "--placed", "run.glibc.hlplaced", "--top", "1"]);
    assert_eq!(text.code, 0, "{}", text.stderr);
    assert!(text.stdout.contains("ALLOCATORS REPLAYING THE TRACE") && text.stdout.contains("  glibc ") && text.stdout.contains("lower bound"), "{}", text.stdout);
    // Bad allocators and placed files: exit 2, named.
    for (args, want) in [
        (&["--replay", "glibc,nosuchalloc"][..], "nosuchalloc"),
        (&["--replay", ""], "no allocator"),
        (&["--placed", "missing.hlplaced"], "missing.hlplaced"),
        (&["--placed", "run.hltrace"], "run.hltrace"),
        (&["--replay", "glibc", "--at", "50%"], "--at"),
    ] {
        let mut all = vec!["report", t.as_str()];
        all.extend_from_slice(args);
        let r = heaplab_in(&dir, &all);
        assert_eq!(r.code, 2, "{args:?}: {}", r.stderr);
        assert!(r.stderr.contains(want), "{args:?}: {}", r.stderr);
    }
}
