//! A small dense linear-program solver: two-phase tableau simplex (Dantzig's rule, Bland's
//! after degenerate runs so that it cannot cycle). Sized for the best-worst models: tens of
//! variables and constraints. Minimises c·x subject to rows `a·x (≤ | = | ≥) b` and x ≥ 0.

/// A constraint's relation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rel {
    /// a·x ≤ b
    Le,
    /// a·x = b
    Eq,
    /// a·x ≥ b
    Ge,
}

/// A linear program over x ≥ 0.
#[derive(Clone, Debug, Default)]
pub struct Lp {
    /// Objective coefficients (minimised); its length is the number of variables.
    pub c: Vec<f64>,
    /// Constraints (coefficients, relation, right-hand side).
    pub rows: Vec<(Vec<f64>, Rel, f64)>,
}

/// How an LP ended.
#[derive(Clone, Debug, PartialEq)]
pub enum LpResult {
    /// An optimal vertex and its objective value.
    Optimal {
        /// The variables.
        x: Vec<f64>,
        /// c·x.
        value: f64,
    },
    /// No x satisfies the constraints.
    Infeasible,
    /// The objective decreases without bound.
    Unbounded,
}

const EPS: f64 = 1e-10;
/// Smallest pivot element accepted: smaller ones amplify rounding errors.
const PIVOT_MIN: f64 = 1e-9;

impl Lp {
    /// An LP of `n` variables minimising `c`.
    pub fn new(c: Vec<f64>) -> Lp {
        Lp { c, rows: Vec::new() }
    }

    /// Adds the constraint `a·x rel b`.
    pub fn add(&mut self, a: Vec<f64>, rel: Rel, b: f64) {
        debug_assert_eq!(a.len(), self.c.len());
        self.rows.push((a, rel, b));
    }

    /// Solves the program.
    pub fn solve(&self) -> LpResult {
        let n = self.c.len();
        let m = self.rows.len();
        // Rows with b ≥ 0; columns: x, then one slack/surplus per inequality, then artificials.
        let mut rows: Vec<(Vec<f64>, Rel, f64)> = self
            .rows
            .iter()
            .map(|(a, rel, b)| {
                if *b < 0.0 {
                    let flipped = match rel {
                        Rel::Le => Rel::Ge,
                        Rel::Ge => Rel::Le,
                        Rel::Eq => Rel::Eq,
                    };
                    (a.iter().map(|v| -v).collect(), flipped, -b)
                } else {
                    (a.clone(), *rel, *b)
                }
            })
            .collect();
        let n_slack = rows.iter().filter(|r| r.1 != Rel::Eq).count();
        let n_art = rows.iter().filter(|r| r.1 != Rel::Le).count();
        let width = n + n_slack + n_art;
        let rhs = width;
        let mut t = vec![vec![0.0; width + 1]; m];
        let mut basis = vec![0usize; m];
        let (mut s, mut a) = (n, n + n_slack);
        for (i, (coef, rel, b)) in rows.iter_mut().enumerate() {
            t[i][..n].copy_from_slice(coef);
            t[i][rhs] = *b;
            match rel {
                Rel::Le => {
                    t[i][s] = 1.0;
                    basis[i] = s;
                    s += 1;
                }
                Rel::Ge => {
                    t[i][s] = -1.0;
                    s += 1;
                    t[i][a] = 1.0;
                    basis[i] = a;
                    a += 1;
                }
                Rel::Eq => {
                    t[i][a] = 1.0;
                    basis[i] = a;
                    a += 1;
                }
            }
        }
        let is_art = |j: usize| j >= n + n_slack;
        // Phase 1: minimise the sum of the artificials.
        let mut cost1 = vec![0.0; width];
        for c in cost1.iter_mut().skip(n + n_slack) {
            *c = 1.0;
        }
        let all = vec![true; width];
        if n_art > 0 {
            if simplex(&mut t, &mut basis, &cost1, &all).is_err() {
                return LpResult::Infeasible;
            }
            let infeas: f64 = (0..m).filter(|&i| is_art(basis[i])).map(|i| t[i][rhs]).sum();
            let scale = 1.0 + rows.iter().map(|r| r.2.abs()).fold(0.0, f64::max);
            if infeas > 1e-9 * scale {
                return LpResult::Infeasible;
            }
            // Drive the remaining (zero) artificials out of the basis where a real column can
            // replace them; rows where none can are redundant and stay as they are.
            for i in 0..m {
                if is_art(basis[i]) {
                    if let Some(j) = (0..n + n_slack).find(|&j| t[i][j].abs() > 1e-9) {
                        pivot(&mut t, &mut basis, i, j);
                    }
                }
            }
        }
        // Phase 2 over the real columns.
        let mut cost2 = vec![0.0; width];
        cost2[..n].copy_from_slice(&self.c);
        let allowed: Vec<bool> = (0..width).map(|j| !is_art(j)).collect();
        if simplex(&mut t, &mut basis, &cost2, &allowed).is_err() {
            return LpResult::Unbounded;
        }
        let mut x = vec![0.0; n];
        for i in 0..m {
            if basis[i] < n {
                x[basis[i]] = t[i][rhs];
            }
        }
        let value = x.iter().zip(&self.c).map(|(a, b)| a * b).sum();
        LpResult::Optimal { x, value }
    }
}

