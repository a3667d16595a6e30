//! End-to-end tests of `heaplab access --contexts`: HALO's full contexts and context affinity
//! graph. `tests/programs/contexts.c` makes a known sequence of accesses to blocks of known
//! allocation sites; the expected context edges come from HALO's rules applied here, by
//! definition (co-allocatability by scanning the allocations in between, not the tool's
//! bookkeeping). Its recursive mode checks that recursion collapses into one context whose
//! depths are the deepest seen. `tests/programs/lists.c` (two lists walked in lockstep, one
//! alone, all allocated through one wrapper) must give three contexts and a heavy A-B edge.
//! Full-context keys are checked against the tracer's frames of the same program, reduced
//! here. Each run under valgrind takes about a second; tests skip when valgrind is missing.

use crate::common::{heaplab_in, json};
use heaplab_access::{AccessProfile, Edge};
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

/// `tests/programs/NAME.c` compiled in `dir` (sibling calls kept as calls and identical
/// functions kept apart, so each wrapper has a frame and a name of its own).
fn compile(dir: &Path, name: &str) -> String {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/programs/{name}.c"));
    let exe = dir.join(name);
    let st = Command::new("cc").args(["-O2", "-fno-optimize-sibling-calls", "-fno-ipa-icf", "-o"]).arg(&exe).arg(&src).arg("-lpthread").status();
    assert!(st.is_ok_and(|s| s.success()), "cannot compile {}: a C compiler (cc) is required", src.display());
    exe.to_string_lossy().into_owned()
}

macro_rules! need_valgrind {
    () => {
        if let Err(why) = heaplab_access::run::available() {
            eprintln!("skipped: {why}");
            return;
        }
    };
}

/// Profiles `exe args` with `heaplab access --contexts extra`.
fn profile(dir: &Path, name: &str, extra: &[&str], exe: &str, args: &[&str]) -> AccessProfile {
    let out = dir.join(format!("{name}.hlaccess")).to_string_lossy().into_owned();
    let mut all = vec!["access", "--contexts", "-o", &out];
    all.extend_from_slice(extra);
    all.push("--");
    all.push(exe);
    all.extend_from_slice(args);
    let r = heaplab_in(dir, &all);
    assert!(r.code == 0 || r.code == 1, "{all:?}: {}", r.stderr);
    heaplab_access::read(&out).unwrap()
}

/// The sizes of contexts.c's ten blocks, in allocation order, and their sites.
const ORDER: &[u8] = b"pqprqpPrqp";
fn size_of(i: usize) -> u64 {
    if ORDER[i] == b'P' {
        5000
    } else {
        48 + 8 * i as u64
    }
}

/// contexts.c's access sequence: block indices.
fn accesses() -> Vec<usize> {
    let mut x: u32 = 1;
    (0..300)
        .map(|_| {
            x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
            ((x >> 16) % 10) as usize
        })
        .collect()
}

/// HALO's context affinity (§4.2) by definition: objects `ctx`/`size` (allocation order),
/// accessed `order` (each access `access` bytes), window `distance`. A new access to u (not a
/// repeat of the latest) adds 1 to {ctx u, ctx v} for each distinct other object v among the
/// latest entries whose sizes stay under the distance, when both are at most `max` bytes and
/// no object of at most `max` bytes allocated between them came from either context.
fn halo_contexts(ctx: &[u32], size: &[u64], order: &[usize], access: u64, distance: u64, max: u64) -> Vec<(u64, u64, u64)> {
    let co_allocatable = |u: usize, v: usize| {
        let (a, b) = (u.min(v), u.max(v));
        (a + 1..b).all(|k| size[k] > max || (ctx[k] != ctx[u] && ctx[k] != ctx[v]))
    };
    let mut queue: Vec<usize> = Vec::new();
    let mut w = BTreeMap::new();
    for &u in order {
        if queue.last() == Some(&u) {
            continue;
        }
        let mut seen = vec![u];
        let mut sum = 0;
        for &v in queue.iter().rev() {
            sum += access;
            if sum >= distance {
                break;
            }
            if seen.contains(&v) {
                continue;
            }
            seen.push(v);
            if size[u] <= max && size[v] <= max && co_allocatable(u, v) {
                let (x, y) = (ctx[u].min(ctx[v]) as u64, ctx[u].max(ctx[v]) as u64);
                *w.entry((x, y)).or_insert(0) += 1;
            }
        }
        queue.push(u);
    }
    w.into_iter().map(|((x, y), n)| (x, y, n)).collect()
}

