//! The native stack walker (`native/unwind.c`) against the reference unwinder, glibc's
//! `backtrace()` (libgcc's DWARF unwinder, which decodes every frame's CFI afresh).
//!
//! Two levels: a C test program (`tests/native/unwind_check.c`) walks its own stack with both at
//! each checkpoint (deep, recursive, inlined, alloca'd and huge frames, a shared library, libc's
//! qsort calling back, threads, a signal handler), compiled with and without frame pointers at
//! several optimisation levels; real traces of interpreters and other programs, recorded once with the walker and once with `HEAPLAB_UNWIND=backtrace`, must give the same
//! call stacks.

use heaplab_trace::context::ModuleMap;
use heaplab_trace::launch::{launch, LaunchOptions};
use heaplab_trace::TraceReader;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;

fn native() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("native")
}
fn test_sources() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/native")
}
fn scratch(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("unwind-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn cc(args: &[&str]) {
    let out = Command::new("cc").args(args).output().expect("cc (the Makefile's trace-deps install gcc)");
    assert!(out.status.success(), "cc {}: {}", args.join(" "), String::from_utf8_lossy(&out.stderr));
}

/// Builds the check program with `main_flags` and its shared library with `lib_flags`.
fn build_check(dir: &Path, main_flags: &str, lib_flags: &str) -> PathBuf {
    let lib = dir.join("libunwind_lib.so");
    let src = test_sources();
    let mut a: Vec<&str> = lib_flags.split_whitespace().collect();
    let lib_src = src.join("unwind_lib.c");
    let lib_s = lib.to_str().unwrap();
    a.extend(["-shared", "-fPIC", "-o", lib_s, lib_src.to_str().unwrap()]);
    cc(&a);
    let exe = dir.join("unwind_check");
    let (inc, check_src, unwind_src) = (format!("-I{}", native().display()), src.join("unwind_check.c"), native().join("unwind.c"));
    let rpath = format!("-Wl,-rpath,{}", dir.display());
    let mut a: Vec<&str> = main_flags.split_whitespace().collect();
    a.extend(["-Wall", "-Wextra", "-Werror", &inc, "-o", exe.to_str().unwrap(), check_src.to_str().unwrap(), unwind_src.to_str().unwrap(), lib_s, &rpath, "-lpthread"]);
    cc(&a);
    exe
}

#[test]
fn walks_equal_backtrace_with_and_without_frame_pointers() {
    let builds = [
        ("-O2 -fomit-frame-pointer", "-O2 -fno-omit-frame-pointer"),
        ("-O2 -fno-omit-frame-pointer", "-O2 -fomit-frame-pointer"),
        ("-O0", "-O3"),
        ("-O3", "-O0"),
        ("-Os -fno-asynchronous-unwind-tables -funwind-tables", "-O1"),
    ];
    for (i, (main_flags, lib_flags)) in builds.iter().enumerate() {
        let dir = scratch(&format!("check{i}"));
        let exe = build_check(&dir, main_flags, lib_flags);
        // 64 frames (what the tracer asks for at most), then the whole stack.
        for args in [&[][..], &["all"][..]] {
            let out = Command::new(&exe).args(args).output().unwrap();
            let text = String::from_utf8_lossy(&out.stdout);
            assert!(out.status.success(), "program {main_flags}, library {lib_flags}, {args:?}:\n{text}{}", String::from_utf8_lossy(&out.stderr));
            // Only the signal handler's walk may fall back to backtrace(): everything else was
            // walked by the cached rules (the program checks this itself; the line says so).
            assert!(text.contains("failed 0") && text.contains("(before the signal: 0)"), "{text}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

/// A program to trace: its name, command line and environment.
type Program<'a> = (&'a str, &'a [&'a str], &'a [(&'a str, &'a str)]);

/// Every allocation's call stack in a traced run, as stable per-frame keys, in order.
fn traced_stacks(dir: &Path, name: &str, cmd: &[&str], env: &[(&str, &str)], reference: bool) -> Vec<u64> {
    let out = dir.join(format!("{name}.hltrace"));
    let command: Vec<String> = cmd.iter().map(|s| s.to_string()).collect();
    let opts = LaunchOptions { stack_depth: 32, follow_exec: false, ..Default::default() };
    let run = launch(&command, &out, &opts, |c| {
        c.current_dir(dir).envs(env.iter().copied()).stdout(std::process::Stdio::null());
        // The two runs differ only in this variable's value, of the same length (Python copies
        // the environment into its heap), and run without address-space randomisation (objects
        // hashed by address would be visited in another order).
        unsafe {
            c.pre_exec(|| {
                libc::personality(libc::ADDR_NO_RANDOMIZE as libc::c_ulong);
                Ok(())
            });
        }
        c.env("HEAPLAB_UNWIND", if reference { "backtrace" } else { "dwarf-cfi" })
    })
    .unwrap_or_else(|e| panic!("{name}: {e:?}"));
    assert!(run.status.success(), "{name}: {:?}", run.status);
    let mut r = TraceReader::open(out.to_str().unwrap()).unwrap();
    let sites: Vec<u32> = r.by_ref().filter(|s| s.half != heaplab_trace::Half::Release && s.event.op.name() != "free").map(|s| s.event.site).collect();
    let ending = r.into_ending();
    let map = ModuleMap::new(&ending.trailer.as_ref().expect("a complete trace").modules);
    let mut keys = Vec::with_capacity(sites.len());
    let mut frames_total = 0usize;
    for id in sites {
        let site = ending.sites.get(&id).unwrap_or_else(|| panic!("{name}: site {id} is not defined"));
        frames_total += site.frames.len();
        keys.push(map.context_key(&site.frames));
    }
    assert!(!keys.is_empty() && frames_total / keys.len() >= 4, "{name}: stacks of {} frames on average", frames_total / keys.len().max(1));
    keys
}

#[test]
fn traced_stacks_equal_the_reference_unwinders() {
    let dir = scratch("traces");
    let python = ["/usr/bin/python3", "-c", "import json\nd = [{'k': i, 'v': str(i) * 3} for i in range(3000)]\nprint(len(json.loads(json.dumps(d))))"];
    let sql = "create table t(a, b);\nwith recursive c(x) as (select 1 union all select x + 1 from c where x < 3000)\ninsert into t select x, x * 7 from c;\ncreate index i on t(b);\nselect count(*) from t;\n";
    std::fs::write(dir.join("s.sql"), sql).unwrap();
    let programs: [Program; 3] = [
        ("python3", &python, &[("PYTHONMALLOC", "malloc"), ("PYTHONHASHSEED", "0")]),
        ("sqlite3", &["sqlite3", ":memory:", ".read s.sql"], &[]),
        ("jq", &["jq", "-n", "[range(3000) | {a: ., b: [., .]}] | map(.b) | add | length"], &[]),
    ];
    for (name, cmd, env) in programs {
        if heaplab_trace::launch::find_program(cmd[0]).is_none() {
            eprintln!("skipped {name}: not installed");
            continue;
        }
        let fast = traced_stacks(&dir, &format!("{name}-w"), cmd, env, false);
        let reference = traced_stacks(&dir, &format!("{name}-b"), cmd, env, true);
        // The walker's table is one more mapping, which moves the program's own addresses: a
        // program that hashes by address may make a call or two more or fewer. So: the same
        // distinct stacks, the same calls within 0.1%, and in order up to the first such call.
        let distinct = |v: &[u64]| v.iter().copied().collect::<std::collections::BTreeSet<u64>>();
        let (a, b) = (distinct(&fast), distinct(&reference));
        assert_eq!(a.symmetric_difference(&b).count(), 0, "{name}: {} stacks of the walker's are not the reference's, {} the other way", a.difference(&b).count(), b.difference(&a).count());
        assert!(fast.len().abs_diff(reference.len()) * 1000 <= reference.len(), "{name}: {} allocations, the reference {}", fast.len(), reference.len());
        let same_prefix = fast.iter().zip(&reference).take_while(|(x, y)| x == y).count();
        assert!(same_prefix * 10 >= reference.len(), "{name}: stacks differ from allocation {same_prefix} of {}", reference.len());
        eprintln!("{name}: {} allocations, {} distinct stacks, the first {same_prefix} in the same order", fast.len(), a.len());
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Every allocation of each program walked both ways (`HEAPLAB_UNWIND=check`): the tracer
/// writes a line to stderr for a walk whose two stacks differ.
#[test]
fn every_allocation_walks_as_backtrace_does() {
    let dir = scratch("check");
    let sql = "create table t(a, b);\nwith recursive c(x) as (select 1 union all select x + 1 from c where x < 2000)\ninsert into t select x, x * 7 from c;\ncreate index i on t(b);\n";
    std::fs::write(dir.join("s.sql"), sql).unwrap();
    std::fs::write(dir.join("s.bc"), "scale=40; s=0; for (i=1; i<=300; i++) s = s + sqrt(i); s\n").unwrap();
    let programs: [Program; 7] = [
        ("python3", &["/usr/bin/python3", "-c", "import json, re\nd = [{'k': i, 'v': str(i) * 3} for i in range(2000)]\nprint(len(json.loads(json.dumps(d))), len(re.findall('1+', str(d))))"], &[("PYTHONMALLOC", "malloc")]),
        ("ruby", &["ruby", "-e", "h = {}; 3000.times { |i| h[\"k#{i}\"] = [i, 'v' * (30 + i % 20)] }; puts h.map { |k, v| k + v[1] }.join.size"], &[]),
        ("perl", &["perl", "-e", "my %h; $h{\"k$_\"} = [$_, 'v' x ($_ % 30)] for 1..3000; print join(',', sort keys %h) =~ tr/,//, \"\\n\";"], &[]),
        ("node", &["node", "-e", "const a = []; for (let i = 0; i < 3000; i++) a.push({k: i, s: 'v' + i}); console.log(JSON.stringify(a).length)"], &[]),
        ("sqlite3", &["sqlite3", ":memory:", ".read s.sql"], &[]),
        ("jq", &["jq", "-n", "[range(2000) | {a: ., b: [., .]}] | map(.b) | add | length"], &[]),
        ("bc", &["bc", "-l", "s.bc"], &[]),
    ];
    for (name, cmd, env) in programs {
        if heaplab_trace::launch::find_program(cmd[0]).is_none() {
            eprintln!("skipped {name}: not installed");
            continue;
        }
        let out = dir.join(format!("{name}.hltrace"));
        let err = dir.join(format!("{name}.err"));
        let command: Vec<String> = cmd.iter().map(|s| s.to_string()).collect();
        let opts = LaunchOptions { stack_depth: 64, follow_exec: false, ..Default::default() };
        let stderr = std::fs::File::create(&err).unwrap();
        let run = launch(&command, &out, &opts, |c| {
            c.current_dir(&dir).envs(env.iter().copied()).env("HEAPLAB_UNWIND", "check").stdin(std::process::Stdio::null()).stdout(std::process::Stdio::null()).stderr(stderr)
        })
        .unwrap_or_else(|e| panic!("{name}: {e:?}"));
        let said = std::fs::read_to_string(&err).unwrap();
        assert!(run.status.success(), "{name}: {:?}\n{said}", run.status);
        assert!(!said.contains("heaplab unwind mismatch"), "{name}:\n{said}");
        let mut r = TraceReader::open(out.to_str().unwrap()).unwrap();
        let allocations = r.by_ref().filter(|s| s.event.op.name() != "free").count();
        let sites = r.into_ending().sites.len();
        assert!(allocations > 1000 && sites > 20, "{name}: {allocations} allocations, {sites} sites");
        eprintln!("{name}: {allocations} allocations, {sites} stacks, each walked both ways");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
