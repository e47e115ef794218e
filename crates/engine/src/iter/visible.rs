//! [`Visible`]: what a reader sees — the newest version of each user key at a snapshot
//! seqno, tombstones hidden, within user-key bounds — walked in one direction over a
//! merged [`Cursor`] of internal keys.
//!
//! Invariants:
//! 1. For each user key, exactly the newest version with seqno `<= snapshot` decides: a
//!    put yields the key once, a tombstone hides it, and so does an entry whose expiry is
//!    at or before the scan's `now` (it is a tombstone at its seqno: older versions stay
//!    hidden). Versions above the snapshot are invisible whatever they are. Values are
//!    interpreted only through `entry::live`.
//! 2. Keys come strictly increasing (forward) or strictly decreasing (backward), all
//!    within the bounds.
//! 3. After an error (from a child cursor, or an undecodable key) every later call
//!    returns `Ok(None)` (`Ok(false)`): an iterator stops for good after one error.
//! 4. A version a range tombstone deletes at the snapshot (`rangedel.rs` invariant 2) is
//!    treated exactly like a point tombstone at that version, in scans and in counts.
//!    Expiry and range tombstones combine: the newest version hides the key if it is a
//!    tombstone, expired, or covered by a newer range tombstone.
//! 5. A key whose newest visible version is a merge operand yields the merged value
//!    (`operands.rs`): forward, the walk over its older versions merges them; backward,
//!    the versions met oldest first are kept from the last base on (a value, tombstone,
//!    expired or range-deleted version) and merged when the key is left.
//! 6. A step that finds a key leaves it in a reused buffer ([`Visible::key`]) and its
//!    deciding version where it lies ([`Visible::entry`]), valid until the next step:
//!    forward, the cursor stays on that version (its bytes are read in place, and its
//!    older versions are passed at the start of the next step); backward, the cursor has
//!    already moved to the key before, so the version's stored bytes are copied into a
//!    reused buffer; a merged value is held as built. Nothing is allocated per key but
//!    a merge. Owned items ([`Visible::next_forward`], for `Iter`) are built from the same
//!    step, so one place decides visibility.
//! 7. A version the cursor reports as the last of its key in the walk's direction
//!    ([`Cursor::only_version`]: from a table or a level whose writer recorded one entry
//!    per user key, also through a merge whose other sources do not hold the key next) is
//!    decided where it lies when it is the first version of its key the step meets, in
//!    both directions: its key is read from the cursor instead of being copied into
//!    `scratch`, no neighbour is compared with it, and a backward step leaves the cursor on
//!    it (like a forward step) instead of copying its value. The next step first moves the
//!    cursor one entry off it. Versions of the key met before it (newer ones above the
//!    snapshot, forward) were passed without deciding the key; backward, a key with
//!    versions already met is decided as before.

use std::ops::Bound;
use std::path::Path;

use crate::cursor::Cursor;
use crate::entry::{self, Body, EntryView};
use crate::error::{Error, FileKind, Reason, Result};
use crate::iter::operands::{merge_forward, Merged, Resolver};
use crate::key::{after_key, parse_encoded, seek_key, user_key_of, Kind, SeqNo};
use crate::merge::Chain;
use crate::rangedel::ReadTombstones;
use crate::vlog::{self, ValueHandle};

/// A key and its value, as yielded to users.
#[cfg(test)]
pub(crate) type Pair = (Vec<u8>, Vec<u8>);

/// User-key bounds of a scan.
#[derive(Debug, Clone)]
pub(crate) struct Bounds {
    pub(crate) lo: Bound<Vec<u8>>,
    pub(crate) hi: Bound<Vec<u8>>,
}

impl Bounds {
    /// True if `key` is not below the lower bound.
    fn above_lo(&self, key: &[u8]) -> bool {
        match &self.lo {
            Bound::Unbounded => true,
            Bound::Included(lo) => key >= lo.as_slice(),
            Bound::Excluded(lo) => key > lo.as_slice(),
        }
    }

    /// True if `key` is not above the upper bound.
    fn below_hi(&self, key: &[u8]) -> bool {
        match &self.hi {
            Bound::Unbounded => true,
            Bound::Included(hi) => key <= hi.as_slice(),
            Bound::Excluded(hi) => key < hi.as_slice(),
        }
    }

