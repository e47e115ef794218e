//! [`WriteBatch`]: an ordered list of puts and removes across keyspaces that is applied
//! atomically, and its encoding, which is the payload of one WAL record.
//!
//! Owns: building a batch, its byte encoding and a validating decoder. Does not own
//! seqno assignment (the WAL record carries the batch's first seqno; op `i` gets
//! `first + i`, see [`WriteBatch::ops_with_seqno`]) nor framing and checksums (the WAL's).
//! Byte layout: [`BATCH_FORMAT.md`](BATCH_FORMAT.md).
//!
//! Invariants:
//! 1. `rep` is always a valid encoding: the 4-byte op count, then exactly `count` ops.
//!    [`WriteBatch::encoded`] therefore returns it without copying.
//! 2. `ops[i]` describes op `i`: its kind and keyspace and the byte ranges of its key and
//!    value within `rep`. Both `put`/`remove` and `decode` build them, always in bounds.
//! 3. Every key is at most [`MAX_KEY_LEN`] and every value at most [`MAX_VALUE_LEN`] bytes.
//!
//! Grammar of the encoding:
//!
//! ```text
//! batch := count:u32le op{count}
//! op    := 0x01 keyspace:vlq key_len:vlq key value_len:vlq value    (Put)
//!        | 0x02 keyspace:vlq key_len:vlq key                        (Delete)
//!        | 0x03 keyspace:vlq start_len:vlq start end_len:vlq end    (RangeDelete)
//!        | 0x06 keyspace:vlq key_len:vlq key value_len:vlq attrs value  (PutAttrs)
//!        | 0x04 keyspace:vlq key_len:vlq key value_len:vlq attrs handle (ValueHandle)
//!        | 0x05 keyspace:vlq key_len:vlq key operand_len:vlq operand    (Merge)
//! ```
//!
//! `ValueHandle` ops are made by the write leader when it separates a large value into
//! the value log (`db/write/separate.rs`); users never build them. A RangeDelete removes
//! `[start, end)`; an empty `end` means unbounded (see `rangedel.rs`), and the encoder
//! never writes an empty range.
//!
//! A `WriteBatch` is plain data (`Send + Sync`); it is not shared while being built.

// Wired into the ordered store (Db) as it lands; see docs/DESIGN.md.

use std::ops::Range;
use std::path::Path;

use crate::coding::{put_vlq, vlq_len, Cursor};
use crate::entry::{encode_put, Attrs, MAX_ATTRS_LEN, MAX_META_LEN};
use crate::error::{Error, FileKind, Reason, Result};
use crate::key::{
    check_key_len, check_value_len, KeyspaceId, Kind, SeqNo, MAX_KEY_LEN, MAX_VALUE_LEN,
};
use crate::vlog::{decode_entry_value, MAX_HANDLE_LEN};

/// Bytes of the header: the op count as a little-endian `u32`.
const HEADER_LEN: usize = 4;

/// The smallest encoded op: a Delete of an empty key in keyspace 0 (kind, keyspace,
/// key length). Bounds how many ops a payload of a given size can hold.
const MIN_OP_LEN: usize = 3;

/// One operation of a batch, borrowing its bytes from the batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Op<'a> {
    /// Set `key` to `value` in `keyspace`.
    Put {
        /// The keyspace written.
        keyspace: KeyspaceId,
        /// The user key.
        key: &'a [u8],
        /// The new value.
        value: &'a [u8],
    },
    /// Set `key` to a value with attributes in `keyspace`.
    PutAttrs {
        /// The keyspace written.
        keyspace: KeyspaceId,
        /// The user key.
        key: &'a [u8],
        /// The stored bytes: encoded attrs, then the value (see `entry.rs`).
        stored: &'a [u8],
    },
    /// Set `key` to a value separated into the value log.
    ValueHandle {
        /// The keyspace written.
        keyspace: KeyspaceId,
        /// The user key.
        key: &'a [u8],
        /// The stored bytes: encoded attrs, then the value handle (see `entry.rs`).
        stored: &'a [u8],
    },
    /// Combine `operand` into `key`'s value with the keyspace's merge operator.
    Merge {
        /// The keyspace written.
        keyspace: KeyspaceId,
        /// The user key.
        key: &'a [u8],
        /// The operand.
        operand: &'a [u8],
    },
    /// Remove `key` from `keyspace` (write a tombstone).
    Delete {
        /// The keyspace written.
        keyspace: KeyspaceId,
        /// The user key.
        key: &'a [u8],
    },
    /// Remove every key in `[start, end)` from `keyspace` (write a range tombstone).
    RangeDelete {
        /// The keyspace written.
        keyspace: KeyspaceId,
        /// The first key removed.
        start: &'a [u8],
        /// The first key kept after the range; empty: unbounded.
        end: &'a [u8],
    },
}

impl<'a> Op<'a> {
    /// The kind recorded for this op.
    pub(crate) fn kind(&self) -> Kind {
        match self {
            Op::Put { .. } => Kind::Put,
            Op::PutAttrs { .. } => Kind::PutAttrs,
            Op::ValueHandle { .. } => Kind::ValueHandle,
            Op::Merge { .. } => Kind::Merge,
            Op::Delete { .. } => Kind::Delete,
            Op::RangeDelete { .. } => Kind::RangeDelete,
        }
    }

