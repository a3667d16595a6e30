//! The peak-RSS study: does an allocator's 2-D fragmentation predict its peak RSS?
//!
//! For each workload a trace is replayed under every allocator (fragmentation, by the replay
//! and frag crates) and the real program is run under every allocator several times (peak
//! RSS, [`measure`]). Spearman's ρ between fragmentation and peak RSS is computed over the
//! allocators, one point each (the replay is deterministic, so an allocator has one
//! fragmentation value; its runs measure RSS noise and are summarised by their median, with
//! their spread reported beside it), with its exact p-value ([`stats`]). [`suite`] holds the
//! ready-made workload list with generated inputs, [`report`] writes the HTML and Markdown
//! report, its PNG plots and `results.json`. [`pipeline`] is the study loop itself (tracing,
//! replaying, running, correlating), reporting its progress to the caller; [`outdir`] the
//! report's directory (checked first, installed whole) and the scratch directory. [`results`]
//! reads a workload's entry of `results.json` back, so that workloads studied one per task
//! (elsewhere, on other machines) are gathered into one report.

pub mod measure;
pub mod outdir;
pub mod pipeline;
pub mod report;
pub mod results;
pub mod stats;
pub mod suite;

use measure::{Run, RssMethod};
use stats::{Spearman, Spread};

/// What one allocator did on one workload.
#[derive(Clone, Debug, Default)]
pub struct AllocatorResult {
    /// Its name.
    pub name: String,
    /// The preloaded library (`None`: glibc).
    pub library: Option<String>,
    /// External fragmentation of its replay (F / L).
    pub external: f64,
    /// Internal fragmentation of its replay.
    pub internal: f64,
    /// Sum over mappings of makespan − max load, bytes.
    pub makespan_excess: u64,
    /// Jobs in the replay.
    pub jobs: u64,
    /// Mappings holding them.
    pub mappings: usize,
    /// Requests replayed and the replay's wall time.
    pub replay_requests: u64,
    /// Seconds the replay took.
    pub replay_seconds: f64,
    /// Seconds the fragmentation metric took.
    pub frag_seconds: f64,
    /// Size of the placed file in bytes.
    pub placed_bytes: u64,
    /// External fragmentation over time: (bucket middle on the bytes clock, ratio).
    pub series: Vec<(f64, f64)>,
    /// The measured runs of the real program.
    pub runs: Vec<Run>,
}

impl AllocatorResult {
    /// Peak RSS of each run, bytes.
    pub fn peaks(&self, m: RssMethod) -> Vec<f64> {
        self.runs.iter().map(|r| r.peak(m) as f64).collect()
    }

    /// Peak RSS over the runs: the median (the allocator's point in the correlation) and the
    /// run-to-run spread.
    pub fn rss(&self, m: RssMethod) -> Spread {
        Spread::of(&self.peaks(m))
    }
}

/// One workload's results.
#[derive(Clone, Debug, Default)]
pub struct WorkloadResult {
    /// Short name.
    pub name: String,
    /// What it does.
    pub description: String,
    /// The command line.
    pub command: Vec<String>,
    /// The process image replayed (the trace with the most events) and its event count.
    pub traced_exe: String,
    /// Events in that trace.
    pub events: u64,
    /// Threads in it.
    pub threads: u32,
    /// Per allocator.
    pub allocators: Vec<AllocatorResult>,
    /// ρ of external fragmentation and median peak RSS over the allocators (one point each).
    pub rho_external: Option<Spearman>,
    /// ρ of internal fragmentation and median peak RSS over the allocators.
    pub rho_internal: Option<Spearman>,
    /// How likely ρ (external) > [`STRONG_RHO`] would be with no association at all, for these
    /// allocators' values (exact; `None` where it cannot be enumerated).
    pub chance_strong: Option<f64>,
    /// Why the workload could not be studied, if it could not.
    pub error: Option<String>,
    /// Where it was studied (`None`: not recorded). Its runs are compared only with each
    /// other, so a study may spread its workloads over several machines.
    pub machine: Option<Machine>,
}

