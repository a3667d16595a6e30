//! End-to-end tests of `heaplab run --groups`: a program traced with call stacks, groups built
//! by hand from the trace's contexts (sites are the frames as module basename + file offset, as
//! grouping names them), written with `heaplab_group::format::write` (which validates them),
//! then the program run plainly and grouped. The oracle is the plain run: standard output, error
//! and exit status must be identical, and `tests/programs/applied.c` checks every byte of its
//! live blocks before it frees them, so an allocator that handed out overlapping memory, or
//! lost bytes in a realloc, fails loudly. Identification is checked against the trace: the
//! contexts of `tests/programs/lists.c` (A, B and C nodes, N each) must land in exactly the
//! groups whose selectors name them, first match first, and the others must fall back.
//! Covered: threads, fork, exec, calloc on reused memory, realloc in every direction, the
//! aligned family, usable sizes, a renamed copy of the program profiled, bad groups files (exit
//! 2, program not started), and real programs (sqlite3, jq, xz, python3; health, mst and
//! treeadd from ../shared) with hand-made and empty group sets.

use crate::common::{heaplab_in, prog, real_programs, scratch_dir, Heaplab};
use crate::runtime::{applied, compiled, shared_workloads, streams_and_status_pass_through, trace};
use heaplab_group::{Group, GroupContext, Groups, Identification, ObjectSizes, Params, Site};
use heaplab_trace::context::{basename, ModuleMap};
use heaplab_trace::reader::Half;
use heaplab_trace::TraceReader;
use serde_json::Value;
use std::collections::HashMap;
use std::path::Path;

fn lists() -> String {
    compiled("lists", &["-O2", "-pthread"])
}

/// A frame as grouping names it.
type Frame = (String, u64);

/// One call site of a traced run: its allocations and its frames (innermost first).
struct Ctx {
    count: u64,
    frames: Vec<Frame>,
}

