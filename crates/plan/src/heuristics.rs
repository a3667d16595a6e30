//! Greedy placement heuristics in the DSA sense: buffers are taken in some order and each goes
//! to the lowest (first-fit) or tightest (best-fit) address range that is free *during its
//! lifetime*, i.e. not used by any already placed buffer whose lifetime intersects it.
//!
//! Finding the free ranges is the costly part. [`Occupancy`] answers it without a conflict graph
//! and without even listing the conflicting buffers (see its module).

use crate::occupancy::Occupancy;
pub use crate::rules::{order, Fit, Order};
use heaplab_model::Buffer;

/// A heuristic: an order and a fit rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Heuristic {
    /// Placement order.
    pub order: Order,
    /// Gap choice.
    pub fit: Fit,
}

impl Heuristic {
    /// The deterministic heuristics a portfolio run tries, most useful first (first-fit by size
    /// is usually best and always cheapest; best-fit costs more).
    pub const STANDARD: [Heuristic; 10] = [
        Heuristic { order: Order::Size, fit: Fit::First },
        Heuristic { order: Order::Rocks, fit: Fit::First },
        Heuristic { order: Order::Peak, fit: Fit::First },
        Heuristic { order: Order::Size, fit: Fit::Best },
        Heuristic { order: Order::Area, fit: Fit::First },
        Heuristic { order: Order::Length, fit: Fit::First },
        Heuristic { order: Order::Start, fit: Fit::First },
        Heuristic { order: Order::Area, fit: Fit::Best },
        Heuristic { order: Order::Length, fit: Fit::Best },
        Heuristic { order: Order::Start, fit: Fit::Best },
    ];

    /// Whether it runs as a sweep over time ([`crate::online`]): start order, or outward from
    /// the middle. A sweep always completes (it ignores deadlines), in O(n log n).
    pub fn is_sweep(&self) -> bool {
        matches!(self.order, Order::Start | Order::Outward | Order::Peak)
    }

    /// A short name such as `first-fit/size`.
    pub fn name(&self) -> String {
        let fit = match self.fit {
            Fit::First => "first-fit",
            Fit::Best => "best-fit",
        };
        let order = match self.order {
            Order::Size => "size".to_string(),
            Order::Area => "area".to_string(),
            Order::Length => "lifetime".to_string(),
            Order::Start => "start".to_string(),
            Order::Rocks => "rocks".to_string(),
            Order::Outward => "outward".to_string(),
            Order::Peak => "peak".to_string(),
            Order::Random(s) => format!("random#{s}"),
        };
        format!("{fit}/{order}")
    }

    /// Its cost relative to first-fit by size on the same instance, for the driver's decision
    /// whether another heuristic still fits in the time left: best fit walks every gap (about
    /// three times first fit's work); start order is a sweep ([`crate::online`]), a few percent
    /// of it at 10^5-10^6 buffers, first fit's sweep (its gaps in a flat list) about half of
    /// best fit's (in ordered maps); first fit around the rocks a sweep and a little more; the
    /// outward sweeps less than one sweep where they have two cores; from the peak a little more
    /// than one sweep, since it runs where the other core is taken (and finds the peak first),
    /// so that it is never the cheapest, which goes first above the huge size.
    pub fn relative_cost(&self) -> f64 {
        match (self.order, self.fit) {
            // Two sweeps at once: 0.55-0.6 of the sweep's wall time on two cores at 10^7.
            (Order::Outward, fit) if rayon::current_num_threads() > 1 => 0.6 * Heuristic { order: Order::Start, fit }.relative_cost(),
            (Order::Peak, fit) => 1.1 * Heuristic { order: Order::Start, fit }.relative_cost(),
            (Order::Start | Order::Outward, Fit::First) => 0.05,
            (Order::Start | Order::Outward, Fit::Best) | (Order::Rocks, Fit::First) => 0.1,
            (_, Fit::Best) => 3.0,
            (_, Fit::First) => 1.0,
        }
    }

    /// [`Heuristic::run`] that gives up (`None`) once `deadline` has passed: a heuristic's cost
    /// is predicted from another's, and the prediction can be far off (best-fit by area on a
    /// traced perl heap: 12 times first-fit by size). The sweeps always finish.
    pub fn run_until(&self, buffers: &[Buffer], deadline: std::time::Instant) -> Option<Vec<u64>> {
        self.run_bounded(buffers, None, Some(deadline), None, None, None)
    }

    /// [`Heuristic::run_until`] given the buffers in order of their ends (`ends`, as splitting
    /// into components gives them), which the sweeps use instead of sorting; given up also once
    /// `cancel` is set (the caller cancelled the plan; the sweeps ignore it).
    pub fn run_until_with_ends(&self, buffers: &[Buffer], ends: &[u32], deadline: std::time::Instant, cancel: Option<&std::sync::atomic::AtomicBool>) -> Option<Vec<u64>> {
        self.run_bounded(buffers, Some(ends), Some(deadline), None, None, cancel)
    }

