//! One `Reader` shared by many threads: every lookup, batched lookup and iteration
//! returns the right data while the others run (the reader is `Send + Sync`).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

use std::sync::Arc;

use cairn::hash::{
    write_index, Compression, IndexOptions, LogOptions, LogWriter, ReadOptions, Reader,
};

fn assert_send_sync<T: Send + Sync>() {}

#[test]
fn threads_share_one_reader() {
    assert_send_sync::<Reader>();
    let dir = tempfile::tempdir().unwrap();
    for (c, name) in [
        (Compression::None, "none"),
        (Compression::Snappy, "snappy"),
        #[cfg(feature = "zstd")]
        (Compression::Zstd, "zstd"),
    ] {
        let log = dir.path().join(format!("{name}.spl"));
        let idx = dir.path().join(format!("{name}.spi"));
        let n = 20_000u64;
        let mut w = LogWriter::create(&log, &LogOptions::default().compression(c, 512)).unwrap();
        for i in 0..n {
            w.put(
                format!("k{i}").as_bytes(),
                format!("v{i}-{}", "x".repeat((i % 50) as usize)).as_bytes(),
            )
            .unwrap();
        }
        w.close().unwrap();
        write_index(&idx, &log, &IndexOptions::default()).unwrap();
        // A small cache forces concurrent evictions in compressed logs.
        let reader = Arc::new(
            Reader::open_with(
                &idx,
                &log,
                &ReadOptions::default().block_cache_bytes(64 << 10),
            )
            .unwrap(),
        );
        let threads: Vec<_> = (0..4u64)
            .map(|t| {
                let r = Arc::clone(&reader);
                std::thread::spawn(move || {
                    let mut out = Vec::new();
                    for j in 0..n {
                        let i = (j * 7919 + t * 104_729) % n;
                        let want = format!("v{i}-{}", "x".repeat((i % 50) as usize));
                        assert!(r.get_into(format!("k{i}").as_bytes(), &mut out).unwrap());
                        assert_eq!(out, want.as_bytes());
                    }
                    let keys: Vec<Vec<u8>> =
                        (0..n).rev().map(|i| format!("k{i}").into_bytes()).collect();
                    let mut hits = 0u64;
                    r.get_many(&keys, |_, v| hits += u64::from(v.is_some()))
                        .unwrap();
                    assert_eq!(hits, n);
                    assert_eq!(r.iter().count() as u64, n);
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
    }
}
