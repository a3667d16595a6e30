//! End-to-end tests of `heaplab replay`, `heaplab frag` and `heaplab study`: a multi-threaded
//! test program traced and replayed (valid, deterministic placements), the metric on the
//! thesis' figure 3.1 drawn as a CSV file, bad allocators and bad files (exit 2), and a small
//! study (two allocators, two runs) whose report is complete.
//!
//! The allocators (libjemalloc2, libmimalloc2.0, libtcmalloc-minimal4) and the suite's programs
//! must be installed (`make test` and `.ci/run` install them).

use crate::common::{heaplab_in, ok_json, prog, Run};
use serde_json::Value;
use std::path::Path;

/// A trace of tests/programs/threads.c: 4 threads × 300 rounds of every allocation function.
fn threads_trace(dir: &Path) -> String {
    let Run { code, stderr: err, .. } = heaplab_in(dir, &["trace", "-o", "t.hltrace", "--", &prog("threads"), "4", "300"]);
    assert_eq!(code, 0, "{err}");
    "t.hltrace".into()
}

/// (job, address − lowest address of its mapping, usable) from a placed file's CSV export.
fn normalised(dir: &Path, placed: &str) -> Vec<(u64, u64, u64)> {
    let csv = format!("{placed}.csv");
    let Run { code, stderr: err, .. } = heaplab_in(dir, &["convert", placed, "-o", &csv]);
    assert_eq!(code, 0, "{err}");
    let text = std::fs::read_to_string(dir.join(&csv)).unwrap();
    let rows: Vec<Vec<u64>> = text.lines().skip(1).map(|l| l.split(',').map(|f| f.parse().unwrap()).collect()).collect();
    let mut base = std::collections::HashMap::new();
    for r in &rows {
        let b = base.entry(r[1]).or_insert(u64::MAX);
        *b = (*b).min(r[7]);
    }
    let mut v: Vec<(u64, u64, u64)> = rows.iter().map(|r| (r[0], r[7] - base[&r[1]], r[6])).collect();
    v.sort_unstable();
    v
}

#[test]
fn multithreaded_trace_replays_deterministically() {
    let dir = scratch!("threads");
    let t = threads_trace(&dir);
    for alloc in ["glibc", "jemalloc", "mimalloc", "tcmalloc"] {
        let a = ok_json(&dir, &["replay", &t, "-a", alloc, "-o", "a.hlplaced", "--json"]);
        assert_eq!(a["threads"], 5, "{alloc}: main thread and 4 workers: {a}");
        // 300 rounds × 4 threads × 8 allocations (realloc: one more job) plus start-up.
        assert!(a["jobs"].as_u64().unwrap() >= 4 * 300 * 8, "{a}");
        assert_eq!(a["failed_in_replay"], 0);
        assert!(a["bytes_per_job"].as_f64().unwrap() <= 16.0, "{a}");
        let b = ok_json(&dir, &["replay", &t, "-a", alloc, "-o", "b.hlplaced", "--json"]);
        assert_eq!(a["jobs"], b["jobs"]);
        assert_eq!(normalised(&dir, "a.hlplaced"), normalised(&dir, "b.hlplaced"), "{alloc}: same trace, same addresses");
        let f = ok_json(&dir, &["frag", "a.hlplaced", "--json"]);
        let (e, i) = (f["external"].as_f64().unwrap(), f["internal"].as_f64().unwrap());
        // External fragmentation can pass 100%: a few small blocks high in their pages leave
        // more gap below them than they occupy.
        assert!(e.is_finite() && e >= 0.0 && (0.0..1.0).contains(&i), "{alloc}: {f}");
        assert_eq!(f["series"].as_array().unwrap().len(), 100);
    }
    let Run { code, stdout: out, .. } = heaplab_in(&dir, &["frag", "a.hlplaced", "--plot", "f.png"]);
    assert_eq!(code, 0);
    assert!(out.contains("external") && std::fs::read(dir.join("f.png")).unwrap().starts_with(b"\x89PNG"));
}

