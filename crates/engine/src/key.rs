//! Internal keys of the ordered store: a user key plus the [`SeqNo`] and [`Kind`] of one
//! version of it, and the order in which versions sort.
//!
//! Owns: the identifier newtypes [`SeqNo`] and [`KeyspaceId`], the on-disk [`Kind`]
//! registry (shared by write batches, the memtable and tables), the key and value size
//! limits, and the encoded form of an internal key with its comparator
//! [`compare_encoded`]. Does not own any file format: tables and the WAL embed these
//! encodings and document them in their own `FORMAT.md`.
//!
//! Invariants:
//! 1. Internal keys sort by user key ascending (bytewise), then seqno **descending**, then
//!    kind descending, so the newest version of a user key comes first and a reader at
//!    seqno `s` finds its answer at the first entry with seqno `<= s`.
//! 2. [`compare_encoded`] on encoded keys agrees with [`InternalKey`]'s `Ord`. Plain
//!    bytewise comparison of encoded keys does **not** (the trailer follows a
//!    variable-length user key, and is little-endian).
//! 3. Every encoded seqno fits in 56 bits; [`SeqNo::MAX`] is reserved for reads.
//!
//! Plain data; all types are `Send + Sync`.

// Wired into the ordered store (Db) as it lands; see docs/DESIGN.md.

use std::cmp::Ordering;
use std::fmt;

use crate::coding::get_u64_le;
use crate::error::{Error, Reason, Result};

/// Largest user key, in bytes: 65,535 (`u16::MAX`).
///
/// Why this value: a key length then always fits in a `u16` (or a VLQ of at most 3 bytes)
/// in block and index formats; every key, together with its neighbours, fits comfortably
/// in a table block and in an index entry, so one key can never force a block or an index
/// to grow without bound; and the memory a merge or compaction holds per key stays small.
/// Keys larger than this are almost always values in disguise. lsm-tree/fjall use the same
/// limit.
pub(crate) const MAX_KEY_LEN: usize = u16::MAX as usize;

/// Largest value, in bytes: 4 GiB − 1 (`u32::MAX`), so a value's length fits the `u32`
/// length fields of value handles. A write batch carrying it must still fit in one WAL
/// record, which may be smaller (see `wal/FORMAT.md`).
pub(crate) const MAX_VALUE_LEN: usize = u32::MAX as usize;

/// Length of the trailer that follows the user key in an encoded internal key.
pub(crate) const TRAILER_LEN: usize = 8;

/// A sequence number: the global, strictly increasing number of one write (one op of a
/// batch). Versions of a key are ordered by it; a snapshot is a seqno.
///
/// Only 56 bits are stored (the low byte of the trailer holds the [`Kind`]), so valid
/// seqnos are `0 ..= SeqNo::MAX`. At a million writes per second that lasts over 2,000
/// years.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub(crate) struct SeqNo(pub(crate) u64);

impl SeqNo {
    /// The first seqno; no write uses it (a fresh store has seen nothing).
    pub(crate) const ZERO: SeqNo = SeqNo(0);

    /// The largest encodable seqno, `2^56 - 1`, reserved to mean "read everything": a
    /// lookup at `SeqNo::MAX` sees every write, and a seek key with it sorts before every
    /// stored version of its user key. Writes use seqnos below it.
    pub(crate) const MAX: SeqNo = SeqNo((1 << 56) - 1);

    /// `self + n`, or `None` if the result would exceed [`SeqNo::MAX`].
    pub(crate) fn checked_add(self, n: u64) -> Option<SeqNo> {
        let next = self.0.checked_add(n)?;
        (next <= SeqNo::MAX.0).then_some(SeqNo(next))
    }

    /// Checks that `self` can be encoded (is at most [`SeqNo::MAX`]).
    ///
    /// # Errors
    /// `InvalidArgument` if it is larger.
    pub(crate) fn check(self) -> Result<SeqNo> {
        if self <= SeqNo::MAX {
            Ok(self)
        } else {
            Err(Error::invalid(format!(
                "seqno {} exceeds the 56-bit limit {}",
                self.0,
                SeqNo::MAX.0
            )))
        }
    }
}

