//! Two reports compared site by site: sites match by their stable key (the same code in both
//! runs, whatever the load addresses), frames are merged into one table, and sites are ordered
//! by how much their bytes at the peak changed, then their bytes allocated.

use crate::model::{DiffReport, Frame, Report, Site, SiteDiff, SiteFigures, REPORT_VERSION};
use std::collections::HashMap;

fn figures(s: &Site) -> SiteFigures {
    SiteFigures { calls: s.calls, bytes: s.bytes, peak_bytes: s.peak_bytes, temporary: s.temporary, leaked_bytes: s.leaked_bytes }
}

/// The diff of `before` and `after`.
pub fn diff(before: &Report, after: &Report) -> DiffReport {
    let mut frames: Vec<Frame> = Vec::new();
    let mut frame_ids: HashMap<Frame, u32> = HashMap::new();
    let mut remap = |r: &Report, stack: &[u32]| -> Vec<u32> {
        stack
            .iter()
            .map(|&i| {
                let f = &r.frames[i as usize];
                *frame_ids.entry(f.clone()).or_insert_with(|| {
                    frames.push(f.clone());
                    frames.len() as u32 - 1
                })
            })
            .collect()
    };
    let mut sites: Vec<SiteDiff> = Vec::new();
    let mut by_key: HashMap<u64, usize> = HashMap::new();
    for (side, r) in [(0, before), (1, after)] {
        for s in &r.sites {
            let k = *by_key.entry(s.key).or_insert_with(|| {
                sites.push(SiteDiff { key: s.key, stack: remap(r, &s.stack), ..SiteDiff::default() });
                sites.len() - 1
            });
            let f = figures(s);
            let slot = if side == 0 { &mut sites[k].before } else { &mut sites[k].after };
            // Two sites of one report with the same key (the unknown site) add up.
            *slot = SiteFigures {
                calls: slot.calls + f.calls,
                bytes: slot.bytes + f.bytes,
                peak_bytes: slot.peak_bytes + f.peak_bytes,
                temporary: slot.temporary + f.temporary,
                leaked_bytes: slot.leaked_bytes + f.leaked_bytes,
            };
        }
    }
    let change = |s: &SiteDiff| {
        let d = |a: u64, b: u64| (b as i128 - a as i128).unsigned_abs();
        (d(s.before.peak_bytes, s.after.peak_bytes), d(s.before.bytes, s.after.bytes), d(s.before.calls, s.after.calls))
    };
    sites.sort_by_key(|s| (std::cmp::Reverse(change(s)), s.key));
    let mut notes: Vec<String> = before.notes.iter().map(|n| format!("before: {n}")).chain(after.notes.iter().map(|n| format!("after: {n}"))).collect();
    if before.meta.stack_depth == 0 || after.meta.stack_depth == 0 {
        notes.push("a trace without call sites (--stack-depth 0) cannot be compared site by site".into());
    }
    DiffReport {
        version: REPORT_VERSION,
        before: before.meta.clone(),
        after: after.meta.clone(),
        before_summary: before.summary.clone(),
        after_summary: after.summary.clone(),
        frames,
        sites,
        before_timeline: before.timeline.clone(),
        after_timeline: after.timeline.clone(),
        notes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(sites: &[(u64, &str, u64)]) -> Report {
        let mut r = Report::default();
        for (k, (key, name, peak)) in sites.iter().enumerate() {
            r.frames.push(Frame { function: name.to_string(), ..Frame::default() });
            r.sites.push(Site { key: *key, stack: vec![k as u32], peak_bytes: *peak, calls: 1, bytes: *peak, ..Site::default() });
        }
        r
    }

    #[test]
    fn sites_match_by_key_and_the_largest_change_comes_first() {
        let a = report(&[(3, "same", 100), (5, "grows", 10), (7, "gone", 1)]);
        let b = report(&[(5, "grows", 1000), (3, "same", 100), (9, "new", 50)]);
        let d = diff(&a, &b);
        assert_eq!(d.sites.len(), 4);
        let name = |s: &SiteDiff| d.frames[s.stack[0] as usize].function.clone();
        assert_eq!(d.sites.iter().map(name).collect::<Vec<_>>(), ["grows", "new", "gone", "same"]);
        assert_eq!((d.sites[0].before.peak_bytes, d.sites[0].after.peak_bytes), (10, 1000));
        assert_eq!(d.sites[1].before.calls, 0);
        assert_eq!(d.sites[2].after.calls, 0);
        assert_eq!(d.frames.len(), 4, "frames of both sides, each once");
    }
}
