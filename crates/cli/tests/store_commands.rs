//! `cairn put`, `get`, `delete`, `scan`, `info` against real stores: values, keyspaces,
//! `--hex`, exit codes (2 not found, 1 errors, 3 a damaged table).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod common;

use std::path::Path;

use common::*;
use serde_json::Value;

fn put(store: &Path, args: &[&str]) {
    let mut all = vec!["put", s(store)];
    all.extend_from_slice(args);
    ok(&run(&all));
}

fn keys(lines: &[Value]) -> Vec<String> {
    lines
        .iter()
        .map(|v| v["key"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn put_get_delete_and_exit_codes() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s");
    put(&store, &["greeting", "hello world"]);
    put(&store, &["neg", "-5"]);
    put(&store, &["-dash", "v"]);
    assert_eq!(ok(&run(&["get", s(&store), "greeting"])), b"hello world");
    assert_eq!(ok(&run(&["get", s(&store), "neg"])), b"-5");
    assert_eq!(ok(&run(&["get", s(&store), "-dash"])), b"v");

    let missing = run(&["get", s(&store), "nope"]);
    assert_eq!(code(&missing), 2);
    assert!(missing.stdout.is_empty());

    ok(&run(&["delete", s(&store), "greeting"]));
    assert_eq!(code(&run(&["get", s(&store), "greeting"])), 2);
    // Deleting an absent key is not an error.
    ok(&run(&["delete", s(&store), "greeting"]));
    // Overwrite.
    put(&store, &["neg", "7"]);
    assert_eq!(ok(&run(&["get", s(&store), "neg"])), b"7");
}

#[test]
fn errors_exit_1() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s");
    let out = run(&["get", s(&store), "k"]);
    assert_eq!(code(&out), 1);
    assert!(stderr(&out).contains("no store here"), "{}", stderr(&out));
    assert!(!store.exists(), "a read must not create the store");

    put(&store, &["k", "v"]);
    let out = run(&["get", s(&store), "k", "--keyspace", "other"]);
    assert_eq!(code(&out), 1);
    assert!(stderr(&out).contains("no keyspace named \"other\""));

    let out = run(&["get", s(&store), "abc", "--hex"]);
    assert_eq!(code(&out), 1);
    assert!(stderr(&out).contains("hex digits"), "{}", stderr(&out));
    assert_eq!(code(&run(&["put", s(&store), "k"])), 1);
}

#[test]
fn hex_keys_and_values() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s");
    put(&store, &["--hex", "00ff0a", "8081"]);
    assert_eq!(
        ok(&run(&["get", "--hex", s(&store), "00FF0A"])),
        [0x80, 0x81]
    );
    // Text "00ff0a" is another key.
    assert_eq!(code(&run(&["get", s(&store), "00ff0a"])), 2);
    let lines = json_lines(&ok(&run(&["scan", s(&store)])));
    assert_eq!(lines.len(), 1);
    assert_eq!(lines[0]["key_b64"], "AP8K");
    assert_eq!(lines[0]["value_b64"], "gIE=");
}

#[test]
fn keyspaces_are_separate() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s");
    put(&store, &["k", "in default"]);
    put(&store, &["k", "in users", "--keyspace", "users"]);
    assert_eq!(ok(&run(&["get", s(&store), "k"])), b"in default");
    assert_eq!(
        ok(&run(&["get", s(&store), "k", "--keyspace", "users"])),
        b"in users"
    );
    ok(&run(&["delete", s(&store), "k", "--keyspace", "users"]));
    assert_eq!(
        code(&run(&["get", s(&store), "k", "--keyspace", "users"])),
        2
    );
    assert_eq!(ok(&run(&["get", s(&store), "k"])), b"in default");
}

