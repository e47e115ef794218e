//! `sparkey_hash_*` and `sparkey_logiter_hashnext`: building an index, opening a
//! log/index pair, lookups and the live-entry iterator (spec §9), over
//! [`cairn::hash::write_index`], [`cairn::hash::Reader`] and [`cairn::hash::LogCursor`].
//!
//! A hash reader owns an embedded log reader handle (returned by `sparkey_hash_getreader`);
//! `sparkey_hash_close` closes both, and both handles stay valid (closed) afterwards, so
//! iterators used after the close get -204/-304 rather than a use-after-free.

use std::ffi::{c_char, c_int};

use cairn::hash::{write_index, HashSize, IndexOptions, LogReader, Reader};

use crate::args;
use crate::handle::{guard, guard_code, status, Handle, HASHREADER_OPEN, LOGREADER_OPEN};
use crate::logiter::{open_iter, Iter};
use crate::logreader::Log;
use crate::returncode::{
    of_error, of_result, HASH_CLOSED, HASH_SIZE_INVALID, INTERNAL_ERROR, LOG_ITERATOR_CLOSED,
    LOG_ITERATOR_MISMATCH, SUCCESS,
};

/// An open log/index pair and the handle of its embedded log reader.
#[derive(Debug)]
pub struct Pair {
    reader: Reader,
    /// Created with `Handle::into_raw`, never freed; closed with the pair.
    log: *mut Log,
}

/// The C `sparkey_hashreader`.
pub type HashReader = Handle<Pair>;

/// The open pair behind `reader`, if any.
///
/// # Safety
/// `reader` is NULL or a handle this library created.
unsafe fn open_pair<'a>(reader: *mut HashReader) -> Option<&'a Pair> {
    // SAFETY: forwarded contract: NULL or a handle of this library.
    if unsafe { status(reader) } != Some(HASHREADER_OPEN) {
        return None;
    }
    // SAFETY: the status word says `reader` is an open `HashReader`; shared use by threads
    // only reads it (closing is not concurrent with other calls, by the API's contract).
    unsafe { &*reader }.get(HASHREADER_OPEN)
}

/// `sparkey_hash_write`: `hash_size` 0 (auto), 4 or 8; incremental if an index exists.
///
/// # Safety
/// `hash_filename` and `log_filename` are NULL or NUL-terminated strings.
#[no_mangle]
pub unsafe extern "C" fn sparkey_hash_write(
    hash_filename: *const c_char,
    log_filename: *const c_char,
    hash_size: c_int,
) -> c_int {
    guard_code(|| {
        let size = match hash_size {
            0 => HashSize::Auto,
            4 => HashSize::Bits32,
            8 => HashSize::Bits64,
            _ => return HASH_SIZE_INVALID,
        };
        // SAFETY: both are NULL or NUL-terminated (contract).
        let (Some(index), Some(log)) = (unsafe { args::path(hash_filename) }, unsafe {
            args::path(log_filename)
        }) else {
            return INTERNAL_ERROR;
        };
        of_result(write_index(
            index,
            log,
            &IndexOptions::default().hash_size(size),
        ))
    })
}

/// `sparkey_hash_open`.
///
/// # Safety
/// `reader` is NULL or valid for writing a pointer; the names are NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn sparkey_hash_open(
    reader: *mut *mut HashReader,
    hash_filename: *const c_char,
    log_filename: *const c_char,
) -> c_int {
    guard_code(|| {
        // SAFETY: both are NULL or NUL-terminated (contract).
        let (Some(index), Some(log)) = (unsafe { args::path(hash_filename) }, unsafe {
            args::path(log_filename)
        }) else {
            return INTERNAL_ERROR;
        };
        if reader.is_null() {
            return INTERNAL_ERROR;
        }
        match Reader::open(index, log) {
            Ok(r) => {
                let log: LogReader = r.log().clone();
                let pair = Pair {
                    reader: r,
                    log: Handle::into_raw(LOGREADER_OPEN, log),
                };
                let handle = Handle::into_raw(HASHREADER_OPEN, pair);
                // SAFETY: `reader` is non-NULL and valid for a pointer write (contract).
                unsafe { reader.write(handle) };
                SUCCESS
            }
            Err(e) => of_error(&e),
        }
    })
}

/// `sparkey_hash_getreader`: the embedded log reader (NULL for a NULL or closed reader).
///
/// # Safety
/// `reader` is NULL or a handle of this library.
#[no_mangle]
pub unsafe extern "C" fn sparkey_hash_getreader(reader: *mut HashReader) -> *mut Log {
    guard(std::ptr::null_mut(), || {
        // SAFETY: forwarded contract.
        match unsafe { open_pair(reader) } {
            Some(p) => p.log,
            None => std::ptr::null_mut(),
        }
    })
}

