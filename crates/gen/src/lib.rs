//! Seeded instance generators for tests and scale benchmarks.
//!
//! This crate owns the synthetic workloads of heaplab: every [`Kind`] is a family of instances
//! with a documented shape (random, tight with a known optimum, neural-network-like, malloc-trace
//! like, and adversarial shapes for property tests). [`generate`] is deterministic per
//! `(kind, n, seed)` on every platform — it draws from heaplab's own PRNG ([`Rng`], from heaplab-rng, whose
//! streams are pinned) rather than a dependency whose streams could change between versions.
//!
//! Generators are O(n) (tight adds an O(n) shuffle) and allocate nothing beyond the returned
//! `Vec<Buffer>` apart from small stacks, so 10^7 buffers take a few seconds and ~480 MB.
//! Ids are `0..n` in the returned order. Sizes and lifetimes keep the max load and the sum of
//! sizes far below `u64::MAX` (under 2^60 for n ≤ 10^7 on every kind), so downstream code can add
//! padding and offsets without overflow worries.

use heaplab_model::{Buffer, Instance};

/// A family of generated instances. See [`Kind::describe`] for each one's shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Uniformly placed lifetimes, log-uniform sizes.
    Random,
    /// A rectangle cut into pieces: a zero-fragmentation packing exists, max load is known.
    Tight,
    /// Neural-network training: layers, activations, weights and gradients.
    Nn,
    /// A malloc trace: small short-lived objects, fewer large long-lived ones, nested phases.
    Malloc,
    /// All sizes equal (interval colouring: the optimum is the max number of live buffers).
    Equal,
    /// Lifetimes nested like brackets: any two are disjoint or one contains the other.
    Nested,
    /// Huge size ratios: sizes from 1 byte to 2^40 bytes.
    Ratio,
    /// An alignment column (powers of two up to 4096) with sizes that are multiples of it.
    Aligned,
}

impl Kind {
    /// Every kind, in documentation order.
    pub const ALL: &'static [Kind] = &[
        Kind::Random,
        Kind::Tight,
        Kind::Nn,
        Kind::Malloc,
        Kind::Equal,
        Kind::Nested,
        Kind::Ratio,
        Kind::Aligned,
    ];

    /// The lowercase name used on the command line (`--kind`).
    pub fn name(self) -> &'static str {
        match self {
            Kind::Random => "random",
            Kind::Tight => "tight",
            Kind::Nn => "nn",
            Kind::Malloc => "malloc",
            Kind::Equal => "equal",
            Kind::Nested => "nested",
            Kind::Ratio => "ratio",
            Kind::Aligned => "aligned",
        }
    }

    /// The kind with this name (exact, lowercase), if any.
    pub fn parse(s: &str) -> Option<Kind> {
        Kind::ALL.iter().copied().find(|k| k.name() == s)
    }

    /// One line describing the shape, for `--help` and listings.
    pub fn describe(self) -> &'static str {
        match self {
            Kind::Random => {
                "uniform lifetimes over n ticks (length 1..2√n, so about √n buffers live at a \
                 tick) and log-uniform sizes in [1, 2^20)"
            }
            Kind::Tight => {
                "a capacity × time rectangle cut into n pieces (guillotine cuts): max load equals \
                 the capacity exactly at every tick and a zero-fragmentation packing exists, so \
                 the optimal makespan is the max load (like minimalloc's challenging suite)"
            }
            Kind::Nn => {
                "neural-network training iterations: long-lived weights, activations consumed a \
                 few layers later or saved for the backward pass, gradients, workspaces; few \
                 distinct power-of-two-ish sizes (like resnet50.csv)"
            }
            Kind::Malloc => {
                "malloc-trace-like, allocated-bytes clock: many small short-lived objects with \
                 power-law sizes, fewer large long-lived ones, objects freed at the end of nested \
                 phases; has a requested column (size is requested rounded up to 16)"
            }
            Kind::Equal => "random lifetimes (as random), all sizes equal",
            Kind::Nested => {
                "lifetimes nested like brackets (depth ≤ 256), some sharing endpoints; \
                 log-uniform sizes"
            }
            Kind::Ratio => "random lifetimes (as random), sizes log-uniform from 1 byte to 2^40",
            Kind::Aligned => {
                "random lifetimes (as random), alignments 1..4096 (powers of two), sizes \
                 multiples of their alignment"
            }
        }
    }
}