    /// The op's value field: the bytes the memtable and tables store for a point op (the
    /// value of a Put, `attrs || value` of a PutAttrs, nothing for a Delete), the end of a
    /// RangeDelete (kept beside the point entries, see `rangedel.rs`).
    pub(crate) fn stored(&self) -> &'a [u8] {
        match self {
            Op::Put { value, .. } | Op::Merge { operand: value, .. } => value,
            Op::PutAttrs { stored, .. } | Op::ValueHandle { stored, .. } => stored,
            Op::Delete { .. } => &[],
            Op::RangeDelete { end, .. } => end,
        }
    }

    /// The keyspace the op writes.
    pub(crate) fn keyspace(&self) -> KeyspaceId {
        match self {
            Op::Put { keyspace, .. }
            | Op::PutAttrs { keyspace, .. }
            | Op::ValueHandle { keyspace, .. }
            | Op::Merge { keyspace, .. }
            | Op::Delete { keyspace, .. }
            | Op::RangeDelete { keyspace, .. } => *keyspace,
        }
    }

    /// The user key the op writes (a range delete's start).
    pub(crate) fn key(&self) -> &'a [u8] {
        match self {
            Op::Put { key, .. }
            | Op::PutAttrs { key, .. }
            | Op::ValueHandle { key, .. }
            | Op::Merge { key, .. }
            | Op::Delete { key, .. } => key,
            Op::RangeDelete { start, .. } => start,
        }
    }
}

/// Where op `i` lives inside `rep` (invariant 2).
#[derive(Debug, Clone)]
struct OpSpan {
    kind: Kind,
    keyspace: KeyspaceId,
    key: Range<usize>,
    /// Empty for a Delete; the end for a RangeDelete.
    value: Range<usize>,
}

/// An atomic group of writes across keyspaces, in the order they were added.
#[derive(Debug, Clone)]
pub(crate) struct WriteBatch {
    /// The encoding (invariant 1).
    rep: Vec<u8>,
    ops: Vec<OpSpan>,
    /// Sum of key and value lengths: the user data the batch carries.
    data_len: usize,
}

impl Default for WriteBatch {
    fn default() -> Self {
        WriteBatch::new()
    }
}

/// Two batches are equal when they hold the same ops in the same order (even if a decoded
/// one spelled a length with a non-minimal VLQ).
impl PartialEq for WriteBatch {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.ops().eq(other.ops())
    }
}

impl Eq for WriteBatch {}

impl WriteBatch {
    /// An empty batch.
    pub(crate) fn new() -> WriteBatch {
        WriteBatch {
            rep: vec![0; HEADER_LEN],
            ops: Vec::new(),
            data_len: 0,
        }
    }

    /// An empty batch with room for one op carrying `payload` bytes of key and value
    /// (plus attributes), so a single write fills it without growing it. A payload larger
    /// than any op may carry gets no room: the op will be refused, and must not cost an
    /// allocation of its size first.
    pub(crate) fn for_one(payload: usize) -> WriteBatch {
        // Kind byte, keyspace, key and value lengths (VLQs of at most 10 bytes each).
        const OP_OVERHEAD: usize = 1 + 3 * 10;
        const MAX_PAYLOAD: usize = MAX_KEY_LEN + MAX_VALUE_LEN + MAX_ATTRS_LEN;
        let room = if payload <= MAX_PAYLOAD {
            OP_OVERHEAD + payload
        } else {
            0
        };
        let mut rep = Vec::with_capacity(HEADER_LEN + room);
        rep.resize(HEADER_LEN, 0);
        WriteBatch {
            rep,
            ops: Vec::with_capacity(1),
            data_len: 0,
        }
    }

    /// Adds "set `key` to `value` in `keyspace`".
    ///
    /// # Errors
    /// `InvalidArgument` if the key is longer than [`MAX_KEY_LEN`], the value longer than
    /// [`MAX_VALUE_LEN`], or the batch already holds `u32::MAX` ops; the batch is unchanged.
    pub(crate) fn put(&mut self, keyspace: KeyspaceId, key: &[u8], value: &[u8]) -> Result<()> {
        check_key_len(key)?;
        check_value_len(value)?;
        self.push(Kind::Put, keyspace, key, Some(value))
    }

    /// Adds "set `key` to `value` with `attrs` in `keyspace`": a `PutAttrs` op, or a plain
    /// `Put` when no attribute is set.
    ///
    /// # Errors
    /// As [`WriteBatch::put`], and `InvalidArgument` for metadata longer than
    /// [`MAX_META_LEN`]; the batch is unchanged.
    pub(crate) fn put_attrs(
        &mut self,
        keyspace: KeyspaceId,
        key: &[u8],
        attrs: &Attrs<'_>,
        value: &[u8],
    ) -> Result<()> {
        check_key_len(key)?;
        check_value_len(value)?;
        if attrs.meta.len() > MAX_META_LEN {
            return Err(Error::invalid(format!(
                "metadata of {} bytes exceeds the limit of {MAX_META_LEN} bytes",
                attrs.meta.len()
            )));
        }
        let (kind, stored) = encode_put(attrs, value);
        self.push(kind, keyspace, key, Some(&stored))
    }

    /// Adds an op of `kind` with its stored bytes as they are (the write leader copies
    /// ops this way, replacing large values by `ValueHandle` ops).
    ///
    /// # Errors
    /// As [`WriteBatch::put`].
    pub(crate) fn push_stored(
        &mut self,
        kind: Kind,
        keyspace: KeyspaceId,
        key: &[u8],
        stored: &[u8],
    ) -> Result<()> {
        check_key_len(key)?;
        check_value_len(stored)?;
        let value = (kind != Kind::Delete).then_some(stored);
        self.push(kind, keyspace, key, value)
    }