    /// [`Heuristic::run_until_with_ends`] for a run beside others that stand in for it: it
    /// gives up as soon as `stop` is set (one of them reached the target), and, with a `gate`,
    /// once the gate is set (they are done) and its progress so far (buffers placed against the
    /// clock, from its start) says it would not finish by `deadline`; and once `cancel` is set
    /// (the caller cancelled the plan). The sweeps ignore all three.
    pub fn run_beside(
        &self,
        buffers: &[Buffer],
        ends: &[u32],
        deadline: std::time::Instant,
        gate: Option<&std::sync::atomic::AtomicBool>,
        stop: &std::sync::atomic::AtomicBool,
        cancel: Option<&std::sync::atomic::AtomicBool>,
    ) -> Option<Vec<u64>> {
        self.run_bounded(buffers, Some(ends), Some(deadline), gate, Some(stop), cancel)
    }

    /// Places every buffer; the result is valid by construction. Start order and outward run as
    /// sweeps ([`crate::online`]): the same offsets, in O(n log n).
    pub fn run(&self, buffers: &[Buffer]) -> Vec<u64> {
        self.run_bounded(buffers, None, None, None, None, None).expect("a placement without a deadline always completes")
    }

    fn run_bounded(
        &self,
        buffers: &[Buffer],
        ends: Option<&[u32]>,
        deadline: Option<std::time::Instant>,
        gate: Option<&std::sync::atomic::AtomicBool>,
        stop: Option<&std::sync::atomic::AtomicBool>,
        cancel: Option<&std::sync::atomic::AtomicBool>,
    ) -> Option<Vec<u64>> {
        // The sweeps, and first fit around the rocks, free buffers in order of their ends.
        let around_rocks = self.order == Order::Rocks && self.fit == Fit::First;
        let sorted;
        let ends = match ends {
            Some(ends) => ends,
            None if self.is_sweep() || around_rocks => {
                sorted = crate::online::ends_of(buffers);
                &sorted
            }
            None => &[],
        };
        if self.is_sweep() {
            return Some(match self.order {
                Order::Start => crate::online::place_by_start_with_ends(buffers, ends, self.fit),
                order => crate::online::place_outward(buffers, ends, self.fit, order),
            });
        }
        let clock = DeadlineCheck { gate, stop, ..DeadlineCheck::new(deadline) }.or_cancelled(cancel);
        if around_rocks {
            // The rocks by first fit by size in an index of their own, then the sweep around
            // them ([`crate::online::first_fit_around`]): the same offsets as the general
            // placer's, at little more than a sweep's cost.
            let rocks = crate::rules::rocks(buffers);
            let sub: Vec<Buffer> = rocks.iter().map(|&r| buffers[r as usize]).collect();
            let in_order: Vec<u32> = (0..sub.len() as u32).collect();
            let rock_offsets = place_with(&mut Occupancy::new(&sub), &sub, &in_order, Fit::First, u64::MAX, clock)?;
            return crate::online::first_fit_around(buffers, ends, &rocks, &rock_offsets, deadline);
        }
        let order = order(buffers, self.order);
        place_with(&mut Occupancy::new(buffers), buffers, &order, self.fit, u64::MAX, clock)
    }
}

/// Places buffers one by one in `order` at the lowest offset that clashes with no placed,
/// time-conflicting buffer, honouring alignment. Valid by construction.
pub fn first_fit_in_order(buffers: &[Buffer], order: &[u32]) -> Vec<u64> {
    place_in_order(buffers, order, Fit::First)
}

/// Places buffers in `order` with the given fit rule.
pub fn place_in_order(buffers: &[Buffer], order: &[u32], fit: Fit) -> Vec<u64> {
    place_in_order_bounded(buffers, order, fit, u64::MAX, None, None).expect("an unbounded placement always completes")
}

/// Index work ([`Occupancy::work`]) between two looks at the clock: about a millisecond, so a
/// deadline is kept to that even where single queries are costly (sets that coalesce nowhere,
/// where a query walks every interval below its answer).
pub const WORK_PER_CLOCK_CHECK: u64 = 1 << 16;

/// Looks at the clock of a greedy loop over an [`Occupancy`] every 512 buffers and every
/// [`WORK_PER_CLOCK_CHECK`] steps of the index, whichever comes first.
pub struct DeadlineCheck<'g> {
    deadline: Option<std::time::Instant>,
    next_work: u64,
    /// Once set: give up when (buffers placed, time since the first placement) project past
    /// the deadline ([`Heuristic::run_beside`]). Timed from the first placement, not from
    /// the order's sort and the index's set-up (a second or two at 3·10^6 buffers, paid once).
    gate: Option<&'g std::sync::atomic::AtomicBool>,
    /// The run's pace, from its first placement.
    pace: Option<Pace>,
    /// Once set: give up at the next check ([`Heuristic::run_beside`]).
    stop: Option<&'g std::sync::atomic::AtomicBool>,
    /// Once set: give up at the next check ([`DeadlineCheck::or_cancelled`]).
    cancel: Option<&'g std::sync::atomic::AtomicBool>,
}

impl<'g> DeadlineCheck<'g> {
    /// Checks for `deadline` (never, when `None`).
    pub fn new(deadline: Option<std::time::Instant>) -> Self {
        DeadlineCheck { deadline, next_work: WORK_PER_CLOCK_CHECK, gate: None, pace: None, stop: None, cancel: None }
    }

