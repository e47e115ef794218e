//! The objects behind the C API's opaque pointers, and the rules every entry point follows
//! at the boundary.
//!
//! Every handle (`sparkey_logwriter`, `sparkey_logreader`, `sparkey_logiter`,
//! `sparkey_hashreader`) is a `#[repr(C)]` struct whose first field is a status word: a
//! per-type magic value while it is open, [`CLOSED`] once closed. Closing a writer or a
//! reader drops everything
//! the handle owns (files, maps, buffers) but **not the handle itself**: its few bytes are
//! kept for the life of the process (reachable from [`GRAVEYARD`], so leak checkers do not
//! report them), so a stale pointer to a closed handle still reads a valid status word and
//! every later call returns the reference's "closed" code (-204, -304) instead of
//! touching freed memory: iterators hold a reader's pointer, so a closed reader is reached
//! through them. Iterators themselves are freed at close ([`Handle::free`]): programs
//! create one per lookup, and keeping every closed one would grow without bound. A handle of the wrong type (a reader passed where an iterator is
//! expected) reads as closed too, because magic values differ per type.
//!
//! Invariants:
//! * a handle pointer the library hands out comes from `Box::into_raw`; a writer's or a
//!   reader's is never freed, an iterator's only by `sparkey_logiter_close`;
//! * [`status`] reads only the first 4 bytes of the pointee, which every handle type has;
//! * the payload of a handle is touched only after its status matched the type's magic;
//! * [`guard`] runs every entry point under `catch_unwind`: a panic never crosses into C.
//!
//! Memory cost of the graveyard: one handle struct (at most a few hundred bytes) plus one
//! word per writer or reader ever closed; closed iterators cost nothing.

use std::ffi::c_int;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Mutex;

use crate::returncode::INTERNAL_ERROR;

/// Status word of a closed handle of any type.
pub const CLOSED: u32 = 0;
/// Status word of an open `sparkey_logwriter`.
pub const LOGWRITER_OPEN: u32 = 0x0c1a_1d01;
/// Status word of an open `sparkey_logreader`.
pub const LOGREADER_OPEN: u32 = 0x0c1a_1d02;
/// Status word of an open `sparkey_logiter`.
pub const LOGITER_OPEN: u32 = 0x0c1a_1d03;
/// Status word of an open `sparkey_hashreader`.
pub const HASHREADER_OPEN: u32 = 0x0c1a_1d04;

/// Addresses of closed handles, kept so they are never freed (and stay reachable).
static GRAVEYARD: Mutex<Vec<usize>> = Mutex::new(Vec::new());

/// A handle: the status word, then the payload (present while open).
#[repr(C)]
#[derive(Debug)]
pub struct Handle<T> {
    status: AtomicU32,
    payload: Option<T>,
}

impl<T> Handle<T> {
    /// A new open handle with status `magic`, on the heap; the pointer is the C handle.
    pub fn into_raw(magic: u32, payload: T) -> *mut Handle<T> {
        Box::into_raw(Box::new(Handle {
            status: AtomicU32::new(magic),
            payload: Some(payload),
        }))
    }

    /// The payload, if the handle is open as `magic`.
    pub fn get(&self, magic: u32) -> Option<&T> {
        if self.status.load(Ordering::Acquire) == magic {
            self.payload.as_ref()
        } else {
            None
        }
    }

    /// The payload, mutably, if the handle is open as `magic`.
    pub fn get_mut(&mut self, magic: u32) -> Option<&mut T> {
        if self.status.load(Ordering::Acquire) == magic {
            self.payload.as_mut()
        } else {
            None
        }
    }

    /// Closes the handle if it is open as `magic`: marks it closed, records it in the
    /// graveyard and returns the payload for the caller to finish (flush, drop).
    pub fn close(&mut self, magic: u32) -> Option<T> {
        if self.status.load(Ordering::Acquire) != magic {
            return None;
        }
        self.status.store(CLOSED, Ordering::Release);
        let payload = self.payload.take();
        let address = self as *mut Handle<T> as usize;
        match GRAVEYARD.lock() {
            Ok(mut g) => g.push(address),
            Err(poisoned) => poisoned.into_inner().push(address),
        }
        payload
    }

    /// Frees the handle at `p` if it is open as `magic` (the iterators: programs create
    /// and close one per lookup, so keeping each closed one would grow without bound),
    /// returning its payload for the caller to finish. A stale copy of the pointer is then
    /// dangling, as with the reference library; the caller's own pointer is set to NULL
    /// by the `_close` entry point.
    ///
    /// # Safety
    /// `p` is a handle created by [`Handle::into_raw`] with this `T` and not freed, used by
    /// this thread only, and no reference to it outlives this call.
    pub unsafe fn free(p: *mut Handle<T>, magic: u32) -> Option<T> {
        // SAFETY: `p` is a live handle of this type (contract); only its status is read.
        if unsafe { &*p }.status.load(Ordering::Acquire) != magic {
            return None;
        }
        // SAFETY: `p` came from `Box::into_raw` and is freed exactly once, here (contract).
        let handle = unsafe { Box::from_raw(p) };
        handle.payload
    }
}

/// The status word at `p` (`None` for NULL).
///
/// # Safety
/// `p` is NULL or points to at least 4 readable, 4-aligned bytes that are only accessed
/// atomically: a handle this library created and has not freed (an open handle, or a
/// closed writer or reader, which are never freed).
pub unsafe fn status<T>(p: *const T) -> Option<u32> {
    if p.is_null() {
        return None;
    }
    // SAFETY: by the caller's contract `p` is a handle created by `Handle::into_raw`, never
    // freed, whose first field (repr(C)) is an `AtomicU32`; only that field is read.
    let word = unsafe { &*p.cast::<AtomicU32>() };
    Some(word.load(Ordering::Acquire))
}

/// Runs an entry point, turning a panic into `on_panic` (never unwinding into C).
pub fn guard<R>(on_panic: R, f: impl FnOnce() -> R) -> R {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or(on_panic)
}

/// [`guard`] for entry points that return a `sparkey_returncode`.
pub fn guard_code(f: impl FnOnce() -> c_int) -> c_int {
    guard(INTERNAL_ERROR, f)
}