#[test]
fn scan_ranges_prefixes_order_and_keys_only() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s");
    {
        let db = cairn::Db::open(&store, cairn::Options::default()).unwrap();
        let ks = db.keyspace("default").unwrap();
        for k in ["a1", "a2", "b1", "b2", "c1"] {
            ks.insert(k, format!("v-{k}")).unwrap();
        }
        db.close().unwrap();
    }
    let all = json_lines(&ok(&run(&["scan", s(&store)])));
    assert_eq!(keys(&all), ["a1", "a2", "b1", "b2", "c1"]);
    assert_eq!(all[2]["value"], "v-b1");

    let pre = json_lines(&ok(&run(&["scan", s(&store), "--prefix", "b"])));
    assert_eq!(keys(&pre), ["b1", "b2"]);
    let range = json_lines(&ok(&run(&[
        "scan",
        s(&store),
        "--from",
        "a2",
        "--to",
        "c1",
    ])));
    assert_eq!(keys(&range), ["a2", "b1", "b2"]);
    let rev = json_lines(&ok(&run(&["scan", s(&store), "--reverse", "--limit", "2"])));
    assert_eq!(keys(&rev), ["c1", "b2"]);
    let hex = json_lines(&ok(&run(&["scan", s(&store), "--hex", "--prefix", "61"])));
    assert_eq!(keys(&hex), ["a1", "a2"]);

    let only = json_lines(&ok(&run(&["scan", s(&store), "--keys-only", "--to", "b"])));
    assert_eq!(keys(&only), ["a1", "a2"]);
    assert!(only.iter().all(|v| v.get("value").is_none()));

    let both = run(&["scan", s(&store), "--prefix", "a", "--from", "a"]);
    assert_eq!(code(&both), 1);
}

#[test]
fn info_lists_keyspaces_seqnos_and_wal() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s");
    {
        let db = cairn::Db::open(&store, cairn::Options::default()).unwrap();
        let ks = db.keyspace("users").unwrap();
        for i in 0..100 {
            ks.insert(format!("k{i}"), "v").unwrap();
        }
        db.flush().unwrap();
        db.keyspace("default").unwrap().insert("x", "y").unwrap();
        db.close().unwrap();
    }
    let v: Value = serde_json::from_slice(&ok(&run(&["info", "--json", s(&store)]))).unwrap();
    assert_eq!(v["seqno"]["last"], 101);
    assert_eq!(v["seqno"]["flushed"], 100);
    let kss = v["keyspaces"].as_array().unwrap();
    let names: Vec<&str> = kss.iter().map(|k| k["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["default", "users"]);
    assert_eq!(kss[1]["tables"], 1);
    assert!(kss[1]["bytes"].as_u64().unwrap() > 0);
    assert_eq!(kss[1]["levels"][0]["tables"], 1);
    assert!(!v["wal"]["files"].as_array().unwrap().is_empty());

    let text = String::from_utf8(ok(&run(&["info", s(&store)]))).unwrap();
    assert!(text.contains("users (id 1): 1 table, "), "{text}");
    assert!(text.contains("seqno: last 101"), "{text}");
}

/// The CLI opens a store with the options its application recorded, not the defaults:
/// `info` shows them, and a large value `put` by the CLI is separated as the application's
/// store-wide threshold asks.
#[test]
fn commands_use_the_options_the_application_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s");
    {
        let options = cairn::Options::default()
            .compression(cairn::Compression::Zstd(9))
            .blob_threshold(Some(1000))
            .block_size(8192);
        let db = cairn::Db::open(&store, options).unwrap();
        db.keyspace("default")
            .unwrap()
            .insert("small", "v")
            .unwrap();
        db.close().unwrap();
    }
    let v: Value = serde_json::from_slice(&ok(&run(&["info", "--json", s(&store)]))).unwrap();
    assert_eq!(v["options"]["compression"], "Zstd(9)", "{v}");
    assert_eq!(v["options"]["block_size"], 8192, "{v}");

    let value = "x".repeat(5000);
    ok(&run(&["put", s(&store), "big", &value]));
    let head = json_lines(&ok(&run(&["head", s(&store), "big"])));
    assert_eq!(head[0]["separated"], true, "{head:?}");
    // The CLI's own open kept the record as it was.
    let back = cairn::Options::from_store(&store).unwrap();
    assert_eq!(back.compression, cairn::Compression::Zstd(9));
    assert_eq!(back.blob_threshold, Some(1000));
}

