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
        Order::Start => {
            // By start (already so for a component or a trace), then runs of equal starts by
            // larger size first.
            if !buffers.windows(2).all(|w| w[0].lower <= w[1].lower) {
                idx = heaplab_sweep::sorted_by(buffers, |b| b.lower);
            }
            let mut k = 0;
            while k < idx.len() {
                let run = idx[k..].iter().take_while(|i| b(i).lower == b(&idx[k]).lower).count();
                if run > 1 {
                    idx[k..k + run].sort_unstable_by_key(|i| (std::cmp::Reverse(b(i).size), *i));
                }
                k += run;
            }
        }
        Order::Random(seed) => crate::rng::Rng::new(seed).shuffle(&mut idx),
    }
    idx
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Start order, whether the input is already by start (with runs of equal starts) or not,
    /// is the plain sort by `(lower, larger size first, index)`.
    #[test]
    fn start_order_is_the_plain_sort_on_sorted_and_unsorted_input() {
        let mut rng = crate::rng::Rng::new(5);
        for round in 0..200u64 {
            let n = (round % 80) as usize;
            let mut bs: Vec<Buffer> = (0..n as u64)
                .map(|i| {
                    let lo = rng.next_u64() % (1 + round % 20);
                    Buffer::new(i, lo, lo + 1 + rng.next_u64() % 9, 1 + rng.next_u64() % 4)
                })
                .collect();
            if round % 2 == 0 {
                bs.sort_by_key(|b| b.lower);
            }
            let mut want: Vec<u32> = (0..n as u32).collect();
            want.sort_by_key(|&i| (bs[i as usize].lower, std::cmp::Reverse(bs[i as usize].size), i));
            assert_eq!(order(&bs, Order::Start), want, "round {round}");
        }
    }
}
