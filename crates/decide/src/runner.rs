//! Measuring configurations × workloads: the runner behind `heaplab compare --config …
//! --workload …`. A configuration is an allocator (by name or library path, preloaded as
//! `heaplab replay` and `heaplab study` do) plus environment settings; a workload is a shell
//! command. Runs are interleaved round by round (every workload under every configuration once
//! per round) so that slow drifts of the machine spread over all configurations; the first
//! rounds are warm-ups, kept apart. Each run goes through the study crate's launcher (wall
//! time, user+system CPU time, peak RSS), with RAPL energy ([`crate::rapl`]) read around it and,
//! when asked, a second run under cachegrind for L1 data-cache misses. The [`Results`] grow one
//! run at a time and are checkpointed to `results.json`; a checkpoint of the same plan resumes.

use crate::rapl::Rapl;
use crate::results::{pyperf_checks, Better, Configuration, Metric, Results, Series};
use crate::DecideError;
use heaplab_replay::Allocator;
use heaplab_study::measure::{run_once, RssMethod, RunSpec};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The `provenance.source` of results the runner writes.
pub const SOURCE: &str = "heaplab runner";

/// A configuration to measure: `NAME=ALLOCATOR[,KEY=VALUE…]`.
#[derive(Clone, Debug, PartialEq)]
pub struct ConfigSpec {
    /// Its name in tables.
    pub name: String,
    /// The allocator preloaded (glibc: none).
    pub allocator: Allocator,
    /// Environment settings for its runs.
    pub env: Vec<(String, String)>,
}

impl ConfigSpec {
    /// Parses `NAME=ALLOCATOR[,KEY=VALUE…]`, `ALLOCATOR[,KEY=VALUE…]` (named after the
    /// allocator) or `NAME=KEY=VALUE[,…]` (glibc with settings). The allocator is resolved
    /// here: an unknown one is an error before anything runs.
    pub fn parse(s: &str) -> Result<ConfigSpec, DecideError> {
        let bad = |m: String| DecideError::Input(format!("--config '{s}': {m}"));
        let mut parts = s.split(',').map(str::trim);
        let first = parts.next().unwrap_or("");
        let (name, alloc, mut env) = match first.split_once('=') {
            Some((n, rest)) => match rest.split_once('=') {
                Some((k, v)) => (n.to_string(), "glibc".to_string(), vec![(k.to_string(), v.to_string())]),
                None => (n.to_string(), rest.to_string(), Vec::new()),
            },
            None => (String::new(), first.to_string(), Vec::new()),
        };
        for p in parts.filter(|p| !p.is_empty()) {
            let (k, v) = p.split_once('=').ok_or_else(|| bad(format!("'{p}' is not a KEY=VALUE environment setting")))?;
            if k.is_empty() || k.contains(|c: char| !(c.is_ascii_alphanumeric() || c == '_')) {
                return Err(bad(format!("'{k}' is not an environment variable name")));
            }
            env.push((k.to_string(), v.to_string()));
        }
        if alloc.is_empty() {
            return Err(bad("no allocator (expected NAME=ALLOCATOR[,KEY=VALUE...])".into()));
        }
        let allocator = heaplab_replay::resolve(&alloc).map_err(|e| bad(e.0))?;
        let name = if name.is_empty() { allocator.name.clone() } else { name };
        if name.is_empty() {
            return Err(bad("empty configuration name".into()));
        }
        Ok(ConfigSpec { name, allocator, env })
    }

    /// One line for reports: the allocator, its library and the settings.
    pub fn describe(&self) -> String {
        let mut d = match &self.allocator.library {
            Some(p) => format!("{} ({})", self.allocator.name, p.display()),
            None => format!("{} (no preload)", self.allocator.name),
        };
        for (k, v) in &self.env {
            d.push_str(&format!(", {k}={v}"));
        }
        d
    }

    fn to_json(&self) -> Value {
        json!({"name": self.name, "allocator": self.allocator.name, "library": self.allocator.library, "env": self.env})
    }
}

/// A workload: `NAME=COMMAND`, run by `sh -c` (redirections and pipes allowed).
#[derive(Clone, Debug, PartialEq)]
pub struct WorkloadSpec {
    /// Its name in tables.
    pub name: String,
    /// The shell command.
    pub command: String,
}

