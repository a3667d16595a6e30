//! The report of a run with a layout: what the runtime library counted (it writes JSON at the
//! end of the program's image) and what the launcher adds (wall time, exit status, command),
//! read into one typed value, written back as JSON (`heaplab run --report`) and told in one
//! paragraph.

use heaplab_model::units::{bytes, grouped};
use serde_json::{json, Value};

/// Why allocations fell back, by reason, as the runtime counts them (a count or bytes each).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Reasons {
    /// The layout expected the allocation but planned no slot for it.
    pub unplanned: u64,
    /// The size differed from the expected allocation's.
    pub size_mismatch: u64,
    /// More allocations than the layout holds (globally, or in the allocation's context).
    pub beyond_layout: u64,
    /// The allocation's call site is no context of the layout.
    pub unknown_context: u64,
    /// The planned slot was still in use (the program's lifetimes differ from the profile's).
    pub busy: u64,
    /// The slot does not honour the requested alignment.
    pub misaligned: u64,
}

impl Reasons {
    /// Reasons with their names, in the report's order.
    pub fn named(&self) -> [(&'static str, u64); 6] {
        [
            ("unplanned", self.unplanned),
            ("size_mismatch", self.size_mismatch),
            ("beyond_layout", self.beyond_layout),
            ("unknown_context", self.unknown_context),
            ("busy", self.busy),
            ("misaligned", self.misaligned),
        ]
    }

    fn read(v: &Value) -> Reasons {
        let n = |k: &str| v[k].as_u64().unwrap_or(0);
        Reasons {
            unplanned: n("unplanned"),
            size_mismatch: n("size_mismatch"),
            beyond_layout: n("beyond_layout"),
            unknown_context: n("unknown_context"),
            busy: n("busy"),
            misaligned: n("misaligned"),
        }
    }

    fn json(&self) -> serde_json::Map<String, Value> {
        self.named().iter().map(|(k, n)| (k.to_string(), json!(n))).collect()
    }
}

/// The first allocation that did not match its expected entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mismatch {
    /// `size_mismatch`, `beyond_layout` or `unknown_context`.
    pub reason: String,
    /// Its ordinal (global, or within its context).
    pub ordinal: u64,
    /// Its context key (0 without contexts).
    pub context: u64,
    /// The size the layout expected, when it expected one.
    pub expected_size: Option<u64>,
    /// The size requested.
    pub size: u64,
}

