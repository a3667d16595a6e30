//! `heaplab access`: run a program under the heaplab valgrind tool (`heaplab_access::run`) and
//! print the profile's summary: blocks, accesses, heap share, the graphs, the top contexts and,
//! with `--contexts`, the full contexts and their affinity graph.

use crate::Failure;
use clap::Args;
use clap::builder::{PossibleValuesParser, TypedValueParser};
use heaplab_access::run::{Graph, RunOptions, DEFAULT_AFFINITY, DEFAULT_MAX_GROUPED};
use heaplab_access::AccessProfile;
use heaplab_model::units::{bytes, grouped};
use heaplab_trace::launch::describe_status;
use serde_json::{json, Value};
use std::fmt::Write as _;
use std::os::unix::process::ExitStatusExt;

pub const ACCESS_HELP: &str = "\
Run PROGRAM under valgrind with heaplab's own tool and write its access profile: every heap
block in allocation order (size asked for, allocation context, lifetime in heap events, loads
and stores that touched it), the co-access graph and the friend graph. The profile feeds
`heaplab layout --access` (strategies that place blocks used together next to each other)
and, with --contexts, `heaplab group` (HALO's grouping of allocation contexts).

What is measured:
  blocks      every malloc, calloc, realloc (a new block), aligned allocation and C++ new, as
              the tracer numbers them; the allocator is valgrind's while profiling.
  accesses    every load and store the program executes (plain, vector, atomic, and memory
              touched by instructions valgrind emulates), attributed to the live block holding
              the address; the rest (stack, globals) is counted in the total only.
  contexts    the allocation's call stack: --stack-depth frames from the return address into
              the program (default 1; --contexts alone asks for 4, enough to see past
              allocation wrappers), keyed by file + offset so the key is the same in every run.
  co-access   HALO's affinity: a heap access to block v, not a repeat of the latest one, adds
              1 to the edge u -> v of every other block u accessed within the last A bytes of
              accesses (--affinity-distance, default 128 as HALO chose), once per u.
  friends     an 8-byte store, into block u, of a pointer into another live block v adds 1 to
              the edge u -> v.
With --contexts (HALO's profile, §4.1-4.2):
  full contexts  the allocation's whole call stack (up to 64 frames) reduced to the frames in
              the program's own modules (the executable, plus each --context-module), each
              return address kept at its innermost occurrence (recursion collapsed), with the
              deepest stack position each frame was seen at. Every block names its own.
  context graph  a heap access to block v (of full context y) adds 1 to the undirected edge
              {x, y} for every other block u (of context x) in the same window, when both are at
              most --max-grouped-size bytes and co-allocatable: no allocation made between the
              two came from x or y. Stores that initialise a block (before its first load) make
              no context edge: objects built one after another are not thereby used together.
--graph picks what the window feeds: blocks, contexts, both (the default with --contexts)
or none; the block graph is the costly one, so `--graph contexts` profiles faster.
Memory is bounded: each graph holds at most --max-edges edges; when full its lightest edges
are dropped (weight 1, then 2, 4, ...) and the dropped weight is reported.

Expect the program to run 20 to 60 times slower than alone (valgrind's translation, a helper
call per load and store). The summary goes to standard error (as JSON with --json); the
program's streams are its own.

Exit status: 0 when the program exited 0; 1 when it exited with another status (the profile is
complete); 2 when it was killed by a signal (the profile is still written: valgrind ends the
tool first), could not be started, or valgrind is missing (apt-get install valgrind). A program
that replaces itself with exec leaves no profile: profile the program it starts instead. A
script is profiled as its interpreter (the summary notes it), so give the program itself, not
a wrapper such as a pyenv shim (`heaplab access -- $(pyenv which python3) app.py`).

Examples:
  heaplab access -o health.hlaccess -- ./health 9 20 1
  heaplab access --contexts -o sq.hlaccess -- sqlite3 db.sqlite < script.sql
  heaplab access --contexts --graph contexts -o prog.hlaccess -- ./prog small-input
  heaplab access --contexts --context-module libmine.so.1 -o p.hlaccess -- ./prog
  heaplab access --affinity-distance 512 --json -o t.hlaccess -- ./treeadd 16 2> summary.json";

/// Arguments of `heaplab access`.
#[derive(Args)]
pub struct AccessArgs {
    /// The profile to write (.hlaccess).
    #[arg(short, long, value_name = "FILE")]
    output: String,
    /// Record full contexts (HALO's) and their affinity graph, and allocation contexts deep
    /// enough to tell wrappers apart (stack depth 4 unless --stack-depth says otherwise).
    #[arg(long)]
    contexts: bool,
    /// A module (file name, like libfoo.so.1) whose frames count in full contexts besides the
    /// executable's; repeatable. Needs --contexts.
    #[arg(long = "context-module", value_name = "NAME", requires = "contexts")]
    context_modules: Vec<String>,
    /// The graphs the access window feeds: blocks (co-access, for layouts), contexts (HALO's,
    /// for grouping; needs --contexts), both, or none [default: both with --contexts, else
    /// blocks].
    #[arg(long, value_name = "WHICH", value_parser = graph_parser())]
    graph: Option<Graph>,
    #[arg(long, value_name = "BYTES", default_value_t = DEFAULT_MAX_GROUPED, value_parser = crate::flag_ranges::MAX_GROUPED_SIZE.parser::<u64>(),
        help = crate::flag_ranges::MAX_GROUPED_SIZE.help("Blocks larger than this form no context edges (HALO's maximum grouped object size)."))]
    max_grouped_size: u64,
    #[arg(long, value_name = "N", value_parser = crate::flag_ranges::ACCESS_STACK_DEPTH.parser::<u32>(),
        help = crate::flag_ranges::ACCESS_STACK_DEPTH.help("Frames per allocation context, from the return address into the program [default: 1, or 4 with --contexts]."))]
    stack_depth: Option<u32>,
    #[arg(long, value_name = "BYTES", default_value_t = DEFAULT_AFFINITY, value_parser = crate::flag_ranges::AFFINITY_DISTANCE.parser::<u64>(),
        help = crate::flag_ranges::AFFINITY_DISTANCE.help("The co-access window: bytes of accesses within which two blocks count as used together (HALO's A)."))]
    affinity_distance: u64,
    #[arg(long, value_name = "N", default_value_t = heaplab_access::run::DEFAULT_MAX_EDGES, value_parser = crate::flag_ranges::ACCESS_MAX_EDGES.parser::<u64>(),
        help = crate::flag_ranges::ACCESS_MAX_EDGES.help("Edges each graph holds at most (32 bytes each) before its lightest are dropped."))]
    max_edges: u64,
    /// Contexts listed in the summary.
    #[arg(long, value_name = "N", default_value_t = 5)]
    top: usize,
    /// Write the summary as JSON.
    #[arg(long)]
    json: bool,
    /// The program and its arguments (put them after `--`).
    #[arg(required = true, trailing_var_arg = true, allow_hyphen_values = true, value_name = "PROGRAM")]
    command: Vec<String>,
}

