//! Dump → restore, export → read, import: against real stores in temporary directories.

#![allow(clippy::panic, clippy::unwrap_used, clippy::indexing_slicing)]

use std::collections::BTreeMap;
use std::path::Path;

use proptest::prelude::*;

use super::*;
use crate::attrs::EntryOptions;
use crate::hash::{self, Compression, LogOptions, LogWriter, Reader};
use crate::options::Options;

fn open(dir: &Path) -> Db {
    let options = Options {
        memtable_size: 64 << 10,
        ..Options::default()
    };
    Db::open(dir, options).unwrap()
}

type Model = BTreeMap<(String, Vec<u8>), Vec<u8>>;

fn contents(db: &Db) -> Model {
    let mut out = Model::new();
    for name in db.keyspace_names() {
        let ks = db.get_keyspace(&name).unwrap();
        for item in ks.iter() {
            let (k, v) = item.unwrap();
            out.insert((name.clone(), k), v);
        }
    }
    out
}

fn fill(db: &Db, model: &Model) {
    for ((ks, k), v) in model {
        db.keyspace(ks).unwrap().insert(k, v).unwrap();
    }
}

fn dump_to_vec(db: &Db, keyspace: Option<&str>, format: Format) -> Vec<u8> {
    let snap = db.snapshot();
    let mut out = Vec::new();
    dump(db, &snap, keyspace, format, &mut out, &mut |_| {}).unwrap();
    out
}

fn restore_from(
    db: &Db,
    bytes: &[u8],
    format: Format,
    options: &RestoreOptions,
) -> Result<Progress> {
    restore(db, bytes, format, options, &mut |_| {})
}

#[test]
fn every_keyspace_round_trips_in_both_formats() {
    let mut model = Model::new();
    for i in 0..3000u32 {
        let ks = ["default", "users", "bin"][(i % 3) as usize];
        let key = if ks == "bin" {
            vec![0xff, (i >> 8) as u8, i as u8, 0]
        } else {
            format!("key{i:05}").into_bytes()
        };
        model.insert((ks.to_string(), key), format!("value {i} ✓").into_bytes());
    }
    let src_dir = tempfile::tempdir().unwrap();
    let src = open(src_dir.path());
    fill(&src, &model);
    src.flush().unwrap();
    for format in [Format::Jsonl, Format::Cbor] {
        let bytes = dump_to_vec(&src, None, format);
        let dst_dir = tempfile::tempdir().unwrap();
        let dst = open(dst_dir.path());
        let mut calls = Vec::new();
        let done = restore(
            &dst,
            &bytes[..],
            format,
            &RestoreOptions::default(),
            &mut |p| calls.push(p),
        )
        .unwrap();
        assert_eq!(done.entries, 3000);
        assert_eq!(done.bytes, bytes.len() as u64);
        assert_eq!(calls.last(), Some(&done));
        assert!(calls.len() >= 3, "progress reported {} times", calls.len());
        assert_eq!(contents(&dst), model, "{format:?}");
    }
}

#[test]
fn dump_sees_its_snapshot_only() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let ks = db.keyspace("default").unwrap();
    ks.insert("a", "1").unwrap();
    let snap = db.snapshot();
    ks.insert("b", "2").unwrap();
    ks.remove("a").unwrap();
    let mut out = Vec::new();
    dump(
        &db,
        &snap,
        Some("default"),
        Format::Jsonl,
        &mut out,
        &mut |_| {},
    )
    .unwrap();
    assert_eq!(out, b"{\"key\":\"a\",\"value\":\"1\"}\n");
}

#[test]
fn one_keyspace_dump_restores_into_another_keyspace() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    db.keyspace("users").unwrap().insert("u1", "Ada").unwrap();
    db.keyspace("default").unwrap().insert("x", "y").unwrap();
    let bytes = dump_to_vec(&db, Some("users"), Format::Cbor);
    restore_from(
        &db,
        &bytes,
        Format::Cbor,
        &RestoreOptions::default().keyspace("copy"),
    )
    .unwrap();
    assert_eq!(
        db.get_keyspace("copy").unwrap().get("u1").unwrap(),
        Some(b"Ada".to_vec())
    );
    // A dump of every keyspace routes by its keyspace fields.
    let all = dump_to_vec(&db, None, Format::Jsonl);
    let text = String::from_utf8(all.clone()).unwrap();
    assert!(text.contains("{\"keyspace\":\"users\",\"key\":\"u1\",\"value\":\"Ada\"}"));
    assert!(
        text.contains("\n{\"key\":\"x\",\"value\":\"y\"}") || text.starts_with("{\"key\":\"x\"")
    );
    let dir2 = tempfile::tempdir().unwrap();
    let db2 = open(dir2.path());
    restore_from(&db2, &all, Format::Jsonl, &RestoreOptions::default()).unwrap();
    assert_eq!(contents(&db2), contents(&db));
}

