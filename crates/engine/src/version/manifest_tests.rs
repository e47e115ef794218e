//! Tests of [`super::Manifest`]: framing, recovery rules, corruption, and crash safety
//! under simulated power loss and injected I/O errors.
#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]

use std::path::{Path, PathBuf};

use proptest::prelude::*;

use super::*;
use crate::error::Corruption;
use crate::files::TableId;
use crate::fs::{Fault, FaultKind, MemFs, Op};
use crate::key::{InternalKey, KeyspaceId, Kind, SeqNo};
use crate::table::TableMeta;
use crate::version::workload::{bump, dir, new_fs, shared, Workload};
use crate::version::NUM_LEVELS;

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn corruption(res: Result<Option<Recovered>>) -> Corruption {
    match res {
        Err(Error::Corruption(c)) => {
            assert_eq!(c.file, FileKind::Manifest);
            *c
        }
        other => panic!("expected corruption, got {other:?}"),
    }
}

fn recover(fs: &MemFs) -> Option<Recovered> {
    Manifest::recover(fs, &dir()).unwrap()
}

/// A manifest of `edits` generated edits after the start; returns the manifest, every
/// version (index k = after k records) and every record's start offset.
fn build(fs: &MemFs, seed: u64, edits: usize) -> (Manifest, Vec<Version>, Vec<u64>) {
    let mut w = Workload::new(seed);
    let mut v = w.start();
    let mut m = Manifest::create(shared(fs), &dir(), 1, &v).unwrap();
    let mut versions = vec![Version::empty(), v.clone()];
    let mut starts = vec![FILE_HEADER_LEN as u64];
    for _ in 0..edits {
        let e = w.next_edit(&v);
        v = v.apply(&e, &m.path(), m.len()).unwrap();
        starts.push(m.len());
        m.append(&e).unwrap();
        versions.push(v.clone());
    }
    (m, versions, starts)
}

/// The bytes of FORMAT.md §9 (worked example).
#[test]
fn encoding_matches_the_worked_example() {
    let snapshot = Edit {
        created_keyspaces: vec![(KeyspaceId(0), "default".into())],
        wal_min_id: Some(0),
        next_file_id: Some(3),
        flushed_seqno: Some(SeqNo(0)),
        next_keyspace_id: Some(1),
        ..Edit::default()
    };
    let key = |k: &[u8], s| InternalKey::new(k, SeqNo(s), Kind::Put).encode().unwrap();
    let flush = Edit {
        added_tables: vec![(
            KeyspaceId(0),
            0,
            TableMeta {
                id: TableId(3),
                file_size: 1024,
                smallest: key(b"a", 2),
                largest: key(b"b", 1),
                min_seqno: SeqNo(1),
                max_seqno: SeqNo(2),
                entries: 2,
                tombstones: 0,
                raw_bytes: 4,
            },
        )],
        wal_min_id: Some(4),
        next_file_id: Some(5),
        flushed_seqno: Some(SeqNo(2)),
        ..Edit::default()
    };
    let mut bytes = encode_file_header(2);
    assert_eq!(bytes.len(), FILE_HEADER_LEN);
    encode_record(&mut bytes, &snapshot.encode());
    assert_eq!(bytes.len(), FILE_HEADER_LEN + RECORD_HEADER_LEN + 18);
    encode_record(&mut bytes, &flush.encode());
    assert_eq!(bytes.len(), 50 + RECORD_HEADER_LEN + 37);
    assert_eq!(
        hex(&bytes),
        "434d414e0200000002000000000000009e144ea1\
         a1277955b773445412000000050006030700080101000764656661756c74\
         235d912aaca4d8aa2500000005040605070203000003800809610102000000000000\
         096201010000000000000102020004"
    );
    let r = decode_image(&bytes, Path::new("MANIFEST-2"), Some(2)).unwrap();
    assert_eq!(r.edits, 2);
    let ks = r.version.keyspace(KeyspaceId(0)).unwrap();
    assert_eq!(ks.name, "default");
    assert_eq!(ks.level(0)[0].id, TableId(3));
    assert_eq!(r.version.next_file_id(), 5);
}

