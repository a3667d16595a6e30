//! The report of a grouped run: what the grouped allocator counted (it writes JSON at the end of
//! the program's image) and what the launcher adds (wall time, exit status, command), read into
//! one typed value, written back as JSON (`heaplab run --groups --report`) and told in one
//! paragraph. The fields every runtime's report has are heaplab_trace's [`Common`].

use crate::same_layout::Declined;
use heaplab_model::units::{bytes, grouped};
use heaplab_trace::runtime_report::{Common, Fields, RuntimeReport};
use serde_json::{json, Value};

/// Allocations sent to the fallback allocator, by reason (their count and bytes are in
/// [`Common`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Fallback {
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
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GroupRunReport {
    /// What every runtime's report has: the fallback's count and bytes, stray frees, peak RSS,
    /// how the image ended, and the launcher's fields.
    pub common: Common,
    /// Whether the grouped allocator was loaded. Without groups it is not: the program runs on
    /// the fallback allocator alone, at its speed, and nothing is counted (the allocations, the
    /// fallback's counts and stray frees are unknown; peak RSS is the launcher's, from wait4).
    pub loaded: bool,
    /// The groups file.
    pub groups_file: String,
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
    /// Sites of the runtime table (the selectors' and the profile's allocation call sites) not
    /// found in the program's mappings at its end.
    pub sites_unresolved: u64,
    /// Allocations the program made while grouping applied.
    pub allocations: u64,
    /// Allocations served from groups.
    pub grouped: GroupCount,
    /// Per group, in the file's order.
    pub groups: Vec<GroupCount>,
    /// Why allocations fell back.
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
    /// Grouped allocations served from a group's free list (freed space reused).
    pub reused_objects: u64,
    /// The runtime's settings (`heaplab run`'s flags) as it applied them.
    pub settings: Settings,
    /// The file's groups, when the fallback lays out every one of them as its group would
    /// ([`crate::same_layout`]) and the program ran on it alone; empty otherwise.
    pub declined: Vec<Declined>,
    /// When the program run is none of the modules the groups' call sites are in: its file name
    /// and theirs (call sites are found by module file name, so a renamed copy finds none).
    pub foreign: Option<(String, Vec<String>)>,
}

/// What the grouped allocator ran with.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Settings {
    /// Objects' alignment: `size` (8 or 16 by size, the default) or `16` (`--align-16`).
    pub alignment: String,
    /// Whether freed objects were reused (`--reuse-freed`).
    pub free_lists: bool,
    /// Transparent huge pages: `off`, `on` (`--huge-pages`, granted) or `refused` (by the kernel).
    pub huge_pages: String,
}

