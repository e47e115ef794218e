//! Conformance with the reference Sparkey implementation, over every vector in
//! `shared/vectors/sparkey`: reading (log order, hash order, lookups, headers), rebuilding
//! every index byte for byte from its log and build history, and rewriting every log.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

mod common;

use std::collections::HashMap;

use cairn::hash::raw::{build_index, murmur3_x64_128_h1, murmur3_x86_32, IndexHeader};
use cairn::hash::{
    write_index, BuildKind, Compression, EntryKind, HashSize, IndexOptions, LogOptions, LogReader,
    LogWriter, ReadOptions, Reader, Residency,
};
use common::*;

fn index_header(case: &str) -> IndexHeader {
    let bytes = std::fs::read(path(case, "spi")).unwrap();
    IndexHeader::decode(&path(case, "spi"), &bytes, bytes.len() as u64).unwrap()
}

fn hash_size_arg(arg: u32) -> HashSize {
    match arg {
        0 => HashSize::Auto,
        4 => HashSize::Bits32,
        8 => HashSize::Bits64,
        other => panic!("hash size {other}"),
    }
}

fn compression(p: &Params) -> Compression {
    match p.compression.as_str() {
        "none" => Compression::None,
        "snappy" => Compression::Snappy,
        "zstd" => Compression::Zstd,
        other => panic!("compression {other}"),
    }
}

#[test]
fn log_iteration_reproduces_log_expected() {
    for case in CASES.into_iter().filter(|c| readable(c)) {
        let log = LogReader::open(path(case, "spl")).unwrap();
        let got: Vec<Op> = log
            .iter()
            .map(|e| {
                let e = e.unwrap();
                match e.kind {
                    EntryKind::Put => Op::Put(e.key, e.value),
                    EntryKind::Delete => Op::Delete(e.key),
                }
            })
            .collect();
        assert_eq!(got, log_expected(case), "{case}");
    }
}

#[test]
fn hash_iteration_and_lookups_reproduce_expected() {
    for case in CASES.into_iter().filter(|c| readable(c)) {
        for pin in [false, true] {
            let reader = Reader::open_with(
                path(case, "spi"),
                path(case, "spl"),
                &ReadOptions::default().pin_index(pin),
            )
            .unwrap();
            if pin {
                assert!(
                    matches!(
                        reader.residency(),
                        Residency::Locked | Residency::Prefaulted
                    ),
                    "{case}: a pinned index is resident, got {:?}",
                    reader.residency()
                );
            } else {
                assert_eq!(reader.residency(), Residency::OnDemand);
            }
            let want = expected(case);
            let got: Vec<(Vec<u8>, Vec<u8>)> = reader.iter().map(|r| r.unwrap()).collect();
            assert_eq!(got, want, "{case}: hash iterator order");
            assert_eq!(reader.len(), want.len() as u64, "{case}");
            for (k, v) in &want {
                assert_eq!(
                    reader.get(k).unwrap().as_ref(),
                    Some(v),
                    "{case}: get {}",
                    hex(k)
                );
                assert!(reader.contains(k).unwrap());
            }
            // Keys that were deleted or never written are absent.
            let live: HashMap<&[u8], &[u8]> = want
                .iter()
                .map(|(k, v)| (k.as_slice(), v.as_slice()))
                .collect();
            for op in log_expected(case) {
                let (Op::Put(k, _) | Op::Delete(k)) = op;
                if !live.contains_key(k.as_slice()) {
                    assert_eq!(
                        reader.get(&k).unwrap(),
                        None,
                        "{case}: dead key {}",
                        hex(&k)
                    );
                }
            }
            for i in 0..200u32 {
                let k = format!("absent-key-{i}");
                assert_eq!(reader.get(k.as_bytes()).unwrap(), None);
            }
            // Batched lookups agree with single ones, including misses.
            let mut keys: Vec<Vec<u8>> = want.iter().map(|(k, _)| k.clone()).collect();
            keys.extend((0..50).map(|i| format!("missing-{i}").into_bytes()));
            let mut seen = 0;
            reader
                .get_many(&keys, |i, v| {
                    seen += 1;
                    assert_eq!(
                        v,
                        live.get(keys[i].as_slice()).copied(),
                        "{case}: get_many {i}"
                    );
                })
                .unwrap();
            assert_eq!(seen, keys.len());
        }
    }
}

