//! Scans: [`Iter`], [`HeadIter`] and [`EntryIter`], double-ended iterators over one
//! keyspace in a key range, at one snapshot and one expiry instant.
//!
//! Invariants:
//! 1. A scan holds its super version for its whole life, so every table and blob file it
//!    may read stays on disk, and it reads at one seqno, so it never sees part of a batch.
//! 2. The front and the back never cross or repeat a key: each side stands on the last
//!    key it yielded, and a side that reaches the other's last key ends the scan.
//! 3. A separated value is read only for an item that is returned (`Extract::resolve`).
//! 4. After an error (the first call's, a source's, a blob read's) nothing more.
//!
//! [`ScanAt`] (what a scan reads) is shared with the borrowing
//! [`super::scan_cursor::ScanCursor`]; both walk it through `Visible`.

use std::marker::PhantomData;
use std::ops::Bound;
use std::sync::Arc;

use super::read::merged;
use super::read_path::ReadPath;
use super::super_version::{ReadAt, SuperVersion};
use crate::attrs::Head;
use crate::error::Result;
use crate::iter::visible::{Bounds, Extract, Lazy, Visible};
use crate::key::{KeyspaceId, SeqNo};

/// What a scan reads: one keyspace in a key range, at one super version, seqno and
/// expiry instant. [`Scan`] and [`super::scan_cursor::ScanCursor`] walk it.
pub(super) struct ScanAt {
    pub(super) reads: Arc<ReadPath>,
    sv: Arc<SuperVersion>,
    pub(super) keyspace: KeyspaceId,
    pub(super) seqno: SeqNo,
    now_ms: u64,
    bounds: Bounds,
    /// Reported by the first call: the caller refused the snapshot (`Err`, e.g. one of
    /// another store), or the keyspace was dropped before the scan began.
    error: Option<crate::Error>,
}

impl ScanAt {
    pub(super) fn new(
        reads: &Arc<ReadPath>,
        keyspace: KeyspaceId,
        lo: Bound<Vec<u8>>,
        hi: Bound<Vec<u8>>,
        snapshot: Result<Option<ReadAt>>,
    ) -> ScanAt {
        let (snapshot, refused) = match snapshot {
            Ok(at) => (at, None),
            Err(e) => (None, Some(e)),
        };
        let (sv, seqno) = reads.acquire(snapshot.as_ref());
        let error = refused.or_else(|| {
            sv.version
                .keyspace(keyspace)
                .is_none()
                .then(|| crate::Error::invalid("the keyspace has been dropped"))
        });
        ScanAt {
            reads: Arc::clone(reads),
            sv,
            keyspace,
            seqno,
            now_ms: reads.now_ms(),
            bounds: Bounds { lo, hi },
            error,
        }
    }

    /// The error the scan must report first, once.
    pub(super) fn take_error(&mut self) -> Option<crate::Error> {
        self.error.take()
    }

    /// A new walk of the range in one direction (nothing read until its first step).
    ///
    /// # Errors
    /// `Corruption`, `Io` from opening the sources or reading range tombstones.
    pub(super) fn side(&self) -> Result<Visible> {
        let cursor = merged(&self.reads, &self.sv, self.keyspace, false)?;
        let range_dels = self
            .sv
            .range_tombstones(&self.reads.tables, self.keyspace)?;
        Ok(
            Visible::new(cursor, self.seqno, self.now_ms, self.bounds.clone())
                .with_range_tombstones(range_dels)
                .with_merge(self.reads.resolver(self.keyspace)),
        )
    }
}

/// One scan (both directions) of a keyspace at one snapshot and one expiry instant,
/// yielding `(key, T)`; [`Iter`] and [`HeadIter`] wrap it. A snapshot refused by the
/// caller (`Err`, e.g. one of another store) or a dropped keyspace is the scan's first
/// and only item.
struct Scan<T> {
    at: ScanAt,
    /// The two sides, each started by its first step. While the scan goes on, a started
    /// side stands on the last key it yielded (`Visible::key`), so the other side can
    /// check it does not cross it.
    front: Option<Visible>,
    back: Option<Visible>,
    done: bool,
    _item: PhantomData<fn() -> T>,
}

impl<T: Extract> Scan<T> {
    fn new(
        reads: &Arc<ReadPath>,
        keyspace: KeyspaceId,
        lo: Bound<Vec<u8>>,
        hi: Bound<Vec<u8>>,
        snapshot: Result<Option<ReadAt>>,
    ) -> Scan<T> {
        Scan {
            at: ScanAt::new(reads, keyspace, lo, hi, snapshot),
            front: None,
            back: None,
            done: false,
            _item: PhantomData,
        }
    }

