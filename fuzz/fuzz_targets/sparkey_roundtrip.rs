//! Structured operations against a model: any sequence of puts, deletes, flushes, append
//! sessions and (incremental) index builds, under any compression and block size, must
//! read back exactly like a `HashMap`: every lookup, the live-entry iterator (contents and
//! log order), the log iterator, and `verify`. Here every error is a bug.
#![no_main]

use std::collections::HashMap;

use arbitrary::Arbitrary;
use cairn::hash::{
    verify, write_index, Compression, EntryKind, HashSize, IndexOptions, LogOptions, LogReader,
    LogWriter, Reader,
};
use cairn_fuzz::path;
use libfuzzer_sys::fuzz_target;

#[derive(Arbitrary, Debug)]
enum Key {
    /// One of a few short keys, so keys repeat (overwrites, deletes of live keys).
    Small(u8),
    Bytes(Vec<u8>),
}

impl Key {
    fn bytes(&self) -> Vec<u8> {
        match self {
            Key::Small(n) => vec![b'k', n % 12],
            Key::Bytes(b) => b.clone(),
        }
    }
}

#[derive(Arbitrary, Debug)]
enum Value {
    Bytes(Vec<u8>),
    /// A long run, to span blocks.
    Run(u16, u8),
}

#[derive(Arbitrary, Debug)]
enum Op {
    Put(Key, Value),
    Delete(Key),
    Flush,
    /// Close the writer and reopen the log for append (a new writer session).
    Reopen,
    /// Build the index now (incremental when one exists); 0 auto, 1 32-bit, 2 64-bit hashes.
    Index(u8),
}

#[derive(Arbitrary, Debug)]
struct Input {
    compression: u8,
    block_size: u16,
    ops: Vec<Op>,
    final_hash: u8,
}

fn hash_size(b: u8) -> HashSize {
    match b % 3 {
        1 => HashSize::Bits32,
        2 => HashSize::Bits64,
        _ => HashSize::Auto,
    }
}

#[derive(Default)]
struct Model {
    /// key -> (value, sequence number of its surviving PUT)
    live: HashMap<Vec<u8>, (Vec<u8>, usize)>,
    /// Every entry in log order: (is_put, key, value).
    log: Vec<(bool, Vec<u8>, Vec<u8>)>,
    keys: Vec<Vec<u8>>,
}

/// Checks the pair on disk against the model (the index covers everything written).
fn check(model: &Model) {
    let (log, index) = (path("rt.spl"), path("rt.spi"));
    let reader = Reader::open(&index, &log).unwrap_or_else(|e| panic!("open: {e}"));
    for k in &model.keys {
        let want = model.live.get(k).map(|(v, _)| v.clone());
        assert_eq!(
            reader.get(k).unwrap_or_else(|e| panic!("get: {e}")),
            want,
            "lookup of {k:?}"
        );
    }
    assert_eq!(reader.len(), model.live.len() as u64);
    let mut live: Vec<_> = model.live.iter().collect();
    live.sort_by_key(|(_, (_, seq))| *seq);
    let want: Vec<(Vec<u8>, Vec<u8>)> = live
        .into_iter()
        .map(|(k, (v, _))| (k.clone(), v.clone()))
        .collect();
    let got: Vec<(Vec<u8>, Vec<u8>)> = reader
        .iter()
        .map(|r| r.unwrap_or_else(|e| panic!("iter: {e}")))
        .collect();
    assert_eq!(got, want, "live iterator");
    let entries: Vec<(bool, Vec<u8>, Vec<u8>)> = LogReader::open(&log)
        .unwrap_or_else(|e| panic!("open log: {e}"))
        .iter()
        .map(|r| {
            r.map(|e| (e.kind == EntryKind::Put, e.key, e.value))
                .unwrap_or_else(|e| panic!("log iter: {e}"))
        })
        .collect();
    assert!(
        entries == model.log,
        "log iterator differs from the entries written"
    );
    verify(&index, &log).unwrap_or_else(|e| panic!("verify: {e}"));
}

fuzz_target!(|input: Input| {
    let compression = match input.compression % 3 {
        1 => Compression::Snappy,
        2 => Compression::Zstd,
        _ => Compression::None,
    };
    let block_size = 10 + u32::from(input.block_size % 2048);
    let (log, index) = (path("rt.spl"), path("rt.spi"));
    let _ = std::fs::remove_file(&index);
    let options = LogOptions::default().compression(compression, block_size);
    let mut w = LogWriter::create(&log, &options).unwrap_or_else(|e| panic!("create: {e}"));
    let mut model = Model::default();
    for op in input.ops.iter().take(300) {
        match op {
            Op::Put(k, v) => {
                let (k, v) = (
                    k.bytes(),
                    match v {
                        Value::Bytes(b) => b.clone(),
                        Value::Run(n, b) => vec![*b; usize::from(*n)],
                    },
                );
                w.put(&k, &v).unwrap_or_else(|e| panic!("put: {e}"));
                model.live.insert(k.clone(), (v.clone(), model.log.len()));
                model.log.push((true, k.clone(), v));
                model.keys.push(k);
            }
            Op::Delete(k) => {
                let k = k.bytes();
                w.delete(&k).unwrap_or_else(|e| panic!("delete: {e}"));
                model.live.remove(&k);
                model.log.push((false, k.clone(), Vec::new()));
                model.keys.push(k);
            }
            Op::Flush => w.flush().unwrap_or_else(|e| panic!("flush: {e}")),
            Op::Reopen => {
                w.close().unwrap_or_else(|e| panic!("close: {e}"));
                w = LogWriter::append(&log).unwrap_or_else(|e| panic!("append: {e}"));
            }
            Op::Index(h) => {
                w.flush().unwrap_or_else(|e| panic!("flush: {e}"));
                write_index(
                    &index,
                    &log,
                    &IndexOptions::default().hash_size(hash_size(*h)),
                )
                .unwrap_or_else(|e| panic!("incremental index: {e}"));
                check(&model);
            }
        }
    }
    w.close().unwrap_or_else(|e| panic!("close: {e}"));
    write_index(
        &index,
        &log,
        &IndexOptions::default().hash_size(hash_size(input.final_hash)),
    )
    .unwrap_or_else(|e| panic!("index: {e}"));
    check(&model);
    model.keys.push(b"never written".to_vec());
    check(&model);
});
