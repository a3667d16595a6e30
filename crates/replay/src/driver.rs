//! The replay driver: reads a trace, streams its requests to the replay child (C,
//! `child/heaplab_replay_child.c`) through a ring in shared memory, and turns the child's
//! answers into jobs.
//!
//! The trace's blocks come from the trace crate's blocks layer ([`heaplab_trace::blocks`]),
//! under the same rules as the trace → instance conversion: failed allocations of the trace and
//! frees of pointers it never saw allocated are skipped (and counted); an allocation returning
//! a pointer the trace still holds live closes the older block first. Each block becomes a
//! request that keeps its own function: calloc stays calloc, aligned calls keep their
//! alignment, realloc is one realloc call, sent at its first half (where the layer closes the
//! input block) and starting its job at its second (where the layer opens the result). The
//! clock is the layer's allocated-bytes clock on requested sizes (`heaplab convert --clock
//! bytes`); jobs start and end where the layer opens and closes their blocks.
//!
//! An allocation that succeeded in the trace but fails in the replay (the allocator ran out of
//! memory, e.g. under `ulimit -v`) gets no job and is counted; a failed realloc keeps its input
//! block live, as C says, so the input's job goes on until the trace releases the block. Before
//! returning, the jobs are checked to be a valid placement ([`placed::first_overlap`]).
//!
//! Requests from different threads of the trace carry a thread index; the child runs one
//! thread per traced thread and executes the requests in the trace's global order. The child
//! runs with address-space randomisation off, so the same trace under the same allocator gives
//! the same addresses.

use crate::allocators::Allocator;
use crate::error::ReplayError;
use crate::placed::{self, Job, Mapping, Placed, PlacedMeta};
use heaplab_trace::format::Op;
use heaplab_trace::stats::AddressMap;
use heaplab_trace::{BlockOptions, Blocks, Cause, Half, TraceReader};
use std::collections::HashMap;
use std::io::Read;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The shared file's magic (the bytes "LHREPLY1"), as the child checks it.
const SHM_MAGIC: u64 = 0x3159_4c50_4552_484c;
const SHM_VERSION: u32 = 1;
const OP_QUIT: u8 = 0;
const STATE_READY: u32 = 1;
const STATE_DONE: u32 = 2;
const STATE_FAILED: u32 = 3;
/// Result flag: a realloc failed in the child and its input block stays live in the slot.
const RESULT_INPUT_KEPT: u8 = 1;
/// Most blocks live at once (the child's block table has this many slots).
pub(crate) const MAX_SLOTS: u32 = 1 << 28;
/// Capacity of the mapping table.
const MAX_MAPPINGS: u32 = 1 << 16;
/// Most threads replayed.
pub const MAX_THREADS: usize = 4096;
/// Spins before sleeping on a futex.
const SPIN: u32 = 4000;

/// The shared header, mirroring `struct shm` in the child (offsets are checked there).
#[repr(C)]
struct Shm {
    magic: u64,
    version: u32,
    ring_len: u32,
    threads: u32,
    max_mappings: u32,
    ring_off: u64,
    maps_off: u64,
    state: AtomicU32,
    malloc_from_preload: u32,
    maps_count: AtomicU32,
    maps_rereads: u32,
    provider: [u8; 256],
    message: [u8; 256],
    _pad0: [u8; 64],
    produced: AtomicU64,
    _pad1: [u8; 56],
    executed: AtomicU64,
    _pad2: [u8; 56],
    child_waiting: AtomicU32,
    _pad3: [u8; 60],
    driver_waiting: AtomicU32,
    _pad4: [u8; 60],
    turn: AtomicU32,
    _pad5: [u8; 60],
}

/// A ring entry, mirroring `struct entry` in the child.
#[repr(C)]
#[derive(Clone, Copy)]
struct Entry {
    op: u8,
    flags: u8,
    thread: u16,
    slot: u32,
    a: u64,
    b: u64,
    map: u32,
    pad: u32,
}

