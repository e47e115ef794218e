//! Tests of [`super::MemFs`]: crash images, directory durability, fault injection.
#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]
use super::super::read_all;
use super::*;

fn setup() -> (MemFs, PathBuf) {
    let fs = MemFs::new();
    let dir = PathBuf::from("/db");
    fs.create_dir(&dir).unwrap();
    fs.sync_dir(Path::new("/")).unwrap();
    (fs, dir)
}

fn errno(res: Result<()>) -> Option<i32> {
    match res {
        Err(Error::Io { source, .. }) => source.raw_os_error(),
        _ => None,
    }
}

#[test]
fn unsynced_data_is_lost_and_synced_data_kept() {
    let (fs, dir) = setup();
    let p = dir.join("f");
    let mut w = fs.create(&p).unwrap();
    fs.sync_dir(&dir).unwrap();
    w.append(b"durable").unwrap();
    w.sync_data().unwrap();
    w.append(b" lost").unwrap();
    assert_eq!(read_all(&fs, &p).unwrap(), b"durable lost");
    let after = fs.crash();
    assert_eq!(read_all(&after, &p).unwrap(), b"durable");
    // The crashed copy is independent: old handles do not reach it.
    w.append(b"more").unwrap();
    assert_eq!(read_all(&after, &p).unwrap(), b"durable");
}

#[test]
fn process_crash_keeps_everything_handed_to_the_file_system() {
    let (fs, dir) = setup();
    let (a, b) = (dir.join("a"), dir.join("b"));
    let mut w = fs.create(&a).unwrap();
    w.append(b"synced").unwrap();
    w.sync_data().unwrap();
    fs.sync_dir(&dir).unwrap();
    w.append(b" and not").unwrap();
    fs.create(&b).unwrap().append(b"never synced").unwrap();
    fs.rename(&b, &dir.join("c")).unwrap();
    let after = fs.crash_with(CrashOptions::KeepAll);
    assert_eq!(after.list_dir(&dir).unwrap(), vec!["a", "c"]);
    assert_eq!(read_all(&after, &a).unwrap(), b"synced and not");
    assert_eq!(read_all(&after, &dir.join("c")).unwrap(), b"never synced");
    // The copy is independent, and what was unsynced still is: a later power loss
    // loses it.
    w.append(b"!").unwrap();
    assert_eq!(read_all(&after, &a).unwrap(), b"synced and not");
    assert_eq!(after.unsynced_entries(&dir), vec!["c"]);
    let then = after.crash();
    assert_eq!(then.list_dir(&dir).unwrap(), vec!["a"]);
    assert_eq!(read_all(&then, &a).unwrap(), b"synced");
}

#[test]
fn unsynced_create_is_lost_until_the_directory_is_synced() {
    let (fs, dir) = setup();
    let p = dir.join("f");
    let mut w = fs.create(&p).unwrap();
    w.append(b"data").unwrap();
    w.sync_all().unwrap();
    assert_eq!(fs.unsynced_entries(&dir), vec!["f"]);
    assert!(!fs.crash().exists(&p).unwrap(), "name not durable");
    fs.sync_dir(&dir).unwrap();
    assert!(fs.unsynced_entries(&dir).is_empty());
    assert_eq!(read_all(&fs.crash(), &p).unwrap(), b"data");
}

#[test]
fn unsynced_rename_and_remove_are_undone() {
    let (fs, dir) = setup();
    let (a, b) = (dir.join("a"), dir.join("b"));
    let mut w = fs.create(&a).unwrap();
    w.append(b"A").unwrap();
    w.sync_data().unwrap();
    fs.sync_dir(&dir).unwrap();
    fs.rename(&a, &b).unwrap();
    assert_eq!(fs.unsynced_entries(&dir), vec!["a", "b"]);
    let after = fs.crash();
    assert_eq!(after.list_dir(&dir).unwrap(), vec!["a"]);
    fs.sync_dir(&dir).unwrap();
    assert_eq!(fs.crash().list_dir(&dir).unwrap(), vec!["b"]);
    fs.remove(&b).unwrap();
    assert_eq!(fs.crash().list_dir(&dir).unwrap(), vec!["b"]);
    fs.sync_dir(&dir).unwrap();
    assert!(fs.crash().list_dir(&dir).unwrap().is_empty());
}

#[test]
fn unsynced_directory_loses_its_files() {
    let fs = MemFs::new();
    let dir = PathBuf::from("/new");
    fs.create_dir(&dir).unwrap();
    let p = dir.join("f");
    fs.create(&p).unwrap().sync_data().unwrap();
    fs.sync_dir(&dir).unwrap();
    // The parent of /new was never synced, so /new and everything in it is gone.
    let after = fs.crash();
    assert!(!after.exists(&dir).unwrap());
    assert!(!after.exists(&p).unwrap());
}

