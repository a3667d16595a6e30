//! End-to-end tests of `heaplab access` on `tests/programs/access.c` (compiled here), whose heap
//! accesses are known exactly: per-block read and write counts, the co-access edges HALO's rule
//! gives for its access order, the friend edge of the one pointer it stores. Context keys are
//! checked against the tracer's frames of the same program turned into keys by
//! `heaplab_trace::context` (an independent capture of the same call sites). Bad profiles are
//! rejected with messages naming the file. Each run under valgrind takes about a second.
//!
//! When valgrind (or its tool libraries at build time) is missing, the tests that need it skip,
//! saying so.

use crate::common::{heaplab_in, Heaplab};
use heaplab_access::{AccessProfile, Edge};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The compiled test program in `dir`.
fn program(dir: &Path) -> String {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/programs/access.c");
    let exe = dir.join("access");
    let st = Command::new("cc").args(["-O2", "-o"]).arg(&exe).arg(&src).status();
    assert!(st.is_ok_and(|s| s.success()), "cannot compile {}: a C compiler (cc) is required", src.display());
    exe.to_string_lossy().into_owned()
}

/// Why profiling cannot run here, if it cannot.
fn unavailable() -> Option<String> {
    heaplab_access::run::available().err().map(|e| e.to_string())
}

macro_rules! need_valgrind {
    () => {
        if let Some(why) = unavailable() {
            eprintln!("skipped: {why}");
            return;
        }
    };
}

fn profile(dir: &Path, extra: &[&str], prog_args: &[&str]) -> (AccessProfile, PathBuf) {
    let exe = program(dir);
    let out = dir.join("p.hlaccess");
    let out_s = out.to_string_lossy().into_owned();
    let mut args = vec!["access", "-o", &out_s];
    args.extend_from_slice(extra);
    args.push("--");
    args.push(&exe);
    args.extend_from_slice(prog_args);
    let r = heaplab_in(dir, &args);
    assert_eq!(r.code, 0, "{args:?}: {}", r.stderr);
    assert!(r.stdout.is_empty(), "heaplab wrote to the program's standard output: {}", r.stdout);
    (heaplab_access::read(&out).unwrap(), out)
}

/// The program's blocks A, B, C, D by their distinct sizes.
fn four(p: &AccessProfile) -> [u64; 4] {
    [1000, 2000, 3000, 4000].map(|size| {
        let found: Vec<usize> = p.blocks.iter().enumerate().filter(|(_, b)| b.size == size).map(|(i, _)| i).collect();
        assert_eq!(found.len(), 1, "blocks of {size} bytes: {found:?}");
        found[0] as u64
    })
}

fn weight(edges: &[Edge], from: u64, to: u64) -> u64 {
    edges.iter().find(|e| e.from == from && e.to == to).map_or(0, |e| e.weight)
}

/// HALO's affinity edges (sorted (from, to, weight)) for blocks accessed in `order`, each access
/// `size` bytes, window `distance`: a repeat of the latest block adds nothing; otherwise each
/// distinct other block among the latest entries whose sizes (with its own) stay under the
/// distance gets an edge to it.
fn halo(order: &[u64], size: u64, distance: u64) -> Vec<(u64, u64, u64)> {
    let mut queue: Vec<u64> = Vec::new();
    let mut w = std::collections::BTreeMap::new();
    for &v in order {
        if queue.last() == Some(&v) {
            continue;
        }
        let mut seen = vec![v];
        let mut sum = 0;
        for &u in queue.iter().rev() {
            sum += size;
            if sum >= distance {
                break;
            }
            if !seen.contains(&u) {
                seen.push(u);
                *w.entry((u, v)).or_insert(0) += 1;
            }
        }
        queue.push(v);
    }
    w.into_iter().map(|((u, v), n)| (u, v, n)).collect()
}

