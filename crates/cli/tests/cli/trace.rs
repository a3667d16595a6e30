//! End-to-end tests of `heaplab trace` on real programs and on test programs written for the
//! failure modes (`tests/programs/`, compiled here with the system C compiler): threads,
//! bootstrap before the tracer's constructor, fork, exec, crash, abort, _exit, closed and
//! dup'ed descriptors, truncated files. Allocation counts are checked against exact
//! expectations or, for real programs, against heaptrack's count of the same run; converted
//! instances are planned and the placements validated by `heaplab check`.
//!
//! Real programs (sqlite3, python3, jq, xz, gzip, sh, heaptrack) must be installed (`make test`
//! and `.ci/run` install them): a missing one fails the test loudly.

use crate::common::{heaplab_in, need, prog, Heaplab, BIN};
use serde_json::Value;
use std::path::Path;
use std::process::{Command, Stdio};

fn info(dir: &Path, file: &str) -> Value {
    let r = heaplab_in(dir, &["trace-info", file, "--json"]);
    assert_eq!(r.code, 0, "trace-info {file}: {}", r.stderr);
    serde_json::from_str(&r.stdout).unwrap()
}

/// Runs `heaplab trace` with `args` (which hold `-o FILE`) and the summary as JSON in a file;
/// requires success and returns the summary.
fn trace_summary(dir: &Path, args: &[&str]) -> Value {
    let mut all = vec!["trace", "--json", "--summary", "summary.json"];
    all.extend_from_slice(args);
    let r = heaplab_in(dir, &all);
    assert_eq!(r.code, 0, "{args:?}: {}", r.stderr);
    assert!(r.stdout.is_empty(), "heaplab wrote to the program's standard output: {}", r.stdout);
    serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap()
}

/// Traces `cmd` into `dir/out`, requires success, and returns `trace-info --json` of the file.
fn trace_ok(dir: &Path, out: &str, cmd: &[&str]) -> Value {
    let mut args = vec!["trace", "-o", out, "--"];
    args.extend_from_slice(cmd);
    let r = heaplab_in(dir, &args);
    assert_eq!(r.code, 0, "trace {cmd:?}: {}", r.stderr);
    info(dir, out)
}

fn calls(v: &Value, f: &str) -> u64 {
    v["calls"][f].as_u64().unwrap_or_else(|| panic!("no calls.{f} in {v}"))
}

/// Allocation calls as heaptrack counts them (everything but free).
fn alloc_calls(v: &Value) -> u64 {
    v["calls"].as_object().unwrap().iter().filter(|(k, _)| *k != "free").map(|(_, n)| n.as_u64().unwrap()).sum()
}

/// Converts, plans and validates a trace: the plan must be valid and at least the max load.
fn plan_and_check(dir: &Path, trace: &str) -> Value {
    let inst = dir.join("inst.csv").to_string_lossy().into_owned();
    let placed = dir.join("placed.csv").to_string_lossy().into_owned();
    let r = heaplab_in(dir, &["convert", trace, "-o", &inst]);
    assert_eq!(r.code, 0, "convert: {}", r.stderr);
    let r = heaplab_in(dir, &["plan", trace, "--json", "--time-limit", "1", "-o", &placed]);
    assert_eq!(r.code, 0, "plan: {}", r.stderr);
    let v: Value = serde_json::from_str(&r.stdout).unwrap();
    let c = heaplab_in(dir, &["check", &inst, &placed]);
    assert_eq!(c.code, 0, "check: {}{}", c.stdout, c.stderr);
    assert!(v["makespan"].as_u64().unwrap() >= v["max_load"].as_u64().unwrap());
    assert_eq!(v["trace"]["peak_live_bytes"], v["max_load"], "peak live bytes = max load of the instance");
    v
}

