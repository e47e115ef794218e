//! `cairn stats`: the engine's statistics of a store, as text and as one JSON object, on a
//! closed store, on a store another handle holds open, and on a pack file.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod common;

use std::path::Path;

use cairn::{Db, KeyspaceOptions, Options};
use common::*;
use serde_json::Value;

/// Values of 4000 bytes and more are kept in blob files.
const THRESHOLD: usize = 4000;

/// Writes 50 small entries and 10 separated ones (5,000 bytes each) to keyspace "docs"
/// and flushes them into a table. With `churn`, then overwrites 4 separated values,
/// removes 2 and compacts, so some blob bytes become garbage. Returns the open store.
fn sample(store: &Path, churn: bool) -> Db {
    let db = Db::open(store, Options::default()).unwrap();
    let docs = db
        .keyspace_with("docs", KeyspaceOptions::separated(THRESHOLD))
        .unwrap();
    for i in 0..50 {
        docs.insert(format!("small{i:02}"), format!("v{i}"))
            .unwrap();
    }
    for i in 0..10u8 {
        docs.insert(format!("big{i}"), vec![i; 5000]).unwrap();
    }
    db.flush().unwrap();
    if churn {
        for i in 0..4u8 {
            docs.insert(format!("big{i}"), vec![i + 100; 5000]).unwrap();
        }
        docs.remove("big8").unwrap();
        docs.remove("big9").unwrap();
        db.flush().unwrap();
        db.compact().unwrap();
    }
    db
}

fn stats_json(path: &Path) -> Value {
    json_object(&ok(&run(&["stats", s(path), "--json"])))
}

#[test]
fn stats_of_a_closed_store_with_tables_and_separated_values() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s");
    sample(&store, true).close().unwrap();
    // What the library says of the closed store (background work ends at the close).
    let db = Db::open_read_only(&store, Options::default()).unwrap();
    let want = db.stats();
    let want_space = db.space_stats().unwrap();
    db.close().unwrap();

    let v = stats_json(&store);
    assert_eq!(v["path"], s(&store));
    assert_eq!(v["pack"], false);
    // 60 + 4 + 2 writes.
    assert_eq!(v["last_seqno"], 66, "{v}");
    assert_eq!(v["durable_seqno"], 66, "{v}");
    let per_level: Vec<u64> = v["tables_per_level"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_u64().unwrap())
        .collect();
    let want_levels: Vec<u64> = want.tables_per_level.iter().map(|n| *n as u64).collect();
    assert_eq!(per_level, want_levels, "{v}");
    assert!(per_level.iter().sum::<u64>() >= 1, "{v}");
    assert_eq!(v["tables"], per_level.iter().sum::<u64>());
    assert_eq!(v["table_bytes"], want.table_bytes);
    assert!(v["table_bytes"].as_u64().unwrap() > 0);
    assert_eq!(v["blob_bytes"], want.blob_bytes);
    // 8 live values of 5,000 bytes, and the garbage garbage collection has not
    // reclaimed yet.
    assert!(v["blob_bytes"].as_u64().unwrap() > 40_000, "{v}");
    // Everything was flushed before the close.
    assert_eq!(v["memtable_bytes"], 0, "{v}");
    // The open's memory: a read-only open holds every table open, with its index and
    // filter blocks, and has no budget.
    let memory = &v["this_open"]["memory"];
    assert_eq!(memory["memory_budget"], serde_json::Value::Null, "{memory}");
    assert_eq!(memory["block_cache_capacity"], 64 << 20, "{memory}");
    assert_eq!(
        memory["index_filter_bytes"], want.index_filter_bytes,
        "{memory}"
    );
    assert!(want.index_filter_bytes > 0, "{want:?}");

    let space = &v["space"];
    assert_eq!(space["table_bytes"], want_space.table_bytes);
    assert_eq!(space["blob_bytes"], want_space.blob_bytes);
    assert_eq!(space["live_blob_bytes"], want_space.live_blob_bytes);
    assert_eq!(space["garbage_blob_bytes"], want_space.garbage_blob_bytes);
    // 8 live values of 5,000 bytes; the 4 overwritten and 2 removed ones are garbage
    // until garbage collection removes or rewrites their files.
    assert_eq!(space["live_blob_bytes"], 40_000, "{space}");
    let files = space["blob_files"].as_array().unwrap();
    assert_eq!(files.len(), want_space.blob_files.len());
    let summed: u64 = files
        .iter()
        .map(|f| f["live_bytes"].as_u64().unwrap())
        .sum();
    assert_eq!(summed, 40_000);
    for f in files {
        assert_eq!(
            f["value_bytes"].as_u64().unwrap(),
            f["live_bytes"].as_u64().unwrap() + f["garbage_bytes"].as_u64().unwrap(),
            "{f}"
        );
    }

    let on_disk: u64 = std::fs::read_dir(&store)
        .unwrap()
        .map(|e| e.unwrap().metadata().unwrap().len())
        .sum();
    assert_eq!(v["disk_bytes"], on_disk, "{v}");
    let wal: u64 = std::fs::read_dir(&store)
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.file_name().to_string_lossy().ends_with(".wal"))
        .map(|e| e.metadata().unwrap().len())
        .sum();
    assert_eq!(v["wal_bytes"], wal);

    // The read-only open did no work of its own.
    let open = &v["this_open"];
    for name in [
        "flushes",
        "compactions",
        "flush_bytes_written",
        "compaction_bytes_written",
        "wal_bytes_written",
        "wal_syncs",
        "write_stalls",
    ] {
        assert_eq!(open[name], 0, "{name}: {open}");
    }

    // The text says the same, aligned, with sizes for people.
    let text = stdout(&ok_run(&["stats", s(&store)]));
    let levels: Vec<String> = per_level
        .iter()
        .enumerate()
        .filter(|(_, n)| **n > 0)
        .map(|(l, n)| format!("L{l} {n}"))
        .collect();
    let tables = per_level.iter().sum::<u64>();
    let noun = if tables == 1 { "table" } else { "tables" };
    for needle in [
        format!("store            {}\n", s(&store)),
        "seqno            last 66, durable 66\n".to_string(),
        format!("tables           {tables} {noun} ({})\n", levels.join(", ")),
        format!(
            "table bytes      {}",
            human_or_bytes(v["table_bytes"].as_u64().unwrap())
        ),
        format!(
            "blob files       {} ",
            files.len().to_string()
                + if files.len() == 1 {
                    " file,"
                } else {
                    " files,"
                }
        ),
        "blob values      live 39.1 KiB (40000 bytes), garbage ".to_string(),
        "memtable bytes   0 B: log writes not yet in tables\n".to_string(),
        format!(
            "disk bytes       {}: every file in the directory\n",
            human_or_bytes(on_disk)
        ),
        "this open (read-only".to_string(),
        "  0 flushes, 0 compactions, 0 write stalls\n".to_string(),
        "  memory: block cache ".to_string(),
    ] {
        assert!(text.contains(&needle), "missing {needle:?} in\n{text}");
    }
}

