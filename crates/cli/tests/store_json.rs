//! `--json` on the ordered-store commands that print a summary (or nothing): each prints
//! exactly one JSON object with the facts of its text, numbers as numbers, and exits as
//! without `--json`.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod common;

use std::path::Path;

use common::*;
use serde_json::{json, Value};

/// The one JSON object a successful command prints.
fn j(args: &[&str]) -> Value {
    json_object(&ok(&run(args)))
}

/// The names of the files in `dir` ending with `.ext`.
fn files_with(dir: &Path, ext: &str) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.ends_with(&format!(".{ext}")))
        .collect();
    names.sort();
    names
}

#[test]
fn writes_print_the_keyspace_the_key_and_the_seqno() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s");
    let st = s(&store);

    assert_eq!(
        j(&["put", st, "k", "hello", "--json"]),
        json!({"keyspace": "default", "key": "k", "value_len": 5, "seqno": 1})
    );
    assert_eq!(
        j(&["put", st, "--hex", "ff00", "010203", "--json"]),
        json!({"keyspace": "default", "key_b64": "/wA=", "value_len": 3, "seqno": 2})
    );
    // Without --json a put still prints nothing.
    assert!(ok(&run(&["put", st, "a1", "v"])).is_empty());
    ok(&run(&["put", st, "a2", "v"]));
    ok(&run(&["put", st, "b1", "v"]));
    ok(&run(&["put", st, "b2", "v"]));
    ok(&run(&["put", st, "c1", "v"]));

    assert_eq!(
        j(&["incr", st, "hits", "5", "--json"]),
        json!({"keyspace": "default", "key": "hits", "value": 5, "seqno": 8})
    );
    assert_eq!(
        j(&["incr", st, "hits", "-7", "--json"]),
        json!({"keyspace": "default", "key": "hits", "value": -2, "seqno": 9})
    );
    assert_eq!(ok(&run(&["incr", st, "hits", "0"])), b"-2\n");
    assert_eq!(ok(&run(&["get", st, "hits"])), b"-2");
    // A failed incr prints nothing on stdout, with or without --json.
    let refused = run(&["incr", st, "k", "1", "--json"]);
    assert_eq!(code(&refused), 1);
    assert!(refused.stdout.is_empty());

    // k, ff00, a1, a2, b1, b2, c1, hits.
    assert_eq!(
        j(&["count", st, "--json"]),
        json!({"keyspace": "default", "count": 8})
    );
    assert_eq!(ok(&run(&["count", st])), b"8\n");

    assert_eq!(
        j(&["delete", st, "k", "--json"]),
        json!({"keyspace": "default", "key": "k", "seqno": 11})
    );
    assert_eq!(
        j(&["delete", st, "--prefix", "a", "--json"]),
        json!({"keyspace": "default", "prefix": "a", "seqno": 12})
    );
    assert_eq!(
        j(&["delete", st, "--range", "b1", "b2", "--json"]),
        json!({"keyspace": "default", "from": "b1", "to": "b2", "seqno": 13})
    );
    assert_eq!(
        j(&["delete", st, "--hex", "ff00", "--json"]),
        json!({"keyspace": "default", "key_b64": "/wA=", "seqno": 14})
    );
    assert!(ok(&run(&["delete", st, "nope"])).is_empty());
    // b2, c1, hits.
    assert_eq!(j(&["count", st, "--json"])["count"], 3);

    // A keyspace: its bytes as `keyspaces` listed them before the drop.
    ok(&run(&[
        "put",
        st,
        "x",
        "y",
        "--keyspace",
        "other",
        "--json",
    ]));
    let listed = json_lines(&ok(&run(&["keyspaces", st, "--json"])));
    let other = listed.iter().find(|v| v["name"] == "other").unwrap();
    assert!(other["bytes"].as_u64().unwrap() > 0, "{other}");
    assert_eq!(
        j(&["drop-keyspace", st, "other", "--json"]),
        json!({"keyspace": "other", "bytes": other["bytes"]})
    );
    let missing = run(&["drop-keyspace", st, "other", "--json"]);
    assert_eq!(code(&missing), 1);
    assert!(missing.stdout.is_empty());
    // Without --json a drop still prints nothing.
    ok(&run(&["put", st, "x", "y", "--keyspace", "more"]));
    assert!(ok(&run(&["drop-keyspace", st, "more"])).is_empty());
}