impl WorkloadSpec {
    /// Parses `NAME=COMMAND`.
    pub fn parse(s: &str) -> Result<WorkloadSpec, DecideError> {
        match s.split_once('=') {
            Some((n, c)) if !n.trim().is_empty() && !c.trim().is_empty() && !n.contains(char::is_whitespace) => {
                Ok(WorkloadSpec { name: n.trim().to_string(), command: c.trim().to_string() })
            }
            _ => Err(DecideError::Input(format!("--workload '{s}': expected NAME=COMMAND (a name without spaces, then a shell command)"))),
        }
    }
}

/// What can be measured.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MetricKind {
    /// Wall time (`time`, seconds).
    Time,
    /// User + system CPU time of the process tree (`cpu`, seconds).
    Cpu,
    /// Peak resident set size (`rss`, bytes).
    Rss,
    /// RAPL energy (`energy-pkg`, `energy-core`, `energy-dram`, joules) where readable.
    Energy,
    /// L1 data-cache misses, reads + writes, under cachegrind (`l1d`, a separate slower run).
    L1d,
}

impl MetricKind {
    /// The names accepted by `--metrics`.
    pub const NAMES: &'static str = "time, cpu, rss, energy, l1d";

    /// Parses a comma-separated list such as `time,cpu,rss,energy`.
    pub fn parse_list(s: &str) -> Result<Vec<MetricKind>, DecideError> {
        let mut out = Vec::new();
        for m in s.split(',').map(str::trim).filter(|m| !m.is_empty()) {
            let k = match m {
                "time" => MetricKind::Time,
                "cpu" => MetricKind::Cpu,
                "rss" => MetricKind::Rss,
                "energy" => MetricKind::Energy,
                "l1d" => MetricKind::L1d,
                _ => return Err(DecideError::Input(format!("--metrics: unknown metric '{m}' (expected some of {})", Self::NAMES))),
            };
            if !out.contains(&k) {
                out.push(k);
            }
        }
        if out.is_empty() {
            return Err(DecideError::Input(format!("--metrics: no metric given (expected some of {})", Self::NAMES)));
        }
        Ok(out)
    }

    fn name(self) -> &'static str {
        match self {
            MetricKind::Time => "time",
            MetricKind::Cpu => "cpu",
            MetricKind::Rss => "rss",
            MetricKind::Energy => "energy",
            MetricKind::L1d => "l1d",
        }
    }
}

/// Everything that defines a measurement; a checkpoint resumes only under the same plan.
#[derive(Clone, Debug)]
pub struct Plan {
    /// Configurations, the reference first.
    pub configs: Vec<ConfigSpec>,
    /// Workloads.
    pub workloads: Vec<WorkloadSpec>,
    /// Metrics asked for.
    pub metrics: Vec<MetricKind>,
    /// Measured runs per configuration and workload.
    pub runs: usize,
    /// Warm-up runs before them (kept apart, never analysed).
    pub warmup: usize,
    /// A run is killed after this long (and counts as failed).
    pub timeout: Duration,
    /// Working directory of the workloads.
    pub cwd: PathBuf,
    /// Where RAPL counters are looked for ([`crate::rapl::POWERCAP_ROOT`]).
    pub powercap_root: PathBuf,
}

impl Plan {
    /// Orders the configurations so that `reference` (default: the first) leads, and checks
    /// names are unique and counts sensible.
    pub fn check(&mut self, reference: Option<&str>) -> Result<(), DecideError> {
        let bad = |m: String| Err(DecideError::Input(m));
        if self.configs.len() < 2 {
            return bad("at least two --config are needed: a reference and a configuration to compare with it".into());
        }
        if self.workloads.is_empty() {
            return bad("no --workload given".into());
        }
        for (i, c) in self.configs.iter().enumerate() {
            if self.configs[..i].iter().any(|d| d.name == c.name) {
                return bad(format!("--config: the name '{}' is given twice", c.name));
            }
        }
        for (i, w) in self.workloads.iter().enumerate() {
            if self.workloads[..i].iter().any(|d| d.name == w.name) {
                return bad(format!("--workload: the name '{}' is given twice", w.name));
            }
        }
        if let Some(r) = reference {
            let k = self.configs.iter().position(|c| c.name == r).ok_or_else(|| {
                DecideError::Input(format!("--reference {r}: no such configuration ({})", self.configs.iter().map(|c| c.name.as_str()).collect::<Vec<_>>().join(", ")))
            })?;
            let c = self.configs.remove(k);
            self.configs.insert(0, c);
        }
        if self.runs < 2 {
            return bad(format!("--runs {}: at least 2 runs are needed for a rank test", self.runs));
        }
        Ok(())
    }