#[test]
fn dump_of_a_missing_keyspace_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let snap = db.snapshot();
    let got = dump(
        &db,
        &snap,
        Some("nope"),
        Format::Jsonl,
        Vec::new(),
        &mut |_| {},
    );
    assert!(matches!(got, Err(Error::InvalidArgument(m)) if m.contains("nope")));
}

/// Regression: a bad line at the end of a JSON-lines restore left the lines before it
/// written (one batch per line here). A restore now checks the whole input before it
/// writes anything.
#[test]
fn restore_of_a_bad_last_line_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let input = b"{\"keyspace\":\"other\",\"key\":\"z\",\"value\":\"0\"}\n{\"key\":\"a\",\"value\":\"1\"}\n{\"key\":\"b\"}\n";
    let options = RestoreOptions::default().batch(1, 1 << 20);
    match restore_from(&db, input, Format::Jsonl, &options) {
        Err(Error::BadInput {
            format,
            record,
            offset,
            detail,
        }) => {
            // Line 3 starts after lines 1 and 2 and their LFs.
            assert_eq!((format, record, offset), ("jsonl", 3, 67));
            assert!(detail.contains("missing \"value\""), "{detail}");
        }
        other => panic!("expected BadInput, got {other:?}"),
    }
    let ks = db.get_keyspace("default").unwrap();
    assert_eq!(ks.get("a").unwrap(), None);
    assert!(
        db.get_keyspace("other").is_none(),
        "{:?}",
        db.keyspace_names()
    );
    assert!(contents(&db).is_empty());
}

/// Regression: a CBOR dump with one changed byte stored thousands of entries (the
/// damaged value among them) before its trailer's checksum failed. Now the checksum is
/// checked before the first write, and nothing is written.
#[test]
fn cbor_restore_of_a_damaged_dump_writes_nothing() {
    let src_dir = tempfile::tempdir().unwrap();
    let src = open(src_dir.path());
    let mut model = Model::new();
    for i in 0..5000u32 {
        let ks = if i % 2 == 0 { "default" } else { "users" };
        model.insert(
            (ks.to_string(), format!("key{i:05}").into_bytes()),
            format!("value {i:05}").into_bytes(),
        );
    }
    fill(&src, &model);
    let bytes = dump_to_vec(&src, None, Format::Cbor);
    // Damage the last byte of one value near the end: every record still decodes, only
    // the checksum can tell.
    let at = bytes
        .windows(11)
        .rposition(|w| w == b"value 04990")
        .unwrap()
        + 10;
    let spool_dir = tempfile::tempdir().unwrap();
    let options = RestoreOptions::default()
        .batch(16, 1 << 20)
        .spool_dir(spool_dir.path());
    for (what, damaged) in [
        ("changed byte", {
            let mut b = bytes.clone();
            b[at] ^= 0x01;
            b
        }),
        ("truncated", bytes[..bytes.len() - 2].to_vec()),
        ("extra byte", [&bytes[..], &[0]].concat()),
    ] {
        let dst_dir = tempfile::tempdir().unwrap();
        let dst = open(dst_dir.path());
        let got = restore_from(&dst, &damaged, Format::Cbor, &options);
        match &got {
            Err(Error::BadInput {
                format: "cbor",
                record,
                detail,
                ..
            }) => {
                assert!(*record >= 5002, "{what}: record {record}");
                if what == "changed byte" {
                    assert!(detail.contains("checksum mismatch"), "{detail}");
                }
            }
            other => panic!("{what}: expected BadInput, got {other:?}"),
        }
        assert!(contents(&dst).is_empty(), "{what}");
        assert!(dst.get_keyspace("users").is_none(), "{what}");
        // The spool is gone.
        assert_eq!(std::fs::read_dir(spool_dir.path()).unwrap().count(), 0);
    }
    // The undamaged dump restores, and leaves no spool behind either.
    let dst_dir = tempfile::tempdir().unwrap();
    let dst = open(dst_dir.path());
    restore_from(&dst, &bytes, Format::Cbor, &options).unwrap();
    assert_eq!(contents(&dst), model);
    assert_eq!(std::fs::read_dir(spool_dir.path()).unwrap().count(), 0);
}