/// The stack depth `--contexts` asks for when `--stack-depth` is not given.
const CONTEXTS_DEPTH: u32 = 4;

/// `--graph`.
const GRAPHS: [(&str, Graph); 4] = [("blocks", Graph::Blocks), ("contexts", Graph::Contexts), ("both", Graph::Both), ("none", Graph::None)];

fn graph_parser() -> impl TypedValueParser<Value = Graph> {
    PossibleValuesParser::new(GRAPHS.map(|(n, _)| n)).map(|s| GRAPHS.iter().find(|(n, _)| *n == s).map(|(_, g)| *g).expect("clap checked the name"))
}

/// `heaplab access`.
pub fn access(a: AccessArgs) -> Result<(), Failure> {
    if a.output == "-" {
        return Err(Failure::Input("-o -: a profile must go to a file".into()));
    }
    crate::outputs::check_writable(&a.output)?;
    let output = std::path::absolute(&a.output).map_err(|e| Failure::Input(format!("{}: {e}", a.output)))?;
    let stack_depth = a.stack_depth.unwrap_or(if a.contexts { CONTEXTS_DEPTH } else { 1 });
    let graph = a.graph.unwrap_or(if a.contexts { Graph::Both } else { Graph::Blocks });
    if graph.contexts() && !a.contexts {
        return Err(Failure::Input(format!("--graph {}: the context graph needs --contexts", graph.name())));
    }
    let opts = RunOptions {
        stack_depth,
        affinity_distance: a.affinity_distance,
        max_edges: a.max_edges,
        full_contexts: a.contexts,
        context_modules: a.context_modules.clone(),
        graph,
        max_grouped_size: a.max_grouped_size,
    };
    let run = heaplab_access::run::run(&a.command, &output, &opts)?;
    let program = &a.command[0];
    let status = run.status;
    let p = &run.profile;
    let file_bytes = std::fs::metadata(&output).map(|m| m.len()).unwrap_or(0);
    let text = if a.json {
        serde_json::to_string_pretty(&summary_json(&a, p, &run, file_bytes)).expect("JSON of plain values") + "\n"
    } else {
        summary_text(&a, p, &run, file_bytes)
    };
    eprint!("{text}");
    match (status.code(), status.signal()) {
        (Some(0), _) => Ok(()),
        (Some(c), _) => Err(Failure::Work(format!("{program} exited with status {c}; its profile is complete: {}", a.output))),
        _ => Err(Failure::Input(format!("{program} was {}; its profile up to then is kept: {}", describe_status(&status), a.output))),
    }
}

