//! `cairn_txn_t`: a transaction ([`engine::Transaction`]): reads at its snapshot with its
//! own writes laid over them, writes to any keyspaces of its store, and a commit that
//! applies them atomically unless another write changed what the transaction depends on
//! (`CAIRN_CONFLICT`: nothing written; begin again and rerun).
//!
//! Invariants:
//! 1. After `cairn_txn_commit` (whatever its outcome) or `cairn_txn_rollback` the handle
//!    holds no transaction: every later call but destroy returns `CAIRN_INVALID_ARGUMENT`.
//! 2. Destroying a transaction that was not committed rolls it back: nothing it wrote
//!    reaches the store.
//! 3. As with batches, a write refused for a bad key or value is reported by the commit,
//!    which then applies nothing.
//!
//! Thread-safety: not thread-safe. One thread at a time may use a transaction (it may
//! move between threads); any number of transactions run at once.

use std::ffi::{c_char, c_int};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use crate::args;
use crate::db::{self, cairn_db_t};
use crate::guard::run;
use crate::keyspace::{self, cairn_keyspace_t};
use crate::options::{cairn_entryoptions_t, cairn_writeoptions_t, write_durability};
use crate::range;
use crate::status::{cairn_status_t, Failure, CAIRN_NOT_FOUND, CAIRN_OK};

/// Isolation `CAIRN_ISOLATION_SNAPSHOT`: the commit fails if another write changed a key
/// the transaction writes after its snapshot (write skew is possible).
pub const CAIRN_ISOLATION_SNAPSHOT: c_int = 0;
/// Isolation `CAIRN_ISOLATION_SERIALIZABLE`: the commit also fails if another write
/// changed a key or range the transaction read.
pub const CAIRN_ISOLATION_SERIALIZABLE: c_int = 1;

/// A transaction. Not thread-safe.
#[allow(non_camel_case_types)]
pub struct cairn_txn_t {
    txn: Option<engine::Transaction>,
    closed: Arc<AtomicBool>,
}

fn live(t: Option<&mut cairn_txn_t>) -> Result<&mut engine::Transaction, Failure> {
    let t = t.ok_or_else(|| Failure::invalid("transaction is NULL"))?;
    db::check_open(&t.closed, "store")?;
    t.txn
        .as_mut()
        .ok_or_else(|| Failure::invalid("the transaction was committed or rolled back"))
}

/// Begins a transaction on `db` with `CAIRN_ISOLATION_*` `isolation`, stored in `*out`.
#[no_mangle]
pub extern "C" fn cairn_txn_begin(
    db: Option<&cairn_db_t>,
    isolation: c_int,
    out: Option<&mut *mut cairn_txn_t>,
    errptr: Option<&mut *mut c_char>,
) -> cairn_status_t {
    run(errptr, || {
        let out = out.ok_or_else(|| Failure::invalid("out is NULL"))?;
        *out = std::ptr::null_mut();
        let isolation = match isolation {
            CAIRN_ISOLATION_SNAPSHOT => engine::Isolation::Snapshot,
            CAIRN_ISOLATION_SERIALIZABLE => engine::Isolation::Serializable,
            other => return Err(Failure::invalid(format!("unknown isolation {other}"))),
        };
        let engine_db = db::live(db)?;
        let closed = db
            .map(|d| Arc::clone(&d.closed))
            .ok_or_else(|| Failure::invalid("db is NULL"))?;
        let options = engine::TransactionOptions::new().isolation(isolation);
        *out = Box::into_raw(Box::new(cairn_txn_t {
            txn: Some(engine_db.transaction_with(&options)),
            closed,
        }));
        Ok(CAIRN_OK)
    })
}

