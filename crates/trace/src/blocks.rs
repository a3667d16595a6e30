//! Trace → block lifetimes: the one place that turns the merged stream of heap calls into
//! blocks that open and close. Conversion ([`crate::convert`]), the statistics
//! ([`crate::stats`]) and the replay (`heaplab-replay`) all read blocks from here, so the
//! rules below hold for each of them alike.
//!
//! [`Blocks`] is a streaming state machine: feed it every [`Step`] of a
//! [`TraceReader`](crate::TraceReader) in order and it tells ([`Change`]) which block the step
//! closed and which it opened, each with its id, requested and usable size, alignment, call
//! site, thread and times on the chosen [`Clock`]. The rules follow table 3.1 of the thesis
//! (`../shared/papers/000_…`, Ch. 3), with these decisions:
//! - every allocation call (malloc, calloc, posix_memalign, aligned_alloc, memalign, valloc,
//!   pvalloc) opens a block; free closes it;
//! - realloc and reallocarray are two steps at their own two sequence numbers: the release
//!   closes the input block, the allocation opens the result, even when the block did not move;
//! - a free (or a realloc's input) of an address that is not live in the trace (inherited from
//!   a fork parent, from the loader, from another allocator, or freed twice) is ignored and
//!   counted ([`Counts::unknown_frees`]);
//! - an allocation that returned NULL opens nothing and is counted ([`Counts::failed`]); a
//!   failed realloc releases nothing, so its input stays live; realloc(p, 0) that freed p is
//!   not a failure;
//! - an allocation that returns an address still live in the trace (a missed free) closes the
//!   older block first ([`Cause::Reused`], counted in [`Counts::reused`]);
//! - a zero-byte request (malloc(0)) opens a block of requested size 0 whose
//!   [`size`](Block::size) is 1 byte when sizes are the requested ones;
//! - alignment is kept: the aligned calls' alignment (rounded up to a power of two), the page
//!   size for valloc and pvalloc; plain malloc's natural alignment is not a constraint;
//! - blocks live at the end of the trace are closed by [`Blocks::finish`] at the end time.
//!
//! Clocks all keep the exact order of the trace, so they give the same conflicts: the event
//! index (a realloc takes two ticks), the allocated-bytes clock (the thesis' choice: time
//! advances by the size of each opened block, frees take no time) and nanoseconds since the
//! trace started (made strictly increasing by breaking ties in trace order). A block always
//! closes after it opens (at least one tick later).
//!
//! A thread scope ([`BlockOptions::thread`]) keeps one thread's blocks on a clock that only
//! its calls advance: its blocks get ids, other threads' blocks are still opened and closed
//! (the statistics see the whole process) but have none; frees by other threads still close
//! the scope's blocks.
//!
//! Consumers keep their own data on live blocks ([`Blocks::attach`], given back on close)
//! rather than a second map by address: the replay keeps where each block lives in its child.

use crate::format::Op;
use crate::reader::{Half, Header, Step};
use crate::stats::AddressMap;

/// The time axis of blocks' open and close times.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Clock {
    /// One tick per heap operation (a realloc takes two).
    Events,
    /// Bytes allocated so far (the thesis' clock).
    #[default]
    Bytes,
    /// Nanoseconds since the trace started, strictly increasing.
    Ns,
}

impl Clock {
    /// Parses `events`, `bytes` or `ns`.
    pub fn parse(s: &str) -> Option<Clock> {
        match s {
            "events" => Some(Clock::Events),
            "bytes" => Some(Clock::Bytes),
            "ns" => Some(Clock::Ns),
            _ => None,
        }
    }
}

/// Which size a block has (its [`Block::size`], by which it advances the bytes clock).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SizeModel {
    /// What the program asked for (at least 1 byte).
    #[default]
    Requested,
    /// What the allocator gave (malloc_usable_size, at least the request and 1 byte).
    Usable,
}

impl SizeModel {
    /// Parses `requested` or `usable`.
    pub fn parse(s: &str) -> Option<SizeModel> {
        match s {
            "requested" => Some(SizeModel::Requested),
            "usable" => Some(SizeModel::Usable),
            _ => None,
        }
    }
}

/// How blocks are timed, sized and scoped.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BlockOptions {
    /// Time model.
    pub clock: Clock,
    /// Size model.
    pub size: SizeModel,
    /// Only this thread's blocks get ids, on a clock that only its calls advance. `None`:
    /// the whole process.
    pub thread: Option<u32>,
}

/// One block of the trace, as it was opened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Block {
    /// Its number among the blocks in scope, from 0 in opening order (the converted
    /// instance's buffer id); `None` for another thread's block under a thread scope.
    pub id: Option<u64>,
    /// The address the trace's allocator returned.
    pub addr: u64,
    /// The call that opened it.
    pub op: Op,
    /// Bytes the program asked for (0 for malloc(0)).
    pub requested: u64,
    /// Bytes the allocator gave, at least `requested`.
    pub usable: u64,
    /// Its size under the [`SizeModel`] (at least 1).
    pub size: u64,
    /// Log2 of its alignment, rounded up to a power of two (0: none), at most 62.
    pub align_log2: u8,
    /// Call-site id (0 when not recorded).
    pub site: u32,
    /// The thread that opened it.
    pub tid: u32,
    /// When it opened (for a block outside the scope: the scope's clock, not advanced).
    pub open: u64,
}

