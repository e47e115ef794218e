//! `cairn_hash_reader_t`: lookups in a Sparkey log and its index
//! ([`engine::hash::Reader`]): single gets into a library buffer or the caller's, and
//! `get_many` and `get_many_into` over arrays of keys.
//!
//! Invariants: on any failure of `cairn_hash_reader_get_many` every output slot is NULL
//! and 0 (values already copied are freed), so the caller frees nothing.
//! `cairn_hash_reader_get_many_into` writes values only inside the caller's buffer, each
//! at an offset past the previous one's end; on `CAIRN_BUFFER_TOO_SMALL` the outputs of
//! the keys before `*done` stay valid, on any other failure all are reset.
//!
//! Thread-safety: thread-safe (`Reader` is `Send + Sync`): any number of threads may look
//! keys up through one reader at once.

use std::ffi::c_char;

use engine::hash::{ReadOptions, Reader};

use crate::args;
use crate::guard::run;
use crate::status::{cairn_status_t, Failure, CAIRN_BUFFER_TOO_SMALL, CAIRN_NOT_FOUND, CAIRN_OK};

/// An open Sparkey log and index. Thread-safe.
#[allow(non_camel_case_types)]
pub struct cairn_hash_reader_t {
    pub(crate) reader: Reader,
}

fn reader(r: Option<&cairn_hash_reader_t>) -> Result<&Reader, Failure> {
    r.map(|r| &r.reader)
        .ok_or_else(|| Failure::invalid("reader is NULL"))
}

/// The `count` keys of a batched lookup: `keys[i]` of `key_lens[i]` bytes.
///
/// # Safety
/// `keys` and `key_lens` must point to `count` elements (or be NULL if `count` is 0), each
/// key to its length of readable bytes, for as long as the slices are used.
unsafe fn key_arrays<'a>(
    keys: *const *const c_char,
    key_lens: *const usize,
    count: usize,
) -> Result<Vec<&'a [u8]>, Failure> {
    // SAFETY: the caller guarantees `count` key pointers at `keys`.
    let key_ptrs = unsafe { args::array(keys, count, "keys") }?;
    // SAFETY: the caller guarantees `count` lengths at `key_lens`.
    let lens = unsafe { args::array(key_lens, count, "key_lens") }?;
    key_ptrs
        .iter()
        .zip(lens)
        // SAFETY: the caller guarantees each key points to its length of bytes.
        .map(|(&ptr, &len)| unsafe { args::bytes(ptr, len, "key") })
        .collect()
}

/// Opens the index at `index_path` and its log at `log_path`. `CAIRN_IDENTIFIER_MISMATCH`
/// if they do not belong together, `CAIRN_CORRUPTION` for damaged headers.
///
/// # Safety
/// `index_path` and `log_path` must be NUL-terminated strings.
#[no_mangle]
pub unsafe extern "C" fn cairn_hash_reader_open(
    index_path: *const c_char,
    log_path: *const c_char,
    out: Option<&mut *mut cairn_hash_reader_t>,
    errptr: Option<&mut *mut c_char>,
) -> cairn_status_t {
    run(errptr, || {
        let out = out.ok_or_else(|| Failure::invalid("out is NULL"))?;
        *out = std::ptr::null_mut();
        // SAFETY: the caller guarantees `index_path` is NULL or NUL-terminated.
        let index = unsafe { args::path(index_path, "index_path") }?;
        // SAFETY: the caller guarantees `log_path` is NULL or NUL-terminated.
        let log = unsafe { args::path(log_path, "log_path") }?;
        let reader = Reader::open(index, log)?;
        *out = Box::into_raw(Box::new(cairn_hash_reader_t { reader }));
        Ok(CAIRN_OK)
    })
}

/// Opens like `cairn_hash_reader_open`, with read options: `pin_index` non-zero loads the
/// index into memory (locked there when permitted), `load_log` non-zero copies the log's
/// data into memory instead of mapping it, `block_cache_bytes` bounds the cache of
/// decoded blocks of a compressed log (0: the default, 64 MiB).
///
/// # Safety
/// `index_path` and `log_path` must be NUL-terminated strings.
#[no_mangle]
pub unsafe extern "C" fn cairn_hash_reader_open_with(
    index_path: *const c_char,
    log_path: *const c_char,
    pin_index: u8,
    load_log: u8,
    block_cache_bytes: usize,
    out: Option<&mut *mut cairn_hash_reader_t>,
    errptr: Option<&mut *mut c_char>,
) -> cairn_status_t {
    run(errptr, || {
        let out = out.ok_or_else(|| Failure::invalid("out is NULL"))?;
        *out = std::ptr::null_mut();
        // SAFETY: the caller guarantees `index_path` is NULL or NUL-terminated.
        let index = unsafe { args::path(index_path, "index_path") }?;
        // SAFETY: the caller guarantees `log_path` is NULL or NUL-terminated.
        let log = unsafe { args::path(log_path, "log_path") }?;
        let mut options = ReadOptions::default()
            .pin_index(pin_index != 0)
            .load_log(load_log != 0);
        if block_cache_bytes != 0 {
            options = options.block_cache_bytes(block_cache_bytes);
        }
        let reader = Reader::open_with(index, log, &options)?;
        *out = Box::into_raw(Box::new(cairn_hash_reader_t { reader }));
        Ok(CAIRN_OK)
    })
}