/// contexts.c's blocks in the profile, by their sizes.
fn ours(p: &AccessProfile) -> Vec<usize> {
    (0..10)
        .map(|i| {
            let found: Vec<usize> = p.blocks.iter().enumerate().filter(|(_, b)| b.size == size_of(i)).map(|(k, _)| k).collect();
            assert_eq!(found.len(), 1, "blocks of {} bytes: {found:?}", size_of(i));
            found[0]
        })
        .collect()
}

fn edges(e: &[Edge]) -> Vec<(u64, u64, u64)> {
    e.iter().map(|e| (e.from, e.to, e.weight)).collect()
}

#[test]
fn context_edges_follow_halos_rules_exactly() {
    need_valgrind!();
    let dir = scratch!("exact");
    let exe = compile(&dir, "contexts");
    let order = accesses();
    for (name, extra, distance, max) in [
        ("default", vec![], 128, 4096),
        ("narrow", vec!["--affinity-distance", "64", "--max-grouped-size", "100"], 64, 100),
        ("contexts-only", vec!["--graph", "contexts", "--affinity-distance", "48"], 48, 4096),
    ] {
        let p = profile(&dir, name, &extra, &exe, &[]);
        let blocks = ours(&p);
        let ctx: Vec<u32> = blocks.iter().map(|&b| p.blocks[b].full_context).collect();
        // One full context per site, three sites.
        for i in 0..10 {
            for j in 0..10 {
                let same_site = ORDER[i].eq_ignore_ascii_case(&ORDER[j]);
                assert_eq!(ctx[i] == ctx[j], same_site, "{name}: blocks {i} and {j}: contexts {ctx:?}");
            }
        }
        let size: Vec<u64> = (0..10).map(size_of).collect();
        let want = halo_contexts(&ctx, &size, &order, 8, distance, max);
        assert_eq!(edges(&p.context_affinity), want, "{name}: contexts of p q r = {} {} {}", ctx[0], ctx[1], ctx[3]);
        assert!(want.iter().any(|e| e.0 == e.1) && want.iter().any(|e| e.0 != e.1), "{name}: the sequence should give both kinds of edge: {want:?}");
        assert_eq!(p.info.max_grouped_size, max);
        assert_eq!(p.info.affinity_distance, distance);
        assert_eq!(p.info.context_modules, ["contexts"]);
        if name == "contexts-only" {
            assert!(p.coaccess.is_empty(), "--graph contexts built the block graph: {} edges", p.coaccess.len());
        } else {
            assert!(!p.coaccess.is_empty());
        }
    }
    // Without the context graph: full contexts, no context edges, no maximum size recorded.
    let p = profile(&dir, "blocks", &["--graph", "blocks"], &exe, &[]);
    assert!(p.context_affinity.is_empty() && p.info.max_grouped_size == 0 && p.full_contexts.len() >= 3);
    let p = profile(&dir, "none", &["--graph", "none"], &exe, &[]);
    assert!(p.context_affinity.is_empty() && p.coaccess.is_empty() && p.full_contexts.len() >= 3);
    assert_eq!(p.blocks[ours(&p)[0]].reads, order.iter().filter(|&&i| i == 0).count() as u64);
}

