//! Statistics of the study: the summary of an allocator's repeated runs (median, range, mean,
//! standard deviation) and Spearman's rank correlation with its exact two-sided p-value.
//!
//! ρ is Pearson's correlation of the ranks, ties getting their average rank. The p-value tests
//! the null hypothesis that every pairing of the y values with the x values is equally likely
//! (no monotonic association), two-sided:
//! - for n ≤ [`EXACT_MAX_N`] points exactly, by enumerating all n! pairings of the y ranks with
//!   the x ranks and counting those with |ρ| at least the observed one. Ranks are doubled so that
//!   average ranks are integers and the comparison is exact integer arithmetic; with ties this
//!   is the exact conditional (permutation) distribution;
//! - for larger n by the t-approximation t = ρ √((n − 2) / (1 − ρ²)) with n − 2 degrees of
//!   freedom (the usual test; accurate from about n = 10), through the regularised incomplete
//!   beta function. 10! = 3.6 million orders is where enumeration stops being instant.
//!
//! With few points the exact p cannot be small: the most extreme order has probability 2/n!
//! (n = 4: 1/12 ≈ 0.083, so p < 0.05 is impossible). [`Spearman::p_min`] says so for each test.

/// Largest number of points whose p-value is computed by full enumeration.
pub const EXACT_MAX_N: usize = 10;

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

/// The median (the mean of the two middle values for an even count; 0 for none).
pub fn median(v: &[f64]) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let h = s.len() / 2;
    if s.len() % 2 == 1 {
        s[h]
    } else {
        (s[h - 1] + s[h]) / 2.0
    }
}

/// The `q`-quantile of `v` (`q` in [0, 1]) by linear interpolation between the two nearest
/// ranks: numpy's default method, R's type 7 (0 for none). Quartiles are q = 0.25 and 0.75.
pub fn quantile(v: &[f64], q: f64) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let h = (s.len() - 1) as f64 * q.clamp(0.0, 1.0);
    let (lo, frac) = (h.floor() as usize, h - h.floor());
    match s.get(lo + 1) {
        Some(hi) => s[lo] + frac * (hi - s[lo]),
        None => s[lo],
    }
}

/// The summary of repeated measurements of one quantity (an allocator's peak RSS over its runs):
/// the median is the value a correlation uses, the rest is the run-to-run spread.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Spread {
    /// Measurements.
    pub n: usize,
    /// Their median.
    pub median: f64,
    /// The smallest.
    pub min: f64,
    /// The largest.
    pub max: f64,
    /// Their mean.
    pub mean: f64,
    /// Sample standard deviation (0 for fewer than 2).
    pub sd: f64,
}

impl Spread {
    /// Summarises `v` (all zero when empty).
    pub fn of(v: &[f64]) -> Spread {
        if v.is_empty() {
            return Spread::default();
        }
        let (mean, sd) = mean_sd(v);
        let min = v.iter().copied().fold(f64::INFINITY, f64::min);
        let max = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        Spread { n: v.len(), median: median(v), min, max, mean, sd }
    }

    /// Whether the ranges [min, max] of `self` and `o` share a value: the order of the two is
    /// then not the same in every run.
    pub fn overlaps(&self, o: &Spread) -> bool {
        self.min <= o.max && o.min <= self.max
    }
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
    /// Exact permutation distribution (n ≤ [`EXACT_MAX_N`]).
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
    /// The smallest two-sided p any pairing of these values could give: what a perfect order
    /// would get. Exact tests count it from the enumeration (ties included); the approximation
    /// gives 2/n!, the value without ties. A p-value can never be below it, so with
    /// `p_min` > 0.05 no result is significant at 0.05.
    pub p_min: f64,
    /// Points (pairs).
    pub n: usize,
    /// How `p` was computed.
    pub test: PTest,
}