    /// Runs in all, warm-ups included.
    pub fn total(&self) -> usize {
        (self.runs + self.warmup) * self.configs.len() * self.workloads.len()
    }

    /// The plan as recorded in the provenance (what `--resume` compares).
    fn to_json(&self) -> Value {
        json!({
            "configurations": self.configs.iter().map(ConfigSpec::to_json).collect::<Vec<_>>(),
            "workloads": self.workloads.iter().map(|w| json!({"name": w.name, "command": w.command})).collect::<Vec<_>>(),
            "metrics": self.metrics.iter().map(|m| m.name()).collect::<Vec<_>>(),
            "runs": self.runs,
            "warmup": self.warmup,
        })
    }
}

/// Why the runner stopped early.
#[derive(Debug, PartialEq)]
pub enum RunnerError {
    /// Bad input: an option, a plan that does not match the checkpoint.
    Input(String),
    /// A workload failed, crashed or could not start; the message names it, the configuration,
    /// its exit status or signal and the end of its standard error.
    Failed(String),
    /// The caller asked to stop; the run in flight was discarded.
    Interrupted,
}

impl From<DecideError> for RunnerError {
    fn from(e: DecideError) -> Self {
        match e {
            DecideError::Input(m) => RunnerError::Input(m),
        }
    }
}

/// One finished run, for progress reports.
#[derive(Clone, Debug)]
pub struct Done {
    /// Configuration name.
    pub configuration: String,
    /// Workload name.
    pub workload: String,
    /// Whether it was a warm-up.
    pub warmup: bool,
    /// Wall seconds it took (both runs when cachegrind ran too).
    pub seconds: f64,
}

/// A measurement in progress.
pub struct Runner {
    plan: Plan,
    results: Results,
    rapl: Option<Rapl>,
    valgrind: Option<PathBuf>,
    notes: Vec<String>,
    cursor: usize,
}

/// One cachegrind output file (`--cachegrind-out-file`): the command it profiled and the
/// totals of its `summary:` line by event name.
#[derive(Clone, Debug, PartialEq)]
pub struct Cachegrind {
    /// The `cmd:` line: the profiled program and its arguments as it was started.
    pub cmd: String,
    /// (event, total) in the order of the `events:` line.
    pub events: Vec<(String, u64)>,
}

impl Cachegrind {
    /// Reads the file at `path`: an error names it when it has no `events:` or `summary:` line.
    pub fn read(path: &Path) -> Result<Cachegrind, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        Cachegrind::parse(&text).map_err(|e| format!("{}: {e}", path.display()))
    }

    /// Parses the text of a cachegrind output file.
    pub fn parse(text: &str) -> Result<Cachegrind, String> {
        let line = |key: &str| text.lines().find_map(|l| l.strip_prefix(key)).map(str::trim);
        let names = line("events:").ok_or("no 'events:' line (not a cachegrind output file?)")?;
        let totals = line("summary:").ok_or("no 'summary:' line (cachegrind did not finish?)")?;
        let totals: Vec<u64> = totals.split_whitespace().map(|x| x.parse().map_err(|_| format!("summary: '{x}' is not a count"))).collect::<Result<_, _>>()?;
        let names: Vec<&str> = names.split_whitespace().collect();
        if names.len() != totals.len() {
            return Err(format!("{} events but {} totals in the summary", names.len(), totals.len()));
        }
        let events = names.iter().zip(totals).map(|(n, t)| (n.to_string(), t)).collect();
        Ok(Cachegrind { cmd: line("cmd:").unwrap_or_default().to_string(), events })
    }

    /// The total of `event`, or an error saying which event is missing (the cache events need
    /// `--cache-sim=yes`).
    pub fn get(&self, event: &str) -> Result<u64, String> {
        self.events.iter().find(|(n, _)| n == event).map(|(_, t)| *t).ok_or_else(|| format!("no {event} column (cachegrind without --cache-sim=yes?)"))
    }

    /// L1 data-cache misses: D1mr + D1mw.
    pub fn d1_misses(&self) -> Result<u64, String> {
        Ok(self.get("D1mr")? + self.get("D1mw")?)
    }

    /// Last-level cache misses of data accesses: DLmr + DLmw.
    pub fn ll_data_misses(&self) -> Result<u64, String> {
        Ok(self.get("DLmr")? + self.get("DLmw")?)
    }
}