#[test]
fn counts_edges_and_friends_are_exact() {
    need_valgrind!();
    let dir = scratch!("counts");
    let (p, _) = profile(&dir, &[], &[]);
    let [a, b, c, d] = four(&p);
    let rw = |i: u64| (p.blocks[i as usize].reads, p.blocks[i as usize].writes);
    assert_eq!(rw(a), (120, 0));
    assert_eq!(rw(b), (0, 50));
    assert_eq!(rw(c), (20, 0));
    assert_eq!(rw(d), (0, 1));
    assert!(p.blocks[a as usize].alloc_at < p.blocks[b as usize].alloc_at && p.blocks[a as usize].free_at != u64::MAX);
    // HALO's rule applied by hand to the program's order of 8-byte accesses is the oracle.
    let mut order = vec![a; 100];
    order.extend([b; 50]);
    for _ in 0..20 {
        order.extend([a, c]);
    }
    order.push(d);
    let ours = [a, b, c, d];
    let among: Vec<(u64, u64, u64)> =
        p.coaccess.iter().filter(|e| ours.contains(&e.from) && ours.contains(&e.to)).map(|e| (e.from, e.to, e.weight)).collect();
    let want = halo(&order, 8, 128);
    assert_eq!(among, want, "co-access edges among A, B, C, D = {ours:?}");
    // What that gives, spelled out: B stays within 128 bytes for the first 15 of the 40
    // interleaved accesses (8 of A's, 7 of C's).
    assert_eq!(want, vec![(a, b, 1), (a, c, 20), (a, d, 1), (b, a, 8), (b, c, 7), (c, a, 19), (c, d, 1)]);
    assert_eq!(weight(&p.friends, d, b), 1, "friends: {:?}", p.friends);
    assert_eq!(p.friends.iter().filter(|e| ours.contains(&e.from)).count(), 1, "friends: {:?}", p.friends);
    assert_eq!(p.info.affinity_distance, 128);
    assert!(p.info.heap_accesses >= 191 && p.info.accesses > p.info.heap_accesses, "{:?}", p.info);
}

#[test]
fn affinity_distance_narrows_the_window() {
    need_valgrind!();
    let dir = scratch!("distance");
    // With A = 8 only the entry right before counts, and its own 8 bytes reach A: no edges.
    let (p, _) = profile(&dir, &["--affinity-distance", "8"], &[]);
    assert!(p.coaccess.is_empty(), "{:?}", p.coaccess);
    assert_eq!(p.info.affinity_distance, 8);
}

#[test]
fn context_keys_agree_with_the_tracer() {
    need_valgrind!();
    let dir = scratch!("keys");
    let exe = program(&dir);
    for depth in ["1", "2"] {
        let out = dir.join(format!("k{depth}.hlaccess")).to_string_lossy().into_owned();
        let r = heaplab_in(&dir, &["access", "--stack-depth", depth, "-o", &out, "--", &exe]);
        assert_eq!(r.code, 0, "{}", r.stderr);
        let p = heaplab_access::read(&out).unwrap();
        let trace = dir.join(format!("k{depth}.hltrace")).to_string_lossy().into_owned();
        let r = heaplab_in(&dir, &["trace", "--stack-depth", depth, "-o", &trace, "--", &exe]);
        assert_eq!(r.code, 0, "{}", r.stderr);
        let mut reader = heaplab_trace::reader::TraceReader::open(&trace).unwrap();
        let events: Vec<_> = reader.by_ref().map(|s| s.event).collect();
        let ending = reader.into_ending();
        let modules = heaplab_trace::context::ModuleMap::new(&ending.trailer.expect("a complete trace").modules);
        for size in [1000u64, 2000, 3000, 4000] {
            let e = events.iter().find(|e| e.requested() == size).unwrap_or_else(|| panic!("no allocation of {size} in the trace"));
            let site = &ending.sites[&e.site];
            let want = modules.context_key(&site.frames);
            let block = p.blocks.iter().find(|b| b.size == size).unwrap();
            let ctx = &p.contexts[block.context as usize];
            assert_eq!(ctx.key, want, "depth {depth}, block of {size}: tool frames {:?}, tracer frames {:x?}", ctx.frames, site.frames);
            assert_eq!(ctx.frames.len(), site.frames.len().min(depth.parse().unwrap()));
            assert_eq!(ctx.frames[0].function, "main");
            assert!(ctx.frames[0].module.ends_with("/access"), "{:?}", ctx.frames[0]);
        }
    }
}

