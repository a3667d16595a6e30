//! Every strategy on random and adversarial block sets: the layout is valid by an independent
//! pairwise check (lifetimes intersect ⇒ slots disjoint), offsets honour alignment, the file
//! round-trips, and the figures (region, makespan, max load) hold what each strategy promises.

use heaplab_access::Edge;
use heaplab_apply::format;
use heaplab_apply::profile::Usage;
use heaplab_apply::source::{Source, SourceBlock};
use heaplab_apply::strategy::{build, Built, Strategy, StrategyOptions};
use heaplab_apply::{slot, Layout};
use heaplab_rng::Rng;
use std::time::Duration;

fn opts() -> StrategyOptions {
    StrategyOptions { time_limit: Duration::from_millis(200), seed: 3 }
}

fn block(id: u64, lower: u64, upper: u64, size: u64) -> SourceBlock {
    SourceBlock { id, size, align_log2: 0, lower, upper, context: 0 }
}

/// The independent oracle: every pair of planned entries, by brute force.
fn pairwise_valid(l: &Layout) -> Result<(), String> {
    let e: Vec<_> = l.contexts.iter().flat_map(|c| c.entries.iter()).filter(|e| e.offset.is_some()).collect();
    for i in 0..e.len() {
        let (oi, si) = (e[i].offset.unwrap(), slot(e[i].size));
        if oi % 16 != 0 || oi + si > l.region {
            return Err(format!("block {} at {oi} (+{si}) in region {}", e[i].block, l.region));
        }
        for j in 0..i {
            let (oj, sj) = (e[j].offset.unwrap(), slot(e[j].size));
            let time = e[i].lower < e[j].upper && e[j].lower < e[i].upper;
            if time && oi < oj + sj && oj < oi + si {
                return Err(format!("blocks {} and {} overlap", e[i].block, e[j].block));
            }
        }
    }
    Ok(())
}

/// Checks everything a built layout promises, for `src`.
fn check(s: Strategy, src: &Source, b: &Built) {
    let l = &b.layout;
    assert_eq!(l.strategy, s.name());
    let n: usize = l.contexts.iter().map(|c| c.entries.len()).sum();
    assert_eq!(n, src.blocks.len(), "{}: one entry per block", s.name());
    if src.blocks.len() <= 300 {
        pairwise_valid(l).unwrap_or_else(|e| panic!("{}: {e}", s.name()));
    }
    for c in &l.contexts {
        assert!(c.entries.windows(2).all(|w| w[0].block < w[1].block), "{}: entries in ordinal order", s.name());
        for e in &c.entries {
            let blk = &src.blocks[e.block as usize];
            assert_eq!((e.size, e.lower, e.upper, c.key), (blk.size, blk.lower, blk.upper, blk.context));
            let o = e.offset.expect("every strategy plans every block of these sets");
            assert_eq!(o % (1 << blk.align_log2), 0, "{}: block {} misaligned", s.name(), e.block);
        }
    }
    assert_eq!(format::from_bytes("t", &format::to_bytes(l).unwrap()).unwrap(), *l);
    assert!(l.region >= b.max_load || src.blocks.is_empty(), "{}: region {} below max load {}", s.name(), l.region, b.max_load);
    if s.reuses_memory() {
        let p = b.plan.as_ref().unwrap();
        assert!(l.region <= p.makespan, "{}: region {} above the plan's makespan {}", s.name(), l.region, p.makespan);
        if s == Strategy::Plan {
            assert_eq!(l.region, p.makespan);
        }
    } else {
        let sum: u64 = src.blocks.iter().map(|b| slot(b.size)).sum();
        assert!(l.region >= sum, "{}: a strategy that never reuses memory needs every slot", s.name());
        if s == Strategy::Simple && src.blocks.iter().all(|b| b.align_log2 <= 4) {
            assert_eq!(l.region, sum);
        }
    }
}

