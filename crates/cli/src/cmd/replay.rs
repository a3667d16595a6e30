//! `heaplab replay`: a trace's requests under a chosen allocator (`heaplab_replay`) → placed
//! jobs; arguments, the progress line, the summary and JSON.

use crate::progress::ProgressLine;
use crate::Failure;
use clap::Args;
use heaplab_model::units::{bytes, grouped};
use heaplab_replay::{Placed, ReplayOptions, ReplayStats};
use serde_json::json;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

pub const REPLAY_HELP: &str = "\
Replay a trace under an allocator and record where it puts every block.

A clean child process, with the allocator preloaded (nothing for glibc), executes the trace's
requests in their recorded order: malloc, calloc, realloc, reallocarray, posix_memalign,
aligned_alloc, memalign, valloc and pvalloc with their sizes and alignments, and free. Each
traced thread is replayed on its own thread, in the trace's global order. The child allocates
nothing through the allocator under test itself; requests and answers travel through a ring in
shared memory. For each block it reports the address, malloc_usable_size and the memory mapping
(from /proc/self/maps) that holds it. Address-space randomisation is off in the child, so the
same trace under the same allocator gives the same addresses.

ALLOCATOR is glibc, jemalloc, mimalloc or tcmalloc (the Debian packages libjemalloc2,
libmimalloc2.0, libtcmalloc-minimal4), or the path of any shared library that defines malloc.
A name heaplab does not know, a missing or non-loadable library, or one that does not provide
malloc is a usage error (exit 2).

Skipped (and counted): allocations that failed in the trace, frees of pointers the trace never
saw allocated. Allocations that succeeded in the trace but fail in the replay (out of memory,
e.g. under `ulimit -v`) get no job and are counted with a warning; a failed realloc keeps its
input block live, as C does, so the input's job lasts until the trace releases the block. Every
placed file written is checked to be a valid placement. Time is the trace's allocated-bytes
clock (`heaplab convert --clock bytes`).

OUTPUT: .csv writes the CSV export (job,mapping,map_start,start,end,requested,usable,address);
any other name the compact binary placed format (about 8-12 bytes per job; spec in
crates/replay/src/placed.rs). `heaplab convert X.hlplaced -o X.csv` converts later.

Examples:
  heaplab replay run.hltrace --allocator jemalloc -o run.jemalloc.hlplaced
  heaplab replay run.hltrace --allocator /opt/lib/libsnmalloc.so -o run.sn.hlplaced --json";

/// Arguments of `heaplab replay`.
#[derive(Args)]
pub struct ReplayArgs {
    /// A trace written by `heaplab trace`, or a run's index (.hlrun: the process with the most
    /// events, or the one --process names).
    input: String,
    /// For a run index: the process to replay (a pid, or a program name such as python3).
    #[arg(long, value_name = "PID|NAME")]
    process: Option<String>,
    /// glibc, jemalloc, mimalloc, tcmalloc, or a path to a shared library.
    #[arg(short, long, value_name = "ALLOCATOR")]
    allocator: String,
    /// The placed file to write (.csv for CSV, anything else binary).
    #[arg(short, long, value_name = "FILE")]
    output: String,
    /// Print the summary as JSON.
    #[arg(long)]
    json: bool,
    /// Replay the usable part of a damaged (truncated) trace instead of failing.
    #[arg(long)]
    allow_truncated: bool,
}

/// Replays `trace` under `alloc` with a progress line.
pub fn replay_with_progress(trace: &str, alloc: &heaplab_replay::Allocator, allow_truncated: bool) -> Result<(Placed, ReplayStats), Failure> {
    let counter = Arc::new(AtomicU64::new(0));
    let (c, name, an) = (counter.clone(), trace.to_string(), alloc.name.clone());
    let _line = ProgressLine::start(move |el| format!("replaying {name} under {an}: {} events, {:.1} s", grouped(c.load(Ordering::Relaxed)), el.as_secs_f64()));
    let opts = ReplayOptions { allow_truncated, ..Default::default() };
    Ok(heaplab_replay::replay_file(trace, alloc, &opts, Some(&counter))?)
}

