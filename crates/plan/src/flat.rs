//! Flat components: those whose load is the same at every tick of their span, so a placement at
//! the lower bound must fill memory completely at every instant.
//!
//! They defeat the greedy and local methods: there is no slack anywhere, so a misplaced buffer
//! costs its whole size, and every instant is a peak, so the critical windows cannot localise
//! the problem (first-fit ends 30–35% above the load on 10^4–10^5 pieces cut from a rectangle,
//! boxing 30–34%). This module shrinks them instead: it merges buffers into *blocks*,
//! rectangles of time × address that their buffers fill exactly, by two rules:
//!
//! * *chain*: a block ending at `t` and a block of the same height starting at `t` become one
//!   block spanning both lifetimes at one offset;
//! * *stack*: blocks with the same lifetime become one block, one above the other.
//!
//! Each block is a valid placement of its buffers, so any placement of the blocks expands to a
//! valid placement of the buffers with the same makespan (`Blocks::expand`). On an instance
//! cut from a rectangle by guillotine cuts the rules rebuild the cutting tree: siblings of a
//! time cut share their height and meet at the cut, siblings of an address cut share their
//! lifetime. What is left (tens to hundreds of blocks for 10^4–10^5 buffers) is small enough
//! for the driver's exact search.
//!
//! The rules can also merge blocks that no perfect packing puts together: two blocks that share
//! a lifetime by coincidence, stacked before one of them could chain with its real neighbour.
//! Chains therefore go first (a block that can chain does, before it is stacked), which halves
//! such merges on cut rectangles; the rest depend on the order in which lifetimes are stacked,
//! so [`reduce`] takes an order seed and the driver tries several, each planned by its own
//! pipeline. Nothing here is a proof: the driver keeps its other placements when the blocks do
//! not pack at the load. (A time-sweep search that tiles each event's freed ranges with the
//! starting buffers, with conflict-directed backjumping, was tried first on the buffers
//! themselves: it thrashes from 50 pieces on, where the wrong order of two pieces shows only
//! many events later.)

use crate::rng::Rng;
use heaplab_model::Buffer;
use std::collections::{HashMap, HashSet};

/// Whether the load of `buffers`, whose max load is `max_load`, is `max_load` at every tick from
/// the first start to the last end. O(n), no allocation: the load never exceeds its max, so it
/// is the max everywhere exactly when the buffers' total area (size × lifetime) is the max
/// times the span. False for an empty slice.
pub fn is_flat(buffers: &[Buffer], max_load: u64) -> bool {
    let (Some(first), Some(last)) = (buffers.iter().map(|b| b.lower).min(), buffers.iter().map(|b| b.upper).max()) else {
        return false;
    };
    let area: u128 = buffers.iter().map(|b| b.size as u128 * (b.upper - b.lower) as u128).sum();
    area == max_load as u128 * (last - first) as u128
}

/// How a block was formed.
#[derive(Clone, Copy, Debug)]
enum Node {
    /// One input buffer.
    Leaf(u32),
    /// Two blocks of the same lifetime, the first below the second.
    Stack(u32, u32),
    /// Two blocks of the same height, the first ending when the second starts, at one offset.
    Chain(u32, u32),
}

/// The blocks of an instance: a forest whose leaves are its buffers.
pub struct Blocks {
    nodes: Vec<Node>,
    /// Lifetime, height (`size`) and alignment (leaves only) of each node.
    shapes: Vec<Buffer>,
    /// The blocks nothing was merged into, in no particular order.
    roots: Vec<u32>,
}

impl Blocks {
    /// Number of blocks left to place.
    pub fn len(&self) -> usize {
        self.roots.len()
    }

    /// Whether there are none (an empty instance).
    pub fn is_empty(&self) -> bool {
        self.roots.is_empty()
    }

    /// The blocks as buffers (id = position), to be placed as an instance of their own.
    pub fn buffers(&self) -> Vec<Buffer> {
        self.roots
            .iter()
            .enumerate()
            .map(|(i, &r)| Buffer { id: i as u64, ..self.shapes[r as usize] })
            .collect()
    }

    /// Offsets of the `n` input buffers, given an offset for each block of [`Blocks::buffers`].
    pub fn expand(&self, block_offsets: &[u64], n: usize) -> Vec<u64> {
        let mut out = vec![0u64; n];
        let mut todo: Vec<(u32, u64)> = self.roots.iter().copied().zip(block_offsets.iter().copied()).collect();
        while let Some((v, at)) = todo.pop() {
            match self.nodes[v as usize] {
                Node::Leaf(b) => out[b as usize] = at,
                Node::Stack(a, b) => {
                    todo.push((a, at));
                    todo.push((b, at + self.shapes[a as usize].size));
                }
                Node::Chain(a, b) => {
                    todo.push((a, at));
                    todo.push((b, at));
                }
            }
        }
        out
    }
}