#[test]
fn damaged_table_exits_3() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s");
    {
        let db = cairn::Db::open(&store, cairn::Options::default()).unwrap();
        let ks = db.keyspace("default").unwrap();
        for i in 0..2000 {
            ks.insert(
                format!("key{i:05}"),
                format!("value {i} {}", "x".repeat(50)),
            )
            .unwrap();
        }
        db.flush().unwrap();
        db.close().unwrap();
    }
    let table = std::fs::read_dir(&store)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "sst"))
        .expect("a table file");
    let mut bytes = std::fs::read(&table).unwrap();
    // Damage the data blocks (the first part of the file), not the footer.
    for i in (64..bytes.len() / 3).step_by(97) {
        bytes[i] ^= 0x5a;
    }
    std::fs::write(&table, &bytes).unwrap();

    let out = run(&["scan", s(&store)]);
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    assert!(stderr(&out).contains("corrupt"), "{}", stderr(&out));
    let out = run(&["get", s(&store), "key00001"]);
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    let out = run(&["dump", s(&store)]);
    assert_eq!(code(&out), 3, "{}", stderr(&out));
}

#[test]
fn put_attributes_and_head() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s");
    put(
        &store,
        &[
            "k", "hello", "--tag", "3", "--meta", "0aff", "--ttl", "3600",
        ],
    );
    let head = json_lines(&ok(&run(&["head", s(&store), "k"])));
    assert_eq!(head.len(), 1);
    let h = &head[0];
    assert_eq!(h["key"], "k");
    assert_eq!(h["value_len"], 5);
    assert_eq!(h["tag"], 3);
    assert_eq!(h["meta_b64"], "Cv8=");
    assert!(h.get("meta").is_none(), "{h}");
    assert!(h["seqno"].as_u64().unwrap() >= 1);
    let expires = h["expires_at"].as_u64().unwrap();
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    assert!(
        expires > now_ms + 3_500_000 && expires <= now_ms + 3_600_000,
        "{expires}"
    );
    assert_eq!(ok(&run(&["get", s(&store), "k"])), b"hello");
    // A plain put has no attributes; head of a missing key exits 2.
    put(&store, &["p", "v"]);
    let plain = &json_lines(&ok(&run(&["head", s(&store), "p"])))[0];
    assert_eq!(plain["tag"], 0);
    // No metadata: the field is left out, as scan and dump leave it out.
    assert!(plain.get("meta_b64").is_none(), "{plain}");
    assert!(plain["expires_at"].is_null());
    assert_eq!(code(&run(&["head", s(&store), "nope"])), 2);
    // A zero ttl expires at once: the key reads as absent and hides its old value.
    put(&store, &["p", "v2", "--ttl", "0"]);
    assert_eq!(code(&run(&["get", s(&store), "p"])), 2);
    assert_eq!(code(&run(&["head", s(&store), "p"])), 2);
    // Bad metadata hex is a usage error.
    assert_eq!(
        code(&run(&["put", s(&store), "x", "y", "--meta", "abc"])),
        1
    );
}

#[test]
fn incr_and_count() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s");
    assert_eq!(ok(&run(&["incr", s(&store), "hits", "5"])), b"5\n");
    assert_eq!(ok(&run(&["incr", s(&store), "hits", "-7"])), b"-2\n");
    assert_eq!(ok(&run(&["get", s(&store), "hits"])), b"-2");
    put(&store, &["word", "hello"]);
    let out = run(&["incr", s(&store), "word", "1"]);
    assert_eq!(code(&out), 1);
    assert!(stderr(&out).contains("counter"), "{}", stderr(&out));
    assert_eq!(ok(&run(&["get", s(&store), "word"])), b"hello");
    put(&store, &["big", "9223372036854775807"]);
    assert_eq!(code(&run(&["incr", s(&store), "big", "1"])), 1);
    assert_eq!(ok(&run(&["count", s(&store)])), b"3\n");
    ok(&run(&["delete", s(&store), "word"]));
    assert_eq!(ok(&run(&["count", s(&store)])), b"2\n");
    assert_eq!(code(&run(&["count", s(&store), "--keyspace", "other"])), 1);
}

