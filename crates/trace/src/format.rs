//! The `.hltrace` file format, version 2: the specification, its constants, and the varint
//! primitives shared by the reader and the test writer. The C encoder is
//! `preload/heaplab_preload.c`; both sides change together and bump [`VERSION`].
//!
//! Version 2 added the page event (op 11: direct `mmap`, `munmap`, `mremap`, `mprotect`,
//! `brk`, `sbrk`); a version 1 file is a version 2 file without page events and reads as one.
//!
//! All fixed-width integers are little-endian. A file is a header followed by records.
//!
//! **Header** (`header_len` bytes, a multiple of 32):
//! ```text
//!  0  magic "HLTRACE\0"          8  u16 version            10 u16 flags (bit 0: call sites)
//! 12  u32 header_len            16  u32 pid               20 u32 ppid
//! 24  u32 page size             28  u8 clock shift (timestamps are CLOCK_MONOTONIC ns >> shift)
//! 29  u8 stack depth            30  u8 origin (0 root, 1 fork child, 2 image started by exec)
//! 31  u8 clock id (1 = CLOCK_MONOTONIC)
//! 32  u64 start, monotonic ns   40  u64 start, realtime ns
//! 48  u32 parent pid (fork)     56  u64 parent's sequence number at the fork
//! 64  u16 n + executable path, u16 n + command line (arguments separated by NUL)
//! ```
//! **Record** = 32-byte record header + `capacity` payload bytes:
//! ```text
//!  0  u8 kind: 'W' events, 'P' padding, 'T' trailer; 0 = no more records (a crashed or
//!     exec'd process leaves a zero tail)
//!  1  u8 flags (bit 0: allocation events carry a call-site id)
//!  4  u32 capacity   8 u32 thread id   16 u64 floor   24 u64 base timestamp (clock units)
//! ```
//! A thread appends events to its own `W` record (a "window"). Every event in a window has a
//! sequence number ≥ the window's `floor`, and floors never decrease in file order: a reader
//! merges windows by sequence number with memory bounded by the number of live threads.
//!
//! **Event** (inside a `W` payload; a zero byte ends the payload early): one header byte, the
//! operation in the low 4 bits ([`Op`]) and flags in the high 4:
//! `0x10` sequence delta follows (else the previous event's + 1; a window starts at floor − 1),
//! `0x20` timestamp delta follows (else the same tick as the previous event),
//! `0x40` allocation ops: the result is NULL; `realloc`/`reallocarray`: the input is NULL,
//! `0x80` pointer deltas are in bytes (else in 16-byte units).
//! Then varints (LEB128; "zz" = zigzag-signed):
//! ```text
//! [seq delta] [ts delta]
//! malloc, valloc, pvalloc          size, (zz ptr delta, zz usable − size)ᵃ
//! calloc                           nmemb, size, (zz ptr delta, zz usable − nmemb·size)ᵃ
//! posix_memalign, aligned_alloc,   alignment, size, (zz ptr delta, zz usable − size)ᵃ
//! memalign
//! free                             zz ptr delta                    (free(NULL) is not an event)
//! realloc                          (zz in delta)ᵇ, size, seq2 − seq − 1, out, (zz usable − size)ᶜ
//! reallocarray                     (zz in delta)ᵇ, nmemb, size, seq2 − seq − 1, out, (…)ᶜ
//! site definition (op 14)          id, hash, n, n × frame address
//! page event (op 11)               kind ([`PageOp`]), then by kind:
//!   mmap                             len, prot, flags, (addr)ᵈ
//!   munmap                           addr, len
//!   mremap                           addr, old len, new len, flags, (new addr)ᵈ
//!   mprotect                         addr, len, prot
//!   brk, sbrk                        break before, break after (asked for, when failed)
//! [site id]                        every allocation op when the window flags call sites
//! ```
//! A page event is a direct call of the traced program (or of a library other than glibc:
//! glibc's malloc reaches the kernel through internal aliases the tracer cannot see). Its
//! `0x40` flag means the call failed; ᵈ is then absent. Addresses and lengths are absolute
//! varints and flags, prot are the Linux values. Page events take a sequence number (munmap
//! before the call, the others after it) but carry no call site and leave the pointer-delta
//! base alone, so heap events around them encode exactly as without them.
//! ᵃ absent when the result is NULL; ᵇ absent when the input is NULL; ᶜ absent when `out` = 0.
//! `out` is 0 for a NULL result, else zz(delta from the input, or from the previous pointer when
//! the input is NULL) + 1. Pointer deltas are taken from the previous non-NULL pointer of the
//! window (result, else input). A realloc takes two sequence numbers: `seq` before the call (the
//! old block is released) and `seq2` after it (the new block exists).
//!
//! **Trailer** (`T` payload, written at exit, `_exit`, exec or a fatal signal): varints end kind
//! ([`EndKind`]), exit status or signal, sequence numbers used, end timestamp, VmHWM kB, VmPeak
//! kB, free(NULL) calls, module count (then per module: start, end, file offset, path length,
//! path bytes), and the marker `HLTEND`. Events may follow the trailer (other libraries'
//! destructors run after it).

