//! `cairn_batch_t`: writes to any keyspaces of one store, applied atomically by
//! `cairn_batch_commit` ([`engine::Batch`]).
//!
//! Invariants:
//! 1. Adding a write never fails for a bad key or value: the first refused write is
//!    reported by the commit (the engine's rule), and the commit then applies nothing.
//! 2. A commit, successful or not, leaves the batch empty and ready for reuse.
//! 3. The counter values `cairn_batch_counter` reads are those of the last commit that
//!    succeeded (none before the first, and none after a failed commit).
//!
//! Thread-safety: not thread-safe. One thread at a time may use a batch (it may move
//! between threads); different batches may be used and committed concurrently.

use std::ffi::c_char;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use crate::args;
use crate::db::{self, cairn_db_t};
use crate::guard::run;
use crate::keyspace::{self, cairn_keyspace_t};
use crate::options::{cairn_entryoptions_t, cairn_writeoptions_t, write_durability};
use crate::range;
use crate::status::{cairn_status_t, Failure, CAIRN_OK};

/// Writes applied atomically. Not thread-safe.
#[allow(non_camel_case_types)]
pub struct cairn_batch_t {
    db: engine::Db,
    batch: engine::Batch,
    closed: Arc<AtomicBool>,
    /// The new counter values of the last successful commit (invariant 3).
    counters: Vec<i64>,
}

fn live(batch: Option<&mut cairn_batch_t>) -> Result<&mut cairn_batch_t, Failure> {
    let b = batch.ok_or_else(|| Failure::invalid("batch is NULL"))?;
    db::check_open(&b.closed, "store")?;
    Ok(b)
}

/// A new, empty batch for the store, stored in `*out`.
#[no_mangle]
pub extern "C" fn cairn_batch_create(
    db: Option<&cairn_db_t>,
    out: Option<&mut *mut cairn_batch_t>,
    errptr: Option<&mut *mut c_char>,
) -> cairn_status_t {
    run(errptr, || {
        let out = out.ok_or_else(|| Failure::invalid("out is NULL"))?;
        *out = std::ptr::null_mut();
        let engine_db = db::live(db)?;
        let closed = db
            .map(|d| Arc::clone(&d.closed))
            .ok_or_else(|| Failure::invalid("db is NULL"))?;
        *out = Box::into_raw(Box::new(cairn_batch_t {
            db: engine_db.clone(),
            batch: engine_db.batch(),
            closed,
            counters: Vec::new(),
        }));
        Ok(CAIRN_OK)
    })
}

/// Adds "set `key` to `value` in `ks`".
///
/// # Safety
/// `key` and `value` must point to `key_len` and `value_len` readable bytes (either may
/// be NULL with length 0).
#[no_mangle]
pub unsafe extern "C" fn cairn_batch_put(
    batch: Option<&mut cairn_batch_t>,
    ks: Option<&cairn_keyspace_t>,
    key: *const c_char,
    key_len: usize,
    value: *const c_char,
    value_len: usize,
    errptr: Option<&mut *mut c_char>,
) -> cairn_status_t {
    run(errptr, || {
        let b = live(batch)?;
        let ks = keyspace::live(ks)?;
        // SAFETY: the caller guarantees `key_len` readable bytes at `key`.
        let key = unsafe { args::bytes(key, key_len, "key") }?;
        // SAFETY: the caller guarantees `value_len` readable bytes at `value`.
        let value = unsafe { args::bytes(value, value_len, "value") }?;
        b.batch.insert(&ks.keyspace, key, value);
        Ok(CAIRN_OK)
    })
}

/// Adds "set `key` to `value` in `ks`" with the tag, metadata and expiry of `options`
/// (its durability is ignored: the commit's applies).
///
/// # Safety
/// As `cairn_batch_put`.
#[no_mangle]
pub unsafe extern "C" fn cairn_batch_put_entry(
    batch: Option<&mut cairn_batch_t>,
    ks: Option<&cairn_keyspace_t>,
    options: Option<&cairn_entryoptions_t>,
    key: *const c_char,
    key_len: usize,
    value: *const c_char,
    value_len: usize,
    errptr: Option<&mut *mut c_char>,
) -> cairn_status_t {
    run(errptr, || {
        let b = live(batch)?;
        let ks = keyspace::live(ks)?;
        // SAFETY: the caller guarantees `key_len` readable bytes at `key`.
        let key = unsafe { args::bytes(key, key_len, "key") }?;
        // SAFETY: the caller guarantees `value_len` readable bytes at `value`.
        let value = unsafe { args::bytes(value, value_len, "value") }?;
        let default = engine::EntryOptions::new();
        let opts = options.map_or(&default, |o| &o.options);
        b.batch.insert_entry(&ks.keyspace, key, value, opts);
        Ok(CAIRN_OK)
    })
}