#[test]
fn backup_verify_pack_and_unpack() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s");
    for i in 0..50 {
        put(&store, &[&format!("k{i:02}"), &format!("v{i}")]);
    }
    // Each command flushes what the previous one logged and finishes the compactions
    // that causes, so the tables stay few.
    let tables = std::fs::read_dir(&store)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .path()
                .extension()
                .is_some_and(|x| x == "sst")
        })
        .count();
    assert!(tables <= 8, "{tables} tables after 50 puts");
    let backup = dir.path().join("b");
    let said = String::from_utf8(ok(&run(&["backup", s(&store), s(&backup)]))).unwrap();
    assert!(said.starts_with("backup of seqno 50 "), "{said}");
    assert_eq!(
        code(&run(&["backup", s(&store), s(&backup)])),
        1,
        "dest exists"
    );
    assert_eq!(ok(&run(&["get", s(&backup), "k49"])), b"v49");

    let report = String::from_utf8(ok(&run(&["verify", s(&store)]))).unwrap();
    assert!(report.ends_with(", 0 problems\n"), "{report}");
    assert!(report.contains("CURRENT"), "{report}");

    let pack = dir.path().join("s.pack");
    ok(&run(&["pack", s(&backup), s(&pack)]));
    let copy = dir.path().join("copy");
    ok(&run(&["unpack", s(&pack), s(&copy)]));
    assert_eq!(ok(&run(&["count", s(&copy)])), b"50\n");

    // A flipped byte in the pack: refused with exit 3 and nothing created.
    let mut bytes = std::fs::read(&pack).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x10;
    std::fs::write(&pack, &bytes).unwrap();
    let again = dir.path().join("again");
    assert_eq!(code(&run(&["unpack", s(&pack), s(&again)])), 3);
    assert!(!again.exists());

    // A damaged file of the store: verify names it and exits 3.
    let table = std::fs::read_dir(&copy)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "sst"))
        .max_by_key(|p| std::fs::metadata(p).unwrap().len())
        .unwrap();
    let mut bytes = std::fs::read(&table).unwrap();
    bytes[10] ^= 0x01;
    std::fs::write(&table, &bytes).unwrap();
    let out = run(&["verify", s(&copy)]);
    assert_eq!(code(&out), 3, "{}", String::from_utf8_lossy(&out.stdout));
    assert!(String::from_utf8_lossy(&out.stdout).contains("DAMAGED"));
}

#[test]
fn scan_shows_attributes_and_keys_only_skips_values() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s");
    put(&store, &["a", "1", "--tag", "5", "--meta", "ff00"]);
    put(&store, &["b", "2"]);
    let all = json_lines(&ok(&run(&["scan", s(&store)])));
    assert_eq!(all.len(), 2);
    assert_eq!(all[0]["tag"], 5);
    assert_eq!(all[0]["meta_b64"], "/wA=");
    assert_eq!(all[0]["value"], "1");
    assert!(all[1].get("tag").is_none());
    let keys = json_lines(&ok(&run(&["scan", s(&store), "--keys-only", "--reverse"])));
    assert_eq!(keys.len(), 2);
    assert_eq!(keys[1]["key"], "a");
    assert_eq!(keys[1]["tag"], 5);
    assert!(keys[1].get("value").is_none());
    let pre = json_lines(&ok(&run(&["scan", s(&store), "--prefix", "a"])));
    assert_eq!(pre.len(), 1);
    assert_eq!(pre[0]["meta_b64"], "/wA=");
}

