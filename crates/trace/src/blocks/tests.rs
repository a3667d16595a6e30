//! The blocks layer against an oracle written apart from it: hostile step sequences (unknown
//! and double frees, missed frees, failed calls, realloc(p, 0), realloc(NULL, n), realloc
//! halves split by other calls or lost, malloc(0), timestamps that tie and go back) under
//! every clock, size model and thread scope. The oracle spells the rules out from the module
//! notes in two passes: which block each step closes and opens (no clock), then the times.

use super::*;
use crate::reader::{Event, Origin};
use proptest::prelude::*;

const PAGE: u64 = 4096;

fn header() -> Header {
    Header {
        version: 2,
        pid: 1,
        ppid: 0,
        page_size: PAGE as u32,
        clock_shift: 0,
        stack_depth: 0,
        origin: Origin::Root,
        start_mono_ns: 0,
        start_real_ns: 0,
        parent_pid: 0,
        parent_seq: 0,
        exe: String::new(),
        args: Vec::new(),
        len: 0,
    }
}

/// One generated call: (kind, thread, input address, result address, size, extra, how many
/// calls later a realloc's second half comes, timestamp).
type Call = (u8, u32, usize, usize, usize, usize, usize, u64);

const ADDRS: [u64; 6] = [0, 0x1000, 0x1010, 0x2000, 0x2008, 0x3001];
const SIZES: [u64; 5] = [0, 1, 24, 4000, 1 << 40];
const EXTRAS: [u64; 5] = [0, 1, 3, 64, 4096];

/// The steps the reader would yield for `calls`: a realloc's second half comes `gap` calls
/// after its first (or never, when `lose` and the sequence ends first, as in a damaged trace).
fn steps_of(calls: &[Call], lose: bool) -> Vec<Step> {
    let ops = [Op::Malloc, Op::Calloc, Op::PosixMemalign, Op::AlignedAlloc, Op::Memalign, Op::Valloc, Op::Pvalloc];
    let mut steps: Vec<Step> = Vec::new();
    let mut pending: Vec<(usize, usize)> = Vec::new(); // (calls to wait, index of the first half)
    let mut seq = 0u64;
    for (i, &(kind, tid, a, b, size, extra, gap, ts)) in calls.iter().enumerate() {
        let mut e = Event { seq, seq2: seq, tid, ts, op: Op::Malloc, ptr_in: 0, ptr_out: ADDRS[b], size: SIZES[size], extra: 0, usable: 0, site: i as u32 };
        let half = match kind % 10 {
            0..=2 => {
                (e.op, e.ptr_in, e.ptr_out, e.size) = (Op::Free, ADDRS[a], 0, 0);
                Half::Whole
            }
            3..=5 => {
                e.op = if kind % 2 == 0 { Op::Realloc } else { Op::Reallocarray };
                e.ptr_in = ADDRS[a];
                if e.op == Op::Reallocarray {
                    e.extra = EXTRAS[extra] % 4;
                }
                pending.push((gap, steps.len()));
                Half::Release
            }
            k => {
                e.op = ops[(k as usize + extra) % ops.len()];
                e.extra = EXTRAS[extra];
                Half::Whole
            }
        };
        if e.ptr_out != 0 {
            let req = if e.op.has_count() { e.size.saturating_mul(e.extra) } else { e.size };
            // Usable sizes below the request happen in damaged traces; the layer lifts them.
            e.usable = if size % 2 == 0 { req.saturating_add(8) } else { req.saturating_sub(4) };
        }
        steps.push(Step { half, event: e });
        seq += 1;
        // Second halves whose time has come, after this call.
        let mut k = 0;
        while k < pending.len() {
            if pending[k].0 == 0 {
                let first = pending.remove(k).1;
                steps[first].event.seq2 = seq;
                let mut e = steps[first].event;
                e.seq2 = seq;
                steps.push(Step { half: Half::Acquire, event: e });
                seq += 1;
            } else {
                pending[k].0 -= 1;
                k += 1;
            }
        }
    }
    if !lose {
        for (_, first) in pending {
            steps[first].event.seq2 = seq;
            let mut e = steps[first].event;
            e.seq2 = seq;
            steps.push(Step { half: Half::Acquire, event: e });
            seq += 1;
        }
    }
    steps
}

