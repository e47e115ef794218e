//! `build` from TSV, JSON lines and CSV: every byte value round-trips (checked with `dump`),
//! deletes and overwrites apply in input order, bad input names its line and leaves no
//! files behind, and the progress bar stays hidden when standard error is not a terminal.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod common;

use std::collections::BTreeSet;
use std::path::Path;

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine as _;
use common::*;

/// Keys and values covering every byte (except what a format cannot carry).
fn binary_pairs(forbidden: &[u8]) -> Vec<(Vec<u8>, Vec<u8>)> {
    let all: Vec<u8> = (0..=255u8).filter(|b| !forbidden.contains(b)).collect();
    let mut pairs = vec![
        (all.clone(), b"every byte as key".to_vec()),
        (
            b"every byte as value".to_vec(),
            all.iter().rev().copied().collect(),
        ),
        (b"empty value".to_vec(), Vec::new()),
        (Vec::new(), b"empty key".to_vec()),
        (vec![0, 0, 0], vec![0xff, 0, 0xfe]),
    ];
    for i in 0..200u32 {
        let value = (i * 7)
            .to_le_bytes()
            .into_iter()
            .filter(|b| !forbidden.contains(b))
            .collect();
        pairs.push((format!("k{i}").into_bytes(), value));
    }
    pairs
}

fn build(dir: &Path, args: &[&str], input: &[u8]) -> std::process::Output {
    let mut full = vec!["sparkey", "build"];
    full.extend_from_slice(args);
    run_in(Some(dir), &full, input)
}

fn dump(index: &Path) -> Vec<(Vec<u8>, Vec<u8>)> {
    parse_pairs(&ok(&run(&["sparkey", "dump", s(index)])))
}

fn file_names(dir: &Path) -> BTreeSet<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect()
}

#[test]
fn tsv_round_trips_raw_bytes() {
    let dir = tempfile::tempdir().unwrap();
    // TSV cannot carry LF anywhere nor TAB in a key; TABs in values are fine.
    let mut pairs = binary_pairs(b"\n\t");
    pairs.push((b"tabs".to_vec(), b"a\tb\t".to_vec()));
    let mut input = Vec::new();
    for (k, v) in &pairs {
        input.extend_from_slice(k);
        input.push(b'\t');
        input.extend_from_slice(v);
        input.push(b'\n');
    }
    input.pop(); // a final line without LF counts too
    std::fs::write(dir.path().join("in.tsv"), &input).unwrap();
    let out = build(dir.path(), &["in.tsv", "out.spl"], b"");
    let summary = String::from_utf8(ok(&out)).unwrap();
    assert!(
        out.stderr.is_empty(),
        "progress bar drawn without a terminal: {}",
        stderr(&out)
    );
    assert!(
        summary.contains(&format!(
            "{} entries ({} puts, 0 deletes",
            pairs.len(),
            pairs.len()
        )),
        "{summary}"
    );
    assert!(
        summary.contains(&format!("from {} input bytes", input.len())),
        "{summary}"
    );
    assert!(summary.contains("puts/s"), "{summary}");
    assert_eq!(dump(&dir.path().join("out.spi")), pairs);
    assert_eq!(
        file_names(dir.path()),
        BTreeSet::from(["in.tsv", "out.spi", "out.spl"].map(String::from))
    );
    ok(&run(&["sparkey", "verify", s(&dir.path().join("out.spi"))]));
}

#[test]
fn jsonl_round_trips_with_base64_and_deletes() {
    let dir = tempfile::tempdir().unwrap();
    let pairs = binary_pairs(b"");
    let mut input = String::new();
    for (k, v) in &pairs {
        let mut obj = serde_json::Map::new();
        match std::str::from_utf8(k) {
            Ok(text) => obj.insert("key".into(), text.into()),
            Err(_) => obj.insert("key_b64".into(), BASE64.encode(k).into()),
        };
        match std::str::from_utf8(v) {
            Ok(text) => obj.insert("value".into(), text.into()),
            Err(_) => obj.insert("value_b64".into(), BASE64.encode(v).into()),
        };
        input.push_str(&serde_json::Value::Object(obj).to_string());
        input.push('\n');
    }
    // Overwrite one key, delete another (and one that never existed), blank line skipped.
    input.push_str("{\"key\": \"k1\", \"value\": \"new \\u00e9\"}\n\n");
    input.push_str("{\"key\": \"k2\", \"delete\": true}\n");
    input.push_str("{\"key_b64\": \"AAAA\", \"delete\": true}\n");
    input.push_str("{\"key\": \"never\", \"delete\": true}\n");
    let out = build(
        dir.path(),
        &["--format", "jsonl", "-", "out.spl"],
        input.as_bytes(),
    );
    let summary = String::from_utf8(ok(&out)).unwrap();
    assert!(
        summary.contains("(206 puts, 3 deletes, 203 live keys)"),
        "{summary}"
    );

    // The dump follows the log order of each key's surviving PUT: k1 moves to the end.
    let mut expected = pairs.clone();
    expected.retain(|(k, _)| k != b"k1" && k != b"k2" && k != &[0u8, 0, 0]);
    expected.push((b"k1".to_vec(), "new \u{e9}".as_bytes().to_vec()));
    assert_eq!(dump(&dir.path().join("out.spi")), expected);
    let log = String::from_utf8(ok(&run(&[
        "sparkey",
        "dump",
        "--log",
        s(&dir.path().join("out.spl")),
    ])))
    .unwrap();
    assert!(
        log.ends_with("DELETE\t6b32\nDELETE\t000000\nDELETE\t6e65766572\n"),
        "{log}"
    );
}

