//! `cairn sparkey` against the reference vectors: `info` reproduces the real `sparkey info`
//! output byte for byte, `dump` / `dump --log` reproduce `.expected` / `.log.expected`,
//! `get` finds every live value and misses deleted and absent keys, `verify` accepts every
//! pair.

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
fn info_is_byte_equal_to_every_info_vector() {
    let dir = vectors();
    for case in cases() {
        let expected = std::fs::read(dir.join(format!("{case}.info"))).unwrap();
        let spl = format!("{case}.spl");
        let spi = format!("{case}.spi");
        let out = run_in(Some(&dir), &["sparkey", "info", &spl, &spi], b"");
        assert_eq!(code(&out), 0, "{case}: {}", stderr(&out));
        assert_eq!(
            stdout(&out),
            String::from_utf8(expected).unwrap(),
            "info output of {case} differs"
        );
        assert!(
            out.stderr.is_empty(),
            "{case}: unexpected stderr {}",
            stderr(&out)
        );
    }
}

#[test]
fn info_of_many_files_is_the_concatenation() {
    let dir = vectors();
    let mut args = vec!["sparkey".to_string(), "info".to_string()];
    let mut expected = Vec::new();
    for case in cases() {
        args.push(format!("{case}.spl"));
        args.push(format!("{case}.spi"));
        expected.extend(std::fs::read(dir.join(format!("{case}.info"))).unwrap());
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = run_in(Some(&dir), &args, b"");
    assert_eq!(ok(&out), expected);
}

#[test]
fn empty_index_prints_minus_nan_average() {
    let out = run_in(Some(&vectors()), &["sparkey", "info", "empty.spi"], b"");
    let text = String::from_utf8(ok(&out)).unwrap();
    assert!(text.contains("Average displacement: -nan\n"), "{text}");
}

#[test]
fn dump_is_byte_equal_to_every_expected_vector() {
    let dir = vectors();
    for case in cases() {
        let expected = std::fs::read(dir.join(format!("{case}.expected"))).unwrap();
        let index = dir.join(format!("{case}.spi"));
        let out = run(&["sparkey", "dump", s(&index)]);
        assert!(
            ok(&out) == expected,
            "dump of {case} differs from {case}.expected"
        );
    }
}

#[test]
fn dump_log_is_byte_equal_to_every_log_expected_vector() {
    let dir = vectors();
    for case in cases() {
        let expected = std::fs::read(dir.join(format!("{case}.log.expected"))).unwrap();
        let log = dir.join(format!("{case}.spl"));
        let out = run(&["sparkey", "dump", "--log", s(&log)]);
        assert!(
            ok(&out) == expected,
            "dump --log of {case} differs from {case}.log.expected"
        );
    }
}

/// Looks `key` up with `get --hex`.
fn get_hex(index: &str, key: &[u8]) -> std::process::Output {
    run(&["sparkey", "get", "--hex", index, &hex(key)])
}

#[test]
fn get_finds_live_values_in_every_vector() {
    let dir = vectors();
    let mut checked = 0;
    for case in cases() {
        let index = dir.join(format!("{case}.spi"));
        let pairs = parse_pairs(&std::fs::read(dir.join(format!("{case}.expected"))).unwrap());
        // Every entry of the small cases, about 25 spread over the big ones.
        let step = (pairs.len() / 25).max(1);
        for (key, value) in pairs.iter().step_by(step) {
            let out = get_hex(s(&index), key);
            assert_eq!(
                code(&out),
                0,
                "{case}: key {} not found: {}",
                hex(key),
                stderr(&out)
            );
            assert!(
                out.stdout == *value,
                "{case}: wrong value for key {}",
                hex(key)
            );
            checked += 1;
        }
    }
    assert!(checked > 150, "only {checked} lookups");
}

#[test]
fn get_without_hex_takes_the_key_bytes_as_given() {
    let index = vectors().join("basic.spi");
    let pairs = parse_pairs(&std::fs::read(vectors().join("basic.expected")).unwrap());
    for (key, value) in &pairs {
        let key = String::from_utf8(key.clone()).unwrap();
        let out = run(&["sparkey", "get", s(&index), &key]);
        assert_eq!(ok(&out), *value, "key {key}");
    }
}

#[test]
fn get_misses_deleted_and_absent_keys_with_exit_2() {
    let dir = vectors();
    for case in [
        "deletes",
        "hash64_small",
        "multi_session",
        "snappy_bs16",
        "zstd_bs512",
    ] {
        let index = dir.join(format!("{case}.spi"));
        let live: BTreeSet<Vec<u8>> =
            parse_pairs(&std::fs::read(dir.join(format!("{case}.expected"))).unwrap())
                .into_iter()
                .map(|(k, _)| k)
                .collect();
        let log =
            String::from_utf8(std::fs::read(dir.join(format!("{case}.log.expected"))).unwrap())
                .unwrap();
        let deleted: Vec<Vec<u8>> = log
            .lines()
            .filter_map(|l| l.strip_prefix("DELETE\t"))
            .map(unhex)
            .filter(|k| !live.contains(k))
            .collect();
        assert!(!deleted.is_empty(), "{case} has no deleted keys");
        for key in deleted
            .iter()
            .chain([b"no such key, surely".to_vec()].iter())
        {
            let out = get_hex(s(&index), key);
            assert_eq!(code(&out), 2, "{case}: key {} should be absent", hex(key));
            assert!(out.stdout.is_empty() && out.stderr.is_empty());
        }
    }
}

#[test]
fn get_empty_key_and_binary_keys() {
    let index = vectors().join("binary_edge.spi");
    let pairs = parse_pairs(&std::fs::read(vectors().join("binary_edge.expected")).unwrap());
    assert!(
        pairs.iter().any(|(k, _)| k.is_empty()),
        "vector lost its empty key"
    );
    for (key, value) in pairs.iter().filter(|(k, _)| k.is_empty() || k.contains(&0)) {
        let out = get_hex(s(&index), key);
        assert_eq!(ok(&out), *value, "key {}", hex(key));
    }
}

/// Slow (~40 s) only because of `addr64_hash32`: the engine's `verify` decodes the log's
/// single 1 MiB block again for every slot (no block cache), which is quadratic there.
#[test]
fn verify_accepts_every_vector() {
    let dir = vectors();
    for case in cases() {
        let index = dir.join(format!("{case}.spi"));
        let out = run(&["sparkey", "verify", s(&index)]);
        let text = String::from_utf8(ok(&out)).unwrap();
        let live = std::fs::read(dir.join(format!("{case}.expected"))).unwrap();
        let live = live.iter().filter(|&&b| b == b'\n').count();
        assert!(text.contains(": OK\n"), "{case}: {text}");
        let noun = if live == 1 { "entry" } else { "entries" };
        assert!(
            text.contains(&format!("hash iterator: {live} live {noun},")),
            "{case}: {text}"
        );
    }
}
