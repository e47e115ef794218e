//! # libcairn: the C API of Cairn
//!
//! Both of Cairn's stores through a C ABI: the ordered store (`cairn_db_*`,
//! `cairn_keyspace_*`, reads, writes, batches, snapshots, iterators) and the constant
//! store (`cairn_hash_*`: Sparkey log writer, index builder, reader, iteration). The
//! header `include/cairn.h` is generated from this crate by cbindgen (`cbindgen.toml`);
//! a test fails if the committed header differs from what cbindgen produces.
//!
//! Conventions (repeated at the top of the header):
//! 1. Handles are opaque pointers created by a function of this library and freed by its
//!    `*_destroy`; every buffer the library allocates is freed by `cairn_free`.
//! 2. Bytes cross as `const char*` + `size_t`; NULL is accepted with length 0. Paths and
//!    keyspace names are NUL-terminated strings.
//! 3. Every fallible function returns a `cairn_status_t` (`CAIRN_OK`, `CAIRN_NOT_FOUND`
//!    or an error code grouped by range) and, on error, stores a `malloc`ed message in
//!    `*errptr` when `errptr` is not NULL.
//! 4. No panic crosses the boundary: every entry point runs inside `catch_unwind`
//!    (guard.rs), and every pointer argument is checked for NULL.
//!
//! `unsafe` is confined to `args.rs` (raw pointers to slices, strings, arrays; `malloc`
//! and `free`) and to the calls of those helpers, each with a `// SAFETY:` comment;
//! UNSAFE.md, "The C API", lists them.

mod args;
mod batch;
mod db;
mod guard;
mod hash_iter;
mod hash_reader;
mod hash_writer;
mod iter;
mod keyspace;
mod options;
mod properties;
mod range;
mod read;
mod snapshot;
mod status;
mod stream;
mod txn;
mod write;

/// The thread-safety the header documents for each handle, checked at compile time.
#[allow(dead_code)]
fn thread_safety_matches_the_header() {
    fn shared<T: Send + Sync>() {}
    fn movable<T: Send>() {}
    shared::<db::cairn_db_t>();
    shared::<keyspace::cairn_keyspace_t>();
    shared::<snapshot::cairn_snapshot_t>();
    shared::<hash_reader::cairn_hash_reader_t>();
    shared::<options::cairn_options_t>();
    movable::<batch::cairn_batch_t>();
    movable::<iter::cairn_iter_t>();
    movable::<hash_writer::cairn_hash_logwriter_t>();
    movable::<hash_iter::cairn_hash_iter_t>();
    movable::<stream::cairn_value_reader_t>();
    movable::<txn::cairn_txn_t>();
}
