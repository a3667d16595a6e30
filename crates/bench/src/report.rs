//! Results: one [`Row`] per instance, the Markdown table, the machine description, and the
//! `results.md` / `results.json` files.

use crate::anchors;
use crate::run::capture;
use serde_json::{json, Value};
use heaplab_model::units::grouped;
use std::path::Path;

/// Everything measured for one instance. `None` means "not measured" (the run failed earlier).
#[derive(Debug, Default)]
pub struct Row {
    pub name: String,
    pub group: &'static str,
    pub path: String,
    /// The `heaplab gen` command that made a generated instance.
    pub generator: Option<String>,
    pub n: Option<u64>,
    pub max_load: Option<u64>,
    pub makespan: Option<u64>,
    pub frag_pct: Option<f64>,
    pub algorithm: Option<String>,
    pub optimal: Option<bool>,
    /// Seconds heaplab itself reported (its solve time).
    pub seconds: Option<f64>,
    /// Wall seconds of the `plan` process.
    pub wall: Option<f64>,
    /// The plan's time limit, seconds (as its JSON reports it).
    pub time_limit: Option<f64>,
    /// Seconds heaplab spent planning (reading and writing excluded), and of those, validating
    /// placements (or, from a binary that does not report it, in the `assembling` stage).
    pub plan_seconds: Option<f64>,
    pub validation_seconds: Option<f64>,
    /// User CPU seconds of the `plan` process.
    pub user: Option<f64>,
    /// Peak RSS of the `plan` process, bytes.
    pub max_rss: Option<u64>,
    /// Verdict of `heaplab check` on the written placement.
    pub valid: Option<bool>,
    pub check_wall: Option<f64>,
    pub check_max_rss: Option<u64>,
    pub check_message: Option<String>,
    /// Why the row is incomplete.
    pub error: Option<String>,
    /// The plan's JSON as printed, kept whole in results.json.
    pub plan_json: Option<Value>,
    /// `heaplab plan --algorithm boxing` on the same input (the boxing comparison), for the rows
    /// that get it: generated 10^4 ≤ n ≤ 10^5 and traced.
    pub baseline: Option<Baseline>,
    /// For traced rows: the program, its workload and the trace's figures.
    pub traced: Option<Traced>,
    /// `heaplab plan --capacity` on the same input, for the rows that name a capacity (the
    /// minimalloc suite).
    pub at_capacity: Option<CapacityRun>,
}

/// `heaplab plan --capacity CAP` on a row's input (same time limit and seed): the question
/// minimalloc answers, "is there a placement within CAP?", stopping at the first one.
#[derive(Debug, Default)]
pub struct CapacityRun {
    pub capacity: u64,
    pub makespan: Option<u64>,
    /// Whether a placement within the capacity came back (exit 0).
    pub fits: Option<bool>,
    /// Verdict of `heaplab check` on it.
    pub valid: Option<bool>,
    /// Wall seconds of the `plan --capacity` process.
    pub wall: Option<f64>,
    pub error: Option<String>,
    /// The plan's JSON as printed, kept whole in results.json.
    pub plan_json: Option<Value>,
}

impl CapacityRun {
    fn to_json(&self) -> Value {
        json!({
            "command": "heaplab plan INPUT -o OUT --json --capacity CAPACITY (same --time-limit and --seed as the main run)",
            "capacity": self.capacity,
            "makespan": self.makespan,
            "fits": self.fits,
            "valid": self.valid,
            "plan_wall_seconds": self.wall,
            "error": self.error,
            "plan_json": self.plan_json,
        })
    }
}

/// The boxing algorithm alone (`--algorithm boxing`) on a row's input, same time limit and seed.
#[derive(Debug, Default)]
pub struct Baseline {
    pub makespan: Option<u64>,
    pub max_load: Option<u64>,
    pub frag_pct: Option<f64>,
    /// Seconds heaplab itself reported.
    pub seconds: Option<f64>,
    /// Wall seconds of the `plan --algorithm boxing` process.
    pub wall: Option<f64>,
    pub user: Option<f64>,
    pub max_rss: Option<u64>,
    pub error: Option<String>,
    /// The baseline plan's JSON as printed, kept whole in results.json.
    pub plan_json: Option<Value>,
}

