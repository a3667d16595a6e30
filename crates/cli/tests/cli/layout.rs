//! End-to-end tests of `heaplab layout` and `heaplab layout-info` on traces of real programs
//! (the threaded test program with the aligned family, sqlite3, python3), traced here: every
//! strategy, with and without contexts, its output read back (the reader validates) and checked
//! against an independent pairwise oracle and the trace's alignments; profiles with blocks
//! inserted and deleted; and the errors (exit 2, nothing written).

use crate::common::{heaplab_in, need, ok_json, prog};
use heaplab_access::{AccessBlock, AccessProfile, Context, Edge};
use heaplab_apply::source::{self, SourceBlock};
use heaplab_apply::{format, slot, Layout};
use heaplab_plan::rng::Rng;
use std::path::Path;

const STRATEGIES: [&str; 10] =
    ["plan", "plan-affinity", "simple", "random", "size", "usage-df", "usage-grouped", "friends-df", "friends-grouped", "one-per-line"];

fn path(dir: &Path, name: &str) -> String {
    dir.join(name).to_string_lossy().into_owned()
}

/// Traces `cmd` with call sites into `dir/name`.
fn trace(dir: &Path, name: &str, cmd: &[&str]) -> String {
    let out = path(dir, name);
    let mut args = vec!["trace", "--stack-depth", "4", "-o", &out, "--"];
    args.extend_from_slice(cmd);
    let r = heaplab_in(dir, &args);
    assert_eq!(r.code, 0, "trace {cmd:?}: {}", r.stderr);
    out
}

/// A profile of the trace's blocks as another run would give it: `extra` blocks of odd sizes
/// first, the blocks at `dropped` missing, random reads, writes and edges between neighbours.
fn profile(blocks: &[SourceBlock], extra: usize, dropped: &[usize], seed: u64) -> AccessProfile {
    let mut r = Rng::new(seed);
    let mut out: Vec<AccessBlock> = (0..extra).map(|k| AccessBlock { size: 3 + 1000 * k as u64, ..AccessBlock::default() }).collect();
    out.extend(blocks.iter().enumerate().filter(|(i, _)| !dropped.contains(i)).map(|(_, b)| AccessBlock { size: b.size, ..AccessBlock::default() }));
    for (k, b) in out.iter_mut().enumerate() {
        (b.alloc_at, b.free_at, b.reads, b.writes) = (k as u64, u64::MAX, r.below(1000), r.below(100));
    }
    let n = out.len() as u64;
    let mut edges = |count: u64| {
        let mut e: Vec<Edge> = (0..count)
            .map(|_| {
                let from = r.below(n);
                let to = (from + 1 + r.below(8)).min(n - 1);
                Edge { from, to, weight: 1 + r.below(100) }
            })
            .filter(|e| e.from != e.to)
            .collect();
        e.sort_by_key(|e| (e.from, e.to));
        e.dedup_by_key(|e| (e.from, e.to));
        e
    };
    let (coaccess, friends) = (edges(n * 2), edges(n / 2));
    AccessProfile { blocks: out, contexts: vec![Context { key: 1, frames: vec![] }], coaccess, friends, ..AccessProfile::default() }
}

/// The independent oracle: slots of planned entries live at the same time never overlap, every
/// entry is a trace block with its size, lifetime and context, in ordinal order, and its offset
/// honours the block's alignment.
fn check_layout(l: &Layout, blocks: &[SourceBlock], contexts: bool) {
    let mut planned = Vec::new();
    let mut seen = 0;
    for c in &l.contexts {
        assert!(c.entries.windows(2).all(|w| w[0].block < w[1].block), "ordinals in allocation order");
        for e in &c.entries {
            let b = &blocks[e.block as usize];
            assert_eq!((e.size, e.lower, e.upper), (b.size, b.lower, b.upper));
            assert_eq!(c.key, if contexts { b.context } else { 0 });
            if let Some(o) = e.offset {
                assert_eq!(o % (1 << b.align_log2.max(4)), 0, "block {} (alignment 2^{}) at {o}", e.block, b.align_log2);
                assert!(o + slot(e.size) <= l.region);
                planned.push((b.lower, b.upper, o, o + slot(e.size), e.block));
            }
            seen += 1;
        }
    }
    assert_eq!(seen, blocks.len());
    // Sorted by start time, each entry meets only the ones after it that start before it ends.
    planned.sort_unstable();
    for i in 0..planned.len() {
        let (_, upper, a0, a1, id) = planned[i];
        for &(lower2, _, b0, b1, id2) in planned[i + 1..].iter().take_while(|p| p.0 < upper) {
            assert!(lower2 >= upper || a1 <= b0 || b1 <= a0, "blocks {id} and {id2} overlap");
        }
    }
}

