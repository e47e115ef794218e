//! Point reads of a keyspace (`Keyspace.get`, `ks[key]`, `key in ks`, `get_many`), plain
//! puts (`ks[key] = value`, `Keyspace.insert` without attributes) and removals (`del
//! ks[key]`, `Keyspace.remove`), and when they release the GIL.
//!
//! Releasing the GIL around a call costs a hand-off: with several Python threads reading,
//! each call gives the GIL to a waiting thread and waits to get it back, which costs
//! more than a read that finds its key in memory (the memtable or the block cache: well
//! under a microsecond). So a point read first asks the engine for an answer from memory
//! only (`cairn::Keyspace::get_with_in_memory`, which never touches a file) with the GIL
//! held, building its `bytes` straight from the value where the engine holds it. Only if
//! the engine says the answer needs I/O (a table not open yet, a block not in the block
//! cache, a separated value, a merge) is the GIL released, for the full read. So no read
//! waits for the disk while holding the GIL, and a read from memory never hands it over.
//!
//! A put (or a removal) likewise first asks the engine to write without waiting
//! (`cairn::Keyspace::try_insert_with`, `try_remove_with`: no fsync, no other writer to
//! wait for, no memtable switch or stall, no value-log write) with the GIL held; it then
//! costs a memtable insert and, as its durability asks, a copy of the log record into the
//! OS's page cache. Where the engine declines, having written nothing, the write is made
//! with the GIL released. So threads that write from Python pay no hand-off per write
//! (with 4 threads on 2 cores the hand-offs made puts 2.4 times slower), and no write
//! waits for the disk or for a stall while holding the GIL.
//!
//! The full reads go through a per-thread buffer that is reused, so they allocate nothing
//! for values that fit it. `get_many` reads every key it can from memory under the GIL,
//! then the rest with the GIL released once.
//!
//! Deadlock freedom (see `shared.rs`, invariant 3): a read or put under the GIL takes the
//! store's read lock and the engine's own locks (a put only those it can take without
//! waiting, or the write queue's for a few instructions), none of which is ever held by
//! a thread waiting for the GIL, so they are always released without needing the GIL.

use std::cell::RefCell;

use cairn::InMemory;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList};

use crate::errors::OrRaise;
use crate::shared::Shared;

/// A per-thread buffer larger than this is dropped after use rather than kept.
const KEPT_BUFFER_LEN: usize = 1 << 20;