/// A mapping record, mirroring `struct mapping` in the child.
#[repr(C)]
#[derive(Clone, Copy)]
struct MapRec {
    start: u64,
    end: u64,
    id: u32,
    flags: u32,
    name: [u8; 48],
}

const _: () = assert!(std::mem::offset_of!(Shm, produced) == 632);
const _: () = assert!(std::mem::offset_of!(Shm, executed) == 696);
const _: () = assert!(std::mem::offset_of!(Shm, child_waiting) == 760);
const _: () = assert!(std::mem::offset_of!(Shm, driver_waiting) == 824);
const _: () = assert!(std::mem::offset_of!(Shm, turn) == 888);
const _: () = assert!(std::mem::size_of::<Entry>() == 32);
const _: () = assert!(std::mem::size_of::<MapRec>() == 72);

/// Options of a replay.
#[derive(Clone, Debug)]
pub struct ReplayOptions {
    /// Ring entries (a power of two).
    pub ring_len: u32,
    /// Use the usable part of a damaged trace instead of failing.
    pub allow_truncated: bool,
}

impl Default for ReplayOptions {
    fn default() -> Self {
        ReplayOptions { ring_len: 1 << 16, allow_truncated: false }
    }
}

/// Counts from a replay.
#[derive(Clone, Debug, Default)]
pub struct ReplayStats {
    /// Trace steps read.
    pub steps: u64,
    /// Requests executed by the child (allocations, frees, reallocs).
    pub requests: u64,
    /// Jobs produced.
    pub jobs: u64,
    /// Threads replayed.
    pub threads: u32,
    /// Frees (and realloc inputs) of pointers the trace never saw allocated: skipped.
    pub unmatched_frees: u64,
    /// Allocations that failed in the trace: skipped.
    pub failed_in_trace: u64,
    /// Allocations that failed in the replay: no job (a failed realloc's input block stays
    /// live, its job lasting until the trace lets go of the block the realloc gave).
    pub failed_in_replay: u64,
    /// Times the child re-read its mappings.
    pub maps_rereads: u32,
    /// Wall time of the replay (child start to exit), seconds.
    pub seconds: f64,
}

/// The shared memory: the mapping in this process and the file behind it.
struct SharedMem {
    base: *mut u8,
    len: usize,
    fd: OwnedFd,
}

impl SharedMem {
    fn create(ring_len: u32, threads: u32) -> std::io::Result<SharedMem> {
        let ring_off = 4096usize;
        let maps_off = ring_off + ring_len as usize * 32;
        let len = maps_off + MAX_MAPPINGS as usize * 72;
        // SAFETY: memfd_create with a valid C string; the descriptor is owned below.
        let fd = unsafe { libc::memfd_create(c"heaplab-replay".as_ptr(), libc::MFD_CLOEXEC) };
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: fd is a fresh descriptor we own.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        // SAFETY: ftruncate and mmap on our descriptor; the result is checked.
        let base = unsafe {
            if libc::ftruncate(fd.as_raw_fd(), len as libc::off_t) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_SHARED, fd.as_raw_fd(), 0)
        };
        if base == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        let m = SharedMem { base: base as *mut u8, len, fd };
        // SAFETY: the file is zero-filled and at least 4096 bytes; only this process runs yet.
        unsafe {
            let h = m.base as *mut Shm;
            (*h).magic = SHM_MAGIC;
            (*h).version = SHM_VERSION;
            (*h).ring_len = ring_len;
            (*h).threads = threads;
            (*h).max_mappings = MAX_MAPPINGS;
            (*h).ring_off = ring_off as u64;
            (*h).maps_off = maps_off as u64;
        }
        Ok(m)
    }

    fn shm(&self) -> &Shm {
        // SAFETY: base points at a live mapping holding a Shm; its shared fields are atomics.
        unsafe { &*(self.base as *const Shm) }
    }

    fn entry(&self, pos: u64) -> *mut Entry {
        let h = self.shm();
        let i = (pos & (h.ring_len as u64 - 1)) as usize;
        // SAFETY: i < ring_len, inside the ring.
        unsafe { (self.base.add(h.ring_off as usize) as *mut Entry).add(i) }
    }

    fn mapping(&self, k: u32) -> MapRec {
        let h = self.shm();
        // SAFETY: k < max_mappings, inside the table; read after the child exited.
        unsafe { *(self.base.add(h.maps_off as usize) as *const MapRec).add(k as usize) }
    }
}