/// The first 8 bytes of every trace (defined with the other formats' magic in
/// `heaplab_model::input`, which tells files apart by it).
pub use heaplab_model::input::TRACE_MAGIC as MAGIC;
/// The version the tracer writes (this build reads it and every version from [`MIN_VERSION`]).
pub const VERSION: u16 = 2;
/// The oldest version this build reads.
pub const MIN_VERSION: u16 = 1;
/// Size of the fixed part of the header.
pub const HEADER_FIXED: usize = 64;
/// Size of a record header.
pub const RECORD_HEADER: usize = 32;
/// Record kind: a thread's window of events.
pub const KIND_EVENTS: u8 = b'W';
/// Record kind: unused space (windows never straddle the tracer's 1 MiB mapping segments).
pub const KIND_PADDING: u8 = b'P';
/// Record kind: the trailer.
pub const KIND_TRAILER: u8 = b'T';
/// Record flag: allocation events carry a call-site id.
pub const RECORD_SITES: u8 = 1;
/// Marker at the end of a trailer.
pub const TRAILER_END: &[u8; 6] = b"HLTEND";
/// Event flag: a sequence delta follows.
pub const F_SEQ: u8 = 0x10;
/// Event flag: a timestamp delta follows.
pub const F_TS: u8 = 0x20;
/// Event flag: NULL result (allocation ops) or NULL input (realloc ops).
pub const F_NULL: u8 = 0x40;
/// Event flag: pointer deltas in bytes rather than 16-byte units.
pub const F_RAW: u8 = 0x80;
/// Operation code of a call-site definition.
pub const OP_SITE: u8 = 14;
/// Operation code of a page event ([`PageOp`]).
pub const OP_PAGES: u8 = 11;

/// The interposed functions, as recorded.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Op {
    /// `malloc(size)`
    Malloc = 1,
    /// `free(ptr)`
    Free = 2,
    /// `calloc(nmemb, size)`
    Calloc = 3,
    /// `realloc(ptr, size)`
    Realloc = 4,
    /// `reallocarray(ptr, nmemb, size)`
    Reallocarray = 5,
    /// `posix_memalign(&ptr, alignment, size)`
    PosixMemalign = 6,
    /// `aligned_alloc(alignment, size)`
    AlignedAlloc = 7,
    /// `memalign(alignment, size)`
    Memalign = 8,
    /// `valloc(size)`
    Valloc = 9,
    /// `pvalloc(size)`
    Pvalloc = 10,
}

impl Op {
    /// Every operation, in code order.
    pub const ALL: [Op; 10] = [
        Op::Malloc,
        Op::Free,
        Op::Calloc,
        Op::Realloc,
        Op::Reallocarray,
        Op::PosixMemalign,
        Op::AlignedAlloc,
        Op::Memalign,
        Op::Valloc,
        Op::Pvalloc,
    ];

    /// The operation with this code, if any.
    pub fn from_code(c: u8) -> Option<Op> {
        Op::ALL.get((c as usize).wrapping_sub(1)).copied()
    }

    /// The C function's name.
    pub fn name(self) -> &'static str {
        match self {
            Op::Malloc => "malloc",
            Op::Free => "free",
            Op::Calloc => "calloc",
            Op::Realloc => "realloc",
            Op::Reallocarray => "reallocarray",
            Op::PosixMemalign => "posix_memalign",
            Op::AlignedAlloc => "aligned_alloc",
            Op::Memalign => "memalign",
            Op::Valloc => "valloc",
            Op::Pvalloc => "pvalloc",
        }
    }

    /// realloc and reallocarray: release the input and hand out a result.
    pub fn is_realloc(self) -> bool {
        matches!(self, Op::Realloc | Op::Reallocarray)
    }

    /// Whether the second size-like field is an element count.
    pub fn has_count(self) -> bool {
        matches!(self, Op::Calloc | Op::Reallocarray)
    }

    /// Whether the call carries an explicit alignment.
    pub fn has_alignment(self) -> bool {
        matches!(self, Op::PosixMemalign | Op::AlignedAlloc | Op::Memalign)
    }
}

