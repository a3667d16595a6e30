//! The HTML report of real programs in a real browser: `heaplab report -o` on traces of
//! `tests/programs/report.c` (known call sites; its allocators beside the plan under glibc),
//! of sqlite3 building and querying a table, and `--diff` of two runs, opened in headless
//! Chromium (`heaplab_report::browser`). With the script, the page must run without a console
//! message or an error, set its ready marker and pass its self-test of the interaction (opened
//! as `#selftest`: a click on the timeline's last moment redraws the flame graph, a click on a
//! box zooms, a heading sorts its table); without it, the server-drawn charts, flame graph and
//! tables must be there (the page opened with its scripts removed).
//! Screenshots are left beside the pages under the scratch directory for people to look at.
//! Skipped when Chromium is not installed (`make test` installs it).

use crate::common::{heaplab_in, need};
use crate::report::{compile, traced};
use heaplab_report::browser;
use std::path::Path;

/// Opens `page` with its script: no console message, no error, the ready marker set, and each
/// of `want` in the DOM afterwards (the self-test's results among them); then without its
/// script: each of `static_want` in the DOM; and saves a screenshot as `page`.png.
fn check(chrome: &Path, page: &Path, want: &[&str], static_want: &[&str]) {
    browser::check_scripted(chrome, page, want);
    // Headless Chromium's --dump-dom needs scripts enabled, so the page is opened without its
    // scripts instead: what a browser with JavaScript off shows.
    let bare = page.with_extension("noscript.html");
    std::fs::write(&bare, without_scripts(&std::fs::read_to_string(page).unwrap())).unwrap();
    let (dom, log) = browser::browse(chrome, &bare, &format!("file://{}", bare.display()), &["--dump-dom"]);
    assert!(dom.contains("</main>") && !dom.contains("data-ready"), "{}: {log}", bare.display());
    for w in static_want {
        assert!(dom.contains(w), "{}: no {w} without the script", page.display());
    }
    browser::screenshot(chrome, page);
}

/// `html` without its `<script>` elements.
fn without_scripts(html: &str) -> String {
    let mut out = String::with_capacity(html.len());
    let mut rest = html;
    while let Some(at) = rest.find("<script") {
        out.push_str(&rest[..at]);
        let end = rest[at..].find("</script>").expect("scripts are closed") + at + "</script>".len();
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

/// What every report page holds with its script: the tabs it adds, its own flame graph, and
/// its self-test passed.
const SCRIPTED: [&str; 6] = ["class=\"tabbar\"", "data-drawn=\"js\"", "\"zoomed\":true", "\"sorted\":true", "id=\"summary\"", "class=\"moment on\""];
/// What every report page holds without it: the server's charts, flame graph, tables, stacks.
const STATIC: [&str; 6] = ["id=\"timeline-svg\"", "<circle class=\"peak\"", "<svg id=\"flame-svg\"", "<table class=\"sortable sites\"", "<ol class=\"stack\"", "class=\"chart hist\""];

#[test]
fn report_pages_of_real_programs_work_in_chromium() {
    let Some(chrome) = browser::chromium() else {
        eprintln!("skipped: chromium not found");
        return;
    };
    need("sqlite3");
    let dir = scratch!("pages");
    let prog = compile(&dir);
    let a = traced(&dir, &prog, 1, "a.hltrace");
    let b = traced(&dir, &prog, 3, "b.hltrace");
    for args in [&["report", &a, "-o", "known", "--replay", "glibc"][..], &["report", &a, "--diff", &b, "-o", "diff"]] {
        let r = heaplab_in(&dir, args);
        assert_eq!(r.code, 0, "{}", r.stderr);
    }
    let mut want = SCRIPTED.to_vec();
    want.extend(["<b>make_table</b>", "id=\"oracle\""]);
    let mut static_want = STATIC.to_vec();
    static_want.extend(["<section id=\"allocators\">", "<svg class=\"chart alloc\""]);
    check(&chrome, &dir.join("known/index.html"), &want, &static_want);
    check(
        &chrome,
        &dir.join("diff/index.html"),
        &["\"sorted\":true", "<b>make_nodes</b>", "<path class=\"line after\""],
        &["id=\"timeline-svg\"", "<path class=\"line before\"", "<b>make_nodes</b>"],
    );

    // sqlite3: many call sites in a real library, deep stacks.
    let sql = "create table t(a integer primary key, b text, c real);\n\
               with recursive n(i) as (select 1 union all select i + 1 from n where i < 20000)\n\
               insert into t select i, hex(randomblob(16 + i % 64)), i * 0.5 from n;\n\
               create index tb on t(b);\n\
               select count(*), sum(length(b)) from t where c > 100 group by a % 7 order by 2;\n";
    std::fs::write(dir.join("q.sql"), sql).unwrap();
    let r = heaplab_in(&dir, &["trace", "--stack-depth", "16", "-o", "sqlite.hltrace", "--", "sqlite3", ":memory:", ".read q.sql"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let r = heaplab_in(&dir, &["report", "sqlite.hltrace", "-o", "sqlite"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let page = dir.join("sqlite/index.html");
    let size = std::fs::metadata(&page).unwrap().len();
    assert!(size < 2_000_000, "the page of sqlite3's report is {size} bytes");
    check(&chrome, &page, &SCRIPTED, &STATIC);
    // One naming rule: the terminal names the top site as the page does, past sqlite3's
    // allocation wrapper.
    let html = std::fs::read_to_string(&page).unwrap();
    let by_peak = &html[html.find("id=\"by-peak\"").expect("the by-peak table")..];
    let page_name = &by_peak[by_peak.find("<b>").unwrap() + 3..by_peak.find("</b>").unwrap()];
    let text = heaplab_in(&dir, &["report", "sqlite.hltrace", "--top", "1"]);
    let line = text.stdout.lines().skip_while(|l| !l.starts_with("MOST MEMORY AT THE PEAK")).nth(1).unwrap_or_default();
    let text_name = line.split(" from ").nth(1).unwrap_or_default();
    assert!(text_name.starts_with(&format!("{page_name} ")), "page: {page_name}; terminal: {line}");
    assert!(!page_name.contains("alloc") && !page_name.contains("Malloc"), "the top site named by a wrapper: {page_name}");
}