/// Merges `buffers` into blocks (see the module doc). Stacks go smallest area first; given an
/// `order` seed, each stack's area is jittered by up to a quarter, drawn from it: which blocks
/// end up stacked depends on the order, so a caller can try several. Any instance is accepted;
/// the rules are only likely to pay on flat ones. O(n log n): hash buckets and a heap of stacks.
pub fn reduce(buffers: &[Buffer], order: Option<u64>) -> Blocks {
    let n = buffers.len();
    let mut blocks = Blocks {
        nodes: (0..n as u32).map(Node::Leaf).collect(),
        shapes: buffers.iter().map(|b| Buffer { id: 0, requested: 0, ..*b }).collect(),
        roots: Vec::new(),
    };
    let mut rng = order.map(Rng::new);
    blocks.roots = merge(&mut blocks, rng.as_mut());
    blocks
}

/// Merges the leaves of `blocks` until no rule applies; returns the roots. New nodes are
/// appended to `blocks`.
fn merge(blocks: &mut Blocks, mut rng: Option<&mut Rng>) -> Vec<u32> {
    let mut m = Merger::default();
    for v in 0..blocks.nodes.len() as u32 {
        m.register(v, &blocks.shapes[v as usize]);
    }
    loop {
        // Chains first: a block that can chain with its time neighbour of the same height
        // should, before it is stacked with a block that merely shares its lifetime.
        if let Some((t, h)) = m.chains.pop() {
            while let Some((a, b)) = m.chain_pair(t, h) {
                let shape = Buffer::new(0, blocks.shapes[a as usize].lower, blocks.shapes[b as usize].upper, h);
                let c = m.join(blocks, Node::Chain(a, b), shape);
                m.register(c, &blocks.shapes[c as usize]);
            }
            continue;
        }
        // Stacks smallest first: a wrong stack takes a block whose chain neighbour is not
        // complete yet, and that neighbour's own merges are all smaller than it.
        let Some(std::cmp::Reverse((key, lo, hi))) = m.stacks.pop() else { break };
        let Some(bucket) = m.by_span.get_mut(&(lo, hi)) else { continue };
        bucket.retain(|v| m.alive.contains(v));
        if bucket.len() < 2 {
            continue;
        }
        bucket.sort_unstable_by_key(|&v| (blocks.shapes[v as usize].size, v));
        let (a, b) = (bucket[0], bucket[1]);
        let h = blocks.shapes[a as usize].size + blocks.shapes[b as usize].size;
        let area = h as u128 * (hi - lo) as u128;
        let jittered = match rng.as_deref_mut() {
            Some(r) => area + area * r.below(1 << 10) as u128 / (1 << 12),
            None => area,
        };
        if key < area {
            m.stacks.push(std::cmp::Reverse((jittered, lo, hi)));
            continue;
        }
        bucket.drain(..2);
        let c = m.join(blocks, Node::Stack(a, b), Buffer::new(0, lo, hi, h));
        m.register(c, &blocks.shapes[c as usize]);
        if m.by_span[&(lo, hi)].len() >= 2 {
            m.stacks.push(std::cmp::Reverse((0, lo, hi))); // re-keyed when popped
        }
    }
    let mut roots: Vec<u32> = m.alive.into_iter().collect();
    roots.sort_unstable();
    roots
}

/// The buckets of [`merge`]. Buckets hold dead blocks too (removed lazily): `alive` decides.
#[derive(Default)]
struct Merger {
    alive: HashSet<u32>,
    /// Blocks by lifetime (stack candidates).
    by_span: HashMap<(u64, u64), Vec<u32>>,
    /// Blocks by (instant, height): those ending then, those starting then (chain candidates).
    by_edge: HashMap<(u64, u64), (Vec<u32>, Vec<u32>)>,
    /// Buckets that may hold a chain / a stack.
    chains: Vec<(u64, u64)>,
    /// Stack buckets by (lower bound on the area of their smallest stack, lifetime).
    stacks: std::collections::BinaryHeap<std::cmp::Reverse<(u128, u64, u64)>>,
}

