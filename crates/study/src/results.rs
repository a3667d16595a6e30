//! A workload's entry of `results.json` read back into a [`WorkloadResult`]: the inverse of
//! [`report::workload_json`](crate::report::workload_json). A study split into one task per
//! workload (each on whichever machine runs it) returns each workload's result in that form, and
//! the results gathered in one place make the same report as a study run there; whole
//! `results.json` files of studies made alike are gathered the same way ([`study_parts`]). The round trip
//! keeps every number the report shows; a run's standard-error tail, which only explains a
//! failed run (and a failed run ends its workload), is not in the JSON and comes back empty.

use crate::measure::{Run, RssMethod};
use crate::stats::{PTest, Spearman};
use crate::{AllocatorResult, Machine, WorkloadResult};
use serde_json::Value;

/// Reads one workload's entry (a JSON object as [`crate::report::workload_json`] writes it); the
/// error names the field that is missing or of the wrong type.
pub fn workload(v: &Value) -> Result<WorkloadResult, String> {
    let o = Obj::new(v, "workload")?;
    let allocators = o.array("allocators")?.iter().enumerate().map(|(k, a)| allocator(a, &format!("allocators[{k}]"))).collect::<Result<_, _>>()?;
    let command = o.array("command")?.iter().enumerate().map(|(k, c)| c.as_str().map(str::to_string).ok_or_else(|| format!("command[{k}]: not a string"))).collect::<Result<_, _>>()?;
    Ok(WorkloadResult {
        name: o.string("name")?,
        description: o.string("description")?,
        command,
        traced_exe: o.string("traced_exe")?,
        events: o.u64("events")?,
        threads: u32::try_from(o.u64("threads")?).map_err(|_| "threads: out of range".to_string())?,
        allocators,
        rho_external: spearman(o.get("spearman_external"), "spearman_external")?,
        rho_internal: spearman(o.get("spearman_internal"), "spearman_internal")?,
        chance_strong: o.opt_f64("chance_rho_external_above_threshold")?,
        error: o.opt_string("error")?,
        machine: match o.get("machine") {
            None | Some(Value::Null) => None,
            Some(m) => Some(machine(m)?),
        },
    })
}

/// What a gathered study takes from one whole `results.json`.
#[derive(Clone, Debug)]
pub struct StudyParts {
    /// Its workloads.
    pub workloads: Vec<WorkloadResult>,
    /// Runs per allocator.
    pub runs: usize,
    /// The RSS figure its correlations used.
    pub rss: RssMethod,
}

/// Reads a whole `results.json` (as [`crate::report::study_json`] writes it) for gathering.
pub fn study_parts(v: &Value) -> Result<StudyParts, String> {
    let o = Obj::new(v, "results")?;
    let rss = o.string("rss_method")?;
    let rss = RssMethod::parse(&rss).ok_or_else(|| format!("results.rss_method: unknown method {rss:?}"))?;
    let workloads = o.array("workloads")?.iter().enumerate().map(|(k, w)| workload(w).map_err(|e| format!("workloads[{k}]: {e}"))).collect::<Result<_, _>>()?;
    Ok(StudyParts { workloads, runs: o.usize("runs_per_allocator")?, rss })
}

/// Gathers the studies at `inputs` (each a `results.json` or a report directory holding one)
/// into one: their workloads in order. They must have been made alike (the same runs per
/// allocator and RSS method), since the report states those once; the error names the input.
pub fn gather(inputs: &[std::path::PathBuf]) -> Result<StudyParts, String> {
    let mut all: Option<StudyParts> = None;
    for input in inputs {
        let file = if input.is_dir() { input.join("results.json") } else { input.clone() };
        let text = std::fs::read_to_string(&file).map_err(|e| format!("{}: {e}", file.display()))?;
        let v: Value = serde_json::from_str(&text).map_err(|e| format!("{}: not JSON: {e}", file.display()))?;
        let parts = study_parts(&v).map_err(|e| format!("{}: {e}", file.display()))?;
        match &mut all {
            None => all = Some(parts),
            Some(a) if (a.runs, a.rss) != (parts.runs, parts.rss) => {
                return Err(format!(
                    "{}: made with {} runs per allocator and {} peak RSS, but {} with {} and {}: only studies made alike can be gathered",
                    file.display(),
                    parts.runs,
                    parts.rss.name(),
                    inputs[0].display(),
                    a.runs,
                    a.rss.name()
                ))
            }
            Some(a) => a.workloads.extend(parts.workloads),
        }
    }
    all.ok_or_else(|| "nothing to gather".to_string())
}

