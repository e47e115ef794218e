//! One writer process and several reader processes on one store, for a bounded time.
//!
//! The test binary is the parent and, re-executed with `CAIRN_MP_ROLE` set, the children:
//! a writer ([`mp_writer`]) that opens the store with `Db::open` and writes keys in order,
//! one per write (`key i` holds `i`), with `Sync` durability, flushing and compacting as it
//! goes, and printing `acked N T` after every 100 writes (T: the wall clock in ns); readers
//! ([`mp_reader`]) that open the store read-only again and again and check each view; and
//! followers ([`mp_follower`]) that open the store once with `Db::open_follower` and
//! refresh it (one by calling `refresh`, one with a background `refresh_interval`),
//! printing `follow N T` for each view.
//!
//! What is checked: every read-only open (in the readers and in the parent) succeeds and
//! sees a gapless prefix `0..n` of the keys with their values, never an error or a missing
//! file, and `n` is at least the number of writes the writer had acknowledged before the
//! open began; a follower's views never go back, and a snapshot and an iterator it took in
//! its first view still read exactly that view at the end, whatever the writer compacted
//! and deleted meanwhile; after the writer is killed (SIGKILL) the readers' views still
//! read, new read-only opens work, a follower refreshes to every acked write, and the
//! writer's store reopens for writing with every acked write. The followers' lag (from the
//! writer's ack to the follower's view, p50/p99) is printed, not asserted.
//!
//! Environment: `CAIRN_MP_SECONDS` (default 3, times `CAIRN_SOAK`), `CAIRN_MP_READERS` (default 2).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use cairn::Readable;
use cairn::{Db, Durability, Options};

const ROLE: &str = "CAIRN_MP_ROLE";
const DIR: &str = "CAIRN_MP_DIR";

fn options() -> Options {
    Options::default()
        .durability(Durability::Sync)
        .memtable_size(16 << 10)
        .table_size(16 << 10)
        .l0_compaction_trigger(2)
        .level1_size(64 << 10)
}

/// The wall clock in ns (the same clock in every process of the test).
fn now_ns() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos())
}

fn key(i: u64) -> String {
    format!("key{i:08}")
}

/// How long the writer and readers run: `CAIRN_MP_SECONDS`, else 3 s times the soak
/// factor (`cairn::testing::soak_factor`); children inherit both variables.
fn run_seconds() -> u64 {
    env_u64("CAIRN_MP_SECONDS", 3 * cairn::testing::soak_factor())
}

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Checks one read-only view: keys `0..n` in order with their values; returns `n`.
fn check_view(db: &Db) -> Result<u64, String> {
    let ks = db
        .get_keyspace("k")
        .ok_or_else(|| "no keyspace k".to_string())?;
    // One point for the scan and the count (a follower's background refresh may move
    // the view between two reads without one).
    let snapshot = db.snapshot();
    let mut n = 0u64;
    for pair in snapshot.iter(&ks) {
        let (k, v) = pair.map_err(|e| format!("scan: {e}"))?;
        if k != key(n).into_bytes() || v != n.to_string().into_bytes() {
            return Err(format!(
                "entry {n} is {:?}={:?}: not a prefix",
                String::from_utf8_lossy(&k),
                String::from_utf8_lossy(&v)
            ));
        }
        n += 1;
    }
    let counted = snapshot.len(&ks).map_err(|e| format!("len: {e}"))?;
    if counted != n {
        return Err(format!("len {counted} but the scan saw {n}"));
    }
    Ok(n)
}

/// The writer process: writes until killed.
#[test]
fn mp_writer() {
    if std::env::var(ROLE).as_deref() != Ok("writer") {
        return;
    }
    let dir = PathBuf::from(std::env::var(DIR).unwrap());
    let db = Db::open(&dir, options()).unwrap();
    let ks = db.keyspace("k").unwrap();
    let mut i = ks.len().unwrap();
    println!("open {i}");
    loop {
        ks.insert(key(i), i.to_string()).unwrap();
        i += 1;
        if i.is_multiple_of(100) {
            println!("acked {i} {}", now_ns());
        }
        if i.is_multiple_of(2000) {
            db.flush().unwrap();
        }
        if i.is_multiple_of(6000) {
            db.compact().unwrap();
        }
    }
}

/// A reader process: opens read-only in a loop until its stdin closes, printing
/// `view N` for each view, or `error ...` and exiting non-zero.
#[test]
fn mp_reader() {
    if std::env::var(ROLE).as_deref() != Ok("reader") {
        return;
    }
    let dir = PathBuf::from(std::env::var(DIR).unwrap());
    let deadline = Instant::now() + Duration::from_secs(run_seconds() + 5);
    let mut held: Option<Db> = None;
    while Instant::now() < deadline {
        let db = match Db::open_read_only(&dir, options()) {
            Ok(db) => db,
            Err(e) => {
                println!("error open: {e}");
                std::process::exit(1);
            }
        };
        match check_view(&db) {
            Ok(n) => println!("view {n}"),
            Err(e) => {
                println!("error view: {e}");
                std::process::exit(1);
            }
        }
        // Keep the previous view and read it again: the writer has moved on meanwhile.
        if let Some(old) = held.replace(db) {
            if let Err(e) = check_view(&old) {
                println!("error old view: {e}");
                std::process::exit(1);
            }
        }
    }
}