    /// The bounds of all keys starting with `prefix`.
    pub(crate) fn prefix(prefix: &[u8]) -> Bounds {
        let mut end = prefix.to_vec();
        while end.last() == Some(&0xff) {
            end.pop();
        }
        let hi = match end.last_mut() {
            Some(last) => {
                *last += 1;
                Bound::Excluded(end)
            }
            None => Bound::Unbounded,
        };
        Bounds {
            lo: Bound::Included(prefix.to_vec()),
            hi,
        }
    }
}

fn bad_key() -> Error {
    Error::corruption(
        FileKind::Table,
        Path::new("<merged read>"),
        0,
        Reason::BadEntry("internal key shorter than its trailer or of an unknown kind"),
    )
}

/// Decodes a cursor key into `(user key, seqno, kind)`.
fn parse(key: &[u8]) -> Result<(&[u8], SeqNo, Kind)> {
    let (user, seqno, tag) = parse_encoded(key).ok_or_else(bad_key)?;
    let kind = Kind::from_u8(tag).ok_or_else(bad_key)?;
    Ok((user, seqno, kind))
}

/// What a scan yields for each visible entry, built from the entry's seqno and view
/// without copying more than it needs (a value scan copies the value, a head scan only
/// the metadata), in two steps: [`Extract::extract`] from the version a step decided
/// ([`Visible::owned`]; no blob read: a separated value stays a handle), then [`Extract::resolve`] only for
/// the items actually returned to the caller (reading the blob of a separated value).
pub(crate) trait Extract: Sized {
    /// What the caller receives.
    type Out;
    /// The item for a live entry written at `seqno`.
    fn extract(seqno: SeqNo, view: &EntryView<'_>) -> Self;
    /// The item as returned, reading a separated value from `blobs`.
    ///
    /// # Errors
    /// The blob read's error (`Io`, `Corruption` of the blob file).
    fn resolve(self, blobs: &vlog::Reader) -> Result<Self::Out>;
}

/// A value as a scan or lookup found it: its bytes, or the handle of a separated value
/// not read yet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Lazy {
    /// The value bytes.
    Inline(Vec<u8>),
    /// A separated value, read on [`Extract::resolve`].
    Handle(ValueHandle),
}

impl Extract for Lazy {
    type Out = Vec<u8>;

    fn extract(_seqno: SeqNo, view: &EntryView<'_>) -> Lazy {
        match view.body {
            Body::Inline(v) => Lazy::Inline(v.to_vec()),
            Body::Handle(h) => Lazy::Handle(h),
        }
    }

    fn resolve(self, blobs: &vlog::Reader) -> Result<Vec<u8>> {
        match self {
            Lazy::Inline(v) => Ok(v),
            Lazy::Handle(h) => blobs.read(&h),
        }
    }
}

fn corrupt(reason: Reason) -> Error {
    Error::corruption(FileKind::Table, Path::new("<merged read>"), 0, reason)
}

/// True if the version `(kind, stored)` is live at `now_ms`: a value that is neither a
/// tombstone nor expired.
fn is_live(kind: Kind, stored: &[u8], now_ms: u64) -> Result<bool> {
    if kind == Kind::Put {
        // A plain put has no attributes: nothing to decode, nothing that expires.
        return Ok(true);
    }
    Ok(entry::live(kind, stored, now_ms)
        .map_err(corrupt)?
        .is_some())
}

/// Where the version that decided the current key lies (invariant 6).
enum Held {
    /// No key decided: before the first step, after the last, or after an error.
    Nothing,
    /// At the cursor, which stands on it (a forward step); the next forward step first
    /// passes its older versions.
    AtCursor { seqno: SeqNo, kind: Kind },
    /// At the cursor, which stands on it, the only version of its key (invariant 7); the
    /// key is the cursor's, not in `scratch`. The next step moves one entry off it.
    Only { seqno: SeqNo, kind: Kind },
    /// Copied into `held` (a backward step, whose cursor has moved past it).
    Copied { seqno: SeqNo, kind: Kind },
    /// Built by merging operands.
    Merged(Merged),
}

