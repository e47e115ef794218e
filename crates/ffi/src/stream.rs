//! Values streamed in and out without holding them whole: `cairn_put_from` writes a
//! value pulled from a read callback ([`engine::Keyspace::insert_from`]: in a keyspace
//! that separates values of its size, the value goes to a blob file through a bounded
//! buffer), and `cairn_value_reader_t` reads one in pieces ([`engine::ValueReader`]: a
//! separated value 64 KiB at a time, each piece checked).
//!
//! Invariants:
//! 1. `cairn_put_from` writes nothing unless the callback delivered exactly `len` bytes;
//!    a callback that fails (returns a negative count) or ends early aborts the write.
//! 2. A value reader reads the value as it was when the reader was made, whatever is
//!    written to the key afterwards; it holds the file it reads open, not the store: once
//!    the store is closed, reads return `CAIRN_CLOSED`.
//!
//! Thread-safety: `cairn_put_from` calls `read` on the calling thread only, never after it
//! returns. A value reader is not thread-safe; one thread at a time (it may move between
//! threads).

use std::ffi::{c_char, c_void};
use std::io::Read;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use crate::args;
use crate::db;
use crate::guard::run;
use crate::keyspace::{self, cairn_keyspace_t};
use crate::options::cairn_entryoptions_t;
use crate::status::{cairn_status_t, Failure, CAIRN_NOT_FOUND, CAIRN_OK};

/// A read callback for `cairn_put_from`: copies up to `cap` bytes of the value into
/// `buf` and returns how many (0 only at the end), or a negative number on failure.
#[allow(non_camel_case_types)]
pub type cairn_read_fn =
    Option<unsafe extern "C" fn(ctx: *mut c_void, buf: *mut c_char, cap: usize) -> i64>;

/// The callback as a [`Read`].
struct Callback {
    read: unsafe extern "C" fn(*mut c_void, *mut c_char, usize) -> i64,
    ctx: *mut c_void,
}

impl Read for Callback {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        // SAFETY: `buf` is `buf.len()` writable bytes; the caller of `cairn_put_from`
        // guarantees that `read` may be called with its `ctx` and such a buffer.
        let n = unsafe { (self.read)(self.ctx, buf.as_mut_ptr().cast(), buf.len()) };
        match usize::try_from(n) {
            Ok(n) if n <= buf.len() => Ok(n),
            Ok(n) => Err(std::io::Error::other(format!(
                "the read callback returned {n} bytes for a buffer of {}",
                buf.len()
            ))),
            Err(_) => Err(std::io::Error::other(format!(
                "the read callback failed (returned {n})"
            ))),
        }
    }
}

/// Sets `key` to the `len` bytes that `read` delivers (called with `ctx` until it has
/// delivered them all), with the tag, metadata, expiry and durability of `options` (NULL:
/// none). In a keyspace that separates values of this size the value streams into a blob
/// file through a bounded buffer, so values of hundreds of MiB (up to 2^32 - 1 bytes) are
/// written without holding them in memory; otherwise it is read into memory (up to
/// 32 MiB). `CAIRN_IO` if `read` fails or ends before `len` bytes; nothing is written then.
///
/// # Safety
/// `key` must point to `key_len` readable bytes (NULL if `key_len` is 0); `read` must be
/// safe to call with `ctx`, a writable buffer and its length.
#[no_mangle]
pub unsafe extern "C" fn cairn_put_from(
    ks: Option<&cairn_keyspace_t>,
    options: Option<&cairn_entryoptions_t>,
    key: *const c_char,
    key_len: usize,
    len: u64,
    read: cairn_read_fn,
    ctx: *mut c_void,
    errptr: Option<&mut *mut c_char>,
) -> cairn_status_t {
    run(errptr, || {
        let read = read.ok_or_else(|| Failure::invalid("read is NULL"))?;
        let ks = keyspace::live(ks)?;
        // SAFETY: the caller guarantees `key_len` readable bytes at `key`.
        let key = unsafe { args::bytes(key, key_len, "key") }?;
        let default = engine::EntryOptions::new();
        let opts = options.map_or(&default, |o| &o.options);
        ks.keyspace
            .insert_from(key, Callback { read, ctx }, len, opts)?;
        Ok(CAIRN_OK)
    })
}

/// A value being read in pieces. Not thread-safe.
#[allow(non_camel_case_types)]
pub struct cairn_value_reader_t {
    reader: engine::ValueReader,
    closed: Arc<AtomicBool>,
}

/// Opens a reader of the value of `key` (the latest state) and stores it in `*out`:
/// read it with `cairn_value_reader_read`, free it with `cairn_value_reader_destroy`.
/// `CAIRN_NOT_FOUND` if the key is absent (`*out` NULL).
///
/// # Safety
/// `key` must point to `key_len` readable bytes (NULL if `key_len` is 0).
#[no_mangle]
pub unsafe extern "C" fn cairn_value_reader_open(
    ks: Option<&cairn_keyspace_t>,
    key: *const c_char,
    key_len: usize,
    out: Option<&mut *mut cairn_value_reader_t>,
    errptr: Option<&mut *mut c_char>,
) -> cairn_status_t {
    run(errptr, || {
        let out = out.ok_or_else(|| Failure::invalid("out is NULL"))?;
        *out = std::ptr::null_mut();
        let ks = keyspace::live(ks)?;
        // SAFETY: the caller guarantees `key_len` readable bytes at `key`.
        let key = unsafe { args::bytes(key, key_len, "key") }?;
        let Some(reader) = ks.keyspace.get_reader(key)? else {
            return Ok(CAIRN_NOT_FOUND);
        };
        *out = Box::into_raw(Box::new(cairn_value_reader_t {
            reader,
            closed: Arc::clone(&ks.closed),
        }));
        Ok(CAIRN_OK)
    })
}

/// The value's length in bytes (0 for NULL).
#[no_mangle]
pub extern "C" fn cairn_value_reader_len(r: Option<&cairn_value_reader_t>) -> u64 {
    r.map_or(0, |r| r.reader.len())
}

/// Reads the next bytes of the value into `buf` (at most `buf_len`): `*read` receives how
/// many, 0 at the end of the value. A damaged piece of a separated value is
/// `CAIRN_CORRUPTION`.
///
/// # Safety
/// `buf` must point to `buf_len` writable bytes (NULL if `buf_len` is 0).
#[no_mangle]
pub unsafe extern "C" fn cairn_value_reader_read(
    r: Option<&mut cairn_value_reader_t>,
    buf: *mut c_char,
    buf_len: usize,
    read: Option<&mut usize>,
    errptr: Option<&mut *mut c_char>,
) -> cairn_status_t {
    run(errptr, || {
        let read = read.ok_or_else(|| Failure::invalid("read is NULL"))?;
        *read = 0;
        let r = r.ok_or_else(|| Failure::invalid("value reader is NULL"))?;
        db::check_open(&r.closed, "store")?;
        // SAFETY: the caller guarantees `buf_len` writable bytes at `buf`, used only here.
        let buf = unsafe { args::buffer(buf, buf_len, "buf") }?;
        *read = r.reader.read(buf)?;
        Ok(CAIRN_OK)
    })
}

/// Frees the reader (NULL is ignored).
#[no_mangle]
pub extern "C" fn cairn_value_reader_destroy(r: Option<Box<cairn_value_reader_t>>) {
    let _ = run(None, move || {
        drop(r);
        Ok(CAIRN_OK)
    });
}