/// What the oracle's first pass says a step did, by block number (blocks in opening order).
#[derive(Default)]
struct Outcome {
    closed: Option<(usize, Cause)>,
    opened: Option<usize>,
    unknown_free: bool,
    failed: bool,
    /// A call that returned NULL (failed or realloc(p, 0)'s second half).
    null: bool,
}

/// A block as the oracle sees it, before times.
struct Seen {
    addr: u64,
    op: Op,
    requested: u64,
    usable: u64,
    align_log2: u8,
    tid: u32,
    site: u32,
}

/// First pass: which block each step closes and opens, with a plain list of live blocks.
fn structure(steps: &[Step]) -> (Vec<Seen>, Vec<Outcome>, Vec<usize>) {
    let mut seen: Vec<Seen> = Vec::new();
    let mut live: Vec<(u64, usize)> = Vec::new();
    let mut out = Vec::new();
    for st in steps {
        let e = st.event;
        let mut o = Outcome::default();
        let requested = if matches!(e.op, Op::Calloc | Op::Reallocarray) { e.size.saturating_mul(e.extra) } else { e.size };
        let realloc_freed_input = e.ptr_in != 0 && (e.ptr_out != 0 || requested == 0);
        let (release, cause, allocate) = match st.half {
            Half::Whole if e.op == Op::Free => (true, Cause::Free, false),
            Half::Whole => (false, Cause::Free, true),
            Half::Release => (realloc_freed_input, Cause::Realloc, false),
            Half::Acquire => (false, Cause::Free, true),
        };
        if release {
            match live.iter().position(|&(a, _)| a == e.ptr_in) {
                Some(i) => o.closed = Some((live.remove(i).1, cause)),
                None => o.unknown_free = true,
            }
        } else if allocate && e.ptr_out == 0 {
            o.null = true;
            o.failed = !(st.half == Half::Acquire && realloc_freed_input);
        } else if allocate {
            if let Some(i) = live.iter().position(|&(a, _)| a == e.ptr_out) {
                o.closed = Some((live.remove(i).1, Cause::Reused));
            }
            let align = match e.op {
                Op::PosixMemalign | Op::AlignedAlloc | Op::Memalign => e.extra.max(1),
                Op::Valloc | Op::Pvalloc => PAGE,
                _ => 1,
            };
            let mut log2 = 0u8;
            while (1u128 << log2) < align as u128 && log2 < 62 {
                log2 += 1;
            }
            seen.push(Seen { addr: e.ptr_out, op: e.op, requested, usable: e.usable.max(requested), align_log2: log2, tid: e.tid, site: e.site });
            live.push((e.ptr_out, seen.len() - 1));
            o.opened = Some(seen.len() - 1);
        }
        out.push(o);
    }
    (seen, out, live.into_iter().map(|(_, k)| k).collect())
}

/// What the layer reported, and what the oracle expects, in one shape.
#[derive(Debug, PartialEq)]
enum Rec {
    Closed(Block, u64, Cause),
    Opened(Block),
    Unknown,
    Failed,
}

