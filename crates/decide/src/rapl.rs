//! Energy from RAPL through the kernel's powercap interface: the package domains
//! (`ROOT/intel-rapl:N`) and their `core` and `dram` subdomains (`ROOT/intel-rapl:N:M`, named by
//! their `name` file), each an `energy_uj` counter that wraps at `max_energy_range_uj`. The
//! counters are machine-wide: a reading over one run includes whatever else the machine did.
//! The root is a parameter so that the reading is tested against a fixture tree.

use std::path::{Path, PathBuf};

/// The usual powercap root.
pub const POWERCAP_ROOT: &str = "/sys/class/powercap";

/// One RAPL counter.
#[derive(Clone, Debug, PartialEq)]
pub struct Domain {
    /// The metric it feeds: `energy-pkg`, `energy-core` or `energy-dram` (sockets summed).
    pub metric: String,
    /// The counter file.
    pub energy_file: PathBuf,
    /// Where the counter wraps, microjoules.
    pub max_range_uj: u64,
}

/// The readable RAPL counters of a machine.
#[derive(Clone, Debug, PartialEq)]
pub struct Rapl {
    /// The counters, package domains first.
    pub domains: Vec<Domain>,
}

/// One reading of every counter, microjoules, in [`Rapl::domains`] order.
#[derive(Clone, Debug, PartialEq)]
pub struct Reading(pub Vec<u64>);

fn read_u64(p: &Path) -> Result<u64, String> {
    let t = std::fs::read_to_string(p).map_err(|e| format!("{}: {e}", p.display()))?;
    t.trim().parse().map_err(|_| format!("{}: not a counter: '{}'", p.display(), t.trim()))
}

