//! [`Keyspace`]: a named, ordered map inside a store, and [`Batch`]: writes to any
//! keyspaces applied atomically.
//!
//! A keyspace handle is cheap to clone; after the keyspace is dropped every call through
//! an old handle fails with `InvalidArgument` (reads of a dropped keyspace never return
//! data from a later keyspace of the same name: each keyspace has its own id).

use std::ops::{Bound, RangeBounds};
use std::sync::Arc;
use std::time::Duration;

use super::commit_queue::Increments;
use super::scan_cursor::ScanCursor;
use super::snapshot::Snapshot;
use super::super_version::ReadAt;
use super::{read, scan, write, Db};
use crate::attrs::{EntryOptions, Head, Meta};
use crate::batch::WriteBatch;
use crate::error::{Error, Result};
use crate::iter::visible::Bounds;
use crate::key::KeyspaceId;
use crate::options::Durability;
use crate::rangedel;
use crate::reach::{InMemory, Reach};

/// A named keyspace of a [`Db`]: an ordered map from byte keys to byte values.
///
/// Keys are at most 65,535 bytes and values at most 32 MiB, or `u32::MAX` bytes in a
/// keyspace that separates them into the value log ([`crate::KeyspaceOptions`]); larger
/// values are refused with `InvalidArgument`. Both may be empty. A batch must fit in one
/// 256 MiB log record (separated values count as their handles).
#[derive(Clone)]
pub struct Keyspace {
    pub(crate) db: Db,
    pub(crate) id: KeyspaceId,
    pub(crate) name: Arc<str>,
}

impl std::fmt::Debug for Keyspace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Keyspace")
            .field("name", &self.name)
            .field("id", &self.id.0)
            .finish()
    }
}

fn to_bound(b: Bound<&[u8]>) -> Bound<Vec<u8>> {
    match b {
        Bound::Included(k) => Bound::Included(k.to_vec()),
        Bound::Excluded(k) => Bound::Excluded(k.to_vec()),
        Bound::Unbounded => Bound::Unbounded,
    }
}

/// The owned bounds of `range`.
pub(crate) fn bounds<K: AsRef<[u8]>, R: RangeBounds<K>>(
    range: R,
) -> (Bound<Vec<u8>>, Bound<Vec<u8>>) {
    (
        to_bound(range.start_bound().map(|k| k.as_ref())),
        to_bound(range.end_bound().map(|k| k.as_ref())),
    )
}

/// The owned bounds of the keys starting with `prefix`.
pub(crate) fn prefix_bounds(prefix: &[u8]) -> (Bound<Vec<u8>>, Bound<Vec<u8>>) {
    let b = Bounds::prefix(prefix);
    (b.lo, b.hi)
}

impl Keyspace {
    pub(crate) fn new(db: &Db, id: KeyspaceId, name: &str) -> Keyspace {
        Keyspace {
            db: db.clone(),
            id,
            name: Arc::from(name),
        }
    }

    /// The keyspace's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The separation threshold of the keyspace now: its own, else the store's.
    #[cfg(feature = "transfer")]
    pub(crate) fn blob_threshold(&self) -> Option<u64> {
        let inner = &self.db.inner;
        inner.blob_threshold(&inner.reads.supers.version(), self.id)
    }

    fn check_live(&self) -> Result<()> {
        let live = self
            .db
            .inner
            .reads
            .supers
            .version()
            .keyspace(self.id)
            .is_some();
        if live {
            Ok(())
        } else {
            Err(Error::invalid(format!(
                "keyspace {:?} has been dropped",
                self.name
            )))
        }
    }

    /// The seqno `snapshot` reads at, if it was taken from this keyspace's store.
    ///
    /// # Errors
    /// `InvalidArgument` for a snapshot of another store: its seqno means nothing here.
    pub(crate) fn at(&self, snapshot: &Snapshot) -> Result<Option<ReadAt>> {
        if snapshot.pin.is_in(&self.db.inner.snapshots) {
            Ok(Some(snapshot.read_at()))
        } else {
            Err(Error::invalid(format!(
                "the snapshot was taken from another store than the one of keyspace {:?} ({})",
                self.name,
                self.db.inner.dir.display()
            )))
        }
    }

    /// The latest state of `db` (`None`: read now), if `db` is this keyspace's store.
    ///
    /// # Errors
    /// `InvalidArgument` for another store.
    pub(crate) fn latest_of(&self, db: &Db) -> Result<Option<ReadAt>> {
        if Arc::ptr_eq(&db.inner, &self.db.inner) {
            Ok(None)
        } else {
            Err(Error::invalid(format!(
                "keyspace {:?} belongs to another store than {}",
                self.name,
                db.inner.dir.display()
            )))
        }
    }

    /// Sets `key` to `value` with the store's default durability.
    ///
    /// # Errors
    /// `InvalidArgument` for oversized keys or values or a dropped keyspace; `Io`,
    /// `Poisoned` if the log cannot be written.
    pub fn insert(&self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) -> Result<()> {
        self.insert_with(key, value, None)
    }

    /// Sets `key` to `value` with the given durability (`None`: the store's default).
    ///
    /// # Errors
    /// As [`Keyspace::insert`].
    pub fn insert_with(
        &self,
        key: impl AsRef<[u8]>,
        value: impl AsRef<[u8]>,
        durability: Option<Durability>,
    ) -> Result<()> {
        let (key, value) = (key.as_ref(), value.as_ref());
        let mut batch = WriteBatch::for_one(key.len().saturating_add(value.len()));
        batch.put(self.id, key, value)?;
        self.commit(batch, durability)
    }

