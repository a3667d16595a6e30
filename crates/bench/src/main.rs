//! `heaplab-bench`: the benchmark harness behind `make bench`.
//!
//! This crate owns measuring heaplab end to end. It runs the release CLI (`target/release/heaplab`)
//! as a child process — exactly as a user would — on the shared benchmark files
//! (`../shared/benchmarks/`, read in place, never copied) and on generated instances of growing
//! size, measures wall time and the child's peak RSS (`wait4`), validates every placement with
//! `heaplab check`, and prints a Markdown table beside the figures other planners achieve
//! (quoted from `../shared/ANCHORS.md`). It writes `bench/results.md` (table, machine, commit,
//! command) and `bench/results.json`.
//!
//! Going through the binary instead of linking the planner keeps the numbers honest: file I/O,
//! parsing, validation and process start-up are all in the time, as they are in the anchors.
//!
//! For the boxing target (10^4–10^5 buffers, generated and traced: fragmentation at most half of
//! what the boxing algorithm alone reaches, in no more time) it also runs `heaplab plan
//! --algorithm boxing` on those rows, and traces real programs (`traced.rs`) to plan their heaps.

#[allow(dead_code)] // shared with the other benches; this one needs only `shell_quote`
mod host;
mod anchors;
mod report;
mod run;
mod traced;

use report::{Baseline, CapacityRun, Machine, Row, Traced};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::Duration;

const USAGE: &str = "\
heaplab-bench — run `heaplab plan` over the shared and generated benchmark instances

Usage: heaplab-bench [OPTIONS]      (run from the repository root; `make bench` does)