/// L1 data-cache misses (D1mr + D1mw) summed over the cachegrind output files in `dir`.
pub fn cachegrind_l1d(dir: &Path) -> Result<u64, String> {
    let mut total = 0u64;
    let mut files = 0;
    for e in std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?.flatten() {
        total += Cachegrind::read(&e.path())?.d1_misses().map_err(|m| format!("{}: {m}", e.path().display()))?;
        files += 1;
    }
    if files == 0 {
        return Err("cachegrind wrote no output file".into());
    }
    Ok(total)
}

impl Runner {
    /// A new measurement. Energy is dropped, with a note saying why, where RAPL cannot be
    /// read; `l1d` needs valgrind on PATH.
    pub fn new(mut plan: Plan) -> Result<Runner, RunnerError> {
        let mut notes = Vec::new();
        let mut rapl = None;
        if plan.metrics.contains(&MetricKind::Energy) {
            match Rapl::open(&plan.powercap_root) {
                Ok(r) => rapl = Some(r),
                Err(why) => {
                    notes.push(format!("energy: not available on this machine ({why})"));
                    plan.metrics.retain(|m| *m != MetricKind::Energy);
                }
            }
        }
        let valgrind = if plan.metrics.contains(&MetricKind::L1d) {
            Some(heaplab_trace::launch::find_program("valgrind").ok_or_else(|| RunnerError::Input("--metrics l1d: valgrind is not installed (apt-get install -y valgrind)".into()))?)
        } else {
            None
        };
        if plan.metrics.is_empty() {
            return Err(RunnerError::Input(format!("nothing left to measure: {}", notes.join("; "))));
        }
        let mut metrics = Vec::new();
        for k in &plan.metrics {
            match k {
                MetricKind::Time => metrics.push(Metric { name: "time".into(), unit: "second".into(), better: Better::Lower }),
                MetricKind::Cpu => metrics.push(Metric { name: "cpu".into(), unit: "second".into(), better: Better::Lower }),
                MetricKind::Rss => metrics.push(Metric { name: "rss".into(), unit: "byte".into(), better: Better::Lower }),
                MetricKind::Energy => {
                    for m in rapl.as_ref().map(Rapl::metrics).unwrap_or_default() {
                        metrics.push(Metric { name: m, unit: "joule".into(), better: Better::Lower });
                    }
                }
                MetricKind::L1d => metrics.push(Metric { name: "l1d".into(), unit: "miss".into(), better: Better::Lower }),
            }
        }
        let mut series = Vec::new();
        for w in &plan.workloads {
            for c in &plan.configs {
                for m in &metrics {
                    series.push(Series { configuration: c.name.clone(), workload: w.name.clone(), metric: m.name.clone(), values: Vec::new(), warmups: Vec::new(), unstable: Vec::new() });
                }
            }
        }
        let provenance = json!({
            "tool": format!("heaplab {}", env!("CARGO_PKG_VERSION")),
            "source": SOURCE,
            "complete": false,
            "plan": plan.to_json(),
            "machine": machine(),
            "energy": rapl.as_ref().map_or(Value::Null, |r| json!(r.domains.iter().map(|d| json!({"metric": d.metric, "counter": d.energy_file})).collect::<Vec<_>>())),
            "valgrind": valgrind.as_ref().map(|v| command_line_version(v)),
            "notes": notes,
            "order": "interleaved: per round, every workload under every configuration; the first --warmup rounds are warm-ups",
        });
        let results = Results {
            reference: plan.configs[0].name.clone(),
            configurations: plan.configs.iter().map(|c| Configuration { name: c.name.clone(), description: c.describe() }).collect(),
            metrics,
            series,
            provenance,
        };
        Ok(Runner { plan, results, rapl, valgrind, notes, cursor: 0 })
    }

