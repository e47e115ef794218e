//! `sparkey_logiter_*`: the log iterator (spec §9), over [`cairn::hash::LogCursor`].
//!
//! Checks, in the reference's order: the log reader must be open (-204), the iterator
//! open (-207), and both must belong to the same log file identifier (-206);
//! `sparkey_logiter_next` on an iterator at the end returns `SPARKEY_SUCCESS` before any
//! of these, as the reference does. An iterator is used by one thread at a time.
//!
//! Differences from the reference (see README.md): `valuechunk`/`fill_value` on an
//! iterator that is not ACTIVE return -205 at once (the reference first skips key bytes
//! and can loop forever); `seek` validates the position (the reference does not); NULL
//! out-pointers and buffers give `SPARKEY_INTERNAL_ERROR` instead of a crash; getters on a
//! NULL or closed iterator return 0 (state: `SPARKEY_ITER_CLOSED`).

use std::ffi::c_int;

use cairn::hash::{CursorState, EntryKind, LogCursor, LogReader};

use crate::args;
use crate::handle::{guard, guard_code, status, Handle, LOGITER_OPEN};
use crate::logreader::{open_log, Log};
use crate::returncode::{
    of_result, INTERNAL_ERROR, LOG_CLOSED, LOG_ITERATOR_CLOSED, LOG_ITERATOR_INACTIVE,
    LOG_ITERATOR_MISMATCH, SUCCESS,
};

/// The C `sparkey_logiter`.
pub type Iter = Handle<LogCursor>;

/// `SPARKEY_ITER_*` values.
pub const ITER_NEW: c_int = 0;
pub const ITER_ACTIVE: c_int = 1;
pub const ITER_CLOSED: c_int = 2;
pub const ITER_INVALID: c_int = 3;

/// The open cursor behind `iter`, if any.
///
/// # Safety
/// `iter` is NULL or a handle this library created, used by this thread only.
pub unsafe fn open_iter<'a>(iter: *mut Iter) -> Option<&'a mut LogCursor> {
    // SAFETY: forwarded contract: NULL or a handle of this library.
    if unsafe { status(iter) } != Some(LOGITER_OPEN) {
        return None;
    }
    // SAFETY: the status word says `iter` is an open `Iter`; iterators are used by one
    // thread at a time (API contract), so no other reference to it exists.
    unsafe { &mut *iter }.get_mut(LOGITER_OPEN)
}

/// The iterator and its log, checked in the reference's order.
///
/// # Safety
/// As [`open_iter`] and [`open_log`].
unsafe fn checked<'a>(
    iter: *mut Iter,
    log: *mut Log,
) -> Result<(&'a mut LogCursor, &'a LogReader), c_int> {
    // SAFETY: forwarded contract.
    let log = unsafe { open_log(log) }.ok_or(LOG_CLOSED)?;
    // SAFETY: forwarded contract.
    let cursor = unsafe { open_iter(iter) }.ok_or(LOG_ITERATOR_CLOSED)?;
    if cursor.file_identifier() != log.header().file_identifier {
        return Err(LOG_ITERATOR_MISMATCH);
    }
    Ok((cursor, log))
}

/// `sparkey_logiter_create`.
///
/// # Safety
/// `iter` is NULL or valid for writing a pointer; `log` is NULL or a handle of this library.
#[no_mangle]
pub unsafe extern "C" fn sparkey_logiter_create(iter: *mut *mut Iter, log: *mut Log) -> c_int {
    guard_code(|| {
        // SAFETY: forwarded contract.
        let Some(log) = (unsafe { open_log(log) }) else {
            return LOG_CLOSED;
        };
        let handle = Handle::into_raw(LOGITER_OPEN, LogCursor::new(log));
        // SAFETY: `iter` is NULL or valid for a pointer write (contract).
        if unsafe { args::write(iter, handle) } {
            SUCCESS
        } else {
            // SAFETY: `handle` came from `Box::into_raw` above and was never shared.
            drop(unsafe { Box::from_raw(handle) });
            INTERNAL_ERROR
        }
    })
}

