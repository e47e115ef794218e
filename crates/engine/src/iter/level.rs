//! [`LevelCursor`]: one [`Cursor`] over a level of sorted, non-overlapping tables, opening
//! each table's cursor only when the scan reaches it.
//!
//! Invariant: `tables` are sorted by key range and do not overlap (levels 1 and deeper),
//! so the concatenation of their entries is sorted, and every version of a user key is in
//! one table (`compaction` invariant 2): an entry that is the only version of its key in
//! its table is the only one in the level. At most one table cursor is open.
//!
//! A scan's cursor shares the level with the version that lists it ([`Tables::Level`]):
//! making one clones one `Arc`, not one per table of the level.

use std::cmp::Ordering;
use std::sync::Arc;

use crate::cursor::Cursor;
use crate::error::Result;
use crate::key::compare_encoded;
use crate::table::{TableIter, TableMeta};
use crate::version::KeyspaceTables;

/// Opens a cursor over one table.
pub(crate) type Opener<C = TableIter> = Box<dyn Fn(&TableMeta) -> Result<C> + Send>;

/// The tables a [`LevelCursor`] walks.
pub(crate) enum Tables {
    /// A list of its own (a compaction's inputs).
    Owned(Vec<Arc<TableMeta>>),
    /// Level `.1` of a keyspace's tables in a version.
    Level(Arc<KeyspaceTables>, usize),
}

impl Tables {
    fn as_slice(&self) -> &[Arc<TableMeta>] {
        match self {
            Tables::Owned(v) => v,
            Tables::Level(ks, level) => ks.level(*level),
        }
    }
}

/// A cursor over a whole level, whose tables it walks with cursors of type `C` (the
/// tables' own, [`TableIter`], except in tests): the calls into them are static, so a
/// step through the level costs one dynamic call, not two.
pub(crate) struct LevelCursor<C = TableIter> {
    tables: Tables,
    open: Opener<C>,
    /// The table the cursor is in, and its cursor.
    current: Option<(usize, C)>,
}

impl<C: Cursor> LevelCursor<C> {
    /// A cursor over `tables` (sorted, non-overlapping), opening them with `open`.
    pub(crate) fn new(tables: Tables, open: Opener<C>) -> LevelCursor<C> {
        LevelCursor {
            tables,
            open,
            current: None,
        }
    }

    fn enter(&mut self, index: usize) -> Result<Option<&mut C>> {
        let Some(meta) = self.tables.as_slice().get(index) else {
            self.current = None;
            return Ok(None);
        };
        if self.current.as_ref().map(|(i, _)| *i) != Some(index) {
            self.current = None;
            let cursor = (self.open)(meta)?;
            self.current = Some((index, cursor));
        }
        Ok(self.current.as_mut().map(|(_, c)| c))
    }

    /// From table `index` on, the first table with an entry, positioned at it.
    fn first_from(&mut self, mut index: usize) -> Result<()> {
        while index < self.tables.as_slice().len() {
            if let Some(c) = self.enter(index)? {
                c.seek_to_first()?;
                if c.valid() {
                    return Ok(());
                }
            }
            index += 1;
        }
        self.current = None;
        Ok(())
    }

    /// From table `index` down, the last table with an entry, positioned at it.
    fn last_from(&mut self, index: Option<usize>) -> Result<()> {
        let mut index = index;
        while let Some(i) = index {
            if let Some(c) = self.enter(i)? {
                c.seek_to_last()?;
                if c.valid() {
                    return Ok(());
                }
            }
            index = i.checked_sub(1);
        }
        self.current = None;
        Ok(())
    }

    fn guard(&mut self, r: Result<()>) -> Result<()> {
        if r.is_err() {
            self.current = None;
        }
        r
    }
}

impl<C: Cursor> Cursor for LevelCursor<C> {
    fn valid(&self) -> bool {
        self.current.as_ref().is_some_and(|(_, c)| c.valid())
    }

    fn key(&self) -> &[u8] {
        self.current.as_ref().map_or(&[], |(_, c)| c.key())
    }

    fn value(&self) -> &[u8] {
        self.current.as_ref().map_or(&[], |(_, c)| c.value())
    }

    fn current(&self) -> Option<(&[u8], &[u8])> {
        self.current.as_ref().and_then(|(_, c)| c.current())
    }

    fn only_version(&self) -> bool {
        self.current.as_ref().is_some_and(|(_, c)| c.only_version())
    }

    fn seek_to_first(&mut self) -> Result<()> {
        let r = self.first_from(0);
        self.guard(r)
    }

    fn seek_to_last(&mut self) -> Result<()> {
        let r = self.last_from(self.tables.as_slice().len().checked_sub(1));
        self.guard(r)
    }

