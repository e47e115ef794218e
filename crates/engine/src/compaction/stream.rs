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
//! An entry whose expiry is at or before the compaction's `now` reads as a tombstone at its
//! seqno for every reader (`entry.rs`, invariant 3), so it is rewritten as one (same key
//! and seqno, kind Delete, no value) and then follows the tombstone rules above. Time only
//! moves forward, so no reader can ever see it again.
//!
//! Range tombstones of the inputs (`rangedel.rs`): a version with seqno `s` covered by a
//! tombstone with seqno `t > s` in the same stripe is dropped, since every reader that
//! could see it (seqno in `[s, t)`) would need a snapshot there; this holds for a live
//! entry and for an expired one alike (both are hidden from readers at `t` and above).
//! Only the inputs' tombstones are used, never a memtable's: those may not be visible to
//! every reader yet. Which tombstones the outputs carry is [`carried_range_tombstones`]'s
//! rule; it is the same for an in-place rewrite (`Choice::in_place`), whose outputs
//! carry the input table's tombstones clipped to their shares of its range.
//!
//! Merge operands (`merge.rs`) do not shadow: a reader needs every version under an
//! operand down to its base, so within a stripe the newest version is kept and, while the
//! kept versions of the stripe are operands, the next one too (a *run*: operands, then
//! perhaps the base). A version a range tombstone of the stripe deletes ends the run with
//! no base. With the keyspace's operator a run is then combined, never across a stripe
//! (so every snapshot reads what it read before):
//! * with a base in the run (a value or a tombstone), a range tombstone ending it, or at
//!   the bottommost level with nothing older kept, `full_merge` makes one value, written
//!   at the newest operand's seqno with the base's attributes (a separated base is left
//!   as it is: its value is not read by compaction);
//! * otherwise the operands are folded into one with `partial_merge`, if the operator
//!   combines every pair.
//!
//! An operator that fails or declines leaves the run as it was: nothing is lost, and the
//! failure is counted ([`KeyVersions::merge_failures`]).

use std::path::Path;

use std::sync::Arc;

use crate::entry::{self, Attrs, Body};
use crate::error::{Error, FileKind, Reason, Result};
use crate::key::{parse_encoded, InternalKey, Kind, SeqNo};
use crate::merge::{Base, Chain, MergeOperator};
use crate::rangedel::{Fragments, RangeTombstone};

/// One version of a user key: encoded internal key and value.
pub(crate) type Entry = (Vec<u8>, Vec<u8>);

/// Collects the versions of one user key (newest first, as they arrive) and decides.
#[derive(Debug)]
pub(crate) struct KeyVersions<'a> {
    snapshots: &'a [SeqNo],
    bottommost: bool,
    /// Entries expired at this Unix millisecond become tombstones.
    now_ms: u64,
    range_dels: Option<&'a Fragments>,
    kept: Vec<(usize, Kind, Entry)>,
    /// The keyspace's merge operator (`None`: operands are kept as they are).
    operator: Option<Arc<dyn MergeOperator>>,
    /// The stripe whose run of operands a range tombstone ended (no base).
    run_ended: Option<usize>,
    /// Runs a failing `full_merge` left as they were.
    merge_failures: u64,
}

/// A run of versions of one stripe under a merge operand: `kept[start..end]`.
struct Run {
    start: usize,
    end: usize,
    /// Index of the base (a non-operand of the run), if it has one.
    base: Option<usize>,
    /// True if nothing older than the run can matter to a reader of its stripe.
    closed: bool,
}

