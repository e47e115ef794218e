//! I/O errors at every call (plan layer T2's error injection and T6's fsync failure and
//! ENOSPC), SQLite's loop: for each kind of call and error, fail the n-th call for
//! n = 1, 2, ... until the workload completes without reaching it. After each fault:
//!
//! - the operation that met it returns an error (or, for calls whose failure the store may
//!   ignore, such as deleting an obsolete file, the workload completes with every write);
//! - every later write returns an error (the log or the store is poisoned), while scans and
//!   point reads still return exactly the acknowledged data;
//! - with the fault cleared ("space freed"), the store reopens, on the same file system
//!   and on power-loss and process-crash images taken at the failure, holding a prefix of
//!   the writes that includes every write the mode promises survives that crash; and
//!   writes work again.

use std::sync::Arc;
use std::time::Instant;

use super::*;
use crate::fs::{CrashOptions, Fault, FaultKind, Op};

fn workload() -> Vec<Step> {
    use Step::*;
    vec![
        CreateKs("x"),
        Put("default", "a", "1"),
        Put("default", "n", "10"),
        Batch(vec![("default", "b", Some("2")), ("x", "b", Some("2"))]),
        Del("default", "a"),
        Flush,
        Incr("default", "n", 4),
        Put("x", "c", "3"),
        Batch(vec![("default", "d", Some("4")), ("x", "d", Some("4"))]),
        Flush,
        Compact,
        Del("x", "b"),
        Reopen,
        Incr("default", "n", -20),
        Put("default", "e", "5"),
        DropKs("x"),
        Put("default", "f", "6"),
    ]
}

/// (call kind, error, fail every later call too).
fn faults() -> Vec<(Op, FaultKind, bool)> {
    vec![
        (Op::Write, FaultKind::Eio, false),
        (Op::Write, FaultKind::Enospc, true),
        (Op::Sync, FaultKind::Eio, false),
        (Op::Sync, FaultKind::FsyncLost, false),
        (Op::Create, FaultKind::Enospc, true),
        (Op::SyncDir, FaultKind::Eio, false),
        (Op::Rename, FaultKind::Eio, false),
        (Op::Remove, FaultKind::Eio, true),
    ]
}

#[derive(Debug, Default)]
struct Tally {
    points: usize,
    surfaced: usize,
    absorbed: usize,
    reopened: usize,
    /// (surfaced, absorbed) per fault.
    by_fault: BTreeMap<String, (usize, usize)>,
}

type Check = std::result::Result<(), String>;

/// The checks on a store that has just returned `error`.
fn check_stopped(d: &Driver) -> Check {
    let Some(db) = d.db.as_ref() else {
        return Ok(());
    };
    let ks = db.get_keyspace(DEFAULT_KEYSPACE).unwrap();
    if ks
        .insert_with("after-error", "z", Some(Durability::Sync))
        .is_ok()
    {
        return Err("a write after the error succeeded".into());
    }
    let expected = d.model.state(d.marks.acked, d.marks.ks_acked);
    let got = read_contents(db).map_err(|e| format!("scan after the error failed: {e}"))?;
    if got != expected {
        return Err(format!(
            "reads after the error return [{}], acknowledged [{}]",
            show(&got),
            show(&expected)
        ));
    }
    check_gets(db, &d.model, &expected)
        .map_err(|e| format!("point read after the error failed: {e}"))?
}

/// Reopens `fs` with faults cleared: a prefix holding at least `floor` writes, and
/// writes work again (and survive another reopen).
fn check_reopen(fs: &MemFs, d: &Driver, floor: usize, what: &str) -> Check {
    fs.clear_faults();
    let open = || Db::open_with_fs(Arc::new(fs.clone()), &dir(), d.options.clone());
    let db = open().map_err(|e| format!("{what}: reopen failed: {e}"))?;
    let got = read_contents(&db).map_err(|e| format!("{what}: read failed: {e}"))?;
    let (m, last) = (&d.marks, db.last_seqno());
    let Some((j, _)) = d
        .model
        .find(&got, last, (floor, m.started), (m.ks_acked, m.ks_started))
    else {
        return Err(format!(
            "{what}: reopened [{}] at {last}, not a state after {floor}..={} writes; {m:?}",
            show(&got),
            m.started
        ));
    };
    check_gets(&db, &d.model, &got)
        .map_err(|e| format!("{what}: point read failed: {e}"))?
        .map_err(|e| format!("{what}: {e}"))?;
    let ks = db.get_keyspace(DEFAULT_KEYSPACE).unwrap();
    ks.insert_with("after-reopen", "y", Some(Durability::Sync))
        .map_err(|e| format!("{what}: write after reopen failed: {e}"))?;
    drop(ks);
    db.close()
        .map_err(|e| format!("{what}: close failed: {e}"))?;
    let db = open().map_err(|e| format!("{what}: second reopen failed: {e}"))?;
    let ks = db.get_keyspace(DEFAULT_KEYSPACE).unwrap();
    if ks.get("after-reopen").ok().flatten().as_deref() != Some(&b"y"[..])
        || db.last_seqno() != d.model.seqno_after(j) + 1
    {
        return Err(format!("{what}: the write after reopen was lost"));
    }
    Ok(())
}

