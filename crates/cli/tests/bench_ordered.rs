//! `cairn bench ordered` on small stores: every benchmark prints its line in db_bench's
//! shape, the counts are right, `--json` is valid, and bad flags are refused.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod common;

use common::*;
use regex::Regex;

const ALL: &str = "fillseq,fillrandom,overwrite,readrandom,readseq,readreverse,seekrandom,\
deleterandom,readwhilewriting,readrandomwriterandom";

fn bench(args: &[&str]) -> std::process::Output {
    let mut all = vec!["bench", "ordered"];
    all.extend_from_slice(args);
    run(&all)
}

/// The first line of each benchmark's output.
fn result_lines(text: &str) -> Vec<&str> {
    text.lines().filter(|l| l.contains(" micros/op ")).collect()
}

#[test]
fn every_benchmark_prints_its_lines() {
    let out = bench(&["--num", "2000", "--benchmarks", ALL]);
    let text = String::from_utf8(ok(&out)).unwrap();
    let number = r"\d+\.\d{3}";
    let line = Regex::new(&format!(
        r"^(?<name>[a-z]+) *: +{number} micros/op \d+ ops/sec;(?<extra>.*)$"
    ))
    .unwrap();
    let rate = Regex::new(r"^ +\d+\.\d MB/s$").unwrap();
    let found = Regex::new(r"^ \((?<found>\d+) of (?<of>\d+) found\)$").unwrap();
    let lat = r"\d+\.\d+ (µs|ms|s)";
    // A histogram with no samples (readwhilewriting's writer when the readers finish
    // before it is scheduled, as on a loaded machine) prints "<label>: no samples".
    let percentiles = Regex::new(&format!(
        r"^    (([a-z]+: )?p50 {lat}  p99 {lat}  p99\.9 {lat}  max {lat}|[a-z]+: no samples)$"
    ))
    .unwrap();
    let writer_found = Regex::new(r"^ \(\d+ of 2000 found; writer \d+ writes\)$").unwrap();
    let mix = Regex::new(r"^ \( reads:\d+ writes:\d+ total:2000 found:\d+\)$").unwrap();
    let cost = Regex::new(
        r"^    write-amp (\d+\.\d\d|-) \(wal\+flush\+compaction bytes / user bytes\)  space \d+\.\d MB \(table bytes\)  stalls \d+$",
    )
    .unwrap();

    let lines: Vec<&str> = text.lines().collect();
    let mut names = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        let Some(c) = line.captures(l) else { continue };
        let name = c["name"].to_string();
        let extra = &c["extra"];
        match name.as_str() {
            "fillseq" | "fillrandom" | "overwrite" => {
                assert!(rate.is_match(extra), "{l}")
            }
            "readseq" | "readreverse" => assert!(rate.is_match(extra), "{l}"),
            "readrandom" | "seekrandom" => {
                let f = found.captures(extra).unwrap_or_else(|| panic!("{l}"));
                assert_eq!(&f["of"], "2000", "{l}");
            }
            "readwhilewriting" => assert!(writer_found.is_match(extra), "{l}"),
            "readrandomwriterandom" => assert!(mix.is_match(extra), "{l}"),
            "deleterandom" => assert_eq!(extra, "", "{l}"),
            other => panic!("unexpected benchmark {other}: {l}"),
        }
        // Then one percentile line per histogram, then the cost line for writers.
        let mut next = i + 1;
        while lines.get(next).is_some_and(|n| percentiles.is_match(n)) {
            next += 1;
        }
        assert!(next > i + 1, "no percentile line after {l}:\n{text}");
        let writes = !matches!(
            name.as_str(),
            "readrandom" | "readseq" | "readreverse" | "seekrandom"
        );
        assert_eq!(
            lines.get(next).is_some_and(|n| cost.is_match(n)),
            writes,
            "write-amp line after {l}:\n{text}"
        );
        names.push(name);
    }
    assert_eq!(names.join(","), ALL, "{text}");
    assert!(text.contains("Durability:  buffered"), "{text}");
}

#[test]
fn readrandom_after_fillseq_finds_every_key() {
    for threads in ["1", "3"] {
        let out = bench(&[
            "--num",
            "2000",
            "--threads",
            threads,
            "--benchmarks",
            "fillseq,readrandom,seekrandom,readseq,readreverse",
        ]);
        let text = String::from_utf8(ok(&out)).unwrap();
        let lines = result_lines(&text);
        assert!(
            lines[1].starts_with("readrandom   :") && lines[1].ends_with("(2000 of 2000 found)"),
            "{text}"
        );
        assert!(
            lines[2].starts_with("seekrandom   :") && lines[2].ends_with("(2000 of 2000 found)"),
            "{text}"
        );
    }
}