fn pivot(t: &mut [Vec<f64>], basis: &mut [usize], r: usize, col: usize) {
    let p = t[r][col];
    for v in t[r].iter_mut() {
        *v /= p;
    }
    let pivot_row = t[r].clone();
    for (i, row) in t.iter_mut().enumerate() {
        if i != r {
            let f = row[col];
            if f != 0.0 {
                for (v, pv) in row.iter_mut().zip(&pivot_row) {
                    *v -= f * pv;
                }
            }
        }
    }
    basis[r] = col;
}

/// Primal simplex on the tableau from a feasible basis; Err on unboundedness. Dantzig's rule
/// (most negative reduced cost) for speed and stability, switching to Bland's rule (which
/// cannot cycle) after a run of degenerate pivots; the ratio test breaks ties by the largest
/// pivot element.
fn simplex(t: &mut [Vec<f64>], basis: &mut [usize], cost: &[f64], allowed: &[bool]) -> Result<(), ()> {
    let width = cost.len();
    let rhs = width;
    let mut degenerate = 0;
    for _ in 0..50_000 {
        let bland = degenerate > 50;
        let mut entering: Option<(usize, f64)> = None;
        for j in 0..width {
            if !allowed[j] || basis.contains(&j) {
                continue;
            }
            let z: f64 = cost[j] - basis.iter().enumerate().map(|(i, &b)| cost[b] * t[i][j]).sum::<f64>();
            if z < -EPS && entering.is_none_or(|(_, best)| z < best) {
                entering = Some((j, z));
                if bland {
                    break;
                }
            }
        }
        let Some((j, _)) = entering else { return Ok(()) };
        let mut leave: Option<(usize, f64)> = None;
        for i in 0..t.len() {
            if t[i][j] > PIVOT_MIN {
                let ratio = t[i][rhs] / t[i][j];
                match leave {
                    None => leave = Some((i, ratio)),
                    Some((k, best)) => {
                        let tie = ratio <= best + EPS;
                        let prefer = if bland { basis[i] < basis[k] } else { t[i][j] > t[k][j] };
                        if ratio < best - EPS || (tie && prefer) {
                            leave = Some((i, ratio));
                        }
                    }
                }
            }
        }
        let Some((i, ratio)) = leave else { return Err(()) };
        degenerate = if ratio.abs() <= EPS { degenerate + 1 } else { 0 };
        pivot(t, basis, i, j);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn textbook_lp() {
        // max 3x + 5y s.t. x ≤ 4, 2y ≤ 12, 3x + 2y ≤ 18 → (2, 6), 36.
        let mut lp = Lp::new(vec![-3.0, -5.0]);
        lp.add(vec![1.0, 0.0], Rel::Le, 4.0);
        lp.add(vec![0.0, 2.0], Rel::Le, 12.0);
        lp.add(vec![3.0, 2.0], Rel::Le, 18.0);
        match lp.solve() {
            LpResult::Optimal { x, value } => {
                assert!((x[0] - 2.0).abs() < 1e-9 && (x[1] - 6.0).abs() < 1e-9);
                assert!((value + 36.0).abs() < 1e-9);
            }
            r => panic!("{r:?}"),
        }
    }

    #[test]
    fn equalities_infeasible_and_unbounded() {
        let mut lp = Lp::new(vec![1.0, 1.0]);
        lp.add(vec![1.0, 1.0], Rel::Eq, 1.0);
        lp.add(vec![1.0, -1.0], Rel::Ge, 0.5);
        match lp.solve() {
            LpResult::Optimal { x, value } => {
                assert!((value - 1.0).abs() < 1e-9);
                assert!(x[0] - x[1] >= 0.5 - 1e-9);
            }
            r => panic!("{r:?}"),
        }
        let mut bad = Lp::new(vec![0.0]);
        bad.add(vec![1.0], Rel::Ge, 2.0);
        bad.add(vec![1.0], Rel::Le, 1.0);
        assert_eq!(bad.solve(), LpResult::Infeasible);
        let mut open = Lp::new(vec![-1.0]);
        open.add(vec![1.0], Rel::Ge, 1.0);
        assert_eq!(open.solve(), LpResult::Unbounded);
    }
}
