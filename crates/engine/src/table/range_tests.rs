//! Tables with range tombstones: round trip, the boundaries the table claims, a table of
//! tombstones only, and damage to the range-tombstone block.
#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]

use std::path::PathBuf;
use std::sync::Arc;

use super::*;
use crate::error::Error;
use crate::files::FileType;
use crate::files::TableId;
use crate::fs::{FileSystem, MemFs};
use crate::key::{split_encoded, InternalKey, Kind, SeqNo};
use crate::rangedel::RangeTombstone;

fn path() -> PathBuf {
    PathBuf::from("/").join(FileType::Table.name(9))
}

fn rt(start: &[u8], end: &[u8], seqno: u64) -> RangeTombstone {
    RangeTombstone::new(start.to_vec(), end.to_vec(), SeqNo(seqno)).unwrap()
}

fn write(fs: &MemFs, points: &[(&[u8], u64)], tombstones: &[RangeTombstone]) -> TableMeta {
    write_as(fs, points, tombstones, Layout::Local)
}

fn write_as(
    fs: &MemFs,
    points: &[(&[u8], u64)],
    tombstones: &[RangeTombstone],
    filter_layout: Layout,
) -> TableMeta {
    let options = TableOptions {
        filter_layout,
        ..TableOptions::default()
    };
    let mut w = Writer::create(fs, &path(), TableId(9), &options).unwrap();
    for (k, s) in points {
        let key = InternalKey::new(*k, SeqNo(*s), Kind::Put).encode().unwrap();
        w.add(&key, b"v").unwrap();
    }
    for t in tombstones.iter().rev() {
        w.add_range_tombstone(t.clone());
    }
    w.finish().unwrap()
}

fn open(fs: &MemFs) -> crate::error::Result<Reader> {
    Reader::open(fs, &path(), TableId(9), Arc::new(BlockCache::new(1 << 20)))
}

fn user(k: &[u8]) -> &[u8] {
    split_encoded(k).unwrap().0
}

#[test]
fn tombstones_round_trip_and_widen_the_claimed_range() {
    let fs = MemFs::new();
    let tombstones = [rt(b"a", b"c", 7), rt(b"b", b"k\0", 8)];
    let meta = write(&fs, &[(b"b", 3), (b"d", 4)], &tombstones);
    assert!(meta.has_range_tombstones());
    assert_eq!(user(&meta.smallest), b"a");
    assert_eq!(user(&meta.largest), b"k", "the end k\\0 is claimed as k");
    assert_eq!((meta.min_seqno, meta.max_seqno), (SeqNo(3), SeqNo(8)));
    let reader = open(&fs).unwrap();
    assert_eq!(reader.range_tombstones(), &tombstones);
    assert_eq!(reader.meta(), &meta);
    assert_eq!(reader.verify().unwrap(), 2);
    // Point lookups are unaffected: the tombstones are applied by the read path.
    assert!(reader.get(b"b", SeqNo(10)).unwrap().is_some());
    let bytes = crate::fs::read_all(&fs, &path()).unwrap();
    let version = u32::from_le_bytes(
        bytes[bytes.len() - 16..bytes.len() - 12]
            .try_into()
            .unwrap(),
    );
    assert_eq!(version, FORMAT_VERSION);

    // Without tombstones the table claims only its entries; it is version 3 all the same.
    let fs = MemFs::new();
    let meta = write(&fs, &[(b"b", 3)], &[]);
    assert!(!meta.has_range_tombstones());
    let bytes = crate::fs::read_all(&fs, &path()).unwrap();
    assert_eq!(bytes[bytes.len() - 16], 3);

    // With a spread filter, as earlier builds wrote: version 2 with tombstones, 1 without,
    // and both read back.
    for (tombstones, version) in [(vec![rt(b"a", b"c", 5)], 2), (vec![], 1)] {
        let fs = MemFs::new();
        write_as(&fs, &[(b"b", 3)], &tombstones, Layout::Spread);
        let bytes = crate::fs::read_all(&fs, &path()).unwrap();
        assert_eq!(bytes[bytes.len() - 16], version);
        let reader = open(&fs).unwrap();
        assert_eq!(reader.verify().unwrap(), 1);
        assert!(reader.get(b"b", SeqNo(10)).unwrap().is_some());
        assert!(reader.may_contain(b"b"));
    }
}

#[test]
fn a_table_of_tombstones_only_holds_one_implied_point_tombstone() {
    let fs = MemFs::new();
    let meta = write(&fs, &[], &[rt(b"m", b"", 5), rt(b"c", b"d", 6)]);
    assert_eq!(meta.entries, 1);
    assert_eq!(user(&meta.smallest), b"c");
    assert_eq!(
        user(&meta.largest),
        crate::rangedel::max_user_key().as_slice()
    );
    let reader = open(&fs).unwrap();
    assert_eq!(
        reader.get(b"c", SeqNo(9)).unwrap(),
        Some((SeqNo(6), Kind::Delete, vec![]))
    );
    assert_eq!(reader.range_tombstones().len(), 2);
    // No tombstones and no entries is still refused.
    let w = Writer::create(
        &fs,
        &PathBuf::from("/other.sst"),
        TableId(1),
        &TableOptions::default(),
    )
    .unwrap();
    assert!(matches!(w.finish(), Err(Error::InvalidArgument(_))));
}

#[test]
fn the_writer_refuses_point_entries_of_kind_range_delete() {
    let fs = MemFs::new();
    let mut w = Writer::create(&fs, &path(), TableId(9), &TableOptions::default()).unwrap();
    let key = InternalKey::new(b"k", SeqNo(1), Kind::RangeDelete)
        .encode()
        .unwrap();
    assert!(matches!(w.add(&key, b"z"), Err(Error::InvalidArgument(_))));
}

#[test]
fn every_flipped_byte_of_the_range_block_is_corruption() {
    let fs = MemFs::new();
    write(&fs, &[(b"b", 3)], &[rt(b"a", b"c", 7), rt(b"x", b"", 8)]);
    let reader = open(&fs).unwrap();
    let handle = reader.properties_range_handle().unwrap();
    drop(reader);
    let start = handle.offset as usize;
    let end = handle.end().unwrap() as usize;
    for i in start..end {
        fs.corrupt(&path(), i, 0x20).unwrap();
        match open(&fs) {
            Err(e) => {
                let c = e.as_corruption().unwrap_or_else(|| panic!("byte {i}: {e}"));
                assert_eq!(c.offset, handle.offset, "byte {i}");
            }
            Ok(_) => panic!("flip of range-block byte {i} went unnoticed"),
        }
        fs.corrupt(&path(), i, 0x20).unwrap();
    }
    assert!(open(&fs).is_ok());
    let _ = fs.list_dir(std::path::Path::new("/"));
}