#[test]
fn random_crash_keeps_a_prefix_and_tears_one_append() {
    let (fs, dir) = setup();
    let p = dir.join("f");
    let mut w = fs.create(&p).unwrap();
    fs.sync_dir(&dir).unwrap();
    w.append(b"SYNCED").unwrap();
    w.sync_data().unwrap();
    let appends: [&[u8]; 3] = [b"aaaa", b"bbbb", b"cccc"];
    for a in appends {
        w.append(a).unwrap();
    }
    let full = read_all(&fs, &p).unwrap();
    let mut lengths = BTreeSet::new();
    let mut filled = false;
    for seed in 0..200 {
        let after = fs.crash_with(CrashOptions::Random { seed });
        let got = read_all(&after, &p).unwrap();
        assert!(got.starts_with(b"SYNCED"), "seed {seed}");
        assert!(got.len() <= full.len());
        // Every byte is either the written one, or (only inside the torn append) fill.
        let same = got.iter().zip(&full).take_while(|(a, b)| a == b).count();
        if got.len() > same {
            // The differing bytes all lie inside the one torn append.
            let torn_start = 6 + (same - 6) / 4 * 4;
            assert!(got.len() <= torn_start + 4, "seed {seed}: {got:?}");
            filled = true;
        }
        lengths.insert(got.len());
        // Deterministic in the seed.
        assert_eq!(
            read_all(&fs.crash_with(CrashOptions::Random { seed }), &p).unwrap(),
            got
        );
    }
    assert!(lengths.len() > 5, "varied tear points: {lengths:?}");
    assert!(
        filled,
        "some crash filled a torn append with zeros or noise"
    );
}

#[test]
fn fault_fires_at_exactly_the_nth_call_once() {
    let (fs, dir) = setup();
    let mut w = fs.create(&dir.join("f")).unwrap();
    let before = fs.op_count(Op::Write);
    fs.inject(Fault {
        op: Op::Write,
        nth: before + 3,
        kind: FaultKind::Enospc,
        forever: false,
    });
    assert!(w.append(b"1").is_ok());
    assert!(w.append(b"2").is_ok());
    assert_eq!(errno(w.append(b"3")), Some(libc::ENOSPC));
    assert!(w.append(b"4").is_ok());
    assert_eq!(w.len(), 3, "the failed append wrote nothing");
    assert_eq!(fs.op_count(Op::Write), before + 4);
}

#[test]
fn forever_fault_keeps_failing_until_cleared() {
    let (fs, dir) = setup();
    fs.inject(Fault {
        op: Op::Rename,
        nth: 2,
        kind: FaultKind::Eio,
        forever: true,
    });
    let (a, b) = (dir.join("a"), dir.join("b"));
    fs.create(&a).unwrap();
    fs.rename(&a, &b).unwrap();
    for _ in 0..3 {
        assert_eq!(errno(fs.rename(&b, &a)), Some(libc::EIO));
    }
    fs.clear_faults();
    fs.rename(&b, &a).unwrap();
}

#[test]
fn each_op_kind_can_fail() {
    let (fs, dir) = setup();
    let p = dir.join("f");
    for op in [Op::Create, Op::SyncDir, Op::Remove] {
        fs.inject(Fault {
            op,
            nth: fs.op_count(op) + 1,
            kind: FaultKind::Eio,
            forever: false,
        });
    }
    assert!(fs.create(&p).is_err());
    let mut w = fs.create(&p).unwrap();
    assert_eq!(errno(fs.sync_dir(&dir)), Some(libc::EIO));
    fs.sync_dir(&dir).unwrap();
    fs.inject(Fault {
        op: Op::Sync,
        nth: fs.op_count(Op::Sync) + 1,
        kind: FaultKind::Eio,
        forever: false,
    });
    w.append(b"x").unwrap();
    assert_eq!(errno(w.sync_data()), Some(libc::EIO));
    // A plain EIO on sync loses nothing yet: a later sync can still persist it.
    w.sync_data().unwrap();
    assert_eq!(read_all(&fs.crash(), &p).unwrap(), b"x");
    assert!(fs.remove(&p).is_err());
    fs.remove(&p).unwrap();
}

