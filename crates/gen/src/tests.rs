//! Tests with their own event sweep (an oracle independent of heaplab-sweep).

use super::*;

/// Max load by an event sweep: frees sort before allocations at equal ticks because lifetimes
/// are half-open.
fn max_load(bufs: &[Buffer]) -> u64 {
    let mut ev: Vec<(u64, u8, u64)> = Vec::with_capacity(2 * bufs.len());
    for b in bufs {
        ev.push((b.lower, 1, b.size));
        ev.push((b.upper, 0, b.size));
    }
    ev.sort_unstable();
    let (mut load, mut best) = (0u64, 0u64);
    for (_, kind, s) in ev {
        if kind == 0 {
            load -= s;
        } else {
            load += s;
            best = best.max(load);
        }
    }
    best
}

/// Min load over `[0, horizon)`: for tight, every tick of the horizon must be full.
fn min_load_over(bufs: &[Buffer], horizon: u64) -> u64 {
    let mut ev: Vec<(u64, u8, u64)> = Vec::with_capacity(2 * bufs.len());
    for b in bufs {
        ev.push((b.lower, 1, b.size));
        ev.push((b.upper, 0, b.size));
    }
    ev.sort_unstable();
    let mut load = 0u64;
    let mut min = u64::MAX;
    let mut i = 0;
    while i < ev.len() {
        let t = ev[i].0;
        while i < ev.len() && ev[i].0 == t {
            if ev[i].1 == 0 {
                load -= ev[i].2;
            } else {
                load += ev[i].2;
            }
            i += 1;
        }
        if t < horizon {
            min = min.min(load);
        }
    }
    min
}

/// Pairwise validity check (quadratic: small instances only).
fn valid_placement(bufs: &[Buffer], offs: &[u64]) -> bool {
    for i in 0..bufs.len() {
        for j in i + 1..bufs.len() {
            let (a, b) = (&bufs[i], &bufs[j]);
            if a.lower < b.upper && b.lower < a.upper && offs[i] < offs[j] + b.size && offs[j] < offs[i] + a.size {
                return false;
            }
        }
    }
    true
}

fn well_formed(kind: Kind, inst: &Instance, n: usize) {
    assert_eq!(inst.len(), n, "{kind:?}");
    let mut total: u128 = 0;
    for (i, b) in inst.buffers.iter().enumerate() {
        assert_eq!(b.id, i as u64, "{kind:?}: ids are 0..n");
        assert!(b.size > 0, "{kind:?}: size > 0 for {b:?}");
        assert!(b.upper > b.lower, "{kind:?}: upper > lower for {b:?}");
        assert!(b.requested <= b.size, "{kind:?}: requested <= size for {b:?}");
        assert!(b.align_log2 < 63);
        if b.align_log2 > 0 {
            assert_eq!(b.size % b.alignment(), 0, "{kind:?}: size is a multiple of alignment");
        }
        total += b.size as u128 + b.alignment() as u128;
    }
    assert!(total < 1u128 << 62, "{kind:?}: sizes stay far below u64::MAX");
}

#[test]
fn names_round_trip() {
    for &k in Kind::ALL {
        assert_eq!(Kind::parse(k.name()), Some(k));
        assert!(!k.describe().is_empty());
    }
    assert_eq!(Kind::parse("nope"), None);
    assert_eq!(Kind::ALL.len(), 8);
}

#[test]
fn every_kind_well_formed() {
    for &k in Kind::ALL {
        for &n in &[0usize, 1, 2, 3, 7, 100, 5000] {
            for seed in 0..3 {
                well_formed(k, &generate(k, n, seed), n);
            }
        }
    }
}

#[test]
fn deterministic() {
    for &k in Kind::ALL {
        let a = generate(k, 3000, 42);
        let b = generate(k, 3000, 42);
        assert_eq!(a, b, "{k:?}");
        let c = generate(k, 3000, 43);
        assert_ne!(a.buffers, c.buffers, "{k:?}: seeds differ");
    }
}

#[test]
fn empty_and_single() {
    for &k in Kind::ALL {
        assert!(generate(k, 0, 7).is_empty());
        let one = generate(k, 1, 7);
        assert_eq!(one.len(), 1);
    }
    assert_eq!(tight_capacity(0, 1), 0);
    assert_eq!(max_load(&generate(Kind::Tight, 1, 3).buffers), tight_capacity(1, 3));
}