    /// Continues the checkpoint `previous` (a `results.json` the runner wrote, `file` naming it)
    /// under `plan`, which must be the plan it was started with.
    pub fn resume(plan: Plan, previous: Results, file: &str) -> Result<Runner, RunnerError> {
        let mut r = Runner::new(plan)?;
        let prov = &previous.provenance;
        if prov.get("source").and_then(Value::as_str) != Some(SOURCE) {
            return Err(RunnerError::Input(format!("{file}: not written by heaplab's runner (nothing to resume)")));
        }
        let want = r.plan.to_json();
        let had = prov.get("plan").cloned().unwrap_or(Value::Null);
        for key in ["configurations", "workloads", "metrics", "runs", "warmup"] {
            if want.get(key) != had.get(key) {
                return Err(RunnerError::Input(format!(
                    "{file}: was started with other {key} ({}; now {}): resume with the same command, or choose another directory",
                    had.get(key).map_or("none".into(), Value::to_string),
                    want[key]
                )));
            }
        }
        if r.results.metrics != previous.metrics {
            return Err(RunnerError::Input(format!("{file}: its metrics differ from what this machine measures (energy counters appeared or vanished)")));
        }
        r.results.series = previous.series;
        r.results.provenance["resumed"] = json!(prov.get("resumed").and_then(Value::as_u64).unwrap_or(0) + 1);
        Ok(r)
    }

    /// The results so far.
    pub fn results(&self) -> &Results {
        &self.results
    }

    /// What was left out and why (energy not readable).
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    /// The plan.
    pub fn plan(&self) -> &Plan {
        &self.plan
    }

    /// Runs taken so far of (configuration, workload), warm-ups included.
    fn taken(&self, c: &str, w: &str) -> usize {
        let m = &self.results.metrics[0].name;
        self.results.series(c, w, m).map_or(0, |s| s.values.len() + s.warmups.len())
    }

    /// Runs finished, warm-ups included.
    pub fn done(&self) -> usize {
        let per = self.plan.runs + self.plan.warmup;
        self.plan.workloads.iter().flat_map(|w| self.plan.configs.iter().map(move |c| (c, w))).map(|(c, w)| self.taken(&c.name, &w.name).min(per)).sum()
    }

    /// Whether every run is done.
    pub fn finished(&self) -> bool {
        self.done() == self.plan.total()
    }

    /// The next run in the interleaved order that has not been taken: (round, workload, config).
    fn next(&mut self) -> Option<(usize, usize, usize)> {
        let (nc, nw) = (self.plan.configs.len(), self.plan.workloads.len());
        while self.cursor < self.plan.total() {
            let i = self.cursor;
            let (round, rem) = (i / (nc * nw), i % (nc * nw));
            let (w, c) = (rem / nc, rem % nc);
            if self.taken(&self.plan.configs[c].name, &self.plan.workloads[w].name) <= round {
                return Some((round, w, c));
            }
            self.cursor += 1;
        }
        None
    }

