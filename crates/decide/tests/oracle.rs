//! The statistics and the decision methods against independent implementations, on random
//! data: SciPy's `mannwhitneyu` and `wilcoxon` for the rank tests, SciPy's `linprog` for the
//! linear best-worst model, SciPy's SLSQP on the ratio models (ours must reach at least as low
//! a ξ, since ours is the exact optimum), and pymcdm's TOPSIS with vector normalisation.
//!
//! Python comes from $HEAPLAB_TEST_PYTHON, else the workspace's `.venv` (made by the Makefile
//! with python/requirements-test.txt); without one that imports scipy the test says
//! "skipped: ..." and passes.

use heaplab_decide::bwm::{bwm, fuzzy_bwm, Comparisons};
use heaplab_decide::mcdm::{topsis, Matrix};
use heaplab_decide::ranktest::{rank_sum, signed_rank, Alternative, Method};
use heaplab_decide::results::Better;
use serde_json::{json, Value};
use std::io::Write;
use std::process::{Command, Stdio};

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> f64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }
    fn int(&mut self, lo: u64, hi: u64) -> u64 {
        lo + (self.next() * (hi - lo + 1) as f64) as u64
    }
}

/// A Python with scipy, or None (and the reason).
fn python() -> Result<String, String> {
    let candidates: Vec<String> = match std::env::var("HEAPLAB_TEST_PYTHON") {
        Ok(p) => vec![p],
        Err(_) => vec![concat!(env!("CARGO_MANIFEST_DIR"), "/../../.venv/bin/python").to_string()],
    };
    for p in &candidates {
        let ok = Command::new(p).args(["-c", "import scipy"]).stderr(Stdio::null()).status().is_ok_and(|s| s.success());
        if ok {
            return Ok(p.clone());
        }
    }
    Err(format!("no Python with scipy at {} (run `make test`, which makes .venv, or set HEAPLAB_TEST_PYTHON)", candidates.join(", ")))
}

