//! The range of every numeric flag, in one place: each is a constant here, parsed by clap with
//! [`Whole::parser`] or [`Seconds::parser`] (so a value beyond it is a usage error, exit 2,
//! before any work) and shown in `--help` by [`Whole::help`] / [`Seconds::help`] from the same
//! constant. Ranges are generous but safe: the work and memory a flag can ask for stay within
//! what a 16-24 GiB machine gives (a value that would panic, abort or exhaust memory is refused
//! with the range instead).

/// A whole number in `lo..=hi`, optionally a power of two.
#[derive(Clone, Copy, Debug)]
pub struct Whole {
    /// Smallest accepted value.
    pub lo: u64,
    /// Largest accepted value.
    pub hi: u64,
    /// Only powers of two.
    pub power_of_two: bool,
}

/// Any 64-bit seed.
pub const SEED: Whole = Whole::new(0, u64::MAX);
/// `plan --iterations`: boxing iterations per component (the time limit stops them sooner).
pub const ITERATIONS: Whole = Whole::new(1, 1_000_000_000);
/// `plan --thread` / `convert --thread`: a thread id.
pub const THREAD: Whole = Whole::new(0, u32::MAX as u64);
/// `gen --buffers`: 10^8 buffers take about 5 GB in memory (48 bytes each) and a few GB on disk.
pub const GEN_BUFFERS: Whole = Whole::new(0, 100_000_000);
/// `frag --buckets`: the metric's range ([`heaplab_frag::MAX_BUCKETS`]).
pub const FRAG_BUCKETS: Whole = Whole::new(0, heaplab_frag::MAX_BUCKETS as u64);
/// `frag --page-size`: a power of two up to the metric's largest ([`heaplab_frag::MAX_PAGE_SIZE`]).
pub const PAGE_SIZE: Whole = Whole { lo: 1, hi: heaplab_frag::MAX_PAGE_SIZE, power_of_two: true };
/// `trace --stack-depth`: frames recorded per call site (the tracer's limit).
pub const STACK_DEPTH: Whole = Whole::new(0, 64);
/// `study --runs`: runs of the real program per allocator.
pub const STUDY_RUNS: Whole = Whole::new(1, 1_000);
/// `compare --runs`: measured runs per configuration and workload (a rank test needs 2).
pub const COMPARE_RUNS: Whole = Whole::new(2, 100_000);
/// `compare --warmup`: warm-up runs per configuration and workload.
pub const COMPARE_WARMUP: Whole = Whole::new(0, 1_000);
/// `study --suite-scale`: the suite's input sizes are divided by this.
pub const SUITE_SCALE: Whole = Whole::new(1, 1_000_000);
/// `study --timeout`: seconds before a run is killed (one week at most).
pub const STUDY_TIMEOUT: Whole = Whole::new(1, WEEK as u64);
/// `access --stack-depth`: frames per allocation context (the valgrind tool's limit).
pub const ACCESS_STACK_DEPTH: Whole = Whole::new(1, heaplab_access::run::MAX_STACK_DEPTH as u64);
/// `access --affinity-distance`: bytes (the tool's queue holds one entry per byte).
pub const AFFINITY_DISTANCE: Whole = Whole::new(1, heaplab_access::run::MAX_AFFINITY);
/// `access --max-edges`: edges held per graph (16 bytes each at twice that many slots).
pub const ACCESS_MAX_EDGES: Whole = Whole::new(1024, 1 << 28);
/// `access --max-grouped-size`: bytes (the tool's bound).
pub const MAX_GROUPED_SIZE: Whole = Whole::new(1, heaplab_access::run::MAX_GROUPED_LIMIT);
/// `plan --time-limit`: seconds, fractions allowed (one week at most: the planner's
/// [`heaplab_plan::MAX_TIME_LIMIT_SECS`]).
pub const TIME_LIMIT: Seconds = Seconds { max: heaplab_plan::MAX_TIME_LIMIT_SECS };
/// `group --max-object-size`: bytes (at most half the largest chunk).
pub const MAX_OBJECT_SIZE: Whole = Whole::new(1, heaplab_group::MAX_CHUNK_SIZE / 2);
/// `group --chunk-size`: bytes, a power of two.
pub const CHUNK_SIZE: Whole = Whole { lo: heaplab_group::MIN_CHUNK_SIZE, hi: heaplab_group::MAX_CHUNK_SIZE, power_of_two: true };
/// `group --spare-chunks`.
pub const SPARE_CHUNKS: Whole = Whole::new(0, heaplab_group::MAX_SPARE_CHUNKS as u64);
/// `group --max-group-members` (0: no limit).
pub const GROUP_MEMBERS: Whole = Whole::new(0, u32::MAX as u64);
/// `group --min-weight`.
pub const MIN_WEIGHT: Whole = Whole::new(1, u64::MAX);

