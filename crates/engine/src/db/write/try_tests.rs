//! A write that must not wait, declined at the log (its lock held, as the log thread holds
//! it through a periodic fsync): nothing reaches the log, the memtable or the seqnos, and a
//! reopen finds nothing of it.
#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]

use std::path::Path;
use std::sync::Arc;

use super::*;
use crate::db::Db;
use crate::fs::MemFs;
use crate::options::Options;

fn put(ks: KeyspaceId, key: &str) -> WriteBatch {
    let mut batch = WriteBatch::new();
    batch.put(ks, key.as_bytes(), b"v").unwrap();
    batch
}

#[test]
fn a_try_declined_at_the_log_writes_nothing() {
    let fs = Arc::new(MemFs::new());
    let options = Options::default().durability(Durability::Buffered);
    let db = Db::open_with_fs(fs.clone(), Path::new("/db"), options.clone()).unwrap();
    let ks = db.keyspace("k").unwrap();
    ks.insert("a", "1").unwrap();
    let inner = &db.inner;
    let (seqno, wal_len) = (db.last_seqno(), inner.log.wal_len.load(Ordering::Relaxed));
    {
        let _held = inner.log.wal.lock();
        for durability in [Durability::Buffered, Durability::None] {
            let got = try_write(inner, put(ks.id, "b"), durability).unwrap();
            assert!(
                got.is_none(),
                "{durability:?}: declined while the log is held"
            );
        }
    }
    assert_eq!(db.last_seqno(), seqno);
    assert_eq!(inner.log.wal_len.load(Ordering::Relaxed), wal_len);
    assert_eq!(ks.get("b").unwrap(), None);
    // Free again, the same write goes in: at once, unless the log thread holds the lock
    // for a moment of its own (then a later try does).
    let went_in = (0..1000).any(|_| {
        let got = try_write(inner, put(ks.id, "c"), Durability::Buffered).unwrap();
        if got.is_none() {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        got.is_some()
    });
    assert!(went_in, "a free log took the write");
    drop(ks);
    db.close().unwrap();
    let db = Db::open_with_fs(fs, Path::new("/db"), options).unwrap();
    let ks = db.keyspace("k").unwrap();
    assert_eq!(ks.get("a").unwrap(), Some(b"1".to_vec()));
    assert_eq!(ks.get("b").unwrap(), None);
    assert_eq!(ks.get("c").unwrap(), Some(b"v".to_vec()));
    drop(ks);
    db.close().unwrap();
}
