//! `heaplab rank`: rank alternatives by a decision maker's preferences. The matrix comes from a
//! compare `results.json` (configurations × metrics, each cell the geometric-mean speedup over
//! the reference) or a CSV; criteria weights from the best-worst method (linear model), its
//! fuzzy variant, or (for TOPSIS) the linear model again; prints weights, consistency,
//! ranking and the Pareto front, as text or JSON.

use crate::Failure;
use clap::{Args, ValueEnum};
use heaplab_decide::bwm::{bwm, fuzzy_bwm, Comparisons, LINGUISTIC};
use heaplab_decide::hpt::{analyse, Options};
use heaplab_decide::mcdm::{order, pareto_front, topsis, weighted_scores, Matrix};
use heaplab_decide::pyperf::read_json;
use heaplab_decide::results::{Results, FORMAT};
use serde_json::json;

/// Long help of `heaplab rank`: every quantity in a sentence.
pub const RANK_HELP: &str = "\
Rank alternatives (configurations of a `heaplab compare` results.json, or the rows of a CSV) by
your preferences between criteria (metrics, or the CSV's columns).

The CSV: a header `name,crit1,crit2,...`, one row per alternative; a criterion is lower-better
unless its name ends in `:max`. From results.json every metric becomes a criterion whose value
is the configuration's geometric-mean speedup over the reference (higher is better).

Preferences (best-worst method, Rezaei 2015/2016): --best and --worst name the most and least
important criteria. --prefs 'c1=1,c2=4,...' says how much more important the best is than each
criterion (1..9; 1 for the best itself); --prefs-worst 'c1=4,c2=1,...' how much more important
each is than the worst. Without them: best over worst 4, every other criterion 2 either way
(fully consistent); with only --prefs the other vector is derived from it (a_jW = a_BW / a_Bj).
For --method fbwm the scale is Guo & Zhao's linguistic one: 1 EI equally, 2 WI weakly, 3 FI
fairly, 4 VI very, 5 AI absolutely important (defaults: best over worst VI, others FI).

What it prints:
  weights        the criteria weights: the linear BWM model's (bwm, topsis), or the graded mean
                 integration (l+4m+u)/6 of the fuzzy weights (fbwm), summing to 1.
  xi             the model's optimal deviation between the weights' ratios and your comparisons
                 (0: your comparisons are fully consistent).
  CR             consistency ratio xi*/CI (CI: the largest xi* possible for your best-over-worst
                 comparison); near 0 is consistent, above about 0.1-0.3 revisit the comparisons.
  input CR       (bwm) max_j |a_Bj a_jW - a_BW| / (a_BW^2 - a_BW), Liang et al. 2020: which
                 comparison is inconsistent, independent of the model.
  score          bwm/fbwm: sum of weight x criterion value min-max normalised to 0 (worst) .. 1
                 (best); topsis: closeness to the ideal, D- / (D+ + D-), vector normalisation.
  Pareto front   the alternatives no other beats or equals on every criterion; the ranking
                 only chooses among trade-offs when the front has more than one.

Example:
  heaplab rank cmp/results.json --best memory --worst time --method fbwm";

/// The ranking method.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum RankMethod {
    /// Best-worst method, linear model (Rezaei 2016), weighted sum.
    Bwm,
    /// Fuzzy best-worst method (Guo & Zhao 2017), weighted sum of GMI weights.
    Fbwm,
    /// TOPSIS with the linear BWM weights.
    Topsis,
}

/// Arguments of `heaplab rank`.
#[derive(Args)]
pub struct RankArgs {
    /// A `heaplab compare` results.json, or a CSV of alternatives × criteria.
    input: String,
    /// The most important criterion.
    #[arg(long)]
    best: String,
    /// The least important criterion.
    #[arg(long)]
    worst: String,
    /// Ranking method.
    #[arg(long, value_enum, default_value = "bwm")]
    method: RankMethod,
    /// Best-to-others comparisons: 'criterion=value,...'.
    #[arg(long, value_name = "C=V,...")]
    prefs: Option<String>,
    /// Others-to-worst comparisons: 'criterion=value,...'.
    #[arg(long, value_name = "C=V,...")]
    prefs_worst: Option<String>,
    /// Confidence of the analysis when the input is a results.json (default: the one
    /// `compare` used, recorded in the file).
    #[arg(long)]
    confidence: Option<f64>,
    /// Print as JSON.
    #[arg(long)]
    json: bool,
}