/// What a traced row ran and what its trace held.
#[derive(Debug, Default)]
pub struct Traced {
    pub program: String,
    pub what: String,
    /// The program's command line (environment, binary, arguments).
    pub command: String,
    /// Wall seconds of `heaplab trace` (the program run under the tracer).
    pub trace_wall: Option<f64>,
    /// Wall seconds of `heaplab convert` (trace to .hlbin).
    pub convert_wall: Option<f64>,
    /// Chosen figures of `heaplab trace-info --json` (events, calls, peak live bytes, ...).
    pub trace_info: Option<Value>,
}

/// Fragmentation in percent from max load and makespan, when the JSON does not give it.
fn frag_from(v: &Value, max_load: Option<u64>, makespan: Option<u64>) -> Option<f64> {
    v.get("fragmentation_pct").and_then(Value::as_f64).or(match (max_load, makespan) {
        (Some(l), Some(m)) if l > 0 => Some((m as f64 - l as f64) / l as f64 * 100.0),
        _ => None,
    })
}

impl Baseline {
    /// Takes the figures from `heaplab plan --algorithm boxing --json`.
    pub fn take_plan_json(&mut self, v: Value) {
        let u = |k: &str| v.get(k).and_then(Value::as_u64);
        self.max_load = u("max_load");
        self.makespan = u("makespan");
        self.frag_pct = frag_from(&v, self.max_load, self.makespan);
        self.seconds = v.get("seconds").and_then(Value::as_f64);
        self.plan_json = Some(v);
    }

    fn to_json(&self) -> Value {
        json!({
            "command": "heaplab plan INPUT -o OUT --json --algorithm boxing (same --time-limit and --seed as the main run)",
            "max_load": self.max_load,
            "makespan": self.makespan,
            "fragmentation_pct": self.frag_pct,
            "plan_seconds_reported": self.seconds,
            "plan_wall_seconds": self.wall,
            "plan_user_cpu_seconds": self.user,
            "plan_peak_rss_bytes": self.max_rss,
            "error": self.error,
            "plan_json": self.plan_json,
        })
    }
}

/// The share of the time limit a plan may run over it ([`Row::within_limit`]).
pub const LIMIT_SLACK: f64 = 0.10;

/// Slack allowed when comparing the two wall times for "no more time": each is one run on a
/// possibly shared machine.
pub const TIME_SLACK: f64 = 0.05;

impl Row {
    pub fn new(name: &str, group: &'static str, path: &Path) -> Row {
        Row { name: name.to_string(), group, path: path.display().to_string(), ..Default::default() }
    }

    /// Takes the figures from `heaplab plan --json`. Missing keys stay `None` and show as "?".
    pub fn take_plan_json(&mut self, v: Value) {
        let u = |k: &str| v.get(k).and_then(Value::as_u64);
        self.n = u("n");
        self.max_load = u("max_load");
        self.makespan = u("makespan");
        self.frag_pct = frag_from(&v, self.max_load, self.makespan);
        self.algorithm = v.get("algorithm").map(|a| a.as_str().map(str::to_string).unwrap_or_else(|| a.to_string()));
        self.optimal = v.get("optimal").and_then(Value::as_bool);
        self.seconds = v.get("seconds").and_then(Value::as_f64);
        self.time_limit = v.get("time_limit").and_then(Value::as_f64);
        self.plan_seconds = v.get("plan_seconds").and_then(Value::as_f64);
        self.validation_seconds = v.get("validation_seconds").and_then(Value::as_f64).or_else(|| {
            v.get("stages").and_then(Value::as_array).map(|st| {
                st.iter()
                    .filter(|x| x.get("stage").and_then(Value::as_str) == Some("assembling"))
                    .filter_map(|x| x.get("seconds").and_then(Value::as_f64))
                    .sum()
            })
        });
        self.plan_json = Some(v);
    }

    /// Planning time over the time limit, seconds (negative when the plan stopped early):
    /// `plan_seconds − time_limit`, reading and writing excluded.
    pub fn over_limit(&self) -> Option<f64> {
        Some(self.plan_seconds? - self.time_limit?)
    }

    /// The time limit's promise: planning ends within the limit plus 10%, validation aside
    /// (reading and writing are outside `plan_seconds` already).
    pub fn within_limit(&self) -> Option<bool> {
        let limit = self.time_limit?;
        Some(self.plan_seconds? - self.validation_seconds.unwrap_or(0.0) <= limit * (1.0 + LIMIT_SLACK))
    }