/// The context's innermost frame, as people read it: `function (file+0xoffset)`.
fn frame_text(p: &AccessProfile, context: u32) -> String {
    let Some(f) = p.contexts[context as usize].frames.first() else { return "(no frames)".into() };
    let file = heaplab_trace::context::basename(&f.module);
    let place = if f.module.is_empty() { format!("0x{:x}", f.ip) } else { format!("{}+0x{:x}", String::from_utf8_lossy(file), f.file_offset) };
    if f.function.is_empty() {
        place
    } else {
        format!("{} ({place})", f.function)
    }
}

fn weight(edges: &[heaplab_access::Edge]) -> u64 {
    edges.iter().map(|e| e.weight).sum()
}

fn summary_text(a: &AccessArgs, p: &AccessProfile, run: &heaplab_access::run::Profiled, file_bytes: u64) -> String {
    let mut w = String::new();
    let i = &p.info;
    let freed = p.blocks.iter().filter(|b| b.free_at != u64::MAX).count();
    let untouched = p.blocks.iter().filter(|b| b.reads + b.writes == 0).count();
    let requested: u64 = p.blocks.iter().map(|b| b.size).sum();
    let _ = writeln!(w, "program        {} — {} after {:.2} s under valgrind", a.command.join(" "), describe_status(&run.status), run.wall.as_secs_f64());
    if let Some(line) = &run.script {
        let _ = writeln!(w, "note           {} is a script (#!{line}): this is its interpreter's profile; programs it starts are not in it", a.command[0]);
    }
    let _ = writeln!(w, "profile        {} ({}), stack depth {}", a.output, bytes(file_bytes), i.stack_depth);
    let _ = writeln!(
        w,
        "blocks         {} allocated ({} requested), {} freed, {} never accessed; {} contexts",
        grouped(p.blocks.len() as u64),
        bytes(requested),
        grouped(freed as u64),
        grouped(untouched as u64),
        grouped(p.contexts.len() as u64)
    );
    let _ = writeln!(
        w,
        "accesses       {} loads and stores, {} on the heap ({:.1}%); {:.0} per µs under valgrind",
        grouped(i.accesses),
        grouped(i.heap_accesses),
        100.0 * p.heap_share(),
        i.accesses as f64 / run.wall.as_secs_f64().max(1e-9) / 1e6
    );
    let dropped = |d: u64| if d > 0 { format!("; {} weight dropped by the memory bound", grouped(d)) } else { String::new() };
    let _ = writeln!(
        w,
        "co-access      {} edges, weight {} (affinity distance {} B){}",
        grouped(p.coaccess.len() as u64),
        grouped(weight(&p.coaccess)),
        i.affinity_distance,
        dropped(i.coaccess_dropped)
    );
    let _ = writeln!(w, "friends        {} edges, weight {}{}", grouped(p.friends.len() as u64), grouped(weight(&p.friends)), dropped(i.friends_dropped));
    if !p.info.context_modules.is_empty() {
        let deepest = p.full_contexts.iter().filter_map(|c| c.depths.last()).max();
        let _ = writeln!(
            w,
            "full contexts  {} in {}{}",
            grouped(p.full_contexts.len() as u64),
            p.info.context_modules.join(", "),
            deepest.map_or(String::new(), |d| format!("; deepest frame at stack depth {d}"))
        );
    }
    if p.info.max_grouped_size > 0 {
        let _ = writeln!(
            w,
            "context graph  {} edges, weight {} (blocks up to {} B, co-allocatable){}",
            grouped(p.context_affinity.len() as u64),
            grouped(p.context_affinity_weight()),
            p.info.max_grouped_size,
            dropped(i.context_affinity_dropped)
        );
    }
    if p.blocks.is_empty() {
        let _ = writeln!(w, "note           no heap block seen: a statically linked program's allocator cannot be replaced by valgrind");
    }
    let totals = p.context_totals();
    if !totals.is_empty() && a.top > 0 {
        let _ = writeln!(w, "top contexts   {:>14} {:>10} {:>10}  allocated at", "accesses", "blocks", "bytes");
        for t in totals.iter().take(a.top) {
            let _ = writeln!(w, "               {:>14} {:>10} {:>10}  {}", grouped(t.reads + t.writes), grouped(t.blocks), bytes(t.bytes), frame_text(p, t.context));
        }
    }
    let full = p.full_context_totals();
    if !full.is_empty() && a.top > 0 {
        let _ = writeln!(w, "top full contexts {:>11} {:>10} {:>10}  frames, innermost first", "accesses", "blocks", "bytes");
        for t in full.iter().take(a.top) {
            let _ = writeln!(w, "               {:>14} {:>10} {:>10}  {}", grouped(t.reads + t.writes), grouped(t.blocks), bytes(t.bytes), full_text(p, t.context));
        }
    }
    if p.info.max_grouped_size > 0 {
        let _ = writeln!(w, "next           heaplab group {} -o PROG.hlgroups", a.output);
    } else {
        let _ = writeln!(w, "next           heaplab layout PROG.hltrace --access {} --strategy plan-affinity -o PROG.hllayout", a.output);
    }
    w
}

