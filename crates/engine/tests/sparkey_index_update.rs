//! Rebuilding an index that already exists: when it covers the whole log it is left
//! untouched (same file, same inode), and after an append it is extended incrementally,
//! keeping its seed, and serves every key, old and new.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

use std::os::unix::fs::MetadataExt;

use cairn::hash::{write_index, BuildKind, IndexOptions, LogOptions, LogWriter, Reader};

#[test]
fn an_up_to_date_index_is_untouched_and_an_appended_log_is_indexed_incrementally() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("u.spl");
    let idx = dir.path().join("u.spi");
    let mut w = LogWriter::create(&log, &LogOptions::default()).unwrap();
    for i in 0..1000u32 {
        w.put(format!("a{i}").as_bytes(), b"old").unwrap();
    }
    w.close().unwrap();
    let (kind, first) = write_index(&idx, &log, &IndexOptions::default()).unwrap();
    assert_eq!(kind, BuildKind::Fresh);
    let inode = std::fs::metadata(&idx).unwrap().ino();
    let bytes = std::fs::read(&idx).unwrap();

    let (kind, again) = write_index(&idx, &log, &IndexOptions::default()).unwrap();
    assert_eq!(kind, BuildKind::Unchanged);
    assert_eq!(again, first);
    assert_eq!(
        std::fs::metadata(&idx).unwrap().ino(),
        inode,
        "the file was not replaced"
    );
    assert_eq!(std::fs::read(&idx).unwrap(), bytes);

    let mut w = LogWriter::append(&log).unwrap();
    for i in 0..500u32 {
        w.put(format!("b{i}").as_bytes(), b"new").unwrap();
    }
    w.delete(b"a7").unwrap();
    w.close().unwrap();
    let (kind, updated) = write_index(&idx, &log, &IndexOptions::default()).unwrap();
    assert_eq!(kind, BuildKind::Incremental);
    assert_eq!(
        updated.hash_seed, first.hash_seed,
        "an incremental build keeps the seed"
    );
    assert_eq!(updated.num_entries, 1499);

    let r = Reader::open(&idx, &log).unwrap();
    for i in 0..1000u32 {
        let want = if i == 7 { None } else { Some(b"old".to_vec()) };
        assert_eq!(r.get(format!("a{i}").as_bytes()).unwrap(), want, "a{i}");
    }
    for i in 0..500u32 {
        assert_eq!(
            r.get(format!("b{i}").as_bytes()).unwrap(),
            Some(b"new".to_vec()),
            "b{i}"
        );
    }
}