    /// Sets `key` to `value` as [`Keyspace::insert_with`] does, if that needs no waiting;
    /// returns `false`, having written nothing, where the write would wait: for an fsync
    /// (`Sync` durability, or the log thread's periodic one), for another writer (a write
    /// group being committed, or writers queued for the next), for the memtable to be
    /// switched or for a stall or slowdown to pass, for room in the `Async` queue, or for
    /// the value log (a value this keyspace separates). A write that goes in is handed to
    /// the OS as its durability asks (a copy into the page cache for `Buffered` and
    /// `Periodic`), so it costs what a write from memory costs.
    ///
    /// For a caller that holds a lock of its own which other threads need while they wait
    /// (a language runtime's global lock): it writes here while holding it, and only
    /// where this returns `false` releases it around [`Keyspace::insert_with`], so a
    /// write that waits never holds up the others and one that does not wait pays no
    /// hand-off of the lock.
    ///
    /// ```
    /// use cairn::{Db, Options};
    ///
    /// # fn main() -> cairn::Result<()> {
    /// # let dir = tempfile::tempdir().map_err(|e| cairn::Error::InvalidArgument(e.to_string()))?;
    /// let db = Db::open(dir.path(), Options::default())?;
    /// let ks = db.keyspace("default")?;
    /// if !ks.try_insert_with("k", "v", None)? {
    ///     // It would wait: write the usual way (after releasing the caller's lock).
    ///     ks.insert_with("k", "v", None)?;
    /// }
    /// assert_eq!(ks.get("k")?, Some(b"v".to_vec()));
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// As [`Keyspace::insert`].
    pub fn try_insert_with(
        &self,
        key: impl AsRef<[u8]>,
        value: impl AsRef<[u8]>,
        durability: Option<Durability>,
    ) -> Result<bool> {
        let (key, value) = (key.as_ref(), value.as_ref());
        let mut batch = WriteBatch::for_one(key.len().saturating_add(value.len()));
        batch.put(self.id, key, value)?;
        self.try_commit(batch, durability)
    }

    /// Sets `key` to `value` with the attributes and durability of `options`: a type tag
    /// and metadata (read back by [`Keyspace::head`] without the value) and an expiry,
    /// after which the entry reads as removed. [`Keyspace::get`] and scans return the
    /// plain value.
    ///
    /// ```
    /// use std::time::Duration;
    /// use cairn::{Db, EntryOptions, Meta, Options};
    ///
    /// # fn main() -> cairn::Result<()> {
    /// # let dir = tempfile::tempdir().map_err(|e| cairn::Error::InvalidArgument(e.to_string()))?;
    /// let db = Db::open(dir.path(), Options::default())?;
    /// let blobs = db.keyspace("blobs")?;
    /// let opts = EntryOptions::new()
    ///     .meta(Meta::new(1, "image/png"))
    ///     .ttl(Duration::from_secs(3600));
    /// blobs.insert_entry("logo", [0x89, b'P', b'N', b'G'], &opts)?;
    /// assert_eq!(blobs.get("logo")?, Some(vec![0x89, b'P', b'N', b'G']));
    /// let head = blobs.head("logo")?.expect("present");
    /// assert_eq!((head.value_len, head.tag, head.meta.as_slice()), (4, 1, &b"image/png"[..]));
    /// assert!(head.expires_at.is_some());
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// As [`Keyspace::insert`]; `InvalidArgument` for metadata over 4 KiB
    /// ([`crate::MAX_META_LEN`]) or both a ttl and an expiry. An expiry in the past is
    /// allowed (the entry is invisible at once and hides older versions).
    pub fn insert_entry(
        &self,
        key: impl AsRef<[u8]>,
        value: impl AsRef<[u8]>,
        options: &EntryOptions,
    ) -> Result<()> {
        let (key, value) = (key.as_ref(), value.as_ref());
        let now = self.db.inner.options.clock.now_ms();
        let attrs = options.attrs(now)?;
        let payload = key.len() + value.len() + attrs.encoded_len();
        let mut batch = WriteBatch::for_one(payload);
        batch.put_attrs(self.id, key, &attrs, value)?;
        self.commit(batch, options.durability)
    }

    /// Sets `key` to `value` with a type tag and metadata; see [`Keyspace::insert_entry`].
    ///
    /// # Errors
    /// As [`Keyspace::insert_entry`].
    pub fn insert_meta(
        &self,
        key: impl AsRef<[u8]>,
        value: impl AsRef<[u8]>,
        meta: Meta,
    ) -> Result<()> {
        self.insert_entry(key, value, &EntryOptions::new().meta(meta))
    }

    /// Sets `key` to `value` for `ttl` (by the store's [`crate::Clock`]); afterwards the
    /// key reads as removed. See [`Keyspace::insert_entry`].
    ///
    /// # Errors
    /// As [`Keyspace::insert_entry`].
    pub fn insert_ttl(
        &self,
        key: impl AsRef<[u8]>,
        value: impl AsRef<[u8]>,
        ttl: Duration,
    ) -> Result<()> {
        self.insert_entry(key, value, &EntryOptions::new().ttl(ttl))
    }

    /// Removes `key` (a no-op if it is absent).
    ///
    /// # Errors
    /// As [`Keyspace::insert`].
    pub fn remove(&self, key: impl AsRef<[u8]>) -> Result<()> {
        self.remove_with(key, None)
    }

    /// Removes `key` with the given durability (`None`: the store's default).
    ///
    /// # Errors
    /// As [`Keyspace::insert`].
    pub fn remove_with(&self, key: impl AsRef<[u8]>, durability: Option<Durability>) -> Result<()> {
        let key = key.as_ref();
        let mut batch = WriteBatch::for_one(key.len());
        batch.remove(self.id, key)?;
        self.commit(batch, durability)
    }

