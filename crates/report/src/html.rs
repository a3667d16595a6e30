//! The report as one self-contained HTML page: summary cards and the oracle gap, the heap over
//! time, a flame graph (icicle) of live bytes, top-site tables with expandable stacks, leaks,
//! size and lifetime histograms, the allocators beside the plan, and notes; and the diff of two
//! reports as a page of its own.
//!
//! Everything a reader needs is drawn here, server-side (SVG charts, tables, `<details>`
//! stacks), so the page reads without JavaScript; the embedded script only adds interaction
//! (sorting, tabs, picking the flame graph's moment on the timeline, zoom, hover). The page
//! loads nothing: CSS and script are inlined, and the data the script needs is embedded as JSON.
//! Its size is bounded whatever the trace: tables show the top [`TABLE_ROWS`] sites and say how
//! many more there are, and the flame graph's data is capped per moment.

mod charts;
mod flame;
#[cfg(test)]
mod tests;

use crate::model::{DiffReport, Frame, Meta, Report, Site, SiteFigures, Summary};
use crate::naming::{is_plumbing, site_frame};
use heaplab_model::units::{bytes, grouped as count};
use std::fmt::Write;

/// Rows each site table shows at most (the JSON report has every site).
pub const TABLE_ROWS: usize = 100;

const CSS: &str = include_str!("../assets/report.css");
const JS: &str = include_str!("../assets/report.js");
/// Runs first, so that an error anywhere in the page's script is shown on the page (and seen
/// by the browser test) instead of failing silently.
const CATCH_JS: &str = include_str!("../assets/catch.js");

/// The HTML page of one report.
pub fn render_report(r: &Report) -> String {
    let title = format!("heaplab report: {}", program_name(&r.meta));
    let mut o = String::with_capacity(256 * 1024);
    head(&mut o, &title);
    let _ = write!(o, "<header><h1>{}</h1>{}</header><main>", esc(&title), meta_line(&r.meta));
    if !r.meta.complete {
        let _ = write!(
            o,
            "<p class=\"warn\">The trace is incomplete ({}): figures cover what was recorded.</p>",
            esc(&r.meta.ending)
        );
    }
    summary_section(&mut o, r);
    let flame = flame::Flame::new(r);
    timeline_section(&mut o, r, &flame);
    flame_section(&mut o, r, &flame);
    sites_section(&mut o, r);
    histogram_section(&mut o, r);
    allocators_section(&mut o, r);
    notes_section(&mut o, &r.notes);
    o.push_str("</main>");
    data_script(&mut o, &flame.data(r));
    tail(&mut o);
    o
}

/// The HTML page of a diff of two reports.
pub fn render_diff(d: &DiffReport) -> String {
    let title =
        format!("heaplab diff: {} → {}", program_name(&d.before), program_name(&d.after));
    let mut o = String::with_capacity(128 * 1024);
    head(&mut o, &title);
    let _ = write!(
        o,
        "<header><h1>{}</h1><p class=\"meta\"><span class=\"tag before\">before</span> {}</p>\
         <p class=\"meta\"><span class=\"tag after\">after</span> {}</p></header><main>",
        esc(&title),
        meta_text(&d.before),
        meta_text(&d.after)
    );
    diff_summary_section(&mut o, &d.before_summary, &d.after_summary);
    let tmax = [&d.before_timeline, &d.after_timeline]
        .iter()
        .flat_map(|t| t.last().map(|p| p.ns))
        .chain([d.before.duration_ns, d.after.duration_ns])
        .max()
        .unwrap_or(0);
    let _ = write!(
        o,
        "<section id=\"timeline\"><h2>Heap over time</h2>\
         <p class=\"legend\"><span class=\"key before\"></span>before \
         <span class=\"key after\"></span>after</p>{}</section>",
        charts::timeline(
            &[("before", &d.before_timeline), ("after", &d.after_timeline)],
            tmax,
            None,
            &[]
        )
    );
    diff_sites_section(&mut o, d);
    notes_section(&mut o, &d.notes);
    o.push_str("</main>");
    data_script(&mut o, &serde_json::json!({ "kind": "diff" }));
    tail(&mut o);
    o
}

