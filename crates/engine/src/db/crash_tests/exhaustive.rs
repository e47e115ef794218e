//! Exhaustive crash points (plan layer T2): each small workload runs once per durability
//! mode on a [`Recorder`], which keeps a power-loss, a process-crash and several torn
//! images after every file-system call. Each image is reopened and must:
//!
//! - open without error (no image here has damaged bits);
//! - hold `state(j, m)` of the [`Model`] with last seqno `seqno_after(j)`, where `j` (writes)
//!   runs from what the contract promises survives that crash to the writes begun, and `m`
//!   (keyspace changes) from those acknowledged to those begun: a prefix, so no holes,
//!   batches whole, deleted keys absent, keyspaces of a cross-keyspace batch consistent;
//!   a transaction (any durability mode, across keyspaces) or a batch with counter
//!   increments all there, or all absent only where its mode allows the loss; a refused
//!   batch or a conflicting transaction never there at all;
//! - answer point reads of every key ever written as the scan does.
//!
//! A sample of the images is then reopened again through a recorder, crashing after every
//! call of that recovery: each of those images must recover exactly the same state
//! (recovery is idempotent), and a synced write after the recovery must survive a power
//! loss together with everything recovered.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::recorder::{Crash, Image, Recorder};
use super::*;
use crate::fs::CrashOptions;

/// Torn images per call of a workload, and per call of a recovery.
const TORN_PER_CALL: u64 = 3;
const TORN_PER_RECOVERY_CALL: u64 = 1;

/// One image in this many is also crashed during its recovery (coprime to the images per
/// call, so every kind of crash is sampled).
const RECOVERY_SAMPLE: usize = 6;