    /// Adds "merge `operand` into `key` in `keyspace`" (a `Merge` op). Callers check
    /// first that the keyspace has a merge operator and that it accepts the operand.
    ///
    /// # Errors
    /// As [`WriteBatch::put`].
    pub(crate) fn merge(&mut self, keyspace: KeyspaceId, key: &[u8], operand: &[u8]) -> Result<()> {
        check_key_len(key)?;
        check_value_len(operand)?;
        self.push(Kind::Merge, keyspace, key, Some(operand))
    }

    /// Adds "remove `key` from `keyspace`".
    ///
    /// # Errors
    /// `InvalidArgument` if the key is longer than [`MAX_KEY_LEN`] or the batch already
    /// holds `u32::MAX` ops; the batch is unchanged.
    pub(crate) fn remove(&mut self, keyspace: KeyspaceId, key: &[u8]) -> Result<()> {
        check_key_len(key)?;
        self.push(Kind::Delete, keyspace, key, None)
    }

    /// Adds "remove every key in `[start, end)` from `keyspace`"; an empty `end` means
    /// unbounded. Callers normalise ranges first (`rangedel::normalize`).
    ///
    /// # Errors
    /// `InvalidArgument` if a bound is longer than [`MAX_KEY_LEN`], the range holds no key
    /// (`end` not empty and `start >= end`), or the batch already holds `u32::MAX` ops;
    /// the batch is unchanged.
    pub(crate) fn remove_range(
        &mut self,
        keyspace: KeyspaceId,
        start: &[u8],
        end: &[u8],
    ) -> Result<()> {
        check_key_len(start)?;
        check_key_len(end)?;
        if !end.is_empty() && start >= end {
            return Err(Error::invalid("a range delete must hold at least one key"));
        }
        self.push(Kind::RangeDelete, keyspace, start, Some(end))
    }

    fn push(
        &mut self,
        kind: Kind,
        keyspace: KeyspaceId,
        key: &[u8],
        value: Option<&[u8]>,
    ) -> Result<()> {
        let count = u32::try_from(self.ops.len() + 1)
            .map_err(|_| Error::invalid("a write batch holds at most 2^32 - 1 ops"))?;
        self.rep.push(kind.as_u8());
        put_vlq(&mut self.rep, u64::from(keyspace.0));
        put_vlq(&mut self.rep, key.len() as u64);
        let key_start = self.rep.len();
        self.rep.extend_from_slice(key);
        let key_range = key_start..self.rep.len();
        let value_range = match value {
            Some(value) => {
                put_vlq(&mut self.rep, value.len() as u64);
                let start = self.rep.len();
                self.rep.extend_from_slice(value);
                start..self.rep.len()
            }
            None => self.rep.len()..self.rep.len(),
        };
        self.data_len += key.len() + value_range.len();
        self.ops.push(OpSpan {
            kind,
            keyspace,
            key: key_range,
            value: value_range,
        });
        self.set_count(count);
        Ok(())
    }

    fn set_count(&mut self, count: u32) {
        if let Some(header) = self.rep.get_mut(..HEADER_LEN) {
            header.copy_from_slice(&count.to_le_bytes());
        }
    }

    /// Number of ops.
    pub(crate) fn len(&self) -> usize {
        self.ops.len()
    }