/// One direction of a user-facing scan; see the module documentation.
pub(crate) struct Visible {
    cursor: Box<dyn Cursor>,
    snapshot: SeqNo,
    /// Entries with `expires_at <= now_ms` are tombstones for this scan.
    now_ms: u64,
    bounds: Bounds,
    started: bool,
    done: bool,
    /// A reused buffer for the user key being decided; after a step that found a key, that
    /// key (invariant 6).
    scratch: Vec<u8>,
    /// Where the current key's deciding version lies.
    current: Held,
    /// A reused buffer for the stored bytes of a version a backward step keeps.
    held: Vec<u8>,
    /// Range tombstones applied on top of the versions (invariant 4).
    range_dels: ReadTombstones,
    /// Merges operands (invariant 5); `None`: an operand is an error.
    merge: Option<Resolver>,
}

/// What a reverse scan has seen of the key it is on, oldest version first (invariant 5).
#[derive(Default)]
struct Backward {
    /// The operands above the base, newest first.
    chain: Chain,
    /// The newest operand's seqno.
    newest: Option<SeqNo>,
    /// The kind of the live version under the operands, whose stored bytes are in
    /// `Visible::held`; `None` for a tombstone, an expired or range-deleted version, or
    /// nothing.
    base: Option<(SeqNo, Kind)>,
}

impl Visible {
    /// A scan of `cursor` at `snapshot` within `bounds`, with expiry judged at `now_ms`;
    /// nothing is read until the first call.
    pub(crate) fn new(
        cursor: Box<dyn Cursor>,
        snapshot: SeqNo,
        now_ms: u64,
        bounds: Bounds,
    ) -> Visible {
        Visible {
            cursor,
            snapshot,
            now_ms,
            bounds,
            started: false,
            done: false,
            scratch: Vec::new(),
            current: Held::Nothing,
            held: Vec::new(),
            range_dels: ReadTombstones::default(),
            merge: None,
        }
    }

    /// Merges operands with `resolver` (invariant 5).
    pub(crate) fn with_merge(mut self, resolver: Resolver) -> Visible {
        self.merge = Some(resolver);
        self
    }

    fn resolver(&self) -> Result<&Resolver> {
        self.merge
            .as_ref()
            .ok_or_else(|| crate::merge::missing("<unknown>"))
    }

    /// Applies `range_dels` too (invariant 4).
    pub(crate) fn with_range_tombstones(mut self, range_dels: ReadTombstones) -> Visible {
        self.range_dels = range_dels;
        self
    }

    /// True if the version `(user, seqno, kind, stored)` shows its key: it is not a
    /// tombstone, not expired at `now_ms` (invariant 1), and no range tombstone deletes it
    /// at the snapshot (invariant 4).
    fn shows(&self, user: &[u8], seqno: SeqNo, kind: Kind, stored: &[u8]) -> Result<bool> {
        if self.range_dels.deletes(user, seqno, self.snapshot) {
            return Ok(false);
        }
        is_live(kind, stored, self.now_ms)
    }

    /// Moves to the next key in ascending order: true if there is one, which
    /// [`Visible::key`] and [`Visible::entry`] then show (invariant 6).
    pub(crate) fn advance_forward(&mut self) -> Result<bool> {
        self.advance(true)
    }

    /// Moves to the next key in descending order, as [`Visible::advance_forward`].
    pub(crate) fn advance_backward(&mut self) -> Result<bool> {
        self.advance(false)
    }

    fn advance(&mut self, forward: bool) -> Result<bool> {
        if self.done {
            return Ok(false);
        }
        let out = if forward {
            self.step_forward()
        } else {
            self.step_backward()
        };
        if !matches!(out, Ok(true)) {
            self.done = true;
            self.current = Held::Nothing;
        }
        out
    }

    /// The key the last successful step found (empty before one).
    pub(crate) fn key(&self) -> &[u8] {
        match self.current {
            Held::Only { .. } => user_key_of(self.cursor.key()),
            _ => &self.scratch,
        }
    }