#[test]
fn truncated_cbor_dump_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    db.keyspace("default").unwrap().insert("k", "v").unwrap();
    let bytes = dump_to_vec(&db, None, Format::Cbor);
    let cut = &bytes[..bytes.len() - 3];
    let dir2 = tempfile::tempdir().unwrap();
    let db2 = open(dir2.path());
    let got = restore_from(&db2, cut, Format::Cbor, &RestoreOptions::default());
    assert!(
        matches!(
            &got,
            Err(Error::BadInput {
                format: "cbor",
                record: 3,
                ..
            })
        ),
        "{got:?}"
    );
}

#[test]
fn attributes_round_trip_in_both_formats() {
    let far = 4_000_000_000_000u64; // year 2096, Unix ms
    for format in [Format::Jsonl, Format::Cbor] {
        let dir = tempfile::tempdir().unwrap();
        let src = open(&dir.path().join("src"));
        let ks = src.keyspace("default").unwrap();
        ks.insert("plain", "p").unwrap();
        ks.insert_meta("tagged", "t", crate::Meta::new(7, vec![0, 255, 1]))
            .unwrap();
        let until = std::time::UNIX_EPOCH + std::time::Duration::from_millis(far);
        ks.insert_entry("expiring", "e", &EntryOptions::new().expires_at(until))
            .unwrap();
        // Already expired: not dumped (it is not visible), and it hides "gone".
        ks.insert("gone", "old").unwrap();
        ks.insert_entry(
            "gone",
            "new",
            &EntryOptions::new().expires_at(std::time::UNIX_EPOCH),
        )
        .unwrap();
        let dumped = dump_to_vec(&src, None, format);

        let dst = open(&dir.path().join("dst"));
        restore_from(&dst, &dumped, format, &RestoreOptions::default()).unwrap();
        let copy = dst.get_keyspace("default").unwrap();
        let heads: Vec<(Vec<u8>, crate::Head)> = copy
            .range_heads::<&[u8], _>(..)
            .map(|r| r.unwrap())
            .collect();
        let keys: Vec<&[u8]> = heads.iter().map(|(k, _)| k.as_slice()).collect();
        assert_eq!(
            keys,
            vec![&b"expiring"[..], b"plain", b"tagged"],
            "{format:?}"
        );
        let (_, plain) = &heads[1];
        assert_eq!(
            (plain.tag, plain.meta.as_slice(), plain.expires_at),
            (0, &[][..], None)
        );
        let (_, tagged) = &heads[2];
        assert_eq!(
            (tagged.tag, tagged.meta.as_slice()),
            (7, &[0u8, 255, 1][..])
        );
        assert_eq!(heads[0].1.expires_at, Some(far));
        assert_eq!(copy.get("tagged").unwrap(), Some(b"t".to_vec()));
        assert_eq!(copy.get("gone").unwrap(), None);
        // The copy dumps to the same bytes.
        assert_eq!(dump_to_vec(&dst, None, format), dumped, "{format:?}");
    }
}

#[test]
fn restored_entry_with_a_past_expiry_is_invisible_and_hides_the_old_value() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    db.keyspace("default").unwrap().insert("a", "old").unwrap();
    let input = b"{\"key\":\"a\",\"value\":\"1\",\"tag\":5,\"expires_at\":1}\n";
    restore_from(&db, input, Format::Jsonl, &RestoreOptions::default()).unwrap();
    let ks = db.get_keyspace("default").unwrap();
    assert_eq!(ks.get("a").unwrap(), None);
    assert_eq!(ks.head("a").unwrap(), None);
}

