//! `cairn_iter_t`: a forward or reverse scan over a key range or prefix of one keyspace
//! ([`engine::Iter`]), with seek.
//!
//! The engine's scans have no seek; a seek here starts a new scan over the original range
//! narrowed to begin (forward) or end (reverse) at the sought key. With a snapshot every
//! scan reads at that snapshot; without one, each scan (the first, and each seek's) reads
//! the store's state at the moment it starts.
//!
//! Invariants:
//! 1. The iterator is positioned (key and value readable) only after a `cairn_iter_next`
//!    that returned `CAIRN_OK`; the pointers it hands out stay valid until the next call
//!    of `cairn_iter_next`, `cairn_iter_seek` or `cairn_iter_destroy`.
//! 2. After an error or the end, `cairn_iter_next` keeps returning `CAIRN_NOT_FOUND`
//!    until a seek starts a new scan.
//!
//! Thread-safety: not thread-safe; one thread at a time (it may move between threads).
//! Iterators over the same keyspace on different threads are independent.

use std::ffi::c_char;
use std::ops::Bound;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use engine::Readable;

use crate::args;
use crate::db;
use crate::guard::run;
use crate::keyspace::{self, cairn_keyspace_t};
use crate::range;
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
    /// `None` once the scan ended or failed, or when its range is empty.
    scan: Option<engine::Iter>,
    current: Option<(Vec<u8>, Vec<u8>)>,
}

impl cairn_iter_t {
    fn scan(&self, lo: Bound<Vec<u8>>, hi: Bound<Vec<u8>>) -> Option<engine::Iter> {
        if range::is_empty(&lo, &hi) {
            return None;
        }
        Some(match &self.snapshot {
            Some(s) => s.range(&self.keyspace, (lo, hi)),
            None => self.keyspace.range((lo, hi)),
        })
    }
}

fn create(
    ks: Option<&cairn_keyspace_t>,
    snapshot: Option<&cairn_snapshot_t>,
    bounds: (Bound<Vec<u8>>, Bound<Vec<u8>>),
    reverse: u8,
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
        create(ks, snapshot, range::half_open(start, end), reverse, out)
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
        create(ks, snapshot, range::prefix(prefix), reverse, out)
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
        let item = if it.reverse {
            scan.next_back()
        } else {
            scan.next()
        };
        match item {
            Some(Ok(pair)) => {
                it.current = Some(pair);
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

fn current(it: Option<&cairn_iter_t>) -> Result<&(Vec<u8>, Vec<u8>), Failure> {
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
        let (k, _) = current(it)?;
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
        let (_, v) = current(it)?;
        *ptr = v.as_ptr().cast();
        *len = v.len();
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