/// With `--mmap-reads`, reads from tables (read in place when uncompressed, through the
/// block cache with LZ4) find every key, and the header says how tables are read.
#[test]
fn mmap_reads_find_every_key_in_tables() {
    for compression in ["none", "lz4"] {
        let out = bench(&[
            "--num",
            "20000",
            "--mmap-reads",
            "--compression",
            compression,
            "--benchmarks",
            "fillseq,compact,readrandom,readseq,readreverse",
        ]);
        let text = String::from_utf8(ok(&out)).unwrap();
        assert!(text.contains("Table reads: through memory maps"), "{text}");
        let read = result_lines(&text)
            .into_iter()
            .find(|l| l.starts_with("readrandom   :"))
            .unwrap_or_else(|| panic!("no readrandom line: {text}"));
        assert!(read.ends_with("(20000 of 20000 found)"), "{text}");
    }
    let text = String::from_utf8(ok(&bench(&["--num", "10", "--benchmarks", "fillseq"]))).unwrap();
    assert!(text.contains("Table reads: pread"), "{text}");
}

fn json_lines(out: &std::process::Output) -> Vec<serde_json::Value> {
    String::from_utf8(ok(out))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

#[test]
fn json_has_one_object_per_benchmark() {
    let out = bench(&[
        "--num",
        "2000",
        "--json",
        "--batch-size",
        "10",
        "--threads",
        "2",
        "--benchmarks",
        "fillseq,readrandom,readseq,readreverse,readrandomwriterandom,fillrandom",
    ]);
    let objects = json_lines(&out);
    let names: Vec<&str> = objects
        .iter()
        .map(|o| o["benchmark"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "fillseq",
            "readrandom",
            "readseq",
            "readreverse",
            "readrandomwriterandom",
            "fillrandom"
        ]
    );
    for o in &objects {
        for field in [
            "ops",
            "threads",
            "elapsed_secs",
            "micros_per_op",
            "ops_per_sec",
            "mb_per_sec",
            "latency",
            "write_amp",
            "cost",
            "num",
            "durability",
        ] {
            assert!(o.get(field).is_some(), "no {field} in {o}");
        }
        assert!(o["ops_per_sec"].as_f64().unwrap() > 0.0, "{o}");
        assert!(o["latency"]["p99_ns"].as_u64().unwrap() > 0, "{o}");
    }
    let fillseq = &objects[0];
    assert_eq!(fillseq["ops"], 2000);
    assert_eq!(fillseq["latency"]["unit"], "batch");
    assert_eq!(fillseq["latency"]["samples"], 200);
    assert_eq!(fillseq["cost"]["user_bytes"], 2000 * 116);
    assert_eq!(objects[1]["found"], 2000);
    assert_eq!(objects[1]["lookups"], 2000);
    assert_eq!(objects[1]["threads"], 2);
    assert!(objects[1]["cost"].is_null());
    assert_eq!(objects[2]["ops"], 2000, "readseq reads every entry");
    assert_eq!(objects[3]["ops"], 2000, "readreverse reads every entry");
    let mix = &objects[4];
    assert_eq!(
        mix["reads"].as_u64().unwrap() + mix["writes"].as_u64().unwrap(),
        2000
    );
    assert!(mix["writes_latency"]["samples"].as_u64().is_some(), "{mix}");
    assert_eq!(objects[5]["cost"]["user_bytes"], 2000 * 116, "fresh store");
}

#[test]
fn use_existing_db_needs_a_store() {
    let dir = tempfile::tempdir().unwrap();
    let out = bench(&["--use-existing-db", "--dir", s(dir.path()), "--num", "10"]);
    assert_eq!(code(&out), 1);
    let err = stderr(&out);
    assert!(
        err.contains("--use-existing-db") && err.contains("no Cairn store"),
        "{err}"
    );
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        0,
        "nothing created"
    );

    let out = bench(&["--use-existing-db", "--num", "10"]);
    assert_eq!(code(&out), 1, "needs --dir");
}

#[test]
fn use_existing_db_reads_a_kept_store() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let args = ["--num", "1000", "--dir", s(&store)];
    let out = bench(&[&args[..], &["--benchmarks", "fillseq"]].concat());
    let text = String::from_utf8(ok(&out)).unwrap();
    assert!(text.contains("(kept)"), "{text}");
    assert!(store.join("CURRENT").is_file());

    let out = bench(
        &[
            &args[..],
            &["--use-existing-db", "--benchmarks", "fillrandom,readrandom"],
        ]
        .concat(),
    );
    let text = String::from_utf8(ok(&out)).unwrap();
    assert!(
        text.contains("fillrandom   : skipped (--use-existing-db)"),
        "{text}"
    );
    assert!(text.contains("(1000 of 1000 found)"), "{text}");

    // Without --use-existing-db the store is emptied first.
    let out = bench(&[&args[..], &["--benchmarks", "readrandom"]].concat());
    let text = String::from_utf8(ok(&out)).unwrap();
    assert!(text.contains("(0 of 1000 found)"), "{text}");
}