    /// Removes `key` as [`Keyspace::remove_with`] does, if that needs no waiting; `false`,
    /// having written nothing, where it would wait (see [`Keyspace::try_insert_with`]).
    ///
    /// # Errors
    /// As [`Keyspace::insert`].
    pub fn try_remove_with(
        &self,
        key: impl AsRef<[u8]>,
        durability: Option<Durability>,
    ) -> Result<bool> {
        let key = key.as_ref();
        let mut batch = WriteBatch::for_one(key.len());
        batch.remove(self.id, key)?;
        self.try_commit(batch, durability)
    }

    /// Merges `operand` into the value of `key` with the keyspace's merge operator
    /// ([`crate::KeyspaceOptions::merge_operator`]), with the store's default durability.
    /// Nothing is read: the operand is written, and reads (and compaction) combine it with
    /// the older versions. See [`crate::MergeOperator`] for the rules.
    ///
    /// # Errors
    /// `InvalidArgument` if the keyspace has no merge operator, the operator refuses the
    /// operand ([`crate::MergeOperator::check_operand`]), or as [`Keyspace::insert`].
    pub fn merge(&self, key: impl AsRef<[u8]>, operand: impl AsRef<[u8]>) -> Result<()> {
        self.merge_with(key, operand, None)
    }

    /// As [`Keyspace::merge`], with the given durability (`None`: the store's default).
    ///
    /// # Errors
    /// As [`Keyspace::merge`].
    pub fn merge_with(
        &self,
        key: impl AsRef<[u8]>,
        operand: impl AsRef<[u8]>,
        durability: Option<Durability>,
    ) -> Result<()> {
        let (key, operand) = (key.as_ref(), operand.as_ref());
        self.check_merge(key, operand)?;
        let mut batch = WriteBatch::for_one(key.len().saturating_add(operand.len()));
        batch.merge(self.id, key, operand)?;
        self.commit(batch, durability)
    }

    /// Checks that a merge of `operand` into `key` may be written: the keyspace has a
    /// merge operator, which accepts the operand.
    ///
    /// # Errors
    /// `InvalidArgument` otherwise.
    pub(crate) fn check_merge(&self, key: &[u8], operand: &[u8]) -> Result<()> {
        let operator = self.db.inner.reads.merge.get(self.id).ok_or_else(|| {
            Error::invalid(format!(
                "keyspace {:?} has no merge operator; open it with \
                 KeyspaceOptions::merge_operator to write merges",
                self.name
            ))
        })?;
        operator.check_operand(key, operand).map_err(|why| {
            Error::invalid(format!(
                "merge operator {:?} of keyspace {:?} refused the operand: {why}",
                operator.name(),
                self.name
            ))
        })
    }

    /// Removes every key in `range` with one write, whatever the number of keys: a range
    /// tombstone, applied by reads at once and by compaction, which reclaims the space.
    /// Any bounds work; an empty range is a no-op. Snapshots taken before still see the
    /// keys.
    ///
    /// ```
    /// use cairn::Readable;
    /// # fn main() -> cairn::Result<()> {
    /// # let dir = tempfile::tempdir().map_err(|e| cairn::Error::InvalidArgument(e.to_string()))?;
    /// let db = cairn::Db::open(dir.path(), cairn::Options::default())?;
    /// let ks = db.keyspace("logs")?;
    /// for day in ["2024-01-01", "2024-01-02", "2024-02-01"] {
    ///     ks.insert(day, "...")?;
    /// }
    /// let before = db.snapshot();
    /// ks.remove_range("2024-01-01"..="2024-01-31")?;
    /// assert_eq!(ks.iter().count(), 1);
    /// assert_eq!(before.iter(&ks).count(), 3);
    /// ks.remove_prefix("2024-")?;
    /// assert!(ks.first_key_value()?.is_none());
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// `InvalidArgument` if a normalised bound passes the key limit (an excluded start or
    /// an included end of 65,535 bytes) or the keyspace was dropped; as
    /// [`Keyspace::insert`] otherwise.
    pub fn remove_range<K: AsRef<[u8]>, R: RangeBounds<K>>(&self, range: R) -> Result<()> {
        self.remove_range_with(range, None)
    }

    /// [`Keyspace::remove_range`] with the given durability (`None`: the store's default).
    ///
    /// # Errors
    /// As [`Keyspace::remove_range`].
    pub fn remove_range_with<K: AsRef<[u8]>, R: RangeBounds<K>>(
        &self,
        range: R,
        durability: Option<Durability>,
    ) -> Result<()> {
        let Some((start, end)) = rangedel::normalize(&range)? else {
            return self.check_live();
        };
        let mut batch = WriteBatch::new();
        batch.remove_range(self.id, &start, &end)?;
        self.commit(batch, durability)
    }

    /// Removes every key that starts with `prefix` (all keys for an empty prefix) with one
    /// write; see [`Keyspace::remove_range`].
    ///
    /// # Errors
    /// As [`Keyspace::remove_range`].
    pub fn remove_prefix(&self, prefix: impl AsRef<[u8]>) -> Result<()> {
        let (start, end) = rangedel::prefix_range(prefix.as_ref())?;
        let mut batch = WriteBatch::new();
        batch.remove_range(self.id, &start, &end)?;
        self.commit(batch, None)
    }

