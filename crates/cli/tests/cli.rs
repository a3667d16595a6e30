//! End-to-end tests of the `heaplab` binary: bad input gets exit 2 with file, line and field and
//! leaves no output behind; plans are checked by `heaplab check` and by an independent quadratic
//! checker written here; the shared benchmark set is planned within a short time limit.

use std::path::{Path, PathBuf};
use std::process::Command;

struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

fn heaplab(args: &[&str]) -> Run {
    let out = Command::new(env!("CARGO_BIN_EXE_heaplab")).args(args).output().expect("run heaplab");
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

fn tmpdir(name: &str) -> PathBuf {
    // Under the build directory, replaced by the next run: nothing piles up in /tmp.
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("cli-{name}"));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.to_string_lossy().into_owned()
}

/// Independent oracle: parses a placement CSV (id,lower,upper,size,…,offset) by hand and checks
/// every pair, and returns the makespan.
fn brute_check(path: &str) -> u64 {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = text.lines();
    let head: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |n: &str| head.iter().position(|h| *h == n).unwrap();
    let (l, u, s, o) = (col("lower"), col("upper"), col("size"), col("offset"));
    let a = head.iter().position(|h| *h == "alignment");
    let rows: Vec<Vec<u64>> = lines.map(|x| x.split(',').map(|v| v.parse().unwrap()).collect()).collect();
    let mut makespan = 0;
    for (i, r) in rows.iter().enumerate() {
        makespan = makespan.max(r[o] + r[s]);
        if let Some(a) = a {
            assert_eq!(r[o] % r[a].max(1), 0, "misaligned row {i}");
        }
        for q in &rows[..i] {
            let time = r[l] < q[u] && q[l] < r[u];
            let addr = r[o] < q[o] + q[s] && q[o] < r[o] + r[s];
            assert!(!(time && addr), "clash between {r:?} and {q:?}");
        }
    }
    makespan
}

const GOOD: &str = "id,lower,upper,size\n0,0,10,4\n1,5,15,8\n2,10,20,4\n3,0,20,2\n";