/// The thesis' figure 3.1 as a CSV file: A at 1 on [0, 3), B at 3 on [1, 5), C at 0 on [3, 5)
/// in a 3-byte class for a 2-byte request. External 5 / 17, internal 2 / 17 (see the frag
/// crate's tests for the arithmetic); makespan 5 = max load 5.
#[test]
fn frag_of_figure_3_1_from_csv() {
    let dir = scratch!("fig31");
    std::fs::write(dir.join("fig.csv"), "job,mapping,start,end,requested,usable,address\n0,1,0,3,1,1,1\n1,1,1,5,2,2,3\n2,1,3,5,2,3,0\n").unwrap();
    let f = ok_json(&dir, &["frag", "fig.csv", "--json"]);
    assert!((f["external"].as_f64().unwrap() - 5.0 / 17.0).abs() < 1e-12, "{f}");
    assert!((f["internal"].as_f64().unwrap() - 2.0 / 17.0).abs() < 1e-12, "{f}");
    assert_eq!(f["mappings"][0]["makespan_minus_max_load"], 0);
    // Pages of 2 bytes: B crosses two boundaries, the gaps are the same.
    let f = ok_json(&dir, &["frag", "fig.csv", "--json", "--page-size", "2"]);
    assert_eq!(f["external_area"], 5.0);
}

/// A realloc that succeeded in the trace but fails in the replay (as under `ulimit -v`; here
/// deterministically, with 2^62 bytes that no address space holds) must not be written with the
/// new size at the old address, a placed file `heaplab frag` refuses ("job 2 overlaps job 1"):
/// the replay warns, counts it, and writes a file frag accepts, in which
/// the realloc's input block stays live until the trace frees the realloc's block.
#[test]
fn realloc_failing_in_the_replay_leaves_a_valid_placed_file() {
    use heaplab_trace::format::{EndKind, Op};
    use heaplab_trace::reader::{Event, Trailer};
    use heaplab_trace::writer::{TraceWriter, WriterHeader};
    let dir = scratch!("realloc-fails");
    let ev = |op, seq, ptr_in, ptr_out, size| Event { seq, seq2: seq + u64::from(op == Op::Realloc), tid: 100, ts: seq, op, ptr_in, ptr_out, size, extra: 0, usable: size, site: 0 };
    let events = [
        ev(Op::Malloc, 0, 0, 0x1000, 64),
        ev(Op::Malloc, 1, 0, 0x2000, 64),
        ev(Op::Realloc, 2, 0x1000, 0x9000, 1 << 62),
        ev(Op::Malloc, 4, 0, 0x3000, 64),
        ev(Op::Free, 5, 0x9000, 0, 0),
        ev(Op::Free, 6, 0x2000, 0, 0),
        ev(Op::Free, 7, 0x3000, 0, 0),
    ];
    let mut w = TraceWriter::new(&WriterHeader { pid: 100, exe: "/bin/test".into(), page_size: 4096, clock_shift: 10, stack_depth: 0, start_mono_ns: 0 });
    w.begin_window(100, 0, 0);
    for e in &events {
        w.event(e);
    }
    w.trailer(&Trailer { end: EndKind::Exit, seq_count: 8, end_ts: 8, peak_rss: 0, peak_vm: 0, free_null: 0, modules: vec![] }, 1, 0, 8);
    std::fs::write(dir.join("big.hltrace"), w.finish()).unwrap();
    for alloc in ["glibc", "jemalloc"] {
        let Run { code, stdout: out, stderr: err } = heaplab_in(&dir, &["replay", "big.hltrace", "-a", alloc, "-o", "big.hlplaced", "--json"]);
        assert_eq!(code, 0, "{alloc}: {err}");
        assert!(err.contains("1 allocation that succeeded in the trace failed"), "{alloc}: {err}");
        let v: Value = serde_json::from_str(&out).unwrap();
        assert_eq!((v["failed_in_replay"].as_u64(), v["jobs"].as_u64()), (Some(1), Some(3)), "{alloc}: {v}");
        let f = ok_json(&dir, &["frag", "big.hlplaced", "--json"]);
        assert_eq!(f["jobs"], 3, "{alloc}: {f}");
        // Its CSV export reads back too.
        let Run { code, stderr: err, .. } = heaplab_in(&dir, &["convert", "big.hlplaced", "-o", "big.csv"]);
        assert_eq!(code, 0, "{err}");
        ok_json(&dir, &["frag", "big.csv", "--json"]);
    }
}

