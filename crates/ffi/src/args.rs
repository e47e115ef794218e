//! Arguments that cross the boundary as raw pointers, and buffers handed to C.
//!
//! Owns every conversion from a C pointer to a Rust value that needs `unsafe`: bytes
//! (`const char*` + `size_t`), NUL-terminated strings and paths, caller buffers and
//! arrays; and every `malloc`/`free` of memory the caller receives. The other modules
//! receive handles as `Option<&T>`/`Option<&mut T>` (a NULL pointer is `None`), which
//! needs no `unsafe` in Rust: a handle pointer's validity is the C caller's obligation,
//! stated in the header.
//!
//! Invariants:
//! 1. A NULL pointer with length 0 reads as empty; a NULL pointer with a non-zero length
//!    is `CAIRN_INVALID_ARGUMENT`, never a dereference.
//! 2. Memory returned to C is allocated with `malloc` (never Rust's allocator), so
//!    `cairn_free` and the C library's `free` both release it. A zero-length buffer is
//!    still a valid, non-NULL allocation of one byte.
//!
//! Thread-safety: the functions here touch only what their arguments point to.

use std::ffi::{c_char, CStr};
use std::path::PathBuf;

use crate::status::{cairn_status_t, Failure, CAIRN_BUFFER_TOO_SMALL, CAIRN_NO_MEMORY, CAIRN_OK};

/// `len` bytes at `ptr` as a slice.
///
/// # Safety
/// If `ptr` is not NULL and `len > 0`, `ptr` must point to `len` readable bytes that stay
/// valid and unchanged for `'a`.
pub(crate) unsafe fn bytes<'a>(
    ptr: *const c_char,
    len: usize,
    what: &str,
) -> Result<&'a [u8], Failure> {
    if len == 0 {
        return Ok(&[]);
    }
    if ptr.is_null() {
        return Err(Failure::invalid(format!(
            "{what} is NULL with length {len}"
        )));
    }
    if len > isize::MAX as usize {
        return Err(Failure::invalid(format!(
            "{what} length {len} is too large"
        )));
    }
    // SAFETY: `ptr` is not NULL, `len` fits in `isize`, and the caller guarantees `len`
    // readable bytes at `ptr` valid for `'a`; `u8` has alignment 1.
    Ok(unsafe { std::slice::from_raw_parts(ptr.cast::<u8>(), len) })
}

/// Bytes at `ptr`, or `None` for a NULL pointer (an unbounded range end).
///
/// # Safety
/// As [`bytes`].
pub(crate) unsafe fn optional_bytes<'a>(
    ptr: *const c_char,
    len: usize,
    what: &str,
) -> Result<Option<&'a [u8]>, Failure> {
    if ptr.is_null() {
        if len != 0 {
            return Err(Failure::invalid(format!(
                "{what} is NULL with length {len}"
            )));
        }
        return Ok(None);
    }
    // SAFETY: the caller's guarantee, passed on.
    unsafe { bytes(ptr, len, what) }.map(Some)
}

/// A NUL-terminated UTF-8 string.
///
/// # Safety
/// If `ptr` is not NULL it must point to a NUL-terminated string valid for `'a`.
pub(crate) unsafe fn text<'a>(ptr: *const c_char, what: &str) -> Result<&'a str, Failure> {
    if ptr.is_null() {
        return Err(Failure::invalid(format!("{what} is NULL")));
    }
    // SAFETY: not NULL, and the caller guarantees a NUL-terminated string valid for 'a.
    let c = unsafe { CStr::from_ptr(ptr) };
    c.to_str()
        .map_err(|_| Failure::invalid(format!("{what} is not valid UTF-8")))
}

/// A NUL-terminated path (any bytes but NUL on Unix).
///
/// # Safety
/// As [`text`].
pub(crate) unsafe fn path(ptr: *const c_char, what: &str) -> Result<PathBuf, Failure> {
    if ptr.is_null() {
        return Err(Failure::invalid(format!("{what} is NULL")));
    }
    // SAFETY: not NULL, and the caller guarantees a NUL-terminated string.
    let c = unsafe { CStr::from_ptr(ptr) };
    if c.is_empty() {
        return Err(Failure::invalid(format!("{what} is empty")));
    }
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        Ok(PathBuf::from(std::ffi::OsStr::from_bytes(c.to_bytes())))
    }
    #[cfg(not(unix))]
    {
        c.to_str()
            .map(PathBuf::from)
            .map_err(|_| Failure::invalid(format!("{what} is not valid UTF-8")))
    }
}

