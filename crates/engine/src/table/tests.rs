//! Tests of whole tables: the writer and reader against a sorted-vector model, the
//! writer's refusals, the cache as the reader uses it, and the worked example of
//! FORMAT.md §9. Damaged files are tested in `corruption_tests.rs`.
#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]

#[path = "corruption_tests.rs"]
mod corruption;

use std::cmp::Ordering;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use proptest::prelude::*;

use super::*;
use crate::checksum::Checksum;
use crate::cursor::Cursor;
use crate::error::{FileKind, Reason};
use crate::files::FileType;
use crate::files::TableId;
use crate::fs::{read_all, FileSystem, MemFs, Op, StdFs};
use crate::key::{compare_encoded, split_encoded, InternalKey, Kind, SeqNo};

type Entry = (Vec<u8>, Vec<u8>);

fn ik(user: &[u8], seqno: u64, kind: Kind) -> Vec<u8> {
    InternalKey::new(user, SeqNo(seqno), kind).encode().unwrap()
}

fn table_path() -> PathBuf {
    PathBuf::from("/").join(FileType::Table.name(7))
}

/// Sorts by `compare_encoded` and drops repeated keys.
fn normalize(mut entries: Vec<Entry>) -> Vec<Entry> {
    entries.sort_by(|a, b| compare_encoded(&a.0, &b.0));
    entries.dedup_by(|a, b| a.0 == b.0);
    entries
}

fn write(fs: &dyn FileSystem, path: &Path, options: &TableOptions, entries: &[Entry]) -> TableMeta {
    let mut w = Writer::create(fs, path, TableId(7), options).unwrap();
    for (k, v) in entries {
        w.add(k, v).unwrap();
    }
    assert_eq!(w.entries(), entries.len() as u64);
    let estimate = w.estimated_size();
    let meta = w.finish().unwrap();
    if options.compression == Compression::None {
        assert!(
            meta.file_size >= estimate,
            "estimate {estimate} > {}",
            meta.file_size
        );
    }
    meta
}

fn open(fs: &dyn FileSystem, path: &Path, cache_bytes: usize) -> Result<Arc<Reader>> {
    open_with(fs, path, cache_bytes, Access::Pread)
}

fn open_with(
    fs: &dyn FileSystem,
    path: &Path,
    cache_bytes: usize,
    access: Access,
) -> Result<Arc<Reader>> {
    let cache = Arc::new(BlockCache::new(cache_bytes));
    Reader::open_with(fs, path, TableId(7), cache, access).map(Arc::new)
}

/// The cursor's entry, checked to be the same through `Cursor::current` as through
/// `valid`, `key` and `value`.
fn current(c: &impl Cursor) -> Option<Entry> {
    let each = c.valid().then(|| (c.key().to_vec(), c.value().to_vec()));
    let joint = c.current().map(|(k, v)| (k.to_vec(), v.to_vec()));
    assert_eq!(
        joint, each,
        "Cursor::current disagrees with valid, key and value"
    );
    each
}

/// Every entry, forwards then backwards (both must agree).
fn scan(reader: &Arc<Reader>, fill: bool) -> Result<Vec<Entry>> {
    let mut it = if fill {
        reader.iter()
    } else {
        reader.iter_no_fill()
    };
    let mut forward = Vec::new();
    it.seek_to_first()?;
    while let Some(e) = current(&it) {
        forward.push(e);
        it.next()?;
    }
    let mut backward = Vec::new();
    it.seek_to_last()?;
    while let Some(e) = current(&it) {
        backward.push(e);
        it.prev()?;
    }
    backward.reverse();
    assert_eq!(forward, backward, "forward and backward scans differ");
    Ok(forward)
}

fn model_get(model: &[Entry], user: &[u8], snapshot: u64) -> Option<(SeqNo, Kind, Vec<u8>)> {
    model.iter().find_map(|(k, v)| {
        let (u, trailer) = split_encoded(k).unwrap();
        (u == user && trailer >> 8 <= snapshot).then(|| {
            (
                SeqNo(trailer >> 8),
                Kind::from_u8(trailer as u8).unwrap(),
                v.clone(),
            )
        })
    })
}

/// Index of the first model entry `>= target`.
fn lower_bound(model: &[Entry], target: &[u8]) -> usize {
    model.partition_point(|(k, _)| compare_encoded(k, target) == Ordering::Less)
}

