//! `cairn_iter_t`: a forward or reverse scan over a key range or prefix of one keyspace,
//! with seek. A scan yields values ([`engine::Iter`]), heads without values
//! ([`engine::HeadIter`]: keys and metadata, no value read) or whole entries
//! ([`engine::EntryIter`]: value and head), as `CAIRN_SCAN_*` chose at creation.
//!
//! The engine's scans have no seek; a seek here starts a new scan over the original range
//! narrowed to begin (forward) or end (reverse) at the sought key. With a snapshot every
//! scan reads at that snapshot; without one, each scan (the first, and each seek's) reads
//! the store's state at the moment it starts.
//!
//! Invariants:
//! 1. The iterator is positioned (key, and value or head as its scan reads them) only
//!    after a `cairn_iter_next` that returned `CAIRN_OK`; the pointers it hands out stay
//!    valid until the next call of `cairn_iter_next`, `cairn_iter_seek` or
//!    `cairn_iter_destroy`.
//! 2. After an error or the end, `cairn_iter_next` keeps returning `CAIRN_NOT_FOUND`
//!    until a seek starts a new scan.
//!
//! Thread-safety: not thread-safe; one thread at a time (it may move between threads).
//! Iterators over the same keyspace on different threads are independent.

use std::ffi::{c_char, c_int};
use std::ops::Bound;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use engine::Readable;

use crate::args;
use crate::db;
use crate::guard::run;
use crate::keyspace::{self, cairn_keyspace_t};
use crate::range;
use crate::read::cairn_head_t;
use crate::snapshot::cairn_snapshot_t;
use crate::status::{cairn_status_t, Failure, CAIRN_NOT_FOUND, CAIRN_OK};

/// A scan over a keyspace. Not thread-safe.
#[allow(non_camel_case_types)]
pub struct cairn_iter_t {
    keyspace: engine::Keyspace,
    snapshot: Option<engine::Snapshot>,
    closed: Arc<AtomicBool>,
    lo: Bound<Vec<u8>>,
    hi: Bound<Vec<u8>>,
    reverse: bool,
    what: What,
    /// `None` once the scan ended or failed, or when its range is empty.
    scan: Option<Scan>,
    current: Option<Current>,
}

/// Scan values: `cairn_iter_value` reads each entry's value (the default of
/// `cairn_iter_range` and `cairn_iter_prefix`).
pub const CAIRN_SCAN_VALUES: c_int = 0;
/// Scan heads: `cairn_iter_head` reads each entry's attributes; no value is read, so a
/// separated value costs nothing (`cairn_iter_value` is `CAIRN_INVALID_ARGUMENT`).
pub const CAIRN_SCAN_HEADS: c_int = 1;
/// Scan whole entries: both `cairn_iter_value` and `cairn_iter_head`.
pub const CAIRN_SCAN_ENTRIES: c_int = 2;

/// What a scan reads of each entry.
#[derive(Clone, Copy, PartialEq, Eq)]
enum What {
    Values,
    Heads,
    Entries,
}

impl What {
    fn from_c(what: c_int) -> Result<What, Failure> {
        match what {
            CAIRN_SCAN_VALUES => Ok(What::Values),
            CAIRN_SCAN_HEADS => Ok(What::Heads),
            CAIRN_SCAN_ENTRIES => Ok(What::Entries),
            other => Err(Failure::invalid(format!(
                "scan kind {other} is not CAIRN_SCAN_VALUES, CAIRN_SCAN_HEADS or \
                 CAIRN_SCAN_ENTRIES"
            ))),
        }
    }
}

/// The engine's scan of the kind the iterator reads.
enum Scan {
    Values(engine::Iter),
    Heads(engine::HeadIter),
    Entries(engine::EntryIter),
}

impl Scan {
    fn step(&mut self, reverse: bool) -> Option<engine::Result<Current>> {
        fn pick<I: DoubleEndedIterator>(it: &mut I, reverse: bool) -> Option<I::Item> {
            if reverse {
                it.next_back()
            } else {
                it.next()
            }
        }
        Some(match self {
            Scan::Values(it) => pick(it, reverse)?.map(|(key, value)| Current {
                key,
                value: Some(value),
                head: None,
            }),
            Scan::Heads(it) => pick(it, reverse)?.map(|(key, head)| Current {
                key,
                value: None,
                head: Some(head),
            }),
            Scan::Entries(it) => pick(it, reverse)?.map(|(key, value, head)| Current {
                key,
                value: Some(value),
                head: Some(head),
            }),
        })
    }
}

