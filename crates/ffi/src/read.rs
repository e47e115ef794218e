//! Point reads of the ordered store: `cairn_get` (into a buffer the library allocates),
//! `cairn_get_into` (into the caller's buffer) and `cairn_head` (everything about an
//! entry but its value).
//!
//! Every read takes an optional snapshot: NULL reads the latest state. An absent key is
//! `CAIRN_NOT_FOUND` with the outputs cleared (NULL, 0), not an error.
//!
//! Thread-safety: reads only share their arguments; any number may run at once.

use std::ffi::c_char;

use engine::Readable;

use crate::args;
use crate::guard::run;
use crate::keyspace::{self, cairn_keyspace_t};
use crate::snapshot::cairn_snapshot_t;
use crate::status::{cairn_status_t, Failure, CAIRN_NOT_FOUND, CAIRN_OK};

/// Everything about an entry except its value, filled by `cairn_head`.
#[repr(C)]
#[allow(non_camel_case_types)]
pub struct cairn_head_t {
    /// Length of the value in bytes.
    pub value_len: u64,
    /// The type tag (0 if none was set).
    pub tag: u32,
    /// 1 if the entry has an expiry (`expires_at_ms` is then meaningful), else 0.
    pub has_expiry: u8,
    /// 1 if the value is stored in a blob file of the value log, else 0.
    pub separated: u8,
    /// When the entry expires, in milliseconds since the Unix epoch.
    pub expires_at_ms: u64,
    /// The seqno of the write that produced the entry.
    pub seqno: u64,
    /// The metadata bytes, `malloc`ed (free with `cairn_free`); NULL if there are none.
    pub meta: *mut c_char,
    /// Length of `meta`.
    pub meta_len: usize,
}

impl cairn_head_t {
    /// The cleared head (no entry).
    pub(crate) const EMPTY: cairn_head_t = cairn_head_t {
        value_len: 0,
        tag: 0,
        has_expiry: 0,
        separated: 0,
        expires_at_ms: 0,
        seqno: 0,
        meta: std::ptr::null_mut(),
        meta_len: 0,
    };

    /// `h` for C, its metadata copied into a `malloc`ed buffer (NULL if it has none).
    pub(crate) fn of(h: &engine::Head) -> Result<cairn_head_t, Failure> {
        let meta = if h.meta.is_empty() {
            std::ptr::null_mut()
        } else {
            args::malloc_copy(&h.meta)?
        };
        Ok(cairn_head_t {
            value_len: h.value_len,
            tag: h.tag,
            has_expiry: u8::from(h.expires_at.is_some()),
            separated: u8::from(h.separated),
            expires_at_ms: h.expires_at.unwrap_or(0),
            seqno: h.seqno,
            meta,
            meta_len: h.meta.len(),
        })
    }
}

/// Reads `key`: on `CAIRN_OK`, `*value` receives a `malloc`ed copy of the value (free it
/// with `cairn_free`; NUL-terminated for convenience, the terminator not counted) and
/// `*value_len` its length. `CAIRN_NOT_FOUND` if absent (`*value` NULL).
///
/// # Safety
/// `key` must point to `key_len` readable bytes (NULL if `key_len` is 0).
#[no_mangle]
pub unsafe extern "C" fn cairn_get(
    ks: Option<&cairn_keyspace_t>,
    snapshot: Option<&cairn_snapshot_t>,
    key: *const c_char,
    key_len: usize,
    value: Option<&mut *mut c_char>,
    value_len: Option<&mut usize>,
    errptr: Option<&mut *mut c_char>,
) -> cairn_status_t {
    run(errptr, || {
        let (value, value_len) = value
            .zip(value_len)
            .ok_or_else(|| Failure::invalid("value or value_len is NULL"))?;
        *value = std::ptr::null_mut();
        *value_len = 0;
        let ks = keyspace::live(ks)?;
        // SAFETY: the caller guarantees `key_len` readable bytes at `key`.
        let key = unsafe { args::bytes(key, key_len, "key") }?;
        // Copied once, from where the value lies into the `malloc`ed buffer.
        let copy = |v: &[u8]| args::malloc_copy(v).map(|p| (p, v.len()));
        let found = match snapshot {
            Some(s) => s.snapshot.get_with(&ks.keyspace, key, copy)?,
            None => ks.keyspace.get_with(key, copy)?,
        };
        match found {
            Some(copied) => {
                (*value, *value_len) = copied?;
                Ok(CAIRN_OK)
            }
            None => Ok(CAIRN_NOT_FOUND),
        }
    })
}

/// Reads `key` into the caller's buffer `buf` of `buf_len` bytes. `*value_len` receives
/// the value's full length. `CAIRN_BUFFER_TOO_SMALL` if it does not fit (nothing is
/// copied; call again with a buffer of `*value_len` bytes); `CAIRN_NOT_FOUND` if absent.
///
/// # Safety
/// `key` must point to `key_len` readable bytes and `buf` to `buf_len` writable bytes
/// (either may be NULL with length 0).
#[no_mangle]
pub unsafe extern "C" fn cairn_get_into(
    ks: Option<&cairn_keyspace_t>,
    snapshot: Option<&cairn_snapshot_t>,
    key: *const c_char,
    key_len: usize,
    buf: *mut c_char,
    buf_len: usize,
    value_len: Option<&mut usize>,
    errptr: Option<&mut *mut c_char>,
) -> cairn_status_t {
    run(errptr, || {
        let value_len = value_len.ok_or_else(|| Failure::invalid("value_len is NULL"))?;
        *value_len = 0;
        let ks = keyspace::live(ks)?;
        // SAFETY: the caller guarantees `key_len` readable bytes at `key`.
        let key = unsafe { args::bytes(key, key_len, "key") }?;
        // SAFETY: the caller guarantees `buf_len` writable bytes at `buf`, used only here.
        let buf = unsafe { args::buffer(buf, buf_len, "buf") }?;
        // Copied once, from where the value lies into the caller's buffer.
        let copy = |v: &[u8]| args::copy_out(v, buf, value_len);
        let found = match snapshot {
            Some(s) => s.snapshot.get_with(&ks.keyspace, key, copy)?,
            None => ks.keyspace.get_with(key, copy)?,
        };
        found.unwrap_or(Ok(CAIRN_NOT_FOUND))
    })
}

/// Reads everything about `key` but its value into `*head` (its `meta` is `malloc`ed:
/// free it with `cairn_free`). `CAIRN_NOT_FOUND` if absent (`*head` zeroed).
///
/// # Safety
/// `key` must point to `key_len` readable bytes (NULL if `key_len` is 0).
#[no_mangle]
pub unsafe extern "C" fn cairn_head(
    ks: Option<&cairn_keyspace_t>,
    snapshot: Option<&cairn_snapshot_t>,
    key: *const c_char,
    key_len: usize,
    head: Option<&mut cairn_head_t>,
    errptr: Option<&mut *mut c_char>,
) -> cairn_status_t {
    run(errptr, || {
        let out = head.ok_or_else(|| Failure::invalid("head is NULL"))?;
        *out = cairn_head_t::EMPTY;
        let ks = keyspace::live(ks)?;
        // SAFETY: the caller guarantees `key_len` readable bytes at `key`.
        let key = unsafe { args::bytes(key, key_len, "key") }?;
        let found = match snapshot {
            Some(s) => s.snapshot.head(&ks.keyspace, key)?,
            None => ks.keyspace.head(key)?,
        };
        let Some(h) = found else {
            return Ok(CAIRN_NOT_FOUND);
        };
        *out = cairn_head_t::of(&h)?;
        Ok(CAIRN_OK)
    })
}