/// The direct address-space calls a page event records (the kind varint of op 11).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum PageOp {
    /// `mmap(addr, len, prot, flags, fd, offset)` (and `mmap64`)
    Mmap = 1,
    /// `munmap(addr, len)`
    Munmap = 2,
    /// `mremap(addr, old_len, new_len, flags, ...)`
    Mremap = 3,
    /// `mprotect(addr, len, prot)`: tells reservations (`PROT_NONE`) from usable memory.
    Mprotect = 4,
    /// `brk(addr)`
    Brk = 5,
    /// `sbrk(increment)`
    Sbrk = 6,
}

impl PageOp {
    /// Every page operation, in code order.
    pub const ALL: [PageOp; 6] = [PageOp::Mmap, PageOp::Munmap, PageOp::Mremap, PageOp::Mprotect, PageOp::Brk, PageOp::Sbrk];

    /// The operation with this kind code, if any.
    pub fn from_code(c: u64) -> Option<PageOp> {
        PageOp::ALL.get((c as usize).wrapping_sub(1)).copied()
    }

    /// The C function's name.
    pub fn name(self) -> &'static str {
        match self {
            PageOp::Mmap => "mmap",
            PageOp::Munmap => "munmap",
            PageOp::Mremap => "mremap",
            PageOp::Mprotect => "mprotect",
            PageOp::Brk => "brk",
            PageOp::Sbrk => "sbrk",
        }
    }
}

/// Linux `MAP_SHARED`.
pub const MAP_SHARED: u64 = 0x01;
/// Linux `MAP_ANONYMOUS`.
pub const MAP_ANONYMOUS: u64 = 0x20;
/// Linux `MREMAP_DONTUNMAP`: the old range stays mapped.
pub const MREMAP_DONTUNMAP: u64 = 0x04;

/// How a traced process ended, from its trailer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EndKind {
    /// `exit()` or return from `main` (the library's destructor wrote the trailer).
    Exit,
    /// `_exit()` / `_Exit()`, with the status.
    UnderscoreExit(i64),
    /// A fatal signal (SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT), with its number.
    Signal(i64),
    /// An exec call replaced the program (a later image writes its own trace).
    Exec,
    /// A code this reader does not know.
    Other(u64, i64),
}

impl EndKind {
    /// Decodes the trailer's kind and code.
    pub fn from_code(kind: u64, code: i64) -> EndKind {
        match kind {
            1 => EndKind::Exit,
            2 => EndKind::UnderscoreExit(code),
            3 => EndKind::Signal(code),
            4 => EndKind::Exec,
            k => EndKind::Other(k, code),
        }
    }
}

/// Appends `v` as a LEB128 varint.
pub fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Zigzag-encodes a signed value.
pub fn zigzag(d: i64) -> u64 {
    ((d << 1) ^ (d >> 63)) as u64
}

/// Inverse of [`zigzag`].
pub fn unzigzag(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

/// Reads a varint from `buf` at `*pos`, advancing it; `None` when the buffer ends inside the
/// varint or it is longer than 64 bits.
pub fn get_varint(buf: &[u8], pos: &mut usize) -> Option<u64> {
    let mut v = 0u64;
    let mut shift = 0u32;
    loop {
        let b = *buf.get(*pos)?;
        *pos += 1;
        if shift == 63 && b > 1 {
            return None;
        }
        v |= ((b & 0x7f) as u64) << shift;
        if b & 0x80 == 0 {
            return Some(v);
        }
        shift += 7;
        if shift > 63 {
            return None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_round_trip() {
        for v in [0u64, 1, 127, 128, 300, u32::MAX as u64, u64::MAX] {
            let mut b = Vec::new();
            put_varint(&mut b, v);
            let mut p = 0;
            assert_eq!(get_varint(&b, &mut p), Some(v));
            assert_eq!(p, b.len());
            assert_eq!(get_varint(&b[..b.len() - 1], &mut 0), None);
        }
        for d in [0i64, -1, 1, i64::MIN, i64::MAX, -17] {
            assert_eq!(unzigzag(zigzag(d)), d);
        }
        assert_eq!(get_varint(&[0xff; 11], &mut 0), None);
    }

    #[test]
    fn op_codes() {
        for op in Op::ALL {
            assert_eq!(Op::from_code(op as u8), Some(op));
        }
        assert_eq!(Op::from_code(0), None);
        assert_eq!(Op::from_code(11), None);
        for op in PageOp::ALL {
            assert_eq!(PageOp::from_code(op as u64), Some(op));
        }
        assert_eq!(PageOp::from_code(0), None);
        assert_eq!(PageOp::from_code(7), None);
    }
}
