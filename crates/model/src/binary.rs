//! heaplab's compact binary format for large instances and placements (`.hlbin`).
//!
//! Layout (all integers little-endian or LEB128 varints):
//! - magic `b"HLBIN\0"`, version `u16` (= 1), flags `u16` (bit 0 alignment, bit 1 requested,
//!   bit 2 offsets), buffer count `u64`;
//! - per buffer: zigzag varint of `id − previous id`, zigzag varint of `lower − previous lower`,
//!   varint `upper − lower`, varint `size`, then if flagged: one byte `log2 alignment`, varint
//!   `requested`, varint `offset`;
//! - trailer `b"HLEND\0"` so a truncated file is told apart from a short one.
//!
//! Delta coding makes instances sorted by start time (the usual case) about 6–9 bytes a buffer.

use crate::error::{InputError, InputErrorKind as K};
use crate::varint::{decode, put_varint, unzigzag, zigzag};
use crate::{Columns, Input, Instance, Semantics};
use std::io::{BufRead, Read, Write};

/// The first bytes of every heaplab binary instance file (defined with the other formats'
/// magic in [`crate::input`]).
pub use crate::input::HLBIN_MAGIC as MAGIC;
const TRAILER: &[u8; 6] = b"HLEND\0";
/// The format version this build writes and reads.
pub const VERSION: u16 = 1;

/// Writes an instance (and offsets, if given) in the binary format.
pub fn write<W: Write>(mut w: W, inst: &Instance, offsets: Option<&[u64]>) -> std::io::Result<()> {
    let flags = (inst.columns.alignment as u16) | ((inst.columns.requested as u16) << 1) | ((offsets.is_some() as u16) << 2);
    let mut head = Vec::with_capacity(18);
    head.extend_from_slice(MAGIC);
    head.extend_from_slice(&VERSION.to_le_bytes());
    head.extend_from_slice(&flags.to_le_bytes());
    head.extend_from_slice(&(inst.len() as u64).to_le_bytes());
    w.write_all(&head)?;
    let mut buf = Vec::with_capacity(1 << 16);
    let (mut pid, mut plo) = (0u64, 0u64);
    for (i, b) in inst.buffers.iter().enumerate() {
        put_varint(&mut buf, zigzag(b.id.wrapping_sub(pid) as i64));
        put_varint(&mut buf, zigzag(b.lower.wrapping_sub(plo) as i64));
        put_varint(&mut buf, b.upper - b.lower);
        put_varint(&mut buf, b.size);
        if inst.columns.alignment {
            buf.push(b.align_log2);
        }
        if inst.columns.requested {
            put_varint(&mut buf, b.requested);
        }
        if let Some(o) = offsets {
            put_varint(&mut buf, o[i]);
        }
        pid = b.id;
        plo = b.lower;
        if buf.len() > (1 << 16) - 64 {
            w.write_all(&buf)?;
            buf.clear();
        }
    }
    buf.extend_from_slice(TRAILER);
    w.write_all(&buf)
}

/// The input in chunks of its own, so that a record's bytes are taken from a slice: a read
/// call per byte through the input's layers cost most of reading (2.7 s for 10^7 buffers).
struct Bytes<R> {
    r: R,
    buf: Vec<u8>,
    /// The unread bytes are `buf[pos..end]`.
    pos: usize,
    end: usize,
    file: String,
    record: u64,
}

/// Bytes a [`Bytes`] chunk holds.
const CHUNK: usize = 1 << 16;
/// The longest varint, in bytes.
const MAX_VARINT: usize = 10;

impl<R: Read> Bytes<R> {
    fn new(r: R, file: &str) -> Self {
        Bytes { r, buf: vec![0; CHUNK], pos: 0, end: 0, file: file.to_string(), record: 0 }
    }

