//! The report of a grouped run: what the grouped allocator counted (it writes JSON at the end of
//! the program's image) and what the launcher adds (wall time, exit status, command), read into
//! one typed value, written back as JSON (`heaplab run --groups --report`) and told in one
//! paragraph.

use heaplab_model::units::{bytes, grouped};
use serde_json::{json, Value};

/// Allocations sent to the fallback allocator, by reason.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Fallback {
    /// All of them.
    pub count: u64,
    /// Their requested bytes.
    pub bytes: u64,
    /// Larger than the groups' max object size.
    pub too_big: u64,
    /// Asked for an alignment above 16 (the aligned family, valloc, pvalloc).
    pub aligned: u64,
    /// No group's selector held for their stack (unknown contexts included).
    pub ungrouped: u64,
    /// No chunk could be had (the grouped heap's range is full).
    pub exhausted: u64,
}

impl Fallback {
    /// Reasons with their names, in the report's order.
    pub fn named(&self) -> [(&'static str, u64); 4] {
        [("too_big", self.too_big), ("aligned", self.aligned), ("ungrouped", self.ungrouped), ("exhausted", self.exhausted)]
    }
}

/// One group's allocations.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GroupCount {
    /// Allocations served from the group's chunks.
    pub count: u64,
    /// Their requested bytes.
    pub bytes: u64,
}

/// A grouped run, as the runtime and the launcher saw it.
#[derive(Clone, Debug, PartialEq)]
pub struct GroupRunReport {
    /// The groups file.
    pub groups_file: String,
    /// Why the runtime ran without groups (a bad table), if it did.
    pub error: Option<String>,
    /// Frames walked per identification.
    pub walk_depth: u64,
    /// Largest grouped object.
    pub max_object_size: u64,
    /// Bytes per chunk.
    pub chunk_size: u64,
    /// Empty chunks kept for reuse.
    pub spare_chunks: u64,
    /// Distinct call sites the selectors name.
    pub selector_sites: u64,
    /// Of them, those not found in the program's mappings at its end.
    pub sites_unresolved: u64,
    /// Allocations the program made while grouping applied.
    pub allocations: u64,
    /// Allocations served from groups.
    pub grouped: GroupCount,
    /// Per group, in the file's order.
    pub groups: Vec<GroupCount>,
    /// What fell back and why.
    pub fallback: Fallback,
    /// Stack walks made to identify allocations.
    pub walks: u64,
    /// Frames those walks returned.
    pub frames: u64,
    /// Walks answered from the thread's memo of its last walks (their stack words unchanged).
    pub replayed: u64,
    /// Chunks made from fresh address space.
    pub chunks_fresh: u64,
    /// Chunks reused (a spare, or address space whose pages were given back).
    pub chunks_reused: u64,
    /// Empty chunks whose pages were given back to the kernel.
    pub chunks_returned: u64,
    /// The grouped heap's footprint at its peak: bytes bumped in chunks not yet emptied.
    pub peak_resident_bytes: u64,
    /// Bytes of live grouped objects at that moment.
    pub live_bytes_at_peak: u64,
    /// Grouped frees.
    pub frees_grouped: u64,
    /// Frees of grouped addresses where no live object starts (program errors, ignored).
    pub stray_frees: u64,
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

impl GroupRunReport {
    /// Reads the runtime's JSON (`what` names its source in errors); the launcher's fields are
    /// left empty.
    pub fn parse_runtime(what: &str, text: &str) -> Result<GroupRunReport, String> {
        let v: Value = serde_json::from_str(text).map_err(|e| format!("{what}: the grouped allocator's report is not JSON: {e}"))?;
        let need = |v: &Value, k: &str| v[k].as_u64().ok_or_else(|| format!("{what}: the grouped allocator's report lacks `{k}`"));
        let count = |v: &Value| -> Result<GroupCount, String> { Ok(GroupCount { count: need(v, "count")?, bytes: need(v, "bytes")? }) };
        let fb = &v["fallback"];
        let groups = v["groups"].as_array().ok_or_else(|| format!("{what}: the grouped allocator's report lacks `groups`"))?;
        Ok(GroupRunReport {
            groups_file: v["groups_file"].as_str().unwrap_or_default().to_string(),
            error: v["error"].as_str().map(str::to_string),
            walk_depth: need(&v, "walk_depth")?,
            max_object_size: need(&v, "max_object_size")?,
            chunk_size: need(&v, "chunk_size")?,
            spare_chunks: need(&v, "spare_chunks")?,
            selector_sites: need(&v, "selector_sites")?,
            sites_unresolved: need(&v, "sites_unresolved")?,
            allocations: need(&v, "allocations")?,
            grouped: count(&v["grouped"])?,
            groups: groups.iter().map(count).collect::<Result<_, _>>()?,
            fallback: Fallback {
                count: need(fb, "count")?,
                bytes: need(fb, "bytes")?,
                too_big: need(fb, "too_big")?,
                aligned: need(fb, "aligned")?,
                ungrouped: need(fb, "ungrouped")?,
                exhausted: need(fb, "exhausted")?,
            },
            walks: need(&v["identification"], "walks")?,
            frames: need(&v["identification"], "frames")?,
            replayed: need(&v["identification"], "replayed")?,
            chunks_fresh: need(&v["chunks"], "fresh")?,
            chunks_reused: need(&v["chunks"], "reused")?,
            chunks_returned: need(&v["chunks"], "returned")?,
            peak_resident_bytes: need(&v["fragmentation"], "peak_resident_bytes")?,
            live_bytes_at_peak: need(&v["fragmentation"], "live_bytes")?,
            frees_grouped: need(&v, "frees_grouped")?,
            stray_frees: need(&v, "stray_frees")?,
            peak_rss_bytes: need(&v, "peak_rss_bytes")?,
            end: v["end"].as_str().unwrap_or_default().to_string(),
            wall_seconds: 0.0,
            exit_code: None,
            signal: None,
            command: Vec::new(),
            fallback_allocator: String::new(),
        })
    }

