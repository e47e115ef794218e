//! `rewrite` copies only the live entries. The reference `sparkey rewrite` copies every log
//! entry with the plain log iterator and writes DELETEs as PUTs of empty values, so the
//! deleted keys of vector `deletes` come back; it also fails when switching an uncompressed
//! input to snappy without `-b`. Both are fixed here.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod common;

use std::collections::BTreeSet;

use common::*;

#[test]
fn rewrite_of_deletes_keeps_deleted_keys_deleted() {
    let dir = tempfile::tempdir().unwrap();
    let input = vectors().join("deletes.spi");
    let output = dir.path().join("out.spi");
    ok(&run(&["sparkey", "rewrite", s(&input), s(&output)]));

    let expected: BTreeSet<_> =
        parse_pairs(&std::fs::read(vectors().join("deletes.expected")).unwrap())
            .into_iter()
            .collect();
    let got: Vec<_> = parse_pairs(&ok(&run(&["sparkey", "dump", s(&output)])));
    assert_eq!(got.len(), expected.len(), "duplicate or missing entries");
    assert_eq!(got.into_iter().collect::<BTreeSet<_>>(), expected);

    // The new log holds exactly the live entries, as PUTs, and nothing else.
    let log = dir.path().join("out.spl");
    let log_dump = String::from_utf8(ok(&run(&["sparkey", "dump", "--log", s(&log)]))).unwrap();
    assert_eq!(log_dump.lines().count(), expected.len());
    assert!(
        log_dump.lines().all(|l| l.starts_with("PUT\t")),
        "{log_dump}"
    );

    // Keys deleted in the input stay absent: "key3", "key7" and the never-put "missing".
    for key in ["key3", "key7", "missing"] {
        let out = run(&["sparkey", "get", s(&output), key]);
        assert_eq!(code(&out), 2, "{key} came back");
    }
    assert_eq!(
        ok(&run(&["sparkey", "get", s(&output), "key5"])),
        b"resurrected"
    );

    let info = String::from_utf8(ok(&run(&["sparkey", "info", s(&output)]))).unwrap();
    assert!(
        info.contains("Data size: ") && info.contains(", Garbage size: 0\n"),
        "{info}"
    );
    ok(&run(&["sparkey", "verify", s(&output)]));
    // No temporary files are left beside the output.
    let names: BTreeSet<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(
        names,
        BTreeSet::from(["out.spi".to_string(), "out.spl".to_string()])
    );
}

#[test]
fn rewrite_keeps_or_changes_compression() {
    let dir = tempfile::tempdir().unwrap();
    let info =
        |log: &std::path::Path| String::from_utf8(ok(&run(&["sparkey", "info", s(log)]))).unwrap();

    // Default: the input's compression and block size.
    let z = dir.path().join("z.spi");
    ok(&run(&[
        "sparkey",
        "rewrite",
        s(&vectors().join("zstd_bs512.spi")),
        s(&z),
    ]));
    assert!(info(&dir.path().join("z.spl")).contains("Compression: Zstd, block size: 512\n"));
    let expected: BTreeSet<_> =
        parse_pairs(&std::fs::read(vectors().join("zstd_bs512.expected")).unwrap())
            .into_iter()
            .collect();
    let got: BTreeSet<_> = parse_pairs(&ok(&run(&["sparkey", "dump", s(&z)])))
        .into_iter()
        .collect();
    assert_eq!(got, expected);

    // Uncompressed input to snappy without -b: 4096 (the reference fails here).
    let sn = dir.path().join("sn.spi");
    ok(&run(&[
        "sparkey",
        "rewrite",
        "-c",
        "snappy",
        s(&vectors().join("hash32_10k.spi")),
        s(&sn),
    ]));
    assert!(info(&dir.path().join("sn.spl")).contains("Compression: Snappy, block size: 4096\n"));
    let expected = std::fs::read(vectors().join("hash32_10k.expected")).unwrap();
    assert!(
        ok(&run(&["sparkey", "dump", s(&sn)])) == expected,
        "hash32_10k content changed"
    );

    // Compressed input to none, and an explicit block size.
    let plain = dir.path().join("plain.spi");
    ok(&run(&[
        "sparkey",
        "rewrite",
        "-c",
        "none",
        s(&vectors().join("snappy_bs16.spi")),
        s(&plain),
    ]));
    assert!(
        info(&dir.path().join("plain.spl")).contains("Compression: Uncompressed, block size: 0\n")
    );
    let b = dir.path().join("b.spi");
    ok(&run(&[
        "sparkey",
        "rewrite",
        "-b",
        "100",
        s(&vectors().join("snappy_bs16.spi")),
        s(&b),
    ]));
    assert!(info(&dir.path().join("b.spl")).contains("Compression: Snappy, block size: 100\n"));
}

#[test]
fn rewrite_argument_errors() {
    let dir = tempfile::tempdir().unwrap();
    copy_case("basic", dir.path());
    let input = dir.path().join("basic.spi");
    let cases: [(Vec<String>, &str); 4] = [
        (
            vec![s(&input).into(), s(&input).into()],
            "input and output must be different.\n",
        ),
        (
            vec![s(&input).into(), format!("{}/./basic.spi", s(dir.path()))],
            "input and output must be different.\n",
        ),
        (
            vec![s(&dir.path().join("basic.spl")).into(), "o.spi".into()],
            "input filename must end with .spi but was '",
        ),
        (
            vec![s(&input).into(), "o.spl".into()],
            "output filename must end with .spi but was 'o.spl'",
        ),
    ];
    for (args, message) in cases {
        let mut full = vec!["sparkey", "rewrite"];
        full.extend(args.iter().map(String::as_str));
        let out = run_in(Some(dir.path()), &full, b"");
        assert_eq!(code(&out), 1, "{args:?}");
        assert!(
            stderr(&out).starts_with(message),
            "{args:?}: {}",
            stderr(&out)
        );
    }
    // The input is intact.
    assert_eq!(
        std::fs::read(&input).unwrap(),
        std::fs::read(vectors().join("basic.spi")).unwrap()
    );
}
