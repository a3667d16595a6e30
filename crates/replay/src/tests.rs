//! Replay tests on traces built with the trace crate's writer: every job valid (no two live
//! blocks overlap, usable ≥ requested), the same trace under the same allocator gives the same
//! addresses (relative to each mapping), multi-threaded traces keep their order, the placed
//! format round-trips and rejects damage, and bad allocators are refused.

use crate::placed::{self, Job, Placed, PlacedMeta};
use crate::{resolve, ReplayError, ReplayOptions};
use heaplab_trace::format::Op;
use heaplab_trace::reader::{Event, TraceReader, Trailer};
use heaplab_trace::writer::{TraceWriter, WriterHeader};

fn ev(op: Op, seq: u64, tid: u32, ptr_in: u64, ptr_out: u64, size: u64, extra: u64) -> Event {
    Event { seq, seq2: seq, tid, ts: seq, op, ptr_in, ptr_out, size, extra, usable: size, site: 0 }
}

/// A deterministic history of `calls` calls over `threads` threads (tids 100, 101, …; the pid
/// is 100): mallocs, callocs, aligned allocations, reallocs and frees, including frees of
/// another thread's blocks. Returns the trace bytes.
fn history(seed: u64, threads: u32, calls: usize) -> Vec<u8> {
    let mut rng = seed.wrapping_mul(0x9e3779b97f4a7c15) | 1;
    let mut next = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    let mut w = TraceWriter::new(&WriterHeader { pid: 100, exe: "/bin/test".into(), page_size: 4096, clock_shift: 10, stack_depth: 0, start_mono_ns: 0 });
    let mut live: Vec<u64> = Vec::new();
    let mut addr = 0x10000u64;
    let mut seq = 0u64;
    let mut cur_tid = u32::MAX;
    for _ in 0..calls {
        let tid = 100 + (next() % threads as u64) as u32;
        if tid != cur_tid {
            w.begin_window(tid, seq, seq);
            cur_tid = tid;
        }
        let r = next() % 10;
        let e = if r < 4 && !live.is_empty() {
            let p = live.swap_remove((next() % live.len() as u64) as usize);
            ev(Op::Free, seq, tid, p, 0, 0, 0)
        } else if r < 5 && !live.is_empty() {
            let i = (next() % live.len() as u64) as usize;
            let p = live[i];
            addr += 1 << 20;
            live[i] = addr;
            let mut e = ev(Op::Realloc, seq, tid, p, addr, 1 + next() % 9000, 0);
            seq += 1;
            e.seq2 = seq;
            e
        } else {
            addr += 1 << 20;
            live.push(addr);
            match next() % 6 {
                0 => ev(Op::Calloc, seq, tid, 0, addr, 1 + next() % 100, 1 + next() % 8),
                1 => ev(Op::PosixMemalign, seq, tid, 0, addr, 1 + next() % 500, 64),
                2 => ev(Op::Valloc, seq, tid, 0, addr, 1 + next() % 500, 0),
                3 => ev(Op::Malloc, seq, tid, 0, addr, 100_000 + next() % 300_000, 0),
                _ => ev(Op::Malloc, seq, tid, 0, addr, 1 + next() % 2000, 0),
            }
        };
        w.event(&e);
        seq += 1;
    }
    w.trailer(&Trailer { end: heaplab_trace::format::EndKind::Exit, seq_count: seq, end_ts: seq, peak_rss: 0, peak_vm: 0, free_null: 0, modules: vec![] }, 1, 0, seq);
    w.finish()
}

/// A single-threaded trace (tid = pid = 100) of `events`, in order.
fn trace_of(events: &[Event]) -> Vec<u8> {
    let mut w = TraceWriter::new(&WriterHeader { pid: 100, exe: "/bin/test".into(), page_size: 4096, clock_shift: 10, stack_depth: 0, start_mono_ns: 0 });
    w.begin_window(100, 0, 0);
    for e in events {
        w.event(e);
    }
    let seq = events.last().map_or(0, |e| e.seq2 + 1);
    w.trailer(&Trailer { end: heaplab_trace::format::EndKind::Exit, seq_count: seq, end_ts: seq, peak_rss: 0, peak_vm: 0, free_null: 0, modules: vec![] }, 1, 0, seq);
    w.finish()
}

