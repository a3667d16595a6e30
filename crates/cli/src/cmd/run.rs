//! `heaplab run`: run a program with a layout applied (`heaplab_apply::run`), pass its output and
//! exit status through, then tell how the layout fared (stderr) and write the report.

use crate::Failure;
use clap::Args;
use heaplab_apply::run::{run as run_with_layout, RunOptions};
use heaplab_model::files;
use std::os::unix::process::ExitStatusExt;

pub const RUN_HELP: &str = "\
Run PROGRAM with a layout (.hllayout, from `heaplab layout`) applied: the heaplab runtime library
is preloaded, reserves the layout's region once, recognises each heap allocation the program
makes (by its global ordinal, or with a layout made with contexts by its call site and its
ordinal there, and always by its exact size) and serves the planned ones at their offsets in the
region. Everything else goes to the fallback allocator: allocations the layout did not plan or
does not know, size mismatches (a different input), and planned slots still in use (the program's
lifetimes differ from the profile's). Nothing is ever placed over a live block.

The layout is read and checked completely before the program starts: a damaged or invalid file
is an error (exit status 2) and the program does not run.

The program's standard input, output and error are its own, and heaplab exits with the program's
exit status (128 + N when signal N killed it), so `heaplab run --layout x.hllayout -- xz -c in >
in.xz` gives the same archive as `xz -c in > in.xz`. After the program ends, heaplab tells on
standard error, in one paragraph, how many allocations were served from the region, what fell
back and why, the first mismatch, the region and the peak RSS (--quiet: nothing; --json: the
report as JSON). --report writes the report as JSON: the runtime's counts (allocations, planned,
fallback by reason, first_mismatch, match_rate, frees_region, peak_rss_bytes) and the run's
(wall_seconds, exit_status, command).

The layout applies to the process heaplab starts, from its first allocation: give the program
itself, not a shell script around it. A fork child keeps its copy of the region and of the
blocks in it, but places nothing new there; programs started by exec run on the fallback
allocator alone.

Examples:
  heaplab trace -o small.hltrace -- ./prog small-input
  heaplab layout small.hltrace --strategy plan -o prog.hllayout
  heaplab run --layout prog.hllayout -- ./prog small-input
  heaplab run --layout prog.hllayout --fallback jemalloc --report run.json -- ./prog large-input";

/// Arguments of `heaplab run`.
#[derive(Args)]
pub struct RunArgs {
    /// The layout to apply (.hllayout).
    #[arg(long, value_name = "FILE")]
    layout: String,
    /// The allocator everything unplanned goes to: glibc, jemalloc, mimalloc, tcmalloc, or a
    /// path to a shared library that defines malloc.
    #[arg(long, default_value = "glibc", value_name = "ALLOCATOR")]
    fallback: String,
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

/// `heaplab run`. Returns only on errors before the program ran; otherwise it exits with the
/// program's status.
pub fn run(a: RunArgs) -> Result<(), Failure> {
    if let Some(r) = &a.report {
        crate::outputs::check_writable(r)?;
    }
    let fallback = heaplab_replay::allocators::resolve(&a.fallback).map_err(|e| Failure::Input(format!("--fallback: {e}")))?;
    let opts = RunOptions { fallback: fallback.library.clone(), fallback_name: fallback.name.clone() };
    let applied = run_with_layout(&a.layout, &a.command, &opts, |c| c).map_err(|e| match e.class() {
        heaplab_model::ErrorClass::BadInput => Failure::Input(e.to_string()),
        _ => Failure::Work(e.to_string()),
    })?;
    match &applied.report {
        Some(r) => {
            if let Some(path) = &a.report {
                let text = serde_json::to_string_pretty(&r.to_json()).expect("JSON of plain values") + "\n";
                files::write_atomic(path, |w| w.write_all(text.as_bytes())).map_err(|e| Failure::Work(format!("{path}: cannot write the report: {e}")))?;
            }
            if a.json {
                eprintln!("{}", serde_json::to_string_pretty(&r.to_json()).expect("JSON of plain values"));
            } else if !a.quiet {
                eprintln!("{}", r.summary());
            }
        }
        None => {
            if !a.quiet {
                eprintln!("heaplab run: no report: {}", applied.no_report.as_deref().unwrap_or("the runtime wrote none"));
            }
        }
    }
    let code = match (applied.status.code(), applied.status.signal()) {
        (Some(c), _) => c,
        (None, Some(sig)) => 128 + sig,
        _ => 1,
    };
    std::process::exit(code)
}
