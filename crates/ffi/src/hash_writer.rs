//! The constant store's write side: `cairn_hash_logwriter_t` (a Sparkey log being
//! written, [`engine::hash::LogWriter`]) and `cairn_hash_write_index` (build the hash
//! index of a log, [`engine::hash::write_index`]) and `cairn_hash_verify` (check a pair
//! completely, [`engine::hash::verify`]).
//!
//! Invariant: after `cairn_hash_logwriter_close` the handle holds no writer; every later
//! call but destroy returns `CAIRN_CLOSED`. Destroying an unclosed writer flushes it
//! (best effort, errors unreported), as the engine's `Drop` does.
//!
//! Thread-safety: a log writer is not thread-safe; one thread at a time (it may move
//! between threads). `cairn_hash_write_index` may run on any thread.

use std::ffi::{c_char, c_int};

use engine::hash::{Compression, HashSize, IndexOptions, LogOptions, LogWriter};

use crate::args;
use crate::guard::run;
use crate::status::{cairn_status_t, Failure, CAIRN_OK};

/// Log compression `CAIRN_HASH_COMPRESSION_NONE` (Sparkey's code 0).
pub const CAIRN_HASH_COMPRESSION_NONE: c_int = 0;
/// Log compression `CAIRN_HASH_COMPRESSION_SNAPPY` (Sparkey's code 1).
pub const CAIRN_HASH_COMPRESSION_SNAPPY: c_int = 1;
/// Log compression `CAIRN_HASH_COMPRESSION_ZSTD` (Sparkey's code 2).
pub const CAIRN_HASH_COMPRESSION_ZSTD: c_int = 2;

/// A Sparkey log being written. Not thread-safe.
#[allow(non_camel_case_types)]
pub struct cairn_hash_logwriter_t {
    writer: Option<LogWriter>,
}

fn live(w: Option<&mut cairn_hash_logwriter_t>) -> Result<&mut LogWriter, Failure> {
    let w = w.ok_or_else(|| Failure::invalid("log writer is NULL"))?;
    w.writer
        .as_mut()
        .ok_or_else(|| Failure::closed("log writer"))
}

/// Creates (or atomically replaces) the log at `path` with a `CAIRN_HASH_COMPRESSION_*`
/// kind and, for compressed logs, `block_size` uncompressed bytes per block (10 to 2^30;
/// 4096 is usual). Stores the writer in `*out`.
///
/// # Safety
/// `path` must be a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn cairn_hash_logwriter_create(
    path: *const c_char,
    compression: c_int,
    block_size: u32,
    out: Option<&mut *mut cairn_hash_logwriter_t>,
    errptr: Option<&mut *mut c_char>,
) -> cairn_status_t {
    // SAFETY: the caller's guarantees are this function's.
    unsafe { cairn_hash_logwriter_create_with(path, compression, block_size, None, out, errptr) }
}

/// As `cairn_hash_logwriter_create`, with the log's file identifier (the number that
/// pairs a log with its index) taken from `*file_identifier` instead of drawn at random
/// (NULL: random). A fixed identifier gives byte-identical files from the same puts.
///
/// # Safety
/// `path` must be a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn cairn_hash_logwriter_create_with(
    path: *const c_char,
    compression: c_int,
    block_size: u32,
    file_identifier: Option<&u32>,
    out: Option<&mut *mut cairn_hash_logwriter_t>,
    errptr: Option<&mut *mut c_char>,
) -> cairn_status_t {
    run(errptr, || {
        let out = out.ok_or_else(|| Failure::invalid("out is NULL"))?;
        *out = std::ptr::null_mut();
        // SAFETY: the caller guarantees `path` is NULL or NUL-terminated.
        let path = unsafe { args::path(path, "path") }?;
        let compression = match compression {
            CAIRN_HASH_COMPRESSION_NONE => Compression::None,
            CAIRN_HASH_COMPRESSION_SNAPPY => Compression::Snappy,
            CAIRN_HASH_COMPRESSION_ZSTD => Compression::Zstd,
            other => return Err(Failure::invalid(format!("unknown compression {other}"))),
        };
        let mut options = LogOptions::default().compression(compression, block_size);
        if let Some(id) = file_identifier {
            options = options.file_identifier(*id);
        }
        let writer = LogWriter::create(path, &options)?;
        *out = Box::into_raw(Box::new(cairn_hash_logwriter_t {
            writer: Some(writer),
        }));
        Ok(CAIRN_OK)
    })
}

