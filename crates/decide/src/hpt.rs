//! The HPT analysis (Chen et al., "Statistical Performance Comparisons of Computers", HPCA 2012
//! and IEEE TC 2015) as chapter 2 of the thesis applies it to allocator configurations: per
//! workload, a one-sided rank-sum test of each configuration against the reference (the in-app
//! comparison); the greatest common subset of stable, significantly different workloads; over
//! that subset, the signed-rank test of the per-workload median differences (the cross-app
//! comparison), and the cross-application speedup: the largest r for which "C is r times
//! better than R" still holds with the asked confidence. Cells that are not a speedup read MI
//! (marginal improvement) or PD (performance degradation), as the thesis defines them.
//!
//! Deviations from the thesis' script, on purpose (docs/decide.md lists them): samples are
//! normalised by the reference's median rather than its first sample; the speedup reported is
//! the last step that passes, with its confidence (the script printed the first step that
//! failed, with a confidence below the threshold); the signed-rank test splits zero
//! differences between the signs as HPT's own implementation does (the script dropped them).

use crate::ranktest::{rank_sum, signed_rank, Alternative, Method};
use heaplab_study::stats::median;
use crate::results::{Better, Results};
use serde_json::{json, Value};

/// How the analysis runs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Options {
    /// The confidence a conclusion needs (0.95: the thesis' threshold).
    pub confidence: f64,
    /// Step of the speedup search (0.005: the thesis' step).
    pub step: f64,
    /// Largest speedup searched.
    pub max_speedup: f64,
    /// Keep workloads whose in-app comparison is not significant (HPT's own rule, which counts
    /// them as zero differences) instead of dropping them (the thesis' common subset).
    pub keep_insignificant: bool,
    /// Analyse workloads pyperf's checks call unstable (the thesis discards them).
    pub keep_unstable: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options { confidence: 0.95, step: 0.005, max_speedup: 100.0, keep_insignificant: false, keep_unstable: false }
    }
}

impl Options {
    /// The options recorded in a results file's `analysis` (the defaults for what is missing),
    /// so that re-analysing a file (`heaplab rank`) sees what `compare` saw.
    pub fn from_json(analysis: &Value) -> Options {
        let d = Options::default();
        let f = |k: &str, dv: f64| analysis.get(k).and_then(Value::as_f64).unwrap_or(dv);
        let b = |k: &str| analysis.get(k).and_then(Value::as_bool).unwrap_or(false);
        Options {
            confidence: f("confidence", d.confidence),
            step: f("step", d.step),
            max_speedup: d.max_speedup,
            keep_insignificant: b("keep_insignificant"),
            keep_unstable: b("keep_unstable"),
        }
    }
}

/// The in-app verdict on one workload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InAppVerdict {
    /// The configuration is better with the asked confidence.
    Better,
    /// The configuration is worse with the asked confidence.
    Worse,
    /// Neither.
    Unclear,
}

impl InAppVerdict {
    /// Word for tables.
    pub fn name(self) -> &'static str {
        match self {
            InAppVerdict::Better => "better",
            InAppVerdict::Worse => "worse",
            InAppVerdict::Unclear => "no significant difference",
        }
    }
}

/// One configuration against the reference on one workload and metric.
#[derive(Clone, Debug, PartialEq)]
pub struct InApp {
    /// Configuration.
    pub configuration: String,
    /// Workload.
    pub workload: String,
    /// Metric.
    pub metric: String,
    /// Median speedup: reference median over configuration median (inverted for metrics where
    /// higher is better), so > 1 means the configuration is better.
    pub speedup: f64,
    /// Geometric mean of the configuration's samples normalised by the reference's median
    /// (the thesis' per-benchmark summary, plotted as ECDFs).
    pub geomean_speedup: f64,
    /// Confidence that the configuration is better (1 − one-sided p).
    pub confidence_better: f64,
    /// Confidence that the configuration is worse.
    pub confidence_worse: f64,
    /// The verdict at the asked confidence.
    pub verdict: InAppVerdict,
    /// How the p-values were computed.
    pub method: Method,
}