    /// Issue 3's fragmentation test: the full planner's fragmentation is at most half of what
    /// the boxing algorithm alone reached, i.e. 2·(makespan − L) ≤ (boxing makespan − L), in
    /// exact integers (so 0 against 0 passes). `None` without a complete baseline.
    pub fn frag_at_most_half(&self) -> Option<bool> {
        self.frag_at_most_half_with(self.baseline.as_ref()?)
    }

    /// [`Row::frag_at_most_half`] against a given baseline.
    pub fn frag_at_most_half_with(&self, b: &Baseline) -> Option<bool> {
        if self.error.is_some() || b.error.is_some() {
            return None;
        }
        let (l, m, bm) = (self.max_load?, self.makespan?, b.makespan?);
        if b.max_load.is_some_and(|bl| bl != l) {
            return None;
        }
        Some(2 * (m.saturating_sub(l) as u128) <= bm.saturating_sub(l) as u128)
    }

    /// Issue 3's time test: the full planner's wall time is no more than the baseline's
    /// (within [`TIME_SLACK`]). `None` without a complete baseline.
    pub fn no_more_time(&self) -> Option<bool> {
        let b = self.baseline.as_ref()?;
        if self.error.is_some() || b.error.is_some() {
            return None;
        }
        Some(self.wall? <= b.wall? * (1.0 + TIME_SLACK))
    }

    fn to_json(&self) -> Value {
        let (mm, ia) = anchors::reference(&self.name);
        json!({
            "instance": self.name,
            "group": self.group,
            "path": self.path,
            "generator": self.generator,
            "n": self.n,
            "max_load": self.max_load,
            "makespan": self.makespan,
            "fragmentation_pct": self.frag_pct,
            "algorithm": self.algorithm,
            "optimal": self.optimal,
            "plan_seconds_reported": self.seconds,
            "plan_wall_seconds": self.wall,
            "time_limit_seconds": self.time_limit,
            "validation_seconds": self.validation_seconds,
            "over_limit_seconds": self.over_limit(),
            "within_limit": self.within_limit(),
            "plan_user_cpu_seconds": self.user,
            "plan_peak_rss_bytes": self.max_rss,
            "valid": self.valid,
            "check_wall_seconds": self.check_wall,
            "check_peak_rss_bytes": self.check_max_rss,
            "check_message": self.check_message,
            "error": self.error,
            "plan_json": self.plan_json,
            "boxing_baseline": self.baseline.as_ref().map(Baseline::to_json),
            "at_capacity": self.at_capacity.as_ref().map(CapacityRun::to_json),
            "target": self.baseline.as_ref().map(|_| json!({
                "rule": "fragmentation at most half of what the boxing algorithm alone reaches, in no more time",
                "frag_at_most_half": self.frag_at_most_half(),
                "no_more_time": self.no_more_time(),
                "time_slack": TIME_SLACK,
            })),
            "traced": self.traced.as_ref().map(|t| json!({
                "program": t.program,
                "workload": t.what,
                "command": t.command,
                "inputs": "generated by crates/bench/src/traced.rs into the program's own folder (run there); heaplab-bench --keep keeps them",
                "trace_wall_seconds": t.trace_wall,
                "convert_wall_seconds": t.convert_wall,
                "trace_info": t.trace_info,
            })),
            "reference": { "minimalloc": mm, "idealloc": ia, "source": "../shared/ANCHORS.md (quoted, not measured here)" },
        })
    }
}

/// The machine and run a results file describes.
pub struct Machine {
    pub uname: String,
    pub cpu: String,
    pub cores: usize,
    pub memory: String,
    pub date: String,
    pub commit: String,
    pub heaplab_version: String,
    pub command: String,
}

