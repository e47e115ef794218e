//! Error paths: `info` reports each bad file with the reference's texts and exit 1;
//! `verify` exits 3 on a damaged slot or log and 1 on a missing file; damaged files make
//! the other commands exit 3; a closed output pipe ends `dump` quietly instead of a panic;
//! usage errors exit 1.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod common;

use std::io::Read;
use std::process::{Command, Stdio};

use common::*;

#[test]
fn info_reports_bad_files_with_reference_texts() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    copy_case("basic", d);
    std::fs::write(d.join("empty"), b"").unwrap();
    std::fs::write(d.join("junk"), b"this is not a sparkey file at all").unwrap();
    let spl = std::fs::read(d.join("basic.spl")).unwrap();
    std::fs::write(d.join("short.spl"), &spl[..50]).unwrap();
    let mut v2 = spl.clone();
    v2[4] = 2;
    std::fs::write(d.join("v2.spl"), &v2).unwrap();
    let mut minor = spl.clone();
    minor[8] = 1;
    std::fs::write(d.join("minor.spl"), &minor).unwrap();
    std::fs::write(d.join("cut.spl"), &spl[..spl.len() - 1]).unwrap();
    let spi = std::fs::read(d.join("basic.spi")).unwrap();
    std::fs::write(d.join("cut.spi"), &spi[..spi.len() - 1]).unwrap();
    let mut bad_hash = spi.clone();
    bad_hash[72] = 5; // hash_size
    std::fs::write(d.join("hashsize.spi"), &bad_hash).unwrap();
    std::fs::create_dir(d.join("adir")).unwrap();

    let expected_errors = [
        ("missing.spl", "File not found"),
        ("empty", "Encountered unexpected end of file"),
        ("junk", "Not a sparkey file."),
        ("short.spl", "Encountered unexpected end of file"),
        ("v2.spl", "Wrong major version of log file"),
        ("minor.spl", "Unsupported minor version of log file"),
        (
            "cut.spl",
            "Corrupt log file - smaller than the header indicates",
        ),
        (
            "cut.spi",
            "Corrupt hash file - smaller than the header indicates",
        ),
        ("hashsize.spi", "Hash header is corrupt"),
        ("adir", "File is a directory"),
    ];
    for (name, message) in expected_errors {
        let out = run_in(Some(d), &["sparkey", "info", name], b"");
        assert_eq!(code(&out), 1, "{name}");
        assert_eq!(stderr(&out), format!("{name}: {message}\n"));
        assert!(out.stdout.is_empty(), "{name}");
    }

    // Good files are still described when others fail; the status is 1.
    let out = run_in(
        Some(d),
        &["sparkey", "info", "missing.spl", "basic.spl", "junk"],
        b"",
    );
    assert_eq!(code(&out), 1);
    assert_eq!(
        stderr(&out),
        "missing.spl: File not found\njunk: Not a sparkey file.\n"
    );
    assert!(
        stdout(&out).starts_with("Filename: basic.spl\nLog file version 1.0\n"),
        "{}",
        stdout(&out)
    );

    let out = run_in(Some(d), &["sparkey", "info"], b"");
    assert_eq!(code(&out), 1, "info without files is a usage error");
}

#[test]
fn verify_exits_3_on_a_corrupted_slot() {
    let dir = tempfile::tempdir().unwrap();
    copy_case("basic", dir.path());
    let index = dir.path().join("basic.spi");
    let mut bytes = std::fs::read(&index).unwrap();
    // Slots are 4-byte hash + 4-byte address from offset 112; damage an occupied slot's hash.
    let slot = (0..7)
        .map(|i| 112 + i * 8)
        .find(|&at| bytes[at + 4..at + 8] != [0, 0, 0, 0])
        .unwrap();
    bytes[slot] ^= 0x5a;
    std::fs::write(&index, &bytes).unwrap();
    let out = run(&["sparkey", "verify", s(&index)]);
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.starts_with("corrupt index file ") && err.contains(&format!("at byte {slot}")),
        "{err}"
    );
    assert!(out.stdout.is_empty());
}

