//! Results: one [`Row`] per instance, the Markdown table, the machine description, and the
//! `results.md` / `results.json` files.

use crate::anchors;
use crate::run::capture;
use serde_json::{json, Value};
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
}

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
        self.frag_pct = v.get("fragmentation_pct").and_then(Value::as_f64).or_else(|| match (self.max_load, self.makespan) {
            (Some(l), Some(m)) if l > 0 => Some((m as f64 - l as f64) / l as f64 * 100.0),
            _ => None,
        });
        self.algorithm = v.get("algorithm").map(|a| a.as_str().map(str::to_string).unwrap_or_else(|| a.to_string()));
        self.optimal = v.get("optimal").and_then(Value::as_bool);
        self.seconds = v.get("seconds").and_then(Value::as_f64);
        self.plan_json = Some(v);
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
            "plan_user_cpu_seconds": self.user,
            "plan_peak_rss_bytes": self.max_rss,
            "valid": self.valid,
            "check_wall_seconds": self.check_wall,
            "check_peak_rss_bytes": self.check_max_rss,
            "check_message": self.check_message,
            "error": self.error,
            "plan_json": self.plan_json,
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

/// 1048576 → "1,048,576": max loads are read by eye against each other.
fn grouped(x: u64) -> String {
    let s = x.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Quotes an argument for the recorded command line when the shell would need it.
pub fn shell_quote(a: &str) -> String {
    if !a.is_empty() && a.chars().all(|c| c.is_ascii_alphanumeric() || "-_./=,:+".contains(c)) {
        a.to_string()
    } else {
        format!("'{}'", a.replace('\'', r"'\''"))
    }
}

const DASH: &str = "—";

/// The Markdown table printed to stdout and written to results.md.
pub fn table(rows: &[Row]) -> String {
    let mut s = String::from(
        "| instance | n | max load | makespan | frag % | algorithm | optimal | time s | CPU s | peak RSS MiB | valid | check s | minimalloc (ref) | idealloc (ref) |\n\
         |---|--:|--:|--:|--:|---|---|--:|--:|--:|---|--:|---|---|\n",
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
        s.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
            r.name,
            fig(r.n.map(grouped)),
            fig(r.max_load.map(grouped)),
            fig(r.makespan.map(grouped)),
            fig(r.frag_pct.map(|f| format!("{f:.2}"))),
            algorithm,
            fig(r.optimal.map(|o| if o { "yes".into() } else { "no".into() })),
            r.wall.map(|w| format!("{w:.2}")).unwrap_or(DASH.into()),
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
    md.push_str(anchors::NOTE);
    md.push('\n');
    let gens: Vec<&Row> = rows.iter().filter(|r| r.generator.is_some()).collect();
    if !gens.is_empty() {
        md.push_str("\nGenerated instances (re-create with):\n\n");
        for r in gens {
            md.push_str(&format!("- {}: `{}`\n", r.name, r.generator.as_deref().unwrap_or("")));
        }
    }
    let js = json!({
        "machine": m.to_json(),
        "notes": notes,
        "reference_note": anchors::NOTE,
        "rows": rows.iter().map(Row::to_json).collect::<Vec<_>>(),
    });
    write_atomic(&dir.join("results.md"), md.as_bytes())?;
    let mut text = serde_json::to_string_pretty(&js).map_err(std::io::Error::other)?;
    text.push('\n');
    write_atomic(&dir.join("results.json"), text.as_bytes())
}

/// A temporary file renamed into place, so an interrupted run leaves the previous results whole.
fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    std::fs::write(&tmp, bytes)?;
    std::fs::rename(&tmp, path).inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })
}
