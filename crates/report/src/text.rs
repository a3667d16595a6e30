//! The terminal view, in the manner of `heaptrack_print`: the summary, then the top call sites
//! by bytes live at the peak, by bytes allocated, by calls, by temporary allocations, and the
//! leaks, each named as [`crate::naming`] says and shown with its stack (a few frames, innermost
//! first); the live sites at one moment (`--at`); and the diff of two reports.

use crate::model::{DiffReport, Frame, Report, Site, SiteFigures, Snapshot};
use heaplab_model::units::{bytes, grouped};
use std::fmt::Write as _;

/// Frames shown per stack.
pub const STACK_FRAMES: usize = 6;

/// One frame as a line: `function (file:line) [module]`, or `module+0xoffset` when nothing
/// more is known.
pub fn frame_text(f: &Frame) -> String {
    let module = if f.module.is_empty() { "?".to_string() } else { f.module.clone() };
    let mut s = if f.function.is_empty() { format!("{module}+{:#x}", f.offset) } else { f.function.clone() };
    if !f.file.is_empty() {
        let _ = write!(s, " ({}:{})", short_path(&f.file), f.line);
    }
    if !f.function.is_empty() {
        let _ = write!(s, " [{module}]");
    }
    if f.inlined {
        s.push_str(" (inlined)");
    }
    s
}

/// The last two components of a path: enough to tell files apart, short enough to read.
fn short_path(p: &str) -> &str {
    let mut cut = p.len();
    for _ in 0..2 {
        match p[..cut].rfind('/') {
            Some(i) => cut = i,
            None => return p,
        }
    }
    &p[cut + 1..]
}

/// The name of a site: the frame [`crate::naming::site_frame`] picks, as a line.
pub fn site_name(frames: &[Frame], stack: &[u32]) -> String {
    match crate::naming::site_frame(frames, stack) {
        Some(f) => frame_text(f),
        None => "(unknown call site: not recorded)".into(),
    }
}

/// A stack as indented lines, at most `n` frames.
pub fn stack_lines(out: &mut String, frames: &[Frame], stack: &[u32], n: usize, indent: &str) {
    if stack.is_empty() {
        let _ = writeln!(out, "{indent}(unknown call site: not recorded)");
        return;
    }
    for &i in stack.iter().take(n) {
        let _ = writeln!(out, "{indent}at {}", frame_text(&frames[i as usize]));
    }
    if stack.len() > n {
        let _ = writeln!(out, "{indent}… {} more frames", stack.len() - n);
    }
}

fn seconds(ns: u64) -> String {
    format!("{:.3} s", ns as f64 / 1e9)
}

fn share(part: u64, whole: u64) -> String {
    if whole == 0 {
        "—".into()
    } else {
        format!("{:.1}%", part as f64 * 100.0 / whole as f64)
    }
}

/// The summary lines.
pub fn summary(out: &mut String, r: &Report) {
    let m = &r.meta;
    let s = &r.summary;
    let cmd = if m.command.is_empty() { m.executable.clone() } else { m.command.join(" ") };
    let _ = writeln!(out, "heap report    {cmd} (pid {}), {}", m.pid, m.trace);
    let _ = writeln!(out, "trace          {}; {} thread{}, stack depth {}, {}", m.ending, m.threads, if m.threads == 1 { "" } else { "s" }, m.stack_depth, seconds(m.duration_ns));
    let _ = writeln!(out, "peak heap      {} ({} B requested) at {}, {} blocks live", bytes(s.peak_bytes), grouped(s.peak_bytes), seconds(s.peak_ns), grouped(s.peak_blocks));
    if let Some(rss) = s.peak_rss {
        let _ = writeln!(out, "peak RSS       {} (kernel VmHWM: code, stacks, libraries and allocator overhead included)", bytes(rss));
    }
    let _ = writeln!(
        out,
        "calls          {} allocations ({} reallocs), {} frees; {} allocated in total",
        grouped(s.allocations),
        grouped(s.reallocs),
        grouped(s.frees),
        bytes(s.bytes_allocated)
    );
    let _ = writeln!(out, "temporary      {} allocations ({} of all) freed by their thread's next heap call", grouped(s.temporary), share(s.temporary, s.allocations));
    let _ = writeln!(out, "leaked         {} ({} B) in {} blocks live at the end", bytes(s.leaked_bytes), grouped(s.leaked_bytes), grouped(s.leaked_blocks));
    if let Some(o) = &r.oracle {
        let _ = writeln!(
            out,
            "oracle         peak {} ≥ lower bound {}; optimal plan {}{} ({} over the bound); the allocator's pages at its peak {}",
            bytes(s.peak_bytes),
            bytes(o.lower_bound),
            bytes(o.plan_bytes),
            if o.proven_optimal { ", proven optimal" } else { "" },
            share(o.plan_bytes.saturating_sub(o.lower_bound), o.lower_bound),
            bytes(o.allocator_pages_bytes)
        );
    }
}