/// Second pass: times on the chosen clock, and the records in order.
fn oracle(steps: &[Step], opts: BlockOptions) -> (Vec<Rec>, Counts) {
    let (seen, outcomes, at_end) = structure(steps);
    let size = |b: &Seen| match opts.size {
        SizeModel::Requested => b.requested.max(1),
        SizeModel::Usable => b.usable.max(1),
    };
    let (mut events, mut bytes, mut last_ns) = (0u64, 0u64, None::<u64>);
    let now = |events: u64, bytes: u64, last_ns: Option<u64>| match opts.clock {
        Clock::Events => events,
        Clock::Bytes => bytes,
        Clock::Ns => last_ns.map_or(0, |t| t + 1),
    };
    let mut opened: Vec<Option<Block>> = seen.iter().map(|_| None).collect();
    let mut next_id = 0u64;
    let mut recs = Vec::new();
    let mut counts = Counts::default();
    for (st, o) in steps.iter().zip(&outcomes) {
        let scoped = opts.thread.is_none() || opts.thread == Some(st.event.tid);
        let ns = st.event.ts;
        // A stamped step: the events clock ticks when the scope's, ns takes a strictly later time.
        let stamp = |count: bool, add: u64, events: &mut u64, bytes: &mut u64, last_ns: &mut Option<u64>| -> u64 {
            let t = now(*events, *bytes, *last_ns);
            match opts.clock {
                Clock::Events => *events += count as u64,
                Clock::Bytes => *bytes += add,
                Clock::Ns => *last_ns = Some(last_ns.map_or(ns, |l| ns.max(l + 1))),
            }
            if opts.clock == Clock::Ns {
                last_ns.unwrap()
            } else {
                t
            }
        };
        if let Some((k, cause)) = o.closed {
            let b = opened[k].expect("closed after opened");
            let t = match cause {
                Cause::Reused => now(events, bytes, last_ns).max(1),
                _ if b.id.is_some() || scoped => stamp(scoped, 0, &mut events, &mut bytes, &mut last_ns),
                _ => now(events, bytes, last_ns),
            };
            recs.push(Rec::Closed(b, t.max(b.open + 1), cause));
            counts.reused += (cause == Cause::Reused) as u64;
        }
        if o.unknown_free {
            counts.unknown_frees += 1;
            recs.push(Rec::Unknown);
            if scoped {
                stamp(true, 0, &mut events, &mut bytes, &mut last_ns);
            }
        }
        if o.null {
            if o.failed {
                counts.failed += 1;
                recs.push(Rec::Failed);
            }
            if scoped && opts.clock == Clock::Events {
                events += 1;
            }
        }
        if let Some(k) = o.opened {
            let s = &seen[k];
            let (id, open) = if scoped {
                next_id += 1;
                (Some(next_id - 1), stamp(true, size(s), &mut events, &mut bytes, &mut last_ns))
            } else {
                (None, now(events, bytes, last_ns))
            };
            let b = Block { id, addr: s.addr, op: s.op, requested: s.requested, usable: s.usable, size: size(s), align_log2: s.align_log2, site: s.site, tid: s.tid, open };
            opened[k] = Some(b);
            counts.opened += 1;
            recs.push(Rec::Opened(b));
        }
    }
    let end = now(events, bytes, last_ns);
    let mut last: Vec<Rec> = at_end.iter().map(|&k| opened[k].unwrap()).map(|b| Rec::Closed(b, end.max(b.open + 1), Cause::End)).collect();
    last.sort_by_key(|r| if let Rec::Closed(b, ..) = r { b.site } else { 0 });
    recs.extend(last);
    (recs, counts)
}

fn layer(steps: &[Step], opts: BlockOptions) -> (Vec<Rec>, Counts) {
    let mut blocks: Blocks<u32> = Blocks::new(opts, &header());
    let mut recs = Vec::new();
    for st in steps {
        let c = blocks.step(st);
        if let Some(c) = c.closed {
            assert_eq!(c.data, c.block.site, "the data attached at opening comes back at closing");
            recs.push(Rec::Closed(c.block, c.at, c.cause));
        }
        if c.unknown_free {
            recs.push(Rec::Unknown);
        }
        if c.failed {
            recs.push(Rec::Failed);
        }
        if let Some(b) = c.opened {
            blocks.attach(b.site);
            recs.push(Rec::Opened(b));
        }
    }
    let counts = blocks.counts();
    let live = blocks.live();
    let mut last: Vec<Closed<u32>> = blocks.finish().collect();
    assert_eq!(last.len(), live);
    assert_eq!(blocks.live(), 0);
    last.sort_by_key(|c| c.block.site);
    recs.extend(last.into_iter().map(|c| Rec::Closed(c.block, c.at, c.cause)));
    (recs, counts)
}