#[test]
fn export_writes_a_pair_the_constant_store_reads() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path().join("db").as_path());
    let ks = db.keyspace("default").unwrap();
    for i in 0..500u32 {
        ks.insert(format!("k{i}"), vec![i as u8; (i % 7) as usize])
            .unwrap();
    }
    ks.insert([0u8, 0xff], "binary").unwrap();
    for compression in [
        Compression::None,
        Compression::Snappy,
        #[cfg(feature = "zstd")]
        Compression::Zstd,
    ] {
        let log = dir.path().join("out.spl");
        let options =
            ExportOptions::default().log(LogOptions::default().compression(compression, 512));
        let snap = db.snapshot();
        let done = export(&db, "default", &snap, &log, &options, &mut |_| {}).unwrap();
        assert_eq!(done.entries, 501);
        let reader = Reader::open(dir.path().join("out.spi"), &log).unwrap();
        assert_eq!(reader.len(), 501);
        assert_eq!(reader.log().header().compression, compression);
        for item in ks.iter() {
            let (k, v) = item.unwrap();
            assert_eq!(reader.get(&k).unwrap(), Some(v));
        }
    }
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.contains(".tmp."))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn failed_export_leaves_existing_files_alone() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path().join("db").as_path());
    let log = dir.path().join("out.spl");
    std::fs::write(&log, b"old").unwrap();
    let bad =
        ExportOptions::default().log(LogOptions::default().compression(Compression::Snappy, 1));
    let snap = db.snapshot();
    assert!(export(&db, "default", &snap, &log, &bad, &mut |_| {}).is_err());
    assert_eq!(std::fs::read(&log).unwrap(), b"old");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 2); // db/ and out.spl
    let got = export(
        &db,
        "default",
        &snap,
        &dir.path().join("out.txt"),
        &ExportOptions::default(),
        &mut |_| {},
    );
    assert!(matches!(got, Err(Error::InvalidArgument(m)) if m.contains(".spl")));
}

#[test]
fn import_applies_puts_and_deletes_in_log_order() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("in.spl");
    let mut w = LogWriter::create(&log, &LogOptions::default()).unwrap();
    w.put(b"a", b"1").unwrap();
    w.put(b"b", b"2").unwrap();
    w.delete(b"a").unwrap();
    w.put(b"b", b"3").unwrap();
    w.delete(b"old").unwrap();
    w.close().unwrap();
    let db = open(dir.path().join("db").as_path());
    let ks = db.keyspace("target").unwrap();
    ks.insert("old", "x").unwrap();
    ks.insert("kept", "y").unwrap();
    let options = ImportOptions::default().keyspace("target");
    let stats = import(&db, &log, &options, &mut |_| {}).unwrap();
    assert_eq!((stats.puts, stats.deletes), (3, 2));
    let got: Vec<(Vec<u8>, Vec<u8>)> = ks.iter().map(|r| r.unwrap()).collect();
    assert_eq!(
        got,
        vec![
            (b"b".to_vec(), b"3".to_vec()),
            (b"kept".to_vec(), b"y".to_vec())
        ]
    );
}

#[test]
fn import_checks_a_given_index_before_writing() {
    let dir = tempfile::tempdir().unwrap();
    let make = |name: &str| {
        let log = dir.path().join(format!("{name}.spl"));
        let mut w = LogWriter::create(&log, &LogOptions::default()).unwrap();
        w.put(name.as_bytes(), b"v").unwrap();
        w.close().unwrap();
        hash::write_index(
            dir.path().join(format!("{name}.spi")),
            &log,
            &Default::default(),
        )
        .unwrap();
        log
    };
    let a = make("a");
    make("b");
    let db = open(dir.path().join("db").as_path());
    let options = ImportOptions::default().index(dir.path().join("b.spi"));
    let got = import(&db, &a, &options, &mut |_| {});
    assert!(
        matches!(got, Err(Error::IdentifierMismatch { .. })),
        "{got:?}"
    );
    assert_eq!(db.get_keyspace("default").unwrap().get("a").unwrap(), None);
    let options = ImportOptions::default().index(dir.path().join("a.spi"));
    import(&db, &a, &options, &mut |_| {}).unwrap();
    assert_eq!(
        db.get_keyspace("default").unwrap().get("a").unwrap(),
        Some(b"v".to_vec())
    );
}