/// The entry the iterator is on.
struct Current {
    key: Vec<u8>,
    value: Option<Vec<u8>>,
    head: Option<engine::Head>,
}

impl cairn_iter_t {
    fn scan(&self, lo: Bound<Vec<u8>>, hi: Bound<Vec<u8>>) -> Option<Scan> {
        if range::is_empty(&lo, &hi) {
            return None;
        }
        let ks = &self.keyspace;
        let range = (lo, hi);
        Some(match (&self.snapshot, self.what) {
            (Some(s), What::Values) => Scan::Values(s.range(ks, range)),
            (None, What::Values) => Scan::Values(ks.range(range)),
            (Some(s), What::Heads) => Scan::Heads(s.range_heads(ks, range)),
            (None, What::Heads) => Scan::Heads(ks.range_heads(range)),
            (Some(s), What::Entries) => Scan::Entries(s.range_entries(ks, range)),
            (None, What::Entries) => Scan::Entries(ks.range_entries(range)),
        })
    }
}

fn create(
    ks: Option<&cairn_keyspace_t>,
    snapshot: Option<&cairn_snapshot_t>,
    bounds: (Bound<Vec<u8>>, Bound<Vec<u8>>),
    reverse: u8,
    what: What,
    out: &mut *mut cairn_iter_t,
) -> Result<cairn_status_t, Failure> {
    let ks = keyspace::live(ks)?;
    let mut it = cairn_iter_t {
        keyspace: ks.keyspace.clone(),
        snapshot: snapshot.map(|s| s.snapshot.clone()),
        closed: Arc::clone(&ks.closed),
        lo: bounds.0,
        hi: bounds.1,
        reverse: reverse != 0,
        what,
        scan: None,
        current: None,
    };
    it.scan = it.scan(it.lo.clone(), it.hi.clone());
    *out = Box::into_raw(Box::new(it));
    Ok(CAIRN_OK)
}

/// A scan over `[start, end)` of `ks` (NULL bounds as in `cairn_delete_range`), in key
/// order or, if `reverse` is non-zero, from the last key down; at `snapshot` if not NULL.
/// The iterator starts before its first entry: call `cairn_iter_next`.
///
/// # Safety
/// `start` and `end` must each be NULL with length 0 or point to that many readable
/// bytes.
#[no_mangle]
pub unsafe extern "C" fn cairn_iter_range(
    ks: Option<&cairn_keyspace_t>,
    snapshot: Option<&cairn_snapshot_t>,
    start: *const c_char,
    start_len: usize,
    end: *const c_char,
    end_len: usize,
    reverse: u8,
    out: Option<&mut *mut cairn_iter_t>,
    errptr: Option<&mut *mut c_char>,
) -> cairn_status_t {
    run(errptr, || {
        let out = out.ok_or_else(|| Failure::invalid("out is NULL"))?;
        *out = std::ptr::null_mut();
        // SAFETY: the caller guarantees `start_len` readable bytes at a non-NULL `start`.
        let start = unsafe { args::optional_bytes(start, start_len, "start") }?;
        // SAFETY: the caller guarantees `end_len` readable bytes at a non-NULL `end`.
        let end = unsafe { args::optional_bytes(end, end_len, "end") }?;
        create(
            ks,
            snapshot,
            range::half_open(start, end),
            reverse,
            What::Values,
            out,
        )
    })
}

