//! Measuring a workload under a bench's configurations, as the apply and group benches both do:
//! a configuration runs the workload's large input with an allocator preloaded or under
//! `heaplab run` with a runtime; rounds of one run per configuration (interleaved, so that a
//! slow spell of the machine spreads over all of them, and in an order that turns from round to
//! round; the first round discarded), every run's
//! output compared with the plain run's, then one run each under cachegrind. The benches keep
//! their configurations, what they read from a runtime's report, and their tables.

use super::{fingerprint, pick_cachegrind, strs, CachegrindTool, Fingerprint, Misses, Workload, CACHEGRIND_FACTOR, CACHE_GEOMETRY, RUN_TIMEOUT};
use heaplab_decide::runner::Cachegrind;
use heaplab_study::measure::{run_once, Run, RunSpec};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// One measured run.
#[derive(Clone, Debug, Default)]
pub struct Sample {
    /// Wall seconds.
    pub wall: f64,
    /// Peak RSS in bytes.
    pub rss: u64,
}

/// Everything measured for one workload under one configuration; `X` is what the bench keeps
/// from the runtime's runs (its report, the layout's figures).
#[derive(Default)]
pub struct Cell<X> {
    /// The samples of every round but the first.
    pub samples: Vec<Sample>,
    /// (D1 misses, LL data misses, data references) under cachegrind.
    pub cache: Option<Misses>,
    /// Wall seconds of the cachegrind run.
    pub cache_seconds: f64,
    /// Why the row is incomplete: failed, crashed, different output, not measured.
    pub error: Option<String>,
    /// What the bench keeps from the runtime's runs.
    pub runtime: X,
}

/// How a configuration runs the workload.
pub enum Launch<'a> {
    /// Directly, with this library preloaded (`None`: none, glibc's malloc).
    Preload(Option<PathBuf>),
    /// Under `heaplab run OPTION FILE --report REPORT --fallback FALLBACK --` (`--layout` or
    /// `--groups`).
    HeaplabRun { heaplab: &'a Path, option: &'a str, file: Option<&'a Path>, fallback: &'a str },
}

/// The workload's large input run as `how` says, `wrap` (cachegrind's tool, or nothing) in front
/// of the program, `heaplab run` writing its report to `report`: (program, arguments, preload).
pub fn invocation(w: &Workload, how: &Launch, report: &Path, wrap: &[String]) -> (PathBuf, Vec<String>, Option<PathBuf>) {
    let mut cmd: Vec<String> = wrap.to_vec();
    cmd.push(w.exe.display().to_string());
    cmd.extend(w.large.args.iter().cloned());
    match how {
        Launch::Preload(library) => (PathBuf::from(&cmd[0]), cmd[1..].to_vec(), library.clone()),
        Launch::HeaplabRun { heaplab, option, file, fallback } => {
            let mut a = strs(&["run", option, &file.map(|p| p.display().to_string()).unwrap_or_default(), "--report", &report.display().to_string(), "--fallback", fallback, "--"]);
            a.extend(cmd);
            (heaplab.to_path_buf(), a, None)
        }
    }
}

/// Runs the workload's large input once as `how` says (`wrap` and `env` added, killed after
/// `timeout`), its standard output to `out` and `heaplab run`'s report to `report` (removed
/// first): the run, which must have succeeded, and its output's fingerprint.
fn run_large(w: &Workload, how: &Launch, wrap: &[String], env: Vec<(String, String)>, out: &Path, report: &Path, timeout: std::time::Duration) -> Result<(Run, Fingerprint), String> {
    let _ = std::fs::remove_file(report);
    let (program, args, preload) = invocation(w, how, report, wrap);
    // No /proc sampler: the peak comes from wait4, and `heaplab run` (the grouped and laid-out
    // rows) starts its programs without one, so no row carries the sampler's cost.
    let spec = RunSpec { program: program.clone(), arg0: program.display().to_string(), args, env, preload, stdin: w.large.stdin.clone(), stdout: Some(out.to_path_buf()), cwd: w.large.cwd.clone(), timeout, unsampled: true };
    let run = run_once(&spec).map_err(|e| format!("cannot run: {e}"))?;
    if !run.ok() {
        let how = if run.status < 0 { format!("killed by {}", heaplab_trace::launch::signal_name(-run.status)) } else { format!("exit status {}", run.status) };
        return Err(format!("{how}: {}", run.stderr_tail.lines().last().unwrap_or("")));
    }
    Ok((run, fingerprint(out)?))
}

