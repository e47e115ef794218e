//! Tests of [`super::BlockBuilder`], [`super::Block`] and [`super::BlockCursor`]: the
//! encoding, every cursor operation against a model, and damaged blocks.
#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]

use super::*;
use crate::key::{InternalKey, Kind, SeqNo};

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
    BlockCursor::new(
        Arc::new(Block::decode(raw).unwrap()),
        Arc::from(Path::new("t")),
        7,
    )
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