#[test]
fn full_context_keys_agree_with_the_tracer() {
    need_valgrind!();
    let dir = scratch!("keys");
    let exe = compile(&dir, "contexts");
    let p = profile(&dir, "k", &[], &exe, &[]);
    let trace = dir.join("k.hltrace").to_string_lossy().into_owned();
    let r = heaplab_in(&dir, &["trace", "--stack-depth", "32", "-o", &trace, "--", &exe]);
    assert!(r.code == 0 || r.code == 1, "{}", r.stderr);
    let mut reader = heaplab_trace::reader::TraceReader::open(&trace).unwrap();
    let events: Vec<_> = reader.by_ref().map(|s| s.event).collect();
    let ending = reader.into_ending();
    let modules = heaplab_trace::context::ModuleMap::new(&ending.trailer.expect("a complete trace").modules);
    for (i, &b) in ours(&p).iter().enumerate() {
        let e = events.iter().find(|e| e.requested() == size_of(i)).unwrap_or_else(|| panic!("no allocation of {} in the trace", size_of(i)));
        // The tracer's frames reduced by hand: the executable's only, each at its innermost
        // occurrence.
        let mut kept: Vec<u64> = Vec::new();
        for &f in &ending.sites[&e.site].frames {
            let in_exe = modules.find(f).is_some_and(|m| heaplab_trace::context::basename(&m.path) == b"contexts");
            if in_exe && !kept.contains(&f) {
                kept.push(f);
            }
        }
        let want = heaplab_trace::context::context_key(kept.iter().map(|&f| modules.frame_key(f)));
        let full = &p.full_contexts[p.blocks[b].full_context as usize];
        assert_eq!(full.key, want, "block {i}: tool frames {:?}", full.frames);
        let site = ["site_p", "site_q", "site_r"][(ORDER[i].to_ascii_lowercase() - b'p') as usize];
        let names: Vec<&str> = full.frames.iter().map(|f| f.function.as_str()).collect();
        assert_eq!(&names[..2], [site, "main"], "block {i}");
        assert_eq!(&full.depths[..2], [0, 1], "block {i}");
    }
}

#[test]
fn recursion_collapses_into_one_context_with_the_deepest_depth() {
    need_valgrind!();
    let dir = scratch!("recurse");
    let exe = compile(&dir, "contexts");
    let mut keys = Vec::new();
    for depth in [10u32, 25] {
        let p = profile(&dir, &format!("r{depth}"), &[], &exe, &["recurse", &depth.to_string()]);
        let nodes: Vec<u32> = p.blocks.iter().filter(|b| b.size == 16).map(|b| b.full_context).collect();
        assert_eq!(nodes.len(), depth as usize);
        // The first node is allocated by the outermost call (no recursive frame); all others,
        // at every recursion depth, share one context.
        assert!(nodes[1..].iter().all(|&c| c == nodes[1]) && nodes[0] != nodes[1], "{nodes:?}");
        let top = &p.full_contexts[nodes[0] as usize];
        let rec = &p.full_contexts[nodes[1] as usize];
        let names = |c: &heaplab_access::FullContext| c.frames.iter().map(|f| f.function.clone()).collect::<Vec<_>>();
        assert_eq!(names(top)[..2], ["build", "main"]);
        assert_eq!(names(rec)[..3], ["build", "build", "main"]);
        // build's call to malloc at 0, its recursive call at 1 (innermost occurrence), main's
        // call as deep as the deepest node put it: depth - 1 recursive frames, plus one.
        assert_eq!(rec.depths[..3], [0, 1, depth]);
        assert_eq!(top.depths[..2], [0, 1]);
        keys.push(rec.key);
    }
    assert_eq!(keys[0], keys[1], "the recursive context's key depends on the recursion depth");
}