Options:
  --heaplab PATH        heaplab binary to measure [default: target/release/heaplab]
  --time-limit SECONDS  passed to `heaplab plan --time-limit` [default: the CLI's own]
  --seed N              seed for `heaplab gen` (instances) [default: 1]
  --seeds LIST          several generator seeds (1,2,5 or 1-8): each generated row once per seed,
                        named KIND-N/seedS, to see how much a planner's figure owes to one draw
  --plan-seed N         passed to `heaplab plan --seed` [default: the CLI's own]
  --max-n N             largest generated instance: 10^3 … 10^7 by powers of ten [default: 1000000;
                        make bench passes 10000000]
  --min-n N             smallest generated instance [default: 1000]; with --max-n, a run of the
                        large rows alone (e.g. --min-n 1e7 --max-n 1e7 --kinds random)
  --no-shared           skip the shared benchmark set (for a run of generated rows alone)
  --quick               shared set plus generated 10^3 and 10^4 only (the baseline and the
                        traced group still run)
  --kinds K,K,...       generated kinds [default: random,nn,malloc,tight]
  --huge-kinds K,K,...  the kinds (among --kinds) also run at 10^7 [default: random,nn,malloc]
  --shared DIR          benchmark files [default: ../shared/benchmarks]
  --out DIR             where results.md and results.json go [default: bench]
  --kill-after SECONDS  kill a child that runs this long [default: 600]
  --no-baseline         skip the second run `heaplab plan --algorithm boxing` (the boxing
                        algorithm alone, same --time-limit and --plan-seed) made for generated
                        instances of 10^4 to 10^5 buffers and traced programs (the boxing target)
  --no-traced           skip the traced group (python3, sqlite3, perl, jq, a jq sort and ruby
                        traced with `heaplab trace` on generated inputs, converted and planned)
  --keep                keep the generated instances and placements (their folder is printed)
  -h, --help            this help

Exit status: 0 when every run succeeded and every placement was valid, 1 otherwise, 2 on bad usage.";

/// Parsed command line.
struct Opts {
    heaplab: PathBuf,
    time_limit: Option<String>,
    /// Generator seeds; rows carry the seed in their name when there are several.
    seeds: Vec<u64>,
    plan_seed: Option<String>,
    max_n: usize,
    min_n: usize,
    quick: bool,
    shared_set: bool,
    kinds: Vec<String>,
    huge_kinds: Vec<String>,
    shared: PathBuf,
    out: PathBuf,
    kill_after: f64,
    keep: bool,
    baseline: bool,
    traced: bool,
}

fn parse_args(args: &[String]) -> Result<Opts, String> {
    let mut o = Opts {
        heaplab: PathBuf::from("target/release/heaplab"),
        time_limit: None,
        seeds: vec![1],
        plan_seed: None,
        max_n: 1_000_000,
        min_n: 0,
        quick: false,
        shared_set: true,
        kinds: ["random", "nn", "malloc", "tight"].iter().map(|s| s.to_string()).collect(),
        huge_kinds: ["random", "nn", "malloc"].iter().map(|s| s.to_string()).collect(),
        shared: PathBuf::from("../shared/benchmarks"),
        out: PathBuf::from("bench"),
        kill_after: 600.0,
        keep: false,
        baseline: true,
        traced: true,
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        // Accept both `--opt value` and `--opt=value`.
        let (flag, inline) = match a.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f, Some(v.to_string())),
            _ => (a.as_str(), None),
        };
        let mut value = |name: &str| -> Result<String, String> {
            inline.clone().or_else(|| it.next().cloned()).ok_or(format!("{name} needs a value"))
        };
        let num = |name: &str, v: String| -> Result<f64, String> {
            v.parse::<f64>().ok().filter(|x| x.is_finite() && *x >= 0.0).ok_or(format!("{name}: expected a non-negative number, got '{v}'"))
        };
        match flag {
            "-h" | "--help" => return Err(String::new()),
            "--heaplab" => o.heaplab = PathBuf::from(value(flag)?),
            "--time-limit" => {
                let v = value(flag)?;
                num(flag, v.clone())?;
                o.time_limit = Some(v);
            }
            "--seed" => {
                let v = value(flag)?;
                o.seeds = vec![v.parse().map_err(|_| format!("--seed: expected an unsigned integer, got '{v}'"))?];
            }
            "--seeds" => o.seeds = parse_seeds(&value(flag)?)?,
            "--plan-seed" => {
                let v = value(flag)?;
                v.parse::<u64>().map_err(|_| format!("--plan-seed: expected an unsigned integer, got '{v}'"))?;
                o.plan_seed = Some(v);
            }
            "--max-n" | "--min-n" => {
                let v = value(flag)?;
                // Allow 1e6 as well as 1000000.
                let x = num(flag, v.clone())?;
                if x.fract() != 0.0 {
                    return Err(format!("{flag}: expected an integer, got '{v}'"));
                }
                if flag == "--max-n" {
                    o.max_n = x as usize;
                } else {
                    o.min_n = x as usize;
                }
            }
            "--no-shared" => o.shared_set = false,
            "--quick" => o.quick = true,
            "--keep" => o.keep = true,
            "--no-baseline" => o.baseline = false,
            "--no-traced" => o.traced = false,
            "--kinds" | "--huge-kinds" => {
                let v = value(flag)?;
                let kinds: Vec<String> = v.split(',').map(|s| s.trim().to_string()).filter(|s| !s.is_empty()).collect();
                for k in &kinds {
                    if heaplab_gen::Kind::parse(k).is_none() {
                        let names: Vec<&str> = heaplab_gen::Kind::ALL.iter().map(|k| k.name()).collect();
                        return Err(format!("{flag}: unknown kind '{k}' (expected one of {})", names.join(", ")));
                    }
                }
                if flag == "--kinds" {
                    o.kinds = kinds;
                } else {
                    o.huge_kinds = kinds;
                }
            }
            "--shared" => o.shared = PathBuf::from(value(flag)?),
            "--out" => o.out = PathBuf::from(value(flag)?),
            "--kill-after" => o.kill_after = num(flag, value(flag)?)?,
            _ => return Err(format!("unknown argument '{a}'")),
        }
    }
    if o.quick {
        o.max_n = o.max_n.min(10_000);
    }
    Ok(o)
}

