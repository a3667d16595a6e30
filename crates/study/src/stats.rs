//! Statistics of the study: mean and standard deviation of repeated runs, and Spearman's rank
//! correlation with its two-sided p-value.
//!
//! ρ is Pearson's correlation of the ranks, ties getting their average rank (the points of one
//! allocator share its fragmentation value, so ties are the rule). The p-value tests the null
//! hypothesis of no monotonic association, two-sided:
//! - for n ≤ 9 points exactly, by enumerating all n! pairings of the y ranks with the x ranks
//!   and counting those with |ρ| at least the observed one;
//! - for larger n by the t-approximation t = ρ √((n − 2) / (1 − ρ²)) with n − 2 degrees of
//!   freedom (the usual test; accurate from about n = 10), through the regularised incomplete
//!   beta function.

/// Mean and sample standard deviation (n − 1 in the denominator; 0 for fewer than 2 values).
pub fn mean_sd(v: &[f64]) -> (f64, f64) {
    if v.is_empty() {
        return (0.0, 0.0);
    }
    let n = v.len() as f64;
    let m = v.iter().sum::<f64>() / n;
    if v.len() < 2 {
        return (m, 0.0);
    }
    let var = v.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (n - 1.0);
    (m, var.sqrt())
}

/// Ranks 1..=n with ties sharing their average rank.
pub fn ranks(v: &[f64]) -> Vec<f64> {
    let mut idx: Vec<usize> = (0..v.len()).collect();
    idx.sort_by(|&a, &b| v[a].total_cmp(&v[b]));
    let mut r = vec![0.0; v.len()];
    let mut i = 0;
    while i < idx.len() {
        let mut j = i;
        while j + 1 < idx.len() && v[idx[j + 1]] == v[idx[i]] {
            j += 1;
        }
        let avg = (i + j) as f64 / 2.0 + 1.0;
        for &k in &idx[i..=j] {
            r[k] = avg;
        }
        i = j + 1;
    }
    r
}

fn pearson(x: &[f64], y: &[f64]) -> Option<f64> {
    let (mx, _) = mean_sd(x);
    let (my, _) = mean_sd(y);
    let (mut sxy, mut sxx, mut syy) = (0.0, 0.0, 0.0);
    for (a, b) in x.iter().zip(y) {
        sxy += (a - mx) * (b - my);
        sxx += (a - mx) * (a - mx);
        syy += (b - my) * (b - my);
    }
    (sxx > 0.0 && syy > 0.0).then(|| (sxy / (sxx * syy).sqrt()).clamp(-1.0, 1.0))
}

/// How the p-value was computed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PTest {
    /// Exact permutation distribution (n ≤ 9).
    Exact,
    /// Student's t approximation with n − 2 degrees of freedom.
    TApprox,
}

impl PTest {
    /// A short name for reports.
    pub fn name(self) -> &'static str {
        match self {
            PTest::Exact => "exact permutation",
            PTest::TApprox => "t-approximation, n-2 df",
        }
    }
}

/// Spearman's ρ of paired samples with its two-sided p-value.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Spearman {
    /// The coefficient, in [−1, 1].
    pub rho: f64,
    /// Two-sided p-value of "no monotonic association".
    pub p: f64,
    /// Pairs.
    pub n: usize,
    /// How `p` was computed.
    pub test: PTest,
}

/// Spearman's ρ of `x` and `y` (same length); `None` with fewer than 3 pairs or when either
/// side is constant (ρ is undefined).
pub fn spearman(x: &[f64], y: &[f64]) -> Option<Spearman> {
    let n = x.len().min(y.len());
    if n < 3 {
        return None;
    }
    let (rx, ry) = (ranks(&x[..n]), ranks(&y[..n]));
    let rho = pearson(&rx, &ry)?;
    if n <= 9 {
        let mut perm: Vec<f64> = ry.clone();
        let (mut hits, mut total) = (0u64, 0u64);
        permute(&mut perm, 0, &mut |p| {
            total += 1;
            if pearson(&rx, p).unwrap_or(0.0).abs() >= rho.abs() - 1e-12 {
                hits += 1;
            }
        });
        return Some(Spearman { rho, p: hits as f64 / total as f64, n, test: PTest::Exact });
    }
    let df = (n - 2) as f64;
    let p = if rho.abs() >= 1.0 {
        0.0
    } else {
        let t2 = rho * rho * df / (1.0 - rho * rho);
        incomplete_beta(df / 2.0, 0.5, df / (df + t2))
    };
    Some(Spearman { rho, p, n, test: PTest::TApprox })
}

/// Calls `f` with every permutation of `v[k..]` (Heap's algorithm would do too; this recursive
/// swap visits n! orders, which is fine for n ≤ 9).
fn permute(v: &mut [f64], k: usize, f: &mut dyn FnMut(&[f64])) {
    if k == v.len() {
        f(v);
        return;
    }
    for i in k..v.len() {
        v.swap(k, i);
        permute(v, k + 1, f);
        v.swap(k, i);
    }
}

