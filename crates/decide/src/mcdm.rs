//! Decision matrices (alternatives × criteria, each criterion lower- or higher-better), read
//! from a CSV or built from compare results, and the rankings over them: weighted scores (the
//! value V_j = Σ w_i f_i(j) of the thesis' chapter 5, with f the min–max normalised criterion),
//! TOPSIS (vector normalisation, Hwang & Yoon) and the Pareto front.

use crate::hpt::Analysis;
use crate::results::{Better, Results};
use crate::DecideError;

/// Alternatives × criteria.
#[derive(Clone, Debug, PartialEq)]
pub struct Matrix {
    /// Alternative names (rows).
    pub alternatives: Vec<String>,
    /// Criterion names (columns).
    pub criteria: Vec<String>,
    /// Direction of each criterion.
    pub better: Vec<Better>,
    /// values[i][j]: alternative i on criterion j.
    pub values: Vec<Vec<f64>>,
}

impl Matrix {
    /// Index of the criterion `name`, or an error listing the known ones.
    pub fn criterion(&self, name: &str) -> Result<usize, DecideError> {
        self.criteria.iter().position(|c| c == name).ok_or_else(|| {
            DecideError::Input(format!("unknown criterion '{name}'; the criteria are: {}", self.criteria.join(", ")))
        })
    }

    /// Reads a CSV: a header `name,crit1,crit2,…` then one row per alternative. A criterion is
    /// lower-better unless its header ends in `:max` (or says `:min` explicitly); `#` lines
    /// and blank lines are skipped.
    pub fn from_csv(path: &str, text: &str) -> Result<Matrix, DecideError> {
        let err = |line: usize, m: String| DecideError::Input(format!("{path}:{line}: {m}"));
        let mut lines = text.lines().enumerate().map(|(k, l)| (k + 1, l.trim())).filter(|(_, l)| !l.is_empty() && !l.starts_with('#'));
        let (hl, header) = lines.next().ok_or_else(|| DecideError::Input(format!("{path}: empty; expected a header 'name,criterion,…' and one row per alternative")))?;
        let cols: Vec<&str> = header.split(',').map(str::trim).collect();
        if cols.len() < 3 {
            return Err(err(hl, "the header needs an alternative-name column and at least two criteria".into()));
        }
        let mut criteria = Vec::new();
        let mut better = Vec::new();
        for c in &cols[1..] {
            let (name, dir) = match c.rsplit_once(':') {
                Some((n, "max")) => (n, Better::Higher),
                Some((n, "min")) => (n, Better::Lower),
                Some((_, other)) => return Err(err(hl, format!("criterion '{c}': direction '{other}' must be 'min' or 'max'"))),
                None => (*c, Better::Lower),
            };
            if name.is_empty() || criteria.iter().any(|x: &String| x == name) {
                return Err(err(hl, format!("criterion name '{name}' is empty or repeated")));
            }
            criteria.push(name.to_string());
            better.push(dir);
        }
        let mut alternatives = Vec::new();
        let mut values = Vec::new();
        for (ln, l) in lines {
            let f: Vec<&str> = l.split(',').map(str::trim).collect();
            if f.len() != cols.len() {
                return Err(err(ln, format!("{} fields, the header has {}", f.len(), cols.len())));
            }
            let mut row = Vec::new();
            for (j, v) in f[1..].iter().enumerate() {
                let x: f64 = v.parse().ok().filter(|x: &f64| x.is_finite()).ok_or_else(|| err(ln, format!("criterion '{}': '{v}' is not a number", criteria[j])))?;
                row.push(x);
            }
            alternatives.push(f[0].to_string());
            values.push(row);
        }
        if alternatives.is_empty() {
            return Err(DecideError::Input(format!("{path}: no alternatives (rows after the header)")));
        }
        Ok(Matrix { alternatives, criteria, better, values })
    }