/// Reads `key` of `ks` as the transaction sees it: on `CAIRN_OK` `*value` receives a
/// `malloc`ed copy (free it with `cairn_free`) and `*value_len` its length;
/// `CAIRN_NOT_FOUND` if absent (`*value` NULL).
///
/// # Safety
/// `key` must point to `key_len` readable bytes (NULL if `key_len` is 0).
#[no_mangle]
pub unsafe extern "C" fn cairn_txn_get(
    txn: Option<&mut cairn_txn_t>,
    ks: Option<&cairn_keyspace_t>,
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
        let t = live(txn)?;
        let ks = keyspace::live(ks)?;
        // SAFETY: the caller guarantees `key_len` readable bytes at `key`.
        let key = unsafe { args::bytes(key, key_len, "key") }?;
        match t.get(&ks.keyspace, key)? {
            Some(v) => {
                *value = args::malloc_copy(&v)?;
                *value_len = v.len();
                Ok(CAIRN_OK)
            }
            None => Ok(CAIRN_NOT_FOUND),
        }
    })
}

/// Sets `key` of `ks` to `value` when the transaction commits, with the attributes of
/// `options` (NULL: none).
///
/// # Safety
/// `key` and `value` must point to `key_len` and `value_len` readable bytes (either may
/// be NULL with length 0).
#[no_mangle]
pub unsafe extern "C" fn cairn_txn_put(
    txn: Option<&mut cairn_txn_t>,
    ks: Option<&cairn_keyspace_t>,
    options: Option<&cairn_entryoptions_t>,
    key: *const c_char,
    key_len: usize,
    value: *const c_char,
    value_len: usize,
    errptr: Option<&mut *mut c_char>,
) -> cairn_status_t {
    run(errptr, || {
        let t = live(txn)?;
        let ks = keyspace::live(ks)?;
        // SAFETY: the caller guarantees `key_len` readable bytes at `key`.
        let key = unsafe { args::bytes(key, key_len, "key") }?;
        // SAFETY: the caller guarantees `value_len` readable bytes at `value`.
        let value = unsafe { args::bytes(value, value_len, "value") }?;
        match options {
            Some(o) => t.insert_entry(&ks.keyspace, key, value, &o.options),
            None => t.insert(&ks.keyspace, key, value),
        }
        Ok(CAIRN_OK)
    })
}

/// Removes `key` of `ks` when the transaction commits.
///
/// # Safety
/// `key` must point to `key_len` readable bytes (NULL if `key_len` is 0).
#[no_mangle]
pub unsafe extern "C" fn cairn_txn_delete(
    txn: Option<&mut cairn_txn_t>,
    ks: Option<&cairn_keyspace_t>,
    key: *const c_char,
    key_len: usize,
    errptr: Option<&mut *mut c_char>,
) -> cairn_status_t {
    run(errptr, || {
        let t = live(txn)?;
        let ks = keyspace::live(ks)?;
        // SAFETY: the caller guarantees `key_len` readable bytes at `key`.
        let key = unsafe { args::bytes(key, key_len, "key") }?;
        t.remove(&ks.keyspace, key);
        Ok(CAIRN_OK)
    })
}

/// Removes every key of `ks` in `[start, end)` when the transaction commits (NULL bounds
/// as in `cairn_delete_range`); the transaction's reads see them removed at once.
///
/// # Safety
/// `start` and `end` must each be NULL with length 0 or point to that many readable
/// bytes.
#[no_mangle]
pub unsafe extern "C" fn cairn_txn_delete_range(
    txn: Option<&mut cairn_txn_t>,
    ks: Option<&cairn_keyspace_t>,
    start: *const c_char,
    start_len: usize,
    end: *const c_char,
    end_len: usize,
    errptr: Option<&mut *mut c_char>,
) -> cairn_status_t {
    run(errptr, || {
        let t = live(txn)?;
        let ks = keyspace::live(ks)?;
        // SAFETY: the caller guarantees `start_len` readable bytes at a non-NULL `start`.
        let start = unsafe { args::optional_bytes(start, start_len, "start") }?;
        // SAFETY: the caller guarantees `end_len` readable bytes at a non-NULL `end`.
        let end = unsafe { args::optional_bytes(end, end_len, "end") }?;
        t.remove_range(&ks.keyspace, range::half_open(start, end));
        Ok(CAIRN_OK)
    })
}

