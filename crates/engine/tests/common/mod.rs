//! Helpers shared by the integration tests: the Sparkey reference vectors.
#![allow(
    dead_code,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

use std::path::PathBuf;

/// Directory of the reference vectors (`../shared/vectors/sparkey` from the repository root).
pub fn vectors_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/vectors/sparkey")
}

/// Every case name.
pub const CASES: [&str; 13] = [
    "empty",
    "single_put",
    "basic",
    "overwrite",
    "deletes",
    "binary_edge",
    "hash32_10k",
    "hash64_small",
    "multi_session",
    "snappy_bs16",
    "snappy_bs65536",
    "zstd_bs512",
    "addr64_hash32",
];

/// Whether this build reads vector `case`: the Zstandard ones need the `zstd` feature.
pub fn readable(case: &str) -> bool {
    cfg!(feature = "zstd") || !case.starts_with("zstd")
}

pub fn path(case: &str, ext: &str) -> PathBuf {
    vectors_dir().join(format!("{case}.{ext}"))
}

pub fn unhex(s: &str) -> Vec<u8> {
    assert!(s.len().is_multiple_of(2), "odd hex {s}");
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

pub fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    Put(Vec<u8>, Vec<u8>),
    Delete(Vec<u8>),
}

/// The `.log.expected` entries.
pub fn log_expected(case: &str) -> Vec<Op> {
    let text = std::fs::read_to_string(path(case, "log.expected")).unwrap();
    text.lines()
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            match f[0] {
                "PUT" => Op::Put(unhex(f[1]), unhex(f[2])),
                "DELETE" => Op::Delete(unhex(f[1])),
                other => panic!("bad line {other}"),
            }
        })
        .collect()
}

/// The `.expected` live entries, in hash-iterator order.
pub fn expected(case: &str) -> Vec<(Vec<u8>, Vec<u8>)> {
    let text = std::fs::read_to_string(path(case, "expected")).unwrap();
    text.lines()
        .map(|l| {
            let (k, v) = l.split_once('\t').unwrap();
            (unhex(k), unhex(v))
        })
        .collect()
}

/// Parsed `.params`.
#[derive(Debug, Clone)]
pub struct Params {
    pub compression: String,
    pub block_size: u32,
    /// Entries per writer session.
    pub sessions: Vec<usize>,
    /// `hash_size` argument of the index build after each session.
    pub hash_args: Vec<u32>,
}

pub fn params(case: &str) -> Params {
    let text = std::fs::read_to_string(path(case, "params")).unwrap();
    let mut p = Params {
        compression: String::new(),
        block_size: 0,
        sessions: vec![],
        hash_args: vec![],
    };
    for line in text.lines() {
        if let Some(v) = line.strip_prefix("compression: ") {
            p.compression = v.to_string();
        } else if let Some(v) = line.strip_prefix("compression_block_size: ") {
            p.block_size = v.parse().unwrap();
        } else if line.starts_with("session ") {
            let rest = line.split("; ").nth(1).unwrap();
            let nums: Vec<usize> = rest
                .split(", ")
                .map(|s| s.split(' ').next().unwrap().parse().unwrap())
                .collect();
            p.sessions.push(nums.iter().sum());
        } else if line.starts_with("index written") {
            let arg = line.split("hash_size argument ").nth(1).unwrap();
            p.hash_args
                .push(arg.split(',').next().unwrap().parse().unwrap());
        }
    }
    p
}

/// `key: value` pairs of the `.info` output, per file block.
pub fn info(case: &str) -> Vec<Vec<(String, String)>> {
    let text = std::fs::read_to_string(path(case, "info")).unwrap();
    text.split("\n\n")
        .filter(|b| !b.trim().is_empty())
        .map(|block| {
            let mut out = vec![];
            for line in block.lines() {
                for part in line.split(", ") {
                    if let Some((k, v)) = part.split_once(": ") {
                        out.push((k.to_string(), v.to_string()));
                    }
                }
            }
            out
        })
        .collect()
}