impl Drop for SharedMem {
    fn drop(&mut self) {
        // SAFETY: unmaps our own mapping.
        unsafe {
            libc::munmap(self.base as *mut libc::c_void, self.len);
        }
    }
}

fn futex_wait(word: &AtomicU32, val: u32, timeout: Duration) {
    let ts = libc::timespec { tv_sec: timeout.as_secs() as libc::time_t, tv_nsec: timeout.subsec_nanos() as libc::c_long };
    // SAFETY: a futex wait on a word in shared memory with a timeout.
    unsafe {
        libc::syscall(libc::SYS_futex, word.as_ptr(), libc::FUTEX_WAIT, val, &ts as *const libc::timespec, 0usize, 0u32);
    }
}

fn futex_wake(word: &AtomicU32) {
    // SAFETY: a futex wake on a word in shared memory.
    unsafe {
        libc::syscall(libc::SYS_futex, word.as_ptr(), libc::FUTEX_WAKE, i32::MAX, 0usize, 0usize, 0u32);
    }
}

fn cstr(b: &[u8]) -> String {
    let n = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    String::from_utf8_lossy(&b[..n]).into_owned()
}

/// A job being built: `start` is `u64::MAX` until a realloc's second half sets it. A realloc's
/// job knows its input block's job (`input`), and learns from the child whether the call failed
/// with the input kept live (`input_kept`).
#[derive(Clone, Copy)]
struct Pending {
    start: u64,
    end: u64,
    requested: u64,
    usable: u64,
    address: u64,
    map: u32,
    input: u64,
    input_kept: bool,
}

const NO_JOB: u64 = u64::MAX;

/// The running child and the ring's three cursors.
struct Session {
    mem: SharedMem,
    child: Child,
    stderr: Option<std::thread::JoinHandle<String>>,
    ring_len: u64,
    produced: u64,
    published: u64,
    consumed: u64,
    ring_job: Vec<u64>,
    jobs: Vec<Pending>,
    requests: u64,
}

impl Session {
    fn child_failure(&mut self, what: &str) -> ReplayError {
        let _ = self.child.kill();
        let status = self.child.wait().ok().filter(|s| !s.success());
        let msg = cstr(&self.mem.shm().message);
        let err = self.stderr.take().and_then(|h| h.join().ok()).unwrap_or_default();
        let said = err.lines().find(|l| !l.trim().is_empty()).map(str::to_string);
        ReplayError::ChildFailed { what: what.to_string(), status, message: msg, said }
    }

    /// Fails if the child has exited or reported a failure.
    fn check_alive(&mut self) -> Result<(), ReplayError> {
        if self.mem.shm().state.load(Ordering::Acquire) == STATE_FAILED {
            return Err(self.child_failure("failed"));
        }
        if let Ok(Some(status)) = self.child.try_wait() {
            // A child that finished the replay has published everything it executed.
            let done = self.mem.shm().state.load(Ordering::Acquire) == STATE_DONE;
            if !(done && status.success() && self.mem.shm().executed.load(Ordering::Acquire) == self.produced) {
                return Err(self.child_failure("died"));
            }
        }
        Ok(())
    }

    fn publish(&mut self) {
        if self.published == self.produced {
            return;
        }
        let h = self.mem.shm();
        h.produced.store(self.produced, Ordering::SeqCst);
        self.published = self.produced;
        if h.child_waiting.load(Ordering::SeqCst) != 0 {
            h.child_waiting.store(0, Ordering::SeqCst);
            futex_wake(&h.child_waiting);
        }
    }

