//! The report of a run with a layout: what the runtime library counted (it writes JSON at the
//! end of the program's image) and what the launcher adds (wall time, exit status, command),
//! read into one typed value, written back as JSON (`heaplab run --report`) and told in one
//! paragraph. The fields every runtime's report has are heaplab_trace's [`Common`].

use heaplab_model::units::{bytes, grouped};
use heaplab_trace::runtime_report::{Common, Fields, RuntimeReport};
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
    /// What every runtime's report has: the fallback's count and bytes, stray frees, peak RSS,
    /// how the image ended, and the launcher's fields.
    pub common: Common,
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
    /// Size mismatches after which a later expected allocation matched: the runtime skipped
    /// the expected ones in between, or took the request for one the profile did not have.
    pub resyncs: u64,
}

impl RunReport {
    /// The report as JSON: the runtime's keys and the launcher's.
    pub fn to_json(&self) -> Value {
        let mut v = json!({
            "strategy": self.strategy,
            "layout": self.layout,
            "region_bytes": self.region_bytes,
            "stack_depth": self.stack_depth,
            "contexts": self.contexts,
            "entries": self.entries,
            "allocations": self.allocations,
            "planned": self.planned,
            "planned_bytes": self.planned_bytes,
            "fallback": self.common.fallback_json(&self.reasons.named()),
            "fallback_bytes": self.reason_bytes.json(),
            "first_mismatch": self.first_mismatch.as_ref().map(|m| json!({
                "reason": m.reason, "ordinal": m.ordinal, "context": m.context, "expected_size": m.expected_size, "size": m.size,
            })),
            "match_rate": self.match_rate,
            "frees_region": self.frees_region,
            "resyncs": self.resyncs,
        });
        self.common.add_json(&mut v);
        v
    }

    /// One paragraph for a person: match rate, what fell back and why, the first mismatch, the
    /// region, peak RSS, and how the program ended.
    pub fn summary(&self) -> String {
        let mut s = format!("heaplab run: layout {} ({})", self.layout, self.strategy);
        if let Some(e) = &self.common.error {
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
            s += &self.common.fell_back(&self.reasons.named());
            if let Some(m) = &self.first_mismatch {
                let expected = m.expected_size.map(|e| format!("expected {e} bytes, got {}", m.size)).unwrap_or_else(|| format!("{} bytes", m.size));
                let ctx = if m.context != 0 { format!(" of context {:#018x}", m.context) } else { String::new() };
                s += &format!(" First mismatch: allocation {}{ctx} ({}: {expected}).", m.ordinal, m.reason.replace('_', " "));
            }
        }
        s += &self.common.peak_rss();
        if self.resyncs > 0 {
            s += &format!(" The expected sequence was picked up again after {} mismatches.", grouped(self.resyncs));
        }
        s + &self.common.stray_frees("region addresses that were no live block") + &self.common.ending()
    }
}

impl RuntimeReport for RunReport {
    fn parse_runtime(what: &str, text: &str) -> Result<RunReport, String> {
        let f = Fields::parse(what, "the runtime's report", text)?;
        let v = &f.json;
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
            common: Common::read(&f)?,
            strategy: f.text("strategy"),
            layout: f.text("layout"),
            region_bytes: f.need("region_bytes")?,
            stack_depth: f.need("stack_depth")?,
            contexts: f.need("contexts")?,
            entries: f.need("entries")?,
            allocations: f.need("allocations")?,
            planned: f.need("planned")?,
            planned_bytes: f.need("planned_bytes")?,
            reasons: Reasons::read(&v["fallback"]),
            reason_bytes: Reasons::read(&v["fallback_bytes"]),
            first_mismatch,
            match_rate: v["match_rate"].as_f64().unwrap_or(0.0),
            frees_region: f.need("frees_region")?,
            resyncs: v["resyncs"].as_u64().unwrap_or(0),
        })
    }

    fn common_mut(&mut self) -> &mut Common {
        &mut self.common
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
  "match_rate": 0.750000, "frees_region": 9, "stray_frees": 0, "end": "exit"
}"#;

    #[test]
    fn the_runtime_report_is_read_and_told() {
        let mut r = RunReport::parse_runtime("r.json", RUNTIME).unwrap();
        assert_eq!((r.allocations, r.planned, r.common.fallback_count, r.reasons.size_mismatch), (12, 9, 3, 1));
        assert_eq!(r.first_mismatch.as_ref().unwrap().expected_size, Some(24));
        r.common.exit_code = Some(0);
        r.common.fallback_allocator = "glibc".into();
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
