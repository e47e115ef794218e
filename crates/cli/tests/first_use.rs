//! Papercuts a new user hit on a fresh machine, each fixed and pinned here:
//!
//! 1. `--hex` and `--meta` said "must be an even number of hex digits" for input that held
//!    a non-hex character; the error now names the character and its position, or says the
//!    digits are odd in number.
//! 2. `cairn verify` of an empty directory (or one that is not a store) exited 3, as if a
//!    store were damaged, while `cairn get` said "no store here" with exit 1; `verify` now
//!    says the same, and keeps exit 3 for store files without `CURRENT`.
//! 3. `cairn put DIR k v` into a directory of unrelated files created a store among them;
//!    every command that creates a store (`put`, `incr`, `restore`, `import`, `load`) now
//!    refuses such a directory with exit 1, and still creates in a missing or empty one.
//! 4. A bare `cairn` printed the help and exited 0; it now exits 2 (`--help` still 0).
//! 5. Counts disagreed with their nouns ("1 tables", "1 files checked, 1 problems").

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod common;

use std::collections::BTreeSet;
use std::path::Path;

use common::*;

/// The names in `dir`, sorted.
fn names(dir: &Path) -> BTreeSet<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect()
}

/// Asserts exit 1 with `needles` in stderr (and nothing on stdout).
fn fails_with(out: &std::process::Output, needles: &[&str]) {
    assert_eq!(code(out), 1, "stderr: {}", stderr(out));
    for needle in needles {
        assert!(
            stderr(out).contains(needle),
            "missing {needle:?} in {}",
            stderr(out)
        );
    }
    assert!(out.stdout.is_empty(), "stdout: {}", stdout(out));
}

#[test]
fn hex_errors_say_what_is_wrong() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s");
    let st = s(&store);
    fails_with(
        &run(&["put", st, "--hex", "abg0", "00"]),
        &["--hex: the key has a non-hex character 'g' at position 3"],
    );
    fails_with(
        &run(&["put", st, "--hex", "00", "0x41"]),
        &["--hex: the value has a non-hex character 'x' at position 2"],
    );
    fails_with(
        &run(&["put", st, "--hex", "abc", "00"]),
        &["--hex: the key has an odd number of hex digits (3)"],
    );
    fails_with(
        &run(&["put", st, "k", "v", "--meta", "0aXf"]),
        &["--meta", "non-hex character 'X' at position 3"],
    );
    fails_with(
        &run(&["put", st, "k", "v", "--meta", "0af"]),
        &["--meta", "odd number of hex digits"],
    );
    assert!(!store.exists(), "a refused put created nothing");

    ok(&run(&["put", st, "k", "v"]));
    fails_with(
        &run(&["get", st, "--hex", "6b 6b"]),
        &["--hex: the key has a non-hex character ' ' at position 3"],
    );
    fails_with(
        &run(&["scan", st, "--hex", "--prefix", "zz"]),
        &["--hex: the prefix has a non-hex character 'z' at position 1"],
    );
    fails_with(
        &run(&["sparkey", "get", "--hex", "x.spi", "12é4"]),
        &["--hex: the key has a non-hex character 'é' at position 3"],
    );
}

#[test]
fn verify_without_a_store_says_so_with_exit_1() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let foreign = dir.path().join("foreign");
    std::fs::create_dir(&foreign).unwrap();
    std::fs::write(foreign.join("notes.txt"), b"not a store").unwrap();
    let file = dir.path().join("file");
    std::fs::write(&file, b"x").unwrap();
    for path in [&empty, &foreign, &file, &dir.path().join("missing")] {
        let verify = run(&["verify", s(path)]);
        fails_with(&verify, &["no store here (no CURRENT file)"]);
        // The same words as the read commands.
        let get = run(&["get", s(path), "k"]);
        assert_eq!(code(&get), 1);
        assert_eq!(stderr(&verify), stderr(&get), "{path:?}");
    }
    assert_eq!(names(&empty), BTreeSet::new(), "verify wrote nothing");

    // Store files without CURRENT are a damaged store: still exit 3.
    let store = dir.path().join("s");
    ok(&run(&["put", s(&store), "k", "v"]));
    std::fs::remove_file(store.join("CURRENT")).unwrap();
    let out = run(&["verify", s(&store)]);
    assert_eq!(code(&out), 3, "stderr: {}", stderr(&out));
    assert!(stdout(&out).contains("DAMAGED"), "{}", stdout(&out));
}