impl Machine {
    pub fn collect(heaplab: &Path, command: String) -> Machine {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let cpu = cpuinfo
            .lines()
            .find(|l| l.starts_with("model name"))
            .and_then(|l| l.split_once(':'))
            .map(|(_, v)| v.trim().to_string())
            .unwrap_or_else(|| "unknown".into());
        let memory = std::fs::read_to_string("/proc/meminfo")
            .ok()
            .and_then(|m| m.lines().find(|l| l.starts_with("MemTotal:")).map(str::to_string))
            .and_then(|l| l.split_whitespace().nth(1).and_then(|k| k.parse::<u64>().ok()))
            .map(|kib| format!("{:.1} GiB", kib as f64 / 1024.0 / 1024.0))
            .unwrap_or_else(|| "unknown".into());
        let mut commit = capture("git", &["rev-parse", "--short", "HEAD"]).unwrap_or_else(|| "unknown".into());
        // Tracked files changed since the commit mean the binary may not be that commit.
        if capture("git", &["status", "--porcelain", "--untracked-files=no"]).is_some_and(|s| !s.is_empty()) {
            commit.push_str(" (with uncommitted changes)");
        }
        let hv = heaplab.to_string_lossy().into_owned();
        Machine {
            uname: capture("uname", &["-srm"]).unwrap_or_else(|| "unknown".into()),
            cpu,
            cores: std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
            memory,
            date: capture("date", &["-u", "+%Y-%m-%d %H:%M UTC"]).unwrap_or_else(|| "unknown".into()),
            commit,
            heaplab_version: capture(&hv, &["--version"]).unwrap_or_else(|| "heaplab (version unknown)".into()),
            command,
        }
    }

    fn to_json(&self) -> Value {
        json!({
            "uname": self.uname, "cpu": self.cpu, "cores": self.cores, "memory": self.memory,
            "date": self.date, "commit": self.commit, "heaplab_version": self.heaplab_version,
            "command": self.command,
        })
    }
}

/// Bytes as MiB with one decimal.
pub fn mib(bytes: u64) -> String {
    format!("{:.1}", bytes as f64 / (1024.0 * 1024.0))
}


const DASH: &str = "—";

/// A fragmentation percentage for the tables (`heaplab_model::units::percent_figure`).
pub use heaplab_model::units::percent_figure as pct;

fn yes_no(b: Option<bool>) -> String {
    match b {
        Some(true) => "yes".into(),
        Some(false) => "**no**".into(),
        None => DASH.into(),
    }
}

/// The Markdown table printed to stdout and written to results.md.
pub fn table(rows: &[Row]) -> String {
    let mut s = String::from(
        "| instance | n | max load | makespan | frag % | boxing alone % | ≤ half | algorithm | optimal | time s | over limit s | boxing s | no more time | CPU s | peak RSS MiB | valid | check s | minimalloc (ref) | idealloc (ref) |\n\
         |---|--:|--:|--:|--:|--:|---|---|---|--:|--:|--:|---|--:|--:|---|--:|---|---|\n",
    );
    let opt = |x: Option<String>| x.unwrap_or_else(|| "?".into());
    for r in rows {
        let (mm, ia) = anchors::reference(&r.name);
        let algorithm = match &r.error {
            // Pipes would break the table.
            Some(e) => format!("**FAILED**: {}", e.replace('|', "/").chars().take(90).collect::<String>()),
            None => opt(r.algorithm.clone()),
        };
        let valid = match r.valid {
            Some(true) => "yes".to_string(),
            Some(false) => "**NO**".to_string(),
            None => DASH.to_string(),
        };
        let failed_plan = r.error.is_some() && r.makespan.is_none();
        let fig = |x: Option<String>| if failed_plan { DASH.to_string() } else { opt(x) };
        let (boxing_pct, boxing_s) = match &r.baseline {
            None => (DASH.to_string(), DASH.to_string()),
            Some(b) => (
                match (&b.error, b.frag_pct) {
                    (Some(_), _) => "**FAILED**".into(),
                    (None, f) => opt(f.map(pct)),
                },
                b.wall.map(|w| format!("{w:.2}")).unwrap_or(DASH.into()),
            ),
        };
        s.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
            r.name,
            fig(r.n.map(grouped)),
            fig(r.max_load.map(grouped)),
            fig(r.makespan.map(grouped)),
            fig(r.frag_pct.map(pct)),
            boxing_pct,
            yes_no(r.frag_at_most_half()),
            algorithm,
            fig(r.optimal.map(|o| if o { "yes".into() } else { "no".into() })),
            r.wall.map(|w| format!("{w:.2}")).unwrap_or(DASH.into()),
            match (r.over_limit(), r.within_limit()) {
                (Some(o), Some(false)) => format!("**{o:+.2}**"),
                (Some(o), _) => format!("{o:+.2}"),
                _ => DASH.into(),
            },
            boxing_s,
            yes_no(r.no_more_time()),
            r.user.map(|u| format!("{u:.2}")).unwrap_or(DASH.into()),
            r.max_rss.map(mib).unwrap_or(DASH.into()),
            valid,
            r.check_wall.map(|w| format!("{w:.2}")).unwrap_or(DASH.into()),
            mm.unwrap_or(DASH),
            ia.unwrap_or(DASH),
        ));
    }
    s
}