#[test]
fn exit_status_and_crash_are_passed_on() {
    need_valgrind!();
    let dir = scratch!("status");
    let exe = program(&dir);
    let r = heaplab_in(&dir, &["access", "--json", "-o", "s.hlaccess", "--", &exe, "3"]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(r.stderr.contains("exited with status 3"), "{}", r.stderr);
    let r = heaplab_in(&dir, &["access", "-o", "c.hlaccess", "--", &exe, "crash"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("SIGSEGV"), "{}", r.stderr);
    // Valgrind ends the tool before the program dies: the blocks are all there.
    let p = heaplab_access::read(dir.join("c.hlaccess")).unwrap();
    assert_eq!(p.blocks.iter().filter(|b| [1000, 2000, 3000, 4000].contains(&b.size)).count(), 4);
}

#[test]
fn a_wrapper_script_is_named_as_such() {
    need_valgrind!();
    use std::os::unix::fs::PermissionsExt;
    let dir = scratch!("script");
    let exe = program(&dir);
    let script = |name: &str, body: String| {
        let path = dir.join(name);
        std::fs::write(&path, body).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        path.to_string_lossy().into_owned()
    };
    // A shim that ends by exec'ing the program it wraps (as pyenv's do): no profile, and the
    // error says why and what to give instead.
    let shim = script("shim", format!("#!/bin/sh\nexec {exe} \"$@\"\n"));
    let r = heaplab_in(&dir, &["access", "-o", "s.hlaccess", "--", &shim]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("is a script") && r.stderr.contains("#!/bin/sh") && r.stderr.contains("give the program itself"), "{}", r.stderr);
    assert!(!dir.join("s.hlaccess").exists());
    // A script that runs the program as a child: its interpreter's profile, said so.
    let runner = script("runner", format!("#!/bin/sh\n{exe}\necho done\n"));
    let r = heaplab_in(&dir, &["access", "-o", "r.hlaccess", "--", &runner]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stderr.contains("is a script (#!/bin/sh)") && r.stderr.contains("interpreter's profile"), "{}", r.stderr);
    let r = heaplab_in(&dir, &["access", "--json", "-o", "r.hlaccess", "--", &runner]);
    assert!(r.stderr.contains("\"script_interpreter\": \"/bin/sh\""), "{}", r.stderr);
    // A compiled program is no script.
    let r = heaplab_in(&dir, &["access", "--json", "-o", "p.hlaccess", "--", &exe]);
    assert!(r.stderr.contains("\"script_interpreter\": null"), "{}", r.stderr);
}

#[test]
fn missing_program_and_bad_options_exit_2() {
    let dir = scratch!("usage");
    let r = heaplab_in(&dir, &["access", "-o", "x.hlaccess", "--", "./no-such-program-here"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("no-such-program-here") && (r.stderr.contains("not found") || r.stderr.contains("valgrind")), "{}", r.stderr);
    assert!(!dir.join("x.hlaccess").exists());
    for bad in [["--stack-depth", "0"], ["--stack-depth", "65"], ["--affinity-distance", "0"]] {
        let r = heaplab_in(&dir, &["access", bad[0], bad[1], "-o", "x.hlaccess", "--", "true"]);
        assert_eq!(r.code, 2, "{bad:?}: {}", r.stderr);
    }
    let r = Heaplab::new(&["access", "--help"]).run();
    assert_eq!(r.code, 0);
    assert!(r.stdout.contains("affinity") && r.stdout.contains("Examples:"), "{}", r.stdout);
}

#[test]
fn bad_profiles_are_rejected_with_the_file_named() {
    let dir = scratch!("bad");
    let full = heaplab_access::FullContext { key: heaplab_trace::context::context_key([]), frames: vec![], depths: vec![] };
    let good = heaplab_access::format::to_bytes(&AccessProfile {
        blocks: vec![heaplab_access::AccessBlock { size: 8, context: 0, alloc_at: 0, free_at: 1, reads: 1, writes: 2, full_context: 0 }],
        contexts: vec![heaplab_access::Context { key: 3, frames: vec![] }],
        full_contexts: vec![full],
        context_affinity: vec![Edge { from: 0, to: 0, weight: 1 }],
        ..Default::default()
    });
    // A change in the body, with the checksum redone: only the reader's checks can see it.
    let resealed = |at: usize, byte: u8| {
        let mut b = good.clone();
        b[at] = byte;
        let body = b.len() - 8;
        let sum = heaplab_trace::context::fnv1a(&b[..body]);
        b[body..].copy_from_slice(&sum.to_le_bytes());
        b
    };
    // The last bytes before the end marker: the block's full context, then the context edge.
    let edge = good.len() - 16 - 3;
    let cases: [(&str, Vec<u8>, &str); 7] = [
        ("magic.hlaccess", b"HLTRACE\0 not a profile at all, just some bytes".to_vec(), "bad magic"),
        ("version.hlaccess", { let mut b = good.clone(); b[8] = 9; b }, "version 9"),
        ("short.hlaccess", good[..good.len() - 5].to_vec(), "truncated"),
        ("flip.hlaccess", { let mut b = good.clone(); b[100] ^= 1; b }, "corrupt"),
        ("full-index.hlaccess", resealed(edge - 1, 1), "full context 1 out of range"),
        ("edge.hlaccess", resealed(edge + 1, 1), "context edge 0"),
        ("key.hlaccess", resealed(good.len() - 16 - 11 - 8, 0), "does not match its frames"),
    ];
    for (name, bytes, what) in cases {
        let path = dir.join(name);
        std::fs::write(&path, bytes).unwrap();
        let e = heaplab_access::read(&path).unwrap_err().to_string();
        assert!(e.starts_with(&path.display().to_string()) && e.contains(what), "{name}: {e}");
    }
}