/// The number of live entries in the index (0 for NULL).
#[no_mangle]
pub extern "C" fn cairn_hash_reader_num_entries(r: Option<&cairn_hash_reader_t>) -> u64 {
    r.map_or(0, |r| r.reader.len())
}

/// Looks `key` up: on `CAIRN_OK`, `*value` receives a `malloc`ed copy (free with
/// `cairn_free`) and `*value_len` its length; `CAIRN_NOT_FOUND` if absent.
///
/// # Safety
/// `key` must point to `key_len` readable bytes (NULL if `key_len` is 0).
#[no_mangle]
pub unsafe extern "C" fn cairn_hash_reader_get(
    r: Option<&cairn_hash_reader_t>,
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
        let reader = reader(r)?;
        // SAFETY: the caller guarantees `key_len` readable bytes at `key`.
        let key = unsafe { args::bytes(key, key_len, "key") }?;
        let mut scratch = Vec::new();
        match reader.get_ref(key, &mut scratch)? {
            Some(v) => {
                *value = args::malloc_copy(v)?;
                *value_len = v.len();
                Ok(CAIRN_OK)
            }
            None => Ok(CAIRN_NOT_FOUND),
        }
    })
}

/// Looks `key` up into the caller's buffer; as `cairn_get_into` (`*value_len` receives
/// the full length; `CAIRN_BUFFER_TOO_SMALL` copies nothing).
///
/// # Safety
/// `key` must point to `key_len` readable bytes and `buf` to `buf_len` writable bytes
/// (either may be NULL with length 0).
#[no_mangle]
pub unsafe extern "C" fn cairn_hash_reader_get_into(
    r: Option<&cairn_hash_reader_t>,
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
        let reader = reader(r)?;
        // SAFETY: the caller guarantees `key_len` readable bytes at `key`.
        let key = unsafe { args::bytes(key, key_len, "key") }?;
        // SAFETY: the caller guarantees `buf_len` writable bytes at `buf`, used only here.
        let buf = unsafe { args::buffer(buf, buf_len, "buf") }?;
        let mut scratch = Vec::new();
        let Some(v) = reader.get_ref(key, &mut scratch)? else {
            return Ok(CAIRN_NOT_FOUND);
        };
        args::copy_out(v, buf, value_len)
    })
}

/// Looks up `count` keys at once (`keys[i]` of `key_lens[i]` bytes), overlapping their
/// memory misses. For each `i`, `values[i]` receives a `malloc`ed copy of the value (free
/// each with `cairn_free`) and `value_lens[i]` its length, or NULL and 0 if the key is
/// absent. `*found` (may be NULL) receives the number of keys found.
///
/// # Safety
/// `keys` and `key_lens` must point to `count` elements, each key to its length of
/// readable bytes; `values` and `value_lens` to `count` writable elements (all may be
/// NULL if `count` is 0).
#[no_mangle]
pub unsafe extern "C" fn cairn_hash_reader_get_many(
    r: Option<&cairn_hash_reader_t>,
    keys: *const *const c_char,
    key_lens: *const usize,
    count: usize,
    values: *mut *mut c_char,
    value_lens: *mut usize,
    found: Option<&mut usize>,
    errptr: Option<&mut *mut c_char>,
) -> cairn_status_t {
    run(errptr, || {
        // SAFETY: the caller guarantees `count` writable pointers at `values`.
        let values = unsafe { args::array_mut(values, count, "values") }?;
        // SAFETY: the caller guarantees `count` writable lengths at `value_lens`.
        let value_lens = unsafe { args::array_mut(value_lens, count, "value_lens") }?;
        values.fill(std::ptr::null_mut());
        value_lens.fill(0);
        let reader = reader(r)?;
        // SAFETY: the caller guarantees the keys as `key_arrays` requires.
        let key_slices = unsafe { key_arrays(keys, key_lens, count) }?;
        let mut failure = None;
        let mut hits = 0usize;
        let looked_up = reader.get_many(&key_slices, |i, v| {
            let Some(v) = v else { return };
            if failure.is_some() {
                return;
            }
            match args::malloc_copy(v) {
                Ok(p) => {
                    if let (Some(slot), Some(len)) = (values.get_mut(i), value_lens.get_mut(i)) {
                        *slot = p;
                        *len = v.len();
                        hits += 1;
                    } else {
                        // SAFETY: `p` was just allocated and is not stored anywhere.
                        unsafe { args::free(p) };
                    }
                }
                Err(e) => failure = Some(e),
            }
        });
        let outcome = match (looked_up, failure) {
            (Err(e), _) => Err(Failure::from(e)),
            (Ok(()), Some(f)) => Err(f),
            (Ok(()), None) => Ok(()),
        };
        if let Err(f) = outcome {
            for (slot, len) in values.iter_mut().zip(value_lens.iter_mut()) {
                // SAFETY: each non-NULL slot holds a value allocated above, freed once.
                unsafe { args::free(std::mem::replace(slot, std::ptr::null_mut())) };
                *len = 0;
            }
            return Err(f);
        }
        if let Some(n) = found {
            *n = hits;
        }
        Ok(CAIRN_OK)
    })
}