thread_local! {
    static BUFFER: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// The value of `key` as `bytes`, if present.
pub(crate) fn get<'py>(
    py: Python<'py>,
    shared: &Shared,
    slot: usize,
    key: &[u8],
) -> PyResult<Option<Bound<'py, PyBytes>>> {
    let in_memory = shared
        .read(|open| {
            Ok(open
                .keyspace(slot)?
                .get_with_in_memory(key, |v| PyBytes::new(py, v))?)
        })
        .or_raise(py)?;
    if let InMemory::Answer(found) = in_memory {
        return Ok(found);
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

/// Stores `value` under `key` with `durability` (`None`: the store's default): with the
/// GIL held if the engine writes it without waiting, else with the GIL released.
pub(crate) fn insert(
    py: Python<'_>,
    shared: &Shared,
    slot: usize,
    key: &[u8],
    value: &[u8],
    durability: Option<cairn::Durability>,
) -> PyResult<()> {
    write(
        py,
        shared,
        slot,
        |ks| ks.try_insert_with(key, value, durability),
        |ks| ks.insert_with(key, value, durability),
    )
}

/// Removes `key` with `durability` (`None`: the store's default), with the GIL held if the
/// engine writes the removal without waiting, else with the GIL released.
pub(crate) fn remove(
    py: Python<'_>,
    shared: &Shared,
    slot: usize,
    key: &[u8],
    durability: Option<cairn::Durability>,
) -> PyResult<()> {
    write(
        py,
        shared,
        slot,
        |ks| ks.try_remove_with(key, durability),
        |ks| ks.remove_with(key, durability),
    )
}

/// A write of keyspace `slot`: `attempt` with the GIL held, and if the engine declines it
/// (having written nothing), `wait` with the GIL released.
fn write(
    py: Python<'_>,
    shared: &Shared,
    slot: usize,
    attempt: impl FnOnce(&cairn::Keyspace) -> cairn::Result<bool>,
    wait: impl FnOnce(&cairn::Keyspace) -> cairn::Result<()> + Send,
) -> PyResult<()> {
    let written = shared
        .read(|open| Ok(attempt(open.keyspace(slot)?)?))
        .or_raise(py)?;
    if written {
        return Ok(());
    }
    py.allow_threads(|| shared.read(|open| Ok(wait(open.keyspace(slot)?)?)))
        .or_raise(py)
}

/// True if `key` is present.
pub(crate) fn contains(py: Python<'_>, shared: &Shared, slot: usize, key: &[u8]) -> PyResult<bool> {
    let in_memory = shared
        .read(|open| Ok(open.keyspace(slot)?.contains_key_in_memory(key)?))
        .or_raise(py)?;
    if let InMemory::Answer(present) = in_memory {
        return Ok(present);
    }
    py.allow_threads(|| shared.read(|open| Ok(open.keyspace(slot)?.contains_key(key)?)))
        .or_raise(py)
}

/// The values of `keys` (None for an absent key), in order: those found in memory with
/// the GIL held, the rest with the GIL released once for all of them.
pub(crate) fn get_many<'py>(
    py: Python<'py>,
    shared: &Shared,
    slot: usize,
    keys: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyList>> {
    let owned = crate::args::bytes_list(keys)?;
    // In order: the answer from memory, or `None` where the key needs a full read.
    let mut found: Vec<Option<Option<Bound<'py, PyBytes>>>> = Vec::with_capacity(owned.len());
    let mut rest: Vec<usize> = Vec::new();
    shared
        .read(|open| {
            let ks = open.keyspace(slot)?;
            for (i, key) in owned.iter().enumerate() {
                match ks.get_with_in_memory(&**key, |v| PyBytes::new(py, v))? {
                    InMemory::Answer(v) => found.push(Some(v)),
                    InMemory::NeedsIo => {
                        found.push(None);
                        rest.push(i);
                    }
                }
            }
            Ok(())
        })
        .or_raise(py)?;
    if !rest.is_empty() {
        // The values are appended to one buffer (one allocation per call, not per value),
        // with each key's (start, length) in `spans`; the bytes objects are cut from it
        // once the GIL is back.
        let (buf, spans) = py
            .allow_threads(|| {
                shared.read(|open| {
                    let ks = open.keyspace(slot)?;
                    let mut buf: Vec<u8> = Vec::new();
                    let mut spans: Vec<Option<(usize, usize)>> = Vec::with_capacity(rest.len());
                    for &i in &rest {
                        let Some(key) = owned.get(i) else {
                            spans.push(None);
                            continue;
                        };
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
        for (&i, span) in rest.iter().zip(spans) {
            let value = span
                .and_then(|(start, len)| buf.get(start..start + len))
                .map(|v| PyBytes::new(py, v));
            if let Some(slot) = found.get_mut(i) {
                *slot = Some(value);
            }
        }
    }
    let list = PyList::empty(py);
    for value in found {
        match value.flatten() {
            Some(v) => list.append(v)?,
            None => list.append(py.None())?,
        }
    }
    Ok(list)
}

/// `values` as a Python list of `bytes` (`None` for an absent key).
pub(crate) fn values_list<'py>(
    py: Python<'py>,
    values: Vec<Option<Vec<u8>>>,
) -> PyResult<Bound<'py, PyList>> {
    let list = PyList::empty(py);
    for value in values {
        match value {
            Some(v) => list.append(PyBytes::new(py, &v))?,
            None => list.append(py.None())?,
        }
    }
    Ok(list)
}
