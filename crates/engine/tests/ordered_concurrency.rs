//! Concurrency of the ordered store: snapshot isolation under one writer and several
//! readers while flushes and compactions run, group commit of concurrent `Sync` writers,
//! iterators that keep their view (and their table files) while everything under them is
//! rewritten, and the directory lock.
//!
//! `CAIRN_STRESS_BATCHES=<n>` sets how many batches the snapshot-isolation writer commits
//! (nightly runs raise it).

#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]

mod ordered_common;

use std::collections::BTreeSet;
use std::io::ErrorKind;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use cairn::Readable;
use cairn::{Db, Durability, Error, Keyspace, Options, Snapshot, DEFAULT_KEYSPACE};

use ordered_common::{collect, disk_tempdir, mem_tempdir, table_files, tiny};

/// Groups of keys the writer keeps equal: every batch rewrites (or removes) one whole group.
const GROUPS: u64 = 8;
/// Keys per group.
const GROUP_KEYS: u64 = 4;
/// Accounts between which every batch moves an amount; their sum never changes.
const ACCOUNTS: u64 = 16;
const OPENING_BALANCE: u64 = 1000;

fn group_key(g: u64, j: u64) -> String {
    format!("g{g}/k{j}")
}

fn account_key(a: u64) -> String {
    format!("acct{a:02}")
}

/// The value batch `n` writes to a group key: `n` followed by padding, so the memtable
/// fills (and flushes) every few dozen batches.
fn group_value(n: u64) -> Vec<u8> {
    let mut v = n.to_le_bytes().to_vec();
    v.extend_from_slice(&[b'p'; 56]);
    v
}

fn decode(v: &[u8]) -> u64 {
    u64::from_le_bytes(v[..8].try_into().unwrap())
}

/// Batch `n` removes its group instead of rewriting it when this holds.
fn removes(n: u64) -> bool {
    n.is_multiple_of(10)
}

/// The batch that last wrote group `g` among batches `1..=last`, if any.
fn last_write_of(g: u64, last: u64) -> Option<u64> {
    if last == 0 {
        return None;
    }
    let back = (last % GROUPS + GROUPS - g) % GROUPS;
    last.checked_sub(back).filter(|n| *n >= 1)
}

/// The keyspaces one writer of the snapshot-isolation tests writes: its groups (and its
/// `seq` key), their mirror, and (for a single writer) the accounts.
struct Spaces {
    groups: Keyspace,
    mirror: Keyspace,
    accounts: Option<Keyspace>,
}

impl Spaces {
    fn open(db: &Db, writer: &str, accounts: bool) -> Spaces {
        Spaces {
            groups: db.keyspace(&format!("groups{writer}")).unwrap(),
            mirror: db.keyspace(&format!("mirror{writer}")).unwrap(),
            accounts: accounts.then(|| db.keyspace("accounts").unwrap()),
        }
    }
}

/// Checks what one view shows against the writer's invariants; returns the batch number
/// the view is at. `groups` holds every pair of the `groups` keyspace (including `seq`),
/// `mirror` the mirror keyspace's and `accounts` the accounts' (either may be `None` when
/// the view covers only the groups).
fn check_view(
    groups: &[(Vec<u8>, Vec<u8>)],
    mirror: Option<&[(Vec<u8>, Vec<u8>)]>,
    accounts: Option<&[(Vec<u8>, Vec<u8>)]>,
) -> Result<u64, String> {
    let find = |pairs: &[(Vec<u8>, Vec<u8>)], key: &str| {
        pairs
            .iter()
            .find(|(k, _)| k == key.as_bytes())
            .map(|(_, v)| v.clone())
    };
    let last = find(groups, "seq").map_or(0, |v| decode(&v));
    let mut expected_keys = 1; // seq
    for g in 0..GROUPS {
        let want = last_write_of(g, last).filter(|n| !removes(*n));
        for j in 0..GROUP_KEYS {
            let got = find(groups, &group_key(g, j));
            if got != want.map(group_value) {
                return Err(format!(
                    "at batch {last}: {} is {:?}, expected batch {want:?}",
                    group_key(g, j),
                    got.map(|v| decode(&v))
                ));
            }
        }
        expected_keys += if want.is_some() { GROUP_KEYS } else { 0 };
        if let Some(mirror) = mirror {
            let got = find(mirror, &format!("g{g}"));
            if got.as_deref().map(decode) != want {
                return Err(format!("at batch {last}: mirror of group {g} is {got:?}"));
            }
        }
    }
    let keys = if last == 0 { 0 } else { expected_keys };
    if groups.len() as u64 != keys {
        return Err(format!(
            "at batch {last}: {} keys in groups, expected {keys}",
            groups.len()
        ));
    }
    if let Some(accounts) = accounts {
        let sum: u64 = accounts.iter().map(|(_, v)| decode(v)).sum();
        if last > 0 && (accounts.len() as u64 != ACCOUNTS || sum != ACCOUNTS * OPENING_BALANCE) {
            return Err(format!(
                "at batch {last}: {} accounts holding {sum}",
                accounts.len()
            ));
        }
    }
    Ok(last)
}