    /// True if the batch holds no ops.
    pub(crate) fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }

    /// Removes every op, keeping the allocated buffers.
    #[cfg(test)]
    pub(crate) fn clear(&mut self) {
        self.rep.truncate(HEADER_LEN);
        self.set_count(0);
        self.ops.clear();
        self.data_len = 0;
    }

    /// Bytes of the encoding (the WAL record payload).
    pub(crate) fn encoded_len(&self) -> usize {
        self.rep.len()
    }

    /// Bytes of user data: the sum of every op's key and value lengths. This is what the
    /// batch adds to a memtable, before per-entry overhead.
    #[cfg(test)]
    pub(crate) fn data_len(&self) -> usize {
        self.data_len
    }

    /// The encoding, ready to be the payload of a WAL record.
    pub(crate) fn encoded(&self) -> &[u8] {
        &self.rep
    }

    /// The ops in the order they were added.
    pub(crate) fn ops(&self) -> impl ExactSizeIterator<Item = Op<'_>> + DoubleEndedIterator + '_ {
        self.ops.iter().map(|span| self.op(span))
    }

    #[expect(
        clippy::indexing_slicing,
        reason = "spans are built by push/decode within rep, and rep only shrinks in clear, which also drops the spans"
    )]
    fn op(&self, span: &OpSpan) -> Op<'_> {
        let key = &self.rep[span.key.clone()];
        match span.kind {
            Kind::Put => Op::Put {
                keyspace: span.keyspace,
                key,
                value: &self.rep[span.value.clone()],
            },
            Kind::PutAttrs => Op::PutAttrs {
                keyspace: span.keyspace,
                key,
                stored: &self.rep[span.value.clone()],
            },
            Kind::ValueHandle => Op::ValueHandle {
                keyspace: span.keyspace,
                key,
                stored: &self.rep[span.value.clone()],
            },
            Kind::Merge => Op::Merge {
                keyspace: span.keyspace,
                key,
                operand: &self.rep[span.value.clone()],
            },
            Kind::Delete => Op::Delete {
                keyspace: span.keyspace,
                key,
            },
            Kind::RangeDelete => Op::RangeDelete {
                keyspace: span.keyspace,
                start: key,
                end: &self.rep[span.value.clone()],
            },
        }
    }

    /// The seqno of the last op if the first gets `first`, or `None` for an empty batch.
    ///
    /// # Errors
    /// As [`WriteBatch::ops_with_seqno`].
    pub(crate) fn last_seqno(&self, first: SeqNo) -> Result<Option<SeqNo>> {
        if first == SeqNo::ZERO {
            return Err(Error::invalid("seqno 0 is never assigned to a write"));
        }
        let Some(last_index) = self.ops.len().checked_sub(1) else {
            return Ok(None);
        };
        match first.checked_add(last_index as u64) {
            Some(last) if last < SeqNo::MAX => Ok(Some(last)),
            _ => Err(Error::invalid(format!(
                "a batch of {} ops starting at seqno {first} passes the largest write seqno {}",
                self.ops.len(),
                SeqNo::MAX.0 - 1
            ))),
        }
    }

    /// The ops paired with their seqnos: op `i` gets `first + i`.
    ///
    /// # Errors
    /// `InvalidArgument` if `first` is 0 or the last seqno would reach [`SeqNo::MAX`]
    /// (reserved for reads); both are checked once, before iteration.
    pub(crate) fn ops_with_seqno(
        &self,
        first: SeqNo,
    ) -> Result<impl ExactSizeIterator<Item = (SeqNo, Op<'_>)> + '_> {
        self.last_seqno(first)?;
        Ok(self
            .ops()
            .enumerate()
            .map(move |(i, op)| (SeqNo(first.0 + i as u64), op)))
    }

    /// Decodes a WAL record payload. `path` and `payload_offset` (the payload's offset in
    /// that file) only name the place in errors.
    ///
    /// Every length is checked against its limit and against the bytes present before
    /// anything is allocated from it; allocation is bounded by `payload.len()`.
    ///
    /// # Errors
    /// `Corruption` with `FileKind::Wal`: `Truncated` if the payload ends inside the header
    /// or an op, or holds fewer ops than its count; `BadTag` for an unknown or reserved
    /// kind; `BadVarint` for a malformed VLQ; `LengthOutOfRange` for a keyspace id above
    /// `u32::MAX` or a key or value over its limit; `BadEntry` for an empty range delete or
    /// bytes after the last op.
    pub(crate) fn decode(payload: &[u8], path: &Path, payload_offset: u64) -> Result<WriteBatch> {
        let corrupt = |at: usize, reason: Reason| {
            Error::corruption(
                FileKind::Wal,
                path,
                payload_offset.saturating_add(at as u64),
                reason,
            )
        };
        let mut cur = Cursor::new(payload);
        let count = cur.u32_le().map_err(|r| corrupt(0, r))?;
        let max_ops = cur.remaining() / MIN_OP_LEN;
        let mut ops = Vec::with_capacity((count as usize).min(max_ops));
        let mut data_len = 0usize;
        for _ in 0..count {
            let at = cur.position();
            let tag = cur.u8().map_err(|r| corrupt(at, r))?;
            let kind = Kind::from_u8(tag).ok_or_else(|| corrupt(at, Reason::BadTag(tag)))?;

            let at = cur.position();
            let keyspace = cur.vlq().map_err(|r| corrupt(at, r))?;
            let keyspace =
                u32::try_from(keyspace).map_err(|_| corrupt(at, Reason::LengthOutOfRange))?;

            let key = read_bytes(&mut cur, MAX_KEY_LEN).map_err(|(at, r)| corrupt(at, r))?;
            let value = match kind {
                Kind::Put | Kind::Merge => {
                    read_bytes(&mut cur, MAX_VALUE_LEN).map_err(|(at, r)| corrupt(at, r))?
                }
                Kind::PutAttrs => {
                    let stored = read_bytes(&mut cur, MAX_VALUE_LEN + MAX_ATTRS_LEN)
                        .map_err(|(at, r)| corrupt(at, r))?;
                    let bytes = payload.get(stored.clone()).unwrap_or_default();
                    Attrs::decode(bytes).map_err(|r| corrupt(stored.start, r))?;
                    stored
                }
                Kind::ValueHandle => {
                    let stored = read_bytes(&mut cur, MAX_ATTRS_LEN + MAX_HANDLE_LEN)
                        .map_err(|(at, r)| corrupt(at, r))?;
                    let bytes = payload.get(stored.clone()).unwrap_or_default();
                    let (_, used) = Attrs::decode(bytes).map_err(|r| corrupt(stored.start, r))?;
                    decode_entry_value(bytes, used).map_err(|r| corrupt(stored.start, r))?;
                    stored
                }
                Kind::Delete => key.end..key.end,
                Kind::RangeDelete => {
                    let end =
                        read_bytes(&mut cur, MAX_KEY_LEN).map_err(|(at, r)| corrupt(at, r))?;
                    let (Some(s), Some(e)) = (payload.get(key.clone()), payload.get(end.clone()))
                    else {
                        return Err(corrupt(at, Reason::Truncated));
                    };
                    if !e.is_empty() && s >= e {
                        return Err(corrupt(
                            end.start,
                            Reason::BadEntry("a range delete holds no key"),
                        ));
                    }
                    end
                }
            };
            data_len += key.len() + value.len();
            ops.push(OpSpan {
                kind,
                keyspace: KeyspaceId(keyspace),
                key,
                value,
            });
        }
        if !cur.is_empty() {
            return Err(corrupt(
                cur.position(),
                Reason::BadEntry("bytes after the last op of a write batch"),
            ));
        }
        Ok(WriteBatch {
            rep: payload.to_vec(),
            ops,
            data_len,
        })
    }

    /// Size of the encoding of one op, as documented in `BATCH_FORMAT.md`.
    pub(crate) fn op_encoded_len(op: &Op<'_>) -> usize {
        let fixed = 1 + vlq_len(u64::from(op.keyspace().0)) + vlq_len(op.key().len() as u64);
        let value = match op {
            Op::Put { value, .. }
            | Op::Merge { operand: value, .. }
            | Op::RangeDelete { end: value, .. } => vlq_len(value.len() as u64) + value.len(),
            Op::PutAttrs { stored, .. } | Op::ValueHandle { stored, .. } => {
                vlq_len(stored.len() as u64) + stored.len()
            }
            Op::Delete { .. } => 0,
        };
        fixed + op.key().len() + value
    }
}

