//! End-to-end tests of `heaplab run`: a program traced, a layout built from the trace through the
//! library (`heaplab_apply::source` + `strategy`, validated by the writer), then the program run
//! plainly and under the layout. The oracle is the plain run: standard output must be
//! byte-identical, and `tests/programs/applied.c` checks every byte of its live blocks before it
//! frees them, so a runtime that placed two live blocks over each other fails loudly. Covered:
//! threads, fork, exec, calloc zeroing on reuse, realloc in every direction, the aligned family,
//! usable sizes, frees of both kinds, a different input (mismatches fall back), every strategy,
//! contexts, the report's figures, bad layout files (exit 2, program not started), and real
//! programs (sqlite3, jq, xz, python3 with PYTHONMALLOC=malloc, the shared workloads).

use crate::common::{heaplab_in, real_programs, scratch_dir};
use crate::runtime::{applied, shared_workloads, streams_and_status_pass_through, trace};
use heaplab_apply::strategy::{build, Strategy, StrategyOptions};
use serde_json::Value;
use std::path::Path;
use std::time::Duration;

/// Builds a layout from `trace` with `strategy` and writes it (the writer validates it).
fn layout(dir: &Path, trace: &str, strategy: Strategy, contexts: bool) -> String {
    let source = heaplab_apply::source::read(trace, contexts).unwrap_or_else(|e| panic!("{trace}: {e}"));
    let opts = StrategyOptions { time_limit: Duration::from_secs(1), seed: 7 };
    let built = build(strategy, &source, None, &opts).unwrap_or_else(|e| panic!("{}: {e}", strategy.name()));
    let path = dir.join(format!("{}{}.hllayout", strategy.name(), if contexts { "-ctx" } else { "" }));
    let path = path.to_string_lossy().into_owned();
    heaplab_apply::format::write(&path, &built.layout).unwrap();
    path
}

/// Runs `cmd` plainly, then under `layout` (`runtime::same_as_plain`); requires a summary and
/// every allocation planned or fallen back, and returns the report.
fn same_as_plain(dir: &Path, layout: &str, cmd: &[&str], env: &[(&str, &str)], extra: &[&str]) -> Value {
    let reasons = ["unplanned", "size_mismatch", "beyond_layout", "unknown_context", "busy", "misaligned"];
    let (v, r, _) = crate::runtime::same_as_plain(dir, &["--layout", layout], &reasons, cmd, env, extra);
    assert!(r.stderr.contains("heaplab run: layout"), "no summary: {}", r.stderr);
    assert_eq!(v["allocations"].as_u64().unwrap(), v["planned"].as_u64().unwrap() + v["fallback"]["count"].as_u64().unwrap(), "{v}");
    v
}

fn rate(v: &Value) -> f64 {
    v["match_rate"].as_f64().unwrap()
}

#[test]
fn mix_same_input_every_strategy_identical_output_and_plan_matches() {
    let dir = scratch_dir("run", "mix");
    let p = applied();
    let t = trace(&dir, "mix", 0, &[&p, "mix", "6"], &[]);
    for s in [Strategy::Plan, Strategy::Simple, Strategy::Random, Strategy::Size, Strategy::OnePerLine] {
        let l = layout(&dir, &t, s, false);
        let v = same_as_plain(&dir, &l, &[&p, "mix", "6"], &[], &[]);
        // A single thread on the same input makes the same calls: everything matches, and a
        // planned slot is free whenever its block comes (pvalloc always falls back).
        assert!(rate(&v) >= 0.99, "{}: {v}", s.name());
        assert_eq!(v["first_mismatch"], Value::Null, "{}: {v}", s.name());
        assert_eq!(v["fallback"]["busy"], 0, "{}: {v}", s.name());
        if s == Strategy::Plan {
            assert!(v["frees_region"].as_u64().unwrap() > 0);
        }
    }
}

#[test]
fn a_different_input_falls_back_and_still_runs_correctly() {
    let dir = scratch_dir("run", "different");
    let p = applied();
    let t = trace(&dir, "small", 0, &[&p, "mix", "3"], &[]);
    for s in [Strategy::Plan, Strategy::Simple] {
        let l = layout(&dir, &t, s, false);
        let v = same_as_plain(&dir, &l, &[&p, "mix", "9"], &[], &[]);
        assert!(rate(&v) < 0.9, "{v}");
        let fb = &v["fallback"];
        assert!(fb["size_mismatch"].as_u64().unwrap() > 0 && fb["beyond_layout"].as_u64().unwrap() > 0, "{v}");
        assert!(v["first_mismatch"]["ordinal"].is_u64(), "{v}");
    }
}

#[test]
fn global_ordinals_resynchronise_after_an_extra_allocation() {
    // jemalloc's start-up makes an allocation (libstdc++'s 72 KiB emergency pool) that a trace
    // under glibc does not have: without resynchronisation every later ordinal would be off by one.
    if !std::path::Path::new("/usr/lib/x86_64-linux-gnu/libjemalloc.so.2").exists() {
        eprintln!("skipped: jemalloc not installed");
        return;
    }
    let dir = scratch_dir("run", "resync");
    let p = applied();
    let t = trace(&dir, "glibc", 0, &[&p, "mix", "4"], &[]);
    let l = layout(&dir, &t, Strategy::Plan, false);
    let v = same_as_plain(&dir, &l, &[&p, "mix", "4"], &[], &["--fallback", "jemalloc"]);
    if v["fallback"]["size_mismatch"].as_u64().unwrap() > 0 {
        assert!(v["resyncs"].as_u64().unwrap() >= 1, "{v}");
    }
    assert!(rate(&v) >= 0.9, "{v}");
}