/// Every strategy on `trace`, with a profile, with and without contexts.
fn every_strategy(dir: &Path, trace: &str) {
    for contexts in [false, true] {
        let src = source::read(trace, contexts).unwrap();
        assert!(!src.blocks.is_empty());
        let prof = path(dir, "p.hlaccess");
        heaplab_access::write(&prof, &profile(&src.blocks, 0, &[], 1)).unwrap();
        for s in STRATEGIES {
            let out = path(dir, &format!("{s}-{contexts}.hllayout"));
            let mut args = vec!["layout", trace, "--access", &prof, "--strategy", s, "-o", &out, "--json", "--time-limit", "0.5"];
            if contexts {
                args.push("--contexts");
            }
            let v = ok_json(dir, &args);
            let l = format::read(&out).unwrap_or_else(|e| panic!("{s}: {e}"));
            check_layout(&l, &src.blocks, contexts);
            assert_eq!(v["profile"]["aligned_share"], 1.0, "{s}");
            assert_eq!(v["entries"].as_u64().unwrap() as usize, src.blocks.len());
            assert_eq!(v["region_bytes"].as_u64().unwrap(), l.region);
            assert!(l.region >= v["max_load_bytes"].as_u64().unwrap());
            if s == "plan" {
                assert_eq!(l.region, v["plan"]["makespan"].as_u64().unwrap(), "plan: region = makespan");
            }
            let info = ok_json(dir, &["layout-info", &out, "--json"]);
            assert_eq!((info["strategy"].as_str(), &info["entries"], &info["region_bytes"]), (Some(s), &v["entries"], &v["region_bytes"]));
            assert_eq!(info["contexts"].as_u64().unwrap() as usize, l.contexts.len());
        }
    }
}

#[test]
fn every_strategy_on_the_threaded_program_with_the_aligned_family() {
    let d = scratch!("threads");
    let t = trace(&d, "t.hltrace", &[&prog("threads"), "3", "40"]);
    let src = source::read(&t, true).unwrap();
    assert!(src.blocks.iter().any(|b| b.align_log2 >= 8), "aligned_alloc(256, …) is in the trace");
    every_strategy(&d, &t);
}

#[test]
fn every_strategy_on_sqlite3_and_python3() {
    need("sqlite3");
    need("python3");
    let d = scratch!("real");
    let sql = "create table t(a, b); insert into t values (1, 'x'), (2, 'yy'); select sum(a), group_concat(b) from t;";
    let t = trace(&d, "sqlite.hltrace", &["sqlite3", ":memory:", sql]);
    every_strategy(&d, &t);
    let t = trace(&d, "py.hltrace", &["python3", "-S", "-c", "print(sorted({i: str(i) for i in range(300)}.items())[-1])"]);
    let v = ok_json(&d, &["layout", &t, "--strategy", "plan", "-o", &path(&d, "py.hllayout"), "--json"]);
    let l = format::read(&path(&d, "py.hllayout")).unwrap();
    check_layout(&l, &source::read(&t, false).unwrap().blocks, false);
    assert!(v["region_over_max_load_pct"].as_f64().unwrap() < 5.0, "the plan stays near the max load: {v}");
}

#[test]
fn profiles_with_inserted_and_deleted_blocks_are_aligned_and_the_share_reported() {
    let d = scratch!("align");
    let t = trace(&d, "t.hltrace", &[&prog("threads"), "2", "30"]);
    let src = source::read(&t, false).unwrap();
    let n = src.blocks.len();
    let prof = path(&d, "p.hlaccess");
    heaplab_access::write(&prof, &profile(&src.blocks, 3, &[5, 6, n / 2, n - 1], 9)).unwrap();
    let out = path(&d, "u.hllayout");
    let v = ok_json(&d, &["layout", &t, "--access", &prof, "--strategy", "usage-grouped", "-o", &out, "--json"]);
    let p = &v["profile"];
    assert_eq!(p["trace_blocks"].as_u64().unwrap() as usize, n);
    assert_eq!(p["profile_blocks"].as_u64().unwrap() as usize, n + 3 - 4);
    assert_eq!(p["aligned_blocks"].as_u64().unwrap() as usize, n - 4, "every block present in both runs is matched: {p}");
    let l = format::read(&out).unwrap();
    check_layout(&l, &src.blocks, false);
    // The dropped blocks have no accesses; the others carry the profile's counts. Where blocks of
    // the same size follow each other (the threads interleave differently from run to run),
    // dropping one of them leaves a neighbour of its size unmatched instead: equally right.
    let e = &l.contexts[0].entries;
    let unmatched: Vec<u64> = (0..n).filter(|&j| e[j].accesses == 0).map(|j| src.blocks[j].size).collect();
    for i in [5, 6, n - 1] {
        assert!(unmatched.contains(&src.blocks[i].size), "a block of dropped block {i}'s size is unmatched: {unmatched:?}");
    }
    assert!(e.iter().filter(|e| e.accesses > 0).count() > n / 2);
    // A profile of something else matches little, and says so.
    let other = path(&d, "other.hlaccess");
    let junk: Vec<SourceBlock> = (0..50).map(|k| SourceBlock { size: 7 + 13 * k, ..SourceBlock::default() }).collect();
    heaplab_access::write(&other, &profile(&junk, 0, &[], 2)).unwrap();
    let r = heaplab_in(&d, &["layout", &t, "--access", &other, "--strategy", "usage-df", "-o", &out]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stderr.contains("warning") && r.stderr.contains("same program"), "{}", r.stderr);
}