/// A run with a layout, as the runtime and the launcher saw it.
#[derive(Clone, Debug, PartialEq)]
pub struct RunReport {
    /// The strategy that made the layout.
    pub strategy: String,
    /// The layout file.
    pub layout: String,
    /// Why the runtime ran without the layout (a damaged file), if it did.
    pub error: Option<String>,
    /// Bytes of the region.
    pub region_bytes: u64,
    /// Frames per context key (0: global ordinals).
    pub stack_depth: u64,
    /// Contexts of the layout.
    pub contexts: u64,
    /// Expected allocations (entries) of the layout.
    pub entries: u64,
    /// Allocations the program made (successful calls seen while the layout applied).
    pub allocations: u64,
    /// Allocations served from the region.
    pub planned: u64,
    /// Their requested bytes.
    pub planned_bytes: u64,
    /// Allocations sent to the fallback allocator.
    pub fallback: u64,
    /// Their requested bytes.
    pub fallback_bytes: u64,
    /// Fallbacks by reason.
    pub reasons: Reasons,
    /// Fallback bytes by reason.
    pub reason_bytes: Reasons,
    /// The first allocation that did not match.
    pub first_mismatch: Option<Mismatch>,
    /// planned / allocations (0 without allocations).
    pub match_rate: f64,
    /// Region blocks freed (realloc moves included).
    pub frees_region: u64,
    /// Frees of region addresses where no live block starts (program errors, ignored).
    pub stray_frees: u64,
    /// Size mismatches after which a later expected allocation matched: the runtime skipped
    /// the expected ones in between, or took the request for one the profile did not have.
    pub resyncs: u64,
    /// Peak RSS of the program (kernel VmHWM) at its end.
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

impl RunReport {
    /// Reads the runtime's JSON (`what` names its source in errors); the launcher's fields are
    /// left empty for the caller to fill.
    pub fn parse_runtime(what: &str, text: &str) -> Result<RunReport, String> {
        let v: Value = serde_json::from_str(text).map_err(|e| format!("{what}: the runtime's report is not JSON: {e}"))?;
        let num = |k: &str| v[k].as_u64().ok_or_else(|| format!("{what}: the runtime's report has no '{k}'"));
        let fb = &v["fallback"];
        let first_mismatch = match &v["first_mismatch"] {
            Value::Null => None,
            m => Some(Mismatch {
                reason: m["reason"].as_str().unwrap_or_default().to_string(),
                ordinal: m["ordinal"].as_u64().unwrap_or(0),
                context: m["context"].as_u64().unwrap_or(0),
                expected_size: m["expected_size"].as_u64(),
                size: m["size"].as_u64().unwrap_or(0),
            }),
        };
        Ok(RunReport {
            strategy: v["strategy"].as_str().unwrap_or_default().to_string(),
            layout: v["layout"].as_str().unwrap_or_default().to_string(),
            error: v["error"].as_str().map(String::from),
            region_bytes: num("region_bytes")?,
            stack_depth: num("stack_depth")?,
            contexts: num("contexts")?,
            entries: num("entries")?,
            allocations: num("allocations")?,
            planned: num("planned")?,
            planned_bytes: num("planned_bytes")?,
            fallback: fb["count"].as_u64().ok_or_else(|| format!("{what}: the runtime's report has no 'fallback.count'"))?,
            fallback_bytes: fb["bytes"].as_u64().unwrap_or(0),
            reasons: Reasons::read(fb),
            reason_bytes: Reasons::read(&v["fallback_bytes"]),
            first_mismatch,
            match_rate: v["match_rate"].as_f64().unwrap_or(0.0),
            frees_region: num("frees_region")?,
            stray_frees: v["stray_frees"].as_u64().unwrap_or(0),
            resyncs: v["resyncs"].as_u64().unwrap_or(0),
            peak_rss_bytes: num("peak_rss_bytes")?,
            end: v["end"].as_str().unwrap_or_default().to_string(),
            wall_seconds: 0.0,
            exit_code: None,
            signal: None,
            command: Vec::new(),
            fallback_allocator: String::new(),
        })
    }

    /// The report as JSON: the runtime's keys and the launcher's.
    pub fn to_json(&self) -> Value {
        let mut fallback = self.reasons.json();
        fallback.insert("count".into(), json!(self.fallback));
        fallback.insert("bytes".into(), json!(self.fallback_bytes));
        json!({
            "strategy": self.strategy,
            "layout": self.layout,
            "error": self.error,
            "region_bytes": self.region_bytes,
            "stack_depth": self.stack_depth,
            "contexts": self.contexts,
            "entries": self.entries,
            "allocations": self.allocations,
            "planned": self.planned,
            "planned_bytes": self.planned_bytes,
            "fallback": fallback,
            "fallback_bytes": self.reason_bytes.json(),
            "fallback_allocator": self.fallback_allocator,
            "first_mismatch": self.first_mismatch.as_ref().map(|m| json!({
                "reason": m.reason, "ordinal": m.ordinal, "context": m.context, "expected_size": m.expected_size, "size": m.size,
            })),
            "match_rate": self.match_rate,
            "frees_region": self.frees_region,
            "stray_frees": self.stray_frees,
            "resyncs": self.resyncs,
            "peak_rss_bytes": self.peak_rss_bytes,
            "end": self.end,
            "wall_seconds": self.wall_seconds,
            "exit_status": {"code": self.exit_code, "signal": self.signal},
            "command": self.command,
        })
    }