fn head(o: &mut String, title: &str) {
    let _ = write!(
        o,
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <meta name=\"color-scheme\" content=\"light dark\"><title>{}</title>\
         <style>{CSS}</style></head><body>\
         <pre id=\"js-errors\" hidden></pre><script>{CATCH_JS}</script>",
        esc(title)
    );
}

fn tail(o: &mut String) {
    let _ = write!(
        o,
        "<footer>Made by heaplab. Figures are requested bytes unless said otherwise.</footer>\
         <pre id=\"selftest\" hidden></pre><script>{JS}</script></body></html>"
    );
    o.push('\n');
}

/// The data the script reads, as JSON inside `<script type="application/json">`: every `<`,
/// `>` and `&` is written as a `\u` escape (valid only inside JSON strings, where they can
/// occur), so no name can close the element or open a comment.
fn data_script(o: &mut String, v: &serde_json::Value) {
    let text = serde_json::to_string(v).unwrap_or_else(|_| "{}".into());
    o.push_str("<script type=\"application/json\" id=\"report-data\">");
    for c in text.chars() {
        match c {
            '<' => o.push_str("\\u003c"),
            '>' => o.push_str("\\u003e"),
            '&' => o.push_str("\\u0026"),
            '\u{2028}' => o.push_str("\\u2028"),
            '\u{2029}' => o.push_str("\\u2029"),
            c => o.push(c),
        }
    }
    o.push_str("</script>");
}

// ---- summary ----

fn summary_section(o: &mut String, r: &Report) {
    let s = &r.summary;
    o.push_str("<section id=\"summary\"><h2>Summary</h2><div class=\"cards\">");
    card(
        o,
        "Peak heap",
        &bytes(s.peak_bytes),
        &format!("at {} of {}, {} blocks live", dur(s.peak_ns), dur(r.meta.duration_ns), count(s.peak_blocks)),
    );
    match s.peak_rss {
        Some(rss) => card(o, "Peak RSS", &bytes(rss), "resident set (VmHWM): heap, code, stacks, allocator overhead"),
        None => card(o, "Peak RSS", "–", "not recorded (no trailer)"),
    }
    card(
        o,
        "Calls",
        &count(s.allocations),
        &format!("allocations; {} frees, {} reallocs, {} allocated", count(s.frees), count(s.reallocs), bytes(s.bytes_allocated)),
    );
    card(
        o,
        "Temporaries",
        &count(s.temporary),
        &format!("{} of allocations freed by the next heap call", pct(s.temporary, s.allocations)),
    );
    card(
        o,
        "Leaked",
        &bytes(s.leaked_bytes),
        &format!("{} blocks still live at the end", count(s.leaked_blocks)),
    );
    if let Some(or) = &r.oracle {
        card(
            o,
            "Optimal plan",
            &bytes(or.plan_bytes),
            &format!(
                "{}; lower bound {}",
                if or.proven_optimal { "proven optimal".to_string() } else { format!("{} over the lower bound", pct_over(or.plan_bytes, or.lower_bound)) },
                bytes(or.lower_bound)
            ),
        );
    }
    o.push_str("</div>");
    if let Some(or) = &r.oracle {
        oracle_gap(o, or);
    }
    o.push_str("</section>");
}

fn card(o: &mut String, title: &str, big: &str, small: &str) {
    let _ = write!(
        o,
        "<div class=\"card\"><h3>{}</h3><div class=\"big\">{}</div><p>{}</p></div>",
        esc(title),
        esc(big),
        esc(small)
    );
}