fn workloads() -> Vec<(&'static str, Vec<Step>)> {
    use Step::*;
    vec![
        (
            "puts-and-deletes",
            vec![
                Put("default", "a", "1"),
                Put("default", "b", "2"),
                Del("default", "a"),
                Put("default", "b", "3"),
                Batch(vec![("default", "c", Some("4")), ("default", "b", None)]),
            ],
        ),
        (
            "range-deletes",
            vec![
                Put("default", "a", "1"),
                Put("default", "b", "2"),
                Put("default", "c", "3"),
                Incr("default", "n", 2),
                Flush,
                DelRange("default", "a", "c"),
                Put("default", "b", "again"),
                Flush,
                Compact,
                DelRange("default", "", "zz"),
                Put("default", "d", "4"),
                // The counter was removed with the range: it starts over.
                Incr("default", "n", 1),
            ],
        ),
        (
            "keyspaces",
            vec![
                CreateKs("x"),
                Batch(vec![("default", "k", Some("d1")), ("x", "k", Some("x1"))]),
                Put("x", "j", "x2"),
                Flush,
                Batch(vec![("default", "k", None), ("x", "j", Some("x3"))]),
                DropKs("x"),
                CreateKs("x"),
                Put("x", "k", "new"),
            ],
        ),
        (
            "flush",
            vec![
                Put("default", "a", "1"),
                Put("default", "b", "2"),
                Del("default", "a"),
                Flush,
                Del("default", "b"),
                Put("default", "a", "again"),
                Put("default", "c", "3"),
            ],
        ),
        (
            "compaction",
            vec![
                Batch(vec![
                    ("default", "a", Some("1")),
                    ("default", "b", Some("2")),
                    ("default", "c", Some("3")),
                ]),
                Flush,
                Del("default", "a"),
                Put("default", "d", "4"),
                Flush,
                Compact,
                Del("default", "b"),
                Put("default", "a", "back"),
            ],
        ),
        (
            "reopen",
            vec![
                CreateKs("x"),
                Batch(vec![("default", "k", Some("1")), ("x", "k", Some("1"))]),
                Put("default", "j", "2"),
                Reopen,
                Del("default", "k"),
                Batch(vec![("default", "j", Some("3")), ("x", "k", None)]),
                Put("x", "m", "4"),
            ],
        ),
        (
            "counters",
            vec![
                Incr("default", "n", 5),
                Put("default", "a", "1"),
                Incr("default", "n", -7),
                IncrWith("default", "m", 1, Durability::Sync),
                Flush,
                Incr("default", "n", 2),
                Del("default", "n"),
                Incr("default", "n", 3),
                Put("default", "s", "text"),
                Incr("default", "s", 1),
                Incr("default", "m", i64::MAX),
                Incr("default", "m", -1),
            ],
        ),
        (
            "transactions",
            vec![
                CreateKs("x"),
                Put("default", "a", "1"),
                Txn(
                    vec![
                        ("default", "a", TxOp::Put("2")),
                        ("x", "b", TxOp::Put("3")),
                        ("default", "n", TxOp::Incr(5)),
                    ],
                    Durability::Sync,
                ),
                Txn(
                    vec![("x", "b", TxOp::Del), ("default", "c", TxOp::Put("4"))],
                    Durability::Buffered,
                ),
                TxnConflict(
                    "default",
                    "a",
                    vec![
                        ("x", "d", TxOp::Put("lost")),
                        ("default", "e", TxOp::Put("lost")),
                    ],
                ),
                Txn(
                    vec![("default", "a", TxOp::Del), ("x", "b", TxOp::Put("5"))],
                    Durability::Async { queue_depth: 4 },
                ),
                Flush,
                Txn(
                    vec![("default", "n", TxOp::Incr(2)), ("x", "b", TxOp::Put("6"))],
                    Durability::None,
                ),
                Txn(
                    vec![("x", "f", TxOp::Put("7")), ("default", "g", TxOp::Put("8"))],
                    Durability::Periodic(Duration::from_millis(1)),
                ),
                Put("default", "h", "9"),
            ],
        ),
        (
            "batch-counters",
            vec![
                CreateKs("x"),
                Put("default", "n", "5"),
                BatchIncr(vec![
                    ("default", "n", TxOp::Incr(1)),
                    ("x", "m", TxOp::Put("10")),
                    ("x", "m", TxOp::Incr(2)),
                    ("default", "n", TxOp::Incr(3)),
                ]),
                // Refused: the batch's own put makes "t" text.
                BatchIncr(vec![
                    ("default", "t", TxOp::Put("text")),
                    ("default", "n", TxOp::Incr(1)),
                    ("default", "t", TxOp::Incr(1)),
                ]),
                Flush,
                BatchIncr(vec![
                    ("x", "m", TxOp::Del),
                    ("x", "m", TxOp::Incr(-4)),
                    ("default", "n", TxOp::Incr(1)),
                ]),
                // Refused: overflow.
                BatchIncr(vec![
                    ("default", "big", TxOp::Put("9223372036854775807")),
                    ("default", "big", TxOp::Incr(1)),
                ]),
                Put("default", "z", "last"),
            ],
        ),
        (
            "merges",
            vec![
                CreateKs("merged"),
                Merge("merged", "n", 5),
                Put("merged", "a", "1"),
                Merge("merged", "n", -7),
                Flush,
                Reopen,
                Merge("merged", "n", 2),
                Merge("merged", "a", 4),
                Flush,
                Del("merged", "n"),
                Merge("merged", "n", 3),
                Flush,
                Compact,
                Merge("merged", "a", 10),
                Incr("merged", "a", 1),
            ],
        ),
        (
            "mixed-durability",
            vec![
                Put("default", "a", "1"),
                PutWith("default", "b", "2", Durability::Sync),
                Put("default", "c", "3"),
                FlushWal(false),
                Del("default", "a"),
                FlushWal(true),
                Put("default", "d", "4"),
            ],
        ),
    ]
}

/// What a recovery found: `state(writes, ks_ops)` with last seqno `last`.
#[derive(Debug)]
struct Found {
    writes: usize,
    ks_ops: usize,
    contents: Contents,
    last: u64,
}

/// The fewest writes a recovery from `img` must hold.
fn required(model: &Model, img: &Image) -> usize {
    let power = model.writes_through(img.durable).max(img.marks.power_floor);
    match img.crash {
        Crash::Process => power.max(img.marks.process_floor),
        Crash::Power | Crash::Torn(_) => power,
    }
}

fn open(fs: MemFs, options: &Options) -> std::result::Result<Db, String> {
    Db::open_with_fs(Arc::new(fs), &dir(), options.clone()).map_err(|e| format!("open failed: {e}"))
}

fn check_image(
    model: &Model,
    img: &Image,
    options: &Options,
) -> std::result::Result<Found, String> {
    let db = open(img.fs.clone(), options)?;
    let (lo, hi) = (required(model, img), img.marks.started);
    let ks = (img.marks.ks_acked, img.marks.ks_started);
    let got = read_contents(&db).map_err(|e| format!("read failed: {e}"))?;
    let last = db.last_seqno();
    let Some((writes, ks_ops)) = model.find(&got, last, (lo, hi), ks) else {
        let anywhere = model.find(&got, last, (0, model.writes.len()), (0, model.ks_ops.len()));
        return Err(format!(
            "recovered [{}] at seqno {last}, not the state after {lo}..={hi} writes and \
             {}..={} keyspace changes (it is the state after {anywhere:?}); {:?}, durable {}",
            show(&got),
            ks.0,
            ks.1,
            img.marks,
            img.durable
        ));
    };
    check_gets(&db, model, &got)
        .map_err(|e| format!("point read failed: {e}"))?
        .map_err(|e| format!("point read disagrees with the scan: {e}"))?;
    db.close().map_err(|e| format!("close failed: {e}"))?;
    Ok(Found {
        writes,
        ks_ops,
        contents: got,
        last,
    })
}