/// Reads through `snap` in one of several ways (full scans both directions, prefix scans,
/// point reads) and checks the view.
fn read_snapshot(s: &Spaces, snap: &Snapshot, round: u64) -> Result<u64, String> {
    let err = |e: cairn::Error| e.to_string();
    let groups: Vec<_> = match round % 3 {
        0 => snap
            .iter(&s.groups)
            .collect::<cairn::Result<_>>()
            .map_err(err)?,
        1 => {
            let mut v: Vec<_> = snap
                .iter(&s.groups)
                .rev()
                .collect::<cairn::Result<_>>()
                .map_err(err)?;
            v.reverse();
            v
        }
        _ => {
            let mut v = Vec::new();
            for g in 0..GROUPS {
                for j in 0..GROUP_KEYS {
                    let k = group_key(g, j);
                    if let Some(val) = snap.get(&s.groups, &k).map_err(err)? {
                        v.push((k.into_bytes(), val));
                    }
                }
            }
            if let Some(val) = snap.get(&s.groups, "seq").map_err(err)? {
                v.push((b"seq".to_vec(), val));
            }
            v
        }
    };
    let mirror: Vec<_> = snap
        .prefix(&s.mirror, "g")
        .collect::<cairn::Result<_>>()
        .map_err(err)?;
    let accounts: Option<Vec<_>> = match &s.accounts {
        Some(a) => Some(
            snap.range::<&[u8], _>(a, ..)
                .collect::<cairn::Result<_>>()
                .map_err(err)?,
        ),
        None => None,
    };
    check_view(&groups, Some(&mirror), accounts.as_deref())
}

/// Commits batches `1..=batches` to `s`: batch `n` rewrites (or removes) group `n % GROUPS`
/// and its mirror, moves an amount between two accounts (if `s` has them) and sets `seq`
/// to `n`. Returns the number of writes.
fn write_batches(db: &Db, s: &Spaces, batches: u64, durability: Option<Durability>) -> u64 {
    let mut balances = vec![OPENING_BALANCE; ACCOUNTS as usize];
    if let Some(accounts) = &s.accounts {
        let mut batch = db.batch();
        for a in 0..ACCOUNTS {
            batch.insert(accounts, account_key(a), OPENING_BALANCE.to_le_bytes());
        }
        batch.commit_with(durability).unwrap();
    }
    let mut ops = 0u64;
    for n in 1..=batches {
        let g = n % GROUPS;
        let mut batch = db.batch();
        for j in 0..GROUP_KEYS {
            if removes(n) {
                batch.remove(&s.groups, group_key(g, j));
            } else {
                batch.insert(&s.groups, group_key(g, j), group_value(n));
            }
        }
        if removes(n) {
            batch.remove(&s.mirror, format!("g{g}"));
        } else {
            batch.insert(&s.mirror, format!("g{g}"), n.to_le_bytes());
        }
        if let Some(accounts) = &s.accounts {
            let (from, to) = ((n * 7) % ACCOUNTS, (n * 13 + 1) % ACCOUNTS);
            let amount = (n % 50).min(balances[from as usize]);
            balances[from as usize] -= amount;
            balances[to as usize] += amount;
            batch.insert(
                accounts,
                account_key(from),
                balances[from as usize].to_le_bytes(),
            );
            batch.insert(
                accounts,
                account_key(to),
                balances[to as usize].to_le_bytes(),
            );
        }
        batch.insert(&s.groups, "seq", n.to_le_bytes());
        ops += batch.len() as u64;
        batch.commit_with(durability).unwrap();
    }
    ops
}