impl fmt::Display for SeqNo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// The identifier of a keyspace within one store. Ids are assigned by the store and never
/// reused while any file may still mention them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub(crate) struct KeyspaceId(pub(crate) u32);

impl fmt::Display for KeyspaceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// What one version of a key records. The numbers are written to disk (WAL batches,
/// internal-key trailers) and are never renumbered or reused.
///
/// Registry:
///
/// | value | name        | status |
/// |-------|-------------|--------|
/// | 0     | —           | never used, so zeroed bytes are not a valid kind |
/// | 1     | Put         | implemented: the key has this value |
/// | 2     | Delete      | implemented: a tombstone, the key is removed |
/// | 3     | RangeDelete | implemented: a range tombstone `[start, end)` (`rangedel.rs`) |
/// | 4     | ValueHandle | implemented: the value lives in a blob file; stored bytes are `attrs || handle` |
/// | 5     | Merge       | implemented: an operand for the keyspace's merge operator (`merge.rs`); stored bytes are the operand |
/// | 6     | PutAttrs    | implemented: the key has this value and attributes (`entry.rs`) |
///
/// Unknown numbers are rejected by decoders (`Reason::BadTag`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(u8)]
pub(crate) enum Kind {
    /// The key has the value stored with this version.
    Put = 1,
    /// A tombstone: the key is removed as of this version.
    Delete = 2,
    /// A range tombstone: every key in `[start, end)` is removed as of this version. In a
    /// write batch the key is `start` and the value `end` (empty: unbounded). Range
    /// tombstones never appear as point entries of a memtable or a table's data blocks;
    /// they live beside them (`rangedel.rs`). In a table boundary key (`TableMeta`) this
    /// kind marks a table that holds a range-tombstone block.
    RangeDelete = 3,
    /// The key has the value stored with this version, prefixed by its attributes
    /// (`attrs || value`, see `entry.rs`).
    PutAttrs = 6,
    /// The key's value is separated into a blob file of the value log; the stored bytes
    /// are `attrs || handle` (`entry.rs`, `vlog/FORMAT.md` §4.4).
    ValueHandle = 4,
    /// A merge operand: the stored bytes are the operand, combined with the older versions
    /// by the keyspace's merge operator when read or compacted (`merge.rs`).
    Merge = 5,
}

/// Kind numbers reserved for later features; see [`Kind`]. Never assign them to anything
/// else. (5 was reserved for Merge and is now implemented.)
#[cfg(test)]
pub(crate) const RESERVED_KINDS: [(u8, &str); 0] = [];

impl Kind {
    /// The kind with on-disk number `tag`, or `None` if `tag` is unknown or reserved.
    pub(crate) fn from_u8(tag: u8) -> Option<Kind> {
        match tag {
            1 => Some(Kind::Put),
            2 => Some(Kind::Delete),
            3 => Some(Kind::RangeDelete),
            4 => Some(Kind::ValueHandle),
            5 => Some(Kind::Merge),
            6 => Some(Kind::PutAttrs),
            _ => None,
        }
    }

    /// The on-disk number.
    pub(crate) fn as_u8(self) -> u8 {
        self as u8
    }
}

/// Checks a user key against [`MAX_KEY_LEN`].
///
/// # Errors
/// `InvalidArgument` if the key is longer.
pub(crate) fn check_key_len(key: &[u8]) -> Result<()> {
    if key.len() <= MAX_KEY_LEN {
        Ok(())
    } else {
        Err(Error::invalid(format!(
            "key of {} bytes exceeds the limit of {MAX_KEY_LEN} bytes",
            key.len()
        )))
    }
}

/// Checks a value against [`MAX_VALUE_LEN`].
///
/// # Errors
/// `InvalidArgument` if the value is longer.
pub(crate) fn check_value_len(value: &[u8]) -> Result<()> {
    if value.len() <= MAX_VALUE_LEN {
        Ok(())
    } else {
        Err(Error::invalid(format!(
            "value of {} bytes exceeds the limit of {MAX_VALUE_LEN} bytes",
            value.len()
        )))
    }
}