#[test]
fn import_of_every_reference_vector_matches_its_expected_entries() {
    let vectors = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/vectors/sparkey");
    let mut cases = 0;
    for item in std::fs::read_dir(&vectors).unwrap() {
        let name = item.unwrap().file_name().into_string().unwrap();
        let Some(case) = name.strip_suffix(".expected") else {
            continue;
        };
        if case.ends_with(".log") {
            continue;
        }
        // Zstandard vectors need the `zstd` feature.
        if !cfg!(feature = "zstd") && case.starts_with("zstd") {
            continue;
        }
        cases += 1;
        let expected: Vec<(Vec<u8>, Vec<u8>)> = std::fs::read_to_string(vectors.join(&name))
            .unwrap()
            .lines()
            .map(|l| {
                let (k, v) = l.split_once('\t').unwrap();
                (unhex(k), unhex(v))
            })
            .collect();
        let dir = tempfile::tempdir().unwrap();
        let db = open(dir.path());
        let options = ImportOptions::default()
            .index(vectors.join(format!("{case}.spi")))
            .keyspace(case);
        import(
            &db,
            &vectors.join(format!("{case}.spl")),
            &options,
            &mut |_| {},
        )
        .unwrap();
        let mut want = expected;
        want.sort();
        let got: Vec<(Vec<u8>, Vec<u8>)> = db
            .get_keyspace(case)
            .unwrap()
            .iter()
            .map(|r| r.unwrap())
            .collect();
        assert_eq!(got, want, "{case}");
    }
    assert_eq!(cases, if cfg!(feature = "zstd") { 13 } else { 12 });
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

fn arb_entry() -> impl Strategy<Value = Entry> {
    (
        proptest::option::of(prop_oneof!["[a-z]{1,8}", "\\PC{1,4}"]),
        proptest::collection::vec(any::<u8>(), 0..40),
        proptest::collection::vec(any::<u8>(), 0..80),
        any::<u32>(),
        proptest::collection::vec(any::<u8>(), 0..20),
        proptest::option::of(any::<u64>()),
    )
        .prop_map(|(keyspace, key, value, tag, meta, expires_at)| Entry {
            keyspace,
            key,
            value,
            tag,
            meta,
            expires_at,
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    /// Any entries, binary or text, with or without attributes: the writer's output
    /// reads back as the same entries in both formats.
    #[test]
    fn formats_round_trip_any_entries(entries in proptest::collection::vec(arb_entry(), 0..30)) {
        for format in [Format::Jsonl, Format::Cbor] {
            let mut w = DumpWriter::new(Vec::new(), format).unwrap();
            for e in &entries {
                w.write(&e.as_ref()).unwrap();
            }
            let (bytes, total) = w.finish().unwrap();
            prop_assert_eq!(total.entries, entries.len() as u64);
            prop_assert_eq!(total.bytes, bytes.len() as u64);
            let mut r = DumpReader::new(&bytes[..], format).unwrap();
            let mut got = Vec::new();
            while let Some(e) = r.next_entry().unwrap() {
                got.push(e);
            }
            prop_assert_eq!(&got, &entries);
        }
    }

    /// Binary keys and values through a real store: dump, restore into a fresh store,
    /// same contents.
    #[test]
    fn store_round_trips_binary_pairs(
        pairs in proptest::collection::btree_map(
            proptest::collection::vec(any::<u8>(), 0..24),
            proptest::collection::vec(any::<u8>(), 0..48),
            0..40,
        ),
        cbor in any::<bool>(),
    ) {
        let format = if cbor { Format::Cbor } else { Format::Jsonl };
        let model: Model = pairs
            .into_iter()
            .map(|(k, v)| (("default".to_string(), k), v))
            .collect();
        let src_dir = tempfile::tempdir().unwrap();
        let src = open(src_dir.path());
        fill(&src, &model);
        let bytes = dump_to_vec(&src, None, format);
        let dst_dir = tempfile::tempdir().unwrap();
        let dst = open(dst_dir.path());
        restore_from(&dst, &bytes, format, &RestoreOptions::default()).unwrap();
        prop_assert_eq!(contents(&dst), model);
    }
}

#[test]
fn range_deleted_keys_are_left_out_of_dumps_and_exports() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path().join("db").as_path());
    let ks = db.keyspace("default").unwrap();
    let mut model = Model::new();
    for i in 0..2000u32 {
        let key = format!("{}/{i:05}", ["p", "q", "r"][(i % 3) as usize]);
        ks.insert(&key, format!("v{i}")).unwrap();
        model.insert(
            ("default".to_string(), key.into_bytes()),
            format!("v{i}").into_bytes(),
        );
    }
    // Part of the keys in tables, part in the memtable; the range tombstones in both.
    db.flush().unwrap();
    let before = db.snapshot();
    ks.remove_prefix("p/").unwrap();
    ks.insert("p/00003", "after").unwrap();
    db.flush().unwrap();
    ks.remove_range("r/00100".."r/01000").unwrap();
    model.retain(|(_, k), _| {
        !(k.starts_with(b"p/")
            || (k.as_slice() >= &b"r/00100"[..] && k.as_slice() < &b"r/01000"[..]))
    });
    model.insert(
        ("default".to_string(), b"p/00003".to_vec()),
        b"after".to_vec(),
    );
    assert_eq!(contents(&db), model);
    for format in [Format::Jsonl, Format::Cbor] {
        let bytes = dump_to_vec(&db, Some("default"), format);
        let dst_dir = tempfile::tempdir().unwrap();
        let dst = open(dst_dir.path());
        let done = restore_from(&dst, &bytes, format, &RestoreOptions::default()).unwrap();
        assert_eq!(done.entries, model.len() as u64);
        assert_eq!(contents(&dst), model, "{format:?}");
        // A dump at a snapshot taken before the range deletes still holds every key.
        let mut old = Vec::new();
        dump(&db, &before, Some("default"), format, &mut old, &mut |_| {}).unwrap();
        let mut reader = DumpReader::new(old.as_slice(), format).unwrap();
        let mut n = 0;
        while reader.next_entry().unwrap().is_some() {
            n += 1;
        }
        assert_eq!(n, 2000, "{format:?}");
    }
    let log = dir.path().join("out.spl");
    let snap = db.snapshot();
    let done = export(
        &db,
        "default",
        &snap,
        &log,
        &ExportOptions::default(),
        &mut |_| {},
    )
    .unwrap();
    assert_eq!(done.entries, model.len() as u64);
    let reader = Reader::open(dir.path().join("out.spi"), &log).unwrap();
    assert_eq!(reader.len() as usize, model.len());
    assert_eq!(reader.get(b"p/00000").unwrap(), None);
    assert_eq!(reader.get(b"p/00003").unwrap(), Some(b"after".to_vec()));
    // r/00998 is the last r key inside the removed range, r/01001 the first after it.
    assert_eq!(reader.get(b"r/00998").unwrap(), None);
    assert_eq!(reader.get(b"r/01001").unwrap(), Some(b"v1001".to_vec()));
    assert_eq!(reader.get(b"r/00098").unwrap(), Some(b"v98".to_vec()));
}

/// A value one byte over the tree's 32 MiB limit, as the value log holds it.
const LARGE: usize = (32 << 20) + 1;

/// Regression: `dump` wrote values over 32 MiB (from a keyspace that separates values)
/// that `restore` then refused in both formats: it recreated the keyspace without its
/// blob threshold and batched the value like any other. A dump now carries each
/// keyspace's threshold (a keyspace record), and a restore streams such values into
/// blob files.
#[test]
fn values_over_32_mib_round_trip_in_both_formats() {
    let dir = tempfile::tempdir().unwrap();
    let src = open(&dir.path().join("src"));
    let media = src
        .keyspace_with("media", crate::KeyspaceOptions::separated(4096))
        .unwrap();
    let big = vec![b'x'; LARGE];
    media
        .insert_from("big", &big[..], LARGE as u64, &EntryOptions::new())
        .unwrap();
    media.insert("small", "s").unwrap();
    media.insert("mid", vec![b'm'; 5000]).unwrap();
    src.keyspace("default").unwrap().insert("k", "v").unwrap();
    let want = contents(&src);
    for format in [Format::Jsonl, Format::Cbor] {
        let bytes = dump_to_vec(&src, None, format);
        let mut reader = DumpReader::new(&bytes[..], format).unwrap();
        while reader.next_entry().unwrap().is_some() {}
        assert_eq!(
            reader.keyspace_options(Some("media")),
            Some(crate::KeyspaceOptions::separated(4096)),
            "{format:?}"
        );
        assert_eq!(reader.keyspace_options(None), None);

        let dst_dir = tempfile::tempdir().unwrap();
        let dst = open(dst_dir.path());
        let done = restore_from(&dst, &bytes, format, &RestoreOptions::default()).unwrap();
        assert_eq!(done.entries, 4, "{format:?}");
        assert_eq!(contents(&dst), want, "{format:?}");
        // The keyspace separates values as the dumped one did.
        let copy = dst.get_keyspace("media").unwrap();
        assert!(copy.head("mid").unwrap().unwrap().separated, "{format:?}");
        assert!(
            !copy.head("small").unwrap().unwrap().separated,
            "{format:?}"
        );
        // And dumps to the same bytes.
        assert_eq!(dump_to_vec(&dst, None, format), bytes, "{format:?}");
    }
}

/// A dump written before keyspace records existed holds a large value but no threshold:
/// a restore into a new keyspace creates it separating values (at the recommended
/// threshold); into an existing keyspace that keeps values in the tree it is refused
/// before anything is written.
#[test]
fn large_values_of_old_dumps_restore_into_new_keyspaces_only() {
    let big = vec![0x80u8; LARGE];
    let mut w = DumpWriter::new(Vec::new(), Format::Cbor).unwrap();
    w.write(&EntryRef::pair(b"a", b"1")).unwrap();
    w.write(&EntryRef::pair(b"big", &big)).unwrap();
    w.write(&EntryRef::pair(b"z", b"2")).unwrap();
    let (bytes, _) = w.finish().unwrap();

    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    db.keyspace("inline").unwrap().insert("old", "x").unwrap();
    let got = restore_from(
        &db,
        &bytes,
        Format::Cbor,
        &RestoreOptions::default().keyspace("inline").batch(1, 1),
    );
    assert!(
        matches!(&got, Err(Error::InvalidArgument(m)) if m.contains("nothing was written")),
        "{got:?}"
    );
    let inline = db.get_keyspace("inline").unwrap();
    assert_eq!(inline.get("a").unwrap(), None);
    assert_eq!(inline.get("old").unwrap(), Some(b"x".to_vec()));

    let options = RestoreOptions::default().keyspace("fresh");
    restore_from(&db, &bytes, Format::Cbor, &options).unwrap();
    let fresh = db.get_keyspace("fresh").unwrap();
    assert_eq!(fresh.get("big").unwrap(), Some(big));
    assert_eq!(fresh.get("z").unwrap(), Some(b"2".to_vec()));
    let head = fresh.head("big").unwrap().unwrap();
    assert!(head.separated && head.value_len == LARGE as u64);
}

/// A dump of one keyspace carries its blob threshold without a keyspace name, so the
/// restore's target keyspace is created separating values; an existing target keeps its
/// own options.
#[test]
fn one_keyspace_dump_carries_its_blob_threshold_to_the_target() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let media = db
        .keyspace_with("media", crate::KeyspaceOptions::separated(16))
        .unwrap();
    media.insert("clip", vec![7u8; 100]).unwrap();
    for format in [Format::Jsonl, Format::Cbor] {
        let bytes = dump_to_vec(&db, Some("media"), format);
        let mut reader = DumpReader::new(&bytes[..], format).unwrap();
        assert!(reader.next_entry().unwrap().is_some());
        assert_eq!(
            reader.keyspace_options(None),
            Some(crate::KeyspaceOptions::separated(16))
        );
        let copy = format!("copy-{format:?}");
        restore_from(
            &db,
            &bytes,
            format,
            &RestoreOptions::default().keyspace(&copy),
        )
        .unwrap();
        let head = db
            .get_keyspace(&copy)
            .unwrap()
            .head("clip")
            .unwrap()
            .unwrap();
        assert!(head.separated, "{format:?}");
        // Into the existing `default` (values kept in the tree), it stays in the tree.
        restore_from(&db, &bytes, format, &RestoreOptions::default()).unwrap();
        let head = db
            .get_keyspace("default")
            .unwrap()
            .head("clip")
            .unwrap()
            .unwrap();
        assert!(!head.separated, "{format:?}");
    }
}
