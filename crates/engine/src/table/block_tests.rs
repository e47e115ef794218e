//! Tests of [`super::BlockBuilder`], [`super::Block`] and [`super::BlockCursor`]: the
//! encoding, every cursor operation against a model, and damaged blocks.
#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]

use super::*;
use crate::key::{InternalKey, Kind, SeqNo};
use proptest::prelude::*;

fn ik(user: &[u8], seqno: u64) -> Vec<u8> {
    InternalKey::new(user, SeqNo(seqno), Kind::Put)
        .encode()
        .unwrap()
}

fn build(entries: &[(Vec<u8>, Vec<u8>)], interval: usize) -> Vec<u8> {
    let mut b = BlockBuilder::new(interval);
    for (k, v) in entries {
        b.add(k, v);
    }
    let raw = b.finish();
    assert!(b.is_empty());
    raw
}

fn cursor(raw: Vec<u8>) -> BlockCursor {
    BlockCursor::new(Block::decode(raw).unwrap(), Arc::from(Path::new("t")), 7)
}

fn sample() -> Vec<(Vec<u8>, Vec<u8>)> {
    (0..40u32)
        .map(|i| {
            (
                ik(format!("key{:03}", i * 2).as_bytes(), 5),
                i.to_le_bytes().to_vec(),
            )
        })
        .collect()
}

#[test]
fn encoding_matches_the_documented_grammar() {
    let raw = build(&[(ik(b"ab", 1), b"x".to_vec()), (ik(b"ac", 1), vec![])], 16);
    let mut want = vec![0, 10, 1];
    want.extend_from_slice(&ik(b"ab", 1));
    want.push(b'x');
    want.extend_from_slice(&[1, 9, 0]);
    want.extend_from_slice(&ik(b"ac", 1)[1..]);
    want.extend_from_slice(&0u32.to_le_bytes());
    want.extend_from_slice(&1u32.to_le_bytes());
    assert_eq!(raw, want);
}

#[test]
fn every_cursor_operation_agrees_with_the_model() {
    let entries = sample();
    for interval in [1, 2, 3, 16, 100] {
        let mut c = cursor(build(&entries, interval));
        assert!(!c.valid());
        c.seek_to_first().unwrap();
        for (k, v) in &entries {
            assert_eq!((c.key(), c.value()), (&k[..], &v[..]));
            c.next().unwrap();
        }
        assert!(!c.valid());
        c.seek_to_last().unwrap();
        for (k, _) in entries.iter().rev() {
            assert_eq!(c.key(), &k[..]);
            c.prev().unwrap();
        }
        assert!(!c.valid());
        for i in 0..=80u32 {
            let target = ik(format!("key{i:03}").as_bytes(), 5);
            let ge = entries
                .iter()
                .find(|(k, _)| compare_encoded(k, &target) != Ordering::Less);
            c.seek(&target).unwrap();
            assert_eq!(c.valid().then(|| c.key().to_vec()), ge.map(|e| e.0.clone()));
            let le = entries
                .iter()
                .rev()
                .find(|(k, _)| compare_encoded(k, &target) != Ordering::Greater);
            c.seek_for_prev(&target).unwrap();
            assert_eq!(c.valid().then(|| c.key().to_vec()), le.map(|e| e.0.clone()));
        }
    }
}

#[test]
fn a_mapped_block_must_lie_inside_its_map() {
    let raw = build(&sample(), 4);
    let len = raw.len();
    let map = Arc::new(Map::copy_of(raw));
    assert!(Block::decode_mapped(Arc::clone(&map), 0, len).is_ok());
    for (start, len) in [(1, len), (0, len + 1), (usize::MAX, 2), (len, 1)] {
        let got = Block::decode_mapped(Arc::clone(&map), start, len).err();
        assert_eq!(got, Some(Reason::Truncated), "{start}+{len}");
    }
}

