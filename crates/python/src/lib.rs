//! The native half of the Python package `cairn` (imported as `cairn._cairn`; the package
//! in `python/cairn/` re-exports it with the exception classes, views and type stubs).
//!
//! One module per concept: [`db`] (open, close, maintenance), [`keyspace`] (the mapping
//! and its scans, counters and range deletes), [`batch`], [`snapshot`], [`iter`], [`head`],
//! [`value`] (large values as streams), [`reports`] (statistics and reports as dicts),
//! [`sparkey`] (the constant store), [`errors`] (engine errors as exceptions), [`args`] and
//! [`options`] (arguments from Python), [`shared`] (what a store shares with the objects
//! made from it, and how `close()` reaches them).
//!
//! Invariants, for every class:
//! 1. No panic crosses into Python: nothing from outside is unwrapped; every engine error
//!    becomes an exception of `cairn.errors`, every bad argument a `TypeError` or
//!    `InvalidArgumentError`.
//! 2. Every call that does I/O or may take long releases the GIL (`allow_threads`), so
//!    threads sharing a store or a reader run in parallel; point reads answered from
//!    memory keep it (`point.rs`). Locks of this crate are never held while waiting for
//!    the GIL.
//! 3. Values come back as `bytes`; keys and values go in as `bytes`, `bytearray` or
//!    `memoryview`.
//! 4. A closed store, reader, writer, snapshot, batch or iterator raises
//!    `cairn.ClosedError`, never crashes.

use pyo3::prelude::*;

mod args;
mod batch;
mod db;
mod errors;
mod head;
mod iter;
mod keyspace;
mod options;
mod point;
mod reports;
mod retry;
mod shared;
mod snapshot;
mod sparkey;
mod transaction;
mod value;

/// The module `cairn._cairn`.
#[pymodule]
fn _cairn(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<db::Db>()?;
    m.add_class::<keyspace::Keyspace>()?;
    m.add_class::<batch::Batch>()?;
    m.add_class::<snapshot::Snapshot>()?;
    m.add_class::<transaction::Transaction>()?;
    m.add_class::<iter::Scan>()?;
    m.add_class::<head::Head>()?;
    m.add_class::<value::ValueReader>()?;
    m.add_function(wrap_pyfunction!(db::verify, m)?)?;
    m.add_class::<sparkey::LogWriter>()?;
    m.add_class::<sparkey::Reader>()?;
    m.add_class::<sparkey::HashIterator>()?;
    m.add_class::<sparkey::LogIterator>()?;
    m.add_function(wrap_pyfunction!(sparkey::write_index, m)?)?;
    m.add_function(wrap_pyfunction!(sparkey::verify, m)?)?;
    m.add_function(wrap_pyfunction!(sparkey::iter_log, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