impl WorkloadResult {
    /// Computes the correlations from the allocators' results: one point per allocator, its
    /// median peak RSS against its fragmentation. Repeated runs are not further points: the
    /// replay gives an allocator one fragmentation value, and pairing it with each run's RSS
    /// would count the same observation R times (pseudo-replication) and shrink p without
    /// adding evidence.
    pub fn correlate(&mut self, m: RssMethod) {
        let ext: Vec<f64> = self.allocators.iter().map(|a| a.external).collect();
        let int: Vec<f64> = self.allocators.iter().map(|a| a.internal).collect();
        let rss: Vec<f64> = self.allocators.iter().map(|a| a.rss(m).median).collect();
        self.rho_external = stats::spearman(&ext, &rss);
        self.rho_internal = stats::spearman(&int, &rss);
        self.chance_strong = stats::chance_rho_above(&ext, &rss, STRONG_RHO);
    }

    /// Allocator pairs whose peak-RSS ranges over the runs overlap (their RSS order is within
    /// run-to-run noise), and all pairs.
    pub fn rss_overlaps(&self, m: RssMethod) -> (usize, usize) {
        let s: Vec<Spread> = self.allocators.iter().map(|a| a.rss(m)).collect();
        let (mut over, mut pairs) = (0, 0);
        for i in 0..s.len() {
            for j in i + 1..s.len() {
                pairs += 1;
                over += usize::from(s[i].overlaps(&s[j]));
            }
        }
        (over, pairs)
    }
}

/// The machine the study ran on.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Machine {
    /// Host name.
    pub host: String,
    /// CPU model name.
    pub cpu: String,
    /// Logical CPUs.
    pub cores: usize,
    /// Memory, bytes.
    pub memory: u64,
    /// Kernel release.
    pub kernel: String,
    /// Operating system.
    pub os: String,
}

impl Machine {
    /// Reads /proc and /etc/os-release.
    pub fn detect() -> Machine {
        let read = |p: &str| std::fs::read_to_string(p).unwrap_or_default();
        let cpu = read("/proc/cpuinfo").lines().find(|l| l.starts_with("model name")).and_then(|l| l.split(':').nth(1)).unwrap_or("unknown").trim().to_string();
        let memory = read("/proc/meminfo").lines().find(|l| l.starts_with("MemTotal:")).and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok()).unwrap_or(0) * 1024;
        let os = read("/etc/os-release").lines().find_map(|l| l.strip_prefix("PRETTY_NAME=")).unwrap_or("Linux").trim_matches('"').to_string();
        let host = read("/proc/sys/kernel/hostname").trim().to_string();
        Machine { host, cpu, cores: std::thread::available_parallelism().map_or(1, |n| n.get()), memory, kernel: read("/proc/sys/kernel/osrelease").trim().to_string(), os }
    }

    /// One line for reports.
    pub fn describe(&self) -> String {
        format!("{}, {} logical CPUs, {:.0} GiB, {}, Linux {}", self.cpu, self.cores, self.memory as f64 / (1u64 << 30) as f64, self.os, self.kernel)
    }
}

/// A whole study.
#[derive(Clone, Debug)]
pub struct Study {
    /// The workloads.
    pub workloads: Vec<WorkloadResult>,
    /// Runs per allocator.
    pub runs: usize,
    /// Which RSS figure was used.
    pub rss_method: RssMethod,
    /// Where it ran.
    pub machine: Machine,
    /// When (UTC, "YYYY-MM-DD HH:MM").
    pub date: String,
    /// heaplab's version.
    pub version: String,
    /// How it was invoked.
    pub invocation: String,
}

/// The threshold of a "strong" monotonic relation used by the paper.
pub const STRONG_RHO: f64 = 0.65;

impl Study {
    /// The study of `workloads` made with `runs` runs per allocator and `rss_method`, dated
    /// now, on the machine every workload was studied on (when they all were on one; otherwise
    /// this machine, and the report names each workload's own). Workloads of the same name
    /// (gathered from several places) are told apart by a suffix (`perl`, `perl-2`): the
    /// report's files are named after them.
    pub fn new(mut workloads: Vec<WorkloadResult>, runs: usize, rss_method: RssMethod, invocation: String) -> Study {
        let mut seen = std::collections::HashSet::new();
        for w in &mut workloads {
            let base = w.name.clone();
            let mut k = 1;
            while !seen.insert(report::slug(&w.name)) {
                k += 1;
                w.name = format!("{base}-{k}");
            }
        }
        let first = workloads.first().and_then(|w| w.machine.clone());
        let machine = match first {
            Some(m) if workloads.iter().all(|w| w.machine.as_ref() == Some(&m)) => m,
            _ => Machine::detect(),
        };
        Study { workloads, runs, rss_method, machine, date: utc_now(), version: env!("CARGO_PKG_VERSION").to_string(), invocation }
    }