#[test]
fn compact_and_flush_print_sizes_and_seqnos() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s");
    {
        // Two versions of every key in two tables (fewer than start a compaction), and
        // one write only in the log.
        let db = cairn::Db::open(&store, cairn::Options::default()).unwrap();
        let ks = db.keyspace("default").unwrap();
        for round in 0..2 {
            for i in 0..200 {
                let value = format!("round {round} {}", "x".repeat(40));
                ks.insert(format!("k{i:03}"), value).unwrap();
            }
            db.flush().unwrap();
        }
        ks.insert("in-log", "yes").unwrap();
        drop(ks);
        db.close().unwrap();
    }
    let st = s(&store);
    let compacted = j(&["compact", st, "--json"]);
    let before = compacted["bytes_before"].as_u64().unwrap();
    let after = compacted["bytes_after"].as_u64().unwrap();
    assert!(
        compacted["compactions"].as_u64().unwrap() >= 1,
        "{compacted}"
    );
    assert_eq!(compacted["blob_files_removed"], 0, "{compacted}");
    // Two versions of every key became one.
    assert!(after < before, "{compacted}");
    let obj = compacted.as_object().unwrap();
    let mut names: Vec<&str> = obj.keys().map(String::as_str).collect();
    names.sort_unstable();
    assert_eq!(
        names,
        [
            "blob_files_removed",
            "bytes_after",
            "bytes_before",
            "compactions"
        ]
    );

    let flushed = j(&["flush", st, "--json"]);
    assert_eq!(flushed, json!({"seqno": 401}));
    let info: Value = serde_json::from_slice(&ok(&run(&["info", "--json", st]))).unwrap();
    assert_eq!(info["seqno"]["flushed"], 401);
    // The text says the same.
    assert_eq!(stdout(&run(&["flush", st])), "flushed through seqno 401\n");
}

