//! What the reports of heaplab's runtime libraries (the layout runtime, the grouped allocator)
//! have in common: the fields every runtime counts (what fell back, stray frees, peak RSS, how
//! the image ended) and those the launcher adds (wall time, exit status, command, fallback
//! allocator); reading them from the JSON a runtime writes, writing them back under the same
//! keys, and their sentences in a report's summary. Each runtime's report embeds a [`Common`]
//! and reads, writes and tells the rest itself.

use heaplab_model::units::{bytes, grouped};
use serde_json::{json, Map, Value};

/// A runtime's JSON report being read: numbers by path, errors naming the file and the report.
pub struct Fields<'a> {
    /// The report's source, for errors (a file name).
    what: &'a str,
    /// Whose report it is, for errors: `the runtime's report`.
    who: &'a str,
    /// The parsed JSON.
    pub json: Value,
}

impl<'a> Fields<'a> {
    /// Parses `text`, the report of `who` read from `what`.
    pub fn parse(what: &'a str, who: &'a str, text: &str) -> Result<Fields<'a>, String> {
        let json = serde_json::from_str(text).map_err(|e| format!("{what}: {who} is not JSON: {e}"))?;
        Ok(Fields { what, who, json })
    }

    /// The value at `path`: keys joined by '.', an array's element by its index (`groups.0`).
    pub fn at(&self, path: &str) -> &Value {
        path.split('.').fold(&self.json, |v, k| match k.parse::<usize>() {
            Ok(i) => &v[i],
            Err(_) => &v[k],
        })
    }

    /// The number at `path`, which the report must have.
    pub fn need(&self, path: &str) -> Result<u64, String> {
        self.at(path).as_u64().ok_or_else(|| format!("{}: {} has no '{path}'", self.what, self.who))
    }

    /// The string at `path` ("" without one).
    pub fn text(&self, path: &str) -> String {
        self.at(path).as_str().unwrap_or_default().to_string()
    }
}

/// The fields every runtime report has.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Common {
    /// Why the runtime ran without its layout or groups (a damaged file), if it did.
    pub error: Option<String>,
    /// Allocations sent to the fallback allocator.
    pub fallback_count: u64,
    /// Their requested bytes.
    pub fallback_bytes: u64,
    /// Frees of the runtime's addresses where no live block starts (program errors, ignored).
    pub stray_frees: u64,
    /// Peak RSS of the program: the run launcher's (wait4's), not the runtime's.
    pub peak_rss_bytes: u64,
    /// How the program's image ended: `exit`, `_exit`, `exec`, `fatal signal`.
    pub end: String,
    /// Wall time of the run (launcher).
    pub wall_seconds: f64,
    /// The program's exit code, when it exited.
    pub exit_code: Option<i32>,
    /// The signal that killed it, when one did.
    pub signal: Option<i32>,
    /// The command run.
    pub command: Vec<String>,
    /// The fallback allocator's name.
    pub fallback_allocator: String,
}

impl Common {
    /// The runtime's fields of a report; the launcher's are left empty for it to fill.
    pub fn read(f: &Fields) -> Result<Common, String> {
        Ok(Common {
            error: f.at("error").as_str().map(String::from),
            fallback_count: f.need("fallback.count")?,
            fallback_bytes: f.need("fallback.bytes")?,
            stray_frees: f.need("stray_frees")?,
            end: f.text("end"),
            ..Common::default()
        })
    }

    /// The report's `fallback` object: the count and bytes, and `reasons` by name.
    pub fn fallback_json(&self, reasons: &[(&str, u64)]) -> Value {
        let mut fallback: Map<String, Value> = reasons.iter().map(|(k, n)| (k.to_string(), json!(n))).collect();
        fallback.insert("count".into(), json!(self.fallback_count));
        fallback.insert("bytes".into(), json!(self.fallback_bytes));
        Value::Object(fallback)
    }

    /// Adds the common keys but `fallback` (which [`Common::fallback_json`] makes with the
    /// runtime's reasons) to a report's JSON object.
    pub fn add_json(&self, report: &mut Value) {
        let common = json!({
            "error": self.error,
            "fallback_allocator": self.fallback_allocator,
            "stray_frees": self.stray_frees,
            "peak_rss_bytes": self.peak_rss_bytes,
            "end": self.end,
            "wall_seconds": self.wall_seconds,
            "exit_status": {"code": self.exit_code, "signal": self.signal},
            "command": self.command,
        });
        if let (Value::Object(to), Value::Object(from)) = (report, common) {
            to.extend(from);
        }
    }