/// `ok` on a run, returning the output.
fn ok_run(args: &[&str]) -> std::process::Output {
    let out = run(args);
    ok(&out);
    out
}

/// A size as the text shows it: bytes under 1 KiB, else KiB with one decimal (the sample's
/// tables are far below 1 MiB) and the exact count.
fn human_or_bytes(n: u64) -> String {
    if n < 1024 {
        format!("{n} B")
    } else {
        format!("{:.1} KiB ({n} bytes)", n as f64 / 1024.0)
    }
}

/// `stats` reads a store another handle holds open for writing, with writes only in the
/// log: it sees them (memtable bytes, last seqno) and changes no file; and a pack of it.
#[test]
fn stats_of_a_store_another_handle_holds_open() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s");
    // One flush and no garbage: no background work changes the files meanwhile.
    let db = sample(&store, false);
    let docs = db.get_keyspace("docs").unwrap();
    for i in 0..20 {
        docs.insert(format!("late{i:02}"), "in the log only")
            .unwrap();
    }
    let listing = || {
        let mut names: Vec<(String, u64)> = std::fs::read_dir(&store)
            .unwrap()
            .map(|e| {
                let e = e.unwrap();
                (
                    e.file_name().to_string_lossy().into_owned(),
                    e.metadata().unwrap().len(),
                )
            })
            .collect();
        names.sort();
        names
    };
    let before = listing();
    let held = db.stats();

    let v = stats_json(&store);
    assert_eq!(v["last_seqno"], 80, "{v}");
    assert_eq!(v["last_seqno"], held.last_seqno);
    let per_level: Vec<usize> = v["tables_per_level"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_u64().unwrap() as usize)
        .collect();
    assert_eq!(per_level, held.tables_per_level, "{v}");
    assert_eq!(v["tables"], 1, "{v}");
    assert_eq!(v["table_bytes"], held.table_bytes);
    assert!(held.table_bytes > 0);
    assert_eq!(v["blob_bytes"], held.blob_bytes);
    assert!(held.blob_bytes > 50_000, "{held:?}");
    assert_eq!(v["space"]["live_blob_bytes"], 50_000, "{v}");
    assert_eq!(v["space"]["garbage_blob_bytes"], 0, "{v}");
    // The 20 writes in the log are replayed into the open's memtable.
    assert!(v["memtable_bytes"].as_u64().unwrap() > 20 * 15, "{v}");
    assert!(v["wal_bytes"].as_u64().unwrap() > 0, "{v}");
    assert!(v["disk_bytes"].as_u64().unwrap() > held.table_bytes + held.blob_bytes);
    let text = stdout(&ok_run(&["stats", s(&store)]));
    assert!(text.contains("seqno            last 80, "), "{text}");
    assert!(text.contains("tables           1 table (L0 1)\n"), "{text}");
    assert_eq!(listing(), before, "stats changed the store");

    // The same figures from a pack of it, opened in place.
    let pack = dir.path().join("s.pack");
    ok(&run(&["pack", s(&store), s(&pack)]));
    let p = stats_json(&pack);
    assert_eq!(p["pack"], true);
    assert_eq!(p["last_seqno"], 80);
    assert_eq!(p["table_bytes"], v["table_bytes"]);
    assert_eq!(p["space"]["live_blob_bytes"], 50_000);
    let text = stdout(&ok_run(&["stats", s(&pack)]));
    assert!(text.contains(" (a pack)\n"), "{text}");
    assert!(text.contains(": the pack's members\n"), "{text}");

    drop(docs);
    db.close().unwrap();
    // Closed, the store holds the same writes.
    assert_eq!(stats_json(&store)["last_seqno"], 80);
}

#[test]
fn stats_without_a_store_exits_1() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(&["stats", s(&dir.path().join("none")), "--json"]);
    assert_eq!(code(&out), 1);
    assert!(stderr(&out).contains("no store here"), "{}", stderr(&out));
    assert!(out.stdout.is_empty());
    let help = stdout(&ok_run(&["--help"]));
    assert!(help.contains("stats"), "{help}");
}
