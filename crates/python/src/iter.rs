//! `cairn.Iterator`: a scan of one keyspace, forward or reverse, at one point in time.
//!
//! Invariants:
//! 1. A scan reads at the seqno of its start (or of its snapshot) for its whole life:
//!    writes made meanwhile are not seen, and it never blocks writers.
//! 2. Items are fetched in chunks (16, doubling up to 512) with the GIL released, then
//!    handed out one by one with it held: the cost of releasing the GIL is paid once per
//!    chunk, and a scan stopped early reads at most one chunk ahead. Pairs come from the
//!    engine's borrowing cursor (`cairn::ScanCursor`) and are copied back to back into one
//!    buffer reused from chunk to chunk, and from there into Python `bytes`: nothing is
//!    allocated per pair but the Python objects.
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
    /// Keys and values, lent by the cursor.
    Pairs(Box<cairn::ScanCursor>),
    /// Keys and heads (values never read).
    Heads(Box<cairn::HeadIter>),
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

/// A pair's key and value as Python `bytes`, each `None` where not asked for.
type PyPair<'py> = (Option<Bound<'py, PyBytes>>, Option<Bound<'py, PyBytes>>);

/// A fetched pair, in [`State::bytes`]: its key at `at`, its value right after.
struct Pair {
    at: usize,
    key_len: usize,
    value_len: usize,
}

struct State {
    source: Source,
    reverse: bool,
    /// The keys and values of the fetched pairs, back to back.
    bytes: Vec<u8>,
    /// Pairs fetched and not handed out yet.
    pairs: VecDeque<Pair>,
    /// Heads fetched and not handed out yet.
    heads: VecDeque<(Vec<u8>, cairn::Head)>,
    chunk: usize,
    done: bool,
    pending: Option<cairn::Error>,
    /// The snapshot the scan reads at, if any (kept registered while the scan lives).
    snapshot: Option<cairn::Snapshot>,
}

impl State {
    /// Fetches the next item into `pairs` or `heads`: false at the end.
    fn step(&mut self) -> cairn::Result<bool> {
        match &mut self.source {
            Source::Pairs(cursor) => {
                let Some((k, v)) = cursor.next()? else {
                    return Ok(false);
                };
                let at = self.bytes.len();
                self.bytes.extend_from_slice(k);
                self.bytes.extend_from_slice(v);
                self.pairs.push_back(Pair {
                    at,
                    key_len: k.len(),
                    value_len: v.len(),
                });
                Ok(true)
            }
            Source::Heads(it) => {
                let next = if self.reverse {
                    it.next_back()
                } else {
                    it.next()
                };
                match next {
                    Some(head) => {
                        self.heads.push_back(head?);
                        Ok(true)
                    }
                    None => Ok(false),
                }
            }
        }
    }

    fn refill(&mut self) {
        if self.pairs.is_empty() {
            self.bytes.clear();
        }
        for _ in 0..self.chunk {
            match self.step() {
                Ok(true) => {}
                Ok(false) => {
                    self.done = true;
                    break;
                }
                Err(e) => {
                    self.pending = Some(e);
                    self.done = true;
                    break;
                }
            }
        }
        self.chunk = (self.chunk * 2).min(MAX_CHUNK);
    }

    /// Drops what was fetched ahead.
    fn clear(&mut self) {
        self.bytes.clear();
        self.pairs.clear();
        self.heads.clear();
    }

    /// The next fetched pair's key and value as Python `bytes` (one of them, for
    /// `Yield::Keys`/`Yield::Values`). Making `bytes` runs no Python code, so it is done
    /// with the state locked (a tuple, which may start a garbage collection, is made
    /// after the lock is let go).
    fn pop_pair<'py>(&mut self, py: Python<'py>, yields: Yield) -> Option<PyPair<'py>> {
        let p = self.pairs.pop_front()?;
        let key_end = p.at + p.key_len;
        let key = self.bytes.get(p.at..key_end).unwrap_or_default();
        let value = self
            .bytes
            .get(key_end..key_end + p.value_len)
            .unwrap_or_default();
        let key = (yields != Yield::Values).then(|| PyBytes::new(py, key));
        let value = (yields != Yield::Keys).then(|| PyBytes::new(py, value));
        Some((key, value))
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

/// Opens the engine scan of keyspace `slot` over `range`, at `snapshot` if given,
/// descending if `reverse`.
fn open_source(
    shared: &Shared,
    slot: usize,
    snapshot: Option<&cairn::Snapshot>,
    range: Range,
    reverse: bool,
    yields: Yield,
) -> Res<Source> {
    shared.read(|open| source_in(open, slot, snapshot, range, reverse, yields))
}

fn source_in(
    open: &crate::shared::Open,
    slot: usize,
    snapshot: Option<&cairn::Snapshot>,
    range: Range,
    reverse: bool,
    yields: Yield,
) -> Res<Source> {
    use cairn::Readable;
    let ks = open.keyspace(slot)?;
    let heads = matches!(yields, Yield::Keys | Yield::Heads);
    Ok(match (snapshot, heads) {
        (None, true) => Source::Heads(Box::new(ks.range_heads(range))),
        (None, false) if reverse => Source::Pairs(Box::new(ks.cursor_rev(range))),
        (None, false) => Source::Pairs(Box::new(ks.cursor(range))),
        (Some(s), true) => Source::Heads(Box::new(s.range_heads(ks, range))),
        (Some(s), false) if reverse => Source::Pairs(Box::new(s.cursor_rev(ks, range))),
        (Some(s), false) => Source::Pairs(Box::new(s.cursor(ks, range))),
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
            .allow_threads(|| open_source(shared, slot, snapshot.as_ref(), r, reverse, yields))
            .or_raise(py)?;
        let state = Arc::new(Slot::new(Some(State {
            source,
            reverse,
            bytes: Vec::new(),
            pairs: VecDeque::new(),
            heads: VecDeque::new(),
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

    /// What a fetched pair yields: a `(key, value)` tuple, or the one of them asked for.
    fn pair(
        py: Python<'_>,
        key: Option<Bound<'_, PyBytes>>,
        value: Option<Bound<'_, PyBytes>>,
    ) -> PyResult<PyObject> {
        Ok(match (key, value) {
            (Some(k), Some(v)) => PyTuple::new(py, [k, v])?.into_any().unbind(),
            (Some(one), None) | (None, Some(one)) => one.into_any().unbind(),
            (None, None) => py.None(),
        })
    }

    fn head(&self, py: Python<'_>, key: &[u8], head: cairn::Head) -> PyResult<PyObject> {
        let key = PyBytes::new(py, key);
        Ok(match self.yields {
            Yield::Heads => {
                let head = Bound::new(py, Head::from(head))?;
                PyTuple::new(py, [key.into_any(), head.into_any()])?
                    .into_any()
                    .unbind()
            }
            _ => key.into_any().unbind(),
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
                if let Some((key, value)) = st.pop_pair(py, self.yields) {
                    drop(guard);
                    return Self::pair(py, key, value).map(Some);
                }
                if let Some((key, head)) = st.heads.pop_front() {
                    drop(guard);
                    return self.head(py, &key, head).map(Some);
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
                st.source = source_in(open, slot, st.snapshot.as_ref(), range, st.reverse, yields)?;
                st.clear();
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
