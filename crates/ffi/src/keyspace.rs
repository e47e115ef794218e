//! `cairn_keyspace_t`: a handle to one named keyspace ([`engine::Keyspace`]), and the
//! store's catalog of keyspaces (open or create, look up, list, drop).
//!
//! Invariants:
//! 1. A keyspace handle shares its store's `closed` flag (db.rs, invariant 1): after
//!    `cairn_db_close` every call through it returns `CAIRN_CLOSED`.
//! 2. After `cairn_keyspace_drop`, calls through an old handle of that keyspace return
//!    `CAIRN_INVALID_ARGUMENT` (the engine's rule), never data of a later keyspace with
//!    the same name.
//!
//! Thread-safety: thread-safe (`Keyspace` is `Send + Sync`).

use std::ffi::c_char;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use engine::Readable;

use crate::args;
use crate::db::{self, cairn_db_t};
use crate::guard::run;
use crate::status::{cairn_status_t, Failure, CAIRN_NOT_FOUND, CAIRN_OK};

/// A named keyspace of a store. Thread-safe.
#[allow(non_camel_case_types)]
pub struct cairn_keyspace_t {
    pub(crate) keyspace: engine::Keyspace,
    pub(crate) closed: Arc<AtomicBool>,
}

/// A keyspace whose store is not closed.
pub(crate) fn live(ks: Option<&cairn_keyspace_t>) -> Result<&cairn_keyspace_t, Failure> {
    let ks = ks.ok_or_else(|| Failure::invalid("keyspace is NULL"))?;
    db::check_open(&ks.closed, "store")?;
    Ok(ks)
}

fn handle(db: &cairn_db_t, keyspace: engine::Keyspace) -> *mut cairn_keyspace_t {
    Box::into_raw(Box::new(cairn_keyspace_t {
        keyspace,
        closed: Arc::clone(&db.closed),
    }))
}

/// Opens keyspace `name`, creating it if it does not exist, and stores the handle in
/// `*out`. Names are UTF-8, 1 to 255 bytes.
///
/// # Safety
/// `name` must be a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn cairn_keyspace_open(
    db: Option<&cairn_db_t>,
    name: *const c_char,
    out: Option<&mut *mut cairn_keyspace_t>,
    errptr: Option<&mut *mut c_char>,
) -> cairn_status_t {
    run(errptr, || {
        let out = out.ok_or_else(|| Failure::invalid("out is NULL"))?;
        *out = std::ptr::null_mut();
        db::live(db)?;
        let db = db.ok_or_else(|| Failure::invalid("db is NULL"))?;
        // SAFETY: the caller guarantees `name` is NULL or NUL-terminated.
        let name = unsafe { args::text(name, "name") }?;
        let ks = db.db.keyspace(name)?;
        *out = handle(db, ks);
        Ok(CAIRN_OK)
    })
}

/// Opens keyspace `name` with its own value-separation threshold, creating it if it does
/// not exist: values of at least `blob_threshold` bytes go to the value log (0: the
/// store's threshold applies). The threshold is kept in the manifest; a later call may
/// change it, affecting new writes only.
///
/// # Safety
/// `name` must be a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn cairn_keyspace_open_with(
    db: Option<&cairn_db_t>,
    name: *const c_char,
    blob_threshold: usize,
    out: Option<&mut *mut cairn_keyspace_t>,
    errptr: Option<&mut *mut c_char>,
) -> cairn_status_t {
    run(errptr, || {
        let out = out.ok_or_else(|| Failure::invalid("out is NULL"))?;
        *out = std::ptr::null_mut();
        db::live(db)?;
        let db = db.ok_or_else(|| Failure::invalid("db is NULL"))?;
        // SAFETY: the caller guarantees `name` is NULL or NUL-terminated.
        let name = unsafe { args::text(name, "name") }?;
        let options = engine::KeyspaceOptions::default()
            .blob_threshold((blob_threshold != 0).then_some(blob_threshold));
        let ks = db.db.keyspace_with(name, options)?;
        *out = handle(db, ks);
        Ok(CAIRN_OK)
    })
}