    /// The next item of one side, its value resolved (a separated value is read only
    /// here, for an item that is returned). After an error, nothing more.
    fn step(&mut self, front: bool) -> Option<Result<(Vec<u8>, T::Out)>> {
        if self.done {
            return None;
        }
        let out = match self.advance(front) {
            Ok(Some(side)) => side
                .owned::<T>()
                .and_then(|(k, item)| Ok((k, item.resolve(&self.at.reads.blobs)?))),
            Ok(None) => {
                self.done = true;
                return None;
            }
            Err(e) => Err(e),
        };
        if out.is_err() {
            self.done = true;
        }
        Some(out)
    }

    /// Moves one side to its next key; `None` once the scan is over (that side ran out,
    /// or met the key the other side last yielded: invariant 2).
    fn advance(&mut self, front: bool) -> Result<Option<&Visible>> {
        if let Some(e) = self.at.take_error() {
            return Err(e);
        }
        let (mine, other) = if front {
            (&mut self.front, &self.back)
        } else {
            (&mut self.back, &self.front)
        };
        if mine.is_none() {
            *mine = Some(self.at.side()?);
        }
        let Some(side) = mine.as_mut() else {
            return Ok(None);
        };
        let found = if front {
            side.advance_forward()?
        } else {
            side.advance_backward()?
        };
        let crossed = other.as_ref().is_some_and(|o| {
            if front {
                side.key() >= o.key()
            } else {
                side.key() <= o.key()
            }
        });
        Ok((found && !crossed).then_some(&*side))
    }
}

/// Defines a public, double-ended scan iterator over a [`Scan`] that extracts `$extract`:
/// its `Debug`, its constructor, and `next`/`next_back`, which turn each scanned item into
/// the public item with `$map`.
macro_rules! scan_iter {
    ($(#[$doc:meta])* $name:ident, $extract:ty, $item:ty, $map:expr) => {
        $(#[$doc])*
        pub struct $name {
            scan: Scan<$extract>,
        }

        impl std::fmt::Debug for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.debug_struct(stringify!($name))
                    .field("keyspace", &self.scan.at.keyspace)
                    .field("seqno", &self.scan.at.seqno)
                    .field("done", &self.scan.done)
                    .finish()
            }
        }

        impl $name {
            pub(crate) fn new(
                reads: &Arc<ReadPath>,
                keyspace: KeyspaceId,
                lo: Bound<Vec<u8>>,
                hi: Bound<Vec<u8>>,
                snapshot: Result<Option<ReadAt>>,
            ) -> $name {
                $name {
                    scan: Scan::new(reads, keyspace, lo, hi, snapshot),
                }
            }
        }

        impl Iterator for $name {
            type Item = Result<$item>;

            fn next(&mut self) -> Option<Self::Item> {
                self.scan.step(true).map(|r| r.map($map))
            }
        }

        impl DoubleEndedIterator for $name {
            fn next_back(&mut self) -> Option<Self::Item> {
                self.scan.step(false).map(|r| r.map($map))
            }
        }
    };
}

scan_iter!(
    /// A double-ended iterator over the pairs of a keyspace in a key range, at one snapshot.
    ///
    /// Yields `Result<(key, value)>`; after an `Err` it yields nothing more. The front and
    /// the back may be consumed alternately; they never cross or repeat a key. Entries that
    /// expired before the scan began are skipped (and hide older versions of their key).
    Iter,
    Lazy,
    (Vec<u8>, Vec<u8>),
    std::convert::identity
);

scan_iter!(
    /// A double-ended iterator over the [`Head`]s of a keyspace in a key range, at one
    /// snapshot: like [`Iter`], but it never copies values (only keys and metadata).
    HeadIter,
    Head,
    (Vec<u8>, Head),
    std::convert::identity
);

scan_iter!(
    /// A double-ended iterator over whole entries of a keyspace in a key range, at one
    /// snapshot: each item is the key, the value and its [`Head`] (tag, metadata, expiry,
    /// seqno). Used where an entry must be copied with its attributes (dump, export).
    EntryIter,
    (Lazy, Head),
    (Vec<u8>, Vec<u8>, Head),
    |(k, (v, h))| (k, v, h)
);