    /// Adds `delta` to the counter at `key` and returns its new value, atomically with
    /// respect to every other write to the store from any thread (no other write can come
    /// between the read of the counter and the write of its new value).
    ///
    /// A counter's value is the canonical decimal text of an `i64` (`b"42"`, `b"-5"`; no
    /// `+`, no leading zeros), so [`Keyspace::get`] returns it as text and
    /// [`Keyspace::insert`] can set it. A missing key counts as 0. The new value is
    /// written as a plain value with the store's default durability; concurrent `Sync`
    /// counter updates share fsyncs like other writes.
    ///
    /// ```
    /// # use cairn::{Db, Options};
    /// # fn main() -> cairn::Result<()> {
    /// # let dir = tempfile::tempdir().map_err(|e| cairn::Error::InvalidArgument(e.to_string()))?;
    /// let db = Db::open(dir.path().join("store"), Options::default())?;
    /// let hits = db.keyspace("hits")?;
    /// assert_eq!(hits.incr("/home", 1)?, 1);
    /// assert_eq!(hits.incr("/home", 41)?, 42);
    /// assert_eq!(hits.decr("/home", 50)?, -8);
    /// assert_eq!(hits.get("/home")?, Some(b"-8".to_vec()));
    /// hits.insert("/about", "not a number")?;
    /// assert!(matches!(hits.incr("/about", 1), Err(cairn::Error::NotACounter { .. })));
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// `NotACounter` if the key holds something else, `CounterOverflow` if the result
    /// leaves the range of `i64`; in both cases nothing is written. Otherwise as
    /// [`Keyspace::insert`], or an error reading the current value (`Corruption`, `Io`).
    pub fn incr(&self, key: impl AsRef<[u8]>, delta: i64) -> Result<i64> {
        self.incr_with(key, delta, None)
    }

    /// [`Keyspace::incr`] with the given durability (`None`: the store's default).
    ///
    /// # Errors
    /// As [`Keyspace::incr`].
    pub fn incr_with(
        &self,
        key: impl AsRef<[u8]>,
        delta: i64,
        durability: Option<Durability>,
    ) -> Result<i64> {
        self.add(key.as_ref(), i128::from(delta), durability)
    }

    /// Subtracts `delta` from the counter at `key` and returns its new value:
    /// `decr(k, d)` is `incr(k, -d)`, and `decr(k, i64::MIN)` adds 2^63 (which succeeds
    /// only from a negative counter).
    ///
    /// # Errors
    /// As [`Keyspace::incr`].
    pub fn decr(&self, key: impl AsRef<[u8]>, delta: i64) -> Result<i64> {
        self.decr_with(key, delta, None)
    }

    /// [`Keyspace::decr`] with the given durability (`None`: the store's default).
    ///
    /// # Errors
    /// As [`Keyspace::incr`].
    pub fn decr_with(
        &self,
        key: impl AsRef<[u8]>,
        delta: i64,
        durability: Option<Durability>,
    ) -> Result<i64> {
        self.add(key.as_ref(), -i128::from(delta), durability)
    }

    fn add(&self, key: &[u8], delta: i128, durability: Option<Durability>) -> Result<i64> {
        self.check_live()?;
        let inner = &self.db.inner;
        write::incr(inner, self.id, key, delta, inner.durability(durability))
    }

    /// As [`Keyspace::commit`] if that needs no waiting (`write::try_write`): whether the
    /// batch went in.
    fn try_commit(&self, batch: WriteBatch, durability: Option<Durability>) -> Result<bool> {
        self.check_live()?;
        let inner = &self.db.inner;
        Ok(write::try_write(inner, batch, inner.durability(durability))?.is_some())
    }

    fn commit(&self, batch: WriteBatch, durability: Option<Durability>) -> Result<()> {
        self.check_live()?;
        let inner = &self.db.inner;
        write::write(inner, batch, inner.durability(durability)).map(|_| ())
    }

    /// Sets `key` to the next `len` bytes read from `source`, with the attributes and
    /// durability of `options`. In a keyspace that separates values of this size (see
    /// [`crate::KeyspaceOptions`]) the value streams into a blob file of its own through a
    /// bounded buffer, so values of hundreds of MiB (up to `u32::MAX` bytes) are written
    /// without holding them in memory; otherwise it is read into memory and written like
    /// [`Keyspace::insert_entry`].
    ///
    /// # Errors
    /// `InvalidArgument` for a key over the limit, `len` above `u32::MAX` (or above
    /// 32 MiB in a keyspace that keeps values inline), or a dropped keyspace; `Io` with op
    /// `"read value"` if `source` fails or ends before `len` bytes (nothing is written);
    /// as [`Keyspace::insert`] otherwise.
    pub fn insert_from(
        &self,
        key: impl AsRef<[u8]>,
        mut source: impl std::io::Read,
        len: u64,
        options: &EntryOptions,
    ) -> Result<()> {
        self.check_live()?;
        super::large::insert_from(
            &self.db.inner,
            self.id,
            key.as_ref(),
            &mut source,
            len,
            options,
        )
    }

    /// A streaming reader of the value of `key`, if present: a separated value is read
    /// from its blob file 64 KiB at a time (each chunk verified), never whole.
    ///
    /// # Errors
    /// As [`Keyspace::get`]; damage found while reading is an `io::Error` of kind
    /// `InvalidData` from the reader.
    pub fn get_reader(&self, key: impl AsRef<[u8]>) -> Result<Option<super::ValueReader>> {
        self.check_live()?;
        super::large::get_reader(&self.db.inner.reads, self.id, key.as_ref())
    }

    /// The value of `key`, if present. [`Snapshot::get`](crate::Readable::get) reads it as
    /// of a snapshot.
    ///
    /// # Errors
    /// `Corruption` if a table holding the key is damaged; `Io`.
    pub fn get(&self, key: impl AsRef<[u8]>) -> Result<Option<Vec<u8>>> {
        self.get_in(key.as_ref(), Ok(None))
    }