/// `cairn salvage` opens a store whose log is damaged in the middle, says exactly which
/// write it dropped, and leaves a store that verifies and opens normally.
#[test]
fn salvage_reports_what_it_dropped_and_leaves_a_clean_store() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("s");
    {
        let db = cairn::Db::open(&store, cairn::Options::default()).unwrap();
        let ks = db.keyspace("default").unwrap();
        for i in 0..100 {
            ks.insert(format!("k{i:03}"), "v".repeat(30)).unwrap();
        }
        drop(ks);
        db.close().unwrap();
    }
    // Damage the payload of the 50th batch record of the log (wal/FORMAT.md §3: a 20-byte
    // header, then 24-byte record headers; kind 1 is a batch, kind 2 a sync mark).
    let wal = std::fs::read_dir(&store)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "wal"))
        .max()
        .unwrap();
    let mut bytes = std::fs::read(&wal).unwrap();
    let (mut at, mut batches) = (20, 0);
    while batches < 50 {
        let len = u32::from_le_bytes(bytes[at + 8..at + 12].try_into().unwrap()) as usize;
        if bytes[at + 12] == 1 {
            batches += 1;
            if batches == 50 {
                bytes[at + 30] ^= 0xff;
                break;
            }
        }
        at += 24 + len;
    }
    std::fs::write(&wal, bytes).unwrap();

    // (Whether or not a child another test forks meanwhile still holds a copy of the
    // store's lock, verify reads it: closed, or through a read-only view.)
    let verify = run(&["verify", s(&store)]);
    assert_eq!(code(&verify), 3, "{}{}", stdout(&verify), stderr(&verify));
    let refused = run(&["count", s(&store)]);
    assert_eq!(code(&refused), 3, "{}", stderr(&refused));
    assert!(stderr(&refused).contains("salvage"), "{}", stderr(&refused));

    let out = run(&["salvage", s(&store), "--json"]);
    ok(&out);
    let report: Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    assert_eq!(report["durable_writes_lost"], true, "{report}");
    let losses = report["losses"].as_array().unwrap();
    assert_eq!(losses.len(), 1, "{report}");
    assert_eq!(losses[0]["cause"], "salvaged");
    assert_eq!(losses[0]["first_seqno"], 50);
    assert_eq!(losses[0]["last_seqno"], 50);
    assert_eq!(losses[0]["offset"], at as u64);

    let text = run(&["salvage", s(&store)]);
    ok(&text);
    assert!(
        stdout(&text).contains("0 ranges left out"),
        "{}",
        stdout(&text)
    );
    ok(&run(&["verify", s(&store)]));
    let count = run(&["count", s(&store)]);
    ok(&count);
    assert!(stdout(&count).contains("99"), "{}", stdout(&count));
}

