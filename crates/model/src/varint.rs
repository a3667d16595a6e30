//! LEB128 varints and zigzag signing: the integer coding of heaplab's binary formats (`.hlbin`
//! here, `.hltrace` in heaplab-trace, whose C encoder writes the same bytes). One copy, so the
//! formats cannot drift apart in how they reject a malformed or overlong varint.

/// Appends `v` as a LEB128 varint (7 bits a byte, low bits first, high bit = more follows).
#[inline]
pub fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Zigzag-encodes a signed value (0, -1, 1, -2, … → 0, 1, 2, 3, …) so small deltas of either
/// sign make short varints.
#[inline]
pub fn zigzag(d: i64) -> u64 {
    ((d << 1) ^ (d >> 63)) as u64
}

/// Inverse of [`zigzag`].
#[inline]
pub fn unzigzag(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

/// Decodes one varint from bytes drawn by `next` (which fails when the input ends: its error
/// is passed on). `Ok(None)` when the varint is longer than 64 bits.
#[inline]
pub fn decode<E>(mut next: impl FnMut() -> Result<u8, E>) -> Result<Option<u64>, E> {
    let mut v = 0u64;
    let mut shift = 0u32;
    loop {
        let b = next()?;
        if shift == 63 && b > 1 {
            return Ok(None);
        }
        v |= ((b & 0x7f) as u64) << shift;
        if b & 0x80 == 0 {
            return Ok(Some(v));
        }
        shift += 7;
        if shift > 63 {
            return Ok(None);
        }
    }
}

/// Reads a varint from `buf` at `*pos`, advancing it; `None` when the buffer ends inside the
/// varint or it is longer than 64 bits.
#[inline]
pub fn get_varint(buf: &[u8], pos: &mut usize) -> Option<u64> {
    decode(|| {
        let b = *buf.get(*pos).ok_or(())?;
        *pos += 1;
        Ok::<u8, ()>(b)
    })
    .ok()
    .flatten()
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
        assert_eq!([zigzag(0), zigzag(-1), zigzag(1), zigzag(-2)], [0, 1, 2, 3]);
    }

    #[test]
    fn overlong_varints_are_rejected() {
        assert_eq!(get_varint(&[0xff; 11], &mut 0), None);
        // Ten bytes whose last carries more than the 64th bit.
        let mut b = vec![0xff; 9];
        b.push(0x02);
        assert_eq!(get_varint(&b, &mut 0), None);
        b[9] = 0x01;
        assert_eq!(get_varint(&b, &mut 0), Some(u64::MAX));
    }
}
