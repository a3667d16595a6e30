//! The `.hltrace` file format, version 2: the specification and its constants. Integers are
//! coded with heaplab-model's [`varint`](heaplab_model::varint) module. The numbers live in
//! `format/codes.rs`, from which the build script generates the C tracer's `heaplab_format.h`;
//! the C encoder (`preload/`) and the reader here change together and bump [`VERSION`].
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

mod codes;
pub use codes::*;

// The trace's magic is written once more in `codes` (which also generates the C header) and
// must be the one the input layer tells files apart by.
const _: () = {
    let (a, b) = (MAGIC, heaplab_model::input::TRACE_MAGIC);
    let mut i = 0;
    while i < a.len() {
        assert!(a[i] == b[i], "format::MAGIC differs from heaplab_model::input::TRACE_MAGIC");
        i += 1;
    }
};

#[cfg(test)]
mod tests {
    use super::*;

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