/// A full context's frames as people read them: functions (or file+offset), innermost first.
fn full_text(p: &AccessProfile, context: u32) -> String {
    let c = &p.full_contexts[context as usize];
    if c.frames.is_empty() {
        return "(no frame in the context modules)".into();
    }
    let names: Vec<String> = c
        .frames
        .iter()
        .map(|f| if f.function.is_empty() { format!("{}+0x{:x}", String::from_utf8_lossy(heaplab_trace::context::basename(&f.module)), f.file_offset) } else { f.function.clone() })
        .collect();
    names.join(" < ")
}

fn summary_json(a: &AccessArgs, p: &AccessProfile, run: &heaplab_access::run::Profiled, file_bytes: u64) -> Value {
    let i = &p.info;
    let contexts: Vec<Value> = p
        .context_totals()
        .iter()
        .take(a.top)
        .map(|t| {
            let c = &p.contexts[t.context as usize];
            json!({
                "key": format!("{:016x}", c.key),
                "blocks": t.blocks,
                "bytes": t.bytes,
                "reads": t.reads,
                "writes": t.writes,
                "frames": c.frames.iter().map(|f| json!({"ip": f.ip, "module": f.module, "file_offset": f.file_offset, "function": f.function})).collect::<Vec<_>>(),
            })
        })
        .collect();
    let full: Vec<Value> = p
        .full_context_totals()
        .iter()
        .take(a.top)
        .map(|t| {
            let c = &p.full_contexts[t.context as usize];
            json!({
                "index": t.context,
                "key": format!("{:016x}", c.key),
                "blocks": t.blocks,
                "bytes": t.bytes,
                "reads": t.reads,
                "writes": t.writes,
                "frames": c.frames.iter().zip(&c.depths).map(|(f, d)| json!({"ip": f.ip, "module": f.module, "file_offset": f.file_offset, "function": f.function, "depth": d})).collect::<Vec<_>>(),
            })
        })
        .collect();
    json!({
        "program": {
            "command": a.command,
            "exit_code": run.status.code(),
            "signal": run.status.signal(),
            "wall_seconds": run.wall.as_secs_f64(),
            "script_interpreter": run.script,
        },
        "profile": a.output,
        "file_bytes": file_bytes,
        "stack_depth": i.stack_depth,
        "affinity_distance": i.affinity_distance,
        "blocks": p.blocks.len(),
        "bytes_requested": p.blocks.iter().map(|b| b.size).sum::<u64>(),
        "blocks_freed": p.blocks.iter().filter(|b| b.free_at != u64::MAX).count(),
        "blocks_untouched": p.blocks.iter().filter(|b| b.reads + b.writes == 0).count(),
        "contexts": p.contexts.len(),
        "accesses": i.accesses,
        "heap_accesses": i.heap_accesses,
        "heap_share": p.heap_share(),
        "reads": p.blocks.iter().map(|b| b.reads).sum::<u64>(),
        "writes": p.blocks.iter().map(|b| b.writes).sum::<u64>(),
        "coaccess": {"edges": p.coaccess.len(), "weight": weight(&p.coaccess), "dropped": i.coaccess_dropped},
        "friends": {"edges": p.friends.len(), "weight": weight(&p.friends), "dropped": i.friends_dropped},
        "top_contexts": contexts,
        "context_modules": i.context_modules,
        "full_contexts": p.full_contexts.len(),
        "max_grouped_size": i.max_grouped_size,
        "context_affinity": {"edges": p.context_affinity.len(), "self_edges": p.context_affinity.iter().filter(|e| e.from == e.to).count(),
            "weight": p.context_affinity_weight(), "dropped": i.context_affinity_dropped},
        "top_full_contexts": full,
    })
}
