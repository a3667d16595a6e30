//! `heaplab group`: an access profile with full contexts to a `.hlgroups` file through
//! `heaplab_group` (graph, grouping, selectors), with its summary (table or JSON). The summary
//! printing is shared with `group-info`.

use crate::flag_ranges::{CHUNK_SIZE, GROUP_MEMBERS, MAX_OBJECT_SIZE, MIN_WEIGHT, SPARE_CHUNKS};
use crate::outputs::check_outputs;
use crate::Failure;
use clap::Args;
use heaplab_group::same_layout::{self, SizeClasses};
use heaplab_group::{format, select, ColdGroup, Groups, Params, Recursion, COLD_DILUTION};
use heaplab_model::units::grouped;
use serde_json::{json, Value};

pub const GROUP_HELP: &str = "\
Group a program's allocation contexts as HALO does (Savage and Jones, CGO 2020): contexts whose
objects are used close together in time are put in one group, so that `heaplab run --groups`
can serve each group's small objects from chunks of its own.

PROFILE is an access profile recorded with full contexts (`heaplab access --contexts`): each
allocation's call stack reduced to the program's own call sites, and the affinity graph between
contexts (objects of two contexts accessed within the affinity distance). From it:

  1. the graph: contexts holding accesses to objects of at most --max-object-size bytes, the
     most accessed first until they cover --coverage of all such accesses (allocations with no
     program frame on their stack cannot be told apart at run time and are left out, and so
     are contexts whose objects churn: bytes allocated above --max-turnover times their peak
     live bytes, which bump allocation would spread over fresh memory); with
     --recursion function (the default) contexts that differ only in a recursive function's
     own outer call sites are one node (HALO's `call-site` keeps them apart);
  2. grouping: edges lighter than --min-weight dropped, a group grown around the hotter end of
     the strongest edge left, adding the context with the best merge benefit
     m = S(A+B) - (1 - T) max(S(A), S(B)) while it is positive (S = weight / (loops + pairs),
     T = --merge-tolerance), up to --max-group-members; a group is kept if its internal weight
     is at least --group-threshold of the graph's accesses and its objects' accesses at least
     that share of all the profile's accesses (a group the program hardly touches cannot move
     its misses, and serving it costs the runtime's start-up); then a group with more edge
     weight to another group than inside itself joins it, the most lopsided first (heaplab's
     addition; --no-absorb keeps HALO's groups as formed);
  3. selectors: for each group, most accessed first, the fewest call sites that tell each member
     apart from every context not claimed by an earlier group; the run-time allocator walks the
     stack as deep as the deepest selector site (the walk depth) and takes the first group whose
     selector matches;
  4. cost: the frames those walks would visit for the profile's own allocations, per object
     grouped; above --max-walk-per-object no groups are made (the program then runs on the
     fallback allocator alone).

--affinity-distance is chosen when profiling; given here it must equal the profile's (an error
otherwise, so a script cannot silently group with another distance). --chunk-size and
--spare-chunks are recorded for the grouped allocator.

Prints: contexts and how many were kept (and left out for churning), each group (its contexts
named by their innermost functions, its weight and accesses, its selector), the walk depth, the
estimated frames walked per grouped object, and any context the selectors would put in the
wrong group (its call sites are all shared with another's).

Examples:
  heaplab access --contexts -o prof.hlaccess -- ./prog small-input
  heaplab group prof.hlaccess -o prog.hlgroups
  heaplab group prof.hlaccess -o prog.hlgroups --merge-tolerance 0.1 --json";

/// Arguments of `heaplab group`.
#[derive(Args)]
pub struct GroupArgs {
    /// Access profile with full contexts (.hlaccess from `heaplab access --contexts`).
    profile: String,
    /// Write the groups here (.hlgroups).
    #[arg(short, long, value_name = "FILE")]
    output: String,
    /// The affinity distance the profile must have been recorded with (bytes).
    #[arg(long, value_name = "BYTES")]
    affinity_distance: Option<u64>,
    /// Merge tolerance T (HALO: 0.05).
    #[arg(long, value_name = "T", default_value_t = Params::default().merge_tolerance)]
    merge_tolerance: f64,
    /// Share of accesses the kept contexts cover, hottest first (HALO: 0.9).
    #[arg(long, value_name = "SHARE", default_value_t = Params::default().coverage)]
    coverage: f64,
    #[arg(long, value_name = "W", default_value_t = Params::default().min_weight, value_parser = MIN_WEIGHT.parser::<u64>(),
          help = MIN_WEIGHT.help("Edges lighter than this are ignored"))]
    min_weight: u64,
    #[arg(long, value_name = "N", default_value_t = Params::default().max_group_members, value_parser = GROUP_MEMBERS.parser::<usize>(),
          help = GROUP_MEMBERS.help("Most contexts per group (0: no limit)"))]
    max_group_members: usize,
    /// A group is kept if its internal weight is at least this share of the graph's accesses,
    /// and its objects' accesses this share of all the profile's accesses.
    #[arg(long, value_name = "SHARE", default_value_t = Params::default().group_threshold)]
    group_threshold: f64,
    #[arg(long, value_name = "BYTES", default_value_t = Params::default().max_object_size, value_parser = MAX_OBJECT_SIZE.parser::<u64>(),
          help = MAX_OBJECT_SIZE.help("Larger objects are never grouped (HALO: 4096)"))]
    max_object_size: u64,
    #[arg(long, value_name = "BYTES", default_value_t = Params::default().chunk_size, value_parser = CHUNK_SIZE.parser::<u64>(),
          help = CHUNK_SIZE.help("Bytes per chunk of the grouped allocator (HALO: 1 MiB)"))]
    chunk_size: u64,
    #[arg(long, value_name = "N", default_value_t = Params::default().spare_chunks, value_parser = SPARE_CHUNKS.parser::<u32>(),
          help = SPARE_CHUNKS.help("Empty chunks kept for reuse (HALO: 1)"))]
    spare_chunks: u32,
    /// Whole call sites (the default; the flag stays for scripts that name it): contexts below
    /// the coverage cut join the group of their allocation call site when every covered context
    /// allocating there is in that one group. The call site then decides without a stack walk,
    /// and lists built from covered and uncovered contexts stay in one heap. Where its contexts
    /// span groups, what no selector picks goes to the group of most of its profiled objects.
    #[arg(long, overrides_with = "no_whole_call_sites")]
    whole_call_sites: bool,
    /// Send every context below the coverage cut, and every one no selector picks, to the
    /// fallback allocator, as HALO does.
    #[arg(long, overrides_with = "whole_call_sites")]
    no_whole_call_sites: bool,
    /// Absorb lopsided groups (the default): once HALO's clustering has formed the groups, a
    /// group with more affinity weight to another group than inside itself joins it, the most
    /// lopsided first. The density score favours small tight groups, so contexts whose objects
    /// are used mostly with a large group's objects can otherwise end up apart, in other chunks.
    #[arg(long, overrides_with = "no_absorb")]
    absorb: bool,
    /// Keep every group as HALO's clustering forms it.
    #[arg(long, overrides_with = "absorb")]
    no_absorb: bool,
    /// Give every context no group claims a cold group of their own, tried last, where it
    /// allocates at a call site grouped contexts allocate at too, instead of only those that
    /// would dilute a group (the default: contexts whole call sites would put in a group where,
    /// call site by call site, their share of its bytes exceeds their share of its accesses by
    /// more than 5 points, counting objects small enough to group).
    /// Their objects no longer sit between the hot groups' objects, which lowers cache misses;
    /// the call site then walks the stack to tell them apart, which costs time. A cold group,
    /// like any group, must take the group threshold's share of the accesses.
    #[arg(long, overrides_with = "no_cold_group")]
    cold_group: bool,
    /// Make no cold group: contexts no group claims follow their call site's group (whole call
    /// sites) or go to the fallback, however cold their objects.
    #[arg(long, overrides_with = "cold_group")]
    no_cold_group: bool,
    /// How recursion is collapsed into the graph's nodes: `function` keeps only the innermost
    /// frame of each function, so the objects a recursion allocates at one point are one node
    /// whatever path through its call sites led there; `call-site` is HALO's reduction (one
    /// node per distinct chain of call sites). Selectors use every call site either way.
    #[arg(long, value_name = "MODE", default_value = Params::default().recursion.name(), value_parser = parse_recursion)]
    recursion: Recursion,
    /// Leave out contexts whose small objects churn: bytes allocated above this many times their
    /// peak live bytes (0: no limit, HALO's behaviour). Bump allocation never reuses a dead
    /// object's space, so such objects would stream through the cache; the fallback reuses it.
    #[arg(long, value_name = "X", default_value_t = Params::default().max_turnover)]
    max_turnover: f64,
    /// Make no groups when identifying them at run time would walk more than this many stack
    /// frames per object they serve, estimated on the profile (0: no limit). Allocations made
    /// deep inside a library walk through its frames to reach the program's: when few of them
    /// are grouped, the walks cost more than the grouping can save.
    #[arg(long, value_name = "FRAMES", default_value_t = Params::default().max_walk_per_object)]
    max_walk_per_object: f64,
    /// Print the summary as JSON.
    #[arg(long)]
    json: bool,
}