    /// This check, passed also once `cancel` is set (a cancelled plan stops a long greedy loop at
    /// its next check, not at the deadline).
    pub fn or_cancelled(self, cancel: Option<&'g std::sync::atomic::AtomicBool>) -> Self {
        DeadlineCheck { cancel, ..self }
    }

    /// Whether the deadline has passed, asked before placing the `k`-th buffer with `occ`.
    pub fn passed(&mut self, k: usize, occ: &Occupancy) -> bool {
        self.passed_of(k, 0, occ)
    }

    /// [`DeadlineCheck::passed`], of `n` buffers in all: true also, once the gate is set, when
    /// its [`Pace`] says the run would pass the deadline before the last is placed.
    fn passed_of(&mut self, k: usize, n: usize, occ: &Occupancy) -> bool {
        let Some(d) = self.deadline else { return false };
        if self.gate.is_some() && self.pace.is_none() {
            self.pace = Some(Pace::new(std::time::Instant::now()));
        }
        if k % 512 != 511 && occ.work() < self.next_work {
            return false;
        }
        self.next_work = occ.work() + WORK_PER_CLOCK_CHECK;
        if [self.stop, self.cancel].into_iter().flatten().any(|s| s.load(std::sync::atomic::Ordering::Relaxed)) {
            return true;
        }
        let now = std::time::Instant::now();
        if let (Some(gate), Some(pace)) = (self.gate, self.pace.as_mut()) {
            if gate.load(std::sync::atomic::Ordering::Relaxed) && pace.late(k, n, now, d) {
                return true;
            }
        }
        now >= d
    }
}

/// Whether a greedy run of `n` buffers will finish by a deadline, judged from its progress
/// ([`DeadlineCheck`]). It is measured at every 1/64 of the buffers placed, from the first
/// 1/64 on (the first, largest buffers are the cheapest), at the run's average pace and at its
/// pace over the last stretch, and the run is late when either projects past the deadline at
/// two measures in a row. The pace falls as the buffers get smaller: first fit by size on
/// 10^6 random buffers, judged at its average alone, was found late only after 5.7 s of a
/// 12 s limit (it takes 15–30 s). One measure alone is not enough: at the first, the index's
/// set-up costs weigh on a few thousand placements, and a traced perl heap of 4.7·10^5
/// buffers that is placed in 1.5 s was projected at 3.3–4.7 s there, in one run of two.
#[derive(Clone, Copy, Debug)]
pub struct Pace {
    began: std::time::Instant,
    /// The last measure: buffers placed, when, and whether it projected past the deadline.
    last: Option<(usize, std::time::Instant, bool)>,
}

impl Pace {
    /// A run that placed its first buffer at `began`.
    pub fn new(began: std::time::Instant) -> Self {
        Pace { began, last: None }
    }

    /// Asked with `k` of `n` buffers placed at `now`: whether the run is late for `deadline`
    /// (never where `n` is not known, 0).
    pub fn late(&mut self, k: usize, n: usize, now: std::time::Instant, deadline: std::time::Instant) -> bool {
        let Some(left) = n.checked_sub(k).filter(|_| n > 0) else { return false };
        let due = match self.last {
            Some((k0, ..)) => (k - k0) * 64 >= n,
            None => k > 0 && k * 64 >= n,
        };
        if !due {
            return false;
        }
        let (k0, t0, late_before) = self.last.unwrap_or((0, self.began, false));
        let left = left as f64;
        let average = now.duration_since(self.began).as_secs_f64() * left / k as f64;
        let recent = now.duration_since(t0).as_secs_f64() * left / (k - k0) as f64;
        let late = now + std::time::Duration::from_secs_f64(average.max(recent)) > deadline;
        self.last = Some((k, now, late));
        late && late_before
    }
}

/// [`place_in_order`] that gives up (returns `None`) as soon as a buffer's top `offset + size`
/// would exceed `max_makespan`, or once `deadline` has passed or `cancel` is set (checked every
/// 512 buffers and every [`WORK_PER_CLOCK_CHECK`] steps of the index). The boxing algorithm's
/// early stop: a pass that cannot beat the best makespan known so far is abandoned instead of
/// finished. When it returns `Some`, the offsets are exactly those of [`place_in_order`].
pub fn place_in_order_bounded(
    buffers: &[Buffer],
    order: &[u32],
    fit: Fit,
    max_makespan: u64,
    deadline: Option<std::time::Instant>,
    cancel: Option<&std::sync::atomic::AtomicBool>,
) -> Option<Vec<u64>> {
    place_with(&mut Occupancy::new(buffers), buffers, order, fit, max_makespan, DeadlineCheck::new(deadline).or_cancelled(cancel))
}

