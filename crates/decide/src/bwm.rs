//! Criteria weights from a decision maker's comparisons: the best-worst method (Rezaei 2015;
//! the linear model of Rezaei 2016 gives the weights) and its fuzzy variant (Guo & Zhao 2017,
//! triangular fuzzy numbers, graded mean integration), with their consistency measures.
//!
//! The minmax models are solved exactly: the linear model is one LP; the ratio models
//! (Rezaei's non-linear model, used for its consistency ratio, and Guo & Zhao's fuzzy model)
//! are quasi-convex — for a fixed ξ every |w_a / w_b − a| ≤ ξ is a pair of linear inequalities
//! — so ξ* is found by bisection on ξ over LP feasibility (to the LP's own tolerance, about
//! 1e-8). Weights are kept ≥ 1e-9
//! so that every ratio is defined.

use crate::lp::{Lp, LpResult, Rel};
use crate::DecideError;

/// Smallest weight (and lower end of a fuzzy weight): ratios need non-zero denominators.
const W_MIN: f64 = 1e-9;

/// A decision maker's comparisons over n criteria.
#[derive(Clone, Debug, PartialEq)]
pub struct Comparisons {
    /// Index of the best (most important) criterion.
    pub best: usize,
    /// Index of the worst (least important) criterion.
    pub worst: usize,
    /// a_Bj: how much more important the best is than each criterion (a_BB = 1).
    pub best_to_others: Vec<f64>,
    /// a_jW: how much more important each criterion is than the worst (a_WW = 1).
    pub others_to_worst: Vec<f64>,
}

impl Comparisons {
    /// Fails unless the vectors fit Rezaei's rules on `scale_max` (9 for BWM, 5 for the fuzzy
    /// scale): values in 1..=scale_max, a_BB = a_WW = 1, and the best–worst comparison the same
    /// in both vectors.
    pub fn check(&self, names: &[String], scale_max: f64) -> Result<(), DecideError> {
        let n = names.len();
        let err = |m: String| Err(DecideError::Input(m));
        if n < 2 {
            return err("ranking needs at least two criteria".into());
        }
        if self.best_to_others.len() != n || self.others_to_worst.len() != n {
            return err(format!("the comparison vectors need one value per criterion ({n})"));
        }
        if self.best == self.worst {
            return err(format!("the best and the worst criterion are both '{}'; choose two different criteria", names[self.best]));
        }
        for (what, v) in [("best-to-others", &self.best_to_others), ("others-to-worst", &self.others_to_worst)] {
            for (j, &x) in v.iter().enumerate() {
                if !(x.is_finite() && (1.0..=scale_max).contains(&x)) {
                    return err(format!("{what} comparison for '{}' is {x}; comparisons lie between 1 and {scale_max}", names[j]));
                }
            }
        }
        if self.best_to_others[self.best] != 1.0 {
            return err(format!("the best criterion '{}' compared with itself must be 1", names[self.best]));
        }
        if self.others_to_worst[self.worst] != 1.0 {
            return err(format!("the worst criterion '{}' compared with itself must be 1", names[self.worst]));
        }
        if self.best_to_others[self.worst] != self.others_to_worst[self.best] {
            return err(format!(
                "best-to-worst is {} in the best-to-others vector but {} in the others-to-worst vector; they are the same comparison",
                self.best_to_others[self.worst], self.others_to_worst[self.best]
            ));
        }
        Ok(())
    }

    /// a_BW.
    pub fn best_to_worst(&self) -> f64 {
        self.best_to_others[self.worst]
    }
}