    /// The matrix of compare results: configurations × metrics, each cell the geometric mean
    /// over the metric's analysed workloads of the median speedup against the reference
    /// (higher is better; the reference is 1). Metrics with no usable workload are left out.
    pub fn from_compare(results: &Results, analysis: &Analysis) -> Result<Matrix, DecideError> {
        let mut criteria = Vec::new();
        let mut columns = Vec::new();
        for m in &results.metrics {
            let col: Option<Vec<f64>> = results.configurations.iter().map(|c| analysis.summary_speedup(results, &c.name, &m.name)).collect();
            if let Some(col) = col {
                criteria.push(m.name.clone());
                columns.push(col);
            }
        }
        if criteria.len() < 2 {
            return Err(DecideError::Input(format!(
                "ranking needs at least two criteria; the results have {} metric(s) with usable workloads ({})",
                criteria.len(),
                criteria.join(", ")
            )));
        }
        let alternatives: Vec<String> = results.configurations.iter().map(|c| c.name.clone()).collect();
        let values = (0..alternatives.len()).map(|i| columns.iter().map(|c| c[i]).collect()).collect();
        Ok(Matrix { alternatives, better: vec![Better::Higher; criteria.len()], criteria, values })
    }

    /// Criterion j of every alternative, min–max normalised so that 1 is the best value and 0
    /// the worst (all 1 when every alternative has the same value).
    pub fn normalised(&self, j: usize) -> Vec<f64> {
        let col: Vec<f64> = self.values.iter().map(|r| r[j]).collect();
        let lo = col.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = col.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        if hi - lo <= 0.0 {
            return vec![1.0; col.len()];
        }
        col.iter()
            .map(|v| match self.better[j] {
                Better::Higher => (v - lo) / (hi - lo),
                Better::Lower => (hi - v) / (hi - lo),
            })
            .collect()
    }
}

/// Weighted scores V_i = Σ_j w_j f_j(i) over min–max normalised criteria (higher is better).
pub fn weighted_scores(m: &Matrix, w: &[f64]) -> Vec<f64> {
    let cols: Vec<Vec<f64>> = (0..m.criteria.len()).map(|j| m.normalised(j)).collect();
    (0..m.alternatives.len()).map(|i| (0..cols.len()).map(|j| w[j] * cols[j][i]).sum()).collect()
}

/// TOPSIS closeness coefficients (higher is better): vector-normalised, weighted values; the
/// distance D+ to the ideal and D− to the anti-ideal; C = D− / (D+ + D−). An all-zero column
/// contributes nothing; when D+ + D− = 0 (all alternatives equal) every C is ½.
pub fn topsis(m: &Matrix, w: &[f64]) -> Vec<f64> {
    let (rows, cols) = (m.alternatives.len(), m.criteria.len());
    let mut v = vec![vec![0.0; cols]; rows];
    for j in 0..cols {
        let norm = m.values.iter().map(|r| r[j] * r[j]).sum::<f64>().sqrt();
        for (row, vals) in v.iter_mut().zip(&m.values) {
            row[j] = if norm > 0.0 { w[j] * vals[j] / norm } else { 0.0 };
        }
    }
    let ideal: Vec<(f64, f64)> = (0..cols)
        .map(|j| {
            let lo = v.iter().map(|r| r[j]).fold(f64::INFINITY, f64::min);
            let hi = v.iter().map(|r| r[j]).fold(f64::NEG_INFINITY, f64::max);
            match m.better[j] {
                Better::Higher => (hi, lo),
                Better::Lower => (lo, hi),
            }
        })
        .collect();
    v.iter()
        .map(|r| {
            let dp = (0..cols).map(|j| (r[j] - ideal[j].0).powi(2)).sum::<f64>().sqrt();
            let dn = (0..cols).map(|j| (r[j] - ideal[j].1).powi(2)).sum::<f64>().sqrt();
            if dp + dn > 0.0 {
                dn / (dp + dn)
            } else {
                0.5
            }
        })
        .collect()
}