/// Reads `len:vlq bytes` with `len <= limit`; returns the bytes' range in the payload, or
/// the offset of the failing field and why.
fn read_bytes(cur: &mut Cursor<'_>, limit: usize) -> Result<Range<usize>, (usize, Reason)> {
    let at = cur.position();
    let len = cur.vlq().map_err(|r| (at, r))?;
    let len = usize::try_from(len)
        .ok()
        .filter(|&len| len <= limit)
        .ok_or((at, Reason::LengthOutOfRange))?;
    let start = cur.position();
    cur.take(len).map_err(|r| (start, r))?;
    Ok(start..cur.position())
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]
mod tests {
    use super::*;
    use crate::files::BlobId;
    use proptest::prelude::*;
    use std::path::PathBuf;

    fn decode(bytes: &[u8]) -> Result<WriteBatch> {
        WriteBatch::decode(bytes, Path::new("000007.wal"), 100)
    }

    fn reason(result: Result<WriteBatch>) -> (u64, Reason) {
        match result {
            Err(Error::Corruption(c)) => {
                assert_eq!(c.file, FileKind::Wal);
                assert_eq!(c.path, PathBuf::from("000007.wal"));
                (c.offset, c.reason)
            }
            other => panic!("expected corruption, got {other:?}"),
        }
    }

    /// A batch sized for one op holds it without growing, and encodes exactly as a batch
    /// that grew to hold it.
    #[test]
    fn a_batch_for_one_op_does_not_grow() {
        let key = vec![7u8; 300]; // lengths with two-byte VLQs
        let value = vec![9u8; 200_000]; // and a three-byte one
        for (kind, payload) in [(0, key.len() + value.len()), (1, key.len())] {
            let mut sized = WriteBatch::for_one(payload);
            let mut grown = WriteBatch::new();
            for b in [&mut sized, &mut grown] {
                match kind {
                    0 => b.put(KeyspaceId(70_000), &key, &value).unwrap(),
                    _ => b.remove(KeyspaceId(70_000), &key).unwrap(),
                }
            }
            let room = WriteBatch::for_one(payload).rep.capacity();
            assert_eq!(sized.rep.capacity(), room, "the op fit the room reserved");
            assert_eq!(sized.ops.capacity(), 1);
            assert_eq!(sized.encoded(), grown.encoded());
            assert_eq!(sized, grown);
        }
    }

    /// A payload no op may carry (the put will be refused) reserves nothing for it, so an
    /// oversized value is refused without first allocating its size again.
    #[test]
    fn a_batch_for_an_oversized_op_reserves_nothing() {
        for payload in [MAX_KEY_LEN + MAX_VALUE_LEN + MAX_ATTRS_LEN + 1, usize::MAX] {
            let b = WriteBatch::for_one(payload);
            assert!(
                b.rep.capacity() < 1 << 10,
                "{payload}: {}",
                b.rep.capacity()
            );
            assert!(b.is_empty());
            assert_eq!(b.encoded(), WriteBatch::new().encoded());
        }
    }

    /// The batch of the worked example in BATCH_FORMAT.md.
    fn sample() -> WriteBatch {
        let mut b = WriteBatch::new();
        b.put(KeyspaceId(1), b"ab", b"xyz").unwrap();
        b.remove(KeyspaceId(200), b"k").unwrap();
        b
    }

    #[test]
    fn encoding_matches_the_worked_example() {
        let b = sample();
        #[rustfmt::skip]
        let expected = [
            0x02, 0x00, 0x00, 0x00,                   // count = 2
            0x01, 0x01, 0x02, b'a', b'b', 0x03, b'x', b'y', b'z', // Put ks 1 "ab" = "xyz"
            0x02, 0xc8, 0x01, 0x01, b'k',             // Delete ks 200 "k"
        ];
        assert_eq!(b.encoded(), expected);
        assert_eq!(b.encoded_len(), 18);
        assert_eq!(
            b.encoded_len(),
            HEADER_LEN
                + b.ops()
                    .map(|op| WriteBatch::op_encoded_len(&op))
                    .sum::<usize>()
        );
        assert_eq!(b.data_len(), 2 + 3 + 1);
        assert_eq!(b.len(), 2);
    }

    #[test]
    fn round_trip_and_accessors() {
        let b = sample();
        let decoded = decode(b.encoded()).unwrap();
        assert_eq!(decoded, b);
        assert_eq!(decoded.data_len(), b.data_len());
        let ops: Vec<Op<'_>> = decoded.ops().collect();
        assert_eq!(
            ops,
            [
                Op::Put {
                    keyspace: KeyspaceId(1),
                    key: b"ab",
                    value: b"xyz"
                },
                Op::Delete {
                    keyspace: KeyspaceId(200),
                    key: b"k"
                },
            ]
        );
        assert_eq!(ops[0].kind(), Kind::Put);
        assert_eq!(ops[1].kind(), Kind::Delete);
        assert_eq!(ops[1].keyspace(), KeyspaceId(200));
        assert_eq!(ops[1].key(), b"k");
    }

