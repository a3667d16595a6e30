//! End-to-end tests of `heaplab group` and `heaplab group-info`: profiles built here (the
//! lists pattern: two contexts used together, one apart, a big table, a frameless context)
//! grouped through the binary and read back, group-info's text, JSON and pictures, and the
//! errors (exit 2, nothing written). Tests that need the access format to carry full contexts
//! skip, saying so, while it does not.

use crate::common::{heaplab_in, json, need};
use heaplab_access::{AccessBlock, AccessProfile, Edge, Frame, FullContext};
use heaplab_group::{format, ColdGroup, Params};
use heaplab_trace::context::{context_key, frame_key};
use std::path::Path;

fn path(dir: &Path, name: &str) -> String {
    dir.join(name).to_string_lossy().into_owned()
}

/// The lists pattern as a profile: contexts xmalloc < build_{a,b,c} < main (A and B used
/// together), a 1 MiB table and an allocation with no program frame.
fn lists_profile() -> AccessProfile {
    let chains: [&[&str]; 5] = [&["xmalloc", "build_a", "main"], &["xmalloc", "build_b", "main"], &["xmalloc", "build_c", "main"], &["xmalloc", "make_table", "main"], &[]];
    let offset = |f: &str| 0x1000 + f.bytes().fold(0u64, |h, b| h * 31 + u64::from(b)) % 0x10000;
    let full_contexts = chains
        .iter()
        .map(|c| FullContext {
            // The stable key the access format checks: module basename and offsets hashed.
            key: context_key(c.iter().map(|f| frame_key(b"prog", offset(f)))),
            frames: c.iter().map(|f| Frame { ip: 0x400000 + offset(f), module: "/usr/bin/prog".into(), file_offset: offset(f), function: (*f).into() }).collect(),
            depths: (1..=c.len() as u32).collect(),
        })
        .collect();
    let mut blocks = Vec::new();
    for (c, size, acc) in [(0u32, 16u64, 40u64), (1, 16, 38), (2, 16, 30)].into_iter().cycle().take(300).chain([(3, 1 << 20, 100_000), (4, 64, 50)]) {
        let at = blocks.len() as u64;
        blocks.push(AccessBlock { size, context: 0, alloc_at: at, free_at: u64::MAX, reads: acc, writes: 0, full_context: c });
    }
    let affinity = [(0, 0, 3000), (0, 1, 7000), (1, 1, 2900), (1, 2, 20), (2, 2, 5000), (0, 3, 900)];
    let mut p = AccessProfile {
        blocks,
        contexts: vec![heaplab_access::Context::default()],
        full_contexts,
        context_affinity: affinity.iter().map(|&(from, to, weight)| Edge { from, to, weight }).collect(),
        ..AccessProfile::default()
    };
    p.info.affinity_distance = 128;
    p.info.max_grouped_size = 4096;
    p.info.command = vec!["./prog".into(), "small".into()];
    p
}

/// Writes `p`; `None` when the file does not carry its full contexts (the format before
/// version 2).
fn write_profile(dir: &Path, p: &AccessProfile) -> Option<String> {
    let out = path(dir, "prof.hlaccess");
    heaplab_access::write(&out, p).unwrap();
    if heaplab_access::read(&out).unwrap().full_contexts.is_empty() && !p.full_contexts.is_empty() {
        eprintln!("skipped: the access format does not carry full contexts yet");
        return None;
    }
    Some(out)
}

/// The lists profile grouped by the library, written as a .hlgroups file.
fn groups_file(dir: &Path) -> String {
    let g = heaplab_group::group(&lists_profile(), &Params::default()).unwrap();
    let out = path(dir, "prog.hlgroups");
    format::write(&out, &g).unwrap();
    out
}