fn parse_recursion(s: &str) -> Result<Recursion, String> {
    Recursion::parse(s).ok_or_else(|| format!("`{s}` is not a recursion mode (call-site or function)"))
}

/// `heaplab group`.
pub fn group(a: GroupArgs) -> Result<(), Failure> {
    check_outputs(&[&a.output], &[&a.profile])?;
    let params = Params {
        coverage: a.coverage,
        merge_tolerance: a.merge_tolerance,
        min_weight: a.min_weight,
        max_group_members: a.max_group_members,
        group_threshold: a.group_threshold,
        max_object_size: a.max_object_size,
        chunk_size: a.chunk_size,
        spare_chunks: a.spare_chunks,
        whole_call_sites: !a.no_whole_call_sites,
        absorb: !a.no_absorb,
        cold_group: if a.cold_group {
            ColdGroup::All
        } else if a.no_cold_group {
            ColdGroup::Never
        } else {
            ColdGroup::Diluting
        },
        recursion: a.recursion,
        max_turnover: a.max_turnover,
        max_walk_per_object: a.max_walk_per_object,
    };
    params.validate().map_err(Failure::Input)?;
    let profile = heaplab_access::read(&a.profile).map_err(|e| Failure::Input(e.to_string()))?;
    let in_profile = |e: heaplab_group::GroupError| Failure::Input(format!("{}: {e}", a.profile));
    if let Some(d) = a.affinity_distance {
        heaplab_group::check_affinity_distance(&profile, d).map_err(in_profile)?;
    }
    let g = heaplab_group::group(&profile, &params).map_err(in_profile)?;
    format::write(&a.output, &g)?;
    if a.json {
        let mut v = describe(&g, false);
        v["profile"] = json!(a.profile);
        v["output"] = json!(a.output);
        println!("{}", serde_json::to_string_pretty(&v).expect("JSON of plain values"));
    } else {
        println!("profile        {} ({})", a.profile, g.command.join(" "));
        print_summary(&g, &heaplab_group::table::destinations(&g));
        println!("output         {}", a.output);
    }
    Ok(())
}