impl GroupRunReport {
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
        let mut v = json!({
            "groups_file": self.groups_file,
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
            "fallback": self.common.fallback_json(&self.fallback.named()),
            "identification": {"walks": self.walks, "frames": self.frames, "replayed": self.replayed},
            "chunks": {"fresh": self.chunks_fresh, "reused": self.chunks_reused, "returned": self.chunks_returned},
            "fragmentation": {"peak_resident_bytes": self.peak_resident_bytes, "live_bytes": self.live_bytes_at_peak, "bytes": frag, "ratio": ratio},
            "frees_grouped": self.frees_grouped,
            "reused_objects": self.reused_objects,
            "settings": {"alignment": self.settings.alignment, "free_lists": self.settings.free_lists, "huge_pages": self.settings.huge_pages},
            "declined_groups": self.declined.iter().map(|d| json!({"group": d.group, "size_class": d.class})).collect::<Vec<_>>(),
        });
        self.common.add_json(&mut v);
        if !self.loaded {
            for k in ["allocations", "grouped_rate", "fallback", "stray_frees", "settings", "end"] {
                v[k] = Value::Null;
            }
        }
        v["allocator_loaded"] = json!(self.loaded);
        v
    }

    /// The report of a run without groups, which ran on the fallback alone: `params` are the
    /// file's, `how` is what the launcher measured (wall time, exit status, peak RSS, command,
    /// the fallback's name).
    pub fn without_allocator(groups_file: &str, params: &crate::Params, how: Common) -> GroupRunReport {
        GroupRunReport {
            common: how,
            groups_file: groups_file.to_string(),
            loaded: false,
            max_object_size: params.max_object_size,
            chunk_size: params.chunk_size,
            spare_chunks: u64::from(params.spare_chunks),
            ..GroupRunReport::default()
        }
    }

    /// One paragraph for a person: how much was grouped, in how many groups, what fell back and
    /// why, the chunks, the fragmentation at the peak, peak RSS, and how the program ended.
    pub fn summary(&self) -> String {
        let mut s = format!("heaplab run: groups {}", self.groups_file);
        if !self.loaded {
            let alone = if self.common.fallback_allocator.is_empty() { "glibc" } else { &self.common.fallback_allocator };
            if self.declined.is_empty() {
                s += &format!(": no groups to apply, so the program ran on {alone} alone (the grouped allocator was not loaded).");
            } else {
                let classes: Vec<String> = self.declined.iter().map(|d| format!("{} B", d.class)).collect();
                s += &format!(
                    ": {alone} lays out every group as the grouped allocator would (each takes one of its size classes, {}, exactly, alone and never freed), so the program ran on {alone} alone (--all-groups applies them anyway).",
                    classes.join(", ")
                );
            }
        } else if let Some(e) = &self.common.error {
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
            s += &self.common.fell_back(&self.fallback.named());
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
            let mut set = Vec::new();
            if self.settings.alignment == "16" {
                set.push("objects 16-byte aligned".to_string());
            }
            if self.settings.free_lists {
                set.push(format!("freed objects reused ({})", grouped(self.reused_objects)));
            }
            match self.settings.huge_pages.as_str() {
                "on" => set.push("huge pages asked for".into()),
                "refused" => set.push("huge pages refused by the kernel (see /sys/kernel/mm/transparent_hugepage/enabled)".into()),
                _ => {}
            }
            if !set.is_empty() {
                s += &format!(" With {}.", set.join(", "));
            }
            if self.sites_unresolved > 0 {
                // The count covers the allocation call sites too, not only the selectors'.
                s += &format!(" {} of the groups' call sites were never found in the program's code", grouped(self.sites_unresolved));
                s += &match &self.foreign {
                    Some((program, modules)) => format!(
                        ": they are in {}, and the program run is {program} (call sites are found by file name, so a renamed copy or another program finds none of them).",
                        modules.join(", ")
                    ),
                    None => " (is it the program that was profiled?).".to_string(),
                };
            }
        }
        s + &self.common.peak_rss() + &self.common.stray_frees("grouped addresses that were no live object") + &self.common.ending()
    }
}

