//! The metric against answers computed by hand (the thesis' figure 3.1, the paper's figure 1,
//! page-crossing cases drawn on squared paper) and against a brute-force implementation on
//! random placements.

use super::*;

fn job(id: u64, mapping: u32, start: u64, end: u64, requested: u64, usable: u64, address: u64) -> Job {
    Job { id, mapping, start, end, requested, usable, address }
}

fn run(jobs: &[Job], page: u64) -> Frag {
    compute(jobs, 1, &FragOptions { page_size: page, buckets: 0 }).unwrap()
}

/// Figure 3.1 of the thesis. Requests: A = malloc(1), B = malloc(2), free(A), C = malloc(2),
/// free(B), free(C); the allocator puts A at 1, B at 3 and C at 0 in its 3-byte size class.
/// Allocated-bytes clock: A lives on [0, 3), B on [1, 5), C on [3, 5).
/// External gaps: address 0 while only A is live ([0, 1): 1 byte × 1), addresses 0 and 2 while
/// A and B are live ([1, 3): 2 bytes × 2) = 5. Internal: C's third byte on [3, 5) = 2.
/// Job area: A 1×3 + B 2×4 + C 3×2 = 17.
fn figure_3_1() -> Vec<Job> {
    vec![job(0, 0, 0, 3, 1, 1, 1), job(1, 0, 1, 5, 2, 2, 3), job(2, 0, 3, 5, 2, 3, 0)]
}

#[test]
fn thesis_figure_3_1() {
    let f = run(&figure_3_1(), 4096);
    assert_eq!(f.total, Areas { jobs: 17, external: 5, internal: 2 });
    assert!((f.total.external_ratio() - 5.0 / 17.0).abs() < 1e-12);
    assert_eq!((f.mappings[0].makespan, f.mappings[0].max_load), (5, 5));
    // With 2-byte pages B crosses two page boundaries; the gaps stay where they were drawn.
    assert_eq!(run(&figure_3_1(), 2).total.external, 5);
}

/// The paper's figure 1: the same but C = malloc(3), so the clock runs to 6.
/// Gaps as above (5); area A 1×3 + B 2×5 + C 3×3 = 22; no internal fragmentation.
#[test]
fn paper_figure_1() {
    let jobs = vec![job(0, 0, 0, 3, 1, 1, 1), job(1, 0, 1, 6, 2, 2, 3), job(2, 0, 3, 6, 3, 3, 0)];
    assert_eq!(run(&jobs, 4096).total, Areas { jobs: 22, external: 5, internal: 0 });
}

/// Page boundaries bound the gaps. Pages of 4 bytes; X = [6, 7) live for 10 ticks: only
/// [4, 6) is a gap (2 × 10 = 20), not [0, 6) as with one large page (60).
#[test]
fn gaps_stop_at_page_boundaries() {
    let jobs = vec![job(0, 0, 0, 10, 1, 1, 6)];
    assert_eq!(run(&jobs, 4).total.external, 20);
    assert_eq!(run(&jobs, 4096).total.external, 60);
}

/// A block crossing pages. Pages of 4; X = [2, 11) on [0, 10): page 0 is covered on [2, 4) and
/// X is its ceiling: gap 2; page 1 is covered whole; page 2 is covered on [8, 11): no gap
/// below. Y = [13, 14) on [5, 10) in page 3: gap [12, 13) = 1. Z = [0, 1) on [0, 5) fills
/// part of page 0's gap: page 0 then has [1, 2) free = 1.
/// Total: [0, 5): page 0 gap 1 → 5; [5, 10): page 0 gap 2 + page 3 gap 1 → 15; = 20.
#[test]
fn blocks_crossing_pages() {
    let jobs = vec![job(0, 0, 0, 10, 9, 9, 2), job(1, 0, 0, 5, 1, 1, 0), job(2, 0, 5, 10, 1, 1, 13)];
    let f = run(&jobs, 4);
    assert_eq!(f.total.external, 20);
    assert_eq!(f.total.jobs, 90 + 5 + 5);
}