/// One instance to benchmark.
struct Job {
    /// Display name: `minimalloc/A`, `random-10k`, ...
    name: String,
    /// `shared`, `generated` or `traced`.
    group: &'static str,
    /// For generated instances: (kind, n, generator seed); the file is made by `heaplab gen`
    /// first.
    gen: Option<(String, usize, u64)>,
    /// For traced programs: the run to trace; `path` is made by `heaplab trace` and `convert`.
    traced: Option<traced::Workload>,
    /// Also run the boxing algorithm alone on it (the boxing baseline).
    baseline: bool,
    /// Also plan it under this capacity (`--capacity`): the minimalloc suite at the capacity its
    /// files are named after, the question minimalloc answers.
    capacity: Option<u64>,
    path: PathBuf,
}

/// Generated sizes that get the boxing baseline: the boxing target row is 10^4–10^5 buffers.
fn wants_baseline(n: usize) -> bool {
    (10_000..=100_000).contains(&n)
}

/// The shared files in the order ANCHORS.md lists them.
fn shared_jobs(dir: &Path) -> Vec<Job> {
    let mut v = Vec::new();
    for l in "ABCDEFGHIJK".chars() {
        v.push((format!("minimalloc/{l}"), format!("minimalloc/{l}.1048576.csv"), Some(1_048_576)));
    }
    v.push(("iopddl/G_1".into(), "iopddl/G_1.csv".into(), None));
    v.push(("somas/resnet50".into(), "somas/resnet50.csv".into(), None));
    v.into_iter()
        .map(|(name, rel, capacity)| Job { name, group: "shared", gen: None, traced: None, baseline: false, capacity, path: dir.join(rel) })
        .collect()
}

/// `--seeds`: a comma-separated list of seeds and inclusive ranges (`1,4,6-8`), in that order,
/// without repeats.
fn parse_seeds(v: &str) -> Result<Vec<u64>, String> {
    let bad = || format!("--seeds: expected seeds such as 1,2,5 or 1-8, got '{v}'");
    let mut out: Vec<u64> = Vec::new();
    for part in v.split(',') {
        let (a, b) = match part.split_once('-') {
            Some((a, b)) => (a.trim().parse::<u64>().map_err(|_| bad())?, b.trim().parse::<u64>().map_err(|_| bad())?),
            None => {
                let a = part.trim().parse::<u64>().map_err(|_| bad())?;
                (a, a)
            }
        };
        if a > b || b - a >= 1000 {
            return Err(format!("--seeds: '{part}' is not a range of at most 1,000 seeds"));
        }
        for seed in a..=b {
            if out.contains(&seed) {
                return Err(format!("--seeds: seed {seed} given twice"));
            }
            out.push(seed);
        }
    }
    Ok(out)
}