/// Generates an instance of `n` buffers with ids `0..n`. Deterministic per `(kind, n, seed)`.
pub fn generate(kind: Kind, n: usize, seed: u64) -> Instance {
    let mut rng = Rng::new(seed ^ kind_salt(kind));
    let buffers = match kind {
        Kind::Random => random_lifetimes(n, &mut rng, |r| log_uniform(r, 20)),
        Kind::Tight => tight_impl(n, seed, false).0,
        Kind::Nn => nn(n, &mut rng),
        Kind::Malloc => malloc(n, &mut rng),
        Kind::Equal => {
            // One size for the whole instance, drawn once so seeds differ in scale.
            let size = 64 * (1 + rng.below(64));
            random_lifetimes(n, &mut rng, |_| size)
        }
        Kind::Nested => nested(n, &mut rng),
        Kind::Ratio => random_lifetimes(n, &mut rng, |r| log_uniform(r, 41)),
        Kind::Aligned => return aligned(n, &mut rng),
    };
    Instance::new(buffers)
}

/// The capacity of a [`Kind::Tight`] instance of `n` buffers: its max load, which is also its
/// optimal makespan. 0 when `n == 0`.
///
/// It is `2^20` (minimalloc's capacity) up to 1024 buffers and `1024 · n.next_power_of_two()`
/// beyond, so pieces stay large enough to vary in size at any scale. It depends on `n` only; the
/// `seed` parameter is accepted so callers need not care whether that ever changes.
pub fn tight_capacity(n: usize, seed: u64) -> u64 {
    let _ = seed;
    if n == 0 {
        0
    } else {
        1024 * (n as u64).next_power_of_two().max(1024)
    }
}

/// The time horizon of a [`Kind::Tight`] instance: every tick in `[0, horizon)` has load exactly
/// [`tight_capacity`]; no buffer lives outside it.
pub fn tight_horizon(n: usize) -> u64 {
    4 * n.max(1) as u64
}

/// A [`Kind::Tight`] instance (identical to `generate(Kind::Tight, n, seed)`) together with the
/// zero-fragmentation placement it was cut from: `offsets[i]` for buffer `i`, makespan equal to
/// [`tight_capacity`]. Useful as a reference solution in tests.
///
/// Guarantees: the pieces tile `[0, tight_horizon(n)) × [0, tight_capacity(n, seed))` exactly, so
/// the load is exactly the capacity at every tick of the horizon (max load == capacity), the
/// returned placement is valid with makespan == capacity, and therefore the optimum makespan is
/// the capacity. No alignment, no requested sizes.
pub fn tight_with_offsets(n: usize, seed: u64) -> (Instance, Vec<u64>) {
    let (buffers, offsets) = tight_impl(n, seed, true);
    (Instance::new(buffers), offsets)
}

// ---------------------------------------------------------------------------------------------
// PRNG

/// The workspace's seeded PRNG (xoshiro256** seeded by splitmix64), shared with the planner.
pub use heaplab_rng::Rng;

/// Different kinds with the same seed must not share streams (a `random` and an `equal` instance
/// with seed 1 would otherwise have identical lifetimes).
fn kind_salt(kind: Kind) -> u64 {
    (Kind::ALL.iter().position(|&k| k == kind).unwrap() as u64 + 1).wrapping_mul(0xd6e8_feb8_6659_fd93)
}

/// Log-uniform-ish size in `[1, 2^bits)`: a uniform exponent, then uniform within the octave.
#[inline]
fn log_uniform(rng: &mut Rng, bits: u32) -> u64 {
    let e = rng.below(bits as u64) as u32;
    (1u64 << e) + rng.below(1u64 << e)
}

/// Log-uniform-ish value in `[2^lo, 2^hi)`.
#[inline]
fn log_uniform_between(rng: &mut Rng, lo: u32, hi: u32) -> u64 {
    let e = lo + rng.below((hi - lo) as u64) as u32;
    (1u64 << e) + rng.below(1u64 << e)
}