/// One measured run of configuration `name` in `scratch`: the run, its output's fingerprint, and
/// where `heaplab run` wrote its report.
pub fn measure_once(w: &Workload, how: &Launch, name: &str, scratch: &Path) -> Result<(Run, Fingerprint, PathBuf), String> {
    let out = scratch.join(format!("{name}.stdout"));
    let report = scratch.join(format!("{name}.report.json"));
    let (run, fp) = run_large(w, how, &[], w.env.clone(), &out, &report, RUN_TIMEOUT)?;
    Ok((run, fp, report))
}

/// One run of configuration `name` under cachegrind (its tool started directly, the caches of
/// [`CACHE_GEOMETRY`]): the misses, its wall seconds, its output's fingerprint, and where
/// `heaplab run` wrote its report.
pub fn cachegrind_once(w: &Workload, how: &Launch, name: &str, scratch: &Path, cg: &CachegrindTool) -> Result<(Misses, f64, Fingerprint, PathBuf), String> {
    let dir = scratch.join(format!("cg-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let out = scratch.join(format!("{name}.cg.stdout"));
    let report = scratch.join(format!("{name}.cg.report.json"));
    let mut wrap = vec![cg.tool.display().to_string()];
    wrap.extend(strs(&["--tool=cachegrind", "--cache-sim=yes"]));
    wrap.extend(strs(&CACHE_GEOMETRY));
    wrap.push(format!("--cachegrind-out-file={}/cg.out", dir.display()));
    let mut env = w.env.clone();
    env.push(("VALGRIND_LAUNCHER".into(), cg.launcher.display().to_string()));
    let result = run_large(w, how, &wrap, env, &out, &report, RUN_TIMEOUT * CACHEGRIND_FACTOR).map_err(|e| format!("under cachegrind: {e}")).and_then(|(run, fp)| {
        let files: Vec<Cachegrind> = std::fs::read_dir(&dir).map_err(|e| e.to_string())?.flatten().map(|e| Cachegrind::read(&e.path())).collect::<Result<_, _>>()?;
        let f = pick_cachegrind(&files, &w.exe)?;
        let refs = f.get("Dr")? + f.get("Dw")?;
        Ok(((f.d1_misses()?, f.ll_data_misses()?, refs), run.wall, fp, report))
    });
    let _ = std::fs::remove_dir_all(&dir);
    result
}

/// Where a workload's measurement stands, for the progress lines: workload `k` of `n`, started
/// at `t0`.
pub struct Progress<'a> {
    /// The workload's name.
    pub name: &'a str,
    /// Its number, from 0.
    pub k: usize,
    /// Workloads in all.
    pub n: usize,
    /// When the bench started.
    pub t0: Instant,
}

impl Progress<'_> {
    fn say(&self, what: &str) {
        eprintln!("[{}/{}] {} ({:.0} s so far): {what}", self.k + 1, self.n, self.name, self.t0.elapsed().as_secs_f64());
    }
}

/// The order in which round `round` runs `k` configurations: every other round runs the one
/// before it backwards, and each pair starts one configuration further along, so that each configuration takes every place in
/// turn and follows different ones (a program that leaves the caches, the page cache or the CPU's
/// clock in some state would otherwise favour or handicap the one after it in every round).
/// Round 0 runs forwards from the first, whose output the others are compared with.
pub fn round_order(round: usize, k: usize) -> impl Iterator<Item = usize> {
    let (from, backwards) = (round / 2, round % 2 == 1);
    (0..k).map(move |step| (from + if backwards { k - 1 - step } else { step }) % k)
}