#[test]
fn headers_match_reference_info_output() {
    for case in CASES.into_iter().filter(|c| readable(c)) {
        let info = info(case);
        let log = LogReader::open(path(case, "spl")).unwrap();
        let h = log.header();
        let l: HashMap<_, _> = info[0].iter().cloned().collect();
        assert_eq!(
            l["Identifier"],
            format!("{:08x}", h.file_identifier),
            "{case}"
        );
        assert_eq!(l["Puts"], h.num_puts.to_string(), "{case}");
        assert_eq!(l["Deletes"], h.num_deletes.to_string(), "{case}");
        assert_eq!(l["Max key size"], h.max_key_len.to_string(), "{case}");
        assert_eq!(l["Max value size"], h.max_value_len.to_string(), "{case}");
        assert_eq!(l["Compression"], h.compression.display_name(), "{case}");
        assert_eq!(l["block size"], h.block_size.to_string(), "{case}");
        let ih = index_header(case);
        let i: HashMap<_, _> = info[1].iter().cloned().collect();
        assert_eq!(
            i["Identifier"],
            format!("{:08x}", ih.file_identifier),
            "{case}"
        );
        assert_eq!(
            i["Hash size"],
            format!("{} bit Murmurhash3", ih.hash_size * 8),
            "{case}"
        );
        assert_eq!(i["Num entries"], ih.num_entries.to_string(), "{case}");
        assert_eq!(i["Capacity"], ih.hash_capacity.to_string(), "{case}");
        assert_eq!(
            i["Num collisions"],
            ih.hash_collisions.to_string(),
            "{case}"
        );
        assert_eq!(
            i["Max displacement"],
            ih.max_displacement.to_string(),
            "{case}"
        );
        assert_eq!(i["Data size"], ih.data_end.to_string(), "{case}");
        assert_eq!(i["Garbage size"], ih.garbage_size.to_string(), "{case}");
    }
}

/// Replays `.log.expected` with the vector's identifier and session boundaries.
fn replay_log(case: &str, out: &std::path::Path) {
    let p = params(case);
    let id = LogReader::open(path(case, "spl"))
        .unwrap()
        .header()
        .file_identifier;
    let ops = log_expected(case);
    let mut at = 0;
    for (s, &n) in p.sessions.iter().enumerate() {
        let mut w = if s == 0 {
            LogWriter::create(
                out,
                &LogOptions::default()
                    .compression(compression(&p), p.block_size)
                    .file_identifier(id),
            )
            .unwrap()
        } else {
            LogWriter::append(out).unwrap()
        };
        for op in &ops[at..at + n] {
            match op {
                Op::Put(k, v) => w.put(k, v).unwrap(),
                Op::Delete(k) => w.delete(k).unwrap(),
            }
        }
        at += n;
        w.close().unwrap();
    }
    assert_eq!(at, ops.len(), "{case}: sessions cover the log");
}

/// Decoded block contents of a compressed log, in file order.
fn block_contents(log: &std::path::Path) -> Vec<Vec<u8>> {
    let bytes = std::fs::read(log).unwrap();
    let h = LogReader::open(log).unwrap().header().clone();
    let mut out = vec![];
    let mut off = 84usize;
    while off < h.data_end as usize {
        let mut len = 0usize;
        let mut shift = 0;
        loop {
            let b = bytes[off];
            off += 1;
            len |= ((b & 0x7f) as usize) << shift;
            shift += 7;
            if b < 0x80 {
                break;
            }
        }
        let body = &bytes[off..off + len];
        off += len;
        out.push(match h.compression {
            Compression::Snappy => snap::raw::Decoder::new().decompress_vec(body).unwrap(),
            #[cfg(feature = "zstd")]
            Compression::Zstd => zstd::bulk::decompress(body, h.block_size as usize).unwrap(),
            _ => unreachable!(),
        });
    }
    out
}