/// The allocator's peak beside the plan and the lower bound, drawn as three bars, with a
/// sentence saying what the gap means.
fn oracle_gap(o: &mut String, or: &crate::model::Oracle) {
    let real = or.allocator_pages_bytes;
    let top = real.max(or.plan_bytes).max(or.lower_bound).max(1);
    o.push_str("<div id=\"oracle\" class=\"gap\">");
    for (label, v, class) in [
        ("allocator's pages", real, "real"),
        ("optimal plan", or.plan_bytes, "plan"),
        ("lower bound", or.lower_bound, "bound"),
    ] {
        let _ = write!(
            o,
            "<div class=\"gaprow\"><span>{label}</span><span><span class=\"bar {class}\" style=\"width:{:.1}%\"></span><b>{}</b></span></div>",
            v as f64 * 70.0 / top as f64,
            bytes(v)
        );
    }
    let plan = if or.proven_optimal {
        "a proven optimal layout".to_string()
    } else {
        format!("the best layout found in {:.1} s, {} over the lower bound", or.plan_seconds, pct_over(or.plan_bytes, or.lower_bound))
    };
    let _ = write!(
        o,
        "<p>Knowing the whole trace in advance, {plan} packs every block into {}. The allocator's \
         pages touched by live blocks peaked at {} ({} over that plan): what its layout choices \
         cost this program. No layout needs less than the lower bound, {} (the peak of live \
         bytes).</p></div>",
        bytes(or.plan_bytes),
        bytes(real),
        pct_over(real, or.plan_bytes),
        bytes(or.lower_bound)
    );
}

// ---- timeline and flame graph ----

fn timeline_section(o: &mut String, r: &Report, flame: &flame::Flame) {
    let tmax = r.timeline.last().map_or(0, |p| p.ns).max(r.meta.duration_ns);
    let peak = (!r.timeline.is_empty()).then_some((r.summary.peak_ns, r.summary.peak_bytes));
    let _ = write!(
        o,
        "<section id=\"timeline\"><h2>Heap over time</h2><p class=\"hint\">Live requested bytes. \
         The ticks under the axis are the moments the flame graph can show{}.</p>{}</section>",
        if flame.moments().is_empty() { "" } else { "<span class=\"js-only\">: click the chart to pick one</span>" },
        charts::timeline(&[("live", &r.timeline)], tmax, peak, flame.moments())
    );
}

fn flame_section(o: &mut String, r: &Report, flame: &flame::Flame) {
    o.push_str("<section id=\"flame\"><h2>Live bytes by call stack</h2>");
    match flame.moments().first() {
        None => o.push_str("<p>No snapshot of live bytes in this report.</p>"),
        Some(&ns) => {
            let live = r.snapshots.first().map_or(0, |s| s.live_bytes);
            let _ = write!(
                o,
                "<div class=\"flamebar\"><button type=\"button\" id=\"flame-prev\" hidden>◀ earlier</button>\
                 <span id=\"flame-caption\">At the peak ({}): {} live.</span>\
                 <button type=\"button\" id=\"flame-next\" hidden>later ▶</button>\
                 <button type=\"button\" id=\"flame-reset\" hidden>zoom out</button></div>\
                 <p class=\"hint\">Outermost frame at the top; each box's width is the bytes live \
                 under that call path. Hover for bytes<span class=\"js-only\">, click to zoom</span>.</p>\
                 <div id=\"flame-graph\">{}</div><p id=\"flame-info\" class=\"hint\">&nbsp;</p>{}",
                dur(ns),
                bytes(live),
                flame.svg(0),
                cut_stacks_note(r)
            );
        }
    }
    o.push_str("</section>");
}

/// A note when stacks at the peak were cut at the recorded depth: their paths start below the
/// program's entry, so one call path can show under several top boxes.
fn cut_stacks_note(r: &Report) -> String {
    const ENTRIES: [&str; 7] = ["_start", "__libc_start_main", "__libc_start_call_main", "__libc_start_main_impl", "start_thread", "clone", "clone3"];
    let depth = r.meta.stack_depth as usize;
    let Some(peak) = r.snapshots.first() else { return String::new() };
    let cut = |site: u32| {
        r.sites.get(site as usize).is_some_and(|s| {
            s.stack.len() >= depth
                && s.stack.last().and_then(|&i| r.frames.get(i as usize)).is_some_and(|f| !ENTRIES.contains(&f.function.as_str()))
        })
    };
    let n = peak.sites.iter().filter(|(site, _)| cut(*site)).count();
    if depth == 0 || n == 0 {
        return String::new();
    }
    format!(
        "<p class=\"hint\">{} of the {} sites live here have stacks cut at {depth} frames: their \
         paths start below the program's entry, so one call path can show under several top \
         boxes. Trace with a larger <code>--stack-depth</code> to see whole paths.</p>",
        count(n as u64),
        count(peak.sites.len() as u64)
    )
}

