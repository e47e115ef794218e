//! The options that shape a store's files are recorded in it: `Options::from_store`
//! returns the last writer's, a reopen with others replaces them, read-only opens and
//! `from_store` itself write nothing, and a directory without a store is refused.

#![allow(clippy::unwrap_used)]

use cairn::{Compression, Db, Durability, Error, Options};

fn app_options() -> Options {
    Options::default()
        .compression(Compression::Snappy)
        .table_size(3 << 20)
        .blob_threshold(Some(2048))
        .memtable_size(1 << 20)
        .durability(Durability::Buffered)
}

#[test]
fn the_last_writers_options_are_recorded_and_read_back() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s");
    Db::open(&store, app_options()).unwrap().close().unwrap();

    let read = Options::from_store(&store).unwrap();
    assert_eq!(read.compression, Compression::Snappy);
    assert_eq!(read.table_size, 3 << 20);
    assert_eq!(read.blob_threshold, Some(2048));
    assert_eq!(read.memtable_size, 1 << 20);
    // Durability belongs to each process: not recorded.
    assert_eq!(read.durability, Options::default().durability);

    // A read-only open, a follower and `from_store` leave the record (and every file)
    // as it is.
    let names = || {
        let mut n: Vec<_> = std::fs::read_dir(&store)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        n.sort();
        n
    };
    let before = names();
    Db::open_read_only(&store, Options::default())
        .unwrap()
        .close()
        .unwrap();
    Db::open_follower(&store, Options::default())
        .unwrap()
        .close()
        .unwrap();
    assert_eq!(names(), before);
    assert_eq!(
        Options::from_store(&store).unwrap().compression,
        Compression::Snappy
    );

    // A writer with other options replaces the record.
    let other = app_options()
        .compression(Compression::Zstd(3))
        .blob_threshold(None);
    Db::open(&store, other).unwrap().close().unwrap();
    let read = Options::from_store(&store).unwrap();
    assert_eq!(read.compression, Compression::Zstd(3));
    assert_eq!(read.blob_threshold, None);
}

#[test]
fn a_directory_without_a_store_has_no_options() {
    let dir = tempfile::tempdir().unwrap();
    assert!(matches!(
        Options::from_store(dir.path()),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        Options::from_store(dir.path().join("missing")),
        Err(Error::InvalidArgument(_))
    ));
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}
