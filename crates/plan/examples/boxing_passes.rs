//! Measures boxing passes on one instance: fragmentation, per-phase time and the parameters each
//! run settled on. Not a benchmark harness (see `crates/bench`); a probe for tuning the module.
//!
//! ```text
//! cargo run --release -p heaplab-plan --example boxing_passes -- FILE [PASSES] [first|best|mixed] [SEEDS]
//! ```
//! With SEEDS > 1 it runs one pass per seed and prints the distribution of single-pass results.

use heaplab_plan::boxing::{plan, BoxingParams, Squeeze};
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let Some(path) = args.get(1) else {
        eprintln!("usage: boxing_passes FILE [PASSES] [first|best|mixed] [SEEDS]");
        std::process::exit(2);
    };
    let inst = heaplab_model::files::read_instance(path, Default::default()).unwrap_or_else(|e| {
        eprintln!("{e}");
        std::process::exit(2);
    });
    let passes: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(1);
    let squeeze = match args.get(3).map(String::as_str) {
        Some("first") => Squeeze::First,
        Some("best") => Squeeze::Best,
        _ => Squeeze::Mixed,
    };
    let seeds: u64 = args.get(4).and_then(|s| s.parse().ok()).unwrap_or(1);
    let load = heaplab_sweep::max_load(&inst.buffers) as f64;
    let frag = |m: u64| (m as f64 / load - 1.0) * 100.0;
    if seeds > 1 {
        let mut v: Vec<f64> = (0..seeds)
            .map(|s| frag(plan(&inst.buffers, &BoxingParams { seed: s, iterations: 1, squeeze, ..Default::default() }).makespan))
            .collect();
        v.sort_by(f64::total_cmp);
        let q = |p: usize| v[(v.len() - 1) * p / 100];
        println!("{path}: {seeds} single passes ({squeeze:?}): min {:.2}% p10 {:.2}% median {:.2}% p90 {:.2}% max {:.2}%", q(0), q(10), q(50), q(90), q(100));
        return;
    }
    let t = Instant::now();
    let o = plan(&inst.buffers, &BoxingParams { seed: 1, iterations: passes, squeeze, ..Default::default() });
    let secs = t.elapsed().as_secs_f64();
    println!(
        "{path}: n {} passes {} ({:?}) frag {:.2}% in {:.3} s; per pass: box {:.2} ms, unbox {:.2} ms, squeeze {:.2} ms; \
         dummy {} eps range [{:.3}, {:.3}] calibrated {:.3}; best pass {:?} eps {:.3} r* {:.1} rounds {} fit {:?}",
        inst.buffers.len(),
        o.iterations,
        squeeze,
        frag(o.makespan),
        secs,
        o.phase_seconds[0] * 1e3 / o.iterations.max(1) as f64,
        o.phase_seconds[1] * 1e3 / o.iterations.max(1) as f64,
        o.phase_seconds[2] * 1e3 / o.iterations.max(1) as f64,
        o.dummy,
        o.epsilon_range.0,
        o.epsilon_range.1,
        o.epsilon_calibrated,
        o.best_pass,
        o.epsilon,
        o.r_star,
        o.rounds,
        o.fit,
    );
}