/// A cursor moved to another block of its map walks it exactly as a cursor made for that
/// block; it refuses a block of another map (untouched) and a damaged one (as an error).
#[test]
fn a_cursor_moves_between_blocks_of_one_map() {
    let first: Vec<_> = sample();
    let second: Vec<_> = (0..30u8)
        .map(|i| {
            (
                ik(&[b'q', i], u64::from(i) + 1),
                vec![i; usize::from(i % 5)],
            )
        })
        .collect();
    let (a, b) = (build(&first, 4), build(&second, 3));
    let mut bytes = a.clone();
    bytes.extend_from_slice(&b);
    // A third copy of `a` whose restart count is damaged.
    let mut bad = a.clone();
    let n = bad.len();
    bad[n - 4] = 0xff;
    bytes.extend_from_slice(&bad);
    let map = Arc::new(Map::copy_of(bytes));
    let block = Block::decode_mapped(Arc::clone(&map), 0, a.len()).unwrap();
    let mut c = BlockCursor::new(block, Arc::<Path>::from(Path::new("t")), 0);
    c.seek_to_last().unwrap();
    assert!(c.valid());
    // Another map, even with the same bytes: refused, the cursor left where it was.
    let other = Arc::new(Map::copy_of(map.bytes().to_vec()));
    assert!(!c.reload_mapped(&other, a.len(), b.len(), 9).unwrap());
    assert_eq!(c.key(), first.last().unwrap().0.as_slice());
    // The second block: walked forward and backward as decoded on its own.
    assert!(c.reload_mapped(&map, a.len(), b.len(), 77).unwrap());
    assert!(!c.valid());
    assert_eq!(c.file_offset(), 77);
    let mut forward = Vec::new();
    c.seek_to_first().unwrap();
    while c.valid() {
        forward.push((c.key().to_vec(), c.value().to_vec()));
        c.next().unwrap();
    }
    assert_eq!(forward, second);
    c.seek_to_last().unwrap();
    assert_eq!(c.key(), second.last().unwrap().0.as_slice());
    // Outside the map, or damaged: errors.
    let end = map.bytes().len();
    assert!(c.reload_mapped(&map, end - 2, 3, 5).is_err());
    let err = c
        .reload_mapped(&map, a.len() + b.len(), bad.len(), 123)
        .unwrap_err();
    let corruption = err.as_corruption().unwrap();
    assert_eq!(corruption.offset, 123);
    assert!(!c.valid());
}

#[test]
fn framing_damage_is_refused() {
    assert_eq!(Block::decode(vec![1, 2]).err(), Some(Reason::Truncated));
    assert!(
        Block::decode(0u32.to_le_bytes().to_vec()).is_err(),
        "no restarts"
    );
    let mut raw = build(&sample(), 4);
    let n = raw.len();
    raw[n - 4] = 0xff; // restart count far beyond the block
    assert_eq!(Block::decode(raw).err(), Some(Reason::Truncated));
    let mut raw = build(&sample(), 4);
    let first_restart = raw.len() - 4 - 4 * 10;
    raw[first_restart] = 1; // first restart must be 0
    assert!(Block::decode(raw).is_err());
    // Each later restart must lie after the one before it and inside the entries.
    let good = build(&sample(), 4);
    let restart_at = |i: usize| good.len() - 4 - 4 * 10 + 4 * i;
    let entries_end = u32::try_from(good.len() - 4 - 4 * 10).unwrap();
    let third = u32::from_le_bytes(good[restart_at(2)..restart_at(3)].try_into().unwrap());
    let second = u32::from_le_bytes(good[restart_at(1)..restart_at(2)].try_into().unwrap());
    for (i, bad) in [
        (2, second),
        (2, second - 1),
        (3, third - 1),
        (9, entries_end),
    ] {
        let mut raw = good.clone();
        raw[restart_at(i)..restart_at(i) + 4].copy_from_slice(&bad.to_le_bytes());
        assert_eq!(
            Block::decode(raw).err(),
            Some(Reason::BadEntry(
                "block restart offsets do not increase from 0 inside the entries"
            )),
            "restart {i} set to {bad}"
        );
    }
    assert!(Block::decode(good).is_ok());
}