/// Weights from the (crisp) best-worst method.
#[derive(Clone, Debug, PartialEq)]
pub struct BwmWeights {
    /// Weights of the linear model (Rezaei 2016), summing to 1.
    pub weights: Vec<f64>,
    /// ξ^L: the linear model's optimum (0 when the comparisons are fully consistent).
    pub xi_linear: f64,
    /// ξ*: the non-linear model's optimum (Rezaei 2015).
    pub xi: f64,
    /// Consistency index for a_BW: the largest ξ* any comparisons with that a_BW can reach.
    pub consistency_index: f64,
    /// Consistency ratio ξ* / CI (0 fully consistent; Rezaei reads values near 0 as consistent).
    pub consistency_ratio: f64,
    /// Input-based consistency ratio (Liang, Brunelli & Rezaei 2020):
    /// max_j |a_Bj a_jW − a_BW| / (a_BW² − a_BW); 0 when a_BW = 1.
    pub input_consistency_ratio: f64,
}

/// Rezaei's consistency index for a_BW = `a`: the root of ξ² − (1 + 2a) ξ + (a² − a) = 0 that
/// the 2015 paper tabulates (0.44 for 2, …, 5.23 for 9).
pub fn consistency_index(a: f64) -> f64 {
    ((1.0 + 2.0 * a) - (1.0 + 8.0 * a).sqrt()) / 2.0
}

/// The crisp best-worst method: linear-model weights, both ξ and the consistency ratios.
pub fn bwm(c: &Comparisons) -> BwmWeights {
    let n = c.best_to_others.len();
    // Variables w_0..w_{n−1}, ξ.
    let mut cost = vec![0.0; n + 1];
    cost[n] = 1.0;
    let mut lp = Lp::new(cost);
    let row = |pairs: &[(usize, f64)], xi: f64| {
        let mut a = vec![0.0; n + 1];
        for &(j, v) in pairs {
            a[j] += v;
        }
        a[n] = xi;
        a
    };
    for j in 0..n {
        // |w_B − a_Bj w_j| ≤ ξ and |w_j − a_jW w_W| ≤ ξ.
        for (p, q, a) in [(c.best, j, c.best_to_others[j]), (j, c.worst, c.others_to_worst[j])] {
            lp.add(row(&[(p, 1.0), (q, -a)], -1.0), Rel::Le, 0.0);
            lp.add(row(&[(p, -1.0), (q, a)], -1.0), Rel::Le, 0.0);
        }
    }
    lp.add(row(&(0..n).map(|j| (j, 1.0)).collect::<Vec<_>>(), 0.0), Rel::Eq, 1.0);
    let (weights, xi_linear) = match lp.solve() {
        LpResult::Optimal { x, value } => (x[..n].to_vec(), value),
        // Always feasible (equal weights with a large ξ) and bounded below by 0.
        r => unreachable!("the linear BWM model is feasible and bounded: {r:?}"),
    };
    let ratios: Vec<Ratio> = (0..n)
        .flat_map(|j| [Ratio { num: c.best, den: j, target: c.best_to_others[j] }, Ratio { num: j, den: c.worst, target: c.others_to_worst[j] }])
        .collect();
    let (xi, _) = minmax_ratio(n, &ratios, &[], &vec![1.0; n]);
    let a_bw = c.best_to_worst();
    let ci = consistency_index(a_bw);
    let input_cr = if a_bw > 1.0 {
        (0..n).map(|j| (c.best_to_others[j] * c.others_to_worst[j] - a_bw).abs() / (a_bw * a_bw - a_bw)).fold(0.0, f64::max)
    } else {
        0.0
    };
    BwmWeights { weights, xi_linear, xi, consistency_index: ci, consistency_ratio: if ci > 0.0 { xi / ci } else { 0.0 }, input_consistency_ratio: input_cr }
}

/// A constraint |x_num / x_den − target| ≤ ξ over LP variables.
#[derive(Clone, Copy, Debug)]
struct Ratio {
    num: usize,
    den: usize,
    target: f64,
}