/// Runs one writer per entry of `durabilities` (each with its own keyspaces; the accounts
/// only with a single writer) against three readers that check every view, then checks
/// the final state before and after reopening.
fn run_isolation(name: &str, durabilities: &[Option<Durability>], batches: u64) {
    let batches = std::env::var("CAIRN_STRESS_BATCHES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(batches.saturating_mul(cairn::testing::soak_factor()));
    let with_accounts = durabilities.len() == 1;
    let writers: Vec<String> = (0..durabilities.len()).map(|w| w.to_string()).collect();
    let dir = mem_tempdir();
    let options = tiny(4 << 10, 256).l0_slowdown_trigger(4).l0_stop_trigger(8);
    let db = Db::open(dir.path(), options.clone()).unwrap();
    for w in &writers {
        Spaces::open(&db, w, with_accounts);
    }

    let done = AtomicBool::new(false);
    let inconsistencies = AtomicU64::new(0);
    let views = AtomicU64::new(0);
    let first_errors = Mutex::new(Vec::<String>::new());
    let start = Instant::now();
    let writes: u64 = thread::scope(|scope| {
        for r in 0..3u64 {
            let (db, writers) = (db.clone(), &writers);
            let (done, bad, views, errors) = (&done, &inconsistencies, &views, &first_errors);
            scope.spawn(move || {
                let spaces: Vec<_> = writers
                    .iter()
                    .map(|w| Spaces::open(&db, w, with_accounts))
                    .collect();
                let mut seen = vec![0u64; spaces.len()];
                let mut held: Option<(Snapshot, Vec<u64>)> = None;
                let report = |msg: String| {
                    bad.fetch_add(1, Ordering::Relaxed);
                    let mut e = errors.lock().unwrap();
                    if e.len() < 10 {
                        e.push(format!("reader {r}: {msg}"));
                    }
                };
                let mut round = r;
                while !done.load(Ordering::Acquire) {
                    round += 1;
                    // Every writer's keyspaces through one snapshot.
                    let snap = db.snapshot();
                    for (w, s) in spaces.iter().enumerate() {
                        match read_snapshot(s, &snap, round) {
                            Ok(at) if at < seen[w] => {
                                report(format!("writer {w}: went back from {} to {at}", seen[w]))
                            }
                            Ok(at) => seen[w] = at,
                            Err(e) => report(format!("writer {w}: {e}")),
                        }
                        // A plain scan reads at one seqno too.
                        let groups: cairn::Result<Vec<_>> = s.groups.iter().collect();
                        match groups.map_err(|e| e.to_string()) {
                            Ok(g) => {
                                if let Err(e) = check_view(&g, None, None) {
                                    report(format!("writer {w}: plain scan: {e}"));
                                }
                            }
                            Err(e) => report(e),
                        }
                        views.fetch_add(2, Ordering::Relaxed);
                    }
                    // Keep one snapshot for a while and read it again much later: its
                    // versions must survive the compactions in between.
                    match held.take() {
                        Some((old, at)) if round % 50 != 0 => {
                            for (w, s) in spaces.iter().enumerate() {
                                match read_snapshot(s, &old, round) {
                                    Ok(again) if again == at[w] => {}
                                    Ok(again) => report(format!(
                                        "writer {w}: held snapshot {} now {again}",
                                        at[w]
                                    )),
                                    Err(e) => report(format!("writer {w}: held snapshot: {e}")),
                                }
                                views.fetch_add(1, Ordering::Relaxed);
                            }
                            held = Some((old, at));
                        }
                        _ => held = Some((snap, seen.clone())),
                    }
                }
            });
        }
        let handles: Vec<_> = writers
            .iter()
            .zip(durabilities)
            .map(|(w, durability)| {
                let db = db.clone();
                scope.spawn(move || {
                    let s = Spaces::open(&db, w, with_accounts);
                    write_batches(&db, &s, batches, *durability)
                })
            })
            .collect();
        let writes = handles.into_iter().map(|h| h.join().unwrap()).sum();
        done.store(true, Ordering::Release);
        writes
    });
    let stats = db.stats();
    let bad = inconsistencies.load(Ordering::Relaxed);
    let views = views.load(Ordering::Relaxed);
    eprintln!(
        "{name}: {} writers, {writes} writes in {:.1?}; {views} reader views checked, \
         {bad} inconsistencies; {} flushes, {} compactions, {} stalls",
        writers.len(),
        start.elapsed(),
        stats.flushes,
        stats.compactions,
        stats.write_stalls
    );
    assert_eq!(bad, 0, "{:#?}", first_errors.lock().unwrap());
    assert!(views > 0);
    assert!(
        stats.flushes > 10 && stats.compactions > 0,
        "background work did not run: {stats:?}"
    );

    // The final state, and the same after reopening.
    let check_final = |db: &Db| {
        let snap = db.snapshot();
        for w in &writers {
            let s = Spaces::open(db, w, with_accounts);
            for round in 0..3 {
                assert_eq!(read_snapshot(&s, &snap, round), Ok(batches), "writer {w}");
            }
        }
    };
    check_final(&db);
    db.close().unwrap();
    check_final(&Db::open(dir.path(), options).unwrap());
}

#[test]
fn readers_see_exactly_one_prefix_while_one_writer_commits_batches() {
    run_isolation("one writer", &[None], 6000);
}

#[test]
fn readers_see_one_prefix_per_writer_with_concurrent_writers_of_every_durability() {
    run_isolation(
        "several writers",
        &[
            Some(Durability::Buffered),
            Some(Durability::Async { queue_depth: 8 }),
            Some(Durability::None),
            Some(Durability::Periodic(Duration::from_millis(2))),
            Some(Durability::Sync),
        ],
        1500,
    );
}

#[test]
fn concurrent_sync_writers_share_fsyncs_and_lose_nothing() {
    const THREADS: usize = 4;
    const PER_THREAD: usize = 60;
    // Durability is under test: a disk-backed directory, where fsync costs milliseconds.
    let dir = disk_tempdir();
    let options = Options::default().durability(Durability::Sync);
    let db = Db::open(dir.path(), options.clone()).unwrap();

    let write = |db: &Db, prefix: String, count: usize| {
        let ks = db.keyspace(DEFAULT_KEYSPACE).unwrap();
        for i in 0..count {
            let before = db.last_seqno();
            ks.insert(format!("{prefix}/{i:04}"), format!("{prefix}-{i}"))
                .unwrap();
            // Acknowledged under Sync means durable: the write's seqno is above `before`.
            let durable = db.durable_seqno();
            assert!(durable > before, "durable {durable} <= {before}");
        }
    };

    let start = Instant::now();
    write(&db, "solo".into(), PER_THREAD);
    let solo = start.elapsed();

    let start = Instant::now();
    thread::scope(|s| {
        for t in 0..THREADS {
            let db = db.clone();
            s.spawn(move || write(&db, format!("t{t}"), PER_THREAD));
        }
    });
    let together = start.elapsed();
    let solo_rate = PER_THREAD as f64 / solo.as_secs_f64();
    let together_rate = (THREADS * PER_THREAD) as f64 / together.as_secs_f64();
    eprintln!(
        "Sync writes: 1 thread {solo_rate:.0}/s, {THREADS} threads {together_rate:.0}/s \
         ({:.2}x; above 1 means concurrent writers shared fsyncs)",
        together_rate / solo_rate
    );
    assert_eq!(db.durable_seqno(), db.last_seqno());
    assert_eq!(db.last_seqno(), ((THREADS + 1) * PER_THREAD) as u64);
    drop(db);

    let db = Db::open(dir.path(), options).unwrap();
    let ks = db.keyspace(DEFAULT_KEYSPACE).unwrap();
    let all = collect(ks.iter());
    assert_eq!(all.len(), (THREADS + 1) * PER_THREAD);
    for t in (0..THREADS)
        .map(|t| format!("t{t}"))
        .chain(["solo".to_string()])
    {
        for i in 0..PER_THREAD {
            assert_eq!(
                ks.get(format!("{t}/{i:04}")).unwrap(),
                Some(format!("{t}-{i}").into_bytes())
            );
        }
    }
}

const SCAN_KEYS: u32 = 3000;

fn scan_key(i: u32) -> String {
    format!("k{i:05}")
}

/// Overwrites every key `rounds` times (removing every third key in round 2), flushing
/// and compacting after each round.
fn rewrite_everything(db: &Db, ks: &Keyspace, rounds: std::ops::Range<u32>) {
    for round in rounds {
        for i in 0..SCAN_KEYS {
            if round == 2 && i % 3 == 0 {
                ks.remove(scan_key(i)).unwrap();
            } else {
                ks.insert(scan_key(i), format!("v{round}-{i}")).unwrap();
            }
        }
        db.flush().unwrap();
        db.wait_for_compactions().unwrap();
    }
}

#[test]
fn iterators_keep_their_view_and_their_files_while_tables_are_rewritten() {
    let dir = mem_tempdir();
    let db = Db::open(dir.path(), tiny(8 << 10, 512)).unwrap();
    let ks = db.keyspace(DEFAULT_KEYSPACE).unwrap();
    for i in 0..SCAN_KEYS {
        ks.insert(scan_key(i), format!("v0-{i}")).unwrap();
    }
    db.flush().unwrap();
    db.wait_for_compactions().unwrap();
    let original: Vec<(Vec<u8>, Vec<u8>)> = (0..SCAN_KEYS)
        .map(|i| (scan_key(i).into_bytes(), format!("v0-{i}").into_bytes()))
        .collect();
    let files_before = table_files(dir.path());
    assert!(!files_before.is_empty());

    // Partly consumed from each end, not yet started, and through a snapshot.
    let mut forward = ks.iter();
    let mut backward = ks.iter();
    let untouched = ks.range::<&[u8], _>(..);
    let snap = db.snapshot();
    let mut through_snapshot = snap.iter(&ks);
    let half = (SCAN_KEYS / 2) as usize;
    let mut got_forward: Vec<_> = forward.by_ref().take(half).map(|r| r.unwrap()).collect();
    let mut got_backward: Vec<_> = backward
        .by_ref()
        .rev()
        .take(half / 2)
        .map(|r| r.unwrap())
        .collect();
    let mut got_snapshot: Vec<_> = through_snapshot
        .by_ref()
        .take(10)
        .map(|r| r.unwrap())
        .collect();

    // Meanwhile a scan on another thread stops halfway until the rewriting is done: the
    // writer must never wait for it.
    let (halfway_tx, halfway_rx) = mpsc::channel::<()>();
    let (rewritten_tx, rewritten_rx) = mpsc::channel::<()>();
    let scanner = {
        let ks = ks.clone();
        let original = original.clone();
        thread::spawn(move || {
            let mut it = ks.iter();
            let mut got: Vec<_> = it.by_ref().take(100).map(|r| r.unwrap()).collect();
            halfway_tx.send(()).unwrap();
            rewritten_rx.recv().unwrap();
            got.extend(it.map(|r| r.unwrap()));
            assert!(got == original, "the thread's scan changed");
        })
    };
    halfway_rx.recv().unwrap();

    let (finished_tx, finished_rx) = mpsc::channel::<()>();
    let writer = {
        let (db, ks) = (db.clone(), ks.clone());
        thread::spawn(move || {
            rewrite_everything(&db, &ks, 1..4);
            finished_tx.send(()).unwrap();
        })
    };
    // Keep consuming while the writer works.
    got_forward.extend(forward.by_ref().take(500).map(|r| r.unwrap()));
    let finished = finished_rx.recv_timeout(Duration::from_secs(120));
    assert!(finished.is_ok(), "the writer was blocked by open iterators");
    writer.join().unwrap();
    rewritten_tx.send(()).unwrap();
    scanner.join().unwrap();
    rewrite_everything(&db, &ks, 4..6);

    // Every table the iterators started with is still on disk, though the store no
    // longer lists some of them.
    let files_during = table_files(dir.path());
    assert!(
        files_before.is_subset(&files_during),
        "removed under open iterators: {:?}",
        files_before.difference(&files_during).collect::<Vec<_>>()
    );
    let listed: usize = db.stats().tables_per_level.iter().sum();
    assert!(
        files_during.len() > listed,
        "no obsolete table was kept for the iterators"
    );

    got_forward.extend(forward.map(|r| r.unwrap()));
    got_backward.extend(backward.rev().map(|r| r.unwrap()));
    got_backward.reverse();
    got_snapshot.extend(through_snapshot.map(|r| r.unwrap()));
    assert!(got_forward == original, "forward scan changed");
    assert!(got_backward == original, "backward scan changed");
    assert!(got_snapshot == original, "snapshot scan changed");
    assert!(collect(untouched) == original, "scan started late changed");
    let now = collect(ks.iter());
    assert_eq!(now.len() as u32, SCAN_KEYS);
    assert!(now.iter().all(|(_, v)| v.starts_with(b"v5-")));

    // With the readers gone, the next flush deletes every table the store does not list.
    drop(snap);
    ks.insert("last", "write").unwrap();
    db.flush().unwrap();
    db.wait_for_compactions().unwrap();
    let files_after = table_files(dir.path());
    let listed: usize = db.stats().tables_per_level.iter().sum();
    assert_eq!(
        files_after.len(),
        listed,
        "obsolete tables left: {files_after:?}"
    );
    let kept: BTreeSet<_> = files_before.intersection(&files_after).collect();
    assert!(kept.len() < files_before.len(), "nothing was deleted");
}

fn is_locked(err: &Error) -> bool {
    matches!(err, Error::Io { source, .. } if source.kind() == ErrorKind::WouldBlock)
        && err.to_string().contains("already locked")
}

#[test]
fn a_second_open_fails_until_the_first_is_closed_and_dropped() {
    let dir = mem_tempdir();
    let db = Db::open(dir.path(), tiny(4 << 10, 256)).unwrap();
    let ks = db.keyspace(DEFAULT_KEYSPACE).unwrap();
    ks.insert("k", "v").unwrap();

    let err = Db::open(dir.path(), Options::default()).unwrap_err();
    assert!(is_locked(&err), "{err:?}");
    // The refused open changed nothing.
    assert_eq!(ks.get("k").unwrap(), Some(b"v".to_vec()));
    ks.insert("k2", "v2").unwrap();

    // Closed, but a keyspace handle and an iterator still hold the store.
    let it = ks.iter();
    db.close().unwrap();
    assert!(is_locked(
        &Db::open(dir.path(), Options::default()).unwrap_err()
    ));
    drop(ks);
    assert!(is_locked(
        &Db::open(dir.path(), Options::default()).unwrap_err()
    ));
    assert_eq!(collect(it).len(), 2);

    let db = Db::open(dir.path(), Options::default()).unwrap();
    let ks = db.keyspace(DEFAULT_KEYSPACE).unwrap();
    assert_eq!(ks.get("k2").unwrap(), Some(b"v2".to_vec()));
    drop(ks);
    drop(db);

    // Dropping the last handle without close releases the lock too; and of several
    // threads racing to open the same store, exactly one wins.
    for _ in 0..20 {
        let winners = AtomicU64::new(0);
        let barrier = std::sync::Barrier::new(4);
        let held = Mutex::new(Vec::new());
        thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    barrier.wait();
                    match Db::open(dir.path(), Options::default()) {
                        Ok(db) => {
                            winners.fetch_add(1, Ordering::Relaxed);
                            held.lock().unwrap().push(db);
                        }
                        Err(e) => assert!(is_locked(&e), "{e:?}"),
                    }
                });
            }
        });
        assert_eq!(winners.load(Ordering::Relaxed), 1);
        drop(held);
    }
}

