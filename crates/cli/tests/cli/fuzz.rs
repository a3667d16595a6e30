//! Mutation fuzzing of every reader: seed files of every format heaplab reads (instance CSV,
//! placement CSV, .hlbin, .hltrace, .hlplaced, the placed CSV export) are made by heaplab itself,
//! mutated (bit flips, truncation, varint bombs, 2^63/2^64 values, NULs, long lines, CRLF, BOM,
//! duplicate and missing columns, spliced and swapped magic), and given to every reader command.
//!
//! Each run of the binary must end with exit code 0, 1 or 2 (no signal, no panic text, no
//! hang), within 2 GiB of address space, with a short stderr, and leave no output file (nor a
//! temporary one) behind after a non-zero exit. Commands must agree: the commands that read the
//! same format accept or refuse the same file (`stats`, `convert`, `plan` and `check` for
//! instances and placements; `convert`, `stats`, `plan`, `trace-info` and `replay` for traces;
//! `frag` and `convert` for placed files), and a file converted to CSV reads the same as before.
//!
//! Seeded and reproducible: the variables HEAPLAB_FUZZ_CASES (default 2000) and
//! HEAPLAB_FUZZ_SEED (default 1) choose the run; `make fuzz` runs a longer one. A failing input
//! is kept under target/tmp/fuzz-failures/ and the failure names its case and commands.
//!
//! The runs here are not the shared helper's: each is held to memory limits and its peak
//! resident memory is measured (wait4), which only this test needs.

use crate::common::{drain, try_prog, BIN};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Address space allowed to each run of heaplab.
const MEMORY_LIMIT: u64 = 2 << 30;
/// Address space allowed to `replay`, whose child reserves 2 GiB of tables it mostly never
/// touches; its resident memory is held to [`RSS_LIMIT`] like every run's.
const REPLAY_MEMORY_LIMIT: u64 = 6 << 30;
/// Peak resident memory allowed to each run (and the processes it waited for).
const RSS_LIMIT: u64 = 1 << 30;
/// A run taking longer than this has hung.
const HANG: Duration = Duration::from_secs(30);
/// Longest stderr accepted: error messages quote values short, however long the field.
const STDERR_LIMIT: usize = 4096;

/// splitmix64: small, seedable, good enough to pick mutations.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    fn chance(&mut self, one_in: usize) -> bool {
        self.below(one_in) == 0
    }
}

/// One finished run of heaplab.
struct Run {
    args: Vec<String>,
    code: i32,
    stdout: String,
    stderr: String,
}

