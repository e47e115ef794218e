//! Value separation at commit: the write leader moves large values of a group into the
//! value log and logs handles in their place.
//!
//! Invariants:
//! 1. A group's values are appended to the value log, and handed to the OS in one write,
//!    before any WAL record of the group that names them (`vlog/FORMAT.md` §7); the blob
//!    files finished meanwhile are attached to the memtable the group goes into, whose
//!    flush records them in the manifest.
//! 2. A value stays in the tree only if its stored bytes fit a table entry
//!    (`table::MAX_INLINE_VALUE_LEN`); a larger one is always separated.

use std::borrow::Cow;
use std::sync::atomic::Ordering;

use super::member::Member;
use crate::batch::{Op, WriteBatch};
use crate::db::inner::Inner;
use crate::db::log::poison;
use crate::entry;
use crate::error::{Error, Result};
use crate::key::Kind;
use crate::memtable::Memtable;
use crate::version::Version;
use crate::{vlog, wal};

/// Most bytes a separated op's stored value takes in the log record: its attrs, the
/// handle, and slack for the length prefix.
pub(super) const ENTRY_HANDLE_ALLOWANCE: usize = vlog::MAX_HANDLE_LEN + entry::MAX_ATTRS_LEN + 10;

/// True if the leader moves `op`'s value to the value log: a put at or above its
/// keyspace's threshold, or one too large to stay in the tree (possible only when the
/// keyspace separated values when the write was checked).
fn separates(inner: &Inner, version: &Version, op: &Op<'_>) -> bool {
    // A merge operand always stays in the tree (readers and compaction merge it there).
    !matches!(op, Op::Merge { .. })
        && (over_threshold(inner, version, op)
            || op.stored().len() > crate::table::MAX_INLINE_VALUE_LEN)
}

/// True if `op` is a put whose value (without its attributes) is at or above its
/// keyspace's separation threshold.
pub(super) fn over_threshold(inner: &Inner, version: &Version, op: &Op<'_>) -> bool {
    let value_len = match op {
        Op::Put { value, .. } => value.len() as u64,
        Op::PutAttrs { stored, .. } => match entry::view(Kind::PutAttrs, stored) {
            Ok(Some(v)) => v.body.len(),
            _ => return false,
        },
        Op::ValueHandle { .. } | Op::Merge { .. } | Op::Delete { .. } | Op::RangeDelete { .. } => {
            return false
        }
    };
    inner
        .blob_threshold(version, op.keyspace())
        .is_some_and(|t| value_len >= t)
}

/// Replaces, in each member's batch, the puts [`separates`] picks by `ValueHandle` ops,
/// appending their values to the value log first (in batch order, before any WAL record
/// of the group is written). Blob files finished meanwhile are attached to `mem`, the
/// memtable the group goes into. A member whose log record would still be too large is
/// refused.
///
/// # Errors
/// A failed blob append (the log is poisoned: writes stop).
pub(super) fn separate(inner: &Inner, members: &mut [Member<'_>], mem: &Memtable) -> Result<()> {
    let version = inner.reads.supers.version();
    let needed = members.iter().any(|m| match m {
        Member::Apply { batch, .. } => batch.ops().any(|op| separates(inner, &version, &op)),
        Member::Refused(_) => false,
    });
    if !needed {
        return Ok(());
    }
    let mut wal = inner.log.wal.lock();
    if wal.poisoned.is_some() {
        return Err(Error::Poisoned);
    }
    for m in members.iter_mut() {
        let Member::Apply { batch, .. } = m else {
            continue;
        };
        if !batch.ops().any(|op| separates(inner, &version, &op)) {
            continue;
        }
        let mut out = WriteBatch::new();
        for op in batch.ops() {
            if !separates(inner, &version, &op) {
                out.push_stored(op.kind(), op.keyspace(), op.key(), op.stored())?;
                continue;
            }
            let view = entry::view(op.kind(), op.stored())
                .ok()
                .flatten()
                .ok_or_else(|| Error::invalid("a put without a value in a write group"))?;
            let Some(value) = view.body.inline() else {
                continue;
            };
            let handle = match wal.blob.append_gathered(op.keyspace(), op.key(), value) {
                Ok(h) => h,
                Err(e) => {
                    if wal.blob.is_poisoned() {
                        poison(&mut wal, &e);
                    }
                    return Err(e);
                }
            };
            wal.blob_unsynced = true;
            inner
                .stats
                .blob_bytes
                .fetch_add((op.key().len() + value.len()) as u64, Ordering::Relaxed);
            let stored = entry::encode_separated(&view.attrs, &handle);
            out.push_stored(Kind::ValueHandle, op.keyspace(), op.key(), &stored)?;
        }
        *batch = Cow::Owned(out);
    }
    // The group's values reach the OS in one write, before any WAL record naming them.
    if let Err(e) = wal.blob.hand_over() {
        poison(&mut wal, &e);
        return Err(e);
    }
    mem.attach_blob_files(wal.blob.take_sealed());
    drop(wal);
    for m in members.iter_mut() {
        if let Member::Apply { batch, .. } = m {
            if batch.encoded_len() > wal::MAX_PAYLOAD_LEN {
                *m = Member::Refused(Error::invalid(format!(
                    "write batch of {} bytes exceeds the limit of {} bytes",
                    batch.encoded_len(),
                    wal::MAX_PAYLOAD_LEN
                )));
            }
        }
    }
    Ok(())
}