/// `sparkey_logiter_close`: NULL-safe; never touches the log reader.
///
/// # Safety
/// `iter` is NULL or valid for reading and writing a pointer, which is NULL or a handle of
/// this library used by this thread only.
#[no_mangle]
pub unsafe extern "C" fn sparkey_logiter_close(iter: *mut *mut Iter) {
    guard((), || {
        if iter.is_null() {
            return;
        }
        // SAFETY: `iter` is non-NULL and valid for reading a pointer (contract).
        let it = unsafe { iter.read() };
        // SAFETY: `it` is NULL or a handle of this library (contract).
        if unsafe { status(it) } == Some(LOGITER_OPEN) {
            // SAFETY: `it` is an open `Iter` used by this thread only, and the caller's
            // pointer to it is cleared below (contract).
            drop(unsafe { Handle::free(it, LOGITER_OPEN) });
        }
        // SAFETY: `iter` is valid for writing a pointer (contract).
        unsafe { iter.write(std::ptr::null_mut()) };
    })
}

/// `sparkey_logiter_seek`.
///
/// # Safety
/// `iter` and `log` are NULL or handles of this library; `iter` is used by this thread only.
#[no_mangle]
pub unsafe extern "C" fn sparkey_logiter_seek(
    iter: *mut Iter,
    log: *mut Log,
    position: u64,
) -> c_int {
    guard_code(|| {
        // SAFETY: forwarded contract.
        match unsafe { checked(iter, log) } {
            Ok((c, _)) => of_result(c.seek(position)),
            Err(code) => code,
        }
    })
}

/// `sparkey_logiter_next`.
///
/// # Safety
/// As [`sparkey_logiter_seek`].
#[no_mangle]
pub unsafe extern "C" fn sparkey_logiter_next(iter: *mut Iter, log: *mut Log) -> c_int {
    // SAFETY: forwarded contract.
    guard_code(|| unsafe { next(iter, log) })
}

/// # Safety
/// As [`sparkey_logiter_seek`].
unsafe fn next(iter: *mut Iter, log: *mut Log) -> c_int {
    // SAFETY: forwarded contract.
    if let Some(c) = unsafe { open_iter(iter) } {
        if c.state() == CursorState::Closed {
            return SUCCESS;
        }
    }
    // SAFETY: forwarded contract.
    match unsafe { checked(iter, log) } {
        Ok((c, _)) => of_result(c.advance()),
        Err(code) => code,
    }
}

/// `sparkey_logiter_skip`: `next`, `count` times.
///
/// # Safety
/// As [`sparkey_logiter_seek`].
#[no_mangle]
pub unsafe extern "C" fn sparkey_logiter_skip(
    iter: *mut Iter,
    log: *mut Log,
    count: c_int,
) -> c_int {
    guard_code(|| {
        for _ in 0..count.max(0) {
            // SAFETY: forwarded contract.
            let code = unsafe { next(iter, log) };
            if code != SUCCESS {
                return code;
            }
        }
        SUCCESS
    })
}

/// `sparkey_logiter_reset`.
///
/// # Safety
/// As [`sparkey_logiter_seek`].
#[no_mangle]
pub unsafe extern "C" fn sparkey_logiter_reset(iter: *mut Iter, log: *mut Log) -> c_int {
    guard_code(|| {
        // SAFETY: forwarded contract.
        match unsafe { checked(iter, log) } {
            Ok((c, _)) if c.state() != CursorState::Active => LOG_ITERATOR_INACTIVE,
            Ok((c, _)) => of_result(c.reset()),
            Err(code) => code,
        }
    })
}

/// Which part of the entry a chunk read takes.
#[derive(Clone, Copy)]
enum Part {
    Key,
    Value,
}

/// A zero-copy chunk of `part`, stored through `res` and `len`.
///
/// # Safety
/// As [`sparkey_logiter_keychunk`].
unsafe fn chunk(
    iter: *mut Iter,
    log: *mut Log,
    maxlen: u64,
    res: *mut *mut u8,
    len: *mut u64,
    part: Part,
) -> c_int {
    // SAFETY: forwarded contract.
    let c = match unsafe { checked(iter, log) } {
        Ok((c, _)) => c,
        Err(code) => return code,
    };
    if res.is_null() || len.is_null() {
        return INTERNAL_ERROR;
    }
    if c.state() != CursorState::Active {
        return LOG_ITERATOR_INACTIVE;
    }
    let bytes = match part {
        Part::Key => c.key_chunk(maxlen),
        Part::Value => c.value_chunk(maxlen),
    };
    match bytes {
        Ok(b) => {
            if !b.is_empty() {
                // SAFETY: `res` is non-NULL and valid for a pointer write (contract). The
                // pointer stays valid until the next operation on the iterator, which
                // holds the map or decoded block it points into (the API's rule).
                unsafe { res.write(b.as_ptr().cast_mut()) };
            }
            // SAFETY: `len` is non-NULL and valid for a u64 write (contract).
            unsafe { len.write(b.len() as u64) };
            SUCCESS
        }
        Err(e) => of_result::<()>(Err(e)),
    }
}