/// The cross-application verdict of one configuration on one metric.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum CrossApp {
    /// Better than the reference by at least `speedup` times, with `confidence`.
    Speedup {
        /// The largest r passing.
        speedup: f64,
        /// The confidence of "better by r".
        confidence: f64,
    },
    /// MI: not significantly better nor worse; `confidence` is that of "better".
    MarginalImprovement {
        /// Confidence of "better" (below the threshold).
        confidence: f64,
    },
    /// PD: worse than the reference with `confidence`.
    Degradation {
        /// Confidence of "worse".
        confidence: f64,
    },
    /// No workload left in the common subset.
    NoData,
}

impl CrossApp {
    /// The cell as the thesis prints it: `1.125 (93.96%)`, `MI (58%)`, `PD (100%)`, `n/a`.
    pub fn cell(&self) -> String {
        match *self {
            CrossApp::Speedup { speedup, confidence } => format!("{speedup:.3} ({})", pct(confidence)),
            CrossApp::MarginalImprovement { confidence } => format!("MI ({})", pct(confidence)),
            CrossApp::Degradation { confidence } => format!("PD ({})", pct(confidence)),
            CrossApp::NoData => "n/a".into(),
        }
    }

    fn to_json(self) -> Value {
        match self {
            CrossApp::Speedup { speedup, confidence } => json!({"kind": "speedup", "speedup": speedup, "confidence": confidence}),
            CrossApp::MarginalImprovement { confidence } => json!({"kind": "MI", "confidence": confidence}),
            CrossApp::Degradation { confidence } => json!({"kind": "PD", "confidence": confidence}),
            CrossApp::NoData => json!({"kind": "none"}),
        }
    }
}

/// A confidence as a percentage with two decimals, trailing zeros dropped: 93.96%, 100%.
pub fn pct(c: f64) -> String {
    let s = format!("{:.2}", c * 100.0);
    let s = s.trim_end_matches('0').trim_end_matches('.');
    format!("{s}%")
}

/// One cell of the chapter-2 table.
#[derive(Clone, Debug, PartialEq)]
pub struct Cell {
    /// Configuration (row).
    pub configuration: String,
    /// Metric (column).
    pub metric: String,
    /// The verdict.
    pub verdict: CrossApp,
}

/// The workloads a metric's cross-app analysis uses, and why the others were left out.
#[derive(Clone, Debug, PartialEq)]
pub struct Subset {
    /// Metric.
    pub metric: String,
    /// Workloads used.
    pub kept: Vec<String>,
    /// (workload, reason) of those left out.
    pub dropped: Vec<(String, String)>,
}

/// The whole analysis.
#[derive(Clone, Debug, PartialEq)]
pub struct Analysis {
    /// The options it ran with.
    pub options: Options,
    /// In-app comparisons over each metric's stable common workloads.
    pub in_app: Vec<InApp>,
    /// Per metric, the workloads of the cross-app analysis.
    pub subsets: Vec<Subset>,
    /// Per configuration (reference excluded) and metric, the cross-app verdict.
    pub cells: Vec<Cell>,
    /// (metric, workload, geometric mean of the reference's own normalised samples): the
    /// reference's line in the ECDF pictures, spread around 1 by its noise.
    pub reference_geomeans: Vec<(String, String, f64)>,
}

/// Samples of one workload as "performance" (higher is better), normalised by the reference's
/// median: the reference itself sits around 1.
fn performance(values: &[f64], ref_median: f64, better: Better) -> Vec<f64> {
    match better {
        Better::Lower => values.iter().map(|v| ref_median / v).collect(),
        Better::Higher => values.iter().map(|v| v / ref_median).collect(),
    }
}

/// The in-app test at ratio r: does `cfg / r` beat `reference`? Returns (p of better, p of
/// worse, method).
fn in_app_test(reference: &[f64], cfg: &[f64], r: f64) -> (f64, f64, Method) {
    let scaled: Vec<f64> = cfg.iter().map(|v| v / r).collect();
    let b = rank_sum(&scaled, reference, Alternative::Greater);
    let w = rank_sum(&scaled, reference, Alternative::Less);
    (b.p, w.p, b.method)
}

