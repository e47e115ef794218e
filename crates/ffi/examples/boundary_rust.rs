//! The Rust half of the C-boundary benchmark (`bench/boundary.sh`): the same loops as
//! `bench/boundary.c` through the Rust API, so the difference is the cost of the C API.
//!
//! Usage: boundary_rust DIR [COUNT]. Prints one line per phase: name, operations, seconds,
//! operations per second.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::time::Instant;

use engine::{Db, Durability, Options};

fn key(i: u64) -> [u8; 16] {
    let mut k = *b"key-000000000000";
    let mut n = i;
    for b in k.iter_mut().rev().take(12) {
        *b = b'0' + (n % 10) as u8;
        n /= 10;
    }
    k
}

/// The permutation of `0..count` both programs read in: `i * 7919 mod count` (count not a
/// multiple of 7919).
fn order(i: u64, count: u64) -> u64 {
    (i * 7919) % count
}

fn report(name: &str, count: u64, start: Instant) {
    let secs = start.elapsed().as_secs_f64();
    println!(
        "{name:<10} {count} ops {secs:.3} s {:.0} ops/s",
        count as f64 / secs
    );
}

fn main() -> engine::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let dir = args.get(1).expect("usage: boundary_rust DIR [COUNT]");
    let count: u64 = args.get(2).map_or(1_000_000, |c| c.parse().unwrap());
    let options = Options::default()
        .durability(Durability::None)
        .memtable_size(256 << 20)
        .max_wal_size(1 << 30);
    let db = Db::open(dir, options)?;
    let ks = db.keyspace("bench")?;
    let value = [b'v'; 100];

    let start = Instant::now();
    for i in 0..count {
        ks.insert(key(i), value)?;
    }
    report("put", count, start);

    let mut found = 0u64;
    let start = Instant::now();
    for i in 0..count {
        if let Some(v) = ks.get(key(order(i, count)))? {
            found += v.len() as u64;
        }
    }
    report("get", count, start);
    assert_eq!(found, count * 100);
    db.close()
}
