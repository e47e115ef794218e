//! Single writes to the ordered store: put (plain or with tag, metadata and expiry),
//! delete, counters, and range and prefix deletes.
//!
//! Each write takes optional write options (NULL: the store's default durability) and is
//! atomic on its own; use a batch (batch.rs) to make several writes atomic together.
//!
//! Thread-safety: writes may be issued from any number of threads at once; the engine
//! orders them (group commit).

use std::ffi::c_char;

use crate::args;
use crate::guard::run;
use crate::keyspace::{self, cairn_keyspace_t};
use crate::options::{cairn_entryoptions_t, cairn_writeoptions_t, write_durability};
use crate::range;
use crate::status::{cairn_status_t, CAIRN_OK};

/// Sets `key` to `value`.
///
/// # Safety
/// `key` and `value` must point to `key_len` and `value_len` readable bytes (either may
/// be NULL with length 0).
#[no_mangle]
pub unsafe extern "C" fn cairn_put(
    ks: Option<&cairn_keyspace_t>,
    options: Option<&cairn_writeoptions_t>,
    key: *const c_char,
    key_len: usize,
    value: *const c_char,
    value_len: usize,
    errptr: Option<&mut *mut c_char>,
) -> cairn_status_t {
    run(errptr, || {
        let ks = keyspace::live(ks)?;
        // SAFETY: the caller guarantees `key_len` readable bytes at `key`.
        let key = unsafe { args::bytes(key, key_len, "key") }?;
        // SAFETY: the caller guarantees `value_len` readable bytes at `value`.
        let value = unsafe { args::bytes(value, value_len, "value") }?;
        ks.keyspace
            .insert_with(key, value, write_durability(options))?;
        Ok(CAIRN_OK)
    })
}

/// Sets `key` to `value` with the tag, metadata, expiry and durability of `options`
/// (NULL: none of them). `cairn_get` returns the plain value; `cairn_head` the rest.
///
/// # Safety
/// As `cairn_put`.
#[no_mangle]
pub unsafe extern "C" fn cairn_put_entry(
    ks: Option<&cairn_keyspace_t>,
    options: Option<&cairn_entryoptions_t>,
    key: *const c_char,
    key_len: usize,
    value: *const c_char,
    value_len: usize,
    errptr: Option<&mut *mut c_char>,
) -> cairn_status_t {
    run(errptr, || {
        let ks = keyspace::live(ks)?;
        // SAFETY: the caller guarantees `key_len` readable bytes at `key`.
        let key = unsafe { args::bytes(key, key_len, "key") }?;
        // SAFETY: the caller guarantees `value_len` readable bytes at `value`.
        let value = unsafe { args::bytes(value, value_len, "value") }?;
        let default = engine::EntryOptions::new();
        let opts = options.map_or(&default, |o| &o.options);
        ks.keyspace.insert_entry(key, value, opts)?;
        Ok(CAIRN_OK)
    })
}

/// Removes `key` (succeeds if it is absent).
///
/// # Safety
/// `key` must point to `key_len` readable bytes (NULL if `key_len` is 0).
#[no_mangle]
pub unsafe extern "C" fn cairn_delete(
    ks: Option<&cairn_keyspace_t>,
    options: Option<&cairn_writeoptions_t>,
    key: *const c_char,
    key_len: usize,
    errptr: Option<&mut *mut c_char>,
) -> cairn_status_t {
    run(errptr, || {
        let ks = keyspace::live(ks)?;
        // SAFETY: the caller guarantees `key_len` readable bytes at `key`.
        let key = unsafe { args::bytes(key, key_len, "key") }?;
        ks.keyspace.remove_with(key, write_durability(options))?;
        Ok(CAIRN_OK)
    })
}

/// Merges `operand` into the value of `key` with the keyspace's merge operator (opened
/// with `cairn_keyspace_open_merge`): nothing is read; reads combine the operands.
/// `CAIRN_INVALID_ARGUMENT` if the keyspace has no merge operator or the operator refuses
/// the operand (`cairn.add_i64`: not the decimal text of an `int64_t`). A read of a key
/// whose operands cannot be combined returns `CAIRN_MERGE_FAILED`.
///
/// # Safety
/// `key` and `operand` must point to `key_len` and `operand_len` readable bytes (either
/// may be NULL with length 0).
#[no_mangle]
pub unsafe extern "C" fn cairn_merge(
    ks: Option<&cairn_keyspace_t>,
    options: Option<&cairn_writeoptions_t>,
    key: *const c_char,
    key_len: usize,
    operand: *const c_char,
    operand_len: usize,
    errptr: Option<&mut *mut c_char>,
) -> cairn_status_t {
    run(errptr, || {
        let ks = keyspace::live(ks)?;
        // SAFETY: the caller guarantees `key_len` readable bytes at `key`.
        let key = unsafe { args::bytes(key, key_len, "key") }?;
        // SAFETY: the caller guarantees `operand_len` readable bytes at `operand`.
        let operand = unsafe { args::bytes(operand, operand_len, "operand") }?;
        ks.keyspace
            .merge_with(key, operand, write_durability(options))?;
        Ok(CAIRN_OK)
    })
}

