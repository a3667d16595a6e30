//! End-to-end tests of `heaplab plot` on an allocator's placement: a `.hlplaced` file
//! written by `heaplab replay` and its CSV export both draw, as PNG and SVG, with the time axis
//! labelled by the replay's clock (bytes allocated) and one band per mapping; a plain placement
//! CSV still draws on "ticks"; a damaged placed file is a usage error that leaves nothing behind.

use crate::common::{heaplab_in, Run};
use std::path::Path;

fn ok(dir: &Path, args: &[&str]) -> String {
    let Run { code, stdout: out, stderr: err } = heaplab_in(dir, args);
    assert_eq!(code, 0, "heaplab {args:?}: {err}");
    out
}

/// A trace of 400 small blocks, half of them freed, and three 1 MiB blocks (which glibc maps
/// on their own, away from the heap: a second mapping). Written with the trace crate's writer,
/// so the test needs no traced program.
fn write_trace(path: &Path) {
    use heaplab_trace::format::{EndKind, Op};
    use heaplab_trace::reader::{Event, Trailer};
    use heaplab_trace::writer::{TraceWriter, WriterHeader};
    let ev = |op, seq, ptr_in, ptr_out, size| Event { seq, seq2: seq, tid: 100, ts: seq, op, ptr_in, ptr_out, size, extra: 0, usable: size, site: 0 };
    let mut w = TraceWriter::new(&WriterHeader { pid: 100, exe: "/bin/test".into(), page_size: 4096, clock_shift: 10, stack_depth: 0, start_mono_ns: 0 });
    w.begin_window(100, 0, 0);
    let mut seq = 0;
    for i in 0..400u64 {
        let size = if i % 130 == 129 { 1 << 20 } else { 16 + (i * 37) % 500 };
        w.event(&ev(Op::Malloc, seq, 0, 0x10_0000 + i * 0x10_0000, size));
        seq += 1;
        if i % 2 == 1 {
            w.event(&ev(Op::Free, seq, 0x10_0000 + (i - 1) * 0x10_0000, 0, 0));
            seq += 1;
        }
    }
    w.trailer(&Trailer { end: EndKind::Exit, seq_count: seq, end_ts: seq, peak_rss: 0, peak_vm: 0, free_null: 0, modules: vec![] }, 1, 0, seq);
    std::fs::write(path, w.finish()).unwrap();
}

fn is_png(path: &Path) -> bool {
    std::fs::read(path).is_ok_and(|b| b.starts_with(b"\x89PNG\r\n\x1a\n") && b.len() > 1000)
}

#[test]
fn placed_files_and_their_csv_export_draw_on_the_bytes_clock() {
    let dir = scratch!("placed");
    write_trace(&dir.join("t.hltrace"));
    ok(&dir, &["replay", "t.hltrace", "-a", "glibc", "-o", "t.hlplaced"]);
    ok(&dir, &["convert", "t.hlplaced", "-o", "t.csv"]);
    for input in ["t.hlplaced", "t.csv"] {
        let out = ok(&dir, &["plot", input, "-o", "p.png"]);
        assert!(out.contains("picture") && out.contains("400 jobs"), "{out}");
        assert!(is_png(&dir.join("p.png")), "{input}: a PNG");
        ok(&dir, &["plot", input, "-o", "p.svg"]);
        let svg = std::fs::read_to_string(dir.join("p.svg")).unwrap();
        assert!(svg.contains(">time (bytes allocated)</text>"), "{input}: the replay's clock labels the time axis");
        assert!(!svg.contains("ticks"), "{input}: no 'ticks' anywhere");
        assert!(svg.contains("address (per mapping)"), "{input}");
        assert_eq!(svg.matches(r#"<rect class="buf""#).count(), 400, "{input}: one rectangle per job");
        assert!(svg.contains("at address 0x"), "{input}: tooltips give real addresses");
        // The heap and glibc's mmap'd blocks: more than one band.
        let maps: u32 = svg.split("blocks, ").nth(1).and_then(|t| t.split(' ').next()).and_then(|n| n.parse().ok()).unwrap_or(0);
        assert!(maps >= 2, "{input}: {maps} mappings");
    }
    let svg = std::fs::read_to_string(dir.join("p.svg")).unwrap();
    assert!(svg.contains("mapping "), "the CSV export has no mapping names: bands are named by id");
    ok(&dir, &["plot", "t.hlplaced", "-o", "p.svg"]);
    let svg = std::fs::read_to_string(dir.join("p.svg")).unwrap();
    assert!(svg.contains("[heap] @ 0x"), "bands are labelled with their mapping and base address");
    assert!(svg.contains("glibc placement of t.hltrace"), "the default title says whose placement");
    ok(&dir, &["plot", "t.hlplaced", "-o", "p.svg", "--title", "mine"]);
    assert!(std::fs::read_to_string(dir.join("p.svg")).unwrap().contains(">mine</text>"));
}

#[test]
fn plain_placements_still_draw_on_ticks() {
    let dir = scratch!("plain");
    std::fs::write(dir.join("p.csv"), "id,lower,upper,size,offset\n1,0,10,100,0\n2,5,15,50,100\n").unwrap();
    ok(&dir, &["plot", "p.csv", "-o", "p.svg"]);
    let svg = std::fs::read_to_string(dir.join("p.svg")).unwrap();
    assert!(svg.contains(">time (ticks)</text>") && svg.contains("makespan"), "{svg}");
    ok(&dir, &["plot", "p.csv", "-o", "p.png"]);
    assert!(is_png(&dir.join("p.png")));
}

#[test]
fn damaged_placed_files_are_usage_errors_and_leave_nothing() {
    let dir = scratch!("bad");
    write_trace(&dir.join("t.hltrace"));
    ok(&dir, &["replay", "t.hltrace", "-a", "glibc", "-o", "t.hlplaced"]);
    let bytes = std::fs::read(dir.join("t.hlplaced")).unwrap();
    std::fs::write(dir.join("cut.hlplaced"), &bytes[..bytes.len() / 2]).unwrap();
    std::fs::write(dir.join("typo.csv"), "job,mapping,start,end,requested,usable,adress\n0,1,0,3,1,1,1\n").unwrap();
    for (input, says) in [("cut.hlplaced", "truncated"), ("typo.csv", "typo.csv:1: field 'adress': unknown column")] {
        let Run { code, stderr: err, .. } = heaplab_in(&dir, &["plot", input, "-o", "x.png"]);
        assert_eq!(code, 2, "{input}: {err}");
        assert!(err.contains(says), "{input}: '{err}' should say '{says}'");
        assert!(!dir.join("x.png").exists(), "{input}: nothing written");
    }
}