// ---- site tables ----

/// A column of a site table: its heading, its value and how it is shown.
#[derive(Clone, Copy)]
enum Col {
    Peak,
    MaxLive,
    Bytes,
    Calls,
    Temporary,
    LeakedBytes,
    LeakedBlocks,
}

impl Col {
    fn heading(self) -> &'static str {
        match self {
            Col::Peak => "At peak",
            Col::MaxLive => "Max live",
            Col::Bytes => "Allocated",
            Col::Calls => "Calls",
            Col::Temporary => "Temporary",
            Col::LeakedBytes => "Leaked",
            Col::LeakedBlocks => "Leaked blocks",
        }
    }

    fn value(self, s: &Site) -> u64 {
        match self {
            Col::Peak => s.peak_bytes,
            Col::MaxLive => s.max_live_bytes,
            Col::Bytes => s.bytes,
            Col::Calls => s.calls,
            Col::Temporary => s.temporary,
            Col::LeakedBytes => s.leaked_bytes,
            Col::LeakedBlocks => s.leaked_blocks,
        }
    }

    fn is_bytes(self) -> bool {
        matches!(self, Col::Peak | Col::MaxLive | Col::Bytes | Col::LeakedBytes)
    }
}

const SITE_COLS: [Col; 6] = [Col::Peak, Col::MaxLive, Col::Bytes, Col::Calls, Col::Temporary, Col::LeakedBytes];

fn sites_section(o: &mut String, r: &Report) {
    let mut stacks = StackRefs::default();
    o.push_str(
        "<section id=\"sites\"><h2>Top call sites</h2><p class=\"hint\">A site is a distinct \
         call stack. Each row names its innermost named frame in the program (allocator, C \
         library and allocation wrappers such as xmalloc passed over when their caller is known); open it for the whole stack.<span class=\"js-only\"> Click a heading to sort.</span></p><div class=\"tabs\">",
    );
    let tables: [(&str, &str, Col, &str); 4] = [
        ("by-peak", "By bytes at the peak", Col::Peak, "of the peak"),
        ("by-bytes", "By bytes allocated", Col::Bytes, "of all bytes allocated"),
        ("by-calls", "By calls", Col::Calls, "of all calls"),
        ("by-temporary", "By temporaries", Col::Temporary, "of all temporaries"),
    ];
    for (id, title, col, share) in tables {
        let total = match col {
            Col::Peak => r.summary.peak_bytes,
            Col::Bytes => r.summary.bytes_allocated,
            Col::Calls => r.summary.allocations,
            _ => r.summary.temporary,
        };
        site_table(o, r, &mut stacks, id, title, col, &SITE_COLS, (total, share));
    }
    o.push_str("</div></section><section id=\"leaks\"><h2>Leaks by site</h2>");
    if r.summary.leaked_blocks == 0 && r.sites.iter().all(|s| s.leaked_blocks == 0) {
        o.push_str("<p>Every block was freed before the trace ended.</p>");
    } else {
        site_table(
            o,
            r,
            &mut stacks,
            "leak-table",
            "",
            Col::LeakedBytes,
            &[Col::LeakedBytes, Col::LeakedBlocks, Col::Bytes, Col::Calls],
            (r.summary.leaked_bytes, "of leaked bytes"),
        );
    }
    o.push_str("</section>");
}

/// Which sites' stacks the page already holds: each stack is written once, and later rows
/// link to it (the script copies it into them when opened).
#[derive(Default)]
struct StackRefs {
    written: std::collections::HashSet<usize>,
}

