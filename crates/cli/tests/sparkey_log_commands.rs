//! `createlog`, `appendlog`, `writehash` and `get` together, including the reference
//! quirks Cairn fixes: the reference `appendlog` splits lines with `strtok` (no empty key,
//! no empty value, leading delimiters skipped), silently drops a final line without a
//! newline, and cannot store NUL bytes. Here a line splits at its first delimiter, the last
//! line counts, and any byte except LF is data.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod common;

use std::path::Path;

use common::*;

fn createlog(log: &Path, extra: &[&str]) {
    let mut args = vec!["sparkey", "createlog"];
    args.extend_from_slice(extra);
    args.push(s(log));
    ok(&run(&args));
}

fn appendlog(log: &Path, extra: &[&str], input: &[u8]) -> std::process::Output {
    let mut args = vec!["sparkey", "appendlog"];
    args.extend_from_slice(extra);
    args.push(s(log));
    run_in(None, &args, input)
}

fn live_entries(index: &Path) -> Vec<(Vec<u8>, Vec<u8>)> {
    parse_pairs(&ok(&run(&["sparkey", "dump", s(index)])))
}

fn pair(k: &[u8], v: &[u8]) -> (Vec<u8>, Vec<u8>) {
    (k.to_vec(), v.to_vec())
}

#[test]
fn round_trip_with_the_fixed_quirks() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("x.spl");
    let index = dir.path().join("x.spi");
    createlog(&log, &[]);
    let input: &[u8] =
        b"a\t1\n\tempty key\nempty value\t\nc\tv\twith\ttabs\nd\tcr\r\nnul\0key\tnul\0value\nlast\tno newline";
    ok(&appendlog(&log, &[], input));
    ok(&run(&["sparkey", "writehash", s(&log)]));
    let expected = vec![
        pair(b"a", b"1"),
        pair(b"", b"empty key"),
        pair(b"empty value", b""),
        pair(b"c", b"v\twith\ttabs"),
        pair(b"d", b"cr\r"),
        pair(b"nul\0key", b"nul\0value"),
        pair(b"last", b"no newline"),
    ];
    assert_eq!(live_entries(&index), expected);
    for (key, value) in &expected {
        let out = run(&["sparkey", "get", "--hex", s(&index), &hex(key)]);
        assert_eq!(ok(&out), *value, "key {key:?}");
    }
    let out = run(&["sparkey", "get", s(&index), "a"]);
    assert_eq!(ok(&out), b"1");
    assert_eq!(code(&run(&["sparkey", "get", s(&index), "zzz"])), 2);
}

#[test]
fn line_without_delimiter_aborts_but_keeps_earlier_lines() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("x.spl");
    createlog(&log, &["-c", "snappy", "-b", "64"]);
    let out = appendlog(&log, &[], b"k1\tv1\nk2\tv2\nno delimiter here\nk3\tv3\n");
    assert_eq!(code(&out), 1);
    assert_eq!(stderr(&out), "Cannot split input line, aborting early.\n");
    let log_dump = String::from_utf8(ok(&run(&["sparkey", "dump", "--log", s(&log)]))).unwrap();
    assert_eq!(log_dump, "PUT\t6b31\t7631\nPUT\t6b32\t7632\n");
    // An empty line has no delimiter either.
    let out = appendlog(&log, &[], b"k4\tv4\n\nk5\tv5\n");
    assert_eq!(code(&out), 1);
    ok(&run(&["sparkey", "writehash", s(&log)]));
    let keys: Vec<Vec<u8>> = live_entries(&dir.path().join("x.spi"))
        .into_iter()
        .map(|(k, _)| k)
        .collect();
    assert_eq!(keys, vec![b"k1".to_vec(), b"k2".to_vec(), b"k4".to_vec()]);
}