/// A gap belongs to the mapping of its page's ceiling; makespan − max load per mapping.
#[test]
fn per_mapping_figures() {
    let jobs = vec![
        job(0, 0, 0, 4, 8, 8, 0x1000),
        job(1, 0, 1, 4, 8, 16, 0x1010), // gap [0x1008, 0x1010) = 8 bytes on [1, 4), internal 8 × 3
        job(2, 1, 2, 6, 100, 100, 0x9000 + 50), // gap 50 bytes on [2, 6)
    ];
    let f = compute(&jobs, 2, &FragOptions { page_size: 4096, buckets: 0 }).unwrap();
    assert_eq!(f.mappings[0].areas, Areas { jobs: 32 + 48, external: 24, internal: 24 });
    assert_eq!(f.mappings[1].areas, Areas { jobs: 400, external: 200, internal: 0 });
    assert_eq!((f.mappings[0].makespan, f.mappings[0].max_load), (32, 24));
    assert_eq!((f.mappings[1].makespan, f.mappings[1].max_load), (100, 100));
    assert_eq!(f.total.external, 224);
}

#[test]
fn overlapping_live_jobs_are_rejected() {
    let jobs = vec![job(0, 0, 0, 4, 8, 8, 0x1000), job(1, 0, 2, 5, 8, 8, 0x1004)];
    let e = compute(&jobs, 1, &FragOptions::default()).unwrap_err();
    assert_eq!((e.job, e.other, e.time), (1, 0, 2));
    // Back to back in time at the same address is fine: [0, 4) then [4, 8).
    let ok = vec![job(0, 0, 0, 4, 8, 8, 0x1000), job(1, 0, 4, 8, 8, 8, 0x1000)];
    assert_eq!(compute(&ok, 1, &FragOptions::default()).unwrap().total.external, 0);
}

#[test]
fn series_adds_up_to_the_totals() {
    let f = compute(&figure_3_1(), 1, &FragOptions { page_size: 4096, buckets: 3 }).unwrap();
    let sum = f.series.iter().fold(Areas::default(), |mut a, b| {
        a.add(&b.areas);
        a
    });
    assert_eq!(sum, f.total);
    assert_eq!(f.series[0].t0, 0);
    assert_eq!(f.series[2].t1, 5);
}

/// The definition, literally: for every span between consecutive event times and every page
/// any live block touches, scan all live blocks for the page's covered bytes and highest
/// (clipped) block end.
fn brute_force(jobs: &[Job], page: u64) -> Vec<u128> {
    let nmaps = jobs.iter().map(|j| j.mapping as usize + 1).max().unwrap_or(0);
    let mut out = vec![0u128; nmaps];
    let mut times: Vec<u64> = jobs.iter().flat_map(|j| [j.start, j.end]).collect();
    times.sort_unstable();
    times.dedup();
    for w in times.windows(2) {
        let (t, len) = (w[0], (w[1] - w[0]) as u128);
        let live: Vec<&Job> = jobs.iter().filter(|j| j.start <= t && t < j.end && j.usable > 0).collect();
        let mut pages: Vec<u64> = live.iter().flat_map(|j| (j.address / page)..=((j.address + j.usable - 1) / page)).collect();
        pages.sort_unstable();
        pages.dedup();
        for p in pages {
            let (ps, pe) = (p * page, (p + 1) * page);
            let mut covered = 0;
            let mut top = (ps, 0u32);
            for j in &live {
                let (a, b) = (j.address.max(ps), (j.address + j.usable).min(pe));
                if a < b {
                    covered += b - a;
                    if b > top.0 {
                        top = (b, j.mapping);
                    }
                }
            }
            out[top.1 as usize] += (top.0 - ps - covered) as u128 * len;
        }
    }
    out
}

/// Random valid placements: jobs in a few mappings, packed into address slots that are only
/// reused when free, with sizes crossing pages now and then.
fn random_placement(seed: u64, n: usize) -> Vec<Job> {
    let mut rng = seed.wrapping_mul(0x9e3779b97f4a7c15) | 1;
    let mut next = move |m: u64| {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng % m
    };
    let mut jobs: Vec<Job> = Vec::new();
    let mut clock = 0;
    // Per mapping: a list of fixed slots (address, size) and when each is free again.
    let mut slots: Vec<(u32, u64, u64, u64)> = Vec::new();
    for m in 0..3u32 {
        let mut a = 0x10000 * (m as u64 + 1) + next(3) * 8;
        for _ in 0..12 {
            let big = next(5) == 0;
            let size = 1 + next(if big { 300 } else { 40 });
            slots.push((m, a, size, 0));
            a += size + next(20);
        }
    }
    for id in 0..n as u64 {
        let free: Vec<usize> = (0..slots.len()).filter(|&i| slots[i].3 <= clock).collect();
        if free.is_empty() {
            clock += 1;
            continue;
        }
        let i = free[next(free.len() as u64) as usize];
        let (m, a, size, _) = slots[i];
        let usable = 1 + next(size);
        let life = 1 + next(30);
        let requested = usable - next(usable.min(4));
        let address = a + next(size - usable + 1);
        jobs.push(job(id, m, clock, clock + life, requested, usable, address));
        slots[i].3 = clock + life;
        clock += next(3);
    }
    jobs
}