    /// The grouped heap's fragmentation at its peak footprint (HALO's table 2): footprint minus
    /// live bytes, in bytes and as a share of the footprint (0 when nothing was grouped).
    pub fn fragmentation(&self) -> (u64, f64) {
        let b = self.peak_resident_bytes.saturating_sub(self.live_bytes_at_peak);
        (b, if self.peak_resident_bytes == 0 { 0.0 } else { b as f64 / self.peak_resident_bytes as f64 })
    }

    /// Grouped allocations / all allocations (0 without allocations).
    pub fn grouped_rate(&self) -> f64 {
        if self.allocations == 0 { 0.0 } else { self.grouped.count as f64 / self.allocations as f64 }
    }

    /// The report as JSON: the runtime's fields and the launcher's.
    pub fn to_json(&self) -> Value {
        let (frag, ratio) = self.fragmentation();
        let gc = |g: &GroupCount| json!({"count": g.count, "bytes": g.bytes});
        let mut fallback: serde_json::Map<String, Value> = self.fallback.named().iter().map(|(k, n)| (k.to_string(), json!(n))).collect();
        fallback.insert("count".into(), json!(self.fallback.count));
        fallback.insert("bytes".into(), json!(self.fallback.bytes));
        json!({
            "groups_file": self.groups_file,
            "error": self.error,
            "walk_depth": self.walk_depth,
            "max_object_size": self.max_object_size,
            "chunk_size": self.chunk_size,
            "spare_chunks": self.spare_chunks,
            "selector_sites": self.selector_sites,
            "sites_unresolved": self.sites_unresolved,
            "allocations": self.allocations,
            "grouped": gc(&self.grouped),
            "grouped_rate": self.grouped_rate(),
            "groups": self.groups.iter().map(gc).collect::<Vec<_>>(),
            "fallback": fallback,
            "fallback_allocator": self.fallback_allocator,
            "identification": {"walks": self.walks, "frames": self.frames, "replayed": self.replayed},
            "chunks": {"fresh": self.chunks_fresh, "reused": self.chunks_reused, "returned": self.chunks_returned},
            "fragmentation": {"peak_resident_bytes": self.peak_resident_bytes, "live_bytes": self.live_bytes_at_peak, "bytes": frag, "ratio": ratio},
            "frees_grouped": self.frees_grouped,
            "stray_frees": self.stray_frees,
            "peak_rss_bytes": self.peak_rss_bytes,
            "end": self.end,
            "wall_seconds": self.wall_seconds,
            "exit_status": {"code": self.exit_code, "signal": self.signal},
            "command": self.command,
        })
    }