#[test]
fn create_append_recover_round_trip() {
    let fs = new_fs();
    let (m, versions, _) = build(&fs, 7, 30);
    assert_eq!(m.id(), 1);
    assert!(!m.is_poisoned());
    assert_eq!(fs.file_len(&m.path()).unwrap(), m.len());
    let r = recover(&fs.crash()).unwrap();
    assert_eq!(&r.version, versions.last().unwrap());
    assert_eq!(r.manifest_id, 1);
    assert_eq!(r.edits, 31);
    assert_eq!(r.torn_tail_bytes, 0);
    assert_eq!(
        fs.list_dir(&dir()).unwrap(),
        vec!["CURRENT", "MANIFEST-00000000000000000001"]
    );
}

#[test]
fn recover_writes_nothing_and_is_repeatable() {
    let fs = new_fs();
    let (m, _, _) = build(&fs, 3, 5);
    // A torn tail: half a record.
    let mut rec = Vec::new();
    encode_record(
        &mut rec,
        &Edit {
            next_file_id: Some(1000),
            ..Edit::default()
        }
        .encode(),
    );
    fs.open_append(&m.path())
        .unwrap()
        .append(&rec[..7])
        .unwrap();
    let ops = [
        Op::Create,
        Op::Write,
        Op::Sync,
        Op::SyncDir,
        Op::Rename,
        Op::Remove,
    ];
    let before: Vec<u64> = ops.iter().map(|&op| fs.op_count(op)).collect();
    let first = recover(&fs).unwrap();
    let second = recover(&fs).unwrap();
    let after: Vec<u64> = ops.iter().map(|&op| fs.op_count(op)).collect();
    assert_eq!(before, after, "recovery made a mutating call");
    assert_eq!(first, second);
    assert_eq!(first.torn_tail_bytes, 7);
    assert_eq!(first.edits, 6);
    drop(m);
}

#[test]
fn rotation_moves_current_and_lists_obsolete_files() {
    let fs = new_fs();
    let (m, versions, _) = build(&fs, 11, 10);
    let v = bump(versions.last().unwrap());
    let new_id = v.next_file_id() - 1;
    let mut m2 = Manifest::create(shared(&fs), &dir(), new_id, &v).unwrap();
    assert_eq!(
        obsolete_files(&fs, &dir(), new_id).unwrap(),
        vec![FileType::Manifest.name(1)]
    );
    let e = Edit {
        next_file_id: Some(v.next_file_id() + 3),
        ..Edit::default()
    };
    let v2 = v.apply(&e, &m2.path(), m2.len()).unwrap();
    m2.append(&e).unwrap();
    let r = recover(&fs.crash()).unwrap();
    assert_eq!(r.manifest_id, new_id);
    assert_eq!(r.version, v2);
    assert_eq!(r.edits, 2, "a snapshot and one edit");
    drop(m);
}

#[test]
fn create_refuses_ids_that_are_not_fresh_and_replaces_leftovers() {
    let fs = new_fs();
    let v = Workload::new(1).start(); // next_file_id 2
    let err = Manifest::create(shared(&fs), &dir(), 2, &v).unwrap_err();
    assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
    let m = Manifest::create(shared(&fs), &dir(), 1, &v).unwrap();
    // The live manifest's id is never reused, even with a version that allows it.
    let v5 = v
        .apply(
            &Edit {
                next_file_id: Some(5),
                ..Edit::default()
            },
            Path::new("x"),
            0,
        )
        .unwrap();
    let err = Manifest::create(shared(&fs), &dir(), 1, &v5).unwrap_err();
    assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
    // Leftovers of an interrupted create (a partial manifest, a stray CURRENT.tmp).
    fs.create(&dir().join(FileType::Manifest.name(3)))
        .unwrap()
        .append(b"partial")
        .unwrap();
    fs.create(&dir().join(CURRENT_TMP))
        .unwrap()
        .append(b"junk")
        .unwrap();
    assert_eq!(
        obsolete_files(&fs, &dir(), 1).unwrap(),
        vec![CURRENT_TMP.to_string(), FileType::Manifest.name(3)]
    );
    let m3 = Manifest::create(shared(&fs), &dir(), 3, &v5).unwrap();
    assert_eq!(recover(&fs.crash()).unwrap().version, v5);
    drop((m, m3));
}

