//! One streaming pass over a trace that fills every figure of a [`Report`] but the oracle and
//! the allocators: the summary, per-site figures, the heap over time, snapshots of live bytes
//! per site, and the size and lifetime histograms. Blocks open and close under the rules of
//! `heaplab_trace::blocks` (the same as conversion, statistics and replay); call sites are
//! symbolised at the end ([`crate::symbols`]), each distinct stack once.
//!
//! Memory stays bounded whatever the trace's length: per-site counters, the live blocks (kept by
//! the blocks layer), at most `2 × timeline_points` timeline buckets and `2 × snapshots`
//! snapshots. The time span is not known until the end, so both are kept on a grid whose step
//! doubles (merging neighbours: the timeline keeps each interval's maximum, snapshots keep every
//! other one) whenever the grid fills.
//!
//! Bytes live at the peak per site are kept without copying every site at every new peak: a
//! site whose live bytes changed since the last peak is listed once, and a new peak copies only
//! the listed sites (each heap call lists at most one).

use crate::model::{Bin, Meta, Report, Site, Snapshot, Summary, TimePoint, REPORT_VERSION};
use crate::symbols::Symbolizer;
use heaplab_trace::blocks::{BlockOptions, Blocks, Cause, Clock, SizeModel};
use heaplab_trace::format::Op;
use heaplab_trace::reader::{Half, TraceReader};
use heaplab_trace::run::describe_ending;
use heaplab_trace::stats::AddressMap;
use std::collections::HashMap;
use std::io::Read;
use std::sync::atomic::{AtomicU64, Ordering};

/// How much a report keeps.
#[derive(Clone, Debug)]
pub struct Options {
    /// Points of the heap over time (at most; the peak is always one).
    pub timeline_points: usize,
    /// Evenly spaced snapshots besides the peak (about; at most this many).
    pub snapshots: usize,
    /// Sites listed per snapshot; the rest are summed in `other_bytes`.
    pub snapshot_sites: usize,
    /// Also a snapshot at exactly this moment (ns since the trace started), e.g. for `--at`.
    pub at_ns: Option<u64>,
}

impl Default for Options {
    fn default() -> Options {
        Options { timeline_points: 2000, snapshots: 100, snapshot_sites: 300, at_ns: None }
    }
}

/// Figures of one site of the trace (by its id in the trace).
#[derive(Clone, Default)]
struct Acc {
    calls: u64,
    bytes: u64,
    live: u64,
    max_live: u64,
    temporary: u64,
    leaked_blocks: u64,
    leaked_bytes: u64,
    /// Live bytes at the last peak (valid unless `dirty`).
    at_peak: u64,
    /// Live bytes changed since the last peak was recorded.
    dirty: bool,
}

/// A snapshot by trace site ids.
struct RawSnapshot {
    ns: u64,
    live: u64,
    sites: Vec<(u32, u64)>,
    other: u64,
}

/// Power-of-two bins: bin 0 is `[0, 1)`, bin k is `[2^(k-1), 2^k)`.
fn bin_of(v: u64) -> usize {
    64 - v.leading_zeros() as usize
}

fn bins(raw: &[(u64, u64)]) -> Vec<Bin> {
    let lo = raw.iter().position(|b| b.0 > 0);
    let hi = raw.iter().rposition(|b| b.0 > 0);
    let (Some(lo), Some(hi)) = (lo, hi) else { return Vec::new() };
    (lo..=hi)
        .map(|k| Bin {
            lo: if k == 0 { 0 } else { 1u64 << (k - 1) },
            hi: if k == 64 { u64::MAX } else { 1u64 << k },
            count: raw[k].0,
            bytes: raw[k].1,
        })
        .collect()
}

/// The state of the pass.
struct Pass {
    opts: Options,
    sites: Vec<Acc>,
    dirty: Vec<u32>,
    live: u64,
    live_blocks: u64,
    summary: Summary,
    /// Timeline buckets of width `step` ns: (bucket index, point).
    timeline: Vec<(u64, TimePoint)>,
    step: u64,
    snapshots: Vec<RawSnapshot>,
    snap_every: u64,
    next_snap: u64,
    at: Option<RawSnapshot>,
    sizes: Vec<(u64, u64)>,
    lifetimes: Vec<(u64, u64)>,
    /// Per thread: the address of the block its last heap call opened (0: none).
    last_opened: AddressMap<u64>,
}

impl Pass {
    fn acc(&mut self, site: u32) -> &mut Acc {
        let i = site as usize;
        if i >= self.sites.len() {
            self.sites.resize(i + 1, Acc::default());
        }
        &mut self.sites[i]
    }