    /// The values of `keys`, in order (`None` for an absent key), all read at one point:
    /// a write that lands meanwhile is seen for every key or for none, as if read from one
    /// snapshot, which this call does not need to take. The reads of up to 16 keys at a
    /// time overlap their memory misses in the memtables, so a batch costs less than one
    /// [`Keyspace::get`] per key.
    ///
    /// ```
    /// # fn main() -> cairn::Result<()> {
    /// # let dir = tempfile::tempdir().map_err(|e| cairn::Error::InvalidArgument(e.to_string()))?;
    /// # let db = cairn::Db::open(dir.path(), cairn::Options::default())?;
    /// let ks = db.keyspace("k")?;
    /// ks.insert("a", "1")?;
    /// ks.insert("c", "3")?;
    /// let values = ks.get_many(&["a", "b", "c"])?;
    /// assert_eq!(values, [Some(b"1".to_vec()), None, Some(b"3".to_vec())]);
    /// # db.close()
    /// # }
    /// ```
    ///
    /// # Errors
    /// As [`Keyspace::get`], for the first key whose read fails; no values are returned
    /// then.
    pub fn get_many<K: AsRef<[u8]>>(&self, keys: &[K]) -> Result<Vec<Option<Vec<u8>>>> {
        self.get_many_in(keys, Ok(None))
    }

    /// The value of `key` into `buf`, reusing its allocation: true if the key is present
    /// (its value is then the whole of `buf`), false if absent (`buf` is left empty). A
    /// loop of reads with one buffer allocates nothing for values that fit it.
    /// [`Readable::get_into`](crate::Readable::get_into) reads as of a snapshot.
    ///
    /// ```
    /// # fn main() -> cairn::Result<()> {
    /// # let dir = tempfile::tempdir().map_err(|e| cairn::Error::InvalidArgument(e.to_string()))?;
    /// # let db = cairn::Db::open(dir.path(), cairn::Options::default())?;
    /// let ks = db.keyspace("k")?;
    /// ks.insert("a", "1")?;
    /// let mut buf = Vec::with_capacity(128);
    /// assert!(ks.get_into("a", &mut buf)?);
    /// assert_eq!(buf, b"1");
    /// assert!(!ks.get_into("b", &mut buf)?);
    /// assert!(buf.is_empty());
    /// # db.close()
    /// # }
    /// ```
    ///
    /// # Errors
    /// As [`Keyspace::get`]; `buf` is left empty.
    pub fn get_into(&self, key: impl AsRef<[u8]>, buf: &mut Vec<u8>) -> Result<bool> {
        self.get_into_in(key.as_ref(), Ok(None), buf)
    }

    /// Calls `f` with the value of `key` where it lies (in the memtable or a cached table
    /// block; a separated value after its read), without copying it, and returns what `f`
    /// returns; `None` if the key is absent. `f` runs at most once, while the read holds
    /// the store's current state: keep it short, and do not write to the store from it.
    /// [`Readable::get_with`](crate::Readable::get_with) reads as of a snapshot.
    ///
    /// ```
    /// # fn main() -> cairn::Result<()> {
    /// # let dir = tempfile::tempdir().map_err(|e| cairn::Error::InvalidArgument(e.to_string()))?;
    /// # let db = cairn::Db::open(dir.path(), cairn::Options::default())?;
    /// let ks = db.keyspace("k")?;
    /// ks.insert("a", "12345")?;
    /// assert_eq!(ks.get_with("a", |v| v.len())?, Some(5));
    /// assert_eq!(ks.get_with("b", |v| v.len())?, None);
    /// # db.close()
    /// # }
    /// ```
    ///
    /// # Errors
    /// As [`Keyspace::get`]; `f` is then not called.
    pub fn get_with<R>(
        &self,
        key: impl AsRef<[u8]>,
        f: impl FnOnce(&[u8]) -> R,
    ) -> Result<Option<R>> {
        self.get_with_in(key.as_ref(), Ok(None), f)
    }

    /// Everything about the entry of `key` except its value ([`Head`]), if present; reads
    /// no more than a [`Keyspace::get`] and does not copy the value.
    ///
    /// # Errors
    /// As [`Keyspace::get`].
    pub fn head(&self, key: impl AsRef<[u8]>) -> Result<Option<Head>> {
        self.head_in(key.as_ref(), Ok(None))
    }

    /// True if `key` is present.
    ///
    /// # Errors
    /// As [`Keyspace::get`].
    pub fn contains_key(&self, key: impl AsRef<[u8]>) -> Result<bool> {
        // A head never reads a separated value.
        Ok(self.head(key)?.is_some())
    }

    /// As [`Keyspace::get_with`], but without waiting for the disk: answers from the
    /// memtables, the open tables and the blocks in the block cache, and gives
    /// [`InMemory::NeedsIo`] (with `f` not called) where the read would open a table, read
    /// a block or a separated value, or merge operands (see [`InMemory`]). Whenever it
    /// answers, the answer is the one [`Keyspace::get_with`] gives at the same point.
    /// [`Readable::get_with_in_memory`](crate::Readable::get_with_in_memory) reads as of
    /// a snapshot.
    ///
    /// ```
    /// # fn main() -> cairn::Result<()> {
    /// # let dir = tempfile::tempdir().map_err(|e| cairn::Error::InvalidArgument(e.to_string()))?;
    /// # let db = cairn::Db::open(dir.path(), cairn::Options::default())?;
    /// use cairn::InMemory;
    /// let ks = db.keyspace("k")?;
    /// ks.insert("a", "12345")?;
    /// assert_eq!(ks.get_with_in_memory("a", |v| v.len())?, InMemory::Answer(Some(5)));
    /// assert_eq!(ks.get_with_in_memory("b", |v| v.len())?, InMemory::Answer(None));
    /// # db.close()
    /// # }
    /// ```
    ///
    /// # Errors
    /// As [`Keyspace::get`] (`InvalidArgument` for a dropped keyspace, `Corruption` of a
    /// memtable or a cached block); `f` is then not called.
    pub fn get_with_in_memory<R>(
        &self,
        key: impl AsRef<[u8]>,
        f: impl FnOnce(&[u8]) -> R,
    ) -> Result<InMemory<Option<R>>> {
        self.get_with_in_memory_in(key.as_ref(), Ok(None), f)
    }

