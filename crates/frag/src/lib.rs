//! Fragmentation of an allocator's placement, measured in the 2-D (time × address) plane as
//! defined by equation 3.1 of the thesis (`../shared/papers/000_…`, Ch. 3) and equation 1 of
//! the paper "Viewing allocators as bin packing solvers" (`003_…`):
//!
//! F = Σ_mappings F_m / Σ_mappings L_m, where F_m sums, for every span between consecutive
//! events and every virtual page holding a live block of mapping m, the bytes of that page left
//! unused below the highest live block of the page, times the span's length; L_m is the total
//! job area (usable size × lifetime) of mapping m.
//!
//! The choices the papers leave open, made here (and printed by `heaplab frag --help`):
//! - **Time** is the trace's allocated-bytes clock (each allocation advances it by its requested
//!   size, at least 1; frees take no time). A span is the interval between two consecutive
//!   distinct event times; a job is live on `[start, end)`; at equal times releases come first.
//! - **Pages** are the aligned `[k·P, (k+1)·P)` ranges of absolute virtual addresses, P the page
//!   size of the replaying machine (mappings start on page boundaries, so this is the same as
//!   counting from each mapping's start).
//! - **Blocks crossing pages** count in every page they touch, clipped to it: the page where
//!   a block starts is covered from the block's start to the page's end, so the block is that
//!   page's ceiling; the pages it covers completely have no gap; the page where it ends is
//!   covered from its start to the block's end. A gap never crosses a page boundary.
//! - **Block extent** is the usable size (malloc_usable_size): the allocator's headers between
//!   blocks count as external fragmentation, the usable bytes beyond the request as internal.
//! - **Internal** fragmentation is Σ (usable − requested) × lifetime, over the same
//!   denominator L (the allocated area), so external + internal are parts of one scale.
//! - A page's gap is attributed to the mapping of the block that forms its ceiling.
//!
//! Per mapping the simpler measure of the thesis' chapter 4 is reported too: makespan (highest
//! block end − lowest block start in the mapping) minus max load (peak live usable bytes).
//!
//! The computation is one event sweep with per-page bookkeeping: an ordered map of live blocks
//! answers "highest live block below this page's end" in O(log n), a hash map holds each
//! touched page's covered bytes and current gap, and each event updates at most the two pages
//! where its block starts and ends. O(n log n) for n jobs.
//!
//! [`measure`] is what front ends (`heaplab frag`, the Python `heaplab.frag`) call: a placed
//! file read and measured, with the page size it defaults to ([`DEFAULT_PAGE_SIZE`]) and the
//! ranges its options accept ([`MAX_PAGE_SIZE`], [`MAX_BUCKETS`]).

use heaplab_model::InputError;
use heaplab_replay::{placed, Job, Placed};
use heaplab_trace::stats::AddressMap;
use std::collections::BTreeMap;

/// Options of the computation.
#[derive(Clone, Copy, Debug)]
pub struct FragOptions {
    /// Page size in bytes (a power of two).
    pub page_size: u64,
    /// Buckets of the fragmentation-over-time series (0: no series).
    pub buckets: usize,
}

/// The page size when none is asked for and the input records none (a placed CSV file; a
/// binary one records the replaying machine's): 4 KiB.
pub const DEFAULT_PAGE_SIZE: u64 = 4096;
/// The largest page size accepted (a power of two from 1 up to this): 1 GiB, the largest huge
/// page.
pub const MAX_PAGE_SIZE: u64 = 1 << 30;
/// The most buckets of the series over time: each is 64 bytes, and about 2 KB while a front end
/// builds its JSON of it, so 10^5 buckets stay near 200 MB.
pub const MAX_BUCKETS: usize = 100_000;

impl Default for FragOptions {
    fn default() -> Self {
        FragOptions { page_size: DEFAULT_PAGE_SIZE, buckets: 100 }
    }
}

/// Areas (bytes × clock ticks) of one mapping or of the whole placement.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Areas {
    /// Σ usable × lifetime: the denominator L.
    pub jobs: u128,
    /// Unused bytes below each page's highest live block, × time: F.
    pub external: u128,
    /// Σ (usable − requested) × lifetime.
    pub internal: u128,
}

impl Areas {
    /// External fragmentation F / L (0 when there are no jobs).
    pub fn external_ratio(&self) -> f64 {
        ratio(self.external, self.jobs)
    }
    /// Internal fragmentation / L.
    pub fn internal_ratio(&self) -> f64 {
        ratio(self.internal, self.jobs)
    }
    fn add(&mut self, o: &Areas) {
        self.jobs += o.jobs;
        self.external += o.external;
        self.internal += o.internal;
    }
}