/// Recovers `copy` (of `img`, already checked as `found`) on a recorder, then: the same
/// state again; a synced write after it survives power loss; and every crash image of
/// that recovery recovers `found` exactly, except that a power loss during the recovery
/// of a process-crash image may still lose what `img` held unsynced, writes or an
/// in-flight keyspace change (but no more than a power loss at `img` could have). Returns
/// how many images it checked.
fn check_crashes_in_recovery(
    model: &Model,
    img: &Image,
    copy: MemFs,
    found: &Found,
    options: &Options,
) -> std::result::Result<usize, String> {
    let rec = Recorder::new(copy, TORN_PER_RECOVERY_CALL);
    rec.recording(true);
    let db = Db::open_with_fs(rec.shared(), &dir(), options.clone())
        .map_err(|e| format!("second open failed: {e}"))?;
    rec.recording(false);
    let got = read_contents(&db).map_err(|e| format!("read failed: {e}"))?;
    if got != found.contents || db.last_seqno() != found.last {
        return Err(format!(
            "a second recovery found [{}] at {}, the first [{}] at {}",
            show(&got),
            db.last_seqno(),
            show(&found.contents),
            found.last
        ));
    }

    // Writes continue after the recovered seqno and survive with it.
    let ks = db.get_keyspace(DEFAULT_KEYSPACE).unwrap();
    ks.insert_with("after-recovery", "x", Some(Durability::Sync))
        .map_err(|e| format!("write after recovery failed: {e}"))?;
    drop(ks);
    let probe = db.clone();
    db.close().map_err(|e| format!("close failed: {e}"))?;
    drop(probe);
    let mut expected = found.contents.clone();
    expected
        .entry(DEFAULT_KEYSPACE.to_string())
        .or_default()
        .insert(b"after-recovery".to_vec(), b"x".to_vec());
    let after = open(rec.fs.crash(), options)?;
    let got = read_contents(&after).map_err(|e| format!("read failed: {e}"))?;
    if got != expected || after.last_seqno() != found.last + 1 {
        return Err(format!(
            "after a synced write following recovery and a power loss: [{}] at {}, expected \
             [{}] at {}",
            show(&got),
            after.last_seqno(),
            show(&expected),
            found.last + 1
        ));
    }
    after.close().map_err(|e| format!("close failed: {e}"))?;

    let power_lo = model.writes_through(img.durable).max(img.marks.power_floor);
    let images = rec.take_images();
    for again in &images {
        let what = format!(
            "a crash at recovery call {} ({:?})",
            again.call, again.crash
        );
        let db = open(again.fs.clone(), options).map_err(|e| format!("after {what}: {e}"))?;
        let got = read_contents(&db).map_err(|e| format!("read failed: {e}"))?;
        let last = db.last_seqno();
        let may_lose = img.crash == Crash::Process && again.crash != Crash::Process;
        let same = got == found.contents && last == found.last;
        let allowed = same
            || (may_lose
                && model
                    .find(
                        &got,
                        last,
                        (power_lo, found.writes),
                        (img.marks.ks_acked, found.ks_ops),
                    )
                    .is_some());
        if !allowed {
            return Err(format!(
                "{what} changed the state: [{}] at {last}, expected [{}] at {}",
                show(&got),
                show(&found.contents),
                found.last
            ));
        }
        db.close().map_err(|e| format!("close failed: {e}"))?;
    }
    Ok(images.len())
}

/// Runs `steps` in `mode` on a recorder; returns the model and every crash image.
fn record(steps: &[Step], mode: Durability, options: &Options) -> (Model, Vec<Image>) {
    let rec = Recorder::new(new_fs(), TORN_PER_CALL);
    rec.recording(true);
    let mut d = Driver::new(rec.shared(), options.clone(), Some(rec.clone()));
    d.open().unwrap();
    for step in steps {
        d.step(step)
            .unwrap_or_else(|e| panic!("{mode:?}: {step:?} failed: {e}"));
    }
    let db = d.db().unwrap().clone();
    let all = d.model.state(d.model.writes.len(), d.model.ks_ops.len());
    assert_eq!(read_contents(&db).unwrap(), all, "{mode:?}: live state");
    if steps.iter().any(|s| matches!(s, Step::Compact)) {
        assert!(
            db.stats().compactions > 0,
            "{mode:?}: the workload compacts"
        );
    }
    if options.blob_threshold.is_some() {
        let space = db.space_stats().unwrap();
        assert!(
            !space.blob_files.is_empty() || space.unflushed_blob_files > 0,
            "{mode:?}: values are separated"
        );
    }
    drop(db);
    d.close().unwrap();
    rec.recording(false);
    (d.model, rec.take_images())
}