#[test]
fn a_directory_of_other_files_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), b"mine").unwrap();
    let out = bench(&["--dir", s(dir.path()), "--num", "10"]);
    assert_eq!(code(&out), 1);
    assert!(stderr(&out).contains("refusing"), "{}", stderr(&out));
    assert!(dir.path().join("notes.txt").exists());
}

#[test]
fn the_temporary_store_is_removed() {
    let out = bench(&["--num", "100", "--benchmarks", "fillrandom"]);
    let text = String::from_utf8(ok(&out)).unwrap();
    let line = text.lines().find(|l| l.starts_with("Store:")).unwrap();
    assert!(line.ends_with("(temporary, removed at exit)"), "{line}");
    let path = line.split_whitespace().nth(1).unwrap();
    assert!(!std::path::Path::new(path).exists(), "{path} still exists");
}

#[test]
fn unknown_benchmark_is_a_usage_error() {
    let out = bench(&["--num", "10", "--benchmarks", "fillseq,readramdon"]);
    assert_eq!(code(&out), 1);
    let err = stderr(&out);
    assert!(err.contains("invalid value 'readramdon'"), "{err}");
    assert!(err.contains("readrandom"), "lists the valid names: {err}");
    assert!(out.stdout.is_empty());
}

#[test]
fn durability_values() {
    for good in ["sync", "periodic:1000", "buffered", "async:64", "none"] {
        let objects = json_lines(&bench(&[
            "--num",
            "50",
            "--json",
            "--benchmarks",
            "fillrandom,readrandom",
            "--durability",
            good,
        ]));
        assert_eq!(objects[0]["durability"], good);
        assert_eq!(objects[0]["ops"], 50);
    }
    for bad in [
        "periodic",
        "periodic:0",
        "periodic:x",
        "async:0",
        "async",
        "fsync",
        "",
    ] {
        let out = bench(&["--num", "10", "--durability", bad]);
        assert_eq!(code(&out), 1, "{bad:?} accepted");
        assert!(
            stderr(&out).contains("--durability"),
            "{bad:?}: {}",
            stderr(&out)
        );
    }
}

#[test]
fn other_bad_flags_are_refused() {
    for args in [
        &["--num", "0"][..],
        &["--num", "100000", "--key-size", "4"],
        &["--threads", "0"],
        &["--batch-size", "0"],
        &["--readwritepercent", "101"],
        &["--compression", "gzip"],
    ] {
        let out = bench(args);
        assert_eq!(code(&out), 1, "{args:?} accepted");
        assert!(out.stdout.is_empty(), "{args:?}");
    }
    let err = stderr(&bench(&["--num", "100000", "--key-size", "4"]));
    assert!(err.contains("--key-size 4 is too small"), "{err}");
}

/// `--memory-budget` opens the store with that budget: each benchmark's memory line and
/// JSON object report the budget's shares, each within its bound, and the process's
/// resident memory; a budget too small to run with is refused.
#[test]
fn memory_budget_is_reported_per_benchmark() {
    let budget: u64 = 32 << 20;
    let out = bench(&[
        // Enough to seal memtables (2 MiB under this budget), so tables are written.
        "--num",
        "30000",
        "--json",
        "--memory-budget",
        &budget.to_string(),
        "--benchmarks",
        "fillrandom,readrandom",
    ]);
    let objects = json_lines(&out);
    assert_eq!(objects.len(), 2);
    for v in &objects {
        assert_eq!(v["memory_budget"], budget, "{v}");
        let m = &v["memory"];
        assert_eq!(m["memory_budget"], budget, "{m}");
        assert_eq!(m["memtable_limit"], budget / 4, "{m}");
        assert_eq!(m["index_filter_limit"], budget / 8, "{m}");
        assert_eq!(
            m["block_cache_capacity"],
            budget - budget / 4 - budget / 8,
            "{m}"
        );
        for (used, bound) in [
            ("memtable_bytes", "memtable_limit"),
            ("block_cache_bytes", "block_cache_capacity"),
            ("index_filter_bytes", "index_filter_limit"),
        ] {
            assert!(
                m[used].as_u64().unwrap() <= m[bound].as_u64().unwrap(),
                "{m}"
            );
        }
        if cfg!(target_os = "linux") {
            assert!(m["peak_rss_bytes"].as_u64().unwrap() >= m["rss_bytes"].as_u64().unwrap());
        }
    }
    // The readrandom after the fill has the tables open.
    assert!(objects[1]["memory"]["index_filter_bytes"].as_u64().unwrap() > 0);

    let out = bench(&["--num", "100", "--benchmarks", "fillseq"]);
    let text = String::from_utf8(ok(&out)).unwrap();
    assert!(
        text.lines()
            .any(|l| l.starts_with("    memory: rss ") && !l.contains("budget")),
        "{text}"
    );

    let out = bench(&[
        "--num",
        "100",
        "--memory-budget",
        "1048576",
        "--benchmarks",
        "fillseq",
    ]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("memory_budget"),
        "{out:?}"
    );
}