    /// One paragraph for a person: match rate, what fell back and why, the first mismatch, the
    /// region, peak RSS, and how the program ended.
    pub fn summary(&self) -> String {
        let mut s = format!("heaplab run: layout {} ({})", self.layout, self.strategy);
        if let Some(e) = &self.error {
            s += &format!(" NOT applied: {e}.");
        } else {
            s += &format!(
                ": {} of {} allocations served from the region ({:.2}%, {}), region {}",
                grouped(self.planned),
                grouped(self.allocations),
                100.0 * self.match_rate,
                bytes(self.planned_bytes),
                bytes(self.region_bytes)
            );
            if self.fallback == 0 {
                s += "; nothing fell back.";
            } else {
                let why: Vec<String> = self.reasons.named().iter().filter(|(_, n)| *n > 0).map(|(k, n)| format!("{} {}", grouped(*n), k.replace('_', " "))).collect();
                s += &format!("; {} fell back to {} ({}): {}.", grouped(self.fallback), self.fallback_allocator, bytes(self.fallback_bytes), why.join(", "));
            }
            if let Some(m) = &self.first_mismatch {
                let expected = m.expected_size.map(|e| format!("expected {e} bytes, got {}", m.size)).unwrap_or_else(|| format!("{} bytes", m.size));
                let ctx = if m.context != 0 { format!(" of context {:#018x}", m.context) } else { String::new() };
                s += &format!(" First mismatch: allocation {}{ctx} ({}: {expected}).", m.ordinal, m.reason.replace('_', " "));
            }
        }
        s += &format!(" Peak RSS {}.", bytes(self.peak_rss_bytes));
        if self.resyncs > 0 {
            s += &format!(" The expected sequence was picked up again after {} mismatches.", grouped(self.resyncs));
        }
        if self.stray_frees > 0 {
            s += &format!(" {} frees of region addresses that were no live block were ignored.", grouped(self.stray_frees));
        }
        let ended = match (self.exit_code, self.signal) {
            (Some(c), _) => format!("exited with status {c}"),
            (None, Some(sig)) => format!("was killed by {}", heaplab_trace::launch::signal_name(sig)),
            _ => "ended".to_string(),
        };
        s + &format!(" The program {ended} after {:.2} s.", self.wall_seconds)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RUNTIME: &str = r#"{
  "strategy": "plan", "layout": "/t/x.hllayout", "error": null, "region_bytes": 4096, "region_align": 4096,
  "stack_depth": 0, "contexts": 1, "entries": 10, "allocations": 12, "planned": 9, "planned_bytes": 900,
  "fallback": {"count": 3, "bytes": 48, "unplanned": 1, "size_mismatch": 1, "beyond_layout": 1, "unknown_context": 0, "busy": 0, "misaligned": 0},
  "fallback_bytes": {"unplanned": 16, "size_mismatch": 16, "beyond_layout": 16, "unknown_context": 0, "busy": 0, "misaligned": 0},
  "first_mismatch": {"reason": "size_mismatch", "ordinal": 4, "context": 0, "expected_size": 24, "size": 16},
  "match_rate": 0.750000, "frees_region": 9, "stray_frees": 0, "peak_rss_bytes": 1048576, "end": "exit"
}"#;

    #[test]
    fn the_runtime_report_is_read_and_told() {
        let mut r = RunReport::parse_runtime("r.json", RUNTIME).unwrap();
        assert_eq!((r.allocations, r.planned, r.fallback, r.reasons.size_mismatch), (12, 9, 3, 1));
        assert_eq!(r.first_mismatch.as_ref().unwrap().expected_size, Some(24));
        r.exit_code = Some(0);
        r.fallback_allocator = "glibc".into();
        let s = r.summary();
        assert!(s.contains("9 of 12 allocations") && s.contains("75.00%") && s.contains("1 size mismatch"), "{s}");
        assert!(s.contains("expected 24 bytes, got 16") && s.contains("exited with status 0"), "{s}");
        let v = r.to_json();
        assert_eq!(v["fallback"]["count"], 3);
        assert_eq!(v["first_mismatch"]["ordinal"], 4);
        assert_eq!(v["exit_status"]["code"], 0);
    }

    #[test]
    fn a_damaged_runtime_report_is_refused_by_name() {
        assert!(RunReport::parse_runtime("r.json", "{").unwrap_err().starts_with("r.json: "));
        let e = RunReport::parse_runtime("r.json", &RUNTIME.replace("\"planned\"", "\"plan\"")).unwrap_err();
        assert!(e.contains("'planned'"), "{e}");
    }
}
