//! [`Readable`]: the reads of a keyspace, from wherever they are made.
//!
//! A [`Keyspace`] reads the latest state through its own methods (`ks.get(key)`). Reads
//! at another point go through the thing that fixes the point, with the keyspace as an
//! argument: `snapshot.get(&ks, key)` reads as of the snapshot. Both `Snapshot` and `Db`
//! (the latest state) implement the trait, so code written against `impl Readable` runs
//! on either; a transaction reading at its snapshot is another such point.
//!
//! Invariants:
//! 1. Every method of every implementation reads at one point for its whole result: a
//!    scan holds its super version and seqno from its first item to its last.
//! 2. A keyspace of another store is refused (`InvalidArgument`), never read at a seqno
//!    that means nothing to it; a scan reports the refusal as its first and only item.
//! 3. The trait is sealed: only this crate's types implement it.

use std::ops::RangeBounds;

use super::keyspace::{bounds, prefix_bounds};
use super::scan_cursor::ScanCursor;
use super::{scan, Db, Keyspace, Snapshot};
use crate::attrs::Head;
use crate::error::Result;
use crate::reach::InMemory;

/// Reads of any keyspace at one point: a [`Snapshot`]'s, or the latest state ([`Db`]).
/// Each method reads as the [`Keyspace`] method of the same name does, at that point.
///
/// ```
/// use cairn::{Db, Options, Readable};
/// # fn main() -> cairn::Result<()> {
/// # let dir = tempfile::tempdir().map_err(|e| cairn::Error::InvalidArgument(e.to_string()))?;
/// let db = Db::open(dir.path(), Options::default())?;
/// let users = db.keyspace("users")?;
/// users.insert("u:1", "Ada")?;
/// let before = db.snapshot();
/// users.insert("u:1", "Grace")?;
///
/// // One function for both points.
/// fn name(at: &impl Readable, users: &cairn::Keyspace) -> cairn::Result<Option<Vec<u8>>> {
///     at.get(users, "u:1")
/// }
/// assert_eq!(name(&before, &users)?, Some(b"Ada".to_vec()));
/// assert_eq!(name(&db, &users)?, Some(b"Grace".to_vec()));
/// assert_eq!(before.len(&users)?, 1);
/// # db.close()
/// # }
/// ```
///
/// The trait is sealed: only Cairn's types implement it, so methods can be added to it
/// without breaking anyone.
pub trait Readable: sealed::Sealed {
    /// The value of `key` in `keyspace`, if present ([`Keyspace::get`]).
    ///
    /// # Errors
    /// `InvalidArgument` for a keyspace of another store or a dropped one; `Corruption`,
    /// `Io` from the files read.
    fn get(&self, keyspace: &Keyspace, key: impl AsRef<[u8]>) -> Result<Option<Vec<u8>>>;

    /// The values of `keys` in `keyspace`, in order (`None` for an absent key), read
    /// together with their memory misses overlapped ([`Keyspace::get_many`]).
    ///
    /// # Errors
    /// As [`Readable::get`], for the first key whose read fails.
    fn get_many<K: AsRef<[u8]>>(
        &self,
        keyspace: &Keyspace,
        keys: &[K],
    ) -> Result<Vec<Option<Vec<u8>>>>;

    /// The value of `key` in `keyspace` into `buf`, reusing its allocation
    /// ([`Keyspace::get_into`]): true if present, false (and `buf` empty) if absent.
    ///
    /// # Errors
    /// As [`Readable::get`]; `buf` is left empty.
    fn get_into(
        &self,
        keyspace: &Keyspace,
        key: impl AsRef<[u8]>,
        buf: &mut Vec<u8>,
    ) -> Result<bool>;

    /// Calls `f` with the value of `key` in `keyspace` where it lies, without copying it
    /// ([`Keyspace::get_with`]); `None` if absent.
    ///
    /// # Errors
    /// As [`Readable::get`]; `f` is then not called.
    fn get_with<R>(
        &self,
        keyspace: &Keyspace,
        key: impl AsRef<[u8]>,
        f: impl FnOnce(&[u8]) -> R,
    ) -> Result<Option<R>>;

    /// The entry of `key` without its value ([`Keyspace::head`]); expiry is judged by the
    /// current time.
    ///
    /// # Errors
    /// As [`Readable::get`].
    fn head(&self, keyspace: &Keyspace, key: impl AsRef<[u8]>) -> Result<Option<Head>>;