/// As `cairn_iter_range`, reading what `what` says of each entry: `CAIRN_SCAN_VALUES`,
/// `CAIRN_SCAN_HEADS` (no value read) or `CAIRN_SCAN_ENTRIES`.
///
/// # Safety
/// As `cairn_iter_range`.
#[no_mangle]
pub unsafe extern "C" fn cairn_iter_range_with(
    ks: Option<&cairn_keyspace_t>,
    snapshot: Option<&cairn_snapshot_t>,
    start: *const c_char,
    start_len: usize,
    end: *const c_char,
    end_len: usize,
    reverse: u8,
    what: c_int,
    out: Option<&mut *mut cairn_iter_t>,
    errptr: Option<&mut *mut c_char>,
) -> cairn_status_t {
    run(errptr, || {
        let out = out.ok_or_else(|| Failure::invalid("out is NULL"))?;
        *out = std::ptr::null_mut();
        let what = What::from_c(what)?;
        // SAFETY: the caller guarantees `start_len` readable bytes at a non-NULL `start`.
        let start = unsafe { args::optional_bytes(start, start_len, "start") }?;
        // SAFETY: the caller guarantees `end_len` readable bytes at a non-NULL `end`.
        let end = unsafe { args::optional_bytes(end, end_len, "end") }?;
        create(
            ks,
            snapshot,
            range::half_open(start, end),
            reverse,
            what,
            out,
        )
    })
}

/// A scan over the keys of `ks` starting with `prefix` (every key for an empty prefix);
/// otherwise as `cairn_iter_range`.
///
/// # Safety
/// `prefix` must point to `prefix_len` readable bytes (NULL if `prefix_len` is 0).
#[no_mangle]
pub unsafe extern "C" fn cairn_iter_prefix(
    ks: Option<&cairn_keyspace_t>,
    snapshot: Option<&cairn_snapshot_t>,
    prefix: *const c_char,
    prefix_len: usize,
    reverse: u8,
    out: Option<&mut *mut cairn_iter_t>,
    errptr: Option<&mut *mut c_char>,
) -> cairn_status_t {
    run(errptr, || {
        let out = out.ok_or_else(|| Failure::invalid("out is NULL"))?;
        *out = std::ptr::null_mut();
        // SAFETY: the caller guarantees `prefix_len` readable bytes at `prefix`.
        let prefix = unsafe { args::bytes(prefix, prefix_len, "prefix") }?;
        create(
            ks,
            snapshot,
            range::prefix(prefix),
            reverse,
            What::Values,
            out,
        )
    })
}

/// As `cairn_iter_prefix`, reading what `what` says of each entry (see
/// `cairn_iter_range_with`).
///
/// # Safety
/// As `cairn_iter_prefix`.
#[no_mangle]
pub unsafe extern "C" fn cairn_iter_prefix_with(
    ks: Option<&cairn_keyspace_t>,
    snapshot: Option<&cairn_snapshot_t>,
    prefix: *const c_char,
    prefix_len: usize,
    reverse: u8,
    what: c_int,
    out: Option<&mut *mut cairn_iter_t>,
    errptr: Option<&mut *mut c_char>,
) -> cairn_status_t {
    run(errptr, || {
        let out = out.ok_or_else(|| Failure::invalid("out is NULL"))?;
        *out = std::ptr::null_mut();
        let what = What::from_c(what)?;
        // SAFETY: the caller guarantees `prefix_len` readable bytes at `prefix`.
        let prefix = unsafe { args::bytes(prefix, prefix_len, "prefix") }?;
        create(ks, snapshot, range::prefix(prefix), reverse, what, out)
    })
}

/// Moves to the next entry: `CAIRN_OK` if there is one (read it with `cairn_iter_key`
/// and `cairn_iter_value`), `CAIRN_NOT_FOUND` at the end, or an error (after which the
/// scan has ended).
#[no_mangle]
pub extern "C" fn cairn_iter_next(
    it: Option<&mut cairn_iter_t>,
    errptr: Option<&mut *mut c_char>,
) -> cairn_status_t {
    run(errptr, || {
        let it = it.ok_or_else(|| Failure::invalid("iterator is NULL"))?;
        it.current = None;
        db::check_open(&it.closed, "store")?;
        let Some(scan) = it.scan.as_mut() else {
            return Ok(CAIRN_NOT_FOUND);
        };
        match scan.step(it.reverse) {
            Some(Ok(entry)) => {
                it.current = Some(entry);
                Ok(CAIRN_OK)
            }
            Some(Err(e)) => {
                it.scan = None;
                Err(e.into())
            }
            None => {
                it.scan = None;
                Ok(CAIRN_NOT_FOUND)
            }
        }
    })
}

