//! The entry stream of a log under each compression.
//!
//! Input: one selector byte (compression and block size, see `cairn_fuzz::decode_selector`),
//! then the bytes after the header: entries back to back (uncompressed) or
//! `VLQ(len) compressed-block` frames. A valid header with a consistent `data_end` is built
//! around them. The log must open; iterating it and building an index from it give `Ok` or
//! a typed error. When the stream decodes, the header is rewritten with its true counters,
//! an index is built, and every lookup, the live-entry iterator and `verify` must agree
//! with a model of the entries.
#![no_main]

use std::collections::HashMap;

use cairn::hash::raw::build_index;
use cairn::hash::{verify, write_index, Compression, EntryKind, IndexOptions, LogReader, Reader};
use cairn_fuzz::{check_error, decode_selector, log_file, path, write, Stats, MAX_ITEMS};
use libfuzzer_sys::fuzz_target;

const ID: u32 = 0xF022_1D00;
/// Key and value bytes the model may hold; past this (a compressible stream can decode to
/// far more than the input), only termination and typed errors are checked.
const MODEL_BUDGET: usize = 16 << 20;

fuzz_target!(|data: &[u8]| {
    let Some((&selector, stream)) = data.split_first() else {
        return;
    };
    let (compression, block_size) = decode_selector(selector);
    let (log, index) = (path("entries.spl"), path("entries.spi"));

    // Pass 1: counters as loose as the format allows.
    let loose = Stats {
        puts: u64::MAX,
        deletes: u64::MAX,
        ..Stats::default()
    };
    write(&log, &log_file(ID, compression, block_size, stream, &loose));
    let reader =
        LogReader::open(&log).unwrap_or_else(|e| panic!("a consistent header must open: {e}"));
    let mut stats = Stats::default();
    // key -> (value, position of its surviving PUT)
    let mut model: HashMap<Vec<u8>, (Vec<u8>, usize)> = HashMap::new();
    let mut keys: Vec<Vec<u8>> = Vec::new();
    let mut bytes = 0usize;
    let mut failed = false;
    let mut it = reader.iter();
    for (i, item) in it.by_ref().enumerate() {
        assert!(i < MAX_ITEMS, "log iterator does not terminate");
        match item {
            Ok(e) => {
                bytes = bytes.saturating_add(e.key.len() + e.value.len());
                if bytes > MODEL_BUDGET {
                    continue;
                }
                match e.kind {
                    EntryKind::Put => {
                        stats.put(&e.key, &e.value);
                        keys.push(e.key.clone());
                        model.insert(e.key, (e.value, i));
                    }
                    EntryKind::Delete => {
                        stats.delete(&e.key);
                        keys.push(e.key.clone());
                        model.remove(&e.key);
                    }
                }
            }
            Err(e) => {
                check_error(&e);
                failed = true;
                break;
            }
        }
    }
    assert!(!failed || it.next().is_none(), "an entry after an error");
    match build_index(&reader, &index, &IndexOptions::default().seed(1), None) {
        Ok(_) => {}
        Err(e) => check_error(&e),
    }
    drop(reader);
    if failed || bytes > MODEL_BUDGET || stats.puts > 84 + stream.len() as u64 {
        return;
    }

    // Pass 2: the stream decodes. With its true counters the pair must be fully consistent.
    write(&log, &log_file(ID, compression, block_size, stream, &stats));
    write_index(&index, &log, &IndexOptions::default().seed(2).fresh(true))
        .unwrap_or_else(|e| panic!("indexing a decodable log failed: {e}"));
    let reader = Reader::open(&index, &log).unwrap_or_else(|e| panic!("open a fresh pair: {e}"));
    for k in &keys {
        let want = model.get(k).map(|(v, _)| v.clone());
        assert_eq!(
            reader.get(k).unwrap_or_else(|e| panic!("get: {e}")),
            want,
            "lookup of {k:?}"
        );
    }
    let mut live: Vec<_> = model.iter().collect();
    live.sort_by_key(|(_, (_, pos))| *pos);
    let got: Vec<(Vec<u8>, Vec<u8>)> = reader
        .iter()
        .map(|r| r.unwrap_or_else(|e| panic!("live iterator: {e}")))
        .collect();
    let want: Vec<(Vec<u8>, Vec<u8>)> = live
        .into_iter()
        .map(|(k, (v, _))| (k.clone(), v.clone()))
        .collect();
    assert_eq!(got, want, "live iterator order and contents");
    // `verify` recounts put_size / delete_size from the bytes entries occupy. The model
    // counts minimal VLQs (all writers emit them); an uncompressed stream whose sizes do not
    // add up holds over-long VLQs such as `80 00`, legal to read but counted differently.
    let minimal = compression != Compression::None
        || stats.put_size + stats.delete_size == stream.len() as u64;
    match verify(&index, &log) {
        Ok(_) => {}
        Err(e) if !minimal => check_error(&e),
        Err(e) => panic!("verify of a freshly built pair: {e}"),
    }
});