fn usage_for(blocks: &[SourceBlock], r: &mut Rng) -> Usage {
    let n = blocks.len() as u64;
    let mut edges = |k: u64| -> Vec<Edge> {
        if n < 2 {
            return Vec::new();
        }
        (0..k).map(|_| Edge { from: r.below(n), to: r.below(n), weight: 1 + r.below(50) }).collect()
    };
    let (coaccess, friends) = (edges(n * 2), edges(n));
    Usage { accesses: blocks.iter().map(|b| b.size % 97).collect(), coaccess, friends, aligned: n, profile_blocks: n }
}

fn run_all(src: &Source, usage: &Usage) {
    for s in Strategy::ALL {
        let b = build(s, src, Some(usage), &opts()).unwrap_or_else(|e| panic!("{}: {e}", s.name()));
        check(s, src, &b);
        if s.needs_profile() {
            assert_eq!(build(s, src, None, &opts()).unwrap_err().to_string(), format!("strategy {} needs an access profile", s.name()));
        }
    }
}

fn source(blocks: Vec<SourceBlock>) -> Source {
    Source { file: "t".into(), blocks, stack_depth: 0 }
}

#[test]
fn random_block_sets() {
    let mut r = Rng::new(11);
    for round in 0..40 {
        let n = r.below(120);
        let blocks: Vec<SourceBlock> = (0..n)
            .map(|i| {
                let lo = r.below(200);
                let mut b = block(i, lo, lo + 1 + r.below(60), [0, 1, 8, 15, 16, 17, 100, 4000][r.below(8) as usize] + r.below(64));
                if r.below(6) == 0 {
                    b.align_log2 = [5, 6, 12][r.below(3) as usize];
                }
                b
            })
            .collect();
        let src = source(blocks);
        let u = usage_for(&src.blocks, &mut r);
        run_all(&src, &u);
        let _ = round;
    }
}

#[test]
fn adversarial_block_sets() {
    let mut r = Rng::new(5);
    let sets: Vec<(&str, Vec<SourceBlock>)> = vec![
        ("empty", vec![]),
        ("one", vec![block(0, 0, 1, 0)]),
        ("equal sizes, all live together", (0..100).map(|i| block(i, 0, 1000, 48)).collect()),
        ("equal sizes, one after another", (0..100).map(|i| block(i, i, i + 1, 48)).collect()),
        ("nested lifetimes", (0..60).map(|i| block(i, i, 200 - i, 16 * (i + 1))).collect()),
        ("huge ratios", (0..50).map(|i| block(i, i % 7, 10 + i % 5, if i % 10 == 0 { 1 << 36 } else { 1 })).collect()),
        (
            "alignments",
            (0..64)
                .map(|i| SourceBlock { align_log2: (i % 13) as u8, ..block(i, i / 3, i / 3 + 5, 1 + i * 3) })
                .collect(),
        ),
    ];
    for (name, blocks) in sets {
        let src = source(blocks);
        let u = usage_for(&src.blocks, &mut r);
        for s in Strategy::ALL {
            let b = build(s, &src, Some(&u), &opts()).unwrap_or_else(|e| panic!("{name}: {}: {e}", s.name()));
            check(s, &src, &b);
        }
    }
}

#[test]
fn contexts_group_entries_by_key_in_ordinal_order() {
    let keys = [7u64, 3, 7, 9, 3, 3];
    let blocks: Vec<SourceBlock> = keys.iter().enumerate().map(|(i, &k)| SourceBlock { context: k, ..block(i as u64, i as u64, 10, 32) }).collect();
    let src = Source { file: "t".into(), blocks, stack_depth: 4 };
    let b = build(Strategy::Simple, &src, None, &opts()).unwrap();
    let got: Vec<(u64, Vec<u64>)> = b.layout.contexts.iter().map(|c| (c.key, c.entries.iter().map(|e| e.block).collect())).collect();
    assert_eq!(got, vec![(3, vec![1, 4, 5]), (7, vec![0, 2]), (9, vec![3])]);
    assert_eq!(b.layout.stack_depth, 4);
    check(Strategy::Simple, &src, &b);
}