fn short_n(n: usize) -> String {
    match n {
        n if n >= 1_000_000 && n % 1_000_000 == 0 => format!("{}M", n / 1_000_000),
        n if n >= 1000 && n % 1000 == 0 => format!("{}k", n / 1000),
        n => n.to_string(),
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut opts = match parse_args(&args) {
        Ok(o) => o,
        Err(e) if e.is_empty() => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("heaplab-bench: {e}\n\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    if !opts.heaplab.is_file() {
        eprintln!(
            "heaplab-bench: no heaplab binary at '{}'. Build it with `cargo build --release -p heaplab-cli` \
             or pass --heaplab PATH.",
            opts.heaplab.display()
        );
        return ExitCode::from(2);
    }
    // Traced programs run in the work folder: the binary's path must not depend on the cwd.
    if let Ok(p) = std::path::absolute(&opts.heaplab) {
        opts.heaplab = p;
    }
    let command = {
        let mut c = String::from("heaplab-bench");
        for a in &args {
            c.push(' ');
            c.push_str(&host::shell_quote(a));
        }
        if std::env::var_os("MAKELEVEL").is_some() {
            c.push_str("   (run by make)");
        }
        c
    };
    let machine = Machine::collect(&opts.heaplab, command);
    eprintln!("heaplab-bench: {} on {} ({} cores), commit {}", machine.heaplab_version, machine.cpu, machine.cores, machine.commit);

    // The pid padded to a fixed width: traced programs keep names of their folder, so its length
    // must not change with the pid.
    let work = std::env::temp_dir().join(format!("heaplab-bench-{:07}", std::process::id()));
    if let Err(e) = std::fs::create_dir_all(&work) {
        eprintln!("heaplab-bench: cannot create {}: {e}", work.display());
        return ExitCode::from(1);
    }

    let mut notes: Vec<String> = Vec::new();
    let mut jobs: Vec<Job> = Vec::new();
    if !opts.shared_set {
        notes.push("shared benchmark set not run (--no-shared)".to_string());
    } else if opts.shared.is_dir() {
        jobs.extend(shared_jobs(&opts.shared));
    } else {
        let msg = format!("skipped: {} not found (the shared benchmark set)", opts.shared.display());
        // The exact phrase the project uses when ../shared is missing.
        println!("skipped: ../shared not found");
        eprintln!("heaplab-bench: {msg}");
        notes.push(msg);
    }
    let sizes: Vec<usize> = [1_000, 10_000, 100_000, 1_000_000, 10_000_000].into_iter().filter(|&n| opts.min_n <= n && n <= opts.max_n).collect();
    for kind in &opts.kinds {
        for &n in &sizes {
            // 10^7 is the streaming/memory check (issue #3), run for the kinds asked for.
            if n > 1_000_000 && !opts.huge_kinds.contains(kind) {
                continue;
            }
            // Binary for the big ones: CSV parsing would dominate the measurement.
            let ext = if n >= 100_000 { "hlbin" } else { "csv" };
            for &seed in &opts.seeds {
                let mut name = format!("{kind}-{}", short_n(n));
                if opts.seeds.len() > 1 {
                    name += &format!("/seed{seed}");
                }
                jobs.push(Job {
                    path: work.join(format!("{}.{ext}", name.replace('/', "_"))),
                    name,
                    group: "generated",
                    gen: Some((kind.clone(), n, seed)),
                    traced: None,
                    baseline: opts.baseline && wants_baseline(n),
                    capacity: None,
                });
            }
        }
    }
    if opts.traced {
        // The large and huge traces (10^5-10^6 blocks, and above 2·10^6) are the scale check on
        // real heaps: not in --quick, and without the boxing baseline, which is for 10^4-10^5
        // buffers.
        let scales: &[traced::Scale] = if opts.quick { &[traced::Scale::Small] } else { &[traced::Scale::Small, traced::Scale::Large, traced::Scale::Huge, traced::Scale::Giant] };
        for &scale in scales {
            match traced::workloads(&work, scale) {
                Ok((found, missing)) => {
                    for program in missing {
                        if scale == traced::Scale::Small {
                            println!("skipped: {program} not installed");
                            notes.push(format!(
                                "traced group: skipped {program}: not installed (no ELF executable named {program} in /usr/bin or PATH; `make trace-deps` installs it)"
                            ));
                        }
                    }
                    for w in found {
                        let name = format!("{}{}", w.name, scale.suffix());
                        jobs.push(Job {
                            name: format!("traced/{name}"),
                            group: "traced",
                            path: work.join(format!("traced-{name}.hlbin")),
                            gen: None,
                            traced: Some(w),
                            baseline: opts.baseline && scale == traced::Scale::Small,
                            capacity: None,
                        });
                    }
                }
                Err(e) => {
                    let msg = format!("traced group skipped: cannot write its inputs in {}: {e}", work.display());
                    eprintln!("heaplab-bench: {msg}");
                    notes.push(msg);
                }
            }
        }
    }

    let kill = Duration::from_secs_f64(opts.kill_after);
    let total = jobs.len();
    let mut rows: Vec<Row> = Vec::new();
    for (k, job) in jobs.iter().enumerate() {
        let tag = format!("[{:>2}/{total}] {}", k + 1, job.name);
        let mut row = Row::new(&job.name, job.group, &job.path);
        if let Some((kind, n, seed)) = &job.gen {
            eprint!("{tag}: generating … ");
            let mut c = Command::new(&opts.heaplab);
            c.args(["gen", "--kind", kind, "--buffers", &n.to_string(), "--seed", &seed.to_string(), "-o"]).arg(&job.path);
            row.generator = Some(format!("heaplab gen --kind {kind} --buffers {n} --seed {seed}"));
            match step(&mut c, "gen", kill) {
                Ok(m) => eprintln!("{:.2} s", m.wall),
                Err(e) => row.error = Some(e),
            }
        }
        if let Some(w) = &job.traced {
            trace_and_convert(&opts, w, &job.path, kill, &tag, &mut row);
        }
        if row.error.is_none() {
            eprint!("{tag}: plan … ");
            // Binary placements for the big generated instances, as for their inputs.
            let ext = if job.gen.as_ref().is_some_and(|&(_, n, _)| n >= 100_000) { "hlbin" } else { "csv" };
            let out = work.join(format!("{}.placement.{ext}", job.name.replace('/', "_")));
            plan_and_check(&opts, &job.path, &out, kill, &mut row);
            match &row.error {
                None => eprintln!(
                    "{:.2} s, {} MiB, {}, {}",
                    row.wall.unwrap_or(0.0),
                    report::mib(row.max_rss.unwrap_or(0)),
                    row.frag_pct.map(|f| format!("{}%", report::pct(f))).unwrap_or("?".into()),
                    match row.valid {
                        Some(true) => "valid",
                        Some(false) => "INVALID",
                        None => "not checked",
                    }
                ),
                Some(e) => eprintln!("{e}"),
            }
            if !opts.keep {
                let _ = std::fs::remove_file(&out);
            }
        }
        if job.baseline && row.error.is_none() {
            eprint!("{tag}: boxing alone … ");
            let big = job.gen.as_ref().is_some_and(|&(_, n, _)| n >= 100_000);
            let out = work.join(format!("{}.boxing.placement.{}", job.name.replace('/', "_"), if big { "hlbin" } else { "csv" }));
            let b = baseline(&opts, &job.path, &out, kill);
            match &b.error {
                None => eprintln!(
                    "{:.2} s, {}{}",
                    b.wall.unwrap_or(0.0),
                    b.frag_pct.map(|f| format!("{}%", report::pct(f))).unwrap_or("?".into()),
                    match row.frag_at_most_half_with(&b) {
                        Some(true) => "; full planner ≤ half: yes",
                        Some(false) => "; full planner ≤ half: no",
                        None => "",
                    }
                ),
                Some(e) => eprintln!("{e}"),
            }
            row.baseline = Some(b);
            if !opts.keep {
                let _ = std::fs::remove_file(&out);
            }
        }
        if let (Some(cap), None) = (job.capacity, &row.error) {
            eprint!("{tag}: at capacity {cap} … ");
            let out = work.join(format!("{}.capacity.placement.csv", job.name.replace('/', "_")));
            let c = at_capacity(&opts, &job.path, &out, cap, kill);
            match &c.error {
                None => eprintln!(
                    "{:.2} s, {}",
                    c.wall.unwrap_or(0.0),
                    match (c.fits, c.valid) {
                        (Some(true), Some(true)) => "fits, valid",
                        (Some(true), _) => "fits, INVALID",
                        _ => "does not fit",
                    }
                ),
                Some(e) => eprintln!("{e}"),
            }
            row.at_capacity = Some(c);
            if !opts.keep {
                let _ = std::fs::remove_file(&out);
            }
        }
        if !opts.keep && (job.gen.is_some() || job.traced.is_some()) {
            let _ = std::fs::remove_file(&job.path);
        }
        rows.push(row);
    }
    if opts.keep {
        eprintln!("heaplab-bench: instances and placements kept in {}", work.display());
    } else {
        let _ = std::fs::remove_dir_all(&work);
    }

    let table = report::table(&rows);
    println!("{table}");
    if let Some(t) = report::capacity_table(&rows) {
        println!("{t}");
    }
    if let Some(t) = report::target_summary(&rows) {
        println!("{t}\n");
    }
    if let Err(e) = report::write_results(&opts.out, &machine, &rows, &notes, &table) {
        eprintln!("heaplab-bench: cannot write results to {}: {e}", opts.out.display());
        return ExitCode::from(1);
    }
    eprintln!("heaplab-bench: wrote {0}/results.md and {0}/results.json", opts.out.display());
    let bad = rows
        .iter()
        .filter(|r| {
            r.error.is_some()
                || r.valid != Some(true)
                || r.baseline.as_ref().is_some_and(|b| b.error.is_some())
                || r.at_capacity.as_ref().is_some_and(|c| c.error.is_some() || (c.fits == Some(true) && c.valid != Some(true)))
        })
        .count();
    if bad > 0 {
        eprintln!("heaplab-bench: {bad} of {} runs failed or produced an invalid placement", rows.len());
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

/// `heaplab plan INPUT -o OUT --json`, then `heaplab check INPUT OUT --json`; fills `row`.
fn plan_and_check(opts: &Opts, input: &Path, out: &Path, kill: Duration, row: &mut Row) {
    let mut c = plan_command(opts, input, out);
    let m = match run::run(&mut c, kill) {
        Ok(m) => m,
        Err(e) => {
            row.error = Some(format!("cannot run heaplab plan: {e}"));
            return;
        }
    };
    row.wall = Some(m.wall);
    row.user = Some(m.user);
    row.max_rss = Some(m.max_rss);
    if !m.success() {
        row.error = Some(failed("plan", &m));
        return;
    }
    match serde_json::from_str::<serde_json::Value>(m.stdout.trim()) {
        Ok(v) => row.take_plan_json(v),
        Err(e) => {
            row.error = Some(format!("plan printed no JSON object ({e})"));
            return;
        }
    }

    let mut c = Command::new(&opts.heaplab);
    c.arg("check").arg(input).arg(out).arg("--json");
    match run::run(&mut c, kill) {
        Ok(m) => {
            row.check_wall = Some(m.wall);
            row.check_max_rss = Some(m.max_rss);
            // Exit 0 means valid, 1 invalid (CLI convention); anything else means the check
            // itself could not run, which is not a verdict.
            let json_valid = serde_json::from_str::<serde_json::Value>(m.stdout.trim())
                .ok()
                .and_then(|v| v.get("valid").and_then(|x| x.as_bool()));
            match (m.code, json_valid) {
                (Some(0), j) => row.valid = Some(j.unwrap_or(true)),
                (Some(1), _) => {
                    row.valid = Some(false);
                    row.check_message = Some(m.last_error_line());
                }
                _ => row.error = Some(failed("check", &m)),
            }
        }
        Err(e) => row.error = Some(format!("cannot run heaplab check: {e}")),
    }
}

/// The shared options of `heaplab plan`: the same for the main run and the baseline.
fn plan_command(opts: &Opts, input: &Path, out: &Path) -> Command {
    let mut c = Command::new(&opts.heaplab);
    c.arg("plan").arg(input).arg("-o").arg(out).arg("--json");
    if let Some(t) = &opts.time_limit {
        c.args(["--time-limit", t]);
    }
    if let Some(s) = &opts.plan_seed {
        c.args(["--seed", s]);
    }
    c
}

/// `heaplab plan INPUT -o OUT --json --algorithm boxing`: the boxing algorithm alone.
fn baseline(opts: &Opts, input: &Path, out: &Path, kill: Duration) -> Baseline {
    let mut b = Baseline::default();
    let mut c = plan_command(opts, input, out);
    c.args(["--algorithm", "boxing"]);
    let m = match run::run(&mut c, kill) {
        Ok(m) => m,
        Err(e) => {
            b.error = Some(format!("cannot run heaplab plan --algorithm boxing: {e}"));
            return b;
        }
    };
    b.wall = Some(m.wall);
    b.user = Some(m.user);
    b.max_rss = Some(m.max_rss);
    if !m.success() {
        b.error = Some(failed("plan --algorithm boxing", &m));
        return b;
    }
    match serde_json::from_str::<serde_json::Value>(m.stdout.trim()) {
        Ok(v) => b.take_plan_json(v),
        Err(e) => b.error = Some(format!("plan --algorithm boxing printed no JSON object ({e})")),
    }
    b
}

/// `heaplab plan INPUT -o OUT --json --capacity CAP`, then `heaplab check` on what it wrote. Exit
/// 0 means a plan fits (and is written), 1 that none was found or one was proven impossible.
fn at_capacity(opts: &Opts, input: &Path, out: &Path, capacity: u64, kill: Duration) -> CapacityRun {
    let mut r = CapacityRun { capacity, ..Default::default() };
    let mut c = plan_command(opts, input, out);
    c.args(["--capacity", &capacity.to_string()]);
    let m = match run::run(&mut c, kill) {
        Ok(m) => m,
        Err(e) => {
            r.error = Some(format!("cannot run heaplab plan --capacity: {e}"));
            return r;
        }
    };
    r.wall = Some(m.wall);
    if !matches!(m.code, Some(0 | 1)) {
        r.error = Some(failed("plan --capacity", &m));
        return r;
    }
    match serde_json::from_str::<serde_json::Value>(m.stdout.trim()) {
        Ok(v) => {
            r.makespan = v.get("makespan").and_then(|x| x.as_u64());
            r.fits = v.get("fits").and_then(|x| x.as_bool());
            r.plan_json = Some(v);
        }
        Err(e) => {
            r.error = Some(format!("plan --capacity printed no JSON object ({e})"));
            return r;
        }
    }
    if r.fits == Some(true) {
        let mut c = Command::new(&opts.heaplab);
        c.arg("check").arg(input).arg(out);
        r.valid = run::run(&mut c, kill).ok().and_then(|m| match m.code {
            Some(0) => Some(true),
            Some(1) => Some(false),
            _ => None,
        });
    }
    r
}

/// Traces the workload's program (`heaplab trace -o X.hltrace -- PROGRAM ARGS`), keeps a few
/// figures of `heaplab trace-info --json`, and converts the trace to the instance `hlbin`.
fn trace_and_convert(opts: &Opts, w: &traced::Workload, hlbin: &Path, kill: Duration, tag: &str, row: &mut Row) {
    let trace = hlbin.with_extension("hltrace");
    let mut t = Traced { program: w.program.to_string(), what: w.what.clone(), command: w.command_line(), ..Default::default() };
    eprint!("{tag}: tracing {} … ", w.name);
    let mut c = Command::new(&opts.heaplab);
    c.args(["trace", "-o"]).arg(&trace).arg("--").arg(&w.exe).args(&w.args);
    // A fixed environment (no LD_PRELOAD of ours either: the tracer manages it).
    c.env_clear().envs(traced::base_env()).envs(w.env.iter().copied()).current_dir(&w.cwd);
    // Address-space randomisation off for heaplab trace and so for the program it starts
    // (personality survives fork and exec): the same trace run after run (see traced.rs).
    // SAFETY: only an async-signal-safe system call between fork and exec.
    unsafe {
        c.pre_exec(|| {
            // A refusal (some sandboxes) costs only determinism.
            libc::personality(libc::ADDR_NO_RANDOMIZE as libc::c_ulong);
            Ok(())
        });
    }
    match step(&mut c, "trace", kill) {
        Ok(m) => {
            t.trace_wall = Some(m.wall);
            eprint!("{:.2} s; converting … ", m.wall);
        }
        Err(e) => row.error = Some(e),
    }
    if row.error.is_none() {
        let mut c = Command::new(&opts.heaplab);
        c.args(["trace-info", "--json"]).arg(&trace);
        if let Ok(m) = run::run(&mut c, kill) {
            if let Ok(v) = serde_json::from_str::<serde_json::Value>(m.stdout.trim()) {
                let keep = ["exe", "events", "calls", "free_null", "failed_allocations", "peak_live_blocks", "peak_live_bytes", "peak_rss_bytes", "duration_ns", "file_bytes", "live_at_end"];
                let picked: serde_json::Map<String, serde_json::Value> =
                    keep.iter().filter_map(|k| v.get(*k).map(|x| (k.to_string(), x.clone()))).collect();
                t.trace_info = Some(serde_json::Value::Object(picked));
            }
        }
        let mut c = Command::new(&opts.heaplab);
        c.arg("convert").arg(&trace).arg("-o").arg(hlbin);
        match step(&mut c, "convert", kill) {
            Ok(m) => {
                t.convert_wall = Some(m.wall);
                eprintln!("{:.2} s", m.wall);
            }
            Err(e) => row.error = Some(e),
        }
    }
    if !opts.keep {
        let _ = std::fs::remove_file(&trace);
    }
    row.traced = Some(t);
}

/// Runs one step of a row (`heaplab WHAT ...`): its measurement when it succeeded, else the
/// row's error, after ending the progress line with "failed".
fn step(c: &mut Command, what: &str, kill: Duration) -> Result<run::Measured, String> {
    match run::run(c, kill) {
        Ok(m) if m.success() => Ok(m),
        Ok(m) => {
            eprintln!("failed ({})", m.failure());
            Err(failed(what, &m))
        }
        Err(e) => {
            eprintln!("failed");
            Err(format!("cannot run heaplab {what}: {e}"))
        }
    }
}

/// "plan failed (exit 1): <last stderr line>" — the line omitted when the child printed nothing.
fn failed(what: &str, m: &run::Measured) -> String {
    let line = m.last_error_line();
    if line.is_empty() {
        format!("{what} failed ({})", m.failure())
    } else {
        format!("{what} failed ({}): {line}", m.failure())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(a: &[&str]) -> Opts {
        parse_args(&a.iter().map(|s| s.to_string()).collect::<Vec<_>>()).unwrap()
    }

    #[test]
    fn baseline_and_traced_are_on_by_default_and_can_be_skipped() {
        let o = parse(&[]);
        assert!(o.baseline && o.traced);
        let o = parse(&["--quick"]);
        assert!(o.baseline && o.traced);
        let o = parse(&["--no-baseline", "--no-traced"]);
        assert!(!o.baseline && !o.traced);
    }

    #[test]
    fn seeds_are_lists_and_ranges() {
        assert_eq!(parse(&[]).seeds, vec![1]);
        assert_eq!(parse(&["--seed", "7"]).seeds, vec![7]);
        assert_eq!(parse(&["--seeds", "1-3,9"]).seeds, vec![1, 2, 3, 9]);
        for bad in ["", "x", "3-1", "1,1", "2-", "1-5000"] {
            assert!(parse_seeds(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn baseline_sizes_are_issue_3s_range() {
        assert!(!wants_baseline(1_000));
        assert!(wants_baseline(10_000));
        assert!(wants_baseline(100_000));
        assert!(!wants_baseline(1_000_000));
    }
}
