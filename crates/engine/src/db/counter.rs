//! Counters: the value rules of [`crate::Keyspace::incr`] and the write leader's view of
//! a counter's current value.
//!
//! A counter is a key whose value is the canonical decimal text of an `i64` (`b"0"`,
//! `b"-5"`, `b"9223372036854775807"`: an optional `-`, then digits without leading zeros;
//! no `+`, no `-0`, no spaces). A missing key counts as 0. An increment is stored as a
//! plain Put of the new text, so the log, tables, recovery and compaction know nothing of
//! counters.
//!
//! Owns: parsing and formatting counter values, the checked addition, [`Overlay`],
//! which lets the write leader resolve several counter operations in one write group, and
//! the resolution of a batch's increments ([`Increment`], [`Overlay::resolve_batch`]).
//!
//! Invariant (how increments stay atomic): only the write leader resolves an increment,
//! after every earlier group is in the memtable and before it assigns seqnos, reading the
//! store at the visible seqno and, for keys written earlier in the same group, the group's
//! own newest write of the key (`Overlay`). Leaders run one at a time and apply groups
//! in seqno order, so each increment reads exactly the state its seqno follows.
//!
//! A batch's increments ([`crate::Batch::incr`]) are resolved the same way, in their place
//! among the batch's ops: each reads the newest write of its key made earlier in the
//! batch or the group. If one fails, the whole batch is refused and the overlay forgets
//! everything the batch recorded, so later members see the state without it.

use std::collections::HashMap;

use super::commit_queue::{Counters, Increment, Increments};
use super::inner::Inner;
use super::read;
use crate::batch::{Op, WriteBatch};
use crate::entry::{self, Attrs, Body, EntryView};
use crate::error::{Error, Result};
use crate::iter::visible::{Extract, Lazy};
use crate::key::{KeyspaceId, Kind, SeqNo};
use crate::rangedel;
use crate::vlog;

/// Longest canonical text of an `i64` (`-9223372036854775808`).
const MAX_TEXT_LEN: usize = 20;

/// The counter held in `value`, or `None` if it is not the canonical decimal text of an
/// `i64`.
pub(crate) fn parse(value: &[u8]) -> Option<i64> {
    if value.is_empty() || value.len() > MAX_TEXT_LEN {
        return None;
    }
    let text = std::str::from_utf8(value).ok()?;
    let n: i64 = text.parse().ok()?;
    // Rejects `+5`, `007`, `-0`: exactly one spelling per number.
    (itoa::Buffer::new().format(n).as_bytes() == value).then_some(n)
}

/// The canonical text of `n`.
pub(crate) fn encode(n: i64) -> Vec<u8> {
    itoa::Buffer::new().format(n).as_bytes().to_vec()
}

/// The counter at `key` (held in `current`, `None` if absent) plus `delta`.
///
/// # Errors
/// `NotACounter` if `current` is not a counter; `CounterOverflow` if the sum leaves `i64`.
pub(crate) fn add(key: &[u8], current: Option<&[u8]>, delta: i128) -> Result<i64> {
    let now = match current {
        None => 0,
        Some(value) => parse(value).ok_or_else(|| Error::NotACounter {
            key: key.to_vec(),
            value_prefix: value
                .get(..Error::VALUE_PREVIEW_LEN)
                .unwrap_or(value)
                .to_vec(),
            value_len: value.len(),
        })?,
    };
    sum(key, now, delta)
}

/// `now + delta` for the counter at `key`.
///
/// # Errors
/// `CounterOverflow` if the sum leaves `i64`.
fn sum(key: &[u8], now: i64, delta: i128) -> Result<i64> {
    i128::from(now)
        .checked_add(delta)
        .and_then(|sum| i64::try_from(sum).ok())
        .ok_or_else(|| Error::CounterOverflow {
            key: key.to_vec(),
            current: now,
            delta,
        })
}

/// A key's value as an increment reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Current {
    /// No value: the key is missing, removed or expired (it counts as 0).
    Absent,
    /// A value known to be this counter.
    Number(i64),
    /// A value not parsed yet: a counter or not.
    Bytes(Vec<u8>),
}

