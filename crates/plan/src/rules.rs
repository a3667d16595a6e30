//! The two rules a greedy placement is made of: the order buffers are taken in ([`Order`],
//! [`order`]) and how a free address range is chosen ([`Fit`]). Both placers follow them, the
//! general one ([`crate::heuristics`]) and the start-order sweep ([`crate::online`]), so they
//! live here, below both.

use heaplab_model::Buffer;

/// How a free address range is chosen.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Fit {
    /// The lowest range that fits.
    First,
    /// The smallest gap that fits (lowest on ties), else on top.
    Best,
}

/// The order buffers are placed in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Order {
    /// Size descending, longer lifetime first on ties ("big rocks first").
    Size,
    /// Area (size × lifetime) descending.
    Area,
    /// Lifetime length descending, then size.
    Length,
    /// Start time ascending, larger first: what an online allocator would see.
    Start,
    /// Seeded random permutation.
    Random(u64),
}

/// Buffer indices in the given order (ties broken by index, so the result is deterministic).
pub fn order(buffers: &[Buffer], o: Order) -> Vec<u32> {
    let mut idx: Vec<u32> = (0..buffers.len() as u32).collect();
    let b = |i: &u32| &buffers[*i as usize];
    match o {
        Order::Size => idx.sort_unstable_by_key(|i| (std::cmp::Reverse((b(i).size, b(i).length())), b(i).lower, *i)),
        Order::Area => idx.sort_unstable_by_key(|i| {
            (std::cmp::Reverse((b(i).size as u128 * b(i).length() as u128, b(i).size)), b(i).lower, *i)
        }),
        Order::Length => idx.sort_unstable_by_key(|i| (std::cmp::Reverse((b(i).length(), b(i).size)), b(i).lower, *i)),
        Order::Start => idx.sort_unstable_by_key(|i| (b(i).lower, std::cmp::Reverse(b(i).size), *i)),
        Order::Random(seed) => crate::rng::Rng::new(seed).shuffle(&mut idx),
    }
    idx
}