/// Opens keyspace `name` with a built-in merge operator, creating it if it does not
/// exist, so `cairn_merge`, `cairn_batch_merge` and `cairn_txn_merge` may write to it.
/// `merge_operator` is `"cairn.add_i64"` (decimal `int64_t` counters: each operand, in
/// the format `cairn_incr` keeps, is added to the value) or `"cairn.append"` (each operand
/// is appended, with the `separator_len` bytes at `separator` between parts; NULL with 0
/// for none). The operator's name is recorded with the keyspace: a later open must name
/// the same operator (and separator). `CAIRN_INVALID_ARGUMENT` for another name, or a
/// separator with `"cairn.add_i64"`.
///
/// # Safety
/// `name` and `merge_operator` must be NUL-terminated strings; `separator` must point to
/// `separator_len` readable bytes (NULL if `separator_len` is 0).
#[no_mangle]
pub unsafe extern "C" fn cairn_keyspace_open_merge(
    db: Option<&cairn_db_t>,
    name: *const c_char,
    merge_operator: *const c_char,
    separator: *const c_char,
    separator_len: usize,
    out: Option<&mut *mut cairn_keyspace_t>,
    errptr: Option<&mut *mut c_char>,
) -> cairn_status_t {
    run(errptr, || {
        let out = out.ok_or_else(|| Failure::invalid("out is NULL"))?;
        *out = std::ptr::null_mut();
        db::live(db)?;
        let db = db.ok_or_else(|| Failure::invalid("db is NULL"))?;
        // SAFETY: the caller guarantees `name` is NULL or NUL-terminated.
        let name = unsafe { args::text(name, "name") }?;
        // SAFETY: the caller guarantees `merge_operator` is NULL or NUL-terminated.
        let operator = unsafe { args::text(merge_operator, "merge_operator") }?;
        // SAFETY: the caller guarantees `separator_len` readable bytes at `separator`.
        let separator = unsafe { args::bytes(separator, separator_len, "separator") }?;
        let operator = engine::builtin_merge_operator(operator, separator)?;
        let options = engine::KeyspaceOptions::default().merge_operator(operator);
        let ks = db.db.keyspace_with(name, options)?;
        *out = handle(db, ks);
        Ok(CAIRN_OK)
    })
}

/// Opens keyspace `name` only if it exists: `CAIRN_NOT_FOUND` (and `*out` NULL)
/// otherwise.
///
/// # Safety
/// `name` must be a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn cairn_keyspace_get(
    db: Option<&cairn_db_t>,
    name: *const c_char,
    out: Option<&mut *mut cairn_keyspace_t>,
    errptr: Option<&mut *mut c_char>,
) -> cairn_status_t {
    run(errptr, || {
        let out = out.ok_or_else(|| Failure::invalid("out is NULL"))?;
        *out = std::ptr::null_mut();
        db::live(db)?;
        let db = db.ok_or_else(|| Failure::invalid("db is NULL"))?;
        // SAFETY: the caller guarantees `name` is NULL or NUL-terminated.
        let name = unsafe { args::text(name, "name") }?;
        match db.db.get_keyspace(name) {
            Some(ks) => {
                *out = handle(db, ks);
                Ok(CAIRN_OK)
            }
            None => Ok(CAIRN_NOT_FOUND),
        }
    })
}

/// Drops keyspace `name` and all its data. `CAIRN_INVALID_ARGUMENT` if it does not exist.
///
/// # Safety
/// `name` must be a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn cairn_keyspace_drop(
    db: Option<&cairn_db_t>,
    name: *const c_char,
    errptr: Option<&mut *mut c_char>,
) -> cairn_status_t {
    run(errptr, || {
        let db = db::live(db)?;
        // SAFETY: the caller guarantees `name` is NULL or NUL-terminated.
        let name = unsafe { args::text(name, "name") }?;
        db.drop_keyspace(name)?;
        Ok(CAIRN_OK)
    })
}