impl Current {
    /// The counter plus `delta`.
    ///
    /// # Errors
    /// As [`add`].
    fn add(&self, key: &[u8], delta: i128) -> Result<i64> {
        match self {
            Current::Absent => add(key, None, delta),
            Current::Number(n) => sum(key, *n, delta),
            Current::Bytes(value) => add(key, Some(value), delta),
        }
    }

    /// The value's bytes, for a merge to start from.
    fn into_bytes(self) -> Option<Vec<u8>> {
        match self {
            Current::Absent => None,
            Current::Number(n) => Some(encode(n)),
            Current::Bytes(value) => Some(value),
        }
    }
}

/// A counter's newest version as a point read of the store finds it: a counter value is
/// parsed in place, so reading it copies no value bytes; any other value is kept for the
/// error that names it.
enum Stored {
    /// A counter value.
    Number(i64, Carried),
    /// A value that is not a counter's text, or a separated one (read on resolve).
    Other(Lazy, Carried),
}

impl Extract for Stored {
    type Out = (Current, Carried);

    fn extract(_seqno: SeqNo, view: &EntryView<'_>) -> Stored {
        let carried = Carried::of(view);
        match view.body {
            Body::Inline(value) => match parse(value) {
                Some(n) => Stored::Number(n, carried),
                None => Stored::Other(Lazy::Inline(value.to_vec()), carried),
            },
            Body::Handle(h) => Stored::Other(Lazy::Handle(h), carried),
        }
    }

    fn resolve(self, blobs: &vlog::Reader) -> Result<(Current, Carried)> {
        match self {
            Stored::Number(n, carried) => Ok((Current::Number(n), carried)),
            Stored::Other(lazy, carried) => Ok((Current::Bytes(lazy.resolve(blobs)?), carried)),
        }
    }
}

/// What a write group has done so far to one watched key.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Slot {
    /// Nothing yet: the store holds the current value.
    Untouched,
    /// Set to this value, with these attributes.
    Put(Vec<u8>, Carried),
    /// Set by an increment of the group to the text of this counter, with these
    /// attributes (not yet expired when the group started).
    Number(i64, Carried),
    /// Removed (or written with an expiry already past).
    Removed,
    /// These merge operands (oldest first) applied on top of the earlier state.
    Merged(Box<Slot>, Vec<Vec<u8>>),
}

/// The attributes (tag, metadata, expiry) of the entry an incr reads, which the new value
/// keeps: an incr changes the number, not what the application attached to it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Carried {
    pub(crate) tag: u32,
    pub(crate) meta: Vec<u8>,
    pub(crate) expires_at: Option<u64>,
}

impl Carried {
    fn of(view: &EntryView<'_>) -> Carried {
        Carried {
            tag: view.attrs.tag,
            meta: view.attrs.meta.to_vec(),
            expires_at: view.attrs.expires_at,
        }
    }

    pub(crate) fn from_head(head: &crate::attrs::Head) -> Carried {
        Carried {
            tag: head.tag,
            meta: head.meta.clone(),
            expires_at: head.expires_at,
        }
    }

    /// The attributes in their encodable form.
    pub(crate) fn attrs(&self) -> Attrs<'_> {
        Attrs {
            tag: self.tag,
            meta: &self.meta,
            expires_at: self.expires_at,
        }
    }
}

/// The newest write, within one write group, of each key a counter operation of that
/// group targets. Writes to other keys are not kept.
///
/// The keys are borrowed from the group (`'k`), so watching a key copies nothing.
#[derive(Debug)]
pub(crate) struct Overlay<'k> {
    /// (keyspace, key) -> its index in `slots`. Keys come from clients: the hash is
    /// seeded per process.
    targets: HashMap<(KeyspaceId, &'k [u8]), usize, foldhash::fast::RandomState>,
    /// What the group did to each watched key.
    slots: Vec<Slot>,
    /// While a batch's increments are resolved: each slot's state before the batch changed
    /// it, oldest first, so a refused batch can be undone in time proportional to its own
    /// ops (not to every key the group watches).
    undo: Option<Vec<(usize, Slot)>>,
}

/// Sets slot `index` to `new`, first noting its state in `undo` if a batch is being
/// resolved.
fn set_slot(undo: &mut Option<Vec<(usize, Slot)>>, slots: &mut [Slot], index: usize, new: Slot) {
    if let Some(slot) = slots.get_mut(index) {
        let old = std::mem::replace(slot, new);
        if let Some(undo) = undo {
            undo.push((index, old));
        }
    }
}