/// One table of the top sites by `by` (sites where it is zero left out).
#[allow(clippy::too_many_arguments)]
fn site_table(
    o: &mut String,
    r: &Report,
    stacks: &mut StackRefs,
    id: &str,
    title: &str,
    by: Col,
    cols: &[Col],
    (total, share): (u64, &str),
) {
    let mut rows: Vec<usize> = (0..r.sites.len()).filter(|&i| by.value(&r.sites[i]) > 0).collect();
    let n = rows.len();
    let top = top_by(&mut rows, TABLE_ROWS, |i| by.value(&r.sites[i]));
    let _ = write!(o, "<div class=\"tab\" id=\"{id}\">");
    if !title.is_empty() {
        let _ = write!(o, "<h3>{}</h3>", esc(title));
    }
    if top.is_empty() {
        o.push_str("<p>No site.</p></div>");
        return;
    }
    o.push_str("<table class=\"sortable sites\"><thead><tr><th data-sort=\"n\" data-asc>#</th><th data-sort=\"t\" class=\"site\">Site</th>");
    for c in cols {
        let _ = write!(o, "<th data-sort=\"n\">{}</th>", c.heading());
    }
    let _ = write!(o, "<th data-sort=\"n\" title=\"{}\">Share</th></tr></thead><tbody>", esc(share));
    for (rank, &i) in top.iter().enumerate() {
        let s = &r.sites[i];
        let _ = write!(o, "<tr><td data-v=\"{}\">{}</td>", rank + 1, rank + 1);
        site_cell(o, &r.frames, &s.stack, i, stacks, "");
        for &c in cols {
            num_cell(o, c.value(s), c.is_bytes());
        }
        let v = by.value(s);
        let _ = write!(
            o,
            "<td data-v=\"{v}\"><span class=\"share\" style=\"width:{:.0}px\"></span>{}</td></tr>",
            share_frac(v, total) * 40.0,
            esc(&pct(v, total))
        );
    }
    o.push_str("</tbody></table>");
    if n > top.len() {
        let _ = write!(o, "<p class=\"more\">{} more sites not shown (the JSON report lists every site).</p>", count((n - top.len()) as u64));
    }
    o.push_str("</div>");
}

/// The indices of the `k` largest by `key`, largest first (ties by index, so pages are stable).
fn top_by(ix: &mut [usize], k: usize, key: impl Fn(usize) -> u64) -> Vec<usize> {
    let cmp = |a: &usize, b: &usize| key(*b).cmp(&key(*a)).then(a.cmp(b));
    if ix.len() > k {
        ix.select_nth_unstable_by(k, cmp);
    }
    let mut top = ix[..ix.len().min(k)].to_vec();
    top.sort_by(cmp);
    top
}

fn num_cell(o: &mut String, v: u64, is_bytes: bool) {
    let _ = write!(o, "<td data-v=\"{v}\">{}</td>", if is_bytes { bytes(v) } else { count(v) });
}

/// A site's cell: its innermost useful frame after `tag` (HTML), expanding to its whole stack.
/// `key` names the stack so that it is written once per page.
fn site_cell(o: &mut String, frames: &[Frame], stack: &[u32], key: usize, stacks: &mut StackRefs, tag: &str) {
    let (name, loc) = match site_frame(frames, stack) {
        Some(f) => (short(&label(f), 120), if f.function.is_empty() { String::new() } else { location(f) }),
        None => ("[no stack recorded]".to_string(), String::new()),
    };
    let _ = write!(
        o,
        "<td class=\"site\"><details><summary>{tag}<b>{}</b> <small>{}</small></summary>",
        esc(&name),
        esc(&loc)
    );
    if stack.is_empty() {
        o.push_str("<p class=\"ref\">No stack was recorded for these allocations (<code>heaplab trace --stack-depth N</code> records them).</p>");
    } else if stacks.written.insert(key) {
        let _ = write!(o, "<ol class=\"stack\" id=\"stack-{key}\">");
        for &fi in stack {
            match frames.get(fi as usize) {
                Some(f) => stack_frame(o, f),
                None => o.push_str("<li>[bad frame index]</li>"),
            }
        }
        o.push_str("</ol>");
    } else {
        let _ = write!(o, "<p class=\"ref\" data-ref=\"stack-{key}\"><a href=\"#stack-{key}\">The stack is shown in an earlier table</a></p>");
    }
    o.push_str("</details></td>");
}

fn stack_frame(o: &mut String, f: &Frame) {
    let _ = write!(
        o,
        "<li{}><b>{}</b>{} <code>{}</code> <small>{}</small></li>",
        if is_plumbing(f) { " class=\"dim\"" } else { "" },
        esc(&short(&label(f), 400)),
        if f.inlined { " <em>inlined</em>" } else { "" },
        esc(&if f.file.is_empty() { String::new() } else { format!("{}:{}", f.file, f.line) }),
        // An unnamed frame's label is already its module and offset.
        if f.function.is_empty() { String::new() } else { esc(&format!("{}+{:#x}", f.module, f.offset)) },
    );
}

