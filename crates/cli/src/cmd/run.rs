//! `heaplab run`: run a program with a layout applied (`heaplab_apply::run`) or grouped
//! (`heaplab_group::run`), pass its output and exit status through, then tell how it fared
//! (stderr) and write the report.

use crate::Failure;
use clap::Args;
use heaplab_model::files;
use serde_json::Value;
use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;

pub const RUN_HELP: &str = "\
Run PROGRAM with a layout (--layout, a .hllayout from `heaplab layout`) or with groups (--groups,
a .hlgroups from `heaplab group`) applied. Exactly one of the two is given.

With --layout, the heaplab runtime library is preloaded, reserves the layout's region once,
recognises each heap allocation the program makes (by its global ordinal, or with a layout made
with contexts by its call site and its ordinal there, and always by its exact size) and serves
the planned ones at their offsets in the region. Everything else goes to the fallback allocator
(glibc by default): allocations the layout did not plan or does not know, size mismatches (a
different input), and planned slots still in use (the program's lifetimes differ from the
profile's). Nothing is ever placed over a live block.

With --groups, the grouped allocator is preloaded (HALO's, without binary rewriting): at each
allocation of at most the groups' max object size it walks the call stack, checks the groups'
selectors (the few call sites that tell a group's contexts apart) in order, and serves the first
group that matches by bump allocation from that group's own 1 MiB chunks, so objects used
together lie together. Everything else goes to the fallback allocator (jemalloc by default, as in
HALO): larger objects, aligned requests above 16 bytes, and contexts no selector matches.
A groups file without groups (`heaplab group` found none worth their stack walks) has nothing
to apply: the program then runs on the fallback alone, the grouped allocator not loaded. So
does a file whose every group jemalloc, the fallback, would lay out object for object as the
group does (all its objects in one of jemalloc's size classes and exactly that size, nothing
else the profile allocated in that class, nothing freed): grouping would change no line the
program touches and only add the runtime's cost. The summary says so, and --all-groups applies
the groups anyway.
As in HALO, a chunk's space comes back only when every object in it is dead; --reuse-freed also
serves new objects of a group from its freed ones of the same size class (less memory where a
few long-lived objects pin chunks, but more D1 misses where programs free: docs/group.md).
A grouped object is 16-byte aligned when its size, rounded up to 8, is a multiple of 16 and
8-byte aligned otherwise, so 24-byte objects pack densely as in HALO (GCC assumes 8 of malloc on x86-64);
--align-16 aligns every object above 8 bytes to 16, as glibc and jemalloc do, for programs that
keep 16-aligned values in odd-sized blocks. --huge-pages backs the grouped heap with transparent
huge pages beyond its first 2 MiB.

The layout or groups file is read and checked completely before the program starts: a damaged
or invalid file is an error (exit status 2) and the program does not run.

The program's standard input, output and error are its own, and heaplab exits with the program's
exit status (128 + N when signal N killed it), so `heaplab run --layout x.hllayout -- xz -c in >
in.xz` gives the same archive as `xz -c in > in.xz`. After the program ends, heaplab tells on
standard error, in one paragraph, how it fared (--quiet: nothing; --json: the report as JSON).
--report writes the report as JSON: with a layout, the runtime's counts (allocations, planned,
fallback by reason, first_mismatch, match_rate, frees_region, peak_rss_bytes); with groups,
allocations, grouped (count, bytes, per group), fallback by reason (too_big, aligned, ungrouped,
exhausted), identification (stack walks, frames), chunks (fresh, reused, returned), the grouped
heap's fragmentation at its peak footprint, the settings applied (alignment, free_lists,
huge_pages: off, on or refused by the kernel), declined_groups (the groups left to jemalloc,
with their size class) and peak_rss_bytes (allocator_loaded false and the counts null when no
group was applied); both with the run's (wall_seconds, exit_status,
command).

The layout or groups apply to the process heaplab starts, from its first allocation: give the
program itself, not a shell script around it. A fork child of it keeps its copy of the region
(layouts: it places nothing new there) or goes on grouping (groups); programs started by exec
run on the fallback allocator alone.

Examples:
  heaplab trace -o small.hltrace -- ./prog small-input
  heaplab layout small.hltrace --strategy plan -o prog.hllayout
  heaplab run --layout prog.hllayout -- ./prog small-input
  heaplab run --layout prog.hllayout --fallback jemalloc --report run.json -- ./prog large-input

  heaplab access --contexts -o prof.hlaccess -- ./prog small-input
  heaplab group prof.hlaccess -o prog.hlgroups
  heaplab run --groups prog.hlgroups --report grouped.json -- ./prog large-input";