/// Selector conjunctions as text: `a & b | c`.
pub fn selector_text(g: &Groups, sel: &[Vec<u32>]) -> String {
    sel.iter().map(|c| c.iter().map(|&s| g.site_name(s)).collect::<Vec<_>>().join(" & ")).collect::<Vec<_>>().join(" | ")
}

/// The figures `group` prints and `group-info` begins with.
pub fn print_summary(g: &Groups, runs_in: &[Option<u32>]) {
    let names = g.context_names();
    let kept = g.contexts.iter().filter(|c| c.kept).count();
    let all: u64 = g.contexts.iter().map(|c| c.accesses).sum();
    let kept_acc: u64 = g.contexts.iter().filter(|c| c.kept).map(|c| c.accesses).sum();
    let grouped_acc: u64 = g.groups.iter().map(|x| x.accesses).sum();
    let share = |v: u64| if all == 0 { 0.0 } else { 100.0 * v as f64 / all as f64 };
    println!("contexts       {} full contexts, {} kept ({:.1}% of {} accesses)", grouped(g.contexts.len() as u64), grouped(kept as u64), share(kept_acc), grouped(all));
    let churning: Vec<&heaplab_group::GroupContext> = g.contexts.iter().filter(|c| c.churns).collect();
    if !churning.is_empty() {
        let acc: u64 = churning.iter().map(|c| c.accesses).sum();
        println!("churning       {} contexts left out ({:.1}% of accesses): objects replaced more than {} times over", grouped(churning.len() as u64), share(acc), g.params.max_turnover);
    }
    println!("edges          {} between contexts", grouped(g.edges.len() as u64));
    println!("groups         {} ({:.1}% of accesses grouped)", g.groups.len(), share(grouped_acc));
    let taken = served_anyway(g, runs_in);
    if taken.contexts > 0 {
        println!(
            "               at run time {:.1}% of accesses: whole call sites take in {} {} of no group ({} {})",
            share(grouped_acc + taken.accesses),
            grouped(taken.contexts),
            if taken.contexts == 1 { "context" } else { "contexts" },
            grouped(taken.objects),
            if taken.objects == 1 { "object" } else { "objects" }
        );
        // What the one option about exactly these objects would do, so the trade is seen: the
        // contexts a cold group could take, judged call site by call site as the default does.
        let candidates = heaplab_group::cold_candidates(g);
        let sets = heaplab_group::taken_in_by_call_site(g, &candidates, runs_in);
        let could_acc: u64 = sets.iter().map(|(_, t)| t.accesses).sum();
        if g.params.cold_group != ColdGroup::All && could_acc > 0 && g.params.takes_its_share(could_acc, all) {
            let most = sets.iter().map(|(_, t)| t.dilution()).fold(f64::MIN, f64::max);
            let cold = "--cold-group gives them chunks of their own, for a walk at those call sites";
            let why = match g.params.cold_group {
                ColdGroup::Diluting if most <= COLD_DILUTION => format!(
                    "they dilute the groups they join by {:+.1} points at most, not more than {:.0}, so their objects sit among the groups'; {cold}",
                    100.0 * most,
                    100.0 * COLD_DILUTION
                ),
                ColdGroup::Diluting => format!(
                    "some dilute their group by {:+.1} points, more than {:.0}, but a cold group of them would take less than the group threshold's share of the accesses or walk past --max-walk-per-object",
                    100.0 * most,
                    100.0 * COLD_DILUTION
                ),
                _ => format!("their objects sit among the groups'; {cold}"),
            };
            println!("               ({why})");
        }
    }
    if let Some(would) = heaplab_group::without_cold_group(g) {
        let k = g.groups.len() - 1;
        for (j, t) in would.iter().enumerate().filter(|(_, t)| t.contexts > 0) {
            println!(
                "               cold group {k}: {} {} ({} {}) that whole call sites would otherwise put in group {j}, {:.1}% of its bytes and {:.1}% of its accesses{}",
                grouped(t.contexts),
                if t.contexts == 1 { "context" } else { "contexts" },
                grouped(t.objects),
                if t.objects == 1 { "object" } else { "objects" },
                100.0 * t.byte_share(),
                100.0 * t.access_share(),
                if g.params.cold_group == ColdGroup::Diluting { " (--no-cold-group keeps them there)" } else { "" },
            );
        }
    }
    if g.groups.is_empty() && !g.identification.dropped && kept > 0 {
        // Why none: the clustering found no group whose weight and accesses reach the threshold.
        println!(
            "               none reaches --group-threshold {} of the graph's weight and of all {} accesses (the kept contexts take {:.1}% of them)",
            g.params.group_threshold,
            grouped(all),
            share(kept_acc)
        );
    }
    let alike = same_layout::declined(g, SizeClasses::Jemalloc);
    for (k, x) in g.groups.iter().enumerate() {
        let members: Vec<&str> = x.members.iter().map(|&m| names[m as usize].as_str()).collect();
        let label = if g.is_cold(k) { format!("{k} (cold)") } else { k.to_string() };
        println!("  group {label:<6} {}", members.join(", "));
        println!("               weight {}, accesses {} ({:.1}%)", grouped(x.weight), grouped(x.accesses), share(x.accesses));
        if let Some(z) = same_layout::group_sizes(g, k) {
            let size = if z.min == z.max { format!("{} B", z.min) } else { format!("{}–{} B", z.min, z.max) };
            let freed = if z.freed == 0 { "none freed".to_string() } else { format!("{} freed", grouped(z.freed)) };
            let same = match alike.iter().find(|d| d.group == k as u32) {
                Some(d) => format!(" (jemalloc lays them out alike: its {}-byte class alone)", d.class),
                None => String::new(),
            };
            println!("               objects {size}, {freed}{same}");
        }
        println!("               selector: {}", selector_text(g, &x.selector));
    }
    println!("walk depth     {} frames", g.walk_depth);
    let id = &g.identification;
    if id.dropped {
        println!(
            "identification {:.1} frames walked per grouped object (estimate): above {}, so no groups were made",
            id.walk_per_object, g.params.max_walk_per_object
        );
    } else if !g.groups.is_empty() {
        println!("identification {:.1} frames walked per grouped object (estimate)", id.walk_per_object);
    }
    let wrong = select::misclassified(g);
    println!("misclassified  {} contexts", wrong.len());
    let group_name = |k: Option<u32>| k.map_or("none".to_string(), |k| format!("group {k}"));
    for w in &wrong {
        println!("  {} (context {}): selectors give {}, grouped in {}", names[w.context as usize], w.context, group_name(w.got), group_name(w.expected));
    }
}