/// Copies `value` into the caller's `buf` and sets `*value_len` to its full length:
/// `CAIRN_OK`, or `CAIRN_BUFFER_TOO_SMALL` with nothing copied (the caller calls again
/// with a buffer of `*value_len` bytes). The tail of a `*_get_into`.
pub(crate) fn copy_out(
    value: &[u8],
    buf: &mut [u8],
    value_len: &mut usize,
) -> Result<cairn_status_t, Failure> {
    *value_len = value.len();
    match buf.get_mut(..value.len()) {
        Some(dst) => {
            dst.copy_from_slice(value);
            Ok(CAIRN_OK)
        }
        None => Err(Failure::new(
            CAIRN_BUFFER_TOO_SMALL,
            format!(
                "the value of {} bytes does not fit in the buffer of {} bytes",
                value.len(),
                buf.len()
            ),
        )),
    }
}

/// The caller's writable buffer of `len` bytes.
///
/// # Safety
/// If `ptr` is not NULL and `len > 0`, `ptr` must point to `len` writable bytes that
/// nothing else reads or writes during `'a`.
pub(crate) unsafe fn buffer<'a>(
    ptr: *mut c_char,
    len: usize,
    what: &str,
) -> Result<&'a mut [u8], Failure> {
    if len == 0 {
        return Ok(&mut []);
    }
    if ptr.is_null() {
        return Err(Failure::invalid(format!(
            "{what} is NULL with length {len}"
        )));
    }
    if len > isize::MAX as usize {
        return Err(Failure::invalid(format!(
            "{what} length {len} is too large"
        )));
    }
    // SAFETY: not NULL, length fits in isize, and the caller guarantees `len` writable
    // bytes not aliased during 'a; `u8` has alignment 1 and every bit pattern is valid.
    Ok(unsafe { std::slice::from_raw_parts_mut(ptr.cast::<u8>(), len) })
}

/// The caller's array of `count` elements.
///
/// # Safety
/// If `ptr` is not NULL and `count > 0`, `ptr` must point to `count` initialised,
/// properly aligned elements valid and unchanged for `'a`.
pub(crate) unsafe fn array<'a, T>(
    ptr: *const T,
    count: usize,
    what: &str,
) -> Result<&'a [T], Failure> {
    if count == 0 {
        return Ok(&[]);
    }
    if ptr.is_null() {
        return Err(Failure::invalid(format!(
            "{what} is NULL with count {count}"
        )));
    }
    if count
        .checked_mul(std::mem::size_of::<T>())
        .is_none_or(|n| n > isize::MAX as usize)
    {
        return Err(Failure::invalid(format!(
            "{what} count {count} is too large"
        )));
    }
    // SAFETY: not NULL, the total size fits in isize, and the caller guarantees `count`
    // initialised, aligned elements valid for 'a.
    Ok(unsafe { std::slice::from_raw_parts(ptr, count) })
}

/// The caller's writable array of `count` elements.
///
/// # Safety
/// If `ptr` is not NULL and `count > 0`, `ptr` must point to `count` writable, properly
/// aligned elements that nothing else accesses during `'a`. `T` must be a type for which
/// every bit pattern is valid (pointers, integers): the old contents are not read.
pub(crate) unsafe fn array_mut<'a, T: Copy>(
    ptr: *mut T,
    count: usize,
    what: &str,
) -> Result<&'a mut [T], Failure> {
    if count == 0 {
        return Ok(&mut []);
    }
    if ptr.is_null() {
        return Err(Failure::invalid(format!(
            "{what} is NULL with count {count}"
        )));
    }
    if count
        .checked_mul(std::mem::size_of::<T>())
        .is_none_or(|n| n > isize::MAX as usize)
    {
        return Err(Failure::invalid(format!(
            "{what} count {count} is too large"
        )));
    }
    // SAFETY: not NULL, the total size fits in isize, and the caller guarantees `count`
    // writable, aligned, unaliased elements of a type valid for any bit pattern.
    Ok(unsafe { std::slice::from_raw_parts_mut(ptr, count) })
}

