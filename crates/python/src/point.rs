//! Point reads of a keyspace (`Keyspace.get`, `ks[key]`, `key in ks`, `get_many`) and
//! when they release the GIL.
//!
//! Releasing the GIL around a call costs a hand-off: with several Python threads reading,
//! each call gives the GIL to a waiting thread and waits to get it back, which costs
//! more than a read that finds its key in memory (the memtable, the block cache or the
//! OS page cache: well under a microsecond). So a point read keeps the GIL and builds its
//! `bytes` straight from the value where the engine holds it (`get_with`), with no
//! intermediate buffer.
//!
//! A read that waits for the disk would hold every other Python thread up, so one read in
//! [`TIMED_EVERY`](crate::read_mode::TIMED_EVERY) made under the GIL is timed (reading the clock costs about as much as
//! the rest of the binding's work for a read): one that takes longer than [`SLOW`](crate::read_mode::SLOW) (a
//! block that was not in memory, a large separated value) makes the next
//! [`RELEASED_READS`](crate::read_mode::RELEASED_READS) point reads of that store release the GIL, after which reads under
//! the GIL are tried again. While the store's data is not in memory, at most
//! `TIMED_EVERY - 1` reads in a row wait for the disk under the GIL. Those
//! reads go through a per-thread buffer that is reused, so they allocate nothing for
//! values that fit it. `get_many` always releases the GIL, once for the whole list.
//!
//! Deadlock freedom (see `shared.rs`, invariant 3): a read under the GIL takes the store's
//! read lock and no other lock of this crate, and no thread ever waits for the GIL while
//! it holds that lock, so the read lock is always released without needing the GIL.

use std::cell::RefCell;

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList};

use crate::args::Bytes;
use crate::errors::{OrRaise, Res};
use crate::shared::Shared;

/// A per-thread buffer larger than this is dropped after use rather than kept.
const KEPT_BUFFER_LEN: usize = 1 << 20;

thread_local! {
    static BUFFER: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// Runs `held` with the GIL held when reads of the store are fast, else `released` with
/// the GIL released (see the module documentation).
fn read<T>(
    py: Python<'_>,
    shared: &Shared,
    slot: usize,
    held: impl FnOnce(&cairn::Keyspace) -> cairn::Result<T>,
    released: impl FnOnce(&cairn::Keyspace) -> cairn::Result<T> + Send,
) -> PyResult<T>
where
    T: Send,
{
    let mode = shared.read_mode();
    if mode.release_this() {
        return py
            .allow_threads(|| shared.read(|open| Ok(released(open.keyspace(slot)?)?)))
            .or_raise(py);
    }
    let started = mode.start();
    let result: Res<T> = shared.read(|open| Ok(held(open.keyspace(slot)?)?));
    mode.took(started);
    result.or_raise(py)
}

/// The value of `key` as `bytes`, if present.
pub(crate) fn get<'py>(
    py: Python<'py>,
    shared: &Shared,
    slot: usize,
    key: &[u8],
) -> PyResult<Option<Bound<'py, PyBytes>>> {
    let mode = shared.read_mode();
    if !mode.release_this() {
        let started = mode.start();
        let result = shared.read(|open| {
            Ok(open
                .keyspace(slot)?
                .get_with(key, |v| PyBytes::new(py, v))?)
        });
        mode.took(started);
        return result.or_raise(py);
    }
    BUFFER.with(|cell| {
        let mut own = Vec::new();
        let mut kept = cell.try_borrow_mut();
        let buf = match kept.as_deref_mut() {
            Ok(buf) => buf,
            Err(_) => &mut own,
        };
        let found = py
            .allow_threads(|| shared.read(|open| Ok(open.keyspace(slot)?.get_into(key, buf)?)))
            .or_raise(py)?;
        let value = found.then(|| PyBytes::new(py, buf));
        if buf.capacity() > KEPT_BUFFER_LEN {
            *buf = Vec::new();
        }
        Ok(value)
    })
}

/// True if `key` is present.
pub(crate) fn contains(py: Python<'_>, shared: &Shared, slot: usize, key: &[u8]) -> PyResult<bool> {
    read(
        py,
        shared,
        slot,
        |ks| ks.contains_key(key),
        |ks| ks.contains_key(key),
    )
}

/// The values of `keys` (None for an absent key), in order, read with the GIL released
/// once for the whole list.
pub(crate) fn get_many<'py>(
    py: Python<'py>,
    shared: &Shared,
    slot: usize,
    keys: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyList>> {
    let mut owned: Vec<Bytes> = Vec::new();
    for k in keys.try_iter()? {
        owned.push(k?.extract()?);
    }
    // The values are appended to one buffer (one allocation per call, not per value),
    // with each key's (start, length) in `spans`; the bytes objects are cut from it once
    // the GIL is back.
    let (buf, spans) = py
        .allow_threads(|| {
            shared.read(|open| {
                let ks = open.keyspace(slot)?;
                let mut buf: Vec<u8> = Vec::new();
                let mut spans: Vec<Option<(usize, usize)>> = Vec::with_capacity(owned.len());
                for key in &owned {
                    let span = ks.get_with(&**key, |v| {
                        let start = buf.len();
                        buf.extend_from_slice(v);
                        (start, v.len())
                    })?;
                    spans.push(span);
                }
                Ok((buf, spans))
            })
        })
        .or_raise(py)?;
    let list = PyList::empty(py);
    for span in spans {
        match span.and_then(|(start, len)| buf.get(start..start + len)) {
            Some(v) => list.append(PyBytes::new(py, v))?,
            None => list.append(py.None())?,
        }
    }
    Ok(list)
}