/// A trace header's page size must be a power of two from 512 B to 1 GiB (0 would drop valloc's
/// alignment in the replay, and 3 would become 4): otherwise every reader refuses the file,
/// naming it and the byte.
#[test]
fn traces_with_impossible_page_sizes_are_refused() {
    use heaplab_trace::format::{EndKind, Op};
    use heaplab_trace::reader::{Event, Trailer};
    use heaplab_trace::writer::{TraceWriter, WriterHeader};
    let dir = scratch!("page-size");
    for page in [0u32, 3, 256, 4096, 1 << 31] {
        let mut w = TraceWriter::new(&WriterHeader { pid: 100, exe: "/bin/test".into(), page_size: page, clock_shift: 10, stack_depth: 0, start_mono_ns: 0 });
        w.begin_window(100, 0, 0);
        w.event(&Event { seq: 0, seq2: 0, tid: 100, ts: 0, op: Op::Valloc, ptr_in: 0, ptr_out: 0x1000, size: 10, extra: 0, usable: 4096, site: 0 });
        w.trailer(&Trailer { end: EndKind::Exit, seq_count: 1, end_ts: 1, peak_rss: 0, peak_vm: 0, free_null: 0, modules: vec![] }, 1, 0, 1);
        std::fs::write(dir.join("p.hltrace"), w.finish()).unwrap();
        for args in [&["trace-info", "p.hltrace"][..], &["replay", "p.hltrace", "-a", "glibc", "-o", "p.hlplaced"]] {
            let Run { code, stderr: err, .. } = heaplab_in(&dir, args);
            if page == 4096 {
                assert_eq!(code, 0, "{args:?}: {err}");
            } else {
                assert_eq!(code, 2, "page size {page}, {args:?}: {err}");
                assert!(err.contains(&format!("p.hltrace: corrupt header: page size {page} at byte 24")), "{err}");
            }
        }
    }
}

/// The placed CSV's header is as strict as the instance CSV's: a misspelt or
/// repeated column is a usage error naming the file, line and column.
#[test]
fn frag_csv_rejects_unknown_and_repeated_columns() {
    let dir = scratch!("frag-columns");
    for (head, says) in [
        ("job,mapping,start,end,requested,usable,address,adress", "p.csv:1: field 'adress': unknown column"),
        ("job,mapping,start,end,requested,usable,address,end", "p.csv:1: field 'end': column appears twice"),
    ] {
        std::fs::write(dir.join("p.csv"), format!("{head}\n0,1,0,3,1,1,1,1\n")).unwrap();
        let Run { code, stderr: err, .. } = heaplab_in(&dir, &["frag", "p.csv"]);
        assert_eq!(code, 2, "{err}");
        assert!(err.contains(says), "'{err}' should say '{says}'");
    }
}

