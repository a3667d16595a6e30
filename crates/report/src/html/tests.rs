//! Tests of the HTML page on synthetic reports: every section is there, tags nest, hostile
//! names cannot break out, the page's size is bounded whatever the number of sites, and the
//! page works in a real browser (headless Chromium) with and without its script.

use super::*;
use crate::model::{AllocatorRow, Bin, DiffReport, Frame, Meta, Oracle, Report, Site, SiteDiff, SiteFigures, Snapshot, Summary, TimePoint};
use std::path::Path;

/// A name no page may let through unescaped.
const HOSTILE: &str = "</script><script>alert(1)</script><!--";

/// Deterministic pseudo-random numbers (a 64-bit LCG), enough to vary synthetic figures.
struct Lcg(u64);
impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        self.0 >> 33
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

fn frame(function: &str, file: &str, line: u32, module: &str, offset: u64, inlined: bool) -> Frame {
    Frame { function: function.into(), file: file.into(), line, module: module.into(), offset, inlined }
}

/// A plausible report of a program: `n` sites (site 0 unknown), stacks of about `depth` program
/// frames under an allocator entry and above the C runtime's start; sites share call paths when
/// `shared`, else draw their frames from a large pool (the worst case for the page's size).
fn synthetic(n: usize, depth: usize, shared: bool) -> Report {
    let mut g = Lcg(7);
    let mut frames = vec![
        frame("malloc", "", 0, "libc.so.6", 0x9a0e0, false),
        frame("operator new(unsigned long)", "", 0, "libstdc++.so.6", 0xae3c8, false),
        frame("__libc_start_call_main", "../sysdeps/nptl/libc_start_call_main.h", 58, "libc.so.6", 0x271ca, false),
        frame("__libc_start_main_impl", "../csu/libc-start.c", 360, "libc.so.6", 0x27285, false),
        frame("_start", "", 0, "demo", 0x1041, false),
        frame("main", "/src/demo/main.c", 88, "demo", 0x1200, false),
    ];
    const FUNCS: [&str; 12] = [
        "run_query", "btree_insert", "parse_json_value", "hash_table_resize", "read_line", "tokenize",
        "std::vector<std::pair<std::string, long>, std::allocator<std::pair<std::string, long> > >::_M_realloc_insert",
        "sqlite3VdbeExec", "render_page", "load_config", "compress_block", "Interpreter::eval",
    ];
    let pool = if shared { 60 } else { 20_000 };
    for k in 0..pool {
        let f = FUNCS[k % FUNCS.len()];
        let lib = k % 5 == 3;
        frames.push(frame(
            &if k < FUNCS.len() { f.to_string() } else { format!("{f}_{k}") },
            &format!("/src/demo/{}.c", ["db", "json", "net", "ui"][k % 4]),
            10 + (k as u32 * 7) % 900,
            if lib { "libsqlite3.so.0" } else { "demo" },
            0x2000 + k as u64 * 0x40,
            k % 9 == 4,
        ));
    }
    let hostile = frames.len() as u32;
    frames.push(frame(HOSTILE, "a<b>&\"c'.c", 3, "de\"mo<", 0x77, false));
    let mut sites = vec![Site { calls: 12, bytes: 4096, peak_bytes: 1024, max_live_bytes: 2048, ..Site::default() }];
    for i in 1..n {
        let mut stack = vec![if i % 3 == 0 { 1 } else { 0 }];
        if i == 3 {
            stack.push(hostile);
        }
        let d = 2 + (i % depth.max(3));
        let mut path: Vec<u32> = (0..d)
            .map(|k| 6 + if shared { ((i / (k + 1) + k * 5) % pool) as u32 } else { g.below(pool as u64) as u32 })
            .collect();
        path.dedup();
        stack.extend(path);
        stack.extend([5, 2, 3, 4]);
        let peak = if i < 40 { 3_000_000 / i as u64 + g.below(5000) } else { g.below(2000) };
        let calls = 1 + g.below(50_000) / (1 + i as u64 % 7);
        sites.push(Site {
            key: 0x9e37_79b9_7f4a_7c15u64.wrapping_mul(i as u64) | 1,
            stack,
            calls,
            bytes: calls * (16 + g.below(4096)),
            peak_bytes: peak,
            max_live_bytes: peak + g.below(100_000),
            temporary: if i % 4 == 0 { calls / 3 } else { 0 },
            leaked_blocks: if i % 11 == 0 { 1 + g.below(30) } else { 0 },
            leaked_bytes: if i % 11 == 0 { 64 + g.below(70_000) } else { 0 },
        });
    }
    let sum = |f: fn(&Site) -> u64| sites.iter().map(f).sum::<u64>();
    let peak_bytes = sum(|s| s.peak_bytes);
    let duration_ns = 2_400_000_000;
    let peak_ns = duration_ns * 6 / 10;
    let timeline: Vec<TimePoint> = (0..=600)
        .map(|k| {
            let ns = duration_ns * k / 600;
            let f = if ns <= peak_ns { ns as f64 / peak_ns as f64 } else { 1.0 - 0.7 * (ns - peak_ns) as f64 / (duration_ns - peak_ns) as f64 };
            let wobble = 1.0 - 0.08 * ((k as f64 / 9.0).sin().abs());
            let live = if ns == peak_ns { peak_bytes } else { (peak_bytes as f64 * f * wobble) as u64 };
            TimePoint { ns, live_bytes: live, live_blocks: live / 300 }
        })
        .collect();
    let snap = |ns: u64, scale: f64, g: &mut Lcg| {
        let mut s: Vec<(u32, u64)> = sites
            .iter()
            .enumerate()
            .filter(|(i, s)| s.peak_bytes > 0 && (scale == 1.0 || !(*i as u64 + g.below(3)).is_multiple_of(3)))
            .map(|(i, s)| (i as u32, ((s.peak_bytes as f64) * scale) as u64 + 1))
            .collect();
        s.sort_by_key(|x| std::cmp::Reverse(x.1));
        let other = s.iter().skip(1000).map(|x| x.1).sum();
        s.truncate(1000);
        let live = s.iter().map(|x| x.1).sum::<u64>() + other;
        Snapshot { ns, live_bytes: live, sites: s, other_bytes: other }
    };
    let mut snapshots = vec![snap(peak_ns, 1.0, &mut g)];
    for k in 1..8u64 {
        let ns = duration_ns * k / 8;
        let p = timeline[(ns * 600 / duration_ns) as usize].live_bytes as f64 / peak_bytes as f64;
        snapshots.push(snap(ns, p, &mut g));
    }
    let bins = |n: u32, f: &dyn Fn(u32) -> u64| -> Vec<Bin> {
        (0..n).map(|k| Bin { lo: if k == 0 { 0 } else { 1 << k }, hi: 2 << k, count: f(k), bytes: f(k) * (3 << k) / 2 }).collect()
    };
    let sizes = bins(24, &|k| if !(3..=20).contains(&k) { 0 } else { 40_000 >> (k as i32 - 7).unsigned_abs().min(16) });
    let lifetimes = bins(36, &|k| if k < 8 { 0 } else { 5000 + 3000 * (k % 5) as u64 });
    Report {
        version: crate::model::REPORT_VERSION,
        meta: Meta {
            trace: "/tmp/demo.hltrace".into(),
            executable: "/usr/bin/demo".into(),
            command: vec!["demo".into(), "--rows".into(), "1000".into()],
            pid: 4242,
            stack_depth: 16,
            threads: 2,
            duration_ns,
            ending: "exit 0".into(),
            complete: true,
        },
        summary: Summary {
            peak_bytes,
            peak_ns,
            peak_blocks: 12_345,
            peak_rss: Some(peak_bytes * 3 / 2 + 4_000_000),
            allocations: sum(|s| s.calls),
            frees: sum(|s| s.calls) - sum(|s| s.leaked_blocks),
            reallocs: 1234,
            bytes_allocated: sum(|s| s.bytes),
            temporary: sum(|s| s.temporary),
            leaked_blocks: sum(|s| s.leaked_blocks),
            leaked_bytes: sum(|s| s.leaked_bytes),
        },
        frames,
        sites,
        timeline,
        snapshots,
        sizes,
        lifetimes,
        oracle: Some(Oracle {
            lower_bound: peak_bytes,
            plan_bytes: peak_bytes + peak_bytes / 50,
            proven_optimal: false,
            plan_seconds: 1.8,
            allocator_pages_bytes: peak_bytes * 13 / 10,
        }),
        allocators: ["glibc", "jemalloc", "mimalloc", "tcmalloc"]
            .iter()
            .enumerate()
            .map(|(k, a)| AllocatorRow {
                name: a.to_string(),
                peak_bytes: peak_bytes * (125 + 9 * k as u64) / 100,
                fragmentation_pct: 12.5 + k as f64 * 3.0,
                over_plan_pct: Some(22.0 + 9.0 * k as f64),
            })
            .collect(),
        notes: vec!["3 frames have no debug info (libfoo.so): shown by module and offset.".into(), format!("note with {HOSTILE}")],
    }
}