/// The trace file to replay for `input`: a run index (.hlrun) names it (its process with the
/// most events, or the one `process` names). Only a regular file is looked into: the replay
/// reads its trace twice, so a pipe is refused by the replay itself.
pub fn trace_file(input: &str, process: Option<&str>) -> Result<String, Failure> {
    if std::fs::metadata(input).is_ok_and(|m| m.is_file()) {
        let (t, _) = crate::trace_input::select_trace(heaplab_model::Input::open(input)?, process)?;
        Ok(t.name().to_string())
    } else {
        Ok(input.to_string())
    }
}

/// `heaplab replay`.
pub fn replay(a: ReplayArgs) -> Result<(), Failure> {
    crate::outputs::check_outputs(&[&a.output], &[&a.input])?;
    let alloc = heaplab_replay::resolve(&a.allocator)?;
    let trace = trace_file(&a.input, a.process.as_deref())?;
    let (p, st) = replay_with_progress(&trace, &alloc, a.allow_truncated)?;
    heaplab_replay::placed::write(&a.output, &p).map_err(|e| crate::outputs::cannot_write(&a.output, e))?;
    if st.failed_in_replay > 0 {
        // The file is valid, but it places a different request sequence than the trace's.
        eprintln!(
            "heaplab: warning: {} allocation{} that succeeded in the trace failed under {} (out of memory? check `ulimit -v`): left out of the placement, where a failed realloc's input block stays live",
            grouped(st.failed_in_replay),
            if st.failed_in_replay == 1 { "" } else { "s" },
            alloc.name
        );
    }
    let size = std::fs::metadata(&a.output).map(|m| m.len()).unwrap_or(0);
    let per_job = if p.jobs.is_empty() { 0.0 } else { size as f64 / p.jobs.len() as f64 };
    let rate = if st.seconds > 0.0 { st.requests as f64 / st.seconds } else { 0.0 };
    if a.json {
        let v = json!({
            "trace": a.input,
            "allocator": alloc.name,
            "library": alloc.library.as_ref().map(|l| l.display().to_string()),
            "malloc_from": p.meta.provider,
            "requests": st.requests,
            "requests_per_second": rate,
            "seconds": st.seconds,
            "threads": st.threads,
            "jobs": st.jobs,
            "mappings": p.mappings.len(),
            "maps_rereads": st.maps_rereads,
            "unmatched_frees": st.unmatched_frees,
            "failed_in_trace": st.failed_in_trace,
            "failed_in_replay": st.failed_in_replay,
            "end_time": p.meta.end_time,
            "output": a.output,
            "output_bytes": size,
            "bytes_per_job": per_job,
        });
        println!("{}", serde_json::to_string_pretty(&v).expect("JSON of plain values"));
    } else {
        println!("trace          {}", a.input);
        println!("allocator      {} (malloc from {})", alloc.name, p.meta.provider);
        println!("requests       {} in {:.3} s ({:.2}M requests/s), {} thread{}", grouped(st.requests), st.seconds, rate / 1e6, st.threads, if st.threads == 1 { "" } else { "s" });
        let m = p.mappings.len();
        println!("jobs           {} in {m} mapping{} ({} reads of /proc/self/maps)", grouped(st.jobs), if m == 1 { "" } else { "s" }, st.maps_rereads);
        println!(
            "skipped        {} frees of unknown pointers, {} allocations that failed in the trace, {} that failed in the replay",
            grouped(st.unmatched_frees),
            grouped(st.failed_in_trace),
            grouped(st.failed_in_replay)
        );
        println!("placed         {} ({}, {per_job:.2} bytes/job)", a.output, bytes(size));
        println!("next           heaplab frag {}", a.output);
    }
    Ok(())
}