#[test]
fn contexts_identify_by_call_site() {
    let dir = scratch_dir("run", "contexts");
    let p = applied();
    let t = trace(&dir, "ctx", 4, &[&p, "mix", "4"], &[]);
    let l = layout(&dir, &t, Strategy::Plan, true);
    let v = same_as_plain(&dir, &l, &[&p, "mix", "4"], &[], &[]);
    assert!(v["stack_depth"].as_u64().unwrap() == 4 && v["contexts"].as_u64().unwrap() > 1, "{v}");
    assert!(rate(&v) >= 0.99, "{v}");
    // Another input: per-context ordinals keep matching where the global order would not.
    let v = same_as_plain(&dir, &l, &[&p, "mix", "5"], &[], &[]);
    assert!(v["fallback"]["count"].as_u64().unwrap() > 0, "{v}");
}

#[test]
fn threads_fork_and_exec() {
    let dir = scratch_dir("run", "procs");
    let p = applied();
    for (name, cmd) in [("threads", vec![&p[..], "threads", "8", "2"]), ("fork", vec![&p[..], "fork", "3"]), ("exec", vec![&p[..], "exec", "3"])] {
        let t = trace(&dir, name, 0, &cmd, &[]);
        for s in [Strategy::Plan, Strategy::Simple] {
            let l = layout(&dir, &t, s, false);
            let v = same_as_plain(&dir, &l, &cmd, &[], &[]);
            assert!(v["planned"].as_u64().unwrap() > 0, "{name} {}: {v}", s.name());
            if name == "exec" {
                assert_eq!(v["end"], "exec", "{v}");
            }
        }
        // Under another fallback allocator too.
        let l = layout(&dir, &t, Strategy::Plan, false);
        same_as_plain(&dir, &l, &cmd, &[], &["--fallback", "jemalloc"]);
    }
}

#[test]
fn bad_layouts_are_rejected_before_the_program_starts() {
    let dir = scratch_dir("run", "bad");
    let p = applied();
    let t = trace(&dir, "mix", 0, &[&p, "mix", "1"], &[]);
    let good = std::fs::read(layout(&dir, &t, Strategy::Plan, false)).unwrap();
    let marker = dir.join("started");
    let cmd = format!("touch {}", marker.display());
    let mut cases: Vec<(&str, Vec<u8>)> = vec![
        ("empty", Vec::new()),
        ("magic", [b"NOTALAYO".as_slice(), &good[8..]].concat()),
        ("truncated", good[..good.len() / 2].to_vec()),
    ];
    let mut flipped = good.clone();
    let mid = flipped.len() / 2;
    flipped[mid] ^= 0x40;
    cases.push(("checksum", flipped));
    for (name, bytes) in cases {
        let f = dir.join(format!("{name}.hllayout"));
        std::fs::write(&f, bytes).unwrap();
        let r = heaplab_in(&dir, &["run", "--layout", &f.to_string_lossy(), "--", "sh", "-c", &cmd]);
        assert_eq!(r.code, 2, "{name}: {}", r.stderr);
        assert!(r.stderr.contains(&*f.to_string_lossy()), "{name}: the message names the file: {}", r.stderr);
        assert!(!marker.exists(), "{name}: the program ran");
    }
    let r = heaplab_in(&dir, &["run", "--layout", "no-such.hllayout", "--", "true"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    let r = heaplab_in(&dir, &["run", "--layout", &layout(&dir, &t, Strategy::Simple, false), "--", "no-such-program-here"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
}

#[test]
fn exit_status_and_streams_pass_through() {
    let dir = scratch_dir("run", "status");
    let p = applied();
    let t = trace(&dir, "mix", 0, &[&p, "mix", "1"], &[]);
    let l = layout(&dir, &t, Strategy::Plan, false);
    streams_and_status_pass_through(&dir, &["--layout", &l]);
}

/// A real program: traced once, then its output under layouts of several strategies must equal
/// a plain run's; `plan` on the same input must serve at least 99% of its allocations.
fn real(dir: &Path, name: &str, cmd: &[&str], env: &[(&str, &str)]) {
    let t = trace(dir, name, 0, cmd, env);
    for s in [Strategy::Plan, Strategy::Simple, Strategy::Size, Strategy::Random] {
        let l = layout(dir, &t, s, false);
        let v = same_as_plain(dir, &l, cmd, env, &[]);
        if s == Strategy::Plan {
            assert!(rate(&v) >= 0.99, "{name} plan: {v}");
        }
    }
}

#[test]
fn real_programs_give_identical_output() {
    let dir = scratch_dir("run", "real");
    for (name, cmd, env) in real_programs(&dir) {
        real(&dir, name, cmd, env);
    }
}

/// Pointer-chasing workloads of `../shared/workloads`, built here, on small arguments.
#[test]
fn shared_workloads_give_identical_output() {
    let names = ["mst", "bisort", "treeadd"];
    let Some((dir, bins)) = shared_workloads("run", &names) else { return };
    for ((name, bin), args) in names.iter().zip(&bins).zip(["200", "20000", "12"]) {
        real(&dir, name, &[bin, args], &[]);
    }
}