    /// One paragraph for a person: how much was grouped, in how many groups, what fell back and
    /// why, the chunks, the fragmentation at the peak, peak RSS, and how the program ended.
    pub fn summary(&self) -> String {
        let mut s = format!("heaplab run: groups {}", self.groups_file);
        if let Some(e) = &self.error {
            s += &format!(" NOT applied: {e}.");
        } else {
            let used = self.groups.iter().filter(|g| g.count > 0).count();
            s += &format!(
                ": {} of {} allocations grouped ({:.2}%, {}) in {used} of {} groups",
                grouped(self.grouped.count),
                grouped(self.allocations),
                100.0 * self.grouped_rate(),
                bytes(self.grouped.bytes),
                self.groups.len()
            );
            if self.fallback.count == 0 {
                s += "; nothing fell back.";
            } else {
                let why: Vec<String> = self.fallback.named().iter().filter(|(_, n)| *n > 0).map(|(k, n)| format!("{} {}", grouped(*n), k.replace('_', " "))).collect();
                s += &format!("; {} fell back to {} ({}): {}.", grouped(self.fallback.count), self.fallback_allocator, bytes(self.fallback.bytes), why.join(", "));
            }
            if self.walks > 0 {
                s += &format!(" {} stack walks, {:.1} frames each, {} replayed from the memo.", grouped(self.walks), self.frames as f64 / self.walks as f64, grouped(self.replayed));
            }
            if self.chunks_fresh + self.chunks_reused > 0 {
                let (frag, ratio) = self.fragmentation();
                s += &format!(
                    " Chunks of {}: {} new, {} reused, {} given back; at its peak the grouped heap held {} with {} unused ({:.1}%).",
                    bytes(self.chunk_size),
                    grouped(self.chunks_fresh),
                    grouped(self.chunks_reused),
                    grouped(self.chunks_returned),
                    bytes(self.peak_resident_bytes),
                    bytes(frag),
                    100.0 * ratio
                );
            }
            if self.sites_unresolved > 0 {
                s += &format!(" {} of {} selector sites were never found in the program's code.", grouped(self.sites_unresolved), grouped(self.selector_sites));
            }
        }
        s += &format!(" Peak RSS {}.", bytes(self.peak_rss_bytes));
        if self.stray_frees > 0 {
            s += &format!(" {} frees of grouped addresses that were no live object were ignored.", grouped(self.stray_frees));
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
  "groups_file": "/t/x.hlgroups", "error": null, "walk_depth": 4, "max_object_size": 4096, "chunk_size": 1048576, "spare_chunks": 1,
  "selector_sites": 2, "sites_unresolved": 0, "allocations": 10, "grouped": {"count": 6, "bytes": 384},
  "groups": [{"count": 6, "bytes": 384}], "fallback": {"count": 4, "bytes": 64, "too_big": 1, "aligned": 0, "ungrouped": 3, "exhausted": 0},
  "identification": {"walks": 9, "frames": 36, "replayed": 2}, "chunks": {"fresh": 1, "reused": 0, "returned": 0},
  "fragmentation": {"peak_resident_bytes": 400, "live_bytes": 384, "bytes": 16, "ratio": 0.040000},
  "frees_grouped": 6, "stray_frees": 0, "peak_rss_bytes": 1048576, "end": "exit"
}"#;

    #[test]
    fn the_runtime_report_is_read_and_told() {
        let mut r = GroupRunReport::parse_runtime("r.json", RUNTIME).unwrap();
        r.fallback_allocator = "jemalloc".into();
        assert_eq!(r.grouped, GroupCount { count: 6, bytes: 384 });
        assert_eq!(r.fallback.ungrouped, 3);
        assert_eq!(r.fragmentation(), (16, 0.04));
        let s = r.summary();
        assert!(s.contains("6 of 10 allocations grouped (60.00%"), "{s}");
        assert!(s.contains("3 ungrouped"), "{s}");
        let back = r.to_json();
        assert_eq!(back["fragmentation"]["bytes"], 16);
        assert_eq!(back["groups"][0]["count"], 6);
    }

    #[test]
    fn a_damaged_runtime_report_is_refused_by_name() {
        let e = GroupRunReport::parse_runtime("r.json", "{\"walk_depth\": 1}").unwrap_err();
        assert!(e.starts_with("r.json: "), "{e}");
        assert!(GroupRunReport::parse_runtime("r.json", "not json").is_err());
    }
}
