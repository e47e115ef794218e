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
//!    briefly with the GIL held, or while refilling with the GIL released.

use std::collections::VecDeque;
use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyTuple};

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
    /// Keeps the snapshot a scan reads at registered while the scan lives.
    _snapshot: Option<cairn::Snapshot>,
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

/// An iterator over a keyspace scan, in key order (or reverse key order).
#[pyclass(frozen, module = "cairn", name = "Iterator")]
pub(crate) struct Scan {
    state: Arc<Slot<State>>,
    yields: Yield,
}

impl Scan {
    /// An iterator over `source`, registered with `shared` so closing the store drops it.
    pub(crate) fn new(
        shared: &Shared,
        source: Source,
        reverse: bool,
        yields: Yield,
        snapshot: Option<cairn::Snapshot>,
    ) -> Scan {
        let state = Arc::new(Slot::new(Some(State {
            source,
            reverse,
            buf: VecDeque::new(),
            chunk: FIRST_CHUNK,
            done: false,
            pending: None,
            _snapshot: snapshot,
        })));
        let weak: std::sync::Weak<dyn Release> = Arc::downgrade(&state) as _;
        shared.register(weak);
        Scan { state, yields }
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

    /// Drops the scan now (its resources are freed); later calls raise `ClosedError`.
    fn close(&self) {
        self.state.release();
    }
}