/// The rows planned under a capacity as a Markdown table, or `None` when there are none.
pub fn capacity_table(rows: &[Row]) -> Option<String> {
    let with: Vec<(&Row, &CapacityRun)> = rows.iter().filter_map(|r| r.at_capacity.as_ref().map(|c| (r, c))).collect();
    if with.is_empty() {
        return None;
    }
    let mut s = String::from(
        "| instance | max load | capacity | makespan | fits | valid | time s | minimalloc (ref) |\n|---|--:|--:|--:|---|---|--:|---|\n",
    );
    for (r, c) in with {
        let fits = match (&c.error, c.fits) {
            (Some(e), _) => format!("**FAILED**: {}", e.replace('|', "/").chars().take(60).collect::<String>()),
            (None, f) => yes_no(f),
        };
        s.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} | {} |\n",
            r.name,
            r.max_load.map(grouped).unwrap_or(DASH.into()),
            grouped(c.capacity),
            c.makespan.map(grouped).unwrap_or(DASH.into()),
            fits,
            match c.valid {
                Some(true) => "yes".to_string(),
                Some(false) => "**NO**".to_string(),
                None => DASH.to_string(),
            },
            c.wall.map(|w| format!("{w:.2}")).unwrap_or(DASH.into()),
            anchors::reference(&r.name).0.unwrap_or(DASH),
        ));
    }
    Some(s)
}

/// What the capacity table means, for results.md.
pub const CAPACITY_NOTE: &str = "A third run, `heaplab plan INPUT -o OUT --json --capacity 1048576` \
(same `--time-limit` and `--seed`), asks what minimalloc is asked: is there a placement within the \
capacity the suite's files are named after? It stops at the first one (*makespan* is that placement's, \
not a minimum) and fails (exit 1) when none is found or one is proven impossible. *valid* is \
`heaplab check` on it. The main table's target is stricter: makespan = max load, which for C, D and J \
is below 1,048,576.";

/// What the boxing columns mean, for results.md.
pub const BASELINE_NOTE: &str = "*boxing alone %* and *boxing s* come from a second run, \
`heaplab plan INPUT -o OUT --json --algorithm boxing` with the same `--time-limit` and `--seed`, on the \
rows the boxing target is about: generated instances of 10^4 to 10^5 buffers and traced programs \
(— elsewhere). *≤ half* is that target's fragmentation test, 2·(makespan − max load) ≤ (boxing \
makespan − max load) in exact bytes (0 against 0 passes); *no more time* is its time test, \
*time s* ≤ *boxing s* + 5% (one run each).";

/// One line counting the rows that meet the boxing target, or `None` when no row has a baseline.
pub fn target_summary(rows: &[Row]) -> Option<String> {
    let with: Vec<&Row> = rows.iter().filter(|r| r.baseline.is_some()).collect();
    if with.is_empty() {
        return None;
    }
    let count = |f: &dyn Fn(&Row) -> bool| with.iter().filter(|r| f(r)).count();
    let half = count(&|r| r.frag_at_most_half() == Some(true));
    let time = count(&|r| r.no_more_time() == Some(true));
    let both = count(&|r| r.frag_at_most_half() == Some(true) && r.no_more_time() == Some(true));
    let incomplete = count(&|r| r.frag_at_most_half().is_none());
    Some(format!(
        "Issue 3 target (10^4–10^5 buffers, generated and traced: fragmentation at most half of the boxing \
         algorithm alone's, in no more time): {both} of {} rows meet it; fragmentation ≤ half in {half}, no more \
         time in {time}{}.",
        with.len(),
        if incomplete > 0 { format!("; {incomplete} without a complete comparison (a run failed)") } else { String::new() }
    ))
}

