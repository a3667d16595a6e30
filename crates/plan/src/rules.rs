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
    /// Outward from one instant (the [`Cut`]): the buffers live at it in [`Order::Start`] order,
    /// then those that start at or after it in start order, then those that end at or before it
    /// in start order mirrored (by end, latest first, then larger first, then index). The two
    /// sides share only the buffers live at the cut, placed before either, so they can be swept
    /// at once, one per core ([`crate::online::place_outward`]).
    Outward,
    /// [`Order::Outward`] from the instant of the max load ([`Cut::at_peak`]) instead of the
    /// middle: the buffers live there stacked in start order, so that every earlier instant
    /// finds those already started as one block at the bottom. On heaps whose peak holds most
    /// of what is ever live at once (a program's tables, kept to its exit) that packs the
    /// peak tightly where no other order does: a traced ruby heap of 5·10^5 buffers at the
    /// max load in a sweep's time, where every other stage of the planner ended 0.46% above.
    Peak,
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

/// Whether `buffers` are by start already (a component's are, and a trace's).
pub fn by_start(buffers: &[Buffer]) -> bool {
    buffers.windows(2).all(|w| w[0].lower <= w[1].lower)
}

/// Where [`Order::Outward`] and [`Order::Peak`] start, and which side of it each buffer is
/// placed from.
#[derive(Clone, Copy, Debug)]
pub struct Cut(pub u64);

impl Cut {
    /// The start of the middle buffer in start order (the `n/2`-th), so that about as many
    /// buffers start after the cut as end before it.
    pub fn of(middle: &Buffer) -> Cut {
        Cut(middle.lower)
    }

    /// The first instant at which the load of `buffers` is at its max: the buffers live there
    /// are live at the cut, those starting there are placed first after them, so all of them
    /// stack. `by_start` and `by_end` list the buffers by start and by end (each in any order
    /// among equal keys); one merge of the two. Buffers of empty lifetime hold no load.
    pub fn at_peak(buffers: &[Buffer], by_start: impl Iterator<Item = u32>, by_end: impl Iterator<Item = u32>) -> Cut {
        let b = |i: u32| &buffers[i as usize];
        let mut ends = by_end.filter(|&i| b(i).lower < b(i).upper).peekable();
        let (mut load, mut most, mut at) = (0u64, 0u64, 0u64);
        for i in by_start.filter(|&i| b(i).lower < b(i).upper) {
            let now = b(i).lower;
            // What ends at or before this start is freed first: lifetimes are `[lower, upper)`.
            while let Some(j) = ends.next_if(|&j| b(j).upper <= now) {
                load -= b(j).size;
            }
            load += b(i).size;
            if load > most {
                (most, at) = (load, now);
            }
        }
        Cut(at)
    }

    /// Live at the cut: placed first.
    pub fn live(self, b: &Buffer) -> bool {
        b.lower < self.0 && self.0 < b.upper
    }

    /// Starting at or after the cut: swept forward.
    pub fn after(self, b: &Buffer) -> bool {
        b.lower >= self.0
    }

    /// Ending at or before the cut (and starting before it): swept backward.
    pub fn before(self, b: &Buffer) -> bool {
        b.lower < self.0 && b.upper <= self.0
    }
}

/// The indices of `source`, which come by `key` (equal keys in any order), with each run of
/// equal keys by larger size first, then by `tie(index)`, one index at a time, without building
/// the whole order (40 MB and 0.2 s at 10^7 buffers): [`Order::Start`] from indices by start
/// (key: the start), and the backward side of [`Order::Outward`] from indices by end, latest
/// first (key: the end).
pub fn runs_by_size<'a>(
    buffers: &'a [Buffer],
    source: impl Iterator<Item = u32> + 'a,
    key: impl Fn(&Buffer) -> u64 + 'a,
    tie: impl Fn(u32) -> u32 + 'a,
) -> impl Iterator<Item = u32> + 'a {
    let mut source = source.peekable();
    let mut run: Vec<u32> = Vec::new();
    let mut taken = 0;
    std::iter::from_fn(move || {
        if taken < run.len() {
            taken += 1;
            return Some(run[taken - 1]);
        }
        let first = source.next()?;
        let k = key(&buffers[first as usize]);
        if source.peek().is_none_or(|&j| key(&buffers[j as usize]) != k) {
            return Some(first);
        }
        run.clear();
        run.push(first);
        while let Some(j) = source.next_if(|&j| key(&buffers[j as usize]) == k) {
            run.push(j);
        }
        run.sort_unstable_by_key(|&i| (std::cmp::Reverse(buffers[i as usize].size), tie(i)));
        taken = 1;
        Some(run[0])
    })
}

/// [`Order::Start`] one index at a time (sorted first only where `buffers` are not by start).
pub fn in_start_order(buffers: &[Buffer]) -> impl Iterator<Item = u32> + '_ {
    let source: Box<dyn Iterator<Item = u32>> = if by_start(buffers) {
        Box::new(0..buffers.len() as u32)
    } else {
        Box::new(heaplab_sweep::sorted_by(buffers, |b| b.lower).into_iter())
    };
    runs_by_size(buffers, source, |b| b.lower, |i| i)
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
        // By start (already so for a component or a trace), then runs of equal starts by
        // larger size first.
        Order::Start => idx = in_start_order(buffers).collect(),
        Order::Rocks => {
            let mut first = rocks(buffers);
            let mut rock = vec![false; buffers.len()];
            first.iter().for_each(|&i| rock[i as usize] = true);
            first.extend(order(buffers, Order::Start).into_iter().filter(|&i| !rock[i as usize]));
            idx = first;
        }
        Order::Outward | Order::Peak => {
            let start = order(buffers, Order::Start);
            let Some(&middle) = start.get(start.len() / 2) else { return idx };
            let cut = if o == Order::Peak {
                // The first step of the load profile at its max: found apart from the sweeps'
                // merge (`Cut::at_peak`), so that the test of the sweeps against this order
                // checks that merge too.
                let profile = heaplab_sweep::load_profile(buffers);
                let most = profile.iter().map(|&(_, load)| load).max().unwrap_or(0);
                Cut(profile.iter().find(|&&(_, load)| load == most).map_or(0, |&(t, _)| t))
            } else {
                Cut::of(&buffers[middle as usize])
            };
            let mut before: Vec<u32> = idx.iter().copied().filter(|&i| cut.before(b(&i))).collect();
            before.sort_unstable_by_key(|i| (std::cmp::Reverse((b(i).upper, b(i).size)), *i));
            idx = start.iter().copied().filter(|&i| cut.live(b(&i))).chain(start.iter().copied().filter(|&i| cut.after(b(&i)))).chain(before).collect();
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
