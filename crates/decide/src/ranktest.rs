//! Rank tests: the one-sided Wilcoxon rank-sum (Mann–Whitney U) test of two independent samples
//! and the one-sided Wilcoxon signed-rank test of paired differences, with exact null
//! distributions for small samples without ties and the normal approximation (tie-corrected)
//! otherwise. The standard normal distribution function lives here too, and Holm's adjustment
//! of a family of p-values (a claim about every workload at once, not about one).

use std::cmp::Ordering;

/// Largest size of either sample for which the rank-sum test uses its exact distribution (when
/// there are no ties): the counts then still fit 128-bit integers (C(100, 50) < 2^97).
pub const RANKSUM_EXACT_MAX: usize = 50;

/// Largest number of differences for which the signed-rank test uses its exact distribution
/// (when there are no ties and no zeros).
pub const SIGNRANK_EXACT_MAX: usize = 50;

/// How a p-value was computed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    /// The exact null distribution (all rank arrangements equally likely).
    Exact,
    /// The normal approximation with tie-corrected variance.
    Normal,
}

impl Method {
    /// A short name for reports.
    pub fn name(self) -> &'static str {
        match self {
            Method::Exact => "exact",
            Method::Normal => "normal",
        }
    }
}

/// A one-sided test result.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TestResult {
    /// The statistic (U of the first sample, or W+ for the signed-rank test).
    pub statistic: f64,
    /// The one-sided p-value of the alternative asked for.
    pub p: f64,
    /// How `p` was computed.
    pub method: Method,
}

/// Which way the alternative hypothesis points.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Alternative {
    /// The first sample tends to be smaller (rank-sum), or the differences tend to be negative.
    Less,
    /// The first sample tends to be larger, or the differences tend to be positive.
    Greater,
}

/// The standard normal distribution function Φ(x), from the complementary error function
/// (W. J. Cody's rational Chebyshev approximation as given in Numerical Recipes' erfc, relative
/// error below 1.2e-7 everywhere, far smaller than any confidence we print).
pub fn normal_cdf(x: f64) -> f64 {
    0.5 * erfc(-x / std::f64::consts::SQRT_2)
}

fn erfc(x: f64) -> f64 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let r = t
        * (-z * z - 1.265_512_23
            + t * (1.000_023_68
                + t * (0.374_091_96
                    + t * (0.096_784_18
                        + t * (-0.186_288_06
                            + t * (0.278_868_07
                                + t * (-1.135_203_98 + t * (1.488_515_87 + t * (-0.822_152_23 + t * 0.170_872_77)))))))))
            .exp();
    if x >= 0.0 {
        r
    } else {
        2.0 - r
    }
}

/// Average ranks (1-based) of `v`, and the sizes of its tie groups (only groups of 2 or more).
pub fn ranks(v: &[f64]) -> (Vec<f64>, Vec<usize>) {
    let mut idx: Vec<usize> = (0..v.len()).collect();
    idx.sort_by(|&a, &b| v[a].partial_cmp(&v[b]).unwrap_or(Ordering::Equal));
    let mut r = vec![0.0; v.len()];
    let mut ties = Vec::new();
    let mut i = 0;
    while i < idx.len() {
        let mut j = i + 1;
        while j < idx.len() && v[idx[j]] == v[idx[i]] {
            j += 1;
        }
        let avg = (i + j + 1) as f64 / 2.0;
        for &k in &idx[i..j] {
            r[k] = avg;
        }
        if j - i > 1 {
            ties.push(j - i);
        }
        i = j;
    }
    (r, ties)
}