/// The commands that only read work while an application holds the store open for
/// writing, see its acknowledged writes, and change no file; a write is refused.
#[test]
fn read_commands_work_on_a_store_another_process_holds() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("s");
    let db = cairn::Db::open(&store, cairn::Options::default()).unwrap();
    let ks = db.keyspace("default").unwrap();
    for i in 0..50 {
        ks.insert(format!("k{i:02}"), format!("v{i}")).unwrap();
    }
    db.flush().unwrap();
    ks.insert("in-log", "yes").unwrap(); // acknowledged, only in the log
    let listing = || {
        let mut names: Vec<(String, u64)> = std::fs::read_dir(&store)
            .unwrap()
            .map(|e| {
                let e = e.unwrap();
                let name = e.file_name().to_string_lossy().into_owned();
                (name, e.metadata().unwrap().len())
            })
            .collect();
        names.sort();
        names
    };
    let before = listing();

    let got = run(&["get", s(&store), "in-log"]);
    assert_eq!(ok(&got), b"yes");
    ok(&run(&["head", s(&store), "k07"]));
    let count = run(&["count", s(&store)]);
    assert!(stdout(&count).contains("51"), "{}", stdout(&count));
    let scan = run(&["scan", s(&store), "--prefix", "k0"]);
    assert_eq!(json_lines(&ok(&scan)).len(), 10);
    ok(&run(&["info", s(&store)]));
    let dump = run(&["dump", s(&store)]);
    assert_eq!(json_lines(&ok(&dump)).len(), 51);
    let out = tmp.path().join("out.spl");
    ok(&run(&["export", s(&store), s(&out)]));
    let backup = tmp.path().join("backup");
    ok(&run(&["backup", s(&store), s(&backup)]));
    let pack = tmp.path().join("s.pack");
    ok(&run(&["pack", s(&store), s(&pack)]));
    let unpacked = tmp.path().join("unpacked");
    ok(&run(&["unpack", s(&pack), s(&unpacked)]));
    assert_eq!(ok(&run(&["get", s(&unpacked), "in-log"])), b"yes");
    // The read commands open a pack in place, with no unpack step.
    assert_eq!(ok(&run(&["get", s(&pack), "in-log"])), b"yes");
    let count = run(&["count", s(&pack)]);
    assert!(stdout(&count).contains("51"), "{}", stdout(&count));
    let scan = run(&["scan", s(&pack), "--prefix", "k0"]);
    assert_eq!(json_lines(&ok(&scan)).len(), 10);
    // verify of the store in use checks the view a read-only open holds; so does verify
    // of the pack, in place.
    let verify = run(&["verify", s(&store)]);
    assert_eq!(code(&verify), 0, "{}{}", stdout(&verify), stderr(&verify));
    assert!(
        stdout(&verify).contains("open in another process"),
        "{}",
        stdout(&verify)
    );
    assert!(stdout(&verify).contains(".sst"), "{}", stdout(&verify));
    let verify = run(&["verify", s(&pack), "--json"]);
    let report: Value = serde_json::from_slice(&ok(&verify)).unwrap();
    assert_eq!(report["clean"], true, "{report}");
    assert!(report["files_checked"].as_u64().unwrap() > 2, "{report}");
    assert_eq!(listing(), before, "a read command changed the store");
    ok(&run(&["verify", s(&backup)]));
    let copied = run(&["get", s(&backup), "in-log"]);
    assert_eq!(ok(&copied), b"yes");

    let put = run(&["put", s(&store), "x", "y"]);
    assert_eq!(code(&put), 1, "{}", stderr(&put));
    drop(ks);
    db.close().unwrap();
}