/// The `value_offsets[i]` that `cairn_hash_reader_get_many_into` gives an absent key.
// The cast makes cbindgen write `(size_t)~0`, so C compares it as a `size_t`.
#[allow(clippy::unnecessary_cast)]
pub const CAIRN_HASH_ABSENT: usize = !0 as usize;

/// Looks up `count` keys at once as `cairn_hash_reader_get_many` does, but copies the
/// values one after another into the caller's buffer `buf` of `buf_len` bytes, with no
/// allocation per value: the value of `keys[i]` is the `value_lens[i]` bytes at
/// `buf + value_offsets[i]`, and an absent key gets `value_offsets[i] ==
/// CAIRN_HASH_ABSENT` and `value_lens[i] == 0`.
///
/// `*done` (may be NULL) receives how many leading keys were looked up and `*found` (may
/// be NULL) how many of those were present. If a value does not fit in what is left of
/// `buf`, the call stops there and returns `CAIRN_BUFFER_TOO_SMALL`: the first `*done`
/// keys' outputs are valid, and `value_lens[*done]` holds the full length of the value
/// that did not fit, so the caller can go on from key `*done` with a larger or emptied
/// buffer. On any other failure every output is `CAIRN_HASH_ABSENT` and 0, and `*done`
/// and `*found` are 0.
///
/// # Safety
/// `keys` and `key_lens` must point to `count` elements, each key to its length of
/// readable bytes; `value_offsets` and `value_lens` to `count` writable elements; `buf`
/// to `buf_len` writable bytes (arrays may be NULL if `count` is 0, `buf` if `buf_len` is
/// 0).
#[no_mangle]
pub unsafe extern "C" fn cairn_hash_reader_get_many_into(
    r: Option<&cairn_hash_reader_t>,
    keys: *const *const c_char,
    key_lens: *const usize,
    count: usize,
    buf: *mut c_char,
    buf_len: usize,
    value_offsets: *mut usize,
    value_lens: *mut usize,
    found: Option<&mut usize>,
    done: Option<&mut usize>,
    errptr: Option<&mut *mut c_char>,
) -> cairn_status_t {
    let mut found = found;
    let mut done = done;
    if let Some(n) = found.as_deref_mut() {
        *n = 0;
    }
    if let Some(n) = done.as_deref_mut() {
        *n = 0;
    }
    run(errptr, || {
        // SAFETY: the caller guarantees `count` writable offsets at `value_offsets`.
        let offsets = unsafe { args::array_mut(value_offsets, count, "value_offsets") }?;
        // SAFETY: the caller guarantees `count` writable lengths at `value_lens`.
        let value_lens = unsafe { args::array_mut(value_lens, count, "value_lens") }?;
        offsets.fill(CAIRN_HASH_ABSENT);
        value_lens.fill(0);
        let reader = reader(r)?;
        // SAFETY: the caller guarantees the keys as `key_arrays` requires.
        let key_slices = unsafe { key_arrays(keys, key_lens, count) }?;
        // SAFETY: the caller guarantees `buf_len` writable bytes at `buf`, used only here.
        let buf = unsafe { args::buffer(buf, buf_len, "buf") }?;
        let mut used = 0usize;
        let mut hits = 0usize;
        let mut short = None;
        let looked_up = reader.get_many_while(&key_slices, |i, v| {
            let Some(v) = v else { return true };
            let (Some(offset), Some(len)) = (offsets.get_mut(i), value_lens.get_mut(i)) else {
                return false;
            };
            match buf.get_mut(used..).and_then(|rest| rest.get_mut(..v.len())) {
                Some(dst) => {
                    dst.copy_from_slice(v);
                    *offset = used;
                    *len = v.len();
                    used += v.len();
                    hits += 1;
                    true
                }
                None => {
                    *len = v.len();
                    short = Some((i, v.len()));
                    false
                }
            }
        });
        if let Err(e) = looked_up {
            offsets.fill(CAIRN_HASH_ABSENT);
            value_lens.fill(0);
            return Err(Failure::from(e));
        }
        if let Some(n) = found {
            *n = hits;
        }
        match short {
            None => {
                if let Some(n) = done {
                    *n = count;
                }
                Ok(CAIRN_OK)
            }
            Some((i, len)) => {
                if let Some(n) = done {
                    *n = i;
                }
                Err(Failure::new(
                    CAIRN_BUFFER_TOO_SMALL,
                    format!(
                        "the value of key {i} ({len} bytes) does not fit in the {} bytes left \
                         of the buffer",
                        buf.len() - used
                    ),
                ))
            }
        }
    })
}

/// Frees the reader (NULL is ignored). Iterators made from it keep their own reference.
#[no_mangle]
pub extern "C" fn cairn_hash_reader_destroy(r: Option<Box<cairn_hash_reader_t>>) {
    let _ = run(None, move || {
        drop(r);
        Ok(CAIRN_OK)
    });
}
