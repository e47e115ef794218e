//! `cairn dump` / `restore` (both formats, binary keys, every keyspace, bad input),
//! `export` (read back with the constant-store reader and `cairn sparkey get`) and
//! `import` (every reference vector, a mismatched index).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod common;

use std::collections::BTreeMap;
use std::path::Path;

use cairn::hash::Reader;
use common::*;

type Contents = BTreeMap<(String, Vec<u8>), Vec<u8>>;

/// Every pair of every keyspace, through the library.
fn contents(store: &Path) -> Contents {
    let db = cairn::Db::open(store, cairn::Options::default()).unwrap();
    let mut out = Contents::new();
    for name in db.keyspace_names() {
        for item in db.get_keyspace(&name).unwrap().iter() {
            let (k, v) = item.unwrap();
            out.insert((name.clone(), k), v);
        }
    }
    db.close().unwrap();
    out
}

/// A store with text and binary keys in three keyspaces.
fn sample_store(store: &Path) -> Contents {
    let db = cairn::Db::open(store, cairn::Options::default()).unwrap();
    for (i, name) in ["default", "users", "raw"].into_iter().enumerate() {
        let ks = db.keyspace(name).unwrap();
        for j in 0..50u8 {
            let key = if name == "raw" {
                vec![0xff, j, 0, b'\n']
            } else {
                format!("{name}-{j:02}").into_bytes()
            };
            let value = if j % 2 == 0 {
                vec![0x80, j, i as u8, 0]
            } else {
                format!("text \"{j}\" ✓\t").into_bytes()
            };
            ks.insert(key, value).unwrap();
        }
    }
    db.close().unwrap();
    contents(store)
}

#[test]
fn dump_restore_round_trips_binary_keys_in_both_formats() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    let want = sample_store(&src);
    assert_eq!(want.len(), 150);
    for format in ["jsonl", "cbor"] {
        let dumped = ok(&run(&["dump", s(&src), "--format", format]));
        let dst = dir.path().join(format!("dst-{format}"));
        let out = run_in(None, &["restore", s(&dst), "--format", format], &dumped);
        let summary = String::from_utf8(ok(&out)).unwrap();
        assert!(summary.contains("restored 150 entries"), "{summary}");
        assert_eq!(contents(&dst), want, "{format}");
        // A second dump of the copy is byte-identical.
        assert_eq!(ok(&run(&["dump", s(&dst), "--format", format])), dumped);
    }
}

#[test]
fn one_keyspace_dump_restores_under_another_name() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    let all = sample_store(&src);
    let dumped = ok(&run(&["dump", s(&src), "--keyspace", "users"]));
    let text = String::from_utf8(dumped.clone()).unwrap();
    assert_eq!(text.lines().count(), 50);
    assert!(!text.contains("\"keyspace\""));
    let dst = dir.path().join("dst");
    ok(&run_in(
        None,
        &["restore", s(&dst), "--keyspace", "people"],
        &dumped,
    ));
    let got = contents(&dst);
    let want: Contents = all
        .into_iter()
        .filter(|((ks, _), _)| ks == "users")
        .map(|((_, k), v)| (("people".to_string(), k), v))
        .collect();
    let got: Contents = got
        .into_iter()
        .filter(|((ks, _), _)| ks == "people")
        .collect();
    assert_eq!(got, want);
    assert_eq!(code(&run(&["dump", s(&src), "--keyspace", "nope"])), 1);
}

#[test]
fn restore_of_bad_input_names_the_line_or_record() {
    let dir = tempfile::tempdir().unwrap();
    let dst = dir.path().join("dst");
    let input = b"{\"key\":\"a\",\"value\":\"1\"}\n{\"key\":\"b\",\"valu\":\"2\"}\n";
    let out = run_in(None, &["restore", s(&dst)], input);
    assert_eq!(code(&out), 1);
    assert!(
        stderr(&out).contains("bad jsonl input at line 2 (byte 24): unknown field \"valu\""),
        "{}",
        stderr(&out)
    );

    let src = dir.path().join("src");
    sample_store(&src);
    let dumped = ok(&run(&["dump", s(&src), "--format", "cbor"]));
    let cut = &dumped[..dumped.len() - 1];
    let out = run_in(None, &["restore", s(&dst), "--format", "cbor"], cut);
    assert_eq!(code(&out), 1);
    assert!(
        stderr(&out).contains("bad cbor input at record 152"),
        "{}",
        stderr(&out)
    );
    let mut flipped = dumped.clone();
    flipped[100] ^= 0x01;
    let out = run_in(None, &["restore", s(&dst), "--format", "cbor"], &flipped);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    let out = run_in(None, &["restore", s(&dst), "--format", "cbor"], b"{}");
    assert_eq!(code(&out), 1);
    assert!(stderr(&out).contains("record 1"), "{}", stderr(&out));
}