impl<'k> Overlay<'k> {
    /// An overlay watching the given counter keys.
    pub(crate) fn watching(
        keys: impl ExactSizeIterator<Item = (KeyspaceId, &'k [u8])>,
    ) -> Overlay<'k> {
        let mut targets =
            HashMap::with_capacity_and_hasher(keys.len(), foldhash::fast::RandomState::default());
        let mut slots = Vec::with_capacity(keys.len());
        for (ks, key) in keys {
            targets.entry((ks, key)).or_insert_with(|| {
                slots.push(Slot::Untouched);
                slots.len() - 1
            });
        }
        Overlay {
            targets,
            slots,
            undo: None,
        }
    }

    /// The index in `slots` of `key` in `keyspace`, if watched.
    fn index(&self, keyspace: KeyspaceId, key: &[u8]) -> Option<usize> {
        self.targets.get(&(keyspace, key)).copied()
    }

    /// The slot at `index` (untouched for `None`: a key not watched).
    fn slot_at(&self, index: Option<usize>) -> &Slot {
        index
            .and_then(|i| self.slots.get(i))
            .unwrap_or(&Slot::Untouched)
    }

    /// Records the writes of `batch` (applied after everything recorded so far); an entry
    /// with an expiry at or before `now_ms` counts as removed, as reads would see it, and
    /// so does every watched key inside a range delete.
    pub(crate) fn record(&mut self, batch: &WriteBatch, now_ms: u64) {
        if self.targets.is_empty() {
            return;
        }
        for op in batch.ops() {
            self.record_op(&op, now_ms);
        }
    }

    /// Records one op (see [`Overlay::record`]).
    fn record_op(&mut self, op: &Op<'_>, now_ms: u64) {
        let Overlay {
            targets,
            slots,
            undo,
        } = self;
        if let Op::RangeDelete {
            keyspace,
            start,
            end,
        } = op
        {
            // A range tombstone removes every watched key it covers.
            for (&(ks, key), &index) in targets.iter() {
                if ks == *keyspace && *start <= key && rangedel::below_end(key, end) {
                    set_slot(undo, slots, index, Slot::Removed);
                }
            }
            return;
        }
        let Some(&index) = targets.get(&(op.keyspace(), op.key())) else {
            return;
        };
        if let Op::Merge { operand, .. } = op {
            // An operand stacks on whatever the group left so far (the store's value when
            // untouched); a read of the key merges them.
            let Some(slot) = slots.get_mut(index) else {
                return;
            };
            let earlier = std::mem::replace(slot, Slot::Untouched);
            if let Some(undo) = undo {
                undo.push((index, earlier.clone()));
            }
            *slot = match earlier {
                Slot::Merged(base, mut operands) => {
                    operands.push(operand.to_vec());
                    Slot::Merged(base, operands)
                }
                other => Slot::Merged(Box::new(other), vec![operand.to_vec()]),
            };
            return;
        }
        let new = match op {
            Op::Put { value, .. } => Slot::Put(value.to_vec(), Carried::default()),
            Op::PutAttrs { stored, .. } => match entry::live(Kind::PutAttrs, stored, now_ms) {
                Ok(Some(view)) => Slot::Put(
                    view.body.inline().unwrap_or_default().to_vec(),
                    Carried::of(&view),
                ),
                // Expired at once, or (impossible for a batch that passed its checks)
                // undecodable: either way no value a read would return.
                Ok(None) | Err(_) => Slot::Removed,
            },
            // Made only by the leader after counters are resolved; never in a
            // member's batch. Treated as unknown content: not a counter value.
            Op::ValueHandle { .. } => Slot::Put(Vec::new(), Carried::default()),
            Op::Delete { .. } | Op::RangeDelete { .. } | Op::Merge { .. } => Slot::Removed,
        };
        set_slot(undo, slots, index, new);
    }

