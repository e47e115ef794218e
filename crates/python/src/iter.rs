//! `cairn.Iterator`: a scan of one keyspace, forward or reverse, at one point in time.
//!
//! Invariants:
//! 1. A scan reads at the seqno of its start (or of its snapshot) for its whole life:
//!    writes made meanwhile are not seen, and it never blocks writers.
//! 2. Items are fetched in chunks (16, doubling up to 512) with the GIL released, then
//!    handed out one by one with it held: the cost of releasing the GIL is paid once per
//!    chunk, and a scan stopped early reads at most one chunk ahead.
//! 3. An iterator registers its engine scan with its store: once the store is closed, the
//!    scan is dropped and the next call raises `cairn.ClosedError` (items already fetched
//!    are dropped too). An error of the scan is raised after the items before it.
//! 4. An iterator may be shared between threads: its state is behind a mutex, taken only
//!    briefly with the GIL held, or while refilling with the GIL released. `seek` takes the
//!    store's lock before the iterator's, the order `close()` takes them in.
//! 5. `seek(key)` starts a new scan over the iterator's original range narrowed to begin at
//!    `key` (forward) or end at it (reverse). A scan through a snapshot reads at that
//!    snapshot again; any other scan reads the store as it is at the seek.

use std::collections::VecDeque;
use std::ops::Bound as KeyBound;
use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyTuple};

use crate::args::Bytes;
use crate::errors::{closed, Fail, OrRaise, Res};
use crate::head::Head;
use crate::shared::{Release, Shared, Slot};

const FIRST_CHUNK: usize = 16;
const MAX_CHUNK: usize = 512;

/// Where the items come from.
pub(crate) enum Source {
    /// Keys and values.
    Pairs(cairn::Iter),
    /// Keys and heads (values never read).
    Heads(cairn::HeadIter),
}

/// What the iterator yields.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Yield {
    /// `(key, value)` tuples.
    Items,
    /// Keys.
    Keys,
    /// Values.
    Values,
    /// `(key, Head)` tuples.
    Heads,
}

enum Item {
    Pair(Vec<u8>, Vec<u8>),
    Head(Vec<u8>, cairn::Head),
}

struct State {
    source: Source,
    reverse: bool,
    buf: VecDeque<Item>,
    chunk: usize,
    done: bool,
    pending: Option<cairn::Error>,
    /// The snapshot the scan reads at, if any (kept registered while the scan lives).
    snapshot: Option<cairn::Snapshot>,
}

impl State {
    fn step(&mut self) -> Option<cairn::Result<Item>> {
        match &mut self.source {
            Source::Pairs(it) => {
                let next = if self.reverse {
                    it.next_back()
                } else {
                    it.next()
                };
                next.map(|r| r.map(|(k, v)| Item::Pair(k, v)))
            }
            Source::Heads(it) => {
                let next = if self.reverse {
                    it.next_back()
                } else {
                    it.next()
                };
                next.map(|r| r.map(|(k, h)| Item::Head(k, h)))
            }
        }
    }

    fn refill(&mut self) {
        for _ in 0..self.chunk {
            match self.step() {
                Some(Ok(item)) => self.buf.push_back(item),
                Some(Err(e)) => {
                    self.pending = Some(e);
                    self.done = true;
                    break;
                }
                None => {
                    self.done = true;
                    break;
                }
            }
        }
        self.chunk = (self.chunk * 2).min(MAX_CHUNK);
    }
}

/// A key range: lower and upper bound.
pub(crate) type Range = (KeyBound<Vec<u8>>, KeyBound<Vec<u8>>);

/// The range of the keys starting with `prefix`.
pub(crate) fn prefix_range(prefix: &[u8]) -> Range {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < u8::MAX {
            end.push(last + 1);
            return (KeyBound::Included(prefix.to_vec()), KeyBound::Excluded(end));
        }
    }
    (KeyBound::Included(prefix.to_vec()), KeyBound::Unbounded)
}

/// `lo` raised to at least `key`.
fn raise(lo: &KeyBound<Vec<u8>>, key: &[u8]) -> KeyBound<Vec<u8>> {
    match lo {
        KeyBound::Included(l) | KeyBound::Excluded(l) if key <= l.as_slice() => lo.clone(),
        _ => KeyBound::Included(key.to_vec()),
    }
}

/// `hi` lowered to at most `key` (included).
fn lower(hi: &KeyBound<Vec<u8>>, key: &[u8]) -> KeyBound<Vec<u8>> {
    match hi {
        KeyBound::Included(h) if key >= h.as_slice() => hi.clone(),
        KeyBound::Excluded(h) if key >= h.as_slice() => hi.clone(),
        _ => KeyBound::Included(key.to_vec()),
    }
}

/// Opens the engine scan of keyspace `slot` over `range`, at `snapshot` if given.
fn open_source(
    shared: &Shared,
    slot: usize,
    snapshot: Option<&cairn::Snapshot>,
    range: Range,
    yields: Yield,
) -> Res<Source> {
    shared.read(|open| source_in(open, slot, snapshot, range, yields))
}

