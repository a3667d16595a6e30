//! Reference figures of other planners, hard-coded from `../shared/ANCHORS.md` (measured there on
//! a 2-core machine, 2026-11-22, wall clock of each tool's own binary). They are quoted for
//! comparison only — the harness does not run minimalloc or idealloc, and the figures come from a
//! different run on possibly different hardware.

/// (minimalloc, idealloc) for a shared instance name: "fragmentation, seconds", or `None` where
/// ANCHORS.md gives no per-instance figure.
pub fn reference(name: &str) -> (Option<&'static str>, Option<&'static str>) {
    match name {
        // minimalloc: 0% on every one of A–K with the times listed; idealloc per-instance figures
        // exist only for A, B and K (the suite's range is 27.7–31.5%, each ≤ 0.07 s).
        "minimalloc/A" => (Some("0%, 3.39 s"), Some("29.0%, ≤0.07 s")),
        "minimalloc/B" => (Some("0%, 2.41 s"), Some("31.5%, ≤0.07 s")),
        "minimalloc/C" => (Some("0%, 0.49 s"), None),
        "minimalloc/D" => (Some("0%, 1.77 s"), None),
        "minimalloc/E" => (Some("0%, 2.53 s"), None),
        "minimalloc/F" => (Some("0%, 3.87 s"), None),
        "minimalloc/G" => (Some("0%, 0.82 s"), None),
        "minimalloc/H" => (Some("0%, 1.19 s"), None),
        "minimalloc/I" => (Some("0%, 2.44 s"), None),
        "minimalloc/J" => (Some("0%, 0.70 s"), None),
        "minimalloc/K" => (Some("0%, 0.46 s"), Some("27.7%, ≤0.07 s")),
        "iopddl/G_1" => (Some("0%, 0.84 s"), Some("0.28%, 0.04 s")),
        "somas/resnet50" => (Some("0%, 0.24 s"), Some("0.64%, 0.06 s")),
        _ => (None, None),
    }
}

/// A note for results.md on where the reference columns come from.
pub const NOTE: &str = "The minimalloc and idealloc columns are reference figures quoted from \
`../shared/ANCHORS.md` (fragmentation and wall time of each tool's own binary, measured on a \
2-core machine, 2026-11-22); they were not measured by this run. minimalloc was given the max load \
as its capacity. For idealloc on minimalloc C–J, ANCHORS.md gives only the suite range: \
27.7–31.5%, ≤ 0.07 s each. Generated instances have no reference figures.";