    /// Resolves `increments` among the ops of `batch`: returns the batch with each
    /// increment turned into a Put of the counter's new value (keeping the attributes of
    /// the entry it read), in its place, and the new values in order. Each increment reads
    /// the newest write of its key made before it in the batch or earlier in the group
    /// (recorded here), else the store. Requires: every key of `increments` is watched.
    ///
    /// # Errors
    /// The first failing increment's error (`NotACounter`, `CounterOverflow`, a failed
    /// read) or `InvalidArgument` for a resolved batch over the log's record limit; the
    /// overlay is then as it was before the call.
    pub(crate) fn resolve_batch(
        &mut self,
        inner: &Inner,
        batch: &WriteBatch,
        increments: &Increments,
        now_ms: u64,
    ) -> Result<(WriteBatch, Counters)> {
        self.undo = Some(Vec::new());
        let resolved = self.resolve_in_place(inner, batch, increments, now_ms);
        let undo = self.undo.take().unwrap_or_default();
        if resolved.is_err() {
            // Newest change first, so each slot ends in its state before the batch.
            for (index, old) in undo.into_iter().rev() {
                if let Some(slot) = self.slots.get_mut(index) {
                    *slot = old;
                }
            }
        }
        resolved
    }

    fn resolve_in_place(
        &mut self,
        inner: &Inner,
        batch: &WriteBatch,
        increments: &Increments,
        now_ms: u64,
    ) -> Result<(WriteBatch, Counters)> {
        let mut out = WriteBatch::new();
        let mut counters = Counters::new();
        let mut pending = increments.iter().peekable();
        for (i, op) in batch.ops().enumerate() {
            while let Some(inc) = pending.next_if(|inc| inc.after <= i) {
                counters.push(self.resolve_one(inner, &inc, &mut out, now_ms)?);
            }
            out.push_stored(op.kind(), op.keyspace(), op.key(), op.stored())?;
            self.record_op(&op, now_ms);
        }
        for inc in pending {
            counters.push(self.resolve_one(inner, &inc, &mut out, now_ms)?);
        }
        if out.encoded_len() > crate::wal::MAX_PAYLOAD_LEN {
            return Err(Error::invalid(format!(
                "write batch of {} bytes exceeds the limit of {} bytes",
                out.encoded_len(),
                crate::wal::MAX_PAYLOAD_LEN
            )));
        }
        Ok((out, counters))
    }

    /// Appends the Put `inc` becomes to `out`, records it, and returns the new value.
    /// The key is looked up in the overlay once: the slot read is the slot set.
    fn resolve_one(
        &mut self,
        inner: &Inner,
        inc: &Increment<'_>,
        out: &mut WriteBatch,
        now_ms: u64,
    ) -> Result<i64> {
        let index = self.index(inc.keyspace, inc.key);
        let (current, carried) =
            Overlay::current_of(inner, self.slot_at(index), inc.keyspace, inc.key)?;
        let n = current.add(inc.key, inc.delta)?;
        let attrs = carried.attrs();
        let mut text = itoa::Buffer::new();
        let value = text.format(n).as_bytes();
        if attrs.is_empty() {
            out.put(inc.keyspace, inc.key, value)?;
        } else {
            out.put_attrs(inc.keyspace, inc.key, &attrs, value)?;
        }
        // What `record_op` makes of that Put: an expiry already past (the read found the
        // entry live by its own clock) removes the key.
        let new = if attrs.expired(now_ms) {
            Slot::Removed
        } else {
            Slot::Number(n, carried)
        };
        if let Some(index) = index {
            set_slot(&mut self.undo, &mut self.slots, index, new);
        }
        Ok(n)
    }

    /// The value of `key` as the group has left it so far: `Some(entry)` if the group
    /// wrote it (`Some(None)`: removed), `None` if the group has not touched it or left
    /// merge operands on it.
    #[cfg(test)]
    fn written(&self, keyspace: KeyspaceId, key: &[u8]) -> Option<Option<(Vec<u8>, &Carried)>> {
        let index = self.index(keyspace, key)?;
        match self.slot_at(Some(index)) {
            Slot::Untouched | Slot::Merged(..) => None,
            Slot::Put(value, carried) => Some(Some((value.clone(), carried))),
            Slot::Number(n, carried) => Some(Some((encode(*n), carried))),
            Slot::Removed => Some(None),
        }
    }