    /// Takes the results the child has written so far; with `wait`, first waits until it has
    /// executed at least one more entry.
    fn consume(&mut self, wait: bool) -> Result<(), ReplayError> {
        let mut executed = self.mem.shm().executed.load(Ordering::Acquire);
        if wait && executed <= self.consumed {
            self.publish();
            let mut spins = 0u32;
            loop {
                executed = self.mem.shm().executed.load(Ordering::Acquire);
                if executed > self.consumed {
                    break;
                }
                if spins < SPIN {
                    spins += 1;
                    std::hint::spin_loop();
                    continue;
                }
                let h = self.mem.shm();
                h.driver_waiting.store(1, Ordering::SeqCst);
                if h.executed.load(Ordering::SeqCst) <= self.consumed {
                    futex_wait(&h.driver_waiting, 1, Duration::from_millis(50));
                }
                h.driver_waiting.store(0, Ordering::SeqCst);
                self.check_alive()?;
                spins = 0;
            }
        }
        while self.consumed < executed {
            let pos = self.consumed;
            let slot = (pos % self.ring_len) as usize;
            let job = self.ring_job[slot];
            if job != NO_JOB {
                // SAFETY: the child finished this entry (executed > pos, acquire above).
                let e = unsafe { std::ptr::read_volatile(self.mem.entry(pos)) };
                let j = &mut self.jobs[job as usize];
                j.address = e.a;
                j.usable = e.b;
                j.map = e.map;
                j.input_kept = e.flags & RESULT_INPUT_KEPT != 0;
            }
            self.consumed += 1;
        }
        Ok(())
    }

    fn emit(&mut self, op: u8, thread: u16, slot: u32, a: u64, b: u64, job: u64) -> Result<(), ReplayError> {
        while self.produced - self.consumed >= self.ring_len {
            self.consume(true)?;
        }
        let e = Entry { op, flags: 0, thread, slot, a, b, map: 0, pad: 0 };
        // SAFETY: this entry is not in the child's hands (produced - consumed < ring_len).
        unsafe { std::ptr::write_volatile(self.mem.entry(self.produced), e) };
        self.ring_job[(self.produced % self.ring_len) as usize] = job;
        self.produced += 1;
        self.requests += u64::from(op != OP_QUIT);
        if self.produced - self.published >= 256 {
            self.publish();
            if self.produced & 4095 == 0 {
                self.consume(false)?;
            }
        }
        Ok(())
    }
}

/// Where a live block of the trace is in the replay: its slot in the child and its job (kept
/// on the block by the blocks layer).
#[derive(Clone, Copy)]
struct Live {
    slot: u32,
    job: u64,
}

impl Default for Live {
    /// No slot and no job: what a block has until the driver attaches its own.
    fn default() -> Live {
        Live { slot: u32::MAX, job: NO_JOB }
    }
}

/// Ends a live block's job at `clock` and frees it in the child.
fn close(s: &mut Session, l: Live, clock: u64, thread: u16, free_slots: &mut Vec<u32>) -> Result<(), ReplayError> {
    s.jobs[l.job as usize].end = clock;
    s.emit(Op::Free as u8, thread, l.slot, 0, 0, NO_JOB)?;
    free_slots.push(l.slot);
    Ok(())
}

