//! Online backups and packs of a store that several threads keep writing to, under each
//! durability mode: the copy must be exactly the store at one seqno, at or after every
//! write acknowledged before the backup began, with every batch whole and no write
//! missing before a later one; and it must pass verification.
#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]

mod ordered_common;

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use cairn::{Db, Durability, FileKind, Keyspace, Options};
use ordered_common::{collect, tiny};

const THREADS: usize = 3;

/// Per thread `t`, batch `i` (from 1) writes three keys at once: `a{t}` and `b{t}` set to
/// `i`, and `log{t}-{i}`. So a store at any seqno has `a{t} == b{t} == v` and exactly the
/// log keys `1..=v` for some `v`, and its seqno is `3 *` the sum of the `v`.
struct Writers {
    stop: Arc<AtomicBool>,
    acked: Arc<Vec<AtomicU64>>,
    handles: Vec<thread::JoinHandle<()>>,
}

fn start_writers(db: &Db, ks: &Keyspace) -> Writers {
    let stop = Arc::new(AtomicBool::new(false));
    let acked: Arc<Vec<AtomicU64>> = Arc::new((0..THREADS).map(|_| AtomicU64::new(0)).collect());
    let handles = (0..THREADS)
        .map(|t| {
            let (db, ks, stop, acked) = (db.clone(), ks.clone(), stop.clone(), acked.clone());
            thread::spawn(move || {
                let mut i = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    i += 1;
                    let mut b = db.batch();
                    let v = format!("{i:08}");
                    b.insert(&ks, format!("a{t}"), &v);
                    b.insert(&ks, format!("b{t}"), &v);
                    b.insert(&ks, format!("log{t}-{v}"), "x".repeat(40));
                    b.commit().unwrap();
                    acked[t].store(i, Ordering::Release);
                }
            })
        })
        .collect();
    Writers {
        stop,
        acked,
        handles,
    }
}

impl Writers {
    fn wait_for(&self, each: u64) {
        while self.acked.iter().any(|a| a.load(Ordering::Acquire) < each) {
            thread::sleep(Duration::from_millis(1));
        }
    }

    fn acked(&self) -> Vec<u64> {
        self.acked
            .iter()
            .map(|a| a.load(Ordering::Acquire))
            .collect()
    }

    fn finish(self) {
        self.stop.store(true, Ordering::Relaxed);
        for h in self.handles {
            h.join().unwrap();
        }
    }
}

/// Checks that the store in `dir` is the workload's state at exactly `seqno`, with every
/// thread at least at `at_least`; returns each thread's count.
fn check_copy(dir: &Path, options: &Options, seqno: u64, at_least: &[u64]) -> Vec<u64> {
    let db = Db::open(dir, options.clone()).unwrap();
    assert_eq!(
        db.last_seqno(),
        seqno,
        "the copy holds exactly the writes up to its seqno"
    );
    let ks = db.keyspace("k").unwrap();
    let mut total = 0;
    let mut counts = Vec::new();
    for (t, &floor) in at_least.iter().enumerate() {
        let a = ks.get(format!("a{t}")).unwrap();
        let b = ks.get(format!("b{t}")).unwrap();
        assert_eq!(a, b, "thread {t}: a batch is whole or absent");
        let v: u64 = a.map_or(0, |a| String::from_utf8(a).unwrap().parse().unwrap());
        assert!(v >= floor, "thread {t}: {v} < {floor} acknowledged before");
        let logs = collect(ks.prefix(format!("log{t}-")));
        let expected: Vec<Vec<u8>> = (1..=v)
            .map(|i| format!("log{t}-{i:08}").into_bytes())
            .collect();
        let got: Vec<Vec<u8>> = logs.into_iter().map(|(k, _)| k).collect();
        assert_eq!(
            got, expected,
            "thread {t}: no write is missing before a later one"
        );
        total += 3 * v;
        counts.push(v);
    }
    assert_eq!(total, seqno, "nothing else is in the copy");
    db.close().unwrap();
    counts
}

fn backup_under(durability: Durability) {
    let tmp = ordered_common::mem_tempdir();
    let options = tiny(16 << 10, 512).durability(durability);
    let db = Db::open(tmp.path().join("db"), options.clone()).unwrap();
    let ks = db.keyspace("k").unwrap();
    let writers = start_writers(&db, &ks);
    let mut backups = Vec::new();
    for round in 0..3 {
        writers.wait_for(40 * (round + 1));
        let acked = writers.acked();
        let last = db.last_seqno();
        let dest = tmp.path().join(format!("backup{round}"));
        let info = db.backup(&dest).unwrap();
        assert!(info.seqno >= last, "{} < {last}", info.seqno);
        assert!(info.files_linked + info.files_copied >= 3, "{info:?}");
        backups.push((dest, info, acked));
        // The running store verifies at one point while writes continue.
        db.verify().unwrap();
    }
    writers.finish();
    assert!(
        db.stats().flushes > 0,
        "the workload should flush during the backups"
    );
    drop(ks);
    db.close().unwrap();

    let mut prev = vec![0; THREADS];
    for (dest, info, acked) in backups {
        let report = cairn::verify(&dest).unwrap();
        assert!(report.count(FileKind::Manifest) == 2, "{report:?}"); // CURRENT + manifest
        assert!(report.count(FileKind::Wal) >= 1, "{report:?}");
        assert!(report.unreferenced.is_empty(), "{report:?}");
        let counts = check_copy(&dest, &options, info.seqno, &acked);
        assert!(
            counts.iter().zip(&prev).all(|(c, p)| c >= p),
            "later backups hold more"
        );
        prev = counts;
    }
}