/// Per workload of the subset: (reference performance, configuration performance).
type Pairs = Vec<(Vec<f64>, Vec<f64>)>;

/// The HPT cross-app p-values at ratio r over `pairs`: (p of better, p of worse).
fn cross_app_test(pairs: &Pairs, r: f64, alpha: f64) -> (f64, f64) {
    let d: Vec<f64> = pairs
        .iter()
        .map(|(re, cf)| {
            let (pb, pw, _) = in_app_test(re, cf, r);
            if pb < alpha || pw < alpha {
                median(cf) / r - median(re)
            } else {
                0.0
            }
        })
        .collect();
    (signed_rank(&d, Alternative::Greater).p, signed_rank(&d, Alternative::Less).p)
}

/// Runs the analysis on `results`.
pub fn analyse(results: &Results, opts: &Options) -> Analysis {
    let alpha = 1.0 - opts.confidence;
    let others: Vec<&str> = results.configurations.iter().map(|c| c.name.as_str()).filter(|n| *n != results.reference).collect();
    let mut in_app = Vec::new();
    let mut subsets = Vec::new();
    let mut cells = Vec::new();
    let mut reference_geomeans = Vec::new();
    for metric in &results.metrics {
        let mut kept = Vec::new();
        let mut dropped = Vec::new();
        // Step 1: stable and present (two values or more) under every configuration.
        'workload: for w in results.workloads(&metric.name) {
            for c in &results.configurations {
                match results.series(&c.name, &w, &metric.name) {
                    None => {
                        dropped.push((w.clone(), format!("not measured under {}", c.name)));
                        continue 'workload;
                    }
                    Some(s) if s.values.len() < 2 => {
                        dropped.push((w.clone(), format!("fewer than 2 values under {}", c.name)));
                        continue 'workload;
                    }
                    Some(s) if !s.unstable.is_empty() && !opts.keep_unstable => {
                        dropped.push((w.clone(), format!("unstable under {}: {}", c.name, s.unstable.join("; "))));
                        continue 'workload;
                    }
                    Some(s) if s.values.iter().any(|v| *v <= 0.0) => {
                        dropped.push((w.clone(), format!("a value ≤ 0 under {} (speedups are ratios of positive values)", c.name)));
                        continue 'workload;
                    }
                    Some(_) => {}
                }
            }
            kept.push(w);
        }
        // In-app comparisons on the stable common workloads.
        let mut perf: Vec<(String, Vec<f64>, Vec<Vec<f64>>)> = Vec::new();
        for w in &kept {
            let re = &results.series(&results.reference, w, &metric.name).expect("kept").values;
            let m = median(re);
            let re_perf = performance(re, m, metric.better);
            reference_geomeans.push((metric.name.clone(), w.clone(), geomean(&re_perf)));
            let mut cfgs = Vec::new();
            for c in &others {
                let cf = performance(&results.series(c, w, &metric.name).expect("kept").values, m, metric.better);
                let (pb, pw, method) = in_app_test(&re_perf, &cf, 1.0);
                let verdict = if pb < alpha {
                    InAppVerdict::Better
                } else if pw < alpha {
                    InAppVerdict::Worse
                } else {
                    InAppVerdict::Unclear
                };
                let geo = geomean(&cf);
                in_app.push(InApp {
                    configuration: c.to_string(),
                    workload: w.clone(),
                    metric: metric.name.clone(),
                    speedup: median(&cf) / median(&re_perf),
                    geomean_speedup: geo,
                    confidence_better: 1.0 - pb,
                    confidence_worse: 1.0 - pw,
                    verdict,
                    method,
                });
                cfgs.push(cf);
            }
            perf.push((w.clone(), re_perf, cfgs));
        }
        // Step 2 (the thesis' second distillation): keep workloads where every configuration
        // differs significantly from the reference.
        if !opts.keep_insignificant {
            perf.retain(|(w, _, _)| {
                let unclear: Vec<&str> = in_app
                    .iter()
                    .filter(|a| a.metric == metric.name && &a.workload == w && a.verdict == InAppVerdict::Unclear)
                    .map(|a| a.configuration.as_str())
                    .collect();
                if unclear.is_empty() {
                    true
                } else {
                    dropped.push((w.clone(), format!("no significant in-app difference for {}", unclear.join(", "))));
                    false
                }
            });
        }
        let kept: Vec<String> = perf.iter().map(|(w, _, _)| w.clone()).collect();
        for (k, c) in others.iter().enumerate() {
            let pairs: Pairs = perf.iter().map(|(_, re, cfgs)| (re.clone(), cfgs[k].clone())).collect();
            let verdict = if pairs.is_empty() { CrossApp::NoData } else { cross_app(&pairs, opts, alpha) };
            cells.push(Cell { configuration: c.to_string(), metric: metric.name.clone(), verdict });
        }
        subsets.push(Subset { metric: metric.name.clone(), kept, dropped });
    }
    Analysis { options: *opts, in_app, subsets, cells, reference_geomeans }
}