/// Number of arrangements of m X's and n Y's with U = k (pairs X > Y), k = 0..=mn: the
/// coefficients of the Gaussian binomial [m+n choose m]_q, built one factor at a time, exactly.
fn ranksum_counts(m: usize, n: usize) -> Vec<i128> {
    let top = m * n;
    let mut c = vec![0i128; top + 1];
    c[0] = 1;
    for i in 1..=m {
        // × (1 − q^(n+i)), then ÷ (1 − q^i): the quotient is again an integer polynomial.
        for k in (n + i..=top).rev() {
            c[k] -= c[k - n - i];
        }
        for k in i..=top {
            c[k] += c[k - i];
        }
    }
    c
}

/// Cumulative rank-sum distributions by sample sizes.
type CdfCache = std::collections::HashMap<(usize, usize), std::rc::Rc<Vec<f64>>>;

/// P(U ≤ k) for k = 0..=mn, computed once per pair of sample sizes and kept (the speedup search
/// asks for the same sizes hundreds of times).
fn ranksum_cdf(m: usize, n: usize) -> std::rc::Rc<Vec<f64>> {
    use std::rc::Rc;
    thread_local! {
        static CACHE: std::cell::RefCell<CdfCache> = Default::default();
    }
    CACHE.with(|cache| {
        cache
            .borrow_mut()
            .entry((m, n))
            .or_insert_with(|| {
                let c = ranksum_counts(m, n);
                let total: i128 = c.iter().sum();
                let mut acc = 0i128;
                Rc::new(
                    c.iter()
                        .map(|&x| {
                            acc += x;
                            acc as f64 / total as f64
                        })
                        .collect(),
                )
            })
            .clone()
    })
}

/// The one-sided rank-sum test of `x` against `y`. `Less`: x tends to be smaller than y.
/// U counts pairs with x > y (ties count one half). Exact when both samples have at most
/// [`RANKSUM_EXACT_MAX`] values and no value is tied; otherwise the normal approximation with
/// the tie-corrected variance and a continuity correction of ½ (the conventions of R's
/// `wilcox.test` and SciPy's `mannwhitneyu`).
///
/// Panics on an empty sample (callers check sizes first).
pub fn rank_sum(x: &[f64], y: &[f64], alt: Alternative) -> TestResult {
    let (m, n) = (x.len(), y.len());
    assert!(m > 0 && n > 0, "rank_sum needs two non-empty samples");
    let all: Vec<f64> = x.iter().chain(y).copied().collect();
    let (r, ties) = ranks(&all);
    let rx: f64 = r[..m].iter().sum();
    let u = rx - (m * (m + 1)) as f64 / 2.0;
    let mn = (m * n) as f64;
    if ties.is_empty() && m <= RANKSUM_EXACT_MAX && n <= RANKSUM_EXACT_MAX {
        let cdf = ranksum_cdf(m, n);
        let k = u.round() as usize;
        let p = match alt {
            Alternative::Less => cdf[k],
            // P(U ≥ k) = P(U ≤ mn − k) by symmetry.
            Alternative::Greater => cdf[m * n - k],
        };
        return TestResult { statistic: u, p: p.min(1.0), method: Method::Exact };
    }
    let big_n = (m + n) as f64;
    let tie_sum: f64 = ties.iter().map(|&t| (t * t * t - t) as f64).sum();
    let var = mn / 12.0 * ((big_n + 1.0) - tie_sum / (big_n * (big_n - 1.0)));
    let p = if var <= 0.0 {
        // Every value equal: no evidence either way.
        1.0
    } else {
        let sd = var.sqrt();
        let d = u - mn / 2.0;
        match alt {
            Alternative::Less => normal_cdf((d + 0.5) / sd),
            Alternative::Greater => 1.0 - normal_cdf((d - 0.5) / sd),
        }
    };
    TestResult { statistic: u, p: p.clamp(0.0, 1.0), method: Method::Normal }
}