#[test]
fn log_writer_reproduces_every_log() {
    let dir = tempfile::tempdir().unwrap();
    for case in CASES.into_iter().filter(|c| readable(c)) {
        let out = dir.path().join(format!("{case}.spl"));
        replay_log(case, &out);
        let want = LogReader::open(path(case, "spl")).unwrap().header().clone();
        let got = LogReader::open(&out).unwrap().header().clone();
        if want.compression == Compression::None {
            assert_eq!(
                std::fs::read(&out).unwrap(),
                std::fs::read(path(case, "spl")).unwrap(),
                "{case}: bytes"
            );
        } else {
            // Compressed bytes depend on the compressor build; block boundaries, entry
            // packing and every header field but data_end do not.
            assert_eq!(
                got,
                cairn::hash::raw::LogHeader {
                    data_end: got.data_end,
                    ..want
                },
                "{case}: header"
            );
            assert_eq!(
                block_contents(&out),
                block_contents(&path(case, "spl")),
                "{case}: blocks"
            );
        }
    }
}

#[test]
fn index_builder_reproduces_every_index_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    for case in CASES.into_iter().filter(|c| readable(c)) {
        let p = params(case);
        let seed = index_header(case).hash_seed;
        let want = std::fs::read(path(case, "spi")).unwrap();
        if p.sessions.len() == 1 {
            // From the vector's own log (compressed logs included: addresses depend only
            // on block offsets).
            let log = LogReader::open(path(case, "spl")).unwrap();
            let opts = IndexOptions::default()
                .hash_size(hash_size_arg(p.hash_args[0]))
                .seed(seed);
            let (kind, built) = build_index(&log, &path(case, "spi"), &opts, None).unwrap();
            assert_eq!(kind, BuildKind::Fresh);
            assert_eq!(built.unwrap().to_bytes(), want, "{case}");
        } else {
            // Follow the build history: write the log session by session, index after each.
            let ops = log_expected(case);
            let out = dir.path().join(format!("{case}.spl"));
            let idx = dir.path().join(format!("{case}.spi"));
            let id = LogReader::open(path(case, "spl"))
                .unwrap()
                .header()
                .file_identifier;
            let mut at = 0;
            for (s, &n) in p.sessions.iter().enumerate() {
                let mut w = if s == 0 {
                    LogWriter::create(
                        &out,
                        &LogOptions::default()
                            .compression(compression(&p), p.block_size)
                            .file_identifier(id),
                    )
                    .unwrap()
                } else {
                    LogWriter::append(&out).unwrap()
                };
                for op in &ops[at..at + n] {
                    match op {
                        Op::Put(k, v) => w.put(k, v).unwrap(),
                        Op::Delete(k) => w.delete(k).unwrap(),
                    }
                }
                at += n;
                w.close().unwrap();
                let opts = IndexOptions::default()
                    .hash_size(hash_size_arg(p.hash_args[s]))
                    .seed(seed);
                let (kind, _) = write_index(&idx, &out, &opts).unwrap();
                assert_eq!(
                    kind,
                    if s == 0 {
                        BuildKind::Fresh
                    } else {
                        BuildKind::Incremental
                    },
                    "{case} session {s}"
                );
            }
            assert_eq!(std::fs::read(&idx).unwrap(), want, "{case}");
        }
    }
}

#[test]
fn murmur3_matches_reference_values() {
    let text = std::fs::read_to_string(path("murmur3", "tsv")).unwrap();
    let mut n = 0;
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let f: Vec<&str> = line.split('\t').collect();
        let seed = u32::from_str_radix(f[0], 16).unwrap();
        let key = if let Some(h) = f[1].strip_prefix("hex:") {
            unhex(h)
        } else {
            f[1].trim_matches('"').as_bytes().to_vec()
        };
        assert_eq!(
            format!("{:08x}", murmur3_x86_32(&key, seed)),
            f[2],
            "{line}"
        );
        assert_eq!(
            format!("{:016x}", murmur3_x64_128_h1(&key, seed)),
            f[3],
            "{line}"
        );
        n += 1;
    }
    assert!(n >= 40, "read {n} reference hashes");
}
