//! The analysis on synthetic traces written with the trace writer: every figure known.

use super::*;
use heaplab_trace::context::ModuleMap;
use heaplab_trace::format::EndKind;
use heaplab_trace::reader::{Event, Module, Trailer};
use heaplab_trace::writer::{TraceWriter, WriterHeader};

const MODULE: &str = "/nonexistent/prog";

fn module() -> Module {
    Module { start: 0x40_0000, end: 0x50_0000, offset: 0, path: MODULE.into() }
}

/// A call: (op, tid, ns, ptr_in, ptr_out, size, site).
type Call = (Op, u32, u64, u64, u64, u64, u32);

/// A one-window-per-call trace of `calls` with sites 1..=3 at known addresses.
fn trace(calls: &[Call], end_ns: u64) -> Vec<u8> {
    let mut w = TraceWriter::new(&WriterHeader { pid: 7, exe: MODULE.into(), page_size: 4096, clock_shift: 0, stack_depth: 1, start_mono_ns: 0 });
    w.begin_window(1, 0, 0);
    for s in 1..=3u32 {
        w.site(s, s as u64, &[0x40_1000 + s as u64 * 0x10]);
    }
    let mut seq = 0u64;
    for &(op, tid, ns, ptr_in, ptr_out, size, site) in calls {
        w.begin_window(tid, seq, ns);
        // A realloc takes two sequence numbers.
        let seq2 = if op.is_realloc() { seq + 1 } else { seq };
        w.event(&Event { seq, seq2, tid, ts: ns, op, ptr_in, ptr_out, size, extra: 0, usable: size, site });
        seq = seq2 + 1;
    }
    let t = Trailer { end: EndKind::Exit, seq_count: calls.len() as u64, end_ts: end_ns, peak_rss: 1 << 20, peak_vm: 1 << 21, free_null: 0, modules: vec![module()] };
    w.trailer(&t, 0, 0, seq);
    w.finish()
}

fn report(bytes: Vec<u8>, opts: &Options) -> Report {
    let mut r = TraceReader::new(std::io::Cursor::new(bytes), "t.hltrace").unwrap();
    analyse(&mut r, opts, None)
}

fn key(site: u32) -> u64 {
    ModuleMap::new(&[module()]).context_key(&[0x40_1000 + site as u64 * 0x10])
}

fn site(r: &Report, s: u32) -> &Site {
    r.sites.iter().find(|x| x.key == key(s)).unwrap_or_else(|| panic!("site {s} missing"))
}

const M: Op = Op::Malloc;
const F: Op = Op::Free;

fn known() -> Vec<Call> {
    vec![
        (M, 1, 10, 0, 0x1000, 100, 1),
        (M, 1, 20, 0, 0x2000, 50, 2),
        (F, 1, 30, 0x2000, 0, 0, 0), // freed by the next call: temporary
        (M, 1, 40, 0, 0x3000, 200, 3), // the peak: 300
        (F, 1, 50, 0x1000, 0, 0, 0),
        (M, 1, 60, 0, 0x4000, 30, 1),
    ]
}

#[test]
fn summary_sites_and_peak_of_a_known_trace() {
    let r = report(trace(&known(), 100), &Options::default());
    let s = &r.summary;
    assert_eq!((s.peak_bytes, s.peak_ns, s.peak_blocks), (300, 40, 2));
    assert_eq!((s.allocations, s.frees, s.reallocs, s.bytes_allocated), (4, 2, 0, 380));
    assert_eq!((s.temporary, s.leaked_blocks, s.leaked_bytes), (1, 2, 230));
    assert_eq!(s.peak_rss, Some(1 << 20));
    assert_eq!(r.sites.len(), 3);
    let (a, b, c) = (site(&r, 1), site(&r, 2), site(&r, 3));
    assert_eq!((a.calls, a.bytes, a.peak_bytes, a.max_live_bytes, a.temporary, a.leaked_blocks, a.leaked_bytes), (2, 130, 100, 100, 0, 1, 30));
    assert_eq!((b.calls, b.bytes, b.peak_bytes, b.max_live_bytes, b.temporary, b.leaked_bytes), (1, 50, 0, 50, 1, 0));
    assert_eq!((c.calls, c.bytes, c.peak_bytes, c.leaked_bytes), (1, 200, 200, 200));
    // Largest at the peak first.
    assert_eq!(r.sites[0].key, key(3));
    // The peak's snapshot comes first and lists the sites by bytes.
    let p = &r.snapshots[0];
    assert_eq!((p.ns, p.live_bytes, p.other_bytes), (40, 300, 0));
    assert_eq!(p.sites, vec![(0, 200), (1, 100)]);
    // The end's snapshot is the leaks.
    let e = r.snapshots.last().unwrap();
    assert_eq!((e.ns, e.live_bytes), (100, 230));
    assert_eq!(r.meta.duration_ns, 100);
    assert!(r.meta.complete);
    assert_eq!(r.meta.threads, 1);
    // Frames: the module is gone, so module and offset only, and a note says so.
    let f = &r.frames[r.sites[0].stack[0] as usize];
    assert_eq!((f.module.as_str(), f.offset, f.function.as_str()), ("prog", 0x1030, ""));
    assert!(r.notes.iter().any(|n| n.contains("prog") && n.contains("cannot read")), "{:?}", r.notes);
    // Histograms: sizes 100, 50, 200, 30; lifetimes of the two freed blocks (10 and 40 ns).
    let count = |bins: &[Bin], v: u64| bins.iter().find(|b| b.lo <= v && v < b.hi).map_or(0, |b| b.count);
    assert_eq!(count(&r.sizes, 100), 1);
    assert_eq!((count(&r.sizes, 40), count(&r.sizes, 20)), (1, 1), "50 in 32..64, 30 in 16..32");
    assert_eq!(r.sizes.iter().map(|b| b.count).sum::<u64>(), 4);
    assert_eq!(r.lifetimes.iter().map(|b| b.count).sum::<u64>(), 2);
    assert_eq!(count(&r.lifetimes, 10), 1);
    assert_eq!(count(&r.lifetimes, 40), 1);
    // The timeline has the peak and ends at the end.
    assert!(r.timeline.iter().any(|t| t.ns == 40 && t.live_bytes == 300));
    assert_eq!(r.timeline.last().unwrap().live_bytes, 230);
}

