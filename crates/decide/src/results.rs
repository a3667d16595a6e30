//! The compare results: configurations × workloads × metrics, every raw sample, and where they
//! came from; read from and written to `results.json` (format `heaplab-compare`, version 1,
//! described in docs/decide.md). Readers (pyperf files now, heaplab's own runner later) fill a
//! [`Results`]; the analysis ([`crate::hpt`]) reads nothing else.

use crate::DecideError;
use serde_json::{json, Map, Value};

/// The format name written in `results.json`.
pub const FORMAT: &str = "heaplab-compare";
/// The format version written in `results.json`.
pub const VERSION: u64 = 1;

/// Which way a metric improves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Better {
    /// Smaller values are better (time, memory, energy).
    Lower,
    /// Larger values are better (throughput).
    Higher,
}

impl Better {
    /// "lower" or "higher".
    pub fn name(self) -> &'static str {
        match self {
            Better::Lower => "lower",
            Better::Higher => "higher",
        }
    }

    fn parse(s: &str) -> Option<Better> {
        match s {
            "lower" => Some(Better::Lower),
            "higher" => Some(Better::Higher),
            _ => None,
        }
    }
}

/// A measured quantity.
#[derive(Clone, Debug, PartialEq)]
pub struct Metric {
    /// Short name: `time`, `memory`, `cpu`, `rss`, `energy-core`, …
    pub name: String,
    /// Unit of the raw values (`second`, `byte`, `joule`, …).
    pub unit: String,
    /// Which way it improves.
    pub better: Better,
}

/// One configuration under comparison (an allocator, environment settings, a build).
#[derive(Clone, Debug, PartialEq)]
pub struct Configuration {
    /// Its name in tables.
    pub name: String,
    /// Free-form description: the files it was read from, or the allocator and environment.
    pub description: String,
}

/// The samples of one configuration on one workload for one metric.
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    /// Configuration name.
    pub configuration: String,
    /// Workload (benchmark) name.
    pub workload: String,
    /// Metric name.
    pub metric: String,
    /// The measured values, warm-ups excluded, in the order taken.
    pub values: Vec<f64>,
    /// Warm-up values, kept for the record and never analysed.
    pub warmups: Vec<f64>,
    /// Why the series is unstable (empty: stable), one sentence each.
    pub unstable: Vec<String>,
}

/// Everything a comparison measured.
#[derive(Clone, Debug, PartialEq)]
pub struct Results {
    /// The configuration the others are compared with.
    pub reference: String,
    /// All configurations, the reference first.
    pub configurations: Vec<Configuration>,
    /// The metrics measured.
    pub metrics: Vec<Metric>,
    /// The series.
    pub series: Vec<Series>,
    /// Where the data came from: tool, inputs, machine, versions (free-form JSON object).
    pub provenance: Value,
}

impl Results {
    /// The series of `configuration` on `workload` for `metric`.
    pub fn series(&self, configuration: &str, workload: &str, metric: &str) -> Option<&Series> {
        self.series.iter().find(|s| s.configuration == configuration && s.workload == workload && s.metric == metric)
    }