#[test]
fn refused_edits_do_not_poison_and_failures_do() {
    let fs = new_fs();
    let (mut m, _, _) = build(&fs, 5, 2);
    let bad_name = Edit {
        created_keyspaces: vec![(KeyspaceId(9), String::new())],
        ..Edit::default()
    };
    assert!(matches!(
        m.append(&bad_name),
        Err(Error::InvalidArgument(_))
    ));
    let bad_level = Edit {
        removed_tables: vec![(KeyspaceId(0), NUM_LEVELS, TableId(1))],
        ..Edit::default()
    };
    assert!(matches!(
        m.append(&bad_level),
        Err(Error::InvalidArgument(_))
    ));
    assert!(!m.is_poisoned());
    let len = m.len();
    for (op, kind) in [
        (Op::Write, FaultKind::Enospc),
        (Op::Sync, FaultKind::Eio),
        (Op::Sync, FaultKind::FsyncLost),
    ] {
        let fs = new_fs();
        let (mut m, versions, _) = build(&fs, 5, 2);
        fs.inject(Fault {
            op,
            nth: fs.op_count(op) + 1,
            kind,
            forever: false,
        });
        assert!(matches!(
            m.append(&Edit {
                next_file_id: Some(500),
                ..Edit::default()
            }),
            Err(Error::Io { .. })
        ));
        assert!(m.is_poisoned());
        assert!(
            matches!(m.append(&Edit::default()), Err(Error::Poisoned)),
            "{op:?}"
        );
        // What was acknowledged survives; the failed edit may or may not.
        let r = recover(&fs.crash()).unwrap();
        assert_eq!(&r.version, versions.last().unwrap(), "{op:?} {kind:?}");
    }
    assert_eq!(m.len(), len);
}

#[test]
fn recovery_without_current() {
    // No directory, an empty directory, or a lone leftover manifest: a new store.
    let fs = MemFs::new();
    assert!(Manifest::recover(&fs, &dir()).unwrap().is_none());
    let fs = new_fs();
    assert!(recover(&fs).is_none());
    fs.create(&dir().join("LOCK")).unwrap();
    fs.create(&dir().join(FileType::Manifest.name(1))).unwrap();
    fs.create(&dir().join(CURRENT_TMP)).unwrap();
    assert!(recover(&fs).is_none());
    // Store files without CURRENT: refuse to start over.
    for extra in [
        FileType::Manifest.name(2),
        "00000000000000000003.wal".into(),
        "00000000000000000004.sst".into(),
    ] {
        let fs = new_fs();
        fs.create(&dir().join(FileType::Manifest.name(1))).unwrap();
        fs.create(&dir().join(&extra)).unwrap();
        let c = corruption(Manifest::recover(&fs, &dir()));
        assert_eq!(c.path, dir().join(CURRENT), "{extra}");
        assert_eq!(
            c.reason,
            Reason::BadEntry("CURRENT is missing but the directory holds store files")
        );
    }
}

#[test]
fn current_naming_a_missing_manifest_is_corruption() {
    let fs = new_fs();
    let (m, _, _) = build(&fs, 1, 1);
    fs.remove(&m.path()).unwrap();
    let c = corruption(Manifest::recover(&fs, &dir()));
    assert_eq!(c.path, m.path());
    assert_eq!(
        c.reason,
        Reason::BadEntry("CURRENT names a manifest file that does not exist")
    );
}