/// `sparkey_logiter_keychunk`.
///
/// # Safety
/// As [`sparkey_logiter_seek`]; `res` and `len` are NULL or valid for writing a pointer
/// and a `uint64_t`.
#[no_mangle]
pub unsafe extern "C" fn sparkey_logiter_keychunk(
    iter: *mut Iter,
    log: *mut Log,
    maxlen: u64,
    res: *mut *mut u8,
    len: *mut u64,
) -> c_int {
    // SAFETY: forwarded contract.
    guard_code(|| unsafe { chunk(iter, log, maxlen, res, len, Part::Key) })
}

/// `sparkey_logiter_valuechunk`: -205 at once unless ACTIVE (no key skipping first).
///
/// # Safety
/// As [`sparkey_logiter_keychunk`].
#[no_mangle]
pub unsafe extern "C" fn sparkey_logiter_valuechunk(
    iter: *mut Iter,
    log: *mut Log,
    maxlen: u64,
    res: *mut *mut u8,
    len: *mut u64,
) -> c_int {
    // SAFETY: forwarded contract.
    guard_code(|| unsafe { chunk(iter, log, maxlen, res, len, Part::Value) })
}

/// Copies up to `maxlen` bytes of `part` into `buf`, the count into `*len`.
///
/// # Safety
/// As [`sparkey_logiter_fill_key`].
unsafe fn fill(
    iter: *mut Iter,
    log: *mut Log,
    maxlen: u64,
    buf: *mut u8,
    len: *mut u64,
    part: Part,
) -> c_int {
    // SAFETY: `len` is NULL or valid for a u64 write (contract).
    if !unsafe { args::write(len, 0) } {
        return INTERNAL_ERROR;
    }
    // SAFETY: forwarded contract.
    let c = match unsafe { checked(iter, log) } {
        Ok((c, _)) => c,
        Err(code) => return code,
    };
    if maxlen == 0 {
        return SUCCESS;
    }
    if buf.is_null() {
        return INTERNAL_ERROR;
    }
    if c.state() != CursorState::Active {
        return LOG_ITERATOR_INACTIVE;
    }
    let mut copied: u64 = 0;
    while copied < maxlen {
        let want = maxlen - copied;
        let bytes = match part {
            Part::Key => c.key_chunk(want),
            Part::Value => c.value_chunk(want),
        };
        let b = match bytes {
            Ok([]) => break,
            Ok(b) => b,
            Err(e) => return of_result::<()>(Err(e)),
        };
        // SAFETY: `buf` holds `maxlen` writable bytes (contract) and `copied + b.len() ≤
        // maxlen` (chunks are at most `want` long); `b` lies in the log's map or a decoded
        // block, never in `buf`'s memory, so the ranges do not overlap.
        unsafe {
            std::ptr::copy_nonoverlapping(b.as_ptr(), buf.add(copied as usize), b.len());
        }
        copied += b.len() as u64;
        // SAFETY: `len` is valid for a u64 write (contract).
        unsafe { len.write(copied) };
    }
    SUCCESS
}

/// `sparkey_logiter_fill_key`.
///
/// # Safety
/// As [`sparkey_logiter_seek`]; `buf` is NULL or holds `maxlen` writable bytes; `len` is
/// NULL or valid for writing a `uint64_t`.
#[no_mangle]
pub unsafe extern "C" fn sparkey_logiter_fill_key(
    iter: *mut Iter,
    log: *mut Log,
    maxlen: u64,
    buf: *mut u8,
    len: *mut u64,
) -> c_int {
    // SAFETY: forwarded contract.
    guard_code(|| unsafe { fill(iter, log, maxlen, buf, len, Part::Key) })
}

/// `sparkey_logiter_fill_value`.
///
/// # Safety
/// As [`sparkey_logiter_fill_key`].
#[no_mangle]
pub unsafe extern "C" fn sparkey_logiter_fill_value(
    iter: *mut Iter,
    log: *mut Log,
    maxlen: u64,
    buf: *mut u8,
    len: *mut u64,
) -> c_int {
    // SAFETY: forwarded contract.
    guard_code(|| unsafe { fill(iter, log, maxlen, buf, len, Part::Value) })
}