/// The time limit's line under the table: how many rows planned within their limit plus
/// [`LIMIT_SLACK`], and the worst.
pub fn limit_summary(rows: &[Row]) -> Option<String> {
    let with: Vec<&Row> = rows.iter().filter(|r| r.within_limit().is_some()).collect();
    let worst = with.iter().max_by(|a, b| a.over_limit().unwrap_or(0.0).total_cmp(&b.over_limit().unwrap_or(0.0)))?;
    let within = with.iter().filter(|r| r.within_limit() == Some(true)).count();
    Some(format!(
        "Time limit (planning within the limit + {:.0}%, reading, validation and writing aside): {within} of {} \
         rows; the most over it: {} ({:+.2} s over {} s).",
        LIMIT_SLACK * 100.0,
        with.len(),
        worst.name,
        worst.over_limit().unwrap_or(0.0),
        worst.time_limit.unwrap_or(0.0),
    ))
}

/// The spread over generator seeds (`--seeds`): for each generated row run under several seeds
/// (named `KIND-N/seedS`), the fragmentation's least, median, mean and largest value and how
/// many seeds planned to a proven optimum. `None` when no row has a seed in its name.
pub fn seed_spread(rows: &[Row]) -> Option<String> {
    let mut groups: Vec<(&str, Vec<&Row>)> = Vec::new();
    for r in rows {
        let Some((base, _)) = r.name.split_once("/seed") else { continue };
        match groups.iter_mut().find(|g| g.0 == base) {
            Some(g) => g.1.push(r),
            None => groups.push((base, vec![r])),
        }
    }
    if groups.is_empty() {
        return None;
    }
    let mut t = String::from("| rows | seeds | optimal | frag % least | median | mean | largest | worst seed |\n|---|--:|--:|--:|--:|--:|--:|---|\n");
    for (base, rs) in groups {
        let mut fr: Vec<(f64, &str)> = rs.iter().filter_map(|r| Some((r.frag_pct?, r.name.rsplit('/').next().unwrap_or("")))).collect();
        fr.sort_by(|a, b| a.0.total_cmp(&b.0));
        let optimal = rs.iter().filter(|r| r.optimal == Some(true)).count();
        let cell = |v: Option<f64>| v.map_or("—".to_string(), |v| format!("{v:.2}"));
        let values: Vec<f64> = fr.iter().map(|f| f.0).collect();
        let median = (!values.is_empty()).then(|| heaplab_study::stats::median(&values));
        let mean = (!values.is_empty()).then(|| heaplab_study::stats::mean_sd(&values).0);
        t += &format!(
            "| {base} | {} | {optimal} | {} | {} | {} | {} | {} |\n",
            rs.len(),
            cell(fr.first().map(|f| f.0)),
            cell(median),
            cell(mean),
            cell(fr.last().map(|f| f.0)),
            fr.last().map_or("—", |f| f.1),
        );
    }
    Some(t)
}