#[test]
fn incremental_equals_brute_force() {
    for seed in 1..60 {
        let jobs = random_placement(seed, 150);
        for page in [16u64, 64, 4096] {
            let f = compute(&jobs, 3, &FragOptions { page_size: page, buckets: 7 }).unwrap();
            let want = brute_force(&jobs, page);
            let got: Vec<u128> = f.mappings.iter().map(|m| m.areas.external).collect();
            assert_eq!(got, want, "seed {seed}, page {page}");
            let series: u128 = f.series.iter().map(|b| b.areas.external).sum();
            assert_eq!(series, f.total.external);
        }
    }
}

/// The peak of pages touched by live blocks against counting them at every allocation.
#[test]
fn peak_pages_equal_brute_force() {
    for seed in 1..40 {
        let jobs = random_placement(seed, 150);
        for page in [16u64, 64, 4096] {
            let f = compute(&jobs, 3, &FragOptions { page_size: page, buckets: 0 }).unwrap();
            let want = jobs
                .iter()
                .map(|at| {
                    let live = jobs.iter().filter(|j| j.start <= at.start && at.start < j.end && j.usable > 0);
                    let pages: std::collections::BTreeSet<u64> = live.flat_map(|j| j.address / page..=(j.address + j.usable - 1) / page).collect();
                    pages.len() as u64 * page
                })
                .max()
                .unwrap_or(0);
            assert_eq!(f.peak_pages_bytes, want, "seed {seed}, page {page}");
        }
    }
    // One block over three pages and a half: four pages.
    assert_eq!(run(&[job(0, 0, 0, 1, 3 * 4096 + 100, 3 * 4096 + 100, 4096)], 4096).peak_pages_bytes, 4 * 4096);
}

/// `measure` on a placed CSV file: the file's page size is the default, an asked one wins, the
/// figures are `compute`'s, and an invalid placement or a missing file is an error naming it.
#[test]
fn measure_reads_a_placed_file_and_defaults_its_page_size() {
    let dir = std::env::temp_dir().join(format!("heaplab-frag-measure-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let write = |name: &str, jobs: &[(u64, u64, u64, u64, u64, u64)]| {
        let path = dir.join(name);
        let mut text = String::from("job,mapping,start,end,requested,usable,address\n");
        for (id, start, end, requested, usable, address) in jobs {
            text += &format!("{id},0,{start},{end},{requested},{usable},{address}\n");
        }
        std::fs::write(&path, text).unwrap();
        path.to_string_lossy().into_owned()
    };
    let figure: Vec<_> = figure_3_1().iter().map(|j| (j.id, j.start, j.end, j.requested, j.usable, j.address + 0x1000)).collect();
    let path = write("figure.csv", &figure);
    let shifted: Vec<Job> = figure_3_1().into_iter().map(|j| Job { address: j.address + 0x1000, ..j }).collect();
    let m = measure(&path, None, 10).unwrap();
    assert_eq!(m.page_size, DEFAULT_PAGE_SIZE);
    assert_eq!(m.placed.jobs.len(), 3);
    assert_eq!(m.frag.total, compute(&shifted, 1, &FragOptions { page_size: DEFAULT_PAGE_SIZE, buckets: 10 }).unwrap().total);
    assert!(m.seconds >= 0.0 && m.cpu_seconds >= 0.0);
    let m = measure(&path, Some(2), 0).unwrap();
    assert_eq!(m.page_size, 2);
    assert_eq!(m.frag.total, run(&shifted, 2).total);
    assert!(m.frag.series.is_empty());
    let bad = write("overlap.csv", &[(0, 0, 4, 8, 8, 0x1000), (1, 2, 5, 8, 8, 0x1004)]);
    let e = measure(&bad, None, 10).err().unwrap();
    assert!(matches!(e, MeasureError::Overlap { .. }) && e.to_string().starts_with(&format!("{bad}: ")), "{e}");
    let missing = dir.join("missing.csv").to_string_lossy().into_owned();
    let e = measure(&missing, None, 10).err().unwrap();
    assert!(matches!(e, MeasureError::Read(_)) && e.to_string().contains("missing.csv"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}