impl RuntimeReport for GroupRunReport {
    fn parse_runtime(what: &str, text: &str) -> Result<GroupRunReport, String> {
        let f = Fields::parse(what, "the grouped allocator's report", text)?;
        let count = |at: &str| -> Result<GroupCount, String> { Ok(GroupCount { count: f.need(&format!("{at}.count"))?, bytes: f.need(&format!("{at}.bytes"))? }) };
        let groups = f.at("groups").as_array().ok_or_else(|| format!("{what}: the grouped allocator's report has no 'groups'"))?.len();
        Ok(GroupRunReport {
            common: Common::read(&f)?,
            loaded: true,
            groups_file: f.text("groups_file"),
            walk_depth: f.need("walk_depth")?,
            max_object_size: f.need("max_object_size")?,
            chunk_size: f.need("chunk_size")?,
            spare_chunks: f.need("spare_chunks")?,
            selector_sites: f.need("selector_sites")?,
            sites_unresolved: f.need("sites_unresolved")?,
            allocations: f.need("allocations")?,
            grouped: count("grouped")?,
            groups: (0..groups).map(|k| count(&format!("groups.{k}"))).collect::<Result<_, _>>()?,
            fallback: Fallback { too_big: f.need("fallback.too_big")?, aligned: f.need("fallback.aligned")?, ungrouped: f.need("fallback.ungrouped")?, exhausted: f.need("fallback.exhausted")? },
            walks: f.need("identification.walks")?,
            frames: f.need("identification.frames")?,
            replayed: f.need("identification.replayed")?,
            chunks_fresh: f.need("chunks.fresh")?,
            chunks_reused: f.need("chunks.reused")?,
            chunks_returned: f.need("chunks.returned")?,
            peak_resident_bytes: f.need("fragmentation.peak_resident_bytes")?,
            live_bytes_at_peak: f.need("fragmentation.live_bytes")?,
            frees_grouped: f.need("frees_grouped")?,
            reused_objects: f.need("reused_objects")?,
            settings: Settings { alignment: f.text("settings.alignment"), free_lists: f.need("settings.free_lists")? == 1, huge_pages: f.text("settings.huge_pages") },
            declined: Vec::new(),
            foreign: None,
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
  "groups_file": "/t/x.hlgroups", "error": null, "walk_depth": 4, "max_object_size": 4096, "chunk_size": 1048576, "spare_chunks": 1,
  "selector_sites": 2, "sites_unresolved": 0, "settings": {"alignment": "size", "free_lists": 1, "huge_pages": "refused"}, "allocations": 10, "grouped": {"count": 6, "bytes": 384},
  "groups": [{"count": 6, "bytes": 384}], "fallback": {"count": 4, "bytes": 64, "too_big": 1, "aligned": 0, "ungrouped": 3, "exhausted": 0},
  "identification": {"walks": 9, "frames": 36, "replayed": 2}, "chunks": {"fresh": 1, "reused": 0, "returned": 0},
  "fragmentation": {"peak_resident_bytes": 400, "live_bytes": 384, "bytes": 16, "ratio": 0.040000},
  "frees_grouped": 6, "reused_objects": 2, "stray_frees": 0, "end": "exit"
}"#;

    #[test]
    fn the_runtime_report_is_read_and_told() {
        let mut r = GroupRunReport::parse_runtime("r.json", RUNTIME).unwrap();
        r.common.fallback_allocator = "jemalloc".into();
        assert_eq!(r.grouped, GroupCount { count: 6, bytes: 384 });
        assert_eq!(r.fallback.ungrouped, 3);
        assert_eq!(r.fragmentation(), (16, 0.04));
        let s = r.summary();
        assert!(s.contains("6 of 10 allocations grouped (60.00%"), "{s}");
        assert!(s.contains("3 ungrouped"), "{s}");
        let back = r.to_json();
        assert_eq!(back["fragmentation"]["bytes"], 16);
        assert_eq!(back["groups"][0]["count"], 6);
        assert_eq!(back["reused_objects"], 2);
        assert!(s.contains("With freed objects reused (2), huge pages refused by the kernel"), "{s}");
        assert_eq!(back["settings"]["huge_pages"], "refused");
        assert_eq!(r.settings.alignment, "size");
    }

    #[test]
    fn a_run_without_groups_reports_what_the_launcher_measured_and_nothing_counted() {
        let how = Common { peak_rss_bytes: 1 << 20, wall_seconds: 0.5, exit_code: Some(0), fallback_allocator: "jemalloc".into(), ..Common::default() };
        let r = GroupRunReport::without_allocator("/t/none.hlgroups", &crate::Params::default(), how);
        let v = r.to_json();
        assert_eq!((&v["allocator_loaded"], &v["allocations"], &v["fallback"], &v["stray_frees"]), (&json!(false), &Value::Null, &Value::Null, &Value::Null), "{v}");
        assert_eq!((v["peak_rss_bytes"].as_u64(), v["chunk_size"].as_u64()), (Some(1 << 20), Some(crate::Params::default().chunk_size)), "{v}");
        let s = r.summary();
        assert!(s.contains("no groups to apply, so the program ran on jemalloc alone") && s.contains("Peak RSS 1.00 MiB") && s.contains("after 0.50 s"), "{s}");
        assert!(!s.contains("allocations grouped"), "{s}");
        assert_eq!(v["declined_groups"], json!([]));
    }

    #[test]
    fn groups_left_to_the_fallback_are_told() {
        let how = Common { fallback_allocator: "jemalloc".into(), ..Common::default() };
        let mut r = GroupRunReport::without_allocator("/t/g.hlgroups", &crate::Params::default(), how);
        r.declined = vec![Declined { group: 0, class: 48 }, Declined { group: 1, class: 192 }];
        let s = r.summary();
        assert!(s.contains("jemalloc lays out every group as the grouped allocator would (each takes one of its size classes, 48 B, 192 B, exactly"), "{s}");
        assert!(s.contains("so the program ran on jemalloc alone (--all-groups applies them anyway)"), "{s}");
        assert_eq!(r.to_json()["declined_groups"], json!([{"group": 0, "size_class": 48}, {"group": 1, "size_class": 192}]));
    }

    #[test]
    fn a_damaged_runtime_report_is_refused_by_name() {
        let e = GroupRunReport::parse_runtime("r.json", "{\"walk_depth\": 1}").unwrap_err();
        assert!(e.starts_with("r.json: "), "{e}");
        assert!(GroupRunReport::parse_runtime("r.json", "not json").is_err());
    }
}