/// Adds "remove `key` from `ks`".
///
/// # Safety
/// `key` must point to `key_len` readable bytes (NULL if `key_len` is 0).
#[no_mangle]
pub unsafe extern "C" fn cairn_batch_delete(
    batch: Option<&mut cairn_batch_t>,
    ks: Option<&cairn_keyspace_t>,
    key: *const c_char,
    key_len: usize,
    errptr: Option<&mut *mut c_char>,
) -> cairn_status_t {
    run(errptr, || {
        let b = live(batch)?;
        let ks = keyspace::live(ks)?;
        // SAFETY: the caller guarantees `key_len` readable bytes at `key`.
        let key = unsafe { args::bytes(key, key_len, "key") }?;
        b.batch.remove(&ks.keyspace, key);
        Ok(CAIRN_OK)
    })
}

/// Adds "remove every key in `[start, end)` from `ks`" (NULL bounds as in
/// `cairn_delete_range`).
///
/// # Safety
/// As `cairn_delete_range`.
#[no_mangle]
pub unsafe extern "C" fn cairn_batch_delete_range(
    batch: Option<&mut cairn_batch_t>,
    ks: Option<&cairn_keyspace_t>,
    start: *const c_char,
    start_len: usize,
    end: *const c_char,
    end_len: usize,
    errptr: Option<&mut *mut c_char>,
) -> cairn_status_t {
    run(errptr, || {
        let b = live(batch)?;
        let ks = keyspace::live(ks)?;
        // SAFETY: the caller guarantees `start_len` readable bytes at a non-NULL `start`.
        let start = unsafe { args::optional_bytes(start, start_len, "start") }?;
        // SAFETY: the caller guarantees `end_len` readable bytes at a non-NULL `end`.
        let end = unsafe { args::optional_bytes(end, end_len, "end") }?;
        b.batch
            .remove_range(&ks.keyspace, range::half_open(start, end));
        Ok(CAIRN_OK)
    })
}

/// Adds "remove every key starting with `prefix` from `ks`".
///
/// # Safety
/// `prefix` must point to `prefix_len` readable bytes (NULL if `prefix_len` is 0).
#[no_mangle]
pub unsafe extern "C" fn cairn_batch_delete_prefix(
    batch: Option<&mut cairn_batch_t>,
    ks: Option<&cairn_keyspace_t>,
    prefix: *const c_char,
    prefix_len: usize,
    errptr: Option<&mut *mut c_char>,
) -> cairn_status_t {
    run(errptr, || {
        let b = live(batch)?;
        let ks = keyspace::live(ks)?;
        // SAFETY: the caller guarantees `prefix_len` readable bytes at `prefix`.
        let prefix = unsafe { args::bytes(prefix, prefix_len, "prefix") }?;
        b.batch.remove_prefix(&ks.keyspace, prefix);
        Ok(CAIRN_OK)
    })
}

/// Adds "merge `operand` into `key` in `ks`" (see `cairn_merge`). A keyspace without a
/// merge operator, or an operand it refuses, is reported by `cairn_batch_commit`
/// (`CAIRN_INVALID_ARGUMENT`), which then writes nothing.
///
/// # Safety
/// `key` and `operand` must point to `key_len` and `operand_len` readable bytes (either
/// may be NULL with length 0).
#[no_mangle]
pub unsafe extern "C" fn cairn_batch_merge(
    batch: Option<&mut cairn_batch_t>,
    ks: Option<&cairn_keyspace_t>,
    key: *const c_char,
    key_len: usize,
    operand: *const c_char,
    operand_len: usize,
    errptr: Option<&mut *mut c_char>,
) -> cairn_status_t {
    run(errptr, || {
        let b = live(batch)?;
        let ks = keyspace::live(ks)?;
        // SAFETY: the caller guarantees `key_len` readable bytes at `key`.
        let key = unsafe { args::bytes(key, key_len, "key") }?;
        // SAFETY: the caller guarantees `operand_len` readable bytes at `operand`.
        let operand = unsafe { args::bytes(operand, operand_len, "operand") }?;
        b.batch.merge(&ks.keyspace, key, operand);
        Ok(CAIRN_OK)
    })
}

