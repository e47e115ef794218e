//! [`ValueHandle`]: where a separated value lives (blob file, record offset, value length)
//! plus the record's header checksum, and its encoding inside a `ValueHandle` (kind 4)
//! entry, whose value field is `attrs ‖ handle` (FORMAT.md §6).
//!
//! Grammar of an encoded handle:
//!
//! ```text
//! handle := flags:u8 file_id:vlq offset:vlq value_len:vlq check:u32
//! ```
//!
//! `flags` is 0 (its bits are reserved for per-value options such as compression); `check`
//! is the record's stored header checksum, which covers the file id, the offset, the
//! keyspace, the key and the value length. A reader that finds the same checksum at the
//! handle's place has found exactly the record the handle was made for.
//!
//! Attributes: the attrs encoding (owned by `entry.rs`) is
//! self-delimiting, as it must be for kind 6 (`attrs ‖ value`, where the value is opaque).
//! So [`decode_entry_value`] takes the attrs length the attrs decoder found and decodes the
//! rest as a handle; this module never interprets attrs bytes.
//!
//! Thread-safety: plain values and pure functions.

use super::format::FILE_HEADER_LEN;
use crate::coding::{put_vlq, vlq_len, Cursor};
use crate::error::Reason;
use crate::files::BlobId;

/// Where a separated value lives; see the module documentation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct ValueHandle {
    /// The blob file's id.
    pub(crate) file_id: BlobId,
    /// File offset of the record (not of the value).
    pub(crate) offset: u64,
    /// Bytes of the value.
    pub(crate) value_len: u32,
    /// The record's stored header checksum.
    pub(crate) check: u32,
}

/// Largest encoded handle: flags, three maximal VLQs (10 + 10 + 5), check.
pub(crate) const MAX_HANDLE_LEN: usize = 1 + 10 + 10 + 5 + 4;

impl ValueHandle {
    /// Bytes [`ValueHandle::encode_into`] appends.
    pub(crate) fn encoded_len(&self) -> usize {
        1 + vlq_len(self.file_id.0) + vlq_len(self.offset) + vlq_len(u64::from(self.value_len)) + 4
    }

    /// Appends the encoded handle.
    pub(crate) fn encode_into(&self, out: &mut Vec<u8>) {
        out.push(0); // flags
        put_vlq(out, self.file_id.0);
        put_vlq(out, self.offset);
        put_vlq(out, u64::from(self.value_len));
        out.extend_from_slice(&self.check.to_le_bytes());
    }

    /// The encoded handle in a new buffer.
    #[cfg(test)]
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.encoded_len());
        self.encode_into(&mut out);
        out
    }

    /// Decodes a handle that must fill `bytes` exactly.
    ///
    /// # Errors
    /// `Truncated` or `BadVarint` for framing; `BadEntry` for non-zero flags, an offset
    /// inside the file header, or bytes after the handle; `LengthOutOfRange` for a value
    /// length above `u32::MAX`.
    pub(crate) fn decode(bytes: &[u8]) -> Result<ValueHandle, Reason> {
        let mut cur = Cursor::new(bytes);
        if cur.u8()? != 0 {
            return Err(Reason::BadEntry("value handle flags are not zero"));
        }
        let file_id = cur.vlq()?;
        let offset = cur.vlq()?;
        let value_len = u32::try_from(cur.vlq()?).map_err(|_| Reason::LengthOutOfRange)?;
        let check = cur.u32_le()?;
        if !cur.is_empty() {
            return Err(Reason::BadEntry("bytes follow a value handle"));
        }
        if offset < FILE_HEADER_LEN {
            return Err(Reason::BadEntry("value handle points into a file header"));
        }
        Ok(ValueHandle {
            file_id: BlobId(file_id),
            offset,
            value_len,
            check,
        })
    }
}

/// The value field of a `ValueHandle` entry: the attrs bytes (opaque here) then the handle.
#[cfg(test)]
pub(crate) fn encode_entry_value(attrs: &[u8], handle: &ValueHandle) -> Vec<u8> {
    let mut out = Vec::with_capacity(attrs.len() + handle.encoded_len());
    out.extend_from_slice(attrs);
    handle.encode_into(&mut out);
    out
}