/// A follower process: one follower open, refreshed until the deadline (by calling
/// `refresh` every few milliseconds, or with `CAIRN_MP_BACKGROUND` set by its background
/// thread), printing `follow N T` for each new view, or `error ...` and exiting non-zero.
/// A snapshot and an iterator taken in the first view must read exactly that view at the
/// end.
#[test]
fn mp_follower() {
    if std::env::var(ROLE).as_deref() != Ok("follower") {
        return;
    }
    let fail = |what: String| -> ! {
        println!("error {what}");
        std::process::exit(1);
    };
    let dir = PathBuf::from(std::env::var(DIR).unwrap());
    let background = std::env::var("CAIRN_MP_BACKGROUND").is_ok();
    let deadline = Instant::now() + Duration::from_secs(run_seconds() + 5);
    let opts = options().refresh_interval(background.then(|| Duration::from_millis(10)));
    let db = Db::open_follower(&dir, opts).unwrap_or_else(|e| fail(format!("open: {e}")));
    let first = check_view(&db).unwrap_or_else(|e| fail(format!("view: {e}")));
    let snapshot = db.snapshot();
    let ks = db.get_keyspace("k").unwrap();
    let mut old = ks.iter();
    let head = old.next().map(|r| r.map(|(k, _)| k));
    let mut seen = first;
    let mut last_seqno = db.last_seqno();
    println!("follow {first} {}", now_ns());
    while Instant::now() < deadline {
        if background {
            std::thread::sleep(Duration::from_millis(2));
            if db.last_seqno() == last_seqno {
                continue;
            }
            last_seqno = db.last_seqno();
        } else {
            std::thread::sleep(Duration::from_millis(5));
            match db.refresh() {
                Ok(false) => continue,
                Ok(true) => {}
                Err(e) => fail(format!("refresh: {e}")),
            }
        }
        let n = check_view(&db).unwrap_or_else(|e| fail(format!("view: {e}")));
        if n < seen {
            fail(format!("the view went back from {seen} to {n} keys"));
        }
        seen = n;
        println!("follow {n} {}", now_ns());
    }
    // The first view, through the snapshot and the iterator, is still whole.
    let at = snapshot
        .len(&ks)
        .unwrap_or_else(|e| fail(format!("snapshot: {e}")));
    if at != first {
        fail(format!(
            "the snapshot counts {at} keys, its view had {first}"
        ));
    }
    if !matches!(head, Some(Ok(ref k)) if *k == key(0).into_bytes()) {
        fail("the iterator did not start at the first key".into());
    }
    let mut n = 1u64;
    for pair in old {
        let (k, v) = pair.unwrap_or_else(|e| fail(format!("old iterator: {e}")));
        if k != key(n).into_bytes() || v != n.to_string().into_bytes() {
            fail(format!("old iterator entry {n} is not a prefix"));
        }
        n += 1;
    }
    if n != first {
        fail(format!(
            "the old iterator saw {n} keys, its view had {first}"
        ));
    }
    println!("done {seen}");
}

fn spawn(role: &str, dir: &Path) -> (Child, std::sync::mpsc::Receiver<String>) {
    spawn_with(role, dir, &[])
}

fn spawn_with(
    role: &str,
    dir: &Path,
    env: &[(&str, &str)],
) -> (Child, std::sync::mpsc::Receiver<String>) {
    let exe = std::env::current_exe().unwrap();
    let test = match role {
        "writer" => "mp_writer",
        "follower" => "mp_follower",
        _ => "mp_reader",
    };
    let mut child = Command::new(exe)
        .args([test, "--exact", "--nocapture", "--test-threads=1"])
        .env(ROLE, role)
        .env(DIR, dir)
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let out = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    (child, rx)
}

