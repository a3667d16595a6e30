//! Reading pyperf / pyperformance result files (JSON, optionally gzip-compressed) into
//! [`Results`]. A file holds one configuration's benchmarks: `{"version": "1.0", "metadata":
//! {...}, "benchmarks": [{"metadata": {"name", "unit", "loops", ...}, "runs": [{"values": [...],
//! "warmups": [[loops, value], ...]}, ...]}]}`. Calibration runs (warm-ups only) are skipped;
//! the metric follows the unit: `second` → time, `byte` → memory (pyperf's --track-memory),
//! anything else → the unit's name. Other JSON (hyperfine's export, a heaplab results file,
//! Google Benchmark's) is refused by name.

use crate::results::{pyperf_checks, Better, Configuration, Metric, Results, Series};
use crate::DecideError;
use serde_json::{json, Value};
use std::io::Read;

/// One input: a configuration name and the pyperf file holding (one metric of) its results.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Input {
    /// Configuration name.
    pub configuration: String,
    /// Path of the pyperf JSON file.
    pub path: String,
}

impl Input {
    /// Parses `NAME=PATH` or `PATH` (the name is then the file name without `.json`/`.json.gz`).
    pub fn parse(arg: &str) -> Input {
        if let Some((name, path)) = arg.split_once('=') {
            if !name.is_empty() && !name.contains('/') {
                return Input { configuration: name.into(), path: path.into() };
            }
        }
        let base = arg.rsplit('/').next().unwrap_or(arg);
        let stem = base.strip_suffix(".gz").unwrap_or(base);
        let stem = stem.strip_suffix(".json").unwrap_or(stem);
        Input { configuration: stem.to_string(), path: arg.to_string() }
    }
}

/// Reads a JSON document from `path`, gunzipping it when it starts with the gzip magic.
pub fn read_json(path: &str) -> Result<Value, DecideError> {
    let bytes = std::fs::read(path).map_err(|e| DecideError::Input(format!("{path}: cannot read: {e}")))?;
    let text = if bytes.starts_with(&[0x1f, 0x8b]) {
        let mut s = String::new();
        flate2::read::MultiGzDecoder::new(&bytes[..])
            .read_to_string(&mut s)
            .map_err(|e| DecideError::Input(format!("{path}: gzip data cannot be read: {e}")))?;
        s
    } else {
        String::from_utf8(bytes).map_err(|_| DecideError::Input(format!("{path}: not JSON (not UTF-8 text)")))?
    };
    serde_json::from_str(&text).map_err(|e| DecideError::Input(format!("{path}: not JSON: {e}")))
}

/// Names the format of a JSON document that is not pyperf's, for the error message.
fn other_format(v: &Value) -> Option<&'static str> {
    let o = v.as_object()?;
    if o.get("format").and_then(Value::as_str) == Some(crate::results::FORMAT) {
        return Some("a heaplab compare results file (give it to `heaplab rank`)");
    }
    let results = o.get("results").and_then(Value::as_array);
    if results.is_some_and(|r| r.iter().any(|x| x.get("command").is_some() && x.get("times").is_some())) {
        return Some("a hyperfine JSON export");
    }
    if o.get("context").is_some() && o.get("benchmarks").and_then(Value::as_array).is_some_and(|b| b.iter().any(|x| x.get("real_time").is_some())) {
        return Some("a Google Benchmark JSON file");
    }
    None
}