#[test]
fn verify_exits_3_on_a_corrupted_log() {
    let dir = tempfile::tempdir().unwrap();
    copy_case("basic", dir.path());
    let log = dir.path().join("basic.spl");
    let mut bytes = std::fs::read(&log).unwrap();
    // The first entry starts at 84 with its A and B VLQs; change the first key byte.
    bytes[86] ^= 0x20;
    std::fs::write(&log, &bytes).unwrap();
    let index = dir.path().join("basic.spi");
    let out = run(&["sparkey", "verify", s(&index)]);
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    assert!(stderr(&out).starts_with("corrupt "), "{}", stderr(&out));

    // A log whose header disagrees with its entries.
    copy_case("basic", dir.path());
    let mut bytes = std::fs::read(&log).unwrap();
    bytes[48] += 1; // max_value_len
    std::fs::write(&log, &bytes).unwrap();
    let out = run(&["sparkey", "verify", s(&index)]);
    assert_eq!(code(&out), 3);
    assert!(stderr(&out).contains("max_value_len"), "{}", stderr(&out));
}

#[test]
fn verify_and_get_exit_1_on_missing_files_and_3_on_foreign_ones() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nothing.spi");
    for args in [
        vec!["sparkey", "verify", s(&missing)],
        vec!["sparkey", "get", s(&missing), "k"],
        vec!["sparkey", "dump", s(&missing)],
    ] {
        let out = run(&args);
        assert_eq!(code(&out), 1, "{args:?}");
        assert!(
            stderr(&out).contains("nothing.spi") && stderr(&out).contains("No such file"),
            "{}",
            stderr(&out)
        );
    }
    let junk = dir.path().join("junk.spi");
    std::fs::write(&junk, vec![0x42; 200]).unwrap();
    std::fs::copy(vectors().join("basic.spl"), dir.path().join("junk.spl")).unwrap();
    let out = run(&["sparkey", "get", s(&junk), "k"]);
    assert_eq!(code(&out), 3);
    assert!(
        stderr(&out).contains("wrong magic number"),
        "{}",
        stderr(&out)
    );
    // An index of another log: the identifiers differ.
    std::fs::copy(vectors().join("single_put.spi"), &junk).unwrap();
    let out = run(&["sparkey", "verify", s(&junk)]);
    assert_eq!(code(&out), 3);
    assert!(
        stderr(&out).contains("does not belong to log file"),
        "{}",
        stderr(&out)
    );
    let out = run(&["sparkey", "verify", s(&dir.path().join("x.spl"))]);
    assert_eq!(code(&out), 1);
    assert_eq!(stderr(&out), "index filename must end with .spi\n");
}

#[test]
fn closed_output_pipe_does_not_panic() {
    let index = vectors().join("hash32_10k.spi");
    let mut child = Command::new(env!("CARGO_BIN_EXE_cairn"))
        .args(["sparkey", "dump", s(&index)])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut first = [0u8; 64];
    stdout.read_exact(&mut first).unwrap();
    drop(stdout); // the dump is ~375 KB, far more than a pipe holds
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    assert!(!stderr(&out).contains("panicked"), "{}", stderr(&out));
    let expected = std::fs::read(vectors().join("hash32_10k.expected")).unwrap();
    assert_eq!(
        &first[..],
        &expected[..64],
        "dump output starts like the vector"
    );
}

#[test]
fn usage_errors_exit_1_and_help_exits_0() {
    // A bare `cairn` asks for nothing: the help goes to stderr and it is a usage error.
    let out = run(&[]);
    assert_eq!(code(&out), 1);
    assert!(stderr(&out).contains("Usage: cairn"), "{}", stderr(&out));
    let out = run(&["sparkey", "frobnicate"]);
    assert_eq!(code(&out), 1);
    assert!(stderr(&out).contains("frobnicate"));
    let out = run(&["sparkey", "get", "x.spi"]);
    assert_eq!(code(&out), 1, "missing key argument");
    let out = run(&["sparkey", "rewrite", "--help"]);
    assert_eq!(code(&out), 0);
    assert!(
        stdout(&out).contains("Deviations from the reference"),
        "{}",
        stdout(&out)
    );
}