    fn change_live(&mut self, site: u32, add: u64, sub: u64) {
        self.live = self.live + add - sub;
        let a = self.acc(site);
        a.live = a.live + add - sub;
        a.max_live = a.max_live.max(a.live);
        if !a.dirty {
            a.dirty = true;
            self.dirty.push(site);
        }
    }

    /// Records the moment `ns` on the timeline.
    fn tick(&mut self, ns: u64) {
        let mut k = ns / self.step;
        while k >= 2 * self.opts.timeline_points as u64 {
            self.step *= 2;
            k = ns / self.step;
            let mut merged: Vec<(u64, TimePoint)> = Vec::with_capacity(self.timeline.len());
            for &(b, p) in &self.timeline {
                let b = b / 2;
                match merged.last_mut() {
                    Some((lb, lp)) if *lb == b => {
                        if p.live_bytes > lp.live_bytes {
                            *lp = p;
                        }
                    }
                    _ => merged.push((b, p)),
                }
            }
            self.timeline = merged;
        }
        let p = TimePoint { ns, live_bytes: self.live, live_blocks: self.live_blocks };
        match self.timeline.last_mut() {
            // Timestamps of different threads may go back a little: such a moment joins the last bucket.
            Some((lb, lp)) if *lb >= k => {
                if p.live_bytes > lp.live_bytes {
                    *lp = TimePoint { ns: ns.max(lp.ns), ..p };
                }
            }
            _ => self.timeline.push((k, p)),
        }
    }

    fn snapshot(&self, ns: u64) -> RawSnapshot {
        let mut v: Vec<(u32, u64)> = self.sites.iter().enumerate().filter(|(_, a)| a.live > 0).map(|(i, a)| (i as u32, a.live)).collect();
        let k = self.opts.snapshot_sites;
        let mut other = 0;
        if v.len() > k {
            v.select_nth_unstable_by_key(k, |&(_, b)| std::cmp::Reverse(b));
            other = v[k..].iter().map(|x| x.1).sum();
            v.truncate(k);
        }
        v.sort_by_key(|&(i, b)| (std::cmp::Reverse(b), i));
        RawSnapshot { ns, live: self.live, sites: v, other }
    }

    /// Takes the snapshots due before a step at `ns`.
    fn before(&mut self, ns: u64) {
        if ns >= self.next_snap {
            let at = self.next_snap;
            let s = self.snapshot(at);
            self.snapshots.push(s);
            self.next_snap = (ns / self.snap_every + 1) * self.snap_every;
            if self.snapshots.len() >= 2 * self.opts.snapshots.max(1) {
                self.snap_every *= 2;
                let e = self.snap_every;
                self.snapshots.retain(|s| s.ns % e == 0);
                self.next_snap = self.next_snap.div_ceil(e) * e;
            }
        }
        if let Some(t) = self.opts.at_ns {
            if self.at.is_none() && ns > t {
                self.at = Some(self.snapshot(t));
            }
        }
    }
}

