//! Entry attributes ("attrs") and the one place where a stored version's `(kind, value
//! bytes)` is turned into what readers see.
//!
//! Owns: the encoding of [`Attrs`] (an optional type tag, a small metadata blob and an
//! expiry) that prefixes the value of a `Kind::PutAttrs` version, its validating decoder,
//! and [`view`] / [`live`], which map a stored version to an [`EntryView`] (its attrs and
//! its body). Byte layout: `BATCH_FORMAT.md` §5a; tables store the same bytes
//! (`table/FORMAT.md` §4.2).
//!
//! ```text
//! stored value of PutAttrs := attrs value
//! attrs := flags:u8 [tag:vlq if bit0] [meta_len:vlq meta if bit1] [expires_at:u64le if bit2]
//! ```
//!
//! Invariants:
//! 1. A plain `Kind::Put` carries no attrs byte: its stored bytes are the value (the fast
//!    path; [`view`] decodes nothing for it).
//! 2. Flag bits other than 0..=2 are never set; a decoder refuses them, a tag above
//!    `u32::MAX` and metadata longer than [`MAX_META_LEN`].
//! 3. An entry whose `expires_at <= now` is treated as a tombstone at its seqno by every
//!    reader ([`live`] returns `None` for it) and by compaction.
//!
//! A separated value (`Kind::ValueHandle`, stored bytes `attrs || handle`) reuses
//! [`Attrs::decode`] and yields [`Body::Handle`]: its length is known from the handle
//! without reading the blob file; readers resolve it only for values they return.
//! Readers go through [`view`] only.
//!
//! Plain data and pure functions; `Send + Sync`.

use crate::coding::{get_u64_le, put_vlq, vlq_len, Cursor};
use crate::error::Reason;
use crate::key::Kind;
use crate::vlog::{decode_entry_value, ValueHandle};

/// Longest metadata blob, in bytes: 4 KiB.
pub(crate) const MAX_META_LEN: usize = 4096;

/// Longest encoded attrs: flags, a 5-byte tag, a 2-byte length, the metadata, the expiry.
pub(crate) const MAX_ATTRS_LEN: usize = 1 + 5 + 2 + MAX_META_LEN + 8;

const FLAG_TAG: u8 = 0x01;
const FLAG_META: u8 = 0x02;
const FLAG_EXPIRY: u8 = 0x04;
const KNOWN_FLAGS: u8 = FLAG_TAG | FLAG_META | FLAG_EXPIRY;

/// The attributes of one version. Defaults (tag 0, no metadata, no expiry) mean "none".
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Attrs<'a> {
    /// Application-defined type tag; 0 means none.
    pub(crate) tag: u32,
    /// Application metadata, at most [`MAX_META_LEN`] bytes; empty means none.
    pub(crate) meta: &'a [u8],
    /// Unix time in milliseconds from which the version is invisible.
    pub(crate) expires_at: Option<u64>,
}

impl<'a> Attrs<'a> {
    /// True if no attribute is set: such a put is stored as a plain `Kind::Put`.
    pub(crate) fn is_empty(&self) -> bool {
        self.tag == 0 && self.meta.is_empty() && self.expires_at.is_none()
    }

    /// True if the version has an expiry at or before `now_ms`.
    pub(crate) fn expired(&self, now_ms: u64) -> bool {
        self.expires_at.is_some_and(|at| at <= now_ms)
    }

    fn flags(&self) -> u8 {
        let mut flags = 0;
        if self.tag != 0 {
            flags |= FLAG_TAG;
        }
        if !self.meta.is_empty() {
            flags |= FLAG_META;
        }
        if self.expires_at.is_some() {
            flags |= FLAG_EXPIRY;
        }
        flags
    }

    /// Bytes [`Attrs::encode_into`] appends.
    pub(crate) fn encoded_len(&self) -> usize {
        let mut len = 1;
        if self.tag != 0 {
            len += vlq_len(u64::from(self.tag));
        }
        if !self.meta.is_empty() {
            len += vlq_len(self.meta.len() as u64) + self.meta.len();
        }
        if self.expires_at.is_some() {
            len += 8;
        }
        len
    }

    /// Appends the encoding. Requires `meta.len() <= MAX_META_LEN` (callers check it with
    /// `InvalidArgument` first).
    pub(crate) fn encode_into(&self, out: &mut Vec<u8>) {
        debug_assert!(self.meta.len() <= MAX_META_LEN);
        out.push(self.flags());
        if self.tag != 0 {
            put_vlq(out, u64::from(self.tag));
        }
        if !self.meta.is_empty() {
            put_vlq(out, self.meta.len() as u64);
            out.extend_from_slice(self.meta);
        }
        if let Some(at) = self.expires_at {
            out.extend_from_slice(&at.to_le_bytes());
        }
    }