    /// The summary's clause on the fallback: `; nothing fell back.` or what fell back, to which
    /// allocator, and why (`reasons` by name, those counted).
    pub fn fell_back(&self, reasons: &[(&str, u64)]) -> String {
        if self.fallback_count == 0 {
            return "; nothing fell back.".into();
        }
        let why: Vec<String> = reasons.iter().filter(|(_, n)| *n > 0).map(|(k, n)| format!("{} {}", grouped(*n), k.replace('_', " "))).collect();
        format!("; {} fell back to {} ({}): {}.", grouped(self.fallback_count), self.fallback_allocator, bytes(self.fallback_bytes), why.join(", "))
    }

    /// The summary's sentence on peak RSS.
    pub fn peak_rss(&self) -> String {
        format!(" Peak RSS {}.", bytes(self.peak_rss_bytes))
    }

    /// The summary's sentence on stray frees (none when there were none): `of` says what they
    /// freed (`region addresses that were no live block`).
    pub fn stray_frees(&self, of: &str) -> String {
        if self.stray_frees == 0 {
            return String::new();
        }
        format!(" {} frees of {of} were ignored.", grouped(self.stray_frees))
    }

    /// The summary's last sentence: how the program ended, after how long.
    pub fn ending(&self) -> String {
        let ended = match (self.exit_code, self.signal) {
            (Some(c), _) => format!("exited with status {c}"),
            (None, Some(sig)) => format!("was killed by {}", crate::launch::signal_name(sig)),
            _ => "ended".to_string(),
        };
        format!(" The program {ended} after {:.2} s.", self.wall_seconds)
    }
}

/// A runtime library's report: read from the JSON the runtime writes, then completed by the
/// launcher ([`crate::launch::RuntimeRun::run_reported`]).
pub trait RuntimeReport: Sized {
    /// Reads the runtime's JSON (`what` names its source in errors).
    fn parse_runtime(what: &str, text: &str) -> Result<Self, String>;
    /// The fields every report has, for the launcher to complete.
    fn common_mut(&mut self) -> &mut Common;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_read_by_path_and_missing_ones_named() {
        let f = Fields::parse("r.json", "the runtime's report", r#"{"a": {"b": [1, {"c": 2}]}, "s": "x"}"#).unwrap();
        assert_eq!((f.need("a.b.0"), f.need("a.b.1.c"), f.text("s"), f.text("t")), (Ok(1), Ok(2), "x".into(), String::new()));
        assert_eq!(f.need("a.d").unwrap_err(), "r.json: the runtime's report has no 'a.d'");
        assert!(Fields::parse("r.json", "the runtime's report", "{").err().unwrap().starts_with("r.json: the runtime's report is not JSON: "));
    }

    #[test]
    fn the_common_part_is_read_written_and_told() {
        let text = r#"{"error": null, "fallback": {"count": 3, "bytes": 48}, "stray_frees": 1, "end": "exit"}"#;
        let mut c = Common::read(&Fields::parse("r.json", "the runtime's report", text).unwrap()).unwrap();
        assert_eq!((c.fallback_count, c.fallback_bytes, c.stray_frees, c.end.as_str()), (3, 48, 1, "exit"));
        c.exit_code = Some(0);
        c.fallback_allocator = "glibc".into();
        assert_eq!(c.fell_back(&[("busy", 2), ("aligned", 0), ("size_mismatch", 1)]), "; 3 fell back to glibc (48 B): 2 busy, 1 size mismatch.");
        assert_eq!(c.ending(), " The program exited with status 0 after 0.00 s.");
        assert_eq!(c.stray_frees("nothing live"), " 1 frees of nothing live were ignored.");
        let mut v = json!({"fallback": c.fallback_json(&[("busy", 2)])});
        c.add_json(&mut v);
        assert_eq!((v["fallback"]["busy"].as_u64(), v["fallback"]["count"].as_u64(), v["exit_status"]["code"].as_i64()), (Some(2), Some(3), Some(0)));
        assert!(Common::read(&Fields::parse("r.json", "the runtime's report", "{}").unwrap()).unwrap_err().contains("'fallback.count'"));
    }
}