/// Arguments of `heaplab run`.
#[derive(Args)]
pub struct RunArgs {
    /// The layout to apply (.hllayout).
    #[arg(long, value_name = "FILE", required_unless_present = "groups", conflicts_with = "groups")]
    layout: Option<String>,
    /// The groups to apply (.hlgroups).
    #[arg(long, value_name = "FILE")]
    groups: Option<String>,
    /// With --groups: reuse freed objects within their group (per-group free lists by size class,
    /// taken before bumping) instead of waiting for a whole chunk to empty, as HALO does.
    #[arg(long)]
    reuse_freed: bool,
    /// With --groups: align every grouped object of more than 8 bytes to 16 bytes, as glibc and
    /// jemalloc do [default: 16 for sizes that round (to 8) to a multiple of 16, 8 otherwise,
    /// as HALO packs; always 16 with --reuse-freed].
    #[arg(long = "align-16")]
    align_16: bool,
    /// With --groups: ask for transparent huge pages for the grouped heap beyond its first 2 MiB
    /// (fewer TLB misses where a dense heap is walked; more resident memory, and page faults
    /// that compact memory now and then cost more than they win: docs/group.md).
    #[arg(long)]
    huge_pages: bool,
    /// With --groups: apply the groups even when jemalloc, the fallback, would lay out every one
    /// of them as the group does [default: the program then runs on jemalloc alone: each group's
    /// objects take one of its size classes, exactly that class's size, with nothing else the
    /// profile allocated in that class and nothing freed].
    #[arg(long)]
    all_groups: bool,
    /// The allocator everything unplanned or ungrouped goes to: glibc, jemalloc, mimalloc,
    /// tcmalloc, or a path to a shared library that defines malloc [default: glibc with
    /// --layout, jemalloc with --groups].
    #[arg(long, value_name = "ALLOCATOR")]
    fallback: Option<String>,
    /// Write the report (JSON) to this file.
    #[arg(long, value_name = "FILE")]
    report: Option<String>,
    /// Say nothing on standard error (the program's own output still goes there).
    #[arg(long, conflicts_with = "json")]
    quiet: bool,
    /// Tell the report as JSON on standard error instead of the paragraph.
    #[arg(long)]
    json: bool,
    /// The program and its arguments (put them after `--`).
    #[arg(required = true, trailing_var_arg = true, allow_hyphen_values = true, value_name = "PROGRAM")]
    command: Vec<String>,
}

fn failure(class: heaplab_model::ErrorClass, m: String) -> Failure {
    match class {
        heaplab_model::ErrorClass::BadInput => Failure::Input(m),
        _ => Failure::Work(m),
    }
}

/// `heaplab run`. Returns only on errors before the program ran; otherwise it exits with the
/// program's status.
pub fn run(a: RunArgs) -> Result<(), Failure> {
    for (given, flag) in [(a.reuse_freed, "--reuse-freed"), (a.align_16, "--align-16"), (a.huge_pages, "--huge-pages"), (a.all_groups, "--all-groups")] {
        if given && a.groups.is_none() {
            return Err(Failure::Input(format!("{flag} applies to the grouped allocator: give --groups")));
        }
    }
    if let Some(r) = &a.report {
        crate::outputs::check_writable(r)?;
    }
    let default_fallback = if a.groups.is_some() { "jemalloc" } else { "glibc" };
    let fallback = heaplab_replay::allocators::resolve(a.fallback.as_deref().unwrap_or(default_fallback)).map_err(|e| Failure::Input(format!("--fallback: {e}")))?;
    let opts = heaplab_trace::launch::RuntimeOptions { fallback: fallback.library.clone(), fallback_name: fallback.name.clone() };
    // (report as JSON, summary paragraph) or why there is none; and how the program ended.
    let (told, status): (Result<(Value, String), String>, ExitStatus) = if let Some(groups_file) = &a.groups {
        use heaplab_group::run::run as run_grouped;
        // `run` checks what the runtime can apply before the program starts.
        let groups = heaplab_group::format::read(groups_file).map_err(|e| Failure::Input(e.to_string()))?;
        // The flags alone decide: a variable left in the user's environment does not.
        let settings = [(a.reuse_freed, "HEAPLAB_GROUP_REUSE"), (a.align_16, "HEAPLAB_GROUP_ALIGN16"), (a.huge_pages, "HEAPLAB_GROUP_HUGEPAGES")];
        let done = run_grouped(&groups, groups_file, &a.command, &opts, a.all_groups, |c| {
            settings.iter().fold(c, |c, &(on, var)| if on { c.env(var, "1") } else { c.env_remove(var) })
        })
        .map_err(|e| failure(e.class(), e.to_string()))?;
        // A file without groups is valid (grouping found none worth making; the program then
        // runs on the fallback alone, which the summary says): say why, where the file knows.
        let id = &groups.identification;
        let note = if groups.groups.is_empty() && id.dropped {
            format!(
                " `heaplab group` made none, as identifying them would walk about {:.0} stack frames per grouped object (its --max-walk-per-object is {}).",
                id.walk_per_object, groups.params.max_walk_per_object
            )
        } else {
            String::new()
        };
        (done.report.map(|r| (r.to_json(), r.summary() + &note)).ok_or(done.no_report.unwrap_or_default()), done.status)
    } else {
        use heaplab_apply::run::run as run_with_layout;
        let layout = a.layout.as_deref().expect("clap requires --layout or --groups");
        let done = run_with_layout(layout, &a.command, &opts, |c| c).map_err(|e| failure(e.class(), e.to_string()))?;
        (done.report.map(|r| (r.to_json(), r.summary())).ok_or(done.no_report.unwrap_or_default()), done.status)
    };
    match told {
        Ok((json, summary)) => {
            let text = serde_json::to_string_pretty(&json).expect("JSON of plain values");
            if let Some(path) = &a.report {
                files::write_atomic(path, |w| w.write_all(format!("{text}\n").as_bytes())).map_err(|e| Failure::Work(format!("{path}: cannot write the report: {e}")))?;
            }
            if a.json {
                eprintln!("{text}");
            } else if !a.quiet {
                eprintln!("{summary}");
            }
        }
        Err(why) => {
            if !a.quiet {
                eprintln!("heaplab run: no report: {}", if why.is_empty() { "the runtime wrote none" } else { &why });
            }
        }
    }
    let code = match (status.code(), status.signal()) {
        (Some(c), _) => c,
        (None, Some(sig)) => 128 + sig,
        _ => 1,
    };
    std::process::exit(code)
}