/// [`place_in_order_bounded`] on a given (empty) index, so that a test can read its work.
fn place_with(
    occ: &mut Occupancy,
    buffers: &[Buffer],
    order: &[u32],
    fit: Fit,
    max_makespan: u64,
    mut clock: DeadlineCheck,
) -> Option<Vec<u64>> {
    let mut offsets = vec![0u64; buffers.len()];
    for (k, &i) in order.iter().enumerate() {
        if clock.passed_of(k, order.len(), occ) {
            return None;
        }
        let i = i as usize;
        let off = match fit {
            Fit::First => occ.lowest_fit(i),
            Fit::Best => occ.tightest_fit(i),
        };
        if off.saturating_add(buffers[i].size) > max_makespan {
            return None;
        }
        offsets[i] = off;
        occ.insert(i, off);
    }
    Some(offsets)
}

/// The trivial case of no two buffers conflicting, solved optimally: everything at offset 0.
pub fn solve_conflict_free(buffers: &[Buffer]) -> Option<Vec<u64>> {
    // In start order (as a component's buffers are) one pass decides, and stops at the first
    // buffer that starts before an earlier one ends (at once on most instances; sorting for
    // the sweep took 0.3 s at 10^7 buffers); otherwise the sweep.
    let mut end = 0;
    for (k, b) in buffers.iter().enumerate() {
        if k > 0 && b.lower < buffers[k - 1].lower {
            return (heaplab_sweep::max_live(buffers) <= 1).then(|| vec![0; buffers.len()]);
        }
        if b.lower < end {
            return None;
        }
        end = end.max(b.upper);
    }
    Some(vec![0; buffers.len()])
}

/// The trivial case of equal sizes (every alignment dividing that size), solved optimally: interval
/// graph colouring by start time uses exactly max-live colours, so makespan = max load.
pub fn solve_equal_sizes(buffers: &[Buffer]) -> Option<Vec<u64>> {
    let size = buffers.first()?.size;
    if buffers.iter().any(|b| b.size != size || size % b.alignment() != 0) {
        return None;
    }
    let spans: Vec<(u64, u64)> = buffers.iter().map(|b| (b.lower, b.upper)).collect();
    let (colour, _) = colour_intervals(&spans);
    Some(colour.into_iter().map(|c| c as u64 * size).collect())
}

/// Greedy interval graph colouring of half-open spans `[lower, upper)`: spans taken by start
/// (then index), each given the lowest colour freed by a span that ended at or before its start,
/// else a new one. Spans of one colour never intersect, and the number of colours (returned
/// second) is the maximum number of spans live at once, which is optimal. O(n log n).
///
/// The one colouring of the crate: equal-size placement above, and the rows of the boxing
/// algorithm (Theorem 2's packing of unresolved jobs, unboxing's same-size sets).
pub fn colour_intervals(spans: &[(u64, u64)]) -> (Vec<u32>, u32) {
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;
    let mut by_start: Vec<u32> = (0..spans.len() as u32).collect();
    by_start.sort_unstable_by_key(|&i| (spans[i as usize].0, i));
    let mut colour = vec![0u32; spans.len()];
    let mut live: BinaryHeap<Reverse<(u64, u32)>> = BinaryHeap::new(); // (upper, colour)
    let mut free: BinaryHeap<Reverse<u32>> = BinaryHeap::new();
    let mut next = 0u32;
    for i in by_start {
        let (lower, upper) = spans[i as usize];
        while let Some(&Reverse((end, c))) = live.peek() {
            if end > lower {
                break;
            }
            live.pop();
            free.push(Reverse(c));
        }
        let c = free.pop().map(|r| r.0).unwrap_or_else(|| {
            next += 1;
            next - 1
        });
        colour[i as usize] = c;
        live.push(Reverse((upper, c)));
    }
    (colour, next)
}

#[cfg(test)]
mod tests {
    use super::*;
    use heaplab_model::align_up;
    use heaplab_sweep::{max_load, validate};

    /// Oracle: the same greedy rule, computed by scanning every placed buffer (quadratic).
    fn oracle_place(buffers: &[Buffer], order: &[u32], fit: Fit) -> Vec<u64> {
        let mut offsets = vec![0u64; buffers.len()];
        let mut placed: Vec<usize> = Vec::new();
        for &i in order {
            let b = &buffers[i as usize];
            let mut occ: Vec<(u64, u64)> = placed
                .iter()
                .filter(|&&j| buffers[j].conflicts(b))
                .map(|&j| (offsets[j], offsets[j] + buffers[j].size))
                .collect();
            offsets[i as usize] = match fit {
                Fit::First => lowest_fit(&mut occ, b.size, b.align_log2),
                Fit::Best => tightest_fit(&mut occ, b.size, b.align_log2),
            };
            placed.push(i as usize);
        }
        offsets
    }

    /// Lowest aligned offset where `[offset, offset + size)` misses every occupied range.
    fn lowest_fit(occupied: &mut [(u64, u64)], size: u64, align_log2: u8) -> u64 {
        occupied.sort_unstable();
        let mut cand = 0u64;
        for &(start, end) in occupied.iter() {
            if start >= cand.saturating_add(size) {
                break;
            }
            if end > cand {
                cand = align_up(end, align_log2).unwrap_or(u64::MAX);
            }
        }
        cand
    }

