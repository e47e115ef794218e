//! [`BlobRefs`]: what a table's value handles reference in the value log, per blob file:
//! the number of handles and the sum of their value lengths. Recorded in the table's
//! properties (FORMAT.md §4.5, tag 14) so GC can tell how many bytes of each blob file are
//! still live by summing over the tables of the current version (`vlog/gc.rs`), without
//! reading any data block.
//!
//! Encoding (the property's value):
//!
//! ```text
//! blob_refs := count:vlq (file_delta:vlq handles:vlq bytes:vlq){count}
//! ```
//!
//! `file_delta` is the first file's id, then the difference to the previous id (at least
//! 1: ids strictly increase). Each entry has `handles >= 1` and
//! `bytes <= handles * (2^32 - 1)` (a value is at most 4 GiB − 1).
//!
//! Thread-safety: plain values and pure functions.

use std::collections::BTreeMap;

use crate::coding::{put_vlq, Cursor};
use crate::error::Reason;

/// References into one blob file.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct BlobRef {
    /// Value handles pointing into the file.
    pub(crate) handles: u64,
    /// Sum of those handles' value lengths.
    pub(crate) bytes: u64,
}

/// References of one table into the value log, by blob file id.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct BlobRefs(BTreeMap<u64, BlobRef>);

impl BlobRefs {
    /// Counts one handle into blob file `file_id` for a value of `value_len` bytes.
    pub(crate) fn add(&mut self, file_id: u64, value_len: u32) {
        let r = self.0.entry(file_id).or_default();
        r.handles = r.handles.saturating_add(1);
        r.bytes = r.bytes.saturating_add(u64::from(value_len));
    }

    /// True if no handle was counted.
    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The references, by blob file id ascending.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (u64, BlobRef)> + '_ {
        self.0.iter().map(|(id, r)| (*id, *r))
    }

    /// Total handles over all files.
    pub(crate) fn handle_count(&self) -> u64 {
        self.0
            .values()
            .fold(0u64, |n, r| n.saturating_add(r.handles))
    }

    /// The encoded property value (see the module documentation).
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        put_vlq(&mut out, self.0.len() as u64);
        let mut prev = 0u64;
        for (id, r) in &self.0 {
            put_vlq(&mut out, id - prev);
            put_vlq(&mut out, r.handles);
            put_vlq(&mut out, r.bytes);
            prev = *id;
        }
        out
    }

    /// Decodes a property value that must be consumed exactly.
    ///
    /// # Errors
    /// `Truncated`/`BadVarint` for framing; `LengthOutOfRange` for a count larger than the
    /// bytes could hold; `BadEntry` for ids that do not increase or overflow, an entry with
    /// no handles or more bytes than its handles can reference, or trailing bytes.
    pub(crate) fn decode(raw: &[u8]) -> Result<BlobRefs, Reason> {
        let mut cur = Cursor::new(raw);
        let count = cur.vlq()?;
        // Each entry takes at least 3 bytes.
        if count > (cur.remaining() / 3) as u64 {
            return Err(Reason::LengthOutOfRange);
        }
        let mut refs = BTreeMap::new();
        let mut prev: Option<u64> = None;
        for _ in 0..count {
            let delta = cur.vlq()?;
            let id = match prev {
                None => delta,
                Some(p) if delta >= 1 => p
                    .checked_add(delta)
                    .ok_or(Reason::BadEntry("blob reference file id overflows"))?,
                Some(_) => return Err(Reason::BadEntry("blob reference file ids do not increase")),
            };
            let handles = cur.vlq()?;
            let bytes = cur.vlq()?;
            let max_bytes = u128::from(handles) * u128::from(u32::MAX);
            if handles == 0 || u128::from(bytes) > max_bytes {
                return Err(Reason::BadEntry("blob reference counts are inconsistent"));
            }
            refs.insert(id, BlobRef { handles, bytes });
            prev = Some(id);
        }
        if !cur.is_empty() {
            return Err(Reason::BadEntry("bytes follow the blob references"));
        }
        Ok(BlobRefs(refs))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn accumulates_and_encodes_as_documented() {
        let mut r = BlobRefs::default();
        assert!(r.is_empty());
        r.add(300, 1000);
        r.add(7, 5);
        r.add(300, 2000);
        assert_eq!(
            r.iter().collect::<Vec<_>>(),
            vec![
                (
                    7,
                    BlobRef {
                        handles: 1,
                        bytes: 5
                    }
                ),
                (
                    300,
                    BlobRef {
                        handles: 2,
                        bytes: 3000
                    }
                ),
            ]
        );
        assert_eq!(r.handle_count(), 3);
        #[rustfmt::skip]
        let expected = [
            0x02,                         // two files
            0x07, 0x01, 0x05,             // file 7: 1 handle, 5 bytes
            0xa5, 0x02, 0x02, 0xb8, 0x17, // file 7 + 293 = 300: 2 handles, 3000 bytes
        ];
        assert_eq!(r.encode(), expected);
        assert_eq!(BlobRefs::decode(&expected), Ok(r));
        assert_eq!(BlobRefs::decode(&[0]), Ok(BlobRefs::default()));
    }

    #[test]
    fn malformed_values_are_refused() {
        let bad: [&[u8]; 7] = [
            &[],                                               // no count
            &[0x02, 0x07, 0x01, 0x05],                         // count larger than the entries
            &[0xff, 0xff, 0x7f],                               // a count no payload can hold
            &[0x02, 0x07, 0x01, 0x05, 0x00, 0x01, 0x05],       // repeated id
            &[0x01, 0x07, 0x00, 0x00],                         // no handles
            &[0x01, 0x07, 0x01, 0x80, 0x80, 0x80, 0x80, 0x10], // 2^32 bytes for one handle
            &[0x00, 0x00],                                     // trailing bytes
        ];
        for (i, raw) in bad.iter().enumerate() {
            assert!(BlobRefs::decode(raw).is_err(), "case {i}");
        }
        let mut overflow = vec![0x02];
        put_vlq(&mut overflow, u64::MAX);
        overflow.extend_from_slice(&[0x01, 0x01, 0x01, 0x01, 0x01]);
        assert_eq!(
            BlobRefs::decode(&overflow),
            Err(Reason::BadEntry("blob reference file id overflows"))
        );
    }

    proptest! {
        #[test]
        fn random_references_round_trip(adds in prop::collection::vec((any::<u64>(), any::<u32>()), 0..50)) {
            let mut r = BlobRefs::default();
            for (id, len) in &adds {
                r.add(*id, *len);
            }
            prop_assert_eq!(BlobRefs::decode(&r.encode()), Ok(r.clone()));
            prop_assert_eq!(r.handle_count(), adds.len() as u64);
        }

        #[test]
        fn random_bytes_never_panic(raw in prop::collection::vec(any::<u8>(), 0..64)) {
            let _ = BlobRefs::decode(&raw);
        }
    }
}
