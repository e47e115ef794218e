//! A group member as the leader applies it: a queued batch (its increments resolved), the
//! Put an increment became, or a member refused before it got a seqno.

use std::borrow::Cow;

use smallvec::SmallVec;

use crate::batch::WriteBatch;
use crate::db::commit_queue::Counters;
use crate::db::commit_queue::GROUP_INLINE;
use crate::error::Error;
use crate::options::Durability;
use crate::vlog::BlobFileMeta;

/// A group member as the leader applies it.
pub(super) enum Member<'a> {
    /// Logged and inserted: a queued batch, or the Put an increment became.
    Apply {
        batch: Cow<'a, WriteBatch>,
        durability: Durability,
        /// The new values of the member's increments, in order.
        counters: Counters,
        /// Blob files the member's values were streamed to (see `Job::Write`).
        blob_files: &'a [BlobFileMeta],
    },
    /// Refused before it got a seqno; nothing of it is written.
    Refused(Error),
}

/// What the leader applies for each member of a group, in order (see `lead::resolve`).
pub(super) type Members<'a> = SmallVec<[Member<'a>; GROUP_INLINE]>;