/// Solves min ξ s.t. every ratio within ξ of its target, the `extra` linear rows, Σ norm_k x_k
/// = 1, x ≥ W_MIN: bisection on ξ over LP feasibility. Returns (ξ*, x at ξ*).
fn minmax_ratio(nvars: usize, ratios: &[Ratio], extra: &[(Vec<f64>, Rel, f64)], norm: &[f64]) -> (f64, Vec<f64>) {
    let feasible = |xi: f64| -> Option<Vec<f64>> {
        let mut lp = Lp::new(vec![0.0; nvars]);
        for r in ratios {
            if r.num == r.den {
                // x/x = 1: within ξ of the target or not, whatever x is.
                if (1.0 - r.target).abs() > xi {
                    return None;
                }
                continue;
            }
            // num − (t + ξ) den ≤ 0 and (t − ξ) den − num ≤ 0.
            let mut a = vec![0.0; nvars];
            a[r.num] = 1.0;
            a[r.den] = -(r.target + xi);
            lp.add(a, Rel::Le, 0.0);
            let mut b = vec![0.0; nvars];
            b[r.num] = -1.0;
            b[r.den] = r.target - xi;
            lp.add(b, Rel::Le, 0.0);
        }
        for row in extra {
            lp.add(row.0.clone(), row.1, row.2);
        }
        lp.add(norm.to_vec(), Rel::Eq, 1.0);
        // x = W_MIN + y with y ≥ 0: the lower bounds without rows of their own.
        for row in lp.rows.iter_mut() {
            row.2 -= W_MIN * row.0.iter().sum::<f64>();
        }
        match lp.solve() {
            LpResult::Optimal { x, .. } => Some(x.iter().map(|y| y + W_MIN).collect()),
            _ => None,
        }
    };
    let mut hi = ratios.iter().map(|r| (r.target - 1.0).abs()).fold(0.0, f64::max) + 1.0;
    let mut best = loop {
        // Equal weights are feasible at this ξ unless `extra` forbids them; widen until feasible.
        if let Some(x) = feasible(hi) {
            break x;
        }
        hi *= 2.0;
        assert!(hi < 1e12, "ratio model infeasible at every ξ");
    };
    let mut lo = 0.0;
    if let Some(x) = feasible(0.0) {
        return (0.0, x);
    }
    while hi - lo > 1e-12 * (1.0 + hi) {
        let mid = 0.5 * (lo + hi);
        match feasible(mid) {
            Some(x) => {
                hi = mid;
                best = x;
            }
            None => lo = mid,
        }
    }
    (hi, best)
}

/// A triangular fuzzy number (l, m, u), l ≤ m ≤ u.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Tfn {
    /// Lower end.
    pub l: f64,
    /// Most likely value.
    pub m: f64,
    /// Upper end.
    pub u: f64,
}

impl Tfn {
    /// Graded mean integration representation (l + 4m + u) / 6.
    pub fn gmi(self) -> f64 {
        (self.l + 4.0 * self.m + self.u) / 6.0
    }
}

/// Guo & Zhao's linguistic scale, 1..=5: equally (1,1,1), weakly (2/3,1,3/2), fairly
/// (3/2,2,5/2), very (5/2,3,7/2), absolutely (7/2,4,9/2) important.
pub fn linguistic(level: f64) -> Option<Tfn> {
    let t = |l, m, u| Some(Tfn { l, m, u });
    match level as i64 {
        _ if level.fract() != 0.0 => None,
        1 => t(1.0, 1.0, 1.0),
        2 => t(2.0 / 3.0, 1.0, 1.5),
        3 => t(1.5, 2.0, 2.5),
        4 => t(2.5, 3.0, 3.5),
        5 => t(3.5, 4.0, 4.5),
        _ => None,
    }
}

/// Names of the linguistic levels 1..=5, for parsing and printing.
pub const LINGUISTIC: [(&str, &str); 5] = [
    ("EI", "equally important"),
    ("WI", "weakly important"),
    ("FI", "fairly important"),
    ("VI", "very important"),
    ("AI", "absolutely important"),
];