#[test]
fn backup_verify_pack_and_unpack_print_what_they_did() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s");
    {
        let db = cairn::Db::open(&store, cairn::Options::default()).unwrap();
        let ks = db.keyspace("default").unwrap();
        for i in 0..100 {
            ks.insert(format!("k{i:03}"), "v".repeat(20)).unwrap();
        }
        db.flush().unwrap();
        ks.insert("in-log", "yes").unwrap();
        drop(ks);
        db.close().unwrap();
    }
    let st = s(&store);

    let backup = dir.path().join("b");
    let b = j(&["backup", st, s(&backup), "--json"]);
    assert_eq!(b["seqno"], 101, "{b}");
    assert_eq!(b["dest"], s(&backup));
    assert_eq!(b["tables"], files_with(&backup, "sst").len(), "{b}");
    assert_eq!(b["wal_files"], files_with(&backup, "wal").len(), "{b}");
    let on_disk: u64 = std::fs::read_dir(&backup)
        .unwrap()
        .map(|e| e.unwrap().metadata().unwrap().len())
        .sum();
    let files = std::fs::read_dir(&backup).unwrap().count() as u64;
    assert_eq!(
        b["files_linked"].as_u64().unwrap() + b["files_copied"].as_u64().unwrap(),
        files,
        "{b}"
    );
    assert_eq!(
        b["bytes_linked"].as_u64().unwrap() + b["bytes_copied"].as_u64().unwrap(),
        on_disk,
        "{b}"
    );

    // verify: the files of the text, one object, exit 0 when clean.
    let v = j(&["verify", s(&backup), "--json"]);
    assert_eq!(v["clean"], true, "{v}");
    assert_eq!(v["store"], s(&backup));
    assert_eq!(v["problems"], json!([]));
    let checked = v["files"].as_array().unwrap();
    assert_eq!(v["files_checked"], checked.len());
    assert_eq!(checked.len() as u64, files, "{v}");
    let current = checked.iter().find(|f| f["name"] == "CURRENT").unwrap();
    assert_eq!(
        current["bytes"],
        std::fs::metadata(backup.join("CURRENT")).unwrap().len()
    );
    let table = checked
        .iter()
        .find(|f| f["name"].as_str().unwrap().ends_with(".sst"))
        .unwrap();
    assert_eq!(table["items"], 100, "{table}");
    assert_eq!(table["kind"], "table file");

    let pack = dir.path().join("s.pack");
    let p = j(&["pack", st, s(&pack), "--json"]);
    assert_eq!(p["seqno"], 101, "{p}");
    assert_eq!(p["file"], s(&pack));
    assert_eq!(p["file_bytes"], std::fs::metadata(&pack).unwrap().len());
    assert!(p["member_bytes"].as_u64().unwrap() < p["file_bytes"].as_u64().unwrap());
    let copy = dir.path().join("copy");
    let u = j(&["unpack", s(&pack), s(&copy), "--json"]);
    assert_eq!(
        u,
        json!({
            "seqno": 101,
            "file": s(&pack),
            "dest": s(&copy),
            "files": p["files"],
            "member_bytes": p["member_bytes"],
        })
    );
    assert_eq!(p["files"], std::fs::read_dir(&copy).unwrap().count(), "{p}");

    // Damage: exit 3 as without --json, the problem named with its file and offset.
    let table = copy.join(files_with(&copy, "sst").pop().unwrap());
    let mut bytes = std::fs::read(&table).unwrap();
    bytes[10] ^= 0x01;
    std::fs::write(&table, &bytes).unwrap();
    let out = run(&["verify", s(&copy), "--json"]);
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    let v = json_object(&out.stdout);
    assert_eq!(v["clean"], false, "{v}");
    let problems = v["problems"].as_array().unwrap();
    assert_eq!(problems.len(), 1, "{v}");
    let problem = &problems[0];
    assert_eq!(problem["kind"], "table file", "{problem}");
    assert_eq!(problem["file"], s(&table), "{problem}");
    assert!(problem["offset"].is_u64(), "{problem}");
    assert!(
        problem["message"].as_str().unwrap().contains("corrupt"),
        "{problem}"
    );
    assert_eq!(
        v["files_checked"].as_u64().unwrap(),
        v["files"].as_array().unwrap().len() as u64 + 1
    );
}

#[test]
fn transfers_print_their_counts() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s");
    {
        let db = cairn::Db::open(&store, cairn::Options::default()).unwrap();
        let ks = db.keyspace("users").unwrap();
        for i in 0..30 {
            ks.insert(format!("u{i:02}"), format!("name {i}")).unwrap();
        }
        drop(ks);
        db.close().unwrap();
    }
    let st = s(&store);
    let key_value_bytes: u64 = (0..30).map(|i| 3 + format!("name {i}").len() as u64).sum();

    let log = dir.path().join("users.spl");
    let e = j(&["export", st, s(&log), "--keyspace", "users", "--json"]);
    assert_eq!(
        e,
        json!({
            "keyspace": "users",
            "entries": 30,
            "bytes": key_value_bytes,
            "log": s(&log),
            "index": s(&dir.path().join("users.spi")),
        })
    );

    let copy = dir.path().join("c");
    let i = j(&[
        "import",
        s(&log),
        s(&copy),
        "--keyspace",
        "people",
        "--json",
    ]);
    assert_eq!(
        i,
        json!({"keyspace": "people", "puts": 30, "deletes": 0, "bytes": key_value_bytes})
    );
    assert_eq!(
        j(&["count", s(&copy), "--keyspace", "people", "--json"])["count"],
        30
    );

    let dumped = ok(&run(&["dump", st]));
    let restored = dir.path().join("r");
    let out = run_in(None, &["restore", s(&restored), "--json"], &dumped);
    assert_eq!(
        json_object(&ok(&out)),
        json!({"entries": 30, "input_bytes": dumped.len()})
    );
    // Bad input: exit 1 and nothing on stdout, as without --json.
    let out = run_in(None, &["restore", s(&restored), "--json"], b"{oops}\n");
    assert_eq!(code(&out), 1);
    assert!(out.stdout.is_empty());
}