    /// The version that decides the key the last successful step found: its seqno and
    /// view (for a merged key, the newest operand's seqno and the merged value).
    ///
    /// # Errors
    /// `InvalidArgument` if no step found a key (a caller's mistake); `Corruption` if the
    /// version's bytes no longer decode (they were decoded when the key was decided).
    pub(crate) fn entry(&self) -> Result<(SeqNo, EntryView<'_>)> {
        let (seqno, kind, stored) = match &self.current {
            Held::Nothing => return Err(Error::invalid("the scan is not on a key")),
            Held::Merged(m) => return Ok((m.seqno, m.view())),
            Held::AtCursor { seqno, kind } | Held::Only { seqno, kind } => {
                (*seqno, *kind, self.cursor.value())
            }
            Held::Copied { seqno, kind } => (*seqno, *kind, self.held.as_slice()),
        };
        match entry::view(kind, stored).map_err(corrupt)? {
            Some(view) => Ok((seqno, view)),
            None => Err(corrupt(Reason::BadEntry(
                "a version decided live reads as a tombstone",
            ))),
        }
    }

    /// The value of the key the last successful step found when its deciding version is
    /// a plain put (`Kind::Put`: the stored bytes are the value); `None` for any other
    /// version, which [`Visible::entry`] decodes. A scan's common case, without building
    /// an [`EntryView`].
    pub(crate) fn plain_value(&self) -> Option<&[u8]> {
        match &self.current {
            Held::AtCursor {
                kind: Kind::Put, ..
            }
            | Held::Only {
                kind: Kind::Put, ..
            } => Some(self.cursor.value()),
            Held::Copied {
                kind: Kind::Put, ..
            } => Some(self.held.as_slice()),
            _ => None,
        }
    }

    /// The key and value the last successful step found when its deciding version is a
    /// plain put, as [`Visible::key`] and [`Visible::plain_value`] give them (for a
    /// version read where it lies, with one call into the cursor); `None` otherwise.
    pub(crate) fn plain_pair(&self) -> Option<(&[u8], &[u8])> {
        match &self.current {
            Held::Only {
                kind: Kind::Put, ..
            } => self
                .cursor
                .current()
                .map(|(key, value)| (user_key_of(key), value)),
            _ => Some((self.key(), self.plain_value()?)),
        }
    }

    /// The next pair in ascending order, its item built by `T` (owned copies).
    #[cfg(test)]
    pub(crate) fn next_forward<T: Extract>(&mut self) -> Result<Option<(Vec<u8>, T)>> {
        if !self.advance_forward()? {
            return Ok(None);
        }
        self.owned().map(Some)
    }

    /// The next pair in descending order, its item built by `T` (owned copies).
    #[cfg(test)]
    pub(crate) fn next_backward<T: Extract>(&mut self) -> Result<Option<(Vec<u8>, T)>> {
        if !self.advance_backward()? {
            return Ok(None);
        }
        self.owned().map(Some)
    }

    /// The current key and its item built by `T` (owned copies).
    ///
    /// # Errors
    /// As [`Visible::entry`].
    pub(crate) fn owned<T: Extract>(&self) -> Result<(Vec<u8>, T)> {
        let (seqno, view) = self.entry()?;
        Ok((self.key().to_vec(), T::extract(seqno, &view)))
    }

    /// Moves the cursor past the remaining (older) versions of `user`.
    fn skip_versions(cursor: &mut dyn Cursor, user: &[u8]) -> Result<()> {
        loop {
            cursor.next()?;
            match cursor.current() {
                Some((key, _)) if parse(key)?.0 == user => {}
                _ => return Ok(()),
            }
        }
    }

    /// Positions the cursor at the lower bound, once.
    #[inline]
    fn start_forward(&mut self) -> Result<()> {
        if self.started {
            return Ok(());
        }
        self.seek_lower_bound()
    }

    /// The first step's seek to the lower bound.
    #[cold]
    fn seek_lower_bound(&mut self) -> Result<()> {
        self.started = true;
        match &self.bounds.lo {
            Bound::Unbounded => self.cursor.seek_to_first(),
            Bound::Included(k) => self.cursor.seek(&seek_key(k, SeqNo::MAX)),
            Bound::Excluded(k) => self.cursor.seek(&after_key(k)),
        }
    }