impl<'a> KeyVersions<'a> {
    /// A collector for the given live snapshots (ascending), judging expiry at `now_ms`.
    pub(crate) fn new(snapshots: &'a [SeqNo], bottommost: bool, now_ms: u64) -> KeyVersions<'a> {
        KeyVersions {
            snapshots,
            bottommost,
            now_ms,
            range_dels: None,
            kept: Vec::new(),
            operator: None,
            run_ended: None,
            merge_failures: 0,
        }
    }

    /// Combines merge operands with `operator` (see the module documentation).
    pub(crate) fn with_merge_operator(mut self, operator: Option<Arc<dyn MergeOperator>>) -> Self {
        self.operator = operator;
        self
    }

    /// Runs of operands a failing `full_merge` left as they were, so far.
    pub(crate) fn merge_failures(&self) -> u64 {
        self.merge_failures
    }

    /// True if the newest kept version is an operand of `stripe` whose run is open.
    fn in_run(&self, stripe: usize) -> bool {
        self.kept
            .last()
            .is_some_and(|(s, k, _)| *s == stripe && *k == Kind::Merge)
            && self.run_ended != Some(stripe)
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
                if self.in_run(stripe) {
                    self.run_ended = Some(stripe);
                }
                return Ok(()); // deleted by a range tombstone no reader sees past
            }
        }
        if self.kept.last().is_some_and(|(s, _, _)| *s == stripe) && !self.in_run(stripe) {
            return Ok(()); // shadowed within its stripe
        }
        let expired = entry::expiry_of(kind, value)
            .map_err(|r| Error::corruption(FileKind::Table, Path::new("<compaction input>"), 0, r))?
            .is_some_and(|at| at <= self.now_ms);
        if expired {
            let tombstone = InternalKey::new(user, seqno, Kind::Delete).encode()?;
            self.kept
                .push((stripe, Kind::Delete, (tombstone, Vec::new())));
        } else {
            self.kept
                .push((stripe, kind, (key.to_vec(), value.to_vec())));
        }
        Ok(())
    }

    /// The versions to write, newest first; resets the collector.
    pub(crate) fn finish(&mut self) -> Vec<Entry> {
        if self.operator.is_some() {
            self.combine_runs();
        }
        self.run_ended = None;
        if self.bottommost {
            while self.kept.last().is_some_and(|(_, k, _)| *k == Kind::Delete) {
                self.kept.pop();
            }
        }
        self.kept.drain(..).map(|(_, _, e)| e).collect()
    }
}