/// The allocators replaying the trace, beside the plan and the lower bound when planned.
pub fn allocators(out: &mut String, r: &Report) {
    if r.allocators.is_empty() {
        return;
    }
    let _ = writeln!(out, "\nALLOCATORS REPLAYING THE TRACE (peak: pages touched by live blocks; fragmentation: 2-D, external)");
    let _ = writeln!(out, "  {:<16} {:>12} {:>14} {:>14}", "allocator", "peak", "fragmentation", "over the plan");
    for a in &r.allocators {
        let over = a.over_plan_pct.map(|p| format!("{p:+.1}%")).unwrap_or_else(|| "—".into());
        let _ = writeln!(out, "  {:<16} {:>12} {:>13.1}% {:>14}", a.name, bytes(a.peak_bytes), a.fragmentation_pct, over);
    }
    if let Some(o) = &r.oracle {
        let _ = writeln!(out, "  {:<16} {:>12}", if o.proven_optimal { "optimal plan" } else { "plan" }, bytes(o.plan_bytes));
        let _ = writeln!(out, "  {:<16} {:>12}", "lower bound", bytes(o.lower_bound));
    }
}

/// The top `top` sites by `key` (those where it is not 0), each with a line from `line` and its
/// stack.
fn section(out: &mut String, r: &Report, title: &str, top: usize, key: impl Fn(&Site) -> u64, line: impl Fn(&Site) -> String) {
    let mut v: Vec<&Site> = r.sites.iter().filter(|s| key(s) > 0).collect();
    if v.is_empty() {
        return;
    }
    v.sort_by_key(|s| (std::cmp::Reverse(key(s)), s.key));
    let _ = writeln!(out, "\n{title}");
    for s in v.iter().take(top) {
        let _ = writeln!(out, "  {} from {}", line(s), site_name(&r.frames, &s.stack));
        stack_lines(out, &r.frames, &s.stack, STACK_FRAMES, "      ");
    }
    if v.len() > top {
        let _ = writeln!(out, "  … {} more sites (--top N shows more)", v.len() - top);
    }
}

/// The whole terminal report with `top` sites per table.
pub fn render(r: &Report, top: usize) -> String {
    let mut out = String::new();
    summary(&mut out, r);
    allocators(&mut out, r);
    let s = &r.summary;
    section(&mut out, r, "MOST MEMORY AT THE PEAK (bytes live when the heap peaked)", top, |x| x.peak_bytes, |x| {
        format!("{} at the peak ({}), {} call{}, {} allocated, {} most live at once", bytes(x.peak_bytes), share(x.peak_bytes, s.peak_bytes), grouped(x.calls), if x.calls == 1 { "" } else { "s" }, bytes(x.bytes), bytes(x.max_live_bytes))
    });
    section(&mut out, r, "MOST BYTES ALLOCATED", top, |x| x.bytes, |x| format!("{} allocated ({}) in {} calls", bytes(x.bytes), share(x.bytes, s.bytes_allocated), grouped(x.calls)));
    section(&mut out, r, "MOST CALLS", top, |x| x.calls, |x| format!("{} calls ({}), {} allocated", grouped(x.calls), share(x.calls, s.allocations), bytes(x.bytes)));
    section(&mut out, r, "MOST TEMPORARY ALLOCATIONS (freed by the thread's next heap call)", top, |x| x.temporary, |x| {
        format!("{} temporary of {} calls ({})", grouped(x.temporary), grouped(x.calls), share(x.temporary, x.calls))
    });
    section(&mut out, r, "LEAKS (live at the end)", top, |x| x.leaked_bytes.max(x.leaked_blocks), |x| {
        format!("{} leaked ({} B) in {} blocks", bytes(x.leaked_bytes), grouped(x.leaked_bytes), grouped(x.leaked_blocks))
    });
    notes(&mut out, &r.notes);
    out
}

fn notes(out: &mut String, notes: &[String]) {
    if !notes.is_empty() {
        let _ = writeln!(out, "\nNOTES");
        for n in notes {
            let _ = writeln!(out, "  - {n}");
        }
    }
}