/// A diff of two synthetic reports: sites changed, new and gone.
fn synthetic_diff(n: usize) -> DiffReport {
    let b = synthetic(n, 8, true);
    let mut a = synthetic(n, 8, true);
    let fig = |s: &Site| SiteFigures { calls: s.calls, bytes: s.bytes, peak_bytes: s.peak_bytes, temporary: s.temporary, leaked_bytes: s.leaked_bytes };
    for tp in &mut a.timeline {
        tp.live_bytes = tp.live_bytes * 11 / 10;
        tp.ns = tp.ns * 9 / 10;
    }
    let sites = (0..n)
        .map(|i| {
            let s = &b.sites[i];
            let mut after = fig(s);
            after.peak_bytes = after.peak_bytes * (8 + (i as u64 % 5)) / 10;
            after.calls += (i as u64 * 37) % 500;
            SiteDiff {
                key: s.key,
                stack: s.stack.clone(),
                before: if i % 13 == 5 { SiteFigures::default() } else { fig(s) },
                after: if i % 17 == 6 { SiteFigures::default() } else { after },
            }
        })
        .collect();
    DiffReport {
        version: crate::model::REPORT_VERSION,
        before: b.meta.clone(),
        after: a.meta.clone(),
        before_summary: b.summary.clone(),
        after_summary: Summary { peak_bytes: b.summary.peak_bytes * 11 / 10, ..a.summary.clone() },
        frames: b.frames.clone(),
        sites,
        before_timeline: b.timeline.clone(),
        after_timeline: a.timeline,
        notes: vec![format!("before: {HOSTILE}")],
    }
}

