//! CI limits, the pytest-memray idea for any program: a report checked against a peak, a leak
//! and an allocation-count limit; each limit passed is named with the sites that contribute
//! most to it.

use crate::model::Report;
use crate::text::{site_name, stack_lines, STACK_FRAMES};
use heaplab_model::units::{bytes, grouped};
use std::fmt::Write as _;

/// The limits to check (none set: nothing is checked).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Limits {
    /// Peak of live requested bytes.
    pub peak: Option<u64>,
    /// Bytes live at the end.
    pub leaks: Option<u64>,
    /// Allocation calls.
    pub allocations: Option<u64>,
}

impl Limits {
    /// Whether any limit is set.
    pub fn any(&self) -> bool {
        self.peak.is_some() || self.leaks.is_some() || self.allocations.is_some()
    }
}

/// Which limit was passed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `--limit-peak`.
    Peak,
    /// `--limit-leaks`.
    Leaks,
    /// `--limit-allocations`.
    Allocations,
}

impl Kind {
    /// The flag that sets it.
    pub fn flag(self) -> &'static str {
        match self {
            Kind::Peak => "--limit-peak",
            Kind::Leaks => "--limit-leaks",
            Kind::Allocations => "--limit-allocations",
        }
    }
}

/// A limit passed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    /// Which.
    pub kind: Kind,
    /// The limit.
    pub limit: u64,
    /// The report's figure.
    pub value: u64,
    /// The sites contributing most, largest first (indices into the report's sites).
    pub sites: Vec<usize>,
}

/// The limits `report` passes (a figure equal to its limit passes nothing), each with its
/// `top` largest sites.
pub fn check(report: &Report, limits: &Limits, top: usize) -> Vec<Violation> {
    let s = &report.summary;
    let mut out = Vec::new();
    let mut add = |kind: Kind, limit: Option<u64>, value: u64, key: &dyn Fn(&crate::model::Site) -> u64| {
        if let Some(limit) = limit.filter(|&l| value > l) {
            let mut v: Vec<usize> = (0..report.sites.len()).filter(|&i| key(&report.sites[i]) > 0).collect();
            v.sort_by_key(|&i| std::cmp::Reverse(key(&report.sites[i])));
            v.truncate(top);
            out.push(Violation { kind, limit, value, sites: v });
        }
    };
    add(Kind::Peak, limits.peak, s.peak_bytes, &|x| x.peak_bytes);
    add(Kind::Leaks, limits.leaks, s.leaked_bytes, &|x| x.leaked_bytes);
    add(Kind::Allocations, limits.allocations, s.allocations, &|x| x.calls);
    out
}

/// The violations in words, each with its sites' stacks.
pub fn describe(report: &Report, violations: &[Violation]) -> String {
    let mut out = String::new();
    for v in violations {
        let (what, value, limit, of) = match v.kind {
            Kind::Peak => ("peak heap", bytes(v.value), bytes(v.limit), "at the peak"),
            Kind::Leaks => ("leaked", bytes(v.value), bytes(v.limit), "leaked"),
            Kind::Allocations => ("allocations", grouped(v.value), grouped(v.limit), "calls"),
        };
        let _ = writeln!(out, "{} exceeded: {what} {value} > {limit}; the largest sites:", v.kind.flag());
        for &i in &v.sites {
            let s = &report.sites[i];
            let figure = match v.kind {
                Kind::Peak => bytes(s.peak_bytes),
                Kind::Leaks => bytes(s.leaked_bytes),
                Kind::Allocations => grouped(s.calls),
            };
            let _ = writeln!(out, "  {figure} {of}: {}", site_name(&report.frames, &s.stack));
            if !s.stack.is_empty() {
                stack_lines(&mut out, &report.frames, &s.stack, STACK_FRAMES, "      ");
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Frame, Site};

    #[test]
    fn limits_passed_name_their_largest_sites() {
        let mut r = Report::default();
        r.summary.peak_bytes = 300;
        r.summary.leaked_bytes = 30;
        r.summary.allocations = 4;
        r.frames = vec![Frame { function: "small".into(), ..Frame::default() }, Frame { function: "big".into(), ..Frame::default() }];
        r.sites = vec![Site { key: 1, stack: vec![0], peak_bytes: 100, calls: 3, leaked_bytes: 30, ..Site::default() }, Site { key: 2, stack: vec![1], peak_bytes: 200, calls: 1, ..Site::default() }];
        let v = check(&r, &Limits { peak: Some(299), leaks: Some(30), allocations: Some(3) }, 5);
        assert_eq!(v.len(), 2);
        assert_eq!((v[0].kind, v[0].sites.clone()), (Kind::Peak, vec![1, 0]));
        assert_eq!((v[1].kind, v[1].sites.clone()), (Kind::Allocations, vec![0, 1]));
        let text = describe(&r, &v);
        assert!(text.contains("--limit-peak exceeded: peak heap 300 B > 299 B"), "{text}");
        assert!(text.contains("big"));
        assert!(check(&r, &Limits { peak: Some(300), ..Limits::default() }, 5).is_empty());
    }
}