#[test]
fn restore_keeps_attributes() {
    let dir = tempfile::tempdir().unwrap();
    let dst = dir.path().join("dst");
    let input = b"{\"key\":\"a\",\"value\":\"1\",\"tag\":9,\"meta_b64\":\"AAE=\",\"expires_at\":4000000000000}\n{\"key\":\"b\",\"value\":\"2\",\"expires_at\":1}\n";
    let out = run_in(None, &["restore", s(&dst)], input);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let dumped = ok(&run(&["dump", s(&dst)]));
    assert_eq!(
        String::from_utf8_lossy(&dumped),
        "{\"key\":\"a\",\"value\":\"1\",\"tag\":9,\"meta_b64\":\"AAE=\",\"expires_at\":4000000000000}\n"
    );
    assert_eq!(code(&run(&["get", s(&dst), "b"])), 2);
}

#[test]
fn export_is_read_by_the_constant_store() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    let all = sample_store(&src);
    let log = dir.path().join("raw.spl");
    let out = ok(&run(&[
        "export",
        s(&src),
        s(&log),
        "--keyspace",
        "raw",
        "-c",
        "zstd",
        "-b",
        "256",
    ]));
    assert!(String::from_utf8(out)
        .unwrap()
        .contains("exported 50 entries"));
    let index = dir.path().join("raw.spi");
    let reader = Reader::open(&index, &log).unwrap();
    assert_eq!(reader.len(), 50);
    for ((ks, k), v) in all.iter().filter(|((ks, _), _)| ks == "raw") {
        assert_eq!(reader.get(k).unwrap().as_ref(), Some(v), "{ks} {k:?}");
        let got = ok(&run(&["sparkey", "get", "--hex", s(&index), &hex(k)]));
        assert_eq!(&got, v);
    }
    ok(&run(&["sparkey", "verify", s(&index)]));
    assert_eq!(
        code(&run(&["export", s(&src), s(&dir.path().join("x.txt"))])),
        1
    );
}

#[test]
fn import_of_every_reference_vector() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s");
    for case in cases() {
        let log = vectors().join(format!("{case}.spl"));
        let index = vectors().join(format!("{case}.spi"));
        ok(&run(&[
            "import",
            s(&log),
            s(&store),
            "--keyspace",
            &case,
            "--index",
            s(&index),
        ]));
        let expected = std::fs::read(vectors().join(format!("{case}.expected"))).unwrap();
        let mut want = parse_pairs(&expected);
        want.sort();
        let scanned = ok(&run(&["scan", s(&store), "--keyspace", &case]));
        let got: Vec<(Vec<u8>, Vec<u8>)> = std::str::from_utf8(&scanned)
            .unwrap()
            .lines()
            .map(|l| {
                let v: serde_json::Value = serde_json::from_str(l).unwrap();
                (field(&v, "key"), field(&v, "value"))
            })
            .collect();
        assert_eq!(got, want, "{case}");
    }
}

/// A field given as text or as `<name>_b64`.
fn field(v: &serde_json::Value, name: &str) -> Vec<u8> {
    use base64::Engine as _;
    match v.get(name) {
        Some(t) => t.as_str().unwrap().as_bytes().to_vec(),
        None => base64::engine::general_purpose::STANDARD
            .decode(v[format!("{name}_b64")].as_str().unwrap())
            .unwrap(),
    }
}

#[test]
fn import_with_an_index_of_another_log_exits_3_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s");
    let out = run(&[
        "import",
        s(&vectors().join("basic.spl")),
        s(&store),
        "--index",
        s(&vectors().join("deletes.spi")),
    ]);
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    assert!(stderr(&out).contains("does not belong"), "{}", stderr(&out));
    let scanned = ok(&run(&["scan", s(&store)]));
    assert!(scanned.is_empty());
}