/// Runs `script` with `input` as JSON on standard input; returns its JSON output.
fn run_python(py: &str, script: &str, input: &Value) -> Value {
    let mut child = Command::new(py).args(["-c", script]).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("start python");
    child.stdin.take().unwrap().write_all(input.to_string().as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "python failed: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("python output not JSON ({e}): {}", String::from_utf8_lossy(&out.stdout)))
}

const RANK_SCRIPT: &str = r#"
import json, sys
from scipy.stats import mannwhitneyu, wilcoxon
cases = json.load(sys.stdin)
out = []
for c in cases:
    if c["kind"] == "ranksum":
        m = "exact" if c["method"] == "exact" else "asymptotic"
        r = mannwhitneyu(c["x"], c["y"], alternative=c["alt"], method=m, use_continuity=True)
        out.append([float(r.statistic), float(r.pvalue)])
    else:
        m = "exact" if c["method"] == "exact" else "approx"
        try:
            r = wilcoxon(c["d"], alternative=c["alt"], zero_method="zsplit", method=m if m == "exact" else "asymptotic", correction=False)
        except (TypeError, ValueError):
            r = wilcoxon(c["d"], alternative=c["alt"], zero_method="zsplit", method=m, correction=False)
        out.append([float(r.statistic), float(r.pvalue)])
print(json.dumps(out))
"#;

#[test]
fn rank_tests_agree_with_scipy() {
    let py = match python() {
        Ok(p) => p,
        Err(why) => return eprintln!("skipped: {why}"),
    };
    let mut rng = Rng(2024);
    let mut cases = Vec::new();
    let mut ours = Vec::new();
    for k in 0..120 {
        let (m, n) = (rng.int(2, 60) as usize, rng.int(2, 60) as usize);
        let shift = rng.next() * 0.6 - 0.3;
        // A third of the cases rounded to force ties (and the normal approximation).
        let round = k % 3 == 0;
        let mut draw = |s: f64| {
            let v = rng.next() + s;
            if round {
                (v * 8.0).round() / 8.0
            } else {
                v
            }
        };
        let x: Vec<f64> = (0..m).map(|_| draw(0.0)).collect();
        let y: Vec<f64> = (0..n).map(|_| draw(shift)).collect();
        for alt in [Alternative::Less, Alternative::Greater] {
            let r = rank_sum(&x, &y, alt);
            cases.push(json!({"kind": "ranksum", "x": x, "y": y, "alt": if alt == Alternative::Less {"less"} else {"greater"}, "method": r.method.name()}));
            ours.push(r);
        }
    }
    for k in 0..120 {
        let n = rng.int(3, 45) as usize;
        let bias = rng.next() * 0.8 - 0.4;
        let zeros = k % 3 == 0;
        let d: Vec<f64> = (0..n)
            .map(|_| {
                let v = rng.next() - 0.5 + bias;
                if zeros && rng.next() < 0.3 {
                    0.0
                } else {
                    v
                }
            })
            .collect();
        for alt in [Alternative::Less, Alternative::Greater] {
            let r = signed_rank(&d, alt);
            cases.push(json!({"kind": "signrank", "d": d, "alt": if alt == Alternative::Less {"less"} else {"greater"}, "method": r.method.name()}));
            ours.push(r);
        }
    }
    let theirs = run_python(&py, RANK_SCRIPT, &Value::Array(cases.clone()));
    let (mut exact, mut normal) = (0, 0);
    for (k, (o, t)) in ours.iter().zip(theirs.as_array().unwrap()).enumerate() {
        let p = t[1].as_f64().unwrap();
        let tol = if o.method == Method::Exact { 1e-9 } else { 2e-6 };
        match o.method {
            Method::Exact => exact += 1,
            Method::Normal => normal += 1,
        }
        assert!((o.p - p).abs() < tol, "case {k} ({}): ours p = {} ({:?}), scipy p = {p}", cases[k]["kind"], o.p, o.method);
    }
    assert!(exact > 50 && normal > 50, "both methods exercised: {exact} exact, {normal} normal");
}

const BWM_SCRIPT: &str = r#"
import json, sys
import numpy as np
from scipy.optimize import linprog, minimize
cases = json.load(sys.stdin)
out = []
for c in cases:
    n, b, w, ab, aw = c["n"], c["best"], c["worst"], c["ab"], c["aw"]
    # Linear model: variables w_0..w_{n-1}, xi.
    A, rhs = [], []
    for j in range(n):
        for (p, q, a) in ((b, j, ab[j]), (j, w, aw[j])):
            row = [0.0] * (n + 1); row[p] += 1; row[q] -= a; row[n] = -1; A.append(row); rhs.append(0)
            row = [0.0] * (n + 1); row[p] -= 1; row[q] += a; row[n] = -1; A.append(row); rhs.append(0)
    lin = linprog([0] * n + [1], A_ub=A, b_ub=rhs, A_eq=[[1] * n + [0]], b_eq=[1], bounds=[(0, None)] * (n + 1), method="highs")
    # Non-linear model by SLSQP from several starts.
    def cons(v):
        x, xi = v[:n], v[n]
        g = []
        for j in range(n):
            g += [xi - (x[b] / x[j] - ab[j]), xi + (x[b] / x[j] - ab[j])]
            g += [xi - (x[j] / x[w] - aw[j]), xi + (x[j] / x[w] - aw[j])]
        return np.array(g)
    best = None
    rng = np.random.default_rng(1)
    for s in range(8):
        x0 = rng.random(n) + 0.1; x0 /= x0.sum()
        r = minimize(lambda v: v[n], np.append(x0, 10.0), method="SLSQP",
                     constraints=[{"type": "ineq", "fun": cons}, {"type": "eq", "fun": lambda v: v[:n].sum() - 1}],
                     bounds=[(1e-9, 1)] * n + [(0, None)], options={"maxiter": 500, "ftol": 1e-12})
        if r.success and min(cons(r.x)) > -1e-7 and (best is None or r.x[n] < best):
            best = float(r.x[n])
    out.append({"xi_linear": float(lin.fun), "xi_slsqp": best})
print(json.dumps(out))
"#;

#[test]
fn best_worst_models_agree_with_scipy() {
    let py = match python() {
        Ok(p) => p,
        Err(why) => return eprintln!("skipped: {why}"),
    };
    let mut rng = Rng(77);
    let mut cases = Vec::new();
    let mut ours = Vec::new();
    for _ in 0..25 {
        let n = rng.int(3, 7) as usize;
        let best = rng.int(0, n as u64 - 1) as usize;
        let mut worst = rng.int(0, n as u64 - 1) as usize;
        if worst == best {
            worst = (best + 1) % n;
        }
        let abw = rng.int(2, 9) as f64;
        let mut ab: Vec<f64> = (0..n).map(|_| rng.int(1, abw as u64) as f64).collect();
        let mut aw: Vec<f64> = (0..n).map(|_| rng.int(1, abw as u64) as f64).collect();
        ab[best] = 1.0;
        aw[worst] = 1.0;
        ab[worst] = abw;
        aw[best] = abw;
        let c = Comparisons { best, worst, best_to_others: ab.clone(), others_to_worst: aw.clone() };
        ours.push(bwm(&c));
        cases.push(json!({"n": n, "best": best, "worst": worst, "ab": ab, "aw": aw}));
    }
    let theirs = run_python(&py, BWM_SCRIPT, &Value::Array(cases.clone()));
    for (k, (o, t)) in ours.iter().zip(theirs.as_array().unwrap()).enumerate() {
        let lin = t["xi_linear"].as_f64().unwrap();
        assert!((o.xi_linear - lin).abs() < 1e-7, "case {k}: linear ξ ours {} scipy {lin}: {}", o.xi_linear, cases[k]);
        if let Some(s) = t["xi_slsqp"].as_f64() {
            assert!(o.xi <= s + 1e-6, "case {k}: our ξ* {} is above SLSQP's {s}: {}", o.xi, cases[k]);
        }
    }
}

const FBWM_SCRIPT: &str = r#"
import json, sys
import numpy as np
from scipy.optimize import minimize
T = {1: (1, 1, 1), 2: (2/3, 1, 3/2), 3: (3/2, 2, 5/2), 4: (5/2, 3, 7/2), 5: (7/2, 4, 9/2)}
cases = json.load(sys.stdin)
out = []
for c in cases:
    n, b, w, ab, aw = c["n"], c["best"], c["worst"], c["ab"], c["aw"]
    def cons(v):
        W, k = v[:3 * n].reshape(n, 3), v[3 * n]
        g = []
        for j in range(n):
            al, am, au = T[ab[j]]
            for num, den, t in ((W[b][0], W[j][2], al), (W[b][1], W[j][1], am), (W[b][2], W[j][0], au)):
                g += [k - (num / den - t), k + (num / den - t)]
            al, am, au = T[aw[j]]
            for num, den, t in ((W[j][0], W[w][2], al), (W[j][1], W[w][1], am), (W[j][2], W[w][0], au)):
                g += [k - (num / den - t), k + (num / den - t)]
            g += [W[j][1] - W[j][0], W[j][2] - W[j][1]]
        return np.array(g)
    gmi = lambda v: sum((v[3*j] + 4 * v[3*j+1] + v[3*j+2]) / 6 for j in range(n)) - 1
    best = None
    rng = np.random.default_rng(2)
    for s in range(8):
        m = rng.random(n) + 0.2; m /= m.sum()
        x0 = np.concatenate([[0.8 * x, x, 1.2 * x] for x in m] + [[10.0]])
        r = minimize(lambda v: v[3 * n], x0, method="SLSQP", constraints=[{"type": "ineq", "fun": cons}, {"type": "eq", "fun": gmi}],
                     bounds=[(1e-9, 1)] * (3 * n) + [(0, None)], options={"maxiter": 1000, "ftol": 1e-12})
        if r.success and min(cons(r.x)) > -1e-7 and (best is None or r.x[3 * n] < best):
            best = float(r.x[3 * n])
    out.append(best)
print(json.dumps(out))
"#;

#[test]
fn fuzzy_best_worst_reaches_slsqp_optimum() {
    let py = match python() {
        Ok(p) => p,
        Err(why) => return eprintln!("skipped: {why}"),
    };
    let mut rng = Rng(5);
    let mut cases = Vec::new();
    let mut ours = Vec::new();
    for _ in 0..12 {
        let n = rng.int(3, 5) as usize;
        let best = rng.int(0, n as u64 - 1) as usize;
        let worst = (best + 1 + rng.int(0, n as u64 - 2) as usize) % n;
        let abw = rng.int(2, 5);
        let mut ab: Vec<f64> = (0..n).map(|_| rng.int(1, abw) as f64).collect();
        let mut aw: Vec<f64> = (0..n).map(|_| rng.int(1, abw) as f64).collect();
        ab[best] = 1.0;
        aw[worst] = 1.0;
        ab[worst] = abw as f64;
        aw[best] = abw as f64;
        let c = Comparisons { best, worst, best_to_others: ab.clone(), others_to_worst: aw.clone() };
        ours.push(fuzzy_bwm(&c).unwrap());
        cases.push(json!({"n": n, "best": best, "worst": worst, "ab": ab, "aw": aw}));
    }
    let theirs = run_python(&py, FBWM_SCRIPT, &Value::Array(cases.clone()));
    let mut compared = 0;
    for (k, (o, t)) in ours.iter().zip(theirs.as_array().unwrap()).enumerate() {
        let s: f64 = o.weights.iter().sum();
        assert!((s - 1.0).abs() < 1e-6, "case {k}: GMI weights sum to {s}");
        if let Some(x) = t.as_f64() {
            compared += 1;
            assert!(o.xi <= x + 1e-6, "case {k}: our ξ* {} is above SLSQP's {x}: {}", o.xi, cases[k]);
        }
    }
    assert!(compared > 0, "SLSQP solved none of the fuzzy cases");
}

const TOPSIS_SCRIPT: &str = r#"
import json, sys
import numpy as np
try:
    from pymcdm.methods import TOPSIS
    from pymcdm.normalizations import vector_normalization
except ImportError:
    print(json.dumps(None)); sys.exit(0)
cases = json.load(sys.stdin)
out = []
for c in cases:
    t = TOPSIS(normalization_function=vector_normalization)
    out.append([float(x) for x in t(np.array(c["m"]), np.array(c["w"]), np.array(c["types"]))])
print(json.dumps(out))
"#;

#[test]
fn topsis_agrees_with_pymcdm() {
    let py = match python() {
        Ok(p) => p,
        Err(why) => return eprintln!("skipped: {why}"),
    };
    let mut rng = Rng(31);
    let mut cases = Vec::new();
    let mut ours = Vec::new();
    for _ in 0..30 {
        let (rows, cols) = (rng.int(3, 8) as usize, rng.int(2, 6) as usize);
        let values: Vec<Vec<f64>> = (0..rows).map(|_| (0..cols).map(|_| 0.5 + rng.next() * 10.0).collect()).collect();
        let better: Vec<Better> = (0..cols).map(|_| if rng.next() < 0.5 { Better::Lower } else { Better::Higher }).collect();
        let raw: Vec<f64> = (0..cols).map(|_| rng.next() + 0.05).collect();
        let s: f64 = raw.iter().sum();
        let w: Vec<f64> = raw.iter().map(|x| x / s).collect();
        let m = Matrix { alternatives: (0..rows).map(|i| format!("a{i}")).collect(), criteria: (0..cols).map(|j| format!("c{j}")).collect(), better: better.clone(), values: values.clone() };
        ours.push(topsis(&m, &w));
        let types: Vec<i32> = better.iter().map(|b| if *b == Better::Higher { 1 } else { -1 }).collect();
        cases.push(json!({"m": values, "w": w, "types": types}));
    }
    let theirs = run_python(&py, TOPSIS_SCRIPT, &Value::Array(cases));
    if theirs.is_null() {
        return eprintln!("skipped: pymcdm is not installed in {py}");
    }
    for (k, (o, t)) in ours.iter().zip(theirs.as_array().unwrap()).enumerate() {
        for (i, (a, b)) in o.iter().zip(t.as_array().unwrap()).enumerate() {
            let b = b.as_f64().unwrap();
            assert!((a - b).abs() < 1e-9, "case {k} alternative {i}: ours {a}, pymcdm {b}");
        }
    }
}

const PYPERF_SCRIPT: &str = r#"
import json, sys
try:
    import pyperf
    from pyperf import _cli
except ImportError:
    print(json.dumps(None)); sys.exit(0)
import random
path = json.load(sys.stdin)
random.seed(7)
suite, verdicts = None, []
for k in range(40):
    spread = random.choice([0.01, 0.05, 0.12, 0.3])
    mean = random.choice([2e-4, 5e-3, 0.2])
    loops = random.choice([1, 4, 16])
    runs = []
    for r in range(4):
        values = [mean * (1 + spread * (random.random() - 0.5) * 2) for _ in range(3)]
        if k % 7 == 0 and r == 3:
            values[0] = mean * 2.5
        runs.append(pyperf.Run(values, warmups=[(loops, mean)], metadata={"name": "b%d" % k, "loops": loops, "unit": "second"}, collect_metadata=False))
    bench = pyperf.Benchmark(runs)
    lines = [l for l in _cli.format_checks(bench) if l.startswith("* the ")]
    verdicts.append(["b%d" % k, sorted(l.split(" ")[2] for l in lines)])
    if suite is None:
        suite = pyperf.BenchmarkSuite([bench])
    else:
        suite.add_benchmark(bench)
suite.dump(path, replace=True)
print(json.dumps(verdicts))
"#;

/// pyperf's own `check` on benchmarks it wrote: the same series are unstable for the same
/// reasons (standard deviation, minimum, maximum, shortest raw value), read from pyperf's file.
#[test]
fn stability_and_format_agree_with_pyperf() {
    let py = match python() {
        Ok(p) => p,
        Err(why) => return eprintln!("skipped: {why}"),
    };
    let path = std::env::temp_dir().join(format!("heaplab-decide-pyperf-{}.json", std::process::id()));
    let theirs = run_python(&py, PYPERF_SCRIPT, &json!(path.to_string_lossy()));
    if theirs.is_null() {
        return eprintln!("skipped: pyperf is not installed in {py}");
    }
    let input = heaplab_decide::pyperf::Input { configuration: "ref".into(), path: path.to_string_lossy().into_owned() };
    let other = heaplab_decide::pyperf::Input { configuration: "other".into(), path: input.path.clone() };
    let r = heaplab_decide::pyperf::read(&[input, other]).unwrap();
    let _ = std::fs::remove_file(&path);
    let mut unstable = 0;
    for v in theirs.as_array().unwrap() {
        let name = v[0].as_str().unwrap();
        let want: Vec<&str> = v[1].as_array().unwrap().iter().map(|x| x.as_str().unwrap()).collect();
        let s = r.series("ref", name, "time").unwrap_or_else(|| panic!("{name} read"));
        assert_eq!(s.values.len(), 12, "{name}: 4 runs of 3 values");
        let mut got: Vec<&str> = s.unstable.iter().map(|x| x.split(' ').nth(1).unwrap()).collect();
        got.sort();
        assert_eq!(got, want, "{name}: ours {:?}", s.unstable);
        unstable += usize::from(!want.is_empty());
    }
    assert!(unstable > 5 && unstable < 35, "both stable and unstable series exercised ({unstable} unstable)");
}

const HPT_SCRIPT: &str = r#"
import json, sys
import numpy as np
from scipy.stats import mannwhitneyu, wilcoxon
cases = json.load(sys.stdin)
out = []
def method(x, y):
    ties = len(set(list(x) + list(y))) < len(x) + len(y)
    return "exact" if (not ties and len(x) <= 50 and len(y) <= 50) else "asymptotic"
def signrank_p(d, alt):
    d = np.asarray(d)
    if np.all(d == 0):
        return 0.5
    zeros = np.any(d == 0); ties = len(set(np.abs(d))) < len(d)
    m = "exact" if (not zeros and not ties and len(d) <= 50) else "asymptotic"
    return float(wilcoxon(d, alternative=alt, zero_method="zsplit", method=m, correction=False).pvalue)
for c in cases:
    alpha = 1 - c["confidence"]
    pairs = []
    for ref, cfg in c["workloads"]:
        m = np.median(ref)
        re = m / np.asarray(ref); cf = m / np.asarray(cfg)
        pb = mannwhitneyu(cf, re, alternative="greater", method=method(cf, re)).pvalue
        pw = mannwhitneyu(cf, re, alternative="less", method=method(cf, re)).pvalue
        if pb < alpha or pw < alpha:
            pairs.append((re, cf))
    def cross(r):
        d = []
        for re, cf in pairs:
            s = cf / r
            pb = mannwhitneyu(s, re, alternative="greater", method=method(s, re)).pvalue
            pw = mannwhitneyu(s, re, alternative="less", method=method(s, re)).pvalue
            d.append(np.median(s) - np.median(re) if (pb < alpha or pw < alpha) else 0.0)
        return signrank_p(d, "greater"), signrank_p(d, "less")
    if not pairs:
        out.append(["none", 0]); continue
    pb, pw = cross(1.0)
    if pb < alpha:
        best, conf, k = 1.0, 1 - pb, 1
        while True:
            r = 1 + k * c["step"]
            p, _ = cross(r)
            if p >= alpha:
                break
            best, conf, k = r, 1 - p, k + 1
        out.append(["speedup", best, conf])
    elif pw < alpha:
        out.append(["PD", 1 - pw])
    else:
        out.append(["MI", 1 - pb])
print(json.dumps(out))
"#;

/// The whole HPT flow (normalisation, significance filter, zero-split signed-rank test, the
/// stepped speedup search) re-implemented in Python over SciPy's tests, on random
/// configurations: the same verdicts, speedups and confidences.
#[test]
fn hpt_verdicts_agree_with_a_scipy_reimplementation() {
    use heaplab_decide::hpt::{analyse, CrossApp, Options};
    use heaplab_decide::results::{Configuration, Metric, Results, Series};
    let py = match python() {
        Ok(p) => p,
        Err(why) => return eprintln!("skipped: {why}"),
    };
    let mut rng = Rng(4242);
    let mut cases = Vec::new();
    let mut ours = Vec::new();
    for k in 0..16 {
        let workloads = rng.int(5, 14) as usize;
        let n = rng.int(5, 25) as usize;
        let effect = [0.85, 0.95, 1.0, 1.03, 1.1, 1.25][k % 6];
        let noise = [0.005, 0.02, 0.05][k % 3];
        let mut series = Vec::new();
        let mut pairs = Vec::new();
        for w in 0..workloads {
            let base = 0.01 * (1.0 + w as f64);
            // Each workload reacts differently: a spread of ±5% around the configuration's effect.
            let f = effect * (1.0 + 0.1 * (rng.next() - 0.5));
            let r: Vec<f64> = (0..n).map(|_| base * (1.0 + noise * rng.next())).collect();
            let c: Vec<f64> = (0..n).map(|_| base / f * (1.0 + noise * rng.next())).collect();
            for (cfg, v) in [("ref", &r), ("cfg", &c)] {
                series.push(Series { configuration: cfg.into(), workload: format!("w{w}"), metric: "time".into(), values: v.clone(), warmups: vec![], unstable: vec![] });
            }
            pairs.push(json!([r, c]));
        }
        let res = Results {
            reference: "ref".into(),
            configurations: ["ref", "cfg"].iter().map(|c| Configuration { name: c.to_string(), description: String::new() }).collect(),
            metrics: vec![Metric { name: "time".into(), unit: "second".into(), better: Better::Lower }],
            series,
            provenance: Value::Null,
        };
        let opts = Options { step: 0.01, ..Options::default() };
        ours.push(analyse(&res, &opts).cells[0].verdict);
        cases.push(json!({"workloads": pairs, "confidence": opts.confidence, "step": opts.step}));
    }
    let theirs = run_python(&py, HPT_SCRIPT, &Value::Array(cases));
    let mut kinds = std::collections::HashSet::new();
    for (k, (o, t)) in ours.iter().zip(theirs.as_array().unwrap()).enumerate() {
        let kind = t[0].as_str().unwrap();
        kinds.insert(kind.to_string());
        let close = |a: f64, b: &Value| (a - b.as_f64().unwrap()).abs() < 1e-5;
        let same = match (*o, kind) {
            (CrossApp::Speedup { speedup, confidence }, "speedup") => (speedup - t[1].as_f64().unwrap()).abs() < 1e-9 && close(confidence, &t[2]),
            (CrossApp::Degradation { confidence }, "PD") => close(confidence, &t[1]),
            (CrossApp::MarginalImprovement { confidence }, "MI") => close(confidence, &t[1]),
            (CrossApp::NoData, "none") => true,
            _ => false,
        };
        assert!(same, "case {k}: ours {o:?}, the re-implementation {t}");
    }
    assert!(kinds.contains("speedup") && kinds.contains("PD"), "verdicts exercised: {kinds:?}");
}