    /// The number of keys a forward scan would yield (from where it stands), found in one
    /// pass over the internal keys without copying any value; the scan is finished after.
    /// Each entry is looked at once: versions above the snapshot are skipped, the first
    /// version at or below it decides its user key, older ones are passed over.
    pub(crate) fn count_forward(&mut self) -> Result<u64> {
        if self.done {
            return Ok(0);
        }
        self.done = true;
        self.start_forward()?;
        let mut count = 0u64;
        // `scratch` holds the last user key decided; `decided` says whether there is one.
        let mut decided = match std::mem::replace(&mut self.current, Held::Nothing) {
            Held::AtCursor { .. } => true,
            Held::Only { .. } => {
                self.cursor.next()?;
                false
            }
            _ => false,
        };
        while let Some((key, stored)) = self.cursor.current() {
            let (user, seqno, kind) = parse(key)?;
            if seqno <= self.snapshot && !(decided && self.scratch.as_slice() == user) {
                if !self.bounds.below_hi(user) {
                    break;
                }
                let live = match kind {
                    Kind::Put | Kind::Merge => true,
                    _ => is_live(kind, stored, self.now_ms)?,
                };
                if live && !self.range_dels.deletes(user, seqno, self.snapshot) {
                    count += 1;
                }
                // The only version of its key needs no comparison with the next entry
                // (invariant 7).
                decided = !self.cursor.only_version();
                if decided {
                    self.scratch.clear();
                    self.scratch.extend_from_slice(user);
                }
            }
            self.cursor.next()?;
        }
        Ok(count)
    }

    fn step_forward(&mut self) -> Result<bool> {
        self.start_forward()?;
        // The cursor still stands on the version that decided the previous key.
        match std::mem::replace(&mut self.current, Held::Nothing) {
            Held::AtCursor { .. } => Self::skip_versions(self.cursor.as_mut(), &self.scratch)?,
            Held::Only { .. } => self.cursor.next()?,
            _ => {}
        }
        while let Some((key, stored)) = self.cursor.current() {
            let (user, seqno, kind) = parse(key)?;
            if seqno > self.snapshot {
                self.cursor.next()?;
                continue;
            }
            if !self.bounds.below_hi(user) {
                return Ok(false);
            }
            if kind != Kind::Merge && self.cursor.only_version() {
                // Decided where it lies (invariant 7).
                if self.shows(user, seqno, kind, stored)? {
                    self.current = Held::Only { seqno, kind };
                    return Ok(true);
                }
                self.cursor.next()?;
                continue;
            }
            // The newest visible version decides: an item, or a tombstone (or expired
            // entry, or a version a range tombstone covers) that hides the key.
            self.scratch.clear();
            self.scratch.extend_from_slice(user);
            if kind == Kind::Merge && !self.range_dels.deletes(user, seqno, self.snapshot) {
                let resolver = self.resolver()?.clone();
                let merged = merge_forward(
                    self.cursor.as_mut(),
                    &self.scratch,
                    self.snapshot,
                    self.now_ms,
                    &self.range_dels,
                    &resolver,
                )?;
                self.current = Held::Merged(merged);
                return Ok(true);
            }
            if self.shows(&self.scratch, seqno, kind, stored)? {
                // Left on this version: its value is read in place (invariant 6).
                self.current = Held::AtCursor { seqno, kind };
                return Ok(true);
            }
            Self::skip_versions(self.cursor.as_mut(), &self.scratch)?;
        }
        Ok(false)
    }