/// `sparkey_hash_close`: NULL-safe; closes the embedded log reader too.
///
/// # Safety
/// `reader` is NULL or valid for reading and writing a pointer, which is NULL or a handle
/// of this library not in use by another thread.
#[no_mangle]
pub unsafe extern "C" fn sparkey_hash_close(reader: *mut *mut HashReader) {
    guard((), || {
        if reader.is_null() {
            return;
        }
        // SAFETY: `reader` is non-NULL and valid for reading a pointer (contract).
        let r = unsafe { reader.read() };
        // SAFETY: `r` is NULL or a handle of this library (contract).
        if unsafe { status(r) } == Some(HASHREADER_OPEN) {
            // SAFETY: `r` is an open `HashReader`; closing is not concurrent with other
            // calls on it (API contract), so this is the only reference.
            if let Some(pair) = unsafe { &mut *r }.close(HASHREADER_OPEN) {
                // SAFETY: `pair.log` was created by `Handle::into_raw` in `hash_open` and is
                // never freed; no other call uses it while its hash reader closes.
                drop(unsafe { &mut *pair.log }.close(LOGREADER_OPEN));
            }
        }
        // SAFETY: `reader` is valid for writing a pointer (contract).
        unsafe { reader.write(std::ptr::null_mut()) };
    })
}

/// `sparkey_hash_get`: found → iterator ACTIVE with the key consumed; absent → iterator
/// INVALID and `SPARKEY_SUCCESS`.
///
/// # Safety
/// `reader` and `iter` are NULL or handles of this library (`iter` used by this thread
/// only); `key` is NULL or points to `keylen` readable bytes.
#[no_mangle]
pub unsafe extern "C" fn sparkey_hash_get(
    reader: *mut HashReader,
    key: *const u8,
    keylen: u64,
    iter: *mut Iter,
) -> c_int {
    guard_code(|| {
        // SAFETY: forwarded contract.
        let Some(pair) = (unsafe { open_pair(reader) }) else {
            return HASH_CLOSED;
        };
        // SAFETY: forwarded contract.
        let Some(cursor) = (unsafe { open_iter(iter) }) else {
            return LOG_ITERATOR_CLOSED;
        };
        if cursor.file_identifier() != pair.reader.log().header().file_identifier {
            return LOG_ITERATOR_MISMATCH;
        }
        // SAFETY: `key` is NULL or points to `keylen` readable bytes (contract).
        let Some(key) = (unsafe { args::bytes(key, keylen) }) else {
            return INTERNAL_ERROR;
        };
        of_result(cursor.seek_key(&pair.reader, key))
    })
}

/// `sparkey_logiter_hashnext`: the next live entry, rewound to its key.
///
/// # Safety
/// `iter` and `reader` are NULL or handles of this library; `iter` used by this thread only.
#[no_mangle]
pub unsafe extern "C" fn sparkey_logiter_hashnext(
    iter: *mut Iter,
    reader: *mut HashReader,
) -> c_int {
    guard_code(|| {
        // SAFETY: forwarded contract.
        let Some(pair) = (unsafe { open_pair(reader) }) else {
            return HASH_CLOSED;
        };
        // SAFETY: forwarded contract.
        let Some(cursor) = (unsafe { open_iter(iter) }) else {
            return LOG_ITERATOR_CLOSED;
        };
        if cursor.file_identifier() != pair.reader.log().header().file_identifier {
            return LOG_ITERATOR_MISMATCH;
        }
        of_result(cursor.next_live(&pair.reader))
    })
}

/// `sparkey_hash_numentries` (0 for a NULL or closed reader).
///
/// # Safety
/// `reader` is NULL or a handle of this library.
#[no_mangle]
pub unsafe extern "C" fn sparkey_hash_numentries(reader: *mut HashReader) -> u64 {
    guard(0, || {
        // SAFETY: forwarded contract.
        unsafe { open_pair(reader) }.map_or(0, |p| p.reader.header().num_entries)
    })
}

/// `sparkey_hash_numcollisions` (0 for a NULL or closed reader).
///
/// # Safety
/// `reader` is NULL or a handle of this library.
#[no_mangle]
pub unsafe extern "C" fn sparkey_hash_numcollisions(reader: *mut HashReader) -> u64 {
    guard(0, || {
        // SAFETY: forwarded contract.
        unsafe { open_pair(reader) }.map_or(0, |p| p.reader.header().hash_collisions)
    })
}