/// Checks that the page's elements nest (every non-void element closed in order), skipping
/// the contents of scripts and styles; returns the element names seen.
fn check_nesting(html: &str) -> Vec<String> {
    const VOID: [&str; 6] = ["meta", "br", "hr", "img", "input", "link"];
    let mut stack: Vec<String> = vec![];
    let mut seen = vec![];
    let mut rest = html;
    while let Some(lt) = rest.find('<') {
        rest = &rest[lt + 1..];
        let gt = rest.find('>').expect("a tag is closed by >");
        let tag = &rest[..gt];
        rest = &rest[gt + 1..];
        if tag.starts_with('!') {
            assert!(tag.eq_ignore_ascii_case("!doctype html"), "unexpected markup <{tag}>");
            continue;
        }
        let closing = tag.starts_with('/');
        let name: String = tag.trim_start_matches('/').chars().take_while(|c| c.is_ascii_alphanumeric()).collect();
        assert!(!name.is_empty(), "a bare < in the text: <{}", &tag[..tag.len().min(40)]);
        if closing {
            assert_eq!(stack.pop().as_deref(), Some(name.as_str()), "</{name}> closes something else");
        } else if !VOID.contains(&name.as_str()) && !tag.ends_with('/') {
            if name == "script" || name == "style" {
                let end = format!("</{name}>");
                let at = rest.find(&end).expect("script and style are closed");
                rest = &rest[at + end.len()..];
            } else {
                stack.push(name.clone());
            }
        }
        seen.push(name);
    }
    assert!(stack.is_empty(), "unclosed: {stack:?}");
    seen
}

/// The JSON the page embeds, parsed back.
fn embedded(html: &str) -> serde_json::Value {
    let open = "<script type=\"application/json\" id=\"report-data\">";
    let at = html.find(open).expect("the data is embedded") + open.len();
    let end = at + html[at..].find("</script>").expect("closed");
    serde_json::from_str(&html[at..end]).expect("the embedded data is JSON")
}

