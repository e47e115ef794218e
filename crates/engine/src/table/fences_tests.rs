#![allow(
    clippy::unwrap_used,
    clippy::indexing_slicing,
    clippy::big_endian_bytes
)] // big-endian keys sort as integers

use std::path::Path;
use std::sync::Arc;

use proptest::prelude::*;

use super::*;
use crate::cursor::Cursor;
use crate::key::{seek_key, InternalKey, Kind, SeqNo};
use crate::table::block::{Block, BlockBuilder, BlockCursor};

/// Keys shorter than `max` bytes from a four-letter alphabet that includes the fences'
/// padding value (0): prefixes of each other and equal fences are common.
fn tiny_key(max: usize) -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(
        prop_oneof![Just(0u8), Just(1u8), Just(b'a'), Just(0xffu8)],
        0..max,
    )
}

fn ik(user: &[u8], seqno: u64) -> Vec<u8> {
    InternalKey::new(user, SeqNo(seqno), Kind::Put)
        .encode()
        .unwrap()
}

/// A block of `keys` (user keys, sorted and distinct) with a restart every `interval`.
fn block_of(keys: &[Vec<u8>], interval: usize) -> Block {
    let mut b = BlockBuilder::new(interval);
    for (i, k) in keys.iter().enumerate() {
        b.add(&ik(k, 100), &(i as u32).to_le_bytes());
    }
    Block::decode(b.finish()).unwrap()
}

/// Where a plain seek (a binary search of every restart key, no fences, no guide) and a
/// fenced seek land, as `(valid, key)`.
fn both_seeks(block: &Block, fences: &Fences, target: &[u8]) -> ((bool, Vec<u8>), (bool, Vec<u8>)) {
    let path: &Path = Path::new("t.sst");
    let mut fenced = BlockCursor::new(block, path, 0);
    fenced.seek_in(target, fences.candidates(target)).unwrap();
    (
        plain_seek(block, target),
        (fenced.valid(), fenced.key().to_vec()),
    )
}

/// Where a binary search of every restart key lands, as `(valid, key)`.
fn plain_seek(block: &Block, target: &[u8]) -> (bool, Vec<u8>) {
    let mut plain = BlockCursor::new(block, Path::new("t.sst"), 0);
    plain.seek_in(target, (0, usize::MAX)).unwrap();
    (plain.valid(), plain.key().to_vec())
}

/// Where `Cursor::seek` lands (from the block's guide when it has one), as `(valid, key)`.
fn guided_seek(block: &Block, target: &[u8]) -> (bool, Vec<u8>) {
    let mut guided = BlockCursor::new(block, Path::new("t.sst"), 0);
    guided.seek(target).unwrap();
    (guided.valid(), guided.key().to_vec())
}

/// Where `Cursor::seek_for_prev` lands, and where the last key `<= target` is.
fn prev_seeks(
    block: &Block,
    keys: &[Vec<u8>],
    target: &[u8],
) -> (Option<Vec<u8>>, Option<Vec<u8>>) {
    let mut c = BlockCursor::new(block, Path::new("t.sst"), 0);
    c.seek_for_prev(target).unwrap();
    let got = c.valid().then(|| c.key().to_vec());
    let model = keys
        .iter()
        .map(|k| ik(k, 100))
        .rfind(|k| crate::key::compare_encoded(k, target) != std::cmp::Ordering::Greater);
    (got, model)
}

#[test]
fn fences_skip_the_common_prefix_and_order_like_the_keys() {
    let keys: Vec<Vec<u8>> = (0..100u32)
        .map(|i| format!("user:{:08}", i * 7).into_bytes())
        .collect();
    let block = block_of(&keys, 1);
    let fences = Fences::build(&block).unwrap();
    assert_eq!(fences.common, b"user:00000".to_vec());
    assert!(fences.fences.windows(2).all(|w| w[0] < w[1]));
    // Exact keys, keys between, and keys outside the block's range.
    let mut targets: Vec<Vec<u8>> = keys.iter().map(|k| seek_key(k, SeqNo(200))).collect();
    targets.push(seek_key(b"user:00000350", SeqNo(5)));
    targets.push(seek_key(b"a", SeqNo(5)));
    targets.push(seek_key(b"user:", SeqNo(5)));
    targets.push(seek_key(b"zzz", SeqNo(5)));
    targets.push(seek_key(b"user:1", SeqNo(5)));
    for t in &targets {
        let (plain, fenced) = both_seeks(&block, &fences, t);
        assert_eq!(plain, fenced, "target {t:?}");
    }
}