/// A = malloc(64), B = malloc(64), A' = realloc(A, 2^62) which succeeded in the trace but fails
/// under every allocator (more than an address space holds), C = malloc(64), free(A'), free(B),
/// free(C). The replay's clock: A starts at 0, B at 64, the realloc at 128, C at 2^62 + 128.
fn failing_realloc_trace() -> Vec<u8> {
    let big = 1u64 << 62;
    let mut re = ev(Op::Realloc, 2, 100, 0x1000, 0x9000, big, 0);
    re.seq2 = 3;
    trace_of(&[
        ev(Op::Malloc, 0, 100, 0, 0x1000, 64, 0),
        ev(Op::Malloc, 1, 100, 0, 0x2000, 64, 0),
        re,
        ev(Op::Malloc, 4, 100, 0, 0x3000, 64, 0),
        ev(Op::Free, 5, 100, 0x9000, 0, 0, 0),
        ev(Op::Free, 6, 100, 0x2000, 0, 0, 0),
        ev(Op::Free, 7, 100, 0x3000, 0, 0, 0),
    ])
}

fn run(bytes: &[u8], alloc: &str) -> Result<(Placed, crate::ReplayStats), ReplayError> {
    let mut r = TraceReader::new(bytes, "mem.hltrace").expect("trace header");
    let skim = TraceReader::new(bytes, "mem.hltrace").expect("trace header").skim();
    let threads: Vec<u32> = skim.threads.keys().copied().collect();
    let a = resolve(alloc).unwrap_or_else(|e| panic!("{e}"));
    crate::replay(&mut r, &a, &threads, &ReplayOptions { ring_len: 256, allow_truncated: false }, None)
}

/// No two jobs live at the same time overlap in address (an independent sweep over all pairs
/// of neighbours in address order at every allocation), and sizes are consistent.
fn assert_valid(p: &Placed) {
    let mut ev: Vec<(u64, bool, usize)> = Vec::new();
    for (k, j) in p.jobs.iter().enumerate() {
        assert!(j.end > j.start && j.usable >= j.requested && j.address != 0, "{j:?}");
        ev.push((j.start, true, k));
        ev.push((j.end, false, k));
    }
    ev.sort_by_key(|&(t, alloc, _)| (t, alloc));
    let mut live = std::collections::BTreeMap::new();
    for (_, alloc, k) in ev {
        let j: &Job = &p.jobs[k];
        if alloc {
            if let Some((_, &(e, o))) = live.range(..=j.address).next_back() {
                assert!(e <= j.address, "job {} overlaps live job {o}", j.id);
            }
            if let Some((&s, &(_, o))) = live.range(j.address..).next() {
                assert!(s >= j.address + j.usable, "job {} overlaps live job {o}", j.id);
            }
            live.insert(j.address, (j.address + j.usable, j.id));
        } else {
            live.remove(&j.address);
        }
    }
}

/// Addresses relative to the lowest job address of their mapping, by job id.
fn normalised(p: &Placed) -> Vec<(u64, u64, u64)> {
    let mut base = vec![u64::MAX; p.mappings.len()];
    for j in &p.jobs {
        base[j.mapping as usize] = base[j.mapping as usize].min(j.address);
    }
    let mut v: Vec<(u64, u64, u64)> = p.jobs.iter().map(|j| (j.id, j.address - base[j.mapping as usize], j.usable)).collect();
    v.sort_unstable();
    v
}

#[test]
fn replay_is_valid_and_deterministic() {
    let t = history(7, 1, 3000);
    for alloc in ["glibc", "jemalloc", "mimalloc", "tcmalloc"] {
        let (a, st) = run(&t, alloc).unwrap_or_else(|e| panic!("{alloc}: {e}"));
        assert_valid(&a);
        assert_eq!(st.failed_in_replay, 0);
        assert_eq!(st.requests, 3000, "{alloc}: one request per call");
        let allocs = a.jobs.len();
        assert!(allocs > 1000, "{alloc}: {allocs} jobs");
        assert!(a.jobs.iter().all(|j| a.mappings[j.mapping as usize].id != 0), "{alloc}: every block in a mapping");
        let (b, _) = run(&t, alloc).unwrap();
        assert_eq!(normalised(&a), normalised(&b), "{alloc}: same trace, same placement");
    }
}