fn ratio(a: u128, b: u128) -> f64 {
    if b == 0 {
        0.0
    } else {
        a as f64 / b as f64
    }
}

/// The figures of one mapping.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MappingFrag {
    /// Jobs in the mapping.
    pub jobs: u64,
    /// Its areas.
    pub areas: Areas,
    /// Highest block end − lowest block start, bytes.
    pub makespan: u64,
    /// Peak of the live usable bytes.
    pub max_load: u64,
}

/// One bucket of the series: the areas accumulated over `[t0, t1)`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Bucket {
    /// Start of the bucket (clock).
    pub t0: u64,
    /// End of the bucket (clock, exclusive).
    pub t1: u64,
    /// The areas inside the bucket.
    pub areas: Areas,
}

/// The result: totals, per mapping (in the placed file's mapping order) and over time.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Frag {
    /// Over all mappings.
    pub total: Areas,
    /// Per mapping.
    pub mappings: Vec<MappingFrag>,
    /// Over time, when asked for.
    pub series: Vec<Bucket>,
    /// Clock value of the last event.
    pub end_time: u64,
    /// Jobs with a usable size of 0, which cover nothing and are left out.
    pub empty_jobs: u64,
    /// Peak bytes of the distinct pages touched by live blocks (usable sizes): the heap's
    /// resident size as far as its blocks show it, the measure the trace's statistics give
    /// the traced allocator (`peak_pages_bytes`).
    pub peak_pages_bytes: u64,
}

impl Frag {
    /// External fragmentation over time: (bucket middle on the clock, ratio) for every bucket
    /// with live jobs.
    pub fn external_series(&self) -> Vec<(f64, f64)> {
        self.series.iter().filter(|b| b.areas.jobs > 0).map(|b| ((b.t0 + b.t1) as f64 / 2.0, b.areas.external_ratio())).collect()
    }
}

/// Two jobs whose blocks overlap while both are live (the validity rule of
/// [`heaplab_replay::placed::first_overlap`], checked here inside the sweep rather than in a
/// second pass).
pub use heaplab_replay::placed::Overlap;

/// A rate (bytes) integrated over time.
struct Integrator {
    rate: u64,
    last: u64,
}

impl Integrator {
    fn new() -> Integrator {
        Integrator { rate: 0, last: 0 }
    }
    /// Accumulates the current rate up to `t` into `total`.
    fn advance(&mut self, t: u64, total: &mut u128) {
        if t > self.last {
            *total += self.rate as u128 * (t - self.last) as u128;
            self.last = t;
        }
    }
}

/// The series: `n` equal buckets over `[0, end)`, fed with the total external gap, live
/// usable bytes and internal bytes, each constant between events.
struct Series {
    end: u64,
    buckets: Vec<Bucket>,
    last: u64,
    rates: Areas,
}

impl Series {
    fn new(end: u64, n: usize) -> Series {
        let end = end.max(1);
        let bound = |k: usize| ((end as u128 * k as u128) / n.max(1) as u128) as u64;
        let buckets = (0..n).map(|k| Bucket { t0: bound(k), t1: bound(k + 1), ..Default::default() }).collect();
        Series { end, buckets, last: 0, rates: Areas::default() }
    }
    /// Adds the current rates × the overlap of `[last, t)` with each bucket.
    fn advance(&mut self, t: u64) {
        let n = self.buckets.len();
        if n == 0 || t <= self.last {
            return;
        }
        let mut k = (((self.last as u128 * n as u128) / self.end as u128) as usize).min(n - 1);
        let mut at = self.last;
        while at < t && k < n {
            let hi = if k + 1 == n { u64::MAX } else { self.buckets[k].t1 };
            let e = t.min(hi);
            if e > at {
                let d = (e - at) as u128;
                let b = &mut self.buckets[k].areas;
                b.external += self.rates.external * d;
                b.jobs += self.rates.jobs * d;
                b.internal += self.rates.internal * d;
            }
            at = e;
            k += 1;
        }
        self.last = t;
    }
}

/// A page being tracked: bytes covered by live blocks, its current gap and the mapping it is
/// charged to.
#[derive(Clone, Copy, Default)]
struct Page {
    covered: u64,
    gap: u64,
    mapping: u32,
}