/// The one-sided Wilcoxon signed-rank test of differences `d`: `Greater` means they tend to
/// be positive. Zeros are ranked with the others and their rank sum split evenly between W+
/// and W− (Pratt's ranks with the zero split, as HPT does; SciPy's `zero_method="zsplit"`).
/// Exact when there are at most [`SIGNRANK_EXACT_MAX`] differences, none zero and none tied;
/// otherwise the normal approximation with tie-corrected variance, without continuity
/// correction (SciPy's default). An empty `d` gives p = 1.
pub fn signed_rank(d: &[f64], alt: Alternative) -> TestResult {
    let n = d.len();
    if n == 0 {
        return TestResult { statistic: 0.0, p: 1.0, method: Method::Exact };
    }
    let abs: Vec<f64> = d.iter().map(|x| x.abs()).collect();
    let (r, ties) = ranks(&abs);
    let mut w_plus = 0.0;
    let mut zeros = 0;
    for (k, &x) in d.iter().enumerate() {
        if x > 0.0 {
            w_plus += r[k];
        } else if x == 0.0 {
            w_plus += r[k] / 2.0;
            zeros += 1;
        }
    }
    if zeros == 0 && ties.is_empty() && n <= SIGNRANK_EXACT_MAX {
        // Counts of subsets of {1..n} by their sum.
        let top = n * (n + 1) / 2;
        let mut c = vec![0u64; top + 1];
        c[0] = 1;
        for k in 1..=n {
            for s in (k..=top).rev() {
                c[s] += c[s - k];
            }
        }
        let total = (c.iter().map(|&x| x as f64)).sum::<f64>();
        let w = w_plus.round() as usize;
        let tail: f64 = match alt {
            Alternative::Greater => c[w..].iter().map(|&x| x as f64).sum(),
            Alternative::Less => c[..=w].iter().map(|&x| x as f64).sum(),
        };
        return TestResult { statistic: w_plus, p: (tail / total).min(1.0), method: Method::Exact };
    }
    let nf = n as f64;
    let mean = nf * (nf + 1.0) / 4.0;
    let tie_sum: f64 = ties.iter().map(|&t| (t * t * t - t) as f64).sum();
    let var = nf * (nf + 1.0) * (2.0 * nf + 1.0) / 24.0 - tie_sum / 48.0;
    let p = if var <= 0.0 {
        1.0
    } else {
        let z = (w_plus - mean) / var.sqrt();
        match alt {
            Alternative::Greater => 1.0 - normal_cdf(z),
            Alternative::Less => normal_cdf(z),
        }
    };
    TestResult { statistic: w_plus, p: p.clamp(0.0, 1.0), method: Method::Normal }
}