#[test]
fn backup_while_writing_sync() {
    backup_under(Durability::Sync);
}

#[test]
fn backup_while_writing_buffered() {
    backup_under(Durability::Buffered);
}

#[test]
fn backup_while_writing_periodic() {
    backup_under(Durability::Periodic(Duration::from_millis(2)));
}

#[test]
fn backup_while_writing_async() {
    backup_under(Durability::Async { queue_depth: 8 });
}

#[test]
fn backup_while_writing_none() {
    backup_under(Durability::None);
}

/// A pack of a running store unpacks to the same kind of exact state; a pack of the
/// closed store and of a backup directory restore what they hold.
#[test]
fn pack_while_writing_then_unpack() {
    let tmp = ordered_common::mem_tempdir();
    let options = tiny(16 << 10, 512).durability(Durability::Buffered);
    let db = Db::open(tmp.path().join("db"), options.clone()).unwrap();
    let ks = db.keyspace("k").unwrap();
    let writers = start_writers(&db, &ks);
    writers.wait_for(60);
    let acked = writers.acked();
    let last = db.last_seqno();
    let file = tmp.path().join("db.pack");
    let info = db.pack(&file).unwrap();
    assert!(info.seqno >= last);
    assert_eq!(
        std::fs::metadata(&file).unwrap().len(),
        info.file_bytes,
        "{info:?}"
    );
    writers.finish();
    drop(ks);
    db.close().unwrap();

    let restored = tmp.path().join("restored");
    let unpacked = cairn::pack::unpack(&file, &restored).unwrap();
    assert_eq!(unpacked.seqno, info.seqno);
    assert_eq!(unpacked.members, info.members);
    cairn::verify(&restored).unwrap();
    check_copy(&restored, &options, info.seqno, &acked);

    // The closed store: pack, unpack, same contents.
    let closed_pack = tmp.path().join("closed.pack");
    cairn::pack::pack(tmp.path().join("db"), &closed_pack).unwrap();
    let again = tmp.path().join("again");
    cairn::pack::unpack(&closed_pack, &again).unwrap();
    let contents = |dir: &Path| {
        let db = Db::open(dir, options.clone()).unwrap();
        let ks = db.keyspace("k").unwrap();
        let all = collect(ks.iter());
        drop(ks);
        db.close().unwrap();
        all
    };
    assert_eq!(contents(&again), contents(&tmp.path().join("db")));

    // Existing destinations are refused, for packs and unpacks.
    assert!(matches!(
        cairn::pack::pack(tmp.path().join("db"), &closed_pack),
        Err(cairn::Error::InvalidArgument(_))
    ));
    assert!(matches!(
        cairn::pack::unpack(&closed_pack, &again),
        Err(cairn::Error::InvalidArgument(_))
    ));
}

/// The restore path the documentation gives: a backup is a store; open it.
#[test]
fn a_backup_is_a_store_that_opens_and_takes_writes() {
    let tmp = ordered_common::mem_tempdir();
    let options = tiny(16 << 10, 512);
    let db = Db::open(tmp.path().join("db"), options.clone()).unwrap();
    let ks = db.keyspace("k").unwrap();
    for i in 0..500u32 {
        ks.insert(format!("key{i:04}"), format!("value{i}"))
            .unwrap();
        if i == 400 {
            // Tables to link, and log files after them to copy.
            db.flush().unwrap();
        }
    }
    let dest = tmp.path().join("bk");
    let info = db.backup(&dest).unwrap();
    assert!(info.tables > 0 && info.files_linked > 0, "{info:?}");
    assert!(matches!(
        db.backup(&dest),
        Err(cairn::Error::InvalidArgument(_))
    ));
    ks.insert("after", "backup").unwrap();
    let before = collect(ks.iter());
    drop(ks);
    db.close().unwrap();

    let restored = Db::open(&dest, options.clone()).unwrap();
    let rks = restored.keyspace("k").unwrap();
    assert_eq!(rks.get("after").unwrap(), None);
    assert_eq!(collect(rks.iter()).len(), 500);
    rks.insert("new", "write").unwrap();
    drop(rks);
    restored.close().unwrap();
    // The source is untouched by the backup and by writes to the restored copy.
    let db = Db::open(tmp.path().join("db"), options).unwrap();
    let ks = db.keyspace("k").unwrap();
    assert_eq!(collect(ks.iter()), before);
}