/// Computes the fragmentation of `placed` (see the crate documentation for the definition).
pub fn fragmentation(placed: &Placed, opts: &FragOptions) -> Result<Frag, Overlap> {
    compute(&placed.jobs, placed.mappings.len(), opts)
}

/// A placed file's fragmentation, as [`measure`] gives it.
pub struct Measured {
    /// The placed file as read.
    pub placed: Placed,
    /// Its fragmentation.
    pub frag: Frag,
    /// The page size used: the one asked for, else the file's ([`DEFAULT_PAGE_SIZE`] for CSV).
    pub page_size: u64,
    /// Wall seconds the metric took (reading the file excluded).
    pub seconds: f64,
    /// CPU seconds the metric took on its thread (other jobs on a shared machine slow its wall
    /// time, not this).
    pub cpu_seconds: f64,
}

/// Why [`measure`] failed.
#[derive(Debug)]
pub enum MeasureError {
    /// The file could not be read as a placed file.
    Read(InputError),
    /// Two jobs overlap while both are live: the placement is invalid.
    Overlap {
        /// The file's name.
        file: String,
        /// The jobs and when.
        overlap: Overlap,
    },
}

impl std::fmt::Display for MeasureError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MeasureError::Read(e) => write!(f, "{e}"),
            MeasureError::Overlap { file, overlap } => write!(f, "{file}: {overlap}"),
        }
    }
}

impl std::error::Error for MeasureError {}

/// Reads the placed file at `path` and measures its fragmentation with `page_size` (by default
/// the file's: [`DEFAULT_PAGE_SIZE`] for CSV) and `buckets` in the series over time. Callers
/// check both against their ranges first (a power of two up to [`MAX_PAGE_SIZE`]; at most
/// [`MAX_BUCKETS`]), naming their own option in the message.
pub fn measure(path: &str, page_size: Option<u64>, buckets: usize) -> Result<Measured, MeasureError> {
    let csv_page = page_size.unwrap_or(DEFAULT_PAGE_SIZE);
    let csv_page = u32::try_from(csv_page).map_err(|_| {
        MeasureError::Read(InputError::file(path, heaplab_model::InputErrorKind::Value, format!("page size {csv_page}: at most {MAX_PAGE_SIZE}")))
    })?;
    let placed = placed::read(path, csv_page).map_err(MeasureError::Read)?;
    let opts = FragOptions { page_size: page_size.unwrap_or(placed.meta.page_size as u64), buckets };
    let (t0, c0) = (std::time::Instant::now(), thread_cpu());
    let frag = fragmentation(&placed, &opts).map_err(|overlap| MeasureError::Overlap { file: path.to_string(), overlap })?;
    let (seconds, cpu_seconds) = (t0.elapsed().as_secs_f64(), thread_cpu() - c0);
    Ok(Measured { placed, frag, page_size: opts.page_size, seconds, cpu_seconds })
}

/// CPU seconds this thread has used (the metric runs on one thread).
fn thread_cpu() -> f64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes the struct we pass.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 / 1e9
}