#[test]
fn one_writer_and_reader_processes_then_a_kill() {
    if std::env::var(ROLE).is_ok() {
        return;
    }
    let seconds = run_seconds();
    let readers = env_u64("CAIRN_MP_READERS", 2);
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("store");
    {
        let db = Db::open(&dir, options()).unwrap();
        db.keyspace("k").unwrap().insert(key(0), "0").unwrap();
        db.close().unwrap();
    }
    let (mut writer, writer_out) = spawn("writer", &dir);
    let acked = Arc::new(AtomicU64::new(1));
    let acks: Arc<std::sync::Mutex<Vec<(u64, u128)>>> = Arc::default();
    // The test harness prints its own lines first, and its `test ... ` prefix on the
    // first line of the test's output.
    loop {
        let line = writer_out.recv_timeout(Duration::from_secs(30)).unwrap();
        if line.contains("open ") {
            break;
        }
    }
    {
        let (acked, acks) = (Arc::clone(&acked), Arc::clone(&acks));
        std::thread::spawn(move || {
            for line in writer_out {
                if let Some((_, rest)) = line.split_once("acked ") {
                    let mut parts = rest.split_whitespace();
                    let n: u64 = parts.next().unwrap().parse().unwrap();
                    let t: u128 = parts.next().unwrap().parse().unwrap();
                    acks.lock().unwrap().push((n, t));
                    acked.fetch_max(n, Ordering::AcqRel);
                }
            }
        });
    }
    let mut children: Vec<_> = (0..readers).map(|_| spawn("reader", &dir)).collect();
    let followers = vec![
        spawn("follower", &dir),
        spawn_with("follower", &dir, &[("CAIRN_MP_BACKGROUND", "1")]),
    ];
    // A follower in this process, refreshed after the kill.
    let follower = Db::open_follower(&dir, options()).unwrap();

    // The parent reads too, checking each view against what was acked before it.
    let deadline = Instant::now() + Duration::from_secs(seconds);
    let (mut opens, mut last_view) = (0u64, 0u64);
    let mut old_view: Option<Db> = None;
    while Instant::now() < deadline {
        let floor = acked.load(Ordering::Acquire);
        let db = Db::open_read_only(&dir, options()).unwrap();
        let n = check_view(&db).unwrap();
        assert!(
            n >= floor,
            "a view of {n} keys after {floor} were acknowledged"
        );
        last_view = n;
        opens += 1;
        old_view = Some(db);
    }
    writer.kill().unwrap();
    writer.wait().unwrap();
    let floor = acked.load(Ordering::Acquire);
    // A view opened before the kill still reads, and so does a new one.
    check_view(old_view.as_ref().unwrap()).unwrap();
    let after = Db::open_read_only(&dir, options()).unwrap();
    assert!(check_view(&after).unwrap() >= floor);
    follower.refresh().unwrap();
    assert!(check_view(&follower).unwrap() >= floor);
    drop(follower);
    std::thread::sleep(Duration::from_millis(300)); // the readers see the dead writer's store

    let mut reader_views = 0u64;
    for (mut child, out) in children.drain(..) {
        child.kill().unwrap();
        child.wait().unwrap();
        for line in out.try_iter() {
            assert!(!line.contains("error "), "reader: {line}");
            if line.contains("view ") {
                reader_views += 1;
            }
        }
    }
    // The followers: every view a prefix that never went back, the first view whole at the
    // end; the lag from each ack to the first follower view that holds it.
    let acks = acks.lock().unwrap().clone();
    let mut lags: Vec<u128> = Vec::new();
    let mut follow_views = 0u64;
    for (mut child, out) in followers {
        let status = child.wait().unwrap();
        // Every line: the forwarding thread ends (and the channel closes) at the output's end.
        let lines: Vec<String> = out.iter().collect();
        for line in &lines {
            assert!(!line.contains("error "), "follower: {line}");
        }
        assert!(status.success(), "follower exited with {status}: {lines:?}");
        assert!(lines.iter().any(|l| l.contains("done ")), "{lines:?}");
        let views: Vec<(u64, u128)> = lines
            .iter()
            .filter_map(|l| l.split_once("follow "))
            .map(|(_, rest)| {
                let mut p = rest.split_whitespace();
                (
                    p.next().unwrap().parse().unwrap(),
                    p.next().unwrap().parse().unwrap(),
                )
            })
            .collect();
        follow_views += views.len() as u64;
        let opened = views.first().map_or(u128::MAX, |(_, t)| *t);
        // Acks from before the follower opened measure the open, not the following.
        for &(n, t) in acks.iter().filter(|(_, t)| *t >= opened) {
            if let Some(&(_, seen)) = views.iter().find(|(v, _)| *v >= n) {
                lags.push(seen.saturating_sub(t));
            }
        }
    }
    lags.sort_unstable();
    let pct = |p: usize| {
        lags.get(lags.len().saturating_sub(1) * p / 100)
            .copied()
            .unwrap_or(0)
    };
    eprintln!(
        "followers: {follow_views} views; lag from ack to view over {} acks: p50 {:.1} ms, \
         p99 {:.1} ms",
        lags.len(),
        pct(50) as f64 / 1e6,
        pct(99) as f64 / 1e6
    );
    assert!(follow_views >= 2 && !lags.is_empty());

    // The writer's store reopens for writing with every acknowledged write.
    drop(after);
    drop(old_view);
    let db = Db::open(&dir, options()).unwrap();
    let n = check_view(&db).unwrap();
    assert!(n >= floor, "{n} keys after reopen, {floor} acknowledged");
    db.close().unwrap();
    eprintln!(
        "multi-process: {opens} read-only opens in the parent (last view {last_view} keys), \
         {reader_views} in {readers} reader processes, writer killed at {floor}+ acked writes"
    );
    assert!(opens >= 3 && reader_views >= 3);
}