fn geomean(v: &[f64]) -> f64 {
    (v.iter().map(|x| x.ln()).sum::<f64>() / v.len() as f64).exp()
}

/// The cross-app verdict over `pairs`: a speedup found by stepping r up from 1 while "better
/// by r" keeps the confidence, else PD when "worse" has it, else MI.
fn cross_app(pairs: &Pairs, opts: &Options, alpha: f64) -> CrossApp {
    let (pb, pw) = cross_app_test(pairs, 1.0, alpha);
    if pb < alpha {
        let (mut best, mut conf) = (1.0, 1.0 - pb);
        let mut k = 1u64;
        loop {
            let r = 1.0 + k as f64 * opts.step;
            if r > opts.max_speedup {
                break;
            }
            let (p, _) = cross_app_test(pairs, r, alpha);
            if p >= alpha {
                break;
            }
            (best, conf) = (r, 1.0 - p);
            k += 1;
        }
        CrossApp::Speedup { speedup: best, confidence: conf }
    } else if pw < alpha {
        CrossApp::Degradation { confidence: 1.0 - pw }
    } else {
        CrossApp::MarginalImprovement { confidence: 1.0 - pb }
    }
}

impl Analysis {
    /// The cell of `configuration` and `metric`.
    pub fn cell(&self, configuration: &str, metric: &str) -> Option<&Cell> {
        self.cells.iter().find(|c| c.configuration == configuration && c.metric == metric)
    }

    /// Geometric mean over a metric's cross-app workloads of the per-workload median speedups
    /// of `configuration` (1 for the reference): one number per configuration and metric, for
    /// ranking. Falls back to every stable common workload when the subset is empty; `None`
    /// when there is none either.
    pub fn summary_speedup(&self, results: &Results, configuration: &str, metric: &str) -> Option<f64> {
        if configuration == results.reference {
            return Some(1.0);
        }
        let kept = &self.subsets.iter().find(|s| s.metric == metric)?.kept;
        let rows: Vec<&InApp> = self.in_app.iter().filter(|a| a.configuration == configuration && a.metric == metric).collect();
        let used: Vec<f64> = rows.iter().filter(|a| kept.is_empty() || kept.contains(&a.workload)).map(|a| a.speedup.ln()).collect();
        if used.is_empty() {
            return None;
        }
        Some((used.iter().sum::<f64>() / used.len() as f64).exp())
    }