    /// As [`Keyspace::contains_key`], but without waiting for the disk, as
    /// [`Keyspace::get_with_in_memory`] (a separated value is never read, so it does not
    /// give [`InMemory::NeedsIo`] here).
    ///
    /// # Errors
    /// As [`Keyspace::get_with_in_memory`].
    pub fn contains_key_in_memory(&self, key: impl AsRef<[u8]>) -> Result<InMemory<bool>> {
        self.contains_key_in_memory_in(key.as_ref(), Ok(None))
    }

    /// The pairs with keys in `range`, ascending (or descending with `.rev()`). A scan of a
    /// dropped keyspace yields one `InvalidArgument` error.
    pub fn range<K: AsRef<[u8]>, R: RangeBounds<K>>(&self, range: R) -> scan::Iter {
        self.iter_in(bounds(range), Ok(None))
    }

    /// The pairs whose key starts with `prefix`, ascending.
    pub fn prefix(&self, prefix: impl AsRef<[u8]>) -> scan::Iter {
        self.iter_in(prefix_bounds(prefix.as_ref()), Ok(None))
    }

    /// Every pair, ascending.
    pub fn iter(&self) -> scan::Iter {
        self.range::<&[u8], _>(..)
    }

    /// A cursor over the pairs with keys in `range`, ascending, that lends each pair
    /// instead of allocating it: the slices [`ScanCursor::next`] returns stay valid until
    /// its next call. It yields what [`Keyspace::range`] yields.
    pub fn cursor<K: AsRef<[u8]>, R: RangeBounds<K>>(&self, range: R) -> ScanCursor {
        self.cursor_in(bounds(range), Ok(None), false)
    }

    /// As [`Keyspace::cursor`], descending: it yields what `range(range).rev()` yields.
    pub fn cursor_rev<K: AsRef<[u8]>, R: RangeBounds<K>>(&self, range: R) -> ScanCursor {
        self.cursor_in(bounds(range), Ok(None), true)
    }

    /// The [`Head`]s of the entries with keys in `range`, ascending (or descending with
    /// `.rev()`), without reading values into memory.
    pub fn range_heads<K: AsRef<[u8]>, R: RangeBounds<K>>(&self, range: R) -> scan::HeadIter {
        self.heads_in(bounds(range), Ok(None))
    }

    /// The [`Head`]s of the entries whose key starts with `prefix`, ascending.
    pub fn prefix_heads(&self, prefix: impl AsRef<[u8]>) -> scan::HeadIter {
        self.heads_in(prefix_bounds(prefix.as_ref()), Ok(None))
    }

    /// The whole entries (key, value, [`Head`]) in `range`, ascending (reverse with
    /// `.rev()`): what a copy of the keyspace with its attributes needs.
    pub fn range_entries<K: AsRef<[u8]>, R: RangeBounds<K>>(&self, range: R) -> scan::EntryIter {
        self.entries_in(bounds(range), Ok(None))
    }

    /// The whole entries (key, value, [`Head`]) whose key starts with `prefix`, ascending
    /// (reverse with `.rev()`).
    pub fn prefix_entries(&self, prefix: impl AsRef<[u8]>) -> scan::EntryIter {
        self.entries_in(prefix_bounds(prefix.as_ref()), Ok(None))
    }

    /// The exact number of keys in the keyspace, counted at one consistent point (as a
    /// snapshot taken now would see it).
    ///
    /// Cost: O(entries in the keyspace's memtables and tables), every version and
    /// tombstone included, because an LSM tree keeps no exact count. It reads keys and
    /// the tables' index and data blocks (values are in the data blocks, so they are read
    /// from disk, but never copied); it uses one thread and does not block writers. Use
    /// [`Keyspace::disk_size`] for a cheap size estimate.
    ///
    /// # Errors
    /// As [`Keyspace::get`].
    pub fn len(&self) -> Result<u64> {
        self.len_in(Ok(None))
    }

    /// True if the keyspace holds no key. Stops at the first live key, but a keyspace
    /// whose keys were all removed costs as much as [`Keyspace::len`] until compaction
    /// drops the tombstones.
    ///
    /// # Errors
    /// As [`Keyspace::get`].
    pub fn is_empty(&self) -> Result<bool> {
        Ok(self.first_key_value()?.is_none())
    }