/// Reopens the existing log at `path` to append to it.
///
/// # Safety
/// `path` must be a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn cairn_hash_logwriter_append(
    path: *const c_char,
    out: Option<&mut *mut cairn_hash_logwriter_t>,
    errptr: Option<&mut *mut c_char>,
) -> cairn_status_t {
    run(errptr, || {
        let out = out.ok_or_else(|| Failure::invalid("out is NULL"))?;
        *out = std::ptr::null_mut();
        // SAFETY: the caller guarantees `path` is NULL or NUL-terminated.
        let path = unsafe { args::path(path, "path") }?;
        let writer = LogWriter::append(path)?;
        *out = Box::into_raw(Box::new(cairn_hash_logwriter_t {
            writer: Some(writer),
        }));
        Ok(CAIRN_OK)
    })
}

/// Appends "set `key` to `value`".
///
/// # Safety
/// `key` and `value` must point to `key_len` and `value_len` readable bytes (either may
/// be NULL with length 0).
#[no_mangle]
pub unsafe extern "C" fn cairn_hash_logwriter_put(
    writer: Option<&mut cairn_hash_logwriter_t>,
    key: *const c_char,
    key_len: usize,
    value: *const c_char,
    value_len: usize,
    errptr: Option<&mut *mut c_char>,
) -> cairn_status_t {
    run(errptr, || {
        let w = live(writer)?;
        // SAFETY: the caller guarantees `key_len` readable bytes at `key`.
        let key = unsafe { args::bytes(key, key_len, "key") }?;
        // SAFETY: the caller guarantees `value_len` readable bytes at `value`.
        let value = unsafe { args::bytes(value, value_len, "value") }?;
        w.put(key, value)?;
        Ok(CAIRN_OK)
    })
}

/// Appends "remove `key`".
///
/// # Safety
/// `key` must point to `key_len` readable bytes (NULL if `key_len` is 0).
#[no_mangle]
pub unsafe extern "C" fn cairn_hash_logwriter_delete(
    writer: Option<&mut cairn_hash_logwriter_t>,
    key: *const c_char,
    key_len: usize,
    errptr: Option<&mut *mut c_char>,
) -> cairn_status_t {
    run(errptr, || {
        let w = live(writer)?;
        // SAFETY: the caller guarantees `key_len` readable bytes at `key`.
        let key = unsafe { args::bytes(key, key_len, "key") }?;
        w.delete(key)?;
        Ok(CAIRN_OK)
    })
}

/// Writes buffered entries and the header, so readers opened afterwards see them (no
/// fsync).
#[no_mangle]
pub extern "C" fn cairn_hash_logwriter_flush(
    writer: Option<&mut cairn_hash_logwriter_t>,
    errptr: Option<&mut *mut c_char>,
) -> cairn_status_t {
    run(errptr, || {
        live(writer)?.flush()?;
        Ok(CAIRN_OK)
    })
}

/// Like `cairn_hash_logwriter_flush`, and makes the entries durable (fsync).
#[no_mangle]
pub extern "C" fn cairn_hash_logwriter_sync(
    writer: Option<&mut cairn_hash_logwriter_t>,
    errptr: Option<&mut *mut c_char>,
) -> cairn_status_t {
    run(errptr, || {
        live(writer)?.sync()?;
        Ok(CAIRN_OK)
    })
}

/// Flushes, fsyncs and closes the log. The handle must still be freed with
/// `cairn_hash_logwriter_destroy`; other calls on it return `CAIRN_CLOSED`.
#[no_mangle]
pub extern "C" fn cairn_hash_logwriter_close(
    writer: Option<&mut cairn_hash_logwriter_t>,
    errptr: Option<&mut *mut c_char>,
) -> cairn_status_t {
    run(errptr, || {
        let w = writer.ok_or_else(|| Failure::invalid("log writer is NULL"))?;
        let inner = w
            .writer
            .take()
            .ok_or_else(|| Failure::closed("log writer"))?;
        inner.close()?;
        Ok(CAIRN_OK)
    })
}

