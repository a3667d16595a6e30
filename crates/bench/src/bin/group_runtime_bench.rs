//! `heaplab-bench-group-runtime`: what the grouped allocator (`heaplab run --groups`) adds to
//! each allocation, identification above all, behind `make bench-group-runtime`.
//!
//! The workload (`programs/group_loop.c`, compiled here) times N malloc/free pairs made DEPTH
//! frames below two call sites A and B. It is traced once per depth with call stacks; from the
//! trace, groups are built whose selectors name the frame that tells A from B (the deepest
//! frame the walk must reach). Configurations: the fallback allocator alone; an empty group set
//! (which `heaplab run` serves with the fallback alone, the runtime not loaded: its row checks
//! that path); a selector that is never satisfied (every allocation
//! walked and evaluated, then sent to the fallback: the identification cost), once as the
//! runtime runs it (the loop's stacks repeat, so walks are replayed from the thread's memo) and
//! once with the memo off (every frame stepped); and A and B each grouped (identification plus
//! bump allocation instead of the fallback's). Each figure is the
//! median of several runs, configurations taking turns; the table and
//! `bench/group-runtime-results.md` name machine and commit.

#[path = "../runtime_cost.rs"]
mod runtime_cost;

use heaplab_group::run::run;
use heaplab_group::select::classify;
use heaplab_group::{Group, GroupContext, Groups, Params, Site};
use heaplab_trace::context::{basename, ModuleMap};
use heaplab_trace::launch::{launch, LaunchOptions, RuntimeOptions};
use heaplab_trace::reader::Half;
use heaplab_trace::TraceReader;
use runtime_cost::{fail, Args};
use std::collections::HashMap;
use std::path::Path;
use std::process::Stdio;

const USAGE: &str = "\
heaplab-bench-group-runtime — the grouped allocator's cost per allocation

Usage: heaplab-bench-group-runtime [--runs N] [--pairs N] [--out DIR]
  --runs N   runs per configuration; the median is reported [default: 7]
  --pairs N  malloc/free pairs timed per run [default: 2000000]
  --out DIR  where group-runtime-results.md goes [default: bench]";

/// Stack depths of the workload's allocations below its two call sites.
const DEPTHS: [u32; 3] = [2, 6, 14];

/// One run: the workload's ns per pair, and frames per walk from the report (0 plain).
fn once(cmd: &[String], groups: Option<&Groups>, fresh: bool, fallback: &heaplab_replay::allocators::Allocator, scratch: &Path) -> (f64, f64) {
    let Some(g) = groups else { return (runtime_cost::plain(cmd, fallback, scratch), 0.0) };
    runtime_cost::under(cmd, scratch, |out| {
        let opts = RuntimeOptions { fallback: fallback.library.clone(), fallback_name: fallback.name.clone() };
        let a = run(g, "bench", cmd, &opts, true, |c| c.stdout(out).env("HEAPLAB_GROUP_MEMO", if fresh { "0" } else { "1" })).unwrap_or_else(|e| fail(e.to_string()));
        if !a.status.success() {
            fail(format!("{cmd:?} grouped failed"));
        }
        let r = a.report.unwrap_or_else(|| fail(format!("{cmd:?}: no report")));
        if r.walks > 0 { r.frames as f64 / r.walks as f64 } else { 0.0 }
    })
}

/// The two busiest call sites of a traced run, as (module basename, file offset) frames.
fn two_contexts(trace: &Path) -> [Vec<(String, u64)>; 2] {
    let path = trace.to_string_lossy();
    let mut reader = TraceReader::open(&path).unwrap_or_else(|e| fail(e.to_string()));
    let mut counts: HashMap<u32, u64> = HashMap::new();
    for step in reader.by_ref() {
        if step.half != Half::Release && step.event.ptr_out != 0 && step.event.site != 0 {
            *counts.entry(step.event.site).or_insert(0) += 1;
        }
    }
    let ending = reader.into_ending();
    let map = ModuleMap::new(&ending.trailer.as_ref().unwrap_or_else(|| fail(format!("{path}: no trailer"))).modules);
    let mut busiest: Vec<(u64, u32)> = counts.iter().map(|(&s, &c)| (c, s)).collect();
    busiest.sort_unstable_by(|a, b| b.cmp(a));
    if busiest.len() < 2 {
        fail(format!("{path}: fewer than two call sites"));
    }
    let frames = |id: u32| -> Vec<(String, u64)> {
        let site = ending.sites.get(&id).unwrap_or_else(|| fail(format!("{path}: site {id} undefined")));
        site.frames
            .iter()
            .map(|&a| match map.find(a) {
                Some(m) => (String::from_utf8_lossy(basename(&m.path)).into_owned(), a - m.start + m.offset),
                None => ("?".into(), a),
            })
            .collect()
    };
    [frames(busiest[0].1), frames(busiest[1].1)]
}