/// Starts the child under `alloc` and waits until it is ready.
fn start(alloc: &Allocator, opts: &ReplayOptions, threads: u32) -> Result<Session, ReplayError> {
    let program = crate::child::program_path().map_err(|e| ReplayError::Setup { step: "install the replay child".into(), source: e })?;
    let mem = SharedMem::create(opts.ring_len, threads).map_err(|e| ReplayError::Setup { step: "create the shared memory".into(), source: e })?;
    let fd = mem.fd.as_raw_fd();
    let mut cmd = Command::new(&program);
    cmd.env_remove("LD_PRELOAD").stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::piped());
    if let Some(lib) = &alloc.library {
        cmd.env("LD_PRELOAD", lib);
    }
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            // Same addresses run after run; a refusal (some sandboxes) only costs determinism.
            libc::personality(libc::ADDR_NO_RANDOMIZE as libc::c_ulong);
            // dup2 onto itself keeps close-on-exec, so clear it by hand in that case.
            let ok = if fd == 3 { libc::fcntl(3, libc::F_SETFD, 0) >= 0 } else { libc::dup2(fd, 3) >= 0 };
            if !ok {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut child = cmd.spawn().map_err(|e| ReplayError::Setup { step: format!("start the replay child {}", program.display()), source: e })?;
    let stderr = child.stderr.take().map(|mut s| {
        std::thread::spawn(move || {
            let mut t = String::new();
            let _ = s.read_to_string(&mut t);
            t
        })
    });
    let ring_len = opts.ring_len as u64;
    let mut s = Session { mem, child, stderr, ring_len, produced: 0, published: 0, consumed: 0, ring_job: vec![NO_JOB; ring_len as usize], jobs: Vec::new(), requests: 0 };
    let t0 = Instant::now();
    loop {
        let state = s.mem.shm().state.load(Ordering::Acquire);
        if state == STATE_READY {
            break;
        }
        s.check_alive()?;
        if t0.elapsed() > Duration::from_secs(30) {
            return Err(s.child_failure("did not start within 30 s"));
        }
        let h = s.mem.shm();
        h.driver_waiting.store(1, Ordering::SeqCst);
        if h.state.load(Ordering::SeqCst) != STATE_READY {
            futex_wait(&h.driver_waiting, 1, Duration::from_millis(20));
        }
        h.driver_waiting.store(0, Ordering::SeqCst);
    }
    // The allocator must really be the one in use: ld.so ignores a preload it cannot load.
    let provider = cstr(&s.mem.shm().provider);
    let ok = match &alloc.library {
        Some(lib) => {
            let canon = |p: &str| std::fs::canonicalize(p).unwrap_or_else(|_| p.into());
            s.mem.shm().malloc_from_preload == 1 || canon(&provider) == canon(&lib.to_string_lossy())
        }
        None => provider.contains("libc.so"),
    };
    if !ok {
        let _ = s.child.kill();
        let _ = s.child.wait();
        let said = s.stderr.take().and_then(|h| h.join().ok()).unwrap_or_default();
        return Err(ReplayError::AllocatorNotInUse {
            library: alloc.library.as_ref().map_or("glibc".into(), |p| p.display().to_string()),
            provider,
            loader_said: said.lines().find(|l| !l.trim().is_empty()).map(|l| l.trim().to_string()),
        });
    }
    Ok(s)
}