/// The profile's contexts in no group that run-time identification serves from one all the
/// same (whole call sites; `runs_in`: `table::destinations`), with all their accesses and
/// objects (the library's `TakenIn` counts small objects, per group).
struct ServedAnyway {
    contexts: u64,
    accesses: u64,
    objects: u64,
}

fn served_anyway(g: &Groups, runs_in: &[Option<u32>]) -> ServedAnyway {
    let mut t = ServedAnyway { contexts: 0, accesses: 0, objects: 0 };
    for (c, d) in g.contexts.iter().zip(runs_in) {
        if c.group.is_none() && d.is_some() {
            t.contexts += 1;
            t.accesses += c.accesses;
            t.objects += c.objects;
        }
    }
    t
}

/// Everything about groups as JSON; `full` adds every context's frames and every edge.
pub fn describe(g: &Groups, full: bool) -> Value {
    let names = g.context_names();
    let alike = same_layout::declined(g, SizeClasses::Jemalloc);
    let p = &g.params;
    let groups: Vec<Value> = g
        .groups
        .iter()
        .enumerate()
        .map(|(k, x)| {
            json!({
                "group": k,
                "members": x.members,
                "member_names": x.members.iter().map(|&m| &names[m as usize]).collect::<Vec<_>>(),
                "weight": x.weight,
                "cold": g.is_cold(k),
                "accesses": x.accesses,
                "selector": x.selector,
                "selector_text": selector_text(g, &x.selector),
                "object_sizes": same_layout::group_sizes(g, k).map(|z| json!({"min": z.min, "max": z.max, "freed": z.freed})),
                "jemalloc_size_class_alone": alike.iter().find(|d| d.group == k as u32).map(|d| d.class),
            })
        })
        .collect();
    let runs_in = heaplab_group::table::destinations(g);
    let taken = served_anyway(g, &runs_in);
    let wrong: Vec<Value> = select::misclassified(g).iter().map(|w| json!({"context": w.context, "name": names[w.context as usize], "grouped": w.expected, "selected": w.got})).collect();
    let mut v = json!({
        "command": g.command,
        "affinity_distance": g.affinity_distance,
        "params": {
            "coverage": p.coverage, "merge_tolerance": p.merge_tolerance, "min_weight": p.min_weight,
            "max_group_members": p.max_group_members, "group_threshold": p.group_threshold,
            "max_object_size": p.max_object_size, "chunk_size": p.chunk_size, "spare_chunks": p.spare_chunks,
            "whole_call_sites": p.whole_call_sites, "absorb": p.absorb, "cold_group": p.cold_group.name(), "recursion": p.recursion.name(), "max_turnover": p.max_turnover,
            "max_walk_per_object": p.max_walk_per_object,
        },
        "identification": {"walk_per_object": g.identification.walk_per_object, "dropped": g.identification.dropped},
        "contexts": g.contexts.len(),
        "kept": g.contexts.iter().filter(|c| c.kept).count(),
        "churning": g.contexts.iter().filter(|c| c.churns).count(),
        "edges": g.edges.len(),
        "groups": groups,
        "walk_depth": g.walk_depth,
        "taken_in": {"contexts": taken.contexts, "accesses": taken.accesses, "objects": taken.objects},
        "misclassified": wrong,
    });
    if full {
        v["context_list"] = g
            .contexts
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let frames: Vec<Value> = c
                    .sites
                    .iter()
                    .map(|&s| {
                        let x = &g.sites[s as usize];
                        json!({"site": s, "function": x.function, "module": x.module, "file_offset": x.file_offset, "max_depth": x.max_depth})
                    })
                    .collect();
                json!({"context": i, "name": names[i], "kept": c.kept, "churns": c.churns, "group": c.group, "runs_in": runs_in[i], "accesses": c.accesses, "objects": c.objects, "bytes": c.bytes, "frames": frames})
            })
            .collect();
        v["edge_list"] = g.edges.iter().map(|e| json!({"a": e.a, "b": e.b, "weight": e.weight})).collect();
    }
    v
}