    fn step_backward(&mut self) -> Result<bool> {
        if matches!(
            std::mem::replace(&mut self.current, Held::Nothing),
            Held::Only { .. }
        ) {
            // The cursor still stands on the key found last (invariant 7).
            self.cursor.prev()?;
        }
        if !self.started {
            self.started = true;
            match &self.bounds.hi {
                Bound::Unbounded => self.cursor.seek_to_last()?,
                Bound::Included(k) => self.cursor.seek_for_prev(&after_key(k))?,
                Bound::Excluded(k) => self.cursor.seek_for_prev(&seek_key(k, SeqNo::MAX))?,
            }
        }
        // Versions of one user key arrive oldest first; the last visible one decides.
        // `scratch` holds the candidate's user key (`seen`: there is one). A live
        // candidate's stored bytes are copied to `held` (`ops.base`); operands above it
        // collect in `ops` (invariant 5).
        let mut seen = false;
        let mut ops = Backward::default();
        while let Some((key, stored)) = self.cursor.current() {
            let (user, seqno, kind) = parse(key)?;
            if seen && self.scratch.as_slice() != user {
                let held = self.settle(&mut ops)?;
                if !matches!(held, Held::Nothing) {
                    self.current = held;
                    return Ok(true);
                }
                seen = false;
            }
            if !self.bounds.above_lo(user) {
                break;
            }
            if !seen && kind != Kind::Merge && self.cursor.only_version() {
                // Decided where it lies, the cursor left on it (invariant 7).
                if seqno <= self.snapshot && self.shows(user, seqno, kind, stored)? {
                    self.current = Held::Only { seqno, kind };
                    return Ok(true);
                }
                self.cursor.prev()?;
                continue;
            }
            if seqno <= self.snapshot {
                if !seen {
                    self.scratch.clear();
                    self.scratch.extend_from_slice(user);
                    seen = true;
                }
                let deleted = self.range_dels.deletes(user, seqno, self.snapshot);
                if kind == Kind::Merge && !deleted {
                    ops.chain.push_newest(stored);
                    ops.newest = Some(seqno);
                } else {
                    ops.chain.clear();
                    ops.newest = None;
                    ops.base = None;
                    if !deleted && is_live(kind, stored, self.now_ms)? {
                        self.held.clear();
                        self.held.extend_from_slice(stored);
                        ops.base = Some((seqno, kind));
                    }
                }
            }
            self.cursor.prev()?;
        }
        if seen {
            self.current = self.settle(&mut ops)?;
        }
        Ok(!matches!(self.current, Held::Nothing))
    }