/// Writes `results.md` and `results.json` into `dir` (created if needed), each atomically.
pub fn write_results(dir: &Path, m: &Machine, rows: &[Row], notes: &[String], table: &str) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let mut md = String::new();
    md.push_str("# heaplab benchmark results\n\n");
    md.push_str("Written by `heaplab-bench` (`make bench`); see `bench/README.md` for what is measured.\n\n");
    md.push_str("## Machine and run\n\n");
    md.push_str(&format!("- machine: `{}`\n", m.uname));
    md.push_str(&format!("- CPU: {} ({} cores available), memory {}\n", m.cpu, m.cores, m.memory));
    md.push_str(&format!("- date: {}\n", m.date));
    md.push_str(&format!("- commit: `{}`; binary: `{}`\n", m.commit, m.heaplab_version));
    md.push_str(&format!("- command: `{}`\n", m.command));
    for n in notes {
        md.push_str(&format!("- {n}\n"));
    }
    md.push_str("\n## Results\n\n");
    md.push_str(table);
    md.push_str(
        "\n*time s* is the wall time of one `heaplab plan INPUT -o OUT --json` process (start-up, \
         reading, planning, validation and writing included; OUT is CSV below 10^5 buffers, `.hlbin` \
         from 10^5 up); *CPU s* is its user CPU time over all threads (steadier than wall time on a \
         shared machine); *peak RSS* is that process's `ru_maxrss`. \
         *valid* and *check s* come from a separate `heaplab check INPUT OUT` run. \
         *frag %* = (makespan − max load) / max load.\n\n",
    );
    md.push_str(
        "*over limit s* is the planning time (`plan_seconds` of the JSON: reading and writing \
         excluded, putting the buffers in start order and back included) minus the time limit; negative when the plan stopped early, in bold when it \
         ran past the limit by more than 10% besides validation (`validation_seconds`).\n\n",
    );
    if let Some(t) = limit_summary(rows) {
        md.push_str(&t);
        md.push_str("\n\n");
    }
    if let Some(t) = seed_spread(rows) {
        md.push_str("## Over the generator seeds\n\n");
        md.push_str(&t);
        md.push_str("\n*optimal* counts the seeds planned to a proven optimum; *worst seed* is the one with the largest fragmentation.\n\n");
    }
    md.push_str(BASELINE_NOTE);
    md.push_str("\n\n");
    if let Some(t) = target_summary(rows) {
        md.push_str(&t);
        md.push_str("\n\n");
    }
    if let Some(t) = capacity_table(rows) {
        md.push_str("## The minimalloc suite at its capacity\n\n");
        md.push_str(&t);
        md.push('\n');
        md.push_str(CAPACITY_NOTE);
        md.push_str("\n\n");
    }
    md.push_str(anchors::NOTE);
    md.push('\n');
    let gens: Vec<&Row> = rows.iter().filter(|r| r.generator.is_some()).collect();
    if !gens.is_empty() {
        md.push_str("\nGenerated instances (re-create with):\n\n");
        for r in gens {
            md.push_str(&format!("- {}: `{}`\n", r.name, r.generator.as_deref().unwrap_or("")));
        }
    }
    let traced: Vec<(&Row, &Traced)> = rows.iter().filter_map(|r| r.traced.as_ref().map(|t| (r, t))).collect();
    if !traced.is_empty() {
        md.push_str(
            "\nTraced programs (`heaplab trace -o X.hltrace -- COMMAND`, then `heaplab convert X.hltrace -o X.hlbin`: \
             allocated-bytes clock, requested sizes; inputs generated by the harness, deterministically):\n\n",
        );
        for (r, t) in traced {
            let events = t.trace_info.as_ref().and_then(|v| v.get("events")).and_then(Value::as_u64);
            md.push_str(&format!(
                "- {}: {}{}. `{}`\n",
                r.name,
                t.what,
                events.map(|e| format!(" ({} trace events)", grouped(e))).unwrap_or_default(),
                t.command
            ));
        }
    }
    let js = json!({
        "machine": m.to_json(),
        "notes": notes,
        "reference_note": anchors::NOTE,
        "baseline_note": BASELINE_NOTE,
        "capacity_note": CAPACITY_NOTE,
        "target_summary": target_summary(rows),
        "rows": rows.iter().map(Row::to_json).collect::<Vec<_>>(),
    });
    write_atomic(&dir.join("results.md"), md.as_bytes())?;
    let mut text = serde_json::to_string_pretty(&js).map_err(std::io::Error::other)?;
    text.push('\n');
    write_atomic(&dir.join("results.json"), text.as_bytes())
}