#[test]
fn damaged_current_is_corruption() {
    let fs = new_fs();
    build(&fs, 1, 1);
    let current = dir().join(CURRENT);
    fs.corrupt(&current, 36, 0x01).unwrap(); // a checksum digit
    let c = corruption(Manifest::recover(&fs, &dir()));
    assert_eq!(c.path, current);
    assert_eq!(c.offset, 30);
    assert!(matches!(c.reason, Reason::Checksum { .. }));
    // An oversized CURRENT is refused before it is read.
    let fs = new_fs();
    fs.create(&current).unwrap().append(&[b'x'; 100]).unwrap();
    assert_eq!(
        corruption(Manifest::recover(&fs, &dir())).reason,
        Reason::LengthOutOfRange
    );
}

#[test]
fn flipped_byte_in_a_middle_record_is_corruption_at_that_record() {
    let fs = new_fs();
    let (m, versions, starts) = build(&fs, 21, 5);
    let path = m.path();
    // Record 3 (0-based): a byte of its payload, then of its length.
    for at in [starts[3] + 12, starts[3] + 9] {
        let fs = fs.crash();
        fs.corrupt(&path, at as usize, 0x40).unwrap();
        let c = corruption(Manifest::recover(&fs, &dir()));
        assert_eq!(c.path, path);
        assert_eq!(c.offset, starts[3], "flip at {at}");
        assert!(matches!(c.reason, Reason::Checksum { .. }));
    }
    // The same flip in the last record is a torn tail: that edit was never acknowledged.
    let fs = fs.crash();
    fs.corrupt(&path, starts[5] as usize + 12, 0x40).unwrap();
    let r = recover(&fs).unwrap();
    assert_eq!(r.version, versions[5]);
    assert_eq!(r.torn_tail_bytes, m.len() - starts[5]);
}

#[test]
fn every_flipped_byte_is_corruption_or_a_torn_last_record() {
    let fs = new_fs();
    let (m, versions, starts) = build(&fs, 4, 4);
    let data = read_all(&fs, &m.path()).unwrap();
    let path = Path::new("/db/MANIFEST-00000000000000000001");
    let last = *starts.last().unwrap() as usize;
    for i in 0..data.len() {
        let mut bad = data.clone();
        bad[i] ^= 0x10;
        match decode_image(&bad, path, Some(1)) {
            Ok(r) => {
                assert!(i >= last, "byte {i} accepted outside the last record");
                assert_eq!(r.edits, versions.len() - 2);
                assert_eq!(&r.version, &versions[versions.len() - 2]);
                assert_eq!(r.torn_tail.unwrap().0, last as u64);
            }
            Err(Error::Corruption(c)) => {
                assert!(i < last, "byte {i}: last record must read as torn");
                let record = starts.iter().rev().find(|&&s| s as usize <= i);
                match record {
                    Some(&s) => assert_eq!(c.offset, s, "byte {i}"),
                    None => assert!(c.offset < FILE_HEADER_LEN as u64, "byte {i}"),
                }
            }
            Err(e) => panic!("byte {i}: {e}"),
        }
    }
}

#[test]
fn truncation_at_every_length_keeps_the_complete_records() {
    let fs = new_fs();
    let (m, versions, starts) = build(&fs, 8, 4);
    let data = read_all(&fs, &m.path()).unwrap();
    let mut ends: Vec<usize> = starts.iter().skip(1).map(|&s| s as usize).collect();
    ends.push(data.len());
    for cut in 0..=data.len() {
        let res = decode_image(&data[..cut], &m.path(), Some(1));
        let complete = ends.iter().filter(|&&e| e <= cut).count();
        if complete == 0 {
            assert!(res.unwrap_err().is_corruption(), "cut {cut}");
            continue;
        }
        let r = res.unwrap();
        assert_eq!(r.edits, complete, "cut {cut}");
        assert_eq!(r.version, versions[complete]);
        assert_eq!(r.valid_end, ends[complete - 1] as u64);
        assert_eq!(
            r.torn_tail.is_some(),
            cut != ends[complete - 1],
            "cut {cut}"
        );
    }
}