/// Reads the whole stream of `reader` into a report (see the module notes); `progress`, when
/// given, counts the steps read. Damage stops the pass where the reader stops and is noted;
/// the caller decides whether a damaged trace is acceptable (`reader.ending()` says).
pub fn analyse<R: Read>(reader: &mut TraceReader<R>, opts: &Options, progress: Option<&AtomicU64>) -> Report {
    let header = reader.header().clone();
    let mut blocks: Blocks = Blocks::new(BlockOptions { clock: Clock::Ns, size: SizeModel::Requested, thread: None }, &header);
    let mut p = Pass {
        opts: opts.clone(),
        sites: Vec::new(),
        dirty: Vec::new(),
        live: 0,
        live_blocks: 0,
        summary: Summary::default(),
        timeline: Vec::new(),
        step: 1000,
        snapshots: Vec::new(),
        snap_every: 1_000_000,
        next_snap: 0,
        at: None,
        sizes: vec![(0, 0); 65],
        lifetimes: vec![(0, 0); 65],
        last_opened: AddressMap::default(),
    };
    let mut threads = AddressMap::<()>::default();
    let mut last_ns = 0u64;
    let mut read = 0u64;
    for step in reader.by_ref() {
        read += 1;
        if read & 0xffff == 0 {
            if let Some(c) = progress {
                c.store(read, Ordering::Relaxed);
            }
        }
        let e = &step.event;
        let ns = header.ns_since_start(e.ts);
        last_ns = last_ns.max(ns);
        p.before(ns);
        threads.insert(e.tid as u64, ());
        let allocation = match step.half {
            Half::Whole => e.op != Op::Free,
            Half::Acquire => true,
            Half::Release => false,
        };
        if step.half != Half::Acquire {
            match e.op {
                Op::Free => p.summary.frees += 1,
                Op::Realloc | Op::Reallocarray => p.summary.reallocs += 1,
                _ => {}
            }
        }
        if allocation && !(step.half == Half::Acquire && e.ptr_out == 0 && e.releases()) {
            p.summary.allocations += 1;
            p.acc(e.site).calls += 1;
        }
        let change = blocks.step(&step);
        let last = p.last_opened.get(&(e.tid as u64)).copied().unwrap_or(0);
        if let Some(c) = &change.closed {
            let b = &c.block;
            p.change_live(b.site, 0, b.requested);
            p.live_blocks -= 1;
            if matches!(c.cause, Cause::Free | Cause::Realloc) {
                if last == b.addr && last != 0 {
                    p.summary.temporary += 1;
                    p.acc(b.site).temporary += 1;
                }
                let life = c.at - b.open;
                let k = bin_of(life);
                p.lifetimes[k].0 += 1;
                p.lifetimes[k].1 += b.requested;
            }
        }
        let opened = change.opened.map_or(0, |b| b.addr);
        p.last_opened.insert(e.tid as u64, opened);
        if let Some(b) = &change.opened {
            p.change_live(b.site, b.requested, 0);
            p.live_blocks += 1;
            p.summary.bytes_allocated += b.requested;
            p.acc(b.site).bytes += b.requested;
            let k = bin_of(b.requested);
            p.sizes[k].0 += 1;
            p.sizes[k].1 += b.requested;
            if p.live > p.summary.peak_bytes {
                p.summary.peak_bytes = p.live;
                p.summary.peak_ns = ns;
                p.summary.peak_blocks = p.live_blocks;
                for s in std::mem::take(&mut p.dirty) {
                    let a = &mut p.sites[s as usize];
                    a.at_peak = a.live;
                    a.dirty = false;
                }
            }
        }
        p.tick(ns);
    }
    if let Some(c) = progress {
        c.store(read, Ordering::Relaxed);
    }
    let ending = reader.ending().clone();
    let trailer = ending.trailer.as_ref();
    let duration_ns = trailer.map(|t| header.ns_since_start(t.end_ts)).unwrap_or(0).max(last_ns);
    // The peak's per-site figures: the sites still listed changed after it.
    let peak_snapshot = {
        let mut v: Vec<(u32, u64)> = p.sites.iter().enumerate().filter(|(_, a)| a.at_peak > 0).map(|(i, a)| (i as u32, a.at_peak)).collect();
        v.sort_by_key(|&(i, b)| (std::cmp::Reverse(b), i));
        let k = opts.snapshot_sites;
        let other = v.iter().skip(k).map(|x| x.1).sum();
        v.truncate(k);
        RawSnapshot { ns: p.summary.peak_ns, live: p.summary.peak_bytes, sites: v, other }
    };
    let mut end = p.snapshot(duration_ns);
    end.ns = duration_ns;
    for c in blocks.finish() {
        p.summary.leaked_blocks += 1;
        p.summary.leaked_bytes += c.block.requested;
        let a = p.acc(c.block.site);
        a.leaked_blocks += 1;
        a.leaked_bytes += c.block.requested;
    }
    if p.at.is_none() {
        if let Some(t) = opts.at_ns {
            let mut s = p.snapshot(t.min(duration_ns));
            s.ns = t.min(duration_ns);
            p.at = Some(s);
        }
    }
    p.summary.peak_rss = trailer.map(|t| t.peak_rss).filter(|&r| r > 0);

    // Sites: trace ids to stable keys, symbolised once per distinct stack; ids naming the same
    // key (the same code) are one site.
    let mut notes = Vec::new();
    let mut symbolizer = Symbolizer::new(trailer.map_or(&[][..], |t| &t.modules[..]), header.start_real_ns);
    let mut sites: Vec<Site> = Vec::new();
    let mut by_key: HashMap<u64, usize> = HashMap::new();
    let mut index_of: Vec<u32> = vec![u32::MAX; p.sites.len()];
    let mut undefined = 0u64;
    for (id, a) in p.sites.iter().enumerate() {
        if a.calls == 0 && a.bytes == 0 && a.leaked_blocks == 0 {
            continue;
        }
        let def = ending.sites.get(&(id as u32)).filter(|_| id != 0);
        if def.is_none() && id != 0 {
            undefined += a.calls;
        }
        let key = def.map_or(0, |d| symbolizer.map().context_key(&d.frames));
        let k = *by_key.entry(key).or_insert_with(|| {
            let stack = def.map_or_else(Vec::new, |d| symbolizer.stack(&d.frames));
            sites.push(Site { key, stack, ..Site::default() });
            sites.len() - 1
        });
        index_of[id] = k as u32;
        let s = &mut sites[k];
        s.calls += a.calls;
        s.bytes += a.bytes;
        s.peak_bytes += a.at_peak;
        s.max_live_bytes += a.max_live;
        s.temporary += a.temporary;
        s.leaked_blocks += a.leaked_blocks;
        s.leaked_bytes += a.leaked_bytes;
    }
    // The unknown site first, then by bytes at the peak, bytes and calls.
    let mut order: Vec<usize> = (0..sites.len()).collect();
    order.sort_by_key(|&i| (sites[i].key != 0, std::cmp::Reverse((sites[i].peak_bytes, sites[i].bytes, sites[i].calls)), sites[i].key));
    let mut rank = vec![0u32; sites.len()];
    for (r, &i) in order.iter().enumerate() {
        rank[i] = r as u32;
    }
    let sites: Vec<Site> = order.iter().map(|&i| sites[i].clone()).collect();
    let convert = |s: RawSnapshot| -> Snapshot {
        let mut merged: HashMap<u32, u64> = HashMap::new();
        for (id, b) in s.sites {
            let k = index_of.get(id as usize).copied().unwrap_or(u32::MAX);
            if k != u32::MAX {
                *merged.entry(rank[k as usize]).or_insert(0) += b;
            }
        }
        let mut v: Vec<(u32, u64)> = merged.into_iter().collect();
        v.sort_by_key(|&(i, b)| (std::cmp::Reverse(b), i));
        Snapshot { ns: s.ns, live_bytes: s.live, sites: v, other_bytes: s.other }
    };
    let mut snapshots = vec![convert(peak_snapshot)];
    let mut rest: Vec<RawSnapshot> = std::mem::take(&mut p.snapshots);
    rest.push(end);
    if let Some(a) = p.at.take() {
        rest.push(a);
    }
    rest.sort_by_key(|s| s.ns);
    // Thin to the number asked for, keeping the first and the last.
    let want = opts.snapshots.max(2);
    if rest.len() > want {
        let n = rest.len();
        let keep: std::collections::BTreeSet<usize> = (0..want).map(|k| k * (n - 1) / (want - 1)).chain(rest.iter().position(|s| Some(s.ns) == opts.at_ns)).collect();
        rest = rest.into_iter().enumerate().filter(|(i, _)| keep.contains(i)).map(|(_, s)| s).collect();
    }
    snapshots.extend(rest.into_iter().map(convert));

    let mut timeline: Vec<TimePoint> = p.timeline.iter().map(|x| x.1).collect();
    timeline.push(TimePoint { ns: duration_ns, live_bytes: p.live, live_blocks: p.live_blocks });
    let (frames, sym_notes) = symbolizer.finish();
    if header.stack_depth == 0 {
        notes.push("the trace has no call sites (traced with --stack-depth 0): every allocation is the unknown site; trace with --stack-depth 16 for call sites".into());
    } else if trailer.is_none() && !ending.sites.is_empty() {
        notes.push("the trace has no trailer, so no module map: call sites are shown as raw addresses".into());
    }
    if undefined > 0 {
        notes.push(format!("{undefined} allocations name call sites the trace never defined (a damaged trace): counted as unknown sites"));
    }
    notes.extend(sym_notes);
    if let Some(d) = &ending.damage {
        notes.push(format!("the trace is damaged: {}; the report covers the events before it", d.reason));
    }
    let counts = blocks.counts();
    if counts.unknown_frees > 0 {
        notes.push(format!("{} frees of blocks the trace never saw allocated (from before tracing, another allocator, or double frees) were ignored", counts.unknown_frees));
    }
    Report {
        version: REPORT_VERSION,
        meta: Meta {
            trace: reader.name().to_string(),
            executable: header.exe.clone(),
            command: header.args.clone(),
            pid: header.pid,
            stack_depth: header.stack_depth as u32,
            threads: threads.len() as u32,
            duration_ns,
            ending: describe_ending(&ending),
            complete: ending.is_complete(),
        },
        summary: p.summary,
        frames,
        sites,
        timeline,
        snapshots,
        sizes: bins(&p.sizes),
        lifetimes: bins(&p.lifetimes),
        oracle: None,
        allocators: Vec::new(),
        notes,
    }
}

#[cfg(test)]
mod tests;