/// The snapshot nearest to `ns` (the peak's included).
pub fn nearest_snapshot(r: &Report, ns: u64) -> Option<&Snapshot> {
    r.snapshots.iter().min_by_key(|s| (s.ns.abs_diff(ns), s.ns))
}

/// The live sites at the snapshot nearest to `ns`: the text form of the flame graph at a
/// moment.
pub fn render_at(r: &Report, ns: u64, top: usize) -> String {
    let mut out = String::new();
    let Some(snap) = nearest_snapshot(r, ns) else {
        return "no snapshot: the trace has no heap calls\n".into();
    };
    let exact = if snap.ns == ns { String::new() } else { format!(" (the recorded moment nearest {})", seconds(ns)) };
    let _ = writeln!(out, "live at {}{exact}: {} ({} B) of which {} sites below", seconds(snap.ns), bytes(snap.live_bytes), grouped(snap.live_bytes), snap.sites.len().min(top));
    for &(i, b) in snap.sites.iter().take(top) {
        let s = &r.sites[i as usize];
        let _ = writeln!(out, "  {} ({}) live, {} calls in the whole run, from {}", bytes(b), share(b, snap.live_bytes), grouped(s.calls), site_name(&r.frames, &s.stack));
        stack_lines(&mut out, &r.frames, &s.stack, STACK_FRAMES, "      ");
    }
    let rest: u64 = snap.sites.iter().skip(top).map(|x| x.1).sum::<u64>() + snap.other_bytes;
    if rest > 0 {
        let _ = writeln!(out, "  {} in other sites", bytes(rest));
    }
    out
}

fn signed(b: i128) -> String {
    let sign = if b < 0 { "-" } else { "+" };
    format!("{sign}{}", bytes(b.unsigned_abs() as u64))
}

fn delta(a: u64, b: u64) -> i128 {
    b as i128 - a as i128
}

/// The diff's terminal view: both summaries' figures side by side, then the sites that changed
/// most.
pub fn render_diff(d: &DiffReport, top: usize) -> String {
    let mut out = String::new();
    let (a, b) = (&d.before_summary, &d.after_summary);
    let _ = writeln!(out, "heap diff      before {} → after {}", d.before.trace, d.after.trace);
    let row = |out: &mut String, name: &str, x: u64, y: u64, as_bytes: bool| {
        let f = |v: u64| if as_bytes { bytes(v) } else { grouped(v) };
        let dv = delta(x, y);
        let ds = if as_bytes { signed(dv) } else { format!("{dv:+}") };
        let _ = writeln!(out, "{name:<14} {:>12} → {:>12}  ({ds}, {})", f(x), f(y), if x == 0 { "—".into() } else { format!("{:+.1}%", dv as f64 * 100.0 / x as f64) });
    };
    row(&mut out, "peak heap", a.peak_bytes, b.peak_bytes, true);
    row(&mut out, "allocated", a.bytes_allocated, b.bytes_allocated, true);
    row(&mut out, "allocations", a.allocations, b.allocations, false);
    row(&mut out, "temporary", a.temporary, b.temporary, false);
    row(&mut out, "leaked", a.leaked_bytes, b.leaked_bytes, true);
    let changed: Vec<_> = d.sites.iter().filter(|s| s.before != s.after).collect();
    let _ = writeln!(out, "\nSITES THAT CHANGED MOST (bytes at the peak, then bytes allocated; {} of {} sites changed)", changed.len(), d.sites.len());
    for s in changed.iter().take(top) {
        let tag = match (s.before.calls, s.after.calls) {
            (0, _) => " [new]",
            (_, 0) => " [gone]",
            _ => "",
        };
        let (x, y): (&SiteFigures, &SiteFigures) = (&s.before, &s.after);
        let _ = writeln!(
            out,
            "  peak {} ({} → {}), allocated {} ({} → {}), calls {} → {}{tag}, from {}",
            signed(delta(x.peak_bytes, y.peak_bytes)),
            bytes(x.peak_bytes),
            bytes(y.peak_bytes),
            signed(delta(x.bytes, y.bytes)),
            bytes(x.bytes),
            bytes(y.bytes),
            grouped(x.calls),
            grouped(y.calls),
            site_name(&d.frames, &s.stack)
        );
        stack_lines(&mut out, &d.frames, &s.stack, STACK_FRAMES, "      ");
    }
    notes(&mut out, &d.notes);
    out
}
