//! How the table block cache behaves under three read patterns, on a store whose decoded
//! data is about twice the cache: uniform point reads, skewed point reads (15 of 16 on a
//! tenth of the keys) and a switch to a hot set that fits the cache. Prints throughput
//! and the cache's hit rate for each, from `Db::stats`.
//!
//! ```sh
//! cargo run --release -p cairn --example cache_admission [DIR]
//! ```
//!
//! The store is built like the peer suite's (`crates/ordered-peers`): 1M 16-byte keys written in
//! a random order, then 1M random overwrites, 100-byte values that compress to half,
//! batches of 1,000, a 64 MiB block cache. It goes in DIR if given (emptied first and kept
//! for `cairn info DIR`), else in a temporary directory.

use std::time::Instant;

use cairn::{Db, Durability, Keyspace, Options};

const KEYS: u64 = 1_000_000;

/// A xorshift generator: the same sequence on every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

fn key(k: u64) -> String {
    format!("{k:016}")
}

/// `count` point reads of keys from `pick`; prints ops/s and the cache hit rate.
fn reads(
    db: &Db,
    ks: &Keyspace,
    label: &str,
    count: u64,
    mut pick: impl FnMut() -> u64,
) -> cairn::Result<()> {
    let before = db.stats();
    let start = Instant::now();
    let mut found = 0u64;
    for _ in 0..count {
        found += u64::from(ks.get(key(pick()))?.is_some());
    }
    let secs = start.elapsed().as_secs_f64();
    let after = db.stats();
    let hits = after.cache_hits - before.cache_hits;
    let misses = after.cache_misses - before.cache_misses;
    println!(
        "{label:<34} {:>8.0} reads/s  hit rate {:.3}  found {found}/{count}",
        count as f64 / secs,
        hits as f64 / (hits + misses).max(1) as f64,
    );
    Ok(())
}

fn main() -> cairn::Result<()> {
    let temp = tempfile::tempdir().map_err(|e| cairn::Error::InvalidArgument(e.to_string()))?;
    let dir = std::env::args()
        .nth(1)
        .map_or_else(|| temp.path().join("db"), std::path::PathBuf::from);
    let _ = std::fs::remove_dir_all(&dir);
    let options = Options::default()
        .durability(Durability::Buffered)
        .block_cache_size(64 << 20);
    let db = Db::open(&dir, options)?;
    let ks = db.keyspace("bench")?;

    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let values: Vec<Vec<u8>> = (0..1024)
        .map(|_| {
            let half: Vec<u8> = (0..50).map(|_| b' ' + (rng.next() % 94) as u8).collect();
            [half.as_slice(), half.as_slice()].concat()
        })
        .collect();
    let value = |i: u64| {
        values
            .get((i % 1024) as usize)
            .map_or(&[][..], |v| v.as_slice())
    };
    for pass in 0..2u64 {
        for start in (0..KEYS).step_by(1000) {
            let mut batch = db.batch();
            for i in start..(start + 1000).min(KEYS) {
                let k = if pass == 0 {
                    i.wrapping_mul(2_654_435_761) % KEYS
                } else {
                    rng.next() % KEYS
                };
                batch.insert(&ks, key(k), value(i));
            }
            batch.commit()?;
        }
    }

    reads(&db, &ks, "uniform", KEYS, || rng.next() % KEYS)?;
    reads(&db, &ks, "skewed (15/16 on a tenth)", KEYS, || {
        let x = rng.next();
        if x >> 60 != 0 {
            (x >> 8) % (KEYS / 10)
        } else {
            (x >> 8) % KEYS
        }
    })?;
    reads(&db, &ks, "uniform again", KEYS, || rng.next() % KEYS)?;
    for round in 0..4 {
        let label = format!("hot set (3/10 of keys), part {round}");
        reads(&db, &ks, &label, KEYS / 4, || rng.next() % (KEYS * 3 / 10))?;
    }
    db.close()
}