/// Adds "add `delta` to the counter at `key` in `ks`" (see `cairn_incr`). The increment
/// reads the counter as the batch leaves it (after a put of the key earlier in the batch
/// it adds to that value; several increments of one key add up). If an increment fails
/// at the commit (`CAIRN_NOT_A_COUNTER`, `CAIRN_COUNTER_OVERFLOW`), nothing of the batch
/// is written. After a successful commit, `cairn_batch_counter` reads each new value.
///
/// # Safety
/// `key` must point to `key_len` readable bytes (NULL if `key_len` is 0).
#[no_mangle]
pub unsafe extern "C" fn cairn_batch_incr(
    batch: Option<&mut cairn_batch_t>,
    ks: Option<&cairn_keyspace_t>,
    key: *const c_char,
    key_len: usize,
    delta: i64,
    errptr: Option<&mut *mut c_char>,
) -> cairn_status_t {
    run(errptr, || {
        let b = live(batch)?;
        let ks = keyspace::live(ks)?;
        // SAFETY: the caller guarantees `key_len` readable bytes at `key`.
        let key = unsafe { args::bytes(key, key_len, "key") }?;
        b.batch.incr(&ks.keyspace, key, delta);
        Ok(CAIRN_OK)
    })
}

/// Stores in `*result` the new value of the `index`-th increment (from 0, in the order
/// they were added) of the batch's last successful commit. `CAIRN_INVALID_ARGUMENT` if
/// that commit had no such increment.
#[no_mangle]
pub extern "C" fn cairn_batch_counter(
    batch: Option<&cairn_batch_t>,
    index: usize,
    result: Option<&mut i64>,
    errptr: Option<&mut *mut c_char>,
) -> cairn_status_t {
    run(errptr, || {
        let b = batch.ok_or_else(|| Failure::invalid("batch is NULL"))?;
        let result = result.ok_or_else(|| Failure::invalid("result is NULL"))?;
        *result = *b.counters.get(index).ok_or_else(|| {
            Failure::invalid(format!(
                "the last commit of the batch made {} increments; index {index} is past them",
                b.counters.len()
            ))
        })?;
        Ok(CAIRN_OK)
    })
}

/// The number of writes added since the batch was created, cleared or committed (0 for
/// NULL).
#[no_mangle]
pub extern "C" fn cairn_batch_count(batch: Option<&cairn_batch_t>) -> usize {
    batch.map_or(0, |b| b.batch.len())
}

/// Empties the batch.
#[no_mangle]
pub extern "C" fn cairn_batch_clear(
    batch: Option<&mut cairn_batch_t>,
    errptr: Option<&mut *mut c_char>,
) -> cairn_status_t {
    run(errptr, || {
        let b = batch.ok_or_else(|| Failure::invalid("batch is NULL"))?;
        b.batch = b.db.batch();
        Ok(CAIRN_OK)
    })
}

/// Applies every write atomically with the durability of `options` (NULL: the store's
/// default), then empties the batch, whatever the outcome. `CAIRN_NOT_A_COUNTER`,
/// `CAIRN_COUNTER_OVERFLOW`: an increment failed and nothing was written.
#[no_mangle]
pub extern "C" fn cairn_batch_commit(
    batch: Option<&mut cairn_batch_t>,
    options: Option<&cairn_writeoptions_t>,
    errptr: Option<&mut *mut c_char>,
) -> cairn_status_t {
    run(errptr, || {
        let b = live(batch)?;
        let fresh = b.db.batch();
        b.counters.clear();
        let done = std::mem::replace(&mut b.batch, fresh)
            .commit_counters_with(write_durability(options))?;
        b.counters = done.counters().to_vec();
        Ok(CAIRN_OK)
    })
}

/// Frees the batch without applying it (NULL is ignored).
#[no_mangle]
pub extern "C" fn cairn_batch_destroy(batch: Option<Box<cairn_batch_t>>) {
    let _ = run(None, move || {
        drop(batch);
        Ok(CAIRN_OK)
    });
}