/// `put KEY -` reads the value from stdin; `delete --prefix` / `--range`; `keyspaces`,
/// `drop-keyspace`, `flush` and `compact`.
#[test]
fn operator_commands_and_values_from_stdin() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("s");
    for i in 0..5 {
        put(&store, &[&format!("a{i}"), "v"]);
        put(&store, &[&format!("b{i}"), "v"]);
    }
    put(&store, &["k", "x", "--keyspace", "other"]);
    ok(&run_in(None, &["put", s(&store), "big", "-"], &[7u8; 5000]));
    assert_eq!(ok(&run(&["get", s(&store), "big"])), vec![7u8; 5000]);
    ok(&run_in(
        None,
        &["put", s(&store), "68", "-", "--hex"], // the key "h"
        b"00ff\n",
    ));
    assert_eq!(ok(&run(&["get", s(&store), "h"])), vec![0u8, 0xff]);

    let listed = run(&["keyspaces", s(&store), "--json"]);
    let names: Vec<String> = json_lines(&ok(&listed))
        .iter()
        .map(|v| v["name"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(names, vec!["default".to_string(), "other".to_string()]);

    ok(&run(&["delete", s(&store), "--prefix", "a"]));
    ok(&run(&["delete", s(&store), "--range", "b1", "b3"]));
    let left = keys(&json_lines(&ok(&run(&["scan", s(&store), "--keys-only"]))));
    assert_eq!(left, vec!["b0", "b3", "b4", "big", "h"]);
    let both = run(&["delete", s(&store), "k", "--prefix", "a"]);
    assert_ne!(code(&both), 0);

    ok(&run(&["drop-keyspace", s(&store), "other"]));
    let listed = run(&["keyspaces", s(&store)]);
    assert!(!stdout(&listed).contains("other"), "{}", stdout(&listed));
    let missing = run(&["drop-keyspace", s(&store), "other"]);
    assert_eq!(code(&missing), 1);

    let flushed = run(&["flush", s(&store)]);
    assert!(
        stdout(&flushed).starts_with("flushed through seqno"),
        "{}",
        stdout(&flushed)
    );
    let compacted = run(&["compact", s(&store)]);
    assert!(
        stdout(&compacted).contains("compaction"),
        "{}",
        stdout(&compacted)
    );
    let after = keys(&json_lines(&ok(&run(&["scan", s(&store), "--keys-only"]))));
    assert_eq!(after, left);
    ok(&run(&["verify", s(&store)]));
}

/// `head`, `get --json`, `scan` and `dump` encode one entry the same way: a key that is
/// not UTF-8 as "key_b64", metadata as "meta_b64", a value that is not UTF-8 as
/// "value_b64" (standard base64).
#[test]
fn head_get_scan_and_dump_agree_on_binary_fields() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s");
    // Key ff 00 6b, value 80 81, metadata 0a ff; and a text key with a text value.
    put(
        &store,
        &["--hex", "ff006b", "8081", "--tag", "4", "--meta", "0aff"],
    );
    put(&store, &["text", "hello"]);

    let head = &json_lines(&ok(&run(&["head", s(&store), "--hex", "ff006b"])))[0];
    let got = &json_lines(&ok(&run(&["get", s(&store), "--hex", "ff006b", "--json"])))[0];
    let scanned = json_lines(&ok(&run(&["scan", s(&store)])));
    let dumped = json_lines(&ok(&run(&["dump", s(&store)])));
    assert_eq!(scanned.len(), 2);
    assert_eq!(scanned, dumped, "a dump of the default keyspace is a scan");
    let (scan, scan_text) = (&scanned[1], &scanned[0]);
    assert_eq!(scan_text["key"], "text");

    for (what, v) in [("head", head), ("get", got), ("scan", scan)] {
        assert_eq!(v["key_b64"], "/wBr", "{what}: {v}");
        assert!(v.get("key").is_none(), "{what}: {v}");
        assert_eq!(v["meta_b64"], "Cv8=", "{what}: {v}");
        assert!(v.get("meta").is_none(), "{what}: {v}");
        assert_eq!(v["tag"], 4, "{what}: {v}");
    }
    for (what, v) in [("get", got), ("scan", scan)] {
        assert_eq!(v["value_b64"], "gIE=", "{what}: {v}");
        assert!(v.get("value").is_none(), "{what}: {v}");
    }
    // head and get --json carry the same attributes; get adds the value.
    let mut without_value = got.as_object().unwrap().clone();
    without_value.remove("value_b64");
    assert_eq!(&Value::Object(without_value), head);
    assert_eq!(head["value_len"], 2);
    assert_eq!(head["separated"], false);
    assert!(head["expires_at"].is_null());
    let seqno = head["seqno"].as_u64().unwrap();
    assert_eq!(seqno, 1, "{head}");

    let text = &json_lines(&ok(&run(&["get", s(&store), "text", "--json"])))[0];
    assert_eq!(text["key"], "text");
    assert_eq!(text["value"], "hello");
    assert_eq!(text["value_len"], 5);
    assert_eq!(text["seqno"], 2);
    assert!(text.get("meta_b64").is_none(), "{text}");
    // Not found: exit 2 and nothing printed, as without --json.
    let missing = run(&["get", s(&store), "nope", "--json"]);
    assert_eq!(code(&missing), 2);
    assert!(missing.stdout.is_empty());
}