#[test]
fn commands_that_create_refuse_a_directory_of_other_files() {
    let dir = tempfile::tempdir().unwrap();
    let foreign = dir.path().join("foreign");
    std::fs::create_dir(&foreign).unwrap();
    std::fs::write(foreign.join("notes.txt"), b"mine").unwrap();
    std::fs::write(foreign.join("photo.jpg"), b"mine too").unwrap();
    let before = names(&foreign);
    let f = s(&foreign);
    let log = vectors().join("basic.spl");
    let refusals = [
        run(&["put", f, "k", "v"]),
        run(&["incr", f, "n", "1"]),
        run_in(None, &["restore", f], b"{\"key\":\"k\",\"value\":\"v\"}\n"),
        run(&["import", s(&log), f]),
        run(&[
            "load",
            "--dir",
            f,
            "--duration",
            "100ms",
            "--key-count",
            "10",
        ]),
    ];
    for out in &refusals {
        assert_eq!(code(out), 1, "stderr: {}", stderr(out));
        for needle in [
            "refusing to create a store here",
            "not empty (it holds notes.txt and 1 other entry)",
            "not a Cairn store",
            "use a new or empty directory",
        ] {
            assert!(
                stderr(out).contains(needle),
                "missing {needle:?} in {}",
                stderr(out)
            );
        }
    }
    assert_eq!(names(&foreign), before, "nothing was added");

    // A missing directory, an empty one and an existing store still work.
    let missing = dir.path().join("a/b/new");
    ok(&run(&["put", s(&missing), "k", "v"]));
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    ok(&run(&["put", s(&empty), "k", "v"]));
    ok(&run(&["put", s(&empty), "k2", "v2"]));
    assert_eq!(ok(&run(&["get", s(&empty), "k"])), b"v");
    let restored = dir.path().join("restored");
    std::fs::create_dir(&restored).unwrap();
    ok(&run_in(
        None,
        &["restore", s(&restored)],
        b"{\"key\":\"k\",\"value\":\"v\"}\n",
    ));
    let imported = dir.path().join("imported");
    std::fs::create_dir(&imported).unwrap();
    ok(&run(&["import", s(&log), s(&imported)]));
}