/// Why a block closed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cause {
    /// A free.
    Free,
    /// The release half of a realloc: the block its second half opens takes over (or, for
    /// realloc(p, 0) that freed p, nothing does).
    Realloc,
    /// An allocation returned its address while it was live: the trace missed its free.
    Reused,
    /// The trace ended with the block live.
    End,
}

/// A block that closed, with the data its consumer attached.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Closed<T> {
    /// The block.
    pub block: Block,
    /// When it closed: after `block.open`.
    pub at: u64,
    /// Why.
    pub cause: Cause,
    /// What [`Blocks::attach`] gave it (the default when nothing was).
    pub data: T,
}

/// What one step did. A step closes at most one block and opens at most one, the close first
/// (a missed free closes the older block where the new one opens).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Change<T> {
    /// The block the step closed.
    pub closed: Option<Closed<T>>,
    /// The block the step opened.
    pub opened: Option<Block>,
    /// The step freed an address not live in the trace: ignored.
    pub unknown_free: bool,
    /// The step was an allocation that returned NULL: nothing opened.
    pub failed: bool,
}

impl<T> Change<T> {
    fn nothing() -> Change<T> {
        Change { closed: None, opened: None, unknown_free: false, failed: false }
    }
}

/// What the rules set aside or fixed up so far.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    /// Frees (and realloc inputs) of addresses not live in the trace.
    pub unknown_frees: u64,
    /// Allocation calls that returned NULL.
    pub failed: u64,
    /// Allocations returning an address still live (the older block closed first).
    pub reused: u64,
    /// Blocks opened.
    pub opened: u64,
}

/// The id of a block outside the thread scope, in [`Entry`] (kept small: big traces hold
/// millions of live blocks).
const NO_ID: u64 = u64::MAX;

/// A live block as the map keeps it: [`Block`] without what the key and options give.
struct Entry<T> {
    id: u64,
    requested: u64,
    usable: u64,
    open: u64,
    site: u32,
    tid: u32,
    op: Op,
    align_log2: u8,
    data: T,
}

/// The clock's state.
struct Timer {
    clock: Clock,
    events: u64,
    bytes: u64,
    last_ns: Option<u64>,
}

impl Timer {
    /// The time of a step at `ns` that opens a block of `size` bytes (0 for a close), moving
    /// the clock on. Only steps that `count` (the scope's) advance the events clock; a close by
    /// another thread still lands after the opening, because the opening advanced it.
    fn stamp(&mut self, ns: u64, size: u64, count: bool) -> u64 {
        match self.clock {
            Clock::Events => {
                let t = self.events;
                self.events += u64::from(count);
                t
            }
            Clock::Bytes => {
                let t = self.bytes;
                self.bytes = self.bytes.saturating_add(size);
                t
            }
            Clock::Ns => {
                let t = self.last_ns.map_or(ns, |p| ns.max(p.saturating_add(1)));
                self.last_ns = Some(t);
                t
            }
        }
    }

    /// A step of the scope that neither opens nor closes (a failed allocation): a tick of the
    /// events clock, nothing on the others.
    fn skip(&mut self) {
        if self.clock == Clock::Events {
            self.events += 1;
        }
    }

    /// The time now, without moving the clock: the earliest time the next step can have.
    fn now(&self) -> u64 {
        match self.clock {
            Clock::Events => self.events,
            Clock::Bytes => self.bytes,
            Clock::Ns => self.last_ns.map_or(0, |p| p.saturating_add(1)),
        }
    }
}

/// The trace-to-blocks state machine (see the module notes): the live blocks by address, the
/// clock and the counts. `T` is data a consumer keeps on each live block.
pub struct Blocks<T = ()> {
    options: BlockOptions,
    header: Header,
    live: AddressMap<Entry<T>>,
    timer: Timer,
    next_id: u64,
    counts: Counts,
    /// The address of the block the last step opened, for [`Blocks::attach`].
    last_opened: Option<u64>,
}

impl<T: Default> Blocks<T> {
    /// A machine for the trace whose header is `header` (its page size aligns valloc, its clock
    /// gives nanoseconds).
    pub fn new(options: BlockOptions, header: &Header) -> Blocks<T> {
        Blocks {
            options,
            header: header.clone(),
            live: AddressMap::default(),
            timer: Timer { clock: options.clock, events: 0, bytes: 0, last_ns: None },
            next_id: 0,
            counts: Counts::default(),
            last_opened: None,
        }
    }

    /// The options.
    pub fn options(&self) -> &BlockOptions {
        &self.options
    }