    #[test]
    fn empty_batch_and_clear() {
        let mut b = WriteBatch::new();
        assert!(b.is_empty());
        assert_eq!(b.encoded(), [0, 0, 0, 0]);
        assert_eq!(decode(b.encoded()).unwrap(), b);
        b.put(KeyspaceId(0), b"", b"").unwrap();
        assert!(!b.is_empty());
        b.clear();
        assert!(b.is_empty());
        assert_eq!(b.encoded(), WriteBatch::new().encoded());
        assert_eq!(b.data_len(), 0);
        b.remove(KeyspaceId(3), b"z").unwrap();
        assert_eq!(decode(b.encoded()).unwrap(), b);
    }

    #[test]
    fn seqnos_are_first_plus_index() {
        let b = sample();
        let seqnos: Vec<SeqNo> = b
            .ops_with_seqno(SeqNo(10))
            .unwrap()
            .map(|(s, _)| s)
            .collect();
        assert_eq!(seqnos, [SeqNo(10), SeqNo(11)]);
        assert_eq!(b.last_seqno(SeqNo(10)).unwrap(), Some(SeqNo(11)));
        assert_eq!(WriteBatch::new().last_seqno(SeqNo(10)).unwrap(), None);
        // The last op may take MAX - 1 but not MAX, which is reserved for reads.
        assert!(b.ops_with_seqno(SeqNo(SeqNo::MAX.0 - 2)).is_ok());
        assert!(matches!(
            b.ops_with_seqno(SeqNo(SeqNo::MAX.0 - 1)),
            Err(Error::InvalidArgument(_))
        ));
        assert!(matches!(
            b.ops_with_seqno(SeqNo(u64::MAX)),
            Err(Error::InvalidArgument(_))
        ));
        assert!(matches!(
            b.ops_with_seqno(SeqNo::ZERO),
            Err(Error::InvalidArgument(_))
        ));
    }

    #[test]
    fn every_truncation_is_an_error() {
        let good = sample();
        let bytes = good.encoded();
        for cut in 0..bytes.len() {
            let (offset, reason) = reason(decode(&bytes[..cut]));
            assert_eq!(reason, Reason::Truncated, "cut {cut}");
            assert!(offset <= 100 + cut as u64, "cut {cut}: offset {offset}");
        }
    }

    #[test]
    fn flipped_bytes_never_panic() {
        let good = sample();
        for i in 0..good.encoded_len() {
            for mask in [0x01, 0x40, 0x80, 0xff] {
                let mut bad = good.encoded().to_vec();
                bad[i] ^= mask;
                match decode(&bad) {
                    Ok(other) => {
                        assert_ne!(other, good, "byte {i} mask {mask:#x}");
                        assert_eq!(decode(other.encoded()).unwrap(), other);
                    }
                    Err(e) => assert!(e.is_corruption(), "byte {i}: {e}"),
                }
            }
        }
    }

    #[test]
    fn unknown_and_reserved_kinds_are_bad_tags() {
        for (tag, _) in crate::key::RESERVED_KINDS
            .iter()
            .copied()
            .chain([(0, ""), (0xff, "")])
        {
            let mut bad = sample().encoded().to_vec();
            bad[4] = tag;
            assert_eq!(
                reason(decode(&bad)),
                (104, Reason::BadTag(tag)),
                "tag {tag}"
            );
        }
        assert!(Reason::BadTag(4).to_string().contains("0x04"));
    }

    #[test]
    fn oversized_key_is_rejected_on_put_and_on_decode() {
        let long = vec![7u8; MAX_KEY_LEN + 1];
        let mut b = WriteBatch::new();
        assert!(matches!(
            b.put(KeyspaceId(0), &long, b"v"),
            Err(Error::InvalidArgument(_))
        ));
        assert!(matches!(
            b.remove(KeyspaceId(0), &long),
            Err(Error::InvalidArgument(_))
        ));
        assert!(b.is_empty());
        assert_eq!(b.encoded(), WriteBatch::new().encoded());

        // Hand-build the encoding put would have produced.
        let mut bytes = 1u32.to_le_bytes().to_vec();
        bytes.extend_from_slice(&[Kind::Delete.as_u8(), 0]);
        put_vlq(&mut bytes, long.len() as u64);
        bytes.extend_from_slice(&long);
        assert_eq!(reason(decode(&bytes)), (106, Reason::LengthOutOfRange));

        // At the limit it is fine.
        b.remove(KeyspaceId(0), &long[1..]).unwrap();
        assert_eq!(decode(b.encoded()).unwrap(), b);
    }

