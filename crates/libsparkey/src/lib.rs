//! `libsparkey.so.0` served by Cairn: the reference Sparkey C API (`sparkey.h`, spec
//! `sparkey-format.md` §9), symbol for symbol, over Cairn's constant store
//! ([`cairn::hash`]), so a program built against the reference library runs unchanged.
//!
//! The header is `include/sparkey/sparkey.h`; where Cairn deliberately differs from the
//! reference's bugs is listed there and in `README.md`.
//!
//! Boundary rules, kept by every entry point:
//! * no panic crosses into C: each entry point runs under `catch_unwind`
//!   (`handle::guard`) and a panic becomes `SPARKEY_INTERNAL_ERROR` (or the function's
//!   neutral value: 0, NULL);
//! * every pointer argument is checked for NULL, every byte length for fitting in `isize`;
//! * handles stay valid after they are closed (`handle`), so the "closed" codes
//!   (-204, -207, -304) are reliable and no call touches freed memory.
//!
//! Thread-safety (the reference's contract): a log reader or hash reader may be shared by
//! threads, except while it is opened or closed; iterators and writers must not be shared.
//!
//! Modules: `returncode` (codes, texts, error mapping), `handle` (status words and the
//! panic guard), `args` (checked arguments), one module per C object.

#![allow(
    missing_docs,
    reason = "the C API is documented in include/sparkey/sparkey.h; items are named after it"
)]

mod args;
mod filename;
mod handle;
mod hashreader;
mod logiter;
mod logreader;
mod logwriter;
mod returncode;

use std::ffi::{c_char, c_int};

/// `sparkey_errstring`: the reference's static message for `code` (never NULL).
#[no_mangle]
pub extern "C" fn sparkey_errstring(code: c_int) -> *const c_char {
    returncode::errstring_ptr(code)
}