/// Guo & Zhao's consistency index for ã_BW with upper end `u`: the larger root of
/// ξ² − (1 + 2u) ξ + (u² − u) = 0 (3.00, 3.80, 5.29, 6.69, 8.04 for the five levels).
pub fn fuzzy_consistency_index(u: f64) -> f64 {
    ((1.0 + 2.0 * u) + (1.0 + 8.0 * u).sqrt()) / 2.0
}

/// Weights from the fuzzy best-worst method.
#[derive(Clone, Debug, PartialEq)]
pub struct FuzzyWeights {
    /// Fuzzy weights.
    pub fuzzy: Vec<Tfn>,
    /// Their graded mean integrations (they sum to 1 by the model's constraint).
    pub weights: Vec<f64>,
    /// ξ*, the model's optimum.
    pub xi: f64,
    /// The consistency index of ã_BW.
    pub consistency_index: f64,
    /// ξ* / CI.
    pub consistency_ratio: f64,
}

/// Guo & Zhao's fuzzy best-worst method; `c` holds linguistic levels 1..=5 (see
/// [`linguistic`]). Fuzzy ratios use the usual TFN division w̃_a / w̃_b = (l_a/u_b, m_a/m_b,
/// u_a/l_b), each component within ξ of the comparison's; Σ GMI(w̃_j) = 1; l ≤ m ≤ u.
pub fn fuzzy_bwm(c: &Comparisons) -> Result<FuzzyWeights, DecideError> {
    let n = c.best_to_others.len();
    let tfn = |x: f64| linguistic(x).ok_or_else(|| DecideError::Input(format!("fuzzy comparison {x} is not a level of the linguistic scale 1..5")));
    // Variables: l_j = 3j, m_j = 3j+1, u_j = 3j+2.
    let (l, m, u) = (|j: usize| 3 * j, |j: usize| 3 * j + 1, |j: usize| 3 * j + 2);
    let mut ratios = Vec::new();
    for j in 0..n {
        let a = tfn(c.best_to_others[j])?;
        let b = tfn(c.others_to_worst[j])?;
        let (bb, ww) = (c.best, c.worst);
        ratios.push(Ratio { num: l(bb), den: u(j), target: a.l });
        ratios.push(Ratio { num: m(bb), den: m(j), target: a.m });
        ratios.push(Ratio { num: u(bb), den: l(j), target: a.u });
        ratios.push(Ratio { num: l(j), den: u(ww), target: b.l });
        ratios.push(Ratio { num: m(j), den: m(ww), target: b.m });
        ratios.push(Ratio { num: u(j), den: l(ww), target: b.u });
    }
    // l_j ≤ m_j ≤ u_j.
    let mut extra = Vec::new();
    for j in 0..n {
        for (lo, hi) in [(l(j), m(j)), (m(j), u(j))] {
            let mut a = vec![0.0; 3 * n];
            a[lo] = 1.0;
            a[hi] = -1.0;
            extra.push((a, Rel::Le, 0.0));
        }
    }
    let mut norm = vec![0.0; 3 * n];
    for j in 0..n {
        norm[l(j)] = 1.0 / 6.0;
        norm[m(j)] = 4.0 / 6.0;
        norm[u(j)] = 1.0 / 6.0;
    }
    let (xi, x) = minmax_ratio(3 * n, &ratios, &extra, &norm);
    let fuzzy: Vec<Tfn> = (0..n).map(|j| Tfn { l: x[l(j)], m: x[m(j)], u: x[u(j)] }).collect();
    let weights = fuzzy.iter().map(|t| t.gmi()).collect();
    let ci = fuzzy_consistency_index(tfn(c.best_to_worst())?.u);
    Ok(FuzzyWeights { fuzzy, weights, xi, consistency_index: ci, consistency_ratio: xi / ci })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn comparisons(best: usize, worst: usize, bo: &[f64], ow: &[f64]) -> Comparisons {
        Comparisons { best, worst, best_to_others: bo.to_vec(), others_to_worst: ow.to_vec() }
    }

    #[test]
    fn consistency_index_matches_rezaeis_table() {
        let table = [0.00, 0.44, 1.00, 1.63, 2.30, 3.00, 3.73, 4.47, 5.23];
        for (k, want) in table.iter().enumerate() {
            assert!((consistency_index(k as f64 + 1.0) - want).abs() < 0.005, "a_BW = {}", k + 1);
        }
        let fuzzy = [3.00, 3.80, 5.29, 6.69, 8.04];
        for (k, want) in fuzzy.iter().enumerate() {
            let u = linguistic(k as f64 + 1.0).unwrap().u;
            assert!((fuzzy_consistency_index(u) - want).abs() < 0.005, "level {}", k + 1);
        }
    }

    /// Fully consistent comparisons (a_Bj a_jW = a_BW) give ξ = 0 and w_j ∝ 1 / a_Bj.
    #[test]
    fn consistent_comparisons_have_closed_form_weights() {
        let c = comparisons(1, 3, &[2.0, 1.0, 4.0, 8.0], &[4.0, 8.0, 2.0, 1.0]);
        let w = bwm(&c);
        let inv: Vec<f64> = c.best_to_others.iter().map(|a| 1.0 / a).collect();
        let s: f64 = inv.iter().sum();
        for (wj, ij) in w.weights.iter().zip(&inv) {
            assert!((wj - ij / s).abs() < 1e-9, "{:?}", w.weights);
        }
        assert!(w.xi_linear.abs() < 1e-9 && w.xi.abs() < 1e-9);
        assert!(w.consistency_ratio.abs() < 1e-9 && w.input_consistency_ratio == 0.0);
    }

    /// Comparisons shaped like Rezaei's car-selection illustration (quality, price, comfort,
    /// safety, style; best price, worst style), made inconsistent on purpose (comfort: 4 × 4 ≠
    /// 8). The linear weights order price > quality = safety > comfort > style and sum to 1;
    /// the non-linear ξ* solves (4 − ξ)² = 8 + ξ, i.e. ξ* = 1, exactly what comfort forces.
    #[test]
    fn inconsistent_car_comparisons() {
        let c = comparisons(1, 4, &[2.0, 1.0, 4.0, 2.0, 8.0], &[4.0, 8.0, 4.0, 4.0, 1.0]);
        let w = bwm(&c);
        let s: f64 = w.weights.iter().sum();
        assert!((s - 1.0).abs() < 1e-9);
        let v = &w.weights;
        assert!(v[1] > v[0] && (v[0] - v[3]).abs() < 1e-9 && v[0] > v[2] && v[2] > v[4], "{v:?}");
        assert!(w.xi_linear > 0.0, "{w:?}");
        assert!((w.xi - 1.0).abs() < 1e-6, "{w:?}");
        assert!((w.consistency_ratio - 1.0 / consistency_index(8.0)).abs() < 1e-6);
        // max_j |a_Bj a_jW − 8| / (64 − 8) = |16 − 8| / 56.
        assert!((w.input_consistency_ratio - 8.0 / 56.0).abs() < 1e-12);
    }

    #[test]
    fn fuzzy_weights_are_ordered_and_normalised() {
        // Best criterion 0, worst 2: 0 is fairly more important than 1, very than 2.
        let c = comparisons(0, 2, &[1.0, 3.0, 4.0], &[4.0, 2.0, 1.0]);
        let f = fuzzy_bwm(&c).unwrap();
        let s: f64 = f.weights.iter().sum();
        assert!((s - 1.0).abs() < 1e-6, "{f:?}");
        assert!(f.weights[0] > f.weights[1] && f.weights[1] > f.weights[2], "{f:?}");
        for t in &f.fuzzy {
            assert!(t.l <= t.m + 1e-12 && t.m <= t.u + 1e-12);
        }
        assert!(f.xi >= 0.0 && f.consistency_ratio >= 0.0);
    }
}