    /// What the rules counted so far.
    pub fn counts(&self) -> Counts {
        self.counts
    }

    /// Blocks live now.
    pub fn live(&self) -> usize {
        self.live.len()
    }

    /// The time now: where the trace ends, once every step was fed.
    pub fn now(&self) -> u64 {
        self.timer.now()
    }

    /// Applies one step of the merged stream.
    pub fn step(&mut self, step: &Step) -> Change<T> {
        self.last_opened = None;
        let e = &step.event;
        let ns = self.header.ns_since_start(e.ts);
        let scoped = self.options.thread.is_none_or(|t| t == e.tid);
        let mut change = Change::nothing();
        let releases = match step.half {
            Half::Whole => e.op == Op::Free,
            Half::Release => e.releases(),
            Half::Acquire => false,
        };
        if releases {
            match self.live.remove(&e.ptr_in) {
                Some(entry) => {
                    // A block outside the scope freed outside it leaves the scope's clock alone.
                    let t = if entry.id != NO_ID || scoped { self.timer.stamp(ns, 0, scoped) } else { self.timer.now() };
                    let cause = if step.half == Half::Release { Cause::Realloc } else { Cause::Free };
                    change.closed = Some(self.closed(e.ptr_in, entry, t, cause));
                }
                None => {
                    self.counts.unknown_frees += 1;
                    change.unknown_free = true;
                    if scoped {
                        self.timer.stamp(ns, 0, true);
                    }
                }
            }
            return change;
        }
        if step.half == Half::Release || e.op == Op::Free {
            // A realloc that released nothing (it failed, or its input was NULL): its second
            // half does the rest.
            return change;
        }
        if e.ptr_out == 0 {
            // realloc(p, 0) freeing p is not a failure; anything else returning NULL is.
            if !(step.half == Half::Acquire && e.releases()) {
                self.counts.failed += 1;
                change.failed = true;
            }
            if scoped {
                self.timer.skip();
            }
            return change;
        }
        if let Some(older) = self.live.remove(&e.ptr_out) {
            self.counts.reused += 1;
            let t = self.timer.now().max(1);
            change.closed = Some(self.closed(e.ptr_out, older, t, Cause::Reused));
        }
        let requested = e.requested();
        let usable = e.usable.max(requested);
        let size = size_of(requested, usable, self.options.size);
        let (id, open) = if scoped {
            self.next_id += 1;
            (self.next_id - 1, self.timer.stamp(ns, size, true))
        } else {
            (NO_ID, self.timer.now())
        };
        let page = u64::from(self.header.page_size);
        // Beyond 2^63 there is no power of two in u64; 62 is as far as instances go anyway.
        let align_log2 = e.alignment(page).checked_next_power_of_two().map_or(64, u64::trailing_zeros).min(62) as u8;
        let entry = Entry { id, requested, usable, open, site: e.site, tid: e.tid, op: e.op, align_log2, data: T::default() };
        change.opened = Some(block_of(e.ptr_out, &entry, self.options.size));
        self.live.insert(e.ptr_out, entry);
        self.counts.opened += 1;
        self.last_opened = Some(e.ptr_out);
        change
    }

    /// Attaches `data` to the block the last step opened (nothing when it opened none).
    pub fn attach(&mut self, data: T) {
        if let Some(entry) = self.last_opened.and_then(|a| self.live.get_mut(&a)) {
            entry.data = data;
        }
    }

    /// Closes every block still live at the end time ([`Cause::End`]), in no particular order.
    pub fn finish(&mut self) -> impl Iterator<Item = Closed<T>> + '_ {
        self.last_opened = None;
        let end = self.timer.now();
        let size = self.options.size;
        self.live.drain().map(move |(addr, entry)| {
            let block = block_of(addr, &entry, size);
            Closed { block, at: end.max(entry.open.saturating_add(1)), cause: Cause::End, data: entry.data }
        })
    }

    fn closed(&self, addr: u64, entry: Entry<T>, t: u64, cause: Cause) -> Closed<T> {
        Closed { block: block_of(addr, &entry, self.options.size), at: t.max(entry.open.saturating_add(1)), cause, data: entry.data }
    }
}

/// A block's size under `model` (see [`SizeModel`]).
fn size_of(requested: u64, usable: u64, model: SizeModel) -> u64 {
    match model {
        SizeModel::Requested => requested.max(1),
        SizeModel::Usable => usable.max(requested).max(1),
    }
}

/// The block a live entry at `addr` stands for.
fn block_of<T>(addr: u64, entry: &Entry<T>, model: SizeModel) -> Block {
    Block {
        id: (entry.id != NO_ID).then_some(entry.id),
        addr,
        op: entry.op,
        requested: entry.requested,
        usable: entry.usable,
        size: size_of(entry.requested, entry.usable, model),
        align_log2: entry.align_log2,
        site: entry.site,
        tid: entry.tid,
        open: entry.open,
    }
}

#[cfg(test)]
mod tests;