    /// Parses attrs at the start of `buf`; returns them and the number of bytes they took.
    ///
    /// # Errors
    /// `Truncated` if `buf` ends inside them, `BadTag(flags)` for an unknown flag bit,
    /// `BadVarint` for a malformed VLQ, `LengthOutOfRange` for a tag above `u32::MAX` or
    /// metadata longer than [`MAX_META_LEN`].
    pub(crate) fn decode(buf: &'a [u8]) -> Result<(Attrs<'a>, usize), Reason> {
        let mut cur = Cursor::new(buf);
        let flags = cur.u8()?;
        if flags & !KNOWN_FLAGS != 0 {
            return Err(Reason::BadTag(flags));
        }
        let mut attrs = Attrs::default();
        if flags & FLAG_TAG != 0 {
            attrs.tag = u32::try_from(cur.vlq()?).map_err(|_| Reason::LengthOutOfRange)?;
        }
        if flags & FLAG_META != 0 {
            let len = usize::try_from(cur.vlq()?)
                .ok()
                .filter(|&n| n <= MAX_META_LEN)
                .ok_or(Reason::LengthOutOfRange)?;
            attrs.meta = cur.take(len)?;
        }
        if flags & FLAG_EXPIRY != 0 {
            let raw = cur.take(8)?;
            attrs.expires_at = Some(get_u64_le(raw, 0).ok_or(Reason::Truncated)?);
        }
        Ok((attrs, cur.position()))
    }
}

/// Where a version's value is: inline in the entry, or separated into a blob file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Body<'a> {
    /// The value bytes themselves.
    Inline(&'a [u8]),
    /// A handle into the value log; the value is read only when asked for.
    Handle(ValueHandle),
}

impl<'a> Body<'a> {
    /// The value's length in bytes (from the handle for a separated value: no blob read).
    pub(crate) fn len(&self) -> u64 {
        match self {
            Body::Inline(v) => v.len() as u64,
            Body::Handle(h) => u64::from(h.value_len),
        }
    }

    /// The inline bytes, or `None` for a separated value.
    pub(crate) fn inline(&self) -> Option<&'a [u8]> {
        match self {
            Body::Inline(v) => Some(v),
            Body::Handle(_) => None,
        }
    }

    /// True for a separated value.
    pub(crate) fn is_separated(&self) -> bool {
        matches!(self, Body::Handle(_))
    }
}

/// A value-carrying version as readers see it: attrs and body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct EntryView<'a> {
    /// The attributes (all default for a plain put).
    pub(crate) attrs: Attrs<'a>,
    /// The value.
    pub(crate) body: Body<'a>,
}

/// Interprets the stored bytes of a version of kind `kind`: `Ok(None)` for a tombstone,
/// otherwise its attrs and body. A plain put decodes nothing.
///
/// # Errors
/// As [`Attrs::decode`], for damaged attrs of a `PutAttrs` version.
pub(crate) fn view(kind: Kind, stored: &[u8]) -> Result<Option<EntryView<'_>>, Reason> {
    match kind {
        Kind::Put => Ok(Some(EntryView {
            attrs: Attrs::default(),
            body: Body::Inline(stored),
        })),
        Kind::PutAttrs => {
            let (attrs, used) = Attrs::decode(stored)?;
            let body = stored.get(used..).ok_or(Reason::Truncated)?;
            Ok(Some(EntryView {
                attrs,
                body: Body::Inline(body),
            }))
        }
        Kind::ValueHandle => {
            let (attrs, used) = Attrs::decode(stored)?;
            let (_, handle) = decode_entry_value(stored, used)?;
            Ok(Some(EntryView {
                attrs,
                body: Body::Handle(handle),
            }))
        }
        Kind::Delete => Ok(None),
        // An operand is no value by itself: readers merge it (`merge.rs`) before they call
        // this, so meeting one here means a caller skipped that step.
        Kind::Merge => Err(Reason::BadEntry(
            "a merge operand read as a value without its keyspace's merge operator",
        )),
        // Range tombstones live beside the point entries, never among them.
        Kind::RangeDelete => Err(Reason::BadTag(Kind::RangeDelete.as_u8())),
    }
}