#[test]
fn libstaticmalloc_orders() {
    // Sizes 48, 16, 32, 16; edges 0 → 2 (heavy), 0 → 3, 2 → 1.
    let blocks: Vec<SourceBlock> = [48, 16, 32, 16].iter().enumerate().map(|(i, &s)| block(i as u64, 0, 9, s)).collect();
    let src = source(blocks);
    let edges = vec![Edge { from: 0, to: 2, weight: 9 }, Edge { from: 0, to: 3, weight: 2 }, Edge { from: 2, to: 1, weight: 1 }];
    let u = Usage { accesses: vec![0; 4], coaccess: edges.clone(), friends: edges, aligned: 4, profile_blocks: 4 };
    let offsets = |s: Strategy| -> Vec<u64> {
        let b = build(s, &src, Some(&u), &opts()).unwrap();
        b.layout.contexts[0].entries.iter().map(|e| e.offset.unwrap()).collect()
    };
    assert_eq!(offsets(Strategy::Simple), vec![0, 48, 64, 96]);
    assert_eq!(offsets(Strategy::Size), vec![64, 0, 32, 16]);
    assert_eq!(offsets(Strategy::OnePerLine), vec![0, 64, 128, 192]);
    // depth first from the largest (0): 0, 2 (heaviest), 1, then 3
    assert_eq!(offsets(Strategy::UsageDf), vec![0, 80, 48, 96]);
    assert_eq!(offsets(Strategy::FriendsDf), offsets(Strategy::UsageDf));
    // grouped: hub 0's successors 2, 3; hub 2's successor 1; then 0
    assert_eq!(offsets(Strategy::UsageGrouped), vec![64, 48, 0, 32]);
    assert_ne!(offsets(Strategy::Random), offsets(Strategy::Simple), "this seed shuffles");
}

#[test]
fn plan_affinity_brings_coaccessed_blocks_together_without_raising_the_makespan() {
    // A long-lived pair (0, 1) that the plan may put far apart, short-lived blocks around them
    // leaving room, and a heavy co-access edge between 0 and 1.
    let mut blocks = vec![block(0, 0, 100, 64), block(1, 0, 100, 64)];
    for i in 0..40 {
        blocks.push(block(2 + i, i * 2, i * 2 + 3, 256));
    }
    let src = source(blocks);
    let u = Usage { accesses: vec![1; 42], coaccess: vec![Edge { from: 0, to: 1, weight: 1000 }], friends: vec![], aligned: 42, profile_blocks: 42 };
    let plan = build(Strategy::Plan, &src, Some(&u), &opts()).unwrap();
    let aff = build(Strategy::PlanAffinity, &src, Some(&u), &opts()).unwrap();
    check(Strategy::PlanAffinity, &src, &aff);
    let r = aff.affinity.as_ref().unwrap();
    assert!(aff.layout.region <= plan.plan.as_ref().unwrap().makespan);
    assert_eq!(r.near_after, 1.0, "{r:?}");
    assert_eq!(aff.near_share, Some(1.0));
    let o: Vec<u64> = aff.layout.contexts[0].entries[..2].iter().map(|e| e.offset.unwrap()).collect();
    assert!(o[0].abs_diff(o[1]) <= 64 + 64, "{o:?}");
}

#[test]
fn plan_affinity_never_loses_validity_on_dense_random_sets() {
    let mut r = Rng::new(99);
    for _ in 0..30 {
        let n = 20 + r.below(200);
        let blocks: Vec<SourceBlock> = (0..n)
            .map(|i| {
                let lo = r.below(100);
                let mut b = block(i, lo, lo + 1 + r.below(40), 16 * (1 + r.below(4)));
                if r.below(10) == 0 {
                    b.align_log2 = 6;
                }
                b
            })
            .collect();
        let src = source(blocks);
        let u = usage_for(&src.blocks, &mut r);
        let b = build(Strategy::PlanAffinity, &src, Some(&u), &opts()).unwrap();
        check(Strategy::PlanAffinity, &src, &b);
        let a = b.affinity.unwrap();
        assert!(a.makespan_after <= a.makespan_before);
        assert!(a.moved + a.swapped + a.already_near <= a.pairs);
    }
}