/// One version of a user key: the key, the seqno that wrote it and what was written.
///
/// Ordered by user key ascending, seqno descending, kind descending (module invariant 1).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct InternalKey {
    /// The key as the user gave it.
    pub(crate) user_key: Vec<u8>,
    /// The write that produced this version.
    pub(crate) seqno: SeqNo,
    /// What the write recorded.
    pub(crate) kind: Kind,
}

impl Ord for InternalKey {
    fn cmp(&self, other: &Self) -> Ordering {
        self.user_key
            .cmp(&other.user_key)
            .then_with(|| other.seqno.cmp(&self.seqno))
            .then_with(|| other.kind.cmp(&self.kind))
    }
}

impl PartialOrd for InternalKey {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl InternalKey {
    /// A key version; limits are checked when it is encoded.
    pub(crate) fn new(user_key: impl Into<Vec<u8>>, seqno: SeqNo, kind: Kind) -> InternalKey {
        InternalKey {
            user_key: user_key.into(),
            seqno,
            kind,
        }
    }

    /// The 8-byte trailer value `(seqno << 8) | kind`.
    ///
    /// Requires: `seqno <= SeqNo::MAX` (checked by [`InternalKey::encode_into`]).
    fn trailer(&self) -> u64 {
        debug_assert!(self.seqno <= SeqNo::MAX);
        (self.seqno.0 << 8) | u64::from(self.kind.as_u8())
    }

    /// Number of bytes [`InternalKey::encode_into`] appends.
    pub(crate) fn encoded_len(&self) -> usize {
        self.user_key.len() + TRAILER_LEN
    }

    /// Appends the encoded form: the user key bytes, then the trailer
    /// `(seqno << 8) | kind` as a little-endian `u64`. Compare encoded keys with
    /// [`compare_encoded`], not bytewise.
    ///
    /// # Errors
    /// `InvalidArgument` if the user key is longer than [`MAX_KEY_LEN`] or the seqno is
    /// above [`SeqNo::MAX`]; nothing is appended then.
    pub(crate) fn encode_into(&self, out: &mut Vec<u8>) -> Result<()> {
        check_key_len(&self.user_key)?;
        self.seqno.check()?;
        out.reserve(self.encoded_len());
        out.extend_from_slice(&self.user_key);
        out.extend_from_slice(&self.trailer().to_le_bytes());
        Ok(())
    }

    /// The encoded form in a new buffer; see [`InternalKey::encode_into`].
    ///
    /// # Errors
    /// As [`InternalKey::encode_into`].
    pub(crate) fn encode(&self) -> Result<Vec<u8>> {
        let mut out = Vec::with_capacity(self.encoded_len());
        self.encode_into(&mut out)?;
        Ok(out)
    }