    /// True if `key` is present ([`Keyspace::contains_key`]).
    ///
    /// # Errors
    /// As [`Readable::get`].
    fn contains_key(&self, keyspace: &Keyspace, key: impl AsRef<[u8]>) -> Result<bool> {
        Ok(self.head(keyspace, key)?.is_some())
    }

    /// As [`Readable::get_with`], without waiting for the disk
    /// ([`Keyspace::get_with_in_memory`]): [`InMemory::NeedsIo`] where the read would do
    /// file I/O; whenever it answers, the answer is the one [`Readable::get_with`] gives.
    ///
    /// # Errors
    /// As [`Readable::get`]; `f` is then not called.
    fn get_with_in_memory<R>(
        &self,
        keyspace: &Keyspace,
        key: impl AsRef<[u8]>,
        f: impl FnOnce(&[u8]) -> R,
    ) -> Result<InMemory<Option<R>>>;

    /// As [`Readable::contains_key`], without waiting for the disk
    /// ([`Keyspace::contains_key_in_memory`]).
    ///
    /// # Errors
    /// As [`Readable::get`].
    fn contains_key_in_memory(
        &self,
        keyspace: &Keyspace,
        key: impl AsRef<[u8]>,
    ) -> Result<InMemory<bool>>;

    /// The pairs with keys in `range`, ascending (`.rev()` for descending).
    fn range<K: AsRef<[u8]>, R: RangeBounds<K>>(&self, keyspace: &Keyspace, range: R)
        -> scan::Iter;

    /// The pairs whose key starts with `prefix`, ascending.
    fn prefix(&self, keyspace: &Keyspace, prefix: impl AsRef<[u8]>) -> scan::Iter;

    /// Every pair, ascending.
    fn iter(&self, keyspace: &Keyspace) -> scan::Iter {
        self.range::<&[u8], _>(keyspace, ..)
    }

    /// A cursor lending the pairs with keys in `range`, ascending ([`Keyspace::cursor`]):
    /// each pair is valid until the cursor's next call.
    fn cursor<K: AsRef<[u8]>, R: RangeBounds<K>>(
        &self,
        keyspace: &Keyspace,
        range: R,
    ) -> ScanCursor;

    /// As [`Readable::cursor`], descending ([`Keyspace::cursor_rev`]).
    fn cursor_rev<K: AsRef<[u8]>, R: RangeBounds<K>>(
        &self,
        keyspace: &Keyspace,
        range: R,
    ) -> ScanCursor;

    /// The [`Head`]s of the entries with keys in `range` ([`Keyspace::range_heads`]).
    fn range_heads<K: AsRef<[u8]>, R: RangeBounds<K>>(
        &self,
        keyspace: &Keyspace,
        range: R,
    ) -> scan::HeadIter;

    /// The [`Head`]s of the entries whose key starts with `prefix`.
    fn prefix_heads(&self, keyspace: &Keyspace, prefix: impl AsRef<[u8]>) -> scan::HeadIter;

    /// The whole entries (key, value, [`Head`]) with keys in `range`.
    fn range_entries<K: AsRef<[u8]>, R: RangeBounds<K>>(
        &self,
        keyspace: &Keyspace,
        range: R,
    ) -> scan::EntryIter;

    /// The whole entries (key, value, [`Head`]) whose key starts with `prefix`.
    fn prefix_entries(&self, keyspace: &Keyspace, prefix: impl AsRef<[u8]>) -> scan::EntryIter;

    /// The exact number of keys ([`Keyspace::len`], same cost).
    ///
    /// # Errors
    /// As [`Readable::get`].
    fn len(&self, keyspace: &Keyspace) -> Result<u64>;

    /// True if the keyspace holds no key ([`Keyspace::is_empty`]).
    ///
    /// # Errors
    /// As [`Readable::get`].
    fn is_empty(&self, keyspace: &Keyspace) -> Result<bool> {
        Ok(self.first_key_value(keyspace)?.is_none())
    }

    /// The first pair, if any.
    ///
    /// # Errors
    /// As [`Readable::get`].
    fn first_key_value(&self, keyspace: &Keyspace) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        self.iter(keyspace).next().transpose()
    }

    /// The last pair, if any.
    ///
    /// # Errors
    /// As [`Readable::get`].
    fn last_key_value(&self, keyspace: &Keyspace) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        self.iter(keyspace).next_back().transpose()
    }
}