/// Ranks doubled (integers even with average ranks) and their centred sum of squares.
fn doubled_ranks(v: &[f64]) -> (Vec<i64>, i64) {
    let r: Vec<i64> = ranks(v).iter().map(|&x| (2.0 * x).round() as i64).collect();
    let n = r.len() as i64;
    // Doubled ranks sum to n (n + 1), so the centred sum of squares is Σ r² − n (n + 1)².
    let css = r.iter().map(|x| x * x).sum::<i64>() - n * (n + 1) * (n + 1);
    (r, css)
}

/// Calls `f` with the centred cross product C = Σ a_i b_π(i) − n (n + 1)² of every permutation
/// π of `b` (n! calls; Heap's algorithm, iterative). ρ of a pairing is C / √(Caa Cbb).
fn each_pairing(a: &[i64], b: &[i64], mut f: impl FnMut(i64)) {
    let n = b.len();
    let centre = n as i64 * (n as i64 + 1) * (n as i64 + 1);
    let mut b = b.to_vec();
    let dot = |b: &[i64]| a.iter().zip(b).map(|(x, y)| x * y).sum::<i64>() - centre;
    f(dot(&b));
    let mut c = vec![0usize; n];
    let mut i = 1;
    while i < n {
        if c[i] < i {
            let j = if i % 2 == 0 { 0 } else { c[i] };
            b.swap(j, i);
            f(dot(&b));
            c[i] += 1;
            i = 1;
        } else {
            c[i] = 0;
            i += 1;
        }
    }
}

/// n! as a float.
fn factorial(n: usize) -> f64 {
    (1..=n).map(|k| k as f64).product()
}

/// Spearman's ρ of `x` and `y` (same length); `None` with fewer than 3 pairs or when either
/// side is constant (ρ is undefined).
pub fn spearman(x: &[f64], y: &[f64]) -> Option<Spearman> {
    let n = x.len().min(y.len());
    if n < 3 {
        return None;
    }
    let (x, y) = (&x[..n], &y[..n]);
    let rho = pearson(&ranks(x), &ranks(y))?;
    if n <= EXACT_MAX_N {
        let (a, _) = doubled_ranks(x);
        let (b, _) = doubled_ranks(y);
        let observed = a.iter().zip(&b).map(|(p, q)| p * q).sum::<i64>() - n as i64 * (n as i64 + 1) * (n as i64 + 1);
        let (mut hits, mut total, mut top, mut at_top) = (0u64, 0u64, 0i64, 0u64);
        each_pairing(&a, &b, |c| {
            total += 1;
            if c.abs() >= observed.abs() {
                hits += 1;
            }
            match c.abs().cmp(&top) {
                std::cmp::Ordering::Greater => (top, at_top) = (c.abs(), 1),
                std::cmp::Ordering::Equal => at_top += 1,
                std::cmp::Ordering::Less => {}
            }
        });
        return Some(Spearman { rho, p: hits as f64 / total as f64, p_min: at_top as f64 / total as f64, n, test: PTest::Exact });
    }
    let df = (n - 2) as f64;
    let p = if rho.abs() >= 1.0 {
        0.0
    } else {
        let t2 = rho * rho * df / (1.0 - rho * rho);
        incomplete_beta(df / 2.0, 0.5, df / (df + t2))
    };
    Some(Spearman { rho, p, p_min: 2.0 / factorial(n), n, test: PTest::TApprox })
}