#[test]
fn custom_delimiter_splits_at_its_first_occurrence() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("x.spl");
    createlog(&log, &[]);
    ok(&appendlog(&log, &["-d", ";"], b"a;b;c\n;x\n"));
    ok(&run(&["sparkey", "writehash", s(&log)]));
    assert_eq!(
        live_entries(&dir.path().join("x.spi")),
        vec![pair(b"a", b"b;c"), pair(b"", b"x")]
    );
    let out = appendlog(&log, &["-d", ";;"], b"");
    assert_eq!(code(&out), 1);
    assert!(
        stderr(&out).contains("delimiter must be one character, but was ';;'"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn writehash_updates_incrementally_and_takes_hash_size() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("x.spl");
    let index = dir.path().join("x.spi");
    createlog(&log, &["-c", "zstd", "-b", "128"]);
    ok(&appendlog(&log, &[], b"a\t1\nb\t2\n"));
    ok(&run(&["sparkey", "writehash", s(&log)]));
    ok(&appendlog(&log, &[], b"c\t3\na\t4\n"));
    // Not yet indexed: the index still answers from its old view.
    assert_eq!(ok(&run(&["sparkey", "get", s(&index), "a"])), b"1");
    assert_eq!(code(&run(&["sparkey", "get", s(&index), "c"])), 2);
    ok(&run(&["sparkey", "writehash", s(&log)]));
    assert_eq!(ok(&run(&["sparkey", "get", s(&index), "a"])), b"4");
    assert_eq!(ok(&run(&["sparkey", "get", s(&index), "c"])), b"3");

    let info = |name: &Path| String::from_utf8(ok(&run(&["sparkey", "info", s(name)]))).unwrap();
    assert!(info(&log).contains("Compression: Zstd, block size: 128\n"));
    assert!(info(&index).contains("Hash size: 32 bit Murmurhash3\n"));
    ok(&run(&[
        "sparkey",
        "writehash",
        "--hash-size",
        "64",
        s(&log),
    ]));
    assert!(info(&index).contains("Hash size: 64 bit Murmurhash3\n"));
    // Auto keeps an existing 64-bit index's width; --fresh rebuilds with the auto rule.
    ok(&run(&["sparkey", "writehash", s(&log)]));
    assert!(info(&index).contains("Hash size: 64 bit Murmurhash3\n"));
    ok(&run(&["sparkey", "writehash", "--fresh", s(&log)]));
    assert!(info(&index).contains("Hash size: 32 bit Murmurhash3\n"));
    assert_eq!(ok(&run(&["sparkey", "get", s(&index), "a"])), b"4");
    ok(&run(&["sparkey", "verify", s(&index)]));
}

#[test]
fn createlog_options_and_their_errors() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("plain.spl");
    // -b is checked even when uncompressed, then stored as 0.
    createlog(&log, &["-b", "16"]);
    let info = String::from_utf8(ok(&run(&["sparkey", "info", s(&log)]))).unwrap();
    assert!(info.contains("Puts: 0, Deletes: 0\n"), "{info}");
    assert!(
        info.contains("Compression: Uncompressed, block size: 0\n"),
        "{info}"
    );
    let snappy = dir.path().join("snappy.spl");
    createlog(&snappy, &["-c", "snappy"]);
    let info = String::from_utf8(ok(&run(&["sparkey", "info", s(&snappy)]))).unwrap();
    assert!(
        info.contains("Compression: Snappy, block size: 4096\n"),
        "{info}"
    );

    let bad = dir.path().join("bad.spl");
    for (args, message) in [
        (
            vec!["-b", "15"],
            "Block size 15, not in range. Max is 1073741824, min is 16",
        ),
        (
            vec!["-b", "1073741825"],
            "Block size 1073741825, not in range",
        ),
        (
            vec!["-b", "12k"],
            "Block size must be an integer, but was '12k'",
        ),
        (vec!["-c", "lz4"], "invalid value 'lz4'"),
    ] {
        let mut full = vec!["sparkey", "createlog"];
        full.extend(args.iter().copied());
        full.push(s(&bad));
        let out = run(&full);
        assert_eq!(code(&out), 1, "{args:?}");
        assert!(stderr(&out).contains(message), "{args:?}: {}", stderr(&out));
        assert!(!bad.exists());
    }
}

#[test]
fn suffix_rules_of_get_and_writehash() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("x.log");
    createlog(&log, &[]); // createlog accepts any name
    let out = run(&["sparkey", "writehash", s(&log)]);
    assert_eq!(code(&out), 1);
    assert_eq!(stderr(&out), "log filename must end with .spl\n");
    let out = run(&["sparkey", "get", s(&log), "k"]);
    assert_eq!(code(&out), 1);
    assert_eq!(stderr(&out), "index filename must end with .spi\n");
}