// ---------------------------------------------------------------------------------------------
// Random lifetimes (random, equal, ratio, aligned)

/// `n` buffers with `lower` uniform in `[0, n)` and length uniform in `[1, 2⌈√n⌉]`: about √n
/// buffers live at any tick, so density grows with scale as in real workloads but the conflict
/// count stays O(n^1.5) rather than O(n^2).
fn random_lifetimes(n: usize, rng: &mut Rng, mut size: impl FnMut(&mut Rng) -> u64) -> Vec<Buffer> {
    let horizon = n.max(1) as u64;
    let max_len = 2 * ((n as f64).sqrt().ceil() as u64).max(1);
    let mut v = Vec::with_capacity(n);
    for id in 0..n as u64 {
        let lower = rng.below(horizon);
        let upper = lower + rng.range(1, max_len);
        let s = size(rng);
        v.push(Buffer::new(id, lower, upper, s));
    }
    v
}

fn aligned(n: usize, rng: &mut Rng) -> Instance {
    let mut v = random_lifetimes(n, rng, |_| 1);
    for b in &mut v {
        // Alignments 1..4096; sizes 1..64 times the alignment, so padding matters whenever a
        // small-aligned buffer sits below a large-aligned one.
        let a = rng.below(13) as u8;
        b.align_log2 = a;
        b.size = (1u64 << a) * rng.range(1, 64);
    }
    let mut inst = Instance::new(v);
    // Keep the column even in the rare instance where every draw was alignment 1 (n tiny).
    inst.columns.alignment = n > 0;
    inst
}

// ---------------------------------------------------------------------------------------------
// Tight

/// Cuts the rectangle `[0, T) × [0, C)` into `n` pieces with guillotine cuts. Each piece becomes
/// a buffer: its time extent is the lifetime, its address extent the size, its bottom the offset
/// of the reference placement. Offsets are only kept when asked for (memory = the buffers).
fn tight_impl(n: usize, seed: u64, keep_offsets: bool) -> (Vec<Buffer>, Vec<u64>) {
    let mut rng = Rng::new(seed ^ kind_salt(Kind::Tight));
    let mut bufs = Vec::with_capacity(n);
    let mut offs = Vec::with_capacity(if keep_offsets { n } else { 0 });
    if n == 0 {
        return (bufs, offs);
    }
    let (cap, horizon) = (tight_capacity(n, seed), tight_horizon(n));
    // (t0, t1, o0, o1, pieces). Invariant: (t1-t0)·(o1-o0) >= pieces >= 1, so the rectangle can
    // always be cut further. Depth-first with an explicit stack: depth is O(log n) in practice.
    let mut stack: Vec<(u64, u64, u64, u64, u64)> = vec![(0, horizon, 0, cap, n as u64)];
    while let Some((t0, t1, o0, o1, k)) = stack.pop() {
        if k == 1 {
            bufs.push(Buffer::new(0, t0, t1, o1 - o0));
            if keep_offsets {
                offs.push(o0);
            }
            continue;
        }
        let (w, h) = (t1 - t0, o1 - o0);
        // Cut the dimension that is longer relative to the whole rectangle (3 times in 4), so
        // pieces keep the global aspect ratio on average, but some come out as long strips.
        let time_longer = (w as u128) * (cap as u128) >= (h as u128) * (horizon as u128);
        let mut cut_time = if rng.chance(3, 4) { time_longer } else { !time_longer };
        if cut_time && w < 2 {
            cut_time = false;
        } else if !cut_time && h < 2 {
            cut_time = true;
        }
        let (extent, other) = if cut_time { (w, h) } else { (h, w) };
        // Uniform cut position; pieces split in proportion to area, clamped so both halves can
        // hold their pieces (always possible because extent·other >= k).
        let a = rng.range(1, extent - 1);
        let ideal = ((k as u128 * a as u128 + extent as u128 / 2) / extent as u128) as u64;
        let lo = 1u64.max(k.saturating_sub((extent - a).saturating_mul(other)));
        let hi = (k - 1).min(a.saturating_mul(other));
        let k1 = ideal.clamp(lo, hi);
        if cut_time {
            stack.push((t0 + a, t1, o0, o1, k - k1));
            stack.push((t0, t0 + a, o0, o1, k1));
        } else {
            stack.push((t0, t1, o0 + a, o1, k - k1));
            stack.push((t0, t1, o0, o0 + a, k1));
        }
    }
    // Shuffle so the input order does not leak the spatial order of the cut (a planner given
    // pieces bottom-up would be handed the answer). Fisher–Yates, O(n).
    for i in (1..n).rev() {
        let j = rng.below(i as u64 + 1) as usize;
        bufs.swap(i, j);
        if keep_offsets {
            offs.swap(i, j);
        }
    }
    for (i, b) in bufs.iter_mut().enumerate() {
        b.id = i as u64;
    }
    (bufs, offs)
}