#[test]
fn entry_damage_is_corruption_never_a_panic() {
    let raw = build(&sample(), 4);
    let entries_end = raw.len() - 4 - 4 * 10;
    for i in 0..entries_end {
        for mask in [0x01u8, 0x80, 0xff] {
            let mut bad = raw.clone();
            bad[i] ^= mask;
            let mut c = cursor(bad);
            let mut walk = || -> Result<()> {
                c.seek_to_first()?;
                while c.valid() {
                    c.next()?;
                }
                c.seek_to_last()?;
                while c.valid() {
                    c.prev()?;
                }
                c.seek(&ik(b"key041", 0))?;
                c.seek_for_prev(&ik(b"key041", 0))
            };
            if let Err(e) = walk() {
                let c = e.as_corruption().unwrap();
                assert_eq!((c.file, c.offset), (FileKind::Table, 7));
            }
        }
    }
}

/// A sorted `Vec` standing in for a block: the position a cursor should be at.
struct Model {
    entries: Vec<(Vec<u8>, Vec<u8>)>,
    at: Option<usize>,
}

impl Model {
    fn apply(&mut self, op: &Op) {
        let n = self.entries.len();
        let keys = || self.entries.iter().map(|e| &e.0[..]);
        self.at = match op {
            Op::First => (n > 0).then_some(0),
            Op::Last => n.checked_sub(1),
            Op::Seek(t) => keys().position(|k| compare_encoded(k, t) != Ordering::Less),
            Op::SeekForPrev(t) => keys().rposition(|k| compare_encoded(k, t) != Ordering::Greater),
            Op::Next => self.at.map(|i| i + 1).filter(|&i| i < n),
            Op::Prev => self.at.and_then(|i| i.checked_sub(1)),
        };
    }

    fn current(&self) -> Option<(&[u8], &[u8])> {
        let (k, v) = self.entries.get(self.at?)?;
        Some((k, v))
    }
}

#[derive(Debug, Clone)]
enum Op {
    First,
    Last,
    Seek(Vec<u8>),
    SeekForPrev(Vec<u8>),
    Next,
    Prev,
}

fn apply(c: &mut BlockCursor, op: &Op) -> Result<()> {
    match op {
        Op::First => c.seek_to_first(),
        Op::Last => c.seek_to_last(),
        Op::Seek(t) => c.seek(t),
        Op::SeekForPrev(t) => c.seek_for_prev(t),
        Op::Next => c.next(),
        Op::Prev => c.prev(),
    }
}

/// Sorted, distinct internal keys sharing a prefix of `prefix_len` bytes (long prefixes
/// make the entry lengths multi-byte varints), with values of up to 200 bytes.
fn entries_strategy() -> impl Strategy<Value = Vec<(Vec<u8>, Vec<u8>)>> {
    (
        0usize..140,
        proptest::collection::btree_map(
            (proptest::collection::vec(0u8..4, 0..6), 0u64..4),
            prop_oneof![
                4 => proptest::collection::vec(any::<u8>(), 0..8),
                1 => proptest::collection::vec(any::<u8>(), 120..200),
            ],
            1..90,
        ),
    )
        .prop_map(|(prefix_len, map)| {
            let mut entries: Vec<(Vec<u8>, Vec<u8>)> = map
                .into_iter()
                .map(|((suffix, seqno), value)| {
                    let mut user = vec![b'p'; prefix_len];
                    user.extend_from_slice(&suffix);
                    (ik(&user, seqno), value)
                })
                .collect();
            entries.sort_by(|a, b| compare_encoded(&a.0, &b.0));
            entries
        })
}