#[test]
fn the_page_has_every_section_and_its_tags_nest() {
    let html = render_report(&synthetic(50, 14, true));
    for id in [
        "summary", "oracle", "timeline", "timeline-svg", "flame", "flame-graph", "flame-svg", "sites", "by-peak",
        "by-bytes", "by-calls", "by-temporary", "leaks", "histograms", "allocators", "notes", "report-data",
        "js-errors", "selftest",
    ] {
        assert!(html.contains(&format!("id=\"{id}\"")), "no #{id}");
    }
    let tags = check_nesting(&html);
    assert_eq!(tags.iter().filter(|t| *t == "script").count(), 3, "the catcher, the data and the script");
    assert_eq!(tags.iter().filter(|t| *t == "main").count(), 2);
    // Self-contained: nothing is fetched.
    for needle in ["src=", "href=\"http", "url(", "@import"] {
        assert!(!html.contains(needle), "the page refers to {needle}");
    }
}

#[test]
fn the_page_reads_without_javascript() {
    let r = synthetic(50, 14, true);
    let html = render_report(&r);
    // The server drew the charts, the peak's flame graph, the tables and the stacks.
    assert!(html.contains("<path class=\"area live\""), "the heap over time is drawn");
    assert!(html.contains("<circle class=\"peak\""), "the peak is marked");
    assert!(html.contains(&format!("peak {} at {}", bytes(r.summary.peak_bytes), dur(r.summary.peak_ns))));
    assert!(html.matches("<g data-k=").count() > 20, "the flame graph has boxes");
    assert!(html.contains(">main</text>"), "frames are labelled in the flame graph");
    assert!(html.contains("<ol class=\"stack\""), "stacks are in <details>");
    assert!(html.matches("class=\"moment\"").count() == r.snapshots.len());
    assert!(html.contains(&bytes(r.summary.peak_bytes)));
    assert!(html.contains("class=\"chart hist\""));
    assert!(html.contains("class=\"chart alloc\""));
    assert!(html.contains("over the lower bound"), "the oracle's sentence");
    // Rows name the program's frame, not the allocator's.
    let by_peak = &html[html.find("id=\"by-peak\"").unwrap()..html.find("id=\"by-bytes\"").unwrap()];
    assert!(!by_peak.contains("<summary><b>malloc</b>"));
    assert!(!by_peak.contains("<summary><b>operator new"));
}

#[test]
fn hostile_names_are_escaped_everywhere() {
    let html = render_report(&synthetic(50, 14, true));
    assert!(!html.contains("alert(1)</script>"), "a name closed a script");
    assert!(!html.contains("<!--"), "a name opened a comment");
    assert!(html.contains("&lt;/script&gt;&lt;script&gt;alert(1)"), "the name is shown, escaped");
    let data = embedded(&html);
    let names = data["names"].as_array().unwrap();
    assert!(names.iter().any(|n| n[0] == HOSTILE), "the JSON keeps the name as it is");
    let d = render_diff(&synthetic_diff(50));
    assert!(!d.contains("alert(1)</script>") && !d.contains("<!--"));
    check_nesting(&d);
}

#[test]
fn the_embedded_data_draws_every_kept_snapshot() {
    let r = synthetic(50, 14, true);
    let data = embedded(&render_report(&r));
    let snaps = data["snapshots"].as_array().unwrap();
    assert_eq!(snaps.len(), r.snapshots.len());
    let nodes = data["nodes"].as_array().unwrap().len() / 2;
    for (s, rs) in snaps.iter().zip(&r.snapshots) {
        let leaves = s["leaves"].as_array().unwrap();
        let total: u64 = leaves.chunks(2).map(|p| p[1].as_u64().unwrap()).sum::<u64>() + s["other"].as_u64().unwrap();
        assert_eq!(total, rs.live_bytes, "every live byte is in a leaf or in other");
        assert!(leaves.chunks(2).all(|p| (p[0].as_u64().unwrap() as usize) < nodes));
    }
}