// ---- frames ----

/// A frame's name: its function, else where it is in its module.
fn label(f: &Frame) -> String {
    if !f.function.is_empty() {
        f.function.clone()
    } else if !f.module.is_empty() {
        format!("{}+{:#x}", f.module, f.offset)
    } else {
        "??".into()
    }
}

/// "file.c:12" (the file's last component), else the module.
fn location(f: &Frame) -> String {
    if f.file.is_empty() {
        f.module.clone()
    } else {
        let base = f.file.rsplit('/').next().unwrap_or(&f.file);
        if f.line > 0 { format!("{base}:{}", f.line) } else { base.to_string() }
    }
}

// ---- histograms, allocators, notes ----

fn histogram_section(o: &mut String, r: &Report) {
    o.push_str("<section id=\"histograms\"><h2>Sizes and lifetimes</h2><div class=\"pair\">");
    let _ = write!(
        o,
        "<figure><figcaption>Requests by size</figcaption>{}</figure>\
         <figure><figcaption>Blocks by lifetime (leaks not counted)</figcaption>{}</figure>",
        charts::histogram(&r.sizes, charts::size_label),
        charts::histogram(&r.lifetimes, dur)
    );
    o.push_str("</div><p class=\"legend\"><span class=\"key count\"></span>blocks (left axis) \
                <span class=\"key bytes\"></span>their bytes (right axis)</p></section>");
}

fn allocators_section(o: &mut String, r: &Report) {
    if r.allocators.is_empty() {
        return;
    }
    o.push_str("<section id=\"allocators\"><h2>Allocators beside the plan</h2><div class=\"pair\">");
    o.push_str("<table class=\"sortable\"><thead><tr><th data-sort=\"t\">Allocator</th><th data-sort=\"n\">Peak (pages of live blocks)</th>\
                <th data-sort=\"n\">Over the plan</th><th data-sort=\"n\">Fragmentation</th></tr></thead><tbody>");
    for a in &r.allocators {
        let _ = write!(o, "<tr><td>{}</td>", esc(&a.name));
        num_cell(o, a.peak_bytes, true);
        match a.over_plan_pct {
            Some(p) => {
                let _ = write!(o, "<td data-v=\"{p}\">{p:+.1}%</td>");
            }
            None => o.push_str("<td data-v=\"-1e300\">–</td>"),
        }
        let _ = write!(o, "<td data-v=\"{0}\">{0:.1}%</td></tr>", a.fragmentation_pct);
    }
    o.push_str("</tbody></table>");
    let (plan, bound) = r.oracle.as_ref().map_or((None, None), |or| (Some(or.plan_bytes), Some(or.lower_bound)));
    let _ = write!(o, "<figure>{}</figure>", charts::allocators(&r.allocators, plan, bound));
    o.push_str("</div></section>");
}

fn notes_section(o: &mut String, notes: &[String]) {
    if notes.is_empty() {
        return;
    }
    o.push_str("<section id=\"notes\"><h2>Notes</h2><ul>");
    for n in notes {
        let _ = write!(o, "<li>{}</li>", esc(n));
    }
    o.push_str("</ul></section>");
}

// ---- diff ----

fn diff_summary_section(o: &mut String, b: &Summary, a: &Summary) {
    o.push_str("<section id=\"summary\"><h2>Summary</h2><div class=\"cards\">");
    let rows: [(&str, u64, u64, bool); 6] = [
        ("Peak heap", b.peak_bytes, a.peak_bytes, true),
        ("Peak RSS", b.peak_rss.unwrap_or(0), a.peak_rss.unwrap_or(0), true),
        ("Allocated", b.bytes_allocated, a.bytes_allocated, true),
        ("Calls", b.allocations, a.allocations, false),
        ("Temporaries", b.temporary, a.temporary, false),
        ("Leaked", b.leaked_bytes, a.leaked_bytes, true),
    ];
    for (title, before, after, is_bytes) in rows {
        let f = |v| if is_bytes { bytes(v) } else { count(v) };
        if title == "Peak RSS" && (b.peak_rss.is_none() || a.peak_rss.is_none()) {
            card(o, title, "–", "not recorded in both traces");
            continue;
        }
        let extra = if title == "Leaked" {
            format!("; {} → {} blocks", count(b.leaked_blocks), count(a.leaked_blocks))
        } else {
            String::new()
        };
        let _ = write!(
            o,
            "<div class=\"card\"><h3>{title}</h3><div class=\"big {}\">{}</div><p>{} → {} ({}){extra}</p></div>",
            delta_class(after as i128 - before as i128),
            delta(after as i128 - before as i128, is_bytes),
            f(before),
            f(after),
            pct_change(before, after)
        );
    }
    o.push_str("</div></section>");
}