/// As [`view`], but `None` also for a version expired at `now_ms` (invariant 3).
///
/// # Errors
/// As [`view`].
pub(crate) fn live(
    kind: Kind,
    stored: &[u8],
    now_ms: u64,
) -> Result<Option<EntryView<'_>>, Reason> {
    live_with_clock(kind, stored, || now_ms)
}

/// As [`live`], asking `now_ms` for the time only for a version that has an expiry (a
/// point read then reads the clock only for such a version).
///
/// # Errors
/// As [`view`].
pub(crate) fn live_with_clock(
    kind: Kind,
    stored: &[u8],
    now_ms: impl FnOnce() -> u64,
) -> Result<Option<EntryView<'_>>, Reason> {
    Ok(view(kind, stored)?.filter(|v| v.attrs.expires_at.is_none() || !v.attrs.expired(now_ms())))
}

/// The kind and stored bytes of a put of `value` with `attrs`: a plain `Put` when no
/// attribute is set (invariant 1), else `PutAttrs` with `attrs || value`.
pub(crate) fn encode_put(attrs: &Attrs<'_>, value: &[u8]) -> (Kind, Vec<u8>) {
    if attrs.is_empty() {
        return (Kind::Put, value.to_vec());
    }
    let mut out = Vec::with_capacity(attrs.encoded_len() + value.len());
    attrs.encode_into(&mut out);
    out.extend_from_slice(value);
    (Kind::PutAttrs, out)
}

/// The stored bytes of a separated value: `attrs || handle`, attrs always present (flags
/// may be 0).
pub(crate) fn encode_separated(attrs: &Attrs<'_>, handle: &ValueHandle) -> Vec<u8> {
    let mut out = Vec::with_capacity(attrs.encoded_len() + handle.encoded_len());
    attrs.encode_into(&mut out);
    handle.encode_into(&mut out);
    out
}

/// The expiry of a stored version, if it has one (`None` for a tombstone or a plain put).
///
/// # Errors
/// As [`view`].
pub(crate) fn expiry_of(kind: Kind, stored: &[u8]) -> Result<Option<u64>, Reason> {
    if !matches!(kind, Kind::PutAttrs | Kind::ValueHandle) {
        return Ok(None);
    }
    Ok(view(kind, stored)?.and_then(|v| v.attrs.expires_at))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]
mod tests {
    use super::*;
    use crate::files::BlobId;
    use proptest::prelude::*;

    #[test]
    fn encoding_matches_the_worked_example() {
        // BATCH_FORMAT.md §5a: tag 300, meta "ab", expiry 0x0102030405060708.
        let attrs = Attrs {
            tag: 300,
            meta: b"ab",
            expires_at: Some(0x0102_0304_0506_0708),
        };
        let mut out = Vec::new();
        attrs.encode_into(&mut out);
        assert_eq!(
            out,
            [0x07, 0xac, 0x02, 0x02, b'a', b'b', 8, 7, 6, 5, 4, 3, 2, 1]
        );
        assert_eq!(out.len(), attrs.encoded_len());
        assert_eq!(Attrs::decode(&out), Ok((attrs, out.len())));
        // Only the expiry: flags 0x04 then 8 bytes.
        let ttl_only = Attrs {
            expires_at: Some(5),
            ..Attrs::default()
        };
        let (kind, stored) = encode_put(&ttl_only, b"v");
        assert_eq!(kind, Kind::PutAttrs);
        assert_eq!(stored, [0x04, 5, 0, 0, 0, 0, 0, 0, 0, b'v']);
    }

    #[test]
    fn a_plain_put_has_no_attrs_byte() {
        let (kind, stored) = encode_put(&Attrs::default(), b"value");
        assert_eq!((kind, stored.as_slice()), (Kind::Put, &b"value"[..]));
        let v = view(Kind::Put, b"\x07value").unwrap().unwrap();
        assert_eq!(v.body, Body::Inline(b"\x07value"));
        assert!(v.attrs.is_empty());
        assert_eq!(view(Kind::Delete, b"").unwrap(), None);
    }

    #[test]
    fn expiry_is_a_tombstone_from_its_instant_on() {
        let (kind, stored) = encode_put(
            &Attrs {
                expires_at: Some(1000),
                ..Attrs::default()
            },
            b"v",
        );
        assert!(live(kind, &stored, 999).unwrap().is_some());
        assert!(live(kind, &stored, 1000).unwrap().is_none());
        assert!(live(kind, &stored, u64::MAX).unwrap().is_none());
        assert_eq!(expiry_of(kind, &stored), Ok(Some(1000)));
        assert_eq!(expiry_of(Kind::Put, b"x"), Ok(None));
    }