/// The matrix, and what its values are when they are not the input's own numbers.
fn read_matrix(a: &RankArgs) -> Result<(Matrix, Option<String>), Failure> {
    let bytes = std::fs::read(&a.input).map_err(|e| Failure::Input(format!("{}: cannot read: {e}", a.input)))?;
    let looks_json = bytes.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{') || bytes.starts_with(&[0x1f, 0x8b]);
    if looks_json {
        let v = read_json(&a.input)?;
        if v.get("format").and_then(|f| f.as_str()) != Some(FORMAT) {
            return Err(Failure::Input(format!("{}: JSON but not a heaplab compare results file (no \"format\": \"{FORMAT}\"); give a results.json or a CSV", a.input)));
        }
        let mut opts = Options::from_json(&v["analysis"]);
        if let Some(c) = a.confidence {
            if !(c > 0.5 && c < 1.0) {
                return Err(Failure::Input(format!("--confidence {c}: must lie strictly between 0.5 and 1")));
            }
            opts.confidence = c;
        }
        let r = Results::from_json(&a.input, &v)?;
        let an = analyse(&r, &opts);
        let what = format!("each value is the configuration's geometric-mean speedup over {} (higher is better)", r.reference);
        return Ok((Matrix::from_compare(&r, &an)?, Some(what)));
    }
    let text = String::from_utf8(bytes).map_err(|_| Failure::Input(format!("{}: not text; expected a CSV or a results.json", a.input)))?;
    Ok((Matrix::from_csv(&a.input, &text)?, None))
}

/// Parses 'c=v,...' into values per criterion (names checked); fuzzy levels may be EI..AI.
fn parse_prefs(flag: &str, s: &str, m: &Matrix, fuzzy: bool) -> Result<Vec<Option<f64>>, Failure> {
    let mut out = vec![None; m.criteria.len()];
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (k, v) = part.split_once('=').ok_or_else(|| Failure::Input(format!("{flag}: '{part}' is not criterion=value")))?;
        let j = m.criterion(k.trim()).map_err(|e| Failure::Input(format!("{flag}: {e}")))?;
        let v = v.trim();
        let x = match LINGUISTIC.iter().position(|(short, _)| short.eq_ignore_ascii_case(v)) {
            Some(level) if fuzzy => (level + 1) as f64,
            _ => v.parse::<f64>().map_err(|_| Failure::Input(format!("{flag}: '{v}' for '{k}' is not a number{}", if fuzzy { " nor EI/WI/FI/VI/AI" } else { "" })))?,
        };
        out[j] = Some(x);
    }
    Ok(out)
}

fn comparisons(a: &RankArgs, m: &Matrix) -> Result<Comparisons, Failure> {
    let fuzzy = a.method == RankMethod::Fbwm;
    let best = m.criterion(&a.best).map_err(|e| Failure::Input(format!("--best: {e}")))?;
    let worst = m.criterion(&a.worst).map_err(|e| Failure::Input(format!("--worst: {e}")))?;
    let (bw, mid) = if fuzzy { (4.0, 3.0) } else { (4.0, 2.0) };
    let n = m.criteria.len();
    let given_b = match &a.prefs {
        Some(s) => parse_prefs("--prefs", s, m, fuzzy)?,
        None => vec![None; n],
    };
    let given_w = match &a.prefs_worst {
        Some(s) => parse_prefs("--prefs-worst", s, m, fuzzy)?,
        None => vec![None; n],
    };
    let bo: Vec<f64> = (0..n).map(|j| given_b[j].unwrap_or(if j == best { 1.0 } else if j == worst { given_w[best].unwrap_or(bw) } else { mid })).collect();
    let a_bw = bo[worst];
    let ow: Vec<f64> = (0..n)
        .map(|j| {
            given_w[j].unwrap_or_else(|| {
                if j == worst {
                    1.0
                } else if j == best {
                    a_bw
                } else if a.prefs.is_some() && !fuzzy {
                    (a_bw / bo[j]).max(1.0)
                } else if a.prefs.is_some() {
                    // Fuzzy levels 1..5 stand for m = 1, 1, 2, 3, 4: derive on m, round to a level.
                    let mm = |l: f64| if l <= 2.0 { 1.0 } else { l - 1.0 };
                    let want = (mm(a_bw) / mm(bo[j])).max(1.0);
                    (want + 1.0).round().clamp(1.0, 5.0)
                } else {
                    mid
                }
            })
        })
        .collect();
    let c = Comparisons { best, worst, best_to_others: bo, others_to_worst: ow };
    c.check(&m.criteria, if fuzzy { 5.0 } else { 9.0 })?;
    Ok(c)
}