/// Adds `delta` to the counter at `key` (a missing key counts as 0) and stores the new
/// value in `*result` (may be NULL). `CAIRN_NOT_A_COUNTER` if the key holds something
/// other than the decimal text of an `int64_t`; `CAIRN_COUNTER_OVERFLOW` if the result
/// leaves its range.
///
/// # Safety
/// `key` must point to `key_len` readable bytes (NULL if `key_len` is 0).
#[no_mangle]
pub unsafe extern "C" fn cairn_incr(
    ks: Option<&cairn_keyspace_t>,
    options: Option<&cairn_writeoptions_t>,
    key: *const c_char,
    key_len: usize,
    delta: i64,
    result: Option<&mut i64>,
    errptr: Option<&mut *mut c_char>,
) -> cairn_status_t {
    run(errptr, || {
        let ks = keyspace::live(ks)?;
        // SAFETY: the caller guarantees `key_len` readable bytes at `key`.
        let key = unsafe { args::bytes(key, key_len, "key") }?;
        let v = ks
            .keyspace
            .incr_with(key, delta, write_durability(options))?;
        if let Some(r) = result {
            *r = v;
        }
        Ok(CAIRN_OK)
    })
}

/// Subtracts `delta` from the counter at `key`; as `cairn_incr`.
///
/// # Safety
/// `key` must point to `key_len` readable bytes (NULL if `key_len` is 0).
#[no_mangle]
pub unsafe extern "C" fn cairn_decr(
    ks: Option<&cairn_keyspace_t>,
    options: Option<&cairn_writeoptions_t>,
    key: *const c_char,
    key_len: usize,
    delta: i64,
    result: Option<&mut i64>,
    errptr: Option<&mut *mut c_char>,
) -> cairn_status_t {
    run(errptr, || {
        let ks = keyspace::live(ks)?;
        // SAFETY: the caller guarantees `key_len` readable bytes at `key`.
        let key = unsafe { args::bytes(key, key_len, "key") }?;
        let v = ks
            .keyspace
            .decr_with(key, delta, write_durability(options))?;
        if let Some(r) = result {
            *r = v;
        }
        Ok(CAIRN_OK)
    })
}

/// Removes every key in `[start, end)` with one write. A NULL `start` (length 0) means
/// from the first key, a NULL `end` (length 0) through the last; an empty non-NULL
/// `start` is the smallest key.
///
/// # Safety
/// `start` and `end` must each be NULL with length 0 or point to that many readable
/// bytes.
#[no_mangle]
pub unsafe extern "C" fn cairn_delete_range(
    ks: Option<&cairn_keyspace_t>,
    options: Option<&cairn_writeoptions_t>,
    start: *const c_char,
    start_len: usize,
    end: *const c_char,
    end_len: usize,
    errptr: Option<&mut *mut c_char>,
) -> cairn_status_t {
    run(errptr, || {
        let ks = keyspace::live(ks)?;
        // SAFETY: the caller guarantees `start_len` readable bytes at a non-NULL `start`.
        let start = unsafe { args::optional_bytes(start, start_len, "start") }?;
        // SAFETY: the caller guarantees `end_len` readable bytes at a non-NULL `end`.
        let end = unsafe { args::optional_bytes(end, end_len, "end") }?;
        let bounds = range::half_open(start, end);
        ks.keyspace
            .remove_range_with(bounds, write_durability(options))?;
        Ok(CAIRN_OK)
    })
}

/// Removes every key starting with `prefix` (every key for an empty prefix) with one
/// write.
///
/// # Safety
/// `prefix` must point to `prefix_len` readable bytes (NULL if `prefix_len` is 0).
#[no_mangle]
pub unsafe extern "C" fn cairn_delete_prefix(
    ks: Option<&cairn_keyspace_t>,
    options: Option<&cairn_writeoptions_t>,
    prefix: *const c_char,
    prefix_len: usize,
    errptr: Option<&mut *mut c_char>,
) -> cairn_status_t {
    run(errptr, || {
        let ks = keyspace::live(ks)?;
        // SAFETY: the caller guarantees `prefix_len` readable bytes at `prefix`.
        let prefix = unsafe { args::bytes(prefix, prefix_len, "prefix") }?;
        let bounds = range::prefix(prefix);
        ks.keyspace
            .remove_range_with(bounds, write_durability(options))?;
        Ok(CAIRN_OK)
    })
}
