//! `cairn demo` on a small store: it reports what it did, keeps its files with --dir (and
//! they verify), and removes its temporary directory otherwise.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod common;

use common::*;

#[test]
fn demo_with_dir_keeps_valid_files() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("demo-out");
    let out = run(&[
        "demo",
        "--entries",
        "3000",
        "--lookups",
        "5000",
        "--compression",
        "snappy",
        "--dir",
        s(&target),
    ]);
    let text = String::from_utf8(ok(&out)).unwrap();
    assert!(text.contains("3000 entries"), "{text}");
    assert!(text.contains("build:    3000 puts in"), "{text}");
    assert!(text.contains("get_into: 5000 random lookups"), "{text}");
    assert!(
        text.contains("get_many: 5000 random lookups in batches of 1024"),
        "{text}"
    );
    assert!(text.contains("(kept)"), "{text}");
    let index = target.join("demo.spi");
    let verify = String::from_utf8(ok(&run(&["sparkey", "verify", s(&index)]))).unwrap();
    assert!(verify.contains("3000 live entries"), "{verify}");
    assert_eq!(
        ok(&run(&["sparkey", "get", s(&index), "key_2999"])),
        b"value_2999"
    );
    let info =
        String::from_utf8(ok(&run(&["sparkey", "info", s(&target.join("demo.spl"))]))).unwrap();
    assert!(
        info.contains("Compression: Snappy, block size: 4096"),
        "{info}"
    );
}

#[test]
fn demo_without_dir_removes_its_files() {
    let out = run(&["demo", "--entries", "500", "--lookups", "500"]);
    let text = String::from_utf8(ok(&out)).unwrap();
    let files = text
        .lines()
        .find(|l| l.trim_start().starts_with("files:"))
        .unwrap();
    assert!(files.contains("removed"), "{files}");
    let path = files.split_whitespace().nth(1).unwrap();
    assert!(path.ends_with("demo.spl"), "{files}");
    assert!(!std::path::Path::new(path).exists(), "{path} still exists");
}

#[test]
fn demo_rejects_lookups_without_entries() {
    let out = run(&["demo", "--entries", "0", "--lookups", "1"]);
    assert_eq!(code(&out), 1);
    assert!(
        stderr(&out).contains("--lookups needs --entries"),
        "{}",
        stderr(&out)
    );
}