#[test]
fn bad_allocators_and_files_are_usage_errors() {
    let dir = scratch!("bad");
    let t = threads_trace(&dir);
    let two = |args: &[&str], says: &str| {
        let Run { code, stderr: err, .. } = heaplab_in(&dir, args);
        assert_eq!(code, 2, "heaplab {args:?} should exit 2: {err}");
        assert!(err.contains(says), "heaplab {args:?}: '{err}' should say '{says}'");
    };
    two(&["replay", &t, "-a", "nosuchalloc", "-o", "x.hlplaced"], "unknown allocator");
    two(&["replay", &t, "-a", "/no/such/lib.so", "-o", "x.hlplaced"], "no such allocator library");
    std::fs::write(dir.join("fake.so"), "not a library").unwrap();
    two(&["replay", &t, "-a", "./fake.so", "-o", "x.hlplaced"], "not a shared library");
    let libm = ["/usr/lib/x86_64-linux-gnu/libm.so.6", "/lib/x86_64-linux-gnu/libm.so.6"].into_iter().find(|p| Path::new(p).exists()).expect("libm");
    two(&["replay", &t, "-a", libm, "-o", "x.hlplaced"], "does not provide malloc");
    two(&["replay", "nonexistent.hltrace", "-a", "glibc", "-o", "x.hlplaced"], "cannot open");
    assert!(!dir.join("x.hlplaced").exists(), "nothing written on failure");
    // Placed files: truncated, foreign, overlapping jobs.
    let Run { code, stderr: err, .. } = heaplab_in(&dir, &["replay", &t, "-a", "glibc", "-o", "ok.hlplaced"]);
    assert_eq!(code, 0, "{err}");
    let bytes = std::fs::read(dir.join("ok.hlplaced")).unwrap();
    std::fs::write(dir.join("cut.hlplaced"), &bytes[..bytes.len() / 2]).unwrap();
    two(&["frag", "cut.hlplaced"], "truncated");
    two(&["convert", "cut.hlplaced", "-o", "cut.csv"], "truncated");
    std::fs::write(dir.join("over.csv"), "job,mapping,start,end,requested,usable,address\n0,1,0,4,8,8,4096\n1,1,2,5,8,8,4100\n").unwrap();
    two(&["frag", "over.csv"], "overlaps");
    std::fs::write(dir.join("junk.csv"), "job,mapping,start,end,requested,usable,address\n0,1,5,4,8,8,4096\n").unwrap();
    two(&["frag", "junk.csv"], "end must be greater than start");
    two(&["frag", "ok.hlplaced", "--page-size", "1000"], "power of two");
    // The study: unknown allocator, missing program, nothing to do.
    two(&["study", "--allocators", "glibc,nosuch", "-o", "r", "--", "true"], "unknown allocator");
    two(&["study", "-o", "r", "--", "no-such-program-xyz"], "program not found");
    two(&["study", "-o", "r"], "nothing to study");
    assert!(!dir.join("r").exists());
}

#[test]
fn small_study_writes_a_complete_report() {
    let dir = scratch!("study");
    let script = "my %h; for my $i (1..3000) { $h{\"k$i\"} = [$i, 'v' x ($i % 30)]; } my @k = sort keys %h; print scalar(@k), \"\\n\";";
    let v = ok_json(&dir, &["study", "--allocators", "glibc,jemalloc,mimalloc", "--runs", "2", "-o", "rep", "--json", "--", "perl", "-e", script]);
    let w = &v["workloads"][0];
    assert_eq!(w["error"], Value::Null, "{w}");
    assert_eq!(w["allocators"].as_array().unwrap().len(), 3);
    for a in w["allocators"].as_array().unwrap() {
        assert_eq!(a["runs"].as_array().unwrap().len(), 2);
        assert!(a["peak_rss_mean_bytes"].as_f64().unwrap() > 1e6, "{a}");
        assert!(a["jobs"].as_u64().unwrap() > 3000, "{a}");
    }
    // One point per allocator, not per run: 3 points, whose smallest possible p is 2/3! (more with ties).
    assert_eq!(w["spearman_external"]["n"], 3);
    assert_eq!(w["spearman_external"]["test"], "exact permutation");
    assert!(w["spearman_external"]["p_min"].as_f64().unwrap() >= 1.0 / 3.0 - 1e-12, "{w}");
    for f in ["index.html", "report.md", "results.json", "perl-scatter.png", "perl-frag-time.png"] {
        assert!(dir.join("rep").join(f).is_file(), "{f} missing");
    }
    let html = std::fs::read_to_string(dir.join("rep/index.html")).unwrap();
    assert!(html.contains("perl-scatter.png") && html.contains("Spearman"));
    // Again into the same directory: the previous report is replaced, nothing else is left.
    let Run { code, stdout: out, stderr: err } = heaplab_in(&dir, &["study", "--allocators", "glibc", "--runs", "3", "-o", "rep", "--", "perl", "-e", script]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("report"), "{out}");
    let names: Vec<String> = std::fs::read_dir(&dir).unwrap().flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect();
    assert_eq!(names, vec!["rep".to_string()], "only the report is left");
    // One workload of the suite, scaled down.
    let v = ok_json(&dir, &["study", "--suite", "default", "--only", "lua5.4", "--suite-scale", "20", "--allocators", "glibc,mimalloc", "--runs", "1", "-o", "suite", "--json"]);
    assert_eq!(v["workloads"][0]["name"], "lua5.4");
    assert_eq!(v["workloads"][0]["error"], Value::Null, "{v}");
}