/// Groups for the workload as `heaplab group` records them: contexts A and B, each its frames
/// up to stack position `d` (where A and B differ; the recursion below collapsed to each
/// frame's innermost occurrence, each site at the deepest position it is seen at), each in the
/// first group whose selector holds for it; `selectors` are conjunctions of sites 0 (A's frame
/// at `d`) and 1 (B's). A group whose selector holds for neither (one naming both) gets a
/// profiled context of no objects holding both, as a group has members: the allocation call
/// site, which A and B share, then does not decide alone, so every allocation walks to `d`,
/// which is what that configuration measures.
fn groups(ctx: &[Vec<(String, u64)>; 2], d: usize, selectors: &[&[usize]]) -> Groups {
    let mut sites: Vec<Site> = Vec::new();
    let mut index: HashMap<(String, u64), u32> = HashMap::new();
    let mut chains: [Vec<u32>; 2] = [Vec::new(), Vec::new()];
    // A's and B's frames at `d` first, so that they are sites 0 and 1.
    for (k, i) in [(0, d), (1, d)].into_iter().chain((0..d).flat_map(|i| [(0, i), (1, i)])) {
        let f = &ctx[k][i];
        let n = sites.len() as u32;
        let s = *index.entry(f.clone()).or_insert(n);
        if s == n {
            sites.push(Site { module: f.0.clone(), file_offset: f.1, function: String::new(), max_depth: i as u32 });
        }
        sites[s as usize].max_depth = sites[s as usize].max_depth.max(i as u32);
    }
    for (k, chain) in chains.iter_mut().enumerate() {
        for f in &ctx[k][..=d] {
            let s = index[f];
            if !chain.contains(&s) {
                chain.push(s);
            }
        }
    }
    let mut g = Groups {
        params: Params::default(),
        command: vec!["group_loop".into()],
        affinity_distance: 128,
        sites,
        contexts: Vec::new(),
        edges: Vec::new(),
        groups: selectors.iter().map(|conj| Group { members: Vec::new(), weight: 1, accesses: 1, selector: vec![conj.iter().map(|&i| i as u32).collect()] }).collect(),
        walk_depth: if selectors.is_empty() { 0 } else { d as u32 + 1 },
        identification: Default::default(),
    };
    for chain in &chains {
        let group = classify(&g, chain);
        g.contexts.push(GroupContext { sites: chain.clone(), group, accesses: 1, objects: 1, bytes: 1, small_accesses: 1, small_bytes: 1, kept: true, churns: false, sizes: None });
    }
    for (k, conj) in selectors.iter().enumerate() {
        if !g.contexts.iter().any(|c| c.group == Some(k as u32)) {
            let mut chain: Vec<u32> = chains[0].iter().copied().filter(|&s| s > 1).collect();
            chain.extend(conj.iter().map(|&s| s as u32));
            g.contexts.push(GroupContext { sites: chain, group: Some(k as u32), accesses: 1, objects: 0, bytes: 0, small_accesses: 1, small_bytes: 0, kept: true, churns: false, sizes: None });
        }
    }
    for (c, x) in g.contexts.iter().enumerate() {
        if let Some(k) = x.group {
            g.groups[k as usize].members.push(c as u32);
        }
    }
    g
}