/// Computes the fragmentation of `jobs`, whose `mapping` fields index `mappings` mappings.
pub fn compute(jobs: &[Job], mappings: usize, opts: &FragOptions) -> Result<Frag, Overlap> {
    let page = opts.page_size.max(1).next_power_of_two();
    let shift = page.trailing_zeros();
    let nmaps = mappings.max(jobs.iter().map(|j| j.mapping as usize + 1).max().unwrap_or(0));
    let mut out = Frag { mappings: vec![MappingFrag::default(); nmaps], ..Default::default() };

    // Job areas, internal areas, makespans: per job, no sweep needed.
    let mut lo = vec![u64::MAX; nmaps];
    let mut hi = vec![0u64; nmaps];
    let mut order_start: Vec<u32> = Vec::with_capacity(jobs.len());
    for (k, j) in jobs.iter().enumerate() {
        let m = &mut out.mappings[j.mapping as usize];
        m.jobs += 1;
        let life = (j.end - j.start) as u128;
        m.areas.jobs += j.usable as u128 * life;
        m.areas.internal += (j.usable - j.requested.min(j.usable)) as u128 * life;
        if j.usable == 0 {
            out.empty_jobs += 1;
            continue;
        }
        lo[j.mapping as usize] = lo[j.mapping as usize].min(j.address);
        hi[j.mapping as usize] = hi[j.mapping as usize].max(j.address.saturating_add(j.usable));
        order_start.push(k as u32);
    }
    for (m, mf) in out.mappings.iter_mut().enumerate() {
        if lo[m] != u64::MAX {
            mf.makespan = hi[m] - lo[m];
        }
    }
    let mut order_end = order_start.clone();
    order_start.sort_unstable_by_key(|&k| (jobs[k as usize].start, k));
    order_end.sort_unstable_by_key(|&k| (jobs[k as usize].end, k));
    out.end_time = order_end.last().map_or(0, |&k| jobs[k as usize].end);

    let mut series = Series::new(out.end_time, opts.buckets);

    // Sweep state.
    let mut live: BTreeMap<u64, (u64, u32, u64)> = BTreeMap::new(); // address -> (end, mapping, job id)
    let mut pages: AddressMap<Page> = AddressMap::default();
    let mut gaps: Vec<Integrator> = (0..nmaps).map(|_| Integrator::new()).collect();
    let mut load = vec![0u64; nmaps];
    // Pages touched = pages where a live block starts or ends (the entries of `pages`) + the
    // pages live blocks cover whole (no other block can touch those).
    let mut inner_pages = 0u64;
    let (mut s, mut e) = (0usize, 0usize);

    while e < order_end.len() {
        // Releases first at equal times (lifetimes are half-open).
        let release = s >= order_start.len() || jobs[order_end[e] as usize].end <= jobs[order_start[s] as usize].start;
        let k = if release { order_end[e] } else { order_start[s] };
        let j = &jobs[k as usize];
        let t = if release { j.end } else { j.start };
        let (a, b, m) = (j.address, j.address.saturating_add(j.usable), j.mapping as usize);
        series.advance(t);
        let internal = j.usable - j.requested.min(j.usable);
        if release {
            e += 1;
            live.remove(&a);
            load[m] -= j.usable;
            series.rates.jobs -= j.usable as u128;
            series.rates.internal -= internal as u128;
        } else {
            s += 1;
            if let Some((_, &(end, _, other))) = live.range(..=a).next_back() {
                if end > a {
                    return Err(Overlap { job: j.id, other, time: t });
                }
            }
            if let Some((&start, &(_, _, other))) = live.range(a..).next() {
                if start < b {
                    return Err(Overlap { job: j.id, other, time: t });
                }
            }
            live.insert(a, (b, j.mapping, j.id));
            load[m] += j.usable;
            out.mappings[m].max_load = out.mappings[m].max_load.max(load[m]);
            series.rates.jobs += j.usable as u128;
            series.rates.internal += internal as u128;
        }
        // The pages where the block starts and ends; pages it covers whole have no gap.
        let (p0, p1) = (a >> shift, (b - 1) >> shift);
        let inner = p1.saturating_sub(p0).saturating_sub(1);
        if release {
            inner_pages -= inner;
        } else {
            inner_pages += inner;
        }
        for p in [p0, p1] {
            let (ps, pe) = (p << shift, (p << shift).saturating_add(page));
            let clip = b.min(pe) - a.max(ps);
            let st = pages.entry(p).or_default();
            if release {
                st.covered -= clip;
            } else {
                st.covered += clip;
            }
            let old = (st.gap, st.mapping);
            let new = if st.covered == 0 {
                (0, old.1)
            } else {
                // The highest live block below the page's end is the page's ceiling.
                let (_, &(end, cm, _)) = live.range(..pe).next_back().expect("a covered page has a live block");
                let top = end.min(pe);
                ((top - ps).saturating_sub(st.covered), cm)
            };
            st.gap = new.0;
            st.mapping = new.1;
            if st.covered == 0 {
                pages.remove(&p);
            }
            if old != new {
                let (om, nm) = (old.1 as usize, new.1 as usize);
                gaps[om].advance(t, &mut out.mappings[om].areas.external);
                gaps[om].rate -= old.0;
                gaps[nm].advance(t, &mut out.mappings[nm].areas.external);
                gaps[nm].rate += new.0;
                series.rates.external = series.rates.external - old.0 as u128 + new.0 as u128;
            }
            if p0 == p1 {
                break;
            }
        }
        if !release {
            let touched = (pages.len() as u64).saturating_add(inner_pages);
            out.peak_pages_bytes = out.peak_pages_bytes.max(touched.saturating_mul(page));
        }
    }
    for m in &out.mappings {
        out.total.add(&m.areas);
    }
    out.series = series.buckets;
    Ok(out)
}

#[cfg(test)]
mod tests;
