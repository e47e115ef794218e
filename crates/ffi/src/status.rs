//! Status codes and the guard every entry point runs its body in.
//!
//! Owns: the `CAIRN_*` status codes (grouped by range, never renumbered) and the mapping
//! from [`engine::Error`] to a code and a message ([`Failure`]). `guard.rs` runs every
//! entry point and turns its failure into a code and a message.
//!
//! Invariants:
//! 1. Every exported function that can fail returns a `cairn_status_t` computed by
//!    `guard::run`;
//!    a panic inside becomes `CAIRN_INTERNAL` with a message, never an abort or an unwind
//!    into C.
//! 2. On failure `*errptr` (when `errptr` is not NULL) holds a NUL-terminated message
//!    allocated with `malloc` (free it with `cairn_free`); on success it is left untouched.
//!    A message already in `*errptr` is freed before it is replaced, as leveldb's C API
//!    does, so `*errptr` must be NULL or a message of this library.

use std::ffi::{c_char, c_int};

/// The result of a call: `CAIRN_OK` (0), `CAIRN_NOT_FOUND` (1), or an error code.
#[allow(non_camel_case_types)]
pub type cairn_status_t = c_int;

/// Success.
pub const CAIRN_OK: cairn_status_t = 0;
/// The key (or keyspace) is absent. Not an error: `*errptr` is left untouched.
pub const CAIRN_NOT_FOUND: cairn_status_t = 1;

// 100-199: the caller's mistake; nothing was changed.
/// An argument Cairn cannot accept: a NULL pointer, an option out of range, a key too
/// long, a dropped keyspace, a handle used in the wrong state.
pub const CAIRN_INVALID_ARGUMENT: cairn_status_t = 100;
/// The caller's buffer is smaller than the value; the needed length was stored.
pub const CAIRN_BUFFER_TOO_SMALL: cairn_status_t = 101;
/// `cairn_incr`/`cairn_decr` found a value that is not a counter; nothing was written.
pub const CAIRN_NOT_A_COUNTER: cairn_status_t = 102;
/// `cairn_incr`/`cairn_decr` would leave the range of `int64_t`; nothing was written.
pub const CAIRN_COUNTER_OVERFLOW: cairn_status_t = 103;
/// The operation needs a feature this build of libcairn was compiled without.
pub const CAIRN_FEATURE_DISABLED: cairn_status_t = 104;
/// A read found merge operands its keyspace's merge operator cannot combine (for
/// `cairn.add_i64`: a value that is not a counter, or a sum leaving `int64_t`). Nothing
/// is lost: the operands stay as written, and a put of the key replaces them.
pub const CAIRN_MERGE_FAILED: cairn_status_t = 105;

// 200-299: the bytes on disk.
/// A file's bytes disagree with its format (checksum, magic, truncation, ...).
pub const CAIRN_CORRUPTION: cairn_status_t = 200;
/// A file of a format version this build cannot read.
pub const CAIRN_UNSUPPORTED_VERSION: cairn_status_t = 201;
/// A constant-store log and index that do not belong together.
pub const CAIRN_IDENTIFIER_MISMATCH: cairn_status_t = 202;

// 300-399: the environment.
/// An operating-system call failed (open, read, write, fsync, lock held by another
/// process, ...).
pub const CAIRN_IO: cairn_status_t = 300;
/// A buffer for the caller could not be allocated.
pub const CAIRN_NO_MEMORY: cairn_status_t = 301;

// 400-499: the state of a handle.
/// The store was opened read-only (or as a follower): writes are refused.
pub const CAIRN_READ_ONLY: cairn_status_t = 400;
/// An earlier write or fsync failed; the writer refuses work until the store or log is
/// reopened.
pub const CAIRN_POISONED: cairn_status_t = 401;
/// Background work (flush, compaction, manifest write) failed; the store refuses writes
/// and stays readable until reopened.
pub const CAIRN_STOPPED: cairn_status_t = 402;
/// The handle (or the store it belongs to) was closed.
pub const CAIRN_CLOSED: cairn_status_t = 403;
/// A transaction's commit found a key it depends on written by another commit after its
/// snapshot; nothing was written. Running the transaction again may succeed.
pub const CAIRN_CONFLICT: cairn_status_t = 404;

// 900-999: libcairn itself.
/// A bug in libcairn (a caught panic) or an error kind this header does not know yet.
pub const CAIRN_INTERNAL: cairn_status_t = 900;

/// Why a call failed: a status code and a readable sentence.
#[derive(Debug)]
pub(crate) struct Failure {
    pub(crate) code: cairn_status_t,
    pub(crate) message: String,
}

impl Failure {
    pub(crate) fn new(code: cairn_status_t, message: impl Into<String>) -> Failure {
        Failure {
            code,
            message: message.into(),
        }
    }

    pub(crate) fn invalid(message: impl Into<String>) -> Failure {
        Failure::new(CAIRN_INVALID_ARGUMENT, message)
    }

    pub(crate) fn closed(what: &str) -> Failure {
        Failure::new(CAIRN_CLOSED, format!("the {what} is closed"))
    }
}