    /// The aligned start of the smallest gap between occupied ranges that holds `size`; on top of
    /// everything when none does. Lowest gap on ties.
    fn tightest_fit(occupied: &mut [(u64, u64)], size: u64, align_log2: u8) -> u64 {
        occupied.sort_unstable();
        let mut covered = 0u64; // everything below is occupied or already considered
        let mut best: Option<(u64, u64)> = None; // (gap length, aligned start)
        for &(start, end) in occupied.iter() {
            if start > covered {
                let s = align_up(covered, align_log2).unwrap_or(u64::MAX);
                if s.saturating_add(size) <= start {
                    let len = start - covered;
                    if best.is_none_or(|(l, _)| len < l) {
                        best = Some((len, s));
                    }
                }
            }
            covered = covered.max(end);
        }
        best.map(|(_, s)| s).unwrap_or_else(|| align_up(covered, align_log2).unwrap_or(u64::MAX))
    }


    /// A seeded LCG: `rnd(m)` is in `[0, m)`.
    fn lcg(mut s: u64) -> impl FnMut(u64) -> u64 {
        move |m| {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (s >> 33) % m
        }
    }

    #[test]
    fn a_run_beside_others_that_can_finish_is_the_plain_run_until_stopped() {
        use std::sync::atomic::AtomicBool;
        let inst = heaplab_gen::generate(heaplab_gen::Kind::Random, 20_000, 5);
        let bs = &inst.buffers;
        let ends = crate::online::ends_of(bs);
        let h = Heuristic { order: Order::Size, fit: Fit::First };
        let plain = h.run(bs);
        let far = std::time::Instant::now() + std::time::Duration::from_secs(3600);
        let (unset, set) = (AtomicBool::new(false), AtomicBool::new(true));
        for gate in [None, Some(&unset), Some(&set)] {
            assert_eq!(h.run_beside(bs, &ends, far, gate, &unset, None).as_deref(), Some(&plain[..]), "gate {gate:?}");
            // Stopped: given up (the sweep ignores it).
            assert_eq!(h.run_beside(bs, &ends, far, gate, &set, None), None, "gate {gate:?}");
            // Cancelled: given up as well.
            assert_eq!(h.run_beside(bs, &ends, far, gate, &unset, Some(&set)), None, "gate {gate:?}");
            assert!(h.run_beside(bs, &ends, far, gate, &unset, Some(&unset)).is_some(), "gate {gate:?}");
        }
        let sweep = Heuristic { order: Order::Start, fit: Fit::First };
        assert_eq!(sweep.run_beside(bs, &ends, far, Some(&set), &set, None), Some(sweep.run(bs)));
        // A deadline already passed: given up, gate or not.
        let past = std::time::Instant::now();
        assert_eq!(h.run_beside(bs, &ends, past, Some(&set), &unset, None), None);
    }

    #[test]
    fn a_pace_is_late_when_two_measures_in_a_row_project_past_the_deadline() {
        use std::time::Duration;
        let t0 = std::time::Instant::now();
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        let n = 6400;
        // Steady: 1 ms a buffer, 6.4 s in all.
        let steady = |deadline_ms: u64| {
            let mut p = Pace::new(t0);
            (1..=64u64).map(|s| p.late(s as usize * 100, n, at(s * 100), at(deadline_ms))).position(|late| late)
        };
        assert_eq!(steady(7000), None);
        // Late from the first measure: given up at the second, not the first.
        assert_eq!(steady(3000), Some(1));
        // Not measured between stretches of 1/64, nor without the count.
        let mut p = Pace::new(t0);
        assert!(!p.late(99, n, at(99_000), at(1)));
        assert!(!p.late(200, 0, at(99_000), at(1)) && !p.late(300, 0, at(99_000), at(1)));
        // A slow first stretch (twice the pace: the index's set-up) is forgiven once the
        // next is back to pace, though it alone projected past the deadline.
        let mut p = Pace::new(t0);
        let slow_start = (1..=64u64).map(|s| p.late(s as usize * 100, n, at(100 + s * 100), at(12_000))).position(|late| late);
        assert_eq!(slow_start, None);
        // A pace that slows down: stretch s takes 10·s ms (20.8 s in all). The average alone
        // would be found late at stretch 38, at 7.1 s of a 12 s limit; the last stretch's pace
        // finds it late at stretch 23 and 24 (3 s).
        let mut p = Pace::new(t0);
        let mut now = 0;
        let gave_up = (1..=64u64).position(|s| {
            now += 10 * s;
            p.late(s as usize * 100, n, at(now), at(12_000))
        });
        assert_eq!(gave_up, Some(23));
    }

    #[test]
    fn run_until_gives_up_only_after_its_deadline() {
        let inst = heaplab_gen::generate(heaplab_gen::Kind::Random, 3000, 4);
        let bs = &inst.buffers;
        let later = std::time::Instant::now() + std::time::Duration::from_secs(3600);
        let past = std::time::Instant::now();
        for h in Heuristic::STANDARD {
            assert_eq!(h.run_until(bs, later), Some(h.run(bs)), "{}", h.name());
            if h.is_sweep() {
                // The sweeps are cheap and always finish.
                assert_eq!(h.run_until(bs, past), Some(h.run(bs)), "{}", h.name());
            } else if h.order == Order::Rocks {
                // A sweep too, looking at the clock every 4096 buffers: here it may finish.
                assert!(h.run_until(bs, past).is_none_or(|off| off == h.run(bs)), "{}", h.name());
            } else {
                assert_eq!(h.run_until(bs, past), None, "{}", h.name());
            }
        }
    }