/// Regression: a write racing `close` could be acknowledged yet lost. `close` set its
/// flag and synced the log, but a writer that had already passed the flag check could
/// then append: under `Durability::None` into the log buffer nobody wrote out again, under
/// `Async` into the queue after the log thread had exited. Now `close` waits for the write
/// group being led before its final sync, and a group led after `close` began is refused,
/// so every acknowledged write is in the synced log.
#[test]
fn writes_acknowledged_while_the_store_closes_survive_reopening() {
    let modes = [
        Durability::None,
        Durability::Async { queue_depth: 4 },
        Durability::Buffered,
        Durability::Periodic(Duration::from_millis(1)),
        Durability::Sync,
    ];
    let dir = mem_tempdir();
    let mut lost = Vec::new();
    for round in 0..40u32 {
        let db = Db::open(dir.path(), tiny(64 << 10, 1024)).unwrap();
        let acked: Vec<u64> = thread::scope(|s| {
            let handles: Vec<_> = modes
                .iter()
                .enumerate()
                .map(|(t, mode)| {
                    let ks = db.keyspace(DEFAULT_KEYSPACE).unwrap();
                    s.spawn(move || {
                        let mut n = 0u64;
                        while ks
                            .insert_with(format!("r{round}/t{t}/{n:08}"), [b'v'; 20], Some(*mode))
                            .is_ok()
                        {
                            n += 1;
                        }
                        n
                    })
                })
                .collect();
            thread::sleep(Duration::from_millis(5 + u64::from(round % 7)));
            db.clone().close().unwrap();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        drop(db);
        let db = Db::open(dir.path(), tiny(64 << 10, 1024)).unwrap();
        let ks = db.keyspace(DEFAULT_KEYSPACE).unwrap();
        for (t, n) in acked.iter().enumerate() {
            let found = ks.prefix(format!("r{round}/t{t}/")).count() as u64;
            if found < *n {
                lost.push(format!(
                    "round {round}, {:?}: {n} acknowledged, {found} recovered",
                    modes[t]
                ));
            }
        }
    }
    assert!(lost.is_empty(), "{lost:#?}");
}

/// Point reads take the current super version and the visible seqno without a lock
/// (`db/super_version.rs`, invariant 1). While one writer inserts keys in order into a
/// tiny memtable, so that flushes and compactions publish a new super version every few
/// writes, readers that learn a write was acknowledged must then find it, and find it
/// with its value, through every kind of point read.
#[test]
fn point_reads_find_every_acknowledged_write_while_super_versions_change() {
    let dir = mem_tempdir();
    let db = Db::open(dir.path(), tiny(4 << 10, 512)).unwrap();
    let ks = db.keyspace(DEFAULT_KEYSPACE).unwrap();
    const WRITES: u64 = 6000;
    let acknowledged = AtomicU64::new(0);
    let done = AtomicBool::new(false);
    let key = |i: u64| format!("key{i:08}");
    thread::scope(|s| {
        for reader in 0..2u64 {
            let (ks, acknowledged, done) = (&ks, &acknowledged, &done);
            s.spawn(move || {
                let mut buf = Vec::new();
                let mut checks = 0u64;
                while !done.load(Ordering::Acquire) {
                    let n = acknowledged.load(Ordering::Acquire);
                    let Some(last) = n.checked_sub(1) else {
                        continue;
                    };
                    // The newest acknowledged write, and one older one.
                    for i in [last, (last * 7 + reader) % n] {
                        let want = i.to_le_bytes();
                        let k = key(i);
                        assert_eq!(ks.get(&k).unwrap().as_deref(), Some(&want[..]), "get {k}");
                        assert!(ks.get_into(&k, &mut buf).unwrap(), "get_into {k}");
                        assert_eq!(buf, want, "get_into {k}");
                        assert!(ks.contains_key(&k).unwrap(), "contains_key {k}");
                        checks += 1;
                    }
                }
                assert!(checks > 0);
            });
        }
        for i in 0..WRITES {
            ks.insert(key(i), i.to_le_bytes()).unwrap();
            acknowledged.store(i + 1, Ordering::Release);
        }
        done.store(true, Ordering::Release);
    });
    let stats = db.stats();
    assert!(stats.flushes > 10, "only {} flushes", stats.flushes);
}

/// `Keyspace::get_many` reads every key at one point: each batch rewrites 40 keys (more
/// than one prefetch group of 16) with one value, and every batched read while batches
/// commit, memtables fill and flushes run sees all 40 with the same value, or none.
#[test]
fn get_many_sees_each_batch_for_every_key_or_for_none() {
    let dir = mem_tempdir();
    let db = Db::open(dir.path(), tiny(4 << 10, 512)).unwrap();
    let ks = db.keyspace(DEFAULT_KEYSPACE).unwrap();
    const BATCHES: u64 = 1500;
    let keys: Vec<String> = (0..40).map(|i| format!("k{:02}", (i * 17) % 40)).collect();
    let done = AtomicBool::new(false);
    thread::scope(|s| {
        for _ in 0..2 {
            let (ks, keys, done) = (&ks, &keys, &done);
            s.spawn(move || {
                let mut seen = BTreeSet::new();
                while !done.load(Ordering::Acquire) {
                    let values = ks.get_many(keys).unwrap();
                    assert_eq!(values.len(), keys.len());
                    let first = values[0].clone();
                    assert!(
                        values.iter().all(|v| *v == first),
                        "a batched read saw two batches: {values:?}"
                    );
                    seen.insert(first);
                }
                assert!(!seen.is_empty());
            });
        }
        for b in 1..=BATCHES {
            let mut batch = db.batch();
            for k in &keys {
                batch.insert(&ks, k, b.to_le_bytes());
            }
            batch.commit().unwrap();
        }
        done.store(true, Ordering::Release);
    });
    assert!(
        db.stats().flushes > 10,
        "only {} flushes",
        db.stats().flushes
    );
    let last = ks.get_many(&keys).unwrap();
    assert!(last
        .iter()
        .all(|v| v.as_deref() == Some(&BATCHES.to_le_bytes()[..])));
    drop(ks);
    db.close().unwrap();
}