#[test]
fn the_page_stays_small_with_100000_sites() {
    let mut r = synthetic(100_000, 16, false);
    // Many moments of many unrelated sites: the flame graph's data must stay bounded too.
    let mut g = Lcg(3);
    r.snapshots = (0..200u64)
        .map(|k| {
            let sites: Vec<(u32, u64)> = (0..1000).map(|j| (1 + g.below(99_999) as u32, 1_000_000 - j * 900)).collect();
            let live = sites.iter().map(|s| s.1).sum::<u64>() + 12345;
            Snapshot { ns: k * 10_000_000, live_bytes: live, sites, other_bytes: 12345 }
        })
        .collect();
    let html = render_report(&r);
    eprintln!("report of 100,000 sites: {} bytes", html.len());
    assert!(html.len() < 2_000_000, "{} bytes", html.len());
    assert!(html.contains("more sites not shown"));
    assert!(html.matches("<tr>").count() <= 5 * TABLE_ROWS + 10);
    check_nesting(&html);
    let d = synthetic_diff(100_000);
    let page = render_diff(&d);
    eprintln!("diff of 100,000 sites: {} bytes", page.len());
    assert!(page.len() < 2_000_000, "{} bytes", page.len());
    assert!(page.contains("more changed sites not shown"));
    check_nesting(&page);
}

#[test]
fn the_diff_page_shows_changes_new_and_gone_sites() {
    let d = synthetic_diff(50);
    let html = render_diff(&d);
    for id in ["summary", "timeline", "timeline-svg", "sites", "notes", "report-data"] {
        assert!(html.contains(&format!("id=\"{id}\"")), "no #{id}");
    }
    assert!(html.contains("<path class=\"line before\"") && html.contains("<path class=\"line after\""));
    assert!(html.contains("<span class=\"tag new\">new</span> <b>"));
    assert!(html.contains("<span class=\"tag gone\">gone</span> <b>"));
    let dp = d.after_summary.peak_bytes as i128 - d.before_summary.peak_bytes as i128;
    assert!(html.contains(&delta(dp, true)), "the peak's change");
    // Rows by change of peak bytes, largest first.
    let body = &html[html.find("<tbody>").unwrap()..];
    let changes: Vec<i128> = body
        .split("<td data-v=\"")
        .skip(1)
        .collect::<Vec<_>>()
        .chunks(7)
        .filter(|c| c.len() == 7)
        .map(|c| c[2].split('"').next().unwrap().parse::<i128>().unwrap().abs())
        .collect();
    assert!(changes.len() > 10);
    assert!(changes.windows(2).all(|w| w[0] >= w[1]), "{changes:?}");
}

#[test]
fn numbers_read_well() {
    assert_eq!(dur(850), "850 ns");
    assert_eq!(dur(12_300), "12.3 µs");
    assert_eq!(dur(4_560_000), "4.56 ms");
    assert_eq!(dur(1_230_000_000), "1.23 s");
    assert_eq!(dur(123_000_000_000), "2 min 3 s");
    assert_eq!(pct(1, 3), "33.3%");
    assert_eq!(pct(1, 10_000), "<0.1%");
    assert_eq!(delta(-2048, true), "−2.00 KiB");
    assert_eq!(delta(5, false), "+5");
}

#[test]
fn empty_reports_render() {
    let html = render_report(&Report::default());
    check_nesting(&html);
    assert!(html.contains("No timeline in this report."));
    assert!(html.contains("No snapshot of live bytes"));
    check_nesting(&render_diff(&DiffReport::default()));
}

// ---- in a real browser ----

/// Writes `html` as `file` and opens it in Chromium: its script runs without an error, sets
/// the ready marker and passes its self-test of the interaction; a screenshot is saved beside.
fn check_in_browser(chrome: &Path, html: &str, file: &Path, want: &[&str]) {
    std::fs::write(file, html).unwrap();
    crate::browser::check_scripted(chrome, file, want);
    crate::browser::screenshot(chrome, file);
}

#[test]
fn the_page_works_in_a_real_browser() {
    let Some(chrome) = crate::browser::chromium() else {
        eprintln!("skipped: chromium not found");
        return;
    };
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/tmp/report-html");
    std::fs::create_dir_all(&dir).unwrap();
    let dir = dir.canonicalize().unwrap();
    check_in_browser(
        &chrome,
        &render_report(&synthetic(60, 14, true)),
        &dir.join("synthetic.html"),
        &[
            "class=\"tabbar\"",
            "data-drawn=\"js\"",
            "\"clicked_moment\":7",
            "\"zoomed\":true",
            "\"sorted\":true",
            "id=\"summary\"",
            "id=\"timeline-svg\"",
        ],
    );
    check_in_browser(
        &chrome,
        &render_diff(&synthetic_diff(60)),
        &dir.join("synthetic-diff.html"),
        &["\"sorted\":true", "id=\"timeline-svg\""],
    );
}