fn op_strategy(prefix_len_hint: usize) -> impl Strategy<Value = Op> {
    let target =
        (proptest::collection::vec(0u8..5, 0..7), 0u64..5).prop_map(move |(suffix, seqno)| {
            let mut user = vec![b'p'; prefix_len_hint];
            user.extend_from_slice(&suffix);
            ik(&user, seqno)
        });
    prop_oneof![
        1 => Just(Op::First),
        1 => Just(Op::Last),
        2 => target.clone().prop_map(Op::Seek),
        2 => target.prop_map(Op::SeekForPrev),
        4 => Just(Op::Next),
        6 => Just(Op::Prev),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]
    /// Any sequence of moves over a block, at any restart interval, decoded with or without
    /// its guide or read in place from a map, lands where the same moves over a sorted
    /// `Vec` land, in both directions and across direction changes.
    #[test]
    fn random_moves_agree_with_the_model(
        (entries, ops) in entries_strategy().prop_flat_map(|entries| {
            // Targets share the keys' prefix (no user key byte or kind byte is a `p`).
            let prefix_len = entries[0].0.iter().take_while(|&&b| b == b'p').count();
            let ops = proptest::collection::vec(op_strategy(prefix_len), 1..120);
            (Just(entries), ops)
        }),
        interval in prop_oneof![Just(1usize), Just(2), 3usize..20, Just(16), Just(1000)],
        how in 0..3u8,
    ) {
        // With and without the guide (`Block::decode_unguided`, and `decode_mapped` for a
        // block in the middle of a map): seeks search the restart points either way.
        let raw = build(&entries, interval);
        let block = match how {
            0 => Block::decode(raw),
            1 => Block::decode_unguided(raw),
            _ => {
                let len = raw.len();
                let mut file = vec![0xa5; 13];
                file.extend_from_slice(&raw);
                file.extend_from_slice(&[0x5a; 7]);
                Block::decode_mapped(Arc::new(Map::copy_of(file)), 13, len)
            }
        };
        let mut c = BlockCursor::new(block.unwrap(), Arc::from(Path::new("t")), 7);
        let mut model = Model { entries, at: None };
        for op in &ops {
            apply(&mut c, op).unwrap();
            model.apply(op);
            let got = c.valid().then(|| (c.key(), c.value()));
            prop_assert_eq!(got, model.current(), "after {:?}", op);
        }
    }
}

#[test]
fn a_backward_walk_decodes_each_entry_about_once() {
    let entries: Vec<_> = (0..200u32)
        .map(|i| (ik(format!("key{i:05}").as_bytes(), 1), vec![i as u8]))
        .collect();
    for interval in [1, 2, 16, 1000] {
        let mut c = cursor(build(&entries, interval));
        c.seek_to_last().unwrap();
        let mut seen = 1;
        while c.valid() {
            c.prev().unwrap();
            seen += usize::from(c.valid());
        }
        assert_eq!(seen, entries.len());
        // seek_to_last decodes the last interval once; every other interval is decoded once
        // by the step that enters it.
        assert!(
            c.decoded <= entries.len() + interval.min(entries.len()),
            "interval {interval}: {} decodes for {} entries",
            c.decoded,
            entries.len()
        );
        // Mid-block: a seek_for_prev then a backward walk, also about once per entry.
        let before = c.decoded;
        c.seek_for_prev(&ik(b"key00150", 0)).unwrap();
        let mut steps = 0;
        while c.valid() {
            c.prev().unwrap();
            steps += 1;
        }
        assert_eq!(steps, 151);
        assert!(c.decoded - before <= 151 + 2 * interval.min(entries.len()));
    }
}

/// Encodes entries with the given framing as is, for blocks no builder would write.
fn raw_block(entries: &[(usize, &[u8], &[u8])], restarts: &[u32]) -> Vec<u8> {
    let mut raw = Vec::new();
    for (shared, delta, value) in entries {
        put_vlq(&mut raw, *shared as u64);
        put_vlq(&mut raw, delta.len() as u64);
        put_vlq(&mut raw, value.len() as u64);
        raw.extend_from_slice(delta);
        raw.extend_from_slice(value);
    }
    for r in restarts {
        raw.extend_from_slice(&r.to_le_bytes());
    }
    raw.extend_from_slice(&(restarts.len() as u32).to_le_bytes());
    raw
}

/// Walks backward from the last entry; the keys seen, or the error.
fn walk_back(c: &mut BlockCursor) -> Result<Vec<Vec<u8>>> {
    let mut keys = Vec::new();
    c.seek_to_last()?;
    while c.valid() {
        keys.push(c.key().to_vec());
        c.prev()?;
    }
    Ok(keys)
}

fn bad_entry(result: Result<Vec<Vec<u8>>>) -> Reason {
    let e = result.unwrap_err();
    let c = e.as_corruption().unwrap();
    assert_eq!((c.file, c.offset), (FileKind::Table, 7));
    c.reason.clone()
}

