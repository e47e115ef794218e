//! The whole index file, paired with a fixed valid log.
//!
//! Two logs are written once per process (uncompressed, and Snappy with 32-byte blocks so
//! entries share and span blocks); the input's `entry_block_bits` field picks which one
//! (0: uncompressed). Opening the pair, looking up every key the log ever held (and a few
//! it never held), iterating live entries and `verify` must give `Ok` or a typed error.
//! The log is intact, so a lookup or the iterator may return a stale value of a key (an
//! index can point at an older PUT) but never a value that was not stored under that key.
//!
//! Seeds: with `CAIRN_FUZZ_SEED_OUT=<dir>`, the target writes the two valid index files
//! there at startup (`scripts/fuzz-smoke.sh` and `fuzz/README.md` use this).
#![no_main]

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::OnceLock;

use cairn::hash::{
    verify, write_index, Compression, IndexOptions, LogOptions, LogWriter, ReadOptions, Reader,
};
use cairn_fuzz::{check_error, drain, path, write};
use libfuzzer_sys::fuzz_target;

struct Fixture {
    plain: PathBuf,
    snappy: PathBuf,
    /// Every key written, with every value ever PUT for it.
    history: HashMap<Vec<u8>, HashSet<Vec<u8>>>,
    keys: Vec<Vec<u8>>,
}

fn ops() -> Vec<(Vec<u8>, Option<Vec<u8>>)> {
    let mut ops: Vec<(Vec<u8>, Option<Vec<u8>>)> = Vec::new();
    for i in 0..24u32 {
        ops.push((
            format!("key-{i}").into_bytes(),
            Some(format!("value-{}", i * 7).into_bytes()),
        ));
    }
    ops.push((Vec::new(), Some(b"empty key".to_vec())));
    ops.push((vec![0, 0xFF, 0x80], Some(Vec::new())));
    ops.push((b"long".to_vec(), Some(vec![b'L'; 300])));
    for i in (0..24u32).step_by(5) {
        ops.push((
            format!("key-{i}").into_bytes(),
            Some(format!("new-{i}").into_bytes()),
        ));
    }
    for i in (1..24u32).step_by(6) {
        ops.push((format!("key-{i}").into_bytes(), None));
    }
    ops.push((b"never-put".to_vec(), None));
    ops.push((format!("key-{}", 1).into_bytes(), Some(b"back".to_vec())));
    ops
}

fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        let ops = ops();
        let (plain, snappy) = (path("fixture_plain.spl"), path("fixture_snappy.spl"));
        for (log, options) in [
            (&plain, LogOptions::default().file_identifier(0x1D0C_0001)),
            (
                &snappy,
                LogOptions::default()
                    .compression(Compression::Snappy, 32)
                    .file_identifier(0x1D0C_0002),
            ),
        ] {
            let mut w = LogWriter::create(log, &options).expect("create fixture log");
            for (k, v) in &ops {
                match v {
                    Some(v) => w.put(k, v).expect("put"),
                    None => w.delete(k).expect("delete"),
                }
            }
            w.close().expect("close fixture log");
            let index = log.with_extension("spi");
            write_index(&index, log, &IndexOptions::default().seed(0x5EED)).expect("index fixture");
            verify(&index, log).expect("fixture verifies");
            if let Some(dir) = std::env::var_os("CAIRN_FUZZ_SEED_OUT") {
                let name = index.file_name().expect("file name");
                std::fs::create_dir_all(&dir).expect("seed dir");
                std::fs::copy(&index, PathBuf::from(&dir).join(name)).expect("write seed");
            }
        }
        let mut history: HashMap<Vec<u8>, HashSet<Vec<u8>>> = HashMap::new();
        let mut keys = Vec::new();
        for (k, v) in ops {
            if !keys.contains(&k) {
                keys.push(k.clone());
            }
            if let Some(v) = v {
                history.entry(k).or_default().insert(v);
            }
        }
        keys.extend([b"absent".to_vec(), b"key-999".to_vec()]);
        Fixture {
            plain,
            snappy,
            history,
            keys,
        }
    })
}

fuzz_target!(|data: &[u8]| {
    let f = fixture();
    let bits = data
        .get(92..96)
        .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .unwrap_or(0);
    let log = if bits == 0 { &f.plain } else { &f.snappy };
    let index = path("index.spi");
    write(&index, data);
    let stored = |k: &[u8], v: &[u8]| f.history.get(k).is_some_and(|h| h.contains(v));
    match Reader::open_with(
        &index,
        log,
        &ReadOptions::default().block_cache_bytes(1 << 20),
    ) {
        Ok(reader) => {
            for k in &f.keys {
                match reader.get(k) {
                    Ok(Some(v)) => assert!(stored(k, &v), "lookup of {k:?} invented a value"),
                    Ok(None) => {}
                    Err(e) => check_error(&e),
                }
            }
            let (live, _) = drain(reader.iter());
            for (k, v) in &live {
                assert!(stored(k, v), "live iterator invented {k:?} -> {v:?}");
            }
            let batched = reader.get_many(&f.keys, |i, v| {
                if let (Some(k), Some(v)) = (f.keys.get(i), v) {
                    assert!(stored(k, v), "batched lookup of {k:?} invented a value");
                }
            });
            if let Err(e) = batched {
                check_error(&e);
            }
        }
        Err(e) => check_error(&e),
    }
    if let Err(e) = verify(&index, log) {
        check_error(&e);
    }
});
