//! The peak-RSS study: does an allocator's 2-D fragmentation predict its peak RSS?
//!
//! For each workload a trace is replayed under every allocator (fragmentation, by the replay
//! and frag crates) and the real program is run under every allocator several times (peak
//! RSS, [`measure`]); Spearman's ρ between fragmentation and peak RSS over allocators × runs,
//! with its p-value ([`stats`]), says whether the relation is monotonic. [`suite`] holds the
//! ready-made workload list with generated inputs, [`report`] writes the HTML and Markdown
//! report, its PNG plots and `results.json`. The orchestration (tracing, replaying, running)
//! is the CLI's `heaplab study`.

pub mod measure;
pub mod report;
pub mod stats;
pub mod suite;

use measure::{Run, RssMethod};
use stats::Spearman;

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
    /// ρ of external fragmentation and peak RSS over allocators × runs.
    pub rho_external: Option<Spearman>,
    /// ρ of internal fragmentation and peak RSS.
    pub rho_internal: Option<Spearman>,
    /// Why the workload could not be studied, if it could not.
    pub error: Option<String>,
}

impl WorkloadResult {
    /// Computes the correlations from the allocators' results.
    pub fn correlate(&mut self, m: RssMethod) {
        let (mut ext, mut int, mut rss) = (Vec::new(), Vec::new(), Vec::new());
        for a in &self.allocators {
            for p in a.peaks(m) {
                ext.push(a.external);
                int.push(a.internal);
                rss.push(p);
            }
        }
        self.rho_external = stats::spearman(&ext, &rss);
        self.rho_internal = stats::spearman(&int, &rss);
    }
}

/// The machine the study ran on.
#[derive(Clone, Debug, Default)]
pub struct Machine {
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
        Machine { cpu, cores: std::thread::available_parallelism().map_or(1, |n| n.get()), memory, kernel: read("/proc/sys/kernel/osrelease").trim().to_string(), os }
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
    /// Workloads with ρ (external) above [`STRONG_RHO`], and workloads with a ρ at all.
    pub fn strong(&self) -> (usize, usize) {
        let with: Vec<f64> = self.workloads.iter().filter_map(|w| w.rho_external.map(|s| s.rho)).collect();
        (with.iter().filter(|&&r| r > STRONG_RHO).count(), with.len())
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