/// Holm's step-down adjustment of a family of p-values (Holm 1979; R's `p.adjust(p, "holm")`):
/// rejecting every hypothesis whose adjusted p-value is at most α keeps the chance of any
/// false rejection in the family at most α, whatever the dependence between the tests. A
/// claim such as "no workload is slower" is one claim about the whole family: tested one by
/// one at 95%, fourteen workloads that are all unchanged show at least one "slower" about
/// half the time. Returned in the order given; NaN counts as 1.
pub fn holm_adjusted(p: &[f64]) -> Vec<f64> {
    let m = p.len();
    let clean = |x: f64| if x.is_nan() { 1.0 } else { x.clamp(0.0, 1.0) };
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|&a, &b| clean(p[a]).total_cmp(&clean(p[b])));
    let mut adjusted = vec![1.0; m];
    let mut running = 0.0f64;
    for (k, &i) in order.iter().enumerate() {
        running = running.max(((m - k) as f64 * clean(p[i])).min(1.0));
        adjusted[i] = running;
    }
    adjusted
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holm_matches_r_p_adjust() {
        // R: p.adjust(c(0.01, 0.04, 0.03, 0.005), "holm") = 0.03 0.06 0.06 0.02.
        let a = holm_adjusted(&[0.01, 0.04, 0.03, 0.005]);
        for (x, want) in a.iter().zip([0.03, 0.06, 0.06, 0.02]) {
            assert!((x - want).abs() < 1e-12, "{a:?}");
        }
        // Capped at 1, monotone in the sorted order, one test left alone, NaN as 1.
        assert_eq!(holm_adjusted(&[0.6, 0.7]), vec![1.0, 1.0]);
        assert_eq!(holm_adjusted(&[0.02]), vec![0.02]);
        assert_eq!(holm_adjusted(&[f64::NAN, 0.01]), vec![1.0, 0.02]);
        assert!(holm_adjusted(&[]).is_empty());
    }

    #[test]
    fn normal_cdf_known_values() {
        assert!((normal_cdf(0.0) - 0.5).abs() < 1e-7);
        assert!((normal_cdf(1.959_963_985) - 0.975).abs() < 1e-6);
        assert!((normal_cdf(-1.644_853_627) - 0.05).abs() < 1e-6);
        assert!(normal_cdf(-40.0) >= 0.0 && normal_cdf(40.0) <= 1.0);
    }

    #[test]
    fn ranksum_counts_are_the_gaussian_binomial() {
        // [4 choose 2]_q = 1 + q + 2q^2 + q^3 + q^4.
        assert_eq!(ranksum_counts(2, 2), vec![1, 1, 2, 1, 1]);
        let c = ranksum_counts(50, 50);
        let total: i128 = c.iter().sum();
        assert_eq!(total, 100891344545564193334812497256i128, "C(100, 50)");
        assert!(c.iter().all(|&x| x > 0));
        // Symmetric.
        assert!((0..c.len()).all(|k| c[k] == c[c.len() - 1 - k]));
    }

    #[test]
    fn rank_sum_textbook_exact() {
        // Complete separation, 3 vs 3: P(U = 0) = 1 / C(6, 3) = 0.05.
        let r = rank_sum(&[1.0, 2.0, 3.0], &[4.0, 5.0, 6.0], Alternative::Less);
        assert_eq!(r.method, Method::Exact);
        assert_eq!(r.statistic, 0.0);
        assert!((r.p - 0.05).abs() < 1e-12);
        let g = rank_sum(&[1.0, 2.0, 3.0], &[4.0, 5.0, 6.0], Alternative::Greater);
        assert!((g.p - 1.0).abs() < 1e-12);
    }

    #[test]
    fn signed_rank_textbook_exact() {
        // All 5 positive: P(W+ = 15) = 1/32.
        let r = signed_rank(&[1.0, 2.0, 3.0, 4.0, 5.0], Alternative::Greater);
        assert_eq!(r.method, Method::Exact);
        assert!((r.p - 1.0 / 32.0).abs() < 1e-12);
        // Zeros force the approximation; all zeros carry no evidence.
        let z = signed_rank(&[0.0, 0.0, 0.0], Alternative::Greater);
        assert!((z.p - 0.5).abs() < 1e-6, "{z:?}");
    }

    /// The exact and approximate p-values agree for moderate samples (n = 30 per side), on
    /// shifted, interleaved and separated data.
    #[test]
    fn exact_and_normal_agree_for_moderate_n() {
        let mut state = 12345u64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 11) as f64 / (1u64 << 53) as f64
        };
        for shift in [0.0, 0.1, 0.3, 0.6] {
            for _ in 0..20 {
                let x: Vec<f64> = (0..30).map(|_| next()).collect();
                let y: Vec<f64> = (0..30).map(|_| next() + shift).collect();
                let exact = rank_sum(&x, &y, Alternative::Less);
                assert_eq!(exact.method, Method::Exact);
                // Force the approximation with a tie far away from both samples' ranks' effect.
                let var = (30.0 * 30.0) / 12.0 * 61.0;
                let z = (exact.statistic - 450.0 + 0.5) / f64::sqrt(var);
                let approx = normal_cdf(z);
                assert!((exact.p - approx).abs() < 0.01, "shift {shift}: exact {} vs normal {}", exact.p, approx);
            }
        }
    }
}