/// Runs heaplab in `dir` under the memory limit, killing it if it hangs; problems with the run
/// itself (signal, hang, panic text, exit code, stderr size) go to `problems`.
// The child is reaped by wait4 (for its peak memory), which clippy does not see.
#[allow(clippy::zombie_processes)]
fn run(dir: &Path, args: &[&str], problems: &mut Vec<String>) -> Run {
    use std::os::unix::process::CommandExt;
    let limit = if args.first() == Some(&"replay") { REPLAY_MEMORY_LIMIT } else { MEMORY_LIMIT };
    let mut c = Command::new(BIN);
    c.args(args).current_dir(dir).env_remove("LD_PRELOAD").env_remove("RUST_BACKTRACE");
    c.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    // SAFETY: setrlimit is async-signal-safe; nothing else runs between fork and exec.
    unsafe {
        c.pre_exec(move || {
            let lim = libc::rlimit { rlim_cur: limit, rlim_max: limit };
            if libc::setrlimit(libc::RLIMIT_AS, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut child = c.spawn().expect("start heaplab");
    let out = drain(child.stdout.take().map(|p| Box::new(p) as _));
    let err = drain(child.stderr.take().map(|p| Box::new(p) as _));
    let t0 = Instant::now();
    // wait4 rather than Child::wait: it also gives the peak resident memory.
    let pid = child.id() as libc::pid_t;
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let status = loop {
        let mut raw = 0;
        // SAFETY: wait4 writes the status and usage we pass; the pid is our own child.
        let r = unsafe { libc::wait4(pid, &mut raw, libc::WNOHANG, &mut usage) };
        if r == pid {
            use std::os::unix::process::ExitStatusExt;
            break Some(std::process::ExitStatus::from_raw(raw));
        }
        assert!(r == 0, "wait4: {}", std::io::Error::last_os_error());
        if t0.elapsed() > HANG {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(1));
    };
    let rss = usage.ru_maxrss as u64 * 1024;
    let r = Run {
        args: args.iter().map(|s| s.to_string()).collect(),
        code: status.and_then(|s| s.code()).unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.join().unwrap_or_default()).into_owned(),
        stderr: String::from_utf8_lossy(&err.join().unwrap_or_default()).into_owned(),
    };
    let shown = || format!("heaplab {}", r.args.join(" "));
    let head = || r.stderr.chars().take(600).collect::<String>();
    match status {
        None => problems.push(format!("{}: still running after {HANG:?} (hang)", shown())),
        Some(s) if s.code().is_none() => {
            use std::os::unix::process::ExitStatusExt;
            problems.push(format!("{}: killed by signal {:?}: {}", shown(), s.signal(), head()));
        }
        Some(_) if !(0..=2).contains(&r.code) => problems.push(format!("{}: exit code {}: {}", shown(), r.code, head())),
        _ => {}
    }
    if r.stderr.contains("panicked") || r.stderr.contains("RUST_BACKTRACE") {
        problems.push(format!("{}: panicked: {}", shown(), head()));
    }
    if rss > RSS_LIMIT {
        problems.push(format!("{}: peak resident memory {} MiB (limit {} MiB)", shown(), rss >> 20, RSS_LIMIT >> 20));
    }
    if r.stderr.len() > STDERR_LIMIT {
        problems.push(format!("{}: {} bytes of stderr (limit {STDERR_LIMIT}): {}", shown(), r.stderr.len(), head()));
    }
    r
}

/// The seed files, made once by heaplab itself.
struct Seeds {
    files: Vec<(String, Vec<u8>)>,
    /// Whether the trace seeds exist (the tracer needs a C compiler at build time and `cc`).
    traces: bool,
}

fn make_seeds(dir: &Path) -> Seeds {
    let mut p = Vec::new();
    let ok = |args: &[&str], p: &mut Vec<String>| {
        let r = run(dir, args, p);
        assert_eq!(r.code, 0, "seed: heaplab {args:?}: {}", r.stderr);
    };
    ok(&["gen", "--kind", "aligned", "--buffers", "40", "--seed", "3", "-o", "inst.csv"], &mut p);
    ok(&["gen", "--kind", "malloc", "--buffers", "40", "--seed", "4", "-o", "malloc.csv"], &mut p);
    ok(&["convert", "inst.csv", "-o", "inst.hlbin"], &mut p);
    ok(&["plan", "inst.csv", "--time-limit", "0", "-o", "place.csv"], &mut p);
    ok(&["plan", "malloc.csv", "--time-limit", "0", "-o", "place.hlbin"], &mut p);
    let mut names = vec!["inst.csv", "malloc.csv", "inst.hlbin", "place.csv", "place.hlbin"];
    // A trace of two threads using every allocation function, and its replay under glibc.
    let threads = try_prog("threads");
    let traces = threads.is_some_and(|t| run(dir, &["trace", "-o", "t.hltrace", "--", &t, "2", "12"], &mut p).code == 0);
    if traces {
        ok(&["replay", "t.hltrace", "-a", "glibc", "-o", "t.hlplaced"], &mut p);
        ok(&["convert", "t.hlplaced", "-o", "t.placed.csv"], &mut p);
        names.extend(["t.hltrace", "t.hlplaced", "t.placed.csv"]);
    } else {
        eprintln!("fuzz: no trace seeds (cc or the tracer is unavailable); traces and placed files are not fuzzed");
    }
    assert!(p.is_empty(), "seeds: {p:?}");
    let files = names.iter().map(|n| (n.to_string(), std::fs::read(dir.join(n)).unwrap())).collect();
    Seeds { files, traces }
}

// ---- Mutations ----

const EXTREMES: [&str; 12] = [
    "",
    "-1",
    "0",
    "9223372036854775807",
    "9223372036854775808",
    "18446744073709551615",
    "18446744073709551616",
    "99999999999999999999999",
    "1e3",
    "0x10",
    " 7 ",
    "+5",
];

fn varint(mut v: u64) -> Vec<u8> {
    let mut out = Vec::new();
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
    out
}

/// A long run of digits: usually 64 KiB, now and then 8 MiB.
fn long_field(rng: &mut Rng) -> Vec<u8> {
    let n = if rng.chance(150) { 8 << 20 } else { 64 << 10 };
    vec![b'7'; n]
}

fn mutate_text(rng: &mut Rng, data: &[u8]) -> Vec<u8> {
    let text = String::from_utf8_lossy(data).into_owned();
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    if lines.is_empty() {
        lines.push(String::new());
    }
    let pick = rng.below(lines.len());
    match rng.below(12) {
        0 => {
            // A field set to an extreme or malformed value.
            let mut f: Vec<String> = lines[pick].split(',').map(str::to_string).collect();
            let k = rng.below(f.len());
            f[k] = EXTREMES[rng.below(EXTREMES.len())].to_string();
            lines[pick] = f.join(",");
        }
        1 => {
            // A duplicated column (header and every row).
            let k = rng.below(lines[0].split(',').count());
            for l in lines.iter_mut() {
                let v = l.split(',').nth(k).unwrap_or("").to_string();
                l.push(',');
                l.push_str(&v);
            }
        }
        2 => {
            // A missing column: from the header alone, or from every line.
            let k = rng.below(lines[0].split(',').count());
            let every = rng.chance(2);
            for (i, l) in lines.iter_mut().enumerate() {
                if i == 0 || every {
                    let mut f: Vec<&str> = l.split(',').collect();
                    if k < f.len() {
                        f.remove(k);
                    }
                    *l = f.join(",");
                }
            }
        }
        3 => {
            // A renamed column.
            let names = ["id", "lower", "upper", "size", "offset", "alignment", "requested", "job", "mapping", "start", "end", "usable", "address", "map_start", "ID", "sise", ""];
            let mut f: Vec<String> = lines[0].split(',').map(str::to_string).collect();
            let k = rng.below(f.len());
            f[k] = names[rng.below(names.len())].to_string();
            lines[0] = f.join(",");
        }
        4 => {
            // A long field or line.
            let long = String::from_utf8(long_field(rng)).unwrap();
            if rng.chance(2) {
                let mut f: Vec<String> = lines[pick].split(',').map(str::to_string).collect();
                let k = rng.below(f.len());
                f[k] = long;
                lines[pick] = f.join(",");
            } else {
                lines.insert(pick, long);
            }
        }
        5 => {
            // A duplicated line (repeated ids and jobs).
            let l = lines[pick].clone();
            lines.insert(rng.below(lines.len() + 1), l);
        }
        6 => {
            // Swapped lines.
            let other = rng.below(lines.len());
            lines.swap(pick, other);
        }
        7 => {
            // Blank or whitespace lines.
            lines.insert(rng.below(lines.len() + 1), [" ", "", "\t", ",", ",,,"][rng.below(5)].to_string());
        }
        8 => {
            // Too many or too few fields on one line.
            if rng.chance(2) {
                lines[pick].push_str(",1");
            } else if let Some(i) = lines[pick].rfind(',') {
                lines[pick].truncate(i);
            }
        }
        9 => lines.truncate(pick.max(1)),
        10 => {
            // Every value of a column extreme.
            let k = rng.below(lines[0].split(',').count());
            let v = EXTREMES[rng.below(EXTREMES.len())];
            for l in lines.iter_mut().skip(1) {
                let mut f: Vec<&str> = l.split(',').collect();
                if k < f.len() {
                    f[k] = v;
                }
                *l = f.join(",");
            }
        }
        _ => {
            // Only the header, or nothing.
            lines.truncate(if rng.chance(2) { 1 } else { 0 });
        }
    }
    let mut out = lines.join("\n");
    if !rng.chance(5) {
        out.push('\n');
    }
    let mut out = out.into_bytes();
    if rng.chance(6) {
        out = String::from_utf8_lossy(&out).replace('\n', "\r\n").into_bytes();
    }
    if rng.chance(8) {
        out.splice(0..0, [0xef, 0xbb, 0xbf]);
    }
    out
}

const MAGICS: [&[u8]; 3] = [b"HLBIN\0", b"HLTRACE\0", b"HLPLACE\0"];

fn mutate_bytes(rng: &mut Rng, data: &[u8]) -> Vec<u8> {
    let mut d = data.to_vec();
    let at = |rng: &mut Rng, d: &Vec<u8>| rng.below(d.len() + 1);
    match rng.below(12) {
        0 => {
            // Bit flips.
            for _ in 0..1 + rng.below(8) {
                if !d.is_empty() {
                    let i = rng.below(d.len());
                    d[i] ^= 1 << rng.below(8);
                }
            }
        }
        1 => {
            // Random bytes written over.
            for _ in 0..1 + rng.below(4) {
                if !d.is_empty() {
                    let i = rng.below(d.len());
                    d[i] = rng.next() as u8;
                }
            }
        }
        2 => {
            // Truncation, often near the end.
            let n = if rng.chance(2) { d.len().saturating_sub(1 + rng.below(40)) } else { rng.below(d.len() + 1) };
            d.truncate(n);
        }
        3 => {
            // A varint bomb: continuation bytes that never end, or end past 64 bits.
            let i = at(rng, &d);
            let n = 5 + rng.below(30);
            let mut bomb = vec![0xff; n];
            if rng.chance(2) {
                bomb.push(0x7f);
            }
            d.splice(i..i, bomb);
        }
        4 => {
            // 2^63, 2^64 - 1 as a varint, replacing bytes or inserted.
            let v = [1u64 << 63, u64::MAX, (1u64 << 63) - 1, 1u64 << 32][rng.below(4)];
            let i = at(rng, &d);
            let enc = varint(v);
            if rng.chance(2) {
                let end = (i + enc.len()).min(d.len());
                d.splice(i..end, enc);
            } else {
                d.splice(i..i, enc);
            }
        }
        5 => {
            // A fixed-width extreme over a header field (counts, sizes, page size, lengths).
            let v = [u64::MAX, 1u64 << 63, 0, 1u64 << 40, 3][rng.below(5)];
            let i = 6 + 2 * rng.below(30);
            if i + 8 <= d.len() {
                let w = [2usize, 4, 8][rng.below(3)];
                d[i..i + w].copy_from_slice(&v.to_le_bytes()[..w]);
            }
        }
        6 => {
            // NUL bytes.
            let i = at(rng, &d);
            let n = 1 + rng.below(16);
            d.splice(i..i, vec![0u8; n]);
        }
        7 => {
            // A range deleted.
            let i = at(rng, &d);
            let n = rng.below(64).min(d.len() - i);
            d.drain(i..i + n);
        }
        8 => {
            // A range duplicated (records repeated, spliced).
            let i = at(rng, &d);
            let n = rng.below(128).min(d.len() - i);
            let chunk = d[i..i + n].to_vec();
            let j = at(rng, &d);
            d.splice(j..j, chunk);
        }
        9 => {
            // Another format's magic.
            let m = MAGICS[rng.below(3)];
            let n = m.len().min(d.len());
            d.splice(0..n, m.iter().copied());
        }
        10 => {
            // A long run of bytes.
            let i = at(rng, &d);
            d.splice(i..i, long_field(rng));
        }
        _ => {
            // Junk appended after the end marker.
            let n = 1 + rng.below(32);
            d.extend((0..n).map(|_| rng.next() as u8));
        }
    }
    d
}

/// A mutated file: text seeds get text and byte mutations, binary seeds byte mutations.
fn mutate(rng: &mut Rng, seed: &[u8]) -> Vec<u8> {
    let is_text = !MAGICS.iter().any(|m| seed.starts_with(m));
    let mut d = seed.to_vec();
    for _ in 0..1 + rng.below(3) {
        d = if is_text && !rng.chance(4) { mutate_text(rng, &d) } else { mutate_bytes(rng, &d) };
    }
    d
}

// ---- One case ----

fn has_column(path: &Path, name: &str) -> bool {
    std::fs::read_to_string(path).ok().and_then(|t| t.lines().next().map(|h| h.split(',').any(|c| c == name))).unwrap_or(false)
}

/// Runs every reader command on `input` (in `dir`, which holds nothing else) and returns the
/// problems found.
fn check_case(dir: &Path, input: &str, data: &[u8], with_replay: bool) -> Vec<String> {
    let mut p = Vec::new();
    let stats = run(dir, &["stats", input, "--json"], &mut p);
    let convert = run(dir, &["convert", input, "-o", "conv.csv"], &mut p);
    let plan = run(dir, &["plan", input, "--time-limit", "0", "-o", "plan.csv"], &mut p);
    let check = run(dir, &["check", input], &mut p);
    let info = run(dir, &["trace-info", input], &mut p);
    let frag = run(dir, &["frag", input, "--json"], &mut p);
    let replay = with_replay.then(|| run(dir, &["replay", input, "-a", "glibc", "-o", "re.hlplaced"], &mut p));
    // Outputs exist exactly when their command succeeded; no temporary file is left.
    let outputs = [("conv.csv", &convert), ("plan.csv", &plan)].into_iter().chain(replay.as_ref().map(|r| ("re.hlplaced", r)));
    for (out, r) in outputs {
        if dir.join(out).exists() != (r.code == 0) {
            p.push(format!("heaplab {}: exit {} but {out} {}", r.args.join(" "), r.code, if r.code == 0 { "missing" } else { "left behind" }));
        }
    }
    let agree = |p: &mut Vec<String>, what: &str, ok: bool, runs: &[&Run]| {
        if !ok {
            let codes: Vec<String> = runs.iter().map(|r| format!("{} → {} {}", r.args[0], r.code, r.stderr.lines().next().unwrap_or(""))).collect();
            p.push(format!("commands disagree ({what}): {}", codes.join("; ")));
        }
    };
    let kind = MAGICS.iter().position(|m| data.starts_with(m));
    match kind {
        // A trace: every command that converts it agrees; trace-info reads whatever they read.
        Some(1) => {
            agree(&mut p, "stats, convert and plan convert a trace alike", stats.code == convert.code && plan.code == convert.code, &[&stats, &convert, &plan]);
            agree(&mut p, "a trace convert reads, trace-info reads", convert.code != 0 || info.code == 0, &[&convert, &info]);
            if let Some(r) = &replay {
                agree(&mut p, "a trace replay reads, trace-info reads", r.code != 0 || info.code == 0, &[r, &info]);
                if r.code == 0 {
                    let f = run(dir, &["frag", "re.hlplaced"], &mut p);
                    agree(&mut p, "every placed file replay writes is valid", f.code == 0, &[r, &f]);
                }
            }
            agree(&mut p, "only trace readers take a trace", check.code == 2 && frag.code == 2, &[&check, &frag]);
        }
        // A placed file: frag and convert read it alike; its CSV export reads the same.
        Some(2) => {
            agree(&mut p, "a placed file frag reads, convert reads", frag.code != 0 || convert.code == 0, &[&frag, &convert]);
            if convert.code == 0 {
                let page = data.get(12..16).map_or(0, |b| u32::from_le_bytes(b.try_into().unwrap())).to_string();
                let again = run(dir, &["frag", "conv.csv", "--json", "--page-size", &page], &mut p);
                agree(&mut p, "a placed file and its CSV export read alike", again.code == frag.code, &[&frag, &again]);
                if frag.code == 0 && again.code == 0 {
                    let key = |r: &Run, k: &str| serde_json::from_str::<Value>(&r.stdout).ok().map(|v| v[k].clone());
                    for k in ["jobs", "external_area", "internal_area", "job_area"] {
                        agree(&mut p, &format!("'{k}' of a placed file and its CSV export"), key(&frag, k) == key(&again, k), &[&frag, &again]);
                    }
                }
            }
            agree(&mut p, "only placed-file readers take a placed file", stats.code == 2 && plan.code == 2 && check.code == 2 && info.code == 2, &[&stats, &plan, &check, &info]);
        }
        // An instance or placement (CSV or .hlbin), or a file that is none of these.
        _ => {
            agree(&mut p, "stats and convert read instances alike", stats.code == convert.code, &[&stats, &convert]);
            if stats.code == 0 {
                let placement = has_column(&dir.join("conv.csv"), "offset");
                agree(&mut p, "plan reads the instances stats reads (not placements)", (plan.code == 0) != placement, &[&stats, &plan]);
                agree(&mut p, "check reads the placements stats reads", (check.code != 2) == placement, &[&stats, &check]);
                let again = run(dir, &["stats", "conv.csv", "--json"], &mut p);
                let strip = |r: &Run| {
                    serde_json::from_str::<Value>(&r.stdout).ok().map(|mut v| {
                        v["input"] = Value::Null;
                        v
                    })
                };
                agree(&mut p, "an instance and its CSV conversion have the same stats", strip(&stats).is_some() && strip(&stats) == strip(&again), &[&stats, &again]);
            } else {
                agree(&mut p, "plan and check refuse what stats refuses", plan.code == 2 && check.code == 2, &[&stats, &plan, &check]);
            }
            agree(&mut p, "trace-info refuses what is not a trace", info.code == 2, &[&info]);
            agree(&mut p, "frag and instance readers never both accept a file", frag.code != 0 || stats.code == 2, &[&frag, &stats]);
            if let Some(r) = &replay {
                agree(&mut p, "replay refuses what is not a trace", r.code == 2, &[r]);
            }
        }
    }
    // Nothing but the input and the outputs of successful commands.
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let n = e.file_name().to_string_lossy().into_owned();
        if n.starts_with('.') {
            p.push(format!("temporary file {n} left behind"));
        }
    }
    p
}

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

#[test]
fn mutated_inputs_never_crash_hang_or_leave_files_and_commands_agree() {
    let cases = env_u64("HEAPLAB_FUZZ_CASES", 2000) as usize;
    let seed = env_u64("HEAPLAB_FUZZ_SEED", 1);
    let root = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("fuzz-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(root.join("seeds")).unwrap();
    let seeds = make_seeds(&root.join("seeds"));
    let failures_dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("fuzz-failures");
    let next = AtomicUsize::new(0);
    let failures: Mutex<Vec<String>> = Mutex::new(Vec::new());
    let workers = std::thread::available_parallelism().map_or(2, |n| n.get()).clamp(1, 4);
    let t0 = Instant::now();
    std::thread::scope(|s| {
        for w in 0..workers {
            let (root, seeds, next, failures, failures_dir) = (&root, &seeds, &next, &failures, &failures_dir);
            s.spawn(move || {
                let dir = root.join(format!("w{w}"));
                loop {
                    let case = next.fetch_add(1, Ordering::Relaxed);
                    if case >= cases || failures.lock().unwrap().len() >= 10 {
                        break;
                    }
                    // Every case has its own generator: a case reproduces alone, whatever the workers.
                    let mut rng = Rng(seed.wrapping_mul(0x1000_0000_01b3) ^ case as u64);
                    rng.next();
                    let (name, bytes) = &seeds.files[rng.below(seeds.files.len())];
                    let data = mutate(&mut rng, bytes);
                    let _ = std::fs::remove_dir_all(&dir);
                    std::fs::create_dir_all(&dir).unwrap();
                    // The input keeps its seed's extension: some commands choose by it.
                    let input = format!("in.{}", name.rsplit('.').next().unwrap_or("csv"));
                    std::fs::write(dir.join(&input), &data).unwrap();
                    let with_replay = seeds.traces && data.starts_with(b"HLTRACE\0");
                    let problems = check_case(&dir, &input, &data, with_replay);
                    if !problems.is_empty() {
                        std::fs::create_dir_all(failures_dir).unwrap();
                        let kept = failures_dir.join(format!("seed{seed}-case{case}-{input}"));
                        std::fs::write(&kept, &data).unwrap();
                        failures.lock().unwrap().push(format!("case {case} (from {name}, kept as {}):\n  {}", kept.display(), problems.join("\n  ")));
                    }
                }
                let _ = std::fs::remove_dir_all(&dir);
            });
        }
    });
    let failures = failures.into_inner().unwrap();
    eprintln!("fuzz: {cases} cases, seed {seed}, {workers} workers, {:.1} s", t0.elapsed().as_secs_f64());
    if failures.is_empty() {
        let _ = std::fs::remove_dir_all(&root);
    }
    assert!(failures.is_empty(), "{} failing cases (HEAPLAB_FUZZ_SEED={seed}):\n{}", failures.len(), failures.join("\n"));
}