/// One run with the `nth` call of `op` failing; returns whether the fault fired.
fn run_once(
    mode: Durability,
    (op, kind, forever): (Op, FaultKind, bool),
    nth: u64,
    t: &mut Tally,
) -> std::result::Result<bool, String> {
    let fs = new_fs();
    fs.inject(Fault {
        op,
        nth,
        kind,
        forever,
    });
    let mut d = Driver::new(Arc::new(fs.clone()), options(mode), None);
    let mut failure = d.open().err().map(|e| ("open".to_string(), e));
    if failure.is_none() {
        for step in &workload() {
            if let Err(e) = d.step(step) {
                failure = Some((format!("{step:?}"), e));
                break;
            }
        }
    }
    // Crash images at the failure (or the end), with what was promised by then.
    let durable = d.db.as_ref().map_or(0, Db::durable_seqno);
    let power = fs.crash();
    let process = fs.crash_with(CrashOptions::KeepAll);
    let at_images = d.marks;
    let what = format!("{mode:?} {op:?} #{nth} {kind:?}");
    match &failure {
        None => {
            let db = d.db.as_ref().unwrap();
            let all = d.model.state(d.marks.acked, d.marks.ks_acked);
            let got = read_contents(db).map_err(|e| format!("{what}: read failed: {e}"))?;
            if got != all {
                return Err(format!("{what}: completed with [{}]", show(&got)));
            }
            if let Err(e) = d.close() {
                failure = Some(("close".to_string(), e));
            }
        }
        Some((step, e)) => {
            check_stopped(&d).map_err(|m| format!("{what}, {step} failed ({e}): {m}"))?;
            let _ = d.close();
        }
    }
    let fired = fs.op_count(op) >= nth;
    if !fired {
        return match failure {
            None => Ok(false),
            Some((step, e)) => Err(format!("{what}: {step} failed without a fault: {e}")),
        };
    }
    t.points += 1;
    let by_fault = t.by_fault.entry(format!("{op:?}/{kind:?}")).or_default();
    match &failure {
        Some(_) => {
            t.surfaced += 1;
            by_fault.0 += 1;
        }
        None => {
            t.absorbed += 1;
            by_fault.1 += 1;
        }
    }
    let context = match &failure {
        Some((step, e)) => format!("{what}, after {step} failed ({e})"),
        None => format!("{what}, absorbed"),
    };
    let power_floor = at_images.power_floor.max(d.model.writes_through(durable));
    for (fs, floor, crash) in [
        (&fs, d.marks.process_floor, "no crash"),
        (&process, at_images.process_floor, "process crash"),
        (&power, power_floor, "power loss"),
    ] {
        check_reopen(fs, &d, floor, &format!("{context}, {crash}"))?;
        t.reopened += 1;
    }
    Ok(true)
}

fn fault_loop(mode: Durability) {
    watch_engine_threads();
    let start = Instant::now();
    let mut t = Tally::default();
    let mut failures = Vec::new();
    for fault in faults() {
        let mut nth = 1;
        loop {
            match run_once(mode, fault, nth, &mut t) {
                Ok(true) => {}
                Ok(false) => break,
                Err(msg) => failures.push(msg),
            }
            nth += 1;
            assert!(nth < 5_000, "{fault:?}: the workload never finishes");
        }
    }
    eprintln!(
        "faults {mode:?}: {} fault points ({} surfaced as errors, {} absorbed), {} reopens \
         checked, {} violations, {:.1}s",
        t.points,
        t.surfaced,
        t.absorbed,
        t.reopened,
        failures.len(),
        start.elapsed().as_secs_f64()
    );
    let by_fault: Vec<String> = t
        .by_fault
        .iter()
        .map(|(f, (s, a))| format!("{f} {s}+{a}"))
        .collect();
    eprintln!("  errors+absorbed by fault: {}", by_fault.join(", "));
    for f in failures.iter().take(8) {
        eprintln!("  {f}");
    }
    assert!(failures.is_empty(), "{} violations", failures.len());
    assert_eq!(engine_panics(), 0, "a store thread panicked");
}

#[test]
fn io_error_at_every_call_sync() {
    fault_loop(Durability::Sync);
}

#[test]
fn io_error_at_every_call_buffered() {
    fault_loop(Durability::Buffered);
}

#[test]
fn io_error_at_every_call_async() {
    fault_loop(Durability::Async { queue_depth: 4 });
}