fn call() -> impl Strategy<Value = Call> {
    (0u8..10, 1u32..4, 0usize..6, 0usize..6, 0usize..5, 0usize..5, 0usize..4, 0u64..6)
}

fn options() -> impl Strategy<Value = BlockOptions> {
    let clock = prop_oneof![Just(Clock::Events), Just(Clock::Bytes), Just(Clock::Ns)];
    let size = prop_oneof![Just(SizeModel::Requested), Just(SizeModel::Usable)];
    let thread = prop_oneof![Just(None), (1u32..4).prop_map(Some)];
    (clock, size, thread).prop_map(|(clock, size, thread)| BlockOptions { clock, size, thread })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    /// Every step's close and open, their times, the counts and the blocks live at the end
    /// agree with the oracle; closes come after opens and scope ids are 0, 1, 2, … .
    #[test]
    fn blocks_follow_the_rules(calls in prop::collection::vec(call(), 0..120), lose in any::<bool>(), opts in options()) {
        let steps = steps_of(&calls, lose);
        let (got, got_counts) = layer(&steps, opts);
        let (want, want_counts) = oracle(&steps, opts);
        prop_assert_eq!(&got, &want);
        prop_assert_eq!(got_counts, want_counts);
        let ids: Vec<u64> = got.iter().filter_map(|r| if let Rec::Opened(b) = r { b.id } else { None }).collect();
        prop_assert!(ids.iter().enumerate().all(|(k, &id)| id == k as u64));
        prop_assert!(got.iter().all(|r| !matches!(r, Rec::Closed(b, at, _) if *at <= b.open)));
    }
}

/// The rules on a hand-made sequence, event clock: the module notes' examples one by one.
#[test]
fn rules_by_example() {
    let calls: Vec<Call> = vec![
        (6, 1, 0, 1, 2, 0, 0, 0), // malloc(24) at 0x1000: opens block 0 at tick 0
        (0, 1, 2, 0, 0, 0, 0, 0), // free(0x1010), never allocated: unknown (tick 1)
        (6, 1, 0, 1, 0, 0, 0, 0), // malloc(0) returns 0x1000 again: block 0 closes (missed free), block 1 opens at tick 2
        (4, 1, 1, 3, 3, 0, 0, 0), // realloc(0x1000, 4000) -> 0x2000: closes block 1 (tick 3), opens block 2 (tick 4)
        (6, 1, 0, 0, 4, 0, 0, 0), // malloc(2^40) fails (tick 5)
        (0, 1, 3, 0, 0, 0, 0, 0), // free(0x2000): closes block 2 (tick 6)
        (0, 1, 3, 0, 0, 0, 0, 0), // freed twice: unknown (tick 7)
    ];
    let steps = steps_of(&calls, false);
    let (recs, counts) = layer(&steps, BlockOptions { clock: Clock::Events, ..Default::default() });
    let closes: Vec<(u64, u64, u64, Cause)> = recs.iter().filter_map(|r| if let Rec::Closed(b, at, c) = r { Some((b.id.unwrap(), b.open, *at, *c)) } else { None }).collect();
    assert_eq!(closes, vec![(0, 0, 2, Cause::Reused), (1, 2, 3, Cause::Realloc), (2, 4, 6, Cause::Free)]);
    let sizes: Vec<(u64, u64)> = recs.iter().filter_map(|r| if let Rec::Opened(b) = r { Some((b.requested, b.size)) } else { None }).collect();
    assert_eq!(sizes, vec![(24, 24), (0, 1), (4000, 4000)]);
    assert_eq!(counts, Counts { unknown_frees: 2, failed: 1, reused: 1, opened: 3 });
}
