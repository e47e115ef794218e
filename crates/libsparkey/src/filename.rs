//! `sparkey_create_log_filename` and `sparkey_create_index_filename`: the `x.spl` ↔
//! `x.spi` naming convention, as `malloc`ed strings the caller frees with `free`.
//!
//! Invariants: the input is read up to its NUL and never beyond 10 001 bytes; the result
//! is either NULL or a `malloc`ed, NUL-terminated copy with the suffix's last letter
//! replaced.

use std::ffi::c_char;

use crate::handle::guard;

/// Longest accepted name, in bytes (the reference's limit).
const MAX_NAME_LEN: usize = 10_000;

/// `name` with `suffix` (4 bytes) turned into `suffix` with its last byte `letter`, as a
/// `malloc`ed C string; NULL if `name` is NULL, too long or lacks the suffix.
///
/// # Safety
/// `name` is NULL or a NUL-terminated string.
unsafe fn rename(name: *const c_char, suffix: &[u8], letter: u8) -> *mut c_char {
    if name.is_null() {
        return std::ptr::null_mut();
    }
    // SAFETY: `name` is non-NULL and NUL-terminated (contract); `strnlen` reads at most
    // MAX_NAME_LEN + 1 bytes and stops at the NUL.
    let len = unsafe { libc::strnlen(name, MAX_NAME_LEN + 1) };
    if len > MAX_NAME_LEN {
        return std::ptr::null_mut();
    }
    // SAFETY: the `len` bytes before the NUL are readable (contract, and `strnlen` found
    // the NUL at `len`).
    let bytes = unsafe { std::slice::from_raw_parts(name.cast::<u8>(), len) };
    if !bytes.ends_with(suffix) {
        return std::ptr::null_mut();
    }
    let mut out = bytes.to_vec();
    if let Some(last) = out.last_mut() {
        *last = letter;
    }
    out.push(0);
    // SAFETY: `malloc` with a non-zero size; the result is checked for NULL below.
    let p = unsafe { libc::malloc(out.len()) }.cast::<u8>();
    if p.is_null() {
        return std::ptr::null_mut();
    }
    // SAFETY: `p` is a fresh allocation of `out.len()` bytes, disjoint from `out`.
    unsafe { std::ptr::copy_nonoverlapping(out.as_ptr(), p, out.len()) };
    p.cast::<c_char>()
}

/// `sparkey_create_log_filename`: `x.spi` → `x.spl` (malloc'ed; NULL on a bad name).
///
/// # Safety
/// `index_filename` is NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn sparkey_create_log_filename(index_filename: *const c_char) -> *mut c_char {
    // SAFETY: forwarded contract.
    guard(std::ptr::null_mut(), || unsafe {
        rename(index_filename, b".spi", b'l')
    })
}

/// `sparkey_create_index_filename`: `x.spl` → `x.spi` (malloc'ed; NULL on a bad name).
///
/// # Safety
/// `log_filename` is NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn sparkey_create_index_filename(log_filename: *const c_char) -> *mut c_char {
    // SAFETY: forwarded contract.
    guard(std::ptr::null_mut(), || unsafe {
        rename(log_filename, b".spl", b'i')
    })
}