#[test]
fn tight_max_load_is_capacity() {
    for &n in &[1usize, 2, 3, 5, 17, 100, 1000, 1025, 4096, 20_000] {
        for seed in 0..4 {
            let (inst, offs) = tight_with_offsets(n, seed);
            assert_eq!(inst, generate(Kind::Tight, n, seed));
            let cap = tight_capacity(n, seed);
            assert_eq!(max_load(&inst.buffers), cap, "n={n} seed={seed}");
            assert_eq!(min_load_over(&inst.buffers, tight_horizon(n)), cap, "every tick is full");
            assert!(inst.buffers.iter().all(|b| b.upper <= tight_horizon(n)));
            let makespan = inst.buffers.iter().zip(&offs).map(|(b, o)| o + b.size).max().unwrap();
            assert_eq!(makespan, cap);
            if n <= 1000 {
                assert!(valid_placement(&inst.buffers, &offs), "reference placement is valid");
            }
        }
    }
}

#[test]
fn tight_sizes_vary() {
    let inst = generate(Kind::Tight, 1000, 1);
    let mut sizes: Vec<u64> = inst.buffers.iter().map(|b| b.size).collect();
    sizes.sort_unstable();
    sizes.dedup();
    assert!(sizes.len() > 100, "pieces differ in size: {}", sizes.len());
}

#[test]
fn nested_is_nested() {
    let inst = generate(Kind::Nested, 2000, 5);
    let b = &inst.buffers;
    for i in 0..b.len() {
        for j in i + 1..b.len() {
            let (x, y) = (&b[i], &b[j]);
            let disjoint = x.upper <= y.lower || y.upper <= x.lower;
            let x_in_y = y.lower <= x.lower && x.upper <= y.upper;
            let y_in_x = x.lower <= y.lower && y.upper <= x.upper;
            assert!(disjoint || x_in_y || y_in_x, "{x:?} {y:?}");
        }
    }
}

#[test]
fn shapes() {
    let eq = generate(Kind::Equal, 1000, 2);
    assert!(eq.buffers.iter().all(|b| b.size == eq.buffers[0].size));
    let r = generate(Kind::Ratio, 20_000, 2);
    let (lo, hi) = (r.buffers.iter().map(|b| b.size).min().unwrap(), r.buffers.iter().map(|b| b.size).max().unwrap());
    assert!(lo < 4 && hi >= 1 << 39, "ratio spans 1..2^40: {lo}..{hi}");
    let a = generate(Kind::Aligned, 1000, 2);
    assert!(a.columns.alignment);
    assert!(a.buffers.iter().any(|b| b.align_log2 >= 10));
    let m = generate(Kind::Malloc, 20_000, 2);
    assert!(m.columns.requested);
    let small = m.buffers.iter().filter(|b| b.size <= 256).count();
    assert!(small > 15_000, "mostly small objects: {small}");
    let nn = generate(Kind::Nn, 20_000, 2);
    let mut sizes: Vec<u64> = nn.buffers.iter().map(|b| b.size).collect();
    sizes.sort_unstable();
    sizes.dedup();
    assert!(sizes.len() < 100, "few distinct sizes: {}", sizes.len());
}

/// Prints generation time and shape figures at scale; asserts only well-formedness.
/// `cargo test -p heaplab-gen --release -- --ignored --nocapture`
#[test]
#[ignore]
fn scale_report() {
    let n: usize = std::env::var("GEN_N").ok().and_then(|s| s.parse().ok()).unwrap_or(10_000_000);
    for &k in Kind::ALL {
        let t = std::time::Instant::now();
        let inst = generate(k, n, 1);
        let secs = t.elapsed().as_secs_f64();
        let total: u128 = inst.buffers.iter().map(|b| b.size as u128).sum();
        let horizon = inst.buffers.iter().map(|b| b.upper).max().unwrap_or(0);
        let mean_len = inst.buffers.iter().map(|b| (b.upper - b.lower) as f64).sum::<f64>() / n as f64;
        let ml = max_load(&inst.buffers);
        println!(
            "{:8} n={n} gen {secs:.2}s  max_load {ml:.3e}  total {total:.3e}  horizon {horizon}  mean len {mean_len:.1}  density {:.1}",
            k.name(),
            mean_len * n as f64 / horizon as f64,
            ml = ml as f64,
            total = total as f64
        );
        well_formed(k, &inst, n);
    }
}