/// Appends a raw, checksum-valid record to the live manifest of `fs`.
fn append_raw(fs: &MemFs, path: &Path, payload: &[u8]) -> u64 {
    let mut f = fs.open_append(path).unwrap();
    let at = f.len();
    let mut rec = Vec::new();
    encode_record(&mut rec, payload);
    f.append(&rec).unwrap();
    at
}

#[test]
fn checksum_valid_records_that_do_not_decode_or_apply_are_corruption() {
    // Even as the last record: no crash writes a checksum-valid bad record.
    let fs = new_fs();
    let (m, _, _) = build(&fs, 2, 2);
    let at = append_raw(&fs, &m.path(), &[0x00]);
    let c = corruption(Manifest::recover(&fs, &dir()));
    assert_eq!(
        (c.offset, c.reason),
        (at + RECORD_HEADER_LEN as u64, Reason::BadTag(0))
    );

    let fs = new_fs();
    let (m, _, _) = build(&fs, 2, 2);
    let drop_unknown = Edit {
        dropped_keyspaces: vec![KeyspaceId(77)],
        ..Edit::default()
    };
    let at = append_raw(&fs, &m.path(), &drop_unknown.encode());
    let c = corruption(Manifest::recover(&fs, &dir()));
    assert_eq!(c.offset, at);
    assert_eq!(
        c.reason,
        Reason::BadEntry("edit drops a keyspace that does not exist")
    );
}

/// Writes a manifest image and a CURRENT naming `id` straight to `fs`.
fn write_image(fs: &MemFs, id: u64, image: &[u8]) -> PathBuf {
    let path = dir().join(FileType::Manifest.name(id));
    fs.create(&path).unwrap().append(image).unwrap();
    fs.create(&dir().join(CURRENT))
        .unwrap()
        .append(&encode_current(id))
        .unwrap();
    path
}

#[test]
fn header_damage_and_foreign_versions() {
    let snapshot = Workload::new(1).start().snapshot_edit().encode();
    let image = |id: u64, version: u32| {
        let mut h = Vec::new();
        h.extend_from_slice(&MAGIC.to_le_bytes());
        h.extend_from_slice(&version.to_le_bytes());
        h.extend_from_slice(&id.to_le_bytes());
        let crc = Checksum::of(&h).masked();
        h.extend_from_slice(&crc.to_le_bytes());
        encode_record(&mut h, &snapshot);
        h
    };
    assert_eq!(
        &image(1, VERSION)[..FILE_HEADER_LEN],
        &encode_file_header(1)[..]
    );

    let fs = new_fs();
    write_image(&fs, 1, &image(1, VERSION + 1));
    assert!(matches!(
        Manifest::recover(&fs, &dir()),
        Err(Error::UnsupportedVersion {
            file: FileKind::Manifest,
            major: 3,
            ..
        })
    ));

    // Version 1 (written before tag 12 existed) is still read.
    let fs = new_fs();
    write_image(&fs, 1, &image(1, 1));
    let r = Manifest::recover(&fs, &dir()).unwrap().unwrap();
    assert_eq!(r.version, Workload::new(1).start());

    let fs = new_fs();
    write_image(&fs, 1, &image(6, VERSION));
    let c = corruption(Manifest::recover(&fs, &dir()));
    assert_eq!(c.offset, 8);
    assert!(matches!(
        c.reason,
        Reason::HeaderField {
            field: "file_id",
            ..
        }
    ));

    let fs = new_fs();
    write_image(&fs, 1, &image(1, VERSION)[..FILE_HEADER_LEN]);
    let c = corruption(Manifest::recover(&fs, &dir()));
    assert_eq!(
        (c.offset, c.reason),
        (20, Reason::BadEntry("manifest holds no snapshot record"))
    );

    let fs = new_fs();
    let mut torn_first = image(1, VERSION);
    torn_first.truncate(torn_first.len() - 1);
    write_image(&fs, 1, &torn_first);
    assert_eq!(corruption(Manifest::recover(&fs, &dir())).offset, 20);

    let fs = new_fs();
    write_image(&fs, 1, b"CMA");
    assert_eq!(
        corruption(Manifest::recover(&fs, &dir())).reason,
        Reason::Truncated
    );

    // next_file_id must stay above the manifest's own id.
    let fs = new_fs();
    write_image(&fs, 2, &image(2, VERSION)); // the snapshot says next_file_id 2
    assert_eq!(
        corruption(Manifest::recover(&fs, &dir())).reason,
        Reason::BadEntry("next_file_id is not above the manifest's own id")
    );
}