#[test]
fn lost_fsync_drops_the_unsynced_bytes_for_good() {
    let (fs, dir) = setup();
    let p = dir.join("f");
    let mut w = fs.create(&p).unwrap();
    fs.sync_dir(&dir).unwrap();
    w.append(b"ok").unwrap();
    w.sync_data().unwrap();
    w.append(b"gone").unwrap();
    fs.inject(Fault {
        op: Op::Sync,
        nth: fs.op_count(Op::Sync) + 1,
        kind: FaultKind::FsyncLost,
        forever: false,
    });
    assert_eq!(errno(w.sync_data()), Some(libc::EIO));
    assert_eq!(
        read_all(&fs, &p).unwrap(),
        b"okgone",
        "page cache still has it"
    );
    w.append(b"!").unwrap();
    w.sync_data().unwrap(); // "succeeds", as on Linux
    assert_eq!(read_all(&fs.crash(), &p).unwrap(), b"ok\0\0\0\0!");
}

#[test]
fn corrupt_flips_a_byte_in_both_images() {
    let (fs, dir) = setup();
    let p = dir.join("f");
    let mut w = fs.create(&p).unwrap();
    fs.sync_dir(&dir).unwrap();
    w.append(b"abc").unwrap();
    w.sync_data().unwrap();
    fs.corrupt(&p, 1, 0x01).unwrap();
    fs.corrupt(&p, 99, 0x01).unwrap();
    assert_eq!(read_all(&fs, &p).unwrap(), b"acc");
    assert_eq!(read_all(&fs.crash(), &p).unwrap(), b"acc");
}

#[test]
fn locks_are_released_on_drop_and_by_a_crash() {
    let (fs, dir) = setup();
    let p = dir.join("LOCK");
    let held = fs.lock(&p).unwrap();
    assert!(fs.lock(&p).is_err());
    let after = fs.crash();
    drop(after.lock(&p).unwrap());
    drop(held);
    fs.lock(&p).unwrap();
}

#[test]
fn a_directory_rename_is_durable_only_after_its_parent_is_synced() {
    let (fs, dir) = setup();
    let tmp = Path::new("/db.tmp");
    fs.create_dir(tmp).unwrap();
    let mut w = fs.create(&tmp.join("f")).unwrap();
    w.append(b"data").unwrap();
    w.sync_data().unwrap();
    fs.sync_dir(tmp).unwrap();
    fs.sync_dir(Path::new("/")).unwrap();
    let dest = Path::new("/backup");
    assert!(fs.rename(tmp, &dir).is_err(), "the target exists");
    fs.rename(tmp, dest).unwrap();
    assert_eq!(read_all(&fs, &dest.join("f")).unwrap(), b"data");
    assert!(!fs.exists(tmp).unwrap());

    // Before the parent is synced, a power loss keeps the old name, with its files.
    let lost = fs.crash();
    assert!(!lost.exists(dest).unwrap());
    assert_eq!(read_all(&lost, &tmp.join("f")).unwrap(), b"data");
    // A random crash keeps either the old or the new name, never both, never empty.
    for seed in 0..8 {
        let img = fs.crash_with(CrashOptions::Random { seed });
        let (old, new) = (img.exists(tmp).unwrap(), img.exists(dest).unwrap());
        assert!(old != new, "seed {seed}");
        let at = if new { dest } else { tmp };
        assert_eq!(read_all(&img, &at.join("f")).unwrap(), b"data");
    }
    // A process crash keeps the rename pending until the parent is synced.
    let kept = fs.crash_with(CrashOptions::KeepAll);
    kept.sync_dir(Path::new("/")).unwrap();
    assert_eq!(read_all(&kept.crash(), &dest.join("f")).unwrap(), b"data");

    fs.sync_dir(Path::new("/")).unwrap();
    let after = fs.crash();
    assert!(!after.exists(tmp).unwrap());
    assert_eq!(read_all(&after, &dest.join("f")).unwrap(), b"data");
}

#[test]
fn a_hard_link_shares_the_file_and_remove_dir_needs_an_empty_directory() {
    let (fs, dir) = setup();
    let a = dir.join("a");
    let mut w = fs.create(&a).unwrap();
    w.append(b"one").unwrap();
    w.sync_data().unwrap();
    let b = dir.join("b");
    fs.hard_link(&a, &b).unwrap();
    assert!(fs.hard_link(&a, &b).is_err(), "the link name exists");
    w.append(b"two").unwrap();
    assert_eq!(read_all(&fs, &b).unwrap(), b"onetwo");
    fs.remove(&a).unwrap();
    assert_eq!(read_all(&fs, &b).unwrap(), b"onetwo");
    fs.sync_dir(&dir).unwrap();
    assert_eq!(read_all(&fs.crash(), &b).unwrap(), b"one");

    assert!(fs.remove_dir(&dir).is_err(), "not empty");
    fs.remove(&b).unwrap();
    fs.remove_dir(&dir).unwrap();
    assert!(!fs.exists(&dir).unwrap());
}