    /// Decides the key in `scratch` once all its versions were seen backward: its live
    /// version (copied in `held`), the merge of the operands above it, or nothing; resets
    /// `ops`.
    fn settle(&self, ops: &mut Backward) -> Result<Held> {
        let state = std::mem::take(ops);
        let Some(newest) = state.newest else {
            return Ok(match state.base {
                Some((seqno, kind)) => Held::Copied { seqno, kind },
                None => Held::Nothing,
            });
        };
        let base = state.base.map(|(_, kind)| (kind, self.held.as_slice()));
        let merged = self
            .resolver()?
            .merge(&self.scratch, newest, &state.chain, base)?;
        Ok(Held::Merged(merged))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::iter::merge::VecCursor;
    use crate::key::{compare_encoded, InternalKey};
    use proptest::prelude::*;

    fn inline((k, v): (Vec<u8>, Lazy)) -> Pair {
        match v {
            Lazy::Inline(v) => (k, v),
            Lazy::Handle(h) => panic!("unexpected handle {h:?}"),
        }
    }

    fn bound(b: (u8, u8)) -> Bound<Vec<u8>> {
        match b.0 {
            0 => Bound::Unbounded,
            1 => Bound::Included(vec![b.1]),
            _ => Bound::Excluded(vec![b.1]),
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]
        #[test]
        fn scans_match_a_model_at_every_snapshot(
            ops in proptest::collection::vec((0u8..12, any::<bool>()), 0..60),
            snapshot in 0u64..70,
            lo in (0u8..3, 0u8..12),
            hi in (0u8..3, 0u8..12),
            knowing in any::<bool>(),
        ) {
            let mut entries = Vec::new();
            let mut model = BTreeMap::new();
            for (i, (key, put)) in ops.iter().enumerate() {
                let seqno = i as u64 + 1;
                let kind = if *put { Kind::Put } else { Kind::Delete };
                let value = if *put { vec![*key, i as u8] } else { vec![] };
                entries.push((InternalKey::new(vec![*key], SeqNo(seqno), kind).encode().unwrap(), value.clone()));
                if seqno <= snapshot {
                    if *put { model.insert(vec![*key], value); } else { model.remove(&vec![*key]); }
                }
            }
            entries.sort_by(|a, b| compare_encoded(&a.0, &b.0));
            let bounds = Bounds { lo: bound(lo), hi: bound(hi) };
            let expected: Vec<Pair> = model
                .into_iter()
                .filter(|(k, _)| bounds.above_lo(k) && bounds.below_hi(k))
                .collect();

            // With `knowing`, the cursor reports keys with one version (invariant 7).
            let source = |entries: Vec<(Vec<u8>, Vec<u8>)>| {
                let c = VecCursor::new(entries);
                Box::new(if knowing { c.knowing_versions() } else { c })
            };
            let mut counter = Visible::new(source(entries.clone()), SeqNo(snapshot), 0, bounds.clone());
            prop_assert_eq!(counter.count_forward().unwrap(), expected.len() as u64);
            prop_assert_eq!(counter.count_forward().unwrap(), 0);

            // A count after one step counts the keys after the one found.
            let mut stepped = Visible::new(source(entries.clone()), SeqNo(snapshot), 0, bounds.clone());
            let first = stepped.next_forward::<Lazy>().unwrap().map(inline);
            prop_assert_eq!(first.as_ref(), expected.first());
            prop_assert_eq!(stepped.count_forward().unwrap(), expected.len().saturating_sub(1) as u64);

            let mut fwd = Visible::new(source(entries.clone()), SeqNo(snapshot), 0, bounds.clone());
            let mut got = Vec::new();
            while let Some(p) = fwd.next_forward::<Lazy>().unwrap() { got.push(inline(p)); }
            prop_assert_eq!(&got, &expected);

            let mut back = Visible::new(source(entries), SeqNo(snapshot), 0, bounds);
            let mut got = Vec::new();
            while let Some(p) = back.next_backward::<Lazy>().unwrap() { got.push(inline(p)); }
            got.reverse();
            prop_assert_eq!(&got, &expected);
        }
    }

    proptest! {
        /// Range tombstones and expiry together: a key shows its newest version at the
        /// snapshot unless that is a tombstone, an entry expired at `now`, or a version a
        /// newer range tombstone (at or below the snapshot) covers; counts agree.
        #[test]
        fn range_tombstones_and_expiry_hide_keys_in_every_direction(
            ops in proptest::collection::vec((0u8..12, 0u8..5), 0..60),
            snapshot in 0u64..70,
            knowing in any::<bool>(),
        ) {
            const NOW: u64 = 10;
            let mut entries = Vec::new();
            let mut tombstones = Vec::new();
            let mut model = BTreeMap::new();
            for (i, (key, what)) in ops.iter().enumerate() {
                let seqno = i as u64 + 1;
                let visible = seqno <= snapshot;
                let body = vec![*key, i as u8];
                let with_expiry = |at: u64| {
                    let attrs = crate::entry::Attrs { expires_at: Some(at), ..Default::default() };
                    crate::entry::encode_put(&attrs, &body)
                };
                let (kind, stored, live) = match what {
                    0 => (Kind::Delete, Vec::new(), false),
                    1 => (Kind::Put, body.clone(), true),
                    2 => {
                        // [key, key + 3): a range tombstone, beside the entries.
                        let end = vec![key + 3];
                        let t = crate::rangedel::RangeTombstone::new(vec![*key], end.clone(), SeqNo(seqno));
                        tombstones.push(t.unwrap());
                        if visible {
                            model.retain(|k: &Vec<u8>, _| k.as_slice() < &[*key][..] || k >= &end);
                        }
                        continue;
                    }
                    3 => { let (k, v) = with_expiry(NOW); (k, v, false) }
                    _ => { let (k, v) = with_expiry(NOW + 1); (k, v, true) }
                };
                entries.push((InternalKey::new(vec![*key], SeqNo(seqno), kind).encode().unwrap(), stored));
                if visible {
                    if live { model.insert(vec![*key], body); } else { model.remove(&vec![*key]); }
                }
            }
            entries.sort_by(|a, b| compare_encoded(&a.0, &b.0));
            let expected: Vec<Pair> = model.into_iter().collect();
            let fragments = std::sync::Arc::new(crate::rangedel::Fragments::build(&tombstones));
            let all = || Bounds { lo: Bound::Unbounded, hi: Bound::Unbounded };
            let scan = || {
                let c = VecCursor::new(entries.clone());
                let c = if knowing { c.knowing_versions() } else { c };
                Visible::new(Box::new(c), SeqNo(snapshot), NOW, all())
                    .with_range_tombstones(ReadTombstones::new([std::sync::Arc::clone(&fragments)]))
            };
            prop_assert_eq!(scan().count_forward().unwrap(), expected.len() as u64);
            let mut fwd = scan();
            let mut got = Vec::new();
            while let Some(p) = fwd.next_forward::<Lazy>().unwrap() { got.push(inline(p)); }
            prop_assert_eq!(&got, &expected);
            let mut back = scan();
            let mut got = Vec::new();
            while let Some(p) = back.next_backward::<Lazy>().unwrap() { got.push(inline(p)); }
            got.reverse();
            prop_assert_eq!(&got, &expected);
        }
    }

    /// Keys with one version are decided where they lie (invariant 7): a scan in either
    /// direction copies neither a key nor a value, and finds the same pairs.
    #[test]
    fn single_versions_are_read_where_they_lie() {
        let entries: Vec<(Vec<u8>, Vec<u8>)> = (0u8..20)
            .map(|k| {
                let key = InternalKey::new(vec![k], SeqNo(5), Kind::Put)
                    .encode()
                    .unwrap();
                (key, vec![k; 3])
            })
            .collect();
        let all = || Bounds {
            lo: Bound::Unbounded,
            hi: Bound::Unbounded,
        };
        for knowing in [false, true] {
            let source = || {
                let c = VecCursor::new(entries.clone());
                Box::new(if knowing { c.knowing_versions() } else { c })
            };
            let mut back = Visible::new(source(), SeqNo(9), 0, all());
            let mut fwd = Visible::new(source(), SeqNo(9), 0, all());
            for k in 0u8..20 {
                assert!(back.advance_backward().unwrap() && fwd.advance_forward().unwrap());
                assert_eq!(
                    (back.key(), back.plain_value()),
                    (&[19 - k][..], Some(&[19 - k; 3][..]))
                );
                assert_eq!(
                    (fwd.key(), fwd.plain_value()),
                    (&[k][..], Some(&[k; 3][..]))
                );
                assert_eq!(back.plain_pair(), Some((&[19 - k][..], &[19 - k; 3][..])));
                assert_eq!(fwd.plain_pair(), Some((&[k][..], &[k; 3][..])));
            }
            assert!(!back.advance_backward().unwrap() && !fwd.advance_forward().unwrap());
            let copied =
                !back.held.is_empty() || !back.scratch.is_empty() || !fwd.scratch.is_empty();
            assert_eq!(copied, !knowing, "knowing {knowing}");
        }
    }

    #[test]
    fn prefix_bounds_cover_exactly_the_prefix() {
        let b = Bounds::prefix(b"ab");
        assert!(b.above_lo(b"ab") && b.below_hi(b"ab\xff\xff"));
        assert!(!b.below_hi(b"ac") && !b.above_lo(b"aa\xff"));
        let b = Bounds::prefix(b"a\xff");
        assert!(b.below_hi(b"a\xff\xff") && !b.below_hi(b"b"));
        let b = Bounds::prefix(b"\xff\xff");
        assert!(b.below_hi(b"\xff\xff\xff\xff") && matches!(b.hi, Bound::Unbounded));
        let b = Bounds::prefix(b"");
        assert!(matches!(b.hi, Bound::Unbounded) && b.above_lo(b""));
    }

    #[test]
    fn an_undecodable_key_is_an_error_then_the_scan_stops() {
        let mut v = Visible::new(
            Box::new(VecCursor::new(vec![(b"short".to_vec(), vec![])])),
            SeqNo(9),
            0,
            Bounds {
                lo: Bound::Unbounded,
                hi: Bound::Unbounded,
            },
        );
        assert!(v.next_forward::<Lazy>().unwrap_err().is_corruption());
        assert!(v.next_forward::<Lazy>().unwrap().is_none());
    }
}