/// Splits the value field of a `ValueHandle` entry into its attrs bytes (the first
/// `attrs_len`, as the attrs decoder measured them) and the decoded handle.
///
/// # Errors
/// `Truncated` if `attrs_len` exceeds the value; otherwise as [`ValueHandle::decode`].
pub(crate) fn decode_entry_value(
    value: &[u8],
    attrs_len: usize,
) -> Result<(&[u8], ValueHandle), Reason> {
    let (Some(attrs), Some(rest)) = (value.get(..attrs_len), value.get(attrs_len..)) else {
        return Err(Reason::Truncated);
    };
    Ok((attrs, ValueHandle::decode(rest)?))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn sample() -> ValueHandle {
        ValueHandle {
            file_id: BlobId(300),
            offset: 20,
            value_len: 70_000,
            check: 0xdead_beef,
        }
    }

    #[test]
    fn encoding_matches_the_format() {
        let h = sample();
        let bytes = h.encode();
        #[rustfmt::skip]
        let expected = [
            0x00,                   // flags
            0xac, 0x02,             // file_id 300
            0x14,                   // offset 20
            0xf0, 0xa2, 0x04,       // value_len 70000
            0xef, 0xbe, 0xad, 0xde, // check
        ];
        assert_eq!(bytes, expected);
        assert_eq!(bytes.len(), h.encoded_len());
        assert_eq!(ValueHandle::decode(&bytes), Ok(h));
        let max = ValueHandle {
            file_id: BlobId(u64::MAX),
            offset: u64::MAX,
            value_len: u32::MAX,
            check: u32::MAX,
        };
        assert_eq!(max.encoded_len(), MAX_HANDLE_LEN);
        assert_eq!(ValueHandle::decode(&max.encode()), Ok(max));
    }

    #[test]
    fn truncation_and_damage_are_refused_never_panic() {
        let bytes = sample().encode();
        for cut in 0..bytes.len() {
            assert!(ValueHandle::decode(&bytes[..cut]).is_err(), "cut {cut}");
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert_eq!(
            ValueHandle::decode(&longer),
            Err(Reason::BadEntry("bytes follow a value handle"))
        );
        let mut flagged = bytes.clone();
        flagged[0] = 1;
        assert!(ValueHandle::decode(&flagged).is_err());
        let inside_header = ValueHandle {
            offset: 19,
            ..sample()
        };
        assert!(ValueHandle::decode(&inside_header.encode()).is_err());
        let mut too_long = vec![0, 1, 20];
        put_vlq(&mut too_long, u64::from(u32::MAX) + 1);
        too_long.extend_from_slice(&[0; 4]);
        assert_eq!(
            ValueHandle::decode(&too_long),
            Err(Reason::LengthOutOfRange)
        );
    }

    #[test]
    fn entry_value_carries_opaque_attrs_then_the_handle() {
        let h = sample();
        for attrs in [&b""[..], b"\x01\x02attrs"] {
            let v = encode_entry_value(attrs, &h);
            assert_eq!(decode_entry_value(&v, attrs.len()), Ok((attrs, h)));
        }
        let v = encode_entry_value(b"ab", &h);
        assert_eq!(decode_entry_value(&v, v.len() + 1), Err(Reason::Truncated));
        assert!(decode_entry_value(&v, 1).is_err(), "a wrong attrs length");
    }

    proptest! {
        #[test]
        fn random_handles_round_trip(
            file_id in any::<u64>(),
            offset in FILE_HEADER_LEN..,
            value_len in any::<u32>(),
            check in any::<u32>(),
        ) {
            let h = ValueHandle { file_id: BlobId(file_id), offset, value_len, check };
            let bytes = h.encode();
            prop_assert_eq!(bytes.len(), h.encoded_len());
            prop_assert_eq!(ValueHandle::decode(&bytes), Ok(h));
        }

        #[test]
        fn random_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..40)) {
            if let Ok(h) = ValueHandle::decode(&bytes) {
                prop_assert_eq!(h.encode().len() <= bytes.len(), true);
            }
        }
    }
}
