//! The `.hltrace` format's numbers: magic, version, sizes, record kinds, event flags, operation
//! codes, origins and end kinds. This file is the one definition: the trace crate's build
//! script includes it too and generates `heaplab_format.h` from it for the C tracer, so the
//! encoder and the reader cannot drift apart. It must therefore stay self-contained (no `crate::`
//! paths, std only). The meaning of each number is specified in `format.rs`.

/// The first 8 bytes of every trace.
pub const MAGIC: &[u8; 8] = b"HLTRACE\0";
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

/// Header origin (byte 30): the first traced image, written under the name the user gave.
pub const ORIGIN_ROOT: u8 = 0;
/// Header origin: the child of a fork.
pub const ORIGIN_FORK: u8 = 1;
/// Header origin: an image started by exec (or any image when the root name was taken).
pub const ORIGIN_IMAGE: u8 = 2;
/// Header clock id (byte 31): timestamps are `CLOCK_MONOTONIC`.
pub const CLOCK_MONOTONIC: u8 = 1;

/// Trailer end kind: `exit()` or return from `main`.
pub const END_EXIT: u64 = 1;
/// Trailer end kind: `_exit()` / `_Exit()`.
pub const END_UNDERSCORE_EXIT: u64 = 2;
/// Trailer end kind: a fatal signal.
pub const END_SIGNAL: u64 = 3;
/// Trailer end kind: exec replaced the image.
pub const END_EXEC: u64 = 4;

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
            END_EXIT => EndKind::Exit,
            END_UNDERSCORE_EXIT => EndKind::UnderscoreExit(code),
            END_SIGNAL => EndKind::Signal(code),
            END_EXEC => EndKind::Exec,
            k => EndKind::Other(k, code),
        }
    }
}