fn main() {
    let Args { runs, pairs, out: out_dir } = Args::parse("heaplab-bench-group-runtime", USAGE);
    let scratch = runtime_cost::scratch();
    let prog = runtime_cost::compile("group_loop", &scratch);
    let fallback = heaplab_replay::allocators::resolve("jemalloc").unwrap_or_else(|e| fail(e.to_string()));
    let mut rows = Vec::new();
    let mut worst = 0.0f64;
    for depth in DEPTHS {
        let cmd = vec![prog.to_string_lossy().into_owned(), pairs.to_string(), depth.to_string()];
        let trace = std::path::absolute(scratch.join(format!("d{depth}.hltrace"))).unwrap();
        let small = vec![cmd[0].clone(), "20000".into(), depth.to_string()];
        let opts = LaunchOptions { stack_depth: depth + 6, ..LaunchOptions::default() };
        launch(&small, &trace, &opts, |c| c.stdout(Stdio::null())).unwrap_or_else(|e| fail(e.to_string()));
        let ctx = two_contexts(&trace);
        let d = (0..ctx[0].len().min(ctx[1].len())).find(|&i| ctx[0][i] != ctx[1][i]).unwrap_or_else(|| fail("the two call sites do not differ".into()));
        let configs: [(&str, Option<Groups>); 5] = [
            ("jemalloc alone", None),
            ("no groups (nothing walked)", Some(groups(&ctx, d, &[]))),
            ("walked, no selector holds", Some(groups(&ctx, d, &[&[0, 1]]))),
            ("walked, A and B grouped", Some(groups(&ctx, d, &[&[0], &[1]]))),
            ("walked fresh (memo off), no selector holds", Some(groups(&ctx, d, &[&[0, 1]]))),
        ];
        let measured = runtime_cost::take_turns(runs, configs.len(), |k| once(&cmd, configs[k].1.as_ref(), k == 4, &fallback, &scratch));
        let (t, frames): (Vec<f64>, Vec<f64>) = measured.into_iter().unzip();
        worst = worst.max(t[2] - t[1]);
        for (k, (what, _)) in configs.iter().enumerate() {
            let ident = if k == 2 || k == 4 { format!("{:+.1}", t[k] - t[1]) } else { String::new() };
            let walked = if frames[k] > 0.0 { format!("{:.1}", frames[k]) } else { String::new() };
            rows.push(format!("| {} | {what} | {walked} | {:.1} | {:+.1} | {ident} |", d + 1, t[k], t[k] - t[0]));
        }
    }
    let _ = std::fs::remove_dir_all(&scratch);

    let table = format!(
        "| walk depth | configuration | frames per walk | ns per malloc+free | added ns | identification ns |\n|---:|---|---:|---:|---:|---:|\n{}\n",
        rows.join("\n")
    );
    print!("{table}");
    println!("identification: at most {worst:.1} ns per allocation (target 50)");
    let body = format!(
        "Command: `make bench-group-runtime` (`heaplab-bench-group-runtime --runs {runs} --pairs {pairs}`).\n\n\
         The workload (`crates/bench/programs/group_loop.c`) times {pairs} malloc/free pairs of 8 sizes (16 to\n\
         256 bytes) made a few frames below two call sites A and B; each figure is the median of {runs} runs,\n\
         configurations taking turns, with jemalloc as the fallback. The groups' selectors name the frame\n\
         that tells A from B (A and B share their allocation call site, which therefore cannot decide\n\
         alone), so every allocation's walk reaches it (walk depth = its stack position + 1).\n\
         *Identification* is what a walk and the selectors' evaluation add per allocation: the run whose\n\
         selector never holds (every allocation walked, evaluated, then sent to jemalloc) minus the run\n\
         with no groups (run on jemalloc alone, the runtime not loaded: so identification here includes the\n\
         runtime's interposer and its cache of call sites). Target: at most 50 ns. The loop allocates\n\
         from the same stacks again and again, so the runtime replays its walks from each thread's memo\n\
         (a load and a compare per frame); *walked fresh* turns the memo off: every frame stepped.\n\
         *A and B grouped*: identification plus bump allocation in the groups' chunks instead of jemalloc.\n\n\
         {table}\nIdentification: at most {worst:.1} ns per allocation here.\n"
    );
    runtime_cost::write_results(&out_dir, "group-runtime-results.md", "The grouped allocator's cost per allocation", &body);
}