    /// Takes the next run; `Ok(None)` when all are done. `interrupted` is asked after the run:
    /// when it says so, a run that failed is discarded as the interruption's victim and
    /// [`RunnerError::Interrupted`] returned (a run that succeeded is kept).
    pub fn step(&mut self, interrupted: &dyn Fn() -> bool) -> Result<Option<Done>, RunnerError> {
        let Some((round, w, c)) = self.next() else { return Ok(None) };
        let (cfg, wl) = (self.plan.configs[c].clone(), self.plan.workloads[w].clone());
        let spec = RunSpec {
            program: PathBuf::from("/bin/sh"),
            arg0: "sh".into(),
            args: vec!["-c".into(), wl.command.clone()],
            env: cfg.env.clone(),
            preload: cfg.allocator.library.clone(),
            stdin: None,
            stdout: None,
            cwd: self.plan.cwd.clone(),
            timeout: self.plan.timeout,
            unsampled: false,
        };
        let fail = |what: String, tail: &str| {
            let tail = if tail.is_empty() { " (no standard error)".to_string() } else { format!("; its standard error ends:\n{tail}") };
            RunnerError::Failed(format!("workload '{}' under configuration '{}' (`{}`) {what}{tail}", wl.name, cfg.name, wl.command))
        };
        let before = self.rapl.as_ref().map(Rapl::read).transpose().map_err(|e| RunnerError::Failed(format!("energy: {e}")))?;
        let run = run_once(&spec).map_err(|e| fail(format!("could not start: {e}"), ""))?;
        let after = self.rapl.as_ref().map(Rapl::read).transpose().map_err(|e| RunnerError::Failed(format!("energy: {e}")))?;
        if !run.ok() {
            if interrupted() {
                return Err(RunnerError::Interrupted);
            }
            let how = if run.status < 0 {
                if -run.status == 9 && run.wall >= self.plan.timeout.as_secs_f64() {
                    format!("was killed after the {} s timeout", self.plan.timeout.as_secs())
                } else {
                    format!("was killed by {}", heaplab_trace::launch::signal_name(-run.status))
                }
            } else {
                format!("failed with exit status {}", run.status)
            };
            return Err(fail(how, &run.stderr_tail));
        }
        let mut seconds = run.wall;
        let mut values: Vec<(String, f64)> = Vec::new();
        for k in self.plan.metrics.clone() {
            match k {
                MetricKind::Time => values.push(("time".into(), run.wall)),
                MetricKind::Cpu => values.push(("cpu".into(), run.user + run.sys)),
                MetricKind::Rss => values.push(("rss".into(), run.peak(RssMethod::Rusage) as f64)),
                MetricKind::Energy => {
                    if let (Some(r), Some(b), Some(a)) = (&self.rapl, &before, &after) {
                        values.extend(r.joules(b, a));
                    }
                }
                MetricKind::L1d => {
                    let (misses, secs) = self.cachegrind(&spec).map_err(|e| fail(e, ""))?;
                    seconds += secs;
                    values.push(("l1d".into(), misses as f64));
                }
            }
        }
        if interrupted() && values.is_empty() {
            return Err(RunnerError::Interrupted);
        }
        let warmup = round < self.plan.warmup;
        for (m, v) in values {
            let unit = self.results.metric(&m).map(|x| x.unit.clone()).unwrap_or_default();
            if let Some(s) = self.results.series.iter_mut().find(|s| s.configuration == cfg.name && s.workload == wl.name && s.metric == m) {
                if warmup {
                    s.warmups.push(v);
                } else {
                    s.values.push(v);
                    // pyperf's rules; the 1 ms rule for wall time only (one loop per run).
                    s.unstable = pyperf_checks(&s.values, &unit, (m == "time").then_some(1.0));
                }
            }
        }
        self.cursor += 1;
        Ok(Some(Done { configuration: cfg.name, workload: wl.name, warmup, seconds }))
    }

