//! [`ScanCursor`]: a scan of one keyspace in a key range, in one direction, that lends
//! each pair instead of allocating it.
//!
//! It reads exactly what [`super::Iter`] reads over the same range at the same point (one
//! super version, one seqno, expiry judged at one instant, tombstones, range tombstones,
//! merge operands, separated values), through the same `Visible` walk, and differs only in
//! where the bytes of each pair live.
//!
//! Invariants:
//! 1. The slices [`ScanCursor::next`] returns stay valid until the next call (the borrow
//!    checker enforces it: they borrow the cursor mutably).
//! 2. The key is in a buffer the walk reuses. The value of a forward scan whose newest
//!    visible version is an inline value (with or without attributes) points into the
//!    block or memtable entry it was read from; a reverse scan copies it into a reused
//!    buffer (its walk has already moved past it). Only a separated value (read from the
//!    value log into a reused buffer) and a merged value (built by the merge operator) are
//!    made per pair; nothing else allocates per pair once the buffers have grown.
//! 3. A separated value is read only for a pair that is returned.
//! 4. After an `Err`, every later call returns `Ok(None)`.

use std::ops::Bound;
use std::sync::Arc;

use super::read_path::ReadPath;
use super::scan::ScanAt;
use super::super_version::ReadAt;
use crate::entry::Body;
use crate::error::Result;
use crate::iter::visible::Visible;
use crate::key::KeyspaceId;

/// A scan of the pairs of a keyspace in a key range, at one snapshot, ascending or
/// descending, that lends each pair: [`ScanCursor::next`] returns `(&key, &value)`
/// borrowed from the cursor, **valid until the next call to `next`** (or until the cursor
/// is dropped). Copy what you keep.
///
/// It yields exactly what [`Keyspace::range`](super::Keyspace::range) (or `.rev()` of it)
/// yields over the same range at the same point, but allocates nothing per pair in the
/// common case: a forward scan returns values straight from the table block or memtable
/// entry they are stored in. Only values that must be built go to a buffer the cursor
/// reuses: a value stored in the value log (read only for the pairs returned) and a merged
/// value; a reverse scan copies each value into a reused buffer. Use [`super::Iter`] for
/// owned pairs.
///
/// Made by [`Keyspace::cursor`](super::Keyspace::cursor),
/// [`Keyspace::cursor_rev`](super::Keyspace::cursor_rev), and the same methods of
/// [`Readable`](super::Readable) (a [`Snapshot`](super::Snapshot)'s read as of it).
/// Entries that expired before the scan began are skipped (and hide older versions of
/// their key). A snapshot of another store or a dropped keyspace is the first call's
/// `Err`. After an `Err`, `next` returns `Ok(None)`.
///
/// ```
/// use cairn::{Db, Options};
/// # fn main() -> cairn::Result<()> {
/// # let dir = tempfile::tempdir().map_err(|e| cairn::Error::InvalidArgument(e.to_string()))?;
/// let db = Db::open(dir.path(), Options::default())?;
/// let ks = db.keyspace("fruit")?;
/// ks.insert("apple", "red")?;
/// ks.insert("banana", "yellow")?;
/// ks.insert("cherry", "dark red")?;
///
/// let mut cursor = ks.cursor("b"..);
/// let mut total = 0;
/// while let Some((key, value)) = cursor.next()? {
///     // `key` and `value` are borrowed until the next call.
///     total += key.len() + value.len();
/// }
/// assert_eq!(total, "banana".len() + "yellow".len() + "cherry".len() + "dark red".len());
///
/// let mut back = ks.cursor_rev::<&str, _>(..);
/// assert_eq!(back.next()?, Some((&b"cherry"[..], &b"dark red"[..])));
/// # db.close()
/// # }
/// ```
pub struct ScanCursor {
    at: ScanAt,
    /// The walk, made by the first call.
    side: Option<Visible>,
    reverse: bool,
    done: bool,
    /// The value of the current pair when it is not read in place (a separated value).
    value: Vec<u8>,
}

impl std::fmt::Debug for ScanCursor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScanCursor")
            .field("keyspace", &self.at.keyspace)
            .field("seqno", &self.at.seqno)
            .field("reverse", &self.reverse)
            .field("done", &self.done)
            .finish()
    }
}

impl ScanCursor {
    pub(crate) fn new(
        reads: &Arc<ReadPath>,
        keyspace: KeyspaceId,
        (lo, hi): (Bound<Vec<u8>>, Bound<Vec<u8>>),
        snapshot: Result<Option<ReadAt>>,
        reverse: bool,
    ) -> ScanCursor {
        ScanCursor {
            at: ScanAt::new(reads, keyspace, lo, hi, snapshot),
            side: None,
            reverse,
            done: false,
            value: Vec::new(),
        }
    }

    /// True if the cursor walks the range in descending key order.
    pub fn is_reverse(&self) -> bool {
        self.reverse
    }

    /// The next pair, or `None` at the end of the range. The slices borrow the cursor:
    /// they stay valid until the next call.
    ///
    /// # Errors
    /// `InvalidArgument` for a snapshot of another store or a dropped keyspace (on the
    /// first call); `Corruption`, `Io` from the tables and blob files read;
    /// `InvalidArgument` or `MergeFailed` for merge operands the keyspace's operator
    /// cannot merge. After an error every call returns `Ok(None)`.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> Result<Option<(&[u8], &[u8])>> {
        match self.advance() {
            Ok(true) => {}
            Ok(false) => {
                self.done = true;
                return Ok(None);
            }
            Err(e) => {
                self.done = true;
                return Err(e);
            }
        }
        let ScanCursor {
            at,
            side,
            done,
            value,
            ..
        } = self;
        let Some(side) = side.as_ref() else {
            *done = true;
            return Ok(None);
        };
        if let Some(pair) = side.plain_pair() {
            return Ok(Some(pair));
        }
        let handle = match side.entry() {
            Ok((_, view)) => match view.body {
                Body::Inline(v) => return Ok(Some((side.key(), v))),
                Body::Handle(h) => h,
            },
            Err(e) => {
                *done = true;
                return Err(e);
            }
        };
        if let Err(e) = at.reads.blobs.read_into(&handle, value) {
            *done = true;
            return Err(e);
        }
        Ok(Some((side.key(), value.as_slice())))
    }

    /// Moves the walk to its next key: true if there is one.
    fn advance(&mut self) -> Result<bool> {
        if self.done {
            return Ok(false);
        }
        if let Some(e) = self.at.take_error() {
            return Err(e);
        }
        if self.side.is_none() {
            self.side = Some(self.at.side()?);
        }
        let Some(side) = self.side.as_mut() else {
            return Ok(false);
        };
        if self.reverse {
            side.advance_backward()
        } else {
            side.advance_forward()
        }
    }
}