    /// Reads more after the unread bytes (moved to the front); false at the end of the input.
    fn refill(&mut self) -> bool {
        self.buf.copy_within(self.pos..self.end, 0);
        (self.end, self.pos) = (self.end - self.pos, 0);
        loop {
            match self.r.read(&mut self.buf[self.end..]) {
                Ok(0) => return false,
                Ok(k) => {
                    self.end += k;
                    return true;
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => return false,
            }
        }
    }

    /// The next `out.len()` bytes, or false where the input ends first.
    fn exact(&mut self, out: &mut [u8]) -> bool {
        while self.end - self.pos < out.len() {
            if !self.refill() {
                return false;
            }
        }
        out.copy_from_slice(&self.buf[self.pos..self.pos + out.len()]);
        self.pos += out.len();
        true
    }

    /// Whether the input holds nothing more.
    fn at_end(&mut self) -> bool {
        self.pos == self.end && !self.refill()
    }

    fn byte(&mut self) -> Result<u8, InputError> {
        if self.pos == self.end && !self.refill() {
            return Err(self.truncated());
        }
        self.pos += 1;
        Ok(self.buf[self.pos - 1])
    }
    fn truncated(&self) -> InputError {
        InputError::at(
            &self.file,
            self.record + 1,
            None,
            K::Format,
            format!("truncated: file ends inside buffer record {} (records before it are intact)", self.record + 1),
        )
    }
    fn varint(&mut self, field: &str) -> Result<u64, InputError> {
        if self.end - self.pos < MAX_VARINT {
            self.refill();
        }
        let v = if self.end - self.pos >= MAX_VARINT {
            // A whole varint is in the chunk: decoded from the slice.
            let (buf, pos) = (&self.buf, &mut self.pos);
            decode(|| {
                *pos += 1;
                Ok::<u8, InputError>(buf[*pos - 1])
            })?
        } else {
            decode(|| self.byte())?
        };
        match v {
            Some(v) => Ok(v),
            None => Err(InputError::at(&self.file, self.record + 1, Some(field), K::Format, "malformed varint (corrupt file)")),
        }
    }
}

/// Whether the stream starts with the binary magic (peeks, consumes nothing).
pub fn is_binary<R: BufRead>(r: &mut R) -> bool {
    r.fill_buf().map(|b| b.starts_with(MAGIC)).unwrap_or(false)
}

/// Reads a binary instance; offsets are returned when the file has them.
pub fn read<R: BufRead>(r: R, file: &str, semantics: Semantics) -> Result<(Instance, Option<Vec<u64>>), InputError> {
    read_sized(r, file, semantics, None)
}

/// Reads a binary instance from an opened input; a regular file's size bounds the buffer
/// count its header may claim (see [`read`]).
pub fn read_input(input: Input, semantics: Semantics) -> Result<(Instance, Option<Vec<u64>>), InputError> {
    // A compressed file's size says nothing about how many records it holds.
    let (name, len) = (input.name().to_string(), input.len().filter(|_| !input.is_compressed()));
    read_sized(input, &name, semantics, len)
}

/// Header, end marker and the smallest record (four one-byte varints), in bytes.
const HEADER_AND_TRAILER: u64 = 18 + 6;
const MIN_RECORD: u64 = 4;
/// Buffers reserved up front when the file's size is unknown (a pipe): 48 MiB; more grow the
/// vector as they come.
const STREAM_RESERVE: u64 = 1 << 20;

fn read_sized<R: BufRead>(r: R, file: &str, semantics: Semantics, bytes: Option<u64>) -> Result<(Instance, Option<Vec<u64>>), InputError> {
    let mut rd = Bytes::new(r, file);
    let mut head = [0u8; 18];
    if !rd.exact(&mut head) || &head[..6] != MAGIC {
        return Err(InputError::file(file, K::Format, "not a heaplab binary instance (bad magic or too short)"));
    }
    let version = u16::from_le_bytes([head[6], head[7]]);
    if version != VERSION {
        return Err(InputError::file(
            file,
            K::Format,
            format!("binary format version {version}; this heaplab reads version {VERSION}"),
        ));
    }
    let flags = u16::from_le_bytes([head[8], head[9]]);
    if flags & !7 != 0 {
        return Err(InputError::file(file, K::Format, format!("unknown flags {flags:#x} in header")));
    }
    let n = u64::from_le_bytes(head[10..18].try_into().expect("8 bytes"));
    let columns = Columns { alignment: flags & 1 != 0, requested: flags & 2 != 0 };
    let has_off = flags & 4 != 0;
    // A corrupt count must not reserve memory: it is checked against the file's size first.
    if let Some(len) = bytes {
        if n > len.saturating_sub(HEADER_AND_TRAILER) / MIN_RECORD {
            return Err(InputError::file(
                file,
                K::Format,
                format!("truncated or corrupt: the header counts {n} buffers, which cannot fit in the file's {len} bytes"),
            ));
        }
    }
    let mut b = crate::csv::InstanceBuilder::new(file, semantics, columns);
    b.reserve(n.min(bytes.map_or(STREAM_RESERVE, |len| len / MIN_RECORD)));
    let mut offsets = Vec::new();
    let (mut pid, mut plo) = (0u64, 0u64);
    for rec in 0..n {
        rd.record = rec;
        let id = pid.wrapping_add(unzigzag(rd.varint("id")?) as u64);
        let lower = plo.wrapping_add(unzigzag(rd.varint("lower")?) as u64);
        let len = rd.varint("upper")?;
        let size = rd.varint("size")?;
        let align = if columns.alignment {
            let l = rd.byte()?;
            if l >= 63 {
                return Err(InputError::at(file, rec + 1, Some("alignment"), K::Format, format!("alignment 2^{l} too large")));
            }
            1u64 << l
        } else {
            0
        };
        let requested = if columns.requested { rd.varint("requested")? } else { 0 };
        let upper = lower.checked_add(len).ok_or_else(|| {
            InputError::at(file, rec + 1, Some("upper"), K::Overflow, "lower + lifetime overflows 64 bits")
        })?;
        b.push(rec + 1, crate::csv::RawBuffer { id, lower, upper, size, alignment: align, requested })?;
        if has_off {
            let off = rd.varint("offset")?;
            if off.checked_add(size).is_none() {
                return Err(InputError::at(file, rec + 1, Some("offset"), K::Overflow, "offset + size overflows 64 bits"));
            }
            offsets.push(off);
        }
        pid = id;
        plo = lower;
    }
    rd.record = n;
    let mut tail = [0u8; 6];
    if !rd.exact(&mut tail) || &tail != TRAILER {
        return Err(InputError::file(file, K::Format, format!("truncated or corrupt: all {n} records read but the end marker is missing")));
    }
    if !rd.at_end() {
        return Err(InputError::file(file, K::Format, "unexpected bytes after the end marker"));
    }
    Ok((b.finish()?, has_off.then_some(offsets)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_count_beyond_the_file_is_refused_before_reserving_memory() {
        let mut bytes = Vec::new();
        write(&mut bytes, &Instance::new(vec![crate::Buffer::new(1, 0, 1, 8)]), None).unwrap();
        bytes[10..18].copy_from_slice(&(1u64 << 40).to_le_bytes());
        let e = read_input(Input::from_bytes("x.hlbin", bytes), Semantics::Inex).unwrap_err();
        assert!(e.to_string().contains("cannot fit in the file's 28 bytes"), "{e}");
    }

    fn decode(bytes: &[u8]) -> Result<u64, InputError> {
        Bytes::new(bytes, "v").varint("f")
    }

    proptest::proptest! {
        // The private coding every record is made of: a varint reads back whole and uses the
        // fewest bytes; zigzag maps every signed delta to an unsigned one and back.
        #[test]
        fn varints_and_zigzag_round_trip(v in proptest::prelude::any::<u64>(), d in proptest::prelude::any::<i64>()) {
            let mut out = Vec::new();
            put_varint(&mut out, v);
            proptest::prop_assert_eq!(out.len(), (64 - v.leading_zeros() as usize).max(1).div_ceil(7));
            proptest::prop_assert_eq!(decode(&out).unwrap(), v);
            // With a whole varint's bytes in the chunk too (the slice path).
            out.extend_from_slice(&[0x80; 12]);
            proptest::prop_assert_eq!(decode(&out).unwrap(), v);
            proptest::prop_assert_eq!(unzigzag(zigzag(d)), d);
            proptest::prop_assert!(u128::from(zigzag(d)) <= 2 * u128::from(d.unsigned_abs()));
        }
    }

    #[test]
    fn varints_past_64_bits_or_cut_short_are_refused() {
        // Ten bytes whose last carries more than bit 63, and eleven continuation bytes.
        let over = [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02];
        assert!(decode(&over).unwrap_err().to_string().contains("malformed varint"));
        assert!(decode(&[0xff; 11]).unwrap_err().to_string().contains("malformed varint"));
        assert!(decode(&[0x80, 0x80]).unwrap_err().to_string().contains("truncated"));
        assert_eq!(decode(&[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]).unwrap(), u64::MAX);
    }
}