    #[test]
    fn damaged_attrs_are_refused() {
        assert_eq!(Attrs::decode(b""), Err(Reason::Truncated));
        assert_eq!(Attrs::decode(&[0x08]), Err(Reason::BadTag(0x08)));
        assert_eq!(Attrs::decode(&[0x81]), Err(Reason::BadTag(0x81)));
        // A tag above u32::MAX.
        let mut big = vec![FLAG_TAG];
        put_vlq(&mut big, 1 << 32);
        assert_eq!(Attrs::decode(&big), Err(Reason::LengthOutOfRange));
        // Metadata longer than the limit, and longer than the bytes present.
        let mut long = vec![FLAG_META];
        put_vlq(&mut long, MAX_META_LEN as u64 + 1);
        assert_eq!(Attrs::decode(&long), Err(Reason::LengthOutOfRange));
        assert_eq!(Attrs::decode(&[FLAG_META, 3, b'a']), Err(Reason::Truncated));
        assert_eq!(Attrs::decode(&[FLAG_EXPIRY, 1, 2]), Err(Reason::Truncated));
        assert_eq!(
            Attrs::decode(&[
                FLAG_TAG, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff
            ]),
            Err(Reason::BadVarint)
        );
        assert!(view(Kind::PutAttrs, &[0x10, b'v']).is_err());
        // A separated value whose handle is damaged or missing.
        assert!(view(Kind::ValueHandle, &[0x00]).is_err());
        assert!(view(Kind::ValueHandle, &[0x00, 1, 2, 3]).is_err());
    }

    #[test]
    fn a_separated_value_knows_its_length_and_attrs_without_the_blob() {
        let handle = ValueHandle {
            file_id: BlobId(9),
            offset: 20,
            value_len: 70_000,
            check: 7,
        };
        let attrs = Attrs {
            tag: 3,
            meta: b"m",
            expires_at: Some(50),
        };
        let stored = encode_separated(&attrs, &handle);
        let v = view(Kind::ValueHandle, &stored).unwrap().unwrap();
        assert_eq!(v.attrs, attrs);
        assert_eq!(v.body, Body::Handle(handle));
        assert_eq!(v.body.len(), 70_000);
        assert!(v.body.is_separated() && v.body.inline().is_none());
        assert_eq!(expiry_of(Kind::ValueHandle, &stored), Ok(Some(50)));
        assert!(live(Kind::ValueHandle, &stored, 50).unwrap().is_none());
        // No attribute: the flags byte 0 then the handle.
        let plain = encode_separated(&Attrs::default(), &handle);
        assert_eq!(plain.first(), Some(&0));
        assert_eq!(plain.len(), 1 + handle.encoded_len());
        assert!(view(Kind::ValueHandle, &plain)
            .unwrap()
            .unwrap()
            .attrs
            .is_empty());
    }

    fn arb_attrs() -> impl Strategy<Value = (u32, Vec<u8>, Option<u64>)> {
        (
            prop_oneof![Just(0u32), any::<u32>()],
            prop_oneof![
                Just(Vec::new()),
                prop::collection::vec(any::<u8>(), 0..64),
                prop::collection::vec(any::<u8>(), MAX_META_LEN..=MAX_META_LEN)
            ],
            prop::option::of(any::<u64>()),
        )
    }

    proptest! {
        #[test]
        fn attrs_round_trip((tag, meta, expires_at) in arb_attrs(), value in prop::collection::vec(any::<u8>(), 0..32)) {
            let attrs = Attrs { tag, meta: &meta, expires_at };
            let (kind, stored) = encode_put(&attrs, &value);
            prop_assert_eq!(kind == Kind::Put, attrs.is_empty());
            let v = view(kind, &stored).unwrap().unwrap();
            prop_assert_eq!(v.attrs, attrs);
            prop_assert_eq!(v.body, Body::Inline(&value[..]));
            prop_assert_eq!(v.body.len(), value.len() as u64);
            if kind == Kind::PutAttrs {
                prop_assert_eq!(stored.len(), attrs.encoded_len() + value.len());
                prop_assert!(attrs.encoded_len() <= MAX_ATTRS_LEN);
            }
        }

        #[test]
        fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..40)) {
            if let Ok((attrs, used)) = Attrs::decode(&bytes) {
                prop_assert!(used <= bytes.len());
                prop_assert!(attrs.meta.len() <= MAX_META_LEN);
                let _ = view(Kind::PutAttrs, &bytes).unwrap();
            }
        }
    }
}