#[test]
fn threads_replay_in_order_on_their_own_threads() {
    let t = history(11, 4, 4000);
    for alloc in ["glibc", "jemalloc"] {
        let (p, st) = run(&t, alloc).unwrap();
        assert_eq!(st.threads, 4);
        assert_valid(&p);
        let (q, _) = run(&t, alloc).unwrap();
        assert_eq!(normalised(&p), normalised(&q), "{alloc}: multi-threaded replay is deterministic");
    }
    // glibc gives threads other than the main one their own arenas: more than one mapping.
    let (p, _) = run(&t, "glibc").unwrap();
    assert!(p.mappings.len() >= 2, "{:?}", p.mappings);
}

#[test]
fn placed_format_round_trips_and_rejects_damage() {
    let (p, _) = run(&history(3, 2, 2000), "glibc").unwrap();
    let mut bin = Vec::new();
    placed::write_binary(&mut bin, &p).unwrap();
    let back = placed::read_binary(&bin[..], "x.hlplaced").unwrap();
    assert_eq!(back, p);
    assert!(bin.len() as f64 / p.jobs.len() as f64 <= 16.0, "{} bytes for {} jobs", bin.len(), p.jobs.len());
    let mut csv = Vec::new();
    placed::write_csv(&mut csv, &p).unwrap();
    let c = placed::read_csv(&csv[..], "x.csv", 4096).unwrap();
    assert_eq!(c.jobs.len(), p.jobs.len());
    assert_eq!(c.jobs.iter().map(|j| (j.id, j.address, j.usable)).collect::<Vec<_>>(), p.jobs.iter().map(|j| (j.id, j.address, j.usable)).collect::<Vec<_>>());
    for cut in [0, 5, 12, 40, bin.len() / 3, bin.len() / 2, bin.len() - 17, bin.len() - 1] {
        let e = placed::read_binary(&bin[..cut], "x.hlplaced").unwrap_err();
        assert_eq!(e.kind, heaplab_model::InputErrorKind::Format, "cut at {cut}: {e}");
    }
    let mut other = bin.clone();
    other[8] = 9;
    assert!(placed::read_binary(&other[..], "x").unwrap_err().message.contains("version 9"));
    // Every byte damaged: an error or a file that reads, never a panic.
    for i in (0..bin.len()).step_by(7) {
        let mut d = bin.clone();
        d[i] ^= 0x5a;
        let _ = placed::read_binary(&d[..], "x");
    }
}

#[test]
fn bad_allocators_are_refused() {
    assert!(resolve("nosuch").unwrap_err().0.contains("unknown allocator"));
    assert!(resolve("/nonexistent/libfoo.so").unwrap_err().0.contains("no such"));
    assert!(resolve("/etc/passwd").unwrap_err().0.contains("not a shared library"));
    // A real shared library that does not define malloc: refused once the child reports who does.
    let libm = ["/usr/lib/x86_64-linux-gnu/libm.so.6", "/lib/x86_64-linux-gnu/libm.so.6"].into_iter().find(|p| std::path::Path::new(p).exists());
    if let Some(libm) = libm {
        let t = history(1, 1, 10);
        match run(&t, libm) {
            Err(e @ ReplayError::AllocatorNotInUse { .. }) => assert!(e.to_string().contains("does not provide malloc"), "{e}"),
            other => panic!("libm accepted as an allocator: {:?}", other.map(|x| x.1)),
        }
    }
}

/// A realloc that fails in the replay is not recorded with the new size at the old address
/// (that would overlap B): it is counted as failed, its input block A stays live (the child
/// still holds it) until the trace frees the block the realloc gave, and the placement is
/// valid.
#[test]
fn realloc_failing_in_the_replay_keeps_its_input_live() {
    let t = failing_realloc_trace();
    for alloc in ["glibc", "jemalloc"] {
        let (p, st) = run(&t, alloc).unwrap_or_else(|e| panic!("{alloc}: {e}"));
        assert_valid(&p);
        assert!(placed::first_overlap(&p.jobs).is_none());
        assert_eq!(st.failed_in_replay, 1, "{alloc}");
        let mut jobs = p.jobs.clone();
        jobs.sort_by_key(|j| j.id);
        let spans: Vec<(u64, u64, u64)> = jobs.iter().map(|j| (j.start, j.end, j.requested)).collect();
        let big = 1u64 << 62;
        assert_eq!(spans, vec![(0, big + 192, 64), (64, big + 192, 64), (big + 128, big + 192, 64)], "{alloc}: A lives until free(A')");
        // The file it makes reads back.
        let mut bin = Vec::new();
        placed::write_binary(&mut bin, &p).unwrap();
        assert_eq!(placed::read_binary(&bin[..], "x.hlplaced").unwrap(), p);
    }
}