    #[test]
    fn decoder_rejects_hostile_lengths_and_counts() {
        // A count far above what the bytes could hold: Truncated, no huge allocation.
        assert_eq!(
            reason(decode(&u32::MAX.to_le_bytes())),
            (104, Reason::Truncated)
        );
        // A value length far above the bytes present.
        let mut bytes = 1u32.to_le_bytes().to_vec();
        bytes.extend_from_slice(&[Kind::Put.as_u8(), 0, 0]);
        put_vlq(&mut bytes, u64::from(u32::MAX));
        assert_eq!(reason(decode(&bytes)), (112, Reason::Truncated));
        // A value length above the limit.
        let mut bytes = 1u32.to_le_bytes().to_vec();
        bytes.extend_from_slice(&[Kind::Put.as_u8(), 0, 0]);
        put_vlq(&mut bytes, u64::MAX);
        assert_eq!(reason(decode(&bytes)), (107, Reason::LengthOutOfRange));
        // A keyspace id above u32::MAX.
        let mut bytes = 1u32.to_le_bytes().to_vec();
        bytes.push(Kind::Delete.as_u8());
        put_vlq(&mut bytes, 1 << 32);
        bytes.push(0);
        assert_eq!(reason(decode(&bytes)), (105, Reason::LengthOutOfRange));
        // A malformed VLQ.
        let mut bytes = 1u32.to_le_bytes().to_vec();
        bytes.push(Kind::Delete.as_u8());
        bytes.extend_from_slice(&[0xff; 11]);
        assert_eq!(reason(decode(&bytes)), (105, Reason::BadVarint));
    }

    #[test]
    fn put_attrs_round_trips_and_damaged_attrs_are_corruption() {
        let attrs = Attrs {
            tag: 300,
            meta: b"ab",
            expires_at: Some(0x0102_0304_0506_0708),
        };
        let mut b = WriteBatch::new();
        b.put_attrs(KeyspaceId(1), b"k", &attrs, b"v").unwrap();
        // No attribute: a plain Put.
        b.put_attrs(KeyspaceId(1), b"p", &Attrs::default(), b"w")
            .unwrap();
        #[rustfmt::skip]
        let expected = [
            0x02, 0x00, 0x00, 0x00,                          // count = 2
            0x06, 0x01, 0x01, b'k', 0x0f,                    // PutAttrs ks 1 "k", 15 bytes:
            0x07, 0xac, 0x02, 0x02, b'a', b'b', 8, 7, 6, 5, 4, 3, 2, 1, // attrs
            b'v',                                            // value
            0x01, 0x01, 0x01, b'p', 0x01, b'w',              // Put ks 1 "p" = "w"
        ];
        assert_eq!(b.encoded(), expected);
        let decoded = decode(b.encoded()).unwrap();
        assert_eq!(decoded, b);
        let ops: Vec<Op<'_>> = decoded.ops().collect();
        assert_eq!(ops[0].kind(), Kind::PutAttrs);
        assert_eq!(ops[0].stored(), &expected[9..24]);
        assert_eq!(ops[1].kind(), Kind::Put);
        // An unknown attrs flag bit, and attrs cut short inside the value field.
        let mut bad = expected.to_vec();
        bad[9] = 0x0f;
        assert_eq!(reason(decode(&bad)), (109, Reason::BadTag(0x0f)));
        let mut short = expected[..9].to_vec();
        short[8] = 0x03;
        short[0] = 1;
        short.extend_from_slice(&[0x04, 1, 2]);
        assert_eq!(reason(decode(&short)), (109, Reason::Truncated));
        // Metadata over the limit is refused when added.
        let big = vec![0u8; MAX_META_LEN + 1];
        let too_big = Attrs {
            meta: &big,
            ..Attrs::default()
        };
        assert!(matches!(
            b.put_attrs(KeyspaceId(1), b"k", &too_big, b""),
            Err(Error::InvalidArgument(_))
        ));
    }

    #[test]
    fn trailing_garbage_is_rejected() {
        let mut bytes = sample().encoded().to_vec();
        bytes.push(0x01);
        assert!(matches!(reason(decode(&bytes)), (118, Reason::BadEntry(_))));
    }

    #[test]
    fn value_handle_ops_match_the_worked_example_and_damage_is_corruption() {
        // BATCH_FORMAT.md §5b: no attributes, blob file 7, offset 20, 5 bytes.
        let handle = crate::vlog::ValueHandle {
            file_id: BlobId(7),
            offset: 20,
            value_len: 5,
            check: 0xdbe0_5e84,
        };
        let stored = crate::entry::encode_separated(&Attrs::default(), &handle);
        assert_eq!(
            stored,
            [0x00, 0x00, 0x07, 0x14, 0x05, 0x84, 0x5e, 0xe0, 0xdb]
        );
        let mut b = WriteBatch::new();
        b.push_stored(Kind::ValueHandle, KeyspaceId(1), b"k", &stored)
            .unwrap();
        let got = decode(b.encoded()).unwrap();
        assert_eq!(got, b);
        let op = got.ops().next().unwrap();
        assert_eq!(op.kind(), Kind::ValueHandle);
        assert_eq!(op.stored(), stored.as_slice());
        // A handle with a flag bit, cut short, or followed by a byte.
        for bad in [
            vec![0x00, 0x01, 0x07, 0x14, 0x05, 0x84, 0x5e, 0xe0, 0xdb],
            vec![0x00, 0x00, 0x07, 0x14, 0x05, 0x84, 0x5e],
            vec![0x00, 0x00, 0x07, 0x14, 0x05, 0x84, 0x5e, 0xe0, 0xdb, 0x00],
        ] {
            let mut b = WriteBatch::new();
            b.push_stored(Kind::ValueHandle, KeyspaceId(1), b"k", &bad)
                .unwrap();
            assert!(decode(b.encoded()).unwrap_err().is_corruption(), "{bad:?}");
        }
    }