fn source_in(
    open: &crate::shared::Open,
    slot: usize,
    snapshot: Option<&cairn::Snapshot>,
    range: Range,
    yields: Yield,
) -> Res<Source> {
    use cairn::Readable;
    let ks = open.keyspace(slot)?;
    let heads = matches!(yields, Yield::Keys | Yield::Heads);
    Ok(match (snapshot, heads) {
        (None, true) => Source::Heads(ks.range_heads(range)),
        (None, false) => Source::Pairs(ks.range(range)),
        (Some(s), true) => Source::Heads(s.range_heads(ks, range)),
        (Some(s), false) => Source::Pairs(s.range(ks, range)),
    })
}

/// An iterator over a keyspace scan, in key order (or reverse key order).
#[pyclass(frozen, module = "cairn", name = "Iterator")]
pub(crate) struct Scan {
    state: Arc<Slot<State>>,
    yields: Yield,
    shared: Arc<Shared>,
    slot: usize,
    range: Range,
    reverse: bool,
}

impl Scan {
    /// A scan of keyspace `slot` of `shared` over `range` (at `snapshot` if given),
    /// registered with the store so closing it drops the scan.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn open(
        py: Python<'_>,
        shared: &Arc<Shared>,
        slot: usize,
        snapshot: Option<cairn::Snapshot>,
        range: Range,
        reverse: bool,
        yields: Yield,
    ) -> PyResult<Scan> {
        let r = range.clone();
        let source = py
            .allow_threads(|| open_source(shared, slot, snapshot.as_ref(), r, yields))
            .or_raise(py)?;
        let state = Arc::new(Slot::new(Some(State {
            source,
            reverse,
            buf: VecDeque::new(),
            chunk: FIRST_CHUNK,
            done: false,
            pending: None,
            snapshot,
        })));
        let weak: std::sync::Weak<dyn Release> = Arc::downgrade(&state) as _;
        shared.register(weak);
        Ok(Scan {
            state,
            yields,
            shared: Arc::clone(shared),
            slot,
            range,
            reverse,
        })
    }

    fn convert(&self, py: Python<'_>, item: Item) -> PyResult<PyObject> {
        Ok(match (self.yields, item) {
            (Yield::Keys, Item::Pair(k, _)) | (Yield::Keys, Item::Head(k, _)) => {
                PyBytes::new(py, &k).into_any().unbind()
            }
            (Yield::Values, Item::Pair(_, v)) => PyBytes::new(py, &v).into_any().unbind(),
            (Yield::Heads, Item::Head(k, h)) => {
                let head = Bound::new(py, Head::from(h))?;
                PyTuple::new(py, [PyBytes::new(py, &k).into_any(), head.into_any()])?
                    .into_any()
                    .unbind()
            }
            (_, Item::Pair(k, v)) => {
                PyTuple::new(py, [PyBytes::new(py, &k), PyBytes::new(py, &v)])?
                    .into_any()
                    .unbind()
            }
            (_, Item::Head(k, _)) => PyBytes::new(py, &k).into_any().unbind(),
        })
    }
}

fn refill(state: &Slot<State>) -> Res<()> {
    let mut guard = state.lock();
    let st = guard.as_mut().ok_or(Fail::Closed("the iterator"))?;
    st.refill();
    Ok(())
}

#[pymethods]
impl Scan {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__(&self, py: Python<'_>) -> PyResult<Option<PyObject>> {
        loop {
            {
                let mut guard = self.state.lock();
                let Some(st) = guard.as_mut() else {
                    return Err(closed(py, "the iterator"));
                };
                if let Some(item) = st.buf.pop_front() {
                    drop(guard);
                    return self.convert(py, item).map(Some);
                }
                if let Some(e) = st.pending.take() {
                    drop(guard);
                    return Err(crate::errors::engine_error(py, e));
                }
                if st.done {
                    return Ok(None);
                }
            }
            let state = &self.state;
            py.allow_threads(|| refill(state)).or_raise(py)?;
        }
    }

    /// Moves the iterator to the first key at or after `key` (forward) or the last key at or
    /// before it (reverse), within its original range; items fetched ahead are dropped.
    /// A scan through a snapshot stays at it; any other scan reads the store's current
    /// state from here on.
    fn seek(&self, py: Python<'_>, key: Bytes) -> PyResult<()> {
        let range = if self.reverse {
            (self.range.0.clone(), lower(&self.range.1, &key))
        } else {
            (raise(&self.range.0, &key), self.range.1.clone())
        };
        let (state, slot, yields) = (&self.state, self.slot, self.yields);
        py.allow_threads(|| {
            self.shared.read(|open| {
                let mut guard = state.lock();
                let st = guard.as_mut().ok_or(Fail::Closed("the iterator"))?;
                st.source = source_in(open, slot, st.snapshot.as_ref(), range, yields)?;
                st.buf.clear();
                st.pending = None;
                st.done = false;
                st.chunk = FIRST_CHUNK;
                Ok(())
            })
        })
        .or_raise(py)
    }

    /// Drops the scan now (its resources are freed); later calls raise `ClosedError`.
    fn close(&self) {
        self.state.release();
    }
}