#[test]
fn temporaries_are_per_thread_and_need_the_very_next_call() {
    let calls = vec![
        (M, 1, 10, 0, 0x1000, 8, 1),
        (M, 2, 11, 0, 0x2000, 8, 2), // another thread between: still thread 1's next call
        (F, 1, 12, 0x1000, 0, 0, 0), // temporary
        (M, 1, 13, 0, 0x3000, 8, 3),
        (M, 1, 14, 0, 0x4000, 8, 3),
        (F, 1, 15, 0x3000, 0, 0, 0), // not: an allocation between
        (F, 2, 16, 0x2000, 0, 0, 0), // temporary for thread 2
        (Op::Realloc, 1, 17, 0x4000, 0x5000, 16, 3), // not: a free between its allocation and this
        (M, 1, 18, 0, 0x6000, 8, 1),
        (Op::Realloc, 1, 19, 0x6000, 0x7000, 16, 1), // realloc right after: temporary, as heaptrack counts it
    ];
    let r = report(trace(&calls, 20), &Options::default());
    assert_eq!(r.summary.temporary, 3);
    assert_eq!((site(&r, 1).temporary, site(&r, 2).temporary, site(&r, 3).temporary), (2, 1, 0));
    assert_eq!(r.summary.reallocs, 2);
    assert_eq!(r.summary.allocations, 7);
    assert_eq!(r.meta.threads, 2);
}

#[test]
fn bounded_timeline_and_snapshots_keep_the_peak() {
    // 20,000 calls over 20 s with one spike in the middle.
    let mut calls = Vec::new();
    for i in 0..10_000u64 {
        let ns = i * 2_000_000;
        let size = if i == 4321 { 1 << 20 } else { 64 };
        calls.push((M, 1, ns, 0, 0x10_0000 + i * 0x100, size, 1 + (i % 3) as u32));
        calls.push((F, 1, ns + 1_000_000, 0, 0, 0, 0));
        let n = calls.len();
        calls[n - 1].3 = 0x10_0000 + i * 0x100;
    }
    let opts = Options { timeline_points: 100, snapshots: 10, snapshot_sites: 2, at_ns: Some(4321 * 2_000_000 + 10) };
    let r = report(trace(&calls, 20_000_000_000), &opts);
    assert!(r.timeline.len() <= 2 * 100 + 1, "{}", r.timeline.len());
    let top = r.timeline.iter().map(|t| t.live_bytes).max().unwrap();
    assert_eq!(top, 1 << 20, "the spike survives the merging");
    assert_eq!(r.summary.peak_bytes, 1 << 20);
    assert!(r.snapshots.len() <= 1 + 10 + 1, "{}", r.snapshots.len());
    // Evenly spaced (on the doubling grid), in time order after the peak.
    assert!(r.snapshots[1..].windows(2).all(|w| w[0].ns <= w[1].ns));
    // The moment asked for is among them, exact: the spike is live then.
    let at = r.snapshots.iter().find(|s| s.ns == 4321 * 2_000_000 + 10).expect("the --at moment");
    assert_eq!(at.live_bytes, 1 << 20);
    assert!(r.snapshots.iter().all(|s| s.sites.len() <= 2));
}

#[test]
fn a_damaged_trace_reports_what_came_before_with_a_note() {
    let mut t = trace(&known(), 100);
    // Cut inside the last event's window.
    let cut = t.len() - 60;
    t.truncate(cut);
    let r = report(t, &Options::default());
    assert!(!r.meta.complete);
    assert!(r.notes.iter().any(|n| n.contains("damaged")), "{:?}", r.notes);
    assert!(r.summary.allocations < 4);
}