/// `heaplab rank`.
pub fn rank(a: RankArgs) -> Result<(), Failure> {
    let (m, values_are) = read_matrix(&a)?;
    let c = comparisons(&a, &m)?;
    let n = m.criteria.len();
    let (weights, fuzzy, xi, cr, extra) = match a.method {
        RankMethod::Bwm | RankMethod::Topsis => {
            let w = bwm(&c);
            let extra = json!({"xi_linear": w.xi_linear, "xi_nonlinear": w.xi, "consistency_index": w.consistency_index, "input_consistency_ratio": w.input_consistency_ratio});
            (w.weights.clone(), None, w.xi_linear, w.consistency_ratio, extra)
        }
        RankMethod::Fbwm => {
            let f = fuzzy_bwm(&c)?;
            let extra = json!({"consistency_index": f.consistency_index});
            (f.weights.clone(), Some(f.fuzzy.clone()), f.xi, f.consistency_ratio, extra)
        }
    };
    let scores = match a.method {
        RankMethod::Topsis => topsis(&m, &weights),
        _ => weighted_scores(&m, &weights),
    };
    let ranking = order(&scores);
    let front = pareto_front(&m);
    let method = format!("{:?}", a.method).to_lowercase();
    if a.json {
        let v = json!({
            "input": a.input,
            "values": values_are.as_deref().unwrap_or("the input's values"),
            "method": method,
            "best": m.criteria[c.best],
            "worst": m.criteria[c.worst],
            "best_to_others": c.best_to_others,
            "others_to_worst": c.others_to_worst,
            "criteria": (0..n).map(|j| {
                let mut o = json!({"name": m.criteria[j], "better": m.better[j].name(), "weight": weights[j]});
                if let Some(f) = &fuzzy {
                    o["fuzzy_weight"] = json!([f[j].l, f[j].m, f[j].u]);
                }
                o
            }).collect::<Vec<_>>(),
            "xi": xi,
            "consistency_ratio": cr,
            "details": extra,
            "ranking": ranking.iter().enumerate().map(|(k, &i)| json!({
                "rank": k + 1, "alternative": m.alternatives[i], "score": scores[i], "pareto": front[i], "values": m.values[i],
            })).collect::<Vec<_>>(),
            "pareto_front": (0..m.alternatives.len()).filter(|&i| front[i]).map(|i| m.alternatives[i].clone()).collect::<Vec<_>>(),
        });
        println!("{}", serde_json::to_string_pretty(&v).expect("JSON of plain values"));
        return Ok(());
    }
    println!("method {method}; best {}, worst {}", m.criteria[c.best], m.criteria[c.worst]);
    if let Some(w) = &values_are {
        println!("{w}");
    }
    println!("\ncriterion        better  best-to  to-worst  weight");
    for j in 0..n {
        let fz = fuzzy.as_ref().map(|f| format!("  ({:.4}, {:.4}, {:.4})", f[j].l, f[j].m, f[j].u)).unwrap_or_default();
        println!("{:<16} {:<6}  {:>7}  {:>8}  {:.4}{fz}", m.criteria[j], m.better[j].name(), c.best_to_others[j], c.others_to_worst[j], weights[j]);
    }
    match a.method {
        RankMethod::Fbwm => println!("\nxi* {xi:.4}, consistency ratio {cr:.4}"),
        _ => println!(
            "\nxi (linear model) {xi:.4}; xi* (non-linear) {:.4}, consistency ratio {cr:.4}; input-based CR {:.4}",
            extra["xi_nonlinear"].as_f64().unwrap_or(0.0),
            extra["input_consistency_ratio"].as_f64().unwrap_or(0.0)
        ),
    }
    println!("\nrank  alternative          score   pareto");
    for (k, &i) in ranking.iter().enumerate() {
        println!("{:>4}  {:<18}  {:.4}   {}", k + 1, m.alternatives[i], scores[i], if front[i] { "yes" } else { "" });
    }
    let f: Vec<&str> = (0..m.alternatives.len()).filter(|&i| front[i]).map(|i| m.alternatives[i].as_str()).collect();
    println!("\nPareto front: {}", f.join(", "));
    Ok(())
}
