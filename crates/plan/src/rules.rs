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
    /// The largest buffers (the "rocks", [`rocks`]) in [`Order::Size`] order, then the rest in
    /// [`Order::Start`] order: first fit by size where it shapes the peak, the cheap sweep of an
    /// online allocator for the many small buffers that fill in around the rocks.
    Rocks,
    /// Outward from one instant ([`outward_cut`]): the buffers live at it in [`Order::Start`]
    /// order (so they stack), then those that start at or after it in start order, then those
    /// that end at or before it by end, latest first (ties: higher index first). Start order
    /// replayed both ways in time from the cut, so the two halves can be swept at once, one per
    /// core ([`crate::online::place_outward`]).
    Outward,
    /// Seeded random permutation.
    Random(u64),
}

/// At most one buffer in this many is a rock ([`rocks`]). On traced python3 heaps (a few large
/// tables among millions of small objects) first fit around the largest 1/4096, 1/512 or 1/64
/// came within 0.002% of the max load as first fit by size did (2.4 and 3.5·10^6 buffers: 0%
/// and 0.002% in 1.0-3.9 s, first fit by size 22 and 27 s). More rocks cost more: a buffer
/// placed below the rocks that start during its lifetime steps over them one by one, and on
/// shapes where the order matters less than the fit (random sizes: 9.9% with 1/512 against
/// first fit by size's 4.1%) they do not make up for it.
pub const ROCK_SHARE: usize = 1024;

/// The most rocks `n` buffers have ([`rocks`]): none below [`ROCK_SHARE`] buffers, where
/// [`Order::Rocks`] is [`Order::Start`].
pub fn most_rocks(n: usize) -> usize {
    n / ROCK_SHARE
}

/// The rocks of [`Order::Rocks`] in [`Order::Size`] order: the buffers larger than the
/// `most_rocks(n) + 1`-th largest size (so never a part of one size class; none when the
/// sizes are all equal).
pub fn rocks(buffers: &[Buffer]) -> Vec<u32> {
    let k = most_rocks(buffers.len());
    if k == 0 {
        return Vec::new();
    }
    let mut sizes: Vec<u64> = buffers.iter().map(|b| b.size).collect();
    let (_, &mut cut, _) = sizes.select_nth_unstable_by(k, |a, b| b.cmp(a));
    let mut idx: Vec<u32> = (0..buffers.len() as u32).filter(|&i| buffers[i as usize].size > cut).collect();
    idx.sort_unstable_by_key(|&i| size_key(buffers, i));
    idx
}

/// [`Order::Size`]'s sort key of buffer `i`.
fn size_key(buffers: &[Buffer], i: u32) -> (std::cmp::Reverse<(u64, u64)>, u64, u32) {
    let b = &buffers[i as usize];
    (std::cmp::Reverse((b.size, b.length())), b.lower, i)
}

/// [`Order::Outward`]'s parts given the start order and the buffers by `(upper, index)`:
/// `(live at the cut, starting at or after it, ending at or before it)`, each in its placement
/// order. The cut is the start of the middle buffer in start order, so that about as many
/// buffers start after it as end before it.
pub fn outward_parts(buffers: &[Buffer], start_order: &[u32], ends: &[u32]) -> (Vec<u32>, Vec<u32>, Vec<u32>) {
    let Some(&mid) = start_order.get(start_order.len() / 2) else { return Default::default() };
    let b = |i: u32| &buffers[i as usize];
    let cut = b(mid).lower;
    let m = start_order.partition_point(|&i| b(i).lower < cut);
    let live = start_order[..m].iter().copied().filter(|&i| b(i).upper > cut).collect();
    let before = ends.iter().rev().copied().filter(|&i| b(i).upper <= cut && b(i).lower < cut).collect();
    (live, start_order[m..].to_vec(), before)
}

/// [`Order::Start`] of `buffers[range]`, where `buffers` are by start already (as a
/// component's are) and `range` does not split a run of equal starts: each run by larger size
/// first, then index, one index at a time, without building the whole order (40 MB and 0.2 s
/// at 10^7 buffers).
pub fn start_order_of_sorted(buffers: &[Buffer], range: std::ops::Range<usize>) -> impl Iterator<Item = u32> + '_ {
    let (mut next, end) = (range.start, range.end);
    let mut run: Vec<u32> = Vec::new();
    let mut taken = 0;
    std::iter::from_fn(move || {
        if taken < run.len() {
            taken += 1;
            return Some(run[taken - 1]);
        }
        if next >= end {
            return None;
        }
        let lower = buffers[next].lower;
        let len = buffers[next + 1..end].iter().take_while(|b| b.lower == lower).count() + 1;
        next += len;
        if len == 1 {
            return Some((next - 1) as u32);
        }
        run.clear();
        run.extend((next - len) as u32..next as u32);
        run.sort_unstable_by_key(|&i| equal_start_key(buffers, i));
        taken = 1;
        Some(run[0])
    })
}

/// [`Order::Start`]'s order among equal starts: larger first, then by index.
fn equal_start_key(buffers: &[Buffer], i: u32) -> (std::cmp::Reverse<u64>, u32) {
    (std::cmp::Reverse(buffers[i as usize].size), i)
}

/// Buffer indices in the given order (ties broken by index, so the result is deterministic).
pub fn order(buffers: &[Buffer], o: Order) -> Vec<u32> {
    let mut idx: Vec<u32> = (0..buffers.len() as u32).collect();
    let b = |i: &u32| &buffers[*i as usize];
    match o {
        Order::Size => idx.sort_unstable_by_key(|&i| size_key(buffers, i)),
        Order::Area => idx.sort_unstable_by_key(|i| {
            (std::cmp::Reverse((b(i).size as u128 * b(i).length() as u128, b(i).size)), b(i).lower, *i)
        }),
        Order::Length => idx.sort_unstable_by_key(|i| (std::cmp::Reverse((b(i).length(), b(i).size)), b(i).lower, *i)),
        Order::Start => {
            // By start (already so for a component or a trace), then runs of equal starts by
            // larger size first.
            if buffers.windows(2).all(|w| w[0].lower <= w[1].lower) {
                idx = start_order_of_sorted(buffers, 0..buffers.len()).collect();
            } else {
                idx = heaplab_sweep::sorted_by(buffers, |b| b.lower);
                let mut k = 0;
                while k < idx.len() {
                    let run = idx[k..].iter().take_while(|i| b(i).lower == b(&idx[k]).lower).count();
                    if run > 1 {
                        idx[k..k + run].sort_unstable_by_key(|&i| equal_start_key(buffers, i));
                    }
                    k += run;
                }
            }
        }
        Order::Rocks => {
            let mut first = rocks(buffers);
            let mut rock = vec![false; buffers.len()];
            first.iter().for_each(|&i| rock[i as usize] = true);
            first.extend(order(buffers, Order::Start).into_iter().filter(|&i| !rock[i as usize]));
            idx = first;
        }
        Order::Outward => {
            let start = order(buffers, Order::Start);
            let (mut live, after, before) = outward_parts(buffers, &start, &heaplab_sweep::sorted_by(buffers, |b| b.upper));
            live.extend(after.into_iter().chain(before));
            idx = live;
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