    /// The workloads measured for `metric` (any configuration), in first-seen order.
    pub fn workloads(&self, metric: &str) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for s in self.series.iter().filter(|s| s.metric == metric) {
            if !out.contains(&s.workload) {
                out.push(s.workload.clone());
            }
        }
        out
    }

    /// The metric named `name`.
    pub fn metric(&self, name: &str) -> Option<&Metric> {
        self.metrics.iter().find(|m| m.name == name)
    }

    /// The results as the `results.json` document, with `analysis` (any JSON) beside the data.
    pub fn to_json(&self, analysis: Value) -> Value {
        json!({
            "format": FORMAT,
            "version": VERSION,
            "reference": self.reference,
            "configurations": self.configurations.iter().map(|c| json!({"name": c.name, "description": c.description})).collect::<Vec<_>>(),
            "metrics": self.metrics.iter().map(|m| json!({"name": m.name, "unit": m.unit, "better": m.better.name()})).collect::<Vec<_>>(),
            "series": self.series.iter().map(|s| json!({
                "configuration": s.configuration,
                "workload": s.workload,
                "metric": s.metric,
                "values": s.values,
                "warmups": s.warmups,
                "unstable": s.unstable,
            })).collect::<Vec<_>>(),
            "provenance": self.provenance,
            "analysis": analysis,
        })
    }

    /// Reads a `results.json` document; `file` names it in errors.
    pub fn from_json(file: &str, v: &Value) -> Result<Results, DecideError> {
        let bad = |what: &str| DecideError::Input(format!("{file}: not a heaplab compare results file: {what}"));
        let obj = v.as_object().ok_or_else(|| bad("expected a JSON object"))?;
        if obj.get("format").and_then(Value::as_str) != Some(FORMAT) {
            return Err(bad(&format!("field 'format' must be \"{FORMAT}\"")));
        }
        match obj.get("version").and_then(Value::as_u64) {
            Some(VERSION) => {}
            Some(other) => return Err(DecideError::Input(format!("{file}: results format version {other} is not supported (this heaplab reads version {VERSION})"))),
            None => return Err(bad("field 'version' missing")),
        }
        let text = |o: &Map<String, Value>, k: &str, at: &str| -> Result<String, DecideError> {
            o.get(k).and_then(Value::as_str).map(str::to_string).ok_or_else(|| bad(&format!("{at}: field '{k}' must be a string")))
        };
        let numbers = |o: &Map<String, Value>, k: &str, at: &str| -> Result<Vec<f64>, DecideError> {
            match o.get(k) {
                None => Ok(Vec::new()),
                Some(Value::Array(a)) => a
                    .iter()
                    .map(|x| x.as_f64().filter(|f| f.is_finite()).ok_or_else(|| bad(&format!("{at}: '{k}' must hold finite numbers"))))
                    .collect(),
                Some(_) => Err(bad(&format!("{at}: '{k}' must be an array"))),
            }
        };
        let list = |k: &str| obj.get(k).and_then(Value::as_array).ok_or_else(|| bad(&format!("field '{k}' must be an array")));
        let mut configurations = Vec::new();
        for (i, c) in list("configurations")?.iter().enumerate() {
            let at = format!("configurations[{i}]");
            let o = c.as_object().ok_or_else(|| bad(&format!("{at}: expected an object")))?;
            configurations.push(Configuration { name: text(o, "name", &at)?, description: o.get("description").and_then(Value::as_str).unwrap_or("").to_string() });
        }
        let mut metrics = Vec::new();
        for (i, m) in list("metrics")?.iter().enumerate() {
            let at = format!("metrics[{i}]");
            let o = m.as_object().ok_or_else(|| bad(&format!("{at}: expected an object")))?;
            let better = text(o, "better", &at)?;
            metrics.push(Metric {
                name: text(o, "name", &at)?,
                unit: o.get("unit").and_then(Value::as_str).unwrap_or("").to_string(),
                better: Better::parse(&better).ok_or_else(|| bad(&format!("{at}: 'better' must be \"lower\" or \"higher\", not '{better}'")))?,
            });
        }
        let mut series = Vec::new();
        for (i, s) in list("series")?.iter().enumerate() {
            let at = format!("series[{i}]");
            let o = s.as_object().ok_or_else(|| bad(&format!("{at}: expected an object")))?;
            let unstable = match o.get("unstable") {
                None => Vec::new(),
                Some(Value::Array(a)) => a.iter().map(|x| x.as_str().unwrap_or("unstable").to_string()).collect(),
                Some(_) => return Err(bad(&format!("{at}: 'unstable' must be an array of strings"))),
            };
            series.push(Series {
                configuration: text(o, "configuration", &at)?,
                workload: text(o, "workload", &at)?,
                metric: text(o, "metric", &at)?,
                values: numbers(o, "values", &at)?,
                warmups: numbers(o, "warmups", &at)?,
                unstable,
            });
        }
        let r = Results {
            reference: obj.get("reference").and_then(Value::as_str).ok_or_else(|| bad("field 'reference' must be a string"))?.to_string(),
            configurations,
            metrics,
            series,
            provenance: obj.get("provenance").cloned().unwrap_or(Value::Null),
        };
        r.check(file)?;
        Ok(r)
    }

    /// Fails unless the names hang together: the reference is a configuration, every series
    /// names a known configuration and metric, no series is given twice.
    pub fn check(&self, file: &str) -> Result<(), DecideError> {
        let err = |m: String| Err(DecideError::Input(format!("{file}: {m}")));
        if !self.configurations.iter().any(|c| c.name == self.reference) {
            return err(format!("the reference '{}' is not one of the configurations", self.reference));
        }
        for (i, c) in self.configurations.iter().enumerate() {
            if self.configurations[..i].iter().any(|d| d.name == c.name) {
                return err(format!("configuration '{}' is given twice", c.name));
            }
        }
        for (i, s) in self.series.iter().enumerate() {
            if !self.configurations.iter().any(|c| c.name == s.configuration) {
                return err(format!("series {i} names the unknown configuration '{}'", s.configuration));
            }
            if self.metric(&s.metric).is_none() {
                return err(format!("series {i} names the unknown metric '{}'", s.metric));
            }
            if self.series[..i].iter().any(|t| t.configuration == s.configuration && t.workload == s.workload && t.metric == s.metric) {
                return err(format!("configuration '{}', workload '{}', metric '{}' is given twice", s.configuration, s.workload, s.metric));
            }
        }
        Ok(())
    }
}

/// pyperf's stability checks on one series (`pyperf check`): the standard deviation is at
/// least 10% of the mean, or the minimum or maximum is at least 50% away from the mean, or
/// (for times, when the loop count is known) the shortest raw value is under 1 ms. pyperf's
/// further warning that more processes are needed is not reproduced.
pub fn pyperf_checks(values: &[f64], unit: &str, loops: Option<f64>) -> Vec<String> {
    let mut out = Vec::new();
    if values.is_empty() {
        return vec!["no values".into()];
    }
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    if mean == 0.0 {
        return out;
    }
    if values.len() >= 2 {
        let var = values.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / (n - 1.0);
        let pct = var.sqrt() * 100.0 / mean;
        if pct >= 10.0 {
            out.push(format!("the standard deviation is {pct:.0}% of the mean"));
        }
    }
    let lo = values.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    for (what, v) in [("minimum", lo), ("maximum", hi)] {
        let pct = (v - mean) * 100.0 / mean;
        if pct.abs() >= 50.0 {
            let dir = if pct >= 0.0 { "greater" } else { "smaller" };
            out.push(format!("the {what} is {:.0}% {dir} than the mean", pct.abs()));
        }
    }
    if let (Some(loops), "second") = (loops, unit) {
        if lo * loops < 1e-3 {
            out.push(format!("the shortest raw value is only {:.3} ms", lo * loops * 1e3));
        }
    }
    out
}