#[test]
fn a_valid_record_inside_a_torn_payload_is_not_taken_for_a_following_one() {
    // A table boundary holds user key bytes, which may be anything, including the bytes
    // of a valid manifest record.
    let fs = new_fs();
    let (m, versions, _) = build(&fs, 2, 1);
    let v = versions.last().unwrap();
    let mut inner = Vec::new();
    encode_record(
        &mut inner,
        &Edit {
            next_file_id: Some(4000),
            ..Edit::default()
        }
        .encode(),
    );
    let mut upper = inner.clone();
    upper.push(0xff);
    let key = |k: &[u8], s| InternalKey::new(k, SeqNo(s), Kind::Put).encode().unwrap();
    let meta = TableMeta {
        id: TableId(v.next_file_id()),
        file_size: 1,
        smallest: key(&inner, 2),
        largest: key(&upper, 1),
        min_seqno: SeqNo(1),
        max_seqno: SeqNo(2),
        entries: 2,
        tombstones: 0,
        raw_bytes: 2,
    };
    let edit = Edit {
        added_tables: vec![(KeyspaceId(0), 0, meta)],
        next_file_id: Some(v.next_file_id() + 1),
        ..Edit::default()
    };
    let mut rec = Vec::new();
    encode_record(&mut rec, &edit.encode());
    // Torn: everything but the record's last byte reached the disk.
    fs.open_append(&m.path())
        .unwrap()
        .append(&rec[..rec.len() - 1])
        .unwrap();
    let data = read_all(&fs, &m.path()).unwrap();
    let embedded = data.windows(inner.len()).position(|w| w == inner).unwrap();
    assert!(
        frame_at(&data, embedded).is_ok(),
        "the embedded record is valid"
    );
    let r = recover(&fs).unwrap();
    assert_eq!(&r.version, v);
    assert_eq!(r.torn_tail_bytes, rec.len() as u64 - 1);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Random valid edit sequences, with rotations, recover to the same version.
    #[test]
    fn random_edit_sequences_recover_exactly(seed in any::<u64>(), edits in 0usize..40, rotate_every in 1usize..25) {
        let fs = new_fs();
        let mut w = Workload::new(seed);
        let mut v = w.start();
        let mut m = Manifest::create(shared(&fs), &dir(), 1, &v).unwrap();
        let mut since_rotation = 1;
        for i in 0..edits {
            let e = w.next_edit(&v);
            v = v.apply(&e, &m.path(), m.len()).unwrap();
            m.append(&e).unwrap();
            since_rotation += 1;
            if i % rotate_every == rotate_every - 1 {
                v = bump(&v);
                m = Manifest::create(shared(&fs), &dir(), v.next_file_id() - 1, &v).unwrap();
                since_rotation = 1;
            }
        }
        let r = recover(&fs.crash()).unwrap();
        prop_assert_eq!(&r.version, &v);
        prop_assert_eq!(r.edits, since_rotation);
        prop_assert_eq!(r.manifest_id, m.id());
        prop_assert_eq!(obsolete_files(&fs, &dir(), m.id()).unwrap().len(), edits / rotate_every);
    }
}