#[test]
fn csv_round_trips_any_bytes_with_quoting() {
    let dir = tempfile::tempdir().unwrap();
    let mut pairs = binary_pairs(b"");
    pairs.push((
        b"comma,key".to_vec(),
        b"multi\nline\r\nvalue with \"quotes\"".to_vec(),
    ));
    let mut writer = csv::WriterBuilder::new()
        .quote_style(csv::QuoteStyle::Always)
        .from_writer(Vec::new());
    for (k, v) in &pairs {
        writer.write_record([k, v]).unwrap();
    }
    let input = writer.into_inner().unwrap();
    std::fs::write(dir.path().join("in.csv"), &input).unwrap();
    // The format is inferred from the .csv extension; compressed output this time.
    ok(&build(
        dir.path(),
        &["-c", "zstd", "-b", "256", "in.csv", "out.spl"],
        b"",
    ));
    assert_eq!(dump(&dir.path().join("out.spi")), pairs);
    let info = String::from_utf8(ok(&run(&[
        "sparkey",
        "info",
        s(&dir.path().join("out.spl")),
    ])))
    .unwrap();
    assert!(
        info.contains("Compression: Zstd, block size: 256\n"),
        "{info}"
    );

    // Unquoted simple CSV works too, with CRLF line ends.
    ok(&build(
        dir.path(),
        &["--format", "csv", "-", "plain.spl"],
        b"a,1\r\nb,2\r\n",
    ));
    assert_eq!(
        dump(&dir.path().join("plain.spi")),
        vec![
            (b"a".to_vec(), b"1".to_vec()),
            (b"b".to_vec(), b"2".to_vec())
        ]
    );
}

#[test]
fn bad_input_names_the_line_and_leaves_nothing_behind() {
    let cases: [(&str, &[u8], &str); 8] = [
        (
            "tsv",
            b"a\t1\nb\t2\nno tab\n",
            "standard input: line 3: no TAB between key and value",
        ),
        (
            "jsonl",
            b"{\"key\":\"a\",\"value\":\"1\"}\n{\"key\":\"a\"}\n",
            "standard input: line 2: missing \"value\"",
        ),
        (
            "jsonl",
            b"{\"key\":\"a\",\"vaule\":\"1\"}\n",
            "line 1: unknown field \"vaule\"",
        ),
        ("jsonl", b"[1,2]\n", "line 1: expected a JSON object"),
        (
            "jsonl",
            b"{\"key\":\"a\",\"value\":\n",
            "line 1: invalid JSON",
        ),
        (
            "jsonl",
            b"{\"key_b64\":\"not base64!\",\"value\":\"\"}\n",
            "line 1: \"key_b64\" is not standard base64",
        ),
        (
            "csv",
            b"a,1\nb,2,3\n",
            "standard input: line 2: expected 2 fields (key,value), found 3",
        ),
        (
            "csv",
            b"a,1\nb,\"unterminated\nc,3\n",
            "line 2: a quoted field is not closed",
        ),
    ];
    for (format, input, message) in cases {
        let dir = tempfile::tempdir().unwrap();
        let out = build(dir.path(), &["--format", format, "-", "out.spl"], input);
        assert_eq!(code(&out), 1, "{format} {input:?}");
        assert!(stderr(&out).contains(message), "{format}: {}", stderr(&out));
        assert!(
            file_names(dir.path()).is_empty(),
            "{format}: left {:?}",
            file_names(dir.path())
        );
    }
}

#[test]
fn failed_build_keeps_an_existing_pair() {
    let dir = tempfile::tempdir().unwrap();
    ok(&build(dir.path(), &["-", "out.spl"], b"old\tpair\n"));
    let before = std::fs::read(dir.path().join("out.spi")).unwrap();
    let out = build(dir.path(), &["-", "out.spl"], b"new\tpair\nbroken\n");
    assert_eq!(code(&out), 1);
    assert_eq!(std::fs::read(dir.path().join("out.spi")).unwrap(), before);
    assert_eq!(
        dump(&dir.path().join("out.spi")),
        vec![(b"old".to_vec(), b"pair".to_vec())]
    );
    assert_eq!(
        file_names(dir.path()),
        BTreeSet::from(["out.spi", "out.spl"].map(String::from))
    );
}

#[test]
fn build_options_and_argument_errors() {
    let dir = tempfile::tempdir().unwrap();
    ok(&build(
        dir.path(),
        &["--hash-size", "64", "-", "h.spl"],
        b"k\tv\n",
    ));
    let info =
        String::from_utf8(ok(&run(&["sparkey", "info", s(&dir.path().join("h.spi"))]))).unwrap();
    assert!(info.contains("Hash size: 64 bit Murmurhash3\n"), "{info}");

    let out = build(dir.path(), &["-", "out.idx"], b"k\tv\n");
    assert_eq!(code(&out), 1);
    assert_eq!(stderr(&out), "log filename must end with .spl\n");
    let out = build(dir.path(), &["missing.tsv", "out.spl"], b"");
    assert_eq!(code(&out), 1);
    assert!(
        stderr(&out).starts_with("open missing.tsv failed:"),
        "{}",
        stderr(&out)
    );
    let out = build(dir.path(), &["-b", "8", "-", "out.spl"], b"");
    assert_eq!(code(&out), 1);
    assert!(
        stderr(&out).contains("Block size 8, not in range"),
        "{}",
        stderr(&out)
    );
    assert!(!dir.path().join("out.spl").exists());
}
