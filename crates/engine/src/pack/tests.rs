//! Packs on [`MemFs`]: a round trip restores the store; any flipped byte, any truncation
//! and any member name that could leave the destination is refused before anything is
//! written; a power loss during an unpack never shows a partial destination.
#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use super::format::{self, Entry};
use super::{pack_with, unpack_with};
use crate::checksum::Checksum;
use crate::db::Db;
use crate::error::{Error, FileKind};
use crate::fs::{read_all, Fault, FaultKind, FileSystem, MemFs, Op};
use crate::options::{Durability, Options};

type Contents = BTreeMap<Vec<u8>, Vec<u8>>;

fn options() -> Options {
    Options {
        durability: Durability::Buffered,
        memtable_size: 2 << 10,
        block_size: 256,
        background_threads: 1,
        ..Options::default()
    }
}

fn read(fs: &MemFs, dir: &str) -> Contents {
    let db = Db::open_with_fs(Arc::new(fs.clone()), Path::new(dir), options()).unwrap();
    let ks = db.keyspace("k").unwrap();
    let all = ks.iter().map(|kv| kv.unwrap()).collect();
    drop(ks);
    db.close().unwrap();
    all
}

/// A closed store at `/db` with a table and WAL records, packed to `/db.pack`.
fn packed() -> (MemFs, Contents) {
    let fs = MemFs::new();
    let db = Db::open_with_fs(Arc::new(fs.clone()), Path::new("/db"), options()).unwrap();
    let ks = db.keyspace("k").unwrap();
    for i in 0..60u32 {
        ks.insert(format!("key{i:03}"), format!("value {i}"))
            .unwrap();
        if i == 40 {
            db.flush().unwrap();
        }
    }
    drop(ks);
    db.close().unwrap();
    let model = read(&fs, "/db");
    let info = pack_with(&fs, Path::new("/db"), Path::new("/db.pack")).unwrap();
    assert!(info.members >= 4, "{info:?}");
    assert_eq!(fs.file_len(Path::new("/db.pack")).unwrap(), info.file_bytes);
    (fs, model)
}

#[test]
fn unpack_restores_the_packed_store_and_a_power_loss_keeps_it() {
    let (fs, model) = packed();
    let info = unpack_with(&fs, Path::new("/db.pack"), Path::new("/restored")).unwrap();
    assert!(info.members >= 4);
    let crashed = fs.crash();
    assert_eq!(read(&crashed, "/restored"), model);
    assert_eq!(read(&fs, "/restored"), model);
}

#[test]
fn every_flipped_byte_and_every_truncation_is_refused_before_writing() {
    let (fs, _) = packed();
    let pack = Path::new("/db.pack");
    let good = read_all(&fs, pack).unwrap();
    let dest = Path::new("/out");
    for i in 0..good.len() {
        fs.corrupt(pack, i, 0x04).unwrap();
        let res = unpack_with(&fs, pack, dest);
        assert!(
            matches!(&res, Err(Error::Corruption(c)) if c.file == FileKind::Pack)
                || matches!(&res, Err(Error::UnsupportedVersion { .. })),
            "byte {i}: {res:?}"
        );
        fs.corrupt(pack, i, 0x04).unwrap();
        assert_eq!(
            fs.list_dir(Path::new("/")).unwrap(),
            ["db", "db.pack"],
            "byte {i}"
        );
    }
    for cut in (0..good.len()).step_by(7) {
        let short = Path::new("/short.pack");
        let mut w = fs.create(short).unwrap();
        w.append(&good[..cut]).unwrap();
        drop(w);
        assert!(unpack_with(&fs, short, dest).is_err(), "cut {cut}");
        fs.remove(short).unwrap();
        assert!(!fs.exists(dest).unwrap());
    }
}

/// A pack crafted with valid checksums but a member name holding a path.
fn crafted(name: &str) -> Vec<u8> {
    let mut out = format::encode_header(1);
    let members = [(name, b"evil".as_slice()), ("CURRENT", b"x\n".as_slice())];
    let mut dir = Vec::new();
    dir.extend_from_slice(&(members.len() as u32).to_le_bytes());
    for (n, bytes) in members {
        let offset = out.len() as u64;
        out.extend_from_slice(bytes);
        dir.push(n.len() as u8);
        dir.extend_from_slice(n.as_bytes());
        dir.extend_from_slice(&offset.to_le_bytes());
        dir.extend_from_slice(&(bytes.len() as u64).to_le_bytes());
        dir.extend_from_slice(&Checksum::of(bytes).masked().to_le_bytes());
    }
    let dir_offset = out.len() as u64;
    out.extend_from_slice(&dir);
    out.extend_from_slice(&format::encode_footer(dir_offset, &dir));
    out
}

#[test]
fn member_names_that_leave_the_destination_are_refused() {
    let fs = MemFs::new();
    fs.create_dir(Path::new("/in")).unwrap();
    for (i, name) in ["../evil", "/etc/evil", "a/b", "..", ".hidden", "a\\b"]
        .into_iter()
        .enumerate()
    {
        let pack = format!("/in/{i}.pack");
        let mut w = fs.create(Path::new(&pack)).unwrap();
        w.append(&crafted(name)).unwrap();
        drop(w);
        match unpack_with(&fs, Path::new(&pack), Path::new("/in/out")) {
            Err(Error::Corruption(c)) => assert_eq!(c.file, FileKind::Pack, "{name}: {c}"),
            other => panic!("{name}: expected refusal, got {other:?}"),
        }
        assert!(!fs.exists(Path::new("/in/out")).unwrap());
        assert!(!fs.exists(Path::new("/evil")).unwrap());
    }
    // The same pack with a plain name passes the checks (and is refused only later, by
    // the store, since it holds no real manifest).
    let mut w = fs.create(Path::new("/in/ok.pack")).unwrap();
    w.append(&crafted("plain")).unwrap();
    drop(w);
    unpack_with(&fs, Path::new("/in/ok.pack"), Path::new("/in/out")).unwrap();
    assert_eq!(read_all(&fs, Path::new("/in/out/plain")).unwrap(), b"evil");
}