/// ln Γ(x) for x > 0 (Lanczos, g = 7, n = 9; ~15 significant digits).
fn ln_gamma(x: f64) -> f64 {
    const C: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        return (std::f64::consts::PI / (std::f64::consts::PI * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut a = C[0];
    let t = x + 7.5;
    for (i, &c) in C.iter().enumerate().skip(1) {
        a += c / (x + i as f64);
    }
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + a.ln()
}

/// The regularised incomplete beta function I_x(a, b), by its continued fraction (modified
/// Lentz), using the symmetry I_x(a, b) = 1 − I_{1−x}(b, a) where that converges faster.
pub fn incomplete_beta(a: f64, b: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    let front = (ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b) + a * x.ln() + b * (1.0 - x).ln()).exp();
    if x > (a + 1.0) / (a + b + 2.0) {
        return 1.0 - incomplete_beta(b, a, 1.0 - x);
    }
    let tiny = 1e-300;
    let (mut c, mut d) = (1.0, 1.0 - (a + b) * x / (a + 1.0));
    if d.abs() < tiny {
        d = tiny;
    }
    d = 1.0 / d;
    let mut h = d;
    for m in 1..300 {
        let m = m as f64;
        let num = m * (b - m) * x / ((a + 2.0 * m - 1.0) * (a + 2.0 * m));
        for (k, num) in [num, -(a + m) * (a + b + m) * x / ((a + 2.0 * m) * (a + 2.0 * m + 1.0))].into_iter().enumerate() {
            d = 1.0 + num * d;
            if d.abs() < tiny {
                d = tiny;
            }
            c = 1.0 + num / c;
            if c.abs() < tiny {
                c = tiny;
            }
            d = 1.0 / d;
            h *= d * c;
            if k == 1 && (d * c - 1.0).abs() < 1e-15 {
                return (front * h / a).clamp(0.0, 1.0);
            }
        }
    }
    (front * h / a).clamp(0.0, 1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mean_and_sd() {
        let (m, s) = mean_sd(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]);
        assert_eq!(m, 5.0);
        assert!((s - 2.138_089_935).abs() < 1e-6);
        assert_eq!(mean_sd(&[3.0]), (3.0, 0.0));
    }

    #[test]
    fn ranks_share_ties() {
        assert_eq!(ranks(&[10.0, 20.0, 10.0, 30.0]), vec![1.5, 3.0, 1.5, 4.0]);
    }

    /// Textbook values: Student's t two-sided p for t = 2.228, 10 df is 0.050; for t = 1.0,
    /// 30 df it is 0.3253.
    #[test]
    fn t_distribution_tails() {
        let p = |t: f64, df: f64| incomplete_beta(df / 2.0, 0.5, df / (df + t * t));
        assert!((p(2.228, 10.0) - 0.0500).abs() < 2e-4, "{}", p(2.228, 10.0));
        assert!((p(1.0, 30.0) - 0.3253).abs() < 2e-4, "{}", p(1.0, 30.0));
        assert!((ln_gamma(5.0) - 24f64.ln()).abs() < 1e-12);
    }

    #[test]
    fn spearman_values() {
        // A perfectly monotonic but non-linear relation.
        let x: Vec<f64> = (1..=12).map(|i| i as f64).collect();
        let y: Vec<f64> = x.iter().map(|v| v * v * v).collect();
        let s = spearman(&x, &y).unwrap();
        assert_eq!((s.rho, s.p, s.test), (1.0, 0.0, PTest::TApprox));
        // Exact for small n: n = 5, perfect order: only 2 of 120 orders reach |rho| = 1.
        let s = spearman(&[1.0, 2.0, 3.0, 4.0, 5.0], &[5.0, 6.0, 7.0, 8.0, 10.0]).unwrap();
        assert_eq!(s.test, PTest::Exact);
        assert!((s.p - 2.0 / 120.0).abs() < 1e-12);
        // Known example (n = 10): rho = 1 - 6 * sum d^2 / (n (n^2 - 1)) with sum d^2 = 52.
        let a = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0];
        let b = [2.0, 1.0, 4.0, 3.0, 7.0, 5.0, 6.0, 10.0, 8.0, 9.0];
        let s = spearman(&a, &b).unwrap();
        let d2: f64 = a.iter().zip(&b).map(|(x, y)| (x - y) * (x - y)).sum();
        assert!((s.rho - (1.0 - 6.0 * d2 / 990.0)).abs() < 1e-12);
        assert!(s.p < 0.001, "{}", s.p);
        assert!(spearman(&[1.0, 1.0, 1.0], &[1.0, 2.0, 3.0]).is_none());
        // Ties in x (one value per allocator, several runs each) are handled.
        let x = [0.1, 0.1, 0.1, 0.2, 0.2, 0.2, 0.3, 0.3, 0.3, 0.4, 0.4, 0.4];
        let y = [5.0, 5.1, 4.9, 6.0, 6.2, 5.9, 7.0, 6.8, 7.1, 8.0, 8.1, 7.9];
        let s = spearman(&x, &y).unwrap();
        assert!(s.rho > 0.9 && s.p < 1e-4, "{s:?}");
    }
}