/// Restarts the scan at `key`: the next `cairn_iter_next` yields the first key at or
/// after `key` (or, for a reverse scan, the last key at or before it) within the
/// iterator's range.
///
/// # Safety
/// `key` must point to `key_len` readable bytes (NULL if `key_len` is 0).
#[no_mangle]
pub unsafe extern "C" fn cairn_iter_seek(
    it: Option<&mut cairn_iter_t>,
    key: *const c_char,
    key_len: usize,
    errptr: Option<&mut *mut c_char>,
) -> cairn_status_t {
    run(errptr, || {
        let it = it.ok_or_else(|| Failure::invalid("iterator is NULL"))?;
        it.current = None;
        it.scan = None;
        db::check_open(&it.closed, "store")?;
        // SAFETY: the caller guarantees `key_len` readable bytes at `key`.
        let key = unsafe { args::bytes(key, key_len, "key") }?;
        it.scan = if it.reverse {
            it.scan(it.lo.clone(), range::lower(&it.hi, key))
        } else {
            it.scan(range::raise(&it.lo, key), it.hi.clone())
        };
        Ok(CAIRN_OK)
    })
}

fn current(it: Option<&cairn_iter_t>) -> Result<&Current, Failure> {
    let it = it.ok_or_else(|| Failure::invalid("iterator is NULL"))?;
    it.current
        .as_ref()
        .ok_or_else(|| Failure::invalid("the iterator is not on an entry (call cairn_iter_next)"))
}

/// The current entry's key: `*key` points into the iterator (valid until the next
/// `cairn_iter_next`, `cairn_iter_seek` or `cairn_iter_destroy`), `*key_len` its length.
/// `CAIRN_INVALID_ARGUMENT` if the iterator is not on an entry.
#[no_mangle]
pub extern "C" fn cairn_iter_key(
    it: Option<&cairn_iter_t>,
    key: Option<&mut *const c_char>,
    key_len: Option<&mut usize>,
    errptr: Option<&mut *mut c_char>,
) -> cairn_status_t {
    run(errptr, || {
        let (ptr, len) = key
            .zip(key_len)
            .ok_or_else(|| Failure::invalid("key or key_len is NULL"))?;
        let k = &current(it)?.key;
        *ptr = k.as_ptr().cast();
        *len = k.len();
        Ok(CAIRN_OK)
    })
}

/// The current entry's value; as `cairn_iter_key`.
#[no_mangle]
pub extern "C" fn cairn_iter_value(
    it: Option<&cairn_iter_t>,
    value: Option<&mut *const c_char>,
    value_len: Option<&mut usize>,
    errptr: Option<&mut *mut c_char>,
) -> cairn_status_t {
    run(errptr, || {
        let (ptr, len) = value
            .zip(value_len)
            .ok_or_else(|| Failure::invalid("value or value_len is NULL"))?;
        let v = current(it)?
            .value
            .as_ref()
            .ok_or_else(|| Failure::invalid("a head scan reads no values (CAIRN_SCAN_HEADS)"))?;
        *ptr = v.as_ptr().cast();
        *len = v.len();
        Ok(CAIRN_OK)
    })
}

/// The current entry's head (everything but its value), for a scan of
/// `CAIRN_SCAN_HEADS` or `CAIRN_SCAN_ENTRIES`: as `cairn_head` fills it (its `meta` is
/// `malloc`ed: free it with `cairn_free`). `CAIRN_INVALID_ARGUMENT` if the iterator is not
/// on an entry or scans values only (`*head` zeroed).
#[no_mangle]
pub extern "C" fn cairn_iter_head(
    it: Option<&cairn_iter_t>,
    head: Option<&mut cairn_head_t>,
    errptr: Option<&mut *mut c_char>,
) -> cairn_status_t {
    run(errptr, || {
        let out = head.ok_or_else(|| Failure::invalid("head is NULL"))?;
        *out = cairn_head_t::EMPTY;
        let h = current(it)?.head.as_ref().ok_or_else(|| {
            Failure::invalid(
                "a value scan reads no heads (use CAIRN_SCAN_HEADS or CAIRN_SCAN_ENTRIES)",
            )
        })?;
        *out = cairn_head_t::of(h)?;
        Ok(CAIRN_OK)
    })
}

/// Frees the iterator (NULL is ignored).
#[no_mangle]
pub extern "C" fn cairn_iter_destroy(it: Option<Box<cairn_iter_t>>) {
    let _ = run(None, move || {
        drop(it);
        Ok(CAIRN_OK)
    });
}