/// Checks seek, seek_for_prev and a few steps either way from each against the model.
fn check_seeks(reader: &Arc<Reader>, model: &[Entry], targets: &[Vec<u8>]) {
    let mut it = reader.iter();
    for target in targets {
        let lb = lower_bound(model, target);
        it.seek(target).unwrap();
        assert_eq!(current(&it), model.get(lb).cloned(), "seek");
        for step in 1..4 {
            it.next().unwrap();
            assert_eq!(
                current(&it),
                model.get(lb + step).cloned(),
                "next after seek"
            );
        }
        let exact = model.get(lb).is_some_and(|(k, _)| k == target);
        let le = if exact { Some(lb) } else { lb.checked_sub(1) };
        it.seek_for_prev(target).unwrap();
        assert_eq!(current(&it), le.map(|i| model[i].clone()), "seek_for_prev");
        for step in 1..4 {
            it.prev().unwrap();
            let want = le
                .and_then(|i| i.checked_sub(step))
                .map(|i| model[i].clone());
            assert_eq!(current(&it), want, "prev after seek_for_prev");
        }
        // Changing direction right after a seek.
        it.seek(target).unwrap();
        if it.valid() {
            it.prev().unwrap();
            let want = lb.checked_sub(1).map(|i| model[i].clone());
            assert_eq!(current(&it), want, "prev after seek");
        }
        it.seek_for_prev(target).unwrap();
        if let Some(i) = le {
            it.next().unwrap();
            assert_eq!(
                current(&it),
                model.get(i + 1).cloned(),
                "next after seek_for_prev"
            );
        }
    }
}

/// Every block compression this build writes.
#[cfg(feature = "zstd")]
fn compressions() -> impl Strategy<Value = Compression> {
    prop_oneof![
        Just(Compression::None),
        Just(Compression::Snappy),
        Just(Compression::Zstd),
        Just(Compression::Lz4)
    ]
}

/// Every block compression this build writes (no Zstandard without the `zstd` feature).
#[cfg(not(feature = "zstd"))]
fn compressions() -> impl Strategy<Value = Compression> {
    prop_oneof![
        Just(Compression::None),
        Just(Compression::Snappy),
        Just(Compression::Lz4)
    ]
}

fn arb_options() -> impl Strategy<Value = TableOptions> {
    (
        prop_oneof![Just(64usize), Just(256), Just(4096)],
        prop_oneof![Just(1usize), Just(16)],
        compressions(),
        prop_oneof![Just(0u32), Just(10)],
        // Both filter layouts: version 3 tables, and the versions 1 and 2 earlier builds
        // wrote.
        prop_oneof![Just(Layout::Local), Just(Layout::Spread)],
    )
        .prop_map(
            |(block_size, restart_interval, compression, bits, filter_layout)| TableOptions {
                block_size,
                restart_interval,
                compression,
                zstd_level: 1,
                bloom_bits_per_key: bits,
                filter_layout,
            },
        )
}

fn arb_user_key() -> impl Strategy<Value = Vec<u8>> {
    // A tiny alphabet and short keys: many shared prefixes, empty keys, repeated keys.
    prop::collection::vec(
        prop_oneof![Just(0u8), Just(b'a'), Just(b'b'), Just(0xff)],
        0..4,
    )
}