#[test]
fn lists_walked_together_get_the_heavy_edge() {
    need_valgrind!();
    let dir = scratch!("lists");
    let exe = compile(&dir, "lists");
    let p = profile(&dir, "lists", &[], &exe, &["300", "50"]);
    // Nodes are 56 bytes, allocated A B C A B C ...
    let nodes: Vec<u32> = p.blocks.iter().filter(|b| b.size == 56).map(|b| b.full_context).collect();
    assert_eq!(nodes.len(), 900);
    let (a, b, c) = (nodes[0], nodes[1], nodes[2]);
    assert!(a != b && b != c && a != c, "{a} {b} {c}");
    for (i, &x) in nodes.iter().enumerate() {
        assert_eq!(x, [a, b, c][i % 3], "node {i}");
    }
    for (ctx, maker) in [(a, "make_a"), (b, "make_b"), (c, "make_c")] {
        let f = &p.full_contexts[ctx as usize];
        let names: Vec<&str> = f.frames.iter().map(|f| f.function.as_str()).collect();
        assert!(names[0].starts_with("xmalloc") && names[1..4] == ["new_node", maker, "work"] && names[4] == "main", "{names:?}");
        assert_eq!(f.depths[..5], [0, 1, 2, 3, 4], "{names:?}");
        assert!(f.frames.iter().all(|f| f.module.ends_with("/lists")), "{:?}", f.frames);
    }
    let w = |x: u32, y: u32| p.context_affinity.iter().find(|e| (e.from, e.to) == (x.min(y) as u64, x.max(y) as u64)).map_or(0, |e| e.weight);
    let (ab, ac, bc) = (w(a, b), w(a, c), w(b, c));
    assert!(ab > 10 * ac.max(bc) && ab >= 50 * 300, "A-B {ab}, A-C {ac}, B-C {bc}");
    // Consecutive nodes of one list are consecutive allocations of their context, and are
    // walked one after the other: each list has its self-loop.
    for x in [a, b, c] {
        assert!(w(x, x) >= 299, "self-loop of {x}: {}", w(x, x));
    }
}

#[test]
fn summary_shows_full_contexts_and_the_context_graph() {
    need_valgrind!();
    let dir = scratch!("summary");
    let exe = compile(&dir, "lists");
    let r = heaplab_in(&dir, &["access", "--contexts", "-o", "l.hlaccess", "--", &exe, "100", "2"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stderr.contains("full contexts  4 in lists") && r.stderr.contains("context graph ") && r.stderr.contains("new_node < make_a"), "{}", r.stderr);
    assert!(r.stderr.contains("heaplab group l.hlaccess"), "{}", r.stderr);
    let r = heaplab_in(&dir, &["access", "--contexts", "--json", "-o", "l.hlaccess", "--", &exe, "100", "2"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let v = json(&r.stderr, "access --json");
    let p = heaplab_access::read(dir.join("l.hlaccess")).unwrap();
    assert_eq!(v["full_contexts"], p.full_contexts.len());
    assert_eq!(v["context_modules"][0], "lists");
    assert_eq!(v["max_grouped_size"], 4096);
    assert_eq!(v["context_affinity"]["edges"], p.context_affinity.len());
    assert_eq!(v["context_affinity"]["weight"], p.context_affinity.iter().map(|e| e.weight).sum::<u64>());
    assert_eq!(v["context_affinity"]["self_edges"], p.context_affinity.iter().filter(|e| e.from == e.to).count());
    let top = &v["top_full_contexts"][0];
    assert_eq!(top["blocks"], 100);
    assert_eq!(top["frames"][1]["function"], "new_node");
    assert_eq!(top["frames"][1]["depth"], 1);
}

#[test]
fn context_options_are_checked() {
    let dir = scratch!("options");
    for (args, what) in [
        (&["--graph", "contexts"][..], "--contexts"),
        (&["--graph", "both"][..], "--contexts"),
        (&["--graph", "sideways"][..], "sideways"),
        (&["--context-module", "libx.so"][..], "--contexts"),
        (&["--contexts", "--context-module", "lib/x.so"][..], "file name"),
        (&["--contexts", "--context-module", ""][..], "file name"),
        (&["--contexts", "--max-grouped-size", "0"][..], "max-grouped-size"),
    ] {
        let mut all = vec!["access", "-o", "x.hlaccess"];
        all.extend_from_slice(args);
        all.extend(["--", "true"]);
        let r = heaplab_in(&dir, &all);
        if what == "file name" && heaplab_access::run::available().is_err() {
            continue; // checked once valgrind is there
        }
        assert_eq!(r.code, 2, "{args:?}: {}", r.stderr);
        assert!(r.stderr.contains(what), "{args:?}: {}", r.stderr);
        assert!(!dir.join("x.hlaccess").exists());
    }
}