impl KeyVersions<'_> {
    /// The runs of operands among `kept`, newest first.
    fn runs(&self) -> Vec<Run> {
        let mut runs = Vec::new();
        let mut i = 0;
        while i < self.kept.len() {
            let Some((stripe, Kind::Merge, _)) = self.kept.get(i) else {
                i += 1;
                continue;
            };
            let stripe = *stripe;
            let mut end = i;
            let mut base = None;
            while let Some((s, kind, _)) = self.kept.get(end) {
                if *s != stripe {
                    break;
                }
                end += 1;
                if *kind != Kind::Merge {
                    base = Some(end - 1);
                    break;
                }
            }
            let nothing_older = end == self.kept.len() && self.bottommost;
            runs.push(Run {
                start: i,
                end,
                base,
                closed: base.is_some() || self.run_ended == Some(stripe) || nothing_older,
            });
            i = end;
        }
        runs
    }

    /// Combines every run of operands (see the module documentation); a run the
    /// operator cannot combine stays as it is.
    fn combine_runs(&mut self) {
        let Some(operator) = self.operator.clone() else {
            return;
        };
        // Back to front, so the indices of the runs not yet combined stay valid.
        for run in self.runs().into_iter().rev() {
            if let Some((replaced, entry)) = self.combine(operator.as_ref(), &run) {
                self.kept.splice(replaced, [entry]);
            }
        }
    }

    /// The one version that replaces part of `run` (the returned range of `kept`: the
    /// whole run for a full merge, its operands for a fold), or `None` to keep it.
    fn combine(
        &mut self,
        operator: &dyn MergeOperator,
        run: &Run,
    ) -> Option<(std::ops::Range<usize>, (usize, Kind, Entry))> {
        // The operands of the run: all of it but its base.
        let operands_end = run.base.unwrap_or(run.end);
        let versions = self.kept.get(run.start..run.end)?;
        let (stripe, _, (newest_key, _)) = versions.first()?;
        let (user, seqno, _) = parse_encoded(newest_key)?;
        let operands: Vec<&[u8]> = versions
            .iter()
            .filter(|(_, k, _)| *k == Kind::Merge)
            .map(|(_, _, (_, v))| v.as_slice())
            .collect();
        if run.closed {
            let base = match run.base.and_then(|b| self.kept.get(b)) {
                Some((_, kind, (_, stored))) => match entry::view(*kind, stored) {
                    Ok(view) => view,
                    Err(_) => return None,
                },
                None => None,
            };
            let (base_value, attrs) = match base {
                None => (Base::None, Attrs::default()),
                Some(view) => match view.body {
                    Body::Inline(v) => (Base::Value(v), view.attrs),
                    // Compaction does not read the value log: the base stays.
                    Body::Handle(_) => {
                        let folded = self.fold(operator, *stripe, user, seqno, &operands)?;
                        return Some((run.start..operands_end, folded));
                    }
                },
            };
            let mut chain = Chain::new();
            for op in &operands {
                chain.push(op);
            }
            let value = match chain.merge(operator, user, base_value) {
                Ok(v) => v,
                Err(_) => {
                    self.merge_failures += 1;
                    return None;
                }
            };
            let (kind, stored) = entry::encode_put(&attrs, &value);
            let key = InternalKey::new(user, seqno, kind).encode().ok()?;
            return Some((run.start..run.end, (*stripe, kind, (key, stored))));
        }
        let folded = self.fold(operator, *stripe, user, seqno, &operands)?;
        Some((run.start..operands_end, folded))
    }

    /// The operands (newest first) folded into one with `partial_merge`, written at
    /// `seqno`; `None` if there is only one or a pair does not combine.
    fn fold(
        &self,
        operator: &dyn MergeOperator,
        stripe: usize,
        user: &[u8],
        seqno: SeqNo,
        operands: &[&[u8]],
    ) -> Option<(usize, Kind, Entry)> {
        if operands.len() < 2 {
            return None;
        }
        let mut oldest_first = operands.iter().rev();
        let mut acc = oldest_first.next()?.to_vec();
        for newer in oldest_first {
            acc = operator.partial_merge(user, &acc, newer)?;
        }
        let key = InternalKey::new(user, seqno, Kind::Merge).encode().ok()?;
        Some((stripe, Kind::Merge, (key, acc)))
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
    use proptest::prelude::*;

    fn enc(seqno: u64, kind: Kind) -> Vec<u8> {
        InternalKey::new(b"k".to_vec(), SeqNo(seqno), kind)
            .encode()
            .unwrap()
    }

    /// The versions `KeyVersions` keeps of `input` (newest first: seqno, kind, value)
    /// with the `AddI64` merge operator (or none), as (seqno, kind, value).
    fn merged(
        input: &[(u64, Kind, &str)],
        snapshots: &[SeqNo],
        bottommost: bool,
        operator: bool,
    ) -> Vec<(u64, Kind, String)> {
        let op: Option<Arc<dyn MergeOperator>> =
            operator.then(|| Arc::new(crate::merge::AddI64) as Arc<dyn MergeOperator>);
        let mut kv = KeyVersions::new(snapshots, bottommost, 0).with_merge_operator(op);
        for (seqno, kind, value) in input {
            kv.push(&enc(*seqno, *kind), value.as_bytes()).unwrap();
        }
        kv.finish()
            .into_iter()
            .map(|(k, v)| {
                let (_, seqno, tag) = parse_encoded(&k).unwrap();
                let kind = Kind::from_u8(tag).unwrap();
                (seqno.0, kind, String::from_utf8(v).unwrap())
            })
            .collect()
    }

    #[test]
    fn operands_are_combined_within_a_stripe_only() {
        use Kind::{Delete, Merge, Put};
        let own = |v: &[(u64, Kind, &str)]| -> Vec<(u64, Kind, String)> {
            v.iter().map(|(s, k, x)| (*s, *k, x.to_string())).collect()
        };
        let chain = [
            (5, Merge, "1"),
            (4, Merge, "2"),
            (3, Put, "10"),
            (2, Put, "7"),
        ];
        // The base is in the run: one value at the newest operand's seqno.
        assert_eq!(merged(&chain, &[], false, true), own(&[(5, Put, "13")]));
        // Not across the snapshot at 4: the operand above it stays, the run below it merges.
        assert_eq!(
            merged(&chain, &[SeqNo(4)], false, true),
            own(&[(5, Merge, "1"), (4, Put, "12")])
        );
        // Without an operator nothing under an operand is shadowed but what is under its base.
        assert_eq!(
            merged(&chain, &[], false, false),
            own(&[(5, Merge, "1"), (4, Merge, "2"), (3, Put, "10")])
        );
        // A tombstone is a base of none.
        let deleted = [(5, Merge, "1"), (4, Delete, ""), (3, Put, "10")];
        assert_eq!(merged(&deleted, &[], false, true), own(&[(5, Put, "1")]));
        // Only operands: folded into one, or at the bottom (nothing older) merged.
        let ops = [(3, Merge, "1"), (2, Merge, "2")];
        assert_eq!(merged(&ops, &[], false, true), own(&[(3, Merge, "3")]));
        assert_eq!(merged(&ops, &[], true, true), own(&[(3, Put, "3")]));
        // A failing merge (a base that is not a counter) keeps everything.
        let bad = [(5, Merge, "1"), (4, Put, "text")];
        assert_eq!(merged(&bad, &[], false, true), own(&bad));
    }

    /// The compactions in these tests run at this time.
    const NOW: u64 = 10;

    /// A version: seqno, kind and stored value. Choice 0 is a tombstone, 1 a plain put,
    /// 2 an entry expired at `NOW`, 3 one that expires later.
    fn version(seqno: u64, choice: u8) -> (u64, Kind, Vec<u8>) {
        let ttl = |at| {
            let attrs = entry::Attrs {
                expires_at: Some(at),
                ..entry::Attrs::default()
            };
            entry::encode_put(&attrs, b"v")
        };
        let (kind, value) = match choice {
            0 => (Kind::Delete, Vec::new()),
            1 => (Kind::Put, b"v".to_vec()),
            2 => ttl(NOW - 5),
            _ => ttl(NOW + 40),
        };
        (seqno, kind, value)
    }

    /// The first version a reader at `at` finds among `versions` (newest first), and
    /// whether it is live (a value rather than a tombstone or an expired entry).
    fn first(versions: &[(u64, Kind, Vec<u8>)], at: u64) -> Option<(u64, bool)> {
        versions
            .iter()
            .find(|(s, _, _)| *s <= at)
            .map(|(s, k, v)| (*s, entry::live(*k, v, NOW).unwrap().is_some()))
    }

    /// What a reader at `at` sees among `versions` (newest first).
    fn visible(versions: &[(u64, Kind, Vec<u8>)], at: u64) -> Option<u64> {
        first(versions, at).and_then(|(s, live)| live.then_some(s))
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(500))]
        /// Every reader that can exist (at a live snapshot, or at or above the newest
        /// input) sees the same answer before and after the filter, with expired entries
        /// counting as tombstones.
        #[test]
        fn readers_see_the_same_after_filtering(
            seqnos in proptest::collection::btree_set(1u64..100, 1..12),
            kinds in proptest::collection::vec(0u8..4, 12),
            snaps in proptest::collection::btree_set(0u64..110, 0..5),
            bottommost in any::<bool>(),
        ) {
            let mut versions: Vec<(u64, Kind, Vec<u8>)> = seqnos
                .iter()
                .zip(&kinds)
                .map(|(s, choice)| version(*s, *choice))
                .collect();
            versions.reverse(); // newest first
            let snapshots: Vec<SeqNo> = snaps.iter().map(|s| SeqNo(*s)).collect();
            let mut kv = KeyVersions::new(&snapshots, bottommost, NOW);
            for (s, k, v) in &versions {
                kv.push(&enc(*s, *k), v).unwrap();
            }
            let kept: Vec<(u64, Kind, Vec<u8>)> = kv
                .finish()
                .into_iter()
                .map(|(k, v)| {
                    let (_, s, t) = parse_encoded(&k).unwrap();
                    (s.0, Kind::from_u8(t).unwrap(), v)
                })
                .collect();
            // Nothing expired survives as a value.
            for (_, k, v) in &kept {
                prop_assert!(entry::expiry_of(*k, v).unwrap().is_none_or(|at| at > NOW));
            }
            let newest = versions[0].0;
            let readers = snaps.iter().copied().chain([newest, newest + 5]);
            for at in readers {
                if bottommost {
                    prop_assert_eq!(visible(&kept, at), visible(&versions, at), "reader at {}", at);
                } else {
                    // Not bottommost: a missing answer may fall through to deeper
                    // levels, so the first version found must be the same one.
                    prop_assert_eq!(first(&kept, at), first(&versions, at), "reader at {}", at);
                }
            }
            prop_assert!(kept.len() <= snaps.len() + 1);
        }

        /// With range tombstones covering the key too: every reader sees the same before
        /// (inputs and every input tombstone) and after (kept versions and the carried
        /// tombstones), expired entries and covered versions both hiding the key.
        #[test]
        fn readers_see_the_same_with_range_tombstones(
            seqnos in proptest::collection::btree_set(1u64..100, 1..12),
            kinds in proptest::collection::vec(0u8..4, 12),
            range_seqnos in proptest::collection::btree_set(1u64..100, 1..4),
            snaps in proptest::collection::btree_set(0u64..110, 0..5),
            bottommost in any::<bool>(),
        ) {
            let mut versions: Vec<(u64, Kind, Vec<u8>)> = seqnos
                .iter()
                .zip(&kinds)
                .map(|(s, choice)| version(*s, *choice))
                .collect();
            versions.reverse(); // newest first
            // Every seqno is written once: a range tombstone never shares a version's.
            let tombstones: Vec<RangeTombstone> = range_seqnos
                .iter()
                .filter(|s| !seqnos.contains(s))
                .map(|s| RangeTombstone::new(b"a".to_vec(), b"z".to_vec(), SeqNo(*s)).unwrap())
                .collect();
            let fragments = Fragments::build(&tombstones);
            let snapshots: Vec<SeqNo> = snaps.iter().map(|s| SeqNo(*s)).collect();
            let carried = carried_range_tombstones(&fragments, &snapshots, bottommost);
            let mut kv =
                KeyVersions::new(&snapshots, bottommost, NOW).with_range_tombstones(&fragments);
            for (s, k, v) in &versions {
                kv.push(&enc(*s, *k), v).unwrap();
            }
            let kept: Vec<(u64, Kind, Vec<u8>)> = kv
                .finish()
                .into_iter()
                .map(|(k, v)| {
                    let (_, s, t) = parse_encoded(&k).unwrap();
                    (s.0, Kind::from_u8(t).unwrap(), v)
                })
                .collect();
            /// What a reader at `at` finds: `Some(Some((seqno, live)))` for a version no
            /// tombstone hides, `Some(None)` if a range tombstone hides the key (every
            /// deeper version is older, so hidden too), `None` to fall through.
            fn outcome(
                versions: &[(u64, Kind, Vec<u8>)],
                tombs: &[RangeTombstone],
                at: u64,
            ) -> Option<Option<(u64, bool)>> {
                let newest_tomb = tombs.iter().map(|t| t.seqno.0).filter(|t| *t <= at).max();
                match (first(versions, at), newest_tomb) {
                    (Some((s, _)), Some(t)) if t > s => Some(None),
                    (Some(found), _) => Some(Some(found)),
                    (None, Some(_)) => Some(None),
                    (None, None) => None,
                }
            }
            let live = |o: Option<Option<(u64, bool)>>| o.flatten().filter(|(_, l)| *l);
            let newest = versions[0].0.max(range_seqnos.iter().copied().max().unwrap_or(0));
            let readers = snaps.iter().copied().chain([newest, newest + 5]);
            for at in readers {
                let before = outcome(&versions, &tombstones, at);
                let after = outcome(&kept, &carried, at);
                if bottommost {
                    prop_assert_eq!(live(after), live(before), "reader at {}", at);
                } else {
                    prop_assert_eq!(after, before, "reader at {}", at);
                }
            }
        }
    }
}