#[test]
fn threads_every_function_counted_exactly_then_planned() {
    let d = scratch!("threads");
    let v = trace_summary(&d, &["-o", "t.hltrace", "--", &prog("threads"), "4", "300"]);
    assert_eq!(v["threads"], 5, "main + 4 workers");
    for f in ["malloc", "realloc", "reallocarray", "posix_memalign", "aligned_alloc", "memalign", "valloc"] {
        assert_eq!(calls(&v, f), 1200, "{f}");
    }
    assert!(calls(&v, "calloc") >= 1200 && calls(&v, "calloc") < 1220, "thread start-up adds a few callocs");
    let extra = calls(&v, "calloc") - 1200; // thread start-up blocks, some never freed
    assert!((7 * 1200..=7 * 1200 + extra).contains(&calls(&v, "free")), "{}", calls(&v, "free"));
    assert_eq!(v["events"].as_u64().unwrap(), v["calls"].as_object().unwrap().values().map(|n| n.as_u64().unwrap()).sum::<u64>());
    assert_eq!(v["complete"], true);
    let p = plan_and_check(&d, "t.hltrace");
    assert!(p["trace"]["allocator_peak_pages_bytes"].as_u64().unwrap() > 0);
    // Per-thread conversion: one worker's buffers only.
    let tid = v["calls_per_thread"].as_array().unwrap().iter().map(|t| t["tid"].as_u64().unwrap()).max().unwrap();
    let r = heaplab_in(&d, &["convert", "t.hltrace", "-o", "one.csv", "--thread", &tid.to_string(), "--clock", "events", "--size", "usable"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let rows = std::fs::read_to_string(d.join("one.csv")).unwrap();
    assert!(rows.starts_with("id,lower,upper,size,alignment,requested"), "{}", &rows[..80]);
    assert_eq!(rows.lines().count() - 1, 300 * 8, "8 allocations a round in one thread");
    let r = heaplab_in(&d, &["convert", "t.hltrace", "-o", "x.csv", "--thread", "1"]);
    assert_eq!(r.code, 2, "unknown thread");
    assert!(r.stderr.contains("no such thread"), "{}", r.stderr);
}

#[test]
fn other_allocators_preloaded_after_the_tracer() {
    // The tracer forwards to whatever malloc comes next: jemalloc and mimalloc here (installed
    // by `make test`). Counts are exact; usable sizes are each allocator's own.
    let d = scratch!("allocators");
    let mut usable = Vec::new();
    for lib in ["/usr/lib/x86_64-linux-gnu/libjemalloc.so.2", "/usr/lib/x86_64-linux-gnu/libmimalloc.so.2", ""] {
        if !lib.is_empty() {
            need(lib);
        }
        let out = Heaplab::new(&["trace", "-o", "a.hltrace", "--", &prog("threads"), "2", "300"]).dir(&d).env("LD_PRELOAD", lib).run();
        assert!(out.code == 0, "{lib}: {}", out.stderr);
        let v = info(&d, "a.hltrace");
        for f in ["malloc", "realloc", "reallocarray", "posix_memalign", "aligned_alloc", "memalign", "valloc"] {
            assert!((600..=602).contains(&calls(&v, f)), "{lib}: {f} {}", calls(&v, f));
        }
        assert_eq!(v["unmatched_frees"], 0, "{lib}");
        plan_and_check(&d, "a.hltrace");
        usable.push(v["peak_live_usable_bytes"].as_u64().unwrap());
    }
    usable.sort();
    usable.dedup();
    assert_eq!(usable.len(), 3, "each allocator's own usable sizes are recorded: {usable:?}");
}

#[test]
fn bootstrap_calls_before_the_tracer_constructor_are_recorded() {
    // early.so is preloaded after the tracer; its constructor allocates 10 blocks, possibly
    // before the tracer's own constructor has run (then its first call initialises it).
    let d = scratch!("boot");
    let plain = heaplab_in(&d, &["trace", "-o", "a.hltrace", "--", &prog("misbehave"), "none"]);
    assert_eq!(plain.code, 0, "{}", plain.stderr);
    let out = Heaplab::new(&["trace", "-o", "b.hltrace", "--", &prog("misbehave"), "none"]).dir(&d).env("LD_PRELOAD", prog("early.so")).run();
    assert!(out.code == 0, "{}", out.stderr);
    let (a, b) = (info(&d, "a.hltrace"), info(&d, "b.hltrace"));
    assert_eq!(calls(&a, "malloc"), 501);
    assert_eq!(calls(&b, "malloc") - calls(&a, "malloc"), 10);
    assert_eq!(calls(&b, "calloc") - calls(&a, "calloc"), 10);
    assert_eq!(calls(&b, "free") - calls(&a, "free"), 20);
}

#[test]
fn fork_children_write_their_own_files() {
    let d = scratch!("fork");
    let v = trace_summary(&d, &["-o", "f.hltrace", "--", &prog("misbehave"), "fork"]);
    assert_eq!(calls(&v, "malloc"), 601);
    let kids = v["children"].as_array().unwrap();
    assert_eq!(kids.len(), 1, "{kids:?}");
    let file = kids[0]["file"].as_str().unwrap();
    let k = info(&d, file);
    assert_eq!(k["origin"], "fork child");
    assert_eq!(k["ppid"], v["pid"]);
    assert_eq!(calls(&k, "malloc"), 250);
    assert_eq!(k["complete"], true);
    assert_eq!(k["unmatched_frees"], 0);
}

#[test]
fn exec_is_followed_or_not_as_asked() {
    let d = scratch!("exec");
    let args = ["--", &prog("misbehave"), "exec", &prog("misbehave"), "none"];
    let follow: Vec<&str> = ["-o", "e.hltrace"].into_iter().chain(args).collect();
    let v = trace_summary(&d, &follow);
    assert_eq!(calls(&v, "malloc"), 501, "events before exec");
    assert!(v["status"].as_str().unwrap().contains("exec"), "{}", v["status"]);
    let kids = v["children"].as_array().unwrap();
    assert_eq!(kids.len(), 1, "the exec'd image: {kids:?}");
    let k = info(&d, kids[0]["file"].as_str().unwrap());
    assert_eq!(k["origin"], "exec'd image");
    assert_eq!(calls(&k, "malloc"), 501);
    let no: Vec<&str> = ["-o", "n.hltrace", "--no-follow-exec"].into_iter().chain(args).collect();
    let v = trace_summary(&d, &no);
    assert_eq!(v["children"].as_array().unwrap().len(), 0, "no trace of the exec'd image");
}

#[test]
fn crash_abort_and_exit_codes_keep_a_readable_trace() {
    let d = scratch!("crash");
    for (mode, sig) in [("crash", "SIGSEGV"), ("abort", "SIGABRT")] {
        let out = format!("{mode}.hltrace");
        let r = heaplab_in(&d, &["trace", "-o", &out, "--", &prog("misbehave"), mode]);
        assert_eq!(r.code, 2, "{mode}: a crashed program is exit 2: {}", r.stderr);
        assert!(r.stderr.contains(sig) && r.stderr.contains(&out), "{}", r.stderr);
        let v = info(&d, &out);
        assert_eq!(calls(&v, "malloc"), 501, "{mode}: every event before the crash");
        assert!(v["status"].as_str().unwrap().contains(sig), "{}", v["status"]);
        plan_and_check(&d, &out);
    }
    let r = heaplab_in(&d, &["trace", "-o", "x.hltrace", "--", &prog("misbehave"), "_exit"]);
    assert_eq!(r.code, 1, "non-zero status is exit 1: {}", r.stderr);
    assert!(r.stderr.contains("status 3"), "{}", r.stderr);
    assert!(info(&d, "x.hltrace")["status"].as_str().unwrap().contains("_exit(3)"));
}

#[test]
fn timestamps_show_a_pause_and_clocks_keep_the_order() {
    let d = scratch!("clock");
    let v = trace_ok(&d, "s.hltrace", &[&prog("misbehave"), "sleep"]);
    let dur = v["duration_ns"].as_u64().unwrap();
    assert!((200_000_000..2_000_000_000).contains(&dur), "duration {dur} ns");
    // With the ns clock, the largest gap between consecutive allocations is the pause.
    let r = heaplab_in(&d, &["convert", "s.hltrace", "-o", "ns.csv", "--clock", "ns"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let text = std::fs::read_to_string(d.join("ns.csv")).unwrap();
    let mut lowers: Vec<u64> = text.lines().skip(1).map(|l| l.split(',').nth(1).unwrap().parse().unwrap()).collect();
    lowers.sort();
    let gap = lowers.windows(2).map(|w| w[1] - w[0]).max().unwrap();
    // A loaded machine may wake the program late, never early.
    assert!((190_000_000..1_500_000_000).contains(&gap), "largest gap {gap} ns, expected the 200 ms pause");
    // Every clock gives the same max load (they all keep the trace's order).
    let load = |clock: &str| -> u64 {
        let r = heaplab_in(&d, &["convert", "s.hltrace", "-o", "c.csv", "--clock", clock]);
        assert_eq!(r.code, 0, "{}", r.stderr);
        let r = heaplab_in(&d, &["stats", "c.csv", "--json"]);
        serde_json::from_str::<Value>(&r.stdout).unwrap()["max_load"].as_u64().unwrap()
    };
    let (a, b, c) = (load("events"), load("bytes"), load("ns"));
    assert!(a == b && b == c, "{a} {b} {c}");
    assert_eq!(a, v["peak_live_bytes"].as_u64().unwrap());
}

#[test]
fn programs_that_close_and_dup_over_descriptors_are_traced_to_the_end() {
    let d = scratch!("fds");
    let v = trace_ok(&d, "c.hltrace", &[&prog("misbehave"), "closefds"]);
    assert_eq!(calls(&v, "malloc"), 1001);
    assert_eq!(calls(&v, "free"), 1001);
    assert_eq!(v["complete"], true);
}

#[test]
fn truncated_and_foreign_files_are_rejected_with_the_usable_prefix() {
    let d = scratch!("trunc");
    let r = heaplab_in(&d, &["trace", "-o", "t.hltrace", "--", &prog("threads"), "2", "200"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let whole = std::fs::read(d.join("t.hltrace")).unwrap();
    let total = info(&d, "t.hltrace")["events"].as_u64().unwrap();
    for frac in [0.2, 0.5, 0.77, 0.99] {
        let cut = (whole.len() as f64 * frac) as usize;
        std::fs::write(d.join("cut.hltrace"), &whole[..cut]).unwrap();
        let r = heaplab_in(&d, &["trace-info", "cut.hltrace", "--json"]);
        assert_eq!(r.code, 2, "cut at {cut}: {}", r.stderr);
        assert!(r.stderr.contains("cut.hltrace") && r.stderr.contains("truncated") && r.stderr.contains("usable"), "{}", r.stderr);
        let v: Value = serde_json::from_str(&r.stdout).unwrap();
        assert!(v["events"].as_u64().unwrap() < total);
        let r = heaplab_in(&d, &["trace-info", "cut.hltrace", "--allow-truncated"]);
        assert_eq!(r.code, 0, "{}", r.stderr);
        let r = heaplab_in(&d, &["convert", "cut.hltrace", "-o", "cut.csv"]);
        assert_eq!(r.code, 2);
        assert!(!d.join("cut.csv").exists(), "nothing half-written");
        let r = heaplab_in(&d, &["plan", "cut.hltrace", "--allow-truncated", "--time-limit", "0.5"]);
        assert_eq!(r.code, 0, "{}", r.stderr);
    }
    std::fs::write(d.join("f.hltrace"), "id,lower,upper,size\n0,0,1,4\n").unwrap();
    let r = heaplab_in(&d, &["trace-info", "f.hltrace"]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("f.hltrace") && r.stderr.contains("not a heaplab trace"), "{}", r.stderr);
    let mut future = whole.clone();
    future[8] = 3; // a version newer than this build reads
    std::fs::write(d.join("v.hltrace"), future).unwrap();
    let r = heaplab_in(&d, &["trace-info", "v.hltrace"]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("version 3"), "{}", r.stderr);
}

#[test]
fn bad_usage_exits_2_and_writes_nothing() {
    let d = scratch!("usage");
    let r = heaplab_in(&d, &["trace", "-o", "m.hltrace", "--", "no-such-program-heaplab"]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("no-such-program-heaplab") && r.stderr.contains("not found"), "{}", r.stderr);
    assert!(!d.join("m.hltrace").exists());
    let r = heaplab_in(&d, &["trace", "-o", "nodir/m.hltrace", "--", "true"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    let r = heaplab_in(&d, &["trace", "--stack-depth", "99", "-o", "m.hltrace", "--", "true"]);
    assert_eq!(r.code, 2);
    assert_eq!(heaplab_in(&d, &["trace", "-o", "m.hltrace"]).code, 2, "no program");
    assert_eq!(std::fs::read_dir(&d).unwrap().count(), 0, "nothing written: {:?}", std::fs::read_dir(&d).unwrap().collect::<Vec<_>>());
}

/// Direct mmap, partial munmap, mremap, mprotect of a reservation, brk and sbrk of known sizes
/// (tests/programs/pages.c): exact call counts and peaks; glibc's own mmap of the program's
/// 1 MiB block is heap, not a page event; the instance is the heap's alone.
#[test]
fn direct_mappings_are_recorded_exactly() {
    let d = scratch!("pages");
    let v = trace_ok(&d, "p.hltrace", &[&prog("pages")]);
    // SAFETY: sysconf has no preconditions.
    let pg = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as u64;
    let p = &v["pages"];
    let n = |f: &str| p["calls"][f].as_u64().unwrap_or_else(|| panic!("no pages.calls.{f} in {p}"));
    let got = [n("mmap"), n("munmap"), n("mremap"), n("mprotect"), n("brk"), n("sbrk")];
    assert_eq!(got, [5, 6, 1, 1, 1, 3], "mmap (one via mmap64, one failing), munmap, mremap, mprotect, brk, sbrk: {p}");
    assert_eq!(p["failed"], 1);
    let pages = |f: &str| p[f].as_u64().unwrap() / pg;
    assert_eq!(pages("peak_anon_bytes"), 112, "16 kept + 96 after mremap: {p}");
    assert_eq!(pages("peak_file_bytes"), 2);
    assert_eq!(pages("peak_reserved_bytes"), 256);
    assert_eq!(pages("peak_brk_bytes"), 200);
    assert_eq!(pages("peak_direct_bytes"), 28 + 2 + 200);
    assert_eq!(p["mapped_at_end_bytes"], 0);
    assert!(v["peak_live_usable_bytes"].as_u64().unwrap() >= 1 << 20);
    assert!(p["peak_heap_and_direct_bytes"].as_u64().unwrap() >= (230 * pg) + (1 << 20));
    let b = &v["rss_breakdown"];
    assert_eq!(b["direct_bytes"].as_u64().unwrap(), 230 * pg);
    assert_eq!(b["heap_bytes"], v["peak_live_usable_bytes"]);
    let sum: f64 = ["heap_pct", "direct_pct", "rest_pct"].iter().map(|k| b[k].as_f64().unwrap()).sum();
    assert!(b["overlap"] == true || (sum - 100.0).abs() < 1e-6, "{b}");
    let r = heaplab_in(&d, &["trace-info", "p.hltrace"]);
    assert!(r.stdout.contains("the heap explains") && r.stdout.contains("mremap 1"), "{}", r.stdout);
    plan_and_check(&d, "p.hltrace");
}

/// A real interpreter: python's object allocator takes its arenas straight from mmap, so most
/// of its memory is direct mappings, and heap + mappings + rest make up the peak RSS.
#[test]
fn python3_rss_breakdown_shows_its_arenas() {
    let py = "/usr/bin/python3";
    need(py);
    let d = scratch!("python3-pages");
    let v = trace_ok(&d, "p.hltrace", &[py, "-c", "d = [{'k': i, 'v': str(i) * 3} for i in range(100000)]\nprint(len(d))"]);
    let p = &v["pages"];
    assert!(p["calls"]["mmap"].as_u64().unwrap() >= 10, "obmalloc arenas: {p}");
    assert!(p["peak_anon_bytes"].as_u64().unwrap() >= 10 << 20, "{p}");
    let b = &v["rss_breakdown"];
    let pct = |k: &str| b[k].as_f64().unwrap();
    assert!(pct("heap_pct") > 1.0 && pct("direct_pct") > 20.0 && pct("rest_pct") > 0.0, "{b}");
    assert!((pct("heap_pct") + pct("direct_pct") + pct("rest_pct") - 100.0).abs() < 1e-6, "{b}");
}

/// Runs `cmd` under heaptrack and returns its count of calls to allocation functions.
fn heaptrack_count(dir: &Path, cmd: &[&str], stdin: Option<&str>, env: &[(&str, &str)]) -> u64 {
    need("heaptrack");
    need("heaptrack_print");
    let out = dir.join("ht");
    let mut c = Command::new("heaptrack");
    c.arg("-o").arg(&out).args(cmd).current_dir(dir).env_remove("LD_PRELOAD").envs(env.iter().copied());
    c.stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() }).stdout(Stdio::null()).stderr(Stdio::null());
    let mut child = c.spawn().expect("heaptrack");
    if let Some(text) = stdin {
        use std::io::Write;
        child.stdin.take().unwrap().write_all(text.as_bytes()).unwrap();
    }
    assert!(child.wait().unwrap().success(), "heaptrack {cmd:?} failed");
    let file = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.file_name().unwrap().to_string_lossy().starts_with("ht."))
        .expect("heaptrack output file");
    let p = Command::new("heaptrack_print").arg("-f").arg(&file).arg("--print-peaks=0").arg("--print-allocators=0").arg("--print-temporary=0").arg("--print-leaks=0").output().unwrap();
    let _ = std::fs::remove_file(&file);
    let text = String::from_utf8_lossy(&p.stdout);
    let line = text.lines().find(|l| l.starts_with("calls to allocation functions:")).unwrap_or_else(|| panic!("heaptrack_print: {text}"));
    line.split_whitespace().nth(4).unwrap().parse().unwrap()
}

/// Traces a real program, cross-checks the allocation count with heaptrack's for the same
/// command, then plans and validates the converted instance. heaptrack's own injected library
/// pulls in libstdc++, whose start-up allocates once (its exception pool): heaptrack may count
/// exactly one call more than the program made. `slack` allows for programs whose allocations
/// depend on the environment's size (python builds os.environ from it, and the two tools add
/// different variables). `env` is set for both tools' runs.
fn real_program(name: &str, cmd: &[&str], stdin: Option<&str>, slack: u64, env: &[(&str, &str)]) -> Value {
    need(cmd[0]);
    let d = scratch!(name);
    let out = format!("{name}.hltrace");
    // The program's own output shares standard output with the summary: read the figures
    // with trace-info instead. No call sites: bytes per event are the event encoding's.
    let mut args = vec!["trace", "--stack-depth", "0", "-o", &out, "--"];
    args.extend_from_slice(cmd);
    let mut h = Heaplab::new(&args).dir(&d).envs(env);
    if let Some(text) = stdin {
        h = h.stdin(text);
    }
    let r = h.run();
    assert_eq!(r.code, 0, "{name}: {}", r.stderr);
    let v = info(&d, &out);
    let ours = alloc_calls(&v);
    let theirs = heaptrack_count(&d, cmd, stdin, env);
    assert!(
        theirs + slack >= ours && theirs <= ours + 1 + slack,
        "{name}: heaplab counted {ours} allocation calls, heaptrack {theirs}"
    );
    plan_and_check(&d, &out);
    v
}

#[test]
fn sqlite3_matches_heaptrack() {
    let script = "create table t(a, b);\n\
        with recursive c(x) as (select 1 union all select x + 1 from c where x < 3000) insert into t select x, hex(randomblob(16)) from c;\n\
        create index i on t(b);\nselect count(*) from t;\n";
    let v = real_program("sqlite3", &["sqlite3", ":memory:"], Some(script), 0, &[]);
    assert!(v["events"].as_u64().unwrap() > 5000);
    assert!(v["bytes_per_event"].as_f64().unwrap() <= 6.0, "{}", v["bytes_per_event"]);
}

#[test]
fn python3_matches_heaptrack_and_records_call_sites() {
    let code = "import json\nd = [{'k': i, 'v': str(i) * 3} for i in range(3000)]\nprint(len(json.loads(json.dumps(d))))";
    // Debian's python3, the one `make test` installs: a version manager's shim would be a
    // script that execs the real interpreter, a different process tree.
    let py = "/usr/bin/python3";
    // Set per run, not on the test process: every test of this binary shares its environment.
    let hashseed = [("PYTHONHASHSEED", "0")];
    let v = real_program("python3", &[py, "-c", code], None, 4, &hashseed);
    assert!(v["events"].as_u64().unwrap() > 1000);
    let d = scratch!("python3-sites");
    let r = Heaplab::new(&["trace", "--stack-depth", "6", "-o", "p.hltrace", "--", py, "-c", code]).dir(&d).envs(&hashseed).run();
    assert_eq!(r.code, 0, "{}", r.stderr);
    let v = info(&d, "p.hltrace");
    assert!(v["call_sites"].as_u64().unwrap() > 10, "{v}");
    assert!(v["modules"].as_u64().unwrap() > 1, "module map recorded");
}

#[test]
fn jq_matches_heaptrack() {
    let input: String = (0..2000).map(|i| format!("{{\"id\":{i},\"tags\":[\"a{i}\",\"b\"]}}\n")).collect();
    real_program("jq", &["jq", "-c", "select(.id % 3 == 0) | .tags"], Some(&input), 0, &[]);
}

#[test]
fn xz_and_gzip_match_heaptrack() {
    let input: String = (0..20000).map(|i| format!("line {i} {}\n", i * 7919 % 1000)).collect();
    let v = real_program("xz", &["xz", "-3", "-c"], Some(&input), 0, &[]);
    assert!(v["peak_live_bytes"].as_u64().unwrap() > 1 << 20, "xz -3 allocates megabytes");
    real_program("gzip", &["gzip", "-c"], Some(&input), 0, &[]); // gzip works in static buffers: few calls

}

#[test]
fn forking_shell_pipeline_traces_every_process() {
    need("sh");
    need("xz");
    let d = scratch!("pipeline");
    let v = trace_summary(&d, &["-o", "p.hltrace", "--", "sh", "-c", "seq 2000 | sort -r | xz -1 > /dev/null"]);
    // Processes that made no heap call are listed without a file.
    let kids: Vec<&Value> = v["children"].as_array().unwrap().iter().filter(|k| k["file"].is_string()).collect();
    let exes: Vec<&str> = kids.iter().map(|k| k["exe"].as_str().unwrap()).collect();
    for want in ["seq", "sort", "xz"] {
        assert!(exes.iter().any(|e| e.ends_with(want)), "no trace of {want}: {exes:?}");
    }
    for k in &kids {
        let file = k["file"].as_str().unwrap();
        let i = info(&d, file);
        assert!(i["damage"].is_null(), "{file}: {}", i["status"]);
    }
    let xz = kids.iter().find(|k| k["exe"].as_str().unwrap().ends_with("xz")).unwrap();
    // The run's index lists every process and reads like a trace.
    let index = v["index"].as_str().expect("a run of several processes has an index");
    assert_eq!(index, "p.hlrun");
    let r = heaplab_in(&d, &["trace-info", index, "--json", "--process", "xz"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let run: Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(run["processes"].as_array().unwrap().len(), v["children"].as_array().unwrap().len() + 1);
    assert_eq!(run["selected"]["events"], xz["events"]);
    let r = heaplab_in(&d, &["convert", index, "--process", "xz", "-o", "xz.csv"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let r = heaplab_in(&d, &["convert", index, "--process", "no-such-program", "-o", "none.csv"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("no-such-program") && !d.join("none.csv").exists(), "{}", r.stderr);
    plan_and_check(&d, xz["file"].as_str().unwrap());
}

#[test]
fn the_programs_output_is_its_own_byte_for_byte() {
    need("xz");
    let d = scratch!("stdout");
    let input: Vec<u8> = (0..200_000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
    std::fs::write(d.join("in.bin"), &input).unwrap();
    let plain = Command::new("xz").args(["-c", "in.bin"]).current_dir(&d).output().unwrap();
    assert!(plain.status.success());
    for extra in [&[][..], &["--json"][..]] {
        let mut args = vec!["trace", "-o", "x.hltrace"];
        args.extend_from_slice(extra);
        args.extend_from_slice(&["--", "xz", "-c", "in.bin"]);
        let out = Command::new(BIN).args(&args).current_dir(&d).env_remove("LD_PRELOAD").output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
        assert!(out.stdout == plain.stdout, "{extra:?}: the traced xz's output differs from the plain one ({} vs {} bytes)", out.stdout.len(), plain.stdout.len());
        assert!(String::from_utf8_lossy(&out.stderr).contains("x.hltrace"), "the summary goes to standard error");
    }
    // A pipeline: what comes out is what the program wrote, nothing more.
    let r = Heaplab::new(&["trace", "-o", "c.hltrace", "--", "cat"]).dir(&d).stdin("1\n2\n3\n").run();
    assert_eq!((r.code, r.stdout.as_str()), (0, "1\n2\n3\n"), "{}", r.stderr);
}

#[test]
fn a_shim_started_interpreter_is_found_through_the_run_index() {
    need("python3");
    let d = scratch!("shim");
    // A shim as version managers install them: a shell script that execs the interpreter.
    // PYTHONMALLOC=malloc: every object is a heap call, so the interpreter has the most events.
    std::fs::write(d.join("py"), "#!/bin/sh\nPYTHONMALLOC=malloc exec python3 \"$@\"\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(d.join("py"), std::fs::Permissions::from_mode(0o755)).unwrap();
    let script = "import json\nx = [json.dumps({'k': i, 'v': [i] * 5}) for i in range(20000)]\n";
    let v = trace_summary(&d, &["-o", "run.hltrace", "--", "./py", "-c", script]);
    assert_eq!(v["index"], "run.hlrun", "{v}");
    let main = v["main"].as_str().unwrap();
    let r = heaplab_in(&d, &["trace-info", "run.hlrun", "--json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let run: Value = serde_json::from_str(&r.stdout).unwrap();
    assert!(run["selected"]["exe"].as_str().unwrap().contains("python3"), "the process with the most events is the interpreter: {}", run["selected"]["exe"]);
    assert!(run["selected"]["file"].as_str().unwrap().ends_with(main.rsplit('/').next().unwrap()));
    let r = heaplab_in(&d, &["convert", "run.hlrun", "-o", "run.csv"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stderr.contains("python3") && r.stderr.contains("most events"), "the reader says which process it took: {}", r.stderr);
    // --only: the named program alone is traced, and it gets the -o name.
    let v = trace_summary(&d, &["--only", "python3", "-o", "only.hltrace", "--", "./py", "-c", script]);
    assert!(v["exe"].as_str().unwrap().contains("python3"), "{}", v["exe"]);
    assert!(v["events"].as_u64().unwrap() > 20_000);
    assert!(v["index"].is_null(), "one process traced: no index");
    let r = heaplab_in(&d, &["trace", "--only", "no-such-name", "-o", "none.hltrace", "--", "./py", "-c", "1"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("--only") && !d.join("none.hltrace").exists(), "{}", r.stderr);
}

#[test]
fn caps_end_a_runaway_program_with_a_readable_trace() {
    let d = scratch!("caps");
    let t0 = std::time::Instant::now();
    let r = heaplab_in(&d, &["trace", "--max-time", "1.5", "-o", "t.hltrace", "--", &prog("misbehave"), "forever"]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(t0.elapsed().as_secs_f64() < 10.0, "the duration cap ended the program");
    assert!(r.stderr.contains("--max-time"), "{}", r.stderr);
    assert!(info(&d, "t.hltrace")["events"].as_u64().unwrap() > 1000);
    let r = heaplab_in(&d, &["trace", "--max-size", "2MiB", "-o", "s.hltrace", "--", &prog("misbehave"), "forever"]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(r.stderr.contains("--max-size"), "{}", r.stderr);
    let size = std::fs::metadata(d.join("s.hltrace")).unwrap().len();
    assert!((2 << 20..64 << 20).contains(&size), "{size} bytes");
    assert!(info(&d, "s.hltrace")["events"].as_u64().unwrap() > 100_000);
    for bad in [&["--max-time", "0"][..], &["--max-time", "1e308"], &["--max-size", "0"], &["--max-size", "lots"]] {
        let mut args = vec!["trace", "-o", "b.hltrace"];
        args.extend_from_slice(bad);
        args.extend_from_slice(&["--", "true"]);
        let r = heaplab_in(&d, &args);
        assert_eq!(r.code, 2, "{bad:?}: {}", r.stderr);
    }
}

/// Runs `heaplab trace` on `cmd` in a process group of its own, as a shell runs a job.
fn spawn_traced(dir: &Path, out: &str, cmd: &[&str]) -> std::process::Child {
    use std::os::unix::process::CommandExt;
    let mut c = Command::new(BIN);
    c.args(["trace", "-o", out, "--"]).args(cmd).current_dir(dir).env_remove("LD_PRELOAD").process_group(0);
    c.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    c.spawn().unwrap()
}

/// The pid of heaplab's child (the traced program), once it runs.
fn program_of(heaplab: u32) -> String {
    let t0 = std::time::Instant::now();
    loop {
        let kids = std::fs::read_to_string(format!("/proc/{heaplab}/task/{heaplab}/children")).unwrap_or_default();
        if let Some(pid) = kids.split_whitespace().next() {
            return pid.to_string();
        }
        assert!(t0.elapsed().as_secs() < 20, "heaplab started no program");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

fn alive(pid: &str) -> bool {
    // A zombie is gone for our purpose: it runs no more.
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| !s.rsplit_once(')').is_some_and(|(_, r)| r.trim_start().starts_with('Z')))
}

#[test]
fn signals_reach_the_program_and_the_trace_stays_at_the_output() {
    need("sh");
    let d = scratch!("signals");
    // The program starts with the default dispositions: nothing ignored.
    let r = heaplab_in(&d, &["trace", "-o", "g.hltrace", "--", "grep", "SigIgn", "/proc/self/status"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let ignored = u64::from_str_radix(r.stdout.split_whitespace().nth(1).unwrap(), 16).unwrap();
    assert_eq!(ignored & 0b110, 0, "SIGINT and SIGQUIT are not ignored: {}", r.stdout);
    // Ctrl-C is SIGINT to the whole process group; the others go to heaplab alone.
    for (sig, to_group, out) in [("INT", true, "int.hltrace"), ("TERM", false, "term.hltrace"), ("HUP", false, "hup.hltrace")] {
        let child = spawn_traced(&d, out, &[&prog("misbehave"), "forever"]);
        let program = program_of(child.id());
        // Time for more than 1,000 events, on a loaded machine too.
        std::thread::sleep(std::time::Duration::from_millis(1000));
        let target = if to_group { format!("-{}", child.id()) } else { child.id().to_string() };
        assert!(Command::new("kill").args([&format!("-{sig}"), "--", &target]).status().unwrap().success());
        let o = child.wait_with_output().unwrap();
        assert_eq!(o.status.code(), Some(2), "SIG{sig}: {}", String::from_utf8_lossy(&o.stderr));
        assert!(!alive(&program), "SIG{sig}: the program still runs");
        let v = info(&d, out);
        assert!(v["events"].as_u64().unwrap() > 1000, "SIG{sig}: {v}");
    }
    // SIGKILL to heaplab: the program does not outlive it, and the trace is at the output.
    let child = spawn_traced(&d, "kill.hltrace", &[&prog("misbehave"), "forever"]);
    let program = program_of(child.id());
    std::thread::sleep(std::time::Duration::from_millis(1000));
    assert!(Command::new("kill").args(["-KILL", &child.id().to_string()]).status().unwrap().success());
    let _ = child.wait_with_output();
    let t0 = std::time::Instant::now();
    while alive(&program) && t0.elapsed().as_secs() < 10 {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(!alive(&program), "the program outlived a killed heaplab");
    assert!(info(&d, "kill.hltrace")["events"].as_u64().unwrap() > 1000);
}

#[test]
fn a_failed_exec_is_not_reported_as_an_exec() {
    let d = scratch!("badexec");
    let v = trace_ok(&d, "b.hltrace", &[&prog("misbehave"), "badexec"]);
    assert_eq!(calls(&v, "malloc"), 601, "the events after the failed exec are kept");
    assert!(v["status"].as_str().unwrap().contains("process exited"), "{}", v["status"]);
    assert_eq!(v["complete"], true);
}

#[test]
fn an_unwritable_output_directory_is_a_usage_error() {
    let d = scratch!("unwritable");
    for out in ["/proc/heaplab-test.hltrace", "/nonexistent-dir/x.hltrace"] {
        let r = heaplab_in(&d, &["trace", "-o", out, "--", "true"]);
        assert_eq!(r.code, 2, "{out}: {}", r.stderr);
        assert!(!r.stderr.contains("statically linked"), "{out}: {}", r.stderr);
    }
}

#[test]
fn compressed_traces_read_like_the_others() {
    let d = scratch!("compress");
    // One worker: the two runs compared must allocate in the same order, and two workers
    // interleave differently from run to run (the peak of live bytes then differs).
    let plain = trace_summary(&d, &["-o", "p.hltrace", "--", &prog("threads"), "1", "600"]);
    let z = trace_summary(&d, &["--compress", "-o", "z.hltrace", "--", &prog("threads"), "1", "600"]);
    let head = std::fs::read(d.join("z.hltrace")).unwrap();
    assert_eq!(&head[..4], &[0x28, 0xB5, 0x2F, 0xFD], "a zstd frame, under the name given");
    assert!(z["file_bytes"].as_u64().unwrap() * 2 < plain["file_bytes"].as_u64().unwrap(), "{} vs {}", z["file_bytes"], plain["file_bytes"]);
    let (a, b) = (info(&d, "p.hltrace"), info(&d, "z.hltrace"));
    for key in ["events", "calls", "peak_live_bytes", "threads"] {
        assert_eq!(a[key], b[key], "{key}");
    }
    plan_and_check(&d, "z.hltrace");
    // Through a pipe too: the input layer decompresses what it reads once.
    let r = Heaplab::new(&["stats", "-"]).dir(&d).stdin(String::from_utf8_lossy(&[]).into_owned()).run();
    assert_eq!(r.code, 2, "an empty input is refused: {}", r.stderr);
    let mut c = Command::new(BIN);
    c.args(["convert", "-", "-o", "piped.csv"]).current_dir(&d).stdin(std::fs::File::open(d.join("z.hltrace")).unwrap());
    assert!(c.status().unwrap().success());
    let r = heaplab_in(&d, &["replay", "z.hltrace", "-a", "glibc", "-o", "z.hlplaced"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
}