    /// Long-lived buffers stacked under a churn of short ones (an interpreter's heap, scaled
    /// down): the index's per-buffer sets interleave, so a query walks many intervals.
    fn long_lived_under_churn(n: usize) -> Vec<Buffer> {
        let mut rnd = lcg(21);
        (0..n as u64)
            .map(|i| {
                let (lo, hi) = if i % 4 == 0 { (i, 4 * n as u64 + rnd(n as u64)) } else { (i, i + 1 + rnd(8)) };
                Buffer::new(i, lo, hi, 16 + rnd(16))
            })
            .collect()
    }

    #[test]
    fn a_greedy_placement_past_its_deadline_stops_within_one_check_of_work() {
        let bs = long_lived_under_churn(20_000);
        let ord = order(&bs, Order::Size);
        let mut occ = Occupancy::new(&bs);
        let full = place_with(&mut occ, &bs, &ord, Fit::First, u64::MAX, DeadlineCheck::new(None)).unwrap();
        assert!(validate(&bs, &full).is_valid());
        let total = occ.work();
        // The shape is costly: far more work than a few steps per buffer ...
        assert!(total > 20 * WORK_PER_CLOCK_CHECK, "work {total}");
        // ... yet a placement whose deadline has passed gives up after at most one check's
        // worth of work and one more placement.
        for fit in [Fit::First, Fit::Best] {
            let mut occ = Occupancy::new(&bs);
            let past = std::time::Instant::now();
            assert_eq!(place_with(&mut occ, &bs, &ord, fit, u64::MAX, DeadlineCheck::new(Some(past))), None);
            assert!(occ.work() <= WORK_PER_CLOCK_CHECK + total / 1000, "work {} of {total}", occ.work());
        }
    }

    #[test]
    fn oracle_fits_honour_gaps_and_alignment() {
        let mut occ = vec![(0, 10), (20, 30), (12, 15)];
        assert_eq!(lowest_fit(&mut occ, 5, 0), 15);
        assert_eq!(lowest_fit(&mut occ, 2, 0), 10);
        assert_eq!(lowest_fit(&mut occ, 2, 3), 16); // 8 is taken; 16..18 is free below 20
        assert_eq!(tightest_fit(&mut occ, 2, 0), 10);
        assert_eq!(tightest_fit(&mut occ, 4, 0), 15);
        assert_eq!(tightest_fit(&mut occ, 6, 0), 30);
    }

    #[test]
    fn occupancy_index_gives_exactly_the_oracle_offsets() {
        let mut rnd = lcg(5);
        for round in 0..400u64 {
            let n = (round % 60) as usize;
            let span = 1 + rnd(60);
            let bs: Vec<Buffer> = (0..n)
                .map(|i| {
                    let lo = rnd(span);
                    let len = 1 + rnd(if round % 3 == 0 { 60 } else { 8 });
                    let mut b = Buffer::new(i as u64, lo, lo + len, 1 + rnd(if round % 4 == 0 { 4 } else { 1000 }));
                    b.align_log2 = if round % 5 == 0 { rnd(5) as u8 } else { 0 };
                    b
                })
                .collect();
            for h in Heuristic::STANDARD.iter().chain(&[Heuristic { order: Order::Random(round), fit: Fit::Best }]) {
                let ord = order(&bs, h.order);
                let expected = oracle_place(&bs, &ord, h.fit);
                assert_eq!(place_in_order(&bs, &ord, h.fit), expected, "{} round {round}", h.name());
                assert_eq!(h.run(&bs), expected, "{} (run) round {round}", h.name());
            }
        }
    }

    /// Shapes that stress the index's two trees and the fits: one long-lived buffer over many
    /// short ones, nested lifetimes, equal sizes, common starts or ends, heavy alignment and
    /// size ratios up to 2^40.
    fn adversarial(shape: u64, n: usize, rnd: &mut impl FnMut(u64) -> u64) -> Vec<Buffer> {
        (0..n as u64)
            .map(|i| {
                let (lo, hi, size) = match shape {
                    // A few long-lived buffers and many short ones under them.
                    0 => {
                        if i % 16 == 0 {
                            (rnd(5), 200 + rnd(5), 1 + rnd(64))
                        } else {
                            let lo = rnd(200);
                            (lo, lo + 1 + rnd(3), 1 + rnd(64))
                        }
                    }
                    // Nested (matryoshka) lifetimes, outermost first or in random order.
                    1 => (i, 2 * n as u64 - i, 1 + rnd(100)),
                    // Equal sizes.
                    2 => {
                        let lo = rnd(40);
                        (lo, lo + 1 + rnd(20), 48)
                    }
                    // Everything starts together, ends spread (and the reverse).
                    3 => (0, 1 + rnd(30), 1 + rnd(500)),
                    4 => (rnd(30), 31, 1 + rnd(500)),
                    // Huge size ratios: 1 byte to 2^40 bytes.
                    5 => {
                        let (lo, bits) = (rnd(50), rnd(41));
                        (lo, lo + 1 + rnd(25), 1 + rnd(1 << bits))
                    }
                    // Staircase: each buffer overlaps only its neighbours.
                    _ => (i, i + 2, 1 + rnd(10)),
                };
                let mut b = Buffer::new(i, lo, hi, size);
                // Heavy alignment on every other round, up to 4 KiB.
                b.align_log2 = if rnd(2) == 0 { rnd(13) as u8 } else { 0 };
                b
            })
            .collect()
    }