    /// The first pair, if any.
    ///
    /// # Errors
    /// As [`Keyspace::get`].
    pub fn first_key_value(&self) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        self.iter().next().transpose()
    }

    /// The last pair, if any.
    ///
    /// # Errors
    /// As [`Keyspace::get`].
    pub fn last_key_value(&self) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        self.iter().next_back().transpose()
    }

    /// Bytes the keyspace takes on disk, estimated without I/O: the sizes of its table
    /// files in the current version, plus the bytes its not-yet-flushed writes take in the
    /// write-ahead log (their encoded length, without the log's per-record framing). The
    /// log is shared by all keyspaces, so this is the keyspace's share of it; log files
    /// already flushed but not yet deleted are not counted (see [`Db::disk_size`] for the
    /// whole store). 0 for a dropped keyspace.
    pub fn disk_size(&self) -> u64 {
        read::keyspace_disk_size(&self.db.inner.reads, self.id)
    }

    // Reads at a point: `Ok(None)` is now, `Ok(Some(at))` a snapshot, `Err` a snapshot
    // refused by `Keyspace::at` (reported by the read). The public reads above and the
    // `Readable` implementations (`db/readable.rs`) all come here.

    pub(crate) fn get_in(&self, key: &[u8], at: Result<Option<ReadAt>>) -> Result<Option<Vec<u8>>> {
        read::get_with(
            &self.db.inner.reads,
            self.id,
            &self.name,
            key,
            at?.as_ref(),
            |v| v.into_vec(),
        )
    }

    pub(crate) fn get_many_in<K: AsRef<[u8]>>(
        &self,
        keys: &[K],
        at: Result<Option<ReadAt>>,
    ) -> Result<Vec<Option<Vec<u8>>>> {
        read::get_many_with(
            &self.db.inner.reads,
            self.id,
            &self.name,
            keys,
            at?.as_ref(),
            |v| v.into_vec(),
        )
    }

    pub(crate) fn get_into_in(
        &self,
        key: &[u8],
        at: Result<Option<ReadAt>>,
        buf: &mut Vec<u8>,
    ) -> Result<bool> {
        buf.clear();
        let found = read::get_with(
            &self.db.inner.reads,
            self.id,
            &self.name,
            key,
            at?.as_ref(),
            |v| match v {
                read::Value::Borrowed(v) => buf.extend_from_slice(v),
                // A separated value's read buffer is taken, not copied.
                read::Value::Owned(v) => *buf = v,
            },
        )?;
        Ok(found.is_some())
    }

    pub(crate) fn get_with_in<R>(
        &self,
        key: &[u8],
        at: Result<Option<ReadAt>>,
        f: impl FnOnce(&[u8]) -> R,
    ) -> Result<Option<R>> {
        read::get_with(
            &self.db.inner.reads,
            self.id,
            &self.name,
            key,
            at?.as_ref(),
            |v| f(v.as_slice()),
        )
    }

    pub(crate) fn get_with_in_memory_in<R>(
        &self,
        key: &[u8],
        at: Result<Option<ReadAt>>,
        f: impl FnOnce(&[u8]) -> R,
    ) -> Result<InMemory<Option<R>>> {
        read::get_within(
            &self.db.inner.reads,
            self.id,
            &self.name,
            key,
            at?.as_ref(),
            Reach::Memory,
            |v| f(v.as_slice()),
        )
    }

    pub(crate) fn contains_key_in_memory_in(
        &self,
        key: &[u8],
        at: Result<Option<ReadAt>>,
    ) -> Result<InMemory<bool>> {
        self.check_live()?;
        let head = read::head_within(
            &self.db.inner.reads,
            self.id,
            key,
            at?.as_ref(),
            Reach::Memory,
        )?;
        Ok(head.map(|h| h.is_some()))
    }

    pub(crate) fn head_in(&self, key: &[u8], at: Result<Option<ReadAt>>) -> Result<Option<Head>> {
        self.check_live()?;
        read::lookup::<Head>(&self.db.inner.reads, self.id, key, at?.as_ref())
    }

    pub(crate) fn len_in(&self, at: Result<Option<ReadAt>>) -> Result<u64> {
        self.check_live()?;
        read::count(&self.db.inner.reads, self.id, at?.as_ref())
    }

    pub(crate) fn iter_in(
        &self,
        (lo, hi): (Bound<Vec<u8>>, Bound<Vec<u8>>),
        at: Result<Option<ReadAt>>,
    ) -> scan::Iter {
        scan::Iter::new(&self.db.inner.reads, self.id, lo, hi, at)
    }

    pub(crate) fn cursor_in(
        &self,
        range: (Bound<Vec<u8>>, Bound<Vec<u8>>),
        at: Result<Option<ReadAt>>,
        reverse: bool,
    ) -> ScanCursor {
        ScanCursor::new(&self.db.inner.reads, self.id, range, at, reverse)
    }

    pub(crate) fn heads_in(
        &self,
        (lo, hi): (Bound<Vec<u8>>, Bound<Vec<u8>>),
        at: Result<Option<ReadAt>>,
    ) -> scan::HeadIter {
        scan::HeadIter::new(&self.db.inner.reads, self.id, lo, hi, at)
    }

    pub(crate) fn entries_in(
        &self,
        (lo, hi): (Bound<Vec<u8>>, Bound<Vec<u8>>),
        at: Result<Option<ReadAt>>,
    ) -> scan::EntryIter {
        scan::EntryIter::new(&self.db.inner.reads, self.id, lo, hi, at)
    }
}

/// Writes to one or more keyspaces, applied all together or not at all by
/// [`Batch::commit`]. Recovery after a crash also keeps a batch whole or drops it whole.
/// Counter increments ([`Batch::incr`]) join the batch on the same terms.
pub struct Batch {
    pub(crate) db: Db,
    pub(crate) batch: WriteBatch,
    /// The first refused write (oversized key or value, a keyspace of another store);
    /// `commit` reports it and writes nothing.
    pub(crate) error: Option<Error>,
    /// Counter increments, each placed after the ops added before it (see
    /// `db/batch_counters.rs`).
    pub(crate) increments: Increments,
}

impl std::fmt::Debug for Batch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Batch")
            .field("ops", &self.batch.len())
            .finish()
    }
}

