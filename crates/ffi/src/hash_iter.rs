//! `cairn_hash_iter_t`: iteration over a constant store, either over the live entries of
//! a reader (`cairn_hash_reader_iter`, [`engine::hash::HashIter`]: one PUT per live key,
//! in log order) or over every entry of a log file (`cairn_hash_log_iter`,
//! [`engine::hash::LogIter`]: PUTs and DELETEs as written).
//!
//! Invariants: as the ordered store's iterator (iter.rs): positioned only after
//! `cairn_hash_iter_next` returned `CAIRN_OK`; key and value pointers valid until the
//! next `cairn_hash_iter_next` or `cairn_hash_iter_destroy`; after an error or the end,
//! `CAIRN_NOT_FOUND`.
//!
//! Thread-safety: not thread-safe; one thread at a time (it may move between threads).

use std::ffi::{c_char, c_int};

use engine::hash::{EntryKind, HashIter, LogIter, LogReader};

use crate::args;
use crate::guard::run;
use crate::hash_reader::cairn_hash_reader_t;
use crate::status::{cairn_status_t, Failure, CAIRN_NOT_FOUND, CAIRN_OK};

/// Entry kind `CAIRN_HASH_PUT`: the key was set to the value.
pub const CAIRN_HASH_PUT: c_int = 0;
/// Entry kind `CAIRN_HASH_DELETE`: the key was removed (the value is empty).
pub const CAIRN_HASH_DELETE: c_int = 1;

enum Source {
    Live(HashIter),
    Log(LogIter),
}

/// An iteration over a constant store. Not thread-safe.
#[allow(non_camel_case_types)]
pub struct cairn_hash_iter_t {
    source: Option<Source>,
    current: Option<(c_int, Vec<u8>, Vec<u8>)>,
}

fn boxed(source: Source) -> *mut cairn_hash_iter_t {
    Box::into_raw(Box::new(cairn_hash_iter_t {
        source: Some(source),
        current: None,
    }))
}

/// Iterates the live entries of `r` (each key's current value, in log order).
#[no_mangle]
pub extern "C" fn cairn_hash_reader_iter(
    r: Option<&cairn_hash_reader_t>,
    out: Option<&mut *mut cairn_hash_iter_t>,
    errptr: Option<&mut *mut c_char>,
) -> cairn_status_t {
    run(errptr, || {
        let out = out.ok_or_else(|| Failure::invalid("out is NULL"))?;
        *out = std::ptr::null_mut();
        let r = r.ok_or_else(|| Failure::invalid("reader is NULL"))?;
        *out = boxed(Source::Live(r.reader.iter()));
        Ok(CAIRN_OK)
    })
}

/// Iterates every entry (PUT and DELETE) of the log file at `log_path`, in file order.
///
/// # Safety
/// `log_path` must be a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn cairn_hash_log_iter(
    log_path: *const c_char,
    out: Option<&mut *mut cairn_hash_iter_t>,
    errptr: Option<&mut *mut c_char>,
) -> cairn_status_t {
    run(errptr, || {
        let out = out.ok_or_else(|| Failure::invalid("out is NULL"))?;
        *out = std::ptr::null_mut();
        // SAFETY: the caller guarantees `log_path` is NULL or NUL-terminated.
        let path = unsafe { args::path(log_path, "log_path") }?;
        let log = LogReader::open(path)?;
        *out = boxed(Source::Log(log.iter()));
        Ok(CAIRN_OK)
    })
}

/// Moves to the next entry: `CAIRN_OK`, `CAIRN_NOT_FOUND` at the end, or an error (after
/// which the iteration has ended).
#[no_mangle]
pub extern "C" fn cairn_hash_iter_next(
    it: Option<&mut cairn_hash_iter_t>,
    errptr: Option<&mut *mut c_char>,
) -> cairn_status_t {
    run(errptr, || {
        let it = it.ok_or_else(|| Failure::invalid("iterator is NULL"))?;
        it.current = None;
        let item = match it.source.as_mut() {
            None => return Ok(CAIRN_NOT_FOUND),
            Some(Source::Live(i)) => i.next().map(|r| r.map(|(k, v)| (CAIRN_HASH_PUT, k, v))),
            Some(Source::Log(i)) => i.next().map(|r| {
                r.map(|e| {
                    let kind = match e.kind {
                        EntryKind::Put => CAIRN_HASH_PUT,
                        EntryKind::Delete => CAIRN_HASH_DELETE,
                    };
                    (kind, e.key, e.value)
                })
            }),
        };
        match item {
            Some(Ok(entry)) => {
                it.current = Some(entry);
                Ok(CAIRN_OK)
            }
            Some(Err(e)) => {
                it.source = None;
                Err(e.into())
            }
            None => {
                it.source = None;
                Ok(CAIRN_NOT_FOUND)
            }
        }
    })
}

fn current(it: Option<&cairn_hash_iter_t>) -> Result<&(c_int, Vec<u8>, Vec<u8>), Failure> {
    let it = it.ok_or_else(|| Failure::invalid("iterator is NULL"))?;
    it.current.as_ref().ok_or_else(|| {
        Failure::invalid("the iterator is not on an entry (call cairn_hash_iter_next)")
    })
}

/// The current entry's kind, `CAIRN_HASH_PUT` or `CAIRN_HASH_DELETE`, in `*kind`.
#[no_mangle]
pub extern "C" fn cairn_hash_iter_kind(
    it: Option<&cairn_hash_iter_t>,
    kind: Option<&mut c_int>,
    errptr: Option<&mut *mut c_char>,
) -> cairn_status_t {
    run(errptr, || {
        let out = kind.ok_or_else(|| Failure::invalid("kind is NULL"))?;
        *out = current(it)?.0;
        Ok(CAIRN_OK)
    })
}

/// The current entry's key, pointing into the iterator (see the module rules).
#[no_mangle]
pub extern "C" fn cairn_hash_iter_key(
    it: Option<&cairn_hash_iter_t>,
    key: Option<&mut *const c_char>,
    key_len: Option<&mut usize>,
    errptr: Option<&mut *mut c_char>,
) -> cairn_status_t {
    run(errptr, || {
        let (ptr, len) = key
            .zip(key_len)
            .ok_or_else(|| Failure::invalid("key or key_len is NULL"))?;
        let (_, k, _) = current(it)?;
        *ptr = k.as_ptr().cast();
        *len = k.len();
        Ok(CAIRN_OK)
    })
}

/// The current entry's value (empty for a DELETE), pointing into the iterator.
#[no_mangle]
pub extern "C" fn cairn_hash_iter_value(
    it: Option<&cairn_hash_iter_t>,
    value: Option<&mut *const c_char>,
    value_len: Option<&mut usize>,
    errptr: Option<&mut *mut c_char>,
) -> cairn_status_t {
    run(errptr, || {
        let (ptr, len) = value
            .zip(value_len)
            .ok_or_else(|| Failure::invalid("value or value_len is NULL"))?;
        let (_, _, v) = current(it)?;
        *ptr = v.as_ptr().cast();
        *len = v.len();
        Ok(CAIRN_OK)
    })
}

/// Frees the iterator (NULL is ignored).
#[no_mangle]
pub extern "C" fn cairn_hash_iter_destroy(it: Option<Box<cairn_hash_iter_t>>) {
    let _ = run(None, move || {
        drop(it);
        Ok(CAIRN_OK)
    });
}