/// Measures the configurations `names` (their cells, in order; one with an error already is
/// left out): `runs` rounds of one run each through `once` (the sample, the output's fingerprint
/// and what to `keep` of the runtime's report), in [`round_order`], the first round's samples discarded, every
/// output compared with the first (the plain run's); then, with `cachegrind`, one run each
/// through it (the misses, the seconds and the fingerprint, given the cell so far). Returns the
/// plain run's fingerprint.
#[allow(clippy::too_many_arguments)]
pub fn measure_cells<X, R>(
    at: &Progress,
    runs: usize,
    names: &[String],
    cells: &mut [Cell<X>],
    mut once: impl FnMut(usize) -> Result<(Sample, Fingerprint, Option<R>), String>,
    keep: impl Fn(&mut X, R),
    mut cachegrind: Option<impl FnMut(usize, &Cell<X>) -> Result<(Misses, f64, Fingerprint), String>>,
) -> Option<Fingerprint> {
    let mut plain: Option<Fingerprint> = None;
    for round in 0..runs {
        at.say(&format!("round {}/{runs} of {} configurations", round + 1, names.len()));
        for i in round_order(round, cells.len()) {
            let cell = &mut cells[i];
            if cell.error.is_some() {
                continue;
            }
            match once(i) {
                Ok((s, fp, rep)) => {
                    let expected = *plain.get_or_insert(fp);
                    if fp != expected {
                        cell.error = Some(format!("output differs from the plain run ({} bytes, plain {} bytes)", fp.1, expected.1));
                        continue;
                    }
                    if round > 0 {
                        cell.samples.push(s);
                    }
                    if let Some(r) = rep {
                        keep(&mut cell.runtime, r);
                    }
                }
                Err(e) => {
                    eprintln!("  {} under {}: {e}", at.name, names[i]);
                    cell.error = Some(e);
                }
            }
        }
    }
    if let Some(cg) = cachegrind.as_mut() {
        for (i, cell) in cells.iter_mut().enumerate() {
            if cell.error.is_some() {
                continue;
            }
            at.say(&format!("cachegrind {} ({}/{})", names[i], i + 1, names.len()));
            match cg(i, cell) {
                Ok((m, secs, fp)) => {
                    if Some(fp) != plain {
                        cell.error = Some(format!("output under cachegrind differs from the plain run ({} bytes)", fp.1));
                    } else {
                        cell.cache = Some(m);
                        cell.cache_seconds = secs;
                    }
                }
                Err(e) => {
                    eprintln!("  {} under {} (cachegrind): {e}", at.name, names[i]);
                    cell.error = Some(format!("cachegrind: {e}"));
                }
            }
        }
    }
    plain
}

#[cfg(test)]
mod tests {
    use super::round_order;
    use std::collections::BTreeSet;

    #[test]
    fn rounds_rotate_so_every_configuration_takes_every_place_and_follows_others() {
        for k in [1, 2, 3, 5, 6] {
            let rounds: Vec<Vec<usize>> = (0..4 * k).map(|r| round_order(r, k).collect()).collect();
            assert_eq!(rounds[0], (0..k).collect::<Vec<_>>(), "the first round starts with the plain run");
            for order in &rounds {
                let mut sorted = order.clone();
                sorted.sort_unstable();
                assert_eq!(sorted, (0..k).collect::<Vec<_>>(), "each round runs every configuration once");
            }
            for c in 0..k {
                let places: BTreeSet<usize> = rounds.iter().map(|o| o.iter().position(|&x| x == c).unwrap()).collect();
                assert_eq!(places.len(), k, "k {k}: configuration {c} takes only places {places:?}");
                let before: BTreeSet<usize> = rounds.iter().filter_map(|o| o.iter().position(|&x| x == c).filter(|&p| p > 0).map(|p| o[p - 1])).collect();
                assert!(before.len() > 1 || k < 3, "k {k}: configuration {c} always follows {before:?}");
            }
        }
        assert_eq!(round_order(3, 0).count(), 0);
    }
}