impl Batch {
    /// True if writes to `keyspace` may be added: nothing was refused yet, and the
    /// keyspace belongs to this batch's store. A keyspace of another store is refused
    /// (its id would name whichever keyspace of this store has the same id), and the
    /// commit reports it.
    pub(crate) fn accepts(&mut self, keyspace: &Keyspace) -> bool {
        if self.error.is_some() {
            return false;
        }
        if !Arc::ptr_eq(&keyspace.db.inner, &self.db.inner) {
            self.error = Some(Error::invalid(format!(
                "keyspace {:?} of the store in {} was given to a batch of the store in {}",
                keyspace.name,
                keyspace.db.inner.dir.display(),
                self.db.inner.dir.display()
            )));
            return false;
        }
        true
    }

    /// Adds "set `key` to `value` in `keyspace`".
    pub fn insert(&mut self, keyspace: &Keyspace, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) {
        if self.accepts(keyspace) {
            if let Err(e) = self.batch.put(keyspace.id, key.as_ref(), value.as_ref()) {
                self.error = Some(e);
            }
        }
    }

    /// Adds "set `key` to `value` in `keyspace`" with the attributes of `options` (see
    /// [`Keyspace::insert_entry`]); `options.durability` is ignored (the commit's applies).
    /// A ttl counts from this call. Invalid options are reported by the commit.
    pub fn insert_entry(
        &mut self,
        keyspace: &Keyspace,
        key: impl AsRef<[u8]>,
        value: impl AsRef<[u8]>,
        options: &EntryOptions,
    ) {
        if self.accepts(keyspace) {
            let now = self.db.inner.options.clock.now_ms();
            let added = options.attrs(now).and_then(|attrs| {
                self.batch
                    .put_attrs(keyspace.id, key.as_ref(), &attrs, value.as_ref())
            });
            if let Err(e) = added {
                self.error = Some(e);
            }
        }
    }

    /// Adds "merge `operand` into `key` in `keyspace`" (see [`Keyspace::merge`]). A
    /// keyspace without a merge operator, or an operand it refuses, is reported by the
    /// commit, which then writes nothing.
    pub fn merge(&mut self, keyspace: &Keyspace, key: impl AsRef<[u8]>, operand: impl AsRef<[u8]>) {
        if self.accepts(keyspace) {
            let (key, operand) = (key.as_ref(), operand.as_ref());
            let added = keyspace
                .check_merge(key, operand)
                .and_then(|()| self.batch.merge(keyspace.id, key, operand));
            if let Err(e) = added {
                self.error = Some(e);
            }
        }
    }

    /// Adds "remove `key` from `keyspace`".
    pub fn remove(&mut self, keyspace: &Keyspace, key: impl AsRef<[u8]>) {
        if self.accepts(keyspace) {
            if let Err(e) = self.batch.remove(keyspace.id, key.as_ref()) {
                self.error = Some(e);
            }
        }
    }

    /// Adds "remove every key in `range` from `keyspace`" (one op, whatever the number of
    /// keys; see [`Keyspace::remove_range`]). An empty range adds nothing.
    pub fn remove_range<K: AsRef<[u8]>, R: RangeBounds<K>>(
        &mut self,
        keyspace: &Keyspace,
        range: R,
    ) {
        if self.accepts(keyspace) {
            let added = rangedel::normalize(&range).and_then(|r| match r {
                Some((start, end)) => self.batch.remove_range(keyspace.id, &start, &end),
                None => Ok(()),
            });
            if let Err(e) = added {
                self.error = Some(e);
            }
        }
    }

    /// Adds "remove every key starting with `prefix` from `keyspace`".
    pub fn remove_prefix(&mut self, keyspace: &Keyspace, prefix: impl AsRef<[u8]>) {
        if self.accepts(keyspace) {
            let added = rangedel::prefix_range(prefix.as_ref())
                .and_then(|(start, end)| self.batch.remove_range(keyspace.id, &start, &end));
            if let Err(e) = added {
                self.error = Some(e);
            }
        }
    }

    /// Number of writes added (increments included).
    pub fn len(&self) -> usize {
        self.batch.len() + self.increments.len()
    }

    /// True if nothing was added.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Applies every write atomically with the store's default durability.
    /// [`Batch::commit_counters`] also returns the new values of the batch's increments.
    ///
    /// # Errors
    /// The first refused write (`InvalidArgument`: an oversized key or value, a keyspace
    /// handle of another store), a dropped keyspace, an increment that fails
    /// (`NotACounter`, `CounterOverflow`: nothing of the batch is written), or as
    /// [`Keyspace::insert`].
    pub fn commit(self) -> Result<()> {
        self.commit_with(None)
    }

    /// Applies every write atomically with the given durability (`None`: the default).
    ///
    /// # Errors
    /// As [`Batch::commit`].
    pub fn commit_with(self, durability: Option<Durability>) -> Result<()> {
        self.commit_counters_with(durability).map(|_| ())
    }

    /// Checks the batch and hands it to the write path; see [`Batch::commit_counters_with`].
    pub(crate) fn apply(self, durability: Option<Durability>) -> Result<(u64, Vec<i64>)> {
        if let Some(e) = self.error {
            return Err(e);
        }
        let inner = &self.db.inner;
        {
            let version = inner.reads.supers.version();
            let keyspaces = self.batch.ops().map(|op| op.keyspace());
            for id in keyspaces.chain(self.increments.iter().map(|i| i.keyspace)) {
                if version.keyspace(id).is_none() {
                    return Err(Error::invalid(format!(
                        "batch writes to keyspace id {id} which has been dropped"
                    )));
                }
            }
        }
        let durability = inner.durability(durability);
        if self.increments.is_empty() {
            let seqno = write::write(inner, self.batch, durability)?;
            return Ok((seqno.0, Vec::new()));
        }
        let done = write::write_counting(inner, self.batch, self.increments, durability)?;
        Ok((done.seqno.0, done.counters.into_vec()))
    }
}