/// The status code of an engine error.
pub(crate) fn code_of(error: &engine::Error) -> cairn_status_t {
    use engine::Error as E;
    match error {
        E::Io { source, .. } if source.kind() == std::io::ErrorKind::OutOfMemory => CAIRN_NO_MEMORY,
        E::Io { .. } => CAIRN_IO,
        E::Corruption(_) | E::BadInput { .. } => CAIRN_CORRUPTION,
        E::UnsupportedVersion { .. } => CAIRN_UNSUPPORTED_VERSION,
        E::IdentifierMismatch { .. } => CAIRN_IDENTIFIER_MISMATCH,
        E::InvalidArgument(_) => CAIRN_INVALID_ARGUMENT,
        E::Poisoned => CAIRN_POISONED,
        E::Stopped { .. } => CAIRN_STOPPED,
        E::ReadOnly => CAIRN_READ_ONLY,
        E::NotACounter { .. } => CAIRN_NOT_A_COUNTER,
        E::CounterOverflow { .. } => CAIRN_COUNTER_OVERFLOW,
        E::FeatureDisabled { .. } => CAIRN_FEATURE_DISABLED,
        E::Conflict { .. } => CAIRN_CONFLICT,
        E::MergeFailed { .. } => CAIRN_MERGE_FAILED,
        _ => CAIRN_INTERNAL,
    }
}

impl From<engine::Error> for Failure {
    fn from(error: engine::Error) -> Failure {
        Failure::new(code_of(&error), error.to_string())
    }
}

impl From<std::io::Error> for Failure {
    /// A streaming read's error: the store's own error where it wraps one (damage is
    /// `CAIRN_CORRUPTION`), else `CAIRN_IO` (`CAIRN_CORRUPTION` for `InvalidData`).
    fn from(error: std::io::Error) -> Failure {
        if let Some(inner) = error
            .get_ref()
            .and_then(|e| e.downcast_ref::<engine::Error>())
        {
            return Failure::new(code_of(inner), inner.to_string());
        }
        let code = match error.kind() {
            std::io::ErrorKind::InvalidData => CAIRN_CORRUPTION,
            std::io::ErrorKind::OutOfMemory => CAIRN_NO_MEMORY,
            _ => CAIRN_IO,
        };
        Failure::new(code, error.to_string())
    }
}

/// The name of a status code (`"CAIRN_IO"`), or `"CAIRN_UNKNOWN"`. The string is static:
/// never free it.
#[no_mangle]
pub extern "C" fn cairn_status_name(status: cairn_status_t) -> *const c_char {
    let name: &'static std::ffi::CStr = match status {
        CAIRN_OK => c"CAIRN_OK",
        CAIRN_NOT_FOUND => c"CAIRN_NOT_FOUND",
        CAIRN_INVALID_ARGUMENT => c"CAIRN_INVALID_ARGUMENT",
        CAIRN_BUFFER_TOO_SMALL => c"CAIRN_BUFFER_TOO_SMALL",
        CAIRN_NOT_A_COUNTER => c"CAIRN_NOT_A_COUNTER",
        CAIRN_COUNTER_OVERFLOW => c"CAIRN_COUNTER_OVERFLOW",
        CAIRN_FEATURE_DISABLED => c"CAIRN_FEATURE_DISABLED",
        CAIRN_MERGE_FAILED => c"CAIRN_MERGE_FAILED",
        CAIRN_CONFLICT => c"CAIRN_CONFLICT",
        CAIRN_CORRUPTION => c"CAIRN_CORRUPTION",
        CAIRN_UNSUPPORTED_VERSION => c"CAIRN_UNSUPPORTED_VERSION",
        CAIRN_IDENTIFIER_MISMATCH => c"CAIRN_IDENTIFIER_MISMATCH",
        CAIRN_IO => c"CAIRN_IO",
        CAIRN_NO_MEMORY => c"CAIRN_NO_MEMORY",
        CAIRN_READ_ONLY => c"CAIRN_READ_ONLY",
        CAIRN_POISONED => c"CAIRN_POISONED",
        CAIRN_STOPPED => c"CAIRN_STOPPED",
        CAIRN_CLOSED => c"CAIRN_CLOSED",
        CAIRN_INTERNAL => c"CAIRN_INTERNAL",
        _ => c"CAIRN_UNKNOWN",
    };
    name.as_ptr()
}

/// The library's version, `"MAJOR.MINOR.PATCH"`. The string is static: never free it.
#[no_mangle]
pub extern "C" fn cairn_version() -> *const c_char {
    const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), "\0");
    VERSION.as_ptr().cast()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_failures_have_their_own_code_and_name() {
        let error = engine::Error::MergeFailed {
            operator: "cairn.add_i64".to_string(),
            key: b"k".to_vec(),
            detail: "the value \"x\" is not a counter".to_string(),
        };
        let failure = Failure::from(error);
        assert_eq!(failure.code, CAIRN_MERGE_FAILED);
        assert!(
            failure.message.contains("cairn.add_i64"),
            "{}",
            failure.message
        );
        // SAFETY: `cairn_status_name` returns a static NUL-terminated string.
        let name = unsafe { std::ffi::CStr::from_ptr(cairn_status_name(CAIRN_MERGE_FAILED)) };
        assert_eq!(name.to_str(), Ok("CAIRN_MERGE_FAILED"));
    }
}