/// The unread rest of the current key of `c`.
fn rest_of_key(c: &mut LogCursor) -> Result<Vec<u8>, c_int> {
    let mut out = Vec::new();
    loop {
        match c.key_chunk(u64::MAX) {
            Ok([]) => return Ok(out),
            Ok(b) => out.extend_from_slice(b),
            Err(e) => return Err(of_result::<()>(Err(e))),
        }
    }
}

/// `sparkey_logiter_keycmp`: `*res` is -1, 0 or 1 as memcmp's sign (a proper prefix sorts
/// first); consumes both keys. The same iterator passed twice compares equal.
///
/// # Safety
/// As [`sparkey_logiter_seek`] for both iterators; `res` is NULL or valid for writing an
/// `int`.
#[no_mangle]
pub unsafe extern "C" fn sparkey_logiter_keycmp(
    iter1: *mut Iter,
    iter2: *mut Iter,
    log: *mut Log,
    res: *mut c_int,
) -> c_int {
    guard_code(|| {
        let mut keys = Vec::with_capacity(2);
        // The same iterator twice compares its key with itself (the reference consumes
        // the key on the first read and compares it with nothing: 1).
        let iters = if iter1 == iter2 {
            &[iter1][..]
        } else {
            &[iter1, iter2][..]
        };
        for &iter in iters {
            // SAFETY: forwarded contract; the borrow ends before the next iteration, so the
            // same iterator passed twice is never borrowed twice at once.
            let c = match unsafe { checked(iter, log) } {
                Ok((c, _)) => c,
                Err(code) => return code,
            };
            if c.state() != CursorState::Active {
                return LOG_ITERATOR_INACTIVE;
            }
            match rest_of_key(c) {
                Ok(k) => keys.push(k),
                Err(code) => return code,
            }
        }
        let ordering = match keys.as_slice() {
            [_] => 0,
            [a, b] => a.cmp(b) as c_int,
            _ => return INTERNAL_ERROR,
        };
        // SAFETY: `res` is NULL or valid for an int write (contract).
        if unsafe { args::write(res, ordering) } {
            SUCCESS
        } else {
            INTERNAL_ERROR
        }
    })
}

/// Applies `f` to the open cursor `iter`, or returns `default`.
///
/// # Safety
/// `iter` is NULL or a handle of this library used by this thread only.
unsafe fn getter<R: Copy>(iter: *mut Iter, default: R, f: impl FnOnce(&LogCursor) -> R) -> R {
    guard(default, || {
        // SAFETY: forwarded contract.
        match unsafe { open_iter(iter) } {
            Some(c) => f(c),
            None => default,
        }
    })
}

/// `sparkey_logiter_state` (`SPARKEY_ITER_CLOSED` for a NULL or closed iterator).
///
/// # Safety
/// `iter` is NULL or a handle of this library used by this thread only.
#[no_mangle]
pub unsafe extern "C" fn sparkey_logiter_state(iter: *mut Iter) -> c_int {
    // SAFETY: forwarded contract.
    unsafe {
        getter(iter, ITER_CLOSED, |c| match c.state() {
            CursorState::New => ITER_NEW,
            CursorState::Active => ITER_ACTIVE,
            CursorState::Closed => ITER_CLOSED,
            CursorState::Invalid => ITER_INVALID,
        })
    }
}

/// `sparkey_logiter_type` (`SPARKEY_ENTRY_PUT` for a NULL or closed iterator).
///
/// # Safety
/// As [`sparkey_logiter_state`].
#[no_mangle]
pub unsafe extern "C" fn sparkey_logiter_type(iter: *mut Iter) -> c_int {
    // SAFETY: forwarded contract.
    unsafe {
        getter(iter, 0, |c| match c.kind() {
            EntryKind::Put => 0,
            EntryKind::Delete => 1,
        })
    }
}

/// `sparkey_logiter_keylen` (0 for a NULL or closed iterator).
///
/// # Safety
/// As [`sparkey_logiter_state`].
#[no_mangle]
pub unsafe extern "C" fn sparkey_logiter_keylen(iter: *mut Iter) -> u64 {
    // SAFETY: forwarded contract.
    unsafe { getter(iter, 0, |c| c.key_len()) }
}

/// `sparkey_logiter_valuelen` (0 for a NULL or closed iterator).
///
/// # Safety
/// As [`sparkey_logiter_state`].
#[no_mangle]
pub unsafe extern "C" fn sparkey_logiter_valuelen(iter: *mut Iter) -> u64 {
    // SAFETY: forwarded contract.
    unsafe { getter(iter, 0, |c| c.value_len()) }
}
