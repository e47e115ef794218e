//! [`run`]: the guard every entry point runs its body in. It catches panics, so no unwind
//! ever crosses the C boundary, turns a [`Failure`] into its status code, and stores the
//! failure's message in the caller's `errptr` (status.rs, invariants 1 and 2).

use std::ffi::{c_char, c_int};
use std::panic::{catch_unwind, AssertUnwindSafe};

use crate::args;
use crate::status::{cairn_status_t, Failure, CAIRN_INTERNAL};

/// What an entry point's body returns: a status (`CAIRN_OK` or `CAIRN_NOT_FOUND`, or
/// another code the body chose) or a failure.
pub(crate) type Outcome = Result<cairn_status_t, Failure>;

/// Runs an entry point's body: catches a panic, turns a failure into its code and stores
/// its message in `*errptr`.
pub(crate) fn run(errptr: Option<&mut *mut c_char>, body: impl FnOnce() -> Outcome) -> c_int {
    let failure = match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(code)) => return code,
        Ok(Err(failure)) => failure,
        Err(panic) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| (*s).to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".to_string());
            Failure::new(
                CAIRN_INTERNAL,
                format!("internal error in libcairn: {what}"),
            )
        }
    };
    if let Some(slot) = errptr {
        // A failure to report the message must not turn into a second failure.
        let _ = catch_unwind(AssertUnwindSafe(|| {
            args::set_message(slot, &failure.message)
        }));
    }
    failure.code
}