    /// The value of `key` as `slot` leaves it, reading the store for an untouched one
    /// and merging the operands of a merged one with the keyspace's operator.
    fn current_of(
        inner: &Inner,
        slot: &Slot,
        keyspace: KeyspaceId,
        key: &[u8],
    ) -> Result<(Current, Carried)> {
        match slot {
            Slot::Untouched => Ok(read::lookup::<Stored>(&inner.reads, keyspace, key, None)?
                .unwrap_or((Current::Absent, Carried::default()))),
            Slot::Put(value, carried) => Ok((Current::Bytes(value.clone()), carried.clone())),
            Slot::Number(n, carried) => Ok((Current::Number(*n), carried.clone())),
            Slot::Removed => Ok((Current::Absent, Carried::default())),
            Slot::Merged(base, operands) => {
                let (current, carried) = Overlay::current_of(inner, base, keyspace, key)?;
                let operator = inner.reads.merge_operator(keyspace)?;
                let mut chain = crate::merge::Chain::new();
                for operand in operands.iter().rev() {
                    chain.push(operand);
                }
                let value = current.into_bytes();
                let base = value
                    .as_deref()
                    .map_or(crate::merge::Base::None, crate::merge::Base::Value);
                let merged = chain.merge(operator.as_ref(), key, base)?;
                Ok((Current::Bytes(merged), carried))
            }
        }
    }