#[test]
fn damaged_entries_are_found_walking_backward() {
    let a = ik(b"aaa", 1);
    let b = ik(b"aab", 1);
    let d = ik(b"aad", 1);
    let full = |k: &[u8]| (0usize, k.to_vec());
    let tail = |k: &[u8]| (2usize, k[2..].to_vec());
    // Entries of 1-byte varints and the value "v"; restarts are given as entry numbers.
    let enc = |parts: &[(usize, Vec<u8>)], restarts: &[usize]| {
        let entries: Vec<(usize, &[u8], &[u8])> = parts
            .iter()
            .map(|(s, dk)| (*s, &dk[..], &b"v"[..]))
            .collect();
        let mut offsets = vec![0u32];
        for (_, dk) in parts {
            let last = *offsets.last().unwrap();
            offsets.push(last + 3 + dk.len() as u32 + 1);
        }
        let restarts: Vec<u32> = restarts.iter().map(|&i| offsets[i]).collect();
        raw_block(&entries, &restarts)
    };

    // Sound: restarts at entries 0 and 2.
    let good = enc(&[full(&a), tail(&b), full(&d)], &[0, 2]);
    assert_eq!(
        walk_back(&mut cursor(good)).unwrap(),
        vec![d.clone(), b.clone(), a.clone()]
    );

    // The restart entry 2 shares a prefix: found by the first step, seek_to_last.
    let raw = enc(&[full(&a), tail(&b), tail(&d)], &[0, 2]);
    assert!(matches!(
        bad_entry(walk_back(&mut cursor(raw))),
        Reason::BadEntry(_)
    ));

    // Entry 1 shares more than entry 0's key has: found stepping back into interval 0.
    let short = ik(b"a", 1); // 9 bytes; entry 1 claims 10 shared bytes
    let raw = enc(&[(0, short), (10, b[10..].to_vec()), full(&d)], &[0, 2]);
    let mut c = cursor(raw);
    c.seek_to_last().unwrap();
    assert_eq!(c.key(), &d[..]);
    assert!(matches!(bad_entry(walk_back(&mut c)), Reason::BadEntry(_)));

    // Entry 1 runs past restart 2 (it claims a longer value): the chain from restart 0
    // never reaches the entry at restart 2.
    let mut raw = enc(&[full(&a), tail(&b), full(&d)], &[0, 2]);
    let second = 3 + a.len() + 1;
    raw[second + 2] = 2; // value_len 1 -> 2
    let mut c = cursor(raw);
    c.seek_to_last().unwrap();
    assert_eq!(c.key(), &d[..]);
    assert!(matches!(bad_entry(walk_back(&mut c)), Reason::BadEntry(_)));

    // A key shorter than its trailer, reached by a backward step.
    let raw = enc(&[(0, b"abc".to_vec()), full(&d)], &[0, 1]);
    assert!(matches!(
        bad_entry(walk_back(&mut cursor(raw))),
        Reason::BadEntry(_)
    ));
}

#[test]
fn damaged_blocks_walk_backward_like_forward_or_fail() {
    let entries = sample();
    for interval in [1, 3, 16] {
        let raw = build(&entries, interval);
        let restarts = entries.len().div_ceil(interval);
        let entries_end = raw.len() - 4 - 4 * restarts;
        for i in 0..entries_end {
            for mask in [0x01u8, 0x10, 0x80] {
                let mut bad = raw.clone();
                bad[i] ^= mask;
                let mut c = cursor(bad);
                let mut forward = Vec::new();
                let fwd = (|| -> Result<()> {
                    c.seek_to_first()?;
                    while c.valid() {
                        forward.push((c.key().to_vec(), c.value().to_vec()));
                        c.next()?;
                    }
                    Ok(())
                })();
                let mut backward = Vec::new();
                let back = (|| -> Result<()> {
                    c.seek_to_last()?;
                    while c.valid() {
                        backward.push((c.key().to_vec(), c.value().to_vec()));
                        c.prev()?;
                    }
                    Ok(())
                })();
                for r in [&fwd, &back] {
                    if let Err(e) = r {
                        let c = e.as_corruption().unwrap();
                        assert_eq!((c.file, c.offset), (FileKind::Table, 7));
                    }
                }
                if fwd.is_ok() && back.is_ok() {
                    backward.reverse();
                    assert_eq!(
                        forward, backward,
                        "byte {i} ^ {mask:#x}, interval {interval}"
                    );
                }
            }
        }
    }
}