/// Replays the trace read by `reader` under `alloc`. `threads` lists the trace's thread ids
/// (from [`TraceReader::skim`]); the process's main thread (tid = pid) is replayed on the
/// child's main thread. `progress` is updated with the steps read.
pub fn replay<R: Read>(
    reader: &mut TraceReader<R>,
    alloc: &Allocator,
    threads: &[u32],
    opts: &ReplayOptions,
    progress: Option<&AtomicU64>,
) -> Result<(Placed, ReplayStats), ReplayError> {
    if !opts.ring_len.is_power_of_two() || opts.ring_len < 256 {
        return Err(ReplayError::BadRingLength(opts.ring_len));
    }
    let header = reader.header().clone();
    let mut order: Vec<u32> = threads.to_vec();
    order.sort_unstable();
    order.dedup();
    if let Some(i) = order.iter().position(|&t| t == header.pid) {
        order.remove(i);
        order.insert(0, header.pid);
    }
    if order.len() > MAX_THREADS {
        return Err(ReplayError::TooManyThreads { trace: reader.name().to_string(), threads: order.len() });
    }
    let index: HashMap<u32, u16> = order.iter().enumerate().map(|(i, &t)| (t, i as u16)).collect();
    let nthreads = order.len().max(1) as u32;

    let t0 = Instant::now();
    let mut s = start(alloc, opts, nthreads)?;
    let mut stats = ReplayStats { threads: nthreads, ..Default::default() };
    // The replay's time axis is the conversion's default: bytes clock, requested sizes.
    let mut blocks: Blocks<Live> = Blocks::new(BlockOptions::default(), &header);
    // Realloc requests sent at their first half whose second half is still to come.
    let mut reallocs: AddressMap<Live> = AddressMap::default();
    let mut free_slots: Vec<u32> = Vec::new();
    let mut next_slot: u32 = 0;
    let mut steps = 0u64;

    let mut take_slot = |free_slots: &mut Vec<u32>| -> Result<u32, ReplayError> {
        if let Some(s) = free_slots.pop() {
            return Ok(s);
        }
        if next_slot >= MAX_SLOTS {
            return Err(ReplayError::TooManyLiveBlocks);
        }
        next_slot += 1;
        Ok(next_slot - 1)
    };
    let new_job = |s: &mut Session, start: u64, requested: u64| -> u64 {
        s.jobs.push(Pending { start, end: u64::MAX, requested, usable: 0, address: 0, map: 0, input: NO_JOB, input_kept: false });
        s.jobs.len() as u64 - 1
    };

    for step in reader.by_ref() {
        steps += 1;
        if steps & 0xffff == 0 {
            if let Some(p) = progress {
                p.store(steps, Ordering::Relaxed);
            }
        }
        let e = step.event;
        let thread = index.get(&e.tid).copied().unwrap_or(0);
        let change = blocks.step(&step);
        if let Some(c) = change.closed {
            if c.cause == Cause::Realloc && e.ptr_out != 0 {
                // The child reallocates the block in its slot now; the new job starts at the
                // second half.
                s.jobs[c.data.job as usize].end = c.at;
                let job = new_job(&mut s, u64::MAX, e.requested());
                s.jobs[job as usize].input = c.data.job;
                s.emit(e.op as u8, thread, c.data.slot, e.size, e.extra, job)?;
                reallocs.insert(e.seq, Live { slot: c.data.slot, job });
            } else {
                // A free, realloc(p, 0) freeing p, or a block whose free the trace missed.
                close(&mut s, c.data, c.at, thread, &mut free_slots)?;
            }
        }
        if let Some(b) = change.opened {
            let sent = if step.half == Half::Acquire { reallocs.remove(&e.seq) } else { None };
            let l = match sent {
                Some(l) => {
                    s.jobs[l.job as usize].start = b.open;
                    l
                }
                None => {
                    // An allocation, or a realloc of NULL or of a pointer the trace never saw:
                    // a fresh block.
                    let slot = take_slot(&mut free_slots)?;
                    let job = new_job(&mut s, b.open, b.requested);
                    s.emit(e.op as u8, thread, slot, e.size, e.extra, job)?;
                    Live { slot, job }
                }
            };
            blocks.attach(l);
        }
    }
    for c in blocks.finish() {
        s.jobs[c.data.job as usize].end = c.at;
    }
    let counts = blocks.counts();
    stats.unmatched_frees = counts.unknown_frees;
    stats.failed_in_trace = counts.failed;
    let clock = blocks.now();
    let ending = reader.ending().clone();
    if let Some(d) = &ending.damage {
        if !opts.allow_truncated {
            let _ = s.child.kill();
            let _ = s.child.wait();
            return Err(ReplayError::DamagedTrace { trace: reader.name().to_string(), reason: d.reason.clone(), usable_below: d.usable_below });
        }
    }
    s.emit(OP_QUIT, 0, 0, 0, 0, NO_JOB)?;
    s.publish();
    while s.consumed < s.produced {
        s.consume(true)?;
    }
    let status = s.child.wait().map_err(|e| ReplayError::Setup { step: "wait for the replay child".into(), source: e })?;
    if !status.success() {
        return Err(s.child_failure(&format!("ended badly ({status})")));
    }
    stats.seconds = t0.elapsed().as_secs_f64();
    stats.steps = steps;
    stats.requests = s.requests;
    stats.maps_rereads = s.mem.shm().maps_rereads;

    keep_failed_realloc_inputs(&mut s.jobs);
    // Mappings that hold jobs, in id order; id 0 collects blocks found in no mapping.
    let count = s.mem.shm().maps_count.load(Ordering::Acquire).min(MAX_MAPPINGS);
    let mut used: Vec<bool> = vec![false; count as usize + 1];
    let mut jobs: Vec<Pending> = Vec::with_capacity(s.jobs.len());
    for j in s.jobs.iter() {
        if j.start == u64::MAX {
            continue; // a realloc whose second half the (damaged) trace lost
        }
        if j.address == 0 {
            stats.failed_in_replay += 1;
            continue;
        }
        let mut j = *j;
        if j.end == u64::MAX {
            // The input of a realloc that failed in the replay and whose second half the
            // (damaged) trace lost: live in the child to the end.
            j.end = clock;
        }
        j.end = j.end.max(j.start + 1);
        j.usable = j.usable.max(j.requested);
        if j.map > count {
            j.map = 0;
        }
        used[j.map as usize] = true;
        jobs.push(j);
    }
    let mut mappings = Vec::new();
    let mut remap = vec![u32::MAX; count as usize + 1];
    for id in 0..=count {
        if !used[id as usize] {
            continue;
        }
        remap[id as usize] = mappings.len() as u32;
        if id == 0 {
            let lo = jobs.iter().filter(|j| j.map == 0).map(|j| j.address).min().unwrap_or(0);
            let hi = jobs.iter().filter(|j| j.map == 0).map(|j| j.address + j.usable).max().unwrap_or(0);
            mappings.push(Mapping { id: 0, start: lo, end: hi, name: "(in no mapping)".into() });
        } else {
            let r = s.mem.mapping(id - 1);
            mappings.push(Mapping { id, start: r.start, end: r.end, name: cstr(&r.name) });
        }
    }
    // Job ids follow start times (a realloc's new job starts at its second half).
    jobs.sort_by_key(|j| j.start);
    let jobs: Vec<Job> = jobs
        .iter()
        .enumerate()
        .map(|(k, j)| Job { id: k as u64, mapping: remap[j.map as usize], start: j.start, end: j.end, requested: j.requested, usable: j.usable, address: j.address })
        .collect();
    stats.jobs = jobs.len() as u64;
    // Every placed file must be a valid placement: a clash here is a replay bug, not the input's.
    if let Some(o) = placed::first_overlap(&jobs) {
        return Err(ReplayError::InvalidPlacement { trace: reader.name().to_string(), allocator: alloc.name.clone(), overlap: o });
    }
    let meta = PlacedMeta {
        page_size: header.page_size,
        threads: nthreads,
        end_time: clock,
        allocator: alloc.name.clone(),
        provider: cstr(&s.mem.shm().provider),
        trace: reader.name().to_string(),
        command: header.args.join(" "),
    };
    Ok((Placed::new(meta, mappings, jobs), stats))
}