#[test]
fn pictures_and_the_text_summaries() {
    let d = scratch!("pictures");
    let t = trace(&d, "t.hltrace", &[&prog("threads"), "1", "20"]);
    let prof = path(&d, "p.hlaccess");
    heaplab_access::write(&prof, &profile(&source::read(&t, false).unwrap().blocks, 0, &[], 4)).unwrap();
    let out = path(&d, "a.hllayout");
    let r = heaplab_in(&d, &["layout", &t, "--access", &prof, "--strategy", "plan-affinity", "-o", &out, "--plot", &path(&d, "a.png")]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    for line in ["layout ", "entries ", "region ", "plan ", "profile ", "affinity ", "written "] {
        assert!(r.stdout.contains(line), "{line}: {}", r.stdout);
    }
    assert!(std::fs::read(path(&d, "a.png")).unwrap().starts_with(b"\x89PNG"));
    let r = heaplab_in(&d, &["layout-info", &out, "--plot", &path(&d, "b.svg")]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains("strategy       plan-affinity") && r.stdout.contains("accesses"), "{}", r.stdout);
    let svg = std::fs::read_to_string(path(&d, "b.svg")).unwrap();
    assert!(svg.contains("<svg") && svg.contains("colour: accesses"));
}

#[test]
fn bad_usage_and_bad_files_exit_2_and_write_nothing() {
    let d = scratch!("errors");
    let t = trace(&d, "t.hltrace", &[&prog("threads"), "1", "5"]);
    let bare = path(&d, "bare.hltrace");
    let r = heaplab_in(&d, &["trace", "--stack-depth", "0", "-o", &bare, "--", &prog("threads"), "1", "5"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let out = path(&d, "o.hllayout");
    let fails = |args: &[&str], words: &[&str]| {
        let r = heaplab_in(&d, args);
        assert_eq!(r.code, 2, "{args:?}: {}{}", r.stdout, r.stderr);
        for w in words {
            assert!(r.stderr.contains(w), "{args:?}: {w:?} not in {}", r.stderr);
        }
        assert!(!Path::new(&out).exists(), "{args:?} wrote its output");
    };
    for s in ["usage-df", "usage-grouped", "friends-df", "friends-grouped", "plan-affinity"] {
        fails(&["layout", &t, "--strategy", s, "-o", &out], &["--access", s]);
    }
    fails(&["layout", &bare, "--strategy", "plan", "--contexts", "-o", &out], &["bare.hltrace", "--stack-depth"]);
    fails(&["layout", &path(&d, "missing.hltrace"), "--strategy", "plan", "-o", &out], &["missing.hltrace"]);
    let text = crate::common::write(&d, "x.csv", crate::common::GOOD);
    fails(&["layout", &text, "--strategy", "plan", "-o", &out], &["x.csv"]);
    fails(&["layout", &t, "--strategy", "usage-df", "--access", &text, "-o", &out], &["x.csv", "access profile"]);
    fails(&["layout", &t, "--strategy", "nope", "-o", &out], &["nope"]);
    fails(&["layout", &t, "--strategy", "plan", "-o", &out, "--plot", &path(&d, "p.gif")], &["p.gif"]);
    fails(&["layout", &t, "--strategy", "plan", "-o", &t], &["input"]);
    // Damaged layouts: each named with the file and the problem.
    let good = path(&d, "good.hllayout");
    assert_eq!(heaplab_in(&d, &["layout", &t, "--strategy", "plan", "-o", &good]).code, 0);
    let bytes = std::fs::read(&good).unwrap();
    let bad = path(&d, "bad.hllayout");
    let cases: [(Vec<u8>, &str); 4] = [
        (bytes[..bytes.len() - 9].to_vec(), "truncated"),
        ({ let mut b = bytes.clone(); b[100] ^= 1; b }, "checksum"),
        ({ let mut b = bytes.clone(); b[0] = b'X'; b }, "magic"),
        ({ let mut b = bytes.clone(); b[8] = 9; b }, "version 9"),
    ];
    for (b, word) in cases {
        std::fs::write(&bad, b).unwrap();
        fails(&["layout-info", &bad], &["bad.hllayout", word]);
    }
    fails(&["layout-info", &path(&d, "none.hllayout")], &["none.hllayout"]);
}