    /// Parses an encoded internal key.
    ///
    /// # Errors
    /// `Truncated` if `buf` is shorter than the trailer, `LengthOutOfRange` if the user key
    /// is longer than [`MAX_KEY_LEN`], `BadTag` for an unknown or reserved kind. The caller
    /// wraps the reason in a corruption error naming its file and offset.
    pub(crate) fn decode(buf: &[u8]) -> Result<InternalKey, Reason> {
        let (user_key, trailer) = split_encoded(buf).ok_or(Reason::Truncated)?;
        if user_key.len() > MAX_KEY_LEN {
            return Err(Reason::LengthOutOfRange);
        }
        let tag = (trailer & 0xff) as u8;
        let kind = Kind::from_u8(tag).ok_or(Reason::BadTag(tag))?;
        Ok(InternalKey {
            user_key: user_key.to_vec(),
            seqno: SeqNo(trailer >> 8),
            kind,
        })
    }
}

/// Splits an encoded internal key into its user key and trailer, or `None` if it is
/// shorter than the trailer.
pub(crate) fn split_encoded(buf: &[u8]) -> Option<(&[u8], u64)> {
    let user_len = buf.len().checked_sub(TRAILER_LEN)?;
    let (user_key, _) = buf.split_at_checked(user_len)?;
    Some((user_key, get_u64_le(buf, user_len)?))
}

/// The user key of an encoded internal key, as [`compare_encoded`] takes it: all of
/// `buf` if it is shorter than a trailer (which a validated key never is).
pub(crate) fn user_key_of(buf: &[u8]) -> &[u8] {
    split_encoded(buf).map_or(buf, |(user, _)| user)
}

/// The encoded probe that sorts before every version of `user_key` with seqno `<= seqno`
/// and after every newer one: `user_key` with trailer `(seqno << 8) | 0xff`. Seeking to it
/// finds the newest version visible at `seqno`. Not a decodable key (kind 0xff); only for
/// seeks.
pub(crate) fn seek_key(user_key: &[u8], seqno: SeqNo) -> Vec<u8> {
    let mut out = Vec::with_capacity(user_key.len() + TRAILER_LEN);
    out.extend_from_slice(user_key);
    out.extend_from_slice(&((seqno.0.min(SeqNo::MAX.0) << 8) | 0xff).to_le_bytes());
    out
}

/// The encoded probe that sorts after every version of `user_key` (trailer 0).
pub(crate) fn after_key(user_key: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(user_key.len() + TRAILER_LEN);
    out.extend_from_slice(user_key);
    out.extend_from_slice(&0u64.to_le_bytes());
    out
}

/// The user key and the unpacked trailer `(seqno, kind byte)` of an encoded key, or `None`
/// if it is shorter than the trailer.
pub(crate) fn parse_encoded(buf: &[u8]) -> Option<(&[u8], SeqNo, u8)> {
    let (user, trailer) = split_encoded(buf)?;
    Some((user, SeqNo(trailer >> 8), (trailer & 0xff) as u8))
}

/// Compares two encoded internal keys in the order of [`InternalKey`]'s `Ord`: user key
/// ascending, then trailer descending (which is seqno descending, then kind descending).
///
/// Keys come from tables on disk, so a malformed one (shorter than [`TRAILER_LEN`]) must
/// not panic, not even in debug builds: it is compared as a user key with trailer 0, which
/// keeps the order total and deterministic. Readers detect the damage when they decode it.
pub(crate) fn compare_encoded(a: &[u8], b: &[u8]) -> Ordering {
    let (a_user, a_trailer) = split_encoded(a).unwrap_or((a, 0));
    let (b_user, b_trailer) = split_encoded(b).unwrap_or((b, 0));
    a_user.cmp(b_user).then_with(|| b_trailer.cmp(&a_trailer))
}

/// [`compare_encoded`] for keys whose user keys are known to agree on their first `from`
/// bytes, starting there, and where the user keys first differ: `Some(i)` if byte `i` of
/// both user keys exists and differs (their order is then that byte's), `None` if one
/// user key is a prefix of the other (or they are equal).
///
/// A block walk uses the position to decide the following entries without comparing:
/// an entry that shares more than `i` bytes with a key below the target at `i` is below
/// it too, and one that shares `s <= i` bytes agrees with the target on its first `s`.
/// If the premise is false the order is still a total one but not `compare_encoded`'s, so
/// callers pass only what they derived as above.
pub(crate) fn compare_encoded_from(a: &[u8], b: &[u8], from: usize) -> (Ordering, Option<usize>) {
    let (a_user, a_trailer) = split_encoded(a).unwrap_or((a, 0));
    let (b_user, b_trailer) = split_encoded(b).unwrap_or((b, 0));
    let n = a_user.len().min(b_user.len());
    let at = mismatch(a_user, b_user, from.min(n));
    match (a_user.get(at), b_user.get(at)) {
        (Some(x), Some(y)) => (x.cmp(y), Some(at)),
        _ => (
            a_user
                .len()
                .cmp(&b_user.len())
                .then_with(|| b_trailer.cmp(&a_trailer)),
            None,
        ),
    }
}

/// The first position at or after `from` where `a` and `b` differ, or the shorter one's
/// length if they agree up to it; eight bytes at a time.
#[inline]
fn mismatch(a: &[u8], b: &[u8], from: usize) -> usize {
    let n = a.len().min(b.len());
    let mut i = from;
    while let (Some(x), Some(y)) = (word_at(a, i), word_at(b, i)) {
        let diff = x ^ y;
        if diff != 0 {
            return i + (diff.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    while i < n && a.get(i) == b.get(i) {
        i += 1;
    }
    i.min(n)
}

/// The eight bytes of `buf` at `at`, little-endian (so the lowest differing bit of two
/// words is in their first differing byte), if there are eight.
#[inline]
fn word_at(buf: &[u8], at: usize) -> Option<u64> {
    let bytes = buf.get(at..at.checked_add(8)?)?;
    Some(u64::from_le_bytes(<[u8; 8]>::try_from(bytes).ok()?))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn ik(key: &[u8], seqno: u64, kind: Kind) -> InternalKey {
        InternalKey::new(key, SeqNo(seqno), kind)
    }

    #[test]
    fn encoding_matches_the_documented_layout() {
        let key = ik(b"ab", 0x0001_0203_0405_0607, Kind::Put);
        let enc = key.encode().unwrap();
        assert_eq!(enc.len(), key.encoded_len());
        assert_eq!(
            enc,
            [b'a', b'b', 0x01, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01]
        );
        assert_eq!(InternalKey::decode(&enc), Ok(key));
    }

    #[test]
    fn newest_version_sorts_first() {
        let mut keys = [
            ik(b"b", 1, Kind::Put),
            ik(b"a", 1, Kind::Put),
            ik(b"a", 7, Kind::Delete),
            ik(b"a", 3, Kind::Put),
            ik(b"", 0, Kind::Put),
        ];
        keys.sort();
        let order: Vec<(&[u8], u64)> = keys
            .iter()
            .map(|k| (k.user_key.as_slice(), k.seqno.0))
            .collect();
        assert_eq!(
            order,
            [(&b""[..], 0), (b"a", 7), (b"a", 3), (b"a", 1), (b"b", 1)]
        );
        // A seek key at SeqNo::MAX sorts before every stored version of its user key.
        assert!(ik(b"a", SeqNo::MAX.0, Kind::Put) < ik(b"a", SeqNo::MAX.0 - 1, Kind::Delete));
    }

    #[test]
    fn bytewise_order_of_encoded_keys_is_wrong_hence_the_comparator() {
        // "a" < "a\x01" as user keys, but byte 1 of the first encoding is its trailer's
        // kind byte (0x02), which is larger than the second key's byte 1 (0x01).
        let short = ik(b"a", 0, Kind::Delete).encode().unwrap();
        let long = ik(b"a\x01", 0, Kind::Put).encode().unwrap();
        assert!(short > long, "bytewise: {short:?} vs {long:?}");
        assert_eq!(compare_encoded(&short, &long), Ordering::Less);
    }

    #[test]
    fn limits_are_enforced() {
        let at_limit = ik(&vec![0u8; MAX_KEY_LEN], SeqNo::MAX.0, Kind::Put);
        assert!(at_limit.encode().is_ok());
        let too_long = ik(&vec![0u8; MAX_KEY_LEN + 1], 1, Kind::Put);
        assert!(matches!(too_long.encode(), Err(Error::InvalidArgument(_))));
        let too_new = ik(b"k", SeqNo::MAX.0 + 1, Kind::Put);
        let mut out = vec![9];
        assert!(matches!(
            too_new.encode_into(&mut out),
            Err(Error::InvalidArgument(_))
        ));
        assert_eq!(out, [9], "nothing appended on error");
        assert!(SeqNo(u64::MAX).check().is_err());
        assert_eq!(SeqNo::MAX.checked_add(1), None);
        assert_eq!(SeqNo(5).checked_add(2), Some(SeqNo(7)));
        assert!(check_value_len(b"v").is_ok());
    }

    #[test]
    fn kind_registry_is_stable() {
        assert_eq!(Kind::Put.as_u8(), 1);
        assert_eq!(Kind::Delete.as_u8(), 2);
        assert_eq!(Kind::RangeDelete.as_u8(), 3);
        assert_eq!(Kind::PutAttrs.as_u8(), 6);
        assert_eq!(Kind::ValueHandle.as_u8(), 4);
        for kind in [
            Kind::Put,
            Kind::Delete,
            Kind::RangeDelete,
            Kind::PutAttrs,
            Kind::ValueHandle,
            Kind::Merge,
        ] {
            assert_eq!(Kind::from_u8(kind.as_u8()), Some(kind));
        }
        assert_eq!(Kind::from_u8(0), None);
        for (tag, _) in RESERVED_KINDS {
            assert_eq!(Kind::from_u8(tag), None, "reserved {tag}");
        }
    }

    #[test]
    fn decode_rejects_bad_input() {
        assert_eq!(InternalKey::decode(b"1234567"), Err(Reason::Truncated));
        let mut enc = ik(b"k", 9, Kind::Put).encode().unwrap();
        enc[1] = 7; // unassigned
        assert_eq!(InternalKey::decode(&enc), Err(Reason::BadTag(7)));
        let mut huge = vec![0u8; MAX_KEY_LEN + 1];
        huge.extend_from_slice(&((1u64 << 8) | 1).to_le_bytes());
        assert_eq!(InternalKey::decode(&huge), Err(Reason::LengthOutOfRange));
        // The comparator never panics on malformed input.
        assert_eq!(compare_encoded(b"", b"x"), Ordering::Less);
    }

    fn arb_key() -> impl Strategy<Value = InternalKey> {
        (
            // A tiny alphabet and short keys give many equal keys and shared prefixes.
            prop::collection::vec(0u8..4, 0..4),
            prop_oneof![0u64..4, 0..=SeqNo::MAX.0],
            prop_oneof![Just(Kind::Put), Just(Kind::Delete), Just(Kind::PutAttrs)],
        )
            .prop_map(|(k, s, kind)| InternalKey::new(k, SeqNo(s), kind))
    }

    proptest! {
        #[test]
        fn comparator_agrees_with_typed_order(a in arb_key(), b in arb_key()) {
            let (ea, eb) = (a.encode().unwrap(), b.encode().unwrap());
            prop_assert_eq!(compare_encoded(&ea, &eb), a.cmp(&b));
            prop_assert_eq!(InternalKey::decode(&ea).unwrap(), a);
        }

        #[test]
        fn sorting_typed_equals_sorting_encoded(keys in prop::collection::vec(arb_key(), 0..40)) {
            let mut typed = keys.clone();
            typed.sort();
            let mut encoded: Vec<Vec<u8>> = keys.iter().map(|k| k.encode().unwrap()).collect();
            encoded.sort_by(|a, b| compare_encoded(a, b));
            let typed_enc: Vec<Vec<u8>> = typed.iter().map(|k| k.encode().unwrap()).collect();
            prop_assert_eq!(&typed_enc, &encoded);
            // Within one user key, seqnos never increase: the newest version is first.
            for pair in typed.windows(2) {
                if pair[0].user_key == pair[1].user_key {
                    prop_assert!(pair[0].seqno >= pair[1].seqno);
                }
            }
        }

        #[test]
        fn compare_from_agrees_with_compare_encoded(
            shared in prop::collection::vec(any::<u8>(), 0..20),
            // Short tails from a tiny alphabet give prefixes and equal keys; long ones
            // exercise the eight-byte steps.
            tails in (prop::collection::vec(0u8..3, 0..24), prop::collection::vec(0u8..3, 0..24)),
            seqnos in (0u64..4, 0u64..4),
            cut in 0usize..40,
        ) {
            let key = |tail: &[u8], seqno| {
                let mut user = shared.clone();
                user.extend_from_slice(tail);
                InternalKey::new(user, SeqNo(seqno), Kind::Put)
            };
            let (a, b) = (key(&tails.0, seqnos.0), key(&tails.1, seqnos.1));
            let (ea, eb) = (a.encode().unwrap(), b.encode().unwrap());
            let from = cut.min(shared.len());
            let (order, at) = compare_encoded_from(&ea, &eb, from);
            prop_assert_eq!(order, compare_encoded(&ea, &eb));
            match at {
                Some(i) => {
                    prop_assert!(i >= shared.len());
                    prop_assert_eq!(&a.user_key[..i], &b.user_key[..i]);
                    prop_assert_ne!(a.user_key[i], b.user_key[i]);
                }
                None => {
                    let n = a.user_key.len().min(b.user_key.len());
                    prop_assert_eq!(&a.user_key[..n], &b.user_key[..n]);
                }
            }
        }
    }
}