// ---------------------------------------------------------------------------------------------
// Neural network

/// Training iterations of one network. Layer `i` of an iteration starting at tick `base` runs its
/// forward step at `f(i) = base + i` and its backward step at `b(i) = base + 2L - 1 - i`; the
/// optimizer step is at `base + 2L`. Every lifetime is therefore known in closed form when the
/// buffer is emitted, and stopping after exactly `n` buffers leaves a consistent instance.
fn nn(n: usize, rng: &mut Rng) -> Vec<Buffer> {
    let mut v: Vec<Buffer> = Vec::with_capacity(n);
    if n == 0 {
        return v;
    }
    // Network shape drawn from the seed: depth, batch scale, and the odd factor of the spatial
    // size (7² in ResNet's 224 → 56 → 28 → 14 → 7 pyramid, 3 or 1 elsewhere).
    let layers = (n as u64 / 6).clamp(1, 48 + rng.below(160));
    let stages = 4u64;
    let act_mult = [1u64, 3, 49][rng.below(3) as usize];
    let act_exp = 16 + rng.below(5) as u32; // first-stage activation: act_mult · 2^16..2^20
    let act_size = |i: u64| act_mult << (act_exp - (i * stages / layers) as u32);
    // Weights grow with channels² (×4 per stage); 3×3 kernels add a factor 9.
    let w_size: Vec<u64> = (0..layers)
        .map(|i| {
            let k = if rng.chance(2, 3) { 9 } else { 1 };
            k << (12 + 2 * (i * stages / layers) as u32 + rng.below(2) as u32)
        })
        .collect();
    let push = |v: &mut Vec<Buffer>, lower: u64, upper: u64, size: u64| {
        if v.len() < n {
            let id = v.len() as u64;
            v.push(Buffer::new(id, lower, upper, size));
        }
    };
    // Weights (and small per-layer parameters) live for the whole run: upper is patched once the
    // run length is known.
    const UNTIL_END: u64 = u64::MAX;
    for &ws in &w_size {
        push(&mut v, 0, UNTIL_END, ws);
    }
    let period = 2 * layers + 1;
    let mut base = 1u64;
    while v.len() < n {
        let f = |i: u64| base + i;
        let b = |i: u64| base + 2 * layers - 1 - i;
        let opt = base + 2 * layers;
        for i in 0..layers {
            // Output activation: consumed by the next layer, by a residual join 2–3 layers on,
            // or saved for the backward pass of this layer (the common case in training).
            let r = rng.below(10);
            let upper = if i + 1 == layers || r < 5 {
                b(i) + 1
            } else if r < 7 && i + 3 < layers {
                f(i + 2 + rng.below(2)) + 1
            } else {
                f(i + 1) + 1
            };
            push(&mut v, f(i), upper, act_size(i));
            if rng.chance(3, 10) {
                push(&mut v, f(i), f(i) + 1, 1 << (10 + rng.below(12)));
            }
        }
        for i in (0..layers).rev() {
            // Gradient of this layer's input: consumed by the previous layer's backward step.
            let prev = if i > 0 { act_size(i - 1) } else { act_size(0) };
            push(&mut v, b(i), b(i) + 2, prev);
            // Weight gradient: kept until the optimizer step.
            push(&mut v, b(i), opt + 1, w_size[i as usize]);
            if rng.chance(3, 10) {
                push(&mut v, b(i), b(i) + 1, 1 << (10 + rng.below(12)));
            }
        }
        base += period;
    }
    let end = v.iter().filter(|b| b.upper != UNTIL_END).map(|b| b.upper).max().unwrap_or(1).max(1);
    for b in v.iter_mut().take(layers as usize) {
        b.upper = end;
    }
    v
}