fn allocator(v: &Value, at: &str) -> Result<AllocatorResult, String> {
    let o = Obj::new(v, at)?;
    let runs = o.array("runs")?.iter().enumerate().map(|(k, r)| run(r, &format!("{at}.runs[{k}]"))).collect::<Result<_, _>>()?;
    let series = o
        .array("external_over_time")?
        .iter()
        .enumerate()
        .map(|(k, p)| match p.as_array().map(|p| p.as_slice()) {
            Some([t, e]) => t.as_f64().zip(e.as_f64()).ok_or(()),
            _ => Err(()),
        }
        .map_err(|()| format!("{at}.external_over_time[{k}]: not a [time, ratio] pair")))
        .collect::<Result<_, _>>()?;
    Ok(AllocatorResult {
        name: o.string("name")?,
        library: o.opt_string("library")?,
        external: o.f64("external")?,
        internal: o.f64("internal")?,
        makespan_excess: o.u64("makespan_minus_max_load_bytes")?,
        jobs: o.u64("jobs")?,
        mappings: o.usize("mappings")?,
        replay_requests: o.u64("replay_requests")?,
        replay_seconds: o.f64("replay_seconds")?,
        frag_seconds: o.f64("frag_seconds")?,
        placed_bytes: o.u64("placed_bytes")?,
        series,
        runs,
    })
}

fn run(v: &Value, at: &str) -> Result<Run, String> {
    let o = Obj::new(v, at)?;
    let status = o.get("status").and_then(Value::as_i64).and_then(|s| i32::try_from(s).ok()).ok_or_else(|| o.bad("status", "an exit status"))?;
    Ok(Run {
        rusage_rss: o.u64("peak_rss_rusage_bytes")?,
        sampled_rss: o.u64("peak_rss_sampled_bytes")?,
        wall: o.f64("wall_seconds")?,
        user: o.f64("user_seconds")?,
        sys: o.f64("sys_seconds")?,
        status,
        stderr_tail: String::new(),
    })
}

fn spearman(v: Option<&Value>, at: &str) -> Result<Option<Spearman>, String> {
    let Some(v) = v.filter(|v| !v.is_null()) else { return Ok(None) };
    let o = Obj::new(v, at)?;
    let test = match o.string("test")?.as_str() {
        t if t == PTest::Exact.name() => PTest::Exact,
        t if t == PTest::TApprox.name() => PTest::TApprox,
        t => return Err(format!("{at}.test: unknown test {t:?}")),
    };
    Ok(Some(Spearman { rho: o.f64("rho")?, p: o.f64("p")?, p_min: o.f64("p_min")?, n: o.usize("n")?, test }))
}

fn machine(v: &Value) -> Result<Machine, String> {
    let o = Obj::new(v, "machine")?;
    Ok(Machine {
        // Absent in reports written before hosts were recorded.
        host: o.opt_string("host")?.unwrap_or_default(),
        cpu: o.string("cpu")?,
        cores: o.usize("cores")?,
        memory: o.u64("memory_bytes")?,
        kernel: o.string("kernel")?,
        os: o.string("os")?,
    })
}

/// A JSON object being read, with its place for error messages.
struct Obj<'a> {
    map: &'a serde_json::Map<String, Value>,
    at: &'a str,
}

