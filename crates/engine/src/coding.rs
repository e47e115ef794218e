//! Byte-level encodings shared by every format: VLQ (unsigned LEB128) integers and
//! fixed-width little-endian integers read through bounds-checked helpers.
//!
//! Invariant: nothing here panics or indexes out of bounds on any input; a decoder that
//! runs out of bytes returns `None` (or, through [`Cursor`], a [`Reason`]), and the caller
//! turns that into a typed corruption error that names the file and offset.

use crate::error::Reason;

/// Largest number of bytes a 64-bit VLQ may take.
pub const MAX_VLQ_LEN: usize = 10;

/// Number of bytes `v` takes as a VLQ.
#[inline]
pub fn vlq_len(v: u64) -> usize {
    let bits = 64 - (v | 1).leading_zeros() as usize;
    bits.div_ceil(7)
}

/// Appends the minimal VLQ encoding of `v` to `out`.
#[inline]
pub fn put_vlq(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Why a VLQ could not be decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VlqError {
    /// The input ended inside the integer.
    Truncated,
    /// Longer than 10 bytes, or the value does not fit in 64 bits.
    Overflow,
}

/// Decodes a VLQ at the start of `buf`; returns the value and the bytes it used.
#[inline]
pub fn get_vlq(buf: &[u8]) -> Result<(u64, usize), VlqError> {
    // Fast path: one byte.
    match buf.first() {
        None => return Err(VlqError::Truncated),
        Some(&b) if b < 0x80 => return Ok((u64::from(b), 1)),
        Some(_) => {}
    }
    let mut value: u64 = 0;
    for (i, &b) in buf.iter().enumerate().take(MAX_VLQ_LEN) {
        let chunk = u64::from(b & 0x7f);
        let shift = 7 * i as u32;
        if i == MAX_VLQ_LEN - 1 && chunk > 1 {
            return Err(VlqError::Overflow);
        }
        value |= chunk << shift;
        if b < 0x80 {
            return Ok((value, i + 1));
        }
    }
    if buf.len() >= MAX_VLQ_LEN {
        Err(VlqError::Overflow)
    } else {
        Err(VlqError::Truncated)
    }
}

/// Reads a little-endian `u32` at `off`, or `None` if it does not fit in `buf`.
#[inline]
pub fn get_u32_le(buf: &[u8], off: usize) -> Option<u32> {
    let bytes = buf.get(off..off.checked_add(4)?)?;
    Some(u32::from_le_bytes(bytes.try_into().ok()?))
}

/// Reads a little-endian `u64` at `off`, or `None` if it does not fit in `buf`.
#[inline]
pub fn get_u64_le(buf: &[u8], off: usize) -> Option<u64> {
    let bytes = buf.get(off..off.checked_add(8)?)?;
    Some(u64::from_le_bytes(bytes.try_into().ok()?))
}

/// Reads an unsigned little-endian integer of `width` (1..=8) bytes at `off`.
#[inline]
pub fn get_uint_le(buf: &[u8], off: usize, width: usize) -> Option<u64> {
    let bytes = buf.get(off..off.checked_add(width)?)?;
    let mut word = [0u8; 8];
    word.get_mut(..width)?.copy_from_slice(bytes);
    Some(u64::from_le_bytes(word))
}

/// A bounds-checked reader over a byte slice: every read either yields a value and
/// advances, or fails with [`Reason::Truncated`] / [`Reason::BadVarint`] and leaves the
/// position unchanged. The caller adds the file, path and offset ([`Cursor::position`]).
#[derive(Debug, Clone)]
pub(crate) struct Cursor<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    /// A cursor at the start of `buf`.
    pub(crate) fn new(buf: &'a [u8]) -> Self {
        Cursor { buf, pos: 0 }
    }

    /// Bytes consumed so far (the offset of the next read within `buf`).
    pub(crate) fn position(&self) -> usize {
        self.pos
    }

    /// Bytes not yet consumed.
    pub(crate) fn remaining(&self) -> usize {
        self.buf.len().saturating_sub(self.pos)
    }

    /// True when every byte has been consumed.
    pub(crate) fn is_empty(&self) -> bool {
        self.remaining() == 0
    }

    /// The next `n` bytes; `Truncated` if fewer remain. Never allocates.
    pub(crate) fn take(&mut self, n: usize) -> Result<&'a [u8], Reason> {
        let end = self.pos.checked_add(n).ok_or(Reason::Truncated)?;
        let bytes = self.buf.get(self.pos..end).ok_or(Reason::Truncated)?;
        self.pos = end;
        Ok(bytes)
    }

    /// The next byte.
    pub(crate) fn u8(&mut self) -> Result<u8, Reason> {
        let [b] = self.take(1)? else {
            return Err(Reason::Truncated);
        };
        Ok(*b)
    }

    /// The next little-endian `u32`.
    pub(crate) fn u32_le(&mut self) -> Result<u32, Reason> {
        let bytes = self.take(4)?;
        let word: [u8; 4] = bytes.try_into().map_err(|_| Reason::Truncated)?;
        Ok(u32::from_le_bytes(word))
    }

    /// The next VLQ; `Truncated` if it runs past the end, `BadVarint` if it overflows.
    pub(crate) fn vlq(&mut self) -> Result<u64, Reason> {
        let rest = self.buf.get(self.pos..).ok_or(Reason::Truncated)?;
        let (value, used) = get_vlq(rest).map_err(|e| match e {
            VlqError::Truncated => Reason::Truncated,
            VlqError::Overflow => Reason::BadVarint,
        })?;
        self.pos += used;
        Ok(value)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    #[test]
    fn vlq_examples_from_the_format() {
        for (v, bytes) in [
            (0u64, vec![0x00]),
            (127, vec![0x7f]),
            (128, vec![0x80, 0x01]),
            (16383, vec![0xff, 0x7f]),
            (16384, vec![0x80, 0x80, 0x01]),
        ] {
            let mut out = Vec::new();
            put_vlq(&mut out, v);
            assert_eq!(out, bytes, "encode {v}");
            assert_eq!(vlq_len(v), bytes.len());
            assert_eq!(get_vlq(&bytes), Ok((v, bytes.len())));
        }
    }

    #[test]
    fn vlq_round_trips_every_length() {
        for shift in 0..64 {
            for v in [
                (1u64 << shift) - 1,
                1u64 << shift,
                (1u64 << shift) + 1,
                u64::MAX,
            ] {
                let mut out = Vec::new();
                put_vlq(&mut out, v);
                assert_eq!(out.len(), vlq_len(v));
                assert_eq!(get_vlq(&out), Ok((v, out.len())));
                for cut in 0..out.len() {
                    assert_eq!(get_vlq(&out[..cut]), Err(VlqError::Truncated));
                }
            }
        }
    }

    #[test]
    fn vlq_rejects_overlong_and_overflowing() {
        assert_eq!(get_vlq(&[0xff; 11]), Err(VlqError::Overflow));
        let mut too_big = vec![0xff; 9];
        too_big.push(0x02); // bit 64 set
        assert_eq!(get_vlq(&too_big), Err(VlqError::Overflow));
    }

    #[test]
    fn fixed_width_reads_are_bounds_checked() {
        let buf = [1u8, 2, 3, 4, 5, 6, 7, 8];
        assert_eq!(get_u32_le(&buf, 0), Some(0x0403_0201));
        assert_eq!(get_u32_le(&buf, 5), None);
        assert_eq!(get_u64_le(&buf, 0), Some(0x0807_0605_0403_0201));
        assert_eq!(get_u64_le(&buf, 1), None);
        assert_eq!(get_uint_le(&buf, 4, 4), Some(0x0807_0605));
        assert_eq!(get_u32_le(&buf, usize::MAX), None);
    }

    #[test]
    fn cursor_reads_in_order_and_tracks_position() {
        let mut buf = vec![7u8];
        buf.extend_from_slice(&0x0403_0201u32.to_le_bytes());
        put_vlq(&mut buf, 300);
        buf.extend_from_slice(b"xyz");
        let mut cur = Cursor::new(&buf);
        assert_eq!(cur.u8(), Ok(7));
        assert_eq!(cur.u32_le(), Ok(0x0403_0201));
        assert_eq!(cur.position(), 5);
        assert_eq!(cur.vlq(), Ok(300));
        assert_eq!(cur.remaining(), 3);
        assert_eq!(cur.take(3), Ok(&b"xyz"[..]));
        assert!(cur.is_empty());
        assert_eq!(cur.take(0), Ok(&b""[..]));
    }

    #[test]
    fn cursor_failures_do_not_advance() {
        let buf = [1u8, 2, 3];
        let mut cur = Cursor::new(&buf);
        assert_eq!(cur.u32_le(), Err(Reason::Truncated));
        assert_eq!(cur.take(4), Err(Reason::Truncated));
        assert_eq!(cur.take(usize::MAX), Err(Reason::Truncated));
        assert_eq!(cur.position(), 0);
        assert_eq!(cur.take(3), Ok(&buf[..]));
        assert_eq!(cur.u8(), Err(Reason::Truncated));
        assert_eq!(cur.vlq(), Err(Reason::Truncated));

        let mut cur = Cursor::new(&[0x80, 0x80]);
        assert_eq!(cur.vlq(), Err(Reason::Truncated));
        assert_eq!(cur.position(), 0);
        let mut cur = Cursor::new(&[0xff; 11]);
        assert_eq!(cur.vlq(), Err(Reason::BadVarint));
        assert_eq!(cur.position(), 0);
    }
}