fn diff_sites_section(o: &mut String, d: &DiffReport) {
    type Key = fn(&SiteFigures) -> u64;
    let keys: [Key; 5] = [|f| f.peak_bytes, |f| f.bytes, |f| f.calls, |f| f.temporary, |f| f.leaked_bytes];
    let change = |i: usize, k: Key| {
        let s = &d.sites[i];
        (k(&s.after) as i128 - k(&s.before) as i128).unsigned_abs() as u64
    };
    // The largest changes of each figure, so that a site whose calls doubled shows even when
    // its peak did not move; ordered by the change of peak bytes, then of bytes.
    let mut shown = std::collections::BTreeSet::new();
    for k in keys {
        let mut ix: Vec<usize> = (0..d.sites.len()).filter(|&i| change(i, k) > 0).collect();
        shown.extend(top_by(&mut ix, TABLE_ROWS, |i| change(i, k)));
    }
    let mut shown: Vec<usize> = shown.into_iter().collect();
    shown.sort_by(|&x, &y| {
        change(y, keys[0]).cmp(&change(x, keys[0])).then(change(y, keys[1]).cmp(&change(x, keys[1]))).then(x.cmp(&y))
    });
    let unchanged = d.sites.len() - (0..d.sites.len()).filter(|&i| keys.iter().any(|&k| change(i, k) > 0)).count();
    o.push_str(
        "<section id=\"sites\"><h2>Sites by change of peak bytes</h2><p class=\"hint\">Sites of both \
         runs matched by their stack's key; <span class=\"tag new\">new</span> only in the later \
         run, <span class=\"tag gone\">gone</span> only in the earlier one.<span class=\"js-only\"> Click a heading to sort.</span></p>",
    );
    if shown.is_empty() {
        o.push_str("<p>No site changed.</p></section>");
        return;
    }
    o.push_str(
        "<table class=\"sortable sites\"><thead><tr><th data-sort=\"t\" class=\"site\">Site</th><th data-sort=\"n\">Peak before</th>\
         <th data-sort=\"n\">Peak after</th><th data-sort=\"n\">Δ peak</th><th data-sort=\"n\">Δ allocated</th>\
         <th data-sort=\"n\">Δ calls</th><th data-sort=\"n\">Δ temporary</th><th data-sort=\"n\">Δ leaked</th></tr></thead><tbody>",
    );
    let mut stacks = StackRefs::default();
    for &i in &shown {
        let s = &d.sites[i];
        let is_new = s.before.calls == 0 && s.after.calls > 0;
        let is_gone = s.after.calls == 0 && s.before.calls > 0;
        o.push_str("<tr>");
        let tag = match (is_new, is_gone) {
            (true, _) => "<span class=\"tag new\">new</span> ",
            (_, true) => "<span class=\"tag gone\">gone</span> ",
            _ => "",
        };
        site_cell(o, &d.frames, &s.stack, i, &mut stacks, tag);
        num_cell(o, s.before.peak_bytes, true);
        num_cell(o, s.after.peak_bytes, true);
        for (k, is_bytes) in [(keys[0], true), (keys[1], true), (keys[2], false), (keys[3], false), (keys[4], true)] {
            let dv = k(&s.after) as i128 - k(&s.before) as i128;
            let _ = write!(o, "<td data-v=\"{dv}\" class=\"{}\">{}</td>", delta_class(dv), delta(dv, is_bytes));
        }
        o.push_str("</tr>");
    }
    o.push_str("</tbody></table>");
    let more = d.sites.len() - unchanged - shown.len();
    let _ = write!(
        o,
        "<p class=\"more\">{}{} sites unchanged.</p></section>",
        if more > 0 { format!("{} more changed sites not shown (the JSON diff lists them). ", count(more as u64)) } else { String::new() },
        count(unchanged as u64)
    );
}