/// True for each alternative no other dominates (at least as good on every criterion and
/// strictly better on one).
pub fn pareto_front(m: &Matrix) -> Vec<bool> {
    let better_or_eq = |a: f64, b: f64, d: Better| match d {
        Better::Lower => a <= b,
        Better::Higher => a >= b,
    };
    let n = m.alternatives.len();
    (0..n)
        .map(|i| {
            !(0..n).any(|k| {
                k != i
                    && (0..m.criteria.len()).all(|j| better_or_eq(m.values[k][j], m.values[i][j], m.better[j]))
                    && (0..m.criteria.len()).any(|j| m.values[k][j] != m.values[i][j])
            })
        })
        .collect()
}

/// Indices of `scores` from best (highest) to worst; ties keep input order.
pub fn order(scores: &[f64]) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..scores.len()).collect();
    idx.sort_by(|&a, &b| scores[b].partial_cmp(&scores[a]).unwrap_or(std::cmp::Ordering::Equal));
    idx
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fighter-aircraft matrix of Hwang & Yoon's TOPSIS illustration as it is commonly
    /// reproduced (4 alternatives; maximum speed, ferry range, maximum payload, purchasing
    /// cost, reliability, manoeuvrability; cost is the one lower-better criterion; weights
    /// 0.2, 0.1, 0.1, 0.1, 0.2, 0.3). Its published closeness values were not at hand; the
    /// values themselves are checked against pymcdm in tests/oracle.rs.
    fn aircraft() -> Matrix {
        Matrix::from_csv(
            "aircraft.csv",
            "name,speed:max,range:max,payload:max,cost:min,reliability:max,manoeuvrability:max\n\
             A1,2.0,1500,20000,5.5,5,9\nA2,2.5,2700,18000,6.5,3,5\nA3,1.8,2000,21000,4.5,7,7\nA4,2.2,1800,20000,5.0,5,5\n",
        )
        .unwrap()
    }

    #[test]
    fn topsis_invariant_under_scaling_a_criterion() {
        let m = aircraft();
        let w = [0.2, 0.1, 0.1, 0.1, 0.2, 0.3];
        let base = topsis(&m, &w);
        for j in 0..6 {
            let mut s = m.clone();
            for r in s.values.iter_mut() {
                r[j] *= 1000.0;
            }
            let scaled = topsis(&s, &w);
            for i in 0..4 {
                assert!((base[i] - scaled[i]).abs() < 1e-12, "criterion {j}");
            }
        }
        assert_eq!(order(&base).len(), 4);
    }

    #[test]
    fn topsis_of_a_dominating_alternative_is_one() {
        let m = Matrix::from_csv("d.csv", "name,a,b:max\nx,1,10\ny,2,5\nz,3,1\n").unwrap();
        let c = topsis(&m, &[0.5, 0.5]);
        assert!((c[0] - 1.0).abs() < 1e-12 && c[2].abs() < 1e-12);
        assert_eq!(pareto_front(&m), vec![true, false, false]);
    }

    #[test]
    fn pareto_front_keeps_trade_offs() {
        let m = Matrix::from_csv("p.csv", "name,time,rss\na,1,9\nb,2,2\nc,9,1\nd,3,3\ne,2,2\n").unwrap();
        assert_eq!(pareto_front(&m), vec![true, true, true, false, true]);
    }

    #[test]
    fn csv_errors_name_file_and_line() {
        let e = Matrix::from_csv("m.csv", "name,a,b\nx,1,zz\n").unwrap_err();
        assert!(e.to_string().contains("m.csv:2") && e.to_string().contains("'zz'"), "{e}");
        let e = Matrix::from_csv("m.csv", "name,a,b:up\n").unwrap_err();
        assert!(e.to_string().contains("'up'"), "{e}");
        let m = aircraft();
        let e = m.criterion("speeed").unwrap_err();
        assert!(e.to_string().contains("unknown criterion 'speeed'"), "{e}");
    }
}