// ---------------------------------------------------------------------------------------------
// Malloc

/// A malloc trace in the allocated-bytes clock (the clock advances by each request's size, the
/// usual lifetime measure of allocator studies). Phases nest like calls: each has an end time, a
/// child ends no later than its parent, and phase-scoped objects die when their phase ends.
fn malloc(n: usize, rng: &mut Rng) -> Vec<Buffer> {
    let mut v: Vec<Buffer> = Vec::with_capacity(n);
    const UNTIL_END: u64 = u64::MAX;
    let mut clock = 0u64;
    let mut phases: Vec<u64> = Vec::with_capacity(16);
    for id in 0..n as u64 {
        while phases.last().is_some_and(|&e| e <= clock) {
            phases.pop();
        }
        if phases.len() < 12 && rng.chance(1, 48) {
            // Phase length log-uniform in bytes; nested inside its parent.
            let len = log_uniform(rng, 26).max(64);
            let end = (clock + len).min(phases.last().copied().unwrap_or(u64::MAX));
            if end > clock {
                phases.push(end);
            }
        }
        let large = rng.chance(3, 100);
        let requested = if large {
            // 4 KiB .. 16 MiB, log-uniform.
            log_uniform_between(rng, 12, 24)
        } else {
            // Pareto(α = 1.3) from 8 bytes, capped at 4 KiB: most requests are a few dozen bytes.
            let u = 1.0 - rng.unit(); // (0, 1]
            ((8.0 * u.powf(-1.0 / 1.3)) as u64).clamp(1, 4096)
        };
        let size = (requested + 15) & !15;
        let lower = clock;
        clock += size;
        let r = rng.below(100);
        let phase_end = phases.last().copied();
        let upper = if large {
            match r {
                0..=44 if phase_end.is_some() => phase_end.unwrap(),
                0..=14 => UNTIL_END,
                15..=29 => lower + log_uniform_between(rng, 20, 32),
                30..=64 => lower + log_uniform_between(rng, 16, 30),
                _ => lower + log_uniform(rng, 20),
            }
        } else {
            match r {
                0..=74 => lower + log_uniform(rng, 16), // dies within the next few requests
                75..=93 if phase_end.is_some() => phase_end.unwrap(),
                75..=98 => lower + log_uniform(rng, 30),
                _ => UNTIL_END, // 1%: program-lifetime state
            }
        };
        v.push(Buffer { id, lower, upper, size, requested, align_log2: 0 });
    }
    let end = clock.max(v.iter().filter(|b| b.upper != UNTIL_END).map(|b| b.upper).max().unwrap_or(0)) + 1;
    for b in &mut v {
        if b.upper == UNTIL_END {
            b.upper = end;
        }
    }
    v
}

// ---------------------------------------------------------------------------------------------
// Nested

/// A random bracket sequence: each step opens a bracket (a buffer starts) or closes the innermost
/// open one. Ticks advance on 70% of steps, so some lifetimes share endpoints (a stress test for
/// the frees-before-allocations convention) while staying strictly nested or disjoint.
fn nested(n: usize, rng: &mut Rng) -> Vec<Buffer> {
    const MAX_DEPTH: usize = 256;
    let mut v: Vec<Buffer> = Vec::with_capacity(n);
    let mut open: Vec<usize> = Vec::with_capacity(MAX_DEPTH);
    let mut t = 0u64;
    let mut opened = 0usize;
    while opened < n || !open.is_empty() {
        if rng.chance(7, 10) {
            t += 1;
        }
        let can_open = opened < n && open.len() < MAX_DEPTH;
        if can_open && (open.is_empty() || rng.chance(1, 2)) {
            v.push(Buffer::new(opened as u64, t, 0, log_uniform(rng, 20)));
            open.push(opened);
            opened += 1;
        } else {
            let i = open.pop().unwrap();
            if t == v[i].lower {
                t += 1; // a lifetime needs at least one tick
            }
            v[i].upper = t;
        }
    }
    v
}

#[cfg(test)]
mod tests;