/// Reads the pyperf files of `inputs` (the first one's configuration is the reference); files
/// naming the same configuration add their metrics to it.
pub fn read(inputs: &[Input]) -> Result<Results, DecideError> {
    if inputs.is_empty() {
        return Err(DecideError::Input("--pyperf needs at least two files: the reference first, then the configurations to compare".into()));
    }
    let mut configurations: Vec<Configuration> = Vec::new();
    let mut metrics: Vec<Metric> = Vec::new();
    let mut series: Vec<Series> = Vec::new();
    let mut files = Vec::new();
    for input in inputs {
        let path = &input.path;
        let doc = read_json(path)?;
        let not_pyperf = |why: &str| {
            let what = other_format(&doc).map(|f| format!(" (it looks like {f})")).unwrap_or_default();
            DecideError::Input(format!("{path}: not a pyperf results file{what}: {why}; heaplab compare --pyperf reads the JSON that pyperf and pyperformance write (-o FILE.json)"))
        };
        let obj = doc.as_object().ok_or_else(|| not_pyperf("expected a JSON object"))?;
        let version = obj.get("version").and_then(Value::as_str).ok_or_else(|| not_pyperf("no \"version\" string"))?;
        if !version.starts_with("1.") {
            return Err(DecideError::Input(format!("{path}: pyperf file format version {version} is not supported (1.x is)")));
        }
        let benches = obj.get("benchmarks").and_then(Value::as_array).ok_or_else(|| not_pyperf("no \"benchmarks\" array"))?;
        let common = obj.get("metadata").and_then(Value::as_object).cloned().unwrap_or_default();
        if !configurations.iter().any(|c| c.name == input.configuration) {
            configurations.push(Configuration { name: input.configuration.clone(), description: String::new() });
        }
        let conf = configurations.iter_mut().find(|c| c.name == input.configuration).expect("added");
        if !conf.description.is_empty() {
            conf.description.push_str(", ");
        }
        conf.description.push_str(&format!("pyperf file {path}"));
        for (i, b) in benches.iter().enumerate() {
            let at = format!("benchmarks[{i}]");
            let meta = b.get("metadata").and_then(Value::as_object);
            let get = |k: &str| meta.and_then(|m| m.get(k)).or_else(|| common.get(k));
            let name = get("name").and_then(Value::as_str).ok_or_else(|| not_pyperf(&format!("{at} has no name in its metadata")))?;
            let unit = get("unit").and_then(Value::as_str).unwrap_or("second");
            let runs = b.get("runs").and_then(Value::as_array).ok_or_else(|| not_pyperf(&format!("{at} ({name}) has no \"runs\" array")))?;
            let mut values = Vec::new();
            let mut warmups = Vec::new();
            let mut loops: Option<f64> = get("loops").and_then(Value::as_f64);
            for (j, r) in runs.iter().enumerate() {
                let num = |x: &Value| x.as_f64().filter(|f| f.is_finite());
                if let Some(vs) = r.get("values").and_then(Value::as_array) {
                    for x in vs {
                        values.push(num(x).ok_or_else(|| DecideError::Input(format!("{path}: {at} ({name}) run {j}: a value is not a finite number")))?);
                    }
                }
                if let Some(ws) = r.get("warmups").and_then(Value::as_array) {
                    for w in ws {
                        // [loops, value] pairs.
                        if let Some(v) = w.as_array().and_then(|p| p.get(1)).and_then(num) {
                            warmups.push(v);
                        }
                    }
                }
                if loops.is_none() {
                    loops = r.get("metadata").and_then(|m| m.get("loops")).and_then(Value::as_f64);
                }
            }
            let inner = get("inner_loops").and_then(Value::as_f64).unwrap_or(1.0);
            let (metric, better) = match unit {
                "second" => ("time".to_string(), Better::Lower),
                "byte" => ("memory".to_string(), Better::Lower),
                other => (other.to_string(), Better::Lower),
            };
            if !metrics.iter().any(|m| m.name == metric) {
                metrics.push(Metric { name: metric.clone(), unit: unit.to_string(), better });
            }
            if series.iter().any(|s| s.configuration == input.configuration && s.workload == name && s.metric == metric) {
                return Err(DecideError::Input(format!("{path}: benchmark '{name}' ({metric}) of configuration '{}' is given twice", input.configuration)));
            }
            let unstable = pyperf_checks(&values, unit, loops.map(|l| l * inner));
            series.push(Series { configuration: input.configuration.clone(), workload: name.to_string(), metric, values, warmups, unstable });
        }
        files.push(json!({"path": path, "configuration": input.configuration, "pyperf_version": version, "metadata": Value::Object(common)}));
    }
    if configurations.len() < 2 {
        return Err(DecideError::Input(format!(
            "--pyperf: only one configuration ('{}'); give the reference and at least one more (NAME=FILE or FILE)",
            configurations[0].name
        )));
    }
    let r = Results {
        reference: configurations[0].name.clone(),
        configurations,
        metrics,
        series,
        provenance: json!({"tool": format!("heaplab {}", env!("CARGO_PKG_VERSION")), "source": "pyperf", "files": files}),
    };
    r.check("--pyperf")?;
    Ok(r)
}