// ---- header ----

fn program_name(m: &Meta) -> String {
    let exe = if m.executable.is_empty() { m.command.first().cloned().unwrap_or_default() } else { m.executable.clone() };
    let base = exe.rsplit('/').next().unwrap_or("").to_string();
    if base.is_empty() { "trace".into() } else { base }
}

fn meta_text(m: &Meta) -> String {
    let mut parts = vec![format!("<code>{}</code>", esc(&short(&m.command.join(" "), 300)))];
    if m.pid != 0 {
        parts.push(format!("pid {}", m.pid));
    }
    parts.push(format!("{} thread{}", m.threads, if m.threads == 1 { "" } else { "s" }));
    parts.push(dur(m.duration_ns));
    if !m.ending.is_empty() {
        parts.push(esc(&m.ending));
    }
    parts.push(if m.stack_depth == 0 { "no call stacks recorded".into() } else { format!("stacks of {} frames", m.stack_depth) });
    if !m.trace.is_empty() {
        parts.push(format!("trace <code>{}</code>", esc(&m.trace)));
    }
    parts.join(" · ")
}

fn meta_line(m: &Meta) -> String {
    format!("<p class=\"meta\">{}</p>", meta_text(m))
}

// ---- formatting ----

/// Text for HTML content and attribute values.
pub(crate) use heaplab_plot::escape_markup as esc;

/// At most `n` characters, an ellipsis marking a cut.
fn short(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(n - 1).collect();
        t.push('…');
        t
    }
}

/// Three significant digits, trailing zeros dropped.
fn sig3(v: f64) -> String {
    let s = if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    };
    if s.contains('.') { s.trim_end_matches('0').trim_end_matches('.').to_string() } else { s }
}

/// A duration: "850 ns", "12.3 µs", "4.56 ms", "1.23 s", "2 min 3 s".
fn dur(ns: u64) -> String {
    let v = ns as f64;
    if ns < 1_000 {
        format!("{ns} ns")
    } else if ns < 1_000_000 {
        format!("{} µs", sig3(v / 1e3))
    } else if ns < 1_000_000_000 {
        format!("{} ms", sig3(v / 1e6))
    } else if ns < 60_000_000_000 {
        format!("{} s", sig3(v / 1e9))
    } else {
        let s = ns / 1_000_000_000;
        format!("{} min {} s", s / 60, s % 60)
    }
}

fn share_frac(v: u64, total: u64) -> f64 {
    if total == 0 { 0.0 } else { (v as f64 / total as f64).min(1.0) }
}

/// `v` as a percentage of `total`.
fn pct(v: u64, total: u64) -> String {
    if total == 0 {
        return "–".into();
    }
    let p = v as f64 * 100.0 / total as f64;
    if p > 0.0 && p < 0.1 { "<0.1%".into() } else { format!("{p:.1}%") }
}

/// How much `v` exceeds `base`, in percent ("+12.5%").
fn pct_over(v: u64, base: u64) -> String {
    if base == 0 { "–".into() } else { format!("{:+.1}%", (v as f64 / base as f64 - 1.0) * 100.0) }
}

fn pct_change(before: u64, after: u64) -> String {
    if before == after {
        "no change".into()
    } else if before == 0 {
        "new".into()
    } else {
        pct_over(after, before)
    }
}

/// A signed change: "+1.5 MiB", "−12", "0".
fn delta(d: i128, is_bytes: bool) -> String {
    let m = d.unsigned_abs().min(u64::MAX as u128) as u64;
    let v = if is_bytes { bytes(m) } else { count(m) };
    match d.signum() {
        1 => format!("+{v}"),
        -1 => format!("−{v}"),
        _ => v,
    }
}

fn delta_class(d: i128) -> &'static str {
    match d.signum() {
        1 => "up",
        -1 => "down",
        _ => "same",
    }
}