/// A temporary file renamed into place, so an interrupted run leaves the previous results whole.
fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    heaplab_model::files::write_atomic(&path.to_string_lossy(), |w| w.write_all(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(max_load: u64, makespan: u64, wall: f64, boxing: Option<(u64, f64)>) -> Row {
        let mut r = Row::new("x", "generated", Path::new("x.csv"));
        r.take_plan_json(json!({"n": 10, "max_load": max_load, "makespan": makespan}));
        r.wall = Some(wall);
        r.valid = Some(true);
        r.baseline = boxing.map(|(m, w)| {
            let mut b = Baseline { wall: Some(w), ..Default::default() };
            b.take_plan_json(json!({"max_load": max_load, "makespan": m}));
            b
        });
        r
    }

    #[test]
    fn seed_spread_groups_the_seeds_of_a_row() {
        let named = |name: &str, makespan: u64| {
            let mut r = row(100, makespan, 1.0, None);
            r.name = name.to_string();
            r
        };
        assert_eq!(seed_spread(&[named("random-1k", 101)]), None);
        let rows = [named("random-1k/seed1", 100), named("random-1k/seed2", 104), named("random-1k/seed3", 101), named("nn-1k/seed1", 102)];
        let t = seed_spread(&rows).expect("a spread");
        assert!(t.contains("| random-1k | 3 | 0 | 0.00 | 1.00 | 1.67 | 4.00 | seed2 |"), "{t}");
        assert!(t.contains("| nn-1k | 1 | 0 | 2.00 | 2.00 | 2.00 | 2.00 | seed1 |"), "{t}");
    }

    #[test]
    fn half_test_is_exact() {
        // 0 against 0 passes; any fragmentation against none fails.
        assert_eq!(row(100, 100, 1.0, Some((100, 1.0))).frag_at_most_half(), Some(true));
        assert_eq!(row(100, 101, 1.0, Some((100, 1.0))).frag_at_most_half(), Some(false));
        // 5 of 10 is exactly half; 6 is more.
        assert_eq!(row(100, 105, 1.0, Some((110, 1.0))).frag_at_most_half(), Some(true));
        assert_eq!(row(100, 106, 1.0, Some((110, 1.0))).frag_at_most_half(), Some(false));
        assert_eq!(row(100, 100, 1.0, None).frag_at_most_half(), None);
        let mut failed = row(100, 100, 1.0, Some((100, 1.0)));
        failed.baseline.as_mut().unwrap().error = Some("plan failed".into());
        assert_eq!(failed.frag_at_most_half(), None);
        assert_eq!(failed.no_more_time(), None);
    }

    #[test]
    fn time_test_allows_the_slack() {
        assert_eq!(row(1, 1, 2.0, Some((1, 2.0))).no_more_time(), Some(true));
        assert_eq!(row(1, 1, 2.09, Some((1, 2.0))).no_more_time(), Some(true));
        assert_eq!(row(1, 1, 2.2, Some((1, 2.0))).no_more_time(), Some(false));
    }

    #[test]
    fn over_limit_is_planning_time_past_the_limit_with_its_slack() {
        let plan = |secs: f64, assembling: f64| {
            let mut r = Row::new("x", "generated", Path::new("x.csv"));
            r.take_plan_json(json!({"n": 10, "time_limit": 3.0, "plan_seconds": secs,
                "stages": [{"stage": "heuristics", "seconds": secs - assembling}, {"stage": "assembling", "seconds": assembling}]}));
            r
        };
        assert_eq!(plan(1.0, 0.0).within_limit(), Some(true));
        assert!((plan(1.0, 0.0).over_limit().unwrap() + 2.0).abs() < 1e-9);
        assert_eq!(plan(3.29, 0.0).within_limit(), Some(true));
        assert_eq!(plan(3.31, 0.0).within_limit(), Some(false));
        // Validation is outside the promise (reported, or the assembling stage's).
        assert_eq!(plan(3.5, 0.4).within_limit(), Some(true));
        let mut r = Row::new("x", "generated", Path::new("x.csv"));
        r.take_plan_json(json!({"time_limit": 3.0, "plan_seconds": 3.6, "validation_seconds": 0.35, "stages": []}));
        assert_eq!(r.within_limit(), Some(true));
        let rows = [plan(1.0, 0.0), plan(3.5, 0.0)];
        let t = table(&rows);
        assert!(t.contains("| **+0.50** |") && t.contains("| -2.00 |"), "{t}");
        let s = limit_summary(&rows).unwrap();
        assert!(s.contains("1 of 2 rows") && s.contains("+0.50 s over 3 s"), "{s}");
        assert_eq!(Row::new("x", "generated", Path::new("x.csv")).within_limit(), None);
    }

    #[test]
    fn table_has_baseline_columns_and_dashes_without_one() {
        let rows = [row(100, 100, 1.0, Some((110, 2.0))), row(100, 100, 1.0, None)];
        let t = table(&rows);
        let lines: Vec<&str> = t.lines().collect();
        let cols = |l: &str| l.split('|').count();
        assert!(lines[0].contains("| boxing alone % | ≤ half |") && lines[0].contains("| boxing s | no more time |"));
        assert!(lines.iter().all(|l| cols(l) == cols(lines[0])));
        assert!(lines[2].contains("| 10.00 | yes |") && lines[2].contains("| 1.00 | — | 2.00 | yes |"));
        assert!(lines[3].contains("| 0.00 | — | — |") && lines[3].contains("| 1.00 | — | — | — |"));
        let s = target_summary(&rows).unwrap();
        assert!(s.contains("1 of 1 rows meet it"), "{s}");
        assert!(target_summary(&rows[1..]).is_none());
    }
}
