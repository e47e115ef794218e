//! Which versions a compaction keeps: per user key, the newest version visible to each
//! live snapshot and to current readers; tombstones at the bottom of the tree go once
//! nothing older remains for them to hide.
//!
//! Snapshots cut the seqno line into stripes: stripe `i` holds the seqnos in
//! `(s[i-1], s[i]]`, and the last stripe everything above the newest snapshot (what
//! current readers see; every input's seqno is at most the visible seqno when the
//! compaction started, and readers taking a new super version read at or above it). A
//! reader at any seqno in a stripe sees only the newest version in that stripe (or an
//! older stripe's), so within a stripe only the newest version is kept.
//!
//! At the bottommost level (no deeper table holds the key), a tombstone that is the oldest
//! version kept hides nothing, so it is dropped — and then the same holds for the next.
//!
//! Range tombstones of the inputs (`rangedel.rs`): a version with seqno `s` covered by a
//! tombstone with seqno `t > s` in the same stripe is dropped, since every reader that
//! could see it (seqno in `[s, t)`) would need a snapshot there. Only the inputs'
//! tombstones are used, never a memtable's: those may not be visible to every reader
//! yet. Which tombstones the outputs carry is [`carried_range_tombstones`]'s rule.

use crate::error::{Error, FileKind, Reason, Result};
use crate::key::{parse_encoded, Kind, SeqNo};
use crate::rangedel::{Fragments, RangeTombstone};

/// One version of a user key: encoded internal key and value.
pub(crate) type Entry = (Vec<u8>, Vec<u8>);

/// Collects the versions of one user key (newest first, as they arrive) and decides.
#[derive(Debug)]
pub(crate) struct KeyVersions<'a> {
    snapshots: &'a [SeqNo],
    bottommost: bool,
    range_dels: Option<&'a Fragments>,
    kept: Vec<(usize, Kind, Entry)>,
}

impl<'a> KeyVersions<'a> {
    /// A collector for the given live snapshots (ascending).
    pub(crate) fn new(snapshots: &'a [SeqNo], bottommost: bool) -> KeyVersions<'a> {
        KeyVersions {
            snapshots,
            bottommost,
            range_dels: None,
            kept: Vec::new(),
        }
    }

    /// Also drops versions covered by `range_dels` within their stripe.
    pub(crate) fn with_range_tombstones(mut self, range_dels: &'a Fragments) -> Self {
        self.range_dels = (!range_dels.is_empty()).then_some(range_dels);
        self
    }

    fn stripe(&self, seqno: SeqNo) -> usize {
        self.snapshots.partition_point(|s| *s < seqno)
    }

    /// Offers the next (older) version of the current user key.
    pub(crate) fn push(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        let (user, seqno, tag) = parse_encoded(key).ok_or_else(bad_key)?;
        let kind = Kind::from_u8(tag).ok_or_else(bad_key)?;
        let stripe = self.stripe(seqno);
        if let Some(t) = self
            .range_dels
            .and_then(|f| f.oldest_covering_above(user, seqno))
        {
            if self.stripe(t) == stripe {
                return Ok(()); // deleted by a range tombstone no reader sees past
            }
        }
        if self.kept.last().is_some_and(|(s, _, _)| *s == stripe) {
            return Ok(()); // shadowed within its stripe
        }
        self.kept
            .push((stripe, kind, (key.to_vec(), value.to_vec())));
        Ok(())
    }

    /// The versions to write, newest first; resets the collector.
    pub(crate) fn finish(&mut self) -> Vec<Entry> {
        if self.bottommost {
            while self.kept.last().is_some_and(|(_, k, _)| *k == Kind::Delete) {
                self.kept.pop();
            }
        }
        self.kept.drain(..).map(|(_, _, e)| e).collect()
    }
}

/// The range tombstones a compaction's outputs carry: all of `fragments`, except at the
/// bottommost level those with no live snapshot below their seqno. Such a tombstone
/// has hidden everything it can: every version it covers in this compaction is in its
/// stripe (stripe 0) and so dropped by [`KeyVersions`], no deeper level holds a key of the
/// compaction's range (which includes every input tombstone's keys, since a table claims
/// its tombstones' keys), and no level above holds a version older than it (older
/// versions were flushed no later than the tombstone and move down with it). With a
/// snapshot below it, a version it covers may survive for that snapshot and still needs
/// hiding from newer readers, so it stays, as a point tombstone does.
pub(crate) fn carried_range_tombstones(
    fragments: &Fragments,
    snapshots: &[SeqNo],
    bottommost: bool,
) -> Vec<RangeTombstone> {
    fragments
        .tombstones()
        .filter(|t| !bottommost || snapshots.iter().any(|s| *s < t.seqno))
        .collect()
}

fn bad_key() -> Error {
    Error::corruption(
        FileKind::Table,
        std::path::Path::new("<compaction input>"),
        0,
        Reason::BadEntry("internal key shorter than its trailer or of an unknown kind"),
    )
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]
mod tests {
    use super::*;
    use crate::key::InternalKey;
    use proptest::prelude::*;

    fn enc(seqno: u64, kind: Kind) -> Vec<u8> {
        InternalKey::new(b"k".to_vec(), SeqNo(seqno), kind)
            .encode()
            .unwrap()
    }

    /// What a reader at `at` sees among `versions` (newest first).
    fn visible(versions: &[(u64, Kind)], at: u64) -> Option<u64> {
        versions
            .iter()
            .find(|(s, _)| *s <= at)
            .and_then(|(s, k)| (*k == Kind::Put).then_some(*s))
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(500))]
        /// Every reader that can exist (at a live snapshot, or at or above the newest
        /// input) sees the same answer before and after the filter.
        #[test]
        fn readers_see_the_same_after_filtering(
            seqnos in proptest::collection::btree_set(1u64..100, 1..12),
            kinds in proptest::collection::vec(any::<bool>(), 12),
            snaps in proptest::collection::btree_set(0u64..110, 0..5),
            bottommost in any::<bool>(),
        ) {
            let mut versions: Vec<(u64, Kind)> = seqnos
                .iter()
                .zip(&kinds)
                .map(|(s, put)| (*s, if *put { Kind::Put } else { Kind::Delete }))
                .collect();
            versions.reverse(); // newest first
            let snapshots: Vec<SeqNo> = snaps.iter().map(|s| SeqNo(*s)).collect();
            let mut kv = KeyVersions::new(&snapshots, bottommost);
            for (s, k) in &versions {
                kv.push(&enc(*s, *k), b"v").unwrap();
            }
            let kept: Vec<(u64, Kind)> = kv
                .finish()
                .iter()
                .map(|(k, _)| {
                    let (_, s, t) = parse_encoded(k).unwrap();
                    (s.0, Kind::from_u8(t).unwrap())
                })
                .collect();
            let newest = versions[0].0;
            let readers = snaps.iter().copied().chain([newest, newest + 5]);
            for at in readers {
                if bottommost {
                    prop_assert_eq!(visible(&kept, at), visible(&versions, at), "reader at {}", at);
                } else {
                    // Not bottommost: a missing answer may fall through to deeper
                    // levels, so the first version found must be the same one.
                    let first = |v: &[(u64, Kind)]| v.iter().find(|(s, _)| *s <= at).copied();
                    prop_assert_eq!(first(&kept), first(&versions), "reader at {}", at);
                }
            }
            prop_assert!(kept.len() <= snaps.len() + 1);
        }
    }
}