#[test]
fn a_failed_unpack_leaves_nothing_and_can_be_run_again() {
    let (fs, model) = packed();
    let pack = Path::new("/db.pack");
    for op in [Op::Create, Op::Write, Op::Sync, Op::SyncDir, Op::Rename] {
        fs.inject(Fault {
            op,
            nth: fs.op_count(op) + 2,
            kind: FaultKind::Eio,
            forever: false,
        });
        let dest = format!("/out-{op:?}");
        let res = unpack_with(&fs, pack, Path::new(&dest));
        fs.clear_faults();
        if res.is_err() && fs.exists(Path::new(&dest)).unwrap() {
            // Only the final directory sync follows the rename.
            assert_eq!(op, Op::SyncDir);
        }
        let crashed = fs.crash();
        if crashed.exists(Path::new(&dest)).unwrap() {
            assert_eq!(read(&crashed, &dest), model, "{op:?}");
        }
        if fs.exists(Path::new(&dest)).unwrap() {
            // Complete, but its name is durable only once the parent is synced.
            fs.sync_dir(Path::new("/")).unwrap();
        } else {
            unpack_with(&fs, pack, Path::new(&dest)).unwrap();
        }
        assert_eq!(read(&fs.crash(), &dest), model, "{op:?}");
    }
}

#[test]
fn directory_entries_must_tile_the_member_data() {
    // Overlapping members (the second starts inside the first) are refused.
    let entries = [
        Entry {
            name: "a".into(),
            offset: format::HEADER_LEN,
            len: 4,
            crc: 0,
        },
        Entry {
            name: "CURRENT".into(),
            offset: format::HEADER_LEN + 2,
            len: 2,
            crc: 0,
        },
    ];
    let mut image = format::encode_header(0);
    image.extend_from_slice(b"abcd");
    let dir_offset = image.len() as u64;
    let dir = format::encode_directory(&entries);
    image.extend_from_slice(&dir);
    image.extend_from_slice(&format::encode_footer(dir_offset, &dir));
    let fs = MemFs::new();
    let mut w = fs.create(Path::new("/x.pack")).unwrap();
    w.append(&image).unwrap();
    drop(w);
    match unpack_with(&fs, Path::new("/x.pack"), Path::new("/out")) {
        Err(Error::Corruption(c)) => assert_eq!(c.offset, dir_offset + 4 + 1 + 1 + 20),
        other => panic!("expected refusal, got {other:?}"),
    }
}

/// A pack opened in place reads exactly the packed store, writes nothing, refuses writes,
/// and a backup of it restores the same store.
#[test]
fn a_pack_opens_in_place_read_only() {
    let (fs, model) = packed();
    let before = fs.op_count(Op::Write) + fs.op_count(Op::Create) + fs.op_count(Op::Rename);
    let db = Db::open_pack_with(Arc::new(fs.clone()), Path::new("/db.pack"), options()).unwrap();
    assert!(db.is_read_only());
    let ks = db.get_keyspace("k").unwrap();
    let all: Contents = ks.iter().map(|kv| kv.unwrap()).collect();
    assert_eq!(all, model);
    assert_eq!(ks.len().unwrap(), model.len() as u64);
    assert!(matches!(ks.insert("x", "y"), Err(Error::ReadOnly)));
    assert_eq!(
        fs.op_count(Op::Write) + fs.op_count(Op::Create) + fs.op_count(Op::Rename),
        before
    );
    db.backup(Path::new("/copy")).unwrap();
    drop(ks);
    db.close().unwrap();
    assert_eq!(read(&fs, "/copy"), model);
}

/// Any flipped byte of a pack opened in place gives the packed data or an error, never
/// other data; damage outside the tables is refused at the open.
#[test]
fn a_damaged_pack_opened_in_place_never_reads_wrong_data() {
    let (fs, model) = packed();
    let bytes = read_all(&fs, Path::new("/db.pack")).unwrap();
    let checked = super::open_checked(&fs, Path::new("/db.pack")).unwrap();
    let table_ranges: Vec<(u64, u64)> = checked
        .entries
        .iter()
        .filter(|e| e.name.ends_with(".sst"))
        .map(|e| (e.offset, e.offset + e.len))
        .collect();
    drop(checked);
    let mut refused_at_open = 0;
    for at in (0..bytes.len()).step_by(7) {
        let mut bad = bytes.clone();
        bad[at] ^= 0x20;
        let path = Path::new("/bad.pack");
        if fs.exists(path).unwrap() {
            fs.remove(path).unwrap();
        }
        fs.create(path).unwrap().append(&bad).unwrap();
        let in_table = table_ranges
            .iter()
            .any(|&(lo, hi)| (lo..hi).contains(&(at as u64)));
        let db = match Db::open_pack_with(Arc::new(fs.clone()), path, options()) {
            Ok(db) => db,
            Err(e) => {
                refused_at_open += 1;
                assert!(
                    e.as_corruption().is_some() || matches!(e, Error::UnsupportedVersion { .. }),
                    "byte {at}: {e}"
                );
                continue;
            }
        };
        assert!(
            in_table,
            "byte {at} outside the tables was not caught at the open"
        );
        let ks = db.get_keyspace("k").unwrap();
        let read: crate::Result<Contents> = ks.iter().collect();
        if let Ok(read) = read {
            assert_eq!(read, model, "byte {at}");
        }
    }
    assert!(refused_at_open > 0);
}