#[test]
fn plan_writes_a_valid_placement_and_check_accepts_it() {
    let d = tmpdir("plan");
    let model = write(&d, "m.csv", GOOD);
    let out = d.join("p.csv").to_string_lossy().into_owned();
    let r = heaplab(&["plan", &model, "-o", &out, "--time-limit", "1"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains("makespan"), "{}", r.stdout);
    assert!(r.stdout.contains("algorithm"));
    assert_eq!(brute_check(&out), 14);
    let c = heaplab(&["check", &model, &out]);
    assert_eq!(c.code, 0, "{}{}", c.stdout, c.stderr);
    assert!(c.stdout.starts_with("valid"));
    assert_eq!(heaplab(&["check", &out]).code, 0);
}

#[test]
fn plan_json_has_the_summary_fields() {
    let d = tmpdir("json");
    let model = write(&d, "m.csv", GOOD);
    let r = heaplab(&["plan", &model, "--json", "--time-limit", "0.5"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    for k in ["n", "max_load", "makespan", "fragmentation_pct", "algorithm", "seconds", "optimal"] {
        assert!(v.get(k).is_some(), "missing {k} in {}", r.stdout);
    }
    assert_eq!(v["n"], 4);
    assert_eq!(v["max_load"], 14);
    assert_eq!(v["optimal"], true);
}

#[test]
fn semantics_in_makes_upper_inclusive() {
    let d = tmpdir("sem");
    // Under `in`, [0,5] and [5,9] share tick 5 and conflict; under inex they do not.
    let model = write(&d, "m.csv", "id,lower,upper,size\n0,0,5,10\n1,5,9,10\n");
    let j = |sem: &str| -> serde_json::Value {
        let r = heaplab(&["plan", &model, "--json", "--semantics", sem, "--time-limit", "0.2"]);
        assert_eq!(r.code, 0, "{}", r.stderr);
        serde_json::from_str(&r.stdout).unwrap()
    };
    assert_eq!(j("inex")["makespan"], 10);
    assert_eq!(j("ex")["makespan"], 10);
    assert_eq!(j("in")["makespan"], 20);
    let out = d.join("p.csv").to_string_lossy().into_owned();
    assert_eq!(heaplab(&["plan", &model, "--semantics", "in", "-o", &out]).code, 0);
    // Written lifetimes are converted to [lower, upper).
    assert!(std::fs::read_to_string(&out).unwrap().contains("1,5,10,10,"));
}

#[test]
fn bad_inputs_exit_2_name_the_place_and_leave_no_output() {
    let d = tmpdir("bad");
    let cases: &[(&str, &str, &[&str])] = &[
        ("missing column", "id,lower,size\n0,0,4\n", &[":1", "upper"]),
        ("unknown column", "id,lower,upper,size,colour\n0,0,1,4,3\n", &[":1", "colour"]),
        ("extra field", "id,lower,upper,size\n0,0,1,4,9\n", &[":2", "5"]),
        ("missing field", "id,lower,upper,size\n0,0,1\n", &[":2", "3"]),
        ("not an integer", "id,lower,upper,size\n0,0,1,4.5\n", &[":2", "size", "not an integer"]),
        ("negative", "id,lower,upper,size\n0,-3,1,4\n", &[":2", "lower", "negative"]),
        ("size zero", "id,lower,upper,size\n0,0,1,0\n", &[":2", "size"]),
        ("upper not after lower", "id,lower,upper,size\n0,0,1,4\n1,7,7,4\n", &[":3", "upper"]),
        ("duplicate id", "id,lower,upper,size\n5,0,1,4\n5,1,2,4\n", &[":3", "duplicate id 5", "line 2"]),
        ("alignment", "id,lower,upper,size,alignment\n0,0,1,4,12\n", &[":2", "alignment", "power of two"]),
        ("overflow", "id,lower,upper,size\n0,0,1,18446744073709551615\n1,0,1,2\n", &[":3", "2^64"]),
        ("too big", "id,lower,upper,size\n0,0,1,99999999999999999999\n", &[":2", "64 bits"]),
        ("empty", "", &["empty file"]),
        ("requested above size", "id,lower,upper,size,requested\n0,0,1,4,5\n", &[":2", "requested"]),
    ];
    for (name, text, needles) in cases {
        let model = write(&d, "m.csv", text);
        let out = d.join("out.csv");
        let r = heaplab(&["plan", &model, "-o", out.to_str().unwrap()]);
        assert_eq!(r.code, 2, "{name}: {}", r.stderr);
        assert!(r.stderr.contains(&model), "{name}: names the file: {}", r.stderr);
        for n in *needles {
            assert!(r.stderr.contains(n), "{name}: expected '{n}' in: {}", r.stderr);
        }
        assert!(!out.exists(), "{name}: left an output file");
        assert!(!r.stderr.contains("panicked"), "{name}: panicked");
    }
    let r = heaplab(&["plan", "/nonexistent/x.csv"]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("/nonexistent/x.csv"));
    let r = heaplab(&["plan", &write(&d, "ok.csv", GOOD), "--time-limit", "-1"]);
    assert_eq!(r.code, 2);
    let r = heaplab(&["plan", &write(&d, "ok.csv", GOOD), "--algorithm", "magic"]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("best-fit/size"));
    let r = heaplab(&["plan", &write(&d, "ok.csv", GOOD), "-o", "/nonexistent-dir/p.csv"]);
    assert_eq!(r.code, 2);
}

#[test]
fn binary_format_round_trips_and_rejects_damage() {
    let d = tmpdir("bin");
    let model = write(&d, "m.csv", "id,lower,upper,size,alignment\n7,3,10,4,4\n2,0,20,16,1\n9,15,30,8,8\n");
    let bin = d.join("m.hlbin").to_string_lossy().into_owned();
    assert_eq!(heaplab(&["convert", &model, "-o", &bin]).code, 0);
    let back = d.join("back.csv").to_string_lossy().into_owned();
    assert_eq!(heaplab(&["convert", &bin, "-o", &back]).code, 0);
    assert_eq!(std::fs::read_to_string(&back).unwrap(), std::fs::read_to_string(&model).unwrap());
    let placed = d.join("p.hlbin").to_string_lossy().into_owned();
    assert_eq!(heaplab(&["plan", &bin, "-o", &placed, "--time-limit", "0.2"]).code, 0);
    assert_eq!(heaplab(&["check", &model, &placed]).code, 0);
    let bytes = std::fs::read(&bin).unwrap();
    let cut = d.join("cut.hlbin");
    std::fs::write(&cut, &bytes[..bytes.len() - 9]).unwrap();
    let r = heaplab(&["stats", cut.to_str().unwrap()]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("truncated"), "{}", r.stderr);
    let mut wrong = bytes.clone();
    wrong[6] = 99; // version
    std::fs::write(&cut, &wrong).unwrap();
    let r = heaplab(&["stats", cut.to_str().unwrap()]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("version 99"), "{}", r.stderr);
}

#[test]
fn check_names_clashing_buffers_and_mismatches() {
    let d = tmpdir("check");
    let model = write(&d, "m.csv", GOOD);
    let clash = write(&d, "c.csv", "id,offset\n0,0\n1,2\n2,4\n3,12\n");
    let r = heaplab(&["check", &model, &clash]);
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    assert!(r.stdout.contains("buffers 0 and 1 clash"), "{}", r.stdout);
    let missing = write(&d, "missing.csv", "id,offset\n0,0\n1,4\n");
    let r = heaplab(&["check", &model, &missing]);
    assert_eq!(r.code, 1);
    assert!(r.stdout.contains("2 buffers of the instance have no offset"), "{}", r.stdout);
    let unknown = write(&d, "u.csv", "id,offset\n0,0\n1,4\n2,0\n3,12\n42,0\n");
    let r = heaplab(&["check", &model, &unknown]);
    assert_eq!(r.code, 1);
    assert!(r.stdout.contains("id 42 is not in the instance"), "{}", r.stdout);
    let lied = write(&d, "l.csv", "id,lower,upper,size,offset\n0,0,10,4,0\n1,5,15,8,4\n2,10,20,4,0\n3,0,20,1,12\n");
    let r = heaplab(&["check", &model, &lied]);
    assert_eq!(r.code, 1);
    assert!(r.stdout.contains("id 3 has lifetime"), "{}", r.stdout);
    let json = heaplab(&["check", &model, &clash, "--json"]);
    let v: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(v["valid"], false);
    assert_eq!(v["clashes"][0]["a"], 0);
    let bad = write(&d, "bad.csv", "id,offset\n0,x\n");
    assert_eq!(heaplab(&["check", &model, &bad]).code, 2);
}

#[test]
fn stats_reports_bounds_and_histograms() {
    let d = tmpdir("stats");
    let model = write(&d, "m.csv", GOOD);
    let r = heaplab(&["stats", &model, "--json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(v["n"], 4);
    assert_eq!(v["max_load"], 14);
    assert_eq!(v["conflicts"], 5); // 0-1, 0-3, 1-2, 1-3, 2-3; 0 and 2 only touch
    assert_eq!(v["components"], 1);
    let r = heaplab(&["stats", &model]);
    assert!(r.stdout.contains("size histogram"));
}

#[test]
fn gen_plan_plot_pipeline_on_every_kind() {
    let d = tmpdir("gen");
    for kind in ["random", "tight", "nn", "malloc", "equal", "nested", "ratio", "aligned"] {
        let inst = d.join(format!("{kind}.csv")).to_string_lossy().into_owned();
        let r = heaplab(&["gen", "--kind", kind, "--buffers", "300", "--seed", "3", "-o", &inst]);
        assert_eq!(r.code, 0, "{kind}: {}", r.stderr);
        let placed = d.join(format!("{kind}.placed.csv")).to_string_lossy().into_owned();
        let png = d.join(format!("{kind}.png")).to_string_lossy().into_owned();
        let r = heaplab(&["plan", &inst, "-o", &placed, "--time-limit", "0.5", "--json", "--plot", &png]);
        assert_eq!(r.code, 0, "{kind}: {}", r.stderr);
        let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
        assert_eq!(brute_check(&placed), v["makespan"].as_u64().unwrap(), "{kind}");
        assert!(v["makespan"].as_u64() >= v["max_load"].as_u64());
        assert!(std::fs::read(&png).unwrap().starts_with(b"\x89PNG"));
        let svg = d.join(format!("{kind}.svg")).to_string_lossy().into_owned();
        assert_eq!(heaplab(&["plot", &placed, "-o", &svg]).code, 0);
        assert!(std::fs::read_to_string(&svg).unwrap().contains("<svg"));
    }
    assert_eq!(heaplab(&["gen", "--kind", "nope", "--buffers", "3", "-o", "x.csv"]).code, 2);
    assert_eq!(heaplab(&["plot", &d.join("tight.placed.csv").to_string_lossy(), "-o", "x.jpg"]).code, 2);
}

#[test]
fn same_seed_same_plan() {
    let d = tmpdir("seed");
    let inst = d.join("r.csv").to_string_lossy().into_owned();
    assert_eq!(heaplab(&["gen", "--kind", "random", "--buffers", "500", "--seed", "9", "-o", &inst]).code, 0);
    let run = |name: &str| {
        let p = d.join(name).to_string_lossy().into_owned();
        let r = heaplab(&["plan", &inst, "-o", &p, "--iterations", "3", "--time-limit", "30", "--seed", "5"]);
        assert_eq!(r.code, 0, "{}", r.stderr);
        std::fs::read_to_string(p).unwrap()
    };
    assert_eq!(run("a.csv"), run("b.csv"));
}

/// The 13 shared instances: valid output within a short time limit, max load as published.
#[test]
fn shared_benchmarks_plan_validly() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/benchmarks");
    if !root.exists() {
        println!("skipped: ../shared not found");
        return;
    }
    let d = tmpdir("shared");
    let mut files: Vec<PathBuf> = Vec::new();
    for sub in ["minimalloc", "iopddl", "somas"] {
        for e in std::fs::read_dir(root.join(sub)).unwrap() {
            files.push(e.unwrap().path());
        }
    }
    files.sort();
    assert_eq!(files.len(), 13);
    for f in files {
        let name = f.file_name().unwrap().to_string_lossy().into_owned();
        let out = d.join(&name).to_string_lossy().into_owned();
        let t = std::time::Instant::now();
        // Boxing uses the whole time limit unless it proves a plan optimal: keep it short.
        let r = heaplab(&["plan", f.to_str().unwrap(), "-o", &out, "--json", "--time-limit", "0.2"]);
        assert_eq!(r.code, 0, "{name}: {}", r.stderr);
        assert!(t.elapsed().as_secs_f64() < 10.0, "{name} took {:?}", t.elapsed());
        let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
        if name.ends_with(".1048576.csv") {
            // 1,048,576 is the capacity a zero-waste packing is known for; the max load of C, D
            // and J is below it (1,039,360, 986,112 and 989,184), so only the bound is checked.
            assert!(v["max_load"].as_u64().unwrap() <= 1048576, "{name}");
        }
        assert_eq!(brute_check(&out), v["makespan"].as_u64().unwrap(), "{name}");
        assert_eq!(heaplab(&["check", f.to_str().unwrap(), &out]).code, 0, "{name}");
    }
}

#[test]
fn capacity_stops_at_a_fitting_plan_and_fails_with_exit_1_when_none_fits() {
    let d = tmpdir("capacity");
    // Max load 5, but the 4-aligned buffer must go at 0 or 4, so every plan needs 6 bytes.
    let model = write(&d, "m.csv", "id,lower,upper,size,alignment\n0,6,8,3,4\n1,3,13,2,2\n");
    let out = d.join("p.csv").to_string_lossy().into_owned();
    let r = heaplab(&["plan", &model, "-o", &out, "--capacity", "6", "--json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!((v["capacity"].as_u64(), v["fits"].as_bool()), (Some(6), Some(true)));
    assert!(brute_check(&out) <= 6);

    // Above the max load, below the optimum: the exact search proves it; nothing is written.
    std::fs::remove_file(&out).unwrap();
    let r = heaplab(&["plan", &model, "-o", &out, "--capacity", "5"]);
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    assert!(r.stdout.contains("does not fit: proven"), "{}", r.stdout);
    assert!(r.stderr.contains("proved that every plan needs at least 6 B"), "{}", r.stderr);
    assert!(!Path::new(&out).exists());

    // Below the max load: refused before planning (the JSON summary says so too).
    let r = heaplab(&["plan", &model, "-o", &out, "--capacity", "4"]);
    assert_eq!(r.code, 1);
    assert!(r.stderr.contains("m.csv") && r.stderr.contains("need 5 B"), "{}", r.stderr);
    assert!(r.stdout.is_empty() && !Path::new(&out).exists());
    let r = heaplab(&["plan", &model, "-o", &out, "--capacity", "4", "--json"]);
    assert_eq!(r.code, 1);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!((v["fits"].as_bool(), v["max_load"].as_u64()), (Some(false), Some(5)));
    assert!(!Path::new(&out).exists());

    // Units are read; nonsense is bad usage.
    let r = heaplab(&["plan", &model, "--capacity", "1KiB", "--json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains("\"capacity\": 1024"), "{}", r.stdout);
    let r = heaplab(&["plan", &model, "--capacity", "12 parsecs"]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("--capacity") && r.stderr.contains("parsecs"), "{}", r.stderr);

    // On the minimalloc suite at the capacity its files are named after, every instance fits.
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/benchmarks/minimalloc");
    if !root.exists() {
        println!("skipped: ../shared not found");
        return;
    }
    for name in ["D", "J"] {
        let f = root.join(format!("{name}.1048576.csv"));
        let out = d.join(format!("{name}.csv")).to_string_lossy().into_owned();
        let r = heaplab(&["plan", f.to_str().unwrap(), "-o", &out, "--capacity", "1MiB", "--time-limit", "10"]);
        assert_eq!(r.code, 0, "{name}: {}", r.stderr);
        assert!(brute_check(&out) <= 1 << 20, "{name}");
    }
}

// ---- Reliability (issue 23): inputs read once, flag ranges, outputs that are inputs, short
// messages, formats told by magic ----

/// Runs heaplab in `dir` with a deadline: a run that hangs is killed and fails the test instead
/// of hanging it. `shell` runs the line under bash (for `<(…)`), with HEAPLAB set to the binary.
fn heaplab_within(dir: &Path, secs: u64, args: &[&str], shell: bool) -> Run {
    let mut c = if shell {
        let mut c = Command::new("bash");
        c.arg("-c").arg(args.join(" ")).env("HEAPLAB", env!("CARGO_BIN_EXE_heaplab"));
        c
    } else {
        let mut c = Command::new(env!("CARGO_BIN_EXE_heaplab"));
        c.args(args);
        c
    };
    c.current_dir(dir).env_remove("LD_PRELOAD").stdin(std::process::Stdio::null());
    c.stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped());
    let mut child = c.spawn().expect("run heaplab");
    let t0 = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        if t0.elapsed().as_secs() >= secs {
            let _ = child.kill();
            let _ = child.wait();
            panic!("heaplab {args:?} still running after {secs} s: it hangs");
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let out = child.wait_with_output().unwrap();
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// A small trace (of `ls`) and its replay under glibc, in `dir`: t.hltrace, t.hlplaced.
fn trace_and_placed(dir: &Path) {
    let r = heaplab_within(dir, 60, &["trace", "-o", "t.hltrace", "--", "ls", "-la", "/"], false);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let r = heaplab_within(dir, 60, &["replay", "t.hltrace", "-a", "glibc", "-o", "t.hlplaced"], false);
    assert_eq!(r.code, 0, "{}", r.stderr);
}

/// Writes `bytes` into the FIFO `name` in `dir` from a thread (opening it blocks until heaplab
/// opens it for reading); the thread ends when the reader goes away.
fn feed_fifo(dir: &Path, name: &str, bytes: Vec<u8>) -> std::thread::JoinHandle<()> {
    let path = dir.join(name);
    let _ = std::fs::remove_file(&path);
    let st = Command::new("mkfifo").arg(&path).status().unwrap();
    assert!(st.success(), "mkfifo");
    std::thread::spawn(move || {
        use std::io::Write;
        if let Ok(mut f) = std::fs::OpenOptions::new().write(true).open(&path) {
            let _ = f.write_all(&bytes);
        }
    })
}

#[test]
fn fifos_and_process_substitution_are_read_once() {
    let d = tmpdir("fifo");
    write(&d, "a.csv", GOOD);
    trace_and_placed(&d);
    // <(…): convert used to lose the first bytes ("field 'ize': unknown column").
    let r = heaplab_within(&d, 30, &["$HEAPLAB", "convert", "<(cat a.csv)", "-o", "b.hlbin"], true);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let r = heaplab_within(&d, 30, &["$HEAPLAB", "plan", "<(cat b.hlbin)", "--time-limit", "0"], true);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains("4 buffers"), "{}", r.stdout);
    // FIFOs: every reader command, each format; none may hang.
    let read = |name: &str| std::fs::read(d.join(name)).unwrap();
    let cases: [(&str, &[&str], i32); 8] = [
        ("a.csv", &["plan", "F", "--time-limit", "0"], 0),
        ("a.csv", &["stats", "F"], 0),
        ("b.hlbin", &["convert", "F", "-o", "c.csv"], 0),
        ("t.hltrace", &["convert", "F", "-o", "t.csv"], 0),
        ("t.hltrace", &["plan", "F", "--time-limit", "0"], 0),
        ("t.hltrace", &["trace-info", "F"], 0),
        ("t.hlplaced", &["frag", "F"], 0),
        // replay reads its trace twice: a pipe is refused, clearly and at once.
        ("t.hltrace", &["replay", "F", "-a", "glibc", "-o", "r.hlplaced"], 2),
    ];
    for (src, args, code) in cases {
        let feeder = feed_fifo(&d, "F", read(src));
        let r = heaplab_within(&d, 30, args, false);
        assert_eq!(r.code, code, "{args:?} on a FIFO of {src}: {}", r.stderr);
        if code == 2 {
            assert!(r.stderr.contains("needs a regular (seekable) file, not a pipe"), "{}", r.stderr);
        }
        // Should heaplab not have opened it, the feeder waits for a reader: open it once to free it.
        use std::os::unix::fs::OpenOptionsExt;
        let _ = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open(d.join("F"));
        feeder.join().unwrap();
    }
    assert_eq!(std::fs::read_to_string(d.join("c.csv")).unwrap(), GOOD);
    assert!(!d.join("r.hlplaced").exists());
    // Standard input, from a pipe and redirected from a file.
    let r = heaplab_within(&d, 30, &["cat t.hltrace | $HEAPLAB stats -"], true);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let r = heaplab_within(&d, 60, &["$HEAPLAB replay - -a glibc -o s.hlplaced < t.hltrace"], true);
    assert_eq!(r.code, 0, "{}", r.stderr);
}

#[test]
fn numeric_flags_beyond_their_range_exit_2_and_help_shows_the_range() {
    let d = tmpdir("ranges");
    let m = write(&d, "m.csv", GOOD);
    let cases: &[&[&str]] = &[
        &["plan", &m, "--time-limit", "1e308"],
        &["plan", &m, "--time-limit", "18446744073709551616"],
        &["plan", &m, "--time-limit", "inf"],
        &["plan", &m, "--time-limit", "NaN"],
        &["plan", &m, "--iterations", "0"],
        &["plan", &m, "--seed", "18446744073709551616"],
        &["frag", "x.hlplaced", "--buckets", "18446744073709551615"],
        &["frag", "x.hlplaced", "--buckets", "1000000000"],
        &["frag", "x.hlplaced", "--buckets", "100000000"],
        &["frag", "x.hlplaced", "--page-size", "3000"],
        &["gen", "--kind", "random", "--buffers", "18446744073709551615", "-o", "g.csv"],
        &["gen", "--kind", "random", "--buffers", "1000000000000", "-o", "g.csv"],
        &["trace", "--stack-depth", "65", "-o", "t.hltrace", "--", "true"],
        &["study", "--runs", "0", "-o", "r", "--", "true"],
        &["study", "--timeout", "0", "-o", "r", "--", "true"],
        &["convert", &m, "-o", "c.csv", "--thread", "4294967296"],
    ];
    for args in cases {
        let r = heaplab_within(&d, 30, args, false);
        assert_eq!(r.code, 2, "{args:?}: {}", r.stderr);
        assert!(r.stderr.contains("expected") && !r.stderr.contains("panicked"), "{args:?}: {}", r.stderr);
    }
    assert!(!d.join("g.csv").exists() && !d.join("c.csv").exists() && !d.join("r").exists());
    for (cmd, flag) in [("plan", "--time-limit"), ("frag", "--buckets"), ("gen", "--buffers"), ("trace", "--stack-depth"), ("study", "--runs")] {
        let help = heaplab(&[cmd, "--help"]).stdout;
        // The option's own paragraph (the usage line names some flags too).
        let at = help.find(&format!("\n      {flag} <")).unwrap_or_else(|| panic!("{cmd} --help lacks {flag}"));
        assert!(help[at..].split("\n\n").next().unwrap().contains("[range:"), "{cmd} {flag}: {help}");
    }
    // The largest values in range work (quickly).
    let r = heaplab_within(&d, 60, &["plan", &m, "--time-limit", "604800", "--algorithm", "heuristics"], false);
    assert_eq!(r.code, 0, "{}", r.stderr);
}

#[test]
fn an_output_that_is_an_input_is_refused_and_the_input_kept() {
    let d = tmpdir("same");
    write(&d, "a.csv", GOOD);
    std::fs::hard_link(d.join("a.csv"), d.join("hard.csv")).unwrap();
    std::os::unix::fs::symlink("a.csv", d.join("sym.csv")).unwrap();
    let cases: &[&[&str]] = &[
        &["convert", "a.csv", "-o", "a.csv"],
        &["convert", "a.csv", "-o", "./a.csv"],
        &["convert", "a.csv", "-o", "hard.csv"],
        &["convert", "sym.csv", "-o", "a.csv"],
        &["convert", "a.csv", "-o", "sym.csv"],
        &["plan", "a.csv", "-o", "a.csv"],
        &["plan", "a.csv", "-o", "p.svg", "--plot", "p.svg"],
    ];
    for args in cases {
        let r = heaplab_within(&d, 30, args, false);
        assert_eq!(r.code, 2, "{args:?}: {}", r.stderr);
        assert!(r.stderr.contains("choose"), "{args:?}: {}", r.stderr);
        assert_eq!(std::fs::read_to_string(d.join("a.csv")).unwrap(), GOOD, "{args:?} changed the input");
    }
    let r = heaplab_within(&d, 30, &["$HEAPLAB convert - -o a.csv < a.csv"], true);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("standard input"), "{}", r.stderr);
    trace_and_placed(&d);
    let before = std::fs::read(d.join("t.hltrace")).unwrap();
    for args in [&["replay", "t.hltrace", "-a", "glibc", "-o", "t.hltrace"][..], &["convert", "t.hltrace", "-o", "t.hltrace"]] {
        let r = heaplab_within(&d, 30, args, false);
        assert_eq!(r.code, 2, "{args:?}: {}", r.stderr);
    }
    assert_eq!(std::fs::read(d.join("t.hltrace")).unwrap(), before, "the trace was replaced");
    assert!(std::fs::read_dir(&d).unwrap().flatten().all(|e| !e.file_name().to_string_lossy().starts_with('.')), "temporary file left");
}

#[test]
fn long_fields_are_quoted_short() {
    let d = tmpdir("long");
    let big = "7".repeat(8 << 20);
    for text in [
        format!("id,lower,upper,size\n0,0,1,{big}x\n"),
        format!("id,lower,upper,size,{big}\n0,0,1,4,5\n"),
        format!("id,lower,upper,size\n{big}\n"),
    ] {
        let m = write(&d, "m.csv", &text);
        for cmd in ["stats", "plan", "check"] {
            let r = heaplab_within(&d, 30, &[cmd, &m], false);
            assert_eq!(r.code, 2, "{cmd}: {}", &r.stderr[..r.stderr.len().min(300)]);
            assert!(r.stderr.len() < 500, "{cmd}: {} bytes of stderr: {}…", r.stderr.len(), &r.stderr[..300]);
            assert!(r.stderr.contains("bytes)"), "{cmd}: {}", r.stderr);
        }
    }
    let p = write(&d, "p.csv", &format!("job,mapping,start,end,requested,usable,address\n0,1,0,4,8,8,{big}x\n"));
    let r = heaplab_within(&d, 30, &["frag", &p], false);
    assert_eq!(r.code, 2);
    assert!(r.stderr.len() < 500 && r.stderr.contains(":2: field 'address'"), "{}", &r.stderr[..r.stderr.len().min(300)]);
}

#[test]
fn files_are_told_by_their_magic_and_errors_say_what_they_are() {
    let d = tmpdir("magic");
    std::fs::write(d.join("bad.hlbin"), b"HLBIX\0\x01\0\0\0\x02\0\0\0\0\0\0\0").unwrap();
    for cmd in ["convert", "plan", "stats", "frag", "check", "trace-info", "replay"] {
        let mut args = vec![cmd, "bad.hlbin"];
        if cmd == "convert" {
            args.extend(["-o", "out.csv"]);
        }
        if cmd == "replay" {
            args.extend(["-a", "glibc", "-o", "out.hlplaced"]);
        }
        let r = heaplab_within(&d, 30, &args, false);
        assert_eq!(r.code, 2, "{cmd}: {}", r.stderr);
        assert!(r.stderr.contains("damaged or unknown heaplab magic") && !r.stderr.contains("UTF-8"), "{cmd}: {}", r.stderr);
    }
    trace_and_placed(&d);
    // A trace is converted where an instance makes sense, and named where it does not.
    for cmd in ["stats", "plan"] {
        let r = heaplab_within(&d, 30, &[cmd, "t.hltrace"], false);
        assert_eq!(r.code, 0, "{cmd}: {}", r.stderr);
    }
    let r = heaplab_within(&d, 30, &["check", "t.hltrace"], false);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("it is a heaplab trace") && r.stderr.contains("heaplab convert t.hltrace"), "{}", r.stderr);
    let r = heaplab_within(&d, 30, &["frag", "t.hltrace"], false);
    assert!(r.code == 2 && r.stderr.contains("heaplab replay t.hltrace"), "{}", r.stderr);
    let r = heaplab_within(&d, 30, &["stats", "t.hlplaced"], false);
    assert!(r.code == 2 && r.stderr.contains("it is a heaplab placed file") && r.stderr.contains("heaplab frag t.hlplaced"), "{}", r.stderr);
    let r = heaplab_within(&d, 30, &["trace-info", "t.hlplaced"], false);
    assert!(r.code == 2 && r.stderr.contains("not a heaplab trace: it is a heaplab placed file"), "{}", r.stderr);
    // UTF-8 errors name the line.
    std::fs::write(d.join("u.csv"), b"id,lower,upper,size\n1,0,1,4\n2,0,\xff,3\n").unwrap();
    let r = heaplab_within(&d, 30, &["stats", "u.csv"], false);
    assert!(r.code == 2 && r.stderr.contains("u.csv:3: not UTF-8"), "{}", r.stderr);
    std::fs::write(d.join("u2.csv"), b"job,mapping,start,end,requested,usable,address\n0,1,0,4,8,8,\xff\n").unwrap();
    let r = heaplab_within(&d, 30, &["frag", "u2.csv"], false);
    assert!(r.code == 2 && r.stderr.contains("u2.csv:2: not UTF-8"), "{}", r.stderr);
}

#[test]
fn planner_stages_can_be_switched_off_and_thresholds_set() {
    let d = tmpdir("policy");
    let model = d.join("m.csv").to_string_lossy().into_owned();
    assert_eq!(heaplab(&["gen", "--kind", "random", "--buffers", "300", "--seed", "3", "-o", &model]).code, 0);
    let out = d.join("p.csv").to_string_lossy().into_owned();
    let r = heaplab(&["plan", &model, "--no-stage", "exact", "--no-stage", "improve", "--policy", "heuristics_share=0.5", "--time-limit", "0.5", "--json", "-o", &out]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    let stages: Vec<&str> = v["stages"].as_array().unwrap().iter().map(|s| s["stage"].as_str().unwrap()).collect();
    assert!(!stages.iter().any(|s| s.contains("exact") || s.contains("improve")), "{stages:?}");
    assert_eq!(brute_check(&out), v["makespan"].as_u64().unwrap());
    for bad in [&["--no-stage", "nonsense"][..], &["--policy", "heuristics_share=2"], &["--policy", "no_such_key=1"], &["--policy", "windows_share"]] {
        let mut args = vec!["plan", model.as_str(), "-o", out.as_str()];
        args.extend_from_slice(bad);
        let r = heaplab(&args);
        assert_eq!(r.code, 2, "{bad:?}: {}", r.stderr);
    }
    let help = heaplab(&["plan", "--help"]).stdout;
    assert!(help.contains("--no-stage") && help.contains("early-windows"), "{help}");
}
