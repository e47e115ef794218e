//! `sparkey_logwriter_*`: creating, appending to and closing a log (spec §9), over
//! [`cairn::hash::LogWriter`].
//!
//! Differences from the reference (see README.md): a compression type other than 0, 1, 2
//! returns `SPARKEY_INVALID_COMPRESSION_TYPE` instead of writing a header every reader
//! rejects; closing a NULL or already-closed writer returns `SPARKEY_SUCCESS` instead of
//! dereferencing NULL; a new log replaces the old file atomically (a temporary file renamed
//! into place) rather than by unlink + create. Like the reference, nothing here fsyncs:
//! `flush` and `close` write the entries and the header, so a process crash loses nothing
//! flushed, a power loss may.

use std::ffi::{c_char, c_int};

use cairn::hash::{Compression, LogOptions, LogWriter, MAX_BLOCK_SIZE, MIN_BLOCK_SIZE};

use crate::args;
use crate::handle::{guard_code, status, Handle, LOGWRITER_OPEN};
use crate::returncode::{
    of_error, of_result, INTERNAL_ERROR, INVALID_COMPRESSION_BLOCK_SIZE, INVALID_COMPRESSION_TYPE,
    LOG_CLOSED, SUCCESS,
};

/// The C `sparkey_logwriter`.
pub type Writer = Handle<LogWriter>;

/// The open writer behind `log`, if any.
///
/// # Safety
/// `log` is NULL or a handle this library created.
unsafe fn open_writer<'a>(log: *mut Writer) -> Option<&'a mut LogWriter> {
    // SAFETY: forwarded contract: NULL or a handle of this library.
    if unsafe { status(log) } != Some(LOGWRITER_OPEN) {
        return None;
    }
    // SAFETY: the status word says `log` is an open `Writer`; writers are used by one
    // thread at a time (the API's contract), so no other reference to it exists.
    unsafe { &mut *log }.get_mut(LOGWRITER_OPEN)
}

fn publish(out: *mut *mut Writer, writer: LogWriter) -> c_int {
    let handle = Handle::into_raw(LOGWRITER_OPEN, writer);
    // SAFETY: callers checked `out` is non-NULL; it is valid for a pointer write by the
    // API's contract.
    unsafe { out.write(handle) };
    SUCCESS
}

/// `sparkey_logwriter_create`.
///
/// # Safety
/// `log` is NULL or valid for writing a pointer; `filename` is NULL or a NUL-terminated
/// string.
#[no_mangle]
pub unsafe extern "C" fn sparkey_logwriter_create(
    log: *mut *mut Writer,
    filename: *const c_char,
    compression_type: c_int,
    compression_block_size: c_int,
) -> c_int {
    guard_code(|| {
        // SAFETY: `filename` is NULL or NUL-terminated (contract).
        let Some(path) = (unsafe { args::path(filename) }) else {
            return INTERNAL_ERROR;
        };
        if log.is_null() {
            return INTERNAL_ERROR;
        }
        let compression = match compression_type {
            0 => Compression::None,
            1 => Compression::Snappy,
            2 => Compression::Zstd,
            _ => return INVALID_COMPRESSION_TYPE,
        };
        let block_size = if compression == Compression::None {
            0
        } else {
            match u32::try_from(compression_block_size) {
                Ok(b) if (MIN_BLOCK_SIZE..=MAX_BLOCK_SIZE).contains(&b) => b,
                _ => return INVALID_COMPRESSION_BLOCK_SIZE,
            }
        };
        let options = LogOptions::default().compression(compression, block_size);
        match LogWriter::create(path, &options) {
            Ok(w) => publish(log, w),
            Err(e) => of_error(&e),
        }
    })
}

/// `sparkey_logwriter_append`.
///
/// # Safety
/// As [`sparkey_logwriter_create`].
#[no_mangle]
pub unsafe extern "C" fn sparkey_logwriter_append(
    log: *mut *mut Writer,
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
        match LogWriter::append(path) {
            Ok(w) => publish(log, w),
            Err(e) => of_error(&e),
        }
    })
}

/// `sparkey_logwriter_put`.
///
/// # Safety
/// `log` is NULL or a handle of this library; `key` and `value` are NULL or point to
/// `keylen` and `valuelen` readable bytes.
#[no_mangle]
pub unsafe extern "C" fn sparkey_logwriter_put(
    log: *mut Writer,
    keylen: u64,
    key: *const u8,
    valuelen: u64,
    value: *const u8,
) -> c_int {
    guard_code(|| {
        // SAFETY: `log` is NULL or a handle of this library (contract).
        let Some(w) = (unsafe { open_writer(log) }) else {
            return LOG_CLOSED;
        };
        // SAFETY: `key`/`value` are NULL or point to that many readable bytes (contract).
        let (Some(k), Some(v)) = (unsafe { args::bytes(key, keylen) }, unsafe {
            args::bytes(value, valuelen)
        }) else {
            return INTERNAL_ERROR;
        };
        of_result(w.put(k, v))
    })
}

/// `sparkey_logwriter_delete`.
///
/// # Safety
/// As [`sparkey_logwriter_put`].
#[no_mangle]
pub unsafe extern "C" fn sparkey_logwriter_delete(
    log: *mut Writer,
    keylen: u64,
    key: *const u8,
) -> c_int {
    guard_code(|| {
        // SAFETY: `log` is NULL or a handle of this library (contract).
        let Some(w) = (unsafe { open_writer(log) }) else {
            return LOG_CLOSED;
        };
        // SAFETY: `key` is NULL or points to `keylen` readable bytes (contract).
        let Some(k) = (unsafe { args::bytes(key, keylen) }) else {
            return INTERNAL_ERROR;
        };
        of_result(w.delete(k))
    })
}

/// `sparkey_logwriter_flush`.
///
/// # Safety
/// `log` is NULL or a handle of this library.
#[no_mangle]
pub unsafe extern "C" fn sparkey_logwriter_flush(log: *mut Writer) -> c_int {
    guard_code(|| {
        // SAFETY: `log` is NULL or a handle of this library (contract).
        let Some(w) = (unsafe { open_writer(log) }) else {
            return LOG_CLOSED;
        };
        of_result(w.flush())
    })
}

/// `sparkey_logwriter_close`.
///
/// # Safety
/// `log` is NULL or valid for reading and writing a pointer, which is NULL or a handle of
/// this library.
#[no_mangle]
pub unsafe extern "C" fn sparkey_logwriter_close(log: *mut *mut Writer) -> c_int {
    guard_code(|| {
        if log.is_null() {
            return SUCCESS;
        }
        // SAFETY: `log` is non-NULL and valid for reading a pointer (contract).
        let w = unsafe { log.read() };
        // SAFETY: `w` is NULL or a handle of this library (contract).
        if unsafe { status(w) } != Some(LOGWRITER_OPEN) {
            return SUCCESS;
        }
        // SAFETY: `w` is an open writer handle, used by this thread only (API contract).
        let handle = unsafe { &mut *w };
        // Like the reference: flush (entries and header written, no fsync), then close.
        let result = match handle.close(LOGWRITER_OPEN) {
            Some(mut writer) => of_result(writer.flush()),
            None => SUCCESS,
        };
        // SAFETY: `log` is valid for writing a pointer (contract).
        unsafe { log.write(std::ptr::null_mut()) };
        result
    })
}