/// The one implementation behind both points: everything comes down to where the read
/// is made, which `point` says (or refuses).
macro_rules! readable_at {
    ($point:expr) => {
        fn get(&self, keyspace: &Keyspace, key: impl AsRef<[u8]>) -> Result<Option<Vec<u8>>> {
            keyspace.get_in(key.as_ref(), $point(self, keyspace))
        }

        fn get_many<K: AsRef<[u8]>>(
            &self,
            keyspace: &Keyspace,
            keys: &[K],
        ) -> Result<Vec<Option<Vec<u8>>>> {
            keyspace.get_many_in(keys, $point(self, keyspace))
        }

        fn get_into(
            &self,
            keyspace: &Keyspace,
            key: impl AsRef<[u8]>,
            buf: &mut Vec<u8>,
        ) -> Result<bool> {
            keyspace.get_into_in(key.as_ref(), $point(self, keyspace), buf)
        }

        fn get_with<R>(
            &self,
            keyspace: &Keyspace,
            key: impl AsRef<[u8]>,
            f: impl FnOnce(&[u8]) -> R,
        ) -> Result<Option<R>> {
            keyspace.get_with_in(key.as_ref(), $point(self, keyspace), f)
        }

        fn get_with_in_memory<R>(
            &self,
            keyspace: &Keyspace,
            key: impl AsRef<[u8]>,
            f: impl FnOnce(&[u8]) -> R,
        ) -> Result<InMemory<Option<R>>> {
            keyspace.get_with_in_memory_in(key.as_ref(), $point(self, keyspace), f)
        }

        fn contains_key_in_memory(
            &self,
            keyspace: &Keyspace,
            key: impl AsRef<[u8]>,
        ) -> Result<InMemory<bool>> {
            keyspace.contains_key_in_memory_in(key.as_ref(), $point(self, keyspace))
        }

        fn head(&self, keyspace: &Keyspace, key: impl AsRef<[u8]>) -> Result<Option<Head>> {
            keyspace.head_in(key.as_ref(), $point(self, keyspace))
        }

        fn range<K: AsRef<[u8]>, R: RangeBounds<K>>(
            &self,
            keyspace: &Keyspace,
            range: R,
        ) -> scan::Iter {
            keyspace.iter_in(bounds(range), $point(self, keyspace))
        }

        fn prefix(&self, keyspace: &Keyspace, prefix: impl AsRef<[u8]>) -> scan::Iter {
            keyspace.iter_in(prefix_bounds(prefix.as_ref()), $point(self, keyspace))
        }

        fn cursor<K: AsRef<[u8]>, R: RangeBounds<K>>(
            &self,
            keyspace: &Keyspace,
            range: R,
        ) -> ScanCursor {
            keyspace.cursor_in(bounds(range), $point(self, keyspace), false)
        }

        fn cursor_rev<K: AsRef<[u8]>, R: RangeBounds<K>>(
            &self,
            keyspace: &Keyspace,
            range: R,
        ) -> ScanCursor {
            keyspace.cursor_in(bounds(range), $point(self, keyspace), true)
        }

        fn range_heads<K: AsRef<[u8]>, R: RangeBounds<K>>(
            &self,
            keyspace: &Keyspace,
            range: R,
        ) -> scan::HeadIter {
            keyspace.heads_in(bounds(range), $point(self, keyspace))
        }

        fn prefix_heads(&self, keyspace: &Keyspace, prefix: impl AsRef<[u8]>) -> scan::HeadIter {
            keyspace.heads_in(prefix_bounds(prefix.as_ref()), $point(self, keyspace))
        }

        fn range_entries<K: AsRef<[u8]>, R: RangeBounds<K>>(
            &self,
            keyspace: &Keyspace,
            range: R,
        ) -> scan::EntryIter {
            keyspace.entries_in(bounds(range), $point(self, keyspace))
        }

        fn prefix_entries(&self, keyspace: &Keyspace, prefix: impl AsRef<[u8]>) -> scan::EntryIter {
            keyspace.entries_in(prefix_bounds(prefix.as_ref()), $point(self, keyspace))
        }

        fn len(&self, keyspace: &Keyspace) -> Result<u64> {
            keyspace.len_in($point(self, keyspace))
        }
    };
}

/// Keeps `Readable` to the types of this crate (see the trait's documentation).
mod sealed {
    pub trait Sealed {}
    impl Sealed for super::Snapshot {}
    impl Sealed for super::Db {}
}

/// As of the snapshot (expiry is still judged by the current time).
impl Readable for Snapshot {
    readable_at!(|snapshot: &Snapshot, keyspace: &Keyspace| keyspace.at(snapshot));
}

/// The latest state, as the keyspace's own methods read it.
impl Readable for Db {
    readable_at!(|db: &Db, keyspace: &Keyspace| keyspace.latest_of(db));
}