#[test]
fn group_puts_the_lists_used_together_in_one_group() {
    let dir = scratch!("lists");
    let Some(prof) = write_profile(&dir, &lists_profile()) else { return };
    let out = path(&dir, "prog.hlgroups");
    let r = heaplab_in(&dir, &["group", &prof, "-o", &out, "--affinity-distance", "128"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains("xmalloc < build_a, xmalloc < build_b"), "{}", r.stdout);
    assert!(r.stdout.contains("selector: build_a | build_b"), "{}", r.stdout);
    let g = format::read(&out).unwrap();
    assert_eq!(g, heaplab_group::group(&heaplab_access::read(&prof).unwrap(), &Params::default()).unwrap());
    let v = json(&heaplab_in(&dir, &["group", &prof, "-o", &out, "--merge-tolerance", "0.1", "--json"]).stdout, "group --json");
    assert_eq!(v["groups"][0]["members"], serde_json::json!([0, 1]));
    assert_eq!(v["params"]["merge_tolerance"], 0.1);
    assert_eq!(v["walk_depth"], 3);
    assert_eq!(v["params"]["whole_call_sites"], true);
    assert_eq!(v["params"]["absorb"], true);
    // HALO's behaviour on both counts, and the last of two opposite flags wins.
    let r = heaplab_in(&dir, &["group", &prof, "-o", &out, "--no-whole-call-sites", "--no-absorb"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let p = format::read(&out).unwrap().params;
    assert!(!p.whole_call_sites && !p.absorb);
    let info = heaplab_in(&dir, &["group-info", &out]);
    assert!(!info.stdout.contains("whole call sites") && info.stdout.contains("groups kept apart"), "{}", info.stdout);
    let r = heaplab_in(&dir, &["group", &prof, "-o", &out, "--no-whole-call-sites", "--whole-call-sites", "--no-absorb", "--absorb"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let p = format::read(&out).unwrap().params;
    assert!(p.whole_call_sites && p.absorb);
    let info = heaplab_in(&dir, &["group-info", &out]);
    assert!(info.stdout.contains("whole call sites, lopsided groups absorbed"), "{}", info.stdout);
    assert!(info.stdout.contains("max turnover 4") && info.stdout.contains("frames walked per grouped object"), "{}", info.stdout);
    // Groups that would walk more than they serve are not made, and the summary says why.
    let r = heaplab_in(&dir, &["group", &prof, "-o", &out, "--max-walk-per-object", "2"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains("above 2, so no groups were made"), "{}", r.stdout);
    let g = format::read(&out).unwrap();
    assert!(g.groups.is_empty() && g.identification.dropped);
    let v = json(&heaplab_in(&dir, &["group-info", &out, "--json"]).stdout, "group-info --json");
    assert_eq!(v["identification"]["dropped"], true);
}

#[test]
fn a_cold_group_takes_the_uncovered_list_at_the_shared_call_site() {
    let dir = scratch!("cold");
    // C's nodes made colder than lists.c's: 10 accesses each where A's and B's have 40 and 38.
    let mut colder = lists_profile();
    colder.blocks.iter_mut().filter(|b| b.full_context == 2).for_each(|b| b.reads = 10);
    let Some(prof) = write_profile(&dir, &colder) else { return };
    let out = path(&dir, "prog.hlgroups");
    // At 70% coverage C's contexts fall below the cut. C's nodes would be a third of the bytes
    // of A's and B's group and a ninth of its accesses (22 points): by default they get a cold
    // group; `--cold-group` (every context it can take) agrees.
    for flag in [None, Some("--cold-group")] {
        let mut args = vec!["group", &prof, "-o", &out, "--coverage", "0.7"];
        args.extend(flag);
        let r = heaplab_in(&dir, &args);
        assert_eq!(r.code, 0, "{}", r.stderr);
        assert!(r.stdout.contains("group 1 (cold) xmalloc < build_c"), "{}", r.stdout);
        let g = format::read(&out).unwrap();
        assert_eq!(g.params.cold_group, if flag.is_some() { ColdGroup::All } else { ColdGroup::Diluting });
        assert!(g.is_cold(1));
        assert_eq!(g.groups[1].members, vec![2], "the table's objects are never grouped, so it stays out");
        assert!(r.stdout.contains("cold group 1: 1 context (100 objects) that whole call sites would otherwise put in group 0, 33.3% of its bytes and 11.4% of its accesses"), "{}", r.stdout);
        assert_eq!(r.stdout.contains("--no-cold-group keeps them there"), flag.is_none(), "{}", r.stdout);
    }
    let info = heaplab_in(&dir, &["group-info", &out]);
    assert!(info.stdout.contains("lopsided groups absorbed, cold group of every context it can take"), "{}", info.stdout);
    let v = json(&heaplab_in(&dir, &["group", &prof, "-o", &out, "--coverage", "0.7", "--json"]).stdout, "group --json");
    assert_eq!((v["params"]["cold_group"].clone(), v["groups"][1]["cold"].clone(), v["groups"][0]["cold"].clone()), (serde_json::json!("diluting"), serde_json::json!(true), serde_json::json!(false)));
    let plain = json(&heaplab_in(&dir, &["group", &prof, "-o", &out, "--coverage", "0.7", "--no-cold-group", "--json"]).stdout, "group --json");
    assert_eq!((plain["groups"].as_array().map(|a| a.len()), plain["params"]["cold_group"].clone()), (Some(1), serde_json::json!("never")));
    // Without a cold group the summary says what the flag would do with the objects taken in.
    let r = heaplab_in(&dir, &["group", &prof, "-o", &out, "--coverage", "0.7", "--no-cold-group"]);
    assert!(r.stdout.contains("whole call sites take in") && r.stdout.contains("--cold-group gives them chunks of their own"), "{}", r.stdout);
    let info = heaplab_in(&dir, &["group-info", &out]);
    assert!(info.stdout.contains("lopsided groups absorbed, no cold group"), "{}", info.stdout);
    // The last of the two flags counts.
    let r = heaplab_in(&dir, &["group", &prof, "-o", &out, "--coverage", "0.7", "--no-cold-group", "--cold-group"]);
    assert_eq!(format::read(&out).unwrap().params.cold_group, ColdGroup::All, "{}", r.stderr);
    assert!(!r.stdout.contains("--cold-group gives them"), "{}", r.stdout);
}

#[test]
fn group_refuses_profiles_without_contexts_and_bad_values() {
    let dir = scratch!("refuse");
    let out = path(&dir, "prog.hlgroups");
    let mut plain = lists_profile();
    plain.full_contexts.clear();
    plain.context_affinity.clear();
    for b in &mut plain.blocks {
        b.full_context = u32::MAX;
    }
    let prof = write_profile(&dir, &plain).unwrap();
    let r = heaplab_in(&dir, &["group", &prof, "-o", &out]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("heaplab access --contexts") && r.stderr.contains("prof.hlaccess"), "{}", r.stderr);
    let r = heaplab_in(&dir, &["group", &prof, "-o", &out, "--affinity-distance", "64"]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("affinity distance 64") && r.stderr.contains("128"), "{}", r.stderr);
    for bad in [&["--coverage", "1.5"][..], &["--merge-tolerance", "x"], &["--chunk-size", "1000"], &["--max-object-size", "0"], &["--group-threshold", "-1"], &["--max-turnover", "0.5"], &["--max-walk-per-object", "-3"]] {
        let mut args = vec!["group", &prof, "-o", &out];
        args.extend_from_slice(bad);
        let r = heaplab_in(&dir, &args);
        assert_eq!(r.code, 2, "{bad:?}: {}", r.stderr);
    }
    let junk = path(&dir, "junk.hlaccess");
    std::fs::write(&junk, b"not a profile").unwrap();
    let r = heaplab_in(&dir, &["group", &junk, "-o", &out]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("junk.hlaccess"), "{}", r.stderr);
    assert!(!Path::new(&out).exists(), "nothing is written on error");
}

#[test]
fn group_says_why_it_made_no_group() {
    let dir = scratch!("nogroup");
    let out = path(&dir, "prog.hlgroups");
    let prof = write_profile(&dir, &lists_profile()).unwrap();
    // A and B's objects take about 7% of the lists profile's accesses, C's about 3%.
    let r = heaplab_in(&dir, &["group", &prof, "-o", &out, "--group-threshold", "0.5"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains("groups         0") && r.stdout.contains("none reaches --group-threshold 0.5"), "{}", r.stdout);
    let r = heaplab_in(&dir, &["group-info", &out]);
    assert!(r.stdout.contains("none reaches --group-threshold 0.5"), "{}", r.stdout);
}

#[test]
fn group_info_describes_and_draws() {
    let dir = scratch!("info");
    let file = groups_file(&dir);
    let r = heaplab_in(&dir, &["group-info", &file]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    for want in ["xmalloc < build_a, xmalloc < build_b", "selector: build_c", "walk depth     3 frames", "misclassified  0", "(no program frame)", "build_a (prog+0x"] {
        assert!(r.stdout.contains(want), "{want:?} missing:\n{}", r.stdout);
    }
    let (svg, png) = (path(&dir, "g.svg"), path(&dir, "g.png"));
    let v = json(&heaplab_in(&dir, &["group-info", &file, "--json", "--plot", &svg]).stdout, "group-info --json");
    assert_eq!(v["context_list"].as_array().unwrap().len(), 5);
    // Where identification sends each context: the library's answer, in the table and the JSON.
    let runs_in: Vec<Option<u32>> = v["context_list"].as_array().unwrap().iter().map(|c| c["runs_in"].as_u64().map(|k| k as u32)).collect();
    assert_eq!(runs_in, heaplab_group::table::destinations(&format::read(&file).unwrap()));
    assert!(runs_in.iter().any(Option::is_some) && r.stdout.contains("group  runs in"), "{}", r.stdout);
    let taken = v["context_list"].as_array().unwrap().iter().filter(|c| c["group"].is_null() && !c["runs_in"].is_null());
    let objects: u64 = taken.clone().map(|c| c["objects"].as_u64().unwrap()).sum();
    assert_eq!((v["taken_in"]["contexts"].as_u64(), v["taken_in"]["objects"].as_u64()), (Some(taken.count() as u64), Some(objects)), "{}", v["taken_in"]);
    assert_eq!(v["edge_list"].as_array().unwrap().len(), 6);
    assert_eq!(v["groups"][1]["member_names"], serde_json::json!(["xmalloc < build_c"]));
    let text = std::fs::read_to_string(&svg).unwrap();
    assert_eq!(text.matches(r#"class="node""#).count(), 3, "the kept contexts");
    need("xmllint");
    let r = heaplab_in(&dir, &["group-info", &file, "--plot", &png]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(std::fs::read(&png).unwrap().starts_with(b"\x89PNG"));
    let lint = std::process::Command::new("xmllint").args(["--noout", &svg]).output().unwrap();
    assert!(lint.status.success(), "{}", String::from_utf8_lossy(&lint.stderr));
}

#[test]
fn group_info_refuses_damaged_files() {
    let dir = scratch!("damaged");
    let file = groups_file(&dir);
    let mut bytes = std::fs::read(&file).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 1;
    std::fs::write(&file, &bytes).unwrap();
    let r = heaplab_in(&dir, &["group-info", &file]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("prog.hlgroups") && r.stderr.contains("checksum"), "{}", r.stderr);
    let r = heaplab_in(&dir, &["group-info", &path(&dir, "missing.hlgroups")]);
    assert_eq!(r.code, 2);
    let good = groups_file(&dir);
    let r = heaplab_in(&dir, &["group-info", &good, "--plot", &path(&dir, "g.pdf")]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains(".png or .svg"), "{}", r.stderr);
}

#[test]
fn lists_c_profiled_with_contexts_gets_a_and_b_grouped_and_c_apart() {
    let dir = scratch!("lists-c");
    let help = heaplab_in(&dir, &["access", "--help"]);
    if !help.stdout.contains("--contexts") {
        eprintln!("skipped: heaplab access cannot record full contexts yet");
        return;
    }
    need("valgrind");
    need("cc");
    let exe = path(&dir, "lists");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/programs/lists.c");
    let cc = std::process::Command::new("cc").args(["-O1", "-g", "-pthread", "-o", &exe]).arg(&src).output().unwrap();
    assert!(cc.status.success(), "{}", String::from_utf8_lossy(&cc.stderr));
    let prof = path(&dir, "p.hlaccess");
    let r = heaplab_in(&dir, &["access", "--contexts", "-o", &prof, "--", &exe, "300", "5"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let out = path(&dir, "lists.hlgroups");
    let r = heaplab_in(&dir, &["group", &prof, "-o", &out, "--affinity-distance", "128"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let g = format::read(&out).unwrap();
    let names = g.context_names();
    let group_of = |f: &str| names.iter().position(|n| n.ends_with(f)).and_then(|c| g.contexts[c].group);
    assert!(group_of("make_a").is_some(), "{}", r.stdout);
    assert_eq!(group_of("make_a"), group_of("make_b"), "{}", r.stdout);
    assert_ne!(group_of("make_c"), group_of("make_a"), "{}", r.stdout);
    assert!(heaplab_group::select::misclassified(&g).is_empty(), "{}", r.stdout);
    // 56-byte nodes, every one freed at the end: jemalloc's 64-byte class would pad them, so
    // it does not lay them out as the group does.
    assert!(r.stdout.contains("objects 56 B, 600 freed\n"), "{}", r.stdout);
    // The three lists are built interleaved, but the stores that initialise a node make no
    // edge: C's weight to A and B (its walk meets theirs only where the frees go from one list
    // to the next) stays far below its own, so absorbing (the default) leaves it apart, as
    // HALO's groups as formed do.
    let ctx = |f: &str| names.iter().position(|n| n.ends_with(f)).unwrap() as u32;
    let (a, b, c) = (ctx("make_a"), ctx("make_b"), ctx("make_c"));
    let weight = |x: u32, ys: &[u32]| -> u64 { g.edges.iter().filter(|e| (e.a == x && ys.contains(&e.b)) || (e.b == x && ys.contains(&e.a))).map(|e| e.weight).sum() };
    assert!(weight(c, &[a, b]) * 10 < weight(c, &[c]), "C to A and B {}, C's own {}", weight(c, &[a, b]), weight(c, &[c]));
    assert!(weight(a, &[b]) > weight(c, &[c]), "A and B, walked together, are the heavy edge");
    let r = heaplab_in(&dir, &["group", &prof, "-o", &out, "--no-absorb"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let g = format::read(&out).unwrap();
    let group_of = |f: &str| names.iter().position(|n| n.ends_with(f)).and_then(|c| g.contexts[c].group);
    assert_eq!(group_of("make_a"), group_of("make_b"), "{}", r.stdout);
    assert_ne!(group_of("make_c"), group_of("make_a"), "{}", r.stdout);
    // At 70% coverage C falls below the cut; a cold group takes its nodes instead of A's and
    // B's group (the three share xmalloc's call site), and the grouped run prints what the
    // plain run prints, every node counted in its group.
    let r = heaplab_in(&dir, &["group", &prof, "-o", &out, "--coverage", "0.7", "--cold-group"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let g = format::read(&out).unwrap();
    let group_of = |f: &str| names.iter().position(|n| n.ends_with(f)).and_then(|c| g.contexts[c].group);
    assert_eq!((group_of("make_a"), group_of("make_b"), group_of("make_c")), (Some(0), Some(0), Some(1)), "{}", r.stdout);
    assert!(g.is_cold(1) && !g.contexts[c as usize].kept, "{}", r.stdout);
    let plain = std::process::Command::new(&exe).args(["2000", "3"]).output().unwrap();
    let report = path(&dir, "cold.json");
    let run = heaplab_in(&dir, &["run", "--groups", &out, "--fallback", "glibc", "--report", &report, "--", &exe, "2000", "3"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stdout, String::from_utf8_lossy(&plain.stdout));
    let v = json(&std::fs::read_to_string(&report).unwrap(), "run --report");
    assert_eq!((v["groups"][0]["count"].as_u64(), v["groups"][1]["count"].as_u64(), v["stray_frees"].as_u64()), (Some(4000), Some(2000), Some(0)), "{v}");
}