/// Frees the writer (NULL is ignored), flushing it first if it was not closed.
#[no_mangle]
pub extern "C" fn cairn_hash_logwriter_destroy(writer: Option<Box<cairn_hash_logwriter_t>>) {
    let _ = run(None, move || {
        drop(writer);
        Ok(CAIRN_OK)
    });
}

/// Builds the hash index of the log at `log_path` into `index_path` (replacing it
/// atomically). `hash_size` is 0 (automatic: 64-bit hashes for large logs), 4 or 8. An
/// existing index of the same log is extended with the entries appended since it was
/// built, or left as it is if it covers the whole log.
///
/// # Safety
/// `index_path` and `log_path` must be NUL-terminated strings.
#[no_mangle]
pub unsafe extern "C" fn cairn_hash_write_index(
    index_path: *const c_char,
    log_path: *const c_char,
    hash_size: c_int,
    errptr: Option<&mut *mut c_char>,
) -> cairn_status_t {
    // SAFETY: the caller's guarantees are this function's.
    unsafe { cairn_hash_write_index_with(index_path, log_path, hash_size, None, 0, errptr) }
}

/// As `cairn_hash_write_index`, with the hash seed of a fresh build taken from `*seed`
/// (NULL: random; an extended index keeps its seed), and, if `fresh` is non-zero, always
/// building from scratch. A fixed seed gives a byte-identical index of the same log.
///
/// # Safety
/// `index_path` and `log_path` must be NUL-terminated strings.
#[no_mangle]
pub unsafe extern "C" fn cairn_hash_write_index_with(
    index_path: *const c_char,
    log_path: *const c_char,
    hash_size: c_int,
    seed: Option<&u32>,
    fresh: u8,
    errptr: Option<&mut *mut c_char>,
) -> cairn_status_t {
    run(errptr, || {
        // SAFETY: the caller guarantees `index_path` is NULL or NUL-terminated.
        let index = unsafe { args::path(index_path, "index_path") }?;
        // SAFETY: the caller guarantees `log_path` is NULL or NUL-terminated.
        let log = unsafe { args::path(log_path, "log_path") }?;
        let size = match hash_size {
            0 => HashSize::Auto,
            4 => HashSize::Bits32,
            8 => HashSize::Bits64,
            other => {
                return Err(Failure::invalid(format!(
                    "hash size {other} is not 0, 4 or 8"
                )))
            }
        };
        let mut options = IndexOptions::default().hash_size(size).fresh(fresh != 0);
        if let Some(seed) = seed {
            options = options.seed(*seed);
        }
        engine::hash::write_index(index, log, &options)?;
        Ok(CAIRN_OK)
    })
}

/// What `cairn_hash_verify` checked.
#[repr(C)]
#[allow(non_camel_case_types)]
pub struct cairn_hash_verify_report_t {
    /// PUT entries decoded in the log.
    pub puts: u64,
    /// DELETE entries decoded in the log.
    pub deletes: u64,
    /// Occupied index slots checked.
    pub slots_checked: u64,
    /// Live entries the iteration yielded.
    pub live_entries: u64,
}

/// Checks a Sparkey pair completely: every log entry decodes and agrees with the log
/// header, every index slot points at a PUT of a key with that hash, every live key is
/// found, and the counts agree. `CAIRN_OK` if every check passed (`*report`, if not NULL,
/// says what was checked); `CAIRN_CORRUPTION` naming the file, offset and check that
/// failed.
///
/// # Safety
/// `index_path` and `log_path` must be NUL-terminated strings.
#[no_mangle]
pub unsafe extern "C" fn cairn_hash_verify(
    index_path: *const c_char,
    log_path: *const c_char,
    report: Option<&mut cairn_hash_verify_report_t>,
    errptr: Option<&mut *mut c_char>,
) -> cairn_status_t {
    run(errptr, || {
        // SAFETY: the caller guarantees `index_path` is NULL or NUL-terminated.
        let index = unsafe { args::path(index_path, "index_path") }?;
        // SAFETY: the caller guarantees `log_path` is NULL or NUL-terminated.
        let log = unsafe { args::path(log_path, "log_path") }?;
        let checked = engine::hash::verify(index, log)?;
        if let Some(out) = report {
            *out = cairn_hash_verify_report_t {
                puts: checked.puts,
                deletes: checked.deletes,
                slots_checked: checked.slots_checked,
                live_entries: checked.live_entries,
            };
        }
        Ok(CAIRN_OK)
    })
}
