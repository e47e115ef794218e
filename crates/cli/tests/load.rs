//! `cairn load` on short loads (0.2–1 s): every backend reports self-consistent numbers,
//! the mix and the rate are respected, the constant store refuses writes, the JSON has its
//! documented fields, the sweep has a row per mode, the temporary directory goes away
//! unless kept, and what a `sync` load acknowledged is in the store when it is reopened.

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

fn load(args: &[&str]) -> std::process::Output {
    let mut all = vec!["load"];
    all.extend_from_slice(args);
    run(&all)
}

/// Runs a load with `--json` and returns its object.
fn load_json(args: &[&str]) -> Value {
    let mut all = args.to_vec();
    all.push("--json");
    let out = load(&all);
    let text = String::from_utf8(ok(&out)).unwrap();
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

fn u(v: &Value) -> u64 {
    v.as_u64()
        .unwrap_or_else(|| panic!("not an unsigned integer: {v}"))
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

/// Checks the invariants every report keeps, and returns total_ops.
fn check_consistent(r: &Value, threads: usize, load_time: f64) -> u64 {
    for field in [
        "backend",
        "durability",
        "mode",
        "threads",
        "pattern",
        "keys",
        "key_count",
        "mix",
        "total_ops",
        "total_runtime",
        "total_ops_per_sec",
        "per_thread",
        "average_ops_per_sec",
        "ops",
        "reads_found",
        "latency",
        "engine",
        "disk_bytes",
        "seqno",
        "loss_window",
        "dir",
        "kept",
    ] {
        assert!(r.get(field).is_some(), "missing {field}: {r}");
    }
    let total = u(&r["total_ops"]);
    assert!(total > 0, "{r}");
    let per_thread = r["per_thread"].as_array().unwrap();
    assert_eq!(per_thread.len(), threads);
    assert_eq!(u(&r["threads"]), threads as u64);
    let thread_sum: u64 = per_thread.iter().map(|t| u(&t["ops"])).sum();
    assert_eq!(thread_sum, total, "threads vs total: {r}");
    let kinds: u64 = ["read", "write", "delete"]
        .iter()
        .map(|k| u(&r["ops"][k]))
        .sum();
    assert_eq!(kinds, total, "kinds vs total: {r}");
    for t in per_thread {
        let by_kind: u64 = ["read", "write", "delete"].iter().map(|k| u(&t[k])).sum();
        assert_eq!(by_kind, u(&t["ops"]));
    }
    assert_eq!(u(&r["latency"]["all"]["samples"]), total);
    for k in ["read", "write", "delete"] {
        assert_eq!(u(&r["latency"][k]["samples"]), u(&r["ops"][k]), "{k}");
    }
    let runtime = f(&r["total_runtime"]);
    assert!(
        runtime >= load_time && runtime < load_time + 2.0,
        "runtime {runtime} for a {load_time} s load"
    );
    let rate = f(&r["total_ops_per_sec"]);
    let expected = total as f64 / runtime;
    assert!(
        (rate - expected).abs() <= expected * 1e-9,
        "{rate} vs {expected}"
    );
    let avg = f(&r["average_ops_per_sec"]);
    assert!((avg * threads as f64 - rate).abs() <= rate * 1e-9);
    let lat = &r["latency"]["all"];
    assert!(u(&lat["p50_ns"]) <= u(&lat["p99_ns"]));
    assert!(u(&lat["p99_ns"]) <= u(&lat["p999_ns"]));
    assert!(u(&lat["p999_ns"]) <= u(&lat["max_ns"]));
    total
}

#[test]
fn every_backend_reports_consistent_numbers() {
    // The memory baseline, with zipfian keys and variable value sizes.
    let r = load_json(&[
        "--backend",
        "memory",
        "--duration",
        "400ms",
        "--threads",
        "2",
        "--key-count",
        "2000",
        "--keys",
        "zipfian",
        "--value-size",
        "64..4096",
    ]);
    check_consistent(&r, 2, 0.4);
    assert_eq!(r["backend"], "memory");
    assert!(r["durability"].is_null() && r["engine"].is_null() && r["seqno"].is_null());
    assert!(r["dir"].is_null() && r["disk_bytes"].is_null());
    assert_eq!(r["keys"], "zipfian:0.99");
    // Every read finds its key: the preload wrote them all and nothing deletes.
    assert_eq!(r["reads_found"], r["ops"]["read"]);

    // The ordered store, with pareto keys, variable key sizes and deletes.
    let r = load_json(&[
        "--backend",
        "cairn",
        "--durability",
        "periodic:1000",
        "--duration",
        "0.4",
        "--threads",
        "3",
        "--key-count",
        "2000",
        "--keys",
        "pareto",
        "--key-size",
        "exp:12",
        "--mix",
        "read=70,write=20,delete=10",
    ]);
    check_consistent(&r, 3, 0.4);
    assert_eq!(r["durability"], "periodic:1000");
    let engine = &r["engine"];
    assert!(
        u(&engine["wal_bytes"]) > 0 && u(&engine["user_bytes"]) > 0,
        "{r}"
    );
    assert_eq!(
        u(&engine["bytes_written"]),
        u(&engine["wal_bytes"]) + u(&engine["flush_bytes"]) + u(&engine["compaction_bytes"])
    );
    assert!(u(&r["disk_bytes"]) > 0);
    let seqno = &r["seqno"];
    assert!(u(&seqno["last"]) >= 2000 + u(&r["ops"]["write"]));
    assert_eq!(
        u(&seqno["not_durable"]),
        u(&seqno["last"]) - u(&seqno["durable"])
    );
    assert!(u(&seqno["max_not_durable_seen"]) >= u(&seqno["not_durable"]));
    assert!(u(&r["ops"]["delete"]) > 0);

    // The constant store: reads only (its default mix), sequential keys.
    let r = load_json(&[
        "--backend",
        "constant",
        "--duration",
        "300ms",
        "--threads",
        "2",
        "--key-count",
        "3000",
        "--keys",
        "sequential",
    ]);
    check_consistent(&r, 2, 0.3);
    assert_eq!(r["mix"]["read"], 100);
    assert_eq!(u(&r["ops"]["write"]) + u(&r["ops"]["delete"]), 0);
    assert_eq!(r["reads_found"], r["ops"]["read"]);
    assert!(u(&r["disk_bytes"]) > 3000 * 100, "{r}");
    assert!(r["engine"].is_null() && r["seqno"].is_null());
}

#[test]
fn the_mix_is_respected() {
    let r = load_json(&[
        "--backend",
        "memory",
        "--duration",
        "300ms",
        "--key-count",
        "1000",
        "--mix",
        "read=50,write=30,delete=20",
    ]);
    let total = check_consistent(&r, 2, 0.3) as f64;
    assert!(total > 10_000.0, "too few operations to judge: {total}");
    for (kind, pct) in [("read", 50.0), ("write", 30.0), ("delete", 20.0)] {
        let share = f(&r["ops"][kind]) * 100.0 / total;
        assert!((share - pct).abs() < 2.0, "{kind}: {share}% for {pct}%");
    }
    // Deletes make some reads miss.
    assert!(u(&r["reads_found"]) < u(&r["ops"]["read"]));
}

#[test]
fn rates_are_respected() {
    // 2,000 ops/s split over 2 threads for 1 s.
    let r = load_json(&[
        "--backend",
        "memory",
        "--duration",
        "1s",
        "--key-count",
        "1000",
        "--rate",
        "2000",
    ]);
    let ops = check_consistent(&r, 2, 1.0);
    assert!((1800..=2200).contains(&ops), "consistent at 2000/s: {ops}");
    // A ramp to 2,000 ops/s averages half of it.
    let r = load_json(&[
        "--backend",
        "memory",
        "--duration",
        "1s",
        "--key-count",
        "1000",
        "--pattern",
        "ramp",
        "--rate",
        "2000",
    ]);
    let ops = check_consistent(&r, 2, 1.0);
    assert!((850..=1150).contains(&ops), "ramp to 2000/s: {ops}");
    // Bursts of 200 ms at 2,000 ops/s every 500 ms: 2 bursts in 1 s, 800 ops.
    let r = load_json(&[
        "--backend",
        "memory",
        "--duration",
        "1s",
        "--key-count",
        "1000",
        "--pattern",
        "burst",
        "--rate",
        "2000",
        "--burst-on",
        "200ms",
        "--burst-off",
        "300ms",
    ]);
    let ops = check_consistent(&r, 2, 1.0);
    assert!((680..=920).contains(&ops), "bursts: {ops}");
}

#[test]
fn bad_combinations_are_refused() {
    for (args, needle) in [
        (
            &["--backend", "constant", "--mix", "read=80,write=20"][..],
            "read-only",
        ),
        (
            &["--backend", "constant", "--mix", "read=90,delete=10"][..],
            "read-only",
        ),
        (
            &["--backend", "constant", "--no-preload"][..],
            "--no-preload",
        ),
        (&["--pattern", "ramp"][..], "--rate"),
        (
            &["--backend", "memory", "--durability", "sync"][..],
            "--durability",
        ),
        (&["--mix", "read=80,write=30"][..], "add up to 110"),
        (&["--key-count", "1000", "--key-size", "2"][..], "too small"),
        (&["--keys", "zipfian:1.5"][..], "θ"),
        (&["--duration", "5 parsecs"][..], "duration"),
        (&["--sweep", "--backend", "memory"][..], "cannot be used"),
    ] {
        let out = load(args);
        assert_eq!(code(&out), 1, "{args:?} accepted");
        let err = stderr(&out);
        assert!(err.contains(needle), "{args:?}: {err}");
        assert!(stdout(&out).is_empty(), "{args:?}");
    }
}

#[test]
fn text_output_names_every_number() {
    let out = load(&["--duration", "300ms", "--key-count", "1000"]);
    let text = String::from_utf8(ok(&out)).unwrap();
    for needle in [
        "cairn load: cairn (ordered store, durability buffered)",
        "2 threads for 300 ms, pattern consistent (as fast as possible)",
        "preloaded 1000 keys",
        "total_ops ",
        "per thread  #0 ",
        "ops/s per thread",
        "\nread ",
        "\nwrite ",
        "\ndelete ",
        "\nall ",
        "p99.9",
        "engine      wrote ",
        "disk        ",
        "(removed)",
        "durability  buffered: ",
        "a power loss can lose ",
    ] {
        assert!(text.contains(needle), "missing {needle:?} in\n{text}");
    }
    // No progress bar: standard error is not a terminal here.
    assert_eq!(stderr(&out), "");
}

#[test]
fn the_temporary_directory_is_removed_unless_kept() {
    let args = ["--duration", "200ms", "--key-count", "500"];
    let r = load_json(&args);
    let dir = r["dir"].as_str().unwrap().to_string();
    assert_eq!(r["kept"], false);
    assert!(!Path::new(&dir).exists(), "{dir} left behind");

    let mut keep = args.to_vec();
    keep.push("--keep");
    let r = load_json(&keep);
    let dir = r["dir"].as_str().unwrap().to_string();
    assert_eq!(r["kept"], true);
    assert!(Path::new(&dir).join("CURRENT").is_file(), "{dir} not kept");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn sync_writes_are_in_the_store_after_the_run() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("store");
    let r = load_json(&[
        "--dir",
        dir.to_str().unwrap(),
        "--durability",
        "sync",
        "--no-preload",
        "--mix",
        "write=100",
        "--keys",
        "sequential",
        "--threads",
        "1",
        "--key-count",
        "100000",
        "--duration",
        "300ms",
    ]);
    check_consistent(&r, 1, 0.3);
    assert_eq!(r["kept"], true);
    assert!(r["preload"].is_null());
    let writes = u(&r["ops"]["write"]);
    assert!(writes > 0);
    // Sync: every acknowledged write was durable when the load ended.
    assert_eq!(u(&r["seqno"]["not_durable"]), 0, "{r}");
    assert_eq!(u(&r["seqno"]["last"]), writes);

    // One thread walking the keys in order wrote the key numbers 0..writes.
    let db = cairn::Db::open(&dir, cairn::Options::default()).unwrap();
    let ks = db.keyspace(cairn::DEFAULT_KEYSPACE).unwrap();
    for n in [0, writes / 2, writes - 1] {
        let key = format!("{n:016}");
        let value = ks.get(&key).unwrap();
        assert_eq!(value.map(|v| v.len()), Some(100), "key {key}");
    }
    let past = format!("{writes:016}");
    assert_eq!(ks.get(&past).unwrap(), None);
    drop(ks);
    db.close().unwrap();
}

#[test]
fn the_sweep_has_a_row_per_mode() {
    let modes = [
        "memory",
        "sync",
        "periodic:1000",
        "periodic:100000",
        "buffered",
        "async:1024",
        "none",
    ];
    let r = load_json(&["--sweep", "--duration", "250ms", "--key-count", "1000"]);
    let rows = r["sweep"].as_array().unwrap();
    let names: Vec<&str> = rows
        .iter()
        .map(|row| row["mode"].as_str().unwrap())
        .collect();
    assert_eq!(names, modes);
    assert!(f(&r["baseline_ops_per_sec"]) > 0.0);
    assert_eq!(r["kept"], false);
    assert!(!Path::new(r["dir"].as_str().unwrap()).exists());
    for row in rows {
        check_consistent(row, 2, 0.25);
        assert!(row["loss_window"]["power_loss"].is_string());
        let pct = f(&row["percent_of_memory"]);
        let expected = f(&row["total_ops_per_sec"]) * 100.0 / f(&r["baseline_ops_per_sec"]);
        assert!((pct - expected).abs() < 1e-6);
    }
    assert!((f(&rows[0]["percent_of_memory"]) - 100.0).abs() < 1e-9);
    assert_eq!(rows[0]["seqno"], Value::Null);
    assert_eq!(u(&rows[1]["seqno"]["not_durable"]), 0, "sync row");
    assert_eq!(rows[1]["loss_window_short"]["power_loss"], "nothing");

    let out = load(&["--sweep", "--duration", "200ms", "--key-count", "500"]);
    let text = String::from_utf8(ok(&out)).unwrap();
    assert!(text.contains("process crash loses"), "{text}");
    for mode in modes {
        assert!(
            text.lines().any(|l| l.starts_with(&format!("{mode} "))),
            "no row for {mode}:\n{text}"
        );
    }
}
