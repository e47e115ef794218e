//! `sparkey_logreader_*`: opening a log for reading and its header getters (spec §9),
//! over [`cairn::hash::LogReader`].
//!
//! A log reader handle may be shared by threads (the API's contract), so it is only ever
//! reached through shared references. Getters on a NULL or closed reader return 0 (the
//! reference reads freed memory).

use std::ffi::{c_char, c_int};

use cairn::hash::{Compression, LogReader};

use crate::args;
use crate::handle::{guard, guard_code, status, Handle, LOGREADER_OPEN};
use crate::returncode::{of_error, INTERNAL_ERROR, SUCCESS};

/// The C `sparkey_logreader`.
pub type Log = Handle<LogReader>;

/// The open log behind `log`, if any.
///
/// # Safety
/// `log` is NULL or a handle this library created.
pub unsafe fn open_log<'a>(log: *mut Log) -> Option<&'a LogReader> {
    // SAFETY: forwarded contract: NULL or a handle of this library.
    if unsafe { status(log) } != Some(LOGREADER_OPEN) {
        return None;
    }
    // SAFETY: the status word says `log` is a `Log`; readers are only read while open
    // (closing is not concurrent with other calls, by the API's contract).
    unsafe { &*log }.get(LOGREADER_OPEN)
}

/// `sparkey_logreader_open`.
///
/// # Safety
/// `log` is NULL or valid for writing a pointer; `filename` is NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn sparkey_logreader_open(
    log: *mut *mut Log,
    filename: *const c_char,
) -> c_int {
    guard_code(|| {
        // SAFETY: `filename` is NULL or NUL-terminated (contract).
        let Some(path) = (unsafe { args::path(filename) }) else {
            return INTERNAL_ERROR;
        };
        if log.is_null() {
            return INTERNAL_ERROR;
        }
        match LogReader::open(path) {
            Ok(reader) => {
                let handle = Handle::into_raw(LOGREADER_OPEN, reader);
                // SAFETY: `log` is non-NULL and valid for a pointer write (contract).
                unsafe { log.write(handle) };
                SUCCESS
            }
            Err(e) => of_error(&e),
        }
    })
}

/// `sparkey_logreader_close`: NULL-safe; a closed reader's handle stays valid (closed).
///
/// # Safety
/// `log` is NULL or valid for reading and writing a pointer, which is NULL or a handle of
/// this library not in use by another thread.
#[no_mangle]
pub unsafe extern "C" fn sparkey_logreader_close(log: *mut *mut Log) {
    guard((), || {
        if log.is_null() {
            return;
        }
        // SAFETY: `log` is non-NULL and valid for reading a pointer (contract).
        let l = unsafe { log.read() };
        // SAFETY: `l` is NULL or a handle of this library (contract).
        if unsafe { status(l) } == Some(LOGREADER_OPEN) {
            // SAFETY: `l` is an open `Log`; closing is not concurrent with any other call
            // on it (API contract), so this is the only reference.
            drop(unsafe { &mut *l }.close(LOGREADER_OPEN));
        }
        // SAFETY: `log` is valid for writing a pointer (contract).
        unsafe { log.write(std::ptr::null_mut()) };
    })
}

/// Applies `f` to the header of the open log `log`, or returns `default`.
///
/// # Safety
/// `log` is NULL or a handle this library created.
unsafe fn header_field<R: Copy>(
    log: *mut Log,
    default: R,
    f: impl FnOnce(&cairn::hash::raw::LogHeader) -> R,
) -> R {
    guard(default, || {
        // SAFETY: forwarded contract.
        match unsafe { open_log(log) } {
            Some(l) => f(l.header()),
            None => default,
        }
    })
}

/// `sparkey_logreader_maxkeylen` (0 for a NULL or closed reader).
///
/// # Safety
/// `log` is NULL or a handle of this library.
#[no_mangle]
pub unsafe extern "C" fn sparkey_logreader_maxkeylen(log: *mut Log) -> u64 {
    // SAFETY: forwarded contract.
    unsafe { header_field(log, 0, |h| h.max_key_len) }
}

/// `sparkey_logreader_maxvaluelen` (0 for a NULL or closed reader).
///
/// # Safety
/// `log` is NULL or a handle of this library.
#[no_mangle]
pub unsafe extern "C" fn sparkey_logreader_maxvaluelen(log: *mut Log) -> u64 {
    // SAFETY: forwarded contract.
    unsafe { header_field(log, 0, |h| h.max_value_len) }
}

/// `sparkey_logreader_get_compression_blocksize` (0 for a NULL or closed reader).
///
/// # Safety
/// `log` is NULL or a handle of this library.
#[no_mangle]
pub unsafe extern "C" fn sparkey_logreader_get_compression_blocksize(log: *mut Log) -> c_int {
    // SAFETY: forwarded contract.
    unsafe {
        header_field(log, 0, |h| {
            if h.compression == Compression::None {
                0
            } else {
                c_int::try_from(h.block_size).unwrap_or(c_int::MAX)
            }
        })
    }
}

/// `sparkey_logreader_get_compression_type` (`SPARKEY_COMPRESSION_NONE` for a NULL or
/// closed reader).
///
/// # Safety
/// `log` is NULL or a handle of this library.
#[no_mangle]
pub unsafe extern "C" fn sparkey_logreader_get_compression_type(log: *mut Log) -> c_int {
    // SAFETY: forwarded contract.
    unsafe { header_field(log, 0, |h| h.compression.code() as c_int) }
}
