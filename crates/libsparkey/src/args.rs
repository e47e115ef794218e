//! Checked conversion of C arguments: paths, byte ranges and out-pointers.
//!
//! Invariants: a NULL pointer is never dereferenced; a byte range is turned into a slice
//! only when its pointer is non-NULL (or its length 0) and its length fits in `isize`.

use std::ffi::{c_char, CStr};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// The path in the NUL-terminated string `p`; `None` for NULL.
///
/// # Safety
/// `p` is NULL or points to a NUL-terminated string that stays valid and unchanged for `'a`.
pub unsafe fn path<'a>(p: *const c_char) -> Option<&'a Path> {
    if p.is_null() {
        return None;
    }
    // SAFETY: `p` is non-NULL and, by the caller's contract, a valid NUL-terminated string
    // that outlives `'a`.
    let s = unsafe { CStr::from_ptr(p) };
    Some(Path::new(std::ffi::OsStr::from_bytes(s.to_bytes())))
}

/// The `len` bytes at `p`; `None` if `p` is NULL with a non-zero length, or the length
/// does not fit in `isize`.
///
/// # Safety
/// If `p` is non-NULL, it points to `len` readable bytes that stay unchanged for `'a`.
pub unsafe fn bytes<'a>(p: *const u8, len: u64) -> Option<&'a [u8]> {
    let len = usize::try_from(len)
        .ok()
        .filter(|&l| l <= isize::MAX as usize)?;
    if len == 0 {
        return Some(&[]);
    }
    if p.is_null() {
        return None;
    }
    // SAFETY: `p` is non-NULL, `len ≤ isize::MAX`, and by the caller's contract the `len`
    // bytes at `p` are readable and unchanged for `'a`; u8 needs no alignment.
    Some(unsafe { std::slice::from_raw_parts(p, len) })
}

/// Stores `value` through `out`; false (nothing written) if `out` is NULL.
///
/// # Safety
/// `out` is NULL or valid for writing one `T`.
pub unsafe fn write<T>(out: *mut T, value: T) -> bool {
    if out.is_null() {
        return false;
    }
    // SAFETY: `out` is non-NULL and, by the caller's contract, valid for a write of `T`.
    unsafe { out.write(value) };
    true
}