    #[test]
    fn occupancy_index_matches_the_oracle_on_adversarial_shapes() {
        let mut rnd = lcg(11);
        for round in 0..140u64 {
            let shape = round % 7;
            let n = 20 + (round as usize * 7) % 130;
            let bs = adversarial(shape, n, &mut rnd);
            let extra = [Heuristic { order: Order::Random(round), fit: Fit::First }, Heuristic { order: Order::Random(round), fit: Fit::Best }];
            for h in Heuristic::STANDARD.iter().chain(&extra) {
                let ord = order(&bs, h.order);
                let got = place_in_order(&bs, &ord, h.fit);
                assert_eq!(got, oracle_place(&bs, &ord, h.fit), "{} shape {shape} round {round}", h.name());
                assert_eq!(h.run(&bs), got, "{} (run) shape {shape} round {round}", h.name());
                assert!(validate(&bs, &got).is_valid());
            }
        }
    }

    /// Every fit of `buffers` in `order` (first and best) through indexes with low subtrees of
    /// 2, 4, 8, 16 leaves and the default, so that small instances exercise the unions and
    /// pending sets of the high nodes, against the oracle.
    fn check_every_low_height(bs: &[Buffer], ord: &[u32], what: &str) {
        for fit in [Fit::First, Fit::Best] {
            let expected = oracle_place(bs, ord, fit);
            assert!(validate(bs, &expected).is_valid());
            for h in [1, 2, 3, 4, crate::occupancy::LOW_HEIGHT] {
                let mut occ = Occupancy::with_low_height(bs, h);
                let got = place_with(&mut occ, bs, ord, fit, u64::MAX, DeadlineCheck::new(None)).unwrap();
                assert_eq!(got, expected, "{what} {fit:?} low height {h}");
            }
        }
    }

    #[test]
    fn unions_of_high_nodes_give_exactly_the_oracle_offsets() {
        let mut rnd = lcg(31);
        for round in 0..300u64 {
            let n = 1 + (round % 90) as usize;
            let span = 1 + rnd(120);
            let bs: Vec<Buffer> = (0..n)
                .map(|i| {
                    let lo = rnd(span);
                    let len = 1 + rnd(if round % 3 == 0 { 120 } else { 10 });
                    let mut b = Buffer::new(i as u64, lo, lo + len, 1 + rnd(if round % 4 == 0 { 4 } else { 1000 }));
                    b.align_log2 = if round % 5 == 0 { rnd(5) as u8 } else { 0 };
                    b
                })
                .collect();
            let o = if round % 2 == 0 { Order::Size } else { Order::Random(round) };
            check_every_low_height(&bs, &order(&bs, o), &format!("random round {round}"));
        }
        for round in 0..70u64 {
            let shape = round % 7;
            let bs = adversarial(shape, 20 + (round as usize * 13) % 200, &mut rnd);
            check_every_low_height(&bs, &order(&bs, Order::Size), &format!("shape {shape} round {round}"));
        }
        let bs = long_lived_under_churn(1500);
        for o in [Order::Size, Order::Length, Order::Random(3)] {
            check_every_low_height(&bs, &order(&bs, o), &format!("churn {o:?}"));
        }
    }

    /// Placements given in advance (as the windows and the improvement search insert them) and
    /// queries in between, in any order: the index answers as the oracle over what is placed.
    #[test]
    fn unions_of_high_nodes_follow_insertions_out_of_address_order() {
        let mut rnd = lcg(8);
        for round in 0..200u64 {
            let bs = adversarial(round % 7, 30 + (round as usize * 5) % 120, &mut rnd);
            let ord = order(&bs, Order::Random(round));
            // A random half is pinned at random offsets first (overlaps do not matter to the
            // index); the rest is placed by first fit, against the oracle's union.
            let mut pinned: Vec<(usize, u64)> = Vec::new();
            for &i in &ord {
                if rnd(2) == 0 {
                    pinned.push((i as usize, rnd(5000)));
                }
            }
            for h in [1, 2, 3, crate::occupancy::LOW_HEIGHT] {
                let mut occ = Occupancy::with_low_height(&bs, h);
                let mut placed: Vec<(usize, u64)> = Vec::new();
                for &(i, o) in &pinned {
                    occ.insert(i, o);
                    placed.push((i, o));
                }
                for &i in &ord {
                    let i = i as usize;
                    if pinned.iter().any(|p| p.0 == i) {
                        continue;
                    }
                    let b = &bs[i];
                    let mut taken: Vec<(u64, u64)> =
                        placed.iter().filter(|&&(j, _)| bs[j].conflicts(b)).map(|&(j, o)| (o, o + bs[j].size)).collect();
                    let want = if i.is_multiple_of(2) { lowest_fit(&mut taken, b.size, b.align_log2) } else { tightest_fit(&mut taken, b.size, b.align_log2) };
                    let got = if i.is_multiple_of(2) { occ.lowest_fit(i) } else { occ.tightest_fit(i) };
                    assert_eq!(got, want, "round {round} low height {h} buffer {i}");
                    occ.insert(i, got);
                    placed.push((i, got));
                }
            }
        }
    }