    /// The same run under cachegrind: its L1D misses and the seconds it took.
    fn cachegrind(&self, spec: &RunSpec) -> Result<(u64, f64), String> {
        let vg = self.valgrind.as_ref().ok_or("valgrind not found")?;
        let dir = std::env::temp_dir().join(format!("heaplab-cachegrind-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let mut args = vec!["--tool=cachegrind".to_string(), "--cache-sim=yes".into(), "--trace-children=yes".into(), format!("--cachegrind-out-file={}/cg.%p", dir.display()), "/bin/sh".into()];
        args.extend(spec.args.iter().cloned());
        let cg = RunSpec { program: vg.clone(), arg0: "valgrind".into(), args, timeout: spec.timeout * 50, ..spec.clone() };
        let run = run_once(&cg).map_err(|e| format!("could not start valgrind: {e}"));
        let out = run.and_then(|r| {
            if r.ok() {
                cachegrind_l1d(&dir).map(|m| (m, r.wall))
            } else {
                Err(format!("failed under cachegrind (status {}): {}", r.status, r.stderr_tail))
            }
        });
        let _ = std::fs::remove_dir_all(&dir);
        out
    }

    /// The results as `results.json` (the analysis left to the caller: `null` here), marked
    /// complete or not.
    pub fn checkpoint(&mut self) -> Value {
        self.results.provenance["complete"] = json!(self.finished());
        self.results.to_json(Value::Null)
    }

    /// Writes [`Runner::checkpoint`] to `path` atomically.
    pub fn write_checkpoint(&mut self, path: &Path) -> std::io::Result<()> {
        let doc = self.checkpoint();
        heaplab_model::files::write_atomic(&path.to_string_lossy(), |w| w.write_all(serde_json::to_string_pretty(&doc).expect("JSON of plain values").as_bytes()))
    }
}

/// Whether `results` is a checkpoint of the runner that is not finished.
pub fn is_partial(results: &Results) -> bool {
    results.provenance.get("source").and_then(Value::as_str) == Some(SOURCE) && results.provenance.get("complete").and_then(Value::as_bool) == Some(false)
}

fn command_line_version(prog: &Path) -> Value {
    std::process::Command::new(prog).arg("--version").output().ok().map_or(Value::Null, |o| json!(String::from_utf8_lossy(&o.stdout).trim().to_string()))
}

/// The machine, for the provenance: CPU model, cores, kernel, host name.
fn machine() -> Value {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpuinfo.lines().find_map(|l| l.strip_prefix("model name").and_then(|r| r.split_once(':')).map(|(_, v)| v.trim().to_string()));
    let read = |p: &str| std::fs::read_to_string(p).ok().map(|s| s.trim().to_string());
    json!({
        "cpu": model,
        "cores": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
        "kernel": read("/proc/sys/kernel/osrelease"),
        "host": read("/proc/sys/kernel/hostname"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_configurations_and_workloads() {
        let c = ConfigSpec::parse("ref=glibc").unwrap();
        assert_eq!((c.name.as_str(), c.allocator.library.is_none(), c.env.len()), ("ref", true, 0));
        let c = ConfigSpec::parse("glibc,MALLOC_ARENA_MAX=1").unwrap();
        assert_eq!(c.name, "glibc");
        assert_eq!(c.env, [("MALLOC_ARENA_MAX".to_string(), "1".to_string())]);
        let c = ConfigSpec::parse("one=MALLOC_ARENA_MAX=1").unwrap();
        assert_eq!((c.name.as_str(), c.allocator.name.as_str()), ("one", "glibc"));
        let e = ConfigSpec::parse("x=nosuchalloc").unwrap_err();
        assert!(e.to_string().contains("unknown allocator 'nosuchalloc'"), "{e}");
        assert!(ConfigSpec::parse("x=glibc,NOVALUE").unwrap_err().to_string().contains("KEY=VALUE"));
        let w = WorkloadSpec::parse("gz=gzip -c /etc/services > /dev/null").unwrap();
        assert_eq!((w.name.as_str(), w.command.as_str()), ("gz", "gzip -c /etc/services > /dev/null"));
        assert!(WorkloadSpec::parse("gzip -c x").is_err());
        assert_eq!(MetricKind::parse_list("time,rss,time").unwrap(), [MetricKind::Time, MetricKind::Rss]);
        assert!(MetricKind::parse_list("time,watts").unwrap_err().to_string().contains("'watts'"));
    }

    fn plan(workloads: &[(&str, &str)], runs: usize, warmup: usize) -> Plan {
        Plan {
            configs: vec![ConfigSpec::parse("a=glibc").unwrap(), ConfigSpec::parse("b=glibc,HEAPLAB_TEST=1").unwrap()],
            workloads: workloads.iter().map(|(n, c)| WorkloadSpec { name: n.to_string(), command: c.to_string() }).collect(),
            metrics: vec![MetricKind::Time, MetricKind::Cpu, MetricKind::Rss, MetricKind::Energy],
            runs,
            warmup,
            timeout: Duration::from_secs(60),
            cwd: std::env::temp_dir(),
            powercap_root: PathBuf::from("/nonexistent/powercap"),
        }
    }

    #[test]
    fn interleaves_keeps_warmups_and_resumes() {
        let mut p = plan(&[("t", "true"), ("e", "echo hi")], 3, 1);
        p.check(None).unwrap();
        let mut r = Runner::new(p.clone()).unwrap();
        assert!(r.notes()[0].starts_with("energy: not available on this machine"), "{:?}", r.notes());
        assert_eq!(r.results().metrics.iter().map(|m| m.name.as_str()).collect::<Vec<_>>(), ["time", "cpu", "rss"]);
        let mut order = Vec::new();
        for _ in 0..5 {
            let d = r.step(&|| false).unwrap().unwrap();
            order.push((d.workload, d.configuration, d.warmup));
        }
        let want = [("t", "a", true), ("t", "b", true), ("e", "a", true), ("e", "b", true), ("t", "a", false)];
        assert_eq!(order, want.map(|(w, c, x)| (w.to_string(), c.to_string(), x)));
        // A checkpoint, read back, resumes where it stopped.
        let doc = r.checkpoint();
        let back = Results::from_json("cp", &doc).unwrap();
        assert!(is_partial(&back));
        let mut r2 = Runner::resume(p.clone(), back, "cp").unwrap();
        assert_eq!(r2.done(), 5);
        let d = r2.step(&|| false).unwrap().unwrap();
        assert_eq!((d.workload.as_str(), d.configuration.as_str()), ("t", "b"));
        while r2.step(&|| false).unwrap().is_some() {}
        assert!(r2.finished());
        let s = r2.results().series("b", "e", "rss").unwrap();
        assert_eq!((s.values.len(), s.warmups.len()), (3, 1));
        assert!(s.values.iter().all(|v| *v > 0.0));
        // Another plan does not resume it.
        let other = plan(&[("t", "true")], 3, 1);
        let e = Runner::resume(other, Results::from_json("cp", &doc).unwrap(), "cp").err().unwrap();
        assert!(matches!(&e, RunnerError::Input(m) if m.contains("other workloads")), "{e:?}");
    }

    #[test]
    fn a_failing_workload_is_named() {
        let mut p = plan(&[("ok", "true"), ("bad", "echo oops >&2; exit 3")], 2, 0);
        p.check(Some("b")).unwrap();
        assert_eq!(p.configs[0].name, "b");
        let mut r = Runner::new(p).unwrap();
        r.step(&|| false).unwrap();
        r.step(&|| false).unwrap();
        let e = r.step(&|| false).unwrap_err();
        let RunnerError::Failed(m) = e else { panic!("{e:?}") };
        assert!(m.contains("workload 'bad'") && m.contains("'b'") && m.contains("exit status 3") && m.contains("oops"), "{m}");
        assert_eq!(r.done(), 2);
        let crash = plan(&[("seg", "kill -SEGV $$")], 2, 0);
        let e = Runner::new(crash).unwrap().step(&|| false).unwrap_err();
        assert!(matches!(&e, RunnerError::Failed(m) if m.contains("SIGSEGV")), "{e:?}");
        // Interrupted: a failed run is the interruption's victim, not the workload's fault.
        let e = Runner::new(plan(&[("bad", "exit 1")], 2, 0)).unwrap().step(&|| true).unwrap_err();
        assert_eq!(e, RunnerError::Interrupted);
    }

    #[test]
    fn reads_cachegrind_output() {
        let dir = std::env::temp_dir().join(format!("heaplab-cg-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("cg.1"), "desc: I1 cache\ncmd: sh\nevents: Ir I1mr ILmr Dr D1mr DLmr Dw D1mw DLmw\nfl=x\n1 2 3\nsummary: 100 1 1 50 7 2 30 5 1\n").unwrap();
        std::fs::write(dir.join("cg.2"), "events: Ir Dr D1mr Dw D1mw\nsummary: 10 5 2 3 1\n").unwrap();
        assert_eq!(cachegrind_l1d(&dir).unwrap(), 15);
        let one = Cachegrind::read(&dir.join("cg.1")).unwrap();
        assert_eq!((one.cmd.as_str(), one.d1_misses(), one.ll_data_misses()), ("sh", Ok(12), Ok(3)));
        assert!(Cachegrind::parse("events: Ir D1mr\nsummary: 1\n").unwrap_err().contains("2 events but 1 totals"));
        assert!(Cachegrind::parse("events: Ir\n").unwrap_err().contains("summary"));
        std::fs::write(dir.join("cg.3"), "events: Ir\nsummary: 10\n").unwrap();
        assert!(cachegrind_l1d(&dir).unwrap_err().contains("D1mr"));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