#[test]
fn candidates_bound_the_search_tightly_for_distinct_prefixes() {
    let keys: Vec<Vec<u8>> = (0..1000u64)
        .map(|i| (i * 1000).to_be_bytes().to_vec())
        .collect();
    let block = block_of(&keys, 1);
    let fences = Fences::build(&block).unwrap();
    let (lo, hi) = fences.candidates(&seek_key(&500_500u64.to_be_bytes(), SeqNo(1)));
    assert_eq!((lo, hi), (500, 500));
    // An exact hit leaves its own restart and the one before it.
    let (lo, hi) = fences.candidates(&seek_key(&500_000u64.to_be_bytes(), SeqNo(1)));
    assert_eq!((lo, hi), (499, 500));
    assert_eq!(fences.candidates(&seek_key(b"", SeqNo(1))), (0, 0));
    assert_eq!(
        fences.candidates(&seek_key(&[0xff; 9], SeqNo(1))),
        (999, 999)
    );
}

#[test]
fn one_key_blocks_and_short_keys_work() {
    let block = block_of(&[b"k".to_vec()], 16);
    let fences = Fences::build(&block).unwrap();
    for t in [&b""[..], b"j", b"k", b"k\0", b"l"] {
        let (plain, fenced) = both_seeks(&block, &fences, &seek_key(t, SeqNo(200)));
        assert_eq!(plain, fenced);
    }
    // Keys that are prefixes of each other and keys with zero bytes (the padding value).
    let keys: Vec<Vec<u8>> = vec![
        b"a".to_vec(),
        b"a\0".to_vec(),
        b"a\0\0".to_vec(),
        b"a\0\x01".to_vec(),
        b"ab".to_vec(),
        b"abcdefghij".to_vec(),
        b"abcdefghijk".to_vec(),
        b"b".to_vec(),
    ];
    let block = block_of(&keys, 1);
    let fences = Fences::build(&block).unwrap();
    for k in &keys {
        for seq in [0, 100, 200] {
            let (plain, fenced) = both_seeks(&block, &fences, &seek_key(k, SeqNo(seq)));
            assert_eq!(plain, fenced, "target {k:?} at {seq}");
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// A fenced seek lands where a plain seek does, for any keys, restart interval and
    /// target (keys drawn from a small alphabet so prefixes and equal fences are common).
    #[test]
    fn fenced_seeks_agree_with_plain_seeks(
        mut keys in prop::collection::vec(tiny_key(12), 1..200),
        interval in 1usize..20,
        targets in prop::collection::vec((tiny_key(13), 0u64..300), 1..50),
    ) {
        keys.sort();
        keys.dedup();
        let block = block_of(&keys, interval);
        let fences = Fences::build(&block).unwrap();
        let arc = Arc::new(block);
        for (user, seq) in &targets {
            let t = seek_key(user, SeqNo(*seq));
            let (plain, fenced) = both_seeks(&arc, &fences, &t);
            prop_assert_eq!(&plain, &fenced);
            prop_assert_eq!(&plain, &guided_seek(&arc, &t));
            let (got, model) = prev_seeks(&arc, &keys, &t);
            prop_assert_eq!(got, model);
            // Raw probes shorter than a trailer are user keys for compare_encoded.
            let (plain, fenced) = both_seeks(&arc, &fences, user);
            prop_assert_eq!(&plain, &fenced);
            prop_assert_eq!(&plain, &guided_seek(&arc, user));
        }
    }

    /// Seeks from a block's guide land where a binary search of its restart keys does, for
    /// blocks with and without a guide (up to 40 restart points; common prefixes from
    /// none to longer than a guide keeps).
    #[test]
    fn guided_seeks_agree_with_plain_seeks(
        prefix_len in 0usize..30,
        mut suffixes in prop::collection::vec(tiny_key(8), 1..80),
        interval in 1usize..6,
        targets in prop::collection::vec((tiny_key(9), 0u64..300, any::<bool>()), 1..40),
    ) {
        let prefix = vec![b'p'; prefix_len];
        suffixes.sort();
        suffixes.dedup();
        let keys: Vec<Vec<u8>> = suffixes.iter().map(|s| [&prefix[..], s].concat()).collect();
        let block = block_of(&keys, interval);
        for (suffix, seq, prefixed) in &targets {
            let user = if *prefixed { [&prefix[..], suffix].concat() } else { suffix.clone() };
            let t = seek_key(&user, SeqNo(*seq));
            prop_assert_eq!(plain_seek(&block, &t), guided_seek(&block, &t));
            let (got, model) = prev_seeks(&block, &keys, &t);
            prop_assert_eq!(got, model);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// Where the fences alone place a target among an index-like block's entries (one
    /// restart each), it is the number of entries below the target; ties give no answer.
    #[test]
    fn first_at_or_after_counts_the_entries_below_the_target(
        prefix_len in 0usize..12,
        mut suffixes in prop::collection::vec(tiny_key(10), 1..120),
        targets in prop::collection::vec((tiny_key(11), 0u64..300, any::<bool>()), 1..40),
    ) {
        let prefix = vec![b'p'; prefix_len];
        suffixes.sort();
        suffixes.dedup();
        let keys: Vec<Vec<u8>> = suffixes.iter().map(|s| [&prefix[..], s].concat()).collect();
        let block = block_of(&keys, 1);
        let fences = Fences::build(&block).unwrap();
        for (suffix, seq, prefixed) in &targets {
            let user = if *prefixed { [&prefix[..], suffix].concat() } else { suffix.clone() };
            let t = seek_key(&user, SeqNo(*seq));
            let below = keys
                .iter()
                .filter(|k| crate::key::compare_encoded(&ik(k, 100), &t) == std::cmp::Ordering::Less)
                .count();
            if let Some(i) = fences.first_at_or_after(&t) {
                prop_assert_eq!(i, below, "target {:?}", user);
            } else {
                // Undecided only when a key's fence equals the target's.
                prop_assert!(keys.iter().any(|k| k.starts_with(&fences.common)
                    && user.starts_with(&fences.common)
                    && fence_of(k, fences.common.len()) == fence_of(&user, fences.common.len())));
            }
        }
    }
}

/// Prefixes of key families sharing 1 to 24 bytes: runs of equal fences, and runs
/// within runs.
const FAMILIES: [&[u8]; 4] = [
    b"counter:",
    b"key:0000000",
    b"p",
    b"key:00000000000000000000",
];

/// `suffix` after family `family`'s prefix (none past the last family).
fn family_key(family: usize, suffix: &[u8]) -> Vec<u8> {
    let prefix: &[u8] = FAMILIES.get(family).copied().unwrap_or_default();
    [prefix, suffix].concat()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// Keys in families that share long prefixes (runs of equal fences, fences within
    /// runs, runs within runs): where the fences place a target, it is the number of
    /// entries below it.
    #[test]
    fn first_at_or_after_counts_below_the_target_in_runs(
        mut keys in prop::collection::vec(
            (0..FAMILIES.len(), tiny_key(10)).prop_map(|(f, suffix)| family_key(f, &suffix)),
            1..300,
        ),
        targets in prop::collection::vec((0..=FAMILIES.len(), tiny_key(11), 0u64..300), 1..60),
    ) {
        keys.sort();
        keys.dedup();
        let block = block_of(&keys, 1);
        let fences = Fences::build(&block).unwrap();
        for (family, suffix, seq) in &targets {
            let user = family_key(*family, suffix);
            let t = seek_key(&user, SeqNo(*seq));
            let below = keys
                .iter()
                .filter(|k| crate::key::compare_encoded(&ik(k, 100), &t) == std::cmp::Ordering::Less)
                .count();
            if let Some(i) = fences.first_at_or_after(&t) {
                prop_assert_eq!(i, below, "target {:?}", user);
            }
            let (plain, fenced) = both_seeks(&block, &fences, &t);
            prop_assert_eq!(plain, fenced, "target {:?}", user);
        }
    }

    /// Seeks narrowed by the fences of runs land where plain seeks do, for blocks of keys
    /// in families with long shared prefixes at any restart interval.
    #[test]
    fn seeks_in_runs_agree_with_plain_seeks(
        mut keys in prop::collection::vec(
            (0..FAMILIES.len(), tiny_key(10)).prop_map(|(f, suffix)| family_key(f, &suffix)),
            1..300,
        ),
        interval in 1usize..20,
        targets in prop::collection::vec((0..=FAMILIES.len(), tiny_key(11), 0u64..300), 1..60),
    ) {
        keys.sort();
        keys.dedup();
        let block = block_of(&keys, interval);
        let fences = Fences::build(&block).unwrap();
        for (family, suffix, seq) in &targets {
            let user = family_key(*family, suffix);
            for t in [seek_key(&user, SeqNo(*seq)), user.clone()] {
                let (plain, fenced) = both_seeks(&block, &fences, &t);
                prop_assert_eq!(plain, fenced, "target {:?}", t);
            }
        }
    }
}

#[test]
fn runs_of_equal_fences_are_decided_by_their_own_fences() {
    // Two families with no common prefix: every key of a family has the same first 8
    // bytes, so the block's fences tie within each family.
    let mut keys: Vec<Vec<u8>> = (0..500u32)
        .flat_map(|i| {
            [
                format!("counter:{:012}", i * 7).into_bytes(),
                format!("key:{:012}", i * 7).into_bytes(),
            ]
        })
        .collect();
    keys.sort();
    let fences = Fences::build(&block_of(&keys, 1)).unwrap();
    assert!(fences.common.is_empty());
    let mut decided = 0;
    for i in 0..3500u32 {
        for family in ["counter:", "key:"] {
            let user = format!("{family}{i:012}").into_bytes();
            let t = seek_key(&user, SeqNo(1));
            let below = keys.partition_point(|k| k.as_slice() < user.as_slice());
            if let Some(at) = fences.first_at_or_after(&t) {
                assert_eq!(at, below, "{}", String::from_utf8_lossy(&user));
                decided += 1;
            } else {
                assert!(keys.binary_search(&user).is_ok(), "only a key itself ties");
            }
        }
    }
    // Every target but the 1,000 that are keys of the block.
    assert_eq!(decided, 7000 - 1000);
    // Seeks are narrowed as with distinct prefixes: to one restart point, or for a key of
    // the block to its own and the one before it.
    for family in ["counter:", "key:"] {
        let (lo, hi) = fences.candidates(&seek_key(
            format!("{family}000000001000").as_bytes(),
            SeqNo(1),
        ));
        assert_eq!(lo, hi, "{family}");
        let (lo, hi) = fences.candidates(&seek_key(
            format!("{family}000000001001").as_bytes(),
            SeqNo(1),
        ));
        assert_eq!(hi, lo + 1, "{family}");
    }
}

#[test]
fn first_at_or_after_decides_distinct_keys_without_reading_them() {
    let keys: Vec<Vec<u8>> = (0..1000u64)
        .map(|i| (i * 1000).to_be_bytes().to_vec())
        .collect();
    let fences = Fences::build(&block_of(&keys, 1)).unwrap();
    assert_eq!(
        fences.first_at_or_after(&seek_key(&500_500u64.to_be_bytes(), SeqNo(1))),
        Some(501)
    );
    assert_eq!(fences.first_at_or_after(&seek_key(b"", SeqNo(1))), Some(0));
    assert_eq!(
        fences.first_at_or_after(&seek_key(&[0xff; 9], SeqNo(1))),
        Some(1000)
    );
    // A target whose user key is a key of the block ties with its fence.
    assert_eq!(
        fences.first_at_or_after(&seek_key(&500_000u64.to_be_bytes(), SeqNo(1))),
        None
    );
}

#[test]
fn small_blocks_have_guides_and_large_or_long_prefixed_ones_do_not() {
    let numbered = |n: u32, prefix: &str| -> Vec<Vec<u8>> {
        (0..n)
            .map(|i| format!("{prefix}{i:06}").into_bytes())
            .collect()
    };
    assert!(Guide::build(&block_of(&numbered(16, "k"), 1))
        .unwrap()
        .is_some());
    assert!(Guide::build(&block_of(&numbered(17, "k"), 1))
        .unwrap()
        .is_none());
    assert!(Guide::build(&block_of(&numbered(257, "k"), 16))
        .unwrap()
        .is_none());
    assert!(Guide::build(&block_of(&numbered(256, "k"), 16))
        .unwrap()
        .is_some());
    // The keys share their prefix and "00000": 23 bytes are more than a guide keeps.
    let long = "x".repeat(18);
    assert!(Guide::build(&block_of(&numbered(10, &long), 1))
        .unwrap()
        .is_none());
    let shorter = "x".repeat(17);
    assert!(Guide::build(&block_of(&numbered(10, &shorter), 1))
        .unwrap()
        .is_some());
}