impl Merger {
    fn register(&mut self, v: u32, s: &Buffer) {
        self.alive.insert(v);
        if s.align_log2 > 0 {
            return; // an aligned buffer stays a block of its own: a merge would shift it
        }
        let bucket = self.by_span.entry((s.lower, s.upper)).or_default();
        bucket.push(v);
        if bucket.len() >= 2 {
            self.stacks.push(std::cmp::Reverse((0, s.lower, s.upper))); // re-keyed when popped
        }
        let e = self.by_edge.entry((s.upper, s.size)).or_default();
        e.0.push(v);
        if !e.1.is_empty() {
            self.chains.push((s.upper, s.size));
        }
        let e = self.by_edge.entry((s.lower, s.size)).or_default();
        e.1.push(v);
        if !e.0.is_empty() {
            self.chains.push((s.lower, s.size));
        }
    }

    /// A live block ending at `t` and one starting at `t`, both of height `h`.
    fn chain_pair(&mut self, t: u64, h: u64) -> Option<(u32, u32)> {
        let (ending, starting) = self.by_edge.get_mut(&(t, h))?;
        ending.retain(|v| self.alive.contains(v));
        starting.retain(|v| self.alive.contains(v));
        Some((*ending.last()?, *starting.last()?))
    }

    /// Appends a merged node; its parts are no longer roots. Not registered yet.
    fn join(&mut self, blocks: &mut Blocks, node: Node, shape: Buffer) -> u32 {
        if let Node::Stack(a, b) | Node::Chain(a, b) = node {
            self.alive.remove(&a);
            self.alive.remove(&b);
        }
        blocks.nodes.push(node);
        blocks.shapes.push(shape);
        (blocks.nodes.len() - 1) as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::heuristics::Heuristic;
    use heaplab_sweep::{max_load, validate};
    use proptest::prelude::*;

    #[test]
    fn is_flat_accepts_only_constant_load() {
        let flat = |bs: &[Buffer]| is_flat(bs, max_load(bs));
        assert!(!flat(&[]));
        let b = |l, u, s| Buffer::new(0, l, u, s);
        assert!(flat(&[b(0, 4, 3)]));
        // 2 + 1 over [0, 2), then 3 over [2, 5): flat at 3.
        assert!(flat(&[b(0, 2, 2), b(0, 2, 1), b(2, 5, 3)]));
        assert!(!flat(&[b(0, 2, 2), b(2, 5, 3)]), "a step up");
        assert!(!flat(&[b(0, 2, 3), b(3, 5, 3)]), "a gap is load 0");
        for n in [1usize, 7, 300] {
            let inst = heaplab_gen::generate(heaplab_gen::Kind::Tight, n, 5);
            assert!(flat(&inst.buffers));
            assert_eq!(max_load(&inst.buffers), heaplab_gen::tight_capacity(n, 5));
        }
        assert!(!flat(&heaplab_gen::generate(heaplab_gen::Kind::Random, 300, 5).buffers));
    }

    /// Blocks placed by first-fit expand to a valid placement with the blocks' makespan.
    fn check_expansion(bs: &[Buffer], order: Option<u64>) -> usize {
        let blocks = reduce(bs, order);
        let sub = blocks.buffers();
        assert_eq!(max_load(&sub), max_load(bs), "blocks keep the load");
        let placed = Heuristic::STANDARD[0].run(&sub);
        let off = blocks.expand(&placed, bs.len());
        let v = validate(bs, &off);
        assert!(v.is_valid(), "{}", v.describe(bs, &off));
        assert_eq!(v.makespan, validate(&sub, &placed).makespan);
        blocks.len()
    }

    #[test]
    fn cut_rectangles_collapse_to_few_blocks() {
        for n in [1usize, 2, 40, 500, 3000] {
            for seed in 1..4 {
                let inst = heaplab_gen::generate(heaplab_gen::Kind::Tight, n, seed);
                for order in [None, Some(seed)] {
                    let left = check_expansion(&inst.buffers, order);
                    assert!(left <= (n / 20).max(3), "n={n} seed={seed}: {left} blocks left");
                }
            }
        }
    }

    #[test]
    fn every_generated_kind_expands_validly() {
        for &kind in heaplab_gen::Kind::ALL {
            for n in [0usize, 1, 3, 200] {
                check_expansion(&heaplab_gen::generate(kind, n, 9).buffers, None);
            }
        }
    }

    proptest! {
        /// Adversarial shapes: few distinct lifetimes and sizes, so stacks and chains abound
        /// (including buckets of many blocks and blocks that could chain several ways).
        #[test]
        fn expansion_is_valid_on_coinciding_shapes(
            raw in prop::collection::vec((0u64..6, 1u64..4, 1u64..4), 0..60),
            order in prop::option::of(0u64..1000),
        ) {
            let bs: Vec<Buffer> = raw.iter().enumerate().map(|(i, &(l, d, s))| Buffer::new(i as u64, l, l + d, s)).collect();
            check_expansion(&bs, order);
        }
    }
}
