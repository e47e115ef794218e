//! The range-tombstone block (FORMAT.md §4.7): the range tombstones a table carries,
//! stored like every other block (trailer with compression type and masked CRC32C) and
//! located by the `range_tombstones` property.
//!
//! Grammar of the raw block:
//!
//! ```text
//! block     := count:VLQ tombstone{count}
//! tombstone := seqno:VLQ start_len:VLQ start end_len:VLQ end      (end_len 0: unbounded)
//! ```
//!
//! Invariants checked by [`decode`]: every tombstone holds a key (`end` empty or
//! `start < end`), bounds are at most `MAX_KEY_LEN` bytes, seqnos at most `SeqNo::MAX`,
//! tombstones strictly increasing by (start ascending, seqno descending), no bytes after
//! the last one, and `count` no larger than the bytes could hold (so no allocation is
//! sized from an unchecked count).
//!
//! Thread-safety: pure functions.

use crate::coding::{put_vlq, Cursor};
use crate::error::Reason;
use crate::key::{SeqNo, MAX_KEY_LEN};
use crate::rangedel::RangeTombstone;

/// The smallest encoded tombstone: a one-byte seqno and two zero lengths.
const MIN_TOMBSTONE_LEN: usize = 3;

/// The order tombstones are stored in: start ascending, then seqno descending.
pub(crate) fn sort(tombstones: &mut Vec<RangeTombstone>) {
    tombstones.sort_by(|a, b| a.start.cmp(&b.start).then(b.seqno.cmp(&a.seqno)));
    tombstones.dedup_by(|a, b| a.start == b.start && a.seqno == b.seqno && a.end == b.end);
}

/// The raw block for `tombstones`, which must be sorted by [`sort`].
pub(crate) fn encode(tombstones: &[RangeTombstone]) -> Vec<u8> {
    let mut out = Vec::new();
    put_vlq(&mut out, tombstones.len() as u64);
    for t in tombstones {
        put_vlq(&mut out, t.seqno.0);
        put_vlq(&mut out, t.start.len() as u64);
        out.extend_from_slice(&t.start);
        put_vlq(&mut out, t.end.len() as u64);
        out.extend_from_slice(&t.end);
    }
    out
}

fn bytes<'a>(cur: &mut Cursor<'a>) -> Result<&'a [u8], Reason> {
    let len = usize::try_from(cur.vlq()?)
        .ok()
        .filter(|&n| n <= MAX_KEY_LEN)
        .ok_or(Reason::LengthOutOfRange)?;
    cur.take(len)
}

/// Parses and validates a raw range-tombstone block (see the module documentation).
///
/// # Errors
/// `Truncated`/`BadVarint` for framing, `LengthOutOfRange` for a bound over the key
/// limit or a seqno over `SeqNo::MAX`, `BadEntry` for an empty range, tombstones out of
/// order or bytes after the last one.
pub(crate) fn decode(raw: &[u8]) -> Result<Vec<RangeTombstone>, Reason> {
    let mut cur = Cursor::new(raw);
    let count = cur.vlq()?;
    if count > (cur.remaining() / MIN_TOMBSTONE_LEN) as u64 {
        return Err(Reason::Truncated);
    }
    let mut out: Vec<RangeTombstone> = Vec::with_capacity(count as usize);
    for _ in 0..count {
        let seqno = cur.vlq()?;
        if seqno > SeqNo::MAX.0 {
            return Err(Reason::LengthOutOfRange);
        }
        let start = bytes(&mut cur)?.to_vec();
        let end = bytes(&mut cur)?.to_vec();
        let t = RangeTombstone::new(start, end, SeqNo(seqno))
            .ok_or(Reason::BadEntry("a range tombstone holds no key"))?;
        if let Some(prev) = out.last() {
            let increasing =
                prev.start < t.start || (prev.start == t.start && prev.seqno > t.seqno);
            if !increasing {
                return Err(Reason::BadEntry("range tombstones are out of order"));
            }
        }
        out.push(t);
    }
    if !cur.is_empty() {
        return Err(Reason::BadEntry("bytes after the last range tombstone"));
    }
    Ok(out)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]
mod tests {
    use super::*;

    fn sample() -> Vec<RangeTombstone> {
        let mut v = vec![
            RangeTombstone::new(b"k".to_vec(), Vec::new(), SeqNo(9)).unwrap(),
            RangeTombstone::new(b"a".to_vec(), b"c".to_vec(), SeqNo(3)).unwrap(),
            RangeTombstone::new(b"a".to_vec(), b"b".to_vec(), SeqNo(5)).unwrap(),
        ];
        sort(&mut v);
        v
    }

    #[test]
    fn encoding_matches_the_documented_layout_and_round_trips() {
        let v = sample();
        let raw = encode(&v);
        #[rustfmt::skip]
        assert_eq!(raw, [
            0x03,
            0x05, 0x01, b'a', 0x01, b'b',
            0x03, 0x01, b'a', 0x01, b'c',
            0x09, 0x01, b'k', 0x00,
        ]);
        assert_eq!(decode(&raw).unwrap(), v);
        assert_eq!(decode(&encode(&[])).unwrap(), vec![]);
    }

    #[test]
    fn every_truncation_and_flip_is_an_error_or_a_valid_block() {
        let raw = encode(&sample());
        for cut in 0..raw.len() {
            assert!(decode(&raw[..cut]).is_err(), "cut {cut}");
        }
        for i in 0..raw.len() {
            for mask in [0x01, 0x80, 0xff] {
                let mut bad = raw.clone();
                bad[i] ^= mask;
                if let Ok(v) = decode(&bad) {
                    assert_eq!(decode(&encode(&v)).unwrap(), v, "byte {i}");
                }
            }
        }
    }

    #[test]
    fn decoder_rejects_bad_blocks() {
        let mut raw = encode(&sample());
        raw.push(0);
        assert!(matches!(decode(&raw), Err(Reason::BadEntry(_))));
        // Out of order: swap the first two tombstones' seqnos (3 before 5 at "a").
        let mut raw = encode(&sample());
        raw[1] = 0x03;
        raw[6] = 0x05;
        assert!(matches!(decode(&raw), Err(Reason::BadEntry(_))));
        // An empty range.
        assert!(matches!(
            decode(&[0x01, 0x01, 0x01, b'b', 0x01, b'a']),
            Err(Reason::BadEntry(_))
        ));
        // A huge count.
        assert_eq!(decode(&[0xff, 0xff, 0x03]), Err(Reason::Truncated));
    }
}