    fn seek(&mut self, target: &[u8]) -> Result<()> {
        let index = self
            .tables
            .as_slice()
            .partition_point(|t| compare_encoded(&t.largest, target) == Ordering::Less);
        let r = (|| {
            if let Some(c) = self.enter(index)? {
                c.seek(target)?;
                if c.valid() {
                    return Ok(());
                }
            }
            self.first_from(index + 1)
        })();
        self.guard(r)
    }

    fn seek_for_prev(&mut self, target: &[u8]) -> Result<()> {
        let after = self
            .tables
            .as_slice()
            .partition_point(|t| compare_encoded(&t.smallest, target) != Ordering::Greater);
        let r = (|| {
            let Some(index) = after.checked_sub(1) else {
                self.current = None;
                return Ok(());
            };
            if let Some(c) = self.enter(index)? {
                c.seek_for_prev(target)?;
                if c.valid() {
                    return Ok(());
                }
            }
            self.last_from(index.checked_sub(1))
        })();
        self.guard(r)
    }

    fn next(&mut self) -> Result<()> {
        let Some((index, c)) = self.current.as_mut() else {
            return Ok(());
        };
        let index = *index;
        let r = match c.next() {
            Ok(()) if c.valid() => Ok(()),
            Ok(()) => self.first_from(index + 1),
            Err(e) => Err(e),
        };
        self.guard(r)
    }

    fn prev(&mut self) -> Result<()> {
        let Some((index, c)) = self.current.as_mut() else {
            return Ok(());
        };
        let index = *index;
        let r = match c.prev() {
            Ok(()) if c.valid() => Ok(()),
            Ok(()) => self.last_from(index.checked_sub(1)),
            Err(e) => Err(e),
        };
        self.guard(r)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;
    use crate::files::TableId;
    use crate::iter::merge::{mirror_move, VecCursor};
    use crate::key::{seek_key, InternalKey, Kind, SeqNo};
    use proptest::prelude::*;
    use std::collections::HashMap;

    type Entries = Vec<(Vec<u8>, Vec<u8>)>;

    fn enc(user: u8, seqno: u64) -> Vec<u8> {
        InternalKey::new([user], SeqNo(seqno), Kind::Put)
            .encode()
            .unwrap()
    }

    /// A level of tables cut from `keys` (sorted) at `cuts`, with an opener that hands each
    /// table's entries out as a [`VecCursor`], and the concatenation as the model. Some
    /// tables are empty: the walk must step over them.
    fn level(keys: &[u8], cuts: &[usize]) -> (LevelCursor<VecCursor>, Entries) {
        let all: Entries = keys.iter().map(|&u| (enc(u, 1), vec![u])).collect();
        let mut bounds: Vec<usize> = cuts.iter().map(|c| c % (all.len() + 1)).collect();
        bounds.push(0);
        bounds.push(all.len());
        bounds.sort_unstable();
        let mut metas = Vec::new();
        let mut contents = HashMap::new();
        for (id, pair) in bounds.windows(2).enumerate() {
            let part = all[pair[0]..pair[1]].to_vec();
            let (smallest, largest) = match (part.first(), part.last()) {
                (Some(f), Some(l)) => (f.0.clone(), l.0.clone()),
                // An empty table sits between its neighbours' keys.
                _ => {
                    let at = all.get(pair[0]).map_or(enc(u8::MAX, 1), |e| e.0.clone());
                    (at.clone(), at)
                }
            };
            let meta = TableMeta {
                id: TableId(id as u64),
                file_size: 1,
                smallest,
                largest,
                min_seqno: SeqNo(1),
                max_seqno: SeqNo(1),
                entries: part.len() as u64,
                tombstones: 0,
                raw_bytes: 0,
            };
            contents.insert(id as u64, part);
            metas.push(Arc::new(meta));
        }
        let open: Opener<VecCursor> = Box::new(move |meta: &TableMeta| {
            let entries = contents.get(&meta.id.0).cloned().unwrap_or_default();
            Ok(VecCursor::new(entries))
        });
        (LevelCursor::new(Tables::Owned(metas), open), all)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]
        /// Any sequence of moves over a level agrees with the same moves over the
        /// concatenation of its tables, through `valid`, `key`, `value` and `current`.
        #[test]
        fn level_matches_the_concatenation(
            keys in proptest::collection::btree_set(0u8..40, 0..30),
            cuts in proptest::collection::vec(0usize..31, 0..6),
            moves in proptest::collection::vec(0u8..6, 1..60),
            probe in 0u8..42,
        ) {
            let keys: Vec<u8> = keys.into_iter().collect();
            let (mut level, all) = level(&keys, &cuts);
            let mut model = VecCursor::new(all);
            let target = seek_key(&[probe], SeqNo(1));
            for m in moves {
                let agreed = mirror_move(&mut level, &mut model, m, &target);
                prop_assert!(agreed.is_ok(), "{:?}", agreed);
            }
        }
    }
}