    #[test]
    fn every_heuristic_is_valid_on_random_instances() {
        let mut rnd = lcg(77);
        for round in 0..200 {
            let n = (round % 50) as usize;
            let bs: Vec<Buffer> = (0..n)
                .map(|i| {
                    let lo = rnd(40);
                    let len = 1 + rnd(15);
                    let bits = 1 + rnd(20);
                    let mut b = Buffer::new(i as u64, lo, lo + len, 1 + rnd(1 << bits));
                    b.align_log2 = if rnd(3) == 0 { rnd(6) as u8 } else { 0 };
                    b
                })
                .collect();
            let ml = max_load(&bs);
            for h in Heuristic::STANDARD.iter().chain(&[Heuristic { order: Order::Random(round), fit: Fit::First }]) {
                let off = h.run(&bs);
                let v = validate(&bs, &off);
                assert!(v.is_valid(), "{} {}", h.name(), v.describe(&bs, &off));
                assert!(v.makespan >= ml);
            }
        }
    }

    #[test]
    fn colouring_uses_max_live_colours_and_never_overlaps_a_colour() {
        let mut rnd = lcg(3);
        for round in 0..300 {
            let n = (round % 70) as usize;
            let spans: Vec<(u64, u64)> = (0..n)
                .map(|_| {
                    let lo = rnd(50);
                    (lo, lo + 1 + rnd(if round % 2 == 0 { 3 } else { 30 }))
                })
                .collect();
            let (colour, k) = colour_intervals(&spans);
            let bs: Vec<Buffer> = spans.iter().enumerate().map(|(i, &(l, u))| Buffer::new(i as u64, l, u, 1)).collect();
            assert_eq!(k as usize, heaplab_sweep::max_live(&bs));
            for i in 0..n {
                assert!(colour[i] < k);
                for j in 0..i {
                    assert!(colour[i] != colour[j] || !bs[i].conflicts(&bs[j]));
                }
            }
        }
    }

    #[test]
    fn bounded_placement_gives_up_exactly_when_the_bound_is_exceeded() {
        let mut rnd = lcg(9);
        for round in 0..100u64 {
            let bs: Vec<Buffer> = (0..30u64)
                .map(|i| {
                    let lo = rnd(30);
                    let mut b = Buffer::new(i, lo, lo + 1 + rnd(10), 1 + rnd(500));
                    b.align_log2 = rnd(4) as u8;
                    b
                })
                .collect();
            let fit = if round % 2 == 0 { Fit::First } else { Fit::Best };
            let ord = order(&bs, Order::Random(round));
            let full = place_in_order(&bs, &ord, fit);
            let m = validate(&bs, &full).makespan;
            assert_eq!(place_in_order_bounded(&bs, &ord, fit, m, None, None), Some(full));
            assert_eq!(place_in_order_bounded(&bs, &ord, fit, m - 1, None, None), None);
        }
    }

    #[test]
    fn trivial_cases_reach_max_load() {
        let bs: Vec<Buffer> = (0..100u64).map(|i| Buffer::new(i, i % 17, i % 17 + 1 + i % 5, 64)).collect();
        let off = solve_equal_sizes(&bs).unwrap();
        let v = validate(&bs, &off);
        assert!(v.is_valid());
        assert_eq!(v.makespan, max_load(&bs));
        let bs: Vec<Buffer> = (0..10u64).map(|i| Buffer::new(i, i, i + 1, 5 + i)).collect();
        assert_eq!(solve_conflict_free(&bs).unwrap(), vec![0; 10]);
        assert!(solve_conflict_free(&[Buffer::new(0, 0, 2, 1), Buffer::new(1, 1, 3, 1)]).is_none());
    }

    /// Whether an instance is conflict free, decided by one pass in start order or the sweep
    /// otherwise, is what the count of buffers live at once says.
    #[test]
    fn conflict_free_is_at_most_one_live() {
        let mut rng = crate::rng::Rng::new(9);
        for round in 0..400u64 {
            let n = (round % 12) as usize;
            let mut bs: Vec<Buffer> = (0..n as u64)
                .map(|i| {
                    let lo = rng.next_u64() % (4 * n as u64 + 1);
                    Buffer::new(i, lo, lo + 1 + rng.next_u64() % (1 + round % 4), 8)
                })
                .collect();
            if round % 2 == 0 {
                bs.sort_by_key(|b| b.lower);
            }
            let want = heaplab_sweep::max_live(&bs) <= 1;
            assert_eq!(solve_conflict_free(&bs).is_some(), want, "round {round}");
            if want {
                assert!(validate(&bs, &solve_conflict_free(&bs).unwrap()).is_valid());
            }
        }
    }
}