impl<'a> Obj<'a> {
    fn new(v: &'a Value, at: &'a str) -> Result<Obj<'a>, String> {
        v.as_object().map(|map| Obj { map, at }).ok_or_else(|| format!("{at}: not a JSON object"))
    }
    fn get(&self, key: &str) -> Option<&'a Value> {
        self.map.get(key)
    }
    fn bad(&self, key: &str, what: &str) -> String {
        match self.map.get(key) {
            None => format!("{}.{key}: missing", self.at),
            Some(_) => format!("{}.{key}: not {what}", self.at),
        }
    }
    fn string(&self, key: &str) -> Result<String, String> {
        self.get(key).and_then(Value::as_str).map(str::to_string).ok_or_else(|| self.bad(key, "a string"))
    }
    fn opt_string(&self, key: &str) -> Result<Option<String>, String> {
        match self.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => v.as_str().map(|s| Some(s.to_string())).ok_or_else(|| self.bad(key, "a string or null")),
        }
    }
    fn f64(&self, key: &str) -> Result<f64, String> {
        self.get(key).and_then(Value::as_f64).ok_or_else(|| self.bad(key, "a number"))
    }
    fn opt_f64(&self, key: &str) -> Result<Option<f64>, String> {
        match self.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => v.as_f64().map(Some).ok_or_else(|| self.bad(key, "a number or null")),
        }
    }
    fn u64(&self, key: &str) -> Result<u64, String> {
        self.get(key).and_then(Value::as_u64).ok_or_else(|| self.bad(key, "a whole number"))
    }
    fn usize(&self, key: &str) -> Result<usize, String> {
        self.u64(key).and_then(|n| usize::try_from(n).map_err(|_| self.bad(key, "a whole number in range")))
    }
    fn array(&self, key: &str) -> Result<&'a Vec<Value>, String> {
        self.get(key).and_then(Value::as_array).ok_or_else(|| self.bad(key, "an array"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::RssMethod;
    use crate::report::{markdown, workload_json};
    use crate::Study;

    fn sample() -> WorkloadResult {
        // Values whose shortest decimal form is long, to catch a lossy float round trip.
        let runs = |base: u64| (0..3).map(|k| Run { rusage_rss: base + k * 4096, sampled_rss: base + 12288, wall: 0.1 + k as f64 / 3.0, user: 1e-3 / 7.0, sys: 0.0, status: 0, stderr_tail: String::new() }).collect();
        let alloc = |name: &str, lib: Option<&str>, ext: f64, base: u64| AllocatorResult {
            name: name.into(),
            library: lib.map(str::to_string),
            external: ext,
            internal: ext / 3.0,
            makespan_excess: 123_456_789,
            jobs: 4001,
            mappings: 3,
            replay_requests: 8002,
            replay_seconds: 0.012_345_678_9,
            frag_seconds: 1.0 / 3.0,
            placed_bytes: 99_999,
            series: vec![(0.5, 0.1), (1.5, 2.0 / 7.0)],
            runs: runs(base),
        };
        let mut w = WorkloadResult {
            name: "perl".into(),
            description: String::new(),
            command: vec!["perl".into(), "-e".into(), "print 'x' x 3".into()],
            traced_exe: "/usr/bin/perl".into(),
            events: 8002,
            threads: 1,
            allocators: vec![alloc("glibc", None, 0.1, 1 << 22), alloc("jemalloc", Some("/usr/lib/libjemalloc.so.2"), 0.2 / 3.0, 5 << 20), alloc("mimalloc", Some("/x/libmimalloc.so.2"), std::f64::consts::PI / 100.0, 6 << 20)],
            machine: Some(Machine { host: "w1".into(), cpu: "AMD EPYC".into(), cores: 2, memory: 24 << 30, kernel: "6.1".into(), os: "Debian".into() }),
            ..Default::default()
        };
        w.correlate(RssMethod::Rusage);
        w
    }

    #[test]
    fn a_workload_survives_the_round_trip() {
        let w = sample();
        let v = workload_json(&w, RssMethod::Rusage);
        // Through text, as it travels between machines.
        let back = workload(&serde_json::from_str(&v.to_string()).unwrap()).unwrap();
        assert_eq!(workload_json(&back, RssMethod::Rusage), v);
        assert_eq!(back.rho_external, w.rho_external);
        assert_eq!(back.allocators[2].external.to_bits(), w.allocators[2].external.to_bits());
        // The report made from the gathered result is the report of the original.
        let study = |w: WorkloadResult| Study { workloads: vec![w], runs: 3, rss_method: RssMethod::Rusage, machine: Machine::default(), date: "d".into(), version: "v".into(), invocation: "i".into() };
        assert_eq!(markdown(&study(back)), markdown(&study(w)));
    }

    #[test]
    fn a_failed_workload_and_missing_optional_fields_read_back() {
        let w = WorkloadResult { name: "sh".into(), command: vec!["sh".into()], error: Some("run 1 under glibc exited with status 3".into()), ..Default::default() };
        let mut v = workload_json(&w, RssMethod::Proc);
        assert_eq!(workload_json(&workload(&v).unwrap(), RssMethod::Proc), v);
        v.as_object_mut().unwrap().remove("machine");
        assert_eq!(workload(&v).unwrap().machine, None);
    }

    #[test]
    fn a_whole_results_file_reads_back() {
        let study = Study { workloads: vec![sample()], runs: 3, rss_method: RssMethod::Proc, machine: Machine::default(), date: "d".into(), version: "v".into(), invocation: "i".into() };
        let v = crate::report::study_json(&study);
        let parts = study_parts(&v).unwrap();
        assert_eq!((parts.runs, parts.rss), (3, RssMethod::Proc));
        assert_eq!(workload_json(&parts.workloads[0], RssMethod::Proc), v["workloads"][0]);
        let mut bad = v.clone();
        bad["workloads"][0]["allocators"][0]["jobs"] = Value::from("many");
        assert_eq!(study_parts(&bad).unwrap_err(), "workloads[0]: allocators[0].jobs: not a whole number");
    }

    #[test]
    fn studies_made_alike_are_gathered() {
        let dir = std::env::temp_dir().join(format!("heaplab-gather-test-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("rep")).unwrap();
        let study = |runs| Study { workloads: vec![sample()], runs, rss_method: RssMethod::Rusage, machine: Machine::default(), date: "d".into(), version: "v".into(), invocation: "i".into() };
        let write = |p: &std::path::Path, s: &Study| std::fs::write(p, crate::report::study_json(s).to_string()).unwrap();
        write(&dir.join("rep/results.json"), &study(3));
        write(&dir.join("b.json"), &study(3));
        write(&dir.join("c.json"), &study(5));
        let g = gather(&[dir.join("rep"), dir.join("b.json")]).unwrap();
        assert_eq!((g.workloads.len(), g.runs), (2, 3));
        let e = gather(&[dir.join("rep"), dir.join("c.json")]).unwrap_err();
        assert!(e.contains("c.json: made with 5 runs per allocator") && e.contains("only studies made alike"), "{e}");
        assert!(gather(&[dir.join("missing.json")]).unwrap_err().contains("missing.json: "));
        std::fs::write(dir.join("d.json"), "{").unwrap();
        assert!(gather(&[dir.join("d.json")]).unwrap_err().contains("d.json: not JSON"));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn bad_entries_name_the_field() {
        let v = workload_json(&sample(), RssMethod::Rusage);
        let broken = |path: &[&str], with: Option<Value>| {
            let mut v = v.clone();
            let mut at = &mut v;
            for (k, p) in path.iter().enumerate() {
                if k + 1 == path.len() {
                    match &with {
                        Some(x) => at[*p] = x.clone(),
                        None => drop(at.as_object_mut().unwrap().remove(*p)),
                    }
                    break;
                }
                at = match p.parse::<usize>() {
                    Ok(i) => &mut at[i],
                    Err(_) => &mut at[*p],
                };
            }
            workload(&v).unwrap_err()
        };
        assert_eq!(broken(&["events"], None), "workload.events: missing");
        assert_eq!(broken(&["events"], Some(Value::from(-1))), "workload.events: not a whole number");
        assert_eq!(broken(&["allocators", "1", "external"], Some(Value::from("x"))), "allocators[1].external: not a number");
        assert_eq!(broken(&["allocators", "0", "runs", "2", "status"], None), "allocators[0].runs[2].status: missing");
        assert_eq!(broken(&["spearman_external", "test"], Some(Value::from("guess"))), "spearman_external.test: unknown test \"guess\"");
        assert_eq!(workload(&Value::from(3)).unwrap_err(), "workload: not a JSON object");
    }
}