/// Traces `cmd` in `dir` with stacks of `depth` frames; returns its call sites in the order of
/// their first allocation.
fn contexts(dir: &Path, name: &str, depth: u32, cmd: &[&str], env: &[(&str, &str)]) -> Vec<Ctx> {
    let path = trace(dir, name, depth, cmd, env);
    let mut reader = TraceReader::open(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let mut order: Vec<u32> = Vec::new();
    let mut counts: HashMap<u32, u64> = HashMap::new();
    for step in reader.by_ref() {
        let e = step.event;
        if step.half == Half::Release || e.ptr_out == 0 || e.site == 0 {
            continue;
        }
        let c = counts.entry(e.site).or_insert(0);
        if *c == 0 {
            order.push(e.site);
        }
        *c += 1;
    }
    let ending = reader.into_ending();
    let map = ModuleMap::new(&ending.trailer.as_ref().expect("a trailer").modules);
    order
        .iter()
        .filter_map(|id| {
            let site = ending.sites.get(id)?;
            let frames = site
                .frames
                .iter()
                .map(|&a| match map.find(a) {
                    Some(m) => (String::from_utf8_lossy(basename(&m.path)).into_owned(), a - m.start + m.offset),
                    None => ("?".to_string(), a),
                })
                .collect();
            Some(Ctx { count: counts[id], frames })
        })
        .collect()
}

/// Groups built by hand: sites numbered as they are first named, each with the deepest stack
/// position it is used at; the walk depth follows.
struct Builder {
    g: Groups,
    index: HashMap<Frame, u32>,
}

impl Builder {
    fn new(ngroups: usize) -> Builder {
        let g = Groups {
            // Only the contexts named have a group: the others fall back, whole call sites or not.
            params: Params { whole_call_sites: false, ..Params::default() },
            command: vec!["test".into()],
            affinity_distance: 128,
            sites: Vec::new(),
            contexts: Vec::new(),
            edges: Vec::new(),
            groups: vec![Group { members: Vec::new(), weight: 1, accesses: 1, selector: Vec::new() }; ngroups],
            walk_depth: 0,
            identification: Default::default(),
        };
        Builder { g, index: HashMap::new() }
    }

    /// The site of `frame` seen at stack position `depth`.
    fn site(&mut self, frame: &Frame, depth: u32) -> u32 {
        let n = self.g.sites.len() as u32;
        let k = *self.index.entry(frame.clone()).or_insert(n);
        if k == n {
            self.g.sites.push(Site { module: frame.0.clone(), file_offset: frame.1, function: String::new(), max_depth: depth });
        }
        let s = &mut self.g.sites[k as usize];
        s.max_depth = s.max_depth.max(depth);
        k
    }

    /// Adds a context (its frames as sites) to `group`.
    fn context(&mut self, c: &Ctx, group: Option<u32>) {
        let sites = c.frames.iter().enumerate().map(|(d, f)| self.site(f, d as u32)).collect();
        let i = self.g.contexts.len() as u32;
        self.g.contexts.push(GroupContext { sites, group, accesses: 1, objects: c.count, bytes: c.count, small_accesses: 1, small_bytes: c.count, kept: group.is_some(), churns: false, sizes: None });
        if let Some(k) = group {
            self.g.groups[k as usize].members.push(i);
        }
    }

    /// Gives every context the sizes `of` its group says (as `heaplab group` records them).
    fn sizes(&mut self, of: impl Fn(Option<u32>) -> ObjectSizes) {
        for c in &mut self.g.contexts {
            c.sizes = Some(of(c.group));
        }
    }

    /// Adds a conjunction of (frame, stack position) to group k's selector.
    fn select(&mut self, k: usize, conj: &[(&Frame, u32)]) {
        let sites = conj.iter().map(|(f, d)| self.site(f, *d)).collect();
        self.g.groups[k].selector.push(sites);
    }

    /// Writes the groups to `dir/name.hlgroups`.
    fn write(mut self, dir: &Path, name: &str) -> String {
        self.g.walk_depth = self.g.groups.iter().flat_map(|g| g.selector.iter().flatten()).map(|&s| self.g.sites[s as usize].max_depth + 1).max().unwrap_or(0);
        let path = dir.join(format!("{name}.hlgroups")).to_string_lossy().into_owned();
        heaplab_group::format::write(&path, &self.g).unwrap_or_else(|e| panic!("{path}: {e}"));
        path
    }
}

/// Groups every context of `ctxs` (but each `skip`-th, left ungrouped) round-robin into
/// `ngroups` groups, each selected by the conjunction of all its frames.
fn round_robin(dir: &Path, name: &str, ctxs: &[Ctx], ngroups: usize, skip: usize) -> String {
    let mut b = Builder::new(ngroups);
    let mut k = 0;
    for (i, c) in ctxs.iter().enumerate() {
        if (i + 1) % skip == 0 || c.frames.iter().any(|f| f.0 == "?") {
            b.context(c, None);
            continue;
        }
        b.context(c, Some((k % ngroups) as u32));
        let conj: Vec<(&Frame, u32)> = c.frames.iter().enumerate().map(|(d, f)| (f, d as u32)).collect();
        b.select(k % ngroups, &conj);
        k += 1;
    }
    assert!(k >= ngroups, "{name}: too few contexts to group");
    b.write(dir, name)
}

/// Runs `cmd` plainly, then grouped (`runtime::same_as_plain`); requires the same standard
/// error too, every allocation grouped or fallen back and nothing exhausted, and returns the
/// report.
fn same_as_plain(dir: &Path, groups: &str, cmd: &[&str], env: &[(&str, &str)], extra: &[&str]) -> Value {
    let reasons = ["too_big", "aligned", "ungrouped", "exhausted"];
    let (v, r, plain) = crate::runtime::same_as_plain(dir, &["--quiet", "--groups", groups], &reasons, cmd, env, extra);
    assert!(r.stderr == String::from_utf8_lossy(&plain.stderr), "{cmd:?} under {groups}: standard error differs\n--- plain\n{}\n--- run\n{}", String::from_utf8_lossy(&plain.stderr), r.stderr);
    let per_group: u64 = v["groups"].as_array().unwrap().iter().map(|g| g["count"].as_u64().unwrap()).sum();
    assert_eq!(v["grouped"]["count"].as_u64().unwrap(), per_group, "{v}");
    assert_eq!(v["allocations"].as_u64().unwrap(), per_group + v["fallback"]["count"].as_u64().unwrap(), "{v}");
    assert_eq!(v["fallback"]["exhausted"], 0, "{v}");
    v
}

/// `heaplab run --groups` with a file that holds no groups: the program runs on the fallback
/// alone (the allocator is not loaded) and must behave exactly as a plain run; the report has
/// the launcher's figures and says that nothing was counted.
fn ran_alone(dir: &Path, groups: &str, cmd: &[&str], env: &[(&str, &str)], extra: &[&str]) -> (Value, String) {
    let (v, r, plain) = crate::runtime::beside_plain(dir, &["--groups", groups], cmd, env, extra);
    // The program's own error output, then heaplab's summary.
    assert!(r.stderr.starts_with(&*String::from_utf8_lossy(&plain.stderr)), "{cmd:?}: {}", r.stderr);
    assert_eq!((&v["allocator_loaded"], &v["allocations"], &v["fallback"]), (&Value::Bool(false), &Value::Null, &Value::Null), "{v}");
    assert_eq!(n(&v, &["grouped", "count"]), 0, "{v}");
    assert!(n(&v, &["peak_rss_bytes"]) > 0 && v["wall_seconds"].as_f64().unwrap() > 0.0, "{v}");
    (v, r.stderr)
}

fn n(v: &Value, path: &[&str]) -> u64 {
    path.iter().fold(v, |v, k| if let Ok(i) = k.parse::<usize>() { &v[i] } else { &v[*k] }).as_u64().unwrap_or_else(|| panic!("{path:?} in {v}"))
}

/// The three node contexts of lists.c (A, B, C: allocated in that order, `count` each) and the
/// first stack position at which each differs from the other two.
fn abc(ctxs: &[Ctx], count: u64) -> [(&Ctx, usize); 3] {
    let nodes: Vec<&Ctx> = ctxs.iter().filter(|c| c.count == count).collect();
    assert_eq!(nodes.len(), 3, "lists: expected three contexts of {count} nodes");
    let apart = |i: usize| (0..nodes[i].frames.len()).find(|&d| (0..3).all(|j| j == i || nodes[j].frames.get(d) != Some(&nodes[i].frames[d]))).expect("contexts that differ");
    [(nodes[0], apart(0)), (nodes[1], apart(1)), (nodes[2], apart(2))]
}

/// Groups for lists.c profiled with `count` nodes and `rounds`: A and B nodes in group 0, each
/// told by the frame that sets it apart; C nodes in none.
fn a_and_b_grouped(dir: &Path, p: &str, count: &str, rounds: &str) -> String {
    let ctxs = contexts(dir, "lists", 8, &[p, count, rounds], &[]);
    let [(a, da), (b, db), (c, _)] = abc(&ctxs, count.parse().unwrap());
    let mut g = Builder::new(1);
    g.context(a, Some(0));
    g.context(b, Some(0));
    g.context(c, None);
    g.select(0, &[(&a.frames[da], da as u32)]);
    g.select(0, &[(&b.frames[db], db as u32)]);
    g.write(dir, "ab")
}

#[test]
fn lists_a_and_b_share_a_group_c_falls_back() {
    let dir = scratch_dir("group_run", "lists");
    let p = lists();
    let file = a_and_b_grouped(&dir, &p, "500", "3");
    for threads in ["1", "4"] {
        let v = same_as_plain(&dir, &file, &[&p, "2000", "3", threads], &[], &[]);
        let t: u64 = threads.parse().unwrap();
        assert_eq!(n(&v, &["groups", "0", "count"]), 2 * 2000 * t, "A and B nodes, all of them: {v}");
        assert!(n(&v, &["fallback", "ungrouped"]) >= 2000 * t, "C nodes fall back: {v}");
        // One thread frees its lists only at the end, so nothing is reused; threads that finish
        // early empty the shared current chunk, which later threads then bump through again.
        let resident = n(&v, &["fragmentation", "peak_resident_bytes"]);
        assert!(n(&v, &["chunks", "fresh"]) >= 1 && resident >= n(&v, &["fragmentation", "live_bytes"]), "{v}");
        assert!(t > 1 || resident >= n(&v, &["grouped", "bytes"]), "{v}");
        assert_eq!(n(&v, &["frees_grouped"]), 2 * 2000 * t, "{v}");
        assert_eq!(n(&v, &["sites_unresolved"]), 0, "{v}");
        assert_eq!(v["fallback_allocator"], "jemalloc", "{v}");
        // The walker against glibc's backtrace(): the same groups, allocation for allocation.
        let reference = same_as_plain(&dir, &file, &[&p, "2000", "3", threads], &[("HEAPLAB_UNWIND", "backtrace")], &[]);
        assert_eq!((&reference["groups"], &reference["fallback"]), (&v["groups"], &v["fallback"]), "{reference}");
    }
    // Huge pages asked for beyond the grouped heap's first 2 MiB (--huge-pages, enough nodes to
    // get there): the same groups, allocation for allocation.
    let big = [&p[..], "60000", "3", "2"];
    let small_pages = same_as_plain(&dir, &file, &big, &[], &[]);
    let huge = same_as_plain(&dir, &file, &big, &[], &["--huge-pages"]);
    // Granted, or refused where the kernel has transparent huge pages off: the report says which.
    assert!(["on", "refused"].contains(&huge["settings"]["huge_pages"].as_str().unwrap_or("")), "{huge}");
    assert_eq!(small_pages["settings"]["huge_pages"], "off", "{small_pages}");
    assert_eq!((&huge["groups"], &huge["fallback"]), (&small_pages["groups"], &small_pages["fallback"]), "{huge}");
    assert!(n(&huge, &["grouped", "bytes"]) > 2 << 20, "past the first 2 MiB: {huge}");
}

/// What `heaplab group` writes when identification would cost too much: the profile's
/// contexts, none grouped. The program then runs on the fallback alone, and the summary says
/// why.
#[test]
fn groups_dropped_for_their_cost_send_everything_to_the_fallback_unwalked() {
    let dir = scratch_dir("group_run", "dropped");
    let p = lists();
    let ctxs = contexts(&dir, "lists", 8, &[&p, "500", "3"], &[]);
    let mut g = Builder::new(0);
    for c in &ctxs {
        g.context(c, None);
    }
    g.g.identification = Identification { walk_per_object: 100.0, dropped: true };
    let file = g.write(&dir, "dropped");
    let (v, told) = ran_alone(&dir, &file, &[&p, "2000", "3", "2"], &[], &[]);
    assert_eq!(v["fallback_allocator"], "jemalloc", "{v}");
    assert!(told.contains("no groups to apply, so the program ran on jemalloc alone") && told.contains("about 100 stack frames per grouped object"), "{told}");
}

/// A file whose every group jemalloc would lay out as the group does (each in one of its size
/// classes, exactly that size, alone, never freed): with jemalloc as the fallback the program
/// runs on it alone and the summary says why; --all-groups, another fallback, or another
/// context in the class, and the groups are applied.
#[test]
fn groups_jemalloc_lays_out_alike_run_on_jemalloc_alone() {
    let dir = scratch_dir("group_run", "alike");
    let p = lists();
    let cmd = [&p[..], "2000", "3", "1"];
    let ctxs = contexts(&dir, "lists", 8, &[&p, "500", "3"], &[]);
    let [(a, da), (b, db), (c, _)] = abc(&ctxs, 500);
    // A and B nodes in group 0, recorded as 48 bytes; every other context `others`.
    let build = |others: ObjectSizes, name: &str| {
        let mut g = Builder::new(1);
        g.context(a, Some(0));
        g.context(b, Some(0));
        g.context(c, None);
        for x in ctxs.iter().filter(|x| x.count != 500) {
            g.context(x, None);
        }
        g.select(0, &[(&a.frames[da], da as u32)]);
        g.select(0, &[(&b.frames[db], db as u32)]);
        g.sizes(|k| if k.is_some() { ObjectSizes { min: 48, max: 48, freed: 0 } } else { others });
        g.write(&dir, name)
    };
    let alike = build(ObjectSizes { min: 1024, max: 1024, freed: 0 }, "alike");
    let (v, told) = ran_alone(&dir, &alike, &cmd, &[], &[]);
    assert_eq!(v["declined_groups"], serde_json::json!([{"group": 0, "size_class": 48}]), "{v}");
    assert!(told.contains("jemalloc lays out every group as the grouped allocator would (each takes one of its size classes, 48 B, exactly"), "{told}");
    for extra in [&["--all-groups"][..], &["--fallback", "glibc"]] {
        let v = same_as_plain(&dir, &alike, &cmd, &[], extra);
        assert_eq!(n(&v, &["groups", "0", "count"]), 2 * 2000, "{extra:?}: {v}");
        assert_eq!(v["declined_groups"], serde_json::json!([]), "{v}");
    }
    // Other objects of 40 to 56 bytes: jemalloc would put some in the 48 class beside the
    // group's, so grouping changes the layout and applies.
    let shared = build(ObjectSizes { min: 40, max: 56, freed: 0 }, "shared");
    let v = same_as_plain(&dir, &shared, &cmd, &[], &[]);
    assert_eq!(n(&v, &["groups", "0", "count"]), 2 * 2000, "{v}");
}

#[test]
fn odd_sized_objects_pack_densely_unless_aligned_to_16() {
    // lists.c's nodes are 56 bytes: 8-aligned they follow each other with no gap; with
    // --align-16 each takes 64, and the grouped heap's unused bytes at its peak say so.
    let dir = scratch_dir("group_run", "pack");
    let p = lists();
    let file = a_and_b_grouped(&dir, &p, "300", "2");
    let nodes = 2 * 3000;
    let dense = same_as_plain(&dir, &file, &[&p, "3000", "2"], &[], &[]);
    let padded = same_as_plain(&dir, &file, &[&p, "3000", "2"], &[], &["--align-16"]);
    for v in [&dense, &padded] {
        assert_eq!(n(v, &["groups", "0", "count"]), nodes, "{v}");
    }
    assert_eq!((&dense["settings"]["alignment"], &padded["settings"]["alignment"]), (&"size".into(), &"16".into()));
    let unused = |v: &Value| n(v, &["fragmentation", "bytes"]);
    // (footprints are counted in pages, so one page either way)
    assert!(unused(&padded) + 4096 >= unused(&dense) + 8 * nodes, "dense {dense}\npadded {padded}");
    assert!(unused(&dense) < 8 * nodes / 4, "{dense}");
}

#[test]
fn the_same_context_always_maps_to_the_same_group_first_match_first() {
    let dir = scratch_dir("group_run", "identify");
    let p = lists();
    let ctxs = contexts(&dir, "lists", 8, &[&p, "300", "2"], &[]);
    let [(a, da), (b, db), (c, dc)] = abc(&ctxs, 300);
    // Group 0 selects A; group 1 a frame A, B and C share (the wrapper's call of malloc), so it
    // takes B and C but not A, which group 0 matched first; group 2 selects B but comes too late.
    let shared = (0..a.frames.len()).find(|&d| b.frames.get(d) == Some(&a.frames[d]) && c.frames.get(d) == Some(&a.frames[d])).expect("a frame the nodes share");
    let mut g = Builder::new(3);
    g.context(a, Some(0));
    g.context(c, Some(1));
    g.context(b, Some(2));
    g.select(0, &[(&a.frames[da], da as u32)]);
    g.select(1, &[(&a.frames[shared], shared as u32), (&c.frames[dc], dc as u32)]);
    g.select(1, &[(&a.frames[shared], shared as u32)]);
    g.select(2, &[(&b.frames[db], db as u32)]);
    let file = g.write(&dir, "order");
    for threads in ["1", "3"] {
        let v = same_as_plain(&dir, &file, &[&p, "1000", "2", threads], &[], &[]);
        let t: u64 = threads.parse().unwrap();
        assert_eq!(n(&v, &["groups", "0", "count"]), 1000 * t, "{v}");
        assert!(n(&v, &["groups", "1", "count"]) >= 2 * 1000 * t, "{v}");
        assert_eq!(n(&v, &["groups", "2", "count"]), 0, "{v}");
    }
    // The walk memo (each thread's last walks, replayed while their stack words hold): A, B and
    // C nodes are allocated from one stack position through the same frames up to the call
    // sites that tell them apart, so a replay that missed a changed word would misplace them.
    // With it off every walk is fresh; the answers must be the same, allocation for allocation.
    for threads in ["1", "3"] {
        let cmd = [&p[..], "1000", "2", threads];
        let kept = same_as_plain(&dir, &file, &cmd, &[], &[]);
        let fresh = same_as_plain(&dir, &file, &cmd, &[("HEAPLAB_GROUP_MEMO", "0")], &[]);
        assert_eq!((&fresh["groups"], &fresh["fallback"]), (&kept["groups"], &kept["fallback"]), "{fresh}\n{kept}");
        assert_eq!(n(&fresh, &["identification", "replayed"]), 0, "{fresh}");
        assert!(n(&kept, &["identification", "replayed"]) * 2 > n(&kept, &["identification", "walks"]), "most walks repeat: {kept}");
    }
    // An empty group set: the program runs on the fallback alone, threads and all.
    let empty = Builder::new(0).write(&dir, "empty");
    ran_alone(&dir, &empty, &[&p, "1000", "2", "3"], &[], &[]);
}

#[test]
fn every_allocation_call_is_exact_grouped() {
    let dir = scratch_dir("group_run", "applied");
    let p = applied();
    for (name, cmd) in [
        ("mix", vec![&p[..], "mix", "6"]),
        ("threads", vec![&p[..], "threads", "8", "2"]),
        ("fork", vec![&p[..], "fork", "3"]),
        ("exec", vec![&p[..], "exec", "3"]),
    ] {
        let ctxs = contexts(&dir, name, 4, &cmd, &[]);
        let file = round_robin(&dir, name, &ctxs, 3, 5);
        for fallback in ["jemalloc", "glibc"] {
            let v = same_as_plain(&dir, &file, &cmd, &[], &["--fallback", fallback]);
            assert!(n(&v, &["grouped", "count"]) > 0, "{name}: {v}");
            if name == "exec" {
                assert_eq!(v["end"], "exec", "{v}");
            }
            if name == "mix" {
                assert!(n(&v, &["fallback", "aligned"]) > 0 && n(&v, &["fallback", "too_big"]) > 0, "{v}");
            }
        }
        if name == "mix" {
            // The program checks every block's alignment: 16 from 16 bytes up with --align-16.
            let v = same_as_plain(&dir, &file, &cmd, &[("APPLIED_ALIGN16", "1")], &["--align-16"]);
            assert!(n(&v, &["grouped", "count"]) > 0, "{v}");
        }
    }
    // Tiny chunks: chunks fill, empty ones are reused or given back, calloc zeroes reused memory;
    // with free lists (`--reuse-freed`), freed objects are reused too, and a chunk that empties
    // first unlinks its listed objects (a mistake there corrupts the lists: the program's checks
    // or a crash would show it).
    let ctxs = contexts(&dir, "small", 4, &[&p, "mix", "6"], &[]);
    let file = round_robin(&dir, "small", &ctxs, 2, 7);
    let mut g = heaplab_group::format::read(&file).unwrap();
    g.params.max_object_size = 2048;
    g.params.spare_chunks = 1;
    for (chunk, reuse, rounds) in [(8192, false, "6"), (4096, true, "40")] {
        g.params.chunk_size = chunk;
        let small = dir.join(format!("tiny-{chunk}.hlgroups")).to_string_lossy().into_owned();
        heaplab_group::format::write(&small, &g).unwrap();
        let v = same_as_plain(&dir, &small, &[&p, "mix", rounds], &[], if reuse { &["--reuse-freed"] } else { &[] });
        assert!(n(&v, &["chunks", "reused"]) > 0 && n(&v, &["chunks", "returned"]) > 0, "reuse {reuse}: {v}");
        assert_eq!(n(&v, &["reused_objects"]) > 0, reuse, "reuse {reuse}: {v}");
    }
}

#[test]
fn whole_call_sites_take_the_uncovered_contexts_of_a_grouped_call_site() {
    // A grouped and covered; B and C below the coverage cut, allocating at A's call site. HALO's
    // rule sends B and C to the fallback; with whole call sites they follow A, unwalked.
    let dir = scratch_dir("group_run", "whole");
    let p = lists();
    let ctxs = contexts(&dir, "whole", 8, &[&p, "500", "3"], &[]);
    let [(a, da), (b, _), (c, _)] = abc(&ctxs, 500);
    assert!(a.frames[0] == b.frames[0] && b.frames[0] == c.frames[0], "lists.c allocates its nodes at one call site");
    let build = |whole: bool, name: &str| {
        let mut g = Builder::new(1);
        g.g.params.whole_call_sites = whole;
        g.context(a, Some(0));
        g.context(b, None);
        g.context(c, None);
        g.select(0, &[(&a.frames[da], da as u32)]);
        g.write(&dir, name)
    };
    let cmd = [&p[..], "2000", "3"];
    let halo = same_as_plain(&dir, &build(false, "halo"), &cmd, &[], &[]);
    assert_eq!(n(&halo, &["groups", "0", "count"]), 2000, "A's nodes only: {halo}");
    assert!(n(&halo, &["fallback", "ungrouped"]) >= 2 * 2000, "B's and C's fall back: {halo}");
    let whole = same_as_plain(&dir, &build(true, "whole"), &cmd, &[], &[]);
    assert_eq!(n(&whole, &["groups", "0", "count"]), 3 * 2000, "B's and C's nodes follow A's: {whole}");
    assert!(n(&whole, &["identification", "frames"]) < n(&halo, &["identification", "frames"]), "the call site decides, unwalked: {whole}");
}

#[test]
fn a_split_call_site_sends_what_no_selector_picks_to_its_largest_group() {
    // A in group 0 and B in group 1, told apart by a walk; C below the coverage cut, at the same
    // call site. HALO's rule sends C to the fallback; with whole call sites it goes with the
    // group of most of the call site's objects (a tie: the earlier group, A's).
    let dir = scratch_dir("group_run", "otherwise");
    let p = lists();
    let ctxs = contexts(&dir, "otherwise", 8, &[&p, "500", "3"], &[]);
    let [(a, da), (b, db), (c, _)] = abc(&ctxs, 500);
    let build = |whole: bool, b_objects: u64, name: &str| {
        let mut g = Builder::new(2);
        g.g.params.whole_call_sites = whole;
        g.context(a, Some(0));
        g.context(b, Some(1));
        g.context(c, None);
        g.g.contexts[1].objects = b_objects;
        g.select(0, &[(&a.frames[da], da as u32)]);
        g.select(1, &[(&b.frames[db], db as u32)]);
        g.write(&dir, name)
    };
    let cmd = [&p[..], "2000", "3"];
    let halo = same_as_plain(&dir, &build(false, 500, "halo"), &cmd, &[], &[]);
    assert_eq!((n(&halo, &["groups", "0", "count"]), n(&halo, &["groups", "1", "count"])), (2000, 2000), "A's and B's nodes: {halo}");
    assert!(n(&halo, &["fallback", "ungrouped"]) >= 2000, "C's fall back: {halo}");
    let whole = same_as_plain(&dir, &build(true, 500, "whole"), &cmd, &[], &[]);
    assert_eq!((n(&whole, &["groups", "0", "count"]), n(&whole, &["groups", "1", "count"])), (2 * 2000, 2000), "C's nodes go with A's: {whole}");
    assert!(n(&whole, &["fallback", "ungrouped"]) < 2000, "{whole}");
    let more_b = same_as_plain(&dir, &build(true, 501, "more-b"), &cmd, &[], &[]);
    assert_eq!((n(&more_b, &["groups", "0", "count"]), n(&more_b, &["groups", "1", "count"])), (2000, 2 * 2000), "with more of B's profiled, C's go with B's: {more_b}");
}

#[test]
fn a_renamed_copy_of_the_program_falls_back_and_counts_every_allocation() {
    // A groups file names the program's module by its file name, so a copy under another name is
    // not the program profiled: nothing is grouped, and every allocation is counted as fallen
    // back. Built with frame pointers (as distributions now build) and selected one frame up: a
    // walk of two frames, whose step's unwind rule, kept in the call-site cache beside what no
    // selector picks, holds rbp's offset (which once became a group index out of range).
    let dir = scratch_dir("group_run", "renamed");
    let p = compiled("lists", &["-O2", "-pthread", "-fno-omit-frame-pointer"]);
    let ctxs = contexts(&dir, "renamed", 8, &[&p, "500", "3"], &[]);
    let [(a, _), (b, _), (c, _)] = abc(&ctxs, 500);
    let mut g = Builder::new(1);
    for x in [a, b, c] {
        // The program's frames alone: with none in the copy's modules, no frame of it is known
        // as the program's.
        g.context(&Ctx { count: x.count, frames: x.frames.iter().take_while(|f| f.0 == "lists").cloned().collect() }, Some(0));
    }
    g.select(0, &[(&a.frames[1], 1)]);
    let file = g.write(&dir, "renamed");
    let own = same_as_plain(&dir, &file, &[&p, "2000", "3"], &[], &[]);
    assert_eq!(n(&own, &["groups", "0", "count"]), 3 * 2000, "every node: {own}");
    let copy = dir.join("lists-copy");
    std::fs::copy(&p, &copy).unwrap();
    let copy = copy.to_string_lossy().into_owned();
    let v = same_as_plain(&dir, &file, &[&copy, "2000", "3"], &[], &[]);
    assert_eq!(n(&v, &["grouped", "count"]), 0, "{v}");
    assert!(n(&v, &["fallback", "ungrouped"]) >= 3 * 2000, "{v}");
    assert!(n(&v, &["sites_unresolved"]) > 0, "{v}");
    // The summary says which program the call sites are in.
    let (_, r, _) = crate::runtime::beside_plain(&dir, &["--groups", &file], &[&copy, "2000", "3"], &[], &[]);
    assert!(r.stderr.contains("they are in lists, and the program run is lists-copy"), "{}", r.stderr);
}

#[test]
fn call_sites_decide_alone_and_unknown_call_sites_fall_back_unwalked() {
    // Every context grouped by its call site (frame 0), so each call site decides alone and no
    // walk goes past it; the contexts of one call site of the program left out of the groups
    // file entirely, so its allocations are an unknown context: they fall back, unwalked.
    let dir = scratch_dir("group_run", "calls");
    let p = applied();
    let cmd = [&p[..], "mix", "6"];
    let ctxs = contexts(&dir, "calls", 6, &cmd, &[]);
    let program = Path::new(&p).file_name().unwrap().to_string_lossy().into_owned();
    let mut calls: Vec<&Frame> = ctxs.iter().filter(|c| c.frames.iter().all(|f| f.0 != "?")).map(|c| &c.frames[0]).collect();
    calls.sort();
    calls.dedup();
    // The program's busiest call site.
    let count = |f: &Frame| ctxs.iter().filter(|c| &c.frames[0] == f).map(|c| c.count).sum::<u64>();
    let unknown = *calls.iter().filter(|f| f.0 == program).max_by_key(|f| count(f)).expect("a call site in the program");
    let mut b = Builder::new(2);
    let mut left_out = 0;
    for c in &ctxs {
        if c.frames.iter().any(|f| f.0 == "?") {
            continue;
        }
        if &c.frames[0] == unknown {
            left_out += c.count;
            continue;
        }
        let k = calls.iter().position(|f| *f == &c.frames[0]).unwrap() % 2;
        b.context(c, Some(k as u32));
        let conj: Vec<(&Frame, u32)> = c.frames.iter().enumerate().map(|(d, f)| (f, d as u32)).collect();
        b.select(k, &conj);
    }
    let file = b.write(&dir, "calls");
    let v = same_as_plain(&dir, &file, &cmd, &[], &[]);
    assert!(left_out > 0 && n(&v, &["grouped", "count"]) > 0, "{v}");
    assert_eq!(n(&v, &["identification", "frames"]), n(&v, &["identification", "walks"]), "no walk goes past its call site: {v}");
    // Its allocations that are identified at all (not too big, not aligned) fall back.
    assert!(n(&v, &["fallback", "ungrouped"]) > 0 && n(&v, &["fallback", "count"]) >= left_out, "the left-out call site's {left_out} allocations fall back: {v}");
}

/// contexts.c run in `mode` (`library` or `shared`) for 3,000 rounds: its command and its three
/// contexts that allocate inside the C library (strdup calls malloc), each as its program's
/// frames with their stack positions (the first at 1, strdup's caller).
fn library_contexts(dir: &Path, mode: &str) -> (Vec<String>, Vec<Vec<(usize, Frame)>>) {
    let p = compiled("contexts", &["-O2"]);
    let program = Path::new(&p).file_name().unwrap().to_string_lossy().into_owned();
    let cmd = vec![p.clone(), mode.to_string(), "3000".to_string()];
    let args: Vec<&str> = cmd.iter().map(String::as_str).collect();
    let ctxs: Vec<Vec<(usize, Frame)>> = contexts(dir, mode, 6, &args, &[])
        .into_iter()
        .filter(|c| c.count == 3000 && c.frames[0].0 != program)
        .map(|c| {
            let own: Vec<(usize, Frame)> = c.frames.iter().cloned().enumerate().filter(|(_, f)| f.0 == program).collect();
            assert_eq!(own[0].0, 1, "strdup called malloc directly: {:?}", c.frames);
            own
        })
        .collect();
    assert_eq!(ctxs.len(), 3, "three contexts allocating inside the C library");
    (cmd, ctxs)
}

/// Adds a context of 3,000 objects made of `own` frames (at their stack positions) to `group`.
fn add_library_context(b: &mut Builder, own: &[(usize, Frame)], group: Option<u32>) {
    for (d, f) in own {
        b.site(f, *d as u32);
    }
    b.context(&Ctx { count: 3000, frames: own.iter().map(|(_, f)| f.clone()).collect() }, group);
}

#[test]
fn an_allocation_made_in_a_library_is_decided_at_its_first_program_frame() {
    // contexts.c copies strings with strdup (the C library calls malloc) from call sites d1, d2
    // and d3. The groups name only the program's frames, as grouping does: d1's context in
    // group 0 and d2's in group 1, each selected by its call site one frame deeper (so the
    // walk depth is 3); d3 is left out. Each walk goes through strdup's frame to the first
    // program frame, where the call site decides alone (group 0, group 1, or, for d3, an
    // unknown context: the fallback), with or without the memo.
    let dir = scratch_dir("group_run", "library");
    let rounds = 3000u64;
    let (cmd, ctxs) = library_contexts(&dir, "library");
    let cmd: Vec<&str> = cmd.iter().map(String::as_str).collect();
    let mut b = Builder::new(2);
    for (k, own) in ctxs.iter().take(2).enumerate() {
        // The program's frames at their stack positions (1: d1 or d2, 2: copy_rounds).
        add_library_context(&mut b, own, Some(k as u32));
        b.select(k, &[(&own[1].1, own[1].0 as u32)]);
    }
    let file = b.write(&dir, "library");
    let kept = same_as_plain(&dir, &file, &cmd, &[], &[]);
    let fresh = same_as_plain(&dir, &file, &cmd, &[("HEAPLAB_GROUP_MEMO", "0")], &[]);
    for v in [&kept, &fresh] {
        assert_eq!((n(v, &["groups", "0", "count"]), n(v, &["groups", "1", "count"])), (rounds, rounds), "{v}");
        assert!(n(v, &["fallback", "ungrouped"]) >= rounds, "d3's copies fall back: {v}");
        // Every other allocation (the C library's own, with no program frame) walks to the depth.
        let (walks, frames) = (n(v, &["identification", "walks"]), n(v, &["identification", "frames"]));
        assert!(walks >= 3 * rounds && frames <= 2 * 3 * rounds + 3 * (walks - 3 * rounds), "the copies' walks stop at their first program frame: {v}");
    }
    assert_eq!((&kept["groups"], &kept["fallback"]), (&fresh["groups"], &fresh["fallback"]));
    assert!(n(&kept, &["identification", "replayed"]) > rounds, "{kept}");
}

#[test]
fn a_split_call_site_met_below_a_library_sends_what_no_selector_picks_to_its_largest_group() {
    // contexts.c's `shared` mode: strdup called at one call site of the program (in
    // copy_shared), reached from e1, e2 and e3. e1's context in group 0 and e2's in group 1,
    // each selected by its own call site one frame deeper; e3 below the coverage cut. Each walk
    // goes through strdup's frame to that first program frame, which does not decide: the
    // selectors do, and e3's copies, which none picks, go with e1's (a tie: the earlier group)
    // under whole call sites and fall back under HALO's rule, with or without the memo.
    let dir = scratch_dir("group_run", "shared");
    let rounds = 3000u64;
    let (cmd, ctxs) = library_contexts(&dir, "shared");
    let cmd: Vec<&str> = cmd.iter().map(String::as_str).collect();
    let build = |whole: bool, name: &str| {
        let mut b = Builder::new(2);
        b.g.params.whole_call_sites = whole;
        for (k, own) in ctxs.iter().enumerate() {
            // The program's frames at their stack positions (1: copy_shared, 2: e1, e2 or e3).
            add_library_context(&mut b, own, (k < 2).then_some(k as u32));
            if k < 2 {
                b.select(k, &[(&own[1].1, own[1].0 as u32)]);
            }
        }
        b.write(&dir, name)
    };
    let (halo, whole) = (build(false, "halo"), build(true, "whole"));
    for memo in ["1", "0"] {
        let env = [("HEAPLAB_GROUP_MEMO", memo)];
        let v = same_as_plain(&dir, &halo, &cmd, &env, &[]);
        assert_eq!((n(&v, &["groups", "0", "count"]), n(&v, &["groups", "1", "count"])), (rounds, rounds), "memo {memo}: {v}");
        assert!(n(&v, &["fallback", "ungrouped"]) >= rounds, "memo {memo}: e3's copies fall back: {v}");
        let v = same_as_plain(&dir, &whole, &cmd, &env, &[]);
        assert_eq!((n(&v, &["groups", "0", "count"]), n(&v, &["groups", "1", "count"])), (2 * rounds, rounds), "memo {memo}: e3's copies go with e1's: {v}");
    }
}

/// `tests/programs/recursion.c` profiled (depth `depth`, 5 rounds) and grouped with `args`.
fn recursion_groups(dir: &Path, name: &str, depth: &str, args: &[&str]) -> (String, Groups) {
    let p = compiled("recursion", &["-O1", "-g"]);
    let prof = dir.join(format!("{name}.hlaccess")).to_string_lossy().into_owned();
    let r = heaplab_in(dir, &["access", "--contexts", "-o", &prof, "--", &p, depth, "5"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let out = dir.join(format!("{name}.hlgroups")).to_string_lossy().into_owned();
    let r = heaplab_in(dir, &[&["group", &prof, "-o", &out][..], args].concat());
    assert_eq!(r.code, 0, "{}", r.stderr);
    let g = heaplab_group::format::read(&out).unwrap();
    (out, g)
}

#[test]
fn a_recursion_through_two_call_sites_is_one_group_identified_at_its_call_site() {
    crate::common::need("valgrind");
    let dir = scratch_dir("group_run", "recursion");
    let p = compiled("recursion", &["-O1", "-g"]);
    let (file, g) = recursion_groups(&dir, "by-function", "6", &[]);
    // HALO's reduction leaves the tree's nodes in several contexts (root, left, right, left
    // then right, right then left); collapsed by function they are one node, so one group.
    let tree: Vec<&heaplab_group::GroupContext> = g.contexts.iter().filter(|c| c.sites.first().is_some_and(|&s| g.sites[s as usize].function == "build")).collect();
    assert!(tree.len() >= 4, "{:?}", g.contexts);
    assert!(tree[0].group.is_some() && tree.iter().all(|c| c.group == tree[0].group), "{:?}", g.contexts);
    assert!(heaplab_group::select::misclassified(&g).is_empty());
    assert_eq!(g.walk_depth, 1, "the allocation call sites tell the groups apart");
    // A deeper tree than profiled: stacks the profile never saw, all decided at the call site.
    let v = same_as_plain(&dir, &file, &[&p, "12", "3"], &[], &[]);
    let k = tree[0].group.unwrap().to_string();
    assert_eq!(n(&v, &["groups", &k, "count"]), (1 << 13) - 1, "every node of the tree: {v}");
    assert_eq!(n(&v, &["identification", "frames"]), n(&v, &["identification", "walks"]), "no walk past the call site: {v}");
    // HALO's reduction, kept as an option: the paths stay apart, and selectors need the walk.
    let (_, halo) = recursion_groups(&dir, "by-call-site", "6", &["--recursion", "call-site"]);
    assert_eq!(halo.params.recursion, heaplab_group::Recursion::CallSite);
    assert!(halo.walk_depth > 1, "{halo:?}");
}

#[test]
fn threads_program_and_fallback_allocators() {
    let dir = scratch_dir("group_run", "threads");
    let p = prog("threads");
    let cmd = [&p[..], "4", "3000"];
    let ctxs = contexts(&dir, "threads", 6, &cmd, &[]);
    let file = round_robin(&dir, "threads", &ctxs, 2, 1000);
    for fallback in ["jemalloc", "glibc", "mimalloc", "tcmalloc"] {
        let v = same_as_plain(&dir, &file, &cmd, &[], &["--fallback", fallback]);
        assert!(n(&v, &["grouped", "count"]) > 0, "{fallback}: {v}");
    }
}

#[test]
fn bad_groups_are_rejected_before_the_program_starts() {
    let dir = scratch_dir("group_run", "bad");
    let p = lists();
    let ctxs = contexts(&dir, "lists", 8, &[&p, "100", "1"], &[]);
    let good = std::fs::read(round_robin(&dir, "good", &ctxs, 1, 1000)).unwrap();
    let marker = dir.join("started");
    let cmd = format!("touch {}", marker.display());
    let mut cases: Vec<(&str, Vec<u8>)> = vec![("empty", Vec::new()), ("magic", [b"NOTGROUP".as_slice(), &good[8..]].concat()), ("truncated", good[..good.len() / 2].to_vec())];
    let mut flipped = good.clone();
    let mid = flipped.len() / 2;
    flipped[mid] ^= 0x40;
    cases.push(("flipped", flipped));
    // Valid for the format, beyond the runtime: a selector site deeper than it walks.
    let mut b = Builder::new(1);
    b.context(&ctxs[0], Some(0));
    b.select(0, &[(&ctxs[0].frames[0], 500)]);
    let deep = std::fs::read(b.write(&dir, "deep")).unwrap();
    cases.push(("deep", deep));
    for (name, bytes) in cases {
        let f = dir.join(format!("{name}.hlgroups"));
        std::fs::write(&f, bytes).unwrap();
        let r = heaplab_in(&dir, &["run", "--groups", &f.to_string_lossy(), "--", "sh", "-c", &cmd]);
        assert_eq!(r.code, 2, "{name}: {}", r.stderr);
        assert!(r.stderr.contains(&*f.to_string_lossy()), "{name}: the message names the file: {}", r.stderr);
        assert!(!marker.exists(), "{name}: the program ran");
    }
    let good_file = dir.join("good.hlgroups").to_string_lossy().into_owned();
    for args in [
        vec!["run", "--groups", "no-such.hlgroups", "--", "true"],
        vec!["run", "--groups", &good_file, "--", "no-such-program-here"],
        vec!["run", "--groups", &good_file, "--layout", "x.hllayout", "--", "true"],
        vec!["run", "--", "true"],
        vec!["run", "--groups", &good_file, "--fallback", "no-such-allocator", "--", "true"],
        vec!["run", "--layout", "x.hllayout", "--reuse-freed", "--", "true"],
        vec!["run", "--layout", "x.hllayout", "--align-16", "--", "true"],
        vec!["run", "--layout", "x.hllayout", "--huge-pages", "--", "true"],
    ] {
        let r = heaplab_in(&dir, &args);
        assert_eq!(r.code, 2, "{args:?}: {}", r.stderr);
    }
}

#[test]
fn exit_status_and_streams_pass_through() {
    let dir = scratch_dir("group_run", "status");
    let empty = Builder::new(0).write(&dir, "empty");
    streams_and_status_pass_through(&dir, &["--groups", &empty]);
    let r = Heaplab::new(&["run", "--groups", &empty, "--", "true"]).dir(&dir).run();
    assert!(r.code == 0 && r.stderr.starts_with("heaplab run: groups "), "{}", r.stderr);
    let r = Heaplab::new(&["run", "--json", "--groups", &empty, "--", "true"]).dir(&dir).run();
    let v: Value = serde_json::from_str(&r.stderr).unwrap_or_else(|e| panic!("{e}: {}", r.stderr));
    assert_eq!(v["exit_status"]["code"], 0, "{v}");
}

/// SIGKILL to `heaplab run --groups`: the program does not outlive it (the run launcher asks
/// for the parent-death signal and passes it on), grouped or on the fallback alone.
#[test]
fn a_program_does_not_outlive_a_killed_heaplab_run() {
    let dir = scratch_dir("group_run", "killed");
    let p = lists();
    let grouped = a_and_b_grouped(&dir, &p, "100", "1");
    // Without groups the program runs on the fallback alone.
    let mut none = Builder::new(0);
    none.g.identification = Identification { walk_per_object: 100.0, dropped: true };
    let alone = none.write(&dir, "none");
    let children = |pid: &str| std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")).unwrap_or_default().split_whitespace().map(String::from).collect::<Vec<_>>();
    for file in [&grouped, &alone] {
        let mut c = std::process::Command::new(crate::common::BIN);
        c.args(["run", "--quiet", "--groups", file, "--", &prog("misbehave"), "forever"]).current_dir(&dir).env_remove("LD_PRELOAD");
        c.stdin(std::process::Stdio::null()).stdout(std::process::Stdio::null()).stderr(std::process::Stdio::null());
        let mut child = c.spawn().unwrap();
        let heaplab = child.id().to_string();
        let t0 = std::time::Instant::now();
        let first = loop {
            if let Some(pid) = children(&heaplab).into_iter().next() {
                break pid;
            }
            assert!(t0.elapsed().as_secs() < 20, "heaplab started no program");
            std::thread::sleep(std::time::Duration::from_millis(20));
        };
        // Past the program's start-up (the launcher has started the program).
        std::thread::sleep(std::time::Duration::from_millis(300));
        let mut started = vec![first.clone()];
        started.extend(children(&first));
        child.kill().unwrap();
        let _ = child.wait();
        let alive = |pid: &String| std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| !s.rsplit_once(')').is_some_and(|(_, r)| r.trim_start().starts_with('Z')));
        let t0 = std::time::Instant::now();
        while started.iter().any(alive) && t0.elapsed().as_secs() < 10 {
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let outlived: Vec<&String> = started.iter().filter(|p| alive(p)).collect();
        for p in &outlived {
            let _ = std::process::Command::new("kill").args(["-KILL", p]).status();
        }
        assert!(outlived.is_empty(), "{file}: processes {outlived:?} of {started:?} outlived a killed heaplab run");
    }
    // SIGTERM to heaplab reaches the program through the launcher, and the run ends as the
    // program did.
    let mut c = std::process::Command::new(crate::common::BIN);
    c.args(["run", "--quiet", "--groups", &alone, "--", &prog("misbehave"), "forever"]).current_dir(&dir).env_remove("LD_PRELOAD");
    c.stdin(std::process::Stdio::null()).stdout(std::process::Stdio::null()).stderr(std::process::Stdio::null());
    let mut child = c.spawn().unwrap();
    let heaplab = child.id().to_string();
    let t0 = std::time::Instant::now();
    while children(&heaplab).first().is_none_or(|l| children(l).is_empty()) {
        assert!(t0.elapsed().as_secs() < 20, "the launcher started no program");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let _ = std::process::Command::new("kill").args(["-TERM", &heaplab]).status();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(128 + libc::SIGTERM), "{status:?}");
}

/// A real program traced once with stacks, then run grouped (its contexts round-robin into
/// three groups, and with no groups at all): its output must equal a plain run's.
fn real(dir: &Path, name: &str, cmd: &[&str], env: &[(&str, &str)]) {
    let mut ctxs = contexts(dir, name, 4, cmd, env);
    ctxs.truncate(400);
    let file = round_robin(dir, name, &ctxs, 3, 4);
    let v = same_as_plain(dir, &file, cmd, env, &[]);
    assert!(n(&v, &["grouped", "count"]) > 0, "{name}: {v}");
    let empty = Builder::new(0).write(dir, &format!("{name}-empty"));
    let (v, _) = ran_alone(dir, &empty, cmd, env, &["--fallback", "glibc"]);
    assert_eq!(v["fallback_allocator"], "glibc", "{name}: {v}");
}

#[test]
fn real_programs_give_identical_output() {
    let dir = scratch_dir("group_run", "real");
    for (name, cmd, env) in real_programs(&dir) {
        real(&dir, name, cmd, env);
    }
}

/// Pointer-chasing workloads of `../shared/workloads` (HALO's health among them), built here,
/// on small arguments: grouped by their own contexts, their output must equal a plain run's.
#[test]
fn shared_workloads_give_identical_output() {
    let names = ["health", "mst", "treeadd"];
    let Some((dir, bins)) = shared_workloads("group_run", &names) else { return };
    for ((name, bin), args) in names.iter().zip(&bins).zip([&["6", "10", "1"][..], &["200"][..], &["12"][..]]) {
        let mut cmd = vec![&bin[..]];
        cmd.extend_from_slice(args);
        real(&dir, name, &cmd, &[]);
    }
}