/// The probability, if there were no association (every pairing equally likely), that ρ of
/// these values would exceed `threshold`: how often a "strong" ρ arises by chance alone. Exact
/// by enumeration; `None` above [`EXACT_MAX_N`] points, below 3, or with a constant side.
pub fn chance_rho_above(x: &[f64], y: &[f64], threshold: f64) -> Option<f64> {
    let n = x.len().min(y.len());
    if !(3..=EXACT_MAX_N).contains(&n) {
        return None;
    }
    let (a, caa) = doubled_ranks(&x[..n]);
    let (b, cbb) = doubled_ranks(&y[..n]);
    if caa == 0 || cbb == 0 {
        return None;
    }
    let scale = ((caa as f64) * (cbb as f64)).sqrt();
    let (mut above, mut total) = (0u64, 0u64);
    each_pairing(&a, &b, |c| {
        total += 1;
        // A small margin so that a ρ equal to the threshold in exact arithmetic is not counted.
        if c as f64 / scale > threshold + 1e-12 {
            above += 1;
        }
    });
    Some(above as f64 / total as f64)
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
    fn medians_and_spreads() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), 2.5);
        assert_eq!(median(&[]), 0.0);
        // numpy.quantile([4, 1, 3, 2], [0.25, 0.75]) = [1.75, 3.25]; of [5, 1, 9, 3, 7, 2, 8]:
        // [2.5, 5, 7.5] at 0.25, 0.5, 0.75.
        assert_eq!((quantile(&[4.0, 1.0, 3.0, 2.0], 0.25), quantile(&[4.0, 1.0, 3.0, 2.0], 0.75)), (1.75, 3.25));
        let v = [5.0, 1.0, 9.0, 3.0, 7.0, 2.0, 8.0];
        assert_eq!([0.25, 0.5, 0.75].map(|q| quantile(&v, q)), [2.5, 5.0, 7.5]);
        assert_eq!((quantile(&v, 0.0), quantile(&v, 1.0), quantile(&[], 0.5), quantile(&[3.0], 0.75)), (1.0, 9.0, 0.0, 3.0));
        let s = Spread::of(&[10.0, 14.0, 12.0]);
        assert_eq!((s.n, s.median, s.min, s.max, s.mean, s.sd), (3, 12.0, 10.0, 14.0, 12.0, 2.0));
        assert!(s.overlaps(&Spread::of(&[14.0, 20.0])) && !s.overlaps(&Spread::of(&[14.5, 20.0])));
    }

    /// The oracle: every permutation of `y` decoded from its index in the factorial number
    /// system (not Heap's algorithm), ρ as Pearson's r of float ranks, counted with a float
    /// tolerance. Returns (two-sided p, P(ρ > t)).
    fn brute_force(x: &[f64], y: &[f64], t: f64) -> (f64, f64) {
        let n = x.len();
        let rx = ranks(x);
        let ry = ranks(y);
        let obs = pearson(&rx, &ry).unwrap();
        let total: usize = (1..=n).product();
        let (mut hits, mut above) = (0usize, 0usize);
        for mut code in 0..total {
            let mut pool: Vec<f64> = ry.clone();
            let mut perm = Vec::with_capacity(n);
            for k in (1..=n).rev() {
                let f: usize = (1..k).product();
                perm.push(pool.remove(code / f));
                code %= f;
            }
            let r = pearson(&rx, &perm).unwrap();
            hits += usize::from(r.abs() >= obs.abs() - 1e-9);
            above += usize::from(r > t + 1e-9);
        }
        (hits as f64 / total as f64, above as f64 / total as f64)
    }

    #[test]
    fn exact_p_matches_known_values() {
        let up = |n: usize| (1..=n).map(|i| i as f64).collect::<Vec<_>>();
        // A perfect order of n points: only it and its reverse reach |ρ| = 1, so p = 2/n!.
        for (n, want) in [(3, 1.0 / 3.0), (4, 1.0 / 12.0), (5, 1.0 / 60.0), (6, 1.0 / 360.0)] {
            let y: Vec<f64> = up(n).iter().map(|v| v * v * 1000.0).collect();
            let s = spearman(&up(n), &y).unwrap();
            assert_eq!((s.rho, s.test, s.n), (1.0, PTest::Exact, n));
            assert!((s.p - want).abs() < 1e-15 && (s.p_min - want).abs() < 1e-15, "n = {n}: {s:?}");
        }
        // n = 4, one adjacent swap: ρ = 0.8; |ρ| ≥ 0.8 in 1 + 3 + 3 + 1 = 8 of 24 orders.
        let s = spearman(&up(4), &[1.0, 3.0, 2.0, 4.0]).unwrap();
        assert!((s.rho - 0.8).abs() < 1e-12 && (s.p - 1.0 / 3.0).abs() < 1e-15, "{s:?}");
        // The textbook one-sided table for n = 4: P(ρ ≥ 0.8) = 4/24, so P(ρ > 0.65) = 1/6.
        assert!((chance_rho_above(&up(4), &[4.0, 3.0, 2.0, 1.0], 0.65).unwrap() - 1.0 / 6.0).abs() < 1e-15);
        // 12 pseudo-replicated pairs would claim far more than 4 points can show.
        let x = [0.1, 0.1, 0.1, 0.2, 0.2, 0.2, 0.3, 0.3, 0.3, 0.4, 0.4, 0.4];
        let y = [5.0, 5.1, 4.9, 6.0, 6.2, 5.9, 7.0, 6.8, 7.1, 8.0, 8.1, 7.9];
        assert!(spearman(&x, &y).unwrap().p < 1e-3);
        let s = spearman(&[0.1, 0.2, 0.3, 0.4], &[5.0, 6.0, 7.0, 8.0]).unwrap();
        assert!((s.p - 1.0 / 12.0).abs() < 1e-15 && s.p > 0.05);
    }

    #[test]
    fn exact_p_matches_brute_force_with_and_without_ties() {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = |m: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % m
        };
        for case in 0..60 {
            let n = 3 + case % 5;
            // Few distinct values in some cases, so that ties occur on either side.
            let m = if case % 3 == 0 { 3 } else { 1000 };
            let x: Vec<f64> = (0..n).map(|_| next(m) as f64).collect();
            let y: Vec<f64> = (0..n).map(|_| next(m) as f64).collect();
            let Some(s) = spearman(&x, &y) else { continue };
            let (p, above) = brute_force(&x, &y, 0.65);
            assert!((s.p - p).abs() < 1e-12, "x {x:?} y {y:?}: {} vs {p}", s.p);
            assert!((chance_rho_above(&x, &y, 0.65).unwrap() - above).abs() < 1e-12, "x {x:?} y {y:?}");
            assert!(s.p_min <= s.p + 1e-15);
        }
    }

    #[test]
    fn spearman_values() {
        // A perfectly monotonic but non-linear relation, above the exact limit.
        let x: Vec<f64> = (1..=12).map(|i| i as f64).collect();
        let y: Vec<f64> = x.iter().map(|v| v * v * v).collect();
        let s = spearman(&x, &y).unwrap();
        assert_eq!((s.rho, s.p, s.test), (1.0, 0.0, PTest::TApprox));
        assert!((s.p_min - 2.0 / 479_001_600.0).abs() < 1e-20);
        // Known example (n = 10, exact): rho = 1 - 6 * sum d^2 / (n (n^2 - 1)).
        let a = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0];
        let b = [2.0, 1.0, 4.0, 3.0, 7.0, 5.0, 6.0, 10.0, 8.0, 9.0];
        let s = spearman(&a, &b).unwrap();
        let d2: f64 = a.iter().zip(&b).map(|(x, y)| (x - y) * (x - y)).sum();
        assert!((s.rho - (1.0 - 6.0 * d2 / 990.0)).abs() < 1e-12);
        assert_eq!(s.test, PTest::Exact);
        assert!(s.p < 0.001, "{}", s.p);
        assert!(spearman(&[1.0, 1.0, 1.0], &[1.0, 2.0, 3.0]).is_none());
        assert!(spearman(&[1.0, 2.0], &[1.0, 2.0]).is_none());
        // Ties in y: an exact p still, counted over the distinct pairings.
        let s = spearman(&[1.0, 2.0, 3.0, 4.0], &[1.0, 1.0, 2.0, 3.0]).unwrap();
        assert!(s.p_min > 1.0 / 12.0, "{s:?}");
    }
}