    #[test]
    fn range_deletes_round_trip_and_refuse_empty_ranges() {
        let mut b = WriteBatch::new();
        b.remove_range(KeyspaceId(2), b"a", b"c").unwrap();
        b.remove_range(KeyspaceId(2), b"x", b"").unwrap();
        assert!(b.remove_range(KeyspaceId(2), b"c", b"c").is_err());
        assert!(b.remove_range(KeyspaceId(2), b"d", b"c").is_err());
        assert_eq!(b.len(), 2);
        #[rustfmt::skip]
        let expected = [
            0x02, 0x00, 0x00, 0x00,
            0x03, 0x02, 0x01, b'a', 0x01, b'c',      // RangeDelete ks 2 ["a", "c")
            0x03, 0x02, 0x01, b'x', 0x00,            // RangeDelete ks 2 ["x", unbounded)
        ];
        assert_eq!(b.encoded(), expected);
        let decoded = decode(b.encoded()).unwrap();
        assert_eq!(decoded, b);
        let ops: Vec<Op<'_>> = decoded.ops().collect();
        assert_eq!(
            ops[1],
            Op::RangeDelete {
                keyspace: KeyspaceId(2),
                start: b"x",
                end: b""
            }
        );
        assert_eq!((ops[0].key(), ops[0].stored()), (&b"a"[..], &b"c"[..]));
        // An empty range on disk is damage.
        let mut bad = b.encoded().to_vec();
        bad[9] = b'a';
        assert!(matches!(reason(decode(&bad)), (109, Reason::BadEntry(_))));
    }

    #[derive(Debug, Clone)]
    enum TestOp {
        Put(u32, Vec<u8>, Vec<u8>),
        PutAttrs(u32, Vec<u8>, Vec<u8>, u32, Option<u64>),
        Delete(u32, Vec<u8>),
        RangeDelete(u32, Vec<u8>, Vec<u8>),
    }

    fn arb_op() -> impl Strategy<Value = TestOp> {
        let ks = prop_oneof![0u32..3, any::<u32>()];
        let bytes = || prop::collection::vec(any::<u8>(), 0..200);
        prop_oneof![
            (ks.clone(), bytes(), bytes()).prop_map(|(k, key, v)| TestOp::Put(k, key, v)),
            (
                ks.clone(),
                bytes(),
                bytes(),
                any::<u32>(),
                prop::option::of(any::<u64>())
            )
                .prop_map(|(k, key, v, t, e)| TestOp::PutAttrs(k, key, v, t, e)),
            (ks.clone(), bytes()).prop_map(|(k, key)| TestOp::Delete(k, key)),
            (ks, bytes(), bytes()).prop_map(|(k, mut a, b)| {
                // A non-empty range: an unbounded end, or an end above the start.
                if !b.is_empty() && b <= a {
                    a.clear();
                }
                TestOp::RangeDelete(k, a, b)
            }),
        ]
    }

    proptest! {
        #[test]
        fn arbitrary_batches_round_trip(ops in prop::collection::vec(arb_op(), 0..20)) {
            let mut b = WriteBatch::new();
            for op in &ops {
                match op {
                    TestOp::Put(ks, k, v) => b.put(KeyspaceId(*ks), k, v).unwrap(),
                    TestOp::Delete(ks, k) => b.remove(KeyspaceId(*ks), k).unwrap(),
                    TestOp::RangeDelete(ks, s, e) => {
                        b.remove_range(KeyspaceId(*ks), s, e).unwrap()
                    }
                    TestOp::PutAttrs(ks, k, v, tag, expires_at) => {
                        let attrs = Attrs { tag: *tag, meta: k, expires_at: *expires_at };
                        b.put_attrs(KeyspaceId(*ks), k, &attrs, v).unwrap();
                    }
                }
            }
            prop_assert_eq!(b.len(), ops.len());
            let decoded = decode(b.encoded()).unwrap();
            prop_assert_eq!(&decoded, &b);
            prop_assert_eq!(decoded.data_len(), b.data_len());
            let sizes: usize = decoded.ops().map(|op| WriteBatch::op_encoded_len(&op)).sum();
            prop_assert_eq!(HEADER_LEN + sizes, b.encoded_len());
            for ((seqno, got), (i, want)) in decoded
                .ops_with_seqno(SeqNo(5))
                .unwrap()
                .zip(ops.iter().enumerate())
            {
                prop_assert_eq!(seqno, SeqNo(5 + i as u64));
                let same = match (got, want) {
                    (Op::Put { keyspace, key, value }, TestOp::Put(ks, k, v)) => {
                        keyspace.0 == *ks && key == k.as_slice() && value == v.as_slice()
                    }
                    (Op::Delete { keyspace, key }, TestOp::Delete(ks, k)) => {
                        keyspace.0 == *ks && key == k.as_slice()
                    }
                    (Op::RangeDelete { keyspace, start, end }, TestOp::RangeDelete(ks, s, e)) => {
                        keyspace.0 == *ks && start == s.as_slice() && end == e.as_slice()
                    }
                    (got, TestOp::PutAttrs(ks, k, v, tag, expires_at)) => {
                        let view = crate::entry::view(got.kind(), got.stored()).unwrap().unwrap();
                        let want = Attrs { tag: *tag, meta: k, expires_at: *expires_at };
                        got.keyspace().0 == *ks
                            && got.key() == k.as_slice()
                            && view.attrs == want
                            && view.body.inline() == Some(v.as_slice())
                    }
                    _ => false,
                };
                prop_assert!(same, "op {} differs", i);
            }
        }

        #[test]
        fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..64)) {
            if let Ok(b) = decode(&bytes) {
                prop_assert_eq!(b.encoded(), bytes.as_slice());
            }
        }
    }
}