    /// The analysis as JSON (stored beside the data in `results.json`).
    pub fn to_json(&self) -> Value {
        json!({
            "method": "HPT (Chen et al. 2012/2015) as applied in the thesis' chapter 2",
            "confidence": self.options.confidence,
            "step": self.options.step,
            "keep_insignificant": self.options.keep_insignificant,
            "keep_unstable": self.options.keep_unstable,
            "cross_app": self.cells.iter().map(|c| {
                let mut v = c.verdict.to_json();
                v["configuration"] = json!(c.configuration);
                v["metric"] = json!(c.metric);
                v["cell"] = json!(c.verdict.cell());
                v
            }).collect::<Vec<_>>(),
            "subsets": self.subsets.iter().map(|s| json!({
                "metric": s.metric,
                "kept": s.kept,
                "dropped": s.dropped.iter().map(|(w, r)| json!({"workload": w, "reason": r})).collect::<Vec<_>>(),
            })).collect::<Vec<_>>(),
            "in_app": self.in_app.iter().map(|a| json!({
                "configuration": a.configuration,
                "workload": a.workload,
                "metric": a.metric,
                "speedup": a.speedup,
                "geomean_speedup": a.geomean_speedup,
                "confidence_better": a.confidence_better,
                "confidence_worse": a.confidence_worse,
                "verdict": a.verdict.name(),
                "test": a.method.name(),
            })).collect::<Vec<_>>(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::{Configuration, Metric, Series};

    fn results(shifts: &[(&str, f64)], workloads: usize, n: usize) -> Results {
        let mut state = 99u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 11) as f64 / (1u64 << 53) as f64
        };
        let mut series = Vec::new();
        for (c, factor) in shifts {
            for w in 0..workloads {
                let base = 1.0 + w as f64;
                series.push(Series {
                    configuration: c.to_string(),
                    workload: format!("w{w}"),
                    metric: "time".into(),
                    values: (0..n).map(|_| base * factor * (1.0 + 0.01 * next())).collect(),
                    warmups: vec![],
                    unstable: vec![],
                });
            }
        }
        Results {
            reference: shifts[0].0.into(),
            configurations: shifts.iter().map(|(c, _)| Configuration { name: c.to_string(), description: String::new() }).collect(),
            metrics: vec![Metric { name: "time".into(), unit: "second".into(), better: Better::Lower }],
            series,
            provenance: Value::Null,
        }
    }

    /// A configuration 20% faster everywhere (noise 1%) gets a speedup just below 1.2 (the
    /// test must still find the shifted samples significantly better); one 10% slower is PD;
    /// one identical up to noise is MI or dropped.
    #[test]
    fn speedup_pd_and_mi_on_synthetic_data() {
        let r = results(&[("ref", 1.0), ("fast", 1.0 / 1.2), ("slow", 1.1)], 12, 20);
        let a = analyse(&r, &Options::default());
        match a.cell("fast", "time").unwrap().verdict {
            CrossApp::Speedup { speedup, confidence } => {
                assert!(speedup > 1.15 && speedup <= 1.2 + 1e-9, "speedup {speedup}");
                assert!(confidence >= 0.95);
            }
            v => panic!("fast: {v:?}"),
        }
        assert!(matches!(a.cell("slow", "time").unwrap().verdict, CrossApp::Degradation { confidence } if confidence > 0.99));
        assert_eq!(a.subsets[0].kept.len(), 12);
    }

    #[test]
    fn higher_is_better_metrics_invert() {
        let mut r = results(&[("ref", 1.0), ("more", 1.3)], 10, 15);
        r.metrics[0].better = Better::Higher;
        let a = analyse(&r, &Options::default());
        assert!(matches!(a.cell("more", "time").unwrap().verdict, CrossApp::Speedup { speedup, .. } if speedup > 1.2));
    }

    #[test]
    fn unstable_and_missing_workloads_leave_the_subset() {
        let mut r = results(&[("ref", 1.0), ("fast", 0.8)], 6, 10);
        r.series[1].unstable.push("the standard deviation is 12% of the mean".into());
        r.series.retain(|s| !(s.configuration == "fast" && s.workload == "w2"));
        let a = analyse(&r, &Options::default());
        let s = &a.subsets[0];
        assert_eq!(s.kept.len(), 4);
        assert!(s.dropped.iter().any(|(w, why)| w == "w1" && why.contains("unstable")));
        assert!(s.dropped.iter().any(|(w, why)| w == "w2" && why.contains("not measured under fast")));
    }

    #[test]
    fn cells_print_like_the_thesis() {
        assert_eq!(CrossApp::Speedup { speedup: 1.125, confidence: 0.9396 }.cell(), "1.125 (93.96%)");
        assert_eq!(CrossApp::MarginalImprovement { confidence: 0.58 }.cell(), "MI (58%)");
        assert_eq!(CrossApp::Degradation { confidence: 1.0 }.cell(), "PD (100%)");
    }
}