#[test]
fn bare_cairn_exits_1_and_help_exits_0() {
    for args in [&[][..], &["sparkey"], &["bench"]] {
        let out = run(args);
        assert_eq!(code(&out), 1, "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains("Usage: cairn"), "{}", stderr(&out));
    }
    for args in [
        &["--help"][..],
        &["help"],
        &["--version"],
        &["sparkey", "--help"],
    ] {
        let out = run(args);
        assert_eq!(code(&out), 0, "{args:?}: {}", stderr(&out));
        assert!(!stdout(&out).is_empty(), "{args:?}");
    }
}

/// A count of 1 with a plural noun: `1 tables`, `1 files`, `1 problems`, ...
fn assert_no_singular_plural(text: &str) {
    let bad = regex::Regex::new(
        r"\b1 (live |random |occupied |log |acknowledged |queued )?(tables|files|problems|items|edits|entries|puts|deletes|keys|threads|lookups|slots|writes|stalls|ranges)\b",
    )
    .unwrap();
    assert!(bad.find(text).is_none(), "{:?} in\n{text}", bad.find(text));
}

#[test]
fn counts_agree_with_their_nouns() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s");
    {
        let db = cairn::Db::open(&store, cairn::Options::default()).unwrap();
        db.keyspace("default").unwrap().insert("k", "v").unwrap();
        db.flush().unwrap();
        db.close().unwrap();
    }
    let mut all = String::new();
    let info = String::from_utf8(ok(&run(&["info", s(&store)]))).unwrap();
    assert!(info.contains("default (id 0): 1 table, "), "{info}");
    assert!(info.contains("L0: 1 table, "), "{info}");
    all += &info;
    let stats = String::from_utf8(ok(&run(&["stats", s(&store)]))).unwrap();
    assert!(
        stats.contains("tables           1 table (L0 1)\n"),
        "{stats}"
    );
    all += &stats;
    let verify = String::from_utf8(ok(&run(&["verify", s(&store)]))).unwrap();
    assert!(verify.contains(" 1 item\n"), "{verify}");
    assert!(verify.ends_with(" files checked, 0 problems\n"), "{verify}");
    all += &verify;
    let backup = dir.path().join("b");
    all += &String::from_utf8(ok(&run(&["backup", s(&store), s(&backup)]))).unwrap();
    let exported = dir.path().join("one.spl");
    let said = String::from_utf8(ok(&run(&["export", s(&store), s(&exported)]))).unwrap();
    assert!(said.starts_with("exported 1 entry to "), "{said}");
    all += &said;
    let said = String::from_utf8(ok(&run_in(
        None,
        &["restore", s(&dir.path().join("r"))],
        b"{\"key\":\"k\",\"value\":\"v\"}\n",
    )))
    .unwrap();
    assert_eq!(said, "restored 1 entry\n");
    all += &said;
    let said = String::from_utf8(ok(&run(&[
        "import",
        s(&exported),
        s(&dir.path().join("i")),
    ])))
    .unwrap();
    assert!(said.starts_with("imported 1 put and 0 deletes "), "{said}");
    all += &said;
    all += &String::from_utf8(ok(&run(&["pack", s(&store), s(&dir.path().join("p"))]))).unwrap();

    // A lone table, without CURRENT: "1 file checked, 1 problem".
    let damaged = dir.path().join("d");
    std::fs::create_dir(&damaged).unwrap();
    for name in names(&store) {
        if name.ends_with(".sst") {
            std::fs::copy(store.join(&name), damaged.join(&name)).unwrap();
        }
    }
    let out = run(&["verify", s(&damaged)]);
    assert_eq!(code(&out), 3, "stderr: {}", stderr(&out));
    assert!(
        stdout(&out).ends_with("1 file checked, 1 problem\n"),
        "{}",
        stdout(&out)
    );
    all += &stdout(&out);

    // The constant store: build, verify, demo.
    let built = String::from_utf8(ok(&run_in(
        None,
        &[
            "sparkey",
            "build",
            "--format",
            "tsv",
            "-",
            s(&dir.path().join("c.spl")),
        ],
        b"k\tv\n",
    )))
    .unwrap();
    assert!(
        built.contains(": 1 entry (1 put, 0 deletes, 1 live key) "),
        "{built}"
    );
    all += &built;
    let checked = String::from_utf8(ok(&run(&[
        "sparkey",
        "verify",
        s(&dir.path().join("c.spi")),
    ])))
    .unwrap();
    assert!(checked.contains("1 occupied slot points at"), "{checked}");
    all += &checked;
    all += &String::from_utf8(ok(&run(&["demo", "--entries", "1", "--lookups", "1"]))).unwrap();

    // One thread, one key.
    let load = String::from_utf8(ok(&run(&[
        "load",
        "--threads",
        "1",
        "--key-count",
        "1",
        "--duration",
        "100ms",
    ])))
    .unwrap();
    assert!(load.contains("  1 thread for "), "{load}");
    assert!(load.contains("  1 key (uniform)"), "{load}");
    assert!(load.contains("preloaded 1 key in"), "{load}");
    all += &load;

    assert_no_singular_plural(&all);
}