    /// Workloads with ρ (external) above [`STRONG_RHO`], and workloads with a ρ at all.
    pub fn strong(&self) -> (usize, usize) {
        let with: Vec<f64> = self.workloads.iter().filter_map(|w| w.rho_external.map(|s| s.rho)).collect();
        (with.iter().filter(|&&r| r > STRONG_RHO).count(), with.len())
    }

    /// How many workloads would show ρ (external) > [`STRONG_RHO`] with no association at all
    /// (the sum of their chances), when every workload's chance is known.
    pub fn strong_by_chance(&self) -> Option<f64> {
        let w: Vec<&WorkloadResult> = self.workloads.iter().filter(|w| w.rho_external.is_some()).collect();
        w.iter().map(|w| w.chance_strong).sum()
    }
}

/// The current time as "YYYY-MM-DD HH:MM" UTC.
pub fn utc_now() -> String {
    let secs = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs()) as i64;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02} {:02}:{:02} UTC", rem / 3600, rem % 3600 / 60)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn allocator(name: &str, external: f64, peaks: &[u64]) -> AllocatorResult {
        let runs = peaks.iter().map(|&p| Run { rusage_rss: p, ..Default::default() }).collect();
        AllocatorResult { name: name.into(), external, internal: external / 2.0, runs, ..Default::default() }
    }

    /// Gathered workloads of one name get distinct names (the report's files are named after
    /// them), and the study's machine is theirs when they share one.
    #[test]
    fn a_gathered_study_names_workloads_apart() {
        let m = Machine { host: "w1".into(), ..Default::default() };
        let w = |name: &str| WorkloadResult { name: name.into(), machine: Some(m.clone()), ..Default::default() };
        let s = Study::new(vec![w("perl"), w("perl"), w("perl-2"), w("a b"), w("a_b")], 2, RssMethod::Rusage, String::new());
        let names: Vec<&str> = s.workloads.iter().map(|w| w.name.as_str()).collect();
        assert_eq!(names, ["perl", "perl-2", "perl-2-2", "a b", "a_b-2"]);
        assert_eq!(s.machine, m);
        let mut other = w("x");
        other.machine = Some(Machine { host: "w2".into(), ..Default::default() });
        assert_eq!(Study::new(vec![w("perl"), other], 2, RssMethod::Rusage, String::new()).machine, Machine::detect());
    }

    /// 4 allocators × 3 runs in a perfect order: 4 points, exact p = 2/4! = 1/12, not the
    /// p < 0.001 that 12 pseudo-replicated pairs would claim.
    #[test]
    fn correlation_has_one_point_per_allocator() {
        let mut w = WorkloadResult {
            allocators: vec![
                allocator("a", 0.01, &[100, 101, 99]),
                allocator("b", 0.02, &[110, 112, 111]),
                allocator("c", 0.03, &[120, 119, 125]),
                allocator("d", 0.04, &[130, 131, 129]),
            ],
            ..Default::default()
        };
        w.correlate(RssMethod::Rusage);
        let s = w.rho_external.unwrap();
        assert_eq!((s.n, s.rho, s.test), (4, 1.0, stats::PTest::Exact));
        assert!((s.p - 1.0 / 12.0).abs() < 1e-15 && (s.p_min - 1.0 / 12.0).abs() < 1e-15, "{s:?}");
        assert!((w.chance_strong.unwrap() - 1.0 / 6.0).abs() < 1e-15);
        assert_eq!(w.rss_overlaps(RssMethod::Rusage), (0, 6));
        // The median, not the mean, is the allocator's point: one outlier run does not move it.
        w.allocators[0].runs.push(Run { rusage_rss: 1000, ..Default::default() });
        w.allocators[0].runs.push(Run { rusage_rss: 100, ..Default::default() });
        w.correlate(RssMethod::Rusage);
        assert_eq!(w.rho_external.unwrap().rho, 1.0);
        assert_eq!(w.rss_overlaps(RssMethod::Rusage), (3, 6));
        let study = Study { workloads: vec![w.clone(), w], runs: 3, rss_method: RssMethod::Rusage, machine: Machine::default(), date: String::new(), version: String::new(), invocation: String::new() };
        assert_eq!(study.strong(), (2, 2));
        assert!((study.strong_by_chance().unwrap() - 2.0 / 6.0).abs() < 1e-15);
    }
}