#[derive(Debug, Default)]
struct Tally {
    calls: usize,
    power: usize,
    process: usize,
    torn: usize,
    in_recovery: usize,
    failures: Vec<String>,
}

fn crash_after_every_call(mode: Durability) {
    crash_after_every_call_with(mode, &options(mode), "");
}

/// Every value separated into the value log (threshold 0): a crash never leaves a WAL
/// record whose blob record is missing for a write the contract says survives.
fn crash_after_every_call_separated(mode: Durability) {
    let options = Options {
        blob_threshold: Some(0),
        blob_file_size: 4096,
        ..options(mode)
    };
    crash_after_every_call_with(mode, &options, " (separated values)");
}

fn crash_after_every_call_with(mode: Durability, options: &Options, label: &str) {
    watch_engine_threads();
    let start = Instant::now();
    let options = options.clone();
    let mut t = Tally::default();
    for (name, steps) in workloads() {
        let (model, images) = record(&steps, mode, &options);
        t.calls += images.last().map_or(0, |i| i.call);
        for (i, img) in images.iter().enumerate() {
            // Copy before the check's open writes to the image.
            let copy = (i % RECOVERY_SAMPLE == 0).then(|| img.fs.crash_with(CrashOptions::KeepAll));
            let what = format!("{name}, call {} ({:?})", img.call, img.crash);
            let checked = catch_unwind(AssertUnwindSafe(|| check_image(&model, img, &options)));
            let found = match checked.unwrap_or_else(|_| Err("panicked".into())) {
                Ok(found) => found,
                Err(msg) => {
                    t.failures.push(format!("{what}: {msg}"));
                    continue;
                }
            };
            match img.crash {
                Crash::Power => t.power += 1,
                Crash::Process => t.process += 1,
                Crash::Torn(_) => t.torn += 1,
            }
            if let Some(copy) = copy {
                match check_crashes_in_recovery(&model, img, copy, &found, &options) {
                    Ok(n) => t.in_recovery += n,
                    Err(msg) => t.failures.push(format!("{what}, recovery: {msg}")),
                }
            }
        }
    }
    let total = t.power + t.process + t.torn + t.in_recovery;
    eprintln!(
        "crash states {mode:?}{label}: {total} checked ({} calls; {} power loss, {} process crash, \
         {} torn, {} crashes during recovery), {} violations, {:.1}s",
        t.calls,
        t.power,
        t.process,
        t.torn,
        t.in_recovery,
        t.failures.len(),
        start.elapsed().as_secs_f64()
    );
    for f in t.failures.iter().take(8) {
        eprintln!("  {mode:?}: {f}");
    }
    assert!(
        t.failures.is_empty(),
        "{} contract violations",
        t.failures.len()
    );
    assert_eq!(engine_panics(), 0, "a store thread panicked");
    assert!(total >= 2_000, "{total} crash states");
}

#[test]
fn crash_after_every_call_sync() {
    crash_after_every_call(modes()[0]);
}

#[test]
fn crash_after_every_call_periodic() {
    crash_after_every_call(modes()[1]);
}

#[test]
fn crash_after_every_call_buffered() {
    crash_after_every_call(modes()[2]);
}

#[test]
fn crash_after_every_call_async() {
    crash_after_every_call(modes()[3]);
}

#[test]
fn crash_after_every_call_none() {
    crash_after_every_call(modes()[4]);
}

#[test]
fn crash_after_every_call_separated_sync() {
    crash_after_every_call_separated(modes()[0]);
}

#[test]
fn crash_after_every_call_separated_periodic() {
    crash_after_every_call_separated(modes()[1]);
}

#[test]
fn crash_after_every_call_separated_buffered() {
    crash_after_every_call_separated(modes()[2]);
}

#[test]
fn crash_after_every_call_separated_async() {
    crash_after_every_call_separated(modes()[3]);
}

#[test]
fn crash_after_every_call_separated_none() {
    crash_after_every_call_separated(modes()[4]);
}