impl Rapl {
    /// Finds the package, core and DRAM domains under `root`; fails, saying why, when there are
    /// none or their counters cannot be read (on most kernels `energy_uj` is readable by root
    /// only).
    pub fn open(root: &Path) -> Result<Rapl, String> {
        let entries = std::fs::read_dir(root).map_err(|e| format!("{}: {e}", root.display()))?;
        let mut zones: Vec<PathBuf> = entries.flatten().map(|e| e.path()).filter(|p| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("intel-rapl:"))).collect();
        zones.sort();
        let mut domains = Vec::new();
        for z in &zones {
            let name = std::fs::read_to_string(z.join("name")).unwrap_or_default();
            let name = name.trim();
            let depth = z.file_name().map_or(0, |n| n.to_string_lossy().matches(':').count());
            let metric = match (depth, name) {
                (1, _) if name.starts_with("package") => "energy-pkg",
                (2, "core") => "energy-core",
                (2, "dram") => "energy-dram",
                (1, "dram") => "energy-dram",
                _ => continue,
            };
            let energy_file = z.join("energy_uj");
            read_u64(&energy_file)?;
            let max_range_uj = read_u64(&z.join("max_energy_range_uj"))?;
            domains.push(Domain { metric: metric.to_string(), energy_file, max_range_uj });
        }
        if domains.is_empty() {
            return Err(format!("no RAPL package, core or DRAM domain under {}", root.display()));
        }
        domains.sort_by_key(|d| ["energy-pkg", "energy-core", "energy-dram"].iter().position(|m| *m == d.metric));
        Ok(Rapl { domains })
    }

    /// The metrics these counters give, in order, each once.
    pub fn metrics(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for d in &self.domains {
            if !out.contains(&d.metric) {
                out.push(d.metric.clone());
            }
        }
        out
    }

    /// Reads every counter.
    pub fn read(&self) -> Result<Reading, String> {
        self.domains.iter().map(|d| read_u64(&d.energy_file)).collect::<Result<_, _>>().map(Reading)
    }

    /// Joules per metric between two readings (in [`Rapl::metrics`] order), a counter that
    /// passed its maximum counted as wrapped once.
    pub fn joules(&self, before: &Reading, after: &Reading) -> Vec<(String, f64)> {
        let mut out: Vec<(String, f64)> = self.metrics().into_iter().map(|m| (m, 0.0)).collect();
        for (k, d) in self.domains.iter().enumerate() {
            let (b, a) = (before.0[k], after.0[k]);
            let delta = if a >= b { a - b } else { d.max_range_uj.saturating_sub(b) + a };
            if let Some(slot) = out.iter_mut().find(|(m, _)| *m == d.metric) {
                slot.1 += delta as f64 / 1e6;
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn zone(root: &Path, dir: &str, name: &str, energy: u64, max: u64) {
        let z = root.join(dir);
        std::fs::create_dir_all(&z).unwrap();
        std::fs::write(z.join("name"), format!("{name}\n")).unwrap();
        std::fs::write(z.join("energy_uj"), format!("{energy}\n")).unwrap();
        std::fs::write(z.join("max_energy_range_uj"), format!("{max}\n")).unwrap();
    }

    fn fixture(tag: &str) -> PathBuf {
        let root = std::env::temp_dir().join(format!("heaplab-rapl-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(&root).unwrap();
        root
    }

    #[test]
    fn reads_domains_and_wraps() {
        // Two sockets: packages with core and dram subdomains, an uncore one (ignored), and a
        // psys zone and a non-RAPL zone (ignored), laid out as the kernel does.
        let root = fixture("two");
        zone(&root, "intel-rapl:0", "package-0", 1_000_000, 262_143_328_850);
        zone(&root, "intel-rapl:0:0", "core", 500_000, 262_143_328_850);
        zone(&root, "intel-rapl:0:1", "dram", 100_000, 65_712_999_613);
        zone(&root, "intel-rapl:0:2", "uncore", 7, 262_143_328_850);
        zone(&root, "intel-rapl:1", "package-1", 2_000_000, 262_143_328_850);
        zone(&root, "intel-rapl:1:0", "core", 262_143_000_000, 262_143_328_850);
        zone(&root, "intel-rapl:2", "psys", 1, 262_143_328_850);
        zone(&root, "dtpm", "dtpm", 1, 2);
        let r = Rapl::open(&root).unwrap();
        assert_eq!(r.metrics(), ["energy-pkg", "energy-core", "energy-dram"]);
        assert_eq!(r.domains.len(), 5);
        let before = r.read().unwrap();
        // 1.5 J and 2.5 J on the packages; core 0 +0.25 J, core 1 wraps (328 850 µJ to the top,
        // then 171 150 µJ: 0.5 J); dram +0.125 J.
        std::fs::write(root.join("intel-rapl:0/energy_uj"), "2500000").unwrap();
        std::fs::write(root.join("intel-rapl:1/energy_uj"), "4500000").unwrap();
        std::fs::write(root.join("intel-rapl:0:0/energy_uj"), "750000").unwrap();
        std::fs::write(root.join("intel-rapl:1:0/energy_uj"), "171150").unwrap();
        std::fs::write(root.join("intel-rapl:0:1/energy_uj"), "225000").unwrap();
        let after = r.read().unwrap();
        let j = r.joules(&before, &after);
        let get = |m: &str| j.iter().find(|(n, _)| n == m).unwrap().1;
        assert!((get("energy-pkg") - 4.0).abs() < 1e-9, "{j:?}");
        assert!((get("energy-core") - 0.75).abs() < 1e-9, "{j:?}");
        assert!((get("energy-dram") - 0.125).abs() < 1e-9, "{j:?}");
        let _ = std::fs::remove_dir_all(&root);
    }

    #[test]
    fn says_why_it_is_not_available() {
        let root = fixture("none");
        let e = Rapl::open(&root.join("missing")).unwrap_err();
        assert!(e.contains("missing"), "{e}");
        let e = Rapl::open(&root).unwrap_err();
        assert!(e.contains("no RAPL package"), "{e}");
        zone(&root, "intel-rapl:0", "package-0", 1, 10);
        std::fs::write(root.join("intel-rapl:0/energy_uj"), "garbage").unwrap();
        let e = Rapl::open(&root).unwrap_err();
        assert!(e.contains("energy_uj") && e.contains("not a counter"), "{e}");
        let _ = std::fs::remove_dir_all(&root);
    }
}