/// Lists the store's keyspaces, sorted: `*names` receives a `malloc`ed array of `*count`
/// NUL-terminated names; free it with `cairn_names_free(*names, *count)`.
#[no_mangle]
pub extern "C" fn cairn_keyspace_names(
    db: Option<&cairn_db_t>,
    names: Option<&mut *mut *mut c_char>,
    count: Option<&mut usize>,
    errptr: Option<&mut *mut c_char>,
) -> cairn_status_t {
    run(errptr, || {
        let names_out = names.ok_or_else(|| Failure::invalid("names is NULL"))?;
        let count_out = count.ok_or_else(|| Failure::invalid("count is NULL"))?;
        *names_out = std::ptr::null_mut();
        *count_out = 0;
        let list = db::live(db)?.keyspace_names();
        let (array, n) = args::malloc_strings(&list)?;
        *names_out = array;
        *count_out = n;
        Ok(CAIRN_OK)
    })
}

/// Frees an array from `cairn_keyspace_names` (NULL is ignored).
///
/// # Safety
/// `names` must be NULL or an array returned by `cairn_keyspace_names` with its `count`,
/// not freed yet.
#[no_mangle]
pub unsafe extern "C" fn cairn_names_free(names: *mut *mut c_char, count: usize) {
    // SAFETY: the caller's guarantee, passed on.
    unsafe { args::free_strings(names, count) }
}

/// The keyspace's name, not NUL-terminated: `*name` points into the handle (valid until
/// `cairn_keyspace_destroy`), `*len` its length.
#[no_mangle]
pub extern "C" fn cairn_keyspace_name(
    ks: Option<&cairn_keyspace_t>,
    name: Option<&mut *const c_char>,
    len: Option<&mut usize>,
    errptr: Option<&mut *mut c_char>,
) -> cairn_status_t {
    run(errptr, || {
        let ks = ks.ok_or_else(|| Failure::invalid("keyspace is NULL"))?;
        let (name, len) = name
            .zip(len)
            .ok_or_else(|| Failure::invalid("name or len is NULL"))?;
        let text = ks.keyspace.name();
        *name = text.as_ptr().cast();
        *len = text.len();
        Ok(CAIRN_OK)
    })
}

/// Stores in `*count` the number of live keys of the keyspace (at `snapshot`, or now if
/// it is NULL). O(keys): it scans.
#[no_mangle]
pub extern "C" fn cairn_keyspace_count(
    ks: Option<&cairn_keyspace_t>,
    snapshot: Option<&crate::snapshot::cairn_snapshot_t>,
    count: Option<&mut u64>,
    errptr: Option<&mut *mut c_char>,
) -> cairn_status_t {
    run(errptr, || {
        let ks = live(ks)?;
        let out = count.ok_or_else(|| Failure::invalid("count is NULL"))?;
        *out = match snapshot {
            Some(s) => s.snapshot.len(&ks.keyspace)?,
            None => ks.keyspace.len()?,
        };
        Ok(CAIRN_OK)
    })
}

/// Stores in `*bytes` the bytes of the keyspace's tables on disk.
#[no_mangle]
pub extern "C" fn cairn_keyspace_disk_size(
    ks: Option<&cairn_keyspace_t>,
    bytes: Option<&mut u64>,
    errptr: Option<&mut *mut c_char>,
) -> cairn_status_t {
    run(errptr, || {
        let ks = live(ks)?;
        let out = bytes.ok_or_else(|| Failure::invalid("bytes is NULL"))?;
        *out = ks.keyspace.disk_size();
        Ok(CAIRN_OK)
    })
}

/// Frees the handle (NULL is ignored). The keyspace and its data stay.
#[no_mangle]
pub extern "C" fn cairn_keyspace_destroy(ks: Option<Box<cairn_keyspace_t>>) {
    let _ = run(None, move || {
        drop(ks);
        Ok(CAIRN_OK)
    });
}