/// A realloc that failed in the replay (but succeeded in the trace) leaves its input block live
/// in the child's slot, as C says, until the trace frees or reallocates the block it got: the
/// input's job lasts until then, and the failed job itself has no address (it is counted as
/// failed). Chains of such failures lead back to the one block that stays live. Jobs are in
/// creation order, so an input's job is always settled before the jobs that name it.
fn keep_failed_realloc_inputs(jobs: &mut [Pending]) {
    for k in 0..jobs.len() {
        let j = jobs[k];
        if !j.input_kept || j.input == NO_JOB {
            continue;
        }
        let mut live = j.input as usize;
        if jobs[live].input_kept {
            live = jobs[live].input as usize; // already resolved to the live block's job
        }
        jobs[k].input = live as u64;
        jobs[k].address = 0;
        jobs[live].end = j.end;
    }
}

/// Replays the trace file at `path`: reads its thread list, then replays it.
/// The file is opened once and read twice, so it must be a regular file: a pipe is refused
/// with an error that says so.
pub fn replay_file(path: &str, alloc: &Allocator, opts: &ReplayOptions, progress: Option<&AtomicU64>) -> Result<(Placed, ReplayStats), ReplayError> {
    let input = heaplab_model::Input::open(path)?;
    let first = TraceReader::from_input(input)?;
    let mut r = TraceReader::from_input(first.get_ref().reread()?)?;
    let skim = first.skim();
    let threads: Vec<u32> = skim.threads.keys().copied().collect();
    replay(&mut r, alloc, &threads, opts, progress)
}