/// Regression: a restore that failed left behind the empty store it had created (and the
/// directories above it). Now it removes what it created, and only that: an empty
/// directory it was given stays (empty), an existing store stays as it was.
#[test]
fn failed_restore_removes_only_the_store_it_created() {
    let dir = tempfile::tempdir().unwrap();
    let bad = b"{\"key\":\"a\",\"value\":\"1\"}\n{oops}\n";

    let deep = dir.path().join("new/deeper/store");
    let out = run_in(None, &["restore", s(&deep)], bad);
    assert_eq!(code(&out), 1);
    assert!(stderr(&out).contains("line 2"), "{}", stderr(&out));
    assert!(!dir.path().join("new").exists());

    // A relative path, from the directory that holds it.
    let out = run_in(Some(dir.path()), &["restore", "rel"], bad);
    assert_eq!(code(&out), 1);
    assert!(!dir.path().join("rel").exists());

    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let out = run_in(None, &["restore", s(&empty), "--format", "cbor"], bad);
    assert_eq!(code(&out), 1);
    assert!(empty.is_dir());
    assert_eq!(std::fs::read_dir(&empty).unwrap().count(), 0);

    let store = dir.path().join("store");
    let want = sample_store(&store);
    let out = run_in(None, &["restore", s(&store)], bad);
    assert_eq!(code(&out), 1);
    assert_eq!(contents(&store), want);

    // A good restore into a new directory keeps its store, of course.
    let good = dir.path().join("good/store");
    ok(&run_in(None, &["restore", s(&good)], &bad[..24]));
    assert_eq!(contents(&good).len(), 1);
}

/// Regression: `cairn restore --format cbor` of a dump with one changed byte stored
/// thousands of entries (every full batch before the trailer, the damaged value among
/// them), then failed on the checksum. Now the checksum is checked before anything is
/// written.
#[test]
fn damaged_cbor_restore_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    let db = cairn::Db::open(&src, cairn::Options::default()).unwrap();
    let ks = db.keyspace("default").unwrap();
    // More entries than one restore batch (4,096).
    for i in 0..6000u32 {
        ks.insert(format!("key{i:05}"), format!("value {i:05}"))
            .unwrap();
    }
    drop(ks);
    db.close().unwrap();
    let dumped = ok(&run(&["dump", s(&src), "--format", "cbor"]));
    let at = dumped
        .windows(11)
        .rposition(|w| w == b"value 05990")
        .unwrap();
    let mut damaged = dumped.clone();
    damaged[at] ^= 0x02; // 'v' -> 't': still a valid value, only the checksum differs

    let dst = dir.path().join("dst");
    let db = cairn::Db::open(&dst, cairn::Options::default()).unwrap();
    db.keyspace("default").unwrap().insert("kept", "1").unwrap();
    db.close().unwrap();
    let want = contents(&dst);
    let out = run_in(None, &["restore", s(&dst), "--format", "cbor"], &damaged);
    assert_eq!(code(&out), 1);
    assert!(
        stderr(&out).contains("bad cbor input at record 6002")
            && stderr(&out).contains("checksum mismatch"),
        "{}",
        stderr(&out)
    );
    let got = contents(&dst);
    assert!(got == want, "{} entries after a failed restore", got.len());
    let out = run_in(None, &["restore", s(&dst), "--format", "cbor"], &dumped);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(contents(&dst).len(), 6001);
}

/// Regression: CBOR errors printed ciborium's Rust values (`not Simple(21)`), and a dump
/// restored in the wrong format got no hint. Errors now say what was expected and found,
/// and point to the other `--format`.
#[test]
fn restore_errors_speak_plainly_and_name_the_right_format() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    sample_store(&src);
    let dst = dir.path().join("dst");

    let cbor = ok(&run(&["dump", s(&src), "--format", "cbor"]));
    let out = run_in(None, &["restore", s(&dst)], &cbor);
    assert_eq!(code(&out), 1);
    let err = stderr(&out);
    assert!(err.contains("bad jsonl input at line 1"), "{err}");
    assert!(err.contains("--format cbor"), "{err}");

    let jsonl = ok(&run(&["dump", s(&src)]));
    let out = run_in(None, &["restore", s(&dst), "--format", "cbor"], &jsonl);
    assert_eq!(code(&out), 1);
    let err = stderr(&out);
    assert!(err.contains("bad cbor input at record 1"), "{err}");
    assert!(err.contains("--format jsonl"), "{err}");

    // The header of a real dump, then an entry whose key is the boolean true.
    let mut bad = cbor[..28].to_vec();
    bad.extend_from_slice(&[0xa1, 0x63, b'k', b'e', b'y', 0xf5]);
    let out = run_in(None, &["restore", s(&dst), "--format", "cbor"], &bad);
    assert_eq!(code(&out), 1);
    let err = stderr(&out);
    assert!(
        err.contains("record 2 (byte 28): \"key\": expected a byte string, found the boolean true"),
        "{err}"
    );
    assert!(!err.contains("Simple("), "{err}");
    assert!(!dst.exists());
}