    /// The counter at `key` plus `delta`, with the attributes the new value keeps, reading
    /// what the group wrote before or else the store at the visible seqno (which the
    /// caller guarantees holds every earlier group).
    ///
    /// # Errors
    /// As [`add`], and any error of the read.
    pub(crate) fn next_value(
        &self,
        inner: &Inner,
        keyspace: KeyspaceId,
        key: &[u8],
        delta: i128,
    ) -> Result<(i64, Carried)> {
        let slot = self.slot_at(self.index(keyspace, key));
        let (current, carried) = Overlay::current_of(inner, slot, keyspace, key)?;
        Ok((current.add(key, delta)?, carried))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn only_canonical_text_is_a_counter() {
        for (text, n) in [
            ("0", 0),
            ("7", 7),
            ("-5", -5),
            ("9223372036854775807", i64::MAX),
            ("-9223372036854775808", i64::MIN),
        ] {
            assert_eq!(parse(text.as_bytes()), Some(n), "{text}");
            assert_eq!(encode(n), text.as_bytes());
        }
        for bad in [
            "",
            "+5",
            "05",
            "-0",
            "00",
            " 5",
            "5 ",
            "5\n",
            "1e3",
            "9223372036854775808",
            "-9223372036854775809",
            "-",
            "abc",
            "0x10",
            "000000000000000000005",
        ] {
            assert_eq!(parse(bad.as_bytes()), None, "{bad:?}");
        }
        assert_eq!(parse(b"\xff1"), None);
    }

    #[test]
    fn add_checks_the_value_and_the_range() {
        assert_eq!(add(b"k", None, 5).unwrap(), 5);
        assert_eq!(add(b"k", Some(b"-3"), -4).unwrap(), -7);
        assert_eq!(
            add(b"k", Some(b"0"), i128::from(i64::MIN)).unwrap(),
            i64::MIN
        );
        // decr(i64::MIN) is +2^63, which fits only from a negative counter.
        let decr_min = -i128::from(i64::MIN);
        assert_eq!(add(b"k", Some(b"-1"), decr_min).unwrap(), i64::MAX);
        let e = add(b"k", None, decr_min).unwrap_err();
        assert!(matches!(e, Error::CounterOverflow { current: 0, delta, .. } if delta == decr_min));
        let e = add(b"k", Some(b"9223372036854775807"), 1).unwrap_err();
        assert!(matches!(
            e,
            Error::CounterOverflow {
                current: i64::MAX,
                delta: 1,
                ..
            }
        ));
        assert!(e.to_string().contains("9223372036854775807 plus 1"), "{e}");

        let long = vec![b'x'; 100];
        let e = add(b"hits\n", Some(&long), 1).unwrap_err();
        match &e {
            Error::NotACounter {
                key,
                value_prefix,
                value_len,
            } => {
                assert_eq!(key, b"hits\n");
                assert_eq!(value_prefix.len(), Error::VALUE_PREVIEW_LEN);
                assert_eq!(*value_len, 100);
            }
            other => panic!("{other}"),
        }
        let msg = e.to_string();
        assert!(msg.contains("hits\\n") && msg.contains("100 bytes") && msg.contains("..."));
        assert!(matches!(
            e.duplicate(),
            Error::NotACounter { value_len: 100, .. }
        ));
    }

    #[test]
    fn the_overlay_keeps_the_newest_write_of_watched_keys_only() {
        let (a, b) = (KeyspaceId(1), KeyspaceId(2));
        let mut o = Overlay::watching([(a, &b"c"[..]), (b, &b"c"[..])].into_iter());
        assert_eq!(o.written(a, b"c"), None);
        let mut batch = WriteBatch::new();
        batch.put(a, b"c", b"1").unwrap();
        batch.put(a, b"other", b"x").unwrap();
        batch.put(a, b"c", b"2").unwrap();
        batch.remove(b, b"c").unwrap();
        o.record(&batch, 0);
        let none = Carried::default();
        assert_eq!(o.written(a, b"c"), Some(Some((b"2".to_vec(), &none))));
        assert_eq!(o.written(b, b"c"), Some(None));
        assert_eq!(o.written(a, b"other"), None);
    }

    #[test]
    fn a_range_delete_in_the_group_removes_the_watched_keys_it_covers() {
        let (a, b) = (KeyspaceId(1), KeyspaceId(2));
        let keys = [
            (a, &b"c1"[..]),
            (a, &b"c2"[..]),
            (a, &b"d"[..]),
            (b, &b"c1"[..]),
        ];
        let mut o = Overlay::watching(keys.into_iter());
        let mut batch = WriteBatch::new();
        for (ks, key) in keys {
            batch.put(ks, key, b"5").unwrap();
        }
        // ["c", "d") in keyspace a: c1 and c2, not d (the end is excluded), not b's c1.
        batch.remove_range(a, b"c", b"d").unwrap();
        o.record(&batch, 0);
        let none = Carried::default();
        assert_eq!(o.written(a, b"c1"), Some(None));
        assert_eq!(o.written(a, b"c2"), Some(None));
        assert_eq!(o.written(a, b"d"), Some(Some((b"5".to_vec(), &none))));
        assert_eq!(o.written(b, b"c1"), Some(Some((b"5".to_vec(), &none))));
        // A write after the range delete sets the key again; an unbounded range removes
        // every watched key from its start on.
        let mut later = WriteBatch::new();
        later.put(a, b"c1", b"9").unwrap();
        later.remove_range(a, b"c2", b"").unwrap();
        o.record(&later, 0);
        assert_eq!(o.written(a, b"c1"), Some(Some((b"9".to_vec(), &none))));
        assert_eq!(o.written(a, b"d"), Some(None));
        // An untouched key inside a range delete counts as removed too.
        let mut fresh = Overlay::watching([(a, &b"k"[..])].into_iter());
        let mut only_range = WriteBatch::new();
        only_range.remove_range(a, b"", b"z").unwrap();
        fresh.record(&only_range, 0);
        assert_eq!(fresh.written(a, b"k"), Some(None));
    }

    #[test]
    fn the_overlay_keeps_attributes_and_treats_an_expired_write_as_removed() {
        let a = KeyspaceId(1);
        let mut o = Overlay::watching([(a, &b"c"[..]), (a, &b"d"[..])].into_iter());
        let kept = Attrs {
            tag: 4,
            meta: b"m",
            expires_at: Some(1_000),
        };
        let mut batch = WriteBatch::new();
        batch.put_attrs(a, b"c", &kept, b"7").unwrap();
        batch
            .put_attrs(
                a,
                b"d",
                &Attrs {
                    expires_at: Some(500),
                    ..Attrs::default()
                },
                b"1",
            )
            .unwrap();
        o.record(&batch, 500);
        let carried = Carried {
            tag: 4,
            meta: b"m".to_vec(),
            expires_at: Some(1_000),
        };
        assert_eq!(o.written(a, b"c"), Some(Some((b"7".to_vec(), &carried))));
        assert_eq!(carried.attrs(), kept);
        assert_eq!(o.written(a, b"d"), Some(None));
    }

    proptest! {
        #[test]
        fn every_i64_round_trips(n in any::<i64>()) {
            prop_assert_eq!(parse(&encode(n)), Some(n));
        }

        #[test]
        fn parse_accepts_exactly_the_canonical_spellings(bytes in proptest::collection::vec(any::<u8>(), 0..24)) {
            if let Some(n) = parse(&bytes) {
                prop_assert_eq!(encode(n), bytes);
            }
        }
    }
}