/// A `malloc`ed copy of `data` followed by a NUL byte (so text can be printed as is).
pub(crate) fn malloc_copy(data: &[u8]) -> Result<*mut c_char, Failure> {
    let size = data
        .len()
        .checked_add(1)
        .ok_or_else(|| Failure::new(CAIRN_NO_MEMORY, "value too large to copy"))?;
    // SAFETY: `malloc` may be called with any size; the result is checked for NULL.
    let ptr = unsafe { libc::malloc(size) }.cast::<u8>();
    if ptr.is_null() {
        return Err(Failure::new(
            CAIRN_NO_MEMORY,
            format!("could not allocate {size} bytes"),
        ));
    }
    // SAFETY: `ptr` is a fresh allocation of `data.len() + 1` bytes, so it does not overlap
    // `data`, and both ranges are in bounds; the NUL goes into the last byte.
    unsafe {
        std::ptr::copy_nonoverlapping(data.as_ptr(), ptr, data.len());
        ptr.add(data.len()).write(0);
    }
    Ok(ptr.cast())
}

/// Frees memory from [`malloc_copy`] (or NULL).
///
/// # Safety
/// `ptr` must be NULL or a pointer this library returned and that was not freed yet.
pub(crate) unsafe fn free(ptr: *mut c_char) {
    if !ptr.is_null() {
        // SAFETY: by the caller's guarantee `ptr` came from `malloc` and is freed once.
        unsafe { libc::free(ptr.cast()) }
    }
}

/// Stores `message` in `*slot`, freeing the message already there.
pub(crate) fn set_message(slot: &mut *mut c_char, message: &str) {
    // A message must not hold a NUL: it would cut the text short.
    let clean = message.replace('\0', "\\0");
    let old = std::mem::replace(slot, std::ptr::null_mut());
    // SAFETY: the header requires `*errptr` to be NULL or a message of this library not
    // freed yet (status.rs, invariant 2).
    unsafe { free(old) };
    if let Ok(ptr) = malloc_copy(clean.as_bytes()) {
        *slot = ptr;
    }
}

/// Frees a buffer, value or message this library returned (`cairn_get`'s value, an
/// `errptr` message, a head's metadata, ...). NULL is ignored.
///
/// # Safety
/// `ptr` must be NULL or a pointer returned by libcairn that was not freed yet.
#[no_mangle]
pub unsafe extern "C" fn cairn_free(ptr: *mut c_char) {
    // SAFETY: the caller's guarantee, passed on. `free` cannot panic.
    unsafe { free(ptr) }
}

/// A `malloc`ed array of `malloc`ed, NUL-terminated copies of `list`, and its length.
pub(crate) fn malloc_strings(list: &[String]) -> Result<(*mut *mut c_char, usize), Failure> {
    let size = list
        .len()
        .max(1)
        .checked_mul(std::mem::size_of::<*mut c_char>())
        .ok_or_else(|| Failure::new(CAIRN_NO_MEMORY, "list too long"))?;
    // SAFETY: `malloc` may be called with any size; the result is checked for NULL.
    let array = unsafe { libc::malloc(size) }.cast::<*mut c_char>();
    if array.is_null() {
        return Err(Failure::new(
            CAIRN_NO_MEMORY,
            format!("could not allocate {size} bytes"),
        ));
    }
    for (i, s) in list.iter().enumerate() {
        match malloc_copy(s.as_bytes()) {
            // SAFETY: `array` holds room for `list.len()` pointers (malloc returns memory
            // aligned for any type) and `i < list.len()`.
            Ok(p) => unsafe { array.add(i).write(p) },
            Err(e) => {
                // SAFETY: elements `0..i` were written above and are freed once, then the
                // array itself.
                unsafe { free_strings(array, i) };
                return Err(e);
            }
        }
    }
    Ok((array, list.len()))
}

/// Frees an array from [`malloc_strings`] holding `count` strings (NULL is ignored).
///
/// # Safety
/// `array` must be NULL or an array from [`malloc_strings`] whose first `count` elements
/// are strings of this library, none freed yet.
pub(crate) unsafe fn free_strings(array: *mut *mut c_char, count: usize) {
    if array.is_null() {
        return;
    }
    for i in 0..count {
        // SAFETY: `i < count`, within the array by the caller's guarantee; each element
        // is a live string of this library, freed once.
        unsafe { free(array.add(i).read()) };
    }
    // SAFETY: the array came from `malloc` and is freed once.
    unsafe { libc::free(array.cast()) }
}