/// One week in seconds, the longest any time flag may ask for: the planner's limit.
const WEEK: f64 = heaplab_plan::MAX_TIME_LIMIT_SECS;

impl Whole {
    /// The range `lo..=hi`.
    pub const fn new(lo: u64, hi: u64) -> Whole {
        Whole { lo, hi, power_of_two: false }
    }

    /// `text` with the range appended, for `--help`.
    pub fn help(self, text: &str) -> String {
        format!("{text} [range: {}]", self.range())
    }

    fn range(self) -> String {
        let end = |v: u64| if v == u64::MAX { "2^64-1".to_string() } else { heaplab_model::units::grouped(v) };
        let pow = if self.power_of_two { "a power of two " } else { "" };
        format!("{pow}{} to {}", end(self.lo), end(self.hi))
    }

    /// Parses a decimal whole number in the range; the error names the range.
    pub fn parse(self, text: &str) -> Result<u64, String> {
        let t = text.trim();
        let out = || format!("expected {}", self.range());
        if t.is_empty() || !t.bytes().all(|b| b.is_ascii_digit()) {
            return Err(format!("not a whole number; {}", out()));
        }
        let v = t.parse::<u64>().map_err(|_| format!("too large; {}", out()))?;
        if v < self.lo || v > self.hi {
            return Err(format!("out of range; {}", out()));
        }
        if self.power_of_two && !v.is_power_of_two() {
            return Err(format!("not a power of two; {}", out()));
        }
        Ok(v)
    }

    /// A clap value parser for a field of type `T` (`u64`, `usize`, `u32`).
    pub fn parser<T: TryFrom<u64> + Clone + Send + Sync + 'static>(self) -> impl Fn(&str) -> Result<T, String> + Clone + Send + Sync + 'static {
        move |s: &str| self.parse(s).and_then(|v| T::try_from(v).map_err(|_| format!("too large for this machine; expected {}", self.range())))
    }
}

/// A number of seconds in `0..=max`, fractions allowed.
#[derive(Clone, Copy, Debug)]
pub struct Seconds {
    /// Largest accepted value.
    pub max: f64,
}

impl Seconds {
    /// `text` with the range appended, for `--help`.
    pub fn help(self, text: &str) -> String {
        format!("{text} [range: 0 to {} seconds]", heaplab_model::units::grouped(self.max as u64))
    }

    /// Parses seconds in the range; the error names the range.
    pub fn parse(self, text: &str) -> Result<f64, String> {
        let out = || format!("expected 0 to {} seconds", heaplab_model::units::grouped(self.max as u64));
        let v: f64 = text.trim().parse().map_err(|_| format!("not a number; {}", out()))?;
        if !(v.is_finite() && (0.0..=self.max).contains(&v)) {
            return Err(format!("out of range; {}", out()));
        }
        Ok(v)
    }

    /// A clap value parser.
    pub fn parser(self) -> impl Fn(&str) -> Result<f64, String> + Clone + Send + Sync + 'static {
        move |s: &str| self.parse(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_beyond_a_range_are_refused_with_it() {
        assert_eq!(FRAG_BUCKETS.parse("100000"), Ok(100_000));
        assert!(FRAG_BUCKETS.parse("100001").unwrap_err().contains("0 to 100,000"));
        assert!(FRAG_BUCKETS.parse("18446744073709551616").unwrap_err().contains("too large"));
        assert!(FRAG_BUCKETS.parse("1e9").unwrap_err().contains("not a whole number"));
        assert!(FRAG_BUCKETS.parse("-1").is_err());
        assert_eq!(SEED.parse("18446744073709551615"), Ok(u64::MAX));
        assert!(PAGE_SIZE.parse("3").unwrap_err().contains("power of two"));
        assert!(PAGE_SIZE.parse("0").is_err());
        assert_eq!(TIME_LIMIT.parse("0.5"), Ok(0.5));
        for bad in ["1e308", "18446744073709551616", "inf", "NaN", "-1", "604800.1", "x"] {
            assert!(TIME_LIMIT.parse(bad).is_err(), "{bad}");
        }
        assert!(STUDY_RUNS.help("Runs.").ends_with("[range: 1 to 1,000]"));
    }
}
