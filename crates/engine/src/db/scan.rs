//! Scans: [`Iter`], [`HeadIter`] and [`EntryIter`], double-ended iterators over one
//! keyspace in a key range, at one snapshot and one expiry instant.
//!
//! Invariants:
//! 1. A scan holds its super version for its whole life, so every table and blob file it
//!    may read stays on disk, and it reads at one seqno, so it never sees part of a batch.
//! 2. The front and the back never cross or repeat a key: each side remembers the last
//!    key it yielded, and a side that reaches the other's last key ends the scan.
//! 3. A separated value is read only for an item that is returned (`Extract::resolve`).

use std::ops::Bound;
use std::sync::Arc;

use super::read::merged;
use super::read_path::ReadPath;
use super::super_version::{ReadAt, SuperVersion};
use crate::attrs::Head;
use crate::error::Result;
use crate::iter::visible::{Bounds, Extract, Lazy, Visible};
use crate::key::{KeyspaceId, SeqNo};

/// One scan (both directions) of a keyspace at one snapshot and one expiry instant,
/// yielding `(key, T)`; [`Iter`] and [`HeadIter`] wrap it. A snapshot refused by the
/// caller (`Err`, e.g. one of another store) or a dropped keyspace is the scan's first
/// and only item.
struct Scan<T> {
    reads: Arc<ReadPath>,
    sv: Arc<SuperVersion>,
    keyspace: KeyspaceId,
    seqno: SeqNo,
    now_ms: u64,
    bounds: Bounds,
    front: Option<Visible<T>>,
    back: Option<Visible<T>>,
    /// The last key each side yielded (buffers reused; valid once that side started), so
    /// the two sides never cross.
    front_last: Vec<u8>,
    back_last: Vec<u8>,
    done: bool,
    /// Reported by the first call (the keyspace was dropped before the scan began).
    error: Option<crate::Error>,
}

impl<T: Extract> Scan<T> {
    fn new(
        reads: &Arc<ReadPath>,
        keyspace: KeyspaceId,
        lo: Bound<Vec<u8>>,
        hi: Bound<Vec<u8>>,
        snapshot: Result<Option<ReadAt>>,
    ) -> Scan<T> {
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
        Scan {
            reads: Arc::clone(reads),
            sv,
            keyspace,
            seqno,
            now_ms: reads.now_ms(),
            bounds: Bounds { lo, hi },
            front: None,
            back: None,
            front_last: Vec::new(),
            back_last: Vec::new(),
            done: false,
            error,
        }
    }

    fn side(&mut self, front: bool) -> Result<&mut Visible<T>> {
        let slot = if front {
            &mut self.front
        } else {
            &mut self.back
        };
        if slot.is_none() {
            let cursor = merged(&self.reads, &self.sv, self.keyspace, false)?;
            let range_dels = self
                .sv
                .range_tombstones(&self.reads.tables, self.keyspace)?;
            *slot = Some(
                Visible::new(
                    Box::new(cursor),
                    self.seqno,
                    self.now_ms,
                    self.bounds.clone(),
                )
                .with_range_tombstones(range_dels)
                .with_merge(self.reads.resolver(self.keyspace)),
            );
        }
        match slot {
            Some(v) => Ok(v),
            None => Err(crate::Error::invalid("scan side not initialised")),
        }
    }

    /// The next item of one side, its value resolved (a separated value is read only
    /// here, for an item that is returned).
    fn step(&mut self, front: bool) -> Option<Result<(Vec<u8>, T::Out)>> {
        self.step_lazy(front)
            .map(|r| r.and_then(|(k, item)| Ok((k, item.resolve(&self.reads.blobs)?))))
    }

    fn step_lazy(&mut self, front: bool) -> Option<Result<(Vec<u8>, T)>> {
        if self.done {
            return None;
        }
        if let Some(e) = self.error.take() {
            self.done = true;
            return Some(Err(e));
        }
        let next = self.side(front).and_then(|v| {
            if front {
                v.next_forward()
            } else {
                v.next_backward()
            }
        });
        match next {
            Ok(Some((k, v))) => {
                let crossed = if front {
                    self.back.is_some() && k >= self.back_last
                } else {
                    self.front.is_some() && k <= self.front_last
                };
                if crossed {
                    self.done = true;
                    return None;
                }
                let last = if front {
                    &mut self.front_last
                } else {
                    &mut self.back_last
                };
                last.clear();
                last.extend_from_slice(&k);
                Some(Ok((k, v)))
            }
            Ok(None) => {
                self.done = true;
                None
            }
            Err(e) => {
                self.done = true;
                Some(Err(e))
            }
        }
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
                    .field("keyspace", &self.scan.keyspace)
                    .field("seqno", &self.scan.seqno)
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