fn arb_entries() -> impl Strategy<Value = Vec<Entry>> {
    let entry =
        (arb_user_key(), 0u64..20, any::<bool>(), 0usize..40).prop_map(|(u, s, put, vlen)| {
            let kind = if put { Kind::Put } else { Kind::Delete };
            let value = if put {
                vec![u.len() as u8 ^ 0x5a; vlen]
            } else {
                vec![]
            };
            (ik(&u, s, kind), value)
        });
    // Plus many versions of one key, so they span several small blocks.
    let versions = (arb_user_key(), 0usize..60).prop_map(|(u, n)| {
        (0..n as u64)
            .map(|s| {
                (
                    ik(&u, 100 + s, Kind::Put),
                    format!("version {s}").into_bytes(),
                )
            })
            .collect::<Vec<_>>()
    });
    (prop::collection::vec(entry, 1..150), versions).prop_map(|(mut a, b)| {
        a.extend(b);
        normalize(a)
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn round_trip_matches_the_model(
        model in arb_entries(),
        options in arb_options(),
        probes in prop::collection::vec((arb_user_key(), 0u64..180), 30),
    ) {
        let fs = MemFs::new();
        let meta = write(&fs, &table_path(), &options, &model);
        prop_assert_eq!(meta.entries, model.len() as u64);
        prop_assert_eq!(&meta.smallest, &model[0].0);
        prop_assert_eq!(&meta.largest, &model[model.len() - 1].0);
        prop_assert_eq!(meta.file_size, fs.file_len(&table_path()).unwrap());
        let reader = open(&fs, &table_path(), 1 << 20).unwrap();
        prop_assert_eq!(reader.meta(), &meta);
        prop_assert_eq!(scan(&reader, true).unwrap(), model.clone());
        prop_assert_eq!(reader.verify().unwrap(), model.len() as u64);

        let mut targets: Vec<Vec<u8>> = model.iter().map(|e| e.0.clone()).collect();
        for (u, s) in &probes {
            targets.push(ik(u, *s, Kind::Put));
            targets.push(ik(u, *s, Kind::Delete));
            targets.push(ik(u, SeqNo::MAX.0, Kind::Delete));
            targets.push(ik(u, 0, Kind::Put));
        }
        check_seeks(&reader, &model, &targets);

        for (u, s) in probes.iter().chain(model.iter().map(|(k, _)| {
            let (u, t) = split_encoded(k).unwrap();
            (u.to_vec(), t >> 8)
        }).collect::<Vec<_>>().iter()) {
            for snapshot in [*s, s.saturating_sub(1), s + 1, SeqNo::MAX.0] {
                prop_assert_eq!(
                    reader.get(u, SeqNo(snapshot)).unwrap(),
                    model_get(&model, u, snapshot),
                    "get {:?} at {}", u, snapshot
                );
            }
            if !reader.may_contain(u) {
                prop_assert!(model_get(&model, u, SeqNo::MAX.0).is_none(), "false negative");
            }
        }
    }
}

fn sample(n: u32) -> Vec<Entry> {
    normalize(
        (0..n)
            .flat_map(|i| {
                let user = format!("user{:04}", i / 3).into_bytes();
                let kind = if i % 5 == 0 { Kind::Delete } else { Kind::Put };
                let value = if kind == Kind::Put {
                    format!("value-{i}").into_bytes()
                } else {
                    vec![]
                };
                [(ik(&user, u64::from(i), kind), value)]
            })
            .collect(),
    )
}

#[test]
fn versions_of_one_key_spanning_many_blocks_are_found_at_every_snapshot() {
    let fs = MemFs::new();
    let options = TableOptions {
        block_size: 64,
        restart_interval: 4,
        ..TableOptions::default()
    };
    let mut model = vec![(ik(b"a", 1, Kind::Put), b"before".to_vec())];
    model.extend((0..200u64).map(|i| {
        (
            ik(b"key", 1000 - 3 * i, Kind::Put),
            i.to_le_bytes().to_vec(),
        )
    }));
    model.push((ik(b"z", 1, Kind::Put), b"after".to_vec()));
    let model = normalize(model);
    write(&fs, &table_path(), &options, &model);
    let reader = open(&fs, &table_path(), 0).unwrap();
    for snapshot in 0..1002 {
        assert_eq!(
            reader.get(b"key", SeqNo(snapshot)).unwrap(),
            model_get(&model, b"key", snapshot),
            "snapshot {snapshot}"
        );
    }
    assert_eq!(reader.get(b"ke", SeqNo::MAX).unwrap(), None);
    assert_eq!(reader.get(b"key\0", SeqNo::MAX).unwrap(), None);
}

#[test]
fn a_table_on_real_files_round_trips() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(FileType::Table.name(7));
    let model = sample(2000);
    let options = TableOptions {
        compression: if cfg!(feature = "zstd") {
            Compression::Zstd
        } else {
            Compression::Lz4
        },
        ..TableOptions::default()
    };
    let meta = write(&StdFs, &path, &options, &model);
    assert_eq!(meta.file_size, std::fs::metadata(&path).unwrap().len());
    assert_eq!((meta.entries, meta.tombstones), (2000, 400));
    // Through a map: the same answers, and the map outlives the file's name.
    let mapped = open_with(&StdFs, &path, 0, Access::Map).unwrap();
    assert!(mapped.is_mapped());
    assert_eq!(scan(&mapped, false).unwrap(), model);
    assert_eq!(mapped.verify().unwrap(), 2000);
    let reader = open(&StdFs, &path, 1 << 20).unwrap();
    assert!(!reader.is_mapped());
    std::fs::remove_file(&path).unwrap();
    assert_eq!(scan(&mapped, true).unwrap(), model);
    for (k, v) in model.iter().step_by(7) {
        let (user, trailer) = split_encoded(k).unwrap();
        let got = mapped.get(user, SeqNo(trailer >> 8)).unwrap().unwrap();
        assert_eq!((got.0, &got.2), (SeqNo(trailer >> 8), v));
    }
    assert_eq!(reader.id(), TableId(7));
    assert_eq!(reader.path(), path);
    assert_eq!(scan(&reader, false).unwrap(), model);
    assert_eq!(reader.verify().unwrap(), 2000);
    // Readers are shared across threads.
    let handles: Vec<_> = (0..2)
        .map(|t| {
            let reader = Arc::clone(&reader);
            std::thread::spawn(move || {
                for i in (t..2000u64).step_by(2) {
                    let user = format!("user{:04}", i / 3);
                    let got = reader.get(user.as_bytes(), SeqNo(i)).unwrap().unwrap();
                    assert_eq!(got.0, SeqNo(i));
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
}

/// Through a map, uncompressed blocks are read in place and never enter the block cache;
/// compressed ones still go through it. Reads in place verify each block's checksum the
/// first time: damage found then is reported whichever way the block is reached.
#[test]
fn mapped_uncompressed_blocks_are_read_in_place() {
    let model = sample(400);
    for compression in [Compression::None, Compression::Lz4] {
        let fs = MemFs::new();
        let options = TableOptions {
            block_size: 256,
            compression,
            ..TableOptions::default()
        };
        write(&fs, &table_path(), &options, &model);
        let cache = Arc::new(BlockCache::new(1 << 20));
        let reader = Reader::open_with(
            &fs,
            &table_path(),
            TableId(7),
            Arc::clone(&cache),
            Access::Map,
        )
        .map(Arc::new)
        .unwrap();
        for _ in 0..2 {
            assert_eq!(scan(&reader, true).unwrap(), model);
            for (k, v) in model.iter().step_by(3) {
                let (user, trailer) = split_encoded(k).unwrap();
                let got = reader.get(user, SeqNo(trailer >> 8)).unwrap().unwrap();
                assert_eq!(&got.2, v);
            }
        }
        let in_place = compression == Compression::None;
        assert_eq!(cache.used_bytes() == 0, in_place, "{compression:?}");
        assert_eq!(cache.hits() == 0, in_place, "{compression:?}");
        if in_place {
            // A walk keeps its one block cursor, moved from block to block in the map,
            // instead of making a cursor (and taking a reference to the map) per block.
            let mut it = reader.iter_no_fill();
            it.seek_to_first().unwrap();
            let mut blocks = 1;
            let mut offset = it.data_file_offset();
            let mut reloads = None;
            while it.valid() {
                reloads = it.data_reloads();
                it.next().unwrap();
                if it.valid() && it.data_file_offset() != offset {
                    offset = it.data_file_offset();
                    blocks += 1;
                }
            }
            assert!(blocks > 10, "{blocks} blocks");
            assert_eq!(reloads, Some(blocks - 1));
        }
    }
    // A damaged uncompressed block, reached by a get or a scan first.
    let fs = MemFs::new();
    let options = TableOptions {
        block_size: 256,
        compression: Compression::None,
        ..TableOptions::default()
    };
    let meta = write(&fs, &table_path(), &options, &model);
    let clean = open(&fs, &table_path(), 0).unwrap();
    let second = clean.handle_at(1).unwrap();
    fs.corrupt(&table_path(), second.offset as usize + 5, 0x10)
        .unwrap();
    // A key of the damaged block: one whose seek fails.
    let probe = open_with(&fs, &table_path(), 0, Access::Map).unwrap();
    let (user, trailer) = model
        .iter()
        .find(|e| probe.iter_no_fill().seek(&e.0).is_err())
        .map(|e| split_encoded(&e.0).unwrap())
        .unwrap();
    for get_first in [true, false] {
        let reader = open_with(&fs, &table_path(), 0, Access::Map).unwrap();
        let err = if get_first {
            reader.get(user, SeqNo(trailer >> 8)).unwrap_err()
        } else {
            scan(&reader, false).unwrap_err()
        };
        let c = err.as_corruption().unwrap();
        assert_eq!((c.file, c.offset), (FileKind::Table, second.offset));
        assert!(
            matches!(c.reason, Reason::Checksum { .. }),
            "{:?}",
            c.reason
        );
        // Still refused on the next read: a failed check is never remembered as passed.
        assert!(reader.get(user, SeqNo(trailer >> 8)).is_err());
        assert!(meta.file_size > second.offset);
    }
}

#[test]
fn cache_is_filled_by_iter_but_not_by_iter_no_fill() {
    let fs = MemFs::new();
    let options = TableOptions {
        block_size: 256,
        ..TableOptions::default()
    };
    let model = sample(300);
    write(&fs, &table_path(), &options, &model);
    let cache = Arc::new(BlockCache::new(1 << 20));
    let reader =
        Arc::new(Reader::open(&fs, &table_path(), TableId(7), Arc::clone(&cache)).unwrap());
    scan(&reader, false).unwrap();
    assert_eq!((cache.used_bytes(), cache.hits()), (0, 0));
    scan(&reader, true).unwrap();
    let used = cache.used_bytes();
    assert!(used > 0);
    let hits = cache.hits();
    scan(&reader, false).unwrap();
    assert!(
        cache.hits() > hits,
        "cached blocks are used by iter_no_fill"
    );
    assert_eq!(cache.used_bytes(), used);
    let (u, t) = split_encoded(&model[10].0).unwrap();
    assert!(reader.get(u, SeqNo(t >> 8)).unwrap().is_some());
    cache.retain(|(table, _)| table != 7);
    assert_eq!(cache.used_bytes(), 0);

    // A small budget is never exceeded.
    let small = Arc::new(BlockCache::new(2000));
    let reader =
        Arc::new(Reader::open(&fs, &table_path(), TableId(7), Arc::clone(&small)).unwrap());
    scan(&reader, true).unwrap();
    assert!(small.used_bytes() <= 2000 && small.used_bytes() > 0);
}

#[test]
fn reader_is_send_and_sync() {
    fn check<T: Send + Sync>() {}
    fn check_send<T: Send>() {}
    check::<Reader>();
    check_send::<TableIter>();
    check_send::<Writer>();
}

/// The bytes of FORMAT.md §9 (worked example): a version 1 table, as written with a
/// spread filter.
#[test]
fn encoding_matches_the_worked_example() {
    let fs = MemFs::new();
    let meta = write(
        &fs,
        &table_path(),
        &TableOptions {
            filter_layout: Layout::Spread,
            ..TableOptions::default()
        },
        &[(ik(b"k", 1, Kind::Put), b"v".to_vec())],
    );
    assert_eq!(meta.file_size, 182);
    let hex: String = read_all(&fs, &table_path())
        .unwrap()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let want = concat!(
        "0009016b0101000000000000760000000001000000", // data block
        "0050328848",                                 // its trailer
        "202020200000202006",                         // filter block
        "0048dcad4d",
        "0009026b010100000000000000150000000001000000", // index block
        "008ee7e8f6",
        "010101",
        "020100",
        "030102",
        "040101",
        "050101", // properties block
        "06096b0101000000000000",
        "07096b0101000000000000",
        "080101",
        "090100",
        "0a0101",
        "0087972c62",
        "1a00000000000000090000000000000028000000000000001600000000000000", // footer
        "43000000000000002e0000000000000001000000778f3175434149524e535354",
    );
    assert_eq!(hex, want);
}

/// The blob references a writer accumulates reach the properties block, survive a reopen
/// and pass `verify`; a table without them has no such property.
#[test]
fn blob_references_are_recorded_in_the_properties() {
    let fs = MemFs::new();
    let options = TableOptions::default();
    let mut w = Writer::create(&fs, &table_path(), TableId(7), &options).unwrap();
    for i in 0..10u32 {
        w.add(&ik(format!("k{i:02}").as_bytes(), 1, Kind::Put), b"v")
            .unwrap();
        if i % 3 == 0 {
            w.add_blob_ref(100 + u64::from(i % 2), 1000 * i);
        }
    }
    w.finish().unwrap();
    let r = open(&fs, &table_path(), 0).unwrap();
    let refs: Vec<(u64, BlobRef)> = r.blob_refs().iter().collect();
    assert_eq!(
        refs,
        vec![
            (
                100,
                BlobRef {
                    handles: 2,
                    bytes: 6000
                }
            ), // i = 0, 6
            (
                101,
                BlobRef {
                    handles: 2,
                    bytes: 12000
                }
            ), // i = 3, 9
        ]
    );
    assert_eq!(r.verify().unwrap(), 10);
    let plain = PathBuf::from("/").join(FileType::Table.name(8));
    let mut w = Writer::create(&fs, &plain, TableId(8), &options).unwrap();
    w.add(&ik(b"a", 1, Kind::Put), b"v").unwrap();
    w.finish().unwrap();
    let r = Reader::open(&fs, &plain, TableId(8), Arc::new(BlockCache::new(0))).unwrap();
    assert!(r.blob_refs().is_empty());
}

#[test]
fn a_long_scan_reads_ahead_and_still_checks_every_block() {
    let fs = MemFs::new();
    let options = TableOptions {
        block_size: 256,
        compression: Compression::Lz4,
        ..TableOptions::default()
    };
    let model = sample(3000);
    write(&fs, &table_path(), &options, &model);
    let reader = open(&fs, &table_path(), 0).unwrap();
    let mut index = reader.index_cursor();
    index.seek_to_first().unwrap();
    let mut blocks = Vec::new();
    while index.valid() {
        blocks.push(reader.handle(&index).unwrap());
        index.next().unwrap();
    }
    assert!(blocks.len() > 100, "{} blocks", blocks.len());

    // A scan either way returns every entry, with far fewer reads than blocks: forward it
    // reads ahead of itself, backward toward the file's start.
    for backward in [false, true] {
        let before = fs.op_count(Op::Read);
        let mut it = reader.iter_no_fill();
        let mut seen = Vec::new();
        if backward {
            it.seek_to_last().unwrap();
        } else {
            it.seek_to_first().unwrap();
        }
        while let Some(e) = current(&it) {
            seen.push(e);
            if backward {
                it.prev().unwrap();
            } else {
                it.next().unwrap();
            }
        }
        let reads = fs.op_count(Op::Read) - before;
        if backward {
            seen.reverse();
        }
        assert_eq!(seen, model, "backward {backward}");
        assert!(
            reads * 4 < blocks.len() as u64,
            "{reads} reads for {} blocks, backward {backward}",
            blocks.len()
        );
    }
    // Scans both ways and seeks agree with the model as before.
    assert_eq!(scan(&reader, false).unwrap(), model);

    // A damaged block deep in the read-ahead buffer is still reported, at its offset,
    // going either way.
    let bad = blocks[blocks.len() / 2];
    fs.corrupt(&table_path(), bad.offset as usize + 3, 0x40)
        .unwrap();
    let reader = open(&fs, &table_path(), 0).unwrap();
    for backward in [false, true] {
        let mut it = reader.iter_no_fill();
        if backward {
            it.seek_to_last().unwrap();
        } else {
            it.seek_to_first().unwrap();
        }
        let err = loop {
            let step = if backward { it.prev() } else { it.next() };
            match step {
                Ok(()) => assert!(
                    it.valid(),
                    "the scan (backward {backward}) ended before the damage"
                ),
                Err(e) => break e,
            }
        };
        let c = err.as_corruption().unwrap();
        assert_eq!(c.offset, bad.offset, "{err}");
        assert!(!it.valid());
    }
}

/// A scan prefetches the block after the one it loads by the index cursor's position
/// (`BlockCursor::restart_hint`): it must name the current entry after every move, or
/// the prefetch never fires.
#[test]
fn the_index_cursor_knows_its_position_both_ways() {
    let fs = MemFs::new();
    let options = TableOptions {
        block_size: 256,
        ..TableOptions::default()
    };
    write(&fs, &table_path(), &options, &sample(2000));
    let reader = open(&fs, &table_path(), 0).unwrap();
    let mut index = reader.index_cursor();
    let mut n = 0;
    index.seek_to_first().unwrap();
    while index.valid() {
        assert_eq!(index.restart_hint(), n);
        assert_eq!(reader.handle_at(n), Some(reader.handle(&index).unwrap()));
        index.next().unwrap();
        n += 1;
    }
    assert!(n > 50, "{n} blocks");
    index.seek_to_last().unwrap();
    while index.valid() {
        n -= 1;
        assert_eq!(index.restart_hint(), n);
        assert_eq!(reader.handle_at(n), Some(reader.handle(&index).unwrap()));
        index.prev().unwrap();
    }
    assert_eq!(n, 0);
}

#[test]
fn readahead_follows_runs_in_either_direction() {
    use super::reader::{Ahead, Readahead};
    let mut ra = Readahead::default();
    // Forward from the file's start (where a fresh run ends): blocks 0..10, 10..20, ...;
    // ahead from the second.
    let got: Vec<Ahead> = (0..4u64).map(|i| ra.note(i * 10, i * 10 + 10)).collect();
    assert_eq!(
        got,
        [Ahead::No, Ahead::Forward, Ahead::Forward, Ahead::Forward]
    );
    // A jump ends the run.
    assert_eq!(ra.note(500, 510), Ahead::No);
    // Backward from there: 490..500, 480..490, ...; ahead once two follow in a row.
    let got: Vec<Ahead> = (1..4u64)
        .map(|i| ra.note(500 - i * 10, 510 - i * 10))
        .collect();
    assert_eq!(got, [Ahead::No, Ahead::Backward, Ahead::Backward]);
    // Turning round starts a new run.
    assert_eq!(ra.note(480, 490), Ahead::No);
    // The same block again is neither.
    assert_eq!(ra.note(480, 490), Ahead::No);
}

/// The writer counts the entries that repeat the previous entry's user key (properties
/// tag 15), across block boundaries too; only a table with none reports each entry as the
/// only version of its key, `verify` recounts them, and the version-1 layout leaves the
/// count out (unknown: never distinct).
#[test]
fn repeated_user_keys_are_counted_and_only_distinct_tables_claim_single_versions() {
    let fs = MemFs::new();
    let options = TableOptions {
        block_size: 64,
        ..TableOptions::default()
    };
    let distinct: Vec<Entry> = (0..200u32)
        .map(|i| {
            (
                ik(format!("k{i:04}").as_bytes(), 7, Kind::Put),
                b"v".to_vec(),
            )
        })
        .collect();
    // Every fifth key also has an older version (a tombstone), some of them the first
    // entry of the next block.
    let mut versions = Vec::new();
    for (i, (k, v)) in distinct.iter().enumerate() {
        versions.push((k.clone(), v.clone()));
        if i % 5 == 0 {
            let (user, _) = split_encoded(k).unwrap();
            versions.push((ik(user, 3, Kind::Delete), Vec::new()));
        }
    }
    for (entries, repeats) in [(&distinct, 0u64), (&versions, 40)] {
        let meta = write(&fs, &table_path(), &options, entries);
        assert_eq!(meta.entries, entries.len() as u64);
        let r = open(&fs, &table_path(), 0).unwrap();
        assert_eq!(r.distinct_keys(), repeats == 0);
        assert_eq!(r.verify().unwrap(), entries.len() as u64);
        let mut c = r.iter();
        c.seek_to_first().unwrap();
        let mut seen = 0;
        while c.valid() {
            assert_eq!(c.only_version(), repeats == 0);
            seen += 1;
            c.next().unwrap();
        }
        assert_eq!(seen, entries.len());
        assert!(!c.only_version(), "not on an entry");
        fs.remove(&table_path()).unwrap();
    }
    let spread = TableOptions {
        filter_layout: Layout::Spread,
        ..options
    };
    write(&fs, &table_path(), &spread, &distinct);
    let r = open(&fs, &table_path(), 0).unwrap();
    assert!(
        !r.distinct_keys(),
        "a version-1 table does not record repeats"
    );
    assert_eq!(r.verify().unwrap(), distinct.len() as u64);
}