/// Merges `operand` into `key` of `ks` (see `cairn_merge`) when the transaction commits;
/// the transaction's reads see it at once. A keyspace without a merge operator, or an
/// operand it refuses, is reported by `cairn_txn_commit` (`CAIRN_INVALID_ARGUMENT`),
/// which then writes nothing.
///
/// # Safety
/// `key` and `operand` must point to `key_len` and `operand_len` readable bytes (either
/// may be NULL with length 0).
#[no_mangle]
pub unsafe extern "C" fn cairn_txn_merge(
    txn: Option<&mut cairn_txn_t>,
    ks: Option<&cairn_keyspace_t>,
    key: *const c_char,
    key_len: usize,
    operand: *const c_char,
    operand_len: usize,
    errptr: Option<&mut *mut c_char>,
) -> cairn_status_t {
    run(errptr, || {
        let t = live(txn)?;
        let ks = keyspace::live(ks)?;
        // SAFETY: the caller guarantees `key_len` readable bytes at `key`.
        let key = unsafe { args::bytes(key, key_len, "key") }?;
        // SAFETY: the caller guarantees `operand_len` readable bytes at `operand`.
        let operand = unsafe { args::bytes(operand, operand_len, "operand") }?;
        t.merge(&ks.keyspace, key, operand);
        Ok(CAIRN_OK)
    })
}

/// Adds `delta` to the counter at `key` of `ks` as the transaction sees it (absent
/// counts as 0), stores the new value in `*result` (may be NULL), and writes it when the
/// transaction commits. `CAIRN_NOT_A_COUNTER`, `CAIRN_COUNTER_OVERFLOW`: nothing recorded.
///
/// # Safety
/// `key` must point to `key_len` readable bytes (NULL if `key_len` is 0).
#[no_mangle]
pub unsafe extern "C" fn cairn_txn_incr(
    txn: Option<&mut cairn_txn_t>,
    ks: Option<&cairn_keyspace_t>,
    key: *const c_char,
    key_len: usize,
    delta: i64,
    result: Option<&mut i64>,
    errptr: Option<&mut *mut c_char>,
) -> cairn_status_t {
    run(errptr, || {
        let t = live(txn)?;
        let ks = keyspace::live(ks)?;
        // SAFETY: the caller guarantees `key_len` readable bytes at `key`.
        let key = unsafe { args::bytes(key, key_len, "key") }?;
        let n = t.incr(&ks.keyspace, key, delta)?;
        if let Some(r) = result {
            *r = n;
        }
        Ok(CAIRN_OK)
    })
}

/// Commits the transaction with the durability of `options` (NULL: the store's default):
/// `CAIRN_OK`, or `CAIRN_CONFLICT` if another write changed a key it writes (or, when
/// serializable, a key or range it read) after its snapshot; nothing is written then.
/// Either way the handle is done (invariant 1): destroy it.
#[no_mangle]
pub extern "C" fn cairn_txn_commit(
    txn: Option<&mut cairn_txn_t>,
    options: Option<&cairn_writeoptions_t>,
    errptr: Option<&mut *mut c_char>,
) -> cairn_status_t {
    run(errptr, || {
        let t = txn.ok_or_else(|| Failure::invalid("transaction is NULL"))?;
        db::check_open(&t.closed, "store")?;
        let inner = t
            .txn
            .take()
            .ok_or_else(|| Failure::invalid("the transaction was committed or rolled back"))?;
        inner.commit_with(write_durability(options))?;
        Ok(CAIRN_OK)
    })
}

/// Discards the transaction's writes; the handle is done (destroy it).
#[no_mangle]
pub extern "C" fn cairn_txn_rollback(
    txn: Option<&mut cairn_txn_t>,
    errptr: Option<&mut *mut c_char>,
) -> cairn_status_t {
    run(errptr, || {
        let t = txn.ok_or_else(|| Failure::invalid("transaction is NULL"))?;
        t.txn
            .take()
            .ok_or_else(|| Failure::invalid("the transaction was committed or rolled back"))?;
        Ok(CAIRN_OK)
    })
}

/// Frees the transaction, rolling it back if it was not committed (NULL is ignored).
#[no_mangle]
pub extern "C" fn cairn_txn_destroy(txn: Option<Box<cairn_txn_t>>) {
    let _ = run(None, move || {
        drop(txn);
        Ok(CAIRN_OK)
    });
}
