//! Reading through merge operands: the value of a key whose newest visible version is a
//! merge operand (`Kind::Merge`), built from the versions under it (`merge.rs`).
//!
//! Owns: [`Resolver`] (a keyspace's operator, or the error for a keyspace without one,
//! and the way to read a separated base value), [`Merged`] (a merged value with the
//! attributes it carries), and [`merge_forward`], which walks one key's versions newest
//! first from a merged cursor and merges them. Point reads (`db/read.rs`) and forward
//! scans (`visible.rs`) use it; reverse scans collect the same versions oldest first and
//! call [`Resolver::merge`].
//!
//! Invariants (the rules of `merge.rs`):
//! 1. The operands are the versions from the newest visible one down to the first
//!    version that is not an operand, all at or below the snapshot; the walk stops at a
//!    version a range tombstone deletes at the snapshot (that version and every older one
//!    are hidden), at a tombstone, and at an expired entry (base `None`), or at a value
//!    (the base).
//! 2. A merged value carries its base's attributes and the newest operand's seqno.
//! 3. A separated base is read from the value log only when a merge needs it.

use std::path::Path;
use std::sync::Arc;

use crate::cursor::Cursor;
use crate::entry::{self, Attrs, Body, EntryView};
use crate::error::{Error, FileKind, Reason, Result};
use crate::key::{parse_encoded, Kind, SeqNo};
use crate::merge::{Base, Chain, MergeOperator};
use crate::rangedel::ReadTombstones;
use crate::vlog;

/// What a read needs to merge operands of one keyspace.
#[derive(Clone)]
pub(crate) struct Resolver {
    /// The keyspace's operator, or the error to report on meeting an operand without one.
    operator: std::result::Result<Arc<dyn MergeOperator>, String>,
    blobs: Arc<vlog::Reader>,
}

impl Resolver {
    /// A resolver merging with `operator` (`Err(keyspace name)`: none registered),
    /// reading separated bases from `blobs`.
    pub(crate) fn new(
        operator: std::result::Result<Arc<dyn MergeOperator>, String>,
        blobs: Arc<vlog::Reader>,
    ) -> Resolver {
        Resolver { operator, blobs }
    }

    /// The merged value of `key` from `chain` on `base` (a version's kind and stored
    /// bytes, live at `now_ms`; `None`: no base), with `seqno` the newest operand's.
    ///
    /// # Errors
    /// `InvalidArgument` without an operator; `MergeFailed`; the blob read's errors;
    /// `Corruption` for undecodable base bytes.
    pub(crate) fn merge(
        &self,
        key: &[u8],
        seqno: SeqNo,
        chain: &Chain,
        base: Option<(Kind, &[u8])>,
    ) -> Result<Merged> {
        let operator = match &self.operator {
            Ok(op) => op,
            Err(keyspace) => return Err(crate::merge::missing(keyspace)),
        };
        let view = match base {
            Some((kind, stored)) => entry::view(kind, stored).map_err(corrupt)?,
            None => None,
        };
        let (value, attrs) = match view {
            None => (
                chain.merge(operator.as_ref(), key, Base::None)?,
                Attrs::default(),
            ),
            Some(view) => {
                let value = match view.body {
                    Body::Inline(v) => chain.merge(operator.as_ref(), key, Base::Value(v))?,
                    Body::Handle(h) => {
                        let v = self.blobs.read(&h)?;
                        chain.merge(operator.as_ref(), key, Base::Value(&v))?
                    }
                };
                (value, view.attrs)
            }
        };
        Ok(Merged {
            seqno,
            value,
            tag: attrs.tag,
            meta: attrs.meta.to_vec(),
            expires_at: attrs.expires_at,
        })
    }
}

/// A merged value and the attributes it carries (invariant 2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Merged {
    /// The newest operand's seqno.
    pub(crate) seqno: SeqNo,
    /// The value.
    pub(crate) value: Vec<u8>,
    tag: u32,
    meta: Vec<u8>,
    expires_at: Option<u64>,
}

impl Merged {
    /// The value as readers see a stored version.
    pub(crate) fn view(&self) -> EntryView<'_> {
        EntryView {
            attrs: Attrs {
                tag: self.tag,
                meta: &self.meta,
                expires_at: self.expires_at,
            },
            body: Body::Inline(&self.value),
        }
    }
}

fn corrupt(reason: Reason) -> Error {
    Error::corruption(FileKind::Table, Path::new("<merged read>"), 0, reason)
}

/// Merges the versions of `user` from where `cursor` stands, which must be its newest
/// version at or below `snapshot`, a live operand (invariant 1); leaves the cursor past
/// every version of `user`.
///
/// # Errors
/// As [`Resolver::merge`]; the cursor's errors; `Corruption` for an undecodable key.
pub(crate) fn merge_forward(
    cursor: &mut dyn Cursor,
    user: &[u8],
    snapshot: SeqNo,
    now_ms: u64,
    range_dels: &ReadTombstones,
    resolver: &Resolver,
) -> Result<Merged> {
    let mut chain = Chain::new();
    let mut newest = None;
    let mut base: Option<(Kind, Vec<u8>)> = None;
    let mut ended = false;
    while cursor.valid() {
        let (key, seqno, tag) = parse_encoded(cursor.key())
            .ok_or_else(|| corrupt(Reason::BadEntry("internal key shorter than its trailer")))?;
        if key != user {
            break;
        }
        if !ended && seqno <= snapshot {
            let kind = Kind::from_u8(tag).ok_or_else(|| corrupt(Reason::BadTag(tag)))?;
            if range_dels.deletes(user, seqno, snapshot) {
                ended = true;
            } else if kind == Kind::Merge {
                newest.get_or_insert(seqno);
                chain.push(cursor.value());
            } else {
                ended = true;
                // A tombstone or an expired entry leaves no base.
                if entry::live(kind, cursor.value(), now_ms)
                    .map_err(corrupt)?
                    .is_some()
                {
                    base = Some((kind, cursor.value().to_vec()));
                }
            }
        }
        cursor.next()?;
    }
    let seqno = newest.ok_or_else(|| {
        corrupt(Reason::BadEntry(
            "a merge read began at a version that is not an operand",
        ))
    })?;
    resolver.merge(
        user,
        seqno,
        &chain,
        base.as_ref().map(|(k, v)| (*k, v.as_slice())),
    )
}