/// The overlap rule on hand-made jobs: touching blocks and blocks that live one after the other
/// are fine; a clash names both jobs and the time.
#[test]
fn first_overlap_finds_clashes_only() {
    let j = |id, start, end, usable, address| Job { id, mapping: 0, start, end, requested: usable, usable, address };
    assert_eq!(placed::first_overlap(&[j(0, 0, 5, 16, 0), j(1, 0, 5, 16, 16), j(2, 5, 9, 32, 0)]), None);
    assert_eq!(placed::first_overlap(&[j(0, 0, 5, 0, 8), j(1, 0, 5, 16, 0)]), None, "an empty job covers nothing");
    let o = placed::first_overlap(&[j(0, 0, 5, 16, 0), j(1, 2, 9, 16, 8)]).unwrap();
    assert_eq!((o.job, o.other, o.time), (1, 0, 2));
    let o = placed::first_overlap(&[j(0, 0, 5, 16, 8), j(1, 2, 9, 16, 0)]).unwrap();
    assert_eq!((o.job, o.other), (1, 0), "a clash with the block above");
}

/// The CSV export's header is strict like the instance CSV's: unknown and repeated columns are
/// refused with the file, line 1 and the column's name; missing ones are named too.
#[test]
fn placed_csv_rejects_unknown_repeated_and_missing_columns() {
    let row = "1,1,0,0,10,8,16,4096";
    let read = |head: &str, line: &str| placed::read_csv(format!("{head}\n{line}\n").as_bytes(), "p.csv", 4096);
    assert!(read(placed::CSV_HEADER, row).is_ok());
    let e = read("job,mapping,map_start,start,end,requested,usable,adress", row).unwrap_err();
    assert_eq!((e.line, e.field.as_deref(), e.kind), (Some(1), Some("adress"), heaplab_model::InputErrorKind::Shape), "{e}");
    assert!(e.to_string().starts_with("p.csv:1: field 'adress': unknown column"), "{e}");
    let e = read("job,mapping,start,end,requested,usable,address,start", "1,1,0,10,8,16,4096,0").unwrap_err();
    assert_eq!((e.line, e.field.as_deref()), (Some(1), Some("start")), "{e}");
    assert!(e.message.contains("twice"), "{e}");
    let e = read("job,mapping,start,end,requested,usable", "1,1,0,10,8,16").unwrap_err();
    assert_eq!(e.field.as_deref(), Some("address"), "{e}");
}

/// The binary header's flags must be 0, and a file with jobs must end after them.
#[test]
fn placed_header_rejects_flags_and_early_end_time() {
    let (p, _) = run(&history(5, 1, 200), "glibc").unwrap();
    let mut bin = Vec::new();
    placed::write_binary(&mut bin, &p).unwrap();
    let mut flagged = bin.clone();
    flagged[10] = 1;
    let e = placed::read_binary(&flagged[..], "x.hlplaced").unwrap_err();
    assert!(e.message.contains("flags") && e.message.contains("byte 10"), "{e}");
    let mut early = bin.clone();
    early[32..40].copy_from_slice(&0u64.to_le_bytes());
    let e = placed::read_binary(&early[..], "x.hlplaced").unwrap_err();
    assert!(e.message.contains("end time 0") && e.message.contains("byte 32"), "{e}");
    early[32..40].copy_from_slice(&1u64.to_le_bytes());
    let e = placed::read_binary(&early[..], "x.hlplaced").unwrap_err();
    assert!(e.message.contains("after the header's end time 1"), "{e}");
    // An empty placement (an empty trace) legitimately ends at 0.
    let empty = Placed::new(PlacedMeta { page_size: 4096, ..Default::default() }, vec![], vec![]);
    let mut bin = Vec::new();
    placed::write_binary(&mut bin, &empty).unwrap();
    assert_eq!(placed::read_binary(&bin[..], "e.hlplaced").unwrap(), empty);
}
